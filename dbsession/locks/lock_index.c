/*
 * lock_index.c: the lock analysis' context - per-thread arrays, and the
 * sorted indexes that find a thread by its TID (as tinspect sees it, or
 * in the target's PID namespace, which is what lock words record) or by
 * the address of its tid word (what pthread_join sleeps on).
 */
#include "locks_int.h"

#include "array.h"
#include "order.h"

#include <errno.h>
#include <stdlib.h>

void dbs_sort(void *base, size_t n, size_t size,
	      int (*cmp)(const void *, const void *))
{
	if (n > 1)
		qsort(base, n, size, cmp);
}

int dbs_tidx_cmp(const void *a, const void *b)
{
	const struct dbs_tidx *x = a, *y = b;
	return order_u64(x->key, y->key) ?: order_u64(x->i, y->i);
}

static bool tidx_below(const void *e, const void *key)
{
	return ((const struct dbs_tidx *)e)->key < *(const uint64_t *)key;
}

size_t dbs_tidx_lower_bound(const struct dbs_tidx *v, size_t n, uint64_t key)
{
	return array_partition(v, n, sizeof *v, tidx_below, &key);
}

size_t dbs_tidx_find(const struct dbs_tidx *v, size_t n, uint64_t key)
{
	size_t lo = dbs_tidx_lower_bound(v, n, key);
	return lo < n && v[lo].key == key ? v[lo].i : SIZE_MAX;
}

size_t dbs_thread_by_nstid(const struct dbs_lockctx *c, pid_t tid)
{
	if (tid <= 0)
		return SIZE_MAX;
	return dbs_tidx_find(c->by_nstid, c->snap->nthreads, (uint64_t)tid);
}

size_t dbs_thread_by_tid(const struct dbs_lockctx *c, pid_t tid)
{
	if (tid <= 0)
		return SIZE_MAX;
	return dbs_tidx_find(c->by_tid, c->snap->nthreads, (uint64_t)tid);
}

uint64_t dbs_thread_descriptor(const struct dbs_lockctx *c,
			       const struct dbs_thread *th)
{
	if (th->have_pthread && th->pthread)
		return th->pthread;
	if (th->have_regs && th->tp && c->in->arch && c->in->sizeof_pthread)
		return arch_thread_area(c->in->arch, th->tp, (int)c->in->sizeof_pthread);
	return 0;
}

bool dbs_lock_read(const struct dbs_lockctx *c, uint64_t addr, void *buf,
		   size_t len)
{
	return c->in->read && c->in->read(c->in->ctx, addr, buf, len) == 0;
}

static void build_indexes(struct dbs_lockctx *c)
{
	const struct dbs_snapshot *snap = c->snap;
	size_t n = snap->nthreads;
	for (size_t i = 0; i < n; i++) {
		const struct dbs_thread *t = &snap->threads[i];
		c->by_nstid[i] = (struct dbs_tidx){ (uint64_t)t->ns_tid, i };
		c->nstid_unknown |= t->ns_tid == 0;
		c->by_tid[i] = (struct dbs_tidx){ (uint64_t)t->tid, i };
		uint64_t pd = dbs_thread_descriptor(c, t);
		if (pd && c->in->tid_offset)
			c->by_tidword[c->nby_tidword++] =
				(struct dbs_tidx){ pd + c->in->tid_offset, i };
	}
	dbs_sort(c->by_nstid, n, sizeof *c->by_nstid, dbs_tidx_cmp);
	dbs_sort(c->by_tid, n, sizeof *c->by_tid, dbs_tidx_cmp);
	dbs_sort(c->by_tidword, c->nby_tidword, sizeof *c->by_tidword, dbs_tidx_cmp);
}

int dbs_lockctx_init(struct dbs_lockctx *c)
{
	size_t n = c->snap->nthreads ? c->snap->nthreads : 1;
	/* the target's glibc's row; the machine's (2.36) for sizes alone
	 * when its version is unverified: nothing is decoded then */
	c->L = c->in->glibc ? c->in->glibc
			    : dbs_glibc_locks_for(NULL, c->in->arch, NULL);
	c->waits = calloc(n, sizeof *c->waits);
	c->vd = calloc(n, sizeof *c->vd);
	/* lockof and succ are the same size_t per thread, the three TID
	 * indexes the same dbs_tidx: a block each */
	c->lockof = malloc(2 * n * sizeof *c->lockof);
	c->by_nstid = calloc(3 * n, sizeof *c->by_nstid);
	c->frames = calloc(1, sizeof *c->frames);
	if (!c->waits || !c->vd || !c->lockof || !c->by_nstid || !c->frames)
		return -ENOMEM;
	c->succ = c->lockof + n;
	c->by_tid = c->by_nstid + n;
	c->by_tidword = c->by_tid + n;
	for (size_t i = 0; i < c->snap->nthreads; i++)
		c->lockof[i] = c->succ[i] = SIZE_MAX;
	build_indexes(c);
	return 0;
}

void dbs_lockctx_done(struct dbs_lockctx *c)
{
	free(c->waits);
	free(c->vd);
	free(c->lockof);	/* and succ */
	free(c->by_nstid);	/* and by_tid, by_tidword */
	free(c->frames);
}
