/*
 * gomodule.c: what a module's file shows of the Go runtime, read once per
 * module from what stripping leaves (docs/GO.md): the Go version from
 * .go.buildinfo (gobuildinfo.c) and the function table, .gopclntab
 * (.data.rel.ro.gopclntab in a position-independent one), that names Go
 * functions and gives their files, lines and frame sizes (gopclntab.c).
 *
 * The function table counts its functions from runtime.text, which a
 * stripped file no longer names.  The table's header said where it is
 * until Go 1.25; the runtime itself takes it from its module data
 * (runtime.firstmoduledata), which points to the table and to each of its
 * parts: found in the file's data (or, in a position-independent file,
 * its relocations) by those pointers, every one checked, it gives the
 * text start for every Go version.  It wins over the header (the runtime
 * refuses to start when the two differ).  Neither found: the functions
 * stay unnamed, with the reason.
 */
#include "psvc_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct psvc_gomod {
	bool go;		/* buildinfo or a function table seen */
	char version[80];
	struct psvc_gotab *tab;	/* NULL: none usable (why) */
	const char *why;
};

static int file_vread(void *ctx, uint64_t vaddr, void *buf, size_t len)
{
	return psvc_elfsym_vread(ctx, vaddr, buf, len);
}

static uint64_t le64(const unsigned char *p)
{
	uint64_t v = 0;
	for (unsigned i = 8; i-- > 0;)
		v = v << 8 | p[i];
	return v;
}

/* A position-independent file's data words that hold addresses are left
 * to relocations (R_X86_64_RELATIVE, R_AARCH64_RELATIVE: the addend is
 * the link-time address); the file may hold 0 there.  The words of the
 * file as the loader makes them, from .rela.dyn sorted by offset. */
struct words {
	const struct psvc_elf *e;
	uint64_t *off, *addend;
	size_t n;
};

#define R_X86_64_RELATIVE_ 8
#define R_AARCH64_RELATIVE_ 1027
/* Relocations read at most (a big Go PIE has some hundred thousand). */
#define MAX_RELOCS (4u << 20)

static int cmp_u64_pair(const void *a, const void *b)
{
	uint64_t x = ((const uint64_t *)a)[0], y = ((const uint64_t *)b)[0];
	return x < y ? -1 : x > y;
}

static void words_init(struct words *w, const struct psvc_elf *e)
{
	memset(w, 0, sizeof *w);
	w->e = e;
	size_t len;
	uint64_t addr;
	const unsigned char *r = psvc_elfsym_section(e, ".rela.dyn", &len, &addr);
	size_t n = r ? len / 24 : 0;
	if (n > MAX_RELOCS)
		n = MAX_RELOCS;
	uint64_t *pairs = n ? malloc(n * 2 * sizeof *pairs) : NULL;
	size_t k = 0;
	for (size_t i = 0; pairs && i < n; i++) {
		uint32_t type = (uint32_t)le64(r + 24 * i + 8);
		if (type != R_X86_64_RELATIVE_ && type != R_AARCH64_RELATIVE_)
			continue;
		pairs[2 * k] = le64(r + 24 * i);
		pairs[2 * k + 1] = le64(r + 24 * i + 16);
		k++;
	}
	if (!k) {
		free(pairs);
		return;
	}
	qsort(pairs, k, 2 * sizeof *pairs, cmp_u64_pair);
	w->off = pairs;	/* pairs: offset, addend */
	w->n = k;
}

static void words_free(struct words *w)
{
	free(w->off);
	w->off = NULL;
}

/* The relocation at vaddr, if any. */
static const uint64_t *reloc_at(const struct words *w, uint64_t vaddr)
{
	size_t lo = 0, hi = w->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		uint64_t o = w->off[2 * mid];
		if (o == vaddr)
			return &w->off[2 * mid];
		if (o < vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

/* The 8-byte word at vaddr as loaded: 0 if it is not in the file. */
static uint64_t word_at(const struct words *w, uint64_t vaddr)
{
	const uint64_t *r = reloc_at(w, vaddr);
	if (r)
		return r[1];
	unsigned char b[8];
	return psvc_elfsym_vread(w->e, vaddr, b, 8) ? 0 : le64(b);
}

/* runtime.moduledata's first words (the same from Go 1.18 to 1.27): the
 * table's header, then six slices {data, len, cap} of its parts
 * (funcnametab, cutab, filetab, pctab, pclntable, ftab), findfunctab,
 * minpc, maxpc, text, etext. */
enum { MD_HEADER = 0, MD_NAMES = 1, MD_CUTAB = 4, MD_FILES = 7, MD_PCTAB = 10,
       MD_PCLN = 13, MD_FTAB = 16, MD_MINPC = 20, MD_MAXPC = 21, MD_TEXT = 22,
       MD_ETEXT = 23, MD_WORDS = 24 };

/* runtime.text if the module data is at md, else 0: every pointer to
 * the table's parts, the function count, and the text's span agree. */
static uint64_t moduledata_text_at(const struct words *w, uint64_t md,
				   uint64_t tab_addr, const struct psvc_gotab *tab)
{
	uint64_t off[5];
	uint32_t first, end;
	psvc_gotab_offsets(tab, off);
	psvc_gotab_span(tab, &first, &end);
	static const unsigned parts[5] = { MD_NAMES, MD_CUTAB, MD_FILES, MD_PCTAB,
					   MD_PCLN };
	if (word_at(w, md + 8 * MD_HEADER) != tab_addr)
		return 0;
	for (unsigned i = 0; i < 5; i++)
		if (word_at(w, md + 8 * parts[i]) != tab_addr + off[i])
			return 0;
	uint64_t text = word_at(w, md + 8 * MD_TEXT);
	/* the function list is the start of pclntable, nfunc + 1 long */
	bool ok = word_at(w, md + 8 * MD_FTAB) == tab_addr + off[4] &&
		  word_at(w, md + 8 * (MD_FTAB + 1)) == psvc_gotab_nfunc(tab) + 1 &&
		  text && word_at(w, md + 8 * MD_MINPC) == text + first &&
		  word_at(w, md + 8 * MD_MAXPC) == text + end &&
		  word_at(w, md + 8 * MD_ETEXT) >= text + end;
	return ok ? text : 0;
}

/* runtime.text from the module data (runtime.firstmoduledata: in
 * .go.module from Go 1.26, .noptrdata before), found by its first word,
 * the table's address, in the file or in a relocation; 0 if not found. */
static uint64_t moduledata_text(const struct words *w, uint64_t tab_addr,
				const struct psvc_gotab *tab)
{
	for (size_t i = 0; i < w->n; i++) {
		uint64_t text;
		if (w->off[2 * i + 1] == tab_addr &&
		    (text = moduledata_text_at(w, w->off[2 * i], tab_addr, tab)))
			return text;
	}
	static const char *const where[] = { ".go.module", ".noptrdata", ".data",
					     ".data.rel.ro" };
	for (size_t k = 0; k < sizeof where / sizeof *where; k++) {
		size_t len;
		uint64_t addr, text;
		const unsigned char *d = psvc_elfsym_section(w->e, where[k], &len, &addr);
		if (!d || len < 8 * MD_WORDS)
			continue;
		for (size_t at = 0; at <= len - 8 * MD_WORDS; at += 8)
			if (le64(d + at) == tab_addr &&
			    (text = moduledata_text_at(w, addr + at, tab_addr, tab)))
				return text;
	}
	return 0;
}

/* An externally linked position-independent file has no section of its
 * own for the table (the linker merged .data.rel.ro.gopclntab into
 * .data.rel.ro): a table header found there counts only with the module
 * data that points to it. */
static bool find_merged_table(struct psvc_gomod *g, const struct words *w,
			      uint64_t *ret_text)
{
	static const char *const where[] = { ".data.rel.ro", ".rodata" };
	for (size_t k = 0; k < sizeof where / sizeof *where; k++) {
		size_t len;
		uint64_t addr;
		const unsigned char *d = psvc_elfsym_section(w->e, where[k], &len, &addr);
		for (size_t at = 0; d && len >= 8 && at <= len - 8; at += 8) {
			if ((d[at] != 0xf0 && d[at] != 0xf1) || d[at + 1] != 0xff ||
			    d[at + 2] != 0xff || d[at + 3] != 0xff)
				continue;
			const char *why;
			struct psvc_gotab *tab;
			if (psvc_gotab_open(d + at, len - at, &tab, &why))
				continue;
			uint64_t text = moduledata_text(w, addr + at, tab);
			if (text) {
				g->tab = tab;
				*ret_text = text;
				return true;
			}
			psvc_gotab_free(tab);
		}
	}
	return false;
}

static void read_table(struct psvc_gomod *g, const struct psvc_elf *e)
{
	size_t len;
	uint64_t addr, text = 0;
	const unsigned char *d = psvc_elfsym_section(e, ".gopclntab", &len, &addr);
	if (!d)
		d = psvc_elfsym_section(e, ".data.rel.ro.gopclntab", &len, &addr);
	if (!d && !g->go)
		return;	/* no Go here: not worth a look at its data */
	struct words w;
	words_init(&w, e);
	if (!d) {
		if (find_merged_table(g, &w, &text)) {
			g->go = true;
			psvc_gotab_set_text(g->tab, text);
		} else {
			g->why = "no Go function table (.gopclntab) in its file";
		}
		words_free(&w);
		return;
	}
	g->go = true;
	const char *why;
	if (psvc_gotab_open(d, len, &g->tab, &why)) {
		g->why = why;
		words_free(&w);
		return;
	}
	text = moduledata_text(&w, addr, g->tab);
	words_free(&w);
	if (!text)
		text = psvc_gotab_header_text(g->tab);
	if (!text) {
		g->why = "where its Go code starts (runtime.text) is not known: "
			 "no module data found in its file";
		psvc_gotab_free(g->tab);
		g->tab = NULL;
		return;
	}
	psvc_gotab_set_text(g->tab, text);
}

static struct psvc_gomod *go_of(struct psvc_target *t, struct psvc_module *m)
{
	if (m->go_read)
		return m->go;
	if (psvc_module_load_elf(t, m))
		return NULL;	/* not remembered: EMFILE may pass */
	m->go_read = true;
	if (m->flags & PSVC_MOD_VDSO)
		return NULL;
	struct psvc_gomod *g = calloc(1, sizeof *g);
	if (!g)
		return NULL;
	size_t len;
	uint64_t addr;
	const unsigned char *bi = psvc_elfsym_section(m->elf, ".go.buildinfo", &len, &addr);
	if (bi) {
		g->go = true;
		psvc_go_buildinfo_version(bi, len, file_vread, m->elf, g->version,
					  sizeof g->version);
	}
	read_table(g, m->elf);
	if (!g->go) {
		free(g);
		return NULL;
	}
	m->go = g;
	return g;
}

void psvc_gomod_free(struct psvc_gomod *g)
{
	if (g)
		psvc_gotab_free(g->tab);
	free(g);
}

int psvc_module_go(struct psvc_target *t, struct psvc_module *m,
		   struct psvc_go_info *ret)
{
	memset(ret, 0, sizeof *ret);
	const struct psvc_gomod *g = go_of(t, m);
	if (!g)
		return -ENOENT;
	ret->version = g->version[0] ? g->version : NULL;
	ret->format = psvc_gotab_format(g->tab);
	ret->why = g->tab ? NULL : g->why;
	return 0;
}

int psvc_go_func(struct psvc_target *t, uint64_t addr, struct psvc_gofunc *ret)
{
	memset(ret, 0, sizeof *ret);
	struct psvc_module *m = psvc_module_for_addr(t, addr);
	const struct psvc_gomod *g = m ? go_of(t, m) : NULL;
	if (!g || !g->tab || psvc_gotab_lookup(g->tab, addr - m->bias, ret))
		return -ENOENT;
	ret->entry += m->bias;
	ret->end += m->bias;
	return 0;
}

bool psvc_go_without_libc(struct psvc_target *t)
{
	struct psvc_module *exe = psvc_module_flagged(t, PSVC_MOD_EXE);
	if (psvc_module_flagged(t, PSVC_MOD_LIBC) || !exe || !go_of(t, exe))
		return false;
	unsigned tr = psvc_elfsym_traits(exe->elf);
	return !(tr & (PSVC_ELF_INTERP | PSVC_ELF_GNU_ABI_TAG));
}
