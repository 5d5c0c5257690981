/*
 * procfs.c: /proc text: reading a /proc file, and what it says about a task
 * (stat, status, syscall, wchan) and about an address space (maps).  The
 * live backend reads through it; the parsers are pure and unit-tested.
 * /proc text is untrusted input like everything else about the target: a
 * thread name may hold ')' or newlines, so stat is split at the *last* ')',
 * and every field is parsed with bounds.
 */
#include "psvc_int.h"

#include "array.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <unistd.h>

int psvc_read_file_at(int dirfd, const char *path, char *buf, size_t cap,
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

int psvc_read_whole_file(const char *path, char **ret, size_t *ret_len,
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

/*
 * The parsers below run once per task per capture, 10000 times for a
 * 10000-thread target before it is stopped: they walk the text once,
 * without a strtok()/strcmp() per line or a strtoll() per field (status
 * took ~5 us to parse that way, stat ~1.5 us, of ~40 us per task).
 */

/* A decimal number at *pp ("-12", "345"), *pp moved past it; false if
 * there is none.  The kernel prints some fields signed, some unsigned
 * (CPU times): the bits are kept either way, more than 64 saturate. */
static bool dec_field(const char **pp, long long *ret)
{
	const char *p = *pp;
	bool neg = *p == '-';
	if (*p == '-' || *p == '+')
		p++;
	if (*p < '0' || *p > '9')
		return false;
	unsigned long long v = 0;
	for (; *p >= '0' && *p <= '9'; p++) {
		unsigned d = (unsigned)(*p - '0');
		v = v > (ULLONG_MAX - d) / 10 ? ULLONG_MAX : v * 10 + d;
	}
	*ret = (long long)(neg ? 0 - v : v);
	*pp = p;
	return true;
}

bool psvc_parse_stat(const char *buf, size_t len, struct psvc_taskinfo *ti)
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

	/* Fields from 3 (state) on, space separated; the text after the
	 * last ')' is the kernel's, the NUL at len ends it. */
	const char *p = rp + 1;
	long long f[42] = { 0 };
	char state = '?';
	for (int field = 3; field <= 41 && *p; field++) {
		while (*p == ' ')
			p++;
		if (!*p)
			break;
		if (field == 3)
			state = *p;
		else if (!dec_field(&p, &f[field]))
			return false;
		while (*p && *p != ' ')
			p++;
	}
	ti->state = state;
	ti->ppid = (pid_t)f[4];
	/* PF_KTHREAD (include/linux/sched.h): the one sign of a kernel
	 * thread that any user can read (its exe and maps are not) */
	ti->kthread = (uint64_t)f[9] & 0x00200000u;
	/* PF_EXITING: in do_exit(), its memory about to go or gone */
	ti->exiting = (uint64_t)f[9] & 0x00000004u;
	ti->utime_ticks = (uint64_t)f[14];
	ti->stime_ticks = (uint64_t)f[15];
	ti->priority = (long)f[18];
	ti->nice = (long)f[19];
	ti->processor = (int)f[39];
	ti->rt_priority = (unsigned)f[40];
	ti->policy = (unsigned)f[41];
	return true;
}

/* A hex mask of n bytes ("0000000000000200"); wider than 64 bits (not on
 * Linux, whose real-time signals stop at 64) is cut to the low 64. */
static uint64_t parse_hex_mask(const char *s, size_t n)
{
	size_t k = 0;
	while (k < n && isxdigit((unsigned char)s[k]))
		k++;
	uint64_t v = 0;
	for (size_t i = k > 16 ? k - 16 : 0; i < k; i++) {
		unsigned c = (unsigned char)s[i];
		v = v << 4 | (c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10);
	}
	return v;
}

/* A PID in decimal at the start of s[0..n); 0 if there is none or it is
 * beyond any PID (the kernel never writes one; a fuzzer did). */
static pid_t pid_prefix(const char *s, size_t n)
{
	long v = 0;
	for (size_t i = 0; i < n && s[i] >= '0' && s[i] <= '9'; i++) {
		v = v * 10 + (s[i] - '0');
		if (v > INT_MAX)
			return 0;
	}
	return (pid_t)v;
}

/* One "Key:\tvalue" line of status; value is v[0..n). */
static void status_line(const char *key, size_t klen, const char *v, size_t n,
			struct psvc_taskinfo *ti)
{
#define KEY_IS(lit) (klen == sizeof(lit) - 1 && !memcmp(key, lit, sizeof(lit) - 1))
	switch (key[0]) {
	case 'S':
		if (KEY_IS("SigBlk"))
			ti->sigblk = parse_hex_mask(v, n);
		else if (KEY_IS("SigPnd"))
			ti->sigpnd = parse_hex_mask(v, n);
		else if (KEY_IS("ShdPnd"))
			ti->shdpnd = parse_hex_mask(v, n);
		break;
	case 'T':
		if (KEY_IS("TracerPid"))
			ti->tracer_pid = pid_prefix(v, n);
		break;
	case 'N':
		if (KEY_IS("NSpid")) {
			/* "outer ... inner": the last one is the TID as the
			 * target's own namespace sees it */
			size_t i = n, e;
			while (i > 0 && (v[i - 1] == ' ' || v[i - 1] == '\t'))
				i--;
			e = i;
			while (i > 0 && v[i - 1] != ' ' && v[i - 1] != '\t')
				i--;
			if (e > i)
				ti->ns_tid = pid_prefix(v + i, e - i);
		}
		break;
	case 'v':
	case 'n':
		if (KEY_IS("voluntary_ctxt_switches") ||
		    KEY_IS("nonvoluntary_ctxt_switches")) {
			uint64_t c = 0;
			size_t i = 0;
			while (i < n && v[i] >= '0' && v[i] <= '9' && c < UINT64_MAX / 20)
				c = c * 10 + (uint64_t)(v[i++] - '0');
			ti->ctxt_switches += c;
			if (key[0] == 'v')
				ti->vol_ctxt_switches = c;
			ti->ctxt_lines++;
		}
		break;
	case 'C':
		if (KEY_IS("Cpus_allowed_list")) {
			if (n >= sizeof ti->cpus_allowed) {
				n = sizeof ti->cpus_allowed - 4;
				memcpy(ti->cpus_allowed, v, n);
				memcpy(ti->cpus_allowed + n, "...", 4);
			} else {
				memcpy(ti->cpus_allowed, v, n);
				ti->cpus_allowed[n] = '\0';
			}
		}
		break;
	}
#undef KEY_IS
}

void psvc_parse_status(const char *buf, size_t len, struct psvc_taskinfo *ti)
{
	const char *end = buf + len;
	for (const char *line = buf; line < end;) {
		const char *nl = memchr(line, '\n', (size_t)(end - line));
		const char *eol = nl ? nl : end;
		const char *colon = memchr(line, ':', (size_t)(eol - line));
		if (colon && colon > line) {
			const char *v = colon + 1;
			while (v < eol && (*v == '\t' || *v == ' '))
				v++;
			status_line(line, (size_t)(colon - line), v, (size_t)(eol - v), ti);
		}
		line = eol + 1;
	}
}

void psvc_parse_syscall(const char *buf, struct psvc_taskinfo *ti)
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

/* ---- /proc/PID/maps ---------------------------------------------------------- */

#define MAX_MAPS (1u << 20)

void psvc_maps_unescape(char *path)
{
	char *w = path;
	for (const char *r = path; *r;) {
		if (r[0] == '\\' && r[1] == '0' && r[2] == '1' && r[3] == '2') {
			*w++ = '\n';
			r += 4;
		} else {
			*w++ = *r++;
		}
	}
	*w = '\0';
}

int psvc_maps_parse(char *buf, struct psvc_mapping **ret, size_t *ret_n)
{
	int err = 0;
	size_t n = 0, cap = 0;
	struct psvc_mapping *m = NULL;
	char *save = NULL;
	for (char *line = strtok_r(buf, "\n", &save); line && n < MAX_MAPS;
	     line = strtok_r(NULL, "\n", &save)) {
		unsigned long long start, end, off, ino;
		unsigned maj, min;
		char perms[8];
		int pos = 0;
		if (sscanf(line, "%llx-%llx %7s %llx %x:%x %llu %n", &start, &end,
			   perms, &off, &maj, &min, &ino, &pos) < 7)
			continue;
		if (array_grow(&m, &cap, n + 1, sizeof *m, 256)) {
			err = -ENOMEM;
			break;
		}
		struct psvc_mapping *mp = &m[n++];
		memset(mp, 0, sizeof *mp);
		mp->start = start;
		mp->end = end;
		mp->offset = off;
		mp->dev = makedev(maj, min);
		mp->ino = (ino_t)ino;
		/* "r-xp"; a shorter field is copied up to its NUL only */
		size_t pl = strnlen(perms, 4);
		memcpy(mp->perms, perms, pl);
		mp->perms[pl] = '\0';
		const char *p = line + pos;
		if (*p) {
			size_t len = strlen(p);
			static const char del[] = " (deleted)";
			if (len > sizeof del - 1 &&
			    !strcmp(p + len - (sizeof del - 1), del)) {
				mp->deleted = true;
				len -= sizeof del - 1;
			}
			mp->path = strndup(p, len);
			if (mp->path)
				psvc_maps_unescape(mp->path);
		}
	}
	if (err) {
		psvc_maps_free(m, n);
		return err;
	}
	*ret = m;
	*ret_n = n;
	return 0;
}

void psvc_maps_free(struct psvc_mapping *m, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(m[i].path);
	free(m);
}

void psvc_taskinfo_read_syscall_at(int taskdir, pid_t tid,
				   struct psvc_taskinfo *ti)
{
	char path[64], buf[256];
	size_t len;
	snprintf(path, sizeof path, "%d/syscall", (int)tid);
	if (!psvc_read_file_at(taskdir, path, buf, sizeof buf, &len)) {
		ti->sc_read = true;
		psvc_parse_syscall(buf, ti);
	}
}

/* Read the facts of task tid through a directory fd on /proc/PID/task. */
int psvc_taskinfo_read_at(int taskdir, pid_t tid, struct psvc_taskinfo *ti)
{
	return psvc_taskinfo_read_some_at(taskdir, tid, ti, true);
}

int psvc_taskinfo_read_some_at(int taskdir, pid_t tid, struct psvc_taskinfo *ti,
			       bool with_syscall)
{
	char path[64], buf[8192];
	size_t len;
	int err;

	memset(ti, 0, sizeof *ti);
	ti->sc_nr = -1;
	snprintf(path, sizeof path, "%d/stat", (int)tid);
	err = psvc_read_file_at(taskdir, path, buf, sizeof buf, &len);
	if (err)
		return err == -ENOENT ? -ESRCH : err;
	ti->valid = psvc_parse_stat(buf, len, ti);

	snprintf(path, sizeof path, "%d/status", (int)tid);
	if (!psvc_read_file_at(taskdir, path, buf, sizeof buf, &len)) {
		ti->status_valid = true;
		psvc_parse_status(buf, len, ti);
	}
	if (with_syscall)
		psvc_taskinfo_read_syscall_at(taskdir, tid, ti);
	snprintf(path, sizeof path, "%d/wchan", (int)tid);
	if (!psvc_read_file_at(taskdir, path, buf, sizeof ti->wchan, &len) &&
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
	int err = psvc_taskinfo_read_at(dfd, tid, ret);
	close(dfd);
	return err;
}

