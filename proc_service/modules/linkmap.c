/*
 * linkmap.c: walking the dynamic linker's r_debug / link_map chain
 * (docs/GLIBC.md §3) in target memory.  The chain is the target's to
 * corrupt: entries are read through a read callback (the live target, or
 * a synthetic image in the tests and the fuzzer), a loop or a foreign
 * entry is caught by its l_prev link (the first entry's must be 0, every
 * other's the entry before it, so no entry can be met twice).  A
 * well-formed chain of 25000 copies of libc's entry (a hostile target) once
 * cost 9 GB and every file descriptor: an entry whose dynamic section
 * (l_ld) an earlier entry already has is the same object again and is
 * skipped without a second look, the distinct entries are bounded by what
 * /proc/PID/maps can justify, and the walk itself by a hard cap.
 */
#include "psvc_int.h"

#include "array.h"

#include <errno.h>
#include <inttypes.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NAME_MAX_BYTES 4096

/* struct r_debug and the public head of struct link_map, LP64 (<link.h>) */
struct r_debug64 {
	int32_t r_version, pad;
	uint64_t r_map, r_brk;
	int32_t r_state, pad2;
	uint64_t r_ldbase;
};

struct link_map64 {
	uint64_t l_addr, l_name, l_ld, l_next, l_prev;
};

/* A NUL-terminated name of at most max - 1 bytes; "" if unreadable.  Read
 * in pieces that do not cross a page, so that a name at the end of a
 * mapping is still read. */
static char *read_name(const struct psvc_layout_src *src, uint64_t addr)
{
	char buf[NAME_MAX_BYTES];
	size_t got = 0;
	while (addr && got + 1 < sizeof buf) {
		uint64_t a;
		if (!psvc_add_ok(addr, got, &a))
			break;
		size_t room = 4096 - (size_t)(a & 4095);
		size_t n = sizeof buf - 1 - got;
		if (n > room)
			n = room;
		if (n > 256)
			n = 256;
		/* the last bytes before unreadable memory: smaller pieces */
		while (n && src->read(src->ctx, a, buf + got, n))
			n /= 2;
		if (!n)
			break;
		char *nul = memchr(buf + got, '\0', n);
		if (nul) {
			got = (size_t)(nul - buf);
			break;
		}
		got += n;
	}
	buf[got] = '\0';
	return strdup(buf);
}

void psvc_linkmap_free(struct psvc_linkmap *w)
{
	for (size_t i = 0; i < w->n; i++)
		free(w->v[i].l_name);
	free(w->v);
	w->v = NULL;
	w->n = 0;
}

/* The l_ld values met so far: open addressing, 0 = empty (an entry
 * without l_ld is never a duplicate). */
struct seen {
	uint64_t *v;
	size_t cap;
};

/* true if ld was there; else adds it */
static bool seen_add(struct seen *s, uint64_t ld)
{
	size_t i = (size_t)((ld * 0x9E3779B97F4A7C15ull) >> 32) & (s->cap - 1);
	for (; s->v[i]; i = (i + 1) & (s->cap - 1))
		if (s->v[i] == ld)
			return true;
	s->v[i] = ld;
	return false;
}

int psvc_linkmap_walk(const struct psvc_layout_src *src, uint64_t r_debug,
		 size_t max, size_t max_steps, struct psvc_linkmap *ret,
		 char *why, size_t whylen)
{
	struct r_debug64 rd;
	memset(ret, 0, sizeof *ret);
	struct seen seen = { NULL, 16 };
	while (seen.cap < 2 * max + 2)
		seen.cap *= 2;
	seen.v = calloc(seen.cap, sizeof *seen.v);
	if (!seen.v)
		return -ENOMEM;
	size_t cap = 0, steps = 0;
	int err = 0;
	if (src->read(src->ctx, r_debug, &rd, sizeof rd)) {
		snprintf(why, whylen, "r_debug at %#" PRIx64 " cannot be read", r_debug);
		err = -EFAULT;
	} else if (rd.r_version < 1 || rd.r_version > 2) {
		snprintf(why, whylen, "r_debug.r_version is %" PRId32, rd.r_version);
		err = -EPROTO;
	} else if (rd.r_state != RT_CONSISTENT) {
		snprintf(why, whylen, "the dynamic linker is loading or unloading "
			 "a library (r_state %" PRId32 ")", rd.r_state);
		err = -EAGAIN;	/* dlopen/dlclose in progress */
	}
	uint64_t lm = err ? 0 : rd.r_map, prev = 0;
	while (lm) {
		if (ret->n == max || steps == max_steps) {
			ret->cut = true;
			break;
		}
		steps++;
		struct link_map64 e;
		if (src->read(src->ctx, lm, &e, sizeof e)) {
			snprintf(why, whylen, "link_map entry %zu at %#" PRIx64
				 " cannot be read", ret->n, lm);
			err = -EFAULT;
			break;
		}
		if (e.l_prev != prev) {
			/* a loop, garbage, or a chain changing under us */
			snprintf(why, whylen, "link_map entry %zu at %#" PRIx64
				 " says its predecessor is %#" PRIx64 ", not %#"
				 PRIx64 " (a loop or garbage)", ret->n, lm,
				 e.l_prev, prev);
			err = -EPROTO;
			break;
		}
		prev = lm;
		lm = e.l_next;
		if (e.l_ld && seen_add(&seen, e.l_ld)) {
			ret->ndup++;	/* the same object again */
			continue;
		}
		if (array_grow(&ret->v, &cap, ret->n + 1, sizeof *ret->v, 32)) {
			err = -ENOMEM;
			break;
		}
		struct psvc_linkmap_entry *out = &ret->v[ret->n];
		out->l_name = read_name(src, e.l_name);
		if (!out->l_name) {
			err = -ENOMEM;
			break;
		}
		out->addr = prev;
		out->l_addr = e.l_addr;
		out->l_ld = e.l_ld;
		ret->n++;
	}
	free(seen.v);
	if (err)
		psvc_linkmap_free(ret);
	return err;
}
