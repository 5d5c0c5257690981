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

/* "errors": [...] of a thread, or "errors"/"warnings" of the capture */
static void thread_errors(struct jw *w, const tinspect_thread *th)
{
	jw_key(w, "errors");
	jw_arr(w);
	for (size_t i = 0; i < tinspect_thread_nerrors(th); i++)
		jw_str(w, tinspect_thread_error(th, i));
	jw_arr_end(w);
}

static void capture_messages(struct jw *w, const tinspect_snapshot *snap)
{
	jw_key(w, "errors");
	jw_arr(w);
	for (size_t i = 0; i < tinspect_snapshot_nerrors(snap); i++)
		jw_str(w, tinspect_snapshot_error(snap, i));
	jw_arr_end(w);
	jw_key(w, "warnings");
	jw_arr(w);
	for (size_t i = 0; i < tinspect_snapshot_nwarnings(snap); i++)
		jw_str(w, tinspect_snapshot_warning(snap, i));
	jw_arr_end(w);
}

static void symbol_json(struct jw *w, const tinspect_symbol *s)
{
	jw_obj(w);
	k_hex(w, "addr", tinspect_symbol_addr(s));
	k_str(w, "module", tinspect_symbol_module(s));
	k_str(w, "symbol", tinspect_symbol_name(s));
	k_int(w, "offset", (int64_t)tinspect_symbol_offset(s));
	jw_obj_end(w);
}

static void syscall_json(struct jw *w, const tinspect_thread *th)
{
	struct tinspect_syscall sc;
	if (tinspect_thread_syscall(th, &sc, sizeof sc)) {
		jw_null(w);
		return;
	}
	jw_obj(w);
	k_int(w, "nr", sc.nr);
	k_str(w, "name", sc.name);
	jw_key(w, "args");
	jw_arr(w);
	for (int i = 0; i < 6; i++)
		jw_hex(w, sc.args[i]);
	jw_arr_end(w);
	k_bool(w, "restarting", sc.restarting);
	k_str(w, "source", sc.source == TINSPECT_SYSCALL_REGISTERS ? "registers" : "proc");
	jw_obj_end(w);
}

static void frame_json(struct jw *w, const tinspect_frame *f)
{
	const char *module = tinspect_frame_module(f);
	const char *symbol = tinspect_frame_symbol(f);
	const char *mangled = tinspect_frame_mangled(f);
	int line = tinspect_frame_line(f);
	jw_obj(w);
	k_hex(w, "pc", tinspect_frame_pc(f));
	k_bool(w, "inlined", tinspect_frame_inlined(f));
	k_str(w, "module", module);
	k_str(w, "build_id", tinspect_frame_build_id(f));
	k_str(w, "symbol", symbol);
	if (mangled)
		k_str(w, "mangled", mangled);
	if (symbol)
		k_int(w, "offset", (int64_t)tinspect_frame_offset(f));
	else
		k_null(w, "offset");
	k_str(w, "file", tinspect_frame_file(f));
	if (line)
		k_int(w, "line", line);
	else
		k_null(w, "line");
	if (module)
		k_hex(w, "module_offset", tinspect_frame_module_offset(f));
	else
		k_null(w, "module_offset");
	jw_obj_end(w);
}

static void stack_json(struct jw *w, const tinspect_thread *th)
{
	enum tinspect_stack_end end = tinspect_thread_stack_end(th);
	if (end == TINSPECT_STACK_NONE) {
		jw_null(w);
		return;
	}
	jw_obj(w);
	jw_key(w, "frames");
	jw_arr(w);
	for (size_t i = 0, n = tinspect_thread_nframes(th); i < n; i++)
		frame_json(w, tinspect_thread_frame(th, i));
	jw_arr_end(w);
	k_str(w, "end", tinspect_stack_end_name(end));
	k_bool(w, "truncated", end == TINSPECT_STACK_TRUNCATED);
	k_str(w, "error", tinspect_thread_stack_error(th));
	uint64_t from, to;
	tinspect_thread_stack_copied(th, &from, &to);
	k_int(w, "copied_bytes", (int64_t)(to - from));
	jw_obj_end(w);
}

/* ---- --tls, --errno, --keys, stacks ---------------------------------------- */

static const char *tls_status_name(enum tinspect_tls_status s)
{
	switch (s) {
	case TINSPECT_TLS_OK: return "ok";
	case TINSPECT_TLS_NOT_ALLOCATED: return "not_allocated";
	case TINSPECT_TLS_NOT_FOUND: return "not_found";
	case TINSPECT_TLS_UNAVAILABLE: return "unavailable";
	case TINSPECT_TLS_ERROR: return "error";
	}
	return "error";
}

/* The value of a variable, typed by its decoding: integers up to 32 bits
 * are numbers, 64-bit integers decimal strings and addresses "0x..."
 * strings (exact for readers with 53-bit numbers), bytes lowercase hex. */
static void tls_value_json(struct jw *w, const tinspect_tls_value *v)
{
	const tinspect_tls_var *var = tinspect_tls_value_var(v);
	unsigned size = tinspect_tls_var_size(var);
	const unsigned char *b = tinspect_tls_value_bytes(v, NULL);
	if (!b) {
		jw_null(w);
		return;
	}
	uint64_t u = tinspect_tls_value_bits(v);
	char buf[32];
	switch (tinspect_tls_var_type(var)) {
	case TINSPECT_TLS_INT: {
		int64_t x = tinspect_tls_value_signed(v);
		if (size < 8) {
			jw_int(w, x);
			return;
		}
		snprintf(buf, sizeof buf, "%" PRId64, x);
		jw_str(w, buf);
		return;
	}
	case TINSPECT_TLS_UNSIGNED:
		if (size < 8) {
			jw_int(w, (int64_t)u);
			return;
		}
		snprintf(buf, sizeof buf, "%" PRIu64, u);
		jw_str(w, buf);
		return;
	case TINSPECT_TLS_BOOL:
		jw_bool(w, u != 0);
		return;
	case TINSPECT_TLS_HEX:
	case TINSPECT_TLS_POINTER:
		jw_hex(w, u);
		return;
	case TINSPECT_TLS_FLOAT:
		jw_real(w, tinspect_tls_value_double(v));	/* NaN, infinities: null */
		return;
	case TINSPECT_TLS_STRING: {
		size_t len;
		const char *str = tinspect_tls_value_string(v, &len, NULL);
		if (str)
			jw_strn(w, str, len);
		else
			jw_null(w);
		return;
	}
	case TINSPECT_TLS_BYTES:
	case TINSPECT_TLS_AUTO:
		jw_hexbytes(w, b, size);
		return;
	}
	jw_null(w);
}

static void k_address(struct jw *w, const tinspect_tls_value *v)
{
	uint64_t a;
	if (tinspect_tls_value_address(v, &a) == 0)
		k_hex(w, "address", a);
	else
		k_null(w, "address");
}

static void tls_entry_json(struct jw *w, const tinspect_tls_value *v)
{
	const tinspect_tls_var *var = tinspect_tls_value_var(v);
	enum tinspect_tls_type type = tinspect_tls_var_type(var);
	enum tinspect_tls_status status = tinspect_tls_value_status(v);
	const unsigned char *b = tinspect_tls_value_bytes(v, NULL);
	jw_obj(w);
	k_address(w, v);
	k_str(w, "type", tinspect_tls_var_type_name(var));
	k_str(w, "status", tls_status_name(status));
	jw_key(w, "value");
	if (status == TINSPECT_TLS_OK)
		tls_value_json(w, v);
	else
		jw_null(w);
	if (type == TINSPECT_TLS_STRING && status == TINSPECT_TLS_OK && b) {
		uint64_t p;
		size_t len;
		bool truncated;
		const char *str = tinspect_tls_value_string(v, &len, &truncated);
		memcpy(&p, b, sizeof p);
		k_hex(w, "pointer", p);
		k_bool(w, "truncated", truncated);
		if (str && !agent_utf8_lossless(str, len)) {
			jw_key(w, "value_hex");
			jw_hexbytes(w, str, len);
		}
	}
	const tinspect_symbol *pointee = tinspect_tls_value_pointee(v);
	if (pointee) {
		jw_key(w, "symbol");
		symbol_json(w, pointee);
	}
	const char *err = tinspect_tls_value_error(v);
	if (err)
		k_str(w, "error", err);
	jw_obj_end(w);
}

static void errno_json(struct jw *w, const tinspect_tls_value *v)
{
	int e = 0;
	enum tinspect_tls_status status = tinspect_tls_value_status(v);
	const unsigned char *b = tinspect_tls_value_bytes(v, NULL);
	bool ok = status == TINSPECT_TLS_OK && b;
	if (ok)
		memcpy(&e, b, sizeof e);
	const char *name = ok && e ? strerrorname_np(e) : NULL;
	jw_obj(w);
	if (ok)
		k_int(w, "value", e);
	else
		k_null(w, "value");
	k_str(w, "name", name);
	k_address(w, v);
	k_str(w, "status", tls_status_name(status));
	const char *err = tinspect_tls_value_error(v);
	if (err)
		k_str(w, "error", err);
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

/* Variable i of the snapshot: a --tls one (not errno) with key name. */
static bool tls_var_keyed(const tinspect_snapshot *snap, size_t i, const char *name)
{
	const tinspect_tls_var *v = tinspect_snapshot_tls_var(snap, i);
	return !tinspect_tls_var_is_errno(v) &&
	       agent_json_same_key(tinspect_tls_var_name(v), name);
}

static int tls_keys_init(struct tls_keys *tk, const tinspect_snapshot *snap)
{
	size_t n = tinspect_snapshot_ntls_vars(snap);
	tk->show = NULL;
	tk->any = false;
	if (!n)
		return 0;
	tk->show = malloc(n * sizeof *tk->show);
	if (!tk->show)
		return -1;
	for (size_t i = 0; i < n; i++) {
		const tinspect_tls_var *v = tinspect_snapshot_tls_var(snap, i);
		const char *name = tinspect_tls_var_name(v);
		tk->show[i] = SIZE_MAX;
		if (tinspect_tls_var_is_errno(v))
			continue;
		tk->any = true;
		bool seen = false;
		for (size_t j = 0; j < i && !seen; j++)
			seen = tls_var_keyed(snap, j, name);
		if (seen)
			continue;
		tk->show[i] = i;
		for (size_t j = i + 1; j < n; j++)
			if (tls_var_keyed(snap, j, name))
				tk->show[i] = j;
	}
	return 0;
}

static void stack_bounds_json(struct jw *w, const tinspect_thread *th)
{
	struct tinspect_stack_bounds st;
	jw_key(w, "stack_bounds");
	if (tinspect_thread_stack_bounds(th, &st, sizeof st)) {
		jw_null(w);
		return;
	}
	static const char *const names[] = { "unknown", "ok", "low", "overflow",
					     "not_a_stack" };
	jw_obj(w);
	k_str(w, "status", names[st.status]);
	k_bool(w, "main", st.main);
	k_hex(w, "low", st.low);
	k_hex(w, "high", st.high);
	jw_key(w, "guard");
	if (st.guard_high) {
		jw_obj(w);
		k_hex(w, "low", st.guard_low);
		k_hex(w, "high", st.guard_high);
		jw_obj_end(w);
	} else {
		jw_null(w);
	}
	if (st.limit)
		k_hex(w, "limit", st.limit);
	else
		k_null(w, "limit");
	k_int(w, "used_bytes", (int64_t)st.used);
	if (st.limit && st.status != TINSPECT_BOUNDS_OVERFLOW)
		k_int(w, "available_bytes", (int64_t)st.avail);
	else
		k_null(w, "available_bytes");
	jw_obj_end(w);
}

static void thread_extras_json(struct jw *w, const tinspect_snapshot *snap,
			       const struct tls_keys *tk, const tinspect_thread *th)
{
	size_t ntls = tinspect_thread_ntls(th);
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
			const char *name =
				tinspect_tls_var_name(tinspect_snapshot_tls_var(snap, i));
			while (j >= ntls)	/* the last one this thread has */
				do
					j--;
				while (!tls_var_keyed(snap, j, name));
			jw_key(w, name);
			tls_entry_json(w, tinspect_thread_tls(th, j));
		}
		jw_obj_end(w);
	} else {
		jw_null(w);
	}
	jw_key(w, "errno");
	size_t e = SIZE_MAX;
	for (size_t i = 0; i < ntls; i++)
		if (tinspect_tls_var_is_errno(tinspect_snapshot_tls_var(snap, i)))
			e = i;
	if (e != SIZE_MAX)
		errno_json(w, tinspect_thread_tls(th, e));
	else
		jw_null(w);

	jw_key(w, "keys");
	if (tinspect_thread_keys_read(th)) {
		jw_arr(w);
		for (size_t i = 0, n = tinspect_thread_nkeys(th); i < n; i++) {
			unsigned key = 0;
			uint64_t value = 0;
			int err = tinspect_thread_key_value(th, i, &key, &value);
			jw_obj(w);
			k_int(w, "key", key);
			if (err)
				k_null(w, "value");
			else
				k_hex(w, "value", value);
			jw_obj_end(w);
		}
		jw_arr_end(w);
	} else {
		jw_null(w);
	}
	stack_bounds_json(w, th);
}

static void process_extras_json(struct jw *w, const tinspect_snapshot *snap)
{
	jw_key(w, "runtimes");
	jw_arr(w);
	for (size_t i = 0, n = tinspect_snapshot_nruntimes(snap); i < n; i++) {
		const tinspect_runtime *rt = tinspect_snapshot_runtime(snap, i);
		jw_obj(w);
		k_str(w, "name", tinspect_runtime_name(rt));
		k_str(w, "module", tinspect_runtime_module(rt));
		k_str(w, "note", tinspect_runtime_note(rt));
		jw_obj_end(w);
	}
	jw_arr_end(w);
	jw_key(w, "tls");
	size_t ntls = tinspect_snapshot_ntls_vars(snap);
	if (ntls) {
		jw_arr(w);
		for (size_t i = 0; i < ntls; i++) {
			const tinspect_tls_var *v = tinspect_snapshot_tls_var(snap, i);
			bool found = tinspect_tls_var_found(v);
			jw_obj(w);
			k_str(w, "name", tinspect_tls_var_name(v));
			k_bool(w, "builtin", tinspect_tls_var_is_errno(v));
			k_bool(w, "found", found);
			k_str(w, "module", tinspect_tls_var_module(v));
			if (found)
				k_hex(w, "offset", tinspect_tls_var_offset(v));
			else
				k_null(w, "offset");
			k_str(w, "type", tinspect_tls_var_type_name(v));
			k_str(w, "c_type", tinspect_tls_var_c_type(v));
			k_str(w, "source", found ? tinspect_tls_var_source(v) : NULL);
			k_str(w, "error", tinspect_tls_var_error(v));
			jw_obj_end(w);
		}
		jw_arr_end(w);
	} else {
		jw_null(w);
	}
	jw_key(w, "keys");
	if (tinspect_snapshot_keys_read(snap)) {
		jw_obj(w);
		k_int(w, "max", (int64_t)tinspect_snapshot_keys_max(snap));
		jw_key(w, "in_use");
		jw_arr(w);
		for (size_t i = 0, n = tinspect_snapshot_nkeys(snap); i < n; i++) {
			const tinspect_key *d = tinspect_snapshot_key(snap, i);
			const tinspect_symbol *dtor = tinspect_key_destructor(d);
			jw_obj(w);
			k_int(w, "key", tinspect_key_id(d));
			jw_key(w, "destructor");
			if (dtor)
				symbol_json(w, dtor);
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

/* A reference to a lock, self-describing; null for none. */
static void lockref_json(struct jw *w, const tinspect_lock *l)
{
	if (!l) {
		jw_null(w);
		return;
	}
	jw_obj(w);
	k_int(w, "index", (int64_t)tinspect_lock_index(l));
	k_hex(w, "addr", tinspect_lock_addr(l));
	k_str(w, "kind", tinspect_lock_kind_name(tinspect_lock_kind(l)));
	jw_key(w, "symbol");
	symbol_text(w, tinspect_lock_symbol(l));
	jw_obj_end(w);
}

static void blocked_on_json(struct jw *w, const tinspect_snapshot *snap,
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
	k_str(w, "kind", tinspect_lock_kind_name(tinspect_wait_kind(b)));
	k_str(w, "mode", mode_name(tinspect_wait_mode(b)));
	k_hex(w, "futex", tinspect_wait_futex(b));
	k_hex(w, "futex_op", tinspect_wait_futex_op(b));
	k_hex(w, "futex_val", tinspect_wait_futex_val(b));
	k_str(w, "syscall", tinspect_snapshot_syscall_name(snap, tinspect_wait_syscall(b)));
	if (object)
		k_hex(w, "object", object);
	else
		k_null(w, "object");
	jw_key(w, "symbol");
	symbol_text(w, l ? tinspect_lock_symbol(l) : NULL);
	k_tid(w, "owner", tinspect_wait_owner(b));
	k_str(w, "owner_state", tinspect_owner_state_name(l ? tinspect_lock_owner_state(l)
							    : TINSPECT_OWNER_NONE));
	if (l)
		k_int(w, "lock", (int64_t)tinspect_lock_index(l));
	else
		k_null(w, "lock");
	jw_key(w, "evidence");
	evidence_json(w, tinspect_wait_evidence(b));
	k_bool(w, "in_graph", tinspect_wait_in_graph(b));
	k_bool(w, "parked", tinspect_wait_parked(b));
	k_str(w, "frame", tinspect_wait_frame(b));
	/* the function that waits: what an unidentified futex is about */
	const tinspect_frame *cf = agent_wait_caller(th);
	char cname[512];
	k_str(w, "caller", cf ? agent_frame_name(cf, cname, sizeof cname) : NULL);
	k_str(w, "note", tinspect_wait_note(b));
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
		k_str(w, "type", tinspect_mutex_type_name(m.type));
		k_bool(w, "robust", m.robust);
		k_bool(w, "pi", m.pi);
		k_bool(w, "pp", m.pp);
		k_bool(w, "pshared", m.pshared);
		k_bool(w, "elision", m.elision);
		k_hex(w, "lock_word", m.lock);
		k_int(w, "owner_field", m.owner_field);
		k_int(w, "count", m.count);
		k_int(w, "nusers", m.nusers);
		k_hex(w, "kind_word", (uint32_t)m.kind_word);
		k_bool(w, "owner_died", m.owner_died);
		k_bool(w, "inconsistent", m.inconsistent);
		k_bool(w, "notrecoverable", m.notrecoverable);
		if (m.pp)
			k_int(w, "ceiling", m.ceiling);
		else
			k_null(w, "ceiling");
	} else if (tinspect_lock_rwlock(l, &r, sizeof r) == 0) {
		k_hex(w, "readers_word", r.readers_word);
		k_int(w, "readers", r.nreaders);
		k_bool(w, "write_phase", r.write_phase);
		k_bool(w, "write_locked", r.write_locked);
		k_bool(w, "readers_waiting", r.readers_waiting);
		k_int(w, "cur_writer", r.cur_writer);
		k_int(w, "writers", r.writers);
		k_bool(w, "shared", r.shared);
		k_int(w, "flags", r.flags);
	} else if (tinspect_lock_cond(l, &c, sizeof c) == 0) {
		k_hex(w, "wseq", c.wseq);
		k_hex(w, "g1_start", c.g1_start);
		k_hex(w, "wrefs", c.wrefs);
		k_int(w, "waiters", c.nwaiters);
		jw_key(w, "g_signals");
		jw_arr(w);
		jw_int(w, c.g_signals[0]);
		jw_int(w, c.g_signals[1]);
		jw_arr_end(w);
		k_bool(w, "pshared", c.pshared);
		k_str(w, "clock", c.monotonic ? "monotonic" : "realtime");
		if (c.mutex)
			k_hex(w, "mutex", c.mutex);
		else
			k_null(w, "mutex");
	} else if (tinspect_lock_sem(l, &s, sizeof s) == 0) {
		k_int(w, "value", s.value);
		k_int(w, "waiters", s.nwaiters);
		k_bool(w, "pshared", s.pshared);
	} else if (tinspect_lock_barrier(l, &b, sizeof b) == 0) {
		k_int(w, "count", b.count);
		k_int(w, "arrived", (int64_t)b.in - (int64_t)b.current_round);
		k_int(w, "in", b.in);
		k_int(w, "current_round", b.current_round);
		k_bool(w, "pshared", b.pshared);
	} else if (tinspect_lock_join(l, &j, sizeof j) == 0) {
		k_tid(w, "target", j.target);
		k_hex(w, "pthread", j.pthread);
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
	k_str(w, "kind", tinspect_lock_kind_name(kind));
	k_hex(w, "addr", tinspect_lock_addr(l));
	k_bool(w, "object_known", tinspect_lock_object_known(l));
	jw_key(w, "symbol");
	if (sym)
		symbol_json(w, sym);
	else
		jw_null(w);
	k_tid(w, "owner", tinspect_lock_owner(l));
	k_str(w, "owner_state", tinspect_owner_state_name(tinspect_lock_owner_state(l)));
	k_bool(w, "orphaned", tinspect_lock_orphaned(l));
	if (holders)
		k_int(w, "holders", holders);
	else
		k_null(w, "holders");
	jw_key(w, "waiters");
	jw_arr(w);
	for (size_t i = 0, n = tinspect_lock_nwaiters(l); i < n; i++) {
		enum tinspect_wait_mode mode = TINSPECT_MODE_NONE;
		pid_t tid = tinspect_lock_waiter(l, i, &mode);
		jw_obj(w);
		k_int(w, "tid", tid);
		k_str(w, "mode", mode_name(mode));
		jw_obj_end(w);
	}
	jw_arr_end(w);
	jw_key(w, "words");
	if (words)
		jw_hexbytes(w, words, nwords);
	else
		jw_null(w);
	k_str(w, "note", tinspect_lock_note(l));
	/* the decoded state under the kind's own name ("mutex": {...});
	 * a futex has none */
	if (tinspect_lock_decoded(l) && kind != TINSPECT_LOCK_FUTEX) {
		jw_key(w, tinspect_lock_kind_name(kind));
		lock_state_json(w, l);
	}
	jw_obj_end(w);
}

static void locks_json(struct jw *w, const tinspect_snapshot *snap)
{
	jw_key(w, "locks");
	jw_arr(w);
	for (size_t i = 0, n = tinspect_snapshot_nlocks(snap); i < n; i++)
		lock_json(w, tinspect_snapshot_lock(snap, i));
	jw_arr_end(w);

	/* "threads" and "locks" of a cycle or a stall, in their order */
	jw_key(w, "deadlocks");
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
			lockref_json(w, tinspect_cycle_lock(c, k));
		jw_arr_end(w);
		jw_obj_end(w);
	}
	jw_arr_end(w);

	jw_key(w, "stalls");
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
		k_int(w, "tid", tinspect_stall_tid(st, len - 1));
		k_str(w, "reason", tinspect_stall_end_name(tinspect_stall_end(st)));
		k_str(w, "syscall", sc >= 0 ? tinspect_snapshot_syscall_name(snap, sc) : NULL);
		jw_key(w, "lock");
		lockref_json(w, tinspect_stall_end_lock(st));
		jw_obj_end(w);
		jw_obj_end(w);
	}
	jw_arr_end(w);

	jw_key(w, "orphaned_locks");
	jw_arr(w);
	for (size_t i = 0, n = tinspect_snapshot_norphans(snap); i < n; i++)
		lockref_json(w, tinspect_snapshot_orphan(snap, i));
	jw_arr_end(w);
}

static void thread_proc_json(struct jw *w, const tinspect_thread *th)
{
	double user_s, system_s;
	if (tinspect_thread_cpu(th, &user_s, &system_s) == 0) {
		unsigned policy, rt_priority;
		long priority, nice;
		int processor;
		uint64_t blocked, pending;
		size_t alen;
		const char *affinity = tinspect_thread_affinity(th, &alen);
		tinspect_thread_sched(th, &policy, &priority, &nice, &rt_priority,
				      &processor);
		tinspect_thread_signals(th, &blocked, &pending);
		jw_key(w, "cpu");
		jw_obj(w);
		jw_key(w, "user_s");
		jw_real(w, user_s);
		jw_key(w, "system_s");
		jw_real(w, system_s);
		jw_obj_end(w);
		jw_key(w, "signals");
		jw_obj(w);
		k_hex(w, "blocked", blocked);
		k_hex(w, "pending", pending);
		jw_obj_end(w);
		jw_key(w, "sched");
		jw_obj(w);
		k_str(w, "policy", agent_policy_name(policy));
		k_int(w, "priority", priority);
		k_int(w, "nice", nice);
		k_int(w, "rt_priority", rt_priority);
		k_int(w, "processor", processor);
		jw_key(w, "affinity");
		jw_strn(w, affinity, alen);
		jw_obj_end(w);
	} else {
		k_null(w, "cpu");
		k_null(w, "signals");
		k_null(w, "sched");
	}
}

static void thread_json(struct jw *w, const tinspect_snapshot *snap,
			const struct tls_keys *tk, const tinspect_thread *th)
{
	size_t name_len;
	const char *name = tinspect_thread_name(th, &name_len);
	enum tinspect_proc_read pr = tinspect_thread_proc_read(th);
	jw_obj(w);
	k_int(w, "tid", tinspect_thread_tid(th));
	k_tid(w, "ns_tid", tinspect_thread_ns_tid(th));	/* 0: unknown */
	jw_key(w, "name");
	jw_strn(w, name, name_len);
	if (name && !agent_utf8_lossless(name, name_len)) {
		jw_key(w, "name_hex");
		jw_hexbytes(w, name, name_len);
	}
	k_bool(w, "main", tinspect_thread_is_main(th));

	if (pr != TINSPECT_PROC_FAILED) {
		char state = tinspect_thread_state(th);
		char st[2] = { state, 0 };
		k_str(w, "state", state ? st : "?");
		k_str(w, "state_name", agent_state_name(state));
		k_str(w, "wchan", tinspect_thread_wchan(th));
	} else {
		k_null(w, "state");
		k_null(w, "state_name");
		k_null(w, "wchan");
	}
	k_str(w, "proc_read", pr == TINSPECT_PROC_FAILED ? "failed" :
			      pr == TINSPECT_PROC_BEFORE_STOP ? "before_stop" :
			      "after_resume");
	jw_key(w, "syscall");
	syscall_json(w, th);
	thread_proc_json(w, th);

	uint64_t pc, sp, tp;
	jw_key(w, "regs");
	if (tinspect_thread_regs(th, &pc, &sp, &tp) == 0) {
		jw_obj(w);
		k_hex(w, "pc", pc);
		k_hex(w, "sp", sp);
		k_hex(w, "tp", tp);
		jw_obj_end(w);
	} else {
		jw_null(w);
	}

	uint64_t pthread;
	int td_state;
	jw_key(w, "pthread");
	if (tinspect_thread_pthread(th, &pthread, &td_state) == 0) {
		const tinspect_symbol *start = tinspect_thread_start_routine(th);
		jw_obj(w);
		k_hex(w, "id", pthread);
		k_str(w, "td_state", tinspect_td_state_name(td_state));
		jw_key(w, "start_routine");
		if (start)
			symbol_json(w, start);
		else
			jw_null(w);	/* the initial thread */
		jw_obj_end(w);
	} else {
		jw_null(w);
	}
	jw_key(w, "stack");
	stack_json(w, th);
	k_bool(w, "stopped", tinspect_thread_stopped(th));
	k_bool(w, "straggler", tinspect_thread_straggler(th));
	k_bool(w, "jobctl_stopped", tinspect_thread_jobctl_stopped(th));
	jw_key(w, "blocked_on");
	blocked_on_json(w, snap, th);
	thread_errors(w, th);
	thread_extras_json(w, snap, tk, th);
	jw_obj_end(w);
}

static const char *modmap_name(enum tinspect_modmap m)
{
	return m == TINSPECT_MODMAP_LINK_MAP ? "link_map" :
	       m == TINSPECT_MODMAP_MAPS_ONLY ? "maps_only" : "none";
}

static void snapshot_json(struct jw *w, const tinspect_snapshot *snap,
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
	int64_t sec;
	long nsec;
	tinspect_snapshot_captured_at(snap, &sec, &nsec);
	time_t t = (time_t)sec;
	gmtime_r(&t, &tm);
	size_t l = strftime(ts, sizeof ts, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(ts + l, sizeof ts - l, ".%06ldZ", nsec / 1000);
	k_str(w, "captured_at", ts);

	jw_key(w, "process");
	jw_obj(w);
	k_int(w, "pid", tinspect_snapshot_pid(snap));
	k_str(w, "exe", tinspect_snapshot_exe(snap));
	jw_key(w, "cmdline");
	jw_arr(w);
	for (size_t i = 0, n = tinspect_snapshot_argc(snap); i < n; i++)
		jw_str(w, tinspect_snapshot_arg(snap, i));
	jw_arr_end(w);
	k_str(w, "arch", tinspect_snapshot_arch(snap));
	k_str(w, "glibc_version", tinspect_snapshot_glibc_version(snap));
	jw_key(w, "thread_db");
	jw_obj(w);
	k_str(w, "status", tinspect_tdb_status_name(tinspect_snapshot_tdb_status(snap)));
	k_str(w, "detail", tinspect_snapshot_tdb_detail(snap));
	k_str(w, "library", tinspect_snapshot_tdb_library(snap));
	jw_obj_end(w);
	k_str(w, "module_map", modmap_name(tinspect_snapshot_modmap(snap)));
	k_int(w, "module_generation", (int64_t)tinspect_snapshot_module_generation(snap));
	process_extras_json(w, snap);
	jw_obj_end(w);

	jw_key(w, "capture");
	jw_obj(w);
	k_str(w, "mode", "all-stop");
	k_int(w, "freeze_us", (int64_t)(tinspect_snapshot_freeze_ns(snap) / 1000));
	k_int(w, "duration_us", (int64_t)(tinspect_snapshot_duration_ns(snap) / 1000));
	k_int(w, "threads_seen", (int64_t)tinspect_snapshot_threads_seen(snap));
	k_int(w, "threads_stopped", (int64_t)tinspect_snapshot_threads_stopped(snap));
	k_int(w, "threads_vanished", (int64_t)tinspect_snapshot_threads_vanished(snap));
	k_int(w, "stragglers", (int64_t)tinspect_snapshot_stragglers(snap));
	k_int(w, "threads_with_errors",
	      (int64_t)tinspect_snapshot_threads_with_errors(snap));
	static const struct {
		const char *key;
		enum tinspect_timing step;
	} timings[] = {
		{ "scan_us", TINSPECT_TIMING_SCAN },
		{ "stop_us", TINSPECT_TIMING_STOP },
		{ "regs_us", TINSPECT_TIMING_REGS },
		{ "memory_us", TINSPECT_TIMING_MEMORY },
		{ "thread_db_us", TINSPECT_TIMING_THREAD_DB },
		{ "resume_us", TINSPECT_TIMING_RESUME },
		{ "analyse_us", TINSPECT_TIMING_ANALYSE },
	};
	jw_key(w, "timings");
	jw_obj(w);
	for (size_t i = 0; i < sizeof timings / sizeof *timings; i++)
		k_int(w, timings[i].key,
		      (int64_t)(tinspect_snapshot_timing_ns(snap, timings[i].step) / 1000));
	jw_obj_end(w);
	k_bool(w, "stacks", tinspect_snapshot_has_stacks(snap));
	k_int(w, "stack_bytes_copied", (int64_t)tinspect_snapshot_stack_bytes_copied(snap));
	capture_messages(w, snap);
	jw_obj_end(w);

	jw_key(w, "threads");
	jw_arr(w);
	for (size_t i = 0, n = tinspect_snapshot_nthreads(snap); i < n; i++)
		thread_json(w, snap, tk, tinspect_snapshot_thread(snap, i));
	jw_arr_end(w);
	locks_json(w, snap);
	jw_obj_end(w);
}

int render_json(FILE *out, const tinspect_snapshot *snap,
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
