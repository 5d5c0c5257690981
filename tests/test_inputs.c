/*
 * test_inputs: what the user hands tinspect and what it finds instead of a
 * process: option values that are no numbers, PIDs with blanks
 * or signs, a kernel thread and a non-dumpable process seen by a user
 * without privileges, a zombie; and output for line-oriented readers (no
 * raw U+2028/U+2029 inside JSON strings).  The real tinspect on real
 * processes, as every live suite.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

static struct fixture fx;
static pid_t zombie;

static void teardown(void)
{
	if (zombie > 0) {
		waitpid(zombie, NULL, 0);
		zombie = 0;
	}
	fx_kill(&fx);
}

TestSuite(inputs, .fini = teardown, .timeout = 300 * TEST_TIME_SCALE);

/* tinspect as user nobody, without any capability */
static const char *const as_nobody[] = { "/usr/bin/setpriv", "--reuid=65534",
	"--regid=65534", "--clear-groups", "--inh-caps=-all", NULL };

static void expect_usage_error(const char *const *args, const char *what)
{
	struct run r;
	run_tinspect(&r, args, 30);
	cr_assert_eq(r.status, 2, "%s: exit %d: %s", what, r.status, r.err);
	cr_assert(r.err && strstr(r.err, what), "%s: %s", what, r.err);
	run_free(&r);
}

Test(inputs, watch_interval_must_be_a_plain_positive_number)
{
	fx_start(&fx, "fx_threads", NULL, 30);
	/* nan ran updates back to back; inf, huge and negative values, an
	 * exponent, hex, blanks and signs are no interval either */
	const char *bad[] = { "nan", "NaN", "inf", "-inf", "-1", "0", "1e3",
			      "0x10", " 1", "+1", "1 ", "100000", "1e400", "",
			      ".", "1.2.3", "0.0000000000001" };
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		const char *args[] = { "--watch", bad[i], "--count", "1",
				       pidstr(fx.pid), NULL };
		expect_usage_error(args, "--watch");
	}
	const char *args[] = { "--max-freeze", "nan", pidstr(fx.pid), NULL };
	expect_usage_error(args, "--max-freeze");
	const char *args2[] = { "--count", " 2", "--watch", "1", pidstr(fx.pid), NULL };
	expect_usage_error(args2, "--count");

	/* and a good one still works */
	struct run r;
	const char *ok[] = { "--watch", ".05", "--count", "2", "--json",
			     "--summary", pidstr(fx.pid), NULL };
	run_tinspect(&r, ok, 60);
	cr_assert_eq(r.status, 0, "exit %d: %s", r.status, r.err);
	size_t lines = 0;
	for (const char *p = r.out; p && *p; p++)
		lines += *p == '\n';
	cr_assert_eq(lines, 2, "two summary lines: %s", r.out);
	run_free(&r);
	cr_assert(wait_not_stopped(fx.pid, 1000));
}

Test(inputs, pid_must_be_decimal_digits)
{
	fx_start(&fx, "fx_threads", NULL, 30);
	char sp[32], plus[32], trail[32], hex[32];
	snprintf(sp, sizeof sp, " %d", (int)fx.pid);
	snprintf(plus, sizeof plus, "+%d", (int)fx.pid);
	snprintf(trail, sizeof trail, "%d ", (int)fx.pid);
	snprintf(hex, sizeof hex, "0x%x", (unsigned)fx.pid);
	const char *bad[] = { sp, plus, trail, hex, "-1", "0", "", "99999999999" };
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		const char *args[] = { "--no-stacks", "--", bad[i], NULL };
		expect_usage_error(args, "not a PID");
	}
	/* the same PID in digits is inspected */
	int status;
	const char *extra[] = { "--no-stacks", NULL };
	json_t *doc = inspect_json(fx.pid, extra, &status);
	cr_assert_eq(status, 0);
	json_decref(doc);
	cr_assert(!any_task_stopped(fx.pid));
}

/* A kernel thread visible here (kthreadd is PID 2 on the host; a PID
 * namespace may show none), from the PF_KTHREAD bit of its stat flags. */
static pid_t find_kernel_thread(void)
{
	DIR *d = opendir("/proc");
	cr_assert(d);
	struct dirent *de;
	pid_t found = 0;
	while (!found && (de = readdir(d))) {
		char path[300], buf[1024];
		pid_t pid = (pid_t)atoi(de->d_name);
		if (pid <= 0)
			continue;
		snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
		FILE *f = fopen(path, "r");
		if (!f)
			continue;
		size_t n = fread(buf, 1, sizeof buf - 1, f);
		fclose(f);
		buf[n] = '\0';
		const char *rp = strrchr(buf, ')');
		unsigned long flags;
		if (rp && sscanf(rp + 2, "%*c %*d %*d %*d %*d %*d %lu", &flags) == 1 &&
		    (flags & 0x00200000ul))
			found = pid;
	}
	closedir(d);
	return found;
}

Test(inputs, kernel_thread_is_named_for_root_and_for_nobody)
{
	pid_t k = find_kernel_thread();
	if (!k)
		cr_skip_test("no kernel thread visible in this PID namespace");
	struct run r;
	const char *args[] = { pidstr(k), NULL };
	run_tinspect(&r, args, 30);
	cr_assert_eq(r.status, 5, "root: exit %d: %s", r.status, r.err);
	cr_assert(strstr(r.err, "kernel thread"), "root: %s", r.err);
	run_free(&r);
	/* a user cannot read its exe or maps: it said "no process" */
	run_start_as(&r, as_nobody, args);
	run_wait(&r, 30);
	cr_assert_eq(r.status, 5, "nobody: exit %d: %s", r.status, r.err);
	cr_assert(strstr(r.err, "kernel thread"), "nobody: %s", r.err);
	run_free(&r);
}

Test(inputs, own_non_dumpable_process_says_not_dumpable)
{
	/* the fixture runs as nobody too, and makes itself non-dumpable:
	 * only CAP_SYS_PTRACE may trace it, even for its own user */
	char fxpath[4096];
	snprintf(fxpath, sizeof fxpath, "%s", fixture_path("fx_threads"));
	const char *args[] = { "--reuid=65534", "--regid=65534", "--clear-groups",
			       fxpath, "--undumpable", "alpha:", NULL };
	fx_start_path(&fx, "/usr/bin/setpriv", args, 30);
	struct run r;
	const char *targs[] = { pidstr(fx.pid), NULL };
	run_start_as(&r, as_nobody, targs);
	run_wait(&r, 30);
	cr_assert_eq(r.status, 4, "exit %d: %s", r.status, r.err);
	cr_assert(strstr(r.err, "not dumpable"), "%s", r.err);
	cr_assert_null(strstr(r.err, "security module"), "%s", r.err);
	run_free(&r);
	/* root may, and the process runs on */
	int status;
	const char *extra[] = { "--no-stacks", NULL };
	json_t *doc = inspect_json(fx.pid, extra, &status);
	cr_assert_eq(status, 0);
	json_decref(doc);
	cr_assert(!any_task_stopped(fx.pid));
}

Test(inputs, zombie_is_no_process_and_says_zombie)
{
	/* our own child, exited and not reaped: a zombie until teardown */
	zombie = fork();
	cr_assert(zombie >= 0);
	if (zombie == 0)
		_exit(0);
	cr_assert(wait_state(zombie, zombie, 'Z', 5000), "no zombie");
	struct run r;
	const char *args[] = { pidstr(zombie), NULL };
	run_tinspect(&r, args, 30);
	cr_assert_eq(r.status, 3, "exit %d: %s", r.status, r.err);
	cr_assert(strstr(r.err, "zombie"), "%s", r.err);
	char parent[64];
	snprintf(parent, sizeof parent, "parent (PID %d)", (int)getpid());
	cr_assert(strstr(r.err, parent), "%s", r.err);
	run_free(&r);
	/* gone for good: no such process */
	waitpid(zombie, NULL, 0);
	pid_t z = zombie;
	zombie = 0;
	run_tinspect(&r, (const char *const[]){ pidstr(z), NULL }, 30);
	cr_assert_eq(r.status, 3, "exit %d: %s", r.status, r.err);
	cr_assert(strstr(r.err, "no process"), "%s", r.err);
	run_free(&r);
}

Test(inputs, line_separators_in_names_are_escaped)
{
	/* names "a<U+2028>b<U+2029>c" and "<U+2028><U+2028>" */
	const char *args[] = { "alpha:61e280a862e280a963", "beta:e280a8e280a8", NULL };
	fx_start(&fx, "fx_threads", args, 30);
	const char *targs[] = { "--json", pidstr(fx.pid), NULL };
	struct run r;
	run_tinspect(&r, targs, 60);
	cr_assert_eq(r.status, 0, "exit %d: %s", r.status, r.err);
	cr_assert_null(memmem(r.out, r.out_len, "\xe2\x80\xa8", 3), "raw U+2028");
	cr_assert_null(memmem(r.out, r.out_len, "\xe2\x80\xa9", 3), "raw U+2029");
	cr_assert(strstr(r.out, "\"a\\u2028b\\u2029c\""), "%s", r.out);
	cr_assert(schema_valid(r.out, r.out_len));
	json_error_t je;
	json_t *doc = json_loadb(r.out, r.out_len, 0, &je);
	cr_assert(doc, "%s", je.text);
	/* and readers get the name back exactly */
	bool a = false, b = false;
	size_t i;
	json_t *t;
	json_array_foreach(json_object_get(doc, "threads"), i, t) {
		const char *n = json_string_value(json_object_get(t, "name"));
		a |= n && !strcmp(n, "a\xe2\x80\xa8" "b\xe2\x80\xa9" "c");
		b |= n && !strcmp(n, "\xe2\x80\xa8\xe2\x80\xa8");
	}
	cr_assert(a && b, "names not read back");
	json_decref(doc);
	run_free(&r);

	/* watch mode's lines, one per update: no reader splits them */
	const char *wargs[] = { "--json", "--watch", "0.05", "--count", "2",
				pidstr(fx.pid), NULL };
	run_tinspect(&r, wargs, 60);
	cr_assert_eq(r.status, 0, "exit %d: %s", r.status, r.err);
	cr_assert_null(memmem(r.out, r.out_len, "\xe2\x80\xa8", 3), "raw U+2028");
	cr_assert_null(memmem(r.out, r.out_len, "\xe2\x80\xa9", 3), "raw U+2029");
	size_t lines = 0;
	for (const char *p = r.out; *p; p++)
		lines += *p == '\n';
	cr_assert_eq(lines, 2);
	run_free(&r);
	cr_assert(!any_task_stopped(fx.pid));
}
