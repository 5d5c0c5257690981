/*
 * verdict.h: what the verdict says (verdict.c), decided once for the text
 * report, the JSON document and the watch stream's summary lines; when
 * waits that record no owner are worth a line of it (see verdict.c).
 */
#ifndef TINSPECT_AGENT_VERDICT_H
#define TINSPECT_AGENT_VERDICT_H

#include <stdbool.h>
#include <stddef.h>

#include <tinspect/tinspect.h>

enum verdict_why {
	VERDICT_IDLE,		/* counted below "No deadlock found" */
	VERDICT_NO_PROGRESS,	/* listed: no thread can make progress */
	VERDICT_PERSISTED,	/* listed: nothing moved since the previous
				 * update of the watch */
};
#define VERDICT_KINDS 8
struct verdict_kind {
	const char *what;	/* "condition-variable waits" */
	enum tinspect_lock_kind kind;
	enum tinspect_owner_state owner;
	size_t threads;
	size_t same;		/* in the same wait as at the previous update */
};
struct agent_verdict {
	bool analysed;		/* the lock analysis was made */
	bool unconfirmed;	/* nonblocking: cycles are candidates */
	bool watched;		/* a watch's update after the first */
	bool cpython;		/* a CPython runtime was found */
	size_t threads, deadlocks, orphans, stalls;
	size_t jobctl;		/* threads in a job-control stop */
	size_t progress[TINSPECT_PROGRESS_COUNT];	/* by class */
	size_t same;		/* threads in the wait they were in at the
				 * previous update */
	size_t undecided;	/* threads in untimed waits that record no
				 * owner */
	size_t undecided_same;
	enum verdict_why why;
	struct verdict_kind kinds[VERDICT_KINDS];	/* most threads first */
	size_t nkinds;
};
/* update: the watch's update number, 0 outside a watch. */
void verdict_make(const tinspect_snapshot *snap, unsigned long update,
		  struct agent_verdict *v);
/* A thread in an untimed wait on something that records no owner (and
 * not the end of a stall, which the verdict names). */
bool verdict_undecided_wait(const tinspect_snapshot *snap, const tinspect_thread *th);
/* In the wait it was in at the previous update of the session. */
bool verdict_same_wait(const tinspect_snapshot *snap, const tinspect_thread *th);
/* Every thread of the process is in a job-control stop. */
bool verdict_process_stopped(const struct agent_verdict *v);
/* "found", "unconfirmed", "possible", "none_found", "unknown" */
const char *verdict_deadlock_word(const struct agent_verdict *v);
/* the JSON's undecided.reason, NULL for VERDICT_IDLE */
const char *verdict_why_name(enum verdict_why why);

#endif
