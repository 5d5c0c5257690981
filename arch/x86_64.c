/*
 * x86_64.c: the x86_64 descriptor.  The general registers are struct
 * user_regs_struct (asm/user.h), the DWARF numbers the System V AMD64
 * psABI's, the thread pointer fs_base with struct pthread at it (TLS
 * variant II).
 */
#include "arch_int.h"

#include <elf.h>
#include <string.h>

#include "syscalls-x86_64.h"

#ifndef NT_X86_XSTATE
#define NT_X86_XSTATE 0x202
#endif

/* struct user_regs_struct word indices (asm/user.h). */
enum {
	X86_R15, X86_R14, X86_R13, X86_R12, X86_RBP, X86_RBX, X86_R11, X86_R10,
	X86_R9, X86_R8, X86_RAX, X86_RCX, X86_RDX, X86_RSI, X86_RDI,
	X86_ORIG_RAX, X86_RIP, X86_CS, X86_EFLAGS, X86_RSP, X86_SS,
	X86_FS_BASE, X86_GS_BASE, X86_DS, X86_ES, X86_FS, X86_GS, X86_NREGS
};

_Static_assert(X86_NREGS <= ARCH_MAX_GREGS, "ARCH_MAX_GREGS too small");

static const char *const greg_names[X86_NREGS] = {
	"r15", "r14", "r13", "r12", "rbp", "rbx", "r11", "r10", "r9",
	"r8", "rax", "rcx", "rdx", "rsi", "rdi", "orig_rax", "rip",
	"cs", "eflags", "rsp", "ss", "fs_base", "gs_base", "ds", "es",
	"fs", "gs",
};

/* psABI: rbx rbp r12-r15 */
static const unsigned char callee_saved[] = {
	X86_RBX, X86_RBP, X86_R12, X86_R13, X86_R14, X86_R15,
};

/* psABI DWARF register numbers 0..16 */
static const unsigned char dwarf_gregs[17] = {
	X86_RAX, X86_RDX, X86_RCX, X86_RBX, X86_RSI, X86_RDI,
	X86_RBP, X86_RSP, X86_R8, X86_R9, X86_R10, X86_R11,
	X86_R12, X86_R13, X86_R14, X86_R15, X86_RIP,
};

/* The registers say everything: orig_rax is the call (-1: none), the
 * arguments are in rdi.., rax the return value or -ERESTART*. */
static void decode_syscall(const struct arch_desc *a, const uint64_t *gregs,
			   long nr_hint, struct arch_syscall *ret)
{
	(void)nr_hint;
	int64_t orig = (int64_t)gregs[a->syscall_nr_idx];
	if (orig < 0)
		return;
	ret->nr = orig;
	for (int i = 0; i < 6; i++)
		ret->args[i] = gregs[a->syscall_arg_idx[i]];
	ret->retval = (int64_t)gregs[a->syscall_ret_idx];
	ret->restarting = arch_is_restart_code(ret->retval);
}

static void gregs_from_syscall(const struct arch_desc *a, long nr,
			       const uint64_t args[6], uint64_t *gregs)
{
	/* orig_rax -1: not in a syscall; rax holds -ENOSYS from the
	 * syscall entry until the call returns */
	gregs[a->syscall_nr_idx] = nr >= 0 ? (uint64_t)nr : UINT64_MAX;
	gregs[a->syscall_ret_idx] = (uint64_t)-38;
	for (int i = 0; nr >= 0 && i < 6; i++)
		gregs[a->syscall_arg_idx[i]] = args[i];
}

/* Is code[len - k .. len) a "call r/m64" (ff /2), exactly k bytes with
 * an optional REX prefix?  The length follows from ModRM (and SIB): mod
 * 3 a register, mod 0 with rm 5 rip + disp32, SIB base 5 with mod 0 a
 * disp32, mod 1 a disp8, mod 2 a disp32. */
static bool indirect_call_ends(const unsigned char *code, size_t len, size_t k)
{
	const unsigned char *p = code + len - k;
	size_t at = 0;
	if ((p[0] & 0xf0) == 0x40)
		at = 1;		/* REX */
	if (at + 2 > k || p[at] != 0xff)
		return false;
	unsigned modrm = p[at + 1], mod = modrm >> 6, reg = (modrm >> 3) & 7,
		 rm = modrm & 7;
	if (reg != 2)
		return false;
	size_t need = at + 2;
	if (mod == 3)
		return need == k;
	if (rm == 4) {
		if (need + 1 > k)
			return false;
		unsigned base = p[need] & 7;
		need += 1;
		if (mod == 0 && base == 5)
			need += 4;
	} else if (mod == 0 && rm == 5) {
		need += 4;
	}
	if (mod == 1)
		need += 1;
	else if (mod == 2)
		need += 4;
	return need == k;
}

/* The 8 bytes before a return address end with a call: e8 rel32 whose
 * target is code, or one of the forms of ff /2. */
static bool call_before(const unsigned char *code, size_t n, uint64_t ret,
			bool (*is_code)(void *ctx, uint64_t addr), void *ctx)
{
	if (n < 8)
		return false;
	if (code[n - 5] == 0xe8) {
		int32_t rel;
		memcpy(&rel, code + n - 4, 4);
		if (is_code(ctx, ret + (uint64_t)(int64_t)rel))
			return true;
	}
	for (size_t k = 2; k <= 8; k++)
		if (indirect_call_ends(code, n, k))
			return true;
	return false;
}

const struct arch_desc arch_desc_x86_64 = {
	.id = ARCH_X86_64,
	.name = "x86_64",
	.elf_machine = EM_X86_64,

	.ngregs = X86_NREGS,
	.pc_idx = X86_RIP,
	.sp_idx = X86_RSP,
	.fp_idx = X86_RBP,
	.greg_names = greg_names,
	.callee_saved = callee_saved,
	.ncallee_saved = ARCH_NELEMS(callee_saved),

	.nr_futex = 202,
	.nr_restart_syscall = 219,
	.syscall_names = syscalls_x86_64,
	.nsyscalls = ARCH_NELEMS(syscalls_x86_64),
	.syscall_nr_idx = X86_ORIG_RAX,
	.syscall_ret_idx = X86_RAX,
	.syscall_arg_idx = { X86_RDI, X86_RSI, X86_RDX, X86_R10, X86_R8, X86_R9 },
	.decode_syscall = decode_syscall,
	.gregs_from_syscall = gregs_from_syscall,

	.tp_greg_idx = X86_FS_BASE,
	.tdb_const_thread_area = 25,	/* FS (glibc's x86_64 nptl/tls.h) */

	.dwarf_gregs = dwarf_gregs,
	.ndwarf_gregs = ARCH_NELEMS(dwarf_gregs),
	.dwarf_sp = 7,
	.dwarf_pc = 16,
	.dwarf_lr = -1,
	.call_before = call_before,
	.call_window = 8,

	.stack_below_sp = 128,
	.min_page_size = 4096,
	.stack_align = 16,
	.user_end = 1ull << 47,

	.xstate_note = NT_X86_XSTATE,
};
