/*
 * harness: what the live tests share.  Start a fixture program and read
 * what it reports about itself over a pipe (never sleep-and-hope); run the
 * real tinspect binary on it with a time limit; parse and schema-validate
 * its JSON; check task states in /proc; kill the fixture by PID.
 *
 * Paths come from the environment meson sets for the tests:
 *   TINSPECT  the binary under test
 *   FIXTURES  the directory of the built fixture programs
 *   SCHEMA    schema/tinspect-snapshot.schema.json
 *   VALIDATE  tests/validate.py (run with /usr/bin/python3)
 * and, in `meson test --setup valgrind`, TINSPECT_WRAPPER: the command
 * (words separated by blanks) every tinspect runs under; its error exit
 * status 97 fails the test that ran it.
 */
#ifndef TINSPECT_TEST_HARNESS_H
#define TINSPECT_TEST_HARNESS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "test_config.h"	/* TEST_TIME_SCALE */

#define FX_MAX_LINES 4096

/* The 32-bit fixture of the host's architecture: a process of another
 * ELF class, which tinspect refuses (tests/meson.build). */
#if defined(__aarch64__)
#define FX_32BIT "fx_arm32"
#else
#define FX_32BIT "fx_i386"
#endif

/* The names of the syscalls libc's poll(), epoll_wait() and vfork() make
 * (aarch64 has only the generic table's ppoll and epoll_pwait, and no
 * vfork: glibc's is clone with CLONE_VM | CLONE_VFORK there). */
#if defined(__aarch64__)
#define SC_POLL "ppoll"
#define SC_EPOLL_WAIT "epoll_pwait"
#define SC_VFORK "clone"
#else
#define SC_POLL "poll"
#define SC_EPOLL_WAIT "epoll_wait"
#define SC_VFORK "vfork"
#endif

struct fixture {
	pid_t pid;
	int in_fd;		/* the fixture's stdin (write end) */
	int out_fd;		/* the fixture's stdout (read end) */
	char *lines[FX_MAX_LINES];	/* what it printed up to "ready" */
	size_t nlines;
	char rbuf[65536];
	size_t rlen;
};

/* Start FIXTURES/name with argv (NULL-terminated, without argv[0]) and
 * read its stdout until a line starting with "ready".  Fails the test if
 * the fixture dies or says nothing within timeout_s. */
void fx_start(struct fixture *f, const char *name, const char *const *args,
	      int timeout_s);
/* Start an arbitrary program the same way (absolute path). */
void fx_start_path(struct fixture *f, const char *path,
		   const char *const *args, int timeout_s);
/* Start a program without waiting for "ready" (tinspect --watch, say):
 * read its output with fx_read_line(). */
void fx_spawn_path(struct fixture *f, const char *path,
		   const char *const *args);
/* Start TINSPECT with args that way (under TINSPECT_WRAPPER if set). */
void fx_spawn_tinspect(struct fixture *f, const char *const *args);
/* The same with opts (at most 20) and then pid as the last argument. */
void fx_spawn_tinspect_on(struct fixture *f, const char *const *opts, pid_t pid);
/* pid as a decimal string, in one of 4 static buffers used in turn (four
 * may be alive at once, as in one argument list). */
const char *pidstr(pid_t pid);
/* Run argv (PATH searched) with no input and its output discarded: its exit
 * status, 128 + the signal that ended it, or -errno if it did not start. */
int run_quiet(const char *const *argv);
/* Whether the shell finds the program name. */
bool have_program(const char *name);
/* Read one more line (without "\n"); NULL on EOF/timeout. Caller frees. */
char *fx_read_line(struct fixture *f, int timeout_s);
/* The first len - 1 bytes of a small file (a /proc file), NUL-terminated:
 * their number, or -1 if it cannot be opened (the task is gone). */
long fx_read_small(const char *path, char *buf, size_t len);
/* Write a line to the fixture's stdin. */
void fx_send(struct fixture *f, const char *line);
/* SIGKILL by PID and reap.  Idempotent. */
void fx_kill(struct fixture *f);
/* The first line of its report starting with prefix, or NULL. */
const char *fx_line(const struct fixture *f, const char *prefix);

struct run {
	int status;		/* exit status, or -1 if killed by a signal */
	int sig;		/* the signal, if any */
	bool timed_out;
	char *out, *err;
	size_t out_len, err_len;
	pid_t pid;
	long maxrss_kib;	/* its peak resident set (wait4) */
};

/* Run TINSPECT with args; wait at most timeout_s (then SIGKILL). */
void run_tinspect(struct run *r, const char *const *args, int timeout_s);
/* Start it without waiting (for tests that signal it); finish with
 * run_wait(). */
void run_start(struct run *r, const char *const *args);
void run_wait(struct run *r, int timeout_s);
/* Run it under a wrapper command, e.g. setpriv to drop privileges. */
void run_start_as(struct run *r, const char *const *wrapper,
		  const char *const *args);
void run_free(struct run *r);
/* Whether an exit status is TINSPECT_WRAPPER's report of errors (valgrind
 * found some); run_wait() fails the test itself then. */
bool wrapper_failed(int status);

/* tinspect --json [extra...] PID: parsed, validated against the schema;
 * the exit status goes to *ret_status.  Fails the test if invalid. */
json_t *inspect_json(pid_t pid, const char *const *extra, int *ret_status);
/* Validate a document against the schema (1 = valid).  Prints the
 * validator's complaint to stderr on failure. */
bool schema_valid(const char *json_text, size_t len);

/* The lines of an NDJSON stream kept for one validator run at the end of
 * a test (a run per line would cost more than the test). */
struct kept_lines {
	char *buf;
	size_t len, cap;
};
void kept_add(struct kept_lines *k, const char *line);
/* Fails the test unless lines were kept and all validate; then empty. */
void kept_validate(struct kept_lines *k);
void kept_free(struct kept_lines *k);
/* The next line of fixture f's output, kept in k and parsed (fails the
 * test if it is not JSON); NULL at its end or on timeout. */
json_t *kept_next_line(struct fixture *f, struct kept_lines *k, int timeout_s);
/* Remove dir and everything under it (symlinks not followed). */
void remove_tree(const char *dir);

/* ---- questions to a JSON document ---- */
/* Member k of o as a string (NULL if absent or not a string). */
const char *jstr(json_t *o, const char *k);
/* Member k of o, a hex string ("0x..."), as a number; fails the test if absent. */
uint64_t jhex(json_t *o, const char *k);
/* The entry of the snapshot's locks[] at addr, NULL if none. */
json_t *lock_at(json_t *doc, uint64_t addr);
/* Thread tid's blocked_on (fails the test if the thread is missing). */
json_t *blocked_on(json_t *doc, pid_t tid);
/* Whether the blocked_on b lists `what` in its evidence. */
bool has_evidence(json_t *b, const char *what);

/* Kernel state letter of a task ('?' if gone). */
char task_state(pid_t pid, pid_t tid);
/* True if any task of pid is in state T or t. */
bool any_task_stopped(pid_t pid);
/* Wait until every task of pid is out of T/t (the kernel resumes a
 * detached task asynchronously); true if that happened within ms. */
bool wait_not_stopped(pid_t pid, int ms);
/* Wait until pid's main thread is in state T (job-control stop). */
bool wait_state(pid_t pid, pid_t tid, char state, int ms);

/* Thread object with the given tid in a snapshot, or NULL. */
json_t *thread_by_tid(json_t *doc, pid_t tid);
/* Decode lowercase hex into bytes; returns the length. */
size_t unhex(const char *hex, char *out, size_t cap);

const char *fixture_path(const char *name);

#endif
