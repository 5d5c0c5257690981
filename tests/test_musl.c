/*
 * test_musl: tinspect on processes linked with musl, against
 * the fixtures of tests/fixtures/musl built with musl-gcc, dynamic and
 * static.  Each fixture reports what it planted over its stdout pipe
 * (fx_lock.h, fx_musl.h): the TIDs and pthread_t of its threads, its
 * locks, their owners and waiters; the tests check tinspect's JSON against
 * those facts.  Every fixture is killed by PID in the teardown.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "corepattern.h"
#include "harness.h"

static struct fixture fx;
static char coredir[256];	/* a core test's directory, "" if none */

static void teardown(void)
{
	core_pattern_end();	/* nothing unless a core test pointed it */
	fx_kill(&fx);
	if (coredir[0])
		remove_tree(coredir);
	coredir[0] = '\0';
}

TestSuite(musl, .fini = teardown, .timeout = 300 * TEST_TIME_SCALE);

/* The musl version Debian 12's musl-tools installs, which built the
 * fixtures (docs/MUSL.md, "Live, x86_64"). */
#define HOST_MUSL "1.2.3"

static void start(const char *name, const char *const *args)
{
	char path[256];
	snprintf(path, sizeof path, "fixtures/musl/%s", name);
	fx_start(&fx, path, args, 30);
}

/* The value of "KEY ROLE VALUE" in the fixture's report. */
static bool fact(const char *key, const char *role, char *buf, size_t len)
{
	char prefix[128];
	snprintf(prefix, sizeof prefix, "%s %s ", key, role);
	const char *l = fx_line(&fx, prefix);
	if (!l)
		return false;
	snprintf(buf, len, "%s", l + strlen(prefix));
	char *sp = strchr(buf, ' ');
	if (sp)
		*sp = '\0';
	return true;
}

static pid_t tid_of(const char *role)
{
	char v[64];
	cr_assert(fact("tid", role, v, sizeof v), "fixture did not report tid %s", role);
	return (pid_t)atoi(v);
}

static uint64_t pthread_of(const char *role)
{
	char v[64];
	cr_assert(fact("pthread", role, v, sizeof v), "no pthread %s", role);
	return strtoull(v, NULL, 16);
}

static json_t *snapshot(const char *const *extra, int *status)
{
	int st;
	json_t *doc = inspect_json(fx.pid, extra, status ? status : &st);
	cr_assert(doc);
	cr_assert(!any_task_stopped(fx.pid) || wait_not_stopped(fx.pid, 2000),
		  "a task of the fixture was left stopped");
	return doc;
}

static void check_identity(json_t *doc, const char *role, const char *start)
{
	json_t *t = thread_by_tid(doc, tid_of(role));
	cr_assert(t, "thread %s missing", role);
	json_t *p = json_object_get(t, "pthread");
	cr_assert(json_is_object(p), "%s: no pthread (threads from /proc only)", role);
	cr_assert_eq(jhex(p, "id"), pthread_of(role), "%s: pthread_t", role);
	cr_assert_str_eq(jstr(p, "detach_state"), "joinable");
	json_t *sr = json_object_get(p, "start_routine");
	cr_assert(json_is_object(sr), "%s: no start routine", role);
	cr_assert_str_eq(jstr(sr, "symbol"), start, "%s: start routine", role);
}

static void check_process(json_t *doc, bool is_static)
{
	json_t *tdb = json_object_get(json_object_get(doc, "process"), "thread_db");
	cr_assert_str_eq(jstr(tdb, "libc"), "musl");
	cr_assert_str_eq(jstr(tdb, "status"), "not_used");
	cr_assert_str_eq(jstr(tdb, "threads"), "struct_pthread");
	if (is_static)
		cr_assert(json_is_null(json_object_get(tdb, "libc_version")),
			  "a static musl program records no version");
	else
		cr_assert_str_eq(jstr(tdb, "libc_version"), HOST_MUSL);
	cr_assert(json_is_null(json_object_get(json_object_get(doc, "process"),
					       "glibc_version")));
	/* the main thread: a pthread_t, no start routine */
	json_t *m = thread_by_tid(doc, fx.pid);
	json_t *p = json_object_get(m, "pthread");
	cr_assert(json_is_object(p), "main thread has no pthread");
	cr_assert(json_is_null(json_object_get(p, "start_routine")));
	/* the process says which library in text too */
}

static void identity_of_abba(const char *name, bool is_static)
{
	start(name, NULL);
	json_t *doc = snapshot(NULL, NULL);
	check_process(doc, is_static);
	check_identity(doc, "teller", "teller");
	check_identity(doc, "auditor", "auditor");
	json_decref(doc);
}

Test(musl, detected_with_version_and_thread_identity)
{
	identity_of_abba("fx_musl_abba", false);
}

Test(musl, static_detected_thread_identity)
{
	identity_of_abba("fx_musl_abba_static", true);
}

Test(musl, text_names_musl_not_libthread_db)
{
	start("fx_musl_abba", NULL);
	const char *args[] = { pidstr(fx.pid), NULL };
	struct run r;
	run_tinspect(&r, args, 60);
	cr_assert(r.out && strstr(r.out, ", musl " HOST_MUSL ", threads from "
					  "struct_pthread"), "%s", r.out ? r.out : "");
	cr_assert(!strstr(r.out, "no_libthread"), "%s", r.out);
	cr_assert(!strstr(r.out, "glibc "), "%s", r.out);
	run_free(&r);
}

/* ---- locks (docs/MUSL.md §5-§6) ---- */

static uint64_t lock_addr(const char *label)
{
	char v[64];
	cr_assert(fact("lock", label, v, sizeof v), "no lock %s", label);
	return strtoull(v, NULL, 16);
}

/* ABBA on mutexes that record their owner: the cycle, both owners, and
 * --check's exit status 10. */
static void abba_found(const char *name, const char *type)
{
	const char *args[] = { "--type", type, NULL };
	start(name, args);
	const char *extra[] = { "--check", NULL };
	int status;
	json_t *doc = snapshot(extra, &status);
	cr_assert_eq(status, 10, "--check: a deadlock is exit status 10");
	json_t *dl = json_object_get(doc, "deadlocks");
	cr_assert_eq(json_array_size(dl), 1, "one deadlock");
	json_t *tids = json_object_get(json_array_get(dl, 0), "threads");
	pid_t a = (pid_t)json_integer_value(json_array_get(tids, 0));
	pid_t b = (pid_t)json_integer_value(json_array_get(tids, 1));
	cr_assert((a == tid_of("teller") && b == tid_of("auditor")) ||
		  (b == tid_of("teller") && a == tid_of("auditor")),
		  "the cycle is teller and auditor");
	const char *labels[] = { "ledger_lock", "audit_lock" };
	const char *owners[] = { "teller", "auditor" };
	for (int k = 0; k < 2; k++) {
		json_t *l = lock_at(doc, lock_addr(labels[k]));
		cr_assert(l, "%s not among the locks", labels[k]);
		cr_assert_str_eq(jstr(l, "kind"), "mutex");
		cr_assert_eq(json_integer_value(json_object_get(l, "owner")),
			     tid_of(owners[k]), "%s's owner", labels[k]);
	}
	json_decref(doc);
}

Test(musl, abba_errorcheck_deadlock)
{
	abba_found("fx_musl_abba", "errorcheck");
}

Test(musl, abba_recursive_deadlock)
{
	abba_found("fx_musl_abba", "recursive");
}

Test(musl, abba_errorcheck_deadlock_static)
{
	abba_found("fx_musl_abba_static", "errorcheck");
}

/* ABBA on normal mutexes: each wait reported on its mutex, whose owner
 * musl does not record: never a false owner, no cycle claimed. */
static void abba_normal(const char *name)
{
	const char *args[] = { "--type", "normal", NULL };
	start(name, args);
	const char *extra[] = { "--check", NULL };
	int status;
	json_t *doc = snapshot(extra, &status);
	cr_assert_neq(status, 10, "no deadlock can be proved");
	cr_assert_eq(json_array_size(json_object_get(doc, "deadlocks")), 0);
	const char *labels[] = { "ledger_lock", "audit_lock" };
	const char *waiters[] = { "auditor", "teller" };
	for (int k = 0; k < 2; k++) {
		json_t *l = lock_at(doc, lock_addr(labels[k]));
		cr_assert(l, "%s not among the locks", labels[k]);
		cr_assert_str_eq(jstr(l, "kind"), "mutex");
		cr_assert(json_is_null(json_object_get(l, "owner")),
			  "%s: a normal mutex records no owner", labels[k]);
		const char *note = jstr(l, "note");
		cr_assert(note && strstr(note, "owner not recorded"), "%s",
			  note ? note : "(no note)");
		json_t *b = blocked_on(doc, tid_of(waiters[k]));
		cr_assert_str_eq(jstr(b, "kind"), "mutex");
		cr_assert(json_is_null(json_object_get(b, "owner")));
	}
	json_decref(doc);
}

Test(musl, abba_normal_owner_not_recorded)
{
	abba_normal("fx_musl_abba");
}

Test(musl, abba_normal_owner_not_recorded_static)
{
	abba_normal("fx_musl_abba_static");
}

/* ---- stacks through musl's libc (docs/MUSL.md §4) ---- */

/* The frame index of the first frame named sym in t's stack, or -1. */
static int frame_named(json_t *t, const char *sym)
{
	json_t *fr = json_object_get(json_object_get(t, "stack"), "frames");
	for (size_t i = 0; i < json_array_size(fr); i++) {
		const char *s = jstr(json_array_get(fr, i), "symbol");
		if (s && !strcmp(s, sym))
			return (int)i;
	}
	return -1;
}

/* musl's libc has no unwind tables: each planted thread, blocked in
 * pthread_mutex_lock called from take() called from its start routine,
 * reaches take and its start routine by scanning, the frames found so
 * are marked "scan", the innermost one is unwound, and the stack end
 * says it was scanned (not complete, not truncated). */
static void stacks_reach_start(const char *name)
{
	start(name, NULL);
	json_t *doc = snapshot(NULL, NULL);
	const char *roles[] = { "teller", "auditor" };
	for (int k = 0; k < 2; k++) {
		json_t *t = thread_by_tid(doc, tid_of(roles[k]));
		cr_assert(t, "thread %s missing", roles[k]);
		json_t *st = json_object_get(t, "stack");
		json_t *fr = json_object_get(st, "frames");
		int ti = frame_named(t, "take"), ri = frame_named(t, roles[k]);
		cr_assert(ti > 0, "%s: take() not in its stack", roles[k]);
		cr_assert(ri > ti, "%s: its start routine not above take()", roles[k]);
		cr_assert_str_eq(jstr(json_array_get(fr, 0), "how"), "unwound");
		size_t scans = 0;
		for (size_t i = 0; i < json_array_size(fr); i++) {
			const char *how = jstr(json_array_get(fr, i), "how");
			cr_assert(how && (!strcmp(how, "scan") || !strcmp(how, "unwound")));
			scans += !strcmp(how, "scan");
		}
		cr_assert_str_eq(jstr(json_array_get(fr, ti), "how"), "scan",
				 "%s: take() was found by scanning", roles[k]);
		cr_assert(scans > 0);
		cr_assert_str_eq(jstr(st, "end"), "scanned", "%s", roles[k]);
		cr_assert_eq((size_t)ri + 1, json_array_size(fr),
			     "%s: nothing above the start routine", roles[k]);
	}
	json_decref(doc);
}

Test(musl, stacks_reach_start_routine_by_scanning)
{
	stacks_reach_start("fx_musl_abba");
}

Test(musl, stacks_reach_start_routine_by_scanning_static)
{
	stacks_reach_start("fx_musl_abba_static");
}

/* Every created thread of the other lock fixtures (cond, join, sem,
 * barrier waits go deeper into musl) reaches the start routine its
 * start_args name. */
static void every_start_reached(const char *name)
{
	start(name, NULL);
	json_t *doc = snapshot(NULL, NULL);
	json_t *ths = json_object_get(doc, "threads");
	size_t seen = 0;
	for (size_t i = 0; i < json_array_size(ths); i++) {
		json_t *t = json_array_get(ths, i);
		json_t *sr = json_object_get(json_object_get(t, "pthread"),
					     "start_routine");
		const char *sym = json_is_object(sr) ? jstr(sr, "symbol") : NULL;
		if (!sym)
			continue;
		seen++;
		cr_assert(frame_named(t, sym) > 0, "%s: thread %lld does not reach %s",
			  name, json_integer_value(json_object_get(t, "tid")), sym);
	}
	cr_assert(seen >= 2, "%s: created threads with a start routine", name);
	json_decref(doc);
}

Test(musl, stacks_reach_start_routine_cond_join_sem_barrier)
{
	const char *names[] = { "fx_musl_cond", "fx_musl_join", "fx_musl_sem",
				"fx_musl_barrier" };
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
		every_start_reached(names[i]);
		fx_kill(&fx);
	}
}

/* The text marks the scanned frames and says why the stack ends. */
Test(musl, text_marks_scanned_frames)
{
	start("fx_musl_abba", NULL);
	const char *args[] = { pidstr(fx.pid), NULL };
	struct run r;
	run_tinspect(&r, args, 60);
	cr_assert(r.out && strstr(r.out, "[scan] 0x"), "%s", r.out ? r.out : "");
	cr_assert(strstr(r.out, "found by scanning the stack"), "%s", r.out);
	cr_assert(!strstr(r.out, "stack truncated"), "%s", r.out);
	run_free(&r);
}

/* ---- --tls, --errno, --keys (docs/MUSL.md §11-§13) ---- */

/* A JSON value that is a number or a decimal string, as a number. */
static long long jnum(json_t *v)
{
	if (json_is_integer(v))
		return json_integer_value(v);
	cr_assert(json_is_string(v), "not a number");
	return strtoll(json_string_value(v), NULL, 0);
}

/* The thread's value of a --tls variable: its address and value equal
 * the fixture's "tls ROLE VAR 0xADDR VALUE" line. */
static void check_tls(json_t *doc, const char *role, const char *var)
{
	char prefix[128];
	snprintf(prefix, sizeof prefix, "tls %s %s ", role, var);
	const char *l = fx_line(&fx, prefix);
	cr_assert(l, "fixture did not report %s", prefix);
	unsigned long long addr;
	long long want;
	cr_assert(sscanf(l + strlen(prefix), "%llx %lld", &addr, &want) == 2, "%s", l);
	json_t *t = thread_by_tid(doc, tid_of(role));
	cr_assert(t, "thread %s missing", role);
	json_t *v = json_object_get(json_object_get(t, "tls"), var);
	cr_assert(json_is_object(v), "%s: no tls %s", role, var);
	cr_assert_str_eq(jstr(v, "status"), "ok", "%s %s: %s", role, var,
			 jstr(v, "error") ? jstr(v, "error") : "");
	cr_assert_eq(jhex(v, "address"), (uint64_t)addr, "%s %s: address", role, var);
	cr_assert_eq(jnum(json_object_get(v, "value")), want, "%s %s: value", role, var);
}

static const char *const tls_roles[] = { "tls-0", "tls-1", "tls-2", "tls-3" };

static void tls_values(const char *name, bool is_static)
{
	start(name, NULL);
	const char *extra[] = { "--tls", "fxm_counter", "--tls", "fxm_hidden",
				"--tls", "fxm_lib_slot", "--tls", "fxm_plugin_slot",
				NULL };
	if (is_static)
		extra[4] = NULL;
	json_t *doc = snapshot(extra, NULL);
	for (int i = 0; i < 4; i++) {
		check_tls(doc, tls_roles[i], "fxm_counter");
		check_tls(doc, tls_roles[i], "fxm_hidden");
		if (!is_static) {
			check_tls(doc, tls_roles[i], "fxm_lib_slot");
			/* tls-0 and tls-1 existed at the dlopen: their block
			 * is reached through their new DTV only (§11) */
			check_tls(doc, tls_roles[i], "fxm_plugin_slot");
		}
	}
	check_tls(doc, "main", "fxm_counter");
	if (!is_static) {
		check_tls(doc, "main", "fxm_lib_slot");
		check_tls(doc, "main", "fxm_plugin_slot");
	}
	json_decref(doc);
}

Test(musl, tls_values_through_the_dtv)
{
	tls_values("fx_musl_tls", false);
}

Test(musl, tls_values_through_the_dtv_static)
{
	tls_values("fx_musl_tls_static", true);
}

static void errno_values(const char *name)
{
	start(name, NULL);
	const char *extra[] = { "--errno", NULL };
	json_t *doc = snapshot(extra, NULL);
	const char *roles[] = { "tls-0", "tls-1", "tls-2", "tls-3", "main" };
	for (int i = 0; i < 5; i++) {
		char v[64];
		cr_assert(fact("errno", roles[i], v, sizeof v), "no errno %s", roles[i]);
		json_t *e = json_object_get(thread_by_tid(doc, tid_of(roles[i])), "errno");
		cr_assert(json_is_object(e), "%s: no errno", roles[i]);
		cr_assert_str_eq(jstr(e, "status"), "ok", "%s: %s", roles[i],
				 jstr(e, "error") ? jstr(e, "error") : "");
		cr_assert_eq(json_integer_value(json_object_get(e, "value")), atoi(v),
			     "%s: errno", roles[i]);
		/* errno is the struct's errno_val (§12) */
		cr_assert_eq(jhex(e, "address"), pthread_of(roles[i]) + 52, "%s", roles[i]);
	}
	json_decref(doc);
}

Test(musl, errno_of_every_thread)
{
	errno_values("fx_musl_tls");
}

Test(musl, errno_of_every_thread_static)
{
	errno_values("fx_musl_tls_static");
}

/* The value of key KEY in a thread's keys, or -1 if the key is not listed. */
static long long key_value(json_t *t, unsigned key)
{
	json_t *keys = json_object_get(t, "keys");
	cr_assert(json_is_array(keys), "no keys");
	for (size_t i = 0; i < json_array_size(keys); i++) {
		json_t *k = json_array_get(keys, i);
		if (json_integer_value(json_object_get(k, "key")) == key)
			return (long long)strtoull(jstr(k, "value"), NULL, 16);
	}
	return -1;
}

static void key_values(const char *name, bool is_static)
{
	start(name, NULL);
	unsigned session, trace, deleted;
	const char *kl = fx_line(&fx, "keys ");
	cr_assert(kl && sscanf(kl, "keys %u %u %u", &session, &trace, &deleted) == 3);
	const char *extra[] = { "--keys", NULL };
	json_t *doc = snapshot(extra, NULL);
	json_t *pk = json_object_get(json_object_get(doc, "process"), "keys");
	cr_assert(json_is_object(pk), "no process.keys");
	cr_assert_eq(json_integer_value(json_object_get(pk, "max")), 128,
		     "musl's PTHREAD_KEYS_MAX");
	json_t *in_use = json_object_get(pk, "in_use");
	cr_assert_eq(json_array_size(in_use), 2, "session and trace, not the deleted key");
	cr_assert_eq(json_integer_value(json_object_get(json_array_get(in_use, 0), "key")),
		     session);
	cr_assert_eq(json_integer_value(json_object_get(json_array_get(in_use, 1), "key")),
		     trace);
	if (is_static) {
		/* the key table is a local symbol of the static program */
		json_t *d = json_object_get(json_array_get(in_use, 0), "destructor");
		cr_assert_str_eq(jstr(d, "symbol"), "session_destructor");
		cr_assert(json_is_null(json_object_get(json_array_get(in_use, 1),
						       "destructor")));
	} else {
		/* libc.so is stripped: which keys exist is told by their
		 * values, and a warning says so */
		json_t *w = json_object_get(json_object_get(doc, "capture"), "warnings");
		bool said = false;
		for (size_t i = 0; i < json_array_size(w); i++)
			said |= strstr(json_string_value(json_array_get(w, i)),
				       "--keys") != NULL;
		cr_assert(said, "no warning says how the keys were found");
	}
	for (int i = 0; i < 4; i++) {
		json_t *t = thread_by_tid(doc, tid_of(tls_roles[i]));
		cr_assert_eq(key_value(t, session), 0x5e550000LL + i, "%s", tls_roles[i]);
		cr_assert_eq(key_value(t, trace), i & 1 ? 0x7ace0000LL + i : 0,
			     "%s", tls_roles[i]);
		cr_assert_eq(key_value(t, deleted), -1);
	}
	json_t *m = thread_by_tid(doc, fx.pid);
	cr_assert_eq(key_value(m, session), 0, "the main thread set none");
	json_decref(doc);
}

Test(musl, key_values_of_every_thread)
{
	key_values("fx_musl_tls", false);
}

Test(musl, key_values_of_every_thread_static)
{
	key_values("fx_musl_tls_static", true);
}

/* ---- held locks from the robust lists (docs/MUSL.md §5) ---- */

/* The thread's "held": exactly the fixture's locks named in labels. */
static void check_held(json_t *doc, const char *role, const char *const *labels,
		       size_t n)
{
	json_t *t = thread_by_tid(doc, tid_of(role));
	cr_assert(t, "thread %s missing", role);
	json_t *h = json_object_get(t, "held");
	cr_assert(json_is_array(h), "%s: held not known", role);
	cr_assert_eq(json_array_size(h), n, "%s holds %zu locks, not %zu", role,
		     json_array_size(h), n);
	for (size_t k = 0; k < n; k++) {
		bool found = false;
		for (size_t j = 0; j < n && !found; j++) {
			json_t *e = json_array_get(h, j);
			if (jhex(e, "addr") != lock_addr(labels[k]))
				continue;
			found = true;
			cr_assert_str_eq(jstr(e, "kind"), "mutex");
			cr_assert_str_eq(jstr(e, "symbol"), labels[k]);
		}
		cr_assert(found, "%s does not hold %s", role, labels[k]);
	}
}

static void held_of_abba(const char *name, const char *type, bool normal)
{
	const char *args[] = { "--type", type, NULL };
	start(name, args);
	json_t *doc = snapshot(NULL, NULL);
	const char *ledger[] = { "ledger_lock" }, *audit[] = { "audit_lock" };
	/* a normal mutex records no owner: never listed (§5) */
	check_held(doc, "teller", ledger, normal ? 0 : 1);
	check_held(doc, "auditor", audit, normal ? 0 : 1);
	json_t *m = json_object_get(thread_by_tid(doc, fx.pid), "held");
	cr_assert(json_is_array(m) && json_array_size(m) == 0, "main holds nothing");
	json_decref(doc);
}

Test(musl, held_from_robust_list_errorcheck)
{
	held_of_abba("fx_musl_abba", "errorcheck", false);
}

Test(musl, held_from_robust_list_recursive)
{
	held_of_abba("fx_musl_abba", "recursive", false);
}

Test(musl, held_from_robust_list_static)
{
	held_of_abba("fx_musl_abba_static", "errorcheck", false);
}

Test(musl, held_never_names_a_normal_mutex)
{
	held_of_abba("fx_musl_abba", "normal", true);
}

/* The heir of the robust shm_lock holds it (its word: TID | owner died);
 * nobody holds the orphaned table_lock or session_lock. */
static void held_of_orphan(const char *name)
{
	start(name, NULL);
	json_t *doc = snapshot(NULL, NULL);
	const char *shm[] = { "shm_lock" };
	check_held(doc, "heir", shm, 1);
	check_held(doc, "other", NULL, 0);
	check_held(doc, "stuck", NULL, 0);
	check_held(doc, "waiter", NULL, 0);
	json_decref(doc);
}

Test(musl, held_by_the_heir_of_a_robust_orphan)
{
	held_of_orphan("fx_musl_orphan");
}

Test(musl, held_by_the_heir_of_a_robust_orphan_static)
{
	held_of_orphan("fx_musl_orphan_static");
}

/* ---- the other lock fixtures, as they report their planted state ---- */

/* Whether tid is among the lock's waiters. */
static bool waits_on(json_t *l, pid_t tid)
{
	json_t *ws = json_object_get(l, "waiters");
	for (size_t i = 0; i < json_array_size(ws); i++)
		if (json_integer_value(json_object_get(json_array_get(ws, i), "tid")) == tid)
			return true;
	return false;
}

/* The lock of the fixture's "lock LABEL 0xADDR KIND ..." line: its kind
 * into kind. */
static json_t *planted_lock(json_t *doc, const char *label, char *kind, size_t len)
{
	char prefix[128], k[32] = "";
	snprintf(prefix, sizeof prefix, "lock %s ", label);
	const char *l = fx_line(&fx, prefix);
	cr_assert(l, "no lock %s", label);
	unsigned long long addr;
	cr_assert(sscanf(l + strlen(prefix), "%llx %31s", &addr, k) == 2, "%s", l);
	snprintf(kind, len, "%s", k);
	return lock_at(doc, addr);
}

/*
 * Every "owner LABEL ROLE" and "waiter LABEL ROLE" line the fixture
 * printed, against the JSON: the lock's kind, each waiter's blocked_on
 * (kind, object) and place among the lock's waiters, the owner where
 * musl records one (owner_recorded: mutexes other than normal ones,
 * joins) and none claimed where it does not.  A private cond's waiters
 * sleep on their own stacks (§7): their kind only.
 */
static void check_planted(json_t *doc, bool owner_recorded)
{
	size_t owners = 0, waiters = 0;
	for (size_t i = 0; i < fx.nlines; i++) {
		char label[64], role[64], kind[32];
		bool is_owner = sscanf(fx.lines[i], "owner %63s %63s", label, role) == 2;
		bool is_waiter = !is_owner &&
			sscanf(fx.lines[i], "waiter %63s %63s", label, role) == 2;
		if (!is_owner && !is_waiter)
			continue;
		json_t *l = planted_lock(doc, label, kind, sizeof kind);
		pid_t tid = tid_of(role);
		/* a private cond's or barrier's waiters sleep on stacks */
		bool private_cond = (!strcmp(kind, "cond") || !strcmp(kind, "barrier")) && !l;
		if (!private_cond) {
			cr_assert(l, "%s not among the locks", label);
			cr_assert_str_eq(jstr(l, "kind"), kind, "%s's kind", label);
		}
		if (is_owner) {
			owners++;
			if (owner_recorded) {
				cr_assert_eq(json_integer_value(json_object_get(l, "owner")),
					     tid, "%s's owner is %s", label, role);
				cr_assert_str_eq(jstr(l, "owner_state"), "live");
			} else {
				cr_assert(json_is_null(json_object_get(l, "owner")),
					  "%s: musl records no owner", label);
			}
			continue;
		}
		waiters++;
		json_t *b = blocked_on(doc, tid);
		cr_assert(b, "%s is not blocked", role);
		cr_assert_str_eq(jstr(b, "kind"), kind, "%s waits on a %s", role, kind);
		if (private_cond)
			continue;
		cr_assert_eq(jhex(b, "object"), jhex(l, "addr"), "%s waits on %s", role, label);
		cr_assert(waits_on(l, tid), "%s not among %s's waiters", role, label);
	}
	cr_assert(owners + waiters > 0, "the fixture planted nothing");
}

static void planted(const char *name, bool owner_recorded)
{
	start(name, NULL);
	json_t *doc = snapshot(NULL, NULL);
	check_planted(doc, owner_recorded);
	json_decref(doc);
}

Test(musl, rwlock_waiters_no_owner_claimed)
{
	planted("fx_musl_rwlock", false);
}

Test(musl, rwlock_waiters_no_owner_claimed_static)
{
	planted("fx_musl_rwlock_static", false);
}

/* musl 1.2.3's semaphore waiters pass -1 like a write-locked rwlock's:
 * the words tell them apart (§9) */
Test(musl, sem_waiters)
{
	planted("fx_musl_sem", false);
}

Test(musl, sem_waiters_static)
{
	planted("fx_musl_sem_static", false);
}

Test(musl, join_owners_and_waiters)
{
	planted("fx_musl_join", true);
}

Test(musl, join_owners_and_waiters_static)
{
	planted("fx_musl_join_static", true);
}

Test(musl, cond_waiters_and_the_mutex_owner)
{
	planted("fx_musl_cond", true);
}

Test(musl, cond_waiters_and_the_mutex_owner_static)
{
	planted("fx_musl_cond_static", true);
}

/* label's owner exited holding it: dead, no TID (musl keeps none) */
static void check_orphan(json_t *doc, const char *label, const char *kind)
{
	char planted_kind[32];
	json_t *l = planted_lock(doc, label, planted_kind, sizeof planted_kind);
	cr_assert(l && !strcmp(jstr(l, "kind"), kind), "%s: no %s among the locks",
		  label, kind);
	cr_assert(json_is_null(json_object_get(l, "owner")));
	cr_assert_str_eq(jstr(l, "owner_state"), "dead");
	cr_assert(json_is_true(json_object_get(l, "orphaned")));
}

/* Orphans: the errorcheck table_lock's owner died (owner_state dead,
 * orphaned, no TID); the normal session_lock's owner is not recorded; the
 * robust shm_lock went to its heir; every waiter as planted. */
static void orphans(const char *name)
{
	start(name, NULL);
	json_t *doc = snapshot(NULL, NULL);
	check_planted(doc, true);
	check_orphan(doc, "table_lock", "mutex");
	char kind[32];
	json_t *s = planted_lock(doc, "session_lock", kind, sizeof kind);
	cr_assert(s, "session_lock not among the locks");
	cr_assert(json_is_null(json_object_get(s, "owner")));
	cr_assert_str_eq(jstr(s, "owner_state"), "unknown");
	json_decref(doc);
}

Test(musl, orphans_dead_unknown_and_heir)
{
	orphans("fx_musl_orphan");
}

Test(musl, orphans_dead_unknown_and_heir_static)
{
	orphans("fx_musl_orphan_static");
}

/* stdio FILE locks record their owner (§10): the flockfile owner of
 * report_file, its waiter in flockfile, and audit_file, whose owner exited
 * holding it, orphaned for ever */
static void file_locks(const char *name)
{
	start(name, NULL);
	json_t *doc = snapshot(NULL, NULL);
	check_planted(doc, true);
	check_orphan(doc, "audit_file", "file");
	cr_assert_eq(json_array_size(json_object_get(doc, "orphaned_locks")), 1);
	json_decref(doc);
}

Test(musl, stdio_file_locks_owner_waiter_orphan)
{
	file_locks("fx_musl_stdio");
}

Test(musl, stdio_file_locks_owner_waiter_orphan_static)
{
	file_locks("fx_musl_stdio_static");
}

/* a watch says a FILE lock held by one owner while another waits */
Test(musl, watch_says_a_file_lock_held_too_long)
{
	start("fx_musl_stdio", NULL);
	const char *args[] = { "--watch", "0.5", "--count", "6", "--hung-after", "1",
			       "--json", pidstr(fx.pid), NULL };
	struct run r;
	run_tinspect(&r, args, 60);
	const char *e = r.out ? strstr(r.out, "\"lock_held\"") : NULL;
	cr_assert(e, "no lock_held event: %s", r.out ? r.out : "");
	const char *eol = strchr(e, '\n'), *file = strstr(e, "\"kind\":\"file\"");
	cr_assert(file && (!eol || file < eol), "lock_held is not the FILE's: %.400s", e);
	run_free(&r);
}

/* a process-shared barrier's arrivals sleep on its _b_count (§9): the
 * barrier itself; a private one's round is on a stack: the kind only */
Test(musl, barriers_shared_object_private_kind)
{
	planted("fx_musl_barrier", false);
}

/* ---- cores of musl processes ---- */

/* tinspect --core CORE --json --check: validated and parsed. */
static json_t *core_doc(const char *core, int *ret_status)
{
	const char *args[] = { "--json", "--check", "--core", core, NULL };
	struct run r;
	run_tinspect(&r, args, 300);
	cr_assert(!r.timed_out && r.status >= 0, "tinspect --core failed: %s",
		  r.err ? r.err : "");
	*ret_status = r.status;
	cr_assert(r.out_len, "no report from %s: %s", core, r.err ? r.err : "");
	cr_assert(schema_valid(r.out, r.out_len), "output does not validate");
	json_error_t je;
	json_t *doc = json_loadb(r.out, r.out_len, 0, &je);
	cr_assert(doc, "JSON does not parse: %s", je.text);
	run_free(&r);
	const char *mode = jstr(json_object_get(doc, "capture"), "mode");
	cr_assert(mode && !strcmp(mode, "core"), "capture.mode is not core");
	return doc;
}

/* The same C library, version, way of identifying threads, the same
 * threads with the same pthread_t and stacks, and the same lock owners
 * and deadlocks, live and from the core. */
static void same_as_live(json_t *live, json_t *core)
{
	json_t *lt = json_object_get(json_object_get(live, "process"), "thread_db");
	json_t *ct = json_object_get(json_object_get(core, "process"), "thread_db");
	static const char *const keys[] = { "libc", "libc_version", "threads", "status" };
	for (size_t k = 0; k < sizeof keys / sizeof *keys; k++) {
		json_t *a = json_object_get(lt, keys[k]), *b = json_object_get(ct, keys[k]);
		cr_assert(json_equal(a, b) || (json_is_null(a) && json_is_null(b)),
			  "thread_db.%s: live %s, core %s", keys[k],
			  json_is_string(a) ? json_string_value(a) : "null",
			  json_is_string(b) ? json_string_value(b) : "null");
	}
	json_t *ths = json_object_get(live, "threads");
	cr_assert_eq(json_array_size(json_object_get(core, "threads")),
		     json_array_size(ths), "not the same threads");
	for (size_t i = 0; i < json_array_size(ths); i++) {
		json_t *t = json_array_get(ths, i);
		pid_t tid = (pid_t)json_integer_value(json_object_get(t, "tid"));
		json_t *c = thread_by_tid(core, tid);
		cr_assert(c, "thread %d is not in the core's report", (int)tid);
		json_t *lp = json_object_get(t, "pthread"), *cp = json_object_get(c, "pthread");
		cr_assert(json_is_object(cp), "thread %d: no pthread from the core", (int)tid);
		cr_assert_eq(jhex(cp, "id"), jhex(lp, "id"), "thread %d: pthread_t", (int)tid);
		cr_assert_str_eq(jstr(cp, "detach_state"), jstr(lp, "detach_state"));
		/* the same frames: the fixtures have no build-id, and the
		 * core's copy of each file's first page proves the file */
		json_t *lf = json_object_get(json_object_get(t, "stack"), "frames");
		json_t *cf = json_object_get(json_object_get(c, "stack"), "frames");
		cr_assert(json_array_size(lf) > 1, "thread %d: live stack", (int)tid);
		cr_assert_eq(json_array_size(cf), json_array_size(lf),
			     "thread %d: %zu frames from the core, %zu live", (int)tid,
			     json_array_size(cf), json_array_size(lf));
		for (size_t k = 0; k < json_array_size(lf); k++) {
			json_t *a = json_array_get(lf, k), *b = json_array_get(cf, k);
			const char *sa = jstr(a, "symbol"), *sb = jstr(b, "symbol");
			cr_assert((!sa && !sb) || (sa && sb && !strcmp(sa, sb)),
				  "thread %d frame %zu: %s live, %s from the core", (int)tid,
				  k, sa ? sa : "?", sb ? sb : "?");
			cr_assert_str_eq(jstr(b, "how"), jstr(a, "how"));
		}
		/* the robust lists are in the core's memory too */
		json_t *lh = json_object_get(t, "held"), *ch = json_object_get(c, "held");
		cr_assert(json_is_array(ch), "thread %d: held not known", (int)tid);
		cr_assert_eq(json_array_size(ch), json_array_size(lh), "thread %d", (int)tid);
		for (size_t k = 0; k < json_array_size(lh); k++)
			cr_assert_eq(jhex(json_array_get(ch, k), "addr"),
				     jhex(json_array_get(lh, k), "addr"),
				     "thread %d: held", (int)tid);
	}
	const char *labels[] = { "ledger_lock", "audit_lock" };
	const char *owners[] = { "teller", "auditor" };
	for (int k = 0; k < 2; k++) {
		json_t *l = lock_at(core, lock_addr(labels[k]));
		cr_assert(l, "%s not among the core's locks", labels[k]);
		cr_assert_str_eq(jstr(l, "kind"), "mutex");
		cr_assert_eq(json_integer_value(json_object_get(l, "owner")),
			     tid_of(owners[k]), "%s's owner from the core", labels[k]);
	}
	cr_assert_eq(json_array_size(json_object_get(core, "deadlocks")),
		     json_array_size(json_object_get(live, "deadlocks")));
}

/* The kernel's core of the fixture (killed with SIGABRT), core_pattern
 * pointed at coredir meanwhile (restored by teardown too, and by
 * corepattern.c's guard if this process dies). */
static void kernel_core(char *path, size_t len)
{
	pid_t pid = fx.pid;
	core_pattern_begin(coredir);
	cr_assert(kill(pid, SIGABRT) == 0);
	int st = 0;
	pid_t r = 0;
	for (int i = 0; i < 6000 && r == 0; i++) {
		r = waitpid(pid, &st, WNOHANG);
		if (r == 0)
			usleep(10000);
	}
	core_pattern_end();
	cr_assert(core_pattern_restored(), "core_pattern not restored");
	cr_assert_eq(r, pid, "the fixture did not die");
	fx.pid = 0;	/* reaped */
	cr_assert(WIFSIGNALED(st) && WCOREDUMP(st), "no core dumped (status %#x)", st);
	snprintf(path, len, "%s/core.%d", coredir, (int)pid);
}

static void core_of_abba(const char *name)
{
	if (!have_program("gcore"))
		cr_skip_test("no gcore (gdb is not installed)");
	snprintf(coredir, sizeof coredir, "/tmp/tinspect-musl-core.XXXXXX");
	cr_assert(mkdtemp(coredir), "mkdtemp: %s", strerror(errno));
	struct rlimit rl = { RLIM_INFINITY, RLIM_INFINITY };
	setrlimit(RLIMIT_CORE, &rl);	/* the fixture inherits it */
	const char *args[] = { "--type", "errorcheck", NULL };
	start(name, args);
	int live_status, status;
	const char *extra[] = { "--check", NULL };
	json_t *live = snapshot(extra, &live_status);

	char prefix[300], pid[16], path[400];
	snprintf(prefix, sizeof prefix, "%s/gcore", coredir);
	snprintf(pid, sizeof pid, "%d", (int)fx.pid);
	const char *argv[] = { "gcore", "-o", prefix, pid, NULL };
	int rc = run_quiet(argv);
	snprintf(path, sizeof path, "%s.%d", prefix, (int)fx.pid);
	struct stat sb;
	cr_assert(rc == 0 && stat(path, &sb) == 0, "gcore failed (%d)", rc);
	cr_assert(wait_not_stopped(fx.pid, 2000), "gcore left the fixture stopped");
	json_t *g = core_doc(path, &status);
	same_as_live(live, g);
	cr_assert_eq(status, live_status, "--check on the gcore: %d, live %d",
		     status, live_status);
	json_decref(g);

	if (geteuid() != 0) {
		cr_log_warn("not root: no kernel core; gcore only");
	} else {
		kernel_core(path, sizeof path);
		json_t *k = core_doc(path, &status);
		same_as_live(live, k);
		cr_assert_eq(status, live_status, "--check on the kernel core");
		json_decref(k);
	}
	json_decref(live);
}

Test(musl, core_same_as_live)
{
	core_of_abba("fx_musl_abba");
}

Test(musl, core_same_as_live_static)
{
	core_of_abba("fx_musl_abba_static");
}

/* A static program that never links pthread_key_create has no key array
 * (§13): the main thread's tsd is a one-pointer dummy and a created
 * thread's points past its mapping; nothing there is read as a key. */
Test(musl, keys_of_a_static_program_without_keys)
{
	start("fx_musl_abba_static", NULL);
	const char *extra[] = { "--keys", NULL };
	json_t *doc = snapshot(extra, NULL);
	json_t *pk = json_object_get(json_object_get(doc, "process"), "keys");
	cr_assert(json_is_object(pk), "no process.keys");
	cr_assert_eq(json_array_size(json_object_get(pk, "in_use")), 0,
		     "no key exists");
	json_t *ths = json_object_get(doc, "threads");
	for (size_t i = 0; i < json_array_size(ths); i++) {
		json_t *k = json_object_get(json_array_get(ths, i), "keys");
		cr_assert(json_is_array(k) && json_array_size(k) == 0);
	}
	cr_assert_eq(json_array_size(json_object_get(json_object_get(doc, "capture"),
						     "warnings")), 0);
	json_decref(doc);
}
