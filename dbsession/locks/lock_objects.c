/*
 * lock_objects.c: the objects the blocked threads wait on - one lock per
 * (object, kind), its words decoded, its waiters by tid - and who owns
 * each, as far as the words record it: glibc records the owner of a
 * mutex (__owner, or the TID in a robust or PI mutex's __lock) and of an
 * rwlock held by a writer (__cur_writer), not of readers, conds,
 * semaphores or barriers.  An owner TID that is no thread of the
 * snapshot is dead (the lock is orphaned) or, for a process-shared lock,
 * outside the process.
 */
#include "locks_int.h"

#include "array.h"
#include "order.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static const char NOTE_ELISION[] =
	"lock elision: glibc does not record the owner of an elided mutex";
static const char NOTE_ACQUIRING[] =
	"locked, owner not recorded yet (being acquired)";
static const char NOTE_RELEASED[] =
	"not locked now: the wake-up of its waiters is in flight";
static const char NOTE_READERS[] =
	"held by readers; glibc counts readers but does not record them";
static const char NOTE_INCONSISTENT[] =
	"robust: its previous owner died; the new owner got EOWNERDEAD and has "
	"not called pthread_mutex_consistent";
static const char NOTE_NOTRECOVERABLE[] =
	"robust: not recoverable (unlocked while inconsistent)";
static const char NOTE_OWNER_DIED[] =
	"robust: the owner died (FUTEX_OWNER_DIED); the next locker gets EOWNERDEAD";
static const char NOTE_GARBAGE[] =
	"its words are no glibc mutex (__kind has bits no mutex has, or both "
	"PI and PP): corrupt; its owner is unknown";

/* Owner (as recorded in the target's PID namespace) of a decoded lock. */
static void recorded_owner(struct dbs_lock *l, pid_t *ret_owner,
			   enum dbs_owner_state *ret_state)
{
	*ret_owner = 0;
	*ret_state = DBS_OWNER_NONE;
	if (l->musl && l->decoded) {
		dbs_musl_recorded_owner(l, ret_owner, ret_state);
		return;
	}
	if (!l->decoded) {
		/* words unreadable: nothing is known about a holder */
		if (l->kind == DBS_LOCK_MUTEX || l->kind == DBS_LOCK_RWLOCK ||
		    l->kind == DBS_LOCK_JOIN || l->kind == DBS_LOCK_FUTEX ||
		    l->kind == DBS_LOCK_FILE)
			*ret_state = DBS_OWNER_UNKNOWN;
		return;
	}
	switch (l->kind) {
	case DBS_LOCK_MUTEX: {
		struct dbs_mutex_info *m = &l->u.mutex;
		if (dbs_glibc_mutex_garbage(m)) {
			/* named a mutex by its frames, but the words were
			 * overwritten: no owner is read out of garbage */
			l->note = NOTE_GARBAGE;
			*ret_state = DBS_OWNER_UNKNOWN;
			return;
		}
		if (m->robust || m->pi) {
			*ret_owner = (pid_t)(m->lock & FUTEX_TID_MASK);
			if (m->notrecoverable)
				l->note = NOTE_NOTRECOVERABLE;
			else if (m->inconsistent)
				l->note = NOTE_INCONSISTENT;
			else if (m->owner_died)
				l->note = NOTE_OWNER_DIED;
			if (!*ret_owner && (m->lock & ~FUTEX_WAITERS & ~FUTEX_OWNER_DIED))
				*ret_state = DBS_OWNER_UNKNOWN;
			else if (*ret_owner)
				*ret_state = DBS_OWNER_LIVE;	/* refined later */
			return;
		}
		unsigned state = m->pp ? (m->lock & 3) : m->lock;
		if (state == 0) {
			l->note = NOTE_RELEASED;
			return;
		}
		if (m->elision && m->type == 0) {
			l->note = NOTE_ELISION;
			*ret_state = DBS_OWNER_UNKNOWN;
			return;
		}
		if (m->owner_field <= 0 || (uint32_t)m->owner_field > FUTEX_TID_MASK) {
			l->note = NOTE_ACQUIRING;
			*ret_state = DBS_OWNER_UNKNOWN;
			return;
		}
		*ret_owner = m->owner_field;
		*ret_state = DBS_OWNER_LIVE;
		return;
	}
	case DBS_LOCK_RWLOCK: {
		struct dbs_rwlock_info *r = &l->u.rwlock;
		if (r->wrphase && r->wrlocked) {
			/* state #7/#8: a writer holds it; __cur_writer is
			 * stored right after the acquisition */
			if (r->cur_writer > 0) {
				*ret_owner = r->cur_writer;
				*ret_state = DBS_OWNER_LIVE;
			} else {
				l->note = NOTE_ACQUIRING;
				*ret_state = DBS_OWNER_UNKNOWN;
			}
		} else if (!r->wrphase && r->nreaders) {
			/* states #2/#4/#4a: readers hold it */
			l->nholders = r->nreaders;
			l->note = NOTE_READERS;
			*ret_state = DBS_OWNER_UNKNOWN;
		}
		return;
	}
	case DBS_LOCK_JOIN:
		/* the thread being joined: waiting for it to exit */
		*ret_owner = l->u.join.target;
		*ret_state = *ret_owner ? DBS_OWNER_LIVE : DBS_OWNER_NONE;
		return;
	case DBS_LOCK_FUTEX:
		/* an unidentified word: whether anyone holds it is unknown */
		*ret_state = DBS_OWNER_UNKNOWN;
		return;
	case DBS_LOCK_COND:
	case DBS_LOCK_SEM:
	case DBS_LOCK_BARRIER:
	case DBS_LOCK_FILE:	/* decided by musl's words only */
		return;
	}
}

/* The owner state of a recorded owner TID (target namespace). */
static void resolve_owner(const struct dbs_lockctx *c, struct dbs_lock *l,
			  pid_t rec, enum dbs_owner_state st, bool pshared)
{
	l->owner_state = st;
	l->owner = 0;
	if (st != DBS_OWNER_LIVE)
		return;
	size_t oi = dbs_thread_by_nstid(c, rec);
	if (oi != SIZE_MAX) {
		l->owner = c->snap->threads[oi].tid;
		return;
	}
	/* Not a thread of this process (any more).  Every task of the
	 * process is in the snapshot, so a private lock's owner is dead:
	 * nothing releases a dead owner's normal mutex (and for a robust one
	 * the kernel should have set FUTEX_OWNER_DIED instead). */
	if (c->nstid_unknown) {
		/* it may be the thread whose namespace TID we lack; rec is a
		 * TID of the target's namespace, not one to print beside
		 * ours */
		l->owner_state = DBS_OWNER_UNKNOWN;
		l->note = "the recorded owner matches no known thread, but some "
			  "threads' TIDs in the target's namespace are unknown";
		return;
	}
	l->owner = rec;
	/* a robust mutex's dead owner is marked FUTEX_OWNER_DIED by the
	 * kernel, with no TID: a TID that is not ours belongs to another
	 * process sharing it */
	pshared = pshared ||
		  (l->kind == DBS_LOCK_MUTEX && l->decoded &&
		   (l->u.mutex.pshared || l->u.mutex.robust)) ||
		  (l->kind == DBS_LOCK_RWLOCK && l->decoded && l->u.rwlock.shared);
	if (pshared) {
		l->owner_state = DBS_OWNER_OUTSIDE;
	} else {
		l->owner_state = DBS_OWNER_DEAD;
		l->orphaned = true;
	}
}

void dbs_lockobj_owner(const struct dbs_lockctx *c, struct dbs_lock *l,
		       bool pshared_futex)
{
	pid_t rec;
	enum dbs_owner_state st;
	recorded_owner(l, &rec, &st);
	resolve_owner(c, l, rec, st, pshared_futex);
}

/* The owner of lock lk, whose first waiter is thread ti: from the words,
 * but a PI futex's from the kernel's word, and a join's from the thread
 * the joiner matched. */
static void lock_owner(const struct dbs_lockctx *c, struct dbs_lock *lk,
		       size_t ti)
{
	const struct dbs_verdict *v = &c->vd[ti];
	pid_t rec;
	enum dbs_owner_state st;
	if (lk->kind == DBS_LOCK_FUTEX && (v->evidence & DBS_EV_KERNEL) &&
	    lk->decoded) {
		/* FUTEX_LOCK_PI: the word is owner TID | bits */
		rec = (pid_t)(dbs_u32_at(lk->words, lk->nwords, 0) & FUTEX_TID_MASK);
		st = rec ? DBS_OWNER_LIVE : DBS_OWNER_NONE;
	} else {
		recorded_owner(lk, &rec, &st);
	}
	size_t jt = dbs_thread_by_tid(c, v->join_tid);
	if (lk->kind == DBS_LOCK_JOIN && jt != SIZE_MAX && st == DBS_OWNER_LIVE &&
	    c->snap->threads[jt].ns_tid)
		rec = c->snap->threads[jt].ns_tid;
	resolve_owner(c, lk, rec, st,
		      lk->kind == DBS_LOCK_FUTEX && !c->waits[ti].private_op);
	if (lk->kind == DBS_LOCK_JOIN) {
		lk->u.join.target = lk->owner;
		lk->u.join.pthread = lk->addr;
	}
}

/* Free a partially built result (NULL is fine). */
static void free_locks(struct dbs_locks *L)
{
	if (!L)
		return;
	for (size_t i = 0; i < L->n; i++) {
		free(L->v[i].sym.module);
		free(L->v[i].sym.name);
		free(L->v[i].waiters);
	}
	free(L->v);
	for (size_t i = 0; i < L->ndeadlocks; i++) {
		free(L->deadlocks[i].threads);
		free(L->deadlocks[i].locks);
	}
	free(L->deadlocks);
	for (size_t i = 0; i < L->nstalls; i++) {
		free(L->stalls[i].threads);
		free(L->stalls[i].locks);
	}
	free(L->stalls);
	free(L);
}

void dbs_locks_free(struct dbs_snapshot *snap)
{
	if (!snap)
		return;
	for (size_t i = 0; i < snap->nthreads; i++) {
		free(snap->threads[i].blocked_on);
		snap->threads[i].blocked_on = NULL;
	}
	free_locks(snap->locks);
	snap->locks = NULL;
}

void dbs_lockobj_load(const struct dbs_lockctx *c, struct dbs_lock *l)
{
	uint64_t at = l->addr;
	size_t sz = l->object_known ? dbs_glibc_kind_size(c->L, l->kind) : 4;
	if (l->kind == DBS_LOCK_JOIN && l->object_known)
		at = l->addr + c->in->tid_offset;	/* the tid word */
	if (sz > sizeof l->words)
		sz = sizeof l->words;
	if (c->in->musl) {
		l->decoded = dbs_musl_lock_load(c, l);
	} else if (c->in->glibc_unverified) {
		l->note = c->in->undecoded_note ? c->in->undecoded_note
			: "its glibc's lock layout is not verified: not decoded";
	} else if (dbs_lock_read(c, at, l->words, sz)) {
		l->nwords = sz;
		l->decoded = dbs_lock_decode_with(c->L, l);
	}
	if (c->in->symbol) {
		uint64_t size;
		struct dbs_symbol s = { 0 };
		if (c->in->symbol(c->in->ctx, l->addr, &s, &size) == 0 && s.name)
			l->sym = s;
		else {
			free(s.name);
			free(s.module);
		}
	}
	l->sym.addr = l->addr;
}

int dbs_lockobj_add(struct dbs_lockctx *c, const struct dbs_lock *l)
{
	struct dbs_locks *L = c->snap->locks;
	if (array_grow(&L->v, &c->lock_cap, L->n + 1, sizeof *L->v, 16))
		return -ENOMEM;
	L->v[L->n++] = *l;
	return 0;
}

static int cmp_waiter(const void *a, const void *b)
{
	const struct dbs_lock_waiter *x = a, *y = b;
	return (x->tid > y->tid) - (x->tid < y->tid);
}

int dbs_lockobj_add_waiter(struct dbs_lock *lk, pid_t tid,
			   enum dbs_wait_mode mode)
{
	struct dbs_lock_waiter *nw = realloc(lk->waiters,
					     (lk->nwaiters + 1) * sizeof *nw);
	if (!nw)
		return -ENOMEM;
	lk->waiters = nw;
	lk->waiters[lk->nwaiters++] = (struct dbs_lock_waiter){ tid, mode };
	dbs_sort(lk->waiters, lk->nwaiters, sizeof *lk->waiters, cmp_waiter);
	return 0;
}

/* An object's sort key - its start (or the futex word when the start is
 * unknown) and kind - and the index of what stands for it: a waiting
 * thread's claim on the object, or a lock before the locks are sorted. */
struct keyed {
	uint64_t key;
	enum dbs_lock_kind kind;
	size_t idx;
};

static int cmp_keyed(const void *a, const void *b)
{
	const struct keyed *x = a, *y = b;
	return order_u64(x->key, y->key) ?: order_u64(x->kind, y->kind) ?:
	       order_u64(x->idx, y->idx);
}

/* The lock of the claims e[0..n), all on one (key, kind). */
static int add_object(struct dbs_lockctx *c, const struct keyed *e, size_t n)
{
	struct dbs_snapshot *snap = c->snap;
	struct dbs_locks *L = snap->locks;
	struct dbs_lock l = { .kind = e[0].kind, .addr = e[0].key,
			      .object_known = c->vd[e[0].idx].object != 0 };
	dbs_lockobj_load(c, &l);
	l.waiters = calloc(n, sizeof *l.waiters);
	if (!l.waiters || dbs_lockobj_add(c, &l)) {
		free(l.waiters);
		free(l.sym.name);
		free(l.sym.module);
		return -ENOMEM;
	}
	struct dbs_lock *lk = &L->v[L->n - 1];
	for (size_t k = 0; k < n; k++) {
		size_t ti = e[k].idx;
		lk->waiters[lk->nwaiters++] = (struct dbs_lock_waiter){
			snap->threads[ti].tid, c->vd[ti].mode };
		c->lockof[ti] = L->n - 1;
		if (lk->kind == DBS_LOCK_COND && lk->decoded && !lk->u.cond.mutex)
			lk->u.cond.mutex = c->vd[ti].cond_mutex;
	}
	dbs_sort(lk->waiters, lk->nwaiters, sizeof *lk->waiters, cmp_waiter);
	lock_owner(c, lk, e[0].idx);
	return 0;
}

/* Does the lock make its waiters wait for one thread?  An unidentified
 * futex only when it is a PI word, whose owner the kernel records. */
static bool has_owner_concept(const struct dbs_lock *l)
{
	return l->kind == DBS_LOCK_MUTEX || l->kind == DBS_LOCK_RWLOCK ||
	       l->kind == DBS_LOCK_JOIN || l->kind == DBS_LOCK_FILE ||
	       (l->kind == DBS_LOCK_FUTEX && l->owner);
}

/* The thread lk's waiters wait for, if it can hold them: SIZE_MAX
 * otherwise. */
static size_t owner_edge(const struct dbs_lockctx *c, const struct dbs_lock *lk,
			 bool in_graph)
{
	if (lk->owner_state != DBS_OWNER_LIVE || !in_graph || !has_owner_concept(lk))
		return SIZE_MAX;
	return dbs_thread_by_tid(c, lk->owner);
}

/* Thread i's blocked_on, from its wait, verdict and lock. */
static int link_thread(struct dbs_lockctx *c, size_t i)
{
	struct dbs_locks *L = c->snap->locks;
	const struct dbs_wait *w = &c->waits[i];
	const struct dbs_verdict *v = &c->vd[i];
	struct dbs_blocked_on *b = calloc(1, sizeof *b);
	if (!b)
		return -ENOMEM;
	c->snap->threads[i].blocked_on = b;
	L->nblocked++;
	b->kind = v->kind;
	b->mode = v->mode;
	b->futex = w->uaddr;
	b->futex_op = w->op;
	b->futex_val = w->val;
	b->nr = w->nr;
	b->object = v->object;
	b->evidence = v->evidence;
	b->parked = v->parked;
	b->frame = v->frame;
	b->note = v->note;
	b->lock = c->lockof[i];
	b->in_graph = w->consistent;
	const struct dbs_lock *lk = &L->v[c->lockof[i]];
	b->owner = lk->owner;
	c->succ[i] = owner_edge(c, lk, b->in_graph);
	return 0;
}

int dbs_lockobj_build(struct dbs_lockctx *c)
{
	size_t n = c->snap->nthreads, ne = 0;
	struct keyed *e = calloc(n ? n : 1, sizeof *e);
	if (!e)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		if (c->waits[i].valid)
			e[ne++] = (struct keyed){
				c->vd[i].object ? c->vd[i].object : c->waits[i].uaddr,
				c->vd[i].kind, i };
	dbs_sort(e, ne, sizeof *e, cmp_keyed);
	int err = 0;
	for (size_t a = 0, b; a < ne && !err; a = b) {
		for (b = a; b < ne && e[b].key == e[a].key && e[b].kind == e[a].kind; b++)
			;
		err = add_object(c, &e[a], b - a);
	}
	free(e);
	for (size_t i = 0; i < n && !err; i++)
		if (c->waits[i].valid)
			err = link_thread(c, i);
	return err;
}

/* Lock indexes through map (old -> new), in lockof and blocked_on. */
static void renumber(struct dbs_lockctx *c, const size_t *map)
{
	for (size_t i = 0; i < c->snap->nthreads; i++) {
		if (c->lockof[i] != SIZE_MAX)
			c->lockof[i] = map[c->lockof[i]];
		if (c->snap->threads[i].blocked_on)
			c->snap->threads[i].blocked_on->lock = c->lockof[i];
	}
}

/* The stack-word locks a resolved park left without waiters go; the
 * mutex it was appended in their place takes its place by address. */
int dbs_lockobj_tidy(struct dbs_lockctx *c)
{
	struct dbs_locks *L = c->snap->locks;
	size_t cap = L->n ? L->n : 1;
	size_t *map = malloc(cap * sizeof *map);
	struct keyed *pos = malloc(cap * sizeof *pos);
	struct dbs_lock *sorted = malloc(cap * sizeof *sorted);
	int err = -ENOMEM;
	if (!map || !pos || !sorted)
		goto out;
	size_t w = 0;
	for (size_t k = 0; k < L->n; k++) {
		if (L->v[k].nwaiters == 0) {
			free(L->v[k].waiters);
			free(L->v[k].sym.name);
			free(L->v[k].sym.module);
			map[k] = SIZE_MAX;
			continue;
		}
		map[k] = w;
		L->v[w++] = L->v[k];
	}
	L->n = w;
	renumber(c, map);

	for (size_t k = 0; k < L->n; k++)
		pos[k] = (struct keyed){ L->v[k].addr, L->v[k].kind, k };
	dbs_sort(pos, L->n, sizeof *pos, cmp_keyed);
	for (size_t k = 0; k < L->n; k++) {
		sorted[k] = L->v[pos[k].idx];
		map[pos[k].idx] = k;
	}
	if (L->n)
		memcpy(L->v, sorted, L->n * sizeof *sorted);
	renumber(c, map);
	for (size_t k = 0; k < L->n; k++)
		if (L->v[k].orphaned)
			L->norphaned++;
	err = 0;
out:
	free(map);
	free(pos);
	free(sorted);
	return err;
}
