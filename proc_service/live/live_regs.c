/*
 * live_regs.c: the registers of a stopped task, with PTRACE_GETREGSET.
 *
 * The general registers are the NT_PRSTATUS regset, word for word what
 * libthread_db's prgregset_t is (docs/GLIBC.md §4).  The thread pointer
 * is what ps_get_thread_area hands libthread_db to find the thread's
 * struct pthread: on x86_64 fs_base, one of the general registers; on
 * aarch64 TPIDR_EL0, a regset of its own (NT_ARM_TLS).  The capture reads
 * both for every stopped task; follow mode reads the thread pointer of a
 * new thread at its first stop.  This is the one place either is read;
 * by the tracer thread that holds the task (live_crew.c).
 */
#include "live.h"

#include <elf.h>
#include <errno.h>
#include <sys/ptrace.h>
#include <sys/uio.h>

int psvc_ptrace_regs(const struct arch_desc *a, pid_t tid, uint64_t *gregs,
		     uint64_t *ret_tp)
{
	struct iovec iov = { gregs, a->ngregs * sizeof(uint64_t) };
	if (ptrace(PTRACE_GETREGSET, tid, (void *)NT_PRSTATUS, &iov) != 0)
		return -errno;
	if (iov.iov_len != a->ngregs * sizeof(uint64_t))
		return -ENOEXEC;	/* another layout (a 32-bit task) */
	if (a->tp_greg_idx >= 0) {
		*ret_tp = gregs[a->tp_greg_idx];
	} else if (a->tp_regset) {
		uint64_t tp = 0;
		struct iovec tiov = { &tp, sizeof tp };
		if (ptrace(PTRACE_GETREGSET, tid, (void *)(uintptr_t)a->tp_regset, &tiov) == 0)
			*ret_tp = tp;
	}
	return 0;
}

int psvc_live_regs(struct psvc_target *t, struct psvc_task *k)
{
	if (!(k->flags & PSVC_TASK_STOPPED) && (k->flags & PSVC_TASK_OBSERVED))
		return psvc_live_observed_regs(t, k);
	return psvc_ptrace_regs(t->arch, k->tid, k->gregs, &k->tp);
}

static void regs_share(struct psvc_target *t, unsigned me, void *arg)
{
	(void)arg;
	unsigned n = psvc_crew_size(t);
	for (size_t i = me; i < t->ntasks; i += n) {
		struct psvc_task *k = &t->tasks[i];
		if (k->flags & (PSVC_TASK_STOPPED | PSVC_TASK_OBSERVED))
			psvc_task_regs(k, -psvc_live_regs(t, k));
	}
}

/* Every member reads the registers of the tasks it holds.  Then a task
 * whose registers could not be read (not seized, a straggler, a failed
 * GETREGSET) and whose /proc/TID/syscall a lean scan left to them gets
 * that line read now: it is the only word on its system call.  Typically
 * none; a straggler was not stopped, so the line says what it does. */
void psvc_live_regs_all(struct psvc_target *t)
{
	psvc_crew_run(t, regs_share, NULL, false);
	for (size_t i = 0; i < t->ntasks; i++) {
		struct psvc_task *k = &t->tasks[i];
		if (!(k->flags & (PSVC_TASK_HAVE_REGS | PSVC_TASK_GONE)) &&
		    k->info.valid && k->info.before_stop && !k->info.sc_read)
			psvc_taskinfo_read_syscall_at(psvc_live(t)->task_dirfd,
						      k->tid, &k->info);
	}
}

int psvc_live_fpregs(struct psvc_target *t, struct psvc_task *k, void *buf,
		     size_t len)
{
	(void)t;
	struct iovec iov = { buf, len };
	if (ptrace(PTRACE_GETREGSET, k->tid, (void *)NT_PRFPREG, &iov) != 0)
		return -errno;
	return 0;
}
