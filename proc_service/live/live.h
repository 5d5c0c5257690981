/*
 * live.h: the live backend's own state and the functions its files share.
 * Private to proc_service/live/; the rest of proc_service reaches a live
 * process through the ops of backend.h only.
 *
 * A live process is reached with ptrace (stop, registers, resume),
 * process_vm_readv or /proc/PID/mem (memory), and /proc (tasks, their
 * facts, mappings, the files behind them).
 *
 *   live.c        psvc_open(), the ops table, close, scan
 *   live_proc.c   /proc: tasks, exec, auxv/cmdline/exe, maps, files,
 *                 namespaces, limits
 *   live_stop.c   seize, interrupt, wait, detach; stragglers
 *   live_regs.c   PTRACE_GETREGSET: registers and the thread pointer
 *   live_observe.c  a nonblocking capture: nothing held, pc and sp from
 *                 /proc/TID/syscall
 *   live_mem.c    process_vm_readv, /proc/PID/mem
 *   live_crew.c   the tracer threads of one capture: each seizes, reads
 *                 and lets go a share of the tasks
 *   live_uffd.c   the ranges a read could wait on (userfaultfd)
 *   live_timer.c  the timer that ends blocking waits
 *   follow.c      staying attached between captures
 */
#ifndef TINSPECT_PSVC_LIVE_H
#define TINSPECT_PSVC_LIVE_H

#include "psvc_int.h"

#include <sys/ptrace.h>

/* How follow mode seizes: every clone attaches the new thread to us, and
 * an execve stops the exec'ing thread once so that we know. */
#define FOLLOW_PTRACE_OPTS (PTRACE_O_TRACECLONE | PTRACE_O_TRACEEXEC)

struct follow_start {
	pid_t tid;
	uint64_t tp;		/* thread pointer at its first stop */
	uint64_t start;		/* its start routine, 0 unknown */
	bool resolved;		/* start was asked for */
};

struct follow_parent {
	pid_t child, parent;	/* parent 0: child's first stop seen first */
};

struct psvc_crew;

/* live_uffd.c: a range registered with userfaultfd (smaps VmFlags) */
enum {
	PSVC_UFFD_MISSING = 1,	/* "um" */
	PSVC_UFFD_MINOR = 2,	/* "ui" */
	PSVC_UFFD_WP = 4,	/* "uw" */
};
struct psvc_uffd_range {
	uint64_t start, end;
	unsigned modes;
};

struct psvc_live {
	/* the task whose /proc/TID files (maps, mem, auxv, exe, root, ns)
	 * and memory are read: the leader, or while the leader is a zombie
	 * (main called pthread_exit; the others run on) a live thread, as
	 * the leader has no mm then */
	pid_t mm_tid;
	int task_dirfd;		/* /proc/PID/task */
	int mem_fd;		/* /proc/PID/mem, -1 until needed */
	bool use_proc_mem;	/* process_vm_readv unusable: use mem_fd */
	bool no_map_files;	/* test hook: never use /proc/PID/map_files */
	uint64_t auxv_hash;	/* of the whole vector: moves on execve */

	/* live_uffd.c: read at every scan; not known (smaps unreadable):
	 * every read goes through /proc/PID/mem */
	struct psvc_uffd_range *uffd;
	size_t nuffd, uffd_cap;
	bool uffd_known, uffd_tried;

	/* live_timer.c */
	timer_t wake_timer;
	bool have_wake_timer;
	pid_t wake_tid;		/* the thread the timer signals */
	/* live_stop.c: seized tasks that never stopped (uninterruptible
	 * sleep): they stop when they wake and must be detached then */
	pid_t *stragglers;
	size_t nstragglers, stragglers_cap;
	/* live_crew.c: the tracer threads of the capture under way; NULL
	 * when the caller's thread is the only one */
	struct psvc_crew *crew;

	/* follow.c: attached between captures (t->follow) */
	bool exec_traced;		/* a PTRACE_EVENT_EXEC was seen: the
					 * process runs another program */
	struct psvc_tidmap followed;	/* TID -> F_* bits */
	struct follow_parent *parents;	/* clones half seen */
	size_t nparents, parents_cap;
	struct psvc_event *events;	/* not delivered yet */
	size_t nevents, events_cap;
	struct psvc_event *exits;	/* exits before their creation */
	size_t nexits, exits_cap;
	struct follow_start *starts;	/* first stops not announced yet */
	size_t nstarts, starts_cap;
};

static inline struct psvc_live *psvc_live(const struct psvc_target *t)
{
	return t->backend_data;
}

/* live_proc.c */
/* Call fn for every TID in /proc/PID/task; returns the count or the first
 * error fn returned. */
int psvc_list_tids(struct psvc_target *t,
		   int (*fn)(struct psvc_target *, pid_t, void *), void *arg);
/* How many tasks /proc/PID/task lists (0 if none/unreadable). */
int psvc_ntasks_hint(pid_t pid);
/* Keep mm_tid a live task: the leader while it lives, else the first
 * live thread. */
void psvc_live_choose_mm(struct psvc_target *t);
/* true when /proc/PID/auxv no longer matches the one read at psvc_open():
 * the process executed a new program */
bool psvc_exec_seen(const struct psvc_target *t);
/* At open: class and machine of the executable (-ENOENT: none, -ENOEXEC:
 * not ELF), and the auxv, command line and exe path. */
int psvc_live_exe_ident(struct psvc_target *t, int *ret_class,
			unsigned *ret_machine);
void psvc_live_read_facts(struct psvc_target *t);
bool psvc_live_alive(struct psvc_target *t);
int psvc_live_task_facts(struct psvc_target *t, pid_t tid,
			 struct psvc_taskinfo *ret);
int psvc_live_maps(struct psvc_target *t, struct psvc_mapping **ret,
		   size_t *ret_n);
int psvc_live_open_mapped(struct psvc_target *t, const struct psvc_module *m,
			  bool *ret_by_path, struct stat *ret_st);
int psvc_live_root_dir(struct psvc_target *t, char *buf, size_t len);
int psvc_live_same_ns(struct psvc_target *t, const char *ns);
int psvc_live_stack_rlimit(struct psvc_target *t, uint64_t *ret_bytes);

/* live_stop.c */
int psvc_live_stop(struct psvc_target *t, const struct psvc_stop_opts *opts);
void psvc_live_resume(struct psvc_target *t);
void psvc_release_stragglers(struct psvc_target *t);
void psvc_live_tracer_exited(struct psvc_target *t);

/* live_regs.c: the general registers of a stopped task and its thread
 * pointer (x86_64: fs_base, in the general registers; aarch64: TPIDR_EL0,
 * NT_ARM_TLS).  0 (tp 0 if it could not be read), or a negative errno;
 * -ENOEXEC if the registers are not the arch's layout (a 32-bit task). */
int psvc_ptrace_regs(const struct arch_desc *a, pid_t tid, uint64_t *gregs,
		     uint64_t *ret_tp);
int psvc_live_regs(struct psvc_target *t, struct psvc_task *k);
void psvc_live_regs_all(struct psvc_target *t);
int psvc_live_fpregs(struct psvc_target *t, struct psvc_task *k, void *buf,
		     size_t len);

/* live_observe.c */
int psvc_live_observe(struct psvc_target *t);
void psvc_live_observe_end(struct psvc_target *t);
/* The registers /proc/TID/syscall gave of an OBSERVED task. */
int psvc_live_observed_regs(struct psvc_target *t, struct psvc_task *k);

/* live_mem.c */
/* Open /proc/PID/mem once (L->mem_fd, kept): 0, -ESRCH (gone) or -errno. */
int psvc_live_open_mem(struct psvc_target *t);
int psvc_live_read(struct psvc_target *t, uint64_t addr, void *buf, size_t len);
void psvc_live_read_runs(struct psvc_target *t, struct psvc_run *runs,
			 size_t n);

/* live_crew.c.  A capture's tasks are shared out by index: task i is
 * traced by member i % psvc_crew_size(). */
#define PSVC_CREW_MAX 8
typedef void (*psvc_crew_fn)(struct psvc_target *t, unsigned me, void *arg);
/* How many members a capture of t's tasks gets: asked (0: one per CPU
 * this thread may run on, fewer for a small process), capped; 1 while
 * following or while an earlier capture's stragglers are held. */
unsigned psvc_crew_want(struct psvc_target *t, unsigned asked);
/* Start n - 1 helpers (fewer if they cannot be made).  Their wake timers
 * (signal wake_signal, 0: none) fire every wake_period_ns during the jobs
 * that ask for them. */
void psvc_crew_begin(struct psvc_target *t, unsigned n, int wake_signal,
		     uint64_t wake_period_ns);
/* Members of the crew under way (1: none). */
unsigned psvc_crew_size(const struct psvc_target *t);
/* fn(t, me, arg) on every member at once, the caller being member 0;
 * returns when all have finished.  wake: the helpers' wake timers run. */
void psvc_crew_run(struct psvc_target *t, psvc_crew_fn fn, void *arg, bool wake);
/* Join the helpers (the kernel lets go whatever they still trace). */
void psvc_crew_end(struct psvc_target *t);
/* live_uffd.c */
/* Read /proc/PID/smaps for the ranges registered with userfaultfd. */
int psvc_live_uffd_refresh(struct psvc_target *t);
/* A new capture: the ranges are read again when first needed ... */
void psvc_live_uffd_forget(struct psvc_target *t);
/* ... or now (if not yet for this capture). */
void psvc_live_uffd_ensure(struct psvc_target *t);
const struct psvc_uffd_range *psvc_live_uffd_find(struct psvc_target *t,
						   uint64_t addr, uint64_t len);
/* Could process_vm_readv of [addr, addr + len) wait for a fault to be
 * served?  (Then it is read through /proc/PID/mem, which never waits.) */
bool psvc_live_read_may_wait(struct psvc_target *t, uint64_t addr,
			     uint64_t len);
/* Which reads could wait: none (stopped, and no range is registered),
 * some (ask psvc_live_read_may_wait), or all (the target runs, or the
 * ranges are not known).  The first call of a capture may read smaps:
 * asked on the capture's own thread before its crew reads. */
enum psvc_uffd_scope {
	PSVC_UFFD_NONE,
	PSVC_UFFD_SOME,
	PSVC_UFFD_ALL,
};
enum psvc_uffd_scope psvc_live_uffd_scope(struct psvc_target *t);
/* The backend's mem_hazard op: why a failed read of that range failed, if
 * the range is one a read would have waited on; NULL otherwise. */
const char *psvc_live_mem_hazard(struct psvc_target *t, uint64_t addr,
				 uint64_t len);

/* live_timer.c: the one timer that ends tinspect's blocking waits */
void psvc_wake_timer_set(struct psvc_target *t, int sig, uint64_t value_ns,
			 uint64_t interval_ns, bool absolute);
void psvc_wake_timer_disarm(struct psvc_target *t);
void psvc_wake_timer_delete(struct psvc_target *t);

/* follow.c: the backend's follow ops (backend.h) */
int psvc_live_follow_start(struct psvc_target *t);
int psvc_live_follow_wait(struct psvc_target *t, uint64_t deadline_ns,
			  const volatile sig_atomic_t *cancel, int wake_signal,
			  psvc_event_fn fn, void *arg);
void psvc_live_follow_service(struct psvc_target *t);
void psvc_live_follow_resolve(struct psvc_target *t);
void psvc_live_follow_end(struct psvc_target *t);
size_t psvc_live_followed(const struct psvc_target *t);
/* Is tid attached to us already (followed, or a clone child whose clone
 * event is still to come)? */
bool psvc_follow_adopt(struct psvc_target *t, pid_t tid);
/* Handle every event already waiting (before a scan), without blocking.
 * -ESRCH once the process has exited. */
int psvc_follow_drain(struct psvc_target *t);
/* A wait status of a followed task: true if it is now stopped and must
 * be resumed by the caller (with *ret_sig, or LISTEN for a group stop). */
bool psvc_follow_status(struct psvc_target *t, pid_t tid, int st,
			bool in_capture, int *ret_sig, bool *ret_group_stop);

#endif
