/*
 * arch.c: register layouts, syscall decoding and thread-pointer rules for
 * x86_64 and aarch64.  Both are always compiled, whatever the host, so the
 * aarch64 half is unit-tested on x86_64 with recorded register blobs.
 */
#include "arch.h"

#include <elf.h>

#include "syscalls-aarch64.h"
#include "syscalls-x86_64.h"

/* x86_64 struct user_regs_struct word indices (asm/user.h). */
enum {
	X86_R15, X86_R14, X86_R13, X86_R12, X86_RBP, X86_RBX, X86_R11, X86_R10,
	X86_R9, X86_R8, X86_RAX, X86_RCX, X86_RDX, X86_RSI, X86_RDI,
	X86_ORIG_RAX, X86_RIP, X86_CS, X86_EFLAGS, X86_RSP, X86_SS,
	X86_FS_BASE, X86_GS_BASE, X86_DS, X86_ES, X86_FS, X86_GS, X86_NREGS
};

/* aarch64 struct user_pt_regs: x0..x30, sp, pc, pstate. */
enum { A64_X0 = 0, A64_X8 = 8, A64_SP = 31, A64_PC = 32, A64_PSTATE = 33,
       A64_NREGS = 34 };

static const struct arch_desc arch_x86_64 = {
	.id = ARCH_X86_64,
	.name = "x86_64",
	.elf_machine = EM_X86_64,
	.ngregs = X86_NREGS,
	.pc_idx = X86_RIP,
	.sp_idx = X86_RSP,
	.nr_futex = 202,
	.nr_restart_syscall = 219,
	.tp_greg_idx = X86_FS_BASE,
};

static const struct arch_desc arch_aarch64 = {
	.id = ARCH_AARCH64,
	.name = "aarch64",
	.elf_machine = EM_AARCH64,
	.ngregs = A64_NREGS,
	.pc_idx = A64_PC,
	.sp_idx = A64_SP,
	.nr_futex = 98,
	.nr_restart_syscall = 128,
	.tp_greg_idx = -1,
	.tcb_above_pthread = 16,
};

_Static_assert(X86_NREGS <= ARCH_MAX_GREGS && A64_NREGS <= ARCH_MAX_GREGS,
	       "ARCH_MAX_GREGS too small");

const struct arch_desc *arch_host(void)
{
#if defined(__x86_64__)
	return &arch_x86_64;
#elif defined(__aarch64__)
	return &arch_aarch64;
#else
#error "tinspect supports x86_64 and aarch64 hosts"
#endif
}

const struct arch_desc *arch_by_id(enum arch_id id)
{
	switch (id) {
	case ARCH_X86_64:
		return &arch_x86_64;
	case ARCH_AARCH64:
		return &arch_aarch64;
	}
	return NULL;
}

const struct arch_desc *arch_by_elf_machine(unsigned e_machine)
{
	if (e_machine == EM_X86_64)
		return &arch_x86_64;
	if (e_machine == EM_AARCH64)
		return &arch_aarch64;
	return NULL;
}

uint64_t arch_pc(const struct arch_desc *a, const uint64_t *gregs)
{
	return gregs[a->pc_idx];
}

uint64_t arch_sp(const struct arch_desc *a, const uint64_t *gregs)
{
	return gregs[a->sp_idx];
}

/* The -ERESTART* codes a syscall interrupted by a stop leaves behind
 * (include/linux/errno.h): ERESTARTSYS, ERESTARTNOINTR, ERESTARTNOHAND,
 * ERESTART_RESTARTBLOCK. */
static bool is_restart_code(int64_t v)
{
	return v == -512 || v == -513 || v == -514 || v == -516;
}

void arch_decode_syscall(const struct arch_desc *a, const uint64_t *gregs,
			 long nr_hint, struct arch_syscall *ret)
{
	*ret = (struct arch_syscall){ .nr = -1 };
	switch (a->id) {
	case ARCH_X86_64: {
		static const unsigned argi[6] = { X86_RDI, X86_RSI, X86_RDX,
						  X86_R10, X86_R8, X86_R9 };
		int64_t orig = (int64_t)gregs[X86_ORIG_RAX];
		if (orig < 0)
			return;
		ret->nr = orig;
		for (int i = 0; i < 6; i++)
			ret->args[i] = gregs[argi[i]];
		ret->retval = (int64_t)gregs[X86_RAX];
		ret->restarting = is_restart_code(ret->retval);
		return;
	}
	case ARCH_AARCH64:
		/* x8 keeps the number and the kernel restores x0 to orig_x0
		 * before the stop of a syscall it will restart; but x8 alone
		 * does not prove the thread is in a syscall: only trust it
		 * when /proc said so before the stop. */
		if (nr_hint < 0 || (int64_t)gregs[A64_X8] != nr_hint)
			return;
		ret->nr = nr_hint;
		for (int i = 0; i < 6; i++)
			ret->args[i] = gregs[A64_X0 + i];
		ret->retval = (int64_t)gregs[A64_X0];
		ret->restarting = true;
		return;
	}
}

long arch_syscall_at_insn(const struct arch_desc *a, const uint64_t *gregs,
			  uint32_t insn)
{
	if (a->id != ARCH_AARCH64 || insn != 0xd4000001u)	/* svc #0 */
		return -1;
	int64_t nr = (int64_t)gregs[A64_X8];
	return nr >= 0 && nr < 0x10000 ? (long)nr : -1;
}

const char *arch_syscall_name(const struct arch_desc *a, long nr)
{
	if (nr < 0)
		return NULL;
	switch (a->id) {
	case ARCH_X86_64:
		if ((unsigned long)nr < sizeof syscalls_x86_64 / sizeof *syscalls_x86_64)
			return syscalls_x86_64[nr];
		break;
	case ARCH_AARCH64:
		if ((unsigned long)nr < sizeof syscalls_aarch64 / sizeof *syscalls_aarch64)
			return syscalls_aarch64[nr];
		break;
	}
	return NULL;
}

uint64_t arch_thread_area(const struct arch_desc *a, uint64_t tp, int idx)
{
	if (a->id == ARCH_AARCH64)
		return tp - (uint64_t)idx;
	return tp;
}

unsigned arch_gregs_to_dwarf(const struct arch_desc *a, const uint64_t *gregs,
			     uint64_t *dwarf_regs, unsigned max)
{
	unsigned n = 0;
	switch (a->id) {
	case ARCH_X86_64: {
		/* System V AMD64 psABI, DWARF register numbers 0..16. */
		static const unsigned map[17] = {
			X86_RAX, X86_RDX, X86_RCX, X86_RBX, X86_RSI, X86_RDI,
			X86_RBP, X86_RSP, X86_R8, X86_R9, X86_R10, X86_R11,
			X86_R12, X86_R13, X86_R14, X86_R15, X86_RIP,
		};
		for (; n < 17 && n < max; n++)
			dwarf_regs[n] = gregs[map[n]];
		break;
	}
	case ARCH_AARCH64:
		/* AAPCS64 DWARF: x0..x30 are 0..30, sp is 31. */
		for (; n < 32 && n < max; n++)
			dwarf_regs[n] = gregs[n];
		break;
	}
	return n;
}

uint64_t arch_tp_of_area(const struct arch_desc *a, uint64_t area, int idx)
{
	return a->id == ARCH_AARCH64 ? area + (uint64_t)idx : area;
}

void arch_gregs_from_syscall(const struct arch_desc *a, long nr,
			     const uint64_t args[6], uint64_t sp, uint64_t pc,
			     uint64_t *gregs)
{
	for (unsigned i = 0; i < a->ngregs; i++)
		gregs[i] = 0;
	gregs[a->sp_idx] = sp;
	gregs[a->pc_idx] = pc;
	switch (a->id) {
	case ARCH_X86_64: {
		static const unsigned argi[6] = { X86_RDI, X86_RSI, X86_RDX,
						  X86_R10, X86_R8, X86_R9 };
		/* orig_rax -1: not in a syscall; rax holds -ENOSYS from the
		 * syscall entry until the call returns */
		gregs[X86_ORIG_RAX] = nr >= 0 ? (uint64_t)nr : UINT64_MAX;
		gregs[X86_RAX] = (uint64_t)-38;
		for (int i = 0; nr >= 0 && i < 6; i++)
			gregs[argi[i]] = args[i];
		break;
	}
	case ARCH_AARCH64:
		if (nr >= 0) {
			gregs[A64_X8] = (uint64_t)nr;
			for (int i = 0; i < 6; i++)
				gregs[A64_X0 + i] = args[i];
		}
		break;
	}
}

unsigned arch_dwarf_sp(const struct arch_desc *a)
{
	return a->id == ARCH_AARCH64 ? 31 : 7;	/* the psABIs' numbering */
}

const char *arch_greg_name(const struct arch_desc *a, unsigned idx)
{
	static const char *const x86[X86_NREGS] = {
		"r15", "r14", "r13", "r12", "rbp", "rbx", "r11", "r10", "r9",
		"r8", "rax", "rcx", "rdx", "rsi", "rdi", "orig_rax", "rip",
		"cs", "eflags", "rsp", "ss", "fs_base", "gs_base", "ds", "es",
		"fs", "gs",
	};
	static const char *const a64[A64_NREGS] = {
		"x0", "x1", "x2", "x3", "x4", "x5", "x6", "x7", "x8", "x9",
		"x10", "x11", "x12", "x13", "x14", "x15", "x16", "x17", "x18",
		"x19", "x20", "x21", "x22", "x23", "x24", "x25", "x26", "x27",
		"x28", "x29", "x30", "sp", "pc", "pstate",
	};
	if (a->id == ARCH_X86_64)
		return idx < X86_NREGS ? x86[idx] : NULL;
	return idx < A64_NREGS ? a64[idx] : NULL;
}

uint64_t arch_pac_mask(const struct arch_desc *a, uint64_t top)
{
	if (a->id != ARCH_AARCH64 || top < 2)
		return 0;
	unsigned va = 64 - (unsigned)__builtin_clzll(top - 1);
	if (va < 36)
		va = 36;	/* the smallest user address space arm64 has */
	if (va > 54)
		return 0;
	/* bits 54..va */
	return ((1ull << 55) - 1) & ~((1ull << va) - 1);
}

unsigned arch_sigframe_gregs(const struct arch_desc *a, unsigned *ret_n)
{
	if (a->id != ARCH_AARCH64)
		return 0;
	/* arch/arm64/include/uapi/asm/{ucontext,sigcontext}.h: struct
	 * rt_sigframe { siginfo_t info (128); struct ucontext uc; }, whose
	 * uc_mcontext (16-aligned, after uc_flags, uc_link, uc_stack,
	 * uc_sigmask and 1024 bits of sigset padding) is at 176; struct
	 * sigcontext { fault_address; regs[31]; sp; pc; pstate; }: the
	 * user_pt_regs order */
	*ret_n = A64_NREGS;
	return 128 + 176 + 8;
}
