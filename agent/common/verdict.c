/*
 * verdict.c: what the verdict says, decided once for the text (report.c),
 * the JSON document (json_locks.c) and the stream's summary lines.
 *
 * Deadlocks, orphaned locks and stalls are what the wait-for graph proves.
 * What it cannot prove is the rest: threads in untimed waits on
 * primitives that record no owner (condition variables, semaphores,
 * barriers, unidentified futexes, rwlocks held by readers, locks held
 * outside the process).  That is how every idle worker pool looks, and
 * also how threads waiting for each other through such primitives look (a
 * Python threading.Lock ABBA is two semaphore waits).  A verdict that
 * lists them on every healthy service is one people learn to skip, so
 * they are worth a line of the verdict only when something says that the
 * process is stuck:
 *
 *   no_progress  no thread of the process can make progress: every thread
 *                is in an untimed wait that only another thread of the
 *                process can end (tinspect_thread_progress() INSIDE):
 *                none runs, none sleeps with a timeout, none waits for
 *                anything from outside the process (a read, a poll, a
 *                child, a signal), none is stopped or in D state.  Then
 *                nothing inside the process will ever post, signal or
 *                unlock what they wait for.
 *   persisted    in a watch: every thread of the process is in the wait it
 *                was in at the previous update (the session followed it:
 *                the same object or call, the same stack, and the thread
 *                did not run in between; tinspect_thread_waiting_since_ns()
 *                earlier than this capture).  The undecided waits are on
 *                the same words as then, and nothing else moved.
 *
 * Otherwise the verdict is "No deadlock found" and the undecided waits are
 * counted below it, by kind ("33 threads idle in untimed condition-
 * variable waits"), in a watch with how many are the same as at the
 * previous update.
 */
#include "verdict.h"

#include <stdlib.h>
#include <string.h>

/* The end of a stall, which the verdict names already. */
static bool ends_a_stall(const tinspect_snapshot *snap, pid_t tid)
{
	for (size_t i = 0, n = tinspect_snapshot_nstalls(snap); i < n; i++) {
		const tinspect_stall *st = tinspect_snapshot_stall(snap, i);
		if (tinspect_stall_tid(st, tinspect_stall_length(st) - 1) == tid)
			return true;
	}
	return false;
}

bool verdict_undecided_wait(const tinspect_snapshot *snap, const tinspect_thread *th)
{
	const tinspect_wait *b = tinspect_thread_wait(th);
	const tinspect_lock *l = b ? tinspect_wait_lock(b) : NULL;
	if (!l || !tinspect_wait_in_graph(b) || tinspect_wait_parked(b) ||
	    !tinspect_wait_untimed(b))
		return false;
	switch (tinspect_lock_kind(l)) {
	case TINSPECT_LOCK_COND:
	case TINSPECT_LOCK_SEM:
	case TINSPECT_LOCK_BARRIER:
		break;
	case TINSPECT_LOCK_FUTEX:
	case TINSPECT_LOCK_RWLOCK:
	case TINSPECT_LOCK_MUTEX:
	case TINSPECT_LOCK_FILE:
		if (tinspect_lock_owner_state(l) != TINSPECT_OWNER_UNKNOWN &&
		    tinspect_lock_owner_state(l) != TINSPECT_OWNER_OUTSIDE)
			return false;
		break;
	case TINSPECT_LOCK_JOIN:
	case TINSPECT_LOCK_KIND_COUNT:
		return false;
	}
	return !ends_a_stall(snap, tinspect_thread_tid(th));
}

bool verdict_same_wait(const tinspect_snapshot *snap, const tinspect_thread *th)
{
	int64_t sec;
	long nsec;
	tinspect_snapshot_captured_at(snap, &sec, &nsec);
	int64_t since = tinspect_thread_waiting_since_ns(th);
	return since >= 0 && since < sec * 1000000000 + nsec;
}

/* How an undecided wait is counted below "No deadlock found". */
static const char *kind_words(const tinspect_lock *l)
{
	bool outside = tinspect_lock_owner_state(l) == TINSPECT_OWNER_OUTSIDE;
	switch (tinspect_lock_kind(l)) {
	case TINSPECT_LOCK_COND: return "condition-variable waits";
	case TINSPECT_LOCK_SEM: return "semaphore waits";
	case TINSPECT_LOCK_BARRIER: return "barrier waits";
	case TINSPECT_LOCK_FUTEX:
		return outside ? "waits on futexes held outside the process"
			       : "waits on unidentified futexes";
	case TINSPECT_LOCK_RWLOCK:
		return outside ? "waits on rwlocks held outside the process"
			       : "waits on rwlocks held by readers";
	case TINSPECT_LOCK_MUTEX:
		return outside ? "waits on mutexes held outside the process"
			       : "waits on mutexes whose owner is unknown";
	case TINSPECT_LOCK_FILE:
		return "waits on stdio FILE locks whose owner is unknown";
	case TINSPECT_LOCK_JOIN:
	case TINSPECT_LOCK_KIND_COUNT:
		break;
	}
	return "waits";
}

static void count_kind(struct agent_verdict *v, const tinspect_lock *l, bool same)
{
	const char *what = kind_words(l);
	size_t i;
	for (i = 0; i < v->nkinds; i++)
		if (v->kinds[i].what == what)
			break;
	if (i == v->nkinds) {
		if (v->nkinds == VERDICT_KINDS)
			return;
		v->kinds[v->nkinds++] = (struct verdict_kind){
			.what = what,
			.kind = tinspect_lock_kind(l),
			.owner = tinspect_lock_owner_state(l),
		};
	}
	v->kinds[i].threads++;
	v->kinds[i].same += same;
}

static int cmp_kinds(const void *a, const void *b)
{
	const struct verdict_kind *x = a, *y = b;
	if (x->threads != y->threads)
		return x->threads > y->threads ? -1 : 1;
	return strcmp(x->what, y->what);
}

void verdict_make(const tinspect_snapshot *snap, unsigned long update,
		  struct agent_verdict *v)
{
	memset(v, 0, sizeof *v);
	v->analysed = tinspect_snapshot_locks_analysed(snap);
	v->unconfirmed = tinspect_snapshot_capture_mode(snap) ==
			 TINSPECT_CAPTURE_NONBLOCKING;
	v->watched = update >= 2;
	v->threads = tinspect_snapshot_nthreads(snap);
	v->deadlocks = tinspect_snapshot_ncycles(snap);
	v->orphans = tinspect_snapshot_norphans(snap);
	v->stalls = tinspect_snapshot_nstalls(snap);
	for (size_t i = 0, n = tinspect_snapshot_nruntimes(snap); i < n; i++)
		if (!strcmp(tinspect_runtime_name(tinspect_snapshot_runtime(snap, i)),
			    "cpython"))
			v->cpython = true;
	for (size_t i = 0; i < v->threads; i++) {
		const tinspect_thread *th = tinspect_snapshot_thread(snap, i);
		enum tinspect_progress p = tinspect_thread_progress(th);
		v->progress[(unsigned)p < TINSPECT_PROGRESS_COUNT ? p : TINSPECT_PROGRESS_UNKNOWN]++;
		v->jobctl += tinspect_thread_jobctl_stopped(th);
		bool same = verdict_same_wait(snap, th);
		v->same += same;
		if (!verdict_undecided_wait(snap, th))
			continue;
		v->undecided++;
		v->undecided_same += same;
		count_kind(v, tinspect_wait_lock(tinspect_thread_wait(th)), same);
	}
	qsort(v->kinds, v->nkinds, sizeof *v->kinds, cmp_kinds);
	if (!v->analysed || !v->undecided)
		v->why = VERDICT_IDLE;
	else if (v->progress[TINSPECT_PROGRESS_INSIDE] == v->threads)
		v->why = VERDICT_NO_PROGRESS;
	else if (v->watched && v->same == v->threads)
		v->why = VERDICT_PERSISTED;
	else
		v->why = VERDICT_IDLE;
}

bool verdict_process_stopped(const struct agent_verdict *v)
{
	return v->threads && v->jobctl == v->threads;
}

const char *verdict_deadlock_word(const struct agent_verdict *v)
{
	if (!v->analysed)
		return "unknown";
	if (v->deadlocks)
		return v->unconfirmed ? "unconfirmed" : "found";
	return v->why != VERDICT_IDLE ? "possible" : "none_found";
}

const char *verdict_why_name(enum verdict_why why)
{
	switch (why) {
	case VERDICT_NO_PROGRESS: return "no_thread_can_make_progress";
	case VERDICT_PERSISTED: return "nothing_moved_since_previous_update";
	case VERDICT_IDLE: break;
	}
	return NULL;
}
