/*
 * locks.c: what each blocked thread waits on, the state of those locks, and
 * the wait-for graph.  glibc's libthread_db has no lock API
 * (docs/GLIBC.md §7): everything comes from the stopped registers (the
 * futex call), /proc (wchan), the lock words read during the stop
 * (lock_prefetch.c), ELF symbols and the calling frames' names.  This file
 * is the order of the steps (locks_int.h names the file of each) and the
 * session's side of the dbs_lock_input seam; the unit tests drive the
 * same steps through that seam with synthetic memory.
 *
 * Facts this relies on, verified on Debian 12 (glibc 2.36-9+deb12u14,
 * kernel 6.18, x86_64) with the tests/fixtures/fx_lock_* programs, reading
 * /proc/TID/syscall and wchan, and eu-stack with and without libc6-dbg:
 *
 *  waiting in                  futex word    op     val
 *  mutex_lock normal/recursive mutex+0       0x80   2          (also
 *    /errorcheck/adaptive                                       errorcheck)
 *  mutex_timedlock             mutex+0       0x189  2
 *  robust mutex                mutex+0       0x0    old __lock = owner
 *                                                   TID | 0x80000000
 *  PI mutex                    mutex+0       0x86   0 (FUTEX_LOCK_PI)
 *  PI: EDEADLK/ESRCH, parked   own stack     0x189  0 (for ever)
 *  rwlock_wrlock, writer holds rwlock+12     0x189  3
 *  rwlock_wrlock, readers hold rwlock+8      0x189  2
 *  rwlock_rdlock, writer holds rwlock+8      0x189  3
 *  cond_wait                   cond+40/+44   0x189  0
 *    (glibc 2.41: cond+32/+36, val the __g_signals word it read;
 *    docs/GLIBC.md §5.1)
 *  sem_wait, sem_timedwait     sem+0         0x189  0
 *  barrier_wait                barrier+4     0x80   current_round
 *  pthread_join(T)             T+0x2d0       0x109  T's tid
 *  (0x2d0 = _thread_db_pthread_tid's offset; 0x189 = WAIT_BITSET|PRIVATE|
 *  CLOCK_REALTIME; 0x109 the same, shared: the kernel's CLEARTID wake.)
 *  A timed wait interrupted by a ptrace stop continues, after the resume,
 *  in restart_syscall (219) with the futex arguments still in the
 *  registers and wchan "futex_do_wait" (futex_wait_queue before 6.x).
 *  Robust owner death: the kernel sets FUTEX_OWNER_DIED and wakes one
 *  waiter, which gets EOWNERDEAD and owns the mutex with __owner
 *  0x7fffffff; the other waiters sleep on.  A non-robust PI mutex whose
 *  owner died: __lock = dead TID | FUTEX_WAITERS, the waiter is parked.
 *  At glibc's park after EDEADLK, r14 still holds &mutex->__kind.
 */
#include "locks_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/*
 * The steps, in order.  Each thread's verdict comes from its own wait
 * first, then from the other waiters; the objects and their owners from
 * the verdicts; the parked PI waiters need the owners (their refusal is
 * seen in the graph); the graph needs everything.
 */
static int analyse(struct dbs_lockctx *c)
{
	int err;
	if (c->in->musl) {
		/* musl's words (docs/MUSL.md): no glibc parks or cond pairs */
		dbs_musl_decide_all(c);
		if ((err = dbs_lockobj_build(c)) || (err = dbs_lockobj_tidy(c)))
			return err;
		return dbs_lockgraph_find(c->snap, c->succ, c->lockof);
	}
	dbs_decide_all(c);
	if ((err = dbs_decide_cond_pairs(c)) ||
	    (err = dbs_decide_shared(c)) ||
	    (err = dbs_lockobj_build(c)) ||
	    (err = dbs_park_resolve(c)) ||
	    (err = dbs_lockobj_tidy(c)))
		return err;
	return dbs_lockgraph_find(c->snap, c->succ, c->lockof);
}

int dbs_locks_analyse(struct dbs_snapshot *snap, const struct dbs_lock_input *in)
{
	dbs_locks_free(snap);
	struct dbs_lockctx c = { .snap = snap, .in = in };
	int err = dbs_lockctx_init(&c);
	if (!err) {
		snap->locks = calloc(1, sizeof *snap->locks);
		err = snap->locks ? analyse(&c) : -ENOMEM;
	}
	dbs_lockctx_done(&c);
	if (err)
		dbs_locks_free(snap);
	return err;
}

/* ---- the session's inputs -------------------------------------------------------- */

static int frozen_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	return psvc_read_frozen(ctx, addr, buf, len);
}

static int session_symbol(void *ctx, uint64_t addr, struct dbs_symbol *ret,
			  uint64_t *ret_size)
{
	return dbs_symbol_covering(ctx, addr, ret, ret_size);
}

/* offsetof(struct pthread, tid), from libc's libthread_db descriptor
 * _thread_db_pthread_tid = { bits, count, offset } (docs/GLIBC.md §2;
 * 32, 1, 0x2d0 here).  A constant of libc: read once per module map. */
static void load_tid_offset(struct dbs_session *s)
{
	uint64_t gen = psvc_modules_generation(s->t);
	if (s->tid_off_valid && s->tid_off_gen == gen)
		return;
	s->tid_off = 0;
	s->tid_off_gen = gen;
	s->tid_off_valid = true;
	struct psvc_field f;
	free(s->tid_off_why);
	s->tid_off_why = NULL;
	char why[256] = "the size of struct pthread is not known";
	if (s->sizeof_pthread &&
	    dbs_glibc_pthread_field(s, "_thread_db_pthread_tid", &f, why,
				    sizeof why) == 0) {
		s->tid_off = (uint32_t)f.offset;
		if (!f.offset)	/* where struct pthread's list links are */
			strcpy(why, "_thread_db_pthread_tid: offset 0");
	}
	if (!s->tid_off && s->ta)
		s->tid_off_why = dbs_strdup(why);
}

/* The unwound frames of a thread as the analysis' frame evidence: every
 * function name, inlined ones too, innermost first. */
static size_t thread_frames(void *ctx, const struct dbs_snapshot *snap,
			    size_t i, const char **names, uint64_t *sps, size_t max)
{
	(void)ctx;
	const struct dbs_stack *st = &snap->threads[i].stack;
	size_t n = 0;
	for (size_t k = 0; k < st->nframes && n < max; k++) {
		sps[n] = st->frames[k].sp;
		names[n++] = st->frames[k].symbol;
	}
	return n;
}

int dbs_locks_run(struct dbs_session *s, struct dbs_snapshot *snap)
{
	load_tid_offset(s);
	bool no_libc = psvc_go_without_libc(s->t);
	if (s->tid_off_why && !no_libc)
		dbs_add_error(&snap->warnings, &snap->nwarnings,
			       "locks: threads waiting in pthread_join cannot be "
			       "matched to the thread they join: %s",
			       s->tid_off_why);
	struct dbs_lock_input in = {
		.arch = psvc_arch(s->t),
		.tid_offset = s->tid_off,
		.sizeof_pthread = s->sizeof_pthread,
		.read = frozen_read,
		.symbol = session_symbol,
		.frames = snap->stacks ? thread_frames : NULL,
		.ctx = s->t,
		.cleanup_offset = dbs_condwait_cleanup_offset(s),
	};
	/* the layouts verified for its glibc (glibc_locks.c), never another
	 * version's (docs/GLIBC.md §5) */
	const char *why = NULL;
	if (no_libc) {
		/* said once, and no word about glibc: there is none */
		in.glibc_unverified = "no C library";
		in.undecoded_note = "no C library: not a pthread object (the Go "
				    "runtime's own futex), not decoded";
		dbs_add_error(&snap->warnings, &snap->nwarnings,
			       "no C library: a static Go program (no libc mapped, "
			       "no program interpreter, no glibc ABI note); its "
			       "threads wait on the Go runtime's own futexes, which "
			       "are no pthread objects: they are not decoded");
		return dbs_locks_analyse(snap, &in);
	}
	if (s->libc == &dbs_libc_musl && !s->libc->locks_unverified(s) &&
	    s->layout_ok) {
		in.musl = true;
		return dbs_locks_analyse(snap, &in);
	}
	if (s->libc != &dbs_libc_glibc) {
		/* another C library's objects: its own decoders, or none */
		in.glibc_unverified = "not glibc";
		in.undecoded_note = "this C library's lock words are not decoded";
		dbs_add_error(&snap->warnings, &snap->nwarnings,
			       "locks: %s: lock words are not decoded and waits "
			       "are not matched to pthread objects", s->libc->name);
		return dbs_locks_analyse(snap, &in);
	}
	in.glibc = dbs_glibc_locks_for(s->glibc_version, in.arch, &why);
	if (!in.glibc) {
		in.glibc_unverified = why;
		dbs_add_error(&snap->warnings, &snap->nwarnings,
			       "locks: glibc %s: %s; lock words are not decoded "
			       "and waits are not matched to pthread objects",
			       s->glibc_version[0] ? s->glibc_version : "(unknown)",
			       why);
	}
	return dbs_locks_analyse(snap, &in);
}
