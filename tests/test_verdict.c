/*
 * test_verdict: when waits that record no owner are worth a line of the
 * verdict.  A healthy pool (idle condvar waiters and workers that work)
 * is "No deadlock found" with its idle waits counted below, in text and
 * JSON, one-shot and in every update of a watch; a semaphore ABBA is
 * counted the same way while another thread can make progress, listed
 * when no thread can (its main thread joins), and listed from the second
 * update of a watch in which nothing moved, with whether each wait is the
 * one of the previous update; the Python threading.Lock example only
 * where a CPython runtime was found; a SIGSTOPped process is said to be
 * stopped; the stack-group header of a pool on two shared condvars.
 */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "harness.h"

static struct fixture fx;

static void teardown(void)
{
	if (fx.pid > 0)
		kill(fx.pid, SIGCONT);
	fx_kill(&fx);
}

TestSuite(verdict, .fini = teardown, .timeout = 300);

static json_t *verdict_of(json_t *doc)
{
	json_t *v = json_object_get(doc, "verdict");
	cr_assert(json_is_object(v), "no verdict in the document");
	return v;
}

static json_int_t jint(json_t *o, const char *k)
{
	json_t *v = json_object_get(o, k);
	cr_assert(json_is_integer(v), "%s is no integer", k);
	return json_integer_value(v);
}

/* tinspect [opts...] PID, text; the caller frees r. */
static void run_text(struct run *r, const char *const *opts)
{
	const char *args[16];
	size_t n = 0;
	for (; opts && opts[n] && n < 14; n++)
		args[n] = opts[n];
	args[n++] = pidstr(fx.pid);
	args[n] = NULL;
	run_tinspect(r, args, 240);
	cr_assert(r->out && r->status == 0, "exit %d: %s", r->status,
		  r->err ? r->err : "");
}

/* The text between the verdict and the thread details. */
static char *first_screen(const char *out)
{
	const char *v = strstr(out, "Verdict: ");
	cr_assert(v, "no verdict:\n%s", out);
	const char *end = strstr(v, "Threads in detail:");
	return strndup(v, end ? (size_t)(end - v) : strlen(v));
}

static size_t count(const char *s, const char *what)
{
	size_t n = 0;
	for (const char *p = s; (p = strstr(p, what)); p += strlen(what))
		n++;
	return n;
}

/* ---- a healthy pool -------------------------------------------------------------- */

Test(verdict, healthy_pool_is_no_deadlock_found_with_its_idle_waits_counted)
{
	const char *args[] = { "--idle", "8", "--workers", "2", NULL };
	fx_start(&fx, "fx_pool", args, 60);
	struct run r;
	run_text(&r, NULL);
	char *s = first_screen(r.out);
	cr_assert(strstr(s, "Verdict: no deadlock, no orphaned lock, no stall\n"), "%s", s);
	cr_assert(strstr(s, "\nNo deadlock found.\n  8 threads idle in untimed "
			 "condition-variable waits\n"), "%s", s);
	cr_assert_null(strstr(s, "POSSIBLE"), "%s", s);
	cr_assert_null(strstr(s, "may be waiting for each other"), "%s", s);
	cr_assert_null(strstr(s, "threading.Lock"), "no CPython here:\n%s", s);
	free(s);
	run_free(&r);

	int status;
	json_t *doc = inspect_json(fx.pid, NULL, &status);
	cr_assert_eq(status, 0);
	json_t *v = verdict_of(doc);
	cr_assert_str_eq(jstr(v, "deadlock"), "none_found");
	cr_assert(json_is_false(json_object_get(v, "process_stopped")));
	json_t *u = json_object_get(v, "undecided");
	cr_assert_eq(jint(u, "threads"), 8);
	cr_assert(json_is_false(json_object_get(u, "listed")));
	cr_assert(json_is_null(json_object_get(u, "reason")));
	cr_assert(json_is_null(json_object_get(u, "same_as_previous_update")));
	json_t *k = json_array_get(json_object_get(u, "by_kind"), 0);
	cr_assert_str_eq(jstr(k, "kind"), "cond");
	cr_assert_eq(jint(k, "threads"), 8);
	json_t *p = json_object_get(v, "progress");
	cr_assert_eq(jint(p, "inside"), 8, "the idle threads");
	cr_assert_eq(jint(p, "outside"), 1, "main reads its stdin");
	cr_assert_eq(jint(p, "running") + jint(p, "timed"), 2, "the workers");
	json_decref(doc);
}

Test(verdict, a_watch_of_a_healthy_pool_never_lists_its_idle_waits)
{
	const char *args[] = { "--idle", "8", "--workers", "2", NULL };
	fx_start(&fx, "fx_pool", args, 60);
	const char *opts[] = { "--watch", "0.3", "--count", "3", NULL };
	struct run r;
	run_text(&r, opts);
	cr_assert_eq(count(r.out, "\nNo deadlock found.\n  8 threads idle in untimed "
			   "condition-variable waits"), 3, "%s", r.out);
	/* updates 2 and 3 say how many are the waits of the update before */
	cr_assert_eq(count(r.out, "condition-variable waits (8 in the same wait as at "
			   "the previous update)"), 2, "%s", r.out);
	cr_assert_null(strstr(r.out, "POSSIBLE"), "%s", r.out);
	cr_assert_null(strstr(r.out, "--watch 2"), "a watch told to run a watch");
	run_free(&r);
}

/* ---- a semaphore ABBA ---------------------------------------------------------------- */

/* "tid ROLE TID" of the fixture */
static pid_t role_tid(const char *role)
{
	for (size_t i = 0; i < fx.nlines; i++) {
		char rl[64];
		int tid;
		if (sscanf(fx.lines[i], "tid %63s %d", rl, &tid) == 2 && !strcmp(rl, role))
			return tid;
	}
	cr_assert_fail("fixture reported no role %s", role);
	return 0;
}

Test(verdict, semaphore_abba_beside_a_thread_that_can_progress_is_counted)
{
	fx_start(&fx, "fx_svc_semabba", NULL, 60);
	struct run r;
	run_text(&r, NULL);
	char *s = first_screen(r.out);
	cr_assert(strstr(s, "\nNo deadlock found.\n  2 threads in untimed "
			 "semaphore waits\n"), "%s", s);
	cr_assert_null(strstr(s, "POSSIBLE"), "%s", s);
	free(s);
	run_free(&r);
}

/* Wait until the main thread of the fixture sleeps in futex(2) (the join
 * it makes after "ready"). */
static void wait_main_in_futex(void)
{
	char path[64], buf[256];
	snprintf(path, sizeof path, "/proc/%d/task/%d/syscall", (int)fx.pid,
		 (int)fx.pid);
	for (int i = 0; i < 60000; i++) {
		if (fx_read_small(path, buf, sizeof buf) > 0 &&
		    atol(buf) == SYS_futex && task_state(fx.pid, fx.pid) == 'S')
			return;
		usleep(1000);
	}
	cr_assert_fail("the main thread never slept in its join");
}

static void no_progress_listed(const char *fixture, bool cpython)
{
	const char *args[] = { "--hang", NULL };
	fx_start(&fx, fixture, args, 60);
	wait_main_in_futex();
	struct run r;
	run_text(&r, NULL);
	char *s = first_screen(r.out);
	cr_assert(strstr(s, "Verdict: POSSIBLE DEADLOCK"), "%s", s);
	cr_assert(strstr(s, "No thread of the process can make progress"), "%s", s);
	cr_assert_null(strstr(s, "No deadlock found"), "%s", s);
	char want[64];
	snprintf(want, sizeof want, "waiters: %d\n", (int)role_tid("left"));
	cr_assert(strstr(s, want), "the wait of left is not listed:\n%s", s);
	snprintf(want, sizeof want, "waiters: %d\n", (int)role_tid("right"));
	cr_assert(strstr(s, want), "the wait of right is not listed:\n%s", s);
	cr_assert_null(strstr(s, "[the same as"), "one-shot: no previous update");
	if (cpython)
		cr_assert(strstr(s, "ABBA is two semaphore waits"), "%s", s);
	else
		cr_assert_null(strstr(r.out, "threading.Lock"), "no CPython here:\n%s",
			       r.out);
	free(s);
	run_free(&r);

	int status;
	json_t *doc = inspect_json(fx.pid, NULL, &status);
	json_t *v = verdict_of(doc);
	cr_assert_str_eq(jstr(v, "deadlock"), "possible");
	json_t *u = json_object_get(v, "undecided");
	cr_assert(json_is_true(json_object_get(u, "listed")));
	cr_assert_str_eq(jstr(u, "reason"), "no_thread_can_make_progress");
	cr_assert_eq(jint(u, "threads"), 2);
	cr_assert_eq(jint(json_object_get(v, "progress"), "inside"), 3);
	json_decref(doc);
}

Test(verdict, semaphore_abba_where_no_thread_can_progress_is_listed)
{
	no_progress_listed("fx_svc_semabba", false);
}

Test(verdict, the_python_example_only_where_cpython_was_found)
{
	no_progress_listed("fx_svc_semabba_py", true);
}

Test(verdict, waits_that_persist_while_nothing_moves_are_listed_in_a_watch)
{
	fx_start(&fx, "fx_svc_semabba", NULL, 60);
	const char *opts[] = { "--watch", "0.5", "--count", "2", NULL };
	struct run r;
	run_text(&r, opts);
	const char *u2 = strstr(r.out, "--- update 2 ---");
	cr_assert(u2, "%s", r.out);
	/* update 1 has nothing to compare with */
	cr_assert(strstr(r.out, "No deadlock found.") < u2, "%s", r.out);
	cr_assert_null(strstr(u2, "No deadlock found."), "%s", u2);
	cr_assert(strstr(u2, "Verdict: POSSIBLE DEADLOCK"), "%s", u2);
	cr_assert(strstr(u2, "Nothing in the process moved since the previous update"),
		  "%s", u2);
	cr_assert_eq(count(u2, "[the same as at the previous update]"), 2, "%s", u2);
	cr_assert_null(strstr(r.out, "--watch 2"), "a watch told to run a watch");
	run_free(&r);

	const char *jopts[] = { "--watch", "0.5", "--count", "2", "--json", NULL };
	run_text(&r, jopts);
	cr_assert(schema_valid(r.out, r.out_len));
	char *second = strchr(r.out, '\n');
	cr_assert(second);
	json_t *doc = json_loads(second + 1, 0, NULL);
	cr_assert(doc);
	json_t *v = verdict_of(doc);
	cr_assert_str_eq(jstr(v, "deadlock"), "possible");
	json_t *u = json_object_get(v, "undecided");
	cr_assert_str_eq(jstr(u, "reason"), "nothing_moved_since_previous_update");
	cr_assert_eq(jint(u, "same_as_previous_update"), 2);
	json_decref(doc);
	run_free(&r);
}

/* ---- a process stopped by job control ------------------------------------------------- */

Test(verdict, a_sigstopped_process_is_said_to_be_stopped)
{
	const char *args[] = { "--idle", "4", "--workers", "1", NULL };
	fx_start(&fx, "fx_pool", args, 60);
	kill(fx.pid, SIGSTOP);
	cr_assert(wait_state(fx.pid, fx.pid, 'T', 10000), "not stopped");
	struct run r;
	run_text(&r, NULL);
	char *s = first_screen(r.out);
	cr_assert(strstr(s, "; the process is STOPPED by job control (SIGSTOP or "
			 "SIGTSTP): nothing in it runs until it gets SIGCONT\n"),
		  "%s", s);
	free(s);
	run_free(&r);
	int status;
	json_t *doc = inspect_json(fx.pid, NULL, &status);
	json_t *v = verdict_of(doc);
	cr_assert(json_is_true(json_object_get(v, "process_stopped")));
	cr_assert_eq(jint(v, "threads_stopped"), 6);
	cr_assert_eq(jint(json_object_get(v, "progress"), "stopped"), 6);
	json_decref(doc);
	/* still stopped as it was: the job-control stop is the target's */
	cr_assert_eq(task_state(fx.pid, fx.pid), 'T');
	kill(fx.pid, SIGCONT);
	cr_assert(wait_not_stopped(fx.pid, 10000));
}

/* ---- the stack groups of a pool on shared condvars -------------------------------------- */

Test(verdict, a_group_on_two_shared_conds_is_not_each_on_its_own)
{
	const char *args[] = { "--idle", "6", "--conds", "2", "--workers", "1", NULL };
	fx_start(&fx, "fx_pool", args, 60);
	unsigned long c0 = 0, c1 = 0;
	for (size_t i = 0; i < fx.nlines; i++) {
		sscanf(fx.lines[i], "cond 0 %lx", &c0);
		sscanf(fx.lines[i], "cond 1 %lx", &c1);
	}
	cr_assert(c0 && c1);
	struct run r;
	run_text(&r, NULL);
	char want[160];
	snprintf(want, sizeof want, "Group 1: 6 threads [S 6], waiting on 2 conds: "
		 "3 on 0x%lx (conds), 3 on 0x%lx (conds+0x30)\n", c0, c1);
	cr_assert(strstr(r.out, want), "want '%s' in:\n%s", want, r.out);
	cr_assert_null(strstr(r.out, "cond of its own"), "%s", r.out);
	run_free(&r);
	fx_kill(&fx);

	/* each on a cond of its own: said so */
	const char *own[] = { "--idle", "4", "--conds", "4", "--workers", "0", NULL };
	fx_start(&fx, "fx_pool", own, 60);
	run_text(&r, NULL);
	cr_assert(strstr(r.out, "Group 1: 4 threads [S 4], each waiting on a cond of "
			 "its own\n"), "%s", r.out);
	run_free(&r);
}
