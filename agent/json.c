/*
 * json.c: the versioned JSON document (schema/tinspect-snapshot.schema.json).
 * Every string that comes from the target (thread names, paths, command
 * line, ELF symbol names) is attacker-controlled bytes: it is made valid
 * UTF-8 here (invalid sequences become U+FFFD, and the raw bytes are kept
 * as hex beside a lossy thread name), so the document always parses.
 * 64-bit values are "0x..." strings: JSON readers with 53-bit numbers must
 * not lose address bits.
 */
#include "agent.h"

#include <inttypes.h>
#include <stdio.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "config.h"

/* Length of the valid UTF-8 sequence at s (RFC 3629), 0 if invalid. */
size_t agent_utf8_seq(const unsigned char *s, size_t n)
{
	unsigned c = s[0];
	size_t len;
	unsigned min;
	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		len = 2, min = 0x80;
	else if (c >= 0xe0 && c <= 0xef)
		len = 3, min = 0x800;
	else if (c >= 0xf0 && c <= 0xf4)
		len = 4, min = 0x10000;
	else
		return 0;
	if (len > n)
		return 0;
	unsigned cp = c & (0x7f >> len);
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3f);
	}
	if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return len;
}

/* A JSON string of the bytes, lossy where they are not UTF-8. */
static json_t *jstr_bytes(const char *s, size_t n, bool *ret_lossy)
{
	if (ret_lossy)
		*ret_lossy = false;
	if (!s)
		return json_null();
	char *buf = malloc(n * 3 + 1);
	if (!buf)
		return json_null();
	size_t o = 0;
	const unsigned char *u = (const unsigned char *)s;
	for (size_t i = 0; i < n;) {
		size_t l = u[i] ? agent_utf8_seq(u + i, n - i) : 0;
		if (l) {
			memcpy(buf + o, u + i, l);
			o += l;
			i += l;
		} else {
			memcpy(buf + o, "\xef\xbf\xbd", 3);	/* U+FFFD */
			o += 3;
			i++;
			if (ret_lossy)
				*ret_lossy = true;
		}
	}
	json_t *j = json_stringn(buf, o);
	free(buf);
	return j ? j : json_null();
}

static json_t *jstr(const char *s)
{
	return s ? jstr_bytes(s, strlen(s), NULL) : json_null();
}

static json_t *jhex(uint64_t v)
{
	char b[24];
	snprintf(b, sizeof b, "0x%" PRIx64, v);
	return json_string(b);
}

static json_t *hexbytes(const char *s, size_t n)
{
	char *b = malloc(n * 2 + 1);
	if (!b)
		return json_null();
	for (size_t i = 0; i < n; i++)
		snprintf(b + 2 * i, 3, "%02x", (unsigned char)s[i]);
	json_t *j = json_stringn(b, n * 2);
	free(b);
	return j;
}

static void set(json_t *o, const char *k, json_t *v)
{
	json_object_set_new(o, k, v ? v : json_null());
}

static json_t *errors_array(char **errs, size_t n)
{
	json_t *a = json_array();
	for (size_t i = 0; i < n; i++)
		json_array_append_new(a, jstr(errs[i]));
	return a;
}

static json_t *symbol_json(const struct dbs_symbol *s)
{
	json_t *o = json_object();
	set(o, "addr", jhex(s->addr));
	set(o, "module", jstr(s->module));
	set(o, "symbol", jstr(s->name));
	set(o, "offset", json_integer((json_int_t)s->offset));
	return o;
}

static json_t *syscall_json(const struct dbs_snapshot *snap,
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
	if (nr < 0)
		return json_null();
	json_t *o = json_object();
	set(o, "nr", json_integer(nr));
	set(o, "name", jstr(arch_syscall_name(snap->arch, nr)));
	json_t *a = json_array();
	for (int i = 0; i < 6; i++)
		json_array_append_new(a, jhex(args[i]));
	set(o, "args", a);
	set(o, "restarting", json_boolean(restarting));
	set(o, "source", json_string(source));
	return o;
}

static json_t *frame_json(const struct dbs_frame *f)
{
	json_t *o = json_object();
	set(o, "pc", jhex(f->pc));
	set(o, "inlined", json_boolean(f->inlined));
	set(o, "module", jstr(f->module));
	set(o, "build_id", jstr(f->build_id));
	set(o, "symbol", jstr(f->symbol));
	if (f->mangled)
		set(o, "mangled", jstr(f->mangled));
	set(o, "offset", f->symbol ? json_integer((json_int_t)f->offset) : json_null());
	set(o, "file", jstr(f->file));
	set(o, "line", f->line ? json_integer(f->line) : json_null());
	return o;
}

static json_t *stack_json(const struct dbs_stack *st)
{
	if (st->end == DBS_STACK_NONE)
		return json_null();
	json_t *o = json_object();
	json_t *a = json_array();
	for (size_t i = 0; i < st->nframes; i++)
		json_array_append_new(a, frame_json(&st->frames[i]));
	set(o, "frames", a);
	set(o, "end", json_string(dbs_stack_end_name(st->end)));
	set(o, "truncated", json_boolean(st->end == DBS_STACK_TRUNCATED));
	set(o, "error", jstr(st->error));
	set(o, "copied_bytes", json_integer((json_int_t)(st->copied_to - st->copied_from)));
	return o;
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
static json_t *tls_value_json(const struct dbs_tls_var *var,
			      const struct dbs_tls_value *v)
{
	const unsigned char *b = v->bytes;
	uint64_t u = 0;
	if (!b)
		return json_null();
	if (var->size <= 8)
		memcpy(&u, b, var->size);
	char buf[32];
	switch (var->type) {
	case DBS_TLS_INT: {
		int64_t x = var->size == 1 ? (int8_t)u : var->size == 2 ? (int16_t)u :
			    var->size == 4 ? (int32_t)u : (int64_t)u;
		if (var->size < 8)
			return json_integer(x);
		snprintf(buf, sizeof buf, "%" PRId64, x);
		return json_string(buf);
	}
	case DBS_TLS_UNSIGNED:
	case DBS_TLS_BOOL:
		if (var->type == DBS_TLS_BOOL)
			return json_boolean(u != 0);
		if (var->size < 8)
			return json_integer((json_int_t)u);
		snprintf(buf, sizeof buf, "%" PRIu64, u);
		return json_string(buf);
	case DBS_TLS_HEX:
	case DBS_TLS_POINTER:
		return jhex(u);
	case DBS_TLS_FLOAT: {
		double d;
		if (var->size == 4) {
			float f;
			memcpy(&f, b, 4);
			d = f;
		} else {
			memcpy(&d, b, 8);
		}
		return json_real(d);	/* NaN and infinities become null */
	}
	case DBS_TLS_STRING:
		return v->str ? jstr_bytes(v->str, v->str_len, NULL) : json_null();
	case DBS_TLS_BYTES:
	case DBS_TLS_AUTO:
		return hexbytes((const char *)b, var->size);
	}
	return json_null();
}

static json_t *tls_entry_json(const struct dbs_tls_var *var,
			      const struct dbs_tls_value *v)
{
	json_t *o = json_object();
	set(o, "address", v->have_addr ? jhex(v->addr) : json_null());
	set(o, "type", json_string(var->type_name));
	set(o, "status", json_string(tls_status_name(v->status)));
	set(o, "value", v->status == DBS_TLS_OK ? tls_value_json(var, v)
						: json_null());
	if (var->type == DBS_TLS_STRING && v->status == DBS_TLS_OK && v->bytes) {
		uint64_t p;
		memcpy(&p, v->bytes, sizeof p);
		set(o, "pointer", jhex(p));
		set(o, "truncated", json_boolean(v->str_truncated));
		bool lossy = false;
		json_t *tmp = v->str ? jstr_bytes(v->str, v->str_len, &lossy) : NULL;
		json_decref(tmp);
		if (lossy)
			set(o, "value_hex", hexbytes(v->str, v->str_len));
	}
	if (var->type == DBS_TLS_POINTER && v->status == DBS_TLS_OK &&
	    v->ptr_sym.module)
		set(o, "symbol", symbol_json(&v->ptr_sym));
	if (v->error)
		set(o, "error", jstr(v->error));
	return o;
}

static json_t *errno_json(const struct dbs_tls_var *var,
			  const struct dbs_tls_value *v)
{
	json_t *o = json_object();
	int e = 0;
	bool ok = v->status == DBS_TLS_OK && v->bytes;
	if (ok)
		memcpy(&e, v->bytes, sizeof e);
	const char *name = ok && e ? strerrorname_np(e) : NULL;
	set(o, "value", ok ? json_integer(e) : json_null());
	set(o, "name", name ? json_string(name) : json_null());
	set(o, "address", v->have_addr ? jhex(v->addr) : json_null());
	set(o, "status", json_string(tls_status_name(v->status)));
	if (v->error)
		set(o, "error", jstr(v->error));
	(void)var;
	return o;
}

static void thread_extras_json(json_t *o, const struct dbs_snapshot *snap,
			       const struct dbs_thread *th)
{
	json_t *tls = NULL, *err = NULL;
	for (size_t i = 0; i < th->ntls && i < snap->ntls_vars; i++) {
		const struct dbs_tls_var *var = &snap->tls_vars[i];
		if (var->is_errno) {
			err = errno_json(var, &th->tls[i]);
			continue;
		}
		if (!tls)
			tls = json_object();
		/* an object key must be valid UTF-8 too (jansson drops it
		 * otherwise) */
		json_t *key = jstr(var->name);
		set(tls, json_is_string(key) ? json_string_value(key) : "?",
		    tls_entry_json(var, &th->tls[i]));
		json_decref(key);
	}
	bool any_tls = false;
	for (size_t i = 0; i < snap->ntls_vars; i++)
		any_tls |= !snap->tls_vars[i].is_errno;
	if (!tls && any_tls)
		tls = json_object();	/* asked, but nothing for this thread */
	set(o, "tls", tls ? tls : json_null());
	set(o, "errno", err ? err : json_null());

	if (th->keys_read) {
		json_t *a = json_array();
		for (size_t i = 0; i < th->nkeys; i++) {
			json_t *k = json_object();
			set(k, "key", json_integer(th->keys[i].key));
			set(k, "value", jhex(th->keys[i].value));
			json_array_append_new(a, k);
		}
		set(o, "keys", a);
	} else {
		set(o, "keys", json_null());
	}

	const struct dbs_stack_bounds *st = &th->bounds;
	if (st->status == DBS_BOUNDS_UNKNOWN) {
		set(o, "stack_bounds", json_null());
		return;
	}
	json_t *s = json_object();
	static const char *const names[] = { "unknown", "ok", "low", "overflow",
					     "not_a_stack" };
	set(s, "status", json_string(names[st->status]));
	set(s, "main", json_boolean(st->main));
	set(s, "low", jhex(st->low));
	set(s, "high", jhex(st->high));
	if (st->guard_high) {
		json_t *g = json_object();
		set(g, "low", jhex(st->guard_low));
		set(g, "high", jhex(st->guard_high));
		set(s, "guard", g);
	} else {
		set(s, "guard", json_null());
	}
	set(s, "limit", st->limit ? jhex(st->limit) : json_null());
	set(s, "used_bytes", json_integer((json_int_t)st->used));
	set(s, "available_bytes", st->limit && st->status != DBS_BOUNDS_OVERFLOW
					  ? json_integer((json_int_t)st->avail)
					  : json_null());
	set(o, "stack_bounds", s);
}

static json_t *process_extras_json(json_t *p, const struct dbs_snapshot *snap)
{
	if (snap->ntls_vars) {
		json_t *a = json_array();
		for (size_t i = 0; i < snap->ntls_vars; i++) {
			const struct dbs_tls_var *v = &snap->tls_vars[i];
			json_t *o = json_object();
			set(o, "name", jstr(v->name));
			set(o, "builtin", json_boolean(v->is_errno));
			set(o, "found", json_boolean(v->found));
			set(o, "module", jstr(v->module));
			set(o, "offset", v->found ? jhex(v->offset) : json_null());
			set(o, "type", json_string(v->type_name));
			set(o, "c_type", jstr(v->c_type));
			set(o, "source", v->found ? jstr(v->source) : json_null());
			set(o, "error", jstr(v->error));
			json_array_append_new(a, o);
		}
		set(p, "tls", a);
	} else {
		set(p, "tls", json_null());
	}
	if (snap->keys_read) {
		json_t *k = json_object();
		set(k, "max", json_integer((json_int_t)snap->keys_max));
		json_t *a = json_array();
		for (size_t i = 0; i < snap->nkeys; i++) {
			const struct dbs_key *d = &snap->keys[i];
			json_t *o = json_object();
			set(o, "key", json_integer(d->key));
			set(o, "destructor", d->destructor
					     ? symbol_json(&d->destructor_sym)
					     : json_null());
			json_array_append_new(a, o);
		}
		set(k, "in_use", a);
		set(p, "keys", k);
	} else {
		set(p, "keys", json_null());
	}
	return p;
}

/* ---- locks (issue 4) ---------------------------------------------------- */

static json_t *jtid(pid_t tid)
{
	return tid > 0 ? json_integer(tid) : json_null();
}

static const char *mode_name(enum dbs_wait_mode m)
{
	return m == DBS_MODE_READ ? "read" : m == DBS_MODE_WRITE ? "write" : NULL;
}

/* "ledger_lock", "bank_locks+0x28", or null */
static json_t *symbol_text(const struct dbs_symbol *s)
{
	if (!s->name)
		return json_null();
	if (!s->offset)
		return jstr(s->name);
	char *b;
	if (asprintf(&b, "%s+0x%" PRIx64, s->name, s->offset) < 0)
		return json_null();
	json_t *j = jstr(b);
	free(b);
	return j;
}

static json_t *evidence_json(unsigned ev)
{
	json_t *a = json_array();
	for (unsigned bit = 1; bit; bit <<= 1)
		if ((ev & bit) && dbs_evidence_name(bit))
			json_array_append_new(a, json_string(dbs_evidence_name(bit)));
	return a;
}

/* A reference to locks[i], self-describing. */
static json_t *lockref_json(const struct dbs_locks *L, size_t i)
{
	if (i >= L->n)
		return json_null();
	const struct dbs_lock *l = &L->v[i];
	json_t *o = json_object();
	set(o, "index", json_integer((json_int_t)i));
	set(o, "addr", jhex(l->addr));
	set(o, "kind", json_string(dbs_lock_kind_name(l->kind)));
	set(o, "symbol", symbol_text(&l->sym));
	return o;
}

static json_t *blocked_on_json(const struct dbs_snapshot *snap,
			       const struct dbs_thread *th)
{
	const struct dbs_blocked_on *b = th->blocked_on;
	if (!b)
		return json_null();
	const struct dbs_locks *L = snap->locks;
	const struct dbs_lock *l = L && b->lock < L->n ? &L->v[b->lock] : NULL;
	json_t *o = json_object();
	set(o, "kind", json_string(dbs_lock_kind_name(b->kind)));
	set(o, "mode", mode_name(b->mode) ? json_string(mode_name(b->mode)) : json_null());
	set(o, "futex", jhex(b->futex));
	set(o, "futex_op", jhex(b->futex_op));
	set(o, "futex_val", jhex(b->futex_val));
	set(o, "syscall", jstr(arch_syscall_name(snap->arch, b->nr)));
	set(o, "object", b->object ? jhex(b->object) : json_null());
	set(o, "symbol", l ? symbol_text(&l->sym) : json_null());
	set(o, "owner", jtid(b->owner));
	set(o, "owner_state", json_string(dbs_owner_state_name(
				      l ? l->owner_state : DBS_OWNER_NONE)));
	set(o, "lock", l ? json_integer((json_int_t)b->lock) : json_null());
	set(o, "evidence", evidence_json(b->evidence));
	set(o, "in_graph", json_boolean(b->in_graph));
	set(o, "parked", json_boolean(b->parked));
	set(o, "frame", jstr(b->frame));
	set(o, "note", jstr(b->note));
	return o;
}

static json_t *lock_state_json(const struct dbs_lock *l)
{
	json_t *o = json_object();
	switch (l->kind) {
	case DBS_LOCK_MUTEX: {
		const struct dbs_mutex_info *m = &l->u.mutex;
		set(o, "type", json_string(dbs_mutex_type_name(m->type)));
		set(o, "robust", json_boolean(m->robust));
		set(o, "pi", json_boolean(m->pi));
		set(o, "pp", json_boolean(m->pp));
		set(o, "pshared", json_boolean(m->pshared));
		set(o, "elision", json_boolean(m->elision));
		set(o, "lock_word", jhex(m->lock));
		set(o, "owner_field", json_integer(m->owner_field));
		set(o, "count", json_integer(m->count));
		set(o, "nusers", json_integer(m->nusers));
		set(o, "kind_word", jhex((uint32_t)m->kind_word));
		set(o, "owner_died", json_boolean(m->owner_died));
		set(o, "inconsistent", json_boolean(m->inconsistent));
		set(o, "notrecoverable", json_boolean(m->notrecoverable));
		set(o, "ceiling", m->pp ? json_integer(m->ceiling) : json_null());
		break;
	}
	case DBS_LOCK_RWLOCK: {
		const struct dbs_rwlock_info *r = &l->u.rwlock;
		set(o, "readers_word", jhex(r->readers_word));
		set(o, "readers", json_integer(r->nreaders));
		set(o, "write_phase", json_boolean(r->wrphase));
		set(o, "write_locked", json_boolean(r->wrlocked));
		set(o, "readers_waiting", json_boolean(r->rwaiting));
		set(o, "cur_writer", json_integer(r->cur_writer));
		set(o, "writers", json_integer(r->writers));
		set(o, "shared", json_boolean(r->shared));
		set(o, "flags", json_integer(r->flags));
		break;
	}
	case DBS_LOCK_COND: {
		const struct dbs_cond_info *c = &l->u.cond;
		set(o, "wseq", jhex(c->wseq));
		set(o, "g1_start", jhex(c->g1_start));
		set(o, "wrefs", jhex(c->wrefs));
		set(o, "waiters", json_integer(c->nwaiters));
		json_t *sg = json_array();
		json_array_append_new(sg, json_integer(c->g_signals[0]));
		json_array_append_new(sg, json_integer(c->g_signals[1]));
		set(o, "g_signals", sg);
		set(o, "pshared", json_boolean(c->pshared));
		set(o, "clock", json_string(c->monotonic ? "monotonic" : "realtime"));
		set(o, "mutex", c->mutex ? jhex(c->mutex) : json_null());
		break;
	}
	case DBS_LOCK_SEM:
		set(o, "value", json_integer(l->u.sem.value));
		set(o, "waiters", json_integer(l->u.sem.nwaiters));
		set(o, "pshared", json_boolean(l->u.sem.pshared));
		break;
	case DBS_LOCK_BARRIER:
		set(o, "count", json_integer(l->u.barrier.count));
		set(o, "arrived", json_integer((json_int_t)l->u.barrier.in -
					       (json_int_t)l->u.barrier.current_round));
		set(o, "in", json_integer(l->u.barrier.in));
		set(o, "current_round", json_integer(l->u.barrier.current_round));
		set(o, "pshared", json_boolean(l->u.barrier.pshared));
		break;
	case DBS_LOCK_JOIN:
		set(o, "target", jtid(l->u.join.target));
		set(o, "pthread", jhex(l->u.join.pthread));
		break;
	case DBS_LOCK_FUTEX:
		json_decref(o);
		return NULL;
	}
	return o;
}

static json_t *lock_json(const struct dbs_lock *l)
{
	json_t *o = json_object();
	set(o, "kind", json_string(dbs_lock_kind_name(l->kind)));
	set(o, "addr", jhex(l->addr));
	set(o, "object_known", json_boolean(l->object_known));
	set(o, "symbol", l->sym.name ? symbol_json(&l->sym) : json_null());
	set(o, "owner", jtid(l->owner));
	set(o, "owner_state", json_string(dbs_owner_state_name(l->owner_state)));
	set(o, "orphaned", json_boolean(l->orphaned));
	set(o, "holders", l->nholders ? json_integer(l->nholders) : json_null());
	json_t *w = json_array();
	for (size_t i = 0; i < l->nwaiters; i++) {
		json_t *x = json_object();
		set(x, "tid", json_integer(l->waiters[i].tid));
		const char *m = mode_name(l->waiters[i].mode);
		set(x, "mode", m ? json_string(m) : json_null());
		json_array_append_new(w, x);
	}
	set(o, "waiters", w);
	set(o, "words", l->nwords ? hexbytes((const char *)l->words, l->nwords)
				  : json_null());
	set(o, "note", jstr(l->note));
	json_t *st = l->decoded ? lock_state_json(l) : NULL;
	if (st)
		set(o, dbs_lock_kind_name(l->kind), st);
	return o;
}

static void locks_json(json_t *doc, const struct dbs_snapshot *snap)
{
	json_t *locks = json_array(), *dls = json_array(), *stalls = json_array(),
	       *orph = json_array();
	const struct dbs_locks *L = snap->locks;
	for (size_t i = 0; L && i < L->n; i++) {
		json_array_append_new(locks, lock_json(&L->v[i]));
		if (L->v[i].orphaned)
			json_array_append_new(orph, lockref_json(L, i));
	}
	for (size_t i = 0; L && i < L->ndeadlocks; i++) {
		const struct dbs_deadlock *d = &L->deadlocks[i];
		json_t *o = json_object(), *t = json_array(), *k = json_array();
		for (size_t j = 0; j < d->n; j++) {
			json_array_append_new(t, json_integer(d->threads[j]));
			json_array_append_new(k, lockref_json(L, d->locks[j]));
		}
		set(o, "threads", t);
		set(o, "locks", k);
		json_array_append_new(dls, o);
	}
	for (size_t i = 0; L && i < L->nstalls; i++) {
		const struct dbs_stall *st = &L->stalls[i];
		json_t *o = json_object(), *t = json_array(), *k = json_array();
		for (size_t j = 0; j < st->n; j++) {
			json_array_append_new(t, json_integer(st->threads[j]));
			if (j + 1 < st->n)
				json_array_append_new(k, lockref_json(L, st->locks[j]));
		}
		set(o, "threads", t);
		set(o, "locks", k);
		json_t *e = json_object();
		set(e, "tid", json_integer(st->threads[st->n - 1]));
		set(e, "reason", json_string(dbs_stall_end_name(st->end)));
		set(e, "syscall", st->end_syscall >= 0
				  ? jstr(arch_syscall_name(snap->arch, st->end_syscall))
				  : json_null());
		set(e, "lock", st->end_lock != SIZE_MAX ? lockref_json(L, st->end_lock)
							: json_null());
		set(o, "end", e);
		json_array_append_new(stalls, o);
	}
	set(doc, "locks", locks);
	set(doc, "deadlocks", dls);
	set(doc, "stalls", stalls);
	set(doc, "orphaned_locks", orph);
}

static json_t *thread_json(const struct dbs_snapshot *snap,
			   const struct dbs_thread *th)
{
	json_t *o = json_object();
	set(o, "tid", json_integer(th->tid));
	set(o, "ns_tid", json_integer(th->ns_tid));
	bool lossy = false;
	set(o, "name", th->name ? jstr_bytes(th->name, th->name_len, &lossy)
				: json_null());
	if (lossy)
		set(o, "name_hex", hexbytes(th->name, th->name_len));
	set(o, "main", json_boolean(th->tid == snap->pid));

	if (th->proc_valid) {
		char st[2] = { th->state, 0 };
		set(o, "state", json_string(th->state ? st : "?"));
		set(o, "state_name", json_string(agent_state_name(th->state)));
		set(o, "wchan", th->wchan[0] ? jstr(th->wchan) : json_null());
	} else {
		set(o, "state", json_null());
		set(o, "state_name", json_null());
		set(o, "wchan", json_null());
	}
	set(o, "proc_read", json_string(!th->proc_valid ? "failed" :
					th->proc_before_stop ? "before_stop"
							     : "after_resume"));
	set(o, "syscall", syscall_json(snap, th));

	if (th->proc_valid) {
		json_t *cpu = json_object();
		set(cpu, "user_s", json_real(th->utime_s));
		set(cpu, "system_s", json_real(th->stime_s));
		set(o, "cpu", cpu);
		json_t *sig = json_object();
		set(sig, "blocked", jhex(th->sigblk));
		set(sig, "pending", jhex(th->sigpnd));
		set(o, "signals", sig);
		json_t *sc = json_object();
		set(sc, "policy", json_string(agent_policy_name(th->policy)));
		set(sc, "priority", json_integer(th->priority));
		set(sc, "nice", json_integer(th->nice));
		set(sc, "rt_priority", json_integer(th->rt_priority));
		set(sc, "processor", json_integer(th->processor));
		set(sc, "affinity", jstr(th->cpus_allowed));
		set(o, "sched", sc);
	} else {
		set(o, "cpu", json_null());
		set(o, "signals", json_null());
		set(o, "sched", json_null());
	}

	if (th->have_regs) {
		json_t *r = json_object();
		set(r, "pc", jhex(th->pc));
		set(r, "sp", jhex(th->sp));
		set(r, "tp", jhex(th->tp));
		set(o, "regs", r);
	} else {
		set(o, "regs", json_null());
	}

	if (th->have_pthread) {
		json_t *p = json_object();
		set(p, "id", jhex(th->pthread));
		set(p, "td_state", json_string(agent_td_state_name(th->td_state)));
		set(p, "start_routine", th->is_main ? json_null()
						    : symbol_json(&th->start));
		set(o, "pthread", p);
	} else {
		set(o, "pthread", json_null());
	}
	set(o, "stack", stack_json(&th->stack));
	set(o, "stopped", json_boolean(th->stopped));
	set(o, "straggler", json_boolean(th->straggler));
	set(o, "jobctl_stopped", json_boolean(th->jobctl_stopped));
	set(o, "blocked_on", blocked_on_json(snap, th));
	set(o, "errors", errors_array(th->errors, th->nerrors));
	thread_extras_json(o, snap, th);
	return o;
}

static json_t *snapshot_json(const struct dbs_snapshot *snap,
			     const struct agent_opts *o)
{
	json_t *doc = json_object();
	set(doc, "format_version", json_string(TINSPECT_FORMAT_VERSION));
	if (o->update)
		set(doc, "update", json_integer((json_int_t)o->update));
	json_t *tool = json_object();
	set(tool, "name", json_string("tinspect"));
	set(tool, "version", json_string(TINSPECT_VERSION));
	set(doc, "tool", tool);

	char ts[64];
	struct tm tm;
	gmtime_r(&snap->captured_at.tv_sec, &tm);
	size_t l = strftime(ts, sizeof ts, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(ts + l, sizeof ts - l, ".%06ldZ", snap->captured_at.tv_nsec / 1000);
	set(doc, "captured_at", json_string(ts));

	json_t *p = json_object();
	set(p, "pid", json_integer(snap->pid));
	set(p, "exe", jstr(snap->exe));
	json_t *argv = json_array();
	for (size_t i = 0; i < snap->argc; i++)
		json_array_append_new(argv, jstr(snap->argv[i]));
	set(p, "cmdline", argv);
	set(p, "arch", json_string(snap->arch->name));
	set(p, "glibc_version", snap->glibc_version[0] ? jstr(snap->glibc_version)
						       : json_null());
	json_t *tdb = json_object();
	set(tdb, "status", json_string(dbs_tdb_status_name(snap->tdb_status)));
	set(tdb, "detail", jstr(snap->tdb_detail));
	set(tdb, "library", jstr(snap->thread_db_path));
	set(p, "thread_db", tdb);
	set(p, "module_map", json_string(
		snap->modmap_source == PSVC_MODMAP_LINK_MAP ? "link_map" :
		snap->modmap_source == PSVC_MODMAP_MAPS_ONLY ? "maps_only" : "none"));
	set(p, "module_generation", json_integer((json_int_t)snap->module_generation));
	set(doc, "process", process_extras_json(p, snap));

	json_t *c = json_object();
	set(c, "mode", json_string("all-stop"));
	set(c, "freeze_us", json_integer((json_int_t)(snap->freeze_ns / 1000)));
	set(c, "duration_us", json_integer((json_int_t)(snap->duration_ns / 1000)));
	set(c, "threads_seen", json_integer((json_int_t)snap->threads_seen));
	set(c, "threads_stopped", json_integer((json_int_t)snap->threads_stopped));
	set(c, "threads_vanished", json_integer((json_int_t)snap->threads_vanished));
	set(c, "stragglers", json_integer((json_int_t)snap->stragglers));
	set(c, "threads_with_errors",
	    json_integer((json_int_t)snap->threads_with_errors));
	json_t *jt = json_object();
	const struct dbs_timings *st = &snap->timings;
	set(jt, "scan_us", json_integer((json_int_t)(st->scan_ns / 1000)));
	set(jt, "stop_us", json_integer((json_int_t)(st->stop_ns / 1000)));
	set(jt, "regs_us", json_integer((json_int_t)(st->regs_ns / 1000)));
	set(jt, "memory_us", json_integer((json_int_t)(st->memory_ns / 1000)));
	set(jt, "thread_db_us", json_integer((json_int_t)(st->thread_db_ns / 1000)));
	set(jt, "resume_us", json_integer((json_int_t)(st->resume_ns / 1000)));
	set(jt, "analyse_us", json_integer((json_int_t)(st->analyse_ns / 1000)));
	set(c, "timings", jt);
	set(c, "stacks", json_boolean(snap->stacks));
	set(c, "stack_bytes_copied", json_integer((json_int_t)snap->stack_bytes_copied));
	set(c, "errors", errors_array(snap->errors, snap->nerrors));
	set(c, "warnings", errors_array(snap->warnings, snap->nwarnings));
	set(doc, "capture", c);

	json_t *threads = json_array();
	for (size_t i = 0; i < snap->nthreads; i++)
		json_array_append_new(threads, thread_json(snap, &snap->threads[i]));
	set(doc, "threads", threads);
	locks_json(doc, snap);
	return doc;
}

int render_json(FILE *out, const struct dbs_snapshot *snap,
		const struct agent_opts *o)
{
	json_t *doc = snapshot_json(snap, o);
	if (!doc)
		return -1;
	size_t flags = JSON_PRESERVE_ORDER | (o->pretty ? JSON_INDENT(2) : JSON_COMPACT);
	int r = json_dumpf(doc, out, flags);
	json_decref(doc);
	if (r == 0 && fputc('\n', out) == EOF)
		r = -1;
	return r;
}
