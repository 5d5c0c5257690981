/*
 * arch_int.h: what the per-architecture files (x86_64.c, aarch64.c)
 * share with arch.c and nothing else sees.
 */
#ifndef TINSPECT_ARCH_INT_H
#define TINSPECT_ARCH_INT_H

#include "arch.h"

/* The -ERESTART* codes a syscall interrupted by a stop leaves behind
 * (include/linux/errno.h): ERESTARTSYS, ERESTARTNOINTR, ERESTARTNOHAND,
 * ERESTART_RESTARTBLOCK. */
static inline bool arch_is_restart_code(int64_t v)
{
	return v == -512 || v == -513 || v == -514 || v == -516;
}

#define ARCH_NELEMS(x) (sizeof(x) / sizeof *(x))

#endif
