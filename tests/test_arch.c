/*
 * test_arch: the arch/ rules checked against the kernel, on a real stopped
 * thread: what a ptrace stop leaves of a system call the stop interrupted
 * (the number arch_decode_syscall finds, and on aarch64 what the kernel's
 * own syscallno regset says then), and the pointer authentication mask
 * arch_pac_mask derives from the address space against the one the
 * kernel reports (docs/ARCH.md).
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
#ifndef NT_ARM_PAC_MASK
#define NT_ARM_PAC_MASK 0x406
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

TestSuite(arch, .fini = teardown, .timeout = 120 * TEST_TIME_SCALE);

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

/* With TINSPECT_RECORD_DIR set (tools/record-blobs.sh), the registers
 * are also written there as ARCH-futex-wait.gregs, the blob the unit
 * suite decodes on any host. */
static void record_gregs(const struct arch_desc *a, const uint64_t *r)
{
	const char *dir = getenv("TINSPECT_RECORD_DIR");
	if (!dir)
		return;
	char path[4096];
	snprintf(path, sizeof path, "%s/%s-futex-wait.gregs", dir, a->name);
	FILE *f = fopen(path, "w");
	cr_assert(f, "%s: %s", path, strerror(errno));
	fprintf(f, "# NT_PRSTATUS (%u words: %s .. %s) of fx_stack's chain thread,\n"
		"# stopped by PTRACE_SEIZE + PTRACE_INTERRUPT while it sleeps in\n"
		"# pthread_cond_wait's futex wait; recorded by tools/record-blobs.sh\n",
		a->ngregs, arch_greg_name(a, 0), arch_greg_name(a, a->ngregs - 1));
	for (unsigned i = 0; i < a->ngregs; i++)
		fprintf(f, "0x%016llx\n", (unsigned long long)r[i]);
	cr_assert_eq(fclose(f), 0);
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
	record_gregs(a, r);
	struct arch_syscall sc;
	if (!a->syscall_needs_hint) {
		/* x86_64: orig_rax keeps the number, rax the restart code */
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

/* The highest end of the mappings /proc/PID/maps lists under name. */
static uint64_t map_end(pid_t pid, const char *name)
{
	char path[64], line[512];
	snprintf(path, sizeof path, "/proc/%d/maps", (int)pid);
	FILE *f = fopen(path, "r");
	cr_assert(f);
	uint64_t end = 0;
	while (fgets(line, sizeof line, f)) {
		unsigned long long s, e;
		if (strstr(line, name) && sscanf(line, "%llx-%llx", &s, &e) == 2 && e > end)
			end = e;
	}
	fclose(f);
	return end;
}

Test(arch, pac_mask_is_the_kernels)
{
	const struct arch_desc *a = arch_host();
	if (!a->pac) {
		cr_assert_eq(arch_pac_mask(a, 1ull << 47), 0);
		cr_skip_test("no pointer authentication on %s", a->name);
	}
	fx_start(&fx, "fx_stack", NULL, 30);
	pid_t tid = chain_tid();
	stop_thread(tid);
	uint64_t m[2] = { 0, 0 };	/* struct user_pac_mask: data, insn */
	struct iovec iov = { m, sizeof m };
	if (ptrace(PTRACE_GETREGSET, tid, (void *)NT_ARM_PAC_MASK, &iov) != 0) {
		cr_assert_eq(errno, EINVAL);
		cr_skip_test("this CPU has no pointer authentication");
	}
	cr_assert_eq(m[0], m[1], "data %#llx, insn %#llx", (unsigned long long)m[0],
		     (unsigned long long)m[1]);
	/* from the top of the address space the process uses: its stack,
	 * or the highest module (the vDSO), as the unwinder takes it */
	uint64_t stack = map_end(fx.pid, "[stack]"), vdso = map_end(fx.pid, "[vdso]");
	cr_assert(stack && vdso);
	cr_assert_eq(arch_pac_mask(a, stack), m[1], "%#llx from the stack, kernel %#llx",
		     (unsigned long long)arch_pac_mask(a, stack), (unsigned long long)m[1]);
	cr_assert_eq(arch_pac_mask(a, vdso), m[1]);
}

/*
 * gdb writes NT_ARM_SVE instead of NT_FPREGSET on an aarch64 CPU with SVE:
 * the V registers are the low 16 bytes of the Z registers, FPSR and FPCR
 * follow the predicates.  A note for vector length 32 (two quadwords) in
 * SVE form, one in FPSIMD form, and a cut one; read on any host.
 */
Test(arch, aarch64_fpregs_from_an_sve_note)
{
	const struct arch_desc *a = &arch_desc_aarch64;
	cr_assert(a->fp_alt_note && a->fpregs_from_alt);
	enum { VL = 32, ZOFF = 16, FFR_END = ZOFF + 32 * VL + 17 * (VL / 8) };
	enum { FPSR = (FFR_END + 15) / 16 * 16, SIZE = FPSR + 16 };
	unsigned char note[SIZE] = { 0 }, out[1024];
	uint32_t size = SIZE, fpsr = 0x08000010, fpcr = 0x03c00000;
	uint16_t vl = VL, flags = 1;	/* SVE_PT_REGS_SVE */
	memcpy(note, &size, 4);
	memcpy(note + 8, &vl, 2);
	memcpy(note + 12, &flags, 2);
	for (int n = 0; n < 32; n++)
		memset(note + ZOFF + n * VL, n + 1, VL);	/* Zn: bytes n+1 */
	memcpy(note + FPSR, &fpsr, 4);
	memcpy(note + FPSR + 4, &fpcr, 4);
	cr_assert_eq(a->fpregs_from_alt(note, sizeof note, out, sizeof out), 528);
	for (int n = 0; n < 32; n++)
		for (int b = 0; b < 16; b++)
			cr_assert_eq(out[16 * n + b], n + 1, "V%d byte %d", n, b);
	cr_assert_eq(memcmp(out + 512, &fpsr, 4), 0);
	cr_assert_eq(memcmp(out + 516, &fpcr, 4), 0);
	/* FPSIMD form: the user_fpsimd_state after the header, as it is */
	unsigned char fp[16 + 528];
	size = sizeof fp;
	flags = 0;
	memcpy(fp, &size, 4);
	memcpy(fp + 12, &flags, 2);
	for (size_t i = 16; i < sizeof fp; i++)
		fp[i] = (unsigned char)i;
	cr_assert_eq(a->fpregs_from_alt(fp, sizeof fp, out, sizeof out), 528);
	cr_assert_eq(memcmp(out, fp + 16, 528), 0);
	/* gdb's layout: FPSR and FPCR right after FFR, the size says so */
	size = FFR_END + 8;
	flags = 1;
	memcpy(note, &size, 4);
	memcpy(note + 12, &flags, 2);
	fpsr = 0x10;
	memcpy(note + FFR_END, &fpsr, 4);
	cr_assert_eq(a->fpregs_from_alt(note, FFR_END + 8, out, sizeof out), 528);
	cr_assert_eq(memcmp(out + 512, &fpsr, 4), 0);
	cr_assert_eq(out[16 * 31], 32);
	size = SIZE;
	memcpy(note, &size, 4);
	/* cut before FPSR, or a header that claims more than the note */
	cr_assert_lt(a->fpregs_from_alt(note, FPSR, out, sizeof out), 0);
	size = SIZE + 1;
	memcpy(note, &size, 4);
	cr_assert_lt(a->fpregs_from_alt(note, sizeof note, out, sizeof out), 0);
}
