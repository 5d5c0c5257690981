/*
 * modules.c: the target's loaded modules.  The list comes from the dynamic
 * linker's r_debug/link_map chain (found through the executable's DT_DEBUG,
 * GLIBC-NOTES.md §3) and every entry is cross-checked against
 * /proc/PID/maps; modules only the maps know (the vDSO, a static
 * executable, everything when r_debug is unusable) are added from there.
 * ELF files are opened through /proc/PID/map_files (the very inode that is
 * mapped, even if the file was replaced or deleted), else through
 * /proc/PID/root (the target's mount namespace).
 *
 * The map is rebuilt only when the file-backed mappings change; symbol
 * tables of modules that stay are carried over (the generation number says
 * when something changed).
 */
#include "psvc_int.h"

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

void maps_free(struct mapping *m, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(m[i].path);
	free(m);
}

int maps_read(pid_t pid, struct mapping **ret, size_t *ret_n)
{
	char path[64], *buf;
	size_t len;
	snprintf(path, sizeof path, "/proc/%d/maps", (int)pid);
	int err = read_whole_file(path, &buf, &len, 256u << 20);
	if (err)
		return err == -ENOENT ? -ESRCH : err;
	err = maps_parse(buf, ret, ret_n);
	free(buf);
	return err;
}

static bool file_backed(const struct mapping *mp)
{
	return mp->ino != 0 && mp->path && mp->path[0] == '/';
}

static uint64_t maps_fingerprint(const struct mapping *m, size_t n)
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
	elfsym_close(m->elf);
}

void modules_free(struct psvc_target *t)
{
	for (size_t i = 0; i < t->nmods; i++)
		module_free(&t->mods[i]);
	free(t->mods);
	t->mods = NULL;
	t->nmods = 0;
	maps_free(t->maps, t->nmaps);
	t->maps = NULL;
	t->nmaps = 0;
}

static struct psvc_module *module_new(struct psvc_module **mods, size_t *n,
				      size_t *cap)
{
	if (*n == *cap) {
		size_t ncap = *cap ? *cap * 2 : 32;
		struct psvc_module *nm = realloc(*mods, ncap * sizeof *nm);
		if (!nm)
			return NULL;
		*mods = nm;
		*cap = ncap;
	}
	struct psvc_module *m = &(*mods)[(*n)++];
	memset(m, 0, sizeof *m);
	return m;
}

/* The mapping that holds addr, or NULL. */
static const struct mapping *mapping_at(const struct mapping *m, size_t n,
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
static bool module_extent(struct psvc_module *mod, const struct mapping *m,
			  size_t n, const struct mapping *any)
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

/* Lowest PT_LOAD vaddr (page-truncated) of the ELF image mapped at base,
 * read from target memory; UINT64_MAX if unreadable. */
static uint64_t mem_first_load(struct psvc_target *t, uint64_t base)
{
	Elf64_Ehdr eh;
	if (psvc_read(t, base, &eh, sizeof eh) || memcmp(eh.e_ident, ELFMAG, SELFMAG) ||
	    eh.e_phentsize != sizeof(Elf64_Phdr) || eh.e_phnum == 0 ||
	    eh.e_phnum > 256)
		return UINT64_MAX;
	Elf64_Phdr ph[256];
	if (psvc_read(t, base + eh.e_phoff, ph, eh.e_phnum * sizeof *ph))
		return UINT64_MAX;
	uint64_t lo = UINT64_MAX;
	for (unsigned i = 0; i < eh.e_phnum; i++)
		if (ph[i].p_type == PT_LOAD && ph[i].p_vaddr < lo)
			lo = ph[i].p_vaddr;
	return lo == UINT64_MAX ? lo : lo & ~(uint64_t)4095;
}

/*
 * A module's globals reach to the end of its last PT_LOAD in memory
 * (p_vaddr + p_memsz): the part of .bss beyond the file's last page is an
 * anonymous mapping of its own (the kernel's ELF loader, or ld.so's
 * _dl_map_segments, zero-fill it right behind the file mapping), and a
 * lock there is as much the module's as one in .data (gdb names it
 * `g + 1048616 in section .bss`).  The extent grows over that tail only
 * where the maps really hold contiguous anonymous mappings, so neither a
 * crafted p_memsz nor an unrelated mapping further up can stretch it.
 */
static void extend_to_memsz(struct psvc_target *t, struct psvc_module *m,
			    const struct mapping *maps, size_t nmaps)
{
	Elf64_Ehdr eh;
	if (psvc_read(t, m->map_start, &eh, sizeof eh) ||
	    memcmp(eh.e_ident, ELFMAG, SELFMAG) ||
	    eh.e_phentsize != sizeof(Elf64_Phdr) || eh.e_phnum == 0 ||
	    eh.e_phnum > 256)
		return;
	Elf64_Phdr ph[256];
	if (psvc_read(t, m->map_start + eh.e_phoff, ph, eh.e_phnum * sizeof *ph))
		return;
	uint64_t top = 0;
	for (unsigned i = 0; i < eh.e_phnum; i++)
		if (ph[i].p_type == PT_LOAD && ph[i].p_memsz < (1ull << 40) &&
		    ph[i].p_vaddr < (1ull << 47) &&
		    ph[i].p_vaddr + ph[i].p_memsz > top)
			top = ph[i].p_vaddr + ph[i].p_memsz;
	uint64_t end = (m->bias + top + 4095) & ~(uint64_t)4095;
	if (!top || end <= m->end || end < m->bias)
		return;
	const struct mapping *mp = mapping_at(maps, nmaps, m->end);
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
static size_t link_map_bound(const struct mapping *m, size_t n)
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

/* The link_map chain as modules (flags PSVC_MOD_LINK_MAP), at most as many
 * entries as the maps justify.  0, or a negative errno (the chain is not
 * usable; t's note says why). */
static int link_map_modules(struct psvc_target *t, uint64_t r_debug,
			    const struct mapping *maps, size_t nmaps,
			    struct psvc_module **mods, size_t *n, size_t *cap)
{
	struct psvc_layout_src src = psvc_layout_src(t);
	size_t bound = link_map_bound(maps, nmaps);
	struct linkmap_walk w;
	char why[256] = "";
	int err = -EAGAIN;
	/* a dlopen in progress makes r_state inconsistent for a moment:
	 * try again a few times before falling back */
	for (int tries = 0; tries < 20 && err == -EAGAIN; tries++) {
		err = linkmap_walk(&src, r_debug, bound, MAX_LINK_MAP, &w, why,
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
			linkmap_walk_free(&w);
			return -ENOMEM;
		}
		m->l_name = w.v[i].l_name;
		w.v[i].l_name = NULL;
		m->bias = w.v[i].l_addr;
		m->link_map = w.v[i].addr;
		m->l_ld = w.v[i].l_ld;
		m->flags = PSVC_MOD_LINK_MAP;
	}
	linkmap_walk_free(&w);
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
	if (x->map_start != y->map_start)
		return x->map_start < y->map_start ? -1 : 1;
	if (x->dev != y->dev)
		return x->dev < y->dev ? -1 : 1;
	if (x->ino != y->ino)
		return x->ino < y->ino ? -1 : 1;
	return (x->idx > y->idx) - (x->idx < y->idx);
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

int psvc_modules_load(struct psvc_target *t)
{
	struct mapping *maps;
	size_t nmaps;
	int err = maps_read(t->mm_tid, &maps, &nmaps);
	if (err)
		return err;
	if (nmaps == 0) {
		/* a live process always has mappings: it is exiting (a zombie
		 * shows none), and this is no module map to keep */
		maps_free(maps, nmaps);
		return -ESRCH;
	}
	uint64_t fp = maps_fingerprint(maps, nmaps);
	if (t->mods && fp == t->mod_fingerprint) {
		/* same modules, but keep the fresh maps: anonymous mappings
		 * (thread stacks) are not in the fingerprint */
		maps_free(t->maps, t->nmaps);
		t->maps = maps;
		t->nmaps = nmaps;
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

	/* Cross-check link_map entries with the maps. */
	for (size_t i = 0; i < n; i++) {
		struct psvc_module *m = &mods[i];
		const struct mapping *mp = NULL;
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
		uint64_t fl = mem_first_load(t, m->map_start);
		if (fl == UINT64_MAX || m->map_start - fl != m->bias)
			m->flags |= PSVC_MOD_MISMATCH;
		else
			extend_to_memsz(t, m, maps, nmaps);
	}
	/* One module per mapping: a chain that lists an object more than
	 * once (hostile: 25000 copies of libc's entry) costs one module. */
	long ndup = drop_duplicates(mods, &n);
	if (ndup > 0)
		note(t, "the link_map chain lists %ld entries more than once "
		     "(same mapping): they were ignored", ndup);
	/* Drop link_map entries the maps do not back (the vDSO is re-added
	 * from the maps, with its range). */
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		if (!(mods[i].flags & PSVC_MOD_MAPS) &&
		    (mods[i].flags & PSVC_MOD_VDSO)) {
			module_free(&mods[i]);
			continue;
		}
		mods[k++] = mods[i];
	}
	n = k;

	/* Modules only the maps know. */
	struct span *known = malloc((n ? n : 1) * sizeof *known);
	size_t nknown = 0;
	if (!known)
		err = -ENOMEM;
	for (size_t i = 0; known && i < n; i++)
		if (mods[i].end > mods[i].start)
			known[nknown++] = (struct span){ mods[i].start, mods[i].end };
	if (known)
		qsort(known, nknown, sizeof *known, cmp_span);
	for (size_t i = 0; !err && i < nmaps; i++) {
		const struct mapping *mp = &maps[i];
		bool vdso = mp->path && !strcmp(mp->path, "[vdso]");
		if (!vdso && !(file_backed(mp) && mp->offset == 0))
			continue;
		if (in_spans(known, nknown, mp->start))
			continue;
		/* only objects with code: data files mapped by the program
		 * (locale archives, caches) are not modules */
		bool exec = false;
		for (size_t j = i; j < nmaps && (j == i || maps[j].ino == mp->ino); j++)
			if (maps[j].perms[2] == 'x' && maps[j].ino == mp->ino &&
			    maps[j].dev == mp->dev)
				exec = true;
		if (!exec)
			continue;
		struct psvc_module *m = module_new(&mods, &n, &cap);
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
			n--;
			continue;
		}
		uint64_t fl = mem_first_load(t, m->map_start);
		m->bias = fl == UINT64_MAX ? m->map_start : m->map_start - fl;
		if (fl != UINT64_MAX && !vdso)
			extend_to_memsz(t, m, maps, nmaps);
	}
	free(known);
	if (err) {
		for (size_t i = 0; i < n; i++)
			module_free(&mods[i]);
		free(mods);
		maps_free(maps, nmaps);
		return err;
	}
	for (size_t i = 0; i < n; i++)
		classify(t, &mods[i], i);
	if (n)
		qsort(mods, n, sizeof *mods, cmp_mod_start);

	/* Carry symbol tables over for modules that did not change (the old
	 * list is sorted by start: a lookup, not a scan). */
	for (size_t i = 0; i < n; i++) {
		if (!(mods[i].flags & PSVC_MOD_MAPS))
			continue;
		struct psvc_module *o = psvc_module_for_addr(t, mods[i].map_start);
		if (o && o->elf && o->ino == mods[i].ino && o->dev == mods[i].dev &&
		    o->map_start == mods[i].map_start) {
			mods[i].elf = o->elf;
			mods[i].has_symtab = o->has_symtab;
			memcpy(mods[i].build_id, o->build_id, sizeof o->build_id);
			o->elf = NULL;
		}
	}
	modules_free(t);
	t->mods = mods;
	t->nmods = n;
	t->maps = maps;
	t->nmaps = nmaps;
	t->modmap_source = src;
	t->mod_fingerprint = fp;
	t->mod_generation++;
	return 0;
}

enum psvc_modmap_source psvc_modmap_source(const struct psvc_target *t)
{
	return t->modmap_source;
}

const char *psvc_modmap_note(const struct psvc_target *t)
{
	return t->modmap_note;
}

uint64_t psvc_modules_generation(const struct psvc_target *t)
{
	return t->mod_generation;
}

size_t psvc_nmodules(const struct psvc_target *t)
{
	return t->nmods;
}

struct psvc_module *psvc_module_at(struct psvc_target *t, size_t i)
{
	return i < t->nmods ? &t->mods[i] : NULL;
}

struct psvc_module *psvc_module_for_addr(struct psvc_target *t, uint64_t addr)
{
	size_t lo = 0, hi = t->nmods;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (addr < t->mods[mid].start)
			hi = mid;
		else if (addr >= t->mods[mid].end)
			lo = mid + 1;
		else
			return &t->mods[mid];
	}
	return NULL;
}

/* ---- ELF files ----------------------------------------------------------------- */

/*
 * Is the file opened by path the one mapped at m?  The build-ids in the
 * file and in target memory must agree; without a build-id on either side,
 * the inode must (a file replaced on disk has a new one).  Inode numbers
 * alone are not trusted when a build-id is there: through overlayfs,
 * stat() and /proc/PID/maps can disagree about them.
 */
static bool path_is_mapped_file(struct psvc_target *t, struct psvc_module *m,
				const struct psvc_elf *e)
{
	char file_id[41], mem_id[41];
	elfsym_build_id(e, file_id);
	int r = ns_mem_build_id(t, m->map_start, mem_id);
	if (file_id[0] && r == 0)
		return strcmp(file_id, mem_id) == 0;
	if (file_id[0] && r == -ENOENT)
		return false;	/* the mapped image has none: not this file */
	dev_t dev;
	ino_t ino;
	elfsym_file_id(e, &dev, &ino);
	return ino && ino == m->ino;
}

/* A new descriptor on the module's file: the mapped inode itself through
 * map_files (right even if the file was replaced or deleted on disk), else
 * its path in the target's mount namespace; *ret_by_path says which, and
 * then the caller must check it is the mapped file (path_is_mapped_file). */
static int module_open_fd(struct psvc_target *t, const struct psvc_module *m,
			  bool *ret_by_path, struct stat *ret_st)
{
	char path[4200];
	*ret_by_path = false;
	int fd = -EACCES;
	if (!t->no_map_files) {
		snprintf(path, sizeof path, "/proc/%d/map_files/%" PRIx64 "-%" PRIx64,
			 (int)t->mm_tid, m->map_start, m->map_end);
		fd = psvc_open_regular(path, ret_st);
		if (fd >= 0 || fd == -EMFILE || fd == -ENFILE)
			return fd;
	}
	if (!m->path || (m->flags & PSVC_MOD_DELETED))
		return fd;
	/* a path the target's user may own: only a regular file, opened
	 * without blocking (regfile.c) */
	if (snprintf(path, sizeof path, "/proc/%d/root%s", (int)t->mm_tid,
		     m->path) >= (int)sizeof path)
		return -ENAMETOOLONG;
	fd = psvc_open_regular(path, ret_st);
	if (fd >= 0)
		*ret_by_path = true;
	return fd;
}

/* A new descriptor on the very file the module's symbols were read from
 * (after they were: the file is checked then). */
static int reopen_checked(struct psvc_target *t, struct psvc_module *m)
{
	int err = psvc_module_load_elf(t, m);
	if (err)
		return err;
	bool by_path;
	struct stat st;
	int fd = module_open_fd(t, m, &by_path, &st);
	if (fd < 0 || !by_path)
		return fd;
	/* by path: the file there now must be the one that was checked */
	dev_t dev;
	ino_t ino;
	elfsym_file_id(m->elf, &dev, &ino);
	if (st.st_dev != dev || st.st_ino != ino) {
		close(fd);
		return -ESTALE;
	}
	return fd;
}

int psvc_module_open_fd(struct psvc_target *t, struct psvc_module *m)
{
	if (m->flags & PSVC_MOD_VDSO)
		return -ENOENT;	/* read from memory */
	return reopen_checked(t, m);
}

/* The vDSO has no file: its image is copied from target memory. */
static int vdso_image(struct psvc_target *t, const struct psvc_module *m,
		      void **ret, size_t *ret_len)
{
	size_t len = (size_t)(m->end - m->start);
	if (len == 0 || len > (1u << 20))
		return -E2BIG;
	void *img = malloc(len);
	if (!img)
		return -ENOMEM;
	int err = psvc_read(t, m->start, img, len);
	if (err) {
		free(img);
		return err;
	}
	*ret = img;
	*ret_len = len;
	return 0;
}

int psvc_module_open(struct psvc_target *t, struct psvc_module *m)
{
	if (!(m->flags & PSVC_MOD_VDSO)) {
		/* the symbol tables are loaded (and the file checked) first:
		 * a file that is not the mapped one is not handed out */
		return reopen_checked(t, m);
	}
	void *img;
	size_t len;
	int err = vdso_image(t, m, &img, &len);
	if (err)
		return err;
	int fd = memfd_create("vdso", MFD_CLOEXEC);
	if (fd < 0) {
		err = -errno;
	} else if (write(fd, img, len) != (ssize_t)len) {
		err = -EIO;
		close(fd);
		fd = -1;
	}
	free(img);
	return fd >= 0 ? fd : err;
}

int psvc_module_load_elf(struct psvc_target *t, struct psvc_module *m)
{
	if (m->elf)
		return 0;
	if (m->elf_errno)
		return -m->elf_errno;
	int err;
	if (m->flags & PSVC_MOD_VDSO) {
		void *img;
		size_t len;
		err = vdso_image(t, m, &img, &len);
		if (!err) {
			m->elf = elfsym_open_mem(img, len, &err);
			free(img);
		}
	} else {
		bool check_id;
		struct stat st;
		int fd = module_open_fd(t, m, &check_id, &st);
		err = fd;
		if (fd >= 0)
			m->elf = elfsym_open_fd(fd, &err);
		if (m->elf && check_id && !path_is_mapped_file(t, m, m->elf)) {
			/* replaced on disk, or another file at that path in
			 * that namespace: its symbols would be wrong */
			elfsym_close(m->elf);
			m->elf = NULL;
			err = -ESTALE;
		}
	}
	if (!m->elf) {
		/* out of descriptors is not a property of the file: the
		 * next attempt may work */
		if (err != -EMFILE && err != -ENFILE)
			m->elf_errno = -err;
		return err;
	}
	elfsym_build_id(m->elf, m->build_id);
	m->has_symtab = elfsym_has_symtab(m->elf);
	return 0;
}

int psvc_module_span(struct psvc_target *t, struct psvc_module *m,
		     uint64_t *ret_low, uint64_t *ret_high)
{
	int err = psvc_module_load_elf(t, m);
	if (err)
		return err;
	uint64_t lo, hi;
	unsigned e_type;
	elfsym_load_span(m->elf, &lo, &hi, &e_type);
	/* an ET_EXEC is where its headers say (libdwfl ignores a base) */
	uint64_t bias = e_type == ET_EXEC ? 0 : m->bias;
	if (hi <= lo || !psvc_add_ok(bias, lo, ret_low) ||
	    !psvc_add_ok(bias, hi, ret_high))
		return -ENOEXEC;
	return 0;
}

static int lookup_in(struct psvc_target *t, struct psvc_module *m,
		     const char *name, uint64_t *ret)
{
	if (psvc_module_load_elf(t, m))
		return -ENOENT;
	const struct elf_sym *s = elfsym_lookup(m->elf, name);
	if (!s)
		return -ENOENT;
	/* TLS symbols are offsets in the module's TLS block, not addresses */
	*ret = s->type == STT_TLS ? s->value : m->bias + s->value;
	return 0;
}

int psvc_lookup_symbol(struct psvc_target *t, const char *name,
		       uint64_t *ret_addr)
{
	static const unsigned order[] = { PSVC_MOD_LIBC, PSVC_MOD_LDSO,
					  PSVC_MOD_EXE, 0 };
	for (size_t o = 0; o < sizeof order / sizeof *order; o++) {
		for (size_t i = 0; i < t->nmods; i++) {
			struct psvc_module *m = &t->mods[i];
			if (m->flags & PSVC_MOD_VDSO)
				continue;
			bool first_class = m->flags & (PSVC_MOD_LIBC | PSVC_MOD_LDSO |
						       PSVC_MOD_EXE);
			if (order[o] ? !(m->flags & order[o]) : first_class)
				continue;
			if (lookup_in(t, m, name, ret_addr) == 0)
				return 0;
		}
	}
	return -ENOENT;
}

int psvc_addr_to_symbol(struct psvc_target *t, uint64_t addr,
			struct psvc_symbol *ret)
{
	struct psvc_module *m = psvc_module_for_addr(t, addr);
	if (!m)
		return -ENOENT;
	ret->module = m;
	ret->name = NULL;
	ret->offset = addr - m->bias;
	ret->size = 0;
	if (psvc_module_load_elf(t, m))
		return 0;
	const struct elf_sym *s = elfsym_by_addr(m->elf, addr - m->bias);
	if (s) {
		ret->name = s->name;
		ret->offset = addr - m->bias - s->value;
		ret->size = s->size;
	}
	return 0;
}

/* ---- mappings ------------------------------------------------------------------ */

static void map_out(const struct mapping *mp, struct psvc_map *ret)
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
	const struct mapping *mp = mapping_at(t->maps, t->nmaps, addr);
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
	struct mapping *maps;
	size_t nmaps;
	int err = maps_read(t->mm_tid, &maps, &nmaps);
	if (err)
		return err;
	maps_free(t->maps, t->nmaps);
	t->maps = maps;
	t->nmaps = nmaps;
	return 0;
}
