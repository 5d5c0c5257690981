/*
 * symbolize.c: an address of the target as a reader wants it: the module
 * that holds it, the symbol that covers it, the offset from either, and C++
 * names demangled (thread_native_entry(Thread*), not
 * _ZL19thread_native_entryP6Thread).  Start routines, key destructors,
 * pointer-valued TLS variables, lock objects and stack frames all go
 * through it.  A leaf above proc_service's symbol tables; and the names
 * and call sites of inlined instances in DWARF, for the unwinder's frames.
 */
#include "dbs_int.h"

#include <dwarf.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* libstdc++'s demangler (cxxabi.h), callable from C. */
extern char *__cxa_demangle(const char *mangled, char *buf, size_t *len,
			    int *status);

char *dbs_demangle(const char *name)
{
	if (!name)
		return NULL;
	/* Only _Z names, and not absurdly long ones: symbol names come from
	 * ELF files we do not trust, and the demangler recurses. */
	if (name[0] == '_' && name[1] == 'Z' && strnlen(name, 4097) <= 4096) {
		int st = -1;
		char *d = __cxa_demangle(name, NULL, NULL, &st);
		if (d && st == 0)
			return d;
		free(d);
	}
	return strdup(name);
}

void dbs_symbolize(struct psvc_target *t, uint64_t addr, struct dbs_symbol *ret)
{
	struct psvc_symbol sym;
	ret->addr = addr;
	if (psvc_addr_to_symbol(t, addr, &sym) != 0)
		return;
	ret->module = dbs_strdup(sym.module->path);
	ret->name = sym.name ? dbs_demangle(sym.name) : NULL;
	ret->offset = sym.offset;
}

int dbs_symbol_covering(struct psvc_target *t, uint64_t addr,
			struct dbs_symbol *ret, uint64_t *ret_size)
{
	struct psvc_symbol ps;
	if (psvc_addr_to_symbol(t, addr, &ps) || !ps.name)
		return -ENOENT;
	/* a symbol that does not cover addr is no evidence */
	if (ps.size ? ps.offset >= ps.size : ps.offset != 0)
		return -ENOENT;
	ret->addr = addr;
	ret->module = ps.module->path ? strdup(ps.module->path) : NULL;
	ret->name = dbs_demangle(ps.name);
	ret->offset = ps.offset;
	*ret_size = ps.size;
	return 0;
}

/* The name of a subprogram or inlined instance, through its origin. */
const char *dbs_die_name(Dwarf_Die *die)
{
	Dwarf_Attribute a;
	const char *n = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_linkage_name, &a));
	if (!n)
		n = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &a));
	if (!n)
		n = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_name, &a));
	return n;
}

const char *dbs_die_call_file(Dwarf_Die *cudie, Dwarf_Die *die)
{
	Dwarf_Attribute a;
	Dwarf_Word idx;
	Dwarf_Files *files;
	size_t nfiles;
	if (dwarf_formudata(dwarf_attr(die, DW_AT_call_file, &a), &idx) != 0 ||
	    dwarf_getsrcfiles(cudie, &files, &nfiles) != 0 || idx >= nfiles)
		return NULL;
	return dwarf_filesrc(files, idx, NULL, NULL);
}

int dbs_die_call_line(Dwarf_Die *die)
{
	Dwarf_Attribute a;
	Dwarf_Word line;
	if (dwarf_formudata(dwarf_attr(die, DW_AT_call_line, &a), &line) != 0)
		return 0;
	return line > 0x7fffffff ? 0 : (int)line;
}
