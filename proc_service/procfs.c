/*
 * procfs.c: the /proc facts of a task (stat, status, syscall, wchan).
 * /proc text is untrusted input like everything else about the target: a
 * thread name may hold ')' or newlines, so stat is split at the *last* ')',
 * and every field is parsed with bounds.
 */
#include "psvc_int.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int read_file_at(int dirfd, const char *path, char *buf, size_t cap,
		 size_t *ret_len)
{
	int fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	size_t len = 0;
	while (len + 1 < cap) {
		size_t want = cap - 1 - len;
		ssize_t n = read(fd, buf + len, want);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			int err = -errno;
			close(fd);
			return err;
		}
		if (n == 0)
			break;
		len += (size_t)n;
		/* A /proc file is generated whole at the first read and
		 * handed out as far as the buffer goes (seq_read_iter(),
		 * fs/seq_file.c; sysctls likewise): a read that leaves room
		 * was the end.  This saves the read that would return 0, one
		 * syscall per file, four per task in a scan. */
		if ((size_t)n < want)
			break;
	}
	close(fd);
	buf[len] = '\0';
	if (ret_len)
		*ret_len = len;
	return 0;
}

int read_whole_file(const char *path, char **ret, size_t *ret_len,
		    size_t limit)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	size_t cap = 4096, len = 0;
	char *buf = malloc(cap);
	int err = 0;
	while (buf) {
		if (len + 1 >= cap) {
			if (cap >= limit) {
				err = -EFBIG;
				break;
			}
			char *nb = realloc(buf, cap * 2);
			if (!nb) {
				err = -ENOMEM;
				break;
			}
			buf = nb;
			cap *= 2;
		}
		ssize_t n = read(fd, buf + len, cap - 1 - len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			err = -errno;
			break;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	if (!buf)
		return -ENOMEM;
	if (err) {
		free(buf);
		return err;
	}
	buf[len] = '\0';
	*ret = buf;
	if (ret_len)
		*ret_len = len;
	return 0;
}

/* Parse the fields of /proc/TID/stat we use. */
static bool parse_stat(const char *buf, size_t len, struct psvc_taskinfo *ti)
{
	const char *lp = memchr(buf, '(', len);
	const char *rp = NULL;
	for (const char *p = buf + len; p > buf; p--)
		if (p[-1] == ')') {
			rp = p - 1;
			break;
		}
	if (!lp || !rp || rp < lp)
		return false;
	size_t n = (size_t)(rp - lp - 1);
	if (n >= sizeof ti->comm)
		n = sizeof ti->comm - 1;
	memcpy(ti->comm, lp + 1, n);
	ti->comm[n] = '\0';
	ti->comm_len = strnlen(ti->comm, n);

	/* Fields from 3 (state) on, space separated. */
	const char *p = rp + 1;
	unsigned long long f[42] = { 0 };
	char state = '?';
	for (int field = 3; field <= 41 && *p; field++) {
		while (*p == ' ')
			p++;
		if (!*p)
			break;
		if (field == 3) {
			state = *p;
		} else {
			char *end;
			errno = 0;
			long long v = strtoll(p, &end, 10);
			if (end == p)
				return false;
			f[field] = (unsigned long long)v;
		}
		while (*p && *p != ' ')
			p++;
	}
	ti->state = state;
	ti->utime_ticks = f[14];
	ti->stime_ticks = f[15];
	ti->priority = (long)f[18];
	ti->nice = (long)f[19];
	ti->processor = (int)f[39];
	ti->rt_priority = (unsigned)f[40];
	ti->policy = (unsigned)f[41];
	return true;
}

static uint64_t parse_hex_mask(const char *s)
{
	/* Masks wider than 64 bits (real-time signals beyond 64 do not
	 * exist on Linux) are cut to the low 64. */
	size_t n = strspn(s, "0123456789abcdefABCDEF");
	if (n > 16)
		s += n - 16;
	return strtoull(s, NULL, 16);
}

static void parse_status(char *buf, struct psvc_taskinfo *ti)
{
	char *save = NULL;
	for (char *line = strtok_r(buf, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		char *colon = strchr(line, ':');
		if (!colon)
			continue;
		*colon = '\0';
		char *v = colon + 1;
		while (*v == '\t' || *v == ' ')
			v++;
		if (!strcmp(line, "SigBlk"))
			ti->sigblk = parse_hex_mask(v);
		else if (!strcmp(line, "SigPnd"))
			ti->sigpnd = parse_hex_mask(v);
		else if (!strcmp(line, "ShdPnd"))
			ti->shdpnd = parse_hex_mask(v);
		else if (!strcmp(line, "TracerPid"))
			ti->tracer_pid = (pid_t)strtol(v, NULL, 10);
		else if (!strcmp(line, "NSpid")) {
			/* "outer ... inner": the last one is the TID as
			 * the target's own namespace sees it. */
			char *last = v, *q = v;
			while (*q) {
				while (*q == '\t' || *q == ' ')
					q++;
				if (*q)
					last = q;
				while (*q && *q != '\t' && *q != ' ')
					q++;
			}
			ti->ns_tid = (pid_t)strtol(last, NULL, 10);
		} else if (!strcmp(line, "Cpus_allowed_list")) {
			size_t n = strlen(v);
			if (n >= sizeof ti->cpus_allowed) {
				n = sizeof ti->cpus_allowed - 4;
				memcpy(ti->cpus_allowed, v, n);
				memcpy(ti->cpus_allowed + n, "...", 4);
			} else {
				memcpy(ti->cpus_allowed, v, n + 1);
			}
		}
	}
}

static void parse_syscall(const char *buf, struct psvc_taskinfo *ti)
{
	if (!strncmp(buf, "running", 7)) {
		ti->sc_kind = PSVC_SC_RUNNING;
		return;
	}
	char *end;
	long nr = strtol(buf, &end, 10);
	if (end == buf)
		return;
	const char *p = end;
	uint64_t v[8] = { 0 };
	int n = 0;
	while (n < 8) {
		unsigned long long x = strtoull(p, &end, 16);
		if (end == p)
			break;
		v[n++] = x;
		p = end;
	}
	if (nr < 0 && n >= 2) {
		ti->sc_kind = PSVC_SC_NONE;
		ti->sc_nr = -1;
		ti->sc_sp = v[0];
		ti->sc_pc = v[1];
	} else if (nr >= 0 && n == 8) {
		ti->sc_kind = PSVC_SC_IN_SYSCALL;
		ti->sc_nr = nr;
		memcpy(ti->sc_args, v, sizeof ti->sc_args);
		ti->sc_sp = v[6];
		ti->sc_pc = v[7];
	}
}

/* Read the facts of task tid through a directory fd on /proc/PID/task. */
int taskinfo_read_at(int taskdir, pid_t tid, struct psvc_taskinfo *ti)
{
	char path[64], buf[8192];
	size_t len;
	int err;

	memset(ti, 0, sizeof *ti);
	ti->sc_nr = -1;
	snprintf(path, sizeof path, "%d/stat", (int)tid);
	err = read_file_at(taskdir, path, buf, sizeof buf, &len);
	if (err)
		return err == -ENOENT ? -ESRCH : err;
	ti->valid = parse_stat(buf, len, ti);

	snprintf(path, sizeof path, "%d/status", (int)tid);
	if (!read_file_at(taskdir, path, buf, sizeof buf, &len)) {
		ti->status_valid = true;
		parse_status(buf, ti);
	}
	snprintf(path, sizeof path, "%d/syscall", (int)tid);
	if (!read_file_at(taskdir, path, buf, 256, &len))
		parse_syscall(buf, ti);
	snprintf(path, sizeof path, "%d/wchan", (int)tid);
	if (!read_file_at(taskdir, path, buf, sizeof ti->wchan, &len) &&
	    strcmp(buf, "0") != 0) {
		/* symbol names only: keep printable ASCII */
		size_t i;
		for (i = 0; buf[i] && isgraph((unsigned char)buf[i]); i++)
			ti->wchan[i] = buf[i];
		ti->wchan[i] = '\0';
	}
	return 0;
}

int psvc_read_taskinfo(pid_t pid, pid_t tid, struct psvc_taskinfo *ret)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
	int dfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return errno == ENOENT ? -ESRCH : -errno;
	int err = taskinfo_read_at(dfd, tid, ret);
	close(dfd);
	return err;
}

int psvc_stack_rlimit(struct psvc_target *t, uint64_t *ret_bytes)
{
	char path[64], buf[4096];
	snprintf(path, sizeof path, "/proc/%d/limits", (int)t->pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? -ESRCH : -errno;
	ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return -EIO;
	buf[n] = '\0';
	/* "Max stack size            8388608              unlimited    bytes" */
	const char *p = strstr(buf, "\nMax stack size");
	if (!p)
		return -ENOENT;
	p += strlen("\nMax stack size");
	while (*p == ' ')
		p++;
	if (!strncmp(p, "unlimited", 9))
		return -ERANGE;
	char *end;
	errno = 0;
	unsigned long long v = strtoull(p, &end, 10);
	if (end == p || errno)
		return -EIO;
	*ret_bytes = v;
	return 0;
}
