/*
 * agent: the tinspect program.  Command line, exit statuses, signal
 * handling and the two renderers.  Renderers only read a finished snapshot;
 * they never touch the process.  The program is an embedder of libtinspect
 * like any other: it uses the public API (include/tinspect/) only.
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
	/* the lock-order graph of a watch or of --lock-order (lockorder.h);
	 * NULL: none */
	struct lockorder *lockorder;
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

/* outq.c: lines written by a thread of their own (see there why) */
struct outq;
struct outq *outq_start(int fd, size_t limit, volatile sig_atomic_t *cancel,
			int cancel_value);
bool outq_put(struct outq *q, const char *data, size_t len);
unsigned long outq_take_dropped(struct outq *q);
int outq_finish(struct outq *q);
/* A stream whose bytes go to the queue as they are written (fclose it at
 * the end of the line); it waits for the reader: never while following. */
FILE *outq_stream(struct outq *q);

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
/* main.c: render one snapshot (text or JSON), free it, and return the
 * exit status it makes (EXIT_SNAPSHOT_OK, EXIT_PARTIAL, EXIT_DEADLOCK). */
int agent_report(tinspect_snapshot *snap, const struct agent_opts *ao);
/* coremode.c: tinspect --core: one report from a core file; the exit
 * status. */
int agent_core(const char *core, const char *exe, const char *sysroot,
	       const struct tinspect_options *opts, const struct agent_opts *ao);

/* JSON document format; bump the minor for additions, the major for
 * changes that break readers. */
#define TINSPECT_FORMAT_VERSION "2.5"

int render_text(FILE *out, const tinspect_snapshot *snap,
		const struct agent_opts *o);
int render_json(FILE *out, const tinspect_snapshot *snap,
		const struct agent_opts *o);

/* text helpers shared by the renderers (text.c) */
const char *agent_state_name(char state);
const char *agent_policy_name(unsigned policy);
/* Bytes from the target, printable ASCII as is, the rest as \xNN. */
void agent_put_escaped(FILE *out, const char *s);
/* name+0xoff in module, or 0xaddr (module+0xoff) */
void agent_put_symbol(FILE *out, const tinspect_symbol *s);
/* A thread's stack as gdb's "bt" prints it, two spaces in; in_group:
 * frames outside any module without their pc (it differs between the
 * threads of a group). */
void agent_put_stack(FILE *out, const tinspect_thread *th, bool in_group);

/* ---- the verdict ------------------------------------------------------------
 * verdict.c: decided once for the text, the JSON and the summary lines;
 * when waits that record no owner are worth a line of it (see there). */
enum verdict_why {
	VERDICT_IDLE,		/* counted below "No deadlock found" */
	VERDICT_NO_PROGRESS,	/* listed: no thread can make progress */
	VERDICT_PERSISTED,	/* listed: nothing moved since the previous
				 * update of the watch */
};
#define VERDICT_KINDS 8
struct verdict_kind {
	const char *what;	/* "condition-variable waits" */
	enum tinspect_lock_kind kind;
	enum tinspect_owner_state owner;
	size_t threads;
	size_t same;		/* in the same wait as at the previous update */
};
struct agent_verdict {
	bool analysed;		/* the lock analysis was made */
	bool unconfirmed;	/* nonblocking: cycles are candidates */
	bool watched;		/* a watch's update after the first */
	bool cpython;		/* a CPython runtime was found */
	size_t threads, deadlocks, orphans, stalls;
	size_t jobctl;		/* threads in a job-control stop */
	size_t progress[TINSPECT_PROGRESS_INSIDE + 1];	/* by class */
	size_t same;		/* threads in the wait they were in at the
				 * previous update */
	size_t undecided;	/* threads in untimed waits that record no
				 * owner */
	size_t undecided_same;
	enum verdict_why why;
	struct verdict_kind kinds[VERDICT_KINDS];	/* most threads first */
	size_t nkinds;
};
/* update: the watch's update number, 0 outside a watch. */
void verdict_make(const tinspect_snapshot *snap, unsigned long update,
		  struct agent_verdict *v);
/* A thread in an untimed wait on something that records no owner (and
 * not the end of a stall, which the verdict names). */
bool verdict_undecided_wait(const tinspect_snapshot *snap, const tinspect_thread *th);
/* In the wait it was in at the previous update of the session. */
bool verdict_same_wait(const tinspect_snapshot *snap, const tinspect_thread *th);
/* Every thread of the process is in a job-control stop. */
bool verdict_process_stopped(const struct agent_verdict *v);
/* "found", "unconfirmed", "possible", "none_found", "unknown" */
const char *verdict_deadlock_word(const struct agent_verdict *v);
/* the JSON's undecided.reason, NULL for VERDICT_IDLE */
const char *verdict_why_name(enum verdict_why why);

/* ---- the report for a person in an incident (issue 9) --------------------
 * report.c: the first screen.  The verdict (deadlocks, orphaned locks,
 * stalls, or why none can be proven), threads by state and by what they
 * wait on, the most contended locks; then the details of what the verdict
 * names. */
void report_summary(FILE *out, const tinspect_snapshot *snap,
		    const struct agent_opts *o);
/* The deadlocks' stacks, the stall chains, the orphaned locks. */
void report_lock_details(FILE *out, const tinspect_snapshot *snap,
			 const struct agent_opts *o);
/* Every lock waited on, by address: the reference list, last. */
void report_all_locks(FILE *out, const tinspect_snapshot *snap);
/* "  waiting for ..." of one thread (detail view), and its one-line form
 * for --brief ("futex 0x... (called from f)", "mutex m held by 12"). */
void report_put_waiting(FILE *out, const tinspect_snapshot *snap,
			const tinspect_thread *th);
void report_put_wait_short(FILE *out, const tinspect_thread *th);
/* thread "name" (tid) */
void report_put_thread_ref(FILE *out, const tinspect_snapshot *snap, pid_t tid);

/* stackgroups.c: threads grouped by identical stack, as pt-pmp and
 * eu-stack | sort | uniq -c users do by hand. */
struct stack_groups;
struct stack_groups *stack_groups_build(const tinspect_snapshot *snap);
void stack_groups_free(struct stack_groups *g);
/* Print the groups, largest first (threads listed in full with verbose). */
void stack_groups_print(FILE *out, const tinspect_snapshot *snap,
			const struct stack_groups *g, bool verbose);
/* The group of thread index i (1-based number as printed) and its size;
 * 0 if the thread has no stack. */
size_t stack_groups_of(const struct stack_groups *g, size_t i, size_t *ret_size);
/* The first frame of a blocked thread outside libc and the dynamic
 * linker: the function that called into the wait; NULL if none. */
const tinspect_frame *agent_wait_caller(const tinspect_thread *th);
/* A frame's function for one line: symbol, else module+0xoffset, else
 * "??"; into buf (always terminated), escaped. */
const char *agent_frame_name(const tinspect_frame *f, char *buf, size_t len);

/* brief.c: --brief, one line per thread like gdb's "info threads". */
void brief_threads(FILE *out, const tinspect_snapshot *snap);
/*
 * jwriter.c: a streaming JSON writer (RFC 8259), in document order, to a
 * FILE.  Every string is written as valid UTF-8 whatever its bytes: an
 * invalid sequence (RFC 3629: overlong, surrogate, above U+10FFFF,
 * truncated) or a NUL byte becomes U+FFFD; controls are escaped.  Layout:
 * compact, or indented by two spaces per level (pretty).
 *
 * Usage: jw_init(), then values: containers opened and closed in order, in
 * an object jw_key() before each value; jw_finish() ends the line and
 * says whether all went well.  The stream is locked from jw_init() to
 * jw_finish(), so nothing else may write it in between.
 */
#define JW_MAX_DEPTH 16
struct jw {
	FILE *out;
	bool pretty;
	bool after_key;			/* a key was written: its value is next */
	bool misuse;			/* nesting error: the output is wrong */
	int depth;			/* open containers */
	bool first[JW_MAX_DEPTH];	/* nothing written yet at this level */
	bool in_obj[JW_MAX_DEPTH];	/* this level is an object */
};

void jw_init(struct jw *w, FILE *out, bool pretty);
/* 0, or -1 if the stream had an error or the calls did not nest. */
int jw_finish(struct jw *w);
void jw_obj(struct jw *w);
void jw_obj_end(struct jw *w);
void jw_arr(struct jw *w);
void jw_arr_end(struct jw *w);
void jw_key(struct jw *w, const char *k);	/* any bytes, made UTF-8 */
/* A string; NULL writes null. */
void jw_str(struct jw *w, const char *s);
void jw_strn(struct jw *w, const char *s, size_t n);
/* One string of s followed by tail (neither NULL). */
void jw_str_cat(struct jw *w, const char *s, const char *tail);
void jw_null(struct jw *w);
void jw_bool(struct jw *w, bool v);
void jw_int(struct jw *w, int64_t v);
/* "0x..." lowercase: 64-bit values for readers with 53-bit numbers */
void jw_hex(struct jw *w, uint64_t v);
/* A real ("%.17g", always with '.' or an exponent); NaN and infinities
 * are written as null. */
void jw_real(struct jw *w, double v);
/* The bytes as one string of lowercase hex digits. */
void jw_hexbytes(struct jw *w, const void *s, size_t n);
/* "k": value, for the common kinds of value in an object */
void jw_kstr(struct jw *w, const char *k, const char *v);
void jw_kint(struct jw *w, const char *k, int64_t v);
void jw_khex(struct jw *w, const char *k, uint64_t v);
void jw_kbool(struct jw *w, const char *k, bool v);
void jw_knull(struct jw *w, const char *k);

/* json.c, json_locks.c: the parts of the snapshot document each writes
 * for the other.  A symbol object; "k": a tid, or null for 0 (unknown);
 * a thread's "blocked_on" value; the process's lock members. */
void json_symbol(struct jw *w, const tinspect_symbol *s);
void json_tid(struct jw *w, const char *k, pid_t tid);
void json_blocked_on(struct jw *w, const tinspect_snapshot *snap,
		     const tinspect_thread *th);
void json_locks(struct jw *w, const tinspect_snapshot *snap);
/* json_verdict.c: "verdict" (update: the watch's, 0 outside a watch) */
void json_verdict(struct jw *w, const tinspect_snapshot *snap, unsigned long update);

/* Length of the valid UTF-8 sequence at s (at most n bytes), 0 if it is
 * invalid or NUL. */
size_t agent_utf8_seq(const unsigned char *s, size_t n);
/* Whether the bytes are written as they are (no U+FFFD). */
bool agent_utf8_lossless(const char *s, size_t n);
/* Whether a and b are the same JSON string once written (equal after
 * every invalid byte became U+FFFD): the same key of an object. */
bool agent_json_same_key(const char *a, const char *b);

/* Write bytes as a C-like quoted string: printable ASCII as is, '"' and
 * '\\' escaped, everything else as \xNN. */
void agent_fput_quoted(FILE *out, const char *s, size_t len);

#endif
