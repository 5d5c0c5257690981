/*
 * lockgraph.h: the lock-order graph, as pure data (lockgraph.c): locks,
 * the orders seen between them with their evidence, and the cycles that
 * make a potential deadlock.  No target, no snapshot, no I/O: the watch
 * feeds it observations (lockorder.c), lockgraph_file.c reads and writes
 * it, lockorder_out.c renders it.
 *
 * An order "A then B" (an edge A -> B) is one thread seen waiting for B
 * while the words of A recorded it as A's owner.  A cycle of orders is a
 * potential deadlock (a lock-order inversion) only if its orders were
 * not all seen in one thread: one thread that takes A then B and, at
 * another time, B then A cannot deadlock with itself.  Threads are told
 * apart by process, TID and pthread_t, so that a thread seen by two runs
 * of tinspect is one thread, and two processes' threads are two.
 */
#ifndef TINSPECT_AGENT_LOCKGRAPH_H
#define TINSPECT_AGENT_LOCKGRAPH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common.h"	/* struct btab: the graph's strings, interned */

#define LG_MAX_FRAMES 32	/* frames kept of a stack, innermost first */
#define LG_EDGE_THREADS 4	/* evidence kept per order: one per thread */
#define LG_LOCK_SITES 4		/* waits kept per lock: one per stack */
#define LG_MAX_LOCKS 4096
#define LG_MAX_EDGES 4096
#define LG_MAX_INVERSIONS 1024
#define LG_MAX_CYCLE 8		/* locks in a cycle looked for */

/* The kinds of lock an order can be between. */
enum lg_kind { LG_MUTEX, LG_RWLOCK };
const char *lg_kind_name(enum lg_kind k);	/* "mutex", "rwlock" */
/* 0 and *ret, or -1 for a name that is neither */
int lg_kind_parse(const char *name, enum lg_kind *ret);

/* Strings of frames and thread names in a graph are the graph's (interned:
 * thousands of stacks share a few dozen names); in a view passed to
 * lg_observe() or lg_lock_site(), the caller's. */
struct lg_frame {
	const char *symbol;	/* NULL: none */
	const char *module;	/* NULL: outside any module */
	uint64_t offset;	/* from the symbol, else from the module */
};

struct lg_stack {
	struct lg_frame *v;
	size_t n;
};

struct lg_thread {
	pid_t pid, tid;
	uint64_t pthread;	/* 0: not known */
	const char *name;	/* NULL: not known */
};
bool lg_same_thread(const struct lg_thread *a, const struct lg_thread *b);

/* One observation: a thread, when, and its stack. */
struct lg_seen {
	struct lg_thread thread;
	int64_t time_ns;	/* CLOCK_REALTIME */
	uint64_t update;	/* the watch's update number; 0: a one-shot */
	struct lg_stack stack;
};

struct lg_lock {
	char *key;		/* who it is across runs (lockorder.c) */
	enum lg_kind kind;
	uint64_t addr;		/* where it was last seen */
	pid_t pid;		/* in which process */
	char *symbol;		/* NULL: none (a heap lock) */
	char *module;
	uint64_t offset;	/* from the symbol */
	/* waits seen on it, one per distinct stack (functions and offsets),
	 * the first ones seen: where it is taken; callers[i] is the function
	 * sites[i] was called from (NULL: unknown) */
	struct lg_seen sites[LG_LOCK_SITES];
	char *callers[LG_LOCK_SITES];
	size_t nsites;
};

/* One thread's evidence of an order A -> B. */
struct lg_evidence {
	struct lg_seen seen;	/* the thread waiting for B, its stack */
	/* the frame of that stack that holds A, as a wait on A with the
	 * same calling function shows; -1: not shown */
	int holding_frame;
	/* that wait on A (or another one seen); thread.tid 0: none */
	struct lg_seen held_site;
};

struct lg_edge {
	size_t from, to;	/* lock indexes: from taken, then to */
	uint64_t count;		/* updates that saw it */
	uint64_t counted;	/* the graph's tick it was last counted at */
	int64_t first_ns, last_ns;
	struct lg_evidence ev[LG_EDGE_THREADS];
	size_t nev;
};

/* A cycle of orders, not all of one thread: a potential deadlock.
 * edges[i] goes from locks[i] to locks[(i + 1) % n]; ev[i] is the
 * evidence of edges[i] shown (chosen so that not all are one thread's). */
struct lg_inversion {
	size_t n;
	size_t locks[LG_MAX_CYCLE];
	size_t edges[LG_MAX_CYCLE];
	size_t ev[LG_MAX_CYCLE];
	int64_t found_ns;
	bool from_file;		/* known before this run */
};

/* Waits by what they could give the graph. */
enum lg_wait_class {
	LG_WAIT_USED,		/* a mutex or rwlock, by a thread whose held
				 * locks were read */
	LG_WAIT_HELD_UNKNOWN,	/* a mutex or rwlock, by a thread that could
				 * have run meanwhile (nonblocking: moved) */
	LG_WAIT_COND,		/* objects that record no owner: nothing can */
	LG_WAIT_SEM,		/* hold them, so no order can end in them */
	LG_WAIT_BARRIER,
	LG_WAIT_FUTEX,		/* an unidentified futex word */
	LG_WAIT_JOIN,
	LG_WAIT_CLASSES
};
const char *lg_wait_class_name(enum lg_wait_class c);

struct lockgraph {
	struct lg_lock *locks;
	size_t nlocks, locks_cap;
	struct lg_edge *edges;
	size_t nedges, edges_cap;
	struct lg_inversion *inv;
	size_t ninv, inv_cap;
	uint64_t runs;		/* runs of tinspect merged */
	uint64_t updates;	/* updates observed, all runs */
	uint64_t waits[LG_WAIT_CLASSES];
	uint64_t dropped_locks, dropped_edges, dropped_inversions;
	int64_t first_ns, last_ns;	/* first and last update observed */
	uint64_t tick;		/* lg_begin_update() calls */
	/* the lock index by key (open addressing), rebuilt as it grows */
	size_t *kidx;
	size_t kidx_cap;
	struct btab strings;	/* of frames and thread names */
};

struct lockgraph *lg_new(void);
void lg_free(struct lockgraph *g);

/* The lock of this key: its index, added (with these facts, strings
 * copied) if new.  -1 when out of memory or LG_MAX_LOCKS are known
 * (counted in dropped_locks).  An existing lock takes addr (where it is
 * now). */
long lg_lock_get(struct lockgraph *g, const char *key, enum lg_kind kind,
		 uint64_t addr, pid_t pid, const char *symbol, const char *module,
		 uint64_t offset);
long lg_lock_find(const struct lockgraph *g, const char *key);

/* A wait on lock li called from `caller` (NULL if unknown): kept as a
 * site (copied) if the lock has none with the same stack yet. */
void lg_lock_site(struct lockgraph *g, size_t li, const char *caller,
		  const struct lg_seen *seen);
/*
 * The frame of the stack `st` (a thread waiting for another lock) that
 * holds lock li, from `from` outward: a frame whose function is that of a
 * frame of one of li's sites, at another offset (it went on from taking
 * li to where it is now), with the same callers (functions and offsets:
 * one at least) as far as both stacks go.  Its index, -1 if no site shows one;
 * *ret_site the site that showed it (else the first site, or NULL).
 */
int lg_holding_frame(const struct lockgraph *g, size_t li, const struct lg_stack *st,
		     size_t from, const struct lg_seen **ret_site);

/* An update begins (captured at now_ns): counts each order once. */
void lg_begin_update(struct lockgraph *g, int64_t now_ns);

/* What lg_observe() learned. */
enum lg_news {
	LG_NEWS_NONE = 0,
	LG_NEWS_EDGE = 1,	/* an order not seen before */
	LG_NEWS_THREAD = 2,	/* a thread not seen before on that order */
	LG_NEWS_ERROR = 4,	/* out of memory, or LG_MAX_EDGES (dropped) */
};
/*
 * Thread seen->thread held lock `from` while waiting for `to` (seen: its
 * stack then).  holding_frame and held_site: as struct lg_evidence (the
 * site is copied; NULL: none).  The order's count grows once per update.
 * Returns enum lg_news bits, and the edge's index in *ret_edge.
 */
unsigned lg_observe(struct lockgraph *g, size_t from, size_t to,
		    const struct lg_seen *seen, int holding_frame,
		    const struct lg_seen *held_site, size_t *ret_edge);
long lg_edge_find(const struct lockgraph *g, size_t from, size_t to);

/* The cycles through edge e that are potential deadlocks and not known
 * yet, added (found at now_ns); how many.  Cycles of up to LG_MAX_CYCLE
 * locks; the search is bounded (a few hundred thousand steps). */
size_t lg_find_inversions(struct lockgraph *g, size_t e, int64_t now_ns);
/* Every edge searched (after a graph was read from a file). */
size_t lg_find_all_inversions(struct lockgraph *g, int64_t now_ns);

/* A copy of an observation into g (its strings interned in g), and its
 * release. */
int lg_seen_copy(struct lockgraph *g, struct lg_seen *dst, const struct lg_seen *src);
void lg_seen_clear(struct lg_seen *s);

#endif
