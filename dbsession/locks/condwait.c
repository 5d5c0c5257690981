/*
 * condwait.c: which condition variable a waiter sleeps on, from the
 * waiter's own cancellation cleanup record (what a busy condvar of a real
 * service needed).
 *
 * A glibc 2.36 cond waiter sleeps on __g_signals[g], cond+40 or cond+44,
 * and the two readings of the futex word differ by 4 bytes: the words
 * around it fit both as soon as the condvar is busy (its counters are
 * then all non-zero), so a hundred waiters of one condvar came out as an
 * unknown object at its futex word, or under two addresses.  The counters
 * cannot settle it; the waiter itself can.  Before it blocks,
 * __pthread_cond_wait_common (nptl/pthread_cond_wait.c) pushes a cleanup
 * record on its stack for cancellation:
 *
 *   self->cleanup -> struct _pthread_cleanup_buffer { routine, arg, ... }
 *   arg           -> struct _condvar_cleanup_buffer { wseq, cond, mutex,
 *                                                     private }
 *
 * and it sleeps on cond->__g_signals[wseq & 1].  Where that record names
 * a cond whose futex word is exactly the one the thread sleeps on, the
 * object is proven, its counters whatever they are; the record also names
 * the mutex the waiter will re-lock, which glibc keeps nowhere else.
 *
 * offsetof(struct pthread, cleanup) has no libthread_db descriptor: it is
 * the two pointers (cleanup, cleanup_jmp_buf) right before cancelhandling
 * (nptl/descr.h, unchanged since glibc 2.3), whose offset libc publishes
 * as _thread_db_pthread_cancelhandling.  Everything read here was copied
 * during the stop (the struct pthread and the stack top); a record that
 * does not match exactly is no evidence, never a guess.
 */
#include "dbs_int.h"
#include "glibc_locks.h"

#include <string.h>

/* cancelhandling's descriptor, through the one checked reader of what
 * the target describes (proc_service/common/layout.c). */
uint32_t dbs_condwait_cleanup_offset(struct dbs_session *s)
{
	uint64_t gen = psvc_modules_generation(s->t);
	if (s->cleanup_off_valid && s->cleanup_off_gen == gen)
		return s->cleanup_off;
	s->cleanup_off = 0;
	s->cleanup_off_gen = gen;
	s->cleanup_off_valid = true;
	struct psvc_field f;
	/* the two pointers before it must lie inside struct pthread too */
	if (s->sizeof_pthread &&
	    dbs_glibc_pthread_field(s, "_thread_db_pthread_cancelhandling", &f,
				    NULL, 0) == 0 && f.offset >= 16)
		s->cleanup_off = (uint32_t)(f.offset - 16);
	return s->cleanup_off;
}

/* a pointer the record may hold: aligned, into the process (a stack of
 * aarch64 lies above x86_64's 2^47, docs/ARCH.md §5) */
#define RECORD_ALIGN 8

bool dbs_condwait_object(const struct dbs_lock_input *in, uint64_t pd,
		     uint64_t futex, uint64_t *ret_cond, uint64_t *ret_mutex)
{
	if (!in->read || !in->cleanup_offset || !pd)
		return false;
	uint64_t buf, rec[2], cb[3];
	if (in->read(in->ctx, pd + in->cleanup_offset, &buf, sizeof buf) ||
	    !arch_user_pointer(in->arch, buf, RECORD_ALIGN) ||
	    in->read(in->ctx, buf, rec, sizeof rec) ||	/* routine, arg */
	    !rec[0] || !arch_user_pointer(in->arch, rec[1], RECORD_ALIGN) ||
	    in->read(in->ctx, rec[1], cb, sizeof cb))	/* wseq, cond, mutex */
		return false;
	/* it sleeps on __g_signals[wseq & 1] */
	uint64_t cond = cb[1];
	/* where __g_signals is depends on the glibc (2.41: +32, docs/GLIBC.md
	 * §5.1); a version without a verified layout matches nothing */
	const struct dbs_glibc_locks *L =
		in->glibc ? in->glibc : dbs_glibc_locks_for(NULL, in->arch, NULL);
	if (in->glibc_unverified ||
	    !arch_user_pointer(in->arch, cond, RECORD_ALIGN) ||
	    cond + L->cond.g_signals + 4 * (cb[0] & 1) != futex)
		return false;
	*ret_cond = cond;
	*ret_mutex = arch_user_pointer(in->arch, cb[2], RECORD_ALIGN) ? cb[2] : 0;
	return true;
}

/*
 * What dbs_condwait_object() will read for the thread whose descriptor is at
 * pd, kept (psvc_frozen_retain) before its stack copy is given up: the
 * cleanup word, the record, the cleanup buffer and the mutex it names
 * (mutex_max bytes).  The same chain, read from the frozen copy only.
 */
void dbs_condwait_retain(struct dbs_session *s, uint64_t pd, size_t mutex_max)
{
	uint32_t off = dbs_condwait_cleanup_offset(s);
	if (!off || !pd)
		return;
	struct psvc_target *t = s->t;
	const struct arch_desc *a = psvc_arch(t);
	uint64_t buf, rec[2], cb[3];
	psvc_frozen_retain(t, pd + off, sizeof buf);
	if (psvc_read_frozen(t, pd + off, &buf, sizeof buf) ||
	    !arch_user_pointer(a, buf, RECORD_ALIGN))
		return;
	psvc_frozen_retain(t, buf, sizeof rec);
	if (psvc_read_frozen(t, buf, rec, sizeof rec) || !rec[0] ||
	    !arch_user_pointer(a, rec[1], RECORD_ALIGN))
		return;
	psvc_frozen_retain(t, rec[1], sizeof cb);
	if (psvc_read_frozen(t, rec[1], cb, sizeof cb) ||
	    !arch_user_pointer(a, cb[2], RECORD_ALIGN))
		return;
	psvc_frozen_retain(t, cb[2], mutex_max);
}
