/*
 * lock_park.c: PI mutex waiters that glibc parked for ever.
 *
 * When the kernel refuses FUTEX_LOCK_PI (EDEADLK: the owner chain comes
 * back to the caller; ESRCH: the owner is gone), glibc's
 * pthread_mutex_lock does not return the error for a mutex that is not
 * robust: it sleeps with value 0 on a word of its own stack, for ever
 * (nptl/pthread_mutex_lock.c, PI branch).  The futex word then names no
 * mutex.  Three things are needed to say which mutex it was:
 *  - the frames prove the park (the zero word lies in the frame of
 *    __pthread_mutex_lock_full or __pthread_mutex_clocklock_common);
 *  - the registers and the stack words just above sp point to a unique
 *    PI mutex held by someone else (at the park, r14 still holds
 *    &mutex->__kind on this glibc, docs/GLIBC.md §6);
 *  - the refusal that candidate implies is visible: its owner chain
 *    comes back to the parked thread, or its owner is gone.
 */
#include "locks_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static const char NOTE_PARK_FOUND[] =
	"parked for ever by glibc after the kernel refused this PI mutex "
	"(EDEADLK or ESRCH)";

/* The frame (of the n loaded) whose extent holds addr: from its sp up to
 * its caller's (the next outer frame whose sp is known); SIZE_MAX if
 * none.  A frame whose caller has the same sp owns no stack: an inlined
 * call, or a leaf that allocated nothing (aarch64's
 * __futex_abstimed_wait64, which calls nothing when it cannot be
 * cancelled), so the word is its caller's (docs/ARCH.md §5). */
static size_t frame_holding(const struct dbs_lockctx *c, size_t n, uint64_t addr)
{
	for (size_t k = 0; k < n; k++) {
		uint64_t lo = c->frames->sps[k], hi = 0;
		if (!lo)
			continue;
		for (size_t j = k + 1; j < n && !hi; j++)
			hi = c->frames->sps[j];
		if (hi > lo && addr >= lo && addr < hi)
			return k;
	}
	return SIZE_MAX;
}

/*
 * The park, proven: the zero word lies in the stack frame of
 * __pthread_mutex_lock_full (or of the timed lock's
 * __pthread_mutex_clocklock_common, which parks until its timeout), the
 * only code that waits on a compound literal of its own frame.  Those
 * names need libc's symbol table (libc6-dbg): without it the park is not
 * claimed.
 */
const char *dbs_park_frame(const struct dbs_lockctx *c, size_t ti, uint64_t addr)
{
	size_t k = frame_holding(c, dbs_frames_load(c, ti), addr);
	if (k == SIZE_MAX || !c->frames->names[k])
		return NULL;
	char norm[64];
	dbs_frame_normalize(c->frames->names[k], norm, sizeof norm);
	if (strcmp(norm, "pthread_mutex_lock_full") &&
	    strcmp(norm, "pthread_mutex_clocklock_common"))
		return NULL;
	return c->frames->names[k];
}

/* The same wait, but the frame that holds the word has no name: code
 * without a symbol table, as libc is in most container images (Debian
 * ships __pthread_mutex_lock_full's name only in libc6-dbg).  It may be
 * the park; nothing proves it. */
bool dbs_park_frame_unnamed(const struct dbs_lockctx *c, size_t ti, uint64_t addr)
{
	size_t k = frame_holding(c, dbs_frames_load(c, ti), addr);
	return k != SIZE_MAX && !c->frames->names[k];
}

size_t dbs_park_values(const struct arch_desc *a, const uint64_t *gregs,
		       const uint64_t *stack, uint64_t *vals, size_t max)
{
	/* the registers the ABI has callee-saved (arch_desc) */
	size_t ncs = a ? a->ncallee_saved : 0;
	size_t nv = 0;
	for (size_t i = 0; i < ncs && nv < max; i++)
		vals[nv++] = gregs[a->callee_saved[i]];
	for (size_t w = 0; stack && w < DBS_PARK_SCAN_BYTES / 8 && nv < max; w++)
		vals[nv++] = stack[w];
	return nv;
}

void dbs_park_offsets(const struct dbs_glibc_locks *L,
		      uint64_t offs[DBS_PARK_NOFFS])
{
	offs[0] = 0;
	offs[1] = L->mutex.kind;
}

bool dbs_park_candidate(const struct arch_desc *a, uint64_t v, uint64_t sp)
{
	/* a stack of aarch64 lies above x86_64's 2^47 (docs/ARCH.md §5):
	 * the architecture says where the process ends */
	return arch_user_pointer(a, v, 1) && v - sp >= DBS_PARK_STACK_SPAN;
}

/* The unique PI mutex the parked thread's values point to (or to whose
 * __kind), held by another thread; 0 if none or more than one. */
static uint64_t park_candidate(const struct dbs_lockctx *c,
			       const struct dbs_thread *th)
{
	uint64_t stack[DBS_PARK_SCAN_BYTES / 8];
	bool have_stack = c->in->read &&
			  c->in->read(c->in->ctx, th->sp, stack, sizeof stack) == 0;
	uint64_t vals[16 + DBS_PARK_SCAN_BYTES / 8];
	size_t nv = dbs_park_values(c->in->arch, th->gregs,
				    have_stack ? stack : NULL, vals,
				    sizeof vals / sizeof *vals);
	uint64_t offs[DBS_PARK_NOFFS];
	dbs_park_offsets(c->L, offs);
	uint64_t found = 0;
	for (size_t i = 0; i < nv; i++) {
		if (!dbs_park_candidate(c->in->arch, vals[i], th->sp))
			continue;
		for (size_t o = 0; o < DBS_PARK_NOFFS; o++) {
			uint64_t m = vals[i] - offs[o];
			unsigned char w[48];
			if (!dbs_lock_read(c, m, w, c->L->mutex.size))
				continue;
			union dbs_lock_fields u = { 0 };
			dbs_glibc_decode(c->L, DBS_LOCK_MUTEX, w, c->L->mutex.size,
					 &u);
			const struct dbs_mutex_info mi = u.mutex;
			if (dbs_glibc_mutex_garbage(&mi) || !mi.pi || mi.pp ||
			    !(mi.lock & FUTEX_TID_MASK) ||
			    (pid_t)(mi.lock & FUTEX_TID_MASK) == th->ns_tid)
				continue;
			if (found && found != m)
				return 0;	/* two candidates: ambiguous */
			found = m;
		}
	}
	return found;
}

/* The frames prove the park, not which mutex: the candidate m needs the
 * refusal it implies - its owner gone (ESRCH), or its owner chain back
 * at thread i (EDEADLK). */
static bool refusal_visible(const struct dbs_lockctx *c, size_t i, uint64_t m)
{
	unsigned char w[48];
	if (!dbs_lock_read(c, m, w, c->L->mutex.size))
		return false;
	union dbs_lock_fields u = { 0 };
	dbs_glibc_decode(c->L, DBS_LOCK_MUTEX, w, c->L->mutex.size, &u);
	const struct dbs_mutex_info mi = u.mutex;
	pid_t rec = (pid_t)(mi.lock & FUTEX_TID_MASK);
	size_t oi = dbs_thread_by_nstid(c, rec);
	size_t n = c->snap->nthreads;
	if (oi == SIZE_MAX)
		return !mi.pshared && !c->nstid_unknown;
	size_t k = oi;
	for (size_t steps = 0; steps <= n && k != SIZE_MAX && k != i; steps++)
		k = c->succ[k];
	return k == i;
}

/* The lock of mutex m: the one others wait on already, or a new one. */
static int mutex_lock_index(struct dbs_lockctx *c, uint64_t m, size_t *ret)
{
	struct dbs_locks *L = c->snap->locks;
	size_t li = SIZE_MAX;
	for (size_t k = 0; k < L->n; k++)
		if (L->v[k].kind == DBS_LOCK_MUTEX && L->v[k].addr == m)
			li = k;
	if (li == SIZE_MAX) {
		struct dbs_lock l = { .kind = DBS_LOCK_MUTEX, .addr = m,
				      .object_known = true };
		dbs_lockobj_load(c, &l);
		dbs_lockobj_owner(c, &l, false);
		if (dbs_lockobj_add(c, &l)) {
			free(l.sym.name);
			free(l.sym.module);
			return -ENOMEM;
		}
		li = L->n - 1;
	}
	*ret = li;
	return 0;
}

/* Move thread i from its stack word's lock to lock li. */
static int move_waiter(struct dbs_lockctx *c, size_t i, size_t li)
{
	struct dbs_locks *L = c->snap->locks;
	pid_t tid = c->snap->threads[i].tid;
	struct dbs_lock *old = &L->v[c->lockof[i]];
	for (size_t k = 0; k < old->nwaiters; k++)
		if (old->waiters[k].tid == tid) {
			memmove(&old->waiters[k], &old->waiters[k + 1],
				(old->nwaiters - k - 1) * sizeof *old->waiters);
			old->nwaiters--;
			break;
		}
	if (dbs_lockobj_add_waiter(&L->v[li], tid, DBS_MODE_NONE))
		return -ENOMEM;
	c->lockof[i] = li;
	return 0;
}

int dbs_park_resolve(struct dbs_lockctx *c)
{
	struct dbs_snapshot *snap = c->snap;
	for (size_t i = 0; i < snap->nthreads; i++) {
		struct dbs_blocked_on *b = snap->threads[i].blocked_on;
		if (!b || !b->parked)
			continue;
		uint64_t m = park_candidate(c, &snap->threads[i]);
		if (!m || !refusal_visible(c, i, m))
			continue;
		size_t li;
		if (mutex_lock_index(c, m, &li) || move_waiter(c, i, li))
			return -ENOMEM;
		const struct dbs_lock *lk = &snap->locks->v[li];
		b->kind = DBS_LOCK_MUTEX;
		b->object = m;
		b->lock = li;
		b->evidence |= DBS_EV_REGISTERS | DBS_EV_WORDS;
		b->note = NOTE_PARK_FOUND;
		b->owner = lk->owner;
		if (lk->owner_state == DBS_OWNER_LIVE && b->in_graph)
			c->succ[i] = dbs_thread_by_tid(c, lk->owner);
	}
	return 0;
}
