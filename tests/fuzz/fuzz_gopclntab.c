/*
 * fuzz_gopclntab: a Go function table (gopclntab.c) and a .go.buildinfo
 * section (gobuildinfo.c) from arbitrary bytes: a stripped Go binary is
 * anyone's file, and its tables are read as they are.  A crafted one must
 * give no functions, or functions that hold together, never a crash or a
 * read outside the bytes: every function found covers the address looked
 * up, its name and file lie inside the table and end there, its line and
 * frame size are not negative; a version is short printable ASCII.
 *
 * The input is copied into a buffer of its exact size, so that any read
 * past its end is one ASan sees.  Seeds: tests/fuzz/corpus/gopclntab/,
 * made by tests/fuzz/mkgocorpus.py.
 */
#include <stdlib.h>
#include <string.h>

#include "psvc_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const unsigned char *buf;
static size_t buf_len;

static void inside(const char *s)
{
	if (!s)
		return;
	const unsigned char *p = (const unsigned char *)s;
	if (p < buf || p >= buf + buf_len)
		abort();
	/* NUL-terminated inside the table */
	if (!memchr(p, 0, buf_len - (size_t)(p - buf)))
		abort();
}

static void probe(const struct psvc_gotab *t, uint64_t vaddr)
{
	struct psvc_gofunc f;
	if (psvc_gotab_lookup(t, vaddr, &f))
		return;
	if (!(f.entry <= vaddr && vaddr < f.end))
		abort();
	inside(f.name);
	inside(f.file);
	if (f.line < 0 || (f.have_spdelta && f.spdelta < 0) || (!f.file && f.line))
		abort();
}

/* The old buildinfo layout's pointers read into the input itself. */
static int vread(void *ctx, uint64_t vaddr, void *out, size_t len)
{
	(void)ctx;
	if (vaddr > buf_len || len > buf_len - vaddr)
		return -1;
	memcpy(out, buf + vaddr, len);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	unsigned char *copy = malloc(size ? size : 1);
	if (!copy)
		return 0;
	memcpy(copy, data, size);
	buf = copy;
	buf_len = size;

	char version[80];
	if (psvc_go_buildinfo_version(copy, size, vread, NULL, version,
				      sizeof version) == 0) {
		size_t n = strlen(version);
		if (!n || n > 128)
			abort();
		for (size_t i = 0; i < n; i++)
			if (version[i] < 0x20 || version[i] > 0x7e)
				abort();
	}

	struct psvc_gotab *t;
	const char *why;
	if (psvc_gotab_open(copy, size, &t, &why) == 0) {
		if (why || !psvc_gotab_format(t))
			abort();
		uint64_t text = psvc_gotab_header_text(t);
		if (!text)
			psvc_gotab_set_text(t, text = 0x400000);
		uint32_t first, end;
		psvc_gotab_span(t, &first, &end);
		/* every function's entry and the bytes around it, the ends
		 * of the text, and addresses far away */
		uint64_t probes[] = { text, text + first, text + end, text + end - 1,
				      text - 1, 0, UINT64_MAX, text + UINT32_MAX };
		for (size_t i = 0; i < sizeof probes / sizeof *probes; i++)
			probe(t, probes[i]);
		for (uint64_t off = first; off < end && off < first + (1u << 16);
		     off += 1 + (end - first) / 512)
			probe(t, text + off);
		psvc_gotab_free(t);
	} else if (!why) {
		abort();	/* a refusal says why */
	}
	free(copy);
	return 0;
}
