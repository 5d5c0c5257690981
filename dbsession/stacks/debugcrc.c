/*
 * debugcrc.c: the CRC-32 a .gnu_debuglink records, computed over a
 * candidate debug file within budgets, and never twice for the same file.
 *
 * A module without a build-id names its debug file by name and CRC only,
 * so every candidate of that name (beside the module, in .debug/ there,
 * under /usr/lib/debug) is read whole to be checked.  A candidate is any
 * file the target's user put there: sparse files just under a per-file
 * cap cost seconds each, and libdwfl asked for the same module twice (its
 * symbol table, then its DWARF).  So the bytes read for CRCs are bounded
 * per module search and per session (a file that does not fit in what is
 * left is not read at all, and the caller says so), and a CRC once
 * computed is kept by the file's device, inode, size and modification
 * time.
 */
#include "dbs_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MEMO_MAX 256

struct crc_memo {
	dev_t dev;
	ino_t ino;
	off_t size;
	struct timespec mtime;
	uint32_t crc;
};

struct dbs_crc {
	uint64_t run_left;	/* bytes the session may still read */
	uint64_t bytes_read;	/* all the CRCs have read */
	struct crc_memo memo[MEMO_MAX];
	size_t nmemo, next;	/* next: the slot to reuse when full */
};

struct dbs_crc *dbs_crc_new(void)
{
	struct dbs_crc *c = calloc(1, sizeof *c);
	if (c)
		c->run_left = DBS_CRC_RUN_BUDGET;
	return c;
}

void dbs_crc_free(struct dbs_crc *c)
{
	free(c);
}

uint64_t dbs_crc_bytes_read(const struct dbs_crc *c)
{
	return c->bytes_read;
}

static uint32_t crc_table[256];

static void table_init(void)
{
	if (crc_table[1])
		return;
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t x = i;
		for (int k = 0; k < 8; k++)
			x = x & 1 ? 0xedb88320u ^ (x >> 1) : x >> 1;
		crc_table[i] = x;
	}
}

/* The zlib/ISO 3309 CRC-32 of the first len bytes of fd (fewer if it is
 * shorter now); *ret_read: what was read. */
static bool crc_of(int fd, uint64_t len, uint32_t *ret, uint64_t *ret_read)
{
	table_init();
	unsigned char buf[65536];
	uint32_t crc = 0xffffffffu;
	uint64_t off = 0;
	bool ok = true;
	while (off < len) {
		size_t want = len - off < sizeof buf ? (size_t)(len - off) : sizeof buf;
		ssize_t n = pread(fd, buf, want, (off_t)off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			ok = n == 0;
			break;
		}
		for (ssize_t i = 0; i < n; i++)
			crc = crc_table[(crc ^ buf[i]) & 0xff] ^ (crc >> 8);
		off += (uint64_t)n;
	}
	*ret_read = off;
	*ret = crc ^ 0xffffffffu;
	return ok;
}

static struct crc_memo *memo_find(struct dbs_crc *c, const struct stat *st)
{
	for (size_t i = 0; i < c->nmemo; i++) {
		struct crc_memo *m = &c->memo[i];
		if (m->dev == st->st_dev && m->ino == st->st_ino &&
		    m->size == st->st_size && m->mtime.tv_sec == st->st_mtim.tv_sec &&
		    m->mtime.tv_nsec == st->st_mtim.tv_nsec)
			return m;
	}
	return NULL;
}

static void memo_add(struct dbs_crc *c, const struct stat *st, uint32_t crc)
{
	size_t i = c->nmemo < MEMO_MAX ? c->nmemo++ : c->next++ % MEMO_MAX;
	c->memo[i] = (struct crc_memo){ st->st_dev, st->st_ino, st->st_size,
					st->st_mtim, crc };
}

int dbs_crc_file(struct dbs_crc *c, int fd, uint64_t *module_left, uint32_t *ret)
{
	struct stat st;
	if (fstat(fd, &st) != 0)
		return -errno;
	const struct crc_memo *m = memo_find(c, &st);
	if (m) {
		*ret = m->crc;
		return 0;
	}
	uint64_t size = (uint64_t)st.st_size;
	if (size > *module_left || size > c->run_left)
		return -EFBIG;
	uint64_t got;
	uint32_t crc;
	bool ok = crc_of(fd, size, &crc, &got);
	*module_left -= got;
	c->run_left -= got;
	c->bytes_read += got;
	if (!ok)
		return -EIO;
	/* a file that changed while it was read is not remembered */
	struct stat after;
	if (got == size && fstat(fd, &after) == 0 && after.st_size == st.st_size &&
	    after.st_mtim.tv_sec == st.st_mtim.tv_sec &&
	    after.st_mtim.tv_nsec == st.st_mtim.tv_nsec)
		memo_add(c, &st, crc);
	*ret = crc;
	return 0;
}
