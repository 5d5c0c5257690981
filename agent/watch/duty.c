/*
 * duty.c: what watching costs the target.  Every update stops
 * every thread for its freeze; the duty cycle is the share of the time
 * the target spent frozen: over the whole stream, and over the last
 * interval.  --max-duty PERCENT keeps the second under a limit by
 * lengthening the interval after an update whose freeze would exceed it
 * (a process that grew to 10000 threads is watched less often rather than
 * harmed more), and says so in the stream (interval_changed).
 */
#include "overtime.h"
#include "common.h"

#include <inttypes.h>
#include <time.h>

void duty_init(struct duty *d, uint64_t base_ns, double max_percent)
{
	*d = (struct duty){
		.base_ns = base_ns,
		.max = max_percent / 100.0,
		.interval_ns = base_ns,
		.announced_ns = base_ns,
	};
}

static void interval_line(const struct duty *d, const tinspect_snapshot *snap,
			  pid_t pid, bool json, FILE *f)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	char t[64];
	agent_iso_time_ns((int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec, t, sizeof t);
	uint64_t freeze = tinspect_snapshot_freeze_ns(snap);
	bool longer = d->interval_ns > d->base_ns;
	if (!json) {
		fprintf(f, "%s interval %.3f s (asked %.3f s): %s\n", t,
			(double)d->interval_ns / 1e9, (double)d->base_ns / 1e9,
			longer ? "lengthened to keep the freeze under --max-duty"
			       : "back to the one asked for");
		return;
	}
	struct jw w;
	jw_init(&w, f, false);
	json_line_head(&w, "event", pid, t);
	jw_kstr(&w, "event", "interval_changed");
	jw_key(&w, "interval_s");
	jw_real(&w, (double)d->interval_ns / 1e9);
	jw_key(&w, "requested_s");
	jw_real(&w, (double)d->base_ns / 1e9);
	jw_key(&w, "max_duty_percent");
	jw_real(&w, d->max * 100.0);
	jw_kint(&w, "freeze_us", (int64_t)(freeze / 1000));
	jw_kstr(&w, "reason", longer ? "max_duty" : "restored");
	jw_obj_end(&w);
	jw_finish(&w);
}

void duty_note(struct duty *d, const tinspect_snapshot *snap, uint64_t end_ns,
	       pid_t pid, bool json, FILE *f)
{
	uint64_t freeze = tinspect_snapshot_freeze_ns(snap);
	if (!d->first_ns)
		d->first_ns = end_ns - tinspect_snapshot_duration_ns(snap);
	d->frozen_ns += freeze;
	uint64_t elapsed = end_ns > d->first_ns ? end_ns - d->first_ns : 0;
	d->total = elapsed ? (double)d->frozen_ns / (double)elapsed : 0;
	if (d->total > 1)
		d->total = 1;
	if (d->prev_end_ns && end_ns > d->prev_end_ns)
		d->last = (double)freeze / (double)(end_ns - d->prev_end_ns);
	else
		d->last = d->total;
	if (d->last > 1)
		d->last = 1;
	d->prev_end_ns = end_ns;
	if (d->max <= 0)
		return;
	/* the next freeze is taken to be like this one: an interval of
	 * freeze / max keeps it under the limit */
	uint64_t need = (uint64_t)((double)freeze / d->max);
	d->interval_ns = need > d->base_ns ? need : d->base_ns;
	uint64_t a = d->announced_ns;
	uint64_t diff = d->interval_ns > a ? d->interval_ns - a : a - d->interval_ns;
	if (diff * 10 > a) {
		d->announced_ns = d->interval_ns;
		interval_line(d, snap, pid, json, f);
	}
}

void duty_json(struct jw *w, const struct duty *d)
{
	jw_key(w, "duty_cycle");
	jw_real(w, d->total);
	jw_key(w, "duty_cycle_last");
	jw_real(w, d->last);
	jw_key(w, "interval_ms");
	jw_real(w, (double)d->interval_ns / 1e6);
}
