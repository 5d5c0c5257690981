/*
 * lockorder_out.c: what the lock-order graph says, for people and for
 * programs: a lock_order_inversion event line the moment an inversion is
 * found, the text report's section, the "lock_order" member of a snapshot
 * document and the counts of a summary line, and a saved graph read back
 * (tinspect --lock-order FILE).
 *
 * The wording is that of what was seen: an inversion is a potential
 * deadlock (two orders that, run at the same time, would wait for each
 * other), never a deadlock; and the waits that could give no order are
 * counted and said, so that "no inversion" is read for what it covers.
 */
#include "lockorder.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- text pieces ---------------------------------------------------------------- */

static void put_time(FILE *out, int64_t ns)
{
	char t[64];
	agent_iso_time_ns(ns, t, sizeof t);
	fputs(t, out);
}

/* "order_a", "bank_locks+0x28", or "mutex 0x7f... (no symbol)" */
static void put_lock(FILE *out, const struct lg_lock *l)
{
	if (l->symbol) {
		agent_put_escaped(out, l->symbol);
		if (l->offset)
			fprintf(out, "+0x%" PRIx64, l->offset);
	} else {
		fprintf(out, "%s 0x%" PRIx64, lg_kind_name(l->kind), l->addr);
	}
}

static void put_thread(FILE *out, const struct lg_thread *t)
{
	fprintf(out, "thread %d", (int)t->tid);
	if (t->name) {
		fputs(" \"", out);
		agent_put_escaped(out, t->name);
		fputc('"', out);
	}
}

static void put_frame(FILE *out, const struct lg_frame *f)
{
	if (f->symbol) {
		agent_put_escaped(out, f->symbol);
		fprintf(out, "+0x%" PRIx64, f->offset);
	} else if (f->module) {
		const char *b = strrchr(f->module, '/');
		agent_put_escaped(out, b ? b + 1 : f->module);
		fprintf(out, "+0x%" PRIx64, f->offset);
	} else {
		fputs("??", out);
	}
}

static void put_stack(FILE *out, const struct lg_stack *st, const char *indent)
{
	for (size_t i = 0; i < st->n; i++) {
		fprintf(out, "%s#%-2zu ", indent, i);
		put_frame(out, &st->v[i]);
		fputc('\n', out);
	}
}

/* One order of an inversion, with the evidence shown. */
static void put_order(FILE *out, const struct lockgraph *g, size_t e, size_t k)
{
	const struct lg_edge *ed = &g->edges[e];
	const struct lg_evidence *ev = &ed->ev[k];
	const struct lg_lock *a = &g->locks[ed->from], *b = &g->locks[ed->to];
	fputs("    ", out);
	put_lock(out, a);
	fputs(" then ", out);
	put_lock(out, b);
	fputs(" in ", out);
	put_thread(out, &ev->seen.thread);
	fputs(" at ", out);
	put_time(out, ev->seen.time_ns);
	fprintf(out, " (seen in %" PRIu64 " update%s", ed->count,
		ed->count == 1 ? "" : "s");
	if (ed->nev > 1)
		fprintf(out, ", by %zu%s threads", ed->nev,
			ed->nev == LG_EDGE_THREADS ? " or more" : "");
	fputs("):\n      waiting for ", out);
	put_lock(out, b);
	fputs(":\n", out);
	put_stack(out, &ev->seen.stack, "        ");
	fputs("      holding ", out);
	put_lock(out, a);
	if (ev->holding_frame >= 0 && (size_t)ev->holding_frame < ev->seen.stack.n) {
		fprintf(out, ", taken in frame #%d ", ev->holding_frame);
		put_frame(out, &ev->seen.stack.v[ev->holding_frame]);
		fputs(" (a wait for it there was seen in ", out);
	} else {
		fputs(" (the frame that took it is not shown by this stack; a wait "
		      "for it was seen in ", out);
	}
	if (ev->held_site.thread.tid) {
		put_thread(out, &ev->held_site.thread);
		fputs(" at ", out);
		put_time(out, ev->held_site.time_ns);
		fputs(")\n", out);
		if (ev->holding_frame < 0)
			put_stack(out, &ev->held_site.stack, "        ");
	} else {
		fputs("no thread of this graph)\n", out);
	}
}

static void put_inversion(FILE *out, const struct lockgraph *g,
			  const struct lg_inversion *inv)
{
	fputs("  Lock order inversion: POTENTIAL DEADLOCK (", out);
	for (size_t i = 0; i < inv->n; i++) {
		if (i)
			fputs(", ", out);
		put_lock(out, &g->locks[inv->locks[i]]);
		fputs(" then ", out);
		put_lock(out, &g->locks[inv->locks[(i + 1) % inv->n]]);
	}
	fputs(")\n  These orders were seen in different threads, at the times "
	      "below; no thread waits\n  because of them now, but threads that "
	      "ran them at the same time would deadlock.\n", out);
	for (size_t i = 0; i < inv->n; i++)
		put_order(out, g, inv->edges[i], inv->ev[i]);
}

/* Every inversion the graph found, or that there is none. */
static void put_inversions(FILE *out, const struct lockgraph *g)
{
	if (!g->ninv)
		fputs("  No lock order inversion found.\n", out);
	for (size_t i = 0; i < g->ninv; i++)
		put_inversion(out, g, &g->inv[i]);
}

/* "Waits that could not contribute: ..." */
static void put_waits(FILE *out, const uint64_t *w, const char *when)
{
	uint64_t none = 0;
	for (size_t c = LG_WAIT_COND; c < LG_WAIT_CLASSES; c++)
		none += w[c];
	fprintf(out, "  Waits %s: %" PRIu64 " on mutexes and rwlocks by threads whose "
		"held locks were read", when, w[LG_WAIT_USED]);
	if (w[LG_WAIT_HELD_UNKNOWN])
		fprintf(out, "; %" PRIu64 " by threads that could have run while "
			"they were looked at (not used)", w[LG_WAIT_HELD_UNKNOWN]);
	fprintf(out, "; %" PRIu64 " could not contribute", none);
	if (none) {
		fputs(" (their objects record no owner:", out);
		bool first = true;
		for (size_t c = LG_WAIT_COND; c < LG_WAIT_CLASSES; c++)
			if (w[c]) {
				fprintf(out, "%s %" PRIu64 " %s", first ? "" : ",", w[c],
					lg_wait_class_name((enum lg_wait_class)c));
				first = false;
			}
		fputc(')', out);
	}
	fputs(".\n", out);
}

static void put_graph_head(FILE *out, const struct lockgraph *g)
{
	fprintf(out, "%zu lock%s and %zu order%s learned over %" PRIu64 " update%s "
		"of %" PRIu64 " run%s", g->nlocks, g->nlocks == 1 ? "" : "s",
		g->nedges, g->nedges == 1 ? "" : "s", g->updates,
		g->updates == 1 ? "" : "s", g->runs, g->runs == 1 ? "" : "s");
}

void lockorder_text(FILE *out, const struct lockorder *lo)
{
	if (!lo || !lo->sampled)
		return;
	const struct lockgraph *g = lo->g;
	fputs("Lock order (", out);
	put_graph_head(out, g);
	fputs("):\n", out);
	put_inversions(out, g);
	put_waits(out, lo->waits, "in this update");
	if (g->updates > 1)
		put_waits(out, g->waits, "in all updates");
	fprintf(out, "  Locks whose words this update read: %zu", lo->locks_tracked);
	if (lo->locks_forgotten)
		fprintf(out, " (%zu forgotten for lack of room)", lo->locks_forgotten);
	fputs("; rwlocks held for reading record no owner and give no order.\n\n",
	      out);
}

/* ---- JSON ---------------------------------------------------------------------- */

static void json_time(struct jw *w, const char *k, int64_t ns)
{
	char t[64];
	agent_iso_time_ns(ns, t, sizeof t);
	jw_kstr(w, k, t);
}

static void inversion_members(struct jw *w, const struct lockgraph *g,
			      const struct lg_inversion *inv)
{
	jw_key(w, "locks");
	jw_arr(w);
	for (size_t i = 0; i < inv->n; i++) {
		jw_obj(w);
		lg_json_lock(w, &g->locks[inv->locks[i]]);
		jw_obj_end(w);
	}
	jw_arr_end(w);
	jw_key(w, "orders");
	jw_arr(w);
	for (size_t i = 0; i < inv->n; i++) {
		const struct lg_edge *e = &g->edges[inv->edges[i]];
		const struct lg_evidence *ev = &e->ev[inv->ev[i]];
		jw_obj(w);
		jw_kint(w, "first", (int64_t)i);
		jw_kint(w, "then", (int64_t)((i + 1) % inv->n));
		jw_kint(w, "count", (int64_t)(e->count & INT64_MAX));
		jw_kint(w, "threads", (int64_t)e->nev);
		json_time(w, "first_seen", e->first_ns);
		json_time(w, "last_seen", e->last_ns);
		lg_json_evidence(w, ev);
		jw_obj_end(w);
	}
	jw_arr_end(w);
	json_time(w, "found", inv->found_ns);
}

void lockorder_json_inversion(struct jw *w, const struct lockgraph *g,
			      const struct lg_inversion *inv)
{
	jw_obj(w);
	inversion_members(w, g, inv);
	jw_obj_end(w);
}

static void json_waits(struct jw *w, const char *k, const uint64_t *v)
{
	jw_key(w, k);
	jw_obj(w);
	for (size_t c = 0; c < LG_WAIT_CLASSES; c++)
		jw_kint(w, lg_wait_class_name((enum lg_wait_class)c),
			(int64_t)(v[c] & INT64_MAX));
	jw_obj_end(w);
}

void lockorder_json(struct jw *w, const struct lockorder *lo)
{
	if (!lo || !lo->sampled)
		return;
	const struct lockgraph *g = lo->g;
	jw_key(w, "lock_order");
	jw_obj(w);
	jw_kint(w, "updates", (int64_t)(g->updates & INT64_MAX));
	jw_kint(w, "runs", (int64_t)(g->runs & INT64_MAX));
	jw_kint(w, "locks", (int64_t)g->nlocks);
	jw_kint(w, "edges", (int64_t)g->nedges);
	jw_kint(w, "locks_tracked", (int64_t)lo->locks_tracked);
	jw_kint(w, "locks_forgotten", (int64_t)lo->locks_forgotten);
	json_waits(w, "waits", lo->waits);
	json_waits(w, "waits_total", g->waits);
	jw_key(w, "inversions");
	jw_arr(w);
	for (size_t i = 0; i < g->ninv; i++)
		lockorder_json_inversion(w, g, &g->inv[i]);
	jw_arr_end(w);
	jw_obj_end(w);
}

void lockorder_summary_json(struct jw *w, const struct lockorder *lo)
{
	if (!lo)
		return;
	jw_kint(w, "lock_order_inversions", (int64_t)lo->g->ninv);
	jw_kint(w, "lock_order_edges", (int64_t)lo->g->nedges);
}

/* ---- event lines --------------------------------------------------------------- */

static void event_json(const struct lockgraph *g, const struct lg_inversion *inv,
		       pid_t pid, FILE *f)
{
	char t[64];
	agent_iso_time_ns(inv->found_ns, t, sizeof t);
	struct jw w;
	jw_init(&w, f, false);
	json_line_head(&w, "event", pid, t);
	jw_kstr(&w, "event", "lock_order_inversion");
	jw_kbool(&w, "potential_deadlock", true);
	inversion_members(&w, g, inv);
	jw_obj_end(&w);
	jw_finish(&w);
}

static void event_text(const struct lockgraph *g, const struct lg_inversion *inv,
		       FILE *f)
{
	put_time(f, inv->found_ns);
	fputs(" lock order inversion (potential deadlock, no thread deadlocked): ", f);
	for (size_t i = 0; i < inv->n; i++) {
		const struct lg_edge *e = &g->edges[inv->edges[i]];
		const struct lg_evidence *ev = &e->ev[inv->ev[i]];
		if (i)
			fputs(", ", f);
		put_lock(f, &g->locks[e->from]);
		fputs(" then ", f);
		put_lock(f, &g->locks[e->to]);
		fputs(" in ", f);
		put_thread(f, &ev->seen.thread);
		fputs(" at ", f);
		put_time(f, ev->seen.time_ns);
	}
	fputc('\n', f);
}

void lockorder_events(const struct lockorder *lo, pid_t pid, bool json, FILE *f)
{
	if (!lo)
		return;
	for (size_t i = lo->new_from; i < lo->g->ninv; i++) {
		if (json)
			event_json(lo->g, &lo->g->inv[i], pid, f);
		else
			event_text(lo->g, &lo->g->inv[i], f);
	}
}

/* ---- a saved graph read back ---------------------------------------------------- */

static void show_text(const char *path, const struct lockgraph *g)
{
	fputs("Lock order graph ", stdout);
	agent_put_escaped(stdout, path);
	fputs(": ", stdout);
	put_graph_head(stdout, g);
	if (g->first_ns) {
		fputs(", from ", stdout);
		put_time(stdout, g->first_ns);
		fputs(" to ", stdout);
		put_time(stdout, g->last_ns);
	}
	fputs("\n\n", stdout);
	put_inversions(stdout, g);
	put_waits(stdout, g->waits, "in all updates");
	if (g->dropped_locks || g->dropped_edges || g->dropped_inversions)
		printf("  Left out for lack of room: %" PRIu64 " locks, %" PRIu64
		       " orders, %" PRIu64 " inversions.\n", g->dropped_locks,
		       g->dropped_edges, g->dropped_inversions);
	fputs("\nOrders (first then second: updates that saw it, threads, "
	      "first and last seen):\n", stdout);
	for (size_t i = 0; i < g->nedges; i++) {
		const struct lg_edge *e = &g->edges[i];
		fputs("  ", stdout);
		put_lock(stdout, &g->locks[e->from]);
		fputs(" then ", stdout);
		put_lock(stdout, &g->locks[e->to]);
		printf(": %" PRIu64 ", %zu%s, ", e->count, e->nev,
		       e->nev == LG_EDGE_THREADS ? "+" : "");
		put_time(stdout, e->first_ns);
		fputs(" .. ", stdout);
		put_time(stdout, e->last_ns);
		fputc('\n', stdout);
	}
	fputs("\nLocks:\n", stdout);
	for (size_t i = 0; i < g->nlocks; i++) {
		const struct lg_lock *l = &g->locks[i];
		fputs("  ", stdout);
		put_lock(stdout, l);
		printf(" (%s, 0x%" PRIx64 " in pid %d", lg_kind_name(l->kind), l->addr,
		       (int)l->pid);
		if (l->module) {
			fputs(", ", stdout);
			agent_put_escaped(stdout, l->module);
		}
		fputs(")\n", stdout);
	}
}

int lockorder_show(const char *path, bool json, bool check)
{
	struct lockgraph *g = lg_new();
	char why[1024];
	if (!g) {
		fputs("tinspect: out of memory\n", stderr);
		return EXIT_INTERNAL;
	}
	int err = lg_file_read(path, g, why, sizeof why);
	if (err) {
		fprintf(stderr, "tinspect: --lock-order: %s\n", why);
		lg_free(g);
		return EXIT_USAGE;
	}
	int status = check && g->ninv ? EXIT_LOCK_ORDER : EXIT_SNAPSHOT_OK;
	if (json) {
		char *buf;
		size_t len;
		if (lg_file_render(g, false, &buf, &len) == 0) {
			fwrite(buf, 1, len, stdout);
			free(buf);
		} else {
			status = EXIT_INTERNAL;
		}
	} else {
		show_text(path, g);
	}
	lg_free(g);
	if (fflush(stdout) != 0) {
		fputs("tinspect: cannot write the report\n", stderr);
		return EXIT_INTERNAL;
	}
	return status;
}
