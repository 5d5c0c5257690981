/*
 * test_nonblocking: --nonblocking and --nonblocking=strict.
 * The real tinspect on real fixtures: while it watches a 3000-thread
 * process, a thread of the test samples every task's State and TracerPid
 * in /proc and must never see a ptrace stop nor a tracer; a planted ABBA
 * deadlock is found as a candidate and confirmed by one stop (or, strict,
 * left unconfirmed, with --check not exiting 10); running threads come
 * without stacks.  Every document is validated against the schemas.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"

static struct fixture fx;

static void teardown(void)
{
	fx_kill(&fx);
}

TestSuite(nonblocking, .fini = teardown, .timeout = 600 * TEST_TIME_SCALE);

static pid_t report_tid(const char *prefix)
{
	const char *l = fx_line(&fx, prefix);
	cr_assert(l, "the fixture did not report '%s'", prefix);
	return (pid_t)atoi(l + strlen(prefix));
}

static const char *capture_mode(json_t *doc)
{
	return json_string_value(json_object_get(json_object_get(doc, "capture"), "mode"));
}

static json_int_t freeze_us(json_t *doc)
{
	return json_integer_value(json_object_get(json_object_get(doc, "capture"),
						  "freeze_us"));
}

/* ---- nothing is ever stopped ------------------------------------------------- */

struct sampler {
	pid_t pid;
	atomic_bool done;
	/* results */
	unsigned rounds;
	size_t tasks_seen;	/* in the last round */
	pid_t bad_tid;		/* a task seen stopped or traced */
	char bad_state;
	long bad_tracer;
};

/* One look at /proc/PID/task/TID/status: State and TracerPid. */
static void sample_task(struct sampler *s, const char *tid)
{
	char path[96], buf[4096];
	snprintf(path, sizeof path, "/proc/%d/task/%s/status", (int)s->pid, tid);
	FILE *f = fopen(path, "r");
	if (!f)
		return;	/* exited meanwhile */
	char state = 0;
	long tracer = 0;
	while (fgets(buf, sizeof buf, f)) {
		if (!strncmp(buf, "State:", 6))
			sscanf(buf + 6, " %c", &state);
		else if (!strncmp(buf, "TracerPid:", 10))
			tracer = atol(buf + 10);
	}
	fclose(f);
	if ((state == 't' || state == 'T' || tracer != 0) && !s->bad_tid) {
		s->bad_tid = (pid_t)atoi(tid);
		s->bad_state = state;
		s->bad_tracer = tracer;
	}
}

static void *sampler_main(void *arg)
{
	struct sampler *s = arg;
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/task", (int)s->pid);
	while (!atomic_load(&s->done)) {
		DIR *d = opendir(path);
		if (!d)
			break;
		size_t n = 0;
		struct dirent *e;
		while ((e = readdir(d)))
			if (e->d_name[0] != '.') {
				sample_task(s, e->d_name);
				n++;
			}
		closedir(d);
		s->tasks_seen = n;
		s->rounds++;
	}
	return NULL;
}

Test(nonblocking, watch_3000_threads_never_stops_a_thread)
{
	const char *args[] = { "--idle", "3000", "--spin", "1", NULL };
	fx_start(&fx, "fx_spin", args, 120);
	struct sampler s = { .pid = fx.pid };
	atomic_init(&s.done, false);
	pthread_t th;
	cr_assert(pthread_create(&th, NULL, sampler_main, &s) == 0);

	/* summary lines: small, so the stream never waits for the reader;
	 * at normal priority (what is checked here is that nothing stops,
	 * and idle updates crawl while the other suites run) */
	const char *targs[] = { "--watch", "0.3", "--count", "4", "--summary",
				"--json", "--nonblocking", "--update-priority",
				"normal", pidstr(fx.pid), NULL };
	struct run r;
	run_tinspect(&r, targs, 300);
	/* and one full document, every thread in it */
	const char *one[] = { "--nonblocking", NULL };
	int status;
	json_t *doc = inspect_json(fx.pid, one, &status);
	atomic_store(&s.done, true);
	pthread_join(th, NULL);

	cr_assert(!r.timed_out && r.status == 0, "watch exit %d, stderr: %s",
		  r.status, r.err ? r.err : "");
	cr_assert(s.rounds >= 2, "the sampler made only %u rounds", s.rounds);
	cr_assert(s.tasks_seen >= 3002, "the sampler saw %zu tasks", s.tasks_seen);
	cr_assert(s.bad_tid == 0, "task %d seen in state '%c' with TracerPid %ld "
		  "during a nonblocking watch", (int)s.bad_tid, s.bad_state, s.bad_tracer);

	cr_assert(schema_valid(r.out, r.out_len), "the stream does not validate");
	unsigned updates = 0;
	for (char *line = strtok(r.out, "\n"); line; line = strtok(NULL, "\n")) {
		json_t *l = json_loads(line, 0, NULL);
		cr_assert(l, "a line does not parse");
		const char *kind = json_string_value(json_object_get(l, "kind"));
		if (kind && !strcmp(kind, "summary")) {
			updates++;
			cr_assert_str_eq(json_string_value(json_object_get(l, "mode")),
					 "nonblocking");
			cr_assert_eq(json_integer_value(json_object_get(l, "freeze_us")), 0);
			cr_assert_eq(json_integer_value(json_object_get(l, "threads_stopped")), 0);
			cr_assert(json_integer_value(json_object_get(l, "threads")) >= 3002);
		}
		json_decref(l);
	}
	cr_assert_eq(updates, 4, "%u summary lines", updates);
	run_free(&r);

	cr_assert_eq(status, 0, "one-shot exit %d", status);
	cr_assert_str_eq(capture_mode(doc), "nonblocking");
	cr_assert_eq(freeze_us(doc), 0);
	json_t *threads = json_object_get(doc, "threads");
	size_t blocked = 0, i;
	json_t *t;
	json_array_foreach(threads, i, t) {
		const char *obs = json_string_value(json_object_get(t, "observation"));
		cr_assert(obs, "a thread without observation");
		cr_assert(!json_is_true(json_object_get(t, "stopped")));
		if (!strcmp(obs, "blocked"))
			blocked++;
	}
	/* the idle threads and main; the spinner runs */
	cr_assert(blocked >= 3001, "%zu threads observed blocked", blocked);
	json_decref(doc);
}

/* The scheduling policy of task tid of process pid (field 41 of its
 * stat), -1 if it is gone. */
static int task_policy(pid_t pid, const char *tid)
{
	char path[320], buf[1024];
	snprintf(path, sizeof path, "/proc/%d/task/%s/stat", (int)pid, tid);
	if (fx_read_small(path, buf, sizeof buf) < 0)
		return -1;
	char *p = strrchr(buf, ')');	/* past comm, which may hold spaces */
	for (int field = 2; p && field < 41; field++)
		p = strchr(p + 1, ' ');
	return p ? atoi(p + 1) : -1;
}

Test(nonblocking, the_capture_yields_the_cpu_at_sched_idle)
{
	/* a nonblocking update freezes nothing: it runs at SCHED_IDLE (5),
	 * seen from /proc while it works; the caller's thread does not */
	const char *args[] = { "--idle", "1000", NULL };
	fx_start(&fx, "fx_spin", args, 120);
	const char *targs[] = { "--watch", "0.1", "--count", "3", "--summary",
				"--json", "--nonblocking", pidstr(fx.pid), NULL };
	struct run r;
	run_start(&r, targs);
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/task", (int)r.pid);
	bool idle_seen = false, main_idle = false;
	for (int i = 0; i < 20000 && !idle_seen; i++) {
		DIR *d = opendir(path);
		if (!d)
			break;	/* it ended */
		struct dirent *e;
		while ((e = readdir(d)))
			if (e->d_name[0] != '.' && task_policy(r.pid, e->d_name) == 5) {
				if (atoi(e->d_name) == r.pid)
					main_idle = true;
				else
					idle_seen = true;
			}
		closedir(d);
		usleep(500);
	}
	run_wait(&r, 300);
	cr_assert(!r.timed_out && r.status == 0, "watch exit %d: %s", r.status,
		  r.err ? r.err : "");
	cr_assert(idle_seen, "no thread of tinspect was seen at SCHED_IDLE");
	cr_assert(!main_idle, "tinspect's main thread ran at SCHED_IDLE");
	run_free(&r);
}

/* ---- a candidate deadlock ----------------------------------------------------- */

static bool cycle_has(json_t *cycle, pid_t a, pid_t b)
{
	json_t *tids = json_object_get(cycle, "threads");
	bool ha = false, hb = false;
	size_t i;
	json_t *v;
	json_array_foreach(tids, i, v) {
		ha |= json_integer_value(v) == a;
		hb |= json_integer_value(v) == b;
	}
	return json_array_size(tids) == 2 && ha && hb;
}

Test(nonblocking, candidate_deadlock_is_confirmed_by_one_stop)
{
	fx_start(&fx, "fx_lock_abba", NULL, 60);
	pid_t a = report_tid("tid post-transfer "), b = report_tid("tid audit-ledger ");
	const char *extra[] = { "--nonblocking", "--check", NULL };
	int status;
	json_t *doc = inspect_json(fx.pid, extra, &status);
	cr_assert_eq(status, 10, "--check on a confirmed deadlock: exit %d", status);
	cr_assert_str_eq(capture_mode(doc), "confirmation");
	cr_assert(freeze_us(doc) > 0, "the confirming capture stopped the process");
	json_t *conf = json_object_get(json_object_get(doc, "capture"), "confirmed");
	cr_assert(json_is_object(conf));
	cr_assert_eq(json_integer_value(json_object_get(conf, "candidate_deadlocks")), 1);
	json_t *dl = json_object_get(doc, "deadlocks");
	cr_assert_eq(json_array_size(dl), 1);
	cr_assert(cycle_has(json_array_get(dl, 0), a, b));
	cr_assert(!json_object_get(doc, "unconfirmed"));
	/* the confirmation is an all-stop capture: its threads were stopped */
	cr_assert(json_is_true(json_object_get(thread_by_tid(doc, a), "stopped")));
	cr_assert(!json_object_get(thread_by_tid(doc, a), "observation"));
	json_decref(doc);
	cr_assert(wait_not_stopped(fx.pid, 2000));
}

Test(nonblocking, strict_leaves_the_candidate_unconfirmed)
{
	fx_start(&fx, "fx_lock_abba", NULL, 60);
	pid_t a = report_tid("tid post-transfer "), b = report_tid("tid audit-ledger ");
	const char *extra[] = { "--nonblocking=strict", "--check", NULL };
	int status;
	json_t *doc = inspect_json(fx.pid, extra, &status);
	cr_assert_neq(status, 10, "--check exited 10 on an unconfirmed candidate");
	cr_assert_eq(status, 11, "exit %d", status);
	cr_assert_str_eq(capture_mode(doc), "nonblocking");
	cr_assert_eq(freeze_us(doc), 0);
	cr_assert_eq(json_array_size(json_object_get(doc, "deadlocks")), 0);
	json_t *unc = json_object_get(doc, "unconfirmed");
	cr_assert(json_is_object(unc));
	json_t *cand = json_object_get(unc, "deadlocks");
	cr_assert_eq(json_array_size(cand), 1);
	cr_assert(cycle_has(json_array_get(cand, 0), a, b));
	/* both waiters observed in their futex wait, with their stacks, and
	 * the lock each waits on named with its owner */
	pid_t w[2] = { a, b };
	for (int k = 0; k < 2; k++) {
		json_t *t = thread_by_tid(doc, w[k]);
		cr_assert_str_eq(json_string_value(json_object_get(t, "observation")),
				 "blocked");
		json_t *frames = json_object_get(json_object_get(t, "stack"), "frames");
		cr_assert(json_array_size(frames) >= 2, "thread %d: %zu frames",
			  (int)w[k], json_array_size(frames));
		json_t *bo = json_object_get(t, "blocked_on");
		cr_assert(json_is_object(bo), "thread %d: no blocked_on", (int)w[k]);
	}
	json_decref(doc);

	/* the text says unconfirmed, never DEADLOCK */
	const char *targs[] = { "--nonblocking=strict", pidstr(fx.pid), NULL };
	struct run r;
	run_tinspect(&r, targs, 120);
	cr_assert_eq(r.status, 0, "text exit %d: %s", r.status, r.err ? r.err : "");
	cr_assert(strstr(r.out, "unconfirmed deadlock candidate"), "%s", r.out);
	cr_assert(!strstr(r.out, "DEADLOCK"), "strict called it a deadlock:\n%s", r.out);
	run_free(&r);
	cr_assert(!any_task_stopped(fx.pid));
}

/* ---- running threads ---------------------------------------------------------------- */

Test(nonblocking, running_threads_have_no_stack)
{
	const char *args[] = { "--idle", "4", "--spin", "2", NULL };
	fx_start(&fx, "fx_spin", args, 60);
	pid_t spin[2];
	size_t nspin = 0;
	for (size_t i = 0; i < fx.nlines && nspin < 2; i++)
		if (!strncmp(fx.lines[i], "spin ", 5))
			spin[nspin++] = (pid_t)atoi(fx.lines[i] + 5);
	cr_assert_eq(nspin, 2);
	const char *extra[] = { "--nonblocking", NULL };
	int status;
	json_t *doc = inspect_json(fx.pid, extra, &status);
	cr_assert_str_eq(capture_mode(doc), "nonblocking");
	json_t *threads = json_object_get(doc, "threads");
	size_t i, nblocked = 0;
	json_t *t;
	json_array_foreach(threads, i, t) {
		const char *obs = json_string_value(json_object_get(t, "observation"));
		json_t *frames = json_object_get(json_object_get(t, "stack"), "frames");
		if (!strcmp(obs, "running")) {
			cr_assert(json_array_size(frames) == 0,
				  "a running thread with %zu frames", json_array_size(frames));
			cr_assert(json_is_null(json_object_get(t, "regs")));
		} else if (!strcmp(obs, "blocked")) {
			nblocked++;
			cr_assert(json_array_size(frames) >= 1);
		}
	}
	cr_assert_eq(nblocked, 5, "main and the 4 idle threads: %zu", nblocked);
	/* a spinner never enters the kernel: running, whatever the moment */
	for (size_t k = 0; k < 2; k++) {
		json_t *st = thread_by_tid(doc, spin[k]);
		cr_assert(st);
		cr_assert_str_eq(json_string_value(json_object_get(st, "observation")),
				 "running");
	}
	/* the idle threads were unwound through the fixture's wait */
	bool found = false;
	json_array_foreach(threads, i, t) {
		json_t *frames = json_object_get(json_object_get(t, "stack"), "frames");
		size_t k;
		json_t *f;
		json_array_foreach(frames, k, f) {
			const char *fn = json_string_value(json_object_get(f, "symbol"));
			if (fn && !strcmp(fn, "fx_idle_wait"))
				found = true;
		}
	}
	cr_assert(found, "no stack reached fx_idle_wait");
	json_decref(doc);
	/* the text does not guess where a thread without registers is */
	const char *targs[] = { "--nonblocking", pidstr(fx.pid), NULL };
	struct run r;
	run_tinspect(&r, targs, 120);
	cr_assert_eq(r.status, 0, "text exit %d: %s", r.status, r.err ? r.err : "");
	for (size_t k = 0; k < 2; k++) {
		char head[64];
		snprintf(head, sizeof head, "\nThread %d ", (int)spin[k]);
		const char *p = strstr(r.out, head);
		cr_assert(p, "no details of spinner %d", (int)spin[k]);
		const char *end = strstr(p + 1, "\n\n");
		const char *sc = strstr(p, "syscall: unknown (running");
		cr_assert(sc && (!end || sc < end), "spinner %d:\n%.300s", (int)spin[k], p);
	}
	cr_assert_null(strstr(r.out, "user space)"), "%s", r.out);
	run_free(&r);
}

Test(nonblocking, follow_threads_is_refused)
{
	fx_start(&fx, "fx_spin", NULL, 60);
	const char *targs[] = { "--watch", "1", "--count", "1", "--nonblocking",
				"--follow-threads", pidstr(fx.pid), NULL };
	struct run r;
	run_tinspect(&r, targs, 60);
	cr_assert_eq(r.status, 2, "exit %d", r.status);
	run_free(&r);
	const char *bad[] = { "--nonblocking=sometimes", pidstr(fx.pid), NULL };
	run_tinspect(&r, bad, 60);
	cr_assert_eq(r.status, 2, "exit %d", r.status);
	run_free(&r);
}

/* ---- a thread that comes back to the same wait ---------------------------------- */

/* Whether frame f is one unwound from bytes the thread wrote over: no
 * module holds it (the fixture has no generated code), or it is the
 * fixture's pattern. */
static bool junk_frame(json_t *f, uint64_t pattern)
{
	if (json_is_null(json_object_get(f, "module")))
		return true;
	uint64_t pc = jhex(f, "pc");
	return pc >= pattern - 16 && pc <= pattern + 16;
}

static bool has_frame(json_t *frames, const char *symbol)
{
	size_t k;
	json_t *f;
	json_array_foreach(frames, k, f) {
		const char *fn = json_string_value(json_object_get(f, "symbol"));
		if (fn && !strcmp(fn, symbol))
			return true;
	}
	return false;
}

/*
 * fx_reenter's workers leave poll() every millisecond, fill the stack
 * under the poll's frames with a pattern, and come back to the same poll
 * with the same pc, sp and arguments.  A stack copied while one fills is
 * torn; the thread must then be reported as moved, never unwound from the
 * pattern: 0 junk frames over 200 captures.  Its two steady threads, in a
 * poll that never returns through the same functions, must be unwound
 * through the first of them every time (only frame pointers lead
 * further, and a nonblocking capture has no rbp): the check hides no
 * stack it need not hide.
 */
Test(nonblocking, a_stack_copy_the_thread_wrote_over_is_never_unwound)
{
	fx_start(&fx, "fx_reenter", NULL, 60);
	const char *pl = fx_line(&fx, "pattern ");
	cr_assert(pl);
	uint64_t pattern = strtoull(pl + 8, NULL, 16);
	pid_t tids[8];
	size_t nworkers = 0, nsteady = 0;
	for (size_t i = 0; i < fx.nlines; i++)
		if (!strncmp(fx.lines[i], "worker ", 7) && nworkers < 4)
			tids[nworkers++] = (pid_t)atoi(fx.lines[i] + 7);
	for (size_t i = 0; i < fx.nlines; i++)
		if (!strncmp(fx.lines[i], "steady ", 7) && nsteady < 2)
			tids[nworkers + nsteady++] = (pid_t)atoi(fx.lines[i] + 7);
	cr_assert_eq(nworkers, 4);
	cr_assert_eq(nsteady, 2);

	enum { UPDATES = 200 };
	char count[16];
	snprintf(count, sizeof count, "%d", UPDATES);
	const char *targs[] = { "--watch", "0.02", "--count", count, "--json",
				"--nonblocking", "--update-priority", "normal",
				pidstr(fx.pid), NULL };
	struct run r;
	run_tinspect(&r, targs, 600);
	cr_assert(!r.timed_out && r.status == 0, "watch exit %d, stderr: %s",
		  r.status, r.err ? r.err : "");
	cr_assert(schema_valid(r.out, r.out_len), "the stream does not validate");
	unsigned updates = 0, junk = 0, junk_threads = 0, blocked = 0, moved = 0,
		 steady_whole = 0;
	for (char *line = strtok(r.out, "\n"); line; line = strtok(NULL, "\n")) {
		json_t *doc = json_loads(line, 0, NULL);
		cr_assert(doc, "a line does not parse");
		json_t *threads = json_object_get(doc, "threads");
		if (!threads) {
			json_decref(doc);
			continue;	/* an event line */
		}
		updates++;
		cr_assert_str_eq(capture_mode(doc), "nonblocking");
		for (size_t w = 0; w < nworkers + nsteady; w++) {
			json_t *t = thread_by_tid(doc, tids[w]);
			cr_assert(t, "thread %d missing", (int)tids[w]);
			const char *obs = json_string_value(json_object_get(t, "observation"));
			json_t *frames = json_object_get(json_object_get(t, "stack"), "frames");
			if (!strcmp(obs, "moved")) {
				moved++;
				cr_assert_eq(json_array_size(frames), 0,
					     "a moved thread with frames");
				continue;
			}
			if (strcmp(obs, "blocked"))
				continue;
			blocked++;
			size_t k, before = junk;
			json_t *f;
			json_array_foreach(frames, k, f)
				junk += junk_frame(f, pattern);
			junk_threads += junk > before;
			if (w >= nworkers)
				steady_whole += has_frame(frames, "fx_reenter_poll");
		}
		json_decref(doc);
	}
	run_free(&r);
	cr_log_info("%u updates: %u blocked observations, %u moved, %u junk frames "
		    "in %u; the steady threads unwound through fx_reenter_poll %u "
		    "times", updates, blocked, moved, junk, junk_threads, steady_whole);
	cr_assert_eq(updates, UPDATES, "%u updates", updates);
	cr_assert_eq(junk, 0, "%u frames unwound from the fill pattern or outside "
		     "any module, in %u of %u blocked observations (%u moved)",
		     junk, junk_threads, blocked, moved);
	cr_assert_eq(steady_whole, nsteady * UPDATES, "the steady threads were "
		     "unwound through fx_reenter_poll %u times of %u", steady_whole,
		     (unsigned)(nsteady * UPDATES));
	cr_assert(!any_task_stopped(fx.pid));
}

/* ---- permission ---------------------------------------------------------------------- */

/* A user who may not trace the target may not read it either: without
 * ptrace's access every /proc/TID/syscall and every read of memory is
 * refused, which used to make every thread look running and the process
 * healthy ("No deadlock found", status 0).  Status 4 and the reason, as
 * the modes that stop, in every nonblocking form. */
Test(nonblocking, a_user_who_may_not_trace_gets_status_4)
{
	fx_start(&fx, "fx_lock_abba", NULL, 60);
	const char *wrap[] = { "/usr/bin/setpriv", "--reuid=65534", "--regid=65534",
			       "--clear-groups", "--inh-caps=-all", NULL };
	const char *const modes[][8] = {
		{ "--check", "--nonblocking", NULL },
		{ "--check", "--nonblocking=strict", NULL },
		{ "--json", "--nonblocking", NULL },
		{ "--json", "--nonblocking", "--watch", "0.2", "--count", "2", NULL },
	};
	for (size_t m = 0; m < sizeof modes / sizeof *modes; m++) {
		const char *args[12];
		size_t n = 0;
		for (const char *const *a = modes[m]; *a; a++)
			args[n++] = *a;
		args[n++] = pidstr(fx.pid);
		args[n] = NULL;
		struct run r;
		run_start_as(&r, wrap, args);
		run_wait(&r, 60);
		cr_assert_eq(r.status, 4, "%s %s: exit %d: %s", modes[m][0], modes[m][1],
			     r.status, r.err ? r.err : "");
		cr_assert(r.err && strstr(r.err, "runs as uid 0") &&
			  strstr(r.err, "CAP_SYS_PTRACE"), "%s", r.err ? r.err : "");
		cr_assert(!r.out_len || !strstr(r.out, "No deadlock"), "%s", r.out);
		run_free(&r);
	}
}
