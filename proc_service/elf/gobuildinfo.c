/*
 * gobuildinfo.c: the Go version a program was built with, from its
 * .go.buildinfo section (docs/GO.md), which stripping leaves: 16 bytes of
 * magic, "\xff Go buildinf:" then the pointer size and a flags byte, then
 * either (Go 1.18 on, flag 2) the version and the module information as
 * length-prefixed strings right after the 32-byte header, or (before)
 * the addresses of two Go string headers, {data, length}, that hold them.
 * The second layout needs memory at other addresses of the file: the
 * caller's read callback gives it, checked like everything here (the
 * bytes are the target's).
 */
#include "psvc_int.h"

#include <errno.h>
#include <string.h>

static const char magic[14] = "\xff Go buildinf:";

#define HEADER 32
#define FLAG_BIG_ENDIAN 0x1
#define FLAG_INLINE 0x2

static uint64_t word(const unsigned char *p, unsigned size, bool big)
{
	uint64_t v = 0;
	for (unsigned i = 0; i < size; i++)
		v = v << 8 | p[big ? i : size - 1 - i];
	return v;
}

/* A version is short printable ASCII ("go1.19.8", "devel go1.23-..."). */
static int keep(const unsigned char *s, uint64_t n, char *buf, size_t len)
{
	if (n == 0 || n >= len || n > 128)
		return -EBADMSG;
	for (uint64_t i = 0; i < n; i++)
		if (s[i] < 0x20 || s[i] > 0x7e)
			return -EBADMSG;
	memcpy(buf, s, n);
	buf[n] = '\0';
	return 0;
}

int psvc_go_buildinfo_version(const unsigned char *sec, size_t len,
			      psvc_go_vread_fn vread, void *ctx,
			      char *buf, size_t buflen)
{
	if (buflen)
		buf[0] = '\0';
	if (!sec || len < HEADER || memcmp(sec, magic, sizeof magic))
		return -ENOEXEC;
	unsigned ptrsize = sec[14], flags = sec[15];
	if (flags & FLAG_INLINE) {
		/* a varint length, then the bytes */
		uint64_t n = 0;
		size_t at = HEADER;
		for (unsigned shift = 0; at < len && shift < 64; shift += 7) {
			unsigned char b = sec[at++];
			n |= (uint64_t)(b & 0x7f) << shift;
			if (!(b & 0x80))
				return n <= len - at ? keep(sec + at, n, buf, buflen)
						     : -EBADMSG;
		}
		return -EBADMSG;
	}
	if ((ptrsize != 4 && ptrsize != 8) || !vread)
		return -EBADMSG;
	bool big = flags & FLAG_BIG_ENDIAN;
	/* the address of the version's string header */
	uint64_t at = word(sec + 16, ptrsize, big);
	unsigned char hdr[16];
	if (vread(ctx, at, hdr, 2 * ptrsize))
		return -EBADMSG;
	uint64_t data = word(hdr, ptrsize, big), n = word(hdr + ptrsize, ptrsize, big);
	unsigned char s[129];
	if (n == 0 || n > 128 || vread(ctx, data, s, (size_t)n))
		return -EBADMSG;
	return keep(s, n, buf, buflen);
}
