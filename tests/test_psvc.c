/*
 * test_psvc: proc_service against a real fixture process, through its C
 * API: memory reads (live, through the per-stop cache, batched prefetch,
 * /proc/PID/mem), the module map and symbol lookups, stop and resume.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <inttypes.h>
#include <fcntl.h>
#include <signal.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/user.h>
#include <unistd.h>

#include "arch.h"
#include "harness.h"
#include "psvc.h"

static struct fixture fx;
static struct psvc_target *tgt;
static pid_t vfork_child;	/* fx_vfork's child, a process of its own */

static void teardown(void)
{
	psvc_close(tgt);
	tgt = NULL;
	/* while fx_vfork lives the child is unreaped, so its PID is still
	 * its own: signalled before the parent goes, never after */
	if (vfork_child > 0) {
		kill(vfork_child, SIGKILL);
		vfork_child = 0;
	}
	fx_kill(&fx);
}

TestSuite(psvc, .fini = teardown, .timeout = 120 * TEST_TIME_SCALE);

static unsigned long fx_sym(const char *name)
{
	char want[96];
	snprintf(want, sizeof want, "sym %s ", name);
	const char *l = fx_line(&fx, want);
	cr_assert(l, "fixture did not report %s", name);
	return strtoul(l + strlen(want), NULL, 16);
}

/* The pthread_t (its struct pthread) of task tid, as the fixture said. */
static uint64_t pthread_of(pid_t tid)
{
	for (size_t i = 0; i < fx.nlines; i++) {
		int t;
		unsigned long pt;
		if ((sscanf(fx.lines[i], "thread %d %lx", &t, &pt) == 2 ||
		     sscanf(fx.lines[i], "main %d %lx", &t, &pt) == 2) && t == tid)
			return pt;
	}
	cr_assert_fail("fixture did not report the pthread_t of %d", (int)tid);
	return 0;
}

/* The word at addr as /proc/PID/mem has it. */
static uint64_t mem_word(uint64_t addr)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/mem", (int)fx.pid);
	int fd = open(path, O_RDONLY);
	cr_assert(fd >= 0, "%s: %s", path, strerror(errno));
	uint64_t w = 0;
	cr_assert_eq(pread(fd, &w, sizeof w, (off_t)addr), (ssize_t)sizeof w);
	close(fd);
	return w;
}

static void start(void)
{
	const char *args[] = { "alpha:61", "beta:62", NULL };
	fx_start(&fx, "fx_threads", args, 30);
}

/* Each planted thread's struct pthread as proc_service reads it is what
 * /proc/PID/mem holds there; on x86_64 its first word, tcbhead_t's self
 * pointer, is the pthread_t itself (aarch64's TCB is at the thread
 * pointer, above struct pthread, whose first words are flags). */
static void check_descriptors(void)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/mem", (int)fx.pid);
	int fd = open(path, O_RDONLY);
	cr_assert(fd >= 0, "%s: %s", path, strerror(errno));
	unsigned long pt;
	int tid;
	for (size_t i = 0; i < fx.nlines; i++) {
		char role[16];
		if (sscanf(fx.lines[i], "thread %d %lx %15s", &tid, &pt, role) != 3)
			continue;
		unsigned char ours[64], kernels[64];
		cr_assert_eq(psvc_read(tgt, pt, ours, sizeof ours), 0);
		cr_assert_eq(pread(fd, kernels, sizeof kernels, (off_t)pt),
			     (ssize_t)sizeof kernels);
		cr_assert_arr_eq(ours, kernels, sizeof ours, "struct pthread of %d", tid);
#if defined(__x86_64__)
		uint64_t word;
		memcpy(&word, ours, sizeof word);
		cr_assert_eq(word, pt, "self pointer of %d", tid);
#endif
	}
	close(fd);
}

Test(psvc, live_and_cached_reads_agree)
{
	start();
	struct psvc_open_opts oo = { 0 };
	cr_assert_eq(psvc_open(fx.pid, &oo, &tgt), 0);
	check_descriptors();
	cr_assert_eq(psvc_scan(tgt), 3);
	struct psvc_stop_opts so = { .stop_timeout_ns = 5000000000ull };
	cr_assert_eq(psvc_stop(tgt, &so), 3);
	cr_assert(psvc_is_stopped(tgt));
	psvc_read_regs(tgt);
	struct psvc_range r[3];
	for (size_t i = 0; i < psvc_ntasks(tgt); i++) {
		struct psvc_task *k = psvc_task_at(tgt, i);
		cr_assert(k->flags & PSVC_TASK_HAVE_REGS);
		/* what check_descriptors reads: the start of each struct
		 * pthread (at the thread pointer on x86_64, below it on
		 * aarch64) */
		r[i] = (struct psvc_range){ pthread_of(k->tid), 64 };
	}
	uint64_t before = psvc_read_syscalls(tgt);
	psvc_prefetch(tgt, r, 3);
	uint64_t after = psvc_read_syscalls(tgt);
	cr_assert(after - before <= 1, "prefetch of 3 ranges took %llu syscalls",
		  (unsigned long long)(after - before));
	check_descriptors();
	cr_assert_eq(psvc_read_syscalls(tgt), after, "cached reads went to the target");
	/* an unmapped address fails cleanly, cached or not */
	char b[16];
	cr_assert_eq(psvc_read(tgt, 0x1000, b, sizeof b), -EFAULT);
	cr_assert_eq(psvc_read(tgt, UINT64_MAX - 4, b, 8), -EFAULT);
	psvc_resume(tgt);
	cr_assert_not(psvc_is_stopped(tgt));
	cr_assert(psvc_freeze_ns(tgt) > 0);
	cr_assert(!any_task_stopped(fx.pid));
}

/* A cancel raised before the stop (SIGINT while the session was being
 * prepared): nothing is seized at all. */
Test(psvc, cancel_before_the_stop_holds_nothing)
{
	start();
	cr_assert_eq(psvc_open(fx.pid, NULL, &tgt), 0);
	cr_assert_eq(psvc_scan(tgt), 3);
	static volatile sig_atomic_t raised = SIGINT;
	struct psvc_stop_opts so = { .stop_timeout_ns = 5000000000ull,
				     .cancel = &raised };
	cr_assert_eq(psvc_stop(tgt, &so), -EINTR);
	cr_assert_not(psvc_is_stopped(tgt));
	for (size_t i = 0; i < psvc_ntasks(tgt); i++)
		cr_assert_eq(psvc_task_at(tgt, i)->flags &
				     (PSVC_TASK_SEIZED | PSVC_TASK_CAPTURED), 0,
			     "task %d was held", (int)psvc_task_at(tgt, i)->tid);
	cr_assert_eq(psvc_freeze_ns(tgt), 0, "no freeze at all");
	cr_assert(!any_task_stopped(fx.pid));
}

Test(psvc, prefetch_skips_unreadable_ranges)
{
	start();
	cr_assert_eq(psvc_open(fx.pid, NULL, &tgt), 0);
	cr_assert_eq(psvc_scan(tgt), 3);
	cr_assert_eq(psvc_stop(tgt, NULL), 3);
	psvc_read_regs(tgt);
	struct psvc_task *k = psvc_task_at(tgt, 1);
	uint64_t pt = pthread_of(k->tid);
	struct psvc_range r[3] = {
		{ 0x1000, 4096 },		/* unmapped */
		{ pt, 64 },
		{ 0x2000, 8192 },		/* unmapped */
	};
	psvc_prefetch(tgt, r, 3);
	uint64_t n = psvc_read_syscalls(tgt);
	uint64_t w;
	cr_assert_eq(psvc_read(tgt, pt, &w, sizeof w), 0);
	cr_assert_eq(w, mem_word(pt));
	cr_assert_eq(psvc_read_syscalls(tgt), n, "the readable range was not cached");
	psvc_resume(tgt);
}

/* A range that runs from a thread's stack into the guard above it: what
 * was readable is kept, and the frozen extent (the stack's copied_bytes)
 * is that part only; through process_vm_readv or /proc/PID/mem. */
static void frozen_extent_check(bool proc_mem)
{
	start();
	struct psvc_open_opts oo = { .force_proc_mem = proc_mem };
	cr_assert_eq(psvc_open(fx.pid, &oo, &tgt), 0);
	cr_assert_eq(psvc_modules_load(tgt), 0);	/* reads the maps */
	cr_assert_eq(psvc_scan(tgt), 3);
	cr_assert_eq(psvc_stop(tgt, NULL), 3);
	psvc_read_regs(tgt);
	const struct arch_desc *a = psvc_arch(tgt);
	bool tried = false;
	for (size_t i = 0; i < psvc_ntasks(tgt); i++) {
		struct psvc_task *k = psvc_task_at(tgt, i);
		struct psvc_map m, above;
		if (psvc_map_lookup(tgt, arch_sp(a, k->gregs), &m, NULL))
			continue;
		/* above the stack: nothing, or (process_vm_readv only: the
		 * kernel lets /proc/PID/mem read PROT_NONE pages) a guard */
		int err = psvc_map_lookup(tgt, m.end, &above, NULL);
		if (!(err == -ENOENT || (!proc_mem && !strcmp(above.perms, "---p"))))
			continue;
		struct psvc_range r = { m.end - 4096, 8192 };
		psvc_prefetch(tgt, &r, 1);
		cr_assert_eq(psvc_frozen_extent(tgt, m.end - 4096, 8192), 4096,
			     "task %d", (int)k->tid);
		cr_assert_eq(psvc_frozen_extent(tgt, m.end - 100, 50), 50);
		cr_assert_eq(psvc_frozen_extent(tgt, m.end, 4096), 0);
		tried = true;
	}
	cr_assert(tried, "no stack with unreadable memory right above it");
	psvc_resume(tgt);
}

Test(psvc, frozen_extent_stops_at_unreadable_memory)
{
	frozen_extent_check(false);
}

Test(psvc, frozen_extent_stops_at_unreadable_memory_proc_mem)
{
	frozen_extent_check(true);
}

Test(psvc, proc_mem_reads)
{
	start();
	struct psvc_open_opts oo = { .force_proc_mem = true };
	cr_assert_eq(psvc_open(fx.pid, &oo, &tgt), 0);
	check_descriptors();
	char b[8];
	cr_assert_eq(psvc_read(tgt, 0x1000, b, sizeof b), -EFAULT);
}

Test(psvc, module_map_and_symbols)
{
	start();
	cr_assert_eq(psvc_open(fx.pid, NULL, &tgt), 0);
	cr_assert_eq(psvc_modules_load(tgt), 0);
	cr_assert_eq(psvc_modmap_source(tgt), PSVC_MODMAP_LINK_MAP);
	uint64_t gen = psvc_modules_generation(tgt);
	unsigned seen = 0;
	for (size_t i = 0; i < psvc_nmodules(tgt); i++) {
		struct psvc_module *m = psvc_module_at(tgt, i);
		cr_assert(!(m->flags & PSVC_MOD_MISMATCH), "%s: link_map and maps "
			  "disagree", m->path);
		seen |= m->flags;
	}
	cr_assert(seen & PSVC_MOD_EXE);
	cr_assert(seen & PSVC_MOD_LIBC);
	cr_assert(seen & PSVC_MOD_LDSO);
	cr_assert(seen & PSVC_MOD_VDSO);

	/* by name: libthread_db's symbols live in libc */
	uint64_t a;
	cr_assert_eq(psvc_lookup_symbol(tgt, "__nptl_version", &a), 0);
	struct psvc_module *m = psvc_module_for_addr(tgt, a);
	cr_assert(m && (m->flags & PSVC_MOD_LIBC));
	char v[8];
	cr_assert_eq(psvc_read_string(tgt, a, v, sizeof v), 0);
	cr_assert_str_eq(v, "2.36");
	cr_assert_eq(psvc_lookup_symbol(tgt, "no_such_symbol_anywhere", &a), -ENOENT);

	/* by address: the fixture's own start routines */
	static const char *const fns[] = { "fx_start_alpha", "fx_start_beta",
					   "fx_start_gamma" };
	for (size_t i = 0; i < 3; i++) {
		unsigned long addr = fx_sym(fns[i]);
		struct psvc_symbol s;
		cr_assert_eq(psvc_addr_to_symbol(tgt, addr, &s), 0);
		cr_assert_str_eq(s.name, fns[i]);
		cr_assert_eq(s.offset, 0);
		cr_assert(s.module->flags & PSVC_MOD_EXE);
		cr_assert_eq(psvc_addr_to_symbol(tgt, addr + 3, &s), 0);
		cr_assert_str_eq(s.name, fns[i]);
		cr_assert_eq(s.offset, 3);
		cr_assert_eq(psvc_lookup_symbol(tgt, fns[i], &a), 0);
		cr_assert_eq(a, addr);
	}
	/* nothing changed: same generation, no rebuild */
	cr_assert_eq(psvc_modules_load(tgt), 0);
	cr_assert_eq(psvc_modules_generation(tgt), gen);
}

Test(psvc, open_errors)
{
	cr_assert_eq(psvc_open(0, NULL, &tgt), -ESRCH);
	cr_assert_eq(psvc_open(-5, NULL, &tgt), -ESRCH);
	fx_start(&fx, FX_32BIT, NULL, 30);
	cr_assert_eq(psvc_open(fx.pid, NULL, &tgt), -ENOEXEC);
	tgt = NULL;
}

/* ---- the tracer crew (live_crew.c) ---- */

/* Every task is stopped before anything is read, whatever thread of the
 * crew holds it: a counting spinner's rbx is its fx_count, or one ahead
 * (stopped between the add and the store); a copy of fx_count made while
 * it still ran would fall far behind its registers. */
Test(psvc, crew_stops_every_task_before_any_read)
{
#ifndef __x86_64__
	cr_skip_test("the counting spinners are x86_64 code");
#else
	const char *args[] = { "--idle", "200", "--spin", "0", "--count", "8", NULL };
	fx_start(&fx, "fx_spin", args, 60);
	int tid[8];
	unsigned long addr[8];
	size_t nc = 0;
	for (size_t i = 0; i < fx.nlines && nc < 8; i++)
		if (sscanf(fx.lines[i], "count %d %lx", &tid[nc], &addr[nc]) == 2)
			nc++;
	cr_assert_eq(nc, 8);
	cr_assert_eq(psvc_open(fx.pid, NULL, &tgt), 0);
	uint64_t last[8] = { 0 };
	for (int round = 0; round < 12; round++) {
		cr_assert_gt(psvc_scan(tgt), 200);
		struct psvc_stop_opts so = { .stop_timeout_ns = 5000000000ull,
					     .tracers = 2 + (unsigned)round % 4 };
		cr_assert_gt(psvc_stop(tgt, &so), 200);
		psvc_read_regs(tgt);
		for (size_t c = 0; c < nc; c++) {
			struct psvc_task *k = psvc_task_by_tid(tgt, tid[c]);
			cr_assert(k && (k->flags & PSVC_TASK_HAVE_REGS));
			uint64_t rbx = k->gregs[offsetof(struct user_regs_struct, rbx) / 8];
			uint64_t count;
			cr_assert_eq(psvc_read(tgt, addr[c], &count, sizeof count), 0);
			cr_assert(rbx == count || rbx == count + 1,
				  "round %d (%u tracers), thread %d: rbx %" PRIu64
				  ", fx_count %" PRIu64 ": read while it ran",
				  round, so.tracers, tid[c], rbx, count);
			cr_assert_geq(count, last[c], "went backwards");
			last[c] = count;
		}
		psvc_resume(tgt);
		cr_assert(!any_task_stopped(fx.pid), "round %d left it stopped", round);
	}
#endif
}

static void on_wake(int sig)
{
	(void)sig;	/* only makes a blocked waitpid() return EINTR */
}

/* A task that does not stop in time (D state) and is held by a helper of
 * the crew is let go when the capture ends, with the process that ran it
 * still there: when it wakes, it runs on. */
Test(psvc, crew_lets_go_a_straggler_a_helper_holds)
{
	fx_start(&fx, "fx_vfork", NULL, 30);
	int pid, vtid, child;
	cr_assert(sscanf(fx_line(&fx, "ready"), "ready %d %d %d", &pid, &vtid, &child) == 3);
	vfork_child = child;
	cr_assert_eq(psvc_open(fx.pid, NULL, &tgt), 0);
	int n = psvc_scan(tgt);
	cr_assert_geq(n, 2);
	/* the waits end with EINTR from the wake timers, as in tinspect */
	struct sigaction sa = { .sa_handler = on_wake };
	sigemptyset(&sa.sa_mask);
	cr_assert_eq(sigaction(SIGALRM, &sa, NULL), 0);
	/* one tracer per task: every task but the first is a helper's */
	struct psvc_stop_opts so = { .stop_timeout_ns = 200000000ull,
				     .wake_signal = SIGALRM,
				     .tracers = (unsigned)n };
	cr_assert_gt(psvc_stop(tgt, &so), 0);
	struct psvc_task *v = psvc_task_by_tid(tgt, vtid);
	cr_assert(v && (v->flags & PSVC_TASK_STRAGGLER), "the vforker stopped?");
	cr_assert_neq(v, psvc_task_at(tgt, 0), "the vforker is the caller's");
	psvc_resume(tgt);
	fx_send(&fx, "release");
	vfork_child = 0;	/* it exits and fx_vfork reaps it */
	cr_assert(wait_state(fx.pid, vtid, 'S', 5000) || task_state(fx.pid, vtid) == 0,
		  "vforker state %c", task_state(fx.pid, vtid));
	cr_assert(!any_task_stopped(fx.pid));
}

/* Descriptors copied in pieces (psvc_copy_pieces): after the resume, a
 * field reads from its piece, a whole struct read from its start is the
 * pieces with zeros between them (what libthread_db copies), and
 * anything else was not copied: a miss, counted. */
Test(psvc, pieces_answer_fields_and_whole_structs)
{
	start();
	unsigned long pt[2];
	size_t np = 0;
	for (size_t i = 0; i < fx.nlines && np < 2; i++) {
		int tid;
		char role[16];
		if (sscanf(fx.lines[i], "thread %d %lx %15s", &tid, &pt[np], role) == 3)
			np++;
	}
	cr_assert_eq(np, 2);
	cr_assert_eq(psvc_open(fx.pid, NULL, &tgt), 0);
	cr_assert_eq(psvc_scan(tgt), 3);
	enum { SIZE = 1024 };
	const struct psvc_piece pieces[] = { { 8, 8 }, { 256, 64 } };
	uint64_t addrs[2] = { pt[0], pt[1] };
	/* the fixture's threads sleep: their descriptors hold still (read
	 * before the stop, so that the stop's cache has none of it) */
	unsigned char live[2][SIZE];
	for (int i = 0; i < 2; i++)
		cr_assert_eq(psvc_read(tgt, pt[i], live[i], SIZE), 0);
	struct psvc_stop_opts so = { .stop_timeout_ns = 5000000000ull };
	cr_assert_eq(psvc_stop(tgt, &so), 3);
	psvc_copy_pieces(tgt, addrs, 2, SIZE, pieces, 2);
	psvc_resume(tgt);

	psvc_frozen_reads(tgt, true);
	for (int i = 0; i < 2; i++) {
		unsigned char whole[SIZE], want[SIZE] = { 0 };
		memcpy(want + 8, live[i] + 8, 8);
		memcpy(want + 256, live[i] + 256, 64);
		cr_assert_eq(psvc_read(tgt, pt[i], whole, SIZE), 0);
		cr_assert_arr_eq(whole, want, SIZE);
		uint64_t w;
		cr_assert_eq(psvc_read(tgt, pt[i] + 264, &w, 8), 0);
		cr_assert_eq(memcmp(&w, live[i] + 264, 8), 0);
		uint64_t misses = psvc_frozen_misses(tgt);
		cr_assert_neq(psvc_read(tgt, pt[i] + 128, &w, 8), 0, "not copied");
		cr_assert_neq(psvc_read(tgt, pt[i] + 4, whole, SIZE - 4), 0,
			      "not a struct's start");
		cr_assert_neq(psvc_read(tgt, pt[i], whole, SIZE + 8), 0,
			      "more than a struct");
		cr_assert_eq(psvc_frozen_misses(tgt), misses + 3);
	}
	psvc_frozen_reads(tgt, false);
	psvc_drop_scratch(tgt);
	cr_assert(!any_task_stopped(fx.pid));
}

/*
 * Stacks and the descriptors above them in one read each
 * (psvc_copy_stacks): a glibc thread's stack top and its struct pthread
 * come whole, the static TLS between them is not kept; a stack and a
 * struct with an unmapped page between them still give both (the struct
 * read again on its own); a stack with no struct and a struct with no
 * stack are copied too.  Through process_vm_readv or /proc/PID/mem.
 */
static void copy_stacks_check(bool proc_mem)
{
	start();
	unsigned long pt = 0, hole = 0;
	for (size_t i = 0; i < fx.nlines; i++) {
		int tid;
		char role[16];
		if (!pt && sscanf(fx.lines[i], "thread %d %lx %15s", &tid, &pt, role) == 3)
			continue;
		if (!hole)
			sscanf(fx.lines[i], "hole %lx", &hole);
	}
	cr_assert(pt && hole);
	struct psvc_open_opts oo = { .force_proc_mem = proc_mem };
	cr_assert_eq(psvc_open(fx.pid, &oo, &tgt), 0);
	cr_assert_eq(psvc_scan(tgt), 3);
	enum { SIZE = 512, PG = 4096 };
	const struct psvc_piece pieces[] = { { 16, 8 }, { 256, 64 } };
	const uint64_t past = hole + 2 * PG - 16;	/* its first piece: page 2 */
	const struct psvc_stack_copy c[] = {
		{ pt - 2 * PG, PG, pt },		/* a thread's: one read */
		{ hole + 1024, PG - 1024, past },	/* across the hole */
		{ hole, 512, 0 },			/* no struct */
		{ 0, 0, pt - 3 * PG },			/* no stack */
	};
	/* what the copies must hold, read before the stop (the fixture
	 * sleeps: none of it moves) */
	static unsigned char live[4][2 * PG];
	for (int i = 0; i < 4; i++) {
		if (c[i].keep)
			cr_assert_eq(psvc_read(tgt, c[i].addr, live[i], c[i].keep), 0);
		for (int p = 0; c[i].pd && p < 2; p++)	/* the struct's pieces */
			cr_assert_eq(psvc_read(tgt, c[i].pd + pieces[p].off,
					       live[i] + PG + pieces[p].off, pieces[p].len), 0);
	}
	struct psvc_stop_opts so = { .stop_timeout_ns = 5000000000ull,
				     .reserve_runs = 8,
				     .reserve_parts = 4 * psvc_stack_copy_parts(2) };
	cr_assert_eq(psvc_stop(tgt, &so), 3);
	psvc_copy_stacks(tgt, c, 4, SIZE, pieces, 2);
	psvc_resume(tgt);

	psvc_frozen_reads(tgt, true);
	for (int i = 0; i < 4; i++) {
		unsigned char got[PG];
		if (c[i].keep) {
			cr_assert_eq(psvc_read(tgt, c[i].addr, got, c[i].keep), 0,
				     "copy %d: its stack", i);
			cr_assert_arr_eq(got, live[i], c[i].keep);
		}
		if (c[i].pd) {
			unsigned char want[SIZE] = { 0 };
			memcpy(want + 16, live[i] + PG + 16, 8);
			memcpy(want + 256, live[i] + PG + 256, 64);
			cr_assert_eq(psvc_read(tgt, c[i].pd, got, SIZE), 0,
				     "copy %d: its struct", i);
			cr_assert_arr_eq(got, want, SIZE);
		}
	}
	/* what lies between a stack and its struct is not kept */
	uint64_t misses = psvc_frozen_misses(tgt), w;
	cr_assert_neq(psvc_read(tgt, pt - PG + 64, &w, 8), 0, "between: not kept");
	cr_assert_neq(psvc_read(tgt, pt + 64, &w, 8), 0, "between pieces: not kept");
	cr_assert_eq(psvc_frozen_misses(tgt), misses + 2);
	psvc_frozen_reads(tgt, false);
	psvc_drop_scratch(tgt);
	cr_assert(!any_task_stopped(fx.pid));
}

Test(psvc, copy_stacks_reads_stack_and_struct_together)
{
	copy_stacks_check(false);
}

Test(psvc, copy_stacks_reads_stack_and_struct_together_proc_mem)
{
	copy_stacks_check(true);
}

/*
 * A capture that stops after a nonblocking one (whose scan, as in a
 * nonblocking watch, does not read the userfaultfd ranges): the stop
 * reads them before it holds anything, and a read of a stack page
 * nobody will serve fails at once instead of waiting (fx_uffd outside:
 * hole's stack has missing pages just above its stack pointer).
 */
Test(psvc, stop_after_nonblocking_knows_userfaultfd_ranges)
{
	int ufd = (int)syscall(SYS_userfaultfd, 0);
	if (ufd < 0)
		cr_skip_test("userfaultfd: %s", strerror(errno));
	close(ufd);
	const char *args[] = { "outside", NULL };
	fx_start(&fx, "fx_uffd", args, 60);
	const char *l = fx_line(&fx, "hole ");
	cr_assert(l);
	pid_t hole = (pid_t)atoi(l + 5);
	cr_assert_eq(psvc_open(fx.pid, NULL, &tgt), 0);
	for (int round = 0; round < 2; round++) {
		cr_assert_gt(psvc_scan(tgt), 0);
		struct psvc_stop_opts so = { .stop_timeout_ns = 5000000000ull,
					     .nonblocking = round == 0 };
		cr_assert_gt(psvc_stop(tgt, &so), 0);
		psvc_resume(tgt);
	}
	cr_assert_gt(psvc_scan(tgt), 0);
	struct psvc_stop_opts so = { .stop_timeout_ns = 5000000000ull };
	cr_assert_gt(psvc_stop(tgt, &so), 0);
	psvc_read_regs(tgt);
	struct psvc_task *k = psvc_task_by_tid(tgt, hole);
	cr_assert(k && (k->flags & PSVC_TASK_HAVE_REGS));
	uint64_t sp = arch_sp(psvc_arch(tgt), k->gregs);
	static unsigned char buf[4 * 4096];
	/* a wait here would hang the test (the fixture's server never
	 * answers): the suite's timeout would end it */
	cr_assert_neq(psvc_read(tgt, sp, buf, sizeof buf), 0,
		      "read pages nobody served?");
	cr_assert_gt(psvc_hazard_reads(tgt, NULL), 0, "not counted as userfaultfd memory");
	psvc_resume(tgt);
	cr_assert(!any_task_stopped(fx.pid));
}
