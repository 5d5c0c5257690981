/*
 * live_proc.c: what /proc says about a live process: its tasks, whether
 * it lives and still runs the program it ran at open, its auxiliary vector,
 * command line and executable, its mappings and the files behind them, its
 * namespaces and its stack limit.  All of it is read through mm_tid, the
 * leader while it lives (live.h).
 */
#include "live.h"

#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

/* ---- paths between roots ------------------------------------------------------------ */

/*
 * The paths /proc gives about another process (its maps, exe) are printed
 * by the kernel's d_path() from *our* root: a file under our root reads as
 * our path to it; a file we cannot reach (the target is in another mount
 * namespace, or we are chrooted) reads as its path from the top of the
 * mount tree it belongs to (fs/d_path.c prepend_path(): "global root").
 * readlink(/proc/PID/root) is printed the same way, so the target's own
 * path to a file is what follows its root's prefix: a target chrooted at
 * ROOT maps "ROOT/usr/lib/libc.so.6", which it knows as /usr/lib/libc.so.6,
 * and which we open as /proc/PID/root/usr/lib/libc.so.6 whether or not
 * ROOT is reachable from our root.  Read at every maps read: a process may
 * chroot while it runs.  prefix "" when the target's root is ours (or
 * cannot be told: the paths are then taken as they are).
 */
static void root_prefix(const struct psvc_live *L, char *buf, size_t len)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/root", (int)L->mm_tid);
	ssize_t n = readlink(path, buf, len - 1);
	if (n <= 0 || (size_t)n >= len - 1 || buf[0] != '/') {
		buf[0] = '\0';
		return;
	}
	buf[n] = '\0';
	if (n == 1)
		buf[0] = '\0';	/* "/": nothing to strip */
}

/* path as the target sees it, in place; false if it is not under the
 * target's root (mapped before a chroot: left as we see it). */
static bool strip_root(const char *prefix, char *path)
{
	size_t n = strlen(prefix);
	if (!n || path[0] != '/')
		return true;
	if (strncmp(path, prefix, n) != 0 || (path[n] != '/' && path[n] != '\0'))
		return false;
	if (!path[n])
		memcpy(path, "/", 2);
	else
		memmove(path, path + n, strlen(path + n) + 1);
	return true;
}

/* ---- the process ---------------------------------------------------------------- */

/* A fingerprint of the auxiliary vector: execve gives a new one (a new
 * AT_RANDOM address, AT_PHDR, AT_ENTRY... under ASLR; without ASLR the
 * same program with the same arguments may get the same bytes, and then
 * the same layout too), and nothing else changes it. */
static uint64_t auxv_fingerprint(const char *buf, size_t len)
{
	uint64_t h = 1469598103934665603ull;	/* FNV-1a */
	for (size_t i = 0; i < len; i++)
		h = (h ^ (unsigned char)buf[i]) * 1099511628211ull;
	return h;
}

bool psvc_exec_seen(const struct psvc_target *t)
{
	const struct psvc_live *L = psvc_live(t);
	char path[64], *buf;
	size_t len;
	if (L->exec_traced)
		return true;	/* following: the kernel told us */
	if (!L->auxv_hash)
		return false;
	snprintf(path, sizeof path, "/proc/%d/auxv", (int)L->mm_tid);
	if (psvc_read_whole_file(path, &buf, &len, 1 << 16))
		return false;	/* gone or unreadable: the caller finds out */
	if (len == 0) {
		/* no mm: the leader exited (pthread_exit) and is a zombie
		 * while other threads run; a process that execs always has a
		 * live leader with its vector */
		free(buf);
		return false;
	}
	uint64_t h = auxv_fingerprint(buf, len);
	free(buf);
	return h != L->auxv_hash;
}

/* At open: the executable's path, the command line, the auxiliary vector
 * (and its fingerprint, which tells a later execve). */
void psvc_live_read_facts(struct psvc_target *t)
{
	struct psvc_live *L = psvc_live(t);
	char path[64], buf[4096], *data;
	size_t len;
	snprintf(path, sizeof path, "/proc/%d/exe", (int)L->mm_tid);
	ssize_t n = readlink(path, buf, sizeof buf - 1);
	if (n > 0) {
		buf[n] = '\0';
		char prefix[PATH_MAX];
		root_prefix(L, prefix, sizeof prefix);
		strip_root(prefix, buf);
		psvc_target_set_exe(t, buf);
	}
	snprintf(path, sizeof path, "/proc/%d/cmdline", (int)L->mm_tid);
	if (psvc_read_whole_file(path, &data, &len, 1 << 20) == 0)
		psvc_target_set_cmdline(t, data, len);
	snprintf(path, sizeof path, "/proc/%d/auxv", (int)L->mm_tid);
	if (psvc_read_whole_file(path, &data, &len, 1 << 16) == 0) {
		L->auxv_hash = auxv_fingerprint(data, len);
		psvc_target_set_auxv(t, data, len);
		free(data);
	}
}

/* ELF class and machine of the running executable, from /proc/PID/exe. */
int psvc_live_exe_ident(struct psvc_target *t, int *ret_class,
			unsigned *ret_machine)
{
	char path[64];
	unsigned char eh[64];
	snprintf(path, sizeof path, "/proc/%d/exe", (int)psvc_live(t)->mm_tid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ssize_t n = pread(fd, eh, sizeof eh, 0);
	close(fd);
	if (n < 20 || memcmp(eh, ELFMAG, SELFMAG) != 0)
		return -ENOEXEC;
	*ret_class = eh[EI_CLASS];
	uint16_t mach;
	memcpy(&mach, eh + 18, 2);	/* e_machine, same offset in both */
	*ret_machine = mach;
	return 0;
}

/* The task exists and has not exited (a zombie is dead). */
static bool task_live(struct psvc_target *t, pid_t tid)
{
	struct psvc_taskinfo ti;
	return psvc_taskinfo_read_at(psvc_live(t)->task_dirfd, tid, &ti) == 0 && ti.valid &&
	       ti.state != 'Z' && ti.state != 'X';
}

static int first_live(struct psvc_target *t, pid_t tid, void *arg)
{
	if (!task_live(t, tid))
		return 0;
	*(pid_t *)arg = tid;
	return 1;	/* found: stop listing */
}

/* Keep mm_tid a live task: the leader while it lives (the common
 * case costs one stat read), else the first live thread. */
void psvc_live_choose_mm(struct psvc_target *t)
{
	struct psvc_live *L = psvc_live(t);
	if (task_live(t, L->mm_tid))
		return;
	pid_t live = 0;
	psvc_list_tids(t, first_live, &live);
	if (live)
		L->mm_tid = live;
}

static int count_live(struct psvc_target *t, pid_t tid, void *arg)
{
	if (task_live(t, tid))
		++*(int *)arg;
	return 0;
}

bool psvc_live_alive(struct psvc_target *t)
{
	int live = 0;
	count_live(t, t->pid, &live);	/* the common case: a live leader */
	if (live)
		return true;
	if (psvc_list_tids(t, count_live, &live) < 0)
		return false;
	return live > 0;
}

/* ---- tasks --------------------------------------------------------------------- */

struct linux_dirent64 {
	uint64_t d_ino;
	int64_t d_off;
	unsigned short d_reclen;
	unsigned char d_type;
	char d_name[];
};

int psvc_list_tids(struct psvc_target *t, int (*fn)(struct psvc_target *, pid_t,
					       void *), void *arg)
{
	/* A fresh descriptor each time: a directory offset would miss tasks
	 * created behind it. */
	int fd = openat(psvc_live(t)->task_dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? -ESRCH : -errno;
	char buf[32768];
	int count = 0, err = 0;
	for (;;) {
		long n = syscall(SYS_getdents64, fd, buf, sizeof buf);
		if (n < 0) {
			err = errno == ENOENT ? -ESRCH : -errno;
			break;
		}
		if (n == 0)
			break;
		for (long off = 0; off < n;) {
			struct linux_dirent64 *d = (void *)(buf + off);
			off += d->d_reclen;
			if (d->d_name[0] < '1' || d->d_name[0] > '9')
				continue;
			char *end;
			long tid = strtol(d->d_name, &end, 10);
			if (*end || tid <= 0 || tid > INT32_MAX)
				continue;
			count++;
			err = fn(t, (pid_t)tid, arg);
			if (err)
				goto out;
		}
	}
out:
	close(fd);
	return err ? err : count;
}

int psvc_ntasks_hint(pid_t pid)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
	DIR *d = opendir(path);
	if (!d)
		return 0;
	int n = 0;
	struct dirent *de;
	while ((de = readdir(d)))
		if (de->d_name[0] >= '1' && de->d_name[0] <= '9')
			n++;
	closedir(d);
	return n;
}

/* ---- the address space and its files ---------------------------------------------- */

int psvc_live_maps(struct psvc_target *t, struct psvc_mapping **ret,
		   size_t *ret_n)
{
	char path[64], *buf;
	size_t len;
	snprintf(path, sizeof path, "/proc/%d/maps", (int)psvc_live(t)->mm_tid);
	int err = psvc_read_whole_file(path, &buf, &len, 256u << 20);
	if (err)
		return err == -ENOENT ? -ESRCH : err;
	err = psvc_maps_parse(buf, ret, ret_n);
	free(buf);
	if (err)
		return err;
	char prefix[PATH_MAX];
	root_prefix(psvc_live(t), prefix, sizeof prefix);
	for (size_t i = 0; prefix[0] && i < *ret_n; i++)
		if ((*ret)[i].path)
			strip_root(prefix, (*ret)[i].path);
	return 0;
}

/* A new descriptor on the module's file: the mapped inode itself through
 * map_files (right even if the file was replaced or deleted on disk), else
 * its path in the target's mount namespace; *ret_by_path says which, and
 * then the caller must check it is the mapped file (modfiles.c). */
int psvc_live_open_mapped(struct psvc_target *t, const struct psvc_module *m,
			  bool *ret_by_path, struct stat *ret_st)
{
	const struct psvc_live *L = psvc_live(t);
	char path[4200];
	struct psvc_fileinfo fi;
	*ret_by_path = false;
	int fd = -EACCES;
	/* the target's files: by a worker, within a bound (fileworker.c),
	 * and only regular files, opened without blocking (regfile.c) */
	if (!L->no_map_files) {
		snprintf(path, sizeof path, "/proc/%d/map_files/%" PRIx64 "-%" PRIx64,
			 (int)L->mm_tid, m->map_start, m->map_end);
		fd = psvc_file_open(t, path, &fi);
		if (fd >= 0)
			*ret_st = fi.st;
		if (fd >= 0 || fd == -EMFILE || fd == -ENFILE || fd == -EAGAIN ||
		    fd == -EINTR || fd == -ETIMEDOUT || fd == -ECHILD)
			return fd;
	}
	if (!m->path || (m->flags & PSVC_MOD_DELETED))
		return fd;
	/* a path the target's user may own */
	if (snprintf(path, sizeof path, "/proc/%d/root%s", (int)L->mm_tid,
		     m->path) >= (int)sizeof path)
		return -ENAMETOOLONG;
	fd = psvc_file_open(t, path, &fi);
	if (fd >= 0) {
		*ret_st = fi.st;
		*ret_by_path = true;
	}
	return fd;
}

int psvc_live_same_ns(struct psvc_target *t, const char *ns)
{
	char self[64], path[64], mine[64], theirs[64];
	snprintf(self, sizeof self, "/proc/self/ns/%s", ns);
	snprintf(path, sizeof path, "/proc/%d/ns/%s", (int)psvc_live(t)->mm_tid, ns);
	ssize_t a = readlink(self, mine, sizeof mine - 1);
	ssize_t b = readlink(path, theirs, sizeof theirs - 1);
	if (a <= 0 || b <= 0)
		return -1;	/* no ns links (old kernel, no permission) */
	return a == b && memcmp(mine, theirs, (size_t)a) == 0;
}

int psvc_live_root_dir(struct psvc_target *t, char *buf, size_t len)
{
	if (snprintf(buf, len, "/proc/%d/root", (int)psvc_live(t)->mm_tid) >= (int)len)
		return -ENAMETOOLONG;
	return 0;
}

int psvc_live_task_facts(struct psvc_target *t, pid_t tid,
			 struct psvc_taskinfo *ret)
{
	return psvc_taskinfo_read_at(psvc_live(t)->task_dirfd, tid, ret);
}

int psvc_live_stack_rlimit(struct psvc_target *t, uint64_t *ret_bytes)
{
	char path[64], buf[4096];
	snprintf(path, sizeof path, "/proc/%d/limits", (int)psvc_live(t)->mm_tid);
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
