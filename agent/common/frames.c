/*
 * frames.c: code addresses as the reports show them.  A symbol with its
 * offset, or, for an address no symbol covers, where it is in its file
 * ("libfoo.so+0x1234", what addr2line and objdump take); a frame's name
 * on one line; a whole stack as gdb's "bt" prints it; and the frame a
 * blocked thread called its wait from.  The text report, the stream's
 * lines and the samples of --folded and --pprof all name code this way.
 */
#include "common.h"

#include <inttypes.h>
#include <string.h>

const char *agent_module_base(const char *module)
{
	const char *b = module ? strrchr(module, '/') : NULL;
	return b ? b + 1 : module;
}

void agent_put_module_offset(FILE *out, const char *module, uint64_t offset)
{
	agent_put_escaped(out, agent_module_base(module));
	fprintf(out, "+0x%" PRIx64, offset);
}

const char *agent_module_offset(char *buf, size_t len, const char *module,
				uint64_t offset)
{
	snprintf(buf, len, "%s+0x%" PRIx64, agent_module_base(module), offset);
	return buf;
}

void agent_put_symbol(FILE *out, const tinspect_symbol *s)
{
	const char *module = tinspect_symbol_module(s);
	const char *name = tinspect_symbol_name(s);
	uint64_t offset = tinspect_symbol_offset(s);
	if (name) {
		agent_put_escaped(out, name);
		if (offset)
			fprintf(out, "+0x%" PRIx64, offset);
	} else if (module) {
		/* no symbol: where it is in its file, for addr2line/objdump */
		fprintf(out, "0x%" PRIx64 " (", tinspect_symbol_addr(s));
		agent_put_module_offset(out, module, offset);
		fputs(", no symbol)", out);
	} else {
		fprintf(out, "0x%" PRIx64, tinspect_symbol_addr(s));
	}
	if (module) {
		fputs(" in ", out);
		agent_put_escaped(out, module);
	}
}

/* A stack as gdb's "bt" prints it: #N  pc in symbol+off at file:line. */
void agent_put_stack(FILE *out, const tinspect_thread *th, bool in_group)
{
	unsigned level = 0;
	for (size_t i = 0, n = tinspect_thread_nframes(th); i < n; i++) {
		const tinspect_frame *f = tinspect_thread_frame(th, i);
		bool inlined = tinspect_frame_inlined(f);
		const char *module = tinspect_frame_module(f);
		const char *symbol = tinspect_frame_symbol(f);
		const char *file = tinspect_frame_file(f);
		fprintf(out, "  #%-2u ", level++);
		if (tinspect_frame_scanned(f) && !inlined)
			fputs("[scan] ", out);
		if (inlined)
			fputs("[inlined]          ", out);
		else if (in_group && !module)
			fputs("                   ", out);
		else
			fprintf(out, "0x%016" PRIx64 " ", tinspect_frame_pc(f));
		fputs("in ", out);
		if (symbol) {
			uint64_t offset = tinspect_frame_offset(f);
			agent_put_escaped(out, symbol);
			if (offset && !inlined)
				fprintf(out, "+0x%" PRIx64, offset);
		} else if (!module) {
			fputs("?? (outside any module: JIT or generated code)", out);
		} else {
			fputs("??", out);
		}
		if (file) {
			int line = tinspect_frame_line(f);
			fputs(" at ", out);
			agent_put_escaped(out, file);
			if (line)
				fprintf(out, ":%d", line);
		}
		if (module && !inlined) {
			fputs(" from ", out);
			if (symbol)
				agent_put_escaped(out, agent_module_base(module));
			else
				agent_put_module_offset(out, module,
							tinspect_frame_module_offset(f));
		}
		fputc('\n', out);
	}
	switch (tinspect_thread_stack_end(th)) {
	case TINSPECT_STACK_TRUNCATED:
		fputs("  (stack truncated: more than the copied stack bytes are "
		      "needed; see --stack-bytes)\n", out);
		break;
	case TINSPECT_STACK_MAX_FRAMES:
		fputs("  (more frames: --max-frames reached)\n", out);
		break;
	case TINSPECT_STACK_SCANNED:
		fputs("  (frames marked [scan] were found by scanning the stack "
		      "past code without unwind tables, not unwound: frames "
		      "between may be missing; the scan found no further return "
		      "address)\n", out);
		break;
	case TINSPECT_STACK_REGISTER_UNKNOWN:
		fputs("  (the caller's address is still in a register that a "
		      "capture without stopping the thread cannot read: the "
		      "link register)\n", out);
		break;
	case TINSPECT_STACK_UNKNOWN_CODE:
		fputs("  (unwinding stopped in code outside any module: no unwind "
		      "information and no frame pointer chain lead to its caller)\n",
		      out);
		break;
	case TINSPECT_STACK_SWITCH: {
		size_t n = tinspect_thread_nframes(th);
		const char *last = n ? tinspect_frame_symbol(tinspect_thread_frame(th, n - 1))
				     : NULL;
		fputs("  (unwinding stopped at ", out);
		agent_put_escaped(out, last ? last : "a Go runtime function");
		fputs(", which switches stacks: its callers are on another stack "
		      "(a goroutine's, the thread's g0, or the one a signal "
		      "interrupted))\n", out);
		break;
	}
	case TINSPECT_STACK_BAD_SP:
	case TINSPECT_STACK_ERROR: {
		const char *error = tinspect_thread_stack_error(th);
		fputs("  (unwinding stopped: ", out);
		agent_put_escaped(out, error ? error : "unknown error");
		fputs(")\n", out);
		break;
	}
	default:
		break;
	}
}

/* libc and the dynamic linker: where the waits themselves are */
static bool runtime_module(const char *path)
{
	const char *b = path ? strrchr(path, '/') : NULL;
	b = b ? b + 1 : path;
	return b && (!strncmp(b, "libc.so", 7) || !strncmp(b, "libpthread.so", 13) ||
		     !strncmp(b, "ld-linux", 8) || !strncmp(b, "libc-2.", 7));
}

const tinspect_frame *agent_wait_caller(const tinspect_thread *th)
{
	for (size_t i = 0, n = tinspect_thread_nframes(th); i < n; i++) {
		const tinspect_frame *f = tinspect_thread_frame(th, i);
		const char *module = tinspect_frame_module(f);
		if (module && !runtime_module(module))
			return f;
		if (!module && i > 0)
			return f;	/* JIT code called into libc */
	}
	return NULL;
}

const char *agent_frame_name(const tinspect_frame *f, char *buf, size_t len)
{
	FILE *m = fmemopen(buf, len, "w");
	if (!m) {
		snprintf(buf, len, "??");
		return buf;
	}
	const char *symbol = tinspect_frame_symbol(f);
	const char *module = tinspect_frame_module(f);
	if (symbol) {
		agent_put_escaped(m, symbol);
	} else if (module) {
		agent_put_module_offset(m, module, tinspect_frame_module_offset(f));
	} else {
		fputs("?? (JIT or generated code)", m);
	}
	fputc('\0', m);
	fclose(m);
	buf[len - 1] = '\0';
	return buf;
}
