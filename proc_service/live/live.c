/*
 * live.c: the live backend: a running process reached with ptrace,
 * process_vm_readv and /proc (live.h lists its files).  Here: opening a
 * process (psvc_open), the ops table the rest of proc_service calls, the
 * scan of its tasks, and closing.
 */
#include "live.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- scan ------------------------------------------------------------------------ */

static int scan_one(struct psvc_target *t, pid_t tid, void *arg)
{
	(void)arg;
	return psvc_task_add(t, tid) ? 0 : -ENOMEM;
}

/*
 * Reading the /proc facts is the whole cost of a scan: four files per task
 * (stat, status, syscall, wchan), ~40 us of kernel time each task, 0.4 s
 * at 10000 tasks.  Only the syscall line can be left to the registers the
 * stop reads (a lean scan, below); the rest describe the thread before
 * the stop (status alone has the full signal masks: stat's fields 31-34
 * stop at signal 31).  Tasks are independent, so a large task list is
 * read by a few threads at once.
 * They only read /proc, write their own tasks' info, block every signal
 * and are joined before the scan returns: nothing is traced yet, and the
 * thread that will trace is this one.
 */
#define SCAN_PARALLEL_MIN 256	/* tasks; below, a thread is not worth it */
#define SCAN_MAX_THREADS 4
#define SCAN_CHUNK 32		/* tasks taken at a time by a reader */
/* A lean scan (psvc_scan_lean) reads /proc/TID/syscall of about this many
 * tasks, evenly spread: what the stop will copy of the stacks is told from
 * their stack pointers (dbs_expected_copy_bytes); the other tasks' system
 * calls come from their registers.  A quarter of the scan's system calls
 * fewer, and a fifth of its CPU time. */
#define SCAN_SYSCALL_SAMPLE 64

struct scan_job {
	struct psvc_target *t;
	size_t syscall_every;	/* read /proc/TID/syscall of task i if
				 * i % syscall_every == 0 */
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
			if (psvc_taskinfo_read_some_at(psvc_live(t)->task_dirfd, k->tid, &k->info,
						       i % j->syscall_every == 0) == 0)
				k->info.before_stop = true;
		}
	}
}

static void scan_read_all(struct psvc_target *t, bool lean)
{
	struct scan_job j = { .t = t, .syscall_every = 1 };
	if (lean && t->arch && !t->arch->syscall_needs_hint &&
	    t->ntasks > SCAN_SYSCALL_SAMPLE)
		j.syscall_every = t->ntasks / SCAN_SYSCALL_SAMPLE;
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
	/* what a read could wait on, while the readers read the tasks: read
	 * afresh for this capture, now unless it will likely be nonblocking
	 * as the last one was (it reads smaps only if a read fails; a stop
	 * reads it before its first seizure if it was not read here) */
	psvc_live_uffd_forget(t);
	if (!t->last_nonblocking)
		psvc_live_uffd_ensure(t);
	scan_reader(&j);
	for (size_t i = 0; i < nth; i++)
		pthread_join(th[i], NULL);
}

static int live_scan(struct psvc_target *t, bool lean)
{
	/* last capture's stragglers first, whatever follows */
	psvc_release_stragglers(t);
	psvc_live_choose_mm(t);
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
	scan_read_all(t, lean);
	return (int)t->ntasks;
}

/* ---- open, close ----------------------------------------------------------------- */

static void live_close(struct psvc_target *t)
{
	struct psvc_live *L = psvc_live(t);
	if (!L)
		return;
	psvc_live_follow_end(t);
	psvc_files_close(t);	/* the file helper ends with its socket */
	psvc_release_stragglers(t);
	psvc_wake_timer_delete(t);
	free(L->stragglers);
	free(L->uffd);
	if (L->mem_fd >= 0)
		close(L->mem_fd);
	if (L->task_dirfd >= 0)
		close(L->task_dirfd);
	free(L);
	t->backend_data = NULL;
}

static const struct psvc_backend live_backend = {
	.name = "live",
	.close = live_close,
	.scan = live_scan,
	.stop = psvc_live_stop,
	.observe = psvc_live_observe,
	.observe_end = psvc_live_observe_end,
	.resume = psvc_live_resume,
	.tracer_exited = psvc_live_tracer_exited,
	.regs = psvc_live_regs,
	.regs_all = psvc_live_regs_all,
	.fpregs = psvc_live_fpregs,
	.task_facts = psvc_live_task_facts,
	.follow_start = psvc_live_follow_start,
	.follow_wait = psvc_live_follow_wait,
	.follow_service = psvc_live_follow_service,
	.follow_resolve = psvc_live_follow_resolve,
	.follow_end = psvc_live_follow_end,
	.followed = psvc_live_followed,
	.alive = psvc_live_alive,
	.read = psvc_live_read,
	.read_runs = psvc_live_read_runs,
	.mem_hazard = psvc_live_mem_hazard,
	.maps = psvc_live_maps,
	.open_mapped = psvc_live_open_mapped,
	.root_dir = psvc_live_root_dir,
	.same_ns = psvc_live_same_ns,
	.stack_rlimit = psvc_live_stack_rlimit,
};

int psvc_open(pid_t pid, const struct psvc_open_opts *opts,
	      struct psvc_target **ret)
{
	char path[64];
	if (pid <= 0)
		return -ESRCH;
	struct psvc_live *L = calloc(1, sizeof *L);
	if (!L)
		return -ENOMEM;
	L->mm_tid = pid;
	L->mem_fd = -1;
	L->use_proc_mem = opts && opts->force_proc_mem;
	L->no_map_files = opts && opts->no_map_files;
	snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
	L->task_dirfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (L->task_dirfd < 0) {
		int err = errno == ENOENT ? -ESRCH : -errno;
		free(L);
		return err;
	}
	struct psvc_target *t = psvc_target_new(&live_backend, L, pid, arch_host(),
						opts ? opts->holding : NULL);
	if (!t) {
		close(L->task_dirfd);
		free(L);
		return -ENOMEM;
	}
	t->cancel = opts ? opts->cancel : NULL;
	/* a straggler that stops while a file is awaited is let go then */
	t->files_release = psvc_release_stragglers;

	struct psvc_taskinfo ti;
	int err = psvc_taskinfo_read_at(L->task_dirfd, pid, &ti);
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
		psvc_live_choose_mm(t);

	int exe_class;
	unsigned exe_machine;
	err = psvc_live_exe_ident(t, &exe_class, &exe_machine);
	if (err == -ENOENT) {
		/* no executable: a kernel thread, or a process that exited
		 * since it was looked at (a program that ends at once after
		 * an execve a watch follows) */
		int e = psvc_taskinfo_read_at(L->task_dirfd, pid, &ti);
		bool gone = e == -ESRCH ||
			    (!e && (ti.exiting || ti.state == 'Z' || ti.state == 'X'));
		psvc_close(t);
		return gone ? -ESRCH : -ENOEXEC;
	}
	if (!err && (exe_class != ELFCLASS64 ||
		     exe_machine != t->arch->elf_machine)) {
		psvc_close(t);
		return -ENOEXEC;
	}
	/* -EACCES here means another user's process: stopping it will fail
	 * with EPERM, which is diagnosed there. */
	psvc_live_read_facts(t);
	*ret = t;
	return 0;
}
