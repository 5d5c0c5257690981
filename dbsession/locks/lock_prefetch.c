/*
 * lock_prefetch.c: the only lock work done while the target is stopped.
 *
 * One batched read (psvc_prefetch) of the words around the futex every
 * blocked thread sleeps on, and, for the rare thread glibc parked on its
 * own stack, a second one of what its callee-saved registers and the
 * stack words just above sp point to (lock_park.c).  Nothing else is
 * read; idle threads add nothing when they sleep on the same object.
 * Everything after the resume reads only these copies
 * (psvc_read_frozen), so the analysis sees the words as they were at the
 * stop.
 */
#include "locks_int.h"

#include "array.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* How far below / above the futex word the objects it may belong to reach:
 * cond (+44) and mutex/rwlock (+56). */
#define WORDS_BELOW 48
#define WORDS_ABOVE 64
/* Bytes read at each candidate of a park: from &mutex->__kind back to the
 * mutex start, and a mutex beyond it. */
#define PARK_CANDIDATE_BYTES 48

struct ranges {
	struct psvc_range *v;
	size_t n, cap;
};

static int add_range(struct ranges *r, uint64_t addr, uint64_t len)
{
	if (array_grow(&r->v, &r->cap, r->n + 1, sizeof *r->v, 64))
		return -ENOMEM;
	r->v[r->n++] = (struct psvc_range){ addr, len };
	return 0;
}

/* The wait of task k, decoded as build_snapshot() will after the resume. */
static void task_wait(const struct arch_desc *a, const struct psvc_task *k,
		      struct dbs_thread *th, struct dbs_wait *wt)
{
	memset(th, 0, sizeof *th);
	th->have_regs = true;
	th->stopped = true;
	th->observed = k->flags & PSVC_TASK_OBSERVED;
	arch_decode_syscall(a, k->gregs,
			    k->info.sc_kind == PSVC_SC_IN_SYSCALL ? k->info.sc_nr : -1,
			    &th->syscall);
	th->sp = arch_sp(a, k->gregs);
	th->proc_valid = k->info.valid;
	th->proc_before_stop = k->info.before_stop;
	memcpy(th->wchan, k->info.wchan, sizeof th->wchan);
	dbs_wait_of(a, th, wt);
}

/* Round one: the words around every futex; the tasks that may be parked
 * into parked[]. */
static int futex_ranges(struct psvc_target *t, struct ranges *r,
			size_t *parked, size_t *ret_npark)
{
	const struct arch_desc *a = psvc_arch(t);
	size_t nt = psvc_ntasks(t), npark = 0;
	for (size_t i = 0; i < nt; i++) {
		struct psvc_task *k = psvc_task_at(t, i);
		if (!(k->flags & PSVC_TASK_HAVE_REGS))
			continue;
		struct dbs_thread th;
		struct dbs_wait wt;
		task_wait(a, k, &th, &wt);
		if (!wt.valid)
			continue;
		uint64_t lo = wt.uaddr > WORDS_BELOW ? wt.uaddr - WORDS_BELOW : 0;
		if (add_range(r, lo, wt.uaddr - lo + WORDS_ABOVE))
			return -ENOMEM;
		if (dbs_wait_maybe_park(&th, &wt)) {
			parked[npark++] = i;
			if (add_range(r, th.sp, DBS_PARK_SCAN_BYTES))
				return -ENOMEM;
		}
	}
	*ret_npark = npark;
	return 0;
}

/* Round two: what a parked task's registers and stack top point to
 * (candidates for the mutex it was acquiring). */
static int park_ranges(struct psvc_target *t, const struct dbs_glibc_locks *L,
		       const size_t *parked, size_t npark, struct ranges *r)
{
	const struct arch_desc *a = psvc_arch(t);
	uint64_t offs[DBS_PARK_NOFFS];
	dbs_park_offsets(L, offs);
	uint64_t back = offs[DBS_PARK_NOFFS - 1];
	for (size_t p = 0; p < npark; p++) {
		struct psvc_task *k = psvc_task_at(t, parked[p]);
		uint64_t sp = arch_sp(a, k->gregs);
		uint64_t stack[DBS_PARK_SCAN_BYTES / 8];
		bool have_stack = psvc_read(t, sp, stack, sizeof stack) == 0;
		uint64_t vals[16 + DBS_PARK_SCAN_BYTES / 8];
		size_t nv = dbs_park_values(a, k->gregs, have_stack ? stack : NULL,
					    vals, sizeof vals / sizeof *vals);
		for (size_t v = 0; v < nv; v++) {
			if (!dbs_park_candidate(a, vals[v], sp))
				continue;
			if (add_range(r, vals[v] - back, back + PARK_CANDIDATE_BYTES))
				return -ENOMEM;
		}
	}
	return 0;
}

void dbs_locks_prefetch(struct dbs_session *s)
{
	struct psvc_target *t = s->t;
	struct ranges r = { 0 };
	size_t npark = 0;
	size_t *parked = malloc((psvc_ntasks(t) ? psvc_ntasks(t) : 1) * sizeof *parked);
	if (!parked || futex_ranges(t, &r, parked, &npark))
		goto out;
	psvc_prefetch(t, r.v, r.n);
	r.n = 0;
	/* the mutex layout of its glibc (glibc_locks.c); none verified: no
	 * mutex is decoded later, so there is nothing to read for one */
	const struct dbs_glibc_locks *L =
		dbs_glibc_locks_for(s->glibc_version, psvc_arch(t), NULL);
	if (!L || park_ranges(t, L, parked, npark, &r))
		goto out;
	psvc_prefetch(t, r.v, r.n);
out:
	free(parked);
	free(r.v);
}
