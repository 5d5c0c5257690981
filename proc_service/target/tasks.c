/*
 * tasks.c: the tasks of one capture and the states a task goes through.
 *
 * The list is rebuilt by every scan, in the order the tasks were found,
 * with two indexes: by TID as tinspect sees it, and by TID in the target's
 * own PID namespace (only where the two differ: libthread_db names threads
 * by the latter).  Everything that changes a task's state (enum
 * psvc_task_flags) is one of the transitions below, so that the life of a
 * task can be read in one place:
 *
 *   found by the scan ........................ (no flag)
 *   found by a rescan during the stop ........ LATE
 *   held: seized and interrupted ............. SEIZED (the target is stopped)
 *     refused (EPERM, a zombie leader) ....... seize_errno, not SEIZED
 *     exited before or while held ............ GONE, not SEIZED
 *     exited as it was interrupted ........... GONE, still SEIZED (its
 *                                              exit is still to be reaped)
 *     reported its stop ...................... STOPPED | CAPTURED
 *       (and JOBCTL for a job-control stop, resume_sig for a signal stop)
 *     did not stop in time (D state) ......... STRAGGLER, still SEIZED
 *   nonblocking capture: blocked, not held ... OBSERVED (nothing is SEIZED)
 *     left that wait during the capture ...... MOVED
 *   registers read (or why not) .............. HAVE_REGS / regs_errno
 *   thread pointer known from elsewhere ...... HAVE_REGS (psvc_note_thread)
 *   let go: detached or continued ............ not SEIZED, not STOPPED;
 *     CAPTURED stays: it was part of the snapshot
 *   handed over (a straggler kept by the
 *     backend, a task follow mode keeps) ..... not SEIZED
 *
 * The backend decides when a task moves (ptrace's wait statuses, a core
 * file's notes); the flags are written here only.  A leaf above the TID
 * map: the other files use it, it uses nothing but tidmap.c.
 */
#include "psvc_int.h"

#include "array.h"

#include <stdlib.h>
#include <string.h>

/* ---- the list ---------------------------------------------------------------- */

size_t psvc_ntasks(const struct psvc_target *t) { return t->ntasks; }

struct psvc_task *psvc_task_at(struct psvc_target *t, size_t i)
{
	return i < t->ntasks ? &t->tasks[i] : NULL;
}

struct psvc_task *psvc_task_by_tid(struct psvc_target *t, pid_t tid)
{
	long i = psvc_tidmap_get(&t->by_tid, tid);
	return i < 0 ? NULL : &t->tasks[i];
}

struct psvc_task *psvc_task_by_ns_map(struct psvc_target *t, pid_t ns_tid)
{
	long i = psvc_tidmap_get(&t->by_nstid, ns_tid);
	return i >= 0 && (size_t)i < t->ntasks ? &t->tasks[i] : NULL;
}

struct psvc_task *psvc_task_add(struct psvc_target *t, pid_t tid)
{
	if (array_grow(&t->tasks, &t->tasks_cap, t->ntasks + 1,
			    sizeof *t->tasks, 64))
		return NULL;
	if (psvc_tidmap_put(&t->by_tid, tid, (uint32_t)t->ntasks))
		return NULL;
	struct psvc_task *k = &t->tasks[t->ntasks++];
	memset(k, 0, sizeof *k);
	k->tid = tid;
	return k;
}

void psvc_task_index_ns(struct psvc_target *t, struct psvc_task *k)
{
	if (k->info.ns_tid > 0 && k->info.ns_tid != k->tid)
		psvc_tidmap_put(&t->by_nstid, k->info.ns_tid,
				(uint32_t)(k - t->tasks));
}

void psvc_tasks_clear(struct psvc_target *t)
{
	t->ntasks = 0;
	psvc_tidmap_clear(&t->by_tid);
	psvc_tidmap_clear(&t->by_nstid);
}

void psvc_tasks_free(struct psvc_target *t)
{
	psvc_tasks_clear(t);
	free(t->tasks);
	t->tasks = NULL;
	t->tasks_cap = 0;
}

/* ---- transitions --------------------------------------------------------------- */

struct psvc_task *psvc_task_add_late(struct psvc_target *t, pid_t tid)
{
	struct psvc_task *k = psvc_task_add(t, tid);
	if (!k)
		return NULL;
	/* its /proc facts are read after the resume, when they describe the
	 * thread again rather than its stop */
	k->flags |= PSVC_TASK_LATE;
	k->info.sc_nr = -1;
	return k;
}

void psvc_task_seized(struct psvc_target *t, struct psvc_task *k)
{
	k->flags |= PSVC_TASK_SEIZED;
	k->t_interrupted = psvc_now_ns();	/* the interrupt follows */
	/* from now on something may be held (a live stop says so before
	 * its tracer threads seize anything: then this only reads it) */
	if (!t->stopped)
		t->stopped = true;
}

void psvc_task_refused(struct psvc_task *k, int err)
{
	k->flags &= ~PSVC_TASK_SEIZED;
	k->seize_errno = err;
}

void psvc_task_gone(struct psvc_task *k)
{
	k->flags |= PSVC_TASK_GONE;
	k->flags &= ~PSVC_TASK_SEIZED;
}

void psvc_task_gone_held(struct psvc_task *k)
{
	k->flags |= PSVC_TASK_GONE;
}

void psvc_task_stopped(struct psvc_task *k, int resume_sig, bool jobctl,
		       bool in_capture)
{
	k->resume_sig = resume_sig;
	if (jobctl)
		k->flags |= PSVC_TASK_JOBCTL;
	k->flags |= PSVC_TASK_STOPPED;
	if (in_capture)
		k->flags |= PSVC_TASK_CAPTURED;
}

void psvc_task_observed(struct psvc_task *k)
{
	k->flags |= PSVC_TASK_OBSERVED;
}

void psvc_task_moved(struct psvc_task *k)
{
	k->flags |= PSVC_TASK_MOVED;
}

void psvc_task_straggler(struct psvc_task *k)
{
	k->flags |= PSVC_TASK_STRAGGLER;
}

void psvc_task_regs(struct psvc_task *k, int err)
{
	if (err)
		k->regs_errno = err;
	else
		k->flags |= PSVC_TASK_HAVE_REGS;
}

/* Follow mode's new threads: their thread pointer was read at their first
 * stop, which makes them known to libthread_db (ps_get_thread_area). */
void psvc_note_thread(struct psvc_target *t, pid_t tid, uint64_t tp)
{
	struct psvc_task *k = psvc_task_by_tid(t, tid);
	if (!k)
		k = psvc_task_add(t, tid);
	if (!k || !tp)
		return;
	k->tp = tp;
	k->flags |= PSVC_TASK_HAVE_REGS;
}

void psvc_task_released(struct psvc_task *k)
{
	k->flags &= ~(PSVC_TASK_SEIZED | PSVC_TASK_STOPPED);
}

void psvc_task_handed_over(struct psvc_task *k)
{
	k->flags &= ~PSVC_TASK_SEIZED;
}
