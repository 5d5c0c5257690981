/*
 * glibc_versions.h: which glibc the target runs, and the layout facts of
 * its lock objects as verified for that version.
 *
 * The lock decoders read glibc's pthread objects word by word; a field that
 * moved between versions (2.41 dropped pthread_cond_t's __g_refs) decoded
 * with another version's offsets is a lie.  So every fact is tied to the
 * versions it was verified on, and a version not in the table gets no
 * layout at all: what depends on it is reported unknown, with the reason.
 */
#ifndef TINSPECT_GLIBC_VERSIONS_H
#define TINSPECT_GLIBC_VERSIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct psvc_target;

/* Byte offsets inside the objects (x86_64; -1: the field does not exist
 * in that version). */
struct dbs_glibc_layout {
	const char *versions;	/* where it was verified, "2.31 2.36" */
	unsigned mutex_size, rwlock_size, cond_size, sem_size, barrier_size;
	/* pthread_mutex_t.__data */
	int mutex_lock, mutex_count, mutex_owner, mutex_nusers, mutex_kind,
	    mutex_list;
	/* pthread_rwlock_t.__data */
	int rw_readers, rw_writers, rw_wrphase_futex, rw_writers_futex,
	    rw_cur_writer, rw_shared, rw_flags;
	/* pthread_cond_t.__data */
	int cond_wseq, cond_g1_start, cond_g_refs, cond_g_size,
	    cond_g1_orig_size, cond_wrefs, cond_g_signals;
	/* A cond waiter sleeps on __g_signals[g] expecting 0 (2.36: it
	 * holds a __g_refs reference), or expecting the value it read (2.41:
	 * no __g_refs; nptl/pthread_cond_wait.c). */
	bool cond_wait_expects_zero;
	/* sem_t (struct new_sem): u64 data at 0, private at 8;
	 * pthread_barrier_t (struct pthread_barrier): in 0, current_round
	 * 4, count 8, shared 12, out 16 */
	int sem_data, sem_private;
	int barrier_in, barrier_round, barrier_count, barrier_shared,
	    barrier_out;
};

/*
 * The layout verified for glibc version ("2.36": major.minor, as the
 * target's __nptl_version or libc banner says) on the architecture
 * arch_id (enum arch_id).  NULL if that version (or architecture) was not
 * verified, and then *ret_why (static text) says so.
 */
const struct dbs_glibc_layout *dbs_glibc_layout(const char *version,
						int arch_id,
						const char **ret_why);

/* The versions whose layouts are verified, for messages ("2.31, 2.36,
 * 2.41"). */
const char *dbs_glibc_verified_versions(void);

/*
 * The target's glibc version into buf (digits and dots only, "" if it
 * cannot be told): from its memory (__nptl_version in libc, since 2.34;
 * nptl_version in libpthread before), else from the version banner in
 * its libc's file ("... release version 2.31."), which a core file's
 * libc has too.  ret_source (may be NULL): "__nptl_version",
 * "nptl_version", "libc banner" or NULL.
 */
void dbs_glibc_version_read(struct psvc_target *t, char *buf, size_t len,
			    const char **ret_source);

#endif
