/*
 * session.c: init / update / destroy.  One update is the data flow of
 * DESIGN.md: list tasks and read their /proc facts while the target runs;
 * stop everything; gather registers and libthread_db's view through the
 * per-stop page cache (prefetched in batches); resume; then analyse and
 * build the snapshot from the copies.  Only step 3 is frozen time.
 */
#include "dbs_int.h"

#include <errno.h>
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
	}
	return "error";
}

char *dbs_strdup(const char *s)
{
	return s ? strdup(s) : NULL;
}

int snap_add_error(char ***errs, size_t *n, const char *fmt, ...)
{
	char *msg;
	va_list ap;
	va_start(ap, fmt);
	int r = vasprintf(&msg, fmt, ap);
	va_end(ap);
	if (r < 0)
		return -ENOMEM;
	char **ne = realloc(*errs, (*n + 1) * sizeof *ne);
	if (!ne) {
		free(msg);
		return -ENOMEM;
	}
	ne[(*n)++] = msg;
	*errs = ne;
	return 0;
}

/* ---- libthread_db agent ------------------------------------------------------ */

static bool exe_is_static_unsymbolled(struct psvc_target *t)
{
	bool has_ldso = false;
	struct psvc_module *exe = NULL;
	for (size_t i = 0; i < psvc_nmodules(t); i++) {
		struct psvc_module *m = psvc_module_at(t, i);
		if (m->flags & PSVC_MOD_LDSO)
			has_ldso = true;
		if (m->flags & PSVC_MOD_EXE)
			exe = m;
	}
	if (has_ldso || !exe)
		return false;
	return psvc_module_load_elf(t, exe) == 0 && !exe->has_symtab;
}

/* Load the ELF symbol tables libthread_db will ask about now, so that the
 * lookups it makes during the stop cost a hash probe, not a file parse. */
static void preload_elves(struct psvc_target *t)
{
	for (size_t i = 0; i < psvc_nmodules(t); i++) {
		struct psvc_module *m = psvc_module_at(t, i);
		if (m->flags & (PSVC_MOD_LIBC | PSVC_MOD_LDSO | PSVC_MOD_EXE))
			psvc_module_load_elf(t, m);
	}
}

static void ta_release(struct dbs_session *s)
{
	if (s->ta)
		s->lib.td_ta_delete(s->ta);
	s->ta = NULL;
	free(s->tdb_detail);
	s->tdb_detail = NULL;
}

/* (Re)create the thread agent for the current module map. */
static void ta_setup(struct dbs_session *s)
{
	ta_release(s);
	s->ta_generation = psvc_modules_generation(s->t);
	if (!s->lib_loaded) {
		s->tdb_status = DBS_TDB_UNAVAILABLE;
		return;
	}
	preload_elves(s->t);

	uint64_t a;
	s->glibc_version[0] = '\0';
	if (psvc_lookup_symbol(s->t, "__nptl_version", &a) == 0) {
		char v[sizeof s->glibc_version];
		if (psvc_read_string(s->t, a, v, sizeof v) == 0) {
			/* keep it printable: it is target memory */
			size_t i;
			for (i = 0; v[i] && ((v[i] >= '0' && v[i] <= '9') ||
					     v[i] == '.'); i++)
				s->glibc_version[i] = v[i];
			s->glibc_version[i] = '\0';
		}
	}
	uint32_t sz = 0;
	if (psvc_lookup_symbol(s->t, "_thread_db_sizeof_pthread", &a) == 0 &&
	    psvc_read(s->t, a, &sz, sizeof sz) == 0 && sz >= 512 && sz <= 65536)
		s->sizeof_pthread = sz;
	else
		s->sizeof_pthread = 4096;

	td_err_e e = s->lib.td_ta_new(psvc_prochandle(s->t), &s->ta);
	switch (e) {
	case TD_OK:
		s->tdb_status = DBS_TDB_OK;
		return;
	case TD_NOLIBTHREAD:
		s->tdb_status = exe_is_static_unsymbolled(s->t)
					? DBS_TDB_NOSYMS : DBS_TDB_NOLIBTHREAD;
		break;
	case TD_VERSION:
		s->tdb_status = DBS_TDB_VERSION;
		break;
	default:
		s->tdb_status = DBS_TDB_ERROR;
		break;
	}
	s->ta = NULL;
	s->tdb_detail = dbs_strdup(tdb_strerror(e));
}

int dbs_session_init(pid_t pid, const struct dbs_options *opts,
		     struct dbs_session **ret)
{
	struct dbs_session *s = calloc(1, sizeof *s);
	if (!s)
		return -ENOMEM;
	s->pid = pid;
	if (opts)
		s->opts = *opts;
	s->clk_tck = sysconf(_SC_CLK_TCK);
	if (s->clk_tck <= 0)
		s->clk_tck = 100;
	struct psvc_open_opts oo = { .force_proc_mem = s->opts.force_proc_mem };
	int err = psvc_open(pid, &oo, &s->t);
	if (err) {
		free(s);
		return err;
	}
	err = psvc_modules_load(s->t);
	if (err && err != -ESRCH) {
		/* no module map: threads are still listed from /proc */
		err = 0;
	}
	if (err) {
		dbs_session_destroy(s);
		return err;
	}
	char *detail = NULL;
	if (tdb_load(s->opts.thread_db_path, &s->lib, &detail) == 0)
		s->lib_loaded = true;
	ta_setup(s);
	if (!s->lib_loaded && detail) {
		free(s->tdb_detail);
		s->tdb_detail = detail;
	} else {
		free(detail);
	}
	*ret = s;
	return 0;
}

void dbs_session_destroy(struct dbs_session *s)
{
	if (!s)
		return;
	if (s->lib_loaded)
		ta_release(s);
	free(s->tdb_detail);
	s->tdb_detail = NULL;
	psvc_close(s->t);
	s->t = NULL;
	if (s->lib_loaded)
		tdb_unload(&s->lib);
	s->lib_loaded = false;
	free(s);
}

struct psvc_target *dbs_session_target(struct dbs_session *s)
{
	return s->t;
}

/* ---- one update ------------------------------------------------------------------ */

/* What libthread_db said about one task, kept until the snapshot is built. */
struct tdb_result {
	td_err_e err;
	const char *step;
	td_thrinfo_t ti;
};

static void gather_tdb(struct dbs_session *s, struct tdb_result *res)
{
	struct psvc_target *t = s->t;
	size_t n = psvc_ntasks(t);

	/* One batched read of every struct pthread before libthread_db
	 * asks for them one small piece at a time. */
	struct psvc_range *r = calloc(n ? n : 1, sizeof *r);
	size_t nr = 0;
	for (size_t i = 0; r && i < n; i++) {
		struct psvc_task *k = psvc_task_at(t, i);
		if ((k->flags & PSVC_TASK_HAVE_REGS) && k->tp)
			r[nr++] = (struct psvc_range){
				arch_thread_area(psvc_arch(t), k->tp,
						 (int)s->sizeof_pthread),
				s->sizeof_pthread };
	}
	psvc_prefetch(t, r, nr);
	free(r);

	for (size_t i = 0; i < n; i++) {
		struct psvc_task *k = psvc_task_at(t, i);
		res[i].err = TD_NOTHR;
		res[i].step = NULL;
		if (!(k->flags & PSVC_TASK_HAVE_REGS))
			continue;
		if ((i & 63) == 63 && psvc_check_freeze(t))
			return;	/* the caller sees it too and aborts */
		td_thrhandle_t th;
		lwpid_t lwp = k->info.ns_tid ? k->info.ns_tid : k->tid;
		td_err_e e = s->lib.td_ta_map_lwp2thr(s->ta, lwp, &th);
		if (e != TD_OK) {
			res[i].err = e;
			res[i].step = "td_ta_map_lwp2thr";
			continue;
		}
		e = s->lib.td_thr_get_info(&th, &res[i].ti);
		res[i].err = e;
		res[i].step = "td_thr_get_info";
	}
}

static void symbolize(struct psvc_target *t, uint64_t addr, struct dbs_symbol *ret)
{
	struct psvc_symbol sym;
	ret->addr = addr;
	if (psvc_addr_to_symbol(t, addr, &sym) != 0)
		return;
	ret->module = dbs_strdup(sym.module->path);
	ret->name = dbs_strdup(sym.name);
	ret->offset = sym.offset;
}

static void fill_proc(struct dbs_session *s, struct dbs_thread *th,
		      const struct psvc_taskinfo *ti)
{
	th->proc_valid = ti->valid;
	th->proc_before_stop = ti->before_stop;
	th->ns_tid = ti->ns_tid ? ti->ns_tid : th->tid;
	if (!ti->valid)
		return;
	th->name = malloc(ti->comm_len + 1);
	if (th->name) {
		memcpy(th->name, ti->comm, ti->comm_len);
		th->name[ti->comm_len] = '\0';
		th->name_len = ti->comm_len;
	}
	th->state = ti->state;
	memcpy(th->wchan, ti->wchan, sizeof th->wchan);
	th->utime_s = (double)ti->utime_ticks / (double)s->clk_tck;
	th->stime_s = (double)ti->stime_ticks / (double)s->clk_tck;
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

static struct dbs_snapshot *build_snapshot(struct dbs_session *s,
					   const struct tdb_result *res)
{
	struct psvc_target *t = s->t;
	size_t n = psvc_ntasks(t);
	struct dbs_snapshot *snap = calloc(1, sizeof *snap);
	if (!snap)
		return NULL;
	snap->threads = calloc(n ? n : 1, sizeof *snap->threads);
	if (!snap->threads) {
		free(snap);
		return NULL;
	}
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
	snap->tdb_status = s->tdb_status;
	snap->tdb_detail = dbs_strdup(s->tdb_detail);
	snap->modmap_source = psvc_modmap_source(t);
	snap->module_generation = psvc_modules_generation(t);
	snap->threads_seen = n;

	for (size_t i = 0; i < n; i++) {
		struct psvc_task *k = psvc_task_at(t, i);
		if (k->flags & PSVC_TASK_GONE) {
			snap->threads_vanished++;
			continue;
		}
		struct dbs_thread *th = &snap->threads[snap->nthreads++];
		th->tid = k->tid;
		if (k->flags & PSVC_TASK_LATE) {
			/* appeared during the stop: its /proc facts now */
			if (psvc_read_taskinfo(s->pid, k->tid, &k->info) == 0)
				k->info.before_stop = false;
		}
		fill_proc(s, th, &k->info);
		th->stopped = k->flags & PSVC_TASK_CAPTURED;
		th->straggler = k->flags & PSVC_TASK_STRAGGLER;
		th->jobctl_stopped = (k->flags & PSVC_TASK_JOBCTL) ||
				     (k->info.before_stop && k->info.state == 'T');
		if (th->stopped)
			snap->threads_stopped++;
		if (th->straggler) {
			snap->stragglers++;
			snap_add_error(&th->errors, &th->nerrors,
				       "did not stop within the stop timeout "
				       "(state %c%s%s); left out of the snapshot",
				       th->state ? th->state : '?',
				       th->wchan[0] ? ", wchan " : "", th->wchan);
		}
		if (k->seize_errno && k->info.tracer_pid > 0)
			snap_add_error(&th->errors, &th->nerrors,
				       "could not attach: %s (traced by PID %d)",
				       strerror(k->seize_errno), (int)k->info.tracer_pid);
		else if (k->seize_errno)
			snap_add_error(&th->errors, &th->nerrors,
				       "could not attach: %s", strerror(k->seize_errno));
		if (k->regs_errno)
			snap_add_error(&th->errors, &th->nerrors,
				       "registers: %s", strerror(k->regs_errno));
		if (k->flags & PSVC_TASK_HAVE_REGS) {
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
		if (s->ta && res && th->have_regs) {
			const struct tdb_result *r = &res[i];
			if (r->err == TD_OK && r->ti.ti_tid != 0 && r->ti.ti_lid != -1) {
				th->have_pthread = true;
				th->pthread = (uint64_t)r->ti.ti_tid;
				th->td_state = r->ti.ti_state;
				th->is_main = r->ti.ti_startfunc == NULL;
				if (!th->is_main)
					symbolize(t, (uint64_t)(uintptr_t)r->ti.ti_startfunc,
						  &th->start);
				if (r->ti.ti_lid != th->ns_tid)
					snap_add_error(&th->errors, &th->nerrors,
						       "libthread_db: descriptor says LWP %d",
						       (int)r->ti.ti_lid);
			} else if (r->err == TD_OK) {
				snap_add_error(&th->errors, &th->nerrors,
					       "libthread_db: thread not initialised "
					       "or already joined");
			} else if (r->step) {
				snap_add_error(&th->errors, &th->nerrors,
					       "libthread_db: %s: %s", r->step,
					       tdb_strerror(r->err));
			}
		}
		if (th->nerrors)
			snap->threads_with_errors++;
	}
	qsort_r(snap->threads, snap->nthreads, sizeof *snap->threads,
		cmp_threads, &snap->pid);
	return snap;
}

int dbs_session_update(struct dbs_session *s, struct dbs_snapshot **ret)
{
	struct psvc_target *t = s->t;
	uint64_t t0 = psvc_now_ns();

	int n = psvc_scan(t);
	if (n < 0)
		return n;
	if (psvc_modules_load(t) == 0 &&
	    (psvc_modules_generation(t) != s->ta_generation ||
	     (s->lib_loaded && !s->ta)))
		ta_setup(s);

	struct psvc_stop_opts so = {
		.max_freeze_ns = s->opts.max_freeze_ns,
		.stop_timeout_ns = s->opts.stop_timeout_ns,
		.cancel = s->opts.cancel,
		.wake_signal = s->opts.wake_signal,
	};
	int err = psvc_stop(t, &so);
	if (err < 0)
		return err;
	struct timespec captured_at;
	clock_gettime(CLOCK_REALTIME, &captured_at);
	psvc_read_regs(t);

	struct tdb_result *res = NULL;
	if (s->ta) {
		res = calloc(psvc_ntasks(t), sizeof *res);
		if (res)
			gather_tdb(s, res);
	}
	/* the words of the locks blocked threads wait on (locks.c) */
	dbs_locks_prefetch(s);
	err = psvc_check_freeze(t);
	psvc_resume(t);
	if (!err && !psvc_alive(t))
		err = -ESRCH;	/* it exited (was killed) while stopped */
	if (err) {
		free(res);
		return err;
	}

	struct dbs_snapshot *snap = build_snapshot(s, res);
	free(res);
	if (!snap)
		return -ENOMEM;
	snap->captured_at = captured_at;
	snap->freeze_ns = psvc_freeze_ns(t);
	if (dbs_locks_run(s, snap))
		snap_add_error(&snap->errors, &snap->nerrors,
			       "lock analysis: out of memory");
	if (snap->nthreads == 0) {
		dbs_snapshot_free(snap);
		return -ESRCH;
	}
	snap->duration_ns = psvc_now_ns() - t0;
	*ret = snap;
	return 0;
}

/* ---- snapshots ------------------------------------------------------------------- */

static void free_strings(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

void dbs_snapshot_free(struct dbs_snapshot *snap)
{
	if (!snap)
		return;
	dbs_locks_free(snap);
	for (size_t i = 0; i < snap->nthreads; i++) {
		struct dbs_thread *th = &snap->threads[i];
		free(th->name);
		free(th->start.module);
		free(th->start.name);
		free_strings(th->errors, th->nerrors);
	}
	free(snap->threads);
	free(snap->exe);
	free_strings(snap->argv, snap->argc);
	free(snap->tdb_detail);
	free_strings(snap->errors, snap->nerrors);
	free(snap);
}

size_t dbs_snapshot_thread_count(const struct dbs_snapshot *snap)
{
	return snap->nthreads;
}

const struct dbs_thread *dbs_snapshot_thread(const struct dbs_snapshot *snap,
					     size_t i)
{
	return i < snap->nthreads ? &snap->threads[i] : NULL;
}
