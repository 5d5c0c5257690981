/*
 * diff.c: tinspect --diff OLD.json NEW.json.  Java engineers
 * compare a series of thread dumps to find "persistent blockers"; this is
 * that comparison for two tinspect snapshots: which threads appeared and
 * went away, and what did not move between the captures: threads in the
 * same wait with the same stack, locks held by the same owner, deadlocks
 * present in both.
 *
 * It reads documents, not processes: the two may come from another
 * machine, or from someone else.  A document is a regular file, opened
 * without blocking (a FIFO given for one made --diff wait for ever), read
 * with jansson (as the tests read them), and only documents of this
 * program's major format version are compared: another major may mean
 * something else by the same member, and a guess there would be a wrong
 * answer.  Every member the comparison reads is checked against the
 * snapshot schema's constraints first (diffcheck.c); a document that
 * fails is refused with the member's path.
 *
 * "The same wait" is the rule of the library's waiting_since (waits.c):
 * the same thread (tid, and pthread_t where both say), the same object
 * (kind and address, or the same system call and first argument), the
 * same frame pcs, at most 15 ms more CPU time and at most 4 more context
 * switches (2 are the second capture's own; a document without them,
 * older than 2.2, is compared on the CPU time alone).  A lock is "held by
 * the same owner in both" only if one of its waiters is in the same wait
 * in both: three threads taking turns show the same owner in two
 * captures one time in three.
 */
#include "agent.h"
#include "common.h"
#include "jwriter.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* CPU time that still counts as "none": one clock tick and a half (see
 * waits.c: every capture costs the thread a few microseconds). */
#define SAME_WAIT_CPU_S 0.015
/* context switches the second capture itself costs a waiting thread,
 * with a margin (waits.c) */
#define SAME_WAIT_SWITCHES 4

struct doc {
	const char *path;
	FILE *err;		/* where refusals are said; NULL: nowhere */
	json_t *root;
	json_t *threads, *locks, *deadlocks;
	const char *version, *captured_at, *exe;
	json_int_t pid;
	double t;		/* captured_at in seconds */
};

static const char *jstr(json_t *o, const char *k)
{
	return json_string_value(json_object_get(o, k));
}

/* "YYYY-MM-DDTHH:MM:SS.uuuuuuZ" in seconds; false if it is not that. */
static bool parse_time(const char *s, double *ret)
{
	struct tm tm = { 0 };
	unsigned us;
	char z;
	if (!s || sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d.%6u%c", &tm.tm_year, &tm.tm_mon,
			 &tm.tm_mday, &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &us, &z) != 8 ||
	    z != 'Z')
		return false;
	tm.tm_year -= 1900;
	tm.tm_mon -= 1;
	*ret = (double)timegm(&tm) + us / 1e6;
	return true;
}

static bool doc_fail(const struct doc *d, const char *why, const char *what)
{
	if (d->err)
		fprintf(d->err, "tinspect: --diff: %s: %s%s%s\n", d->path, why,
			what ? ": " : "", what ? what : "");
	return false;
}

/* The document root (taken) checked, and what the comparison reads of it. */
static bool doc_take(struct doc *d, json_t *root)
{
	d->root = root;
	if (!json_is_object(d->root))
		return doc_fail(d, "not a JSON object", NULL);
	d->version = jstr(d->root, "format_version");
	if (!d->version)
		return doc_fail(d, "no format_version: not a tinspect document", NULL);
	/* MAJOR.MINOR: readers accept any MINOR of the MAJOR they know */
	const char *ours = TINSPECT_FORMAT_VERSION;
	size_t major_len = strcspn(ours, ".");
	if (strncmp(d->version, ours, major_len + 1)) {
		if (d->err)
			fprintf(d->err, "tinspect: --diff: %s: format version %.32s; "
				"this tinspect compares documents of format %.*s.x "
				"only (it writes %s)\n", d->path, d->version,
				(int)major_len, ours, ours);
		return false;
	}
	if (json_object_get(d->root, "kind"))
		return doc_fail(d, "a --summary or event line of a watch stream, "
				"not a snapshot", jstr(d->root, "kind"));
	char path[200], why[200], what[420];
	if (!diff_check_doc(d->root, path, sizeof path, why, sizeof why)) {
		snprintf(what, sizeof what, "%s: %s", path, why);
		return doc_fail(d, "does not hold to the snapshot schema", what);
	}
	json_t *proc = json_object_get(d->root, "process");
	d->threads = json_object_get(d->root, "threads");
	d->locks = json_object_get(d->root, "locks");
	d->deadlocks = json_object_get(d->root, "deadlocks");
	d->captured_at = jstr(d->root, "captured_at");
	if (!json_is_object(proc) || !json_is_integer(json_object_get(proc, "pid")))
		return doc_fail(d, "no process.pid", NULL);
	d->pid = json_integer_value(json_object_get(proc, "pid"));
	d->exe = jstr(proc, "exe");
	if (!json_is_array(d->threads))
		return doc_fail(d, "no threads array", NULL);
	if (!json_is_array(d->locks) || !json_is_array(d->deadlocks))
		return doc_fail(d, "no locks or deadlocks array", NULL);
	if (!parse_time(d->captured_at, &d->t))
		return doc_fail(d, "captured_at is not a time", d->captured_at);
	return true;
}

/* A regular file, opened without blocking (a FIFO would wait for a
 * writer for ever), parsed and taken. */
static bool doc_load(struct doc *d, const char *path, FILE *err)
{
	memset(d, 0, sizeof *d);
	d->path = path;
	d->err = err;
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	struct stat st;
	if (fd < 0)
		return doc_fail(d, "cannot open it", strerror(errno));
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return doc_fail(d, "not a regular file (a FIFO, a device?): "
				"documents are read from files", NULL);
	}
	json_error_t je;
	json_t *root = json_loadfd(fd, JSON_REJECT_DUPLICATES, &je);
	close(fd);
	if (!root) {
		char where[320];
		snprintf(where, sizeof where, "%s (line %d)", je.text, je.line);
		return doc_fail(d, "not one JSON document", where);
	}
	return doc_take(d, root);
}

static json_t *thread_of(const struct doc *d, json_int_t tid)
{
	size_t i;
	json_t *t;
	json_array_foreach(d->threads, i, t)
		if (json_integer_value(json_object_get(t, "tid")) == tid)
			return t;
	return NULL;
}

/* What a thread of a document waits on, as the library follows it. */
struct dwait {
	const char *kind;	/* a lock kind, or "syscall" */
	const char *addr;	/* hex: the object (else futex), or first arg */
	const char *symbol;	/* NULL if none */
	const char *syscall;	/* "syscall": its name; NULL if unknown */
};

static bool thread_wait(json_t *t, struct dwait *w)
{
	memset(w, 0, sizeof *w);
	json_t *b = json_object_get(t, "blocked_on");
	if (json_is_object(b)) {
		w->kind = jstr(b, "kind");
		w->addr = jstr(b, "object") ? jstr(b, "object") : jstr(b, "futex");
		json_t *sym = json_object_get(b, "symbol");
		w->symbol = json_is_object(sym) ? jstr(sym, "symbol") : jstr(b, "symbol");
		return w->kind && w->addr;
	}
	const char *st = jstr(t, "state");
	json_t *sc = json_object_get(t, "syscall");
	/* asleep before the stop (state), in that call at the stop (epoll_wait
	 * shows it returning EINTR, interrupted by the stop: the same call) */
	if (!st || (strcmp(st, "S") && strcmp(st, "D")) || !json_is_object(sc))
		return false;
	w->kind = "syscall";
	w->syscall = jstr(sc, "name");
	w->addr = json_string_value(json_array_get(json_object_get(sc, "args"), 0));
	return w->addr != NULL;
}

static bool same_str(const char *a, const char *b)
{
	return a == b || (a && b && !strcmp(a, b));
}

/* Two arrays of objects of the same length whose member `key` is the same
 * string (or missing) in each pair. */
static bool same_members(json_t *a, json_t *b, const char *key)
{
	if (!json_is_array(a) || !json_is_array(b) ||
	    json_array_size(a) != json_array_size(b))
		return false;
	for (size_t i = 0; i < json_array_size(a); i++)
		if (!same_str(jstr(json_array_get(a, i), key),
			      jstr(json_array_get(b, i), key)))
			return false;
	return true;
}

static bool same_stack(json_t *a, json_t *b)
{
	return same_members(json_object_get(json_object_get(a, "stack"), "frames"),
			    json_object_get(json_object_get(b, "stack"), "frames"),
			    "pc");
}

/* user_s + system_s; false if not known */
static bool thread_cpu(json_t *t, double *ret)
{
	json_t *c = json_object_get(t, "cpu");
	if (!json_is_object(c) || !json_is_number(json_object_get(c, "user_s")) ||
	    !json_is_number(json_object_get(c, "system_s")))
		return false;
	*ret = json_number_value(json_object_get(c, "user_s")) +
	       json_number_value(json_object_get(c, "system_s"));
	return true;
}

/* Not run between the captures, as far as the documents tell. */
static bool did_not_run(json_t *nt, json_t *ot, double *ret_cpu)
{
	double cn, co;
	/* numbers >= 0 (diffcheck.c), but their sum may overflow to inf */
	if (!thread_cpu(nt, &cn) || !thread_cpu(ot, &co) || !isfinite(cn) ||
	    !isfinite(co) || cn < co || cn - co > SAME_WAIT_CPU_S)
		return false;
	*ret_cpu = cn - co;
	json_t *sn = json_object_get(json_object_get(nt, "cpu"), "context_switches");
	json_t *so = json_object_get(json_object_get(ot, "cpu"), "context_switches");
	if (!json_is_integer(sn) || !json_is_integer(so))
		return true;
	/* both >= 0 (diffcheck.c): compared before subtracting all the same */
	json_int_t a = json_integer_value(sn), b = json_integer_value(so);
	return a >= b && a - b <= SAME_WAIT_SWITCHES;
}

/* The same thread: the same tid, and the same pthread_t if both know it
 * (a tid reused by a new thread has another descriptor, usually). */
static bool same_thread(json_t *a, json_t *b)
{
	const char *pa = jstr(json_object_get(a, "pthread"), "id");
	const char *pb = jstr(json_object_get(b, "pthread"), "id");
	return !pa || !pb || !strcmp(pa, pb);
}

/* Where the thread waits: the caller of the wait the library named
 * (blocked_on.caller), else the first frame outside libc and the dynamic
 * linker, else the innermost named frame. */
static const char *wait_function(json_t *t)
{
	const char *caller = jstr(json_object_get(t, "blocked_on"), "caller");
	if (caller)
		return caller;
	json_t *f = json_object_get(json_object_get(t, "stack"), "frames");
	const char *first = NULL;
	size_t i;
	json_t *fr;
	json_array_foreach(f, i, fr) {
		const char *s = jstr(fr, "symbol"), *m = jstr(fr, "module");
		if (!s)
			continue;
		if (!first)
			first = s;
		if (m && !strstr(m, "/libc.so") && !strstr(m, "/ld-linux"))
			return s;
	}
	return first;
}

/* ---- the comparison, written as JSON or as text ------------------------------ */

struct out {
	bool json;
	FILE *f;
	struct jw w;
};

static void section(struct out *o, const char *key, const char *title, size_t n)
{
	if (o->json) {
		jw_key(&o->w, key);
		jw_arr(&o->w);
	} else {
		fprintf(o->f, "%s (%zu)%s\n", title, n, n ? ":" : "");
	}
}

static void section_end(struct out *o)
{
	if (o->json)
		jw_arr_end(&o->w);
}

static void thread_ref(struct out *o, json_t *t)
{
	json_int_t tid = json_integer_value(json_object_get(t, "tid"));
	const char *name = jstr(t, "name");
	if (o->json) {
		jw_obj(&o->w);
		jw_kint(&o->w, "tid", tid);
		jw_kstr(&o->w, "name", name);
		return;
	}
	fprintf(o->f, "  %lld", (long long)tid);
	if (name) {
		fputc(' ', o->f);
		agent_fput_quoted(o->f, name, strlen(name));
	}
}

/* Threads of a that b has not (appeared: a = new, b = old). */
static void threads_only_in(struct out *o, const struct doc *a, const struct doc *b,
			    const char *key, const char *title)
{
	size_t i, n = 0;
	json_t *t;
	json_array_foreach(a->threads, i, t) {
		json_t *u = thread_of(b, json_integer_value(json_object_get(t, "tid")));
		n += !u || !same_thread(t, u);
	}
	section(o, key, title, n);
	json_array_foreach(a->threads, i, t) {
		json_t *u = thread_of(b, json_integer_value(json_object_get(t, "tid")));
		if (u && same_thread(t, u))
			continue;
		thread_ref(o, t);
		if (o->json)
			jw_obj_end(&o->w);
		else
			fputc('\n', o->f);
	}
	section_end(o);
}

/* t (NEW) and u (OLD) are the same thread in the same wait; *ret is
 * what it waits on. */
static bool same_wait(json_t *t, json_t *u, struct dwait *ret, double *ret_cpu)
{
	struct dwait wo;
	return same_thread(t, u) && thread_wait(t, ret) && thread_wait(u, &wo) &&
	       same_str(ret->kind, wo.kind) && same_str(ret->addr, wo.addr) &&
	       same_str(ret->syscall, wo.syscall) && same_stack(t, u) &&
	       did_not_run(t, u, ret_cpu);
}

static void same_waits(struct out *o, const struct doc *od, const struct doc *nd)
{
	size_t i, n = 0;
	json_t *t;
	/* two passes: the count heads the text section */
	for (int pass = 0; pass < 2; pass++) {
		if (pass)
			section(o, "same_wait", "threads in the same wait with the same "
				"stack in both", n);
		json_array_foreach(nd->threads, i, t) {
			json_t *u = thread_of(od, json_integer_value(json_object_get(t, "tid")));
			double gained;
			struct dwait wn;
			if (!u || !same_wait(t, u, &wn, &gained))
				continue;
			if (!pass) {
				n++;
				continue;
			}
			const char *fn = wait_function(t);
			thread_ref(o, t);
			if (o->json) {
				jw_key(&o->w, "wait");
				jw_obj(&o->w);
				jw_kstr(&o->w, "kind", wn.kind);
				jw_kstr(&o->w, "addr", wn.addr);
				jw_kstr(&o->w, "symbol", wn.symbol);
				jw_kstr(&o->w, "syscall", wn.syscall);
				jw_obj_end(&o->w);
				jw_key(&o->w, "cpu_gained_s");
				jw_real(&o->w, gained);
				jw_kstr(&o->w, "function", fn);
				jw_obj_end(&o->w);
				continue;
			}
			fprintf(o->f, ": %s %s", wn.syscall ? wn.syscall : wn.kind, wn.addr);
			if (wn.symbol) {
				fputs(" (", o->f);
				agent_put_escaped(o->f, wn.symbol);
				fputc(')', o->f);
			}
			if (fn) {
				fputs(" in ", o->f);
				agent_put_escaped(o->f, fn);
			}
			fprintf(o->f, ", at least %.1f s\n", nd->t - od->t);
		}
	}
	section_end(o);
}

/* A lock of the document held by a live owner: its owner tid; 0 if not. */
static json_int_t lock_owner(json_t *l)
{
	const char *st = jstr(l, "owner_state");
	json_t *ow = json_object_get(l, "owner");
	return st && !strcmp(st, "live") && json_is_integer(ow) ? json_integer_value(ow) : 0;
}

static json_t *lock_at(const struct doc *d, const char *addr)
{
	size_t i;
	json_t *l;
	json_array_foreach(d->locks, i, l)
		if (same_str(jstr(l, "addr"), addr))
			return l;
	return NULL;
}

/* Some waiter of lock l (NEW) is in the same wait in both. */
static bool waited_throughout(json_t *l, const struct doc *od, const struct doc *nd)
{
	size_t i;
	json_t *wt;
	json_array_foreach(json_object_get(l, "waiters"), i, wt) {
		json_int_t tid = json_integer_value(json_object_get(wt, "tid"));
		json_t *t = thread_of(nd, tid), *u = thread_of(od, tid);
		struct dwait w;
		double gained;
		if (t && u && same_wait(t, u, &w, &gained))
			return true;
	}
	return false;
}

static void same_locks(struct out *o, const struct doc *od, const struct doc *nd)
{
	size_t i, n = 0;
	json_t *l;
	for (int pass = 0; pass < 2; pass++) {
		if (pass)
			section(o, "locks_held", "locks held by the same owner in both", n);
		json_array_foreach(nd->locks, i, l) {
			json_int_t owner = lock_owner(l);
			const char *kind = jstr(l, "kind");
			json_t *m = lock_at(od, jstr(l, "addr"));
			/* a join's "owner" is the thread joined: no lock held */
			if (!owner || !m || lock_owner(m) != owner || !kind ||
			    !strcmp(kind, "join") || !same_str(kind, jstr(m, "kind")))
				continue;
			json_t *ot = thread_of(od, owner), *nt = thread_of(nd, owner);
			if (!ot || !nt || !same_thread(ot, nt) || !waited_throughout(l, od, nd))
				continue;
			if (!pass) {
				n++;
				continue;
			}
			json_t *sym = json_object_get(l, "symbol");
			const char *sname = json_is_object(sym) ? jstr(sym, "symbol") : NULL;
			size_t wo = json_array_size(json_object_get(m, "waiters"));
			size_t wn = json_array_size(json_object_get(l, "waiters"));
			const char *oname = jstr(nt, "name");
			if (o->json) {
				jw_obj(&o->w);
				jw_kstr(&o->w, "kind", kind);
				jw_kstr(&o->w, "addr", jstr(l, "addr"));
				jw_kstr(&o->w, "symbol", sname);
				jw_kint(&o->w, "owner", owner);
				jw_kstr(&o->w, "owner_name", oname);
				jw_kint(&o->w, "waiters_old", (int64_t)wo);
				jw_kint(&o->w, "waiters_new", (int64_t)wn);
				jw_obj_end(&o->w);
				continue;
			}
			fprintf(o->f, "  %s %s", kind, jstr(l, "addr"));
			if (sname) {
				fputs(" (", o->f);
				agent_put_escaped(o->f, sname);
				fputc(')', o->f);
			}
			fprintf(o->f, " held by %lld", (long long)owner);
			if (oname) {
				fputc(' ', o->f);
				agent_fput_quoted(o->f, oname, strlen(oname));
			}
			fprintf(o->f, "; %zu waiting then, %zu now\n", wo, wn);
		}
	}
	section_end(o);
}

/* A cycle's threads and lock addresses, the same in both (each cycle
 * starts at its smallest tid, so equal cycles are equal arrays). */
static bool same_cycle(json_t *a, json_t *b)
{
	json_t *ta = json_object_get(a, "threads"), *tb = json_object_get(b, "threads");
	json_t *la = json_object_get(a, "locks"), *lb = json_object_get(b, "locks");
	return json_is_array(ta) && json_equal(ta, tb) &&
	       same_members(la, lb, "addr");
}

static void same_deadlocks(struct out *o, const struct doc *od, const struct doc *nd)
{
	size_t i, k, n = 0;
	json_t *c, *c2;
	for (int pass = 0; pass < 2; pass++) {
		if (pass)
			section(o, "deadlocks", "deadlocks present in both", n);
		json_array_foreach(nd->deadlocks, i, c) {
			bool both = false;
			json_array_foreach(od->deadlocks, k, c2)
				both |= same_cycle(c, c2);
			if (!both)
				continue;
			if (!pass) {
				n++;
				continue;
			}
			json_t *tids = json_object_get(c, "threads");
			json_t *locks = json_object_get(c, "locks");
			json_t *v;
			size_t j;
			if (o->json) {
				jw_obj(&o->w);
				jw_key(&o->w, "threads");
				jw_arr(&o->w);
				json_array_foreach(tids, j, v)
					jw_int(&o->w, json_integer_value(v));
				jw_arr_end(&o->w);
				jw_key(&o->w, "locks");
				jw_arr(&o->w);
				json_array_foreach(locks, j, v)
					jw_str(&o->w, jstr(v, "addr"));
				jw_arr_end(&o->w);
				jw_obj_end(&o->w);
				continue;
			}
			fputs("  threads", o->f);
			json_array_foreach(tids, j, v)
				fprintf(o->f, " %lld", (long long)json_integer_value(v));
			fputs(", locks", o->f);
			json_array_foreach(locks, j, v)
				fprintf(o->f, " %s", jstr(v, "addr") ? jstr(v, "addr") : "?");
			fputc('\n', o->f);
		}
	}
	section_end(o);
}

static void doc_ref_json(struct jw *w, const char *key, const struct doc *d)
{
	jw_key(w, key);
	jw_obj(w);
	jw_kstr(w, "file", d->path);
	jw_kstr(w, "format_version", d->version);
	jw_kint(w, "pid", d->pid);
	jw_kstr(w, "exe", d->exe);
	jw_kstr(w, "captured_at", d->captured_at);
	jw_kint(w, "threads", (int64_t)json_array_size(d->threads));
	jw_obj_end(w);
}

/* The comparison of two documents taken, written to out. */
static int compare(const struct doc *od, const struct doc *nd, bool json, FILE *out)
{
	bool same_process = od->pid == nd->pid && same_str(od->exe, nd->exe);
	struct out o = { .json = json, .f = out };
	if (json) {
		jw_init(&o.w, out, false);
		jw_obj(&o.w);
		jw_kstr(&o.w, "format_version", TINSPECT_FORMAT_VERSION);
		jw_kstr(&o.w, "kind", "diff");
		doc_ref_json(&o.w, "old", od);
		doc_ref_json(&o.w, "new", nd);
		jw_key(&o.w, "seconds_between");
		jw_real(&o.w, nd->t - od->t);
		jw_kbool(&o.w, "same_process", same_process);
	} else {
		fprintf(out, "tinspect diff: %s (pid %lld, %s) -> %s (pid %lld, %s): "
			"%.3f s between the captures\n", od->path, (long long)od->pid,
			od->captured_at, nd->path, (long long)nd->pid, nd->captured_at,
			nd->t - od->t);
		if (!same_process)
			fputs("note: not the same process (pid or executable differ): "
			      "threads are compared by tid all the same\n", out);
		if (nd->t < od->t)
			fputs("note: NEW was captured before OLD\n", out);
	}
	threads_only_in(&o, nd, od, "threads_appeared", "threads that appeared");
	threads_only_in(&o, od, nd, "threads_gone", "threads that went away");
	same_waits(&o, od, nd);
	same_locks(&o, od, nd);
	same_deadlocks(&o, od, nd);
	int r = 0;
	if (json) {
		jw_obj_end(&o.w);
		r = jw_finish(&o.w);
	}
	return r;
}

int agent_diff_docs(json_t *old_root, const char *old_name, json_t *new_root,
		    const char *new_name, bool json, FILE *out, FILE *err)
{
	struct doc od = { .path = old_name, .err = err };
	struct doc nd = { .path = new_name, .err = err };
	bool ok = doc_take(&od, json_incref(old_root));
	ok = doc_take(&nd, json_incref(new_root)) && ok;
	int r = ok ? compare(&od, &nd, json, out) : 0;
	json_decref(od.root);
	json_decref(nd.root);
	if (!ok)
		return EXIT_USAGE;
	return r ? EXIT_INTERNAL : EXIT_SNAPSHOT_OK;
}

int agent_diff(const char *old_path, const char *new_path, bool json)
{
	struct doc od, nd;
	bool ok = doc_load(&od, old_path, stderr);
	ok = doc_load(&nd, new_path, stderr) && ok;
	int r = ok ? compare(&od, &nd, json, stdout) : 0;
	json_decref(od.root);
	json_decref(nd.root);
	if (!ok)
		return EXIT_USAGE;
	if (fflush(stdout) || r) {
		fprintf(stderr, "tinspect: cannot write the diff: %s\n", strerror(errno));
		return EXIT_INTERNAL;
	}
	return EXIT_SNAPSHOT_OK;
}
