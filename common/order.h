/*
 * order.h: the three-way comparison qsort(3) and bsearch(3) comparators
 * are made of, so that a comparator says only which members decide, in
 * which order:
 *
 *	return order_u64(x->start, y->start) ?: order_u64(x->end, y->end);
 *
 * (GNU C's a ?: b, which is a when a is not 0.)  For unsigned members and
 * enumerations without negative values; header-only, like array.h.
 */
#ifndef TINSPECT_COMMON_ORDER_H
#define TINSPECT_COMMON_ORDER_H

#include <stdint.h>

/* -1, 0 or 1 as a is below, equal to or above b. */
static inline int order_u64(uint64_t a, uint64_t b)
{
	return (a > b) - (a < b);
}

#endif
