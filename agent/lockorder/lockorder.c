/*
 * lockorder.c: the samples of the lock-order graph (lockorder.h), taken
 * from each update's snapshot through the public API only.
 *
 * In an update, a thread whose wait is part of the consistent graph
 * (tinspect_wait_in_graph(): stopped, or observed blocked by a
 * nonblocking capture) and that waits for a mutex or an rwlock B:
 *   - B is where it is taken from that thread's calling function: a site
 *     of B (its stack), what later shows which frame holds B;
 *   - if the thread's held locks are known (tinspect_thread_held_known()),
 *     every lock A it holds gives the order A -> B, with its stack as the
 *     evidence and, where a site of A was seen with a calling function
 *     that is on this stack, that frame as the one that holds A;
 *   - otherwise the wait is counted as one whose held locks are unknown.
 * Waits on what records no owner (condition variables, semaphores,
 * barriers, unidentified futexes, joins) can give no order: nothing can
 * be seen holding them, so no cycle can pass through them.  They are
 * counted by kind, and said.
 *
 * A lock is known across runs by its symbol (module, name, offset) when
 * it has one; a heap lock only by its address in its process.
 */
#include "lockorder.h"

#include "array.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

static int64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int lockorder_open(const char *path, struct lockorder **ret, char *why,
		   size_t whylen)
{
	struct lockorder *lo = calloc(1, sizeof *lo);
	if (!lo || !(lo->g = lg_new()) || (path && !(lo->path = strdup(path)))) {
		snprintf(why, whylen, "out of memory");
		lockorder_close(lo);
		return -ENOMEM;
	}
	if (path) {
		int err = lg_file_read(path, lo->g, why, whylen);
		if (err && err != -ENOENT) {
			lockorder_close(lo);
			return err;
		}
		if ((err = atomicfile_check(path))) {
			snprintf(why, whylen, "cannot write beside %s: %s", path,
				 strerror(-err));
			lockorder_close(lo);
			return err;
		}
	}
	/* 0666 less the umask, as open(2) would make it */
	mode_t um = umask(0);
	umask(um);
	lo->mode = 0666 & ~um;
	lo->g->runs++;
	lo->new_from = lo->g->ninv;
	lo->saved_ns = mono_ns();
	*ret = lo;
	return 0;
}

/* ---- one update's observations ---------------------------------------------------- */

/* The stack of a thread as a view (the snapshot's strings: the graph
 * interns what it keeps). */
static void stack_view(const tinspect_thread *th, struct lg_frame *v, size_t *n)
{
	size_t nf = tinspect_thread_nframes(th);
	*n = nf < LG_MAX_FRAMES ? nf : LG_MAX_FRAMES;
	for (size_t i = 0; i < *n; i++) {
		const tinspect_frame *f = tinspect_thread_frame(th, i);
		const char *sym = tinspect_frame_symbol(f);
		v[i] = (struct lg_frame){
			.symbol = sym,
			.module = tinspect_frame_module(f),
			.offset = sym ? tinspect_frame_offset(f)
				      : tinspect_frame_module_offset(f),
		};
	}
}

/* The thread, when and with which stack: a view. */
static void seen_view(const tinspect_snapshot *snap, const tinspect_thread *th,
		      unsigned long update, struct lg_frame *frames,
		      struct lg_seen *s)
{
	int64_t sec;
	long nsec;
	uint64_t pthread = 0;
	tinspect_snapshot_captured_at(snap, &sec, &nsec);
	if (tinspect_thread_pthread(th, &pthread, NULL))
		pthread = 0;
	*s = (struct lg_seen){
		.thread = { tinspect_snapshot_pid(snap), tinspect_thread_tid(th),
			    pthread, tinspect_thread_name(th, NULL) },
		.time_ns = sec * 1000000000 + nsec,
		.update = update,
		.stack = { frames, 0 },
	};
	stack_view(th, frames, &s->stack.n);
}

/* Who a lock is across runs: its symbol, else its address in its
 * process. */
static void lock_key(char *buf, size_t len, pid_t pid, uint64_t addr,
		     const tinspect_symbol *sym)
{
	const char *name = sym ? tinspect_symbol_name(sym) : NULL;
	if (name) {
		const char *module = tinspect_symbol_module(sym);
		snprintf(buf, len, "%s:%s+0x%" PRIx64, module ? module : "?", name,
			 tinspect_symbol_offset(sym));
	} else {
		snprintf(buf, len, "pid %d:0x%" PRIx64, (int)pid, addr);
	}
}

static long lock_index(struct lockgraph *g, pid_t pid, enum lg_kind kind,
		       uint64_t addr, const tinspect_symbol *sym)
{
	char key[4096];
	lock_key(key, sizeof key, pid, addr, sym);
	const char *name = sym ? tinspect_symbol_name(sym) : NULL;
	return lg_lock_get(g, key, kind, addr, pid, name,
			   name ? tinspect_symbol_module(sym) : NULL,
			   name ? tinspect_symbol_offset(sym) : 0);
}

/* The function a wait was called from (its first frame outside libc). */
static const char *caller_of(const tinspect_thread *th, size_t *ret_index)
{
	const tinspect_frame *c = agent_wait_caller(th);
	*ret_index = 0;
	for (size_t i = 0, n = tinspect_thread_nframes(th); c && i < n; i++)
		if (tinspect_thread_frame(th, i) == c)
			*ret_index = i;
	return c ? tinspect_frame_symbol(c) : NULL;
}

static enum lg_wait_class no_owner_class(enum tinspect_lock_kind k)
{
	switch (k) {
	case TINSPECT_LOCK_COND: return LG_WAIT_COND;
	case TINSPECT_LOCK_SEM: return LG_WAIT_SEM;
	case TINSPECT_LOCK_BARRIER: return LG_WAIT_BARRIER;
	case TINSPECT_LOCK_JOIN: return LG_WAIT_JOIN;
	default: return LG_WAIT_FUTEX;
	}
}

/* Edges changed by this update, searched for cycles at the end. */
struct changed {
	size_t *v;
	size_t n, cap;
};

static void changed_add(struct changed *c, size_t e)
{
	for (size_t i = 0; i < c->n; i++)
		if (c->v[i] == e)
			return;
	if (array_grow(&c->v, &c->cap, c->n + 1, sizeof *c->v, 16))
		return;
	c->v[c->n++] = e;
}

/* One thread waiting for the mutex or rwlock b. */
static void sample_wait(struct lockorder *lo, const tinspect_snapshot *snap,
			const tinspect_thread *th, const tinspect_lock *b,
			unsigned long update, struct changed *ch)
{
	struct lockgraph *g = lo->g;
	pid_t pid = tinspect_snapshot_pid(snap);
	enum lg_kind bk = tinspect_lock_kind(b) == TINSPECT_LOCK_RWLOCK ? LG_RWLOCK
									 : LG_MUTEX;
	uint64_t baddr = tinspect_lock_addr(b);
	long bi = lock_index(g, pid, bk, baddr, tinspect_lock_symbol(b));
	struct lg_frame frames[LG_MAX_FRAMES];
	struct lg_seen seen;
	size_t callee;
	seen_view(snap, th, update, frames, &seen);
	const char *caller = caller_of(th, &callee);
	if (bi >= 0)
		lg_lock_site(g, (size_t)bi, caller, &seen);
	if (!tinspect_thread_held_known(th)) {
		lo->waits[LG_WAIT_HELD_UNKNOWN]++;
		return;
	}
	lo->waits[LG_WAIT_USED]++;
	for (size_t i = 0, n = tinspect_thread_nheld(th); bi >= 0 && i < n; i++) {
		const tinspect_held *h = tinspect_thread_held(th, i);
		if (tinspect_held_addr(h) == baddr)
			continue;	/* a relock: a deadlock, no order */
		enum lg_kind ak = tinspect_held_kind(h) == TINSPECT_LOCK_RWLOCK
					  ? LG_RWLOCK : LG_MUTEX;
		long ai = lock_index(g, pid, ak, tinspect_held_addr(h),
				     tinspect_held_symbol(h));
		if (ai < 0)
			continue;
		const struct lg_seen *site;
		int hf = lg_holding_frame(g, (size_t)ai, &seen.stack, callee, &site);
		size_t e;
		unsigned news = lg_observe(g, (size_t)ai, (size_t)bi, &seen, hf,
					   site, &e);
		if (news & (LG_NEWS_EDGE | LG_NEWS_THREAD)) {
			changed_add(ch, e);
			lo->dirty = true;
		}
	}
}

void lockorder_sample(struct lockorder *lo, const tinspect_snapshot *snap,
		      unsigned long update)
{
	struct lockgraph *g = lo->g;
	int64_t sec;
	long nsec;
	tinspect_snapshot_captured_at(snap, &sec, &nsec);
	int64_t now = sec * 1000000000 + nsec;
	lo->new_from = g->ninv;
	memset(lo->waits, 0, sizeof lo->waits);
	lo->locks_tracked = tinspect_snapshot_locks_tracked(snap);
	lo->locks_forgotten = tinspect_snapshot_locks_forgotten(snap);
	lo->sampled = true;
	if (!tinspect_snapshot_locks_analysed(snap))
		return;
	lg_begin_update(g, now);
	struct changed ch = { 0 };
	for (size_t i = 0, n = tinspect_snapshot_nthreads(snap); i < n; i++) {
		const tinspect_thread *th = tinspect_snapshot_thread(snap, i);
		const tinspect_wait *w = tinspect_thread_wait(th);
		if (!w || !tinspect_wait_in_graph(w))
			continue;
		enum tinspect_lock_kind k = tinspect_wait_kind(w);
		const tinspect_lock *b = tinspect_wait_lock(w);
		if ((k == TINSPECT_LOCK_MUTEX || k == TINSPECT_LOCK_RWLOCK) && b &&
		    tinspect_lock_object_known(b))
			sample_wait(lo, snap, th, b, update, &ch);
		else
			lo->waits[no_owner_class(k)]++;
	}
	for (size_t c = 0; c < LG_WAIT_CLASSES; c++)
		g->waits[c] += lo->waits[c];
	for (size_t i = 0; i < ch.n; i++)
		lg_find_inversions(g, ch.v[i], now);
	free(ch.v);
	if (g->ninv > lo->new_from)
		lo->dirty = true;
}

size_t lockorder_ninversions(const struct lockorder *lo)
{
	return lo ? lo->g->ninv : 0;
}

size_t lockorder_nnew(const struct lockorder *lo)
{
	return lo ? lo->g->ninv - lo->new_from : 0;
}

/* ---- the file ------------------------------------------------------------------- */

/* Counts alone change every update: written at most once a minute (and
 * at the end); what is new is written at once. */
#define SAVE_COUNTS_NS (60 * INT64_C(1000000000))

int lockorder_save(struct lockorder *lo, bool force)
{
	if (!lo || !lo->path || !lo->sampled)
		return 0;
	int64_t now = mono_ns();
	if (!lo->dirty && !force && now - lo->saved_ns < SAVE_COUNTS_NS)
		return 0;
	char *buf;
	size_t len;
	int err = lg_file_render(lo->g, false, &buf, &len);
	if (!err) {
		err = atomicfile_replace(lo->path, buf, len, lo->mode);
		free(buf);
	}
	if (err) {
		fprintf(stderr, "tinspect: cannot write %s: %s\n", lo->path,
			strerror(-err));
		return err;
	}
	lo->dirty = false;
	lo->saved_ns = now;
	return 0;
}

int lockorder_close(struct lockorder *lo)
{
	if (!lo)
		return 0;
	int err = lo->g ? lockorder_save(lo, true) : 0;
	lg_free(lo->g);
	free(lo->path);
	free(lo);
	return err;
}
