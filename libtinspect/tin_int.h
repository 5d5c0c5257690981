/*
 * libtinspect/tin_int.h: the public API (include/tinspect/) implemented
 * over dbsession's session and snapshot model.  Internal: never installed.
 *
 * The public handles are of two sorts.  Objects that need nothing but
 * themselves (a frame, a symbol, a key, a TLS variable, a runtime, an
 * event) are dbsession's own structs behind an opaque type: the accessor
 * casts the pointer back.  Objects whose accessors need their snapshot (a
 * thread: its syscall's name, the lock it waits on, its TLS values' types;
 * a lock: its index; a cycle or a stall: their locks) get a small wrapper,
 * built once per snapshot by tin_snapshot_wrap() after the target has
 * been resumed: the freeze is untouched, and an accessor is a load or two.
 *
 * Visibility: everything here is compiled with -fvisibility=hidden; the
 * public headers are included under a default-visibility pragma so that
 * the functions they declare, and only those, are the library's ABI (with
 * libthread_db's ps_* callbacks, see ps_export.h).
 */
#ifndef TINSPECT_TIN_INT_H
#define TINSPECT_TIN_INT_H

#pragma GCC visibility push(default)
#include <tinspect/tinspect.h>
#pragma GCC visibility pop

#include "dbsession.h"
#include "libc.h"

#include <errno.h>
#include <string.h>

struct tinspect_session {
	struct dbs_session *d;
	pid_t pid;
	/* what dbs_session_init() keeps pointers to: our copies */
	struct dbs_tls_request *tls;
	size_t ntls;
	char *thread_db_path;
	char *thread_db_safe_path;
};

struct tinspect_wait {
	const struct dbs_blocked_on *d;
	const struct tinspect_thread *th;
};

struct tinspect_tls_value {
	const struct dbs_tls_value *d;
	const struct dbs_tls_var *var;
};

struct tinspect_thread {
	const struct dbs_thread *d;
	const struct tinspect_snapshot *snap;
	struct tinspect_wait wait;	/* d->blocked_on != NULL */
	struct tinspect_tls_value *tls;	/* ntls of snap->tls_values */
	size_t ntls;
};

struct tinspect_lock {
	const struct dbs_lock *d;
	const struct tinspect_snapshot *snap;
};

struct tinspect_cycle {
	const struct dbs_deadlock *d;
	const struct tinspect_snapshot *snap;
};

struct tinspect_stall {
	const struct dbs_stall *d;
	const struct tinspect_snapshot *snap;
};

struct tinspect_snapshot {
	struct dbs_snapshot *d;		/* owned */
	struct tinspect_thread *threads;	/* d->nthreads */
	struct tinspect_lock *locks;	/* d->locks->v */
	size_t nlocks;
	struct tinspect_cycle *cycles;
	size_t ncycles;
	struct tinspect_stall *stalls;
	size_t nstalls;
	const struct tinspect_lock **orphans;
	size_t norphans;
	struct tinspect_tls_value *tls_values;	/* every thread's, in a row */
};

/*
 * Wrap a snapshot in its public handles.  On success *ret owns d (freed by
 * tinspect_snapshot_free()); on failure (-ENOMEM) d is still the caller's.
 * The tests wrap snapshots they build by hand this way.
 */
int tin_snapshot_wrap(struct dbs_snapshot *d, tinspect_snapshot **ret);
/* Free the handles only, and give the snapshot back (the fuzz target
 * analyses one snapshot again after rendering it). */
struct dbs_snapshot *tin_snapshot_unwrap(tinspect_snapshot *s);

/* The lock of index i of a snapshot; NULL if out of range. */
const struct tinspect_lock *tin_lock_at(const struct tinspect_snapshot *s, size_t i);

/* The opaque types that are dbsession's own structs. */
#define TIN_CAST(type, p) ((type)(const void *)(p))
#define tin_frame(f) TIN_CAST(const struct dbs_frame *, f)
#define tin_symbol(s) TIN_CAST(const struct dbs_symbol *, s)
#define tin_key(k) TIN_CAST(const struct dbs_key *, k)
#define tin_tls_var(v) TIN_CAST(const struct dbs_tls_var *, v)
#define tin_runtime(r) TIN_CAST(const struct dbs_runtime *, r)
#define tin_event(e) TIN_CAST(const struct dbs_event *, e)

/* Copy a state structure into the caller's first size bytes (zeroing what
 * this library does not know of a larger one).  0, or -EINVAL for size 0.
 * Inline, so that every file's getters use it without api_session.c and
 * api_snapshot.c, which it uses, depending on each other in a circle. */
static inline int tin_fill(void *ret, size_t size, const void *v, size_t vsize)
{
	if (!size)
		return -EINVAL;
	memset(ret, 0, size);
	memcpy(ret, v, size < vsize ? size : vsize);
	return 0;
}

/*
 * Generators of the accessors that do nothing but read: each makes one
 * function its public header declares (the header keeps the prototype
 * and its documentation), the handle named h.  The
 * cast turns dbsession's enums into the public ones they mirror (each
 * file asserts that the values agree).
 *
 * TIN_GET: a field of the dbsession struct behind a wrapper handle
 * (snapshot, thread, wait, lock, cycle, stall, TLS value).
 * TIN_GET_CAST: a field of the dbsession struct that the handle is, through
 * its tin_frame()-style cast.
 * TIN_LIST: a count and the element of index i (NULL out of range): n and
 * elem are expressions of the handle, which is named h, and of i.
 */
#define TIN_GET(rtype, name, htype, field)				\
	rtype name(const htype *h)					\
	{								\
		return (rtype)h->d->field;				\
	}
#define TIN_GET_CAST(rtype, name, htype, cast, field)			\
	rtype name(const htype *h)					\
	{								\
		return (rtype)cast(h)->field;				\
	}
#define TIN_LIST(nname, name, htype, etype, n, elem)			\
	size_t nname(const htype *h)					\
	{								\
		return n;						\
	}								\
	const etype *name(const htype *h, size_t i)			\
	{								\
		return i < (n) ? (elem) : NULL;				\
	}

#endif
