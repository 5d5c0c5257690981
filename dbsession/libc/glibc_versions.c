/*
 * glibc_versions.c: the target's glibc version (glibc_versions.h), which
 * chooses the row of glibc_locks.c's layout table (docs/GLIBC.md §5).
 */
#include "glibc_versions.h"
#include "dbs_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Digits and dots only, major.minor ("2.31" of "2.31.9000"): it is
 * target memory or a file's bytes. */
static void keep_version(const char *in, size_t inlen, char *buf, size_t len)
{
	size_t o = 0;
	unsigned dots = 0;
	for (size_t i = 0; i < inlen && o + 1 < len; i++) {
		char c = in[i];
		if (c == '.' && ++dots == 2)
			break;
		if (!((c >= '0' && c <= '9') || c == '.'))
			break;
		buf[o++] = c;
	}
	buf[o] = '\0';
	if (!dots || buf[o ? o - 1 : 0] == '.')
		buf[0] = '\0';	/* not a version */
}

/* "... stable release version 2.31." (csu/version.c's banner, in the
 * .rodata of libc.so.6): read from the module's file, checked to be the
 * mapped one (modfiles.c), at most 16 MiB of it. */
static int banner_version(struct psvc_target *t, char *buf, size_t len)
{
	static const char key[] = "release version ";
	struct psvc_module *libc = NULL;
	for (size_t i = 0; i < psvc_nmodules(t) && !libc; i++)
		if (psvc_module_at(t, i)->flags & PSVC_MOD_LIBC)
			libc = psvc_module_at(t, i);
	if (!libc)
		return -ENOENT;
	int fd = psvc_module_open_fd(t, libc);
	if (fd < 0)
		return fd;
	enum { CHUNK = 1 << 20, MAX = 16 << 20 };
	char *b = malloc(CHUNK + 64);
	int err = -ENOENT;
	size_t keep = 0;
	off_t off = 0;
	while (b && off < MAX) {
		ssize_t n = pread(fd, b + keep, CHUNK, off);
		if (n <= 0)
			break;
		size_t have = keep + (size_t)n;
		char *p = memmem(b, have, key, sizeof key - 1);
		if (p && (size_t)(p - b) + sizeof key - 1 + 8 <= have) {
			p += sizeof key - 1;
			keep_version(p, (size_t)(b + have - p), buf, len);
			err = buf[0] ? 0 : -ENOENT;
			break;
		}
		/* a key cut at the chunk's end is found in the next one */
		keep = have < 64 ? have : 64;
		memmove(b, b + have - keep, keep);
		off += n;
	}
	free(b);
	close(fd);
	return b ? err : -ENOMEM;
}

void dbs_glibc_version_read(struct psvc_target *t, char *buf, size_t len,
			    const char **ret_source)
{
	static const char *const syms[] = { "__nptl_version", "nptl_version" };
	buf[0] = '\0';
	if (ret_source)
		*ret_source = NULL;
	for (size_t i = 0; i < 2; i++) {
		uint64_t a;
		char v[32];
		if (psvc_lookup_symbol(t, syms[i], &a) ||
		    psvc_read_string(t, a, v, sizeof v))
			continue;
		keep_version(v, strnlen(v, sizeof v), buf, len);
		if (buf[0]) {
			if (ret_source)
				*ret_source = syms[i];
			return;
		}
	}
	if (banner_version(t, buf, len) == 0 && ret_source)
		*ret_source = "libc banner";
}
