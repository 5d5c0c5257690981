/*
 * lock_graph.c: the wait-for graph thread -> lock -> owner thread, and
 * the deadlocks in it.  Every thread waits on at most one lock, and a lock
 * has at most one owner, so every thread has at most one outgoing edge:
 * the cycles (deadlocks) are found by walking each path once, and the
 * chains that end at a thread which cannot move on by itself (stalls) by
 * stalls.c over the same edges.
 */
#include "locks_int.h"

#include <errno.h>
#include <stdlib.h>

static int cmp_deadlock(const void *a, const void *b)
{
	const struct dbs_deadlock *x = a, *y = b;
	return (x->threads[0] > y->threads[0]) - (x->threads[0] < y->threads[0]);
}

/* Record the cycle through thread index start, rotated to begin at its
 * smallest tid. */
static int add_cycle(struct dbs_snapshot *snap, const size_t *succ,
		     const size_t *lockof, size_t start)
{
	struct dbs_locks *L = snap->locks;
	size_t n = 1;
	for (size_t i = succ[start]; i != start; i = succ[i])
		n++;
	size_t first = start, i = start;
	for (size_t k = 0; k < n; k++, i = succ[i])
		if (snap->threads[i].tid < snap->threads[first].tid)
			first = i;
	struct dbs_deadlock d = { n, calloc(n, sizeof(pid_t)), calloc(n, sizeof(size_t)) };
	struct dbs_deadlock *nd = d.threads && d.locks
		? realloc(L->deadlocks, (L->ndeadlocks + 1) * sizeof *nd) : NULL;
	if (!nd) {
		free(d.threads);
		free(d.locks);
		return -ENOMEM;
	}
	i = first;
	for (size_t k = 0; k < n; k++, i = succ[i]) {
		d.threads[k] = snap->threads[i].tid;
		d.locks[k] = lockof[i];
	}
	nd[L->ndeadlocks++] = d;
	L->deadlocks = nd;
	return 0;
}

/* Every cycle once, its threads marked in oncycle[]: a path is walked
 * until it reaches a thread with no edge, one seen on an earlier path
 * (done), or one on itself (a new cycle). */
static int find_cycles(struct dbs_snapshot *snap, const size_t *succ,
		       const size_t *lockof, bool *oncycle)
{
	size_t n = snap->nthreads;
	enum { NEW = 0, ON_PATH, DONE };
	unsigned char *color = calloc(n ? n : 1, 1);
	size_t *path = calloc(n ? n : 1, sizeof *path);
	int err = color && path ? 0 : -ENOMEM;
	for (size_t s = 0; s < n && !err; s++) {
		if (color[s] != NEW)
			continue;
		size_t np = 0, i = s;
		while (i != SIZE_MAX && color[i] == NEW) {
			color[i] = ON_PATH;
			path[np++] = i;
			i = succ[i];
		}
		if (i != SIZE_MAX && color[i] == ON_PATH) {
			err = add_cycle(snap, succ, lockof, i);
			size_t k = i;
			do {
				oncycle[k] = true;
				k = succ[k];
			} while (k != i);
		}
		for (size_t k = 0; k < np; k++)
			color[path[k]] = DONE;
	}
	free(color);
	free(path);
	return err;
}

int dbs_lockgraph_find(struct dbs_snapshot *snap, const size_t *succ,
		       const size_t *lockof)
{
	struct dbs_locks *L = snap->locks;
	size_t n = snap->nthreads;
	bool *oncycle = calloc(n ? n : 1, sizeof *oncycle);
	if (!oncycle)
		return -ENOMEM;
	int err = find_cycles(snap, succ, lockof, oncycle);
	if (!err) {
		dbs_sort(L->deadlocks, L->ndeadlocks, sizeof *L->deadlocks,
			 cmp_deadlock);
		/* stalls.c: chains behind a holder that cannot move on */
		err = dbs_stalls_find(snap, succ, lockof, oncycle);
	}
	free(oncycle);
	return err;
}
