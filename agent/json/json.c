/*
 * json.c: the versioned JSON document (schema/tinspect-snapshot.schema.json),
 * streamed to the output in document order (jwriter.c): a 10000-thread
 * snapshot is never held as a tree.  The process, the capture, the threads
 * here; what blocked threads wait on and the lock graph in json_locks.c.
 * Every string that comes from the target (thread names, paths, command
 * line, ELF symbol names) is attacker-controlled bytes: the writer makes it
 * valid UTF-8 (invalid sequences become U+FFFD, and the raw bytes are kept
 * as hex beside a lossy thread name), so the document always parses.
 * 64-bit values are "0x..." strings: JSON readers with 53-bit numbers must
 * not lose address bits.
 */
#include "json.h"
#include "common.h"
#include "lockorder.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"

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

static void syscall_json(struct jw *w, const tinspect_thread *th)
{
	struct tinspect_syscall sc;
	if (tinspect_thread_syscall(th, &sc, sizeof sc)) {
		jw_null(w);
		return;
	}
	jw_obj(w);
	jw_kint(w, "nr", sc.nr);
	jw_kstr(w, "name", sc.name);
	jw_key(w, "args");
	jw_arr(w);
	for (int i = 0; i < 6; i++)
		jw_hex(w, sc.args[i]);
	jw_arr_end(w);
	jw_kbool(w, "restarting", sc.restarting);
	jw_kstr(w, "source", sc.source == TINSPECT_SYSCALL_REGISTERS ? "registers" : "proc");
	jw_obj_end(w);
}

static void frame_json(struct jw *w, const tinspect_frame *f)
{
	const char *module = tinspect_frame_module(f);
	const char *symbol = tinspect_frame_symbol(f);
	const char *mangled = tinspect_frame_mangled(f);
	int line = tinspect_frame_line(f);
	jw_obj(w);
	jw_khex(w, "pc", tinspect_frame_pc(f));
	jw_kbool(w, "inlined", tinspect_frame_inlined(f));
	jw_kstr(w, "module", module);
	jw_kstr(w, "build_id", tinspect_frame_build_id(f));
	jw_kstr(w, "symbol", symbol);
	if (mangled)
		jw_kstr(w, "mangled", mangled);
	if (symbol)
		jw_kint(w, "offset", (int64_t)tinspect_frame_offset(f));
	else
		jw_knull(w, "offset");
	jw_kstr(w, "file", tinspect_frame_file(f));
	if (line)
		jw_kint(w, "line", line);
	else
		jw_knull(w, "line");
	if (module)
		jw_khex(w, "module_offset", tinspect_frame_module_offset(f));
	else
		jw_knull(w, "module_offset");
	jw_kstr(w, "how", tinspect_frame_scanned(f) ? "scan" : "unwound");
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
	jw_kstr(w, "end", tinspect_stack_end_name(end));
	jw_kbool(w, "truncated", end == TINSPECT_STACK_TRUNCATED);
	jw_kstr(w, "error", tinspect_thread_stack_error(th));
	uint64_t from, to;
	tinspect_thread_stack_copied(th, &from, &to);
	jw_kint(w, "copied_bytes", (int64_t)(to - from));
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
		jw_khex(w, "address", a);
	else
		jw_knull(w, "address");
}

static void tls_entry_json(struct jw *w, const tinspect_tls_value *v)
{
	const tinspect_tls_var *var = tinspect_tls_value_var(v);
	enum tinspect_tls_type type = tinspect_tls_var_type(var);
	enum tinspect_tls_status status = tinspect_tls_value_status(v);
	const unsigned char *b = tinspect_tls_value_bytes(v, NULL);
	jw_obj(w);
	k_address(w, v);
	jw_kstr(w, "type", tinspect_tls_var_type_name(var));
	jw_kstr(w, "status", tls_status_name(status));
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
		jw_khex(w, "pointer", p);
		jw_kbool(w, "truncated", truncated);
		if (str && !agent_utf8_lossless(str, len)) {
			jw_key(w, "value_hex");
			jw_hexbytes(w, str, len);
		}
	}
	const tinspect_symbol *pointee = tinspect_tls_value_pointee(v);
	if (pointee) {
		jw_key(w, "symbol");
		json_symbol(w, pointee);
	}
	const char *err = tinspect_tls_value_error(v);
	if (err)
		jw_kstr(w, "error", err);
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
		jw_kint(w, "value", e);
	else
		jw_knull(w, "value");
	jw_kstr(w, "name", name);
	k_address(w, v);
	jw_kstr(w, "status", tls_status_name(status));
	const char *err = tinspect_tls_value_error(v);
	if (err)
		jw_kstr(w, "error", err);
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
	jw_kstr(w, "stack_bounds_unknown", tinspect_thread_stack_bounds_unknown(th));
	jw_key(w, "stack_bounds");
	if (tinspect_thread_stack_bounds(th, &st, sizeof st)) {
		jw_null(w);
		return;
	}
	static const char *const names[] = { "unknown", "ok", "low", "overflow",
					     "not_a_stack" };
	jw_obj(w);
	jw_kstr(w, "status", names[st.status]);
	jw_kbool(w, "main", st.main);
	jw_khex(w, "low", st.low);
	jw_khex(w, "high", st.high);
	jw_key(w, "guard");
	if (st.guard_high) {
		jw_obj(w);
		jw_khex(w, "low", st.guard_low);
		jw_khex(w, "high", st.guard_high);
		jw_obj_end(w);
	} else {
		jw_null(w);
	}
	if (st.limit)
		jw_khex(w, "limit", st.limit);
	else
		jw_knull(w, "limit");
	jw_kint(w, "used_bytes", (int64_t)st.used);
	if (st.limit && st.status != TINSPECT_BOUNDS_OVERFLOW)
		jw_kint(w, "available_bytes", (int64_t)st.avail);
	else
		jw_knull(w, "available_bytes");
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
			jw_kint(w, "key", key);
			if (err)
				jw_knull(w, "value");
			else
				jw_khex(w, "value", value);
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
		jw_kstr(w, "name", tinspect_runtime_name(rt));
		jw_kstr(w, "module", tinspect_runtime_module(rt));
		jw_kstr(w, "version", tinspect_runtime_version(rt));
		jw_kstr(w, "note", tinspect_runtime_note(rt));
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
			jw_kstr(w, "name", tinspect_tls_var_name(v));
			jw_kbool(w, "builtin", tinspect_tls_var_is_errno(v));
			jw_kbool(w, "found", found);
			jw_kstr(w, "module", tinspect_tls_var_module(v));
			if (found)
				jw_khex(w, "offset", tinspect_tls_var_offset(v));
			else
				jw_knull(w, "offset");
			jw_kstr(w, "type", tinspect_tls_var_type_name(v));
			jw_kstr(w, "c_type", tinspect_tls_var_c_type(v));
			jw_kstr(w, "source", found ? tinspect_tls_var_source(v) : NULL);
			jw_kstr(w, "error", tinspect_tls_var_error(v));
			jw_obj_end(w);
		}
		jw_arr_end(w);
	} else {
		jw_null(w);
	}
	jw_key(w, "keys");
	if (tinspect_snapshot_keys_read(snap)) {
		jw_obj(w);
		jw_kint(w, "max", (int64_t)tinspect_snapshot_keys_max(snap));
		jw_key(w, "in_use");
		jw_arr(w);
		for (size_t i = 0, n = tinspect_snapshot_nkeys(snap); i < n; i++) {
			const tinspect_key *d = tinspect_snapshot_key(snap, i);
			const tinspect_symbol *dtor = tinspect_key_destructor(d);
			jw_obj(w);
			jw_kint(w, "key", tinspect_key_id(d));
			jw_key(w, "destructor");
			json_symbol(w, dtor);
			jw_obj_end(w);
		}
		jw_arr_end(w);
		jw_obj_end(w);
	} else {
		jw_null(w);
	}
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
		uint64_t switches;
		if (tinspect_thread_context_switches(th, &switches) == 0)
			jw_kint(w, "context_switches", (int64_t)switches);
		jw_obj_end(w);
		jw_key(w, "signals");
		jw_obj(w);
		jw_khex(w, "blocked", blocked);
		jw_khex(w, "pending", pending);
		jw_obj_end(w);
		jw_key(w, "sched");
		jw_obj(w);
		jw_kstr(w, "policy", agent_policy_name(policy));
		jw_kint(w, "priority", priority);
		jw_kint(w, "nice", nice);
		jw_kint(w, "rt_priority", rt_priority);
		jw_kint(w, "processor", processor);
		jw_key(w, "affinity");
		jw_strn(w, affinity, alen);
		jw_obj_end(w);
	} else {
		jw_knull(w, "cpu");
		jw_knull(w, "signals");
		jw_knull(w, "sched");
	}
}

static void thread_json(struct jw *w, const tinspect_snapshot *snap,
			const struct tls_keys *tk, const tinspect_thread *th)
{
	size_t name_len;
	const char *name = tinspect_thread_name(th, &name_len);
	enum tinspect_proc_read pr = tinspect_thread_proc_read(th);
	jw_obj(w);
	jw_kint(w, "tid", tinspect_thread_tid(th));
	json_tid(w, "ns_tid", tinspect_thread_ns_tid(th));	/* 0: unknown */
	jw_key(w, "name");
	jw_strn(w, name, name_len);
	if (name && !agent_utf8_lossless(name, name_len)) {
		jw_key(w, "name_hex");
		jw_hexbytes(w, name, name_len);
	}
	jw_kbool(w, "main", tinspect_thread_is_main(th));

	if (pr != TINSPECT_PROC_FAILED && pr != TINSPECT_PROC_NONE) {
		char state = tinspect_thread_state(th);
		char st[2] = { state, 0 };
		jw_kstr(w, "state", state ? st : "?");
		jw_kstr(w, "state_name", agent_state_name(state));
		jw_kstr(w, "wchan", tinspect_thread_wchan(th));
	} else {
		jw_knull(w, "state");
		jw_knull(w, "state_name");
		jw_knull(w, "wchan");
	}
	jw_kstr(w, "proc_read", pr == TINSPECT_PROC_NONE ? "none" :
			      pr == TINSPECT_PROC_FAILED ? "failed" :
			      pr == TINSPECT_PROC_BEFORE_STOP ? "before_stop" :
			      "after_resume");
	jw_key(w, "syscall");
	syscall_json(w, th);
	thread_proc_json(w, th);

	uint64_t pc, sp, tp;
	jw_key(w, "regs");
	if (tinspect_thread_regs(th, &pc, &sp, &tp) == 0) {
		jw_obj(w);
		jw_khex(w, "pc", pc);
		jw_khex(w, "sp", sp);
		jw_khex(w, "tp", tp);
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
		jw_khex(w, "id", pthread);
		jw_kstr(w, "td_state", tinspect_td_state_name(td_state));
		jw_kstr(w, "detach_state", tinspect_thread_detach_state(th));
		jw_key(w, "start_routine");
		json_symbol(w, start);	/* null: the initial thread */
		jw_obj_end(w);
	} else {
		jw_null(w);
	}
	jw_key(w, "stack");
	stack_json(w, th);
	jw_kbool(w, "stopped", tinspect_thread_stopped(th));
	jw_kbool(w, "straggler", tinspect_thread_straggler(th));
	enum tinspect_observation obs = tinspect_thread_observation(th);
	if (obs != TINSPECT_OBSERVED_NONE)
		jw_kstr(w, "observation", tinspect_observation_name(obs));
	jw_kbool(w, "jobctl_stopped", tinspect_thread_jobctl_stopped(th));
	jw_key(w, "blocked_on");
	json_blocked_on(w, snap, th);
	jw_key(w, "held");
	json_held(w, th);
	json_waiting(w, snap, th);
	thread_errors(w, th);
	thread_extras_json(w, snap, tk, th);
	jw_obj_end(w);
}

/* "signal": which thread took which signal (a core's NT_SIGINFO), or
 * null. */
static void signal_json(struct jw *w, const tinspect_snapshot *snap)
{
	struct tinspect_signal_info si;
	jw_key(w, "signal");
	if (tinspect_snapshot_signal(snap, &si, sizeof si)) {
		jw_null(w);
		return;
	}
	jw_obj(w);
	jw_kint(w, "tid", si.tid);
	jw_kint(w, "signo", si.signo);
	const char *abbrev = si.signo > 0 ? sigabbrev_np(si.signo) : NULL;
	char name[32];
	if (abbrev)
		snprintf(name, sizeof name, "SIG%s", abbrev);
	jw_kstr(w, "name", abbrev ? name : NULL);
	if (si.have_siginfo) {
		jw_kint(w, "code", si.code);
		jw_kint(w, "errno", si.err);
	} else {
		jw_knull(w, "code");
		jw_knull(w, "errno");
	}
	if (si.have_addr)
		jw_khex(w, "addr", si.addr);
	else
		jw_knull(w, "addr");
	if (si.have_sender) {
		jw_kint(w, "sender_pid", si.sender_pid);
		jw_kint(w, "sender_uid", si.sender_uid);
	} else {
		jw_knull(w, "sender_pid");
		jw_knull(w, "sender_uid");
	}
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
	jw_kstr(w, "format_version", TINSPECT_FORMAT_VERSION);
	if (o->update)
		jw_kint(w, "update", (int64_t)o->update);
	jw_key(w, "tool");
	jw_obj(w);
	jw_kstr(w, "name", "tinspect");
	jw_kstr(w, "version", TINSPECT_VERSION);
	jw_obj_end(w);

	char ts[64];
	int64_t sec;
	long nsec;
	tinspect_snapshot_captured_at(snap, &sec, &nsec);
	agent_iso_time(sec, nsec, ts, sizeof ts);
	jw_kstr(w, "captured_at", ts);

	jw_key(w, "process");
	jw_obj(w);
	jw_kint(w, "pid", tinspect_snapshot_pid(snap));
	jw_kstr(w, "exe", tinspect_snapshot_exe(snap));
	jw_key(w, "cmdline");
	jw_arr(w);
	for (size_t i = 0, n = tinspect_snapshot_argc(snap); i < n; i++)
		jw_str(w, tinspect_snapshot_arg(snap, i));
	jw_arr_end(w);
	jw_kstr(w, "arch", tinspect_snapshot_arch(snap));
	jw_kstr(w, "glibc_version", tinspect_snapshot_glibc_version(snap));
	jw_key(w, "thread_db");
	jw_obj(w);
	jw_kstr(w, "status", tinspect_tdb_status_name(tinspect_snapshot_tdb_status(snap)));
	jw_kstr(w, "detail", tinspect_snapshot_tdb_detail(snap));
	jw_kstr(w, "library", tinspect_snapshot_tdb_library(snap));
	jw_kstr(w, "library_origin",
		tinspect_tdb_origin_name(tinspect_snapshot_tdb_origin(snap)));
	/* which C library, and how its threads were identified (2.5) */
	jw_kstr(w, "libc", tinspect_snapshot_libc(snap));
	jw_kstr(w, "libc_version", tinspect_snapshot_libc_version(snap));
	jw_kstr(w, "threads", tinspect_snapshot_threads_source(snap));
	jw_obj_end(w);
	jw_kstr(w, "module_map", modmap_name(tinspect_snapshot_modmap(snap)));
	jw_kint(w, "module_generation", (int64_t)tinspect_snapshot_module_generation(snap));
	process_extras_json(w, snap);
	jw_obj_end(w);

	jw_key(w, "capture");
	jw_obj(w);
	enum tinspect_capture_mode mode = tinspect_snapshot_capture_mode(snap);
	jw_kstr(w, "mode", tinspect_capture_mode_name(mode));
	if (mode == TINSPECT_CAPTURE_CORE)
		jw_knull(w, "freeze_us");	/* nothing was stopped */
	else
		jw_kint(w, "freeze_us",
			(int64_t)(tinspect_snapshot_freeze_ns(snap) / 1000));
	signal_json(w, snap);
	size_t cand_cycles, cand_stalls;
	uint64_t observe_ns;
	if (tinspect_snapshot_candidates(snap, &cand_cycles, &cand_stalls,
					 &observe_ns) == 0) {
		/* this all-stop capture confirms (or refutes) what a
		 * nonblocking one showed */
		jw_key(w, "confirmed");
		jw_obj(w);
		jw_kint(w, "candidate_deadlocks", (int64_t)cand_cycles);
		jw_kint(w, "candidate_stalls", (int64_t)cand_stalls);
		jw_kint(w, "nonblocking_duration_us", (int64_t)(observe_ns / 1000));
		jw_obj_end(w);
	}
	jw_kint(w, "duration_us", (int64_t)(tinspect_snapshot_duration_ns(snap) / 1000));
	jw_kint(w, "threads_seen", (int64_t)tinspect_snapshot_threads_seen(snap));
	jw_kint(w, "threads_stopped", (int64_t)tinspect_snapshot_threads_stopped(snap));
	jw_kint(w, "threads_vanished", (int64_t)tinspect_snapshot_threads_vanished(snap));
	jw_kint(w, "stragglers", (int64_t)tinspect_snapshot_stragglers(snap));
	jw_kint(w, "threads_with_errors",
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
		jw_kint(w, timings[i].key,
		      (int64_t)(tinspect_snapshot_timing_ns(snap, timings[i].step) / 1000));
	jw_obj_end(w);
	jw_kbool(w, "stacks", tinspect_snapshot_has_stacks(snap));
	jw_kint(w, "stack_bytes_copied", (int64_t)tinspect_snapshot_stack_bytes_copied(snap));
	capture_messages(w, snap);
	jw_obj_end(w);

	jw_key(w, "threads");
	jw_arr(w);
	for (size_t i = 0, n = tinspect_snapshot_nthreads(snap); i < n; i++)
		thread_json(w, snap, tk, tinspect_snapshot_thread(snap, i));
	jw_arr_end(w);
	json_locks(w, snap);
	json_verdict(w, snap, o->update);
	/* a watch's (or --lock-order's) lock-order graph, when there is one */
	lockorder_json(w, o->lockorder);
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
