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

struct dbs_options {
	uint64_t max_freeze_ns;		/* 0: no limit */
	uint64_t stop_timeout_ns;	/* per task; 0: wait for ever */
	const volatile sig_atomic_t *cancel;
	int wake_signal;		/* see struct psvc_stop_opts */
	bool force_proc_mem;		/* read memory via /proc/PID/mem */
	/* libthread_db.so to load; NULL: the system's libthread_db.so.1 */
	const char *thread_db_path;
};

/* What libthread_db made of the target. */
enum dbs_tdb_status {
	DBS_TDB_OK = 0,
	DBS_TDB_NOLIBTHREAD,	/* no libc/threads found (yet) */
	DBS_TDB_VERSION,	/* target glibc differs from libthread_db's */
	DBS_TDB_NOSYMS,		/* static binary without .symtab */
	DBS_TDB_UNAVAILABLE,	/* libthread_db could not be loaded */
	DBS_TDB_ERROR,		/* another libthread_db error */
};
const char *dbs_tdb_status_name(enum dbs_tdb_status s);

/* A symbolized address. */
struct dbs_symbol {
	uint64_t addr;
	char *module;		/* path, NULL if no module holds addr */
	char *name;		/* NULL if no symbol covers addr */
	uint64_t offset;	/* from the symbol, or from the module bias */
};

struct dbs_thread {
	pid_t tid;		/* in tinspect's PID namespace */
	pid_t ns_tid;		/* in the target's (NSpid); == tid usually */
	char *name;		/* raw bytes of the kernel's comm */
	size_t name_len;

	/* /proc, read before the stop (after the resume for threads that
	 * appeared during it: proc_before_stop == false) */
	bool proc_valid;
	bool proc_before_stop;
	char state;		/* R S D T t Z X I ... ; 0 unknown */
	char wchan[64];
	double utime_s, stime_s;
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
	struct dbs_symbol start;	/* start routine */

	/* per-thread failures, as text: "registers: No such process" */
	char **errors;
	size_t nerrors;

	/* what it sleeps on (a futex wait), NULL if it is not blocked on one;
	 * see the lock section below */
	struct dbs_blocked_on *blocked_on;
};

struct dbs_snapshot {
	pid_t pid;
	const struct arch_desc *arch;
	char *exe;
	char **argv;
	size_t argc;
	char glibc_version[16];		/* "" if unknown */
	enum dbs_tdb_status tdb_status;
	char *tdb_detail;		/* libthread_db's error, or NULL */
	enum psvc_modmap_source modmap_source;
	uint64_t module_generation;

	struct timespec captured_at;	/* CLOCK_REALTIME at the stop */
	uint64_t freeze_ns;		/* first stop to last resume */
	uint64_t duration_ns;		/* whole update */
	size_t threads_seen;		/* tasks met, including vanished */
	size_t threads_stopped;
	size_t threads_vanished;	/* exited while we attached */
	size_t stragglers;

	struct dbs_thread *threads;	/* main thread first, then by tid */
	size_t nthreads;

	char **errors;			/* capture-wide problems */
	size_t nerrors;
	size_t threads_with_errors;

	/* locks waited on, wait-for graph, deadlocks; NULL if not analysed */
	struct dbs_locks *locks;
};

int dbs_session_init(pid_t pid, const struct dbs_options *opts,
		     struct dbs_session **ret);
/* One stop-gather-resume cycle.  On success *ret is a new snapshot. */
int dbs_session_update(struct dbs_session *s, struct dbs_snapshot **ret);
/* Idempotent; NULL and half-initialised sessions are fine. */
void dbs_session_destroy(struct dbs_session *s);

struct psvc_target *dbs_session_target(struct dbs_session *s);

void dbs_snapshot_free(struct dbs_snapshot *snap);

/* Iteration, for programs that embed the session. */
size_t dbs_snapshot_thread_count(const struct dbs_snapshot *snap);
const struct dbs_thread *dbs_snapshot_thread(const struct dbs_snapshot *snap,
					     size_t i);

/* ---- locks: what blocked threads wait on, and the wait-for graph ------------ */

/*
 * Decoded after the resume from the words read during the stop (glibc
 * 2.36 layouts, GLIBC-NOTES.md §5-6).  Nothing here is a guess: a futex
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
	uint64_t mutex;		/* the mutex of its waiters, 0: unknown (glibc
				 * 2.36 does not record it) */
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
	union {
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
