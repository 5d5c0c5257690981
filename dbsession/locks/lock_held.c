/*
 * lock_held.c: which thread holds which mutex or rwlock, proven by the
 * lock's own words.
 *
 * glibc records the owner of every mutex in the mutex (__owner, set right
 * after the acquisition and cleared before the release; the TID in
 * __lock of a robust or PI mutex) and the writer of an rwlock
 * (__cur_writer, the same way): docs/GLIBC.md §5.2.  So a thread that the
 * words of lock A name as its owner holds A at the moment they were read,
 * as long as it cannot have run since: in an all-stop capture every
 * thread is stopped while the words are copied; in a nonblocking one
 * only the threads proven off their CPU for the whole capture (observed,
 * not moved: live_observe.c) count, since only the owner itself writes
 * or clears its TID there.  Readers of an rwlock are counted, never
 * recorded: a lock held for reading gives nothing.
 *
 * The locks whose words are read: those some thread waits on now (the
 * lock analysis decoded them, lock_objects.c), and, when the session
 * tracks locks (opts.track_locks, a watch's choice), every mutex and
 * rwlock an earlier update of the session saw waited on: their words are
 * copied in the same stop (or, nonblocking, the same capture), a few
 * dozen bytes each (neighbours in one mapping as one range), in one batch
 * (dbs_held_prefetch).  At most KNOWN_MAX
 * are remembered; the one seen least recently is forgotten for a new one
 * (counted, and said: snap->locks_forgotten).
 *
 * Not every word pattern that names a thread is an owner: the words must
 * be those of a held lock of that kind (a plausible __kind, a locked
 * __lock, __nusers at least 1), so that memory a freed lock left to other
 * data does not make a thread an owner by accident.
 */
#include "locks_int.h"

#include "array.h"
#include "order.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define KNOWN_MAX 1024

struct known_lock {
	uint64_t addr;
	enum dbs_lock_kind kind;
	uint64_t last_seen;	/* the update that last saw it waited on or held */
};

struct dbs_known_locks {
	struct known_lock *v;	/* by address */
	size_t n, cap;
	uint64_t tick;		/* updates made */
	size_t forgotten;	/* evicted for lack of room */
};

/* ---- what the words record --------------------------------------------------- */

static pid_t mutex_holder(const struct dbs_mutex_info *m)
{
	if (dbs_glibc_mutex_garbage(m))
		return 0;
	if (m->robust || m->pi) {
		/* the kernel's word is the owner's TID; __owner is set to it
		 * right after (and is 0x7fffffff while inconsistent) */
		pid_t tid = (pid_t)(m->lock & FUTEX_TID_MASK);
		if (!tid || m->owner_field != tid || m->nusers == 0)
			return 0;
		return tid;
	}
	unsigned state = m->pp ? (m->lock & 3) : m->lock;
	if (state != 1 && state != 2)
		return 0;	/* free, or not a lock word */
	if (m->elision && m->type == 0)
		return 0;	/* an elided lock records no owner */
	if (m->owner_field <= 0 || (uint32_t)m->owner_field > FUTEX_TID_MASK ||
	    m->nusers == 0 || (m->type == 1 && m->count == 0))
		return 0;
	return m->owner_field;
}

pid_t dbs_held_recorded_holder(const struct dbs_lock *l)
{
	if (!l->decoded)
		return 0;
	if (l->kind == DBS_LOCK_MUTEX)
		return mutex_holder(&l->u.mutex);
	if (l->kind == DBS_LOCK_RWLOCK) {
		const struct dbs_rwlock_info *r = &l->u.rwlock;
		return r->wrphase && r->wrlocked && r->cur_writer > 0 ? r->cur_writer : 0;
	}
	return 0;
}

/* ---- the locks the session remembers ----------------------------------------- */

static bool known_below(const void *e, const void *key)
{
	return ((const struct known_lock *)e)->addr < *(const uint64_t *)key;
}

/* Where addr is, or would be, in the locks remembered (by address). */
static size_t known_find(const struct dbs_known_locks *k, uint64_t addr)
{
	return array_partition(k->v, k->n, sizeof *k->v, known_below, &addr);
}

/* Forget the lock seen least recently (to make room). */
static void known_evict(struct dbs_known_locks *k)
{
	size_t old = 0;
	for (size_t i = 1; i < k->n; i++)
		if (k->v[i].last_seen < k->v[old].last_seen)
			old = i;
	memmove(&k->v[old], &k->v[old + 1], (k->n - old - 1) * sizeof *k->v);
	k->n--;
	k->forgotten++;
}

/* Remember (or refresh) the lock at addr; 0 or -ENOMEM. */
static int known_note(struct dbs_known_locks *k, uint64_t addr,
		      enum dbs_lock_kind kind)
{
	size_t at = known_find(k, addr);
	if (at < k->n && k->v[at].addr == addr) {
		k->v[at].kind = kind;
		k->v[at].last_seen = k->tick;
		return 0;
	}
	if (k->n == KNOWN_MAX) {
		known_evict(k);
		at = known_find(k, addr);
	}
	if (array_grow(&k->v, &k->cap, k->n + 1, sizeof *k->v, 64))
		return -ENOMEM;
	memmove(&k->v[at + 1], &k->v[at], (k->n - at) * sizeof *k->v);
	k->v[at] = (struct known_lock){ addr, kind, k->tick };
	k->n++;
	return 0;
}

void dbs_held_forget_all(struct dbs_session *s)
{
	if (!s->known)
		return;
	free(s->known->v);
	free(s->known);
	s->known = NULL;
}

/* Locks this close together in one mapping are copied as one range: a
 * range costs the kernel about as much as 4 KiB of copying (an array of
 * 2000 mutexes: 6 us as one range, 700 us as 2000 on this machine,
 * bench/lockorder.sh). */
#define MERGE_GAP 4096

void dbs_held_prefetch(struct dbs_session *s)
{
	struct dbs_known_locks *k = s->known;
	if (!s->opts.track_locks || !k || !k->n)
		return;
	const struct dbs_glibc_locks *L =
		dbs_glibc_locks_for(s->glibc_version, psvc_arch(s->t), NULL);
	if (!L)
		return;	/* no layout: nothing would be decoded */
	struct psvc_range *r = malloc(k->n * sizeof *r);
	if (!r)
		return;
	size_t nr = 0;
	uint64_t map_end = 0;	/* of the mapping that holds r[nr - 1] */
	for (size_t i = 0; i < k->n; i++) {
		uint64_t a = k->v[i].addr, end = a + dbs_glibc_kind_size(L, k->v[i].kind);
		struct psvc_range *last = nr ? &r[nr - 1] : NULL;
		if (last && a <= last->addr + last->len + MERGE_GAP && end <= map_end) {
			if (end > last->addr + last->len)
				last->len = end - last->addr;
			continue;
		}
		struct psvc_map m;
		map_end = psvc_map_lookup(s->t, a, &m, NULL) == 0 ? m.end : 0;
		r[nr++] = (struct psvc_range){ a, end - a };
	}
	/* byte-exact (memruns.c): the words, not whole pages */
	psvc_copy_exact(s->t, r, nr);
	free(r);
}

/* ---- the held locks of one update -------------------------------------------- */

/* What a thread holds, before it is handed to the thread. */
struct claim {
	size_t thread;
	uint64_t addr;
	enum dbs_lock_kind kind;
};

struct claims {
	struct claim *v;
	size_t n, cap;
};

static int claim_add(struct claims *c, size_t thread, uint64_t addr,
		     enum dbs_lock_kind kind)
{
	if (array_grow(&c->v, &c->cap, c->n + 1, sizeof *c->v, 32))
		return -ENOMEM;
	c->v[c->n++] = (struct claim){ thread, addr, kind };
	return 0;
}

static int cmp_claim(const void *a, const void *b)
{
	const struct claim *x = a, *y = b;
	return order_u64(x->thread, y->thread) ?: order_u64(x->addr, y->addr);
}

/* Whether what the words say of th holds: it could not run meanwhile. */
static bool held_provable(const struct dbs_thread *th)
{
	return th->stopped || th->observed;
}

/* Is addr one of the locks waited on now (whose owner the analysis
 * decided)?  They are sorted by address (lock_objects.c). */
static bool waited_on_now(const struct dbs_snapshot *snap, uint64_t addr)
{
	size_t lo = 0, hi = snap->locks ? snap->locks->n : 0;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (snap->locks->v[mid].addr < addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return snap->locks && lo < snap->locks->n && snap->locks->v[lo].addr == addr;
}

/* The owners of the locks waited on now, as the analysis decided them. */
static int claims_of_waited(const struct dbs_snapshot *snap,
			    const struct dbs_tidx *by_tid, struct claims *c,
			    size_t *ret_read)
{
	if (!snap->locks)
		return 0;
	for (size_t i = 0; i < snap->locks->n; i++) {
		const struct dbs_lock *l = &snap->locks->v[i];
		if (l->kind != DBS_LOCK_MUTEX && l->kind != DBS_LOCK_RWLOCK)
			continue;
		(*ret_read)++;
		if (l->owner_state != DBS_OWNER_LIVE || l->owner <= 0 ||
		    !l->object_known)
			continue;
		size_t ti = dbs_tidx_find(by_tid, snap->nthreads, (uint64_t)l->owner);
		if (ti != SIZE_MAX && claim_add(c, ti, l->addr, l->kind))
			return -ENOMEM;
	}
	return 0;
}

/* The owners the remembered locks' words record (those not waited on
 * now). */
static int claims_of_known(struct dbs_session *s, const struct dbs_snapshot *snap,
			   const struct dbs_tidx *by_nstid, struct claims *c,
			   size_t *ret_read)
{
	struct dbs_known_locks *k = s->known;
	const struct dbs_glibc_locks *L =
		dbs_glibc_locks_for(s->glibc_version, psvc_arch(s->t), NULL);
	if (!s->opts.track_locks || !k || !L)
		return 0;
	for (size_t i = 0; i < k->n; i++) {
		if (waited_on_now(snap, k->v[i].addr))
			continue;
		struct dbs_lock l = { .kind = k->v[i].kind, .addr = k->v[i].addr,
				      .object_known = true };
		size_t sz = dbs_glibc_kind_size(L, l.kind);
		if (sz > sizeof l.words ||
		    psvc_read_frozen(s->t, l.addr, l.words, sz) != 0)
			continue;	/* unmapped since, or not copied */
		l.nwords = sz;
		(*ret_read)++;
		l.decoded = dbs_lock_decode_with(L, &l);
		pid_t rec = dbs_held_recorded_holder(&l);
		size_t ti = rec > 0 ? dbs_tidx_find(by_nstid, snap->nthreads,
						    (uint64_t)rec) : SIZE_MAX;
		if (ti != SIZE_MAX && claim_add(c, ti, l.addr, l.kind))
			return -ENOMEM;
	}
	return 0;
}

/* musl: every non-normal mutex a thread holds is on its robust_list,
 * walked during the stop (libc_musl.c, docs/MUSL.md §5); a thread whose
 * chain could not be followed has its held locks unknown. */
static int claims_of_musl(const struct dbs_session *s, struct dbs_snapshot *snap,
			  const struct dbs_tidx *by_tid, struct claims *c)
{
	if (s->libc != &dbs_libc_musl)
		return 0;
	/* the chains are walked in the stopped threads only */
	for (size_t i = 0; i < snap->nthreads; i++)
		if (!snap->threads[i].stopped || s->musl_held_lost)
			snap->threads[i].held_known = false;
	for (size_t i = 0; i < s->nmusl_held; i++) {
		const struct dbs_musl_held *h = &s->musl_held[i];
		size_t ti = dbs_tidx_find(by_tid, snap->nthreads, (uint64_t)h->tid);
		if (ti == SIZE_MAX)
			continue;
		if (!h->addr)
			snap->threads[ti].held_known = false;
		else if (claim_add(c, ti, h->addr, DBS_LOCK_MUTEX))
			return -ENOMEM;
	}
	return 0;
}

/* Hand the claims to their threads (only where they are proven). */
static int give_claims(struct dbs_session *s, struct dbs_snapshot *snap,
		       struct claims *c)
{
	dbs_sort(c->v, c->n, sizeof *c->v, cmp_claim);
	for (size_t a = 0, b; a < c->n; a = b) {
		for (b = a; b < c->n && c->v[b].thread == c->v[a].thread; b++)
			;
		struct dbs_thread *th = &snap->threads[c->v[a].thread];
		if (!th->held_known)
			continue;
		th->held = calloc(b - a, sizeof *th->held);
		if (!th->held)
			return -ENOMEM;
		for (size_t i = a; i < b; i++) {
			if (i > a && c->v[i].addr == c->v[i - 1].addr)
				continue;
			struct dbs_held *h = &th->held[th->nheld++];
			uint64_t size;
			h->kind = c->v[i].kind;
			h->addr = c->v[i].addr;
			if (dbs_symbol_covering(s->t, h->addr, &h->sym, &size) != 0)
				h->sym = (struct dbs_symbol){ .addr = h->addr };
		}
	}
	return 0;
}

/* Remember this update's locks, and refresh those seen held. */
static int learn(struct dbs_session *s, const struct dbs_snapshot *snap,
		 const struct claims *c)
{
	if (!s->opts.track_locks)
		return 0;
	if (!s->known && !(s->known = calloc(1, sizeof *s->known)))
		return -ENOMEM;
	struct dbs_known_locks *k = s->known;
	k->tick++;
	for (size_t i = 0; snap->locks && i < snap->locks->n; i++) {
		const struct dbs_lock *l = &snap->locks->v[i];
		if ((l->kind == DBS_LOCK_MUTEX || l->kind == DBS_LOCK_RWLOCK) &&
		    l->object_known && l->decoded &&
		    !(l->kind == DBS_LOCK_MUTEX && dbs_glibc_mutex_garbage(&l->u.mutex)) &&
		    known_note(k, l->addr, l->kind))
			return -ENOMEM;
	}
	for (size_t i = 0; i < c->n; i++)
		if (known_note(k, c->v[i].addr, c->v[i].kind))
			return -ENOMEM;
	return 0;
}

int dbs_held_run(struct dbs_session *s, struct dbs_snapshot *snap)
{
	size_t n = snap->nthreads;
	struct dbs_tidx *by_tid = calloc(n ? n : 1, sizeof *by_tid);
	struct dbs_tidx *by_nstid = calloc(n ? n : 1, sizeof *by_nstid);
	struct claims c = { 0 };
	size_t read = 0;
	int err = -ENOMEM;
	if (!by_tid || !by_nstid)
		goto out;
	for (size_t i = 0; i < n; i++) {
		const struct dbs_thread *th = &snap->threads[i];
		by_tid[i] = (struct dbs_tidx){ (uint64_t)th->tid, i };
		by_nstid[i] = (struct dbs_tidx){ (uint64_t)th->ns_tid, i };
		snap->threads[i].held_known = held_provable(th);
	}
	dbs_sort(by_tid, n, sizeof *by_tid, dbs_tidx_cmp);
	dbs_sort(by_nstid, n, sizeof *by_nstid, dbs_tidx_cmp);
	if ((err = claims_of_waited(snap, by_tid, &c, &read)) ||
	    (err = claims_of_musl(s, snap, by_tid, &c)) ||
	    (err = claims_of_known(s, snap, by_nstid, &c, &read)) ||
	    (err = give_claims(s, snap, &c)) ||
	    (err = learn(s, snap, &c)))
		goto out;
	snap->held_analysed = true;
	snap->locks_tracked = read;
	snap->locks_forgotten = s->known ? s->known->forgotten : 0;
out:
	free(by_tid);
	free(by_nstid);
	free(c.v);
	if (err)
		dbs_held_free(snap);
	return err;
}

void dbs_held_free(struct dbs_snapshot *snap)
{
	for (size_t i = 0; i < snap->nthreads; i++) {
		struct dbs_thread *th = &snap->threads[i];
		for (size_t k = 0; k < th->nheld; k++) {
			free(th->held[k].sym.module);
			free(th->held[k].sym.name);
		}
		free(th->held);
		th->held = NULL;
		th->nheld = 0;
		th->held_known = false;
	}
	snap->held_analysed = false;
}
