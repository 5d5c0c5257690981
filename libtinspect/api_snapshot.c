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
#include <string.h>

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

pid_t tinspect_snapshot_pid(const tinspect_snapshot *snap)
{
	return snap->d->pid;
}

const char *tinspect_snapshot_exe(const tinspect_snapshot *snap)
{
	return snap->d->exe;
}

size_t tinspect_snapshot_argc(const tinspect_snapshot *snap)
{
	return snap->d->argc;
}

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

const char *tinspect_snapshot_libc(const tinspect_snapshot *snap)
{
	return snap->d->libc_name;
}

const char *tinspect_snapshot_libc_version(const tinspect_snapshot *snap)
{
	return snap->d->libc_version[0] ? snap->d->libc_version : NULL;
}

const char *tinspect_snapshot_threads_source(const tinspect_snapshot *snap)
{
	return dbs_threads_source_name((enum dbs_threads_source)snap->d->threads_source);
}

enum tinspect_tdb_status tinspect_snapshot_tdb_status(const tinspect_snapshot *snap)
{
	return (enum tinspect_tdb_status)snap->d->tdb_status;
}

const char *tinspect_tdb_status_name(enum tinspect_tdb_status status)
{
	return dbs_tdb_status_name((enum dbs_tdb_status)status);
}

const char *tinspect_snapshot_tdb_detail(const tinspect_snapshot *snap)
{
	return snap->d->tdb_detail;
}

const char *tinspect_snapshot_tdb_library(const tinspect_snapshot *snap)
{
	return snap->d->thread_db_path;
}

_Static_assert(TINSPECT_TDB_FROM_GIVEN == (int)DBS_TDB_FROM_GIVEN &&
	       TINSPECT_TDB_FROM_TARGET == (int)DBS_TDB_FROM_TARGET,
	       "tinspect_tdb_origin is dbs_tdb_origin");

enum tinspect_tdb_origin tinspect_snapshot_tdb_origin(const tinspect_snapshot *snap)
{
	return (enum tinspect_tdb_origin)snap->d->tdb_origin;
}

const char *tinspect_tdb_origin_name(enum tinspect_tdb_origin origin)
{
	return dbs_tdb_origin_name((enum dbs_tdb_origin)origin);
}

enum tinspect_modmap tinspect_snapshot_modmap(const tinspect_snapshot *snap)
{
	return (enum tinspect_modmap)snap->d->modmap_source;
}

uint64_t tinspect_snapshot_module_generation(const tinspect_snapshot *snap)
{
	return snap->d->module_generation;
}

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
	memcpy(ret, &v, size < sizeof v ? size : sizeof v);
	return 0;
}

uint64_t tinspect_snapshot_freeze_ns(const tinspect_snapshot *snap)
{
	return snap->d->freeze_ns;
}

uint64_t tinspect_snapshot_duration_ns(const tinspect_snapshot *snap)
{
	return snap->d->duration_ns;
}

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

size_t tinspect_snapshot_threads_seen(const tinspect_snapshot *snap)
{
	return snap->d->threads_seen;
}

size_t tinspect_snapshot_threads_stopped(const tinspect_snapshot *snap)
{
	return snap->d->threads_stopped;
}

size_t tinspect_snapshot_threads_vanished(const tinspect_snapshot *snap)
{
	return snap->d->threads_vanished;
}

size_t tinspect_snapshot_stragglers(const tinspect_snapshot *snap)
{
	return snap->d->stragglers;
}

size_t tinspect_snapshot_threads_with_errors(const tinspect_snapshot *snap)
{
	return snap->d->threads_with_errors;
}

bool tinspect_snapshot_has_stacks(const tinspect_snapshot *snap)
{
	return snap->d->stacks;
}

uint64_t tinspect_snapshot_stack_bytes_copied(const tinspect_snapshot *snap)
{
	return snap->d->stack_bytes_copied;
}

size_t tinspect_snapshot_nerrors(const tinspect_snapshot *snap)
{
	return snap->d->nerrors;
}

const char *tinspect_snapshot_error(const tinspect_snapshot *snap, size_t i)
{
	return i < snap->d->nerrors ? snap->d->errors[i] : NULL;
}

size_t tinspect_snapshot_nwarnings(const tinspect_snapshot *snap)
{
	return snap->d->nwarnings;
}

const char *tinspect_snapshot_warning(const tinspect_snapshot *snap, size_t i)
{
	return i < snap->d->nwarnings ? snap->d->warnings[i] : NULL;
}

const char *tinspect_snapshot_syscall_name(const tinspect_snapshot *snap, long nr)
{
	return snap->d->arch ? arch_syscall_name(snap->d->arch, nr) : NULL;
}

/* ---- threads ------------------------------------------------------------------------ */

size_t tinspect_snapshot_nthreads(const tinspect_snapshot *snap)
{
	return snap->d->nthreads;
}

const tinspect_thread *tinspect_snapshot_thread(const tinspect_snapshot *snap, size_t i)
{
	return i < snap->d->nthreads ? &snap->threads[i] : NULL;
}

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

size_t tinspect_snapshot_ntls_vars(const tinspect_snapshot *snap)
{
	return snap->d->ntls_vars;
}

const tinspect_tls_var *tinspect_snapshot_tls_var(const tinspect_snapshot *snap, size_t i)
{
	return i < snap->d->ntls_vars
		? TIN_CAST(const tinspect_tls_var *, &snap->d->tls_vars[i]) : NULL;
}

const char *tinspect_tls_var_name(const tinspect_tls_var *var)
{
	return tin_tls_var(var)->name;
}

bool tinspect_tls_var_is_errno(const tinspect_tls_var *var)
{
	return tin_tls_var(var)->is_errno;
}

bool tinspect_tls_var_found(const tinspect_tls_var *var)
{
	return tin_tls_var(var)->found;
}

const char *tinspect_tls_var_error(const tinspect_tls_var *var)
{
	return tin_tls_var(var)->error;
}

const char *tinspect_tls_var_module(const tinspect_tls_var *var)
{
	return tin_tls_var(var)->module;
}

uint64_t tinspect_tls_var_offset(const tinspect_tls_var *var)
{
	return tin_tls_var(var)->offset;
}

enum tinspect_tls_type tinspect_tls_var_type(const tinspect_tls_var *var)
{
	return (enum tinspect_tls_type)tin_tls_var(var)->type;
}

unsigned tinspect_tls_var_size(const tinspect_tls_var *var)
{
	return tin_tls_var(var)->size;
}

const char *tinspect_tls_var_type_name(const tinspect_tls_var *var)
{
	return tin_tls_var(var)->type_name;
}

const char *tinspect_tls_var_c_type(const tinspect_tls_var *var)
{
	return tin_tls_var(var)->c_type;
}

const char *tinspect_tls_var_source(const tinspect_tls_var *var)
{
	return tin_tls_var(var)->source;
}

/* ---- pthread keys ------------------------------------------------------------------------- */

bool tinspect_snapshot_keys_read(const tinspect_snapshot *snap)
{
	return snap->d->keys_read;
}

size_t tinspect_snapshot_keys_max(const tinspect_snapshot *snap)
{
	return snap->d->keys_max;
}

size_t tinspect_snapshot_nkeys(const tinspect_snapshot *snap)
{
	return snap->d->nkeys;
}

const tinspect_key *tinspect_snapshot_key(const tinspect_snapshot *snap, size_t i)
{
	return i < snap->d->nkeys ? TIN_CAST(const tinspect_key *, &snap->d->keys[i])
				  : NULL;
}

unsigned tinspect_key_id(const tinspect_key *key)
{
	return tin_key(key)->key;
}

uint64_t tinspect_key_seq(const tinspect_key *key)
{
	return tin_key(key)->seq;
}

const tinspect_symbol *tinspect_key_destructor(const tinspect_key *key)
{
	const struct dbs_key *k = tin_key(key);
	return k->destructor ? TIN_CAST(const tinspect_symbol *, &k->destructor_sym)
			     : NULL;
}

/* ---- language runtimes ----------------------------------------------------------------------- */

size_t tinspect_snapshot_nruntimes(const tinspect_snapshot *snap)
{
	return snap->d->nruntimes;
}

const tinspect_runtime *tinspect_snapshot_runtime(const tinspect_snapshot *snap,
						  size_t i)
{
	return i < snap->d->nruntimes
		? TIN_CAST(const tinspect_runtime *, &snap->d->runtimes[i]) : NULL;
}

const char *tinspect_runtime_name(const tinspect_runtime *rt)
{
	return tin_runtime(rt)->name;
}

const char *tinspect_runtime_module(const tinspect_runtime *rt)
{
	return tin_runtime(rt)->module;
}

const char *tinspect_runtime_note(const tinspect_runtime *rt)
{
	return tin_runtime(rt)->note;
}

const char *tinspect_runtime_version(const tinspect_runtime *rt)
{
	return tin_runtime(rt)->version;
}

/* ---- symbols ------------------------------------------------------------------------------ */

uint64_t tinspect_symbol_addr(const tinspect_symbol *sym)
{
	return tin_symbol(sym)->addr;
}

const char *tinspect_symbol_module(const tinspect_symbol *sym)
{
	return tin_symbol(sym)->module;
}

const char *tinspect_symbol_name(const tinspect_symbol *sym)
{
	return tin_symbol(sym)->name;
}

uint64_t tinspect_symbol_offset(const tinspect_symbol *sym)
{
	return tin_symbol(sym)->offset;
}
