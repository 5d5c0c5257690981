/*
 * session.c: init / update / destroy.  One update is the data flow of
 * docs/ARCHITECTURE.md ("One snapshot"): list tasks and read their /proc
 * facts while the target runs; stop everything; gather registers and
 * libthread_db's view through the per-stop page cache (prefetched in
 * batches); resume; then analyse and build the snapshot from the
 * copies.  Only what lies between the stop and the resume is frozen
 * time.
 */
#include "dbs_int.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

const char *dbs_tdb_status_name(enum dbs_tdb_status s)
{
	switch (s) {
	case DBS_TDB_OK: return "ok";
	case DBS_TDB_NOLIBTHREAD: return "no_libthread";
	case DBS_TDB_VERSION: return "version_mismatch";
	case DBS_TDB_NOSYMS: return "no_symbols";
	case DBS_TDB_UNAVAILABLE: return "unavailable";
	case DBS_TDB_ERROR: return "error";
	case DBS_TDB_NOT_USED: return "not_used";
	}
	return "error";
}

const char *dbs_tdb_origin_name(enum dbs_tdb_origin o)
{
	switch (o) {
	case DBS_TDB_FROM_NONE: return NULL;
	case DBS_TDB_FROM_SYSTEM: return "system";
	case DBS_TDB_FROM_TARGET: return "target";
	case DBS_TDB_FROM_GIVEN: return "given";
	}
	return NULL;
}

static struct dbs_session *session_new(pid_t pid, const struct dbs_options *opts)
{
	struct dbs_session *s = calloc(1, sizeof *s);
	if (!s)
		return NULL;
	s->pid = pid;
	if (opts)
		s->opts = *opts;
	if (!s->opts.stack_bytes)
		s->opts.stack_bytes = DBS_DEFAULT_STACK_BYTES;
	if (!s->opts.max_frames)
		s->opts.max_frames = DBS_DEFAULT_MAX_FRAMES;
	/* tracer threads (psvc_stop_opts.tracers): TINSPECT_TRACERS, else
	 * one per CPU */
	const char *tr = getenv("TINSPECT_TRACERS");
	char *end;
	unsigned long ntr = tr ? strtoul(tr, &end, 10) : 0;
	if (tr && *tr && !*end && ntr >= 1 && ntr <= 64)
		s->tracers = (unsigned)ntr;
	s->clk_tck = sysconf(_SC_CLK_TCK);
	if (s->clk_tck <= 0)
		s->clk_tck = 100;
	return s;
}

static int session_setup(struct dbs_session *s, struct dbs_session **ret);

int dbs_session_init(pid_t pid, const struct dbs_options *opts,
		     struct dbs_session **ret)
{
	struct dbs_session *s = session_new(pid, opts);
	if (!s)
		return -ENOMEM;
	struct psvc_open_opts oo = { .force_proc_mem = s->opts.force_proc_mem,
				     .holding = s->opts.holding,
				     .cancel = s->opts.cancel };
	int err = psvc_open(pid, &oo, &s->t);
	if (err) {
		free(s);
		return err;
	}
	return session_setup(s, ret);
}

int dbs_session_init_core(const char *core, const char *exe,
			  const char *sysroot, const struct dbs_options *opts,
			  struct dbs_session **ret, char *why, size_t whylen)
{
	struct dbs_session *s = session_new(0, opts);
	if (!s)
		return -ENOMEM;
	struct psvc_core_open_opts co = { .sysroot = sysroot, .exe = exe,
					  .holding = s->opts.holding,
					  .cancel = s->opts.cancel };
	int err = psvc_open_core(core, &co, &s->t, why, whylen);
	if (err) {
		free(s);
		return err;
	}
	s->pid = psvc_pid(s->t);
	s->from_core = true;
	return session_setup(s, ret);
}

/* What init does once the target is open: the module map, the unwinder,
 * libthread_db. */
static int session_setup(struct dbs_session *s, struct dbs_session **ret)
{
	int err;
	err = psvc_modules_load(s->t);
	if (err && err != -ESRCH) {
		/* no module map: threads are still listed from /proc */
		err = 0;
	}
	if (err) {
		dbs_session_destroy(s);
		return err;
	}
	if (!s->opts.no_stacks && dbs_unwinder_new(s->t, &s->unwinder) != 0) {
		dbs_session_destroy(s);
		return -ENOMEM;
	}
	char *detail = NULL;
	if (dbs_tdb_load(s->opts.thread_db_path, &s->lib, &detail) == 0)
		s->lib_loaded = true;
	dbs_libc_setup(s);
	if (!s->lib_loaded && detail) {
		free(s->tdb_detail);
		s->tdb_detail = detail;
	} else {
		free(detail);
	}
	*ret = s;
	return 0;
}

pid_t dbs_session_pid(const struct dbs_session *s)
{
	return psvc_pid(s->t);
}

void dbs_session_destroy(struct dbs_session *s)
{
	if (!s)
		return;
	if (s->lib_loaded)
		dbs_glibc_release(s);
	dbs_tls_free(s);
	dbs_keys_free(s);
	free(s->tdb_warning);
	free(s->tdb_detail);
	s->tdb_detail = NULL;
	free(s->tid_off_why);
	dbs_waits_free(s->waits);
	dbs_held_forget_all(s);
	free(s->musl_held);
	s->musl_held = NULL;
	s->nmusl_held = 0;
	dbs_unwinder_free(s->unwinder);
	s->unwinder = NULL;
	psvc_close(s->t);
	s->t = NULL;
	if (s->lib_loaded)
		dbs_tdb_unload(&s->lib);
	s->lib_loaded = false;
	free(s);
}

/* The start routine of a new thread held at its first stop, from
 * libthread_db; 0 if it cannot say, or if the descriptor at tp is not that
 * thread's (a stack reused by another thread). */
static uint64_t new_thread_start(void *arg, pid_t tid, uint64_t tp)
{
	struct dbs_session *s = arg;
	if (!s->ta)
		return 0;
	psvc_note_thread(s->t, tid, tp);
	td_thrhandle_t th;
	td_thrinfo_t ti;
	psvc_tdb_budget(s->t, 2 * TDB_READ_BUDGET);
	/* the thread is held: no file may be opened meanwhile (a file
	 * system that does not answer would hold it for as long) */
	psvc_files_pause(s->t, true);
	bool ok = s->lib.td_ta_map_lwp2thr(s->ta, tid, &th) == TD_OK &&
		  s->lib.td_thr_get_info(&th, &ti) == TD_OK && ti.ti_lid == tid;
	psvc_files_pause(s->t, false);
	return ok ? (uint64_t)(uintptr_t)ti.ti_startfunc : 0;
}

void dbs_session_unfollow(struct dbs_session *s)
{
	psvc_follow_end(s->t);
}

void dbs_session_service(struct dbs_session *s)
{
	psvc_follow_service(s->t);
}

/* While a file is waited for: new threads of a followed target go on. */
static void service_while_waiting(void *t)
{
	psvc_follow_service(t);
}

int dbs_session_follow(struct dbs_session *s)
{
	if (s->opts.mode != DBS_MODE_STOP)
		return -EINVAL;	/* following attaches: nonblocking must not */
	psvc_follow_set_resolver(s->t, new_thread_start, s);
	psvc_files_on_wait(s->t, service_while_waiting, s->t);
	return psvc_follow_start(s->t);
}

struct event_ctx {
	struct dbs_session *s;
	dbs_event_fn fn;
	void *arg;
};

/* A psvc event as the session tells it: the start routine of a new thread
 * (read while the thread was held) symbolized. */
static void on_event(void *arg, const struct psvc_event *pe)
{
	struct event_ctx *c = arg;
	struct dbs_session *s = c->s;
	struct dbs_event ev = {
		.kind = pe->kind == PSVC_EVENT_THREAD_CREATED
				? DBS_EVENT_THREAD_CREATED : DBS_EVENT_THREAD_EXITED,
		.tid = pe->tid,
		.parent = pe->parent,
		.wait_status = pe->status,
		.time = { (time_t)(pe->time_ns / 1000000000u),
			  (long)(pe->time_ns % 1000000000u) },
	};
	if (ev.kind == DBS_EVENT_THREAD_CREATED && pe->start_known && pe->start) {
		dbs_symbolize(s->t, pe->start, &ev.start);
		ev.have_start = true;
	}
	c->fn(c->arg, &ev);
	free(ev.start.module);
	free(ev.start.name);
}

int dbs_session_wait(struct dbs_session *s, uint64_t deadline_ns,
		     dbs_event_fn fn, void *arg)
{
	if (psvc_followed(s->t) == 0) {
		/* not following: just sleep, until the deadline or a signal */
		struct timespec ts = { (time_t)(deadline_ns / 1000000000u),
				       (long)(deadline_ns % 1000000000u) };
		while (!(s->opts.cancel && *s->opts.cancel)) {
			int r = clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
			if (r == 0)
				return 0;
			if (r != EINTR)
				return -r;
		}
		return -EINTR;
	}
	struct event_ctx c = { s, fn, arg };
	return psvc_follow_wait(s->t, deadline_ns, s->opts.cancel,
				s->opts.wake_signal, on_event, &c);
}

/* ---- one update ------------------------------------------------------------------ */

static void fill_proc(struct dbs_session *s, struct dbs_thread *th,
		      const struct psvc_taskinfo *ti)
{
	th->proc_valid = ti->valid;
	th->proc_before_stop = ti->before_stop;
	/* without NSpid, our TID is theirs only in one namespace */
	th->ns_tid = ti->ns_tid ? ti->ns_tid :
		     psvc_same_pidns(s->t) ? th->tid : 0;
	/* a core has no /proc facts but may name a thread (the main one) */
	if (ti->valid || ti->comm_len) {
		th->name = malloc(ti->comm_len + 1);
		if (th->name) {
			memcpy(th->name, ti->comm, ti->comm_len);
			th->name[ti->comm_len] = '\0';
			th->name_len = ti->comm_len;
		}
	}
	if (!ti->valid)
		return;
	th->state = ti->state;
	memcpy(th->wchan, ti->wchan, sizeof th->wchan);
	th->utime_s = (double)ti->utime_ticks / (double)s->clk_tck;
	th->stime_s = (double)ti->stime_ticks / (double)s->clk_tck;
	th->have_ctxt = ti->status_valid && ti->ctxt_lines == 2;
	th->ctxt_switches = ti->ctxt_switches;
	th->vol_ctxt_switches = ti->vol_ctxt_switches;
	th->policy = ti->policy;
	th->rt_priority = ti->rt_priority;
	th->priority = ti->priority;
	th->nice = ti->nice;
	th->processor = ti->processor;
	th->sigblk = ti->sigblk;
	th->sigpnd = ti->sigpnd;
	memcpy(th->cpus_allowed, ti->cpus_allowed, sizeof th->cpus_allowed);
	th->proc_sc_kind = ti->sc_kind;
	th->proc_sc_nr = ti->sc_nr;
	memcpy(th->proc_sc_args, ti->sc_args, sizeof th->proc_sc_args);
}

static int cmp_threads(const void *a, const void *b, void *pid)
{
	const struct dbs_thread *x = a, *y = b;
	pid_t p = *(pid_t *)pid;
	if ((x->tid == p) != (y->tid == p))
		return x->tid == p ? -1 : 1;
	return (x->tid > y->tid) - (x->tid < y->tid);
}

/* The process-wide facts of a snapshot: the program, its C library and
 * thread library, its modules, and the warnings they earn. */
static void snapshot_process(struct dbs_session *s, struct dbs_snapshot *snap,
			     size_t n)
{
	struct psvc_target *t = s->t;
	snap->pid = s->pid;
	snap->arch = psvc_arch(t);
	snap->exe = dbs_strdup(psvc_exe_path(t));
	const char *const *argv;
	snap->argc = psvc_cmdline(t, &argv);
	snap->argv = calloc(snap->argc + 1, sizeof *snap->argv);
	for (size_t i = 0; snap->argv && i < snap->argc; i++)
		snap->argv[i] = dbs_strdup(argv[i]);
	if (!snap->argv)
		snap->argc = 0;
	memcpy(snap->glibc_version, s->glibc_version, sizeof snap->glibc_version);
	snap->libc_name = s->libc_found || s->ta ? s->libc->name : NULL;
	memcpy(snap->libc_version, s->libc_version, sizeof snap->libc_version);
	snap->threads_source = s->ta ? DBS_THREADS_LIBTHREAD_DB : s->threads_source;
	snap->tdb_status = s->tdb_status;
	snap->tdb_detail = dbs_strdup(s->tdb_detail);
	snap->modmap_source = psvc_modmap_source(t);
	snap->module_generation = psvc_modules_generation(t);
	snap->threads_seen = n;
	if (s->unwinder) {
		int err = dbs_unwinder_sync(s->unwinder);
		if (err)
			dbs_add_error(&snap->errors, &snap->nerrors,
				       "stacks: cannot load the modules: %s",
				       strerror(-err));
		snap->stacks = true;
		snap->strings = dbs_strpool_ref(dbs_unwinder_pool(s->unwinder));
	}
	if (s->ta) {
		snap->thread_db_path = dbs_strdup(s->lib.path);
		snap->tdb_origin = s->lib_origin;
	}
	if (s->tdb_warning)
		dbs_add_error(&snap->warnings, &snap->nwarnings, "%s",
			       s->tdb_warning);
	/* runtimes.c: JVM, CPython, Go: locks tinspect cannot see */
	dbs_runtimes_detect(s, snap);
	if (psvc_modmap_note(t))
		dbs_add_error(&snap->warnings, &snap->nwarnings, "module map: %s",
			       psvc_modmap_note(t));
	dbs_hazards_warn(s, snap);	/* memory not waited for */
	snap->from_core = !strcmp(psvc_backend_name(t), "core");
	snap->have_signal = psvc_signal_info(t, &snap->signal) == 0;
}

/* Task k appeared during the stop: its /proc facts now; if it has exited
 * since, keep what the stop learnt (its namespace TID) rather than a
 * zeroed record. */
static void late_task_facts(struct psvc_target *t, struct psvc_task *k)
{
	struct psvc_taskinfo ti;
	if (psvc_task_facts(t, k->tid, &ti) == 0 && ti.valid) {
		if (!ti.ns_tid)
			ti.ns_tid = k->info.ns_tid;
		ti.before_stop = false;
		k->info = ti;
	}
}

/* What the capture did to task k, onto its thread th: stopped or not,
 * why it could not be attached or its registers read, its registers and
 * the system call they show. */
static void thread_capture(struct dbs_snapshot *snap, struct dbs_thread *th,
			   const struct psvc_task *k)
{
	th->stopped = k->flags & PSVC_TASK_CAPTURED;
	th->straggler = k->flags & PSVC_TASK_STRAGGLER;
	th->jobctl_stopped = (k->flags & PSVC_TASK_JOBCTL) ||
			     (k->info.before_stop && k->info.state == 'T');
	if (th->stopped)
		snap->threads_stopped++;
	if (th->straggler) {
		snap->stragglers++;
		dbs_add_error(&th->errors, &th->nerrors,
			       "did not stop within the stop timeout "
			       "(state %c%s%s); left out of the snapshot",
			       th->state ? th->state : '?',
			       th->wchan[0] ? ", wchan " : "", th->wchan);
	}
	if (k->seize_errno == EPERM && k->info.state == 'Z') {
		/* an exited main thread (pthread_exit) stays a zombie
		 * while others run: nothing to attach to, no error */
	} else if (k->seize_errno && k->info.tracer_pid > 0)
		dbs_add_error(&th->errors, &th->nerrors,
			       "could not attach: %s (traced by PID %d)",
			       strerror(k->seize_errno), (int)k->info.tracer_pid);
	else if (k->seize_errno)
		dbs_add_error(&th->errors, &th->nerrors,
			       "could not attach: %s", strerror(k->seize_errno));
	if (k->regs_errno)
		dbs_add_error(&th->errors, &th->nerrors,
			       "registers: %s", strerror(k->regs_errno));
	th->observed = (k->flags & PSVC_TASK_OBSERVED) &&
		       !(k->flags & PSVC_TASK_MOVED);
	th->moved = k->flags & PSVC_TASK_MOVED;
	if ((k->flags & PSVC_TASK_HAVE_REGS) && !th->moved) {
		th->have_regs = true;
		memcpy(th->gregs, k->gregs, sizeof th->gregs);
		th->pc = arch_pc(snap->arch, k->gregs);
		th->sp = arch_sp(snap->arch, k->gregs);
		th->tp = k->tp;
		arch_decode_syscall(snap->arch, k->gregs,
				    k->info.sc_kind == PSVC_SC_IN_SYSCALL
					    ? k->info.sc_nr : -1,
				    &th->syscall);
	} else {
		th->syscall.nr = -1;
	}
}

/* Thread th's stack, unwound over the copy the stop took (r). */
static void thread_unwind(struct dbs_session *s, struct dbs_snapshot *snap,
			  struct dbs_thread *th, const struct tdb_result *r)
{
	/* what the stop really copied: a range can end early
	 * (unreadable memory, the freeze limit) */
	uint64_t lo = r->stack_lo;
	th->stack.copied_from = lo;
	th->stack.copied_to = lo + psvc_frozen_extent(s->t, lo, r->stack_hi - lo);
	snap->stack_bytes_copied += th->stack.copied_to - lo;
	/* musl's libc has no unwind tables (docs/MUSL.md
	 * §4): its stacks go on by scanning */
	dbs_unwinder_unwind(s->unwinder, th, s->opts.max_frames,
			    s->libc == &dbs_libc_musl);
	/* a copy that ended short of what was asked */
	dbs_stack_explain_copy(s, th, lo, r->stack_hi);
	/* what counts as a thread error: an unwind that
	 * failed in native code (README "Exit status") */
	if (dbs_stack_end_is_error(th->stack.end))
		dbs_add_error(&th->errors, &th->nerrors,
			       "stack: %s", th->stack.error
				       ? th->stack.error : "unwinding failed");
}

/* Thread th of the snapshot from task i (k) and what the capture gathered
 * of it (res, NULL if nothing): its /proc facts, the capture's, which
 * pthread it is, its stack, TLS values, keys and stack bounds. */
static void build_thread(struct dbs_session *s, struct dbs_snapshot *snap,
			 struct dbs_thread *th, struct psvc_task *k,
			 const struct tdb_result *res, size_t i)
{
	struct psvc_target *t = s->t;
	th->tid = k->tid;
	if (k->flags & PSVC_TASK_LATE)
		late_task_facts(t, k);
	fill_proc(s, th, &k->info);
	thread_capture(snap, th, k);
	/* which pthread the task is: its C library's say (libc.h) */
	if (res && th->have_regs)
		s->libc->identify(s, snap, th, &res[i]);
	if (s->unwinder && th->have_regs && res)
		thread_unwind(s, snap, th, &res[i]);
	dbs_tls_fill(s, snap, th, i);
	dbs_keys_fill(s, snap, th, i);
	dbs_stack_fill(s, snap, th);
	if (s->unwinder && th->have_regs && res)
		psvc_frozen_done(t, res[i].stack_lo);	/* it has served */
	if (th->nerrors)
		snap->threads_with_errors++;
}

/* The warnings the threads' building adds to: the backend's and the
 * unwinder's, said last. */
static void snapshot_late_warnings(struct dbs_session *s,
				   struct dbs_snapshot *snap)
{
	struct psvc_target *t = s->t;
	/* the backend's: files refused by build-id, damage in a core, a
	 * file system that did not answer (also while unwinding: last) */
	for (size_t i = 0; i < psvc_nwarnings(t); i++)
		dbs_add_error(&snap->warnings, &snap->nwarnings, "%s",
			       psvc_warning_at(t, i));
	if (s->unwinder) {
		/* debug files refused (not regular files), descriptors
		 * lacking: said once per capture */
		char **notes;
		size_t nn;
		dbs_dbg_files_take_notes(dbs_unwinder_files(s->unwinder), &notes, &nn);
		for (size_t i = 0; i < nn; i++) {
			dbs_add_error(&snap->warnings, &snap->nwarnings,
				       "stacks: %s", notes[i]);
			free(notes[i]);
		}
		free(notes);
	}
}

static struct dbs_snapshot *build_snapshot(struct dbs_session *s,
					   const struct tdb_result *res)
{
	struct psvc_target *t = s->t;
	size_t n = psvc_ntasks(t);
	struct dbs_snapshot *snap = calloc(1, sizeof *snap);
	if (!snap)
		return NULL;
	s->stack_maps_fresh = false;
	snap->threads = calloc(n ? n : 1, sizeof *snap->threads);
	if (!snap->threads) {
		free(snap);
		return NULL;
	}
	snapshot_process(s, snap, n);

	/* Each stack copy is given up as soon as it is unwound (memruns.c),
	 * so what the lock analysis will read of the stacks is kept first,
	 * while every copy is there (a cond's mutex may live on another
	 * thread's stack). */
	for (size_t i = 0; res && s->ta && i < n; i++)
		if (res[i].err == TD_OK && res[i].ti.ti_tid)
			dbs_condwait_retain(s, (uint64_t)res[i].ti.ti_tid, 48);
	/* the descriptors have served (libthread_db, the TLS and key
	 * readers, the word kept just above): their memory goes back */
	psvc_drop_scratch(t);
	for (size_t i = 0; i < n; i++) {
		struct psvc_task *k = psvc_task_at(t, i);
		if (k->flags & PSVC_TASK_GONE) {
			snap->threads_vanished++;
			continue;
		}
		build_thread(s, snap, &snap->threads[snap->nthreads++], k, res, i);
		/* following: a clone or a signal in the target stops the
		 * thread until it is seen; do not make it wait for the
		 * whole analysis */
		if ((i & 63) == 63)
			psvc_follow_service(t);
	}
	snapshot_late_warnings(s, snap);
	qsort_r(snap->threads, snap->nthreads, sizeof *snap->threads,
		cmp_threads, &snap->pid);
	return snap;
}

static int update_body(struct dbs_session *s, bool nonblocking,
		       struct dbs_snapshot **ret)
{
	struct psvc_target *t = s->t;
	uint64_t t0 = psvc_now_ns();

	/* an all-stop capture reads every held task's registers: they say
	 * the system call, /proc need not (psvc_scan_lean) */
	int n = nonblocking ? psvc_scan(t) : psvc_scan_lean(t);
	if (n < 0)
		return n;
	if (psvc_modules_load(t) == 0 &&
	    (psvc_modules_generation(t) != s->ta_generation ||
	     (s->lib_loaded && !s->ta && s->libc == &dbs_libc_glibc)))
		dbs_libc_setup(s);
	dbs_tls_prepare(s);
	dbs_keys_prepare(s);
	if (s->ta)
		dbs_condwait_cleanup_offset(s);	/* symbols read now, not frozen */

	size_t ntasks = psvc_ntasks(t);
	struct psvc_stop_opts so = {
		.max_freeze_ns = s->opts.max_freeze_ns,
		.stop_timeout_ns = s->opts.stop_timeout_ns,
		.cancel = s->opts.cancel,
		.wake_signal = s->opts.wake_signal,
		/* libthread_db's own reads of libc and ld.so, lock words:
		 * mapping the first block would otherwise map (and fault
		 * in) a 1 MiB chunk in the freeze */
		.reserve_blocks = 64,
		.reserve_bytes = dbs_expected_copy_bytes(s),
		/* every descriptor, and the read list of the copies */
		.reserve_scratch_bytes = s->ta ? ntasks * dbs_descriptor_copy_bytes(s) : 0,
		.reserve_runs = 2 * ntasks + 16,
		.reserve_parts = ntasks * dbs_copy_parts(s),
		.nonblocking = nonblocking,
		.tracers = s->tracers,
	};
	uint64_t t_stop = psvc_now_ns();
	int err = psvc_stop(t, &so);
	if (err < 0)
		return err;
	struct timespec captured_at;
	clock_gettime(CLOCK_REALTIME, &captured_at);
	struct dbs_timings tm = { 0 };
	uint64_t t_stopped = psvc_now_ns();
	/* from psvc_stop() to the first stop: buffers made ready, not frozen */
	uint64_t t_first = psvc_first_stop_ns(t) ? psvc_first_stop_ns(t) : t_stop;
	tm.scan_ns = t_first - t0;
	tm.stop_ns = t_stopped - t_first;
	psvc_read_regs(t);
	if (nonblocking)
		dbs_nb_learn_thread_pointers(s);	/* fs_base is not in /proc */
	psvc_resolve_late_ns_tids(t);
	uint64_t t_regs = psvc_now_ns();
	tm.regs_ns = t_regs - t_stopped;

	struct tdb_result *res = calloc(psvc_ntasks(t) + 1, sizeof *res);
	uint64_t t_mem = t_regs;
	if (res) {
		dbs_prefetch_capture(s, res);
		t_mem = psvc_now_ns();
		/* each task's identity, its C library's way (libc.h) */
		s->libc->gather(s, res);
	}
	/* following: threads met at their first stop by this capture */
	psvc_follow_resolve(t);
	dbs_tls_gather(s, res);
	dbs_keys_gather(s, res);
	uint64_t t_tdb = psvc_now_ns();
	tm.memory_ns = t_mem - t_regs;
	tm.thread_db_ns = t_tdb - t_mem;	/* with --tls, --errno, --keys */
	/* the words of the locks blocked threads wait on (locks.c), and of
	 * those the session remembers (lock_held.c) */
	dbs_locks_prefetch(s);
	dbs_held_prefetch(s);
	err = psvc_check_freeze(t);
	psvc_resume(t);
	uint64_t t_resumed = psvc_now_ns();
	tm.resume_ns = t_resumed - t_tdb;
	if (!err && !psvc_alive(t))
		err = -ESRCH;	/* it exited (was killed) while stopped */
	if (err) {
		free(res);
		psvc_drop_scratch(t);
		dbs_tls_finish(s, NULL);
		dbs_keys_finish(s, NULL);
		return err;
	}

	if (res && s->ta && !dbs_tdb_in_freeze(s)) {
		/* libthread_db over the copies (the descriptors: scratch) */
		psvc_frozen_reads(t, true);
		dbs_gather_tdb(s, res, DBS_TDB_REST);
		psvc_frozen_reads(t, false);
	}
	struct dbs_snapshot *snap = build_snapshot(s, res);
	free(res);
	dbs_tls_finish(s, snap);
	dbs_keys_finish(s, snap);
	/* the locks use the frames: after build_snapshot unwound them */
	if (snap && dbs_locks_run(s, snap))
		dbs_add_error(&snap->errors, &snap->nerrors,
			       "lock analysis: out of memory");
	/* who holds what: the locks' words, read in this stop */
	/* (musl: also without waits, from the robust lists) */
	if (snap && (snap->locks || (s->libc == &dbs_libc_musl &&
				     s->threads_source == DBS_THREADS_STRUCT_PTHREAD)) &&
	    dbs_held_run(s, snap))
		dbs_add_error(&snap->errors, &snap->nerrors,
			       "held locks: out of memory");
	if (snap)
		dbs_stacktop_learn(s, snap);	/* for the next copies */
	psvc_release_capture(t);	/* the copies are analysed: let go */
	psvc_follow_service(t);
	if (!snap)
		return -ENOMEM;
	snap->captured_at = captured_at;
	dbs_waits_track(s, snap);	/* uses the locks and the stacks */
	tm.analyse_ns = psvc_now_ns() - t_resumed;
	snap->timings = tm;
	snap->freeze_ns = psvc_freeze_ns(t);
	snap->capture = nonblocking ? DBS_CAPTURE_NONBLOCKING : DBS_CAPTURE_STOP;
	if (snap->nthreads == 0) {
		dbs_snapshot_free(snap);
		return -ESRCH;
	}
	snap->duration_ns = psvc_now_ns() - t0;
	*ret = snap;
	return 0;
}

struct update_job {
	struct dbs_session *s;
	bool nonblocking, idle;
	struct dbs_snapshot *snap;
	int err;
};

static void *update_thread(void *arg)
{
	struct update_job *j = arg;
	/* this thread only (Linux: sched_setscheduler(0) is the caller's
	 * thread; glibc's pthread attributes refuse SCHED_IDLE), inherited
	 * by the threads it starts; if refused, at the caller's priority */
	struct sched_param sp = { .sched_priority = 0 };
	if (j->idle)
		(void)sched_setscheduler(0, SCHED_IDLE, &sp);
	j->err = update_body(j->s, j->nonblocking, &j->snap);
	return NULL;
}

/* One capture in a thread of its own, at SCHED_IDLE if idle; in the
 * caller's thread if none can be made. */
int dbs_capture_in_thread(struct dbs_session *s, bool nonblocking, bool idle,
			  struct dbs_snapshot **ret)
{
	struct update_job j = { .s = s, .nonblocking = nonblocking, .idle = idle,
				.err = -ENOMEM };
	pthread_t th;
	if (pthread_create(&th, NULL, update_thread, &j) != 0)
		return update_body(s, nonblocking, ret);
	pthread_join(th, NULL);
	if (j.err)
		return j.err;
	*ret = j.snap;
	return 0;
}

/*
 * ptrace's tracer is a thread, and when that thread exits the kernel
 * detaches every task it still traces.  So an update that does not stay
 * attached runs in a thread of its own, which ends with it: a thread that
 * was interrupted in uninterruptible sleep and never stopped in time (a
 * straggler) is let go the moment the update returns, instead of stopping
 * when it wakes and waiting until tinspect exits (or, in watch mode, until
 * the next update).  While following, the tracer must stay the same thread
 * for the whole session: the caller's.
 */
int dbs_capture_once(struct dbs_session *s, bool nonblocking,
		     struct dbs_snapshot **ret)
{
	/* nothing is attached: no tracer thread to end */
	if (nonblocking)
		return update_body(s, true, ret);
	if (psvc_followed(s->t))
		return update_body(s, false, ret);
	int err = dbs_capture_in_thread(s, false, false, ret);
	/* whatever that thread still traced, the kernel has detached */
	psvc_forget_stragglers(s->t);
	return err;
}
