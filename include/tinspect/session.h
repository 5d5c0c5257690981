/*
 * tinspect/session.h: opening a process, taking snapshots of it, following
 * its threads between snapshots, and what the errors mean.  Include
 * <tinspect/tinspect.h>; this header is part of it.  Manual:
 * tinspect_session(3).
 *
 * Errors are negative errno values, listed per function;
 * tinspect_strerror() gives their text.  Unless said otherwise a function
 * leaves its ret_* arguments untouched when it fails.
 *
 * Thread safety: a session is used by one thread at a time.  While it
 * follows threads (tinspect_session_follow()) every call on it must come
 * from the thread that called tinspect_session_follow(): ptrace binds the
 * target's threads to that thread.  Different sessions are independent
 * (but a process can only be traced by one of them at a time).
 */
#ifndef TINSPECT_SESSION_H
#define TINSPECT_SESSION_H

#include <signal.h>
#include <string.h>	/* memset(), for TINSPECT_OPTIONS() */

#include <tinspect/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- options ------------------------------------------------------------ */

/* One thread-local variable to read in every thread (options.tls). */
struct tinspect_tls_request {
	const char *name;		/* as in the symbol table */
	enum tinspect_tls_type type;	/* TINSPECT_TLS_AUTO: from DWARF */
	unsigned size;			/* bytes; 0: from the symbol or DWARF */
};

/* Bits of tinspect_options.flags. */
enum tinspect_option_flags {
	/* Do not copy or unwind stacks. */
	TINSPECT_OPT_NO_STACKS = 1u << 0,
	/* Read libc's errno in every thread (a libthread_db call per thread,
	 * during the stop). */
	TINSPECT_OPT_ERRNO = 1u << 1,
	/* Read the pthread keys in use and every thread's values. */
	TINSPECT_OPT_KEYS = 1u << 2,
	/* Accepted and ignored: never loading the target's own libthread_db
	 * is the default now (see TINSPECT_OPT_TARGET_THREAD_DB). */
	TINSPECT_OPT_NO_TARGET_THREAD_DB = 1u << 3,
	/* Read target memory through /proc/PID/mem only. */
	TINSPECT_OPT_PROC_MEM = 1u << 4,
	/* When the system's libthread_db does not serve the target's glibc
	 * (a container of another distribution), load the target's own, from
	 * beside its libc: that is code from the target's file system, run in
	 * the calling process, so it is never done without this flag (or the
	 * file under thread_db_safe_path). */
	TINSPECT_OPT_TARGET_THREAD_DB = 1u << 5,
	/* Updates stop no thread and attach to none (tinspect(3),
	 * "Nonblocking captures"): a thread blocked in the kernel is seen
	 * through /proc/TID/syscall (pc, sp, the call), its stack copied and
	 * unwound from there, lock words read live; a running thread has no
	 * registers nor stack.  Such a snapshot is not consistent: when it
	 * shows a deadlock or a stall, the update confirms it with one
	 * ordinary all-stop capture, which is then the snapshot
	 * (TINSPECT_CAPTURE_CONFIRMATION).  tinspect_session_follow() is
	 * refused (-EINVAL). */
	TINSPECT_OPT_NONBLOCKING = 1u << 6,
	/* As TINSPECT_OPT_NONBLOCKING, but never stop anything, not even to
	 * confirm: the snapshot's cycles and stalls stay candidates
	 * (TINSPECT_CAPTURE_NONBLOCKING).  Implies TINSPECT_OPT_NONBLOCKING. */
	TINSPECT_OPT_NONBLOCKING_STRICT = 1u << 7,
	/* With TINSPECT_OPT_NONBLOCKING: the nonblocking capture runs in a
	 * thread of the library's own at SCHED_IDLE (so do the /proc
	 * readers it starts), which gets a CPU only when nothing else wants
	 * it: on a busy machine the target's threads always win, and the
	 * update is late instead (its duration says so).  For a watch that
	 * runs for weeks; a one-shot capture on a saturated machine would
	 * wait long.  The confirming all-stop capture keeps the caller's
	 * priority (a slow capture there is a long freeze).  Ignored while
	 * following threads (the tracer must stay the caller's thread). */
	TINSPECT_OPT_IDLE_PRIORITY = 1u << 8,
	/* Remember every mutex and rwlock an update sees waited on, and read
	 * their words again in every later update of the session (in the
	 * same stop; with TINSPECT_OPT_NONBLOCKING, without stopping), so
	 * that tinspect_thread_held() knows the locks a thread holds beyond
	 * those others wait on now: what a lock-order graph is learned from
	 * (tinspect_locks(3), "Held locks").  A few dozen bytes per lock in
	 * one batched read; at most 1024 locks, the one seen least recently
	 * forgotten first (tinspect_snapshot_locks_forgotten()). */
	TINSPECT_OPT_TRACK_LOCKS = 1u << 9,
};

/*
 * What a session does.  Declare it with TINSPECT_OPTIONS() (below), or
 * memset() it to zero and set `size` to sizeof(struct tinspect_options):
 * zero is the default of every member.  `size` lets later versions of the
 * library add members at the end without breaking programs built against
 * this one.  tinspect_session_init() copies what it needs (the tls
 * requests and their names too): the structure may be freed after it
 * returns, except what `cancel` and `holding` point to, which must live
 * as long as the session.
 */
struct tinspect_options {
	size_t size;		/* sizeof(struct tinspect_options) */
	/* A thread that has not stopped this long after being interrupted
	 * (uninterruptible sleep) is left out of the snapshot, marked
	 * straggler, instead of keeping every other thread stopped.
	 * 0: 1 second; UINT64_MAX: wait for ever. */
	uint64_t stop_timeout_ns;
	/* Abandon an update (-ETIMEDOUT, the target resumed) once the target
	 * has been stopped this long.  0: no limit. */
	uint64_t max_freeze_ns;
	/* If *cancel becomes non-zero during an update or a wait, the
	 * library resumes the target and returns -EINTR.  NULL: none.  A
	 * signal handler may raise it. */
	const volatile sig_atomic_t *cancel;
	/* The signal that ends the library's blocking waits at their
	 * deadlines (see "Signals" in tinspect(3)); the embedder installs a
	 * handler for it without SA_RESTART.  0: none, deadlines are then
	 * checked between waits only. */
	int wake_signal;
	/* Raised while the library holds the target: 2 or more from the
	 * first stop to the last resume of an update (a value that changes
	 * from one stop to the next, so that a watchdog can time a freeze),
	 * 1 while it follows threads between updates.  Lowered (0)
	 * otherwise.  A signal handler that would end the process reads it:
	 * while it is 0, nothing is stopped and the process may exit at
	 * once.  NULL: none. */
	volatile sig_atomic_t *holding;
	unsigned flags;		/* enum tinspect_option_flags */
	/* libthread_db to load; NULL: the system's libthread_db.so.1. */
	const char *thread_db_path;
	/* Bytes of each thread's stack copied during the stop, from its
	 * stack pointer up; 0: 64 KiB. */
	size_t stack_bytes;
	/* At most this many frames per stack; 0: 256. */
	unsigned max_frames;
	/* Thread-local variables to read in every thread, in this order
	 * (names unique), read during the stop. */
	const struct tinspect_tls_request *tls;
	size_t ntls;
	/* Colon-separated directories, as the calling process reaches them
	 * by path, whose libthread_db.so.1 may be loaded for a target without
	 * TINSPECT_OPT_TARGET_THREAD_DB (gdb's auto-load safe-path); the
	 * tinspect program passes $TINSPECT_THREAD_DB_SAFE_PATH.  NULL: none. */
	const char *thread_db_safe_path;
};

/*
 * Declare options NAME with every byte zero, padding included, then
 * `size` and the members given set (libbpf's LIBBPF_OPTS):
 *     TINSPECT_OPTIONS(opts, .flags = TINSPECT_OPT_KEYS, .max_frames = 64);
 * Zero padding matters to a library older than the program: the bytes
 * beyond the members it knows must be zero, and a newer member's padding
 * lies among them.  A GNU C statement expression (GCC, Clang).
 */
#define TINSPECT_OPTIONS(NAME, ...)						\
	struct tinspect_options NAME = ({					\
		memset(&NAME, 0, sizeof(struct tinspect_options));		\
		(struct tinspect_options){					\
			.size = sizeof(struct tinspect_options),		\
			__VA_ARGS__						\
		};								\
	})
/* The older form, an initializer: the members are zero, padding is left
 * to the compiler.  Prefer TINSPECT_OPTIONS(). */
#define TINSPECT_OPTIONS_INIT { .size = sizeof(struct tinspect_options) }

/*
 * The TYPE of a thread-local variable by name: int long unsigned ulong
 * int8 int16 int32 int64 uint8 uint16 uint32 uint64 hex hex8 hex16 hex32
 * hex64 pointer string float double bool bytes:N (N at most
 * TINSPECT_TLS_BYTES_MAX).  Returns 0 and *ret_type, *ret_size, or
 * -EINVAL.  Thread-safe.
 */
int tinspect_tls_parse_type(const char *name, enum tinspect_tls_type *ret_type,
			    unsigned *ret_size);

/* ---- the session ------------------------------------------------------- */

/*
 * Open the live process pid: check that it can be inspected, read its
 * module map, load libthread_db.  Does not stop it.  opts may be NULL
 * (every default).  Returns 0 and *ret, or:
 *   -ESRCH    no such process (or only its zombie: tinspect_process_status())
 *   -EPERM, -EACCES  not permitted (tinspect_diagnose_eperm() says why)
 *   -ENOEXEC  not a process of this library's architecture and class
 *             (32-bit, foreign), or a kernel thread
 *   -EINVAL   opts is malformed (size too small or unknown non-zero
 *             members beyond what this library knows)
 *   -ENOMEM
 * Destroy the session with tinspect_session_destroy().
 */
int tinspect_session_init(pid_t pid, const struct tinspect_options *opts,
			  tinspect_session **ret);

/*
 * Open a core file instead of a live process, in the manner of libdwfl's
 * dwfl_core_file_report: core is an ELF core (written by the kernel or by
 * gdb's gcore), plain or compressed by zstd, xz or lz4 as
 * systemd-coredump stores them (decompressed while read, never to disk).
 * The files its mappings name (NT_FILE) are looked up under sysroot
 * (NULL or "/": this system's root), the executable at exe if not NULL
 * (it was deleted or moved).  A file is used only if its build-id is the
 * one in the core's memory: otherwise the snapshot has a warning and that
 * module's symbols are unknown.  Updates read the core and stop nothing;
 * tinspect_session_follow() is refused (-EOPNOTSUPP).  Facts a core does
 * not hold (a thread's state letter, wchan, CPU times, scheduling, the
 * names of threads but the main one) are unknown in its snapshots.
 * Returns 0 and *ret, or, with why[whylen] (may be NULL) saying what:
 *   -ENOENT, -EACCES, ...  the core cannot be opened (open(2)'s errors;
 *             -ENXIO: not a regular file)
 *   -ENOEXEC  not an ELF core this library reads (another architecture)
 *   -EBADMSG  headers or notes too damaged to use
 *   -EOPNOTSUPP  a compression this library does not read
 *   -EIO      a compressed stream broken before the notes
 *   -EINVAL   core is NULL, or opts is malformed
 *   -ENOMEM
 */
int tinspect_session_init_core(const char *core, const char *exe,
			       const char *sysroot,
			       const struct tinspect_options *opts,
			       tinspect_session **ret, char *why, size_t whylen);

/*
 * One capture: stop every thread of the process together for as short a
 * time as possible, copy what the snapshot needs, resume, then analyse
 * (unwind, symbolize, decode locks, find deadlocks) while the process
 * runs.  The target is running again when this returns, on success and on
 * every error.  Threads that could not be read fully are data (their
 * errors), not a failure.  Returns 0 and a new *ret, to be freed with
 * tinspect_snapshot_free(), or:
 *   -ESRCH      the process has exited
 *   -ESTALE     it executed a new program: destroy this session and init
 *               a new one to inspect the new program
 *   -ETIMEDOUT  max_freeze_ns was exceeded: the capture was abandoned and
 *               the target resumed; the session may update again
 *   -EINTR      *cancel was raised; everything was resumed
 *   -EPERM      the process could not be stopped (another tracer)
 *   -ENOMEM
 * It runs the capture in a thread of its own (see tinspect(3)), or in the
 * calling thread while the session follows threads.
 */
int tinspect_session_update(tinspect_session *s, tinspect_snapshot **ret);

/*
 * Free a session: stop following, detach from whatever is still attached
 * (the target runs on), unload libthread_db, close its files.  Snapshots
 * taken with it stay valid.
 *   - s may be NULL: nothing happens.
 *   - No half-initialised session reaches the caller: a failed
 *     tinspect_session_init() has freed what it had built and left *ret as
 *     it was, so a pointer set to NULL before init can be destroyed
 *     whatever init returned.
 *   - s may be in any state the other functions leave it in: after any
 *     error of tinspect_session_update() (-ESTALE, -ETIMEDOUT, -EINTR,
 *     ...), or while following (then call it from the thread that
 *     follows).
 *   - Not idempotent: s is freed, and a second call with the same pointer
 *     is a use after free.  Set your pointer to NULL after it.
 */
void tinspect_session_destroy(tinspect_session *s);

/* The process the session inspects (for a core: the PID it had). */
pid_t tinspect_session_pid(const tinspect_session *s);

/* ---- following threads between updates (watch mode) -------------------- */

enum tinspect_event_kind {
	TINSPECT_EVENT_THREAD_CREATED,
	TINSPECT_EVENT_THREAD_EXITED,
};

/*
 * Stay attached between updates (PTRACE_O_TRACECLONE on every thread), so
 * that thread creations and exits become events that tinspect_session_wait()
 * hands over.  Updates then interrupt and continue the threads instead of
 * seizing and detaching them.  From now on every call on s must come from
 * this thread.  While following, every thread the target creates waits at
 * its first stop until the session has seen it: call
 * tinspect_session_wait() (or tinspect_session_service()) often.
 * Returns 0, or -EPERM (nothing could be attached), -ESRCH, -ENOMEM.
 */
int tinspect_session_follow(tinspect_session *s);
/* Let every thread held at an event stop go on, without blocking.  Call
 * it between long steps of your own while following (after rendering a
 * large snapshot, say).  Nothing when not following. */
void tinspect_session_service(tinspect_session *s);
/* Stop following: detach from every thread.  Safe when not following. */
void tinspect_session_unfollow(tinspect_session *s);

/* Called for each event.  ev and what it points to are valid during the
 * call only. */
typedef void (*tinspect_event_fn)(void *arg, const tinspect_event *ev);

/*
 * Until deadline_ns of CLOCK_MONOTONIC: sleep, and while following hand
 * every thread creation and exit to fn (a new thread's start routine is
 * read while the kernel holds it at its first stop).  Returns 0 at the
 * deadline, -ESRCH once the process has exited, -EINTR if *cancel was
 * raised.  Without tinspect_session_follow() it only sleeps.  Ends at the
 * deadline on time only with a wake_signal (see tinspect(3)).
 */
int tinspect_session_wait(tinspect_session *s, uint64_t deadline_ns,
			  tinspect_event_fn fn, void *arg);

enum tinspect_event_kind tinspect_event_kind(const tinspect_event *ev);
pid_t tinspect_event_tid(const tinspect_event *ev);
/* CREATED: the thread that created it. */
pid_t tinspect_event_parent(const tinspect_event *ev);
/* EXITED: how it ended, as waitpid() reports it (WIFEXITED...). */
int tinspect_event_wait_status(const tinspect_event *ev);
/* When the library saw it (CLOCK_REALTIME). */
void tinspect_event_time(const tinspect_event *ev, int64_t *ret_sec,
			 long *ret_nsec);
/* CREATED: its start routine; NULL if it could not be read. */
const tinspect_symbol *tinspect_event_start(const tinspect_event *ev);

/* ---- why a process cannot be inspected ---------------------------------- */

/* Why ptrace was refused (tinspect_diagnose_eperm()). */
enum tinspect_eperm_cause {
	TINSPECT_EPERM_UNKNOWN = 0,	/* a security module, seccomp, ... */
	TINSPECT_EPERM_TRACED,		/* another tracer holds it */
	TINSPECT_EPERM_OTHER_UID,	/* another user's, no CAP_SYS_PTRACE */
	TINSPECT_EPERM_YAMA,		/* kernel.yama.ptrace_scope forbids it */
	TINSPECT_EPERM_NOT_DUMPABLE,	/* set-id, or PR_SET_DUMPABLE 0 */
};

struct tinspect_eperm_diag {
	enum tinspect_eperm_cause cause;
	pid_t tracer_pid;		/* TRACED: who traces it */
	char tracer_comm[64];		/* TRACED: its name, raw bytes */
	int yama_scope;			/* YAMA: the scope; -1 unknown */
	uid_t target_uid;		/* OTHER_UID: whose it is */
};

/*
 * After -EPERM or -EACCES: why, from /proc and the calling process's own
 * credentials.  Fills the first `size` bytes of *ret (pass sizeof *ret).
 * Returns 0, or -EINVAL (size 0).  Thread-safe.
 */
int tinspect_diagnose_eperm(pid_t pid, struct tinspect_eperm_diag *ret,
			    size_t size);

/*
 * What /proc says about process pid (after -ESRCH or -ENOEXEC): its state
 * letter ('Z' a zombie, ...), its parent, whether it is a kernel thread.
 * Any ret_ may be NULL.  Returns 0, -ESRCH (no such process) or -ENODATA
 * (its stat could not be read).  Thread-safe.
 */
int tinspect_process_status(pid_t pid, char *ret_state, pid_t *ret_ppid,
			    bool *ret_kernel_thread);

/* ---- errors and the architecture ---------------------------------------- */

/*
 * The text of an error this library returned (a negative errno; a
 * positive one is read the same): its meaning for tinspect where it has
 * one ("the process executed a new program" for -ESTALE), else the
 * system's text.  Never NULL; a static string.  Thread-safe.
 */
const char *tinspect_strerror(int err);

/* The architecture this library inspects ("x86_64", "aarch64"). */
const char *tinspect_host_arch(void);

#ifdef __cplusplus
}
#endif

#endif
