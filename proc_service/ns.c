/*
 * ns.c: targets in another PID namespace than tinspect's.
 *
 * libthread_db names threads by the TID of the target's own namespace
 * (ti_lid, and the lwpid_t of every ps_* callback); ptrace needs ours.
 * /proc/PID/task/TID/status "NSpid:" gives both (GLIBC-NOTES.md §3).  The
 * map from one to the other is a hash (tasks.c), so that a container with
 * thousands of threads does not make every callback a scan.  Whether the
 * namespace is another one at all is decided once per capture, before
 * the stop.
 */
#include "psvc_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

bool psvc_foreign_pidns(struct psvc_target *t)
{
	if (t->foreign_pidns >= 0)
		return t->foreign_pidns;
	char path[64], mine[64], theirs[64];
	snprintf(path, sizeof path, "/proc/%d/ns/pid", (int)t->mm_tid);
	ssize_t a = readlink("/proc/self/ns/pid", mine, sizeof mine - 1);
	ssize_t b = readlink(path, theirs, sizeof theirs - 1);
	if (a > 0 && b > 0) {
		t->foreign_pidns = a != b || memcmp(mine, theirs, (size_t)a) != 0;
		return t->foreign_pidns;
	}
	/* No ns links (old kernel, no permission): NSpid of the leader. */
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

/* The last field of the "NSpid:" line of a status file, 0 if none. */
static pid_t parse_nspid(const char *buf)
{
	const char *p = strstr(buf, "\nNSpid:");
	if (!p)
		return 0;
	p += 7;
	long last = 0;
	for (int n = 0; n < 64; n++) {	/* at most 32 nested namespaces */
		while (*p == ' ' || *p == '\t')
			p++;
		char *end;
		long v = strtol(p, &end, 10);
		if (end == p)
			break;
		last = v;
		p = end;
	}
	return last > 0 && last <= INT32_MAX ? (pid_t)last : 0;
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
		char path[64], buf[4096];
		snprintf(path, sizeof path, "%d/status", (int)k->tid);
		if (psvc_read_file_at(t->task_dirfd, path, buf, sizeof buf, NULL))
			continue;
		k->info.ns_tid = parse_nspid(buf);
		psvc_task_index_ns(t, k);
	}
}
