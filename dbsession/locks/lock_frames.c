/*
 * lock_frames.c: frame evidence.  The unwound frames of a blocked thread
 * (dbs_lock_input.frames) name the glibc function it blocks in, which
 * says what kind of object it waits on even where the words alone fit
 * several: a cond waiter and a semaphore both sleep with value 0.
 */
#include "locks_int.h"

#include <string.h>

/* glibc 2.36 entry points and internal functions that block, by name
 * without leading underscores, symbol version or .constprop-like suffix.
 * Without libc debug symbols only the .dynsym ones appear as frame names
 * (pthread_mutex_lock, pthread_cond_wait, pthread_rwlock_*lock,
 * pthread_barrier_wait); the rest need libc6-dbg (see the fixtures). */
static const struct {
	const char *name;
	enum dbs_fkind k;
} frame_table[] = {
	{ "pthread_mutex_lock", FK_MUTEX },
	{ "pthread_mutex_timedlock", FK_MUTEX },
	{ "pthread_mutex_clocklock", FK_MUTEX },
	{ "pthread_mutex_lock_full", FK_MUTEX },
	{ "pthread_mutex_clocklock_common", FK_MUTEX },
	{ "pthread_mutex_cond_lock", FK_MUTEX },
	{ "pthread_mutex_cond_lock_full", FK_MUTEX },
	{ "lll_lock_wait", FK_MUTEX },
	{ "lll_clocklock_wait", FK_MUTEX },
	{ "futex_lock_pi64", FK_MUTEX },
	{ "lll_lock_wait_private", FK_INTERNAL },
	{ "pthread_rwlock_rdlock", FK_RWLOCK_READ },
	{ "pthread_rwlock_timedrdlock", FK_RWLOCK_READ },
	{ "pthread_rwlock_clockrdlock", FK_RWLOCK_READ },
	{ "pthread_rwlock_rdlock_full64", FK_RWLOCK_READ },
	{ "pthread_rwlock_rdlock_full", FK_RWLOCK_READ },
	{ "pthread_rwlock_wrlock", FK_RWLOCK_WRITE },
	{ "pthread_rwlock_timedwrlock", FK_RWLOCK_WRITE },
	{ "pthread_rwlock_clockwrlock", FK_RWLOCK_WRITE },
	{ "pthread_rwlock_wrlock_full64", FK_RWLOCK_WRITE },
	{ "pthread_rwlock_wrlock_full", FK_RWLOCK_WRITE },
	{ "pthread_cond_wait", FK_COND },
	{ "pthread_cond_timedwait", FK_COND },
	{ "pthread_cond_clockwait", FK_COND },
	{ "pthread_cond_wait_common", FK_COND },
	{ "pthread_cond_timedwait64", FK_COND },
	{ "pthread_cond_clockwait64", FK_COND },
	/* a signaller waits for the old group's waiters to leave, on
	 * __g_refs (+16/+20), or for the condvar's internal lock (+32) */
	{ "pthread_cond_signal", FK_COND_SIGNAL },
	{ "pthread_cond_broadcast", FK_COND_SIGNAL },
	{ "condvar_quiesce_and_switch_g1", FK_COND_SIGNAL },
	{ "condvar_acquire_lock", FK_COND_SIGNAL },
	{ "sem_wait", FK_SEM },
	{ "sem_timedwait", FK_SEM },
	{ "sem_clockwait", FK_SEM },
	{ "new_sem_wait", FK_SEM },
	{ "new_sem_wait_slow64", FK_SEM },
	{ "new_sem_wait_slow", FK_SEM },
	{ "new_sem_clockwait", FK_SEM },
	{ "do_futex_wait", FK_SEM },
	{ "pthread_join", FK_JOIN },
	{ "pthread_timedjoin_np", FK_JOIN },
	{ "pthread_clockjoin_np", FK_JOIN },
	{ "pthread_clockjoin_ex", FK_JOIN },
	{ "pthread_barrier_wait", FK_BARRIER },
};

/* "__pthread_mutex_lock@GLIBC_2.2.5" -> "pthread_mutex_lock",
 * "__GI___lll_lock_wait" (libc6-dbg's internal alias) -> "lll_lock_wait",
 * "__new_sem_wait_slow64.constprop.0" -> "new_sem_wait_slow64". */
void dbs_frame_normalize(const char *in, char *out, size_t cap)
{
	while (*in == '_')
		in++;
	if (!strncmp(in, "GI_", 3))
		for (in += 3; *in == '_'; in++)
			;
	size_t n = 0;
	for (; in[n] && in[n] != '@' && in[n] != '.' && n + 1 < cap; n++)
		out[n] = in[n];
	out[n] = '\0';
}

/* Thread ti's innermost frames into c->frames. */
size_t dbs_frames_load(const struct dbs_lockctx *c, size_t ti)
{
	if (!c->in->frames)
		return 0;
	struct dbs_frames *f = c->frames;
	for (size_t k = 0; k < DBS_MAX_FRAMES; k++)
		f->sps[k] = 0;
	size_t n = c->in->frames(c->in->frames_ctx ? c->in->frames_ctx : c->in->ctx,
				 c->snap, ti, f->names, f->sps, DBS_MAX_FRAMES);
	return n > DBS_MAX_FRAMES ? DBS_MAX_FRAMES : n;
}

enum dbs_fkind dbs_frame_kind(const struct dbs_lockctx *c, size_t ti,
			      const char **ret_name)
{
	*ret_name = NULL;
	size_t n = dbs_frames_load(c, ti);
	/* innermost first: a cond waiter re-locking its mutex sits in
	 * pthread_mutex_cond_lock above pthread_cond_wait, and waits on the
	 * mutex */
	for (size_t f = 0; f < n; f++) {
		if (!c->frames->names[f])
			continue;
		char norm[64];
		dbs_frame_normalize(c->frames->names[f], norm, sizeof norm);
		for (size_t k = 0; k < sizeof frame_table / sizeof *frame_table; k++)
			if (!strcmp(norm, frame_table[k].name)) {
				*ret_name = c->frames->names[f];
				return frame_table[k].k;
			}
	}
	return FK_NONE;
}

enum dbs_lock_kind dbs_frame_lock(enum dbs_fkind f, enum dbs_wait_mode *mode)
{
	*mode = DBS_MODE_NONE;
	switch (f) {
	case FK_MUTEX: return DBS_LOCK_MUTEX;
	case FK_RWLOCK_READ: *mode = DBS_MODE_READ; return DBS_LOCK_RWLOCK;
	case FK_RWLOCK_WRITE: *mode = DBS_MODE_WRITE; return DBS_LOCK_RWLOCK;
	case FK_COND:
	case FK_COND_SIGNAL: return DBS_LOCK_COND;
	case FK_SEM: return DBS_LOCK_SEM;
	case FK_JOIN: return DBS_LOCK_JOIN;
	case FK_BARRIER: return DBS_LOCK_BARRIER;
	case FK_NONE:
	case FK_INTERNAL:
		break;
	}
	return DBS_LOCK_FUTEX;
}
