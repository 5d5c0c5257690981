/*
 * test_core: tinspect --core on real cores.  Every lock fixture
 * of the live lock suite is inspected live, then dumped by gcore and by the
 * kernel (SIGABRT, core_pattern pointed at this test's directory for the
 * dump, corepattern.c), and `tinspect --core` must find the same deadlock
 * cycles, stalls, orphaned locks and blocked threads with the same TIDs.
 * Then what a core makes hard: a static binary, TLS and keys, 3000
 * threads, a deleted executable, a library replaced since the crash, a
 * truncated core, compressed cores, corrupt cores.  Every document is
 * validated against the schema.
 */
#include <criterion/criterion.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "corepattern.h"
#include "harness.h"

extern char **environ;

static struct fixture fx;
static char tmpdir[256];

static void setup(void)
{
	snprintf(tmpdir, sizeof tmpdir, "/tmp/tinspect-core.XXXXXX");
	cr_assert(mkdtemp(tmpdir), "mkdtemp: %s", strerror(errno));
	/* the fixtures inherit it: the kernel dumps them whole */
	struct rlimit rl = { RLIM_INFINITY, RLIM_INFINITY };
	if (setrlimit(RLIMIT_CORE, &rl))
		cr_log_warn("RLIMIT_CORE: %s", strerror(errno));
}

static void teardown(void)
{
	core_pattern_end();
	fx_kill(&fx);
	if (tmpdir[0])
		remove_tree(tmpdir);
}

TestSuite(core, .init = setup, .fini = teardown, .timeout = 900 * TEST_TIME_SCALE);

/* ---- making cores ----------------------------------------------------------- */

/* gcore of the running fixture into tmpdir/gcore.PID; the fixture runs on. */
static const char *make_gcore(void)
{
	if (!have_program("gcore"))
		cr_skip_test("no gcore (gdb is not installed)");
	static char path[400];
	char prefix[300], pid[16];
	snprintf(prefix, sizeof prefix, "%s/gcore", tmpdir);
	snprintf(pid, sizeof pid, "%d", (int)fx.pid);
	const char *argv[] = { "gcore", "-o", prefix, pid, NULL };
	int rc = run_quiet(argv);
	snprintf(path, sizeof path, "%s.%d", prefix, (int)fx.pid);
	struct stat st;
	cr_assert(rc == 0 && stat(path, &st) == 0, "gcore failed (%d)", rc);
	cr_assert(wait_not_stopped(fx.pid, 2000), "gcore left the fixture stopped");
	return path;
}

/* The kernel's core of the fixture, killed with SIGABRT; NULL (and a
 * printed reason) when not root. */
static const char *make_kernel_core(void)
{
	if (geteuid() != 0) {
		cr_log_warn("not root: no kernel core (core_pattern cannot be "
			    "pointed at the test's directory); gcore only");
		return NULL;
	}
	static char path[400];
	pid_t pid = fx.pid;
	core_pattern_begin(tmpdir);
	cr_assert(kill(pid, SIGABRT) == 0);
	int st = 0;
	pid_t r = 0;
	for (int i = 0; i < 6000 && r == 0; i++) {
		r = waitpid(pid, &st, WNOHANG);
		if (r == 0)
			usleep(10000);
	}
	core_pattern_end();
	cr_assert(core_pattern_restored(), "core_pattern not restored");
	cr_assert_eq(r, pid, "the fixture did not die");
	fx.pid = 0;	/* reaped */
	cr_assert(WIFSIGNALED(st) && WCOREDUMP(st), "no core dumped (status %#x)", st);
	snprintf(path, sizeof path, "%s/core.%d", tmpdir, (int)pid);
	struct stat sb;
	cr_assert(stat(path, &sb) == 0, "no %s", path);
	return path;
}

/* ---- running tinspect on a core ------------------------------------------------ */

/* tinspect --core CORE --json [extra...]: validated and parsed; NULL if
 * it printed nothing (then *ret_err holds its stderr, to be freed). */
static json_t *core_json(const char *core, const char *const *extra,
			 int *ret_status, char **ret_err)
{
	const char *args[40];
	size_t n = 0;
	args[n++] = "--json";
	args[n++] = "--core";
	args[n++] = core;
	for (; extra && *extra && n < 38; extra++)
		args[n++] = *extra;
	args[n] = NULL;
	struct run r;
	run_tinspect(&r, args, 300);
	cr_assert(!r.timed_out, "tinspect --core timed out");
	cr_assert(r.status >= 0, "tinspect --core died of signal %d; stderr: %s",
		  r.sig, r.err ? r.err : "");
	if (ret_status)
		*ret_status = r.status;
	json_t *doc = NULL;
	if (r.out_len) {
		cr_assert(schema_valid(r.out, r.out_len), "output does not validate");
		json_error_t je;
		doc = json_loadb(r.out, r.out_len, 0, &je);
		cr_assert(doc, "JSON does not parse: %s", je.text);
	}
	if (ret_err) {
		*ret_err = r.err ? strdup(r.err) : strdup("");
	}
	run_free(&r);
	return doc;
}

static json_t *core_ok(const char *core, const char *const *extra, int *ret_status)
{
	char *err = NULL;
	int status;
	json_t *doc = core_json(core, extra, &status, &err);
	cr_assert(doc, "no report from %s: exit %d: %s", core, status, err);
	free(err);
	const char *mode = json_string_value(
		json_object_get(json_object_get(doc, "capture"), "mode"));
	cr_assert(mode && !strcmp(mode, "core"), "capture.mode is not core");
	if (ret_status)
		*ret_status = status;
	return doc;
}

static char *dump(json_t *v)
{
	return json_dumps(v, JSON_SORT_KEYS | JSON_COMPACT | JSON_ENCODE_ANY);
}

static void same_key(json_t *live, json_t *core, const char *key)
{
	char *a = dump(json_object_get(live, key));
	char *b = dump(json_object_get(core, key));
	cr_assert_str_eq(b, a, "%s differ: core %s, live %s", key, b, a);
	free(a);
	free(b);
}

/* What the lock analysis found, thread by thread: the same in both. */
static void same_analysis(json_t *live, json_t *core)
{
	same_key(live, core, "deadlocks");
	same_key(live, core, "stalls");
	same_key(live, core, "orphaned_locks");
	json_t *lt = json_object_get(live, "threads");
	cr_assert_eq(json_array_size(json_object_get(core, "threads")),
		     json_array_size(lt), "not the same threads");
	size_t i;
	json_t *t;
	json_array_foreach(lt, i, t) {
		pid_t tid = (pid_t)json_integer_value(json_object_get(t, "tid"));
		json_t *c = thread_by_tid(core, tid);
		cr_assert(c, "thread %d is not in the core's report", (int)tid);
		json_t *lb = json_object_get(t, "blocked_on");
		json_t *cb = json_object_get(c, "blocked_on");
		cr_assert_eq(json_is_object(cb), json_is_object(lb),
			     "thread %d blocked in one report only", (int)tid);
		if (!json_is_object(lb))
			continue;
		static const char *const keys[] = { "kind", "object", "owner",
						    "in_graph" };
		for (size_t k = 0; k < sizeof keys / sizeof *keys; k++) {
			char *a = dump(json_object_get(lb, keys[k]));
			char *b = dump(json_object_get(cb, keys[k]));
			cr_assert_str_eq(b, a, "thread %d blocked_on.%s", (int)tid,
					 keys[k]);
			free(a);
			free(b);
		}
		cr_assert(json_is_object(json_object_get(c, "pthread")),
			  "thread %d has no pthread identity from the core", (int)tid);
	}
	/* a core has no /proc facts: null, never invented */
	json_array_foreach(json_object_get(core, "threads"), i, t) {
		cr_assert(json_is_null(json_object_get(t, "state")));
		cr_assert(json_is_null(json_object_get(t, "wchan")));
		cr_assert(json_is_null(json_object_get(t, "cpu")));
		cr_assert_str_eq(json_string_value(json_object_get(t, "proc_read")),
				 "none");
	}
}

static json_t *capture_signal(json_t *doc)
{
	return json_object_get(json_object_get(doc, "capture"), "signal");
}

/*
 * One lock fixture: live, then a gcore, then (as root) a kernel core, all
 * with the same verdict; --check's status too.
 */
static void lock_case(const char *name, const char *const *args)
{
	fx_start(&fx, name, args, 60);
	pid_t pid = fx.pid;
	int live_status, status;
	const char *check[] = { "--check", NULL };
	json_t *live = inspect_json(pid, check, &live_status);
	cr_assert(wait_not_stopped(pid, 2000));

	json_t *g = core_ok(make_gcore(), check, &status);
	same_analysis(live, g);
	cr_assert_eq(status, live_status, "--check on the gcore: %d, live %d",
		     status, live_status);
	/* gcore dumps a process that did not crash: no signal to name */
	cr_assert(json_is_null(capture_signal(g)));
	json_decref(g);

	const char *kc = make_kernel_core();
	if (kc) {
		json_t *k = core_ok(kc, check, &status);
		same_analysis(live, k);
		cr_assert_eq(status, live_status, "--check on the kernel core");
		json_t *sig = capture_signal(k);
		cr_assert(json_is_object(sig), "the kernel core's signal");
		cr_assert_eq(json_integer_value(json_object_get(sig, "signo")), SIGABRT);
		cr_assert_str_eq(json_string_value(json_object_get(sig, "name")),
				 "SIGABRT");
		cr_assert_eq(json_integer_value(json_object_get(sig, "sender_pid")),
			     getpid());
		/* the main thread is the only one named: the executable */
		json_t *m = thread_by_tid(k, pid);
		cr_assert(m && json_is_string(json_object_get(m, "name")));
		json_decref(k);
	}
	json_decref(live);
}

static size_t ndeadlocks(json_t *doc)
{
	return json_array_size(json_object_get(doc, "deadlocks"));
}

/* ---- every lock case of the live suite ------------------------------------------ */

Test(core, abba)			{ lock_case("fx_lock_abba", NULL); }
Test(core, three_cycle_heap)		{ lock_case("fx_lock_heap3", NULL); }
Test(core, self_relock)			{ lock_case("fx_lock_self", NULL); }
Test(core, rwlock_mutex_cycle)		{ lock_case("fx_lock_rwcycle", NULL); }
Test(core, recursive)			{ lock_case("fx_lock_recursive", NULL); }
Test(core, errorcheck)			{ lock_case("fx_lock_errorcheck", NULL); }
Test(core, pi_with_edeadlk_park)	{ lock_case("fx_lock_pi", NULL); }
Test(core, orphaned)			{ lock_case("fx_lock_orphan", NULL); }
Test(core, cond_stall)			{ lock_case("fx_lock_cond", NULL); }
Test(core, cxx_std_mutex)		{ lock_case("fx_lock_cxx", NULL); }

/* ---- what a core makes hard ------------------------------------------------------- */

Test(core, static_binary)
{
	const char *args[] = { "alpha:61", "beta:62", NULL };
	fx_start(&fx, "fx_threads_static", args, 60);
	json_t *live = inspect_json(fx.pid, NULL, NULL);
	json_t *g = core_ok(make_gcore(), NULL, NULL);
	same_analysis(live, g);
	same_key(json_object_get(live, "process"), json_object_get(g, "process"),
		 "thread_db");
	json_decref(live);
	json_decref(g);
}

/* The TLS, errno and key values of every thread of the core against the
 * live run's.  gcore writes a PROT_NONE page as a readable segment of
 * zeros (PF_R, checked with gdb 13.1), so from its core the string that
 * ends right before such a page (fx_tls_edge) reads as complete: that one
 * flag is only compared on the kernel's core, which leaves the page out. */
static void same_tls(json_t *live, json_t *core, bool gcore)
{
	same_key(json_object_get(live, "process"), json_object_get(core, "process"),
		 "keys");
	size_t i, nval = 0;
	json_t *t;
	json_array_foreach(json_object_get(live, "threads"), i, t) {
		pid_t tid = (pid_t)json_integer_value(json_object_get(t, "tid"));
		json_t *c = thread_by_tid(core, tid);
		cr_assert(c);
		json_t *lt = json_deep_copy(json_object_get(t, "tls"));
		json_t *ct = json_deep_copy(json_object_get(c, "tls"));
		if (gcore) {
			json_object_del(json_object_get(lt, "fx_tls_edge"), "truncated");
			json_object_del(json_object_get(ct, "fx_tls_edge"), "truncated");
		}
		char *a = dump(lt);
		char *b = dump(ct);
		cr_assert_str_eq(b, a, "thread %d: TLS", (int)tid);
		nval += json_object_size(lt);
		free(a);
		free(b);
		json_decref(lt);
		json_decref(ct);
		same_key(t, c, "keys");
		same_key(t, c, "errno");
	}
	cr_assert_gt(nval, 0, "no TLS value was compared");
}

Test(core, tls_and_keys_values)
{
	const char *args[] = { "4", NULL };
	fx_start(&fx, "fx_tls", args, 60);
	const char *extra[] = { "--tls", "fx_tls_int", "--tls", "fx_tls_long",
				"--tls", "fx_tls_str", "--tls", "fxlib_tls",
				"--tls", "fx_tls_edge", "--keys", "--errno", NULL };
	json_t *live = inspect_json(fx.pid, extra, NULL);
	cr_assert(wait_not_stopped(fx.pid, 2000));
	json_t *g = core_ok(make_gcore(), extra, NULL);
	same_tls(live, g, true);
	json_decref(g);
	const char *kc = make_kernel_core();
	if (kc) {
		json_t *k = core_ok(kc, extra, NULL);
		same_tls(live, k, false);
		json_decref(k);
	}
	json_decref(live);
}

Test(core, three_thousand_threads)
{
	const char *args[] = { "--idle", "3000", NULL };
	fx_start(&fx, "fx_lock_abba", args, 300);
	const char *check[] = { "--check", NULL };
	int status;
	json_t *live = inspect_json(fx.pid, check, NULL);
	cr_assert(wait_not_stopped(fx.pid, 5000));
	/* one core of 3000 threads: the kernel's if root, else gcore's */
	const char *path = geteuid() == 0 ? make_kernel_core() : make_gcore();
	json_t *c = core_ok(path, check, &status);
	cr_assert_eq(status, 10, "--check finds the cycle");
	cr_assert_eq(json_array_size(json_object_get(c, "threads")), 3003);
	cr_assert_eq(ndeadlocks(c), 1);
	same_key(live, c, "deadlocks");
	json_decref(live);
	json_decref(c);
}

static void copy_file(const char *from, const char *to, mode_t mode)
{
	char cmd[1200];
	snprintf(cmd, sizeof cmd, "cp '%s' '%s' && chmod %o '%s'", from, to,
		 (unsigned)mode, to);
	const char *argv[] = { "sh", "-c", cmd, NULL };
	cr_assert_eq(run_quiet(argv), 0, "%s", cmd);
}

static bool has_warning(json_t *doc, const char *a, const char *b)
{
	size_t i;
	json_t *w;
	json_array_foreach(json_object_get(json_object_get(doc, "capture"),
					   "warnings"), i, w) {
		const char *s = json_string_value(w);
		if (s && strstr(s, a) && (!b || strstr(s, b)))
			return true;
	}
	return false;
}

/* The symbol tinspect names the lock at addr by (locks[].symbol.symbol),
 * NULL if none. */
static const char *lock_symbol(json_t *doc, const char *addr)
{
	size_t i;
	json_t *l;
	json_array_foreach(json_object_get(doc, "locks"), i, l)
		if (!strcmp(json_string_value(json_object_get(l, "addr")), addr))
			return json_string_value(json_object_get(
				json_object_get(l, "symbol"), "symbol"));
	return NULL;
}

Test(core, deleted_executable_with_and_without_exe)
{
	char exe[400], keep[400];
	snprintf(exe, sizeof exe, "%s/fx_lock_abba", tmpdir);
	snprintf(keep, sizeof keep, "%s/kept_fx_lock_abba", tmpdir);
	copy_file(fixture_path("fx_lock_abba"), exe, 0755);
	copy_file(exe, keep, 0644);
	fx_start_path(&fx, exe, NULL, 60);
	const char *lock = fx_line(&fx, "lock ledger_lock ");
	cr_assert(lock);
	char addr[32];
	cr_assert(sscanf(lock, "lock ledger_lock %31s", addr) == 1);
	json_t *live = inspect_json(fx.pid, NULL, NULL);
	cr_assert(wait_not_stopped(fx.pid, 2000));
	const char *core = make_gcore();
	cr_assert(unlink(exe) == 0);

	json_t *bare = core_ok(core, NULL, NULL);
	cr_assert(has_warning(bare, "fx_lock_abba", "symbols are unknown"),
		  "no warning about the missing executable");
	cr_assert_null(lock_symbol(bare, addr), "a symbol from a missing file");
	/* libc is there: libthread_db and the cycle do not need the exe (its
	 * locks are then named by address only) */
	json_t *ld = json_array_get(json_object_get(live, "deadlocks"), 0);
	json_t *bd = json_array_get(json_object_get(bare, "deadlocks"), 0);
	cr_assert(ld && bd && json_array_size(json_object_get(bare, "deadlocks")) == 1);
	same_key(ld, bd, "threads");
	for (size_t i = 0; i < 2; i++)
		same_key(json_array_get(json_object_get(ld, "locks"), i),
			 json_array_get(json_object_get(bd, "locks"), i), "addr");
	json_decref(bare);

	const char *extra[] = { "--exe", keep, NULL };
	json_t *with = core_ok(core, extra, NULL);
	cr_assert(!has_warning(with, "fx_lock_abba", NULL), "--exe not used");
	cr_assert_str_eq(lock_symbol(with, addr), "ledger_lock");
	same_analysis(live, with);
	json_decref(with);
	json_decref(live);
}

/* A program whose path holds a newline and whose name ends in " (deleted)"
 * without being deleted: gdb writes NT_FILE's paths as /proc/PID/maps
 * shows them (the newline as \012), the kernel as they are, and either
 * way " (deleted)" may be the name's own.  The executable must be found:
 * its symbols name the lock. */
Test(core, path_with_a_newline_ending_in_deleted)
{
	char exe[400];
	snprintf(exe, sizeof exe, "%s/fx\nlock (deleted)", tmpdir);
	copy_file(fixture_path("fx_lock_abba"), exe, 0755);
	fx_start_path(&fx, exe, NULL, 60);
	const char *lock = fx_line(&fx, "lock ledger_lock ");
	cr_assert(lock);
	char addr[32];
	cr_assert(sscanf(lock, "lock ledger_lock %31s", addr) == 1);
	const char *cores[2] = { make_gcore(), NULL };
	char gcore[400];
	snprintf(gcore, sizeof gcore, "%s", cores[0]);
	cores[0] = gcore;
	cores[1] = make_kernel_core();
	for (int k = 0; k < 2 && cores[k]; k++) {
		json_t *doc = core_ok(cores[k], NULL, NULL);
		cr_assert(!has_warning(doc, "symbols are unknown", NULL),
			  "%s: the executable was not found", k ? "kernel" : "gcore");
		const char *sym = lock_symbol(doc, addr);
		cr_assert(sym && !strcmp(sym, "ledger_lock"), "%s: lock symbol %s",
			  k ? "kernel" : "gcore", sym ? sym : "(none)");
		json_decref(doc);
	}
}

/* --sysroot with another copy of a fixture's library: its build-id is not
 * the one in the core, so it is refused, with a warning, and no symbol of
 * it appears. */
Test(core, replaced_library_is_refused_not_guessed)
{
	const char *args[] = { "4", NULL };
	fx_start(&fx, "fx_tls", args, 60);
	const char *core = make_gcore();
	char root[400], dir[PATH_MAX + 400];
	static char cmd[16 * PATH_MAX];
	snprintf(root, sizeof root, "%s/sysroot", tmpdir);
	const char *lib = fixture_path("libfx_tlslib.so");
	char real[PATH_MAX];
	cr_assert(realpath(lib, real));
	char *slash = strrchr(real, '/');
	*slash = '\0';
	snprintf(dir, sizeof dir, "%s%s", root, real);
	/* the system's files as they are, the fixture's directory a copy with
	 * libfx_tlslib.so replaced by another library */
	snprintf(cmd, sizeof cmd, "mkdir -p '%s' && ln -s /usr '%s/usr' && "
		 "ln -s /lib '%s/lib' && ln -s /lib64 '%s/lib64' && "
		 "cp '%s/fx_tls' '%s/' && cp '%s/libfx_plugin.so' '%s/libfx_tlslib.so' "
		 "&& cp '%s/libfx_tlsplugin.so' '%s/'",
		 dir, root, root, root, real, dir, real, dir, real, dir);
	const char *argv[] = { "sh", "-c", cmd, NULL };
	cr_assert_eq(run_quiet(argv), 0, "%s", cmd);
	const char *extra[] = { "--sysroot", root, "--tls", "fxlib_tls", NULL };
	json_t *doc = core_ok(core, extra, NULL);
	cr_assert(has_warning(doc, "libfx_tlslib.so", "build-id"),
		  "no warning about the replaced library");
	size_t i, j, nframes = 0;
	json_t *t, *f;
	json_array_foreach(json_object_get(doc, "threads"), i, t) {
		json_array_foreach(json_object_get(json_object_get(t, "stack"),
						   "frames"), j, f) {
			nframes++;
			const char *mod = json_string_value(json_object_get(f, "module"));
			json_t *fn = json_object_get(f, "symbol");
			if (mod && strstr(mod, "libfx_tlslib"))
				cr_assert(json_is_null(fn),
					  "a symbol from the refused library: %s",
					  json_string_value(fn));
		}
		/* the variable lives in the refused library: not read */
		json_t *v = json_object_get(json_object_get(t, "tls"), "fxlib_tls");
		cr_assert(!json_is_object(v) ||
			  !json_is_integer(json_object_get(v, "value")),
			  "a value for a variable of the refused library");
	}
	cr_assert_gt(nframes, 0, "no frames at all");
	json_decref(doc);
}

Test(core, truncated_core)
{
	fx_start(&fx, "fx_lock_abba", NULL, 60);
	const char *core = geteuid() == 0 ? make_kernel_core() : make_gcore();
	struct stat st;
	cr_assert(stat(core, &st) == 0);
	char cmd[600];
	snprintf(cmd, sizeof cmd, "truncate -s %lld '%s'",
		 (long long)st.st_size / 2, core);
	const char *argv[] = { "sh", "-c", cmd, NULL };
	cr_assert_eq(run_quiet(argv), 0);
	int status;
	char *err = NULL;
	json_t *doc = core_json(core, NULL, &status, &err);
	cr_assert(doc, "no report from a truncated core: %d %s", status, err);
	free(err);
	cr_assert(has_warning(doc, "truncated", NULL) || has_warning(doc, "ends", NULL),
		  "the truncation is not said");
	cr_assert(status == 0 || status == 1, "exit %d", status);
	json_decref(doc);
}

static const char *compressed(const char *plain, const char *tool)
{
	if (!have_program(tool))
		cr_skip_test("no %s", tool);
	static char out[400];
	snprintf(out, sizeof out, "%s.%s", plain, tool);
	char cmd[900];
	snprintf(cmd, sizeof cmd, "%s -q -c '%s' > '%s'", tool, plain, out);
	const char *argv[] = { "sh", "-c", cmd, NULL };
	cr_assert_eq(run_quiet(argv), 0, "%s", cmd);
	return out;
}

Test(core, zstd_and_xz_cores)
{
	fx_start(&fx, "fx_lock_abba", NULL, 60);
	json_t *live = inspect_json(fx.pid, NULL, NULL);
	cr_assert(wait_not_stopped(fx.pid, 2000));
	const char *plain = geteuid() == 0 ? make_kernel_core() : make_gcore();
	json_t *z = core_ok(compressed(plain, "zstd"), NULL, NULL);
	same_analysis(live, z);
	json_decref(z);
	json_t *x = core_ok(compressed(plain, "xz"), NULL, NULL);
	same_analysis(live, x);
	json_decref(x);
	json_decref(live);
}

/* A program header whose segment claims more bytes than any address space
 * has (here the main thread's stack, up to the last address): without a
 * check its sizes pass 2^63 and stack_bounds.used_bytes came out negative,
 * against the schema.  The segment is left out, with a warning. */
Test(core, segment_larger_than_an_address_space)
{
	fx_start(&fx, "fx_lock_abba", NULL, 60);
	json_t *live = inspect_json(fx.pid, NULL, NULL);
	json_t *main_thread = thread_by_tid(live, fx.pid);
	cr_assert(main_thread);
	uint64_t sp = jhex(json_object_get(main_thread, "regs"), "sp");
	json_decref(live);
	cr_assert(wait_not_stopped(fx.pid, 2000));
	const char *core = make_gcore();
	int fd = open(core, O_RDWR);
	cr_assert(fd >= 0);
	Elf64_Ehdr eh;
	cr_assert(pread(fd, &eh, sizeof eh, 0) == sizeof eh);
	bool patched = false;
	for (unsigned i = 0; i < eh.e_phnum && !patched; i++) {
		Elf64_Phdr ph;
		off_t at = (off_t)(eh.e_phoff + (uint64_t)i * eh.e_phentsize);
		cr_assert(pread(fd, &ph, sizeof ph, at) == sizeof ph);
		if (ph.p_type != PT_LOAD || sp < ph.p_vaddr || sp - ph.p_vaddr >= ph.p_memsz)
			continue;
		ph.p_memsz = UINT64_MAX - ph.p_vaddr;	/* to the last address */
		cr_assert(pwrite(fd, &ph, sizeof ph, at) == sizeof ph);
		patched = true;
	}
	close(fd);
	cr_assert(patched, "no segment holds the main thread's sp %#llx",
		  (unsigned long long)sp);
	int status;
	json_t *doc = core_json(core, NULL, &status, NULL);	/* validated */
	cr_assert(doc, "no report");
	cr_assert(has_warning(doc, "more than any address space", NULL),
		  "the segment is not reported");
	json_t *b = json_object_get(thread_by_tid(doc, fx.pid), "stack_bounds");
	cr_assert(json_is_null(b) ||
		  json_integer_value(json_object_get(b, "used_bytes")) >= 0);
	json_decref(doc);
}

/* Random bytes over the ELF header, the program headers and the notes:
 * a report or a clear error (exit 2 with a message), never a crash. */
Test(core, corrupt_cores)
{
	fx_start(&fx, "fx_lock_abba", NULL, 60);
	const char *core = geteuid() == 0 ? make_kernel_core() : make_gcore();
	int fd = open(core, O_RDONLY);
	cr_assert(fd >= 0);
	struct stat st;
	cr_assert(fstat(fd, &st) == 0);
	size_t len = (size_t)st.st_size;
	unsigned char *orig = malloc(len);
	cr_assert(orig && read(fd, orig, len) == (ssize_t)len);
	close(fd);
	size_t span = len < 16384 ? len : 16384;	/* headers and notes */
	char bad[400];
	snprintf(bad, sizeof bad, "%s/corrupt", tmpdir);
	unsigned seed = 12;
	size_t nerr = 0, nrep = 0;
	for (int round = 0; round < 24; round++) {
		unsigned char *b = malloc(len);
		cr_assert(b);
		memcpy(b, orig, len);
		int nflip = 1 + round % 8;
		for (int k = 0; k < nflip; k++) {
			size_t at = round < 4 ? (size_t)rand_r(&seed) % 64
					      : (size_t)rand_r(&seed) % span;
			b[at] = (unsigned char)rand_r(&seed);
		}
		int out = open(bad, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		cr_assert(out >= 0 && write(out, b, len) == (ssize_t)len);
		close(out);
		free(b);
		int status;
		char *err = NULL;
		json_t *doc = core_json(bad, NULL, &status, &err);
		if (doc) {
			nrep++;
			cr_assert(status == 0 || status == 1 || status == 10,
				  "round %d: exit %d", round, status);
			json_decref(doc);
		} else {
			nerr++;
			cr_assert_eq(status, 2, "round %d: exit %d: %s", round,
				     status, err);
			cr_assert(strstr(err, "tinspect: ") && strlen(err) > 20,
				  "round %d: no clear message: %s", round, err);
		}
		free(err);
	}
	free(orig);
	cr_assert_gt(nerr, 0, "no corruption was refused");
	cr_log_info("corrupt cores: %zu refused, %zu reported", nerr, nrep);
}

Test(core, live_only_options_refused)
{
	static const char *const opts[][3] = {
		{ "--watch", "1", NULL }, { "--follow-threads", NULL, NULL },
		{ "--max-freeze", "10", NULL },
	};
	for (size_t i = 0; i < sizeof opts / sizeof *opts; i++) {
		const char *args[6] = { "--core", "/nonexistent", opts[i][0],
					opts[i][1], NULL };
		struct run r;
		run_tinspect(&r, args, 30);
		cr_assert_eq(r.status, 2, "%s", opts[i][0]);
		cr_assert(r.err && strstr(r.err, opts[i][0]) &&
			  strstr(r.err, "core"), "%s: %s", opts[i][0], r.err);
		run_free(&r);
	}
	const char *args[] = { "--core", "/nonexistent/core", NULL };
	struct run r;
	run_tinspect(&r, args, 30);
	cr_assert_eq(r.status, 2);
	cr_assert(r.err && strstr(r.err, "/nonexistent/core"));
	run_free(&r);
}
