/*
 * tinspect/locks.h: what blocked threads wait on, the objects they wait
 * on, and what the wait-for graph (thread -> lock -> owner) proves:
 * deadlocks (cycles), stalls (chains that end in a thread that cannot move
 * on by itself) and orphaned locks (their owner is gone).  Include
 * <tinspect/tinspect.h>; this header is part of it.  Manual:
 * tinspect_locks(3).
 *
 * All of it is decoded after the resume from words read during the stop,
 * with glibc's layouts.  Nothing is guessed: a futex the evidence does not
 * identify stays TINSPECT_LOCK_FUTEX, an owner the words do not record
 * stays unknown.
 *
 * Lifetime and thread safety are the snapshot's (tinspect/snapshot.h):
 * every pointer returned here is valid until tinspect_snapshot_free();
 * a snapshot may be read by any number of threads at once.
 */
#ifndef TINSPECT_LOCKS_H
#define TINSPECT_LOCKS_H

#include <tinspect/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- the objects waited on -------------------------------------------------- */

/* False only when the analysis could not be made (out of memory): then
 * there are no locks, cycles, stalls or orphans, and deadlocks are
 * unknown, not absent. */
bool tinspect_snapshot_locks_analysed(const tinspect_snapshot *snap);
/* Every object some thread waits on, by address. */
size_t tinspect_snapshot_nlocks(const tinspect_snapshot *snap);
const tinspect_lock *tinspect_snapshot_lock(const tinspect_snapshot *snap, size_t i);

/* Its index in tinspect_snapshot_lock(). */
size_t tinspect_lock_index(const tinspect_lock *l);
enum tinspect_lock_kind tinspect_lock_kind(const tinspect_lock *l);
/* "futex", "mutex", "rwlock", "cond", "sem", "barrier", "join", "file". */
const char *tinspect_lock_kind_name(enum tinspect_lock_kind kind);
/* The object's address; for TINSPECT_LOCK_FUTEX (or when the object's
 * start is unknown) the futex word's. */
uint64_t tinspect_lock_addr(const tinspect_lock *l);
/* Whether tinspect_lock_addr() is the object's start. */
bool tinspect_lock_object_known(const tinspect_lock *l);
/* The variable that holds it ("ledger_lock", offset 0; "bank_locks",
 * offset 0x28); NULL if no symbol covers it. */
const tinspect_symbol *tinspect_lock_symbol(const tinspect_lock *l);

enum tinspect_owner_state {
	TINSPECT_OWNER_NONE = 0,	/* not held, or an object without owner
					 * (cond, sem, barrier) */
	TINSPECT_OWNER_LIVE,		/* held by a thread of the snapshot */
	TINSPECT_OWNER_DEAD,		/* the recorded owner no longer exists:
					 * the lock is orphaned */
	TINSPECT_OWNER_OUTSIDE,		/* process-shared, owner in no thread
					 * of this process */
	TINSPECT_OWNER_UNKNOWN,		/* held, owner not recorded (readers,
					 * lock elision, being taken) */
};
enum tinspect_owner_state tinspect_lock_owner_state(const tinspect_lock *l);
/* "none", "live", "dead", "outside", "unknown". */
const char *tinspect_owner_state_name(enum tinspect_owner_state state);
/* LIVE: the owner's tid; DEAD, OUTSIDE: the TID the lock records; 0
 * otherwise.  JOIN: the thread being joined. */
pid_t tinspect_lock_owner(const tinspect_lock *l);
/* Its owner is gone (owner state DEAD). */
bool tinspect_lock_orphaned(const tinspect_lock *l);
/* An rwlock in its read phase: the readers that hold it; 0 otherwise. */
unsigned tinspect_lock_holders(const tinspect_lock *l);
/* The threads that wait on it, by tid, and how (rwlocks). */
size_t tinspect_lock_nwaiters(const tinspect_lock *l);
/* The tid of the i-th waiter (0 if out of range) and its mode. */
pid_t tinspect_lock_waiter(const tinspect_lock *l, size_t i,
			   enum tinspect_wait_mode *ret_mode);
/* The object's bytes as read at the stop (*ret_len of them, at most 64);
 * NULL if none were read. */
const unsigned char *tinspect_lock_words(const tinspect_lock *l, size_t *ret_len);
/* What is special about it, for a person; NULL if nothing. */
const char *tinspect_lock_note(const tinspect_lock *l);
/* Whether its words were read and decoded (the state functions below
 * then give its state). */
bool tinspect_lock_decoded(const tinspect_lock *l);

/*
 * The decoded state of each kind.  Each function fills the first `size`
 * bytes of *ret (pass sizeof *ret) and returns 0, or -EINVAL when the lock
 * is of another kind (or size is 0), -ENODATA when its words were not
 * decoded.  The members are glibc's own words (2.36 layouts) where they
 * have the same name.
 */
struct tinspect_mutex_state {
	uint32_t lock;		/* __lock */
	uint32_t count;		/* __count: the recursion depth */
	int32_t owner_field;	/* __owner as recorded */
	uint32_t nusers;	/* __nusers */
	int32_t kind_word;	/* __kind */
	unsigned type;		/* 0 normal, 1 recursive, 2 errorcheck,
				 * 3 adaptive (tinspect_mutex_type_name()) */
	bool robust, pi, pp, elision;
	bool pshared;		/* process-shared (always set for robust
				 * mutexes: glibc marks them all so) */
	bool owner_died;	/* FUTEX_OWNER_DIED set in __lock */
	bool inconsistent;	/* robust: EOWNERDEAD returned, not made
				 * consistent yet */
	bool notrecoverable;
	unsigned ceiling;	/* priority-protect ceiling (pp) */
};
int tinspect_lock_mutex(const tinspect_lock *l, struct tinspect_mutex_state *ret,
			size_t size);
/* "normal", "recursive", "errorcheck", "adaptive". */
const char *tinspect_mutex_type_name(unsigned type);

struct tinspect_rwlock_state {
	uint32_t readers_word;	/* __readers */
	unsigned nreaders;	/* readers holding it (read phase) or waiting
				 * for the writer (write phase) */
	bool write_phase, write_locked, readers_waiting;
	uint32_t writers;	/* __writers */
	uint32_t wrphase_futex, writers_futex;
	int32_t cur_writer;	/* as recorded; 0 none */
	bool shared;
	uint32_t flags;		/* __flags: the preference */
};
int tinspect_lock_rwlock(const tinspect_lock *l, struct tinspect_rwlock_state *ret,
			 size_t size);

struct tinspect_cond_state {
	uint64_t wseq, g1_start;
	uint32_t wrefs;
	uint32_t g_signals[2], g_refs[2], g_size[2], g1_orig_size;
	unsigned nwaiters;	/* __wrefs >> 3 */
	bool pshared, monotonic;
	uint64_t mutex;		/* the mutex its waiters use, from a waiter's
				 * cleanup record; 0 unknown (a condvar does
				 * not record it) */
};
int tinspect_lock_cond(const tinspect_lock *l, struct tinspect_cond_state *ret,
		       size_t size);

struct tinspect_sem_state {
	uint32_t value, nwaiters;
	bool pshared;
};
int tinspect_lock_sem(const tinspect_lock *l, struct tinspect_sem_state *ret,
		      size_t size);

struct tinspect_barrier_state {
	uint32_t in, current_round, count, out;	/* arrived: in - current_round */
	bool pshared;
};
int tinspect_lock_barrier(const tinspect_lock *l, struct tinspect_barrier_state *ret,
			  size_t size);

struct tinspect_join_state {
	pid_t target;		/* the thread being joined; 0 unknown */
	uint64_t pthread;	/* its pthread_t */
};
int tinspect_lock_join(const tinspect_lock *l, struct tinspect_join_state *ret,
		       size_t size);

/* ---- what one thread waits on ------------------------------------------------ */

/* What the classification of a wait rests on (bits of
 * tinspect_wait_evidence()). */
enum tinspect_evidence {
	TINSPECT_EV_SYSCALL = 1u << 0,	/* a futex wait in the registers */
	TINSPECT_EV_RESTART = 1u << 1,	/* restart_syscall of a futex wait */
	TINSPECT_EV_PROC = 1u << 2,	/* /proc before the stop only (the
					 * thread did not stop: not in the
					 * graph) */
	TINSPECT_EV_WORDS = 1u << 3,	/* the words fit the layout and the
					 * state the wait implies */
	TINSPECT_EV_SYMBOL = 1u << 4,	/* a symbol of exactly the type's size */
	TINSPECT_EV_FRAMES = 1u << 5,	/* a calling frame names the function */
	TINSPECT_EV_THREAD = 1u << 6,	/* the word is a thread's tid (join) */
	TINSPECT_EV_KERNEL = 1u << 7,	/* a kernel-managed PI futex word */
	TINSPECT_EV_REGISTERS = 1u << 8,/* found through the callee-saved
					 * registers of a parked thread */
	TINSPECT_EV_SHARED = 1u << 9,	/* identified by another waiter's
					 * evidence */
	TINSPECT_EV_CLEANUP = 1u << 10,	/* the waiter's cancellation cleanup
					 * record names it (cond) */
	TINSPECT_EV_PAIR = 1u << 11,	/* cond: waiters on both its futex
					 * words */
};
/* The name of one bit ("syscall", "restart_syscall", "words", ...); NULL
 * if unknown. */
const char *tinspect_evidence_name(unsigned bit);

/* The thread that waits. */
const tinspect_thread *tinspect_wait_thread(const tinspect_wait *w);
/* What it waits for, and how (rwlocks). */
enum tinspect_lock_kind tinspect_wait_kind(const tinspect_wait *w);
enum tinspect_wait_mode tinspect_wait_mode(const tinspect_wait *w);
/* The futex word it sleeps on, and the futex() op and value. */
uint64_t tinspect_wait_futex(const tinspect_wait *w);
uint32_t tinspect_wait_futex_op(const tinspect_wait *w);
uint32_t tinspect_wait_futex_val(const tinspect_wait *w);
/* The system call it sleeps in: futex or restart_syscall
 * (tinspect_snapshot_syscall_name() names it). */
long tinspect_wait_syscall(const tinspect_wait *w);
/* The object's start; 0 if unknown. */
uint64_t tinspect_wait_object(const tinspect_wait *w);
/* The object in tinspect_snapshot_lock(); NULL if none. */
const tinspect_lock *tinspect_wait_lock(const tinspect_wait *w);
/* The object's owner: its tid (LIVE), the TID recorded (DEAD, OUTSIDE);
 * 0 otherwise. */
pid_t tinspect_wait_owner(const tinspect_wait *w);
/* enum tinspect_evidence bits. */
unsigned tinspect_wait_evidence(const tinspect_wait *w);
/* A consistent wait (the thread was stopped in it): an edge of the
 * wait-for graph. */
bool tinspect_wait_in_graph(const tinspect_wait *w);
/* glibc parked it for ever on its own stack (a PI mutex that returned
 * EDEADLK or ESRCH). */
bool tinspect_wait_parked(const tinspect_wait *w);
/* The stack frame that decided the kind; NULL if none did. */
const char *tinspect_wait_frame(const tinspect_wait *w);
/* What is special about it, for a person; NULL if nothing. */
const char *tinspect_wait_note(const tinspect_wait *w);
/* It sleeps in futex() itself (not restart_syscall, which only continues
 * a timed wait) with no timeout, as its registers at the stop show: it
 * will not wake up by itself. */
bool tinspect_wait_untimed(const tinspect_wait *w);
/*
 * Whether the wait is what an idle thread does, not something it is held
 * up by.  1: a condition variable (a worker of a pool waiting for work, a
 * consumer waiting for an event: waiting long is its normal state).
 * 0: a mutex, an rwlock, a semaphore, a barrier or a join (the thread
 * needs another thread to release something: waiting long there is a
 * hang, tinspect --hung-after reports it).  -ENODATA: a futex word that
 * could not be identified (TINSPECT_LOCK_FUTEX: a custom lock or a custom
 * event, tinspect cannot say which).
 *
 * Threads that sleep in other system calls (nanosleep, clock_nanosleep,
 * epoll_wait, poll, select, read on a socket or a pipe) have no
 * tinspect_wait at all: they are idle by this definition, and so are
 * never reported as hung.  Manual: tinspect_waiting(3).
 */
int tinspect_wait_is_idle(const tinspect_wait *w);

/* ---- locks held ------------------------------------------------------------------ */

/*
 * The mutexes and the rwlocks held for writing that a thread holds, as
 * their own words record it (glibc writes the owner's TID into a mutex's
 * __owner and an rwlock's __cur_writer right after taking it, and clears
 * it before letting go).  The words read are those of every lock some
 * thread waits on now and, with TINSPECT_OPT_TRACK_LOCKS, of every mutex
 * and rwlock an earlier update of the session saw waited on.  A lock is
 * said held only by a thread that could not run while the words were
 * read: a stopped one, or in a nonblocking capture one observed blocked
 * (tinspect_thread_observation()); for the others
 * tinspect_thread_held_known() is false.  Never listed: rwlocks held for
 * reading (glibc counts readers, it does not record them), locks whose
 * words the session never read, and what no word records (semaphores,
 * condition variables).
 */
/* Whether tinspect_thread_held() is what the thread holds of the locks
 * read (false: the thread could have run meanwhile, or the analysis could
 * not be made). */
bool tinspect_thread_held_known(const tinspect_thread *th);
/* Its held locks, by address. */
size_t tinspect_thread_nheld(const tinspect_thread *th);
const tinspect_held *tinspect_thread_held(const tinspect_thread *th, size_t i);
/* TINSPECT_LOCK_MUTEX, or TINSPECT_LOCK_RWLOCK (held for writing). */
enum tinspect_lock_kind tinspect_held_kind(const tinspect_held *h);
/* The object's address. */
uint64_t tinspect_held_addr(const tinspect_held *h);
/* The variable that holds it; NULL if no symbol covers it. */
const tinspect_symbol *tinspect_held_symbol(const tinspect_held *h);
/* How many locks' words this update read to tell who holds them, and how
 * many the session has forgotten, for lack of room, since it began. */
size_t tinspect_snapshot_locks_tracked(const tinspect_snapshot *snap);
size_t tinspect_snapshot_locks_forgotten(const tinspect_snapshot *snap);

/* ---- deadlocks ---------------------------------------------------------------- */

/* The cycles of the wait-for graph, by their smallest tid. */
size_t tinspect_snapshot_ncycles(const tinspect_snapshot *snap);
const tinspect_cycle *tinspect_snapshot_cycle(const tinspect_snapshot *snap,
					      size_t i);
/* The threads of the cycle, from its smallest tid: thread i waits for
 * tinspect_cycle_lock(c, i), held by thread (i + 1) % length.
 * tinspect_cycle_tid() gives 0 if i is out of range. */
size_t tinspect_cycle_length(const tinspect_cycle *c);
pid_t tinspect_cycle_tid(const tinspect_cycle *c, size_t i);
/* NULL if i is out of range. */
const tinspect_lock *tinspect_cycle_lock(const tinspect_cycle *c, size_t i);

/* ---- stalls ------------------------------------------------------------------- */

/* Why the last thread of a stall does not move on. */
enum tinspect_stall_end {
	TINSPECT_STALL_SYSCALL,	/* it sleeps in a system call that is no
				 * lock wait (I/O, sleep) */
	TINSPECT_STALL_WAIT,	/* it waits without timeout on something
				 * without a known owner */
	TINSPECT_STALL_ORPHAN,	/* it waits on a lock whose owner is gone */
	TINSPECT_STALL_STOPPED,	/* it is job-control stopped or in D state */
};
/* "syscall", "wait", "orphan", "stopped". */
const char *tinspect_stall_end_name(enum tinspect_stall_end end);

/* The stalls, by last thread, then first. */
size_t tinspect_snapshot_nstalls(const tinspect_snapshot *snap);
const tinspect_stall *tinspect_snapshot_stall(const tinspect_snapshot *snap,
					      size_t i);
/* Its threads: thread i waits for tinspect_stall_lock(st, i), held by
 * thread i + 1, for i < length - 1; the last one is stuck. */
size_t tinspect_stall_length(const tinspect_stall *st);
/* 0 if i is out of range. */
pid_t tinspect_stall_tid(const tinspect_stall *st, size_t i);
/* NULL if i >= length - 1. */
const tinspect_lock *tinspect_stall_lock(const tinspect_stall *st, size_t i);
enum tinspect_stall_end tinspect_stall_end(const tinspect_stall *st);
/* SYSCALL: the system call (tinspect_snapshot_syscall_name()); -1
 * otherwise. */
long tinspect_stall_end_syscall(const tinspect_stall *st);
/* WAIT, ORPHAN: what it waits on; NULL otherwise. */
const tinspect_lock *tinspect_stall_end_lock(const tinspect_stall *st);

/* ---- orphaned locks ------------------------------------------------------------ */

/* The locks whose owner is gone (tinspect_lock_orphaned()), by address. */
size_t tinspect_snapshot_norphans(const tinspect_snapshot *snap);
const tinspect_lock *tinspect_snapshot_orphan(const tinspect_snapshot *snap,
					      size_t i);

#ifdef __cplusplus
}
#endif

#endif
