/*
 * test_stall: a target whose /usr/lib/debug is a FUSE mount nobody serves
 * (fx_fuse_stall, in a mount namespace of its own, root only).  The
 * build-id lookup of its executable's debug file through /proc/PID/root
 * never returns: before, tinspect waited for ever (one-shot), ignored
 * SIGTERM (--nonblocking), and held every thread the target created
 * meanwhile (--watch --follow-threads).
 *
 * The fixture reports how many FUSE requests wait on the mount (fusectl),
 * so each test knows when tinspect's lookup is stuck: then the target
 * must be running (nothing held while a file is awaited), tinspect must
 * give up within its bound and say so, or end at once on SIGTERM, and a
 * followed target's new threads must keep coming.
 *
 * fx_fuse_serve serves its own debug file over FUSE from one of its
 * threads: found there, it is read (through a copy in memory: tinspect
 * never holds a file of such a mount) and its source lines show; and when
 * the server stops answering once the file is open, tinspect gives up on
 * it within the bound too (before, it waited for ever in a page fault of
 * the mapped file, and then again in the close of its exit).
 *
 * fx_fuse_lib dlopens a library from a FUSE mount it serves, a thread
 * waiting inside it, and leaves unanswered every open of the library after
 * the one tinspect reads its symbols from: libdwfl's own open of it
 * (find_elf) then stalls, and the stack through the library must say
 * which file and why, not libdwfl's "Callback returned failure".  When
 * that open fails once and not again (--fail-once: the server answers it
 * EMFILE), the next update of a watch must open it again: libdwfl
 * remembers a module's failed open for the module's life.
 *
 * Teardown unmounts the FUSE mount in the fixture's namespace (umount -l
 * through nsenter) and kills the fixture by PID, which also aborts the
 * connection: whatever still waits on it fails (tinspect's file helper
 * among them, which then ends).
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"

static struct fixture fx, tin;	/* the target, a watching tinspect */
static struct kept_lines stream;	/* tin's lines, for the schema */
static const char *mountpoint = "/usr/lib/debug";	/* the fixture's */
static long waiting = -1, baseline = -1;	/* FUSE requests waiting */
static uint64_t waiting_ms;	/* since when (CLOCK_MONOTONIC) */
static long spawned = -1;

static void teardown(void)
{
	if (fx.pid > 0) {
		char target[16];
		snprintf(target, sizeof target, "%d", (int)fx.pid);
		const char *argv[] = { "nsenter", "--target", target, "--mount",
				       "umount", "-l", mountpoint, NULL };
		if (run_quiet(argv) != 0)
			fprintf(stderr, "test_stall: could not unmount the FUSE "
				"mount of %d (it goes with the process)\n",
				(int)fx.pid);
	}
	fx_kill(&tin);
	kept_free(&stream);
	fx_kill(&fx);
	waiting = baseline = spawned = -1;
	mountpoint = "/usr/lib/debug";
}

TestSuite(stall, .fini = teardown, .timeout = 600);

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Take in one line of the fixture's; false on timeout. */
static bool take_line(int timeout_s)
{
	char *l = fx_read_line(&fx, timeout_s);
	if (!l)
		return false;
	if (!strncmp(l, "fuse_waiting ", 13)) {
		char *end;
		waiting = strtol(l + 13, &end, 10);
		waiting_ms = strtoull(end, NULL, 10);
	}
	else if (!strncmp(l, "spawned ", 8))
		spawned = atol(l + 8);
	free(l);
	return true;
}

static void start(const char *const *args)
{
	if (geteuid() != 0 || access("/dev/fuse", R_OK | W_OK) != 0)
		cr_skip("mounting FUSE needs root and /dev/fuse");
	fx_start(&fx, "fx_fuse_stall", args, 30);
	const char *l = fx_line(&fx, "fuse_waiting ");
	if (l)
		waiting = atol(l + 13);	/* the count only: a baseline */
	while (waiting < 0)
		cr_assert(take_line(30), "the fixture never counted FUSE requests");
	baseline = waiting;
}

/* Wait until a lookup of tinspect's waits on the mount. */
static void wait_stuck(void)
{
	uint64_t until = now_ms() + 120000;
	while (waiting <= baseline && now_ms() < until)
		take_line(5);
	cr_assert(waiting > baseline, "tinspect never looked under the FUSE mount");
}

/* TracerPid of every task of the fixture is 0. */
static bool untraced(void)
{
	char dir[64];
	snprintf(dir, sizeof dir, "/proc/%d/task", (int)fx.pid);
	DIR *d = opendir(dir);
	struct dirent *e;
	bool traced = false;
	while (d && (e = readdir(d))) {
		char path[512], buf[4096];
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof path, "%s/%s/status", dir, e->d_name);
		const char *t = fx_read_small(path, buf, sizeof buf) > 0
					? strstr(buf, "TracerPid:") : NULL;
		traced |= t && atoi(t + 10) != 0;
	}
	if (d)
		closedir(d);
	return !traced;
}

/* Nothing of the fixture stopped, nothing traced (after a detach the
 * kernel lets go asynchronously: waited for a moment). */
static void check_free(void)
{
	cr_assert(wait_not_stopped(fx.pid, 2000), "the target is held");
	bool ok = false;
	for (int i = 0; i < 200 && !(ok = untraced()); i++)
		usleep(10000);
	cr_assert(ok, "the target is still traced");
}

/* Threads keep being created (one every 5 ms, and each creation waits
 * for tinspect twice while it follows them: on a loaded machine that is
 * slow, but never nothing). */
static void check_spawning(void)
{
	fx_send(&fx, "count");
	spawned = -1;
	while (spawned < 0)
		cr_assert(take_line(10), "no answer to count");
	long first = spawned;
	uint64_t until = now_ms() + 60000;
	while (spawned < first + 5 && now_ms() < until) {
		usleep(50000);
		fx_send(&fx, "count");
		long before = spawned;
		while (spawned == before && take_line(10))
			;
	}
	cr_assert(spawned >= first + 5, "the target created %ld threads in 60 s "
		  "(held at their first stop?)", spawned - first);
}

/* Whether tinspect (r) ended by itself within secs (it may be a zombie
 * not reaped yet).  If not, the fixture is killed, which aborts its FUSE
 * connection: a process stuck on the mount, even in its exit, is let go,
 * and run_wait() cannot wait for ever. */
static bool ended_within(struct run *r, int secs)
{
	char path[64], buf[512];
	snprintf(path, sizeof path, "/proc/%d/stat", (int)r->pid);
	uint64_t until = now_ms() + (uint64_t)secs * 1000;
	while (now_ms() < until) {
		long n = fx_read_small(path, buf, sizeof buf);
		const char *p = n > 0 ? strrchr(buf, ')') : NULL;
		if (!p || (p[1] == ' ' && (p[2] == 'Z' || p[2] == 'X')))
			return true;
		usleep(20000);
	}
	fx_kill(&fx);
	return false;
}

Test(stall, one_shot_gives_up_on_the_lookup_and_says_so)
{
	start(NULL);
	const char *args[] = { "--json", pidstr(fx.pid), NULL };
	struct run r;
	run_start(&r, args);
	wait_stuck();
	/* the capture is over: tinspect holds nothing while it waits */
	check_free();
	bool ended = ended_within(&r, 60);
	run_wait(&r, 60);
	cr_assert(ended && !r.timed_out, "tinspect waited on the mount for ever");
	cr_assert(r.status == 0 || r.status == 1, "exit %d, signal %d; %s",
		  r.status, r.sig, r.err ? r.err : "");
	cr_assert(schema_valid(r.out, r.out_len));
	cr_assert(strstr(r.out, "did not answer") &&
		  strstr(r.out, "the target's file system"),
		  "the stuck file system is not reported");
	run_free(&r);
	check_free();
}

/* The processes named tinspect-files whose parent is this process (a
 * child subreaper: tinspect's file helper, forked twice, comes to it);
 * at most max of them into out. */
static size_t adopted_helpers(pid_t *out, size_t max)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	size_t n = 0;
	while (d && (e = readdir(d)) && n < max) {
		char path[300], buf[512];
		if (e->d_name[0] < '1' || e->d_name[0] > '9')
			continue;
		snprintf(path, sizeof path, "/proc/%s/stat", e->d_name);
		if (fx_read_small(path, buf, sizeof buf) <= 0)
			continue;
		const char *p = strrchr(buf, ')');
		int ppid = 0;
		if (!strstr(buf, "(tinspect-files)") || !p ||
		    sscanf(p + 2, "%*c %d", &ppid) != 1 || ppid != getpid())
			continue;
		out[n++] = atoi(e->d_name);
	}
	if (d)
		closedir(d);
	return n;
}

/* tinspect is gone: the file helper it left waiting on the mount must
 * end too, not wait there for as long as the mount lives.  The bound is
 * that of an event on a loaded machine under ASan (the helper's watchdog
 * sees the socket close and exits; 5 s was missed there), far below the
 * mount's life, which is the whole test. */
static void check_helpers_end(void)
{
	pid_t h[16];
	size_t n = adopted_helpers(h, 16);
	cr_assert(n > 0, "no file helper of tinspect's was ever adopted");
	uint64_t until = now_ms() + 30000;
	for (size_t i = 0; i < n; i++) {
		pid_t w;
		while ((w = waitpid(h[i], NULL, WNOHANG)) == 0 && now_ms() < until)
			usleep(10000);
		cr_assert_eq(w, h[i], "tinspect's file helper %d outlived it, waiting "
			     "on the mount", (int)h[i]);
	}
}

/* tinspect in mode (extra options): stuck on the mount, SIGTERM ends it
 * at once, and the target is left free; its file helper goes too. */
static void sigterm_while_stuck(const char *const *extra, bool follow)
{
	const char *spawn[] = { "--spawn", NULL };
	start(follow ? spawn : NULL);
	const char *args[16];
	size_t n = 0;
	for (; extra && *extra; extra++)
		args[n++] = *extra;
	args[n++] = pidstr(fx.pid);
	args[n] = NULL;
	struct run r;
	/* a followed watch writes a line per thread created: its output
	 * goes to /dev/null, lest a full pipe hold it up */
	const char *quiet[] = { "/bin/sh", "-c", "exec \"$0\" \"$@\" >/dev/null",
				NULL };
	cr_assert(prctl(PR_SET_CHILD_SUBREAPER, 1) == 0);
	run_start_as(&r, follow ? quiet : NULL, args);
	wait_stuck();
	if (follow)
		check_spawning();
	else
		check_free();
	kill(r.pid, SIGTERM);
	run_wait(&r, 10);
	cr_assert(!r.timed_out, "SIGTERM did not end tinspect");
	cr_assert_eq(r.sig, SIGTERM, "exit %d, signal %d; %s", r.status, r.sig,
		     r.err ? r.err : "");
	run_free(&r);
	check_free();
	check_helpers_end();
	prctl(PR_SET_CHILD_SUBREAPER, 0);
}

Test(stall, sigterm_ends_a_one_shot_capture)
{
	const char *extra[] = { "--json", NULL };
	sigterm_while_stuck(extra, false);
}

Test(stall, sigterm_ends_a_nonblocking_capture)
{
	const char *extra[] = { "--json", "--nonblocking", NULL };
	sigterm_while_stuck(extra, false);
}

Test(stall, sigterm_ends_a_followed_watch_and_new_threads_run)
{
	const char *extra[] = { "--json", "--summary", "--watch", "1",
				"--follow-threads", NULL };
	sigterm_while_stuck(extra, true);
}

/*
 * A thread in a killable sleep (the parent side of a vfork) does not stop
 * for the capture: it is a straggler, seized with an interrupt pending, and
 * stops when it leaves that sleep.  If that happens while tinspect waits
 * for a file, it must be let go then, not when tinspect is done: tinspect
 * holds no thread of the target while it waits for a file system.  The
 * fixture's FUSE counts say until when the lookup was stuck (tinspect gives
 * up on it after its bound): the thread must run again before that.
 */
Test(stall, straggler_that_stops_while_a_file_is_awaited_is_let_go)
{
	const char *extra[] = { "--vfork", NULL };
	start(extra);
	const char *l = fx_line(&fx, "vforker ");
	cr_assert(l, "no vforker");
	pid_t vtid = atoi(l + 8);
	const char *args[] = { "--json", "--stop-timeout", "200", pidstr(fx.pid), NULL };
	struct run r;
	run_start(&r, args);
	wait_stuck();
	/* captured and resumed: waiting for the mount now; the vforker is a
	 * straggler (in D at the capture) */
	cr_assert_eq(task_state(fx.pid, vtid), 'D');
	fx_send(&fx, "release");
	/* it leaves D, stops at the interrupt, and must be let go */
	uint64_t until = now_ms() + 60000, free_ms = 0;
	while (!free_ms && now_ms() < until) {
		char st = task_state(fx.pid, vtid);
		if (st != 'D' && st != 't' && st != 'T')
			free_ms = now_ms();
		else
			usleep(2000);
	}
	cr_assert(free_ms, "the vforker never ran again");
	/* when did the stuck lookup end (the count fell back)? */
	while (waiting > baseline)
		cr_assert(take_line(60), "the lookup never ended");
	bool ended = ended_within(&r, 60);
	run_wait(&r, 60);
	cr_assert(ended && !r.timed_out, "tinspect waited on the mount for ever");
	cr_assert(r.status == 0 || r.status == 1, "exit %d, signal %d; %s",
		  r.status, r.sig, r.err ? r.err : "");
	json_t *doc = json_loadb(r.out, r.out_len, 0, NULL);
	cr_assert(doc, "no JSON");
	cr_assert(json_is_true(json_object_get(thread_by_tid(doc, vtid), "straggler")),
		  "the vforker was no straggler");
	json_decref(doc);
	cr_assert(free_ms < waiting_ms, "the straggler was held until the lookup "
		  "was given up on (%llu ms after it)",
		  (unsigned long long)(free_ms - waiting_ms));
	run_free(&r);
	check_free();
}

static void start_server(bool stop_at_read)
{
	if (geteuid() != 0 || access("/dev/fuse", R_OK | W_OK) != 0)
		cr_skip("mounting FUSE needs root and /dev/fuse");
	char debug[4096];
	snprintf(debug, sizeof debug, "%s", fixture_path("fx_fuse_serve.debug"));
	const char *args[] = { debug, stop_at_read ? "--stop-at-read" : NULL, NULL };
	fx_start(&fx, "fx_fuse_serve", args, 30);
}

/* The source line of fx_serve_sleeper's frames, or NULL. */
static const char *sleeper_file(json_t *doc)
{
	size_t i, k;
	json_t *t, *f;
	json_array_foreach(json_object_get(doc, "threads"), i, t)
		json_array_foreach(json_object_get(json_object_get(t, "stack"), "frames"),
				   k, f)
			if (jstr(f, "symbol") && !strcmp(jstr(f, "symbol"), "fx_serve_sleeper"))
				return jstr(f, "file");
	return NULL;
}

Test(stall, debug_file_served_over_fuse_is_read)
{
	start_server(false);
	int status;
	json_t *doc = inspect_json(fx.pid, NULL, &status);
	cr_assert(status == 0 || status == 1, "exit %d", status);
	const char *file = sleeper_file(doc);
	cr_assert(file && strstr(file, "fx_fuse_serve.c"),
		  "no source line from the debug file served over FUSE (%s)",
		  file ? file : "none");
	json_decref(doc);
	check_free();
}

Test(stall, server_that_stops_answering_at_read_is_given_up_on)
{
	start_server(true);
	const char *args[] = { "--json", pidstr(fx.pid), NULL };
	struct run r;
	run_start(&r, args);
	bool ended = ended_within(&r, 90);
	run_wait(&r, 60);
	cr_assert(ended && !r.timed_out, "tinspect waited on the file for ever");
	cr_assert(r.status == 0 || r.status == 1, "exit %d, signal %d; %s",
		  r.status, r.sig, r.err ? r.err : "");
	cr_assert(schema_valid(r.out, r.out_len));
	cr_assert(strstr(r.out, "did not answer"), "the stuck read is not reported");
	run_free(&r);
	check_free();
}

/* The thread whose stack has a frame named sym, or NULL. */
static json_t *thread_with_frame(json_t *doc, const char *sym)
{
	size_t i, k;
	json_t *t, *f;
	json_array_foreach(json_object_get(doc, "threads"), i, t)
		json_array_foreach(json_object_get(json_object_get(t, "stack"), "frames"),
				   k, f)
			if (jstr(f, "symbol") && !strcmp(jstr(f, "symbol"), sym))
				return t;
	return NULL;
}

Test(stall, library_whose_file_stalls_names_it_in_the_stack_error)
{
	if (geteuid() != 0 || access("/dev/fuse", R_OK | W_OK) != 0)
		cr_skip("mounting FUSE needs root and /dev/fuse");
	char lib[4096];
	snprintf(lib, sizeof lib, "%s", fixture_path("libfx_fuselib.so"));
	const char *args[] = { lib, NULL };
	fx_start(&fx, "fx_fuse_lib", args, 30);
	mountpoint = "/mnt";
	int status;
	json_t *doc = inspect_json(fx.pid, NULL, &status);
	cr_assert_eq(status, 1, "exit %d: the stack error is a thread error", status);
	/* the open that stalled was libdwfl's, after the symbols were read */
	bool held = false;
	for (char *l; !held && (l = fx_read_line(&fx, 10)); free(l))
		held = !strncmp(l, "held OPEN ", 10);
	cr_assert(held, "the fixture never held an open of the library");
	json_t *t = thread_with_frame(doc, "fx_fuselib_call");
	cr_assert(t, "no thread with the library's frame");
	json_t *st = json_object_get(t, "stack");
	const char *err = jstr(st, "error");
	cr_assert_str_eq(jstr(st, "end"), "error", "the stack ends %s (%s)",
			 jstr(st, "end"), err ? err : "no error");
	cr_assert(err && strstr(err, "/mnt/libfxfuse.so") &&
		  strstr(err, "could not be opened") &&
		  strstr(err, "did not answer within 2 s"),
		  "the stack error does not name the library and the stall: %s",
		  err ? err : "none");
	cr_assert(!strstr(err, "Callback returned failure"), "%s", err);
	/* the frames found before it stay, and it is the last */
	json_t *frames = json_object_get(st, "frames");
	size_t n = json_array_size(frames);
	cr_assert(n >= 2);
	cr_assert_str_eq(jstr(json_array_get(frames, n - 1), "symbol"),
			 "fx_fuselib_call", "a frame past the library (a guess)");
	cr_assert_str_eq(jstr(json_array_get(frames, n - 2), "symbol"),
			 "fx_fuse_waiter");
	cr_assert_str_eq(jstr(json_array_get(frames, n - 1), "module"),
			 "/mnt/libfxfuse.so");
	/* and the thread's errors say it */
	bool said = false;
	size_t i;
	json_t *e;
	json_array_foreach(json_object_get(t, "errors"), i, e)
		said |= json_is_string(e) && strstr(json_string_value(e), "stack: the file "
						   "of /mnt/libfxfuse.so");
	cr_assert(said, "the thread's errors do not say it");
	json_decref(doc);
	check_free();
}

/* The next report of the watch (events skipped), parsed. */
static json_t *next_report(void)
{
	for (;;) {
		json_t *d = kept_next_line(&tin, &stream, 120);
		cr_assert(d, "the watch ended");
		if (json_object_get(d, "threads"))
			return d;
		json_decref(d);
	}
}

/* The stack of the thread through the library in report d. */
static json_t *lib_stack(json_t *d)
{
	json_t *t = thread_with_frame(d, "fx_fuselib_call");
	cr_assert(t, "no thread with the library's frame");
	return json_object_get(t, "stack");
}

Test(stall, library_whose_open_failed_once_is_opened_by_the_next_update)
{
	if (geteuid() != 0 || access("/dev/fuse", R_OK | W_OK) != 0)
		cr_skip("mounting FUSE needs root and /dev/fuse");
	char lib[4096];
	snprintf(lib, sizeof lib, "%s", fixture_path("libfx_fuselib.so"));
	const char *args[] = { lib, "2", "--fail-once", NULL };
	fx_start(&fx, "fx_fuse_lib", args, 30);
	mountpoint = "/mnt";
	const char *opts[] = { "--watch", "0.2", "--json", NULL };
	fx_spawn_tinspect_on(&tin, opts, fx.pid);
	json_t *d = next_report();
	json_t *st = lib_stack(d);
	const char *err = jstr(st, "error");
	cr_assert_str_eq(jstr(st, "end"), "error", "first update: the stack ends %s",
			 jstr(st, "end"));
	cr_assert(err && strstr(err, "the file of /mnt/libfxfuse.so could not be "
			       "opened: out of file descriptors (EMFILE)"),
		  "first update: %s", err ? err : "no error");
	json_decref(d);
	/* the next update opens it again, and walks through it */
	d = next_report();
	st = lib_stack(d);
	err = jstr(st, "error");
	cr_assert_str_eq(jstr(st, "end"), "complete", "second update: the stack "
			 "ends %s (%s)", jstr(st, "end"), err ? err : "no error");
	bool past = false;
	size_t i;
	json_t *f;
	json_array_foreach(json_object_get(st, "frames"), i, f)
		past |= jstr(f, "symbol") && !strcmp(jstr(f, "symbol"), "start_thread");
	cr_assert(past, "second update: no frame past the library");
	json_decref(d);
	kept_validate(&stream);
	check_free();
}
