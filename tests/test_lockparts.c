/*
 * test_lockparts: the pure parts of the lock analysis, one at a time, on
 * synthetic input.
 *
 *  - glibc_locks.c: the layout table and the decoders.  The words are
 *    written at glibc 2.36's offsets spelled out here (from the headers,
 *    docs/GLIBC.md §5), not taken from the table, so that a wrong row is
 *    caught.
 *  - lock_fit.c: how an rwlock's futex words read.
 *  - lock_graph.c (and stalls.c): cycles and stalls from wait-for edges
 *    given directly.
 *  - lock_held.c: which TID a mutex's or rwlock's words record as holding
 *    it, and which word patterns prove no holder.
 *  - the whole analysis through the dbs_lock_input seam: a three-way
 *    cycle through three kinds of owned lock, and the two rules by which
 *    waiters share what they found (cond pairs, shared objects), ending
 *    in a stall.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "locks_int.h"

static void put32(unsigned char *b, size_t off, uint32_t v)
{
	memcpy(b + off, &v, 4);
}

static void put64(unsigned char *b, size_t off, uint64_t v)
{
	memcpy(b + off, &v, 8);
}

static const struct dbs_glibc_locks *x86(void)
{
	return dbs_glibc_locks_for(NULL, arch_by_id(ARCH_X86_64), NULL);
}

/* ---- the layout table ------------------------------------------------------ */

Test(lockparts, table_rows_for_glibc_2_36)
{
	const struct dbs_glibc_locks *L = x86();
	cr_assert_str_eq(L->glibc, "2.36");
	cr_assert_eq(L->arch, ARCH_X86_64);
	cr_assert_eq(dbs_glibc_locks_for(NULL, NULL, NULL), L, "no arch: x86_64's row");
	cr_assert_eq(dbs_glibc_locks_for("2.36", arch_by_id(ARCH_X86_64), NULL), L,
		     "no version: the machine's own, 2.36");
	/* sizeof(pthread_*_t), x86_64 (checked with sizeof on this machine) */
	cr_assert_eq(dbs_glibc_kind_size(L, DBS_LOCK_MUTEX), 40);
	cr_assert_eq(dbs_glibc_kind_size(L, DBS_LOCK_RWLOCK), 56);
	cr_assert_eq(dbs_glibc_kind_size(L, DBS_LOCK_COND), 48);
	cr_assert_eq(dbs_glibc_kind_size(L, DBS_LOCK_SEM), 32);
	cr_assert_eq(dbs_glibc_kind_size(L, DBS_LOCK_BARRIER), 32);
	cr_assert_eq(dbs_glibc_kind_size(L, DBS_LOCK_JOIN), 4, "the tid word");
	cr_assert_eq(dbs_glibc_kind_size(L, DBS_LOCK_FUTEX), 4);

	const struct dbs_glibc_locks *A = dbs_glibc_locks_for(NULL, arch_by_id(ARCH_AARCH64), NULL);
	cr_assert_eq(A->arch, ARCH_AARCH64);
	cr_assert_eq(A->mutex.size, 48, "aarch64's generic mutex is larger");
	cr_assert_eq(A->mutex.kind, 16);
	cr_assert_eq(A->cond.g_signals, 40);

	/* every field lies inside its object, in both rows */
	const struct dbs_glibc_locks *rows[] = { L, A };
	for (size_t r = 0; r < 2; r++) {
		const struct dbs_glibc_locks *R = rows[r];
		cr_assert_leq(R->mutex.list + R->mutex.list_len, R->mutex.size);
		cr_assert_leq(R->rwlock.flags + 4, R->rwlock.size);
		cr_assert_leq(R->rwlock.pad2 + R->rwlock.pad2_len, R->rwlock.size);
		cr_assert_leq(R->cond.g_signals + 8, R->cond.size);
		cr_assert_leq(R->sem.private_ + 4, R->sem.size);
		cr_assert_leq(R->barrier.out + 4, R->barrier.size);
	}
}

/* One table keyed by glibc version: 2.31 as 2.36, 2.41 without
 * __g_refs, anything else no row and a reason. */
Test(lockparts, table_rows_by_glibc_version)
{
	const struct arch_desc *a = arch_by_id(ARCH_X86_64);
	const struct dbs_glibc_locks *L31 = dbs_glibc_locks_for("2.31", a, NULL);
	const struct dbs_glibc_locks *L41 = dbs_glibc_locks_for("2.41", a, NULL);
	cr_assert(L31 && L41);
	cr_assert_str_eq(L31->glibc, "2.31");
	cr_assert_eq(L31->cond.g_signals, 40);
	cr_assert(L31->cond.has_g_refs && L31->cond.wait_expects_zero);
	cr_assert_str_eq(L41->glibc, "2.41");
	cr_assert_eq(L41->cond.g_signals, 32, "2.41: no __g_refs, 8 bytes earlier");
	cr_assert_eq(L41->cond.g1_orig_size, 24);
	cr_assert_eq(L41->cond.wrefs, 28);
	cr_assert_not(L41->cond.has_g_refs);
	cr_assert_not(L41->cond.wait_expects_zero, "2.41 waits with the value read");
	cr_assert_eq(L41->mutex.size, 40);
	const char *why = NULL;
	cr_assert_null(dbs_glibc_locks_for("2.39", a, &why));
	cr_assert(why && strstr(why, "2.31, 2.36 and 2.41"), "%s", why ? why : "");
	why = NULL;
	cr_assert_null(dbs_glibc_locks_for("", a, &why), "unknown version");
	cr_assert(why && strstr(why, "not known"));

	/* a 2.41 cond's words: __wrefs at 28, __g_signals at 32 */
	unsigned char w[48] = { 0 };
	put32(w, 28, 2u << 3);		/* two waiters, private */
	put32(w, 32, 6);
	put32(w, 36, 7);
	struct dbs_lock l = { .kind = DBS_LOCK_COND, .nwords = sizeof w };
	memcpy(l.words, w, sizeof w);
	cr_assert(dbs_lock_decode_with(L41, &l));
	cr_assert_eq(l.u.cond.nwaiters, 2);
	cr_assert_eq(l.u.cond.g_signals[0], 6);
	cr_assert_eq(l.u.cond.g_signals[1], 7);
	cr_assert_eq(l.u.cond.g_refs[0], 0, "2.41 has no __g_refs");
}

/* ---- who holds a lock, by its words (lock_held.c) ------------------------------ */

/* A mutex of these words at glibc 2.36's offsets, decoded. */
static pid_t mutex_holder(uint32_t lock, uint32_t count, int32_t owner,
			  uint32_t nusers, uint32_t kind)
{
	struct dbs_lock l = { .kind = DBS_LOCK_MUTEX, .nwords = 40 };
	put32(l.words, 0, lock);
	put32(l.words, 4, count);
	put32(l.words, 8, (uint32_t)owner);
	put32(l.words, 12, nusers);
	put32(l.words, 16, kind);
	l.decoded = dbs_lock_decode_with(x86(), &l);
	cr_assert(l.decoded);
	return dbs_held_recorded_holder(&l);
}

Test(lockparts, held_only_where_the_words_are_a_held_lock)
{
	/* normal mutex: locked (1, or 2 with waiters), __owner, __nusers */
	cr_assert_eq(mutex_holder(1, 0, 0x1234, 1, 0), 0x1234);
	cr_assert_eq(mutex_holder(2, 0, 0x1234, 3, 0), 0x1234);
	cr_assert_eq(mutex_holder(0, 0, 0x1234, 1, 0), 0, "not locked");
	cr_assert_eq(mutex_holder(1, 0, 0, 1, 0), 0, "locked, owner not recorded yet");
	cr_assert_eq(mutex_holder(1, 0, 0x1234, 0, 0), 0, "no user: not a held mutex");
	cr_assert_eq(mutex_holder(7, 0, 0x1234, 1, 0), 0, "no mutex's lock word");
	cr_assert_eq(mutex_holder(1, 0, -5, 1, 0), 0, "no TID");
	cr_assert_eq(mutex_holder(1, 0, 0x1234, 1, 0x8000), 0, "__kind bits no mutex has");
	cr_assert_eq(mutex_holder(1, 0, 0x1234, 1, 256), 0, "elided: owner not recorded");
	/* recursive: held once at least */
	cr_assert_eq(mutex_holder(1, 2, 0x1234, 1, 1), 0x1234);
	cr_assert_eq(mutex_holder(1, 0, 0x1234, 1, 1), 0, "recursive with depth 0");
	/* errorcheck, adaptive */
	cr_assert_eq(mutex_holder(1, 0, 0x1234, 1, 2), 0x1234);
	cr_assert_eq(mutex_holder(2, 0, 0x1234, 1, 3), 0x1234);
	/* robust and PI: the kernel's word is the TID, __owner the same */
	cr_assert_eq(mutex_holder(0x80000065u, 0, 0x65, 1, 16), 0x65);
	cr_assert_eq(mutex_holder(0x65, 0, 0x65, 1, 32), 0x65);
	cr_assert_eq(mutex_holder(0x65, 0, 0, 1, 16), 0, "robust: __owner not set yet");
	cr_assert_eq(mutex_holder(0x65, 0, 0x7fffffff, 1, 16), 0, "inconsistent");
	cr_assert_eq(mutex_holder(0x40000000u, 0, 0, 0, 16), 0, "owner died");

	/* rwlock: the writer of a write phase, from __cur_writer */
	struct dbs_lock r = { .kind = DBS_LOCK_RWLOCK, .nwords = 56 };
	put32(r.words, 0, 1 | 2);	/* WRPHASE | WRLOCKED */
	put32(r.words, 24, 0x68);
	r.decoded = dbs_lock_decode_with(x86(), &r);
	cr_assert_eq(dbs_held_recorded_holder(&r), 0x68);
	put32(r.words, 24, 0);
	r.decoded = dbs_lock_decode_with(x86(), &r);
	cr_assert_eq(dbs_held_recorded_holder(&r), 0, "writer not recorded yet");
	put32(r.words, 0, 3u << 3);	/* read phase, 3 readers */
	put32(r.words, 24, 0x68);
	r.decoded = dbs_lock_decode_with(x86(), &r);
	cr_assert_eq(dbs_held_recorded_holder(&r), 0, "readers are not recorded");
	r.decoded = false;
	cr_assert_eq(dbs_held_recorded_holder(&r), 0, "words not read");

	/* no owner recorded: nothing is held */
	struct dbs_lock c = { .kind = DBS_LOCK_COND, .nwords = 48 };
	put32(c.words, 8, 0x1234);
	c.decoded = dbs_lock_decode_with(x86(), &c);
	cr_assert_eq(dbs_held_recorded_holder(&c), 0);
}

/* ---- the decoders ---------------------------------------------------------- */

Test(lockparts, mutex_robust_pi_and_pp_words)
{
	const struct dbs_glibc_locks *L = x86();
	unsigned char w[40] = { 0 };
	/* a robust PI mutex held by TID 0x65 with waiters; __owner 0x65 */
	put32(w, 0, 0x80000065u);
	put32(w, 8, 0x65);
	put32(w, 12, 1);
	put32(w, 16, 16 | 32 | 128);	/* ROBUST | PI | PSHARED */
	union dbs_lock_fields u = { 0 };
	struct dbs_mutex_info *m = &u.mutex;
	dbs_glibc_decode(L, DBS_LOCK_MUTEX, w, sizeof w, &u);
	cr_assert_eq(m->lock, 0x80000065u);
	cr_assert_eq(m->owner_field, 0x65);
	cr_assert_eq(m->nusers, 1);
	cr_assert(m->robust && m->pi && !m->pp);
	cr_assert_not(m->pshared, "glibc marks every robust mutex PSHARED");
	cr_assert_not(m->owner_died);
	cr_assert_not(dbs_glibc_mutex_garbage(m));

	/* its owner died: the kernel sets FUTEX_OWNER_DIED; EOWNERDEAD was
	 * returned to the next locker, which has not made it consistent */
	put32(w, 0, 0x40000000u | 0x66);
	put32(w, 8, 0x7fffffff);
	dbs_glibc_decode(L, DBS_LOCK_MUTEX, w, sizeof w, &u);
	cr_assert(m->owner_died);
	cr_assert(m->inconsistent && !m->notrecoverable);

	/* a recursive priority-protect mutex, ceiling 5, locked twice */
	memset(w, 0, sizeof w);
	put32(w, 0, (5u << 19) | 1);
	put32(w, 4, 2);
	put32(w, 8, 0x67);
	put32(w, 16, 64 | 1);
	memset(&u, 0, sizeof u);
	dbs_glibc_decode(L, DBS_LOCK_MUTEX, w, sizeof w, &u);
	cr_assert(m->pp && !m->pi && !m->robust);
	cr_assert_eq(m->ceiling, 5);
	cr_assert_eq(m->count, 2);
	cr_assert_str_eq(dbs_mutex_type_name(m->type), "recursive");
	cr_assert_not(m->owner_died, "owner_died is only read for robust or PI");

	/* __kind bits no mutex has */
	m->kind_word = 32 | 64;
	m->pi = m->pp = true;
	cr_assert(dbs_glibc_mutex_garbage(m), "PI and PP together");
	*m = (struct dbs_mutex_info){ .kind_word = 1 << 12 };
	cr_assert(dbs_glibc_mutex_garbage(m), "an unknown bit");
}

Test(lockparts, rwlock_cond_sem_barrier_words)
{
	const struct dbs_glibc_locks *L = x86();
	unsigned char w[64] = { 0 };

	/* rwlock in a write phase, held by writer 0x68, shared, prefer
	 * writers non-recursively (flags 2) */
	put32(w, 0, 1 | 2 | (3u << 3));	/* WRPHASE | WRLOCKED, 3 readers wait */
	put32(w, 4, 1);
	put32(w, 8, 3);
	put32(w, 12, 3);
	put32(w, 24, 0x68);
	put32(w, 28, 1);
	put32(w, 48, 2);
	union dbs_lock_fields u = { 0 };
	dbs_glibc_decode(L, DBS_LOCK_RWLOCK, w, 56, &u);
	const struct dbs_rwlock_info r = u.rwlock;
	cr_assert(r.wrphase && r.wrlocked && !r.rwaiting);
	cr_assert_eq(r.nreaders, 3);
	cr_assert_eq(r.writers, 1);
	cr_assert_eq(r.wrphase_futex, 3);
	cr_assert_eq(r.writers_futex, 3);
	cr_assert_eq(r.cur_writer, 0x68);
	cr_assert(r.shared);
	cr_assert_eq(r.flags, 2);

	/* cond: 5 waiters, monotonic clock, private */
	memset(w, 0, sizeof w);
	put64(w, 0, 0x1234567890ull);
	put64(w, 8, 0x20);
	put32(w, 16, 2);
	put32(w, 20, 4);
	put32(w, 24, 1);
	put32(w, 28, 2);
	put32(w, 32, 7);
	put32(w, 36, (5u << 3) | 2);
	put32(w, 40, 9);
	put32(w, 44, 11);
	memset(&u, 0, sizeof u);
	dbs_glibc_decode(L, DBS_LOCK_COND, w, 48, &u);
	const struct dbs_cond_info c = u.cond;
	cr_assert_eq(c.wseq, 0x1234567890ull);
	cr_assert_eq(c.g1_start, 0x20);
	cr_assert_eq(c.g_refs[0], 2);
	cr_assert_eq(c.g_refs[1], 4);
	cr_assert_eq(c.g_size[0], 1);
	cr_assert_eq(c.g_size[1], 2);
	cr_assert_eq(c.g1_orig_size, 7);
	cr_assert_eq(c.nwaiters, 5);
	cr_assert(c.monotonic && !c.pshared);
	cr_assert_eq(c.g_signals[0], 9);
	cr_assert_eq(c.g_signals[1], 11);

	/* sem: value 7, 2 waiters, process-shared */
	memset(w, 0, sizeof w);
	put64(w, 0, (2ull << 32) | 7);
	put32(w, 8, 128);
	memset(&u, 0, sizeof u);
	dbs_glibc_decode(L, DBS_LOCK_SEM, w, 32, &u);
	const struct dbs_sem_info s = u.sem;
	cr_assert_eq(s.value, 7);
	cr_assert_eq(s.nwaiters, 2);
	cr_assert(s.pshared);

	/* barrier of 3: round 3, 5 arrived, 1 left */
	memset(w, 0, sizeof w);
	put32(w, 0, 5);
	put32(w, 4, 3);
	put32(w, 8, 3);
	put32(w, 16, 1);
	memset(&u, 0, sizeof u);
	dbs_glibc_decode(L, DBS_LOCK_BARRIER, w, 32, &u);
	const struct dbs_barrier_info b = u.barrier;
	cr_assert_eq(b.in, 5);
	cr_assert_eq(b.current_round, 3);
	cr_assert_eq(b.count, 3);
	cr_assert_eq(b.out, 1);
	cr_assert_not(b.pshared);
}

Test(lockparts, decode_needs_the_words_it_reads)
{
	struct dbs_lock l = { .kind = DBS_LOCK_MUTEX, .nwords = 19 };
	put32(l.words, 0, 2);
	cr_assert_not(dbs_lock_decode(arch_by_id(ARCH_X86_64), &l),
		      "a mutex needs __lock through __kind (20 bytes)");
	l.nwords = 20;
	put32(l.words, 8, 0x69);
	cr_assert(dbs_lock_decode(arch_by_id(ARCH_X86_64), &l));
	cr_assert_eq(l.u.mutex.lock, 2);
	cr_assert_eq(l.u.mutex.owner_field, 0x69);

	l = (struct dbs_lock){ .kind = DBS_LOCK_COND, .nwords = 44 };
	cr_assert_not(dbs_lock_decode(NULL, &l), "a cond is 48 bytes");
	l = (struct dbs_lock){ .kind = DBS_LOCK_JOIN, .nwords = 4 };
	put32(l.words, 0, 4242);
	cr_assert(dbs_lock_decode(NULL, &l));
	cr_assert_eq(l.u.join.target, 4242);
}

/* ---- the fits --------------------------------------------------------------- */

Test(lockparts, rwlock_futex_words_fit_by_phase_and_value)
{
	const struct dbs_glibc_locks *L = x86();
	unsigned char w[56] = { 0 };
	put32(w, 0, 1 | 2);		/* a writer holds it */
	put32(w, 24, 0x68);
	/* a second writer on __writers_futex (+12), expecting 1|USED */
	struct dbs_wait wt = { .valid = true, .cmd = FUTEX_WAIT_BITSET,
			       .private_op = true, .val = 3 };
	enum dbs_wait_mode mode = DBS_MODE_NONE;
	cr_assert_eq(dbs_fit_rwlock(L, &wt, 12, w, 56, &mode), FIT_YES);
	cr_assert_eq(mode, DBS_MODE_WRITE);
	/* a reader on __wrphase_futex (+8) during the write phase */
	mode = DBS_MODE_NONE;
	cr_assert_eq(dbs_fit_rwlock(L, &wt, 8, w, 56, &mode), FIT_YES);
	cr_assert_eq(mode, DBS_MODE_READ);
	/* a shared futex op on a private rwlock contradicts it */
	wt.private_op = false;
	cr_assert_eq(dbs_fit_rwlock(L, &wt, 12, w, 56, &mode), FIT_NO);
	wt.private_op = true;
	/* FUTEX_WAIT is not how 2.36 waits on an rwlock */
	wt.cmd = FUTEX_WAIT;
	cr_assert_eq(dbs_fit_rwlock(L, &wt, 12, w, 56, &mode), FIT_NO);
	wt.cmd = FUTEX_WAIT_BITSET;
	/* the elision and padding bytes are zero in every rwlock */
	w[33] = 1;
	cr_assert_eq(dbs_fit_rwlock(L, &wt, 12, w, 56, &mode), FIT_NO);
	w[33] = 0;
	/* read phase (no WRPHASE), a reader waits on +8: consistent, but a
	 * transient state */
	put32(w, 0, 2);
	cr_assert_eq(dbs_fit_rwlock(L, &wt, 8, w, 56, &mode), FIT_WEAK);
	/* +4 is no futex word of an rwlock */
	cr_assert_eq(dbs_fit_rwlock(L, &wt, 4, w, 56, &mode), FIT_NO);
	cr_assert(dbs_fit_futex_offset(L, DBS_LOCK_RWLOCK, 12, false));
	cr_assert_not(dbs_fit_futex_offset(L, DBS_LOCK_RWLOCK, 4, false));
	cr_assert(dbs_fit_futex_offset(L, DBS_LOCK_COND, 16, true),
		  "a signaller waits on __g_refs");
	cr_assert_not(dbs_fit_futex_offset(L, DBS_LOCK_COND, 16, false));
}

/* ---- the graph, from edges given directly ---------------------------------- */

/* n threads, tids 200.., and nlocks mutexes (lock k at 0x1000 * (k+1)). */
static struct dbs_snapshot *graph_snap(size_t n, size_t nlocks)
{
	struct dbs_snapshot *s = calloc(1, sizeof *s);
	cr_assert(s);
	s->arch = arch_by_id(ARCH_X86_64);
	s->threads = calloc(n, sizeof *s->threads);
	s->nthreads = n;
	for (size_t i = 0; i < n; i++) {
		s->threads[i].tid = s->threads[i].ns_tid = (pid_t)(200 + i);
		s->threads[i].syscall.nr = -1;
		s->threads[i].state = 'R';
	}
	s->locks = calloc(1, sizeof *s->locks);
	s->locks->v = calloc(nlocks, sizeof *s->locks->v);
	s->locks->n = nlocks;
	for (size_t k = 0; k < nlocks; k++) {
		s->locks->v[k].kind = DBS_LOCK_MUTEX;
		s->locks->v[k].addr = 0x1000 * (k + 1);
		s->locks->v[k].owner_state = DBS_OWNER_LIVE;
	}
	return s;
}

#define NONE SIZE_MAX

Test(lockparts, two_cycles_with_tails_rotated_and_sorted)
{
	/* 4 -> 5 -> 3 -> 4 (locks 0, 1, 2), 1 -> 0 -> 1 (locks 3, 4);
	 * 2 waits into the first cycle, 6 into the second, 7 runs */
	size_t succ[8] = { 1, 0, 4, 4, 5, 3, 1, NONE };
	size_t lockof[8] = { 4, 3, 0, 0, 1, 2, 3, NONE };
	struct dbs_snapshot *s = graph_snap(8, 5);
	cr_assert_eq(dbs_lockgraph_find(s, succ, lockof), 0);
	const struct dbs_locks *L = s->locks;
	cr_assert_eq(L->ndeadlocks, 2);
	/* sorted by their first (smallest) tid: 200-201 before 203-... */
	const struct dbs_deadlock *d = &L->deadlocks[0];
	cr_assert_eq(d->n, 2);
	cr_assert_eq(d->threads[0], 200);
	cr_assert_eq(d->threads[1], 201);
	cr_assert_eq(d->locks[0], 4, "200 waits on lock 4");
	cr_assert_eq(d->locks[1], 3);
	d = &L->deadlocks[1];
	cr_assert_eq(d->n, 3);
	cr_assert_eq(d->threads[0], 203, "rotated to the smallest tid");
	cr_assert_eq(d->threads[1], 204);
	cr_assert_eq(d->threads[2], 205);
	cr_assert_eq(d->locks[0], 0);
	cr_assert_eq(d->locks[1], 1);
	cr_assert_eq(d->locks[2], 2);
	cr_assert_eq(L->nstalls, 0, "a chain into a deadlock is no stall");
	dbs_snapshot_free(s);
}

Test(lockparts, stall_ends_at_a_stopped_holder_not_at_a_running_one)
{
	/* 0 -> 1 -> 2, 2 job-control stopped: a stall of three;
	 * 3 -> 4, 4 runs: nothing */
	size_t succ[5] = { 1, 2, NONE, 4, NONE };
	size_t lockof[5] = { 0, 1, NONE, 2, NONE };
	struct dbs_snapshot *s = graph_snap(5, 3);
	s->threads[2].jobctl_stopped = true;
	cr_assert_eq(dbs_lockgraph_find(s, succ, lockof), 0);
	const struct dbs_locks *L = s->locks;
	cr_assert_eq(L->ndeadlocks, 0);
	cr_assert_eq(L->nstalls, 1);
	const struct dbs_stall *st = &L->stalls[0];
	cr_assert_eq(st->n, 3);
	cr_assert_eq(st->threads[0], 200);
	cr_assert_eq(st->threads[1], 201);
	cr_assert_eq(st->threads[2], 202);
	cr_assert_eq(st->locks[0], 0);
	cr_assert_eq(st->locks[1], 1);
	cr_assert_eq(st->end, DBS_STALL_STOPPED);
	cr_assert_str_eq(dbs_stall_end_name(st->end), "stopped");
	dbs_snapshot_free(s);
}

Test(lockparts, self_wait_is_a_cycle_of_one)
{
	size_t succ[2] = { 0, NONE };
	size_t lockof[2] = { 0, NONE };
	struct dbs_snapshot *s = graph_snap(2, 1);
	cr_assert_eq(dbs_lockgraph_find(s, succ, lockof), 0);
	cr_assert_eq(s->locks->ndeadlocks, 1);
	cr_assert_eq(s->locks->deadlocks[0].n, 1);
	cr_assert_eq(s->locks->deadlocks[0].threads[0], 200);
	dbs_snapshot_free(s);
}

/* ---- the whole analysis through dbs_lock_input ------------------------------ */

/* One region of synthetic target memory. */
static uint64_t mem_at;
static unsigned char mem[4096];
static const char *frame_names[8][2];

static int fake_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	(void)ctx;
	if (addr < mem_at || addr + len > mem_at + sizeof mem)
		return -EFAULT;
	memcpy(buf, mem + (addr - mem_at), len);
	return 0;
}

static size_t fake_frames(void *ctx, const struct dbs_snapshot *snap, size_t i,
			  const char **names, uint64_t *sps, size_t max)
{
	(void)ctx;
	(void)snap;
	size_t n = 0;
	for (; i < 8 && n < 2 && n < max && frame_names[i][n]; n++) {
		names[n] = frame_names[i][n];
		sps[n] = 0;
	}
	return n;
}

static unsigned char *at(uint64_t addr)
{
	cr_assert(addr >= mem_at && addr < mem_at + sizeof mem);
	return mem + (addr - mem_at);
}

static struct dbs_snapshot *seam_snap(size_t n)
{
	memset(mem, 0, sizeof mem);
	memset(frame_names, 0, sizeof frame_names);
	mem_at = 0x600000;
	struct dbs_snapshot *s = calloc(1, sizeof *s);
	s->arch = arch_by_id(ARCH_X86_64);
	s->threads = calloc(n, sizeof *s->threads);
	s->nthreads = n;
	for (size_t i = 0; i < n; i++) {
		struct dbs_thread *t = &s->threads[i];
		t->tid = t->ns_tid = (pid_t)(100 + i);
		t->stopped = t->have_regs = true;
		t->proc_valid = t->proc_before_stop = true;
		t->state = 'R';
		t->syscall.nr = -1;
		t->sp = 0x7f0000000000ull + i * 0x100000;
	}
	return s;
}

/* Thread i asleep in futex(uaddr, op, val) with no timeout. */
static void sleeps(struct dbs_snapshot *s, size_t i, uint64_t uaddr,
		   uint32_t op, uint32_t val)
{
	struct dbs_thread *t = &s->threads[i];
	t->state = 'S';
	strcpy(t->wchan, "futex_do_wait");
	t->syscall = (struct arch_syscall){ .nr = 202, .args = { uaddr, op, val },
					    .restarting = true, .retval = -512 };
}

static void run(struct dbs_snapshot *s)
{
	struct dbs_lock_input in = {
		.arch = arch_by_id(ARCH_X86_64),
		.read = fake_read,
		.frames = fake_frames,
	};
	cr_assert_eq(dbs_locks_analyse(s, &in), 0);
	cr_assert(s->locks);
}

static const struct dbs_lock *lock_of(const struct dbs_snapshot *s, size_t i)
{
	const struct dbs_blocked_on *b = s->threads[i].blocked_on;
	cr_assert(b, "thread %zu is not blocked", i);
	cr_assert_lt(b->lock, s->locks->n);
	return &s->locks->v[b->lock];
}

#define RW 0x600100ull
#define MX 0x600300ull
#define PI 0x600500ull

Test(lockparts, cycle_through_rwlock_mutex_and_pi_mutex)
{
	struct dbs_snapshot *s = seam_snap(4);
	/* 101 wants to write RW, held by writer 102 */
	put32(at(RW), 0, 1 | 2);
	put32(at(RW), 24, 102);
	put32(at(RW), 12, 3);
	sleeps(s, 1, RW + 12, 0x189, 3);
	/* 102 wants MX, a normal mutex held by 103 */
	put32(at(MX), 0, 2);
	put32(at(MX), 8, 103);
	put32(at(MX), 12, 1);
	sleeps(s, 2, MX, 0x80, 2);
	/* 103 wants PI, a PI mutex held by 101 (the kernel's word) */
	put32(at(PI), 0, 0x80000000u | 101);
	put32(at(PI), 8, 101);
	put32(at(PI), 12, 1);
	put32(at(PI), 16, 32);
	sleeps(s, 3, PI, 0x86, 0);
	run(s);

	const struct dbs_locks *L = s->locks;
	cr_assert_eq(L->nblocked, 3);
	cr_assert_eq(L->n, 3);
	cr_assert_eq(L->v[0].addr, RW, "by address");
	cr_assert_eq(L->v[0].kind, DBS_LOCK_RWLOCK);
	cr_assert_eq(L->v[0].owner, 102);
	cr_assert_eq(L->v[0].waiters[0].mode, DBS_MODE_WRITE);
	cr_assert_eq(L->v[1].addr, MX);
	cr_assert_eq(L->v[1].kind, DBS_LOCK_MUTEX);
	cr_assert_eq(L->v[1].owner, 103);
	cr_assert_eq(L->v[2].addr, PI);
	cr_assert_eq(L->v[2].kind, DBS_LOCK_MUTEX);
	cr_assert(L->v[2].u.mutex.pi);
	cr_assert_eq(L->v[2].owner, 101);
	cr_assert(s->threads[1].blocked_on->evidence & DBS_EV_WORDS,
		  "the rwlock identified itself");
	cr_assert(s->threads[3].blocked_on->evidence & DBS_EV_KERNEL);

	cr_assert_eq(L->ndeadlocks, 1);
	const struct dbs_deadlock *d = &L->deadlocks[0];
	cr_assert_eq(d->n, 3);
	cr_assert_eq(d->threads[0], 101);
	cr_assert_eq(d->threads[1], 102);
	cr_assert_eq(d->threads[2], 103);
	cr_assert_eq(L->v[d->locks[0]].addr, RW);
	cr_assert_eq(L->v[d->locks[1]].addr, MX);
	cr_assert_eq(L->v[d->locks[2]].addr, PI);
	cr_assert_null(s->threads[0].blocked_on);
	dbs_snapshot_free(s);
}

#define CV 0x600800ull

/* A busy condvar: its words fit a cond at CV and one 4 bytes off for
 * either futex word, so no waiter alone can tell where it starts. */
static void busy_cond(bool both_ambiguous)
{
	unsigned char *c = at(CV);
	put32(c, 16, 2);		/* __g_refs */
	put32(c, 20, 2);
	put32(c, 32, 2u << 3);		/* read as __wrefs of CV - 4 */
	put32(c, 36, 2u << 3);		/* __wrefs: two waiters */
	if (both_ambiguous)
		put32(c, 40, 2u << 3);	/* read as __wrefs of CV + 4 */
}

Test(lockparts, cond_waiters_on_both_groups_name_the_cond)
{
	struct dbs_snapshot *s = seam_snap(4);
	busy_cond(true);
	sleeps(s, 2, CV + 40, 0x189, 0);
	sleeps(s, 3, CV + 44, 0x189, 0);
	frame_names[2][0] = frame_names[3][0] = "pthread_cond_wait@@GLIBC_2.3.2";
	/* 101 wants MX, held by 102 (in the cond wait) */
	put32(at(MX), 0, 2);
	put32(at(MX), 8, 102);
	put32(at(MX), 12, 1);
	sleeps(s, 1, MX, 0x80, 2);
	run(s);

	for (size_t i = 2; i <= 3; i++) {
		const struct dbs_blocked_on *b = s->threads[i].blocked_on;
		cr_assert_eq(b->kind, DBS_LOCK_COND);
		cr_assert_eq(b->object, CV, "thread %zu", i);
		cr_assert(b->evidence & DBS_EV_PAIR, "thread %zu", i);
	}
	const struct dbs_lock *cl = lock_of(s, 2);
	cr_assert_eq(cl, lock_of(s, 3), "one object");
	cr_assert_eq(cl->nwaiters, 2);
	cr_assert_eq(cl->u.cond.nwaiters, 2);
	/* 101 -> 102, and 102 waits untimed on a cond: a stall */
	cr_assert_eq(s->locks->ndeadlocks, 0);
	cr_assert_eq(s->locks->nstalls, 1);
	const struct dbs_stall *st = &s->locks->stalls[0];
	cr_assert_eq(st->n, 2);
	cr_assert_eq(st->threads[0], 101);
	cr_assert_eq(st->threads[1], 102);
	cr_assert_eq(st->end, DBS_STALL_WAIT);
	cr_assert_eq(s->locks->v[st->end_lock].addr, CV);
	dbs_snapshot_free(s);
}

Test(lockparts, a_waiter_adopts_the_object_another_identified)
{
	struct dbs_snapshot *s = seam_snap(4);
	busy_cond(false);
	/* 103 on +44: only CV fits it.  102 on +40: CV or CV - 4; no pair
	 * (103's object is known), but 103's object has +40 as a futex
	 * word */
	sleeps(s, 2, CV + 40, 0x189, 0);
	sleeps(s, 3, CV + 44, 0x189, 0);
	frame_names[2][0] = frame_names[3][0] = "__pthread_cond_wait";
	run(s);
	const struct dbs_blocked_on *b3 = s->threads[3].blocked_on;
	cr_assert_eq(b3->object, CV);
	cr_assert(b3->evidence & DBS_EV_WORDS);
	cr_assert_not(b3->evidence & DBS_EV_SHARED);
	const struct dbs_blocked_on *b2 = s->threads[2].blocked_on;
	cr_assert_eq(b2->object, CV);
	cr_assert(b2->evidence & DBS_EV_SHARED);
	cr_assert_not(b2->evidence & DBS_EV_PAIR);
	cr_assert_eq(s->locks->n, 1);
	cr_assert_eq(s->locks->v[0].nwaiters, 2);
	cr_assert_eq(s->locks->v[0].waiters[0].tid, 102, "waiters by tid");
	dbs_snapshot_free(s);
}
