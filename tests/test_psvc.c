/*
 * test_psvc: proc_service against a real fixture process, through its C
 * API: memory reads (live, through the per-stop cache, batched prefetch,
 * /proc/PID/mem), the module map and symbol lookups, stop and resume.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "arch.h"
#include "harness.h"
#include "psvc.h"

static struct fixture fx;
static struct psvc_target *tgt;

static void teardown(void)
{
	psvc_close(tgt);
	tgt = NULL;
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
