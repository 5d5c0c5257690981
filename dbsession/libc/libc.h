/*
 * libc.h: the C library seam.  What tinspect knows of a
 * process's threads beyond the kernel's tasks - which pthread each task
 * is, its stack, its start routine, the meaning of its lock words - is
 * the C library's private business.  Each C library tinspect understands
 * implements the operations below, and the session calls only these:
 *
 *   glibc  libc_glibc.c: libthread_db (the target's own or the system's)
 *          for the threads, the layout table of glibc_locks.c for the
 *          lock words (docs/GLIBC.md);
 *   musl   libc_musl.c: no libthread_db exists; each thread's struct
 *          pthread is found from its thread pointer and checked
 *          (docs/MUSL.md).
 *
 * How to add the next one: docs/ARCHITECTURE.md, "A C library".
 *
 * Nothing here runs target code: a library and its version are told from
 * the target's memory and files only.
 */
#ifndef TINSPECT_DBS_LIBC_H
#define TINSPECT_DBS_LIBC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct dbs_session;
struct dbs_snapshot;
struct dbs_thread;
struct tdb_result;

/* What one C library says of one thread (filled during the stop by
 * gather, from the copies). */
struct dbs_libc_thread {
	bool have;		/* the library's struct for this task was found
				 * and checked */
	uint64_t pthread;	/* pthread_t */
	bool is_main;
	uint64_t start;		/* start routine, 0 if not known */
	int detach;		/* enum dbs_detach_state */
	uint64_t stack_lo, stack_hi;	/* 0: not known (the main thread) */
	uint64_t guard_lo, guard_hi;	/* 0: none or not known */
	bool have_errno;
	int errno_val;
	uint64_t robust_head;	/* the held-mutex chain's head, 0 empty */
	uint64_t tsd;		/* the key values, 0 if none */
	bool tsd_none;		/* musl: the program has no key array
				 * (tsd points past the thread's mapping,
				 * docs/MUSL.md §13): never read it */
	uint64_t dtv;
	const char *why;	/* !have: why (static text) */
};

/* The C library's own record of a thread's detach state. */
enum dbs_detach_state {
	DBS_DETACH_UNKNOWN = 0,
	DBS_DETACH_JOINABLE,
	DBS_DETACH_DETACHED,
	DBS_DETACH_EXITING,
	DBS_DETACH_EXITED,
};
const char *dbs_detach_state_name(int d);

/* How the threads of a snapshot were identified. */
enum dbs_threads_source {
	DBS_THREADS_PROC = 0,		/* from /proc only: no pthread fields */
	DBS_THREADS_LIBTHREAD_DB,	/* glibc's libthread_db */
	DBS_THREADS_STRUCT_PTHREAD,	/* the library's struct at each thread
					 * pointer, checked (musl) */
};
const char *dbs_threads_source_name(enum dbs_threads_source s);

struct dbs_libc_ops {
	const char *name;	/* "glibc", "musl" */
	/*
	 * Before the stop, whenever the module map changed: whether the
	 * target runs this library (true), and if so its version into
	 * s->libc_version ("" if unknown) with where it was read.  May read
	 * files and the running target; runs none of its code.
	 */
	bool (*detect)(struct dbs_session *s);
	/* Before the stop, for each new module map: what the library needs
	 * to list threads (glibc: libthread_db's agent). */
	void (*setup)(struct dbs_session *s);
	/* During the stop, after the copies: each task's identity into
	 * res[i].lt (glibc: libthread_db for the first task only, the rest
	 * after the resume over the copies, session.c). */
	void (*gather)(struct dbs_session *s, struct tdb_result *res);
	/* After the resume: task i's identity onto th. */
	void (*identify)(struct dbs_session *s, struct dbs_snapshot *snap,
			 struct dbs_thread *th, const struct tdb_result *r);
	/*
	 * Why the lock words are not decoded for this process (static
	 * text), or NULL when this library's layouts are verified for the
	 * version the target runs.
	 */
	const char *(*locks_unverified)(const struct dbs_session *s);
};

extern const struct dbs_libc_ops dbs_libc_glibc;
extern const struct dbs_libc_ops dbs_libc_musl;

/* Pick the target's C library (the first whose detect says yes; glibc
 * otherwise, whose libthread_db then says what it finds). */
void dbs_libc_detect(struct dbs_session *s);

#endif
