/*
 * target.c: one inspected target, whatever backend reaches it (backend.h),
 * and the capture lifecycle every backend goes through: scan, stop, read
 * the registers, resume (psvc.h).  What is the same for all backends is
 * done here - the timing of the freeze, the limits and the cancel flag,
 * the per-stop memory cache, the holding flag the caller's signal handler
 * reads - and the rest is the backend's ops.
 */
#include "psvc_int.h"


#include <elf.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the target -------------------------------------------------------------- */

struct psvc_target *psvc_target_new(const struct psvc_backend *be, void *data,
				     pid_t pid, const struct arch_desc *arch,
				     volatile sig_atomic_t *holding)
{
	struct psvc_target *t = calloc(1, sizeof *t);
	if (!t)
		return NULL;
	t->backend = be;
	t->backend_data = data;
	t->pid = pid;
	t->arch = arch;
	t->holding = holding;
	t->foreign_pidns = -1;
	return t;
}

void psvc_target_set_auxv(struct psvc_target *t, const void *buf, size_t len)
{
	const unsigned char *p = buf;
	for (size_t off = 0; off + 16 <= len; off += 16) {
		uint64_t type, val;
		memcpy(&type, p + off, 8);
		memcpy(&val, p + off + 8, 8);
		switch (type) {
		case AT_PHDR: t->at_phdr = val; break;
		case AT_PHNUM: t->at_phnum = val; break;
		case AT_BASE: t->at_base = val; break;
		case AT_SYSINFO_EHDR: t->at_sysinfo_ehdr = val; break;
		default: break;
		}
		if (type == AT_NULL)
			break;
	}
}

/* The command line: the buffer and the argv pointing into it. */
static void cmdline_free(struct psvc_target *t)
{
	free(t->cmdline_buf);
	free(t->argv);
	t->cmdline_buf = NULL;
	t->argv = NULL;
	t->argc = 0;
}

void psvc_target_set_cmdline(struct psvc_target *t, char *buf, size_t len)
{
	cmdline_free(t);
	t->cmdline_buf = buf;
	size_t n = 0;
	for (size_t i = 0; i < len; i++)
		if (buf[i] == '\0')
			n++;
	if (len && buf[len - 1] != '\0')
		n++;	/* the kernel may hand back an unterminated tail */
	t->argv = calloc(n + 1, sizeof *t->argv);
	if (!t->argv)
		return;
	for (size_t i = 0; i < len && t->argc < n;) {
		t->argv[t->argc++] = buf + i;
		i += strlen(buf + i) + 1;
	}
}

void psvc_target_set_exe(struct psvc_target *t, const char *path)
{
	free(t->exe_path);
	t->exe_path = path ? strdup(path) : NULL;
}

void psvc_target_warn(struct psvc_target *t, const char *fmt, ...)
{
	if (t->warnings.n >= 1000)
		return;	/* a damaged core must not make a report of them */
	va_list ap;
	va_start(ap, fmt);
	psvc_warnings_vadd(&t->warnings, fmt, ap);
	va_end(ap);
}

size_t psvc_nwarnings(const struct psvc_target *t) { return t->warnings.n; }

const char *psvc_warning_at(const struct psvc_target *t, size_t i)
{
	return psvc_warnings_at(&t->warnings, i);
}

const char *psvc_backend_name(const struct psvc_target *t)
{
	return t->backend->name;
}

int psvc_signal_info(struct psvc_target *t, struct psvc_signal_info *ret)
{
	if (!t->backend->signal)
		return -ENODATA;
	return t->backend->signal(t, ret);
}

void psvc_close(struct psvc_target *t)
{
	if (!t)
		return;
	psvc_resume(t);
	t->backend->close(t);
	psvc_cache_free(&t->cache);
	psvc_runs_free(&t->runs);
	psvc_modules_free(t);
	psvc_tasks_free(t);
	free(t->exe_path);
	cmdline_free(t);
	free(t->ph);
	free(t->pins);
	free(t->modmap_note);
	psvc_warnings_free(&t->warnings);
	free(t);
}

pid_t psvc_pid(const struct psvc_target *t) { return t->pid; }
const struct arch_desc *psvc_arch(const struct psvc_target *t) { return t->arch; }
const char *psvc_exe_path(const struct psvc_target *t) { return t->exe_path; }

size_t psvc_cmdline(const struct psvc_target *t, const char *const **ret_argv)
{
	*ret_argv = t->argv;
	return t->argc;
}

bool psvc_alive(struct psvc_target *t)
{
	return t->backend->alive(t);
}

int psvc_task_facts(struct psvc_target *t, pid_t tid, struct psvc_taskinfo *ret)
{
	return t->backend->task_facts(t, tid, ret);
}

int psvc_stack_rlimit(struct psvc_target *t, uint64_t *ret_bytes)
{
	return t->backend->stack_rlimit(t, ret_bytes);
}

int psvc_root_dir(struct psvc_target *t, char *buf, size_t len)
{
	return t->backend->root_dir(t, buf, len);
}

/* ---- the capture ----------------------------------------------------------------- */

static int scan(struct psvc_target *t, bool lean)
{
	if (t->stopped)
		return -EBUSY;
	t->hazard_reads = t->hazard_first = 0;
	int n = t->backend->scan(t, lean);
	if (n < 0)
		return n;
	for (size_t i = 0; i < t->ntasks; i++)
		if (t->tasks[i].info.before_stop)
			psvc_task_index_ns(t, &t->tasks[i]);
	psvc_foreign_pidns(t);	/* decided now, not during the stop */
	return n;
}

int psvc_scan(struct psvc_target *t)
{
	return scan(t, false);
}

int psvc_scan_lean(struct psvc_target *t)
{
	return scan(t, true);
}

static int observe(struct psvc_target *t);

int psvc_stop(struct psvc_target *t, const struct psvc_stop_opts *opts)
{
	if (t->stopped)
		return -EBUSY;
	t->max_freeze_ns = opts ? opts->max_freeze_ns : 0;
	if (opts && opts->cancel)
		t->cancel = opts->cancel;
	if (t->cancel && *t->cancel)
		return -EINTR;	/* asked to stop before anything was held */
	t->last_nonblocking = opts && opts->nonblocking;
	if (t->last_nonblocking)
		return observe(t);
	hold_update(t, true);	/* before the first task is held */
	t->t_first_stop = t->t_last_resume = 0;
	psvc_cache_begin(t);
	if (opts && opts->reserve_blocks)
		psvc_cache_reserve(&t->cache, opts->reserve_blocks);
	if (opts && opts->reserve_bytes)
		psvc_runs_reserve(t, opts->reserve_bytes);
	if (opts && (opts->reserve_scratch_bytes || opts->reserve_runs ||
		     opts->reserve_parts))
		psvc_runs_reserve_scratch(t, opts->reserve_scratch_bytes,
					  opts->reserve_runs, opts->reserve_parts);
	int n = t->backend->stop(t, opts);
	if (n < 0)
		psvc_resume(t);
	return n;
}

/* A nonblocking capture: the same page cache and the same steps after it,
 * but nothing is held (so the holding flag stays down and there is no
 * freeze to time: t_first_stop stays 0). */
static int observe(struct psvc_target *t)
{
	if (!t->backend->observe)
		return -EOPNOTSUPP;
	t->t_first_stop = t->t_last_resume = 0;
	psvc_cache_begin(t);
	t->observing = true;
	int n = t->backend->observe(t);
	if (n < 0)
		psvc_resume(t);
	return n;
}

int psvc_check_freeze(struct psvc_target *t)
{
	if (t->cancel && *t->cancel)
		return -EINTR;
	if (t->max_freeze_ns && t->t_first_stop &&
	    psvc_now_ns() - t->t_first_stop > t->max_freeze_ns)
		return -ETIMEDOUT;
	return 0;
}

void psvc_read_regs(struct psvc_target *t)
{
	if (t->backend->regs_all) {
		t->backend->regs_all(t);
		return;
	}
	for (size_t i = 0; i < t->ntasks; i++) {
		struct psvc_task *k = &t->tasks[i];
		if (k->flags & (PSVC_TASK_STOPPED | PSVC_TASK_OBSERVED))
			psvc_task_regs(k, -t->backend->regs(t, k));
	}
}

int psvc_task_fpregs(struct psvc_target *t, struct psvc_task *k, void *buf,
		     size_t len)
{
	if (!(k->flags & PSVC_TASK_STOPPED))
		return -ESRCH;
	return t->backend->fpregs(t, k, buf, len);
}

void psvc_resume(struct psvc_target *t)
{
	if (t->observing) {
		if (t->backend->observe_end)
			t->backend->observe_end(t);
		psvc_cache_end(t);
		t->observing = false;
	}
	if (t->stopped) {
		t->backend->resume(t);
		psvc_cache_end(t);
		t->stopped = false;
	}
	hold_update(t, false);
}

void psvc_forget_stragglers(struct psvc_target *t)
{
	if (t->backend->tracer_exited)
		t->backend->tracer_exited(t);
}

int psvc_follow_start(struct psvc_target *t)
{
	if (!t->backend->follow_start)
		return -EOPNOTSUPP;
	return t->backend->follow_start(t);
}

int psvc_follow_wait(struct psvc_target *t, uint64_t deadline_ns,
		     const volatile sig_atomic_t *cancel, int wake_signal,
		     psvc_event_fn fn, void *arg)
{
	if (!t->backend->follow_wait)
		return -EOPNOTSUPP;
	return t->backend->follow_wait(t, deadline_ns, cancel, wake_signal, fn, arg);
}

void psvc_follow_service(struct psvc_target *t)
{
	if (t->backend->follow_service)
		t->backend->follow_service(t);
}

void psvc_follow_resolve(struct psvc_target *t)
{
	if (t->backend->follow_resolve)
		t->backend->follow_resolve(t);
}

void psvc_follow_end(struct psvc_target *t)
{
	if (t->backend->follow_end)
		t->backend->follow_end(t);
}

size_t psvc_followed(const struct psvc_target *t)
{
	return t->backend->followed ? t->backend->followed(t) : 0;
}

void psvc_follow_set_resolver(struct psvc_target *t, psvc_start_fn fn, void *arg)
{
	t->resolver = fn;
	t->resolver_arg = arg;
}

uint64_t psvc_freeze_ns(const struct psvc_target *t)
{
	if (!t->t_first_stop)
		return 0;
	uint64_t end = t->t_last_resume ? t->t_last_resume : psvc_now_ns();
	return end - t->t_first_stop;
}

uint64_t psvc_first_stop_ns(const struct psvc_target *t)
{
	return t->t_first_stop;
}

bool psvc_is_stopped(const struct psvc_target *t)
{
	return t->stopped;
}
