/*
 * mem.c: reading target memory.  process_vm_readv first, /proc/PID/mem when
 * that is not allowed (some hardened kernels) or forced.  While the target is
 * stopped, reads go through a cache of 4 KiB blocks valid for that stop:
 * libthread_db alone reads each struct pthread several times (GLIBC-NOTES.md
 * §1; uncached it cost ~85 ms for 1000 threads), and psvc_prefetch() fills
 * the blocks of thousands of threads in a few batched syscalls.
 */
#include "psvc_int.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

#define BLK_SHIFT 12
#define BLK_SIZE ((uint64_t)1 << BLK_SHIFT)
#define CHUNK_BLOCKS 256	/* 1 MiB arena chunks */
#ifndef IOV_MAX
#define IOV_MAX 1024
#endif

static int open_proc_mem(struct psvc_target *t)
{
	if (t->mem_fd >= 0)
		return 0;
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/mem", (int)t->mm_tid);
	t->mem_fd = open(path, O_RDONLY | O_CLOEXEC);
	if (t->mem_fd < 0)
		return errno == ENOENT ? -ESRCH : -errno;
	return 0;
}

/* One uncached read of exactly len bytes; 0 or -EFAULT / -ESRCH / ... */
static int read_direct(struct psvc_target *t, uint64_t addr, void *buf,
		       size_t len)
{
	if (len == 0)
		return 0;
	if (!t->use_proc_mem) {
		struct iovec l = { buf, len };
		struct iovec r = { (void *)(uintptr_t)addr, len };
		t->read_syscalls++;
		ssize_t n = process_vm_readv(t->mm_tid, &l, 1, &r, 1, 0);
		if (n == (ssize_t)len)
			return 0;
		if (n >= 0)
			return -EFAULT;
		if (errno == EFAULT || errno == ESRCH || errno == ENOMEM)
			return -errno;
		/* EPERM / ENOSYS: the syscall is refused here, not the
		 * address; /proc/PID/mem follows other rules. */
		t->use_proc_mem = true;
	}
	int err = open_proc_mem(t);
	if (err)
		return err;
	size_t done = 0;
	while (done < len) {
		t->read_syscalls++;
		ssize_t n = pread(t->mem_fd, (char *)buf + done, len - done,
				  (off_t)(addr + done));
		if (n < 0) {
			if (errno == EINTR)
				continue;
			/* EIO: unmapped; ESRCH-like errors once it is gone */
			return errno == EIO ? -EFAULT : -errno;
		}
		if (n == 0)
			return kill(t->pid, 0) == 0 ? -EFAULT : -ESRCH;
		done += (size_t)n;
	}
	return 0;
}

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

static int cache_grow(struct mem_cache *c)
{
	size_t ncap = c->cap ? c->cap * 2 : 1024;
	struct page_slot *ns = calloc(ncap, sizeof *ns);
	if (!ns)
		return -ENOMEM;
	for (size_t i = 0; i < c->cap; i++) {
		if (!c->slots[i].pageno)
			continue;
		size_t j = slot_hash(c->slots[i].pageno, ncap);
		while (ns[j].pageno)
			j = (j + 1) & (ncap - 1);
		ns[j] = c->slots[i];
	}
	free(c->slots);
	c->slots = ns;
	c->cap = ncap;
	return 0;
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
	if (c->nchunks == c->chunks_cap) {
		size_t ncap = c->chunks_cap ? c->chunks_cap * 2 : 16;
		struct arena_chunk *nc = realloc(c->chunks, ncap * sizeof *nc);
		if (!nc)
			return false;
		c->chunks = nc;
		c->chunks_cap = ncap;
	}
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
	int err = read_direct(t, blk << BLK_SHIFT, data, BLK_SIZE);
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

int psvc_read(struct psvc_target *t, uint64_t addr, void *buf, size_t len)
{
	if (len == 0)
		return 0;
	if (addr + len < addr)
		return -EFAULT;
	if (!t->cache_active)
		return read_direct(t, addr, buf, len);
	unsigned char *out = buf;
	while (len) {
		uint64_t blk = addr >> BLK_SHIFT;
		size_t off = (size_t)(addr & (BLK_SIZE - 1));
		size_t n = BLK_SIZE - off < len ? BLK_SIZE - off : len;
		int err;
		const unsigned char *data = cache_block(t, blk, &err);
		if (!data) {
			if (err != -EFAULT)
				return err;
			/* A block that is not readable as a whole (the end
			 * of a mapping on a kernel with bigger pages, or an
			 * odd /proc/PID/mem): the exact bytes may still be. */
			return read_direct(t, addr, out, len);
		}
		memcpy(out, data + off, n);
		out += n;
		addr += n;
		len -= n;
	}
	return 0;
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
	if (len == 0)
		return 0;
	if (addr + len < addr)
		return -EFAULT;
	unsigned char *out = buf;
	while (len) {
		uint64_t blk = addr >> BLK_SHIFT;
		size_t off = (size_t)(addr & (BLK_SIZE - 1));
		size_t n = BLK_SIZE - off < len ? BLK_SIZE - off : len;
		struct page_slot *s = cache_find(&t->cache, blk);
		if (!s || !s->data)
			return -ENODATA;
		memcpy(out, s->data + off, n);
		out += n;
		addr += n;
		len -= n;
	}
	return 0;
}

uint64_t psvc_frozen_extent(struct psvc_target *t, uint64_t addr, uint64_t len)
{
	uint64_t got = 0;
	if (addr + len < addr)
		len = UINT64_MAX - addr;
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
	if (!t->cache_active)
		psvc_cache_free(&t->cache);
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
			if (nb == cap) {
				size_t ncap = cap ? cap * 2 : 1024;
				uint64_t *nbk = realloc(blks, ncap * sizeof *nbk);
				if (!nbk) {
					free(blks);
					return;
				}
				blks = nbk;
				cap = ncap;
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
	struct iovec liov[IOV_MAX], riov[IOV_MAX];
	uint64_t first_blk[IOV_MAX];
	size_t i = 0;
	while (i < nb) {
		size_t niov = 0;
		while (i < nb && niov < IOV_MAX) {
			size_t j = i + 1;
			while (j < nb && blks[j] == blks[j - 1] + 1 &&
			       j - i < CHUNK_BLOCKS)
				j++;
			unsigned char *buf = cache_alloc(&t->cache, j - i);
			if (!buf) {
				free(blks);
				return;
			}
			first_blk[niov] = blks[i];
			liov[niov] = (struct iovec){ buf, (j - i) * BLK_SIZE };
			riov[niov] = (struct iovec){
				(void *)(uintptr_t)(blks[i] << BLK_SHIFT),
				(j - i) * BLK_SIZE };
			niov++;
			i = j;
		}
		/* Issue them; on a partial transfer (an unreadable run),
		 * keep what was read of that run and go on with the next. */
		size_t done = 0;
		while (done < niov && !t->use_proc_mem) {
			t->read_syscalls++;
			ssize_t got = process_vm_readv(t->mm_tid, liov + done,
						       niov - done, riov + done,
						       niov - done, 0);
			if (got < 0 && (errno == EPERM || errno == ENOSYS)) {
				/* refused here: /proc/PID/mem, below */
				t->use_proc_mem = true;
				break;
			}
			if (got < 0 && errno != EFAULT && errno != ENOMEM)
				break;	/* gone: leave to misses */
			size_t k = done;
			size_t left = got > 0 ? (size_t)got : 0;
			while (k < niov && left >= liov[k].iov_len) {
				left -= liov[k].iov_len;
				cache_insert_run(t, first_blk[k], liov[k].iov_base,
						 liov[k].iov_len);
				k++;
			}
			/* run k stopped at an unreadable block: keep the whole
			 * blocks before it (a stack copy is still good up to
			 * there) */
			if (k < niov)
				cache_insert_run(t, first_blk[k], liov[k].iov_base, left);
			done = k + 1;	/* run k failed (or all done) */
		}
		/* /proc/PID/mem: one pread per run; what follows an
		 * unreadable block is left to the misses, block by block */
		for (; done < niov && t->use_proc_mem; done++) {
			if (open_proc_mem(t))
				break;
			t->read_syscalls++;
			ssize_t got = pread(t->mem_fd, liov[done].iov_base,
					    liov[done].iov_len,
					    (off_t)(uintptr_t)riov[done].iov_base);
			/* a short read stops at an unreadable block: the
			 * whole blocks before it are good */
			if (got > 0)
				cache_insert_run(t, first_blk[done],
						 liov[done].iov_base, (size_t)got);
		}
	}
	free(blks);
}

uint64_t psvc_read_syscalls(const struct psvc_target *t)
{
	return t->read_syscalls;
}
