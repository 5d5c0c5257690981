/*
 * btab.c: an intern table keyed by bytes (open addressing, FNV-1a).
 * Thousands of stacks share a few dozen function and thread names: the
 * samples of --folded and --pprof (formats/) and the lock-order graph
 * (lockorder/) keep each string, frame or key once, and compare the
 * pointers of what they interned.
 */
#include "common.h"
#include "array.h"
#include "hashtab.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* FNV-1a, 64-bit */
static uint64_t hash_bytes(const void *p, size_t len)
{
	const unsigned char *b = p;
	uint64_t h = 0xcbf29ce484222325ull;
	for (size_t i = 0; i < len; i++) {
		h ^= b[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

static size_t blob_home(const void *slot, size_t cap)
{
	return ((const struct blob *)slot)->hash & (cap - 1);
}

struct blob *btab_get(struct btab *t, const void *key, size_t len,
		      size_t value, bool may_add, bool *ret_added)
{
	*ret_added = false;
	if ((t->n + 1) * 4 > t->cap * 3 &&
	    hashtab_grow(&t->v, &t->cap, sizeof *t->v, 1024, blob_home))
		return NULL;
	uint64_t h = hash_bytes(key, len);
	size_t j = h & (t->cap - 1);
	for (; t->v[j].key; j = (j + 1) & (t->cap - 1))
		if (t->v[j].hash == h && t->v[j].len == len &&
		    !memcmp(t->v[j].key, key, len))
			return &t->v[j];
	if (!may_add)
		return NULL;
	char *copy = malloc(len + 1);
	if (!copy)
		return NULL;
	memcpy(copy, key, len);
	copy[len] = '\0';
	t->v[j] = (struct blob){ h, len, copy, value };
	t->n++;
	*ret_added = true;
	return &t->v[j];
}

void btab_free(struct btab *t)
{
	for (size_t i = 0; i < t->cap; i++)
		free(t->v[i].key);
	array_drop(&t->v, &t->n, &t->cap);
}
