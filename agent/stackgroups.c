/*
 * stackgroups.c: threads grouped by identical stack, each stack printed
 * once with the list of its threads, largest group first, the way pt-pmp
 * users and `eu-stack | sort | uniq -c` users read a process of hundreds
 * of threads by hand.  Two stacks are the same when their frames are: the
 * same function at the same offset (the same return addresses), or, for
 * code outside any module (JIT), any such frame, since JIT code addresses
 * differ from thread to thread without saying anything.
 *
 * Also the frame helpers the report shares: the function a blocked thread
 * called the wait from, and a frame's name on one line.
 */
#include "agent.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

struct stack_groups {
	size_t *order;		/* thread indexes with a stack, group by group */
	size_t norder;
	size_t *start;		/* group g: order[start[g] .. start[g + 1]) */
	size_t ngroups;
	size_t *group_of;	/* thread index -> group number + 1, 0 none */
	const struct dbs_snapshot *snap;
};

static bool same_frame(const struct dbs_frame *a, const struct dbs_frame *b)
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

static int cmp_frame(const struct dbs_frame *a, const struct dbs_frame *b)
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

static int cmp_stack(const struct dbs_stack *x, const struct dbs_stack *y)
{
	size_t n = x->nframes < y->nframes ? x->nframes : y->nframes;
	for (size_t i = 0; i < n; i++) {
		if (same_frame(&x->frames[i], &y->frames[i]))
			continue;
		return cmp_frame(&x->frames[i], &y->frames[i]);
	}
	if (x->nframes != y->nframes)
		return x->nframes < y->nframes ? -1 : 1;
	return (x->end > y->end) - (x->end < y->end);
}

static int cmp_threads(const void *a, const void *b, void *ctx)
{
	const struct dbs_snapshot *snap = ctx;
	const struct dbs_thread *x = &snap->threads[*(const size_t *)a];
	const struct dbs_thread *y = &snap->threads[*(const size_t *)b];
	int c = cmp_stack(&x->stack, &y->stack);
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

struct stack_groups *stack_groups_build(const struct dbs_snapshot *snap)
{
	size_t n = snap->nthreads;
	struct stack_groups *g = calloc(1, sizeof *g);
	size_t *idx = malloc((n ? n : 1) * sizeof *idx);
	struct gref *gr = malloc((n ? n : 1) * sizeof *gr);
	if (!g || !idx || !gr)
		goto fail;
	g->snap = snap;
	g->order = malloc((n ? n : 1) * sizeof *g->order);
	g->start = malloc((n + 1) * sizeof *g->start);
	g->group_of = calloc(n ? n : 1, sizeof *g->group_of);
	if (!g->order || !g->start || !g->group_of)
		goto fail;
	size_t m = 0;
	for (size_t i = 0; i < n; i++)
		if (snap->threads[i].stack.end != DBS_STACK_NONE &&
		    snap->threads[i].stack.nframes)
			idx[m++] = i;
	if (m > 1)
		qsort_r(idx, m, sizeof *idx, cmp_threads, (void *)snap);
	size_t ng = 0;
	for (size_t a = 0; a < m;) {
		size_t b = a + 1;
		while (b < m && !cmp_stack(&snap->threads[idx[a]].stack,
					   &snap->threads[idx[b]].stack))
			b++;
		gr[ng++] = (struct gref){ a, b - a, snap->threads[idx[a]].tid };
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
	return g;
fail:
	free(idx);
	free(gr);
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
	if (!g || i >= g->snap->nthreads || !g->group_of[i])
		return 0;
	size_t k = g->group_of[i] - 1;
	*ret_size = g->start[k + 1] - g->start[k];
	return k + 1;
}

/* "[S 95, R 2]", and what the group's threads wait on if they agree */
static void put_group_head(FILE *out, const struct dbs_snapshot *snap,
			   const size_t *ti, size_t n)
{
	size_t states[128] = { 0 };
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)snap->threads[ti[i]].state;
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
	const struct dbs_thread *t0 = &snap->threads[ti[0]];
	const struct dbs_locks *L = snap->locks;
	size_t lock = t0->blocked_on ? t0->blocked_on->lock : SIZE_MAX;
	bool same_lock = L && lock < L->n, same_kind = same_lock;
	for (size_t i = 1; i < n && (same_lock || same_kind); i++) {
		const struct dbs_blocked_on *b = snap->threads[ti[i]].blocked_on;
		if (!b || b->lock != lock)
			same_lock = false;
		if (!b || b->kind != t0->blocked_on->kind)
			same_kind = false;
	}
	if (same_lock) {
		fputs(n > 1 ? ", all waiting on " : ", waiting on ", out);
		report_put_wait_short(out, snap, t0);
	} else if (same_kind) {
		fprintf(out, ", each waiting on a %s of its own",
			dbs_lock_kind_name(t0->blocked_on->kind));
	}
	fputc('\n', out);
}

void stack_groups_print(FILE *out, const struct dbs_snapshot *snap,
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
		pid_t *tids = malloc(n * sizeof *tids);
		size_t col = 0;
		for (size_t i = 0; tids && i < n; i++)
			tids[i] = snap->threads[ti[i]].tid;
		for (size_t i = 0; tids && i < n; i++) {
			if (col == 0)
				fputs("  threads:", out);
			col += (size_t)fprintf(out, " %d", (int)tids[i]);
			if (col > 90 && i + 1 < n) {
				fputc('\n', out);
				col = 0;
			}
		}
		if (tids)
			fputc('\n', out);
		free(tids);
		agent_put_stack(out, &snap->threads[ti[0]].stack, true);
		fputc('\n', out);
	}
	(void)verbose;
}

/* ---- frames ------------------------------------------------------------------------- */

static bool runtime_module(const char *path)
{
	const char *b = path ? strrchr(path, '/') : NULL;
	b = b ? b + 1 : path;
	return b && (!strncmp(b, "libc.so", 7) || !strncmp(b, "libpthread.so", 13) ||
		     !strncmp(b, "ld-linux", 8) || !strncmp(b, "libc-2.", 7));
}

const struct dbs_frame *agent_wait_caller(const struct dbs_thread *th)
{
	const struct dbs_stack *st = &th->stack;
	for (size_t i = 0; i < st->nframes; i++) {
		const struct dbs_frame *f = &st->frames[i];
		if (f->module && !runtime_module(f->module))
			return f;
		if (!f->module && i > 0)
			return f;	/* JIT code called into libc */
	}
	return NULL;
}

const char *agent_frame_name(const struct dbs_frame *f, char *buf, size_t len)
{
	FILE *m = fmemopen(buf, len, "w");
	if (!m) {
		snprintf(buf, len, "??");
		return buf;
	}
	if (f->symbol) {
		agent_put_escaped(m, f->symbol);
	} else if (f->module) {
		const char *b = strrchr(f->module, '/');
		agent_put_escaped(m, b ? b + 1 : f->module);
		fprintf(m, "+0x%" PRIx64, f->module_offset);
	} else {
		fputs("?? (JIT or generated code)", m);
	}
	fputc('\0', m);
	fclose(m);
	buf[len - 1] = '\0';
	return buf;
}
