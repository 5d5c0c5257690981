/*
 * watch.c: one long-lived session feeding dashboards.  `--watch SECONDS`
 * keeps the session (modules, symbols, the libthread_db agent, the Dwfl)
 * for the life of the target and emits one line per update: the full
 * snapshot, or with --summary a compact line; with --follow-threads the
 * thread creations and exits between updates are event lines of their
 * own.  With --json every line is one JSON document (NDJSON): snapshot
 * lines validate against tinspect-snapshot.schema.json, summary and event
 * lines (they carry "kind") against tinspect-stream.schema.json.
 *
 * Between updates tinspect sleeps in the kernel (clock_nanosleep, or
 * waitpid() when following threads): the target is never polled.
 */
#include "agent.h"

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

#include "config.h"

static void iso_time(const struct timespec *ts, char *buf, size_t len)
{
	struct tm tm;
	gmtime_r(&ts->tv_sec, &tm);
	size_t l = strftime(buf, len, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf + l, len - l, ".%06ldZ", ts->tv_nsec / 1000);
}

static json_t *jhex64(uint64_t v)
{
	char b[24];
	snprintf(b, sizeof b, "0x%" PRIx64, v);
	return json_string(b);
}

/* A string from the target as valid UTF-8 (invalid bytes as U+FFFD). */
static json_t *jsafe(const char *s)
{
	if (!s)
		return json_null();
	size_t n = strlen(s);
	char *b = malloc(n * 3 + 1);
	if (!b)
		return json_null();
	size_t o = 0;
	for (size_t i = 0; i < n;) {
		size_t l = agent_utf8_seq((const unsigned char *)s + i, n - i);
		if (l) {
			memcpy(b + o, s + i, l);
			o += l;
			i += l;
		} else {
			memcpy(b + o, "\xef\xbf\xbd", 3);
			o += 3;
			i++;
		}
	}
	json_t *j = json_stringn(b, o);
	free(b);
	return j ? j : json_null();
}

/* Where the lines go: the writer thread's queue (outq.c). */
static struct outq *out;

/* Lines are built in memory and handed over whole. */
struct membuf {
	char *buf;
	size_t len;
	FILE *f;
};

static FILE *mb_open(struct membuf *m)
{
	m->buf = NULL;
	m->len = 0;
	m->f = open_memstream(&m->buf, &m->len);
	return m->f;
}

static void mb_put(struct membuf *m)
{
	if (!m->f)
		return;
	fclose(m->f);
	m->f = NULL;
	if (m->buf && m->len)
		outq_put(out, m->buf, m->len);
	free(m->buf);
}

static void line_out(json_t *doc)
{
	char *s = json_dumps(doc, JSON_PRESERVE_ORDER | JSON_COMPACT);
	json_decref(doc);
	if (!s)
		return;
	/* jansson writes U+2028/U+2029 raw: escaped like the snapshot's */
	size_t n = strlen(s);
	char *e = malloc(2 * n + 1);
	if (e) {
		n = agent_json_escape_separators(e, s, n);
		e[n] = '\n';
		outq_put(out, e, n + 1);
	}
	free(e);
	free(s);
}

static json_t *line_head(const char *kind, pid_t pid, const struct timespec *ts)
{
	char t[64];
	iso_time(ts, t, sizeof t);
	json_t *o = json_object();
	json_object_set_new(o, "format_version", json_string(TINSPECT_FORMAT_VERSION));
	json_object_set_new(o, "kind", json_string(kind));
	json_object_set_new(o, "pid", json_integer(pid));
	json_object_set_new(o, "time", json_string(t));
	return o;
}

/* ---- summary lines ---------------------------------------------------------- */

static int cmp_waiters(const void *a, const void *b)
{
	const struct dbs_lock *x = *(const struct dbs_lock *const *)a;
	const struct dbs_lock *y = *(const struct dbs_lock *const *)b;
	if (x->nwaiters != y->nwaiters)
		return x->nwaiters > y->nwaiters ? -1 : 1;
	return (x->addr > y->addr) - (x->addr < y->addr);
}

#define TOP_LOCKS 5

static void summary_json(const struct dbs_snapshot *snap, unsigned long update)
{
	json_t *o = line_head("summary", snap->pid, &snap->captured_at);
	json_object_set_new(o, "update", json_integer((json_int_t)update));
	json_object_set_new(o, "freeze_us", json_integer((json_int_t)(snap->freeze_ns / 1000)));
	json_object_set_new(o, "duration_us",
			    json_integer((json_int_t)(snap->duration_ns / 1000)));
	json_object_set_new(o, "threads", json_integer((json_int_t)snap->nthreads));
	json_object_set_new(o, "threads_stopped",
			    json_integer((json_int_t)snap->threads_stopped));
	json_object_set_new(o, "module_generation",
			    json_integer((json_int_t)snap->module_generation));

	json_t *by_state = json_object(), *by_start = json_object();
	for (size_t i = 0; i < snap->nthreads; i++) {
		const struct dbs_thread *th = &snap->threads[i];
		char st[2] = { th->state ? th->state : '?', 0 };
		json_t *c = json_object_get(by_state, st);
		json_object_set_new(by_state, st, json_integer(c ? json_integer_value(c) + 1 : 1));
		/* by symbol, else where it is in its module (MariaDB's workers
		 * start at a local function of a stripped binary): never
		 * "(unknown)" for an address a module holds */
		char where[512];
		const char *sr = !th->have_pthread ? "(unknown)" : th->is_main ? "(main)" :
				 th->start.name ? th->start.name : "(unknown)";
		if (th->have_pthread && !th->is_main && !th->start.name && th->start.module) {
			const char *b = strrchr(th->start.module, '/');
			snprintf(where, sizeof where, "%s+0x%" PRIx64,
				 b ? b + 1 : th->start.module, th->start.offset);
			sr = where;
		} else if (th->have_pthread && !th->is_main && !th->start.name &&
			   th->start.addr) {
			snprintf(where, sizeof where, "0x%" PRIx64, th->start.addr);
			sr = where;
		}
		json_t *k = jsafe(sr);
		const char *key = json_string_value(k);
		c = key ? json_object_get(by_start, key) : NULL;
		if (key)
			json_object_set_new(by_start, key,
					    json_integer(c ? json_integer_value(c) + 1 : 1));
		json_decref(k);
	}
	json_object_set_new(o, "by_state", by_state);
	json_object_set_new(o, "by_start_routine", by_start);

	json_t *by_kind = json_object();
	json_t *top = json_array();
	json_t *dls = json_array();
	const struct dbs_locks *L = snap->locks;
	if (L) {
		for (size_t i = 0; i < snap->nthreads; i++) {
			const struct dbs_blocked_on *b = snap->threads[i].blocked_on;
			if (!b)
				continue;
			const char *k = dbs_lock_kind_name(b->kind);
			json_t *c = json_object_get(by_kind, k);
			json_object_set_new(by_kind, k,
					    json_integer(c ? json_integer_value(c) + 1 : 1));
		}
		const struct dbs_lock **v = calloc(L->n + 1, sizeof *v);
		for (size_t i = 0; v && i < L->n; i++)
			v[i] = &L->v[i];
		if (v)
			qsort(v, L->n, sizeof *v, cmp_waiters);
		for (size_t i = 0; v && i < L->n && i < TOP_LOCKS; i++) {
			json_t *l = json_object();
			json_object_set_new(l, "addr", jhex64(v[i]->addr));
			json_object_set_new(l, "kind", json_string(dbs_lock_kind_name(v[i]->kind)));
			json_object_set_new(l, "symbol", jsafe(v[i]->sym.name));
			json_object_set_new(l, "waiters", json_integer((json_int_t)v[i]->nwaiters));
			json_object_set_new(l, "owner", v[i]->owner_state == DBS_OWNER_LIVE
					    ? json_integer(v[i]->owner) : json_null());
			json_array_append_new(top, l);
		}
		free(v);
		for (size_t i = 0; i < L->ndeadlocks; i++) {
			const struct dbs_deadlock *d = &L->deadlocks[i];
			json_t *dj = json_object(), *ts = json_array(), *ls = json_array();
			for (size_t k = 0; k < d->n; k++) {
				json_array_append_new(ts, json_integer(d->threads[k]));
				json_array_append_new(ls, jhex64(L->v[d->locks[k]].addr));
			}
			json_object_set_new(dj, "threads", ts);
			json_object_set_new(dj, "locks", ls);
			json_array_append_new(dls, dj);
		}
	}
	json_object_set_new(o, "blocked_by_kind", by_kind);
	json_object_set_new(o, "top_locks", top);
	json_object_set_new(o, "deadlocks", dls);
	line_out(o);
}

static void summary_text(const struct dbs_snapshot *snap, unsigned long update)
{
	struct membuf m;
	FILE *f = mb_open(&m);
	if (!f)
		return;
	char t[64];
	iso_time(&snap->captured_at, t, sizeof t);
	size_t counts[128] = { 0 };
	for (size_t i = 0; i < snap->nthreads; i++)
		counts[(unsigned char)snap->threads[i].state & 127]++;
	fprintf(f, "%s update %lu pid %d: %zu threads (", t, update, (int)snap->pid,
		snap->nthreads);
	bool first = true;
	for (int c = 0; c < 128; c++)
		if (counts[c]) {
			fprintf(f, "%s%c %zu", first ? "" : ", ", c ? c : '?', counts[c]);
			first = false;
		}
	size_t blocked = 0, dl = snap->locks ? snap->locks->ndeadlocks : 0;
	for (size_t i = 0; i < snap->nthreads; i++)
		blocked += snap->threads[i].blocked_on != NULL;
	fprintf(f, "), %zu blocked on futexes, %zu deadlock%s, frozen %.3f ms\n",
		blocked, dl, dl == 1 ? "" : "s", (double)snap->freeze_ns / 1e6);
	mb_put(&m);
}

/* ---- event lines ----------------------------------------------------------- */

struct watch_ctx {
	const struct watch_opts *w;
	pid_t pid;
};

static void event_line(void *arg, const struct dbs_event *ev)
{
	struct watch_ctx *c = arg;
	bool created = ev->kind == DBS_EVENT_THREAD_CREATED;
	if (!c->w->json) {
		struct membuf m;
		FILE *f = mb_open(&m);
		if (!f)
			return;
		char t[64];
		iso_time(&ev->time, t, sizeof t);
		if (created) {
			fprintf(f, "%s thread %d created by %d", t, (int)ev->tid,
				(int)ev->parent);
			if (ev->have_start && ev->start.name) {
				fputs(", start ", f);
				agent_fput_quoted(f, ev->start.name, strlen(ev->start.name));
			}
			fputc('\n', f);
		} else if (WIFSIGNALED(ev->wait_status)) {
			fprintf(f, "%s thread %d exited (signal %d)\n", t, (int)ev->tid,
				WTERMSIG(ev->wait_status));
		} else {
			fprintf(f, "%s thread %d exited\n", t, (int)ev->tid);
		}
		mb_put(&m);
		return;
	}
	json_t *o = line_head("event", c->pid, &ev->time);
	json_object_set_new(o, "event", json_string(created ? "thread_created"
							    : "thread_exited"));
	json_object_set_new(o, "tid", json_integer(ev->tid));
	if (created) {
		json_object_set_new(o, "parent_tid", json_integer(ev->parent));
		if (ev->have_start) {
			json_t *s = json_object();
			json_object_set_new(s, "addr", jhex64(ev->start.addr));
			json_object_set_new(s, "module", jsafe(ev->start.module));
			json_object_set_new(s, "symbol", jsafe(ev->start.name));
			json_object_set_new(s, "offset",
					    json_integer((json_int_t)ev->start.offset));
			json_object_set_new(o, "start_routine", s);
		} else {
			json_object_set_new(o, "start_routine", json_null());
		}
	} else {
		json_object_set_new(o, "exit_status", WIFEXITED(ev->wait_status)
				    ? json_integer(WEXITSTATUS(ev->wait_status))
				    : json_null());
		json_object_set_new(o, "signal", WIFSIGNALED(ev->wait_status)
				    ? json_integer(WTERMSIG(ev->wait_status))
				    : json_null());
	}
	line_out(o);
}

/* A line about the stream itself: the target exited, an update failed. */
static void stream_event(const struct watch_opts *w, pid_t pid, const char *what,
			 const char *detail)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	if (!w->json) {
		struct membuf m;
		FILE *f = mb_open(&m);
		if (!f)
			return;
		char t[64];
		iso_time(&ts, t, sizeof t);
		fprintf(f, "%s %s%s%s\n", t, what, detail ? ": " : "", detail ? detail : "");
		mb_put(&m);
		return;
	}
	json_t *o = line_head("event", pid, &ts);
	json_object_set_new(o, "event", json_string(what));
	json_object_set_new(o, "detail", detail ? json_string(detail) : json_null());
	line_out(o);
}

/* ---- the loop ----------------------------------------------------------------- */

/* Lines dropped because the reader did not keep up, once there is room
 * to say so. */
static void report_dropped(const struct watch_opts *w, pid_t pid)
{
	unsigned long d = outq_take_dropped(out);
	if (!d)
		return;
	char detail[64];
	snprintf(detail, sizeof detail, "%lu lines", d);
	stream_event(w, pid, "lines_dropped", detail);
}

static int watch_loop(struct dbs_session **sp, pid_t pid,
		      const struct dbs_options *dopts, const struct watch_opts *w,
		      const struct agent_opts *ao)
{
	struct dbs_session *s = *sp;
	struct watch_ctx ctx = { w, pid };
	int err = 0;
	if (w->follow) {
		err = dbs_session_follow(s);
		if (err)
			return err;
	}
	uint64_t next = psvc_now_ns();
	for (unsigned long update = 1; !w->count || update <= w->count; update++) {
		struct dbs_snapshot *snap = NULL;
		report_dropped(w, pid);
		err = dbs_session_update(s, &snap);
		if (err == -ESRCH) {
			stream_event(w, pid, "target_exited", NULL);
			return 0;
		}
		if (err == -EINTR)
			return err;
		if (err == -ESTALE) {
			/* execve: a new program in the same process; start a
			 * session on it and go on at the next interval (a
			 * program that execs in a loop gets no busy loop) */
			if (w->cancel && *w->cancel)
				return -EINTR;
			stream_event(w, pid, "target_exec", NULL);
			dbs_session_destroy(s);
			*sp = s = NULL;
			err = dbs_session_init(pid, dopts, &s);
			if (err == -ESRCH) {
				/* the new program is gone already */
				stream_event(w, pid, "target_exited", NULL);
				return 0;
			}
			if (err)
				return err;
			*sp = s;
			if (w->follow && (err = dbs_session_follow(s)))
				return err;
			update--;	/* this update did not happen */
		} else if (err == -ETIMEDOUT) {
			/* one update abandoned, the target resumed: the stream
			 * goes on */
			stream_event(w, pid, "capture_abandoned",
				     "the freeze limit was exceeded");
		} else if (err) {
			return err;
		} else {
			if (w->summary && w->json) {
				summary_json(snap, update);
			} else if (w->summary) {
				summary_text(snap, update);
			} else {
				struct membuf m;
				FILE *f = mb_open(&m);
				if (f) {
					struct agent_opts lo = *ao;
					lo.update = update;
					lo.pretty = false;
					if (w->json) {
						render_json(f, snap, &lo);
					} else {
						fprintf(f, "--- update %lu ---\n", update);
						render_text(f, snap, &lo);
					}
					mb_put(&m);
				}
			}
			dbs_snapshot_free(snap);
		}
		dbs_session_service(s);
		if (w->count && update == w->count)
			break;
		next += w->interval_ns;
		uint64_t now = psvc_now_ns();
		if (next < now)
			next = now;	/* an update longer than the interval */
		err = dbs_session_wait(s, next, event_line, &ctx);
		if (err == -ESRCH) {
			stream_event(w, pid, "target_exited", NULL);
			return 0;
		}
		if (err)
			return err;
	}
	return 0;
}

int agent_watch(struct dbs_session **sp, pid_t pid, const struct dbs_options *dopts,
		const struct watch_opts *w, const struct agent_opts *ao)
{
	fflush(stdout);
	out = outq_start(fileno(stdout), w->queue_limit ? w->queue_limit : 256u << 20,
			 w->cancel, SIGPIPE);
	if (!out)
		return -ENOMEM;
	int err = watch_loop(sp, pid, dopts, w, ao);
	/* detach before waiting for the reader: while attached, every clone
	 * and signal in the target waits for tinspect */
	if (*sp)
		dbs_session_unfollow(*sp);
	int werr = outq_finish(out);
	out = NULL;
	if (werr && !err)
		err = -werr;
	return err;
}
