/*
 * modmap.c: the module map as modules.c last built it: where it came from,
 * its generation, and its modules by index, by address and by flag.  The
 * readers of the map (symbols.c, gomodule.c, the session) ask here, and
 * modules.c itself while it rebuilds, so that building the map and what is
 * kept per module (gomodule.c's Go facts, freed with the module) depend on
 * these lookups without depending on each other in a circle.
 */
#include "psvc_int.h"

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

struct psvc_module *psvc_module_flagged(struct psvc_target *t, unsigned flag)
{
	for (size_t i = t->nmods; i-- > 0;)
		if (t->mods[i].flags & flag)
			return &t->mods[i];
	return NULL;
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
