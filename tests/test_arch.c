/*
 * test_arch: the arch/ rules checked against the kernel, on a real stopped
 * thread: what a ptrace stop leaves of a system call the stop interrupted
 * (the number arch_decode_syscall finds, and on aarch64 what the kernel's
 * own syscallno regset says then; docs/ARCH.md).
 */
#include <criterion/criterion.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "arch.h"
#include "harness.h"

#ifndef NT_ARM_SYSTEM_CALL
#define NT_ARM_SYSTEM_CALL 0x404
#endif

static struct fixture fx;
static pid_t traced;

static void teardown(void)
{
	if (traced > 0)
		ptrace(PTRACE_DETACH, traced, NULL, NULL);
	traced = 0;
	fx_kill(&fx);
}

TestSuite(arch, .fini = teardown, .timeout = 120);

/* Seize tid and stop it with PTRACE_INTERRUPT, as a capture does. */
static void stop_thread(pid_t tid)
{
	cr_assert_eq(ptrace(PTRACE_SEIZE, tid, NULL, NULL), 0, "seize %d: %s", (int)tid,
		     strerror(errno));
	traced = tid;
	cr_assert_eq(ptrace(PTRACE_INTERRUPT, tid, NULL, NULL), 0);
	int st;
	cr_assert_eq(waitpid(tid, &st, __WALL), tid);
	cr_assert(WIFSTOPPED(st));
}

static void get_gregs(pid_t tid, const struct arch_desc *a, uint64_t *r)
{
	struct iovec iov = { r, ARCH_MAX_GREGS * sizeof *r };
	cr_assert_eq(ptrace(PTRACE_GETREGSET, tid, (void *)NT_PRSTATUS, &iov), 0);
	cr_assert_eq(iov.iov_len, a->ngregs * sizeof *r);
}

static uint32_t insn_at(pid_t pid, uint64_t addr)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/mem", (int)pid);
	int fd = open(path, O_RDONLY);
	cr_assert(fd >= 0);
	unsigned char b[4];
	cr_assert_eq(pread(fd, b, 4, (off_t)addr), 4);
	close(fd);
	return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 |
	       (uint32_t)b[3] << 24;
}

static int chain_tid(void)
{
	const char *l = fx_line(&fx, "chain ");
	cr_assert(l, "fx_stack did not report its chain thread");
	return atoi(l + 6);
}

/* fx_stack's chain thread sleeps in pthread_cond_wait: futex(2) with no
 * timeout, which the stop interrupts and the kernel will restart. */
Test(arch, syscall_of_a_stopped_futex_wait)
{
	fx_start(&fx, "fx_stack", NULL, 30);
	const struct arch_desc *a = arch_host();
	pid_t tid = chain_tid();
	stop_thread(tid);
	uint64_t r[ARCH_MAX_GREGS] = { 0 };
	get_gregs(tid, a, r);
	struct arch_syscall sc;
	if (a->id == ARCH_X86_64) {
		/* orig_rax keeps the number, rax the restart code */
		arch_decode_syscall(a, r, -1, &sc);
		cr_assert_eq(sc.nr, a->nr_futex);
		cr_assert(sc.restarting);
		cr_assert_eq(arch_syscall_at_insn(a, r, insn_at(fx.pid, arch_pc(a, r))), -1);
		return;
	}
	/* aarch64: the kernel forgets the call before the stop (its
	 * syscallno is -1, as a core's NT_ARM_SYSTEM_CALL then says), rewinds
	 * the pc onto the svc and gives x0 back its argument */
	int32_t no = 12345;
	struct iovec iov = { &no, sizeof no };
	cr_assert_eq(ptrace(PTRACE_GETREGSET, tid, (void *)NT_ARM_SYSTEM_CALL, &iov), 0);
	cr_assert_eq(no, -1, "syscallno at the stop: %d", no);
	uint32_t insn = insn_at(fx.pid, arch_pc(a, r));
	cr_assert_eq(insn, 0xd4000001u, "not on an svc: %#x", insn);
	long hint = arch_syscall_at_insn(a, r, insn);
	cr_assert_eq(hint, a->nr_futex);
	arch_decode_syscall(a, r, hint, &sc);
	cr_assert_eq(sc.nr, a->nr_futex);
	/* FUTEX_WAIT or FUTEX_WAIT_BITSET (docs/GLIBC.md §6) */
	cr_assert((sc.args[1] & 0x7f) == 0 || (sc.args[1] & 0x7f) == 9, "op %#llx",
		  (unsigned long long)sc.args[1]);
	/* x0 is the futex word again, not the restart code */
	cr_assert_gt(sc.args[0], 4096);
	/* the instruction after the svc is not one */
	cr_assert_eq(arch_syscall_at_insn(a, r, insn_at(fx.pid, arch_pc(a, r) + 4)), -1);
}
