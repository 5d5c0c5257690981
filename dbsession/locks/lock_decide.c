/*
 * lock_decide.c: what each blocked thread waits on, the evidence weighed.
 *
 * A kind is claimed only on evidence; otherwise the wait stays "futex",
 * and an object whose start is not proven stays unknown.  decide() gives
 * one verdict per thread from its own wait; then the threads share what
 * they found: cond waiters on the two futex words of one condvar, and
 * unidentified waiters on a word of an object another waiter identified.
 */
#include "locks_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* pthread_join(T) sleeps on T's tid word with val = T's tid, a shared
 * futex (the kernel's CLONE_CHILD_CLEARTID wake): if the address is the
 * tid word of a thread of the snapshot and val is its TID, that is what
 * it is, whatever else the words may look like. */
static const struct dbs_thread *join_target(const struct dbs_lockctx *c,
					    const struct dbs_wait *wt)
{
	if (!c->in->tid_offset || dbs_wait_is_pi(wt->cmd) || wt->private_op)
		return NULL;
	size_t i = dbs_tidx_find(c->by_tidword, c->nby_tidword, wt->uaddr);
	if (i == SIZE_MAX || wt->val != (uint32_t)c->snap->threads[i].ns_tid)
		return NULL;
	return &c->snap->threads[i];
}

static const char NOTE_INTERNAL[] =
	"a glibc-internal lock (lll_lock_wait_private: malloc, stdio, ...)";
static const char NOTE_PARK[] =
	"parked by glibc in its PI mutex lock after the kernel refused the mutex "
	"(EDEADLK or ESRCH): it will not get it; which mutex was not identified";
static const char NOTE_PARK_UNPROVEN[] =
	"a zero-valued wait on a word of its own stack, in code without "
	"symbols: glibc parks a PI mutex waiter this way for ever after the "
	"kernel refused the mutex (EDEADLK or ESRCH), but only libc's symbol "
	"table can prove it (its debug file: libc6-dbg in the target's root, "
	"or --debuginfod)";
static const char NOTE_PI_FUTEX[] =
	"a priority-inheritance futex: the kernel records the owner in the word";


/* What decide() weighs, gathered once per thread. */
struct clues {
	enum dbs_fkind fk;		/* the frames' verdict */
	const char *fname;		/* the frame that gave it */
	struct dbs_interp it[16];	/* the readings of the word */
	size_t ni;
	bool have_sym;			/* a symbol holds the word: */
	uint64_t sym_start, sym_size;	/* where it starts, its st_size */
};

static void symbol_clue(const struct dbs_lockctx *c, uint64_t uaddr,
			struct clues *k)
{
	struct dbs_symbol sym = { 0 };
	k->have_sym = c->in->symbol &&
		      c->in->symbol(c->in->ctx, uaddr, &sym, &k->sym_size) == 0 &&
		      sym.name;
	if (k->have_sym)
		k->sym_start = uaddr - sym.offset;
	free(sym.name);
	free(sym.module);
}

/* The frames named the kind: the object among the readings of that kind
 * is the one the symbol marks, else the only one that fits, else (one
 * futex offset for the kind) that one. */
static void by_frames(const struct dbs_lockctx *c, const struct clues *k,
		      struct dbs_verdict *v)
{
	enum dbs_wait_mode fmode;
	enum dbs_lock_kind kind = dbs_frame_lock(k->fk, &fmode);
	v->kind = kind;
	v->mode = fmode;
	v->evidence |= DBS_EV_FRAMES;
	v->frame = k->fname;
	size_t nk = 0, nyes = 0, pick = SIZE_MAX, pick_sym = SIZE_MAX;
	for (size_t i = 0; i < k->ni; i++) {
		if (k->it[i].kind != kind)
			continue;
		nk++;
		if (k->it[i].fit != FIT_NO) {
			nyes++;
			pick = i;
		}
		if (k->have_sym && k->sym_start == k->it[i].start &&
		    k->sym_size == dbs_glibc_kind_size(c->L, kind))
			pick_sym = i;
	}
	if (pick_sym != SIZE_MAX) {
		v->object = k->it[pick_sym].start;
		v->evidence |= DBS_EV_SYMBOL;
		if (k->it[pick_sym].fit != FIT_NO)
			v->evidence |= DBS_EV_WORDS;
		if (k->it[pick_sym].mode && !v->mode)
			v->mode = k->it[pick_sym].mode;
	} else if (nyes == 1) {
		v->object = k->it[pick].start;
		v->evidence |= DBS_EV_WORDS;
		if (k->it[pick].mode && !v->mode)
			v->mode = k->it[pick].mode;
	} else if (nk == 1 || kind == DBS_LOCK_MUTEX || kind == DBS_LOCK_SEM) {
		for (size_t i = 0; i < k->ni; i++)
			if (k->it[i].kind == kind) {
				v->object = k->it[i].start;
				break;
			}
	}
}

/* A PI futex: the kernel's word; a mutex if its __kind says so. */
static void by_kernel_word(const struct dbs_lockctx *c, const struct dbs_wait *wt,
			   const struct clues *k, struct dbs_verdict *v)
{
	v->evidence |= DBS_EV_KERNEL;
	if (k->ni && k->it[0].kind == DBS_LOCK_MUTEX && k->it[0].fit != FIT_NO) {
		v->kind = DBS_LOCK_MUTEX;
		v->object = wt->uaddr;
		v->evidence |= DBS_EV_WORDS;
		if (k->have_sym && k->sym_start == wt->uaddr &&
		    k->sym_size == c->L->mutex.size)
			v->evidence |= DBS_EV_SYMBOL;
	} else {
		v->note = NOTE_PI_FUTEX;
	}
}

/* A symbol of exactly the type's size starts where a fitting reading
 * puts the object. */
static bool by_symbol(const struct dbs_lockctx *c, const struct clues *k,
		      struct dbs_verdict *v)
{
	if (!k->have_sym)
		return false;
	for (size_t i = 0; i < k->ni; i++) {
		const struct dbs_interp *it = &k->it[i];
		if (it->fit == FIT_NO || it->start != k->sym_start ||
		    k->sym_size != dbs_glibc_kind_size(c->L, it->kind))
			continue;
		v->kind = it->kind;
		v->mode = it->mode;
		v->object = it->start;
		v->evidence |= DBS_EV_SYMBOL | DBS_EV_WORDS;
		return true;
	}
	return false;
}

/* The words alone: only the self-identifying layouts (a mutex, an
 * rwlock), when exactly one of them fits and nothing else does. */
static void by_words(const struct clues *k, struct dbs_verdict *v)
{
	size_t nyes = 0, pick = 0;
	bool others = false;
	for (size_t i = 0; i < k->ni; i++) {
		if (k->it[i].fit != FIT_YES)
			continue;
		if (k->it[i].kind == DBS_LOCK_MUTEX || k->it[i].kind == DBS_LOCK_RWLOCK) {
			nyes++;
			pick = i;
		} else {
			others = true;
		}
	}
	if (nyes == 1 && !others) {
		v->kind = k->it[pick].kind;
		v->mode = k->it[pick].mode;
		v->object = k->it[pick].start;
		v->evidence |= DBS_EV_WORDS;
	}
}

/*
 * Order of evidence:
 *  1. join: the word is a thread's tid word and val its TID;
 *  2. glibc's park of a PI waiter, proven by the frames (lock_park.c);
 *  3. a cond waiter's own cleanup record names its cond (condwait.c);
 *  4. the calling frames name the entry point: the kind is theirs; the
 *     object start from the only layout offset, or the one whose words fit;
 *  5. a PI futex is the kernel's word: a mutex if its words say so;
 *  6. a symbol of exactly the type's size holds the word at the type's
 *     futex offset, and the words do not contradict it;
 *  7. without either, only self-identifying layouts: a mutex (PI word
 *     managed by the kernel, or all the fields of a held mutex consistent
 *     with the wait, its robust links zero) or an rwlock (pads zero, phase
 *     bits consistent with the wait), if exactly one fits;
 *  8. otherwise "futex".  Parked PI waiters are resolved later
 *     (dbs_park_resolve) with the owners known.
 */
static void decide(const struct dbs_lockctx *c, size_t ti,
		   const struct dbs_wait *wt, struct dbs_verdict *v)
{
	const struct dbs_thread *th = &c->snap->threads[ti];
	memset(v, 0, sizeof *v);
	v->kind = DBS_LOCK_FUTEX;
	v->evidence = wt->src;

	struct clues k = { 0 };
	k.fk = dbs_frame_kind(c, ti, &k.fname);
	const struct dbs_thread *jt = join_target(c, wt);
	if (jt) {
		v->kind = DBS_LOCK_JOIN;
		v->object = wt->uaddr - c->in->tid_offset;
		v->evidence |= DBS_EV_THREAD;
		if (k.fk == FK_JOIN) {
			v->evidence |= DBS_EV_FRAMES;
			v->frame = k.fname;
		}
		v->join_tid = jt->tid;
		return;
	}
	uint32_t word = 1;
	const char *pname = dbs_wait_maybe_park(th, wt)
		? dbs_park_frame(c, ti, wt->uaddr) : NULL;
	if (pname && dbs_lock_read(c, wt->uaddr, &word, 4) && word == 0) {
		v->parked = true;
		v->note = NOTE_PARK;
		v->evidence |= DBS_EV_FRAMES;
		v->frame = pname;
		return;
	}
	/* the park's shape, in a frame without a name: said, not claimed */
	bool maybe_park = !pname && dbs_wait_maybe_park(th, wt) &&
			  dbs_park_frame_unnamed(c, ti, wt->uaddr) &&
			  dbs_lock_read(c, wt->uaddr, &word, 4) && word == 0;
	uint64_t cond, cmutex;
	if (!dbs_wait_is_pi(wt->cmd) && (k.fk == FK_NONE || k.fk == FK_COND) &&
	    dbs_condwait_object(c->in, dbs_thread_descriptor(c, th), wt->uaddr,
			    &cond, &cmutex)) {
		v->kind = DBS_LOCK_COND;
		v->object = cond;
		v->cond_mutex = cmutex;
		v->evidence |= DBS_EV_CLEANUP;
		if (k.fk == FK_COND) {
			v->evidence |= DBS_EV_FRAMES;
			v->frame = k.fname;
		}
		return;
	}
	if (k.fk == FK_INTERNAL) {
		v->evidence |= DBS_EV_FRAMES;
		v->frame = k.fname;
		v->note = NOTE_INTERNAL;
		return;
	}

	k.ni = dbs_fit_interpretations(c, wt, k.it, 16);
	symbol_clue(c, wt->uaddr, &k);
	if (k.fk != FK_NONE)
		by_frames(c, &k, v);
	else if (dbs_wait_is_pi(wt->cmd))
		by_kernel_word(c, wt, &k, v);
	else if (!by_symbol(c, &k, v))
		by_words(&k, v);
	if (maybe_park && v->kind == DBS_LOCK_FUTEX && !v->object && !v->note)
		v->note = NOTE_PARK_UNPROVEN;
}

void dbs_decide_all(struct dbs_lockctx *c)
{
	for (size_t i = 0; i < c->snap->nthreads; i++) {
		dbs_wait_of(c->in->arch, &c->snap->threads[i], &c->waits[i]);
		if (c->waits[i].valid)
			decide(c, i, &c->waits[i], &c->vd[i]);
	}
}

/* A cond-like wait (value 0, WAIT_BITSET) whose object is still open. */
static bool open_cond_wait(const struct dbs_wait *w, const struct dbs_verdict *v)
{
	return w->valid && !v->object && !v->parked &&
	       w->cmd == FUTEX_WAIT_BITSET && w->val == 0;
}

/* Cond waiters whose frames say cond but whose object is open (+40 or
 * +44?): waiters on two words 4 bytes apart are the two groups of one
 * condvar, the lower one its __g_signals[0]. */
int dbs_decide_cond_pairs(struct dbs_lockctx *c)
{
	size_t n = c->snap->nthreads, nident = 0;
	unsigned g0 = c->L->cond.g_signals, g1 = g0 + 4;
	struct dbs_tidx *ident = calloc(n ? n : 1, sizeof *ident);
	if (!ident)
		return -ENOMEM;
	for (size_t j = 0; j < n; j++)
		if (open_cond_wait(&c->waits[j], &c->vd[j]) &&
		    (c->vd[j].kind == DBS_LOCK_COND || c->vd[j].kind == DBS_LOCK_FUTEX))
			ident[nident++] = (struct dbs_tidx){ c->waits[j].uaddr, j };
	dbs_sort(ident, nident, sizeof *ident, dbs_tidx_cmp);
	for (size_t i = 0; nident && i < n; i++) {
		struct dbs_verdict *v = &c->vd[i];
		if (!open_cond_wait(&c->waits[i], v) || v->kind != DBS_LOCK_COND)
			continue;
		uint64_t f = c->waits[i].uaddr;
		bool up = dbs_tidx_find(ident, nident, f + 4) != SIZE_MAX;
		bool down = f >= 4 && dbs_tidx_find(ident, nident, f - 4) != SIZE_MAX;
		if (up == down || f < g1)
			continue;
		v->object = up ? f - g0 : f - g1;
		v->evidence |= DBS_EV_PAIR;
	}
	free(ident);
	return 0;
}

/* Give the object of verdict from (kind, start) to thread i's verdict,
 * the mode from the words if it is an rwlock. */
static void adopt(const struct dbs_lockctx *c, size_t i,
		  const struct dbs_verdict *from)
{
	struct dbs_verdict *v = &c->vd[i];
	enum dbs_wait_mode mode = DBS_MODE_NONE;
	if (from->kind == DBS_LOCK_RWLOCK) {
		unsigned char w[64];
		size_t sz = c->L->rwlock.size;
		if (dbs_lock_read(c, from->object, w, sz))
			(void)dbs_fit_rwlock(c->L, &c->waits[i],
					     (unsigned)(c->waits[i].uaddr - from->object),
					     w, sz, &mode);
	}
	v->kind = from->kind;
	v->object = from->object;
	if (!v->mode)
		v->mode = mode;
	v->evidence |= DBS_EV_SHARED;
}

/* An unidentified waiter on a word of an object that another waiter
 * identified (cond +40/+44, rwlock +8/+12) waits on it too. */
int dbs_decide_shared(struct dbs_lockctx *c)
{
	size_t n = c->snap->nthreads, nident = 0;
	/* the farthest a futex word lies from its object's start */
	uint64_t reach = c->L->cond.g_signals + 4;
	struct dbs_tidx *ident = calloc(n ? n : 1, sizeof *ident);
	if (!ident)
		return -ENOMEM;
	for (size_t j = 0; j < n; j++)
		if (c->waits[j].valid && c->vd[j].kind != DBS_LOCK_FUTEX &&
		    c->vd[j].kind != DBS_LOCK_JOIN && c->vd[j].object)
			ident[nident++] = (struct dbs_tidx){ c->vd[j].object, j };
	dbs_sort(ident, nident, sizeof *ident, dbs_tidx_cmp);
	for (size_t i = 0; nident && i < n; i++) {
		const struct dbs_verdict *v = &c->vd[i];
		if (!c->waits[i].valid || v->object || v->parked ||
		    v->note == NOTE_INTERNAL ||
		    (v->kind != DBS_LOCK_FUTEX && v->kind != DBS_LOCK_COND))
			continue;
		bool in_cond = v->kind == DBS_LOCK_COND;
		uint64_t f = c->waits[i].uaddr;
		size_t a = dbs_tidx_lower_bound(ident, nident, f > reach ? f - reach : 0);
		for (; a < nident && ident[a].key <= f; a++) {
			const struct dbs_verdict *o = &c->vd[ident[a].i];
			if ((in_cond && o->kind != DBS_LOCK_COND) ||
			    !dbs_fit_futex_offset(c->L, o->kind, f - o->object, in_cond))
				continue;
			adopt(c, i, o);
			break;
		}
	}
	free(ident);
	return 0;
}
