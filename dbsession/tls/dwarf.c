/*
 * dwarf.c: a thread-local variable in DWARF, for --tls.  Gives its type
 * when the symbol table has only a size, and its TLS offset when the
 * symbol table does not have it at all (a static __thread variable of a
 * binary whose local symbols were discarded).  The debug information is
 * the module's own, else the separate file named by its build-id under
 * /usr/lib/debug/.build-id (tinspect's file system, then the target's),
 * accepted only if its build-id matches.  Only before the stop.
 *
 * DWARF is untrusted input like the rest of the ELF file: the walk is
 * bounded in depth and in the number of DIEs, type chains in length.
 */
#include "dbs_int.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwelf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_DEPTH 8
#define MAX_DIES (64u << 20)
#define MAX_TYPE_CHAIN 16

struct walk {
	const char *name;
	unsigned long dies;
	bool found_loc;		/* a definition with a TLS location */
	bool found_decl;	/* only a declaration (type, no location) */
	Dwarf_Die die;
	uint64_t offset;
};

/* DW_AT_location = const + DW_OP_form_tls_address (or the GNU spelling):
 * the offset in the module's TLS block. */
static bool tls_location(Dwarf_Die *d, uint64_t *ret)
{
	Dwarf_Attribute a;
	Dwarf_Op *ops;
	size_t n;
	if (!dwarf_attr(d, DW_AT_location, &a) ||
	    dwarf_getlocation(&a, &ops, &n) != 0 || n != 2)
		return false;
	if (ops[1].atom != DW_OP_form_tls_address &&
	    ops[1].atom != DW_OP_GNU_push_tls_address)
		return false;
	switch (ops[0].atom) {
	case DW_OP_const1u: case DW_OP_const2u: case DW_OP_const4u:
	case DW_OP_const8u: case DW_OP_constu: case DW_OP_addr:
		*ret = ops[0].number;
		return true;
	default:
		return false;
	}
}

static void walk_children(Dwarf_Die *parent, struct walk *w, int depth)
{
	Dwarf_Die child;
	if (depth > MAX_DEPTH || dwarf_child(parent, &child) != 0)
		return;
	do {
		if (++w->dies > MAX_DIES || w->found_loc)
			return;
		int tag = dwarf_tag(&child);
		if (tag == DW_TAG_variable) {
			const char *n = dwarf_diename(&child);
			if (n && !strcmp(n, w->name)) {
				uint64_t off;
				if (tls_location(&child, &off)) {
					w->found_loc = true;
					w->die = child;
					w->offset = off;
					return;
				}
				if (!w->found_decl) {
					w->found_decl = true;
					w->die = child;
				}
			}
		} else if (tag == DW_TAG_subprogram || tag == DW_TAG_lexical_block ||
			   tag == DW_TAG_namespace) {
			/* function-static __thread variables */
			walk_children(&child, w, depth + 1);
		}
	} while (dwarf_siblingof(&child, &child) == 0);
}

/* Follow DW_AT_type; false if there is none (void). */
static bool type_of(Dwarf_Die *d, Dwarf_Die *ret)
{
	Dwarf_Attribute a;
	return dwarf_attr_integrate(d, DW_AT_type, &a) &&
	       dwarf_formref_die(&a, ret) != NULL;
}

/* Skip typedefs and qualifiers; remember the first typedef's name. */
static bool strip(Dwarf_Die *ty, const char **ret_name)
{
	for (int i = 0; i < MAX_TYPE_CHAIN; i++) {
		int tag = dwarf_tag(ty);
		if (tag == DW_TAG_typedef && ret_name && !*ret_name)
			*ret_name = dwarf_diename(ty);
		if (tag != DW_TAG_typedef && tag != DW_TAG_const_type &&
		    tag != DW_TAG_volatile_type && tag != DW_TAG_restrict_type &&
		    tag != DW_TAG_atomic_type)
			return true;
		if (!type_of(ty, ty))
			return false;
	}
	return false;
}

static void describe_type(Dwarf_Die *var, struct dwarf_tls *ret)
{
	Dwarf_Die ty;
	const char *tname = NULL;
	ret->type = DBS_TLS_AUTO;
	if (!type_of(var, &ty) || !strip(&ty, &tname))
		return;
	int tag = dwarf_tag(&ty);
	int size = dwarf_bytesize(&ty);
	const char *base = dwarf_diename(&ty);
	Dwarf_Attribute a;
	Dwarf_Word enc = 0;
	switch (tag) {
	case DW_TAG_base_type:
		if (!dwarf_attr(&ty, DW_AT_encoding, &a) || dwarf_formudata(&a, &enc))
			return;
		if (size != 1 && size != 2 && size != 4 && size != 8)
			break;
		ret->size = (unsigned)size;
		if (enc == DW_ATE_signed || enc == DW_ATE_signed_char)
			ret->type = DBS_TLS_INT;
		else if (enc == DW_ATE_unsigned || enc == DW_ATE_unsigned_char ||
			 enc == DW_ATE_UTF)
			ret->type = DBS_TLS_UNSIGNED;
		else if (enc == DW_ATE_boolean && size == 1)
			ret->type = DBS_TLS_BOOL;
		else if (enc == DW_ATE_float && (size == 4 || size == 8))
			ret->type = DBS_TLS_FLOAT;
		snprintf(ret->c_type, sizeof ret->c_type, "%s",
			 tname ? tname : base ? base : "");
		break;
	case DW_TAG_pointer_type: {
		ret->size = size > 0 ? (unsigned)size : 8;
		ret->type = DBS_TLS_POINTER;
		Dwarf_Die to;
		const char *toname = NULL;
		if (type_of(&ty, &to) && strip(&to, &toname) &&
		    dwarf_tag(&to) == DW_TAG_base_type && dwarf_bytesize(&to) == 1 &&
		    dwarf_attr(&to, DW_AT_encoding, &a) && !dwarf_formudata(&a, &enc) &&
		    (enc == DW_ATE_signed_char || enc == DW_ATE_unsigned_char)) {
			/* char *: the program's own type says it is text */
			ret->type = DBS_TLS_STRING;
			snprintf(ret->c_type, sizeof ret->c_type, "%s",
				 tname ? tname : "char *");
		} else {
			const char *pn = toname ? toname : dwarf_diename(&to);
			snprintf(ret->c_type, sizeof ret->c_type, "%s%s*",
				 tname ? tname : pn ? pn : "void",
				 tname ? "" : " ");
		}
		break;
	}
	case DW_TAG_enumeration_type:
		/* the sign is the underlying type's; without one, show bits */
		if (size == 1 || size == 2 || size == 4 || size == 8) {
			ret->size = (unsigned)size;
			ret->type = DBS_TLS_HEX;
			Dwarf_Die under;
			if (type_of(&ty, &under) && strip(&under, NULL) &&
			    dwarf_attr(&under, DW_AT_encoding, &a) &&
			    !dwarf_formudata(&a, &enc))
				ret->type = enc == DW_ATE_signed ? DBS_TLS_INT
								 : DBS_TLS_UNSIGNED;
		}
		snprintf(ret->c_type, sizeof ret->c_type, "enum %s",
			 base ? base : "");
		break;
	case DW_TAG_structure_type:
	case DW_TAG_union_type:
	case DW_TAG_array_type:
	case DW_TAG_class_type:
		if (size > 0) {
			ret->type = DBS_TLS_BYTES;
			ret->size = size > DBS_TLS_BYTES_MAX ? DBS_TLS_BYTES_MAX
							     : (unsigned)size;
		}
		snprintf(ret->c_type, sizeof ret->c_type, "%s%s",
			 tag == DW_TAG_structure_type ? "struct " :
			 tag == DW_TAG_union_type ? "union " :
			 tag == DW_TAG_class_type ? "class " : "",
			 tname ? tname : base ? base : "array");
		break;
	default:
		break;
	}
}

static int search(Dwarf *dw, const char *name, struct dwarf_tls *ret)
{
	struct walk w = { .name = name };
	Dwarf_CU *cu = NULL;
	Dwarf_Die cudie;
	uint8_t unit_type;
	Dwarf_Half version;
	while (!w.found_loc && w.dies < MAX_DIES &&
	       dwarf_get_units(dw, cu, &cu, &version, &unit_type, &cudie, NULL) == 0)
		walk_children(&cudie, &w, 0);
	if (!w.found_loc && !w.found_decl)
		return -ENOENT;
	memset(ret, 0, sizeof *ret);
	ret->have_offset = w.found_loc;
	ret->offset = w.offset;
	describe_type(&w.die, ret);
	return 0;
}

/* The separate debug file of a build-id, if its build-id matches: in
 * tinspect's file system, then in the target's (root). */
static int open_debug_file(struct psvc_target *t, const char *root,
			   const char *build_id)
{
	size_t n = strlen(build_id);
	if (n < 4)
		return -1;
	char path[256 + PATH_MAX];
	for (int where = 0; where < 2; where++) {
		if (where == 0)
			snprintf(path, sizeof path, "/usr/lib/debug/.build-id/%.2s/%s.debug",
				 build_id, build_id + 2);
		else if (!root[0] ||
			 snprintf(path, sizeof path,
				  "%s/usr/lib/debug/.build-id/%.2s/%s.debug",
				  root, build_id, build_id + 2) >= (int)sizeof path)
			continue;
		/* a regular file, or nothing: never a FIFO to block on, nor a
		 * file system that does not answer (fileworker.c) */
		struct psvc_fileinfo fi;
		int fd = psvc_file_open(t, path, &fi);
		if (fd < 0)
			continue;
		bool ok = false;
		Elf *e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
		const void *id;
		ssize_t len = e ? dwelf_elf_gnu_build_id(e, &id) : -1;
		if (len > 0 && (size_t)len * 2 == n) {
			char hex[41];
			for (ssize_t i = 0; i < len && i < 20; i++)
				snprintf(hex + 2 * i, 3, "%02x",
					 ((const unsigned char *)id)[i]);
			ok = !memcmp(hex, build_id, n);
		}
		if (e)
			elf_end(e);
		if (ok)
			return fd;
		close(fd);
	}
	return -1;
}

int dbs_dwarf_find_tls(struct psvc_target *t, struct psvc_module *m,
		   const char *name, struct dwarf_tls *ret)
{
	int fd = psvc_module_open_fd(t, m);
	if (fd < 0)
		return fd;
	int err = -ENOENT;
	Dwarf *dw = dwarf_begin(fd, DWARF_C_READ);
	if (dw) {
		err = search(dw, name, ret);
		dwarf_end(dw);
	}
	close(fd);
	if (err == 0 || !m->build_id[0])
		return err;
	char root[PATH_MAX];
	if (psvc_root_dir(t, root, sizeof root))
		root[0] = '\0';
	fd = open_debug_file(t, root, m->build_id);
	if (fd < 0)
		return err;
	dw = dwarf_begin(fd, DWARF_C_READ);
	if (dw) {
		err = search(dw, name, ret);
		dwarf_end(dw);
	}
	close(fd);
	return err;
}
