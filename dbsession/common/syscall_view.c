/*
 * syscall_view.c: the system call a thread is in (see syscall_view.h).
 * The two sources, in the order they are trusted: the registers read
 * while the thread was stopped (arch_decode_syscall() in the session),
 * and, for a thread whose registers could not be read (a straggler in D
 * state, a failed GETREGSET), the /proc/TID/syscall line read before the
 * stop.
 */
#include "syscall_view.h"

#include <errno.h>

int dbs_thread_syscall(const struct dbs_snapshot *snap,
		       const struct dbs_thread *th, struct dbs_syscall_view *ret)
{
	struct dbs_syscall_view v = { .nr = -1 };
	if (th->syscall.nr >= 0) {
		v.nr = th->syscall.nr;
		v.args = th->syscall.args;
		v.source = DBS_SYSCALL_REGISTERS;
		v.restarting = th->syscall.restarting;
	} else if (!th->have_regs && th->proc_sc_kind == PSVC_SC_IN_SYSCALL) {
		v.nr = th->proc_sc_nr;
		v.args = th->proc_sc_args;
		v.source = DBS_SYSCALL_PROC;
	} else {
		return -ENODATA;
	}
	v.name = snap->arch ? arch_syscall_name(snap->arch, v.nr) : NULL;
	*ret = v;
	return 0;
}
