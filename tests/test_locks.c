/*
 * test_locks: the real tinspect on the lock fixtures.  Each
 * fx_lock_* program reports what it planted (fixtures/fx_lock.h: locks
 * with their address, kind and symbol, owners, waiters, the cycle or stall
 * it expects); the tests compare that with blocked_on, locks[],
 * deadlocks[], stalls[] and orphaned_locks[], and with the exit status of
 * --check.
 *
 * Frames are not available yet (the unwinder is being written), so these
 * tests assert what registers, memory and symbols prove today.  Where a
 * case needs frame evidence to be fully attributed, the test says so in a
 * FRAMES: comment and asserts the part that is decided now.
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

TestSuite(locks, .fini = teardown, .timeout = 600 * TEST_TIME_SCALE);

/* ---- what the fixture reported ------------------------------------------- */

/* TID of a role ("tid ROLE TID" or "gone ROLE TID"). */
static pid_t role_tid(const char *role)
{
	for (size_t i = 0; i < fx.nlines; i++) {
		char r[64];
		int tid;
		if ((sscanf(fx.lines[i], "tid %63s %d", r, &tid) == 2 ||
		     sscanf(fx.lines[i], "gone %63s %d", r, &tid) == 2) &&
		    !strcmp(r, role))
			return tid;
	}
	cr_assert_fail("fixture reported no role %s", role);
	return 0;
}

struct planted_lock {
	char label[64], kind[16], sym[128];
	uint64_t addr;
};

static size_t planted_locks(struct planted_lock *out, size_t max)
{
	size_t n = 0;
	for (size_t i = 0; i < fx.nlines && n < max; i++) {
		struct planted_lock *p = &out[n];
		unsigned long a;
		if (sscanf(fx.lines[i], "lock %63s %lx %15s %127s", p->label, &a, p->kind,
			   p->sym) == 4) {
			p->addr = a;
			n++;
		}
	}
	return n;
}

static struct planted_lock planted(const char *label)
{
	struct planted_lock v[32];
	size_t n = planted_locks(v, 32);
	for (size_t i = 0; i < n; i++)
		if (!strcmp(v[i].label, label))
			return v[i];
	cr_assert_fail("fixture reported no lock %s", label);
	return v[0];
}

/* ---- what tinspect said ------------------------------------------------------ */

static json_t *run_json(const char *const *extra, int *status)
{
	json_t *doc = inspect_json(fx.pid, extra, status);
	cr_assert(!any_task_stopped(fx.pid) || wait_not_stopped(fx.pid, 2000),
		  "target left stopped");
	return doc;
}

/*
 * Every "lock" line: the lock is in locks[] at that address with that kind
 * and symbol; every "owner" line: it is held by that thread; every
 * "waiter" line: that thread's blocked_on points at it (with the mode) and
 * the lock lists it.  Returns the number of planted locks checked.
 */
static size_t check_planted(json_t *doc)
{
	struct planted_lock v[32];
	size_t n = planted_locks(v, 32);
	for (size_t i = 0; i < n; i++) {
		json_t *l = lock_at(doc, v[i].addr);
		cr_assert(l, "no lock at 0x%" PRIx64 " (%s)", v[i].addr, v[i].label);
		cr_assert_str_eq(jstr(l, "kind"), v[i].kind, "%s", v[i].label);
		cr_assert(json_is_true(json_object_get(l, "object_known")), "%s", v[i].label);
		json_t *sym = json_object_get(l, "symbol");
		if (!strcmp(v[i].sym, "-")) {
			cr_assert(json_is_null(sym), "%s has a symbol", v[i].label);
		} else {
			cr_assert(json_is_object(sym), "%s has no symbol", v[i].label);
			cr_assert_str_eq(jstr(sym, "symbol"), v[i].sym);
			cr_assert_eq(json_integer_value(json_object_get(sym, "offset")), 0);
		}
	}
	for (size_t i = 0; i < fx.nlines; i++) {
		char label[64], role[64], mode[16] = "";
		if (sscanf(fx.lines[i], "owner %63s %63s", label, role) == 2) {
			json_t *l = lock_at(doc, planted(label).addr);
			cr_assert_eq(json_integer_value(json_object_get(l, "owner")),
				     role_tid(role), "owner of %s", label);
			cr_assert_str_eq(jstr(l, "owner_state"), "live", "%s", label);
		}
		if (sscanf(fx.lines[i], "waiter %63s %63s %15s", label, role, mode) >= 2) {
			pid_t tid = role_tid(role);
			struct planted_lock p = planted(label);
			json_t *b = blocked_on(doc, tid);
			cr_assert(json_is_object(b), "%s (%d) is not blocked", role, (int)tid);
			cr_assert_str_eq(jstr(b, "kind"), p.kind, "%s waits", role);
			cr_assert_eq(jhex(b, "object"), p.addr, "%s waits for %s", role, label);
			cr_assert(json_is_true(json_object_get(b, "in_graph")));
			if (mode[0])
				cr_assert_str_eq(jstr(b, "mode"), mode, "%s's mode", role);
			json_t *l = lock_at(doc, p.addr);
			size_t k;
			json_t *w;
			bool found = false;
			json_array_foreach(json_object_get(l, "waiters"), k, w)
				if (json_integer_value(json_object_get(w, "tid")) == tid)
					found = true;
			cr_assert(found, "%s not among the waiters of %s", role, label);
			mode[0] = '\0';
		}
	}
	return n;
}

/* The "cycle" line, rotated to start at its smallest tid as tinspect
 * reports cycles, must be exactly one of deadlocks[]. */
static void check_cycle(json_t *doc)
{
	const char *line = fx_line(&fx, "cycle ");
	cr_assert(line, "fixture reported no cycle");
	char *dup = strdup(line + 6), *save = NULL;
	pid_t tids[16];
	uint64_t locks[16];
	size_t n = 0;
	for (char *tok = strtok_r(dup, " ", &save); tok && n < 16;
	     tok = strtok_r(NULL, " ", &save)) {
		tids[n] = role_tid(tok);
		char *l = strtok_r(NULL, " ", &save);
		cr_assert(l);
		locks[n++] = planted(l).addr;
	}
	free(dup);
	size_t first = 0;
	for (size_t i = 1; i < n; i++)
		if (tids[i] < tids[first])
			first = i;
	json_t *dls = json_object_get(doc, "deadlocks");
	size_t i;
	json_t *d;
	bool found = false;
	json_array_foreach(dls, i, d) {
		json_t *t = json_object_get(d, "threads"), *l = json_object_get(d, "locks");
		if (json_array_size(t) != n)
			continue;
		bool same = true;
		for (size_t k = 0; k < n; k++) {
			size_t e = (first + k) % n;
			if (json_integer_value(json_array_get(t, k)) != tids[e] ||
			    jhex(json_array_get(l, k), "addr") != locks[e])
				same = false;
		}
		found |= same;
	}
	cr_assert(found, "cycle \"%s\" not among %zu deadlocks", line,
		  json_array_size(dls));
}

static size_t ndeadlocks(json_t *doc)
{
	return json_array_size(json_object_get(doc, "deadlocks"));
}

/* The "stall" line: one of stalls[] starts with these threads/locks. */
static json_t *check_stall(json_t *doc)
{
	const char *line = fx_line(&fx, "stall ");
	cr_assert(line, "fixture reported no stall");
	char *dup = strdup(line + 6), *save = NULL;
	const char *tok[16];
	size_t n = 0;
	for (char *t = strtok_r(dup, " ", &save); t && n < 16; t = strtok_r(NULL, " ", &save))
		tok[n++] = t;
	/* ROLE LABEL ROLE [LABEL]: threads at even positions */
	size_t nthr = (n + 1) / 2;
	size_t i;
	json_t *st, *match = NULL;
	json_array_foreach(json_object_get(doc, "stalls"), i, st) {
		json_t *t = json_object_get(st, "threads"), *l = json_object_get(st, "locks");
		if (json_array_size(t) != nthr)
			continue;
		bool same = true;
		for (size_t k = 0; k < nthr; k++)
			if (json_integer_value(json_array_get(t, k)) != role_tid(tok[2 * k]))
				same = false;
		for (size_t k = 0; k + 1 < nthr; k++)
			if (jhex(json_array_get(l, k), "addr") != planted(tok[2 * k + 1]).addr)
				same = false;
		if (same)
			match = st;
	}
	cr_assert(match, "stall \"%s\" not found", line);
	json_t *end = json_object_get(match, "end");
	if (n % 2 == 0) {	/* ends with the label the last thread waits on */
		json_t *el = json_object_get(end, "lock");
		cr_assert(json_is_object(el));
		cr_assert_eq(jhex(el, "addr"), planted(tok[n - 1]).addr);
	}
	free(dup);
	return end;
}

static int check_status(void)
{
	int status;
	const char *extra[] = { "--check", NULL };
	json_t *doc = run_json(extra, &status);
	json_decref(doc);
	return status;
}

/* ---- the cases -------------------------------------------------------------- */

Test(locks, abba_on_normal_mutexes)
{
	fx_start(&fx, "fx_lock_abba", NULL, 60);
	int status;
	json_t *doc = run_json(NULL, &status);
	cr_assert_eq(status, 0, "a deadlock is no error without --check");
	cr_assert_eq(check_planted(doc), 2);
	cr_assert_eq(ndeadlocks(doc), 1);
	check_cycle(doc);
	json_t *b = blocked_on(doc, role_tid("post-transfer"));
	cr_assert(has_evidence(b, "syscall") && has_evidence(b, "words") &&
		  has_evidence(b, "symbol"));
	cr_assert_str_eq(jstr(b, "symbol"), "audit_lock", "a static is named too");
	json_t *l = lock_at(doc, planted("ledger_lock").addr);
	cr_assert_str_eq(jstr(json_object_get(l, "mutex"), "type"), "normal");
	cr_assert_eq(json_array_size(json_object_get(doc, "stalls")), 0);
	cr_assert_eq(json_array_size(json_object_get(doc, "orphaned_locks")), 0);
	json_decref(doc);
	cr_assert_eq(check_status(), 10, "--check: deadlock found");
	/* the same through /proc/PID/mem (kernels that refuse
	 * process_vm_readv) */
	const char *pm[] = { "--proc-mem", NULL };
	doc = run_json(pm, NULL);
	cr_assert_eq(ndeadlocks(doc), 1, "no deadlock through /proc/PID/mem");
	check_cycle(doc);
	json_decref(doc);

	/* the text report, jstack-like */
	struct run r;
	char pid[16], want[256];
	snprintf(pid, sizeof pid, "%d", (int)fx.pid);
	const char *args[] = { pid, NULL };
	run_tinspect(&r, args, 60);
	cr_assert_eq(r.status, 0);
	cr_assert(strstr(r.out, "Found one deadlock:\n==================="), "%s", r.out);
	snprintf(want, sizeof want,
		 "thread \"post-transfer\" (%d) waits for lock 0x%" PRIx64
		 " (audit_lock, mutex normal) held by thread \"audit-ledger\" (%d)\n",
		 (int)role_tid("post-transfer"), planted("audit_lock").addr,
		 (int)role_tid("audit-ledger"));
	cr_assert(strstr(r.out, want), "missing: %s", want);
	snprintf(want, sizeof want,
		 "thread \"audit-ledger\" (%d) waits for lock 0x%" PRIx64
		 " (ledger_lock, mutex normal) held by thread \"post-transfer\" (%d)\n",
		 (int)role_tid("audit-ledger"), planted("ledger_lock").addr,
		 (int)role_tid("post-transfer"));
	cr_assert(strstr(r.out, want), "missing: %s", want);
	/* followed by the stacks of the threads in the cycle */
	const char *st = strstr(r.out, "Stacks of the threads above:\n");
	cr_assert(st, "no stacks after the cycle");
	snprintf(want, sizeof want, "Thread %d \"post-transfer\"\n  #0 ",
		 (int)role_tid("post-transfer"));
	cr_assert(strstr(st, want), "missing: %s", want);
	cr_assert(strstr(st, " in pthread_mutex_lock") || strstr(st, " in __pthread_mutex_lock"),
		  "no pthread_mutex_lock frame in the deadlock stacks");
	run_free(&r);
}

Test(locks, timed_waits_continue_in_restart_syscall)
{
	const char *args[] = { "--timed", NULL };
	fx_start(&fx, "fx_lock_abba", args, 60);
	pid_t a = role_tid("post-transfer");
	/* first stop: interrupted in futex (timed: pthread_mutex_timedlock) */
	json_t *doc = run_json(NULL, NULL);
	json_t *sc = json_object_get(thread_by_tid(doc, a), "syscall");
	cr_assert_str_eq(jstr(sc, "name"), "futex");
	cr_assert(has_evidence(blocked_on(doc, a), "syscall"));
	check_cycle(doc);
	json_decref(doc);
	/* after that stop the kernel continues the timed wait in
	 * restart_syscall, the futex arguments still in the registers
	 * (docs/GLIBC.md §6) */
	cr_assert(wait_not_stopped(fx.pid, 2000));
	doc = run_json(NULL, NULL);
	sc = json_object_get(thread_by_tid(doc, a), "syscall");
	cr_assert_str_eq(jstr(sc, "name"), "restart_syscall");
	json_t *b = blocked_on(doc, a);
	cr_assert(has_evidence(b, "restart_syscall"));
	cr_assert_eq(jhex(b, "object"), planted("audit_lock").addr);
	cr_assert_eq(ndeadlocks(doc), 1);
	check_cycle(doc);
	json_decref(doc);
}

Test(locks, three_cycle_over_heap_mutexes)
{
	fx_start(&fx, "fx_lock_heap3", NULL, 60);
	json_t *doc = run_json(NULL, NULL);
	cr_assert_eq(check_planted(doc), 3, "no symbol: decided by the words");
	cr_assert_eq(ndeadlocks(doc), 1);
	check_cycle(doc);
	json_t *b = blocked_on(doc, role_tid("stage-0"));
	cr_assert(has_evidence(b, "words") && !has_evidence(b, "symbol"));
	cr_assert(json_is_null(json_object_get(b, "symbol")));
	json_decref(doc);
}

Test(locks, relocking_an_owned_mutex)
{
	fx_start(&fx, "fx_lock_self", NULL, 60);
	json_t *doc = run_json(NULL, NULL);
	check_planted(doc);
	cr_assert_eq(ndeadlocks(doc), 1);
	check_cycle(doc);
	json_t *d = json_array_get(json_object_get(doc, "deadlocks"), 0);
	cr_assert_eq(json_array_size(json_object_get(d, "threads")), 1, "a 1-cycle");
	cr_assert_eq(json_array_size(json_object_get(doc, "stalls")), 0,
		     "the bystander waits behind a deadlock, not a stall");
	json_decref(doc);
	cr_assert_eq(check_status(), 10);
}

Test(locks, rwlock_writer_and_mutex_cycle)
{
	fx_start(&fx, "fx_lock_rwcycle", NULL, 60);
	json_t *doc = run_json(NULL, NULL);
	check_planted(doc);
	cr_assert_eq(ndeadlocks(doc), 1);
	check_cycle(doc);
	json_t *l = lock_at(doc, planted("config_rwlock").addr);
	json_t *rw = json_object_get(l, "rwlock");
	cr_assert(json_is_true(json_object_get(rw, "write_locked")));
	cr_assert_eq(json_integer_value(json_object_get(rw, "cur_writer")), role_tid("writer"));
	/* the waiting writer sleeps on __writers_futex (+12), the reader on
	 * __wrphase_futex (+8) */
	cr_assert_eq(jhex(blocked_on(doc, role_tid("cacher")), "futex"),
		     planted("config_rwlock").addr + 12);
	cr_assert_eq(jhex(blocked_on(doc, role_tid("reader")), "futex"),
		     planted("config_rwlock").addr + 8);
	json_decref(doc);
}

Test(locks, recursive_mutex_in_a_cycle)
{
	fx_start(&fx, "fx_lock_recursive", NULL, 60);
	json_t *doc = run_json(NULL, NULL);
	check_planted(doc);
	check_cycle(doc);
	json_t *m = json_object_get(lock_at(doc, planted("registry_lock").addr), "mutex");
	cr_assert_str_eq(jstr(m, "type"), "recursive");
	cr_assert_eq(json_integer_value(json_object_get(m, "count")), 3);
	json_decref(doc);
}

Test(locks, errorcheck_mutexes)
{
	fx_start(&fx, "fx_lock_errorcheck", NULL, 60);
	cr_assert(fx_line(&fx, "relock teller EDEADLK"), "a relock returns EDEADLK");
	json_t *doc = run_json(NULL, NULL);
	check_planted(doc);
	cr_assert_eq(ndeadlocks(doc), 1, "the relock is not a deadlock, the ABBA is");
	check_cycle(doc);
	json_t *m = json_object_get(lock_at(doc, planted("table_lock").addr), "mutex");
	cr_assert_str_eq(jstr(m, "type"), "errorcheck");
	json_decref(doc);
}

Test(locks, pi_abba_with_park_after_edeadlk)
{
	fx_start(&fx, "fx_lock_pi", NULL, 60);
	json_t *doc = run_json(NULL, NULL);
	pid_t first = role_tid("pi-first"), second = role_tid("pi-second");
	/* pi-first sleeps in FUTEX_LOCK_PI on pi_b: the kernel's word */
	json_t *b = blocked_on(doc, first);
	cr_assert_eq(jhex(b, "object"), planted("pi_b").addr);
	/* FUTEX_LOCK_PI proves it, or the frames (__futex_lock_pi64) do
	 * first when stacks are unwound */
	cr_assert(has_evidence(b, "kernel_pi") || has_evidence(b, "frames"));
	cr_assert_eq(json_integer_value(json_object_get(b, "owner")), second);
	cr_assert(json_is_true(json_object_get(json_object_get(
		lock_at(doc, planted("pi_b").addr), "mutex"), "pi")));
	/* pi-second was parked by glibc on its own stack */
	b = blocked_on(doc, second);
	cr_assert(json_is_true(json_object_get(b, "parked")));
	unsigned long park;
	cr_assert(sscanf(fx_line(&fx, "park "), "park pi-second %lx", &park) == 1);
	cr_assert_eq(jhex(b, "futex"), park);
	/* FRAMES: the public entry point does not appear in the frames
	 * without libc debug symbols (pthread_mutex_lock tail-calls
	 * __pthread_mutex_lock_full); today the mutex comes from the
	 * callee-saved registers (r14 = &pi_a->__kind) and is accepted
	 * because the cycle it closes is visible. */
	cr_assert(has_evidence(b, "registers"));
	cr_assert_eq(jhex(b, "object"), planted("pi_a").addr);
	cr_assert_eq(json_integer_value(json_object_get(b, "owner")), first);
	cr_assert_eq(ndeadlocks(doc), 1);
	check_cycle(doc);
	json_decref(doc);
	cr_assert_eq(check_status(), 10);
}

Test(locks, robust_mutex_whose_owner_died)
{
	fx_start(&fx, "fx_lock_robust", NULL, 60);
	json_t *doc = run_json(NULL, NULL);
	check_planted(doc);
	json_t *m = json_object_get(lock_at(doc, planted("shm_lock").addr), "mutex");
	cr_assert(json_is_true(json_object_get(m, "robust")));
	cr_assert(json_is_true(json_object_get(m, "inconsistent")),
		  "the heir got EOWNERDEAD and did not make it consistent");
	cr_assert_eq(json_integer_value(json_object_get(m, "owner_field")), 0x7fffffff);
	/* the other waiter still sleeps with the dead owner's old word */
	json_t *b = blocked_on(doc, role_tid("other"));
	cr_assert_eq(jhex(b, "futex_val") & 0x3fffffff, (uint64_t)role_tid("doomed"));
	cr_assert_eq(jhex(b, "futex_op"), 0, "robust: a shared FUTEX_WAIT");
	cr_assert_eq(ndeadlocks(doc), 0);
	json_t *end = check_stall(doc);
	cr_assert_str_eq(jstr(end, "reason"), "syscall");
	cr_assert_str_eq(jstr(end, "syscall"), "read");
	json_decref(doc);
	cr_assert_eq(check_status(), 0);
}

Test(locks, orphaned_normal_mutex)
{
	fx_start(&fx, "fx_lock_orphan", NULL, 60);
	json_t *doc = run_json(NULL, NULL);
	check_planted(doc);
	struct planted_lock p = planted("session_lock");
	json_t *l = lock_at(doc, p.addr);
	cr_assert(json_is_true(json_object_get(l, "orphaned")));
	cr_assert_str_eq(jstr(l, "owner_state"), "dead");
	cr_assert_eq(json_integer_value(json_object_get(l, "owner")), role_tid("leaver"));
	json_t *o = json_object_get(doc, "orphaned_locks");
	cr_assert_eq(json_array_size(o), 1);
	cr_assert_eq(jhex(json_array_get(o, 0), "addr"), p.addr);
	cr_assert_eq(ndeadlocks(doc), 0);
	json_decref(doc);
	cr_assert_eq(check_status(), 0);
}

Test(locks, cond_waiters_with_nobody_to_signal)
{
	fx_start(&fx, "fx_lock_cond", NULL, 60);
	json_t *doc = run_json(NULL, NULL);
	/* each waiter's own cancellation cleanup record names the cond
	 * (dbsession/locks/condwait.c), and the symbol names it */
	check_planted(doc);
	json_t *b = blocked_on(doc, role_tid("worker-0"));
	cr_assert(has_evidence(b, "cleanup") && has_evidence(b, "frames"));
	cr_assert_str_eq(jstr(b, "symbol"), "jobs_ready");
	unsigned long f;
	cr_assert(sscanf(fx_line(&fx, "futex-of worker-0"), "futex-of worker-0 %lx", &f) == 1);
	cr_assert_eq(jhex(b, "futex"), f, "cond+40 or +44");
	json_t *c = json_object_get(lock_at(doc, planted("jobs_ready").addr), "cond");
	cr_assert_eq(json_integer_value(json_object_get(c, "waiters")), 3);
	unsigned long mx;
	cr_assert(sscanf(fx_line(&fx, "mutex-of jobs_ready"), "mutex-of jobs_ready %lx",
			 &mx) == 1);
	cr_assert_eq(jhex(c, "mutex"), mx, "the mutex the waiters' cleanup records name");
	cr_assert_eq(ndeadlocks(doc), 0, "a condvar has no owner: no cycle");
	json_t *end = check_stall(doc);
	cr_assert_str_eq(jstr(end, "reason"), "wait");
	json_decref(doc);
	cr_assert_eq(check_status(), 0);
}

/* Objects on the heap: no symbol, words that look like any futex.  Only
 * the calling frames (pthread_cond_wait, sem_wait, pthread_barrier_wait)
 * tell what they are. */
Test(locks, heap_objects_identified_by_their_frames)
{
	fx_start(&fx, "fx_lock_heapwait", NULL, 60);
	json_t *doc = run_json(NULL, NULL);
	cr_assert_eq(check_planted(doc), 3);
	static const char *const roles[] = { "cond-waiter", "sem-waiter",
					     "barrier-waiter" };
	for (size_t i = 0; i < 3; i++) {
		json_t *b = blocked_on(doc, role_tid(roles[i]));
		cr_assert(has_evidence(b, "frames"), "%s: no frame evidence", roles[i]);
		cr_assert(json_is_null(json_object_get(b, "symbol")));
	}
	cr_assert_eq(ndeadlocks(doc), 0);
	json_decref(doc);

	/* without stacks there is no such evidence: never a guess */
	const char *nostacks[] = { "--no-stacks", NULL };
	doc = run_json(nostacks, NULL);
	for (size_t i = 0; i < 3; i++) {
		json_t *b = blocked_on(doc, role_tid(roles[i]));
		cr_assert(!has_evidence(b, "frames"));
		cr_assert_str_neq(jstr(b, "kind"), i == 0 ? "cond" : i == 1 ? "sem" : "barrier",
				  "%s identified without any evidence", roles[i]);
	}
	json_decref(doc);
}

Test(locks, sem_wait_and_barrier)
{
	fx_start(&fx, "fx_lock_sem", NULL, 60);
	json_t *doc = run_json(NULL, NULL);
	/* FRAMES: sem_wait's frames carry no libc name without debug
	 * symbols (__new_sem_wait_slow64); slots_sem is identified by its
	 * symbol size and words.  A heap sem_t needs the sem_wait frame. */
	check_planted(doc);
	json_t *s = json_object_get(lock_at(doc, planted("slots_sem").addr), "sem");
	cr_assert_eq(json_integer_value(json_object_get(s, "value")), 0);
	cr_assert_eq(json_integer_value(json_object_get(s, "waiters")), 3);
	json_t *bar = json_object_get(lock_at(doc, planted("start_line").addr), "barrier");
	cr_assert_eq(json_integer_value(json_object_get(bar, "count")), 3);
	cr_assert_eq(json_integer_value(json_object_get(bar, "arrived")), 1);
	cr_assert_eq(ndeadlocks(doc), 0);
	json_decref(doc);
	/* the timed waiter, after one stop, in restart_syscall: still a sem */
	cr_assert(wait_not_stopped(fx.pid, 2000));
	doc = run_json(NULL, NULL);
	json_t *b = blocked_on(doc, role_tid("timed"));
	cr_assert(has_evidence(b, "restart_syscall"));
	cr_assert_str_eq(jstr(b, "kind"), "sem");
	json_decref(doc);
}

Test(locks, join_on_blocked_threads)
{
	fx_start(&fx, "fx_lock_join", NULL, 60);
	json_t *doc = run_json(NULL, NULL);
	check_planted(doc);
	/* the joiner sleeps on the planner's tid word, with its TID as value */
	json_t *b = blocked_on(doc, role_tid("joiner"));
	cr_assert(has_evidence(b, "thread"));
	cr_assert_eq(json_integer_value(json_object_get(b, "owner")), role_tid("planner"));
	cr_assert_eq(jhex(b, "futex_val"), (uint64_t)role_tid("planner"));
	cr_assert_eq(ndeadlocks(doc), 1);
	check_cycle(doc);
	/* main joins a thread idle in read(2): a join is no stall (a JVM's
	 * launcher joins its main Java thread for the life of the program) */
	cr_assert(fx_line(&fx, "nostall main"));
	cr_assert_eq(json_array_size(json_object_get(doc, "stalls")), 0,
		     "a join on an idle thread taken for a stall");
	json_t *mb = blocked_on(doc, role_tid("main"));
	cr_assert_str_eq(jstr(mb, "kind"), "join");
	json_decref(doc);
	cr_assert_eq(check_status(), 10);
}

Test(locks, cxx_std_mutex_cycle)
{
	fx_start(&fx, "fx_lock_cxx", NULL, 60);
	json_t *doc = run_json(NULL, NULL);
	check_planted(doc);	/* bank::accounts_mutex, journal_mutex: demangled */
	cr_assert_eq(ndeadlocks(doc), 1);
	check_cycle(doc);
	json_decref(doc);
}

Test(locks, heavy_contention_is_never_a_deadlock)
{
	fx_start(&fx, "fx_lock_contend", NULL, 60);
	fx_send(&fx, "progress");
	char *line = fx_read_line(&fx, 10);
	unsigned long before = 0, after = 0;
	cr_assert(line && sscanf(line, "progress %lu", &before) == 1);
	free(line);
	const char *extra[] = { "--check", NULL };
	char pid[16];
	snprintf(pid, sizeof pid, "%d", (int)fx.pid);
	const char *args[] = { "--json", "--check", pid, NULL };
	int caught = 0;
	for (int i = 0; i < 40; i++) {
		int status;
		json_t *doc;
		if (i % 10 == 0) {
			doc = inspect_json(fx.pid, extra, &status);	/* + schema */
		} else {
			/* the schema check is slow on 2 cores shared with 8
			 * busy workers; parse only */
			struct run r;
			run_tinspect(&r, args, 60);
			status = r.status;
			doc = json_loadb(r.out ? r.out : "", r.out_len, 0, NULL);
			cr_assert(doc, "no JSON, exit %d: %s", r.status, r.err ? r.err : "");
			run_free(&r);
		}
		cr_assert_eq(ndeadlocks(doc), 0, "false deadlock in snapshot %d", i);
		cr_assert_eq(status, 0, "--check exit %d in snapshot %d", status, i);
		/* non-vacuous: snapshots do catch threads asleep on a held lock */
		size_t k;
		json_t *t;
		json_array_foreach(json_object_get(doc, "threads"), k, t) {
			json_t *b = json_object_get(t, "blocked_on");
			if (json_is_object(b) && !strcmp(jstr(b, "kind"), "mutex") &&
			    !strcmp(jstr(b, "owner_state"), "live"))
				caught++;
		}
		json_decref(doc);
	}
	cr_assert_gt(caught, 0, "no snapshot caught a waiter on a held mutex");
	cr_assert(wait_not_stopped(fx.pid, 2000));
	fx_send(&fx, "progress");
	line = fx_read_line(&fx, 10);
	cr_assert(line && sscanf(line, "progress %lu", &after) == 1);
	free(line);
	cr_assert_gt(after, before, "the workers kept going");
}

Test(locks, one_cycle_among_3000_idle_threads)
{
	const char *args[] = { "--idle", "3000", NULL };
	fx_start(&fx, "fx_lock_abba", args, 300);
	int status;
	const char *extra[] = { "--check", NULL };
	json_t *doc = run_json(extra, &status);
	cr_assert_eq(status, 10);
	cr_assert_eq(json_array_size(json_object_get(doc, "threads")), 3003);
	check_planted(doc);
	cr_assert_eq(ndeadlocks(doc), 1);
	check_cycle(doc);
	json_t *pool = lock_at(doc, planted("pool_cond").addr);
	cr_assert_eq(json_array_size(json_object_get(pool, "waiters")), 3000,
		     "the idle pool: one condvar, 3000 waiters");
	cr_assert_eq(json_array_size(json_object_get(doc, "locks")), 3);
	cr_assert_eq(json_array_size(json_object_get(doc, "stalls")), 0);
	json_decref(doc);
}
