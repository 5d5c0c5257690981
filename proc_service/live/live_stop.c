/*
 * live_stop.c: stopping every task of a live process together and letting
 * them go (the live backend's stop and resume).
 *
 * The sequence follows elfutils' linux-pid-attach.c and strace, with these
 * measured constraints: PTRACE_SEIZE + PTRACE_INTERRUPT (never
 * PTRACE_ATTACH, whose SIGSTOP makes attaching O(N^2) and leaves a stopped
 * process behind if we die), and waitpid(tid, __WALL) per task (never
 * waitpid(-1), O(N) per call in the kernel).  Because nothing is queued to
 * the target, the kernel's detach-on-tracer-exit lets it run on if tinspect
 * is killed at any point.  A large process is stopped, and let go, by a
 * crew of tracer threads, each over its share of the tasks (live_crew.c).
 */
#include "live.h"

#include "array.h"

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

/* A task still runnable at the stop timeout only waits for a CPU (a busy
 * host, a SCHED_IDLE thread): it is waited for up to this many timeouts
 * before it is left out like a task in uninterruptible sleep. */
#define RUNNABLE_WAITS 10

static bool straggler_take(struct psvc_target *t, pid_t tid);
static bool straggler_add(struct psvc_target *t, pid_t tid);

/* A task /proc/PID/task lists that the capture does not know yet: one
 * created since the scan (or since the last list), added now and seized
 * by the next pass.  Only the caller's thread adds tasks. */
static int note_late(struct psvc_target *t, pid_t tid, void *arg)
{
	(void)arg;
	if (psvc_task_by_tid(t, tid))
		return 0;
	return psvc_task_add_late(t, tid) ? 0 : -ENOMEM;
}

/* Interrupt task k, seized by the member that calls this. */
static void interrupt_task(struct psvc_task *k)
{
	k->flags &= ~PSVC_TASK_QUIET;
	k->t_interrupted = psvc_now_ns();
	if (ptrace(PTRACE_INTERRUPT, k->tid, 0, 0) != 0 && errno == ESRCH) {
		/* it exited after it was seized; waitpid reaps it */
	}
}

/* Seize task k (by the member of the crew that owns it), and interrupt it
 * unless quiet: then it is marked PSVC_TASK_QUIET, to be interrupted by
 * interrupt_task() once every task is seized. */
static void seize_task(struct psvc_target *t, struct psvc_task *k, unsigned *nseized,
		       bool quiet)
{
	pid_t tid = k->tid;
	if (k->flags & (PSVC_TASK_SEIZED | PSVC_TASK_GONE))
		return;
	if (k->seize_errno)
		return;	/* refused once this capture: do not retry */
	if (t->follow && (k->info.state == 'Z' || k->info.state == 'X') &&
	    !(k->flags & PSVC_TASK_LATE) && tid == t->pid) {
		/* a followed leader that called pthread_exit: a zombie
		 * until the last thread exits, it reports no stop (waiting
		 * for one would hold the others for the whole stop
		 * timeout); shown as in the unfollowed case */
		psvc_task_refused(k, EPERM);
		return;
	}
	if (t->follow && psvc_follow_adopt(t, tid)) {
		/* attached since follow began: interrupt is enough */
		psvc_task_seized(t, k);
		if (ptrace(PTRACE_INTERRUPT, tid, 0, 0) != 0 && errno == ESRCH)
			psvc_task_gone_held(k);
		(*nseized)++;
		return;
	}
	if (ptrace(PTRACE_SEIZE, tid, 0,
		   (void *)(long)(t->follow ? FOLLOW_PTRACE_OPTS : 0)) != 0) {
		if (errno == EPERM && straggler_take(t, tid)) {
			/* ours since an earlier capture, interrupt pending
			 * (then the crew is the caller alone: psvc_crew_want) */
			psvc_task_seized(t, k);
			(*nseized)++;
			return;
		}
		int e = errno;
		if (e == EPERM) {
			/* an exiting task (zombie) refuses with EPERM too:
			 * that is a task gone, not a permission problem */
			struct psvc_taskinfo ti;
			if (psvc_taskinfo_read_at(psvc_live(t)->task_dirfd, tid, &ti) != 0) {
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
			return;
		}
		psvc_task_refused(k, e);
		return;
	}
	psvc_task_seized(t, k);
	if (quiet)
		k->flags |= PSVC_TASK_QUIET;
	else
		interrupt_task(k);
	(*nseized)++;
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

/* The task's state now (its stat file; about 10 us); 0 if it cannot be
 * read.  k->info keeps the scan's, which the report shows (the state
 * before the stop), unless the caller replaces it. */
static char state_now(struct psvc_target *t, struct psvc_task *k)
{
	char path[32], buf[1024];
	size_t len;
	struct psvc_taskinfo ti = { 0 };
	snprintf(path, sizeof path, "%d/stat", (int)k->tid);
	if (psvc_read_file_at(psvc_live(t)->task_dirfd, path, buf, sizeof buf, &len) ||
	    !psvc_parse_stat(buf, len, &ti))
		return 0;
	return ti.state;
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
	if (k->tid != t->pid)
		return false;
	char state = state_now(t, k);
	if (state != 'Z' && state != 'X')
		return false;
	k->info.state = state;
	if (t->follow) {
		/* as seize_task() does for a zombie leader it sees: attached
		 * for following, not part of this capture */
		psvc_task_refused(k, EPERM);
	} else {
		psvc_task_straggler(k);
	}
	return true;
}

/* The first index at or after from that member me of n owns. */
static size_t first_of(size_t from, unsigned me, unsigned n)
{
	return from + (me + n - (unsigned)(from % n)) % n;
}

/* Wait for the stop of member me's tasks in [from, to).  Returns 0, or
 * the freeze check's error. */
static int wait_stops(struct psvc_target *t, size_t from, size_t to, unsigned me,
		      unsigned n, uint64_t timeout_ns)
{
	for (size_t i = first_of(from, me, n); i < to; i += n) {
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
		/* the timeout counts from this task's interrupt: the
		 * seizing of thousands of tasks on a busy machine can take
		 * longer than the timeout itself */
		uint64_t limit = timeout_ns;
		while (!(k->flags & (PSVC_TASK_STOPPED | PSVC_TASK_GONE |
				     PSVC_TASK_STRAGGLER))) {
			int err = psvc_check_freeze(t);
			if (err)
				return err;
			bool late = limit &&
				    psvc_now_ns() - k->t_interrupted > limit;
			int st;
			pid_t w = waitpid(k->tid, &st,
					  __WALL | (late ? WNOHANG : 0));
			if (w == 0) {
				/* Interrupted long ago and still not stopped.
				 * Runnable (R): it waits for a CPU and stops
				 * when it gets one, so it is waited for up to
				 * RUNNABLE_WAITS timeouts (t: it stopped just
				 * now).  Otherwise, or beyond that:
				 * uninterruptible sleep (D), or busy in the
				 * kernel; left out. */
				char state = state_now(t, k);
				if (limit == timeout_ns && (state == 'R' || state == 't')) {
					limit = timeout_ns * RUNNABLE_WAITS;
					continue;
				}
				if (state)	/* what kept it: shown */
					k->info.state = state;
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

/*
 * One pass of the stop: each member seizes and interrupts its tasks of
 * [from, to), then waits for each of them to stop.
 *
 * The first pass seizes quietly: every member seizes its share without
 * interrupting (a seized task runs on as before), and only when the whole
 * crew is done does the pass interrupt and wait.  Seizing takes the
 * process's cred_guard_mutex and the tasklist lock for writing, so the
 * crew's seizures run one at a time, and interleaved with the interrupts
 * they kept the first tasks stopped while the last were seized, and
 * competed for that lock with the tasks stopping (which take it to tell
 * their tracer).  At 10 000 threads the seizures alone take about 10 ms,
 * and the stop, counted from the first interrupt, went from 82-116 ms to
 * 57-69 ms when they came first (bench/limit_par.c -S shows the same for
 * the floor probe).  A task that stops on its own in between (a signal, a
 * job-control stop) is caught as any such stop is, and the freeze then
 * counts from the first seizure.  Follow mode seizes with its options and
 * keeps the single pass.
 */
struct stop_pass {
	size_t from, to;
	uint64_t timeout_ns;
	bool quiet;		/* the tasks were seized by seize_share() */
	unsigned nseized[PSVC_CREW_MAX];
	int err[PSVC_CREW_MAX];
};

static void seize_share(struct psvc_target *t, unsigned me, void *arg)
{
	struct stop_pass *p = arg;
	unsigned n = psvc_crew_size(t);
	for (size_t i = first_of(p->from, me, n); i < p->to; i += n)
		seize_task(t, &t->tasks[i], &p->nseized[me], true);
}

static void stop_share(struct psvc_target *t, unsigned me, void *arg)
{
	struct stop_pass *p = arg;
	unsigned n = psvc_crew_size(t);
	for (size_t i = first_of(p->from, me, n); i < p->to; i += n) {
		struct psvc_task *k = &t->tasks[i];
		if (!p->quiet)
			seize_task(t, k, &p->nseized[me], false);
		else if (k->flags & PSVC_TASK_QUIET)
			interrupt_task(k);
	}
	p->err[me] = wait_stops(t, p->from, p->to, me, n, p->timeout_ns);
}

/* Stop tasks [from, t->ntasks) with the crew, seizing them all first if
 * quiet: the first error, and how many were seized. */
static int stop_pass(struct psvc_target *t, size_t from, uint64_t timeout_ns,
		     bool quiet, unsigned *ret_nseized)
{
	struct stop_pass p = { .from = from, .to = t->ntasks,
			       .timeout_ns = timeout_ns, .quiet = quiet };
	if (quiet) {
		uint64_t t_seize = psvc_now_ns();
		psvc_crew_run(t, seize_share, &p, false);
		/* the freeze begins with the first interrupt */
		t->t_first_stop = psvc_now_ns();
		psvc_crew_run(t, stop_share, &p, true);
		for (size_t i = from; i < p.to; i++) {
			const struct psvc_task *k = &t->tasks[i];
			/* stopped by other means: perhaps before the first
			 * interrupt, so perhaps since it was seized */
			if ((k->flags & PSVC_TASK_STOPPED) &&
			    (k->resume_sig || (k->flags & PSVC_TASK_JOBCTL)))
				t->t_first_stop = t_seize;
		}
	} else {
		psvc_crew_run(t, stop_share, &p, true);
	}
	*ret_nseized = 0;
	int err = 0;
	for (unsigned i = 0; i < PSVC_CREW_MAX; i++) {
		*ret_nseized += p.nseized[i];
		if (!err)
			err = p.err[i];
	}
	return err;
}

int psvc_live_stop(struct psvc_target *t, const struct psvc_stop_opts *opts)
{
	uint64_t timeout = opts ? opts->stop_timeout_ns : 0;
	/* Wake up often enough to honour the tighter of the two limits. */
	uint64_t period = 2000000;
	if (t->max_freeze_ns && t->max_freeze_ns / 4 < period)
		period = t->max_freeze_ns / 4 ? t->max_freeze_ns / 4 : 100000;
	int wake = opts ? opts->wake_signal : 0;
	/* the ranges a read could wait on, before anything is held (read at
	 * the scan, unless the last capture was nonblocking) */
	psvc_live_uffd_ensure(t);
	psvc_wake_timer_set(t, wake, period, period, false);
	psvc_crew_begin(t, psvc_crew_want(t, opts ? opts->tracers : 0), wake, period);

	/* From here on something may be held; written before any member
	 * runs (they only read it). */
	t->stopped = true;
	t->t_first_stop = psvc_now_ns();
	int err = 0;
	size_t from = 0;
	for (int pass = 0;; pass++) {
		if (pass > 0) {
			/* the tasks of psvc_scan() first, in its order; tasks
			 * born since then are found by listing again after
			 * the waits (listing before would only add to the
			 * freeze), until a list finds none new: a stopped
			 * process creates no threads */
			int n = psvc_list_tids(t, note_late, NULL);
			if (n < 0 && n != -ESRCH) {
				err = n;
				break;
			}
			if (from == t->ntasks)
				break;
		}
		unsigned nseized;
		err = stop_pass(t, from, timeout, pass == 0 && !t->follow, &nseized);
		from = t->ntasks;
		if (err)
			break;
		if (nseized == 0 && pass > 0)
			break;
		if (pass > 10000) {	/* a bound on a hostile fork bomb */
			err = -EAGAIN;
			break;
		}
	}
	if (err)
		return err;	/* psvc_stop() resumes everything */
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
		return nperm ? -EPERM : -ESRCH;
	}
	if (psvc_exec_seen(t)) {
		/* an execve between psvc_scan() and the seizing: what we hold
		 * is another program (one /proc read, about 10 us, while
		 * frozen; a stopped process cannot exec) */
		return -ESTALE;
	}
	return nstopped;
}

/* Let member me's tasks go. */
static void resume_share(struct psvc_target *t, unsigned me, void *arg)
{
	(void)arg;
	unsigned n = psvc_crew_size(t);
	for (size_t i = me; i < t->ntasks; i += n) {
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
}

void psvc_live_resume(struct psvc_target *t)
{
	unsigned n = psvc_crew_size(t);
	psvc_crew_run(t, resume_share, NULL, false);
	t->t_last_resume = psvc_now_ns();	/* the target runs again */
	psvc_wake_timer_disarm(t);
	for (size_t i = 0; i < t->ntasks; i++) {
		struct psvc_task *k = &t->tasks[i];
		if (!(k->flags & PSVC_TASK_SEIZED))
			continue;
		/* a straggler that is followed stays ours: its interrupt
		 * shows up in psvc_follow_wait() as a stop to continue; one
		 * a helper holds is let go when the helper ends, below */
		if (t->follow || i % n != 0 || straggler_add(t, k->tid))
			psvc_task_handed_over(k);	/* kept in the list */
	}
	psvc_crew_end(t);
}

static bool straggler_take(struct psvc_target *t, pid_t tid)
{
	struct psvc_live *L = psvc_live(t);
	for (size_t i = 0; i < L->nstragglers; i++)
		if (L->stragglers[i] == tid) {
			L->stragglers[i] = L->stragglers[--L->nstragglers];
			return true;
		}
	return false;
}

static bool straggler_add(struct psvc_target *t, pid_t tid)
{
	struct psvc_live *L = psvc_live(t);
	if (array_grow(&L->stragglers, &L->stragglers_cap, L->nstragglers + 1,
		       sizeof *L->stragglers, 16))
		return false;
	L->stragglers[L->nstragglers++] = tid;
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
	struct psvc_live *L = psvc_live(t);
	for (size_t i = 0; i < L->nstragglers;) {
		pid_t tid = L->stragglers[i];
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
			L->stragglers[i] = L->stragglers[--L->nstragglers];
		else
			i++;
	}
}

void psvc_live_tracer_exited(struct psvc_target *t)
{
	psvc_live(t)->nstragglers = 0;
}
