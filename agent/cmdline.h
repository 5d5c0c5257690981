/*
 * cmdline.h: what tinspect's command line asks for (cmdline.c), parsed
 * and then checked before anything runs: main() is cmdline_parse() ->
 * cmdline_check() -> run.
 */
#ifndef TINSPECT_AGENT_CMDLINE_H
#define TINSPECT_AGENT_CMDLINE_H

#include "agent.h"
#include "formats.h"

struct cmdline {
	/* the session's options: set up by the caller (the signal flags),
	 * filled in by the options that shape a capture */
	struct tinspect_options *opts;
	struct agent_opts ao;
	struct format_opts fo;
	struct watch_opts wo;
	bool watch;		/* --watch */
	bool diff;		/* --diff OLD NEW */
	const char *diff_old, *diff_new;
	const char *core;	/* --core FILE; NULL: a process */
	const char *exe, *sysroot;
	pid_t pid;		/* the process, once checked */
	bool debuginfod;	/* --debuginfod: keep DEBUGINFOD_URLS */
	/* --lock-order FILE: the lock-order graph kept in FILE (with a PID),
	 * or shown (lock_order_show: without one); NULL: none */
	const char *lock_order_path;
	bool lock_order_show;
	bool no_lock_order;	/* --no-lock-order: a watch keeps no graph */
	/* parse's notes for check: */
	const char *live_only;	/* an option a core refuses */
	bool hung_after_set;
	int idle_updates;	/* --update-priority; -1: the default */
};

/* The options, in order.  -1 when the command goes on to
 * cmdline_check(), else the exit status: --help and --version (written to
 * stdout), a bad option or value (said on stderr, EXIT_USAGE). */
int cmdline_parse(int argc, char **argv, struct cmdline *cl);

/* What the options mean together and the operands (the PID, --diff's
 * documents; --lock-order without a PID shows its file): a combination
 * that makes no sense is refused (said on stderr, EXIT_USAGE), the
 * defaults that depend on other options are filled in.  -1 when the
 * command can run. */
int cmdline_check(struct cmdline *cl, int argc, char **argv);

#endif
