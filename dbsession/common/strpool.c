/*
 * strpool.c: interned strings.  A snapshot of thousands of threads repeats
 * the same few module paths, symbols and source files; each is stored once
 * and frames point at it.  The pool is freed with its owner, all at once.
 */
#include "dbs_int.h"

#include "hashtab.h"

#include <stdlib.h>
#include <string.h>

#define POOL_CHUNK (64u * 1024)

struct dbs_strpool {
	unsigned refs;
	const char **slots;	/* open addressing over interned strings */
	size_t cap, n;
	char **chunks;
	size_t nchunks, used;	/* bytes used in the last chunk */
};

struct dbs_strpool *dbs_strpool_new(void)
{
	struct dbs_strpool *p = calloc(1, sizeof *p);
	if (p)
		p->refs = 1;
	return p;
}

struct dbs_strpool *dbs_strpool_ref(struct dbs_strpool *p)
{
	if (p)
		p->refs++;
	return p;
}

void dbs_strpool_unref(struct dbs_strpool *p)
{
	if (!p || --p->refs)
		return;
	for (size_t i = 0; i < p->nchunks; i++)
		free(p->chunks[i]);
	free(p->chunks);
	free(p->slots);
	free(p);
}

static size_t str_hash(const char *s)
{
	size_t h = 14695981039346656037ull;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

static char *pool_alloc(struct dbs_strpool *p, size_t len)
{
	if (len > POOL_CHUNK / 4 || !p->nchunks || p->used + len > POOL_CHUNK) {
		size_t sz = len > POOL_CHUNK / 4 ? len : POOL_CHUNK;
		char **nc = realloc(p->chunks, (p->nchunks + 1) * sizeof *nc);
		if (!nc)
			return NULL;
		p->chunks = nc;
		char *c = malloc(sz);
		if (!c)
			return NULL;
		if (sz != POOL_CHUNK) {
			/* an outsized string: a chunk of its own, and the open
			 * chunk (if any) stays last */
			if (p->nchunks) {
				p->chunks[p->nchunks] = p->chunks[p->nchunks - 1];
				p->chunks[p->nchunks - 1] = c;
			} else {
				p->chunks[0] = c;
				p->used = POOL_CHUNK;	/* no open chunk: full */
			}
			p->nchunks++;
			return c;
		}
		p->chunks[p->nchunks++] = c;
		p->used = 0;
	}
	char *r = p->chunks[p->nchunks - 1] + p->used;
	p->used += len;
	return r;
}

static size_t pooled_home(const void *slot, size_t cap)
{
	return str_hash(*(const char *const *)slot) & (cap - 1);
}

const char *dbs_strpool_intern(struct dbs_strpool *p, const char *s)
{
	if (!s || !p)
		return NULL;
	if ((p->n + 1) * 2 > p->cap &&
	    hashtab_grow(&p->slots, &p->cap, sizeof *p->slots, 256, pooled_home))
		return NULL;
	size_t i = str_hash(s) & (p->cap - 1);
	for (; p->slots[i]; i = (i + 1) & (p->cap - 1))
		if (!strcmp(p->slots[i], s))
			return p->slots[i];
	size_t len = strlen(s) + 1;
	char *c = pool_alloc(p, len);
	if (!c)
		return NULL;
	memcpy(c, s, len);
	p->slots[i] = c;
	p->n++;
	return c;
}
