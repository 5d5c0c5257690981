/*
 * tinspect/snapshot.h: what one update captured about the process as a
 * whole: the process, the capture and its timings, the thread-local
 * variables and pthread keys asked for, the language runtimes found; and
 * the symbols every part of a snapshot uses.  Include
 * <tinspect/tinspect.h>; this header is part of it.  Manual:
 * tinspect_snapshot(3).
 *
 * Lifetime: every pointer a function here returns (handles and strings)
 * is valid until tinspect_snapshot_free() of the snapshot it came from.
 * Strings from the target (paths, names, the command line) are its bytes
 * as they were: any byte but NUL, not necessarily UTF-8.  A string
 * function returns NULL for what is unknown.
 *
 * Thread safety: a snapshot is immutable; any number of threads may read
 * one at the same time.  Its functions take no lock and never touch the
 * process.  Indexes out of range give NULL (or 0 / -EINVAL where said).
 */
#ifndef TINSPECT_SNAPSHOT_H
#define TINSPECT_SNAPSHOT_H

#include <tinspect/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Free a snapshot and everything reached from it.  NULL is fine. */
void tinspect_snapshot_free(tinspect_snapshot *snap);

/* ---- the process -------------------------------------------------------- */

pid_t tinspect_snapshot_pid(const tinspect_snapshot *snap);
/* Its executable's path (NULL if unknown), its command line. */
const char *tinspect_snapshot_exe(const tinspect_snapshot *snap);
size_t tinspect_snapshot_argc(const tinspect_snapshot *snap);
const char *tinspect_snapshot_arg(const tinspect_snapshot *snap, size_t i);
/* "x86_64", "aarch64". */
const char *tinspect_snapshot_arch(const tinspect_snapshot *snap);
/* glibc's version as the target's libc says ("2.36"); NULL if unknown. */
const char *tinspect_snapshot_glibc_version(const tinspect_snapshot *snap);

/* The target's C library: "glibc", "musl"; NULL if none was recognised.
 * Its version ("2.36", "1.2.3"); NULL if unknown (a static musl program
 * records none). */
const char *tinspect_snapshot_libc(const tinspect_snapshot *snap);
const char *tinspect_snapshot_libc_version(const tinspect_snapshot *snap);
/* How the threads were identified: "libthread_db" (glibc),
 * "struct_pthread" (musl: the struct at each thread pointer, checked),
 * "proc" (the kernel's tasks only, no pthread fields). */
const char *tinspect_snapshot_threads_source(const tinspect_snapshot *snap);

/* What libthread_db made of the target. */
enum tinspect_tdb_status {
	TINSPECT_TDB_OK = 0,
	TINSPECT_TDB_NOLIBTHREAD,	/* no thread library found (yet) */
	TINSPECT_TDB_VERSION,		/* its glibc is not libthread_db's */
	TINSPECT_TDB_NOSYMS,		/* a static binary without .symtab */
	TINSPECT_TDB_UNAVAILABLE,	/* libthread_db could not be loaded */
	TINSPECT_TDB_ERROR,		/* another failure (detail says) */
	TINSPECT_TDB_NOT_USED,		/* a C library that has none (musl):
					 * threads identified its own way,
					 * tinspect_snapshot_threads_source() */
};
enum tinspect_tdb_status tinspect_snapshot_tdb_status(const tinspect_snapshot *snap);
/* "ok", "no_libthread", "version_mismatch", "no_symbols", "unavailable",
 * "error", "not_used". */
const char *tinspect_tdb_status_name(enum tinspect_tdb_status status);
/* libthread_db's error, or why it was not used; NULL if none. */
const char *tinspect_snapshot_tdb_detail(const tinspect_snapshot *snap);
/* The libthread_db in use, as it was loaded ("libthread_db.so.1", or the
 * path of the target's own); NULL if none serves the target. */
const char *tinspect_snapshot_tdb_library(const tinspect_snapshot *snap);
/* Whose libthread_db served the snapshot. */
enum tinspect_tdb_origin {
	TINSPECT_TDB_FROM_NONE = 0,	/* none: threads from /proc only */
	TINSPECT_TDB_FROM_SYSTEM,	/* the system's libthread_db.so.1 */
	TINSPECT_TDB_FROM_TARGET,	/* the target's own, beside its libc
					 * (library: its path as the target
					 * sees it) */
	TINSPECT_TDB_FROM_GIVEN,	/* options.thread_db_path */
};
enum tinspect_tdb_origin tinspect_snapshot_tdb_origin(const tinspect_snapshot *snap);
/* "system", "target", "given"; NULL for TINSPECT_TDB_FROM_NONE. */
const char *tinspect_tdb_origin_name(enum tinspect_tdb_origin origin);

/* Where the module list came from. */
enum tinspect_modmap {
	TINSPECT_MODMAP_NONE = 0,	/* no module list */
	TINSPECT_MODMAP_LINK_MAP,	/* r_debug's link_map, checked with maps */
	TINSPECT_MODMAP_MAPS_ONLY,	/* /proc/PID/maps alone (static binary,
					 * corrupt or early link_map) */
};
enum tinspect_modmap tinspect_snapshot_modmap(const tinspect_snapshot *snap);
/* Changes whenever the session saw the module list change (dlopen,
 * dlclose) between updates. */
uint64_t tinspect_snapshot_module_generation(const tinspect_snapshot *snap);

/* ---- the capture -------------------------------------------------------- */


/* The signal that ended the process, as a core file records it. */
struct tinspect_signal_info {
	pid_t tid;		/* the thread that took it */
	int signo;		/* SIGABRT, SIGSEGV... */
	bool have_siginfo;	/* the members below are known */
	int code;		/* si_code */
	int err;		/* si_errno */
	bool have_addr;		/* a fault: addr is si_addr */
	uint64_t addr;
	bool have_sender;	/* sent (kill, tkill, sigqueue): by whom */
	pid_t sender_pid;
	uint32_t sender_uid;
};
/*
 * Which thread took which signal: a kernel core's NT_SIGINFO (the thread
 * whose signal made the core); a gcore of a running process names none.
 * Fills the first `size` bytes of *ret (pass sizeof *ret).  Returns 0, or
 * -ENODATA (a live process, or a core that names none), -EINVAL (size 0).
 */
int tinspect_snapshot_signal(const tinspect_snapshot *snap,
			     struct tinspect_signal_info *ret, size_t size);

/* When the target was stopped (CLOCK_REALTIME; a core: when it was
 * read).  Either may be NULL. */
void tinspect_snapshot_captured_at(const tinspect_snapshot *snap,
				   int64_t *ret_sec, long *ret_nsec);
/* How long the target was stopped: the first stop to the last resume. */
uint64_t tinspect_snapshot_freeze_ns(const tinspect_snapshot *snap);
/* The whole update, analysis included. */
uint64_t tinspect_snapshot_duration_ns(const tinspect_snapshot *snap);

/* What produced the snapshot. */
enum tinspect_capture_mode {
	/* a live process, every thread stopped together: one consistent
	 * state */
	TINSPECT_CAPTURE_ALL_STOP = 0,
	/* a core file (tinspect_session_init_core()): nothing stopped, no
	 * /proc facts */
	TINSPECT_CAPTURE_CORE,
	/* nothing stopped (freeze 0): not one consistent state, so its
	 * cycles and stalls are candidates, never proven deadlocks */
	TINSPECT_CAPTURE_NONBLOCKING,
	/* an all-stop capture taken because a nonblocking one showed
	 * candidates: its cycles and stalls are proven */
	TINSPECT_CAPTURE_CONFIRMATION,
};
enum tinspect_capture_mode tinspect_snapshot_capture_mode(const tinspect_snapshot *snap);
/* "all-stop", "core", "nonblocking", "confirmation" (the JSON
 * capture.mode). */
const char *tinspect_capture_mode_name(enum tinspect_capture_mode mode);
/* TINSPECT_CAPTURE_CONFIRMATION: what the nonblocking capture before it
 * showed (candidate cycles and stalls) and how long it took.  0, or
 * -ENODATA for another mode.  Any pointer may be NULL. */
int tinspect_snapshot_candidates(const tinspect_snapshot *snap, size_t *ret_cycles,
				 size_t *ret_stalls, uint64_t *ret_observe_ns);

/* Where the time of the update went (the first six are the freeze). */
enum tinspect_timing {
	TINSPECT_TIMING_SCAN,		/* /proc facts, target running */
	TINSPECT_TIMING_STOP,		/* seize, interrupt, wait for stops */
	TINSPECT_TIMING_REGS,		/* reading the registers */
	TINSPECT_TIMING_MEMORY,		/* copying thread descriptors, stacks */
	TINSPECT_TIMING_THREAD_DB,	/* libthread_db, from the copies */
	TINSPECT_TIMING_RESUME,		/* letting every thread go */
	TINSPECT_TIMING_ANALYSE,	/* unwinding, symbols; target running */
};
/* Nanoseconds spent in one step; 0 for an unknown step. */
uint64_t tinspect_snapshot_timing_ns(const tinspect_snapshot *snap,
				     enum tinspect_timing step);

/* Threads met (including those that exited meanwhile), stopped together,
 * vanished while being attached, not stopped in time (stragglers), and
 * with errors (see tinspect_thread_nerrors()). */
size_t tinspect_snapshot_threads_seen(const tinspect_snapshot *snap);
size_t tinspect_snapshot_threads_stopped(const tinspect_snapshot *snap);
size_t tinspect_snapshot_threads_vanished(const tinspect_snapshot *snap);
size_t tinspect_snapshot_stragglers(const tinspect_snapshot *snap);
size_t tinspect_snapshot_threads_with_errors(const tinspect_snapshot *snap);

/* Whether stacks were captured, and how many stack bytes were copied
 * during the stop, all threads together. */
bool tinspect_snapshot_has_stacks(const tinspect_snapshot *snap);
uint64_t tinspect_snapshot_stack_bytes_copied(const tinspect_snapshot *snap);

/* Problems of the whole capture ("libthread_db: ..."), and warnings: what
 * was degraded, not failed ("the target's own libthread_db was used").
 * Text, meant for a person. */
size_t tinspect_snapshot_nerrors(const tinspect_snapshot *snap);
const char *tinspect_snapshot_error(const tinspect_snapshot *snap, size_t i);
size_t tinspect_snapshot_nwarnings(const tinspect_snapshot *snap);
const char *tinspect_snapshot_warning(const tinspect_snapshot *snap, size_t i);

/* The name of system call nr in the target's architecture ("futex");
 * NULL if this library does not know it. */
const char *tinspect_snapshot_syscall_name(const tinspect_snapshot *snap,
					   long nr);

/* ---- threads (tinspect/thread.h has what they say) --------------------- */

/* The threads, the main thread first, then by tid. */
size_t tinspect_snapshot_nthreads(const tinspect_snapshot *snap);
const tinspect_thread *tinspect_snapshot_thread(const tinspect_snapshot *snap,
						size_t i);
/* The thread with this tid (tinspect's PID namespace); NULL if none.
 * O(log n). */
const tinspect_thread *tinspect_snapshot_thread_by_tid(const tinspect_snapshot *snap,
						       pid_t tid);

/* ---- thread-local variables (options.tls, TINSPECT_OPT_ERRNO) ---------- */

/* The variables asked for, in the order asked, errno last.  Each thread
 * has one value per variable, at the same index (tinspect_thread_tls()). */
size_t tinspect_snapshot_ntls_vars(const tinspect_snapshot *snap);
const tinspect_tls_var *tinspect_snapshot_tls_var(const tinspect_snapshot *snap,
						  size_t i);
const char *tinspect_tls_var_name(const tinspect_tls_var *var);
/* The errno of TINSPECT_OPT_ERRNO (not a variable that was asked for). */
bool tinspect_tls_var_is_errno(const tinspect_tls_var *var);
/* Whether it was found in the process, and if not, why. */
bool tinspect_tls_var_found(const tinspect_tls_var *var);
const char *tinspect_tls_var_error(const tinspect_tls_var *var);
/* The module that defines it and its offset in the module's TLS block. */
const char *tinspect_tls_var_module(const tinspect_tls_var *var);
uint64_t tinspect_tls_var_offset(const tinspect_tls_var *var);
/* How its bytes are read (never TINSPECT_TLS_AUTO) and how many. */
enum tinspect_tls_type tinspect_tls_var_type(const tinspect_tls_var *var);
unsigned tinspect_tls_var_size(const tinspect_tls_var *var);
/* The type's name as tinspect_tls_parse_type() takes it ("int",
 * "bytes:16"), its C type from DWARF ("long int"; NULL without DWARF), and
 * where it was found: "symtab", "dwarf" or "dwarf+symtab". */
const char *tinspect_tls_var_type_name(const tinspect_tls_var *var);
const char *tinspect_tls_var_c_type(const tinspect_tls_var *var);
const char *tinspect_tls_var_source(const tinspect_tls_var *var);

/* ---- pthread keys (TINSPECT_OPT_KEYS) ----------------------------------- */

/* Whether the keys were read (asked for, and readable). */
bool tinspect_snapshot_keys_read(const tinspect_snapshot *snap);
/* PTHREAD_KEYS_MAX of the target. */
size_t tinspect_snapshot_keys_max(const tinspect_snapshot *snap);
/* The keys in use, by key. */
size_t tinspect_snapshot_nkeys(const tinspect_snapshot *snap);
const tinspect_key *tinspect_snapshot_key(const tinspect_snapshot *snap, size_t i);
/* The key as pthread_key_create() returned it. */
unsigned tinspect_key_id(const tinspect_key *key);
/* glibc's sequence number of its slot (odd while the key is in use). */
uint64_t tinspect_key_seq(const tinspect_key *key);
/* Its destructor; NULL if it has none. */
const tinspect_symbol *tinspect_key_destructor(const tinspect_key *key);

/* ---- language runtimes --------------------------------------------------- */

/* Runtimes whose locks are not pthread objects ("jvm", "cpython", "go"):
 * what stays invisible to tinspect in them, and which tool can see it.
 * Each is also a warning. */
size_t tinspect_snapshot_nruntimes(const tinspect_snapshot *snap);
const tinspect_runtime *tinspect_snapshot_runtime(const tinspect_snapshot *snap,
						  size_t i);
/* "jvm", "cpython", "go". */
const char *tinspect_runtime_name(const tinspect_runtime *rt);
/* The module that shows it (its libjvm.so, ...); NULL if none does. */
const char *tinspect_runtime_module(const tinspect_runtime *rt);
/* What stays invisible, and what to run instead; for a person. */
const char *tinspect_runtime_note(const tinspect_runtime *rt);
/* Its version as the program records it (a Go program's .go.buildinfo:
 * "go1.19.8"); NULL if not known. */
const char *tinspect_runtime_version(const tinspect_runtime *rt);

/* ---- symbols --------------------------------------------------------------- */

/* The address. */
uint64_t tinspect_symbol_addr(const tinspect_symbol *sym);
/* The path of the module that holds it; NULL if none does. */
const char *tinspect_symbol_module(const tinspect_symbol *sym);
/* The symbol that covers it (C++ names demangled); NULL if none. */
const char *tinspect_symbol_name(const tinspect_symbol *sym);
/* addr minus the symbol's start; without a symbol, addr minus the
 * module's load bias (the address addr2line takes). */
uint64_t tinspect_symbol_offset(const tinspect_symbol *sym);

#ifdef __cplusplus
}
#endif

#endif
