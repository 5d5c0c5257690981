/*
 * test_stacks: backtraces of real processes with known call chains, built
 * with frame pointers, with CFI only (-O2 -fomit-frame-pointer), stripped
 * to .dynsym, in C++, through a plugin that is unloaded and loaded again,
 * from a binary replaced on disk, and deeper than the stack copy.
 */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dbsession.h"
#include "harness.h"

static struct fixture fx;
static char tmpdir[64];

static void teardown(void)
{
	fx_kill(&fx);
	if (tmpdir[0]) {
		char cmd[128];
		snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
		if (system(cmd) != 0)
			cr_log_warn("could not remove %s", tmpdir);
		tmpdir[0] = '\0';
	}
}

TestSuite(stacks, .fini = teardown, .timeout = 300 * TEST_TIME_SCALE);

static int fx_int(const char *prefix, int field)
{
	const char *l = fx_line(&fx, prefix);
	cr_assert(l, "fixture did not report %s", prefix);
	char *end;
	const char *p = l + strlen(prefix);
	long v = 0;
	for (int i = 0; i <= field; i++) {
		v = strtol(p, &end, 10);
		p = end;
	}
	return (int)v;
}

/* The frames of one thread that are not inlined, in order. */
static size_t physical(json_t *thread, json_t **out, size_t max)
{
	json_t *frames = json_object_get(json_object_get(thread, "stack"), "frames");
	size_t n = 0, i;
	json_t *f;
	json_array_foreach(frames, i, f) {
		if (json_is_true(json_object_get(f, "inlined")) || n == max)
			continue;
		out[n++] = f;
	}
	return n;
}

static long index_of(json_t **f, size_t n, const char *sym)
{
	for (size_t i = 0; i < n; i++) {
		const char *s = jstr(f[i], "symbol");
		if (s && !strcmp(s, sym))
			return (long)i;
	}
	return -1;
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t a = s ? strlen(s) : 0, b = strlen(suffix);
	return s && a >= b && !strcmp(s + a - b, suffix);
}

/* The outermost frame of a thread glibc started: on x86_64 clone3's
 * child side, a local label of __clone3; on aarch64 (Debian 12's glibc
 * 2.36) the local function thread_start of clone.S, as the emulated
 * machine showed. */
static bool thread_entry(json_t *frame)
{
	const char *s = jstr(frame, "symbol");
#if defined(__aarch64__)
	if (s && !strcmp(s, "thread_start"))
		return true;
#endif
	return ends_with(s, "clone3");
}

static void check_chain(const char *name, bool debuginfo)
{
	fx_start(&fx, name, NULL, 30);
	int tid = fx_int("chain ", 0);
	int status;
	json_t *doc = inspect_json(fx.pid, NULL, &status);
	cr_assert_eq(status, 0);
	json_t *t = thread_by_tid(doc, tid);
	json_t *stack = json_object_get(t, "stack");
	cr_assert_str_eq(jstr(stack, "end"), "complete");
	json_t *f[64];
	size_t n = physical(t, f, 64);
	long leaf = index_of(f, n, "fx_chain_leaf");
	cr_assert(leaf >= 1, "no fx_chain_leaf frame (%s)", name);
	cr_assert_str_eq(jstr(f[leaf + 1], "symbol"), "fx_chain_mid");
	cr_assert_str_eq(jstr(f[leaf + 2], "symbol"), "fx_chain_top");
	/* the frames above it are libc's condition wait */
	cr_assert(index_of(f, (size_t)leaf, "pthread_cond_wait") >= 0);
	/* and it ends where every thread starts */
	cr_assert(index_of(f, n, "start_thread") > leaf + 2);
	cr_assert(thread_entry(f[n - 1]), "%s", jstr(f[n - 1], "symbol"));
	char suffix[64];
	snprintf(suffix, sizeof suffix, "/%s", name);
	for (long i = leaf; i <= leaf + 2; i++) {
		cr_assert(ends_with(jstr(f[i], "module"), suffix), "%s",
			  jstr(f[i], "module"));
		cr_assert(jstr(f[i], "build_id") && strlen(jstr(f[i], "build_id")) == 40);
		cr_assert(json_integer_value(json_object_get(f[i], "offset")) > 0);
	}
	if (debuginfo) {
		static const char *const fn[] = { "fx_chain_leaf", "fx_chain_mid",
						  "fx_chain_top" };
		for (int i = 0; i < 3; i++) {
			char key[64];
			snprintf(key, sizeof key, "line %s ", fn[i]);
			cr_assert(ends_with(jstr(f[leaf + i], "file"), "fx_stack.c"));
			cr_assert_eq(json_integer_value(json_object_get(f[leaf + i], "line")),
				     fx_int(key, 0), "%s", fn[i]);
		}
	} else {
		cr_assert(json_is_null(json_object_get(f[leaf], "file")));
	}
	json_decref(doc);
	cr_assert(!any_task_stopped(fx.pid));
}

Test(stacks, known_chain_with_frame_pointers) { check_chain("fx_stack", true); }
Test(stacks, known_chain_cfi_only) { check_chain("fx_stack_o2", true); }
Test(stacks, known_chain_non_pie) { check_chain("fx_stack_nopie", true); }
Test(stacks, known_chain_stripped_binary) { check_chain("fx_stack_stripped", false); }
/* no .eh_frame, no .debug_frame for the fixture's code: frame pointers */
/* aarch64 code built with -mbranch-protection=pac-ret: every saved return
 * address carries a pointer authentication code in its top bits, which the
 * unwinder must strip (docs/ARCH.md). */
Test(stacks, known_chain_signed_return_addresses)
{
#if defined(__aarch64__)
	if (!(getauxval(AT_HWCAP) & HWCAP_PACA))
		cr_skip_test("this CPU has no pointer authentication");
	check_chain("fx_stack_pac", true);
	const char *l = fx_line(&fx, "saved_lr ");
	cr_assert(l, "fx_stack_pac did not report its saved return address");
	unsigned long lr = strtoul(l + 9, NULL, 16);
	cr_assert(lr & 0x007f000000000000ul, "%#lx is not signed: the test shows nothing", lr);
#else
	cr_skip_test("pointer authentication is aarch64's");
#endif
}

Test(stacks, known_chain_frame_pointer_fallback) { check_chain("fx_stack_nocfi", false); }

/* A thread blocked in a signal handler: the stack goes through the
 * kernel's signal frame (glibc's __restore_rt on x86_64, the vDSO's
 * __kernel_rt_sigreturn on aarch64) back into syscall(), a leaf whose own
 * caller was only in the saved registers, and on to start_thread. */
static void check_signal_frame(const char *name, const char *who, bool whole)
{
	fx_start(&fx, name, NULL, 30);
	int tid = fx_int(who, 0);
	int status;
	json_t *doc = inspect_json(fx.pid, NULL, &status);
	cr_assert_eq(status, 0);
	json_t *t = thread_by_tid(doc, tid);
	json_t *stack = json_object_get(t, "stack");
	json_t *f[64];
	size_t n = physical(t, f, 64);
	char all[2048] = "";
	for (size_t i = 0; i < n; i++) {
		const char *s = jstr(f[i], "symbol");
		size_t l = strlen(all);
		snprintf(all + l, sizeof all - l, " %s", s ? s : "?");
	}
	const char *end = jstr(stack, "end");
	cr_assert(!strcmp(end, "complete") || (!whole && !strcmp(end, "truncated")),
		  "%s: %s:%s", name, end, all);
	long h = index_of(f, n, "fx_sig_handler");
	cr_assert(h >= 1 && index_of(f, (size_t)h, "fx_sig_wait") >= 0,
		  "%s: no fx_sig_wait under fx_sig_handler:%s", name, all);
	const char *tramp = jstr(f[h + 1], "symbol");
	cr_assert(tramp && (!strcmp(tramp, "__restore_rt") ||
			    !strcmp(tramp, "__kernel_rt_sigreturn")),
		  "%s: the frame after the handler is not the trampoline:%s", name, all);
	cr_assert_str_eq(jstr(f[h + 2], "symbol"), "syscall", "%s:%s", name, all);
	if (whole || !strcmp(end, "complete")) {
		cr_assert_str_eq(jstr(f[h + 3], "symbol"), "fx_sig_outer", "%s:%s", name, all);
		cr_assert(index_of(f, n, "start_thread") > h + 3, "%s:%s", name, all);
		cr_assert(thread_entry(f[n - 1]), "%s:%s", name, all);
	}
	json_decref(doc);
	cr_assert(!any_task_stopped(fx.pid));
}

Test(stacks, through_a_signal_frame) { check_signal_frame("fx_stack", "signal ", true); }
Test(stacks, through_a_signal_frame_cfi_only)
{
	check_signal_frame("fx_stack_o2", "signal ", true);
}

/* The handler on an alternate signal stack above the thread's own (Go's
 * gsignal stack): across the signal frame the stack pointer moves down,
 * and that is no garbage (it was "bad_sp", an error and exit status 1).
 * The freeze copies the stack from sp up, the alternate one here, so the
 * interrupted frames past the first may be "truncated", said as such. */
Test(stacks, through_a_signal_frame_from_an_alternate_stack)
{
	check_signal_frame("fx_stack", "altsignal ", false);
	cr_assert(fx_line(&fx, "altsignal ") && strstr(fx_line(&fx, "altsignal "), " above"),
		  "the alternate stack is not above the thread's: nothing is tested");
}

Test(stacks, garbage_frame_chain_stops_cleanly)
{
	fx_start(&fx, "fx_badstack", NULL, 30);
	int tid = fx_int("bad ", 0);
	int status;
	json_t *doc = inspect_json(fx.pid, NULL, &status);
	cr_assert_eq(status, 1, "an unwind that fails in native code is a thread error");
	json_t *t = thread_by_tid(doc, tid);
	json_t *stack = json_object_get(t, "stack");
	const char *end = jstr(stack, "end");
	cr_assert(!strcmp(end, "error") || !strcmp(end, "bad_sp"), "end %s", end);
	json_t *f[64];
	size_t n = physical(t, f, 64);
	cr_assert(n >= 1 && n <= 2, "%zu frames out of a looping chain", n);
	cr_assert_str_eq(jstr(f[0], "symbol"), "fx_garbage_wait");
	/* the other thread is not affected */
	json_t *m = thread_by_tid(doc, fx.pid);
	cr_assert_str_eq(jstr(json_object_get(m, "stack"), "end"), "complete");
	json_decref(doc);
}

Test(stacks, deep_recursion_is_truncated_not_wrong)
{
	fx_start(&fx, "fx_stack", NULL, 30);
	int tid = fx_int("deep ", 0), depth = fx_int("deep ", 1);
	json_t *doc = inspect_json(fx.pid, NULL, NULL);
	json_t *t = thread_by_tid(doc, tid);
	json_t *stack = json_object_get(t, "stack");
	cr_assert_str_eq(jstr(stack, "end"), "truncated");
	cr_assert(json_is_true(json_object_get(stack, "truncated")));
	cr_assert_eq(json_integer_value(json_object_get(stack, "copied_bytes")), 65536);
	json_t *f[1100];
	size_t n = physical(t, f, 1100);
	long bottom = index_of(f, n, "fx_bottom");
	cr_assert(bottom > 0);
	/* every frame shown above the cut is right */
	for (size_t i = (size_t)bottom + 1; i < n; i++)
		cr_assert_str_eq(jstr(f[i], "symbol"), "fx_recurse", "frame %zu", i);
	cr_assert((long)n - bottom - 1 < depth);
	json_decref(doc);

	/* a copy big enough makes it complete, every level accounted for */
	const char *big[] = { "--stack-bytes", "4194304", "--max-frames", "1024", NULL };
	doc = inspect_json(fx.pid, big, NULL);
	t = thread_by_tid(doc, tid);
	cr_assert_str_eq(jstr(json_object_get(t, "stack"), "end"), "complete");
	n = physical(t, f, 1100);
	size_t levels = 0;
	for (size_t i = 0; i < n; i++)
		levels += jstr(f[i], "symbol") && !strcmp(jstr(f[i], "symbol"), "fx_recurse");
	cr_assert_eq(levels, (size_t)depth + 1);
	json_decref(doc);

	/* and --max-frames cuts it where asked */
	const char *few[] = { "--max-frames", "12", NULL };
	doc = inspect_json(fx.pid, few, NULL);
	t = thread_by_tid(doc, tid);
	cr_assert_str_eq(jstr(json_object_get(t, "stack"), "end"), "max_frames");
	cr_assert_eq(physical(t, f, 1100), 12);
	json_decref(doc);
}

Test(stacks, cxx_names_are_demangled)
{
	fx_start(&fx, "fx_cxx", NULL, 30);
	int tid = fx_int("pump ", 0);
	json_t *doc = inspect_json(fx.pid, NULL, NULL);
	json_t *t = thread_by_tid(doc, tid);
	json_t *f[64];
	size_t n = physical(t, f, 64);
	long i = index_of(f, n, "tinspect_fx::engine::Pump<int>::run(int)");
	cr_assert(i >= 0, "no demangled Pump<int>::run frame");
	cr_assert_str_eq(jstr(f[i], "mangled"), "_ZN11tinspect_fx6engine4PumpIiE3runEi");
	cr_assert_str_eq(jstr(json_object_get(t, "stack"), "end"), "complete");
	json_decref(doc);

	struct run r;
	const char *args[] = { pidstr(fx.pid), NULL };
	run_tinspect(&r, args, 60);
	cr_assert_eq(r.status, 0);
	cr_assert(strstr(r.out, "in tinspect_fx::engine::Pump<int>::run(int)+0x"));
	run_free(&r);
}

Test(stacks, text_reads_like_a_backtrace)
{
	fx_start(&fx, "fx_stack", NULL, 30);
	struct run r;
	const char *args[] = { pidstr(fx.pid), NULL };
	run_tinspect(&r, args, 60);
	cr_assert_eq(r.status, 0);
	const char *chain = strstr(r.out, "\"chain\"");
	cr_assert(chain);
	const char *leaf = strstr(chain, " in fx_chain_leaf+0x");
	const char *mid = strstr(chain, " in fx_chain_mid+0x");
	const char *top = strstr(chain, " in fx_chain_top+0x");
	cr_assert(leaf && mid && top && leaf < mid && mid < top);
	cr_assert(strstr(leaf, "fx_stack.c:"));
	cr_assert(strstr(r.out, "(stack truncated: "), "no truncation marker");
	run_free(&r);

	const char *nargs[] = { "--no-stacks", pidstr(fx.pid), NULL };
	run_tinspect(&r, nargs, 60);
	cr_assert_eq(r.status, 0);
	cr_assert_null(strstr(r.out, "#0 "));
	run_free(&r);
	const char *nj[] = { "--no-stacks", NULL };
	json_t *doc = inspect_json(fx.pid, nj, NULL);
	cr_assert(json_is_false(json_object_get(json_object_get(doc, "capture"), "stacks")));
	cr_assert(json_is_null(json_object_get(json_array_get(json_object_get(doc, "threads"), 0),
					       "stack")));
	json_decref(doc);
}

Test(stacks, binary_replaced_on_disk)
{
	snprintf(tmpdir, sizeof tmpdir, "/tmp/tinspect-stacks-XXXXXX");
	cr_assert(mkdtemp(tmpdir));
	char exe[128], other[128], cmd[8192 + 300], src[4096];
	snprintf(exe, sizeof exe, "%s/fx_stack", tmpdir);
	snprintf(other, sizeof other, "%s/other", tmpdir);
	/* fixture_path's buffer is static: one call per statement (two in
	 * one argument list made both copies the same program, which one
	 * depending on the compiler's order of evaluation) */
	snprintf(src, sizeof src, "%s", fixture_path("fx_stack"));
	snprintf(cmd, sizeof cmd, "cp '%s' '%s' && cp '%s' '%s' && ! cmp -s '%s' '%s'", src,
		 exe, fixture_path("fx_threads"), other, exe, other);
	cr_assert_eq(system(cmd), 0, "%s", cmd);
	fx_start_path(&fx, exe, NULL, 30);
	/* another program takes its place on disk */
	cr_assert_eq(rename(other, exe), 0);
	int tid = fx_int("chain ", 0);
	json_t *doc = inspect_json(fx.pid, NULL, NULL);
	json_t *t = thread_by_tid(doc, tid);
	json_t *f[64];
	size_t n = physical(t, f, 64);
	long leaf = index_of(f, n, "fx_chain_leaf");
	cr_assert(leaf >= 0, "the replaced binary's own symbols were not used");
	cr_assert_str_eq(jstr(f[leaf + 1], "symbol"), "fx_chain_mid");
	cr_assert(ends_with(jstr(f[leaf], "file"), "fx_stack.c"));
	json_decref(doc);
}

/* The module list changes under a long-lived session: the plugin is
 * unloaded, then loaded again at another address.  Every update must name
 * the plugin's frames right: the cache follows the module generation. */
Test(stacks, plugin_unload_and_reload_in_one_session)
{
	char plugin[4096];
	snprintf(plugin, sizeof plugin, "%s", fixture_path("libfx_plugin.so"));
	const char *args[] = { plugin, NULL };
	fx_start(&fx, "fx_dlopen", args, 30);
	unsigned long base1, fn1;
	int tid1;
	cr_assert(sscanf(fx_line(&fx, "loaded "), "loaded %lx %lx %d", &base1, &fn1, &tid1) == 3);

	struct dbs_options o = { .stop_timeout_ns = 5000000000ull };
	struct dbs_session *s;
	cr_assert_eq(dbs_session_init(fx.pid, &o, &s), 0);

	struct dbs_snapshot *snap;
	cr_assert_eq(dbs_session_update(s, &snap), 0);
	uint64_t gen1 = snap->module_generation;
	bool found = false;
	for (size_t i = 0; i < snap->nthreads; i++) {
		const struct dbs_thread *th = &snap->threads[i];
		if (th->tid != tid1)
			continue;
		for (size_t k = 0; k < th->stack.nframes; k++) {
			const struct dbs_frame *fr = &th->stack.frames[k];
			if (fr->symbol && !strcmp(fr->symbol, "fx_plugin_wait")) {
				found = true;
				cr_assert(ends_with(fr->module, "/libfx_plugin.so"));
				cr_assert(fr->pc > fn1 && fr->pc - fn1 < 4096);
			}
		}
	}
	cr_assert(found, "no frame in the plugin");
	dbs_snapshot_free(snap);

	fx_send(&fx, "unload");
	char *l = fx_read_line(&fx, 30);
	cr_assert(l && !strcmp(l, "unloaded"));
	free(l);
	cr_assert_eq(dbs_session_update(s, &snap), 0);
	cr_assert_neq(snap->module_generation, gen1, "dlclose not noticed");
	uint64_t gen2 = snap->module_generation;
	for (size_t i = 0; i < snap->nthreads; i++) {
		const struct dbs_thread *th = &snap->threads[i];
		for (size_t k = 0; k < th->stack.nframes; k++)
			cr_assert(!th->stack.frames[k].symbol ||
				  strcmp(th->stack.frames[k].symbol, "fx_plugin_wait"));
	}
	dbs_snapshot_free(snap);

	fx_send(&fx, "load");
	l = fx_read_line(&fx, 30);
	unsigned long base2, fn2;
	int tid2;
	cr_assert(l && sscanf(l, "loaded %lx %lx %d", &base2, &fn2, &tid2) == 3);
	free(l);
	cr_assert_neq(base2, base1, "the plugin came back at the same address");
	cr_assert_eq(dbs_session_update(s, &snap), 0);
	cr_assert_neq(snap->module_generation, gen2, "dlopen not noticed");
	found = false;
	for (size_t i = 0; i < snap->nthreads; i++) {
		const struct dbs_thread *th = &snap->threads[i];
		if (th->tid != tid2)
			continue;
		for (size_t k = 0; k < th->stack.nframes; k++) {
			const struct dbs_frame *fr = &th->stack.frames[k];
			if (fr->pc > fn2 && fr->pc - fn2 < 4096) {
				cr_assert_str_eq(fr->symbol, "fx_plugin_wait");
				found = true;
			}
		}
	}
	cr_assert(found, "the reloaded plugin's frame is not named");
	dbs_snapshot_free(snap);
	dbs_session_destroy(s);
	cr_assert(!any_task_stopped(fx.pid));
}
