/*
 * stackgroups.c: threads grouped by identical stack, each stack printed
 * once with the list of its threads, largest group first, the way pt-pmp
 * users and `eu-stack | sort | uniq -c` users read a process of hundreds
 * of threads by hand.  Two stacks are the same when their frames are: the
 * same function at the same offset (the same return addresses), or, for
 * code outside any module (JIT), any such frame, since JIT code addresses
 * differ from thread to thread without saying anything.
 */
#include "text.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* What two frames are compared by, read once per frame: the sort below
 * compares each stack many times. */
struct fkey {
	const char *module;	/* interned: equal text, equal pointer */
	const char *symbol;
	uint64_t module_offset;
	bool inlined;
};

struct tstack {
	const struct fkey *f;	/* the thread's frames */
	size_t n;
	enum tinspect_stack_end end;
	pid_t tid;
};

struct stack_groups {
	size_t *order;		/* thread indexes with a stack, group by group */
	size_t norder;
	size_t *start;		/* group g: order[start[g] .. start[g + 1]) */
	size_t ngroups;
	size_t *group_of;	/* thread index -> group number + 1, 0 none */
	size_t nthreads;
};

static bool same_frame(const struct fkey *a, const struct fkey *b)
{
	if (a->inlined != b->inlined)
		return false;
	if (!a->module || !b->module)
		return !a->module && !b->module;
	/* interned strings: equal text, equal pointer, within a snapshot */
	if (a->module != b->module && strcmp(a->module, b->module))
		return false;
	if (a->inlined)
		return a->symbol == b->symbol ||
		       (a->symbol && b->symbol && !strcmp(a->symbol, b->symbol));
	return a->module_offset == b->module_offset;
}

static int cmp_frame(const struct fkey *a, const struct fkey *b)
{
	if (a->inlined != b->inlined)
		return a->inlined ? -1 : 1;
	if (!a->module || !b->module)
		return (a->module != NULL) - (b->module != NULL);
	int c = strcmp(a->module, b->module);
	if (c)
		return c;
	if (a->inlined)
		return strcmp(a->symbol ? a->symbol : "", b->symbol ? b->symbol : "");
	return (a->module_offset > b->module_offset) - (a->module_offset < b->module_offset);
}

static int cmp_stack(const struct tstack *x, const struct tstack *y)
{
	size_t n = x->n < y->n ? x->n : y->n;
	for (size_t i = 0; i < n; i++) {
		if (same_frame(&x->f[i], &y->f[i]))
			continue;
		return cmp_frame(&x->f[i], &y->f[i]);
	}
	if (x->n != y->n)
		return x->n < y->n ? -1 : 1;
	return (x->end > y->end) - (x->end < y->end);
}

static int cmp_threads(const void *a, const void *b, void *ctx)
{
	const struct tstack *v = ctx;
	const struct tstack *x = &v[*(const size_t *)a], *y = &v[*(const size_t *)b];
	int c = cmp_stack(x, y);
	if (c)
		return c;
	return (x->tid > y->tid) - (x->tid < y->tid);
}

struct gref {
	size_t start, n;
	pid_t first;
};

static int cmp_groups(const void *a, const void *b)
{
	const struct gref *x = a, *y = b;
	if (x->n != y->n)
		return x->n > y->n ? -1 : 1;
	return (x->first > y->first) - (x->first < y->first);
}

/* Every thread's frames as keys, in one array; NULL on ENOMEM. */
static struct tstack *stacks_read(const tinspect_snapshot *snap, struct fkey **ret_keys)
{
	size_t n = tinspect_snapshot_nthreads(snap), nframes = 0;
	for (size_t i = 0; i < n; i++)
		nframes += tinspect_thread_nframes(tinspect_snapshot_thread(snap, i));
	struct tstack *v = calloc(n ? n : 1, sizeof *v);
	struct fkey *keys = malloc((nframes ? nframes : 1) * sizeof *keys);
	if (!v || !keys) {
		free(v);
		free(keys);
		return NULL;
	}
	struct fkey *k = keys;
	for (size_t i = 0; i < n; i++) {
		const tinspect_thread *th = tinspect_snapshot_thread(snap, i);
		v[i] = (struct tstack){ k, tinspect_thread_nframes(th),
					tinspect_thread_stack_end(th),
					tinspect_thread_tid(th) };
		for (size_t j = 0; j < v[i].n; j++, k++) {
			const tinspect_frame *f = tinspect_thread_frame(th, j);
			*k = (struct fkey){ tinspect_frame_module(f), tinspect_frame_symbol(f),
					    tinspect_frame_module_offset(f),
					    tinspect_frame_inlined(f) };
		}
	}
	*ret_keys = keys;
	return v;
}

struct stack_groups *stack_groups_build(const tinspect_snapshot *snap)
{
	size_t n = tinspect_snapshot_nthreads(snap);
	struct fkey *keys = NULL;
	struct stack_groups *g = calloc(1, sizeof *g);
	struct tstack *st = stacks_read(snap, &keys);
	size_t *idx = malloc((n ? n : 1) * sizeof *idx);
	struct gref *gr = malloc((n ? n : 1) * sizeof *gr);
	if (!g || !st || !idx || !gr)
		goto fail;
	g->nthreads = n;
	g->order = malloc((n ? n : 1) * sizeof *g->order);
	g->start = malloc((n + 1) * sizeof *g->start);
	g->group_of = calloc(n ? n : 1, sizeof *g->group_of);
	if (!g->order || !g->start || !g->group_of)
		goto fail;
	size_t m = 0;
	for (size_t i = 0; i < n; i++)
		if (st[i].end != TINSPECT_STACK_NONE && st[i].n)
			idx[m++] = i;
	if (m > 1)
		qsort_r(idx, m, sizeof *idx, cmp_threads, st);
	size_t ng = 0;
	for (size_t a = 0; a < m;) {
		size_t b = a + 1;
		while (b < m && !cmp_stack(&st[idx[a]], &st[idx[b]]))
			b++;
		gr[ng++] = (struct gref){ a, b - a, st[idx[a]].tid };
		a = b;
	}
	qsort(gr, ng, sizeof *gr, cmp_groups);
	for (size_t k = 0; k < ng; k++) {
		g->start[k] = g->norder;
		for (size_t j = 0; j < gr[k].n; j++) {
			size_t ti = idx[gr[k].start + j];
			g->order[g->norder++] = ti;
			g->group_of[ti] = k + 1;
		}
	}
	g->start[ng] = g->norder;
	g->ngroups = ng;
	free(idx);
	free(gr);
	free(st);
	free(keys);
	return g;
fail:
	free(idx);
	free(gr);
	free(st);
	free(keys);
	stack_groups_free(g);
	return NULL;
}

void stack_groups_free(struct stack_groups *g)
{
	if (!g)
		return;
	free(g->order);
	free(g->start);
	free(g->group_of);
	free(g);
}

size_t stack_groups_of(const struct stack_groups *g, size_t i, size_t *ret_size)
{
	*ret_size = 0;
	if (!g || i >= g->nthreads || !g->group_of[i])
		return 0;
	size_t k = g->group_of[i] - 1;
	*ret_size = g->start[k + 1] - g->start[k];
	return k + 1;
}

struct obj_run {
	const tinspect_lock *l;
	size_t n;
};

/* most threads first, then by address */
static int cmp_runs(const void *a, const void *b)
{
	const struct obj_run *x = a, *y = b;
	if (x->n != y->n)
		return x->n > y->n ? -1 : 1;
	uint64_t ax = tinspect_lock_addr(x->l), ay = tinspect_lock_addr(y->l);
	return (ax > ay) - (ax < ay);
}

static int cmp_lock_addr(const void *a, const void *b)
{
	uint64_t x = tinspect_lock_addr(*(const tinspect_lock *const *)a);
	uint64_t y = tinspect_lock_addr(*(const tinspect_lock *const *)b);
	return (x > y) - (x < y);
}

/* The objects of one kind the n threads of a group wait on (each waits
 * on one, not all on the same): "each waiting on a cond of its own" only
 * when no two share one, else how many objects and how many threads on
 * each, most first. */
static void put_group_objects(FILE *out, const tinspect_snapshot *snap,
			      const size_t *ti, size_t n, enum tinspect_lock_kind kind)
{
	const char *kn = tinspect_lock_kind_name(kind);
	const tinspect_lock **v = malloc(n * sizeof *v);
	if (!v) {
		fprintf(out, ", each waiting on a %s", kn);
		return;
	}
	for (size_t i = 0; i < n; i++)
		v[i] = tinspect_wait_lock(tinspect_thread_wait(
			tinspect_snapshot_thread(snap, ti[i])));
	qsort(v, n, sizeof *v, cmp_lock_addr);
	/* runs of the same object, and their length */
	struct obj_run *r = malloc(n * sizeof *r);
	size_t nr = 0;
	for (size_t i = 0; r && i < n; i++) {
		if (nr && r[nr - 1].l == v[i])
			r[nr - 1].n++;
		else
			r[nr++] = (struct obj_run){ v[i], 1 };
	}
	free(v);
	if (!r || nr == n) {
		fprintf(out, ", each waiting on a %s of its own", kn);
		free(r);
		return;
	}
	qsort(r, nr, sizeof *r, cmp_runs);
	fprintf(out, ", waiting on %zu %ss:", nr, kn);
	for (size_t i = 0; i < nr && i < 4; i++) {
		const tinspect_symbol *sym = tinspect_lock_symbol(r[i].l);
		fprintf(out, "%s %zu on 0x%" PRIx64, i ? "," : "", r[i].n,
			tinspect_lock_addr(r[i].l));
		if (sym) {
			fputs(" (", out);
			agent_put_escaped(out, tinspect_symbol_name(sym));
			if (tinspect_symbol_offset(sym))
				fprintf(out, "+0x%" PRIx64, tinspect_symbol_offset(sym));
			fputc(')', out);
		}
	}
	if (nr > 4)
		fprintf(out, ", ... (%zu more)", nr - 4);
	free(r);
}

/* "[S 95, R 2]", and what the group's threads wait on if they agree */
static void put_group_head(FILE *out, const tinspect_snapshot *snap,
			   const size_t *ti, size_t n)
{
	size_t states[128] = { 0 };
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)tinspect_thread_state(
			tinspect_snapshot_thread(snap, ti[i]));
		states[c < 128 ? c : '?']++;
	}
	const char *sep = " [";
	for (unsigned c = 1; c < 128; c++)
		if (states[c]) {
			fprintf(out, "%s%c %zu", sep, c, states[c]);
			sep = ", ";
		}
	if (states[0])
		fprintf(out, "%s? %zu", sep, states[0]);
	fputc(']', out);
	const tinspect_thread *t0 = tinspect_snapshot_thread(snap, ti[0]);
	const tinspect_wait *w0 = tinspect_thread_wait(t0);
	const tinspect_lock *lock = w0 ? tinspect_wait_lock(w0) : NULL;
	bool same_lock = lock != NULL, same_kind = same_lock;
	for (size_t i = 1; i < n && (same_lock || same_kind); i++) {
		const tinspect_wait *w =
			tinspect_thread_wait(tinspect_snapshot_thread(snap, ti[i]));
		if (!w || tinspect_wait_lock(w) != lock)
			same_lock = false;
		if (!w || tinspect_wait_kind(w) != tinspect_wait_kind(w0))
			same_kind = false;
	}
	if (same_lock) {
		fputs(n > 1 ? ", all waiting on " : ", waiting on ", out);
		report_put_wait_short(out, t0);
	} else if (same_kind) {
		put_group_objects(out, snap, ti, n, tinspect_wait_kind(w0));
	}
	fputc('\n', out);
}

void stack_groups_print(FILE *out, const tinspect_snapshot *snap,
			const struct stack_groups *g, bool verbose)
{
	size_t shared = 0, single = 0;
	for (size_t k = 0; k < g->ngroups; k++) {
		if (g->start[k + 1] - g->start[k] > 1)
			shared++;
		else
			single++;
	}
	if (!shared)
		return;
	fprintf(out, "Threads grouped by identical stack (%zu group%s of 2 or more; "
		"%zu thread%s with a stack of its own, in the details):\n\n",
		shared, shared == 1 ? "" : "s", single, single == 1 ? "" : "s");
	for (size_t k = 0; k < g->ngroups; k++) {
		const size_t *ti = &g->order[g->start[k]];
		size_t n = g->start[k + 1] - g->start[k];
		if (n < 2)
			continue;
		fprintf(out, "Group %zu: %zu threads", k + 1, n);
		put_group_head(out, snap, ti, n);
		/* the tids, sorted, wrapped; all of them: grep finds a tid's
		 * group */
		size_t col = 0;
		for (size_t i = 0; i < n; i++) {
			if (col == 0)
				fputs("  threads:", out);
			col += (size_t)fprintf(out, " %d", (int)tinspect_thread_tid(
				tinspect_snapshot_thread(snap, ti[i])));
			if (col > 90 && i + 1 < n) {
				fputc('\n', out);
				col = 0;
			}
		}
		fputc('\n', out);
		agent_put_stack(out, tinspect_snapshot_thread(snap, ti[0]), true);
		fputc('\n', out);
	}
	(void)verbose;
}

