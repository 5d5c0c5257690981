/*
 * backend.h: how proc_service reaches a target.  Private to proc_service/.
 *
 * Everything above this seam - the capture's task list and its states
 * (tasks.c), the page cache (mem.c), the module map and symbols
 * (modules.c, modfiles.c, symbols.c), namespaces (ns.c), the ps_* shim
 * that libthread_db calls (shim.c), and above proc_service the whole
 * session - is the same code whatever the target is.  What differs is
 * behind a struct psvc_backend: a live process (live*.c: ptrace,
 * process_vm_readv, /proc) or a core file (core_backend.c over the reader
 * core*.c: PT_LOAD segments, NT_PRSTATUS registers, NT_FILE mappings).
 * Neither knows the other.  A backend is its open function (psvc_open()
 * for a live process, psvc_open_core() for a core), which makes the target with
 * psvc_target_new() and gives it the process-wide facts, and these ops.
 *
 * In the manner of libdwfl's Dwfl_Thread_Callbacks, each slot says when it
 * is called and what it may assume.  All ops get the target; a backend's
 * own state is t->backend_data.  Errors are negative errno values; a fact
 * a backend cannot give is reported as such (-ENODATA, -EOPNOTSUPP, or the
 * "unknown" of the fact), never invented.  "Optional" slots may be NULL.
 *
 * The lifecycle of one capture, as psvc_* drives it:
 *   scan -> stop -> regs (each stopped task) -> read / read_runs ... ->
 *   resume, and close once at the end.  maps, open_mapped, read,
 *   task_facts, same_ns, root_dir, stack_rlimit and alive may be called
 *   at any time between open and close.  Following (a watch with
 *   --follow-threads): follow_start once, then between captures
 *   follow_service and follow_wait, follow_resolve after a capture's
 *   regs, follow_end before close.
 */
#ifndef TINSPECT_PSVC_BACKEND_H
#define TINSPECT_PSVC_BACKEND_H

#include "psvc.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

struct psvc_target;
struct psvc_mapping;

/* One part of the local side of a run (struct psvc_run.segs): len bytes
 * into buf, or read and dropped (buf NULL). */
struct psvc_seg {
	void *buf;
	size_t len;
};

/* One run of target memory for a batched read (read_runs). */
struct psvc_run {
	uint64_t addr;
	void *buf;
	size_t len;
	size_t done;		/* set by the backend: bytes read from addr on
				 * (a prefix; 0 if none could be) */
	/* NULL: the run is read into buf.  Else into these, one after the
	 * other (buf unused; their lens add up to len): several copies
	 * taken from one range of the target in one go (a stack, and the
	 * parts of the descriptor above it). */
	const struct psvc_seg *segs;
	size_t nsegs;
};

struct psvc_backend {
	const char *name;	/* "live", "core": for messages */

	/* Free the backend's state, and let the file helper go
	 * (psvc_files_close).  Called exactly once, by psvc_close(), after
	 * resume (when a stop succeeded) and before the target's own state
	 * is freed; also for a target whose open failed half way. */
	void (*close)(struct psvc_target *t);

	/* ---- the tasks ---- */

	/* Start a capture: forget the previous list (psvc_tasks_clear) and
	 * add every task (psvc_task_add) with its per-task facts (info,
	 * before_stop set when they describe the running thread).  Called by
	 * psvc_scan() only when nothing is held.  lean: the stop that follows
	 * reads every held task's registers, so a fact they give may be left
	 * out of the scan (psvc_scan_lean).  The count, or -ESRCH (no such
	 * process), -ESTALE (it runs another program than at open). */
	int (*scan)(struct psvc_target *t, bool lean);
	/* Hold every task of the scan so that what is read next is one
	 * consistent state; a live backend stops them (and may add tasks it
	 * finds meanwhile, psvc_task_add_late), a core file is already
	 * frozen and just marks them.  Called by psvc_stop() after scan,
	 * with the capture's page cache begun; it moves each task through
	 * the transitions of tasks.c.  Returns how many tasks stopped; on
	 * error psvc_stop() calls resume, which must cope with a stop that
	 * failed half way. */
	int (*stop)(struct psvc_target *t, const struct psvc_stop_opts *opts);
	/* Optional.  Instead of stop, for a nonblocking capture: hold
	 * nothing; mark OBSERVED (psvc_task_observed) each task of the scan
	 * that is blocked in the kernel and whose pc and sp can be had
	 * without stopping it.  Returns how many; NULL: psvc_stop() says
	 * -EOPNOTSUPP. */
	int (*observe)(struct psvc_target *t);
	/* Optional.  The end of a nonblocking capture (psvc_resume()): mark
	 * MOVED (psvc_task_moved) each observed task that is not proven to
	 * have stayed in the wait it was observed in for the whole capture
	 * (it may have run and written over what was copied, even if it is
	 * back in the same wait), so that what was copied of it is not taken
	 * for its state. */
	void (*observe_end)(struct psvc_target *t);
	/* Let every held task go and set t->t_last_resume to when the target
	 * ran again.  Called by psvc_resume() iff t->stopped, once per stop. */
	void (*resume)(struct psvc_target *t);
	/* Optional.  The thread that called stop() has exited: whatever it
	 * still held, the system has let go (ptrace detaches a tracer's
	 * tasks when the tracer exits).  Called between captures. */
	void (*tracer_exited)(struct psvc_target *t);
	/* The general registers of a task that stop() marked STOPPED, into
	 * k->gregs (NT_PRSTATUS layout, psvc_arch(t)->ngregs words) and its
	 * thread pointer into k->tp (0 if unknown).  Only between stop and
	 * resume.  0 or a negative errno (-ENOEXEC: not the arch's layout).
	 * For a task observe() marked OBSERVED: what is known without
	 * stopping it (pc, sp, the syscall's number and arguments), the
	 * other registers 0 and tp 0. */
	int (*regs)(struct psvc_target *t, struct psvc_task *k);
	/* Optional.  regs for every task stop() marked STOPPED or observe()
	 * OBSERVED, with psvc_task_regs(k, err) for each: for a backend
	 * whose tasks must be read by the thread that holds them (live:
	 * the tracer crew).  NULL: psvc_read_regs() calls regs per task. */
	void (*regs_all)(struct psvc_target *t);
	/* Its floating-point registers (NT_PRFPREG), len bytes.  Same
	 * conditions as regs. */
	int (*fpregs)(struct psvc_target *t, struct psvc_task *k, void *buf,
		      size_t len);
	/* The facts of one task as they are now (for a task found during
	 * the stop, read after the resume).  0, or -ESRCH if it is gone. */
	int (*task_facts)(struct psvc_target *t, pid_t tid,
			  struct psvc_taskinfo *ret);
	/* Optional, all six or none.  Following: stay attached between
	 * captures so that thread creations and exits become events (the
	 * live backend's follow.c).  NULL: the target cannot change (a core
	 * file): psvc_follow_start() and psvc_follow_wait() say -EOPNOTSUPP,
	 * psvc_followed() 0, the others do nothing.  Each slot is what its
	 * psvc_follow_*() in psvc.h says, and does nothing while the target
	 * is not followed. */
	int (*follow_start)(struct psvc_target *t);
	int (*follow_wait)(struct psvc_target *t, uint64_t deadline_ns,
			   const volatile sig_atomic_t *cancel, int wake_signal,
			   psvc_event_fn fn, void *arg);
	void (*follow_service)(struct psvc_target *t);
	void (*follow_resolve)(struct psvc_target *t);
	void (*follow_end)(struct psvc_target *t);
	size_t (*followed)(const struct psvc_target *t);
	/* Whether any task of the process still lives. */
	bool (*alive)(struct psvc_target *t);

	/* ---- memory ---- */

	/* Exactly len bytes at addr, uncached (mem.c caches).  0, or -EFAULT
	 * (not mapped / not readable), -ESRCH (gone). */
	int (*read)(struct psvc_target *t, uint64_t addr, void *buf, size_t len);
	/* As many bytes of each run as can be read, in as few operations as
	 * the backend can (any number of runs: mem.c's prefetch hands runs
	 * of whole 4 KiB blocks, memruns.c a whole capture's stacks): each
	 * run's done says how many bytes from its start were read. */
	void (*read_runs)(struct psvc_target *t, struct psvc_run *runs, size_t n);
	/* Optional.  After a read of [addr, addr + len) failed: why, if the
	 * backend refused to wait there (memory registered with userfaultfd,
	 * live_uffd.c); NULL otherwise. */
	const char *(*mem_hazard)(struct psvc_target *t, uint64_t addr,
				  uint64_t len);

	/* ---- the address space and the files behind it ---- */

	/* The memory mappings now, sorted by address (struct psvc_mapping,
	 * freed with psvc_maps_free).  0, -ESRCH. */
	int (*maps)(struct psvc_target *t, struct psvc_mapping **ret,
		    size_t *ret_n);
	/* A read-only descriptor on the file mapped as module m (its
	 * map_start..map_end, its path): ideally the mapped inode itself
	 * (*ret_by_path false); else the file that has its path in the
	 * target's file system (*ret_by_path true: the caller then checks it
	 * is the mapped file, by build-id).  ret_st: its stat.  Only regular
	 * files, never blocking (regfile.c). */
	int (*open_mapped)(struct psvc_target *t, const struct psvc_module *m,
			   bool *ret_by_path, struct stat *ret_st);
	/* The directory that is the target's "/" as tinspect can open it
	 * ("/proc/PID/root" for a live process), into buf.  0, -ENAMETOOLONG. */
	int (*root_dir)(struct psvc_target *t, char *buf, size_t len);
	/* Whether the target's namespace ns ("pid", "mnt") is tinspect's: 1
	 * same, 0 another, -1 unknown. */
	int (*same_ns)(struct psvc_target *t, const char *ns);
	/* The soft RLIMIT_STACK: 0 and the bytes, -ERANGE if unlimited,
	 * another negative errno if unknown. */
	int (*stack_rlimit)(struct psvc_target *t, uint64_t *ret_bytes);

	/* ---- what only some targets can tell ---- */

	/* Optional.  The signal that ended the process and the thread that
	 * took it (a core file's NT_SIGINFO).  0, or -ENODATA; NULL: a live
	 * process, which no signal has ended. */
	int (*signal)(struct psvc_target *t, struct psvc_signal_info *ret);
};

/*
 * For a backend's open function: a new target over backend be (state
 * data, freed by be->close), for process pid of architecture arch.
 * holding: psvc_open_opts.holding.  NULL on ENOMEM.
 */
struct psvc_target *psvc_target_new(const struct psvc_backend *be, void *data,
				     pid_t pid, const struct arch_desc *arch,
				     volatile sig_atomic_t *holding);
/* The process-wide facts a backend reads at open: the auxiliary vector
 * (raw bytes: AT_PHDR, AT_BASE... are taken from it), the command line
 * (NUL-separated, as /proc/PID/cmdline: the target keeps buf), the path of
 * the executable (copied). */
void psvc_target_set_auxv(struct psvc_target *t, const void *buf, size_t len);
void psvc_target_set_cmdline(struct psvc_target *t, char *buf, size_t len);
void psvc_target_set_exe(struct psvc_target *t, const char *path);
/* A warning about the target as a whole (a file that is not the one the
 * core mapped, damage in a core), kept for the report (psvc_warning_at). */
void psvc_target_warn(struct psvc_target *t, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#endif
