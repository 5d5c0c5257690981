/*
 * overtime.h: what lasts across the updates of a watch: hung threads and
 * persistent lock holders (overtime.c), the cost of watching and
 * --max-duty (duty.c).  (The age of each wait, which the snapshot's
 * renderings show, is common/waitage.c.)  The watch
 * loop (watch.c) calls these once per update; each writes whole stream
 * lines to the FILE it is given.
 */
#ifndef TINSPECT_AGENT_OVERTIME_H
#define TINSPECT_AGENT_OVERTIME_H

#include "agent.h"
#include "jwriter.h"

/* Hung threads and locks held long (--hung-after); 0 disables. */
struct overtime;
struct overtime *overtime_new(pid_t pid, uint64_t hung_after_ns);
void overtime_free(struct overtime *o);
/* The events this update makes, as lines (NDJSON or text) into f. */
void overtime_update(struct overtime *o, const tinspect_snapshot *snap, bool json,
		     FILE *f);
/* Threads hung now; locks reported held now. */
size_t overtime_nhung(const struct overtime *o);
size_t overtime_nheld(const struct overtime *o);

/* ---- duty.c: the share of the time the target is frozen --------------------- */
struct duty {
	uint64_t base_ns;	/* --watch */
	double max;		/* --max-duty as a fraction; 0: none */
	uint64_t first_ns;	/* CLOCK_MONOTONIC: the first update's start */
	uint64_t prev_end_ns;	/* the previous update's end; 0: none */
	uint64_t frozen_ns;	/* every update's freeze, summed */
	double total;		/* frozen / elapsed since the first update */
	double last;		/* this update's freeze / time since the last */
	uint64_t interval_ns;	/* the interval to the next update */
	uint64_t announced_ns;	/* the interval the stream last said */
};
void duty_init(struct duty *d, uint64_t base_ns, double max_percent);
/* After an update that ended at end_ns (CLOCK_MONOTONIC): the figures,
 * and the next interval (lengthened to keep the freeze under d->max).
 * Writes an interval_changed line into f when the interval changes by
 * more than a tenth from the one last said. */
void duty_note(struct duty *d, const tinspect_snapshot *snap, uint64_t end_ns,
	       pid_t pid, bool json, FILE *f);
/* "duty_cycle", "duty_cycle_last", "interval_ms" of a summary line */
void duty_json(struct jw *w, const struct duty *d);

#endif
