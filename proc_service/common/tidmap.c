/*
 * tidmap.c: an open-addressing hash from a TID to a 32-bit value (a task's
 * index, or follow mode's per-thread bits).  Thousands of threads are
 * looked up by TID in every capture (libthread_db's callbacks, waits,
 * rescans): a scan per lookup would make a capture quadratic.  Linear
 * probing, a table at most half full, deletion by backward shift so that
 * no tombstones pile up in a long follow session.  A leaf.
 */
#include "psvc_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static size_t tid_hash(pid_t tid, size_t cap)
{
	return (size_t)(((uint64_t)(uint32_t)tid * 0x9E3779B97F4A7C15ull) >> 20) &
	       (cap - 1);
}

static int grow(struct psvc_tidmap *m)
{
	size_t ncap = m->cap ? m->cap * 2 : 256;
	pid_t *nk = calloc(ncap, sizeof *nk);
	uint32_t *nv = calloc(ncap, sizeof *nv);
	if (!nk || !nv) {
		free(nk);
		free(nv);
		return -ENOMEM;
	}
	for (size_t i = 0; i < m->cap; i++) {
		if (!m->keys[i])
			continue;
		size_t j = tid_hash(m->keys[i], ncap);
		while (nk[j])
			j = (j + 1) & (ncap - 1);
		nk[j] = m->keys[i];
		nv[j] = m->vals[i];
	}
	free(m->keys);
	free(m->vals);
	m->keys = nk;
	m->vals = nv;
	m->cap = ncap;
	return 0;
}

int psvc_tidmap_put(struct psvc_tidmap *m, pid_t tid, uint32_t idx)
{
	if (tid <= 0)
		return -EINVAL;
	if ((m->n + 1) * 2 > m->cap && grow(m))
		return -ENOMEM;
	size_t i = tid_hash(tid, m->cap);
	while (m->keys[i] && m->keys[i] != tid)
		i = (i + 1) & (m->cap - 1);
	if (!m->keys[i])
		m->n++;
	m->keys[i] = tid;
	m->vals[i] = idx;
	return 0;
}

long psvc_tidmap_get(const struct psvc_tidmap *m, pid_t tid)
{
	if (!m->cap || tid <= 0)
		return -1;
	for (size_t i = tid_hash(tid, m->cap);; i = (i + 1) & (m->cap - 1)) {
		if (m->keys[i] == tid)
			return m->vals[i];
		if (!m->keys[i])
			return -1;
	}
}

void psvc_tidmap_del(struct psvc_tidmap *m, pid_t tid)
{
	if (!m->cap || tid <= 0)
		return;
	size_t i = tid_hash(tid, m->cap);
	while (m->keys[i] && m->keys[i] != tid)
		i = (i + 1) & (m->cap - 1);
	if (!m->keys[i])
		return;
	/* backward-shift deletion keeps every probe chain unbroken */
	size_t j = i;
	for (;;) {
		m->keys[i] = 0;
		for (;;) {
			j = (j + 1) & (m->cap - 1);
			if (!m->keys[j]) {
				m->n--;
				return;
			}
			size_t h = tid_hash(m->keys[j], m->cap);
			/* stays if its home lies cyclically in (i, j] */
			if (i <= j ? (i < h && h <= j) : (i < h || h <= j))
				continue;
			break;
		}
		m->keys[i] = m->keys[j];
		m->vals[i] = m->vals[j];
		i = j;
	}
}

void psvc_tidmap_clear(struct psvc_tidmap *m)
{
	free(m->keys);
	free(m->vals);
	memset(m, 0, sizeof *m);
}
