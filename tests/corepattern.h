/*
 * corepattern.h: /proc/sys/kernel/core_pattern pointed at a test's
 * directory while the kernel dumps a core (corepattern.c).  Root only.
 */
#ifndef TINSPECT_TEST_COREPATTERN_H
#define TINSPECT_TEST_COREPATTERN_H

#include <stdbool.h>

/* core_pattern becomes DIR/core.%p until core_pattern_end(), or until the
 * calling process dies (a guard process restores it); tests that do it
 * are serialized by a lock file. */
void core_pattern_begin(const char *dir);
/* Restore it now (nothing if core_pattern_begin() was not called). */
void core_pattern_end(void);
/* Whether core_pattern_end() found core_pattern back to what it was before
 * core_pattern_begin(), read while it still held the lock (once it lets
 * go, another suite's test may point it elsewhere). */
bool core_pattern_restored(void);

#endif
