/*
 * glibc_locks.h: what glibc's lock objects look like in memory - the
 * futex constants, the bits of their words and, in one table, where each
 * field sits - and the decoders that turn a copy of an object's words into
 * its fields.  Everything here is a pure function of bytes: no target
 * access.
 *
 * The table (glibc_locks.c) is the one source of these facts: one row per
 * glibc version it was verified for (2.31, 2.36, 2.41: docs/GLIBC.md §5)
 * and architecture, chosen by dbs_glibc_locks_for().  A version that is
 * not in it gets no row at all: its lock words are not decoded (never
 * another version's layout).  glibc_versions.c tells the version.
 */
#ifndef TINSPECT_GLIBC_LOCKS_H
#define TINSPECT_GLIBC_LOCKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "arch.h"
#include "dbsession.h"

/* futex(2) commands and flags (linux/futex.h) */
#define FUTEX_WAIT 0
#define FUTEX_LOCK_PI 6
#define FUTEX_WAIT_BITSET 9
#define FUTEX_WAIT_REQUEUE_PI 11
#define FUTEX_LOCK_PI2 13
#define FUTEX_PRIVATE_FLAG 128
#define FUTEX_CLOCK_REALTIME 256
#define FUTEX_CMD_MASK (~(FUTEX_PRIVATE_FLAG | FUTEX_CLOCK_REALTIME))

/* the bits the kernel keeps in a robust or PI futex word */
#define FUTEX_WAITERS 0x80000000u
#define FUTEX_OWNER_DIED 0x40000000u
#define FUTEX_TID_MASK 0x3fffffffu

/* a mutex's __kind and __owner (nptl/pthreadP.h) */
#define MUTEX_KIND_MASK 3
#define MUTEX_ROBUST 16
#define MUTEX_PI 32
#define MUTEX_PP 64
#define MUTEX_PSHARED 128
#define MUTEX_ELISION 256
#define MUTEX_NO_ELISION 512
#define MUTEX_KNOWN_BITS (MUTEX_KIND_MASK | MUTEX_ROBUST | MUTEX_PI | MUTEX_PP | \
			  MUTEX_PSHARED | MUTEX_ELISION | MUTEX_NO_ELISION)
#define MUTEX_INCONSISTENT 0x7fffffff
#define MUTEX_NOTRECOVERABLE 0x7ffffffe
#define MUTEX_CEILING_SHIFT 19

/* an rwlock's __readers and its futex words (nptl/pthread_rwlock_common.c) */
#define RW_WRPHASE 1u
#define RW_WRLOCKED 2u
#define RW_RWAITING 4u
#define RW_READER_SHIFT 3
#define RW_FUTEX_USED 2u

/* the private field of a semaphore and the shared one of a barrier:
 * FUTEX_PRIVATE is 0, FUTEX_SHARED 128 (lowlevellock-futex.h) */
#define GLIBC_FUTEX_SHARED 128u

/*
 * Where the fields tinspect reads sit, in bytes from the object's start,
 * for one glibc on one architecture (docs/GLIBC.md §5).  size is
 * sizeof(pthread_*_t); the futex words a thread may sleep on are named
 * fields of the same table.
 */
struct dbs_glibc_locks {
	const char *glibc;		/* the versions the row is verified for */
	enum arch_id arch;
	struct {
		unsigned size;
		unsigned lock, count, owner, nusers, kind;	/* 4 bytes each */
		unsigned list, list_len;	/* robust list links: zero in a
						 * mutex that is not robust */
	} mutex;
	struct {
		unsigned size;
		unsigned readers, writers, wrphase_futex, writers_futex;
		unsigned cur_writer, shared, flags;
		/* padding and elision bytes that are zero in every rwlock */
		unsigned pad1, pad1_len, pad2, pad2_len;
	} rwlock;
	struct {
		unsigned size;
		unsigned wseq, g1_start;	/* 8 bytes each */
		unsigned g_refs, g_size;	/* two 4-byte words each */
		unsigned g1_orig_size, wrefs;
		unsigned g_signals;		/* two 4-byte words: the futexes */
		/* 2.41 dropped __g_refs (then g_refs means nothing) */
		bool has_g_refs;
		/* A waiter sleeps on __g_signals[g] expecting 0 (with __g_refs:
		 * it holds a reference), or expecting the value it read (2.41;
		 * nptl/pthread_cond_wait.c; docs/GLIBC.md §5.1). */
		bool wait_expects_zero;
	} cond;
	struct {
		unsigned size;
		unsigned data;		/* 8 bytes: value low, waiters high */
		unsigned private_;
	} sem;
	struct {
		unsigned size;
		unsigned in, current_round, count, shared, out;
	} barrier;
};

/*
 * The layouts verified for glibc version ("2.36": major.minor, as
 * glibc_versions.c reads it from the target) on a's architecture (x86_64
 * if a is NULL).  NULL if that version was not verified ("" is a version
 * not known), and then *ret_why (if ret_why; static text) says why.
 * version NULL asks for the machine's own glibc, 2.36: for pure callers
 * that have no target (the tests, dbs_lock_decode).
 */
const struct dbs_glibc_locks *dbs_glibc_locks_for(const char *version,
						  const struct arch_desc *a,
						  const char **ret_why);
/* The versions the table holds, for messages ("2.31, 2.36, 2.41"). */
const char *dbs_glibc_verified_versions(void);
/* dbs_lock_decode() (dbs_int.h) with the layouts L. */
bool dbs_lock_decode_with(const struct dbs_glibc_locks *L, struct dbs_lock *l);
/* The bytes an object of kind k occupies (4: a bare futex or tid word). */
size_t dbs_glibc_kind_size(const struct dbs_glibc_locks *L, enum dbs_lock_kind k);

/* The fields of a copy w[0..n) of an object of kind k's words into u's
 * member of that kind (nothing for a futex or a FILE, whose words hold
 * no fields); a field beyond n reads as 0. */
void dbs_glibc_decode(const struct dbs_glibc_locks *L, enum dbs_lock_kind k,
		      const unsigned char *w, size_t n, union dbs_lock_fields *u);
/* Are __kind's bits those of no mutex glibc makes (unknown bits, or PI
 * and PP together, or robust and PP)? */
bool dbs_glibc_mutex_garbage(const struct dbs_mutex_info *m);

/* Little-endian words of a copy; 0 beyond its end. */
static inline uint32_t dbs_u32_at(const unsigned char *w, size_t n, size_t off)
{
	uint32_t v = 0;
	if (off + 4 <= n)
		memcpy(&v, w + off, 4);
	return v;
}

static inline uint64_t dbs_u64_at(const unsigned char *w, size_t n, size_t off)
{
	uint64_t v = 0;
	if (off + 8 <= n)
		memcpy(&v, w + off, 8);
	return v;
}

/* Are w[off..off+len) all zero (false if beyond n)? */
static inline bool dbs_all_zero(const unsigned char *w, size_t n, size_t off,
				size_t len)
{
	if (off + len > n)
		return false;
	for (size_t i = 0; i < len; i++)
		if (w[off + i])
			return false;
	return true;
}

#endif
