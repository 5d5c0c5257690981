/*
 * main.c: the tinspect command.  main() is parse (cmdline.c) -> check
 * (cmdline.c) -> run: one capture of a process, a watch (watch/), a core
 * file (coremode.c), --diff (diff.c) or a saved lock-order graph
 * (lockorder/).  It owns the signals (so that
 * SIGINT/SIGTERM/SIGHUP/SIGPIPE in the middle of a capture resume the
 * target before tinspect goes), picks the renderer of the report (the one
 * place that does: the report of a capture, of a core and of every update
 * of a watch), and maps every outcome to a one-line message and a
 * documented exit status.
 */
#include "agent.h"
#include "cmdline.h"
#include "common.h"
#include "formats.h"
#include "guard.h"
#include "lockorder.h"

#include <errno.h>
#include <malloc.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

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
static void reraise(void)
{
	guard_die_of(got_signal);
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

/* Render one snapshot to stdout with the renderer the command line chose,
 * free it, and return the exit status it makes (EXIT_SNAPSHOT_OK,
 * EXIT_PARTIAL, EXIT_DEADLOCK, EXIT_UNCONFIRMED, EXIT_LOCK_ORDER). */
static int agent_report(tinspect_snapshot *snap, const struct agent_opts *ao)
{
	int r = ao->render(stdout, snap, ao);
	int status = tinspect_snapshot_threads_with_errors(snap) ? EXIT_PARTIAL
								 : EXIT_SNAPSHOT_OK;
	/* --check: a deadlock is what the caller asked about; it wins over
	 * "partial" */
	if (ao->check && tinspect_snapshot_ncycles(snap))
		status = tinspect_snapshot_capture_mode(snap) == TINSPECT_CAPTURE_NONBLOCKING
				 ? EXIT_UNCONFIRMED : EXIT_DEADLOCK;
	/* then a potential deadlock in the lock-order graph (--lock-order) */
	else if (ao->check && lockorder_ninversions(ao->lockorder))
		status = EXIT_LOCK_ORDER;
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

/* The files for other tools; -1 when they are open (or none was asked
 * for), else the exit status (said). */
static int open_formats(const struct format_opts *fo, struct formats **ret)
{
	if (!formats_wanted(fo))
		return -1;
	const char *bad = NULL;
	int e = formats_open(fo, ret, &bad);
	if (e) {
		fprintf(stderr, "tinspect: cannot write %s: %s\n",
			bad ? bad : "the output files", strerror(-e));
		return e == -ENOMEM ? EXIT_INTERNAL : EXIT_USAGE;
	}
	return -1;
}

/* The lock-order graph: every watch keeps one unless told not to (its
 * locks' words are then read in every update), and --lock-order keeps it
 * in a file, also for a one-shot capture.  -1 when it is open (or none is
 * kept), else the exit status (said). */
static int open_lockorder(struct cmdline *cl, struct formats *formats)
{
	if (!(cl->watch && !cl->no_lock_order) && !cl->lock_order_path)
		return -1;
	char why[1024];
	int e = lockorder_open(cl->lock_order_path, &cl->ao.lockorder, why,
			       sizeof why);
	if (e) {
		fprintf(stderr, "tinspect: --lock-order: %s\n", why);
		return e == -ENOMEM ? EXIT_INTERNAL : EXIT_USAGE;
	}
	formats_set_lockorder(formats, cl->ao.lockorder);
	if (cl->watch)
		cl->opts->flags |= TINSPECT_OPT_TRACK_LOCKS;
	/* a signal between updates ends the loop, so that the file keeps
	 * the last counts */
	finish_first |= cl->watch && cl->lock_order_path;
	return -1;
}

/* The files and the lock-order graph of one snapshot, then its report.  A
 * file of --prometheus, --folded, --pprof or --lock-order not written
 * (ferr) is an internal error, unless the deadlock (or the potential
 * deadlock) the caller asked about was found. */
static int report_with_files(tinspect_snapshot *snap, struct formats *formats,
			     const struct agent_opts *ao)
{
	if (ao->lockorder)
		lockorder_sample(ao->lockorder, snap, 0);
	formats_snapshot(formats, snap);
	int ferr = formats_close(formats);
	int status = agent_report(snap, ao);
	/* --lock-order FILE: this update merged into it */
	ferr |= lockorder_close(ao->lockorder);
	if (ferr && status != EXIT_DEADLOCK && status != EXIT_LOCK_ORDER)
		status = EXIT_INTERNAL;
	return status;
}

/* tinspect --core FILE */
static int run_core(struct cmdline *cl)
{
	if (!cl->debuginfod)
		unsetenv("DEBUGINFOD_URLS");
	raise_fd_limit();
	struct formats *formats = NULL;
	int status = open_formats(&cl->fo, &formats);
	if (status >= 0)
		return status;
	tinspect_snapshot *snap = NULL;
	status = agent_core(cl->core, cl->exe, cl->sysroot, cl->opts, &snap);
	if (status != EXIT_SNAPSHOT_OK) {
		formats_close(formats);
		return status;
	}
	return report_with_files(snap, formats, &cl->ao);
}

/* tinspect --watch SECONDS PID, on the session opened */
static int run_watch(struct cmdline *cl, tinspect_session *s,
		     struct formats *formats)
{
	cl->wo.json = cl->ao.json;
	cl->wo.cancel = &got_signal;
	/* signals only raise the flag for the whole watch: the loop
	 * resumes and detaches, then dies of the signal */
	int err = agent_watch(&s, cl->pid, cl->opts, &cl->wo, &cl->ao);
	tinspect_session_destroy(s);
	capturing = 0;
	/* the samples of every update made, also when a signal ended
	 * the run */
	int ferr = formats_close(formats);
	/* and the lock-order graph with its last counts */
	ferr |= lockorder_close(cl->ao.lockorder);
	if (got_signal)
		reraise();
	if (err == -EPIPE)
		guard_die_of(SIGPIPE);	/* the reader is gone */
	if (err)
		return report_error(cl->pid, err, true, cl->opts->max_freeze_ns);
	return ferr ? EXIT_INTERNAL : EXIT_SNAPSHOT_OK;
}

/* tinspect PID, and --watch */
static int run_live(struct cmdline *cl)
{
	/* elfutils consults debuginfod servers when DEBUGINFOD_URLS is set:
	 * an incident tool must not wait on the network unless asked to */
	if (!cl->debuginfod)
		unsetenv("DEBUGINFOD_URLS");
	struct formats *formats = NULL;
	int status = open_formats(&cl->fo, &formats);
	if (status >= 0)
		return status;
	cl->ao.formats = formats;
	finish_first = formats && cl->watch && (cl->fo.folded || cl->fo.pprof);
	status = open_lockorder(cl, formats);
	if (status >= 0) {
		formats_close(formats);
		return status;
	}

	raise_fd_limit();
	install_signals(cl->opts->max_freeze_ns);
	tinspect_session *s = NULL;
	capturing = 1;
	int err = tinspect_session_init(cl->pid, cl->opts, &s);
	if (err) {
		capturing = 0;
		formats_close(formats);
		lockorder_close(cl->ao.lockorder);
		if (err == -ENOEXEC)
			return report_unsupported(cl->pid);
		return report_error(cl->pid, err, false, cl->opts->max_freeze_ns);
	}
	if (cl->watch)
		return run_watch(cl, s, formats);
	tinspect_snapshot *snap = NULL;
	err = tinspect_session_update(s, &snap);
	tinspect_session_destroy(s);
	capturing = 0;
	if (got_signal)
		reraise();
	if (err) {
		/* after the freeze limit, a textfile that counts the failure */
		if (err == -ETIMEDOUT)
			formats_update_failed(formats);
		formats_close(formats);
		lockorder_close(cl->ao.lockorder);
		return report_error(cl->pid, err, true, cl->opts->max_freeze_ns);
	}
	return report_with_files(snap, formats, &cl->ao);
}

/*
 * glibc raises its mmap threshold (up to 32 MiB) each time a mapped block
 * is freed, and its trim threshold to twice that: after the first capture
 * of a large process, the big arrays of the next ones (the snapshot, the
 * copies' lists) come from heaps that keep their pages, and the heap of
 * the capture's own thread is not trimmed by malloc_trim().  A watch of
 * 10 000 threads held 7 MiB more at its peak for it.  Fixed at their
 * defaults, large blocks are mapped and unmapped with each capture.
 */
static void malloc_policy(void)
{
	mallopt(M_MMAP_THRESHOLD, 128 * 1024);
	mallopt(M_TRIM_THRESHOLD, 128 * 1024);
}

int main(int argc, char **argv)
{
	malloc_policy();
	TINSPECT_OPTIONS(opts,
		/* like gdb's auto-load safe-path: the directories whose
		 * libthread_db may be loaded for a target without
		 * --target-thread-db */
		.thread_db_safe_path = getenv("TINSPECT_THREAD_DB_SAFE_PATH"),
		.stop_timeout_ns = 1000ull * 1000000,
		.cancel = &got_signal,
		.wake_signal = WAKE_SIGNAL,
		.holding = &holding);
	struct cmdline cl = { .opts = &opts };
	int status = cmdline_parse(argc, argv, &cl);
	if (status < 0)
		status = cmdline_check(&cl, argc, argv);
	if (status >= 0)
		return status;
	/* the report's format: here only */
	cl.ao.render = cl.ao.json ? render_json : render_text;
	if (cl.diff)
		return agent_diff(cl.diff_old, cl.diff_new, cl.ao.json);
	if (cl.lock_order_show)
		return lockorder_show(cl.lock_order_path, cl.ao.json, cl.ao.check);
	if (cl.core)
		return run_core(&cl);
	return run_live(&cl);
}
