/*
 * locks_int.h: what the files of the lock analysis share (locks.c and
 * lock_*.c).  The analysis reads a snapshot and the words copied during
 * the stop, through struct dbs_lock_input (dbs_int.h), and runs in steps:
 *
 *   lock_wait.c     which futex call each thread waits in (registers)
 *   lock_frames.c   what its calling frames say (glibc entry points)
 *   lock_fit.c      which glibc objects the words around the futex fit
 *   lock_decide.c   the evidence weighed: one verdict per thread, then
 *                   shared between threads that wait on one object
 *   lock_objects.c  the objects, their waiters and owners
 *   lock_park.c     PI waiters glibc parked for ever, and their mutex
 *   lock_graph.c    the wait-for graph: cycles, then stalls (stalls.c)
 *   locks.c         the order of those steps
 *
 * lock_prefetch.c runs during the stop and decides which words there are
 * to read later; lock_index.c finds threads by TID and tid word.
 */
#ifndef TINSPECT_LOCKS_INT_H
#define TINSPECT_LOCKS_INT_H

#include "dbs_int.h"
#include "glibc_locks.h"

/* ---- lock_wait.c: which futex call a stopped thread is blocked in ------ */

struct dbs_wait {
	bool valid;
	unsigned src;		/* DBS_EV_SYSCALL / RESTART / PROC */
	bool consistent;	/* part of the all-stop snapshot */
	long nr;
	uint64_t uaddr;
	uint32_t op, val;
	unsigned cmd;
	bool private_op;
};

/* The futex wait thread th is blocked in (wt->valid false if none). */
void dbs_wait_of(const struct arch_desc *a, const struct dbs_thread *th,
		 struct dbs_wait *wt);
bool dbs_wait_is_pi(unsigned cmd);
/* A thread parked by glibc sleeps on a word of its own stack, near sp. */
#define DBS_PARK_STACK_SPAN (64 * 1024)
/* Could the wait be glibc's park of a PI mutex waiter?  A precondition
 * only: the frames decide (dbs_park_frame). */
bool dbs_wait_maybe_park(const struct dbs_thread *th, const struct dbs_wait *wt);

/* ---- lock_index.c: the analysis' context, threads by key --------------- */

/* A sorted key -> thread index map. */
struct dbs_tidx {
	uint64_t key;
	size_t i;
};

/* The decision for one thread (before the objects are shared out). */
struct dbs_verdict {
	enum dbs_lock_kind kind;
	enum dbs_wait_mode mode;
	uint64_t object;	/* 0: unknown */
	unsigned evidence;
	bool parked;
	const char *frame;
	const char *note;
	pid_t join_tid;
	uint64_t cond_mutex;	/* cond: the mutex its cleanup record names */
};

#define DBS_MAX_FRAMES 16

struct dbs_lockctx {
	struct dbs_snapshot *snap;
	const struct dbs_lock_input *in;
	const struct dbs_glibc_locks *L;
	/* per thread, by index */
	struct dbs_wait *waits;
	struct dbs_verdict *vd;
	size_t *lockof;			/* -> index in snap->locks->v, SIZE_MAX */
	size_t *succ;			/* -> the thread it waits for, SIZE_MAX
					 * (one block with lockof) */
	size_t lock_cap;		/* allocated entries of snap->locks->v */
	/* scratch: a thread's innermost frames (dbs_frames_load) */
	struct dbs_frames {
		const char *names[DBS_MAX_FRAMES];
		uint64_t sps[DBS_MAX_FRAMES];	/* their stack pointers */
	} *frames;
	/* the three indexes of the threads, one block */
	struct dbs_tidx *by_nstid;	/* TID in the target's namespace */
	struct dbs_tidx *by_tid;	/* TID as tinspect sees it */
	struct dbs_tidx *by_tidword;	/* address of the thread's tid word */
	size_t nby_tidword;
	bool nstid_unknown;		/* some thread's ns_tid is not known:
					 * an unmatched TID may still be one */
};

/* Allocate c's per-thread arrays and indexes for c->snap and c->in:
 * 0 or -ENOMEM; dbs_lockctx_done() frees what there is either way. */
int dbs_lockctx_init(struct dbs_lockctx *c);
void dbs_lockctx_done(struct dbs_lockctx *c);
/* qsort() that accepts nothing to sort (base may then be NULL, which
 * qsort() must not be given: UBSan nonnull). */
void dbs_sort(void *base, size_t n, size_t size,
	      int (*cmp)(const void *, const void *));
int dbs_tidx_cmp(const void *a, const void *b);
/* The first entry of the sorted v[0..n) whose key is key or above (n if
 * none); the value of the entry whose key is key (SIZE_MAX if none). */
size_t dbs_tidx_lower_bound(const struct dbs_tidx *v, size_t n, uint64_t key);
size_t dbs_tidx_find(const struct dbs_tidx *v, size_t n, uint64_t key);
/* index of the thread whose TID (in the target's namespace, or as
 * tinspect sees it) is tid; SIZE_MAX if none */
size_t dbs_thread_by_nstid(const struct dbs_lockctx *c, pid_t tid);
size_t dbs_thread_by_tid(const struct dbs_lockctx *c, pid_t tid);
/* The struct pthread of thread th (pthread_t), 0 if unknown. */
uint64_t dbs_thread_descriptor(const struct dbs_lockctx *c,
			       const struct dbs_thread *th);
/* len bytes of the stop's copy at addr. */
bool dbs_lock_read(const struct dbs_lockctx *c, uint64_t addr, void *buf,
		   size_t len);

/* ---- lock_frames.c: frame evidence -------------------------------------- */

enum dbs_fkind {
	FK_NONE = 0,
	FK_MUTEX,
	FK_RWLOCK_READ,
	FK_RWLOCK_WRITE,
	FK_COND,
	FK_COND_SIGNAL,	/* pthread_cond_signal/broadcast waiting inside */
	FK_SEM,
	FK_JOIN,
	FK_BARRIER,
	FK_INTERNAL,	/* glibc-internal lll lock (malloc, stdio, ...) */
};

/* Thread ti's innermost frames into c->frames: how many. */
size_t dbs_frames_load(const struct dbs_lockctx *c, size_t ti);
/* A frame name without leading underscores, __GI_, version or suffix. */
void dbs_frame_normalize(const char *in, char *out, size_t cap);
/* The innermost frame of thread ti that names a blocking glibc function,
 * and its name (*ret_name; NULL with FK_NONE). */
enum dbs_fkind dbs_frame_kind(const struct dbs_lockctx *c, size_t ti,
			      const char **ret_name);
/* The lock kind (and mode) a frame kind means; FUTEX if none. */
enum dbs_lock_kind dbs_frame_lock(enum dbs_fkind f, enum dbs_wait_mode *mode);

/* ---- lock_fit.c: the readings of a futex word ---------------------------- */

enum dbs_fit { FIT_NO = 0, FIT_WEAK, FIT_YES };

/* One reading of a wait: "the futex at uaddr is word X of a KIND at start". */
struct dbs_interp {
	enum dbs_lock_kind kind;
	uint64_t start;
	enum dbs_wait_mode mode;
	enum dbs_fit fit;
};

/* Every reading of the wait the layouts allow, with how well the words
 * fit it (at most max). */
size_t dbs_fit_interpretations(const struct dbs_lockctx *c,
			       const struct dbs_wait *wt,
			       struct dbs_interp *out, size_t max);
/* Does a wait on the word at off of the rwlock w[0..n) fit, in which
 * mode? */
enum dbs_fit dbs_fit_rwlock(const struct dbs_glibc_locks *L,
			    const struct dbs_wait *wt, unsigned off,
			    const unsigned char *w, size_t n,
			    enum dbs_wait_mode *ret_mode);
/* Is off a futex word of an object of kind k (in_cond: the thread's
 * frames say it is inside a cond operation)? */
bool dbs_fit_futex_offset(const struct dbs_glibc_locks *L,
			  enum dbs_lock_kind k, uint64_t off, bool in_cond);

/* ---- lock_decide.c: the evidence weighed -------------------------------- */

/* c->vd[i] for every thread with a valid wait. */
void dbs_decide_all(struct dbs_lockctx *c);
/* Cond waiters on the two futex words of one condvar name its start. */
int dbs_decide_cond_pairs(struct dbs_lockctx *c);
/* An unidentified waiter on a word of an object another waiter
 * identified waits on that object too. */
int dbs_decide_shared(struct dbs_lockctx *c);

/* ---- lock_objects.c: the objects and their owners ----------------------- */

/* One lock per object (and kind) the waiters wait on, c->lockof and
 * every thread's blocked_on; c->succ the wait-for edges. */
int dbs_lockobj_build(struct dbs_lockctx *c);
/* Read and decode the object of lock l (kind, addr, object_known set),
 * with its symbol. */
void dbs_lockobj_load(const struct dbs_lockctx *c, struct dbs_lock *l);
/* Its owner as the words record it, and the owner's state. */
void dbs_lockobj_owner(const struct dbs_lockctx *c, struct dbs_lock *l,
		       bool pshared_futex);
/* Append l to snap->locks (c->lock_cap): 0 or -ENOMEM. */
int dbs_lockobj_add(struct dbs_lockctx *c, const struct dbs_lock *l);
/* Add a waiter to lk, keeping them sorted by tid: 0 or -ENOMEM. */
int dbs_lockobj_add_waiter(struct dbs_lock *lk, pid_t tid,
			   enum dbs_wait_mode mode);
/* Drop the locks left without waiters, then sort by (address, kind),
 * keeping c->lockof and blocked_on in step. */
int dbs_lockobj_tidy(struct dbs_lockctx *c);

/* ---- lock_park.c: PI waiters parked for ever ----------------------------- */

/* The park proven by the frames: the function whose stack frame holds
 * addr, or NULL. */
const char *dbs_park_frame(const struct dbs_lockctx *c, size_t ti, uint64_t addr);
bool dbs_park_frame_unnamed(const struct dbs_lockctx *c, size_t ti, uint64_t addr);
/* Values that may point to the mutex a parked thread was acquiring: its
 * callee-saved registers, then the stack words just above sp (stack[]
 * read from sp, NULL if unreadable).  Returns how many (<= max). */
#define DBS_PARK_SCAN_BYTES 256
size_t dbs_park_values(const struct arch_desc *a, const uint64_t *gregs,
		       const uint64_t *stack, uint64_t *vals, size_t max);
/* The candidate mutex starts for such a value v (the mutex itself, or
 * &mutex->__kind). */
#define DBS_PARK_NOFFS 2
void dbs_park_offsets(const struct dbs_glibc_locks *L,
		      uint64_t offs[DBS_PARK_NOFFS]);
/* Whether value v, found at the stop of a thread whose sp was sp, may
 * point to the mutex it parked on: into the process (arch_user_pointer),
 * and not into its own stack near sp (DBS_PARK_STACK_SPAN). */
bool dbs_park_candidate(const struct arch_desc *a, uint64_t v, uint64_t sp);
/* Parked waiters moved to the mutex the kernel refused them. */
int dbs_park_resolve(struct dbs_lockctx *c);

/* ---- lock_musl.c: musl's objects (docs/MUSL.md §5-§10) ------------------ */

/* c->vd[i] for every thread with a valid wait, from musl's words. */
void dbs_musl_decide_all(struct dbs_lockctx *c);
/* Read and decode l's words as musl's (l->musl set); false if unread. */
bool dbs_musl_lock_load(const struct dbs_lockctx *c, struct dbs_lock *l);
/* The owner musl's words record (never one from a normal mutex). */
void dbs_musl_recorded_owner(struct dbs_lock *l, pid_t *ret_owner,
			     enum dbs_owner_state *ret_state);

/* ---- lock_graph.c: cycles and stalls -------------------------------------- */

/* snap->locks->deadlocks (every cycle of succ, rotated to its smallest
 * tid, sorted) and ->stalls (stalls.c).  succ and lockof by thread index.
 * 0 or -ENOMEM. */
int dbs_lockgraph_find(struct dbs_snapshot *snap, const size_t *succ,
		       const size_t *lockof);

#endif
