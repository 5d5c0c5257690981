/*
 * glibc_versions.c: the target's glibc version, and the lock layouts
 * verified per version (glibc_versions.h).
 *
 * How each row was verified: offsetof() of every field, compiled inside a
 * Debian root of that release with its own gcc and headers (bullseye 2.31,
 * bookworm 2.36, trixie 2.41), and the words of live objects in a known
 * state (a recursive mutex locked twice, a write-locked rwlock, a sem of
 * value 5, a barrier of 3); then the containers suite runs the lock
 * fixtures in those roots and checks the decoded owners and waits.
 * mutex, rwlock, sem and barrier are the same in all three; pthread_cond_t
 * lost __g_refs in 2.41 (commit "nptl: rewrite the condvar wait", also
 * backported to some 2.38-2.40 branches: those stay unverified, since the
 * version string alone cannot tell which layout a 2.39 has).
 */
#include "glibc_versions.h"
#include "dbs_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MUTEX_RWLOCK_SEM_BARRIER                                              \
	.mutex_size = 40, .rwlock_size = 56, .cond_size = 48, .sem_size = 32, \
	.barrier_size = 32,                                                   \
	.mutex_lock = 0, .mutex_count = 4, .mutex_owner = 8,                  \
	.mutex_nusers = 12, .mutex_kind = 16, .mutex_list = 24,               \
	.rw_readers = 0, .rw_writers = 4, .rw_wrphase_futex = 8,              \
	.rw_writers_futex = 12, .rw_cur_writer = 24, .rw_shared = 28,         \
	.rw_flags = 48,                                                       \
	.cond_wseq = 0, .cond_g1_start = 8,                                   \
	.sem_data = 0, .sem_private = 8,                                      \
	.barrier_in = 0, .barrier_round = 4, .barrier_count = 8,              \
	.barrier_shared = 12, .barrier_out = 16

/* 2.31 (Debian 11) and 2.36 (Debian 12): __g_refs[2] at 16. */
static const struct dbs_glibc_layout with_g_refs = {
	.versions = "2.31 2.36",
	MUTEX_RWLOCK_SEM_BARRIER,
	.cond_g_refs = 16, .cond_g_size = 24, .cond_g1_orig_size = 32,
	.cond_wrefs = 36, .cond_g_signals = 40,
	.cond_wait_expects_zero = true,
};

/* 2.41 (Debian 13): no __g_refs, everything after it 8 bytes earlier. */
static const struct dbs_glibc_layout without_g_refs = {
	.versions = "2.41",
	MUTEX_RWLOCK_SEM_BARRIER,
	.cond_g_refs = -1, .cond_g_size = 16, .cond_g1_orig_size = 24,
	.cond_wrefs = 28, .cond_g_signals = 32,
	.cond_wait_expects_zero = false,
};

static const struct {
	const char *version;
	const struct dbs_glibc_layout *layout;
} verified[] = {
	{ "2.31", &with_g_refs },
	{ "2.36", &with_g_refs },
	{ "2.41", &without_g_refs },
};

const char *dbs_glibc_verified_versions(void)
{
	return "2.31, 2.36, 2.41";
}

const struct dbs_glibc_layout *dbs_glibc_layout(const char *version,
						int arch_id, const char **ret_why)
{
	(void)arch_id;	/* aarch64: the same generic headers (source only) */
	if (!version || !version[0]) {
		*ret_why = "the target's glibc version is not known";
		return NULL;
	}
	for (size_t i = 0; i < sizeof verified / sizeof *verified; i++)
		if (!strcmp(verified[i].version, version))
			return verified[i].layout;
	*ret_why = "its lock layouts are verified for glibc 2.31, 2.36 and "
		   "2.41 only";
	return NULL;
}

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
