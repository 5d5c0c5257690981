/*
 * api_locks.c: locks, waits, deadlock cycles, stalls and orphaned locks of
 * a snapshot (tinspect/locks.h), over dbsession's lock model.
 */
#include "tin_int.h"

#include <errno.h>

/* the kinds are dbsession's, the last one last */
_Static_assert(TINSPECT_LOCK_JOIN == (int)DBS_LOCK_JOIN &&
	       TINSPECT_LOCK_FILE == (int)DBS_LOCK_FILE &&
	       TINSPECT_LOCK_KIND_COUNT == DBS_LOCK_FILE + 1, "lock kind");
_Static_assert(TINSPECT_MODE_WRITE == (int)DBS_MODE_WRITE, "wait mode");
_Static_assert(TINSPECT_OWNER_UNKNOWN == (int)DBS_OWNER_UNKNOWN, "owner state");
_Static_assert(TINSPECT_STALL_STOPPED == (int)DBS_STALL_STOPPED, "stall end");
_Static_assert(TINSPECT_EV_PAIR == (int)DBS_EV_PAIR &&
	       TINSPECT_EV_SYSCALL == (int)DBS_EV_SYSCALL, "evidence bits");

/* ---- locks ------------------------------------------------------------------------ */

#define tin_held(h) TIN_CAST(const struct dbs_held *, h)

bool tinspect_snapshot_locks_analysed(const tinspect_snapshot *snap)
{
	return snap->d->locks != NULL;
}

TIN_LIST(tinspect_snapshot_nlocks, tinspect_snapshot_lock, tinspect_snapshot,
	 tinspect_lock, h->nlocks, &h->locks[i])

size_t tinspect_lock_index(const tinspect_lock *l)
{
	return (size_t)(l - l->snap->locks);
}

TIN_GET(enum tinspect_lock_kind, tinspect_lock_kind, tinspect_lock, kind)

const char *tinspect_lock_kind_name(enum tinspect_lock_kind kind)
{
	return dbs_lock_kind_name((enum dbs_lock_kind)kind);
}

TIN_GET(uint64_t, tinspect_lock_addr, tinspect_lock, addr)
TIN_GET(bool, tinspect_lock_object_known, tinspect_lock, object_known)

const tinspect_symbol *tinspect_lock_symbol(const tinspect_lock *l)
{
	return l->d->sym.name ? TIN_CAST(const tinspect_symbol *, &l->d->sym) : NULL;
}

TIN_GET(enum tinspect_owner_state, tinspect_lock_owner_state, tinspect_lock,
	owner_state)

const char *tinspect_owner_state_name(enum tinspect_owner_state state)
{
	return dbs_owner_state_name((enum dbs_owner_state)state);
}

TIN_GET(pid_t, tinspect_lock_owner, tinspect_lock, owner)
TIN_GET(bool, tinspect_lock_orphaned, tinspect_lock, orphaned)
TIN_GET(unsigned, tinspect_lock_holders, tinspect_lock, nholders)
TIN_GET(size_t, tinspect_lock_nwaiters, tinspect_lock, nwaiters)

pid_t tinspect_lock_waiter(const tinspect_lock *l, size_t i,
			   enum tinspect_wait_mode *ret_mode)
{
	if (i >= l->d->nwaiters)
		return 0;
	if (ret_mode)
		*ret_mode = (enum tinspect_wait_mode)l->d->waiters[i].mode;
	return l->d->waiters[i].tid;
}

const unsigned char *tinspect_lock_words(const tinspect_lock *l, size_t *ret_len)
{
	size_t n = l->d->nwords < sizeof l->d->words ? l->d->nwords : sizeof l->d->words;
	if (ret_len)
		*ret_len = n;
	return n ? l->d->words : NULL;
}

TIN_GET(const char *, tinspect_lock_note, tinspect_lock, note)
TIN_GET(bool, tinspect_lock_decoded, tinspect_lock, decoded)

/* -EINVAL for a lock of another kind, -ENODATA for one not decoded. */
static int state_of(const tinspect_lock *l, enum dbs_lock_kind kind, size_t size)
{
	if (l->d->kind != kind || !size)
		return -EINVAL;
	return l->d->decoded ? 0 : -ENODATA;
}

int tinspect_lock_mutex(const tinspect_lock *l, struct tinspect_mutex_state *ret,
			size_t size)
{
	int err = state_of(l, DBS_LOCK_MUTEX, size);
	if (err)
		return err;
	const struct dbs_mutex_info *m = &l->d->u.mutex;
	struct tinspect_mutex_state v = {
		.lock = m->lock, .count = m->count, .owner_field = m->owner_field,
		.nusers = m->nusers, .kind_word = m->kind_word, .type = m->type,
		.robust = m->robust, .pi = m->pi, .pp = m->pp, .elision = m->elision,
		.pshared = m->pshared, .owner_died = m->owner_died,
		.inconsistent = m->inconsistent, .notrecoverable = m->notrecoverable,
		.ceiling = m->ceiling,
	};
	return tin_fill(ret, size, &v, sizeof v);
}

const char *tinspect_mutex_type_name(unsigned type)
{
	return dbs_mutex_type_name(type);
}

int tinspect_lock_rwlock(const tinspect_lock *l, struct tinspect_rwlock_state *ret,
			 size_t size)
{
	int err = state_of(l, DBS_LOCK_RWLOCK, size);
	if (err)
		return err;
	const struct dbs_rwlock_info *r = &l->d->u.rwlock;
	struct tinspect_rwlock_state v = {
		.readers_word = r->readers_word, .nreaders = r->nreaders,
		.write_phase = r->wrphase, .write_locked = r->wrlocked,
		.readers_waiting = r->rwaiting, .writers = r->writers,
		.wrphase_futex = r->wrphase_futex, .writers_futex = r->writers_futex,
		.cur_writer = r->cur_writer, .shared = r->shared, .flags = r->flags,
	};
	return tin_fill(ret, size, &v, sizeof v);
}

int tinspect_lock_cond(const tinspect_lock *l, struct tinspect_cond_state *ret,
		       size_t size)
{
	int err = state_of(l, DBS_LOCK_COND, size);
	if (err)
		return err;
	const struct dbs_cond_info *c = &l->d->u.cond;
	struct tinspect_cond_state v = {
		.wseq = c->wseq, .g1_start = c->g1_start, .wrefs = c->wrefs,
		.g_signals = { c->g_signals[0], c->g_signals[1] },
		.g_refs = { c->g_refs[0], c->g_refs[1] },
		.g_size = { c->g_size[0], c->g_size[1] },
		.g1_orig_size = c->g1_orig_size, .nwaiters = c->nwaiters,
		.pshared = c->pshared, .monotonic = c->monotonic, .mutex = c->mutex,
	};
	return tin_fill(ret, size, &v, sizeof v);
}

int tinspect_lock_sem(const tinspect_lock *l, struct tinspect_sem_state *ret,
		      size_t size)
{
	int err = state_of(l, DBS_LOCK_SEM, size);
	if (err)
		return err;
	const struct dbs_sem_info *m = &l->d->u.sem;
	struct tinspect_sem_state v = {
		.value = m->value, .nwaiters = m->nwaiters, .pshared = m->pshared,
	};
	return tin_fill(ret, size, &v, sizeof v);
}

int tinspect_lock_barrier(const tinspect_lock *l, struct tinspect_barrier_state *ret,
			  size_t size)
{
	int err = state_of(l, DBS_LOCK_BARRIER, size);
	if (err)
		return err;
	const struct dbs_barrier_info *b = &l->d->u.barrier;
	struct tinspect_barrier_state v = {
		.in = b->in, .current_round = b->current_round, .count = b->count,
		.out = b->out, .pshared = b->pshared,
	};
	return tin_fill(ret, size, &v, sizeof v);
}

int tinspect_lock_join(const tinspect_lock *l, struct tinspect_join_state *ret,
		       size_t size)
{
	int err = state_of(l, DBS_LOCK_JOIN, size);
	if (err)
		return err;
	struct tinspect_join_state v = {
		.target = l->d->u.join.target, .pthread = l->d->u.join.pthread,
	};
	return tin_fill(ret, size, &v, sizeof v);
}

/* ---- waits ---------------------------------------------------------------------- */

const char *tinspect_evidence_name(unsigned bit)
{
	return dbs_evidence_name(bit);
}

const tinspect_thread *tinspect_wait_thread(const tinspect_wait *w)
{
	return w->th;
}

TIN_GET(enum tinspect_lock_kind, tinspect_wait_kind, tinspect_wait, kind)
TIN_GET(enum tinspect_wait_mode, tinspect_wait_mode, tinspect_wait, mode)
TIN_GET(uint64_t, tinspect_wait_futex, tinspect_wait, futex)
TIN_GET(uint32_t, tinspect_wait_futex_op, tinspect_wait, futex_op)
TIN_GET(uint32_t, tinspect_wait_futex_val, tinspect_wait, futex_val)
TIN_GET(long, tinspect_wait_syscall, tinspect_wait, nr)
TIN_GET(uint64_t, tinspect_wait_object, tinspect_wait, object)

const tinspect_lock *tinspect_wait_lock(const tinspect_wait *w)
{
	return tin_lock_at(w->th->snap, w->d->lock);
}

TIN_GET(pid_t, tinspect_wait_owner, tinspect_wait, owner)
TIN_GET(unsigned, tinspect_wait_evidence, tinspect_wait, evidence)
TIN_GET(bool, tinspect_wait_in_graph, tinspect_wait, in_graph)
TIN_GET(bool, tinspect_wait_parked, tinspect_wait, parked)
TIN_GET(const char *, tinspect_wait_frame, tinspect_wait, frame)
TIN_GET(const char *, tinspect_wait_note, tinspect_wait, note)

/* A futex() wait with a NULL timeout in the registers; restart_syscall
 * only ever continues a timed wait, so it is never untimed. */
bool tinspect_wait_untimed(const tinspect_wait *w)
{
	const struct dbs_thread *t = w->th->d;
	const struct dbs_snapshot *s = w->th->snap->d;
	return s->arch && w->d->nr == s->arch->nr_futex && t->have_regs &&
	       t->syscall.nr == w->d->nr && t->syscall.args[3] == 0;
}

int tinspect_wait_is_idle(const tinspect_wait *w)
{
	switch (w->d->kind) {
	case DBS_LOCK_COND:
		return 1;
	case DBS_LOCK_MUTEX:
	case DBS_LOCK_RWLOCK:
	case DBS_LOCK_SEM:
	case DBS_LOCK_BARRIER:
	case DBS_LOCK_JOIN:
	case DBS_LOCK_FILE:
		return 0;
	case DBS_LOCK_FUTEX:
		break;
	}
	return -ENODATA;
}

/* ---- cycles ----------------------------------------------------------------------- */

TIN_LIST(tinspect_snapshot_ncycles, tinspect_snapshot_cycle, tinspect_snapshot,
	 tinspect_cycle, h->ncycles, &h->cycles[i])

TIN_GET(size_t, tinspect_cycle_length, tinspect_cycle, n)

pid_t tinspect_cycle_tid(const tinspect_cycle *c, size_t i)
{
	return i < c->d->n ? c->d->threads[i] : 0;
}

const tinspect_lock *tinspect_cycle_lock(const tinspect_cycle *c, size_t i)
{
	return i < c->d->n ? tin_lock_at(c->snap, c->d->locks[i]) : NULL;
}

/* ---- stalls ----------------------------------------------------------------------- */

const char *tinspect_stall_end_name(enum tinspect_stall_end end)
{
	return dbs_stall_end_name((enum dbs_stall_end)end);
}

TIN_LIST(tinspect_snapshot_nstalls, tinspect_snapshot_stall, tinspect_snapshot,
	 tinspect_stall, h->nstalls, &h->stalls[i])

TIN_GET(size_t, tinspect_stall_length, tinspect_stall, n)

pid_t tinspect_stall_tid(const tinspect_stall *st, size_t i)
{
	return i < st->d->n ? st->d->threads[i] : 0;
}

const tinspect_lock *tinspect_stall_lock(const tinspect_stall *st, size_t i)
{
	return i + 1 < st->d->n ? tin_lock_at(st->snap, st->d->locks[i]) : NULL;
}

TIN_GET(enum tinspect_stall_end, tinspect_stall_end, tinspect_stall, end)

long tinspect_stall_end_syscall(const tinspect_stall *st)
{
	return st->d->end_syscall;	/* -1 unless the end is SYSCALL */
}

const tinspect_lock *tinspect_stall_end_lock(const tinspect_stall *st)
{
	return tin_lock_at(st->snap, st->d->end_lock);
}

/* ---- orphans ---------------------------------------------------------------------- */

TIN_LIST(tinspect_snapshot_norphans, tinspect_snapshot_orphan,
	 tinspect_snapshot, tinspect_lock, h->norphans, h->orphans[i])

/* ---- locks held ------------------------------------------------------------------- */

bool tinspect_thread_held_known(const tinspect_thread *th)
{
	return th->snap->d->held_analysed && th->d->held_known;
}

TIN_LIST(tinspect_thread_nheld, tinspect_thread_held, tinspect_thread,
	 tinspect_held, h->d->nheld,
	 TIN_CAST(const tinspect_held *, &h->d->held[i]))

TIN_GET_CAST(enum tinspect_lock_kind, tinspect_held_kind, tinspect_held,
	     tin_held, kind)
TIN_GET_CAST(uint64_t, tinspect_held_addr, tinspect_held, tin_held, addr)

const tinspect_symbol *tinspect_held_symbol(const tinspect_held *h)
{
	const struct dbs_held *d = tin_held(h);
	return d->sym.name ? TIN_CAST(const tinspect_symbol *, &d->sym) : NULL;
}

TIN_GET(size_t, tinspect_snapshot_locks_tracked, tinspect_snapshot,
	locks_tracked)
TIN_GET(size_t, tinspect_snapshot_locks_forgotten, tinspect_snapshot,
	locks_forgotten)
