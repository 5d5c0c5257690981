/*
 * Private to proc_service/ (all its rooms): the layout of struct
 * psvc_target and the helpers its files share, by file.  Nothing outside
 * this directory (but the unit tests and the fuzz targets) includes it.
 * The seam between the target and the ways of reaching it is backend.h.
 */
#ifndef TINSPECT_PSVC_INT_H
#define TINSPECT_PSVC_INT_H

#include "psvc.h"
#include "backend.h"

#include <elf.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <time.h>

/* say.c: warnings, each a string of its own, in the order given. */
struct psvc_warnings {
	char **v;
	size_t n, cap;
};

/* tidmap.c: an open-addressing map from a nonzero 64-bit key to a 32-bit
 * value, and the map from a TID over it. */
struct psvc_keymap {
	uint64_t *keys;		/* 0 = empty */
	uint32_t *vals;
	size_t cap;		/* power of two, or 0 */
	size_t n;
};
struct psvc_tidmap {
	struct psvc_keymap map;
};

/* One cached page of target memory, valid for one stop. */
struct page_slot {
	uint64_t pageno;	/* page address >> PAGE_SHIFT, +1 (0 = empty) */
	unsigned char *data;	/* NULL: known unreadable */
};

/* Pages come from big chunks, mapped and pre-faulted before the stop when
 * their size can be foreseen, and unmapped together: page faults in
 * tinspect's own buffers would otherwise land inside the freeze. */
struct arena_chunk {
	unsigned char *base;
	size_t nblocks, used;
};

struct mem_cache {
	struct page_slot *slots;
	size_t cap, n;		/* cap is a power of two */
	struct arena_chunk *chunks;	/* the last one is the open one */
	size_t nchunks, chunks_cap;
};

/* One mapping of the address space (the backend's maps op). */
struct psvc_mapping {
	uint64_t start, end, offset;
	dev_t dev;
	ino_t ino;
	char perms[5];
	char *path;		/* NULL for anonymous */
	bool deleted;
};

/* memruns.c: exact copies (see there) */
struct psvc_xrun {
	uint64_t addr;
	uint32_t len;
	uint32_t chunk;		/* kept runs: index of the arena chunk */
	unsigned char *data;
};
struct runs_set {
	struct psvc_xrun *v;	/* sorted by addr once complete */
	size_t n, cap;
};
struct runs_chunk {
	unsigned char *base;
	size_t len, used;
};
struct psvc_runs {
	struct runs_set kept, scratch;
	struct runs_chunk *chunks;	/* kept runs' storage */
	size_t nchunks, chunks_cap;
	unsigned char *scratch_buf;	/* scratch runs' storage (mapped) */
	size_t scratch_cap;
	struct psvc_run *io;		/* the read list of copy_into() */
	size_t io_cap;
	struct psvc_seg *segs;		/* and its runs' parts */
	size_t segs_cap;
	/* psvc_copy_pieces(): the scratch set holds these pieces of structs
	 * of sparse_size bytes (0: it holds plain runs) */
	uint32_t sparse_size;
	struct psvc_piece sparse[8];
	size_t nsparse;
	/* kept runs given up (psvc_frozen_done): every run below this point
	 * of the arena (chunk, then address) is gone */
	size_t dead_chunk;
	unsigned char *dead_mark;	/* NULL: none given up */
	unsigned char *freed_to;	/* pages of dead_chunk returned so far */
	/* small copies outliving the runs they came from (psvc_frozen_retain):
	 * storage in blocks that never move, found through a hash of 64-byte
	 * granules */
	struct runs_set retained;
	unsigned char **rblocks;
	size_t nrblocks, rblocks_cap, rblock_used;
	struct psvc_keymap by_granule;	/* granule + 1 -> index in retained.v */
};

struct psvc_elf;
struct psvc_backend;

/*
 * One inspected target, whatever backend reaches it (backend.h).  Only
 * what every backend shares is here; a backend keeps its own state behind
 * backend_data (the live one: struct psvc_live, live.h).
 */
struct psvc_target {
	const struct psvc_backend *backend;
	void *backend_data;
	pid_t pid;
	const struct arch_desc *arch;

	/* from the auxiliary vector (psvc_target_set_auxv) */
	uint64_t at_phdr, at_phnum, at_base, at_sysinfo_ehdr;

	/* tasks of the current capture (tasks.c) */
	struct psvc_task *tasks;
	size_t ntasks, tasks_cap;
	struct psvc_tidmap by_tid;
	struct psvc_tidmap by_nstid;	/* TID in the target's PID namespace ->
					 * index, filled only when it differs */

	/* the capture (target.c; the backend sets stopped and the times) */
	bool stopped;		/* some task may be held by us */
	bool tdb_unknown_field;	/* psvc_tdb_unknown_field() */
	bool frozen_reads;	/* psvc_frozen_reads() */
	uint64_t frozen_misses;
	bool observing;		/* a nonblocking capture is open: nothing is
				 * held, the page cache is in use */
	bool last_nonblocking;	/* the last capture was nonblocking */
	bool follow;		/* tasks stay attached between captures (the
				 * live backend's follow mode) */
	uint64_t t_first_stop, t_last_resume;
	uint64_t max_freeze_ns;
	const volatile sig_atomic_t *cancel;
	volatile sig_atomic_t *holding;	/* psvc_open_opts.holding */
	unsigned hold_seq;		/* hold_update() */
	/* asked for the start routine of a new thread (follow mode) */
	psvc_start_fn resolver;
	void *resolver_arg;

	/* memory (mem.c) */
	struct mem_cache cache;
	struct psvc_runs runs;	/* memruns.c */
	bool cache_active;	/* reads go through the cache */
	bool cache_bypass;	/* psvc_read() goes to the target meanwhile */
	uint64_t read_syscalls;	/* counted by the backend */
	/* reads the backend would not wait on (psvc_mem_hazard) that
	 * failed since the last scan, and the first address */
	uint64_t hazard_reads, hazard_first;

	/* modules (modules.c) */
	struct psvc_module *mods;
	size_t nmods;
	enum psvc_modmap_source modmap_source;
	uint64_t mod_generation;
	uint64_t mod_fingerprint;
	char *modmap_note;	/* what was wrong with r_debug/link_map */
	struct psvc_mapping *maps;
	size_t nmaps;

	/* process facts (the backend's, at open) */
	char *exe_path;
	char *cmdline_buf;
	const char **argv;
	size_t argc;

	/* warnings about the whole target (psvc_target_warn) */
	struct psvc_warnings warnings;

	/* namespaces (ns.c) */
	int foreign_pidns;	/* -1 unknown, 0 same as ours, 1 other */

	/* fileworker.c: files are opened by a helper process, within a bound */
	bool files_up;		/* the helper runs: files_sock, files_pid */
	int files_sock;
	pid_t files_pid;	/* 0 until it has said hello */
	bool files_watchdog;	/* it ends with its socket, even when stuck */
	unsigned files_paused;	/* psvc_files_pause() depth */
	bool files_stuck[2];	/* a lookup in that tree was given up on */
	bool files_servicing;	/* following's events served while waiting */
	void (*files_wait_fn)(void *);	/* called while waiting */
	void *files_wait_arg;
	/* the backend's: let go the tasks that stopped since the resume
	 * (live: stragglers leaving their uninterruptible sleep); NULL */
	void (*files_release)(struct psvc_target *t);

	struct ps_prochandle *ph;
	/* shim.c: bytes libthread_db sees instead of target memory (the
	 * descriptors tinspect checked), and its read budget */
	struct pin {
		uint64_t addr;
		size_t len;
		unsigned char bytes[16];
	} *pins;
	size_t npins, pins_cap;
	uint64_t pins_lo, pins_hi;	/* the span of all pins */
	uint64_t tdb_budget, tdb_reads;
};

/* Tell the caller's signal handler whether anything is held right now:
 * 0 nothing, 1 attached (followed) but running, 2 and up stopped (or being
 * stopped: stopping), a value that changes at every stop so that a
 * watchdog sampling it tells one freeze from the next. */
static inline void hold_update(struct psvc_target *t, bool stopping)
{
	if (!t->holding)
		return;
	if (stopping)
		t->hold_seq = (t->hold_seq + 1) & 7;
	*t->holding = stopping || t->stopped ? 2 + t->hold_seq : t->follow ? 1 : 0;
}

/* mem.c: the per-stop cache of target memory */
void psvc_cache_begin(struct psvc_target *t);
void psvc_cache_end(struct psvc_target *t);
void psvc_cache_free(struct mem_cache *c);
/* Map and pre-fault room for nblocks cached blocks now. */
void psvc_cache_reserve(struct mem_cache *c, size_t nblocks);

/* memruns.c: the run that covers [addr, addr + len) whole (NULL: none);
 * how many bytes from addr one kept run gives (0: none); pre-fault room
 * for bytes of kept runs; free everything. */
/* A whole struct of psvc_copy_pieces() at addr, len bytes of it: its
 * pieces and zeros between them into out.  false if addr is not the start
 * of such a struct or len is more than one. */
bool psvc_runs_sparse(const struct psvc_target *t, uint64_t addr,
		      unsigned char *out, uint64_t len);
const unsigned char *psvc_runs_find(const struct psvc_target *t, uint64_t addr,
				    uint64_t len);
uint64_t psvc_runs_extent(const struct psvc_target *t, uint64_t addr, uint64_t len);
/* Whether [addr, addr + len) needs no retaining: already kept, empty, or
 * longer than a retained copy may be (memruns.c). */
bool psvc_runs_retained(const struct psvc_runs *rs, uint64_t addr, size_t len);
/* Keep the len bytes at tmp, read from addr, beyond the runs' release. */
void psvc_runs_retain(struct psvc_runs *rs, uint64_t addr, const void *tmp,
		      size_t len);
void psvc_runs_reserve(struct psvc_target *t, size_t bytes);
/* Room for a scratch set of this many bytes, and a read list of nruns
 * runs, mapped and faulted in now (before a stop). */
void psvc_runs_reserve_scratch(struct psvc_target *t, size_t bytes, size_t nruns,
			       size_t nparts);
void psvc_runs_free(struct psvc_runs *rs);

/* modules.c */
void psvc_modules_free(struct psvc_target *t);
/* procfs.c: the text of /proc/PID/maps (NUL-terminated, split in place)
 * into mappings; lines it cannot read are skipped.  Pure. */
int psvc_maps_parse(char *buf, struct psvc_mapping **ret, size_t *ret_n);
/* A path as /proc/PID/maps prints it (and gdb copies it into a core's
 * NT_FILE) back to the file's name, in place: the kernel writes a newline
 * as "\012" (seq_file_path, show_map_vma). */
void psvc_maps_unescape(char *path);
void psvc_maps_free(struct psvc_mapping *m, size_t n);

/* linkmap.c: the r_debug / link_map chain, through a read callback */
struct psvc_linkmap_entry {
	uint64_t addr;		/* of the struct link_map */
	uint64_t l_addr, l_ld;
	char *l_name;		/* malloc'ed, "" if unreadable */
};
struct psvc_linkmap {
	struct psvc_linkmap_entry *v;
	size_t n;
	size_t ndup;		/* entries skipped: an l_ld met before */
	bool cut;		/* more than max distinct entries, or more
				 * than max_steps in all: the rest unread */
};
/* At most max distinct entries, max_steps entries in all.  0 (also for an
 * empty chain), or -EFAULT (r_debug
 * or an entry unreadable), -EPROTO (bad version, or l_prev links that do
 * not match: a loop or garbage), -EAGAIN (r_state not consistent: a
 * dlopen in progress), -ENOMEM; then why says what and ret is empty. */
int psvc_linkmap_walk(const struct psvc_layout_src *src, uint64_t r_debug,
		 size_t max, size_t max_steps, struct psvc_linkmap *ret,
		 char *why, size_t whylen);
void psvc_linkmap_free(struct psvc_linkmap *w);

/* elfsym.c: symbol tables of one ELF object */
struct psvc_elfsym {
	uint64_t value, size;
	const char *name;
	unsigned char type, bind;
};
struct psvc_elf *psvc_elfsym_open_fd(int fd, int *ret_err);
struct psvc_elf *psvc_elfsym_open_mem(const void *image, size_t len, int *ret_err);
void psvc_elfsym_close(struct psvc_elf *e);
const struct psvc_elfsym *psvc_elfsym_lookup(const struct psvc_elf *e, const char *name);
const struct psvc_elfsym *psvc_elfsym_by_addr(const struct psvc_elf *e, uint64_t vaddr);
bool psvc_elfsym_has_symtab(const struct psvc_elf *e);
/* hex build-id into out[41], "" if none */
void psvc_elfsym_build_id(const struct psvc_elf *e, char out[41]);
/* As libdwfl takes them (dwfl_report_elf.c): the first PT_LOAD's p_vaddr
 * aligned down to its p_align, the end of the last PT_LOAD, e_type. */
void psvc_elfsym_load_span(const struct psvc_elf *e, uint64_t *ret_lo,
		      uint64_t *ret_hi, unsigned *ret_e_type);
/* The file the tables were read from (0/0 for an image in memory): no
 * descriptor is kept, libelf has the file mapped. */
void psvc_elfsym_file_id(const struct psvc_elf *e, dev_t *ret_dev, ino_t *ret_ino);
/* The file it stands for, when it was read from a copy of it. */
void psvc_elfsym_set_file_id(struct psvc_elf *e, dev_t dev, ino_t ino);

/* What the file says about how it was linked (psvc_elfsym_traits). */
enum {
	PSVC_ELF_INTERP = 1u << 0,	/* PT_INTERP: dynamically linked */
	PSVC_ELF_GNU_ABI_TAG = 1u << 1,	/* NT_GNU_ABI_TAG: linked with glibc */
};
unsigned psvc_elfsym_traits(const struct psvc_elf *e);
/* The bytes of the section called name as they are in the file
 * (inside its mapping, valid while e is open), its size and address;
 * NULL if there is none. */
const unsigned char *psvc_elfsym_section(const struct psvc_elf *e, const char *name,
					 size_t *ret_len, uint64_t *ret_addr);
/* len bytes at the link-time address vaddr, from the file part of a
 * PT_LOAD segment: 0, or -EFAULT (not in the file). */
int psvc_elfsym_vread(const struct psvc_elf *e, uint64_t vaddr, void *buf, size_t len);

/* gopclntab.c: a Go function table (Go 1.18 on), over bytes that must
 * outlive it.  open: 0, or a negative errno and why (static text). */
struct psvc_gotab;
int psvc_gotab_open(const unsigned char *data, size_t len,
		    struct psvc_gotab **ret, const char **why);
void psvc_gotab_free(struct psvc_gotab *t);
/* "go1.18" (Go 1.18-1.19) or "go1.20" (1.20 on). */
const char *psvc_gotab_format(const struct psvc_gotab *t);
uint64_t psvc_gotab_nfunc(const struct psvc_gotab *t);
/* The header's offsets of the names, CU, file, pc-value and function
 * tables, from the table's start. */
void psvc_gotab_offsets(const struct psvc_gotab *t, uint64_t ret[5]);
/* The entry offsets of the first function and of the end of the text. */
void psvc_gotab_span(const struct psvc_gotab *t, uint32_t *ret_first,
		     uint32_t *ret_end);
/* The address the functions' offsets count from (runtime.text): the
 * header's until Go 1.25 (0 after: no longer written), or set. */
uint64_t psvc_gotab_header_text(const struct psvc_gotab *t);
uint64_t psvc_gotab_text(const struct psvc_gotab *t);
void psvc_gotab_set_text(struct psvc_gotab *t, uint64_t text_start);
/* The function at the link-time address vaddr, its file and line and
 * its stack pointer delta there (addresses link-time too): 0, or -ENOENT
 * (no function there, a corrupt record, or no text start). */
int psvc_gotab_lookup(const struct psvc_gotab *t, uint64_t vaddr,
		      struct psvc_gofunc *ret);

/* gomodule.c: a module's Go facts, freed with the module */
struct psvc_gomod;
void psvc_gomod_free(struct psvc_gomod *g);

/* gobuildinfo.c: the Go version in a .go.buildinfo section's bytes into
 * buf; vread gives bytes at other addresses of the file (the layout
 * before Go 1.18).  0, -ENOEXEC (no build info), -EBADMSG (garbage). */
typedef int (*psvc_go_vread_fn)(void *ctx, uint64_t vaddr, void *buf, size_t len);
int psvc_go_buildinfo_version(const unsigned char *sec, size_t len,
			      psvc_go_vread_fn vread, void *ctx,
			      char *buf, size_t buflen);

/* memelf.c: the ELF image mapped at base, from target memory */
#define PSVC_MEM_MAX_PHDRS 256
/* Its ELF header and program headers (ret_ph holds PSVC_MEM_MAX_PHDRS):
 * how many, or -EFAULT (unreadable, no ELF header, absurd counts). */
int psvc_mem_phdrs(struct psvc_target *t, uint64_t base, Elf64_Ehdr *ret_eh,
		   Elf64_Phdr *ret_ph);
/* Its lowest PT_LOAD vaddr, page-truncated; UINT64_MAX if unreadable. */
uint64_t psvc_mem_first_load(struct psvc_target *t, uint64_t base);
/* Its hex build-id; -ENOENT if it has none, -EFAULT if unreadable. */
int psvc_mem_build_id(struct psvc_target *t, uint64_t base, char out[41]);

/* procfs.c: /proc text, read and parsed (no target needed) */
/* Read a /proc file (at most cap - 1 bytes, NUL-terminated).  Not for
 * other files: a short read is taken as the end. */
int psvc_read_file_at(int dirfd, const char *path, char *buf, size_t cap,
		 size_t *ret_len);
/* A whole file of at most limit bytes, malloc'ed and NUL-terminated;
 * -EFBIG beyond. */
int psvc_read_whole_file(const char *path, char **ret, size_t *ret_len,
		    size_t limit);

/* The facts of task tid through a descriptor on /proc/PID/task. */
int psvc_taskinfo_read_at(int taskdir, pid_t tid, struct psvc_taskinfo *ti);
/* The same without /proc/TID/syscall unless with_syscall (sc_read false:
 * one open, read and close fewer; the registers will say it). */
int psvc_taskinfo_read_some_at(int taskdir, pid_t tid, struct psvc_taskinfo *ti,
			       bool with_syscall);
/* Only /proc/TID/syscall, into ti's sc_* fields (and sc_read). */
void psvc_taskinfo_read_syscall_at(int taskdir, pid_t tid,
				   struct psvc_taskinfo *ti);

/* tasks.c: the task list of the capture, its indexes, and the task-state
 * transitions (the only writers of psvc_task.flags) */
struct psvc_task *psvc_task_add(struct psvc_target *t, pid_t tid);
/* The task whose namespace TID is ns_tid, from the index of the tasks whose
 * namespace TID differs from their TID; NULL if none (ns.c decides). */
struct psvc_task *psvc_task_by_ns_map(struct psvc_target *t, pid_t ns_tid);
/* Index k by its namespace TID (nothing when it equals its TID). */
void psvc_task_index_ns(struct psvc_target *t, struct psvc_task *k);
void psvc_tasks_clear(struct psvc_target *t);
void psvc_tasks_free(struct psvc_target *t);
/* A task found during the stop (LATE). */
struct psvc_task *psvc_task_add_late(struct psvc_target *t, pid_t tid);
/* Held by this capture (the target counts as stopped from now on). */
void psvc_task_seized(struct psvc_target *t, struct psvc_task *k);
/* Not held, and why (seize_errno): refused, or left out (a zombie). */
void psvc_task_refused(struct psvc_task *k, int err);
/* Exited before or while it was held. */
void psvc_task_gone(struct psvc_task *k);
/* Exited as it was interrupted: still held until its exit is reaped. */
void psvc_task_gone_held(struct psvc_task *k);
/* Reported its stop; resume_sig is handed back when it is let go; a stop
 * seen after the capture (in_capture false) is not part of the snapshot. */
void psvc_task_stopped(struct psvc_task *k, int resume_sig, bool jobctl,
		       bool in_capture);
/* Did not stop within the stop timeout. */
void psvc_task_straggler(struct psvc_task *k);
/* Nonblocking capture: blocked in the kernel, pc and sp known, not held;
 * and, at the end, found to have left that wait meanwhile. */
void psvc_task_observed(struct psvc_task *k);
void psvc_task_moved(struct psvc_task *k);
/* Its registers were read (err 0), or why not. */
void psvc_task_regs(struct psvc_task *k, int err);
/* Let go (detached or continued); CAPTURED stays. */
void psvc_task_released(struct psvc_task *k);
/* No longer held by the capture, but still attached: a straggler the
 * backend keeps, a task follow mode keeps. */
void psvc_task_handed_over(struct psvc_task *k);

/* say.c: one more warning (lost if there is no memory for it), the i-th
 * (NULL past the end), forget them all. */
void psvc_warnings_vadd(struct psvc_warnings *w, const char *fmt, va_list ap)
	__attribute__((format(printf, 2, 0)));
void psvc_warnings_add(struct psvc_warnings *w, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
const char *psvc_warnings_at(const struct psvc_warnings *w, size_t i);
void psvc_warnings_free(struct psvc_warnings *w);

/* tidmap.c: add an entry for key (0 or -ENOMEM; a key already there gets
 * one more; the first table has mincap slots, a power of two); the slot
 * of key's next entry after slot after (SIZE_MAX: its first), SIZE_MAX
 * when there is none; forget everything. */
int psvc_keymap_add(struct psvc_keymap *m, uint64_t key, uint32_t val,
		    size_t mincap);
size_t psvc_keymap_find(const struct psvc_keymap *m, uint64_t key, size_t after);
void psvc_keymap_clear(struct psvc_keymap *m);
/* tidmap.c: put (0 or -ENOMEM, -EINVAL for a TID <= 0), get (-1: not
 * there), delete, and forget everything */
int psvc_tidmap_put(struct psvc_tidmap *m, pid_t tid, uint32_t val);
long psvc_tidmap_get(const struct psvc_tidmap *m, pid_t tid);
void psvc_tidmap_del(struct psvc_tidmap *m, pid_t tid);
void psvc_tidmap_clear(struct psvc_tidmap *m);

/* clock.c: CLOCK_REALTIME in ns (psvc_now_ns() is CLOCK_MONOTONIC) */
uint64_t psvc_realtime_ns(void);

static inline uint64_t psvc_ts_to_ns(const struct timespec *ts)
{
	return (uint64_t)ts->tv_sec * 1000000000u + (uint64_t)ts->tv_nsec;
}

#endif
