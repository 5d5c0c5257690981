/*
 * corenotes.c: the notes of a core, one by one.  An NT_PRSTATUS starts a
 * thread, and the register notes after it (up to the next NT_PRSTATUS)
 * are that thread's: that is how the kernel (fs/binfmt_elf.c,
 * write_note_info) and gdb (linux-tdep.c, linux_corefile_thread) both
 * write them.  NT_PRPSINFO, NT_AUXV and NT_FILE describe the process.
 *
 * The structures are decoded from their byte offsets, not from the host's
 * headers: x86_64 and aarch64 share struct elf_prstatus up to pr_reg and
 * struct elf_prpsinfo entirely (include/uapi/linux/elfcore.h, both LP64),
 * so an aarch64 core reads on an x86_64 host and the other way round.
 * Every size is checked before a byte is read; a note that is too short
 * for what it should hold makes its datum unknown, with a warning.
 */
#include "core_int.h"
#include "psvc_int.h"

#include "array.h"

#include <elf.h>
#include <endian.h>
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

/* struct elf_prstatus (64-bit): elf_siginfo {signo, code, errno}, short
 * pr_cursig, then longs and pid_ts, four struct timevals, pr_reg. */
#define PRS_CURSIG 12
#define PRS_SIGPEND 16
#define PRS_SIGHOLD 24
#define PRS_PID 32
#define PRS_UTIME 48
#define PRS_STIME 64
#define PRS_REG 112
/* struct elf_prpsinfo (64-bit) */
#define PRPS_SNAME 1
#define PRPS_FLAG 8
#define PRPS_UID 16
#define PRPS_GID 20
#define PRPS_PID 24
#define PRPS_PPID 28
#define PRPS_PGRP 32
#define PRPS_SID 36
#define PRPS_FNAME 40
#define PRPS_PSARGS 56
#define PRPS_SIZE 136
/* siginfo_t: si_signo, si_errno, si_code, then the union at 16 */
#define SI_UNION 16
#define SI_MIN 24

#ifndef NT_X86_XSTATE
#define NT_X86_XSTATE 0x202
#endif
#ifndef NT_SIGINFO
#define NT_SIGINFO 0x53494749
#endif
#ifndef NT_FILE
#define NT_FILE 0x46494c45
#endif

static uint64_t get64(const unsigned char *p)
{
	uint64_t v;
	memcpy(&v, p, sizeof v);
	return le64toh(v);
}

static uint32_t get32(const unsigned char *p)
{
	uint32_t v;
	memcpy(&v, p, sizeof v);
	return le32toh(v);
}

static uint16_t get16(const unsigned char *p)
{
	uint16_t v;
	memcpy(&v, p, sizeof v);
	return le16toh(v);
}

struct note {
	uint32_t type;
	const char *owner;	/* "CORE", "LINUX", "GDB", or NULL */
	const unsigned char *desc;
	uint64_t size;
	uint64_t offset;	/* of its header, in the note segment */
};

static const char *note_name(uint32_t type)
{
	switch (type) {
	case NT_PRSTATUS: return "NT_PRSTATUS";
	case NT_PRPSINFO: return "NT_PRPSINFO";
	case NT_FPREGSET: return "NT_FPREGSET";
	case NT_AUXV: return "NT_AUXV";
	case NT_SIGINFO: return "NT_SIGINFO";
	case NT_FILE: return "NT_FILE";
	case NT_X86_XSTATE: return "NT_X86_XSTATE";
	case NT_ARM_TLS: return "NT_ARM_TLS";
	case NT_ARM_SYSTEM_CALL: return "NT_ARM_SYSTEM_CALL";
	default: return "note";
	}
}

/* The thread the last NT_PRSTATUS started, or NULL (and a warning). */
static struct psvc_core_thread *cur_thread(struct psvc_core *c, long cur,
					   const struct note *n)
{
	if (cur < 0) {
		psvc_core_warn(c, "%s at note offset %#" PRIx64 " before any "
			  "NT_PRSTATUS: no thread to give it to", note_name(n->type),
			  n->offset);
		return NULL;
	}
	return &c->threads[cur];
}

static int prstatus(struct psvc_core *c, const struct note *n, long *cur)
{
	if (n->size < PRS_PID + 4) {
		psvc_core_warn(c, "NT_PRSTATUS at note offset %#" PRIx64 " has %" PRIu64
			  " bytes: not even a TID", n->offset, n->size);
		*cur = -1;	/* its register notes have no owner */
		return 0;
	}
	if (array_grow(&c->threads, &c->threads_cap, c->nthreads + 1,
		       sizeof *c->threads, 16))
		return -ENOMEM;
	struct psvc_core_thread *t = &c->threads[c->nthreads];
	memset(t, 0, sizeof *t);
	const unsigned char *d = n->desc;
	t->tid = (pid_t)get32(d + PRS_PID);
	t->cursig = (int16_t)get16(d + PRS_CURSIG);
	t->sigpend = get64(d + PRS_SIGPEND);
	t->sighold = get64(d + PRS_SIGHOLD);
	if (n->size >= PRS_STIME + 16) {
		/* struct timeval {long tv_sec, tv_usec}: saturate garbage */
		uint64_t s = get64(d + PRS_UTIME), u = get64(d + PRS_UTIME + 8);
		uint64_t v;
		t->utime_us = psvc_mul_ok(s, 1000000, &v) &&
			      psvc_add_ok(v, u, &v) ? v : UINT64_MAX;
		s = get64(d + PRS_STIME);
		u = get64(d + PRS_STIME + 8);
		t->stime_us = psvc_mul_ok(s, 1000000, &v) &&
			      psvc_add_ok(v, u, &v) ? v : UINT64_MAX;
	}
	uint64_t need = PRS_REG + (uint64_t)c->arch->ngregs * 8;
	if (n->size >= need) {
		for (unsigned i = 0; i < c->arch->ngregs; i++)
			t->gregs[i] = get64(d + PRS_REG + 8 * i);
		t->have_regs = true;
		if (c->arch->tp_greg_idx >= 0) {
			t->tp = t->gregs[c->arch->tp_greg_idx];
			t->have_tp = true;
		}
	} else {
		psvc_core_warn(c, "NT_PRSTATUS of thread %d has %" PRIu64 " bytes, "
			  "not the %s layout (%" PRIu64 "): registers unknown",
			  (int)t->tid, n->size, c->arch->name, need + 8);
	}
	*cur = (long)c->nthreads++;
	return 0;
}

/* A fixed-size char array of the note: up to its first NUL. */
static void copy_field(char *out, size_t cap, const unsigned char *in,
		       size_t len)
{
	size_t i;
	for (i = 0; i < len && i + 1 < cap && in[i]; i++)
		out[i] = (char)in[i];
	out[i] = '\0';
}

static void prpsinfo(struct psvc_core *c, const struct note *n)
{
	if (c->proc.have_psinfo) {
		psvc_core_warn(c, "a second NT_PRPSINFO at note offset %#" PRIx64
			  ": ignored", n->offset);
		return;
	}
	if (n->size < PRPS_SIZE) {
		psvc_core_warn(c, "NT_PRPSINFO has %" PRIu64 " bytes, not %d: the "
			  "process facts are unknown", n->size, PRPS_SIZE);
		return;
	}
	const unsigned char *d = n->desc;
	struct psvc_core_proc *p = &c->proc;
	p->have_psinfo = true;
	p->sname = (char)d[PRPS_SNAME];
	p->flags = get64(d + PRPS_FLAG);
	p->uid = get32(d + PRPS_UID);
	p->gid = get32(d + PRPS_GID);
	p->pid = (pid_t)get32(d + PRPS_PID);
	p->ppid = (pid_t)get32(d + PRPS_PPID);
	p->pgrp = (pid_t)get32(d + PRPS_PGRP);
	p->sid = (pid_t)get32(d + PRPS_SID);
	copy_field(p->fname, sizeof p->fname, d + PRPS_FNAME, 16);
	copy_field(p->psargs, sizeof p->psargs, d + PRPS_PSARGS, 80);
	/* the kernel turns the last argument's NUL into a blank too
	 * (fs/binfmt_elf.c, fill_psinfo) */
	size_t l = strlen(p->psargs);
	while (l && p->psargs[l - 1] == ' ')
		p->psargs[--l] = '\0';
}

/* Signals whose si_addr is the faulting address (siginfo(2)). */
static bool fault_signal(int sig)
{
	return sig == SIGSEGV || sig == SIGBUS || sig == SIGILL ||
	       sig == SIGFPE || sig == SIGTRAP;
}

static void siginfo(struct psvc_core *c, const struct note *n, long cur)
{
	struct psvc_core_thread *t = cur_thread(c, cur, n);
	if (!t)
		return;
	if (t->have_siginfo) {
		psvc_core_warn(c, "a second NT_SIGINFO for thread %d: ignored",
			  (int)t->tid);
		return;
	}
	if (n->size < SI_MIN) {
		psvc_core_warn(c, "NT_SIGINFO of thread %d has %" PRIu64 " bytes: "
			  "unknown", (int)t->tid, n->size);
		return;
	}
	const unsigned char *d = n->desc;
	struct psvc_core_siginfo *si = &t->si;
	si->signo = (int)get32(d);
	si->err = (int)get32(d + 4);
	si->code = (int)get32(d + 8);
	if (si->code <= 0) {
		/* SI_USER, SI_QUEUE, SI_TKILL...: the sender is in _kill */
		si->have_sender = true;
		si->sender_pid = (pid_t)get32(d + SI_UNION);
		si->sender_uid = get32(d + SI_UNION + 4);
	} else if (fault_signal(si->signo) && si->code != 0x80) {
		/* a fault the kernel raised with an address (SI_KERNEL has
		 * none: a general protection fault, say) */
		si->have_addr = true;
		si->addr = get64(d + SI_UNION);
	}
	t->have_siginfo = true;
}

static int auxv(struct psvc_core *c, const struct note *n)
{
	if (c->auxv) {
		psvc_core_warn(c, "a second NT_AUXV: ignored");
		return 0;
	}
	if (n->size % 16)
		psvc_core_warn(c, "NT_AUXV of %" PRIu64 " bytes is not whole pairs: "
			  "the last %" PRIu64 " ignored", n->size, n->size % 16);
	size_t pairs = (size_t)(n->size / 16), k;
	for (k = 0; k < pairs; k++)
		if (get64(n->desc + 16 * k) == AT_NULL)
			break;
	if (k == pairs && pairs)
		psvc_core_warn(c, "NT_AUXV has no AT_NULL: read to its end");
	c->auxv = malloc((k ? k : 1) * 16);
	if (!c->auxv)
		return -ENOMEM;
	for (size_t i = 0; i < 2 * k; i++)
		c->auxv[i] = get64(n->desc + 8 * i);
	c->nauxv = k;
	return 0;
}

/*
 * NT_FILE (fs/binfmt_elf.c, fill_files_note): u64 count, u64 page size,
 * count x {start, end, page offset}, then count NUL-terminated paths.
 * A count the note cannot hold, a page size that is no page size: the
 * whole list is unknown (its numbers cannot be trusted for any entry).
 */
static int file_note(struct psvc_core *c, const struct note *n)
{
	if (c->files) {
		psvc_core_warn(c, "a second NT_FILE: ignored");
		return 0;
	}
	if (n->size < 16) {
		psvc_core_warn(c, "NT_FILE of %" PRIu64 " bytes: the mapped files "
			  "are unknown", n->size);
		return 0;
	}
	uint64_t count = get64(n->desc), page = get64(n->desc + 8), tbl;
	if (!psvc_mul_ok(count, 24, &tbl) || tbl > n->size - 16) {
		psvc_core_warn(c, "NT_FILE claims %" PRIu64 " files, its %" PRIu64
			  " bytes hold at most %" PRIu64 ": the mapped files "
			  "are unknown", count, n->size, (n->size - 16) / 24);
		return 0;
	}
	/* the kernel writes PAGE_SIZE and offsets in pages, gdb 1 and
	 * offsets in bytes (linux-tdep.c, linux_make_mappings_corefile_notes) */
	if (page == 0 || page > (1u << 30) || (page & (page - 1))) {
		psvc_core_warn(c, "NT_FILE page size %" PRIu64 " is no page size: "
			  "the mapped files are unknown", page);
		return 0;
	}
	if (!count)
		return 0;
	const unsigned char *names = n->desc + 16 + tbl;
	size_t names_len = (size_t)(n->size - 16 - tbl);
	c->files = calloc((size_t)count, sizeof *c->files);
	/* every path, NUL-terminated even where the note's last one is not */
	c->file_names = malloc(names_len + 1);
	if (!c->files || !c->file_names)
		return -ENOMEM;
	memcpy(c->file_names, names, names_len);
	c->file_names[names_len] = '\0';
	c->page_size = page;
	size_t pos = 0, nbad = 0;
	for (uint64_t i = 0; i < count; i++) {
		const unsigned char *e = n->desc + 16 + 24 * i;
		uint64_t start = get64(e), end = get64(e + 8), pg = get64(e + 16);
		char *path = NULL;
		if (pos < names_len) {
			path = c->file_names + pos;
			pos += strlen(path) + 1;
		}
		uint64_t off, last;
		if (!path || start >= end || end - start > PSVC_CORE_MAX_MAPPING ||
		    !psvc_mul_ok(pg, page, &off) ||
		    !psvc_add_ok(off, end - start, &last)) {
			nbad++;
			continue;
		}
		bool deleted = false;
		size_t len = strlen(path);
		static const char del[] = " (deleted)";
		if (len > sizeof del - 1 &&
		    !strcmp(path + len - (sizeof del - 1), del)) {
			path[len - (sizeof del - 1)] = '\0';
			deleted = true;
		}
		c->files[c->nfiles++] = (struct psvc_core_file){
			start, end, off, path, deleted };
	}
	if (nbad)
		psvc_core_warn(c, "NT_FILE: %zu of its %" PRIu64 " entries have no "
			  "path or an impossible range: left out", nbad, count);
	return 0;
}

static int dispatch(struct psvc_core *c, const struct note *n, long *cur,
		    bool first)
{
	bool core = n->owner && !strcmp(n->owner, "CORE");
	bool linux_ = n->owner && !strcmp(n->owner, "LINUX");
	struct psvc_core_thread *t;
	if (n->owner && !strcmp(n->owner, "GDB")) {
		c->seen_gdb_note = true;
		return 0;
	}
	if (core) {
		switch (n->type) {
		case NT_PRSTATUS:
			return prstatus(c, n, cur);
		case NT_PRPSINFO:
			if (first)
				c->seen_psinfo_first = true;
			prpsinfo(c, n);
			return 0;
		case NT_AUXV:
			return auxv(c, n);
		case NT_FILE:
			return file_note(c, n);
		case NT_SIGINFO:
			siginfo(c, n, *cur);
			return 0;
		case NT_FPREGSET:
			if ((t = cur_thread(c, *cur, n)) && !t->fpregs) {
				t->fpregs = n->desc;
				t->fpregs_len = (size_t)n->size;
			}
			return 0;
		}
		return 0;
	}
	if (!linux_)
		return 0;
	if (c->arch->fp_alt_note && n->type == c->arch->fp_alt_note) {
		if ((t = cur_thread(c, *cur, n)) && !t->fp_alt) {
			t->fp_alt = n->desc;
			t->fp_alt_len = (size_t)n->size;
		}
	} else if (c->arch->xstate_note && n->type == c->arch->xstate_note) {
		if ((t = cur_thread(c, *cur, n)) && !t->xstate) {
			t->xstate = n->desc;
			t->xstate_len = (size_t)n->size;
		}
	} else if (c->arch->tp_regset && n->type == c->arch->tp_regset) {
		if (!(t = cur_thread(c, *cur, n)))
			return 0;
		if (n->size < 8) {
			psvc_core_warn(c, "NT_ARM_TLS of thread %d has %" PRIu64
				  " bytes: thread pointer unknown",
				  (int)t->tid, n->size);
		} else if (!t->have_tp) {
			/* TPIDR_EL0 (docs/GLIBC.md §4); newer kernels add
			 * TPIDR2_EL0 after it */
			t->tp = get64(n->desc);
			t->have_tp = true;
		}
	} else if (c->arch->syscall_note && n->type == c->arch->syscall_note) {
		if (!(t = cur_thread(c, *cur, n)))
			return 0;
		if (n->size < 4) {
			psvc_core_warn(c, "NT_ARM_SYSTEM_CALL of thread %d has %"
				  PRIu64 " bytes: ignored", (int)t->tid, n->size);
		} else if (!t->have_syscallno) {
			/* pt_regs->syscallno, an int: -1 when the thread is
			 * not in a system call (docs/ARCH.md) */
			t->syscallno = (int32_t)get32(n->desc);
			t->have_syscallno = true;
		}
	}
	return 0;
}

static const char *owner_of(const unsigned char *name, uint32_t namesz)
{
	static const char *const known[] = { "CORE", "LINUX", "GDB" };
	for (size_t i = 0; i < sizeof known / sizeof *known; i++) {
		size_t l = strlen(known[i]);
		if (namesz == l + 1 && !memcmp(name, known[i], l + 1))
			return known[i];
	}
	return NULL;
}

int psvc_core_notes_parse(struct psvc_core *c, const unsigned char *p, size_t len,
		     bool align8, bool cut)
{
	/* the note header is 4-byte words; its name and descriptor are
	 * padded to 4 bytes (8 in an 8-aligned segment, as libelf's
	 * ELF_T_NHDR8 reads them) */
	const uint64_t al = align8 ? 8 : 4;
	uint64_t off = 0;
	long cur = -1;
	bool first = c->nthreads == 0 && !c->proc.have_psinfo && !c->auxv;
	while (off < len) {
		if (len - off < 12) {
			if (!cut)
				psvc_core_warn(c, "%" PRIu64 " stray bytes at the end "
					  "of a note segment", len - off);
			break;
		}
		uint32_t namesz = get32(p + off), descsz = get32(p + off + 4);
		uint32_t type = get32(p + off + 8);
		uint64_t name_off = off + 12, desc_off, next;
		/* 64-bit sums of 32-bit sizes cannot wrap */
		desc_off = (name_off + namesz + al - 1) & ~(al - 1);
		next = (desc_off + descsz + al - 1) & ~(al - 1);
		if (desc_off + descsz > len) {
			if (cut)
				psvc_core_warn(c, "the notes are cut at the end of the "
					  "file (truncated core): the notes from "
					  "offset %#" PRIx64 " on are missing", off);
			else
				psvc_core_warn(c, "%s at note offset %#" PRIx64 " claims "
					  "%" PRIu32 " + %" PRIu32 " bytes, the segment "
					  "has %" PRIu64 " left: the notes from there "
					  "on are unreadable", note_name(type), off,
					  namesz, descsz, (uint64_t)len - off);
			break;
		}
		struct note n = { type, owner_of(p + name_off, namesz),
				  p + desc_off, descsz, off };
		int err = dispatch(c, &n, &cur, first);
		if (err)
			return err;
		first = false;
		off = next;
	}
	return 0;
}

void psvc_core_notes_done(struct psvc_core *c)
{
	if (c->seen_gdb_note || c->seen_psinfo_first)
		c->producer = PSVC_CORE_BY_GDB;
	else if (c->nthreads)
		c->producer = PSVC_CORE_BY_KERNEL;
	/* gdb copies NT_FILE's paths from /proc/PID/maps, escaped as the
	 * kernel prints them there (linux-tdep.c,
	 * linux_make_mappings_corefile_notes); the kernel's own core has
	 * the names as they are (fill_files_note) */
	for (size_t i = 0; c->producer == PSVC_CORE_BY_GDB && i < c->nfiles; i++)
		if (c->files[i].path)
			psvc_maps_unescape((char *)c->files[i].path);
	/* gdb on an aarch64 CPU with SVE writes NT_ARM_SVE instead of
	 * NT_FPREGSET (aarch64-linux-tdep.c): the same registers, read from
	 * there (arch_desc.fpregs_from_alt) */
	for (size_t i = 0; c->arch->fpregs_from_alt && i < c->nthreads; i++) {
		struct psvc_core_thread *t = &c->threads[i];
		if (t->fpregs || !t->fp_alt)
			continue;
		void *buf = malloc(1024);
		int n = buf ? c->arch->fpregs_from_alt(t->fp_alt, t->fp_alt_len, buf, 1024)
			    : -ENOMEM;
		if (n > 0) {
			t->fpregs = t->fpregs_made = buf;
			t->fpregs_len = (size_t)n;
		} else {
			free(buf);
		}
	}
	c->signalled = -1;
	for (size_t i = 0; i < c->nthreads; i++) {
		const struct psvc_core_thread *t = &c->threads[i];
		/* the kernel: its one NT_SIGINFO goes with the dumping thread;
		 * gcore: only a thread gdb says stopped with a signal */
		if (c->producer == PSVC_CORE_BY_KERNEL ? t->have_siginfo
						       : t->cursig != 0) {
			c->signalled = (long)i;
			break;
		}
	}
}
