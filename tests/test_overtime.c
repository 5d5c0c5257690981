/*
 * test_overtime: what lasts across the updates of a watch.  fx_overtime is
 * watched while it changes on command: a thread blocks on a mutex whose
 * owner sleeps, and is let go later (thread_hung, lock_held, then
 * thread_recovered, lock_released, with the durations the fixture's own
 * clock reads), while idle pools (cond waits, epoll_wait, nanosleep) and
 * a contended lock that makes progress never make an event.  --diff is
 * checked against the fixture's known changes, --max-duty against the
 * stream's own timestamps.  Every document is validated against the
 * schemas.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"

static struct fixture fx, tin;
static struct kept_lines stream;
static char tmp_a[64], tmp_b[64];

static void validate_stream(void) { kept_validate(&stream); }

static void teardown(void)
{
	fx_kill(&tin);
	fx_kill(&fx);
	kept_free(&stream);
	if (tmp_a[0])
		unlink(tmp_a);
	if (tmp_b[0])
		unlink(tmp_b);
	tmp_a[0] = tmp_b[0] = '\0';
}

TestSuite(overtime, .fini = teardown, .timeout = 300 * TEST_TIME_SCALE);

static long long jint(json_t *o, const char *k)
{
	return json_integer_value(json_object_get(o, k));
}

/* Seconds of a "YYYY-MM-DDTHH:MM:SS.uuuuuuZ" member. */
static double jtime(json_t *o, const char *k)
{
	const char *s = jstr(o, k);
	struct tm tm = { 0 };
	unsigned us = 0;
	cr_assert(s && sscanf(s, "%d-%d-%dT%d:%d:%d.%uZ", &tm.tm_year, &tm.tm_mon,
			      &tm.tm_mday, &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &us) == 7,
		  "%s is no time: %s", k, s ? s : "(none)");
	tm.tm_year -= 1900;
	tm.tm_mon -= 1;
	return (double)timegm(&tm) + us / 1e6;
}

static json_t *next_line(int timeout_s)
{
	return kept_next_line(&tin, &stream, timeout_s);
}

/* "tid ROLE TID" of the fixture's report (the first of that role). */
static pid_t fx_tid(const char *role)
{
	char prefix[64];
	snprintf(prefix, sizeof prefix, "tid %s ", role);
	const char *l = fx_line(&fx, prefix);
	cr_assert(l, "the fixture did not report %s", role);
	return (pid_t)atoi(l + strlen(prefix));
}

/* Every tid of a role. */
static size_t fx_tids(const char *role, pid_t *v, size_t cap)
{
	char prefix[64];
	size_t n = 0;
	snprintf(prefix, sizeof prefix, "tid %s ", role);
	for (size_t i = 0; i < fx.nlines && n < cap; i++)
		if (!strncmp(fx.lines[i], prefix, strlen(prefix)))
			v[n++] = (pid_t)atoi(fx.lines[i] + strlen(prefix));
	return n;
}

static unsigned long fx_lock_addr(const char *name)
{
	char prefix[64];
	snprintf(prefix, sizeof prefix, "lock %s ", name);
	const char *l = fx_line(&fx, prefix);
	cr_assert(l, "no lock %s", name);
	return strtoul(l + strlen(prefix), NULL, 16);
}

/* The fixture's answer starting with prefix (other lines skipped). */
static char *fx_answer(const char *prefix)
{
	for (;;) {
		char *l = fx_read_line(&fx, 60);
		cr_assert(l, "the fixture did not answer %s", prefix);
		if (!strncmp(l, prefix, strlen(prefix)))
			return l;
		free(l);
	}
}

static double fx_answer_time(const char *prefix)
{
	char *l = fx_answer(prefix);
	double t = strtod(l + strlen(prefix), NULL);
	free(l);
	return t;
}

static json_t *thread_of(json_t *doc, pid_t tid)
{
	return thread_by_tid(doc, tid);
}

/* The victim waits on held_lock in this update. */
static bool blocked_on_lock(json_t *update, pid_t tid, unsigned long lock)
{
	json_t *b = json_object_get(thread_of(update, tid), "blocked_on");
	const char *obj = jstr(b, "object");
	return obj && strtoul(obj, NULL, 16) == lock && !strcmp(jstr(b, "kind"), "mutex");
}

static bool is_event(json_t *d, const char *what)
{
	const char *e = jstr(d, "event");
	return e && !strcmp(e, what);
}

/* The events of the watch, by kind: the threads and locks they name. */
#define MAXLINES 512
struct watch_log {
	json_t *updates[MAXLINES];
	size_t nupdates;
	json_t *events[MAXLINES];
	size_t nevents;
};

static void log_line(struct watch_log *w, json_t *d)
{
	if (json_object_get(d, "kind")) {
		cr_assert(w->nevents < MAXLINES);
		w->events[w->nevents++] = d;
	} else {
		cr_assert(w->nupdates < MAXLINES);
		w->updates[w->nupdates++] = d;
	}
}

/* Read the stream until an update captured after t, logging it all. */
static void read_until(struct watch_log *w, double t)
{
	for (;;) {
		json_t *d = next_line(60);
		cr_assert(d, "the stream ended");
		log_line(w, d);
		if (!json_object_get(d, "kind") && jtime(d, "captured_at") > t)
			return;
	}
}

static json_t *find_event(struct watch_log *w, const char *what, size_t *ret_count)
{
	json_t *found = NULL;
	size_t n = 0;
	for (size_t i = 0; i < w->nevents; i++)
		if (is_event(w->events[i], what)) {
			found = found ? found : w->events[i];
			n++;
		}
	if (ret_count)
		*ret_count = n;
	return found;
}

static double now_real(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void log_free(struct watch_log *w)
{
	for (size_t i = 0; i < w->nupdates; i++)
		json_decref(w->updates[i]);
	for (size_t i = 0; i < w->nevents; i++)
		json_decref(w->events[i]);
}

/* tinspect --watch 0.5 --hung-after 2 on fx_overtime: quiet while only
 * idle waits and progress, then the victim's wait behind the sleeping
 * holder, from the first update that saw it to the one that saw it end. */
Test(overtime, hung_then_recovered_and_lock_held)
{
	const double hung_after = 2.0;
	fx_start(&fx, "fx_overtime", NULL, 60);
	pid_t holder = fx_tid("holder"), victim = fx_tid("victim");
	unsigned long held = fx_lock_addr("held_lock");
	const char *opts[] = { "--watch", "0.5", "--hung-after", "2", "--json", NULL };
	fx_spawn_tinspect_on(&tin, opts, fx.pid);
	struct watch_log w = { 0 };

	/* quiet: idle pools, epoll, nanosleep, a contended lock in use, the
	 * holder asleep with its lock but nobody waiting for it */
	read_until(&w, now_real() + 3 * hung_after);
	cr_assert_eq(w.nevents, 0, "an event while nothing was stuck: %s",
		     w.nevents ? jstr(w.events[0], "event") : "");
	/* idle waits are followed all the same: a pool worker's cond wait
	 * keeps the start the first update saw */
	pid_t pool[3];
	cr_assert_eq(fx_tids("pool", pool, 3), 3);
	json_t *first = thread_of(w.updates[0], pool[0]);
	json_t *last = thread_of(w.updates[w.nupdates - 1], pool[0]);
	cr_assert_str_eq(jstr(first, "waiting_since"), jstr(w.updates[0], "captured_at"));
	cr_assert_str_eq(jstr(last, "waiting_since"), jstr(first, "waiting_since"),
			 "an idle cond wait was not followed across updates");
	cr_assert_str_eq(jstr(json_object_get(last, "blocked_on"), "kind"), "cond");

	fx_send(&fx, "block");
	double t_block = fx_answer_time("blocking ");
	free(fx_answer("blocked"));
	/* until both events came, and a little more */
	double deadline = now_real() + 60 * TEST_TIME_SCALE;
	while (!find_event(&w, "thread_hung", NULL) || !find_event(&w, "lock_held", NULL)) {
		cr_assert(now_real() < deadline, "no thread_hung or lock_held");
		read_until(&w, now_real());
	}
	read_until(&w, now_real() + 1);
	fx_send(&fx, "release");
	double t_acquired = fx_answer_time("acquired ");
	free(fx_answer("released"));
	read_until(&w, now_real() + 1);
	while (!find_event(&w, "thread_recovered", NULL) ||
	       !find_event(&w, "lock_released", NULL)) {
		cr_assert(now_real() < deadline, "no thread_recovered or lock_released");
		read_until(&w, now_real());
	}
	fx_kill(&tin);
	validate_stream();

	/* the updates: the first that saw the victim blocked starts its wait,
	 * the later ones keep that start, the first that did not ends it */
	size_t k0 = SIZE_MAX, k1 = SIZE_MAX;
	double max_gap = 0;
	for (size_t i = 0; i < w.nupdates; i++) {
		if (i)
		{
			double gap = jtime(w.updates[i], "captured_at") -
				     jtime(w.updates[i - 1], "captured_at");
			if (gap > max_gap)
				max_gap = gap;
		}
		bool b = blocked_on_lock(w.updates[i], victim, held);
		if (b && k0 == SIZE_MAX)
			k0 = i;
		if (!b && k0 != SIZE_MAX && k1 == SIZE_MAX)
			k1 = i;
	}
	cr_assert(k0 != SIZE_MAX && k1 != SIZE_MAX, "the wait was not seen begin and end");
	const char *since = jstr(thread_of(w.updates[k0], victim), "waiting_since");
	cr_assert_str_eq(since, jstr(w.updates[k0], "captured_at"));
	for (size_t i = k0; i < k1; i++)
		cr_assert_str_eq(jstr(thread_of(w.updates[i], victim), "waiting_since"), since,
				 "update %zu restarted the victim's wait", i);
	double t_since = jtime(thread_of(w.updates[k0], victim), "waiting_since");
	/* it began after the fixture said so (µs rounding), and the update
	 * before k0 did not see it */
	cr_assert(t_since >= t_block - 1e-6, "since %.6f before blocking %.6f", t_since, t_block);
	cr_assert(k0 == 0 || jtime(w.updates[k0 - 1], "captured_at") <= t_since);

	/* thread_hung: once, at the first update hung_after past since */
	size_t n;
	json_t *hung = find_event(&w, "thread_hung", &n);
	cr_assert_eq(n, 1, "thread_hung %zu times", n);
	cr_assert_eq(jint(hung, "tid"), victim);
	cr_assert_str_eq(jstr(hung, "name"), "victim");
	json_t *wait = json_object_get(hung, "wait");
	cr_assert_str_eq(jstr(wait, "kind"), "mutex");
	cr_assert_eq(strtoul(jstr(wait, "addr"), NULL, 16), held);
	cr_assert_str_eq(jstr(wait, "symbol"), "held_lock");
	cr_assert_eq(jint(hung, "owner"), holder);
	cr_assert_str_eq(jstr(hung, "since"), since);
	double t_hung = jtime(hung, "time");
	cr_assert(t_hung - t_since >= hung_after - 1e-6);
	size_t kh = k0;
	while (kh < k1 && strcmp(jstr(w.updates[kh], "captured_at"), jstr(hung, "time")))
		kh++;
	cr_assert(kh < k1, "thread_hung's time is no update's capture");
	cr_assert(jtime(w.updates[kh - 1], "captured_at") - t_since < hung_after,
		  "thread_hung came an update late");

	/* thread_recovered: at update k1; its seconds bound the real wait
	 * (fixture: blocking .. acquired) within the stream's own intervals */
	json_t *rec = find_event(&w, "thread_recovered", &n);
	cr_assert_eq(n, 1);
	cr_assert_eq(jint(rec, "tid"), victim);
	cr_assert_str_eq(jstr(rec, "how"), "moved_on");
	cr_assert_str_eq(jstr(rec, "since"), since);
	cr_assert_str_eq(jstr(rec, "time"), jstr(w.updates[k1], "captured_at"));
	double secs = json_number_value(json_object_get(rec, "seconds"));
	double real = t_acquired - t_block;
	cr_assert(secs - real <= max_gap + 0.01 && real - secs <= max_gap + 0.01,
		  "recovered after %.3f s, the fixture waited %.3f s (updates %.3f s apart "
		  "at most)", secs, real, max_gap);

	/* lock_held: the holder, with its stack, once; released once */
	json_t *lh = find_event(&w, "lock_held", &n);
	cr_assert_eq(n, 1, "lock_held %zu times (turn_lock must make none)", n);
	cr_assert_eq(strtoul(jstr(json_object_get(lh, "lock"), "addr"), NULL, 16), held);
	cr_assert_eq(jint(lh, "owner"), holder);
	cr_assert_str_eq(jstr(lh, "owner_name"), "holder");
	json_t *waiters = json_object_get(lh, "waiters");
	cr_assert_eq(json_array_size(waiters), 1);
	cr_assert_eq(json_integer_value(json_array_get(waiters, 0)), victim);
	bool holder_frame = false;
	size_t i;
	json_t *f;
	json_array_foreach(json_object_get(lh, "owner_stack"), i, f)
		holder_frame |= jstr(f, "symbol") && !strcmp(jstr(f, "symbol"), "holder_main");
	cr_assert(holder_frame, "the owner's stack has no holder_main");
	cr_assert(jtime(lh, "since") >= t_block - 1e-6);
	json_t *lr = find_event(&w, "lock_released", &n);
	cr_assert_eq(n, 1);
	cr_assert_eq(jint(lr, "owner"), holder);
	cr_assert_str_eq(jstr(lr, "how"), "no_waiters");
	cr_assert_str_eq(jstr(lr, "time"), jstr(w.updates[k1], "captured_at"));

	/* nothing about the idle threads or the contended ones, ever */
	pid_t quiet[16];
	size_t nq = fx_tids("pool", quiet, 16);
	nq += fx_tids("poller", quiet + nq, 16 - nq);
	nq += fx_tids("napper", quiet + nq, 16 - nq);
	nq += fx_tids("contend", quiet + nq, 16 - nq);
	cr_assert_eq(nq, 8);
	for (size_t e = 0; e < w.nevents; e++)
		for (size_t q = 0; q < nq; q++)
			cr_assert_neq(jint(w.events[e], "tid"), quiet[q],
				      "event %s about an idle or progressing thread",
				      jstr(w.events[e], "event"));
	log_free(&w);
}

/* The text: the age beside the thread, the events as sentences. */
Test(overtime, text_shows_wait_ages_and_events)
{
	fx_start(&fx, "fx_overtime", NULL, 60);
	pid_t victim = fx_tid("victim");
	fx_send(&fx, "block");
	free(fx_answer("blocked"));
	const char *args[] = { "--watch", "0.4", "--count", "6", "--hung-after", "1",
			       pidstr(fx.pid), NULL };
	struct run r;
	run_tinspect(&r, args, 120);
	cr_assert_eq(r.status, 0, "tinspect: %s", r.err ? r.err : "");
	char want[128];
	snprintf(want, sizeof want, "Thread %d \"victim\" [mutex, ", (int)victim);
	cr_assert(strstr(r.out, want), "no wait age in:\n%.3000s", r.out);
	snprintf(want, sizeof want, "thread %d \"victim\" hung: waiting for mutex 0x",
		 (int)victim);
	cr_assert(strstr(r.out, want), "no hung line");
	cr_assert(strstr(r.out, "lock held: mutex 0x"), "no lock held line");
	run_free(&r);
}

/* Run tinspect --json on pid into path (validated). */
static void snapshot_to(pid_t pid, char *path)
{
	strcpy(path, "/tmp/tinspect-ot-XXXXXX");
	int fd = mkstemp(path);
	cr_assert(fd >= 0);
	const char *args[] = { "--json", pidstr(pid), NULL };
	struct run r;
	run_tinspect(&r, args, 120);
	cr_assert(r.status == 0 || r.status == 1, "tinspect: %s", r.err ? r.err : "");
	cr_assert(schema_valid(r.out, r.out_len));
	cr_assert_eq(write(fd, r.out, r.out_len), (ssize_t)r.out_len);
	close(fd);
	run_free(&r);
}

static json_t *run_diff(bool json, int *ret_status, char **ret_err)
{
	const char *args[] = { "--diff", json ? "--json" : tmp_a, json ? tmp_a : tmp_b,
			       json ? tmp_b : NULL, NULL };
	struct run r;
	run_tinspect(&r, args, 60);
	*ret_status = r.status;
	json_t *d = NULL;
	if (json && r.status == 0) {
		cr_assert(schema_valid(r.out, r.out_len), "the diff does not validate");
		json_error_t je;
		d = json_loadb(r.out, r.out_len, 0, &je);
		cr_assert(d, "%s", je.text);
	}
	if (ret_err)
		*ret_err = strdup(r.err ? r.err : "");
	run_free(&r);
	return d;
}

static bool listed(json_t *arr, pid_t tid)
{
	size_t i;
	json_t *t;
	json_array_foreach(arr, i, t)
		if (jint(t, "tid") == tid)
			return true;
	return false;
}

static json_t *entry_of(json_t *arr, pid_t tid)
{
	size_t i;
	json_t *t;
	json_array_foreach(arr, i, t)
		if (jint(t, "tid") == tid)
			return t;
	return NULL;
}

Test(overtime, diff_of_a_changing_fixture)
{
	fx_start(&fx, "fx_overtime", NULL, 60);
	pid_t holder = fx_tid("holder"), victim = fx_tid("victim");
	pid_t transient = fx_tid("transient"), poller = fx_tid("poller");
	unsigned long held = fx_lock_addr("held_lock"), turn = fx_lock_addr("turn_lock");
	pid_t pool[3], contend[3];
	fx_tids("pool", pool, 3);
	fx_tids("contend", contend, 3);
	fx_send(&fx, "block");
	free(fx_answer("blocked"));
	snapshot_to(fx.pid, tmp_a);
	fx_send(&fx, "spawn");
	char *l = fx_answer("spawned ");
	pid_t newcomer = (pid_t)atoi(l + 8);
	free(l);
	fx_send(&fx, "end");
	free(fx_answer("ended "));
	snapshot_to(fx.pid, tmp_b);

	int status;
	json_t *d = run_diff(true, &status, NULL);
	cr_assert_eq(status, 0);
	cr_assert(json_is_true(json_object_get(d, "same_process")));
	cr_assert(json_number_value(json_object_get(d, "seconds_between")) > 0);
	json_t *appeared = json_object_get(d, "threads_appeared");
	json_t *gone = json_object_get(d, "threads_gone");
	cr_assert_eq(json_array_size(appeared), 1);
	cr_assert(listed(appeared, newcomer));
	cr_assert_str_eq(jstr(json_array_get(appeared, 0), "name"), "newcomer");
	cr_assert_eq(json_array_size(gone), 1);
	cr_assert(listed(gone, transient));

	json_t *same = json_object_get(d, "same_wait");
	json_t *v = entry_of(same, victim);
	cr_assert(v, "the victim's wait is not in both");
	cr_assert_str_eq(jstr(json_object_get(v, "wait"), "kind"), "mutex");
	cr_assert_eq(strtoul(jstr(json_object_get(v, "wait"), "addr"), NULL, 16), held);
	cr_assert_str_eq(jstr(json_object_get(v, "wait"), "symbol"), "held_lock");
	cr_assert_str_eq(jstr(v, "function"), "victim_main");
	for (int i = 0; i < 3; i++) {
		json_t *p = entry_of(same, pool[i]);
		cr_assert(p, "pool worker %d not in the same wait", (int)pool[i]);
		cr_assert_str_eq(jstr(json_object_get(p, "wait"), "kind"), "cond");
		/* the contended threads make progress between the captures */
		cr_assert(!entry_of(same, contend[i]), "a contended thread listed as stuck");
	}
	json_t *pw = json_object_get(entry_of(same, poller), "wait");
	cr_assert_str_eq(jstr(pw, "kind"), "syscall");
	cr_assert_str_eq(jstr(pw, "syscall"), SC_EPOLL_WAIT);
	cr_assert(entry_of(same, holder), "the holder sleeps in read() in both");

	json_t *locks = json_object_get(d, "locks_held");
	cr_assert_eq(json_array_size(locks), 1, "locks held in both: %zu (turn_lock "
		     "changes hands)", json_array_size(locks));
	json_t *lk = json_array_get(locks, 0);
	cr_assert_eq(strtoul(jstr(lk, "addr"), NULL, 16), held);
	cr_assert_neq(strtoul(jstr(lk, "addr"), NULL, 16), turn);
	cr_assert_eq(jint(lk, "owner"), holder);
	cr_assert_eq(jint(lk, "waiters_old"), 1);
	cr_assert_eq(jint(lk, "waiters_new"), 1);
	cr_assert_eq(json_array_size(json_object_get(d, "deadlocks")), 0);
	json_decref(d);

	/* the text says the same */
	const char *args[] = { "--diff", tmp_a, tmp_b, NULL };
	struct run r;
	run_tinspect(&r, args, 60);
	cr_assert_eq(r.status, 0);
	cr_assert(strstr(r.out, "threads that appeared (1)"));
	cr_assert(strstr(r.out, "threads that went away (1)"));
	cr_assert(strstr(r.out, "locks held by the same owner in both (1)"));
	cr_assert(strstr(r.out, "(held_lock) in victim_main"), "%s", r.out);
	run_free(&r);
}

Test(overtime, diff_keeps_a_deadlock)
{
	fx_start(&fx, "fx_lock_abba", NULL, 60);
	snapshot_to(fx.pid, tmp_a);
	snapshot_to(fx.pid, tmp_b);
	int status;
	json_t *d = run_diff(true, &status, NULL);
	cr_assert_eq(status, 0);
	json_t *dl = json_object_get(d, "deadlocks");
	cr_assert_eq(json_array_size(dl), 1);
	json_t *c = json_array_get(dl, 0);
	cr_assert_eq(json_array_size(json_object_get(c, "threads")), 2);
	cr_assert_eq(json_array_size(json_object_get(d, "locks_held")), 2);
	cr_assert(json_array_size(json_object_get(d, "same_wait")) >= 2);
	json_decref(d);
}

/* Another major version, a stream line, a broken file: refused, and the
 * message names what was found. */
Test(overtime, diff_refuses_other_documents)
{
	fx_start(&fx, "fx_lock_abba", NULL, 60);
	snapshot_to(fx.pid, tmp_b);
	strcpy(tmp_a, "/tmp/tinspect-ot-XXXXXX");
	int fd = mkstemp(tmp_a);
	cr_assert(fd >= 0);
	const char *old = "{\"format_version\":\"1.3\",\"threads\":[]}\n";
	cr_assert_eq(write(fd, old, strlen(old)), (ssize_t)strlen(old));
	close(fd);
	int status;
	char *err;
	run_diff(false, &status, &err);
	cr_assert_eq(status, 2);
	cr_assert(strstr(err, "format version 1.3"), "%s", err);
	cr_assert(strstr(err, "2.x"), "%s", err);
	free(err);

	FILE *f = fopen(tmp_a, "w");
	fputs("{\"format_version\":\"2.2\",\"kind\":\"summary\"}\n", f);
	fclose(f);
	run_diff(true, &status, &err);
	cr_assert_eq(status, 2);
	cr_assert(strstr(err, "not a snapshot"), "%s", err);
	free(err);

	f = fopen(tmp_a, "w");
	fputs("{\"format_version\":", f);
	fclose(f);
	run_diff(false, &status, &err);
	cr_assert_eq(status, 2);
	cr_assert(strstr(err, "not one JSON document"), "%s", err);
	free(err);
}

/* One member of a snapshot changed: the JSON path of the member's parent
 * (NULL-terminated keys, "#N" for an array index), its key, the value. */
struct mutation {
	const char *where[6];
	const char *key;
	json_t *(*value)(void);
	const char *path;	/* what the refusal must name */
};

static json_t *zero(void) { return json_integer(0); }
static json_t *int64_min(void) { return json_integer(INT64_MIN); }
static json_t *minus_one(void) { return json_integer(-1); }
static json_t *empty_array(void) { return json_array(); }
static json_t *bad_time(void) { return json_string("2024-1-01T00:00:00.000000Z"); }
static json_t *bad_version(void) { return json_string("2.x"); }
static json_t *bad_hex(void) { return json_string("0xG"); }
static json_t *bad_kind(void) { return json_string("spinlock"); }
static json_t *negative_cpu(void) { return json_real(-1.5); }

static const struct mutation mutations[] = {
	{ { "threads", "#1", NULL }, "tid", zero, "threads[1].tid" },
	{ { "threads", "#0", NULL }, "tid", int64_min, "threads[0].tid" },
	{ { "threads", "#0", "cpu", NULL }, "context_switches", int64_min,
	  "threads[0].cpu.context_switches" },
	{ { "threads", "#2", "cpu", NULL }, "user_s", negative_cpu, "threads[2].cpu.user_s" },
	{ { NULL }, "captured_at", bad_time, "captured_at" },
	{ { NULL }, "format_version", bad_version, "format_version" },
	{ { "process", NULL }, "pid", minus_one, "process.pid" },
	{ { "locks", "#0", NULL }, "owner", zero, "locks[0].owner" },
	{ { "locks", "#0", "waiters", "#0", NULL }, "tid", int64_min,
	  "locks[0].waiters[0].tid" },
	{ { "deadlocks", "#0", NULL }, "threads", empty_array, "deadlocks[0].threads" },
	{ { "threads", "#1", "stack", "frames", "#0", NULL }, "pc", bad_hex,
	  "threads[1].stack.frames[0].pc" },
	{ { "threads", "#1", "blocked_on", NULL }, "kind", bad_kind,
	  "threads[1].blocked_on.kind" },
};

/* The mutation applied to a copy of doc. */
static json_t *mutated(json_t *doc, const struct mutation *m)
{
	json_t *copy = json_deep_copy(doc), *o = copy;
	for (size_t i = 0; m->where[i]; i++)
		o = m->where[i][0] == '#' ? json_array_get(o, (size_t)atoi(m->where[i] + 1))
					  : json_object_get(o, m->where[i]);
	cr_assert(json_is_object(o), "the snapshot has no %s", m->path);
	json_object_set_new(o, m->key, m->value());
	return copy;
}

/* A document is input from someone else: a member that fails the
 * snapshot schema is refused with its path (a tid of 0 or -2^63 went
 * through to threads_appeared; a context-switch count of -2^63 made a
 * signed overflow). */
Test(overtime, diff_refuses_members_out_of_the_schema)
{
	fx_start(&fx, "fx_lock_abba", NULL, 60);
	snapshot_to(fx.pid, tmp_b);
	json_error_t je;
	json_t *doc = json_load_file(tmp_b, 0, &je);
	cr_assert(doc, "%s", je.text);
	strcpy(tmp_a, "/tmp/tinspect-ot-XXXXXX");
	int fd = mkstemp(tmp_a);
	cr_assert(fd >= 0);
	close(fd);
	for (size_t i = 0; i < sizeof mutations / sizeof *mutations; i++) {
		json_t *m = mutated(doc, &mutations[i]);
		cr_assert_eq(json_dump_file(m, tmp_a, 0), 0);
		json_decref(m);
		int status;
		char *err;
		json_t *d = run_diff(true, &status, &err);
		cr_assert_eq(status, 2, "%s: exit %d (%s)", mutations[i].path, status, err);
		cr_assert(strstr(err, mutations[i].path), "%s: %s", mutations[i].path, err);
		json_decref(d);
		free(err);
	}
	json_decref(doc);
}

/* A FIFO given for a document: refused at once, not waited on. */
Test(overtime, diff_of_a_fifo_does_not_block)
{
	fx_start(&fx, "fx_lock_abba", NULL, 60);
	snapshot_to(fx.pid, tmp_b);
	strcpy(tmp_a, "/tmp/tinspect-ot-XXXXXX");
	cr_assert(mkdtemp(tmp_a));
	char fifo[96];
	snprintf(fifo, sizeof fifo, "%s/fifo", tmp_a);
	cr_assert_eq(mkfifo(fifo, 0600), 0);
	const char *args[] = { "--diff", fifo, tmp_b, NULL };
	struct run r;
	run_tinspect(&r, args, 30);
	unlink(fifo);
	rmdir(tmp_a);
	tmp_a[0] = '\0';
	cr_assert(!r.timed_out, "--diff waited on the FIFO");
	cr_assert_eq(r.status, 2);
	cr_assert(r.err && strstr(r.err, "not a regular file"), "%s", r.err);
	run_free(&r);
}

/* --max-duty 1 with a 50 ms interval on 300 more threads: every interval
 * is at least 100 times the freeze before it, by the stream's own
 * timestamps; the stream said why. */
Test(overtime, max_duty_lengthens_the_interval)
{
	const char *fargs[] = { "300", NULL };
	fx_start(&fx, "fx_overtime", fargs, 60);
	const char *opts[] = { "--watch", "0.05", "--max-duty", "1", "--summary", "--json",
			       "--count", "6", NULL };
	fx_spawn_tinspect_on(&tin, opts, fx.pid);
	json_t *sums[16];
	size_t ns = 0, nchanged = 0;
	json_t *d;
	while ((d = next_line(60))) {
		if (is_event(d, "interval_changed")) {
			nchanged++;
			cr_assert_str_eq(jstr(d, "reason"), "max_duty");
			double iv = json_number_value(json_object_get(d, "interval_s"));
			double fr = (double)jint(d, "freeze_us") / 1e6;
			cr_assert(iv >= fr * 100 * 0.999, "interval %.6f for freeze %.6f", iv, fr);
			json_decref(d);
		} else if (!strcmp(jstr(d, "kind"), "summary") && ns < 16) {
			sums[ns++] = d;
		} else {
			json_decref(d);
		}
	}
	validate_stream();
	cr_assert_eq(ns, 6);
	cr_assert(nchanged >= 1, "the interval never grew");
	for (size_t i = 0; i + 1 < ns; i++) {
		double fr = (double)jint(sums[i], "freeze_us") / 1e6;
		double iv = json_number_value(json_object_get(sums[i], "interval_ms")) / 1e3;
		double gap = jtime(sums[i + 1], "time") - jtime(sums[i], "time");
		double duty = json_number_value(json_object_get(sums[i], "duty_cycle"));
		cr_assert(duty >= 0 && duty <= 1);
		cr_assert(iv >= 0.05 - 1e-9 && iv >= fr * 100 * 0.999,
			  "update %zu: interval %.4f s for a freeze of %.6f s", i + 1, iv, fr);
		/* the next capture came no earlier than the interval said.
		 * Updates start an interval apart, but the stamps are of the
		 * stops, after each update's scan of /proc: a scan can take
		 * tens of ms less than the one before on a loaded machine
		 * (66 ms less once, in a CI run beside other builds) */
		cr_assert(gap >= iv * 0.9 || gap >= iv - 0.1,
			  "update %zu: next capture %.4f s later, interval %.4f s",
			  i + 1, gap, iv);
	}
	for (size_t i = 0; i < ns; i++)
		json_decref(sums[i]);
}
