/*
 * capture.c: what a capture copies while the target is stopped, and
 * libthread_db over those copies.
 *
 * session.c's update_body() stops the target, reads the registers, then
 * calls dbs_prefetch_capture() and dbs_gather_tdb(DBS_TDB_PRIME) (or
 * DBS_TDB_ALL) while stopped, and dbs_gather_tdb(DBS_TDB_REST) after the
 * resume.  Everything here reads the copies only once the target runs.
 */
#include "dbs_int.h"

#include <stdlib.h>

/*
 * The memory the analysis will need, read while everything is stopped in
 * as few process_vm_readv calls as possible (shared out among the tracer
 * threads, live_crew.c):
 *
 *   the top of every stack, kept byte-exact (memruns.c) for the unwinder:
 *     from sp (and the red zone below it) up to stack_bytes, clipped to
 *     the end of the mapping that holds sp and to the thread's own struct
 *     pthread (at the top of a glibc stack), and, once learned, to the
 *     static TLS block under it (stacktop.c: the unwinder never reads
 *     there; --tls and --errno copy the variables they read apart, tls.c);
 *   every struct pthread, in the pieces libthread_db's descriptors name
 *     (or whole if it asks for another field), as the scratch set:
 *     libthread_db reads them after the resume (dbs_gather_tdb), or, with
 *     --tls, --errno or --keys, whose readers follow the pointers they
 *     hold into the live process, during the stop; build_snapshot() keeps
 *     the one word of each that the analysis reads later (the cleanup
 *     record's pointer, condwait.c) and lets the set go before unwinding.
 *
 * A thread's stack top and its descriptor just above it are one range of
 * the target, read in one go (psvc_copy_stacks): what lies between them
 * (the static TLS) is read and dropped, which costs less than a second
 * range per thread.
 */
bool dbs_tdb_in_freeze(const struct dbs_session *s)
{
	return s->opts.ntls || s->opts.want_errno || s->opts.want_keys;
}

static uint64_t descriptor_addr(const struct dbs_session *s,
				const struct psvc_task *k)
{
	return arch_thread_area(psvc_arch(s->t), k->tp, (int)s->sizeof_pthread);
}

/* Task k's descriptor where the checked layout puts it, with or without
 * libthread_db (whose version may not serve the target's glibc): a glibc
 * thread's stack copy ends there.  0 if not known. */
static uint64_t stack_descriptor(const struct dbs_session *s, const struct psvc_task *k)
{
	if (!s->layout_ok || !s->sizeof_pthread || !k->tp ||
	    !(k->flags & PSVC_TASK_HAVE_REGS))
		return 0;
	return descriptor_addr(s, k);
}

/* Task k's descriptor is copied for libthread_db. */
static bool have_descriptor(const struct dbs_session *s, const struct psvc_task *k)
{
	return s->ta && stack_descriptor(s, k);
}

/* The stack range of task k to copy, into cap->stack_lo/hi and *ret_lo
 * (the red zone below sp included); false if there is none. */
static bool stack_range(struct dbs_session *s, const struct psvc_task *k,
			uint64_t pd, struct tdb_result *cap, uint64_t *ret_lo)
{
	uint64_t sp = arch_sp(psvc_arch(s->t), k->gregs);
	uint64_t end = sp + s->opts.stack_bytes;
	if (end < sp)
		end = UINT64_MAX;
	struct psvc_map m;
	uint64_t lo = sp;
	if (psvc_map_lookup(s->t, sp, &m, NULL) == 0) {
		if (m.end < end)
			end = m.end;
		/* and the red zone below sp (x86_64: 128 bytes a leaf
		 * function may use without moving sp; libdwfl's
		 * frame-pointer fallback reads there too) */
		unsigned below = psvc_arch(s->t)->stack_below_sp;
		lo = sp - m.start >= below ? sp - below : m.start;
	} else {
		/* a stack mapped after the maps were read (a thread born
		 * during the stop): one page, nothing assumed */
		end = (sp | (psvc_arch(s->t)->min_page_size - 1)) + 1;
	}
	/* up to its descriptor, read apart; and the static TLS under it,
	 * once learned (stacktop.c) */
	if (pd > sp && pd < end)
		end = dbs_stacktop_end(s, pd, sp);
	cap->stack_lo = sp;
	cap->stack_hi = end;
	*ret_lo = lo;
	return true;
}

/* Whether descriptors are copied in pieces (the fields libthread_db's
 * descriptors name, tdbcheck.c): unless a field unknown to the layout
 * check was asked for. */
bool dbs_descriptor_pieces(const struct dbs_session *s)
{
	return s->desc_pieces.n && !psvc_tdb_unknown_field(s->t);
}

/* The pieces a descriptor is copied in (*ret_n of them): the session's,
 * or *whole, the struct whole. */
static const struct psvc_piece *copy_pieces(const struct dbs_session *s,
					    struct psvc_piece *whole,
					    uint32_t *ret_n)
{
	if (dbs_descriptor_pieces(s)) {
		*ret_n = s->desc_pieces.n;
		return s->desc_pieces.v;
	}
	*whole = (struct psvc_piece){ 0, s->sizeof_pthread };
	*ret_n = 1;
	return whole;
}

/* Every descriptor, as the scratch set: in pieces or whole. */
void dbs_copy_descriptors(struct dbs_session *s)
{
	struct psvc_target *t = s->t;
	size_t n = psvc_ntasks(t), nd = 0;
	uint64_t *pd = malloc((n + 1) * sizeof *pd);
	if (!pd)
		return;
	for (size_t i = 0; i < n; i++) {
		struct psvc_task *k = psvc_task_at(t, i);
		if (have_descriptor(s, k))
			pd[nd++] = descriptor_addr(s, k);
	}
	struct psvc_piece whole;
	uint32_t npieces;
	const struct psvc_piece *pieces = copy_pieces(s, &whole, &npieces);
	psvc_copy_pieces(t, pd, nd, s->sizeof_pthread, pieces, npieces);
	free(pd);
}

/* The bytes the copy of one descriptor takes (pieces 8-aligned). */
size_t dbs_descriptor_copy_bytes(const struct dbs_session *s)
{
	if (!dbs_descriptor_pieces(s))
		return (s->sizeof_pthread + 7) & ~(size_t)7;
	size_t sum = 0;
	for (uint32_t p = 0; p < s->desc_pieces.n; p++)
		sum += (s->desc_pieces.v[p].len + 7) & ~(size_t)7;
	return sum;
}

/* The parts of one thread's ranges in dbs_prefetch_capture()'s copy. */
size_t dbs_copy_parts(const struct dbs_session *s)
{
	return psvc_stack_copy_parts(dbs_descriptor_pieces(s) ? s->desc_pieces.n : 1);
}

void dbs_prefetch_capture(struct dbs_session *s, struct tdb_result *cap)
{
	struct psvc_target *t = s->t;
	size_t n = psvc_ntasks(t), nc = 0;
	struct psvc_stack_copy *c = calloc(n + 1, sizeof *c);
	if (!c)
		return;
	for (size_t i = 0; i < n; i++) {
		struct psvc_task *k = psvc_task_at(t, i);
		if (!(k->flags & PSVC_TASK_HAVE_REGS))
			continue;
		uint64_t top = stack_descriptor(s, k);
		uint64_t pd = have_descriptor(s, k) ? top : 0;
		uint64_t lo = 0;
		if (s->unwinder && !stack_range(s, k, top, &cap[i], &lo))
			lo = 0;
		if (!lo && !pd)
			continue;
		c[nc++] = (struct psvc_stack_copy){ lo, lo ? cap[i].stack_hi - lo : 0, pd };
	}
	struct psvc_piece whole;
	uint32_t npieces;
	const struct psvc_piece *pieces = copy_pieces(s, &whole, &npieces);
	psvc_copy_stacks(t, c, nc, s->sizeof_pthread, pieces, npieces);
	free(c);
}

/* What the exact copies of the next capture will take (memruns.c), from
 * the stack pointers the scan read in /proc/TID/syscall: room for them is
 * faulted in before the stop rather than during it.  A little under is
 * fine (the rest faults in), over would only add to the peak RSS.  A lean
 * scan read the line of an even sample of the tasks (psvc_scan_lean): the
 * sample's sum stands for all of them. */
size_t dbs_expected_copy_bytes(struct dbs_session *s)
{
	struct psvc_target *t = s->t;
	if (!s->unwinder)
		return 0;
	size_t sum = 0, nread = 0, nvalid = 0;
	for (size_t i = 0, n = psvc_ntasks(t); i < n; i++) {
		const struct psvc_taskinfo *ti = &psvc_task_at(t, i)->info;
		struct psvc_map m;
		nvalid += ti->valid;
		nread += ti->valid && ti->sc_read;
		if (ti->sc_kind == PSVC_SC_RUNNING || !ti->sc_sp ||
		    psvc_map_lookup(t, ti->sc_sp, &m, NULL) != 0)
			continue;
		uint64_t len = m.end - ti->sc_sp;
		if (len > s->opts.stack_bytes)
			len = s->opts.stack_bytes;
		else if (s->layout_ok && len > s->sizeof_pthread + s->stacktop_cut)
			len -= s->sizeof_pthread + s->stacktop_cut;	/* not copied */
		sum += (size_t)len + 128 + 16;
	}
	if (nread && nread < nvalid)
		sum = (size_t)((double)sum * (double)nvalid / (double)nread);
	return sum;
}


/* libthread_db's identity of task i into res[i]. */
static void tdb_one(struct dbs_session *s, size_t i, struct tdb_result *res)
{
	struct psvc_target *t = s->t;
	struct psvc_task *k = psvc_task_at(t, i);
	res[i].err = TD_NOTHR;
	res[i].step = NULL;
	res[i].gathered = true;
	if (!(k->flags & PSVC_TASK_HAVE_REGS))
		return;
	if (!k->info.ns_tid && !psvc_same_pidns(t)) {
		/* its TID in the target's namespace is unknown: any number
		 * given to libthread_db would be a guess */
		res[i].step = "td_ta_map_lwp2thr (the thread's TID in the "
			      "target's namespace is unknown)";
		return;
	}
	uint64_t misses = psvc_frozen_misses(t);
	td_thrhandle_t th;
	lwpid_t lwp = k->info.ns_tid ? k->info.ns_tid : k->tid;
	psvc_tdb_budget(t, TDB_READ_BUDGET);
	td_err_e e = s->lib.td_ta_map_lwp2thr(s->ta, lwp, &th);
	if (e != TD_OK) {
		res[i].err = e;
		res[i].step = "td_ta_map_lwp2thr";
	} else {
		res[i].th = th;
		res[i].have_th = true;
		psvc_tdb_budget(t, TDB_READ_BUDGET);
		td_thrinfo_t ti;
		e = s->lib.td_thr_get_info(&th, &ti);
		res[i].ti.ti_tid = ti.ti_tid;
		res[i].ti.ti_lid = ti.ti_lid;
		res[i].ti.ti_state = ti.ti_state;
		res[i].ti.ti_startfunc = ti.ti_startfunc;
		res[i].err = e;
		res[i].step = "td_thr_get_info";
	}
	if (e != TD_OK && psvc_frozen_misses(t) != misses)
		/* after the resume, it read what the stop did not copy */
		res[i].step = res[i].have_th
			? "td_thr_get_info (memory the stop did not copy)"
			: "td_ta_map_lwp2thr (memory the stop did not copy)";
}

void dbs_gather_tdb(struct dbs_session *s, struct tdb_result *res,
		    enum dbs_tdb_which which)
{
	struct psvc_target *t = s->t;
	size_t n = psvc_ntasks(t);
	bool primed = false;
	for (size_t i = 0; i < n; i++) {
		struct psvc_task *k = psvc_task_at(t, i);
		if (which == DBS_TDB_REST && res[i].gathered)
			continue;
		if (which == DBS_TDB_PRIME && have_descriptor(s, k)) {
			if (primed)
				continue;	/* after the resume */
			primed = true;
		}
		if (which != DBS_TDB_REST && (i & 63) == 63 && psvc_check_freeze(t))
			return;	/* the caller sees it too and aborts */
		tdb_one(s, i, res);
	}
}
