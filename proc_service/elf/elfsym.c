/*
 * elfsym.c: the symbol tables of one ELF object (.symtab and .dynsym), read
 * with libelf, for lookups by name (ps_pglobal_lookup, TLS variables) and by
 * address (start routines, lock objects).  ELF files are untrusted: every
 * count is bounded and libelf checks offsets; a file we cannot make sense of
 * just has no symbols.
 */
#include "psvc_int.h"

#include <errno.h>
#include <gelf.h>
#include <libelf.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_SYMS (16u << 20)

struct psvc_elf {
	Elf *elf;
	dev_t dev;		/* the file read (0/0: an image in memory) */
	ino_t ino;
	void *image;		/* owned copy for elf_memory(), or NULL */
	struct psvc_elfsym *syms;
	size_t nsyms;
	uint32_t *by_addr;	/* indices of code/data symbols by value */
	size_t naddr;
	uint32_t *hash;		/* name hash: index + 1, 0 = empty */
	size_t hcap;
	char build_id[41];
	uint64_t load_lo, load_hi;	/* as libdwfl takes them */
	unsigned e_type;
	bool has_symtab;
	unsigned traits;	/* PSVC_ELF_* */
};

static uint32_t name_hash(const char *s)
{
	uint32_t h = 2166136261u;	/* FNV-1a */
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 16777619u;
	return h;
}

static int bind_rank(unsigned char bind)
{
	return bind == STB_GLOBAL ? 0 : bind == STB_WEAK ? 1 : 2;
}

static size_t leading_underscores(const char *s)
{
	size_t n = 0;
	while (s[n] == '_')
		n++;
	return n;
}

/* Is a better name than b for the same address? */
static bool better_name(const struct psvc_elfsym *a, const struct psvc_elfsym *b)
{
	if (bind_rank(a->bind) != bind_rank(b->bind))
		return bind_rank(a->bind) < bind_rank(b->bind);
	size_t ua = leading_underscores(a->name), ub = leading_underscores(b->name);
	if (ua != ub)
		return ua < ub;
	return strcmp(a->name, b->name) < 0;
}

static int cmp_addr(const void *x, const void *y, void *ctx)
{
	const struct psvc_elf *e = ctx;
	const struct psvc_elfsym *a = &e->syms[*(const uint32_t *)x];
	const struct psvc_elfsym *b = &e->syms[*(const uint32_t *)y];
	if (a->value != b->value)
		return a->value < b->value ? -1 : 1;
	/* the preferred name first among equals */
	if (better_name(a, b))
		return -1;
	if (better_name(b, a))
		return 1;
	return 0;
}

static int add_symtab(struct psvc_elf *e, Elf_Scn *scn, const GElf_Shdr *sh)
{
	Elf_Data *d = elf_getdata(scn, NULL);
	if (!d || sh->sh_entsize == 0)
		return 0;
	/* the count from the data libelf converted, not from the header's
	 * sh_entsize (a crafted entsize of 1 would ask for a huge array) */
	size_t fsz = gelf_fsize(e->elf, ELF_T_SYM, 1, EV_CURRENT);
	if (!fsz)
		return 0;
	size_t n = d->d_size / fsz;
	/* entry 0 is the undefined symbol; and realloc() to 0 bytes would
	 * free e->syms (a file with two empty tables: found by fuzz_elfsym) */
	if (n <= 1)
		return 0;
	if (n > MAX_SYMS || e->nsyms + n > MAX_SYMS)
		return -E2BIG;
	struct psvc_elfsym *ns = realloc(e->syms, (e->nsyms + n) * sizeof *ns);
	if (!ns)
		return -ENOMEM;
	e->syms = ns;
	for (size_t i = 1; i < n; i++) {
		GElf_Sym s;
		if (!gelf_getsym(d, (int)i, &s))
			break;
		if (s.st_shndx == SHN_UNDEF || s.st_name == 0)
			continue;
		unsigned char type = GELF_ST_TYPE(s.st_info);
		if (type == STT_SECTION || type == STT_FILE)
			continue;
		const char *name = elf_strptr(e->elf, sh->sh_link, s.st_name);
		if (!name || !*name)
			continue;
		e->syms[e->nsyms++] = (struct psvc_elfsym){
			.value = s.st_value, .size = s.st_size, .name = name,
			.type = type, .bind = GELF_ST_BIND(s.st_info),
		};
	}
	return 0;
}

/* The GNU build-id, and whether the GNU ABI note is there. */
static void read_notes(struct psvc_elf *e)
{
	Elf_Scn *scn = NULL;
	while ((scn = elf_nextscn(e->elf, scn))) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE)
			continue;
		Elf_Data *d = elf_getdata(scn, NULL);
		if (!d)
			continue;
		size_t off = 0, name_off, desc_off;
		GElf_Nhdr nh;
		while ((off = gelf_getnote(d, off, &nh, &name_off, &desc_off))) {
			if (nh.n_namesz != 4 ||
			    memcmp((char *)d->d_buf + name_off, "GNU", 4))
				continue;
			/* the ABI note every glibc-linked executable gets
			 * from glibc's crt1.o (csu/abi-note.S) */
			if (nh.n_type == NT_GNU_ABI_TAG)
				e->traits |= PSVC_ELF_GNU_ABI_TAG;
			if (nh.n_type != NT_GNU_BUILD_ID || e->build_id[0])
				continue;
			size_t n = nh.n_descsz > 20 ? 20 : nh.n_descsz;
			const unsigned char *id =
				(const unsigned char *)d->d_buf + desc_off;
			for (size_t i = 0; i < n; i++)
				snprintf(e->build_id + 2 * i, 3, "%02x", id[i]);
		}
	}
}

static int build_index(struct psvc_elf *e)
{
	/* by name */
	e->hcap = 16;
	while (e->hcap < e->nsyms * 2)
		e->hcap *= 2;
	e->hash = calloc(e->hcap, sizeof *e->hash);
	e->by_addr = malloc((e->nsyms ? e->nsyms : 1) * sizeof *e->by_addr);
	if (!e->hash || !e->by_addr)
		return -ENOMEM;
	for (size_t i = 0; i < e->nsyms; i++) {
		struct psvc_elfsym *s = &e->syms[i];
		size_t h = name_hash(s->name) & (e->hcap - 1);
		bool dup = false;
		while (e->hash[h]) {
			struct psvc_elfsym *o = &e->syms[e->hash[h] - 1];
			if (!strcmp(o->name, s->name)) {
				/* keep a global definition over a local */
				if (bind_rank(s->bind) < bind_rank(o->bind))
					e->hash[h] = (uint32_t)i + 1;
				dup = true;
				break;
			}
			h = (h + 1) & (e->hcap - 1);
		}
		if (!dup)
			e->hash[h] = (uint32_t)i + 1;
		if (s->type == STT_FUNC || s->type == STT_GNU_IFUNC ||
		    s->type == STT_OBJECT || s->type == STT_NOTYPE)
			e->by_addr[e->naddr++] = (uint32_t)i;
	}
	qsort_r(e->by_addr, e->naddr, sizeof *e->by_addr, cmp_addr, e);
	return 0;
}

static struct psvc_elf *load_tables(struct psvc_elf *e, int *ret_err)
{
	int err = -ENOEXEC;
	GElf_Ehdr eh;
	if (!e->elf || elf_kind(e->elf) != ELF_K_ELF || !gelf_getehdr(e->elf, &eh))
		goto fail;

	size_t phnum = 0;
	bool first = true;
	e->e_type = eh.e_type;
	if (elf_getphdrnum(e->elf, &phnum) == 0) {
		for (size_t i = 0; i < phnum && i < 4096; i++) {
			GElf_Phdr ph;
			if (!gelf_getphdr(e->elf, (int)i, &ph))
				continue;
			if (ph.p_type == PT_INTERP)
				e->traits |= PSVC_ELF_INTERP;
			if (ph.p_type != PT_LOAD)
				continue;
			/* libdwfl's view (dwfl_report_elf.c): the first
			 * segment in header order, aligned down; the end of
			 * the last one */
			if (first)
				e->load_lo = ph.p_vaddr & -(ph.p_align ? ph.p_align : 1);
			first = false;
			if (ph.p_vaddr + ph.p_memsz > 0)
				e->load_hi = ph.p_vaddr + ph.p_memsz;
		}
	}

	/* .symtab first: its names win ties (they are the same symbols). */
	for (int pass = 0; pass < 2; pass++) {
		Elf_Scn *scn = NULL;
		while ((scn = elf_nextscn(e->elf, scn))) {
			GElf_Shdr sh;
			if (!gelf_getshdr(scn, &sh))
				continue;
			if (sh.sh_type != (pass == 0 ? SHT_SYMTAB : SHT_DYNSYM))
				continue;
			if (pass == 0)
				e->has_symtab = true;
			err = add_symtab(e, scn, &sh);
			if (err)
				goto fail;
		}
	}
	read_notes(e);
	err = build_index(e);
	if (err)
		goto fail;
	return e;
fail:
	*ret_err = err;
	psvc_elfsym_close(e);
	return NULL;
}

struct psvc_elf *psvc_elfsym_open_fd(int fd, int *ret_err)
{
	elf_version(EV_CURRENT);
	struct psvc_elf *e = calloc(1, sizeof *e);
	struct stat st;
	if (!e || fstat(fd, &st) != 0) {
		close(fd);
		free(e);
		*ret_err = -ENOMEM;
		return NULL;
	}
	e->dev = st.st_dev;
	e->ino = st.st_ino;
	e->elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	/* libelf has the file mapped: it needs no descriptor (FDREAD reads
	 * in whatever is not), and a process with thousands of libraries
	 * must not cost thousands of them (a hostile target could) */
	if (e->elf && elf_cntl(e->elf, ELF_C_FDREAD) != 0) {
		elf_end(e->elf);
		e->elf = NULL;
	}
	close(fd);
	return load_tables(e, ret_err);
}

struct psvc_elf *psvc_elfsym_open_mem(const void *image, size_t len, int *ret_err)
{
	elf_version(EV_CURRENT);
	struct psvc_elf *e = calloc(1, sizeof *e);
	if (e)
		e->image = malloc(len ? len : 1);
	if (!e || !e->image) {
		free(e);
		*ret_err = -ENOMEM;
		return NULL;
	}
	memcpy(e->image, image, len);
	e->elf = elf_memory(e->image, len);
	return load_tables(e, ret_err);
}

void psvc_elfsym_close(struct psvc_elf *e)
{
	if (!e)
		return;
	if (e->elf)
		elf_end(e->elf);
	free(e->image);
	free(e->syms);
	free(e->by_addr);
	free(e->hash);
	free(e);
}

const struct psvc_elfsym *psvc_elfsym_lookup(const struct psvc_elf *e, const char *name)
{
	if (!e || !e->hcap)
		return NULL;
	for (size_t h = name_hash(name) & (e->hcap - 1); e->hash[h];
	     h = (h + 1) & (e->hcap - 1)) {
		const struct psvc_elfsym *s = &e->syms[e->hash[h] - 1];
		if (!strcmp(s->name, name))
			return s;
	}
	return NULL;
}

/* The best of the symbols sharing s's value for vaddr: a sized one whose
 * extent holds vaddr if any (the group is sorted best name first; aliases
 * of other sizes, or the symbols of other sections at offset 0 in a
 * relocatable object, may not hold it: found by fuzz_elfsym). */
static const struct psvc_elfsym *best_of_group(const struct psvc_elf *e, size_t i,
					   uint64_t vaddr)
{
	uint64_t v = e->syms[e->by_addr[i]].value;
	while (i > 0 && e->syms[e->by_addr[i - 1]].value == v)
		i--;
	for (size_t k = i; k < e->naddr && e->syms[e->by_addr[k]].value == v; k++) {
		const struct psvc_elfsym *s = &e->syms[e->by_addr[k]];
		if (s->size && vaddr - v < s->size)
			return s;
	}
	return &e->syms[e->by_addr[i]];
}

const struct psvc_elfsym *psvc_elfsym_by_addr(const struct psvc_elf *e, uint64_t vaddr)
{
	if (!e || !e->naddr)
		return NULL;
	/* lo = one past the last symbol with value <= vaddr */
	size_t lo = 0, hi = e->naddr;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (e->syms[e->by_addr[mid]].value <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* The nearest symbol that covers vaddr: an exact hit, or a sized
	 * symbol whose extent holds it.  A few steps back find an enclosing
	 * symbol over nested ones; a zero-sized symbol below vaddr is no
	 * evidence, so it is not used. */
	for (size_t i = lo, steps = 0; i > 0 && steps < 64; i--, steps++) {
		const struct psvc_elfsym *s = &e->syms[e->by_addr[i - 1]];
		if (s->value == vaddr || (s->size && vaddr - s->value < s->size))
			return best_of_group(e, i - 1, vaddr);
	}
	return NULL;
}

void psvc_elfsym_build_id(const struct psvc_elf *e, char out[41])
{
	memcpy(out, e ? e->build_id : "", e ? sizeof e->build_id : 1);
}

bool psvc_elfsym_has_symtab(const struct psvc_elf *e)
{
	return e && e->has_symtab;
}

void psvc_elfsym_set_file_id(struct psvc_elf *e, dev_t dev, ino_t ino)
{
	e->dev = dev;
	e->ino = ino;
}

void psvc_elfsym_file_id(const struct psvc_elf *e, dev_t *ret_dev, ino_t *ret_ino)
{
	*ret_dev = e ? e->dev : 0;
	*ret_ino = e ? e->ino : 0;
}

void psvc_elfsym_load_span(const struct psvc_elf *e, uint64_t *ret_lo,
		      uint64_t *ret_hi, unsigned *ret_e_type)
{
	*ret_lo = e ? e->load_lo : 0;
	*ret_hi = e ? e->load_hi : 0;
	*ret_e_type = e ? e->e_type : 0;
}

unsigned psvc_elfsym_traits(const struct psvc_elf *e)
{
	return e ? e->traits : 0;
}

const unsigned char *psvc_elfsym_section(const struct psvc_elf *e, const char *name,
					 size_t *ret_len, uint64_t *ret_addr)
{
	size_t shstrndx;
	if (!e || !e->elf || elf_getshdrstrndx(e->elf, &shstrndx) != 0)
		return NULL;
	Elf_Scn *scn = NULL;
	while ((scn = elf_nextscn(e->elf, scn))) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS ||
		    sh.sh_type == SHT_NULL)
			continue;
		const char *n = elf_strptr(e->elf, shstrndx, sh.sh_name);
		if (!n || strcmp(n, name))
			continue;
		/* the bytes as they are in the file: libelf checks that the
		 * section lies inside it */
		Elf_Data *d = elf_rawdata(scn, NULL);
		if (!d || !d->d_buf || d->d_size != sh.sh_size)
			return NULL;
		*ret_len = d->d_size;
		*ret_addr = sh.sh_addr;
		return d->d_buf;
	}
	return NULL;
}

int psvc_elfsym_vread(const struct psvc_elf *e, uint64_t vaddr, void *buf, size_t len)
{
	size_t phnum = 0, fsize = 0;
	const char *file = e && e->elf ? elf_rawfile(e->elf, &fsize) : NULL;
	if (!file || elf_getphdrnum(e->elf, &phnum) != 0)
		return -EFAULT;
	for (size_t i = 0; i < phnum && i < 4096; i++) {
		GElf_Phdr ph;
		if (!gelf_getphdr(e->elf, (int)i, &ph) || ph.p_type != PT_LOAD ||
		    vaddr < ph.p_vaddr || vaddr - ph.p_vaddr >= ph.p_filesz ||
		    len > ph.p_filesz - (vaddr - ph.p_vaddr))
			continue;
		uint64_t off = ph.p_offset + (vaddr - ph.p_vaddr);
		if (off < ph.p_offset || off > fsize || len > fsize - off)
			return -EFAULT;
		memcpy(buf, file + off, len);
		return 0;
	}
	return -EFAULT;
}
