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
#include <string.h>

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
	st->status = st->avail < DBS_BOUNDS_LOW_BYTES || st->avail < size / 8
			     ? DBS_BOUNDS_LOW : DBS_BOUNDS_OK;
}
