/*
 * lockgraph.c: the lock-order graph (lockgraph.h): locks by key, orders
 * between them with one piece of evidence per thread that showed them,
 * and the search for cycles whose orders were not all seen in one thread.
 *
 * The search runs when an order appears or gains a thread, from that
 * order only: a depth-first walk from its target back to its source, at
 * most LG_MAX_CYCLE locks long and a bounded number of steps, so that a
 * graph of thousands of locks costs a watch little per update.  Every
 * cycle found that way and not known yet is an inversion, in a canonical
 * rotation (its smallest lock index first), so that it is reported once.
 */
#include "lockgraph.h"

#include "array.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define SEARCH_STEPS 200000

const char *lg_kind_name(enum lg_kind k)
{
	return k == LG_RWLOCK ? "rwlock" : "mutex";
}

int lg_kind_parse(const char *name, enum lg_kind *ret)
{
	if (!strcmp(name, "mutex"))
		*ret = LG_MUTEX;
	else if (!strcmp(name, "rwlock"))
		*ret = LG_RWLOCK;
	else
		return -1;
	return 0;
}

const char *lg_wait_class_name(enum lg_wait_class c)
{
	static const char *const names[LG_WAIT_CLASSES] = {
		"contributed", "held_unknown", "cond", "sem", "barrier", "futex",
		"join",
	};
	return (unsigned)c < LG_WAIT_CLASSES ? names[c] : "?";
}

bool lg_same_thread(const struct lg_thread *a, const struct lg_thread *b)
{
	return a->pid == b->pid && a->tid == b->tid && a->pthread == b->pthread;
}

/* ---- copies ------------------------------------------------------------------ */

static char *dup_or_null(const char *s, bool *failed)
{
	if (!s)
		return NULL;
	char *d = strdup(s);
	if (!d)
		*failed = true;
	return d;
}

void lg_seen_clear(struct lg_seen *s)
{
	free(s->stack.v);
	memset(s, 0, sizeof *s);
}

/* s as g's own string (NULL stays NULL); *failed when out of memory. */
static const char *intern(struct lockgraph *g, const char *s, bool *failed)
{
	if (!s)
		return NULL;
	bool added;
	struct blob *b = btab_get(&g->strings, s, strlen(s), 0, true, &added);
	if (!b)
		*failed = true;
	return b ? b->key : NULL;
}

int lg_seen_copy(struct lockgraph *g, struct lg_seen *dst, const struct lg_seen *src)
{
	bool failed = false;
	memset(dst, 0, sizeof *dst);
	dst->thread = src->thread;
	dst->thread.name = intern(g, src->thread.name, &failed);
	dst->time_ns = src->time_ns;
	dst->update = src->update;
	size_t n = src->stack.n < LG_MAX_FRAMES ? src->stack.n : LG_MAX_FRAMES;
	if (n && !(dst->stack.v = calloc(n, sizeof *dst->stack.v)))
		failed = true;
	for (size_t i = 0; !failed && i < n; i++) {
		const struct lg_frame *f = &src->stack.v[i];
		dst->stack.v[i].symbol = intern(g, f->symbol, &failed);
		dst->stack.v[i].module = intern(g, f->module, &failed);
		dst->stack.v[i].offset = f->offset;
		dst->stack.n = i + 1;
	}
	if (failed) {
		lg_seen_clear(dst);
		return -ENOMEM;
	}
	return 0;
}

/* ---- the graph ------------------------------------------------------------------ */

struct lockgraph *lg_new(void)
{
	return calloc(1, sizeof(struct lockgraph));
}

void lg_free(struct lockgraph *g)
{
	if (!g)
		return;
	for (size_t i = 0; i < g->nlocks; i++) {
		struct lg_lock *l = &g->locks[i];
		free(l->key);
		free(l->symbol);
		free(l->module);
		for (size_t k = 0; k < l->nsites; k++) {
			lg_seen_clear(&l->sites[k]);
			free(l->callers[k]);
		}
	}
	for (size_t i = 0; i < g->nedges; i++)
		for (size_t k = 0; k < g->edges[i].nev; k++) {
			lg_seen_clear(&g->edges[i].ev[k].seen);
			lg_seen_clear(&g->edges[i].ev[k].held_site);
		}
	free(g->locks);
	free(g->edges);
	free(g->inv);
	free(g->kidx);
	btab_free(&g->strings);
	free(g);
}

/* Room for one more element in an array of n, bounded at max (the graph
 * must not grow without bound in a long watch): 0, -ENOSPC past max
 * (counted in *dropped) or -ENOMEM. */
static int room_for_one(void *arrp, size_t *cap, size_t n, size_t elem,
			size_t first, size_t max, uint64_t *dropped)
{
	if (n >= max) {
		(*dropped)++;
		return -ENOSPC;
	}
	return array_grow(arrp, cap, n + 1, elem, first);
}

static uint64_t hash_str(const char *s)
{
	uint64_t h = 1469598103934665603ull;	/* FNV-1a */
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

/* The key index (slots hold index + 1; 0 is empty) at twice the locks. */
static int kidx_rebuild(struct lockgraph *g, size_t cap)
{
	size_t *v = calloc(cap, sizeof *v);
	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < g->nlocks; i++) {
		size_t h = (size_t)hash_str(g->locks[i].key) & (cap - 1);
		while (v[h])
			h = (h + 1) & (cap - 1);
		v[h] = i + 1;
	}
	free(g->kidx);
	g->kidx = v;
	g->kidx_cap = cap;
	return 0;
}

long lg_lock_find(const struct lockgraph *g, const char *key)
{
	if (!g->kidx_cap)
		return -1;
	size_t h = (size_t)hash_str(key) & (g->kidx_cap - 1);
	for (; g->kidx[h]; h = (h + 1) & (g->kidx_cap - 1))
		if (!strcmp(g->locks[g->kidx[h] - 1].key, key))
			return (long)(g->kidx[h] - 1);
	return -1;
}

long lg_lock_get(struct lockgraph *g, const char *key, enum lg_kind kind,
		 uint64_t addr, pid_t pid, const char *symbol, const char *module,
		 uint64_t offset)
{
	long found = lg_lock_find(g, key);
	if (found >= 0) {
		g->locks[found].addr = addr;
		g->locks[found].pid = pid;
		return found;
	}
	if (room_for_one(&g->locks, &g->locks_cap, g->nlocks, sizeof *g->locks,
			 32, LG_MAX_LOCKS, &g->dropped_locks))
		return -1;
	if (2 * (g->nlocks + 1) > g->kidx_cap &&
	    kidx_rebuild(g, g->kidx_cap ? 2 * g->kidx_cap : 64))
		return -1;
	bool failed = false;
	struct lg_lock l = {
		.key = dup_or_null(key, &failed), .kind = kind, .addr = addr,
		.pid = pid, .symbol = dup_or_null(symbol, &failed),
		.module = dup_or_null(module, &failed), .offset = offset,
	};
	if (failed || !l.key) {
		free(l.key);
		free(l.symbol);
		free(l.module);
		return -1;
	}
	g->locks[g->nlocks] = l;
	size_t h = (size_t)hash_str(key) & (g->kidx_cap - 1);
	while (g->kidx[h])
		h = (h + 1) & (g->kidx_cap - 1);
	g->kidx[h] = ++g->nlocks;
	return (long)(g->nlocks - 1);
}

static bool same_str(const char *a, const char *b)
{
	return a && b ? !strcmp(a, b) : a == b;
}

static bool same_frame(const struct lg_frame *a, const struct lg_frame *b)
{
	return same_str(a->symbol, b->symbol) && same_str(a->module, b->module) &&
	       a->offset == b->offset;
}

static bool same_stack(const struct lg_stack *a, const struct lg_stack *b)
{
	if (a->n != b->n)
		return false;
	for (size_t i = 0; i < a->n; i++)
		if (!same_frame(&a->v[i], &b->v[i]))
			return false;
	return true;
}

void lg_lock_site(struct lockgraph *g, size_t li, const char *caller,
		  const struct lg_seen *seen)
{
	struct lg_lock *l = &g->locks[li];
	if (l->nsites == LG_LOCK_SITES)
		return;
	for (size_t k = 0; k < l->nsites; k++)
		if (same_stack(&l->sites[k].stack, &seen->stack))
			return;
	bool failed = false;
	char *c = dup_or_null(caller, &failed);
	if (failed || lg_seen_copy(g, &l->sites[l->nsites], seen)) {
		free(c);
		return;
	}
	l->callers[l->nsites++] = c;
}

/* Do frames a[i..] and b[j..] agree (functions and offsets) as far as both
 * stacks go? */
static bool same_callers(const struct lg_stack *a, size_t i,
			 const struct lg_stack *b, size_t j)
{
	for (; i < a->n && j < b->n; i++, j++)
		if (!same_frame(&a->v[i], &b->v[j]))
			return false;
	return true;
}

int lg_holding_frame(const struct lockgraph *g, size_t li, const struct lg_stack *st,
		     size_t from, const struct lg_seen **ret_site)
{
	const struct lg_lock *l = &g->locks[li];
	*ret_site = l->nsites ? &l->sites[0] : NULL;
	for (size_t i = from; i < st->n; i++) {
		const struct lg_frame *f = &st->v[i];
		if (!f->symbol)
			continue;
		for (size_t k = 0; k < l->nsites; k++) {
			const struct lg_stack *s = &l->sites[k].stack;
			for (size_t j = 0; j < s->n; j++)
				if (same_str(s->v[j].symbol, f->symbol) &&
				    same_str(s->v[j].module, f->module) &&
				    s->v[j].offset != f->offset &&
				    i + 1 < st->n && j + 1 < s->n &&
				    same_callers(st, i + 1, s, j + 1)) {
					*ret_site = &l->sites[k];
					return (int)i;
				}
		}
	}
	return -1;
}

long lg_edge_find(const struct lockgraph *g, size_t from, size_t to)
{
	for (size_t i = 0; i < g->nedges; i++)
		if (g->edges[i].from == from && g->edges[i].to == to)
			return (long)i;
	return -1;
}

static long edge_add(struct lockgraph *g, size_t from, size_t to, int64_t now)
{
	if (room_for_one(&g->edges, &g->edges_cap, g->nedges, sizeof *g->edges,
			 32, LG_MAX_EDGES, &g->dropped_edges))
		return -1;
	g->edges[g->nedges] = (struct lg_edge){ .from = from, .to = to,
						.first_ns = now, .last_ns = now };
	return (long)g->nedges++;
}

void lg_begin_update(struct lockgraph *g, int64_t now_ns)
{
	g->tick++;
	g->updates++;
	if (!g->first_ns || now_ns < g->first_ns)
		g->first_ns = now_ns;
	if (now_ns > g->last_ns)
		g->last_ns = now_ns;
}

unsigned lg_observe(struct lockgraph *g, size_t from, size_t to,
		    const struct lg_seen *seen, int holding_frame,
		    const struct lg_seen *held_site, size_t *ret_edge)
{
	unsigned news = LG_NEWS_NONE;
	long e = lg_edge_find(g, from, to);
	if (e < 0) {
		if ((e = edge_add(g, from, to, seen->time_ns)) < 0)
			return LG_NEWS_ERROR;
		news |= LG_NEWS_EDGE;
	}
	struct lg_edge *ed = &g->edges[e];
	*ret_edge = (size_t)e;
	if (ed->counted != g->tick) {
		ed->counted = g->tick;
		ed->count++;
	}
	if (seen->time_ns > ed->last_ns)
		ed->last_ns = seen->time_ns;
	if (seen->time_ns < ed->first_ns)
		ed->first_ns = seen->time_ns;
	for (size_t k = 0; k < ed->nev; k++)
		if (lg_same_thread(&ed->ev[k].seen.thread, &seen->thread))
			return news;
	if (ed->nev == LG_EDGE_THREADS)
		return news;
	struct lg_evidence *ev = &ed->ev[ed->nev];
	memset(ev, 0, sizeof *ev);
	if (lg_seen_copy(g, &ev->seen, seen))
		return news | LG_NEWS_ERROR;
	if (held_site && lg_seen_copy(g, &ev->held_site, held_site)) {
		lg_seen_clear(&ev->seen);
		return news | LG_NEWS_ERROR;
	}
	ev->holding_frame = holding_frame;
	ed->nev++;
	return news | LG_NEWS_THREAD;
}

/* ---- cycles -------------------------------------------------------------------- */

/* Outgoing edges by lock, in compressed rows. */
struct adjacency {
	size_t *start;	/* nlocks + 1 */
	size_t *edge;	/* nedges */
};

static int adjacency_build(const struct lockgraph *g, struct adjacency *a)
{
	a->start = calloc(g->nlocks + 1, sizeof *a->start);
	a->edge = calloc(g->nedges ? g->nedges : 1, sizeof *a->edge);
	if (!a->start || !a->edge)
		return -ENOMEM;
	for (size_t i = 0; i < g->nedges; i++)
		a->start[g->edges[i].from + 1]++;
	for (size_t i = 0; i < g->nlocks; i++)
		a->start[i + 1] += a->start[i];
	size_t *fill = calloc(g->nlocks + 1, sizeof *fill);
	if (!fill)
		return -ENOMEM;
	for (size_t i = 0; i < g->nedges; i++) {
		size_t f = g->edges[i].from;
		a->edge[a->start[f] + fill[f]++] = i;
	}
	free(fill);
	return 0;
}

static void adjacency_free(struct adjacency *a)
{
	free(a->start);
	free(a->edge);
}

/* Pick the evidence of each edge so that not all are one thread's; false
 * if every edge was seen in the same one thread only. */
static bool pick_evidence(const struct lockgraph *g, struct lg_inversion *inv)
{
	const struct lg_thread *t0 = &g->edges[inv->edges[0]].ev[0].seen.thread;
	for (size_t i = 0; i < inv->n; i++)
		inv->ev[i] = 0;
	for (size_t i = 0; i < inv->n; i++) {
		const struct lg_edge *e = &g->edges[inv->edges[i]];
		for (size_t k = 0; k < e->nev; k++)
			if (!lg_same_thread(&e->ev[k].seen.thread, t0)) {
				inv->ev[i] = k;
				return true;
			}
	}
	return false;
}

/* The cycle rotated so that its smallest lock comes first. */
static void canonical(struct lg_inversion *inv)
{
	size_t m = 0;
	for (size_t i = 1; i < inv->n; i++)
		if (inv->locks[i] < inv->locks[m])
			m = i;
	size_t l[LG_MAX_CYCLE], e[LG_MAX_CYCLE];
	for (size_t i = 0; i < inv->n; i++) {
		l[i] = inv->locks[(i + m) % inv->n];
		e[i] = inv->edges[(i + m) % inv->n];
	}
	memcpy(inv->locks, l, inv->n * sizeof *l);
	memcpy(inv->edges, e, inv->n * sizeof *e);
}

static bool known_inversion(const struct lockgraph *g, const struct lg_inversion *c)
{
	for (size_t i = 0; i < g->ninv; i++)
		if (g->inv[i].n == c->n &&
		    !memcmp(g->inv[i].locks, c->locks, c->n * sizeof *c->locks))
			return true;
	return false;
}

static int inversion_add(struct lockgraph *g, const struct lg_inversion *c)
{
	int err = room_for_one(&g->inv, &g->inv_cap, g->ninv, sizeof *g->inv,
			       8, LG_MAX_INVERSIONS, &g->dropped_inversions);
	if (err)
		return err;
	g->inv[g->ninv++] = *c;
	return 0;
}

struct search {
	struct lockgraph *g;
	const struct adjacency *adj;
	size_t target;		/* the edge's source: where a cycle closes */
	bool *on_path;		/* by lock */
	struct lg_inversion cur;	/* locks[0], edges[0]: the edge itself */
	size_t steps;
	size_t found;
	int64_t now;
};

/* A cycle closed in s->cur: kept if it is an inversion not known yet. */
static void closed(struct search *s)
{
	struct lg_inversion c = s->cur;
	c.found_ns = s->now;
	c.from_file = false;
	if (!pick_evidence(s->g, &c))
		return;	/* one thread's orders only */
	canonical(&c);
	if (known_inversion(s->g, &c))
		return;
	pick_evidence(s->g, &c);	/* for the rotated edges */
	if (inversion_add(s->g, &c) == 0)
		s->found++;
}

/* From lock `at`, the cycle so far s->cur.locks[0..depth). */
static void walk(struct search *s, size_t at, size_t depth)
{
	const struct adjacency *a = s->adj;
	for (size_t k = a->start[at]; k < a->start[at + 1]; k++) {
		if (++s->steps > SEARCH_STEPS)
			return;
		size_t ei = a->edge[k];
		size_t to = s->g->edges[ei].to;
		s->cur.edges[depth - 1] = ei;
		if (to == s->target) {
			s->cur.n = depth;
			closed(s);
			continue;
		}
		if (s->on_path[to] || depth == LG_MAX_CYCLE)
			continue;
		s->on_path[to] = true;
		s->cur.locks[depth] = to;
		walk(s, to, depth + 1);
		s->on_path[to] = false;
	}
}

static size_t search_from(struct lockgraph *g, const struct adjacency *a,
			  bool *on_path, size_t e, int64_t now)
{
	const struct lg_edge *ed = &g->edges[e];
	if (ed->from == ed->to)
		return 0;	/* a self-relock is a deadlock, not an order */
	struct search s = { .g = g, .adj = a, .target = ed->from,
			    .on_path = on_path, .now = now };
	s.cur.locks[0] = ed->from;
	s.cur.edges[0] = e;
	s.cur.locks[1] = ed->to;
	on_path[ed->from] = on_path[ed->to] = true;
	walk(&s, ed->to, 2);
	on_path[ed->from] = on_path[ed->to] = false;
	return s.found;
}

size_t lg_find_inversions(struct lockgraph *g, size_t e, int64_t now_ns)
{
	struct adjacency a = { 0 };
	bool *on_path = calloc(g->nlocks + 1, sizeof *on_path);
	size_t found = 0;
	if (on_path && adjacency_build(g, &a) == 0 && e < g->nedges)
		found = search_from(g, &a, on_path, e, now_ns);
	adjacency_free(&a);
	free(on_path);
	return found;
}

size_t lg_find_all_inversions(struct lockgraph *g, int64_t now_ns)
{
	struct adjacency a = { 0 };
	bool *on_path = calloc(g->nlocks + 1, sizeof *on_path);
	size_t found = 0;
	if (on_path && adjacency_build(g, &a) == 0)
		for (size_t e = 0; e < g->nedges; e++)
			found += search_from(g, &a, on_path, e, now_ns);
	adjacency_free(&a);
	free(on_path);
	return found;
}
