/*
 * diffcheck.c: a document given to --diff is checked, before anything is
 * compared, against the snapshot schema's constraints on every member
 * the diff reads (schema/tinspect-snapshot.schema.json).  A document is
 * input from someone else: a thread id of 0 or -2^63 went through to
 * threads_appeared, and a context-switch count of -2^63 made a signed
 * overflow.  The first member that fails is named by its path
 * (threads[3].cpu.context_switches) with what was wanted and what was
 * found; --diff then refuses the document (status 2).
 *
 * Members the schema requires are required; members it makes optional
 * (cpu.context_switches, 2.2) are checked when present.  blocked_on.symbol
 * may also be an object with a "symbol" member, as the diff reads it.
 */
#include "agent.h"

#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

struct chk {
	char *path;		/* the failing member's path */
	size_t pathlen;
	char *why;
	size_t whylen;
};

static bool fail(struct chk *c, const char *path, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static bool fail(struct chk *c, const char *path, const char *fmt, ...)
{
	snprintf(c->path, c->pathlen, "%s", path);
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(c->why, c->whylen, fmt, ap);
	va_end(ap);
	return false;
}

/* What a JSON value is, for messages. */
static const char *type_of(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT: return "an object";
	case JSON_ARRAY: return "an array";
	case JSON_STRING: return "a string";
	case JSON_INTEGER: return "an integer";
	case JSON_REAL: return "a real";
	case JSON_TRUE:
	case JSON_FALSE: return "a boolean";
	case JSON_NULL: return "null";
	}
	return "?";
}

/* A member's path (cut short if it must be: it names, it is not used). */
static void pathf(char *out, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void pathf(char *out, size_t len, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(out, len, fmt, ap);
	va_end(ap);
}

static bool digits(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (s[i] < '0' || s[i] > '9')
			return false;
	return true;
}

bool diff_is_hex64(const char *s)
{
	size_t n = s ? strlen(s) : 0;
	if (n < 3 || n > 18 || s[0] != '0' || s[1] != 'x')
		return false;
	for (size_t i = 2; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return true;
}

/* ^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{6}Z$ */
bool diff_is_time(const char *s)
{
	static const char shape[] = "dddd-dd-ddTdd:dd:dd.ddddddZ";
	if (!s || strlen(s) != sizeof shape - 1)
		return false;
	for (size_t i = 0; i < sizeof shape - 1; i++)
		if (shape[i] == 'd' ? !digits(s + i, 1) : s[i] != shape[i])
			return false;
	return true;
}

/* ^2\.[0-9]+$ (this tinspect's major) */
bool diff_is_version(const char *s)
{
	return s && s[0] == '2' && s[1] == '.' && s[2] && digits(s + 2, strlen(s + 2));
}

/* The member k of object o, at path p.k; present, or a failure. */
static json_t *member(struct chk *c, const char *p, json_t *o, const char *k,
		      char *sub, size_t sublen)
{
	pathf(sub, sublen, "%s%s%s", p, *p ? "." : "", k);
	json_t *v = json_object_get(o, k);
	if (!v)
		fail(c, sub, "missing");
	return v;
}

static bool want_object(struct chk *c, const char *p, json_t *v)
{
	return json_is_object(v) || fail(c, p, "must be an object (is %s)", type_of(v));
}

static bool want_array(struct chk *c, const char *p, json_t *v, size_t min)
{
	if (!json_is_array(v))
		return fail(c, p, "must be an array (is %s)", type_of(v));
	return json_array_size(v) >= min ||
	       fail(c, p, "must have at least %zu items (has %zu)", min,
		    json_array_size(v));
}

static bool want_tid(struct chk *c, const char *p, json_t *v, bool nullable)
{
	if (nullable && json_is_null(v))
		return true;
	if (!json_is_integer(v))
		return fail(c, p, "must be a thread id, an integer from 1 to 2147483647 "
			    "(is %s)", type_of(v));
	json_int_t x = json_integer_value(v);
	return (x >= 1 && x <= 2147483647) ||
	       fail(c, p, "must be a thread id, from 1 to 2147483647 (is %" JSON_INTEGER_FORMAT
		    ")", x);
}

static bool want_string(struct chk *c, const char *p, json_t *v, bool nullable)
{
	return json_is_string(v) || (nullable && json_is_null(v)) ||
	       fail(c, p, "must be a string%s (is %s)", nullable ? " or null" : "",
		    type_of(v));
}

static bool want_hex(struct chk *c, const char *p, json_t *v, bool nullable)
{
	if (nullable && json_is_null(v))
		return true;
	return diff_is_hex64(json_string_value(v)) ||
	       fail(c, p, "must be a 64-bit hex string \"0x...\"%s", nullable ?
		    " or null" : "");
}

static bool want_enum(struct chk *c, const char *p, json_t *v,
		      const char *const *values)
{
	const char *s = json_string_value(v);
	for (const char *const *e = values; s && *e; e++)
		if (!strcmp(s, *e))
			return true;
	return fail(c, p, "must be one of the schema's names (is %s%s%.40s%s)",
		    s ? "" : type_of(v), s ? "\"" : "", s ? s : "", s ? "\"" : "");
}

static bool want_count(struct chk *c, const char *p, json_t *v)
{
	return (json_is_integer(v) && json_integer_value(v) >= 0) ||
	       fail(c, p, "must be an integer >= 0 (is %s)", json_is_integer(v) ?
		    "negative" : type_of(v));
}

static bool want_seconds(struct chk *c, const char *p, json_t *v)
{
	return (json_is_number(v) && json_number_value(v) >= 0) ||
	       fail(c, p, "must be a number >= 0 (is %s)", json_is_number(v) ?
		    "negative" : type_of(v));
}

static const char *const lock_kinds[] = { "mutex", "rwlock", "cond", "sem", "barrier",
					  "join", "file", "futex", NULL };
static const char *const owner_states[] = { "none", "live", "dead", "outside",
					    "unknown", NULL };

#define PATH 160

static bool check_blocked_on(struct chk *c, const char *p, json_t *b)
{
	char s[PATH];
	json_t *v;
	if (json_is_null(b))
		return true;
	if (!want_object(c, p, b))
		return false;
	if (!(v = member(c, p, b, "kind", s, sizeof s)) || !want_enum(c, s, v, lock_kinds) ||
	    !(v = member(c, p, b, "futex", s, sizeof s)) || !want_hex(c, s, v, false) ||
	    !(v = member(c, p, b, "object", s, sizeof s)) || !want_hex(c, s, v, true) ||
	    !(v = member(c, p, b, "caller", s, sizeof s)) || !want_string(c, s, v, true) ||
	    !(v = member(c, p, b, "symbol", s, sizeof s)))
		return false;
	if (json_is_object(v)) {
		char s2[PATH];
		json_t *w = member(c, s, v, "symbol", s2, sizeof s2);
		return w && want_string(c, s2, w, true);
	}
	return want_string(c, s, v, true);
}

/* Every item of the array a, at path p, by check. */
static bool check_each(struct chk *c, const char *p, json_t *a,
		       bool (*check)(struct chk *, const char *, json_t *))
{
	char s[PATH];
	json_t *it;
	size_t i;
	json_array_foreach(a, i, it) {
		pathf(s, sizeof s, "%s[%zu]", p, i);
		if (!check(c, s, it))
			return false;
	}
	return true;
}

static bool check_hex(struct chk *c, const char *p, json_t *v)
{
	return want_hex(c, p, v, false);
}

static bool check_tid(struct chk *c, const char *p, json_t *v)
{
	return want_tid(c, p, v, false);
}

/* An object whose member k passes check. */
static bool check_object_with(struct chk *c, const char *p, json_t *o, const char *k,
			      bool (*check)(struct chk *, const char *, json_t *))
{
	char s[PATH];
	json_t *v;
	return want_object(c, p, o) && (v = member(c, p, o, k, s, sizeof s)) &&
	       check(c, s, v);
}

/* A lock's waiter: its "tid". */
static bool check_waiter(struct chk *c, const char *p, json_t *w)
{
	return check_object_with(c, p, w, "tid", check_tid);
}

/* A lock of a deadlock: its "addr". */
static bool check_lockref(struct chk *c, const char *p, json_t *l)
{
	return check_object_with(c, p, l, "addr", check_hex);
}

static bool check_frame(struct chk *c, const char *p, json_t *fr)
{
	char s[PATH];
	json_t *v;
	return want_object(c, p, fr) &&
	       (v = member(c, p, fr, "pc", s, sizeof s)) && want_hex(c, s, v, false) &&
	       (v = member(c, p, fr, "symbol", s, sizeof s)) &&
	       want_string(c, s, v, true) &&
	       (v = member(c, p, fr, "module", s, sizeof s)) &&
	       want_string(c, s, v, true);
}

static bool check_syscall(struct chk *c, const char *p, json_t *sc)
{
	char s[PATH];
	json_t *v;
	if (json_is_null(sc))
		return true;
	return want_object(c, p, sc) &&
	       (v = member(c, p, sc, "name", s, sizeof s)) && want_string(c, s, v, true) &&
	       (v = member(c, p, sc, "args", s, sizeof s)) && want_array(c, s, v, 6) &&
	       check_each(c, s, v, check_hex);
}

static bool check_stack(struct chk *c, const char *p, json_t *st)
{
	char s[PATH];
	json_t *frames;
	if (json_is_null(st))
		return true;
	return want_object(c, p, st) && (frames = member(c, p, st, "frames", s, sizeof s)) &&
	       want_array(c, s, frames, 0) && check_each(c, s, frames, check_frame);
}

static bool check_cpu(struct chk *c, const char *p, json_t *cpu)
{
	char s[PATH];
	json_t *v;
	if (json_is_null(cpu))
		return true;
	if (!want_object(c, p, cpu) ||
	    !(v = member(c, p, cpu, "user_s", s, sizeof s)) || !want_seconds(c, s, v) ||
	    !(v = member(c, p, cpu, "system_s", s, sizeof s)) || !want_seconds(c, s, v))
		return false;
	v = json_object_get(cpu, "context_switches");	/* 2.2 on */
	pathf(s, sizeof s, "%s.context_switches", p);
	return !v || want_count(c, s, v);
}

static bool check_thread(struct chk *c, const char *p, json_t *t)
{
	char s[PATH], s2[PATH];
	json_t *v, *w;
	if (!want_object(c, p, t) ||
	    !(v = member(c, p, t, "tid", s, sizeof s)) || !want_tid(c, s, v, false) ||
	    !(v = member(c, p, t, "name", s, sizeof s)) || !want_string(c, s, v, true) ||
	    !(v = member(c, p, t, "state", s, sizeof s)) || !want_string(c, s, v, true))
		return false;
	if (json_is_string(v) && strlen(json_string_value(v)) > 1)
		return fail(c, s, "must be one letter or null");
	if (!(v = member(c, p, t, "pthread", s, sizeof s)))
		return false;
	if (!json_is_null(v) && (!want_object(c, s, v) ||
				 !(w = member(c, s, v, "id", s2, sizeof s2)) ||
				 !want_hex(c, s2, w, false)))
		return false;
	return (v = member(c, p, t, "syscall", s, sizeof s)) && check_syscall(c, s, v) &&
	       (v = member(c, p, t, "blocked_on", s, sizeof s)) &&
	       check_blocked_on(c, s, v) &&
	       (v = member(c, p, t, "stack", s, sizeof s)) && check_stack(c, s, v) &&
	       (v = member(c, p, t, "cpu", s, sizeof s)) && check_cpu(c, s, v);
}

static bool check_lock(struct chk *c, const char *p, json_t *l)
{
	char s[PATH], s2[PATH];
	json_t *v, *w;
	if (!want_object(c, p, l) ||
	    !(v = member(c, p, l, "kind", s, sizeof s)) || !want_enum(c, s, v, lock_kinds) ||
	    !(v = member(c, p, l, "addr", s, sizeof s)) || !want_hex(c, s, v, false) ||
	    !(v = member(c, p, l, "owner", s, sizeof s)) || !want_tid(c, s, v, true) ||
	    !(v = member(c, p, l, "owner_state", s, sizeof s)) ||
	    !want_enum(c, s, v, owner_states) ||
	    !(v = member(c, p, l, "symbol", s, sizeof s)))
		return false;
	if (!json_is_null(v) && (!want_object(c, s, v) ||
				 !(w = member(c, s, v, "symbol", s2, sizeof s2)) ||
				 !want_string(c, s2, w, true)))
		return false;
	return (v = member(c, p, l, "waiters", s, sizeof s)) && want_array(c, s, v, 0) &&
	       check_each(c, s, v, check_waiter);
}

static bool check_deadlock(struct chk *c, const char *p, json_t *d)
{
	char s[PATH];
	json_t *v;
	return want_object(c, p, d) &&
	       (v = member(c, p, d, "threads", s, sizeof s)) && want_array(c, s, v, 1) &&
	       check_each(c, s, v, check_tid) &&
	       (v = member(c, p, d, "locks", s, sizeof s)) && want_array(c, s, v, 1) &&
	       check_each(c, s, v, check_lockref);
}

/* Every item of the array member k of root by check. */
static bool check_items(struct chk *c, json_t *root, const char *k,
			bool (*check)(struct chk *, const char *, json_t *))
{
	char s[PATH];
	json_t *v = member(c, "", root, k, s, sizeof s);
	return v && want_array(c, s, v, 0) && check_each(c, s, v, check);
}

bool diff_check_doc(json_t *root, char *path, size_t pathlen, char *why,
		    size_t whylen)
{
	struct chk c = { path, pathlen, why, whylen };
	char s[PATH];
	json_t *v, *w;
	if (!want_object(&c, "(the document)", root) ||
	    !(v = member(&c, "", root, "format_version", s, sizeof s)))
		return false;
	if (!diff_is_version(json_string_value(v)))
		return fail(&c, s, "must be \"2.MINOR\"");
	if (!(v = member(&c, "", root, "captured_at", s, sizeof s)))
		return false;
	if (!diff_is_time(json_string_value(v)))
		return fail(&c, s, "must be a UTC time YYYY-MM-DDTHH:MM:SS.uuuuuuZ");
	if (!(v = member(&c, "", root, "process", s, sizeof s)) || !want_object(&c, s, v) ||
	    !(w = member(&c, "process", v, "pid", s, sizeof s)) ||
	    !want_tid(&c, s, w, false) ||
	    !(w = member(&c, "process", v, "exe", s, sizeof s)) ||
	    !want_string(&c, s, w, true))
		return false;
	return check_items(&c, root, "threads", check_thread) &&
	       check_items(&c, root, "locks", check_lock) &&
	       check_items(&c, root, "deadlocks", check_deadlock);
}
