/*
 * tidmap.c: an open-addressing hash from a nonzero 64-bit key to a 32-bit
 * value (struct psvc_keymap), and over it the map from a TID to a task's
 * index or follow mode's per-thread bits.  Thousands of threads are looked
 * up by TID in every capture (libthread_db's callbacks, waits, rescans): a
 * scan per lookup would make a capture quadratic; memruns.c finds its
 * retained copies by their 64-byte granules the same way.  Linear probing,
 * a table at most half full; a key may be added more than once (its
 * entries then follow each other along its probe chain, in the order they
 * were added); deletion by backward shift so that no tombstones pile up in
 * a long follow session.  A leaf.
 */
#include "psvc_int.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static size_t key_home(uint64_t key, size_t cap)
{
	return (size_t)((key * 0x9E3779B97F4A7C15ull) >> 20) & (cap - 1);
}

static int grow(struct psvc_keymap *m, size_t mincap)
{
	size_t ncap = m->cap ? m->cap * 2 : mincap;
	uint64_t *nk = calloc(ncap, sizeof *nk);
	uint32_t *nv = calloc(ncap, sizeof *nv);
	if (!nk || !nv) {
		free(nk);
		free(nv);
		return -ENOMEM;
	}
	for (size_t i = 0; i < m->cap; i++) {
		if (!m->keys[i])
			continue;
		size_t j = key_home(m->keys[i], ncap);
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

int psvc_keymap_add(struct psvc_keymap *m, uint64_t key, uint32_t val,
		    size_t mincap)
{
	if ((m->n + 1) * 2 > m->cap && grow(m, mincap))
		return -ENOMEM;
	size_t i = key_home(key, m->cap);
	while (m->keys[i])
		i = (i + 1) & (m->cap - 1);
	m->keys[i] = key;
	m->vals[i] = val;
	m->n++;
	return 0;
}

size_t psvc_keymap_find(const struct psvc_keymap *m, uint64_t key, size_t after)
{
	if (!m->cap)
		return SIZE_MAX;
	size_t i = after == SIZE_MAX ? key_home(key, m->cap)
				     : (after + 1) & (m->cap - 1);
	for (; m->keys[i]; i = (i + 1) & (m->cap - 1))
		if (m->keys[i] == key)
			return i;
	return SIZE_MAX;
}

void psvc_keymap_clear(struct psvc_keymap *m)
{
	free(m->keys);
	free(m->vals);
	memset(m, 0, sizeof *m);
}

/* ---- TIDs ----------------------------------------------------------------- */

int psvc_tidmap_put(struct psvc_tidmap *m, pid_t tid, uint32_t idx)
{
	if (tid <= 0)
		return -EINVAL;
	size_t i = psvc_keymap_find(&m->map, (uint64_t)tid, SIZE_MAX);
	if (i == SIZE_MAX)
		return psvc_keymap_add(&m->map, (uint64_t)tid, idx, 256);
	m->map.vals[i] = idx;
	return 0;
}

long psvc_tidmap_get(const struct psvc_tidmap *m, pid_t tid)
{
	if (tid <= 0)
		return -1;
	size_t i = psvc_keymap_find(&m->map, (uint64_t)tid, SIZE_MAX);
	return i == SIZE_MAX ? -1 : (long)m->map.vals[i];
}

void psvc_tidmap_del(struct psvc_tidmap *tm, pid_t tid)
{
	struct psvc_keymap *m = &tm->map;
	size_t i = tid > 0 ? psvc_keymap_find(m, (uint64_t)tid, SIZE_MAX)
			   : SIZE_MAX;
	if (i == SIZE_MAX)
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
			size_t h = key_home(m->keys[j], m->cap);
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
	psvc_keymap_clear(&m->map);
}
