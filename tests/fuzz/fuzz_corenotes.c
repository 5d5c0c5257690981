/*
 * fuzz_corenotes: the core reader (proc_service/core/core.h) on arbitrary
 * bytes.  A core file is anyone's: a crafted one must give an error with a
 * reason or a core whose every answer can be asked for, never a crash, and
 * what it gives must hold together.
 *
 * An input that starts like ELF is a whole core.  Any other input is note
 * bytes after one flag byte (bit 0: aarch64, bit 1: an 8-aligned note
 * segment), wrapped here in a core with one note segment and one stack
 * segment, so that random bytes reach the note decoders at once.
 *
 * Every input is read twice, plain and zstd-compressed (the streaming
 * reader, corekeep.c): when both open, they must agree on the threads,
 * their registers and the mapped files.
 */
#include <elf.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <zstd.h>

#include "core.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define STACK_AT 0x7ff000000000ull
#define STACK_LEN 8192u

/* A core around raw note bytes. */
static unsigned char *wrap_notes(const uint8_t *data, size_t size,
				 size_t *ret_len)
{
	unsigned flags = size ? data[0] : 0;
	const uint8_t *notes = size ? data + 1 : data;
	size_t nlen = size ? size - 1 : 0;
	size_t off = sizeof(Elf64_Ehdr) + 2 * sizeof(Elf64_Phdr);
	size_t len = off + nlen + STACK_LEN;
	unsigned char *p = calloc(1, len);
	if (!p)
		abort();
	Elf64_Ehdr *e = (Elf64_Ehdr *)p;
	memcpy(e->e_ident, ELFMAG, SELFMAG);
	e->e_ident[EI_CLASS] = ELFCLASS64;
	e->e_ident[EI_DATA] = ELFDATA2LSB;
	e->e_ident[EI_VERSION] = EV_CURRENT;
	e->e_type = ET_CORE;
	e->e_machine = flags & 1 ? EM_AARCH64 : EM_X86_64;
	e->e_version = EV_CURRENT;
	e->e_phoff = sizeof *e;
	e->e_ehsize = sizeof *e;
	e->e_phentsize = sizeof(Elf64_Phdr);
	e->e_phnum = 2;
	Elf64_Phdr *ph = (Elf64_Phdr *)(p + sizeof *e);
	ph[0] = (Elf64_Phdr){ .p_type = PT_NOTE, .p_offset = off,
			      .p_filesz = nlen, .p_align = flags & 2 ? 8 : 4 };
	ph[1] = (Elf64_Phdr){ .p_type = PT_LOAD, .p_flags = PF_R | PF_W,
			      .p_offset = off + nlen, .p_vaddr = STACK_AT,
			      .p_filesz = STACK_LEN, .p_memsz = STACK_LEN,
			      .p_align = 4096 };
	memcpy(p + off, notes, nlen);
	for (size_t i = 0; i < STACK_LEN; i++)
		p[off + nlen + i] = (unsigned char)(i * 13);
	*ret_len = len;
	return p;
}

static int open_bytes(const unsigned char *p, size_t n, bool zstd,
		      struct psvc_core **ret)
{
	int fd = memfd_create("fuzz_corenotes", MFD_CLOEXEC);
	if (fd < 0)
		abort();
	if (zstd) {
		size_t cap = ZSTD_compressBound(n);
		void *z = malloc(cap ? cap : 1);
		size_t zn = ZSTD_compress(z, cap, p, n, 1);
		if (ZSTD_isError(zn) || write(fd, z, zn) != (ssize_t)zn)
			abort();
		free(z);
	} else if (write(fd, p, n) != (ssize_t)n) {
		abort();
	}
	char why[256] = "";
	/* small limits: a fuzzed count must not make the run slow */
	struct psvc_core_opts o = { .budget = 1u << 20,
				    .max_note_bytes = 16u << 20 };
	int err = psvc_core_open_fd(fd, &o, ret, why, sizeof why);
	if (err && (err >= 0 || !why[0]))
		abort();	/* a failure says why */
	return err;
}

static unsigned char buf[1u << 17];

static void check(const struct psvc_core *c)
{
	const struct arch_desc *a = psvc_core_arch(c);
	if (!a || !psvc_core_nthreads(c))
		abort();
	for (size_t i = 0; i < psvc_core_nthreads(c); i++) {
		const struct psvc_core_thread *t = psvc_core_thread_at(c, i);
		if (psvc_core_thread_by_tid(c, t->tid)->tid != t->tid)
			abort();
		if (t->fpregs_len)
			memcpy(buf, t->fpregs, t->fpregs_len < sizeof buf ?
			       t->fpregs_len : sizeof buf);
		if (t->xstate_len)
			memcpy(buf, t->xstate, t->xstate_len < sizeof buf ?
			       t->xstate_len : sizeof buf);
		if (a->tp_greg_idx >= 0 && t->have_regs &&
		    t->tp != t->gregs[a->tp_greg_idx])
			abort();
		uint64_t sp = arch_sp(a, t->gregs);
		struct psvc_core_miss m;
		char s[512];
		int r = psvc_core_read(c, sp - 128, buf, 65536 + 128, &m);
		psvc_core_miss_str(c, &m, s, sizeof s);
		if (r == 0 && psvc_core_extent(c, sp - 128, 65536 + 128) !=
		    65536 + 128)
			abort();
		if (r != 0 && m.kind == PSVC_CORE_MISS_NONE)
			abort();
		psvc_core_read(c, t->tp, buf, 2368, NULL);
	}
	/* the maps: in order, apart, each found where it is, and a segment's
	 * bytes in the core read where the process could read them, never
	 * where it could not (no PF_R) */
	uint64_t prev_end = 0;
	for (size_t i = 0; i < psvc_core_nmaps(c); i++) {
		const struct psvc_core_map *m = psvc_core_map_at(c, i);
		if (m->map.start >= m->map.end || (i && m->map.start < prev_end))
			abort();
		prev_end = m->map.end;
		struct psvc_map got, below;
		if (psvc_core_map_lookup(c, m->map.start, &got, &below) ||
		    got.start != m->map.start)
			abort();
		uint64_t n = m->in_core < 4096 ? m->in_core : 4096;
		bool readable = m->map.perms[0] == 'r';
		if (m->segment && n && readable && psvc_core_zip(c) == PSVC_CORE_PLAIN &&
		    psvc_core_read(c, m->map.start, buf, n, NULL))
			abort();
		if (m->segment && n && !readable &&
		    psvc_core_read(c, m->map.start, buf, n, NULL) != -EFAULT)
			abort();
	}
	prev_end = 0;
	for (size_t i = 0; i < psvc_core_nfiles(c); i++) {
		const struct psvc_core_file *f = psvc_core_file_at(c, i);
		if (f->start >= f->end || (i && f->start < prev_end) ||
		    psvc_core_file_for_addr(c, f->start) != f)
			abort();
		prev_end = f->end;
		(void)strlen(f->path);
	}
	for (size_t i = 0; i < psvc_core_nwarnings(c); i++)
		if (!psvc_core_warning_at(c, i)[0])
			abort();
	const uint64_t *av;
	size_t na = psvc_core_auxv_vec(c, &av);
	for (size_t i = 0; i < na; i++) {
		uint64_t v;
		if (psvc_core_auxv(c, av[2 * i], &v))
			abort();
	}
	const struct psvc_core_proc *p = psvc_core_proc(c);
	(void)strlen(p->fname);
	(void)strlen(p->psargs);
	psvc_core_exe(c);
	psvc_core_signalled_thread(c);
	psvc_core_read(c, UINT64_MAX - 8, buf, 64, NULL);
}

/* Plain and compressed, the notes must say the same. */
static void same(const struct psvc_core *x, const struct psvc_core *y)
{
	if (psvc_core_nthreads(x) != psvc_core_nthreads(y) ||
	    psvc_core_nfiles(x) != psvc_core_nfiles(y))
		abort();
	for (size_t i = 0; i < psvc_core_nthreads(x); i++) {
		const struct psvc_core_thread *a = psvc_core_thread_at(x, i);
		const struct psvc_core_thread *b = psvc_core_thread_at(y, i);
		if (a->tid != b->tid || a->have_regs != b->have_regs ||
		    memcmp(a->gregs, b->gregs, sizeof a->gregs) ||
		    a->fpregs_len != b->fpregs_len || a->tp != b->tp)
			abort();
	}
	for (size_t i = 0; i < psvc_core_nfiles(x); i++)
		if (strcmp(psvc_core_file_at(x, i)->path,
			   psvc_core_file_at(y, i)->path))
			abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	unsigned char *owned = NULL;
	const unsigned char *p = data;
	size_t n = size;
	if (size < SELFMAG || memcmp(data, ELFMAG, SELFMAG)) {
		owned = wrap_notes(data, size, &n);
		p = owned;
	}
	struct psvc_core *plain = NULL, *zipped = NULL;
	if (open_bytes(p, n, false, &plain) == 0)
		check(plain);
	if (open_bytes(p, n, true, &zipped) == 0)
		check(zipped);
	if (plain && zipped)
		same(plain, zipped);
	psvc_core_close(plain);
	psvc_core_close(zipped);
	free(owned);
	return 0;
}
