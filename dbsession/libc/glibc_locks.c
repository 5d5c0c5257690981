/*
 * glibc_locks.c: the layouts of glibc's lock objects, one row per glibc
 * and architecture, and the decoders that read them out of a copy of the
 * object's words (docs/GLIBC.md §5).  The rest of the lock analysis asks
 * this file where a field is instead of knowing it.
 */
#include "glibc_locks.h"

#include "dbs_int.h"	/* dbs_lock_decode */

/*
 * The rows.  2.36 x86_64 was checked with offsetof() against this
 * machine's headers (sysdeps/x86/nptl/bits/struct_mutex.h,
 * struct_rwlock.h, sysdeps/nptl/bits/thread-shared-types.h,
 * nptl/semaphoreP.h, sysdeps/nptl/internaltypes.h); 2.31 and 2.41 the
 * same way inside Debian 11 and 13 roots with their own gcc and headers,
 * and with the words of live objects in a known state, then by the
 * containers suite (docs/GLIBC.md §5).  aarch64 from the generic headers
 * of the same sources only: its mutex is 48 bytes, the fields read here
 * sit where they do on x86_64.  mutex, rwlock, sem and barrier are the
 * same in all three versions; pthread_cond_t lost __g_refs in 2.41
 * (docs/GLIBC.md §5.1; the backports of that change to some 2.38-2.40
 * branches stay unverified: the version string cannot tell which layout
 * a 2.39 has).
 */
#define GLIBC_OBJECTS(mutex_size, cond_layout)				\
	.mutex = { .size = (mutex_size), .lock = 0, .count = 4,		\
		   .owner = 8, .nusers = 12, .kind = 16,		\
		   .list = 24, .list_len = 16 },			\
	.rwlock = { .size = 56, .readers = 0, .writers = 4,		\
		    .wrphase_futex = 8, .writers_futex = 12,		\
		    .cur_writer = 24, .shared = 28, .flags = 48,	\
		    /* __pad3 __pad4; __rwelision __pad1 __pad2 */	\
		    .pad1 = 16, .pad1_len = 8, .pad2 = 32, .pad2_len = 16 }, \
	.cond = cond_layout,						\
	.sem = { .size = 32, .data = 0, .private_ = 8 },		\
	.barrier = { .size = 32, .in = 0, .current_round = 4, .count = 8, \
		     .shared = 12, .out = 16 }

/* 2.31 (Debian 11) and 2.36 (Debian 12): __g_refs[2] at 16 */
#define COND_WITH_G_REFS						\
	{ .size = 48, .wseq = 0, .g1_start = 8, .g_refs = 16,		\
	  .g_size = 24, .g1_orig_size = 32, .wrefs = 36,		\
	  .g_signals = 40, .has_g_refs = true,				\
	  .wait_expects_zero = true }
/* 2.41 (Debian 13): no __g_refs, all after it 8 bytes earlier */
#define COND_WITHOUT_G_REFS						\
	{ .size = 48, .wseq = 0, .g1_start = 8, .g_refs = 0,		\
	  .g_size = 16, .g1_orig_size = 24, .wrefs = 28,		\
	  .g_signals = 32, .has_g_refs = false,				\
	  .wait_expects_zero = false }

static const struct dbs_glibc_locks layouts[] = {
	/* the first row is the machine's own: version NULL */
	{ .glibc = "2.36", .arch = ARCH_X86_64, GLIBC_OBJECTS(40, COND_WITH_G_REFS) },
	{ .glibc = "2.36", .arch = ARCH_AARCH64, GLIBC_OBJECTS(48, COND_WITH_G_REFS) },
	{ .glibc = "2.31", .arch = ARCH_X86_64, GLIBC_OBJECTS(40, COND_WITH_G_REFS) },
	{ .glibc = "2.31", .arch = ARCH_AARCH64, GLIBC_OBJECTS(48, COND_WITH_G_REFS) },
	{ .glibc = "2.41", .arch = ARCH_X86_64, GLIBC_OBJECTS(40, COND_WITHOUT_G_REFS) },
	{ .glibc = "2.41", .arch = ARCH_AARCH64, GLIBC_OBJECTS(48, COND_WITHOUT_G_REFS) },
};

const char *dbs_glibc_verified_versions(void)
{
	return "2.31, 2.36, 2.41";
}

const struct dbs_glibc_locks *dbs_glibc_locks_for(const char *version,
						  const struct arch_desc *a,
						  const char **ret_why)
{
	enum arch_id id = a ? a->id : layouts[0].arch;
	const char *why = "the target's glibc version is not known";
	if (!version)
		version = layouts[0].glibc;
	if (version[0]) {
		why = "its lock layouts are verified for glibc 2.31, 2.36 and "
		      "2.41 only";
		for (size_t i = 0; i < sizeof layouts / sizeof *layouts; i++)
			if (layouts[i].arch == id &&
			    !strcmp(layouts[i].glibc, version))
				return &layouts[i];
	}
	if (version == layouts[0].glibc)
		return &layouts[0];	/* no target: as before, x86_64's */
	if (ret_why)
		*ret_why = why;
	return NULL;
}

size_t dbs_glibc_kind_size(const struct dbs_glibc_locks *L, enum dbs_lock_kind k)
{
	switch (k) {
	case DBS_LOCK_MUTEX: return L->mutex.size;
	case DBS_LOCK_RWLOCK: return L->rwlock.size;
	case DBS_LOCK_COND: return L->cond.size;
	case DBS_LOCK_SEM: return L->sem.size;
	case DBS_LOCK_BARRIER: return L->barrier.size;
	case DBS_LOCK_JOIN: return 4;		/* the tid word */
	case DBS_LOCK_FUTEX:
	case DBS_LOCK_FILE: return 4;
	}
	return 4;
}

static void decode_mutex(const struct dbs_glibc_locks *L,
			 const unsigned char *w, size_t n,
			 union dbs_lock_fields *u)
{
	struct dbs_mutex_info *m = &u->mutex;
	m->lock = dbs_u32_at(w, n, L->mutex.lock);
	m->count = dbs_u32_at(w, n, L->mutex.count);
	m->owner_field = (int32_t)dbs_u32_at(w, n, L->mutex.owner);
	m->nusers = dbs_u32_at(w, n, L->mutex.nusers);
	m->kind_word = (int32_t)dbs_u32_at(w, n, L->mutex.kind);
	unsigned k = (unsigned)m->kind_word;
	m->type = k & MUTEX_KIND_MASK;
	m->robust = k & MUTEX_ROBUST;
	m->pi = k & MUTEX_PI;
	m->pp = k & MUTEX_PP;
	/* pthread_mutex_init sets the PSHARED bit for every robust mutex
	 * (their futex ops are shared ones): for them it says nothing about
	 * the process-shared attribute */
	m->pshared = (k & MUTEX_PSHARED) && !m->robust;
	m->elision = k & MUTEX_ELISION;
	if (m->robust || m->pi)
		m->owner_died = m->lock & FUTEX_OWNER_DIED;
	m->inconsistent = m->owner_field == MUTEX_INCONSISTENT;
	m->notrecoverable = m->owner_field == MUTEX_NOTRECOVERABLE;
	if (m->pp)
		m->ceiling = m->lock >> MUTEX_CEILING_SHIFT;
}

bool dbs_glibc_mutex_garbage(const struct dbs_mutex_info *m)
{
	unsigned k = (unsigned)m->kind_word;
	return (k & ~(unsigned)MUTEX_KNOWN_BITS) || (m->pi && m->pp) ||
	       (m->robust && m->pp);
}

static void decode_rwlock(const struct dbs_glibc_locks *L,
			  const unsigned char *w, size_t n,
			  union dbs_lock_fields *u)
{
	struct dbs_rwlock_info *r = &u->rwlock;
	r->readers_word = dbs_u32_at(w, n, L->rwlock.readers);
	r->wrphase = r->readers_word & RW_WRPHASE;
	r->wrlocked = r->readers_word & RW_WRLOCKED;
	r->rwaiting = r->readers_word & RW_RWAITING;
	r->nreaders = r->readers_word >> RW_READER_SHIFT;
	r->writers = dbs_u32_at(w, n, L->rwlock.writers);
	r->wrphase_futex = dbs_u32_at(w, n, L->rwlock.wrphase_futex);
	r->writers_futex = dbs_u32_at(w, n, L->rwlock.writers_futex);
	r->cur_writer = (int32_t)dbs_u32_at(w, n, L->rwlock.cur_writer);
	r->shared = dbs_u32_at(w, n, L->rwlock.shared) != 0;
	r->flags = dbs_u32_at(w, n, L->rwlock.flags);
}

static void decode_cond(const struct dbs_glibc_locks *L,
			const unsigned char *w, size_t n,
			union dbs_lock_fields *u)
{
	struct dbs_cond_info *c = &u->cond;
	/* 2.41 has no __g_refs (docs/GLIBC.md §5.1): they read as 0 */
	c->wseq = dbs_u64_at(w, n, L->cond.wseq);
	c->g1_start = dbs_u64_at(w, n, L->cond.g1_start);
	c->g_refs[0] = L->cond.has_g_refs ? dbs_u32_at(w, n, L->cond.g_refs) : 0;
	c->g_refs[1] = L->cond.has_g_refs ? dbs_u32_at(w, n, L->cond.g_refs + 4) : 0;
	c->g_size[0] = dbs_u32_at(w, n, L->cond.g_size);
	c->g_size[1] = dbs_u32_at(w, n, L->cond.g_size + 4);
	c->g1_orig_size = dbs_u32_at(w, n, L->cond.g1_orig_size);
	c->wrefs = dbs_u32_at(w, n, L->cond.wrefs);
	c->g_signals[0] = dbs_u32_at(w, n, L->cond.g_signals);
	c->g_signals[1] = dbs_u32_at(w, n, L->cond.g_signals + 4);
	/* __wrefs: waiters << 3, bit 0 process-shared, bit 1 monotonic */
	c->nwaiters = c->wrefs >> 3;
	c->pshared = c->wrefs & 1;
	c->monotonic = c->wrefs & 2;
}

static void decode_sem(const struct dbs_glibc_locks *L,
		       const unsigned char *w, size_t n,
		       union dbs_lock_fields *u)
{
	struct dbs_sem_info *s = &u->sem;
	/* struct new_sem with 64-bit atomics: the value in the low half of
	 * data, the waiters in the high half */
	uint64_t d = dbs_u64_at(w, n, L->sem.data);
	s->value = (uint32_t)d;
	s->nwaiters = (uint32_t)(d >> 32);
	s->pshared = dbs_u32_at(w, n, L->sem.private_) != 0;
}

static void decode_barrier(const struct dbs_glibc_locks *L,
			   const unsigned char *w, size_t n,
			   union dbs_lock_fields *u)
{
	struct dbs_barrier_info *b = &u->barrier;
	b->in = dbs_u32_at(w, n, L->barrier.in);
	b->current_round = dbs_u32_at(w, n, L->barrier.current_round);
	b->count = dbs_u32_at(w, n, L->barrier.count);
	b->pshared = dbs_u32_at(w, n, L->barrier.shared) != 0;
	b->out = dbs_u32_at(w, n, L->barrier.out);
}

static void decode_join(const struct dbs_glibc_locks *L,
			const unsigned char *w, size_t n,
			union dbs_lock_fields *u)
{
	(void)L;
	u->join.target = (pid_t)dbs_u32_at(w, n, 0);	/* the tid word */
}

/* By kind: a futex word and a FILE's lock have no fields to decode. */
static void (*const decoders[])(const struct dbs_glibc_locks *L,
				const unsigned char *w, size_t n,
				union dbs_lock_fields *u) = {
	[DBS_LOCK_MUTEX] = decode_mutex,
	[DBS_LOCK_RWLOCK] = decode_rwlock,
	[DBS_LOCK_COND] = decode_cond,
	[DBS_LOCK_SEM] = decode_sem,
	[DBS_LOCK_BARRIER] = decode_barrier,
	[DBS_LOCK_JOIN] = decode_join,
};

void dbs_glibc_decode(const struct dbs_glibc_locks *L, enum dbs_lock_kind k,
		      const unsigned char *w, size_t n, union dbs_lock_fields *u)
{
	if ((size_t)k < sizeof decoders / sizeof *decoders && decoders[k])
		decoders[k](L, w, n, u);
}

bool dbs_lock_decode(const struct arch_desc *a, struct dbs_lock *l)
{
	return dbs_lock_decode_with(dbs_glibc_locks_for(NULL, a, NULL), l);
}

bool dbs_lock_decode_with(const struct dbs_glibc_locks *L, struct dbs_lock *l)
{
	size_t need = dbs_glibc_kind_size(L, l->kind);
	if (l->kind == DBS_LOCK_MUTEX)
		need = L->mutex.kind + 4;	/* __list is only checked */
	if (l->nwords < need)
		return false;
	dbs_glibc_decode(L, l->kind, l->words, l->nwords, &l->u);
	return true;
}
