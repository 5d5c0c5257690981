/*
 * report.c: the first screen of the text report, for a person in an
 * incident, and the lock texts the other views share.
 *
 *   Verdict: deadlocks (jstack's "Found one Java-level deadlock" shape),
 *            orphaned locks, stalls, a process stopped by job control;
 *            the waits on primitives that record no owner when they are
 *            worth a line (verdict.c: no thread can make progress, or
 *            nothing moved since the previous update of a watch), else
 *            "No deadlock found" with those waits counted below it.
 *   Threads by state and by what they wait on.
 *   The most contended locks, with owner and waiters, and the function
 *   that waits on them (an unidentified futex reads "called from
 *   srw_mutex_impl::wait").
 *
 * Then, after the summary: the deadlocked threads' stacks, stall chains
 * and orphaned locks in full (report_lock_details), and at the very end
 * every lock waited on (report_all_locks).
 */
#include "text.h"
#include "verdict.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* How many locks the summary lists (all with --verbose). */
#define TOP_LOCKS 5

void report_put_thread_ref(FILE *out, const tinspect_snapshot *snap, pid_t tid)
{
	const tinspect_thread *t = tinspect_snapshot_thread_by_tid(snap, tid);
	size_t len;
	const char *name = t ? tinspect_thread_name(t, &len) : NULL;
	fputs("thread ", out);
	if (name) {
		agent_fput_quoted(out, name, len);
		fputc(' ', out);
	}
	fprintf(out, "(%d)", (int)tid);
}

static void put_lock_name(FILE *out, const tinspect_lock *l)
{
	const tinspect_symbol *sym = tinspect_lock_symbol(l);
	if (sym) {
		agent_put_escaped(out, tinspect_symbol_name(sym));
		if (tinspect_symbol_offset(sym))
			fprintf(out, "+0x%" PRIx64, tinspect_symbol_offset(sym));
	} else {
		fputs(tinspect_lock_object_known(l) ? "(no symbol)" : "(object unknown)",
		      out);
	}
}

/* lock 0x... (name, kind) */
static void put_lock_ref(FILE *out, const tinspect_lock *l)
{
	struct tinspect_mutex_state m;
	fprintf(out, "lock 0x%" PRIx64 " (", tinspect_lock_addr(l));
	if (tinspect_lock_symbol(l)) {
		put_lock_name(out, l);
		fputs(", ", out);
	}
	fputs(tinspect_lock_kind_name(tinspect_lock_kind(l)), out);
	if (tinspect_lock_mutex(l, &m, sizeof m) == 0)
		fprintf(out, " %s%s%s%s", tinspect_mutex_type_name(m.type),
			m.robust ? " robust" : "", m.pi ? " PI" : "",
			m.pp ? " PP" : "");
	fputc(')', out);
}

/* What glibc records no owner for, by name. */
static const char *ownerless_name(enum tinspect_lock_kind k)
{
	switch (k) {
	case TINSPECT_LOCK_COND: return "condition variable";
	case TINSPECT_LOCK_SEM: return "semaphore";
	case TINSPECT_LOCK_BARRIER: return "barrier";
	default: return NULL;
	}
}

/* " held by thread ..." or what is known instead */
static void put_holder(FILE *out, const tinspect_snapshot *snap, const tinspect_lock *l)
{
	enum tinspect_lock_kind kind = tinspect_lock_kind(l);
	pid_t owner = tinspect_lock_owner(l);
	unsigned holders = tinspect_lock_holders(l);
	switch (tinspect_lock_owner_state(l)) {
	case TINSPECT_OWNER_LIVE:
		fputs(kind == TINSPECT_LOCK_JOIN ? " (the end of " : " held by ", out);
		report_put_thread_ref(out, snap, owner);
		if (kind == TINSPECT_LOCK_JOIN)
			fputc(')', out);
		break;
	case TINSPECT_OWNER_DEAD:
		if (owner)
			fprintf(out, " held by thread %d, which no longer exists (orphaned)",
				(int)owner);
		else	/* the word says its owner died, not which thread */
			fputs(" held by a thread that no longer exists (orphaned)", out);
		break;
	case TINSPECT_OWNER_OUTSIDE:
		fprintf(out, " held by TID %d, not a thread of this process", (int)owner);
		break;
	case TINSPECT_OWNER_UNKNOWN:
		if (kind == TINSPECT_LOCK_FUTEX)
			fputs(" (not identified; owner unknown)", out);
		else if (holders)
			fprintf(out, " held by %u reader%s (not recorded)", holders,
				holders == 1 ? "" : "s");
		else
			fputs(" held, owner unknown", out);	/* the note says why */
		break;
	case TINSPECT_OWNER_NONE:
		if (kind == TINSPECT_LOCK_MUTEX || kind == TINSPECT_LOCK_RWLOCK)
			fputs(" not held at the moment", out);
		else if (ownerless_name(kind))
			fprintf(out, " owner not recorded (%s)", ownerless_name(kind));
		break;
	}
}

static void put_evidence(FILE *out, unsigned ev)
{
	const char *sep = " [";
	for (unsigned bit = 1; bit; bit <<= 1)
		if ((ev & bit) && tinspect_evidence_name(bit)) {
			fprintf(out, "%s%s", sep, tinspect_evidence_name(bit));
			sep = ", ";
		}
	if (sep[0] == ',')
		fputc(']', out);
}

/* ", called from f" for a blocked thread with frames outside libc */
static void put_caller(FILE *out, const tinspect_thread *th)
{
	const tinspect_frame *f = agent_wait_caller(th);
	char name[256];
	if (f)
		fprintf(out, " (called from %s)", agent_frame_name(f, name, sizeof name));
}

static void put_note(FILE *out, const char *note)
{
	if (note) {
		fputs("    (", out);
		agent_put_escaped(out, note);
		fputs(")\n", out);
	}
}

void report_put_waiting(FILE *out, const tinspect_snapshot *snap,
			const tinspect_thread *th)
{
	const tinspect_wait *b = tinspect_thread_wait(th);
	const tinspect_lock *l = b ? tinspect_wait_lock(b) : NULL;
	if (!l)
		return;
	enum tinspect_wait_mode mode = tinspect_wait_mode(b);
	enum tinspect_lock_kind kind = tinspect_lock_kind(l);
	uint64_t addr = tinspect_lock_addr(l);
	fputs("  waiting for ", out);
	if (mode)
		fputs(mode == TINSPECT_MODE_READ ? "read access to " : "write access to ",
		      out);
	if (kind == TINSPECT_LOCK_JOIN) {
		fputs("the end of ", out);
		report_put_thread_ref(out, snap, tinspect_lock_owner(l));
		fprintf(out, " (pthread_join, descriptor 0x%" PRIx64 ")", addr);
	} else {
		put_lock_ref(out, l);
		put_holder(out, snap, l);
	}
	if (tinspect_wait_futex(b) != addr)
		fprintf(out, "; futex 0x%" PRIx64, tinspect_wait_futex(b));
	if (kind == TINSPECT_LOCK_FUTEX)
		put_caller(out, th);
	put_evidence(out, tinspect_wait_evidence(b));
	fputc('\n', out);
	put_note(out, tinspect_wait_note(b));
}

void report_put_wait_short(FILE *out, const tinspect_thread *th)
{
	const tinspect_wait *b = tinspect_thread_wait(th);
	const tinspect_lock *l = b ? tinspect_wait_lock(b) : NULL;
	if (l) {
		enum tinspect_wait_mode mode = tinspect_wait_mode(b);
		enum tinspect_owner_state os = tinspect_lock_owner_state(l);
		pid_t owner = tinspect_lock_owner(l);
		if (tinspect_lock_kind(l) == TINSPECT_LOCK_JOIN) {
			fprintf(out, "join %d", (int)owner);
			return;
		}
		fprintf(out, "%s%s 0x%" PRIx64, tinspect_lock_kind_name(tinspect_lock_kind(l)),
			agent_mode_mark(mode), tinspect_lock_addr(l));
		if (tinspect_lock_symbol(l)) {
			fputs(" ", out);
			put_lock_name(out, l);
		}
		if (os == TINSPECT_OWNER_LIVE)
			fprintf(out, " held by %d", (int)owner);
		else if (os == TINSPECT_OWNER_DEAD)
			fprintf(out, " held by %d (gone)", (int)owner);
		if (tinspect_wait_parked(b))
			fputs(" [parked]", out);
		put_caller(out, th);
		return;
	}
	/* the registers' syscall: this short form does not use /proc's */
	bool regs = tinspect_thread_regs(th, NULL, NULL, NULL) == 0;
	struct tinspect_syscall sc;
	if (regs && tinspect_thread_syscall(th, &sc, sizeof sc) == 0) {
		if (sc.name)
			fprintf(out, "in %s()", sc.name);
		else
			fprintf(out, "in syscall %ld", sc.nr);
		return;
	}
	fputs(regs ? "-" : "?", out);
}

static void put_lock_line(FILE *out, const tinspect_snapshot *snap,
			  const tinspect_lock *l)
{
	struct tinspect_mutex_state m;
	struct tinspect_sem_state sem;
	struct tinspect_barrier_state bar;
	struct tinspect_cond_state cond;
	fputs("  ", out);
	put_lock_ref(out, l);
	put_holder(out, snap, l);
	if (tinspect_lock_mutex(l, &m, sizeof m) == 0 && m.type == 1)
		fprintf(out, ", depth %u", m.count);
	if (tinspect_lock_sem(l, &sem, sizeof sem) == 0)
		fprintf(out, ", value %u", sem.value);
	if (tinspect_lock_barrier(l, &bar, sizeof bar) == 0)
		fprintf(out, ", %u of %u arrived", bar.in - bar.current_round, bar.count);
	if (tinspect_lock_cond(l, &cond, sizeof cond) == 0 && cond.mutex)
		fprintf(out, ", used with mutex 0x%" PRIx64, cond.mutex);
	fputs("; waiters:", out);
	for (size_t i = 0, n = tinspect_lock_nwaiters(l); i < n; i++) {
		enum tinspect_wait_mode mode = TINSPECT_MODE_NONE;
		fprintf(out, " %d", (int)tinspect_lock_waiter(l, i, &mode));
		fputs(agent_mode_mark(mode), out);
	}
	fputc('\n', out);
	put_note(out, tinspect_lock_note(l));
}

/* ---- what one snapshot cannot prove ------------------------------------------ */

/* "(called from f)" of a lock: its first waiter's caller, and whether
 * the others agree */
static void put_lock_caller(FILE *out, const tinspect_snapshot *snap,
			    const tinspect_lock *l)
{
	char first[256] = "", name[256];
	bool same = true;
	for (size_t i = 0, n = tinspect_lock_nwaiters(l); i < n && i < 64; i++) {
		const tinspect_thread *t =
			tinspect_snapshot_thread_by_tid(snap, tinspect_lock_waiter(l, i, NULL));
		const tinspect_frame *f = t ? agent_wait_caller(t) : NULL;
		const char *fn = f ? agent_frame_name(f, name, sizeof name) : "";
		if (i == 0)
			snprintf(first, sizeof first, "%s", fn);
		else if (strcmp(first, fn))
			same = false;
	}
	if (first[0])
		fprintf(out, ", called from %s%s", first, same ? "" : " and others");
}

/* Why the undecided waits are a line of the verdict, and what they are. */
static void put_undecided_why(FILE *out, const struct agent_verdict *v)
{
	size_t n = v->undecided;
	if (v->why == VERDICT_NO_PROGRESS)
		fprintf(out, "  No thread of the process can make progress: none runs, "
			"none sleeps with a timeout,\n  none waits for anything from "
			"outside the process.  Nothing in it will post or signal\n"
			"  what these %zu thread%s wait%s for with no timeout, on "
			"primitives that record no owner:\n  they may be waiting for "
			"each other", n, n == 1 ? "" : "s", n == 1 ? "s" : "");
	else
		fprintf(out, "  Nothing in the process moved since the previous update: "
			"every thread is in the wait\n  it was in then.  These %zu "
			"thread%s in the same untimed waits on the same words, on\n"
			"  primitives that record no owner, may be waiting for each "
			"other", n, n == 1 ? "" : "s");
	if (v->cpython)
		fputs(" (a Python threading.Lock\n  ABBA is two semaphore waits; "
		      "py-spy dump --pid PID shows the Python stacks)", out);
	fputs(":\n", out);
}

static void put_undecided(FILE *out, const tinspect_snapshot *snap,
			  const struct agent_opts *o, const struct agent_verdict *v)
{
	const tinspect_lock **order = agent_locks_by_waiters(snap);
	size_t nobj = 0, nlocks = tinspect_snapshot_nlocks(snap);
	put_undecided_why(out, v);
	size_t shown = 0;
	for (size_t k = 0; order && k < nlocks; k++) {
		const tinspect_lock *l = order[k];
		size_t n = 0, same = 0, nwaiters = tinspect_lock_nwaiters(l);
		struct tinspect_sem_state sem;
		for (size_t i = 0; i < nwaiters; i++) {
			const tinspect_thread *t = tinspect_snapshot_thread_by_tid(
				snap, tinspect_lock_waiter(l, i, NULL));
			if (t && verdict_undecided_wait(snap, t)) {
				n++;
				same += verdict_same_wait(snap, t);
			}
		}
		if (!n)
			continue;
		nobj++;
		if (!o->verbose && shown == TOP_LOCKS)
			continue;
		shown++;
		fprintf(out, "  %5zu  ", n);
		put_lock_ref(out, l);
		put_holder(out, snap, l);
		if (tinspect_lock_sem(l, &sem, sizeof sem) == 0)
			fprintf(out, ", value %u", sem.value);
		put_lock_caller(out, snap, l);
		fputs("; waiters:", out);
		for (size_t i = 0; i < nwaiters && (o->verbose || i < 8); i++)
			fprintf(out, " %d", (int)tinspect_lock_waiter(l, i, NULL));
		if (!o->verbose && nwaiters > 8)
			fprintf(out, " ... (%zu)", nwaiters);
		/* in a watch: whether this is what the previous update saw */
		if (v->watched)
			fputs(same == n ? " [the same as at the previous update]"
			      : same ? " [partly the same as at the previous update]"
				     : " [new since the previous update]", out);
		fputc('\n', out);
	}
	if (nobj > shown)
		fprintf(out, "  ... and %zu more objects (--verbose lists them)\n",
			nobj - shown);
	free(order);
}

/* Below "No deadlock found" (or the deadlocks): the undecided waits that
 * are no line of the verdict, counted by kind. */
static void put_idle_counts(FILE *out, const struct agent_verdict *v)
{
	for (size_t i = 0; i < v->nkinds; i++) {
		const struct verdict_kind *k = &v->kinds[i];
		/* a condvar wait is what an idle thread does
		 * (tinspect_wait_is_idle); a semaphore wait is not called so */
		fprintf(out, "  %zu thread%s %sin untimed %s", k->threads,
			k->threads == 1 ? "" : "s",
			k->kind == TINSPECT_LOCK_COND ? "idle " : "", k->what);
		if (v->watched)
			fprintf(out, " (%zu in the same wait as at the previous update)",
				k->same);
		if (v->cpython && k->kind == TINSPECT_LOCK_SEM)
			fputs(" (CPython: a threading.Lock is a semaphore)", out);
		fputc('\n', out);
	}
}

/* ---- the verdict --------------------------------------------------------------- */

static void put_rule(FILE *out, size_t n)
{
	for (size_t i = 0; i < n; i++)
		fputc('=', out);
	fputc('\n', out);
}

/* A nonblocking capture is not one consistent state: its cycles are
 * candidates, never called deadlocks (--nonblocking=strict) */
static bool unconfirmed(const tinspect_snapshot *snap)
{
	return tinspect_snapshot_capture_mode(snap) == TINSPECT_CAPTURE_NONBLOCKING;
}

static void put_deadlock_edges(FILE *out, const tinspect_snapshot *snap)
{
	size_t ncycles = tinspect_snapshot_ncycles(snap);
	char head[128];
	int hl;
	if (unconfirmed(snap))
		hl = snprintf(head, sizeof head, "Unconfirmed (seen without stopping "
			      "the process, not proven): %zu candidate deadlock%s:",
			      ncycles, ncycles == 1 ? "" : "s");
	else if (ncycles == 1)
		hl = snprintf(head, sizeof head, "Found one deadlock:");
	else
		hl = snprintf(head, sizeof head, "Found %zu deadlocks:", ncycles);
	fprintf(out, "%s\n", head);
	put_rule(out, (size_t)hl);
	for (size_t i = 0; i < ncycles; i++) {
		const tinspect_cycle *c = tinspect_snapshot_cycle(snap, i);
		size_t n = tinspect_cycle_length(c);
		if (ncycles > 1)
			fprintf(out, "%s %zu:\n", unconfirmed(snap) ? "Candidate" : "Deadlock",
				i + 1);
		for (size_t k = 0; k < n; k++) {
			const tinspect_lock *l = tinspect_cycle_lock(c, k);
			report_put_thread_ref(out, snap, tinspect_cycle_tid(c, k));
			fputs(" waits for ", out);
			if (l) {
				if (tinspect_lock_kind(l) == TINSPECT_LOCK_JOIN) {
					fputs("the end of ", out);
				} else {
					put_lock_ref(out, l);
					fputs(" held by ", out);
				}
			}
			report_put_thread_ref(out, snap, tinspect_cycle_tid(c, (k + 1) % n));
			fputc('\n', out);
		}
	}
	fputc('\n', out);
}

static void put_stalls(FILE *out, const tinspect_snapshot *snap)
{
	fputs(unconfirmed(snap) ? "Unconfirmed stalls (seen without stopping the "
				  "process, not proven):\n"
				: "Stalled (waiting behind a lock holder that cannot "
				  "move on by itself; not a deadlock):\n", out);
	for (size_t i = 0, ns = tinspect_snapshot_nstalls(snap); i < ns; i++) {
		const tinspect_stall *st = tinspect_snapshot_stall(snap, i);
		size_t n = tinspect_stall_length(st);
		for (size_t k = 0; k + 1 < n; k++) {
			fputs(k ? "    which " : "  ", out);
			if (!k)
				report_put_thread_ref(out, snap, tinspect_stall_tid(st, k));
			fputs(k ? "waits for " : " waits for ", out);
			put_lock_ref(out, tinspect_stall_lock(st, k));
			fputs(" held by ", out);
			report_put_thread_ref(out, snap, tinspect_stall_tid(st, k + 1));
			fputc('\n', out);
		}
		fputs("    which ", out);
		enum tinspect_stall_end end = tinspect_stall_end(st);
		switch (end) {
		case TINSPECT_STALL_SYSCALL: {
			long nr = tinspect_stall_end_syscall(st);
			const char *name = tinspect_snapshot_syscall_name(snap, nr);
			if (name)
				fprintf(out, "sleeps in %s() with no timeout\n", name);
			else
				fprintf(out, "sleeps in syscall %ld with no timeout\n", nr);
			break;
		}
		case TINSPECT_STALL_WAIT:
		case TINSPECT_STALL_ORPHAN: {
			const tinspect_lock *l = tinspect_stall_end_lock(st);
			fputs(end == TINSPECT_STALL_WAIT ? "waits with no timeout for "
							 : "waits for ", out);
			if (l) {
				put_lock_ref(out, l);
				put_holder(out, snap, l);
			}
			fputc('\n', out);
			break;
		}
		case TINSPECT_STALL_STOPPED:
			fputs("is stopped (job control, or uninterruptible sleep)\n", out);
			break;
		}
	}
	fputc('\n', out);
}

/* "; the process is STOPPED ..." on the verdict line */
static void put_stopped(FILE *out, const struct agent_verdict *v)
{
	if (verdict_process_stopped(v))
		fputs("; the process is STOPPED by job control (SIGSTOP or SIGTSTP): "
		      "nothing in it runs until it gets SIGCONT", out);
	else if (v->jobctl)
		fprintf(out, "; %zu of %zu threads are stopped by job control",
			v->jobctl, v->threads);
}

static void put_verdict(FILE *out, const tinspect_snapshot *snap,
			const struct agent_opts *o)
{
	struct agent_verdict v;
	verdict_make(snap, o->update, &v);
	if (!v.analysed) {
		fputs("Verdict: locks not analysed (out of memory); deadlocks unknown", out);
		put_stopped(out, &v);
		fputs("\n\n", out);
		return;
	}
	bool listed = v.why != VERDICT_IDLE;
	fputs("Verdict: ", out);
	if (!v.deadlocks && !v.orphans && !v.stalls) {
		fputs(listed ? "POSSIBLE DEADLOCK (waits that record no owner, not "
			       "provable); no deadlock among owned locks, no "
			       "orphaned lock, no stall"
			     : "no deadlock, no orphaned lock, no stall", out);
	} else {
		const char *sep = "";
		if (v.deadlocks && v.unconfirmed) {
			fprintf(out, "%zu unconfirmed deadlock candidate%s", v.deadlocks,
				v.deadlocks == 1 ? "" : "s");
			sep = ", ";
		} else if (v.deadlocks) {
			fprintf(out, "%zu DEADLOCK%s", v.deadlocks,
				v.deadlocks == 1 ? "" : "S");
			sep = ", ";
		}
		if (v.orphans) {
			fprintf(out, "%s%zu orphaned lock%s", sep, v.orphans,
				v.orphans == 1 ? "" : "s");
			sep = ", ";
		}
		if (v.stalls) {
			fprintf(out, "%s%zu %sstall%s", sep, v.stalls,
				v.unconfirmed ? "unconfirmed " : "",
				v.stalls == 1 ? "" : "s");
			sep = ", ";
		}
		if (listed)
			fprintf(out, "%spossible deadlock among waits that record no "
				"owner", sep);
	}
	put_stopped(out, &v);
	fputc('\n', out);
	if (listed)
		put_undecided(out, snap, o, &v);
	fputc('\n', out);
	if (v.deadlocks)
		put_deadlock_edges(out, snap);
	if (v.orphans) {
		fputs("Orphaned locks (their owner no longer exists):\n", out);
		for (size_t i = 0; i < v.orphans; i++)
			put_lock_line(out, snap, tinspect_snapshot_orphan(snap, i));
		fputc('\n', out);
	}
	if (v.stalls)
		put_stalls(out, snap);
	if (!v.deadlocks && !listed) {
		fputs("No deadlock found.\n", out);
		put_idle_counts(out, &v);
		fputc('\n', out);
	} else if (!listed && v.nkinds) {
		fputs("Besides, in waits that record no owner:\n", out);
		put_idle_counts(out, &v);
		fputc('\n', out);
	}
}

/* ---- counts -------------------------------------------------------------------- */

struct count {
	const char *name;
	size_t n;
};

static void count_add(struct count *v, size_t *nv, size_t max, const char *name)
{
	for (size_t i = 0; i < *nv; i++)
		if (!strcmp(v[i].name, name)) {
			v[i].n++;
			return;
		}
	if (*nv < max)
		v[(*nv)++] = (struct count){ name, 1 };
}

static int cmp_count(const void *a, const void *b)
{
	const struct count *x = a, *y = b;
	if (x->n != y->n)
		return x->n > y->n ? -1 : 1;
	return strcmp(x->name, y->name);
}

static void put_counts(FILE *out, const tinspect_snapshot *snap)
{
	size_t states[128] = { 0 }, unknown_state = 0;
	struct count kinds[8], calls[64];
	size_t nkinds = 0, ncalls = 0, blocked = 0, insys = 0, user = 0, other = 0;
	size_t nthreads = tinspect_snapshot_nthreads(snap);
	for (size_t i = 0; i < nthreads; i++) {
		const tinspect_thread *th = tinspect_snapshot_thread(snap, i);
		const tinspect_wait *w = tinspect_thread_wait(th);
		unsigned char st = (unsigned char)tinspect_thread_state(th);
		bool regs = tinspect_thread_regs(th, NULL, NULL, NULL) == 0;
		struct tinspect_syscall sc;
		if (st && st < 128)
			states[st]++;
		else
			unknown_state++;
		if (w) {
			blocked++;
			count_add(kinds, &nkinds, 8,
				  tinspect_lock_kind_name(tinspect_wait_kind(w)));
		} else if (regs && tinspect_thread_syscall(th, &sc, sizeof sc) == 0) {
			insys++;
			count_add(calls, &ncalls, 64, sc.name ? sc.name : "?");
		} else if (regs) {
			user++;
		} else {
			other++;
		}
	}
	fprintf(out, "Threads: %zu by state:", nthreads);
	const char *sep = " ";
	static const char order[] = "RSDTtZXIPWK";
	for (const char *c = order; *c; c++)
		if (states[(unsigned char)*c]) {
			fprintf(out, "%s%zu %s (%c)", sep, states[(unsigned char)*c],
				agent_state_name(*c), *c);
			sep = ", ";
		}
	if (unknown_state)
		fprintf(out, "%s%zu state unknown", sep, unknown_state);
	fputc('\n', out);
	qsort(kinds, nkinds, sizeof *kinds, cmp_count);
	qsort(calls, ncalls, sizeof *calls, cmp_count);
	fprintf(out, "Waiting: %zu on locks", blocked);
	for (size_t i = 0; i < nkinds; i++)
		fprintf(out, "%s%zu %s", i ? ", " : " (", kinds[i].n, kinds[i].name);
	fputs(nkinds ? ")" : "", out);
	fprintf(out, "; %zu in other syscalls", insys);
	for (size_t i = 0; i < ncalls && i < 6; i++)
		fprintf(out, "%s%s %zu", i ? ", " : " (", calls[i].name, calls[i].n);
	if (ncalls > 6)
		fputs(", ...", out);
	fputs(ncalls ? ")" : "", out);
	fprintf(out, "; %zu in user space", user);
	if (other)
		fprintf(out, "; %zu unknown", other);
	fputs("\n\n", out);
}

static void put_top_locks(FILE *out, const tinspect_snapshot *snap,
			  const struct agent_opts *o)
{
	const tinspect_lock **order = agent_locks_by_waiters(snap);
	if (!order)
		return;
	size_t n = tinspect_snapshot_nlocks(snap);
	size_t top = o->verbose ? n : (n < TOP_LOCKS ? n : TOP_LOCKS);
	fprintf(out, "Most contended locks (%zu of %zu waited on, by waiters):\n", top, n);
	for (size_t k = 0; k < top; k++) {
		const tinspect_lock *l = order[k];
		fprintf(out, "  %5zu  ", tinspect_lock_nwaiters(l));
		if (tinspect_lock_kind(l) == TINSPECT_LOCK_JOIN) {
			fputs("join: the end of ", out);
			report_put_thread_ref(out, snap, tinspect_lock_owner(l));
		} else {
			put_lock_ref(out, l);
			put_holder(out, snap, l);
		}
		put_lock_caller(out, snap, l);
		fputc('\n', out);
	}
	fputc('\n', out);
	free(order);
}

void report_summary(FILE *out, const tinspect_snapshot *snap,
		    const struct agent_opts *o)
{
	put_verdict(out, snap, o);
	put_counts(out, snap);
	put_top_locks(out, snap, o);
}

/* ---- after the summary ------------------------------------------------------------ */

/* The stacks of the threads of one deadlock, as jstack prints "Java stack
 * information for the threads listed above". */
static void put_deadlock_stacks(FILE *out, const tinspect_snapshot *snap,
				const tinspect_cycle *c)
{
	if (!tinspect_snapshot_has_stacks(snap))
		return;
	fputs("Stacks of the threads above:\n", out);
	for (size_t i = 0, n = tinspect_cycle_length(c); i < n; i++) {
		const tinspect_thread *th =
			tinspect_snapshot_thread_by_tid(snap, tinspect_cycle_tid(c, i));
		if (!th)
			continue;
		size_t len;
		const char *name = tinspect_thread_name(th, &len);
		fprintf(out, "Thread %d ", (int)tinspect_thread_tid(th));
		if (name)
			agent_fput_quoted(out, name, len);
		fputc('\n', out);
		agent_put_stack(out, th, false);
	}
	fputc('\n', out);
}

void report_lock_details(FILE *out, const tinspect_snapshot *snap,
			 const struct agent_opts *o)
{
	(void)o;
	size_t n = tinspect_snapshot_ncycles(snap);
	for (size_t i = 0; i < n; i++) {
		if (n > 1)
			fprintf(out, "%s %zu: ", unconfirmed(snap) ? "Candidate" : "Deadlock",
				i + 1);
		put_deadlock_stacks(out, snap, tinspect_snapshot_cycle(snap, i));
	}
}

void report_all_locks(FILE *out, const tinspect_snapshot *snap)
{
	size_t n = tinspect_snapshot_nlocks(snap);
	if (!n)
		return;
	fprintf(out, "Locks waited on: %zu\n", n);
	for (size_t i = 0; i < n; i++)
		put_lock_line(out, snap, tinspect_snapshot_lock(snap, i));
	fputc('\n', out);
}
