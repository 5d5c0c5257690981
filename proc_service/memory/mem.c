/*
 * mem.c: reading target memory, through the backend's read and read_runs.
 * While the target is stopped, reads go through a cache of 4 KiB blocks
 * valid for that stop: libthread_db alone reads each struct pthread several
 * times (docs/GLIBC.md §1; uncached it cost ~85 ms for 1000 threads), and
 * psvc_prefetch() fills the blocks of thousands of threads in a few
 * batched reads.  After the resume the same cache answers "as it was at
 * the stop" (psvc_read_frozen), never the live process.
 */
#include "psvc_int.h"

#include "array.h"
#include "hashtab.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define BLK_SHIFT 12
#define BLK_SIZE ((uint64_t)1 << BLK_SHIFT)
#define CHUNK_BLOCKS 256	/* 1 MiB arena chunks */
#ifndef IOV_MAX
#define IOV_MAX 1024
#endif

/* ---- the block cache ----------------------------------------------------- */

static size_t slot_hash(uint64_t key, size_t cap)
{
	return (size_t)((key * 0x9E3779B97F4A7C15ull) >> 17) & (cap - 1);
}

static struct page_slot *cache_find(struct mem_cache *c, uint64_t blk)
{
	if (!c->cap)
		return NULL;
	uint64_t key = blk + 1;
	for (size_t i = slot_hash(key, c->cap);; i = (i + 1) & (c->cap - 1)) {
		if (c->slots[i].pageno == key)
			return &c->slots[i];
		if (c->slots[i].pageno == 0)
			return NULL;
	}
}

static size_t page_home(const void *slot, size_t cap)
{
	return slot_hash(((const struct page_slot *)slot)->pageno, cap);
}

static int cache_grow(struct mem_cache *c)
{
	return hashtab_grow(&c->slots, &c->cap, sizeof *c->slots, 1024,
			    page_home);
}

static int cache_insert(struct mem_cache *c, uint64_t blk, unsigned char *data)
{
	if ((c->n + 1) * 2 > c->cap && cache_grow(c))
		return -ENOMEM;
	uint64_t key = blk + 1;
	size_t i = slot_hash(key, c->cap);
	while (c->slots[i].pageno && c->slots[i].pageno != key)
		i = (i + 1) & (c->cap - 1);
	if (!c->slots[i].pageno)
		c->n++;
	c->slots[i].pageno = key;
	c->slots[i].data = data;
	return 0;
}

static bool chunk_new(struct mem_cache *c, size_t nblocks)
{
	if (array_grow(&c->chunks, &c->chunks_cap, c->nchunks + 1,
		       sizeof *c->chunks, 16))
		return false;
	void *p = mmap(NULL, nblocks * BLK_SIZE, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (p == MAP_FAILED)
		return false;
	c->chunks[c->nchunks++] = (struct arena_chunk){ p, nblocks, 0 };
	return true;
}

/* nblocks contiguous blocks of storage from the arena. */
static unsigned char *cache_alloc(struct mem_cache *c, size_t nblocks)
{
	struct arena_chunk *k = c->nchunks ? &c->chunks[c->nchunks - 1] : NULL;
	if (!k || k->used + nblocks > k->nblocks) {
		if (!chunk_new(c, nblocks > CHUNK_BLOCKS ? nblocks : CHUNK_BLOCKS))
			return NULL;
		k = &c->chunks[c->nchunks - 1];
	}
	unsigned char *p = k->base + k->used * BLK_SIZE;
	k->used += nblocks;
	return p;
}

void psvc_cache_reserve(struct mem_cache *c, size_t nblocks)
{
	if (!nblocks)
		return;
	chunk_new(c, nblocks);
	/* and a hash table that will not need to grow while stopped */
	while (c->cap < nblocks * 2 + 64)
		if (cache_grow(c))
			break;
}

void psvc_cache_free(struct mem_cache *c)
{
	for (size_t i = 0; i < c->nchunks; i++)
		munmap(c->chunks[i].base, c->chunks[i].nblocks * BLK_SIZE);
	free(c->chunks);
	free(c->slots);
	memset(c, 0, sizeof *c);
}

void psvc_cache_begin(struct psvc_target *t)
{
	psvc_cache_free(&t->cache);
	psvc_runs_free(&t->runs);
	t->cache_active = true;
}

void psvc_cache_end(struct psvc_target *t)
{
	t->cache_active = false;
}

/* The cached block blk, reading it on a miss.  NULL: unreadable. */
static const unsigned char *cache_block(struct psvc_target *t, uint64_t blk,
					int *ret_err)
{
	struct page_slot *s = cache_find(&t->cache, blk);
	if (s) {
		*ret_err = s->data ? 0 : -EFAULT;
		return s->data;
	}
	unsigned char *data = cache_alloc(&t->cache, 1);
	if (!data) {
		*ret_err = -ENOMEM;
		return NULL;
	}
	int err = t->backend->read(t, blk << BLK_SHIFT, data, BLK_SIZE);
	if (err == -ESRCH || err == -ENOMEM) {
		*ret_err = err;
		return NULL;
	}
	/* The block is wasted in the arena on error; bounded by the number
	 * of distinct unreadable blocks asked for. */
	if (cache_insert(&t->cache, blk, err ? NULL : data)) {
		*ret_err = -ENOMEM;
		return NULL;
	}
	*ret_err = err;
	return err ? NULL : data;
}

/*
 * Copy [addr, addr + len) out of the stop's cache, block by block.  fill:
 * a block not cached yet is read from the target now (during the stop);
 * otherwise it is -ENODATA (after the resume, "as it was at the stop").
 */
static int cached_copy(struct psvc_target *t, uint64_t addr,
		       unsigned char *out, size_t len, bool fill)
{
	if (len == 0)
		return 0;
	if (addr + len < addr)
		return -EFAULT;
	const unsigned char *exact = psvc_runs_find(t, addr, len);
	if (exact) {
		memcpy(out, exact, len);
		return 0;
	}
	if (psvc_runs_sparse(t, addr, out, len))
		return 0;	/* a whole descriptor, from its pieces */
	while (len) {
		uint64_t blk = addr >> BLK_SHIFT;
		size_t off = (size_t)(addr & (BLK_SIZE - 1));
		size_t n = BLK_SIZE - off < len ? BLK_SIZE - off : len;
		int err = -ENODATA;
		const unsigned char *data;
		if (fill) {
			data = cache_block(t, blk, &err);
		} else {
			const struct page_slot *s = cache_find(&t->cache, blk);
			data = s ? s->data : NULL;
		}
		if (!data) {
			/* A block that is not readable as a whole (the end
			 * of a mapping on a kernel with bigger pages, or an
			 * odd /proc/PID/mem): the exact bytes may still be. */
			if (fill && err == -EFAULT)
				return t->backend->read(t, addr, out, len);
			return err;
		}
		memcpy(out, data + off, n);
		out += n;
		addr += n;
		len -= n;
	}
	return 0;
}

void psvc_cache_bypass(struct psvc_target *t, bool on)
{
	t->cache_bypass = on;
}

void psvc_frozen_reads(struct psvc_target *t, bool on)
{
	t->frozen_reads = on;
}

uint64_t psvc_frozen_misses(const struct psvc_target *t)
{
	return t->frozen_misses;
}

int psvc_read(struct psvc_target *t, uint64_t addr, void *buf, size_t len)
{
	if (t->frozen_reads && !t->cache_active) {
		int err = cached_copy(t, addr, buf, len, false);
		if (err)
			t->frozen_misses++;
		return err;
	}
	if (!t->cache_active || t->cache_bypass) {
		if (len == 0)
			return 0;
		if (addr + len < addr)
			return -EFAULT;
		return t->backend->read(t, addr, buf, len);
	}
	return cached_copy(t, addr, buf, len, true);
}

int psvc_read_string(struct psvc_target *t, uint64_t addr, char *buf,
		     size_t max)
{
	if (max == 0)
		return -EINVAL;
	size_t got = 0;
	while (got + 1 < max) {
		/* read up to the end of the current block at most, so that
		 * a string at the end of a mapping is still readable */
		size_t room = (size_t)(BLK_SIZE - ((addr + got) & (BLK_SIZE - 1)));
		size_t n = max - 1 - got < room ? max - 1 - got : room;
		if (n > 256)
			n = 256;
		int err = psvc_read(t, addr + got, buf + got, n);
		if (err) {
			if (!got)
				return err;
			buf[got] = '\0';
			return 1;	/* the rest is unreadable */
		}
		char *nul = memchr(buf + got, '\0', n);
		if (nul)
			return 0;
		got += n;
	}
	buf[got] = '\0';
	return 1;
}

int psvc_read_frozen(struct psvc_target *t, uint64_t addr, void *buf,
		     size_t len)
{
	return cached_copy(t, addr, buf, len, false);
}

void psvc_frozen_retain(struct psvc_target *t, uint64_t addr, size_t len)
{
	if (psvc_runs_retained(&t->runs, addr, len))
		return;
	unsigned char tmp[256];	/* the most a retained copy holds */
	if (len > sizeof tmp || psvc_read_frozen(t, addr, tmp, len))
		return;	/* not copied at the stop: nothing to keep */
	psvc_runs_retain(&t->runs, addr, tmp, len);
}

uint64_t psvc_frozen_extent(struct psvc_target *t, uint64_t addr, uint64_t len)
{
	uint64_t got = 0;
	if (addr + len < addr)
		len = UINT64_MAX - addr;
	uint64_t exact = psvc_runs_extent(t, addr, len);
	if (exact)
		return exact;	/* a stack is one run */
	while (got < len) {
		uint64_t a = addr + got;
		struct page_slot *s = cache_find(&t->cache, a >> BLK_SHIFT);
		if (!s || !s->data)
			break;
		uint64_t n = BLK_SIZE - (a & (BLK_SIZE - 1));
		got += n < len - got ? n : len - got;
	}
	return got;
}

void psvc_release_capture(struct psvc_target *t)
{
	if (!t->cache_active) {
		psvc_cache_free(&t->cache);
		psvc_runs_free(&t->runs);
	}
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* Cache the whole blocks of len bytes read into data for blocks from
 * first on (a partial last block is left out: it was not all read). */
static void cache_insert_run(struct psvc_target *t, uint64_t first,
			     void *data, size_t len)
{
	for (size_t b = 0; b < len / BLK_SIZE; b++)
		cache_insert(&t->cache, first + b,
			     (unsigned char *)data + b * BLK_SIZE);
}

const char *psvc_mem_hazard(struct psvc_target *t, uint64_t addr, uint64_t len)
{
	return t->backend->mem_hazard ? t->backend->mem_hazard(t, addr, len) : NULL;
}

/* A run that stopped at a block a read would have waited on (a missing
 * page registered with userfaultfd: live_uffd.c): that block is known
 * unreadable, and the blocks after it are read one at a time (such memory
 * is rare, and what lies beside a missing page, such as the mutex after
 * it, is still wanted). */
static void salvage_run(struct psvc_target *t, uint64_t first, const struct psvc_run *run)
{
	size_t bad = run->done / BLK_SIZE, nblk = run->len / BLK_SIZE;
	if (bad >= nblk || !psvc_mem_hazard(t, run->addr + bad * BLK_SIZE, BLK_SIZE))
		return;
	cache_insert(&t->cache, first + bad, NULL);
	for (size_t b = bad + 1; b < nblk; b++) {
		unsigned char *data = (unsigned char *)run->buf + b * BLK_SIZE;
		int err = t->backend->read(t, run->addr + b * BLK_SIZE, data, BLK_SIZE);
		if (err == -ESRCH)
			return;
		cache_insert(&t->cache, first + b, err ? NULL : data);
	}
}

void psvc_prefetch(struct psvc_target *t, const struct psvc_range *r,
		   size_t n)
{
	if (!t->cache_active || n == 0)
		return;
	/* Collect the missing blocks, sorted and unique. */
	size_t nb = 0, cap = 0;
	uint64_t *blks = NULL;
	for (size_t i = 0; i < n; i++) {
		if (!r[i].len || r[i].addr + r[i].len < r[i].addr)
			continue;
		uint64_t first = r[i].addr >> BLK_SHIFT;
		uint64_t last = (r[i].addr + r[i].len - 1) >> BLK_SHIFT;
		if (last - first > 4096)	/* 16 MiB per range is plenty */
			last = first + 4096;
		for (uint64_t b = first; b <= last; b++) {
			if (cache_find(&t->cache, b))
				continue;
			if (array_grow(&blks, &cap, nb + 1, sizeof *blks, 1024)) {
				free(blks);
				return;
			}
			blks[nb++] = b;
		}
	}
	if (nb == 0) {
		/* everything asked for is cached already (qsort must not be
		 * given blks == NULL) */
		free(blks);
		return;
	}
	qsort(blks, nb, sizeof *blks, cmp_u64);
	size_t nu = 0;
	for (size_t k = 0; k < nb; k++)
		if (nu == 0 || blks[k] != blks[nu - 1])
			blks[nu++] = blks[k];
	nb = nu;

	/* Runs of consecutive blocks become one remote iovec each. */
	struct psvc_run runs[IOV_MAX];
	uint64_t first_blk[IOV_MAX];
	size_t i = 0;
	while (i < nb) {
		size_t nrun = 0;
		while (i < nb && nrun < IOV_MAX) {
			size_t j = i + 1;
			while (j < nb && blks[j] == blks[j - 1] + 1 &&
			       j - i < CHUNK_BLOCKS)
				j++;
			unsigned char *buf = cache_alloc(&t->cache, j - i);
			if (!buf) {
				free(blks);
				return;
			}
			first_blk[nrun] = blks[i];
			runs[nrun++] = (struct psvc_run){ blks[i] << BLK_SHIFT, buf,
							  (j - i) * BLK_SIZE, 0 };
			i = j;
		}
		/* what could be read of each run is cached (whole blocks) */
		t->backend->read_runs(t, runs, nrun);
		for (size_t k = 0; k < nrun; k++) {
			cache_insert_run(t, first_blk[k], runs[k].buf, runs[k].done);
			if (runs[k].done < runs[k].len)
				salvage_run(t, first_blk[k], &runs[k]);
		}
	}
	free(blks);
}

uint64_t psvc_hazard_reads(const struct psvc_target *t, uint64_t *ret_first)
{
	if (ret_first)
		*ret_first = t->hazard_first;
	return t->hazard_reads;
}

uint64_t psvc_read_syscalls(const struct psvc_target *t)
{
	return t->read_syscalls;
}
