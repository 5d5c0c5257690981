/*
 * lock_fit.c: which glibc objects the words around a futex word fit.
 *
 * A futex word alone does not say what it belongs to: a mutex sleeps on
 * its first word, an rwlock on one of three, a cond on __g_signals[0] or
 * [1] (docs/GLIBC.md §6).  Each possible reading ("the word is field X of
 * a KIND starting at uaddr - off") is checked against the words copied
 * at the stop and against the futex call itself (its command, its
 * private flag, the value it expects): FIT_YES where everything is
 * consistent and the object identifies itself, FIT_WEAK where it is
 * consistent but would look the same in a transient state, FIT_NO where
 * something contradicts it.  lock_decide.c weighs the readings.
 */
#include "locks_int.h"

/* Does the thread's wait fit a mutex at start = uaddr? */
static enum dbs_fit mutex_fit(const struct dbs_glibc_locks *L,
			      const struct dbs_wait *wt,
			      const unsigned char *w, size_t n)
{
	if (n < L->mutex.size)
		return FIT_NO;
	union dbs_lock_fields u = { 0 };
	dbs_glibc_decode(L, DBS_LOCK_MUTEX, w, n, &u);
	const struct dbs_mutex_info m = u.mutex;
	if (dbs_glibc_mutex_garbage(&m))
		return FIT_NO;
	if (m.nusers > (1u << 24) || m.count > (1u << 24))
		return FIT_NO;
	if (m.pi) {
		/* LOCK_PI: the kernel manages __lock = owner TID | bits; a
		 * robust PI mutex uses shared ops like every robust one */
		if (!dbs_wait_is_pi(wt->cmd) || wt->private_op == (m.pshared || m.robust))
			return FIT_NO;
		return (m.lock & FUTEX_TID_MASK) ? FIT_YES : FIT_WEAK;
	}
	if (dbs_wait_is_pi(wt->cmd))
		return FIT_NO;
	if (m.robust) {
		/* robust waits are always shared futex ops (2.36:
		 * PTHREAD_ROBUST_MUTEX_PSHARED = LLL_SHARED), with the old
		 * __lock value, an owner TID, as expected value */
		if (wt->private_op || !(wt->val & FUTEX_TID_MASK))
			return FIT_NO;
		int32_t o = m.owner_field;
		if (o < 0 || ((uint32_t)o > FUTEX_TID_MASK && o != MUTEX_INCONSISTENT &&
			      o != MUTEX_NOTRECOVERABLE))
			return FIT_NO;
		return FIT_YES;
	}
	if (wt->private_op == m.pshared)
		return FIT_NO;
	if (m.pp) {
		/* PP: __lock = ceiling << 19 | {0,1,2}, waiting with the
		 * ceiling and 2 (pthread_mutex_lock.c; not reproducible here:
		 * PP locks fail with EINVAL on this machine) */
		if ((wt->val & 0x7ffff) != 2 || (m.lock & 0x7fffc) != 0)
			return FIT_NO;
		return (m.lock & 3) ? FIT_YES : FIT_WEAK;
	}
	/* normal, recursive, errorcheck, adaptive: lll_lock_wait sleeps
	 * with val 2 (timedlock too); __lock in {0,1,2}; __owner is cleared
	 * before __lock on unlock, so a free lock has no owner; the robust
	 * list links of a non-robust mutex stay zero. */
	if (wt->val != 2 || m.lock > 2 || m.owner_field < 0 ||
	    (uint32_t)m.owner_field > FUTEX_TID_MASK)
		return FIT_NO;
	if (m.lock == 0 && m.owner_field != 0)
		return FIT_NO;
	if (!dbs_all_zero(w, n, L->mutex.list, L->mutex.list_len))
		return FIT_NO;
	if (m.type != 1 && m.count != 0)
		return FIT_NO;
	if (m.lock == 0)
		return FIT_WEAK;	/* released, wake-up in flight */
	/* A held mutex records its owner right after taking __lock; a
	 * locked word with no owner is either a mutex being acquired or a
	 * glibc-internal lll lock (a malloc arena with empty fastbins looks
	 * exactly like that): consistent, but no proof of a mutex. */
	if (m.owner_field == 0)
		return FIT_WEAK;
	if (m.nusers == 0)
		return FIT_NO;
	return FIT_YES;
}

/* rwlock at start, the futex at start + off (docs/GLIBC.md §5-6 and the
 * state table of nptl/pthread_rwlock_common.c). */
enum dbs_fit dbs_fit_rwlock(const struct dbs_glibc_locks *L,
			    const struct dbs_wait *wt, unsigned off,
			    const unsigned char *w, size_t n,
			    enum dbs_wait_mode *ret_mode)
{
	if (n < L->rwlock.size)
		return FIT_NO;
	union dbs_lock_fields u = { 0 };
	dbs_glibc_decode(L, DBS_LOCK_RWLOCK, w, n, &u);
	const struct dbs_rwlock_info r = u.rwlock;
	uint32_t shared = dbs_u32_at(w, n, L->rwlock.shared);
	/* 2.36 waits with __futex_abstimed_wait64: WAIT_BITSET */
	if (wt->cmd != FUTEX_WAIT_BITSET || shared > 1 || r.flags > 2 ||
	    wt->private_op == (shared != 0) || r.cur_writer < 0 ||
	    (uint32_t)r.cur_writer > FUTEX_TID_MASK)
		return FIT_NO;
	if (!dbs_all_zero(w, n, L->rwlock.pad1, L->rwlock.pad1_len) ||
	    !dbs_all_zero(w, n, L->rwlock.pad2, L->rwlock.pad2_len))
		return FIT_NO;
	if (off == L->rwlock.writers_futex) {
		/* a writer waits for the primary writer */
		if (wt->val != (1 | RW_FUTEX_USED) || !r.wrlocked)
			return FIT_NO;
		*ret_mode = DBS_MODE_WRITE;
		return FIT_YES;
	}
	if (off == L->rwlock.wrphase_futex) {
		/* a reader waits for the write phase to end (expects
		 * 1|USED), or the primary writer for the read phase to end
		 * (expects 0|USED) */
		if (wt->val == (1 | RW_FUTEX_USED)) {
			*ret_mode = DBS_MODE_READ;
			return r.wrphase ? FIT_YES : FIT_WEAK;
		}
		if (wt->val == RW_FUTEX_USED) {
			*ret_mode = DBS_MODE_WRITE;
			return r.wrlocked ? FIT_YES : FIT_WEAK;
		}
		return FIT_NO;
	}
	if (off == L->rwlock.readers) {
		/* __readers in state #4a: readers wait for a writer */
		if (!(wt->val & RW_RWAITING))
			return FIT_NO;
		*ret_mode = DBS_MODE_READ;
		return FIT_YES;
	}
	return FIT_NO;
}

static enum dbs_fit cond_fit(const struct dbs_glibc_locks *L,
			     const struct dbs_wait *wt, unsigned off,
			     const unsigned char *w, size_t n)
{
	bool zero = L->cond.wait_expects_zero;
	if (n < L->cond.size || wt->cmd != FUTEX_WAIT_BITSET ||
	    (zero && wt->val != 0))
		return FIT_NO;
	union dbs_lock_fields u = { 0 };
	dbs_glibc_decode(L, DBS_LOCK_COND, w, n, &u);
	const struct dbs_cond_info cd = u.cond;
	unsigned g = (off - L->cond.g_signals) / 4;
	/* every waiter holds a __wrefs reference (<< 3) and, while it may
	 * block, a __g_refs[g] reference (+2); 2.36 waits with val 0.  2.41
	 * has no __g_refs and waits with the __g_signals value it read: a
	 * signal since then makes the words differ, a weak fit
	 * (docs/GLIBC.md §5.1). */
	if (cd.nwaiters == 0 || cd.pshared == wt->private_op)
		return FIT_NO;
	if (zero)
		return cd.g_refs[g] < 2 ? FIT_NO : FIT_YES;
	return cd.g_signals[g] == wt->val ? FIT_YES : FIT_WEAK;
}

static enum dbs_fit sem_fit(const struct dbs_glibc_locks *L,
			    const struct dbs_wait *wt,
			    const unsigned char *w, size_t n)
{
	if (n < L->sem.private_ + 8 || wt->cmd != FUTEX_WAIT_BITSET || wt->val != 0)
		return FIT_NO;
	union dbs_lock_fields u = { 0 };
	dbs_glibc_decode(L, DBS_LOCK_SEM, w, n, &u);
	const struct dbs_sem_info s = u.sem;
	uint32_t priv = dbs_u32_at(w, n, L->sem.private_);
	/* sem_wait registers in the high half before it sleeps; private
	 * holds FUTEX_PRIVATE (0) or FUTEX_SHARED (128) */
	if (s.nwaiters == 0 || s.value > 0x7fffffffu ||
	    (priv != 0 && priv != GLIBC_FUTEX_SHARED) || (priv == 0) != wt->private_op)
		return FIT_NO;
	return FIT_YES;
}

static enum dbs_fit barrier_fit(const struct dbs_glibc_locks *L,
				const struct dbs_wait *wt,
				const unsigned char *w, size_t n)
{
	if (n < L->barrier.out + 4 || wt->cmd != FUTEX_WAIT)
		return FIT_NO;
	union dbs_lock_fields u = { 0 };
	dbs_glibc_decode(L, DBS_LOCK_BARRIER, w, n, &u);
	const struct dbs_barrier_info b = u.barrier;
	uint32_t shared = dbs_u32_at(w, n, L->barrier.shared);
	/* pthread_barrier_wait.c: a waiter of an unfinished round sleeps on
	 * current_round with its value; in - current_round < count */
	if (b.count == 0 || b.current_round % b.count || b.in <= b.current_round ||
	    b.in - b.current_round >= b.count || b.out > b.in ||
	    (shared != 0 && shared != GLIBC_FUTEX_SHARED) ||
	    (shared == 0) != wt->private_op || wt->val != b.current_round)
		return FIT_NO;
	return FIT_YES;
}

/* One reading: the futex is word off of a kind at uaddr - off. */
static void try_interp(const struct dbs_lockctx *c, const struct dbs_wait *wt,
		       enum dbs_lock_kind kind, unsigned off,
		       struct dbs_interp *out, size_t *n, size_t max)
{
	if (*n >= max || wt->uaddr < off)
		return;
	struct dbs_interp it = { kind, wt->uaddr - off, DBS_MODE_NONE, FIT_NO };
	unsigned char w[64];
	size_t sz = dbs_glibc_kind_size(c->L, kind);
	/* no verified layout for the target's glibc: no reading fits */
	if (!c->in->glibc_unverified && dbs_lock_read(c, it.start, w, sz)) {
		switch (kind) {
		case DBS_LOCK_MUTEX:
			it.fit = mutex_fit(c->L, wt, w, sz);
			break;
		case DBS_LOCK_RWLOCK:
			it.fit = dbs_fit_rwlock(c->L, wt, off, w, sz, &it.mode);
			break;
		case DBS_LOCK_COND:
			it.fit = cond_fit(c->L, wt, off, w, sz);
			break;
		case DBS_LOCK_SEM:
			it.fit = sem_fit(c->L, wt, w, sz);
			break;
		case DBS_LOCK_BARRIER:
			it.fit = barrier_fit(c->L, wt, w, sz);
			break;
		case DBS_LOCK_JOIN:
		case DBS_LOCK_FUTEX:
		case DBS_LOCK_FILE:
			break;
		}
	}
	out[(*n)++] = it;
}

/* A FUTEX_LOCK_PI word can only be a PI mutex (or unknown). */
size_t dbs_fit_interpretations(const struct dbs_lockctx *c,
			       const struct dbs_wait *wt,
			       struct dbs_interp *out, size_t max)
{
	const struct dbs_glibc_locks *L = c->L;
	size_t n = 0;
	try_interp(c, wt, DBS_LOCK_MUTEX, L->mutex.lock, out, &n, max);
	if (dbs_wait_is_pi(wt->cmd))
		return n;
	try_interp(c, wt, DBS_LOCK_RWLOCK, L->rwlock.readers, out, &n, max);
	try_interp(c, wt, DBS_LOCK_RWLOCK, L->rwlock.wrphase_futex, out, &n, max);
	try_interp(c, wt, DBS_LOCK_RWLOCK, L->rwlock.writers_futex, out, &n, max);
	try_interp(c, wt, DBS_LOCK_COND, L->cond.g_signals, out, &n, max);
	try_interp(c, wt, DBS_LOCK_COND, L->cond.g_signals + 4, out, &n, max);
	try_interp(c, wt, DBS_LOCK_SEM, L->sem.data, out, &n, max);
	try_interp(c, wt, DBS_LOCK_BARRIER, L->barrier.current_round, out, &n, max);
	return n;
}

/* A thread whose frames say it is inside a cond operation may also wait
 * on the signaller's words (__g_refs where there are (not 2.41), and the
 * condvar's internal lock in __g1_orig_size). */
bool dbs_fit_futex_offset(const struct dbs_glibc_locks *L,
			  enum dbs_lock_kind k, uint64_t off, bool in_cond)
{
	switch (k) {
	case DBS_LOCK_MUTEX:
		return off == L->mutex.lock;
	case DBS_LOCK_SEM:
		return off == L->sem.data;
	case DBS_LOCK_RWLOCK:
		return off == L->rwlock.readers || off == L->rwlock.wrphase_futex ||
		       off == L->rwlock.writers_futex;
	case DBS_LOCK_COND:
		return off == L->cond.g_signals || off == L->cond.g_signals + 4 ||
		       (in_cond && ((L->cond.has_g_refs &&
				     (off == L->cond.g_refs || off == L->cond.g_refs + 4)) ||
				    off == L->cond.g1_orig_size));
	case DBS_LOCK_BARRIER:
		return off == L->barrier.current_round || off == L->barrier.in;
	case DBS_LOCK_JOIN:
	case DBS_LOCK_FUTEX:
	case DBS_LOCK_FILE:
		break;
	}
	return false;
}
