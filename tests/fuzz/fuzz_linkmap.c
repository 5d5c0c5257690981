/*
 * fuzz_linkmap: the r_debug / link_map walk (linkmap.c) over a synthetic
 * memory image made of the input: r_debug at its start, entries and names
 * wherever the input's pointers say.  Whatever the bytes: the walk ends
 * (at most max distinct entries, max_steps in all), reads nothing outside
 * the image, and what it returns holds together (no two entries with the
 * same l_ld, names NUL-terminated and bounded, nothing kept on failure).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "psvc_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define BASE 0x10000ull

struct image {
	const uint8_t *p;
	size_t n;
	size_t reads;
};

static int img_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	struct image *im = ctx;
	im->reads++;
	if (addr < BASE || !psvc_span_ok(addr - BASE, len, im->n))
		return -EFAULT;
	memcpy(buf, im->p + (addr - BASE), len);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct image im = { data, size, 0 };
	struct psvc_layout_src src = { NULL, img_read, &im };
	const size_t max = 16, max_steps = 256;
	struct psvc_linkmap w;
	char why[256] = "";
	int r = psvc_linkmap_walk(&src, BASE, max, max_steps, &w, why, sizeof why);
	if (r != 0 && r != -EFAULT && r != -EPROTO && r != -EAGAIN && r != -ENOMEM)
		abort();
	if (r) {
		if (w.n || w.v || !why[0])
			abort();
		return 0;
	}
	if (w.n > max || w.n + w.ndup > max_steps)
		abort();
	/* each step reads one entry and its name in pieces (a bounded
	 * number of attempts each) */
	if (im.reads > 1 + (w.n + w.ndup + 1) * (1 + 16 * 9))
		abort();
	for (size_t i = 0; i < w.n; i++) {
		if (!w.v[i].l_name || strlen(w.v[i].l_name) >= 4096)
			abort();
		for (size_t j = 0; j < i; j++)
			if (w.v[i].l_ld && w.v[i].l_ld == w.v[j].l_ld)
				abort();
	}
	psvc_linkmap_free(&w);
	return 0;
}
