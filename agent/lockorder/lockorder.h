/*
 * lockorder.h: lock order learned by watching, the room lockorder/ of the
 * agent.  A watch (and a one-shot capture with --lock-order) keeps a
 * lock-order graph (lockgraph.h): each update, every thread seen waiting
 * for a mutex or an rwlock while it holds others (tinspect_thread_held():
 * proven by those locks' own words) adds the orders "held, then waited
 * for", with its stack as evidence.  A cycle of orders seen in more than
 * one thread is a potential deadlock, reported the moment it appears:
 * before any thread hangs.
 *
 * The room uses common/ only; the text report, the JSON document, the
 * Prometheus file, the watch and main.c use it (agent/meson.build lists
 * the rooms in their order).
 *
 *   lockgraph.c        the graph itself, pure data (lockgraph.h)
 *   lockorder.c        the samples: observations from a snapshot, through
 *                      the public API only
 *   lockgraph_file.c   --lock-order FILE: the graph read at the start,
 *                      merged with what the run learns, replaced
 *                      atomically (tinspect-lockorder.schema.json)
 *   lockorder_out.c    the event lines, the text section, the JSON member
 *                      of a snapshot and of a summary line, and reading a
 *                      saved graph (tinspect --lock-order FILE)
 */
#ifndef TINSPECT_AGENT_LOCKORDER_H
#define TINSPECT_AGENT_LOCKORDER_H

#include "agent.h"
#include "common.h"
#include "jwriter.h"
#include "lockgraph.h"

struct lockorder {
	struct lockgraph *g;
	char *path;		/* --lock-order FILE; NULL: kept in memory */
	bool dirty;		/* learned something not saved yet */
	int64_t saved_ns;	/* CLOCK_MONOTONIC of the last save */
	unsigned mode;		/* FILE's permissions: 0666 less the umask */
	size_t new_from;	/* the last update's inversions: g->inv[new_from..] */
	/* the last update: its waits by class, the locks whose words it
	 * read, the locks the session forgot for lack of room */
	uint64_t waits[LG_WAIT_CLASSES];
	size_t locks_tracked, locks_forgotten;
	bool sampled;		/* an update was sampled */
};

/* Start a graph, with FILE's if path names one that exists (merged: its
 * locks, orders and inversions are known, and counted as one more run).
 * 0 and *ret; -errno with why[] saying what (a file that cannot be read,
 * is no lock-order document or of another major version, or whose
 * directory cannot be written). */
int lockorder_open(const char *path, struct lockorder **ret, char *why,
		   size_t whylen);
/* Learn from one update (update: the watch's number, 0 for a one-shot).
 * The inversions it found are g->inv[new_from .. g->ninv). */
void lockorder_sample(struct lockorder *lo, const tinspect_snapshot *snap,
		      unsigned long update);
/* Replace FILE by the graph, if there is one and it learned something
 * (force: also if only counts changed).  0 or -errno (said on stderr
 * once per kind of failure). */
int lockorder_save(struct lockorder *lo, bool force);
/* Save (if learned anything) and free; lo may be NULL.  0 or -errno. */
int lockorder_close(struct lockorder *lo);
/* Potential deadlocks known: all, and those found by the last update. */
size_t lockorder_ninversions(const struct lockorder *lo);
size_t lockorder_nnew(const struct lockorder *lo);

/* ---- lockorder_out.c ------------------------------------------------------- */

/* A lock_order_inversion line per inversion the last update found, NDJSON
 * or text, into f. */
void lockorder_events(const struct lockorder *lo, pid_t pid, bool json, FILE *f);
/* The text report's section (nothing before the first sample). */
void lockorder_text(FILE *out, const struct lockorder *lo);
/* "lock_order" of a snapshot document. */
void lockorder_json(struct jw *w, const struct lockorder *lo);
/* "lock_order_inversions", "lock_order_edges" of a summary line. */
void lockorder_summary_json(struct jw *w, const struct lockorder *lo);
/* One inversion as an object (what the event and "lock_order" carry). */
void lockorder_json_inversion(struct jw *w, const struct lockgraph *g,
			      const struct lg_inversion *inv);

/* tinspect --lock-order FILE without a PID: the saved graph read, as text
 * or (json) the document; the exit status: 0, 12 with check when it holds
 * a potential deadlock, 2 when it cannot be read. */
int lockorder_show(const char *path, bool json, bool check);

/* ---- lockgraph_file.c -------------------------------------------------------- */

/* Read the document at path into g (empty).  0; -ENOENT (no file);
 * -EINVAL/-ERANGE/-EIO... with why[] saying what is wrong. */
int lg_file_read(const char *path, struct lockgraph *g, char *why, size_t whylen);
/* The same from len bytes at buf (name: what the reason calls them). */
int lg_file_parse(const char *buf, size_t len, const char *name,
		  struct lockgraph *g, char *why, size_t whylen);
/* The document of g into a malloc'ed buffer (*ret, *ret_len).  0 or
 * -ENOMEM. */
int lg_file_render(const struct lockgraph *g, bool pretty, char **ret,
		   size_t *ret_len);
/* Helpers the renderers share: a stack and an observation as JSON. */
void lg_json_stack(struct jw *w, const struct lg_stack *st);
void lg_json_seen(struct jw *w, const struct lg_seen *s, const char *stack_key);
void lg_json_thread(struct jw *w, const struct lg_thread *t);
/* The members that name a lock: key, kind, addr, pid, symbol, module,
 * offset. */
void lg_json_lock(struct jw *w, const struct lg_lock *l);
/* The members of one evidence of an order: the waiting observation and
 * stack, the frame that holds the first lock, where it was seen held. */
void lg_json_evidence(struct jw *w, const struct lg_evidence *ev);

#endif
