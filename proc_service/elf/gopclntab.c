/*
 * gopclntab.c: a Go program's function table, the .gopclntab section the
 * Go linker writes into every Go binary and that stripping leaves (the
 * runtime needs it for its own tracebacks).  It names each function, and
 * for every pc gives the source file and line, and how far the stack
 * pointer is from the frame's top: enough to name and unwind Go frames
 * without symbols or DWARF.  The format (docs/GO.md): a header, then the
 * function names, the compilation units' file lists, the file names, the
 * pc-value tables and the function table, each at an offset the header
 * gives.  Go 1.18 and 1.19 (magic 0xfffffff0) and Go 1.20 on (0xfffffff1,
 * which added a field to each function's record) are read; the older
 * formats are refused with the reason.
 *
 * The bytes come from a file of the target's: hostile.  Every offset,
 * index and length is checked against the region it points into before
 * anything is read, strings must end inside their region, and a table
 * whose function list is out of order is refused (a binary search over
 * it would give wrong answers, not a crash, but wrong names are worse
 * than none).
 */
#include "psvc_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define MAGIC_GO118 0xfffffff0u
#define MAGIC_GO120 0xfffffff1u
#define MAGIC_GO116 0xfffffffau
#define MAGIC_GO12 0xfffffffbu

/* A function's record (runtime._func): the fields read here.  Go 1.20
 * added startLine (4 bytes) before funcID, so the flag byte moved. */
#define FUNC_NAMEOFF 4
#define FUNC_PCSP 16
#define FUNC_PCFILE 20
#define FUNC_PCLN 24
#define FUNC_CUOFFSET 32

/* Longest name or file name returned; longer ones are garbage to us. */
#define MAX_STRING 4096

struct region {
	const unsigned char *p;
	uint64_t len;
};

struct psvc_gotab {
	const unsigned char *data;
	size_t len;
	unsigned ptrsize, quantum;
	bool go120;
	uint64_t nfunc;
	uint64_t text_start;	/* 0: not known */
	uint64_t header_text;	/* what the header says (0: none) */
	uint64_t starts[5];	/* the header's offsets */
	struct region names, cutab, files, pctab, ftab;
	unsigned func_size, flag_at;
};

static uint32_t le32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

static uint64_t le_word(const unsigned char *p, unsigned size)
{
	uint64_t v = 0;
	for (unsigned i = size; i-- > 0;)
		v = v << 8 | p[i];
	return v;
}

/* The region starting at off and ending at the next region's start (or
 * the table's end): the header gives starts only. */
static struct region region_at(const unsigned char *data, size_t len,
			       uint64_t off, const uint64_t *starts, size_t n)
{
	uint64_t end = len;
	for (size_t i = 0; i < n; i++)
		if (starts[i] > off && starts[i] < end)
			end = starts[i];
	return (struct region){ data + off, end - off };
}

int psvc_gotab_open(const unsigned char *data, size_t len,
		    struct psvc_gotab **ret, const char **why)
{
	*ret = NULL;
	*why = "not a Go function table";
	if (!data || len < 8)
		return -ENOEXEC;
	uint32_t magic = le32(data);
	if (magic == MAGIC_GO116 || magic == MAGIC_GO12) {
		*why = "a Go function table of Go 1.2 to 1.17: only Go 1.18 "
		       "and later ones are read";
		return -ENOTSUP;
	}
	if (magic != MAGIC_GO118 && magic != MAGIC_GO120)
		return -ENOEXEC;
	unsigned quantum = data[6], ptrsize = data[7];
	if (data[4] || data[5] || (quantum != 1 && quantum != 2 && quantum != 4) ||
	    (ptrsize != 4 && ptrsize != 8)) {
		*why = "a Go function table with a header that makes no sense";
		return -ENOEXEC;
	}
	if (len < 8 + 8 * (size_t)ptrsize)
		return -ENOEXEC;
	const unsigned char *w = data + 8;
	uint64_t nfunc = le_word(w, ptrsize);
	uint64_t text = le_word(w + 2 * ptrsize, ptrsize);
	uint64_t starts[5];
	for (unsigned i = 0; i < 5; i++) {
		starts[i] = le_word(w + (3 + i) * ptrsize, ptrsize);
		if (starts[i] < 8 + 8 * (uint64_t)ptrsize || starts[i] > len) {
			*why = "a Go function table whose header points outside it";
			return -ENOEXEC;
		}
	}
	struct psvc_gotab *t = calloc(1, sizeof *t);
	if (!t)
		return -ENOMEM;
	t->data = data;
	t->len = len;
	t->ptrsize = ptrsize;
	t->quantum = quantum;
	t->go120 = magic == MAGIC_GO120;
	t->func_size = t->go120 ? 44 : 40;
	t->flag_at = t->go120 ? 41 : 37;
	memcpy(t->starts, starts, sizeof starts);
	t->header_text = text;
	t->text_start = text;
	t->names = region_at(data, len, starts[0], starts, 5);
	t->cutab = region_at(data, len, starts[1], starts, 5);
	t->files = region_at(data, len, starts[2], starts, 5);
	t->pctab = region_at(data, len, starts[3], starts, 5);
	/* the function table runs to the end: nfunc + 1 (entry, record)
	 * pairs (the last one's entry is the end of the text), then the
	 * records its second halves point to */
	t->ftab = (struct region){ data + starts[4], len - starts[4] };
	t->nfunc = nfunc;
	if (nfunc == 0 || nfunc > t->ftab.len / 8 || (nfunc + 1) * 8 > t->ftab.len) {
		*why = "a Go function table whose function count does not fit it";
		free(t);
		return -ENOEXEC;
	}
	uint32_t prev = 0;
	for (uint64_t i = 0; i <= nfunc; i++) {
		uint32_t e = le32(t->ftab.p + i * 8);
		if (e < prev) {
			*why = "a Go function table whose functions are out of "
			       "order (corrupt)";
			free(t);
			return -ENOEXEC;
		}
		prev = e;
	}
	*why = NULL;
	*ret = t;
	return 0;
}

void psvc_gotab_free(struct psvc_gotab *t)
{
	free(t);
}

uint64_t psvc_gotab_header_text(const struct psvc_gotab *t)
{
	return t ? t->header_text : 0;
}

void psvc_gotab_set_text(struct psvc_gotab *t, uint64_t text_start)
{
	if (t)
		t->text_start = text_start;
}

uint64_t psvc_gotab_text(const struct psvc_gotab *t)
{
	return t ? t->text_start : 0;
}

void psvc_gotab_offsets(const struct psvc_gotab *t, uint64_t ret[5])
{
	for (unsigned i = 0; i < 5; i++)
		ret[i] = t ? t->starts[i] : 0;
}

uint64_t psvc_gotab_nfunc(const struct psvc_gotab *t)
{
	return t ? t->nfunc : 0;
}

/* The entry offsets of the first function and of the end of the text. */
void psvc_gotab_span(const struct psvc_gotab *t, uint32_t *ret_first,
		     uint32_t *ret_end)
{
	*ret_first = t ? le32(t->ftab.p) : 0;
	*ret_end = t ? le32(t->ftab.p + t->nfunc * 8) : 0;
}

const char *psvc_gotab_format(const struct psvc_gotab *t)
{
	return !t ? NULL : t->go120 ? "go1.20" : "go1.18";
}

/* A NUL-terminated string at off inside r, or NULL. */
static const char *string_at(struct region r, uint64_t off)
{
	if (off >= r.len)
		return NULL;
	uint64_t room = r.len - off;
	const void *nul = memchr(r.p + off, 0, room < MAX_STRING ? room : MAX_STRING);
	return nul ? (const char *)r.p + off : NULL;
}

/* A varint of the pc-value tables (7 bits a byte, low first), inside
 * [*p, end).  false if it runs past the end. */
static bool varint(const unsigned char **p, const unsigned char *end, uint32_t *ret)
{
	uint32_t v = 0;
	unsigned shift = 0;
	while (*p < end) {
		unsigned char b = *(*p)++;
		v |= (uint32_t)(b & 0x7f) << (shift & 31);
		if (!(b & 0x80)) {
			*ret = v;
			return true;
		}
		shift += 7;
	}
	return false;
}

/*
 * The value a pc-value table gives at pc, in a function starting at
 * entry: pairs of (value delta, zig-zag coded; pc delta, in instruction
 * quanta), the value starting at -1, each pair saying the value holds up
 * to the new pc.  A zero value delta after the first pair ends the table.
 * false if the table does not cover pc or is cut.
 */
static bool pc_value(const struct psvc_gotab *t, uint32_t off, uint64_t entry,
		     uint64_t pc, int32_t *ret)
{
	if (!off || off >= t->pctab.len)
		return false;
	const unsigned char *p = t->pctab.p + off, *end = t->pctab.p + t->pctab.len;
	uint32_t val = (uint32_t)-1;
	uint64_t at = entry;
	for (;;) {
		uint32_t dv, dpc;
		bool first = at == entry;
		if (!varint(&p, end, &dv) || (dv == 0 && !first))
			return false;
		/* zig-zag: the low bit is the sign */
		val += (dv >> 1) ^ (uint32_t)-(int32_t)(dv & 1);
		if (!varint(&p, end, &dpc))
			return false;
		at += (uint64_t)dpc * t->quantum;
		if (pc < at) {
			*ret = (int32_t)val;
			return true;
		}
	}
}

int psvc_gotab_lookup(const struct psvc_gotab *t, uint64_t vaddr,
		      struct psvc_gofunc *ret)
{
	memset(ret, 0, sizeof *ret);
	if (!t || !t->text_start || vaddr < t->text_start ||
	    vaddr - t->text_start > UINT32_MAX)
		return -ENOENT;
	uint32_t off = (uint32_t)(vaddr - t->text_start);
	/* the last function whose entry is at or below off */
	uint64_t lo = 0, hi = t->nfunc;
	while (lo < hi) {
		uint64_t mid = lo + (hi - lo) / 2;
		if (le32(t->ftab.p + mid * 8) <= off)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return -ENOENT;
	uint64_t i = lo - 1;
	uint32_t entry = le32(t->ftab.p + i * 8);
	uint32_t next = le32(t->ftab.p + (i + 1) * 8);
	if (off >= next)
		return -ENOENT;	/* past the end of the text */
	/* a text start (the header's or the module data's: the target's
	 * bytes) whose text would run past the end of the address space */
	if (next > UINT64_MAX - t->text_start)
		return -ENOENT;
	uint32_t funcoff = le32(t->ftab.p + i * 8 + 4);
	if ((uint64_t)funcoff + t->func_size > t->ftab.len)
		return -ENOENT;
	const unsigned char *f = t->ftab.p + funcoff;
	if (le32(f) != entry)
		return -ENOENT;	/* the record is not this function's */
	ret->entry = t->text_start + entry;
	ret->end = t->text_start + next;
	ret->flags = f[t->flag_at];
	int32_t nameoff = (int32_t)le32(f + FUNC_NAMEOFF);
	ret->name = nameoff > 0 ? string_at(t->names, (uint64_t)nameoff) : NULL;
	int32_t v;
	if (pc_value(t, le32(f + FUNC_PCSP), ret->entry, vaddr, &v) && v >= 0) {
		ret->spdelta = v;
		ret->have_spdelta = true;
	}
	if (pc_value(t, le32(f + FUNC_PCLN), ret->entry, vaddr, &v) && v > 0)
		ret->line = v;
	int32_t fileno;
	if (pc_value(t, le32(f + FUNC_PCFILE), ret->entry, vaddr, &fileno) &&
	    fileno >= 0) {
		uint64_t k = (uint64_t)le32(f + FUNC_CUOFFSET) + (uint64_t)fileno;
		if (k < t->cutab.len / 4) {
			uint32_t fileoff = le32(t->cutab.p + k * 4);
			if (fileoff != UINT32_MAX)
				ret->file = string_at(t->files, fileoff);
		}
	}
	if (!ret->file)
		ret->line = 0;
	return 0;
}
