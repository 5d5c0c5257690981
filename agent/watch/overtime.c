/*
 * overtime.c: what has been stuck, and for how long, across the updates
 * of a watch.  The library says since when each thread has
 * been in its wait (tinspect_thread_waiting_since_ns()); this file turns
 * that into what an engineer on call acts on:
 *
 *   - every blocked thread's age, in the JSON ("waiting_since",
 *     "waiting_seconds") and in the text ("[mutex, 12 minutes]", as Go
 *     prints beside its goroutines);
 *   - thread_hung, once, when a thread has waited --hung-after seconds on
 *     something another thread must release (a lock, a join, a semaphore:
 *     tinspect_wait_is_idle() == 0), and thread_recovered when it moves
 *     on (or exits);
 *   - lock_held, once, when a lock has been held by the same owner while
 *     others wait on it for --hung-after seconds (the "persistent blocker"
 *     Java tools find by comparing thread dumps), with the owner's stack;
 *     lock_released when that ends.  Seen held by the same owner at every
 *     update is not enough (three threads taking turns on a lock show the
 *     same owner at two updates one time in three): one of its waiters
 *     must also have been in the same wait since the lock was first seen
 *     held, which a lock that changed hands would have ended.
 *
 * Everything is sampled: a lock seen held by the same thread at two
 * updates may have been released and taken again in between.  The
 * durations are bounded by the updates that saw them, which the man page
 * and the README say.
 */
#include "overtime.h"
#include "common.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* ---- hung threads and persistent lock holders ------------------------------------ */

/* A thread reported hung: what it waited on, kept for its recovery. */
struct hung_rec {
	pid_t tid;
	int64_t since;
	char *name;
	enum tinspect_lock_kind kind;
	uint64_t addr;
	char *symbol;
	pid_t owner;
	bool seen;		/* still in that wait at this update */
};

/* A lock seen held by one owner with waiters, from `since`. */
struct held_rec {
	uint64_t addr;
	pid_t owner;
	enum tinspect_lock_kind kind;
	char *symbol;
	int64_t since;
	bool reported;		/* lock_held said */
	bool seen;
};

struct overtime {
	int64_t hung_after_ns;
	pid_t pid;
	struct hung_rec *hung;
	size_t nhung;
	struct held_rec *held;
	size_t nheld;
};

struct overtime *overtime_new(pid_t pid, uint64_t hung_after_ns)
{
	struct overtime *o = calloc(1, sizeof *o);
	if (o) {
		o->pid = pid;
		o->hung_after_ns = (int64_t)hung_after_ns;
	}
	return o;
}

static void hung_drop(struct overtime *o, size_t i)
{
	free(o->hung[i].name);
	free(o->hung[i].symbol);
	o->hung[i] = o->hung[--o->nhung];
}

static void held_drop(struct overtime *o, size_t i)
{
	free(o->held[i].symbol);
	o->held[i] = o->held[--o->nheld];
}

void overtime_free(struct overtime *o)
{
	if (!o)
		return;
	while (o->nhung)
		hung_drop(o, 0);
	while (o->nheld)
		held_drop(o, 0);
	free(o->hung);
	free(o->held);
	free(o);
}

size_t overtime_nhung(const struct overtime *o)
{
	return o ? o->nhung : 0;
}

size_t overtime_nheld(const struct overtime *o)
{
	size_t n = 0;
	for (size_t i = 0; o && i < o->nheld; i++)
		n += o->held[i].reported;
	return n;
}

static char *dup_or_null(const char *s)
{
	return s ? strdup(s) : NULL;
}

/* The common head of a stream event line. */
static void event_head(struct jw *w, const struct overtime *o, int64_t now,
		       const char *event)
{
	char t[64];
	agent_iso_time_ns(now, t, sizeof t);
	json_line_head(w, "event", o->pid, t);
	jw_kstr(w, "event", event);
}

static void json_object_ref(struct jw *w, const char *key, enum tinspect_lock_kind kind,
			    uint64_t addr, const char *symbol)
{
	jw_key(w, key);
	jw_obj(w);
	jw_kstr(w, "kind", tinspect_lock_kind_name(kind));
	jw_khex(w, "addr", addr);
	jw_kstr(w, "symbol", symbol);
	jw_obj_end(w);
}

static void json_since(struct jw *w, int64_t since, int64_t now)
{
	char t[64];
	agent_iso_time_ns(since, t, sizeof t);
	jw_kstr(w, "since", t);
	jw_key(w, "seconds");
	jw_real(w, (double)(now - since) / 1e9);
}

static void text_object_ref(FILE *f, enum tinspect_lock_kind kind, uint64_t addr,
			    const char *symbol)
{
	fprintf(f, "%s 0x%" PRIx64, tinspect_lock_kind_name(kind), addr);
	if (symbol) {
		fputs(" (", f);
		agent_put_escaped(f, symbol);
		fputc(')', f);
	}
}

static void text_thread(FILE *f, pid_t tid, const char *name)
{
	fprintf(f, "thread %d", (int)tid);
	if (name) {
		fputc(' ', f);
		agent_fput_quoted(f, name, strlen(name));
	}
}

static void hung_line(FILE *f, const struct overtime *o, const struct hung_rec *r,
		      int64_t now, bool json, const char *event, const char *how)
{
	if (json) {
		struct jw w;
		jw_init(&w, f, false);
		event_head(&w, o, now, event);
		jw_kint(&w, "tid", r->tid);
		jw_kstr(&w, "name", r->name);
		json_object_ref(&w, "wait", r->kind, r->addr, r->symbol);
		json_tid(&w, "owner", r->owner);
		json_since(&w, r->since, now);
		if (how)
			jw_kstr(&w, "how", how);
		jw_obj_end(&w);
		jw_finish(&w);
		return;
	}
	char t[64];
	agent_iso_time_ns(now, t, sizeof t);
	fprintf(f, "%s ", t);
	text_thread(f, r->tid, r->name);
	fputs(!how ? " hung: waiting for " : !strcmp(how, "exited") ?
	      " exited while waiting for " : " recovered: no longer waits for ", f);
	text_object_ref(f, r->kind, r->addr, r->symbol);
	if (r->owner)
		fprintf(f, " (held by %d)", (int)r->owner);
	fputs(" since ", f);
	agent_iso_time_ns(r->since, t, sizeof t);
	fprintf(f, "%s, %.1f s\n", t, (double)(now - r->since) / 1e9);
}

/* The threads hung now: new ones reported, the others marked seen. */
static void track_hung(struct overtime *o, const tinspect_snapshot *snap, int64_t now,
		       bool json, FILE *f)
{
	for (size_t i = 0; i < o->nhung; i++)
		o->hung[i].seen = false;
	for (size_t i = 0, n = tinspect_snapshot_nthreads(snap); i < n; i++) {
		const tinspect_thread *th = tinspect_snapshot_thread(snap, i);
		const tinspect_wait *wt = tinspect_thread_wait(th);
		int64_t since = tinspect_thread_waiting_since_ns(th);
		pid_t tid = tinspect_thread_tid(th);
		if (!wt || since < 0 || tinspect_wait_is_idle(wt) != 0 ||
		    now - since < o->hung_after_ns)
			continue;
		size_t k = 0;
		while (k < o->nhung && o->hung[k].tid != tid)
			k++;
		if (k < o->nhung && o->hung[k].since == since) {
			o->hung[k].seen = true;
			continue;
		}
		/* a new wait of a thread hung before: its old wait ended
		 * (recovered) before this one began, both told */
		if (k < o->nhung) {
			hung_line(f, o, &o->hung[k], now, json, "thread_recovered",
				  "moved_on");
			hung_drop(o, k);
		}
		struct hung_rec *nv = realloc(o->hung, (o->nhung + 1) * sizeof *nv);
		if (!nv)
			continue;
		o->hung = nv;
		const tinspect_lock *l = tinspect_wait_lock(wt);
		const tinspect_symbol *sym = l ? tinspect_lock_symbol(l) : NULL;
		struct hung_rec *r = &o->hung[o->nhung++];
		*r = (struct hung_rec){
			.tid = tid,
			.since = since,
			.name = dup_or_null(tinspect_thread_name(th, NULL)),
			.kind = tinspect_wait_kind(wt),
			.addr = l ? tinspect_lock_addr(l) : tinspect_wait_futex(wt),
			.symbol = dup_or_null(sym ? tinspect_symbol_name(sym) : NULL),
			.owner = tinspect_wait_owner(wt),
			.seen = true,
		};
		hung_line(f, o, r, now, json, "thread_hung", NULL);
	}
	for (size_t i = 0; i < o->nhung;) {
		if (o->hung[i].seen) {
			i++;
			continue;
		}
		bool exists = tinspect_snapshot_thread_by_tid(snap, o->hung[i].tid);
		hung_line(f, o, &o->hung[i], now, json, "thread_recovered",
			  exists ? "moved_on" : "exited");
		hung_drop(o, i);
	}
}

static void held_line(FILE *f, const struct overtime *o, const struct held_rec *r,
		      const tinspect_snapshot *snap, const tinspect_lock *l, int64_t now,
		      bool json, const char *how)
{
	const tinspect_thread *owner = tinspect_snapshot_thread_by_tid(snap, r->owner);
	const char *oname = owner ? tinspect_thread_name(owner, NULL) : NULL;
	if (json) {
		struct jw w;
		jw_init(&w, f, false);
		event_head(&w, o, now, how ? "lock_released" : "lock_held");
		json_object_ref(&w, "lock", r->kind, r->addr, r->symbol);
		jw_kint(&w, "owner", r->owner);
		jw_kstr(&w, "owner_name", oname);
		json_since(&w, r->since, now);
		if (how) {
			jw_kstr(&w, "how", how);
		} else {
			jw_key(&w, "waiters");
			jw_arr(&w);
			for (size_t i = 0, n = tinspect_lock_nwaiters(l); i < n; i++)
				jw_int(&w, tinspect_lock_waiter(l, i, NULL));
			jw_arr_end(&w);
			jw_key(&w, "owner_stack");
			jw_arr(&w);
			for (size_t i = 0, n = owner ? tinspect_thread_nframes(owner) : 0;
			     i < n; i++) {
				const tinspect_frame *fr = tinspect_thread_frame(owner, i);
				jw_obj(&w);
				jw_khex(&w, "pc", tinspect_frame_pc(fr));
				jw_kstr(&w, "symbol", tinspect_frame_symbol(fr));
				jw_kint(&w, "offset", (int64_t)tinspect_frame_offset(fr));
				jw_kstr(&w, "module", tinspect_frame_module(fr));
				jw_obj_end(&w);
			}
			jw_arr_end(&w);
		}
		jw_obj_end(&w);
		jw_finish(&w);
		return;
	}
	char t[64];
	agent_iso_time_ns(now, t, sizeof t);
	fprintf(f, "%s %s: ", t, how ? "lock released" : "lock held");
	text_object_ref(f, r->kind, r->addr, r->symbol);
	fputs(how ? " was held by " : " held by ", f);
	text_thread(f, r->owner, oname);
	agent_iso_time_ns(r->since, t, sizeof t);
	fprintf(f, " since %s, %.1f s", t, (double)(now - r->since) / 1e9);
	if (how) {
		fprintf(f, " (%s)\n", how);
		return;
	}
	fprintf(f, ", %zu waiting; the owner's stack:\n", tinspect_lock_nwaiters(l));
	if (owner)
		agent_put_stack(f, owner, false);
}

/* Owned locks with waiters: the same owner as before keeps its since. */
static void track_held(struct overtime *o, const tinspect_snapshot *snap, int64_t now,
		       bool json, FILE *f)
{
	for (size_t i = 0; i < o->nheld; i++)
		o->held[i].seen = false;
	for (size_t i = 0, n = tinspect_snapshot_nlocks(snap); i < n; i++) {
		const tinspect_lock *l = tinspect_snapshot_lock(snap, i);
		enum tinspect_lock_kind kind = tinspect_lock_kind(l);
		/* a lock someone holds: a join's "owner" is the thread
		 * joined, a cond or a semaphore has none */
		if ((kind != TINSPECT_LOCK_MUTEX && kind != TINSPECT_LOCK_RWLOCK &&
		     kind != TINSPECT_LOCK_FILE) ||
		    tinspect_lock_owner_state(l) != TINSPECT_OWNER_LIVE ||
		    !tinspect_lock_nwaiters(l))
			continue;
		uint64_t addr = tinspect_lock_addr(l);
		pid_t owner = tinspect_lock_owner(l);
		struct held_rec *r = NULL;
		for (size_t k = 0; k < o->nheld && !r; k++)
			if (o->held[k].addr == addr && o->held[k].owner == owner)
				r = &o->held[k];
		if (!r) {
			struct held_rec *nv = realloc(o->held, (o->nheld + 1) * sizeof *nv);
			if (!nv)
				continue;
			o->held = nv;
			const tinspect_symbol *sym = tinspect_lock_symbol(l);
			r = &o->held[o->nheld++];
			*r = (struct held_rec){
				.addr = addr, .owner = owner, .kind = kind, .since = now,
				.symbol = dup_or_null(sym ? tinspect_symbol_name(sym) : NULL),
			};
		}
		r->seen = true;
		/* held the whole time: some waiter has been in its wait since
		 * the lock was first seen held by this owner (a lock handed
		 * from thread to thread wakes its waiters, and the library
		 * then starts their waits afresh) */
		bool blocked_throughout = false;
		for (size_t k = 0, nw = tinspect_lock_nwaiters(l); k < nw; k++) {
			const tinspect_thread *wt = tinspect_snapshot_thread_by_tid(
				snap, tinspect_lock_waiter(l, k, NULL));
			int64_t ws = wt ? tinspect_thread_waiting_since_ns(wt) : -1;
			blocked_throughout |= ws >= 0 && ws <= r->since;
		}
		if (!r->reported && blocked_throughout &&
		    now - r->since >= o->hung_after_ns) {
			r->reported = true;
			held_line(f, o, r, snap, l, now, json, NULL);
		}
	}
	for (size_t i = 0; i < o->nheld;) {
		struct held_rec *r = &o->held[i];
		if (r->seen) {
			i++;
			continue;
		}
		if (r->reported) {
			/* why it is not seen held with waiters any more */
			const char *how = "no_waiters";
			if (!tinspect_snapshot_thread_by_tid(snap, r->owner))
				how = "owner_exited";
			for (size_t k = 0, n = tinspect_snapshot_nlocks(snap); k < n; k++) {
				const tinspect_lock *l = tinspect_snapshot_lock(snap, k);
				if (tinspect_lock_addr(l) == r->addr &&
				    tinspect_lock_owner(l) != r->owner)
					how = "owner_changed";
			}
			held_line(f, o, r, snap, NULL, now, json, how);
		}
		held_drop(o, i);
	}
}

void overtime_update(struct overtime *o, const tinspect_snapshot *snap, bool json,
		     FILE *f)
{
	if (!o || o->hung_after_ns <= 0)
		return;
	int64_t now = agent_captured_ns(snap);
	track_hung(o, snap, now, json, f);
	if (tinspect_snapshot_locks_analysed(snap))
		track_held(o, snap, now, json, f);
}
