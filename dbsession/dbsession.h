/*
 * dbsession (dbs_*): an inspection session over one process, in the
 * lifecycle of AIX's pthdb: init once, update as often as wanted (each
 * update is one stop-gather-resume cycle and yields an immutable snapshot),
 * destroy at the end.  Module maps, symbol tables and the libthread_db agent
 * survive between updates and are refreshed when the target's module list
 * changes (a generation number, as in strace's unwinder cache).
 *
 * Contracts:
 *  - dbs_session_init() does not stop the target.
 *  - dbs_session_update() stops the target for the shortest time it can and
 *    has resumed every task before it returns, on success and on every
 *    error path.  Per-thread failures are recorded in the thread (errors[]),
 *    never returned as a failure of the update.
 *  - A snapshot stays valid after later updates and after the session is
 *    destroyed; free it with dbs_snapshot_free().
 *  - Errors are negative errno values (see proc_service/psvc.h for the ones
 *    callers tell apart).  Nothing here prints or exits.
 */
#ifndef TINSPECT_DBSESSION_H
#define TINSPECT_DBSESSION_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "psvc.h"

struct dbs_session;

/* Defaults of the stack capture. */
#define DBS_DEFAULT_STACK_BYTES (64u * 1024)
#define DBS_DEFAULT_MAX_FRAMES 256
/* ---- what --tls, --errno and --keys ask for (tls.c, keys.c) ------------ */

/* How a thread-local variable's bytes are decoded. */
enum dbs_tls_type {
	DBS_TLS_AUTO = 0,	/* the DWARF type if there is one, else the
				 * symbol's size as hex (never a guessed sign) */
	DBS_TLS_INT,		/* signed integer of `size` bytes (1/2/4/8) */
	DBS_TLS_UNSIGNED,	/* unsigned integer of `size` bytes */
	DBS_TLS_HEX,		/* unsigned, shown in hex; size 0: the symbol's */
	DBS_TLS_POINTER,	/* an address, symbolized */
	DBS_TLS_STRING,		/* char *: the pointer and the string it points
				 * to, at most DBS_TLS_STRING_MAX bytes */
	DBS_TLS_BYTES,		/* `size` raw bytes (at most DBS_TLS_BYTES_MAX) */
	DBS_TLS_FLOAT,		/* 4 or 8 bytes (from DWARF only) */
	DBS_TLS_BOOL,		/* 1 byte (from DWARF only) */
};
#define DBS_TLS_STRING_MAX 256
#define DBS_TLS_BYTES_MAX 4096

struct dbs_tls_request {
	const char *name;	/* the variable, as in the symbol table */
	enum dbs_tls_type type;
	unsigned size;		/* bytes; 0: from the symbol or DWARF */
};
/* Parse the TYPE of --tls NAME:TYPE (int long unsigned ulong int8 int16
 * int32 int64 uint8 uint16 uint32 uint64 hex hex8..hex64 pointer string
 * float double bool bytes:N) into ret->type and ret->size.  Returns 0 or
 * -EINVAL. */
int dbs_tls_parse_type(const char *type, struct dbs_tls_request *ret);
/* The canonical name of a type ("int", "bytes:16", ...) into buf. */
const char *dbs_tls_type_name(enum dbs_tls_type type, unsigned size,
			      char *buf, size_t len);

struct dbs_options {
	uint64_t max_freeze_ns;		/* 0: no limit */
	uint64_t stop_timeout_ns;	/* per task; 0: wait for ever */
	const volatile sig_atomic_t *cancel;
	int wake_signal;		/* see struct psvc_stop_opts */
	/* raised while the session holds the target (stopped or followed),
	 * lowered when a signal may end the program at once; see struct
	 * psvc_open_opts.  May be NULL. */
	volatile sig_atomic_t *holding;
	bool force_proc_mem;		/* read memory via /proc/PID/mem */
	/* libthread_db.so to load; NULL: the system's libthread_db.so.1 */
	const char *thread_db_path;
	/* Stacks: copied during the stop (at most stack_bytes above each
	 * thread's sp), unwound after the resume. */
	bool no_stacks;
	size_t stack_bytes;		/* 0: DBS_DEFAULT_STACK_BYTES */
	unsigned max_frames;		/* 0: DBS_DEFAULT_MAX_FRAMES */

	/* Read only when asked for (they cost freeze time): */
	const struct dbs_tls_request *tls;	/* --tls, in order */
	size_t ntls;
	bool want_errno;	/* --errno: libc's errno in every thread */
	bool want_keys;		/* --keys: pthread keys and their values */
	/* Load the target's own libthread_db when the system's does not
	 * fit its glibc (--target-thread-db): it is code from the target's
	 * file system, run in tinspect, so never by default. */
	bool target_thread_db;
	/* Colon-separated directories (as tinspect sees them) whose
	 * libthread_db.so.1 may be loaded without target_thread_db, like
	 * gdb's auto-load safe-path; NULL or "": none. */
	const char *thread_db_safe_path;
	/* How updates capture (nonblock.c). */
	enum dbs_capture_mode {
		DBS_MODE_STOP = 0,	/* stop every thread (the default) */
		/* hold nothing; a candidate deadlock or stall is confirmed
		 * by one all-stop capture, which is then the update */
		DBS_MODE_NONBLOCKING,
		/* hold nothing, ever: candidates stay unconfirmed */
		DBS_MODE_NONBLOCKING_STRICT,
	} mode;
	/* the nonblocking capture at SCHED_IDLE (nonblock.c) */
	bool idle_priority;
	/* Remember every mutex and rwlock an update saw waited on, and read
	 * their words again in every later update (in the same stop, or
	 * without stopping), so that each thread's held locks are known
	 * beyond the locks waited on now (lock_held.c): what a lock-order
	 * graph is learned from. */
	bool track_locks;
};

/* Whose libthread_db served the snapshot. */
enum dbs_tdb_origin {
	DBS_TDB_FROM_NONE = 0,	/* none served it */
	DBS_TDB_FROM_SYSTEM,	/* the system's libthread_db.so.1 */
	DBS_TDB_FROM_TARGET,	/* the target's own, beside its libc */
	DBS_TDB_FROM_GIVEN,	/* the one named by thread_db_path */
};
const char *dbs_tdb_origin_name(enum dbs_tdb_origin o);

/* What libthread_db made of the target. */
enum dbs_tdb_status {
	DBS_TDB_OK = 0,
	DBS_TDB_NOLIBTHREAD,	/* no libc/threads found (yet) */
	DBS_TDB_VERSION,	/* target glibc differs from libthread_db's */
	DBS_TDB_NOSYMS,		/* static binary without .symtab */
	DBS_TDB_UNAVAILABLE,	/* libthread_db could not be loaded */
	DBS_TDB_ERROR,		/* another libthread_db error */
	DBS_TDB_NOT_USED,	/* a C library without one (musl): threads
				 * identified its own way (libc.h) */
};
const char *dbs_tdb_status_name(enum dbs_tdb_status s);

/* A symbolized address. */
struct dbs_symbol {
	uint64_t addr;
	char *module;		/* path, NULL if no module holds addr */
	char *name;		/* NULL if no symbol covers addr */
	uint64_t offset;	/* from the symbol, or from the module bias */
};

/* One frame of a stack.  Strings are owned by the snapshot (interned:
 * thousands of threads share the same few frames). */
struct dbs_frame {
	uint64_t pc;		/* as unwound (a return address above #0) */
	bool inlined;		/* a function inlined into the next frame */
	const char *module;	/* path; NULL if no module holds pc */
	const char *build_id;	/* hex; NULL if none */
	const char *symbol;	/* demangled; NULL if unknown */
	const char *mangled;	/* the ELF/DWARF name when it differs */
	uint64_t offset;	/* pc - symbol start; 0 for inlined frames */
	const char *file;	/* source file, NULL without debug info */
	int line;		/* 0 if unknown */
	uint64_t module_offset;	/* pc - the module's bias (the address
				 * addr2line and objdump use); 0 without a
				 * module */
	uint64_t sp;		/* the stack pointer in this frame (its
				 * callee's CFA); 0 if unknown */
	bool scanned;		/* found by scanning the stack for a return
				 * address (stackscan.c), not unwound */
};

/* Why a stack ends where it ends. */
enum dbs_stack_end {
	DBS_STACK_NONE = 0,	/* not unwound (no registers, --no-stacks) */
	DBS_STACK_COMPLETE,	/* reached the outermost frame */
	DBS_STACK_TRUNCATED,	/* needed memory the stop did not copy */
	DBS_STACK_MAX_FRAMES,	/* --max-frames reached */
	DBS_STACK_BAD_SP,	/* sp did not move up: garbage or a loop */
	DBS_STACK_ERROR,	/* the unwinder gave up (see error) */
	DBS_STACK_UNKNOWN_CODE,	/* stopped at (or right after) code outside
				 * any module, JIT or generated code, whose
				 * caller neither CFI nor a frame pointer
				 * chain leads to: expected, not an error */
	DBS_STACK_SWITCH,	/* stopped at a Go runtime function that
				 * switches stacks (mcall, systemstack,
				 * asmcgocall, ...): its callers are on
				 * another stack; not an error (gowalk.c) */
	DBS_STACK_SCANNED,	/* some frames were found by scanning the
				 * stack past code without CFI (musl's
				 * libc), and the scan found no further
				 * return address: not an error, but frames
				 * between may be missing (stackscan.c) */
	DBS_STACK_REGISTER_UNKNOWN, /* the next frame's return address is
				 * still in a register the capture does not
				 * read (a nonblocking one, in an aarch64
				 * function that has not saved its link
				 * register): not an error (gowalk.c) */
};
const char *dbs_stack_end_name(enum dbs_stack_end e);

/* An end that is a failure to read the thread: the thread's errors say
 * so and the exit status is "partial" (BAD_SP in native code, ERROR). */
bool dbs_stack_end_is_error(enum dbs_stack_end e);

struct dbs_stack {
	struct dbs_frame *frames;	/* innermost first */
	size_t nframes;
	enum dbs_stack_end end;
	const char *error;	/* why it ended, for the error ends only */
	uint64_t copied_from, copied_to; /* the stack bytes captured */
};

/* One thread-local variable as resolved in the process (snapshot-wide). */
struct dbs_tls_var {
	char *name;
	bool is_errno;		/* the --errno built-in */
	bool found;
	char *error;		/* why it was not found / cannot be read */
	char *module;		/* path of the module that defines it */
	uint64_t offset;	/* in the module's TLS block */
	enum dbs_tls_type type;	/* never AUTO here */
	unsigned size;		/* bytes read at the variable's address */
	char type_name[24];	/* dbs_tls_type_name() */
	char *c_type;		/* from DWARF ("long int", "char *"), or NULL */
	const char *source;	/* "symtab", "dwarf", "dwarf+symtab" */
};

enum dbs_tls_status {
	DBS_TLS_OK = 0,
	DBS_TLS_NOT_ALLOCATED,	/* dlopen'ed module this thread has not
				 * touched yet (TD_NOTALLOC): not an error */
	DBS_TLS_NOT_FOUND,	/* no such variable in the process */
	DBS_TLS_UNAVAILABLE,	/* no libthread_db, thread not stopped, ... */
	DBS_TLS_ERROR,		/* libthread_db or the read failed */
};

/* One variable in one thread. */
struct dbs_tls_value {
	enum dbs_tls_status status;
	bool have_addr;
	uint64_t addr;
	unsigned char *bytes;	/* var->size bytes read at addr */
	/* DBS_TLS_STRING: the string the pointer points to */
	char *str;		/* NULL if not read (NULL pointer, unreadable) */
	size_t str_len;
	bool str_truncated;
	/* DBS_TLS_POINTER: what it points into */
	struct dbs_symbol ptr_sym;
	char *error;
};

/* A DBS_TLS_OK value read as a number, for the writers: the raw bits
 * (sizes up to 8, zero-extended), the signed reading of an INT of its
 * size, the value of a FLOAT. */
uint64_t dbs_tls_bits(const struct dbs_tls_var *var, const struct dbs_tls_value *v);
int64_t dbs_tls_signed(const struct dbs_tls_var *var, const struct dbs_tls_value *v);
double dbs_tls_double(const struct dbs_tls_var *var, const struct dbs_tls_value *v);

/* A pthread key in use (--keys). */
struct dbs_key {
	unsigned key;
	uint64_t seq;
	uint64_t destructor;	/* 0: none */
	struct dbs_symbol destructor_sym;
};

/* One in-use key in one thread: what pthread_getspecific() would return. */
struct dbs_key_value {
	unsigned key;
	uint64_t value;		/* 0 if never set in this thread */
	bool unknown;		/* its slot could not be read: value means
				 * nothing */
};

/* Where the thread's stack is, from the mapping that holds sp
 * (/proc/PID/maps read before the stop). */
enum dbs_bounds_status {
	DBS_BOUNDS_UNKNOWN = 0,	/* no registers, or sp in no mapping */
	DBS_BOUNDS_OK,
	DBS_BOUNDS_LOW,		/* less than DBS_BOUNDS_LOW_BYTES or 1/8 left */
	DBS_BOUNDS_OVERFLOW,	/* sp in the guard page or below the limit */
	DBS_BOUNDS_NOT_STACK,	/* sp in a mapping that is not a stack
				 * (sigaltstack, a user-allocated stack) */
};
#define DBS_BOUNDS_LOW_BYTES (16 * 1024)

struct dbs_stack_bounds {
	enum dbs_bounds_status status;
	bool main;		/* the [stack] mapping of the initial thread */
	uint64_t low, high;	/* the mapping that holds sp */
	uint64_t guard_low, guard_high;	/* PROT_NONE mapping below; 0 none */
	uint64_t limit;		/* lowest address sp may reach: the guard's
				 * top, or high - RLIMIT_STACK; 0 unknown */
	uint64_t used;		/* high - sp */
	uint64_t avail;		/* sp - limit; valid if limit */
	const char *unknown;	/* status UNKNOWN: why, when that is no
				 * failure (static text); NULL otherwise */
};

struct dbs_thread {
	pid_t tid;		/* in tinspect's PID namespace */
	pid_t ns_tid;		/* in the target's (NSpid); == tid usually; 0:
				 * unknown (other PID namespace, NSpid not
				 * read) */
	char *name;		/* raw bytes of the kernel's comm */
	size_t name_len;

	/* /proc, read before the stop (after the resume for threads that
	 * appeared during it: proc_before_stop == false) */
	bool proc_valid;
	bool proc_before_stop;
	char state;		/* R S D T t Z X I ... ; 0 unknown */
	char wchan[64];
	double utime_s, stime_s;
	/* voluntary + nonvoluntary context switches (status); valid if
	 * have_ctxt */
	uint64_t ctxt_switches;
	uint64_t vol_ctxt_switches;	/* the voluntary ones alone */
	bool have_ctxt;
	unsigned policy, rt_priority;
	long priority, nice;
	int processor;
	uint64_t sigblk, sigpnd;
	char cpus_allowed[128];
	/* /proc/TID/syscall before the stop */
	enum psvc_sc_kind proc_sc_kind;
	long proc_sc_nr;
	uint64_t proc_sc_args[6];

	/* ptrace */
	bool stopped;		/* was part of the consistent snapshot */
	/* nonblocking capture: blocked, pc/sp/syscall from /proc (the other
	 * registers unknown: gregs holds 0 there), never stopped */
	bool observed;
	bool moved;		/* observed, but it may have run while its
				 * memory was copied: no stack, no wait */
	bool straggler;		/* did not stop in time (D state) */
	bool jobctl_stopped;	/* was in a job-control stop */
	bool have_regs;
	uint64_t gregs[ARCH_MAX_GREGS];
	uint64_t pc, sp, tp;
	struct arch_syscall syscall;	/* from the registers */

	/* libthread_db */
	bool have_pthread;
	uint64_t pthread;	/* pthread_t */
	int td_state;		/* td_thr_state_e */
	bool is_main;		/* ti_startfunc NULL: the initial thread */
	int detach_state;	/* enum dbs_detach_state (libc.h); musl only */
	struct dbs_symbol start;	/* start routine */

	struct dbs_stack stack;

	/* per-thread failures, as text: "registers: No such process" */
	char **errors;
	size_t nerrors;

	/* --tls / --errno: one value per snapshot tls_vars[] entry */
	struct dbs_tls_value *tls;
	size_t ntls;
	/* --keys: every key in use, in key order; keys_read false if not
	 * asked for or unreadable in this thread */
	bool keys_read;
	struct dbs_key_value *keys;
	size_t nkeys;
	struct dbs_stack_bounds bounds;
	/* what it sleeps on (a futex wait), NULL if it is not blocked on one;
	 * see the lock section below */
	struct dbs_blocked_on *blocked_on;
	/* since when it has been in this wait (waits.c): CLOCK_REALTIME ns
	 * of the first update of the session that saw it in it; 0: in no
	 * wait, or not known */
	int64_t waiting_since_ns;
	/* The mutexes and rwlocks (for writing) it holds, as the words read
	 * in this update record it (lock_held.c), by address; held_known
	 * false when they cannot be known: the thread did not stop (or, in a
	 * nonblocking capture, it ran while it was looked at). */
	bool held_known;
	struct dbs_held *held;
	size_t nheld;
};

/* A language runtime whose locks are not pthread objects (runtimes.c):
 * what tinspect cannot see in it, and which tool can. */
struct dbs_runtime {
	const char *name;	/* "jvm", "cpython", "go" */
	char *module;		/* the module that shows it, or NULL */
	char *version;		/* its version ("go1.19.8"), NULL if not
				 * known */
	char *note;		/* what stays invisible, and what to run */
};

/* Where the time of one update went.  stop+regs+memory+thread_db+resume
 * is the freeze. */
struct dbs_timings {
	uint64_t scan_ns;	/* /proc facts and module map, target running */
	uint64_t stop_ns;	/* seize, interrupt, wait for every stop */
	uint64_t regs_ns;	/* PTRACE_GETREGSET of every thread */
	uint64_t memory_ns;	/* batched copies: struct pthread, stacks */
	uint64_t thread_db_ns;	/* libthread_db, from the copies */
	uint64_t resume_ns;	/* detach every thread */
	uint64_t analyse_ns;	/* unwinding, symbols; target running */
};

struct dbs_snapshot {
	pid_t pid;
	const struct arch_desc *arch;
	char *exe;
	char **argv;
	size_t argc;
	char glibc_version[16];		/* "" if unknown */
	const char *libc_name;		/* "glibc", "musl"; NULL if none known */
	char libc_version[24];		/* "" if unknown */
	int threads_source;		/* enum dbs_threads_source (libc.h) */
	enum dbs_tdb_status tdb_status;
	char *tdb_detail;		/* libthread_db's error, or NULL */
	enum psvc_modmap_source modmap_source;
	uint64_t module_generation;

	/* What produced this snapshot (nonblock.c). */
	enum dbs_capture_kind {
		DBS_CAPTURE_STOP = 0,	/* an all-stop capture */
		DBS_CAPTURE_NONBLOCKING,	/* nothing held: not consistent,
						 * cycles and stalls are only
						 * candidates (unconfirmed) */
		DBS_CAPTURE_CONFIRMATION,	/* an all-stop capture taken
						 * because a nonblocking one
						 * showed candidates */
	} capture;
	/* DBS_CAPTURE_CONFIRMATION: the candidates the nonblocking capture
	 * showed (cycles, stalls); its duration */
	size_t candidate_cycles, candidate_stalls;
	uint64_t observe_ns;
	struct timespec captured_at;	/* CLOCK_REALTIME at the stop */
	uint64_t freeze_ns;		/* first stop to last resume */
	uint64_t duration_ns;		/* whole update */
	struct dbs_timings timings;
	size_t threads_seen;		/* tasks met, including vanished */
	size_t threads_stopped;
	size_t threads_vanished;	/* exited while we attached */
	size_t stragglers;

	struct dbs_thread *threads;	/* main thread first, then by tid */
	size_t nthreads;

	char **errors;			/* capture-wide problems */
	size_t nerrors;
	size_t threads_with_errors;

	bool stacks;			/* stacks were captured */
	uint64_t stack_bytes_copied;	/* during the stop, all threads */
	struct dbs_strpool *strings;	/* owns frame strings */
	char *thread_db_path;		/* the libthread_db used, or NULL; the
					 * target's own: as the target sees it */
	enum dbs_tdb_origin tdb_origin;
	char **warnings;		/* degraded, not failed: "the target's
					 * libthread_db could not be loaded" */
	size_t nwarnings;
	struct dbs_tls_var *tls_vars;	/* --tls in order, then --errno */
	size_t ntls_vars;
	bool keys_read;			/* --keys asked and readable */
	struct dbs_key *keys;		/* in use, by key */
	size_t nkeys;
	size_t keys_max;		/* PTHREAD_KEYS_MAX of the target */
	struct dbs_runtime *runtimes;	/* detected, each also a warning */
	size_t nruntimes;
	/* locks waited on, wait-for graph, deadlocks; NULL if not analysed */
	struct dbs_locks *locks;
	/* the threads' held locks were worked out (lock_held.c); how many
	 * locks' words that read (those waited on now, and with track_locks
	 * those the session remembers), and how many the session forgot
	 * for lack of room since it began */
	bool held_analysed;
	size_t locks_tracked;
	size_t locks_forgotten;

	/* a core file (dbs_session_init_core): no stop, no /proc */
	bool from_core;
	/* the signal that ended the process (a core's NT_SIGINFO) */
	bool have_signal;
	struct psvc_signal_info signal;
};

int dbs_session_init(pid_t pid, const struct dbs_options *opts,
		     struct dbs_session **ret);
/*
 * A session over a core file instead of a live process (psvc_open_core):
 * its files under sysroot (NULL: "/"), exe for the executable (NULL: its
 * path in the core).  Updates read the core; they never stop anything.
 * Errors as psvc_open_core(), why[] saying what.
 */
int dbs_session_init_core(const char *core, const char *exe,
			  const char *sysroot, const struct dbs_options *opts,
			  struct dbs_session **ret, char *why, size_t whylen);
/* One stop-gather-resume cycle.  On success *ret is a new snapshot. */
int dbs_session_update(struct dbs_session *s, struct dbs_snapshot **ret);
/* Frees s: NULL and half-initialised sessions are fine; not idempotent
 * (a second call on the same pointer is a use after free). */
void dbs_session_destroy(struct dbs_session *s);

/* The process the session is about (a core: the PID the core names). */
pid_t dbs_session_pid(const struct dbs_session *s);

/* ---- thread lifecycle events (watch --follow-threads) -------------------- */

enum dbs_event_kind {
	DBS_EVENT_THREAD_CREATED,
	DBS_EVENT_THREAD_EXITED,
};

struct dbs_event {
	enum dbs_event_kind kind;
	pid_t tid;
	pid_t parent;		/* created: who cloned it */
	int wait_status;	/* exited: as waitpid() reported it */
	struct timespec time;	/* CLOCK_REALTIME when it was seen */
	bool have_start;	/* created: start routine known */
	struct dbs_symbol start;	/* valid during the callback only */
};
typedef void (*dbs_event_fn)(void *arg, const struct dbs_event *ev);

/*
 * Stay attached between updates (PTRACE_O_TRACECLONE on every task), so
 * that thread creations and exits become events.  Updates then interrupt
 * and continue the tasks instead of seizing and detaching them.
 */
int dbs_session_follow(struct dbs_session *s);
/* Let every task held at an event stop go on, without blocking (call it
 * between long steps while following).  Nothing when not following. */
void dbs_session_service(struct dbs_session *s);
/* Stop following: detach from every task.  Idempotent. */
void dbs_session_unfollow(struct dbs_session *s);
/*
 * Until deadline_ns (CLOCK_MONOTONIC): sleep in the kernel, handing each
 * thread event to fn; a new thread's start routine is read while the
 * kernel holds it at its first stop.  Returns 0 at the deadline, -ESRCH
 * once the process has exited, -EINTR if *cancel was raised.  Without
 * dbs_session_follow(), it just sleeps.
 */
int dbs_session_wait(struct dbs_session *s, uint64_t deadline_ns,
		     dbs_event_fn fn, void *arg);

void dbs_snapshot_free(struct dbs_snapshot *snap);

/* ---- locks: what blocked threads wait on, and the wait-for graph ------------ */

/*
 * Decoded after the resume from the words read during the stop (glibc
 * 2.36 layouts, docs/GLIBC.md §5-6).  Nothing here is a guess: a futex
 * that the evidence does not identify stays kind "futex", an owner the
 * words do not record stays unknown.
 */
enum dbs_lock_kind {
	DBS_LOCK_FUTEX = 0,	/* a futex word tinspect cannot identify */
	DBS_LOCK_MUTEX,
	DBS_LOCK_RWLOCK,
	DBS_LOCK_COND,
	DBS_LOCK_SEM,
	DBS_LOCK_BARRIER,
	DBS_LOCK_JOIN,		/* pthread_join: the object is a thread */
	DBS_LOCK_FILE,		/* a stdio FILE's lock (musl: FILE + 140) */
};
const char *dbs_lock_kind_name(enum dbs_lock_kind k);

enum dbs_wait_mode {
	DBS_MODE_NONE = 0,
	DBS_MODE_READ,		/* rwlock: waits to read-lock */
	DBS_MODE_WRITE,		/* rwlock: waits to write-lock */
};

/* What the classification of a wait rests on (bits). */
enum dbs_evidence {
	DBS_EV_SYSCALL = 1u << 0,	/* futex(2) wait in the stopped registers */
	DBS_EV_RESTART = 1u << 1,	/* restart_syscall of a futex wait */
	DBS_EV_PROC = 1u << 2,		/* /proc before the stop only (thread
					 * not stopped: not in the graph) */
	DBS_EV_WORDS = 1u << 3,		/* the object's words fit the layout and
					 * the state the wait implies */
	DBS_EV_SYMBOL = 1u << 4,	/* a symbol of exactly the type's size */
	DBS_EV_FRAMES = 1u << 5,	/* a calling frame names the entry point */
	DBS_EV_THREAD = 1u << 6,	/* the word is a thread's tid (join) */
	DBS_EV_KERNEL = 1u << 7,	/* kernel-managed PI futex word */
	DBS_EV_REGISTERS = 1u << 8,	/* object found through the callee-saved
					 * registers of a parked thread */
	DBS_EV_SHARED = 1u << 9,	/* identified by another waiter's evidence */
	DBS_EV_CLEANUP = 1u << 10,	/* the waiter's own cancellation cleanup
					 * record names the object (cond) */
	DBS_EV_PAIR = 1u << 11,		/* cond: waiters on both of its futex
					 * words, 4 bytes apart */
};
/* Name of one evidence bit ("syscall", "words", ...), NULL if unknown. */
const char *dbs_evidence_name(unsigned bit);

enum dbs_owner_state {
	DBS_OWNER_NONE = 0,	/* not held, or an object without owner */
	DBS_OWNER_LIVE,		/* held by a thread of the snapshot */
	DBS_OWNER_DEAD,		/* the recorded owner is no thread of the
				 * process any more: the lock is orphaned */
	DBS_OWNER_OUTSIDE,	/* process-shared: owner not in this process */
	DBS_OWNER_UNKNOWN,	/* held, owner not recorded (readers, lock
				 * elision, being acquired right now) */
};
const char *dbs_owner_state_name(enum dbs_owner_state s);

struct dbs_mutex_info {
	uint32_t lock;		/* __lock */
	uint32_t count;		/* __count: recursion depth */
	int32_t owner_field;	/* __owner as recorded */
	uint32_t nusers;
	int32_t kind_word;	/* __kind */
	unsigned type;		/* __kind & 3: 0 normal 1 recursive 2
				 * errorcheck 3 adaptive */
	bool robust, pi, pp, elision;
	bool pshared;		/* process-shared (unknown for robust mutexes:
				 * glibc marks them all PSHARED) */
	bool owner_died;	/* FUTEX_OWNER_DIED set in __lock */
	bool inconsistent;	/* robust: EOWNERDEAD was returned, not yet
				 * made consistent (__owner 0x7fffffff) */
	bool notrecoverable;	/* __owner 0x7ffffffe */
	unsigned ceiling;	/* priority protect ceiling */
};
const char *dbs_mutex_type_name(unsigned type);

struct dbs_rwlock_info {
	uint32_t readers_word;	/* __readers */
	unsigned nreaders;	/* readers holding (read phase) or waiting
				 * for the writer (write phase) */
	bool wrphase, wrlocked, rwaiting;
	uint32_t writers, wrphase_futex, writers_futex;
	int32_t cur_writer;	/* as recorded; 0: none */
	bool shared;
	uint32_t flags;		/* __flags: preference */
};

struct dbs_cond_info {
	uint64_t wseq, g1_start;
	uint32_t g_refs[2], g_size[2], g1_orig_size, wrefs, g_signals[2];
	unsigned nwaiters;	/* __wrefs >> 3 */
	bool pshared, monotonic;
	uint64_t mutex;		/* the mutex of its waiters, from a waiter's
				 * cleanup record; 0: unknown (the condvar
				 * itself does not record it) */
};

struct dbs_sem_info {
	uint32_t value, nwaiters;
	bool pshared;
};

struct dbs_barrier_info {
	uint32_t in, current_round, count, out;
	bool pshared;
};

struct dbs_join_info {
	pid_t target;		/* the thread being joined */
	uint64_t pthread;	/* its pthread_t */
};

struct dbs_lock_waiter {
	pid_t tid;
	enum dbs_wait_mode mode;
};

/* One object some thread waits on. */
struct dbs_lock {
	enum dbs_lock_kind kind;
	uint64_t addr;		/* the object; for DBS_LOCK_FUTEX (or when the
				 * object start is unknown) the futex word */
	bool object_known;	/* addr is the object's start */
	struct dbs_symbol sym;	/* name (demangled) NULL: no symbol */
	bool decoded;		/* its words were read at the stop */
	unsigned char words[64];
	size_t nwords;		/* bytes of words[] that are valid */
	union dbs_lock_fields {	/* the member of its kind */
		struct dbs_mutex_info mutex;
		struct dbs_rwlock_info rwlock;
		struct dbs_cond_info cond;
		struct dbs_sem_info sem;
		struct dbs_barrier_info barrier;
		struct dbs_join_info join;
	} u;
	enum dbs_owner_state owner_state;
	pid_t owner;		/* LIVE: the owner's tid; DEAD/OUTSIDE: the TID
				 * the lock records; 0 otherwise */
	unsigned nholders;	/* rwlock read phase: readers holding it */
	struct dbs_lock_waiter *waiters;	/* by tid */
	size_t nwaiters;
	bool orphaned;		/* owner DEAD */
	const char *note;	/* static text, or NULL */
	bool musl;		/* musl's words (lock_musl.c) */
};

/* A lock a thread holds (lock_held.c): a mutex whose words record it as
 * the owner, or an rwlock whose words record it as the writer. */
struct dbs_held {
	enum dbs_lock_kind kind;	/* DBS_LOCK_MUTEX or DBS_LOCK_RWLOCK */
	uint64_t addr;			/* the object's start */
	struct dbs_symbol sym;		/* name NULL: no symbol covers it */
};

/* What one blocked thread waits on. */
struct dbs_blocked_on {
	enum dbs_lock_kind kind;
	enum dbs_wait_mode mode;
	uint64_t futex;		/* the futex word it sleeps on */
	uint32_t futex_op, futex_val;
	long nr;		/* futex or restart_syscall */
	uint64_t object;	/* the object's start, 0 if unknown */
	unsigned evidence;	/* enum dbs_evidence bits */
	size_t lock;		/* index in locks->v, SIZE_MAX if none */
	pid_t owner;		/* as the lock's owner: tid (LIVE) or the
				 * recorded TID (DEAD, OUTSIDE); 0 */
	bool in_graph;		/* a consistent wait: used for deadlocks */
	bool parked;		/* glibc parked it for ever on its own stack
				 * (PI mutex: EDEADLK or ESRCH from the
				 * kernel) */
	const char *frame;	/* the frame that decided, or NULL */
	const char *note;	/* static text, or NULL */
};

/* threads[i] waits for locks[i], held by threads[(i + 1) % n]. */
struct dbs_deadlock {
	size_t n;
	pid_t *threads;
	size_t *locks;		/* indexes in locks->v */
};

enum dbs_stall_end {
	DBS_STALL_SYSCALL,	/* the last thread sleeps in a syscall that
				 * is not a lock wait (I/O, sleep) */
	DBS_STALL_WAIT,		/* it waits on something without a known
				 * owner (cond, sem, barrier, futex, readers) */
	DBS_STALL_ORPHAN,	/* it waits on a lock whose owner is gone */
	DBS_STALL_STOPPED,	/* it is job-control stopped or in D state */
};
const char *dbs_stall_end_name(enum dbs_stall_end e);

/* What could move a thread on (progress.c says how each is told). */
enum dbs_progress {
	DBS_PROGRESS_UNKNOWN,	/* not known: no registers, an unlisted call */
	DBS_PROGRESS_RUNNING,	/* on a CPU, runnable, or in user space */
	DBS_PROGRESS_TIMED,	/* a wait or sleep with a timeout */
	DBS_PROGRESS_OUTSIDE,	/* an untimed wait for something from outside
				 * the process (fds, a child, a signal, a
				 * process-shared futex) */
	DBS_PROGRESS_DISK,	/* uninterruptible sleep (D) */
	DBS_PROGRESS_STOPPED,	/* job-control stop */
	DBS_PROGRESS_INSIDE,	/* an untimed wait only another thread of
				 * the process can end */
};
enum dbs_progress dbs_thread_progress(const struct dbs_snapshot *snap,
				      const struct dbs_thread *th);
const char *dbs_progress_name(enum dbs_progress p);

/* threads[i] waits for locks[i] held by threads[i + 1] (i < n - 1); the
 * last thread is blocked on something that is not an owned lock. */
struct dbs_stall {
	size_t n;
	pid_t *threads;
	size_t *locks;		/* n - 1 entries */
	enum dbs_stall_end end;
	long end_syscall;	/* DBS_STALL_SYSCALL: the syscall, else -1 */
	size_t end_lock;	/* WAIT/ORPHAN: index in locks->v, else SIZE_MAX */
};

struct dbs_locks {
	struct dbs_lock *v;	/* by address */
	size_t n;
	struct dbs_deadlock *deadlocks;	/* by their smallest tid */
	size_t ndeadlocks;
	struct dbs_stall *stalls;	/* by last thread, then first */
	size_t nstalls;
	size_t nblocked;	/* threads with blocked_on */
	size_t norphaned;
};

#endif
