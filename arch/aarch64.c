/*
 * aarch64.c: the aarch64 descriptor.  The general registers are struct
 * user_pt_regs (x0-x30, sp, pc, pstate), the DWARF numbers AAPCS64's
 * (x0-x30 are 0-30, sp 31, no pc column), the thread pointer TPIDR_EL0
 * in a regset of its own with struct pthread below it (TLS variant I);
 * docs/ARCH.md says where each fact comes from.
 */
#include "arch_int.h"

#include <elf.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "syscalls-aarch64.h"

/* struct user_pt_regs: x0..x30, sp, pc, pstate. */
enum { A64_X0 = 0, A64_X8 = 8, A64_X19 = 19, A64_X29 = 29, A64_X30 = 30,
       A64_SP = 31, A64_PC = 32, A64_PSTATE = 33, A64_NREGS = 34 };

_Static_assert(A64_NREGS <= ARCH_MAX_GREGS, "ARCH_MAX_GREGS too small");

static const char *const greg_names[A64_NREGS] = {
	"x0", "x1", "x2", "x3", "x4", "x5", "x6", "x7", "x8", "x9",
	"x10", "x11", "x12", "x13", "x14", "x15", "x16", "x17", "x18",
	"x19", "x20", "x21", "x22", "x23", "x24", "x25", "x26", "x27",
	"x28", "x29", "x30", "sp", "pc", "pstate",
};

/* AAPCS64: x19-x29 */
static const unsigned char callee_saved[] = {
	19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29,
};

/* DWARF x0..x30 are 0..30, sp is 31: the user_pt_regs order */
static const unsigned char dwarf_gregs[32] = {
	0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15,
	16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, A64_SP,
};

/* x8 keeps the number and the kernel restores x0 to orig_x0 before the
 * stop of a syscall it will restart; but x8 alone does not prove the
 * thread is in a syscall: only trust it when /proc (or the core) said so
 * before the stop (docs/ARCH.md §2). */
static void decode_syscall(const struct arch_desc *a, const uint64_t *gregs,
			   long nr_hint, struct arch_syscall *ret)
{
	if (nr_hint < 0 || (int64_t)gregs[a->syscall_nr_idx] != nr_hint)
		return;
	ret->nr = nr_hint;
	for (int i = 0; i < 6; i++)
		ret->args[i] = gregs[a->syscall_arg_idx[i]];
	ret->retval = (int64_t)gregs[a->syscall_ret_idx];
	ret->restarting = true;
}

static void gregs_from_syscall(const struct arch_desc *a, long nr,
			       const uint64_t args[6], uint64_t *gregs)
{
	if (nr < 0)
		return;
	gregs[a->syscall_nr_idx] = (uint64_t)nr;
	for (int i = 0; i < 6; i++)
		gregs[a->syscall_arg_idx[i]] = args[i];
}

/*
 * NT_ARM_SVE (arch/arm64/include/uapi/asm/ptrace.h): struct
 * user_sve_header { u32 size, max_size; u16 vl, max_vl, flags, reserved }
 * (16 bytes), then either a struct user_fpsimd_state (flags bit 0 clear)
 * or the SVE registers for vector length vl: Z0-Z31 of vl bytes each, P0-
 * P15 and FFR of vl / 8, then FPSR and FPCR: at the next 16-byte boundary
 * in the kernel's layout, right after FFR in gdb's (13.1's gcore: its
 * regcache map packs them, and its size field says so).
 * V0-V31 are the low 16 bytes of Z0-Z31 (stored little-endian, as STR
 * does).  Into NT_FPREGSET's struct user_fpsimd_state: vregs[32] (16
 * bytes each), fpsr, fpcr, 8 bytes of padding: 528 bytes.
 */
#define SVE_HEADER 16
#define FPSIMD_SIZE 528

static int fpregs_from_sve(const void *note, size_t len, void *out, size_t outlen)
{
	const unsigned char *p = note;
	unsigned char *o = out;
	uint32_t size;
	uint16_t vl, flags;
	if (len < SVE_HEADER || outlen < FPSIMD_SIZE)
		return -ENODATA;
	memcpy(&size, p, 4);
	memcpy(&vl, p + 8, 2);
	memcpy(&flags, p + 12, 2);
	if (size > len)
		return -ENODATA;
	if (!(flags & 1)) {	/* SVE_PT_REGS_FPSIMD */
		if (size < SVE_HEADER + FPSIMD_SIZE)
			return -ENODATA;
		memcpy(o, p + SVE_HEADER, FPSIMD_SIZE);
		return FPSIMD_SIZE;
	}
	if (vl == 0 || vl % 16)
		return -ENODATA;
	size_t ffr_end = SVE_HEADER + 32 * (size_t)vl + 17 * (size_t)(vl / 8);
	size_t fpsr = size == ffr_end + 8 ? ffr_end : (ffr_end + 15) / 16 * 16;
	if (fpsr + 8 > size)
		return -ENODATA;
	memset(o, 0, FPSIMD_SIZE);
	for (size_t n = 0; n < 32; n++)
		memcpy(o + 16 * n, p + SVE_HEADER + n * vl, 16);
	memcpy(o + 512, p + fpsr, 8);	/* fpsr, fpcr */
	return FPSIMD_SIZE;
}

const struct arch_desc arch_desc_aarch64 = {
	.id = ARCH_AARCH64,
	.name = "aarch64",
	.elf_machine = EM_AARCH64,

	.ngregs = A64_NREGS,
	.pc_idx = A64_PC,
	.sp_idx = A64_SP,
	.fp_idx = A64_X29,
	.greg_names = greg_names,
	.callee_saved = callee_saved,
	.ncallee_saved = ARCH_NELEMS(callee_saved),

	.nr_futex = 98,
	.nr_restart_syscall = 128,
	.syscall_names = syscalls_aarch64,
	.nsyscalls = ARCH_NELEMS(syscalls_aarch64),
	.syscall_nr_idx = A64_X8,
	.syscall_ret_idx = A64_X0,
	.syscall_arg_idx = { A64_X0, A64_X0 + 1, A64_X0 + 2, A64_X0 + 3,
			     A64_X0 + 4, A64_X0 + 5 },
	.syscall_needs_hint = true,
	.syscall_insn = 0xd4000001u,	/* svc #0 */
	.syscall_note = NT_ARM_SYSTEM_CALL,
	.decode_syscall = decode_syscall,
	.gregs_from_syscall = gregs_from_syscall,

	.tp_greg_idx = -1,
	.tp_regset = NT_ARM_TLS,
	.tls_dtv_at_tp = true,
	.tcb_above_pthread = 16,
	.tdb_const_thread_area = -1,	/* sizeof(struct pthread) */

	.dwarf_gregs = dwarf_gregs,
	.ndwarf_gregs = ARCH_NELEMS(dwarf_gregs),
	.dwarf_sp = 31,
	.dwarf_pc = -1,
	.dwarf_lr = A64_X30,
	.frame_records = true,
	.pac = true,
	.sigreturn_sym = "__kernel_rt_sigreturn",
	/* arch/arm64/include/uapi/asm/{ucontext,sigcontext}.h: struct
	 * rt_sigframe { siginfo_t info (128); struct ucontext uc; }, whose
	 * uc_mcontext (16-aligned, after uc_flags, uc_link, uc_stack,
	 * uc_sigmask and 1024 bits of sigset padding) is at 176; struct
	 * sigcontext { fault_address; regs[31]; sp; pc; pstate; }: the
	 * user_pt_regs order */
	.sigframe_gregs_off = 128 + 176 + 8,

	/* no red zone, but libdwfl's frame-pointer fallback reads below sp
	 * as on x86_64 */
	.stack_below_sp = 128,
	.min_page_size = 4096,
	.stack_align = 16,
	.user_end = 1ull << 52,
	.fp_alt_note = NT_ARM_SVE,
	.fpregs_from_alt = fpregs_from_sve,
};
