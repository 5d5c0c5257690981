/*
 * syscall_view.h: the system call a thread of a snapshot is in, one
 * answer for every reader (the JSON and text renderers, the library's
 * accessor): from the registers read at the stop, else from /proc.
 */
#ifndef TINSPECT_SYSCALL_VIEW_H
#define TINSPECT_SYSCALL_VIEW_H

#include "dbsession.h"

enum dbs_syscall_source {
	DBS_SYSCALL_REGISTERS = 1,	/* the registers at the stop */
	DBS_SYSCALL_PROC,		/* /proc/TID/syscall before the stop */
};

struct dbs_syscall_view {
	long nr;
	const char *name;		/* NULL: not in the arch's table */
	const uint64_t *args;		/* 6, in the thread */
	enum dbs_syscall_source source;
	bool restarting;		/* REGISTERS: blocked, restarts */
};

/*
 * Returns 0 and *ret, or -ENODATA: neither source shows a system call
 * (the registers say user space, or nothing was read).  /proc is used
 * only for a thread whose registers are unknown: for a stopped thread the
 * registers are the truth, /proc's line is older.
 */
int dbs_thread_syscall(const struct dbs_snapshot *snap,
		       const struct dbs_thread *th, struct dbs_syscall_view *ret);

#endif
