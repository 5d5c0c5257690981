/*
 * progress.c: what could move a thread of a snapshot on, if anything.
 *
 * The verdict needs it (agent/common/verdict.c, through
 * tinspect_thread_progress): waits that record no owner (condition
 * variables, semaphores) may be threads waiting for each other, or an
 * idle pool; they say something only when no thread of the process can
 * make progress: none runs, none sleeps with a timeout, none waits for
 * something from outside the process, so nothing inside it will ever post
 * or signal.  The stalls (stalls.c) ask the same of a lock holder's system
 * call.
 *
 * The classes, first match:
 *   STOPPED  job-control stop (SIGSTOP, SIGTSTP): it goes on at SIGCONT
 *   DISK     uninterruptible sleep (D): I/O that ends by itself
 *   RUNNING  on a CPU or runnable (R), in user space, or (nonblocking)
 *            seen running or moved during the capture
 *   TIMED    a futex wait or a sleep with a timeout (restart_syscall only
 *            ever continues a timed call)
 *   OUTSIDE  an untimed wait for something another process or the kernel
 *            brings: I/O on a file descriptor, a child, a signal, a
 *            process-shared futex (one without FUTEX_PRIVATE_FLAG, which
 *            another process can wake)
 *   INSIDE   an untimed wait that only another thread of this process can
 *            end: a private futex wait (a mutex, a condvar, a semaphore, a
 *            barrier, an unidentified futex), a join, a PI park (never)
 *   UNKNOWN  anything else: no registers, a system call not listed here
 *
 * A join waits on the joined thread's TID word, which glibc waits on as a
 * shared futex (the kernel's CLONE_CHILD_CLEARTID wake-up is a shared
 * one): it is INSIDE all the same, only the joined thread's exit ends it.
 */
#include "dbs_int.h"

#include <string.h>

#include "syscall_view.h"

#define FUTEX_PRIVATE_FLAG 128

static bool named(const char *n, const char *const *list, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (!strcmp(n, list[i]))
			return true;
	return false;
}

/*
 * A blocking system call that waits for something from outside the
 * process, with no timeout in its arguments (x86_64 and aarch64 take the
 * same arguments).  A socket's SO_RCVTIMEO is not visible: read and recv
 * are taken as untimed.  Disk I/O is not here: a regular file is read in
 * D state and ends by itself.
 */
bool dbs_syscall_waits_outside(const struct arch_desc *a, long nr,
			       const uint64_t *args)
{
	const char *n = arch_syscall_name(a, nr);
	if (!n)
		return false;
	static const char *const always[] = {
		"read", "readv", "recvfrom", "recvmsg", "accept", "accept4",
		"write", "writev", "sendto", "sendmsg", "pause", "rt_sigsuspend",
		"wait4", "waitid", "msgrcv", "semop", "flock", "sigsuspend",
	};
	if (named(n, always, sizeof always / sizeof *always))
		return true;
	if (!strcmp(n, "poll") || !strcmp(n, "epoll_wait") || !strcmp(n, "epoll_pwait"))
		return (int32_t)args[!strcmp(n, "poll") ? 2 : 3] < 0;
	if (!strcmp(n, "ppoll") || !strcmp(n, "rt_sigtimedwait"))
		return args[2] == 0;
	if (!strcmp(n, "select") || !strcmp(n, "pselect6"))
		return args[4] == 0;
	if (!strcmp(n, "epoll_pwait2") || !strcmp(n, "recvmmsg"))
		return args[!strcmp(n, "recvmmsg") ? 4 : 3] == 0;
	return false;
}

/* A sleep, or a wait for an event, with a timeout in its arguments. */
static bool timed_syscall(const struct arch_desc *a, long nr, const uint64_t *args)
{
	const char *n = arch_syscall_name(a, nr);
	if (!n)
		return false;
	static const char *const sleeps[] = {
		"nanosleep", "clock_nanosleep", "restart_syscall",
	};
	if (named(n, sleeps, sizeof sleeps / sizeof *sleeps))
		return true;
	if (!strcmp(n, "poll") || !strcmp(n, "epoll_wait") || !strcmp(n, "epoll_pwait"))
		return (int32_t)args[!strcmp(n, "poll") ? 2 : 3] >= 0;
	if (!strcmp(n, "ppoll") || !strcmp(n, "rt_sigtimedwait") ||
	    !strcmp(n, "epoll_pwait2") || !strcmp(n, "semtimedop"))
		return args[!strcmp(n, "epoll_pwait2") || !strcmp(n, "semtimedop")
				    ? 3 : 2] != 0;
	if (!strcmp(n, "select") || !strcmp(n, "pselect6") ||
	    !strcmp(n, "recvmmsg") || !strcmp(n, "io_getevents") ||
	    !strcmp(n, "mq_timedreceive"))
		return args[4] != 0;
	return false;
}

/* A futex wait from its arguments (op in args[1], timeout in args[3]). */
static enum dbs_progress futex_progress(uint32_t op, uint64_t timeout, bool join)
{
	if (timeout)
		return DBS_PROGRESS_TIMED;
	if (!join && !(op & FUTEX_PRIVATE_FLAG))
		return DBS_PROGRESS_OUTSIDE;	/* process-shared */
	return DBS_PROGRESS_INSIDE;
}

enum dbs_progress dbs_thread_progress(const struct dbs_snapshot *snap,
				      const struct dbs_thread *th)
{
	if (th->jobctl_stopped)
		return DBS_PROGRESS_STOPPED;
	if (th->proc_valid && th->state == 'D')
		return DBS_PROGRESS_DISK;
	if (th->proc_valid && th->state == 'R')
		return DBS_PROGRESS_RUNNING;
	if (snap->capture == DBS_CAPTURE_NONBLOCKING && !th->observed)
		return th->proc_valid && (th->state == 'Z' || th->state == 'X')
			       ? DBS_PROGRESS_UNKNOWN : DBS_PROGRESS_RUNNING;
	if (!th->have_regs || !snap->arch)
		return DBS_PROGRESS_UNKNOWN;
	const struct dbs_blocked_on *b = th->blocked_on;
	if (b) {
		if (b->parked)
			return DBS_PROGRESS_INSIDE;	/* for ever */
		if (b->nr != snap->arch->nr_futex || th->syscall.nr != b->nr)
			return DBS_PROGRESS_TIMED;	/* restart_syscall */
		return futex_progress(b->futex_op, th->syscall.args[3],
				      b->kind == DBS_LOCK_JOIN);
	}
	struct dbs_syscall_view v;
	if (dbs_thread_syscall(snap, th, &v))
		return DBS_PROGRESS_RUNNING;	/* the registers: user space */
	if (v.nr == snap->arch->nr_futex)
		return futex_progress((uint32_t)v.args[1], v.args[3], false);
	if (timed_syscall(snap->arch, v.nr, v.args))
		return DBS_PROGRESS_TIMED;
	if (dbs_syscall_waits_outside(snap->arch, v.nr, v.args))
		return DBS_PROGRESS_OUTSIDE;
	if (v.name && !strcmp(v.name, "sched_yield"))
		return DBS_PROGRESS_RUNNING;
	return DBS_PROGRESS_UNKNOWN;
}

const char *dbs_progress_name(enum dbs_progress p)
{
	switch (p) {
	case DBS_PROGRESS_UNKNOWN: return "unknown";
	case DBS_PROGRESS_RUNNING: return "running";
	case DBS_PROGRESS_TIMED: return "timed";
	case DBS_PROGRESS_OUTSIDE: return "outside";
	case DBS_PROGRESS_DISK: return "disk";
	case DBS_PROGRESS_STOPPED: return "stopped";
	case DBS_PROGRESS_INSIDE: return "inside";
	}
	return "unknown";
}
