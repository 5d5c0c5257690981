/*
 * nonblock.c: updates that hold nothing: watching without stopping.
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
 *
 * A nonblocking capture freezes nothing, so it need not be quick: asked
 * to (opts.idle_priority, a watch's choice), it runs in a thread of its
 * own at SCHED_IDLE (and so do the /proc readers it starts), which gets a
 * CPU only when nothing else wants it.  On a busy
 * machine the target's threads always win: what watching costs it is
 * then the memory traffic and the kernel's own locks, not CPU time (at
 * 10 000 threads an update is about a second of CPU).  The price is
 * paid by the update, which is late when no CPU is free; its duration
 * says so.  The confirming all-stop capture keeps the caller's priority:
 * there a slow capture is a long freeze.
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

/* The nonblocking capture, at SCHED_IDLE when asked; at the caller's
 * priority while following threads (the tracer must stay the caller's
 * thread). */
static int capture_nb(struct dbs_session *s, struct dbs_snapshot **ret)
{
	if (!s->opts.idle_priority || psvc_followed(s->t))
		return dbs_capture_once(s, true, ret);
	return dbs_capture_in_thread(s, true, true, ret);
}

int dbs_nb_update(struct dbs_session *s, struct dbs_snapshot **ret)
{
	struct dbs_snapshot *snap;
	int err = capture_nb(s, &snap);
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
