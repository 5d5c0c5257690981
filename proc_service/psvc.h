/*
 * proc_service (psvc_*): everything about reaching a process.
 *
 * One struct psvc_target per inspected process.  It owns the process's task
 * list, the stop/resume sequence, memory reads with a per-stop cache, the
 * module map (r_debug/link_map cross-checked with the mappings) with ELF
 * symbol tables, and the ps_* callbacks that libthread_db calls (through
 * struct ps_prochandle, see psvc_prochandle()).  How the target is reached
 * is a backend's business (proc_service/backend.h): a live process
 * (psvc_open(): ptrace, process_vm_readv, /proc) or a core file
 * (psvc_open_core());
 * nothing declared here depends on which.
 *
 * Errors are negative errno values.  The meanings callers rely on:
 *   -ESRCH      the process (or a task) does not exist / vanished
 *   -EPERM      ptrace refused; psvc_diagnose_eperm() says why
 *   -ENOEXEC    the target is of an architecture or class we cannot read
 *   -ETIMEDOUT  the freeze limit was exceeded; everything was resumed
 *   -EINTR      the caller's cancel flag was raised; everything was resumed
 *   -ESTALE     the process executed a new program since psvc_open()
 * Nothing here prints or exits: that is agent/'s job.
 */
#ifndef TINSPECT_PSVC_H
#define TINSPECT_PSVC_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "arch.h"

struct psvc_target;
struct ps_prochandle;

/* ---- /proc facts of one task ------------------------------------------ */

/* What /proc/TID/syscall said. */
enum psvc_sc_kind {
	PSVC_SC_UNKNOWN = 0,	/* not read or unparsable */
	PSVC_SC_RUNNING,	/* "running": on a CPU, no syscall to show */
	PSVC_SC_NONE,		/* "-1 sp pc": blocked outside a syscall */
	PSVC_SC_IN_SYSCALL,	/* "nr a0..a5 sp pc" */
};

struct psvc_taskinfo {
	bool valid;		/* stat was read */
	bool before_stop;	/* read before the stop (else after resume) */
	char comm[64];		/* raw bytes from stat, NUL-terminated */
	size_t comm_len;	/* may contain any byte but NUL */
	char state;		/* R S D T t Z X I P W K ... */
	pid_t ppid;		/* parent process */
	bool kthread;		/* a kernel thread (PF_KTHREAD in the flags) */
	bool exiting;		/* exiting (PF_EXITING in the flags) */
	uint64_t utime_ticks, stime_ticks;
	long priority, nice;
	unsigned rt_priority, policy;
	int processor;
	char wchan[64];		/* "" if 0 or unreadable */
	bool status_valid;
	uint64_t sigblk, sigpnd, shdpnd;
	char cpus_allowed[128];	/* "0-3,8"; truncated lists end in "..." */
	pid_t tracer_pid;
	pid_t ns_tid;		/* last NSpid field (TID in the target's own
				 * PID namespace); 0 if unknown */
	/* /proc/TID/syscall was read (psvc_scan_lean() leaves most of it
	 * to the registers at the stop); sc_* below come from it */
	bool sc_read;
	enum psvc_sc_kind sc_kind;
	long sc_nr;
	uint64_t sc_args[6];
	uint64_t sc_sp, sc_pc;
	/* status: voluntary_ctxt_switches + nonvoluntary_ctxt_switches, the
	 * times it left a CPU (dbsession/locks/waits.c: a thread that woke up
	 * between two updates has more than the updates' own) */
	uint64_t ctxt_switches;
	/* the voluntary ones alone: the times it blocked (a preemption is
	 * no sign that it left a wait) */
	uint64_t vol_ctxt_switches;
	unsigned ctxt_lines;	/* how many of the two lines were read */
};

/* Read the facts of one task (any task of any process).  Returns 0 or
 * -ESRCH if it vanished; partial results are marked by the valid flags. */
int psvc_read_taskinfo(pid_t pid, pid_t tid, struct psvc_taskinfo *ret);
/* The parsers (pure, unit-tested): the text of /proc/TID/stat (buf[len]
 * must be NUL) into comm, state, CPU times, scheduling; false if it is not
 * a stat line.  The text of /proc/TID/status into the signal masks,
 * TracerPid, NSpid and Cpus_allowed_list; lines it does not have leave
 * their fields as they were. */
bool psvc_parse_stat(const char *buf, size_t len, struct psvc_taskinfo *ti);
void psvc_parse_status(const char *buf, size_t len, struct psvc_taskinfo *ti);
/* The text of /proc/TID/syscall (NUL-terminated) into the sc_* fields;
 * text it cannot read leaves sc_kind as it was. */
void psvc_parse_syscall(const char *buf, struct psvc_taskinfo *ti);

/* ---- the target and its tasks ----------------------------------------- */

enum psvc_task_flags {
	PSVC_TASK_SEIZED = 1u << 0,	/* we are its tracer */
	PSVC_TASK_STOPPED = 1u << 1,	/* it reported a stop to us */
	PSVC_TASK_GONE = 1u << 2,	/* it exited while we worked */
	PSVC_TASK_LATE = 1u << 3,	/* found by a rescan during the stop */
	PSVC_TASK_STRAGGLER = 1u << 4,	/* did not stop within the timeout */
	PSVC_TASK_HAVE_REGS = 1u << 5,	/* gregs[] and tp are valid */
	PSVC_TASK_JOBCTL = 1u << 6,	/* was in a job-control stop */
	PSVC_TASK_CAPTURED = 1u << 7,	/* was stopped in this capture (kept
					 * after the resume, unlike STOPPED) */
	PSVC_TASK_OBSERVED = 1u << 8,	/* nonblocking capture: blocked, its
					 * pc and sp from /proc, never held */
	PSVC_TASK_MOVED = 1u << 9,	/* observed, but it may have run
					 * while its memory was copied */
	PSVC_TASK_QUIET = 1u << 10,	/* seized, not interrupted yet */
};

struct psvc_task {
	pid_t tid;		/* as tinspect (and ptrace) sees it */
	unsigned flags;		/* enum psvc_task_flags */
	int seize_errno;	/* why SEIZE failed, 0 if it did not */
	int regs_errno;		/* why GETREGSET failed */
	int resume_sig;		/* signal to hand back on detach */
	uint64_t gregs[ARCH_MAX_GREGS];
	uint64_t tp;		/* thread pointer (x86_64 fs_base) */
	uint64_t t_interrupted;	/* live: when it was asked to stop */
	struct psvc_taskinfo info;
};

struct psvc_open_opts {
	/* Read memory through /proc/PID/mem only (the fallback path). */
	bool force_proc_mem;
	/* Never open ELF files through /proc/PID/map_files (what a tracer
	 * without CAP_SYS_ADMIN / CAP_CHECKPOINT_RESTORE gets); for tests of
	 * the /proc/PID/root path. */
	bool no_map_files;
	/* May be NULL.  Raised while tinspect holds any task of the target:
	 * 2 and up from the start of psvc_stop() to the end of psvc_resume()
	 * (a value that changes at every stop), 1 while following between
	 * captures.  Lowered (0) otherwise: then nothing is stopped by
	 * tinspect, and a signal handler may end the program at once (the
	 * kernel detaches whatever is still seized). */
	volatile sig_atomic_t *holding;
	/* May be NULL.  Raised by the caller's signal handler: waits for
	 * files (psvc_file_open) give up, as captures do (psvc_stop_opts). */
	const volatile sig_atomic_t *cancel;
};

/*
 * Open a process for inspection without stopping it: checks it exists and
 * is of the host's architecture and class, reads its auxv.  Returns 0 and
 * *ret, or -ESRCH, -EACCES (cannot read its /proc), -ENOEXEC.
 */
int psvc_open(pid_t pid, const struct psvc_open_opts *opts,
	      struct psvc_target **ret);
/* Resumes anything still stopped, frees everything.  NULL is fine. */
void psvc_close(struct psvc_target *t);

struct psvc_core_open_opts {
	/* The directory the core's file paths (NT_FILE) are looked up
	 * under; NULL or "/": the host's root. */
	const char *sysroot;
	/* The executable, wherever it is now (deleted, moved); NULL: its
	 * NT_FILE path under sysroot. */
	const char *exe;
	/* As psvc_open_opts.holding (a core is never held: stays 0). */
	volatile sig_atomic_t *holding;
	/* As psvc_open_opts.cancel. */
	const volatile sig_atomic_t *cancel;
};

/*
 * Open a core file (plain, or compressed by zstd, xz or lz4) as a target
 * (core_backend.c): its threads, registers and memory are the core's, the
 * files behind its mappings are found under opts->sysroot and accepted
 * only with the build-id the core has.  0 and *ret, or a negative errno
 * and why[] says what: -ENOEXEC (not a core, or of another architecture),
 * -EBADMSG (too damaged to use), -EOPNOTSUPP, -EIO, -ENOMEM, open(2)'s.
 */
int psvc_open_core(const char *path, const struct psvc_core_open_opts *opts,
		   struct psvc_target **ret, char *why, size_t whylen);

/* "live", "core": which backend reaches the target. */
const char *psvc_backend_name(const struct psvc_target *t);
/* Warnings about the whole target (files refused by build-id, damage in a
 * core), in the order they arose. */
size_t psvc_nwarnings(const struct psvc_target *t);
const char *psvc_warning_at(const struct psvc_target *t, size_t i);

/* The signal that ended the process (a core file's), and its thread. */
struct psvc_signal_info {
	pid_t tid;		/* the thread that took it */
	int signo;
	bool have_siginfo;	/* the rest is from its siginfo_t */
	int code, err;		/* si_code, si_errno */
	bool have_addr;		/* si_addr: a fault's address */
	uint64_t addr;
	bool have_sender;	/* sent by kill/tkill/sigqueue */
	pid_t sender_pid;
	uint32_t sender_uid;
};
/* 0 and *ret, or -ENODATA (a live process; a core that names none). */
int psvc_signal_info(struct psvc_target *t, struct psvc_signal_info *ret);

pid_t psvc_pid(const struct psvc_target *t);
const struct arch_desc *psvc_arch(const struct psvc_target *t);
/* The directory that is the target's "/" (its mount namespace: the place
 * of the files it names), e.g. "/proc/PID/root", into buf.  0 or
 * -ENAMETOOLONG. */
int psvc_root_dir(struct psvc_target *t, char *buf, size_t len);

/* Whether any task of the process is still alive (not gone, not zombie):
 * false once it has exited, even before its parent reaps it. */
bool psvc_alive(struct psvc_target *t);

/* Tasks of the current capture, in the order they were found. */
size_t psvc_ntasks(const struct psvc_target *t);
struct psvc_task *psvc_task_at(struct psvc_target *t, size_t i);
/* NULL if tid is not a task of this capture. */
struct psvc_task *psvc_task_by_tid(struct psvc_target *t, pid_t tid);

/*
 * Start a capture: forget the previous task list, list /proc/PID/task and
 * read each task's /proc facts while the process still runs (a stopped
 * task's state, wchan and syscall describe the stop, not the thread).
 * Returns the number of tasks, or -ESRCH.
 */
int psvc_scan(struct psvc_target *t);
/*
 * psvc_scan() for a capture that stops the target and reads the registers
 * of every task it holds: where those registers say which system call a
 * thread is in (arch syscall_needs_hint false), /proc/TID/syscall is read
 * for an even sample of the tasks only (sc_read says which), enough to
 * tell how much of the stacks the stop will copy; a task whose registers
 * the stop cannot read gets its line read then (psvc_read_regs()), the
 * one place it is still the evidence.  A nonblocking capture, which reads
 * no registers, uses psvc_scan().
 */
int psvc_scan_lean(struct psvc_target *t);

struct psvc_stop_opts {
	/* Abort (resume everything, -ETIMEDOUT) once the target has been
	 * stopped this long.  0: no limit. */
	uint64_t max_freeze_ns;
	/* A task that has not reported its stop this long after being
	 * interrupted (uninterruptible sleep, D state) is left out of the
	 * snapshot as a straggler instead of holding everyone else stopped.
	 * 0: wait for ever. */
	uint64_t stop_timeout_ns;
	/* Checked between steps; if it becomes non-zero, resume and return
	 * -EINTR.  May be NULL. */
	const volatile sig_atomic_t *cancel;
	/* Waits are interrupted by a timer raising this signal on the calling
	 * thread, so that the deadlines above are enforced even while a
	 * waitpid() blocks.  The caller must have installed a handler for it
	 * without SA_RESTART.  0: no timer (deadlines checked between waits
	 * only). */
	int wake_signal;
	/* Blocks (4 KiB) of the page cache the caller expects to fill while
	 * stopped (what libthread_db reads besides descriptors, lock words):
	 * mapped and faulted in before the first task is stopped. */
	size_t reserve_blocks;
	/* Bytes the caller expects to copy with psvc_copy_exact() while
	 * stopped: mapped and faulted in before the first stop. */
	size_t reserve_bytes;
	/* The same for the scratch set (psvc_copy_scratch), the number of
	 * ranges the largest copy will have, and of the parts of its ranges
	 * (psvc_copy_stacks: n * psvc_stack_copy_parts(npieces)). */
	size_t reserve_scratch_bytes;
	size_t reserve_runs;
	size_t reserve_parts;
	/* Hold nothing (a nonblocking capture, live_observe.c): no task is
	 * stopped nor attached; a task blocked in the kernel is OBSERVED,
	 * its pc and sp (and syscall arguments) taken from /proc, its memory
	 * read live.  What is read is not one consistent state.  The freeze
	 * is 0.  -EOPNOTSUPP if the backend cannot. */
	bool nonblocking;
	/* Tracer threads that stop, read and resume the tasks (live_crew.c):
	 * 0 for one per CPU (fewer for a small process), 1 for the calling
	 * thread alone.  Following always uses one. */
	unsigned tracers;
};

/*
 * Stop every task: PTRACE_SEIZE + PTRACE_INTERRUPT each one, wait for each
 * stop with waitpid(tid, __WALL), rescan /proc/PID/task until no new task
 * appears.  Tasks that vanish are marked GONE, not errors.  No SIGSTOP is
 * ever sent, so if tinspect dies the kernel detaches and the target runs on.
 * Returns the number of stopped tasks, or a negative errno after having
 * resumed everything (-ESRCH: the whole process is gone; -EPERM: the first
 * task could not be seized; -ETIMEDOUT, -EINTR as above).
 */
int psvc_stop(struct psvc_target *t, const struct psvc_stop_opts *opts);

/*
 * Between psvc_stop() and psvc_resume(): 0 if the capture may go on,
 * -ETIMEDOUT or -EINTR if it must be abandoned (the caller then resumes).
 */
int psvc_check_freeze(struct psvc_target *t);

/* Read the general registers and thread pointer of every stopped task.
 * Per-task failures are recorded in the task (regs_errno). */
void psvc_read_regs(struct psvc_target *t);

/* Floating-point registers of a stopped task (NT_PRFPREG). */
int psvc_task_fpregs(struct psvc_target *t, struct psvc_task *k, void *buf,
		     size_t len);

/*
 * Resume every task we stopped (PTRACE_DETACH, handing back any signal that
 * arrived while it was stopped; a task that was job-control stopped before
 * stays stopped, by the kernel's own rule).  Idempotent.
 */
void psvc_resume(struct psvc_target *t);

/* Tasks that never stopped (see stop_timeout_ns) stay seized until the
 * next psvc_scan() or psvc_close(), or until the thread that called
 * psvc_stop() exits: then the kernel detaches them, and this says so
 * (call it after that thread has exited). */
void psvc_forget_stragglers(struct psvc_target *t);

/* The facts of a task as they are now (for a task found during the stop,
 * whose facts could not be read before it).  0, or -ESRCH. */
int psvc_task_facts(struct psvc_target *t, pid_t tid,
		    struct psvc_taskinfo *ret);

/* ---- following threads between captures (follow.c; live targets) --------- */

enum psvc_event_kind {
	PSVC_EVENT_THREAD_CREATED,
	PSVC_EVENT_THREAD_EXITED,
};

struct psvc_event {
	enum psvc_event_kind kind;
	pid_t tid;
	pid_t parent;		/* created: the thread that cloned it */
	int status;		/* exited: its wait status */
	uint64_t time_ns;	/* CLOCK_REALTIME when tinspect saw it */
	/* created: its start routine, asked (through the resolver) while
	 * the thread was held; start_known false if it could not be */
	uint64_t start;
	bool start_known;
};

/* Asked for the start routine of a new thread held at its first stop:
 * returns its address, 0 if unknown.  The callback may use the ps_*
 * callbacks (libthread_db): the thread is known to them with tp. */
typedef uint64_t (*psvc_start_fn)(void *arg, pid_t tid, uint64_t tp);
void psvc_follow_set_resolver(struct psvc_target *t, psvc_start_fn fn, void *arg);
/* During a capture, after psvc_read_regs(): resolve the threads whose
 * first stop the capture met. */
void psvc_follow_resolve(struct psvc_target *t);

/* Called for each event, after the thread has been let go. */
typedef void (*psvc_event_fn)(void *arg, const struct psvc_event *ev);

/*
 * Stay attached: seize every task with PTRACE_O_TRACECLONE and
 * PTRACE_O_TRACEEXEC, without stopping any.  Captures then interrupt and
 * continue instead of seizing and detaching.  Returns 0 or a negative
 * errno (-EPERM: nothing seized; -EOPNOTSUPP: the target cannot change,
 * a core file).
 */
int psvc_follow_start(struct psvc_target *t);
/*
 * Sleep in waitpid() until deadline_ns (CLOCK_MONOTONIC) handling thread
 * creations and exits, each handed to fn.  Returns 0 at the deadline,
 * -ESRCH when the process has exited, -EINTR when *cancel is raised.  A
 * timer raising wake_signal ends the wait at the deadline.
 */
int psvc_follow_wait(struct psvc_target *t, uint64_t deadline_ns,
		     const volatile sig_atomic_t *cancel, int wake_signal,
		     psvc_event_fn fn, void *arg);
/* Between psvc_resume() and the next wait: let every task held at an event
 * stop (a clone, a signal) go on, without blocking.  Long analyses call it
 * now and then, so that following never holds the target for long. */
void psvc_follow_service(struct psvc_target *t);
/* Detach from every task.  Idempotent; psvc_close() calls it. */
void psvc_follow_end(struct psvc_target *t);
/* Make tid known to the ps_* callbacks with thread pointer tp. */
void psvc_note_thread(struct psvc_target *t, pid_t tid, uint64_t tp);
/* How many tasks are followed now. */
size_t psvc_followed(const struct psvc_target *t);

/* Freeze of the last capture: first PTRACE_INTERRUPT to last detach.  0 if
 * nothing was ever stopped. */
uint64_t psvc_freeze_ns(const struct psvc_target *t);
/* CLOCK_MONOTONIC ns of the first stop of the last capture (0: none). */
uint64_t psvc_first_stop_ns(const struct psvc_target *t);
/* True between psvc_stop() and psvc_resume(). */
bool psvc_is_stopped(const struct psvc_target *t);

/* ---- memory ------------------------------------------------------------ */

/*
 * Read exactly len bytes at addr.  While the target is stopped, reads go
 * through a page cache valid for that stop (libthread_db reads the same
 * struct pthread again and again); otherwise they go to the live process.
 * Returns 0, or -EFAULT (not mapped / not readable), -ESRCH.
 */
int psvc_read(struct psvc_target *t, uint64_t addr, void *buf, size_t len);
/* Read a NUL-terminated string of at most max-1 bytes.  0: buf holds the
 * whole string; 1: buf holds its first bytes only (no NUL within max-1
 * bytes, or unreadable memory after them); a negative errno: nothing
 * could be read. */
int psvc_read_string(struct psvc_target *t, uint64_t addr, char *buf,
		     size_t max);

struct psvc_range {
	uint64_t addr, len;
};
/*
 * Fill the stop's page cache for all these ranges with as few
 * process_vm_readv calls as possible (up to IOV_MAX ranges each).  Pages
 * that cannot be read are simply left out.  Only meaningful while stopped.
 */
void psvc_prefetch(struct psvc_target *t, const struct psvc_range *r,
		   size_t n);

/*
 * Bulk copies that are kept byte-exact rather than in whole blocks
 * (memruns.c): what psvc_read() and psvc_read_frozen() then answer from.
 * psvc_copy_exact(): kept like the cache (until psvc_release_capture()),
 * for stacks.  psvc_copy_scratch(): replaces the previous scratch set,
 * for what is needed only while it is read (a batch of descriptors for
 * libthread_db); psvc_drop_scratch() lets the last set go.  Only while
 * stopped (or observing); what cannot be read is left out (a run keeps the
 * prefix that could be).  psvc_runs_bytes(): the kept bytes.
 */
void psvc_copy_exact(struct psvc_target *t, const struct psvc_range *r, size_t n);
/* The same for the ranges no copy holds whole yet: small reads spread
 * over many pages (a DTV slot, a TLS variable, a key block per thread),
 * which the page cache would keep a page each of. */
void psvc_copy_needed(struct psvc_target *t, const struct psvc_range *r, size_t n);
/* While on, psvc_read() reads the target directly, caching nothing: for a
 * nonblocking capture's one pass over every descriptor (nonblock.c),
 * which would otherwise leave a block per thread in the cache. */
void psvc_cache_bypass(struct psvc_target *t, bool on);
void psvc_copy_scratch(struct psvc_target *t, const struct psvc_range *r,
		       size_t n);
/*
 * Copy, as the scratch set, only the pieces of the structs of `size`
 * bytes at addrs[0..n): for descriptors of which a reader uses some
 * fields only (libthread_db and struct pthread: the fields its
 * descriptors name).  A read of a field answers from its piece; a read of
 * a whole struct from its start (libthread_db copies the struct, then
 * picks its fields out of the copy) is the pieces with zeros between
 * them.  Anything else is not copied.
 */
struct psvc_piece {
	uint32_t off, len;
};
void psvc_copy_pieces(struct psvc_target *t, const uint64_t *addrs, size_t n,
		      uint32_t size, const struct psvc_piece *pieces,
		      size_t npieces);
/*
 * Both at once, a thread at a time: keep bytes from addr kept as
 * psvc_copy_exact() keeps them (its stack), and, if pd is not 0, the
 * pieces of the struct at pd as the scratch set (its descriptor, as
 * psvc_copy_pieces()).  Where the struct lies a little above the kept
 * bytes (a glibc thread's descriptor tops its stack), both come from one
 * range of the target read in one go, what lies between read and
 * dropped: the kernel's cost of a read is mostly per range (at 10 000
 * threads the copies take half the time they took as two reads a
 * thread).  If that range ends short of the struct (something between
 * could not be read), the struct's pieces are read again on their own.
 * keep 0: no stack; pd 0: no struct.
 */
struct psvc_stack_copy {
	uint64_t addr, keep, pd;
};
void psvc_copy_stacks(struct psvc_target *t, const struct psvc_stack_copy *c,
		      size_t n, uint32_t size, const struct psvc_piece *pieces,
		      size_t npieces);
/* The parts of a thread's ranges in psvc_copy_stacks() with npieces
 * pieces, at most (for psvc_stop_opts.reserve_parts). */
size_t psvc_stack_copy_parts(size_t npieces);
/* Let the scratch set go; its memory goes back to the system at once. */
void psvc_drop_scratch(struct psvc_target *t);
/* After psvc_resume(), while on: psvc_read() (and so libthread_db's
 * ps_pdread) answers from the stop's copies only, as psvc_read_frozen()
 * does; a read they cannot answer fails and is counted
 * (psvc_frozen_misses): for libthread_db run over the copied
 * descriptors after the target runs again. */
void psvc_frozen_reads(struct psvc_target *t, bool on);
uint64_t psvc_frozen_misses(const struct psvc_target *t);
/* After psvc_resume(): the kept run that holds addr has been used (a
 * stack, unwound): give it and every kept run copied before it up, their
 * memory back to the system.  What is still needed of them must have been
 * kept with psvc_frozen_retain(): [addr, addr + len), at most 256 bytes,
 * copied from the frozen view to a store that lives as long as the cache
 * (nothing if it was not copied at the stop). */
void psvc_frozen_done(struct psvc_target *t, uint64_t addr);
void psvc_frozen_retain(struct psvc_target *t, uint64_t addr, size_t len);
uint64_t psvc_runs_bytes(const struct psvc_target *t);

/*
 * After psvc_resume(): read exactly len bytes at addr as they were during
 * the last stop, from that stop's cache only (what was read or prefetched
 * while the target was stopped); never touches the live process, so the
 * answer is consistent with the rest of the snapshot.  Returns 0, or
 * -ENODATA if any byte was not cached (or was unreadable) at the stop.
 * The cache lives until the next psvc_stop(), psvc_release_capture() or
 * psvc_close().
 */
int psvc_read_frozen(struct psvc_target *t, uint64_t addr, void *buf,
		     size_t len);
/* How many bytes from addr (at most len) psvc_read_frozen() can give in
 * one run: what was actually copied at the stop. */
uint64_t psvc_frozen_extent(struct psvc_target *t, uint64_t addr, uint64_t len);
/* Let the last stop's cache go before the next stop. */
void psvc_release_capture(struct psvc_target *t);

/*
 * Why a read of [addr, addr + len) that failed could not be made: a static
 * clause ("in memory registered with userfaultfd, ...") when the memory is
 * of a kind tinspect refuses to wait on (a missing page that only a thread
 * of the target, stopped, or another process might serve), NULL when it
 * is simply unreadable or the backend cannot tell.  Uses the ranges of the
 * last psvc_scan().
 */
const char *psvc_mem_hazard(struct psvc_target *t, uint64_t addr, uint64_t len);

/* How many reads since the last psvc_scan() failed in memory
 * psvc_mem_hazard() names, and the first such address. */
uint64_t psvc_hazard_reads(const struct psvc_target *t, uint64_t *ret_first);

/* Syscalls issued for memory reads so far, for the benchmark. */
uint64_t psvc_read_syscalls(const struct psvc_target *t);

/* ---- modules and symbols ----------------------------------------------- */

enum psvc_module_flags {
	PSVC_MOD_LINK_MAP = 1u << 0,	/* listed in r_debug's link_map */
	PSVC_MOD_MAPS = 1u << 1,	/* found in /proc/PID/maps */
	PSVC_MOD_EXE = 1u << 2,
	PSVC_MOD_LDSO = 1u << 3,
	PSVC_MOD_LIBC = 1u << 4,
	PSVC_MOD_VDSO = 1u << 5,
	PSVC_MOD_DELETED = 1u << 6,	/* the file was deleted or replaced */
	PSVC_MOD_MISMATCH = 1u << 7,	/* link_map and maps disagree */
};

struct psvc_module {
	char *path;		/* from /proc/PID/maps ("[vdso]" for it) */
	char *l_name;		/* link_map's name, NULL if not listed */
	unsigned flags;		/* enum psvc_module_flags */
	uint64_t bias;		/* load bias (link_map l_addr) */
	uint64_t start, end;	/* lowest and highest mapped address */
	uint64_t link_map;	/* address of its struct link_map, or 0 */
	uint64_t l_ld;		/* address of its dynamic section, or 0 */
	uint64_t map_start, map_end; /* its offset-0 mapping */
	dev_t dev;
	ino_t ino;
	struct psvc_elf *elf;	/* symbol tables, loaded on demand */
	int elf_errno;		/* why the ELF could not be loaded */
	struct psvc_gomod *go;	/* its Go runtime facts (gomodule.c) */
	bool go_read;		/* go is what there is to know */
	bool has_symtab;	/* the ELF has .symtab, not only .dynsym */
	char build_id[41];	/* hex, "" if none */
};

enum psvc_modmap_source {
	PSVC_MODMAP_NONE = 0,
	PSVC_MODMAP_LINK_MAP,	/* r_debug + link_map, checked with maps */
	PSVC_MODMAP_MAPS_ONLY,	/* no usable r_debug (static, corrupt, early) */
};

/*
 * (Re)build the module map.  The result is kept, with its ELF symbol tables,
 * until the module list changes: the generation number only moves when it
 * does.  Returns 0 or a negative errno; warnings (disagreements between
 * link_map and maps, unreadable files) are recorded per module.
 */
int psvc_modules_load(struct psvc_target *t);
enum psvc_modmap_source psvc_modmap_source(const struct psvc_target *t);
/* What was wrong with the dynamic linker's module list when the map was
 * built (a loop, garbage, duplicates, more entries than the maps can
 * account for), or NULL. */
const char *psvc_modmap_note(const struct psvc_target *t);
uint64_t psvc_modules_generation(const struct psvc_target *t);
size_t psvc_nmodules(const struct psvc_target *t);
struct psvc_module *psvc_module_at(struct psvc_target *t, size_t i);
/* The module marked flag (PSVC_MOD_EXE, PSVC_MOD_LDSO, PSVC_MOD_LIBC...),
 * the last one if several are; NULL if none is. */
struct psvc_module *psvc_module_flagged(struct psvc_target *t, unsigned flag);
/* The module whose mappings hold addr, or NULL. */
struct psvc_module *psvc_module_for_addr(struct psvc_target *t, uint64_t addr);

/*
 * Look a symbol up by name in the order libthread_db needs (libc, then
 * ld.so, then the executable, then every other module: the object name it
 * passes is meaningless since glibc 2.34, docs/GLIBC.md §2).  Returns 0
 * and the run-time address, or -ENOENT.
 */
int psvc_lookup_symbol(struct psvc_target *t, const char *name,
		       uint64_t *ret_addr);

struct psvc_symbol {
	struct psvc_module *module;
	const char *name;	/* owned by the module's ELF, NULL if none */
	uint64_t offset;	/* addr - symbol start (or - module bias) */
	uint64_t size;		/* st_size of the symbol, 0 if none/unsized */
};
/* Resolve addr to module + symbol + offset.  Returns 0 with name NULL if
 * the module is known but no symbol covers addr; -ENOENT if no module. */
int psvc_addr_to_symbol(struct psvc_target *t, uint64_t addr,
			struct psvc_symbol *ret);
/* A new read-only descriptor on the module's ELF image (a memfd holding
 * the image for the vDSO); the caller owns it.  Negative errno on failure. */
int psvc_module_open(struct psvc_target *t, struct psvc_module *m);
/* Load the module's symbol tables now (done lazily otherwise). */
int psvc_module_load_elf(struct psvc_target *t, struct psvc_module *m);
/* The addresses the module's PT_LOAD segments span in the target, as
 * libdwfl's dwfl_report_elf would compute them (its symbol tables are
 * loaded for it); -ENOEXEC if it has none. */
int psvc_module_span(struct psvc_target *t, struct psvc_module *m,
		     uint64_t *ret_low, uint64_t *ret_high);

/* ---- Go programs (gomodule.c) ---------------------------------------- */

/* A Go function's record flags (the Go runtime's funcFlag, Go 1.17 on). */
enum {
	PSVC_GO_TOPFRAME = 1u << 0,	/* the outermost frame of its stack */
	PSVC_GO_SPWRITE = 1u << 1,	/* writes SP: switches stacks */
	PSVC_GO_ASM = 1u << 2,		/* written in assembly */
};

/* The Go function that holds a pc. */
struct psvc_gofunc {
	uint64_t entry, end;	/* its code: [entry, end) */
	const char *name;	/* owned by the module; NULL if unreadable */
	const char *file;	/* the source of the pc; NULL: unknown */
	int line;		/* 0: unknown */
	int32_t spdelta;	/* sp at the pc, below sp at entry (bytes) */
	bool have_spdelta;
	unsigned flags;		/* PSVC_GO_* */
};

/* What a module shows of the Go runtime. */
struct psvc_go_info {
	const char *version;	/* "go1.19.8"; NULL: not known */
	const char *format;	/* its function table's format ("go1.18",
				 * "go1.20"); NULL: none read */
	const char *why;	/* why its functions cannot be named, NULL
				 * when they can */
};
/* 0 and the facts if the module is a Go program or library (a
 * .go.buildinfo or a Go function table: both survive stripping);
 * -ENOENT if it shows none, or its file cannot be read. */
int psvc_module_go(struct psvc_target *t, struct psvc_module *m,
		   struct psvc_go_info *ret);
/* The Go function that holds the run-time address addr (addresses in
 * ret run-time too): 0, or -ENOENT (no Go code there). */
int psvc_go_func(struct psvc_target *t, uint64_t addr, struct psvc_gofunc *ret);
/* Whether the executable is a Go program without a C library: static (no
 * PT_INTERP), without glibc's ABI note, no libc mapped. */
bool psvc_go_without_libc(struct psvc_target *t);

/* ---- /proc facts of the process ----------------------------------------- */

/* Path of the executable ("(deleted)" suffix kept), or NULL. */
const char *psvc_exe_path(const struct psvc_target *t);
/* Command line as argc/argv (bytes as they are; not NUL-safe beyond). */
size_t psvc_cmdline(const struct psvc_target *t, const char *const **ret_argv);

/* ---- permission diagnosis --------------------------------------------- */

enum psvc_eperm_cause {
	PSVC_EPERM_UNKNOWN = 0,
	PSVC_EPERM_TRACED,	/* already traced by another process */
	PSVC_EPERM_OTHER_UID,	/* other uid and no CAP_SYS_PTRACE */
	PSVC_EPERM_YAMA,	/* kernel.yama.ptrace_scope forbids it */
	PSVC_EPERM_NOT_DUMPABLE,/* set-id or PR_SET_DUMPABLE 0 target */
};

struct psvc_eperm_facts {
	pid_t tracer_pid;	/* TracerPid of the target */
	uid_t target_uid[4];	/* real, effective, saved, fs */
	uid_t my_euid;
	bool have_cap_sys_ptrace;
	int yama_scope;		/* -1: no Yama */
	bool target_is_descendant;
	bool target_dumpable_known, target_dumpable;
};

struct psvc_eperm_diag {
	enum psvc_eperm_cause cause;
	pid_t tracer_pid;
	char tracer_comm[64];
	int yama_scope;
	uid_t target_uid;
};

/* Gather the facts for pid and decide. */
void psvc_diagnose_eperm(pid_t pid, struct psvc_eperm_diag *ret);
/* The decision alone (pure, unit-tested). */
enum psvc_eperm_cause psvc_eperm_decide(const struct psvc_eperm_facts *f);

/* ---- namespaces (ns.c) ---------------------------------------------- */

/*
 * Whether the target lives in another PID namespace than tinspect: its
 * TIDs as libthread_db knows them (ti_lid, the lwpid_t of every ps_*
 * callback) are then not the TIDs ptrace needs (docs/GLIBC.md §3).
 */
bool psvc_foreign_pidns(struct psvc_target *t);
/* True only when the target is known to share our PID namespace (a TID
 * of ours is then its TID too); false when it does not or cannot be told. */
bool psvc_same_pidns(struct psvc_target *t);
/* Whether the target may see another file system than tinspect (another
 * mount namespace, or it cannot be told): its paths are then to be looked
 * up under psvc_root_dir() too. */
bool psvc_foreign_mntns(struct psvc_target *t);
/* A task of the current capture by its TID in the target's own PID
 * namespace.  O(1); NULL if unknown. */
struct psvc_task *psvc_task_by_ns_tid(struct psvc_target *t, pid_t ns_tid);
/*
 * During a stop: give the tasks found by a rescan (PSVC_TASK_LATE, whose
 * facts are otherwise read after the resume) their namespace TID, so that
 * libthread_db can be asked about them.  Reads the facts of each late task,
 * and only when the target is in another PID namespace.
 */
void psvc_resolve_late_ns_tids(struct psvc_target *t);

/* ---- mappings (modules.c) ---------------------------------------------- */

/* One mapping of the address space (a line of /proc/PID/maps). */
struct psvc_map {
	uint64_t start, end, offset;
	char perms[5];		/* "rw-p" */
	const char *path;	/* NULL for anonymous; owned by the target */
	bool deleted;
};
/*
 * The mapping that holds addr and the one just below it (ret_below may be
 * NULL; its start is 0 if there is none), from the mappings that
 * psvc_modules_load() read last (before the stop).  -ENOENT if no mapping
 * holds addr.
 */
int psvc_map_lookup(struct psvc_target *t, uint64_t addr,
		    struct psvc_map *ret, struct psvc_map *ret_below);
/* Re-read the mappings (e.g. after the resume, for threads created
 * during the stop) without rebuilding the module map. */
int psvc_maps_refresh(struct psvc_target *t);

/* The soft RLIMIT_STACK of the process: 0 and the bytes, -ERANGE if
 * unlimited, another negative errno if unknown. */
int psvc_stack_rlimit(struct psvc_target *t, uint64_t *ret_bytes);

/* ---- thread-local symbols, module files (symbols.c, modfiles.c) ---------- */

/* A thread-local variable's symbol: an offset in its module's TLS block. */
struct psvc_tls_symbol {
	struct psvc_module *module;
	uint64_t offset;	/* st_value */
	uint64_t size;		/* st_size, 0 if unknown */
};
/*
 * Find an STT_TLS symbol by name (.symtab and .dynsym): in the executable
 * first, then in the other modules in address order; only in modules
 * with all of want_flags (e.g. PSVC_MOD_LIBC for libc's errno) if
 * non-zero.  Returns 0, or -ENOENT.
 */
int psvc_lookup_tls_symbol(struct psvc_target *t, const char *name,
			   unsigned want_flags, struct psvc_tls_symbol *ret);
/*
 * A new descriptor on the module's ELF file (the one its symbols were
 * read from: the mapped inode, or a build-id-checked path in the target's
 * file system), for DWARF readers.  The caller closes it.
 */
int psvc_module_open_fd(struct psvc_target *t, struct psvc_module *m);
/* Hex build-id of the module as mapped in the target (its PT_NOTE in
 * memory); -ENOENT if none. */
int psvc_module_mem_build_id(struct psvc_target *t, struct psvc_module *m,
			     char out[41]);

/* ---- files named by untrusted input (regfile.c) ----------------------- */

/*
 * Open path for reading only if it is a regular file (a FIFO, a device, a
 * socket are refused without being opened: nothing blocks, nothing acts)
 * that is not on a kernel pseudo file system (procfs, sysfs, debugfs...:
 * reading /proc/kmsg consumes the kernel's log) and does not report a
 * size of 0, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY.  Returns the
 * descriptor (and its stat in *ret_st, may be NULL), or a negative errno:
 * -ENXIO for "not a regular file", -EOPNOTSUPP for a pseudo file system,
 * -ENODATA for size 0, -EMFILE / -ENFILE when out of descriptors.
 */
int psvc_open_regular(const char *path, struct stat *ret_st);
/* The same, path relative to the directory dirfd (openat). */
int psvc_openat_regular(int dirfd, const char *path, struct stat *ret_st);
/* What psvc_openat_checked() learnt of the file: its stat, and the statfs
 * magic of its file system (set also when it is refused for either). */
struct psvc_fileinfo {
	struct stat st;
	unsigned long fs_magic;
};
int psvc_openat_checked(int dirfd, const char *path, struct psvc_fileinfo *ret);
/* The name of a kernel pseudo file system by its statfs magic; NULL if the
 * magic is not one. */
const char *psvc_pseudo_fs_name(unsigned long magic);
/* The message for an error of psvc_open_regular() or psvc_file_open()
 * (names EMFILE). */
const char *psvc_open_strerror(int err);

/* ---- files opened by a worker, within a bound (fileworker.c) --------- */

/* How long opening (or copying) a file may go without progress. */
#define PSVC_FILE_STALL_NS 2000000000ull
/* The trees a file may be in: tinspect's own, or the target's (a path
 * under /proc/PID/: its root, its map_files). */
enum { PSVC_TREE_OURS, PSVC_TREE_TARGET };
/*
 * psvc_openat_checked(AT_FDCWD, path) in a helper process, waited for
 * within a bound: the file system of a target's file may never answer (a
 * FUSE mount nobody serves).  The descriptor is the file itself on a
 * local file system, else a copy of it in memory (reading or even closing
 * a FUSE or NFS file could block as well); ret->st is the file's own.
 * Besides psvc_openat_checked()'s errors: -EAGAIN while a task of t is
 * held (nothing is opened then; try after the resume), -EINTR when t's
 * cancel flag is raised, -ETIMEDOUT when the helper made no progress for
 * PSVC_FILE_STALL_NS (then that file's tree is not read any more: a
 * warning of t says so), -EFBIG for a file to copy over 256 MiB, -EIO if
 * the helper died, -ECHILD if it could not be started (fork failed).
 */
int psvc_file_open(struct psvc_target *t, const char *path,
		   struct psvc_fileinfo *ret);
/* The same for a directory (O_RDONLY | O_DIRECTORY): its descriptor. */
int psvc_dir_open(struct psvc_target *t, const char *path,
		  struct psvc_fileinfo *ret);
/* Whether files of the file system of that statfs magic are mapped
 * where they are: a local one, whose reads the block layer bounds (not
 * FUSE, NFS, CIFS, 9p, ...). */
bool psvc_fs_local(unsigned long magic);
/* Whether a task of t is held now (no file is opened then). */
bool psvc_files_held(const struct psvc_target *t);
/* Hold off file opens while the caller holds a task (nested). */
void psvc_files_pause(struct psvc_target *t, bool pause);
/* Let the helper go (the backends' close does). */
void psvc_files_close(struct psvc_target *t);
/* fn(arg) is called every few milliseconds while a file is waited for
 * outside a capture (following: psvc_follow_service, so that new threads
 * are not held meanwhile); NULL: nothing. */
void psvc_files_on_wait(struct psvc_target *t, void (*fn)(void *), void *arg);

/* ---- layouts the target describes (layout.c) ------------------------- */

/*
 * Every offset, size and count taken from the target (libthread_db's
 * _thread_db_* descriptors, link_map chains, DTVs, key tables, lock words)
 * goes through these, checked in 64-bit arithmetic.  A value that fails
 * its check makes its datum unknown: the functions return a negative
 * errno and write why (naming the descriptor and the value) into
 * why[whylen] (may be NULL).
 */

/* Where layouts are read from: a live target (psvc_layout_src()), or a
 * synthetic memory image (unit tests, fuzzing). */
struct psvc_layout_src {
	/* the run-time address of a symbol: 0, or -ENOENT */
	int (*lookup)(void *ctx, const char *name, uint64_t *ret_addr);
	/* exactly len bytes at addr: 0, or a negative errno */
	int (*read)(void *ctx, uint64_t addr, void *buf, size_t len);
	void *ctx;
};
struct psvc_layout_src psvc_layout_src(struct psvc_target *t);

/* A libthread_db descriptor as libc exports it (_thread_db_*, glibc's
 * nptl_db/structs.def): uint32 {size of one element in bits, count,
 * offset}. */
struct psvc_desc {
	uint32_t bits, count, offset;
};

/* What a field must look like to be used. */
struct psvc_field_rule {
	const char *struct_name;	/* for messages: "struct pthread" */
	uint64_t struct_size;		/* bytes the field must lie inside */
	uint32_t elem_bits;		/* 0: any whole number of bytes */
	uint64_t min_count, max_count;	/* a descriptor's count 0 (a
					 * flexible array) counts as min_count */
};

/* A field that passed its rule: every byte of its count elements lies
 * inside the struct. */
struct psvc_field {
	uint64_t offset;	/* bytes from the start of the struct */
	uint32_t elem_size;	/* bytes of one element */
	uint64_t count;		/* elements (a scalar: 1) */
};

/* Read the descriptor `name`: 0, -ENOENT (no such symbol), -EFAULT
 * (unreadable), -EPROTO (byte-swapped or garbage size word). */
int psvc_desc_read(const struct psvc_layout_src *src, const char *name,
		   struct psvc_desc *ret, char *why, size_t whylen);
/* Read a _thread_db_sizeof_* word; -ERANGE if it is not within [min, max]. */
int psvc_sizeof_read(const struct psvc_layout_src *src, const char *name,
		     uint32_t min, uint32_t max, uint32_t *ret, char *why,
		     size_t whylen);
/* Check a descriptor against its rule: 0 and *ret, or -ERANGE. */
int psvc_field_check(const char *name, const struct psvc_desc *d,
		     const struct psvc_field_rule *rule, struct psvc_field *ret,
		     char *why, size_t whylen);
/* psvc_desc_read() then psvc_field_check(). */
int psvc_field_read(const struct psvc_layout_src *src, const char *name,
		    const struct psvc_field_rule *rule, struct psvc_field *ret,
		    char *why, size_t whylen);
/* The address of element idx of f in a struct at base; -ERANGE if idx is
 * not below f->count or the sum wraps. */
int psvc_field_addr(uint64_t base, const struct psvc_field *f, uint64_t idx,
		    uint64_t *ret);
/* Copy the first out_len bytes of element idx of f out of a local copy of
 * the struct (copy_len bytes); -ERANGE if any byte lies outside it. */
int psvc_field_get(const void *copy, size_t copy_len,
		   const struct psvc_field *f, uint64_t idx, void *out,
		   size_t out_len);
/* The reason of a failure, formatted into why[whylen] (nothing if why is
 * NULL or whylen 0): the layout's and the core reader's (common/say.c). */
void psvc_say(char *why, size_t whylen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* a + b, a * b in 64 bits; false if it wraps. */
bool psvc_add_ok(uint64_t a, uint64_t b, uint64_t *ret);
bool psvc_mul_ok(uint64_t a, uint64_t b, uint64_t *ret);
/* [off, off + len) lies inside [0, total), without wrapping. */
bool psvc_span_ok(uint64_t off, uint64_t len, uint64_t total);

/* ---- libthread_db's view ---------------------------------------------- */

/* The handle libthread_db passes back to the ps_* callbacks. */
struct ps_prochandle *psvc_prochandle(struct psvc_target *t);

/*
 * What libthread_db reads at [addr, addr + len) is these bytes from now
 * on, whatever target memory says later: the descriptors tinspect checked
 * are the very ones libthread_db uses (the target cannot change them
 * between the check and the use).  psvc_unpin_all() forgets them all.
 */
int psvc_pin(struct psvc_target *t, uint64_t addr, const void *bytes,
	     size_t len);
void psvc_unpin_all(struct psvc_target *t);
/*
 * The next libthread_db call may read target memory at most `reads` times
 * (0: no limit); past that, and once the capture must be abandoned
 * (psvc_check_freeze()), ps_pdread fails.  libthread_db follows lists in
 * target memory without a bound of its own (the DTV slotinfo list): a
 * cycle must not keep the target stopped for ever.
 */
void psvc_tdb_budget(struct psvc_target *t, uint64_t reads);
/* Whether libthread_db has looked up a descriptor of a struct pthread
 * field that was not pinned (the layout check does not know it): then
 * the fields it reads are not all known, and a copy of a thread's
 * descriptor must be whole (psvc_copy_pieces would not do). */
bool psvc_tdb_unknown_field(const struct psvc_target *t);

/* Monotonic clock in ns (shared by the session for its own timings). */
uint64_t psvc_now_ns(void);

#endif
