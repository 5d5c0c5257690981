/*
 * memruns.c: exact copies of target memory taken during a capture, next to
 * mem.c's cache of whole 4 KiB blocks.
 *
 * The block cache is right for what is read piecemeal (libthread_db's
 * reads, lock words): one block answers many reads.  It is wasteful for
 * what is copied in bulk: a thread's stack is used from sp up, sp falls
 * anywhere in its page, and keeping that whole page for each of 10 000
 * threads costs tens of MiB for nothing (a watch of 10 000 threads peaked
 * at 141 MiB).  So bulk copies are kept here byte-exact:
 *
 *   kept runs     live until psvc_release_capture(): stacks, and the few
 *                 descriptor words the analysis after the resume reads;
 *                 in an arena of big chunks, pre-faulted before the stop
 *                 when the caller foresees their size (psvc_stop_opts.
 *                 reserve_bytes), so that no page fault lands in the
 *                 freeze;
 *   scratch runs  one set at a time, replaced by the next and unmapped
 *                 when dropped: what is needed only until it has been
 *                 read (the threads' descriptors, for libthread_db),
 *                 so that it does not live on with the stacks.
 *
 * Reads (mem.c) look here first; a read that no single run covers goes to
 * the block cache as before.  Each set is sorted by address once it is
 * complete, and searched by bisection.
 */
#include "psvc_int.h"

#include "array.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#ifndef IOV_MAX
#define IOV_MAX 1024
#endif
#define RUN_CHUNK (1u << 20)	/* arena chunks beyond the reservation */
#define RUN_ALIGN 8

/* The arena chunk that holds p (the last ones are the likeliest). */
static uint32_t chunk_of(const struct psvc_runs *rs, const unsigned char *p)
{
	for (size_t i = rs->nchunks; i > 0; i--) {
		const struct runs_chunk *k = &rs->chunks[i - 1];
		if (p >= k->base && p < k->base + k->len)
			return (uint32_t)(i - 1);
	}
	return UINT32_MAX;
}

static void *runs_mmap(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

static bool arena_chunk_new(struct psvc_runs *rs, size_t len)
{
	if (array_grow(&rs->chunks, &rs->chunks_cap, rs->nchunks + 1,
		       sizeof *rs->chunks, 8))
		return false;
	void *p = runs_mmap(len);
	if (!p)
		return false;
	rs->chunks[rs->nchunks++] = (struct runs_chunk){ p, len, 0 };
	return true;
}

static unsigned char *arena_alloc(struct psvc_runs *rs, size_t len)
{
	len = (len + RUN_ALIGN - 1) & ~(size_t)(RUN_ALIGN - 1);
	struct runs_chunk *k = rs->nchunks ? &rs->chunks[rs->nchunks - 1] : NULL;
	if (!k || k->used + len > k->len) {
		if (!arena_chunk_new(rs, len > RUN_CHUNK ? len : RUN_CHUNK))
			return NULL;
		k = &rs->chunks[rs->nchunks - 1];
	}
	unsigned char *p = k->base + k->used;
	k->used += len;
	return p;
}

void psvc_runs_reserve(struct psvc_target *t, size_t bytes)
{
	if (bytes)
		arena_chunk_new(&t->runs, bytes);
}

static void scratch_unmap(struct psvc_runs *rs)
{
	if (rs->scratch_buf)
		munmap(rs->scratch_buf, rs->scratch_cap);
	rs->scratch_buf = NULL;
	rs->scratch_cap = 0;
}

/* Scratch storage of need bytes at least: more than was reserved is mapped
 * now (the caller has just cleared the set, so no run points into the old
 * storage).  false when it cannot be mapped. */
static bool scratch_room(struct psvc_runs *rs, size_t need)
{
	if (need > rs->scratch_cap) {
		scratch_unmap(rs);
		rs->scratch_buf = runs_mmap(need);
		if (!rs->scratch_buf)
			return false;
		rs->scratch_cap = need;
	}
	return true;
}

/* Room for n entries of size bytes in *list (of *cap; kept for the next
 * copies, its contents not), touched first if prefault; NULL when out of
 * memory. */
static void *kept_list(void **list, size_t *cap, size_t n, size_t size,
		       bool prefault)
{
	if (n > *cap) {
		void *v = malloc(n * size);
		if (!v)
			return NULL;
		if (prefault)
			memset(v, 0, n * size);
		free(*list);
		*list = v;
		*cap = n;
	}
	return *list;
}

/* Room for n parts of runs (kept for the next copies). */
static struct psvc_seg *seg_list(struct psvc_runs *rs, size_t n, bool prefault)
{
	return kept_list((void **)&rs->segs, &rs->segs_cap, n, sizeof *rs->segs,
			 prefault);
}

/* A read list of n runs (kept for the next copies). */
static struct psvc_run *io_list(struct psvc_runs *rs, size_t n, bool prefault)
{
	return kept_list((void **)&rs->io, &rs->io_cap, n, sizeof *rs->io,
			 prefault);
}

void psvc_runs_reserve_scratch(struct psvc_target *t, size_t bytes, size_t nruns,
			       size_t nparts)
{
	struct psvc_runs *rs = &t->runs;
	if (nruns)
		io_list(rs, nruns, true);
	if (nparts)
		seg_list(rs, nparts, true);
	if (bytes <= rs->scratch_cap)
		return;
	scratch_unmap(rs);
	rs->scratch_buf = runs_mmap(bytes);
	rs->scratch_cap = rs->scratch_buf ? bytes : 0;
}

static void set_clear(struct runs_set *s)
{
	s->n = 0;
}

void psvc_runs_free(struct psvc_runs *rs)
{
	for (size_t i = 0; i < rs->nchunks; i++)
		munmap(rs->chunks[i].base, rs->chunks[i].len);
	free(rs->chunks);
	free(rs->kept.v);
	free(rs->scratch.v);
	scratch_unmap(rs);
	free(rs->io);
	free(rs->segs);
	free(rs->retained.v);
	for (size_t i = 0; i < rs->nrblocks; i++)
		free(rs->rblocks[i]);
	free(rs->rblocks);
	psvc_keymap_clear(&rs->by_granule);
	memset(rs, 0, sizeof *rs);
}

static int cmp_run(const void *a, const void *b)
{
	const struct psvc_xrun *x = a, *y = b;
	return (x->addr > y->addr) - (x->addr < y->addr);
}

/*
 * Read the ranges into storage from buf (NULL: the arena), all in one
 * read_runs (the backend batches them, and a live capture's tracer crew
 * splits them), and record what each gave (a prefix; nothing if none) in
 * set s, then sort s.
 */
static void copy_into(struct psvc_target *t, struct runs_set *s,
		      const struct psvc_range *r, size_t n, unsigned char *buf)
{
	struct psvc_run *io = io_list(&t->runs, n, false);
	if (!io || array_grow(&s->v, &s->cap, s->n + n, sizeof *s->v, 256))
		return;
	size_t nio = 0;
	for (size_t i = 0; i < n; i++) {
		if (!r[i].len || r[i].len > UINT32_MAX ||
		    r[i].addr + r[i].len < r[i].addr)
			continue;
		unsigned char *p;
		if (buf) {
			p = buf;
			buf += (r[i].len + RUN_ALIGN - 1) & ~(uint64_t)(RUN_ALIGN - 1);
		} else if (!(p = arena_alloc(&t->runs, (size_t)r[i].len))) {
			break;
		}
		io[nio++] = (struct psvc_run){ r[i].addr, p, (size_t)r[i].len, 0 };
	}
	if (nio)
		t->backend->read_runs(t, io, nio);
	for (size_t k = 0; k < nio; k++)
		if (io[k].done)
			s->v[s->n++] = (struct psvc_xrun){
				io[k].addr, (uint32_t)io[k].done,
				buf ? UINT32_MAX : chunk_of(&t->runs, io[k].buf),
				io[k].buf };
	if (s->n > 1)
		qsort(s->v, s->n, sizeof *s->v, cmp_run);
}

void psvc_copy_exact(struct psvc_target *t, const struct psvc_range *r, size_t n)
{
	if (!t->cache_active || n == 0)
		return;
	/* merged with what is kept already, sorted again as a whole */
	copy_into(t, &t->runs.kept, r, n, NULL);
}

void psvc_copy_needed(struct psvc_target *t, const struct psvc_range *r, size_t n)
{
	if (!t->cache_active || n == 0)
		return;
	struct psvc_range *v = malloc(n * sizeof *v);
	if (!v)
		return;
	size_t nv = 0;
	for (size_t i = 0; i < n; i++)
		if (r[i].len && !psvc_runs_find(t, r[i].addr, r[i].len))
			v[nv++] = r[i];
	if (nv)
		copy_into(t, &t->runs.kept, v, nv, NULL);
	free(v);
}

void psvc_copy_scratch(struct psvc_target *t, const struct psvc_range *r,
		       size_t n)
{
	struct psvc_runs *rs = &t->runs;
	set_clear(&rs->scratch);
	rs->sparse_size = 0;
	rs->nsparse = 0;
	if (!t->cache_active || n == 0)
		return;
	size_t need = 0;
	for (size_t i = 0; i < n; i++)
		if (r[i].len <= UINT32_MAX)
			need += ((size_t)r[i].len + RUN_ALIGN - 1) & ~(size_t)(RUN_ALIGN - 1);
	if (!scratch_room(rs, need))
		return;
	copy_into(t, &rs->scratch, r, n, rs->scratch_buf);
}

/* A struct this far above the kept bytes or less is read with them. */
#define JOIN_MAX 16384

/* The parts of the struct at pd from its first piece on: into *segs
 * (scratch storage at *store, advanced), what lies between pieces
 * dropped.  Returns the bytes they span. */
static uint64_t piece_segs(const struct psvc_piece *pieces, size_t np,
			   struct psvc_seg **segs, unsigned char **store)
{
	uint64_t span = 0;
	for (size_t p = 0; p < np; p++) {
		if (p > 0) {
			uint64_t gap = pieces[p].off - (pieces[p - 1].off + pieces[p - 1].len);
			if (gap)
				*(*segs)++ = (struct psvc_seg){ NULL, gap };
			span += gap;
		}
		*(*segs)++ = (struct psvc_seg){ *store, pieces[p].len };
		*store += (pieces[p].len + RUN_ALIGN - 1) & ~(size_t)(RUN_ALIGN - 1);
		span += pieces[p].len;
	}
	return span;
}

static bool in_scratch(const struct psvc_runs *rs, const unsigned char *b)
{
	return b && b >= rs->scratch_buf && b < rs->scratch_buf + rs->scratch_cap;
}

/* Record what a run of psvc_copy_stacks() gave: its kept prefix (a part
 * in the arena), and, if pieces, each piece read whole (a part in the
 * scratch storage). */
static void record_run(struct psvc_runs *rs, const struct psvc_run *r, bool pieces)
{
	if (!r->segs) {
		if (r->done)
			rs->kept.v[rs->kept.n++] = (struct psvc_xrun){
				r->addr, (uint32_t)r->done, chunk_of(rs, r->buf), r->buf };
		return;
	}
	uint64_t off = 0;	/* of the part in the run */
	for (size_t s = 0; s < r->nsegs; off += r->segs[s].len, s++) {
		unsigned char *b = r->segs[s].buf;
		if (!b || off >= r->done)
			continue;
		bool scratch = in_scratch(rs, b);
		if (scratch && pieces && off + r->segs[s].len <= r->done)
			rs->scratch.v[rs->scratch.n++] = (struct psvc_xrun){
				r->addr + off, (uint32_t)r->segs[s].len, UINT32_MAX, b };
		else if (!scratch)
			rs->kept.v[rs->kept.n++] = (struct psvc_xrun){
				r->addr + off,
				(uint32_t)(r->done - off < r->segs[s].len ? r->done - off
									  : r->segs[s].len),
				chunk_of(rs, b), b };
	}
}

/*
 * The runs of psvc_copy_stacks() that read a stack and the struct above
 * it in one go (their first part is kept, not scratch) and ended short of
 * the struct's last piece (something between them or in the struct could
 * not be read: a guard page, a hole, a page of userfaultfd memory not
 * present): the struct's parts again, on their own, into io from io[nio]
 * on.  Returns how many.
 */
static size_t retry_pieces(const struct psvc_runs *rs, struct psvc_run *io, size_t nio)
{
	size_t add = 0;
	for (size_t i = 0; i < nio; i++) {
		const struct psvc_run *r = &io[i];
		if (!r->segs || in_scratch(rs, r->segs[0].buf) || r->done == r->len)
			continue;
		/* the struct's parts follow the kept part and the gap (the
		 * parts with no storage before the first piece) */
		size_t s = 1;
		uint64_t off = r->segs[0].len;
		while (s < r->nsegs && !r->segs[s].buf)
			off += r->segs[s++].len;
		if (s == r->nsegs)
			continue;
		io[nio + add++] = (struct psvc_run){ r->addr + off, NULL, r->len - (size_t)off,
						     0, r->segs + s, r->nsegs - s };
	}
	return add;
}

/* The read list of psvc_copy_stacks() into io and segs (room checked by
 * the caller); returns its length. */
static size_t stack_runs(struct psvc_runs *rs, const struct psvc_stack_copy *c,
			 size_t n, const struct psvc_piece *pieces, size_t npieces,
			 struct psvc_run *io, struct psvc_seg *sg)
{
	unsigned char *store = rs->scratch_buf;
	size_t nio = 0;
	for (size_t i = 0; i < n; i++) {
		const struct psvc_stack_copy *k = &c[i];
		uint64_t end = k->addr + k->keep;
		bool join = k->keep && k->pd && k->pd + pieces[0].off >= end &&
			    k->pd + pieces[0].off - end <= JOIN_MAX;
		unsigned char *mine = NULL;
		if (k->keep && (k->keep > UINT32_MAX || end < k->addr ||
				!(mine = arena_alloc(rs, (size_t)k->keep))))
			continue;
		if (join) {
			struct psvc_seg *first = sg;
			*sg++ = (struct psvc_seg){ mine, (size_t)k->keep };
			uint64_t gap = k->pd + pieces[0].off - end;
			if (gap)
				*sg++ = (struct psvc_seg){ NULL, (size_t)gap };
			uint64_t span = piece_segs(pieces, npieces, &sg, &store);
			io[nio++] = (struct psvc_run){ k->addr, NULL, (size_t)(k->keep + gap + span),
						       0, first, (size_t)(sg - first) };
			continue;
		}
		if (k->keep)
			io[nio++] = (struct psvc_run){ k->addr, mine, (size_t)k->keep, 0, NULL, 0 };
		if (k->pd) {
			struct psvc_seg *first = sg;
			uint64_t span = piece_segs(pieces, npieces, &sg, &store);
			io[nio++] = (struct psvc_run){ k->pd + pieces[0].off, NULL, (size_t)span,
						       0, first, (size_t)(sg - first) };
		}
	}
	return nio;
}

void psvc_copy_stacks(struct psvc_target *t, const struct psvc_stack_copy *c,
		      size_t n, uint32_t size, const struct psvc_piece *pieces,
		      size_t npieces)
{
	struct psvc_runs *rs = &t->runs;
	set_clear(&rs->scratch);
	rs->sparse_size = 0;
	rs->nsparse = 0;
	if (!t->cache_active || n == 0 || npieces == 0 ||
	    npieces > sizeof rs->sparse / sizeof *rs->sparse)
		return;
	size_t per = 0;
	for (size_t p = 0; p < npieces; p++)
		per += (pieces[p].len + RUN_ALIGN - 1) & ~(size_t)(RUN_ALIGN - 1);
	size_t need = 0;
	for (size_t i = 0; i < n; i++)
		need += c[i].pd ? per : 0;
	if (!scratch_room(rs, need))
		return;
	/* a thread's runs: 2 at most, and a retry of its struct only where
	 * it had 1; its parts: the kept bytes, a gap, and the pieces with
	 * the gaps between them */
	struct psvc_run *io = io_list(rs, 2 * n, false);
	struct psvc_seg *segs = seg_list(rs, n * psvc_stack_copy_parts(npieces), false);
	if (!io || !segs ||
	    array_grow(&rs->kept.v, &rs->kept.cap, rs->kept.n + n, sizeof *rs->kept.v, 256) ||
	    array_grow(&rs->scratch.v, &rs->scratch.cap, n * npieces, sizeof *rs->scratch.v, 256))
		return;
	size_t nio = stack_runs(rs, c, n, pieces, npieces, io, segs);
	if (nio)
		t->backend->read_runs(t, io, nio);
	size_t nretry = retry_pieces(rs, io, nio);
	if (nretry)
		t->backend->read_runs(t, io + nio, nretry);
	for (size_t r = 0; r < nio + nretry; r++)
		/* a retried run's pieces are recorded from its retry */
		record_run(rs, &io[r], r >= nio || io[r].done == io[r].len ||
					       !io[r].segs || in_scratch(rs, io[r].segs[0].buf));
	if (rs->kept.n > 1)
		qsort(rs->kept.v, rs->kept.n, sizeof *rs->kept.v, cmp_run);
	if (rs->scratch.n > 1)
		qsort(rs->scratch.v, rs->scratch.n, sizeof *rs->scratch.v, cmp_run);
	memcpy(rs->sparse, pieces, npieces * sizeof *pieces);
	rs->nsparse = npieces;
	rs->sparse_size = size;
}

size_t psvc_stack_copy_parts(size_t npieces)
{
	return 2 * npieces + 2;
}

void psvc_drop_scratch(struct psvc_target *t)
{
	t->runs.sparse_size = 0;
	t->runs.nsparse = 0;
	set_clear(&t->runs.scratch);
	scratch_unmap(&t->runs);	/* its pages back to the system now */
}

/* A kept run given up with psvc_frozen_done()?  (Its pages may be gone.) */
static bool dead(const struct psvc_runs *rs, const struct psvc_xrun *x)
{
	if (!rs->dead_mark || x->chunk == UINT32_MAX)
		return false;
	return x->chunk < rs->dead_chunk ||
	       (x->chunk == rs->dead_chunk && x->data < rs->dead_mark);
}

/* Run e starts at or below the address *key. */
static bool run_starts_by(const void *e, const void *key)
{
	return ((const struct psvc_xrun *)e)->addr <= *(const uint64_t *)key;
}

/* The run of s that covers [addr, addr + len) entirely, or NULL.  Runs may
 * overlap (a lock word range inside a stack), so a few runs that start
 * before addr are tried, nearest first. */
static const struct psvc_xrun *set_find(const struct psvc_runs *rs,
					const struct runs_set *s, uint64_t addr,
					uint64_t len)
{
	/* the first run that starts above addr */
	size_t lo = array_partition(s->v, s->n, sizeof *s->v, run_starts_by,
				    &addr);
	for (size_t k = lo, tries = 0; k > 0 && tries < 8; k--, tries++) {
		const struct psvc_xrun *x = &s->v[k - 1];
		if (addr - x->addr <= x->len && len <= x->len - (addr - x->addr) &&
		    !dead(rs, x))
			return x;
	}
	return NULL;
}

static const struct psvc_xrun *retained_find(const struct psvc_runs *rs,
					      uint64_t addr, uint64_t len);

const unsigned char *psvc_runs_find(const struct psvc_target *t, uint64_t addr,
				    uint64_t len)
{
	const struct psvc_runs *rs = &t->runs;
	const struct psvc_xrun *x = set_find(rs, &rs->scratch, addr, len);
	if (!x)
		x = set_find(rs, &rs->kept, addr, len);
	if (!x)
		x = retained_find(rs, addr, len);
	return x ? x->data + (addr - x->addr) : NULL;
}

void psvc_copy_pieces(struct psvc_target *t, const uint64_t *addrs, size_t n,
		      uint32_t size, const struct psvc_piece *pieces,
		      size_t npieces)
{
	struct psvc_runs *rs = &t->runs;
	if (npieces > sizeof rs->sparse / sizeof *rs->sparse)
		return;
	struct psvc_range *r = malloc((n * npieces + 1) * sizeof *r);
	if (!r)
		return;
	size_t nr = 0;
	for (size_t i = 0; i < n; i++)
		for (size_t p = 0; p < npieces; p++)
			r[nr++] = (struct psvc_range){ addrs[i] + pieces[p].off,
						       pieces[p].len };
	psvc_copy_scratch(t, r, nr);
	free(r);
	memcpy(rs->sparse, pieces, npieces * sizeof *pieces);
	rs->nsparse = npieces;
	rs->sparse_size = size;
}

bool psvc_runs_sparse(const struct psvc_target *t, uint64_t addr,
		      unsigned char *out, uint64_t len)
{
	const struct psvc_runs *rs = &t->runs;
	if (!rs->sparse_size || len > rs->sparse_size || !rs->nsparse)
		return false;
	/* every piece must be there, copied at exactly its place in a
	 * struct starting at addr (as psvc_copy_pieces() made them) */
	const struct psvc_xrun *x[8];
	for (size_t p = 0; p < rs->nsparse; p++) {
		uint64_t a = addr + rs->sparse[p].off;
		x[p] = set_find(rs, &rs->scratch, a, rs->sparse[p].len);
		if (!x[p] || x[p]->addr != a)
			return false;
	}
	memset(out, 0, len);
	for (size_t p = 0; p < rs->nsparse; p++) {
		uint64_t off = rs->sparse[p].off;
		if (off < len)
			memcpy(out + off, x[p]->data,
			       len - off < rs->sparse[p].len ? len - off
							     : rs->sparse[p].len);
	}
	return true;
}

uint64_t psvc_runs_extent(const struct psvc_target *t, uint64_t addr, uint64_t len)
{
	const struct psvc_xrun *x = set_find(&t->runs, &t->runs.kept, addr, 1);
	if (!x)
		return 0;
	uint64_t avail = x->len - (addr - x->addr);
	return avail < len ? avail : len;
}

uint64_t psvc_runs_bytes(const struct psvc_target *t)
{
	uint64_t sum = 0;
	for (size_t i = 0; i < t->runs.kept.n; i++)
		sum += t->runs.kept.v[i].len;
	return sum;
}

/* ---- giving runs up as soon as they are used ------------------------------------ */

/*
 * The session unwinds the stacks in the order it copied them, and needs
 * each one once (a watch's memory budget: each thread's stack copy is freed
 * as soon as it is unwound): after the run at addr has been used, it and
 * every kept run copied before it are given up, and the arena pages they
 * filled alone go back to the system (MADV_DONTNEED: the peak RSS then
 * holds the stacks not unwound yet, not all of them).  What the analysis
 * after that still needs of them was retained first (psvc_frozen_retain).
 *
 * Pages go back RELEASE_BATCH bytes at a time (and the rest of a chunk
 * once a later chunk is reached): a stack's copy is a few KiB, and one
 * madvise per stack (a system call and a TLB flush each, some 600 at
 * 1000 threads) cost more than the unwinding they follow.  The peak RSS
 * holds at most one batch more.
 */
#define RELEASE_BATCH (256u * 1024)

void psvc_frozen_done(struct psvc_target *t, uint64_t addr)
{
	struct psvc_runs *rs = &t->runs;
	const struct psvc_xrun *x = set_find(rs, &rs->kept, addr, 1);
	if (!x || x->chunk == UINT32_MAX)
		return;
	unsigned char *end = x->data + x->len;
	if (rs->dead_mark && (x->chunk < rs->dead_chunk ||
			      (x->chunk == rs->dead_chunk && end <= rs->dead_mark)))
		return;	/* given up already */
	long pg = sysconf(_SC_PAGESIZE);
	uintptr_t mask = (uintptr_t)(pg > 0 ? pg : 4096) - 1;
	for (size_t c = rs->dead_mark ? rs->dead_chunk : 0; c <= x->chunk; c++) {
		struct runs_chunk *k = &rs->chunks[c];
		unsigned char *from = (rs->dead_mark && c == rs->dead_chunk && rs->freed_to)
					      ? rs->freed_to : k->base;
		unsigned char *to = c < x->chunk ? k->base + k->len
						 : (unsigned char *)((uintptr_t)end & ~mask);
		if (c == x->chunk && to > from && (size_t)(to - from) < RELEASE_BATCH)
			to = from;	/* not a batch yet: with a later one */
		if (to > from)
			madvise(from, (size_t)(to - from), MADV_DONTNEED);
		rs->freed_to = to > from ? to : from;
	}
	rs->dead_chunk = x->chunk;
	rs->dead_mark = end;
}

#define RGRAN_SHIFT 6
#define RBLOCK 65536
#define RETAIN_MAX 256

static const struct psvc_xrun *retained_find(const struct psvc_runs *rs,
					      uint64_t addr, uint64_t len)
{
	const struct psvc_keymap *m = &rs->by_granule;
	uint64_t key = (addr >> RGRAN_SHIFT) + 1;
	for (size_t j = psvc_keymap_find(m, key, SIZE_MAX); j != SIZE_MAX;
	     j = psvc_keymap_find(m, key, j)) {
		const struct psvc_xrun *x = &rs->retained.v[m->vals[j]];
		if (addr >= x->addr && addr - x->addr <= x->len &&
		    len <= x->len - (addr - x->addr))
			return x;
	}
	return NULL;
}

bool psvc_runs_retained(const struct psvc_runs *rs, uint64_t addr, size_t len)
{
	return !len || len > RETAIN_MAX || addr + len < addr ||
	       retained_find(rs, addr, len);
}

void psvc_runs_retain(struct psvc_runs *rs, uint64_t addr, const void *tmp,
		      size_t len)
{
	if (psvc_runs_retained(rs, addr, len))
		return;
	if (!rs->nrblocks || rs->rblock_used + len > RBLOCK) {
		if (array_grow(&rs->rblocks, &rs->rblocks_cap, rs->nrblocks + 1,
			       sizeof *rs->rblocks, 8))
			return;
		unsigned char *b = malloc(RBLOCK);
		if (!b)
			return;
		rs->rblocks[rs->nrblocks++] = b;
		rs->rblock_used = 0;
	}
	if (array_grow(&rs->retained.v, &rs->retained.cap, rs->retained.n + 1,
		       sizeof *rs->retained.v, 256))
		return;
	unsigned char *p = rs->rblocks[rs->nrblocks - 1] + rs->rblock_used;
	rs->rblock_used += (len + RUN_ALIGN - 1) & ~(size_t)(RUN_ALIGN - 1);
	memcpy(p, tmp, len);
	uint32_t idx = (uint32_t)rs->retained.n;
	rs->retained.v[rs->retained.n++] = (struct psvc_xrun){
		addr, (uint32_t)len, UINT32_MAX, p };
	/* every granule it touches leads to it */
	for (uint64_t g = addr >> RGRAN_SHIFT; g <= (addr + len - 1) >> RGRAN_SHIFT; g++)
		if (psvc_keymap_add(&rs->by_granule, g + 1, idx, 1024))
			return;
}
