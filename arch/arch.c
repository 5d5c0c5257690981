/*
 * arch.c: the functions over an architecture's descriptor.  Every
 * architecture is always compiled, whatever the host, so the aarch64
 * half is unit-tested on x86_64 with recorded register blobs; what
 * differs lives in the descriptors (x86_64.c, aarch64.c), and only
 * arch_host() asks which machine this is.
 */
#include "arch_int.h"
#include "syscalls-unified.h"

#include <elf.h>

static const struct arch_desc *const arches[] = {
	&arch_desc_x86_64,
	&arch_desc_aarch64,
};

_Static_assert(ARCH_NELEMS(arches) == ARCH_COUNT,
	       "a descriptor per enum arch_id");

const struct arch_desc *arch_host(void)
{
#if defined(__x86_64__)
	return &arch_desc_x86_64;
#elif defined(__aarch64__)
	return &arch_desc_aarch64;
#else
#error "tinspect supports x86_64 and aarch64 hosts"
#endif
}

const struct arch_desc *arch_by_id(enum arch_id id)
{
	for (size_t i = 0; i < ARCH_NELEMS(arches); i++)
		if (arches[i]->id == id)
			return arches[i];
	return NULL;
}

const struct arch_desc *arch_by_elf_machine(unsigned e_machine)
{
	for (size_t i = 0; i < ARCH_NELEMS(arches); i++)
		if (arches[i]->elf_machine == e_machine)
			return arches[i];
	return NULL;
}

const char *arch_machine_name(unsigned m)
{
	switch (m) {
	case EM_386: return "i386";
	case EM_ARM: return "32-bit ARM";
	case EM_PPC: return "32-bit PowerPC";
	case EM_PPC64: return "PowerPC 64";
	case EM_S390: return "s390";
	case EM_MIPS: return "MIPS";
	case EM_RISCV: return "RISC-V";
	case EM_SPARCV9: return "SPARC v9";
	case EM_IA_64: return "IA-64";
	default: return NULL;
	}
}

uint64_t arch_pc(const struct arch_desc *a, const uint64_t *gregs)
{
	return gregs[a->pc_idx];
}

uint64_t arch_sp(const struct arch_desc *a, const uint64_t *gregs)
{
	return gregs[a->sp_idx];
}

void arch_decode_syscall(const struct arch_desc *a, const uint64_t *gregs,
			 long nr_hint, struct arch_syscall *ret)
{
	*ret = (struct arch_syscall){ .nr = -1 };
	a->decode_syscall(a, gregs, nr_hint, ret);
}

long arch_syscall_at_insn(const struct arch_desc *a, const uint64_t *gregs,
			  uint32_t insn)
{
	if (!a->syscall_insn || insn != a->syscall_insn)
		return -1;
	int64_t nr = (int64_t)gregs[a->syscall_nr_idx];
	return nr >= 0 && nr < 0x10000 ? (long)nr : -1;
}

/* The system calls added since Linux 5.1 have one number on every
 * architecture (syscalls-unified.h); below it, the architecture's own. */
const char *arch_syscall_name(const struct arch_desc *a, long nr)
{
	if (nr >= ARCH_SYSCALLS_UNIFIED) {
		unsigned long k = (unsigned long)nr - ARCH_SYSCALLS_UNIFIED;
		return k < ARCH_NELEMS(syscalls_unified) ? syscalls_unified[k]
							 : NULL;
	}
	if (nr < 0 || (unsigned long)nr >= a->nsyscalls)
		return NULL;
	return a->syscall_names[nr];
}

uint64_t arch_thread_area(const struct arch_desc *a, uint64_t tp, int idx)
{
	return a->tls_dtv_at_tp ? tp - (uint64_t)idx : tp;
}

uint64_t arch_tp_of_area(const struct arch_desc *a, uint64_t area, int idx)
{
	return a->tls_dtv_at_tp ? area + (uint64_t)idx : area;
}

unsigned arch_gregs_to_dwarf(const struct arch_desc *a, const uint64_t *gregs,
			     uint64_t *dwarf_regs, unsigned max)
{
	unsigned n = 0;
	for (; n < a->ndwarf_gregs && n < max; n++)
		dwarf_regs[n] = gregs[a->dwarf_gregs[n]];
	return n;
}

void arch_gregs_from_syscall(const struct arch_desc *a, long nr,
			     const uint64_t args[6], uint64_t sp, uint64_t pc,
			     uint64_t *gregs)
{
	for (unsigned i = 0; i < a->ngregs; i++)
		gregs[i] = 0;
	gregs[a->sp_idx] = sp;
	gregs[a->pc_idx] = pc;
	a->gregs_from_syscall(a, nr, args, gregs);
}

unsigned arch_dwarf_sp(const struct arch_desc *a)
{
	return a->dwarf_sp;
}

const char *arch_greg_name(const struct arch_desc *a, unsigned idx)
{
	return idx < a->ngregs ? a->greg_names[idx] : NULL;
}

uint64_t arch_pac_mask(const struct arch_desc *a, uint64_t top)
{
	if (!a->pac || top < 2)
		return 0;
	unsigned va = 64 - (unsigned)__builtin_clzll(top - 1);
	if (va < 36)
		va = 36;	/* the smallest user address space arm64 has */
	if (va > 54)
		return 0;
	/* bits 54..va */
	return ((1ull << 55) - 1) & ~((1ull << va) - 1);
}

bool arch_user_pointer(const struct arch_desc *a, uint64_t v, unsigned align)
{
	return a && v >= 4096 && v < a->user_end && !(v & (uint64_t)(align - 1));
}

unsigned arch_sigframe_gregs(const struct arch_desc *a, unsigned *ret_n)
{
	if (!a->sigframe_gregs_off)
		return 0;
	*ret_n = a->ngregs;
	return a->sigframe_gregs_off;
}
