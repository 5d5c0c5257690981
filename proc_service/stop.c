/*
 * stop.c: stopping every task of the target together and letting them go.
 *
 * The sequence follows elfutils' linux-pid-attach.c and strace, with the
 * measured constraints of DESIGN.md: PTRACE_SEIZE + PTRACE_INTERRUPT (never
 * PTRACE_ATTACH, whose SIGSTOP makes attaching O(N^2) and leaves a stopped
 * process behind if we die), and waitpid(tid, __WALL) per task (never
 * waitpid(-1), O(N) per call in the kernel).  Because nothing is queued to
 * the target, the kernel's detach-on-tracer-exit lets it run on if tinspect
 * is killed at any point.
 */
#include "psvc_int.h"

#include <elf.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef PTRACE_EVENT_STOP
#define PTRACE_EVENT_STOP 128
#endif

/*
 * The one timer that ends tinspect's blocking waits: a signal to the
 * calling thread, whose handler does nothing but make waitpid() return
 * EINTR.  While stopped it fires periodically, so that a task that does
 * not stop (D state) cannot hold the deadlines off; while following it
 * fires once, at the next update (follow.c).
 */
void psvc_wake_timer_set(struct psvc_target *t, int sig, uint64_t value_ns,
		    uint64_t interval_ns, bool absolute)
{
	if (!sig)
		return;
	pid_t me = (pid_t)syscall(SYS_gettid);
	if (t->have_wake_timer && t->wake_tid != me) {
		/* a capture in another thread than the last one */
		timer_delete(t->wake_timer);
		t->have_wake_timer = false;
	}
	if (!t->have_wake_timer) {
		struct sigevent sev = { 0 };
		sev.sigev_notify = SIGEV_THREAD_ID;
		sev.sigev_signo = sig;
		sev._sigev_un._tid = me;
		if (timer_create(CLOCK_MONOTONIC, &sev, &t->wake_timer))
			return;
		t->have_wake_timer = true;
		t->wake_tid = me;
	}
	struct itimerspec its = { 0 };
	its.it_value.tv_sec = (time_t)(value_ns / 1000000000u);
	its.it_value.tv_nsec = (long)(value_ns % 1000000000u);
	its.it_interval.tv_sec = (time_t)(interval_ns / 1000000000u);
	its.it_interval.tv_nsec = (long)(interval_ns % 1000000000u);
	timer_settime(t->wake_timer, absolute ? TIMER_ABSTIME : 0, &its, NULL);
}

void psvc_wake_timer_disarm(struct psvc_target *t)
{
	if (!t->have_wake_timer)
		return;
	struct itimerspec its = { 0 };
	timer_settime(t->wake_timer, 0, &its, NULL);
}

int psvc_check_freeze(struct psvc_target *t)
{
	if (t->cancel && *t->cancel)
		return -EINTR;
	if (t->max_freeze_ns && t->t_first_stop &&
	    psvc_now_ns() - t->t_first_stop > t->max_freeze_ns)
		return -ETIMEDOUT;
	return 0;
}

static bool straggler_take(struct psvc_target *t, pid_t tid);
static bool straggler_add(struct psvc_target *t, pid_t tid);

/* Seize and interrupt one task found by a scan. */
static int seize_one(struct psvc_target *t, pid_t tid, void *arg)
{
	unsigned *nseized = arg;
	struct psvc_task *k = psvc_task_by_tid(t, tid);
	if (k && (k->flags & (PSVC_TASK_SEIZED | PSVC_TASK_GONE)))
		return 0;
	if (k && k->seize_errno)
		return 0;	/* refused once this capture: do not retry */
	if (!k) {
		/* created after the first scan */
		k = psvc_task_add_late(t, tid);
		if (!k)
			return -ENOMEM;
	}
	if (!t->t_first_stop)
		t->t_first_stop = psvc_now_ns();
	if (t->follow && (k->info.state == 'Z' || k->info.state == 'X') &&
	    !(k->flags & PSVC_TASK_LATE) && tid == t->pid) {
		/* a followed leader that called pthread_exit: a zombie
		 * until the last thread exits, it reports no stop (waiting
		 * for one would hold the others for the whole stop
		 * timeout); shown as in the unfollowed case */
		psvc_task_refused(k, EPERM);
		return 0;
	}
	if (t->follow && psvc_follow_adopt(t, tid)) {
		/* attached since follow began: interrupt is enough */
		psvc_task_seized(t, k);
		if (ptrace(PTRACE_INTERRUPT, tid, 0, 0) != 0 && errno == ESRCH)
			psvc_task_gone_held(k);
		(*nseized)++;
		return 0;
	}
	if (ptrace(PTRACE_SEIZE, tid, 0,
		   (void *)(long)(t->follow ? FOLLOW_PTRACE_OPTS : 0)) != 0) {
		if (errno == EPERM && straggler_take(t, tid)) {
			/* ours since an earlier capture, interrupt pending */
			psvc_task_seized(t, k);
			(*nseized)++;
			return 0;
		}
		int e = errno;
		if (e == EPERM) {
			/* an exiting task (zombie) refuses with EPERM too:
			 * that is a task gone, not a permission problem */
			struct psvc_taskinfo ti;
			if (psvc_taskinfo_read_at(t->task_dirfd, tid, &ti) != 0) {
				e = ESRCH;
			} else if (ti.state == 'Z' || ti.state == 'X') {
				/* a zombie main thread stays in the list
				 * (pthread_exit from main): shown, not an
				 * error; any other zombie is a thread gone */
				k->info.state = ti.state;
				if (tid != t->pid)
					e = ESRCH;
			}
		}
		if (e == ESRCH) {
			psvc_task_gone(k);
			return 0;
		}
		psvc_task_refused(k, e);
		return 0;
	}
	psvc_task_seized(t, k);
	if (ptrace(PTRACE_INTERRUPT, tid, 0, 0) != 0 && errno == ESRCH) {
		/* it exited between the two calls; waitpid reaps it */
	}
	(*nseized)++;
	return 0;
}

/* Record one wait status (in_capture false: seen while letting go, too
 * late for the snapshot).  Returns true once the task no longer needs to
 * be waited for (stopped or gone). */
static bool note_status(struct psvc_target *t, struct psvc_task *k, int st,
			bool in_capture)
{
	if (t->follow) {
		/* clone and first stops are events too: follow.c keeps them
		 * for the next psvc_follow_wait() */
		int sig;
		bool group;
		if (!psvc_follow_status(t, k->tid, st, true, &sig, &group)) {
			if (WIFEXITED(st) || WIFSIGNALED(st)) {
				psvc_task_gone(k);
				return true;
			}
			return false;
		}
		psvc_task_stopped(k, sig, group, in_capture);
		return true;
	}
	if (WIFEXITED(st) || WIFSIGNALED(st)) {
		psvc_task_gone(k);
		return true;
	}
	if (!WIFSTOPPED(st))
		return false;
	int sig = WSTOPSIG(st);
	/* PTRACE_EVENT_STOP: our interrupt (SIGTRAP) or a group-stop (the
	 * stop signal): the process was, or is being, job-control stopped;
	 * the kernel puts it back in that stop when we detach.  A
	 * signal-delivery-stop: hand the signal back on detach. */
	bool jobctl = (st >> 16) == PTRACE_EVENT_STOP && sig != SIGTRAP;
	psvc_task_stopped(k, (st >> 16) == 0 ? sig : 0, jobctl, in_capture);
	return true;
}

/*
 * A leader that called pthread_exit is a zombie until the last thread
 * exits and reports no stop (nor its exit, before the others': the
 * kernel's delay_group_leader()).  seize_task() leaves such a leader out
 * when the scan saw it a zombie; this is for one that became a zombie
 * after the scan, between seizing and waiting (under valgrind that window
 * is long enough to hit every time: the wait held the other threads for
 * the whole stop timeout).  True if k is such a leader; it is then shown
 * as the zombie it is, and held as a straggler when we seized it in this
 * capture (a zombie cannot be detached; it is let go with the others).
 */
static bool leader_became_zombie(struct psvc_target *t, struct psvc_task *k)
{
	char path[32], buf[1024];
	size_t len;
	struct psvc_taskinfo ti = { 0 };
	if (k->tid != t->pid)
		return false;
	snprintf(path, sizeof path, "%d/stat", (int)k->tid);
	if (psvc_read_file_at(t->task_dirfd, path, buf, sizeof buf, &len) ||
	    !psvc_parse_stat(buf, len, &ti) || (ti.state != 'Z' && ti.state != 'X'))
		return false;
	k->info.state = ti.state;
	if (t->follow) {
		/* as seize_one() does for a zombie leader it sees: attached
		 * for following, not part of this capture */
		psvc_task_refused(k, EPERM);
	} else {
		psvc_task_straggler(k);
	}
	return true;
}

/* Wait for the stop of every task from index `from`.  Returns 0, or the
 * freeze check's error. */
static int wait_stops(struct psvc_target *t, size_t from, uint64_t timeout_ns,
		      uint64_t batch_start)
{
	for (size_t i = from; i < t->ntasks; i++) {
		struct psvc_task *k = &t->tasks[i];
		if (!(k->flags & PSVC_TASK_SEIZED))
			continue;
		if (k->tid == t->pid && !(k->flags & PSVC_TASK_STOPPED)) {
			/* most often it has stopped by now; if not, one
			 * look at its state before blocking on it */
			int st;
			pid_t w = waitpid(k->tid, &st, __WALL | WNOHANG);
			if (w == k->tid)
				note_status(t, k, st, true);
			else if (w == 0 && leader_became_zombie(t, k))
				continue;
		}
		while (!(k->flags & (PSVC_TASK_STOPPED | PSVC_TASK_GONE |
				     PSVC_TASK_STRAGGLER))) {
			int err = psvc_check_freeze(t);
			if (err)
				return err;
			bool late = timeout_ns &&
				    psvc_now_ns() - batch_start > timeout_ns;
			int st;
			pid_t w = waitpid(k->tid, &st,
					  __WALL | (late ? WNOHANG : 0));
			if (w == 0) {
				/* interrupted long ago and still not
				 * stopped: uninterruptible sleep */
				psvc_task_straggler(k);
				break;
			}
			if (w < 0) {
				if (errno == EINTR)
					continue;
				/* ECHILD: gone and reaped */
				psvc_task_gone(k);
				break;
			}
			note_status(t, k, st, true);
		}
	}
	return 0;
}

int psvc_stop(struct psvc_target *t, const struct psvc_stop_opts *opts)
{
	if (t->stopped)
		return -EBUSY;
	t->max_freeze_ns = opts ? opts->max_freeze_ns : 0;
	t->cancel = opts ? opts->cancel : NULL;
	if (t->cancel && *t->cancel)
		return -EINTR;	/* asked to stop before anything was held */
	uint64_t timeout = opts ? opts->stop_timeout_ns : 0;
	hold_update(t, true);	/* before the first task is seized */
	t->t_first_stop = t->t_last_resume = 0;
	psvc_cache_begin(t);
	if (opts && opts->reserve_per_task)
		psvc_cache_reserve(&t->cache, t->ntasks *
				  ((opts->reserve_per_task + 4095) / 4096));

	/* Wake up often enough to honour the tighter of the two limits. */
	uint64_t period = 2000000;
	if (t->max_freeze_ns && t->max_freeze_ns / 4 < period)
		period = t->max_freeze_ns / 4 ? t->max_freeze_ns / 4 : 100000;
	psvc_wake_timer_set(t, opts ? opts->wake_signal : 0, period, period, false);

	int err = 0;
	size_t from = 0;
	for (int pass = 0;; pass++) {
		unsigned nseized = 0;
		uint64_t batch_start = psvc_now_ns();
		if (pass == 0) {
			/* the tasks of psvc_scan(), in its order; tasks born
			 * since then are found by the rescan after the waits
			 * (listing /proc/PID/task again now would only add to
			 * the freeze) */
			size_t n0 = t->ntasks;
			for (size_t i = 0; i < n0 && !err; i++)
				err = seize_one(t, t->tasks[i].tid, &nseized);
		} else {
			int n = psvc_list_tids(t, seize_one, &nseized);
			if (n < 0 && n != -ESRCH)
				err = n;
		}
		if (err)
			break;
		if (nseized == 0 && pass > 0)
			break;	/* a stopped process creates no threads */
		err = wait_stops(t, from, timeout, batch_start);
		from = t->ntasks;
		if (err)
			break;
		if (pass > 10000) {	/* a bound on a hostile fork bomb */
			err = -EAGAIN;
			break;
		}
	}
	if (err) {
		psvc_resume(t);
		return err;
	}
	int nstopped = 0, nheld = 0, nperm = 0;
	for (size_t i = 0; i < t->ntasks; i++) {
		struct psvc_task *k = &t->tasks[i];
		if (k->flags & PSVC_TASK_STOPPED)
			nstopped++;
		if (k->flags & PSVC_TASK_STRAGGLER)
			nheld++;
		/* a zombie leader refuses seizing with EPERM too */
		if (k->seize_errno == EPERM && k->info.state != 'Z')
			nperm++;
	}
	if (nstopped + nheld == 0) {
		/* nothing to show: refused, or gone from the start */
		psvc_resume(t);
		return nperm ? -EPERM : -ESRCH;
	}
	if (psvc_exec_seen(t)) {
		/* an execve between psvc_scan() and the seizing: what we hold
		 * is another program (one /proc read, about 10 us, while
		 * frozen; a stopped process cannot exec) */
		psvc_resume(t);
		return -ESTALE;
	}
	return nstopped;
}

void psvc_read_regs(struct psvc_target *t)
{
	const struct arch_desc *a = t->arch;
	for (size_t i = 0; i < t->ntasks; i++) {
		struct psvc_task *k = &t->tasks[i];
		if (!(k->flags & PSVC_TASK_STOPPED))
			continue;
		struct iovec iov = { k->gregs, a->ngregs * sizeof(uint64_t) };
		if (ptrace(PTRACE_GETREGSET, k->tid, (void *)NT_PRSTATUS,
			   &iov) != 0) {
			psvc_task_regs(k, errno);
			continue;
		}
		if (iov.iov_len != a->ngregs * sizeof(uint64_t)) {
			/* another layout (a 32-bit task): not ours to read */
			psvc_task_regs(k, ENOEXEC);
			continue;
		}
		if (a->tp_greg_idx >= 0) {
			k->tp = k->gregs[a->tp_greg_idx];
		} else {
			uint64_t tp = 0;
			struct iovec tiov = { &tp, sizeof tp };
			/* NT_ARM_TLS: TPIDR_EL0 (GLIBC-NOTES.md §4) */
			if (ptrace(PTRACE_GETREGSET, k->tid, (void *)0x401,
				   &tiov) == 0)
				k->tp = tp;
		}
		psvc_task_regs(k, 0);
	}
}

int psvc_task_fpregs(struct psvc_target *t, struct psvc_task *k, void *buf,
		     size_t len)
{
	(void)t;
	if (!(k->flags & PSVC_TASK_STOPPED))
		return -ESRCH;
	struct iovec iov = { buf, len };
	if (ptrace(PTRACE_GETREGSET, k->tid, (void *)NT_PRFPREG, &iov) != 0)
		return -errno;
	return 0;
}

void psvc_resume(struct psvc_target *t)
{
	if (!t->stopped) {
		hold_update(t, false);
		return;
	}
	for (size_t i = 0; i < t->ntasks; i++) {
		struct psvc_task *k = &t->tasks[i];
		if (!(k->flags & PSVC_TASK_SEIZED))
			continue;
		if (!(k->flags & PSVC_TASK_STOPPED)) {
			/* Seized and interrupted but not stopped yet (a
			 * straggler, or an abort in the middle of the waits):
			 * it may have stopped by now. */
			int st;
			/* too late to be part of the snapshot */
			if (waitpid(k->tid, &st, __WALL | WNOHANG) > 0)
				note_status(t, k, st, false);
		}
		if ((k->flags & PSVC_TASK_STOPPED) && t->follow) {
			/* still followed: let it go on, attached */
			if (k->flags & PSVC_TASK_JOBCTL)
				ptrace(PTRACE_LISTEN, k->tid, 0, 0);
			else
				ptrace(PTRACE_CONT, k->tid, 0,
				       (void *)(long)k->resume_sig);
			psvc_task_released(k);
		} else if (k->flags & PSVC_TASK_STOPPED) {
			/* the signal of a signal-delivery-stop goes back */
			if (ptrace(PTRACE_DETACH, k->tid, 0,
				   (void *)(long)k->resume_sig) == 0 ||
			    errno == ESRCH)
				psvc_task_released(k);
		}
	}
	t->t_last_resume = psvc_now_ns();
	psvc_wake_timer_disarm(t);
	psvc_cache_end(t);
	t->stopped = false;
	for (size_t i = 0; i < t->ntasks; i++) {
		struct psvc_task *k = &t->tasks[i];
		/* a straggler that is followed stays ours: its interrupt
		 * shows up in psvc_follow_wait() as a stop to continue */
		if (t->follow && (k->flags & PSVC_TASK_SEIZED)) {
			psvc_task_handed_over(k);
			continue;
		}
		if ((k->flags & PSVC_TASK_SEIZED) && straggler_add(t, k->tid))
			psvc_task_handed_over(k);	/* kept in the list */
	}
	hold_update(t, false);
}

static bool straggler_take(struct psvc_target *t, pid_t tid)
{
	for (size_t i = 0; i < t->nstragglers; i++)
		if (t->stragglers[i] == tid) {
			t->stragglers[i] = t->stragglers[--t->nstragglers];
			return true;
		}
	return false;
}

static bool straggler_add(struct psvc_target *t, pid_t tid)
{
	if (t->nstragglers == t->stragglers_cap) {
		size_t ncap = t->stragglers_cap ? t->stragglers_cap * 2 : 16;
		pid_t *n = realloc(t->stragglers, ncap * sizeof *n);
		if (!n)
			return false;
		t->stragglers = n;
		t->stragglers_cap = ncap;
	}
	t->stragglers[t->nstragglers++] = tid;
	return true;
}

/*
 * A straggler stays seized with an interrupt pending: when it leaves its
 * uninterruptible sleep it stops, and must be detached then.  The kernel
 * detaches it anyway when tinspect exits; a long-lived session calls this
 * between captures.
 */
void psvc_release_stragglers(struct psvc_target *t)
{
	for (size_t i = 0; i < t->nstragglers;) {
		pid_t tid = t->stragglers[i];
		int st;
		pid_t w = waitpid(tid, &st, __WALL | WNOHANG);
		bool done = w < 0;	/* ECHILD: gone, nothing left to do */
		if (w > 0 && (WIFEXITED(st) || WIFSIGNALED(st)))
			done = true;
		else if (w > 0 && WIFSTOPPED(st)) {
			int sig = (st >> 16) == 0 ? WSTOPSIG(st) : 0;
			done = ptrace(PTRACE_DETACH, tid, 0, (void *)(long)sig) == 0 ||
			       errno == ESRCH;
		}
		if (done)
			t->stragglers[i] = t->stragglers[--t->nstragglers];
		else
			i++;
	}
}

void psvc_forget_stragglers(struct psvc_target *t)
{
	t->nstragglers = 0;
}

size_t psvc_nstragglers(const struct psvc_target *t)
{
	return t->nstragglers;
}

uint64_t psvc_freeze_ns(const struct psvc_target *t)
{
	if (!t->t_first_stop)
		return 0;
	uint64_t end = t->t_last_resume ? t->t_last_resume : psvc_now_ns();
	return end - t->t_first_stop;
}

uint64_t psvc_first_stop_ns(const struct psvc_target *t)
{
	return t->t_first_stop;
}

bool psvc_is_stopped(const struct psvc_target *t)
{
	return t->stopped;
}
