/*
 * libc_musl.h: musl's private layouts tinspect reads (docs/MUSL.md), for
 * the files of the musl implementation of the C library seam (libc.h).
 */
#ifndef TINSPECT_LIBC_MUSL_H
#define TINSPECT_LIBC_MUSL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct arch_desc;

/* struct pthread, musl 1.2.2 - 1.2.5 (docs/MUSL.md §2): offsets */
struct dbs_musl_pthread {
	uint32_t tp_to_self;	/* struct = thread pointer - this (§3) */
	uint32_t self, dtv, prev, next, tid, errno_val, detach;
	uint32_t map_base, map_size, stack, stack_size, guard_size, result;
	uint32_t tsd, robust_head, robust_off, robust_pending, h_errno_val;
	uint32_t stdio_locks;
	uint32_t size;
};
const struct dbs_musl_pthread *dbs_musl_layout(const struct arch_desc *a);

/* One of the versions whose layouts were verified (docs/MUSL.md). */
bool dbs_musl_version_verified(const char *v);

/* The version in a libc.so's .rodata (docs/MUSL.md §1's rule): 0,
 * -ENOENT (none) or -EEXIST (several: unknown). */
int dbs_musl_version_scan(const char *b, size_t n, char *out, size_t outlen);

#endif
