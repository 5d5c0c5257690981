/*
 * text.c: the human-readable report.  A header about the process and the
 * capture (including how long the target was frozen), then what an
 * engineer in an incident needs first (report.c: the verdict, counts, the
 * most contended locks), the threads grouped by identical stack
 * (stackgroups.c), and last one block per thread; --brief replaces the
 * groups and blocks with one line per thread (brief.c).  Bytes from the
 * target are printed escaped, never raw: a thread name must not be able
 * to move the cursor of the engineer's terminal.
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

void agent_put_escaped(FILE *out, const char *s)
{
	for (; s && *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c >= 0x20 && c < 0x7f)
			fputc(c, out);
		else
			fprintf(out, "\\x%02x", c);
	}
}

void agent_put_symbol(FILE *out, const struct dbs_symbol *s)
{
	const char *base = s->module ? strrchr(s->module, '/') : NULL;
	base = base ? base + 1 : s->module;
	if (s->name) {
		agent_put_escaped(out, s->name);
		if (s->offset)
			fprintf(out, "+0x%" PRIx64, s->offset);
	} else if (s->module) {
		/* no symbol: where it is in its file, for addr2line/objdump */
		fprintf(out, "0x%" PRIx64 " (", s->addr);
		agent_put_escaped(out, base);
		fprintf(out, "+0x%" PRIx64 ", no symbol)", s->offset);
	} else {
		fprintf(out, "0x%" PRIx64, s->addr);
	}
	if (s->module) {
		fputs(" in ", out);
		agent_put_escaped(out, s->module);
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
void agent_put_stack(FILE *out, const struct dbs_stack *st, bool in_group)
{
	unsigned level = 0;
	for (size_t i = 0; i < st->nframes; i++) {
		const struct dbs_frame *f = &st->frames[i];
		fprintf(out, "  #%-2u ", level++);
		if (f->inlined)
			fputs("[inlined]          ", out);
		else if (in_group && !f->module)
			fputs("                   ", out);
		else
			fprintf(out, "0x%016" PRIx64 " ", f->pc);
		fputs("in ", out);
		if (f->symbol) {
			agent_put_escaped(out, f->symbol);
			if (f->offset && !f->inlined)
				fprintf(out, "+0x%" PRIx64, f->offset);
		} else if (!f->module) {
			fputs("?? (outside any module: JIT or generated code)", out);
		} else {
			fputs("??", out);
		}
		if (f->file) {
			fputs(" at ", out);
			agent_put_escaped(out, f->file);
			if (f->line)
				fprintf(out, ":%d", f->line);
		}
		if (f->module && !f->inlined) {
			const char *base = strrchr(f->module, '/');
			fputs(" from ", out);
			agent_put_escaped(out, base ? base + 1 : f->module);
			if (!f->symbol)
				fprintf(out, "+0x%" PRIx64, f->module_offset);
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
	case DBS_STACK_UNKNOWN_CODE:
		fputs("  (unwinding stopped in code outside any module: no unwind "
		      "information and no frame pointer chain lead to its caller)\n",
		      out);
		break;
	case DBS_STACK_BAD_SP:
	case DBS_STACK_ERROR:
		fputs("  (unwinding stopped: ", out);
		agent_put_escaped(out, st->error ? st->error : "unknown error");
		fputs(")\n", out);
		break;
	default:
		break;
	}
}

/* ---- --tls, --errno, --keys, stack bounds ---------------------------------------- */

static void put_kib(FILE *out, uint64_t bytes)
{
	if (bytes >= 10 * 1024 * 1024)
		fprintf(out, "%.0f MiB", (double)bytes / (1024.0 * 1024.0));
	else
		fprintf(out, "%.1f KiB", (double)bytes / 1024.0);
}

static void put_stack_bounds(FILE *out, const struct dbs_stack_bounds *st)
{
	if (st->status == DBS_BOUNDS_UNKNOWN)
		return;
	fprintf(out, "  stack: 0x%" PRIx64 "-0x%" PRIx64 " ", st->low, st->high);
	if (st->status == DBS_BOUNDS_NOT_STACK) {
		fputs("(sp is not on a thread stack: sigaltstack or user stack)\n",
		      out);
		return;
	}
	fputs("used ", out);
	put_kib(out, st->used);
	if (st->status == DBS_BOUNDS_OVERFLOW) {
		fputs("  [!! STACK OVERFLOW: sp is in or below the guard]\n", out);
		return;
	}
	if (st->limit) {
		fputs(", ", out);
		put_kib(out, st->avail);
		fputs(st->main ? " left before RLIMIT_STACK" : " left above the guard",
		      out);
	}
	if (!st->guard_high && !st->main)
		fputs(" (no guard page)", out);
	if (st->status == DBS_BOUNDS_LOW)
		fputs("  [!! STACK NEARLY FULL]", out);
	fputc('\n', out);
}

static void put_tls_value(FILE *out, const struct dbs_tls_var *var,
			  const struct dbs_tls_value *v)
{
	switch (v->status) {
	case DBS_TLS_NOT_ALLOCATED:
		fputs("not allocated (a dlopen'ed module this thread has not "
		      "touched yet)", out);
		return;
	case DBS_TLS_NOT_FOUND:
		fputs("not found", out);
		return;
	case DBS_TLS_UNAVAILABLE:
	case DBS_TLS_ERROR:
		fputs(v->status == DBS_TLS_ERROR ? "error: " : "unavailable: ", out);
		agent_put_escaped(out, v->error ? v->error : "?");
		return;
	case DBS_TLS_OK:
		break;
	}
	const unsigned char *b = v->bytes;
	uint64_t u = dbs_tls_bits(var, v);
	switch (var->type) {
	case DBS_TLS_INT:
		fprintf(out, "%" PRId64, dbs_tls_signed(var, v));
		break;
	case DBS_TLS_UNSIGNED:
		fprintf(out, "%" PRIu64, u);
		break;
	case DBS_TLS_BOOL:
		fputs(u ? "true" : "false", out);
		break;
	case DBS_TLS_HEX:
		fprintf(out, "0x%" PRIx64, u);
		break;
	case DBS_TLS_POINTER:
		fprintf(out, "0x%" PRIx64, u);
		if (v->ptr_sym.module) {
			fputs(" (", out);
			agent_put_symbol(out, &v->ptr_sym);
			fputc(')', out);
		}
		break;
	case DBS_TLS_FLOAT:
		fprintf(out, "%g", dbs_tls_double(var, v));
		break;
	case DBS_TLS_STRING:
		if (!u)
			fputs("NULL", out);
		else if (v->str) {
			agent_fput_quoted(out, v->str, v->str_len);
			if (v->str_truncated)
				fputs("...", out);
		} else {
			fprintf(out, "0x%" PRIx64 " (unreadable)", u);
		}
		break;
	case DBS_TLS_BYTES:
	case DBS_TLS_AUTO:
		for (unsigned i = 0; i < var->size; i++)
			fprintf(out, "%02x", b[i]);
		break;
	}
	fprintf(out, " (%s) at 0x%" PRIx64, var->type_name, v->addr);
}

static void put_thread_extras(FILE *out, const struct dbs_snapshot *snap,
			      const struct dbs_thread *th, bool verbose)
{
	/* a stack about to overflow is news; its bounds otherwise are not */
	if (verbose || th->bounds.status == DBS_BOUNDS_LOW ||
	    th->bounds.status == DBS_BOUNDS_OVERFLOW)
		put_stack_bounds(out, &th->bounds);
	for (size_t i = 0; i < th->ntls && i < snap->ntls_vars; i++) {
		const struct dbs_tls_var *var = &snap->tls_vars[i];
		const struct dbs_tls_value *v = &th->tls[i];
		if (var->is_errno) {
			int e = 0;
			fputs("  errno: ", out);
			if (v->status == DBS_TLS_OK && v->bytes) {
				memcpy(&e, v->bytes, sizeof e);
				const char *n = e ? strerrorname_np(e) : NULL;
				fprintf(out, "%d", e);
				if (n)
					fprintf(out, " (%s: %s)", n, strerror(e));
				fputc('\n', out);
			} else {
				put_tls_value(out, var, v);
				fputc('\n', out);
			}
			continue;
		}
		fputs("  tls: ", out);
		agent_put_escaped(out, var->name);
		fputs(" = ", out);
		put_tls_value(out, var, v);
		fputc('\n', out);
	}
	if (th->keys_read) {
		size_t unset = 0;
		fputs("  keys:", out);
		for (size_t i = 0; i < th->nkeys; i++) {
			if (th->keys[i].unknown) {
				fprintf(out, " %u=unknown", th->keys[i].key);
				continue;
			}
			if (!th->keys[i].value) {
				unset++;
				continue;
			}
			fprintf(out, " %u=0x%" PRIx64, th->keys[i].key,
				th->keys[i].value);
		}
		if (unset == th->nkeys)
			fputs(" none set", out);
		else if (unset)
			fprintf(out, " (%zu more in use, not set here)", unset);
		fputc('\n', out);
	}
}

static void put_process_extras(FILE *out, const struct dbs_snapshot *snap)
{
	for (size_t i = 0; i < snap->nwarnings; i++) {
		fputs("warning: ", out);
		agent_put_escaped(out, snap->warnings[i]);
		fputc('\n', out);
	}
	for (size_t i = 0; i < snap->ntls_vars; i++) {
		const struct dbs_tls_var *v = &snap->tls_vars[i];
		if (!v->found)
			continue;
		fputs(v->is_errno ? "errno: " : "tls ", out);
		if (!v->is_errno) {
			agent_put_escaped(out, v->name);
			fputs(": ", out);
		}
		fprintf(out, "%s", v->type_name);
		if (v->c_type) {
			fputs(" (", out);
			agent_put_escaped(out, v->c_type);
			fputc(')', out);
		}
		fprintf(out, " at offset 0x%" PRIx64 " of the TLS block of ", v->offset);
		agent_put_escaped(out, v->module ? v->module : "?");
		fprintf(out, " [%s]\n", v->source ? v->source : "?");
	}
	if (snap->keys_read) {
		fprintf(out, "pthread keys in use: %zu of %zu\n", snap->nkeys,
			snap->keys_max);
		for (size_t i = 0; i < snap->nkeys; i++) {
			const struct dbs_key *k = &snap->keys[i];
			fprintf(out, "  key %u: destructor ", k->key);
			if (k->destructor)
				agent_put_symbol(out, &k->destructor_sym);
			else
				fputs("none", out);
			fputc('\n', out);
		}
	}
}

/* One thread's block of the detail view.  A stack shared with other
 * threads is printed once, in its group (stackgroups.c), unless verbose. */
static void put_thread(FILE *out, const struct dbs_snapshot *snap, size_t ti,
		       const struct stack_groups *groups, const struct agent_opts *o)
{
	const struct dbs_thread *th = &snap->threads[ti];
	fprintf(out, "Thread %d ", (int)th->tid);
	if (th->name)
		agent_fput_quoted(out, th->name, th->name_len);
	else
		fputs("(name unknown)", out);
	if (!th->ns_tid)
		fputs(" (tid in its namespace unknown)", out);
	else if (th->ns_tid != th->tid)
		fprintf(out, " (tid %d in its namespace)", (int)th->ns_tid);
	if (th->tid == snap->pid)
		fputs(" [main]", out);
	fputc('\n', out);

	if (th->proc_valid) {
		fprintf(out, "  state: %c (%s)", th->state ? th->state : '?',
			agent_state_name(th->state));
		if (th->wchan[0]) {
			fputs(", wchan ", out);
			agent_put_escaped(out, th->wchan);
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
			agent_put_symbol(out, &th->start);
			fputc('\n', out);
		}
	}
	put_syscall(out, snap, th);
	report_put_waiting(out, snap, th);
	if (o->verbose && th->have_regs)
		fprintf(out, "  pc 0x%" PRIx64 "  sp 0x%" PRIx64 "\n", th->pc, th->sp);
	if (o->verbose && th->proc_valid) {
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
	put_thread_extras(out, snap, th, o->verbose);
	size_t gsize = 0, group = groups ? stack_groups_of(groups, ti, &gsize) : 0;
	if (th->stack.end != DBS_STACK_NONE) {
		if (group && gsize > 1 && !o->verbose)
			fprintf(out, "  stack: as in group %zu above (%zu threads)\n", group,
				gsize);
		else
			agent_put_stack(out, &th->stack, false);
	}
	for (size_t i = 0; i < th->nerrors; i++) {
		fputs("  error: ", out);
		agent_put_escaped(out, th->errors[i]);
		fputc('\n', out);
	}
	fputc('\n', out);
}

int render_text(FILE *out, const struct dbs_snapshot *snap,
		const struct agent_opts *o)
{
	fprintf(out, "tinspect %s: pid %d", TINSPECT_VERSION, (int)snap->pid);
	if (snap->exe) {
		fputs(" (", out);
		agent_put_escaped(out, snap->exe);
		fputc(')', out);
	}
	fprintf(out, ", %s", snap->arch->name);
	if (snap->glibc_version[0])
		fprintf(out, ", glibc %s", snap->glibc_version);
	fprintf(out, ", libthread_db %s", dbs_tdb_status_name(snap->tdb_status));
	if (snap->tdb_detail) {
		fputs(" (", out);
		agent_put_escaped(out, snap->tdb_detail);
		fputc(')', out);
	}
	fputc('\n', out);
	if (snap->argc) {
		fputs("command:", out);
		for (size_t i = 0; i < snap->argc; i++) {
			fputc(' ', out);
			agent_put_escaped(out, snap->argv[i]);
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
	if (o->verbose) {
		const struct dbs_timings *ti = &snap->timings;
		fprintf(out, "freeze breakdown: stop %.3f, registers %.3f, memory %.3f, "
			"libthread_db %.3f, resume %.3f ms; before %.3f, after %.3f ms\n",
			ti->stop_ns / 1e6, ti->regs_ns / 1e6, ti->memory_ns / 1e6,
			ti->thread_db_ns / 1e6, ti->resume_ns / 1e6, ti->scan_ns / 1e6,
			ti->analyse_ns / 1e6);
	}
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
		agent_put_escaped(out, snap->errors[i]);
		fputc('\n', out);
	}
	put_process_extras(out, snap);
	fputc('\n', out);

	/* first screen: the verdict, counts, the most contended locks */
	report_summary(out, snap, o);
	if (o->brief) {
		brief_threads(out, snap);
		return ferror(out) ? -1 : 0;
	}
	/* what the verdict names, in full: the deadlocked threads' stacks,
	 * stall chains, orphaned locks */
	report_lock_details(out, snap, o);
	struct stack_groups *groups = stack_groups_build(snap);
	if (groups)
		stack_groups_print(out, snap, groups, o->verbose);
	fputs("Threads in detail:\n\n", out);
	for (size_t i = 0; i < snap->nthreads; i++)
		put_thread(out, snap, i, groups, o);
	stack_groups_free(groups);
	report_all_locks(out, snap);
	return ferror(out) ? -1 : 0;
}
