/*
 * corezip.c: compressed cores as a stream of uncompressed bytes.
 * systemd-coredump stores cores zstd-compressed by default (Debian 12), or
 * xz or lz4 as configured (coredump.conf, Compress=); `zstd`, `xz` and
 * `lz4` on a core give the same formats.  The stream is read front to back
 * in chunks through each library's streaming API (ZSTD_decompressStream,
 * lzma_code, LZ4F_decompress): nothing but a chunk of input and the
 * decoder's window is held, whatever the size of the core.  Concatenated
 * frames (zstd, lz4) and streams (xz) are one core.
 */
#include "core_int.h"

#include <errno.h>
#include <lz4frame.h>
#include <lzma.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zstd.h>

#define IN_CHUNK (1u << 20)
/* xz's decoder needs at most 65 MiB for `xz -9`; a stream that asks for
 * more is not one systemd or xz wrote. */
#define XZ_MEMLIMIT (256ull << 20)

struct zstream {
	int fd;
	enum psvc_core_zip zip;
	unsigned char *in;
	size_t in_len, in_pos;
	off_t in_off;		/* of the next read: pread, whatever the
				 * descriptor's own offset is */
	bool in_eof;
	bool done;		/* the end of the last frame was met at EOF */
	bool mid_frame;		/* the decoder holds a frame not finished */
	uint64_t total;		/* bytes given, across rewinds */
	ZSTD_DStream *zd;
	lzma_stream xz;
	bool xz_init;
	LZ4F_dctx *lz4;
};

int psvc_zip_detect(const unsigned char *m, size_t n, const char **ret_name)
{
	*ret_name = NULL;
	if (n >= 4 && m[0] == 0x28 && m[1] == 0xb5 && m[2] == 0x2f && m[3] == 0xfd)
		return PSVC_CORE_ZSTD;
	/* a zstd skippable frame (0x184D2A50..5F, little-endian) */
	if (n >= 4 && (m[0] & 0xf0) == 0x50 && m[1] == 0x2a && m[2] == 0x4d &&
	    m[3] == 0x18)
		return PSVC_CORE_ZSTD;
	if (n >= 6 && !memcmp(m, "\xfd" "7zXZ\0", 6))
		return PSVC_CORE_XZ;
	if (n >= 4 && m[0] == 0x04 && m[1] == 0x22 && m[2] == 0x4d && m[3] == 0x18)
		return PSVC_CORE_LZ4;
	if (n >= 4 && m[0] == 0x02 && m[1] == 0x21 && m[2] == 0x4c && m[3] == 0x18)
		*ret_name = "lz4 (legacy format, `lz4 -l`)";
	else if (n >= 2 && m[0] == 0x1f && m[1] == 0x8b)
		*ret_name = "gzip";
	else if (n >= 3 && !memcmp(m, "BZh", 3))
		*ret_name = "bzip2";
	return *ret_name ? -EOPNOTSUPP : PSVC_CORE_PLAIN;
}

static void decoders_free(struct zstream *z)
{
	if (z->zd)
		ZSTD_freeDStream(z->zd);
	z->zd = NULL;
	if (z->xz_init)
		lzma_end(&z->xz);
	z->xz_init = false;
	if (z->lz4)
		LZ4F_freeDecompressionContext(z->lz4);
	z->lz4 = NULL;
}

static int decoders_init(struct zstream *z)
{
	switch (z->zip) {
	case PSVC_CORE_ZSTD:
		z->zd = ZSTD_createDStream();
		if (!z->zd || ZSTD_isError(ZSTD_initDStream(z->zd)))
			return -ENOMEM;
		/* windows above 128 MiB (--long=31) are not systemd's */
		ZSTD_DCtx_setParameter(z->zd, ZSTD_d_windowLogMax, 27);
		return 0;
	case PSVC_CORE_XZ: {
		lzma_stream init = LZMA_STREAM_INIT;
		z->xz = init;
		if (lzma_stream_decoder(&z->xz, XZ_MEMLIMIT, LZMA_CONCATENATED) !=
		    LZMA_OK)
			return -ENOMEM;
		z->xz_init = true;
		return 0;
	}
	case PSVC_CORE_LZ4:
		if (LZ4F_isError(LZ4F_createDecompressionContext(&z->lz4,
								 LZ4F_VERSION)))
			return -ENOMEM;
		return 0;
	case PSVC_CORE_PLAIN:
		break;
	}
	return -EINVAL;
}

int psvc_zstream_open(int fd, enum psvc_core_zip zip, struct zstream **ret)
{
	struct zstream *z = calloc(1, sizeof *z);
	if (!z)
		return -ENOMEM;
	z->fd = fd;
	z->zip = zip;
	z->in = malloc(IN_CHUNK);
	int err = z->in ? decoders_init(z) : -ENOMEM;
	if (err) {
		psvc_zstream_close(z);
		return err;
	}
	*ret = z;
	return 0;
}

void psvc_zstream_close(struct zstream *z)
{
	if (!z)
		return;
	decoders_free(z);
	free(z->in);
	free(z);
}

int psvc_zstream_rewind(struct zstream *z)
{
	decoders_free(z);
	z->in_off = 0;
	z->in_len = z->in_pos = 0;
	z->in_eof = z->done = z->mid_frame = false;
	return decoders_init(z);
}

uint64_t psvc_zstream_total(const struct zstream *z)
{
	return z->total;
}

/* More compressed input when what there is has been used. */
static int fill(struct zstream *z)
{
	if (z->in_pos < z->in_len || z->in_eof)
		return 0;
	ssize_t n;
	do
		n = pread(z->fd, z->in, IN_CHUNK, z->in_off);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	z->in_off += n;
	z->in_len = (size_t)n;
	z->in_pos = 0;
	if (n == 0)
		z->in_eof = true;
	return 0;
}

ssize_t psvc_zstream_read(struct zstream *z, void *buf, size_t cap, char *why,
		     size_t whylen)
{
	size_t got = 0;
	while (got == 0 && !z->done) {
		int err = fill(z);
		if (err) {
			psvc_say(why, whylen, "cannot read the compressed core: %s",
				 strerror(-err));
			return err;
		}
		size_t avail = z->in_len - z->in_pos;
		if (z->in_eof && avail == 0 && z->zip != PSVC_CORE_XZ) {
			if (z->mid_frame) {
				psvc_say(why, whylen, "the %s stream ends inside "
					 "a frame: the compressed file is truncated",
					 psvc_core_zip_name(z->zip));
				return -EIO;
			}
			z->done = true;
			break;
		}
		switch (z->zip) {
		case PSVC_CORE_ZSTD: {
			ZSTD_inBuffer in = { z->in, z->in_len, z->in_pos };
			ZSTD_outBuffer out = { buf, cap, 0 };
			size_t r = ZSTD_decompressStream(z->zd, &out, &in);
			if (ZSTD_isError(r)) {
				psvc_say(why, whylen, "%s", ZSTD_getErrorName(r));
				return -EIO;
			}
			z->in_pos = in.pos;
			got = out.pos;
			z->mid_frame = r != 0;
			break;
		}
		case PSVC_CORE_XZ: {
			z->xz.next_in = z->in + z->in_pos;
			z->xz.avail_in = avail;
			z->xz.next_out = buf;
			z->xz.avail_out = cap;
			lzma_ret r = lzma_code(&z->xz, z->in_eof ? LZMA_FINISH
								  : LZMA_RUN);
			z->in_pos = z->in_len - z->xz.avail_in;
			got = cap - z->xz.avail_out;
			if (r == LZMA_STREAM_END) {
				z->done = true;
			} else if (r == LZMA_BUF_ERROR && z->in_eof) {
				psvc_say(why, whylen, "the xz stream ends early: "
					 "the compressed file is truncated");
				return got ? (ssize_t)got : -EIO;
			} else if (r != LZMA_OK) {
				psvc_say(why, whylen, "xz: %s", r == LZMA_MEMLIMIT_ERROR ?
					 "the stream needs more than 256 MiB to decode" :
					 r == LZMA_FORMAT_ERROR ? "not an xz stream" :
					 r == LZMA_DATA_ERROR ? "corrupt data" :
					 "decoder error");
				return -EIO;
			}
			break;
		}
		case PSVC_CORE_LZ4: {
			size_t dst = cap, src = avail;
			size_t r = LZ4F_decompress(z->lz4, buf, &dst,
						   z->in + z->in_pos, &src, NULL);
			if (LZ4F_isError(r)) {
				psvc_say(why, whylen, "lz4: %s", LZ4F_getErrorName(r));
				return -EIO;
			}
			z->in_pos += src;
			got = dst;
			z->mid_frame = r != 0;
			break;
		}
		case PSVC_CORE_PLAIN:
			return -EINVAL;
		}
	}
	z->total += got;
	return (ssize_t)got;
}
