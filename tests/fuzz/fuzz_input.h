/*
 * fuzz_input.h: the fuzz targets' view of libFuzzer's input, a stream of
 * bytes consumed front to back.  Every take_* returns zeros once the input
 * is used up, so a target never reads past it and a short input is just a
 * world with fewer things in it.
 */
#ifndef TINSPECT_FUZZ_INPUT_H
#define TINSPECT_FUZZ_INPUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

struct fz {
	const uint8_t *p;
	size_t n;
};

static inline uint64_t fz_take(struct fz *z, size_t bytes)
{
	uint64_t v = 0;
	for (size_t i = 0; i < bytes && z->n; i++, z->p++, z->n--)
		v |= (uint64_t)z->p[0] << (8 * i);
	return v;
}

static inline uint8_t fz_u8(struct fz *z) { return (uint8_t)fz_take(z, 1); }
static inline uint16_t fz_u16(struct fz *z) { return (uint16_t)fz_take(z, 2); }
static inline uint32_t fz_u32(struct fz *z) { return (uint32_t)fz_take(z, 4); }
static inline uint64_t fz_u64(struct fz *z) { return fz_take(z, 8); }
static inline bool fz_bool(struct fz *z) { return fz_u8(z) & 1; }

/* One of n choices. */
static inline size_t fz_pick(struct fz *z, size_t n)
{
	return n ? fz_u8(z) % n : 0;
}

/* Up to max bytes, the count taken from the input first; *ret_len is how
 * many the input still had.  Points into the input. */
static inline const uint8_t *fz_bytes(struct fz *z, size_t max, size_t *ret_len)
{
	size_t want = fz_u8(z);
	if (want > max)
		want = max;
	if (want > z->n)
		want = z->n;
	const uint8_t *p = z->p;
	z->p += want;
	z->n -= want;
	*ret_len = want;
	return p;
}

#endif
