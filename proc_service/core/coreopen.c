/*
 * coreopen.c: opening a core file, plain (mapped, never read whole) or
 * compressed (corezip.c streams it, corekeep.c keeps what the plan says),
 * and closing it.  The steps - headers, notes, files, maps - are core.c's
 * and corenotes.c's; this file puts them in order.
 */
#include "core_int.h"
#include "psvc_int.h"

#include <elf.h>
#include <endian.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- open and close -------------------------------------------------------- */

static int open_plain(struct psvc_core *c, char *why, size_t whylen)
{
	if (c->sizes.file < sizeof(Elf64_Ehdr)) {
		psvc_say(why, whylen, "%" PRIu64 " bytes: too short for an ELF "
			 "core", c->sizes.file);
		return -EBADMSG;
	}
	if (c->sizes.file > SIZE_MAX) {
		psvc_say(why, whylen, "too big to map");
		return -EFBIG;
	}
	/* MAP_PRIVATE and writable: libelf may convert in place, which must
	 * never reach the file; only touched pages are ever read */
	void *p = mmap(NULL, c->sizes.file, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_NORESERVE, c->fd, 0);
	if (p == MAP_FAILED) {
		int err = -errno;
		psvc_say(why, whylen, "cannot map the core: %s", strerror(errno));
		return err;
	}
	c->image = p;
	c->image_len = c->sizes.file;
	c->image_mapped = true;
	int err = psvc_core_check_header(c, c->image, c->image_len, why, whylen);
	if (err)
		return err;
	Elf *elf = elf_memory((char *)c->image, c->image_len);
	if (!elf) {
		psvc_say(why, whylen, "libelf cannot read it: %s", elf_errmsg(-1));
		return -EBADMSG;
	}
	struct core_note_range *notes;
	size_t nnotes;
	err = psvc_core_read_headers(c, elf, &notes, &nnotes, why, whylen);
	elf_end(elf);
	if (err)
		return err;
	for (size_t i = 0; i < c->nsegs; i++) {
		struct core_seg *s = &c->segs[i];
		s->avail = s->offset >= c->sizes.file ? 0 :
			   s->filesz < c->sizes.file - s->offset ?
			   s->filesz : c->sizes.file - s->offset;
	}
	for (size_t i = 0; i < nnotes && !err; i++) {
		const struct core_note_range *r = &notes[i];
		if (r->offset >= c->sizes.file) {
			psvc_core_warn(c, "the note segment at offset %#" PRIx64 " lies "
				  "beyond the end of the file (%" PRIu64 " bytes: "
				  "truncated)", r->offset, c->sizes.file);
			continue;
		}
		uint64_t len = r->size;
		bool cut = len > c->sizes.file - r->offset;
		if (cut)
			len = c->sizes.file - r->offset;
		err = psvc_core_notes_parse(c, c->image + r->offset, len, r->align8,
				       cut);
	}
	free(notes);
	if (err)
		return err;
	psvc_core_notes_done(c);
	if (!c->nthreads) {
		psvc_say(why, whylen, "no thread in the core (no NT_PRSTATUS "
			 "note could be read%s)", c->sizes.file < c->sizes.expected ?
			 ": the file is truncated" : "");
		return -EBADMSG;
	}
	err = psvc_core_finish(c);
	return err ? err : psvc_core_build_maps(c);
}

int psvc_core_open_fd(int fd, const struct psvc_core_opts *opts,
		      struct psvc_core **ret, char *why, size_t whylen)
{
	*ret = NULL;
	struct stat st;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		psvc_say(why, whylen, "not a regular file");
		close(fd);
		return -ENXIO;
	}
	unsigned char magic[16] = { 0 };
	ssize_t got = pread(fd, magic, sizeof magic, 0);
	if (got < 0) {
		int err = -errno;
		psvc_say(why, whylen, "cannot read it: %s", strerror(errno));
		close(fd);
		return err;
	}
	const char *zname = NULL;
	int zip = psvc_zip_detect(magic, (size_t)got, &zname);
	if (zip < 0) {
		psvc_say(why, whylen, "a %s-compressed file: tinspect reads "
			 "plain cores and zstd, xz and lz4 ones (decompress "
			 "it first)", zname);
		close(fd);
		return zip;
	}
	struct psvc_core *c = calloc(1, sizeof *c);
	if (!c) {
		close(fd);
		return -ENOMEM;
	}
	elf_version(EV_CURRENT);
	c->fd = fd;
	c->zip = zip;
	c->signalled = -1;
	if (opts)
		c->opts = *opts;
	if (!c->opts.stack_bytes)
		c->opts.stack_bytes = PSVC_CORE_STACK_BYTES;
	if (!c->opts.stack_top_bytes)
		c->opts.stack_top_bytes = PSVC_CORE_STACK_BYTES;
	if (!c->opts.budget)
		c->opts.budget = PSVC_CORE_BUDGET;
	if (!c->opts.max_note_bytes)
		c->opts.max_note_bytes = PSVC_CORE_MAX_NOTES;
	c->sizes.file = (uint64_t)st.st_size;
	int err = zip == PSVC_CORE_PLAIN ? open_plain(c, why, whylen)
					 : psvc_core_zip_load(c, why, whylen);
	if (err) {
		psvc_core_close(c);
		return err;
	}
	*ret = c;
	return 0;
}

int psvc_core_open(const char *path, const struct psvc_core_opts *opts,
		   struct psvc_core **ret, char *why, size_t whylen)
{
	*ret = NULL;
	int fd = psvc_open_regular(path, NULL);
	if (fd < 0) {
		psvc_say(why, whylen, "%s: %s", path, psvc_open_strerror(fd));
		return fd;
	}
	return psvc_core_open_fd(fd, opts, ret, why, whylen);
}

void psvc_core_close(struct psvc_core *c)
{
	if (!c)
		return;
	psvc_core_keep_free(c);
	if (c->image_mapped)
		munmap(c->image, c->image_len);
	else
		free(c->image);
	free(c->notes_buf);
	free(c->segs);
	for (size_t i = 0; c->threads && i < c->nthreads; i++)
		free(c->threads[i].fpregs_made);
	free(c->threads);
	free(c->auxv);
	free(c->files);
	free(c->file_names);
	free(c->maps);
	psvc_warnings_free(&c->warnings);
	if (c->fd >= 0)
		close(c->fd);
	free(c);
}

