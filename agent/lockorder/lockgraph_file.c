/*
 * lockgraph_file.c: the lock-order graph as a document
 * (schema/tinspect-lockorder.schema.json), for --lock-order FILE: read at
 * the start of a run, merged with what the run learns, written again.
 *
 * Writing goes through jwriter.c (every string valid UTF-8, whatever the
 * target's bytes) into memory, and the file is replaced atomically by the
 * caller (common/atomicfile.c).  Reading (jansson, as --diff reads)
 * checks every member it uses - type, range, every index against what it
 * indexes, the caps of lockgraph.h - and refuses the document with the
 * first thing that is wrong, rather than learning from a part of it: a
 * file of another major format version, a truncated or hand-edited one.
 */
#include "lockorder.h"

#include "array.h"

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- writing -------------------------------------------------------------------- */

static void put_time(struct jw *w, const char *k, int64_t ns)
{
	jw_key(w, k);
	if (ns <= 0) {
		jw_null(w);
		return;
	}
	char t[64];
	agent_iso_time_ns(ns, t, sizeof t);
	jw_str(w, t);
}

void lg_json_thread(struct jw *w, const struct lg_thread *t)
{
	jw_obj(w);
	jw_kint(w, "pid", t->pid);
	jw_kint(w, "tid", t->tid);
	jw_key(w, "pthread");
	if (t->pthread)
		jw_hex(w, t->pthread);
	else
		jw_null(w);
	jw_kstr(w, "name", t->name);
	jw_obj_end(w);
}

void lg_json_stack(struct jw *w, const struct lg_stack *st)
{
	jw_arr(w);
	for (size_t i = 0; i < st->n; i++) {
		jw_obj(w);
		jw_kstr(w, "symbol", st->v[i].symbol);
		jw_kstr(w, "module", st->v[i].module);
		jw_kint(w, "offset", (int64_t)(st->v[i].offset & INT64_MAX));
		jw_obj_end(w);
	}
	jw_arr_end(w);
}

void lg_json_seen(struct jw *w, const struct lg_seen *s, const char *stack_key)
{
	jw_key(w, "thread");
	lg_json_thread(w, &s->thread);
	put_time(w, "time", s->time_ns);
	jw_kint(w, "update", (int64_t)s->update);
	jw_key(w, stack_key);
	lg_json_stack(w, &s->stack);
}

void lg_json_evidence(struct jw *w, const struct lg_evidence *ev)
{
	lg_json_seen(w, &ev->seen, "waiting_stack");
	jw_key(w, "holding_frame");
	if (ev->holding_frame >= 0)
		jw_int(w, ev->holding_frame);
	else
		jw_null(w);
	jw_key(w, "held_site");
	if (ev->held_site.thread.tid) {
		jw_obj(w);
		lg_json_seen(w, &ev->held_site, "stack");
		jw_obj_end(w);
	} else {
		jw_null(w);
	}
}

void lg_json_lock(struct jw *w, const struct lg_lock *l)
{
	jw_kstr(w, "key", l->key);
	jw_kstr(w, "kind", lg_kind_name(l->kind));
	jw_khex(w, "addr", l->addr);
	jw_kint(w, "pid", l->pid);
	jw_kstr(w, "symbol", l->symbol);
	jw_kstr(w, "module", l->module);
	jw_kint(w, "offset", (int64_t)(l->offset & INT64_MAX));
}

static void put_lock(struct jw *w, const struct lg_lock *l)
{
	jw_obj(w);
	lg_json_lock(w, l);
	jw_key(w, "sites");
	jw_arr(w);
	for (size_t k = 0; k < l->nsites; k++) {
		jw_obj(w);
		jw_kstr(w, "caller", l->callers[k]);
		lg_json_seen(w, &l->sites[k], "stack");
		jw_obj_end(w);
	}
	jw_arr_end(w);
	jw_obj_end(w);
}

static void put_edge(struct jw *w, const struct lg_edge *e)
{
	jw_obj(w);
	jw_kint(w, "from", (int64_t)e->from);
	jw_kint(w, "to", (int64_t)e->to);
	jw_kint(w, "count", (int64_t)(e->count & INT64_MAX));
	put_time(w, "first_seen", e->first_ns);
	put_time(w, "last_seen", e->last_ns);
	jw_key(w, "evidence");
	jw_arr(w);
	for (size_t k = 0; k < e->nev; k++) {
		const struct lg_evidence *ev = &e->ev[k];
		jw_obj(w);
		lg_json_evidence(w, ev);
		jw_obj_end(w);
	}
	jw_arr_end(w);
	jw_obj_end(w);
}

static void put_index_array(struct jw *w, const char *k, const size_t *v, size_t n)
{
	jw_key(w, k);
	jw_arr(w);
	for (size_t i = 0; i < n; i++)
		jw_int(w, (int64_t)v[i]);
	jw_arr_end(w);
}

int lg_file_render(const struct lockgraph *g, bool pretty, char **ret,
		   size_t *ret_len)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	if (!f)
		return -ENOMEM;
	struct jw w;
	jw_init(&w, f, pretty);
	jw_obj(&w);
	jw_kstr(&w, "format_version", TINSPECT_FORMAT_VERSION);
	jw_kstr(&w, "kind", "lock_order");
	put_time(&w, "first_update", g->first_ns);
	put_time(&w, "last_update", g->last_ns);
	jw_kint(&w, "runs", (int64_t)(g->runs & INT64_MAX));
	jw_kint(&w, "updates", (int64_t)(g->updates & INT64_MAX));
	jw_key(&w, "waits");
	jw_obj(&w);
	for (size_t c = 0; c < LG_WAIT_CLASSES; c++)
		jw_kint(&w, lg_wait_class_name((enum lg_wait_class)c),
			(int64_t)(g->waits[c] & INT64_MAX));
	jw_obj_end(&w);
	jw_key(&w, "dropped");
	jw_obj(&w);
	jw_kint(&w, "locks", (int64_t)(g->dropped_locks & INT64_MAX));
	jw_kint(&w, "edges", (int64_t)(g->dropped_edges & INT64_MAX));
	jw_kint(&w, "inversions", (int64_t)(g->dropped_inversions & INT64_MAX));
	jw_obj_end(&w);
	jw_key(&w, "locks");
	jw_arr(&w);
	for (size_t i = 0; i < g->nlocks; i++)
		put_lock(&w, &g->locks[i]);
	jw_arr_end(&w);
	jw_key(&w, "edges");
	jw_arr(&w);
	for (size_t i = 0; i < g->nedges; i++)
		put_edge(&w, &g->edges[i]);
	jw_arr_end(&w);
	jw_key(&w, "inversions");
	jw_arr(&w);
	for (size_t i = 0; i < g->ninv; i++) {
		const struct lg_inversion *inv = &g->inv[i];
		jw_obj(&w);
		put_index_array(&w, "locks", inv->locks, inv->n);
		put_index_array(&w, "edges", inv->edges, inv->n);
		put_index_array(&w, "evidence", inv->ev, inv->n);
		put_time(&w, "found", inv->found_ns);
		jw_obj_end(&w);
	}
	jw_arr_end(&w);
	jw_obj_end(&w);
	int err = jw_finish(&w);
	if (fclose(f) || err) {
		free(buf);
		return -ENOMEM;
	}
	*ret = buf;
	*ret_len = len;
	return 0;
}

/* ---- reading -------------------------------------------------------------------- */

struct reader {
	struct lockgraph *g;
	char *why;
	size_t whylen;
	bool failed;
};

static bool fail(struct reader *r, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static bool fail(struct reader *r, const char *fmt, ...)
{
	if (r->failed)
		return false;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(r->why, r->whylen, fmt, ap);
	va_end(ap);
	r->failed = true;
	return false;
}

/* A non-negative integer member no larger than max. */
static bool get_count(struct reader *r, json_t *o, const char *k, uint64_t max,
		      uint64_t *ret)
{
	json_t *v = json_object_get(o, k);
	if (!json_is_integer(v) || json_integer_value(v) < 0 ||
	    (uint64_t)json_integer_value(v) > max)
		return fail(r, "%s is not an integer from 0 to %" PRIu64, k, max);
	*ret = (uint64_t)json_integer_value(v);
	return true;
}

/* A string member or null (*ret NULL). */
static bool get_opt_str(struct reader *r, json_t *o, const char *k, const char **ret)
{
	json_t *v = json_object_get(o, k);
	if (json_is_null(v)) {
		*ret = NULL;
		return true;
	}
	if (!json_is_string(v))
		return fail(r, "%s is neither a string nor null", k);
	*ret = json_string_value(v);
	return true;
}

/* 0x and up to 16 hex digits, as jw_khex() writes them */
static bool parse_hex(const char *s, uint64_t *ret)
{
	char *end;
	if (strncmp(s, "0x", 2) || !s[2] || strlen(s) > 18)
		return false;
	errno = 0;
	*ret = strtoull(s + 2, &end, 16);
	return !*end && !errno;
}

/* A time as put_time() writes it, in nanoseconds since the epoch */
static bool parse_time(const char *s, uint64_t *ret)
{
	struct tm tm = { 0 };
	unsigned us;
	char z;
	if (strlen(s) != 27 ||
	    sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d.%6u%c", &tm.tm_year, &tm.tm_mon,
		   &tm.tm_mday, &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &us, &z) != 8 ||
	    z != 'Z' || us > 999999)
		return false;
	tm.tm_year -= 1900;
	tm.tm_mon -= 1;
	time_t t = timegm(&tm);
	/* nanoseconds in 64 bits: 1970 to 2262 */
	if (t < 0 || t >= INT64_MAX / 1000000000)
		return false;
	*ret = (uint64_t)t * 1000000000 + (uint64_t)us * 1000;
	return true;
}

/* A string member that parse reads, or null (0) when nullable; what says
 * what the string must be. */
static bool get_parsed(struct reader *r, json_t *o, const char *k, bool nullable,
		       bool (*parse)(const char *s, uint64_t *ret),
		       const char *what, uint64_t *ret)
{
	json_t *v = json_object_get(o, k);
	if (nullable && json_is_null(v)) {
		*ret = 0;
		return true;
	}
	const char *s = json_string_value(v);
	if (!s || !parse(s, ret))
		return fail(r, "%s is not %s", k, what);
	return true;
}

static bool get_hex(struct reader *r, json_t *o, const char *k, bool nullable,
		    uint64_t *ret)
{
	return get_parsed(r, o, k, nullable, parse_hex, "a 0x... string", ret);
}

static bool get_time(struct reader *r, json_t *o, const char *k, bool nullable,
		     int64_t *ret)
{
	uint64_t ns = 0;
	if (!get_parsed(r, o, k, nullable, parse_time, "a time", &ns))
		return false;
	*ret = (int64_t)ns;
	return true;
}

static bool get_array(struct reader *r, json_t *o, const char *k, size_t max,
		      json_t **ret)
{
	*ret = json_object_get(o, k);
	if (!json_is_array(*ret))
		return fail(r, "%s is not an array", k);
	if (json_array_size(*ret) > max)
		return fail(r, "%s has more than %zu entries", k, max);
	return true;
}

static bool read_thread(struct reader *r, json_t *o, struct lg_thread *t)
{
	uint64_t pid, tid;
	const char *name = NULL;
	if (!json_is_object(o))
		return fail(r, "thread is not an object");
	if (!get_count(r, o, "pid", INT32_MAX, &pid) ||
	    !get_count(r, o, "tid", INT32_MAX, &tid) ||
	    !get_hex(r, o, "pthread", true, &t->pthread) ||
	    !get_opt_str(r, o, "name", &name))
		return false;
	t->pid = (pid_t)pid;
	t->tid = (pid_t)tid;
	t->name = name;	/* a view: the graph interns what it keeps */
	return true;
}

/* An observation into a view (strings borrowed from the document, frames
 * in frames[]): what lg_seen_copy() takes. */
static bool read_seen(struct reader *r, json_t *o, const char *stack_key,
		      struct lg_frame *frames, struct lg_seen *s)
{
	json_t *st;
	memset(s, 0, sizeof *s);
	if (!read_thread(r, json_object_get(o, "thread"), &s->thread) ||
	    !get_time(r, o, "time", false, &s->time_ns) ||
	    !get_count(r, o, "update", INT64_MAX, &s->update) ||
	    !get_array(r, o, stack_key, 1024, &st))
		return false;
	size_t i;
	json_t *f;
	s->stack.v = frames;
	json_array_foreach(st, i, f) {
		if (i == LG_MAX_FRAMES)
			break;
		const char *sym = NULL, *mod = NULL;
		if (!json_is_object(f) || !get_opt_str(r, f, "symbol", &sym) ||
		    !get_opt_str(r, f, "module", &mod) ||
		    !get_count(r, f, "offset", INT64_MAX, &frames[i].offset))
			return fail(r, "%s: a frame is not {symbol, module, offset}",
				    stack_key);
		frames[i].symbol = sym;
		frames[i].module = mod;
		s->stack.n = i + 1;
	}
	return true;
}

static bool read_lock(struct reader *r, json_t *o)
{
	const char *key, *kind, *sym = NULL, *mod = NULL;
	uint64_t addr, pid, off;
	enum lg_kind k;
	json_t *sites;
	if (!json_is_object(o))
		return fail(r, "a lock is not an object");
	if (!(key = json_string_value(json_object_get(o, "key"))) ||
	    !(kind = json_string_value(json_object_get(o, "kind"))) ||
	    lg_kind_parse(kind, &k))
		return fail(r, "a lock has no key or no kind mutex/rwlock");
	if (!get_hex(r, o, "addr", false, &addr) ||
	    !get_count(r, o, "pid", INT32_MAX, &pid) ||
	    !get_opt_str(r, o, "symbol", &sym) || !get_opt_str(r, o, "module", &mod) ||
	    !get_count(r, o, "offset", INT64_MAX, &off) ||
	    !get_array(r, o, "sites", LG_LOCK_SITES, &sites))
		return false;
	if (lg_lock_find(r->g, key) >= 0)
		return fail(r, "lock %s is listed twice", key);
	long li = lg_lock_get(r->g, key, k, addr, (pid_t)pid, sym, mod, off);
	if (li < 0)
		return fail(r, "out of memory");
	size_t i;
	json_t *s;
	json_array_foreach(sites, i, s) {
		struct lg_frame frames[LG_MAX_FRAMES];
		struct lg_seen seen;
		const char *caller = NULL;
		if (!json_is_object(s) || !get_opt_str(r, s, "caller", &caller) ||
		    !read_seen(r, s, "stack", frames, &seen))
			return fail(r, "a site of lock %s is malformed", key);
		lg_lock_site(r->g, (size_t)li, caller, &seen);
	}
	return true;
}

static bool read_evidence(struct reader *r, json_t *o, size_t from, size_t to)
{
	struct lg_frame frames[LG_MAX_FRAMES], held_frames[LG_MAX_FRAMES];
	struct lg_seen seen, held = { 0 };
	json_t *hs = json_object_get(o, "held_site"), *hf = json_object_get(o,
									 "holding_frame");
	if (!json_is_object(o) || !read_seen(r, o, "waiting_stack", frames, &seen))
		return fail(r, "evidence is malformed");
	if (!json_is_null(hf) && (!json_is_integer(hf) || json_integer_value(hf) < 0 ||
				  json_integer_value(hf) >= (json_int_t)seen.stack.n))
		return fail(r, "holding_frame is not a frame of the waiting stack");
	if (!json_is_null(hs) && !read_seen(r, hs, "stack", held_frames, &held))
		return false;
	size_t e;
	unsigned news = lg_observe(r->g, from, to, &seen,
				   json_is_null(hf) ? -1 : (int)json_integer_value(hf),
				   json_is_null(hs) ? NULL : &held, &e);
	if (news & LG_NEWS_ERROR)
		return fail(r, "out of memory");
	return true;
}

static bool read_edge(struct reader *r, json_t *o)
{
	uint64_t from, to, count;
	int64_t first, last;
	json_t *evs;
	if (!json_is_object(o))
		return fail(r, "an edge is not an object");
	if (!get_count(r, o, "from", r->g->nlocks ? r->g->nlocks - 1 : 0, &from) ||
	    !get_count(r, o, "to", r->g->nlocks ? r->g->nlocks - 1 : 0, &to) ||
	    !r->g->nlocks || from == to ||
	    !get_count(r, o, "count", INT64_MAX, &count) ||
	    !get_time(r, o, "first_seen", false, &first) ||
	    !get_time(r, o, "last_seen", false, &last) ||
	    !get_array(r, o, "evidence", LG_EDGE_THREADS, &evs) ||
	    !json_array_size(evs))
		return fail(r, "an edge is not {from, to (two locks), count, "
			    "first_seen, last_seen, evidence (1 to %d)}",
			    LG_EDGE_THREADS);
	if (lg_edge_find(r->g, from, to) >= 0)
		return fail(r, "edge %" PRIu64 " -> %" PRIu64 " is listed twice",
			    from, to);
	size_t i;
	json_t *ev;
	json_array_foreach(evs, i, ev)
		if (!read_evidence(r, ev, from, to))
			return false;
	struct lg_edge *e = &r->g->edges[lg_edge_find(r->g, from, to)];
	e->count = count;
	e->counted = 0;
	e->first_ns = first;
	e->last_ns = last;
	return true;
}

static bool read_indexes(struct reader *r, json_t *o, const char *k, size_t n,
			 size_t max, size_t *v)
{
	json_t *a;
	if (!get_array(r, o, k, LG_MAX_CYCLE, &a) || json_array_size(a) != n)
		return fail(r, "inversion %s: not %zu indexes", k, n);
	for (size_t i = 0; i < n; i++) {
		json_t *x = json_array_get(a, i);
		if (!json_is_integer(x) || json_integer_value(x) < 0 ||
		    (uint64_t)json_integer_value(x) >= max)
			return fail(r, "inversion %s: index out of range", k);
		v[i] = (size_t)json_integer_value(x);
	}
	return true;
}

static bool read_inversion(struct reader *r, json_t *o)
{
	struct lg_inversion inv = { .from_file = true };
	json_t *locks = json_object_get(o, "locks");
	struct lockgraph *g = r->g;
	if (!json_is_object(o) || !json_is_array(locks) ||
	    json_array_size(locks) < 2 || json_array_size(locks) > LG_MAX_CYCLE)
		return fail(r, "an inversion has not 2 to %d locks", LG_MAX_CYCLE);
	inv.n = json_array_size(locks);
	if (!read_indexes(r, o, "locks", inv.n, g->nlocks, inv.locks) ||
	    !read_indexes(r, o, "edges", inv.n, g->nedges, inv.edges) ||
	    !read_indexes(r, o, "evidence", inv.n, LG_EDGE_THREADS, inv.ev) ||
	    !get_time(r, o, "found", false, &inv.found_ns))
		return false;
	for (size_t i = 0; i < inv.n; i++) {
		const struct lg_edge *e = &g->edges[inv.edges[i]];
		if (e->from != inv.locks[i] || e->to != inv.locks[(i + 1) % inv.n] ||
		    inv.ev[i] >= e->nev)
			return fail(r, "an inversion's edges do not join its locks");
	}
	if (g->ninv == LG_MAX_INVERSIONS)
		return fail(r, "more than %d inversions", LG_MAX_INVERSIONS);
	if (array_grow(&g->inv, &g->inv_cap, g->ninv + 1, sizeof *g->inv, 8))
		return fail(r, "out of memory");
	g->inv[g->ninv++] = inv;
	return true;
}

static bool read_head(struct reader *r, json_t *root)
{
	const char *version = json_string_value(json_object_get(root, "format_version"));
	const char *kind = json_string_value(json_object_get(root, "kind"));
	const char *ours = TINSPECT_FORMAT_VERSION;
	size_t major_len = strcspn(ours, ".");
	if (!version || !kind || strcmp(kind, "lock_order"))
		return fail(r, "not a lock-order document (kind \"lock_order\")");
	if (strncmp(version, ours, major_len + 1))
		return fail(r, "format version %.32s; this tinspect reads %.*s.x only "
			    "(it writes %s)", version, (int)major_len, ours, ours);
	json_t *waits = json_object_get(root, "waits");
	json_t *dropped = json_object_get(root, "dropped");
	if (!json_is_object(waits) || !json_is_object(dropped))
		return fail(r, "no waits or dropped object");
	for (size_t c = 0; c < LG_WAIT_CLASSES; c++)
		if (!get_count(r, waits, lg_wait_class_name((enum lg_wait_class)c),
			       INT64_MAX, &r->g->waits[c]))
			return false;
	return get_count(r, root, "runs", INT64_MAX, &r->g->runs) &&
	       get_count(r, root, "updates", INT64_MAX, &r->g->updates) &&
	       get_count(r, dropped, "locks", INT64_MAX, &r->g->dropped_locks) &&
	       get_count(r, dropped, "edges", INT64_MAX, &r->g->dropped_edges) &&
	       get_count(r, dropped, "inversions", INT64_MAX,
			 &r->g->dropped_inversions) &&
	       get_time(r, root, "first_update", true, &r->g->first_ns) &&
	       get_time(r, root, "last_update", true, &r->g->last_ns);
}

/* The document's members into g; false with r's reason. */
static bool read_root(struct reader *r, json_t *root)
{
	json_t *locks, *edges, *invs, *x;
	size_t i;
	if (!json_is_object(root))
		return fail(r, "not a JSON object");
	if (!read_head(r, root) ||
	    !get_array(r, root, "locks", LG_MAX_LOCKS, &locks) ||
	    !get_array(r, root, "edges", LG_MAX_EDGES, &edges) ||
	    !get_array(r, root, "inversions", LG_MAX_INVERSIONS, &invs))
		return false;
	json_array_foreach(locks, i, x)
		if (!read_lock(r, x))
			return false;
	json_array_foreach(edges, i, x)
		if (!read_edge(r, x))
			return false;
	json_array_foreach(invs, i, x)
		if (!read_inversion(r, x))
			return false;
	return true;
}

int lg_file_parse(const char *buf, size_t len, const char *name,
		  struct lockgraph *g, char *why, size_t whylen)
{
	struct reader r = { g, why, whylen, false };
	json_error_t je;
	json_t *root = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &je);
	if (!root) {
		snprintf(why, whylen, "%s: not one JSON document: %s (line %d)", name,
			 je.text, je.line);
		return -EINVAL;
	}
	bool ok = read_root(&r, root);
	json_decref(root);
	if (!ok) {
		char detail[512];
		snprintf(detail, sizeof detail, "%s", why);
		snprintf(why, whylen, "%s: %s", name, detail);
		return -EINVAL;
	}
	return 0;
}

int lg_file_read(const char *path, struct lockgraph *g, char *why, size_t whylen)
{
	FILE *f = fopen(path, "re");
	if (!f) {
		int e = errno;
		snprintf(why, whylen, "%s: %s", path, strerror(e));
		return -e;
	}
	char *buf = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);
	char chunk[65536];
	size_t got;
	int err = m ? 0 : -ENOMEM;
	while (!err && (got = fread(chunk, 1, sizeof chunk, f)) > 0)
		if (fwrite(chunk, 1, got, m) != got)
			err = -ENOMEM;
	if (!err && ferror(f))
		err = -EIO;
	fclose(f);
	if (m && fclose(m))
		err = err ? err : -ENOMEM;
	if (err) {
		snprintf(why, whylen, "%s: %s", path, strerror(-err));
		free(buf);
		return err;
	}
	err = lg_file_parse(buf, len, path, g, why, whylen);
	free(buf);
	return err;
}
