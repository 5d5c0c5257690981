/*
 * gowalk.c: Go frames unwound the way the Go runtime unwinds them, with
 * its function table (proc_service/elf/gopclntab.c), not with CFI: a
 * stripped Go binary has no .eh_frame for its Go code, and a frame pointer
 * chain skips the caller of a frameless leaf such as runtime.futex.  The table
 * gives, for every pc, how far sp is below the frame's top, and the
 * caller's sp is that top.  On x86_64 a call pushes the return address,
 * the word right below the top; on aarch64 a Go function saves its link
 * register at its own sp once it has a frame, and a function without a
 * frame returns through the register itself (docs/GO.md §5).  So pc and
 * sp are enough on x86_64, which is also all a nonblocking capture has;
 * on aarch64 the innermost frame of a frameless function also needs the
 * link register, and a nonblocking capture, which has none, ends its stack
 * there (DBS_STACK_REGISTER_UNKNOWN).
 *
 * Where the runtime's own traceback stops, so does this walk, and says
 * why: at a function the table marks as the outermost frame of its stack
 * (runtime.goexit at the bottom of every goroutine, runtime.mstart and
 * runtime.rt0_go at the bottom of a thread's g0 stack) the stack is
 * complete, except at runtime.sigtramp, the bottom of a signal handler's
 * stack, whose interrupted code is on another stack; at a function that
 * writes sp (runtime.mcall, systemstack,
 * asmcgocall, morestack, gogo, the cgo callback) the frames beyond are on
 * another stack, a goroutine's or the thread's g0, which its registers
 * and copy do not reach: DBS_STACK_SWITCH, no error.
 */
#include "dbs_int.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* How many Go frames one walk takes at most (the sink bounds it too). */
#define MAX_GO_FRAMES 1024

/* Calls the runtime injects from a signal handler (an asynchronous
 * preemption, a fault turned into a panic): the "return address" of
 * their frame is the interrupted pc itself, not the pc after a call. */
static bool injected_call(const struct psvc_gofunc *f)
{
	return f->name && (!strcmp(f->name, "runtime.asyncPreempt") ||
			   !strcmp(f->name, "runtime.sigpanic"));
}

/* Where the frame at sp, spdelta bytes deep, returns to (*ret) and its
 * caller's sp (*top); false if the word could not be read (*at: where). */
static bool frame_return(struct psvc_target *t, bool lr_machine,
			 uint64_t sp, uint64_t spdelta, uint64_t *top,
			 uint64_t *ret, uint64_t *at)
{
	/* x86_64: the call pushed the return address right below the top;
	 * aarch64: the prologue saved the link register at sp */
	*top = sp + spdelta + (lr_machine ? 0 : 8);
	*at = lr_machine ? sp : *top - 8;
	return *top >= sp && !psvc_read_frozen(t, *at, ret, sizeof *ret);
}

/* The walk ends at a word it could not read: a truncated stack, and
 * where it missed, for the caller to tell a short capture from a bad sp. */
static void missed_at(struct dbs_go_walk *w, uint64_t addr)
{
	w->end = DBS_STACK_TRUNCATED;
	w->missed = true;
	w->miss_addr = addr;
}

void dbs_go_walk(struct psvc_target *t, const struct arch_desc *arch,
		 struct dbs_go_walk *w)
{
	uint64_t pc = w->pc, sp = w->sp, lr = w->lr;
	bool act = w->activation, have_lr = w->have_lr;
	bool lr_machine = arch->dwarf_lr >= 0;
	w->result = DBS_GOWALK_NOT_GO;
	w->missed = false;
	w->why = NULL;
	for (unsigned n = 0; n < MAX_GO_FRAMES; n++) {
		struct psvc_gofunc f;
		if (psvc_go_func(t, act ? pc : pc - 1, &f)) {
			if (n) {
				/* back in code the table does not hold */
				w->result = DBS_GOWALK_LEFT;
				w->pc = pc;
				w->sp = sp;
			}
			return;
		}
		w->result = DBS_GOWALK_END;
		if (!w->push(w->ctx, pc, sp, act)) {
			w->end = DBS_STACK_MAX_FRAMES;
			return;
		}
		if (f.flags & PSVC_GO_TOPFRAME) {
			/* runtime.sigtramp is the bottom of the signal stack
			 * a handler runs on: what it interrupted is on the
			 * thread's other stack */
			w->end = f.name && !strcmp(f.name, "runtime.sigtramp")
					 ? DBS_STACK_SWITCH : DBS_STACK_COMPLETE;
			return;
		}
		if (f.flags & PSVC_GO_SPWRITE) {
			w->end = DBS_STACK_SWITCH;
			return;
		}
		if (!f.have_spdelta || f.spdelta > (1 << 30)) {
			w->end = DBS_STACK_ERROR;
			snprintf(w->why_buf, sizeof w->why_buf,
				 "the Go function table gives no frame size at "
				 "%#" PRIx64 " in %s", pc, f.name ? f.name : "?");
			w->why = w->why_buf;
			return;
		}
		uint64_t top, ret;
		if (lr_machine && f.spdelta == 0 && act) {
			/* no frame yet: the return address is still in the
			 * link register, which only an activation has */
			if (!have_lr) {
				w->end = DBS_STACK_REGISTER_UNKNOWN;
				return;
			}
			top = sp;
			ret = lr;
		} else {
			uint64_t at;
			if (!frame_return(t, lr_machine, sp,
					  (uint64_t)f.spdelta, &top, &ret,
					  &at)) {
				missed_at(w, at);
				return;
			}
		}
		if (!ret) {
			w->end = DBS_STACK_COMPLETE;
			return;
		}
		act = injected_call(&f);
		have_lr = false;
		pc = ret;
		sp = top;
		if (act && lr_machine) {
			/* the handler saved the interrupted link register
			 * at a new sp, one aligned slot lower, before it
			 * faked the call (runtime: sigctxt.pushCall,
			 * preparePanic) */
			if (psvc_read_frozen(t, sp, &lr, sizeof lr)) {
				missed_at(w, sp);
				return;
			}
			have_lr = true;
			sp += arch->stack_align;
		}
	}
	w->end = DBS_STACK_MAX_FRAMES;
}
