/*
 * common.h: what the rooms of the agent share (common/): the words for
 * kernel states and scheduling policies, bytes from the target made safe
 * to print, code addresses, frames and stacks as the reports show them,
 * timestamps, the age of a wait, a file replaced whole, an intern table.
 * It uses none of the other rooms.  The JSON writer is jwriter.h, the
 * verdict verdict.h.
 */
#ifndef TINSPECT_AGENT_COMMON_H
#define TINSPECT_AGENT_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <tinspect/tinspect.h>

/* ---- names.c ---------------------------------------------------------------- */

/* "running", "disk sleep", ... of a /proc state letter; "unknown" */
const char *agent_state_name(char state);
/* "SCHED_OTHER", ...; "unknown" */
const char *agent_policy_name(unsigned policy);
/* "(r)" or "(w)" after an rwlock's kind or a waiter's tid; "" for a wait
 * that is no rwlock's */
const char *agent_mode_mark(enum tinspect_wait_mode mode);

/* ---- escape.c --------------------------------------------------------------- */

/* Bytes from the target, printable ASCII as is, the rest as \xNN. */
void agent_put_escaped(FILE *out, const char *s);
/* Write bytes as a C-like quoted string: printable ASCII as is, '"' and
 * '\\' escaped, everything else as \xNN. */
void agent_fput_quoted(FILE *out, const char *s, size_t len);

/* ---- frames.c --------------------------------------------------------------- */

/* The file name of a module's path ("libc.so.6"); NULL for NULL. */
const char *agent_module_base(const char *module);
/* Where an address is in its module, "libc.so.6+0x1234": escaped to out,
 * or as raw bytes into buf (always terminated, returned). */
void agent_put_module_offset(FILE *out, const char *module, uint64_t offset);
const char *agent_module_offset(char *buf, size_t len, const char *module,
				uint64_t offset);
/* name+0xoff in module, or 0xaddr (module+0xoff, no symbol) */
void agent_put_symbol(FILE *out, const tinspect_symbol *s);
/* A thread's stack as gdb's "bt" prints it, two spaces in; in_group:
 * frames outside any module without their pc (it differs between the
 * threads of a group). */
void agent_put_stack(FILE *out, const tinspect_thread *th, bool in_group);
/* The first frame of a blocked thread outside libc and the dynamic
 * linker: the function that called into the wait; NULL if none. */
const tinspect_frame *agent_wait_caller(const tinspect_thread *th);
/* A frame's function for one line: symbol, else module+0xoffset, else
 * "??"; into buf (always terminated), escaped. */
const char *agent_frame_name(const tinspect_frame *f, char *buf, size_t len);

/* ---- isotime.c -------------------------------------------------------------- */

/* CLOCK_REALTIME as "YYYY-MM-DDTHH:MM:SS.uuuuuuZ" (captured_at's form),
 * from seconds and nanoseconds or from nanoseconds. */
void agent_iso_time(int64_t sec, long nsec, char *buf, size_t len);
void agent_iso_time_ns(int64_t ns, char *buf, size_t len);
/* When the snapshot was captured, CLOCK_REALTIME ns. */
int64_t agent_captured_ns(const tinspect_snapshot *snap);

/* ---- locksort.c ------------------------------------------------------------- */

/* The snapshot's locks, the most waited on first; NULL if there is none
 * or no memory.  The caller frees the array. */
const tinspect_lock **agent_locks_by_waiters(const tinspect_snapshot *snap);

/* ---- waitage.c -------------------------------------------------------------- */

/* " [mutex, 12 minutes]" after a thread's name, for a wait an earlier
 * update saw already; nothing otherwise.  (Its JSON form, json_waiting(),
 * is in jwriter.h.) */
void agent_put_wait_age(FILE *out, const tinspect_thread *th);

/* ---- atomicfile.c ----------------------------------------------------------- */

/* Replace path by a file of these bytes: written to a temporary file in the
 * same directory (".NAME.XXXXXX": hidden, and not matching the textfile
 * collector's *.prom), fsync'ed, renamed over path, the directory
 * fsync'ed.  mode: the new file's permission bits.  0 or -errno.  (The
 * files for other tools, formats/, and the lock-order graph's file,
 * lockorder/.) */
int atomicfile_replace(const char *path, const void *data, size_t len,
		       unsigned mode);
/* Whether a file can be created in path's directory (by creating and
 * removing a temporary one).  0 or -errno. */
int atomicfile_check(const char *path);

/* ---- btab.c: an intern table, keyed by bytes -------------------------------- */

struct blob {
	uint64_t hash;
	size_t len;
	void *key;		/* owned copy of the bytes, NUL after them */
	size_t value;		/* what the caller keeps for it */
};
struct btab {
	struct blob *v;
	size_t cap, n;		/* cap: a power of two; n < cap * 3/4 */
};
/* The entry of these bytes; added (copying them, value set to `value`,
 * *ret_added true) if new and may_add.  NULL when out of memory, or new
 * and not to be added. */
struct blob *btab_get(struct btab *t, const void *key, size_t len,
		      size_t value, bool may_add, bool *ret_added);
void btab_free(struct btab *t);

#endif
