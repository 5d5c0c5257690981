/*
 * test_lockgraph: the lock-order graph as pure data
 * (agent/lockorder/lockgraph.c) and its file
 * (agent/lockorder/lockgraph_file.c), on observations made up here.
 *
 *  - one thread's orders never make an inversion; two threads' do, once,
 *    rotated to its smallest lock; a three-lock ring; a ring that becomes
 *    an inversion when one of its orders is seen in a second thread;
 *  - an order counts once per update;
 *  - the frame that holds a lock, from a wait on it with the same callers;
 *  - the file: written, read back into an equal graph (and valid against
 *    its schema), merged with a new run; documents that are damaged, of
 *    another major version or another kind, or whose indexes point
 *    nowhere, are refused with the reason, never half read.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "agent.h"	/* TINSPECT_FORMAT_VERSION: the files' version */
#include "lockorder.h"

static struct lg_frame F(const char *sym, uint64_t off)
{
	return (struct lg_frame){ sym, "/bin/prog", off };
}

/* An observation of thread tid at update u with frames f[0..n). */
static struct lg_seen seen(pid_t tid, uint64_t u, struct lg_frame *f, size_t n)
{
	return (struct lg_seen){
		.thread = { 100, tid, 0x7f0000000000ull + (uint64_t)tid, "worker" },
		.time_ns = 1700000000000000000ll + (int64_t)u * 1000000000,
		.update = u,
		.stack = { f, n },
	};
}

static size_t lock(struct lockgraph *g, const char *name)
{
	long i = lg_lock_get(g, name, LG_MUTEX, 0x1000 + (uint64_t)strlen(name), 100,
			     name, "/bin/prog", 0);
	cr_assert_geq(i, 0);
	return (size_t)i;
}

/* Thread tid, at update u, held a while waiting for b. */
static unsigned order(struct lockgraph *g, size_t a, size_t b, pid_t tid, uint64_t u)
{
	struct lg_frame f[2] = { F("lk_lock", 0), F("path", 0x10 * (uint64_t)tid) };
	struct lg_seen s = seen(tid, u, f, 2);
	size_t e;
	unsigned news = lg_observe(g, a, b, &s, -1, NULL, &e);
	if (news & (LG_NEWS_EDGE | LG_NEWS_THREAD))
		lg_find_inversions(g, e, s.time_ns);
	return news;
}

Test(lockgraph, one_thread_both_orders_is_no_inversion)
{
	struct lockgraph *g = lg_new();
	size_t a = lock(g, "a"), b = lock(g, "b");
	lg_begin_update(g, 1);
	cr_assert_eq(order(g, a, b, 7, 1), LG_NEWS_EDGE | LG_NEWS_THREAD);
	lg_begin_update(g, 2);
	order(g, b, a, 7, 2);
	cr_assert_eq(g->nedges, 2);
	cr_assert_eq(g->ninv, 0, "one thread cannot deadlock with itself");
	/* the same TID in another process is another thread */
	struct lg_frame f[1] = { F("path", 0) };
	struct lg_seen s = seen(7, 3, f, 1);
	s.thread.pid = 101;
	size_t e;
	lg_begin_update(g, 3);
	cr_assert_eq(lg_observe(g, b, a, &s, -1, NULL, &e), LG_NEWS_THREAD);
	cr_assert_eq(lg_find_inversions(g, e, s.time_ns), 1);
	lg_free(g);
}

Test(lockgraph, two_threads_make_one_inversion_rotated_to_its_smallest_lock)
{
	struct lockgraph *g = lg_new();
	size_t a = lock(g, "a"), b = lock(g, "b");
	lg_begin_update(g, 1);
	order(g, b, a, 8, 1);
	cr_assert_eq(g->ninv, 0);
	lg_begin_update(g, 2);
	order(g, a, b, 7, 2);
	cr_assert_eq(g->ninv, 1);
	const struct lg_inversion *inv = &g->inv[0];
	cr_assert_eq(inv->n, 2);
	cr_assert_eq(inv->locks[0], a, "starts at the smallest lock");
	cr_assert_eq(inv->locks[1], b);
	cr_assert_eq(g->edges[inv->edges[0]].from, a);
	cr_assert_eq(g->edges[inv->edges[1]].from, b);
	cr_assert_neq(g->edges[inv->edges[0]].ev[inv->ev[0]].seen.thread.tid,
		      g->edges[inv->edges[1]].ev[inv->ev[1]].seen.thread.tid);
	/* seen again, by more threads: still one */
	lg_begin_update(g, 3);
	order(g, a, b, 9, 3);
	order(g, b, a, 10, 3);
	cr_assert_eq(g->ninv, 1);
	cr_assert_eq(g->edges[inv->edges[0]].nev, 2);
	lg_free(g);
}

Test(lockgraph, a_ring_of_three_and_one_that_needs_a_second_thread)
{
	struct lockgraph *g = lg_new();
	size_t a = lock(g, "a"), b = lock(g, "b"), c = lock(g, "c");
	lg_begin_update(g, 1);
	order(g, a, b, 1, 1);
	order(g, b, c, 2, 1);
	cr_assert_eq(g->ninv, 0);
	order(g, c, a, 3, 1);
	cr_assert_eq(g->ninv, 1);
	cr_assert_eq(g->inv[0].n, 3);
	cr_assert_eq(g->inv[0].locks[0], a);
	cr_assert_eq(g->inv[0].locks[1], b);
	cr_assert_eq(g->inv[0].locks[2], c);

	/* d -> e -> f -> d, all in thread 4: nothing until thread 5 shows
	 * one of its orders */
	size_t d = lock(g, "d"), e = lock(g, "e"), f = lock(g, "f");
	order(g, d, e, 4, 1);
	order(g, e, f, 4, 1);
	order(g, f, d, 4, 1);
	cr_assert_eq(g->ninv, 1);
	lg_begin_update(g, 2);
	cr_assert_eq(order(g, e, f, 5, 2), LG_NEWS_THREAD);
	cr_assert_eq(g->ninv, 2);
	cr_assert_eq(g->inv[1].locks[0], d);
	/* the evidence shown is not all thread 4's */
	bool other = false;
	for (size_t i = 0; i < 3; i++)
		other |= g->edges[g->inv[1].edges[i]].ev[g->inv[1].ev[i]].seen.thread.tid == 5;
	cr_assert(other);
	lg_free(g);
}

Test(lockgraph, an_order_counts_once_per_update)
{
	struct lockgraph *g = lg_new();
	size_t a = lock(g, "a"), b = lock(g, "b");
	lg_begin_update(g, 1);
	order(g, a, b, 1, 1);
	order(g, a, b, 2, 1);
	lg_begin_update(g, 2);
	order(g, a, b, 1, 2);
	cr_assert_eq(g->edges[0].count, 2);
	cr_assert_eq(g->edges[0].nev, 2, "one piece of evidence per thread");
	cr_assert_eq(g->updates, 2);
	lg_free(g);
}

Test(lockgraph, the_frame_that_holds_a_lock)
{
	struct lockgraph *g = lg_new();
	size_t a = lock(g, "a");
	/* a wait for a: take_in_order+0x40 called lk_lock */
	struct lg_frame site[5] = { F("__lll_lock_wait", 0x2b), F("lk_lock", 0),
				    F("take_in_order", 0x40), F("run_path", 0xf6),
				    F("start_thread", 0x305) };
	struct lg_seen s = seen(3, 1, site, 5);
	lg_lock_site(g, a, "lk_lock", &s);
	lg_lock_site(g, a, "lk_lock", &s);
	cr_assert_eq(g->locks[a].nsites, 1, "the same stack is one site");
	/* now waiting for b at take_in_order+0x55: that frame holds a */
	struct lg_frame now[5] = { F("__lll_lock_wait", 0x2b), F("lk_lock", 0),
				   F("take_in_order", 0x55), F("run_path", 0xf6),
				   F("start_thread", 0x305) };
	struct lg_stack st = { now, 5 };
	const struct lg_seen *shown;
	cr_assert_eq(lg_holding_frame(g, a, &st, 1, &shown), 2);
	cr_assert_eq(shown, &g->locks[a].sites[0]);
	/* waiting at the very place a is taken: not shown */
	now[2].offset = 0x40;
	cr_assert_eq(lg_holding_frame(g, a, &st, 1, &shown), -1);
	/* run_path went on from the take_in_order that took a: it holds a */
	now[3].offset = 0x100;
	cr_assert_eq(lg_holding_frame(g, a, &st, 1, &shown), 3);
	/* other callers (another start): no frame is shown */
	now[2].offset = 0x55;
	now[3].offset = 0xf6;
	now[4].offset = 0x999;
	cr_assert_eq(lg_holding_frame(g, a, &st, 1, &shown), -1);
	lg_free(g);
}

/* ---- the file -------------------------------------------------------------------- */

static char path[64];

static void rm_file(void)
{
	if (path[0])
		unlink(path);
	path[0] = '\0';
}

static void write_file(const char *text)
{
	strcpy(path, "/tmp/tinspect-lg.XXXXXX");
	int fd = mkstemp(path);
	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
}

static struct lockgraph *two_thread_graph(void)
{
	struct lockgraph *g = lg_new();
	size_t a = lock(g, "a"), b = lock(g, "b \"quoted\"\n\xff");
	struct lg_frame site[2] = { F("lk_lock", 0), F("path", 0x10) };
	struct lg_seen s = seen(9, 1, site, 2);
	lg_begin_update(g, s.time_ns);
	lg_lock_site(g, a, "path", &s);
	order(g, b, a, 8, 1);
	lg_begin_update(g, s.time_ns + 1000000000);
	order(g, a, b, 7, 2);
	g->waits[LG_WAIT_COND] = 3;
	g->runs = 1;
	return g;
}

TestSuite(lockgraph_file, .fini = rm_file);

Test(lockgraph_file, written_and_read_back_the_same)
{
	struct lockgraph *g = two_thread_graph();
	char *buf;
	size_t len;
	cr_assert_eq(lg_file_render(g, true, &buf, &len), 0);
	cr_assert(schema_valid(buf, len), "the document does not validate");
	write_file(buf);
	free(buf);
	struct lockgraph *r = lg_new();
	char why[512] = "";
	cr_assert_eq(lg_file_read(path, r, why, sizeof why), 0, "%s", why);
	cr_assert_eq(r->nlocks, 2);
	cr_assert_eq(r->nedges, 2);
	cr_assert_eq(r->ninv, 1);
	cr_assert(r->inv[0].from_file);
	cr_assert_eq(r->waits[LG_WAIT_COND], 3);
	cr_assert_eq(r->updates, 2);
	cr_assert_str_eq(r->locks[0].key, "a");
	cr_assert_eq(r->locks[0].nsites, 1);
	cr_assert_str_eq(r->locks[0].callers[0], "path");
	/* the invalid byte of the key is U+FFFD once written */
	cr_assert(strstr(r->locks[1].key, "\"quoted\"\n"));
	for (size_t i = 0; i < 2; i++) {
		cr_assert_eq(r->edges[i].from, g->edges[i].from);
		cr_assert_eq(r->edges[i].count, g->edges[i].count);
		cr_assert_eq(r->edges[i].first_ns / 1000, g->edges[i].first_ns / 1000);
		cr_assert_eq(r->edges[i].ev[0].seen.thread.tid, g->edges[i].ev[0].seen.thread.tid);
		cr_assert_eq(r->edges[i].ev[0].seen.thread.pthread,
			     g->edges[i].ev[0].seen.thread.pthread);
		cr_assert_str_eq(r->edges[i].ev[0].seen.stack.v[1].symbol, "path");
	}
	/* merged with a new run: the known inversion is not found again, a
	 * new order joins the old ones */
	size_t c = lock(r, "c");
	lg_begin_update(r, 5);
	order(r, 1, c, 11, 5);
	cr_assert_eq(r->ninv, 1);
	order(r, c, 0, 12, 5);
	cr_assert_eq(r->ninv, 2, "a -> b -> c -> a through the file's orders");
	cr_assert_not(r->inv[1].from_file);
	lg_free(r);
	lg_free(g);
}

/* The document of the two-thread graph with one substring replaced. */
static void write_damaged(const char *from, const char *to)
{
	struct lockgraph *g = two_thread_graph();
	char *buf;
	size_t len;
	cr_assert_eq(lg_file_render(g, false, &buf, &len), 0);
	lg_free(g);
	char *at = strstr(buf, from);
	cr_assert(at, "no %s in the document", from);
	char *out = malloc(len + strlen(to) + 1);
	size_t head = (size_t)(at - buf);
	memcpy(out, buf, head);
	strcpy(out + head, to);
	strcat(out, at + strlen(from));
	write_file(out);
	free(out);
	free(buf);
}

static void refused(const char *expect)
{
	struct lockgraph *r = lg_new();
	char why[512] = "";
	int err = lg_file_read(path, r, why, sizeof why);
	cr_assert_neq(err, 0, "a damaged document was read");
	cr_assert(strstr(why, expect), "why: %s (expected %s)", why, expect);
	cr_assert(strstr(why, path), "the reason names the file: %s", why);
	lg_free(r);
	rm_file();
}

Test(lockgraph_file, damaged_documents_are_refused_with_the_reason)
{
	write_file("{\"format_version\": \"2.4\", \"kind\": \"lock_order\"");
	refused("not one JSON document");
	write_file("[1, 2]");
	refused("not a JSON object");
	write_damaged("\"kind\":\"lock_order\"", "\"kind\":\"diff\"");
	refused("not a lock-order document");
	write_damaged("\"format_version\":\"" TINSPECT_FORMAT_VERSION "\"",
		      "\"format_version\":\"3.0\"");
	refused("format version 3.0");
	write_damaged("\"from\":1", "\"from\":7");
	refused("from is not an integer from 0 to 1");
	write_damaged("\"from\":1,\"to\":0", "\"from\":0,\"to\":1");
	refused("is listed twice");
	write_damaged("\"holding_frame\":null", "\"holding_frame\":5");
	refused("holding_frame is not a frame of the waiting stack");
	write_damaged("\"evidence\":[0,0]", "\"evidence\":[0,3]");
	refused("an inversion's edges do not join its locks");
	write_damaged("\"locks\":[0,1]", "\"locks\":[1,0]");
	refused("an inversion's edges do not join its locks");
	write_damaged("\"count\":1", "\"count\":-1");
	refused("count is not an integer");
	write_damaged("\"time\":\"", "\"time\":\"x");
	refused("time is not a time");
	/* a time whose nanoseconds do not fit in 64 bits (found by
	 * fuzz_lockgraph) */
	write_damaged("\"time\":\"2023", "\"time\":\"9999");
	refused("time is not a time");
	write_damaged("\"kind\":\"mutex\"", "\"kind\":\"spinlock\"");
	refused("no kind mutex/rwlock");
}
