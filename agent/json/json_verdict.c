/*
 * json_verdict.c: the "verdict" member of the snapshot document (json.c),
 * as verdict.c decides it for the text: whether a deadlock was found,
 * whether the process is stopped by job control, what could move each
 * thread on, and the undecided waits (untimed, on primitives that record
 * no owner), with whether they are worth a line of the verdict and why.
 */
#include "json.h"
#include "verdict.h"

static void progress_json(struct jw *w, const struct agent_verdict *v)
{
	jw_key(w, "progress");
	jw_obj(w);
	for (int p = 0; p < TINSPECT_PROGRESS_COUNT; p++)
		jw_kint(w, tinspect_progress_name((enum tinspect_progress)p),
			(int64_t)v->progress[p]);
	jw_obj_end(w);
}

/* n, or null outside a watch's second update and later (no previous
 * update to be the same as) */
static void same_json(struct jw *w, const struct agent_verdict *v, size_t n)
{
	if (v->watched)
		jw_kint(w, "same_as_previous_update", (int64_t)n);
	else
		jw_knull(w, "same_as_previous_update");
}

static void undecided_json(struct jw *w, const struct agent_verdict *v)
{
	jw_key(w, "undecided");
	jw_obj(w);
	jw_kint(w, "threads", (int64_t)v->undecided);
	jw_kbool(w, "listed", v->why != VERDICT_IDLE);
	jw_kstr(w, "reason", verdict_why_name(v->why));
	same_json(w, v, v->undecided_same);
	jw_key(w, "by_kind");
	jw_arr(w);
	for (size_t i = 0; i < v->nkinds; i++) {
		const struct verdict_kind *k = &v->kinds[i];
		jw_obj(w);
		jw_kstr(w, "kind", tinspect_lock_kind_name(k->kind));
		jw_kstr(w, "owner", tinspect_owner_state_name(k->owner));
		jw_kstr(w, "what", k->what);
		jw_kint(w, "threads", (int64_t)k->threads);
		same_json(w, v, k->same);
		jw_obj_end(w);
	}
	jw_arr_end(w);
	jw_obj_end(w);
}

void json_verdict(struct jw *w, const tinspect_snapshot *snap, unsigned long update)
{
	struct agent_verdict v;
	verdict_make(snap, update, &v);
	jw_key(w, "verdict");
	jw_obj(w);
	jw_kstr(w, "deadlock", verdict_deadlock_word(&v));
	jw_kbool(w, "process_stopped", verdict_process_stopped(&v));
	jw_kint(w, "threads_stopped", (int64_t)v.jobctl);
	progress_json(w, &v);
	undecided_json(w, &v);
	jw_obj_end(w);
}
