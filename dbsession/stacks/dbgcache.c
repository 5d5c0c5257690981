/*
 * dbgcache.c: separate debug files kept decompressed between runs.
 *
 * Debian's debug files (libc6-dbg and every -dbgsym) have their DWARF
 * sections compressed (SHF_COMPRESSED, zlib).  libdw inflates every one
 * of them whole when it first opens the file, whatever is asked of it:
 * for glibc 2.36's libc that is 10 MB of DWARF out of 3.6 MB, most of the
 * wall time of a capture of a small process and a good part of its peak
 * RSS.  Nothing of that depends on the target: it is a function of the
 * debug file, which its build-id names.  So the first run that needs a
 * debug file writes an uncompressed copy of it to a cache directory,
 * under its build-id, and later runs hand libdwfl that copy, which it maps
 * and reads in place (only the pages of the units asked for are touched).
 *
 * An entry is the debug file with each compressed section inflated and
 * appended (its header pointing there; every other byte where it was,
 * so program headers and notes stay valid), then a trailer: a magic, the
 * build-id, the length of the ELF part and a 64-bit hash of it.  It is
 * used only if the directory and the file are ours (owned by us or root,
 * writable by nobody else), the trailer names the build-id wanted, the
 * hash of the whole ELF part matches and the copy's own build-id note is
 * the one wanted; anything else (a truncated or damaged file, another
 * file's copy under this name) is ignored and replaced.  Hashing an
 * entry reads all of it (14 MB for glibc 2.36's libc: more CPU than the
 * rest of a small capture's analysis), so once an entry has passed, a
 * stamp beside it ("NAME.ok") records the file it was: device, inode,
 * size, and the modification and change times.  A later run whose entry
 * is still that file skips the hash; any write to the entry, a rename, a
 * copy or a replacement moves its change time (which no one but the
 * kernel sets), and the entry is hashed again.  Only debug files
 * found in tinspect's own file system, owned by root or us and writable by
 * nobody else, are copied: a file planted in a container's root is used
 * for that target only (debuginfo.c), never remembered for others.
 *
 * Where: $TINSPECT_DEBUG_CACHE if set (an absolute directory, or "off"),
 * else /var/cache/tinspect/debug for root, else $XDG_CACHE_HOME (or
 * ~/.cache) /tinspect/debug.  Bounded: an entry inflates to at most
 * DBGC_MAX_ENTRY bytes, and the oldest entries go once the directory holds
 * more than DBGC_MAX_TOTAL.
 */
#include "dbs_int.h"

#include <dirent.h>
#include <elf.h>
#include <elfutils/libdwelf.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#ifndef ELFCOMPRESS_ZSTD
#define ELFCOMPRESS_ZSTD 2
#endif

#define DBGC_MAGIC "tinspect-dbgc-1"	/* 15 bytes and a NUL */
#define DBGC_MAX_ENTRY (256ull << 20)
#define DBGC_MAX_TOTAL (512ull << 20)
#define DBGC_IO (256u * 1024)

struct dbgc_trailer {
	char magic[16];
	uint64_t elf_size;	/* bytes before the trailer */
	uint64_t hash;		/* dbgc_hash of those bytes */
	uint32_t idlen;
	unsigned char id[64];
	uint32_t reserved;
};

/* ---- the hash ---------------------------------------------------------------------- */

/* A 64-bit hash of four interleaved lanes of 8-byte words, to tell a
 * damaged entry from a good one (not a defence against forgery: the
 * directory's ownership is that). */
#define H1 0x9e3779b185ebca87ull
#define H2 0xc2b2ae3d27d4eb4full

static inline uint64_t rotl64(uint64_t x, int r)
{
	return (x << r) | (x >> (64 - r));
}

static inline uint64_t lane(uint64_t acc, uint64_t w)
{
	return rotl64(acc + w * H2, 31) * H1;
}

struct dbgc_hasher {
	uint64_t v[4];
	uint64_t total;
	unsigned char tail[32];
	size_t ntail;
};

static void hasher_init(struct dbgc_hasher *h)
{
	memset(h, 0, sizeof *h);
	h->v[0] = H1 + H2;
	h->v[1] = H2;
	h->v[2] = 0;
	h->v[3] = -H1;
}

static void hash_block(struct dbgc_hasher *h, const unsigned char *p)
{
	for (int i = 0; i < 4; i++) {
		uint64_t w;
		memcpy(&w, p + 8 * i, 8);
		h->v[i] = lane(h->v[i], w);
	}
}

static void hasher_add(struct dbgc_hasher *h, const void *data, size_t len)
{
	const unsigned char *p = data;
	h->total += len;
	if (h->ntail) {
		size_t take = 32 - h->ntail < len ? 32 - h->ntail : len;
		memcpy(h->tail + h->ntail, p, take);
		h->ntail += take;
		p += take;
		len -= take;
		if (h->ntail < 32)
			return;
		hash_block(h, h->tail);
		h->ntail = 0;
	}
	for (; len >= 32; p += 32, len -= 32)
		hash_block(h, p);
	memcpy(h->tail, p, len);
	h->ntail = len;
}

static uint64_t hasher_end(const struct dbgc_hasher *h)
{
	uint64_t acc = rotl64(h->v[0], 1) + rotl64(h->v[1], 7) +
		       rotl64(h->v[2], 12) + rotl64(h->v[3], 18);
	for (int i = 0; i < 4; i++)
		acc = (acc ^ lane(0, h->v[i])) * H1 + H2;
	for (size_t i = 0; i < h->ntail; i++)
		acc = rotl64(acc ^ (h->tail[i] * H1), 11) * H2;
	acc ^= h->total;
	acc ^= acc >> 33;
	acc *= H2;
	acc ^= acc >> 29;
	return acc;
}

/* The hash of bytes [0, len) of fd, read in chunks (the pages are not
 * mapped: they would count in our RSS). */
static bool hash_fd(int fd, uint64_t len, uint64_t *ret)
{
	unsigned char *buf = malloc(DBGC_IO);
	if (!buf)
		return false;
	struct dbgc_hasher h;
	hasher_init(&h);
	uint64_t off = 0;
	while (off < len) {
		size_t want = len - off < DBGC_IO ? (size_t)(len - off) : DBGC_IO;
		ssize_t n = pread(fd, buf, want, (off_t)off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		hasher_add(&h, buf, (size_t)n);
		off += (uint64_t)n;
	}
	free(buf);
	*ret = hasher_end(&h);
	return off == len;
}

/* ---- the directory ----------------------------------------------------------------- */

/* Ours: owned by us or root, writable by no one else. */
static bool ours(const struct stat *st)
{
	return (st->st_uid == geteuid() || st->st_uid == 0) &&
	       !(st->st_mode & (S_IWGRP | S_IWOTH));
}

/* mkdir -p of an absolute path, the last component with mode. */
static void make_dirs(const char *path, mode_t mode)
{
	char buf[PATH_MAX];
	if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf)
		return;
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		(void)mkdir(buf, 0755);
		*p = '/';
	}
	(void)mkdir(buf, mode);
}

/* The cache directory, opened and checked: a descriptor, or -1 (no cache:
 * turned off, no home, or a directory that is not ours). */
static int open_dir(void)
{
	char path[PATH_MAX];
	const char *env = getenv("TINSPECT_DEBUG_CACHE");
	mode_t mode = 0700;
	if (env && (!strcmp(env, "off") || !strcmp(env, "0") || !*env))
		return -1;
	if (env) {
		if (env[0] != '/' || snprintf(path, sizeof path, "%s", env) >= (int)sizeof path)
			return -1;
	} else if (geteuid() == 0) {
		snprintf(path, sizeof path, "/var/cache/tinspect/debug");
		mode = 0755;
	} else {
		const char *xdg = getenv("XDG_CACHE_HOME");
		const char *home = getenv("HOME");
		int n;
		if (xdg && xdg[0] == '/')
			n = snprintf(path, sizeof path, "%s/tinspect/debug", xdg);
		else if (home && home[0] == '/')
			n = snprintf(path, sizeof path, "%s/.cache/tinspect/debug", home);
		else
			return -1;
		if (n >= (int)sizeof path)
			return -1;
	}
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 && errno == ENOENT) {
		make_dirs(path, mode);
		fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	}
	struct stat st;
	if (fd >= 0 && (fstat(fd, &st) != 0 || !ours(&st))) {
		close(fd);
		fd = -1;
	}
	return fd;
}

static void entry_name(const unsigned char *id, size_t idlen, char *out)
{
	for (size_t i = 0; i < idlen; i++)
		sprintf(out + 2 * i, "%02x", id[i]);
	strcpy(out + 2 * idlen, ".debug");
}

/* ---- the stamp of an entry that passed ---------------------------------------------- */

#define DBGC_STAMP_MAGIC "tinspect-dbgok-1"

static bool write_all(int fd, const void *buf, size_t len, uint64_t *off);

struct dbgc_stamp {
	char magic[16];
	uint64_t dev, ino, size, hash;
	int64_t mtime_s, mtime_ns, ctime_s, ctime_ns;
};

static void stamp_of(const struct stat *st, uint64_t hash, struct dbgc_stamp *ret)
{
	memset(ret, 0, sizeof *ret);
	memcpy(ret->magic, DBGC_STAMP_MAGIC, sizeof ret->magic);
	ret->dev = st->st_dev;
	ret->ino = st->st_ino;
	ret->size = (uint64_t)st->st_size;
	ret->hash = hash;
	ret->mtime_s = st->st_mtim.tv_sec;
	ret->mtime_ns = st->st_mtim.tv_nsec;
	ret->ctime_s = st->st_ctim.tv_sec;
	ret->ctime_ns = st->st_ctim.tv_nsec;
}

static void stamp_name(const char *name, char *out, size_t len)
{
	snprintf(out, len, "%s.ok", name);
}

/* The entry (st, its trailer's hash) is the very file a stamp says passed. */
static bool stamp_matches(int dir, const char *name, const struct stat *st,
			  uint64_t hash)
{
	char path[NAME_MAX + 1];
	stamp_name(name, path, sizeof path);
	int fd = openat(dir, path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return false;
	struct stat sst;
	struct dbgc_stamp have, want;
	bool ok = fstat(fd, &sst) == 0 && S_ISREG(sst.st_mode) && ours(&sst) &&
		  pread(fd, &have, sizeof have, 0) == (ssize_t)sizeof have;
	close(fd);
	stamp_of(st, hash, &want);
	return ok && memcmp(&have, &want, sizeof want) == 0;
}

/* Record that the entry (st) passed: written aside, then renamed over the
 * stamp, so that a reader sees a whole stamp or none. */
static void stamp_write(int dir, const char *name, const struct stat *st,
			uint64_t hash)
{
	char path[NAME_MAX + 1], tmp[NAME_MAX + 32];
	stamp_name(name, path, sizeof path);
	snprintf(tmp, sizeof tmp, ".%s.%d.tmp", path, (int)getpid());
	(void)unlinkat(dir, tmp, 0);
	int fd = openat(dir, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
			geteuid() == 0 ? 0644 : 0600);
	if (fd < 0)
		return;
	struct dbgc_stamp sp;
	stamp_of(st, hash, &sp);
	uint64_t off = 0;
	bool ok = write_all(fd, &sp, sizeof sp, &off);
	close(fd);
	if (!ok || renameat(dir, tmp, dir, path) != 0)
		(void)unlinkat(dir, tmp, 0);
}

/* ---- using an entry ---------------------------------------------------------------- */

/* The entry for id in dir, checked through and through: a descriptor, or
 * -1 if there is none or it is not to be trusted. */
static int open_entry(int dir, const char *name, const unsigned char *id,
		      size_t idlen)
{
	int fd = openat(dir, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return -1;
	struct stat st;
	struct dbgc_trailer tr;
	uint64_t hash;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || !ours(&st) ||
	    (uint64_t)st.st_size <= sizeof tr ||
	    pread(fd, &tr, sizeof tr, st.st_size - (off_t)sizeof tr) != (ssize_t)sizeof tr ||
	    memcmp(tr.magic, DBGC_MAGIC, sizeof tr.magic) != 0 ||
	    tr.elf_size != (uint64_t)st.st_size - sizeof tr ||
	    tr.idlen != idlen || memcmp(tr.id, id, idlen) != 0)
		goto refuse;
	if (!stamp_matches(dir, name, &st, tr.hash)) {
		if (!hash_fd(fd, tr.elf_size, &hash) || hash != tr.hash)
			goto refuse;
		stamp_write(dir, name, &st, tr.hash);
	}
	Elf *e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	const void *note;
	ssize_t len = e ? dwelf_elf_gnu_build_id(e, &note) : -1;
	bool same = len > 0 && (size_t)len == idlen && !memcmp(note, id, idlen);
	if (e)
		elf_end(e);
	if (same)
		return fd;
refuse:
	close(fd);
	return -1;
}

/* ---- making an entry --------------------------------------------------------------- */

/* One compressed section of the original. */
struct zsec {
	size_t index;
	uint32_t type;		/* ELFCOMPRESS_* */
	uint64_t size, align;	/* inflated */
	const unsigned char *data;	/* the stream, after the header */
	size_t len;
	uint64_t new_offset;
};

static bool write_all(int fd, const void *buf, size_t len, uint64_t *off)
{
	const char *p = buf;
	while (len) {
		ssize_t n = pwrite(fd, p, len, (off_t)*off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return false;
		p += n;
		len -= (size_t)n;
		*off += (uint64_t)n;
	}
	return true;
}

/* Inflate one section into fd at *off; false unless it gives exactly
 * z->size bytes. */
static bool inflate_to(int fd, const struct zsec *z, unsigned char *buf,
		       uint64_t *off)
{
	uint64_t start = *off;
	if (z->type == ELFCOMPRESS_ZLIB) {
		z_stream s;
		memset(&s, 0, sizeof s);
		if (inflateInit(&s) != Z_OK)
			return false;
		s.next_in = (unsigned char *)z->data;
		s.avail_in = (uInt)z->len;
		int r = Z_OK;
		while (r == Z_OK) {
			s.next_out = buf;
			s.avail_out = DBGC_IO;
			r = inflate(&s, Z_NO_FLUSH);
			size_t got = DBGC_IO - s.avail_out;
			if ((r != Z_OK && r != Z_STREAM_END) ||
			    *off - start + got > z->size ||
			    !write_all(fd, buf, got, off)) {
				r = Z_DATA_ERROR;
				break;
			}
			if (r == Z_OK && got == 0 && s.avail_in == 0)
				r = Z_DATA_ERROR;	/* truncated stream */
		}
		inflateEnd(&s);
		return r == Z_STREAM_END && *off - start == z->size;
	}
	ZSTD_DStream *d = ZSTD_createDStream();
	if (!d)
		return false;
	ZSTD_inBuffer in = { z->data, z->len, 0 };
	bool ok = !ZSTD_isError(ZSTD_initDStream(d));
	size_t r = 1;
	while (ok && r != 0) {
		ZSTD_outBuffer out = { buf, DBGC_IO, 0 };
		r = ZSTD_decompressStream(d, &out, &in);
		ok = !ZSTD_isError(r) && *off - start + out.pos <= z->size &&
		     write_all(fd, buf, out.pos, off) &&
		     !(out.pos == 0 && in.pos == in.size && r != 0);
	}
	ZSTD_freeDStream(d);
	return ok && *off - start == z->size;
}

/* The compressed sections of e (a 64-bit ELF of our byte order), checked
 * against the file; *ret_n 0 if there are none or the file is not one we
 * copy (then nothing is cached). */
static struct zsec *find_compressed(Elf *e, uint64_t file_size, size_t *ret_n)
{
	*ret_n = 0;
	size_t shnum;
	GElf_Ehdr eh;
	if (!gelf_getehdr(e, &eh) || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    elf_getshdrnum(e, &shnum) != 0 || shnum == 0 ||
	    eh.e_shnum != shnum || shnum >= SHN_LORESERVE ||
	    eh.e_shentsize != sizeof(Elf64_Shdr))
		return NULL;
	union { uint16_t u; unsigned char b[2]; } probe = { 1 };
	if (eh.e_ident[EI_DATA] != (probe.b[0] ? ELFDATA2LSB : ELFDATA2MSB))
		return NULL;
	struct zsec *v = calloc(shnum, sizeof *v);
	if (!v)
		return NULL;
	size_t n = 0;
	uint64_t total = 0;
	for (size_t i = 1; i < shnum; i++) {
		Elf_Scn *scn = elf_getscn(e, i);
		GElf_Shdr sh;
		if (!scn || !gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS ||
		    !(sh.sh_flags & SHF_COMPRESSED))
			continue;
		Elf64_Chdr ch;
		Elf_Data *raw = elf_rawdata(scn, NULL);
		if (!raw || !raw->d_buf || raw->d_size < sizeof ch ||
		    sh.sh_offset + sh.sh_size > file_size)
			goto refuse;
		memcpy(&ch, raw->d_buf, sizeof ch);
		if ((ch.ch_type != ELFCOMPRESS_ZLIB && ch.ch_type != ELFCOMPRESS_ZSTD) ||
		    ch.ch_size > DBGC_MAX_ENTRY || ch.ch_addralign > 4096)
			goto refuse;
		total += ch.ch_size;
		if (total > DBGC_MAX_ENTRY)
			goto refuse;
		v[n++] = (struct zsec){
			.index = i, .type = ch.ch_type, .size = ch.ch_size,
			.align = ch.ch_addralign ? ch.ch_addralign : 1,
			.data = (const unsigned char *)raw->d_buf + sizeof ch,
			.len = raw->d_size - sizeof ch,
		};
	}
	if (n) {
		*ret_n = n;
		return v;
	}
refuse:
	free(v);
	return NULL;
}

/* The original's section headers with the inflated ones moved to where
 * they were appended, written at *off. */
static bool write_shdrs(int out, Elf *e, const struct zsec *z, size_t nz,
			uint64_t *off)
{
	size_t shnum;
	if (elf_getshdrnum(e, &shnum) != 0)
		return false;
	Elf64_Shdr *sh = calloc(shnum, sizeof *sh);
	if (!sh)
		return false;
	bool ok = true;
	for (size_t i = 0; ok && i < shnum; i++) {
		GElf_Shdr g;
		Elf_Scn *scn = elf_getscn(e, i);
		if (!scn || !gelf_getshdr(scn, &g)) {
			ok = false;
			break;
		}
		sh[i] = (Elf64_Shdr){ g.sh_name, g.sh_type, g.sh_flags, g.sh_addr,
				      g.sh_offset, g.sh_size, g.sh_link, g.sh_info,
				      g.sh_addralign, g.sh_entsize };
	}
	for (size_t k = 0; ok && k < nz; k++) {
		Elf64_Shdr *s = &sh[z[k].index];
		s->sh_flags &= ~(uint64_t)SHF_COMPRESSED;
		s->sh_offset = z[k].new_offset;
		s->sh_size = z[k].size;
		s->sh_addralign = z[k].align;
	}
	ok = ok && write_all(out, sh, shnum * sizeof *sh, off);
	free(sh);
	return ok;
}

static bool pad_to(int fd, uint64_t align, uint64_t *off)
{
	static const unsigned char zero[4096];
	uint64_t to = (*off + align - 1) & ~(align - 1);
	return write_all(fd, zero, (size_t)(to - *off), off);
}

/* Write the entry of the debug file src (its Elf e) into out. */
static bool write_entry(int out, int src, Elf *e, const unsigned char *id,
			size_t idlen)
{
	struct stat st;
	if (fstat(src, &st) != 0)
		return false;
	size_t nz;
	struct zsec *z = find_compressed(e, (uint64_t)st.st_size, &nz);
	if (!z)
		return false;
	unsigned char *buf = malloc(DBGC_IO);
	bool ok = buf != NULL;
	/* the original, byte for byte */
	uint64_t off = 0;
	while (ok && off < (uint64_t)st.st_size) {
		ssize_t n = pread(src, buf, DBGC_IO, (off_t)off);
		if (n < 0 && errno == EINTR)
			continue;
		uint64_t at = off;
		ok = n > 0 && write_all(out, buf, (size_t)n, &at);
		off = at;
	}
	/* each compressed section inflated, appended */
	for (size_t k = 0; ok && k < nz; k++) {
		ok = pad_to(out, z[k].align, &off);
		z[k].new_offset = off;
		ok = ok && inflate_to(out, &z[k], buf, &off);
	}
	/* the section headers, and the ELF header pointing at them */
	uint64_t shoff = 0;
	if (ok) {
		ok = pad_to(out, 8, &off);
		shoff = off;
		ok = ok && write_shdrs(out, e, z, nz, &off);
	}
	uint64_t at = offsetof(Elf64_Ehdr, e_shoff);
	ok = ok && write_all(out, &shoff, sizeof shoff, &at);
	struct dbgc_trailer tr = { .elf_size = off, .idlen = (uint32_t)idlen };
	memcpy(tr.magic, DBGC_MAGIC, sizeof tr.magic);
	memcpy(tr.id, id, idlen);
	ok = ok && hash_fd(out, off, &tr.hash) && write_all(out, &tr, sizeof tr, &off);
	free(buf);
	free(z);
	return ok;
}

/* The oldest entries go while the directory holds more than
 * DBGC_MAX_TOTAL bytes of them (keep: the one just made). */
static void trim(int dir, const char *keep)
{
	for (int round = 0; round < 64; round++) {
		int fd = dup(dir);
		DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
		if (!d) {
			if (fd >= 0)
				close(fd);
			return;
		}
		uint64_t total = 0;
		char oldest[NAME_MAX + 1] = "";
		struct timespec when = { 0, 0 };
		struct dirent *de;
		while ((de = readdir(d))) {
			struct stat st;
			size_t len = strlen(de->d_name);
			if (len < 7 || strcmp(de->d_name + len - 6, ".debug") ||
			    fstatat(dir, de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
			    !S_ISREG(st.st_mode))
				continue;
			total += (uint64_t)st.st_size;
			if (strcmp(de->d_name, keep) &&
			    (!oldest[0] || st.st_mtim.tv_sec < when.tv_sec ||
			     (st.st_mtim.tv_sec == when.tv_sec &&
			      st.st_mtim.tv_nsec < when.tv_nsec))) {
				snprintf(oldest, sizeof oldest, "%s", de->d_name);
				when = st.st_mtim;
			}
		}
		closedir(d);
		if (total <= DBGC_MAX_TOTAL || !oldest[0])
			return;
		(void)unlinkat(dir, oldest, 0);
		char stamp[NAME_MAX + 1];
		stamp_name(oldest, stamp, sizeof stamp);
		(void)unlinkat(dir, stamp, 0);
	}
}

/* Make the entry for the debug file src: a descriptor of it, or -1. */
static int make_entry(int dir, const char *name, int src,
		      const unsigned char *id, size_t idlen)
{
	struct stat st;
	if (fstat(src, &st) != 0 || !S_ISREG(st.st_mode) || !ours(&st))
		return -1;	/* a file others may write: not remembered */
	Elf *e = elf_begin(src, ELF_C_READ_MMAP, NULL);
	if (!e)
		return -1;
	char tmp[NAME_MAX + 1];
	snprintf(tmp, sizeof tmp, ".%s.%d.tmp", name, (int)getpid());
	(void)unlinkat(dir, tmp, 0);
	int out = openat(dir, tmp, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
			 geteuid() == 0 ? 0644 : 0600);
	bool ok = out >= 0 && write_entry(out, src, e, id, idlen);
	elf_end(e);
	if (ok && renameat(dir, tmp, dir, name) == 0) {
		close(out);
		trim(dir, name);
		/* used through the same checks as any entry */
		return open_entry(dir, name, id, idlen);
	}
	if (out >= 0) {
		close(out);
		(void)unlinkat(dir, tmp, 0);
	}
	return -1;
}

int dbs_dbgcache_use(int fd, const unsigned char *id, size_t idlen)
{
	if (fd < 0 || idlen < 2 || idlen > sizeof ((struct dbgc_trailer *)0)->id)
		return fd;
	int dir = open_dir();
	if (dir < 0)
		return fd;
	char name[2 * 64 + sizeof ".debug"];
	entry_name(id, idlen, name);
	int c = open_entry(dir, name, id, idlen);
	if (c < 0)
		c = make_entry(dir, name, fd, id, idlen);
	close(dir);
	if (c < 0)
		return fd;
	close(fd);
	return c;
}
