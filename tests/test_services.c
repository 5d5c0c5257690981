/*
 * test_services: what real services showed, each defect planted
 * by a fixture: a lock in the anonymous tail of .bss, zero-word futex
 * waits that are not parks, a busy condvar, a semaphore ABBA, lock holders
 * that are and are not stalled, generated code on the stack, runtimes
 * whose locks tinspect cannot see; and the report: the verdict first,
 * --brief, --verbose, the exit status.  bench/services.sh runs the same
 * checks on MariaDB, a JVM and CPython.
 */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

static struct fixture fx;

static void teardown(void)
{
	fx_kill(&fx);
}

TestSuite(services, .fini = teardown, .timeout = 600 * TEST_TIME_SCALE);

/* "tid ROLE TID" */
static pid_t role_tid(const char *role)
{
	for (size_t i = 0; i < fx.nlines; i++) {
		char r[64];
		int tid;
		if (sscanf(fx.lines[i], "tid %63s %d", r, &tid) == 2 && !strcmp(r, role))
			return tid;
	}
	cr_assert_fail("fixture reported no role %s", role);
	return 0;
}

/* "lock LABEL 0xADDR ..." */
static uint64_t planted(const char *label)
{
	for (size_t i = 0; i < fx.nlines; i++) {
		char l[64];
		unsigned long a;
		if (sscanf(fx.lines[i], "lock %63s %lx", l, &a) == 2 && !strcmp(l, label))
			return a;
	}
	cr_assert_fail("fixture reported no lock %s", label);
	return 0;
}

static json_t *run_json(const char *const *extra, int *status)
{
	json_t *doc = inspect_json(fx.pid, extra, status);
	cr_assert(!any_task_stopped(fx.pid) || wait_not_stopped(fx.pid, 2000),
		  "target left stopped");
	return doc;
}

/* The text report with extra options; the caller frees r. */
static void run_text(struct run *r, const char *opt)
{
	char pid[16];
	snprintf(pid, sizeof pid, "%d", (int)fx.pid);
	const char *args[] = { opt ? opt : pid, opt ? pid : NULL, NULL };
	run_tinspect(r, args, 120);
	cr_assert(r->out, "no output");
	cr_assert(!any_task_stopped(fx.pid) || wait_not_stopped(fx.pid, 2000));
}

/* ---- defect 1: globals beyond the file-backed pages ---------------------------- */

Test(services, lock_in_the_anonymous_tail_of_bss_is_named)
{
	fx_start(&fx, "fx_svc_bss", NULL, 60);
	int status;
	json_t *doc = run_json(NULL, &status);
	cr_assert_eq(status, 0);
	cr_assert_eq(json_array_size(json_object_get(doc, "deadlocks")), 1);
	static const char *const labels[] = { "lock_a", "lock_b" };
	size_t offs[2] = { 0, 0 };
	for (size_t i = 0; i < 2; i++) {
		char want[64];
		size_t off = 0;
		for (size_t k = 0; k < fx.nlines; k++)
			if (sscanf(fx.lines[k], "symoff %63s fx_bss_g %zu", want, &off) == 2 &&
			    !strcmp(want, labels[i]))
				break;
		cr_assert_gt(off, 1u << 19, "the lock is far into .bss");
		json_t *l = lock_at(doc, planted(labels[i]));
		cr_assert(l, "no lock %s", labels[i]);
		json_t *sym = json_object_get(l, "symbol");
		cr_assert(json_is_object(sym), "%s has no symbol (gdb: fx_bss_g + %zu)",
			  labels[i], off);
		cr_assert_str_eq(jstr(sym, "symbol"), "fx_bss_g");
		cr_assert_eq((size_t)json_integer_value(json_object_get(sym, "offset")), off);
		offs[i] = off;
	}
	json_decref(doc);
	/* in the text: symbol+offset, as gdb's "fx_bss_g + 1048616" (lock_b
	 * follows lock_a by a pthread_mutex_t: 40 bytes on x86_64, 48 on
	 * aarch64, so the offset is the one the fixture printed) */
	struct run r;
	run_text(&r, NULL);
	char want[128];
	for (size_t i = 0; i < 2; i++) {
		snprintf(want, sizeof want, "(fx_bss_g+0x%zx, mutex normal)", offs[i]);
		cr_assert(strstr(r.out, want), "missing %s", want);
	}
	run_free(&r);
}

/* ---- defect 2: parks ----------------------------------------------------------- */

Test(services, zero_word_futex_waits_are_not_parks)
{
	fx_start(&fx, "fx_svc_tlsfutex", NULL, 60);
	json_t *doc = run_json(NULL, NULL);
	static const char *const roles[] = { "tls-waiter", "stack-waiter" };
	for (size_t i = 0; i < 2; i++) {
		json_t *b = blocked_on(doc, role_tid(roles[i]));
		cr_assert(json_is_object(b), "%s not blocked", roles[i]);
		char key[64];
		unsigned long f = 0;
		for (size_t k = 0; k < fx.nlines; k++)
			if (sscanf(fx.lines[k], "futex %63s %lx", key, &f) == 2 &&
			    !strcmp(key, roles[i]))
				break;
		cr_assert_eq(jhex(b, "futex"), f);
		cr_assert(json_is_false(json_object_get(b, "parked")), "%s: a false park",
			  roles[i]);
		cr_assert_str_eq(jstr(b, "kind"), "futex");
		cr_assert(json_is_null(json_object_get(b, "note")), "%s: %s", roles[i],
			  jstr(b, "note"));
		/* what the unidentified futex is about: the function that waits */
		cr_assert_str_eq(jstr(b, "caller"), "fx_wait_on");
	}
	cr_assert_eq(json_array_size(json_object_get(doc, "deadlocks")), 0);
	json_decref(doc);
	struct run r;
	run_text(&r, NULL);
	cr_assert(strstr(r.out, "(not identified; owner unknown); futex") ||
		  strstr(r.out, "(not identified; owner unknown) (called from fx_wait_on)"),
		  "%s", r.out);
	cr_assert(strstr(r.out, "(called from fx_wait_on)"), "%s", r.out);
	cr_assert_null(strstr(r.out, "parked"), "%s", r.out);
	run_free(&r);
}

/* ---- defect 3: a busy condvar ------------------------------------------------------ */

Test(services, busy_condvar_is_one_object_at_its_address)
{
	fx_start(&fx, "fx_svc_condbusy", NULL, 120);
	uint64_t cond = planted("work_ready");
	unsigned long mx = 0;
	cr_assert(sscanf(fx_line(&fx, "mutex-of "), "mutex-of work_ready %lx", &mx) == 1);
	char pid[16];
	snprintf(pid, sizeof pid, "%d", (int)fx.pid);
	const char *args[] = { "--json", pid, NULL };
	size_t waiters_seen = 0;
	for (int i = 0; i < 20; i++) {
		json_t *doc;
		if (i % 5 == 0) {
			doc = run_json(NULL, NULL);	/* + schema */
		} else {
			struct run r;
			run_tinspect(&r, args, 60);
			doc = json_loadb(r.out ? r.out : "", r.out_len, 0, NULL);
			cr_assert(doc, "no JSON, exit %d", r.status);
			run_free(&r);
		}
		/* every cond waiter is at the cond itself, never at its futex
		 * word, and the cond is listed once */
		size_t k, nconds = 0;
		json_t *l, *t;
		json_array_foreach(json_object_get(doc, "locks"), k, l) {
			uint64_t a = jhex(l, "addr");
			cr_assert(a < cond || a >= cond + 48 || a == cond,
				  "snapshot %d: the cond listed at +%" PRIu64, i, a - cond);
			if (a == cond) {
				nconds++;
				cr_assert(json_is_true(json_object_get(l, "object_known")));
				cr_assert_str_eq(jstr(l, "kind"), "cond");
				cr_assert_eq(jhex(json_object_get(l, "cond"), "mutex"), mx);
			}
		}
		cr_assert_leq(nconds, 1);
		json_array_foreach(json_object_get(doc, "threads"), k, t) {
			json_t *b = json_object_get(t, "blocked_on");
			if (!json_is_object(b) || jhex(b, "futex") < cond + 40 ||
			    jhex(b, "futex") > cond + 44)
				continue;
			cr_assert_str_eq(jstr(b, "kind"), "cond", "snapshot %d", i);
			cr_assert_eq(jhex(b, "object"), cond, "snapshot %d", i);
			/* proven by the waiter itself, not by counters */
			cr_assert(has_evidence(b, "cleanup"), "snapshot %d", i);
			waiters_seen++;
		}
		json_decref(doc);
	}
	cr_assert_gt(waiters_seen, 100, "hardly any waiter was caught asleep");
}

/* ---- defect 4: what a stall is ----------------------------------------------------- */

Test(services, only_holders_that_cannot_move_on_make_a_stall)
{
	fx_start(&fx, "fx_svc_nostall", NULL, 60);
	json_t *doc = run_json(NULL, NULL);
	json_t *stalls = json_object_get(doc, "stalls");
	cr_assert_eq(json_array_size(stalls), 1, "%zu stalls", json_array_size(stalls));
	json_t *st = json_array_get(stalls, 0);
	json_t *th = json_object_get(st, "threads");
	cr_assert_eq(json_integer_value(json_array_get(th, 0)), role_tid("io-wait"));
	cr_assert_eq(json_integer_value(json_array_get(th, 1)), role_tid("poller"));
	json_t *end = json_object_get(st, "end");
	cr_assert_str_eq(jstr(end, "reason"), "syscall");
	cr_assert_str_eq(jstr(end, "syscall"), SC_POLL);
	/* the holders in nanosleep and in a timed cond wait wake by
	 * themselves: their waiters are only waiting */
	cr_assert_eq(json_integer_value(json_object_get(blocked_on(doc, role_tid("napper-wait")),
							"owner")), role_tid("sleeper"));
	cr_assert_eq(json_integer_value(json_object_get(blocked_on(doc, role_tid("tick-wait")),
							"owner")), role_tid("timed"));
	json_decref(doc);
}

/* ---- defect 5: owner-less primitives ------------------------------------------------- */

Test(services, semaphore_abba_is_reported_as_not_provable)
{
	fx_start(&fx, "fx_svc_semabba", NULL, 60);
	int status;
	const char *check[] = { "--check", NULL };
	json_t *doc = run_json(check, &status);
	cr_assert_eq(status, 0, "no deadlock is claimed without an owner");
	cr_assert_eq(json_array_size(json_object_get(doc, "deadlocks")), 0);
	json_t *b = blocked_on(doc, role_tid("left"));
	cr_assert_str_eq(jstr(b, "kind"), "sem");
	cr_assert_eq(jhex(b, "object"), planted("sem_b"));
	json_decref(doc);
	/* the main thread reads its stdin: it can make progress, so one
	 * snapshot says no more than that they wait (test_verdict.c has
	 * them listed when no thread can progress, or nothing moves) */
	struct run r;
	run_text(&r, NULL);
	cr_assert(strstr(r.out, "No deadlock found.\n  2 threads in untimed "
			 "semaphore waits\n"), "%s", r.out);
	cr_assert(strstr(r.out, "owner not recorded (semaphore)"), "%s", r.out);
	cr_assert_null(strstr(r.out, "nobody owns it"));
	/* both waits shown with their waiter, before the details */
	const char *detail = strstr(r.out, "Threads in detail:");
	cr_assert(detail);
	const char *top = strstr(r.out, "Most contended locks");
	cr_assert(top && top < detail, "%s", r.out);
	char want[64];
	snprintf(want, sizeof want, "Thread %d \"left\"", (int)role_tid("left"));
	const char *w = strstr(r.out, want);
	cr_assert(w && w > detail, "%s", r.out);
	cr_assert(strstr(w, "(sem_b, sem) owner not recorded (semaphore)"), "%s", w);
	run_free(&r);
}

/* ---- defect 6: generated code, runtimes ----------------------------------------------- */

/* Physical frames' symbols of a thread, innermost first. */
static size_t frame_symbols(json_t *t, const char **out, size_t max, size_t *nomodule)
{
	size_t n = 0, i;
	json_t *f;
	*nomodule = 0;
	json_array_foreach(json_object_get(json_object_get(t, "stack"), "frames"), i, f) {
		if (json_is_true(json_object_get(f, "inlined")))
			continue;
		if (json_is_null(json_object_get(f, "module")))
			(*nomodule)++;
		if (n < max)
			out[n++] = jstr(f, "symbol");
	}
	return n;
}

static bool among(const char **v, size_t n, const char *s)
{
	for (size_t i = 0; i < n; i++)
		if (v[i] && !strcmp(v[i], s))
			return true;
	return false;
}

Test(services, stacks_go_on_through_generated_code)
{
	fx_start(&fx, "fx_svc_jit", NULL, 60);
	if (fx_line(&fx, "skip"))
		cr_skip_test("generated code for x86_64 and aarch64 only");
	int status;
	json_t *doc = run_json(NULL, &status);
	cr_assert_eq(status, 0, "a stack that stops in JIT code is no error");
	cr_assert_eq(json_integer_value(json_object_get(json_object_get(doc, "capture"),
							"threads_with_errors")), 0);
	/* frame pointers kept: native frames beyond the generated ones */
	json_t *t = thread_by_tid(doc, role_tid("jit-fp"));
	const char *sy[64];
	size_t nomod;
	size_t n = frame_symbols(t, sy, 64, &nomod);
	cr_assert_eq(nomod, 2, "the two generated frames, marked as outside any module");
	cr_assert(among(sy, n, "fx_jit_callback") && among(sy, n, "fx_jit_enter") &&
		  among(sy, n, "start_thread"), "native frames beyond JIT code not reached");
	json_t *st = json_object_get(t, "stack");
	cr_assert_str_eq(jstr(st, "end"), "complete");
	cr_assert(json_is_null(json_object_get(st, "error")));
	/* no frame pointer: the walk stops at the generated frame, no error */
	t = thread_by_tid(doc, role_tid("jit-nofp"));
	n = frame_symbols(t, sy, 64, &nomod);
	st = json_object_get(t, "stack");
	cr_assert_str_eq(jstr(st, "end"), "unknown_code");
	cr_assert(json_is_null(json_object_get(st, "error")));
	cr_assert(among(sy, n, "fx_jit_callback"));
	cr_assert_geq(nomod, 1);
	cr_assert_eq(json_array_size(json_object_get(t, "errors")), 0);
	json_decref(doc);
	struct run r;
	run_text(&r, NULL);
	cr_assert_eq(r.status, 0);
	cr_assert(strstr(r.out, "?? (outside any module: JIT or generated code)"), "%s", r.out);
	cr_assert(strstr(r.out, "(unwinding stopped in code outside any module"));
	run_free(&r);
}

Test(services, runtimes_whose_locks_are_invisible_are_named)
{
	char lib[4096];
	snprintf(lib, sizeof lib, "%s/libjvm.so", getenv("FIXTURES"));
	const char *args[] = { lib, NULL };
	fx_start(&fx, "fx_svc_runtimes", args, 60);
	json_t *doc = run_json(NULL, NULL);
	json_t *rt = json_object_get(json_object_get(doc, "process"), "runtimes");
	const char *want[] = { "jvm", "cpython", "go" };
	for (size_t k = 0; k < 3; k++) {
		size_t i;
		json_t *e;
		bool found = false;
		json_array_foreach(rt, i, e)
			found |= !strcmp(jstr(e, "name"), want[k]);
		cr_assert(found, "runtime %s not detected", want[k]);
	}
	/* each is a warning too, with advice naming this very PID */
	char jcmd[64];
	snprintf(jcmd, sizeof jcmd, "jcmd %d Thread.print", (int)fx.pid);
	size_t i;
	json_t *w;
	bool found = false;
	json_array_foreach(json_object_get(json_object_get(doc, "capture"), "warnings"), i, w)
		found |= strstr(json_string_value(w), jcmd) != NULL;
	cr_assert(found, "no warning pointing to %s", jcmd);
	json_decref(doc);
	struct run r;
	run_text(&r, NULL);
	const char *warn = strstr(r.out, "warning: a Java virtual machine");
	const char *verdict = strstr(r.out, "Verdict: ");
	cr_assert(warn && verdict && warn < verdict, "the warning comes before the verdict");
	cr_assert(strstr(r.out, "py-spy dump --pid"));
	run_free(&r);
}

/* ---- defect 8: names --------------------------------------------------------------------- */

Test(services, start_routines_without_symbols_are_placed_not_unknown)
{
	fx_start(&fx, "fx_svc_stripped", NULL, 60);
	json_t *doc = run_json(NULL, NULL);
	json_t *t = thread_by_tid(doc, role_tid("tls-waiter"));
	json_t *sr = json_object_get(json_object_get(t, "pthread"), "start_routine");
	cr_assert(json_is_null(json_object_get(sr, "symbol")), "a stripped local function");
	const char *mod = jstr(sr, "module");
	cr_assert(mod && strstr(mod, "fx_svc_stripped"));
	uint64_t off = (uint64_t)json_integer_value(json_object_get(sr, "offset"));
	cr_assert_gt(off, 0);
	json_decref(doc);
	/* watch --summary groups it by module+offset, never "(unknown)" */
	char pid[16];
	snprintf(pid, sizeof pid, "%d", (int)fx.pid);
	const char *args[] = { "--watch", "0.1", "--count", "1", "--summary", "--json",
			       pid, NULL };
	struct run r;
	run_tinspect(&r, args, 60);
	cr_assert_eq(r.status, 0);
	cr_assert(schema_valid(r.out, r.out_len), "the summary line does not validate");
	json_t *line = json_loadb(r.out, r.out_len, JSON_DISABLE_EOF_CHECK, NULL);
	cr_assert(line);
	json_t *by = json_object_get(line, "by_start_routine");
	char key[64];
	snprintf(key, sizeof key, "fx_svc_stripped+0x%" PRIx64, off);
	cr_assert(json_object_get(by, key), "no %s in by_start_routine", key);
	cr_assert_null(json_object_get(by, "(unknown)"));
	json_decref(line);
	run_free(&r);
	/* the text places it in its file too */
	run_text(&r, NULL);
	snprintf(key, sizeof key, "(fx_svc_stripped+0x%" PRIx64 ", no symbol)", off);
	cr_assert(strstr(r.out, key), "%s", r.out);
	run_free(&r);
}

/* ---- the report ------------------------------------------------------------------------ */

Test(services, report_leads_with_the_verdict)
{
	fx_start(&fx, "fx_lock_abba", NULL, 60);
	struct run r;
	run_text(&r, NULL);
	cr_assert_eq(r.status, 0);
	const char *verdict = strstr(r.out, "Verdict: 1 DEADLOCK");
	const char *found = strstr(r.out, "Found one deadlock:");
	const char *counts = strstr(r.out, "Threads: 3 by state: ");
	const char *top = strstr(r.out, "Most contended locks");
	const char *detail = strstr(r.out, "Threads in detail:");
	cr_assert(verdict && found && counts && top && detail, "%s", r.out);
	cr_assert(verdict < found && found < counts && counts < top && top < detail);
	/* the first screen: verdict, counts and locks within 25 lines */
	size_t lines = 0;
	for (const char *p = r.out; p < top; p++)
		lines += *p == '\n';
	cr_assert_lt(lines, 25, "the summary starts %zu lines down", lines);
	/* per-thread CPU and signal lines only with --verbose */
	cr_assert_null(strstr(r.out, "  cpu: "));
	cr_assert_null(strstr(r.out, "  signals: "));
	run_free(&r);
	run_text(&r, "--verbose");
	cr_assert(strstr(r.out, "  cpu: ") && strstr(r.out, "  signals: ") &&
		  strstr(r.out, "freeze breakdown:"));
	run_free(&r);
}

Test(services, brief_is_one_line_per_thread)
{
	fx_start(&fx, "fx_lock_abba", NULL, 60);
	struct run r;
	run_text(&r, "--brief");
	cr_assert_eq(r.status, 0);
	cr_assert_null(strstr(r.out, "Threads in detail:"));
	cr_assert_null(strstr(r.out, "  #0 "), "no stacks with --brief");
	const char *head = strstr(r.out, "     TID  NAME");
	cr_assert(head, "%s", r.out);
	/* tid, name, state, top frame, what it waits on */
	char want[256];
	pid_t pt = 0;
	for (size_t i = 0; i < fx.nlines; i++) {
		int tid;
		if (sscanf(fx.lines[i], "tid post-transfer %d", &tid) == 1)
			pt = tid;
	}
	snprintf(want, sizeof want, "%8d  %-18s %2c  ", (int)pt, "\"post-transfer\"", 'S');
	const char *line = strstr(head, want);
	cr_assert(line, "no line for post-transfer: %s", head);
	const char *eol = strchr(line, '\n');
	cr_assert(eol);
	char *l = strndup(line, (size_t)(eol - line));
	cr_assert(strstr(l, "mutex 0x") && strstr(l, "audit_lock held by "), "%s", l);
	cr_assert(strstr(l, "lll_lock_wait") || strstr(l, "futex_wait") ||
		  strstr(l, "pthread_mutex_lock"), "no top frame: %s", l);
	free(l);
	size_t rows = 0;
	for (const char *p = head; (p = strchr(p, '\n')) && p[1] && p[1] != '\n'; p++)
		rows++;
	cr_assert_eq(rows, 3, "one line per thread");
	run_free(&r);
	const char *bad[] = { "--brief", "--json", "1", NULL };
	run_tinspect(&r, bad, 30);
	cr_assert_eq(r.status, 2, "--brief shapes the text report only");
	run_free(&r);
}

Test(services, identical_stacks_are_printed_once)
{
	const char *args[] = { "8", NULL };
	fx_start(&fx, "fx_svc_condbusy", args, 120);
	struct run r;
	run_text(&r, NULL);
	const char *g = strstr(r.out, "Threads grouped by identical stack");
	const char *detail = strstr(r.out, "Threads in detail:");
	cr_assert(g && detail && g < detail, "%s", r.out);
	cr_assert(strstr(r.out, "stack: as in group "), "group members refer to it");
	run_free(&r);
}

/* ---- exit status and errors agree (defect 7) -------------------------------------------- */

Test(services, a_failed_native_unwind_is_an_error_everywhere)
{
	fx_start(&fx, "fx_badstack", NULL, 30);
	int status;
	json_t *doc = run_json(NULL, &status);
	int tid = 0;
	for (size_t i = 0; i < fx.nlines; i++)
		if (sscanf(fx.lines[i], "bad %d", &tid) == 1)
			break;
	json_t *t = thread_by_tid(doc, tid);
	json_t *st = json_object_get(t, "stack");
	const char *end = jstr(st, "end");
	cr_assert(!strcmp(end, "bad_sp") || !strcmp(end, "error"), "%s", end);
	cr_assert(json_is_string(json_object_get(st, "error")));
	cr_assert_geq(json_array_size(json_object_get(t, "errors")), 1);
	cr_assert_eq(json_integer_value(json_object_get(json_object_get(doc, "capture"),
							"threads_with_errors")), 1);
	cr_assert_eq(status, 1, "README: 1 when a thread could not be fully read");
	json_decref(doc);
}
