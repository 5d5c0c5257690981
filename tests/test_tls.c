/*
 * test_tls: --tls, --errno, --keys and stack bounds against fixtures that
 * plant known values: fx_tls (TLS of the executable, of a linked library
 * and of a dlopen'ed one that only odd workers touched; errno; keys with
 * a destructor, a hole and a second-level block; a nearly full stack),
 * its copy without local symbols (a static __thread variable only DWARF
 * knows), the static fx_threads, and fx_oldglibc (another glibc, served
 * by its own libthread_db).
 */
#include <criterion/criterion.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

static struct fixture fx;

static void teardown(void)
{
	fx_kill(&fx);
}

TestSuite(tls, .fini = teardown, .timeout = 300 * TEST_TIME_SCALE);

/* "thread TID I PTHREAD" lines of fx_tls / fx_oldglibc. */
struct worker {
	pid_t tid;
	int i;
	unsigned long pthread;
};

static size_t workers(const struct fixture *f, struct worker *w, size_t max)
{
	size_t n = 0;
	for (size_t k = 0; k < f->nlines && n < max; k++)
		if (sscanf(f->lines[k], "thread %d %d %lx", &w[n].tid, &w[n].i,
			   &w[n].pthread) == 3)
			n++;
	return n;
}

static json_t *tls_of(json_t *doc, pid_t tid, const char *name)
{
	json_t *t = thread_by_tid(doc, tid);
	cr_assert(t, "thread %d missing", tid);
	json_t *v = json_object_get(json_object_get(t, "tls"), name);
	cr_assert(json_is_object(v), "no tls %s in thread %d", name, tid);
	return v;
}

static void start_fx_tls(const char *name)
{
	const char *args[] = { "4", NULL };
	fx_start(&fx, name, args, 30);
}

/* Whether glibc put the dlopened plugin's TLS in the static TLS surplus
 * (fx_tls.c says when): then a thread that never touched it has it all
 * the same, holding its initial value. */
static bool plugin_tls_static(void)
{
	const char *l = fx_line(&fx, "plugin-tls ");
	cr_assert(l && (!strcmp(l, "plugin-tls static") || !strcmp(l, "plugin-tls dynamic")),
		  "the fixture did not find where its plugin's TLS is");
	return !strcmp(l, "plugin-tls static");
}

Test(tls, executable_library_and_dlopened_values)
{
	start_fx_tls("fx_tls");
	const char *extra[] = { "--tls", "fx_tls_int", "--tls", "fx_tls_long",
				"--tls", "fx_tls_str", "--tls", "fxlib_tls",
				"--tls", "fxplug_tls", "--tls", "fx_tls_hidden",
				"--tls", "fx_tls_edge", NULL };
	int status;
	json_t *doc = inspect_json(fx.pid, extra, &status);
	/* a thread that never touched the plugin is not an error */
	cr_assert_eq(status, 0, "exit %d", status);
	struct worker w[8];
	size_t n = workers(&fx, w, 8);
	cr_assert_eq(n, 4);
	bool plug_static = plugin_tls_static();
	for (size_t k = 0; k < n; k++) {
		int i = w[k].i;
		json_t *v = tls_of(doc, w[k].tid, "fx_tls_int");
		cr_assert_str_eq(jstr(v, "status"), "ok");
		cr_assert_str_eq(jstr(v, "type"), "int");	/* from DWARF */
		cr_assert_eq(json_integer_value(json_object_get(v, "value")), 1000 + i);
		cr_assert(jstr(v, "address"));

		v = tls_of(doc, w[k].tid, "fx_tls_long");
		char want[32];
		snprintf(want, sizeof want, "%ld", -(long)(i + 1) * 1000000000000L);
		cr_assert_str_eq(jstr(v, "type"), "long");
		cr_assert_str_eq(jstr(v, "value"), want, "64-bit: exact decimal");

		v = tls_of(doc, w[k].tid, "fx_tls_str");
		snprintf(want, sizeof want, "worker-%d", i);
		cr_assert_str_eq(jstr(v, "type"), "string");	/* char * in DWARF */
		cr_assert_str_eq(jstr(v, "value"), want);
		cr_assert(json_is_false(json_object_get(v, "truncated")));

		/* no NUL before unreadable memory: what was read, marked */
		v = tls_of(doc, w[k].tid, "fx_tls_edge");
		cr_assert_str_eq(jstr(v, "status"), "ok");
		cr_assert_str_eq(jstr(v, "value"), "edge!");
		cr_assert(json_is_true(json_object_get(v, "truncated")));

		v = tls_of(doc, w[k].tid, "fxlib_tls");
		cr_assert_eq(json_integer_value(json_object_get(v, "value")), 2000 + i);

		v = tls_of(doc, w[k].tid, "fx_tls_hidden");
		cr_assert_str_eq(jstr(v, "type"), "unsigned");
		cr_assert_eq(json_integer_value(json_object_get(v, "value")), 5000 + i);

		v = tls_of(doc, w[k].tid, "fxplug_tls");
		/* no DWARF in the plugin: its bits, never a guessed sign */
		cr_assert_str_eq(jstr(v, "type"), "hex32");
		if (i % 2) {
			cr_assert_str_eq(jstr(v, "status"), "ok");
			snprintf(want, sizeof want, "0x%x", 3000 + i);
			cr_assert_str_eq(jstr(v, "value"), want);
		} else if (plug_static) {
			cr_assert_str_eq(jstr(v, "status"), "ok",
					 "worker %d has the plugin in static TLS", i);
			cr_assert_str_eq(jstr(v, "value"), "0x7", "its initial value");
		} else {
			cr_assert_str_eq(jstr(v, "status"), "not_allocated",
					 "worker %d never touched the plugin", i);
			cr_assert(json_is_null(json_object_get(v, "value")));
		}
		/* every address is distinct per thread */
		cr_assert_neq(strcmp(jstr(tls_of(doc, w[k].tid, "fx_tls_int"), "address"),
				     jstr(tls_of(doc, fx.pid, "fx_tls_int"), "address")), 0);
	}
	json_t *m = tls_of(doc, fx.pid, "fx_tls_int");
	cr_assert_eq(json_integer_value(json_object_get(m, "value")), 42);
	cr_assert_str_eq(jstr(tls_of(doc, fx.pid, "fx_tls_str"), "status"), "ok");
	cr_assert(json_is_null(json_object_get(tls_of(doc, fx.pid, "fx_tls_str"),
					       "value")), "NULL char *");

	/* how each was found */
	json_t *vars = json_object_get(json_object_get(doc, "process"), "tls");
	cr_assert_eq(json_array_size(vars), 7);
	json_t *lib = json_array_get(vars, 3);
	cr_assert_str_eq(jstr(lib, "name"), "fxlib_tls");
	cr_assert(strstr(jstr(lib, "module"), "libfx_tlslib.so"));
	cr_assert_str_eq(jstr(json_array_get(vars, 0), "source"), "symtab+dwarf");
	cr_assert_str_eq(jstr(json_array_get(vars, 0), "c_type"), "int");
	json_decref(doc);
	cr_assert(!any_task_stopped(fx.pid));
}

Test(tls, explicit_types)
{
	start_fx_tls("fx_tls");
	const char *extra[] = { "--tls", "fx_tls_int:hex", "--tls", "fx_tls_buf:bytes:8",
				"--tls", "fx_tls_str:pointer", "--tls", "fxlib_tls:uint16",
				"--tls", "fx_tls_long:ulong", NULL };
	json_t *doc = inspect_json(fx.pid, extra, NULL);
	struct worker w[8];
	size_t n = workers(&fx, w, 8);
	for (size_t k = 0; k < n; k++) {
		int i = w[k].i;
		char want[64];
		json_t *v = tls_of(doc, w[k].tid, "fx_tls_int");
		snprintf(want, sizeof want, "0x%x", 1000 + i);
		cr_assert_str_eq(jstr(v, "type"), "hex32", "size from the symbol");
		cr_assert_str_eq(jstr(v, "value"), want);

		v = tls_of(doc, w[k].tid, "fx_tls_buf");
		snprintf(want, sizeof want, "776f726b65722d%02x", '0' + i);
		cr_assert_str_eq(jstr(v, "type"), "bytes:8");
		cr_assert_str_eq(jstr(v, "value"), want);

		/* fx_tls_str points at the thread's own fx_tls_buf */
		v = tls_of(doc, w[k].tid, "fx_tls_str");
		cr_assert_str_eq(jstr(v, "type"), "pointer");
		cr_assert_str_eq(jstr(v, "value"),
				 jstr(tls_of(doc, w[k].tid, "fx_tls_buf"), "address"));

		v = tls_of(doc, w[k].tid, "fxlib_tls");
		cr_assert_eq(json_integer_value(json_object_get(v, "value")), 2000 + i);

		v = tls_of(doc, w[k].tid, "fx_tls_long");
		snprintf(want, sizeof want, "%lu",
			 (unsigned long)(-(long)(i + 1) * 1000000000000L));
		cr_assert_str_eq(jstr(v, "value"), want);
	}
	json_decref(doc);
}

Test(tls, unknown_variable_is_a_warning)
{
	start_fx_tls("fx_tls");
	const char *extra[] = { "--tls", "no_such_tls_var", "--tls", "fx_tls_int", NULL };
	int status;
	json_t *doc = inspect_json(fx.pid, extra, &status);
	cr_assert_eq(status, 0);
	json_t *warn = json_object_get(json_object_get(doc, "capture"), "warnings");
	cr_assert_eq(json_array_size(warn), 1);
	cr_assert(strstr(json_string_value(json_array_get(warn, 0)), "no_such_tls_var"));
	json_t *v = tls_of(doc, fx.pid, "no_such_tls_var");
	cr_assert_str_eq(jstr(v, "status"), "not_found");
	cr_assert(json_is_null(json_object_get(v, "address")));
	/* the other one is unaffected */
	cr_assert_eq(json_integer_value(json_object_get(tls_of(doc, fx.pid, "fx_tls_int"),
							"value")), 42);
	json_decref(doc);
}

Test(tls, nothing_asked_nothing_read)
{
	start_fx_tls("fx_tls");
	json_t *doc = inspect_json(fx.pid, NULL, NULL);
	json_t *p = json_object_get(doc, "process");
	cr_assert(json_is_null(json_object_get(p, "tls")));
	cr_assert(json_is_null(json_object_get(p, "keys")));
	json_t *t = thread_by_tid(doc, fx.pid);
	cr_assert(json_is_null(json_object_get(t, "tls")));
	cr_assert(json_is_null(json_object_get(t, "errno")));
	cr_assert(json_is_null(json_object_get(t, "keys")));
	/* stacks come from the maps, read anyway */
	cr_assert(json_is_object(json_object_get(t, "stack_bounds")));
	json_decref(doc);
}

Test(tls, static_variable_only_in_dwarf)
{
	start_fx_tls("fx_tls_nolocals");
	const char *extra[] = { "--tls", "fx_tls_hidden", NULL };
	json_t *doc = inspect_json(fx.pid, extra, NULL);
	json_t *var = json_array_get(json_object_get(json_object_get(doc, "process"),
						     "tls"), 0);
#if defined(__aarch64__)
	/* GCC for aarch64 writes no location for a thread-local variable
	 * (docs/ARCH.md §5): not found, and the report says why */
	cr_assert(json_is_false(json_object_get(var, "found")));
	cr_assert(strstr(jstr(var, "error"), "without a location"), "%s", jstr(var, "error"));
	cr_assert(strstr(jstr(var, "error"), "fx_tls_nolocals"), "%s", jstr(var, "error"));
	json_decref(doc);
	return;
#endif
	cr_assert(json_is_true(json_object_get(var, "found")));
	cr_assert_str_eq(jstr(var, "source"), "dwarf",
			 "--discard-all left the symbol? %s", jstr(var, "source"));
	struct worker w[8];
	size_t n = workers(&fx, w, 8);
	cr_assert_eq(n, 4);
	for (size_t k = 0; k < n; k++) {
		json_t *v = tls_of(doc, w[k].tid, "fx_tls_hidden");
		cr_assert_eq(json_integer_value(json_object_get(v, "value")),
			     5000 + w[k].i);
	}
	json_decref(doc);
}

Test(tls, errno_per_thread)
{
	start_fx_tls("fx_tls");
	const char *extra[] = { "--errno", "--tls", "errno:int", NULL };
	json_t *doc = inspect_json(fx.pid, extra, NULL);
	struct worker w[8];
	size_t n = workers(&fx, w, 8);
	static const char *const names[] = { "EPERM", "ENOENT", "ESRCH", "EINTR" };
	for (size_t k = 0; k < n; k++) {
		json_t *t = thread_by_tid(doc, w[k].tid);
		json_t *e = json_object_get(t, "errno");
		cr_assert_str_eq(jstr(e, "status"), "ok");
		cr_assert_eq(json_integer_value(json_object_get(e, "value")), w[k].i + 1);
		cr_assert_str_eq(jstr(e, "name"), names[w[k].i]);
		/* the same through --tls: libc's errno is a TLS symbol */
		json_t *v = tls_of(doc, w[k].tid, "errno");
		cr_assert_str_eq(jstr(v, "type"), "int");
		cr_assert_eq(json_integer_value(json_object_get(v, "value")), w[k].i + 1);
		cr_assert_str_eq(jstr(v, "address"), jstr(e, "address"));
	}
	json_t *vars = json_object_get(json_object_get(doc, "process"), "tls");
	json_t *ev = json_array_get(vars, 1);
	cr_assert(json_is_true(json_object_get(ev, "builtin")));
	cr_assert(strstr(jstr(ev, "module"), "libc.so"));
	json_decref(doc);

	/* the text report names it */
	struct run r;
	const char *args[] = { "--errno", pidstr(fx.pid), NULL };
	run_tinspect(&r, args, 60);
	cr_assert_eq(r.status, 0);
	cr_assert(strstr(r.out, "errno: 2 (ENOENT: No such file or directory)"), "%s", r.out);
	run_free(&r);
}

/* Types only DWARF gives: a signed 16-bit integer, a double, a float and
 * a bool, decoded the same way in both reports. */
Test(tls, narrow_float_and_bool_from_dwarf)
{
	start_fx_tls("fx_tls");
	const char *extra[] = { "--tls", "fx_tls_short", "--tls", "fx_tls_ratio",
				"--tls", "fx_tls_float", "--tls", "fx_tls_flag", NULL };
	int status;
	json_t *doc = inspect_json(fx.pid, extra, &status);
	cr_assert_eq(status, 0, "exit %d", status);
	struct worker w[8];
	size_t n = workers(&fx, w, 8);
	cr_assert_eq(n, 4);
	for (size_t k = 0; k < n; k++) {
		int i = w[k].i;
		json_t *v = tls_of(doc, w[k].tid, "fx_tls_short");
		cr_assert_str_eq(jstr(v, "type"), "int16");
		cr_assert_eq(json_integer_value(json_object_get(v, "value")),
			     -100 * (i + 1), "sign-extended from 16 bits");
		v = tls_of(doc, w[k].tid, "fx_tls_ratio");
		cr_assert_str_eq(jstr(v, "type"), "double");
		cr_assert_float_eq(json_real_value(json_object_get(v, "value")),
				   i + 0.5, 1e-12);
		v = tls_of(doc, w[k].tid, "fx_tls_float");
		cr_assert_str_eq(jstr(v, "type"), "float");
		cr_assert_float_eq(json_real_value(json_object_get(v, "value")),
				   -(i + 0.25), 1e-6);
		v = tls_of(doc, w[k].tid, "fx_tls_flag");
		cr_assert_str_eq(jstr(v, "type"), "bool");
		cr_assert(json_is_boolean(json_object_get(v, "value")));
		cr_assert_eq(json_is_true(json_object_get(v, "value")), i % 2 == 1);
	}
	json_decref(doc);

	struct run r;
	const char *args[] = { "--tls", "fx_tls_short", "--tls", "fx_tls_float",
			       "--tls", "fx_tls_flag", pidstr(fx.pid), NULL };
	run_tinspect(&r, args, 60);
	cr_assert_eq(r.status, 0);
	cr_assert(strstr(r.out, "fx_tls_short = -400"), "%s", r.out);
	cr_assert(strstr(r.out, "fx_tls_float = -3.25"), "%s", r.out);
	cr_assert(strstr(r.out, "fx_tls_flag = true"), "%s", r.out);
	cr_assert(strstr(r.out, "fx_tls_flag = false"), "%s", r.out);
	run_free(&r);
}

Test(tls, pthread_keys)
{
	start_fx_tls("fx_tls");
	unsigned a, b, c, hole;
	const char *kl = fx_line(&fx, "keys ");
	cr_assert(kl && sscanf(kl, "keys %u %u %u %u", &a, &b, &c, &hole) == 4);
	cr_assert(c >= 32, "key C must need a second-level block");
	const char *extra[] = { "--keys", NULL };
	int status;
	json_t *doc = inspect_json(fx.pid, extra, &status);
	cr_assert_eq(status, 0);
	json_t *pk = json_object_get(json_object_get(doc, "process"), "keys");
	cr_assert_eq(json_integer_value(json_object_get(pk, "max")), 1024);
	json_t *in_use = json_object_get(pk, "in_use");
	cr_assert_eq(json_array_size(in_use), 3, "A, B, C; not the deleted ones");
	cr_assert_eq(json_integer_value(json_object_get(json_array_get(in_use, 0), "key")), a);
	cr_assert_eq(json_integer_value(json_object_get(json_array_get(in_use, 1), "key")), b);
	cr_assert_eq(json_integer_value(json_object_get(json_array_get(in_use, 2), "key")), c);
	json_t *d = json_object_get(json_array_get(in_use, 0), "destructor");
	cr_assert_str_eq(jstr(d, "symbol"), "fx_key_destructor");
	cr_assert(json_is_null(json_object_get(json_array_get(in_use, 1), "destructor")));

	/* key A values are &marks[i]: consecutive bytes */
	struct worker w[8];
	size_t n = workers(&fx, w, 8);
	unsigned long a0 = 0;
	for (size_t k = 0; k < n; k++) {
		json_t *keys = json_object_get(thread_by_tid(doc, w[k].tid), "keys");
		cr_assert_eq(json_array_size(keys), 3);
		unsigned long va = strtoul(jstr(json_array_get(keys, 0), "value"), NULL, 16);
		cr_assert_neq(va, 0);
		if (w[k].i == 0)
			a0 = va;
		cr_assert_str_eq(jstr(json_array_get(keys, 1), "value"), "0x0", "B set nowhere");
		char want[32];
		snprintf(want, sizeof want, "0x%x", w[k].i % 2 ? 0 : 0x1000 + w[k].i);
		cr_assert_str_eq(jstr(json_array_get(keys, 2), "value"), want);
	}
	cr_assert_neq(a0, 0);
	for (size_t k = 0; k < n; k++) {
		json_t *keys = json_object_get(thread_by_tid(doc, w[k].tid), "keys");
		unsigned long va = strtoul(jstr(json_array_get(keys, 0), "value"), NULL, 16);
		cr_assert_eq(va, a0 + (unsigned long)w[k].i);
	}
	/* the main thread set none */
	json_t *mk = json_object_get(thread_by_tid(doc, fx.pid), "keys");
	cr_assert_str_eq(jstr(json_array_get(mk, 0), "value"), "0x0");
	json_decref(doc);
}

/* Worker 0 aimed its second-level key block at a page that cannot be
 * read: its key C is unknown (null, with an error), never "0x0". */
Test(tls, unreadable_key_block_is_unknown)
{
	const char *args[] = { "4", "corrupt-keys", NULL };
	fx_start(&fx, "fx_tls", args, 30);
	const char *extra[] = { "--keys", NULL };
	int status;
	json_t *doc = inspect_json(fx.pid, extra, &status);
	cr_assert_eq(status, 1, "snapshot taken, one thread not fully read: exit %d",
		     status);
	struct worker w[8];
	size_t n = workers(&fx, w, 8);
	cr_assert_eq(n, 4);
	pid_t w0 = 0;
	for (size_t k = 0; k < n; k++) {
		json_t *th = thread_by_tid(doc, w[k].tid);
		json_t *keys = json_object_get(th, "keys");
		cr_assert_eq(json_array_size(keys), 3);
		cr_assert(jstr(json_array_get(keys, 0), "value"), "key A is in the first block");
		json_t *vc = json_object_get(json_array_get(keys, 2), "value");
		if (w[k].i != 0) {
			cr_assert(json_is_string(vc));
			continue;
		}
		w0 = w[k].tid;
		cr_assert(json_is_null(vc), "key C of worker 0 cannot be read");
		json_t *errs = json_object_get(th, "errors");
		bool said = false;
		for (size_t e = 0; e < json_array_size(errs); e++)
			said |= strstr(json_string_value(json_array_get(errs, e)),
				       "keys:") != NULL;
		cr_assert(said, "worker 0's errors say why");
	}
	cr_assert_neq(w0, 0);
	json_decref(doc);

	struct run r;
	const char *targs[] = { "--keys", pidstr(fx.pid), NULL };
	run_tinspect(&r, targs, 60);
	cr_assert_eq(r.status, 1);
	cr_assert(strstr(r.out, "=unknown"), "%s", r.out);
	run_free(&r);
}

Test(tls, stack_bounds_and_nearly_full_stack)
{
	start_fx_tls("fx_tls");
	int deep;
	unsigned long lo, hi;
	const char *dl = fx_line(&fx, "deep ");
	cr_assert(dl && sscanf(dl, "deep %d %lx %lx", &deep, &lo, &hi) == 3);
	json_t *doc = inspect_json(fx.pid, NULL, NULL);
	json_t *st = json_object_get(thread_by_tid(doc, deep), "stack_bounds");
	cr_assert_str_eq(jstr(st, "status"), "low");
	char want[32];
	snprintf(want, sizeof want, "0x%lx", lo);
	cr_assert_str_eq(jstr(st, "low"), want, "pthread_getattr_np's low end");
	cr_assert_str_eq(jstr(st, "limit"), want);
	snprintf(want, sizeof want, "0x%lx", hi);
	cr_assert_str_eq(jstr(st, "high"), want);
	cr_assert(json_is_object(json_object_get(st, "guard")));
	json_int_t avail = json_integer_value(json_object_get(st, "available_bytes"));
	cr_assert(avail > 0 && avail < 14 * 1024, "available %lld", (long long)avail);

	struct worker w[8];
	size_t n = workers(&fx, w, 8);
	for (size_t k = 0; k < n; k++) {
		st = json_object_get(thread_by_tid(doc, w[k].tid), "stack_bounds");
		cr_assert_str_eq(jstr(st, "status"), "ok");
		cr_assert(json_is_false(json_object_get(st, "main")));
		cr_assert(json_integer_value(json_object_get(st, "available_bytes")) >
			  100 * 1024);
	}
	st = json_object_get(thread_by_tid(doc, fx.pid), "stack_bounds");
	cr_assert(json_is_true(json_object_get(st, "main")));
	cr_assert_str_eq(jstr(st, "status"), "ok");
	json_decref(doc);

	struct run r;
	const char *args[] = { pidstr(fx.pid), NULL };
	run_tinspect(&r, args, 60);
	char *blk = strstr(r.out, "start: deep in ");
	cr_assert(blk);
	char *mark = strstr(blk, "[!! STACK NEARLY FULL]");
	char *next = strstr(blk, "\nThread ");
	cr_assert(mark && (!next || mark < next), "no mark on the deep thread");
	cr_assert_eq(strstr(r.out, "[!! STACK NEARLY FULL]"), mark,
		     "only the deep thread is marked");
	run_free(&r);
}

Test(tls, text_report)
{
	start_fx_tls("fx_tls");
	struct run r;
	const char *args[] = { "--tls", "fx_tls_int", "--tls", "fxplug_tls", "--keys",
			       pidstr(fx.pid), NULL };
	run_tinspect(&r, args, 60);
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert(strstr(r.out, "tls: fx_tls_int = 1002 (int) at 0x"), "%s", r.out);
	if (plugin_tls_static())
		cr_assert(strstr(r.out, "tls: fxplug_tls = 0x7 (hex32)"), "%s", r.out);
	else
		cr_assert(strstr(r.out, "tls: fxplug_tls = not allocated"), "%s", r.out);
	cr_assert(strstr(r.out, "tls: fxplug_tls = 0xbb9 (hex32)"));
	cr_assert(strstr(r.out, "destructor fx_key_destructor in "));
	cr_assert(strstr(r.out, "pthread keys in use: 3 of 1024"));
	run_free(&r);
}

Test(tls, static_binary)
{
	const char *args[] = { "alpha:61", "beta:62", NULL };
	fx_start(&fx, "fx_threads_static", args, 30);
	const char *extra[] = { "--tls", "fx_thread_tid", "--errno", "--keys", NULL };
	int status;
	json_t *doc = inspect_json(fx.pid, extra, &status);
	cr_assert_eq(status, 0);
	size_t found = 0;
	for (size_t i = 0; i < fx.nlines; i++) {
		int tid;
		if (sscanf(fx.lines[i], "thread %d", &tid) != 1)
			continue;
		json_t *v = tls_of(doc, tid, "fx_thread_tid");
		char want[16];
		snprintf(want, sizeof want, "%d", tid);
		cr_assert_str_eq(jstr(v, "value"), want);
		json_t *e = json_object_get(thread_by_tid(doc, tid), "errno");
		cr_assert_str_eq(jstr(e, "status"), "ok");
		found++;
	}
	cr_assert_eq(found, 2);
	json_t *pk = json_object_get(json_object_get(doc, "process"), "keys");
	cr_assert(json_is_object(pk), "keys of a static binary");
	json_decref(doc);
}

/* ---- a glibc that is not the system's ------------------------------------------ */

static bool have_old_glibc(void)
{
	const char *o = getenv("OLD_GLIBC");
	return o && *o;
}

Test(tls, other_glibc_served_by_its_own_libthread_db)
{
	if (!have_old_glibc())
		cr_skip_test("no Debian 11 glibc unpacked (tools/setup.sh deps fetches it)");
	fx_start(&fx, "fx_oldglibc", NULL, 30);
	const char *extra[] = { "--target-thread-db", "--tls", "fx_old_tls", "--errno",
				"--keys", NULL };
	int status;
	json_t *doc = inspect_json(fx.pid, extra, &status);
	cr_assert_eq(status, 0);
	json_t *p = json_object_get(doc, "process");
	cr_assert_str_eq(jstr(p, "glibc_version"), "2.31");
	json_t *tdb = json_object_get(p, "thread_db");
	cr_assert_str_eq(jstr(tdb, "status"), "ok");
	const char *lib = jstr(tdb, "library");
	/* named as the target sees it (its root is ours here) */
	cr_assert(lib && !strncmp(lib, getenv("OLD_GLIBC"), strlen(getenv("OLD_GLIBC"))),
		  "library %s", lib);
	cr_assert_str_eq(jstr(tdb, "library_origin"), "target");
	json_t *warn = json_object_get(json_object_get(doc, "capture"), "warnings");
	cr_assert(strstr(json_string_value(json_array_get(warn, 0)), "target's own"));
	struct worker w[4];
	size_t n = workers(&fx, w, 4);
	cr_assert_eq(n, 3);
	for (size_t k = 0; k < n; k++) {
		json_t *t = thread_by_tid(doc, w[k].tid);
		char want[32];
		snprintf(want, sizeof want, "0x%lx", w[k].pthread);
		cr_assert_str_eq(jstr(json_object_get(t, "pthread"), "id"), want);
		cr_assert_eq(json_integer_value(json_object_get(
				     tls_of(doc, w[k].tid, "fx_old_tls"), "value")),
			     100 + w[k].i);
		cr_assert_eq(json_integer_value(json_object_get(
				     json_object_get(t, "errno"), "value")), w[k].i + 1);
		snprintf(want, sizeof want, "0x%x", 0x2000 + w[k].i);
		cr_assert_str_eq(jstr(json_array_get(json_object_get(t, "keys"), 0),
				      "value"), want);
	}
	json_decref(doc);
}

Test(tls, other_glibc_without_its_libthread_db_degrades)
{
	if (!have_old_glibc())
		cr_skip_test("no Debian 11 glibc unpacked (tools/setup.sh deps fetches it)");
	fx_start(&fx, "fx_oldglibc", NULL, 30);
	/* the default: the target's own libthread_db is not loaded */
	const char *extra[] = { "--tls", "fx_old_tls", NULL };
	int status;
	json_t *doc = inspect_json(fx.pid, extra, &status);
	cr_assert_eq(status, 0);
	json_t *tdb = json_object_get(json_object_get(doc, "process"), "thread_db");
	cr_assert_str_eq(jstr(tdb, "status"), "version_mismatch");
	cr_assert(json_is_null(json_object_get(tdb, "library")));
	json_t *warn = json_object_get(json_object_get(doc, "capture"), "warnings");
	const char *w0 = json_string_value(json_array_get(warn, 0));
	cr_assert(strstr(w0, "/proc only") && strstr(w0, "--target-thread-db") &&
		  strstr(w0, "TINSPECT_THREAD_DB_SAFE_PATH"), "warning: %s", w0);
	cr_assert(json_is_null(json_object_get(tdb, "library_origin")));
	/* threads still listed, from /proc */
	cr_assert_eq(json_array_size(json_object_get(doc, "threads")), 4);
	cr_assert_str_eq(jstr(tls_of(doc, fx.pid, "fx_old_tls"), "status"), "unavailable");
	json_decref(doc);
}

/* --no-target-thread-db was the way to forbid what is now the default: a
 * script that still passes it is told, not silently given another
 * meaning. */
Test(tls, removed_no_target_thread_db_is_a_usage_error)
{
	fx_start(&fx, "fx_tls", NULL, 30);
	char pid[16];
	snprintf(pid, sizeof pid, "%d", (int)fx.pid);
	const char *args[] = { "--no-target-thread-db", pid, NULL };
	struct run r;
	run_tinspect(&r, args, 30);
	cr_assert_eq(r.status, 2);
	cr_assert(r.err && strstr(r.err, "--target-thread-db"), "stderr: %s",
		  r.err ? r.err : "");
	cr_assert(!any_task_stopped(fx.pid));
	run_free(&r);
}

/* Peak RSS (KiB) of tinspect --json [extra] PID. */
static long peak_rss(const char *const *extra)
{
	const char *args[8];
	size_t n = 0;
	args[n++] = "--json";
	for (; extra && *extra && n < 6; extra++)
		args[n++] = *extra;
	args[n++] = pidstr(fx.pid);
	args[n] = NULL;
	struct run r;
	run_tinspect(&r, args, 240);
	cr_assert(!r.timed_out && (r.status == 0 || r.status == 1),
		  "exit %d; stderr: %s", r.status, r.err ? r.err : "");
	long k = r.maxrss_kib;
	run_free(&r);
	return k;
}

/* --keys and --errno read a few words per thread (its key block, a DTV
 * slot, errno): what they cost in memory must be about that, not a page
 * of target memory per thread and per read (at 10 000 threads that was
 * 121 MiB against 58 without them). */
Test(tls, keys_and_errno_keep_words_not_pages)
{
	const char *san = getenv("TINSPECT_SANITIZE");
	if (san && *san && strcmp(san, "none") != 0)
		cr_skip_test("RSS is measured in the unsanitized build (this one: %s)", san);
	const char *wrap = getenv("TINSPECT_WRAPPER");
	if (wrap && *wrap)
		cr_skip_test("RSS is not measured under %s", wrap);
	const char *args[] = { "--idle", "3000", NULL };
	fx_start(&fx, "fx_threads", args, 120);
	long plain = peak_rss(NULL);
	const char *ke[] = { "--keys", "--errno", NULL };
	long both = peak_rss(ke);
	cr_log_info("3000 threads: peak RSS %ld KiB, with --keys --errno %ld KiB", plain, both);
	/* a page a thread would be 11.7 MiB more */
	cr_assert_lt(both - plain, 4 * 1024, "--keys --errno cost %ld KiB more", both - plain);
}
