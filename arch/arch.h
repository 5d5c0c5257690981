/*
 * arch: per-architecture facts tinspect depends on.  The general register
 * set is handled as an array of 64-bit words exactly as the kernel's
 * NT_PRSTATUS regset lays it out (== prgregset_t for libthread_db), and every
 * accessor takes the architecture descriptor explicitly, so that the aarch64
 * decoding is compiled and unit-tested on an x86_64 host (docs/GLIBC.md §4).
 *
 * Nothing here touches a process: these are pure functions over copies.
 */
#ifndef TINSPECT_ARCH_H
#define TINSPECT_ARCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum arch_id {
	ARCH_X86_64,
	ARCH_AARCH64,
};

/* Largest NT_PRSTATUS payload of any supported arch, in 64-bit words. */
#define ARCH_MAX_GREGS 34

struct arch_desc {
	enum arch_id id;
	const char *name;		/* "x86_64", "aarch64" */
	unsigned elf_machine;		/* EM_X86_64, EM_AARCH64 */
	unsigned ngregs;		/* NT_PRSTATUS payload, in words */
	unsigned pc_idx, sp_idx;	/* word index of pc and sp */
	long nr_futex;			/* futex(2) */
	long nr_restart_syscall;	/* restart_syscall(2) */
	/* x86_64 keeps the thread pointer in the general regs (fs_base);
	 * aarch64 has it in a separate regset (NT_ARM_TLS).  -1 if none. */
	int tp_greg_idx;
	/* Bytes of the thread control block that lie above struct pthread,
	 * at the thread pointer: aarch64's tcbhead_t (the DTV pointer and a
	 * private word, TLS variant I, docs/ARCH.md §1); 0 on x86_64, whose
	 * TCB is the start of struct pthread. */
	unsigned tcb_above_pthread;
};

/* The syscall a stopped thread is in, decoded from its registers. */
struct arch_syscall {
	long nr;			/* -1: not in a syscall */
	uint64_t args[6];
	/* The syscall was interrupted by the stop and will be restarted by
	 * the kernel (return register holds -ERESTART*): the thread was
	 * blocked in it, not returning from it. */
	bool restarting;
	int64_t retval;			/* return register as it is now */
};

const struct arch_desc *arch_host(void);
const struct arch_desc *arch_by_id(enum arch_id id);
/* NULL for an ELF machine tinspect does not know. */
const struct arch_desc *arch_by_elf_machine(unsigned e_machine);

uint64_t arch_pc(const struct arch_desc *a, const uint64_t *gregs);
uint64_t arch_sp(const struct arch_desc *a, const uint64_t *gregs);

/*
 * Decode the syscall state of a thread at a ptrace stop.  On x86_64 the
 * registers say everything (orig_rax, rdi.., rax).  On aarch64 the syscall
 * number is not in the general registers at a signal stop: pass the number
 * read from /proc/TID/syscall before attaching as nr_hint (-1 if unknown),
 * docs/GLIBC.md §6.
 */
void arch_decode_syscall(const struct arch_desc *a, const uint64_t *gregs,
			 long nr_hint, struct arch_syscall *ret);

/*
 * A core has no /proc to read before a stop.  On aarch64 a thread whose
 * system call a signal (or the dump) interrupted has had its pc moved back
 * onto the svc instruction (to make the call again when it resumes), x0
 * given back its first argument, and the kernel's own record of the call
 * cleared: so insn, the 4 bytes at its pc (little-endian), being svc #0
 * says that it is in the system call x8 names.  Returns that number as a
 * hint for arch_decode_syscall(), or -1 (any other instruction; x86_64,
 * whose orig_rax says it).
 */
long arch_syscall_at_insn(const struct arch_desc *a, const uint64_t *gregs,
			  uint32_t insn);

/* Name of syscall nr on this arch, NULL if unknown. */
const char *arch_syscall_name(const struct arch_desc *a, long nr);

/*
 * What ps_get_thread_area must return for libthread_db, from the thread
 * pointer tp of the thread: x86_64 returns fs_base whatever idx is;
 * aarch64 returns tp - idx (libthread_db passes sizeof(struct pthread)).
 */
uint64_t arch_thread_area(const struct arch_desc *a, uint64_t tp, int idx);
/* Its inverse: the thread pointer of the thread whose struct pthread is
 * at area (idx as above). */
uint64_t arch_tp_of_area(const struct arch_desc *a, uint64_t area, int idx);

/*
 * DWARF register numbering, for the unwinder: fill dwarf_regs[0..n) with
 * the values of DWARF registers 0..n-1 taken from gregs and return n (the
 * number of leading DWARF registers the arch maps to general registers).
 */
unsigned arch_gregs_to_dwarf(const struct arch_desc *a, const uint64_t *gregs,
			     uint64_t *dwarf_regs, unsigned max);

/*
 * What /proc/TID/syscall tells of a thread blocked in the kernel, without
 * stopping it (a nonblocking capture): its pc and sp, and when nr >= 0
 * the syscall's number and arguments, written where a ptrace stop would
 * show them (so that arch_decode_syscall() reads them back); every other
 * register 0.  The unwinder must then be given pc and sp only
 * (arch_dwarf_sp()).
 */
void arch_gregs_from_syscall(const struct arch_desc *a, long nr,
			     const uint64_t args[6], uint64_t sp, uint64_t pc,
			     uint64_t *gregs);
/* The DWARF number of the stack pointer. */
unsigned arch_dwarf_sp(const struct arch_desc *a);

/*
 * Pointer authentication (aarch64): the bits of a code address that hold
 * its PAC, for a process whose highest mapped address is below top (the
 * end of its highest mapping).  Linux enables top-byte-ignore for user
 * addresses, so the PAC field is bits 54 down to the virtual address
 * size, for instructions and data alike (what PTRACE_GETREGSET
 * NT_ARM_PAC_MASK reports; docs/ARCH.md); the size is taken as the bits
 * the highest mapping needs.  0 on x86_64.  A signed address is
 * stripped with addr & ~mask.
 */
uint64_t arch_pac_mask(const struct arch_desc *a, uint64_t top);

/*
 * Where a signal handler's frame keeps the interrupted registers: the
 * kernel's rt_sigframe (siginfo, then the ucontext whose uc_mcontext
 * holds them) starts at the sp the handler returns to its trampoline
 * with.  Returns the offset from that sp of a block of *ret_n words laid
 * out as gregs[0..n), or 0 when the arch has no such rule (x86_64: glibc's
 * trampoline __restore_rt carries CFI for every register).
 */
unsigned arch_sigframe_gregs(const struct arch_desc *a, unsigned *ret_n);

/* Names of the general registers, for text and JSON output. */
const char *arch_greg_name(const struct arch_desc *a, unsigned idx);

#endif
