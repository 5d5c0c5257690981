/*
 * symbols.c: looking names up in the target's modules and addresses up
 * in their symbol tables: the global symbols libthread_db asks for (in the
 * order it needs, whatever object name it passes: since glibc 2.34 it is
 * meaningless, docs/GLIBC.md §2), thread-local symbols (offsets in a
 * module's TLS block, not addresses), and the symbol that covers an
 * address.  Also the layout source (layout.c) over the live target: its
 * symbols and its memory.
 */
#include "psvc_int.h"

#include <elf.h>
#include <errno.h>
#include <string.h>

static int lookup_in(struct psvc_target *t, struct psvc_module *m,
		     const char *name, uint64_t *ret)
{
	if (psvc_module_load_elf(t, m))
		return -ENOENT;
	const struct psvc_elfsym *s = psvc_elfsym_lookup(m->elf, name);
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
	const struct psvc_elfsym *s = psvc_elfsym_by_addr(m->elf, addr - m->bias);
	if (s) {
		ret->name = s->name;
		ret->offset = addr - m->bias - s->value;
		ret->size = s->size;
	}
	return 0;
}

static int tls_in(struct psvc_target *t, struct psvc_module *m,
		  const char *name, struct psvc_tls_symbol *ret)
{
	if (psvc_module_load_elf(t, m))
		return -ENOENT;
	const struct psvc_elfsym *s = psvc_elfsym_lookup(m->elf, name);
	if (!s || s->type != STT_TLS)
		return -ENOENT;
	ret->module = m;
	ret->offset = s->value;
	ret->size = s->size;
	return 0;
}

int psvc_lookup_tls_symbol(struct psvc_target *t, const char *name,
			   unsigned want_flags, struct psvc_tls_symbol *ret)
{
	for (int pass = 0; pass < 2; pass++) {
		for (size_t i = 0; i < t->nmods; i++) {
			struct psvc_module *m = &t->mods[i];
			bool exe = m->flags & PSVC_MOD_EXE;
			if ((pass == 0) != exe || (m->flags & PSVC_MOD_VDSO))
				continue;
			if ((m->flags & want_flags) != want_flags)
				continue;
			if (tls_in(t, m, name, ret) == 0)
				return 0;
		}
	}
	return -ENOENT;
}

static int target_lookup(void *ctx, const char *name, uint64_t *ret)
{
	return psvc_lookup_symbol(ctx, name, ret);
}

static int target_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	return psvc_read(ctx, addr, buf, len);
}

struct psvc_layout_src psvc_layout_src(struct psvc_target *t)
{
	return (struct psvc_layout_src){ target_lookup, target_read, t };
}
