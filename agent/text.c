/*
 * text.c: the human-readable report.  A header about the process and the
 * capture (including how long the target was frozen), then one block per
 * thread.  Bytes from the target are printed escaped, never raw: a thread
 * name must not be able to move the cursor of the engineer's terminal.
 */
#include "agent.h"

#include <inttypes.h>
#include <sched.h>
#include <string.h>
#include <thread_db.h>
#include <time.h>

#include "config.h"

const char *agent_state_name(char state)
{
	switch (state) {
	case 'R': return "running";
	case 'S': return "sleeping";
	case 'D': return "disk sleep";
	case 'T': return "stopped";
	case 't': return "tracing stop";
	case 'Z': return "zombie";
	case 'X': return "dead";
	case 'I': return "idle";
	case 'P': return "parked";
	case 'W': return "waking";
	case 'K': return "wakekill";
	default: return "unknown";
	}
}

const char *agent_policy_name(unsigned policy)
{
	switch (policy) {
	case SCHED_OTHER: return "SCHED_OTHER";
	case SCHED_FIFO: return "SCHED_FIFO";
	case SCHED_RR: return "SCHED_RR";
	case SCHED_BATCH: return "SCHED_BATCH";
	case SCHED_IDLE: return "SCHED_IDLE";
	case 6: return "SCHED_DEADLINE";
	default: return "unknown";
	}
}

const char *agent_td_state_name(int s)
{
	switch (s) {
	case TD_THR_ACTIVE: return "active";
	case TD_THR_ZOMBIE: return "zombie";
	case TD_THR_RUN: return "run";
	case TD_THR_SLEEP: return "sleep";
	case TD_THR_STOPPED: return "stopped";
	case TD_THR_STOPPED_ASLEEP: return "stopped_asleep";
	default: return "unknown";
	}
}

void agent_fput_quoted(FILE *out, const char *s, size_t len)
{
	fputc('"', out);
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c == '"' || c == '\\')
			fprintf(out, "\\%c", c);
		else if (c >= 0x20 && c < 0x7f)
			fputc(c, out);
		else
			fprintf(out, "\\x%02x", c);
	}
	fputc('"', out);
}

static void put_escaped(FILE *out, const char *s)
{
	for (; s && *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c >= 0x20 && c < 0x7f)
			fputc(c, out);
		else
			fprintf(out, "\\x%02x", c);
	}
}

static void put_symbol(FILE *out, const struct dbs_symbol *s)
{
	if (s->name) {
		put_escaped(out, s->name);
		if (s->offset)
			fprintf(out, "+0x%" PRIx64, s->offset);
	} else {
		fprintf(out, "0x%" PRIx64, s->addr);
	}
	if (s->module) {
		fputs(" in ", out);
		put_escaped(out, s->module);
	}
}

static void put_syscall(FILE *out, const struct dbs_snapshot *snap,
			const struct dbs_thread *th)
{
	long nr;
	const uint64_t *args;
	const char *note = "";
	if (th->syscall.nr >= 0) {
		nr = th->syscall.nr;
		args = th->syscall.args;
		if (th->syscall.restarting)
			note = "  [blocked; restarts on resume]";
	} else if (!th->have_regs && th->proc_sc_kind == PSVC_SC_IN_SYSCALL) {
		nr = th->proc_sc_nr;
		args = th->proc_sc_args;
		note = "  [from /proc before the stop]";
	} else {
		fputs("  syscall: none (user space)\n", out);
		return;
	}
	const char *name = arch_syscall_name(snap->arch, nr);
	if (name)
		fprintf(out, "  syscall: %s(", name);
	else
		fprintf(out, "  syscall: syscall_%ld(", nr);
	for (int i = 0; i < 6; i++)
		fprintf(out, "%s0x%" PRIx64, i ? ", " : "", args[i]);
	fprintf(out, ")%s\n", note);
}

/* A stack as gdb's "bt" prints it: #N  pc in symbol+off at file:line. */
static void put_stack(FILE *out, const struct dbs_stack *st)
{
	unsigned level = 0;
	for (size_t i = 0; i < st->nframes; i++) {
		const struct dbs_frame *f = &st->frames[i];
		fprintf(out, "  #%-2u ", level++);
		if (f->inlined)
			fputs("[inlined]          ", out);
		else
			fprintf(out, "0x%016" PRIx64 " ", f->pc);
		fputs("in ", out);
		if (f->symbol) {
			put_escaped(out, f->symbol);
			if (f->offset && !f->inlined)
				fprintf(out, "+0x%" PRIx64, f->offset);
		} else {
			fputs("??", out);
		}
		if (f->file) {
			fputs(" at ", out);
			put_escaped(out, f->file);
			if (f->line)
				fprintf(out, ":%d", f->line);
		}
		if (f->module && !f->inlined) {
			const char *base = strrchr(f->module, '/');
			fputs(" from ", out);
			put_escaped(out, base ? base + 1 : f->module);
		}
		fputc('\n', out);
	}
	switch (st->end) {
	case DBS_STACK_TRUNCATED:
		fputs("  (stack truncated: more than the copied stack bytes are "
		      "needed; see --stack-bytes)\n", out);
		break;
	case DBS_STACK_MAX_FRAMES:
		fputs("  (more frames: --max-frames reached)\n", out);
		break;
	case DBS_STACK_BAD_SP:
	case DBS_STACK_ERROR:
		fputs("  (unwinding stopped: ", out);
		put_escaped(out, st->error ? st->error : "unknown error");
		fputs(")\n", out);
		break;
	default:
		break;
	}
}

static void put_thread(FILE *out, const struct dbs_snapshot *snap,
		       const struct dbs_thread *th)
{
	fprintf(out, "Thread %d ", (int)th->tid);
	if (th->name)
		agent_fput_quoted(out, th->name, th->name_len);
	else
		fputs("(name unknown)", out);
	if (th->ns_tid != th->tid)
		fprintf(out, " (tid %d in its namespace)", (int)th->ns_tid);
	if (th->tid == snap->pid)
		fputs(" [main]", out);
	fputc('\n', out);

	if (th->proc_valid) {
		fprintf(out, "  state: %c (%s)", th->state ? th->state : '?',
			agent_state_name(th->state));
		if (th->wchan[0]) {
			fputs(", wchan ", out);
			put_escaped(out, th->wchan);
		}
		if (!th->proc_before_stop)
			fputs("  [read after resume: thread appeared during the stop]", out);
		fputc('\n', out);
	}
	if (th->straggler)
		fputs("  NOT STOPPED: in uninterruptible sleep past the stop timeout\n", out);
	if (th->jobctl_stopped)
		fputs("  job-control stopped (it stays stopped)\n", out);

	if (th->have_pthread) {
		fprintf(out, "  pthread_t: 0x%" PRIx64 "\n", th->pthread);
		if (th->is_main) {
			fputs("  start: (initial thread)\n", out);
		} else {
			fputs("  start: ", out);
			put_symbol(out, &th->start);
			fputc('\n', out);
		}
	}
	put_syscall(out, snap, th);
	if (th->have_regs)
		fprintf(out, "  pc 0x%" PRIx64 "  sp 0x%" PRIx64 "\n", th->pc, th->sp);
	if (th->proc_valid) {
		fprintf(out, "  cpu: user %.2fs system %.2fs; %s prio %ld nice %ld",
			th->utime_s, th->stime_s, agent_policy_name(th->policy),
			th->priority, th->nice);
		if (th->rt_priority)
			fprintf(out, " rt %u", th->rt_priority);
		fprintf(out, "; cpus %s; last on cpu %d\n",
			th->cpus_allowed[0] ? th->cpus_allowed : "?", th->processor);
		fprintf(out, "  signals: blocked 0x%016" PRIx64 " pending 0x%016" PRIx64 "\n",
			th->sigblk, th->sigpnd);
	}
	if (th->stack.end != DBS_STACK_NONE)
		put_stack(out, &th->stack);
	for (size_t i = 0; i < th->nerrors; i++) {
		fputs("  error: ", out);
		put_escaped(out, th->errors[i]);
		fputc('\n', out);
	}
	fputc('\n', out);
}

int render_text(FILE *out, const struct dbs_snapshot *snap,
		const struct agent_opts *o)
{
	(void)o;
	fprintf(out, "tinspect %s: pid %d", TINSPECT_VERSION, (int)snap->pid);
	if (snap->exe) {
		fputs(" (", out);
		put_escaped(out, snap->exe);
		fputc(')', out);
	}
	fprintf(out, ", %s", snap->arch->name);
	if (snap->glibc_version[0])
		fprintf(out, ", glibc %s", snap->glibc_version);
	fprintf(out, ", libthread_db %s", dbs_tdb_status_name(snap->tdb_status));
	if (snap->tdb_detail) {
		fputs(" (", out);
		put_escaped(out, snap->tdb_detail);
		fputc(')', out);
	}
	fputc('\n', out);
	if (snap->argc) {
		fputs("command:", out);
		for (size_t i = 0; i < snap->argc; i++) {
			fputc(' ', out);
			put_escaped(out, snap->argv[i]);
		}
		fputc('\n', out);
	}
	char ts[64];
	struct tm tm;
	gmtime_r(&snap->captured_at.tv_sec, &tm);
	strftime(ts, sizeof ts, "%Y-%m-%d %H:%M:%S", &tm);
	fprintf(out, "captured %s.%03ld UTC; target frozen %.3f ms (capture %.3f ms)\n",
		ts, snap->captured_at.tv_nsec / 1000000,
		(double)snap->freeze_ns / 1e6, (double)snap->duration_ns / 1e6);
	const struct dbs_timings *ti = &snap->timings;
	fprintf(out, "freeze breakdown: stop %.3f, registers %.3f, memory %.3f, "
		"libthread_db %.3f, resume %.3f ms; before %.3f, after %.3f ms\n",
		ti->stop_ns / 1e6, ti->regs_ns / 1e6, ti->memory_ns / 1e6,
		ti->thread_db_ns / 1e6, ti->resume_ns / 1e6, ti->scan_ns / 1e6,
		ti->analyse_ns / 1e6);
	fprintf(out, "threads: %zu (%zu stopped together", snap->nthreads,
		snap->threads_stopped);
	if (snap->threads_vanished)
		fprintf(out, ", %zu exited while attaching", snap->threads_vanished);
	if (snap->stragglers)
		fprintf(out, ", %zu did not stop in time", snap->stragglers);
	if (snap->threads_with_errors)
		fprintf(out, ", %zu with errors", snap->threads_with_errors);
	fputs(")\n", out);
	for (size_t i = 0; i < snap->nerrors; i++) {
		fputs("error: ", out);
		put_escaped(out, snap->errors[i]);
		fputc('\n', out);
	}
	fputc('\n', out);
	for (size_t i = 0; i < snap->nthreads; i++)
		put_thread(out, snap, &snap->threads[i]);
	return ferror(out) ? -1 : 0;
}
