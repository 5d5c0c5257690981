/*
 * locksort.c: the locks of a snapshot, the most waited on first (and by
 * address among equals): the most contended locks of the text report's
 * first screen, and the top_locks of a watch's summary lines.
 */
#include "common.h"

#include <stdlib.h>

static int cmp_by_waiters(const void *a, const void *b)
{
	const tinspect_lock *x = *(const tinspect_lock *const *)a;
	const tinspect_lock *y = *(const tinspect_lock *const *)b;
	size_t nx = tinspect_lock_nwaiters(x), ny = tinspect_lock_nwaiters(y);
	if (nx != ny)
		return nx > ny ? -1 : 1;
	uint64_t ax = tinspect_lock_addr(x), ay = tinspect_lock_addr(y);
	return (ax > ay) - (ax < ay);
}

const tinspect_lock **agent_locks_by_waiters(const tinspect_snapshot *snap)
{
	size_t n = tinspect_snapshot_nlocks(snap);
	if (!n)
		return NULL;
	const tinspect_lock **v = malloc(n * sizeof *v);
	if (!v)
		return NULL;
	for (size_t i = 0; i < n; i++)
		v[i] = tinspect_snapshot_lock(snap, i);
	qsort(v, n, sizeof *v, cmp_by_waiters);
	return v;
}
