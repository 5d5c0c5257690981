/*
 * json.c: the versioned JSON document (schema/tinspect-snapshot.schema.json),
 * streamed to the output in document order (jwriter.c): a 10000-thread
 * snapshot is never held as a tree.
 * Every string that comes from the target (thread names, paths, command
 * line, ELF symbol names) is attacker-controlled bytes: the writer makes it
 * valid UTF-8 (invalid sequences become U+FFFD, and the raw bytes are kept
 * as hex beside a lossy thread name), so the document always parses.
 * 64-bit values are "0x..." strings: JSON readers with 53-bit numbers must
 * not lose address bits.
 */
#include "agent.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "config.h"

/* "key": value, for the common value kinds */
static void k_str(struct jw *w, const char *k, const char *v)
{
	jw_key(w, k);
	jw_str(w, v);
}

static void k_int(struct jw *w, const char *k, int64_t v)
{
	jw_key(w, k);
	jw_int(w, v);
}

static void k_hex(struct jw *w, const char *k, uint64_t v)
{
	jw_key(w, k);
	jw_hex(w, v);
}

static void k_bool(struct jw *w, const char *k, bool v)
{
	jw_key(w, k);
	jw_bool(w, v);
}

static void k_null(struct jw *w, const char *k)
{
	jw_key(w, k);
	jw_null(w);
}

static void errors_array(struct jw *w, const char *k, char **errs, size_t n)
{
	jw_key(w, k);
	jw_arr(w);
	for (size_t i = 0; i < n; i++)
		jw_str(w, errs[i]);
	jw_arr_end(w);
}

static void symbol_json(struct jw *w, const struct dbs_symbol *s)
{
	jw_obj(w);
	k_hex(w, "addr", s->addr);
	k_str(w, "module", s->module);
	k_str(w, "symbol", s->name);
	k_int(w, "offset", (int64_t)s->offset);
	jw_obj_end(w);
}

static void syscall_json(struct jw *w, const struct dbs_snapshot *snap,
			 const struct dbs_thread *th)
{
	long nr = -1;
	const uint64_t *args = NULL;
	const char *source = NULL;
	bool restarting = false;
	if (th->syscall.nr >= 0) {
		nr = th->syscall.nr;
		args = th->syscall.args;
		source = "registers";
		restarting = th->syscall.restarting;
	} else if (!th->have_regs && th->proc_sc_kind == PSVC_SC_IN_SYSCALL) {
		nr = th->proc_sc_nr;
		args = th->proc_sc_args;
		source = "proc";
	}
	if (nr < 0) {
		jw_null(w);
		return;
	}
	jw_obj(w);
	k_int(w, "nr", nr);
	k_str(w, "name", arch_syscall_name(snap->arch, nr));
	jw_key(w, "args");
	jw_arr(w);
	for (int i = 0; i < 6; i++)
		jw_hex(w, args[i]);
	jw_arr_end(w);
	k_bool(w, "restarting", restarting);
	k_str(w, "source", source);
	jw_obj_end(w);
}

static void frame_json(struct jw *w, const struct dbs_frame *f)
{
	jw_obj(w);
	k_hex(w, "pc", f->pc);
	k_bool(w, "inlined", f->inlined);
	k_str(w, "module", f->module);
	k_str(w, "build_id", f->build_id);
	k_str(w, "symbol", f->symbol);
	if (f->mangled)
		k_str(w, "mangled", f->mangled);
	if (f->symbol)
		k_int(w, "offset", (int64_t)f->offset);
	else
		k_null(w, "offset");
	k_str(w, "file", f->file);
	if (f->line)
		k_int(w, "line", f->line);
	else
		k_null(w, "line");
	if (f->module)
		k_hex(w, "module_offset", f->module_offset);
	else
		k_null(w, "module_offset");
	jw_obj_end(w);
}

static void stack_json(struct jw *w, const struct dbs_stack *st)
{
	if (st->end == DBS_STACK_NONE) {
		jw_null(w);
		return;
	}
	jw_obj(w);
	jw_key(w, "frames");
	jw_arr(w);
	for (size_t i = 0; i < st->nframes; i++)
		frame_json(w, &st->frames[i]);
	jw_arr_end(w);
	k_str(w, "end", dbs_stack_end_name(st->end));
	k_bool(w, "truncated", st->end == DBS_STACK_TRUNCATED);
	k_str(w, "error", st->error);
	k_int(w, "copied_bytes", (int64_t)(st->copied_to - st->copied_from));
	jw_obj_end(w);
}

/* ---- --tls, --errno, --keys, stacks ---------------------------------------- */

static const char *tls_status_name(enum dbs_tls_status s)
{
	switch (s) {
	case DBS_TLS_OK: return "ok";
	case DBS_TLS_NOT_ALLOCATED: return "not_allocated";
	case DBS_TLS_NOT_FOUND: return "not_found";
	case DBS_TLS_UNAVAILABLE: return "unavailable";
	case DBS_TLS_ERROR: return "error";
	}
	return "error";
}

/* The value of a variable, typed by its decoding: integers up to 32 bits
 * are numbers, 64-bit integers decimal strings and addresses "0x..."
 * strings (exact for readers with 53-bit numbers), bytes lowercase hex. */
static void tls_value_json(struct jw *w, const struct dbs_tls_var *var,
			   const struct dbs_tls_value *v)
{
	const unsigned char *b = v->bytes;
	if (!b) {
		jw_null(w);
		return;
	}
	uint64_t u = dbs_tls_bits(var, v);
	char buf[32];
	switch (var->type) {
	case DBS_TLS_INT: {
		int64_t x = dbs_tls_signed(var, v);
		if (var->size < 8) {
			jw_int(w, x);
			return;
		}
		snprintf(buf, sizeof buf, "%" PRId64, x);
		jw_str(w, buf);
		return;
	}
	case DBS_TLS_UNSIGNED:
		if (var->size < 8) {
			jw_int(w, (int64_t)u);
			return;
		}
		snprintf(buf, sizeof buf, "%" PRIu64, u);
		jw_str(w, buf);
		return;
	case DBS_TLS_BOOL:
		jw_bool(w, u != 0);
		return;
	case DBS_TLS_HEX:
	case DBS_TLS_POINTER:
		jw_hex(w, u);
		return;
	case DBS_TLS_FLOAT:
		jw_real(w, dbs_tls_double(var, v));	/* NaN, infinities: null */
		return;
	case DBS_TLS_STRING:
		if (v->str)
			jw_strn(w, v->str, v->str_len);
		else
			jw_null(w);
		return;
	case DBS_TLS_BYTES:
	case DBS_TLS_AUTO:
		jw_hexbytes(w, b, var->size);
		return;
	}
	jw_null(w);
}

static void tls_entry_json(struct jw *w, const struct dbs_tls_var *var,
			   const struct dbs_tls_value *v)
{
	jw_obj(w);
	if (v->have_addr)
		k_hex(w, "address", v->addr);
	else
		k_null(w, "address");
	k_str(w, "type", var->type_name);
	k_str(w, "status", tls_status_name(v->status));
	jw_key(w, "value");
	if (v->status == DBS_TLS_OK)
		tls_value_json(w, var, v);
	else
		jw_null(w);
	if (var->type == DBS_TLS_STRING && v->status == DBS_TLS_OK && v->bytes) {
		uint64_t p;
		memcpy(&p, v->bytes, sizeof p);
		k_hex(w, "pointer", p);
		k_bool(w, "truncated", v->str_truncated);
		if (v->str && !agent_utf8_lossless(v->str, v->str_len)) {
			jw_key(w, "value_hex");
			jw_hexbytes(w, v->str, v->str_len);
		}
	}
	if (var->type == DBS_TLS_POINTER && v->status == DBS_TLS_OK &&
	    v->ptr_sym.module) {
		jw_key(w, "symbol");
		symbol_json(w, &v->ptr_sym);
	}
	if (v->error)
		k_str(w, "error", v->error);
	jw_obj_end(w);
}

static void errno_json(struct jw *w, const struct dbs_tls_value *v)
{
	int e = 0;
	bool ok = v->status == DBS_TLS_OK && v->bytes;
	if (ok)
		memcpy(&e, v->bytes, sizeof e);
	const char *name = ok && e ? strerrorname_np(e) : NULL;
	jw_obj(w);
	if (ok)
		k_int(w, "value", e);
	else
		k_null(w, "value");
	k_str(w, "name", name);
	if (v->have_addr)
		k_hex(w, "address", v->addr);
	else
		k_null(w, "address");
	k_str(w, "status", tls_status_name(v->status));
	if (v->error)
		k_str(w, "error", v->error);
	jw_obj_end(w);
}

/*
 * The thread's "tls" object is keyed by variable name.  Names are unique
 * on the command line, but two names of invalid UTF-8 may be the same key
 * once written (both "a\uFFFD"): the key is written once, where it first
 * appears, with the value of its last variable (the document the jansson
 * tree gave).  For each variable: the one whose value its key shows, or
 * SIZE_MAX if its key was shown already.  Computed once per document.
 */
struct tls_keys {
	size_t *show;		/* ntls_vars entries, NULL if none */
	bool any;		/* a variable other than errno was asked */
};

static bool same_key(const char *a, const char *b)
{
	/* equal once every invalid byte is U+FFFD */
	const unsigned char *x = (const unsigned char *)a, *y = (const unsigned char *)b;
	size_t nx = strlen(a), ny = strlen(b), i = 0, j = 0;
	while (i < nx && j < ny) {
		size_t lx = agent_utf8_seq(x + i, nx - i);
		size_t ly = agent_utf8_seq(y + j, ny - j);
		if (lx != ly || (lx && memcmp(x + i, y + j, lx)))
			return false;
		i += lx ? lx : 1;
		j += ly ? ly : 1;
	}
	return i == nx && j == ny;
}

static int tls_keys_init(struct tls_keys *tk, const struct dbs_snapshot *snap)
{
	size_t n = snap->ntls_vars;
	tk->show = NULL;
	tk->any = false;
	if (!n)
		return 0;
	tk->show = malloc(n * sizeof *tk->show);
	if (!tk->show)
		return -1;
	for (size_t i = 0; i < n; i++) {
		const struct dbs_tls_var *v = &snap->tls_vars[i];
		tk->show[i] = SIZE_MAX;
		if (v->is_errno)
			continue;
		tk->any = true;
		bool seen = false;
		for (size_t j = 0; j < i && !seen; j++)
			seen = !snap->tls_vars[j].is_errno &&
			       same_key(snap->tls_vars[j].name, v->name);
		if (seen)
			continue;
		tk->show[i] = i;
		for (size_t j = i + 1; j < n; j++)
			if (!snap->tls_vars[j].is_errno &&
			    same_key(snap->tls_vars[j].name, v->name))
				tk->show[i] = j;
	}
	return 0;
}

static void thread_extras_json(struct jw *w, const struct dbs_snapshot *snap,
			       const struct tls_keys *tk,
			       const struct dbs_thread *th)
{
	size_t ntls = th->ntls < snap->ntls_vars ? th->ntls : snap->ntls_vars;
	/* an object whenever a variable was asked for, empty if this thread
	 * has no values; a key whose last variable lies beyond the thread's
	 * values shows the last one it has */
	jw_key(w, "tls");
	if (tk->any) {
		jw_obj(w);
		for (size_t i = 0; i < ntls; i++) {
			size_t j = tk->show[i];
			if (j == SIZE_MAX)
				continue;
			while (j >= ntls)	/* the last one this thread has */
				do
					j--;
				while (snap->tls_vars[j].is_errno ||
				       !same_key(snap->tls_vars[j].name,
						 snap->tls_vars[i].name));
			jw_key(w, snap->tls_vars[i].name);
			tls_entry_json(w, &snap->tls_vars[j], &th->tls[j]);
		}
		jw_obj_end(w);
	} else {
		jw_null(w);
	}
	jw_key(w, "errno");
	size_t e = SIZE_MAX;
	for (size_t i = 0; i < ntls; i++)
		if (snap->tls_vars[i].is_errno)
			e = i;
	if (e != SIZE_MAX)
		errno_json(w, &th->tls[e]);
	else
		jw_null(w);

	jw_key(w, "keys");
	if (th->keys_read) {
		jw_arr(w);
		for (size_t i = 0; i < th->nkeys; i++) {
			jw_obj(w);
			k_int(w, "key", th->keys[i].key);
			if (th->keys[i].unknown)
				k_null(w, "value");
			else
				k_hex(w, "value", th->keys[i].value);
			jw_obj_end(w);
		}
		jw_arr_end(w);
	} else {
		jw_null(w);
	}

	const struct dbs_stack_bounds *st = &th->bounds;
	jw_key(w, "stack_bounds");
	if (st->status == DBS_BOUNDS_UNKNOWN) {
		jw_null(w);
		return;
	}
	static const char *const names[] = { "unknown", "ok", "low", "overflow",
					     "not_a_stack" };
	jw_obj(w);
	k_str(w, "status", names[st->status]);
	k_bool(w, "main", st->main);
	k_hex(w, "low", st->low);
	k_hex(w, "high", st->high);
	jw_key(w, "guard");
	if (st->guard_high) {
		jw_obj(w);
		k_hex(w, "low", st->guard_low);
		k_hex(w, "high", st->guard_high);
		jw_obj_end(w);
	} else {
		jw_null(w);
	}
	if (st->limit)
		k_hex(w, "limit", st->limit);
	else
		k_null(w, "limit");
	k_int(w, "used_bytes", (int64_t)st->used);
	if (st->limit && st->status != DBS_BOUNDS_OVERFLOW)
		k_int(w, "available_bytes", (int64_t)st->avail);
	else
		k_null(w, "available_bytes");
	jw_obj_end(w);
}

static void process_extras_json(struct jw *w, const struct dbs_snapshot *snap)
{
	jw_key(w, "runtimes");
	jw_arr(w);
	for (size_t i = 0; i < snap->nruntimes; i++) {
		jw_obj(w);
		k_str(w, "name", snap->runtimes[i].name);
		k_str(w, "module", snap->runtimes[i].module);
		k_str(w, "note", snap->runtimes[i].note);
		jw_obj_end(w);
	}
	jw_arr_end(w);
	jw_key(w, "tls");
	if (snap->ntls_vars) {
		jw_arr(w);
		for (size_t i = 0; i < snap->ntls_vars; i++) {
			const struct dbs_tls_var *v = &snap->tls_vars[i];
			jw_obj(w);
			k_str(w, "name", v->name);
			k_bool(w, "builtin", v->is_errno);
			k_bool(w, "found", v->found);
			k_str(w, "module", v->module);
			if (v->found)
				k_hex(w, "offset", v->offset);
			else
				k_null(w, "offset");
			k_str(w, "type", v->type_name);
			k_str(w, "c_type", v->c_type);
			k_str(w, "source", v->found ? v->source : NULL);
			k_str(w, "error", v->error);
			jw_obj_end(w);
		}
		jw_arr_end(w);
	} else {
		jw_null(w);
	}
	jw_key(w, "keys");
	if (snap->keys_read) {
		jw_obj(w);
		k_int(w, "max", (int64_t)snap->keys_max);
		jw_key(w, "in_use");
		jw_arr(w);
		for (size_t i = 0; i < snap->nkeys; i++) {
			const struct dbs_key *d = &snap->keys[i];
			jw_obj(w);
			k_int(w, "key", d->key);
			jw_key(w, "destructor");
			if (d->destructor)
				symbol_json(w, &d->destructor_sym);
			else
				jw_null(w);
			jw_obj_end(w);
		}
		jw_arr_end(w);
		jw_obj_end(w);
	} else {
		jw_null(w);
	}
}

/* ---- locks (issue 4) ---------------------------------------------------- */

static void k_tid(struct jw *w, const char *k, pid_t tid)
{
	if (tid > 0)
		k_int(w, k, tid);
	else
		k_null(w, k);
}

static const char *mode_name(enum dbs_wait_mode m)
{
	return m == DBS_MODE_READ ? "read" : m == DBS_MODE_WRITE ? "write" : NULL;
}

/* "ledger_lock", "bank_locks+0x28", or null */
static void symbol_text(struct jw *w, const struct dbs_symbol *s)
{
	if (!s->name) {
		jw_null(w);
		return;
	}
	if (!s->offset) {
		jw_str(w, s->name);
		return;
	}
	char tail[24];
	snprintf(tail, sizeof tail, "+0x%" PRIx64, s->offset);
	jw_str_cat(w, s->name, tail);
}

static void evidence_json(struct jw *w, unsigned ev)
{
	jw_arr(w);
	for (unsigned bit = 1; bit; bit <<= 1)
		if ((ev & bit) && dbs_evidence_name(bit))
			jw_str(w, dbs_evidence_name(bit));
	jw_arr_end(w);
}

/* A reference to locks[i], self-describing. */
static void lockref_json(struct jw *w, const struct dbs_locks *L, size_t i)
{
	if (i >= L->n) {
		jw_null(w);
		return;
	}
	const struct dbs_lock *l = &L->v[i];
	jw_obj(w);
	k_int(w, "index", (int64_t)i);
	k_hex(w, "addr", l->addr);
	k_str(w, "kind", dbs_lock_kind_name(l->kind));
	jw_key(w, "symbol");
	symbol_text(w, &l->sym);
	jw_obj_end(w);
}

static void blocked_on_json(struct jw *w, const struct dbs_snapshot *snap,
			    const struct dbs_thread *th)
{
	const struct dbs_blocked_on *b = th->blocked_on;
	if (!b) {
		jw_null(w);
		return;
	}
	const struct dbs_locks *L = snap->locks;
	const struct dbs_lock *l = L && b->lock < L->n ? &L->v[b->lock] : NULL;
	jw_obj(w);
	k_str(w, "kind", dbs_lock_kind_name(b->kind));
	k_str(w, "mode", mode_name(b->mode));
	k_hex(w, "futex", b->futex);
	k_hex(w, "futex_op", b->futex_op);
	k_hex(w, "futex_val", b->futex_val);
	k_str(w, "syscall", arch_syscall_name(snap->arch, b->nr));
	if (b->object)
		k_hex(w, "object", b->object);
	else
		k_null(w, "object");
	jw_key(w, "symbol");
	if (l)
		symbol_text(w, &l->sym);
	else
		jw_null(w);
	k_tid(w, "owner", b->owner);
	k_str(w, "owner_state", dbs_owner_state_name(l ? l->owner_state
						      : DBS_OWNER_NONE));
	if (l)
		k_int(w, "lock", (int64_t)b->lock);
	else
		k_null(w, "lock");
	jw_key(w, "evidence");
	evidence_json(w, b->evidence);
	k_bool(w, "in_graph", b->in_graph);
	k_bool(w, "parked", b->parked);
	k_str(w, "frame", b->frame);
	/* the function that waits: what an unidentified futex is about */
	const struct dbs_frame *cf = agent_wait_caller(th);
	char cname[512];
	k_str(w, "caller", cf ? agent_frame_name(cf, cname, sizeof cname) : NULL);
	k_str(w, "note", b->note);
	jw_obj_end(w);
}

static void lock_state_json(struct jw *w, const struct dbs_lock *l)
{
	jw_obj(w);
	switch (l->kind) {
	case DBS_LOCK_MUTEX: {
		const struct dbs_mutex_info *m = &l->u.mutex;
		k_str(w, "type", dbs_mutex_type_name(m->type));
		k_bool(w, "robust", m->robust);
		k_bool(w, "pi", m->pi);
		k_bool(w, "pp", m->pp);
		k_bool(w, "pshared", m->pshared);
		k_bool(w, "elision", m->elision);
		k_hex(w, "lock_word", m->lock);
		k_int(w, "owner_field", m->owner_field);
		k_int(w, "count", m->count);
		k_int(w, "nusers", m->nusers);
		k_hex(w, "kind_word", (uint32_t)m->kind_word);
		k_bool(w, "owner_died", m->owner_died);
		k_bool(w, "inconsistent", m->inconsistent);
		k_bool(w, "notrecoverable", m->notrecoverable);
		if (m->pp)
			k_int(w, "ceiling", m->ceiling);
		else
			k_null(w, "ceiling");
		break;
	}
	case DBS_LOCK_RWLOCK: {
		const struct dbs_rwlock_info *r = &l->u.rwlock;
		k_hex(w, "readers_word", r->readers_word);
		k_int(w, "readers", r->nreaders);
		k_bool(w, "write_phase", r->wrphase);
		k_bool(w, "write_locked", r->wrlocked);
		k_bool(w, "readers_waiting", r->rwaiting);
		k_int(w, "cur_writer", r->cur_writer);
		k_int(w, "writers", r->writers);
		k_bool(w, "shared", r->shared);
		k_int(w, "flags", r->flags);
		break;
	}
	case DBS_LOCK_COND: {
		const struct dbs_cond_info *c = &l->u.cond;
		k_hex(w, "wseq", c->wseq);
		k_hex(w, "g1_start", c->g1_start);
		k_hex(w, "wrefs", c->wrefs);
		k_int(w, "waiters", c->nwaiters);
		jw_key(w, "g_signals");
		jw_arr(w);
		jw_int(w, c->g_signals[0]);
		jw_int(w, c->g_signals[1]);
		jw_arr_end(w);
		k_bool(w, "pshared", c->pshared);
		k_str(w, "clock", c->monotonic ? "monotonic" : "realtime");
		if (c->mutex)
			k_hex(w, "mutex", c->mutex);
		else
			k_null(w, "mutex");
		break;
	}
	case DBS_LOCK_SEM:
		k_int(w, "value", l->u.sem.value);
		k_int(w, "waiters", l->u.sem.nwaiters);
		k_bool(w, "pshared", l->u.sem.pshared);
		break;
	case DBS_LOCK_BARRIER:
		k_int(w, "count", l->u.barrier.count);
		k_int(w, "arrived", (int64_t)l->u.barrier.in -
				    (int64_t)l->u.barrier.current_round);
		k_int(w, "in", l->u.barrier.in);
		k_int(w, "current_round", l->u.barrier.current_round);
		k_bool(w, "pshared", l->u.barrier.pshared);
		break;
	case DBS_LOCK_JOIN:
		k_tid(w, "target", l->u.join.target);
		k_hex(w, "pthread", l->u.join.pthread);
		break;
	case DBS_LOCK_FUTEX:
		break;	/* not called for it */
	}
	jw_obj_end(w);
}

static void lock_json(struct jw *w, const struct dbs_lock *l)
{
	jw_obj(w);
	k_str(w, "kind", dbs_lock_kind_name(l->kind));
	k_hex(w, "addr", l->addr);
	k_bool(w, "object_known", l->object_known);
	jw_key(w, "symbol");
	if (l->sym.name)
		symbol_json(w, &l->sym);
	else
		jw_null(w);
	k_tid(w, "owner", l->owner);
	k_str(w, "owner_state", dbs_owner_state_name(l->owner_state));
	k_bool(w, "orphaned", l->orphaned);
	if (l->nholders)
		k_int(w, "holders", l->nholders);
	else
		k_null(w, "holders");
	jw_key(w, "waiters");
	jw_arr(w);
	for (size_t i = 0; i < l->nwaiters; i++) {
		jw_obj(w);
		k_int(w, "tid", l->waiters[i].tid);
		k_str(w, "mode", mode_name(l->waiters[i].mode));
		jw_obj_end(w);
	}
	jw_arr_end(w);
	jw_key(w, "words");
	if (l->nwords)
		jw_hexbytes(w, l->words, l->nwords);
	else
		jw_null(w);
	k_str(w, "note", l->note);
	/* the decoded state under the kind's own name ("mutex": {...});
	 * a futex has none */
	if (l->decoded && l->kind != DBS_LOCK_FUTEX) {
		jw_key(w, dbs_lock_kind_name(l->kind));
		lock_state_json(w, l);
	}
	jw_obj_end(w);
}

/* "threads" and "locks" of a cycle or a stall, in their order. */
static void chain_json(struct jw *w, const struct dbs_locks *L,
		       const pid_t *threads, size_t nthreads,
		       const size_t *locks, size_t nlocks)
{
	jw_key(w, "threads");
	jw_arr(w);
	for (size_t j = 0; j < nthreads; j++)
		jw_int(w, threads[j]);
	jw_arr_end(w);
	jw_key(w, "locks");
	jw_arr(w);
	for (size_t j = 0; j < nlocks; j++)
		lockref_json(w, L, locks[j]);
	jw_arr_end(w);
}

static void locks_json(struct jw *w, const struct dbs_snapshot *snap)
{
	const struct dbs_locks *L = snap->locks;
	jw_key(w, "locks");
	jw_arr(w);
	for (size_t i = 0; L && i < L->n; i++)
		lock_json(w, &L->v[i]);
	jw_arr_end(w);

	jw_key(w, "deadlocks");
	jw_arr(w);
	for (size_t i = 0; L && i < L->ndeadlocks; i++) {
		const struct dbs_deadlock *d = &L->deadlocks[i];
		jw_obj(w);
		chain_json(w, L, d->threads, d->n, d->locks, d->n);
		jw_obj_end(w);
	}
	jw_arr_end(w);

	jw_key(w, "stalls");
	jw_arr(w);
	for (size_t i = 0; L && i < L->nstalls; i++) {
		const struct dbs_stall *st = &L->stalls[i];
		jw_obj(w);
		chain_json(w, L, st->threads, st->n, st->locks, st->n ? st->n - 1 : 0);
		jw_key(w, "end");
		jw_obj(w);
		k_int(w, "tid", st->threads[st->n - 1]);
		k_str(w, "reason", dbs_stall_end_name(st->end));
		k_str(w, "syscall", st->end_syscall >= 0
			  ? arch_syscall_name(snap->arch, st->end_syscall) : NULL);
		jw_key(w, "lock");
		if (st->end_lock != SIZE_MAX)
			lockref_json(w, L, st->end_lock);
		else
			jw_null(w);
		jw_obj_end(w);
		jw_obj_end(w);
	}
	jw_arr_end(w);

	jw_key(w, "orphaned_locks");
	jw_arr(w);
	for (size_t i = 0; L && i < L->n; i++)
		if (L->v[i].orphaned)
			lockref_json(w, L, i);
	jw_arr_end(w);
}

static void thread_json(struct jw *w, const struct dbs_snapshot *snap,
			const struct tls_keys *tk, const struct dbs_thread *th)
{
	jw_obj(w);
	k_int(w, "tid", th->tid);
	k_tid(w, "ns_tid", th->ns_tid);	/* 0: unknown */
	jw_key(w, "name");
	jw_strn(w, th->name, th->name_len);
	if (th->name && !agent_utf8_lossless(th->name, th->name_len)) {
		jw_key(w, "name_hex");
		jw_hexbytes(w, th->name, th->name_len);
	}
	k_bool(w, "main", th->tid == snap->pid);

	if (th->proc_valid) {
		char st[2] = { th->state, 0 };
		k_str(w, "state", th->state ? st : "?");
		k_str(w, "state_name", agent_state_name(th->state));
		k_str(w, "wchan", th->wchan[0] ? th->wchan : NULL);
	} else {
		k_null(w, "state");
		k_null(w, "state_name");
		k_null(w, "wchan");
	}
	k_str(w, "proc_read", !th->proc_valid ? "failed" :
			      th->proc_before_stop ? "before_stop" : "after_resume");
	jw_key(w, "syscall");
	syscall_json(w, snap, th);

	if (th->proc_valid) {
		jw_key(w, "cpu");
		jw_obj(w);
		jw_key(w, "user_s");
		jw_real(w, th->utime_s);
		jw_key(w, "system_s");
		jw_real(w, th->stime_s);
		jw_obj_end(w);
		jw_key(w, "signals");
		jw_obj(w);
		k_hex(w, "blocked", th->sigblk);
		k_hex(w, "pending", th->sigpnd);
		jw_obj_end(w);
		jw_key(w, "sched");
		jw_obj(w);
		k_str(w, "policy", agent_policy_name(th->policy));
		k_int(w, "priority", th->priority);
		k_int(w, "nice", th->nice);
		k_int(w, "rt_priority", th->rt_priority);
		k_int(w, "processor", th->processor);
		jw_key(w, "affinity");
		jw_strn(w, th->cpus_allowed,
			strnlen(th->cpus_allowed, sizeof th->cpus_allowed));
		jw_obj_end(w);
	} else {
		k_null(w, "cpu");
		k_null(w, "signals");
		k_null(w, "sched");
	}

	jw_key(w, "regs");
	if (th->have_regs) {
		jw_obj(w);
		k_hex(w, "pc", th->pc);
		k_hex(w, "sp", th->sp);
		k_hex(w, "tp", th->tp);
		jw_obj_end(w);
	} else {
		jw_null(w);
	}

	jw_key(w, "pthread");
	if (th->have_pthread) {
		jw_obj(w);
		k_hex(w, "id", th->pthread);
		k_str(w, "td_state", agent_td_state_name(th->td_state));
		jw_key(w, "start_routine");
		if (th->is_main)
			jw_null(w);
		else
			symbol_json(w, &th->start);
		jw_obj_end(w);
	} else {
		jw_null(w);
	}
	jw_key(w, "stack");
	stack_json(w, &th->stack);
	k_bool(w, "stopped", th->stopped);
	k_bool(w, "straggler", th->straggler);
	k_bool(w, "jobctl_stopped", th->jobctl_stopped);
	jw_key(w, "blocked_on");
	blocked_on_json(w, snap, th);
	errors_array(w, "errors", th->errors, th->nerrors);
	thread_extras_json(w, snap, tk, th);
	jw_obj_end(w);
}

static void snapshot_json(struct jw *w, const struct dbs_snapshot *snap,
			  const struct agent_opts *o, const struct tls_keys *tk)
{
	jw_obj(w);
	k_str(w, "format_version", TINSPECT_FORMAT_VERSION);
	if (o->update)
		k_int(w, "update", (int64_t)o->update);
	jw_key(w, "tool");
	jw_obj(w);
	k_str(w, "name", "tinspect");
	k_str(w, "version", TINSPECT_VERSION);
	jw_obj_end(w);

	char ts[64];
	struct tm tm;
	gmtime_r(&snap->captured_at.tv_sec, &tm);
	size_t l = strftime(ts, sizeof ts, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(ts + l, sizeof ts - l, ".%06ldZ", snap->captured_at.tv_nsec / 1000);
	k_str(w, "captured_at", ts);

	jw_key(w, "process");
	jw_obj(w);
	k_int(w, "pid", snap->pid);
	k_str(w, "exe", snap->exe);
	jw_key(w, "cmdline");
	jw_arr(w);
	for (size_t i = 0; i < snap->argc; i++)
		jw_str(w, snap->argv[i]);
	jw_arr_end(w);
	k_str(w, "arch", snap->arch->name);
	k_str(w, "glibc_version", snap->glibc_version[0] ? snap->glibc_version
							 : NULL);
	jw_key(w, "thread_db");
	jw_obj(w);
	k_str(w, "status", dbs_tdb_status_name(snap->tdb_status));
	k_str(w, "detail", snap->tdb_detail);
	k_str(w, "library", snap->thread_db_path);
	jw_obj_end(w);
	k_str(w, "module_map",
	      snap->modmap_source == PSVC_MODMAP_LINK_MAP ? "link_map" :
	      snap->modmap_source == PSVC_MODMAP_MAPS_ONLY ? "maps_only" : "none");
	k_int(w, "module_generation", (int64_t)snap->module_generation);
	process_extras_json(w, snap);
	jw_obj_end(w);

	jw_key(w, "capture");
	jw_obj(w);
	k_str(w, "mode", "all-stop");
	k_int(w, "freeze_us", (int64_t)(snap->freeze_ns / 1000));
	k_int(w, "duration_us", (int64_t)(snap->duration_ns / 1000));
	k_int(w, "threads_seen", (int64_t)snap->threads_seen);
	k_int(w, "threads_stopped", (int64_t)snap->threads_stopped);
	k_int(w, "threads_vanished", (int64_t)snap->threads_vanished);
	k_int(w, "stragglers", (int64_t)snap->stragglers);
	k_int(w, "threads_with_errors", (int64_t)snap->threads_with_errors);
	jw_key(w, "timings");
	jw_obj(w);
	const struct dbs_timings *st = &snap->timings;
	k_int(w, "scan_us", (int64_t)(st->scan_ns / 1000));
	k_int(w, "stop_us", (int64_t)(st->stop_ns / 1000));
	k_int(w, "regs_us", (int64_t)(st->regs_ns / 1000));
	k_int(w, "memory_us", (int64_t)(st->memory_ns / 1000));
	k_int(w, "thread_db_us", (int64_t)(st->thread_db_ns / 1000));
	k_int(w, "resume_us", (int64_t)(st->resume_ns / 1000));
	k_int(w, "analyse_us", (int64_t)(st->analyse_ns / 1000));
	jw_obj_end(w);
	k_bool(w, "stacks", snap->stacks);
	k_int(w, "stack_bytes_copied", (int64_t)snap->stack_bytes_copied);
	errors_array(w, "errors", snap->errors, snap->nerrors);
	errors_array(w, "warnings", snap->warnings, snap->nwarnings);
	jw_obj_end(w);

	jw_key(w, "threads");
	jw_arr(w);
	for (size_t i = 0; i < snap->nthreads; i++)
		thread_json(w, snap, tk, &snap->threads[i]);
	jw_arr_end(w);
	locks_json(w, snap);
	jw_obj_end(w);
}

int render_json(FILE *out, const struct dbs_snapshot *snap,
		const struct agent_opts *o)
{
	struct tls_keys tk;
	if (tls_keys_init(&tk, snap))
		return -1;
	struct jw w;
	jw_init(&w, out, o->pretty);
	snapshot_json(&w, snap, o, &tk);
	int r = jw_finish(&w);
	free(tk.show);
	return r;
}
