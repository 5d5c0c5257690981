/*
 * array.h: growing a malloc'ed array, and finding a place in a sorted one,
 * the one way every module does it.
 *
 * Two shapes recur: an array with a capacity that doubles as it fills (task
 * lists, mappings, ranges to prefetch), and an array kept exactly as long
 * as its count (the snapshot model's arrays, whose structs have no room
 * for a capacity).  Both leave the array as it was when memory runs out,
 * and both refuse a size that would overflow.  A sorted array (segments,
 * ranges, runs, locks, threads) is searched by array_partition(), or by
 * bsearch(3) where an element is looked up by a key it holds.
 *
 * Header-only and static inline: it defines no symbol, so that any module
 * may include it without a dependency (and a static libtinspect carries
 * nothing of it into an embedder).
 */
#ifndef TINSPECT_COMMON_ARRAY_H
#define TINSPECT_COMMON_ARRAY_H

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

/*
 * Make room for at least `need` elements of `elem` bytes in *arrp (a
 * pointer to the array pointer), whose capacity is *cap: the capacity
 * becomes `first` (when it was 0), doubled until it holds need.  0, or
 * -ENOMEM with *arrp and *cap untouched.
 */
static inline int array_grow(void *arrp, size_t *cap, size_t need, size_t elem,
			     size_t first)
{
	void **arr = arrp;
	if (need <= *cap)
		return 0;
	size_t ncap = *cap ? *cap : (first ? first : 1);
	while (ncap < need) {
		if (ncap > SIZE_MAX / 2)
			return -ENOMEM;
		ncap *= 2;
	}
	if (ncap > SIZE_MAX / elem)
		return -ENOMEM;
	void *n = realloc(*arr, ncap * elem);
	if (!n)
		return -ENOMEM;
	*arr = n;
	*cap = ncap;
	return 0;
}

/*
 * One more element at the end of *arrp, an array of exactly *n elements of
 * `elem` bytes: the new element's address (uninitialised; *n counts it
 * already), or NULL with *arrp and *n untouched.
 */
static inline void *array_push(void *arrp, size_t *n, size_t elem)
{
	void **arr = arrp;
	if (*n >= SIZE_MAX / elem)
		return NULL;
	void *v = realloc(*arr, (*n + 1) * elem);
	if (!v)
		return NULL;
	*arr = v;
	return (char *)v + (*n)++ * elem;
}

/* Free the array *arrp and leave it empty (NULL, *n and *cap 0). */
static inline void array_drop(void *arrp, size_t *n, size_t *cap)
{
	void **arr = arrp;
	free(*arr);
	*arr = NULL;
	*n = *cap = 0;
}

/*
 * The first index of the n elements of `elem` bytes at v for which
 * before(element, key) is false, where it holds for a leading run of them
 * and for none after it (in a sorted array: "below key", "at or below
 * key"); n if it holds for all.  A binary search.
 */
static inline size_t array_partition(const void *v, size_t n, size_t elem,
				     bool (*before)(const void *e,
						    const void *key),
				     const void *key)
{
	const char *b = v;
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (before(b + mid * elem, key))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

#endif
