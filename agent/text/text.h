/*
 * text.h: the parts of the text report (render_text(), text.c) that its
 * files write for each other: the first screen and the lock texts
 * (report.c), the threads grouped by stack (stackgroups.c), --brief
 * (brief.c).
 */
#ifndef TINSPECT_AGENT_TEXT_H
#define TINSPECT_AGENT_TEXT_H

#include "agent.h"
#include "common.h"

/* report.c: the first screen for a person in an incident.  The verdict (deadlocks, orphaned locks,
 * stalls, or why none can be proven), threads by state and by what they
 * wait on, the most contended locks; then the details of what the verdict
 * names. */
void report_summary(FILE *out, const tinspect_snapshot *snap,
		    const struct agent_opts *o);
/* The deadlocks' stacks, the stall chains, the orphaned locks. */
void report_lock_details(FILE *out, const tinspect_snapshot *snap,
			 const struct agent_opts *o);
/* Every lock waited on, by address: the reference list, last. */
void report_all_locks(FILE *out, const tinspect_snapshot *snap);
/* "  waiting for ..." of one thread (detail view), and its one-line form
 * for --brief ("futex 0x... (called from f)", "mutex m held by 12"). */
void report_put_waiting(FILE *out, const tinspect_snapshot *snap,
			const tinspect_thread *th);
void report_put_wait_short(FILE *out, const tinspect_thread *th);
/* thread "name" (tid) */
void report_put_thread_ref(FILE *out, const tinspect_snapshot *snap, pid_t tid);

/* stackgroups.c: threads grouped by identical stack, as pt-pmp and
 * eu-stack | sort | uniq -c users do by hand. */
struct stack_groups;
struct stack_groups *stack_groups_build(const tinspect_snapshot *snap);
void stack_groups_free(struct stack_groups *g);
/* Print the groups, largest first (threads listed in full with verbose). */
void stack_groups_print(FILE *out, const tinspect_snapshot *snap,
			const struct stack_groups *g, bool verbose);
/* The group of thread index i (1-based number as printed) and its size;
 * 0 if the thread has no stack. */
size_t stack_groups_of(const struct stack_groups *g, size_t i, size_t *ret_size);

/* brief.c: --brief, one line per thread like gdb's "info threads". */
void brief_threads(FILE *out, const tinspect_snapshot *snap);

#endif
