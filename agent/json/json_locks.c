/*
 * json_locks.c: the lock part of the snapshot document (json.c): each
 * blocked thread's "blocked_on", and "locks", "deadlocks", "stalls",
 * "orphaned_locks" of the process, with the decoded state of every lock
 * under its kind's name.
 */
#include "json.h"
#include "common.h"

#include <inttypes.h>
#include <stdio.h>

static const char *mode_name(enum tinspect_wait_mode m)
{
	return m == TINSPECT_MODE_READ ? "read" : m == TINSPECT_MODE_WRITE ? "write" : NULL;
}

/* "ledger_lock", "bank_locks+0x28", or null */
static void symbol_text(struct jw *w, const tinspect_symbol *s)
{
	if (!s) {
		jw_null(w);
		return;
	}
	uint64_t off = tinspect_symbol_offset(s);
	if (!off) {
		jw_str(w, tinspect_symbol_name(s));
		return;
	}
	char tail[24];
	snprintf(tail, sizeof tail, "+0x%" PRIx64, off);
	jw_str_cat(w, tinspect_symbol_name(s), tail);
}

static void evidence_json(struct jw *w, unsigned ev)
{
	jw_arr(w);
	for (unsigned bit = 1; bit; bit <<= 1)
		if ((ev & bit) && tinspect_evidence_name(bit))
			jw_str(w, tinspect_evidence_name(bit));
	jw_arr_end(w);
}

/* What names a lock, in a reference to it and in a thread's held locks */
static void lock_name_json(struct jw *w, uint64_t addr, enum tinspect_lock_kind kind,
			   const tinspect_symbol *sym)
{
	jw_khex(w, "addr", addr);
	jw_kstr(w, "kind", tinspect_lock_kind_name(kind));
	jw_key(w, "symbol");
	symbol_text(w, sym);
}

/* A reference to a lock, self-describing; null for none. */
static void lockref_json(struct jw *w, const tinspect_lock *l)
{
	if (!l) {
		jw_null(w);
		return;
	}
	jw_obj(w);
	jw_kint(w, "index", (int64_t)tinspect_lock_index(l));
	lock_name_json(w, tinspect_lock_addr(l), tinspect_lock_kind(l),
		       tinspect_lock_symbol(l));
	jw_obj_end(w);
}

void json_held(struct jw *w, const tinspect_thread *th)
{
	if (!tinspect_thread_held_known(th)) {
		jw_null(w);
		return;
	}
	jw_arr(w);
	for (size_t i = 0, n = tinspect_thread_nheld(th); i < n; i++) {
		const tinspect_held *h = tinspect_thread_held(th, i);
		jw_obj(w);
		lock_name_json(w, tinspect_held_addr(h), tinspect_held_kind(h),
			       tinspect_held_symbol(h));
		jw_obj_end(w);
	}
	jw_arr_end(w);
}

void json_blocked_on(struct jw *w, const tinspect_snapshot *snap,
			    const tinspect_thread *th)
{
	const tinspect_wait *b = tinspect_thread_wait(th);
	if (!b) {
		jw_null(w);
		return;
	}
	const tinspect_lock *l = tinspect_wait_lock(b);
	uint64_t object = tinspect_wait_object(b);
	jw_obj(w);
	jw_kstr(w, "kind", tinspect_lock_kind_name(tinspect_wait_kind(b)));
	jw_kstr(w, "mode", mode_name(tinspect_wait_mode(b)));
	jw_khex(w, "futex", tinspect_wait_futex(b));
	jw_khex(w, "futex_op", tinspect_wait_futex_op(b));
	jw_khex(w, "futex_val", tinspect_wait_futex_val(b));
	jw_kstr(w, "syscall", tinspect_snapshot_syscall_name(snap, tinspect_wait_syscall(b)));
	if (object)
		jw_khex(w, "object", object);
	else
		jw_knull(w, "object");
	jw_key(w, "symbol");
	symbol_text(w, l ? tinspect_lock_symbol(l) : NULL);
	json_tid(w, "owner", tinspect_wait_owner(b));
	jw_kstr(w, "owner_state", tinspect_owner_state_name(l ? tinspect_lock_owner_state(l)
							    : TINSPECT_OWNER_NONE));
	if (l)
		jw_kint(w, "lock", (int64_t)tinspect_lock_index(l));
	else
		jw_knull(w, "lock");
	jw_key(w, "evidence");
	evidence_json(w, tinspect_wait_evidence(b));
	jw_kbool(w, "in_graph", tinspect_wait_in_graph(b));
	jw_kbool(w, "parked", tinspect_wait_parked(b));
	jw_kstr(w, "frame", tinspect_wait_frame(b));
	/* the function that waits: what an unidentified futex is about */
	const tinspect_frame *cf = agent_wait_caller(th);
	char cname[512];
	jw_kstr(w, "caller", cf ? agent_frame_name(cf, cname, sizeof cname) : NULL);
	jw_kstr(w, "note", tinspect_wait_note(b));
	jw_obj_end(w);
}

static void lock_state_json(struct jw *w, const tinspect_lock *l)
{
	struct tinspect_mutex_state m;
	struct tinspect_rwlock_state r;
	struct tinspect_cond_state c;
	struct tinspect_sem_state s;
	struct tinspect_barrier_state b;
	struct tinspect_join_state j;
	jw_obj(w);
	if (tinspect_lock_mutex(l, &m, sizeof m) == 0) {
		jw_kstr(w, "type", tinspect_mutex_type_name(m.type));
		jw_kbool(w, "robust", m.robust);
		jw_kbool(w, "pi", m.pi);
		jw_kbool(w, "pp", m.pp);
		jw_kbool(w, "pshared", m.pshared);
		jw_kbool(w, "elision", m.elision);
		jw_khex(w, "lock_word", m.lock);
		jw_kint(w, "owner_field", m.owner_field);
		jw_kint(w, "count", m.count);
		jw_kint(w, "nusers", m.nusers);
		jw_khex(w, "kind_word", (uint32_t)m.kind_word);
		jw_kbool(w, "owner_died", m.owner_died);
		jw_kbool(w, "inconsistent", m.inconsistent);
		jw_kbool(w, "notrecoverable", m.notrecoverable);
		if (m.pp)
			jw_kint(w, "ceiling", m.ceiling);
		else
			jw_knull(w, "ceiling");
	} else if (tinspect_lock_rwlock(l, &r, sizeof r) == 0) {
		jw_khex(w, "readers_word", r.readers_word);
		jw_kint(w, "readers", r.nreaders);
		jw_kbool(w, "write_phase", r.write_phase);
		jw_kbool(w, "write_locked", r.write_locked);
		jw_kbool(w, "readers_waiting", r.readers_waiting);
		jw_kint(w, "cur_writer", r.cur_writer);
		jw_kint(w, "writers", r.writers);
		jw_kbool(w, "shared", r.shared);
		jw_kint(w, "flags", r.flags);
	} else if (tinspect_lock_cond(l, &c, sizeof c) == 0) {
		jw_khex(w, "wseq", c.wseq);
		jw_khex(w, "g1_start", c.g1_start);
		jw_khex(w, "wrefs", c.wrefs);
		jw_kint(w, "waiters", c.nwaiters);
		jw_key(w, "g_signals");
		jw_arr(w);
		jw_int(w, c.g_signals[0]);
		jw_int(w, c.g_signals[1]);
		jw_arr_end(w);
		jw_kbool(w, "pshared", c.pshared);
		jw_kstr(w, "clock", c.monotonic ? "monotonic" : "realtime");
		if (c.mutex)
			jw_khex(w, "mutex", c.mutex);
		else
			jw_knull(w, "mutex");
	} else if (tinspect_lock_sem(l, &s, sizeof s) == 0) {
		jw_kint(w, "value", s.value);
		jw_kint(w, "waiters", s.nwaiters);
		jw_kbool(w, "pshared", s.pshared);
	} else if (tinspect_lock_barrier(l, &b, sizeof b) == 0) {
		jw_kint(w, "count", b.count);
		jw_kint(w, "arrived", (int64_t)b.in - (int64_t)b.current_round);
		jw_kint(w, "in", b.in);
		jw_kint(w, "current_round", b.current_round);
		jw_kbool(w, "pshared", b.pshared);
	} else if (tinspect_lock_join(l, &j, sizeof j) == 0) {
		json_tid(w, "target", j.target);
		jw_khex(w, "pthread", j.pthread);
	}
	jw_obj_end(w);
}

static void lock_json(struct jw *w, const tinspect_lock *l)
{
	enum tinspect_lock_kind kind = tinspect_lock_kind(l);
	const tinspect_symbol *sym = tinspect_lock_symbol(l);
	unsigned holders = tinspect_lock_holders(l);
	size_t nwords;
	const unsigned char *words = tinspect_lock_words(l, &nwords);
	jw_obj(w);
	jw_kstr(w, "kind", tinspect_lock_kind_name(kind));
	jw_khex(w, "addr", tinspect_lock_addr(l));
	jw_kbool(w, "object_known", tinspect_lock_object_known(l));
	jw_key(w, "symbol");
	json_symbol(w, sym);
	json_tid(w, "owner", tinspect_lock_owner(l));
	jw_kstr(w, "owner_state", tinspect_owner_state_name(tinspect_lock_owner_state(l)));
	jw_kbool(w, "orphaned", tinspect_lock_orphaned(l));
	if (holders)
		jw_kint(w, "holders", holders);
	else
		jw_knull(w, "holders");
	jw_key(w, "waiters");
	jw_arr(w);
	for (size_t i = 0, n = tinspect_lock_nwaiters(l); i < n; i++) {
		enum tinspect_wait_mode mode = TINSPECT_MODE_NONE;
		pid_t tid = tinspect_lock_waiter(l, i, &mode);
		jw_obj(w);
		jw_kint(w, "tid", tid);
		jw_kstr(w, "mode", mode_name(mode));
		jw_obj_end(w);
	}
	jw_arr_end(w);
	jw_key(w, "words");
	if (words)
		jw_hexbytes(w, words, nwords);
	else
		jw_null(w);
	jw_kstr(w, "note", tinspect_lock_note(l));
	/* the decoded state under the kind's own name ("mutex": {...});
	 * a futex and a FILE have none: their words are all there is) */
	if (tinspect_lock_decoded(l) && kind != TINSPECT_LOCK_FUTEX &&
	    kind != TINSPECT_LOCK_FILE) {
		jw_key(w, tinspect_lock_kind_name(kind));
		lock_state_json(w, l);
	}
	jw_obj_end(w);
}

/* "threads" and "locks" of a cycle or a stall, in their order */
void json_cycles(struct jw *w, const tinspect_snapshot *snap,
		 void (*lock_value)(struct jw *w, const tinspect_lock *l))
{
	jw_arr(w);
	for (size_t i = 0, n = tinspect_snapshot_ncycles(snap); i < n; i++) {
		const tinspect_cycle *c = tinspect_snapshot_cycle(snap, i);
		size_t len = tinspect_cycle_length(c);
		jw_obj(w);
		jw_key(w, "threads");
		jw_arr(w);
		for (size_t k = 0; k < len; k++)
			jw_int(w, tinspect_cycle_tid(c, k));
		jw_arr_end(w);
		jw_key(w, "locks");
		jw_arr(w);
		for (size_t k = 0; k < len; k++)
			lock_value(w, tinspect_cycle_lock(c, k));
		jw_arr_end(w);
		jw_obj_end(w);
	}
	jw_arr_end(w);
}

static void stalls_json(struct jw *w, const tinspect_snapshot *snap)
{
	jw_arr(w);
	for (size_t i = 0, n = tinspect_snapshot_nstalls(snap); i < n; i++) {
		const tinspect_stall *st = tinspect_snapshot_stall(snap, i);
		size_t len = tinspect_stall_length(st);
		long sc = tinspect_stall_end_syscall(st);
		jw_obj(w);
		jw_key(w, "threads");
		jw_arr(w);
		for (size_t k = 0; k < len; k++)
			jw_int(w, tinspect_stall_tid(st, k));
		jw_arr_end(w);
		jw_key(w, "locks");
		jw_arr(w);
		for (size_t k = 0; k + 1 < len; k++)
			lockref_json(w, tinspect_stall_lock(st, k));
		jw_arr_end(w);
		jw_key(w, "end");
		jw_obj(w);
		jw_kint(w, "tid", tinspect_stall_tid(st, len - 1));
		jw_kstr(w, "reason", tinspect_stall_end_name(tinspect_stall_end(st)));
		jw_kstr(w, "syscall", sc >= 0 ? tinspect_snapshot_syscall_name(snap, sc) : NULL);
		jw_key(w, "lock");
		lockref_json(w, tinspect_stall_end_lock(st));
		jw_obj_end(w);
		jw_obj_end(w);
	}
	jw_arr_end(w);
}

void json_locks(struct jw *w, const tinspect_snapshot *snap)
{
	jw_key(w, "locks");
	jw_arr(w);
	for (size_t i = 0, n = tinspect_snapshot_nlocks(snap); i < n; i++)
		lock_json(w, tinspect_snapshot_lock(snap, i));
	jw_arr_end(w);

	/* A nonblocking capture is not one consistent state: what it shows
	 * are candidates, under "unconfirmed", never "deadlocks" or "stalls"
	 * (a reader that checks deadlocks must not be alarmed by them). */
	bool candidates = tinspect_snapshot_capture_mode(snap) ==
			  TINSPECT_CAPTURE_NONBLOCKING;
	jw_key(w, "deadlocks");
	if (candidates) {
		jw_arr(w);
		jw_arr_end(w);
	} else {
		json_cycles(w, snap, lockref_json);
	}
	jw_key(w, "stalls");
	if (candidates) {
		jw_arr(w);
		jw_arr_end(w);
	} else {
		stalls_json(w, snap);
	}
	if (candidates) {
		jw_key(w, "unconfirmed");
		jw_obj(w);
		jw_key(w, "deadlocks");
		json_cycles(w, snap, lockref_json);
		jw_key(w, "stalls");
		stalls_json(w, snap);
		jw_obj_end(w);
	}

	jw_key(w, "orphaned_locks");
	jw_arr(w);
	for (size_t i = 0, n = tinspect_snapshot_norphans(snap); i < n; i++)
		lockref_json(w, tinspect_snapshot_orphan(snap, i));
	jw_arr_end(w);
}
