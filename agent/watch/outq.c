/*
 * outq.c: the watch stream's output, written by a thread of its own.
 *
 * While tinspect follows threads, every new thread of the target waits at
 * its first stop until tinspect has seen it.  If tinspect itself blocked
 * writing to a full pipe (a slow `| jq`, a stuck log shipper), thread
 * creation in the target would stall behind it.  So the loop never writes:
 * it queues whole lines, and this thread writes them.  The queue is
 * bounded: past the bound whole lines are dropped and counted, and the
 * count is reported in the stream once there is room again (never a
 * partial line, so NDJSON stays valid).
 *
 * The writer blocks every signal: they must reach the main thread, whose
 * waits they interrupt.  A write error (EPIPE: the reader is gone) is
 * recorded and raises the cancel flag, so the loop resumes the target and
 * ends.
 */
#include "outq.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct line {
	struct line *next;
	size_t len;
	char data[];
};

struct outq {
	int fd;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t more, drained, room;
	struct line *head, *tail;
	size_t bytes, limit;
	unsigned long dropped;	/* since the last report */
	int error;		/* first write error, 0 */
	bool closing, writing;
	volatile sig_atomic_t *cancel;
	int cancel_value;
};

static void *writer(void *arg)
{
	struct outq *q = arg;
	sigset_t all;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	pthread_mutex_lock(&q->lock);
	for (;;) {
		while (!q->head && !q->closing)
			pthread_cond_wait(&q->more, &q->lock);
		if (!q->head)
			break;
		struct line *l = q->head;
		q->head = l->next;
		if (!q->head)
			q->tail = NULL;
		q->writing = true;
		pthread_mutex_unlock(&q->lock);
		size_t off = 0;
		int err = 0;
		while (off < l->len && !err) {
			ssize_t n = write(q->fd, l->data + off, l->len - off);
			if (n < 0 && errno != EINTR)
				err = errno;
			else if (n > 0)
				off += (size_t)n;
		}
		pthread_mutex_lock(&q->lock);
		q->writing = false;
		q->bytes -= l->len;
		free(l);
		pthread_cond_broadcast(&q->room);
		if (err && !q->error) {
			q->error = err;
			if (q->cancel)
				*q->cancel = q->cancel_value;
		}
		if (q->error) {
			/* nobody reads: drop the rest */
			while (q->head) {
				struct line *d = q->head;
				q->head = d->next;
				q->bytes -= d->len;
				free(d);
			}
			q->tail = NULL;
		}
		if (!q->head)
			pthread_cond_broadcast(&q->drained);
	}
	pthread_mutex_unlock(&q->lock);
	return NULL;
}

struct outq *outq_start(int fd, size_t limit, volatile sig_atomic_t *cancel,
			int cancel_value)
{
	struct outq *q = calloc(1, sizeof *q);
	if (!q)
		return NULL;
	q->fd = fd;
	q->limit = limit;
	q->cancel = cancel;
	q->cancel_value = cancel_value;
	pthread_mutex_init(&q->lock, NULL);
	pthread_cond_init(&q->more, NULL);
	pthread_cond_init(&q->drained, NULL);
	pthread_cond_init(&q->room, NULL);
	if (pthread_create(&q->thread, NULL, writer, q)) {
		free(q);
		return NULL;
	}
	return q;
}

/* A copy of len bytes to queue; NULL when out of memory. */
static struct line *line_new(const char *data, size_t len)
{
	struct line *l = malloc(sizeof *l + len);
	if (!l)
		return NULL;
	memcpy(l->data, data, len);
	l->len = len;
	l->next = NULL;
	return l;
}

/* Queue l after the others and wake the writer (q->lock held). */
static void enqueue(struct outq *q, struct line *l)
{
	if (q->tail)
		q->tail->next = l;
	else
		q->head = l;
	q->tail = l;
	q->bytes += l->len;
	pthread_cond_signal(&q->more);
}

/* Queue one line (its bytes, newline included).  Returns false if it was
 * dropped because the queue is full. */
bool outq_put(struct outq *q, const char *data, size_t len)
{
	struct line *l = line_new(data, len);
	if (!l)
		return false;
	pthread_mutex_lock(&q->lock);
	bool ok = !q->error && q->bytes + len <= q->limit;
	if (ok) {
		enqueue(q, l);
	} else if (!q->error) {
		q->dropped++;
	}
	pthread_mutex_unlock(&q->lock);
	if (!ok)
		free(l);
	return ok;
}

unsigned long outq_take_dropped(struct outq *q)
{
	pthread_mutex_lock(&q->lock);
	unsigned long d = 0;
	/* report only once there is room for the report itself */
	if (q->dropped && q->bytes < q->limit / 2) {
		d = q->dropped;
		q->dropped = 0;
	}
	pthread_mutex_unlock(&q->lock);
	return d;
}

/* Write what is queued, stop the thread, free.  Returns the first write
 * error (0 if none). */
int outq_finish(struct outq *q)
{
	if (!q)
		return 0;
	pthread_mutex_lock(&q->lock);
	q->closing = true;
	pthread_cond_signal(&q->more);
	pthread_mutex_unlock(&q->lock);
	pthread_join(q->thread, NULL);
	int e = q->error;
	pthread_mutex_destroy(&q->lock);
	pthread_cond_destroy(&q->more);
	pthread_cond_destroy(&q->drained);
	pthread_cond_destroy(&q->room);
	free(q);
	return e;
}

/*
 * A line written as it is produced (a 10 000-thread snapshot is
 * a 35 MB line, and building it whole, then copying it into the queue,
 * cost more memory than the capture).  Its pieces are queued in order; the
 * producer waits while more than STREAM_BOUND bytes are queued.  Only
 * where waiting for the reader is harmless: while nothing of the target is
 * held (not while following threads, whose new threads wait for tinspect).
 * Once the cancel flag is up, pieces are queued without waiting, so that
 * the line still ends whole before tinspect exits.
 */
#define STREAM_BOUND (4u << 20)

static ssize_t stream_write(void *cookie, const char *buf, size_t len)
{
	struct outq *q = cookie;
	struct line *l = line_new(buf, len);
	if (!l)
		return -1;
	pthread_mutex_lock(&q->lock);
	while (!q->error && q->bytes && q->bytes + len > STREAM_BOUND &&
	       !(q->cancel && *q->cancel)) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 100000000;	/* to look at the cancel flag */
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
		pthread_cond_timedwait(&q->room, &q->lock, &ts);
	}
	if (q->error) {
		pthread_mutex_unlock(&q->lock);
		free(l);
		return -1;
	}
	enqueue(q, l);
	pthread_mutex_unlock(&q->lock);
	return (ssize_t)len;
}

FILE *outq_stream(struct outq *q)
{
	cookie_io_functions_t io = { .write = stream_write };
	FILE *f = fopencookie(q, "w", io);
	if (f)
		setvbuf(f, NULL, _IOFBF, 256u << 10);
	return f;
}
