/*
 * stack.c: where each thread's stack is and how much of it is left, so
 * that a thread about to overflow is visible.  From the mapping that
 * holds the stopped thread's sp in /proc/PID/maps (read before the stop,
 * re-read after the resume only for threads created during it): glibc
 * maps a thread's stack with its guard as a PROT_NONE mapping right below
 * (nptl/allocatestack.c); the initial thread's [stack] grows down until
 * RLIMIT_STACK or the next mapping.  No memory is read and no freeze time
 * is spent: it all happens after the resume.
 *
 * A Go program runs goroutines, and on threads it made itself (no cgo)
 * even each thread's g0, on stacks the Go runtime carves out of its heap
 * (0xc000000000...): the mapping that holds sp is the heap, not a stack,
 * and its end says nothing about the stack's.  In a Go process a stack is
 * taken from the mapping only where that is proven: the initial thread's
 * [stack], or the mapping that holds the thread's own pthread descriptor
 * (glibc puts it at the top of the thread's stack).  Otherwise the bounds
 * are unknown, with the reason, and that is no error.
 */
#include "dbs_int.h"

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/*
 * A stack that ended "truncated" although the stop's copy of it, [lo, hi)
 * as asked, stopped short of hi: the frames ran into memory that could not
 * be copied, not past --stack-bytes.  That is no truncation but a failure
 * to read the thread, and its reason: no mapping at sp (bad_sp), a mapping
 * that cannot be read (PROT_NONE: a guard, a reserved region), memory a
 * read would have waited on (userfaultfd, psvc_mem_hazard), or memory
 * that was simply unreadable.
 */
void dbs_stack_explain_copy(struct dbs_session *s, struct dbs_thread *th,
			    uint64_t lo, uint64_t hi)
{
	struct dbs_stack *st = &th->stack;
	if (st->end != DBS_STACK_TRUNCATED || st->copied_to >= hi)
		return;
	struct psvc_map m;
	char buf[320];
	const char *why;
	if (psvc_map_lookup(s->t, th->sp, &m, NULL) != 0) {
		if (st->copied_to != lo)
			return;	/* copied all the same: a mapping the maps missed */
		/* not a short copy: there was nothing to copy */
		st->end = DBS_STACK_BAD_SP;
		st->error = "the stack pointer is in no mapping: no stack to copy";
		return;
	}
	if (m.perms[0] != 'r' && th->sp >= m.start && st->copied_to <= th->sp) {
		snprintf(buf, sizeof buf, "the stack pointer %#" PRIx64 " is in a "
			 "mapping that cannot be read (%s %#" PRIx64 "-%#" PRIx64
			 ": a guard page or reserved memory): no stack to copy",
			 th->sp, m.perms, m.start, m.end);
	} else if ((why = psvc_mem_hazard(s->t, st->copied_to, 1))) {
		snprintf(buf, sizeof buf, "the stack could be copied only up to "
			 "%#" PRIx64 ": %s", st->copied_to, why);
	} else {
		snprintf(buf, sizeof buf, "the stack could be copied only up to "
			 "%#" PRIx64 ": the memory there could not be read "
			 "during the stop", st->copied_to);
	}
	st->end = DBS_STACK_ERROR;
	st->error = dbs_strpool_intern(dbs_unwinder_pool(s->unwinder), buf);
}

static bool anon_or_stack(const struct psvc_map *m)
{
	return !m->path || !strcmp(m->path, "[stack]");
}

static bool go_process(const struct dbs_snapshot *snap)
{
	for (size_t i = 0; i < snap->nruntimes; i++)
		if (!strcmp(snap->runtimes[i].name, "go"))
			return true;
	return false;
}

/* A Go process: is the mapping m proven to be th's own stack? */
static bool proven_stack(const struct dbs_snapshot *snap,
			 const struct dbs_thread *th, const struct psvc_map *m)
{
	if (th->tid == snap->pid && m->path && !strcmp(m->path, "[stack]"))
		return true;
	return th->pthread && th->pthread >= m->start && th->pthread < m->end;
}

void dbs_stack_fill(struct dbs_session *s, struct dbs_snapshot *snap,
		struct dbs_thread *th)
{
	struct dbs_stack_bounds *st = &th->bounds;
	memset(st, 0, sizeof *st);
	if (!th->have_regs)
		return;
	uint64_t sp = th->sp;
	struct psvc_map m, below;
	int err = psvc_map_lookup(s->t, sp, &m, &below);
	if (err && !th->proc_before_stop && !s->stack_maps_fresh) {
		/* a thread created during the stop: its stack is newer than
		 * the maps; once per snapshot */
		s->stack_maps_fresh = true;
		if (psvc_maps_refresh(s->t) == 0)
			err = psvc_map_lookup(s->t, sp, &m, &below);
	}
	if (err) {
		/* DBS_BOUNDS_UNKNOWN, and why */
		dbs_add_error(&th->errors, &th->nerrors, "stack bounds: the stack "
			       "pointer %#" PRIx64 " is in no mapping", sp);
		return;
	}
	if (go_process(snap) && !proven_stack(snap, th, &m)) {
		st->unknown = "a Go process, and the stack pointer is in memory "
			      "the Go runtime allocates stacks from (a goroutine's "
			      "or g0 stack in its heap), not in a thread stack "
			      "mapping: the stack's bounds are the runtime's";
		return;
	}
	st->low = m.start;
	st->high = m.end;
	st->used = m.end - sp;
	if (!strcmp(m.perms, "---p")) {
		/* sp is inside a guard: the thread has overflowed */
		st->status = DBS_BOUNDS_OVERFLOW;
		st->guard_low = m.start;
		st->guard_high = m.end;
		st->limit = m.end;
		return;
	}
	bool guard = below.start && below.end == m.start &&
		     !strcmp(below.perms, "---p");
	if (guard) {
		st->guard_low = below.start;
		st->guard_high = below.end;
	}
	if (th->tid == snap->pid && m.path && !strcmp(m.path, "[stack]")) {
		/* the initial thread: [stack] grows down on demand */
		st->main = true;
		uint64_t rl = 0, lim = 0;
		if (psvc_stack_rlimit(s->t, &rl) == 0 && rl < m.end)
			lim = m.end - rl;
		/* it cannot grow into the mapping below either */
		if (below.start && below.end > lim)
			lim = below.end;
		st->limit = lim;
	} else if (anon_or_stack(&m) && m.perms[0] == 'r' && m.perms[1] == 'w') {
		/* a thread stack (a stack without a guard ends where its
		 * mapping does all the same) */
		st->limit = m.start;
	} else {
		/* a sigaltstack, a file mapping, the heap: not a stack whose
		 * end we know */
		st->status = DBS_BOUNDS_NOT_STACK;
		return;
	}
	if (!st->limit) {
		st->status = DBS_BOUNDS_OK;	/* unlimited, nothing below */
		return;
	}
	if (sp < st->limit) {
		st->status = DBS_BOUNDS_OVERFLOW;
		return;
	}
	st->avail = sp - st->limit;
	uint64_t size = m.end - st->limit;
	if (size > INT64_MAX) {
		/* only a damaged core puts a stack's ends that far apart: its
		 * sizes would not be numbers any more */
		dbs_add_error(&th->errors, &th->nerrors, "stack bounds: %#" PRIx64
			       "-%#" PRIx64 " spans more than an address space",
			       st->limit, m.end);
		memset(st, 0, sizeof *st);
		return;
	}
	st->status = st->avail < DBS_BOUNDS_LOW_BYTES || st->avail < size / 8
			     ? DBS_BOUNDS_LOW : DBS_BOUNDS_OK;
}
