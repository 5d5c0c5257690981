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
 * values are taken as the observation.  A copy of the stack is what the
 * thread had there only if the thread did not run while it was made: a
 * thread that leaves poll(), calls a function whose frame covers the
 * poll's, and comes back to the same poll with the same pc, sp and
 * arguments, shows the same line before and after, yet a copy made in
 * between holds the other function's bytes where the poll's return
 * addresses were.  So at the end of the capture, for each observed task:
 *
 *   1. the syscall line is read again: the same call, arguments, sp and
 *      pc, and not "running" (the kernel gives the values only for a
 *      task that is off its CPU, and checks that it stayed off while it
 *      collected them: task_current_syscall());
 *   2. then its status: voluntary + nonvoluntary context switches equal
 *      to the scan's, which read them before the syscall line.
 *
 * Every time a task leaves a CPU the kernel counts one of the two
 * (__schedule(): nvcsw or nivcsw, whenever another task is switched in).
 * The task was off its CPU at the scan's syscall read and at step 1, and
 * it left no CPU between the scan's status read and step 2: so it was
 * never on one in between, and wrote nothing of its stack while it was
 * copied.  A task that fails either test is marked MOVED: what was copied
 * of it is not shown as its state, nor unwound.
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
	int err = psvc_live_open_mem(t);
	if (err == -EACCES || err == -EPERM)
		return -EPERM;
	return err == -ESRCH ? -ESRCH : 0;
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

/* Is the syscall line now the one the task was observed with? */
static bool same_syscall(const struct psvc_taskinfo *then,
			 const struct psvc_taskinfo *now)
{
	if (now->sc_kind != then->sc_kind || now->sc_sp != then->sc_sp ||
	    now->sc_pc != then->sc_pc)
		return false;
	if (now->sc_kind != PSVC_SC_IN_SYSCALL)
		return true;
	if (now->sc_nr != then->sc_nr)
		return false;
	for (int i = 0; i < 6; i++)
		if (now->sc_args[i] != then->sc_args[i])
			return false;
	return true;
}

/* May the task have run since the scan: left its wait, or come back to
 * it after writing over its stack?  (See the top of this file.) */
static bool moved(struct psvc_target *t, const struct psvc_task *k)
{
	const struct psvc_taskinfo *then = &k->info;
	char path[32], buf[8192];
	size_t len;
	if (!then->status_valid || then->ctxt_lines != 2)
		return true;	/* nothing to prove it stayed */
	snprintf(path, sizeof path, "%d/syscall", (int)k->tid);
	if (psvc_read_file_at(psvc_live(t)->task_dirfd, path, buf, 512, &len))
		return true;	/* gone, or unreadable now: not the same */
	struct psvc_taskinfo now = { .sc_kind = PSVC_SC_UNKNOWN };
	psvc_parse_syscall(buf, &now);
	if (!same_syscall(then, &now))
		return true;
	/* after the syscall line, never before: see the top of the file */
	snprintf(path, sizeof path, "%d/status", (int)k->tid);
	if (psvc_read_file_at(psvc_live(t)->task_dirfd, path, buf, sizeof buf, &len))
		return true;
	psvc_parse_status(buf, len, &now);
	return now.ctxt_lines != 2 || now.ctxt_switches != then->ctxt_switches;
}

void psvc_live_observe_end(struct psvc_target *t)
{
	for (size_t i = 0; i < t->ntasks; i++) {
		struct psvc_task *k = &t->tasks[i];
		if ((k->flags & PSVC_TASK_OBSERVED) && moved(t, k))
			psvc_task_moved(k);
	}
}
