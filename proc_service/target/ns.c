/*
 * ns.c: targets in another PID namespace than tinspect's.
 *
 * libthread_db names threads by the TID of the target's own namespace
 * (ti_lid, and the lwpid_t of every ps_* callback); ptrace needs ours.
 * /proc/PID/task/TID/status "NSpid:" gives both (docs/GLIBC.md §3).  The
 * map from one to the other is a hash (tasks.c), so that a container with
 * thousands of threads does not make every callback a scan.  Whether the
 * namespace is another one at all is decided once per capture, before
 * the stop.  The mount namespace only matters for where the target's
 * files are (psvc_root_dir()).
 */
#include "psvc_int.h"

#include <errno.h>

bool psvc_foreign_pidns(struct psvc_target *t)
{
	if (t->foreign_pidns >= 0)
		return t->foreign_pidns;
	int same = t->backend->same_ns(t, "pid");
	if (same >= 0) {
		t->foreign_pidns = !same;
		return t->foreign_pidns;
	}
	/* Not known (no ns links: an old kernel, no permission): NSpid of
	 * the leader. */
	struct psvc_task *k = psvc_task_by_tid(t, t->pid);
	if (k && k->info.ns_tid)
		t->foreign_pidns = k->info.ns_tid != t->pid;
	return t->foreign_pidns > 0;
}

bool psvc_same_pidns(struct psvc_target *t)
{
	psvc_foreign_pidns(t);
	return t->foreign_pidns == 0;
}

bool psvc_foreign_mntns(struct psvc_target *t)
{
	return t->backend->same_ns(t, "mnt") != 1;	/* unknown: both */
}

struct psvc_task *psvc_task_by_ns_tid(struct psvc_target *t, pid_t ns_tid)
{
	struct psvc_task *k = psvc_task_by_ns_map(t, ns_tid);
	if (k)
		return k;
	k = psvc_task_by_tid(t, ns_tid);
	if (!k)
		return NULL;
	if (k->info.ns_tid == ns_tid)
		return k;
	/* a TID of ours that happens to equal the namespace TID asked for
	 * is only the same task if there is one namespace */
	if (k->info.ns_tid == 0 && psvc_same_pidns(t))
		return k;
	return NULL;
}

void psvc_resolve_late_ns_tids(struct psvc_target *t)
{
	if (!psvc_foreign_pidns(t))
		return;
	for (size_t i = 0; i < t->ntasks; i++) {
		struct psvc_task *k = &t->tasks[i];
		if (!(k->flags & PSVC_TASK_LATE) || k->info.ns_tid ||
		    (k->flags & PSVC_TASK_GONE))
			continue;
		struct psvc_taskinfo ti;
		if (t->backend->task_facts(t, k->tid, &ti))
			continue;
		k->info.ns_tid = ti.ns_tid;
		psvc_task_index_ns(t, k);
	}
}
