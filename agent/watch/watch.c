/*
 * watch.c: one long-lived session feeding dashboards.  `--watch SECONDS`
 * keeps the session (modules, symbols, the libthread_db agent, the Dwfl)
 * for the life of the target and emits one line per update: the full
 * snapshot, or with --summary a compact line; with --follow-threads the
 * thread creations and exits between updates are event lines of their
 * own.  With --json every line is one JSON document (NDJSON): snapshot
 * lines validate against tinspect-snapshot.schema.json, summary and event
 * lines (they carry "kind") against tinspect-stream.schema.json.  Every
 * line is written by jwriter.c, the one JSON writer (and escaper) of the
 * program.
 *
 * Between updates tinspect sleeps in the kernel (clock_nanosleep, or
 * waitpid() when following threads): the target is never polled.
 */
#include "agent.h"
#include "common.h"
#include "formats.h"
#include "json.h"
#include "jwriter.h"
#include "lockorder.h"
#include "outq.h"
#include "overtime.h"
#include "verdict.h"

#include <errno.h>
#include <inttypes.h>
#include <malloc.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

#include "config.h"

/* CLOCK_MONOTONIC, the clock of tinspect_session_wait()'s deadline */
static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Where the lines go: the writer thread's queue (outq.c). */
static struct outq *out;
/* What lasts across updates (overtime.c, duty.c): hung threads, locks
 * held long, the duty cycle and the interval --max-duty sets. */
static struct overtime *ot;
static struct duty duty;

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

/* ---- JSON lines: one object, written by jwriter.c like the snapshot ------------- */

struct jline {
	struct membuf m;
	struct jw w;
};

/* Open a line's object with the members every stream line starts with. */
static bool jline_open(struct jline *l, const char *kind, pid_t pid, int64_t sec,
		       long nsec)
{
	if (!mb_open(&l->m))
		return false;
	char t[64];
	agent_iso_time(sec, nsec, t, sizeof t);
	jw_init(&l->w, l->m.f, false);
	json_line_head(&l->w, kind, pid, t);
	return true;
}

/* Close it and queue it, unless it went wrong. */
static void jline_put(struct jline *l)
{
	jw_obj_end(&l->w);
	if (jw_finish(&l->w)) {
		fclose(l->m.f);
		free(l->m.buf);
		return;
	}
	mb_put(&l->m);
}

/* ---- summary lines ---------------------------------------------------------- */

/*
 * Counts by name, in the order the names first come; names from the target
 * are counted as written (every invalid byte U+FFFD), so two names that
 * differ only there are one key of the object.
 */
struct tally {
	struct tally_entry {
		char *name;
		size_t n;
	} *v;
	size_t n;
};

static void tally_add(struct tally *t, const char *name)
{
	for (size_t i = 0; i < t->n; i++)
		if (agent_json_same_key(t->v[i].name, name)) {
			t->v[i].n++;
			return;
		}
	struct tally_entry *nv = realloc(t->v, (t->n + 1) * sizeof *nv);
	char *copy = strdup(name);
	if (!nv || !copy) {
		if (nv)
			t->v = nv;
		free(copy);
		return;
	}
	t->v = nv;
	t->v[t->n++] = (struct tally_entry){ copy, 1 };
}

/* "key": {"name": n, ...}, and free */
static void tally_json(struct jw *w, const char *k, struct tally *t)
{
	jw_key(w, k);
	jw_obj(w);
	for (size_t i = 0; i < t->n; i++) {
		jw_kint(w, t->v[i].name, (int64_t)t->v[i].n);
		free(t->v[i].name);
	}
	jw_obj_end(w);
	free(t->v);
	t->v = NULL;
	t->n = 0;
}

/* Where a thread was started: by symbol, else where it is in its module
 * (MariaDB's workers start at a local function of a stripped binary):
 * never "(unknown)" for an address a module holds. */
static const char *start_routine_name(const tinspect_thread *th, char *buf, size_t len)
{
	const tinspect_symbol *start = tinspect_thread_start_routine(th);
	if (!start)
		return tinspect_thread_is_initial(th) ? "(main)" : "(unknown)";
	const char *name = tinspect_symbol_name(start);
	const char *module = tinspect_symbol_module(start);
	if (name)
		return name;
	if (module)
		return agent_module_offset(buf, len, module, tinspect_symbol_offset(start));
	if (tinspect_symbol_addr(start)) {
		snprintf(buf, len, "0x%" PRIx64, tinspect_symbol_addr(start));
		return buf;
	}
	return "(unknown)";
}

#define TOP_LOCKS 5

/* a lock of a summary's cycle: its address, null for none */
static void lock_addr_json(struct jw *w, const tinspect_lock *l)
{
	if (l)
		jw_hex(w, tinspect_lock_addr(l));
	else
		jw_null(w);
}

static void summary_locks_json(struct jw *w, const tinspect_snapshot *snap)
{
	struct tally by_kind = { 0 };
	size_t nlocks = tinspect_snapshot_nlocks(snap);
	const tinspect_lock **v = NULL;
	if (tinspect_snapshot_locks_analysed(snap)) {
		for (size_t i = 0, n = tinspect_snapshot_nthreads(snap); i < n; i++) {
			const tinspect_wait *b =
				tinspect_thread_wait(tinspect_snapshot_thread(snap, i));
			if (b)
				tally_add(&by_kind,
					  tinspect_lock_kind_name(tinspect_wait_kind(b)));
		}
		v = agent_locks_by_waiters(snap);
	}
	tally_json(w, "blocked_by_kind", &by_kind);

	jw_key(w, "top_locks");
	jw_arr(w);
	for (size_t i = 0; v && i < nlocks && i < TOP_LOCKS; i++) {
		const tinspect_symbol *sym = tinspect_lock_symbol(v[i]);
		jw_obj(w);
		jw_key(w, "addr");
		jw_hex(w, tinspect_lock_addr(v[i]));
		jw_kstr(w, "kind", tinspect_lock_kind_name(tinspect_lock_kind(v[i])));
		jw_kstr(w, "symbol", sym ? tinspect_symbol_name(sym) : NULL);
		jw_kint(w, "waiters", (int64_t)tinspect_lock_nwaiters(v[i]));
		jw_key(w, "owner");
		if (tinspect_lock_owner_state(v[i]) == TINSPECT_OWNER_LIVE)
			jw_int(w, tinspect_lock_owner(v[i]));
		else
			jw_null(w);
		jw_obj_end(w);
	}
	jw_arr_end(w);
	free(v);

	/* a nonblocking capture's cycles are candidates, not deadlocks */
	bool cand = tinspect_snapshot_capture_mode(snap) == TINSPECT_CAPTURE_NONBLOCKING;
	if (cand) {
		jw_key(w, "deadlocks");
		jw_arr(w);
		jw_arr_end(w);
	}
	jw_key(w, cand ? "unconfirmed_deadlocks" : "deadlocks");
	json_cycles(w, snap, lock_addr_json);
}

static void summary_json(const tinspect_snapshot *snap, unsigned long update,
			 const struct lockorder *lo)
{
	int64_t sec;
	long nsec;
	struct jline l;
	tinspect_snapshot_captured_at(snap, &sec, &nsec);
	if (!jline_open(&l, "summary", tinspect_snapshot_pid(snap), sec, nsec))
		return;
	struct jw *w = &l.w;
	jw_kint(w, "update", (int64_t)update);
	jw_kstr(w, "mode", tinspect_capture_mode_name(tinspect_snapshot_capture_mode(snap)));
	jw_kint(w, "freeze_us", (int64_t)(tinspect_snapshot_freeze_ns(snap) / 1000));
	jw_kint(w, "duration_us", (int64_t)(tinspect_snapshot_duration_ns(snap) / 1000));
	jw_kint(w, "threads", (int64_t)tinspect_snapshot_nthreads(snap));
	jw_kint(w, "threads_stopped", (int64_t)tinspect_snapshot_threads_stopped(snap));
	jw_kint(w, "module_generation", (int64_t)tinspect_snapshot_module_generation(snap));

	struct tally by_state = { 0 }, by_start = { 0 };
	for (size_t i = 0, n = tinspect_snapshot_nthreads(snap); i < n; i++) {
		const tinspect_thread *th = tinspect_snapshot_thread(snap, i);
		char state = tinspect_thread_state(th);
		char st[2] = { state ? state : '?', 0 };
		char where[512];
		tally_add(&by_state, st);
		tally_add(&by_start, start_routine_name(th, where, sizeof where));
	}
	tally_json(w, "by_state", &by_state);
	tally_json(w, "by_start_routine", &by_start);
	summary_locks_json(w, snap);
	duty_json(w, &duty);
	jw_kint(w, "threads_hung", (int64_t)overtime_nhung(ot));
	jw_kint(w, "locks_held_long", (int64_t)overtime_nheld(ot));
	struct agent_verdict v;
	verdict_make(snap, update, &v);
	jw_kstr(w, "verdict", verdict_deadlock_word(&v));
	jw_kint(w, "threads_undecided", (int64_t)v.undecided);
	lockorder_summary_json(w, lo);
	jline_put(&l);
}

static void summary_text(const tinspect_snapshot *snap, unsigned long update,
			 const struct lockorder *lo)
{
	struct membuf m;
	FILE *f = mb_open(&m);
	if (!f)
		return;
	char t[64];
	int64_t sec;
	long nsec;
	size_t n = tinspect_snapshot_nthreads(snap);
	tinspect_snapshot_captured_at(snap, &sec, &nsec);
	agent_iso_time(sec, nsec, t, sizeof t);
	size_t counts[128] = { 0 }, blocked = 0;
	for (size_t i = 0; i < n; i++) {
		const tinspect_thread *th = tinspect_snapshot_thread(snap, i);
		counts[(unsigned char)tinspect_thread_state(th) & 127]++;
		blocked += tinspect_thread_wait(th) != NULL;
	}
	fprintf(f, "%s update %lu pid %d: %zu threads (", t, update,
		(int)tinspect_snapshot_pid(snap), n);
	bool first = true;
	for (int c = 0; c < 128; c++)
		if (counts[c]) {
			fprintf(f, "%s%c %zu", first ? "" : ", ", c ? c : '?', counts[c]);
			first = false;
		}
	size_t dl = tinspect_snapshot_ncycles(snap);
	enum tinspect_capture_mode mode = tinspect_snapshot_capture_mode(snap);
	fprintf(f, "), %zu blocked on futexes, %zu %sdeadlock%s, %zu hung, frozen %.3f ms%s, "
		"duty %.3f%% (last %.3f%%)",
		blocked, dl, mode == TINSPECT_CAPTURE_NONBLOCKING ? "unconfirmed " : "",
		dl == 1 ? "" : "s", overtime_nhung(ot),
		(double)tinspect_snapshot_freeze_ns(snap) / 1e6,
		mode == TINSPECT_CAPTURE_ALL_STOP ? "" :
		mode == TINSPECT_CAPTURE_NONBLOCKING ? " (nonblocking)" :
		" (stopped to confirm a nonblocking capture)",
		duty.total * 100, duty.last * 100);
	if (lo) {
		size_t ni = lockorder_ninversions(lo);
		fprintf(f, ", %zu lock order inversion%s (potential deadlock%s)", ni,
			ni == 1 ? "" : "s", ni == 1 ? "" : "s");
	}
	fputc('\n', f);
	mb_put(&m);
}

/* ---- event lines ----------------------------------------------------------- */

struct watch_ctx {
	const struct watch_opts *w;
	pid_t pid;
};

static void event_text(const tinspect_event *ev, int64_t sec, long nsec)
{
	struct membuf m;
	FILE *f = mb_open(&m);
	if (!f)
		return;
	char t[64];
	pid_t tid = tinspect_event_tid(ev);
	int status = tinspect_event_wait_status(ev);
	agent_iso_time(sec, nsec, t, sizeof t);
	if (tinspect_event_kind(ev) == TINSPECT_EVENT_THREAD_CREATED) {
		const tinspect_symbol *start = tinspect_event_start(ev);
		const char *name = start ? tinspect_symbol_name(start) : NULL;
		fprintf(f, "%s thread %d created by %d", t, (int)tid,
			(int)tinspect_event_parent(ev));
		if (name) {
			fputs(", start ", f);
			agent_fput_quoted(f, name, strlen(name));
		}
		fputc('\n', f);
	} else if (WIFSIGNALED(status)) {
		fprintf(f, "%s thread %d exited (signal %d)\n", t, (int)tid,
			WTERMSIG(status));
	} else {
		fprintf(f, "%s thread %d exited\n", t, (int)tid);
	}
	mb_put(&m);
}

static void event_line(void *arg, const tinspect_event *ev)
{
	struct watch_ctx *c = arg;
	bool created = tinspect_event_kind(ev) == TINSPECT_EVENT_THREAD_CREATED;
	int64_t sec;
	long nsec;
	tinspect_event_time(ev, &sec, &nsec);
	if (!c->w->json) {
		event_text(ev, sec, nsec);
		return;
	}
	struct jline l;
	if (!jline_open(&l, "event", c->pid, sec, nsec))
		return;
	struct jw *w = &l.w;
	int status = tinspect_event_wait_status(ev);
	jw_kstr(w, "event", created ? "thread_created" : "thread_exited");
	jw_kint(w, "tid", tinspect_event_tid(ev));
	if (created) {
		const tinspect_symbol *start = tinspect_event_start(ev);
		jw_kint(w, "parent_tid", tinspect_event_parent(ev));
		jw_key(w, "start_routine");
		if (start) {
			jw_obj(w);
			jw_key(w, "addr");
			jw_hex(w, tinspect_symbol_addr(start));
			jw_kstr(w, "module", tinspect_symbol_module(start));
			jw_kstr(w, "symbol", tinspect_symbol_name(start));
			jw_kint(w, "offset", (int64_t)tinspect_symbol_offset(start));
			jw_obj_end(w);
		} else {
			jw_null(w);
		}
	} else {
		jw_key(w, "exit_status");
		if (WIFEXITED(status))
			jw_int(w, WEXITSTATUS(status));
		else
			jw_null(w);
		jw_key(w, "signal");
		if (WIFSIGNALED(status))
			jw_int(w, WTERMSIG(status));
		else
			jw_null(w);
	}
	jline_put(&l);
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
		agent_iso_time(ts.tv_sec, ts.tv_nsec, t, sizeof t);
		fprintf(f, "%s %s%s%s\n", t, what, detail ? ": " : "", detail ? detail : "");
		mb_put(&m);
		return;
	}
	struct jline l;
	if (!jline_open(&l, "event", pid, ts.tv_sec, ts.tv_nsec))
		return;
	jw_kstr(&l.w, "event", what);
	jw_kstr(&l.w, "detail", detail);
	jline_put(&l);
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

/* One snapshot as a line (or a block of text) of the stream. */
static void snapshot_out(const tinspect_snapshot *snap, unsigned long update,
			 const struct watch_opts *w, const struct agent_opts *ao)
{
	if (w->summary && w->json) {
		summary_json(snap, update, ao->lockorder);
		return;
	}
	if (w->summary) {
		summary_text(snap, update, ao->lockorder);
		return;
	}
	/* not following, nothing of the target waits for the output: the
	 * snapshot is streamed, not built whole in memory (outq_stream) */
	struct membuf m;
	FILE *f = w->follow ? mb_open(&m) : outq_stream(out);
	if (!f)
		return;
	struct agent_opts lo = *ao;
	lo.update = update;
	lo.pretty = false;
	if (!w->json)
		fprintf(f, "--- update %lu ---\n", update);
	ao->render(f, snap, &lo);
	if (w->follow)
		mb_put(&m);
	else
		fclose(f);
}

/* One update's lines: the duty cycle and the events of what lasts
 * (overtime.c) are worked out first, so that the update's line carries
 * them; the events follow the update they come from. */
static void overtime_out(const tinspect_snapshot *snap, unsigned long update,
			 const struct watch_opts *w, const struct agent_opts *ao)
{
	pid_t pid = tinspect_snapshot_pid(snap);
	struct membuf before, after;
	FILE *fb = mb_open(&before);
	if (fb)
		duty_note(&duty, snap, now_ns(), pid, w->json, fb);
	FILE *fa = mb_open(&after);
	if (fa) {
		overtime_update(ot, snap, w->json, fa);
		/* a potential deadlock the moment its last order is seen */
		lockorder_events(ao->lockorder, pid, w->json, fa);
	}
	snapshot_out(snap, update, w, ao);
	mb_put(&before);	/* interval_changed: says when the next comes */
	mb_put(&after);
}

static int watch_loop(tinspect_session **sp, pid_t pid,
		      const struct tinspect_options *opts, const struct watch_opts *w,
		      const struct agent_opts *ao)
{
	tinspect_session *s = *sp;
	struct watch_ctx ctx = { w, pid };
	int err = 0;
	if (w->follow) {
		err = tinspect_session_follow(s);
		if (err)
			return err;
	}
	uint64_t next = now_ns();
	for (unsigned long update = 1; !w->count || update <= w->count; update++) {
		tinspect_snapshot *snap = NULL;
		report_dropped(w, pid);
		err = tinspect_session_update(s, &snap);
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
			tinspect_session_destroy(s);
			*sp = s = NULL;
			err = tinspect_session_init(pid, opts, &s);
			if (err == -ESRCH) {
				/* the new program is gone already */
				stream_event(w, pid, "target_exited", NULL);
				return 0;
			}
			if (err)
				return err;
			*sp = s;
			if (w->follow && (err = tinspect_session_follow(s)))
				return err;
			update--;	/* this update did not happen */
		} else if (err == -ETIMEDOUT) {
			/* one update abandoned, the target resumed: the stream
			 * goes on */
			stream_event(w, pid, "capture_abandoned",
				     "the freeze limit was exceeded");
			formats_update_failed(ao->formats);
		} else if (err) {
			return err;
		} else {
			if (ao->lockorder)
				lockorder_sample(ao->lockorder, snap, update);
			formats_snapshot(ao->formats, snap);
			overtime_out(snap, update, w, ao);
			/* --lock-order FILE: what is new, at once */
			lockorder_save(ao->lockorder, false);
			tinspect_snapshot_free(snap);
			/* give the freed snapshot back before the next capture
			 * copies stacks: else the two add up in the peak RSS
			 * (malloc keeps a freed heap resident) */
			malloc_trim(0);
		}
		tinspect_session_service(s);
		if (w->count && update == w->count)
			break;
		next += duty.interval_ns;
		uint64_t now = now_ns();
		if (next < now)
			next = now;	/* an update longer than the interval */
		err = tinspect_session_wait(s, next, event_line, &ctx);
		if (err == -ESRCH) {
			stream_event(w, pid, "target_exited", NULL);
			return 0;
		}
		if (err)
			return err;
	}
	return 0;
}

int agent_watch(tinspect_session **sp, pid_t pid, const struct tinspect_options *opts,
		const struct watch_opts *w, const struct agent_opts *ao)
{
	fflush(stdout);
	out = outq_start(fileno(stdout), w->queue_limit ? w->queue_limit : 256u << 20,
			 w->cancel, SIGPIPE);
	if (!out)
		return -ENOMEM;
	duty_init(&duty, w->interval_ns, w->max_duty_percent);
	ot = overtime_new(pid, w->hung_after_ns);
	int err = ot ? watch_loop(sp, pid, opts, w, ao) : -ENOMEM;
	overtime_free(ot);
	ot = NULL;
	/* detach before waiting for the reader: while attached, every clone
	 * and signal in the target waits for tinspect */
	if (*sp)
		tinspect_session_unfollow(*sp);
	int werr = outq_finish(out);
	out = NULL;
	if (werr && !err)
		err = -werr;
	return err;
}
