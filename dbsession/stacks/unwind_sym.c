/*
 * unwind_sym.c: what each pc of a walk is called: its module, the chain
 * of inlined calls from the DWARF scopes, then the real function from the
 * ELF symbol table (or a stripped Go binary's function table), with
 * source lines.  Cached per pc for the module generation the unwinder
 * reflects: thousands of idle threads share a handful of frames.
 */
#include "unwind_int.h"

#include "array.h"
#include "hashtab.h"

#include <dwarf.h>
#include <stdlib.h>
#include <string.h>

void dbs_unwind_cache_clear(struct dbs_unwinder *u)
{
	for (size_t i = 0; i < u->cache_cap; i++)
		free(u->cache[i].frames);
	array_drop(&u->cache, &u->cache_n, &u->cache_cap);
}

static const char *demangled(struct dbs_unwinder *u, const char *raw,
			     const char **ret_mangled)
{
	*ret_mangled = NULL;
	if (!raw)
		return NULL;
	/* glibc's symbol tables name versioned aliases "sym@@GLIBC_2.34":
	 * the version says nothing about the frame */
	char buf[4096];
	const char *at = strchr(raw, '@');
	const char *name = raw;
	if (at && at != raw && (size_t)(at - raw) < sizeof buf) {
		memcpy(buf, raw, (size_t)(at - raw));
		buf[at - raw] = '\0';
		name = buf;
	}
	char *d = dbs_demangle(name);
	if (!d || !strcmp(d, name)) {
		free(d);
		return dbs_strpool_intern(u->pool, name);
	}
	const char *r = dbs_strpool_intern(u->pool, d);
	free(d);
	*ret_mangled = dbs_strpool_intern(u->pool, name);
	return r;
}

/* Fill e for the (adjusted) pc: module, then the inline chain from the
 * DWARF scopes, then the real function from the ELF symbol table. */
static void symbolize_pc(struct dbs_unwinder *u, uint64_t pc, struct sym_entry *e)
{
	struct dbs_frame fr[32];
	unsigned n = 0;
	memset(fr, 0, sizeof fr);
	e->pc = pc;
	struct psvc_module *pm = psvc_module_for_addr(u->t, pc);
	if (pm) {
		e->bias = pm->bias;
		e->module = dbs_strpool_intern(u->pool, pm->path);
		if (!pm->elf)
			psvc_module_load_elf(u->t, pm);
		if (pm->build_id[0])
			e->build_id = dbs_strpool_intern(u->pool, pm->build_id);
	}
	Dwfl_Module *mod = dwfl_addrmodule(u->dwfl, pc);
	const char *file = NULL;
	int line = 0;
	if (mod) {
		Dwfl_Line *l = dwfl_module_getsrc(mod, pc);
		if (l)
			file = dwfl_lineinfo(l, NULL, &line, NULL, NULL, NULL);
		Dwarf_Addr bias;
		Dwarf_Die *cu = dwfl_module_addrdie(mod, pc, &bias);
		Dwarf_Die *scopes = NULL;
		int ns = cu ? dwarf_getscopes(cu, pc - bias, &scopes) : 0;
		for (int i = 0; i < ns && n < 31; i++) {
			if (dwarf_tag(&scopes[i]) != DW_TAG_inlined_subroutine)
				continue;
			fr[n].inlined = true;
			fr[n].symbol = demangled(u, dbs_die_name(&scopes[i]), &fr[n].mangled);
			fr[n].file = dbs_strpool_intern(u->pool, file);
			fr[n].line = line;
			n++;
			/* the caller's position is this instance's call site */
			file = dbs_die_call_file(cu, &scopes[i]);
			line = dbs_die_call_line(&scopes[i]);
		}
		free(scopes);
	}
	/* the real frame: the ELF symbol (what the code is linked as) */
	GElf_Off off = 0;
	GElf_Sym sym;
	const char *name = mod ? dwfl_module_addrinfo(mod, pc, &off, &sym, NULL,
						      NULL, NULL) : NULL;
	if (!name && pm) {
		/* no Dwfl module (file unreadable for libdwfl): our tables */
		struct psvc_symbol ps;
		if (psvc_addr_to_symbol(u->t, pc, &ps) == 0 && ps.name) {
			name = ps.name;
			off = ps.offset;
		}
	}
	/* a stripped Go binary: its function table names its functions,
	 * with file and line (gomodule.c) */
	struct psvc_gofunc gf;
	if ((!name || !file) && pm && psvc_go_func(u->t, pc, &gf) == 0) {
		if (!name && gf.name) {
			name = gf.name;
			off = pc - gf.entry;
		}
		if (!file && gf.file) {
			file = gf.file;
			line = gf.line;
		}
	}
	fr[n].symbol = demangled(u, name, &fr[n].mangled);
	fr[n].offset = name ? off : 0;
	fr[n].file = dbs_strpool_intern(u->pool, file);
	fr[n].line = line;
	n++;
	for (unsigned i = 0; i < n; i++) {
		fr[i].module = e->module;
		fr[i].build_id = e->build_id;
	}
	e->frames = malloc(n * sizeof *e->frames);
	if (e->frames) {
		memcpy(e->frames, fr, n * sizeof *fr);
		e->nframes = n;
	}
}

/* Bound of the per-pc cache: JIT code and running threads can bring new
 * pcs on every update of a long watch without the module list moving. */
#define SYM_CACHE_MAX (256u * 1024)

/* The cache's slot for pc (open addressing, a power-of-two capacity). */
static size_t pc_slot(uint64_t pc, size_t cap)
{
	return (size_t)(pc * 0x9E3779B97F4A7C15ull >> 20) & (cap - 1);
}

static size_t sym_home(const void *slot, size_t cap)
{
	return pc_slot(((const struct sym_entry *)slot)->pc, cap);
}

const struct sym_entry *dbs_unwind_lookup_pc(struct dbs_unwinder *u, uint64_t pc)
{
	/* a pc in no module (JIT code, garbage) is not worth a cache slot:
	 * it is symbolized on the spot into a scratch entry */
	if (!psvc_module_for_addr(u->t, pc)) {
		free(u->scratch.frames);
		memset(&u->scratch, 0, sizeof u->scratch);
		symbolize_pc(u, pc, &u->scratch);
		return &u->scratch;
	}
	if (u->cache_n >= SYM_CACHE_MAX)
		dbs_unwind_cache_clear(u);	/* strings stay in the pool, bounded too */
	if ((u->cache_n + 1) * 2 > u->cache_cap &&
	    hashtab_grow(&u->cache, &u->cache_cap, sizeof *u->cache, 1024, sym_home))
		return NULL;
	size_t i = pc_slot(pc, u->cache_cap);
	for (; u->cache[i].pc; i = (i + 1) & (u->cache_cap - 1))
		if (u->cache[i].pc == pc)
			return &u->cache[i];
	if (!pc)
		return NULL;
	symbolize_pc(u, pc, &u->cache[i]);
	u->cache_n++;
	return &u->cache[i];
}
