/*
 * test_framerec: framerec.c's step through an aarch64 frame without CFI,
 * over a synthetic stack (no modules, so no CFI anywhere: the record
 * chain alone).  The steps into callers with CFI are checked live on an
 * arm64 machine (test_stacks: known_chain_frame_pointer_fallback,
 * garbage_frame_chain_stops_cleanly).
 */
#include <criterion/criterion.h>
#include <string.h>

#include "dbs_int.h"

#define BASE 0xffffd0000000ull
static uint64_t stack[64];	/* BASE .. BASE + 512 */

static bool read_stack(void *ctx, uint64_t addr, uint64_t *v)
{
	(void)ctx;
	if (addr < BASE || addr + 8 > BASE + sizeof stack || (addr & 7))
		return false;
	*v = stack[(addr - BASE) / 8];
	return true;
}

static void put(uint64_t addr, uint64_t fp, uint64_t lr)
{
	stack[(addr - BASE) / 8] = fp;
	stack[(addr - BASE) / 8 + 1] = lr;
}

static const struct dbs_framerec_io io = { NULL, read_stack, NULL };

/* x29, sp and pc of a frame in NT_PRSTATUS order */
static void regs_of(uint64_t *g, uint64_t fp, uint64_t sp, uint64_t pc)
{
	memset(g, 0, ARCH_MAX_GREGS * sizeof *g);
	for (int i = 0; i < 29; i++)
		g[i] = 0x1000 + (uint64_t)i;	/* kept as they are */
	g[29] = fp;
	g[31] = sp;
	g[32] = pc;
}

Test(framerec, record_chain_to_the_outermost_frame)
{
	memset(stack, 0, sizeof stack);
	put(BASE + 0x20, BASE + 0x60, 0x400100);
	put(BASE + 0x60, BASE + 0xa0, 0x400200);
	put(BASE + 0xa0, 0, 0x400300);
	uint64_t g[ARCH_MAX_GREGS], c[ARCH_MAX_GREGS];
	const char *why;
	regs_of(g, BASE + 0x20, BASE, 0x400010);
	cr_assert_eq(dbs_framerec_step(&io, g, c, &why), DBS_FRAMEREC_CALLER);
	cr_assert_eq(c[32], 0x400100, "the caller's pc is the record's return address");
	cr_assert_eq(c[30], 0x400100);
	cr_assert_eq(c[29], BASE + 0x60, "its x29 the record's link");
	cr_assert_eq(c[31], BASE + 0x30, "without CFI its sp is bounded above the record");
	cr_assert_eq(c[19], 0x1000 + 19, "callee-saved registers are not made up");

	memcpy(g, c, sizeof g);
	cr_assert_eq(dbs_framerec_step(&io, g, c, &why), DBS_FRAMEREC_CALLER);
	cr_assert_eq(c[32], 0x400200);
	memcpy(g, c, sizeof g);
	cr_assert_eq(dbs_framerec_step(&io, g, c, &why), DBS_FRAMEREC_CALLER);
	cr_assert_eq(c[32], 0x400300);
	cr_assert_eq(c[29], 0);
	memcpy(g, c, sizeof g);
	/* x29 = 0: where _start and clone leave it */
	cr_assert_eq(dbs_framerec_step(&io, g, c, &why), DBS_FRAMEREC_OUTERMOST);

	/* a record whose return address is 0 ends the chain too */
	put(BASE + 0x20, BASE + 0x60, 0);
	regs_of(g, BASE + 0x20, BASE, 0x400010);
	cr_assert_eq(dbs_framerec_step(&io, g, c, &why), DBS_FRAMEREC_OUTERMOST);
}

Test(framerec, garbage_records_are_refused)
{
	memset(stack, 0, sizeof stack);
	uint64_t g[ARCH_MAX_GREGS], c[ARCH_MAX_GREGS];
	const char *why;
	/* a chain that points back down (or at itself) is no chain */
	put(BASE + 0x40, BASE + 0x40, 0x400100);
	regs_of(g, BASE + 0x40, BASE, 0x400010);
	cr_assert_eq(dbs_framerec_step(&io, g, c, &why), DBS_FRAMEREC_BAD);
	cr_assert(why && strstr(why, "does not go up"), "%s", why);
	put(BASE + 0x40, BASE + 0x20, 0x400100);
	cr_assert_eq(dbs_framerec_step(&io, g, c, &why), DBS_FRAMEREC_BAD);
	/* x29 below sp, or not aligned */
	regs_of(g, BASE + 0x10, BASE + 0x20, 0x400010);
	cr_assert_eq(dbs_framerec_step(&io, g, c, &why), DBS_FRAMEREC_BAD);
	cr_assert(why && strstr(why, "x29"), "%s", why);
	regs_of(g, BASE + 0x44, BASE, 0x400010);
	cr_assert_eq(dbs_framerec_step(&io, g, c, &why), DBS_FRAMEREC_BAD);
	regs_of(g, UINT64_MAX - 7, BASE, 0x400010);
	cr_assert_eq(dbs_framerec_step(&io, g, c, &why), DBS_FRAMEREC_BAD);
	/* a record the capture does not hold: missed (truncated), not bad */
	regs_of(g, BASE + 0x1000, BASE, 0x400010);
	cr_assert_eq(dbs_framerec_step(&io, g, c, &why), DBS_FRAMEREC_MISSED);
}
