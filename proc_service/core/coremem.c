/*
 * coremem.c: the process's memory as the core holds it.  A byte comes
 * from its PT_LOAD segment's data in the file (a plain core, mapped) or
 * from what the streaming pass kept (a compressed core, corekeep.c), or
 * the read fails and says why: a core's missing bytes are not zeros (the
 * kernel leaves out whole mappings by coredump_filter, gcore those it can
 * read back from their files, and a truncated core loses its tail), and a
 * lock word or a pointer read as zero would be a lie in the report.
 */
#include "core_int.h"
#include "psvc_int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

static int keep_vs_addr(const void *key, const void *e)
{
	const struct core_keep *k = e;
	return psvc_core_addr_vs(*(const uint64_t *)key, k->lo, k->hi);
}

/* The kept range holding addr, or NULL. */
static const struct core_keep *keep_for(const struct psvc_core *c,
					uint64_t addr)
{
	if (!c->nkeeps)
		return NULL;
	return bsearch(&addr, c->keeps, c->nkeeps, sizeof *c->keeps,
		       keep_vs_addr);
}

/* Copy n bytes at addr out of kept range k (all inside it). */
static void keep_copy(const struct core_keep *k, uint64_t addr,
		      unsigned char *out, uint64_t n)
{
	while (n) {
		size_t b = (size_t)((addr >> CORE_BLK_SHIFT) -
				    (k->lo >> CORE_BLK_SHIFT));
		uint64_t in = addr & (CORE_BLK - 1);
		uint64_t piece = CORE_BLK - in < n ? CORE_BLK - in : n;
		if (k->blocks[b])
			memcpy(out, k->blocks[b] + in, piece);
		else
			memset(out, 0, piece);	/* a block the core has as zeros */
		out += piece;
		addr += piece;
		n -= piece;
	}
}

static void miss_at(struct psvc_core_miss *m, enum psvc_core_miss_kind kind,
		    uint64_t addr, uint64_t lo, uint64_t hi, const char *path)
{
	if (!m)
		return;
	*m = (struct psvc_core_miss){ .kind = kind, .addr = addr,
				      .seg_start = lo, .seg_end = hi,
				      .path = path };
}

/*
 * Let go of the pages of a plain core that reads made resident.  The
 * kernel maps the page cache around each page fault of a file mapping
 * (fault-around: the 64 KiB-aligned window of the faulting page,
 * mm/memory.c do_fault_around), and every page so mapped counts in the
 * reader's resident set: reading a few KiB of each of 10000 stacks would
 * make most of a core of gigabytes resident.  So what reads may have
 * mapped is counted (a window per read at most), and past RELEASE_AFTER
 * bytes the whole mapping is let go in one call.  The pages are clean
 * MAP_PRIVATE copies of the file (memory segments are never written to,
 * and libelf converts nothing of a little-endian core on a little-endian
 * host), so dropping them only makes the next touch fault them in again,
 * with the same bytes.  Once per RELEASE_AFTER, not per read: dropping a
 * window per read made every neighbouring read fault it in again.
 */
#define FAULT_AROUND (64u * 1024)
#define RELEASE_AFTER (32ull << 20)
static void count_touched(const struct psvc_core *c, uint64_t n)
{
	struct psvc_core *m = (struct psvc_core *)c;	/* the counter only */
	uint64_t add = (n + 2 * FAULT_AROUND - 1) & ~(uint64_t)(FAULT_AROUND - 1);
	if (atomic_fetch_add(&m->touched, add) + add < RELEASE_AFTER)
		return;
	atomic_store(&m->touched, 0);
	madvise(c->image, (c->sizes.file + 4095) & ~(uint64_t)4095, MADV_DONTNEED);
}

/*
 * The bytes at [addr, addr + len) that can be read in one run from addr,
 * copied to out if it is not NULL; where the run ends short, *m says why.
 */
static uint64_t walk(const struct psvc_core *c, uint64_t addr, uint64_t len,
		     unsigned char *out, struct psvc_core_miss *m)
{
	uint64_t end, done = 0;
	/* a range past the top of the address space: the part below it is
	 * read, the rest is no memory at all */
	bool wraps = !psvc_add_ok(addr, len, &end);
	if (wraps)
		end = UINT64_MAX;
	uint64_t a = addr;
	while (a < end) {
		const struct core_seg *s = psvc_core_seg_for(c, a);
		if (!s) {
			const struct psvc_core_file *f = psvc_core_file_for_addr(c, a);
			if (f)
				miss_at(m, PSVC_CORE_MISS_LEFT_OUT, a, f->start,
					f->end, f->path);
			else
				miss_at(m, PSVC_CORE_MISS_UNMAPPED, a, 0, 0, NULL);
			return done;
		}
		uint64_t s_end = s->vaddr + s->memsz, rel = a - s->vaddr;
		const char *path = s->file >= 0 ? c->files[s->file].path : NULL;
		/* the process could not read it (a guard page): the kernel
		 * writes such a mapping's bytes when it was ever touched, but
		 * a live read fails there, and so does this one (docs/ARCH.md
		 * §7) */
		if (!(s->flags & PF_R)) {
			miss_at(m, PSVC_CORE_MISS_NO_ACCESS, a, s->vaddr, s_end, path);
			return done;
		}
		if (rel >= s->filesz) {
			miss_at(m, PSVC_CORE_MISS_LEFT_OUT, a, s->vaddr, s_end, path);
			return done;
		}
		if (rel >= s->avail) {
			miss_at(m, c->stream_broken ? PSVC_CORE_MISS_CORRUPT
						    : PSVC_CORE_MISS_TRUNCATED,
				a, s->vaddr, s_end, path);
			if (m)
				m->file_offset = c->zip ? c->stream_end
							: c->sizes.file;
			return done;
		}
		uint64_t n = (end < s_end ? end : s_end) - a;
		if (n > s->avail - rel)
			n = s->avail - rel;
		if (c->zip == PSVC_CORE_PLAIN) {
			if (out) {
				memcpy(out + done, c->image + s->offset + rel, n);
				count_touched(c, n);
			}
		} else {
			const struct core_keep *k = keep_for(c, a);
			if (!k) {
				miss_at(m, PSVC_CORE_MISS_NOT_KEPT, a, s->vaddr,
					s_end, path);
				return done;
			}
			if (n > k->hi - a)
				n = k->hi - a;
			if (out)
				keep_copy(k, a, out + done, n);
		}
		done += n;
		a += n;
	}
	if (wraps)
		miss_at(m, PSVC_CORE_MISS_UNMAPPED, a, 0, 0, NULL);
	return done;
}

int psvc_core_read(const struct psvc_core *c, uint64_t addr, void *buf,
		   size_t len, struct psvc_core_miss *ret_miss)
{
	if (ret_miss)
		memset(ret_miss, 0, sizeof *ret_miss);
	if (len == 0)
		return 0;
	struct psvc_core_miss m = { 0 };
	if (walk(c, addr, len, buf, &m) == len)
		return 0;
	if (ret_miss)
		*ret_miss = m;
	switch (m.kind) {
	case PSVC_CORE_MISS_UNMAPPED:
	case PSVC_CORE_MISS_NO_ACCESS:
		return -EFAULT;
	case PSVC_CORE_MISS_CORRUPT:
		return -EIO;
	default:
		return -ENODATA;
	}
}

uint64_t psvc_core_extent(const struct psvc_core *c, uint64_t addr,
			  uint64_t len)
{
	return walk(c, addr, len, NULL, NULL);
}

static void fmt_size(char *buf, size_t len, uint64_t n)
{
	if (n >= (1u << 20) && n % (1u << 20) == 0)
		snprintf(buf, len, "%" PRIu64 " MiB", n >> 20);
	else if (n >= 1024 && n % 1024 == 0)
		snprintf(buf, len, "%" PRIu64 " KiB", n >> 10);
	else
		snprintf(buf, len, "%" PRIu64 " bytes", n);
}

void psvc_core_miss_str(const struct psvc_core *c,
			const struct psvc_core_miss *m, char *buf, size_t len)
{
	if (!len)
		return;
	char where[160] = "";
	if (m->seg_end)
		snprintf(where, sizeof where, " %#" PRIx64 "-%#" PRIx64
			 "%s%s", m->seg_start, m->seg_end, m->path ? " " : "",
			 m->path ? m->path : "");
	const struct core_seg *s = psvc_core_seg_for(c, m->addr);
	char budget[32];
	switch (m->kind) {
	case PSVC_CORE_MISS_NONE:
		snprintf(buf, len, "read");
		break;
	case PSVC_CORE_MISS_UNMAPPED:
		snprintf(buf, len, "%#" PRIx64 " was not mapped in the process "
			 "when the core was made", m->addr);
		break;
	case PSVC_CORE_MISS_NO_ACCESS:
		snprintf(buf, len, "%#" PRIx64 " could not be read by the process: "
			 "the mapping%s has no read permission (PROT_NONE)",
			 m->addr, where);
		break;
	case PSVC_CORE_MISS_LEFT_OUT:
		if (s && s->filesz)
			snprintf(buf, len, "%#" PRIx64 " is not in the core: its "
				 "segment%s holds only its first %#" PRIx64
				 " bytes, the rest was left out by the core's "
				 "producer", m->addr, where, s->filesz);
		else
			snprintf(buf, len, "%#" PRIx64 " is not in the core: the "
				 "mapping%s was left out by the core's producer "
				 "(coredump_filter, MADV_DONTDUMP, or gcore "
				 "leaving out what its file holds)", m->addr,
				 where);
		break;
	case PSVC_CORE_MISS_TRUNCATED:
		snprintf(buf, len, "%#" PRIx64 " is not in the core: the core is "
			 "truncated at offset %" PRIu64 " (its headers say %"
			 PRIu64 " bytes); in the mapping%s", m->addr,
			 m->file_offset, c->sizes.expected, where);
		break;
	case PSVC_CORE_MISS_NOT_KEPT:
		fmt_size(budget, sizeof budget, c->opts.budget);
		snprintf(buf, len, "%#" PRIx64 " was not kept from the %s-"
			 "compressed core (mapping%s): outside the thread stack windows, "
			 "and over the %s memory budget for the rest (raise it, "
			 "or decompress the core)", m->addr,
			 psvc_core_zip_name(c->zip), where, budget);
		break;
	case PSVC_CORE_MISS_CORRUPT:
		snprintf(buf, len, "%#" PRIx64 " is not in the core: the %s "
			 "stream breaks at uncompressed offset %" PRIu64 " (%s); "
			 "in the mapping%s",
			 m->addr, psvc_core_zip_name(c->zip), m->file_offset,
			 c->stream_why, where);
		break;
	}
}
