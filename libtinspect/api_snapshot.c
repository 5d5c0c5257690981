/*
 * api_snapshot.c: a snapshot's public handles (tinspect/snapshot.h): built
 * once per update by tin_snapshot_wrap() after the resume, then the
 * snapshot-wide facts: the process, the capture, the TLS variables and
 * keys asked for, the runtimes, symbols.
 */
#include "tin_int.h"

#include "array.h"

#include <errno.h>
#include <stdlib.h>

_Static_assert(TINSPECT_TDB_ERROR == (int)DBS_TDB_ERROR, "tdb status");
_Static_assert(TINSPECT_MODMAP_MAPS_ONLY == (int)PSVC_MODMAP_MAPS_ONLY, "modmap");

/* The wrappers of the threads, and their TLS values in one array. */
static int wrap_threads(struct tinspect_snapshot *s)
{
	const struct dbs_snapshot *d = s->d;
	size_t nvalues = 0;
	s->threads = calloc(d->nthreads ? d->nthreads : 1, sizeof *s->threads);
	if (!s->threads)
		return -ENOMEM;
	for (size_t i = 0; i < d->nthreads; i++) {
		/* a thread has a value per variable, or fewer if they could
		 * not be read: the renderers always went by the smaller */
		size_t n = d->threads[i].ntls;
		nvalues += n < d->ntls_vars ? n : d->ntls_vars;
	}
	if (nvalues) {
		s->tls_values = calloc(nvalues, sizeof *s->tls_values);
		if (!s->tls_values)
			return -ENOMEM;
	}
	struct tinspect_tls_value *v = s->tls_values;
	for (size_t i = 0; i < d->nthreads; i++) {
		struct tinspect_thread *t = &s->threads[i];
		const struct dbs_thread *dt = &d->threads[i];
		t->d = dt;
		t->snap = s;
		t->wait.d = dt->blocked_on;
		t->wait.th = t;
		t->ntls = dt->ntls < d->ntls_vars ? dt->ntls : d->ntls_vars;
		t->tls = v;
		for (size_t k = 0; k < t->ntls; k++, v++) {
			v->d = &dt->tls[k];
			v->var = &d->tls_vars[k];
		}
	}
	return 0;
}

static int wrap_locks(struct tinspect_snapshot *s)
{
	const struct dbs_locks *L = s->d->locks;
	if (!L)
		return 0;
	s->locks = calloc(L->n ? L->n : 1, sizeof *s->locks);
	s->cycles = calloc(L->ndeadlocks ? L->ndeadlocks : 1, sizeof *s->cycles);
	s->stalls = calloc(L->nstalls ? L->nstalls : 1, sizeof *s->stalls);
	s->orphans = calloc(L->n ? L->n : 1, sizeof *s->orphans);
	if (!s->locks || !s->cycles || !s->stalls || !s->orphans)
		return -ENOMEM;
	s->nlocks = L->n;
	for (size_t i = 0; i < L->n; i++) {
		s->locks[i] = (struct tinspect_lock){ &L->v[i], s };
		if (L->v[i].orphaned)
			s->orphans[s->norphans++] = &s->locks[i];
	}
	s->ncycles = L->ndeadlocks;
	for (size_t i = 0; i < L->ndeadlocks; i++)
		s->cycles[i] = (struct tinspect_cycle){ &L->deadlocks[i], s };
	s->nstalls = L->nstalls;
	for (size_t i = 0; i < L->nstalls; i++)
		s->stalls[i] = (struct tinspect_stall){ &L->stalls[i], s };
	return 0;
}

static void unwrap(struct tinspect_snapshot *s)
{
	free(s->threads);
	free(s->tls_values);
	free(s->locks);
	free(s->cycles);
	free(s->stalls);
	free(s->orphans);
	free(s);
}

int tin_snapshot_wrap(struct dbs_snapshot *d, tinspect_snapshot **ret)
{
	struct tinspect_snapshot *s = calloc(1, sizeof *s);
	if (!s)
		return -ENOMEM;
	s->d = d;
	int err = wrap_threads(s);
	if (!err)
		err = wrap_locks(s);
	if (err) {
		unwrap(s);
		return err;
	}
	*ret = s;
	return 0;
}

struct dbs_snapshot *tin_snapshot_unwrap(tinspect_snapshot *s)
{
	struct dbs_snapshot *d = s->d;
	unwrap(s);
	return d;
}

void tinspect_snapshot_free(tinspect_snapshot *snap)
{
	if (!snap)
		return;
	dbs_snapshot_free(snap->d);
	unwrap(snap);
}

const struct tinspect_lock *tin_lock_at(const struct tinspect_snapshot *s, size_t i)
{
	return i < s->nlocks ? &s->locks[i] : NULL;
}

/* ---- the process ------------------------------------------------------------------ */

TIN_GET(pid_t, tinspect_snapshot_pid, tinspect_snapshot, pid)
TIN_GET(const char *, tinspect_snapshot_exe, tinspect_snapshot, exe)
TIN_GET(size_t, tinspect_snapshot_argc, tinspect_snapshot, argc)

const char *tinspect_snapshot_arg(const tinspect_snapshot *snap, size_t i)
{
	return i < snap->d->argc ? snap->d->argv[i] : NULL;
}

const char *tinspect_snapshot_arch(const tinspect_snapshot *snap)
{
	return snap->d->arch ? snap->d->arch->name : NULL;
}

const char *tinspect_snapshot_glibc_version(const tinspect_snapshot *snap)
{
	return snap->d->glibc_version[0] ? snap->d->glibc_version : NULL;
}

TIN_GET(const char *, tinspect_snapshot_libc, tinspect_snapshot, libc_name)

const char *tinspect_snapshot_libc_version(const tinspect_snapshot *snap)
{
	return snap->d->libc_version[0] ? snap->d->libc_version : NULL;
}

const char *tinspect_snapshot_threads_source(const tinspect_snapshot *snap)
{
	return dbs_threads_source_name((enum dbs_threads_source)snap->d->threads_source);
}

TIN_GET(enum tinspect_tdb_status, tinspect_snapshot_tdb_status,
	tinspect_snapshot, tdb_status)

const char *tinspect_tdb_status_name(enum tinspect_tdb_status status)
{
	return dbs_tdb_status_name((enum dbs_tdb_status)status);
}

TIN_GET(const char *, tinspect_snapshot_tdb_detail, tinspect_snapshot,
	tdb_detail)
TIN_GET(const char *, tinspect_snapshot_tdb_library, tinspect_snapshot,
	thread_db_path)

_Static_assert(TINSPECT_TDB_FROM_GIVEN == (int)DBS_TDB_FROM_GIVEN &&
	       TINSPECT_TDB_FROM_TARGET == (int)DBS_TDB_FROM_TARGET,
	       "tinspect_tdb_origin is dbs_tdb_origin");

TIN_GET(enum tinspect_tdb_origin, tinspect_snapshot_tdb_origin,
	tinspect_snapshot, tdb_origin)

const char *tinspect_tdb_origin_name(enum tinspect_tdb_origin origin)
{
	return dbs_tdb_origin_name((enum dbs_tdb_origin)origin);
}

TIN_GET(enum tinspect_modmap, tinspect_snapshot_modmap, tinspect_snapshot,
	modmap_source)
TIN_GET(uint64_t, tinspect_snapshot_module_generation, tinspect_snapshot,
	module_generation)

/* ---- the capture ----------------------------------------------------------------------- */

void tinspect_snapshot_captured_at(const tinspect_snapshot *snap, int64_t *ret_sec,
				   long *ret_nsec)
{
	if (ret_sec)
		*ret_sec = (int64_t)snap->d->captured_at.tv_sec;
	if (ret_nsec)
		*ret_nsec = snap->d->captured_at.tv_nsec;
}

int tinspect_snapshot_signal(const tinspect_snapshot *snap,
			     struct tinspect_signal_info *ret, size_t size)
{
	if (!size)
		return -EINVAL;
	if (!snap->d->have_signal)
		return -ENODATA;
	const struct psvc_signal_info *p = &snap->d->signal;
	struct tinspect_signal_info v = {
		.tid = p->tid,
		.signo = p->signo,
		.have_siginfo = p->have_siginfo,
		.code = p->code,
		.err = p->err,
		.have_addr = p->have_addr,
		.addr = p->addr,
		.have_sender = p->have_sender,
		.sender_pid = p->sender_pid,
		.sender_uid = p->sender_uid,
	};
	return tin_fill(ret, size, &v, sizeof v);
}

TIN_GET(uint64_t, tinspect_snapshot_freeze_ns, tinspect_snapshot, freeze_ns)
TIN_GET(uint64_t, tinspect_snapshot_duration_ns, tinspect_snapshot, duration_ns)

enum tinspect_capture_mode tinspect_snapshot_capture_mode(const tinspect_snapshot *snap)
{
	if (snap->d->from_core)
		return TINSPECT_CAPTURE_CORE;
	switch (snap->d->capture) {
	case DBS_CAPTURE_NONBLOCKING: return TINSPECT_CAPTURE_NONBLOCKING;
	case DBS_CAPTURE_CONFIRMATION: return TINSPECT_CAPTURE_CONFIRMATION;
	case DBS_CAPTURE_STOP: break;
	}
	return TINSPECT_CAPTURE_ALL_STOP;
}

const char *tinspect_capture_mode_name(enum tinspect_capture_mode mode)
{
	switch (mode) {
	case TINSPECT_CAPTURE_ALL_STOP: return "all-stop";
	case TINSPECT_CAPTURE_CORE: return "core";
	case TINSPECT_CAPTURE_NONBLOCKING: return "nonblocking";
	case TINSPECT_CAPTURE_CONFIRMATION: return "confirmation";
	}
	return "all-stop";
}

int tinspect_snapshot_candidates(const tinspect_snapshot *snap, size_t *ret_cycles,
				 size_t *ret_stalls, uint64_t *ret_observe_ns)
{
	if (snap->d->capture != DBS_CAPTURE_CONFIRMATION)
		return -ENODATA;
	if (ret_cycles)
		*ret_cycles = snap->d->candidate_cycles;
	if (ret_stalls)
		*ret_stalls = snap->d->candidate_stalls;
	if (ret_observe_ns)
		*ret_observe_ns = snap->d->observe_ns;
	return 0;
}

uint64_t tinspect_snapshot_timing_ns(const tinspect_snapshot *snap,
				     enum tinspect_timing step)
{
	const struct dbs_timings *t = &snap->d->timings;
	switch (step) {
	case TINSPECT_TIMING_SCAN: return t->scan_ns;
	case TINSPECT_TIMING_STOP: return t->stop_ns;
	case TINSPECT_TIMING_REGS: return t->regs_ns;
	case TINSPECT_TIMING_MEMORY: return t->memory_ns;
	case TINSPECT_TIMING_THREAD_DB: return t->thread_db_ns;
	case TINSPECT_TIMING_RESUME: return t->resume_ns;
	case TINSPECT_TIMING_ANALYSE: return t->analyse_ns;
	}
	return 0;
}

TIN_GET(size_t, tinspect_snapshot_threads_seen, tinspect_snapshot, threads_seen)
TIN_GET(size_t, tinspect_snapshot_threads_stopped, tinspect_snapshot,
	threads_stopped)
TIN_GET(size_t, tinspect_snapshot_threads_vanished, tinspect_snapshot,
	threads_vanished)
TIN_GET(size_t, tinspect_snapshot_stragglers, tinspect_snapshot, stragglers)
TIN_GET(size_t, tinspect_snapshot_threads_with_errors, tinspect_snapshot,
	threads_with_errors)
TIN_GET(bool, tinspect_snapshot_has_stacks, tinspect_snapshot, stacks)
TIN_GET(uint64_t, tinspect_snapshot_stack_bytes_copied, tinspect_snapshot,
	stack_bytes_copied)

TIN_LIST(tinspect_snapshot_nerrors, tinspect_snapshot_error, tinspect_snapshot,
	 char, h->d->nerrors, h->d->errors[i])

TIN_LIST(tinspect_snapshot_nwarnings, tinspect_snapshot_warning,
	 tinspect_snapshot, char, h->d->nwarnings, h->d->warnings[i])

const char *tinspect_snapshot_syscall_name(const tinspect_snapshot *snap, long nr)
{
	return snap->d->arch ? arch_syscall_name(snap->d->arch, nr) : NULL;
}

/* ---- threads ------------------------------------------------------------------------ */

TIN_LIST(tinspect_snapshot_nthreads, tinspect_snapshot_thread,
	 tinspect_snapshot, tinspect_thread, h->d->nthreads, &h->threads[i])

static bool tid_below(const void *e, const void *key)
{
	return ((const struct dbs_thread *)e)->tid < *(const pid_t *)key;
}

/* The main thread first, then the others by tid (dbsession.h): a binary
 * search, with a scan for a snapshot in any other order. */
const tinspect_thread *tinspect_snapshot_thread_by_tid(const tinspect_snapshot *snap,
						       pid_t tid)
{
	const struct dbs_snapshot *d = snap->d;
	size_t n = d->nthreads;
	if (!n)
		return NULL;
	if (d->threads[0].tid == tid)
		return &snap->threads[0];
	size_t lo = 1 + array_partition(d->threads + 1, n - 1,
					sizeof *d->threads, tid_below, &tid);
	if (lo < n && d->threads[lo].tid == tid)
		return &snap->threads[lo];
	for (size_t i = 0; i < n; i++)
		if (d->threads[i].tid == tid)
			return &snap->threads[i];
	return NULL;
}

/* ---- thread-local variables ------------------------------------------------------------ */

TIN_LIST(tinspect_snapshot_ntls_vars, tinspect_snapshot_tls_var,
	 tinspect_snapshot, tinspect_tls_var, h->d->ntls_vars,
	 TIN_CAST(const tinspect_tls_var *, &h->d->tls_vars[i]))

TIN_GET_CAST(const char *, tinspect_tls_var_name, tinspect_tls_var, tin_tls_var,
	     name)
TIN_GET_CAST(bool, tinspect_tls_var_is_errno, tinspect_tls_var, tin_tls_var,
	     is_errno)
TIN_GET_CAST(bool, tinspect_tls_var_found, tinspect_tls_var, tin_tls_var, found)
TIN_GET_CAST(const char *, tinspect_tls_var_error, tinspect_tls_var,
	     tin_tls_var, error)
TIN_GET_CAST(const char *, tinspect_tls_var_module, tinspect_tls_var,
	     tin_tls_var, module)
TIN_GET_CAST(uint64_t, tinspect_tls_var_offset, tinspect_tls_var, tin_tls_var,
	     offset)
TIN_GET_CAST(enum tinspect_tls_type, tinspect_tls_var_type, tinspect_tls_var,
	     tin_tls_var, type)
TIN_GET_CAST(unsigned, tinspect_tls_var_size, tinspect_tls_var, tin_tls_var,
	     size)
TIN_GET_CAST(const char *, tinspect_tls_var_type_name, tinspect_tls_var,
	     tin_tls_var, type_name)
TIN_GET_CAST(const char *, tinspect_tls_var_c_type, tinspect_tls_var,
	     tin_tls_var, c_type)
TIN_GET_CAST(const char *, tinspect_tls_var_source, tinspect_tls_var,
	     tin_tls_var, source)

/* ---- pthread keys ------------------------------------------------------------------------- */

TIN_GET(bool, tinspect_snapshot_keys_read, tinspect_snapshot, keys_read)
TIN_GET(size_t, tinspect_snapshot_keys_max, tinspect_snapshot, keys_max)

TIN_LIST(tinspect_snapshot_nkeys, tinspect_snapshot_key, tinspect_snapshot,
	 tinspect_key, h->d->nkeys,
	 TIN_CAST(const tinspect_key *, &h->d->keys[i]))

TIN_GET_CAST(unsigned, tinspect_key_id, tinspect_key, tin_key, key)
TIN_GET_CAST(uint64_t, tinspect_key_seq, tinspect_key, tin_key, seq)

const tinspect_symbol *tinspect_key_destructor(const tinspect_key *key)
{
	const struct dbs_key *k = tin_key(key);
	return k->destructor ? TIN_CAST(const tinspect_symbol *, &k->destructor_sym)
			     : NULL;
}

/* ---- language runtimes ----------------------------------------------------------------------- */

TIN_LIST(tinspect_snapshot_nruntimes, tinspect_snapshot_runtime,
	 tinspect_snapshot, tinspect_runtime, h->d->nruntimes,
	 TIN_CAST(const tinspect_runtime *, &h->d->runtimes[i]))

TIN_GET_CAST(const char *, tinspect_runtime_name, tinspect_runtime, tin_runtime,
	     name)
TIN_GET_CAST(const char *, tinspect_runtime_module, tinspect_runtime,
	     tin_runtime, module)
TIN_GET_CAST(const char *, tinspect_runtime_note, tinspect_runtime, tin_runtime,
	     note)
TIN_GET_CAST(const char *, tinspect_runtime_version, tinspect_runtime,
	     tin_runtime, version)

/* ---- symbols ------------------------------------------------------------------------------ */

TIN_GET_CAST(uint64_t, tinspect_symbol_addr, tinspect_symbol, tin_symbol, addr)
TIN_GET_CAST(const char *, tinspect_symbol_module, tinspect_symbol, tin_symbol,
	     module)
TIN_GET_CAST(const char *, tinspect_symbol_name, tinspect_symbol, tin_symbol,
	     name)
TIN_GET_CAST(uint64_t, tinspect_symbol_offset, tinspect_symbol, tin_symbol,
	     offset)
