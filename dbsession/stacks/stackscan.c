/*
 * stackscan.c: going on past code that has no unwind tables by scanning
 * the copied stack for a return address (where arch/ recognises a call
 * instruction: x86_64).
 *
 * musl is built with -fno-unwind-tables -fno-asynchronous-unwind-tables
 * (docs/MUSL.md §4): without its separate debug information no CFI
 * describes a frame of its C functions, and elfutils' fallback (the frame
 * pointer chain) is wrong there, since musl keeps no frame pointer: a
 * thread blocked in libc ended its stack at the first libc frame.  Here,
 * from the stack pointer of the last frame the unwinder trusts, the
 * words of the stop's copy are read upward for the first one that
 *
 *   - is an address in a module's code that CFI covers (its call, at
 *     the address less 1), so that CFI unwinding can go on from it;
 *   - follows a call instruction in the module's file (never target
 *     memory), as the architecture tells (arch_desc.call_before; on
 *     x86_64 e8 rel32 whose target is code of a module, or one of the
 *     forms of ff /2: an indirect call through a register or memory,
 *     with an optional REX prefix).
 *
 * A word that passes is taken for a return address, its slot + 8 for
 * the sp of the frame it returns to.  It can still be a stale one left
 * in a frame's uninitialised slot, which is why every frame found this
 * way is marked as such in the report (JSON "how": "scan") and a stack
 * that has one never ends "complete".
 */
#include "dbs_int.h"

#include <gelf.h>
#include <libelf.h>
#include <string.h>

/* How far one scan reads: the frames of libc between the last trusted
 * frame and its caller with CFI are a few hundred bytes (a futex wait in
 * musl: __timedwait_cp, __syscall_cp); a stack frame of 64 KiB is not
 * one anything here needs to cross. */
#define SCAN_MAX_BYTES (64u * 1024)

/* The n bytes of the module's file that are mapped at addr - n (what
 * was loaded from the file: the code that ran), or false. */
static bool code_before(Dwfl *dwfl, uint64_t addr, unsigned char *buf, size_t n)
{
	Dwfl_Module *m = dwfl_addrmodule(dwfl, addr - 1);
	Dwarf_Addr bias;
	Elf *e = m ? dwfl_module_getelf(m, &bias) : NULL;
	if (!e || addr < bias + n)
		return false;
	uint64_t a = addr - bias - n;
	size_t fsize, np;
	const char *raw = elf_rawfile(e, &fsize);
	if (!raw || elf_getphdrnum(e, &np))
		return false;
	for (size_t i = 0; i < np; i++) {
		GElf_Phdr ph;
		if (!gelf_getphdr(e, (int)i, &ph) || ph.p_type != PT_LOAD ||
		    !(ph.p_flags & PF_X))
			continue;
		if (a < ph.p_vaddr || a + n > ph.p_vaddr + ph.p_filesz)
			continue;
		uint64_t off = ph.p_offset + (a - ph.p_vaddr);
		if (off + n > fsize || off + n < off)
			return false;
		memcpy(buf, raw + off, n);
		return true;
	}
	return false;
}

/* for the architecture's call_before: a direct call's target is code
 * when it lies in a module */
static bool in_module(void *ctx, uint64_t addr)
{
	return dwfl_addrmodule(ctx, addr) != NULL;
}

bool dbs_stackscan_follows_call(Dwfl *dwfl, const struct arch_desc *arch,
				uint64_t ret)
{
	unsigned char code[16];
	if (!arch->call_before || arch->call_window > sizeof code ||
	    !code_before(dwfl, ret, code, arch->call_window))
		return false;
	return arch->call_before(code, arch->call_window, ret, in_module, dwfl);
}

bool dbs_stackscan_find(Dwfl *dwfl, struct psvc_target *t, uint64_t from,
			uint64_t to, uint64_t *ret_pc, uint64_t *ret_sp)
{
	from = (from + 7) & ~(uint64_t)7;
	if (to > from + SCAN_MAX_BYTES)
		to = from + SCAN_MAX_BYTES;
	uint64_t buf[512];
	for (uint64_t a = from; a + 8 <= to;) {
		size_t n = (size_t)((to - a) / 8);
		if (n > sizeof buf / sizeof buf[0])
			n = sizeof buf / sizeof buf[0];
		if (psvc_read_frozen(t, a, buf, n * 8))
			return false;
		for (size_t i = 0; i < n; i++, a += 8) {
			uint64_t v = buf[i];
			if (v < 4096 || !psvc_module_for_addr(t, v))
				continue;
			if (!dbs_cfi_covers(dwfl, v - 1) ||
			    !dbs_stackscan_follows_call(dwfl, psvc_arch(t), v))
				continue;
			*ret_pc = v;
			*ret_sp = a + 8;
			return true;
		}
	}
	return false;
}

/* Is pc in the function that starts at fn (the symbol that covers it)? */
static bool in_function(Dwfl *dwfl, uint64_t pc, uint64_t fn)
{
	Dwfl_Module *m = dwfl_addrmodule(dwfl, pc);
	GElf_Off off;
	GElf_Sym sym;
	if (!m || !dwfl_module_addrinfo(m, pc, &off, &sym, NULL, NULL, NULL))
		return false;
	return pc - off == fn;
}

/*
 * The frame of the part to go on from: the first whose code has no CFI
 * (the frames after it are elfutils' frame pointer fallback's, wrong in
 * code that keeps no frame pointer), or the last if the part stopped
 * short of the outermost frame.  Only pc and sp are known at the frame
 * found above it; the callee-saved registers are the thread's own (code
 * without frame pointers leaves that register, rbp, to its caller), the
 * frame pointer only where it points into the stack above that frame,
 * else 0, so that a CFA computed from it fails instead of leading into
 * garbage.  Only where
 * the architecture recognises call instructions (arch_desc.call_before:
 * x86_64); aarch64 steps through frame records (framerec.c).
 */
bool dbs_stackscan_resume(Dwfl *dwfl, struct psvc_target *t,
			  const struct dbs_thread *th, struct dbs_scan *sc,
			  const uint64_t *pcs, const uint64_t *sps, const bool *act,
			  unsigned *n, bool ended, uint64_t *gregs)
{
	const struct arch_desc *arch = psvc_arch(t);
	if (!arch->call_before || th->observed || *n <= sc->part_base)
		return false;
	unsigned i;
	for (i = sc->part_base; i < *n; i++) {
		uint64_t pc = act[i] ? pcs[i] : pcs[i] - 1;
		/* above the thread's start routine are only its C library's
		 * start and clone: the walk ends there (docs/MUSL.md §4) */
		if (th->start.addr && in_function(dwfl, pc, th->start.addr)) {
			if (sc->scans)
				*n = i + 1;
			return false;
		}
		if (psvc_module_for_addr(t, pc) && !dbs_cfi_covers(dwfl, pc))
			break;
	}
	if (i == *n) {
		if (ended)
			return false;
		i = *n - 1;
	}
	uint64_t pc, sp;
	if (!sps[i] ||
	    !dbs_stackscan_find(dwfl, t, sps[i], th->stack.copied_to, &pc, &sp))
		return false;
	*n = i + 1;
	sc->scans++;
	sc->part_base = *n;
	sc->next = true;
	memcpy(gregs, th->gregs, sizeof th->gregs);
	uint64_t *fp = &gregs[arch->fp_idx];
	if (*fp < sp || *fp >= th->stack.copied_to)
		*fp = 0;
	gregs[arch->sp_idx] = sp;
	gregs[arch->pc_idx] = pc - 1;
	return true;
}
