/*
 * stacktop.c: where a thread's stack copy can end, learned across updates.
 *
 * A thread made by pthread_create runs on a stack whose top is its static
 * TLS block, and above that its descriptor: glibc's allocate_stack puts
 * the descriptor at the top of the stack mapping and starts the stack
 * below the static TLS (nptl/allocatestack.c), whose size is the same for
 * every thread of a process (it is fixed at startup: dlopen'ed modules
 * take their static TLS from the reserved surplus).  A capture copies
 * each stack from sp up to the descriptor, which is read apart: so most
 * of an idle thread's copy is its TLS block, never read by the unwinder
 * (on this machine 1920 of the 2304 bytes of an idle worker's copy; at
 * 10 000 threads, 19 of 23 MB that lived through every watch update, the
 * largest part of its peak RSS; docs/GLIBC.md §8).
 *
 * The first update copies up to the descriptor.  Its complete stacks
 * show how far below the descriptor each outermost frame (clone3's, in
 * start_thread's caller) has its stack pointer: the least of those
 * distances, less a margin, is cut off the copies of later updates (and
 * lowered if a later update meets a smaller one).
 * Nothing here depends on a glibc layout: it is measured on the process
 * itself.  If a later stack comes out truncated where its copy was cut,
 * the measurement was wrong for it: the cut is dropped for the rest of
 * the session, and that one update says its stack was truncated, as it
 * was.  Threads whose descriptor is not on their stack (the initial
 * thread, threads not made by glibc) are never cut.
 */
#include "dbs_int.h"

/* Kept above the outermost frame's sp: more than the stack words the
 * lock analysis reads above a thread's sp (DBS_PARK_SCAN_BYTES). */
#define STACKTOP_MARGIN 384
/* A distance beyond this is no static TLS block: not learned from. */
#define STACKTOP_MAX_GAP (256u * 1024)

/* Thread th's descriptor, if it lies in the mapping that holds addr. */
static uint64_t descriptor_on_stack(const struct dbs_session *s,
				    const struct dbs_thread *th, uint64_t addr)
{
	if (!s->layout_ok || !s->sizeof_pthread || !th->have_regs || !th->tp || !addr)
		return 0;
	uint64_t pd = arch_thread_area(psvc_arch(s->t), th->tp,
				       (int)s->sizeof_pthread);
	struct psvc_map m;
	if (psvc_map_lookup(s->t, addr, &m, NULL) != 0 || pd < m.start ||
	    pd >= m.end)
		return 0;
	return pd;
}

uint64_t dbs_stacktop_end(const struct dbs_session *s, uint64_t pd, uint64_t sp)
{
	if (!s->stacktop_cut || pd - sp <= s->stacktop_cut)
		return pd;
	return pd - s->stacktop_cut;
}

void dbs_stacktop_learn(struct dbs_session *s, const struct dbs_snapshot *snap)
{
	if (s->stacktop_off)
		return;
	uint64_t least = UINT64_MAX;
	for (size_t i = 0; i < snap->nthreads; i++) {
		const struct dbs_thread *th = &snap->threads[i];
		const struct dbs_stack *st = &th->stack;
		uint64_t pd = descriptor_on_stack(s, th, th->sp);
		if (!pd)
			continue;
		if (s->stacktop_cut && st->end == DBS_STACK_TRUNCATED &&
		    st->copied_to == dbs_stacktop_end(s, pd, th->sp)) {
			/* cut too short for this one: copy whole again */
			s->stacktop_cut = 0;
			s->stacktop_off = true;
			return;
		}
		if (st->end != DBS_STACK_COMPLETE || !st->nframes)
			continue;
		uint64_t outer = st->frames[st->nframes - 1].sp;
		if (!outer || outer > pd || pd - outer > STACKTOP_MAX_GAP ||
		    descriptor_on_stack(s, th, outer) != pd)
			continue;
		if (pd - outer < least)
			least = pd - outer;
	}
	/* an update with no complete stack of a glibc thread teaches
	 * nothing; a smaller distance than known lowers the cut */
	if (least == UINT64_MAX)
		return;
	uint64_t cut = least > STACKTOP_MARGIN ? least - STACKTOP_MARGIN : 0;
	if (!s->stacktop_cut || cut < s->stacktop_cut)
		s->stacktop_cut = cut;
}
