/*
 * modules.c: the target's loaded modules.  The list comes from the dynamic
 * linker's r_debug/link_map chain (found through the executable's DT_DEBUG,
 * docs/GLIBC.md §3) and every entry is cross-checked against
 * /proc/PID/maps; modules only the maps know (the vDSO, a static
 * executable, everything when r_debug is unusable) are added from there.
 * Their ELF files are opened by modfiles.c, their symbols looked up by
 * symbols.c; modmap.c answers what the map holds.
 *
 * The map is rebuilt only when the file-backed mappings change; symbol
 * tables of modules that stay are carried over (the generation number says
 * when something changed).
 */
#include "psvc_int.h"

#include "array.h"
#include "order.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <link.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#define MAX_LINK_MAP 65536

/* ---- /proc/PID/maps ---------------------------------------------------------- */

/* The mappings lookups answer from (psvc_map_lookup) from now on. */
static void set_maps(struct psvc_target *t, struct psvc_mapping *maps,
		     size_t nmaps)
{
	psvc_maps_free(t->maps, t->nmaps);
	t->maps = maps;
	t->nmaps = nmaps;
}

static bool file_backed(const struct psvc_mapping *mp)
{
	return mp->ino != 0 && mp->path && mp->path[0] == '/';
}

static uint64_t maps_fingerprint(const struct psvc_mapping *m, size_t n)
{
	uint64_t h = 1469598103934665603ull;
	for (size_t i = 0; i < n; i++) {
		if (!file_backed(&m[i]) && !(m[i].path && !strcmp(m[i].path, "[vdso]")))
			continue;
		uint64_t v[4] = { m[i].start, m[i].offset, (uint64_t)m[i].ino,
				  (uint64_t)m[i].dev ^ (m[i].perms[2] == 'x') };
		const unsigned char *b = (const unsigned char *)v;
		for (size_t k = 0; k < sizeof v; k++)
			h = (h ^ b[k]) * 1099511628211ull;
	}
	return h;
}

/* ---- module list ------------------------------------------------------------ */

static void module_free(struct psvc_module *m)
{
	free(m->path);
	free(m->l_name);
	psvc_gomod_free(m->go);
	psvc_elfsym_close(m->elf);
}

void psvc_modules_free(struct psvc_target *t)
{
	for (size_t i = 0; i < t->nmods; i++)
		module_free(&t->mods[i]);
	free(t->mods);
	t->mods = NULL;
	t->nmods = 0;
	psvc_maps_free(t->maps, t->nmaps);
	t->maps = NULL;
	t->nmaps = 0;
}

static struct psvc_module *module_new(struct psvc_module **mods, size_t *n,
				      size_t *cap)
{
	if (array_grow(mods, cap, *n + 1, sizeof **mods, 32))
		return NULL;
	struct psvc_module *m = &(*mods)[(*n)++];
	memset(m, 0, sizeof *m);
	return m;
}

/* The mapping that holds addr, or NULL. */
static const struct psvc_mapping *mapping_at(const struct psvc_mapping *m, size_t n,
					uint64_t addr)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (addr < m[mid].start)
			hi = mid;
		else if (addr >= m[mid].end)
			lo = mid + 1;
		else
			return &m[mid];
	}
	return NULL;
}

/* Fill a module's extent from the mappings of its file: the offset-0
 * mapping of the same inode at or below `hint`, and every mapping of that
 * inode after it (the anonymous .bss behind: extend_to_memsz()). */
static bool module_extent(struct psvc_module *mod, const struct psvc_mapping *m,
			  size_t n, const struct psvc_mapping *any)
{
	size_t idx = (size_t)(any - m);
	size_t first = idx;
	while (first > 0 && !(m[first].offset == 0 &&
			      m[first].ino == any->ino && m[first].dev == any->dev)) {
		first--;
	}
	if (!(m[first].offset == 0 && m[first].ino == any->ino &&
	      m[first].dev == any->dev))
		return false;
	size_t last = first;
	for (size_t i = first + 1; i < n; i++) {
		if (m[i].ino == any->ino && m[i].dev == any->dev &&
		    m[i].offset != 0)
			last = i;
		else if (m[i].ino == any->ino && m[i].dev == any->dev)
			break;	/* the next load of the same file */
		else if (!(m[i].ino == 0 && !m[i].path && m[i].start == m[last].end))
			break;
	}
	mod->map_start = m[first].start;
	mod->map_end = m[first].end;
	mod->start = m[first].start;
	mod->end = m[last].end;
	mod->dev = any->dev;
	mod->ino = any->ino;
	if (m[first].deleted)
		mod->flags |= PSVC_MOD_DELETED;
	if (!mod->path && m[first].path)
		mod->path = strdup(m[first].path);
	mod->flags |= PSVC_MOD_MAPS;
	return true;
}

/*
 * A module's globals reach to the end of its last PT_LOAD in memory
 * (p_vaddr + p_memsz): the part of .bss beyond the file's last page is an
 * anonymous mapping of its own (the kernel's ELF loader, or ld.so's
 * _dl_map_segments, zero-fill it right behind the file mapping), and a
 * lock there is as much the module's as one in .data (gdb names it
 * `g + 1048616 in section .bss`).  The extent grows over that tail only
 * where the maps really hold contiguous anonymous mappings, so neither a
 * crafted p_memsz nor an unrelated mapping further up can stretch it; a
 * p_vaddr at or above the end of the user address space (arch_desc
 * .user_end) is no segment of a process.
 */
static void extend_to_memsz(struct psvc_target *t, struct psvc_module *m,
			    const struct psvc_mapping *maps, size_t nmaps)
{
	Elf64_Ehdr eh;
	Elf64_Phdr ph[PSVC_MEM_MAX_PHDRS];
	int nph = psvc_mem_phdrs(t, m->map_start, &eh, ph);
	if (nph < 0)
		return;
	uint64_t top = 0;
	for (int i = 0; i < nph; i++)
		if (ph[i].p_type == PT_LOAD && ph[i].p_memsz < (1ull << 40) &&
		    ph[i].p_vaddr < t->arch->user_end &&
		    ph[i].p_vaddr + ph[i].p_memsz > top)
			top = ph[i].p_vaddr + ph[i].p_memsz;
	uint64_t end = (m->bias + top + 4095) & ~(uint64_t)4095;
	if (!top || end <= m->end || end < m->bias)
		return;
	const struct psvc_mapping *mp = mapping_at(maps, nmaps, m->end);
	uint64_t reach = m->end;
	for (; mp && mp < maps + nmaps && mp->start == reach && reach < end; mp++) {
		if (mp->ino != 0 || mp->path)
			break;
		reach = mp->end;
	}
	m->end = reach < end ? reach : end;
}

/* The r_debug address: DT_DEBUG of the executable's dynamic section. */
static uint64_t find_r_debug(struct psvc_target *t)
{
	if (!t->at_phdr || !t->at_phnum || t->at_phnum > 256)
		return 0;
	Elf64_Phdr ph[256];
	if (psvc_read(t, t->at_phdr, ph, t->at_phnum * sizeof *ph))
		return 0;
	uint64_t bias = 0, dyn = 0, dynsz = 0;
	bool have_phdr = false;
	for (unsigned i = 0; i < t->at_phnum; i++) {
		if (ph[i].p_type == PT_PHDR) {
			bias = t->at_phdr - ph[i].p_vaddr;
			have_phdr = true;
		}
	}
	if (!have_phdr)
		return 0;
	for (unsigned i = 0; i < t->at_phnum; i++)
		if (ph[i].p_type == PT_DYNAMIC) {
			dyn = bias + ph[i].p_vaddr;
			dynsz = ph[i].p_memsz;
		}
	if (!dyn)
		return 0;
	for (uint64_t off = 0; off + 16 <= dynsz && off < 16 * 4096; off += 16) {
		Elf64_Dyn d;
		if (psvc_read(t, dyn + off, &d, sizeof d))
			return 0;
		if (d.d_tag == DT_NULL)
			break;
		if (d.d_tag == DT_DEBUG)
			return d.d_un.d_ptr;
	}
	return 0;
}

/* How many link_map entries the maps can justify: one per object mapped
 * from a file (its offset-0 mapping) and the vDSO, and some slack for an
 * object being mapped as the maps were read. */
static size_t link_map_bound(const struct psvc_mapping *m, size_t n)
{
	size_t k = 8;
	for (size_t i = 0; i < n; i++)
		if (m[i].offset == 0 && (file_backed(&m[i]) ||
					 (m[i].path && !strcmp(m[i].path, "[vdso]"))))
			k++;
	return k < MAX_LINK_MAP ? k : MAX_LINK_MAP;
}

static void note(struct psvc_target *t, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Say what was wrong with the module map (psvc_modmap_note()); the first
 * problem is kept. */
static void note(struct psvc_target *t, const char *fmt, ...)
{
	if (t->modmap_note)
		return;
	va_list ap;
	va_start(ap, fmt);
	if (vasprintf(&t->modmap_note, fmt, ap) < 0)
		t->modmap_note = NULL;
	va_end(ap);
}

/* link_map entries are read like any target memory (the chain walk needs
 * no symbols) */
static int chain_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	return psvc_read(ctx, addr, buf, len);
}

/* The link_map chain as modules (flags PSVC_MOD_LINK_MAP), at most as many
 * entries as the maps justify.  0, or a negative errno (the chain is not
 * usable; t's note says why). */
static int link_map_modules(struct psvc_target *t, uint64_t r_debug,
			    const struct psvc_mapping *maps, size_t nmaps,
			    struct psvc_module **mods, size_t *n, size_t *cap)
{
	struct psvc_layout_src src = { NULL, chain_read, t };
	size_t bound = link_map_bound(maps, nmaps);
	struct psvc_linkmap w;
	char why[256] = "";
	int err = -EAGAIN;
	/* a dlopen in progress makes r_state inconsistent for a moment:
	 * try again a few times before falling back */
	for (int tries = 0; tries < 20 && err == -EAGAIN; tries++) {
		err = psvc_linkmap_walk(&src, r_debug, bound, MAX_LINK_MAP, &w, why,
				   sizeof why);
		if (err == -EAGAIN && !t->stopped)
			usleep(1000);
		else if (err == -EAGAIN)
			break;
	}
	if (err) {
		note(t, "the dynamic linker's module list is not usable (%s): "
		     "modules come from /proc/PID/maps only", why);
		return err;
	}
	if (w.ndup)
		note(t, "the link_map chain lists %zu entries more than once "
		     "(the same dynamic section): they were ignored", w.ndup);
	if (w.cut)
		note(t, "the link_map chain is longer than /proc/PID/maps can "
		     "account for (%zu objects mapped from files) or than %u "
		     "entries: the rest was not read", bound - 8, MAX_LINK_MAP);
	for (size_t i = 0; i < w.n; i++) {
		struct psvc_module *m = module_new(mods, n, cap);
		if (!m) {
			psvc_linkmap_free(&w);
			return -ENOMEM;
		}
		m->l_name = w.v[i].l_name;
		w.v[i].l_name = NULL;
		m->bias = w.v[i].l_addr;
		m->link_map = w.v[i].addr;
		m->l_ld = w.v[i].l_ld;
		m->flags = PSVC_MOD_LINK_MAP;
	}
	psvc_linkmap_free(&w);
	return *n ? 0 : -ENOENT;
}

struct mod_key {
	uint64_t map_start;
	dev_t dev;
	ino_t ino;
	size_t idx;
};

static int cmp_mod_key(const void *a, const void *b)
{
	const struct mod_key *x = a, *y = b;
	return order_u64(x->map_start, y->map_start) ?:
	       order_u64(x->dev, y->dev) ?: order_u64(x->ino, y->ino) ?:
	       order_u64(x->idx, y->idx);
}

/* One module per mapping: entries after the first that name the same
 * mapping (same start, same file) are dropped.  Returns how many were, or
 * -ENOMEM (nothing dropped). */
static long drop_duplicates(struct psvc_module *mods, size_t *n)
{
	struct mod_key *k = malloc((*n ? *n : 1) * sizeof *k);
	bool *dup = calloc(*n ? *n : 1, sizeof *dup);
	if (!k || !dup) {
		free(k);
		free(dup);
		return -ENOMEM;
	}
	size_t nk = 0;
	for (size_t i = 0; i < *n; i++)
		if (mods[i].flags & PSVC_MOD_MAPS)
			k[nk++] = (struct mod_key){ mods[i].map_start, mods[i].dev,
						    mods[i].ino, i };
	qsort(k, nk, sizeof *k, cmp_mod_key);
	long ndup = 0;
	for (size_t i = 1; i < nk; i++)
		if (k[i].map_start == k[i - 1].map_start && k[i].dev == k[i - 1].dev &&
		    k[i].ino == k[i - 1].ino) {
			dup[k[i].idx] = true;
			ndup++;
		}
	size_t w = 0;
	for (size_t i = 0; i < *n; i++) {
		if (dup[i])
			module_free(&mods[i]);
		else
			mods[w++] = mods[i];
	}
	*n = w;
	free(k);
	free(dup);
	return ndup;
}

struct span {
	uint64_t start, end;
};

static int cmp_span(const void *a, const void *b)
{
	const struct span *x = a, *y = b;
	return x->start < y->start ? -1 : x->start > y->start;
}

/* Is addr inside one of the spans (sorted by start)? */
static bool in_spans(const struct span *sp, size_t n, uint64_t addr)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {	/* lo = the first span starting above addr */
		size_t mid = lo + (hi - lo) / 2;
		if (sp[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* extents do not nest in practice; a few steps back cover odd ones */
	for (size_t i = lo, steps = 0; i > 0 && steps < 8; i--, steps++)
		if (sp[i - 1].start <= addr && addr < sp[i - 1].end)
			return true;
	return false;
}

static void classify(struct psvc_target *t, struct psvc_module *m, size_t idx)
{
	if (t->at_sysinfo_ehdr && m->start == t->at_sysinfo_ehdr)
		m->flags |= PSVC_MOD_VDSO;
	if (t->at_base && m->start <= t->at_base && t->at_base < m->end)
		m->flags |= PSVC_MOD_LDSO;
	if ((t->at_phdr && m->start <= t->at_phdr && t->at_phdr < m->end) ||
	    ((m->flags & PSVC_MOD_LINK_MAP) && idx == 0 && m->l_name &&
	     !m->l_name[0]))
		m->flags |= PSVC_MOD_EXE;
	const char *base = m->path ? strrchr(m->path, '/') : NULL;
	base = base ? base + 1 : m->path;
	if (base && (!strncmp(base, "libc.so", 7) || !strncmp(base, "libc-2.", 7)))
		m->flags |= PSVC_MOD_LIBC;
}

static int cmp_mod_start(const void *a, const void *b)
{
	const struct psvc_module *x = a, *y = b;
	return x->start < y->start ? -1 : x->start > y->start;
}

/* Cross-check the link_map entries with the maps: an entry the maps do
 * not back is marked (the vDSO's is dropped, to be re-added from the
 * maps with its range), an object listed twice counts once. */
static void check_link_map(struct psvc_target *t, struct psvc_module *mods,
			   size_t *n, const struct psvc_mapping *maps,
			   size_t nmaps)
{
	for (size_t i = 0; i < *n; i++) {
		struct psvc_module *m = &mods[i];
		const struct psvc_mapping *mp = NULL;
		if (m->l_ld)
			mp = mapping_at(maps, nmaps, m->l_ld);
		if (!mp || !file_backed(mp) || !module_extent(m, maps, nmaps, mp)) {
			/* e.g. the vDSO's link_map entry: l_ld in an
			 * anonymous mapping; it is added from the maps below */
			if (mp && mp->path && !strcmp(mp->path, "[vdso]"))
				m->flags |= PSVC_MOD_VDSO;
			else
				m->flags |= PSVC_MOD_MISMATCH;
			continue;
		}
		uint64_t fl = psvc_mem_first_load(t, m->map_start);
		if (fl == UINT64_MAX || m->map_start - fl != m->bias)
			m->flags |= PSVC_MOD_MISMATCH;
		else
			extend_to_memsz(t, m, maps, nmaps);
	}
	/* One module per mapping: a chain that lists an object more than
	 * once (hostile: 25000 copies of libc's entry) costs one module. */
	long ndup = drop_duplicates(mods, n);
	if (ndup > 0)
		note(t, "the link_map chain lists %ld entries more than once "
		     "(same mapping): they were ignored", ndup);
	/* Drop link_map entries the maps do not back (the vDSO is re-added
	 * from the maps, with its range). */
	size_t k = 0;
	for (size_t i = 0; i < *n; i++) {
		if (!(mods[i].flags & PSVC_MOD_MAPS) &&
		    (mods[i].flags & PSVC_MOD_VDSO)) {
			module_free(&mods[i]);
			continue;
		}
		mods[k++] = mods[i];
	}
	*n = k;
}

/* Whether the object mapped from maps[i] on has code: data files mapped
 * by the program (locale archives, caches) are not modules. */
static bool maps_object_has_code(const struct psvc_target *t,
				 const struct psvc_mapping *maps, size_t nmaps,
				 size_t i)
{
	const struct psvc_mapping *mp = &maps[i];
	bool exec = false;
	for (size_t j = i; j < nmaps && (j == i || maps[j].ino == mp->ino); j++) {
		if (maps[j].ino != mp->ino || maps[j].dev != mp->dev)
			continue;
		if (maps[j].perms[2] == 'x')
			exec = true;
		/* the executable (AT_PHDR in it) has code also where a
		 * core gives no permissions: gcore writes no segment
		 * for a mapping it can read back from its file, a
		 * static program's text included */
		if (t->at_phdr && maps[j].start <= t->at_phdr &&
		    t->at_phdr < maps[j].end)
			exec = true;
	}
	return exec;
}

/* The modules only the maps know (the vDSO, objects the link map does
 * not list, every module of a static program), added to mods. */
static int add_maps_modules(struct psvc_target *t, struct psvc_module **mods,
			    size_t *n, size_t *cap,
			    const struct psvc_mapping *maps, size_t nmaps)
{
	int err = 0;
	struct span *known = malloc((*n ? *n : 1) * sizeof *known);
	size_t nknown = 0;
	if (!known)
		err = -ENOMEM;
	for (size_t i = 0; known && i < *n; i++)
		if ((*mods)[i].end > (*mods)[i].start)
			known[nknown++] = (struct span){ (*mods)[i].start,
							 (*mods)[i].end };
	if (known)
		qsort(known, nknown, sizeof *known, cmp_span);
	for (size_t i = 0; !err && i < nmaps; i++) {
		const struct psvc_mapping *mp = &maps[i];
		bool vdso = mp->path && !strcmp(mp->path, "[vdso]");
		if (!vdso && !(file_backed(mp) && mp->offset == 0))
			continue;
		if (in_spans(known, nknown, mp->start))
			continue;
		/* only objects with code */
		if (!maps_object_has_code(t, maps, nmaps, i))
			continue;
		struct psvc_module *m = module_new(mods, n, cap);
		if (!m) {
			err = -ENOMEM;
			break;
		}
		if (vdso) {
			m->path = strdup("[vdso]");
			m->start = m->map_start = mp->start;
			m->end = m->map_end = mp->end;
			m->flags = PSVC_MOD_MAPS | PSVC_MOD_VDSO;
		} else if (!module_extent(m, maps, nmaps, mp)) {
			(*n)--;
			continue;
		}
		uint64_t fl = psvc_mem_first_load(t, m->map_start);
		m->bias = fl == UINT64_MAX ? m->map_start : m->map_start - fl;
		if (fl != UINT64_MAX && !vdso)
			extend_to_memsz(t, m, maps, nmaps);
	}
	free(known);
	return err;
}

/* Carry symbol tables over for modules that did not change (the old
 * list is sorted by start: a lookup, not a scan). */
static void carry_symbols(struct psvc_target *t, struct psvc_module *mods,
			  size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (!(mods[i].flags & PSVC_MOD_MAPS))
			continue;
		struct psvc_module *o = psvc_module_for_addr(t, mods[i].map_start);
		if (o && o->elf && o->ino == mods[i].ino && o->dev == mods[i].dev &&
		    o->map_start == mods[i].map_start) {
			mods[i].elf = o->elf;
			mods[i].has_symtab = o->has_symtab;
			memcpy(mods[i].build_id, o->build_id, sizeof o->build_id);
			/* the Go table points into the ELF's bytes: with it */
			mods[i].go = o->go;
			mods[i].go_read = o->go_read;
			o->elf = NULL;
			o->go = NULL;
		}
	}
}

int psvc_modules_load(struct psvc_target *t)
{
	struct psvc_mapping *maps;
	size_t nmaps;
	int err = t->backend->maps(t, &maps, &nmaps);
	if (err)
		return err;
	if (nmaps == 0) {
		/* a live process always has mappings: it is exiting (a zombie
		 * shows none), and this is no module map to keep */
		psvc_maps_free(maps, nmaps);
		return -ESRCH;
	}
	uint64_t fp = maps_fingerprint(maps, nmaps);
	if (t->mods && fp == t->mod_fingerprint) {
		/* same modules, but keep the fresh maps: anonymous mappings
		 * (thread stacks) are not in the fingerprint */
		set_maps(t, maps, nmaps);
		return 0;
	}

	struct psvc_module *mods = NULL;
	size_t n = 0, cap = 0;
	enum psvc_modmap_source src = PSVC_MODMAP_MAPS_ONLY;
	free(t->modmap_note);
	t->modmap_note = NULL;
	uint64_t r_debug = find_r_debug(t);
	if (r_debug) {
		if (link_map_modules(t, r_debug, maps, nmaps, &mods, &n, &cap) == 0)
			src = PSVC_MODMAP_LINK_MAP;
		else {
			for (size_t i = 0; i < n; i++)
				module_free(&mods[i]);
			n = 0;
		}
	}
	check_link_map(t, mods, &n, maps, nmaps);
	err = add_maps_modules(t, &mods, &n, &cap, maps, nmaps);
	if (err) {
		for (size_t i = 0; i < n; i++)
			module_free(&mods[i]);
		free(mods);
		psvc_maps_free(maps, nmaps);
		return err;
	}
	for (size_t i = 0; i < n; i++)
		classify(t, &mods[i], i);
	if (n)
		qsort(mods, n, sizeof *mods, cmp_mod_start);
	carry_symbols(t, mods, n);
	psvc_modules_free(t);
	t->mods = mods;
	t->nmods = n;
	set_maps(t, maps, nmaps);
	t->modmap_source = src;
	t->mod_fingerprint = fp;
	t->mod_generation++;
	return 0;
}

/* ---- mappings ------------------------------------------------------------------ */

static void map_out(const struct psvc_mapping *mp, struct psvc_map *ret)
{
	ret->start = mp->start;
	ret->end = mp->end;
	ret->offset = mp->offset;
	memcpy(ret->perms, mp->perms, sizeof ret->perms);
	ret->path = mp->path;
	ret->deleted = mp->deleted;
}

int psvc_map_lookup(struct psvc_target *t, uint64_t addr,
		    struct psvc_map *ret, struct psvc_map *ret_below)
{
	const struct psvc_mapping *mp = mapping_at(t->maps, t->nmaps, addr);
	if (!mp)
		return -ENOENT;
	map_out(mp, ret);
	if (ret_below) {
		memset(ret_below, 0, sizeof *ret_below);
		if (mp > t->maps)
			map_out(mp - 1, ret_below);
	}
	return 0;
}

int psvc_maps_refresh(struct psvc_target *t)
{
	struct psvc_mapping *maps;
	size_t nmaps;
	int err = t->backend->maps(t, &maps, &nmaps);
	if (!err)
		set_maps(t, maps, nmaps);
	return err;
}
