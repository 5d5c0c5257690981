/*
 * nonblock.c: updates that hold nothing (issue 14, "watching without
 * stopping").
 *
 * A nonblocking capture (proc_service's live_observe.c) stops and attaches
 * to no thread: a thread blocked in the kernel is observed through
 * /proc/TID/syscall (pc, sp, the call and its arguments), its stack copied
 * and unwound from there, the lock words it waits on read live; a running
 * thread is listed as running, without a stack.  The rest of the update -
 * libthread_db, the page cache, unwinding, the lock analysis - is the
 * all-stop path unchanged.
 *
 * Such a snapshot is not one consistent state: T1 may be seen waiting for
 * a lock T2 held a moment before it let go.  So a cycle (or a stall) in it
 * is only a candidate.  DBS_MODE_NONBLOCKING then takes one ordinary
 * all-stop capture, and that capture, which proves or refutes the
 * candidate, is the update (DBS_CAPTURE_CONFIRMATION).  With
 * DBS_MODE_NONBLOCKING_STRICT nothing is ever stopped: the snapshot stays
 * DBS_CAPTURE_NONBLOCKING, whose cycles the renderers call unconfirmed.
 */
#include "dbs_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* ---- thread pointers ---------------------------------------------------------- */

/*
 * ps_get_thread_area needs each thread's thread pointer (x86_64 fs_base),
 * which only ptrace gives.  libthread_db's iteration over the process's
 * own list of threads (glibc's stack_used and stack_user lists) needs
 * none: each element is a struct pthread, whose address is the thread
 * pointer (x86_64) or just below it (aarch64, arch_tp_of_area).  Read
 * live, the list may be changing under us; the read budget bounds the
 * walk, and a thread it misses simply has no pthread identity.
 */
struct learn {
	struct dbs_session *s;
	size_t found;
};

static int learn_one(const td_thrhandle_t *th, void *arg)
{
	struct learn *l = arg;
	struct dbs_session *s = l->s;
	td_thrinfo_t ti;
	if (s->lib.td_thr_get_info(th, &ti) != TD_OK || ti.ti_lid <= 0 ||
	    !ti.ti_tid)
		return 0;
	struct psvc_task *k = psvc_task_by_ns_tid(s->t, ti.ti_lid);
	if (!k || !(k->flags & PSVC_TASK_HAVE_REGS) || k->tp)
		return 0;
	k->tp = arch_tp_of_area(psvc_arch(s->t), (uint64_t)ti.ti_tid,
				(int)s->sizeof_pthread);
	l->found++;
	return 0;
}

void nb_learn_thread_pointers(struct dbs_session *s)
{
	if (!s->ta || !s->lib.td_ta_thr_iter || !s->sizeof_pthread)
		return;
	struct learn l = { .s = s };
	sigset_t none;
	sigemptyset(&none);
	/* a few reads per thread (the list link, then get_info's) */
	psvc_tdb_budget(s->t, TDB_READ_BUDGET + 64 * (uint64_t)psvc_ntasks(s->t));
	/* nothing is frozen: each descriptor is read once, live, and not
	 * kept (gather_tdb() reads them again, in batches) */
	psvc_cache_bypass(s->t, true);
	s->lib.td_ta_thr_iter(s->ta, learn_one, &l, TD_THR_ANY_STATE,
			      TD_THR_LOWEST_PRIORITY, &none,
			      TD_THR_ANY_USER_FLAGS);
	psvc_cache_bypass(s->t, false);
}

/* ---- the update ------------------------------------------------------------------ */

static size_t ncycles(const struct dbs_snapshot *snap)
{
	return snap->locks ? snap->locks->ndeadlocks : 0;
}

static size_t nstalls(const struct dbs_snapshot *snap)
{
	return snap->locks ? snap->locks->nstalls : 0;
}

int nb_update(struct dbs_session *s, struct dbs_snapshot **ret)
{
	struct dbs_snapshot *snap;
	int err = dbs_capture_once(s, true, &snap);
	if (err)
		return err;
	size_t cycles = ncycles(snap), stalls = nstalls(snap);
	if ((cycles == 0 && stalls == 0) || s->opts.mode == DBS_MODE_NONBLOCKING_STRICT) {
		*ret = snap;
		return 0;
	}
	struct dbs_snapshot *conf;
	err = dbs_capture_once(s, false, &conf);
	if (err == -ESRCH || err == -ESTALE || err == -EINTR || err == -ENOMEM) {
		dbs_snapshot_free(snap);
		return err;
	}
	if (err) {
		/* -EPERM (another tracer), -ETIMEDOUT (the freeze limit):
		 * what was seen stays a candidate, and says why */
		dbs_add_error(&snap->warnings, &snap->nwarnings,
			      "the nonblocking capture showed %zu candidate "
			      "deadlock(s) and %zu stall(s); confirming them by "
			      "stopping the process failed: %s; they stay "
			      "unconfirmed", cycles, stalls, strerror(-err));
		*ret = snap;
		return 0;
	}
	conf->capture = DBS_CAPTURE_CONFIRMATION;
	conf->candidate_cycles = cycles;
	conf->candidate_stalls = stalls;
	conf->observe_ns = snap->duration_ns;
	dbs_snapshot_free(snap);
	*ret = conf;
	return 0;
}
