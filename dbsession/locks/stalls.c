/*
 * stalls.c: chains of threads stuck behind a lock holder that cannot move
 * on by itself.  A stall is reported only where one snapshot
 * proves it, so that a healthy JVM, database or Python server shows none:
 *
 *   T1 waits for an owned lock L1 (a mutex, an rwlock held by a writer,
 *   a PI futex) held by T2, which waits for L2 held by T3 ... held by Tn,
 *   and Tn is
 *    - job-control stopped, or did not stop in time (D state)  "stopped"
 *    - waiting for a lock whose owner is gone                  "orphan"
 *    - waiting with no timeout on a condition variable, a semaphore or
 *      a barrier (nobody is obliged to post or signal them), or parked
 *      for ever by glibc                                         "wait"
 *    - asleep with no timeout in a syscall that waits for an event from
 *      outside the process (read from a pipe or socket, accept, poll or
 *      epoll_wait without timeout, pause, wait4, ...)            "syscall"
 *
 * Not stalls: a join (waiting for a thread to end is what a launcher does
 * for the life of the program: the JVM's "java" thread joins the main
 * Java thread); a holder in a timed wait or sleep (it wakes by itself); a
 * holder on an unidentified futex or an rwlock held by readers (who holds
 * those is not recorded, so whether it moves cannot be told); a holder
 * that runs, or reads a disk file.  A chain that leads into a deadlock is
 * part of the deadlock's picture, not a stall.
 */
#include "dbs_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Does the thread wait for an owned lock: an edge a stall may follow? */
static bool owned_lock_edge(const struct dbs_lock *l)
{
	return l->kind == DBS_LOCK_MUTEX || l->kind == DBS_LOCK_RWLOCK ||
	       (l->kind == DBS_LOCK_FUTEX && l->owner);
}

/* A futex wait with no timeout: FUTEX_WAIT / WAIT_BITSET / LOCK_PI with a
 * NULL timeout argument.  restart_syscall only ever continues a timed
 * wait (docs/GLIBC.md §6). */
static bool untimed_futex(const struct dbs_snapshot *snap,
			  const struct dbs_thread *th)
{
	const struct dbs_blocked_on *b = th->blocked_on;
	return b && b->nr == snap->arch->nr_futex && th->have_regs &&
	       th->syscall.nr == b->nr && th->syscall.args[3] == 0;
}

/* Why thread e, which holds a lock others wait for, cannot move on by
 * itself; false if it may. */
static bool stall_end(const struct dbs_snapshot *snap, const size_t *lockof,
		      size_t e, struct dbs_stall *st)
{
	const struct dbs_thread *th = &snap->threads[e];
	const struct dbs_locks *L = snap->locks;
	st->end_syscall = -1;
	st->end_lock = SIZE_MAX;
	if (th->jobctl_stopped || th->straggler) {
		st->end = DBS_STALL_STOPPED;
		return true;
	}
	const struct dbs_blocked_on *b = th->blocked_on;
	if (b) {
		if (!b->in_graph || lockof[e] == SIZE_MAX)
			return false;
		const struct dbs_lock *l = &L->v[lockof[e]];
		st->end_lock = lockof[e];
		if (l->owner_state == DBS_OWNER_DEAD) {
			st->end = DBS_STALL_ORPHAN;
			return true;
		}
		if (b->parked ||
		    ((l->kind == DBS_LOCK_COND || l->kind == DBS_LOCK_SEM ||
		      l->kind == DBS_LOCK_BARRIER) && untimed_futex(snap, th))) {
			st->end = DBS_STALL_WAIT;
			return true;
		}
		return false;
	}
	if (th->have_regs && (th->stopped || th->observed) &&
	    th->syscall.nr >= 0 && (th->syscall.restarting || th->observed) && (!th->proc_valid || th->state == 'S') &&
	    dbs_syscall_waits_outside(snap->arch, th->syscall.nr, th->syscall.args)) {
		st->end = DBS_STALL_SYSCALL;
		st->end_syscall = th->syscall.nr;
		return true;
	}
	return false;
}

static int cmp_stall(const void *a, const void *b)
{
	const struct dbs_stall *x = a, *y = b;
	pid_t xe = x->threads[x->n - 1], ye = y->threads[y->n - 1];
	if (xe != ye)
		return (xe > ye) - (xe < ye);
	return (x->threads[0] > y->threads[0]) - (x->threads[0] < y->threads[0]);
}

int dbs_stalls_find(struct dbs_snapshot *snap, const size_t *succ,
		    const size_t *lockof, const bool *oncycle)
{
	struct dbs_locks *L = snap->locks;
	size_t n = snap->nthreads;
	/* the stall graph: the wait-for edges through owned locks only */
	size_t *next = malloc((n ? n : 1) * sizeof *next);
	size_t *indeg = calloc(n ? n : 1, sizeof *indeg);
	if (!next || !indeg) {
		free(next);
		free(indeg);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		next[i] = SIZE_MAX;
		if (succ[i] != SIZE_MAX && lockof[i] != SIZE_MAX &&
		    owned_lock_edge(&L->v[lockof[i]]))
			next[i] = succ[i];
	}
	for (size_t i = 0; i < n; i++)
		if (next[i] != SIZE_MAX)
			indeg[next[i]]++;
	int err = 0;
	for (size_t s = 0; s < n && !err; s++) {
		if (indeg[s] || next[s] == SIZE_MAX || oncycle[s])
			continue;
		size_t len = 1, e = s;
		bool into_cycle = false;
		while (next[e] != SIZE_MAX && len <= n) {
			if (oncycle[next[e]]) {
				into_cycle = true;
				break;
			}
			e = next[e];
			len++;
		}
		if (into_cycle || len > n)
			continue;
		struct dbs_stall st = { 0 };
		if (!stall_end(snap, lockof, e, &st))
			continue;
		st.n = len;
		st.threads = calloc(len, sizeof *st.threads);
		st.locks = calloc(len, sizeof *st.locks);
		struct dbs_stall *ns = st.threads && st.locks
			? realloc(L->stalls, (L->nstalls + 1) * sizeof *ns) : NULL;
		if (!ns) {
			free(st.threads);
			free(st.locks);
			err = -ENOMEM;
			break;
		}
		size_t i = s;
		for (size_t k = 0; k < len; k++, i = next[i]) {
			st.threads[k] = snap->threads[i].tid;
			if (k + 1 < len)
				st.locks[k] = lockof[i];
		}
		ns[L->nstalls++] = st;
		L->stalls = ns;
	}
	if (L->nstalls > 1)
		qsort(L->stalls, L->nstalls, sizeof *L->stalls, cmp_stall);
	free(next);
	free(indeg);
	return err;
}
