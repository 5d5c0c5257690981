/*
 * Private to the core reader (core.c, corenotes.c, coremem.c, corezip.c,
 * corekeep.c): the layout of struct psvc_core and what its files share.
 */
#ifndef TINSPECT_PSVC_CORE_INT_H
#define TINSPECT_PSVC_CORE_INT_H

#include "core.h"
#include "psvc_int.h"	/* struct psvc_warnings */

#include <gelf.h>
#include <stdarg.h>

/* No user address space is larger than 2^57 bytes (x86_64 with 5-level
 * paging: 2^56 of user space; aarch64: 2^52).  A segment or NT_FILE
 * mapping that claims more is damage, and the sizes derived from it (a
 * stack's used bytes, what is left of it) would pass 2^63 and turn
 * negative. */
#define PSVC_CORE_MAX_MAPPING (1ull << 57)

/* Where addr is against the range [lo, hi), in bsearch(3)'s order: the
 * segments, NT_FILE mappings and kept ranges are looked up so. */
static inline int psvc_core_addr_vs(uint64_t addr, uint64_t lo, uint64_t hi)
{
	return addr < lo ? -1 : addr >= hi;
}

/* A PT_LOAD, after the checks of core.c. */
struct core_seg {
	uint64_t vaddr, memsz;	/* [vaddr, vaddr + memsz), no wrap */
	uint64_t offset;	/* p_offset */
	uint64_t filesz;	/* p_filesz, at most memsz */
	uint64_t avail;		/* bytes of filesz the file really holds
				 * (less: truncated) */
	uint32_t flags;		/* p_flags */
	long file;		/* index of the NT_FILE mapping holding
				 * vaddr, -1 */
	bool stack;		/* holds some thread's sp (compressed plan) */
};

/* Compressed cores: one range of memory the streaming pass keeps. */
struct core_keep {
	uint64_t lo, hi;	/* [lo, hi) in the process */
	uint64_t file_lo;	/* offset of lo in the uncompressed core */
	unsigned char **blocks;	/* one per 4 KiB block of the address
				 * space from lo & ~4095; NULL: zeros */
	size_t nblocks;
};

#define CORE_BLK_SHIFT 12
#define CORE_BLK ((uint64_t)1 << CORE_BLK_SHIFT)

struct core_chunk {
	unsigned char *base;
	size_t size, used;
};

struct psvc_core {
	int fd;
	const struct arch_desc *arch;
	enum psvc_core_zip zip;
	enum psvc_core_producer producer;
	struct psvc_core_opts opts;

	/* the uncompressed core as far as it is held: a plain core's whole
	 * file (mapped), or a compressed core's first head_len bytes */
	unsigned char *image;
	uint64_t image_len;
	bool image_mapped;	/* munmap, else free */
	/* coremem.c: bytes of the mapping that reads may have made resident
	 * since it was last let go (atomic: reads may run concurrently) */
	_Atomic uint64_t touched;
	unsigned char *notes_buf;	/* compressed, notes after the
					 * memory: [notes_off, +len) */
	uint64_t notes_off, notes_len;

	struct psvc_core_sizes sizes;	/* psvc_core_sizes() */

	struct core_seg *segs;	/* sorted by vaddr, not overlapping */
	size_t nsegs;
	uint64_t first_data;	/* lowest p_offset of a PT_LOAD with data */

	/* notes */
	struct psvc_core_thread *threads;
	size_t nthreads, threads_cap;
	long signalled;		/* index, -1 */
	bool seen_psinfo_first, seen_gdb_note;
	struct psvc_core_proc proc;
	uint64_t *auxv;		/* pairs */
	size_t nauxv;
	struct psvc_core_file *files;	/* sorted by start, not overlapping */
	size_t nfiles;
	char *file_names;	/* the paths, copied */
	uint64_t page_size;	/* NT_FILE's */

	struct psvc_core_map *maps;
	size_t nmaps;

	struct psvc_warnings warnings;

	/* compressed */
	struct core_keep *keeps;	/* sorted by lo, not overlapping */
	size_t nkeeps;
	struct core_chunk *chunks;
	size_t nchunks, chunks_cap;
	uint64_t budget_used;	/* planned bytes of the budgeted class */
	bool stream_broken;	/* the stream ended in an error */
	uint64_t stream_end;	/* bytes it gave before its end / error */
	bool stream_stopped;	/* left at the last byte kept, before its end:
				 * what follows was never decompressed */
	char stream_why[160];
};

/* core.c */
void psvc_core_warn(struct psvc_core *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* The segment holding addr, or NULL. */
const struct core_seg *psvc_core_seg_for(const struct psvc_core *c, uint64_t addr);
/* The identification, type and machine from the first n bytes of the
 * core, before libelf sees it: 0, -ENOEXEC or -EBADMSG with why; sets
 * c->arch. */
int psvc_core_check_header(struct psvc_core *c, const unsigned char *p, size_t n,
		      char *why, size_t whylen);
/* Validate the ELF header and read the program headers of elf (over the
 * first c->image_len bytes of the core) into c->segs, sorted, overlaps
 * dropped (avail not set), c->sizes.expected and c->first_data; the note
 * segments into *ret_notes (malloc'ed).  0, -ENOEXEC or -EBADMSG with why. */
struct core_note_range {
	uint64_t offset, size;
	bool align8;
};
int psvc_core_read_headers(struct psvc_core *c, Elf *elf,
		      struct core_note_range **ret_notes, size_t *ret_nnotes,
		      char *why, size_t whylen);
/* After the notes: sort and check the NT_FILE list, tie segments to it. */
int psvc_core_finish(struct psvc_core *c);
/* Last: the maps view (needs every segment's avail).  0 or -ENOMEM. */
int psvc_core_build_maps(struct psvc_core *c);

/* corenotes.c */
/* Walk one PT_NOTE segment's bytes (len may be short of the segment's
 * size when the file is truncated: `cut` says so).  Damage is warned
 * about; only -ENOMEM is an error. */
int psvc_core_notes_parse(struct psvc_core *c, const unsigned char *p, size_t len,
		     bool align8, bool cut);
/* After every note segment: which thread took the signal, who wrote the
 * core. */
void psvc_core_notes_done(struct psvc_core *c);

/* corezip.c: decompressors over a descriptor */
struct zstream;
/* What the first bytes of a file say it is: PSVC_CORE_PLAIN for anything
 * not a known compressed stream, or -EOPNOTSUPP for a compression tinspect
 * does not read (its name into *ret_name). */
int psvc_zip_detect(const unsigned char *magic, size_t n, const char **ret_name);
int psvc_zstream_open(int fd, enum psvc_core_zip zip, struct zstream **ret);
/* Up to cap decompressed bytes: > 0, 0 at the end of the stream, or a
 * negative errno with why (-EIO: corrupt, -ENOMEM). */
ssize_t psvc_zstream_read(struct zstream *z, void *buf, size_t cap, char *why,
		     size_t whylen);
/* Back to the start of the file, for a second pass. */
int psvc_zstream_rewind(struct zstream *z);
/* The bytes it has given in all, across rewinds. */
uint64_t psvc_zstream_total(const struct zstream *z);
void psvc_zstream_close(struct zstream *z);

/* corekeep.c: the streaming pass of a compressed core */
int psvc_core_zip_load(struct psvc_core *c, char *why, size_t whylen);
void psvc_core_keep_free(struct psvc_core *c);

#endif
