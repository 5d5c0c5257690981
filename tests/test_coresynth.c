/*
 * test_coresynth: the core reader on a synthetic aarch64 core (the layouts
 * of the other architecture, on any host) and on damage no producer writes
 * but anyone can: notes that claim more bytes than there are, an absurd
 * NT_FILE count, segments that overlap or wrap, a foreign class, byte
 * order or machine.  Each damaged core is read plain and zstd-compressed.
 *
 * tests/data/core-aarch64-synth is made by tests/fuzz/mkcorecorpus.py; the
 * values checked here are the constants at the top of that script.
 */
#include <criterion/criterion.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <zstd.h>

#include "core.h"
#include "test_config.h"	/* TEST_TIME_SCALE */

#define A64_PID 4242
#define A64_STACK 0x7ff0000000ull
#define A64_TEXT 0x400000ull
#define A64_LIBC 0x7f00000000ull
#define A64_TP 0x7f00001000ull

static unsigned char *image;
static size_t image_len;
static struct psvc_core *cores[4];
static size_t ncores;

static void load(void)
{
	const char *dir = getenv("TESTDATA");
	cr_assert(dir, "TESTDATA is not set (run the tests with meson test)");
	char path[4096];
	snprintf(path, sizeof path, "%s/core-aarch64-synth", dir);
	FILE *f = fopen(path, "rb");
	cr_assert(f, "%s", path);
	image = malloc(1 << 16);
	image_len = fread(image, 1, 1 << 16, f);
	fclose(f);
	cr_assert(image_len > 1000);
}

static void teardown(void)
{
	for (size_t i = 0; i < ncores; i++)
		psvc_core_close(cores[i]);
	ncores = 0;
	free(image);
	image = NULL;
}

TestSuite(coresynth, .init = load, .fini = teardown, .timeout = 60 * TEST_TIME_SCALE);

/* Open bytes as a core, plain or compressed by libzstd. */
static int open_bytes(const unsigned char *p, size_t n, bool zstd,
		      struct psvc_core **ret, char *why, size_t whylen)
{
	int fd = memfd_create("coresynth", MFD_CLOEXEC);
	cr_assert(fd >= 0);
	if (zstd) {
		size_t cap = ZSTD_compressBound(n);
		void *z = malloc(cap);
		size_t zn = ZSTD_compress(z, cap, p, n, 3);
		cr_assert(!ZSTD_isError(zn));
		cr_assert_eq(write(fd, z, zn), (ssize_t)zn);
		free(z);
	} else {
		cr_assert_eq(write(fd, p, n), (ssize_t)n);
	}
	int err = psvc_core_open_fd(fd, NULL, ret, why, whylen);
	if (!err) {
		cr_assert(ncores < 4);
		cores[ncores++] = *ret;
	}
	return err;
}

static bool warned(const struct psvc_core *c, const char *words)
{
	for (size_t i = 0; i < psvc_core_nwarnings(c); i++)
		if (strstr(psvc_core_warning_at(c, i), words))
			return true;
	return false;
}

/* ---- the aarch64 layouts ------------------------------------------------------ */

static void check_aarch64(const struct psvc_core *c)
{
	const struct arch_desc *a = psvc_core_arch(c);
	cr_assert_eq(a->id, ARCH_AARCH64);
	cr_assert_eq(psvc_core_producer(c), PSVC_CORE_BY_KERNEL);
	cr_assert_eq(psvc_core_nthreads(c), 2);
	for (size_t k = 0; k < 2; k++) {
		const struct psvc_core_thread *t = psvc_core_thread_at(c, k);
		cr_assert_eq(t->tid, A64_PID + (pid_t)k);
		cr_assert(t->have_regs);
		for (unsigned i = 0; i < 31; i++)
			cr_assert_eq(t->gregs[i], 0x1000 * (k + 1) + i, "x%u", i);
		cr_assert_eq(arch_sp(a, t->gregs), A64_STACK + 0x800 * (k + 1) - 0x100);
		cr_assert_eq(arch_pc(a, t->gregs), A64_TEXT + 0x100 + 4 * k);
		cr_assert(t->have_tp, "NT_ARM_TLS gives the thread pointer");
		cr_assert_eq(t->tp, A64_TP + 0x1000 * k);
		cr_assert_eq(t->fpregs_len, 528);
		cr_assert_eq(((const unsigned char *)t->fpregs)[527], k ? 0x22 : 0x11);
		cr_assert_eq(t->cursig, SIGSEGV);
	}
	const struct psvc_core_thread *s = psvc_core_signalled_thread(c);
	cr_assert(s && s->tid == A64_PID && s->si.signo == SIGSEGV &&
		  s->si.code == SEGV_MAPERR && s->si.have_addr &&
		  s->si.addr == 0xdead0);
	const struct psvc_core_proc *p = psvc_core_proc(c);
	cr_assert(p->have_psinfo && p->pid == A64_PID && p->ppid == A64_PID - 1 &&
		  p->uid == 1000 && p->sname == 'R');
	cr_assert_str_eq(p->fname, "synth");
	cr_assert_str_eq(p->psargs, "synth --core");
	uint64_t v;
	cr_assert(psvc_core_auxv(c, AT_PHDR, &v) == 0 && v == A64_TEXT + 64);
	cr_assert_eq(psvc_core_auxv(c, AT_SECURE, &v), -ENOENT);
	cr_assert_eq(psvc_core_nfiles(c), 2);
	const struct psvc_core_file *libc = psvc_core_file_at(c, 1);
	cr_assert_str_eq(libc->path, "/usr/lib/libc.so.6");
	cr_assert(libc->deleted && libc->offset == 3 * 4096);
	cr_assert_str_eq(psvc_core_exe(c)->path, "/usr/bin/synth");
	/* memory: what is there, what was left out, what was never mapped */
	unsigned char buf[64], want[64];
	for (int i = 0; i < 64; i++)
		want[i] = (unsigned char)(0x40 + i);
	cr_assert_eq(psvc_core_read(c, A64_STACK + 0x100, buf, 64, NULL), 0);
	cr_assert_arr_eq(buf, want, 64);
	cr_assert_eq(psvc_core_read(c, A64_TEXT + 8, buf, 8, NULL), 0);
	cr_assert_eq(buf[0], (8 * 7) & 0xff);
	struct psvc_core_miss m;
	cr_assert_eq(psvc_core_read(c, A64_TEXT + 0xf8, buf, 16, &m), -ENODATA);
	cr_assert(m.kind == PSVC_CORE_MISS_LEFT_OUT && m.addr == A64_TEXT + 0x100);
	cr_assert_eq(psvc_core_read(c, A64_LIBC + 8, buf, 8, &m), -ENODATA);
	cr_assert(m.kind == PSVC_CORE_MISS_LEFT_OUT && m.path &&
		  !strcmp(m.path, "/usr/lib/libc.so.6"));
	cr_assert_eq(psvc_core_read(c, 0x500000, buf, 8, &m), -EFAULT);
	cr_assert_eq(m.kind, PSVC_CORE_MISS_UNMAPPED);
	struct psvc_map map;
	cr_assert_eq(psvc_core_map_lookup(c, A64_STACK + 0x10, &map, NULL), 0);
	cr_assert_str_eq(map.perms, "rw-p");
	cr_assert_eq(psvc_core_map_lookup(c, A64_TEXT, &map, NULL), 0);
	cr_assert_str_eq(map.perms, "r-xp");
	cr_assert_str_eq(map.path, "/usr/bin/synth");
}

Test(coresynth, aarch64_layouts_read_on_any_host)
{
	struct psvc_core *c;
	char why[256];
	cr_assert_eq(open_bytes(image, image_len, false, &c, why, sizeof why), 0,
		     "%s", why);
	check_aarch64(c);
	cr_assert_eq(psvc_core_nwarnings(c), 0);
	cr_assert_eq(open_bytes(image, image_len, true, &c, why, sizeof why), 0,
		     "%s", why);
	cr_assert_eq(psvc_core_zip(c), PSVC_CORE_ZSTD);
	check_aarch64(c);
}

/* ---- damage ---------------------------------------------------------------------- */

/* The offset of the first note of type (CORE or LINUX) in the copy. */
static size_t note_at(const unsigned char *p, uint32_t type)
{
	Elf64_Ehdr e;
	Elf64_Phdr ph;
	memcpy(&e, p, sizeof e);
	memcpy(&ph, p + e.e_phoff, sizeof ph);
	cr_assert_eq(ph.p_type, PT_NOTE);
	size_t off = ph.p_offset, end = off + ph.p_filesz;
	while (off + 12 <= end) {
		uint32_t h[3];
		memcpy(h, p + off, 12);
		if (h[2] == type)
			return off;
		off += 12 + ((h[0] + 3) & ~3u) + ((h[1] + 3) & ~3u);
	}
	cr_assert_fail("no note %#x", type);
	return 0;
}

static size_t desc_at(const unsigned char *p, uint32_t type)
{
	size_t off = note_at(p, type);
	uint32_t namesz;
	memcpy(&namesz, p + off, 4);
	return off + 12 + ((namesz + 3) & ~3u);
}

static Elf64_Phdr *phdr_at(unsigned char *p, size_t i)
{
	Elf64_Ehdr e;
	memcpy(&e, p, sizeof e);
	return (Elf64_Phdr *)(p + e.e_phoff + i * sizeof(Elf64_Phdr));
}

struct damage {
	const char *name;
	void (*apply)(unsigned char *p);
	int err;		/* what opening gives */
	const char *words;	/* in why[] (err) or in a warning (0) */
};

static void put32(unsigned char *p, uint32_t v) { memcpy(p, &v, 4); }
static void put64(unsigned char *p, uint64_t v) { memcpy(p, &v, 8); }

static void d_note_too_long(unsigned char *p)
{
	put32(p + note_at(p, NT_FPREGSET) + 4, 0xfffffff0u);
}
static void d_first_note_too_long(unsigned char *p)
{
	put32(p + note_at(p, NT_PRSTATUS) + 4, 0xffffffffu);
}
static void d_file_count(unsigned char *p)
{
	put64(p + desc_at(p, 0x46494c45), 1ull << 61);
}
static void d_file_page(unsigned char *p)
{
	put64(p + desc_at(p, 0x46494c45) + 8, 3);
}
static void d_file_inverted(unsigned char *p)
{
	size_t d = desc_at(p, 0x46494c45);
	put64(p + d + 16, 0x401000);	/* start above end */
}
static void d_overlap(unsigned char *p)
{
	phdr_at(p, 3)->p_vaddr = A64_STACK + 0x800;
}
static void d_wrap(unsigned char *p)
{
	phdr_at(p, 3)->p_vaddr = UINT64_MAX - 0x1000;
}
static void d_filesz(unsigned char *p)
{
	phdr_at(p, 1)->p_filesz = 1ull << 40;
	phdr_at(p, 1)->p_memsz = 0x1000;
}
static void d_offset_wraps(unsigned char *p)
{
	phdr_at(p, 2)->p_offset = UINT64_MAX - 8;
}
static void d_short_prstatus(unsigned char *p)
{
	/* the second thread's NT_PRSTATUS: only a TID, no registers; its
	 * note then claims less than it holds, so the rest read as notes */
	size_t off = note_at(p, NT_PRSTATUS);
	uint32_t h[3];
	memcpy(h, p + off, 12);
	off += 12 + ((h[0] + 3) & ~3u) + ((h[1] + 3) & ~3u);
	while (memcpy(h, p + off, 12), h[2] != NT_PRSTATUS)
		off += 12 + ((h[0] + 3) & ~3u) + ((h[1] + 3) & ~3u);
	put32(p + off + 4, 40);
}
static void d_riscv(unsigned char *p) { put32(p + 18, EM_RISCV); p[19] = 0; }
static void d_class32(unsigned char *p) { p[EI_CLASS] = ELFCLASS32; }
static void d_msb(unsigned char *p) { p[EI_DATA] = ELFDATA2MSB; p[16] = 0; p[17] = ET_CORE; }
static void d_exec(unsigned char *p) { p[16] = ET_EXEC; }
static void d_phnum(unsigned char *p) { ((Elf64_Ehdr *)p)->e_phnum = 0xfff0; }
static void d_phoff(unsigned char *p) { ((Elf64_Ehdr *)p)->e_phoff = UINT64_MAX - 16; }
static void d_no_notes(unsigned char *p) { phdr_at(p, 0)->p_type = PT_NULL; }

static const struct damage damages[] = {
	{ "a note that claims more bytes than there are", d_note_too_long, 0,
	  "claims" },
	{ "the first note claims 4 GiB", d_first_note_too_long, -EBADMSG,
	  "no thread" },
	{ "an NT_FILE count of 2^61", d_file_count, 0, "NT_FILE claims" },
	{ "an NT_FILE page size of 3", d_file_page, 0, "no page size" },
	{ "an NT_FILE entry that ends before it starts", d_file_inverted, 0,
	  "impossible range" },
	{ "overlapping segments", d_overlap, 0, "overlaps" },
	{ "a segment past the top of memory", d_wrap, 0, "wraps" },
	{ "more bytes in the file than in memory", d_filesz, 0, "excess" },
	{ "a file offset that wraps", d_offset_wraps, 0, "wraps" },
	{ "an NT_PRSTATUS without registers", d_short_prstatus, 0,
	  "registers unknown" },
	{ "a RISC-V core", d_riscv, -ENOEXEC, "RISC-V" },
	{ "a 32-bit core", d_class32, -ENOEXEC, "32-bit" },
	{ "a big-endian core", d_msb, -ENOEXEC, "big-endian" },
	{ "an executable", d_exec, -ENOEXEC, "not a core file" },
	{ "more program headers than the file", d_phnum, -EBADMSG, "" },
	{ "program headers past the end of memory", d_phoff, -EBADMSG, "" },
	{ "no notes", d_no_notes, -EBADMSG, "no thread" },
};

Test(coresynth, damaged_cores_give_reasons_never_crashes)
{
	unsigned char *copy = malloc(image_len);
	for (size_t i = 0; i < sizeof damages / sizeof *damages; i++) {
		const struct damage *d = &damages[i];
		for (int zstd = 0; zstd < 2; zstd++) {
			memcpy(copy, image, image_len);
			d->apply(copy);
			struct psvc_core *c = NULL;
			char why[256] = "";
			int err = open_bytes(copy, image_len, zstd, &c, why,
					     sizeof why);
			cr_assert_eq(err, d->err, "%s (%s): %d, not %d: %s",
				     d->name, zstd ? "zstd" : "plain", err,
				     d->err, why);
			if (err) {
				cr_assert(why[0] && strstr(why, d->words),
					  "%s: \"%s\"", d->name, why);
				cr_assert_null(c);
				continue;
			}
			cr_assert(warned(c, d->words), "%s (%s): no warning "
				  "saying \"%s\"", d->name, zstd ? "zstd" : "plain",
				  d->words);
			/* the rest of the core is still there */
			cr_assert(psvc_core_nthreads(c) >= 1);
			unsigned char b[64];
			psvc_core_read(c, A64_STACK + 0x100, b, 64, NULL);
		}
		while (ncores)
			psvc_core_close(cores[--ncores]);
	}
	free(copy);
}

/* Every possible cut of the file: the threads before it, never a crash. */
Test(coresynth, every_truncation)
{
	for (size_t n = 0; n <= image_len; n += n < 2048 ? 1 : 61) {
		struct psvc_core *c = NULL;
		char why[256] = "";
		for (int zstd = 0; zstd < 2; zstd++) {
			int err = open_bytes(image, n, zstd, &c, why, sizeof why);
			if (err) {
				cr_assert(why[0], "cut at %zu: no reason", n);
				continue;
			}
			cr_assert(psvc_core_nthreads(c) >= 1);
			unsigned char b[64];
			struct psvc_core_miss m;
			if (psvc_core_read(c, A64_STACK + 0x100, b, 64, &m))
				cr_assert(m.kind == PSVC_CORE_MISS_TRUNCATED ||
					  m.kind == PSVC_CORE_MISS_CORRUPT,
					  "cut at %zu: kind %d", n, m.kind);
			psvc_core_close(cores[--ncores]);
		}
	}
}
