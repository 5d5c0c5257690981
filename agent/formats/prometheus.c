/*
 * prometheus.c: --prometheus FILE, the Prometheus text exposition format
 * (version 0.0.4) as node_exporter's textfile collector reads it
 * (--collector.textfile.directory): after every update FILE is replaced
 * atomically (atomicfile.c) by the whole exposition of the last update.
 *
 * Conventions (prometheus.io/docs/practices/naming): every family has
 * HELP and TYPE, the tinspect_ prefix, base units (_seconds), _total for
 * counters, an _info gauge of value 1 for what identifies the target.
 * Labels stay low-cardinality: no TIDs, no addresses; a lock appears by
 * name only when a symbol names it, and at most PROM_MAX_LOCKS of them
 * (the rest together as lock="(other)").  No sample carries a timestamp:
 * the collector refuses them.
 *
 * A family that the snapshot cannot give is left out rather than written
 * as 0: when the lock analysis could not be made (out of memory), there
 * is no tinspect_deadlock_cycles, because 0 would claim "no deadlock".
 */
#include "formats.h"
#include "lockorder.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "jwriter.h"
#include "config.h"

/* Named locks with their own tinspect_lock_waiters series. */
#define PROM_MAX_LOCKS 10

/* Label values: the exposition format escapes '\\', '"' and newline
 * (and nothing else); its parsers (Go's expfmt, which node_exporter uses)
 * reject values that are not UTF-8, so every invalid byte becomes
 * U+FFFD, as in the JSON document. */
void prom_put_label_value(FILE *out, const char *s)
{
	size_t n = strlen(s);
	for (size_t i = 0; i < n;) {
		unsigned char c = (unsigned char)s[i];
		size_t l = agent_utf8_seq((const unsigned char *)s + i, n - i);
		if (l == 0) {
			fputs("\xef\xbf\xbd", out);
			i++;
			continue;
		}
		if (c == '\\')
			fputs("\\\\", out);
		else if (c == '"')
			fputs("\\\"", out);
		else if (c == '\n')
			fputs("\\n", out);
		else
			fwrite(s + i, 1, l, out);
		i += l;
	}
}

static void family(FILE *f, const char *name, const char *type, const char *help)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* ---- the gauges of one snapshot --------------------------------------------------- */

static const char *const states[] = {
	"running", "sleeping", "disk_sleep", "stopped", "tracing_stop",
	"zombie", "dead", "idle", "parked", "unknown",
};

static void put_threads(FILE *f, const tinspect_snapshot *snap)
{
	size_t count[sizeof states / sizeof *states] = { 0 };
	size_t blocked[TINSPECT_LOCK_KIND_COUNT] = { 0 };
	size_t nthreads = tinspect_snapshot_nthreads(snap);
	for (size_t i = 0; i < nthreads; i++) {
		const tinspect_thread *th = tinspect_snapshot_thread(snap, i);
		const char *st = formats_state_label(tinspect_thread_state(th));
		for (size_t k = 0; k < sizeof states / sizeof *states; k++)
			if (!strcmp(states[k], st))
				count[k]++;
		const tinspect_wait *w = tinspect_thread_wait(th);
		if (w && (unsigned)tinspect_wait_kind(w) < TINSPECT_LOCK_KIND_COUNT)
			blocked[tinspect_wait_kind(w)]++;
	}
	family(f, "tinspect_threads", "gauge",
	       "Threads of the target at the last update, by kernel state "
	       "(/proc/PID/task/TID/stat, read before the stop).");
	for (size_t k = 0; k < sizeof states / sizeof *states; k++)
		fprintf(f, "tinspect_threads{state=\"%s\"} %zu\n", states[k], count[k]);
	family(f, "tinspect_threads_blocked", "gauge",
	       "Threads blocked in a futex wait at the last update, by the kind of "
	       "object waited on (futex: not identified).");
	for (int k = 0; k < TINSPECT_LOCK_KIND_COUNT; k++)
		fprintf(f, "tinspect_threads_blocked{kind=\"%s\"} %zu\n",
			tinspect_lock_kind_name((enum tinspect_lock_kind)k), blocked[k]);
	family(f, "tinspect_threads_with_errors", "gauge",
	       "Threads that could not be fully read at the last update.");
	fprintf(f, "tinspect_threads_with_errors %zu\n",
		tinspect_snapshot_threads_with_errors(snap));
}

/* One named lock's series: its labels as written, its waiters. */
struct lockrow {
	char *labels;
	size_t waiters;
};

static int cmp_labels(const void *a, const void *b)
{
	return strcmp(((const struct lockrow *)a)->labels,
		      ((const struct lockrow *)b)->labels);
}

static int cmp_waiters(const void *a, const void *b)
{
	const struct lockrow *x = a, *y = b;
	if (x->waiters != y->waiters)
		return x->waiters > y->waiters ? -1 : 1;
	return strcmp(x->labels, y->labels);
}

/* `lock="NAME",kind="KIND"` of a named lock; NULL if it has no name. */
static char *lock_labels(const tinspect_lock *l)
{
	const tinspect_symbol *sym = tinspect_lock_symbol(l);
	const char *name = sym ? tinspect_symbol_name(sym) : NULL;
	if (!name)
		return NULL;
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	if (!f)
		return NULL;
	fputs("lock=\"", f);
	prom_put_label_value(f, name);
	if (tinspect_symbol_offset(sym))
		fprintf(f, "+0x%" PRIx64, tinspect_symbol_offset(sym));
	fprintf(f, "\",kind=\"%s\"", tinspect_lock_kind_name(tinspect_lock_kind(l)));
	if (fclose(f)) {
		free(buf);
		return NULL;
	}
	return buf;
}

static void put_lock_waiters(FILE *f, const tinspect_snapshot *snap)
{
	size_t nlocks = tinspect_snapshot_nlocks(snap), n = 0, other = 0;
	struct lockrow *v = calloc(nlocks ? nlocks : 1, sizeof *v);
	if (!v)
		return;
	for (size_t i = 0; i < nlocks; i++) {
		const tinspect_lock *l = tinspect_snapshot_lock(snap, i);
		size_t waiters = tinspect_lock_nwaiters(l);
		char *labels = lock_labels(l);
		if (labels)
			v[n++] = (struct lockrow){ labels, waiters };
		else
			other += waiters;
	}
	/* two locks of one name (static variables of two modules, or names
	 * that differ only in bytes made U+FFFD) must be one series: the
	 * collector refuses a duplicate */
	qsort(v, n, sizeof *v, cmp_labels);
	size_t m = 0;
	for (size_t i = 0; i < n; i++) {
		if (m && !strcmp(v[m - 1].labels, v[i].labels)) {
			v[m - 1].waiters += v[i].waiters;
			free(v[i].labels);
		} else {
			v[m++] = v[i];
		}
	}
	qsort(v, m, sizeof *v, cmp_waiters);
	family(f, "tinspect_lock_waiters", "gauge",
	       "Threads waiting on each named lock at the last update (the "
	       "10 with the most waiters; lock=\"(other)\": every other lock).");
	for (size_t i = 0; i < m; i++) {
		if (i < PROM_MAX_LOCKS)
			fprintf(f, "tinspect_lock_waiters{%s} %zu\n", v[i].labels,
				v[i].waiters);
		else
			other += v[i].waiters;
		free(v[i].labels);
	}
	fprintf(f, "tinspect_lock_waiters{lock=\"(other)\"} %zu\n", other);
	free(v);
}

static void put_locks(FILE *f, const tinspect_snapshot *snap)
{
	/* without the analysis, deadlocks are unknown, not absent */
	if (!tinspect_snapshot_locks_analysed(snap))
		return;
	put_lock_waiters(f, snap);
	size_t ncycles = tinspect_snapshot_ncycles(snap), in_cycles = 0;
	for (size_t i = 0; i < ncycles; i++)
		in_cycles += tinspect_cycle_length(tinspect_snapshot_cycle(snap, i));
	family(f, "tinspect_deadlock_cycles", "gauge",
	       "Deadlocks (cycles of the wait-for graph) at the last update.");
	fprintf(f, "tinspect_deadlock_cycles %zu\n", ncycles);
	family(f, "tinspect_deadlocked_threads", "gauge",
	       "Threads in a deadlock cycle at the last update.");
	fprintf(f, "tinspect_deadlocked_threads %zu\n", in_cycles);
	family(f, "tinspect_orphaned_locks", "gauge",
	       "Locks whose owner thread is gone, at the last update.");
	fprintf(f, "tinspect_orphaned_locks %zu\n", tinspect_snapshot_norphans(snap));
	family(f, "tinspect_stalls", "gauge",
	       "Chains of waits that end in a thread that cannot move on by itself "
	       "(I/O, a wait without owner, an orphaned lock), at the last update.");
	fprintf(f, "tinspect_stalls %zu\n", tinspect_snapshot_nstalls(snap));
}

static void put_capture(FILE *f, const tinspect_snapshot *snap)
{
	int64_t sec;
	long nsec;
	tinspect_snapshot_captured_at(snap, &sec, &nsec);
	family(f, "tinspect_freeze_seconds", "gauge",
	       "How long the target was stopped by the last update.");
	fprintf(f, "tinspect_freeze_seconds %.9f\n",
		(double)tinspect_snapshot_freeze_ns(snap) / 1e9);
	family(f, "tinspect_update_duration_seconds", "gauge",
	       "How long the last update took, analysis included.");
	fprintf(f, "tinspect_update_duration_seconds %.9f\n",
		(double)tinspect_snapshot_duration_ns(snap) / 1e9);
	family(f, "tinspect_last_update_timestamp_seconds", "gauge",
	       "When the last successful update stopped the target (Unix time).");
	fprintf(f, "tinspect_last_update_timestamp_seconds %" PRId64 ".%03ld\n", sec,
		nsec / 1000000);
}

/*
 * Hung threads and the longest wait, from the ages of the waits a watch
 * follows (tinspect_thread_waiting_since_ns()), as --hung-after counts them: a
 * thread in a wait that is not idle (tinspect_wait_is_idle() == 0: a
 * mutex, rwlock, semaphore, barrier or join; not a condvar, not an
 * unidentified futex, not another system call) for hung_after_ns or
 * more.  Only in a watch: one update cannot tell how long a wait lasts.
 */
static void put_wait_ages(FILE *f, const tinspect_snapshot *snap,
			  const struct prom_state *st)
{
	if (!st->wait_ages)
		return;
	int64_t sec;
	long nsec;
	tinspect_snapshot_captured_at(snap, &sec, &nsec);
	int64_t now = sec * 1000000000 + nsec, longest = 0;
	size_t hung = 0;
	for (size_t i = 0, n = tinspect_snapshot_nthreads(snap); i < n; i++) {
		const tinspect_thread *th = tinspect_snapshot_thread(snap, i);
		const tinspect_wait *w = tinspect_thread_wait(th);
		int64_t since = tinspect_thread_waiting_since_ns(th);
		if (!w || since < 0 || tinspect_wait_is_idle(w) != 0)
			continue;
		int64_t age = now > since ? now - since : 0;
		if (age > longest)
			longest = age;
		if (st->hung_after_ns && age >= (int64_t)st->hung_after_ns)
			hung++;
	}
	if (st->hung_after_ns) {
		family(f, "tinspect_hung_threads", "gauge",
		       "Threads in the same non-idle wait (mutex, rwlock, semaphore, "
		       "barrier, join) for --hung-after seconds or more, at the last "
		       "update.");
		fprintf(f, "tinspect_hung_threads %zu\n", hung);
		family(f, "tinspect_hung_after_seconds", "gauge",
		       "The --hung-after threshold of tinspect_hung_threads.");
		fprintf(f, "tinspect_hung_after_seconds %.3f\n",
			(double)st->hung_after_ns / 1e9);
	}
	family(f, "tinspect_longest_wait_seconds", "gauge",
	       "The longest current non-idle wait (mutex, rwlock, semaphore, "
	       "barrier, join) at the last update, as far as the updates can tell; "
	       "0: none.");
	fprintf(f, "tinspect_longest_wait_seconds %.3f\n", (double)longest / 1e9);
}

/* The lock-order graph's counts (a watch, or --lock-order). */
static void put_lock_order(FILE *f, const struct lockorder *lo)
{
	if (!lo || !lo->sampled)
		return;
	uint64_t none = 0;
	for (size_t c = LG_WAIT_COND; c < LG_WAIT_CLASSES; c++)
		none += lo->waits[c];
	family(f, "tinspect_lock_order_inversions", "gauge",
	       "Potential deadlocks in the lock-order graph: cycles of lock orders "
	       "(a thread holding A seen waiting for B) not all seen in one thread, "
	       "over every update of the run and the --lock-order file.");
	fprintf(f, "tinspect_lock_order_inversions %zu\n", lockorder_ninversions(lo));
	family(f, "tinspect_lock_order_edges", "gauge",
	       "Lock orders learned (a thread holding A seen waiting for B).");
	fprintf(f, "tinspect_lock_order_edges %zu\n", lo->g->nedges);
	family(f, "tinspect_lock_order_waits_no_owner", "gauge",
	       "Waits at the last update that could give no lock order: on objects "
	       "that record no owner (condition variables, semaphores, barriers, "
	       "unidentified futexes, joins).");
	fprintf(f, "tinspect_lock_order_waits_no_owner %" PRIu64 "\n", none);
}

static char *render_gauges(const tinspect_snapshot *snap,
			   const struct prom_state *st)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	if (!f)
		return NULL;
	put_threads(f, snap);
	put_locks(f, snap);
	put_lock_order(f, st->lockorder);
	put_wait_ages(f, snap, st);
	put_capture(f, snap);
	if (fclose(f)) {
		free(buf);
		return NULL;
	}
	return buf;
}

static char *render_info(const tinspect_snapshot *snap)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	if (!f)
		return NULL;
	const char *exe = tinspect_snapshot_exe(snap);
	const char *glibc = tinspect_snapshot_glibc_version(snap);
	family(f, "tinspect_target_info", "gauge",
	       "The inspected process: its PID, executable and glibc version "
	       "(empty: unknown); the value is always 1.");
	fprintf(f, "tinspect_target_info{pid=\"%d\",exe=\"",
		(int)tinspect_snapshot_pid(snap));
	prom_put_label_value(f, exe ? exe : "");
	fputs("\",glibc_version=\"", f);
	prom_put_label_value(f, glibc ? glibc : "");
	fputs("\"} 1\n", f);
	if (fclose(f)) {
		free(buf);
		return NULL;
	}
	return buf;
}

/* ---- the file ------------------------------------------------------------------------ */

int prom_write(const char *path, struct prom_state *st,
	       const tinspect_snapshot *snap, unsigned mode)
{
	if (snap) {
		char *g = render_gauges(snap, st), *info = render_info(snap);
		if (!g || !info) {
			free(g);
			free(info);
			return -ENOMEM;
		}
		free(st->gauges);
		free(st->info);
		st->gauges = g;
		st->info = info;
	}
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	if (!f)
		return -ENOMEM;
	fprintf(f, "# tinspect %s\n", TINSPECT_VERSION);
	/* after a failed update: the last good one's values, which
	 * tinspect_last_update_timestamp_seconds dates */
	if (st->info)
		fputs(st->info, f);
	if (st->gauges)
		fputs(st->gauges, f);
	family(f, "tinspect_updates_total", "counter",
	       "Updates (captures) made since tinspect started.");
	fprintf(f, "tinspect_updates_total %" PRIu64 "\n", st->updates);
	family(f, "tinspect_update_errors_total", "counter",
	       "Updates that failed (the freeze limit was exceeded, ...) since "
	       "tinspect started.");
	fprintf(f, "tinspect_update_errors_total %" PRIu64 "\n", st->errors);
	if (fclose(f)) {
		free(buf);
		return -ENOMEM;
	}
	int err = atomicfile_replace(path, buf, len, mode);
	free(buf);
	return err;
}

void prom_state_free(struct prom_state *st)
{
	free(st->gauges);
	free(st->info);
	st->gauges = st->info = NULL;
}
