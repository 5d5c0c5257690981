/*
 * fuzz_diff: tinspect --diff (agent/diff.c over diffcheck.c) on two
 * documents made of the input: the bytes up to the first NUL are OLD,
 * the bytes after it NEW (no NUL: NEW is OLD).  Documents that jansson
 * does not parse are not the diff's business (it says "not one JSON
 * document"); every other pair goes through the comparison, as JSON and
 * as text.  Whatever they hold, nothing may crash or overflow (ASan,
 * UBSan), and when the comparison accepts them its JSON must parse as
 * strict JSON and hold to the diff schema (schema/tinspect-diff.schema.json)
 * as checked below: every member the schema requires, of its type, none
 * it does not list; tids from 1 to 2^31-1; hex64 addresses; the time and
 * version patterns; kinds of their enums; counts and cpu_gained_s >= 0;
 * deadlocks with at least one thread and one lock.  The seeds are real
 * snapshot documents and mutated ones (corpus/README.md).
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void bad(const char *what, const char *out, size_t len)
{
	fprintf(stderr, "diff output breaks the schema: %s\n%.*s\n", what,
		(int)(len < 4000 ? len : 4000), out);
	abort();
}

/* Only the keys listed (NULL-terminated), and each of them present. */
static bool exactly(json_t *o, const char *const *keys)
{
	if (!json_is_object(o))
		return false;
	size_t n = 0;
	for (const char *const *k = keys; *k; k++, n++)
		if (!json_object_get(o, *k))
			return false;
	return json_object_size(o) == n;
}

static bool is_tid(json_t *v)
{
	return json_is_integer(v) && json_integer_value(v) >= 1 &&
	       json_integer_value(v) <= 2147483647;
}

static bool str_or_null(json_t *v)
{
	return json_is_string(v) || json_is_null(v);
}

static bool count(json_t *v)
{
	return json_is_integer(v) && json_integer_value(v) >= 0;
}

static bool one_of(json_t *v, const char *const *values)
{
	const char *s = json_string_value(v);
	for (; s && *values; values++)
		if (!strcmp(s, *values))
			return true;
	return false;
}

static bool doc_ref(json_t *d)
{
	static const char *const keys[] = { "file", "format_version", "pid", "exe",
					    "captured_at", "threads", NULL };
	return exactly(d, keys) && json_is_string(json_object_get(d, "file")) &&
	       diff_is_version(json_string_value(json_object_get(d, "format_version"))) &&
	       is_tid(json_object_get(d, "pid")) && str_or_null(json_object_get(d, "exe")) &&
	       diff_is_time(json_string_value(json_object_get(d, "captured_at"))) &&
	       count(json_object_get(d, "threads"));
}

static bool thread_ref(json_t *t)
{
	static const char *const keys[] = { "tid", "name", NULL };
	return exactly(t, keys) && is_tid(json_object_get(t, "tid")) &&
	       str_or_null(json_object_get(t, "name"));
}

static bool same_wait(json_t *t)
{
	static const char *const keys[] = { "tid", "name", "wait", "cpu_gained_s",
					    "function", NULL };
	static const char *const wkeys[] = { "kind", "addr", "symbol", "syscall", NULL };
	static const char *const kinds[] = { "futex", "mutex", "rwlock", "cond", "sem",
					     "barrier", "join", "syscall", NULL };
	json_t *w = json_object_get(t, "wait"), *cpu = json_object_get(t, "cpu_gained_s");
	return exactly(t, keys) && is_tid(json_object_get(t, "tid")) &&
	       str_or_null(json_object_get(t, "name")) && exactly(w, wkeys) &&
	       one_of(json_object_get(w, "kind"), kinds) &&
	       diff_is_hex64(json_string_value(json_object_get(w, "addr"))) &&
	       str_or_null(json_object_get(w, "symbol")) &&
	       str_or_null(json_object_get(w, "syscall")) && json_is_number(cpu) &&
	       json_number_value(cpu) >= 0 && str_or_null(json_object_get(t, "function"));
}

static bool lock_held(json_t *l)
{
	static const char *const keys[] = { "kind", "addr", "symbol", "owner",
					    "owner_name", "waiters_old", "waiters_new",
					    NULL };
	static const char *const kinds[] = { "futex", "mutex", "rwlock", "cond", "sem",
					     "barrier", NULL };
	return exactly(l, keys) && one_of(json_object_get(l, "kind"), kinds) &&
	       diff_is_hex64(json_string_value(json_object_get(l, "addr"))) &&
	       str_or_null(json_object_get(l, "symbol")) &&
	       is_tid(json_object_get(l, "owner")) &&
	       str_or_null(json_object_get(l, "owner_name")) &&
	       count(json_object_get(l, "waiters_old")) &&
	       count(json_object_get(l, "waiters_new"));
}

static bool deadlock(json_t *d)
{
	static const char *const keys[] = { "threads", "locks", NULL };
	json_t *t = json_object_get(d, "threads"), *l = json_object_get(d, "locks"), *v;
	size_t i;
	if (!exactly(d, keys) || !json_is_array(t) || !json_array_size(t) ||
	    !json_is_array(l) || !json_array_size(l))
		return false;
	json_array_foreach(t, i, v)
		if (!is_tid(v))
			return false;
	json_array_foreach(l, i, v)
		if (!str_or_null(v))
			return false;
	return true;
}

static bool items(json_t *a, bool (*ok)(json_t *))
{
	size_t i;
	json_t *v;
	if (!json_is_array(a))
		return false;
	json_array_foreach(a, i, v)
		if (!ok(v))
			return false;
	return true;
}

static void check_output(const char *out, size_t len)
{
	json_error_t je;
	json_t *d = json_loadb(out, len, JSON_REJECT_DUPLICATES, &je);
	if (!d)
		bad(je.text, out, len);
	static const char *const keys[] = { "format_version", "kind", "old", "new",
					    "seconds_between", "same_process",
					    "threads_appeared", "threads_gone", "same_wait",
					    "locks_held", "deadlocks", NULL };
	if (!exactly(d, keys))
		bad("its members", out, len);
	if (!diff_is_version(json_string_value(json_object_get(d, "format_version"))) ||
	    !json_is_string(json_object_get(d, "kind")) ||
	    strcmp(json_string_value(json_object_get(d, "kind")), "diff"))
		bad("format_version or kind", out, len);
	if (!doc_ref(json_object_get(d, "old")) || !doc_ref(json_object_get(d, "new")))
		bad("old or new", out, len);
	if (!json_is_number(json_object_get(d, "seconds_between")) ||
	    !json_is_boolean(json_object_get(d, "same_process")))
		bad("seconds_between or same_process", out, len);
	if (!items(json_object_get(d, "threads_appeared"), thread_ref) ||
	    !items(json_object_get(d, "threads_gone"), thread_ref))
		bad("threads_appeared or threads_gone", out, len);
	if (!items(json_object_get(d, "same_wait"), same_wait))
		bad("same_wait", out, len);
	if (!items(json_object_get(d, "locks_held"), lock_held))
		bad("locks_held", out, len);
	if (!items(json_object_get(d, "deadlocks"), deadlock))
		bad("deadlocks", out, len);
	json_decref(d);
}

static void run(json_t *old, json_t *new, bool json)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	if (!f)
		abort();
	int status = agent_diff_docs(old, "old.json", new, "new.json", json, f, NULL);
	if (fclose(f) != 0)
		abort();
	if (status != EXIT_SNAPSHOT_OK && status != EXIT_USAGE)
		abort();	/* nothing else: out of memory is not expected here */
	if (json && status == EXIT_SNAPSHOT_OK)
		check_output(buf, len);
	free(buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *nul = memchr(data, 0, size);
	size_t olen = nul ? (size_t)(nul - data) : size;
	json_error_t je;
	/* as --diff reads a file: one document, no duplicate keys */
	json_t *old = json_loadb((const char *)data, olen, JSON_REJECT_DUPLICATES, &je);
	json_t *new = nul ? json_loadb((const char *)nul + 1, size - olen - 1,
				       JSON_REJECT_DUPLICATES, &je)
			  : json_incref(old);
	if (old && new) {
		run(old, new, true);
		run(old, new, false);
	}
	json_decref(old);
	json_decref(new);
	return 0;
}
