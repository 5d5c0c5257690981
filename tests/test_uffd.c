/*
 * test_uffd: memory a read would wait on for ever.  Threads whose stack,
 * struct pthread, TLS or lock neighbourhood lies in a userfaultfd range
 * with pages missing (tests/fixtures/fx_uffd.c): served by a thread of the
 * target (stopped with the rest while tinspect holds it), or by a process
 * that never answers.  tinspect must neither wait there (nor, while the
 * target runs, make the server fill a page: an effect on the target) in
 * any mode, and must report what it did not read as unknown with the
 * reason.  And a range registered behind tinspect's back, after it looked
 * (fx_uffd late): a read does wait then, and SIGTERM and --max-freeze must
 * still end tinspect promptly, the target let go.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"

static struct fixture fx;

static void teardown(void)
{
	fx_kill(&fx);
}

TestSuite(uffd, .fini = teardown, .timeout = 600);

/* userfaultfd for kernel faults: root, or vm.unprivileged_userfaultfd */
static void need_userfaultfd(void)
{
	int fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC);
	if (fd < 0)
		cr_skip_test("userfaultfd: %s", strerror(errno));
	close(fd);
}

static void start(const char *mode)
{
	need_userfaultfd();
	const char *args[] = { mode, NULL };
	fx_start(&fx, "fx_uffd", args, 60);
}

static pid_t reported(const char *prefix)
{
	const char *l = fx_line(&fx, prefix);
	cr_assert(l, "the fixture did not report '%s'", prefix);
	return (pid_t)atoi(l + strlen(prefix));
}

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* TracerPid of every task of pid is 0 (asynchronous after a detach:
 * waited for a moment). */
static bool untraced(pid_t pid)
{
	char dir[64];
	snprintf(dir, sizeof dir, "/proc/%d/task", (int)pid);
	for (int tries = 0; tries < 300; tries++) {
		bool traced = false;
		DIR *d = opendir(dir);
		struct dirent *e;
		while (d && (e = readdir(d))) {
			char path[512], buf[4096];
			if (e->d_name[0] == '.')
				continue;
			snprintf(path, sizeof path, "%s/%s/status", dir, e->d_name);
			if (fx_read_small(path, buf, sizeof buf) < 0)
				continue;
			const char *t = strstr(buf, "TracerPid:");
			if (t && atoi(t + 10) != 0)
				traced = true;
		}
		if (d)
			closedir(d);
		if (!traced)
			return true;
		usleep(10000);
	}
	return false;
}

static void check_running(void)
{
	cr_assert(kill(fx.pid, 0) == 0, "the target is gone");
	cr_assert(wait_not_stopped(fx.pid, 3000), "the target was left stopped");
	cr_assert(untraced(fx.pid), "the target was left traced");
}

/* The faults the inside server answered for tasks of other processes
 * (reads by tinspect). */
static int foreign_faults(void)
{
	fx_send(&fx, "count");
	char *l = fx_read_line(&fx, 30);
	cr_assert(l && !strncmp(l, "foreign ", 8), "no count from the fixture");
	int n = atoi(l + 8);
	free(l);
	return n;
}

/* tinspect --json [extra] PID: it must end by itself (before the fix it
 * waited for ever), status 1 (threads with errors), a valid document. */
static json_t *inspect(const char *const *extra)
{
	const char *args[24];
	size_t n = 0;
	args[n++] = "--json";
	for (; extra && *extra && n < 20; extra++)
		args[n++] = *extra;
	args[n++] = pidstr(fx.pid);
	args[n] = NULL;
	struct run r;
	run_start(&r, args);
	run_wait(&r, 90);
	cr_assert(!r.timed_out, "tinspect waited on the target (killed after 90 s)");
	cr_assert_eq(r.status, 1, "exit %d (signal %d); stderr: %s", r.status, r.sig,
		     r.err ? r.err : "");
	cr_assert(schema_valid(r.out, r.out_len), "output does not validate");
	json_error_t je;
	json_t *doc = json_loadb(r.out, r.out_len, 0, &je);
	cr_assert(doc, "JSON does not parse: %s", je.text);
	run_free(&r);
	return doc;
}

static bool any_has(json_t *arr, const char *needle)
{
	size_t i;
	json_t *v;
	json_array_foreach(arr, i, v)
		if (json_string_value(v) && strstr(json_string_value(v), needle))
			return true;
	return false;
}

static json_t *thread(json_t *doc, const char *prefix)
{
	json_t *t = thread_by_tid(doc, reported(prefix));
	cr_assert(t, "no thread %s in the snapshot", prefix);
	return t;
}

/* A stack that ran into a missing page: an error that says userfaultfd,
 * never "truncated". */
static void check_stack_unread(json_t *t)
{
	json_t *st = json_object_get(t, "stack");
	cr_assert_str_eq(jstr(st, "end"), "error");
	cr_assert(strstr(jstr(st, "error"), "userfaultfd"), "stack error: %s",
		  jstr(st, "error"));
	cr_assert(any_has(json_object_get(t, "errors"), "userfaultfd"));
}

/* The capture's warning: reads stopped at such pages. */
static void check_warned(json_t *doc)
{
	json_t *w = json_object_get(json_object_get(doc, "capture"), "warnings");
	cr_assert(any_has(w, "registered with userfaultfd"), "no warning says why");
}

/* What every mode must show of inside/outside. */
static void check_document(json_t *doc, bool outside)
{
	check_warned(doc);
	check_stack_unread(thread(doc, "hole "));
	if (outside)
		check_stack_unread(thread(doc, "fault "));
	/* its struct pthread is missing: libthread_db could not read it */
	json_t *d = thread(doc, "desc ");
	cr_assert(any_has(json_object_get(d, "errors"), "struct pthread: in memory "
			  "registered with userfaultfd"));
	/* the mutex lies just past a missing page: its words are read all
	 * the same, and its owner is the main thread */
	json_t *b = json_object_get(thread(doc, "lock "), "blocked_on");
	cr_assert_str_eq(jstr(b, "kind"), "mutex");
	cr_assert_eq(json_integer_value(json_object_get(b, "owner")), fx.pid);
}

static void one_shot(const char *mode, const char *const *extra)
{
	start(mode);
	bool outside = !strcmp(mode, "outside");
	json_t *doc = inspect(extra);
	if (!outside)
		cr_assert_eq(foreign_faults(), 0, "tinspect made the target serve pages");
	if (extra && !strcmp(extra[0], "--nonblocking=strict")) {
		/* without ptrace's registers the stacks end where their frame
		 * pointers are needed, and libthread_db's walk of the thread
		 * list (for the thread pointers) stops at desc's missing
		 * struct pthread: what must hold is that nothing waited and
		 * nothing was served, and the warning */
		check_warned(doc);
		json_t *b = json_object_get(thread(doc, "lock "), "blocked_on");
		cr_assert_eq(json_integer_value(json_object_get(b, "owner")), fx.pid);
	} else {
		check_document(doc, outside);
	}
	json_decref(doc);
	check_running();
}

Test(uffd, served_by_a_stopped_thread)
{
	one_shot("inside", NULL);
}

Test(uffd, served_by_nobody)
{
	one_shot("outside", NULL);
}

Test(uffd, nonblocking_neither_waits_nor_makes_pages_served)
{
	const char *extra[] = { "--nonblocking=strict", NULL };
	one_shot("inside", extra);
	teardown();
	one_shot("outside", extra);
}

Test(uffd, tls_keys_errno_say_why)
{
	start("inside");
	const char *extra[] = { "--keys", "--errno", "--tls", "fx_uffd_tls", NULL };
	json_t *doc = inspect(extra);
	check_document(doc, false);
	json_t *d = thread(doc, "desc ");
	json_t *v = json_object_get(json_object_get(d, "tls"), "fx_uffd_tls");
	cr_assert_str_eq(jstr(v, "status"), "error");
	cr_assert(strstr(jstr(v, "error"), "userfaultfd"), "%s", jstr(v, "error"));
	cr_assert(any_has(json_object_get(d, "errors"), "keys: cannot read the "
			  "thread's specific[] (its struct pthread: in memory "
			  "registered with userfaultfd"));
	/* the other threads' values are read */
	json_t *h = thread(doc, "hole ");
	v = json_object_get(json_object_get(h, "tls"), "fx_uffd_tls");
	cr_assert_str_eq(jstr(v, "status"), "ok");
	json_decref(doc);
	check_running();
	cr_assert_eq(foreign_faults(), 0, "tinspect made the target serve pages");
}

Test(uffd, watch_follow_threads)
{
	start("outside");
	const char *opts[] = { "--json", "--watch", "0.2", "--count", "3",
			       "--follow-threads", NULL };
	struct fixture w = { 0 };
	fx_spawn_tinspect_on(&w, opts, fx.pid);
	struct kept_lines k = { 0 };
	int snapshots = 0;
	json_t *line;
	while ((line = kept_next_line(&w, &k, 90))) {
		if (json_object_get(line, "threads")) {
			check_document(line, true);
			snapshots++;
		}
		json_decref(line);
	}
	cr_assert_eq(snapshots, 3, "%d snapshots of 3 before the stream ended",
		     snapshots);
	fx_kill(&w);
	kept_validate(&k);
	kept_free(&k);
	check_running();
}

/* ---- a range registered after tinspect looked ---------------------------------- */

/* Is some thread of tinspect waiting for a page fault to be served? */
static bool waits_in_userfault(pid_t pid)
{
	char dir[64];
	snprintf(dir, sizeof dir, "/proc/%d/task", (int)pid);
	DIR *d = opendir(dir);
	struct dirent *e;
	bool found = false;
	while (d && !found && (e = readdir(d))) {
		char path[512], buf[128];
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof path, "%s/%s/wchan", dir, e->d_name);
		found = fx_read_small(path, buf, sizeof buf) > 0 &&
			strstr(buf, "handle_userfault");
	}
	if (d)
		closedir(d);
	return found;
}

/* Start tinspect with args on fx_uffd late and wait until it waits on the
 * page (the child registered the range once the target was held). */
static void start_wedged(struct run *r, const char *const *opts)
{
	start("late");
	const char *args[24];
	size_t n = 0;
	for (; *opts && n < 20; opts++)
		args[n++] = *opts;
	args[n++] = pidstr(fx.pid);
	args[n] = NULL;
	run_start(r, args);
	char *l = fx_read_line(&fx, 60);
	cr_assert(l && !strcmp(l, "registered"), "the range was not registered");
	free(l);
	uint64_t t0 = now_ms();
	while (!waits_in_userfault(r->pid) && now_ms() - t0 < 60000)
		usleep(10000);
	cr_assert(waits_in_userfault(r->pid), "tinspect never waited on the page");
}

static void sigterm_ends_a_wedged(const char *const *opts)
{
	struct run r;
	start_wedged(&r, opts);
	uint64_t t0 = now_ms();
	kill(r.pid, SIGTERM);
	run_wait(&r, 30);
	uint64_t took = now_ms() - t0;
	cr_assert(!r.timed_out, "SIGTERM did not end tinspect");
	cr_assert_eq(r.sig, SIGTERM, "exit %d, signal %d", r.status, r.sig);
	/* about 0.75 s; the bound only keeps a loaded machine from failing it */
	cr_assert(took < 10000, "SIGTERM took %llu ms", (unsigned long long)took);
	run_free(&r);
	check_running();
}

Test(uffd, sigterm_ends_a_read_that_waits)
{
	const char *opts[] = { "--json", "--stop-timeout", "500", NULL };
	sigterm_ends_a_wedged(opts);
}

Test(uffd, sigterm_ends_a_watch_whose_read_waits)
{
	const char *opts[] = { "--json", "--watch", "0.2", "--follow-threads",
			       "--stop-timeout", "500", NULL };
	sigterm_ends_a_wedged(opts);
}

Test(uffd, max_freeze_ends_a_read_that_waits)
{
	struct run r;
	const char *opts[] = { "--json", "--max-freeze", "1000", "--stop-timeout",
			       "500", NULL };
	start_wedged(&r, opts);
	run_wait(&r, 60);
	cr_assert(!r.timed_out, "--max-freeze did not end tinspect");
	cr_assert_eq(r.status, 7, "exit %d, signal %d; stderr: %s", r.status, r.sig,
		     r.err ? r.err : "");
	cr_assert(r.err && strstr(r.err, "does not return"), "stderr: %s",
		  r.err ? r.err : "");
	run_free(&r);
	check_running();
}
