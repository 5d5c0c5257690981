/*
 * diag.c: why ptrace said EPERM.  strace's lesson: "Operation not
 * permitted" alone sends the on-call engineer guessing; the causes are few
 * and /proc tells them apart (ptrace(2) "Ptrace access mode checking",
 * Documentation/admin-guide/LSM/Yama.rst).
 */
#include "psvc_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define CAP_SYS_PTRACE_BIT 19

enum psvc_eperm_cause psvc_eperm_decide(const struct psvc_eperm_facts *f)
{
	if (f->tracer_pid > 0)
		return PSVC_EPERM_TRACED;
	if (f->have_cap_sys_ptrace) {
		/* Yama mode 3 forbids even CAP_SYS_PTRACE */
		return f->yama_scope >= 3 ? PSVC_EPERM_YAMA : PSVC_EPERM_UNKNOWN;
	}
	bool same_uid = true;
	for (int i = 0; i < 4; i++)
		if (f->target_uid[i] != f->my_euid)
			same_uid = false;
	if (!same_uid)
		return PSVC_EPERM_OTHER_UID;
	if (f->target_dumpable_known && !f->target_dumpable)
		return PSVC_EPERM_NOT_DUMPABLE;
	/* scope 1 allows descendants only; 2 needs CAP_SYS_PTRACE */
	if (f->yama_scope >= 2 || (f->yama_scope == 1 && !f->target_is_descendant))
		return PSVC_EPERM_YAMA;
	return PSVC_EPERM_UNKNOWN;
}

static bool is_descendant(pid_t pid)
{
	pid_t me = getpid();
	for (int depth = 0; pid > 1 && depth < 4096; depth++) {
		char path[64], buf[1024];
		snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
		if (psvc_read_file_at(AT_FDCWD, path, buf, sizeof buf, NULL))
			return false;
		const char *rp = strrchr(buf, ')');
		int ppid;
		if (!rp || sscanf(rp + 1, " %*c %d", &ppid) != 1)
			return false;
		if (ppid == me)
			return true;
		pid = ppid;
	}
	return false;
}

void psvc_diagnose_eperm(pid_t pid, struct psvc_eperm_diag *ret)
{
	struct psvc_eperm_facts f = { .yama_scope = -1, .my_euid = geteuid() };
	char path[64], buf[8192];

	memset(ret, 0, sizeof *ret);
	snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
	if (psvc_read_file_at(AT_FDCWD, path, buf, sizeof buf, NULL) == 0) {
		const char *p = strstr(buf, "\nTracerPid:");
		if (p)
			f.tracer_pid = (pid_t)strtol(p + 11, NULL, 10);
		p = strstr(buf, "\nUid:");
		if (p) {
			unsigned u[4];
			if (sscanf(p + 5, "%u %u %u %u", &u[0], &u[1], &u[2], &u[3]) == 4)
				for (int i = 0; i < 4; i++)
					f.target_uid[i] = u[i];
		}
	}
	if (psvc_read_file_at(AT_FDCWD, "/proc/self/status", buf, sizeof buf, NULL) == 0) {
		const char *p = strstr(buf, "\nCapEff:");
		if (p) {
			unsigned long long caps = strtoull(p + 8, NULL, 16);
			f.have_cap_sys_ptrace = caps & (1ull << CAP_SYS_PTRACE_BIT);
		}
	}
	if (psvc_read_file_at(AT_FDCWD, "/proc/sys/kernel/yama/ptrace_scope", buf,
			 sizeof buf, NULL) == 0)
		f.yama_scope = atoi(buf);
	f.target_is_descendant = is_descendant(pid);
	/* A non-dumpable process's /proc/PID files are owned by root; not
	 * the /proc/PID directory itself, which keeps the process's uid
	 * (task_dump_owner(), fs/proc/base.c) */
	struct stat st;
	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	if (stat(path, &st) == 0 && f.target_uid[1] != 0) {
		f.target_dumpable_known = true;
		f.target_dumpable = st.st_uid == f.target_uid[1];
	}

	ret->cause = psvc_eperm_decide(&f);
	ret->tracer_pid = f.tracer_pid;
	ret->yama_scope = f.yama_scope;
	ret->target_uid = f.target_uid[1];
	if (f.tracer_pid > 0) {
		snprintf(path, sizeof path, "/proc/%d/comm", (int)f.tracer_pid);
		size_t len;
		if (psvc_read_file_at(AT_FDCWD, path, ret->tracer_comm,
				 sizeof ret->tracer_comm, &len) == 0 && len &&
		    ret->tracer_comm[len - 1] == '\n')
			ret->tracer_comm[len - 1] = '\0';
	}
}
