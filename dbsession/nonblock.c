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

static size_t ncycles(const struct dbs_snapshot *snap)
{
	return snap->locks ? snap->locks->ndeadlocks : 0;
}

static size_t nstalls(const struct dbs_snapshot *snap)
{
	return snap->locks ? snap->locks->nstalls : 0;
}

int dbs_nb_update(struct dbs_session *s, struct dbs_snapshot **ret)
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
