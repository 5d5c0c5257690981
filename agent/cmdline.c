/*
 * cmdline.c: tinspect's command line.  The usage text, the options and
 * their values (numbers are plain decimal: a script that passes " 12",
 * "+12" or "0x10" has a bug to see, not a guess), then the checks of
 * what the options mean together.  Nothing runs here: main.c runs what
 * the command line asks for once both have passed.
 */
#include "cmdline.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"

static const char usage_text[] =
"Usage: tinspect [OPTIONS] PID\n"
"       tinspect --diff [--json] OLD.json NEW.json\n"
"       tinspect --core FILE [--exe PATH] [--sysroot DIR] [OPTIONS]\n"
"       tinspect --lock-order FILE [--json] [--check]\n"
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
"                       printing the report as usual); with --lock-order,\n"
"                       12 if none was but the lock-order graph holds a\n"
"                       potential deadlock\n"
"  --max-freeze MS      abandon the capture and resume the target if it would\n"
"                       stay stopped longer than MS milliseconds\n"
"  --stop-timeout MS    leave out threads that do not stop within MS ms\n"
"                       (uninterruptible sleep; a runnable one gets ten\n"
"                       times as long); default 1000\n"
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
"  --lock-order FILE    keep the lock-order graph (a watch keeps one in\n"
"                       memory anyway) in FILE: read at the start, merged\n"
"                       with what this run learns, replaced atomically\n"
"                       (JSON); without a PID, print the saved graph\n"
"  --no-lock-order      in watch mode, keep no lock-order graph (and read\n"
"                       no lock words beyond those waited on)\n"
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
"  2   usage error (with --diff: a document that cannot be read, of\n"
"      another major format version, or failing the snapshot schema on a\n"
"      member compared; with --core: a core file that cannot be read: not\n"
"      found, not a core, too damaged, the message says which)\n"
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
"  12  --check with --lock-order: no deadlock, but the lock-order graph\n"
"      holds a potential deadlock (a lock order inversion)\n"
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

enum {
	OPT_JSON = 256, OPT_PRETTY, OPT_MAX_FREEZE, OPT_STOP_TIMEOUT,
	OPT_THREAD_DB, OPT_PROC_MEM, OPT_NO_STACKS, OPT_MAX_FRAMES,
	OPT_STACK_BYTES, OPT_DEBUGINFOD, OPT_TLS, OPT_ERRNO, OPT_KEYS,
	OPT_NO_TARGET_TDB, OPT_TARGET_TDB, OPT_CHECK, OPT_WATCH, OPT_COUNT, OPT_SUMMARY,
	OPT_FOLLOW, OPT_BRIEF, OPT_VERBOSE, OPT_HUNG_AFTER, OPT_MAX_DUTY,
	OPT_DIFF, OPT_PROMETHEUS, OPT_FOLDED, OPT_FOLDED_BY, OPT_PPROF, OPT_CORE, OPT_EXE, OPT_SYSROOT, OPT_NONBLOCKING,
	OPT_UPDATE_PRIORITY, OPT_LOCK_ORDER, OPT_NO_LOCK_ORDER,
};

static const struct option long_options[] = {
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
	{ "lock-order", required_argument, NULL, OPT_LOCK_ORDER },
	{ "no-lock-order", no_argument, NULL, OPT_NO_LOCK_ORDER },
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

/* Each option parser below returns -1 for an option that is not its
 * own, 0 when it took it, EXIT_USAGE for a bad value (said). */
#define NOT_MINE (-1)

/* The options that only set something: a bool of struct cmdline, a
 * string of it (the option's value), or a flag of the session's options;
 * live_only names the ones a core refuses. */
enum plain_set { SET_BOOL, SET_ARG, SET_FLAG };
static const struct plain_option {
	int opt;
	enum plain_set set;
	size_t at;		/* SET_BOOL, SET_ARG: where in struct cmdline */
	unsigned flag;		/* SET_FLAG: a TINSPECT_OPT_* bit */
	const char *live_only;
} plain_options[] = {
	/* what the report shows, and which command */
	{ OPT_JSON, SET_BOOL, offsetof(struct cmdline, ao.json), 0, NULL },
	{ OPT_PRETTY, SET_BOOL, offsetof(struct cmdline, ao.pretty), 0, NULL },
	{ OPT_CHECK, SET_BOOL, offsetof(struct cmdline, ao.check), 0, NULL },
	{ OPT_BRIEF, SET_BOOL, offsetof(struct cmdline, ao.brief), 0, NULL },
	{ OPT_VERBOSE, SET_BOOL, offsetof(struct cmdline, ao.verbose), 0, NULL },
	{ OPT_DIFF, SET_BOOL, offsetof(struct cmdline, diff), 0, NULL },
	{ OPT_CORE, SET_ARG, offsetof(struct cmdline, core), 0, NULL },
	{ OPT_EXE, SET_ARG, offsetof(struct cmdline, exe), 0, NULL },
	{ OPT_SYSROOT, SET_ARG, offsetof(struct cmdline, sysroot), 0, NULL },
	/* how a capture stops the target */
	{ OPT_PROC_MEM, SET_FLAG, 0, TINSPECT_OPT_PROC_MEM, "--proc-mem" },
	/* what a capture reads */
	{ OPT_NO_STACKS, SET_FLAG, 0, TINSPECT_OPT_NO_STACKS, NULL },
	{ OPT_DEBUGINFOD, SET_BOOL, offsetof(struct cmdline, debuginfod), 0, NULL },
	{ OPT_ERRNO, SET_FLAG, 0, TINSPECT_OPT_ERRNO, NULL },
	{ OPT_KEYS, SET_FLAG, 0, TINSPECT_OPT_KEYS, NULL },
	{ OPT_TARGET_TDB, SET_FLAG, 0, TINSPECT_OPT_TARGET_THREAD_DB, NULL },
	/* --watch and what goes with it */
	{ OPT_SUMMARY, SET_BOOL, offsetof(struct cmdline, wo.summary), 0, NULL },
	{ OPT_FOLLOW, SET_BOOL, offsetof(struct cmdline, wo.follow), 0,
	  "--follow-threads" },
	/* the files for other tools (formats/) */
	{ OPT_PROMETHEUS, SET_ARG, offsetof(struct cmdline, fo.prometheus), 0, NULL },
	{ OPT_FOLDED, SET_ARG, offsetof(struct cmdline, fo.folded), 0, NULL },
	/* the lock-order graph (lockorder/) */
	{ OPT_LOCK_ORDER, SET_ARG, offsetof(struct cmdline, lock_order_path), 0,
	  NULL },
	{ OPT_NO_LOCK_ORDER, SET_BOOL, offsetof(struct cmdline, no_lock_order), 0,
	  NULL },
};

static int parse_plain_option(int c, struct cmdline *cl)
{
	for (size_t i = 0; i < sizeof plain_options / sizeof *plain_options; i++) {
		const struct plain_option *p = &plain_options[i];
		if (p->opt != c)
			continue;
		if (p->live_only)
			cl->live_only = p->live_only;
		switch (p->set) {
		case SET_BOOL:
			*(bool *)((char *)cl + p->at) = true;
			break;
		case SET_ARG:
			*(const char **)((char *)cl + p->at) = optarg;
			break;
		case SET_FLAG:
			cl->opts->flags |= p->flag;
			break;
		}
		return 0;
	}
	return NOT_MINE;
}

/* An option's value refused: said, and the exit status of a usage error. */
static int bad_value(const char *opt, const char *what)
{
	fprintf(stderr, "tinspect: %s: not %s: %s\n", opt, what, optarg);
	return EXIT_USAGE;
}

/* How a capture stops the target and how much it takes. */
static int parse_stop_option(int c, struct cmdline *cl)
{
	struct tinspect_options *o = cl->opts;
	switch (c) {
	case OPT_MAX_FREEZE:
		cl->live_only = "--max-freeze";
		if (!parse_ms(optarg, &o->max_freeze_ns) ||
		    !o->max_freeze_ns)
			return bad_value("--max-freeze",
					 "a positive number of milliseconds");
		return 0;
	case OPT_STOP_TIMEOUT:
		cl->live_only = "--stop-timeout";
		/* 0 would mean: wait for ever for a D-state thread,
		 * with every other thread stopped meanwhile */
		if (!parse_ms(optarg, &o->stop_timeout_ns) ||
		    o->stop_timeout_ns < 1000000)
			return bad_value("--stop-timeout",
					 "a number of milliseconds (at least 1)");
		return 0;
	case OPT_NONBLOCKING:
		if (optarg && strcmp(optarg, "strict") != 0) {
			fprintf(stderr, "tinspect: --nonblocking takes no "
				"value or =strict, not '%s'\n", optarg);
			return EXIT_USAGE;
		}
		o->flags |= optarg ? TINSPECT_OPT_NONBLOCKING_STRICT
				   : TINSPECT_OPT_NONBLOCKING;
		return 0;
	case OPT_UPDATE_PRIORITY:
		if (strcmp(optarg, "idle") && strcmp(optarg, "normal")) {
			fprintf(stderr, "tinspect: --update-priority is idle "
				"or normal, not '%s'\n", optarg);
			return EXIT_USAGE;
		}
		cl->idle_updates = !strcmp(optarg, "idle");
		return 0;
	}
	return NOT_MINE;
}

/* What a capture reads: stacks, TLS, keys, libthread_db. */
static int parse_read_option(int c, struct cmdline *cl)
{
	enum { MAX_TLS = 64 };
	static struct tinspect_tls_request tls[MAX_TLS];
	struct tinspect_options *o = cl->opts;
	unsigned long count;
	switch (c) {
	case OPT_THREAD_DB:
		o->thread_db_path = optarg;
		return 0;
	case OPT_MAX_FRAMES:
		if (!parse_count(optarg, 1, 1024, &count))
			return bad_value("--max-frames",
					 "a number from 1 to 1024");
		o->max_frames = (unsigned)count;
		return 0;
	case OPT_STACK_BYTES:
		if (!parse_count(optarg, 64, 64ul << 20, &count))
			return bad_value("--stack-bytes",
					 "a number from 64 to 67108864");
		o->stack_bytes = count;
		return 0;
	case OPT_TLS:
		if (parse_tls(optarg, tls, &o->ntls, MAX_TLS))
			return EXIT_USAGE;
		o->tls = tls;
		return 0;
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
	}
	return NOT_MINE;
}

/* --watch and what goes with it. */
static int parse_watch_option(int c, struct cmdline *cl)
{
	struct watch_opts *wo = &cl->wo;
	unsigned long count;
	switch (c) {
	case OPT_WATCH:
		cl->live_only = "--watch";
		/* seconds, fractions allowed, at most a day */
		if (!parse_decimal(optarg, 86400.0, 1e9, &wo->interval_ns) ||
		    !wo->interval_ns)
			return bad_value("--watch",
					 "a positive number of seconds (at most 86400)");
		cl->watch = true;
		return 0;
	case OPT_COUNT:
		if (!parse_count(optarg, 1, 1ul << 40, &count))
			return bad_value("--count", "a positive number");
		wo->count = count;
		return 0;
	case OPT_HUNG_AFTER:
		if (!parse_decimal(optarg, 86400.0 * 365, 1e9, &wo->hung_after_ns))
			return bad_value("--hung-after", "a number of seconds");
		cl->hung_after_set = true;
		return 0;
	case OPT_MAX_DUTY: {
		uint64_t centi;	/* hundredths of a percent */
		if (!parse_decimal(optarg, 100.0, 100.0, &centi) || !centi)
			return bad_value("--max-duty",
					 "a percentage above 0 and at most 100");
		wo->max_duty_percent = (double)centi / 100.0;
		return 0;
	}
	}
	return NOT_MINE;
}

/* The files for other tools (formats/). */
static int parse_file_option(int c, struct cmdline *cl)
{
	switch (c) {
	case OPT_FOLDED_BY:
		if (strcmp(optarg, "thread-name")) {
			fprintf(stderr, "tinspect: --folded-by: only "
				"thread-name is known: %s\n", optarg);
			return EXIT_USAGE;
		}
		cl->fo.folded_by_name = true;
		return 0;
	case OPT_PPROF:
#if !HAVE_PPROF
		fprintf(stderr, "tinspect: --pprof: this tinspect was built "
			"without protobuf-c (protoc-c and libprotobuf-c-dev)\n");
		return EXIT_USAGE;
#endif
		cl->fo.pprof = optarg;
		return 0;
	}
	return NOT_MINE;
}

int cmdline_parse(int argc, char **argv, struct cmdline *cl)
{
	static int (*const parsers[])(int, struct cmdline *) = {
		parse_plain_option, parse_stop_option, parse_read_option,
		parse_watch_option, parse_file_option,
	};
	cl->idle_updates = -1;
	int c;
	while ((c = getopt_long(argc, argv, "hV", long_options, NULL)) != -1) {
		if (c == 'h') {
			fputs(usage_text, stdout);
			return EXIT_SNAPSHOT_OK;
		}
		if (c == 'V') {
			printf("tinspect %s\n", TINSPECT_VERSION);
			return EXIT_SNAPSHOT_OK;
		}
		int r = NOT_MINE;
		for (size_t i = 0; r == NOT_MINE && i < sizeof parsers / sizeof *parsers; i++)
			r = parsers[i](c, cl);
		if (r == NOT_MINE) {
			fputs(usage_text, stderr);
			return EXIT_USAGE;
		}
		if (r)
			return r;
	}
	return -1;
}

/* A core is one frozen moment: what only a live process has is refused. */
static int check_core(struct cmdline *cl, int argc)
{
	if (optind != argc) {
		fprintf(stderr, "tinspect: --core FILE takes no PID\n");
		return EXIT_USAGE;
	}
	if (cl->live_only) {
		fprintf(stderr, "tinspect: %s does not apply to a core file: "
			"a core is one frozen moment, nothing runs or stops\n",
			cl->live_only);
		return EXIT_USAGE;
	}
	if (cl->ao.brief && cl->ao.verbose) {
		fprintf(stderr, "tinspect: --brief and --verbose do not go "
			"together\n");
		return EXIT_USAGE;
	}
	if (cl->fo.prometheus) {
		fprintf(stderr, "tinspect: --prometheus does not apply to a "
			"core file: its gauges are a live process's state "
			"for a textfile collector (--folded and --pprof "
			"take a core's stacks)\n");
		return EXIT_USAGE;
	}
	return -1;
}

/* A process: --watch and the options that go with it, nonblocking
 * captures, the shape of the report. */
static int check_live(struct cmdline *cl)
{
	struct tinspect_options *o = cl->opts;
	struct watch_opts *wo = &cl->wo;
	if (!cl->watch && (wo->count || wo->summary || wo->follow || cl->hung_after_set ||
			   wo->max_duty_percent > 0 || cl->no_lock_order)) {
		fprintf(stderr, "tinspect: --count, --summary, --follow-threads, "
			"--hung-after, --max-duty and --no-lock-order go with "
			"--watch\n");
		return EXIT_USAGE;
	}
	if (cl->watch && !cl->hung_after_set)
		wo->hung_after_ns = 60 * UINT64_C(1000000000);
	bool nonblocking = o->flags & (TINSPECT_OPT_NONBLOCKING |
				       TINSPECT_OPT_NONBLOCKING_STRICT);
	if (cl->idle_updates >= 0 && !nonblocking) {
		fprintf(stderr, "tinspect: --update-priority goes with --nonblocking "
			"(an all-stop capture is a freeze: it runs at full speed)\n");
		return EXIT_USAGE;
	}
	/* a nonblocking watch runs for weeks on busy machines: it yields the
	 * CPU unless told otherwise; a one-shot capture does not wait */
	if (cl->idle_updates > 0 || (cl->idle_updates < 0 && cl->watch && nonblocking))
		o->flags |= TINSPECT_OPT_IDLE_PRIORITY;
	if (wo->follow && nonblocking) {
		fprintf(stderr, "tinspect: --follow-threads attaches to every "
			"thread; --nonblocking attaches to none\n");
		return EXIT_USAGE;
	}
	if (cl->ao.brief && cl->ao.verbose) {
		fprintf(stderr, "tinspect: --brief and --verbose do not go together\n");
		return EXIT_USAGE;
	}
	if (cl->ao.json && (cl->ao.brief || cl->ao.verbose)) {
		fprintf(stderr, "tinspect: --brief and --verbose shape the text "
			"report; the JSON document is always complete\n");
		return EXIT_USAGE;
	}
	if (cl->watch && (cl->ao.pretty || cl->ao.check)) {
		fprintf(stderr, "tinspect: --pretty and --check do not go with "
			"--watch (one line per update)\n");
		return EXIT_USAGE;
	}
	if (cl->fo.folded_by_name && !cl->fo.folded) {
		fprintf(stderr, "tinspect: --folded-by goes with --folded\n");
		return EXIT_USAGE;
	}
	cl->fo.wait_ages = cl->watch;
	cl->fo.hung_after_ns = wo->hung_after_ns;
	return -1;
}

int cmdline_check(struct cmdline *cl, int argc, char **argv)
{
	if (cl->diff) {
		if (optind != argc - 2 || cl->watch) {
			fprintf(stderr, "tinspect: --diff takes two documents: "
				"tinspect --diff [--json] OLD.json NEW.json\n");
			return EXIT_USAGE;
		}
		cl->diff_old = argv[optind];
		cl->diff_new = argv[optind + 1];
		return -1;
	}
	if (cl->lock_order_path && cl->no_lock_order) {
		fprintf(stderr, "tinspect: --lock-order and --no-lock-order do not "
			"go together\n");
		return EXIT_USAGE;
	}
	if (cl->lock_order_path && cl->core) {
		fprintf(stderr, "tinspect: --lock-order learns from a live process "
			"(or, without a PID, prints a saved graph)\n");
		return EXIT_USAGE;
	}
	/* tinspect --lock-order FILE: the saved graph, no process */
	if (cl->lock_order_path && optind == argc) {
		cl->lock_order_show = true;
		return -1;
	}
	if ((cl->exe || cl->sysroot) && !cl->core) {
		fprintf(stderr, "tinspect: --exe and --sysroot go with --core\n");
		return EXIT_USAGE;
	}
	if (cl->core)
		return check_core(cl, argc);
	if (optind != argc - 1 || !parse_pid(argv[optind], &cl->pid)) {
		if (optind == argc - 1)
			fprintf(stderr, "tinspect: not a PID: %s\n", argv[optind]);
		fputs(usage_text, stderr);
		return EXIT_USAGE;
	}
	if (cl->pid == getpid()) {
		fprintf(stderr, "tinspect: cannot inspect itself\n");
		return EXIT_USAGE;
	}
	return check_live(cl);
}
