/*
 * test_snapshot: the foundation, against real processes.  Each test starts
 * a fixture that plants a known state (thread names, start routines,
 * job-control stop, a thread in D state, churn), runs the real tinspect on
 * it and checks what comes out, and that the fixture is never left stopped.
 */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"

static struct fixture fx, fx2;
static pid_t vfork_child;	/* fx_vfork's child, a process of its own */
static char cpu_cgroup[128];	/* made by a test, removed in teardown */

static void teardown(void)
{
	if (vfork_child > 0) {
		kill(vfork_child, SIGKILL);
		vfork_child = 0;
	}
	fx_kill(&fx2);
	fx_kill(&fx);
	if (cpu_cgroup[0]) {
		/* empty once its process is reaped */
		for (int i = 0; i < 100 && rmdir(cpu_cgroup) != 0; i++)
			usleep(10000);
		cpu_cgroup[0] = 0;
	}
}

TestSuite(snapshot, .fini = teardown, .timeout = 300 * TEST_TIME_SCALE);

static void hex_of(const char *s, char *out)
{
	for (; *s; s++, out += 2)
		sprintf(out, "%02x", (unsigned char)*s);
	*out = '\0';
}

/* One named thread per role, reported by the fixture. */
struct planted {
	pid_t tid;
	unsigned long pthread;
	char role[16];
	char name[64];
	size_t name_len;
};

static size_t planted_threads(const struct fixture *f, struct planted *out,
			      size_t max)
{
	size_t n = 0;
	for (size_t i = 0; i < f->nlines && n < max; i++) {
		int tid;
		unsigned long pt;
		char role[16], hex[160] = "";
		if (sscanf(f->lines[i], "thread %d %lx %15s %159s", &tid, &pt, role,
			   hex) < 3)
			continue;
		out[n].tid = tid;
		out[n].pthread = pt;
		snprintf(out[n].role, sizeof out[n].role, "%s", role);
		out[n].name_len = unhex(hex, out[n].name, sizeof out[n].name);
		n++;
	}
	return n;
}

static void start_named(void)
{
	char a[40], b[40], c[40];
	char ha[32], hb[32], hc[32];
	hex_of("worker-a", ha);
	hex_of("worker-b", hb);
	hex_of("io-thread", hc);
	snprintf(a, sizeof a, "alpha:%s", ha);
	snprintf(b, sizeof b, "beta:%s", hb);
	snprintf(c, sizeof c, "gamma:%s", hc);
	const char *args[] = { a, b, c, NULL };
	fx_start(&fx, "fx_threads", args, 30);
}

Test(snapshot, thread_count_and_names)
{
	start_named();
	int status;
	json_t *doc = inspect_json(fx.pid, NULL, &status);
	cr_assert_eq(status, 0);
	json_t *threads = json_object_get(doc, "threads");
	cr_assert_eq(json_array_size(threads), 4);
	/* main thread first */
	json_t *m = json_array_get(threads, 0);
	cr_assert_eq(json_integer_value(json_object_get(m, "tid")), fx.pid);
	cr_assert(json_is_true(json_object_get(m, "main")));
	cr_assert_str_eq(jstr(m, "name"), "fx_threads");

	struct planted p[8];
	size_t n = planted_threads(&fx, p, 8);
	cr_assert_eq(n, 3);
	for (size_t i = 0; i < n; i++) {
		json_t *t = thread_by_tid(doc, p[i].tid);
		cr_assert(t, "thread %d missing", p[i].tid);
		cr_assert_str_eq(jstr(t, "name"), p[i].name);
		cr_assert(json_is_true(json_object_get(t, "stopped")));
		cr_assert_str_eq(jstr(t, "proc_read"), "before_stop");
		/* every worker blocks in pthread_cond_wait: a futex wait */
		json_t *sc = json_object_get(t, "syscall");
		cr_assert(json_is_object(sc));
		cr_assert_str_eq(jstr(sc, "name"), "futex");
		cr_assert(json_is_true(json_object_get(sc, "restarting")));
		cr_assert_str_eq(jstr(t, "state"), "S");
	}
	json_t *cap = json_object_get(doc, "capture");
	cr_assert_eq(json_integer_value(json_object_get(cap, "threads_stopped")), 4);
	cr_assert(json_integer_value(json_object_get(cap, "freeze_us")) > 0);
	json_t *proc = json_object_get(doc, "process");
	cr_assert_str_eq(jstr(json_object_get(proc, "thread_db"), "status"), "ok");
	cr_assert_str_eq(jstr(proc, "glibc_version"), "2.36");
	cr_assert_str_eq(jstr(proc, "module_map"), "link_map");
	json_decref(doc);
	cr_assert(!any_task_stopped(fx.pid), "target left stopped");
}

Test(snapshot, start_routine_symbols)
{
	start_named();
	json_t *doc = inspect_json(fx.pid, NULL, NULL);
	struct planted p[8];
	size_t n = planted_threads(&fx, p, 8);
	for (size_t i = 0; i < n; i++) {
		json_t *t = thread_by_tid(doc, p[i].tid);
		json_t *pt = json_object_get(t, "pthread");
		cr_assert(json_is_object(pt), "no pthread info for %d", p[i].tid);
		json_t *sr = json_object_get(pt, "start_routine");
		char want[64];
		snprintf(want, sizeof want, "fx_start_%s", p[i].role);
		cr_assert_str_eq(jstr(sr, "symbol"), want);
		cr_assert_eq(json_integer_value(json_object_get(sr, "offset")), 0);
		const char *mod = jstr(sr, "module");
		cr_assert(mod && strstr(mod, "/fx_threads"), "module %s", mod);
	}
	json_t *m = thread_by_tid(doc, fx.pid);
	cr_assert(json_is_null(json_object_get(json_object_get(m, "pthread"),
					       "start_routine")));
	json_decref(doc);
}

Test(snapshot, pthread_ids_match_the_fixture)
{
	start_named();
	json_t *doc = inspect_json(fx.pid, NULL, NULL);
	unsigned long main_pt;
	int mpid;
	cr_assert(sscanf(fx_line(&fx, "main "), "main %d %lx", &mpid, &main_pt) == 2);
	char want[32];
	snprintf(want, sizeof want, "0x%lx", main_pt);
	json_t *m = thread_by_tid(doc, fx.pid);
	cr_assert_str_eq(jstr(json_object_get(m, "pthread"), "id"), want);
	struct planted p[8];
	size_t n = planted_threads(&fx, p, 8);
	for (size_t i = 0; i < n; i++) {
		json_t *t = thread_by_tid(doc, p[i].tid);
		snprintf(want, sizeof want, "0x%lx", p[i].pthread);
		cr_assert_str_eq(jstr(json_object_get(t, "pthread"), "id"), want);
		/* the thread pointer, as the thread itself reads it: on x86_64
		 * the pthread_t; on aarch64 just above its struct pthread,
		 * which libthread_db found from it (docs/GLIBC.md §4) */
		char key[32];
		unsigned long tp;
		snprintf(key, sizeof key, "tp %d ", p[i].tid);
		cr_assert(fx_line(&fx, key) &&
			  sscanf(fx_line(&fx, key) + strlen(key), "%lx", &tp) == 1);
		snprintf(want, sizeof want, "0x%lx", tp);
		cr_assert_str_eq(jstr(json_object_get(t, "regs"), "tp"), want);
#if defined(__x86_64__)
		cr_assert_eq(tp, p[i].pthread);
#elif defined(__aarch64__)
		cr_assert_gt(tp, p[i].pthread);
#endif
	}
	json_decref(doc);
}

Test(snapshot, text_report)
{
	start_named();
	struct run r;
	const char *args[] = { pidstr(fx.pid), NULL };
	run_tinspect(&r, args, 60);
	cr_assert_eq(r.status, 0, "exit %d: %s", r.status, r.err);
	cr_assert(strstr(r.out, "target frozen "), "no freeze time in the header");
	char want[128];
	snprintf(want, sizeof want, "Thread %d \"fx_threads\" [main]", (int)fx.pid);
	cr_assert(strstr(r.out, want), "no main thread block");
	struct planted p[8];
	size_t n = planted_threads(&fx, p, 8);
	for (size_t i = 0; i < n; i++) {
		snprintf(want, sizeof want, "Thread %d \"%s\"", p[i].tid, p[i].name);
		cr_assert(strstr(r.out, want), "no block for %s", p[i].name);
		snprintf(want, sizeof want, "start: fx_start_%s in ", p[i].role);
		cr_assert(strstr(r.out, want), "no start routine %s", want);
	}
	cr_assert(strstr(r.out, "syscall: futex("));
	run_free(&r);
}

/* Names that break naive printers: quotes, backslashes, control
 * characters, terminal escapes, invalid UTF-8, the stat delimiter. */
Test(snapshot, hostile_thread_names)
{
	static const char *const names[] = {
		"quo\"te\"",
		"back\\slash\\",
		"ctl\x01\x02\x7f",
		"\x1b[31mred",
		"bad\xff\xfe",
		"cut\xe2\x82",
		"h\xc3\xa9llo",
		"a) (b) c",
		"new\nline",
		"fifteen-bytes-x",
	};
	const size_t nn = sizeof names / sizeof *names;
	char specs[16][80];
	const char *args[17];
	for (size_t i = 0; i < nn; i++) {
		char hex[64];
		hex_of(names[i], hex);
		snprintf(specs[i], sizeof specs[i], "alpha:%s", hex);
		args[i] = specs[i];
	}
	args[nn] = NULL;
	fx_start(&fx, "fx_threads", args, 30);
	int status;
	json_t *doc = inspect_json(fx.pid, NULL, &status);
	cr_assert_eq(status, 0);
	struct planted p[16];
	size_t n = planted_threads(&fx, p, 16);
	cr_assert_eq(n, nn);
	for (size_t i = 0; i < n; i++) {
		json_t *t = thread_by_tid(doc, p[i].tid);
		cr_assert(t);
		const char *name = jstr(t, "name");
		const char *hex = jstr(t, "name_hex");
		char want_hex[64];
		hex_of(p[i].name, want_hex);
		bool valid_utf8 = i != 4 && i != 5;
		if (valid_utf8) {
			cr_assert_str_eq(name, p[i].name, "name %zu", i);
			cr_assert_null(hex, "name_hex for a valid name %zu", i);
		} else {
			cr_assert_not_null(hex, "no name_hex for invalid UTF-8 %zu", i);
			cr_assert_str_eq(hex, want_hex);
			cr_assert(strstr(name, "\xef\xbf\xbd"), "no U+FFFD in %zu", i);
		}
	}
	json_decref(doc);

	/* the text report never writes a raw control byte */
	struct run r;
	const char *targs[] = { pidstr(fx.pid), NULL };
	run_tinspect(&r, targs, 60);
	cr_assert_eq(r.status, 0);
	for (size_t i = 0; i < r.out_len; i++) {
		unsigned char c = (unsigned char)r.out[i];
		cr_assert(c == '\n' || (c >= 0x20 && c < 0x7f),
			  "raw byte 0x%02x in the text report", c);
	}
	cr_assert(strstr(r.out, "\"quo\\\"te\\\"\""));
	cr_assert(strstr(r.out, "\"\\x1b[31mred\""));
	cr_assert(strstr(r.out, "\"new\\x0aline\""));
	run_free(&r);
}

Test(snapshot, stopped_target_stays_stopped)
{
	start_named();
	kill(fx.pid, SIGSTOP);
	cr_assert(wait_state(fx.pid, fx.pid, 'T', 5000));
	int status;
	json_t *doc = inspect_json(fx.pid, NULL, &status);
	cr_assert(status == 0 || status == 1);
	json_t *threads = json_object_get(doc, "threads");
	size_t i;
	json_t *t;
	json_array_foreach(threads, i, t) {
		cr_assert(json_is_true(json_object_get(t, "jobctl_stopped")));
		cr_assert_str_eq(jstr(t, "state"), "T");
	}
	json_decref(doc);
	/* still job-control stopped, every thread of it */
	struct planted p[8];
	size_t n = planted_threads(&fx, p, 8);
	cr_assert_eq(task_state(fx.pid, fx.pid), 'T');
	for (size_t k = 0; k < n; k++)
		cr_assert_eq(task_state(fx.pid, p[k].tid), 'T', "thread %d", p[k].tid);
	kill(fx.pid, SIGCONT);
	cr_assert(wait_not_stopped(fx.pid, 5000));
}

Test(snapshot, running_target_keeps_running)
{
	start_named();
	for (int i = 0; i < 5; i++) {
		json_t *doc = inspect_json(fx.pid, NULL, NULL);
		json_decref(doc);
		cr_assert(!any_task_stopped(fx.pid), "left stopped after run %d", i);
	}
	/* and it still answers: EOF on stdin makes it exit normally */
	close(fx.in_fd);
	fx.in_fd = 0;
	int st;
	cr_assert_eq(waitpid(fx.pid, &st, 0), fx.pid);
	fx.pid = 0;
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

/* Start tinspect, wait until it has the target's main thread stopped,
 * optionally wait a little more, then send it sig.  Returns whether the
 * target was seen stopped (i.e. the signal hit mid-capture). */
static bool signal_mid_capture(pid_t target, int sig, int extra_us,
			       const char *const *extra, struct run *r)
{
	const char *args[8];
	size_t n = 0;
	for (; extra && *extra; extra++)
		args[n++] = *extra;
	args[n++] = "--json";
	args[n++] = pidstr(target);
	args[n] = NULL;
	run_start(r, args);
	bool seen = false;
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		char s = task_state(target, target);
		if (s == 't') {
			seen = true;
			break;
		}
		clock_gettime(CLOCK_MONOTONIC, &t1);
		if (t1.tv_sec - t0.tv_sec > 10)
			break;
		if (waitpid(r->pid, NULL, WNOHANG) == r->pid) {
			r->pid = -1;
			break;
		}
	}
	if (r->pid > 0) {
		if (extra_us)
			usleep((useconds_t)extra_us);
		kill(r->pid, sig);
	}
	return seen;
}

Test(snapshot, sigkill_mid_capture_leaves_target_running)
{
	const char *args[] = { "--idle", "1000", NULL };
	fx_start(&fx, "fx_threads", args, 60);
	int hits = 0;
	for (int i = 0; i < 20; i++) {
		struct run r;
		bool seen = signal_mid_capture(fx.pid, SIGKILL, (i % 5) * 200, NULL, &r);
		if (r.pid > 0)
			run_wait(&r, 60);
		hits += seen;
		cr_assert(!any_task_stopped(fx.pid),
			  "iteration %d: target left stopped after SIGKILL", i);
		cr_assert_eq(kill(fx.pid, 0), 0, "target died");
		run_free(&r);
	}
	cr_assert(hits > 0, "never caught tinspect with the target stopped");
	/* and at any other moment: startup, /proc reading, analysis */
	srand((unsigned)fx.pid);
	for (int i = 0; i < 20; i++) {
		struct run r;
		const char *targs[] = { pidstr(fx.pid), NULL };
		run_start(&r, targs);
		usleep((useconds_t)(rand() % 40000));
		kill(r.pid, SIGKILL);
		run_wait(&r, 60);
		cr_assert(!any_task_stopped(fx.pid),
			  "random kill %d: target left stopped", i);
		run_free(&r);
	}
}

/* The same with a crew of four tracer threads (one per CPU by default:
 * none on a machine of one), each holding a share of the tasks. */
Test(snapshot, sigkill_mid_capture_with_four_tracers)
{
	const char *args[] = { "--idle", "1000", NULL };
	fx_start(&fx, "fx_threads", args, 60);
	setenv("TINSPECT_TRACERS", "4", 1);
	int hits = 0;
	for (int i = 0; i < 20; i++) {
		struct run r;
		bool seen = signal_mid_capture(fx.pid, SIGKILL, (i % 5) * 200, NULL, &r);
		if (r.pid > 0)
			run_wait(&r, 60);
		hits += seen;
		cr_assert(!any_task_stopped(fx.pid),
			  "iteration %d: target left stopped after SIGKILL", i);
		cr_assert_eq(kill(fx.pid, 0), 0, "target died");
		run_free(&r);
	}
	cr_assert(hits > 0, "never caught tinspect with the target stopped");
}

static void signal_test(int sig)
{
	const char *args[] = { "--idle", "1000", NULL };
	fx_start(&fx, "fx_threads", args, 60);
	int hits = 0;
	for (int i = 0; i < 5; i++) {
		struct run r;
		bool seen = signal_mid_capture(fx.pid, sig, i * 300, NULL, &r);
		if (r.pid > 0)
			run_wait(&r, 60);
		if (seen && r.status == -1) {
			/* it resumed the target, then died of the signal */
			cr_assert_eq(r.sig, sig, "died of %d, not %d", r.sig, sig);
			hits++;
		}
		cr_assert(!any_task_stopped(fx.pid), "target left stopped (%d)", i);
		run_free(&r);
	}
	cr_assert(hits > 0, "the signal never landed mid-capture");
}

Test(snapshot, sigterm_mid_capture) { signal_test(SIGTERM); }
Test(snapshot, sigint_mid_capture) { signal_test(SIGINT); }
Test(snapshot, sighup_mid_capture) { signal_test(SIGHUP); }
Test(snapshot, sigpipe_mid_capture) { signal_test(SIGPIPE); }

Test(snapshot, vanished_pid)
{
	pid_t child = fork();
	if (child == 0)
		_exit(0);
	waitpid(child, NULL, 0);
	struct run r;
	const char *args[] = { pidstr(child), NULL };
	run_tinspect(&r, args, 30);
	cr_assert_eq(r.status, 3, "exit %d: %s", r.status, r.err);
	cr_assert(strstr(r.err, "no process with PID"), "%s", r.err);
	cr_assert_eq(r.out_len, 0);
	run_free(&r);
}

Test(snapshot, target_killed_mid_capture)
{
	/* the target must die while tinspect holds it stopped: a window of
	 * some milliseconds, caught by watching the main thread for 't' (with
	 * a deadline: a missed window is retried, never waited out while
	 * tinspect blocks on a full pipe nobody reads) */
	bool hit = false;
	for (int attempt = 0; attempt < 10 && !hit; attempt++) {
		const char *args[] = { "--idle", "2000", NULL };
		fx_start(&fx, "fx_threads", args, 60);
		struct run r;
		const char *targs[] = { pidstr(fx.pid), NULL };
		run_start(&r, targs);
		struct timespec t0, t1;
		clock_gettime(CLOCK_MONOTONIC, &t0);
		for (;;) {
			if (task_state(fx.pid, fx.pid) == 't') {
				hit = true;
				break;
			}
			clock_gettime(CLOCK_MONOTONIC, &t1);
			if (t1.tv_sec - t0.tv_sec > 5)
				break;
		}
		if (hit)
			kill(fx.pid, SIGKILL);
		run_wait(&r, 60);
		if (hit) {
			cr_assert_eq(r.status, 6, "exit %d (sig %d): %s", r.status, r.sig, r.err);
			cr_assert(strstr(r.err, "exited during the capture"), "%s", r.err);
		}
		run_free(&r);
		fx_kill(&fx);
	}
	cr_assert(hit, "never caught the target stopped");
}

Test(snapshot, churning_threads)
{
	const char *args[] = { "32", NULL };
	fx_start(&fx, "fx_churn", args, 30);
	size_t late = 0, vanished = 0;
	for (int i = 0; i < 60; i++) {
		int status;
		json_t *doc = inspect_json(fx.pid, NULL, &status);
		cr_assert(status == 0 || status == 1, "run %d: exit %d", i, status);
		json_t *cap = json_object_get(doc, "capture");
		json_t *threads = json_object_get(doc, "threads");
		size_t nt = json_array_size(threads);
		cr_assert(nt >= 3, "run %d: %zu threads", i, nt);
		cr_assert_eq((size_t)json_integer_value(json_object_get(cap, "threads_seen")),
			     nt + (size_t)json_integer_value(json_object_get(cap, "threads_vanished")));
		vanished += (size_t)json_integer_value(json_object_get(cap, "threads_vanished"));
		size_t k;
		json_t *t;
		json_array_foreach(threads, k, t) {
			if (!strcmp(jstr(t, "proc_read"), "after_resume"))
				late++;
			/* no duplicate TIDs */
			for (size_t j = k + 1; j < nt; j++)
				cr_assert_neq(json_integer_value(json_object_get(t, "tid")),
					      json_integer_value(json_object_get(
						      json_array_get(threads, j), "tid")));
		}
		json_decref(doc);
		cr_assert(!any_task_stopped(fx.pid), "run %d left it stopped", i);
	}
	cr_log_info("churn: %zu threads found by a rescan, %zu vanished", late, vanished);
}

static void static_binary_test(const char *name)
{
	const char *args[] = { "alpha:776f726b65722d61", "beta:776f726b65722d62",
			       "gamma:696f2d746872656164", NULL };
	fx_start(&fx, name, args, 30);
	struct planted p[8];
	size_t 	n = planted_threads(&fx, p, 8);
	cr_assert_eq(n, 3);
	int status;
	json_t *doc = inspect_json(fx.pid, NULL, &status);
	cr_assert_eq(status, 0);
	json_t *proc = json_object_get(doc, "process");
	cr_assert_str_eq(jstr(json_object_get(proc, "thread_db"), "status"), "ok");
	cr_assert_str_eq(jstr(proc, "module_map"), "maps_only");
	for (size_t i = 0; i < n; i++) {
		json_t *t = thread_by_tid(doc, p[i].tid);
		json_t *pt = json_object_get(t, "pthread");
		char want[32];
		snprintf(want, sizeof want, "0x%lx", p[i].pthread);
		cr_assert_str_eq(jstr(pt, "id"), want);
		snprintf(want, sizeof want, "fx_start_%s", p[i].role);
		cr_assert_str_eq(jstr(json_object_get(pt, "start_routine"), "symbol"), want);
		/* and its stack, from the .symtab of the static binary */
		json_t *st = json_object_get(t, "stack");
		cr_assert_str_eq(jstr(st, "end"), "complete");
		bool seen = false;
		size_t k;
		json_t *f;
		json_array_foreach(json_object_get(st, "frames"), k, f)
			seen |= jstr(f, "symbol") && !strcmp(jstr(f, "symbol"), want);
		cr_assert(seen, "no %s frame", want);
	}
	json_decref(doc);
}

Test(snapshot, static_threaded_binary)
{
	static_binary_test("fx_threads_static");
}

Test(snapshot, static_stripped_binary_lists_threads_from_proc)
{
	const char *args[] = { "alpha:61", "beta:62", NULL };
	fx_start(&fx, "fx_threads_static_stripped", args, 30);
	int status;
	json_t *doc = inspect_json(fx.pid, NULL, &status);
	cr_assert_eq(status, 0);
	json_t *proc = json_object_get(doc, "process");
	cr_assert_str_eq(jstr(json_object_get(proc, "thread_db"), "status"),
			 "no_symbols");
	json_t *threads = json_object_get(doc, "threads");
	cr_assert_eq(json_array_size(threads), 3);
	size_t i;
	json_t *t;
	json_array_foreach(threads, i, t) {
		cr_assert(json_is_null(json_object_get(t, "pthread")));
		cr_assert(json_is_object(json_object_get(t, "regs")));
	}
	json_decref(doc);
}

Test(snapshot, single_threaded_program)
{
	/* sleep(1) prints nothing: wrap it so it says ready first */
	const char *sh_args[] = { "-c", "echo ready; exec sleep 1000", NULL };
	fx_start_path(&fx, "/bin/sh", sh_args, 30);
	/* the shell has exec'ed sleep once /proc says so */
	for (int i = 0; i < 5000; i++) {
		char path[64], comm[32] = "";
		snprintf(path, sizeof path, "/proc/%d/comm", (int)fx.pid);
		FILE *f = fopen(path, "r");
		if (f) {
			if (!fgets(comm, sizeof comm, f))
				comm[0] = '\0';
			fclose(f);
		}
		if (!strncmp(comm, "sleep", 5))
			break;
		usleep(1000);
	}
	int status;
	json_t *doc = inspect_json(fx.pid, NULL, &status);
	cr_assert_eq(status, 0);
	json_t *threads = json_object_get(doc, "threads");
	cr_assert_eq(json_array_size(threads), 1);
	json_t *t = json_array_get(threads, 0);
	cr_assert_str_eq(jstr(t, "name"), "sleep");
	cr_assert_str_eq(jstr(json_object_get(json_object_get(doc, "process"),
					      "thread_db"), "status"), "ok");
	cr_assert(json_is_object(json_object_get(t, "pthread")));
	json_decref(doc);
}

/* main() called pthread_exit and a thread runs on: the leader is a
 * zombie without memory, so its /proc/PID files (exe, maps, auxv, mem)
 * say nothing; the process is read through a live thread. */
Test(snapshot, process_whose_main_thread_exited)
{
	fx_start(&fx, "fx_lifecycle", NULL, 30);
	fx_send(&fx, "mainexit");
	char *l = fx_read_line(&fx, 30);
	int server = 0;
	cr_assert(l && sscanf(l, "serving %d", &server) == 1, "no server thread");
	free(l);
	cr_assert(wait_state(fx.pid, fx.pid, 'Z', 5000), "the leader is no zombie");
	const char *extra[] = { "--errno", NULL };
	int status;
	json_t *doc = inspect_json(fx.pid, extra, &status);
	cr_assert_eq(status, 0, "exit %d", status);
	json_t *proc = json_object_get(doc, "process");
	const char *exe = jstr(proc, "exe");
	cr_assert(exe && strstr(exe, "fx_lifecycle"), "exe %s", exe ? exe : "(null)");
	cr_assert_gt(json_array_size(json_object_get(proc, "cmdline")), 0);
	cr_assert_str_eq(jstr(json_object_get(proc, "thread_db"), "status"), "ok");
	json_t *threads = json_object_get(doc, "threads");
	cr_assert_eq(json_array_size(threads), 2);
	json_t *lead = thread_by_tid(doc, fx.pid);
	cr_assert(lead);
	cr_assert_str_eq(jstr(lead, "state"), "Z");
	json_t *t = thread_by_tid(doc, server);
	cr_assert(t, "thread %d missing", server);
	json_t *pt = json_object_get(t, "pthread");
	cr_assert(json_is_object(pt));
	cr_assert_str_eq(jstr(json_object_get(pt, "start_routine"), "symbol"), "server");
	json_t *f = json_object_get(json_object_get(t, "stack"), "frames");
	bool serve = false;
	for (size_t i = 0; i < json_array_size(f); i++) {
		const char *sym = jstr(json_array_get(f, i), "symbol");
		serve |= sym && !strcmp(sym, "serve");
	}
	cr_assert(serve, "no frame in serve()");
	cr_assert_eq(json_array_size(json_object_get(t, "errors")), 0);
	json_decref(doc);
	cr_assert(wait_not_stopped(fx.pid, 1000));
}

Test(snapshot, max_freeze_aborts_and_resumes)
{
	const char *args[] = { "--idle", "2000", NULL };
	fx_start(&fx, "fx_threads", args, 60);
	struct run r;
	const char *targs[] = { "--max-freeze", "0.05", pidstr(fx.pid), NULL };
	run_tinspect(&r, targs, 60);
	cr_assert_eq(r.status, 7, "exit %d: %s", r.status, r.err);
	cr_assert(strstr(r.err, "freeze limit"), "%s", r.err);
	cr_assert(!any_task_stopped(fx.pid), "target left stopped");
	run_free(&r);
}

Test(snapshot, permission_denied_other_uid)
{
	start_named();
	struct run r;
	const char *wrap[] = { "/usr/bin/setpriv", "--reuid=65534", "--regid=65534",
			       "--clear-groups", "--inh-caps=-all", NULL };
	const char *args[] = { pidstr(fx.pid), NULL };
	run_start_as(&r, wrap, args);
	run_wait(&r, 30);
	cr_assert_eq(r.status, 4, "exit %d: %s", r.status, r.err);
	cr_assert(strstr(r.err, "runs as uid 0"), "%s", r.err);
	cr_assert(strstr(r.err, "CAP_SYS_PTRACE"), "%s", r.err);
	run_free(&r);
}

Test(snapshot, permission_denied_already_traced)
{
	start_named();
	const char *targs[] = { pidstr(fx.pid), NULL };
	fx_start(&fx2, "fx_tracer", targs, 30);
	struct run r;
	run_tinspect(&r, targs, 30);
	cr_assert_eq(r.status, 4, "exit %d: %s", r.status, r.err);
	char want[64];
	snprintf(want, sizeof want, "already traced by PID %d (\"fx_tracer\")", (int)fx2.pid);
	cr_assert(strstr(r.err, want), "%s", r.err);
	run_free(&r);
	fx_kill(&fx2);
	/* once the other tracer is gone, it works */
	json_t *doc = inspect_json(fx.pid, NULL, NULL);
	json_decref(doc);
}

Test(snapshot, thirty_two_bit_target)
{
	fx_start(&fx, FX_32BIT, NULL, 30);
	struct run r;
	const char *args[] = { pidstr(fx.pid), NULL };
	run_tinspect(&r, args, 30);
	cr_assert_eq(r.status, 5, "exit %d: %s", r.status, r.err);
	cr_assert(strstr(r.err, "32-bit"), "%s", r.err);
	cr_assert(!any_task_stopped(fx.pid));
	run_free(&r);
}

/* fx_vfork (args) captured with a short stop timeout: its vforking thread
 * (*ret_vtid, in D state) is a straggler, and the snapshot partial. */
static json_t *vfork_capture(const char *const *args, int *ret_vtid)
{
	fx_start(&fx, "fx_vfork", args, 30);
	int pid;
	cr_assert(sscanf(fx_line(&fx, "ready"), "ready %d %d %d", &pid, ret_vtid,
			 &vfork_child) == 3);
	int status;
	const char *extra[] = { "--stop-timeout", "200", NULL };
	json_t *doc = inspect_json(fx.pid, extra, &status);
	cr_assert_eq(status, 1, "a straggler makes the snapshot partial");
	return doc;
}

/* tinspect is gone: when the vforking thread wakes it must run on.  The
 * released child exits and fx_vfork reaps it: its PID is free from then
 * on, maybe a new thread's already (a signal to it would hit whatever
 * process took the number), so it is not signalled again. */
static void vfork_release(int vtid)
{
	fx_send(&fx, "release");
	vfork_child = 0;
	cr_assert(wait_state(fx.pid, vtid, 'S', 5000), "vforker state %c",
		  task_state(fx.pid, vtid));
	cr_assert(!any_task_stopped(fx.pid));
}

Test(snapshot, thread_in_d_state_does_not_hold_the_others)
{
	int vtid;
	json_t *doc = vfork_capture(NULL, &vtid);
	json_t *v = thread_by_tid(doc, vtid);
	cr_assert(json_is_true(json_object_get(v, "straggler")));
	cr_assert(json_is_false(json_object_get(v, "stopped")));
	cr_assert_str_eq(jstr(v, "state"), "D");
	json_t *m = thread_by_tid(doc, fx.pid);
	cr_assert(json_is_true(json_object_get(m, "stopped")));
	cr_assert_eq(json_integer_value(json_object_get(json_object_get(doc, "capture"),
							"stragglers")), 1);
	json_decref(doc);
	vfork_release(vtid);
}

/* 200 tasks: the scan reads /proc/TID/syscall of a sample only, the
 * stop's registers say the rest; the vforking thread comes last, out of
 * the sample (every third task), and not stopped it has no registers:
 * its line is read after the stop, and its system call is still known. */
Test(snapshot, straggler_out_of_the_scan_sample_keeps_its_syscall)
{
	const char *args[] = { "198", NULL };
	int vtid;
	json_t *doc = vfork_capture(args, &vtid);
	cr_assert_eq(json_array_size(json_object_get(doc, "threads")), 200);
	json_t *v = thread_by_tid(doc, vtid);
	cr_assert(json_is_true(json_object_get(v, "straggler")));
	json_t *sc = json_object_get(v, "syscall");
	cr_assert(json_is_object(sc), "the straggler's system call is unknown");
	cr_assert_str_eq(jstr(sc, "source"), "proc");
	cr_assert_str_eq(jstr(sc, "name"), SC_VFORK);
	/* and the held threads' from their registers */
	json_t *m = thread_by_tid(doc, fx.pid);
	cr_assert(json_is_true(json_object_get(m, "stopped")));
	cr_assert_str_eq(jstr(json_object_get(m, "syscall"), "source"), "registers");
	json_decref(doc);
	vfork_release(vtid);
}

static bool write_file(const char *dir, const char *name, const char *text)
{
	char path[256];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	FILE *f = fopen(path, "w");
	if (!f)
		return false;
	bool ok = fputs(text, f) >= 0;
	return fclose(f) == 0 && ok;
}

/* A cgroup with the cpu controller (v1's cpu hierarchy, or v2 where the
 * root hands the controller down) into cpu_cgroup, or the reason not. */
static const char *make_cpu_cgroup(bool *v2)
{
	*v2 = false;
	snprintf(cpu_cgroup, sizeof cpu_cgroup, "/sys/fs/cgroup/cpu/tinspect-test-%d",
		 (int)getpid());
	if (access("/sys/fs/cgroup/cpu/cpu.cfs_quota_us", F_OK) != 0) {
		char ctl[512] = "";
		FILE *f = fopen("/sys/fs/cgroup/cgroup.subtree_control", "r");
		if (f) {
			if (!fgets(ctl, sizeof ctl, f))
				ctl[0] = 0;
			fclose(f);
		}
		if (!strstr(ctl, "cpu")) {
			cpu_cgroup[0] = 0;
			return "no cgroup with the cpu controller (v1 cpu hierarchy, or v2 subtree_control)";
		}
		*v2 = true;
		snprintf(cpu_cgroup, sizeof cpu_cgroup, "/sys/fs/cgroup/tinspect-test-%d",
			 (int)getpid());
	}
	if (mkdir(cpu_cgroup, 0755) != 0) {
		cpu_cgroup[0] = 0;
		return "cannot make a cgroup (not root?)";
	}
	return NULL;
}

/* The CPU time thread tid has had, in ns (its schedstat), or -1. */
static long long cpu_time_of(pid_t pid, pid_t tid)
{
	char path[64];
	long long ns = -1;
	snprintf(path, sizeof path, "/proc/%d/task/%d/schedstat", (int)pid, (int)tid);
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	if (fscanf(f, "%lld", &ns) != 1)
		ns = -1;
	fclose(f);
	return ns;
}

/*
 * A thread that is runnable but gets no CPU (a busy host, a throttled
 * container) stops as soon as it runs: it is not in uninterruptible sleep
 * and must not be left out at the stop timeout.  The target's cgroup may
 * use 50 ms of CPU a second (well above the overrun of a scheduler tick,
 * which the next second's quota pays first), which its spinning thread
 * spends at once:
 * captured just after the throttling began, every thread waits most of a
 * second for a CPU, longer than --stop-timeout 150 but within ten times it.
 */
Test(snapshot, thread_waiting_for_a_cpu_is_not_left_out)
{
	bool v2;
	const char *why = make_cpu_cgroup(&v2);
	if (why)
		cr_skip_test("%s", why);
	const char *args[] = { "--idle", "8", "--spin", "1", NULL };
	fx_start(&fx, "fx_spin", args, 30);
	char pid[16];
	snprintf(pid, sizeof pid, "%d", (int)fx.pid);
	bool set = v2 ? write_file(cpu_cgroup, "cpu.max", "50000 1000000")
		      : write_file(cpu_cgroup, "cpu.cfs_period_us", "1000000") &&
			write_file(cpu_cgroup, "cpu.cfs_quota_us", "50000");
	cr_assert(set && write_file(cpu_cgroup, "cgroup.procs", pid),
		  "cannot throttle the target in %s", cpu_cgroup);
	/* throttled: the spinner has had no CPU for 30 ms (its CPU time
	 * counts on at the scheduler's ticks, 10 ms apart at the most) */
	int spinner;
	cr_assert(sscanf(fx_line(&fx, "spin"), "spin %d", &spinner) == 1);
	bool throttled = false;
	for (int i = 0; i < 200 && !throttled; i++) {
		long long was = cpu_time_of(fx.pid, spinner);
		usleep(30000);
		throttled = was >= 0 && cpu_time_of(fx.pid, spinner) == was;
	}
	cr_assert(throttled, "the spinner was never throttled");
	int status;
	const char *extra[] = { "--stop-timeout", "150", NULL };
	json_t *doc = inspect_json(fx.pid, extra, &status);
	json_t *cap = json_object_get(doc, "capture");
	cr_assert_eq(json_integer_value(json_object_get(cap, "stragglers")), 0,
		     "a thread waiting for a CPU was left out");
	cr_assert_eq(status, 0);
	size_t i;
	json_t *t;
	json_array_foreach(json_object_get(doc, "threads"), i, t)
		cr_assert(json_is_true(json_object_get(t, "stopped")), "tid %lld not stopped",
			  (long long)json_integer_value(json_object_get(t, "tid")));
	cr_assert_eq(i, 10);
	json_decref(doc);
	cr_assert(!any_task_stopped(fx.pid));
}

Test(snapshot, proc_mem_fallback_reads_the_same)
{
	start_named();
	const char *extra[] = { "--proc-mem", NULL };
	json_t *a = inspect_json(fx.pid, extra, NULL);
	json_t *b = inspect_json(fx.pid, NULL, NULL);
	struct planted p[8];
	size_t n = planted_threads(&fx, p, 8);
	for (size_t i = 0; i < n; i++) {
		json_t *ta = json_object_get(thread_by_tid(a, p[i].tid), "pthread");
		json_t *tb = json_object_get(thread_by_tid(b, p[i].tid), "pthread");
		cr_assert(json_is_object(ta));
		cr_assert(json_equal(ta, tb));
		/* and the stacks, copied through /proc/PID/mem the same */
		json_t *sa = json_object_get(thread_by_tid(a, p[i].tid), "stack");
		json_t *sb = json_object_get(thread_by_tid(b, p[i].tid), "stack");
		cr_assert_str_eq(jstr(sa, "end"), "complete");
		cr_assert(json_equal(json_object_get(sa, "frames"),
				     json_object_get(sb, "frames")),
			  "thread %d: other frames through /proc/PID/mem", p[i].tid);
	}
	json_decref(a);
	json_decref(b);
}

Test(snapshot, usage_errors)
{
	struct run r;
	const char *a1[] = { "notapid", NULL };
	run_tinspect(&r, a1, 30);
	cr_assert_eq(r.status, 2);
	run_free(&r);
	const char *a2[] = { "--bogus", "1", NULL };
	run_tinspect(&r, a2, 30);
	cr_assert_eq(r.status, 2);
	run_free(&r);
	const char *a3[] = { "--help", NULL };
	run_tinspect(&r, a3, 30);
	cr_assert_eq(r.status, 0);
	cr_assert(strstr(r.out, "Exit status:"));
	cr_assert(strstr(r.out, "permission denied"));
	run_free(&r);
}
