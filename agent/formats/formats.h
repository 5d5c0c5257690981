/*
 * formats.h: the files tinspect writes for other tools, beside
 * its report on stdout:
 *
 *   --prometheus FILE  the text exposition format for node_exporter's
 *                      textfile collector, replaced after every update
 *                      (prometheus.c)
 *   --folded FILE      folded stacks for flamegraph.pl (folded.c)
 *   --pprof FILE       a gzip-compressed profile.proto (pprof.c)
 *
 * The folded and pprof files hold the same samples (samples.c): one per
 * thread per update, aggregated over a whole watch run, written once at
 * the end (also after SIGINT/SIGTERM).  Every file is replaced atomically
 * (common/atomicfile.c): a reader sees the old file or the new one, never
 * a part.  Nothing here touches the target: it reads finished snapshots.
 */
#ifndef TINSPECT_AGENT_FORMATS_H
#define TINSPECT_AGENT_FORMATS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <tinspect/tinspect.h>

#include "common.h"	/* atomicfile_replace(), the intern table (btab) */

struct format_opts {
	const char *prometheus;	/* --prometheus FILE; NULL: none */
	const char *folded;	/* --folded FILE */
	const char *pprof;	/* --pprof FILE */
	bool folded_by_name;	/* --folded-by thread-name */
	/* wait ages are known (a watch: tinspect_thread_waiting_since_ns()
	 * needs updates before this one); --hung-after, 0: no hung count */
	bool wait_ages;
	uint64_t hung_after_ns;
};

/* Whether any file was asked for. */
bool formats_wanted(const struct format_opts *o);

/* The files being written during one run (formats.c). */
struct formats;
/* Check that each file can be created where it goes (a temporary file
 * beside it) and start.  0 and *ret, or -errno with *ret_path the file
 * that cannot be written. */
int formats_open(const struct format_opts *o, struct formats **ret,
		 const char **ret_path);
/* After every successful update. */
void formats_snapshot(struct formats *f, const tinspect_snapshot *snap);
/* The lock-order graph whose counts the Prometheus file carries (it
 * outlives f); NULL: none. */
struct lockorder;
void formats_set_lockorder(struct formats *f, const struct lockorder *lo);
/* After an update that failed but the run goes on (the freeze limit). */
void formats_update_failed(struct formats *f);
/* Write the folded and pprof files and free everything; f may be NULL.
 * 0, or -errno of the first failure (already reported on stderr). */
int formats_close(struct formats *f);

/* A kernel state letter in Prometheus' label style: "running",
 * "sleeping", "disk_sleep", ..., "unknown". */
const char *formats_state_label(char state);

/* ---- samples.c: one sample per thread per update ------------------------------ */

/* A frame as the samples keep it: the function and where it is. */
struct sframe {
	const char *name;	/* symbol, module+0xoff, or "??" */
	const char *file;	/* source file; NULL if unknown */
	int line;		/* 0 if unknown */
};

/*
 * What a thread was doing, its leaf pseudo-frame: "[futex mutex
 * ledger_lock]", "[syscall nanosleep]", "[running]".  what is the part the
 * program makes ("futex mutex"); name the lock's symbol from the target
 * (any bytes), NULL when the lock has none.
 */
struct sleaf {
	const char *what;
	const char *name;
};

/* One distinct sample and how many times it was seen. */
struct sample {
	const char *thread_name;	/* raw bytes from the target; "" none */
	const char *state;		/* "sleeping", "running", ... */
	struct sleaf leaf;
	const struct sframe **frames;	/* root first */
	size_t nframes;
	uint64_t count;
};

struct samples;
struct samples *samples_new(void);
void samples_free(struct samples *s);
/* Add one sample for every thread of snap.  0 or -ENOMEM (then some
 * threads of this update were not counted: samples_lost() says how many). */
int samples_add(struct samples *s, const tinspect_snapshot *snap);
size_t samples_n(const struct samples *s);
const struct sample *samples_get(const struct samples *s, size_t i);
/* Updates added, and threads that could not be added (out of memory, or
 * past the cap on distinct samples). */
uint64_t samples_updates(const struct samples *s);
uint64_t samples_lost(const struct samples *s);
/* CLOCK_REALTIME of the first and the last update added, in ns. */
int64_t samples_first_ns(const struct samples *s);
int64_t samples_last_ns(const struct samples *s);
/* The target's executable at the last update; NULL if unknown. */
const char *samples_exe(const struct samples *s);
/* At most this many distinct samples are kept (a watch of a process that
 * makes new stacks all the time must not grow without bound); threads
 * beyond are counted in samples_lost(). */
#define SAMPLES_MAX_DISTINCT 200000

/* ---- the writers ---------------------------------------------------------------- */

/* prometheus.c: the exposition of one run's state; counters live across
 * updates. */
struct prom_state {
	uint64_t updates;		/* successful updates */
	uint64_t errors;		/* failed updates */
	char *gauges;			/* the last successful update's gauges */
	char *info;			/* tinspect_target_info */
	bool wait_ages;			/* see struct format_opts */
	uint64_t hung_after_ns;
	const struct lockorder *lockorder;	/* NULL: no lock-order graph */
};
/* Render snap's gauges into st (NULL snap: keep the last ones) and write
 * the whole exposition to path.  0 or -errno. */
int prom_write(const char *path, struct prom_state *st,
	       const tinspect_snapshot *snap, unsigned mode);
void prom_state_free(struct prom_state *st);
/* The label-value escaping of the exposition format, made valid UTF-8
 * (exposed for the unit tests). */
void prom_put_label_value(FILE *out, const char *s);

/* folded.c: "frame;frame;frame COUNT" lines, root first, sorted. */
int folded_write(const char *path, const struct samples *s, bool by_name,
		 unsigned mode);
/* A frame name made safe for one field of a folded line: ';' becomes
 * ':', blanks '_', controls and invalid UTF-8 '?'.  Into buf (always
 * terminated). */
void folded_sanitize(const char *s, char *buf, size_t len);

/* pprof.c: the samples as a gzip-compressed profile.proto; -ENOTSUP when
 * tinspect was built without protobuf-c. */
int pprof_write(const char *path, const struct samples *s, pid_t pid,
		unsigned mode);

#endif
