/*
 * hashtab.h: growing an open-addressing hash table, the one way every
 * module does it.
 *
 * The tables (the agent's intern table, the memory cache, the string pool,
 * the unwinder's symbol cache) probe linearly over a power-of-two number
 * of slots, and a slot of all zero bytes is free: a table is calloc'ed and
 * a taken slot's key (a pointer, a page number, a pc) is never zero.
 *
 * Header-only and static inline, like array.h.
 */
#ifndef TINSPECT_COMMON_HASHTAB_H
#define TINSPECT_COMMON_HASHTAB_H

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static inline bool hashtab_slot_free(const void *slot, size_t elem)
{
	const unsigned char *b = slot;
	for (size_t i = 0; i < elem; i++)
		if (b[i])
			return false;
	return true;
}

/*
 * Double the table *slotsp (a pointer to the slots) of *cap slots of
 * `elem` bytes, or make it `first` slots (a power of two) when it has
 * none, moving every taken slot to home(slot, new capacity) or the first
 * free slot after it.  0, or -ENOMEM with the table untouched.
 */
static inline int hashtab_grow(void *slotsp, size_t *cap, size_t elem,
			       size_t first,
			       size_t (*home)(const void *slot, size_t cap))
{
	void **slots = slotsp;
	size_t ncap = *cap ? *cap * 2 : first;
	if (ncap < *cap || ncap > SIZE_MAX / elem)
		return -ENOMEM;
	unsigned char *nv = calloc(ncap, elem);
	if (!nv)
		return -ENOMEM;
	const unsigned char *ov = *slots;
	for (size_t i = 0; i < *cap; i++) {
		const unsigned char *s = ov + i * elem;
		if (hashtab_slot_free(s, elem))
			continue;
		size_t j = home(s, ncap);
		while (!hashtab_slot_free(nv + j * elem, elem))
			j = (j + 1) & (ncap - 1);
		memcpy(nv + j * elem, s, elem);
	}
	free(*slots);
	*slots = nv;
	*cap = ncap;
	return 0;
}

#endif
