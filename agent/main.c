/*
 * main.c: the tinspect command.  Parses the command line, owns the signals
 * (so that SIGINT/SIGTERM/SIGHUP/SIGPIPE in the middle of a capture resume
 * the target before tinspect goes), runs one capture and maps every
 * outcome to a one-line message and a documented exit status.
 */
#include "agent.h"
#include "common.h"
#include "formats.h"
#include "guard.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "config.h"

#define WAKE_SIGNAL SIGALRM

/* Set by the handlers; the session polls it while the target is stopped. */
static volatile sig_atomic_t got_signal;
static volatile sig_atomic_t capturing;
/* Raised by the session while it holds the target (stopped, or followed
 * between updates): only then must a signal wait for the resume. */
static volatile sig_atomic_t holding;
/* A watch run that writes its samples at the end (--folded, --pprof):
 * then SIGINT and SIGTERM between updates only raise the flag too, so
 * that the loop ends and the files are written before tinspect dies. */
static volatile sig_atomic_t finish_first;

static void on_signal(int sig)
{
	got_signal = sig;
	if (!capturing || (!holding && !finish_first)) {
		/* nothing is stopped: leave the way the signal says, now,
		 * even in the middle of an analysis or a file that will not
		 * open (the kernel detaches a straggler still seized) */
		signal(sig, SIG_DFL);
		raise(sig);
	}
}

static void on_wake(int sig)
{
	(void)sig;	/* only there to interrupt a blocking waitpid() */
}

/* SIGINT, SIGTERM, SIGHUP and SIGQUIT go to the guard thread (guard.c),
 * which ends tinspect on them even while the capture waits in the kernel;
 * the handler takes them only if that thread cannot be made.  SIGPIPE,
 * raised by a write in the thread that wrote, stays with the handler. */
static void install_signals(uint64_t max_freeze_ns)
{
	struct sigaction sa = { 0 };
	sigemptyset(&sa.sa_mask);
	sa.sa_handler = on_signal;	/* no SA_RESTART: waits return EINTR */
	int sigs[] = { SIGINT, SIGTERM, SIGHUP, SIGPIPE, SIGQUIT };
	for (size_t i = 0; i < sizeof sigs / sizeof *sigs; i++)
		sigaction(sigs[i], &sa, NULL);
	sa.sa_handler = on_wake;
	sigaction(WAKE_SIGNAL, &sa, NULL);
	struct guard_opts g = {
		.got_signal = &got_signal, .capturing = &capturing,
		.holding = &holding, .finish_first = &finish_first,
		.max_freeze_ns = max_freeze_ns, .wake_signal = WAKE_SIGNAL,
	};
	guard_start(&g);
}

/* Die of the signal that interrupted us, now that the target runs. */
static void reraise_signal(int sig)
{
	signal(sig, SIG_DFL);
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, sig);
	sigprocmask(SIG_UNBLOCK, &set, NULL);
	raise(sig);
	_exit(128 + sig);
}

static void reraise(void)
{
	reraise_signal(got_signal);
}

/* Modules keep no descriptor, but libdwfl keeps one on the separate debug
 * file of each module a stack passes through: a process with many
 * libraries in its stacks may need more than the usual soft limit. */
static void raise_fd_limit(void)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

static const char usage_text[] =
"Usage: tinspect [OPTIONS] PID\n"
"       tinspect --diff [--json] OLD.json NEW.json\n"
"       tinspect --core FILE [--exe PATH] [--sysroot DIR] [OPTIONS]\n"
"Stop every thread of process PID together for as short a time as possible,\n"
"record what each thread is doing, let the process go, and report.  With\n"
"--core, the same report from a core file (post-mortem).  With\n"
"--diff, compare two snapshots taken with --json: threads that appeared and\n"
"went away, and what stayed stuck (the same wait, a lock held by the same\n"
"owner, a deadlock) in both.\n"
"\n"
"Options:\n"
"  --json               print one JSON document (schema in "
"share/tinspect/schema)\n"
"  --pretty             indent the JSON\n"
"  --brief              text: the summary, then one line per thread (tid,\n"
"                       name, state, top frame, what it waits on)\n"
"  --verbose            text: also CPU, signals, registers and stack bounds\n"
"                       of every thread, every stack in full, every lock\n"
"  --check              exit with status 10 if a deadlock was found (after\n"
"                       printing the report as usual)\n"
"  --max-freeze MS      abandon the capture and resume the target if it would\n"
"                       stay stopped longer than MS milliseconds\n"
"  --stop-timeout MS    leave out threads that do not stop within MS ms\n"
"                       (uninterruptible sleep); default 1000\n"
"  --no-stacks          do not capture or unwind stacks\n"
"  --max-frames N       at most N frames per stack (default 256)\n"
"  --stack-bytes N      bytes of each stack copied while stopped, from sp\n"
"                       up (default 65536); a stack that needs more ends\n"
"                       with a \"truncated\" marker\n"
"  --debuginfod         let elfutils fetch missing debug info from the\n"
"                       servers in $DEBUGINFOD_URLS (off by default)\n"
"  --watch SECONDS      stay attached and print an update every SECONDS\n"
"                       (fractions allowed, at most 86400) until the\n"
"                       target exits; with --json one document per line\n"
"                       (NDJSON)\n"
"  --count N            stop after N updates\n"
"  --hung-after SECONDS in watch mode, report a thread that has waited this\n"
"                       long on a lock, a join or a semaphore (thread_hung,\n"
"                       then thread_recovered) and a lock held this long by\n"
"                       one owner while others wait (lock_held); default\n"
"                       60, 0 turns it off\n"
"  --max-duty PERCENT   in watch mode, lengthen the interval when an update's\n"
"                       freeze would keep the target frozen more than\n"
"                       PERCENT of the time (said in the stream)\n"
"  --summary            compact update lines for dashboards\n"
"  --follow-threads     also report every thread creation and exit as it\n"
"                       happens (stays attached between updates)\n"
"  --prometheus FILE    after every update, replace FILE (atomically) by\n"
"                       the metrics in Prometheus' text format, for\n"
"                       node_exporter's textfile collector\n"
"  --folded FILE        at the end (also on SIGINT/SIGTERM) write the stacks\n"
"                       of every thread of every update as folded stacks\n"
"                       (flamegraph.pl), the leaf saying what it waits on\n"
"  --folded-by thread-name  put the thread's name at the root of each stack\n"
"  --pprof FILE         the same samples as a gzip'ed pprof profile\n"
"                       (go tool pprof, Parca, Pyroscope)\n"
"  --nonblocking[=strict]  stop no thread and attach to none: threads\n"
"                       blocked in the kernel are read from /proc (pc, sp,\n"
"                       syscall) and their stacks copied live; running\n"
"                       threads are listed without stacks.  A deadlock or\n"
"                       stall seen that way is confirmed by one ordinary\n"
"                       stopped capture, which is then the report; with\n"
"                       =strict nothing is ever stopped and it is reported\n"
"                       as unconfirmed, never as a deadlock\n"
"  --update-priority idle|normal  the CPU priority of nonblocking updates:\n"
"                       idle (SCHED_IDLE: a CPU only when nothing else\n"
"                       wants it; the default with --watch) or normal\n"
"                       (the default of a one-shot capture)\n"
"  --thread-db PATH     libthread_db to load (default: the system's)\n"
"  --target-thread-db   when the system's libthread_db does not fit the\n"
"                       target's glibc (a container's), load the target's\n"
"                       own: code from its file system, run in tinspect,\n"
"                       so never by default (also: its directory in\n"
"                       TINSPECT_THREAD_DB_SAFE_PATH, colon-separated);\n"
"                       replaces --no-target-thread-db, now the default\n"
"  --tls NAME[:TYPE]    the thread-local variable NAME in every thread\n"
"                       (repeatable); TYPE: int long unsigned ulong int8\n"
"                       int16 uint8 uint16 hex pointer string bytes:N\n"
"                       (default: its DWARF type, else its bits in hex)\n"
"  --errno              errno of every thread\n"
"  --keys               pthread keys in use, their destructors, and every\n"
"                       thread's values\n"
"  --proc-mem           read target memory through /proc/PID/mem\n"
"  --core FILE          report on a core file instead of a process: written\n"
"                       by the kernel (systemd-coredump: coredumpctl dump PID\n"
"                       -o FILE) or by gdb (gcore PID); plain, zstd, xz or\n"
"                       lz4.  --watch, --follow-threads, --max-freeze,\n"
"                       --stop-timeout, --proc-mem, --prometheus do not\n"
"                       apply to a core; --folded and --pprof take its\n"
"                       stacks, one sample per thread\n"
"  --exe PATH           with --core: the executable (when it was deleted or\n"
"                       moved since the crash)\n"
"  --sysroot DIR        with --core: look up the core's files under DIR (a\n"
"                       copy of the crashed machine's or container's root)\n"
"  -h, --help           this text\n"
"  -V, --version        version\n"
"\n"
"Exit status:\n"
"  0   complete snapshot\n"
"  1   snapshot taken, but some threads could not be fully read (their\n"
"      errors say why: registers, libthread_db, a stack whose unwinding\n"
"      failed in native code); a stack that stops in JIT code is no error\n"
"  2   usage error (with --diff: a document that cannot be read, or of\n"
"      another major format version; with --core: a core file that cannot\n"
"      be read: not found, not a core, too damaged, the message says which)\n"
"  3   no such process (or only its zombie: exited, not reaped)\n"
"  4   permission denied (the message says why)\n"
"  5   unsupported target (32-bit, other architecture, kernel thread)\n"
"  6   the process exited (or exec'd) during the capture\n"
"  7   --max-freeze exceeded; the capture was abandoned, the target resumed\n"
"  8   internal error (out of memory, cannot write the output)\n"
"  10  --check: a deadlock was found (a cycle of threads waiting for locks\n"
"      held by each other); the report says which\n"
"  11  --check with --nonblocking=strict: a candidate deadlock was seen\n"
"      but, nothing being stopped, not proven (reported as unconfirmed)\n"
"  128+N  killed by signal N (after resuming the target)\n"
"The target is never left stopped, whatever the exit status.\n";

/* A plain decimal number ("12", "0.5", ".5"): no sign, no blanks, no
 * exponent, no hex, no "nan" or "inf" (strtod() takes them all), at most
 * max.  The number of ns it makes at unit ns per unit. */
static bool parse_decimal(const char *s, double max, double unit_ns,
			  uint64_t *ret_ns)
{
	size_t digits = strspn(s, "0123456789");
	size_t frac = 0;
	if (s[digits] == '.')
		frac = strspn(s + digits + 1, "0123456789");
	if (digits + frac == 0 || s[digits + (s[digits] == '.' ? 1 + frac : 0)])
		return false;
	errno = 0;
	double v = strtod(s, NULL);
	if (errno || !isfinite(v) || v < 0 || v > max)
		return false;
	*ret_ns = (uint64_t)(v * unit_ns);
	return true;
}

static bool parse_ms(const char *s, uint64_t *ret_ns)
{
	return parse_decimal(s, 86400000.0, 1e6, ret_ns);	/* a day */
}

/* Decimal digits only: strtoul() would take blanks, a sign, hex, octal. */
static bool all_digits(const char *s)
{
	return *s && s[strspn(s, "0123456789")] == '\0';
}

static bool parse_count(const char *s, unsigned long min, unsigned long max,
			unsigned long *ret)
{
	if (!all_digits(s))
		return false;
	errno = 0;
	unsigned long v = strtoul(s, NULL, 10);
	if (errno || v < min || v > max)
		return false;
	*ret = v;
	return true;
}

/* " 12" and "+12" are no PIDs: a script passing them has a bug to see. */
static bool parse_pid(const char *s, pid_t *ret)
{
	if (!all_digits(s))
		return false;
	errno = 0;
	long v = strtol(s, NULL, 10);
	if (errno || v <= 0 || v > INT_MAX)
		return false;
	*ret = (pid_t)v;
	return true;
}

/* One --tls NAME[:TYPE]; names must be unique (they key the JSON). */
static int parse_tls(const char *arg, struct tinspect_tls_request *v, size_t *n,
		     size_t max)
{
	struct tinspect_tls_request r = { .type = TINSPECT_TLS_AUTO };
	if (*n == max) {
		fprintf(stderr, "tinspect: --tls: at most %zu variables\n", max);
		return -1;
	}
	size_t len = strcspn(arg, ":");
	if (len == 0 ||
	    (arg[len] && tinspect_tls_parse_type(arg + len + 1, &r.type, &r.size))) {
		fprintf(stderr, "tinspect: --tls: not NAME[:TYPE] with TYPE one of "
			"int long unsigned ulong int8 int16 uint8 uint16 hex "
			"pointer string bytes:N (N <= %d): %s\n", TINSPECT_TLS_BYTES_MAX,
			arg);
		return -1;
	}
	char *name = strndup(arg, len);
	if (!name)
		return -1;
	for (size_t i = 0; i < *n; i++)
		if (!strcmp(v[i].name, name)) {
			fprintf(stderr, "tinspect: --tls: %s given twice\n", name);
			free(name);
			return -1;
		}
	r.name = name;	/* lives until exit */
	v[(*n)++] = r;
	return 0;
}

static int report_eperm(pid_t pid)
{
	struct tinspect_eperm_diag d = { .cause = TINSPECT_EPERM_UNKNOWN };
	tinspect_diagnose_eperm(pid, &d, sizeof d);
	switch (d.cause) {
	case TINSPECT_EPERM_TRACED:
		fprintf(stderr, "tinspect: cannot attach to %d: it is already traced "
			"by PID %d (", (int)pid, (int)d.tracer_pid);
		/* a process name is any bytes: escaped, never raw */
		agent_fput_quoted(stderr, d.tracer_comm,
				  strnlen(d.tracer_comm, sizeof d.tracer_comm));
		fputs("); only one tracer at a time\n", stderr);
		break;
	case TINSPECT_EPERM_OTHER_UID:
		fprintf(stderr, "tinspect: cannot attach to %d: it runs as uid %u and "
			"tinspect has no CAP_SYS_PTRACE; run as that user or as root\n",
			(int)pid, (unsigned)d.target_uid);
		break;
	case TINSPECT_EPERM_YAMA:
		fprintf(stderr, "tinspect: cannot attach to %d: the Yama LSM forbids it "
			"(kernel.yama.ptrace_scope = %d); run as root or lower the "
			"scope\n", (int)pid, d.yama_scope);
		break;
	case TINSPECT_EPERM_NOT_DUMPABLE:
		fprintf(stderr, "tinspect: cannot attach to %d: it is not dumpable "
			"(set-id program or PR_SET_DUMPABLE 0); needs CAP_SYS_PTRACE\n",
			(int)pid);
		break;
	default:
		fprintf(stderr, "tinspect: cannot attach to %d: operation not "
			"permitted (a security module or seccomp policy may forbid "
			"ptrace)\n", (int)pid);
		break;
	}
	return EXIT_PERMISSION;
}

/* No process to inspect: none at all, or only a zombie (it has exited;
 * its parent has not collected its status yet).  Both are "no such
 * process" (3): there is nothing left to inspect, and waiting will not
 * help unless the parent reaps it. */
static int report_gone(pid_t pid)
{
	char state;
	pid_t ppid;
	if (tinspect_process_status(pid, &state, &ppid, NULL) == 0 &&
	    (state == 'Z' || state == 'X')) {
		fprintf(stderr, "tinspect: process %d is a zombie: it has exited "
			"and its parent (PID %d) has not reaped it; nothing to "
			"inspect\n", (int)pid, (int)ppid);
		return EXIT_NO_PROCESS;
	}
	fprintf(stderr, "tinspect: no process with PID %d\n", (int)pid);
	return EXIT_NO_PROCESS;
}

/* Message and exit status for a failed capture. */
static int report_error(pid_t pid, int err, bool started, uint64_t max_freeze_ns)
{
	switch (err) {
	case -ESRCH:
		if (started) {
			fprintf(stderr, "tinspect: process %d exited during the capture\n",
				(int)pid);
			return EXIT_TARGET_EXITED;
		}
		return report_gone(pid);
	case -EPERM:
	case -EACCES:
		return report_eperm(pid);
	case -ENOEXEC:
		fprintf(stderr, "tinspect: process %d is not a 64-bit %s user-space "
			"process; it cannot be inspected by this build\n", (int)pid,
			tinspect_host_arch());
		return EXIT_UNSUPPORTED;
	case -ETIMEDOUT:
		fprintf(stderr, "tinspect: freeze limit of %.3f ms exceeded; capture "
			"abandoned, process %d resumed\n", (double)max_freeze_ns / 1e6,
			(int)pid);
		return EXIT_FREEZE_LIMIT;
	case -ESTALE:
		fprintf(stderr, "tinspect: process %d executed a new program during "
			"the capture; run tinspect again\n", (int)pid);
		return EXIT_TARGET_EXITED;
	case -EINTR:
		reraise();
		return EXIT_INTERNAL;
	default:
		fprintf(stderr, "tinspect: capture of process %d failed: %s\n",
			(int)pid, strerror(-err));
		return EXIT_INTERNAL;
	}
}

/* A 32-bit or foreign process, or a kernel thread, gets a precise
 * message. */
static int report_unsupported(pid_t pid)
{
	bool kthread;
	if (tinspect_process_status(pid, NULL, NULL, &kthread) == 0 && kthread) {
		fprintf(stderr, "tinspect: process %d is a kernel thread; nothing "
			"to inspect\n", (int)pid);
		return EXIT_UNSUPPORTED;
	}
	char path[64];
	unsigned char eh[20];
	snprintf(path, sizeof path, "/proc/%d/exe", (int)pid);
	FILE *f = fopen(path, "rb");
	if (f && fread(eh, 1, sizeof eh, f) == sizeof eh && eh[4] == 1) {
		fprintf(stderr, "tinspect: process %d is a 32-bit program; tinspect "
			"inspects 64-bit processes only\n", (int)pid);
		fclose(f);
		return EXIT_UNSUPPORTED;
	}
	if (f)
		fclose(f);
	else if (errno == ENOENT) {
		fprintf(stderr, "tinspect: process %d has no executable (a kernel "
			"thread?); nothing to inspect\n", (int)pid);
		return EXIT_UNSUPPORTED;
	}
	return report_error(pid, -ENOEXEC, false, 0);
}

int main(int argc, char **argv)
{
	struct agent_opts ao = { 0 };
	TINSPECT_OPTIONS(dopts,
		/* like gdb's auto-load safe-path: the directories whose
		 * libthread_db may be loaded for a target without
		 * --target-thread-db */
		.thread_db_safe_path = getenv("TINSPECT_THREAD_DB_SAFE_PATH"),
		.stop_timeout_ns = 1000ull * 1000000,
		.cancel = &got_signal,
		.wake_signal = WAKE_SIGNAL,
		.holding = &holding);
	enum { OPT_JSON = 256, OPT_PRETTY, OPT_MAX_FREEZE, OPT_STOP_TIMEOUT,
	       OPT_THREAD_DB, OPT_PROC_MEM, OPT_NO_STACKS, OPT_MAX_FRAMES,
	       OPT_STACK_BYTES, OPT_DEBUGINFOD, OPT_TLS, OPT_ERRNO, OPT_KEYS,
	       OPT_NO_TARGET_TDB, OPT_TARGET_TDB, OPT_CHECK, OPT_WATCH, OPT_COUNT, OPT_SUMMARY,
	       OPT_FOLLOW, OPT_BRIEF, OPT_VERBOSE, OPT_HUNG_AFTER, OPT_MAX_DUTY,
	       OPT_DIFF, OPT_PROMETHEUS, OPT_FOLDED, OPT_FOLDED_BY, OPT_PPROF, OPT_CORE, OPT_EXE, OPT_SYSROOT, OPT_NONBLOCKING,
	       OPT_UPDATE_PRIORITY };
	struct format_opts fo = { 0 };
	const char *core = NULL, *exe = NULL, *sysroot = NULL;
	/* options that make no sense for a core, refused with --core */
	const char *live_only = NULL;
	struct watch_opts wo = { 0 };
	bool watch = false, diff = false, hung_after_set = false;
	int idle_updates = -1;	/* --update-priority; -1: the default */
	bool debuginfod = false;
	enum { MAX_TLS = 64 };
	static struct tinspect_tls_request tls[MAX_TLS];
	static const struct option lo[] = {
		{ "json", no_argument, NULL, OPT_JSON },
		{ "pretty", no_argument, NULL, OPT_PRETTY },
		{ "check", no_argument, NULL, OPT_CHECK },
		{ "brief", no_argument, NULL, OPT_BRIEF },
		{ "verbose", no_argument, NULL, OPT_VERBOSE },
		{ "watch", required_argument, NULL, OPT_WATCH },
		{ "count", required_argument, NULL, OPT_COUNT },
		{ "summary", no_argument, NULL, OPT_SUMMARY },
		{ "follow-threads", no_argument, NULL, OPT_FOLLOW },
		{ "prometheus", required_argument, NULL, OPT_PROMETHEUS },
		{ "folded", required_argument, NULL, OPT_FOLDED },
		{ "folded-by", required_argument, NULL, OPT_FOLDED_BY },
		{ "pprof", required_argument, NULL, OPT_PPROF },
		{ "hung-after", required_argument, NULL, OPT_HUNG_AFTER },
		{ "max-duty", required_argument, NULL, OPT_MAX_DUTY },
		{ "diff", no_argument, NULL, OPT_DIFF },
		{ "nonblocking", optional_argument, NULL, OPT_NONBLOCKING },
		{ "update-priority", required_argument, NULL, OPT_UPDATE_PRIORITY },
		{ "max-freeze", required_argument, NULL, OPT_MAX_FREEZE },
		{ "stop-timeout", required_argument, NULL, OPT_STOP_TIMEOUT },
		{ "thread-db", required_argument, NULL, OPT_THREAD_DB },
		{ "proc-mem", no_argument, NULL, OPT_PROC_MEM },
		{ "no-stacks", no_argument, NULL, OPT_NO_STACKS },
		{ "max-frames", required_argument, NULL, OPT_MAX_FRAMES },
		{ "stack-bytes", required_argument, NULL, OPT_STACK_BYTES },
		{ "debuginfod", no_argument, NULL, OPT_DEBUGINFOD },
		{ "tls", required_argument, NULL, OPT_TLS },
		{ "errno", no_argument, NULL, OPT_ERRNO },
		{ "keys", no_argument, NULL, OPT_KEYS },
		{ "no-target-thread-db", no_argument, NULL, OPT_NO_TARGET_TDB },
		{ "target-thread-db", no_argument, NULL, OPT_TARGET_TDB },
		{ "core", required_argument, NULL, OPT_CORE },
		{ "exe", required_argument, NULL, OPT_EXE },
		{ "sysroot", required_argument, NULL, OPT_SYSROOT },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	int c;
	unsigned long count;
	while ((c = getopt_long(argc, argv, "hV", lo, NULL)) != -1) {
		switch (c) {
		case OPT_JSON:
			ao.json = true;
			break;
		case OPT_PRETTY:
			ao.pretty = true;
			break;
		case OPT_CHECK:
			ao.check = true;
			break;
		case OPT_BRIEF:
			ao.brief = true;
			break;
		case OPT_VERBOSE:
			ao.verbose = true;
			break;
		case OPT_CORE:
			core = optarg;
			break;
		case OPT_EXE:
			exe = optarg;
			break;
		case OPT_SYSROOT:
			sysroot = optarg;
			break;
		case OPT_MAX_FREEZE:
			live_only = "--max-freeze";
			if (!parse_ms(optarg, &dopts.max_freeze_ns) ||
			    !dopts.max_freeze_ns) {
				fprintf(stderr, "tinspect: --max-freeze: not a positive "
					"number of milliseconds: %s\n", optarg);
				return EXIT_USAGE;
			}
			break;
		case OPT_STOP_TIMEOUT:
			live_only = "--stop-timeout";
			/* 0 would mean: wait for ever for a D-state thread,
			 * with every other thread stopped meanwhile */
			if (!parse_ms(optarg, &dopts.stop_timeout_ns) ||
			    dopts.stop_timeout_ns < 1000000) {
				fprintf(stderr, "tinspect: --stop-timeout: not a number "
					"of milliseconds (at least 1): %s\n", optarg);
				return EXIT_USAGE;
			}
			break;
		case OPT_THREAD_DB:
			dopts.thread_db_path = optarg;
			break;
		case OPT_PROC_MEM:
			live_only = "--proc-mem";
			dopts.flags |= TINSPECT_OPT_PROC_MEM;
			break;
		case OPT_WATCH:
			live_only = "--watch";
			/* seconds, fractions allowed, at most a day */
			if (!parse_decimal(optarg, 86400.0, 1e9, &wo.interval_ns) ||
			    !wo.interval_ns) {
				fprintf(stderr, "tinspect: --watch: not a positive "
					"number of seconds (at most 86400): %s\n",
					optarg);
				return EXIT_USAGE;
			}
			watch = true;
			break;
		case OPT_COUNT:
			if (!parse_count(optarg, 1, 1ul << 40, &count)) {
				fprintf(stderr, "tinspect: --count: not a positive "
					"number: %s\n", optarg);
				return EXIT_USAGE;
			}
			wo.count = count;
			break;
		case OPT_SUMMARY:
			wo.summary = true;
			break;
		case OPT_FOLLOW:
			live_only = "--follow-threads";
			wo.follow = true;
			break;
		case OPT_PROMETHEUS:
			fo.prometheus = optarg;
			break;
		case OPT_FOLDED:
			fo.folded = optarg;
			break;
		case OPT_FOLDED_BY:
			if (strcmp(optarg, "thread-name")) {
				fprintf(stderr, "tinspect: --folded-by: only "
					"thread-name is known: %s\n", optarg);
				return EXIT_USAGE;
			}
			fo.folded_by_name = true;
			break;
		case OPT_PPROF:
#if !HAVE_PPROF
			fprintf(stderr, "tinspect: --pprof: this tinspect was built "
				"without protobuf-c (protoc-c and libprotobuf-c-dev)\n");
			return EXIT_USAGE;
#endif
			fo.pprof = optarg;
			break;
		case OPT_HUNG_AFTER:
			if (!parse_decimal(optarg, 86400.0 * 365, 1e9, &wo.hung_after_ns)) {
				fprintf(stderr, "tinspect: --hung-after: not a number of "
					"seconds: %s\n", optarg);
				return EXIT_USAGE;
			}
			hung_after_set = true;
			break;
		case OPT_MAX_DUTY: {
			uint64_t centi;	/* hundredths of a percent */
			if (!parse_decimal(optarg, 100.0, 100.0, &centi) || !centi) {
				fprintf(stderr, "tinspect: --max-duty: not a percentage "
					"above 0 and at most 100: %s\n", optarg);
				return EXIT_USAGE;
			}
			wo.max_duty_percent = (double)centi / 100.0;
			break;
		}
		case OPT_DIFF:
			diff = true;
			break;
		case OPT_NONBLOCKING:
			if (optarg && strcmp(optarg, "strict") != 0) {
				fprintf(stderr, "tinspect: --nonblocking takes no "
					"value or =strict, not '%s'\n", optarg);
				return EXIT_USAGE;
			}
			dopts.flags |= optarg ? TINSPECT_OPT_NONBLOCKING_STRICT
					      : TINSPECT_OPT_NONBLOCKING;
			break;
		case OPT_UPDATE_PRIORITY:
			if (strcmp(optarg, "idle") && strcmp(optarg, "normal")) {
				fprintf(stderr, "tinspect: --update-priority is idle "
					"or normal, not '%s'\n", optarg);
				return EXIT_USAGE;
			}
			idle_updates = !strcmp(optarg, "idle");
			break;
		case OPT_NO_STACKS:
			dopts.flags |= TINSPECT_OPT_NO_STACKS;
			break;
		case OPT_MAX_FRAMES:
			if (!parse_count(optarg, 1, 1024, &count)) {
				fprintf(stderr, "tinspect: --max-frames: not a number "
					"from 1 to 1024: %s\n", optarg);
				return EXIT_USAGE;
			}
			dopts.max_frames = (unsigned)count;
			break;
		case OPT_STACK_BYTES:
			if (!parse_count(optarg, 64, 64ul << 20, &count)) {
				fprintf(stderr, "tinspect: --stack-bytes: not a number "
					"from 64 to 67108864: %s\n", optarg);
				return EXIT_USAGE;
			}
			dopts.stack_bytes = count;
			break;
		case OPT_DEBUGINFOD:
			debuginfod = true;
			break;
		case OPT_TLS:
			if (parse_tls(optarg, tls, &dopts.ntls, MAX_TLS))
				return EXIT_USAGE;
			dopts.tls = tls;
			break;
		case OPT_ERRNO:
			dopts.flags |= TINSPECT_OPT_ERRNO;
			break;
		case OPT_KEYS:
			dopts.flags |= TINSPECT_OPT_KEYS;
			break;
		case OPT_NO_TARGET_TDB:
			/* the old default was to load it: a script that
			 * forbade it gets what it asked for, but must know
			 * the option is gone */
			fprintf(stderr, "tinspect: --no-target-thread-db is gone: "
				"the target's own libthread_db is never loaded "
				"unless --target-thread-db (or "
				"TINSPECT_THREAD_DB_SAFE_PATH) allows it; drop the "
				"option\n");
			return EXIT_USAGE;
		case OPT_TARGET_TDB:
			dopts.flags |= TINSPECT_OPT_TARGET_THREAD_DB;
			break;
		case 'h':
			fputs(usage_text, stdout);
			return EXIT_SNAPSHOT_OK;
		case 'V':
			printf("tinspect %s\n", TINSPECT_VERSION);
			return EXIT_SNAPSHOT_OK;
		default:
			fputs(usage_text, stderr);
			return EXIT_USAGE;
		}
	}
	if (diff) {
		if (optind != argc - 2 || watch) {
			fprintf(stderr, "tinspect: --diff takes two documents: "
				"tinspect --diff [--json] OLD.json NEW.json\n");
			return EXIT_USAGE;
		}
		return agent_diff(argv[optind], argv[optind + 1], ao.json);
	}
	if ((exe || sysroot) && !core) {
		fprintf(stderr, "tinspect: --exe and --sysroot go with --core\n");
		return EXIT_USAGE;
	}
	if (core) {
		if (optind != argc) {
			fprintf(stderr, "tinspect: --core FILE takes no PID\n");
			return EXIT_USAGE;
		}
		if (live_only) {
			fprintf(stderr, "tinspect: %s does not apply to a core file: "
				"a core is one frozen moment, nothing runs or stops\n",
				live_only);
			return EXIT_USAGE;
		}
		if (ao.brief && ao.verbose) {
			fprintf(stderr, "tinspect: --brief and --verbose do not go "
				"together\n");
			return EXIT_USAGE;
		}
		if (fo.prometheus) {
			fprintf(stderr, "tinspect: --prometheus does not apply to a "
				"core file: its gauges are a live process's state "
				"for a textfile collector (--folded and --pprof "
				"take a core's stacks)\n");
			return EXIT_USAGE;
		}
		if (!debuginfod)
			unsetenv("DEBUGINFOD_URLS");
		raise_fd_limit();
		if (formats_wanted(&fo)) {
			const char *bad = NULL;
			int e = formats_open(&fo, &ao.formats, &bad);
			if (e) {
				fprintf(stderr, "tinspect: cannot write %s: %s\n",
					bad ? bad : "the output files", strerror(-e));
				return e == -ENOMEM ? EXIT_INTERNAL : EXIT_USAGE;
			}
		}
		return agent_core(core, exe, sysroot, &dopts, &ao);
	}
	pid_t pid;
	if (optind != argc - 1 || !parse_pid(argv[optind], &pid)) {
		if (optind == argc - 1)
			fprintf(stderr, "tinspect: not a PID: %s\n", argv[optind]);
		fputs(usage_text, stderr);
		return EXIT_USAGE;
	}
	if (pid == getpid()) {
		fprintf(stderr, "tinspect: cannot inspect itself\n");
		return EXIT_USAGE;
	}

	/* elfutils consults debuginfod servers when DEBUGINFOD_URLS is set:
	 * an incident tool must not wait on the network unless asked to */
	if (!debuginfod)
		unsetenv("DEBUGINFOD_URLS");
	if (!watch && (wo.count || wo.summary || wo.follow || hung_after_set ||
		       wo.max_duty_percent > 0)) {
		fprintf(stderr, "tinspect: --count, --summary, --follow-threads, "
			"--hung-after and --max-duty go with --watch\n");
		return EXIT_USAGE;
	}
	if (watch && !hung_after_set)
		wo.hung_after_ns = 60 * UINT64_C(1000000000);
	bool nonblocking = dopts.flags & (TINSPECT_OPT_NONBLOCKING |
					  TINSPECT_OPT_NONBLOCKING_STRICT);
	if (idle_updates >= 0 && !nonblocking) {
		fprintf(stderr, "tinspect: --update-priority goes with --nonblocking "
			"(an all-stop capture is a freeze: it runs at full speed)\n");
		return EXIT_USAGE;
	}
	/* a nonblocking watch runs for weeks on busy machines: it yields the
	 * CPU unless told otherwise; a one-shot capture does not wait */
	if (idle_updates > 0 || (idle_updates < 0 && watch && nonblocking))
		dopts.flags |= TINSPECT_OPT_IDLE_PRIORITY;
	if (wo.follow && (dopts.flags & (TINSPECT_OPT_NONBLOCKING |
					 TINSPECT_OPT_NONBLOCKING_STRICT))) {
		fprintf(stderr, "tinspect: --follow-threads attaches to every "
			"thread; --nonblocking attaches to none\n");
		return EXIT_USAGE;
	}
	if (ao.brief && ao.verbose) {
		fprintf(stderr, "tinspect: --brief and --verbose do not go together\n");
		return EXIT_USAGE;
	}
	if (ao.json && (ao.brief || ao.verbose)) {
		fprintf(stderr, "tinspect: --brief and --verbose shape the text "
			"report; the JSON document is always complete\n");
		return EXIT_USAGE;
	}
	if (watch && (ao.pretty || ao.check)) {
		fprintf(stderr, "tinspect: --pretty and --check do not go with "
			"--watch (one line per update)\n");
		return EXIT_USAGE;
	}

	if (fo.folded_by_name && !fo.folded) {
		fprintf(stderr, "tinspect: --folded-by goes with --folded\n");
		return EXIT_USAGE;
	}
	struct formats *formats = NULL;
	if (formats_wanted(&fo)) {
		const char *bad = NULL;
		fo.wait_ages = watch;
		fo.hung_after_ns = wo.hung_after_ns;
		int e = formats_open(&fo, &formats, &bad);
		if (e) {
			fprintf(stderr, "tinspect: cannot write %s: %s\n",
				bad ? bad : "the output files", strerror(-e));
			return e == -ENOMEM ? EXIT_INTERNAL : EXIT_USAGE;
		}
		ao.formats = formats;
		finish_first = watch && (fo.folded || fo.pprof);
	}

	raise_fd_limit();
	install_signals(dopts.max_freeze_ns);
	tinspect_session *s = NULL;
	capturing = 1;
	int err = tinspect_session_init(pid, &dopts, &s);
	if (err) {
		capturing = 0;
		formats_close(formats);
		if (err == -ENOEXEC)
			return report_unsupported(pid);
		return report_error(pid, err, false, dopts.max_freeze_ns);
	}
	if (watch) {
		wo.json = ao.json;
		wo.cancel = &got_signal;
		/* signals only raise the flag for the whole watch: the loop
		 * resumes and detaches, then dies of the signal */
		err = agent_watch(&s, pid, &dopts, &wo, &ao);
		tinspect_session_destroy(s);
		capturing = 0;
		/* the samples of every update made, also when a signal ended
		 * the run */
		int ferr = formats_close(formats);
		if (got_signal)
			reraise();
		if (err == -EPIPE)
			reraise_signal(SIGPIPE);	/* the reader is gone */
		if (err)
			return report_error(pid, err, true, dopts.max_freeze_ns);
		return ferr ? EXIT_INTERNAL : EXIT_SNAPSHOT_OK;
	}
	tinspect_snapshot *snap = NULL;
	err = tinspect_session_update(s, &snap);
	tinspect_session_destroy(s);
	capturing = 0;
	if (got_signal)
		reraise();
	/* once, without --watch: the files of this one update (or, after
	 * the freeze limit, a textfile that counts the failure) */
	if (snap)
		formats_snapshot(formats, snap);
	else if (err == -ETIMEDOUT)
		formats_update_failed(formats);
	int ferr = formats_close(formats);
	if (err)
		return report_error(pid, err, true, dopts.max_freeze_ns);

	int status = agent_report(snap, &ao);
	/* a file of --prometheus/--folded/--pprof not written: an internal
	 * error, unless the deadlock the caller asked about was found */
	if (ferr && status != EXIT_DEADLOCK)
		status = EXIT_INTERNAL;
	return status;
}

int agent_report(tinspect_snapshot *snap, const struct agent_opts *ao)
{
	int r = ao->json ? render_json(stdout, snap, ao)
			 : render_text(stdout, snap, ao);
	int status = tinspect_snapshot_threads_with_errors(snap) ? EXIT_PARTIAL
								 : EXIT_SNAPSHOT_OK;
	/* --check: a deadlock is what the caller asked about; it wins over
	 * "partial" */
	if (ao->check && tinspect_snapshot_ncycles(snap))
		status = tinspect_snapshot_capture_mode(snap) == TINSPECT_CAPTURE_NONBLOCKING
				 ? EXIT_UNCONFIRMED : EXIT_DEADLOCK;
	tinspect_snapshot_free(snap);
	if (fflush(stdout) != 0 || r != 0) {
		if (got_signal)
			reraise();
		fprintf(stderr, "tinspect: cannot write the report: %s\n",
			strerror(errno));
		return EXIT_INTERNAL;
	}
	return status;
}
