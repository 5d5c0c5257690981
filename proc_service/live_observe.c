/*
 * live_observe.c: a nonblocking capture of a live process (the live
 * backend's observe, observe_end, and the registers of an observed task).
 *
 * Nothing is stopped and nothing is attached: no PTRACE_SEIZE, so the
 * target never sees a tracer, a ptrace stop or a delay.  What can be had
 * that way is what the kernel publishes about a task blocked in it:
 * /proc/TID/syscall gives, for a task that is not running, the syscall
 * number and arguments (or -1 outside a syscall), and its user stack
 * pointer and program counter (the kernel's proc_pid_syscall(), which
 * reads them through task_current_syscall() only when the task is not on
 * a CPU; "running" otherwise).  From pc and sp the session copies the
 * used part of the stack (process_vm_readv, as in a stop) and unwinds it;
 * the other registers are unknown.  A running task is listed as such,
 * without registers or a stack.
 *
 * The scan read that line moments before (live.c, in parallel): its
 * values are taken as the observation.  At the end of the capture the
 * line is read again: a task whose syscall, sp or pc changed has left the
 * wait it was observed in while its memory was being copied (or came
 * back to another), and is marked MOVED so that the session does not
 * present what was copied as its state.  A task that left and came back
 * to the very same wait is not told apart; its stack above sp is then
 * that of the same call, which is the wait reported.
 */
#include "live.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

/* Blocked in the kernel with its pc and sp published. */
static bool observable(const struct psvc_taskinfo *ti)
{
	if (!ti->valid || ti->state == 'R' || ti->state == 'Z' || ti->state == 'X')
		return false;
	return (ti->sc_kind == PSVC_SC_IN_SYSCALL || ti->sc_kind == PSVC_SC_NONE) &&
	       ti->sc_sp != 0 && ti->sc_pc != 0;
}

/*
 * What a nonblocking capture reads - /proc/TID/syscall, the stacks, the
 * lock words - needs the access ptrace would (PTRACE_MODE_ATTACH): the
 * kernel answers another user's process with EACCES on each file and
 * EPERM on each read, and the capture would show every thread "running"
 * and no lock, a healthy process.  Opening /proc/PID/mem asks the same
 * question once (and the descriptor serves the reads that need it).
 */
static int may_read(struct psvc_target *t)
{
	struct psvc_live *L = psvc_live(t);
	if (L->mem_fd >= 0)
		return 0;
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/mem", (int)L->mm_tid);
	L->mem_fd = open(path, O_RDONLY | O_CLOEXEC);
	if (L->mem_fd >= 0)
		return 0;
	if (errno == EACCES || errno == EPERM)
		return -EPERM;
	return errno == ENOENT || errno == ESRCH ? -ESRCH : 0;
}

int psvc_live_observe(struct psvc_target *t)
{
	int err = may_read(t);
	if (err)
		return err;
	int n = 0;
	for (size_t i = 0; i < t->ntasks; i++) {
		struct psvc_task *k = &t->tasks[i];
		if (observable(&k->info)) {
			psvc_task_observed(k);
			n++;
		}
	}
	/* a process whose every thread runs is still a process to show */
	return n;
}

int psvc_live_observed_regs(struct psvc_target *t, struct psvc_task *k)
{
	const struct psvc_taskinfo *ti = &k->info;
	arch_gregs_from_syscall(t->arch,
				ti->sc_kind == PSVC_SC_IN_SYSCALL ? ti->sc_nr : -1,
				ti->sc_args, ti->sc_sp, ti->sc_pc, k->gregs);
	k->tp = 0;	/* fs_base is not published; the session may learn it */
	return 0;
}

/* Has the task left the wait it was observed in? */
static bool moved(struct psvc_target *t, const struct psvc_task *k)
{
	char path[32], buf[512];
	size_t len;
	snprintf(path, sizeof path, "%d/syscall", (int)k->tid);
	if (psvc_read_file_at(psvc_live(t)->task_dirfd, path, buf, sizeof buf, &len))
		return true;	/* gone, or unreadable now: not the same */
	struct psvc_taskinfo now = { .sc_kind = PSVC_SC_UNKNOWN };
	psvc_parse_syscall(buf, &now);
	const struct psvc_taskinfo *then = &k->info;
	if (now.sc_kind != then->sc_kind || now.sc_sp != then->sc_sp ||
	    now.sc_pc != then->sc_pc)
		return true;
	if (now.sc_kind != PSVC_SC_IN_SYSCALL)
		return false;
	if (now.sc_nr != then->sc_nr)
		return true;
	for (int i = 0; i < 6; i++)
		if (now.sc_args[i] != then->sc_args[i])
			return true;
	return false;
}

void psvc_live_observe_end(struct psvc_target *t)
{
	for (size_t i = 0; i < t->ntasks; i++) {
		struct psvc_task *k = &t->tasks[i];
		if ((k->flags & PSVC_TASK_OBSERVED) && moved(t, k))
			psvc_task_moved(k);
	}
}
