/*
 * test_lockorder: lock order learned by watching.  The real tinspect
 * watches fx_lockorder, whose paths take locks in orders that can
 * deadlock while their timing keeps them apart (so they never do), and
 * must report the potential deadlock as soon as both orders were seen:
 *
 *  - A then B and B then A on mutexes, all-stop (with the Prometheus
 *    file) and --nonblocking (full snapshot lines): one
 *    lock_order_inversion event naming the locks, the threads of each
 *    order and their stacks; the saved graph, read back, says so and
 *    --check gives 12;
 *  - a three-lock ring, in the text stream;
 *  - rwlocks taken for writing;
 *  - consistent order, by the fixture's two paths and by fx_lock_contend's
 *    heavy contention: orders learned, never an inversion, the waits that
 *    could not contribute counted;
 *  - one order per run, two runs on two processes: merged through the
 *    file into an inversion;
 *  - one-shot --check --lock-order: a real deadlock is 10, not 12; a file
 *    that is no graph is status 2 with the reason.
 *
 * Every wait is for a line of the stream or of the fixture, with a
 * deadline; every process is killed by its PID.
 */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

/* How long a stream may take to show what it must, on a loaded machine */
#define DEADLINE_S 120

static struct fixture fx, fx2, tin;
static struct kept_lines stream;
static char dir[64];

static void teardown(void)
{
	fx_kill(&tin);
	fx_kill(&fx);
	fx_kill(&fx2);
	kept_free(&stream);
	if (dir[0])
		remove_tree(dir);
	dir[0] = '\0';
}

TestSuite(lockorder, .fini = teardown, .timeout = 600);

/* A file of the test's scratch directory (made on first use). */
static const char *scratch(const char *name)
{
	static char path[4][128];
	static int turn;
	if (!dir[0]) {
		strcpy(dir, "/tmp/tinspect-lo.XXXXXX");
		cr_assert(mkdtemp(dir));
	}
	char *p = path[turn++ % 4];
	snprintf(p, sizeof path[0], "%s/%s", dir, name);
	return p;
}

static pid_t role_tid(const struct fixture *f, const char *role)
{
	char prefix[64];
	snprintf(prefix, sizeof prefix, "tid %s ", role);
	const char *l = fx_line(f, prefix);
	cr_assert(l, "the fixture did not report %s", role);
	return (pid_t)atoi(l + strlen(prefix));
}

static long long jint(json_t *o, const char *k)
{
	return json_integer_value(json_object_get(o, k));
}

static bool is_event(json_t *d, const char *what)
{
	const char *e = jstr(d, "event");
	return e && !strcmp(e, what);
}

/* The fixture's count of paths run: it grows (nothing deadlocked). */
static unsigned long progress(struct fixture *f)
{
	fx_send(f, "");
	for (;;) {
		char *l = fx_read_line(f, 60);
		cr_assert(l, "the fixture did not answer");
		unsigned long n;
		bool ok = sscanf(l, "progress %lu", &n) == 1;
		free(l);
		if (ok)
			return n;
	}
}

/* tinspect's end after SIGTERM: it dies of it, having written its files. */
static void stop_tinspect(void)
{
	kill(tin.pid, SIGTERM);
	int st;
	cr_assert_eq(waitpid(tin.pid, &st, 0), tin.pid);
	tin.pid = 0;
	cr_assert(!wrapper_failed(WIFEXITED(st) ? WEXITSTATUS(st) : -1),
		  "%s found errors in tinspect", getenv("TINSPECT_WRAPPER"));
	cr_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM,
		  "tinspect did not die of SIGTERM (status 0x%x)", st);
}

/* An update line that counts no inversion and no deadlock. */
static void check_none(json_t *d)
{
	cr_assert_eq(json_array_size(json_object_get(d, "deadlocks")), 0,
		     "a deadlock in a program that never deadlocks");
	if (jstr(d, "kind"))
		cr_assert_eq(jint(d, "lock_order_inversions"), 0);
	else
		cr_assert_eq(json_array_size(json_object_get(
				     json_object_get(d, "lock_order"), "inversions")), 0);
}

/*
 * Read the stream until the first lock_order_inversion event; every update
 * before the one that found it must say there was none (summary lines: 0
 * inversions, no deadlock; snapshot lines: no inversion in lock_order).
 * The event (the caller frees it); *ret_update the update line just
 * before it, the one that found it.
 */
static json_t *until_inversion(json_t **ret_update)
{
	json_t *last = NULL;
	for (;;) {
		json_t *d = kept_next_line(&tin, &stream, DEADLINE_S);
		cr_assert(d, "no lock_order_inversion within %d s", DEADLINE_S);
		if (is_event(d, "lock_order_inversion")) {
			*ret_update = last;
			return d;
		}
		const char *kind = jstr(d, "kind");
		if (kind && !strcmp(kind, "event")) {
			json_decref(d);
			continue;
		}
		if (last)
			check_none(last);
		json_decref(last);
		last = d;
	}
}

/* The inversion names these locks (symbols, any order) and each order's
 * thread is the path that takes its locks in that order; it closes. */
struct path_role {
	const char *first, *then, *role;
};

static void check_inversion(json_t *ev, const struct fixture *f,
			    const struct path_role *paths, size_t n, bool whole_stack)
{
	json_t *locks = json_object_get(ev, "locks");
	json_t *orders = json_object_get(ev, "orders");
	cr_assert_eq(json_array_size(locks), n);
	cr_assert_eq(json_array_size(orders), n);
	cr_assert_eq(json_is_true(json_object_get(ev, "potential_deadlock")), true);
	for (size_t i = 0; i < n; i++) {
		json_t *o = json_array_get(orders, i);
		const char *first = jstr(json_array_get(locks, (size_t)jint(o, "first")), "symbol");
		const char *then = jstr(json_array_get(locks, (size_t)jint(o, "then")), "symbol");
		cr_assert(first && then, "an order's locks have no symbol");
		cr_assert_eq((size_t)jint(o, "then"), (i + 1) % n, "the orders close the cycle");
		const struct path_role *p = NULL;
		for (size_t k = 0; k < n; k++)
			if (!strcmp(paths[k].first, first) && !strcmp(paths[k].then, then))
				p = &paths[k];
		cr_assert(p, "an order %s then %s that no path takes", first, then);
		json_t *th = json_object_get(o, "thread");
		cr_assert_eq(jint(th, "tid"), role_tid(f, p->role),
			     "%s then %s not by %s", first, then, p->role);
		cr_assert_eq(jint(th, "pid"), f->pid);
		/* its stack: waiting in take_in_order, called from run_path
		 * (a nonblocking capture knows pc and sp only: the stack may end
		 * before the caller) */
		json_t *st = json_object_get(o, "waiting_stack");
		bool take = false, run = false;
		for (size_t k = 0; k < json_array_size(st); k++) {
			const char *s = jstr(json_array_get(st, k), "symbol");
			take |= s && !strcmp(s, "take_in_order");
			run |= s && !strcmp(s, "run_path");
		}
		cr_assert(take && (run || !whole_stack), "%s's stack is not its path's",
			  p->role);
		cr_assert_geq(jint(o, "count"), 1);
	}
}

static const struct path_role ABBA[] = {
	{ "order_a", "order_b", "path_ab" }, { "order_b", "order_a", "path_ba" },
};

/* The saved graph: valid, and read back as text it names the inversion;
 * --check gives 12. */
static void check_saved(const char *file, const char *first, const char *then)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = fopen(file, "r");
	cr_assert(f, "%s was not written", file);
	FILE *m = open_memstream(&text, &len);
	char buf[4096];
	size_t got;
	while ((got = fread(buf, 1, sizeof buf, f)) > 0)
		fwrite(buf, 1, got, m);
	fclose(f);
	fclose(m);
	cr_assert(schema_valid(text, len), "%s does not validate", file);
	free(text);

	struct run r;
	const char *args[] = { "--lock-order", file, "--check", NULL };
	run_tinspect(&r, args, 60);
	cr_assert_eq(r.status, 12, "--check of a graph with an inversion: %d (%s)",
		     r.status, r.err);
	char want[128];
	snprintf(want, sizeof want, "%s then %s", first, then);
	cr_assert(strstr(r.out, "POTENTIAL DEADLOCK") && strstr(r.out, want),
		  "the saved graph read back: %s", r.out);
	run_free(&r);
	const char *jargs[] = { "--lock-order", file, "--json", NULL };
	run_tinspect(&r, jargs, 60);
	cr_assert_eq(r.status, 0);
	cr_assert(schema_valid(r.out, r.out_len));
	run_free(&r);
}

static void start_fixture(struct fixture *f, const char *const *args)
{
	fx_start(f, "fx_lockorder", args, 60);
}

Test(lockorder, abba_mutexes_all_stop)
{
	const char *args[] = { "abba", NULL };
	start_fixture(&fx, args);
	unsigned long before = progress(&fx);
	const char *file = scratch("graph.json"), *prom = scratch("t.prom");
	const char *opts[] = { "--watch", "0.3", "--json", "--summary", "--lock-order",
			       file, "--prometheus", prom, NULL };
	fx_spawn_tinspect_on(&tin, opts, fx.pid);
	json_t *update;
	json_t *ev = until_inversion(&update);
	check_inversion(ev, &fx, ABBA, 2, true);
	cr_assert(update && jint(update, "lock_order_inversions") == 1,
		  "the update that found it counts it");
	cr_assert_eq(jint(update, "lock_order_edges"), 2);
	/* the textfile of that update counts it too */
	FILE *p = fopen(prom, "r");
	cr_assert(p);
	char line[256];
	bool counted = false;
	while (fgets(line, sizeof line, p))
		counted |= !strcmp(line, "tinspect_lock_order_inversions 1\n");
	fclose(p);
	cr_assert(counted, "tinspect_lock_order_inversions 1 not in the textfile");
	/* it is reported once: three more updates count it, no event */
	for (int updates = 0; updates < 3;) {
		json_t *d = kept_next_line(&tin, &stream, DEADLINE_S);
		cr_assert(d, "the stream ended");
		cr_assert_not(is_event(d, "lock_order_inversion"), "reported twice");
		if (!jstr(d, "event")) {
			cr_assert_eq(jint(d, "lock_order_inversions"), 1);
			updates++;
		}
		json_decref(d);
	}
	stop_tinspect();
	cr_assert_gt(progress(&fx), before, "the fixture deadlocked");
	json_decref(ev);
	json_decref(update);
	kept_validate(&stream);
	check_saved(file, "order_a", "order_b");
}

Test(lockorder, abba_mutexes_nonblocking)
{
	const char *args[] = { "abba", NULL };
	start_fixture(&fx, args);
	const char *file = scratch("graph.json");
	const char *opts[] = { "--watch", "0.3", "--json", "--nonblocking",
			       "--update-priority", "normal", "--lock-order", file, NULL };
	fx_spawn_tinspect_on(&tin, opts, fx.pid);
	json_t *update;
	json_t *ev = until_inversion(&update);
	check_inversion(ev, &fx, ABBA, 2, false);
	/* a full snapshot line: nothing stopped, the graph in lock_order */
	cr_assert(update);
	json_t *cap = json_object_get(update, "capture");
	cr_assert_str_eq(jstr(cap, "mode"), "nonblocking");
	cr_assert_eq(jint(cap, "freeze_us"), 0);
	json_t *lo = json_object_get(update, "lock_order");
	cr_assert_eq(json_array_size(json_object_get(lo, "inversions")), 1);
	cr_assert_eq(jint(lo, "edges"), 2);
	cr_assert_eq(jint(lo, "locks"), 2);
	/* the session remembers the locks: an update where fewer are waited
	 * on still reads the words of both, without stopping anything */
	for (bool seen = false; !seen;) {
		json_t *d = kept_next_line(&tin, &stream, DEADLINE_S);
		cr_assert(d, "no update read the words of a lock nobody waited on");
		json_t *l = json_object_get(d, "lock_order");
		seen = l && jint(l, "locks_tracked") == 2 &&
		       json_array_size(json_object_get(d, "locks")) < 2;
		json_decref(d);
	}
	stop_tinspect();
	json_decref(ev);
	json_decref(update);
	kept_validate(&stream);
	check_saved(file, "order_a", "order_b");
}

Test(lockorder, three_lock_ring_in_the_text_stream)
{
	const char *args[] = { "ring", NULL };
	start_fixture(&fx, args);
	const char *opts[] = { "--watch", "0.3", "--summary", NULL };
	fx_spawn_tinspect_on(&tin, opts, fx.pid);
	char *found = NULL;
	while (!found) {
		char *l = fx_read_line(&tin, DEADLINE_S);
		cr_assert(l, "no lock order inversion in the text stream");
		if (strstr(l, "Z lock order inversion (potential deadlock, no thread "
			   "deadlocked): "))
			found = l;
		else
			free(l);
	}
	const char *orders[][3] = { { "ring_a then ring_b", "ring_ab" },
				    { "ring_b then ring_c", "ring_bc" },
				    { "ring_c then ring_a", "ring_ca" } };
	for (size_t i = 0; i < 3; i++) {
		char want[128];
		snprintf(want, sizeof want, "%s in thread %d \"%s\"", orders[i][0],
			 (int)role_tid(&fx, orders[i][1]), orders[i][1]);
		cr_assert(strstr(found, want), "%s not in: %s", want, found);
	}
	free(found);
	fx_kill(&tin);
}

Test(lockorder, rwlocks_held_for_writing)
{
	const char *args[] = { "rw", NULL };
	start_fixture(&fx, args);
	const char *opts[] = { "--watch", "0.3", "--json", "--summary", NULL };
	fx_spawn_tinspect_on(&tin, opts, fx.pid);
	json_t *update;
	json_t *ev = until_inversion(&update);
	const struct path_role rw[] = { { "rw_a", "rw_b", "path_ab" },
					{ "rw_b", "rw_a", "path_ba" } };
	check_inversion(ev, &fx, rw, 2, true);
	json_t *locks = json_object_get(ev, "locks");
	for (size_t i = 0; i < 2; i++)
		cr_assert_str_eq(jstr(json_array_get(locks, i), "kind"), "rwlock");
	json_decref(ev);
	json_decref(update);
	fx_kill(&tin);
	kept_validate(&stream);
}

/*
 * A watch of a program whose orders are all consistent: once at least
 * min_edges orders are learned, `more` more updates; no inversion is
 * ever reported.  The graph saved at the end.
 */
static void watch_consistent(const struct fixture *f, const char *file,
			     long long min_edges, int more, bool nonblocking)
{
	/* nonblocking updates at normal priority: at SCHED_IDLE (a watch's
	 * default) they would wait for a CPU that busy fixtures of this and
	 * the parallel test never leave free */
	const char *opts[] = { "--watch", "0.1", "--json", "--summary", "--lock-order",
			       file, nonblocking ? "--nonblocking" : NULL,
			       "--update-priority", "normal", NULL };
	fx_spawn_tinspect_on(&tin, opts, f->pid);
	int after = -1;
	while (after < more) {
		json_t *d = kept_next_line(&tin, &stream, DEADLINE_S);
		cr_assert(d, "the stream ended, or %lld orders were not learned in "
			  "%d s", min_edges, DEADLINE_S);
		cr_assert_not(is_event(d, "lock_order_inversion"),
			      "an inversion reported in a consistent order");
		if (!jstr(d, "event")) {
			cr_assert_eq(jint(d, "lock_order_inversions"), 0);
			cr_assert_eq(json_array_size(json_object_get(d, "deadlocks")), 0);
			if (after >= 0 || jint(d, "lock_order_edges") >= min_edges)
				after++;
		}
		json_decref(d);
	}
	stop_tinspect();
	kept_validate(&stream);
}

static json_t *load_graph(const char *file)
{
	json_error_t je;
	json_t *g = json_load_file(file, 0, &je);
	cr_assert(g, "%s: %s", file, je.text);
	return g;
}

Test(lockorder, consistent_order_is_no_inversion)
{
	const char *args[] = { "consistent", NULL };
	start_fixture(&fx, args);
	for (int nb = 0; nb < 2; nb++) {
		const char *file = scratch(nb ? "nb.json" : "stop.json");
		watch_consistent(&fx, file, 1, 20, nb);
		json_t *g = load_graph(file);
		json_t *locks = json_object_get(g, "locks"), *e;
		size_t i;
		cr_assert_eq(json_array_size(json_object_get(g, "inversions")), 0);
		cr_assert_geq(json_array_size(json_object_get(g, "edges")), 1);
		json_array_foreach(json_object_get(g, "edges"), i, e) {
			const char *from = jstr(json_array_get(locks, (size_t)jint(e, "from")), "symbol");
			const char *to = jstr(json_array_get(locks, (size_t)jint(e, "to")), "symbol");
			cr_assert(from && to && !strcmp(from, "order_a") && !strcmp(to, "order_b"),
				  "an order %s then %s", from ? from : "?", to ? to : "?");
		}
		json_decref(g);
	}
}

Test(lockorder, heavy_contention_in_index_order_is_no_inversion)
{
	const char *args[] = { "12", NULL };
	fx_start(&fx, "fx_lock_contend", args, 60);
	for (int nb = 0; nb < 2; nb++) {
		const char *file = scratch(nb ? "nb.json" : "stop.json");
		watch_consistent(&fx, file, 1, 15, nb);
		json_t *g = load_graph(file);
		json_t *locks = json_object_get(g, "locks"), *e;
		size_t i;
		cr_assert_eq(json_array_size(json_object_get(g, "inversions")), 0);
		json_array_foreach(json_object_get(g, "edges"), i, e) {
			json_t *a = json_array_get(locks, (size_t)jint(e, "from"));
			json_t *b = json_array_get(locks, (size_t)jint(e, "to"));
			cr_assert_str_eq(jstr(a, "symbol"), "bank_locks");
			cr_assert_str_eq(jstr(b, "symbol"), "bank_locks");
			cr_assert_lt(jint(a, "offset"), jint(b, "offset"),
				     "bank_locks+%lld then bank_locks+%lld",
				     jint(a, "offset"), jint(b, "offset"));
		}
		/* the ping-pong condvar and the semaphore gave waits that could
		 * not contribute, and they are counted */
		json_t *w = json_object_get(g, "waits");
		cr_assert_gt(jint(w, "contributed"), 0);
		cr_assert_gt(jint(w, "cond") + jint(w, "sem"), 0,
			     "the waits that could not contribute are not counted");
		json_decref(g);
	}
}

/* Run 1 learns A then B in one process, run 2 B then A in another: the
 * second run finds the inversion through the file. */
Test(lockorder, orders_of_two_runs_merge_through_the_file)
{
	const char *file = scratch("merged.json");
	const char *ab[] = { "abba", "ab", NULL }, *ba[] = { "abba", "ba", NULL };
	start_fixture(&fx, ab);
	const char *opts[] = { "--watch", "0.2", "--json", "--summary", "--lock-order",
			       file, NULL };
	fx_spawn_tinspect_on(&tin, opts, fx.pid);
	for (;;) {
		json_t *d = kept_next_line(&tin, &stream, DEADLINE_S);
		cr_assert(d, "order_a then order_b was not learned");
		cr_assert_not(is_event(d, "lock_order_inversion"));
		bool learned = !jstr(d, "event") && jint(d, "lock_order_edges") == 1;
		json_decref(d);
		if (learned)
			break;
	}
	stop_tinspect();
	fx_kill(&fx);
	kept_validate(&stream);

	start_fixture(&fx2, ba);
	fx_spawn_tinspect_on(&tin, opts, fx2.pid);
	json_t *update;
	json_t *ev = until_inversion(&update);
	json_t *orders = json_object_get(ev, "orders");
	pid_t pids[2];
	for (size_t i = 0; i < 2; i++)
		pids[i] = (pid_t)jint(json_object_get(json_array_get(orders, i), "thread"),
				      "pid");
	cr_assert_neq(pids[0], pids[1], "the two orders come from the two processes");
	cr_assert(pids[0] == fx2.pid || pids[1] == fx2.pid);
	stop_tinspect();
	json_decref(ev);
	json_decref(update);
	kept_validate(&stream);
	json_t *g = load_graph(file);
	cr_assert_eq(jint(g, "runs"), 2);
	json_decref(g);
	check_saved(file, "order_b", "order_a");
}

Test(lockorder, one_shot_check_and_files_that_are_no_graph)
{
	/* a real deadlock: both orders at once, and the deadlock wins */
	fx_start(&fx, "fx_lock_abba", NULL, 60);
	const char *file = scratch("oneshot.json");
	struct run r;
	const char *args[] = { "--check", "--lock-order", file, pidstr(fx.pid), NULL };
	run_tinspect(&r, args, 120);
	cr_assert_eq(r.status, 10, "a deadlock: status %d (%s)", r.status, r.err);
	cr_assert(strstr(r.out, "Lock order inversion: POTENTIAL DEADLOCK"),
		  "the text has no lock order section: %s", r.out);
	run_free(&r);
	fx_kill(&fx);
	/* read back alone, the graph holds the potential deadlock: 12 */
	const char *show[] = { "--lock-order", file, "--check", NULL };
	run_tinspect(&r, show, 60);
	cr_assert_eq(r.status, 12, "%s", r.err);
	run_free(&r);
	const char *plain[] = { "--lock-order", file, NULL };
	run_tinspect(&r, plain, 60);
	cr_assert_eq(r.status, 0, "without --check the status is 0");
	run_free(&r);

	/* files that are no graph */
	const char *bad = scratch("bad.json");
	FILE *f = fopen(bad, "w");
	fputs("{\"format_version\": \"9.0\", \"kind\": \"lock_order\"}\n", f);
	fclose(f);
	run_tinspect(&r, (const char *[]){ "--lock-order", bad, NULL }, 60);
	cr_assert_eq(r.status, 2);
	cr_assert(strstr(r.err, "format version 9.0"), "%s", r.err);
	run_free(&r);
	f = fopen(bad, "w");
	fputs("not json", f);
	fclose(f);
	const char *cons[] = { "consistent", NULL };
	start_fixture(&fx, cons);
	run_tinspect(&r, (const char *[]){ "--lock-order", bad, pidstr(fx.pid), NULL }, 60);
	cr_assert_eq(r.status, 2, "a run on a damaged file: %d", r.status);
	cr_assert(strstr(r.err, "not one JSON document"), "%s", r.err);
	run_free(&r);
	run_tinspect(&r, (const char *[]){ "--lock-order", bad, "--no-lock-order",
					   pidstr(fx.pid), NULL }, 60);
	cr_assert_eq(r.status, 2);
	run_free(&r);
}
