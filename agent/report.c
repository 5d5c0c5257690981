/*
 * report.c: the first screen of the text report, for a person in an
 * incident (issue 9), and the lock texts the other views share.
 *
 *   Verdict: deadlocks (jstack's "Found one Java-level deadlock" shape),
 *            orphaned locks, stalls; or, when none is proven, what one
 *            snapshot cannot prove: threads in untimed waits on
 *            primitives that record no owner (a Python threading.Lock
 *            ABBA is two semaphore waits), instead of a clean bill of
 *            health.
 *   Threads by state and by what they wait on.
 *   The most contended locks, with owner and waiters, and the function
 *   that waits on them (an unidentified futex reads "called from
 *   srw_mutex_impl::wait").
 *
 * Then, after the summary: the deadlocked threads' stacks, stall chains
 * and orphaned locks in full (report_lock_details), and at the very end
 * every lock waited on (report_all_locks).
 */
#include "agent.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* How many locks the summary lists (all with --verbose). */
#define TOP_LOCKS 5

/* A snapshot lists the main thread first, then the others by tid
 * (dbsession.h): a binary search, with a scan for any other order. */
static const struct dbs_thread *thread_of(const struct dbs_snapshot *snap, pid_t tid)
{
	size_t n = snap->nthreads;
	if (n && snap->threads[0].tid == tid)
		return &snap->threads[0];
	size_t lo = 1, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (snap->threads[mid].tid < tid)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < n && snap->threads[lo].tid == tid)
		return &snap->threads[lo];
	for (size_t i = 0; i < n; i++)
		if (snap->threads[i].tid == tid)
			return &snap->threads[i];
	return NULL;
}

void report_put_thread_ref(FILE *out, const struct dbs_snapshot *snap, pid_t tid)
{
	const struct dbs_thread *t = thread_of(snap, tid);
	fputs("thread ", out);
	if (t && t->name) {
		agent_fput_quoted(out, t->name, t->name_len);
		fputc(' ', out);
	}
	fprintf(out, "(%d)", (int)tid);
}

static void put_lock_name(FILE *out, const struct dbs_lock *l)
{
	if (l->sym.name) {
		agent_put_escaped(out, l->sym.name);
		if (l->sym.offset)
			fprintf(out, "+0x%" PRIx64, l->sym.offset);
	} else {
		fputs(l->object_known ? "(no symbol)" : "(object unknown)", out);
	}
}

/* lock 0x... (name, kind) */
static void put_lock_ref(FILE *out, const struct dbs_lock *l)
{
	fprintf(out, "lock 0x%" PRIx64 " (", l->addr);
	if (l->sym.name) {
		put_lock_name(out, l);
		fputs(", ", out);
	}
	fputs(dbs_lock_kind_name(l->kind), out);
	if (l->kind == DBS_LOCK_MUTEX && l->decoded) {
		const struct dbs_mutex_info *m = &l->u.mutex;
		fprintf(out, " %s%s%s%s", dbs_mutex_type_name(m->type),
			m->robust ? " robust" : "", m->pi ? " PI" : "",
			m->pp ? " PP" : "");
	}
	fputc(')', out);
}

/* What glibc records no owner for, by name. */
static const char *ownerless_name(enum dbs_lock_kind k)
{
	switch (k) {
	case DBS_LOCK_COND: return "condition variable";
	case DBS_LOCK_SEM: return "semaphore";
	case DBS_LOCK_BARRIER: return "barrier";
	default: return NULL;
	}
}

/* " held by thread ..." or what is known instead */
static void put_holder(FILE *out, const struct dbs_snapshot *snap,
		       const struct dbs_lock *l)
{
	switch (l->owner_state) {
	case DBS_OWNER_LIVE:
		fputs(l->kind == DBS_LOCK_JOIN ? " (the end of " : " held by ", out);
		report_put_thread_ref(out, snap, l->owner);
		if (l->kind == DBS_LOCK_JOIN)
			fputc(')', out);
		break;
	case DBS_OWNER_DEAD:
		fprintf(out, " held by thread %d, which no longer exists (orphaned)",
			(int)l->owner);
		break;
	case DBS_OWNER_OUTSIDE:
		fprintf(out, " held by TID %d, not a thread of this process", (int)l->owner);
		break;
	case DBS_OWNER_UNKNOWN:
		if (l->kind == DBS_LOCK_FUTEX)
			fputs(" (not identified; owner unknown)", out);
		else if (l->nholders)
			fprintf(out, " held by %u reader%s (not recorded)", l->nholders,
				l->nholders == 1 ? "" : "s");
		else
			fputs(" held, owner unknown", out);	/* the note says why */
		break;
	case DBS_OWNER_NONE:
		if (l->kind == DBS_LOCK_MUTEX || l->kind == DBS_LOCK_RWLOCK)
			fputs(" not held at the moment", out);
		else if (ownerless_name(l->kind))
			fprintf(out, " owner not recorded (%s)", ownerless_name(l->kind));
		break;
	}
}

static void put_evidence(FILE *out, unsigned ev)
{
	const char *sep = " [";
	for (unsigned bit = 1; bit; bit <<= 1)
		if ((ev & bit) && dbs_evidence_name(bit)) {
			fprintf(out, "%s%s", sep, dbs_evidence_name(bit));
			sep = ", ";
		}
	if (sep[0] == ',')
		fputc(']', out);
}

/* ", called from f" for a blocked thread with frames outside libc */
static void put_caller(FILE *out, const struct dbs_thread *th)
{
	const struct dbs_frame *f = agent_wait_caller(th);
	char name[256];
	if (f)
		fprintf(out, " (called from %s)", agent_frame_name(f, name, sizeof name));
}

void report_put_waiting(FILE *out, const struct dbs_snapshot *snap,
			const struct dbs_thread *th)
{
	const struct dbs_blocked_on *b = th->blocked_on;
	const struct dbs_locks *L = snap->locks;
	if (!b || !L || b->lock >= L->n)
		return;
	const struct dbs_lock *l = &L->v[b->lock];
	fputs("  waiting for ", out);
	if (b->mode)
		fputs(b->mode == DBS_MODE_READ ? "read access to " : "write access to ", out);
	if (l->kind == DBS_LOCK_JOIN) {
		fputs("the end of ", out);
		report_put_thread_ref(out, snap, l->owner);
		fprintf(out, " (pthread_join, descriptor 0x%" PRIx64 ")", l->addr);
	} else {
		put_lock_ref(out, l);
		put_holder(out, snap, l);
	}
	if (b->futex != l->addr)
		fprintf(out, "; futex 0x%" PRIx64, b->futex);
	if (l->kind == DBS_LOCK_FUTEX)
		put_caller(out, th);
	put_evidence(out, b->evidence);
	fputc('\n', out);
	if (b->note) {
		fputs("    (", out);
		agent_put_escaped(out, b->note);
		fputs(")\n", out);
	}
}

void report_put_wait_short(FILE *out, const struct dbs_snapshot *snap,
			   const struct dbs_thread *th)
{
	const struct dbs_blocked_on *b = th->blocked_on;
	const struct dbs_locks *L = snap->locks;
	if (b && L && b->lock < L->n) {
		const struct dbs_lock *l = &L->v[b->lock];
		if (l->kind == DBS_LOCK_JOIN) {
			fprintf(out, "join %d", (int)l->owner);
			return;
		}
		fprintf(out, "%s%s 0x%" PRIx64, dbs_lock_kind_name(l->kind),
			b->mode == DBS_MODE_READ ? "(r)" : b->mode == DBS_MODE_WRITE ? "(w)" : "",
			l->addr);
		if (l->sym.name) {
			fputs(" ", out);
			put_lock_name(out, l);
		}
		if (l->owner_state == DBS_OWNER_LIVE)
			fprintf(out, " held by %d", (int)l->owner);
		else if (l->owner_state == DBS_OWNER_DEAD)
			fprintf(out, " held by %d (gone)", (int)l->owner);
		if (b->parked)
			fputs(" [parked]", out);
		put_caller(out, th);
		return;
	}
	if (th->have_regs && th->syscall.nr >= 0) {
		const char *n = arch_syscall_name(snap->arch, th->syscall.nr);
		if (n)
			fprintf(out, "in %s()", n);
		else
			fprintf(out, "in syscall %ld", th->syscall.nr);
		return;
	}
	fputs(th->have_regs && th->syscall.nr < 0 ? "-" : "?", out);
}

static void put_lock_line(FILE *out, const struct dbs_snapshot *snap,
			  const struct dbs_lock *l)
{
	fputs("  ", out);
	put_lock_ref(out, l);
	put_holder(out, snap, l);
	if (l->kind == DBS_LOCK_MUTEX && l->decoded && l->u.mutex.type == 1)
		fprintf(out, ", depth %u", l->u.mutex.count);
	if (l->kind == DBS_LOCK_SEM && l->decoded)
		fprintf(out, ", value %u", l->u.sem.value);
	if (l->kind == DBS_LOCK_BARRIER && l->decoded)
		fprintf(out, ", %u of %u arrived", l->u.barrier.in - l->u.barrier.current_round,
			l->u.barrier.count);
	if (l->kind == DBS_LOCK_COND && l->decoded && l->u.cond.mutex)
		fprintf(out, ", used with mutex 0x%" PRIx64, l->u.cond.mutex);
	fputs("; waiters:", out);
	for (size_t i = 0; i < l->nwaiters; i++) {
		fprintf(out, " %d", (int)l->waiters[i].tid);
		if (l->waiters[i].mode)
			fputs(l->waiters[i].mode == DBS_MODE_READ ? "(r)" : "(w)", out);
	}
	fputc('\n', out);
	if (l->note) {
		fputs("    (", out);
		agent_put_escaped(out, l->note);
		fputs(")\n", out);
	}
}

/* ---- what one snapshot cannot prove ------------------------------------------ */

/*
 * A thread in an untimed wait on something that records no owner: a
 * condvar, a semaphore, a barrier, an unidentified futex, an rwlock held
 * by readers, a lock held outside the process.  Whether such threads wait
 * for each other cannot be told from one snapshot.  A timed wait ends by
 * itself (restart_syscall only ever continues a timed one).
 */
static bool undecided_wait(const struct dbs_snapshot *snap,
			   const struct dbs_thread *th)
{
	const struct dbs_blocked_on *b = th->blocked_on;
	const struct dbs_locks *L = snap->locks;
	if (!b || !L || b->lock >= L->n || !b->in_graph || b->parked)
		return false;
	if (!(b->nr == snap->arch->nr_futex && th->have_regs &&
	      th->syscall.nr == b->nr && th->syscall.args[3] == 0))
		return false;
	const struct dbs_lock *l = &L->v[b->lock];
	switch (l->kind) {
	case DBS_LOCK_COND:
	case DBS_LOCK_SEM:
	case DBS_LOCK_BARRIER:
		return true;
	case DBS_LOCK_FUTEX:
	case DBS_LOCK_RWLOCK:
	case DBS_LOCK_MUTEX:
		return l->owner_state == DBS_OWNER_UNKNOWN ||
		       l->owner_state == DBS_OWNER_OUTSIDE;
	case DBS_LOCK_JOIN:
		break;
	}
	return false;
}

static int cmp_by_waiters(const void *a, const void *b, void *ctx)
{
	const struct dbs_lock *v = ctx;
	const struct dbs_lock *x = &v[*(const size_t *)a], *y = &v[*(const size_t *)b];
	if (x->nwaiters != y->nwaiters)
		return x->nwaiters > y->nwaiters ? -1 : 1;
	return (x->addr > y->addr) - (x->addr < y->addr);
}

/* Lock indexes by waiters, most first; NULL if none or ENOMEM. */
static size_t *locks_by_waiters(const struct dbs_locks *L)
{
	if (!L || !L->n)
		return NULL;
	size_t *v = malloc(L->n * sizeof *v);
	if (!v)
		return NULL;
	for (size_t i = 0; i < L->n; i++)
		v[i] = i;
	qsort_r(v, L->n, sizeof *v, cmp_by_waiters, L->v);
	return v;
}

/* "(called from f)" of a lock: its first waiter's caller, and whether
 * the others agree */
static void put_lock_caller(FILE *out, const struct dbs_snapshot *snap,
			    const struct dbs_lock *l)
{
	char first[256] = "", name[256];
	bool same = true;
	for (size_t i = 0; i < l->nwaiters && i < 64; i++) {
		const struct dbs_thread *t = thread_of(snap, l->waiters[i].tid);
		const struct dbs_frame *f = t ? agent_wait_caller(t) : NULL;
		const char *n = f ? agent_frame_name(f, name, sizeof name) : "";
		if (i == 0)
			snprintf(first, sizeof first, "%s", n);
		else if (strcmp(first, n))
			same = false;
	}
	if (first[0])
		fprintf(out, ", called from %s%s", first, same ? "" : " and others");
}

static void put_undecided(FILE *out, const struct dbs_snapshot *snap,
			  const struct agent_opts *o, size_t nthreads)
{
	const struct dbs_locks *L = snap->locks;
	size_t *order = locks_by_waiters(L);
	size_t nobj = 0;
	fprintf(out, "  Not provable from one snapshot: %zu thread%s in untimed waits on "
		"primitives that record no owner\n  (condition variables, semaphores, "
		"barriers, unidentified futexes, rwlocks held by readers).\n  Whether "
		"they wait for each other (a Python threading.Lock ABBA is two "
		"semaphore waits)\n  cannot be proven or ruled out from one snapshot; "
		"the same waits on the same words\n  in a second snapshot "
		"(tinspect --watch 2 --count 2) make it likely:\n",
		nthreads, nthreads == 1 ? "" : "s");
	size_t shown = 0;
	for (size_t k = 0; order && k < L->n; k++) {
		const struct dbs_lock *l = &L->v[order[k]];
		size_t n = 0;
		for (size_t i = 0; i < l->nwaiters; i++) {
			const struct dbs_thread *t = thread_of(snap, l->waiters[i].tid);
			n += t && undecided_wait(snap, t);
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
		if (l->kind == DBS_LOCK_SEM && l->decoded)
			fprintf(out, ", value %u", l->u.sem.value);
		put_lock_caller(out, snap, l);
		fputs("; waiters:", out);
		for (size_t i = 0; i < l->nwaiters && (o->verbose || i < 8); i++)
			fprintf(out, " %d", (int)l->waiters[i].tid);
		if (!o->verbose && l->nwaiters > 8)
			fprintf(out, " ... (%zu)", l->nwaiters);
		fputc('\n', out);
	}
	if (nobj > shown)
		fprintf(out, "  ... and %zu more objects (--verbose lists them)\n",
			nobj - shown);
	free(order);
}

/* ---- the verdict --------------------------------------------------------------- */

static void put_rule(FILE *out, size_t n)
{
	for (size_t i = 0; i < n; i++)
		fputc('=', out);
	fputc('\n', out);
}

static void put_deadlock_edges(FILE *out, const struct dbs_snapshot *snap)
{
	const struct dbs_locks *L = snap->locks;
	char head[64];
	int hl;
	if (L->ndeadlocks == 1)
		hl = snprintf(head, sizeof head, "Found one deadlock:");
	else
		hl = snprintf(head, sizeof head, "Found %zu deadlocks:", L->ndeadlocks);
	fprintf(out, "%s\n", head);
	put_rule(out, (size_t)hl);
	for (size_t i = 0; i < L->ndeadlocks; i++) {
		const struct dbs_deadlock *d = &L->deadlocks[i];
		if (L->ndeadlocks > 1)
			fprintf(out, "Deadlock %zu:\n", i + 1);
		for (size_t k = 0; k < d->n; k++) {
			report_put_thread_ref(out, snap, d->threads[k]);
			fputs(" waits for ", out);
			if (d->locks[k] < L->n) {
				const struct dbs_lock *l = &L->v[d->locks[k]];
				if (l->kind == DBS_LOCK_JOIN) {
					fputs("the end of ", out);
				} else {
					put_lock_ref(out, l);
					fputs(" held by ", out);
				}
			}
			report_put_thread_ref(out, snap, d->threads[(k + 1) % d->n]);
			fputc('\n', out);
		}
	}
	fputc('\n', out);
}

static void put_stalls(FILE *out, const struct dbs_snapshot *snap)
{
	const struct dbs_locks *L = snap->locks;
	fputs("Stalled (waiting behind a lock holder that cannot move on by itself; "
	      "not a deadlock):\n", out);
	for (size_t i = 0; i < L->nstalls; i++) {
		const struct dbs_stall *st = &L->stalls[i];
		for (size_t k = 0; k + 1 < st->n; k++) {
			fputs(k ? "    which " : "  ", out);
			if (!k)
				report_put_thread_ref(out, snap, st->threads[k]);
			fputs(k ? "waits for " : " waits for ", out);
			put_lock_ref(out, &L->v[st->locks[k]]);
			fputs(" held by ", out);
			report_put_thread_ref(out, snap, st->threads[k + 1]);
			fputc('\n', out);
		}
		fputs("    which ", out);
		switch (st->end) {
		case DBS_STALL_SYSCALL: {
			const char *n = arch_syscall_name(snap->arch, st->end_syscall);
			if (n)
				fprintf(out, "sleeps in %s() with no timeout\n", n);
			else
				fprintf(out, "sleeps in syscall %ld with no timeout\n",
					st->end_syscall);
			break;
		}
		case DBS_STALL_WAIT:
		case DBS_STALL_ORPHAN:
			fputs(st->end == DBS_STALL_WAIT ? "waits with no timeout for "
							 : "waits for ", out);
			if (st->end_lock < L->n) {
				put_lock_ref(out, &L->v[st->end_lock]);
				put_holder(out, snap, &L->v[st->end_lock]);
			}
			fputc('\n', out);
			break;
		case DBS_STALL_STOPPED:
			fputs("is stopped (job control, or uninterruptible sleep)\n", out);
			break;
		}
	}
	fputc('\n', out);
}

static void put_verdict(FILE *out, const struct dbs_snapshot *snap,
			const struct agent_opts *o)
{
	const struct dbs_locks *L = snap->locks;
	if (!L) {
		fputs("Verdict: locks not analysed (out of memory); deadlocks unknown\n\n",
		      out);
		return;
	}
	size_t undecided = 0;
	for (size_t i = 0; i < snap->nthreads; i++)
		undecided += undecided_wait(snap, &snap->threads[i]);
	fputs("Verdict: ", out);
	if (!L->ndeadlocks && !L->norphaned && !L->nstalls) {
		fputs(undecided ? "no deadlock among locks that record their owner, "
				  "no orphaned lock, no stall\n"
				: "no deadlock, no orphaned lock, no stall\n", out);
	} else {
		const char *sep = "";
		if (L->ndeadlocks) {
			fprintf(out, "%zu DEADLOCK%s", L->ndeadlocks,
				L->ndeadlocks == 1 ? "" : "S");
			sep = ", ";
		}
		if (L->norphaned) {
			fprintf(out, "%s%zu orphaned lock%s", sep, L->norphaned,
				L->norphaned == 1 ? "" : "s");
			sep = ", ";
		}
		if (L->nstalls)
			fprintf(out, "%s%zu stall%s", sep, L->nstalls,
				L->nstalls == 1 ? "" : "s");
		fputc('\n', out);
	}
	if (undecided)
		put_undecided(out, snap, o, undecided);
	fputc('\n', out);
	if (L->ndeadlocks)
		put_deadlock_edges(out, snap);
	if (L->norphaned) {
		fputs("Orphaned locks (their owner no longer exists):\n", out);
		for (size_t i = 0; i < L->n; i++)
			if (L->v[i].orphaned)
				put_lock_line(out, snap, &L->v[i]);
		fputc('\n', out);
	}
	if (L->nstalls)
		put_stalls(out, snap);
	if (!L->ndeadlocks && !undecided)
		fputs("No deadlock found.\n\n", out);
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

static void put_counts(FILE *out, const struct dbs_snapshot *snap)
{
	size_t states[128] = { 0 }, unknown_state = 0;
	struct count kinds[8], calls[64];
	size_t nkinds = 0, ncalls = 0, blocked = 0, insys = 0, user = 0, other = 0;
	for (size_t i = 0; i < snap->nthreads; i++) {
		const struct dbs_thread *th = &snap->threads[i];
		unsigned char st = (unsigned char)th->state;
		if (th->proc_valid && st && st < 128)
			states[st]++;
		else
			unknown_state++;
		if (th->blocked_on) {
			blocked++;
			count_add(kinds, &nkinds, 8, dbs_lock_kind_name(th->blocked_on->kind));
		} else if (th->have_regs && th->syscall.nr >= 0) {
			insys++;
			const char *n = arch_syscall_name(snap->arch, th->syscall.nr);
			count_add(calls, &ncalls, 64, n ? n : "?");
		} else if (th->have_regs && th->syscall.nr < 0) {
			user++;
		} else {
			other++;
		}
	}
	fprintf(out, "Threads: %zu by state:", snap->nthreads);
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

static void put_top_locks(FILE *out, const struct dbs_snapshot *snap,
			  const struct agent_opts *o)
{
	const struct dbs_locks *L = snap->locks;
	size_t *order = locks_by_waiters(L);
	if (!order)
		return;
	size_t top = o->verbose ? L->n : (L->n < TOP_LOCKS ? L->n : TOP_LOCKS);
	fprintf(out, "Most contended locks (%zu of %zu waited on, by waiters):\n", top,
		L->n);
	for (size_t k = 0; k < top; k++) {
		const struct dbs_lock *l = &L->v[order[k]];
		fprintf(out, "  %5zu  ", l->nwaiters);
		if (l->kind == DBS_LOCK_JOIN) {
			fputs("join: the end of ", out);
			report_put_thread_ref(out, snap, l->owner);
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

void report_summary(FILE *out, const struct dbs_snapshot *snap,
		    const struct agent_opts *o)
{
	put_verdict(out, snap, o);
	put_counts(out, snap);
	put_top_locks(out, snap, o);
}

/* ---- after the summary ------------------------------------------------------------ */

/* The stacks of the threads of one deadlock, as jstack prints "Java stack
 * information for the threads listed above". */
static void put_deadlock_stacks(FILE *out, const struct dbs_snapshot *snap,
				const struct dbs_deadlock *d)
{
	if (!snap->stacks)
		return;
	fputs("Stacks of the threads above:\n", out);
	for (size_t i = 0; i < d->n; i++) {
		const struct dbs_thread *th = thread_of(snap, d->threads[i]);
		if (!th)
			continue;
		fprintf(out, "Thread %d ", (int)th->tid);
		if (th->name)
			agent_fput_quoted(out, th->name, th->name_len);
		fputc('\n', out);
		agent_put_stack(out, &th->stack, false);
	}
	fputc('\n', out);
}

void report_lock_details(FILE *out, const struct dbs_snapshot *snap,
			 const struct agent_opts *o)
{
	(void)o;
	const struct dbs_locks *L = snap->locks;
	if (!L)
		return;
	for (size_t i = 0; i < L->ndeadlocks; i++) {
		if (L->ndeadlocks > 1)
			fprintf(out, "Deadlock %zu: ", i + 1);
		put_deadlock_stacks(out, snap, &L->deadlocks[i]);
	}
}

void report_all_locks(FILE *out, const struct dbs_snapshot *snap)
{
	const struct dbs_locks *L = snap->locks;
	if (!L || !L->n)
		return;
	fprintf(out, "Locks waited on: %zu\n", L->n);
	for (size_t i = 0; i < L->n; i++)
		put_lock_line(out, snap, &L->v[i]);
	fputc('\n', out);
}
