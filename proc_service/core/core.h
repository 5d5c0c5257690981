/*
 * core (psvc_core_*): reading an ELF core file, for the core-file backend
 * of proc_service (tinspect --core).  Nothing here knows about ptrace or /proc.
 *
 * What is read from where
 *   - ELF header and program headers (libelf, PN_XNUM extended numbering
 *     included): ET_CORE, ELFCLASS64, little-endian, EM_X86_64 or
 *     EM_AARCH64; anything else is refused with -ENOEXEC and a reason.
 *     The layouts of both architectures are decoded on any host.
 *   - PT_NOTE segments (corenotes.c), walked note by note with every size
 *     checked: NT_PRSTATUS starts a thread (TID, pr_cursig, signal masks,
 *     general registers in the word layout of arch.h, the one the live
 *     code puts in psvc_task.gregs); the notes after it up to the next
 *     NT_PRSTATUS are that thread's: NT_FPREGSET, NT_X86_XSTATE,
 *     NT_ARM_TLS (the aarch64 thread pointer; x86_64 has fs_base in the
 *     registers), NT_SIGINFO.  Process-wide: NT_PRPSINFO, NT_AUXV, NT_FILE.
 *     Who writes NT_SIGINFO (checked on Debian 12, kernel 6.x, gdb 13.1):
 *     the kernel writes ONE, right after the first NT_PRSTATUS, which is
 *     the thread that took the fatal signal (fs/binfmt_elf.c puts the
 *     dumping thread first); every thread's pr_cursig is that signal.
 *     gcore writes one per thread (the signal gdb last saw it stop with,
 *     its own SIGSTOP for a live process: si_signo 19, SI_KERNEL), and
 *     pr_cursig 0.  gcore also writes NT_PRPSINFO first and its notes
 *     AFTER the memory (the kernel: right after the program headers).
 *   - Memory from PT_LOAD segments (coremem.c).  A byte is either read
 *     from the core or the read fails with a reason; it is never made up.
 *     Reasons: no segment and no NT_FILE mapping holds it (-EFAULT: not
 *     mapped); a segment or NT_FILE mapping holds it but the producer
 *     wrote no bytes for it (-ENODATA: p_filesz < p_memsz, coredump_filter,
 *     MADV_DONTDUMP, gcore's omission of read-only file mappings); the
 *     file ends before its bytes (-ENODATA: truncated); a compressed core
 *     whose streaming pass did not keep it (-ENODATA) or whose stream is
 *     corrupt before it (-EIO).  psvc_core_miss_str() words each.
 *
 * Lifetime: psvc_core_open() does all the work; the handle is then
 * immutable until psvc_core_close(), and every pointer it hands out
 * (threads, register notes, paths, warnings) lives exactly as long.
 * Reads never change it, so concurrent reads need no lock.  A plain core
 * is mapped (MAP_PRIVATE), never read into memory: only the pages the
 * caller touches are read from disk.  (Like libelf's own mapping, a file
 * truncated by someone else while it is open makes a touch of its lost
 * pages fault: a core file is not expected to change under its reader.)
 *
 * Compressed cores (corezip.c): zstd, xz and lz4 (frame) streams, as
 * systemd-coredump writes them, are recognised by their magic bytes and
 * decompressed in one streaming pass in chunks; neither the whole core
 * nor a decompressed copy is ever held in memory or on disk.  Kept:
 *   - the ELF header, the program headers and the notes (all of them);
 *   - per thread the window [sp - 128, sp + stack_bytes) of the segment
 *     that holds its sp, and the top stack_top_bytes of that segment
 *     (glibc's struct pthread and static TLS live at the top of the stacks
 *     it allocates; the initial thread's top holds auxv and environment);
 *   - of everything else, at most `budget` bytes, in this order: writable
 *     file-backed segments and the anonymous one right after a file-backed
 *     one (.data, .bss, relro: where locks and libc's tables live), other
 *     writable anonymous segments (heap, arenas), smallest first,
 *     read-only ones (also in the ELF files), the rest of the stack
 *     segments; the segment that does not fit whole is kept from its start.
 * Kept memory is held in 4 KiB blocks and a block of zeros takes no
 * memory (untouched stack pages are zeros), so what is used is usually far
 * below what is kept.  When the notes come after the memory (gcore), the
 * plan needs them first: the stream is then decompressed twice, the first
 * time keeping only the notes (more time, the same memory).  A read of
 * memory not kept fails with -ENODATA and a reason naming the compression
 * and the budget.  A stream that ends early or is corrupt keeps what came
 * before: reads past that point fail with the offset.
 *
 * The functions a backend calls: psvc_core_open/close; psvc_core_arch;
 * psvc_core_nthreads/thread_at/thread_by_tid (ps_lgetregs, the thread
 * pointer for ps_get_thread_area, ps_lgetfpregs); psvc_core_read and
 * psvc_core_extent (ps_pdread, stack copies); psvc_core_map_lookup (stack
 * bounds, in the shape of psvc_map_lookup); psvc_core_nfiles/file_at and
 * psvc_core_auxv (the module map: AT_PHDR, AT_BASE, AT_SYSINFO_EHDR, then
 * r_debug from memory, cross-checked with NT_FILE); psvc_core_proc
 * (pid, ppid, uid, fname, psargs for the report); psvc_core_warning_at.
 *
 * Errors are negative errno values: -ENOEXEC (not a core tinspect can
 * read: another type, class, byte order or machine), -EBADMSG (headers or
 * notes too damaged to use), -EOPNOTSUPP (a compression tinspect does not
 * read), -EIO, -ENOMEM, and open(2)'s own; then why[] says what.  Damage
 * that spoils one datum (a short note, an absurd NT_FILE count, an
 * overlapping segment) leaves that datum unknown and adds a warning.
 */
#ifndef TINSPECT_PSVC_CORE_H
#define TINSPECT_PSVC_CORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "arch.h"
#include "psvc.h"

struct psvc_core;

enum psvc_core_zip {
	PSVC_CORE_PLAIN = 0,
	PSVC_CORE_ZSTD,
	PSVC_CORE_XZ,
	PSVC_CORE_LZ4,
};

/* Who wrote the core, from the shape of its notes. */
enum psvc_core_producer {
	PSVC_CORE_BY_UNKNOWN = 0,
	PSVC_CORE_BY_KERNEL,	/* NT_PRSTATUS first, notes before memory */
	PSVC_CORE_BY_GDB,	/* gcore: NT_PRPSINFO first, a "GDB" note */
};

#define PSVC_CORE_STACK_BYTES (64u * 1024)
#define PSVC_CORE_STACK_BELOW 128u	/* red zone kept below sp */
#define PSVC_CORE_BUDGET (128ull << 20)
#define PSVC_CORE_MAX_NOTES (1ull << 30)

/* Zero fields take the defaults. */
struct psvc_core_opts {
	/* compressed cores: bytes kept from sp up (PSVC_CORE_STACK_BYTES) */
	uint64_t stack_bytes;
	/* compressed cores: bytes kept at the top of each stack segment
	 * (PSVC_CORE_STACK_BYTES) */
	uint64_t stack_top_bytes;
	/* compressed cores: bytes of all other memory kept (PSVC_CORE_BUDGET) */
	uint64_t budget;
	/* notes (all PT_NOTE segments) larger than this are refused
	 * (PSVC_CORE_MAX_NOTES); a compressed core holds them in memory */
	uint64_t max_note_bytes;
};

/*
 * Open the core at path (opened only if it is a regular file), plain or
 * compressed, and read everything described above.  0 and *ret, or a
 * negative errno with why[] saying what (why may be NULL).
 */
int psvc_core_open(const char *path, const struct psvc_core_opts *opts,
		   struct psvc_core **ret, char *why, size_t whylen);
/* The same over an open descriptor, which it takes (closed on failure
 * too).  The descriptor must be a regular file. */
int psvc_core_open_fd(int fd, const struct psvc_core_opts *opts,
		      struct psvc_core **ret, char *why, size_t whylen);
/* NULL is fine. */
void psvc_core_close(struct psvc_core *c);

const struct arch_desc *psvc_core_arch(const struct psvc_core *c);
enum psvc_core_zip psvc_core_zip(const struct psvc_core *c);
/* "plain", "zstd", "xz", "lz4" */
const char *psvc_core_zip_name(enum psvc_core_zip z);
enum psvc_core_producer psvc_core_producer(const struct psvc_core *c);
/* How large the core is, by what says so. */
struct psvc_core_sizes {
	/* the (uncompressed) core as far as it could be read (plain:
	 * st_size; compressed: the bytes the stream gave), and the size its
	 * program headers say it has: less means truncated */
	uint64_t file, expected;
	/* a compressed core: the memory it holds (kept, non-zero blocks),
	 * and the bytes it was decompressed to over its passes (at most what
	 * its headers describe, twice when its notes lie at its end); 0 for a
	 * plain core */
	uint64_t kept, unzipped;
};
const struct psvc_core_sizes *psvc_core_sizes(const struct psvc_core *c);

/* Damage that made some datum unknown, in the order it was met. */
size_t psvc_core_nwarnings(const struct psvc_core *c);
const char *psvc_core_warning_at(const struct psvc_core *c, size_t i);

/* ---- threads (NT_PRSTATUS and the notes after it) --------------------- */

struct psvc_core_siginfo {
	int signo, err, code;	/* si_signo, si_errno, si_code */
	/* si_addr for SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGTRAP (the fault
	 * address) and si_code > 0; the sender for si_code <= 0 (a kill,
	 * tkill, sigqueue: SI_USER, SI_TKILL, SI_QUEUE) */
	bool have_addr, have_sender;
	uint64_t addr;
	pid_t sender_pid;
	uint32_t sender_uid;
};

struct psvc_core_thread {
	pid_t tid;		/* pr_pid */
	int cursig;		/* pr_cursig */
	uint64_t sigpend, sighold;
	/* kernel cores: the thread's CPU times (gcore writes zeros) */
	uint64_t utime_us, stime_us;
	bool have_regs;		/* the note holds this arch's pr_reg */
	uint64_t gregs[ARCH_MAX_GREGS];	/* arch.h layout, as psvc_task */
	bool have_tp;		/* x86_64: fs_base; aarch64: NT_ARM_TLS */
	uint64_t tp;
	/* aarch64: NT_ARM_SYSTEM_CALL, the kernel's syscallno (-1: none) */
	bool have_syscallno;
	int32_t syscallno;
	/* raw register notes, NULL/0 if absent; they live in the handle */
	const void *fpregs;	/* NT_FPREGSET (x86_64 fxsave, aarch64
				 * user_fpsimd_state) */
	size_t fpregs_len;
	const void *xstate;	/* NT_X86_XSTATE */
	size_t xstate_len;
	/* arch_desc.fp_alt_note (aarch64 NT_ARM_SVE), and fpregs made from
	 * it when NT_FPREGSET is missing (then owned here) */
	const void *fp_alt;
	size_t fp_alt_len;
	void *fpregs_made;
	bool have_siginfo;	/* an NT_SIGINFO followed its NT_PRSTATUS */
	struct psvc_core_siginfo si;
};

size_t psvc_core_nthreads(const struct psvc_core *c);
/* In note order (the kernel and gdb put the thread that took the signal,
 * or gdb's selected thread, first). */
const struct psvc_core_thread *psvc_core_thread_at(const struct psvc_core *c,
						   size_t i);
/* The first thread with that TID, or NULL. */
const struct psvc_core_thread *psvc_core_thread_by_tid(const struct psvc_core *c,
						       pid_t tid);
/*
 * The thread that took the signal that made the core, or NULL: a kernel
 * core's thread with the NT_SIGINFO (the first); for gcore, which dumps a
 * process that did not crash, none (NULL) unless pr_cursig says one.
 */
const struct psvc_core_thread *psvc_core_signalled_thread(const struct psvc_core *c);

/* ---- the process (NT_PRPSINFO, NT_AUXV) --------------------------------- */

struct psvc_core_proc {
	bool have_psinfo;	/* an NT_PRPSINFO of the right size */
	pid_t pid, ppid, pgrp, sid;
	uint32_t uid, gid;
	char sname;		/* pr_sname: R S D T Z ... (raw byte) */
	uint64_t flags;		/* pr_flag */
	char fname[17];		/* pr_fname: raw bytes, NUL-terminated */
	char psargs[81];	/* pr_psargs: the first 80 bytes of the
				 * command line, arguments joined by blanks
				 * (by the producer), trailing blanks cut */
};
const struct psvc_core_proc *psvc_core_proc(const struct psvc_core *c);

/* The value of auxv entry type (AT_PHDR...): 0, or -ENOENT. */
int psvc_core_auxv(const struct psvc_core *c, uint64_t type, uint64_t *ret);
/* The whole vector as (type, value) pairs up to AT_NULL; returns the
 * number of pairs. */
size_t psvc_core_auxv_vec(const struct psvc_core *c, const uint64_t **ret);

/* ---- mapped files (NT_FILE) ---------------------------------------------- */

struct psvc_core_file {
	uint64_t start, end;	/* [start, end) */
	uint64_t offset;	/* file offset in bytes (page index * page size) */
	const char *path;	/* as the producer wrote it, " (deleted)" cut */
	bool deleted;		/* it ended in " (deleted)" */
};
size_t psvc_core_nfiles(const struct psvc_core *c);
const struct psvc_core_file *psvc_core_file_at(const struct psvc_core *c,
					       size_t i);
/* The NT_FILE mapping that holds addr, or NULL. */
const struct psvc_core_file *psvc_core_file_for_addr(const struct psvc_core *c,
						     uint64_t addr);
/* The executable: the NT_FILE mapping holding AT_PHDR (else AT_ENTRY);
 * NULL if neither is known. */
const struct psvc_core_file *psvc_core_exe(const struct psvc_core *c);

/* ---- memory ---------------------------------------------------------------- */

enum psvc_core_miss_kind {
	PSVC_CORE_MISS_NONE = 0,
	PSVC_CORE_MISS_UNMAPPED,	/* -EFAULT: not mapped at the dump */
	PSVC_CORE_MISS_NO_ACCESS,	/* -EFAULT: mapped without read
					 * permission (PROT_NONE) */
	PSVC_CORE_MISS_LEFT_OUT,	/* -ENODATA: mapped, not written */
	PSVC_CORE_MISS_TRUNCATED,	/* -ENODATA: the file ends first */
	PSVC_CORE_MISS_NOT_KEPT,	/* -ENODATA: compressed, not kept */
	PSVC_CORE_MISS_CORRUPT,		/* -EIO: compressed stream broken */
};

/* Why a read failed: the first byte that could not be read, and what. */
struct psvc_core_miss {
	enum psvc_core_miss_kind kind;
	uint64_t addr;
	uint64_t seg_start, seg_end;	/* the segment or NT_FILE mapping
					 * holding addr (0, 0 if none) */
	uint64_t file_offset;		/* TRUNCATED, CORRUPT: where the
					 * (uncompressed) core ends or breaks */
	const char *path;		/* NT_FILE path of the mapping, or NULL */
};

/*
 * Read exactly len bytes at addr.  0, or a negative errno (above) and, if
 * ret_miss is not NULL, why.  Never zeros for bytes the core lacks.
 */
int psvc_core_read(const struct psvc_core *c, uint64_t addr, void *buf,
		   size_t len, struct psvc_core_miss *ret_miss);
/* "not in the core: left out by its producer (coredump_filter, ...)": one
 * line for a miss, into buf (always NUL-terminated). */
void psvc_core_miss_str(const struct psvc_core *c,
			const struct psvc_core_miss *m, char *buf, size_t len);
/* How many bytes from addr (at most len) read in one run. */
uint64_t psvc_core_extent(const struct psvc_core *c, uint64_t addr,
			  uint64_t len);

/* One mapping of the process as the core knows it. */
struct psvc_core_map {
	/* The live shape: perms from p_flags ("r-xp"; a core does not say
	 * whether a mapping was shared, so the fourth is always 'p'),
	 * path and offset from the NT_FILE mapping holding its start. */
	struct psvc_map map;
	bool segment;		/* a PT_LOAD describes it; false: only NT_FILE
				 * lists it (gcore leaves read-only file
				 * mappings out), perms "----" unknown */
	uint64_t in_core;	/* bytes from its start the core holds */
};
/* Every segment, and every part of an NT_FILE mapping no segment covers,
 * in address order. */
size_t psvc_core_nmaps(const struct psvc_core *c);
const struct psvc_core_map *psvc_core_map_at(const struct psvc_core *c,
					     size_t i);
/*
 * As psvc_map_lookup(): the mapping that holds addr and the one just
 * below it (ret_below may be NULL; its start is 0 if there is none).
 * -ENOENT if no mapping holds addr.
 */
int psvc_core_map_lookup(const struct psvc_core *c, uint64_t addr,
			 struct psvc_map *ret, struct psvc_map *ret_below);

#endif
