/*
 * tls.c: thread-local variables (--tls NAME[:TYPE]) and errno (--errno) in
 * every thread.
 *
 * Before the stop each variable is found once per module generation: an
 * STT_TLS symbol (.symtab, then .dynsym) in the executable or a library,
 * else a DWARF variable with a TLS location; its st_value is an offset in
 * the module's TLS block, not an address (docs/GLIBC.md §8).  During the
 * stop libthread_db turns (link_map address, offset) into each thread's
 * address (td_thr_tls_get_addr; a static executable has no link_map and
 * uses td_thr_tlsbase(th, 1)), and the variable's bytes are copied out;
 * both go through the stop's page cache, filled by a few batched reads
 * (the DTVs, then the values, then the strings they point to).  Decoding
 * and symbolizing wait for the resume.
 */
#include "dbs_int.h"
#include "libc_musl.h"

#include <errno.h>
#include <gelf.h>
#include <libelf.h>
#include <unistd.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- parsing --------------------------------------------------------------- */

static const struct {
	const char *name;
	enum dbs_tls_type type;
	unsigned size;
} type_names[] = {
	{ "int", DBS_TLS_INT, 4 },
	{ "long", DBS_TLS_INT, 8 },
	{ "int8", DBS_TLS_INT, 1 },
	{ "int16", DBS_TLS_INT, 2 },
	{ "int32", DBS_TLS_INT, 4 },
	{ "int64", DBS_TLS_INT, 8 },
	{ "unsigned", DBS_TLS_UNSIGNED, 4 },
	{ "ulong", DBS_TLS_UNSIGNED, 8 },
	{ "uint8", DBS_TLS_UNSIGNED, 1 },
	{ "uint16", DBS_TLS_UNSIGNED, 2 },
	{ "uint32", DBS_TLS_UNSIGNED, 4 },
	{ "uint64", DBS_TLS_UNSIGNED, 8 },
	{ "hex", DBS_TLS_HEX, 0 },
	{ "hex8", DBS_TLS_HEX, 1 },
	{ "hex16", DBS_TLS_HEX, 2 },
	{ "hex32", DBS_TLS_HEX, 4 },
	{ "hex64", DBS_TLS_HEX, 8 },
	{ "pointer", DBS_TLS_POINTER, 8 },
	{ "string", DBS_TLS_STRING, 8 },
	{ "float", DBS_TLS_FLOAT, 4 },
	{ "double", DBS_TLS_FLOAT, 8 },
	{ "bool", DBS_TLS_BOOL, 1 },
};

uint64_t dbs_tls_bits(const struct dbs_tls_var *var, const struct dbs_tls_value *v)
{
	uint64_t u = 0;	/* both our architectures are little-endian */
	if (v->bytes && var->size <= 8)
		memcpy(&u, v->bytes, var->size);
	return u;
}

int64_t dbs_tls_signed(const struct dbs_tls_var *var, const struct dbs_tls_value *v)
{
	uint64_t u = dbs_tls_bits(var, v);
	switch (var->size) {
	case 1: return (int8_t)u;
	case 2: return (int16_t)u;
	case 4: return (int32_t)u;
	default: return (int64_t)u;
	}
}

double dbs_tls_double(const struct dbs_tls_var *var, const struct dbs_tls_value *v)
{
	if (!v->bytes)
		return 0;
	if (var->size == 4) {
		float f;
		memcpy(&f, v->bytes, 4);
		return f;
	}
	double d = 0;
	if (var->size == 8)
		memcpy(&d, v->bytes, 8);
	return d;
}

int dbs_tls_parse_type(const char *ty, struct dbs_tls_request *ret)
{
	struct dbs_tls_request r = *ret;
	{
		bool ok = false;
		if (!strncmp(ty, "bytes:", 6)) {
			char *end;
			errno = 0;
			unsigned long n = strtoul(ty + 6, &end, 10);
			if (errno || end == ty + 6 || *end || n == 0 ||
			    n > DBS_TLS_BYTES_MAX)
				return -EINVAL;
			r.type = DBS_TLS_BYTES;
			r.size = (unsigned)n;
			ok = true;
		}
		for (size_t i = 0; !ok && i < sizeof type_names / sizeof *type_names; i++)
			if (!strcmp(ty, type_names[i].name)) {
				r.type = type_names[i].type;
				r.size = type_names[i].size;
				ok = true;
			}
		if (!ok)
			return -EINVAL;
	}
	*ret = r;
	return 0;
}

const char *dbs_tls_type_name(enum dbs_tls_type type, unsigned size,
			      char *buf, size_t len)
{
	const char *n = NULL;
	switch (type) {
	case DBS_TLS_INT:
		n = size == 1 ? "int8" : size == 2 ? "int16" : size == 4 ? "int" : "long";
		break;
	case DBS_TLS_UNSIGNED:
		n = size == 1 ? "uint8" : size == 2 ? "uint16" :
		    size == 4 ? "unsigned" : "ulong";
		break;
	case DBS_TLS_HEX:
		snprintf(buf, len, "hex%u", size * 8);
		return buf;
	case DBS_TLS_POINTER: n = "pointer"; break;
	case DBS_TLS_STRING: n = "string"; break;
	case DBS_TLS_FLOAT: n = size == 4 ? "float" : "double"; break;
	case DBS_TLS_BOOL: n = "bool"; break;
	case DBS_TLS_BYTES:
		snprintf(buf, len, "bytes:%u", size);
		return buf;
	case DBS_TLS_AUTO: n = "auto"; break;
	}
	snprintf(buf, len, "%s", n ? n : "?");
	return buf;
}

/* ---- state ----------------------------------------------------------------- */

struct tls_var_int {
	struct dbs_tls_var pub;
	uint64_t link_map;	/* of the defining module; 0 with use_tlsbase */
	bool use_tlsbase;	/* static executable: td_thr_tlsbase(th, 1) */
	uint64_t modid;		/* l_tls_modid, for the DTV prefetch; 0 unknown
				 * (musl: the module's TLS ID, the DTV's index) */
	bool musl_errno;	/* musl: errno_val of struct pthread (§12) */
	size_t byte_off;	/* of its bytes in a task's row */
};

struct tls_cell {
	bool tried;		/* libthread_db was asked */
	td_err_e err;
	int read_err;		/* reading the value: -errno */
	uint64_t addr;
	int str_err;
	bool str_cut;		/* only the string's first bytes were read */
	size_t str_len;
	const char *why;	/* musl: why no address (static text) */
};

struct tls_state {
	bool resolved;
	uint64_t generation;
	struct tls_var_int *vars;
	size_t nvars;
	size_t row;		/* bytes of all variables of one task */
	/* the fields the DTV prefetch follows (psvc_field_read) */
	bool have_dtvp, have_dtv;
	struct psvc_field dtvp, dtv;
	/* the current stop, by task index */
	size_t ntasks;
	struct tls_cell *cells;	/* ntasks * nvars */
	unsigned char *bytes;	/* ntasks * row */
	char *strs;		/* ntasks * nvars * DBS_TLS_STRING_MAX */
};

static void vars_clear(struct tls_state *st)
{
	for (size_t i = 0; i < st->nvars; i++) {
		free(st->vars[i].pub.name);
		free(st->vars[i].pub.error);
		free(st->vars[i].pub.module);
		free(st->vars[i].pub.c_type);
	}
	free(st->vars);
	st->vars = NULL;
	st->nvars = 0;
}

static void stop_clear(struct tls_state *st)
{
	free(st->cells);
	free(st->bytes);
	free(st->strs);
	st->cells = NULL;
	st->bytes = NULL;
	st->strs = NULL;
	st->ntasks = 0;
}

void dbs_tls_free(struct dbs_session *s)
{
	if (!s->tls)
		return;
	stop_clear(s->tls);
	vars_clear(s->tls);
	free(s->tls);
	s->tls = NULL;
}

/* ---- before the stop: find the variables ------------------------------------ */

static bool is_static_exe(struct psvc_target *t)
{
	return !psvc_module_flagged(t, PSVC_MOD_LDSO);
}


/* ---- musl: module IDs (docs/MUSL.md §11) ------------------------------------ */

/* Whether the module's file has a PT_TLS segment; -errno if unreadable. */
static int module_has_tls(struct psvc_target *t, struct psvc_module *m)
{
	if (m->flags & PSVC_MOD_VDSO)
		return 0;
	int fd = psvc_module_open_fd(t, m);
	if (fd < 0)
		return fd;
	elf_version(EV_CURRENT);
	Elf *e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	size_t n;
	int ret = -EIO;
	if (e && elf_getphdrnum(e, &n) == 0) {
		ret = 0;
		for (size_t i = 0; i < n && !ret; i++) {
			GElf_Phdr ph;
			if (gelf_getphdr(e, (int)i, &ph) && ph.p_type == PT_TLS)
				ret = 1;
		}
	}
	if (e)
		elf_end(e);
	close(fd);
	return ret;
}

/* The module of a musl module-list entry: by its address, else by its
 * dynamic section's address (musl's own entry is named "libc.so", not its
 * path). */
static struct psvc_module *module_of_entry(struct psvc_target *t, uint64_t entry)
{
	uint64_t dynv;
	for (size_t i = 0; i < psvc_nmodules(t); i++)
		if (psvc_module_at(t, i)->link_map == entry)
			return psvc_module_at(t, i);
	if (psvc_read(t, entry + 16, &dynv, sizeof dynv) || !dynv)
		return NULL;
	return psvc_module_for_addr(t, dynv);
}

/*
 * musl numbers the modules with TLS from 1 in the order of its module
 * list, whose entries start like struct link_map { base, name, dynv,
 * next, prev } (§11): m's ID is 1 + the modules with PT_TLS before it.
 * A static program's only module is 1.  0 and the ID, or why not.
 */
static const char *musl_module_id(struct psvc_target *t, struct psvc_module *m,
				  uint64_t *ret)
{
	if (is_static_exe(t)) {
		*ret = 1;
		return NULL;
	}
	if (!m->link_map)
		return "the module is not on musl's module list";
	uint64_t id = 1, e = m->link_map;
	for (size_t steps = 0;; steps++) {
		if (steps > psvc_nmodules(t) + 1)
			return "musl's module list is not a list";
		if (psvc_read(t, e + 32, &e, sizeof e))
			return "musl's module list could not be read";
		if (!e)
			break;
		struct psvc_module *p = module_of_entry(t, e);
		if (!p)
			return "an entry of musl's module list is no mapped module";
		int r = module_has_tls(t, p);
		if (r < 0)
			return "a module before it on musl's module list could not "
			       "be read (its PT_TLS tells the module IDs)";
		id += (uint64_t)r;
	}
	*ret = id;
	return NULL;
}

/* The final decoding and read size of a variable. */
static void settle_type(struct tls_var_int *v, enum dbs_tls_type want,
			unsigned want_size, uint64_t sym_size,
			const struct dwarf_tls *dw)
{
	enum dbs_tls_type ty = want;
	unsigned size = want_size;
	if (ty == DBS_TLS_AUTO && dw && dw->type != DBS_TLS_AUTO) {
		ty = dw->type;
		size = dw->size;
	}
	bool pow2 = sym_size == 1 || sym_size == 2 || sym_size == 4 || sym_size == 8;
	if (ty == DBS_TLS_AUTO) {
		/* no type information: show the bits, never guess a sign */
		if (pow2) {
			ty = DBS_TLS_HEX;
			size = (unsigned)sym_size;
		} else {
			ty = DBS_TLS_BYTES;
			size = sym_size && sym_size <= 64 ? (unsigned)sym_size : 8;
		}
	}
	if (ty == DBS_TLS_HEX && size == 0)
		size = pow2 ? (unsigned)sym_size : 8;
	if (size == 0)
		size = 8;
	v->pub.type = ty;
	v->pub.size = size;
	dbs_tls_type_name(ty, size, v->pub.type_name, sizeof v->pub.type_name);
}

static void resolve_one(struct dbs_session *s, struct tls_var_int *v,
			const struct dbs_tls_request *rq, bool is_errno)
{
	struct psvc_target *t = s->t;
	v->pub.name = dbs_strdup(rq->name);
	v->pub.is_errno = is_errno;
	struct psvc_tls_symbol sym;
	struct dwarf_tls dw;
	memset(&dw, 0, sizeof dw);
	bool have_dw = false;
	int err;
	bool musl = s->libc == &dbs_libc_musl;
	if (is_errno && musl) {
		/* not a TLS variable: errno_val of struct pthread (§12) */
		struct psvc_module *lib = NULL;
		for (size_t i = 0; i < psvc_nmodules(t); i++) {
			struct psvc_module *m = psvc_module_at(t, i);
			if (!lib && (m->flags & (PSVC_MOD_LDSO | PSVC_MOD_EXE)) &&
			    (is_static_exe(t) || (m->flags & PSVC_MOD_LDSO)))
				lib = m;
		}
		settle_type(v, DBS_TLS_INT, 4, 4, NULL);
		v->musl_errno = true;
		v->pub.found = true;
		v->pub.source = "struct_pthread";
		v->pub.module = dbs_strdup(lib ? lib->path : NULL);
		v->pub.offset = dbs_musl_layout(psvc_arch(t))->errno_val;
		return;
	}
	if (is_errno) {
		/* libc's own errno, not a variable of that name elsewhere;
		 * in a static executable libc is part of it */
		err = psvc_lookup_tls_symbol(t, "errno", PSVC_MOD_LIBC, &sym);
		if (err && is_static_exe(t))
			err = psvc_lookup_tls_symbol(t, "errno", PSVC_MOD_EXE, &sym);
	} else {
		err = psvc_lookup_tls_symbol(t, rq->name, 0, &sym);
	}
	if (err == 0) {
		v->pub.source = "symtab";
		/* the DWARF variable must be this one, not a static of the
		 * same name in another file of the module */
		if (rq->type == DBS_TLS_AUTO && !is_errno &&
		    dbs_dwarf_find_tls(t, sym.module, rq->name, &dw) == 0 &&
		    (!dw.have_offset || dw.offset == sym.offset))
			have_dw = true;
		if (have_dw)
			v->pub.source = "symtab+dwarf";
	} else if (!is_errno) {
		/* not in any symbol table (a static variable of a stripped
		 * .symtab): the DWARF of the executable, then the others; a
		 * module whose DWARF has the variable without a location is
		 * remembered, to say why it was not found */
		const char *no_location = NULL;
		for (int pass = 0; pass < 2 && err; pass++) {
			for (size_t i = 0; i < psvc_nmodules(t) && err; i++) {
				struct psvc_module *m = psvc_module_at(t, i);
				if ((pass == 0) != !!(m->flags & PSVC_MOD_EXE) ||
				    (m->flags & PSVC_MOD_VDSO))
					continue;
				if (dbs_dwarf_find_tls(t, m, rq->name, &dw) != 0)
					continue;
				if (!dw.have_offset) {
					if (!no_location)
						no_location = m->path;
					continue;
				}
				sym.module = m;
				sym.offset = dw.offset;
				sym.size = dw.size;
				have_dw = true;
				err = 0;
				v->pub.source = "dwarf";
			}
		}
		if (err && no_location) {
			v->pub.type = rq->type;
			v->pub.size = rq->size;
			dbs_tls_type_name(rq->type, rq->size, v->pub.type_name,
					  sizeof v->pub.type_name);
			/* GCC for aarch64 writes no TLS location (no DTPREL
			 * relocation in DWARF there): docs/ARCH.md §5 */
			v->pub.error = dbs_format(
				"thread-local variable \"%s\" is in no symbol table, "
				"and the DWARF of %s has it without a location (as "
				"GCC writes it on aarch64): its address is unknown",
				rq->name, no_location);
			return;
		}
	}
	if (err) {
		v->pub.type = rq->type;
		v->pub.size = rq->size;
		dbs_tls_type_name(rq->type, rq->size, v->pub.type_name,
				  sizeof v->pub.type_name);
		v->pub.error = is_errno
			? dbs_strdup("libc's errno was not found (no libc TLS symbol)")
			: dbs_format("no thread-local variable \"%s\" in the "
				     "executable or any loaded library", rq->name);
		return;
	}
	if (is_errno) {
		/* errno is an int (ISO C), whatever the symbol says */
		settle_type(v, DBS_TLS_INT, 4, sym.size, NULL);
	} else {
		settle_type(v, rq->type, rq->size, sym.size, have_dw ? &dw : NULL);
	}
	if (have_dw && dw.c_type[0])
		v->pub.c_type = dbs_strdup(dw.c_type);
	v->pub.found = true;
	v->pub.module = dbs_strdup(sym.module->path);
	v->pub.offset = sym.offset;
	v->link_map = sym.module->link_map;
	if (musl) {
		const char *why = musl_module_id(t, sym.module, &v->modid);
		if (why) {
			v->pub.found = false;
			v->pub.error = dbs_format("%s: its TLS module ID is not "
						  "known: %s", sym.module->path
						  ? sym.module->path : "the module", why);
		}
		return;
	}
	if (!v->link_map) {
		if ((sym.module->flags & PSVC_MOD_EXE) && is_static_exe(t)) {
			v->use_tlsbase = true;	/* docs/GLIBC.md §8 */
		} else {
			v->pub.found = false;
			v->pub.error = dbs_format("%s is not in the dynamic "
						  "linker's link_map: its TLS cannot "
						  "be located", sym.module->path
						  ? sym.module->path : "the module");
			return;
		}
	} else {
		/* only for the DTV prefetch: unknown costs a few reads */
		struct psvc_layout_src src = psvc_layout_src(t);
		struct psvc_field_rule lm = { "struct link_map (64 KiB at most)",
					      64 * 1024, 64, 1, 1 };
		struct psvc_field f;
		uint64_t a, modid;
		if (psvc_field_read(&src, "_thread_db_link_map_l_tls_modid", &lm,
				    &f, NULL, 0) == 0 &&
		    psvc_field_addr(v->link_map, &f, 0, &a) == 0 &&
		    psvc_read(t, a, &modid, sizeof modid) == 0 &&
		    modid > 0 && modid < 65536)
			v->modid = modid;
	}
}

void dbs_tls_prepare(struct dbs_session *s)
{
	size_t n = s->opts.ntls + (s->opts.want_errno ? 1 : 0);
	if (n == 0)
		return;
	if (!s->tls) {
		s->tls = calloc(1, sizeof *s->tls);
		if (!s->tls)
			return;
	}
	struct tls_state *st = s->tls;
	if (st->resolved && st->generation == psvc_modules_generation(s->t))
		return;
	vars_clear(st);
	st->vars = calloc(n, sizeof *st->vars);
	if (!st->vars)
		return;
	st->nvars = n;
	st->row = 0;
	for (size_t i = 0; i < n; i++) {
		struct tls_var_int *v = &st->vars[i];
		if (i < s->opts.ntls) {
			resolve_one(s, v, &s->opts.tls[i], false);
		} else {
			struct dbs_tls_request rq = { "errno", DBS_TLS_INT, 4 };
			resolve_one(s, v, &rq, true);
		}
		v->byte_off = st->row;
		st->row += v->pub.size;
	}
	/* the DTV prefetch's layout (tdbcheck.c checked the same for
	 * libthread_db; a datum that fails only costs the prefetch) */
	struct psvc_layout_src src = psvc_layout_src(s->t);
	struct psvc_field_rule pd = { "struct pthread and the TCB above it",
		s->sizeof_pthread + psvc_arch(s->t)->tcb_above_pthread, 64, 1, 1 };
	struct psvc_field_rule dtv = { "the DTV", 1ull << 40, 0, 1, 1u << 28 };
	st->have_dtvp = s->sizeof_pthread &&
		psvc_field_read(&src, "_thread_db_pthread_dtvp", &pd, &st->dtvp,
				NULL, 0) == 0;
	st->have_dtv = psvc_field_read(&src, "_thread_db_dtv_dtv", &dtv, &st->dtv,
				       NULL, 0) == 0 &&
		       st->dtv.elem_size >= 8 && st->dtv.elem_size <= 128;
	st->generation = psvc_modules_generation(s->t);
	st->resolved = true;
}

/* ---- during the stop ------------------------------------------------------------ */

/* Cell k holds a non-NULL char * that was read: *p is where it points. */
static bool string_pointer(const struct tls_state *st, size_t k, uint64_t *p)
{
	size_t nv = st->nvars;
	const struct tls_cell *c = &st->cells[k];
	const struct tls_var_int *var = &st->vars[k % nv];
	if (var->pub.type != DBS_TLS_STRING || !c->tried || c->err != TD_OK ||
	    c->read_err)
		return false;
	memcpy(p, st->bytes + (k / nv) * st->row + var->byte_off, sizeof *p);
	return *p != 0;
}

static uint64_t pd_of(const struct tdb_result *r)
{
	return r->err == TD_OK ? (uint64_t)r->ti.ti_tid : 0;
}

/*
 * musl (docs/MUSL.md §11-§12): module i's block of a thread is dtv[i]
 * (dtv[0] is the count; DTP_OFFSET 0), every block exists in every thread;
 * errno is errno_val of the thread's struct pthread.  The DTVs' slots in
 * one batch, then the addresses.
 */
static void musl_addresses(struct dbs_session *s, struct tls_state *st,
			   const struct tdb_result *res, struct psvc_range *r)
{
	struct psvc_target *t = s->t;
	const struct dbs_musl_pthread *L = dbs_musl_layout(psvc_arch(t));
	size_t n = st->ntasks, nv = st->nvars, nr = 0;
	for (size_t i = 0; i < n; i++) {
		const struct dbs_libc_thread *lt = &res[i].lt;
		if (!lt->have || !lt->dtv)
			continue;
		r[nr++] = (struct psvc_range){ lt->dtv, 8 };
		for (size_t v = 0; v < nv; v++)
			if (st->vars[v].modid)
				r[nr++] = (struct psvc_range){
					lt->dtv + 8 * st->vars[v].modid, 8 };
	}
	psvc_copy_needed(t, r, nr);
	for (size_t i = 0; i < n; i++) {
		const struct dbs_libc_thread *lt = &res[i].lt;
		if ((i & 63) == 63 && psvc_check_freeze(t))
			break;	/* the caller sees it too and aborts */
		uint64_t count = 0;
		bool have_count = lt->have && lt->dtv &&
				  psvc_read(t, lt->dtv, &count, sizeof count) == 0;
		for (size_t v = 0; v < nv; v++) {
			const struct tls_var_int *var = &st->vars[v];
			struct tls_cell *c = &st->cells[i * nv + v];
			if (!var->pub.found)
				continue;
			c->tried = true;
			c->err = TD_ERR;
			if (!lt->have) {
				c->why = lt->why ? lt->why
						 : "its struct pthread was not found";
				continue;
			}
			if (var->musl_errno) {
				c->addr = lt->pthread + L->errno_val;
				c->err = TD_OK;
				continue;
			}
			uint64_t block = 0;
			if (!have_count)
				c->why = "its DTV could not be read";
			else if (var->modid > count)
				c->why = "its DTV has no slot for the module";
			else if (psvc_read(t, lt->dtv + 8 * var->modid, &block,
					   sizeof block))
				c->why = "its DTV could not be read";
			else if (!block)
				c->why = "its DTV has no block for the module";
			else {
				c->addr = block + var->pub.offset;
				c->err = TD_OK;
			}
		}
	}
}

void dbs_tls_gather(struct dbs_session *s, const struct tdb_result *res)
{
	struct tls_state *st = s->tls;
	struct psvc_target *t = s->t;
	bool musl = s->libc == &dbs_libc_musl;
	if (!st || !st->nvars || !res)
		return;
	if (musl ? s->threads_source != DBS_THREADS_STRUCT_PTHREAD : !s->ta)
		return;
	size_t n = psvc_ntasks(t), nv = st->nvars;
	size_t ncells = n * nv, nbytes = n * st->row;
	st->ntasks = n;
	st->cells = calloc(ncells ? ncells : 1, sizeof *st->cells);
	st->bytes = calloc(nbytes ? nbytes : 1, 1);
	bool any_str = false;
	for (size_t v = 0; v < nv; v++)
		any_str |= st->vars[v].pub.found &&
			   st->vars[v].pub.type == DBS_TLS_STRING;
	if (any_str)
		st->strs = calloc(n * nv, DBS_TLS_STRING_MAX);
	/* the DTV pass wants a range per thread and per variable more */
	size_t nranges = n * (nv + 1);
	struct psvc_range *r = calloc(nranges ? nranges : 1, sizeof *r);
	if (!st->cells || !st->bytes || (any_str && !st->strs) || !r) {
		free(r);
		stop_clear(st);
		return;
	}

	/* 1. Every thread's DTV in one batch: libthread_db reads the slot
	 * of each module there, one small read per thread, in memory that
	 * malloc put anywhere.  Only the slots it reads: dtv[-1] (the
	 * length), dtv[0] (the generation) and dtv[modid] of each variable,
	 * so a large module id costs nothing more. */
	size_t nr = 0;
	if (musl) {
		musl_addresses(s, st, res, r);
		goto values;
	}
	if (st->have_dtvp && st->have_dtv) {
		uint64_t el = st->dtv.elem_size;
		for (size_t i = 0; i < n; i++) {
			uint64_t pd = pd_of(&res[i]), a, dtv;
			if (!res[i].have_th || !pd ||
			    psvc_field_addr(pd, &st->dtvp, 0, &a) ||
			    psvc_read(t, a, &dtv, sizeof dtv) || dtv < el)
				continue;
			r[nr++] = (struct psvc_range){ dtv - el, 2 * el };
			for (size_t v = 0; v < nv; v++)
				if (st->vars[v].modid &&
				    psvc_field_addr(dtv, &st->dtv,
						    st->vars[v].modid, &a) == 0)
					r[nr++] = (struct psvc_range){ a, el };
		}
		psvc_copy_needed(t, r, nr);
	}

	/* 2. The addresses. */
	for (size_t i = 0; i < n; i++) {
		if (!res[i].have_th)
			continue;
		if ((i & 63) == 63 && psvc_check_freeze(t))
			break;	/* the caller sees it too and aborts */
		for (size_t v = 0; v < nv; v++) {
			const struct tls_var_int *var = &st->vars[v];
			struct tls_cell *c = &st->cells[i * nv + v];
			if (!var->pub.found)
				continue;
			psaddr_t a = 0;
			c->tried = true;
			psvc_tdb_budget(t, TDB_READ_BUDGET);
			if (var->use_tlsbase) {
				c->err = s->lib.td_thr_tlsbase(&res[i].th, 1, &a);
				a = (psaddr_t)((uintptr_t)a + var->pub.offset);
			} else {
				c->err = s->lib.td_thr_tls_get_addr(
					&res[i].th, (psaddr_t)(uintptr_t)var->link_map,
					(size_t)var->pub.offset, &a);
			}
			c->addr = (uint64_t)(uintptr_t)a;
		}
	}

	/* 3. The values, in one batch (exact copies: a page each would
	 * be kept otherwise), then read out of them. */
values:
	nr = 0;
	for (size_t k = 0; k < n * nv; k++)
		if (st->cells[k].tried && st->cells[k].err == TD_OK)
			r[nr++] = (struct psvc_range){ st->cells[k].addr,
						       st->vars[k % nv].pub.size };
	psvc_copy_needed(t, r, nr);
	for (size_t k = 0; k < n * nv; k++) {
		struct tls_cell *c = &st->cells[k];
		const struct tls_var_int *var = &st->vars[k % nv];
		if (c->tried && c->err == TD_OK)
			c->read_err = psvc_read(t, c->addr,
						st->bytes + (k / nv) * st->row + var->byte_off,
						var->pub.size);
	}

	/* 4. The strings that char * variables point to. */
	if (!any_str) {
		free(r);
		return;
	}
	nr = 0;
	uint64_t p;
	for (size_t k = 0; k < n * nv; k++)
		if (string_pointer(st, k, &p))
			r[nr++] = (struct psvc_range){ p, DBS_TLS_STRING_MAX };
	psvc_copy_needed(t, r, nr);
	for (size_t k = 0; k < n * nv; k++) {
		struct tls_cell *c = &st->cells[k];
		if (!string_pointer(st, k, &p))
			continue;
		char *buf = st->strs + k * DBS_TLS_STRING_MAX;
		int rc = psvc_read_string(t, p, buf, DBS_TLS_STRING_MAX);
		c->str_err = rc < 0 ? rc : 0;
		c->str_cut = rc == 1;
		c->str_len = rc < 0 ? 0 : strnlen(buf, DBS_TLS_STRING_MAX - 1);
	}
	free(r);
}

/* ---- after the resume ------------------------------------------------------------- */

static void copy_vars(struct tls_state *st, struct dbs_snapshot *snap)
{
	if (snap->tls_vars || !st->nvars)
		return;
	snap->tls_vars = calloc(st->nvars, sizeof *snap->tls_vars);
	if (!snap->tls_vars)
		return;
	snap->ntls_vars = st->nvars;
	for (size_t i = 0; i < st->nvars; i++) {
		struct dbs_tls_var *d = &snap->tls_vars[i];
		*d = st->vars[i].pub;
		d->name = dbs_strdup(d->name);
		d->error = dbs_strdup(d->error);
		d->module = dbs_strdup(d->module);
		d->c_type = dbs_strdup(d->c_type);
	}
}

static void set_error(struct dbs_tls_value *val, struct dbs_thread *th,
		      const char *name, const char *what, const char *detail)
{
	val->status = DBS_TLS_ERROR;
	val->error = dbs_format("%s: %s", what, detail);
	dbs_add_error(&th->errors, &th->nerrors, "tls %s: %s", name,
		       val->error ? val->error : "error");
}

void dbs_tls_fill(struct dbs_session *s, struct dbs_snapshot *snap,
	      struct dbs_thread *th, size_t i)
{
	struct tls_state *st = s->tls;
	if (!st || !st->nvars)
		return;
	copy_vars(st, snap);
	if (snap->ntls_vars != st->nvars)
		return;
	th->tls = calloc(st->nvars, sizeof *th->tls);
	if (!th->tls)
		return;
	th->ntls = st->nvars;
	for (size_t v = 0; v < st->nvars; v++) {
		const struct tls_var_int *var = &st->vars[v];
		struct dbs_tls_value *val = &th->tls[v];
		const struct tls_cell *c = st->cells && i < st->ntasks
					   ? &st->cells[i * st->nvars + v] : NULL;
		if (!var->pub.found) {
			/* why: once, in the snapshot's tls_vars and warnings */
			val->status = DBS_TLS_NOT_FOUND;
			continue;
		}
		if (!c || !c->tried) {
			val->status = DBS_TLS_UNAVAILABLE;
			val->error = dbs_strdup(
				s->libc == &dbs_libc_musl && !th->stopped ?
					"the thread was not stopped" :
				s->libc == &dbs_libc_musl ?
					"musl's threads were not identified "
					"(threads from /proc only)" :
				!s->ta ? "no libthread_db for this process" :
				!th->stopped ? "the thread was not stopped" :
				!th->have_regs ? "no registers" :
				"libthread_db does not know this thread");
			continue;
		}
		if (c->err == TD_NOTALLOC) {
			/* a dlopen'ed module's block is allocated on the
			 * thread's first access (docs/GLIBC.md §8) */
			val->status = DBS_TLS_NOT_ALLOCATED;
			continue;
		}
		if (c->err != TD_OK && c->why) {
			set_error(val, th, var->pub.name, "musl", c->why);
			continue;
		}
		if (c->err != TD_OK) {
			const char *hz = dbs_descriptor_hazard(s, th);
			char detail[320];
			snprintf(detail, sizeof detail, "%s%s%s",
				 dbs_tdb_strerror(c->err),
				 hz ? "; its struct pthread: " : "", hz ? hz : "");
			set_error(val, th, var->pub.name, "libthread_db", detail);
			continue;
		}
		val->have_addr = true;
		val->addr = c->addr;
		if (c->read_err) {
			const char *hz = psvc_mem_hazard(s->t, c->addr, var->pub.size);
			set_error(val, th, var->pub.name, "cannot read it",
				  hz ? hz : strerror(-c->read_err));
			continue;
		}
		val->bytes = malloc(var->pub.size);
		if (!val->bytes) {
			val->status = DBS_TLS_UNAVAILABLE;
			continue;
		}
		memcpy(val->bytes, st->bytes + i * st->row + var->byte_off,
		       var->pub.size);
		val->status = DBS_TLS_OK;
		uint64_t p = 0;
		if (var->pub.size >= sizeof p)
			memcpy(&p, val->bytes, sizeof p);
		if (var->pub.type == DBS_TLS_POINTER && p)
			dbs_symbolize(s->t, p, &val->ptr_sym);
		if (var->pub.type == DBS_TLS_STRING && p && st->strs) {
			if (c->str_err) {
				val->error = dbs_strdup(strerror(-c->str_err));
			} else {
				const char *b = st->strs +
					(i * st->nvars + v) * DBS_TLS_STRING_MAX;
				val->str = malloc(c->str_len + 1);
				if (val->str) {
					memcpy(val->str, b, c->str_len);
					val->str[c->str_len] = '\0';
					val->str_len = c->str_len;
					val->str_truncated = c->str_cut;
				}
			}
		}
	}
}

void dbs_tls_finish(struct dbs_session *s, struct dbs_snapshot *snap)
{
	struct tls_state *st = s->tls;
	if (!st)
		return;
	if (snap) {
		copy_vars(st, snap);
		for (size_t v = 0; v < st->nvars; v++)
			if (!st->vars[v].pub.found && st->vars[v].pub.error)
				dbs_add_error(&snap->warnings, &snap->nwarnings,
					       "%s %s: %s",
					       st->vars[v].pub.is_errno ? "--errno"
									: "--tls",
					       st->vars[v].pub.name,
					       st->vars[v].pub.error);
	}
	stop_clear(st);
}
