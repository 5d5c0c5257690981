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
#include "text.h"
#include "lockorder.h"

#include <inttypes.h>
#include <string.h>
#include <time.h>

#include "config.h"

static void put_syscall(FILE *out, const tinspect_thread *th)
{
	struct tinspect_syscall sc;
	if (tinspect_thread_syscall(th, &sc, sizeof sc)) {
		/* only registers say user space; without them, why not known */
		if (tinspect_thread_regs(th, NULL, NULL, NULL) == 0)
			fputs("  syscall: none (user space)\n", out);
		else if (tinspect_thread_observation(th) == TINSPECT_OBSERVED_RUNNING)
			fputs("  syscall: unknown (running: on a CPU, not observed "
			      "in the kernel)\n", out);
		else if (tinspect_thread_observation(th) == TINSPECT_OBSERVED_MOVED)
			fputs("  syscall: unknown (it ran during the capture: what "
			      "was copied is not shown)\n", out);
		else
			fputs("  syscall: unknown (registers not read)\n", out);
		return;
	}
	const char *note = "";
	if (sc.source == TINSPECT_SYSCALL_PROC)
		note = "  [from /proc before the stop]";
	else if (sc.restarting)
		note = "  [blocked; restarts on resume]";
	if (sc.name)
		fprintf(out, "  syscall: %s(", sc.name);
	else
		fprintf(out, "  syscall: syscall_%ld(", sc.nr);
	for (int i = 0; i < 6; i++)
		fprintf(out, "%s0x%" PRIx64, i ? ", " : "", sc.args[i]);
	fprintf(out, ")%s\n", note);
}

/* ---- --tls, --errno, --keys, stack bounds ---------------------------------------- */

static void put_kib(FILE *out, uint64_t bytes)
{
	if (bytes >= 10 * 1024 * 1024)
		fprintf(out, "%.0f MiB", (double)bytes / (1024.0 * 1024.0));
	else
		fprintf(out, "%.1f KiB", (double)bytes / 1024.0);
}

static void put_stack_bounds(FILE *out, const struct tinspect_stack_bounds *st)
{
	fprintf(out, "  stack: 0x%" PRIx64 "-0x%" PRIx64 " ", st->low, st->high);
	if (st->status == TINSPECT_BOUNDS_NOT_STACK) {
		fputs("(sp is not on a thread stack: sigaltstack or user stack)\n",
		      out);
		return;
	}
	fputs("used ", out);
	put_kib(out, st->used);
	if (st->status == TINSPECT_BOUNDS_OVERFLOW) {
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
	if (st->status == TINSPECT_BOUNDS_LOW)
		fputs("  [!! STACK NEARLY FULL]", out);
	fputc('\n', out);
}

static void put_tls_value(FILE *out, const tinspect_tls_value *v)
{
	const tinspect_tls_var *var = tinspect_tls_value_var(v);
	const char *error = tinspect_tls_value_error(v);
	switch (tinspect_tls_value_status(v)) {
	case TINSPECT_TLS_NOT_ALLOCATED:
		fputs("not allocated (a dlopen'ed module this thread has not "
		      "touched yet)", out);
		return;
	case TINSPECT_TLS_NOT_FOUND:
		fputs("not found", out);
		return;
	case TINSPECT_TLS_UNAVAILABLE:
		fputs("unavailable: ", out);
		agent_put_escaped(out, error ? error : "?");
		return;
	case TINSPECT_TLS_ERROR:
		fputs("error: ", out);
		agent_put_escaped(out, error ? error : "?");
		return;
	case TINSPECT_TLS_OK:
		break;
	}
	const unsigned char *b = tinspect_tls_value_bytes(v, NULL);
	uint64_t u = tinspect_tls_value_bits(v);
	switch (tinspect_tls_var_type(var)) {
	case TINSPECT_TLS_INT:
		fprintf(out, "%" PRId64, tinspect_tls_value_signed(v));
		break;
	case TINSPECT_TLS_UNSIGNED:
		fprintf(out, "%" PRIu64, u);
		break;
	case TINSPECT_TLS_BOOL:
		fputs(u ? "true" : "false", out);
		break;
	case TINSPECT_TLS_HEX:
		fprintf(out, "0x%" PRIx64, u);
		break;
	case TINSPECT_TLS_POINTER: {
		const tinspect_symbol *pointee = tinspect_tls_value_pointee(v);
		fprintf(out, "0x%" PRIx64, u);
		if (pointee) {
			fputs(" (", out);
			agent_put_symbol(out, pointee);
			fputc(')', out);
		}
		break;
	}
	case TINSPECT_TLS_FLOAT:
		fprintf(out, "%g", tinspect_tls_value_double(v));
		break;
	case TINSPECT_TLS_STRING: {
		size_t len;
		bool truncated;
		const char *str = tinspect_tls_value_string(v, &len, &truncated);
		if (!u)
			fputs("NULL", out);
		else if (str) {
			agent_fput_quoted(out, str, len);
			if (truncated)
				fputs("...", out);
		} else {
			fprintf(out, "0x%" PRIx64 " (unreadable)", u);
		}
		break;
	}
	case TINSPECT_TLS_BYTES:
	case TINSPECT_TLS_AUTO:
		for (unsigned i = 0; b && i < tinspect_tls_var_size(var); i++)
			fprintf(out, "%02x", b[i]);
		break;
	}
	uint64_t addr = 0;
	tinspect_tls_value_address(v, &addr);
	fprintf(out, " (%s) at 0x%" PRIx64, tinspect_tls_var_type_name(var), addr);
}

static void put_thread_extras(FILE *out, const tinspect_thread *th, bool verbose)
{
	/* a stack about to overflow is news; its bounds otherwise are not */
	struct tinspect_stack_bounds sb;
	const char *unknown = tinspect_thread_stack_bounds_unknown(th);
	if (tinspect_thread_stack_bounds(th, &sb, sizeof sb) == 0 &&
	    (verbose || sb.status == TINSPECT_BOUNDS_LOW ||
	     sb.status == TINSPECT_BOUNDS_OVERFLOW))
		put_stack_bounds(out, &sb);
	else if (verbose && unknown) {
		fputs("  stack: bounds unknown: ", out);
		agent_put_escaped(out, unknown);
		fputc('\n', out);
	}
	for (size_t i = 0, n = tinspect_thread_ntls(th); i < n; i++) {
		const tinspect_tls_value *v = tinspect_thread_tls(th, i);
		const tinspect_tls_var *var = tinspect_tls_value_var(v);
		if (tinspect_tls_var_is_errno(var)) {
			const unsigned char *b = tinspect_tls_value_bytes(v, NULL);
			int e = 0;
			fputs("  errno: ", out);
			if (tinspect_tls_value_status(v) == TINSPECT_TLS_OK && b) {
				memcpy(&e, b, sizeof e);
				const char *name = e ? strerrorname_np(e) : NULL;
				fprintf(out, "%d", e);
				if (name)
					fprintf(out, " (%s: %s)", name, strerror(e));
				fputc('\n', out);
			} else {
				put_tls_value(out, v);
				fputc('\n', out);
			}
			continue;
		}
		fputs("  tls: ", out);
		agent_put_escaped(out, tinspect_tls_var_name(var));
		fputs(" = ", out);
		put_tls_value(out, v);
		fputc('\n', out);
	}
	if (tinspect_thread_keys_read(th)) {
		size_t unset = 0, n = tinspect_thread_nkeys(th);
		fputs("  keys:", out);
		for (size_t i = 0; i < n; i++) {
			unsigned key = 0;
			uint64_t value = 0;
			if (tinspect_thread_key_value(th, i, &key, &value)) {
				fprintf(out, " %u=unknown", key);
				continue;
			}
			if (!value) {
				unset++;
				continue;
			}
			fprintf(out, " %u=0x%" PRIx64, key, value);
		}
		if (unset == n)
			fputs(" none set", out);
		else if (unset)
			fprintf(out, " (%zu more in use, not set here)", unset);
		fputc('\n', out);
	}
}

static void put_process_extras(FILE *out, const tinspect_snapshot *snap)
{
	for (size_t i = 0, n = tinspect_snapshot_nwarnings(snap); i < n; i++) {
		fputs("warning: ", out);
		agent_put_escaped(out, tinspect_snapshot_warning(snap, i));
		fputc('\n', out);
	}
	for (size_t i = 0, n = tinspect_snapshot_ntls_vars(snap); i < n; i++) {
		const tinspect_tls_var *v = tinspect_snapshot_tls_var(snap, i);
		bool is_errno = tinspect_tls_var_is_errno(v);
		const char *c_type = tinspect_tls_var_c_type(v);
		const char *module = tinspect_tls_var_module(v);
		const char *source = tinspect_tls_var_source(v);
		if (!tinspect_tls_var_found(v))
			continue;
		fputs(is_errno ? "errno: " : "tls ", out);
		if (!is_errno) {
			agent_put_escaped(out, tinspect_tls_var_name(v));
			fputs(": ", out);
		}
		fprintf(out, "%s", tinspect_tls_var_type_name(v));
		if (c_type) {
			fputs(" (", out);
			agent_put_escaped(out, c_type);
			fputc(')', out);
		}
		/* musl's errno is a field of struct pthread (docs/MUSL.md
		 * §12), in no TLS block */
		if (source && !strcmp(source, "struct_pthread"))
			fprintf(out, " at offset 0x%" PRIx64 " of each thread's "
				"struct pthread of ", tinspect_tls_var_offset(v));
		else
			fprintf(out, " at offset 0x%" PRIx64 " of the TLS block of ",
				tinspect_tls_var_offset(v));
		agent_put_escaped(out, module ? module : "?");
		fprintf(out, " [%s]\n", source ? source : "?");
	}
	if (tinspect_snapshot_keys_read(snap)) {
		size_t n = tinspect_snapshot_nkeys(snap);
		fprintf(out, "pthread keys in use: %zu of %zu\n", n,
			tinspect_snapshot_keys_max(snap));
		for (size_t i = 0; i < n; i++) {
			const tinspect_key *k = tinspect_snapshot_key(snap, i);
			const tinspect_symbol *dtor = tinspect_key_destructor(k);
			fprintf(out, "  key %u: destructor ", tinspect_key_id(k));
			if (dtor)
				agent_put_symbol(out, dtor);
			else
				fputs("none", out);
			fputc('\n', out);
		}
	}
}

/* The /proc facts of one thread in the detail view (verbose). */
static void put_thread_proc(FILE *out, const tinspect_thread *th)
{
	double user_s, system_s;
	unsigned policy, rt_priority;
	long priority, nice;
	int processor;
	uint64_t blocked, pending;
	size_t alen;
	if (tinspect_thread_cpu(th, &user_s, &system_s))
		return;
	tinspect_thread_sched(th, &policy, &priority, &nice, &rt_priority, &processor);
	tinspect_thread_signals(th, &blocked, &pending);
	const char *affinity = tinspect_thread_affinity(th, &alen);
	fprintf(out, "  cpu: user %.2fs system %.2fs; %s prio %ld nice %ld",
		user_s, system_s, agent_policy_name(policy), priority, nice);
	if (rt_priority)
		fprintf(out, " rt %u", rt_priority);
	if (alen)
		fprintf(out, "; cpus %.*s; last on cpu %d\n", (int)alen, affinity,
			processor);
	else
		fprintf(out, "; cpus ?; last on cpu %d\n", processor);
	fprintf(out, "  signals: blocked 0x%016" PRIx64 " pending 0x%016" PRIx64 "\n",
		blocked, pending);
}

/* One thread's block of the detail view.  A stack shared with other
 * threads is printed once, in its group (stackgroups.c), unless verbose. */
static void put_thread(FILE *out, const tinspect_snapshot *snap, size_t ti,
		       const struct stack_groups *groups, const struct agent_opts *o)
{
	const tinspect_thread *th = tinspect_snapshot_thread(snap, ti);
	pid_t tid = tinspect_thread_tid(th), ns_tid = tinspect_thread_ns_tid(th);
	size_t name_len;
	const char *name = tinspect_thread_name(th, &name_len);
	enum tinspect_proc_read pr = tinspect_thread_proc_read(th);
	fprintf(out, "Thread %d ", (int)tid);
	if (name)
		agent_fput_quoted(out, name, name_len);
	else
		fputs("(name unknown)", out);
	if (!ns_tid)
		fputs(" (tid in its namespace unknown)", out);
	else if (ns_tid != tid)
		fprintf(out, " (tid %d in its namespace)", (int)ns_tid);
	if (tinspect_thread_is_main(th))
		fputs(" [main]", out);
	agent_put_wait_age(out, th);
	fputc('\n', out);

	if (pr == TINSPECT_PROC_NONE) {
		fputs("  state: unknown (a core file has no /proc facts)\n", out);
	} else if (pr != TINSPECT_PROC_FAILED) {
		char state = tinspect_thread_state(th);
		const char *wchan = tinspect_thread_wchan(th);
		fprintf(out, "  state: %c (%s)", state ? state : '?',
			agent_state_name(state));
		if (wchan) {
			fputs(", wchan ", out);
			agent_put_escaped(out, wchan);
		}
		if (pr == TINSPECT_PROC_AFTER_RESUME)
			fputs("  [read after resume: thread appeared during the stop]", out);
		fputc('\n', out);
	}
	if (tinspect_thread_straggler(th)) {
		/* the state is the one seen when it was given up on */
		char st = tinspect_thread_state(th);
		fputs(st == 'D' ? "  NOT STOPPED: in uninterruptible sleep past the stop timeout\n"
		      : st == 'R' ? "  NOT STOPPED: runnable but not stopped past ten stop timeouts "
				    "(no CPU given, or busy in the kernel)\n"
		      : "  NOT STOPPED: past the stop timeout\n", out);
	}
	if (tinspect_thread_jobctl_stopped(th))
		fputs("  job-control stopped (it stays stopped)\n", out);

	uint64_t pthread;
	if (tinspect_thread_pthread(th, &pthread, NULL) == 0) {
		const tinspect_symbol *start = tinspect_thread_start_routine(th);
		fprintf(out, "  pthread_t: 0x%" PRIx64 "\n", pthread);
		if (!start) {
			fputs("  start: (initial thread)\n", out);
		} else {
			fputs("  start: ", out);
			agent_put_symbol(out, start);
			fputc('\n', out);
		}
	}
	put_syscall(out, th);
	report_put_waiting(out, snap, th);
	uint64_t pc, sp;
	if (o->verbose && tinspect_thread_regs(th, &pc, &sp, NULL) == 0)
		fprintf(out, "  pc 0x%" PRIx64 "  sp 0x%" PRIx64 "\n", pc, sp);
	if (o->verbose)
		put_thread_proc(out, th);
	put_thread_extras(out, th, o->verbose);
	size_t gsize = 0, group = groups ? stack_groups_of(groups, ti, &gsize) : 0;
	if (tinspect_thread_stack_end(th) != TINSPECT_STACK_NONE) {
		if (group && gsize > 1 && !o->verbose)
			fprintf(out, "  stack: as in group %zu above (%zu threads)\n", group,
				gsize);
		else
			agent_put_stack(out, th, false);
	}
	for (size_t i = 0, n = tinspect_thread_nerrors(th); i < n; i++) {
		fputs("  error: ", out);
		agent_put_escaped(out, tinspect_thread_error(th, i));
		fputc('\n', out);
	}
	fputc('\n', out);
}

/* The lines above the summary: the process, the capture, its problems. */
static void put_header(FILE *out, const tinspect_snapshot *snap,
		       const struct agent_opts *o)
{
	const char *exe = tinspect_snapshot_exe(snap);
	const char *glibc = tinspect_snapshot_glibc_version(snap);
	const char *detail = tinspect_snapshot_tdb_detail(snap);
	fprintf(out, "tinspect %s: pid %d", TINSPECT_VERSION, (int)tinspect_snapshot_pid(snap));
	if (exe) {
		fputs(" (", out);
		agent_put_escaped(out, exe);
		fputc(')', out);
	}
	fprintf(out, ", %s", tinspect_snapshot_arch(snap));
	const char *libc = tinspect_snapshot_libc(snap);
	if (glibc)
		fprintf(out, ", glibc %s", glibc);
	else if (libc && strcmp(libc, "glibc")) {
		const char *v = tinspect_snapshot_libc_version(snap);
		fprintf(out, ", %s %s", libc, v ? v : "(version unknown)");
	}
	if (tinspect_snapshot_tdb_status(snap) == TINSPECT_TDB_NOT_USED)
		fprintf(out, ", threads from %s",
			tinspect_snapshot_threads_source(snap));
	else
		fprintf(out, ", libthread_db %s",
			tinspect_tdb_status_name(tinspect_snapshot_tdb_status(snap)));
	if (detail) {
		fputs(" (", out);
		agent_put_escaped(out, detail);
		fputc(')', out);
	}
	fputc('\n', out);
	size_t argc = tinspect_snapshot_argc(snap);
	if (argc) {
		fputs("command:", out);
		for (size_t i = 0; i < argc; i++) {
			fputc(' ', out);
			agent_put_escaped(out, tinspect_snapshot_arg(snap, i));
		}
		fputc('\n', out);
	}
	char ts[64];
	struct tm tm;
	int64_t sec;
	long nsec;
	tinspect_snapshot_captured_at(snap, &sec, &nsec);
	time_t t = (time_t)sec;
	gmtime_r(&t, &tm);
	strftime(ts, sizeof ts, "%Y-%m-%d %H:%M:%S", &tm);
	bool core = tinspect_snapshot_capture_mode(snap) == TINSPECT_CAPTURE_CORE;
	if (core)
		fprintf(out, "from a core file, read %s.%03ld UTC (%.3f ms)\n",
			ts, nsec / 1000000,
			(double)tinspect_snapshot_duration_ns(snap) / 1e6);
	else
		fprintf(out, "captured %s.%03ld UTC; target frozen %.3f ms (capture "
			"%.3f ms)\n", ts, nsec / 1000000,
			(double)tinspect_snapshot_freeze_ns(snap) / 1e6,
			(double)tinspect_snapshot_duration_ns(snap) / 1e6);
	struct tinspect_signal_info si;
	if (tinspect_snapshot_signal(snap, &si, sizeof si) == 0) {
		const char *abbrev = si.signo > 0 ? sigabbrev_np(si.signo) : NULL;
		fprintf(out, "signal: %s%s (%d) taken by thread %d", abbrev ? "SIG" : "",
			abbrev ? abbrev : "signal", si.signo, (int)si.tid);
		if (si.have_addr)
			fprintf(out, ", fault address 0x%" PRIx64, si.addr);
		if (si.have_sender)
			fprintf(out, ", sent by PID %d (uid %u)", (int)si.sender_pid,
				(unsigned)si.sender_uid);
		fputc('\n', out);
	}
	size_t cand_cycles, cand_stalls;
	if (tinspect_snapshot_capture_mode(snap) == TINSPECT_CAPTURE_NONBLOCKING)
		fputs("nonblocking capture: no thread was stopped; blocked threads "
		      "read from /proc and live memory, running threads without "
		      "stacks; not one consistent state\n", out);
	else if (tinspect_snapshot_candidates(snap, &cand_cycles, &cand_stalls, NULL) == 0)
		fprintf(out, "confirmation: a nonblocking capture showed %zu candidate "
			"deadlock(s) and %zu stall(s); this capture stopped the "
			"process to prove or refute them\n", cand_cycles, cand_stalls);
	if (o->verbose) {
#define MS(step) ((double)tinspect_snapshot_timing_ns(snap, TINSPECT_TIMING_##step) / 1e6)
		fprintf(out, "freeze breakdown: stop %.3f, registers %.3f, memory %.3f, "
			"libthread_db %.3f, resume %.3f ms; before %.3f, after %.3f ms\n",
			MS(STOP), MS(REGS), MS(MEMORY), MS(THREAD_DB), MS(RESUME),
			MS(SCAN), MS(ANALYSE));
#undef MS
	}
	size_t vanished = tinspect_snapshot_threads_vanished(snap);
	size_t stragglers = tinspect_snapshot_stragglers(snap);
	size_t with_errors = tinspect_snapshot_threads_with_errors(snap);
	if (core)
		fprintf(out, "threads: %zu (in the core; thread names are not in a "
			"core, the main thread's is the executable's",
			tinspect_snapshot_nthreads(snap));
	else
		fprintf(out, "threads: %zu (%zu stopped together",
			tinspect_snapshot_nthreads(snap),
			tinspect_snapshot_threads_stopped(snap));
	if (vanished)
		fprintf(out, ", %zu exited while attaching", vanished);
	if (stragglers)
		fprintf(out, ", %zu did not stop in time", stragglers);
	if (with_errors)
		fprintf(out, ", %zu with errors", with_errors);
	fputs(")\n", out);
	for (size_t i = 0, n = tinspect_snapshot_nerrors(snap); i < n; i++) {
		fputs("error: ", out);
		agent_put_escaped(out, tinspect_snapshot_error(snap, i));
		fputc('\n', out);
	}
}

int render_text(FILE *out, const tinspect_snapshot *snap,
		const struct agent_opts *o)
{
	put_header(out, snap, o);
	put_process_extras(out, snap);
	fputc('\n', out);

	/* first screen: the verdict, counts, the most contended locks */
	report_summary(out, snap, o);
	/* the lock order learned so far, with any potential deadlock */
	lockorder_text(out, o->lockorder);
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
	for (size_t i = 0, n = tinspect_snapshot_nthreads(snap); i < n; i++)
		put_thread(out, snap, i, groups, o);
	stack_groups_free(groups);
	report_all_locks(out, snap);
	return ferror(out) ? -1 : 0;
}
