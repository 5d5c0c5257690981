/*
 * Private to dbsession/: the session layout and the libthread_db binding.
 */
#ifndef TINSPECT_DBS_INT_H
#define TINSPECT_DBS_INT_H

#include "dbsession.h"
#include "libc.h"

#include <elfutils/libdwfl.h>
#include <stdarg.h>
#include <proc_service.h>
#include <thread_db.h>

/* The libthread_db entry points tinspect uses, resolved with dlsym so that
 * a target's own libthread_db can be loaded in place of the system's. */
struct tdb_lib {
	void *handle;
	char *path;
	td_err_e (*td_init)(void);
	td_err_e (*td_ta_new)(struct ps_prochandle *, td_thragent_t **);
	td_err_e (*td_ta_delete)(td_thragent_t *);
	td_err_e (*td_ta_map_lwp2thr)(const td_thragent_t *, lwpid_t,
				      td_thrhandle_t *);
	td_err_e (*td_thr_get_info)(const td_thrhandle_t *, td_thrinfo_t *);
	td_err_e (*td_ta_thr_iter)(const td_thragent_t *, td_thr_iter_f *,
				   void *, td_thr_state_e, int, sigset_t *,
				   unsigned);
	td_err_e (*td_thr_tls_get_addr)(const td_thrhandle_t *, psaddr_t,
					size_t, psaddr_t *);
	td_err_e (*td_thr_tlsbase)(const td_thrhandle_t *, unsigned long,
				   psaddr_t *);
};

/* ps_pdread calls one libthread_db call may make (psvc_tdb_budget):
 * td_thr_get_info makes a handful, td_thr_tls_get_addr about 15 and one
 * per DTV slotinfo list entry, a list the target could make circular. */
#define TDB_READ_BUDGET 4096

/* session.c: one capture, all-stop (in a tracer thread of its own unless
 * following) or nonblocking; no confirmation */
int dbs_capture_once(struct dbs_session *s, bool nonblocking,
		     struct dbs_snapshot **ret);
/* The same in a thread of its own (at SCHED_IDLE if idle), joined before
 * it returns: in the caller's thread if none can be made. */
int dbs_capture_in_thread(struct dbs_session *s, bool nonblocking, bool idle,
			  struct dbs_snapshot **ret);

/* nonblock.c: updates that hold nothing (DBS_MODE_NONBLOCKING*) */
int dbs_nb_update(struct dbs_session *s, struct dbs_snapshot **ret);
/* nbthreads.c: during a nonblocking capture, after the registers: the thread pointer
 * of each observed task, from libthread_db's own list of threads. */
void dbs_nb_learn_thread_pointers(struct dbs_session *s);

/* threaddb.c */
int dbs_tdb_load(const char *path, struct tdb_lib *ret, char **ret_detail);
void dbs_tdb_unload(struct tdb_lib *lib);
/* The one place td_err_e becomes text. */
const char *dbs_tdb_strerror(td_err_e e);

/* strpool.c: interned, reference-counted string pools */
struct dbs_strpool *dbs_strpool_new(void);
struct dbs_strpool *dbs_strpool_ref(struct dbs_strpool *p);
void dbs_strpool_unref(struct dbs_strpool *p);
const char *dbs_strpool_intern(struct dbs_strpool *p, const char *s);

/* debuginfo.c: the files libdwfl reads, opened by tinspect (regular files
 * only, never blocking; checked by build-id or CRC).  The callbacks want
 * each module's userdata to be the dbg_files. */
struct dbg_files;
struct dbg_files *dbs_dbg_files_new(struct psvc_target *t);
void dbs_dbg_files_free(struct dbg_files *f);
int dbs_dbg_find_elf(Dwfl_Module *mod, void **userdata, const char *modname,
		 Dwarf_Addr base, char **file_name, Elf **elfp);
int dbs_dbg_find_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname,
		       GElf_Addr base, const char *file_name,
		       const char *debuglink, GElf_Word crc, char **ret_name);
/* The notes gathered since the last call (files refused, and why; a lack
 * of descriptors), moved to *ret (malloc'ed array of malloc'ed strings);
 * ret NULL: dropped.  Forgets the lack of descriptors too. */
void dbs_dbg_files_take_notes(struct dbg_files *f, char ***ret, size_t *ret_n);
/* EMFILE or ENFILE if a file could not be opened for lack of descriptors
 * (*ret_what names it), else 0. */
int dbs_dbg_files_fd_errno(const struct dbg_files *f, const char **ret_what);
/* The bytes read so far to check debuglink CRCs. */
uint64_t dbs_dbg_files_crc_bytes(const struct dbg_files *f);
/* The file of module (its path, libdwfl's name for it) could not be
 * opened for libdwfl: err (positive errno) is kept as the module's last
 * failure, which libdwfl remembers for the module's life in the Dwfl. */
void dbs_dbg_files_open_failed(struct dbg_files *f, const char *module, int err);
/* module's file was opened: a failure kept for it is forgotten. */
void dbs_dbg_files_open_ok(struct dbg_files *f, const char *module);
/* The last failure kept for module (positive errno), 0 if none. */
int dbs_dbg_files_open_errno(const struct dbg_files *f, const char *module);
/* Whether err is a failure that may not last (a held target, a signal,
 * a file system slow to answer, descriptors lacking, the file helper
 * gone): the module is worth opening again in a later update. */
bool dbs_dbg_open_transient(int err);
/* Whether a transient failure is kept for some module. */
bool dbs_dbg_files_transient(const struct dbg_files *f);
/* Forget the failures kept (transient ones only, or all). */
void dbs_dbg_files_forget_failures(struct dbg_files *f, bool transient_only);
/* What a failure of a module's open means (buf: at least 128 bytes). */
const char *dbs_dbg_open_strerror(int err, char *buf, size_t len);
/* "the file of MODULE could not be opened: why" in buf if a failure is
 * kept for module, else NULL. */
const char *dbs_dbg_files_why(const struct dbg_files *f, const char *module,
			      char *buf, size_t len);

/* debugcrc.c: debuglink CRCs within budgets, each file's computed once.
 * A debug file is a few hundred MB at most; candidates are whatever the
 * target's user put under the debuglink's name. */
#define DBS_CRC_MODULE_BUDGET (1ull << 30)	/* bytes per module search */
#define DBS_CRC_RUN_BUDGET (2ull << 30)		/* bytes per session */
struct dbs_crc;
struct dbs_crc *dbs_crc_new(void);
void dbs_crc_free(struct dbs_crc *c);
/* The CRC of the regular file fd: 0 and *ret (from the memo if this
 * device, inode, size and mtime were seen), -EFBIG if reading it would
 * exceed *module_left or what is left of the session's budget (nothing
 * is read then), another negative errno if it cannot be read.  What is
 * read is taken from *module_left. */
int dbs_crc_file(struct dbs_crc *c, int fd, uint64_t *module_left, uint32_t *ret);
uint64_t dbs_crc_bytes_read(const struct dbs_crc *c);

/* dbgcache.c: the debug file fd (checked to have build-id id) or, in its
 * place, its uncompressed copy from the cache directory (made now if
 * there is none); fd is closed if the copy is returned. */
int dbs_dbgcache_use(int fd, const unsigned char *id, size_t idlen);

/* framerec.c: an aarch64 frame without CFI, by its frame record (the
 * registers in NT_PRSTATUS order: x0..x30, sp, pc, pstate) */
struct dbs_framerec_io {
	Dwfl *dwfl;		/* the modules' CFI */
	/* a word of the capture, its PAC stripped where it is a code
	 * address; false if the capture does not hold it */
	bool (*read)(void *ctx, uint64_t addr, uint64_t *v);
	void *ctx;
};
enum dbs_framerec {
	DBS_FRAMEREC_CALLER,	/* *caller holds the caller's registers */
	DBS_FRAMEREC_OUTERMOST,	/* the record chain ends (0): no caller */
	DBS_FRAMEREC_MISSED,	/* the record is not in the capture */
	DBS_FRAMEREC_BAD,	/* no usable record (why says what) */
};
/* Is there CFI (.eh_frame or .debug_frame) for addr? */
bool dbs_cfi_covers(Dwfl *dwfl, uint64_t addr);
enum dbs_framerec dbs_framerec_step(const struct dbs_framerec_io *io,
				    const uint64_t *regs, uint64_t *caller,
				    const char **why);

/* stackscan.c: past code without CFI (musl's libc), the next return
 * address in the stop's copy [from, to) into code with CFI that follows
 * a call instruction (x86_64), and the sp of its frame */
bool dbs_stackscan_find(Dwfl *dwfl, struct psvc_target *t, uint64_t from,
			uint64_t to, uint64_t *ret_pc, uint64_t *ret_sp);
/* Do the bytes before ret, in its module's file, end with a call? */
bool dbs_stackscan_follows_call(Dwfl *dwfl, const struct arch_desc *arch,
				uint64_t ret);
/* What one stack walk (unwind.c) keeps for its scans. */
struct dbs_scan {
	bool on;		/* scan where the walk stops */
	bool next;		/* the next frame is the one a scan found */
	unsigned part_base;	/* the first frame of the current part */
	unsigned scans;		/* scans that found a return address */
	bool scanned[1025];	/* frame i was found by a scan */
};
/*
 * The walk's frames pcs/sps/act [0, *n) stopped (ended: at what the
 * unwinder took for the outermost frame): where it stopped in code
 * without CFI or short of the outermost frame, drop the frames after
 * the last one to trust (*n), scan above it, and put the registers to go
 * on from in gregs (pc less 1: the call's): true.  False: the walk ends
 * (*n may be shortened to the thread's start routine).
 */
bool dbs_stackscan_resume(Dwfl *dwfl, struct psvc_target *t,
			  const struct dbs_thread *th, struct dbs_scan *sc,
			  const uint64_t *pcs, const uint64_t *sps, const bool *act,
			  unsigned *n, bool ended, uint64_t *gregs);

/* unwind.c: libdwfl over the frozen capture */
struct dbs_unwinder;
int dbs_unwinder_new(struct psvc_target *t, struct dbs_unwinder **ret);
void dbs_unwinder_free(struct dbs_unwinder *u);
/* Bring libdwfl's module list in line with the target's current one. */
int dbs_unwinder_sync(struct dbs_unwinder *u);
/* The files it read: notes and descriptor trouble (debuginfo.c). */
struct dbg_files *dbs_unwinder_files(struct dbs_unwinder *u);
/* The pool holding the strings of the frames it produces. */
struct dbs_strpool *dbs_unwinder_pool(struct dbs_unwinder *u);
/* Unwind th from its registers and the captured stack into th->stack;
 * scan: a walk that stops at code without CFI goes on by scanning the
 * stack (stackscan.c), for C libraries built without unwind tables. */
void dbs_unwinder_unwind(struct dbs_unwinder *u, struct dbs_thread *th,
		     unsigned max_frames, bool scan);

/* gowalk.c: Go frames from pc and sp with the Go function table, over
 * the frozen capture, each handed to push (false: no room, stop). */
enum dbs_gowalk_result {
	DBS_GOWALK_NOT_GO,	/* pc is in no Go function: nothing done */
	DBS_GOWALK_END,		/* the stack ends (end, why, miss_addr) */
	DBS_GOWALK_LEFT,	/* returned into other code at pc, sp */
};
struct dbs_go_walk {
	uint64_t pc, sp;	/* in: where to start; out (LEFT): where the
				 * Go frames return to */
	bool activation;	/* in: pc is the thread's, not a return
				 * address */
	bool have_lr;		/* in: lr holds the link register of the
				 * frame at pc (an activation's, on an
				 * architecture with one) */
	uint64_t lr;
	bool (*push)(void *ctx, uint64_t pc, uint64_t sp, bool activation);
	void *ctx;
	enum dbs_gowalk_result result;
	enum dbs_stack_end end;	/* END: why */
	const char *why;	/* END with an error: what */
	bool missed;		/* END truncated: the read that missed */
	uint64_t miss_addr;
	char why_buf[160];
};
void dbs_go_walk(struct psvc_target *t, const struct arch_desc *arch,
		 struct dbs_go_walk *w);

/* The parts of struct pthread libthread_db's descriptors name (its
 * fields), merged where they nearly touch: what a copy of a thread's
 * descriptor must hold for libthread_db (session.c). */
#define DBS_MAX_PIECES 8
struct dbs_pieces {
	uint32_t n;
	struct psvc_piece v[DBS_MAX_PIECES];
};

struct dbs_session {
	pid_t pid;
	struct dbs_options opts;
	struct psvc_target *t;
	struct tdb_lib lib;
	bool lib_loaded;
	enum dbs_tdb_origin lib_origin;	/* whose lib is */
	td_thragent_t *ta;
	enum dbs_tdb_status tdb_status;
	char *tdb_detail;
	uint64_t ta_generation;		/* module generation of ta */
	uint32_t sizeof_pthread;
	bool layout_ok;		/* tdbcheck.c passed: sizeof_pthread and
				 * desc_pieces hold, libthread_db or not */
	char glibc_version[16];
	const char *glibc_version_src;	/* static: where it was read */
	/* the C library (libc.h; libc.c chose it), its version ("" if
	 * unknown) and where that was read; libc_found: it was recognised
	 * (glibc: a version read or libthread_db served) */
	const struct dbs_libc_ops *libc;
	bool libc_found;
	char libc_version[24];
	const char *libc_version_src;
	enum dbs_threads_source threads_source;	/* when not libthread_db */
	/* libc_musl.c: a static program; one not named by its symbols
	 * (stripped), proved musl only by its threads' structs */
	bool musl_static, musl_unproved;
	bool from_core;		/* the target is a core file */
	/* libc_musl.c: the mutexes on each thread's robust_list (its held
	 * non-normal mutexes, docs/MUSL.md §5), walked during the stop, for
	 * lock_held.c; an entry with addr 0: that thread's chain could not
	 * be followed to its end */
	struct dbs_musl_held {
		pid_t tid;		/* the task's TID (tinspect's namespace) */
		uint64_t addr;		/* the mutex */
	} *musl_held;
	size_t nmusl_held;
	bool musl_held_lost;	/* out of memory: no thread's is known */
	long clk_tck;
	struct dbs_unwinder *unwinder;	/* NULL with --no-stacks */

	/* the optional readers (tls.c, keys.c); NULL when not asked for */
	struct tls_state *tls;
	struct keys_state *keys;
	/* tdbpick.c: libthread_db chosen for the target's own glibc */
	char *tdb_warning;
	/* stack.c: the maps were re-read for the snapshot being built
	 * (reset by build_snapshot: a pointer would not do, a later snapshot
	 * can be allocated where a freed one was) */
	bool stack_maps_fresh;

	/* offsetof(struct pthread, tid) from libc's _thread_db_pthread_tid
	 * descriptor (locks.c), for the module generation tid_off_gen */
	uint32_t tid_off;
	uint64_t tid_off_gen;
	bool tid_off_valid;
	/* offsetof(struct pthread, cleanup) (condwait.c), 0: unknown */
	uint32_t cleanup_off;
	uint64_t cleanup_off_gen;
	bool cleanup_off_valid;
	char *tid_off_why;		/* why it is unknown (NULL: known) */
	/* waits.c: what each thread waited on at the last update */
	struct dbs_waits *waits;
	/* lock_held.c: the mutexes and rwlocks the session has seen waited
	 * on (opts.track_locks), whose words every update reads again */
	struct dbs_known_locks *known;
	/* stacktop.c: bytes below a descriptor the next copies leave out
	 * (its static TLS), 0: none; off once a cut proved too short */
	unsigned tracers;	/* psvc_stop_opts.tracers (TINSPECT_TRACERS) */
	/* what a copy of a descriptor holds for libthread_db (tdbcheck.c;
	 * n 0: whole) */
	struct dbs_pieces desc_pieces;
	uint64_t stacktop_cut;
	bool stacktop_off;
};

/* What libthread_db said about one task during the stop, by task index;
 * kept until the snapshot is built. */
struct tdb_result {
	td_err_e err;
	const char *step;
	/* what is used of td_thrinfo_t (384 bytes, per thread: a watch of
	 * 10 000 threads keeps to a memory budget), under its own names */
	struct {
		__typeof__(((td_thrinfo_t *)0)->ti_tid) ti_tid;
		__typeof__(((td_thrinfo_t *)0)->ti_lid) ti_lid;
		__typeof__(((td_thrinfo_t *)0)->ti_state) ti_state;
		__typeof__(((td_thrinfo_t *)0)->ti_startfunc) ti_startfunc;
	} ti;
	bool have_th;		/* th is valid (td_ta_map_lwp2thr worked) */
	bool gathered;		/* libthread_db was asked (session.c) */
	td_thrhandle_t th;
	uint64_t stack_lo, stack_hi;	/* the stack bytes copied */
	struct dbs_libc_thread lt;	/* a library without libthread_db */
};
/* libc.c: choose the target's C library and set it up for the current
 * module map (before the stop) */
void dbs_libc_setup(struct dbs_session *s);
/* libc_glibc.c: let libthread_db's agent go */
void dbs_glibc_release(struct dbs_session *s);
/* libc_glibc.c: a field of struct pthread as libc's libthread_db
 * descriptor desc (_thread_db_pthread_tid, ...) says, checked against
 * the size of struct pthread (psvc_field_read: 0, or a negative errno with
 * why, which may be NULL). */
int dbs_glibc_pthread_field(struct dbs_session *s, const char *desc,
			    struct psvc_field *ret, char *why, size_t whylen);

/*
 * The optional readers share one life cycle per update, each called from
 * one place in session.c:
 *   X_prepare(s)     before the stop: symbols, descriptors (may read
 *                    the live target and files; costs no freeze time)
 *   X_gather(s, res) during the stop: the reads, batched (psvc_prefetch),
 *                    nothing else; res may be NULL (no libthread_db)
 *   X_fill(s, snap, th, task_index)  after the resume: decode one thread
 *   X_finish(s, snap) after the resume: snapshot-wide facts, and free
 *                    the per-stop data
 *   X_free(s)        session end
 */
void dbs_tls_prepare(struct dbs_session *s);
void dbs_tls_gather(struct dbs_session *s, const struct tdb_result *res);
void dbs_tls_fill(struct dbs_session *s, struct dbs_snapshot *snap,
	      struct dbs_thread *th, size_t task_index);
void dbs_tls_finish(struct dbs_session *s, struct dbs_snapshot *snap);
void dbs_tls_free(struct dbs_session *s);

/* capture.c: what a capture copies while the target is stopped, and
 * libthread_db over the copies (session.c's update_body() calls these). */
/* Whether libthread_db must run while stopped: --tls, --errno, --keys
 * follow pointers into the live process. */
bool dbs_tdb_in_freeze(const struct dbs_session *s);
/* Whether descriptors are copied in pieces (s->desc_pieces): unless
 * libthread_db asked for a field the layout check does not know. */
bool dbs_descriptor_pieces(const struct dbs_session *s);
/* The bytes the copy of one descriptor takes. */
size_t dbs_descriptor_copy_bytes(const struct dbs_session *s);
/* The parts of one thread's read ranges (psvc_stack_copy_parts). */
size_t dbs_copy_parts(const struct dbs_session *s);
/* Every stopped task's descriptor, as the scratch set. */
void dbs_copy_descriptors(struct dbs_session *s);
/* While stopped: the top of every stack (cap[i].stack_lo/hi say what)
 * and every descriptor. */
void dbs_prefetch_capture(struct dbs_session *s, struct tdb_result *cap);
/* Before the stop: what the stack copies will take, to map it first. */
size_t dbs_expected_copy_bytes(struct dbs_session *s);
/*
 * Which tasks a call of dbs_gather_tdb() asks libthread_db about:
 *   DBS_TDB_ALL    every one, during the stop (--tls, --errno, --keys);
 *   DBS_TDB_PRIME  during the stop, the first task whose descriptor was
 *                  copied (what libthread_db reads besides descriptors,
 *                  the thread list head and its own descriptors in libc,
 *                  comes into the stop's cache with it) and every task
 *                  without a copied descriptor;
 *   DBS_TDB_REST   after the resume, over the copies (psvc_frozen_reads),
 *                  the tasks DBS_TDB_PRIME left.
 */
enum dbs_tdb_which { DBS_TDB_ALL, DBS_TDB_PRIME, DBS_TDB_REST };
void dbs_gather_tdb(struct dbs_session *s, struct tdb_result *res,
		    enum dbs_tdb_which which);

/* keys.c: the layout of pthread keys, from libc's descriptors, every
 * field checked (psvc_field_*) */
struct key_layout {
	uint64_t keys_addr;		/* __pthread_keys */
	uint32_t nkeys;			/* PTHREAD_KEYS_MAX */
	uint32_t ks_size;		/* struct pthread_key_struct, <= 256 */
	struct psvc_field ks_seq, ks_destr;
	uint32_t kd_size;		/* struct pthread_key_data, <= 256 */
	struct psvc_field kd_seq, kd_data;
	struct psvc_field level2;	/* the entries of a second-level block */
	struct psvc_field specific;	/* pd->specific[], one pointer each */
};
/* 0, or a negative errno and why (the descriptor and its value). */
int dbs_keys_layout_load(const struct psvc_layout_src *src, uint32_t sizeof_pthread,
		     struct key_layout *ret, char *why, size_t whylen);

void dbs_keys_prepare(struct dbs_session *s);
void dbs_keys_gather(struct dbs_session *s, const struct tdb_result *res);
void dbs_keys_fill(struct dbs_session *s, struct dbs_snapshot *snap,
	       struct dbs_thread *th, size_t task_index);
void dbs_keys_finish(struct dbs_session *s, struct dbs_snapshot *snap);
void dbs_keys_free(struct dbs_session *s);

/* hazards.c: why th's struct pthread could not be read, when it lies in
 * memory tinspect does not wait on (psvc_mem_hazard); NULL otherwise. */
const char *dbs_descriptor_hazard(struct dbs_session *s, const struct dbs_thread *th);
/* The capture's warning when reads were refused there. */
void dbs_hazards_warn(struct dbs_session *s, struct dbs_snapshot *snap);

/* stack.c: after the resume, from the maps read before the stop */
/* After unwinding: a stack that ran out of its copy [lo, hi) before hi
 * ends in an error that says why, not "truncated". */
void dbs_stack_explain_copy(struct dbs_session *s, struct dbs_thread *th,
			    uint64_t lo, uint64_t hi);
void dbs_stack_fill(struct dbs_session *s, struct dbs_snapshot *snap,
		struct dbs_thread *th);

/* dwarf.c: a thread-local variable in a module's DWARF (or its separate
 * debug file, found by build-id) */
struct dwarf_tls {
	bool have_offset;	/* a TLS location was found */
	uint64_t offset;
	enum dbs_tls_type type;	/* AUTO if the type is not a scalar we know */
	unsigned size;
	char c_type[64];
};
int dbs_dwarf_find_tls(struct psvc_target *t, struct psvc_module *m,
		   const char *name, struct dwarf_tls *ret);

/* tdbpick.c: when the system's libthread_db does not fit the target's
 * glibc (TD_VERSION, or TD_NOLIBTHREAD because the symbols it looks for
 * have other names), load the one beside the target's libc.  Returns 0
 * if the session now has a thread agent, -ENOENT if the target's glibc is
 * the system's (nothing else to try), another negative errno if it is
 * another glibc that could not be served (s->tdb_warning says why). */
int dbs_tdb_pick_target_lib(struct dbs_session *s, td_err_e first_err);
/* Whether the loaded libthread_db is known to be of another glibc than the
 * target's (then its TD_NOLIBTHREAD means nothing). */
bool dbs_tdb_serves_other_glibc(const struct dbs_session *s);


/* tdbcheck.c: before libthread_db is asked anything about a target,
 * every _thread_db_* size it allocas and field it reads from its copies,
 * within sane bounds.  0, each checked value handed to pin() so that
 * libthread_db sees exactly it; -EPROTO and why (which descriptor, which
 * value) if one is absurd: then libthread_db must not be used for the
 * target.  Either way *ret_sizeof_pthread is the size of struct pthread
 * if that is sound, else 0. */
struct tdb_check_io {
	struct psvc_layout_src src;
	enum arch_id arch_id;
	void (*pin)(void *ctx, uint64_t addr, const void *bytes, size_t len);
	void *pin_ctx;
	/* may be NULL: the fields of struct pthread, checked (n 0 when
	 * they cannot all be placed in DBS_MAX_PIECES pieces) */
	struct dbs_pieces *pieces;
};
int dbs_tdb_check_layouts(const struct tdb_check_io *io,
		      uint32_t *ret_sizeof_pthread, char *why, size_t whylen);


/* ---- the lock analysis (locks.c and lock_*.c, locks_int.h) --------------- */

/*
 * What the lock analysis consults besides the snapshot.  The session fills
 * it from proc_service (dbs_locks_run); the unit tests from synthetic
 * memory.  Every callback may be NULL.
 */
struct dbs_glibc_locks;

struct dbs_lock_input {
	const struct arch_desc *arch;
	uint32_t tid_offset;		/* offsetof(struct pthread, tid); 0: unknown */
	uint32_t sizeof_pthread;	/* 0: unknown */
	/* Target memory as it was during the stop: exactly len bytes, 0 or
	 * a negative errno (never the live process). */
	int (*read)(void *ctx, uint64_t addr, void *buf, size_t len);
	/* The symbol covering addr: 0 and *ret filled (module and name
	 * malloc'ed, name demangled) and *ret_size its st_size, or -ENOENT. */
	int (*symbol)(void *ctx, uint64_t addr, struct dbs_symbol *ret,
		      uint64_t *ret_size);
	/*
	 * Frame evidence, the hook for the unwinder: the function names of
	 * snap->threads[i]'s frames, innermost first, into names[0..max)
	 * (a NULL name for a frame without symbol); returns how many.  The
	 * names must stay valid until dbs_locks_analyse() returns.  sps[k] is
	 * the stack pointer in frame k (0: unknown), what tells which frame a
	 * word on the stack belongs to.  NULL, or 0 frames: the analysis
	 * claims only what registers and memory prove.
	 */
	size_t (*frames)(void *ctx, const struct dbs_snapshot *snap, size_t i,
			 const char **names, uint64_t *sps, size_t max);
	void *ctx;
	void *frames_ctx;		/* passed to frames() instead of ctx */
	/* offsetof(struct pthread, cleanup); 0: unknown (condwait.c) */
	uint32_t cleanup_offset;
	/* The layouts verified for the target's glibc (the row of
	 * glibc_locks.c's table for it); NULL: glibc 2.36's, unless
	 * glibc_unverified says why there is none: then no lock word is
	 * decoded, and no wait is matched to a pthread object (never another
	 * version's layout). */
	const struct dbs_glibc_locks *glibc;
	const char *glibc_unverified;
	/* With glibc_unverified: each lock's note (NULL: that its glibc's
	 * layout is not verified). */
	const char *undecoded_note;
	/* musl's objects (lock_musl.c) in place of glibc's */
	bool musl;
};

/* lock_held.c: which thread holds which mutex or rwlock.  During the stop
 * (after dbs_locks_prefetch): copy the words of every lock the session
 * remembers.  After dbs_locks_run(): every stopped (or, nonblocking,
 * observed) thread's held locks, from the words of the locks waited on now
 * and of those remembered; then remember this update's.  0 or -ENOMEM. */
void dbs_held_prefetch(struct dbs_session *s);
int dbs_held_run(struct dbs_session *s, struct dbs_snapshot *snap);
void dbs_held_forget_all(struct dbs_session *s);
/* Free what dbs_held_run() added to a snapshot.  Idempotent. */
void dbs_held_free(struct dbs_snapshot *snap);
/* The TID (as the target's PID namespace numbers it) that the words of a
 * mutex or rwlock, decoded in l, record as holding it; 0 when they prove
 * none (not held, held by readers, being acquired or released, elided,
 * or words no lock of that kind has).  Pure. */
pid_t dbs_held_recorded_holder(const struct dbs_lock *l);

/* While the target is stopped: read (batched) the words of every lock a
 * blocked thread waits on, nothing else (lock_prefetch.c). */
void dbs_locks_prefetch(struct dbs_session *s);
/* After the resume: dbs_locks_analyse() with the session's inputs. */
int dbs_locks_run(struct dbs_session *s, struct dbs_snapshot *snap);
/* Fill every thread's blocked_on and snap->locks.  0 or -ENOMEM (then
 * nothing is left allocated). */
int dbs_locks_analyse(struct dbs_snapshot *snap, const struct dbs_lock_input *in);
/* Free what dbs_locks_analyse() added to the snapshot.  Idempotent
 * (lock_objects.c). */
void dbs_locks_free(struct dbs_snapshot *snap);
/* Decode l->words (l->nwords bytes at l->addr) as l->kind into l->u:
 * pure, no target access.  Returns false if too few words
 * (glibc_locks.c). */
bool dbs_lock_decode(const struct arch_desc *a, struct dbs_lock *l);
/* runtimes.c: snap->runtimes (and a warning each) from the module map and
 * symbols; dbs_runtimes_free() is idempotent. */
void dbs_runtimes_detect(struct dbs_session *s, struct dbs_snapshot *snap);
void dbs_runtimes_free(struct dbs_snapshot *snap);

/* stalls.c: snap->locks->stalls from the wait-for graph (succ: thread
 * index -> the thread it waits for; lockof: thread index -> lock index;
 * oncycle: the thread is on a deadlock).  0 or -ENOMEM. */
int dbs_stalls_find(struct dbs_snapshot *snap, const size_t *succ,
		    const size_t *lockof, const bool *oncycle);
/* progress.c: whether system call nr with args waits, with no timeout,
 * for something from outside the process (a read on a pipe or socket,
 * accept, poll without timeout, wait4, pause...). */
bool dbs_syscall_waits_outside(const struct arch_desc *a, long nr,
			       const uint64_t *args);

/* condwait.c: the cond (and its mutex) a waiter asleep on futex sleeps on,
 * from the cleanup record in its struct pthread at pd; false if that
 * record does not prove it. */
bool dbs_condwait_object(const struct dbs_lock_input *in, uint64_t pd,
		     uint64_t futex, uint64_t *ret_cond, uint64_t *ret_mutex);
/* offsetof(struct pthread, cleanup) in the target's libc, 0 if unknown;
 * cached per module generation. */
uint32_t dbs_condwait_cleanup_offset(struct dbs_session *s);
/* Keep what dbs_condwait_object() reads of the thread at pd before its
 * stack copy is given up (psvc_frozen_done). */
void dbs_condwait_retain(struct dbs_session *s, uint64_t pd, size_t mutex_max);

/* ---- symbolize.c --------------------------------------------------------- */

/* C++ demangling of a symbol name: a malloc'ed copy (demangled if it
 * is a mangled name that demangles), NULL on ENOMEM. */
char *dbs_demangle(const char *name);
/* addr as module + symbol + offset (strings owned by ret) */
void dbs_symbolize(struct psvc_target *t, uint64_t addr, struct dbs_symbol *ret);
/* The symbol that covers addr (within its size; a sizeless one only at
 * its very address), demangled, and its size: 0, or -ENOENT. */
int dbs_symbol_covering(struct psvc_target *t, uint64_t addr,
			struct dbs_symbol *ret, uint64_t *ret_size);
/* A subprogram's or inlined instance's name (linkage name first), through
 * its abstract origin; NULL if none. */
const char *dbs_die_name(Dwarf_Die *die);
/* An inlined instance's call site: its file (in cudie's line table) and
 * line; NULL and 0 if the DWARF does not say. */
const char *dbs_die_call_file(Dwarf_Die *cudie, Dwarf_Die *die);
int dbs_die_call_line(Dwarf_Die *die);

/* ---- messages.c ----------------------------------------------------------- */

/* A malloc'ed copy, NULL for NULL (or on ENOMEM). */
char *dbs_strdup(const char *s);
/* A formatted, malloc'ed message; NULL on ENOMEM. */
char *dbs_vformat(const char *fmt, va_list ap)
	__attribute__((format(printf, 1, 0)));
char *dbs_format(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Add a formatted message to the list *errs of *n: 0 or -ENOMEM. */
int dbs_add_error(char ***errs, size_t *n, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* waits.c: follow each thread's wait from the last update to this one
 * and set every thread's waiting_since_ns (after the locks are analysed) */
struct dbs_waits;
void dbs_waits_track(struct dbs_session *s, struct dbs_snapshot *snap);
void dbs_waits_free(struct dbs_waits *w);

/* stacktop.c: where the copy of a stack whose descriptor pd lies above
 * its sp ends (pd, or below pd's static TLS once learned); learn from a
 * snapshot's unwound stacks */
uint64_t dbs_stacktop_end(const struct dbs_session *s, uint64_t pd, uint64_t sp);
void dbs_stacktop_learn(struct dbs_session *s, const struct dbs_snapshot *snap);

#endif
