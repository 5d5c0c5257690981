/*
 * worktarget: a process whose own throughput can be read, for measuring
 * what watching it costs (bench/watch.sh).
 *
 *   worktarget [-n IDLE] [-w WORKERS]
 *
 * IDLE threads (64 KiB stacks) wait for ever in pthread_cond_wait; WORKERS
 * threads (default 1) do fixed units of CPU work (a hash over a small
 * buffer) and count them.  Prints "pid PID", then "ready" once every idle
 * thread waits.  SIGUSR1 resets the count, SIGUSR2 prints
 * "units=U window_ms=MS rate=UNITS_PER_S"; SIGTERM ends it.  Signals are
 * taken by the main thread with sigwait(), so no handler ever runs in a
 * worker.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t never = PTHREAD_COND_INITIALIZER;
static pthread_cond_t counted = PTHREAD_COND_INITIALIZER;
static int nwaiting;
static atomic_ullong units;

static void *idle_main(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&lock);
	nwaiting++;
	pthread_cond_signal(&counted);
	for (;;)
		pthread_cond_wait(&never, &lock);
	return NULL;
}

static void *worker_main(void *arg)
{
	(void)arg;
	unsigned char buf[256];
	for (size_t i = 0; i < sizeof buf; i++)
		buf[i] = (unsigned char)i;
	uint64_t h = 1469598103934665603ull;
	for (;;) {
		/* one unit: ~10 us of arithmetic, no syscall, no allocation */
		for (int r = 0; r < 40; r++)
			for (size_t i = 0; i < sizeof buf; i++)
				h = (h ^ buf[i]) * 1099511628211ull;
		buf[h & 255] ^= (unsigned char)h;
		atomic_fetch_add_explicit(&units, 1, memory_order_relaxed);
	}
	return NULL;
}

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

int main(int argc, char **argv)
{
	int nidle = 1000, nwork = 1, c;
	while ((c = getopt(argc, argv, "n:w:")) != -1) {
		if (c == 'n')
			nidle = atoi(optarg);
		else if (c == 'w')
			nwork = atoi(optarg);
		else
			return 2;
	}
	sigset_t ctl;
	sigemptyset(&ctl);
	sigaddset(&ctl, SIGUSR1);
	sigaddset(&ctl, SIGUSR2);
	sigaddset(&ctl, SIGTERM);
	sigaddset(&ctl, SIGINT);
	pthread_sigmask(SIG_BLOCK, &ctl, NULL);	/* inherited by every thread */
	printf("pid %d\n", (int)getpid());
	fflush(stdout);
	pthread_attr_t small;
	pthread_attr_init(&small);
	pthread_attr_setstacksize(&small, 64 * 1024);
	for (int i = 0; i < nidle; i++) {
		pthread_t t;
		if (pthread_create(&t, &small, idle_main, NULL) != 0) {
			fprintf(stderr, "worktarget: thread %d: cannot create\n", i);
			return 1;
		}
	}
	pthread_mutex_lock(&lock);
	while (nwaiting < nidle)
		pthread_cond_wait(&counted, &lock);
	pthread_mutex_unlock(&lock);
	for (int i = 0; i < nwork; i++) {
		pthread_t t;
		if (pthread_create(&t, &small, worker_main, NULL) != 0)
			return 1;
	}
	printf("ready\n");
	fflush(stdout);
	double since = now_ms();
	for (;;) {
		int sig;
		if (sigwait(&ctl, &sig))
			continue;
		if (sig == SIGUSR1) {
			atomic_store(&units, 0);
			since = now_ms();
		} else if (sig == SIGUSR2) {
			double w = now_ms() - since;
			unsigned long long u = atomic_load(&units);
			printf("units=%llu window_ms=%.1f rate=%.1f\n", u, w, u / (w / 1e3));
			fflush(stdout);
		} else {
			return 0;
		}
	}
}
