/*
 * unwind.c: native backtraces with elfutils' libdwfl, after the resume,
 * from the copies the stop took (registers and the top of each stack).
 *
 * The target is never touched here: libdwfl gets tinspect's own thread
 * callbacks (Dwfl_Thread_Callbacks through dwfl_attach_state), whose
 * memory_read answers from the frozen capture only.  A frame that needs
 * memory the stop did not copy ends the stack with a "truncated" marker;
 * it is never filled in from live memory, so no frame is ever wrong.
 *
 * The Dwfl (modules, CFI, DWARF, symbol tables) lives as long as the
 * session and is re-synchronised only when the module generation moves
 * (dlopen, dlclose, exec): libdwfl keeps modules that are re-reported at
 * the same place.  Symbolization is cached per pc for the same
 * generation (unwind_sym.c): thousands of idle threads share a handful
 * of frames.
 *
 * aarch64 (docs/ARCH.md): return addresses saved by code built with
 * pointer authentication carry a PAC in their top bits, which libdwfl
 * does not strip; the words it reads and the link register are stripped
 * here when what remains is an address in executable memory.  And the
 * vDSO's signal trampoline only describes the frame record the kernel
 * left (the interrupted pc and x29, no sp, no link register): at that
 * frame the walk starts again from the registers the signal frame saved.
 * A frame without CFI is stepped through by its frame record
 * (framerec.c), not by elfutils' fallback, and the walk starts again
 * from its caller.
 */
#include "dbs_int.h"
#include "unwind_int.h"

#include <dwarf.h>
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char *dbs_stack_end_name(enum dbs_stack_end e)
{
	switch (e) {
	case DBS_STACK_NONE: return "none";
	case DBS_STACK_COMPLETE: return "complete";
	case DBS_STACK_TRUNCATED: return "truncated";
	case DBS_STACK_MAX_FRAMES: return "max_frames";
	case DBS_STACK_BAD_SP: return "bad_sp";
	case DBS_STACK_ERROR: return "error";
	case DBS_STACK_UNKNOWN_CODE: return "unknown_code";
	case DBS_STACK_SWITCH: return "stack_switch";
	case DBS_STACK_SCANNED: return "scanned";
	case DBS_STACK_REGISTER_UNKNOWN: return "register_unknown";
	}
	return "error";
}

bool dbs_stack_end_is_error(enum dbs_stack_end e)
{
	return e == DBS_STACK_BAD_SP || e == DBS_STACK_ERROR;
}

/* ---- libdwfl thread callbacks ------------------------------------------------------ */

static pid_t cb_next_thread(Dwfl *dwfl, void *arg, void **thread_argp)
{
	(void)dwfl, (void)arg, (void)thread_argp;
	return 0;	/* we never iterate: dwfl_getthread_frames by TID */
}

static bool cb_get_thread(Dwfl *dwfl, pid_t tid, void *arg, void **thread_argp)
{
	(void)dwfl;
	struct dbs_unwinder *u = arg;
	if (!u->cur || u->cur->tid != tid)
		return false;
	*thread_argp = u;
	return true;
}

/* v without its PAC bits if that is an address in executable memory (a
 * signed return address), else v as it is: the unwinder reads saved
 * registers of every kind, and only code addresses may be changed. */
static uint64_t strip_pac(struct dbs_unwinder *u, uint64_t v)
{
	if (!(v & u->pac_mask))
		return v;
	uint64_t a = v & ~u->pac_mask;
	struct psvc_map m;
	if (psvc_map_lookup(u->t, a, &m, NULL) == 0 && m.perms[2] == 'x')
		return a;
	return v;
}

/* A word of the capture, its PAC stripped where it is a code address; the
 * first miss is remembered (the walk then says which address it lacked). */
static bool read_word(struct dbs_unwinder *u, uint64_t addr, uint64_t *ret)
{
	uint64_t v;
	if (psvc_read_frozen(u->t, addr, &v, sizeof v)) {
		if (!u->missed)
			u->miss_addr = addr;
		u->missed = true;
		return false;
	}
	*ret = strip_pac(u, v);
	return true;
}

static bool cb_memory_read(Dwfl *dwfl, Dwarf_Addr addr, Dwarf_Word *result,
			   void *arg)
{
	(void)dwfl;
	return read_word(arg, addr, result);	/* a Dwarf_Word is a uint64_t */
}

static bool cb_set_initial_registers(Dwfl_Thread *thread, void *thread_arg)
{
	struct dbs_unwinder *u = thread_arg;
	if (u->restart && !u->restart_gregs) {
		/* after Go frames: only pc and sp are known */
		Dwarf_Word sp = u->restart_sp;
		if (!dwfl_thread_state_registers(thread, arch_dwarf_sp(u->arch), 1, &sp))
			return false;
		dwfl_thread_state_register_pc(thread, u->restart_pc);
		return true;
	}
	if (u->cur->observed && !u->restart_gregs) {
		/* nonblocking: only pc and sp are known; every other register
		 * stays undefined, so a frame whose CFA needs one ends the
		 * stack instead of being computed from a made-up 0 */
		Dwarf_Word sp = u->cur->sp;
		if (!dwfl_thread_state_registers(thread, arch_dwarf_sp(u->arch), 1, &sp))
			return false;
		dwfl_thread_state_register_pc(thread, u->cur->pc);
		return true;
	}
	const uint64_t *gregs = u->restart_gregs ? u->restart_gregs : u->cur->gregs;
	Dwarf_Word dw[64];
	unsigned n = arch_gregs_to_dwarf(u->arch, gregs, dw, 64);
	/* the link register (aarch64's x30) may hold a signed return address */
	int lr = u->arch->dwarf_lr;
	if (u->pac_mask && lr >= 0 && n > (unsigned)lr)
		dw[lr] = strip_pac(u, dw[lr]);
	if (!dwfl_thread_state_registers(thread, 0, n, dw))
		return false;
	/* x86_64's DWARF 16 is rip; aarch64 has no DWARF pc column */
	if (u->arch->dwarf_pc < 0)
		dwfl_thread_state_register_pc(thread, arch_pc(u->arch, gregs) -
						      (u->restart_at_return ? 1 : 0));
	return true;
}

static const Dwfl_Thread_Callbacks thread_callbacks = {
	.next_thread = cb_next_thread,
	.get_thread = cb_get_thread,
	.memory_read = cb_memory_read,
	.set_initial_registers = cb_set_initial_registers,
};

/* ---- modules ----------------------------------------------------------------- */

static void reported_free(struct dbs_unwinder *u)
{
	for (size_t i = 0; i < u->nrep; i++)
		free(u->rep[i].name);
	free(u->rep);
	u->rep = NULL;
	u->nrep = 0;
}

/* Report the target's modules to libdwfl, keeping the unchanged ones. */
static int sync_modules(struct dbs_unwinder *u)
{
	struct psvc_target *t = u->t;
	size_t n = psvc_nmodules(t);
	struct reported *rep = calloc(n ? n : 1, sizeof *rep);
	if (!rep)
		return -ENOMEM;
	size_t nrep = 0;
	dwfl_report_begin(u->dwfl);
	for (size_t i = 0; i < n; i++) {
		struct psvc_module *m = psvc_module_at(t, i);
		const char *name = m->path ? m->path : "?";
		const struct reported *old = NULL;
		for (size_t j = 0; j < u->nrep && !old; j++)
			if (u->rep[j].dev == m->dev && u->rep[j].ino == m->ino &&
			    u->rep[j].map_start == m->map_start &&
			    !strcmp(u->rep[j].name, name))
				old = &u->rep[j];
		Dwfl_Module *dm;
		Dwarf_Addr low, high;
		if (old) {
			dm = dwfl_report_module(u->dwfl, name, old->low, old->high);
			low = old->low;
			high = old->high;
		} else {
			/* the range only: the ELF is opened when libdwfl
			 * first needs it (dbs_dbg_find_elf), and holds no
			 * descriptor then */
			int err = psvc_module_span(t, m, &low, &high);
			if (err) {
				/* stacks end at its frames, saying why */
				dbs_dbg_files_open_failed(u->files, name, -err);
				continue;
			}
			dm = dwfl_report_module(u->dwfl, name, low, high);
			dbs_dbg_files_open_ok(u->files, name);
		}
		if (!dm)
			continue;
		void **userdata;
		dwfl_module_info(dm, &userdata, NULL, NULL, NULL, NULL, NULL, NULL);
		*userdata = u->files;
		rep[nrep++] = (struct reported){ m->dev, m->ino, m->map_start,
						 strdup(name), low, high };
	}
	dwfl_report_end(u->dwfl, NULL, NULL);
	reported_free(u);
	u->rep = rep;
	u->nrep = nrep;
	return 0;
}

int dbs_unwinder_new(struct psvc_target *t, struct dbs_unwinder **ret)
{
	struct dbs_unwinder *u = calloc(1, sizeof *u);
	if (!u)
		return -ENOMEM;
	u->t = t;
	u->arch = psvc_arch(t);
	/* separate debuginfo by build-id or debuglink under /usr/lib/debug;
	 * debuginfod only if the user kept DEBUGINFOD_URLS (--debuginfod);
	 * every file opened by tinspect, never blocking (debuginfo.c) */
	u->cb.find_elf = dbs_dbg_find_elf;
	u->cb.find_debuginfo = dbs_dbg_find_debuginfo;
	u->files = dbs_dbg_files_new(t);
	u->dwfl = u->files ? dwfl_begin(&u->cb) : NULL;
	if (!u->dwfl) {
		dbs_dbg_files_free(u->files);
		free(u);
		return -ENOMEM;
	}
	*ret = u;
	return 0;
}

void dbs_unwinder_free(struct dbs_unwinder *u)
{
	if (!u)
		return;
	if (u->dwfl)
		dwfl_end(u->dwfl);
	dbs_dbg_files_free(u->files);
	dbs_unwind_cache_clear(u);
	free(u->scratch.frames);
	reported_free(u);
	dbs_strpool_unref(u->pool);
	free(u);
}

/* The PAC mask from the highest module (arch_pac_mask: the address space
 * the process uses) and the vDSO's signal trampoline, if any. */
static void find_arch_marks(struct dbs_unwinder *u)
{
	u->pac_mask = 0;
	u->sigtramp = 0;
	if (!u->arch->pac && !u->arch->sigreturn_sym)
		return;
	uint64_t top = 0;
	for (size_t i = 0; i < psvc_nmodules(u->t); i++) {
		const struct psvc_module *m = psvc_module_at(u->t, i);
		if (m->end > top)
			top = m->end;
	}
	u->pac_mask = arch_pac_mask(u->arch, top);
	/* the vDSO's own symbols only: a dozen */
	for (size_t i = 0; u->arch->sigreturn_sym && i < psvc_nmodules(u->t) &&
			   !u->sigtramp; i++) {
		const struct psvc_module *m = psvc_module_at(u->t, i);
		Dwfl_Module *dm = m->path && !strcmp(m->path, "[vdso]")
					  ? dwfl_addrmodule(u->dwfl, m->start) : NULL;
		int n = dm ? dwfl_module_getsymtab(dm) : -1;
		for (int k = 1; k < n; k++) {
			GElf_Sym sym;
			GElf_Addr addr;
			const char *name = dwfl_module_getsym_info(dm, k, &sym, &addr,
								   NULL, NULL, NULL);
			if (name && !strcmp(name, u->arch->sigreturn_sym)) {
				u->sigtramp = addr;
				break;
			}
		}
	}
}

/* Modules whose file could not be opened for a reason that may not last
 * (debuginfo.c) are let go of, and sync_modules() reports them as new:
 * libdwfl remembers a failed find_elf for the module's life (it tries
 * only while mod->elferr is DWFL_E_NOERROR), and a module reported again
 * unchanged is the same one; a report without them frees them. */
static void drop_transient(struct dbs_unwinder *u)
{
	dwfl_report_begin(u->dwfl);
	size_t k = 0;
	for (size_t i = 0; i < u->nrep; i++) {
		struct reported *r = &u->rep[i];
		int err = dbs_dbg_files_open_errno(u->files, r->name);
		if (err && dbs_dbg_open_transient(err)) {
			free(r->name);
			continue;
		}
		if (!dwfl_report_module(u->dwfl, r->name, r->low, r->high)) {
			free(r->name);
			continue;	/* out of memory: made afresh below */
		}
		u->rep[k++] = *r;
	}
	u->nrep = k;
	dwfl_report_end(u->dwfl, NULL, NULL);
	dbs_dbg_files_forget_failures(u->files, true);
}

int dbs_unwinder_sync(struct dbs_unwinder *u)
{
	uint64_t gen = psvc_modules_generation(u->t);
	bool retry = dbs_dbg_files_transient(u->files);
	if (u->attached && gen == u->generation && !retry)
		return 0;
	if (retry)
		drop_transient(u);
	int err = sync_modules(u);
	if (err)
		return err;
	if (!u->attached) {
		if (!dwfl_attach_state(u->dwfl, NULL, psvc_pid(u->t),
				       &thread_callbacks, u))
			return -ENOEXEC;
		u->attached = true;
	}
	find_arch_marks(u);
	/* new modules, new names: a fresh cache and pool (snapshots that
	 * still use the old pool keep it alive) */
	dbs_unwind_cache_clear(u);
	dbs_strpool_unref(u->pool);
	u->pool = dbs_strpool_new();
	if (!u->pool)
		return -ENOMEM;
	u->generation = gen;
	return 0;
}

struct dbs_strpool *dbs_unwinder_pool(struct dbs_unwinder *u)
{
	return u->pool;
}

struct dbg_files *dbs_unwinder_files(struct dbs_unwinder *u)
{
	return u->files;
}

/* ---- unwinding ------------------------------------------------------------------- */

/* Frames in a row outside any module before the walk gives up: JIT
 * code nests (interpreter and compiled frames alternate), garbage that
 * happens to follow a plausible frame pointer chain does not for long. */
#define MAX_UNKNOWN_RUN 64

struct walk {
	struct dbs_unwinder *u;
	uint64_t pcs[1025];
	uint64_t sps[1025];	/* 0: unknown */
	bool activation[1025];
	unsigned n, max;
	uint64_t prev_sp;
	unsigned same_sp;
	unsigned unknown_run;	/* frames in a row outside any module */
	enum dbs_stack_end end;
	const char *why;
	/* libdwfl reached Go code: the Go walk (gowalk.c) goes on from
	 * there */
	bool to_go;
	uint64_t go_pc, go_sp, go_lr;
	bool go_act, go_have_lr;
	bool restarted;		/* the next frame is the first of a restart */
	/* why this part of the walk stopped early, and the registers to
	 * start the next from: a signal frame's, or the caller's of a frame
	 * without CFI (aarch64) */
	enum { RESTART_NONE, RESTART_SIGFRAME, RESTART_RETURN } restart;
	uint64_t next_gregs[ARCH_MAX_GREGS];
	uint64_t restart_gregs[ARCH_MAX_GREGS];
	unsigned part_frames;	/* frames of this part so far */
	struct dbs_scan scan;	/* stackscan.c */
};

/* The address to symbolize for frame i: a return address points after
 * the call, so pc - 1 finds the call's own line and inline context. */
static uint64_t look_pc(const struct walk *w, unsigned i)
{
	return w->activation[i] ? w->pcs[i] : w->pcs[i] - 1;
}

/* At the vDSO's signal trampoline, sp is the kernel's rt_sigframe: take
 * the interrupted registers from it (from the capture only), to walk on
 * from there. */
static bool read_sigframe(struct walk *w, uint64_t sp)
{
	unsigned n;
	uint64_t off = arch_sigframe_gregs(w->u->arch, &n);
	if (!off || n > ARCH_MAX_GREGS || sp + off < sp)
		return false;
	uint64_t g[ARCH_MAX_GREGS];
	if (psvc_read_frozen(w->u->t, sp + off, g, n * sizeof *g))
		return false;
	/* the interrupted context is older, so higher on the same stack; or
	 * on another (the handler ran on an alternate signal stack) */
	uint64_t isp = arch_sp(w->u->arch, g);
	struct psvc_map m;
	if (isp <= sp && (psvc_map_lookup(w->u->t, sp, &m, NULL) != 0 ||
			  (isp >= m.start && isp < m.end)))
		return false;
	memcpy(w->next_gregs, g, n * sizeof *g);
	w->restart = RESTART_SIGFRAME;
	return true;
}

/* A word of the capture for framerec.c, read as the unwinder's own are. */
static bool record_read(void *ctx, uint64_t addr, uint64_t *v)
{
	return read_word(ctx, addr, v);
}

/* aarch64: frame i has no CFI, so step to its caller by its frame record
 * and end this part of the walk, to go on from the caller (framerec.c:
 * elfutils' own fallback gets GCC's frames wrong).  False if the frame
 * has CFI, or was the thread's innermost (its return address may still
 * be in x30: libdwfl's fallback takes it from there). */
static const char *module_failure(struct dbs_unwinder *u, uint64_t pc);

static bool step_by_record(struct walk *w, Dwfl_Frame *frame, uint64_t pc, bool act,
			   uint64_t sp, int *cb_ret)
{
	struct dbs_unwinder *u = w->u;
	if (!u->arch->frame_records || act || dbs_cfi_covers(u->dwfl, pc - 1))
		return false;
	/* no CFI because the module's file could not be opened: whether its
	 * code keeps frame records is not known, so a caller found by one
	 * would be a guess; the stack ends here and says why, as where
	 * libdwfl steps past such a module */
	const char *failed = module_failure(u, pc - 1);
	if (failed) {
		w->end = DBS_STACK_ERROR;
		w->why = failed;
		*cb_ret = DWARF_CB_ABORT;
		return true;
	}
	uint64_t g[ARCH_MAX_GREGS] = { 0 };
	for (unsigned r = 0; r < u->arch->ndwarf_gregs; r++) {
		Dwarf_Word v;
		if (dwfl_frame_reg(frame, r, &v) == 0)
			g[u->arch->dwarf_gregs[r]] = v;
	}
	g[u->arch->sp_idx] = sp;
	g[u->arch->pc_idx] = pc;
	struct dbs_framerec_io io = { u->dwfl, record_read, u };
	const char *why;
	*cb_ret = DWARF_CB_ABORT;
	switch (dbs_framerec_step(&io, g, w->next_gregs, &why)) {
	case DBS_FRAMEREC_CALLER:
		w->restart = RESTART_RETURN;
		break;
	case DBS_FRAMEREC_OUTERMOST:
	case DBS_FRAMEREC_MISSED:	/* u->missed: truncated */
		break;
	case DBS_FRAMEREC_BAD:
		w->end = DBS_STACK_ERROR;
		w->why = why;
		break;
	}
	return true;
}

/* Why the frame at (looked-up) pc leads nowhere known: its module's file
 * could not be opened for libdwfl, so what libdwfl found past it is a
 * guess from the frame pointer, or nothing; NULL if it was opened. */
static const char *module_failure(struct dbs_unwinder *u, uint64_t pc)
{
	const struct psvc_module *m = psvc_module_for_addr(u->t, pc);
	char buf[4500];
	const char *why = m ? dbs_dbg_files_why(u->files, m->path, buf, sizeof buf)
			    : NULL;
	return why ? dbs_strpool_intern(u->pool, why) : NULL;
}

static int frame_cb(Dwfl_Frame *frame, void *arg)
{
	struct walk *w = arg;
	Dwarf_Addr pc;
	bool act;
	if (!dwfl_frame_pc(frame, &pc, &act))
		return DWARF_CB_ABORT;
	/* a part of the walk that starts at a frame record's return
	 * address: libdwfl was given it less 1 */
	if (w->part_frames++ == 0 && w->u->restart_at_return) {
		pc += 1;
		act = false;
	}
	/* libdwfl stepped here from the frame before without its module's
	 * file: not a frame to show, the stack ends there with why */
	const char *failed = w->part_frames > 1 && w->n > 0
				     ? module_failure(w->u, look_pc(w, w->n - 1))
				     : NULL;
	if (failed) {
		w->end = DBS_STACK_ERROR;
		w->why = failed;
		return DWARF_CB_ABORT;
	}
	Dwarf_Word sp;
	unsigned spreg = arch_dwarf_sp(w->u->arch);
	bool have_sp = dwfl_frame_reg(frame, spreg, &sp) == 0;
	if (w->restarted) {
		/* a restart's first pc is a return address */
		act = false;
		w->restarted = false;
	}
	/* a frame a signal interrupted (libdwfl's activation, past the
	 * signal trampoline) may lie on another stack than the handler's,
	 * below it: the handler ran on an alternate signal stack
	 * (sigaltstack; Go runs every handler on its gsignal stack) */
	bool below_ok = w->n > 0 && act;
	/* Go code is unwound with the Go function table, from pc and sp */
	struct psvc_gofunc gf;
	if (have_sp && (w->n == 0 || sp >= w->prev_sp || below_ok) &&
	    psvc_go_func(w->u->t, act ? pc : pc - 1, &gf) == 0) {
		w->to_go = true;
		w->go_pc = pc;
		w->go_sp = sp;
		w->go_act = act;
		/* a frameless Go function returns through the link
		 * register: an activation's is known (the thread's
		 * registers, or the ones a signal frame saved) */
		Dwarf_Word lr;
		int lr_reg = w->u->arch->dwarf_lr;
		w->go_have_lr = act && lr_reg >= 0 &&
				dwfl_frame_reg(frame, (unsigned)lr_reg, &lr) == 0;
		w->go_lr = w->go_have_lr ? strip_pac(w->u, lr) : 0;
		return DWARF_CB_ABORT;
	}
	if (have_sp) {
		if (w->n > 0 && sp < w->prev_sp && !below_ok) {
			w->end = DBS_STACK_BAD_SP;
			w->why = "the stack pointer moved down: garbage or a loop";
			return DWARF_CB_ABORT;
		}
		w->same_sp = w->n > 0 && sp == w->prev_sp ? w->same_sp + 1 : 0;
		if (w->same_sp > 8) {
			w->end = DBS_STACK_BAD_SP;
			w->why = "the stack pointer stopped moving: a loop";
			return DWARF_CB_ABORT;
		}
		w->prev_sp = sp;
	}
	/* A return address outside any module is JIT or generated code (or
	 * garbage).  It has no CFI, but libdwfl goes on through the frame
	 * pointer chain (elfutils backends/x86_64_unwind.c, as eu-stack
	 * does), and CFI again from the next native frame: JVM threads reach
	 * start_thread through their interpreted and compiled frames.  The
	 * sp checks above stop a chain that is garbage. */
	if (w->n > 0 && !psvc_module_for_addr(w->u->t, pc)) {
		if (++w->unknown_run > MAX_UNKNOWN_RUN) {
			w->end = DBS_STACK_UNKNOWN_CODE;
			return DWARF_CB_ABORT;
		}
	} else {
		w->unknown_run = 0;
	}
	if (w->n == w->max) {
		w->end = DBS_STACK_MAX_FRAMES;
		return DWARF_CB_ABORT;
	}
	w->pcs[w->n] = pc;
	w->sps[w->n] = have_sp ? sp : 0;
	w->activation[w->n] = act;
	w->scan.scanned[w->n] = w->scan.next;
	w->scan.next = false;
	w->n++;
	if (w->u->sigtramp && pc == w->u->sigtramp && have_sp &&
	    read_sigframe(w, sp)) {
		/* nothing called the trampoline: the handler returns to it,
		 * so its pc is its own (not a return address after a call) */
		w->activation[w->n - 1] = true;
		return DWARF_CB_ABORT;
	}
	int ret;
	if (have_sp && step_by_record(w, frame, pc, act, sp, &ret))
		return ret;
	return DWARF_CB_OK;
}

/* Is addr on the stack mapping that holds th's sp?  A read that missed
 * the copy there is a stack deeper than --stack-bytes; elsewhere it is a
 * frame pointer that was no frame pointer. */
static bool on_sp_mapping(struct dbs_unwinder *u, const struct dbs_thread *th,
			  uint64_t addr)
{
	struct psvc_map m;
	return psvc_map_lookup(u->t, th->sp, &m, NULL) == 0 && addr >= m.start &&
	       addr < m.end;
}

/* How libdwfl's walk ended (rc), when it did not hand over to Go. */
static void dwfl_walk_end(struct dbs_unwinder *u, struct walk *w, int rc)
{
	/* libdwfl takes a return address it could not read, or a register
	 * lost to an earlier failed read, for the end of the stack
	 * (frame_unwind.c: pc_state PC_UNDEFINED).  Only our own record of
	 * a read that missed the capture tells a truncated stack from a
	 * complete one.  The copy spans sp to the top of the stack mapping
	 * unless the stack is deeper than --stack-bytes, so a missed read
	 * means the outer frames were not copied. */
	/* the last frame's module could not be opened: libdwfl's error
	 * ("Callback returned failure") or the end it found is no answer */
	const char *failed = w->end == DBS_STACK_COMPLETE && w->n > 0
				     ? module_failure(u, look_pc(w, w->n - 1))
				     : NULL;
	if (failed) {
		w->end = DBS_STACK_ERROR;
		w->why = failed;
	} else if (w->end == DBS_STACK_COMPLETE && u->missed)
		w->end = DBS_STACK_TRUNCATED;
	else if (rc == -1 && w->end == DBS_STACK_COMPLETE) {
		w->end = DBS_STACK_ERROR;
		w->why = dbs_strpool_intern(u->pool, dwfl_errmsg(-1));
		/* libdwfl says "No DWARF information found" when the file
		 * could not even be opened: say why */
		const char *what;
		int fe = dbs_dbg_files_fd_errno(u->files, &what);
		char buf[512];
		if (fe) {
			snprintf(buf, sizeof buf, "out of file descriptors (%s) "
				 "opening %s: %s", fe == EMFILE ? "EMFILE" : "ENFILE",
				 what, w->why ? w->why : "");
			w->why = dbs_strpool_intern(u->pool, buf);
		}
	}
}

/* libdwfl's walk of th from where the walk stands (the thread's
 * registers, or pc and sp after Go frames): a part that stopped at a
 * signal frame goes on from the registers it saved, one that stopped at
 * a frame without CFI (aarch64) from its caller's; each part adds a
 * frame, as many as are left.  Its return is libdwfl's last. */
static int dwfl_walk(struct dbs_unwinder *u, struct dbs_thread *th, struct walk *w)
{
	if (!u->attached)
		return -1;
	w->part_frames = 0;
	int rc = dwfl_getthread_frames(u->dwfl, th->tid, frame_cb, w);
	while (rc != -1 && !w->to_go && w->restart != RESTART_NONE &&
	       w->end == DBS_STACK_COMPLETE && !u->missed && w->n < w->max) {
		memcpy(w->restart_gregs, w->next_gregs, sizeof w->restart_gregs);
		u->restart_gregs = w->restart_gregs;
		u->restart_at_return = w->restart == RESTART_RETURN;
		w->restart = RESTART_NONE;
		w->part_frames = 0;
		rc = dwfl_getthread_frames(u->dwfl, th->tid, frame_cb, w);
		u->restart_gregs = NULL;
		u->restart_at_return = false;
	}
	w->restart = RESTART_NONE;
	return rc;
}

/* A frame of the Go walk (gowalk.c), into the walk's arrays. */
static bool push_frame(void *ctx, uint64_t pc, uint64_t sp, bool act)
{
	struct walk *w = ctx;
	if (w->n == w->max)
		return false;
	w->pcs[w->n] = pc;
	w->sps[w->n] = sp;
	w->activation[w->n] = act;
	w->scan.scanned[w->n] = false;
	w->n++;
	w->prev_sp = sp;
	w->same_sp = 0;
	w->unknown_run = 0;
	return true;
}

/* Past code without CFI, go on from the next return address a scan of
 * the stack finds (true), or end the walk. */
static bool scan_on(struct dbs_unwinder *u, const struct dbs_thread *th,
		    struct walk *w)
{
	bool ended = w->end == DBS_STACK_COMPLETE && !u->missed;
	if (!w->scan.on || u->restart || w->end == DBS_STACK_MAX_FRAMES || w->n >= w->max ||
	    !dbs_stackscan_resume(u->dwfl, u->t, th, &w->scan, w->pcs, w->sps,
				  w->activation, &w->n, ended, w->restart_gregs))
		return false;
	w->prev_sp = w->sps[w->n - 1];
	w->same_sp = w->unknown_run = 0;
	w->end = DBS_STACK_COMPLETE;
	w->why = NULL;
	u->restart_gregs = w->restart_gregs;
	return u->restart_at_return = true;
}

/* Hand-overs between libdwfl and the Go walk in one stack, at most: each
 * moves up the stack, so garbage cannot loop, but it can go on long. */
#define MAX_HANDOVERS 16

/* Walk th's frames into w: libdwfl from the registers, the Go walk from
 * the first Go frame libdwfl meets, libdwfl again (from pc and sp only)
 * where Go frames return into other code. */
static void walk_thread(struct dbs_unwinder *u, struct dbs_thread *th,
			struct walk *w)
{
	u->restart = false;
	for (unsigned round = 0; round < MAX_HANDOVERS; round++) {
		u->missed = false;
		w->to_go = false;
		int rc = dwfl_walk(u, th, w);
		u->restart_gregs = NULL;
		u->restart_at_return = false;
		if (!w->to_go) {
			dwfl_walk_end(u, w, rc);
			if (scan_on(u, th, w))
				continue;
			if (w->scan.scans && w->end != DBS_STACK_MAX_FRAMES)
				w->end = DBS_STACK_SCANNED, w->why = NULL;
			return;
		}
		struct dbs_go_walk g = {
			.pc = w->go_pc, .sp = w->go_sp, .activation = w->go_act,
			.have_lr = w->go_have_lr, .lr = w->go_lr,
			.push = push_frame, .ctx = w,
		};
		dbs_go_walk(u->t, u->arch, &g);
		if (g.result == DBS_GOWALK_LEFT) {
			u->restart = true;
			u->restart_pc = g.pc;
			u->restart_sp = g.sp;
			w->restarted = true;
			continue;
		}
		if (g.result == DBS_GOWALK_NOT_GO) {
			/* frame_cb found a Go function there a moment ago */
			w->end = DBS_STACK_ERROR;
			w->why = "the Go function table changed during the walk";
			return;
		}
		w->end = g.end;
		w->why = g.why ? dbs_strpool_intern(u->pool, g.why) : NULL;
		if (g.missed) {
			u->missed = true;
			u->miss_addr = g.miss_addr;
			/* a frame size that leads out of the stack is no
			 * frame size (see on_sp_mapping) */
			if (!on_sp_mapping(u, th, g.miss_addr)) {
				w->end = DBS_STACK_ERROR;
				w->why = "a Go frame's size in the Go function table "
					 "leads out of its stack";
			}
		}
		return;
	}
	w->end = DBS_STACK_ERROR;
	w->why = "the stack goes back and forth between Go and other code "
		 "more than 16 times";
}

void dbs_unwinder_unwind(struct dbs_unwinder *u, struct dbs_thread *th,
		     unsigned max_frames, bool scan)
{
	struct walk *w = calloc(1, sizeof *w);
	if (!w)
		return;
	w->u = u;
	w->max = max_frames > 1024 ? 1024 : max_frames;
	w->end = DBS_STACK_COMPLETE;
	w->scan.on = scan;
	u->cur = th;
	walk_thread(u, th, w);
	u->restart = false;
	u->cur = NULL;
	/* Where the walk failed from code outside any module, or after it
	 * (no CFI, and no usable frame pointer chain: compiled JIT code may
	 * use rbp as a general register, and what its "frame pointer" leads
	 * to is garbage), the caller is unknowable: that is what such code
	 * is, not a failure to read the thread.  The stack says where it
	 * stopped and why, without an error. */
	bool last_unknown = w->n > 0 && !psvc_module_for_addr(u->t, w->pcs[w->n - 1]);
	bool passed_unknown = last_unknown;
	for (unsigned i = 0; i < w->n && !passed_unknown; i++)
		passed_unknown = !psvc_module_for_addr(u->t, w->pcs[i]);
	if (passed_unknown &&
	    ((w->end == DBS_STACK_COMPLETE && last_unknown) ||
	     dbs_stack_end_is_error(w->end) ||
	     (w->end == DBS_STACK_TRUNCATED && !on_sp_mapping(u, th, u->miss_addr))))
		w->end = DBS_STACK_UNKNOWN_CODE;
	th->stack.end = w->end;
	th->stack.error = w->why && dbs_stack_end_is_error(w->end)
				  ? dbs_strpool_intern(u->pool, w->why) : NULL;

	/* expand each pc through the cache into frames, in an array of
	 * exactly their number (it lives as long as the snapshot: a spare
	 * half per thread was megabytes of peak RSS at 10 000 threads); the
	 * first pass fills the cache, the second finds every pc there */
	size_t total = 0, nf = 0;
	for (unsigned i = 0; i < w->n; i++) {
		const struct sym_entry *e = dbs_unwind_lookup_pc(u, look_pc(w, i));
		total += e && e->nframes ? e->nframes : 1;
	}
	struct dbs_frame *f = malloc((total ? total : 1) * sizeof *f);
	for (unsigned i = 0; f && i < w->n; i++) {
		const struct sym_entry *e = dbs_unwind_lookup_pc(u, look_pc(w, i));
		unsigned k = e ? e->nframes : 0;
		if (nf + (k ? k : 1) > total)
			break;	/* the cache changed between the passes */
		if (!k) {
			f[nf++] = (struct dbs_frame){ .pc = w->pcs[i], .sp = w->sps[i],
						      .scanned = w->scan.scanned[i] };
			continue;
		}
		for (unsigned j = 0; j < k; j++) {
			f[nf] = e->frames[j];
			f[nf].pc = w->pcs[i];
			f[nf].sp = w->sps[i];
			f[nf].scanned = w->scan.scanned[i];
			f[nf].module_offset = f[nf].module ? w->pcs[i] - e->bias : 0;
			/* the offset of a return address is to the pc itself */
			if (!f[nf].inlined && f[nf].symbol && !w->activation[i])
				f[nf].offset += 1;
			nf++;
		}
	}
	if (f && nf < total) {
		/* the second pass stopped early: say so, not a shorter stack */
		th->stack.end = DBS_STACK_ERROR;
		th->stack.error = "symbolizing the frames ran out of memory";
	}
	th->stack.frames = f;
	th->stack.nframes = f ? nf : 0;
	free(w);
}
