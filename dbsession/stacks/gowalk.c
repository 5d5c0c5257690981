/*
 * gowalk.c: Go frames unwound the way the Go runtime unwinds them, with
 * its function table (proc_service/elf/gopclntab.c), not with CFI: a
 * stripped Go binary has no .eh_frame for its Go code, and a frame pointer
 * chain skips the caller of a frameless leaf such as runtime.futex.  The table
 * gives, for every pc, how far sp is below the frame's top; on x86_64 the
 * return address is the word right below that top, and the caller's sp
 * is the top itself (docs/GO.md).  Only pc and sp are needed, which is
 * also all a nonblocking capture has.
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

void dbs_go_walk(struct psvc_target *t, const struct arch_desc *arch,
		 struct dbs_go_walk *w)
{
	uint64_t pc = w->pc, sp = w->sp;
	bool act = w->activation;
	w->result = DBS_GOWALK_NOT_GO;
	w->missed = false;
	w->why = NULL;
	/* the frame layout read here is x86_64's (no link register: a call
	 * pushes the return address) */
	if (arch->dwarf_lr >= 0)
		return;
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
		uint64_t top = sp + (uint64_t)f.spdelta + 8, ret;
		if (top < sp || psvc_read_frozen(t, top - 8, &ret, sizeof ret)) {
			w->end = DBS_STACK_TRUNCATED;
			w->missed = true;
			w->miss_addr = top - 8;
			return;
		}
		if (!ret) {
			w->end = DBS_STACK_COMPLETE;
			return;
		}
		/* the runtime injects calls to these (an asynchronous
		 * preemption, a fault turned into a panic): their "return
		 * address" is the interrupted pc itself, not after a call */
		act = f.name && (!strcmp(f.name, "runtime.asyncPreempt") ||
				 !strcmp(f.name, "runtime.sigpanic"));
		pc = ret;
		sp = top;
	}
	w->end = DBS_STACK_MAX_FRAMES;
}
