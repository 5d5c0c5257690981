/*
 * glibc_versions.h: which glibc the target runs.
 *
 * The lock decoders read glibc's pthread objects word by word; a field that
 * moved between versions (2.41 dropped pthread_cond_t's __g_refs) decoded
 * with another version's offsets is a lie.  So the layouts
 * (glibc_locks.c, the one table of them) are chosen by the version read
 * here, and a version the table does not hold gets none.
 */
#ifndef TINSPECT_GLIBC_VERSIONS_H
#define TINSPECT_GLIBC_VERSIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct psvc_target;

/*
 * The target's glibc version into buf (digits and dots only, "" if it
 * cannot be told): from its memory (__nptl_version in libc, since 2.34;
 * nptl_version in libpthread before), else from the version banner in
 * its libc's file ("... release version 2.31."), which a core file's
 * libc has too.  ret_source (may be NULL): "__nptl_version",
 * "nptl_version", "libc banner" or NULL.
 */
void dbs_glibc_version_read(struct psvc_target *t, char *buf, size_t len,
			    const char **ret_source);

#endif
