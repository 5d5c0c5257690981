/*
 * framerec.c: one step of the stack walk through an aarch64 frame that
 * has no CFI, by its frame record (docs/ARCH.md §4).
 *
 * AAPCS64 code that keeps frame pointers stores a frame record, the
 * caller's x29 and the return address, and points x29 at it.  elfutils'
 * fallback for a frame without CFI (backends/aarch64_unwind.c) does not
 * read it the way such frames are built: it takes the frame's own link
 * register for the caller's pc, so the first frame without CFI after one
 * with CFI (whose unwound x30 is that frame's own pc) comes out twice,
 * and it sets the caller's sp to x29 + 16, which holds only where the
 * record is at the top of the frame; GCC and Clang put it at the bottom,
 * so a caller with CFI computed its CFA from a wrong sp and the walk
 * ended in garbage.
 *
 * Here: the caller's pc and x29 come from the record; its sp, when it has
 * CFI, from that CFI and its own frame record (its x29 points at the
 * record, which its CFI says it saved at CFA + off29, so CFA is x29 -
 * off29 and sp the CFA less the CFA rule's offset); without CFI only a
 * bound is needed (the record chain goes on).  Pure over the copies the
 * stop took: every word comes through io->read.
 */
#include "dbs_int.h"

#include <dwarf.h>
#include <stdlib.h>
#include <string.h>

enum { X29 = 29, X30 = 30, SP = 31, PC = 32 };

/* The CFI row for addr, from .eh_frame or .debug_frame (caller frees);
 * NULL where there is none (no module: generated code). */
static Dwarf_Frame *cfi_frame(Dwfl *dwfl, uint64_t addr)
{
	Dwfl_Module *m = dwfl ? dwfl_addrmodule(dwfl, addr) : NULL;
	if (!m)
		return NULL;
	Dwarf_Addr bias;
	Dwarf_Frame *fr = NULL;
	Dwarf_CFI *c = dwfl_module_eh_cfi(m, &bias);
	if (c && dwarf_cfi_addrframe(c, addr - bias, &fr) == 0)
		return fr;
	c = dwfl_module_dwarf_cfi(m, &bias);
	if (c && dwarf_cfi_addrframe(c, addr - bias, &fr) == 0)
		return fr;
	return NULL;
}

bool dbs_cfi_covers(Dwfl *dwfl, uint64_t addr)
{
	Dwarf_Frame *fr = cfi_frame(dwfl, addr);
	free(fr);
	return fr != NULL;
}

/* Where the frame's CFI says register reg was saved: CFA + *off. */
static bool saved_at(Dwarf_Frame *fr, int reg, int64_t *off)
{
	Dwarf_Op mem[3], *ops = NULL;
	size_t n = 0;
	if (dwarf_frame_register(fr, reg, mem, &ops, &n) != 0 || !ops || n < 1 ||
	    ops[0].atom != DW_OP_call_frame_cfa)
		return false;
	if (n == 1) {
		*off = 0;
		return true;
	}
	if (n != 2 || ops[1].atom != DW_OP_plus_uconst)
		return false;
	*off = (int64_t)ops[1].number;
	return true;
}

/* The sp of a caller with CFI at its return address whose x29 is c_fp
 * (its frame record), called from the frame whose record is at f_fp; or
 * false with why. */
static bool caller_sp(Dwarf_Frame *fr, uint64_t c_fp, uint64_t f_fp, uint64_t *sp,
		      const char **why)
{
	Dwarf_Op *ops = NULL;
	size_t n = 0;
	if (dwarf_frame_cfa(fr, &ops, &n) != 0 || n != 1 || !ops ||
	    ops[0].atom != DW_OP_bregx) {
		*why = "the caller's CFA is an expression, not a register and offset";
		return false;
	}
	uint64_t reg = ops[0].number, cfa;
	int64_t cfa_off = (int64_t)ops[0].number2, off29, off30;
	if (reg == X29) {
		/* its CFI follows x29 itself: sp only needs a bound */
		cfa = c_fp + (uint64_t)cfa_off;
		*sp = f_fp + 16;
	} else if (reg == SP) {
		if (!saved_at(fr, X29, &off29) || !saved_at(fr, X30, &off30) ||
		    off30 != off29 + 8) {
			*why = "the caller's CFI keeps no frame record there";
			return false;
		}
		cfa = c_fp - (uint64_t)off29;
		*sp = cfa - (uint64_t)cfa_off;
	} else {
		*why = "the caller's CFA is not based on sp or x29";
		return false;
	}
	/* AAPCS64: sp is 16-aligned at every call, so is the CFA; the
	 * caller's frame lies above the callee's record */
	if (cfa <= c_fp || (cfa & 15) || (reg == SP && (*sp & 15)) || *sp < f_fp + 16) {
		*why = "the caller's frame record does not match its CFI";
		return false;
	}
	return true;
}

enum dbs_framerec dbs_framerec_step(const struct dbs_framerec_io *io,
				    const uint64_t *regs, uint64_t *caller,
				    const char **why)
{
	uint64_t fp = regs[X29], sp = regs[SP];
	*why = NULL;
	if (fp == 0)
		return DBS_FRAMEREC_OUTERMOST;	/* _start and clone clear it */
	if ((fp & 7) || fp < sp || fp + 16 < fp) {
		*why = "x29 is no frame record above the stack pointer";
		return DBS_FRAMEREC_BAD;
	}
	uint64_t next_fp, ra;
	if (!io->read(io->ctx, fp, &next_fp) || !io->read(io->ctx, fp + 8, &ra))
		return DBS_FRAMEREC_MISSED;
	if (ra == 0)
		return DBS_FRAMEREC_OUTERMOST;
	if (next_fp != 0 && next_fp <= fp) {
		*why = "the frame record chain does not go up the stack";
		return DBS_FRAMEREC_BAD;
	}
	memcpy(caller, regs, ARCH_MAX_GREGS * sizeof *caller);
	caller[X29] = next_fp;
	caller[X30] = ra;
	caller[PC] = ra;
	/* the call is the instruction before the return address */
	Dwarf_Frame *fr = cfi_frame(io->dwfl, ra - 1);
	if (!fr) {
		/* no CFI there either: the next step reads its record, sp
		 * is only a bound (above this record) */
		caller[SP] = fp + 16;
		return DBS_FRAMEREC_CALLER;
	}
	bool ok = next_fp != 0 && caller_sp(fr, next_fp, fp, &caller[SP], why);
	free(fr);
	if (!ok) {
		if (!*why)
			*why = "the caller has CFI but no frame record";
		return DBS_FRAMEREC_BAD;
	}
	return DBS_FRAMEREC_CALLER;
}
