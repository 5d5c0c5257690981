/*
 * json.h: the parts of the snapshot document (render_json(), json.c) that
 * its files write for each other.
 */
#ifndef TINSPECT_AGENT_JSON_H
#define TINSPECT_AGENT_JSON_H

#include "agent.h"
#include "jwriter.h"

/* json_locks.c: a thread's "blocked_on" value; the process's lock
 * members ("locks", "deadlocks", "stalls", "orphaned_locks"). */
void json_blocked_on(struct jw *w, const tinspect_snapshot *snap,
		     const tinspect_thread *th);
void json_locks(struct jw *w, const tinspect_snapshot *snap);
/* json_locks.c: the cycles of a "deadlocks" array, each its "threads"
 * and "locks" in their order, a lock (null for none) written by lock_value
 * (a lock reference in the document, the address in a watch's summary) */
void json_cycles(struct jw *w, const tinspect_snapshot *snap,
		 void (*lock_value)(struct jw *w, const tinspect_lock *l));
/* json_locks.c: a thread's "held" value (the locks its words say it
 * holds), null when not known */
void json_held(struct jw *w, const tinspect_thread *th);
/* json_verdict.c: "verdict" (update: the watch's, 0 outside a watch) */
void json_verdict(struct jw *w, const tinspect_snapshot *snap, unsigned long update);

#endif
