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

#include <elf.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The aarch64 regsets the descriptions name (tp_regset, syscall_note),
 * where an older <elf.h> does not have them. */
#ifndef NT_ARM_TLS
#define NT_ARM_TLS 0x401
#endif
#ifndef NT_ARM_SYSTEM_CALL
#define NT_ARM_SYSTEM_CALL 0x404
#endif

enum arch_id {
	ARCH_X86_64,
	ARCH_AARCH64,
	ARCH_COUNT	/* tables indexed or keyed by architecture assert it */
};

/* The architectures tinspect reads, for messages ("tinspect reads "
 * ARCH_NAMES " cores"). */
#define ARCH_NAMES "x86_64 and aarch64"

/* Largest NT_PRSTATUS payload of any supported arch, in 64-bit words. */
#define ARCH_MAX_GREGS 34

struct arch_syscall;

/*
 * Everything tinspect decides per architecture, one descriptor per
 * architecture, each filled in its own file (arch/x86_64.c,
 * arch/aarch64.c).  Code outside arch/ reads these fields or calls the
 * functions below; it never asks which architecture it has
 * (tools/check-arch.sh).  A register index ("_idx") is a word of the
 * NT_PRSTATUS payload; a DWARF number is the psABI's.
 */
struct arch_desc {
	enum arch_id id;
	const char *name;		/* "x86_64", "aarch64" */
	unsigned elf_machine;		/* EM_X86_64, EM_AARCH64 */

	/* ---- general registers */
	unsigned ngregs;		/* NT_PRSTATUS payload, in words */
	unsigned pc_idx, sp_idx;	/* word index of pc and sp */
	unsigned fp_idx;		/* of the frame pointer (rbp; x29) */
	const char *const *greg_names;	/* ngregs names, for text and JSON */
	/* The general registers the ABI has callee-saved (x86_64 psABI: rbx
	 * rbp r12-r15; AAPCS64: x19-x29), in that order: what a function
	 * that called into the kernel still holds of its callers. */
	const unsigned char *callee_saved;
	unsigned ncallee_saved;

	/* ---- system calls */
	long nr_futex;			/* futex(2) */
	long nr_restart_syscall;	/* restart_syscall(2) */
	const char *const *syscall_names;	/* indexed by number, NULL gaps;
						 * from 424 up: arch.c */
	size_t nsyscalls;
	unsigned syscall_nr_idx;	/* orig_rax; x8 */
	unsigned syscall_ret_idx;	/* rax; x0 */
	unsigned syscall_arg_idx[6];	/* the arguments' registers */
	/* The general registers at a stop do not say whether the thread is
	 * in a system call (aarch64): a hint from /proc or a core's note or
	 * the instruction at the pc must (docs/ARCH.md §2). */
	bool syscall_needs_hint;
	/* The system call instruction a stop leaves the pc on when the call
	 * will be made again (aarch64 svc #0, little-endian); 0: none. */
	uint32_t syscall_insn;
	/* The core note with the kernel's own syscall number (aarch64
	 * NT_ARM_SYSTEM_CALL, an int); 0: none. */
	unsigned syscall_note;
	void (*decode_syscall)(const struct arch_desc *a, const uint64_t *gregs,
			       long nr_hint, struct arch_syscall *ret);
	void (*gregs_from_syscall)(const struct arch_desc *a, long nr,
				   const uint64_t args[6], uint64_t *gregs);

	/* ---- the thread pointer and the C library's thread struct */
	/* x86_64 keeps the thread pointer in the general regs (fs_base);
	 * aarch64 has it in a separate regset (NT_ARM_TLS).  -1 if none. */
	int tp_greg_idx;
	/* The regset (and core note) that holds it when it is not a general
	 * register: NT_ARM_TLS, whose first word is TPIDR_EL0; 0: none. */
	unsigned tp_regset;
	/* TLS variant I (glibc's TLS_DTV_AT_TP, aarch64): the TCB is at the
	 * thread pointer and struct pthread just below it, so the thread
	 * area libthread_db asks for is tp - sizeof(struct pthread).  false
	 * (variant II, x86_64): struct pthread starts at the thread
	 * pointer. */
	bool tls_dtv_at_tp;
	/* Bytes of the thread control block that lie above struct pthread,
	 * at the thread pointer: aarch64's tcbhead_t (the DTV pointer and a
	 * private word, TLS variant I, docs/ARCH.md §1); 0 on x86_64, whose
	 * TCB is the start of struct pthread. */
	unsigned tcb_above_pthread;
	/* glibc's _thread_db_const_thread_area: the idx libthread_db passes
	 * to ps_get_thread_area (x86_64: FS, 25); -1 when it is
	 * sizeof(struct pthread) instead (aarch64, DB_THREAD_SELF). */
	int tdb_const_thread_area;

	/* ---- DWARF and the unwinder */
	/* dwarf_gregs[n] is the word index of DWARF register n, for
	 * n < ndwarf_gregs */
	const unsigned char *dwarf_gregs;
	unsigned ndwarf_gregs;
	unsigned dwarf_sp;		/* the stack pointer's DWARF number */
	/* The pc's DWARF number (x86_64 16, rip, one of dwarf_gregs); -1:
	 * DWARF has no pc column (aarch64), the unwinder is given it apart */
	int dwarf_pc;
	/* The link register's DWARF number (aarch64 x30); -1: a call pushes
	 * its return address on the stack (x86_64) */
	int dwarf_lr;
	/* Frames without CFI are stepped by their frame record (AAPCS64:
	 * x29 points at the caller's x29 and the return address;
	 * dbsession/stacks/framerec.c, docs/ARCH.md §4) */
	bool frame_records;
	/* Pointer authentication may sign code addresses (arch_pac_mask) */
	bool pac;
	/* The vDSO symbol a signal handler returns to, whose frame the
	 * unwinder reads with arch_sigframe_gregs(); NULL: the C library's
	 * trampoline carries CFI for every register (x86_64) */
	const char *sigreturn_sym;
	/* Offset, from the sp at sigreturn_sym, of the interrupted general
	 * registers in the kernel's rt_sigframe, laid out as gregs; 0: none */
	unsigned sigframe_gregs_off;

	/* Whether the call_window bytes before a return address ret end
	 * with a call instruction (the stack scan past code without CFI,
	 * dbsession/stacks/stackscan.c); is_code says whether a direct call's
	 * target is code.  NULL: the architecture has no such scan (aarch64
	 * steps through frame records). */
	bool (*call_before)(const unsigned char *code, size_t n, uint64_t ret,
			    bool (*is_code)(void *ctx, uint64_t addr), void *ctx);
	unsigned call_window;

	/* ---- the stack and memory */
	/* Bytes below sp the capture also copies (x86_64's red zone, which
	 * a leaf may use without moving sp; libdwfl's frame-pointer
	 * fallback reads there too) */
	unsigned stack_below_sp;
	/* The smallest page the kernel may use: what is read of a stack
	 * nothing more is known of */
	unsigned min_page_size;
	/* The alignment the ABI keeps sp at (16 on both psABIs): the slot
	 * a signal handler pushes to fake a call is this big */
	unsigned stack_align;
	/* Where the user address space ends: no object of a process lies
	 * at or above it (x86_64 with 4-level page tables: 2^47; aarch64:
	 * 2^52, the most its kernel gives a process, 2^48 unless the
	 * process asks for more).  What a word must be below to be read as
	 * a pointer into the process (arch_user_pointer()). */
	uint64_t user_end;

	/* ---- core notes */
	/* The extended FPU state note (NT_X86_XSTATE); 0: none */
	unsigned xstate_note;
	/* A core note that holds the floating-point registers when
	 * NT_FPREGSET is missing (aarch64: NT_ARM_SVE, which gdb writes
	 * instead on a CPU with SVE); 0: none.  fpregs_from_alt turns it
	 * into NT_FPREGSET's layout in out: the bytes written, or -ENODATA
	 * if the note is not one it can read. */
	unsigned fp_alt_note;
	int (*fpregs_from_alt)(const void *note, size_t len, void *out,
			       size_t outlen);
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

/* Whether word v may point into the process: above the first page,
 * below the end of the user address space, a multiple of align (a power
 * of two; 1: any).  With no architecture known (a == NULL), never. */
bool arch_user_pointer(const struct arch_desc *a, uint64_t v, unsigned align);

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

/* The name of an ELF machine tinspect does not read ("i386", "32-bit
 * ARM"...), for the message that refuses it; NULL if it has none. */
const char *arch_machine_name(unsigned e_machine);

/* The descriptors, each in its own file; code takes them through
 * arch_host(), arch_by_id() and arch_by_elf_machine(). */
extern const struct arch_desc arch_desc_x86_64;
extern const struct arch_desc arch_desc_aarch64;

#endif
