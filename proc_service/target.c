/*
 * target.c: opening a process for inspection, its task list and the facts
 * read from /proc about the process as a whole (exe, cmdline, auxv).
 */
#include "psvc_int.h"

#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/* ---- process facts ------------------------------------------------------- */

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
	char path[64], *buf;
	size_t len;
	if (t->exec_traced)
		return true;	/* following: the kernel told us */
	if (!t->auxv_hash)
		return false;
	snprintf(path, sizeof path, "/proc/%d/auxv", (int)t->mm_tid);
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
	return h != t->auxv_hash;
}

static void read_auxv(struct psvc_target *t)
{
	char path[64], *buf;
	size_t len;
	snprintf(path, sizeof path, "/proc/%d/auxv", (int)t->mm_tid);
	if (psvc_read_whole_file(path, &buf, &len, 1 << 16))
		return;
	t->auxv_hash = auxv_fingerprint(buf, len);
	for (size_t off = 0; off + 16 <= len; off += 16) {
		uint64_t type, val;
		memcpy(&type, buf + off, 8);
		memcpy(&val, buf + off + 8, 8);
		switch (type) {
		case AT_PHDR: t->at_phdr = val; break;
		case AT_PHNUM: t->at_phnum = val; break;
		case AT_BASE: t->at_base = val; break;
		case AT_ENTRY: t->at_entry = val; break;
		case AT_SYSINFO_EHDR: t->at_sysinfo_ehdr = val; break;
		default: break;
		}
		if (type == AT_NULL)
			break;
	}
	free(buf);
}

static void read_cmdline(struct psvc_target *t)
{
	char path[64];
	size_t len;
	snprintf(path, sizeof path, "/proc/%d/cmdline", (int)t->mm_tid);
	if (psvc_read_whole_file(path, &t->cmdline_buf, &len, 1 << 20))
		return;
	size_t n = 0;
	for (size_t i = 0; i < len; i++)
		if (t->cmdline_buf[i] == '\0')
			n++;
	if (len && t->cmdline_buf[len - 1] != '\0')
		n++;	/* the kernel may hand back an unterminated tail */
	t->argv = calloc(n + 1, sizeof *t->argv);
	if (!t->argv)
		return;
	for (size_t i = 0; i < len && t->argc < n;) {
		t->argv[t->argc++] = t->cmdline_buf + i;
		i += strlen(t->cmdline_buf + i) + 1;
	}
}

/* ELF class and machine of the running executable, from /proc/PID/exe. */
static int read_exe_ident(struct psvc_target *t)
{
	char path[64];
	unsigned char eh[64];
	snprintf(path, sizeof path, "/proc/%d/exe", (int)t->mm_tid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ssize_t n = pread(fd, eh, sizeof eh, 0);
	close(fd);
	if (n < 20 || memcmp(eh, ELFMAG, SELFMAG) != 0)
		return -ENOEXEC;
	t->exe_class = eh[EI_CLASS];
	uint16_t mach;
	memcpy(&mach, eh + 18, 2);	/* e_machine, same offset in both */
	t->exe_machine = mach;
	return 0;
}

/* The task exists and has not exited (a zombie is dead). */
static bool task_live(struct psvc_target *t, pid_t tid)
{
	struct psvc_taskinfo ti;
	return psvc_taskinfo_read_at(t->task_dirfd, tid, &ti) == 0 && ti.valid &&
	       ti.state != 'Z' && ti.state != 'X';
}

static int first_live(struct psvc_target *t, pid_t tid, void *arg)
{
	if (!task_live(t, tid))
		return 0;
	*(pid_t *)arg = tid;
	return 1;	/* found: stop listing */
}

/* Keep t->mm_tid a live task: the leader while it lives (the common
 * case costs one stat read), else the first live thread. */
static void choose_mm_task(struct psvc_target *t)
{
	if (task_live(t, t->mm_tid))
		return;
	pid_t live = 0;
	psvc_list_tids(t, first_live, &live);
	if (live)
		t->mm_tid = live;
}

int psvc_open(pid_t pid, const struct psvc_open_opts *opts,
	      struct psvc_target **ret)
{
	char path[64];
	if (pid <= 0)
		return -ESRCH;
	struct psvc_target *t = calloc(1, sizeof *t);
	if (!t)
		return -ENOMEM;
	t->pid = t->mm_tid = pid;
	t->mem_fd = -1;
	t->arch = arch_host();
	t->use_proc_mem = opts && opts->force_proc_mem;
	t->no_map_files = opts && opts->no_map_files;
	t->holding = opts ? opts->holding : NULL;
	t->foreign_pidns = -1;
	snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
	t->task_dirfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (t->task_dirfd < 0) {
		int err = errno == ENOENT ? -ESRCH : -errno;
		free(t);
		return err;
	}

	struct psvc_taskinfo ti;
	int err = psvc_taskinfo_read_at(t->task_dirfd, pid, &ti);
	if (err == -ESRCH || (!err && (ti.state == 'Z' || ti.state == 'X') &&
			      psvc_ntasks_hint(pid) <= 1)) {
		/* A zombie whose every thread is gone is not a process to
		 * inspect any more. */
		psvc_close(t);
		return -ESRCH;
	}
	if (!err && ti.valid && ti.kthread) {
		psvc_close(t);
		return -ENOEXEC;
	}
	if (!err && (ti.state == 'Z' || ti.state == 'X'))
		choose_mm_task(t);

	err = read_exe_ident(t);
	if (err == -ENOENT) {
		/* no executable: a kernel thread (or exiting) */
		psvc_close(t);
		return -ENOEXEC;
	}
	if (!err && (t->exe_class != ELFCLASS64 ||
		     t->exe_machine != t->arch->elf_machine)) {
		psvc_close(t);
		return -ENOEXEC;
	}
	/* -EACCES here means another user's process: stopping it will fail
	 * with EPERM, which is diagnosed there. */

	snprintf(path, sizeof path, "/proc/%d/exe", (int)t->mm_tid);
	char buf[4096];
	ssize_t n = readlink(path, buf, sizeof buf - 1);
	if (n > 0) {
		buf[n] = '\0';
		t->exe_path = strdup(buf);
	}
	read_cmdline(t);
	read_auxv(t);
	*ret = t;
	return 0;
}

void psvc_close(struct psvc_target *t)
{
	if (!t)
		return;
	psvc_resume(t);
	psvc_follow_end(t);
	psvc_release_stragglers(t);
	if (t->have_wake_timer)
		timer_delete(t->wake_timer);
	psvc_cache_free(&t->cache);
	psvc_modules_free(t);
	psvc_tasks_free(t);
	free(t->stragglers);
	free(t->exe_path);
	free(t->cmdline_buf);
	free(t->argv);
	free(t->ph);
	free(t->pins);
	free(t->modmap_note);
	if (t->mem_fd >= 0)
		close(t->mem_fd);
	if (t->task_dirfd >= 0)
		close(t->task_dirfd);
	free(t);
}

pid_t psvc_pid(const struct psvc_target *t) { return t->pid; }
pid_t psvc_mm_pid(const struct psvc_target *t) { return t->mm_tid; }
const struct arch_desc *psvc_arch(const struct psvc_target *t) { return t->arch; }
int psvc_exe_class(const struct psvc_target *t) { return t->exe_class; }
unsigned psvc_exe_machine(const struct psvc_target *t) { return t->exe_machine; }
const char *psvc_exe_path(const struct psvc_target *t) { return t->exe_path; }

size_t psvc_cmdline(const struct psvc_target *t, const char *const **ret_argv)
{
	*ret_argv = t->argv;
	return t->argc;
}

static int count_live(struct psvc_target *t, pid_t tid, void *arg)
{
	if (task_live(t, tid))
		++*(int *)arg;
	return 0;
}

bool psvc_alive(struct psvc_target *t)
{
	int live = 0;
	count_live(t, t->pid, &live);	/* the common case: a live leader */
	if (live)
		return true;
	if (psvc_list_tids(t, count_live, &live) < 0)
		return false;
	return live > 0;
}

/* ---- listing tasks ---------------------------------------------------------- */

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
	int fd = openat(t->task_dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
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

/* How many tasks /proc/PID/task lists (0 if none/unreadable). */
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

static int scan_one(struct psvc_target *t, pid_t tid, void *arg)
{
	(void)arg;
	return psvc_task_add(t, tid) ? 0 : -ENOMEM;
}

/*
 * Reading the /proc facts is the whole cost of a scan: four files per task
 * (stat, status, syscall, wchan), ~40 us of kernel time each task, 0.4 s
 * at 10000 tasks.  None of it can be left out (status alone has the full
 * signal masks: stat's fields 31-34 stop at signal 31), but tasks are
 * independent, so a large task list is read by a few threads at once.
 * They only read /proc, write their own tasks' info, block every signal
 * and are joined before the scan returns: nothing is traced yet, and the
 * thread that will trace is this one.
 */
#define SCAN_PARALLEL_MIN 256	/* tasks; below, a thread is not worth it */
#define SCAN_MAX_THREADS 4
#define SCAN_CHUNK 32		/* tasks taken at a time by a reader */

struct scan_job {
	struct psvc_target *t;
	_Atomic size_t next;	/* first task nobody has taken yet */
};

static void *scan_reader(void *arg)
{
	struct scan_job *j = arg;
	struct psvc_target *t = j->t;
	for (;;) {
		size_t i = atomic_fetch_add(&j->next, SCAN_CHUNK);
		if (i >= t->ntasks)
			return NULL;
		size_t end = i + SCAN_CHUNK < t->ntasks ? i + SCAN_CHUNK : t->ntasks;
		for (; i < end; i++) {
			struct psvc_task *k = &t->tasks[i];
			if (psvc_taskinfo_read_at(t->task_dirfd, k->tid, &k->info) == 0)
				k->info.before_stop = true;
		}
	}
}

static void scan_read_all(struct psvc_target *t)
{
	struct scan_job j = { .t = t };
	atomic_init(&j.next, 0);
	pthread_t th[SCAN_MAX_THREADS - 1];
	size_t nth = 0;
	cpu_set_t cpus;
	int ncpu = sched_getaffinity(0, sizeof cpus, &cpus) == 0 ? CPU_COUNT(&cpus) : 1;
	size_t want = ncpu > SCAN_MAX_THREADS ? SCAN_MAX_THREADS : (size_t)ncpu;
	if (t->ntasks >= SCAN_PARALLEL_MIN && want > 1) {
		/* the readers inherit a full signal mask: every signal is
		 * for the thread that owns the capture */
		sigset_t all, old;
		sigfillset(&all);
		pthread_sigmask(SIG_SETMASK, &all, &old);
		while (nth < want - 1 &&
		       pthread_create(&th[nth], NULL, scan_reader, &j) == 0)
			nth++;	/* a reader that cannot start is not needed */
		pthread_sigmask(SIG_SETMASK, &old, NULL);
	}
	scan_reader(&j);
	for (size_t i = 0; i < nth; i++)
		pthread_join(th[i], NULL);
}

int psvc_scan(struct psvc_target *t)
{
	if (t->stopped)
		return -EBUSY;
	/* last capture's stragglers first, whatever follows */
	psvc_release_stragglers(t);
	choose_mm_task(t);
	/* a new program: everything known about the process is stale (its
	 * executable, modules, libthread_db's view, even its class) */
	if (psvc_exec_seen(t))
		return -ESTALE;
	/* following: let the threads held at an event stop go first, or
	 * /proc would show them traced ('t') instead of what they do */
	if (psvc_follow_drain(t) == -ESRCH)
		return -ESRCH;
	psvc_tasks_clear(t);
	int n = psvc_list_tids(t, scan_one, NULL);
	if (n < 0)
		return n;
	if (t->ntasks == 0)
		return -ESRCH;
	scan_read_all(t);
	for (size_t i = 0; i < t->ntasks; i++)
		if (t->tasks[i].info.before_stop)
			psvc_task_index_ns(t, &t->tasks[i]);
	psvc_foreign_pidns(t);	/* decided now, not during the stop */
	return (int)t->ntasks;
}
