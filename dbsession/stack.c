/*
 * stack.c: where each thread's stack is and how much of it is left, so
 * that a thread about to overflow is visible.  From the mapping that
 * holds the stopped thread's sp in /proc/PID/maps (read before the stop,
 * re-read after the resume only for threads created during it): glibc
 * maps a thread's stack with its guard as a PROT_NONE mapping right below
 * (nptl/allocatestack.c); the initial thread's [stack] grows down until
 * RLIMIT_STACK or the next mapping.  No memory is read and no freeze time
 * is spent: it all happens after the resume.
 */
#include "dbs_int.h"

#include <inttypes.h>
#include <string.h>

static bool anon_or_stack(const struct psvc_map *m)
{
	return !m->path || !strcmp(m->path, "[stack]");
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
