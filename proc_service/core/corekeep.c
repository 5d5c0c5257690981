/*
 * corekeep.c: a compressed core, read in one streaming pass (core.h says
 * what is kept and why).  The order of the work follows the file: the
 * ELF header and program headers come first in every core, so the
 * segments are known before any memory; the notes come next in a kernel
 * core (fs/binfmt_elf.c writes them right after the program headers) but
 * last in a gcore one (bfd puts the note section after the loads).  The
 * plan of what to keep needs the notes (every thread's sp, NT_FILE), so
 * a core with its notes last is decompressed twice: once for the notes,
 * once for the memory.
 */
#include "core_int.h"
#include "psvc_int.h"

#include "array.h"
#include "order.h"

#include <elf.h>
#include <endian.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define OUT_CHUNK (1u << 20)
#define ARENA_CHUNK (1u << 20)
/* program headers beyond this are no process's (65530 mappings are 3.5
 * MiB of them) */
#define MAX_PHDR_BYTES (256ull << 20)
/* a gap this big between the program headers and the notes is not a
 * kernel core's layout: such notes are read like gcore's */
#define MAX_NOTE_GAP (1ull << 20)

static uint64_t min64(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

/* ---- the head: bytes from offset 0, held in c->image --------------------- */

/* Read the stream on until c->image holds want bytes, or the stream ends
 * (*ended) or fails (a negative errno, why says it). */
static int head_fill(struct psvc_core *c, struct zstream *z, uint64_t want,
		     bool *ended, char *why, size_t whylen)
{
	if (want <= c->image_len)
		return 0;
	unsigned char *p = realloc(c->image, (size_t)want);
	if (!p)
		return -ENOMEM;
	c->image = p;
	while (c->image_len < want) {
		ssize_t n = psvc_zstream_read(z, c->image + c->image_len,
					 (size_t)(want - c->image_len), why, whylen);
		if (n < 0)
			return (int)n;
		if (n == 0) {
			*ended = true;
			break;
		}
		c->image_len += (uint64_t)n;
	}
	return 0;
}

/*
 * The program headers, through libelf as for a plain core: the head's
 * first bytes with the section header table cut off (it lies at the end of
 * the file, not read yet; a core needs none), except that a core with
 * more than 65534 segments (PN_XNUM) keeps its count in section 0's
 * sh_info: that one section is then made up from the count the layout
 * implies.  Both producers write the data of the first program header
 * right after the table (binfmt_elf.c's offsets; bfd's), so the count is
 * (that offset - e_phoff) / e_phentsize.
 */
static int read_phdrs(struct psvc_core *c, struct zstream *z,
		      struct core_note_range **ret_notes, size_t *ret_nnotes,
		      char *why, size_t whylen)
{
	bool ended = false;
	int err = head_fill(c, z, sizeof(Elf64_Ehdr), &ended, why, whylen);
	if (err)
		return err == -ENOMEM ? err : -EBADMSG;
	if ((err = psvc_core_check_header(c, c->image, c->image_len, why, whylen)))
		return err;
	Elf64_Ehdr eh;
	memcpy(&eh, c->image, sizeof eh);
	uint64_t phoff = le64toh(eh.e_phoff), phnum = le16toh(eh.e_phnum);
	uint64_t phend, bytes;
	bool xnum = phnum == PN_XNUM;
	if (xnum) {
		if (!psvc_add_ok(phoff, sizeof(Elf64_Phdr), &phend) ||
		    phend > MAX_PHDR_BYTES ||
		    (err = head_fill(c, z, phend, &ended, why, whylen)) ||
		    c->image_len < phend) {
			psvc_say(why, whylen, "a PN_XNUM core whose first program "
				 "header cannot be read");
			return err == -ENOMEM ? err : -EBADMSG;
		}
		Elf64_Phdr p0;
		memcpy(&p0, c->image + phoff, sizeof p0);
		uint64_t off0 = le64toh(p0.p_offset);
		if (off0 <= phoff || (off0 - phoff) % sizeof(Elf64_Phdr)) {
			psvc_say(why, whylen, "a PN_XNUM core whose segment count "
				 "cannot be told from its layout (first data at "
				 "%#" PRIx64 ")", off0);
			return -EBADMSG;
		}
		phnum = (off0 - phoff) / sizeof(Elf64_Phdr);
	}
	if (!psvc_mul_ok(phnum, sizeof(Elf64_Phdr), &bytes) ||
	    !psvc_add_ok(phoff, bytes, &phend) || phend > MAX_PHDR_BYTES) {
		psvc_say(why, whylen, "%" PRIu64 " program headers at offset %#"
			 PRIx64 ": more than any process has", phnum, phoff);
		return -EBADMSG;
	}
	if ((err = head_fill(c, z, phend, &ended, why, whylen)))
		return err == -ENOMEM ? err : -EBADMSG;
	if (c->image_len < phend) {
		psvc_say(why, whylen, "the %s stream ends at offset %" PRIu64
			 ", inside the program headers", psvc_core_zip_name(c->zip),
			 c->image_len);
		return -EBADMSG;
	}
	size_t hlen = (size_t)phend + sizeof(Elf64_Shdr);
	unsigned char *hdr = calloc(1, hlen);
	if (!hdr)
		return -ENOMEM;
	memcpy(hdr, c->image, (size_t)phend);
	Elf64_Ehdr *h = (Elf64_Ehdr *)hdr;
	h->e_shoff = 0;
	h->e_shnum = 0;
	h->e_shstrndx = 0;
	if (xnum) {
		Elf64_Shdr *s0 = (Elf64_Shdr *)(hdr + phend);
		h->e_shoff = htole64(phend);
		s0->sh_size = htole64(1);	/* one section: itself */
		s0->sh_info = htole32((uint32_t)phnum);
		if (phnum > UINT32_MAX) {
			free(hdr);
			return -EBADMSG;
		}
	}
	Elf *elf = elf_memory((char *)hdr, hlen);
	if (!elf) {
		psvc_say(why, whylen, "libelf cannot read the headers: %s",
			 elf_errmsg(-1));
		free(hdr);
		return -EBADMSG;
	}
	err = psvc_core_read_headers(c, elf, ret_notes, ret_nnotes, why, whylen);
	elf_end(elf);
	free(hdr);
	return err;
}

/* ---- the notes --------------------------------------------------------------- */

/* Discard the stream up to offset `to` (from *pos). */
static int skip_to(struct zstream *z, uint64_t *pos, uint64_t to,
		   unsigned char *scratch, char *why, size_t whylen)
{
	while (*pos < to) {
		ssize_t n = psvc_zstream_read(z, scratch, (size_t)min64(OUT_CHUNK,
								   to - *pos),
					 why, whylen);
		if (n <= 0)
			return n ? (int)n : -ENODATA;
		*pos += (uint64_t)n;
	}
	return 0;
}

static int read_notes(struct psvc_core *c, struct zstream *z,
		      const struct core_note_range *notes, size_t nnotes,
		      bool *ret_two_pass, unsigned char *scratch, char *why,
		      size_t whylen)
{
	uint64_t nlo = UINT64_MAX, nhi = 0;
	for (size_t i = 0; i < nnotes; i++) {
		nlo = min64(nlo, notes[i].offset);
		if (notes[i].offset + notes[i].size > nhi)
			nhi = notes[i].offset + notes[i].size;
	}
	if (!nnotes)
		return 0;
	if (nhi - nlo > c->opts.max_note_bytes) {
		psvc_say(why, whylen, "%" PRIu64 " bytes of notes: more than the "
			 "limit of %" PRIu64, nhi - nlo, c->opts.max_note_bytes);
		return -EBADMSG;
	}
	bool ended = false;
	char zwhy[160] = "";
	const unsigned char *base;
	uint64_t have;		/* bytes of [nlo, nhi) read */
	*ret_two_pass = !(nhi <= c->first_data && nlo <= c->image_len + MAX_NOTE_GAP);
	if (!*ret_two_pass) {
		int err = head_fill(c, z, nhi, &ended, zwhy, sizeof zwhy);
		if (err == -ENOMEM)
			return err;
		if (err)
			psvc_core_warn(c, "the %s stream breaks inside the notes: %s",
				  psvc_core_zip_name(c->zip), zwhy);
		base = c->image;
		have = c->image_len > nlo ? c->image_len - nlo : 0;
	} else {
		/* notes after the memory: this pass keeps only them (the
		 * stream stands at image_len; a crafted core's notes may
		 * also begin in the head already read: that part is copied) */
		uint64_t pos = c->image_len;
		int err = nlo > pos ? skip_to(z, &pos, nlo, scratch, zwhy, sizeof zwhy) : 0;
		if (err) {
			psvc_say(why, whylen, "the notes at offset %" PRIu64 " "
				 "cannot be reached: the %s stream %s at offset %"
				 PRIu64 "%s%s", nlo, psvc_core_zip_name(c->zip),
				 err == -ENODATA ? "ends" : "breaks", pos,
				 *zwhy ? ": " : "", zwhy);
			return err == -ENOMEM ? err : -EBADMSG;
		}
		c->notes_buf = malloc((size_t)(nhi - nlo));
		if (!c->notes_buf)
			return -ENOMEM;
		c->notes_off = nlo;
		have = 0;
		if (nlo < c->image_len) {
			have = min64(c->image_len, nhi) - nlo;
			memcpy(c->notes_buf, c->image + nlo, (size_t)have);
		}
		while (have < nhi - nlo) {
			ssize_t n = psvc_zstream_read(z, c->notes_buf + have,
						 (size_t)(nhi - nlo - have), zwhy,
						 sizeof zwhy);
			if (n < 0)
				psvc_core_warn(c, "the %s stream breaks inside the "
					  "notes: %s", psvc_core_zip_name(c->zip),
					  zwhy);
			if (n <= 0)
				break;
			have += (uint64_t)n;
		}
		c->notes_len = have;
		base = c->notes_buf - nlo;	/* indexed by file offset */
		if (psvc_zstream_rewind(z) != 0) {
			psvc_say(why, whylen, "cannot read the compressed core "
				 "again from its start");
			return -EIO;
		}
	}
	for (size_t i = 0; i < nnotes; i++) {
		const struct core_note_range *r = &notes[i];
		uint64_t end = nlo + have;
		if (r->offset >= end) {
			psvc_core_warn(c, "the note segment at offset %#" PRIx64 " lies "
				  "beyond the end of the %s stream (%" PRIu64
				  " bytes)", r->offset, psvc_core_zip_name(c->zip),
				  end);
			continue;
		}
		uint64_t len = min64(r->size, end - r->offset);
		int err = psvc_core_notes_parse(c, base + r->offset, (size_t)len,
					   r->align8, len < r->size);
		if (err)
			return err;
	}
	return 0;
}

/* ---- the plan ---------------------------------------------------------------- */

struct want {
	uint64_t lo, hi;
	size_t seg;
};

struct wants {
	struct want *v;
	size_t n, cap;
};

static int want_add(struct wants *w, size_t seg, uint64_t lo, uint64_t hi)
{
	if (lo >= hi)
		return 0;
	if (array_grow(&w->v, &w->cap, w->n + 1, sizeof *w->v, 256))
		return -ENOMEM;
	w->v[w->n++] = (struct want){ lo, hi, seg };
	return 0;
}

struct cand {
	size_t seg;
	int cls;
	uint64_t size;
};

static int cand_cmp(const void *a, const void *b)
{
	const struct cand *x = a, *y = b;
	if (x->cls != y->cls)
		return x->cls - y->cls;
	return order_u64(x->size, y->size) ?: order_u64(x->seg, y->seg);
}

static int want_cmp(const void *a, const void *b)
{
	const struct want *x = a, *y = b;
	return order_u64(x->lo, y->lo) ?: order_u64(x->hi, y->hi);
}

/* Class A: every thread's stack window and the top of its stack segment. */
static int plan_stacks(struct psvc_core *c, struct wants *w)
{
	for (size_t i = 0; i < c->nthreads; i++) {
		const struct psvc_core_thread *t = &c->threads[i];
		if (!t->have_regs)
			continue;
		uint64_t sp = arch_sp(c->arch, t->gregs);
		const struct core_seg *s = psvc_core_seg_for(c, sp);
		if (!s || !s->filesz)
			continue;
		size_t si = (size_t)(s - c->segs);
		c->segs[si].stack = true;
		uint64_t data_end = s->vaddr + s->filesz, hi;
		uint64_t lo = sp > s->vaddr + PSVC_CORE_STACK_BELOW ?
			      sp - PSVC_CORE_STACK_BELOW : s->vaddr;
		if (!psvc_add_ok(sp, c->opts.stack_bytes, &hi))
			hi = UINT64_MAX;
		if (want_add(w, si, lo, min64(hi, data_end)) ||
		    want_add(w, si, data_end - min64(c->opts.stack_top_bytes,
						     s->filesz), data_end))
			return -ENOMEM;
	}
	return 0;
}

/* Class B: the rest, within the budget, in the order of core.h. */
static int plan_budget(struct psvc_core *c, struct wants *w)
{
	struct cand *cv = calloc(c->nsegs ? c->nsegs : 1, sizeof *cv);
	if (!cv)
		return -ENOMEM;
	size_t n = 0;
	for (size_t i = 0; i < c->nsegs; i++) {
		const struct core_seg *s = &c->segs[i];
		if (!s->filesz)
			continue;
		int cls;
		const struct core_seg *p = i ? &c->segs[i - 1] : NULL;
		bool writable = s->flags & PF_W;
		if (s->stack)
			cls = 4;
		else if (writable && (s->file >= 0 ||
				      (p && p->file >= 0 &&
				       p->vaddr + p->memsz == s->vaddr)))
			cls = 1;
		else if (writable)
			cls = 2;
		else
			cls = 3;
		cv[n++] = (struct cand){ i, cls, s->filesz };
	}
	qsort(cv, n, sizeof *cv, cand_cmp);
	uint64_t left = c->opts.budget;
	int err = 0;
	for (size_t i = 0; i < n && left && !err; i++) {
		const struct core_seg *s = &c->segs[cv[i].seg];
		uint64_t take = min64(s->filesz, left);
		err = want_add(w, cv[i].seg, s->vaddr, s->vaddr + take);
		left -= take;
	}
	c->budget_used = c->opts.budget - left;
	free(cv);
	return err;
}

static int order_cmp(const void *a, const void *b, void *keeps)
{
	const struct core_keep *x = (const struct core_keep *)keeps +
				    *(const size_t *)a;
	const struct core_keep *y = (const struct core_keep *)keeps +
				    *(const size_t *)b;
	return x->file_lo < y->file_lo ? -1 : x->file_lo > y->file_lo;
}

/*
 * Merge the wants into kept ranges (sorted by address, one segment each),
 * and return them in the order of the file.  Two segments that claim the
 * same bytes of the file (a damaged core) keep them for the first only.
 */
static int plan_keeps(struct psvc_core *c, struct wants *w, size_t **ret_order)
{
	if (w->n)
		qsort(w->v, w->n, sizeof *w->v, want_cmp);
	c->keeps = calloc(w->n ? w->n : 1, sizeof *c->keeps);
	if (!c->keeps)
		return -ENOMEM;
	size_t n = 0;
	for (size_t i = 0; i < w->n; i++) {
		const struct want *x = &w->v[i];
		struct core_keep *last = n ? &c->keeps[n - 1] : NULL;
		const struct core_seg *s = &c->segs[x->seg];
		if (last && x->lo <= last->hi &&
		    last->lo >= s->vaddr && last->lo - s->vaddr < s->memsz) {
			if (x->hi > last->hi)
				last->hi = x->hi;
			continue;
		}
		c->keeps[n++] = (struct core_keep){
			.lo = x->lo, .hi = x->hi,
			.file_lo = s->offset + (x->lo - s->vaddr) };
	}
	c->nkeeps = n;
	size_t *order = calloc(n ? n : 1, sizeof *order);
	if (!order)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		order[i] = i;
	qsort_r(order, n, sizeof *order, order_cmp, c->keeps);
	/* after the trim below, the ranges that are not empty are disjoint
	 * in the file and still in its order; an emptied one keeps a place
	 * at or before the next one's start, which feed() steps over */
	uint64_t prev_hi = 0;
	for (size_t i = 0; i < n; i++) {
		struct core_keep *k = &c->keeps[order[i]];
		uint64_t fhi = k->file_lo + (k->hi - k->lo);
		if (k->file_lo < prev_hi) {
			psvc_core_warn(c, "the memory at %#" PRIx64 " shares file "
				  "bytes with another segment: not kept", k->lo);
			uint64_t cut = min64(prev_hi, fhi) - k->file_lo;
			k->lo += cut;
			k->file_lo += cut;
		}
		if (fhi > prev_hi)
			prev_hi = fhi;
	}
	for (size_t i = 0; i < n; i++) {
		struct core_keep *k = &c->keeps[i];
		if (k->lo >= k->hi)
			continue;
		k->nblocks = (size_t)(((k->hi - 1) >> CORE_BLK_SHIFT) -
				      (k->lo >> CORE_BLK_SHIFT) + 1);
		k->blocks = calloc(k->nblocks, sizeof *k->blocks);
		if (!k->blocks) {
			free(order);
			return -ENOMEM;
		}
	}
	*ret_order = order;
	return 0;
}

/* ---- the pass ------------------------------------------------------------------- */

static unsigned char *block_alloc(struct psvc_core *c)
{
	struct core_chunk *k = c->nchunks ? &c->chunks[c->nchunks - 1] : NULL;
	if (!k || k->used + CORE_BLK > k->size) {
		if (array_grow(&c->chunks, &c->chunks_cap, c->nchunks + 1,
			       sizeof *c->chunks, 16))
			return NULL;
		/* fresh anonymous pages are zeros: a block is zero-filled
		 * before its first bytes are copied in */
		void *p = mmap(NULL, ARENA_CHUNK, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED)
			return NULL;
		k = &c->chunks[c->nchunks++];
		*k = (struct core_chunk){ p, ARENA_CHUNK, 0 };
	}
	unsigned char *b = k->base + k->used;
	k->used += CORE_BLK;
	c->sizes.kept += CORE_BLK;
	return b;
}

static bool all_zero(const unsigned char *p, uint64_t n)
{
	static const unsigned char zero[CORE_BLK];
	return !memcmp(p, zero, (size_t)n);
}

static int store(struct psvc_core *c, struct core_keep *k, uint64_t addr,
		 const unsigned char *p, uint64_t n)
{
	while (n) {
		size_t b = (size_t)((addr >> CORE_BLK_SHIFT) -
				    (k->lo >> CORE_BLK_SHIFT));
		uint64_t in = addr & (CORE_BLK - 1);
		uint64_t piece = min64(CORE_BLK - in, n);
		if (!k->blocks[b] && !all_zero(p, piece) &&
		    !(k->blocks[b] = block_alloc(c)))
			return -ENOMEM;
		if (k->blocks[b])
			memcpy(k->blocks[b] + in, p, (size_t)piece);
		p += piece;
		addr += piece;
		n -= piece;
	}
	return 0;
}

/* Hand the bytes [pos, pos + len) of the core to the kept ranges that
 * want them; *cursor walks the file order once. */
static int feed(struct psvc_core *c, const size_t *order, size_t *cursor,
		uint64_t pos, const unsigned char *p, size_t len)
{
	uint64_t end = pos + len;
	while (*cursor < c->nkeeps) {
		const struct core_keep *k = &c->keeps[order[*cursor]];
		if (k->file_lo + (k->hi - k->lo) > pos)
			break;
		(*cursor)++;
	}
	for (size_t i = *cursor; i < c->nkeeps; i++) {
		struct core_keep *k = &c->keeps[order[i]];
		uint64_t flo = k->file_lo, fhi = flo + (k->hi - k->lo);
		if (flo >= end)
			break;
		uint64_t a = flo > pos ? flo : pos, b = min64(fhi, end);
		if (a >= b)
			continue;
		int err = store(c, k, k->lo + (a - flo), p + (a - pos), b - a);
		if (err)
			return err;
	}
	return 0;
}

/*
 * The one pass that keeps memory: decompressed only as far as the last
 * byte kept.  What lies past it is never read (a 1 MB core followed by
 * 50 GiB of zeros in concatenated frames took 100 s to "read"), so the
 * work is bounded by what the headers describe, not by the stream.
 */
static int stream_pass(struct psvc_core *c, struct zstream *z,
		       const size_t *order, bool from_head, unsigned char *buf)
{
	size_t cursor = 0;
	uint64_t pos = 0, need = 0;
	int err;
	for (size_t i = 0; i < c->nkeeps; i++) {
		const struct core_keep *k = &c->keeps[i];
		if (k->lo < k->hi && k->file_lo + (k->hi - k->lo) > need)
			need = k->file_lo + (k->hi - k->lo);
	}
	if (from_head) {
		/* the head read so far is the stream's first bytes */
		if ((err = feed(c, order, &cursor, 0, c->image,
				(size_t)c->image_len)))
			return err;
		pos = c->image_len;
	}
	for (;;) {
		if (pos >= need) {
			c->stream_stopped = true;
			break;
		}
		ssize_t n = psvc_zstream_read(z, buf, (size_t)min64(OUT_CHUNK,
								   need - pos),
					 c->stream_why, sizeof c->stream_why);
		if (n < 0) {
			c->stream_broken = true;
			break;
		}
		if (n == 0)
			break;
		if ((err = feed(c, order, &cursor, pos, buf, (size_t)n)))
			return err;
		pos += (uint64_t)n;
	}
	c->stream_end = pos;
	return 0;
}

int psvc_core_zip_load(struct psvc_core *c, char *why, size_t whylen)
{
	struct zstream *z = NULL;
	struct core_note_range *notes = NULL;
	size_t nnotes = 0, *order = NULL;
	struct wants w = { 0 };
	unsigned char *buf = malloc(OUT_CHUNK);
	bool two_pass = false;
	int err = buf ? psvc_zstream_open(c->fd, c->zip, &z) : -ENOMEM;
	if (err)
		goto out;
	if ((err = read_phdrs(c, z, &notes, &nnotes, why, whylen)))
		goto out;
	if ((err = read_notes(c, z, notes, nnotes, &two_pass, buf, why, whylen)))
		goto out;
	psvc_core_notes_done(c);
	if (!c->nthreads) {
		psvc_say(why, whylen, "no thread in the %s-compressed core (no "
			 "NT_PRSTATUS note could be read)",
			 psvc_core_zip_name(c->zip));
		err = -EBADMSG;
		goto out;
	}
	if ((err = psvc_core_finish(c)) || (err = plan_stacks(c, &w)) ||
	    (err = plan_budget(c, &w)) || (err = plan_keeps(c, &w, &order)))
		goto out;
	if ((err = stream_pass(c, z, order, !two_pass, buf)))
		goto out;
	/* left before its end: the rest is taken to be as the headers say
	 * (nothing of it is kept, so nothing of it is read) */
	uint64_t end = c->stream_stopped && c->sizes.expected > c->stream_end
			       ? c->sizes.expected : c->stream_end;
	c->sizes.file = end;
	if (c->stream_broken)
		psvc_core_warn(c, "the %s stream breaks at uncompressed offset %"
			  PRIu64 ": %s", psvc_core_zip_name(c->zip),
			  c->stream_end, c->stream_why);
	else if (end < c->sizes.expected)
		psvc_core_warn(c, "the core is truncated: its %s stream ends at %"
			  PRIu64 " bytes, its headers say %" PRIu64,
			  psvc_core_zip_name(c->zip), c->stream_end,
			  c->sizes.expected);
	for (size_t i = 0; i < c->nsegs; i++) {
		struct core_seg *s = &c->segs[i];
		s->avail = s->offset >= end ? 0 : min64(s->filesz, end - s->offset);
	}
	err = psvc_core_build_maps(c);
out:
	if (err == -ENOMEM)
		psvc_say(why, whylen, "out of memory");
	free(w.v);
	free(order);
	free(notes);
	free(buf);
	if (z)
		c->sizes.unzipped = psvc_zstream_total(z);
	psvc_zstream_close(z);
	return err;
}

void psvc_core_keep_free(struct psvc_core *c)
{
	for (size_t i = 0; i < c->nkeeps; i++)
		free(c->keeps[i].blocks);
	free(c->keeps);
	c->keeps = NULL;
	c->nkeeps = 0;
	for (size_t i = 0; i < c->nchunks; i++)
		munmap(c->chunks[i].base, c->chunks[i].size);
	free(c->chunks);
	c->chunks = NULL;
	c->nchunks = 0;
}
