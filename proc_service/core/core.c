/*
 * core.c: the facts every other part of the reader stands on: the ELF
 * header (what kind of core, whose), the program headers (where the memory
 * is), the NT_FILE list put in order, the "maps" view of both, and the
 * accessors.  Opening is coreopen.c's (over a plain file here, or a
 * compressed one, corekeep.c), the notes corenotes.c's, the memory reads
 * coremem.c's, messages coresay.c's; core.h says what the whole reader
 * promises.
 *
 * Every number in the headers is the core's, so anyone's: each one is
 * checked in 64-bit arithmetic before it is used, and a segment that does
 * not hold together is left out with a warning rather than trusted.
 */
#include "core_int.h"
#include "psvc_int.h"

#include "array.h"
#include "order.h"

#include <elf.h>
#include <endian.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* Beyond these a core is not one tinspect will meet (a process has at most
 * vm.max_map_count mappings, 65530 by default): refusing is better than
 * allocating for a number that is garbage. */
#define MAX_SEGMENTS (1u << 22)

/* ---- the ELF header ------------------------------------------------------ */

static const char *type_name(unsigned t)
{
	switch (t) {
	case ET_EXEC: return "an executable";
	case ET_DYN: return "a shared object or position-independent executable";
	case ET_REL: return "a relocatable object";
	default: return "no known ELF type";
	}
}

/* The type and machine, from the raw header: the same answer before the
 * program headers are there (a compressed core) as after. */
static int check_ehdr(struct psvc_core *c, const GElf_Ehdr *eh, char *why,
		      size_t whylen)
{
	if (eh->e_type != ET_CORE) {
		psvc_say(why, whylen, "not a core file: %s (e_type %u)",
			 type_name(eh->e_type), eh->e_type);
		return -ENOEXEC;
	}
	c->arch = arch_by_elf_machine(eh->e_machine);
	if (!c->arch) {
		const char *m = arch_machine_name(eh->e_machine);
		if (m)
			psvc_say(why, whylen, "a core of %s (machine %u): tinspect "
				 "reads " ARCH_NAMES " cores", m, eh->e_machine);
		else
			psvc_say(why, whylen, "a core of machine %u: tinspect "
				 "reads " ARCH_NAMES " cores", eh->e_machine);
		return -ENOEXEC;
	}
	if (eh->e_phentsize != sizeof(Elf64_Phdr)) {
		psvc_say(why, whylen, "program header entries of %u bytes, not "
			 "%zu", eh->e_phentsize, sizeof(Elf64_Phdr));
		return -EBADMSG;
	}
	return 0;
}

/*
 * What the first bytes say, in the order that gives the most useful
 * answer: not ELF; ELF but no core (e_type and e_machine sit at the same
 * offsets in both classes and byte orders, gABI); a core of a class, byte
 * order or machine tinspect does not read.
 */
int psvc_core_check_header(struct psvc_core *c, const unsigned char *p, size_t n,
		      char *why, size_t whylen)
{
	if (n < EI_NIDENT || memcmp(p, ELFMAG, SELFMAG)) {
		psvc_say(why, whylen, "not an ELF file (and no compressed "
			 "stream tinspect knows)");
		return -ENOEXEC;
	}
	if (n < 20) {
		psvc_say(why, whylen, "the file ends inside its ELF header "
			 "(%zu bytes)", n);
		return -EBADMSG;
	}
	bool msb = p[EI_DATA] == ELFDATA2MSB;
	uint16_t type, machine;
	memcpy(&type, p + 16, 2);
	memcpy(&machine, p + 18, 2);
	type = msb ? be16toh(type) : le16toh(type);
	machine = msb ? be16toh(machine) : le16toh(machine);
	if (type != ET_CORE) {
		psvc_say(why, whylen, "not a core file: %s (e_type %u)",
			 type_name(type), type);
		return -ENOEXEC;
	}
	if (p[EI_CLASS] != ELFCLASS64) {
		psvc_say(why, whylen, p[EI_CLASS] == ELFCLASS32 ?
			 "a 32-bit core: tinspect reads 64-bit "
			 ARCH_NAMES " cores" : "a core of unknown ELF class %u",
			 p[EI_CLASS]);
		return p[EI_CLASS] == ELFCLASS32 ? -ENOEXEC : -EBADMSG;
	}
	if (p[EI_DATA] != ELFDATA2LSB) {
		psvc_say(why, whylen, "a %s core: tinspect reads little-endian "
			 ARCH_NAMES " cores", msb ? "big-endian" :
			 "byte order unknown");
		return -ENOEXEC;
	}
	if (n < sizeof(Elf64_Ehdr)) {
		psvc_say(why, whylen, "the file ends inside its ELF header "
			 "(%zu bytes)", n);
		return -EBADMSG;
	}
	Elf64_Ehdr e;
	memcpy(&e, p, sizeof e);
	GElf_Ehdr g = { .e_type = type, .e_machine = machine,
			.e_phentsize = le16toh(e.e_phentsize) };
	return check_ehdr(c, &g, why, whylen);
}

/* ---- program headers ----------------------------------------------------- */

static int seg_cmp(const void *a, const void *b)
{
	const struct core_seg *x = a, *y = b;
	return order_u64(x->vaddr, y->vaddr) ?: order_u64(x->memsz, y->memsz);
}

static void add_segment(struct psvc_core *c, const GElf_Phdr *ph, size_t idx)
{
	uint64_t end, fend;
	if (ph->p_memsz == 0)
		return;		/* nothing mapped; kernels never write one */
	if (ph->p_memsz > PSVC_CORE_MAX_MAPPING) {
		psvc_core_warn(c, "segment %zu at %#" PRIx64 " claims %#" PRIx64
			  " bytes, more than any address space holds: left out",
			  idx, ph->p_vaddr, ph->p_memsz);
		return;
	}
	if (!psvc_add_ok(ph->p_vaddr, ph->p_memsz, &end)) {
		psvc_core_warn(c, "segment %zu: %#" PRIx64 " + %#" PRIx64 " wraps "
			  "the address space: left out", idx, ph->p_vaddr,
			  ph->p_memsz);
		return;
	}
	struct core_seg s = { .vaddr = ph->p_vaddr, .memsz = ph->p_memsz,
			      .offset = ph->p_offset, .filesz = ph->p_filesz,
			      .flags = ph->p_flags, .file = -1 };
	if (s.filesz > s.memsz) {
		psvc_core_warn(c, "segment %zu at %#" PRIx64 ": %#" PRIx64 " bytes "
			  "in the file for %#" PRIx64 " in memory: the excess "
			  "ignored", idx, s.vaddr, s.filesz, s.memsz);
		s.filesz = s.memsz;
	}
	if (s.filesz && !psvc_add_ok(s.offset, s.filesz, &fend)) {
		psvc_core_warn(c, "segment %zu at %#" PRIx64 ": file offset %#"
			  PRIx64 " + %#" PRIx64 " wraps: its bytes are not "
			  "in the core", idx, s.vaddr, s.offset, s.filesz);
		s.filesz = 0;
	}
	c->segs[c->nsegs++] = s;
}

/* Sorted, and a segment that overlaps the one before it is dropped: two
 * segments claiming one address cannot both be believed, and the first
 * found is as good as any. */
static void sort_segments(struct psvc_core *c)
{
	qsort(c->segs, c->nsegs, sizeof *c->segs, seg_cmp);
	size_t out = 0;
	for (size_t i = 0; i < c->nsegs; i++) {
		struct core_seg *s = &c->segs[i];
		if (out) {
			const struct core_seg *p = &c->segs[out - 1];
			if (s->vaddr < p->vaddr + p->memsz) {
				psvc_core_warn(c, "segment at %#" PRIx64 " overlaps "
					  "the one at %#" PRIx64 ": left out",
					  s->vaddr, p->vaddr);
				continue;
			}
		}
		c->segs[out++] = *s;
	}
	c->nsegs = out;
}

int psvc_core_read_headers(struct psvc_core *c, Elf *elf,
		      struct core_note_range **ret_notes, size_t *ret_nnotes,
		      char *why, size_t whylen)
{
	*ret_notes = NULL;
	*ret_nnotes = 0;
	if (elf_kind(elf) != ELF_K_ELF) {
		psvc_say(why, whylen, "not an ELF file");
		return -ENOEXEC;
	}
	GElf_Ehdr eh;
	if (!gelf_getehdr(elf, &eh)) {
		psvc_say(why, whylen, "ELF header unreadable: %s", elf_errmsg(-1));
		return -EBADMSG;
	}
	int err = check_ehdr(c, &eh, why, whylen);
	if (err)
		return err;
	size_t n;
	if (elf_getphdrnum(elf, &n) != 0) {
		psvc_say(why, whylen, "program headers unreadable: %s",
			 elf_errmsg(-1));
		return -EBADMSG;
	}
	if (n == 0) {
		psvc_say(why, whylen, "no program headers: a core without "
			 "threads or memory");
		return -EBADMSG;
	}
	uint64_t bytes, end;
	if (n > MAX_SEGMENTS || !psvc_mul_ok(n, sizeof(Elf64_Phdr), &bytes) ||
	    !psvc_add_ok(eh.e_phoff, bytes, &end) || end > c->image_len) {
		psvc_say(why, whylen, "%zu program headers at offset %#" PRIx64
			 " do not fit in the %" PRIu64 " bytes read", n,
			 (uint64_t)eh.e_phoff, c->image_len);
		return -EBADMSG;
	}
	c->segs = calloc(n, sizeof *c->segs);
	struct core_note_range *notes = calloc(n, sizeof *notes);
	if (!c->segs || !notes) {
		free(notes);
		return -ENOMEM;
	}
	size_t nnotes = 0;
	c->first_data = UINT64_MAX;
	for (size_t i = 0; i < n; i++) {
		GElf_Phdr ph;
		if (!gelf_getphdr(elf, (int)i, &ph)) {
			psvc_core_warn(c, "program header %zu unreadable: %s", i,
				  elf_errmsg(-1));
			continue;
		}
		uint64_t pend;
		if (ph.p_type == PT_NOTE) {
			if (!ph.p_filesz)
				continue;
			if (!psvc_add_ok(ph.p_offset, ph.p_filesz, &pend)) {
				psvc_core_warn(c, "note segment %zu: offset %#" PRIx64
					  " + %#" PRIx64 " wraps: left out", i,
					  ph.p_offset, ph.p_filesz);
				continue;
			}
			notes[nnotes++] = (struct core_note_range){
				ph.p_offset, ph.p_filesz, ph.p_align == 8 };
			if (pend > c->sizes.expected)
				c->sizes.expected = pend;
		} else if (ph.p_type == PT_LOAD) {
			size_t before = c->nsegs;
			add_segment(c, &ph, i);
			if (c->nsegs == before || !c->segs[before].filesz)
				continue;
			const struct core_seg *s = &c->segs[before];
			if (s->offset + s->filesz > c->sizes.expected)
				c->sizes.expected = s->offset + s->filesz;
			if (s->offset < c->first_data)
				c->first_data = s->offset;
		}
	}
	sort_segments(c);
	*ret_notes = notes;
	*ret_nnotes = nnotes;
	return 0;
}

static int seg_vs_addr(const void *key, const void *e)
{
	const struct core_seg *s = e;
	return psvc_core_addr_vs(*(const uint64_t *)key, s->vaddr,
				 s->vaddr + s->memsz);
}

/* Segment e starts at or below the address *key. */
static bool seg_starts_by(const void *e, const void *key)
{
	return ((const struct core_seg *)e)->vaddr <= *(const uint64_t *)key;
}

const struct core_seg *psvc_core_seg_for(const struct psvc_core *c, uint64_t addr)
{
	/* bsearch(3) wants an array even for no element */
	if (!c->nsegs)
		return NULL;
	return bsearch(&addr, c->segs, c->nsegs, sizeof *c->segs, seg_vs_addr);
}

/* ---- NT_FILE in order, and the maps view ----------------------------------- */

static int file_cmp(const void *a, const void *b)
{
	const struct psvc_core_file *x = a, *y = b;
	return order_u64(x->start, y->start) ?: order_u64(x->end, y->end);
}

static int file_vs_addr(const void *key, const void *e)
{
	const struct psvc_core_file *f = e;
	return psvc_core_addr_vs(*(const uint64_t *)key, f->start, f->end);
}

const struct psvc_core_file *psvc_core_file_for_addr(const struct psvc_core *c,
						     uint64_t addr)
{
	if (!c->nfiles)
		return NULL;
	return bsearch(&addr, c->files, c->nfiles, sizeof *c->files,
		       file_vs_addr);
}

int psvc_core_finish(struct psvc_core *c)
{
	if (c->nfiles)
		qsort(c->files, c->nfiles, sizeof *c->files, file_cmp);
	size_t out = 0;
	for (size_t i = 0; i < c->nfiles; i++) {
		if (out && c->files[i].start < c->files[out - 1].end) {
			psvc_core_warn(c, "NT_FILE: %#" PRIx64 "-%#" PRIx64 " overlaps "
				  "%#" PRIx64 "-%#" PRIx64 ": left out",
				  c->files[i].start, c->files[i].end,
				  c->files[out - 1].start, c->files[out - 1].end);
			continue;
		}
		c->files[out++] = c->files[i];
	}
	c->nfiles = out;
	for (size_t i = 0; i < c->nsegs; i++) {
		const struct psvc_core_file *f =
			psvc_core_file_for_addr(c, c->segs[i].vaddr);
		c->segs[i].file = f ? f - c->files : -1;
	}
	return 0;
}

static int map_cmp(const void *a, const void *b)
{
	const struct psvc_core_map *x = a, *y = b;
	return x->map.start < y->map.start ? -1 : x->map.start > y->map.start;
}

static void set_file(struct psvc_core_map *m, const struct psvc_core_file *f)
{
	m->map.path = f->path;
	m->map.deleted = f->deleted;
	/* the NT_FILE offset was checked not to wrap with the length */
	m->map.offset = f->offset + (m->map.start - f->start);
}

/*
 * Every segment, and the parts of NT_FILE mappings no segment covers (gcore
 * writes no segment for a mapping it can read back from its file).  The
 * initial stack and the vDSO are named as in /proc/PID/maps: the auxv says
 * where they are (AT_EXECFN and AT_RANDOM point into the initial stack,
 * AT_SYSINFO_EHDR is the vDSO), so nothing is guessed.
 */
int psvc_core_build_maps(struct psvc_core *c)
{
	size_t cap = c->nsegs + c->nfiles * 2 + 1;
	c->maps = calloc(cap, sizeof *c->maps);
	if (!c->maps)
		return -ENOMEM;
	uint64_t vdso = 0, execfn = 0, rnd = 0;
	psvc_core_auxv(c, AT_SYSINFO_EHDR, &vdso);
	psvc_core_auxv(c, AT_EXECFN, &execfn);
	psvc_core_auxv(c, AT_RANDOM, &rnd);
	size_t n = 0;
	for (size_t i = 0; i < c->nsegs; i++) {
		const struct core_seg *s = &c->segs[i];
		struct psvc_core_map *m = &c->maps[n++];
		m->segment = true;
		m->map.start = s->vaddr;
		m->map.end = s->vaddr + s->memsz;
		m->map.perms[0] = s->flags & PF_R ? 'r' : '-';
		m->map.perms[1] = s->flags & PF_W ? 'w' : '-';
		m->map.perms[2] = s->flags & PF_X ? 'x' : '-';
		m->map.perms[3] = 'p';
		m->in_core = s->avail;
		if (s->file >= 0)
			set_file(m, &c->files[s->file]);
		else if (vdso && vdso - s->vaddr < s->memsz)
			m->map.path = "[vdso]";
		else if ((execfn && execfn - s->vaddr < s->memsz) ||
			 (rnd && rnd - s->vaddr < s->memsz))
			m->map.path = "[stack]";
	}
	for (size_t i = 0; i < c->nfiles; i++) {
		const struct psvc_core_file *f = &c->files[i];
		uint64_t a = f->start;
		while (a < f->end) {
			const struct core_seg *s = psvc_core_seg_for(c, a);
			if (s) {
				a = s->vaddr + s->memsz;
				continue;
			}
			/* the gap up to the next segment or the file's end */
			uint64_t b = f->end;
			size_t lo = array_partition(c->segs, c->nsegs,
						    sizeof *c->segs,
						    seg_starts_by, &a);
			if (lo < c->nsegs && c->segs[lo].vaddr < b)
				b = c->segs[lo].vaddr;
			if (n == cap) {
				size_t ncap = cap * 2;
				struct psvc_core_map *nm =
					realloc(c->maps, ncap * sizeof *nm);
				if (!nm)
					return -ENOMEM;
				memset(nm + cap, 0, (ncap - cap) * sizeof *nm);
				c->maps = nm;
				cap = ncap;
			}
			struct psvc_core_map *m = &c->maps[n++];
			m->map.start = a;
			m->map.end = b;
			memcpy(m->map.perms, "----", 5);
			set_file(m, f);
			a = b;
		}
	}
	qsort(c->maps, n, sizeof *c->maps, map_cmp);
	c->nmaps = n;
	return 0;
}

/* ---- accessors ------------------------------------------------------------- */

const struct arch_desc *psvc_core_arch(const struct psvc_core *c)
{
	return c->arch;
}

enum psvc_core_zip psvc_core_zip(const struct psvc_core *c)
{
	return c->zip;
}

enum psvc_core_producer psvc_core_producer(const struct psvc_core *c)
{
	return c->producer;
}

const struct psvc_core_sizes *psvc_core_sizes(const struct psvc_core *c)
{
	return &c->sizes;
}

size_t psvc_core_nwarnings(const struct psvc_core *c)
{
	return c->warnings.n;
}

const char *psvc_core_warning_at(const struct psvc_core *c, size_t i)
{
	return psvc_warnings_at(&c->warnings, i);
}

size_t psvc_core_nthreads(const struct psvc_core *c)
{
	return c->nthreads;
}

const struct psvc_core_thread *psvc_core_thread_at(const struct psvc_core *c,
						   size_t i)
{
	return i < c->nthreads ? &c->threads[i] : NULL;
}

const struct psvc_core_thread *psvc_core_thread_by_tid(const struct psvc_core *c,
						       pid_t tid)
{
	for (size_t i = 0; i < c->nthreads; i++)
		if (c->threads[i].tid == tid)
			return &c->threads[i];
	return NULL;
}

const struct psvc_core_thread *psvc_core_signalled_thread(const struct psvc_core *c)
{
	return c->signalled >= 0 ? &c->threads[c->signalled] : NULL;
}

const struct psvc_core_proc *psvc_core_proc(const struct psvc_core *c)
{
	return &c->proc;
}

int psvc_core_auxv(const struct psvc_core *c, uint64_t type, uint64_t *ret)
{
	for (size_t i = 0; i < c->nauxv; i++)
		if (c->auxv[2 * i] == type) {
			*ret = c->auxv[2 * i + 1];
			return 0;
		}
	return -ENOENT;
}

size_t psvc_core_auxv_vec(const struct psvc_core *c, const uint64_t **ret)
{
	*ret = c->auxv;
	return c->nauxv;
}

size_t psvc_core_nfiles(const struct psvc_core *c)
{
	return c->nfiles;
}

const struct psvc_core_file *psvc_core_file_at(const struct psvc_core *c,
					       size_t i)
{
	return i < c->nfiles ? &c->files[i] : NULL;
}

const struct psvc_core_file *psvc_core_exe(const struct psvc_core *c)
{
	uint64_t a;
	const struct psvc_core_file *f = NULL;
	if (psvc_core_auxv(c, AT_PHDR, &a) == 0)
		f = psvc_core_file_for_addr(c, a);
	if (!f && psvc_core_auxv(c, AT_ENTRY, &a) == 0)
		f = psvc_core_file_for_addr(c, a);
	return f;
}

size_t psvc_core_nmaps(const struct psvc_core *c)
{
	return c->nmaps;
}

const struct psvc_core_map *psvc_core_map_at(const struct psvc_core *c,
					     size_t i)
{
	return i < c->nmaps ? &c->maps[i] : NULL;
}

int psvc_core_map_lookup(const struct psvc_core *c, uint64_t addr,
			 struct psvc_map *ret, struct psvc_map *ret_below)
{
	size_t lo = 0, hi = c->nmaps;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct psvc_map *m = &c->maps[mid].map;
		if (addr < m->start)
			hi = mid;
		else if (addr >= m->end)
			lo = mid + 1;
		else {
			*ret = *m;
			if (ret_below) {
				if (mid)
					*ret_below = c->maps[mid - 1].map;
				else
					memset(ret_below, 0, sizeof *ret_below);
			}
			return 0;
		}
	}
	return -ENOENT;
}
