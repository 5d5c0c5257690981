/*
 * layout.c: the one reader of layouts the target describes.  Every offset,
 * size and count tinspect takes from target memory (libthread_db's
 * _thread_db_* descriptors, sizes of glibc structs, link_map entries, DTVs,
 * the key table, lock words) is read and checked here, in 64-bit
 * arithmetic, before anything is read at an address computed from it or
 * copied out of a buffer with it.  A value that fails its check makes its
 * datum unknown, with a reason that names the descriptor and the value:
 * the target may be corrupt or hostile, and tinspect must neither crash
 * nor guess (a 32-bit "offset + 8 > size" once wrapped at offset
 * 0xfffffff8 and read 4 GiB past a table).
 *
 * libthread_db's descriptors are uint32 {size in bits, count, offset}
 * (glibc nptl_db/structs.def, db-symbols); libthread_db itself reads the
 * offset as int32 and byte-swaps a descriptor whose size word has its top
 * byte set (nptl_db/fetch-value.c).  A target of our own architecture has
 * no reason to do either, so here both are refused.
 */
#include "psvc_int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* A field or struct bigger than this is no glibc struct (struct pthread is
 * 2368 bytes on x86_64, the key table 16 KiB). */
#define MAX_ELEM_BITS (64u * 1024 * 8)

bool psvc_add_ok(uint64_t a, uint64_t b, uint64_t *ret)
{
	return !__builtin_add_overflow(a, b, ret);
}

bool psvc_mul_ok(uint64_t a, uint64_t b, uint64_t *ret)
{
	return !__builtin_mul_overflow(a, b, ret);
}

bool psvc_span_ok(uint64_t off, uint64_t len, uint64_t total)
{
	uint64_t end;
	return psvc_add_ok(off, len, &end) && end <= total;
}

/* ---- descriptors ------------------------------------------------------------------ */

int psvc_desc_read(const struct psvc_layout_src *src, const char *name,
		   struct psvc_desc *ret, char *why, size_t whylen)
{
	uint64_t a;
	uint32_t d[3];
	if (!src->lookup || src->lookup(src->ctx, name, &a)) {
		psvc_say(why, whylen, "no %s descriptor in the target", name);
		return -ENOENT;
	}
	if (!src->read || src->read(src->ctx, a, d, sizeof d)) {
		psvc_say(why, whylen, "%s at %#" PRIx64 " cannot be read", name, a);
		return -EFAULT;
	}
	if (d[0] & 0xff000000u) {
		psvc_say(why, whylen, "%s has size %#x bits (another byte order, or "
			 "garbage)", name, d[0]);
		return -EPROTO;
	}
	ret->bits = d[0];
	ret->count = d[1];
	ret->offset = d[2];
	return 0;
}

int psvc_sizeof_read(const struct psvc_layout_src *src, const char *name,
		     uint32_t min, uint32_t max, uint32_t *ret, char *why,
		     size_t whylen)
{
	uint64_t a;
	uint32_t v;
	if (!src->lookup || src->lookup(src->ctx, name, &a)) {
		psvc_say(why, whylen, "no %s in the target", name);
		return -ENOENT;
	}
	if (!src->read || src->read(src->ctx, a, &v, sizeof v)) {
		psvc_say(why, whylen, "%s at %#" PRIx64 " cannot be read", name, a);
		return -EFAULT;
	}
	if (v < min || v > max) {
		psvc_say(why, whylen, "%s is %" PRIu32 " (%#" PRIx32 "), not %" PRIu32
			 " to %" PRIu32 " bytes", name, v, v, min, max);
		return -ERANGE;
	}
	*ret = v;
	return 0;
}

int psvc_field_check(const char *name, const struct psvc_desc *d,
		     const struct psvc_field_rule *rule, struct psvc_field *ret,
		     char *why, size_t whylen)
{
	const char *sname = rule->struct_name ? rule->struct_name : "its struct";
	if (d->bits == 0 || d->bits % 8 || d->bits > MAX_ELEM_BITS) {
		psvc_say(why, whylen, "%s: element size %" PRIu32 " bits is not a "
			 "whole number of bytes up to 64 KiB", name, d->bits);
		return -ERANGE;
	}
	if (rule->elem_bits && d->bits != rule->elem_bits) {
		psvc_say(why, whylen, "%s: element size %" PRIu32 " bits, expected %"
			 PRIu32, name, d->bits, rule->elem_bits);
		return -ERANGE;
	}
	/* count 0 is how a flexible array member is described */
	uint64_t count = d->count ? d->count : rule->min_count;
	if (count < rule->min_count || count > rule->max_count) {
		psvc_say(why, whylen, "%s: count %" PRIu32 " is not %" PRIu64 " to %"
			 PRIu64, name, d->count, rule->min_count, rule->max_count);
		return -ERANGE;
	}
	uint64_t elem = d->bits / 8, bytes;
	if (!psvc_mul_ok(elem, count, &bytes) ||
	    !psvc_span_ok(d->offset, bytes, rule->struct_size)) {
		psvc_say(why, whylen, "%s: offset %#" PRIx32 " + %" PRIu64 " bytes "
			 "lies outside %s (%" PRIu64 " bytes)", name, d->offset,
			 bytes, sname, rule->struct_size);
		return -ERANGE;
	}
	ret->offset = d->offset;
	ret->elem_size = (uint32_t)elem;
	ret->count = count;
	return 0;
}

int psvc_field_read(const struct psvc_layout_src *src, const char *name,
		    const struct psvc_field_rule *rule, struct psvc_field *ret,
		    char *why, size_t whylen)
{
	struct psvc_desc d;
	int err = psvc_desc_read(src, name, &d, why, whylen);
	return err ? err : psvc_field_check(name, &d, rule, ret, why, whylen);
}

int psvc_field_addr(uint64_t base, const struct psvc_field *f, uint64_t idx,
		    uint64_t *ret)
{
	uint64_t off, a;
	if (idx >= f->count || !psvc_mul_ok(idx, f->elem_size, &off) ||
	    !psvc_add_ok(off, f->offset, &off) || !psvc_add_ok(base, off, &a))
		return -ERANGE;
	*ret = a;
	return 0;
}

int psvc_field_get(const void *copy, size_t copy_len, const struct psvc_field *f,
		   uint64_t idx, void *out, size_t out_len)
{
	uint64_t off;
	if (out_len > f->elem_size || psvc_field_addr(0, f, idx, &off) ||
	    !psvc_span_ok(off, out_len, copy_len))
		return -ERANGE;
	memcpy(out, (const unsigned char *)copy + off, out_len);
	return 0;
}
