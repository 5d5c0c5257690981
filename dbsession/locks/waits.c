/*
 * waits.c: how long each thread has been in its wait, across the updates
 * of one session.  A snapshot is one instant; a thread blocked
 * on a mutex in one update and again in the next may have waited the
 * whole time, or may have taken the lock, worked, and come back.  The
 * session remembers, per thread, what it waited on at the last update,
 * and calls the new wait the same one only when nothing says it moved on:
 *
 *   - the same object: the lock kind and address of its futex wait
 *     (blocked_on), or for another blocking system call (epoll_wait,
 *     nanosleep, read...) the same call and first argument;
 *   - the same stack: the same frame pcs, innermost first;
 *   - it did not run in between: its voluntary context switches
 *     (/proc/TID/status) grew by at most WAIT_SWITCHES_PER_UPDATE,
 *     and its CPU time (utime+stime of /proc/TID/stat) by at most one
 *     clock tick.  Not zero, because every update wakes the thread itself:
 *     PTRACE_INTERRUPT makes it leave the wait for the stop and the resume
 *     sends it back (2 voluntary switches per update, measured on Linux
 *     6.1 with a thread blocked on a mutex, one-shot and --watch alike;
 *     a few microseconds of system time, which /proc rounds down to ticks
 *     and which crosses a tick boundary now and then).  The switches are
 *     what tells a waiter that took the lock and came back from one that
 *     never woke: a contended lock held across a sleep costs its waiters
 *     no measurable CPU, but two switches per acquisition.  Involuntary
 *     switches are not counted: on a busy host the thread our stop woke
 *     may be preempted on its way to the stop or back to the wait, any
 *     number of times, and that says nothing of the wait.
 *
 * The wait's start (waiting_since) is the capture time of the first
 * update that saw it: the real start lies between the capture before
 * that and it, so the duration shown is at most one interval short.
 * A thread that woke, ran for less than a tick and came back to the same
 * wait with the same stack between two updates cannot be told from one
 * that never woke: sampling cannot see that, and it is said in
 * tinspect_thread_waiting_since_ns(3).
 *
 * A thread that sleeps in restart_syscall continues the call the kernel
 * interrupted for our previous stop (nanosleep, a timed poll: see
 * restart_syscall(2)): it is the previous wait if the stack is the same.
 */
#include "dbs_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "syscall_view.h"

/* kind of a wait that is a system call other than a futex wait */
#define WAIT_SYSCALL (-1)
/* context switches an update itself may cost a waiting thread: 2
 * measured, twice that for the attach of --follow-threads and the like */
#define WAIT_SWITCHES_PER_UPDATE 4

struct wait_rec {
	pid_t tid;
	int kind;		/* enum dbs_lock_kind, or WAIT_SYSCALL */
	long nr;		/* WAIT_SYSCALL: the system call */
	uint64_t addr;		/* the object (else the futex word), or the
				 * system call's first argument */
	uint64_t stack;		/* hash of the frame pcs */
	size_t nframes;
	double cpu_s;		/* utime + stime at this update */
	uint64_t switches;	/* voluntary context switches at this update */
	int64_t since_ns;	/* CLOCK_REALTIME */
};

struct dbs_waits {
	struct wait_rec *v;	/* by tid */
	size_t n;
};

static int cmp_rec(const void *a, const void *b)
{
	pid_t x = ((const struct wait_rec *)a)->tid, y = ((const struct wait_rec *)b)->tid;
	return (x > y) - (x < y);
}

static const struct wait_rec *find_rec(const struct dbs_waits *w, pid_t tid)
{
	if (!w || !w->n)
		return NULL;
	struct wait_rec key = { .tid = tid };
	return bsearch(&key, w->v, w->n, sizeof *w->v, cmp_rec);
}

/* FNV-1a over the frame pcs */
static uint64_t stack_hash(const struct dbs_stack *st)
{
	uint64_t h = 0xcbf29ce484222325u;
	for (size_t i = 0; i < st->nframes; i++) {
		uint64_t pc = st->frames[i].pc;
		for (int b = 0; b < 8; b++) {
			h ^= (pc >> (8 * b)) & 0xff;
			h *= 0x100000001b3u;
		}
	}
	return h;
}

/* What the thread waits on now, into *r (without since); false if it is
 * in no wait tinspect can follow. */
static bool current_wait(const struct dbs_snapshot *snap, const struct dbs_thread *th,
			 const struct dbs_waits *prev,
			 struct wait_rec *r)
{
	/* without the CPU time nothing can say it stayed: every update
	 * would be a new wait, so none is followed */
	if (!th->proc_valid || !th->proc_before_stop || !th->have_ctxt)
		return false;
	memset(r, 0, sizeof *r);
	r->tid = th->tid;
	r->cpu_s = th->utime_s + th->stime_s;
	r->switches = th->vol_ctxt_switches;
	r->stack = stack_hash(&th->stack);
	r->nframes = th->stack.nframes;
	if (th->blocked_on) {
		const struct dbs_blocked_on *b = th->blocked_on;
		r->kind = (int)b->kind;
		r->addr = b->object ? b->object : b->futex;
		return true;
	}
	/* a sleeping thread in a system call: S (or D, uninterruptible I/O) */
	if (th->state != 'S' && th->state != 'D')
		return false;
	struct dbs_syscall_view v;
	if (dbs_thread_syscall(snap, th, &v))
		return false;
	/* /proc saw it asleep before the stop, and the registers show the
	 * call it slept in: to be restarted (ERESTART*), or returning EINTR
	 * because our stop interrupted it (epoll_wait does, see signal(7),
	 * "Interruption of system calls"); either way the same call */
	r->kind = WAIT_SYSCALL;
	r->nr = v.nr;
	r->addr = v.args[0];
	const struct wait_rec *p = find_rec(prev, th->tid);
	if (snap->arch && v.nr == snap->arch->nr_restart_syscall && p &&
	    p->kind == WAIT_SYSCALL && p->stack == r->stack &&
	    p->nframes == r->nframes) {
		r->nr = p->nr;
		r->addr = p->addr;
	}
	return true;
}

/* r continues p: nothing says the thread left its wait in between. */
static bool same_wait(const struct dbs_session *s, const struct wait_rec *p,
		      const struct wait_rec *r)
{
	double tick = s->clk_tck > 0 ? 1.0 / (double)s->clk_tck : 0.01;
	return p->kind == r->kind && p->nr == r->nr && p->addr == r->addr &&
	       p->stack == r->stack && p->nframes == r->nframes &&
	       r->cpu_s >= p->cpu_s && r->cpu_s - p->cpu_s <= tick * 1.5 &&
	       r->switches >= p->switches &&
	       r->switches - p->switches <= WAIT_SWITCHES_PER_UPDATE;
}

void dbs_waits_track(struct dbs_session *s, struct dbs_snapshot *snap)
{
	int64_t now = (int64_t)snap->captured_at.tv_sec * 1000000000 +
		      snap->captured_at.tv_nsec;
	struct dbs_waits *prev = s->waits;
	struct dbs_waits *next = calloc(1, sizeof *next);
	if (next)
		next->v = calloc(snap->nthreads ? snap->nthreads : 1, sizeof *next->v);
	if (!next || !next->v) {
		/* out of memory: nothing is known about any wait, and the
		 * next update starts afresh */
		free(next);
		dbs_waits_free(prev);
		s->waits = NULL;
		for (size_t i = 0; i < snap->nthreads; i++)
			snap->threads[i].waiting_since_ns = 0;
		return;
	}
	for (size_t i = 0; i < snap->nthreads; i++) {
		struct dbs_thread *th = &snap->threads[i];
		struct wait_rec r;
		th->waiting_since_ns = 0;
		if (!current_wait(snap, th, prev, &r))
			continue;
		const struct wait_rec *p = find_rec(prev, th->tid);
		r.since_ns = p && same_wait(s, p, &r) ? p->since_ns : now;
		th->waiting_since_ns = r.since_ns;
		next->v[next->n++] = r;
	}
	qsort(next->v, next->n, sizeof *next->v, cmp_rec);
	dbs_waits_free(prev);
	s->waits = next;
}

void dbs_waits_free(struct dbs_waits *w)
{
	if (!w)
		return;
	free(w->v);
	free(w);
}
