/*
 * lock_wait.c: which futex call a stopped thread is blocked in, from its
 * registers (or, for a thread that did not stop, from /proc as it was read
 * before the stop).  The rest of the lock analysis starts from here: a
 * thread without such a wait waits on no lock.
 *
 * A timed futex wait interrupted by the ptrace stop continues, after the
 * resume, in restart_syscall with the futex arguments still in the
 * registers (docs/GLIBC.md §6); the registers alone cannot tell it from
 * another restarted call, so the wchan read before the stop must say
 * futex.
 */
#include "locks_int.h"

#include <string.h>

static bool is_wait_cmd(unsigned cmd)
{
	return cmd == FUTEX_WAIT || cmd == FUTEX_WAIT_BITSET ||
	       cmd == FUTEX_LOCK_PI || cmd == FUTEX_LOCK_PI2 ||
	       cmd == FUTEX_WAIT_REQUEUE_PI;
}

bool dbs_wait_is_pi(unsigned cmd)
{
	return cmd == FUTEX_LOCK_PI || cmd == FUTEX_LOCK_PI2;
}

/* wchan names of a task asleep in a futex wait, across kernel versions:
 * futex_wait_queue_me (< 5.16), futex_wait_queue (5.16+), futex_do_wait
 * (6.17+, seen here), rt_mutex_schedule / futex_lock_pi (PI). */
static bool wchan_is_futex(const char *w)
{
	return !strncmp(w, "futex", 5) || !strncmp(w, "rt_mutex", 8);
}

static bool fill_wait(struct dbs_wait *wt, long nr, const uint64_t *args)
{
	wt->nr = nr;
	wt->uaddr = args[0];
	wt->op = (uint32_t)args[1];
	wt->val = (uint32_t)args[2];
	wt->cmd = wt->op & FUTEX_CMD_MASK;
	wt->private_op = wt->op & FUTEX_PRIVATE_FLAG;
	/* a futex word is 4-byte aligned, or the kernel refuses it */
	return is_wait_cmd(wt->cmd) && !(wt->uaddr & 3) && wt->uaddr;
}

/*
 * From the stopped registers: futex(2) interrupted by the stop
 * (restarting: it was blocked, not returning), or restart_syscall of an
 * interrupted timed futex wait.  Without registers (a thread that did not
 * stop), /proc's view from before the stop: recorded, but not part of the
 * consistent graph.
 */
void dbs_wait_of(const struct arch_desc *a, const struct dbs_thread *th,
		 struct dbs_wait *wt)
{
	memset(wt, 0, sizeof *wt);
	if (th->have_regs && (th->stopped || th->observed)) {
		/* observed (nonblocking): in the call now, not interrupted */
		const struct arch_syscall *sc = &th->syscall;
		if (!sc->restarting && !th->observed)
			return;
		if (sc->nr == a->nr_futex) {
			wt->src = DBS_EV_SYSCALL;
		} else if (sc->nr == a->nr_restart_syscall && th->proc_valid &&
			   th->proc_before_stop && wchan_is_futex(th->wchan)) {
			wt->src = DBS_EV_RESTART;
		} else {
			return;
		}
		wt->consistent = true;
		wt->valid = fill_wait(wt, sc->nr, sc->args);
		return;
	}
	if (!th->have_regs && th->proc_valid && th->proc_before_stop &&
	    th->proc_sc_kind == PSVC_SC_IN_SYSCALL &&
	    (th->proc_sc_nr == a->nr_futex ||
	     (th->proc_sc_nr == a->nr_restart_syscall && wchan_is_futex(th->wchan)))) {
		wt->src = DBS_EV_PROC;
		wt->valid = fill_wait(wt, th->proc_sc_nr, th->proc_sc_args);
	}
}

/* Could this be glibc's park of a PI mutex waiter after EDEADLK/ESRCH
 * (pthread_mutex_lock.c: a zero-valued wait on a compound literal of its
 * own stack)?  Only what to prefetch during the stop, and a precondition:
 * a zero word near sp is no evidence (a futex in static TLS is one too),
 * the frames decide (dbs_park_frame). */
bool dbs_wait_maybe_park(const struct dbs_thread *th, const struct dbs_wait *wt)
{
	return th->have_regs && wt->val == 0 &&
	       (wt->cmd == FUTEX_WAIT || wt->cmd == FUTEX_WAIT_BITSET) &&
	       wt->uaddr >= th->sp && wt->uaddr - th->sp < DBS_PARK_STACK_SPAN;
}
