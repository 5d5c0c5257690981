/*
 * agent.h: the tinspect program as its rooms see it (agent/meson.build
 * lists them): the exit statuses, the options of a report and of a
 * watch, the commands, and the two renderers.  Renderers only read a
 * finished snapshot; they never touch the process.  The program is an
 * embedder of libtinspect like any other: it uses the public API
 * (include/tinspect/) only.  What the rooms share is common/common.h,
 * jwriter.h and verdict.h.
 */
#ifndef TINSPECT_AGENT_H
#define TINSPECT_AGENT_H

#include <stdbool.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>

#include <tinspect/tinspect.h>

/* Exit statuses: documented in --help, README.md and tinspect(1). */
enum agent_exit {
	EXIT_SNAPSHOT_OK = 0,		/* complete snapshot */
	EXIT_PARTIAL = 1,		/* snapshot with per-thread failures */
	EXIT_USAGE = 2,			/* bad command line */
	EXIT_NO_PROCESS = 3,		/* no such process */
	EXIT_PERMISSION = 4,		/* ptrace not permitted */
	EXIT_UNSUPPORTED = 5,		/* 32-bit, foreign arch, kernel thread */
	EXIT_TARGET_EXITED = 6,		/* the process exited mid-capture */
	EXIT_FREEZE_LIMIT = 7,		/* --max-freeze exceeded; resumed */
	EXIT_INTERNAL = 8,		/* out of memory, output error, ... */
	EXIT_DEADLOCK = 10,		/* --check: a deadlock was found */
	EXIT_UNCONFIRMED = 11,		/* --check --nonblocking=strict: a
					 * candidate deadlock, not proven */
	EXIT_LOCK_ORDER = 12,		/* --check --lock-order: the lock-order
					 * graph holds a potential deadlock
					 * (an inversion); no deadlock found */
};

struct formats;		/* formats.h */
struct lockorder;	/* lockorder.h */

struct agent_opts {
	bool json;
	bool pretty;
	bool check;		/* --check: exit EXIT_DEADLOCK on a deadlock */
	bool brief;		/* --brief: the summary and one line a thread */
	bool verbose;		/* --verbose: CPU, signals, registers, stack
				 * bounds, every stack in full, every tid */
	unsigned long update;	/* watch mode: the update's number (JSON
				 * "update"); 0 outside watch mode */
	struct formats *formats;	/* the files for other tools
					 * (formats.h); NULL: none */
	/* the lock-order graph of a watch or of --lock-order
	 * (lockorder/lockorder.h); NULL: none */
	struct lockorder *lockorder;
	/* the report's renderer, render_text or render_json (main.c) */
	int (*render)(FILE *out, const tinspect_snapshot *snap,
		      const struct agent_opts *o);
};

/* --watch */
struct watch_opts {
	uint64_t interval_ns;
	unsigned long count;	/* 0: until the target exits */
	bool json;		/* NDJSON lines */
	bool summary;		/* compact lines instead of snapshots */
	bool follow;		/* thread lifecycle events (--follow-threads) */
	/* the flag the signal handlers raise; a failed write (EPIPE) raises
	 * it too, with SIGPIPE */
	volatile sig_atomic_t *cancel;
	size_t queue_limit;	/* bytes of lines waiting; 0: 256 MiB */
	/* --hung-after: thread_hung / lock_held after this long; 0: never */
	uint64_t hung_after_ns;
	/* --max-duty: lengthen the interval to keep the share of the time
	 * the target is frozen under this; 0: no limit */
	double max_duty_percent;
};

/* Run the watch loop on an initialised session.  0 when the target exited
 * or --count updates were made; a negative errno otherwise (-EINTR: a
 * signal asked to stop, everything resumed and detached).  When the target
 * executes a new program, *sp is replaced by a session on it (opts). */
int agent_watch(tinspect_session **sp, pid_t pid, const struct tinspect_options *opts,
		const struct watch_opts *w, const struct agent_opts *ao);

/* diff.c: tinspect --diff OLD NEW: what stayed the same between two
 * snapshot documents (text, or JSON with json).  Returns the exit
 * status: EXIT_SNAPSHOT_OK, or EXIT_USAGE when a document cannot be read
 * (not a regular file, not JSON), is of another major format version or
 * fails the snapshot schema's constraints on a member the comparison
 * reads (said on stderr, with the member's path). */
int agent_diff(const char *old_path, const char *new_path, bool json);
/* The same on two parsed documents (the fuzzer's way in), named by the
 * names given, written to out; refusals to err (NULL: not said). */
struct json_t;	/* jansson's */
int agent_diff_docs(struct json_t *old_root, const char *old_name,
		    struct json_t *new_root, const char *new_name, bool json,
		    FILE *out, FILE *err);
/* diffcheck.c: whether root holds to the snapshot schema on every member
 * the diff reads; if not, the failing member's path ("threads[3].tid")
 * and what is wrong with it. */
bool diff_check_doc(struct json_t *root, char *path, size_t pathlen, char *why,
		    size_t whylen);
/* The schema's hex64, captured_at and 2.x format_version patterns. */
bool diff_is_hex64(const char *s);
bool diff_is_time(const char *s);
bool diff_is_version(const char *s);
/* coremode.c: tinspect --core: the snapshot of a core file
 * (EXIT_SNAPSHOT_OK and *ret), or the exit status when it cannot be read
 * (EXIT_USAGE, EXIT_INTERNAL; the reason said on stderr). */
int agent_core(const char *core, const char *exe, const char *sysroot,
	       const struct tinspect_options *opts, tinspect_snapshot **ret);

/* JSON document format; bump the minor for additions, the major for
 * changes that break readers. */
#define TINSPECT_FORMAT_VERSION "2.9"

/* The renderers: the report of one snapshot, the whole document, to out
 * (text/text.c, json/json.c); 0, or -1 if writing failed.  main.c picks
 * one (agent_opts.render) for a capture, a core and every update of a
 * watch. */
int render_text(FILE *out, const tinspect_snapshot *snap,
		const struct agent_opts *o);
int render_json(FILE *out, const tinspect_snapshot *snap,
		const struct agent_opts *o);

#endif
