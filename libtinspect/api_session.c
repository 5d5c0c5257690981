/*
 * api_session.c: the public session (tinspect/session.h) over
 * dbs_session_*: the options checked and copied, init / update / destroy,
 * following threads and its events, the diagnoses of a process that cannot
 * be inspected, the errors' texts.
 */
#include "tin_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* The public enums are dbsession's values: a snapshot's fields are handed
 * out as they are. */
_Static_assert(TINSPECT_TLS_BOOL == (int)DBS_TLS_BOOL &&
	       TINSPECT_TLS_STRING == (int)DBS_TLS_STRING,
	       "tinspect_tls_type is dbs_tls_type");
_Static_assert(TINSPECT_EVENT_THREAD_EXITED == (int)DBS_EVENT_THREAD_EXITED,
	       "tinspect_event_kind is dbs_event_kind");
_Static_assert(TINSPECT_EPERM_NOT_DUMPABLE == (int)PSVC_EPERM_NOT_DUMPABLE &&
	       TINSPECT_EPERM_UNKNOWN == (int)PSVC_EPERM_UNKNOWN,
	       "tinspect_eperm_cause is psvc_eperm_cause");

#define KNOWN_FLAGS (TINSPECT_OPT_NO_STACKS | TINSPECT_OPT_ERRNO | TINSPECT_OPT_KEYS | \
		     TINSPECT_OPT_NO_TARGET_THREAD_DB | TINSPECT_OPT_PROC_MEM | \
		     TINSPECT_OPT_TARGET_THREAD_DB | \
		     TINSPECT_OPT_NONBLOCKING | TINSPECT_OPT_NONBLOCKING_STRICT | \
		     TINSPECT_OPT_IDLE_PRIORITY | TINSPECT_OPT_TRACK_LOCKS)
#define DEFAULT_STOP_TIMEOUT_NS 1000000000ull

/*
 * The caller's options as this library knows them: the first o->size
 * bytes (a program built against an older header passes fewer; the rest
 * stays at its default, zero).  A newer program's members beyond ours must
 * be zero: one we do not know about cannot be honoured silently.
 */
static int options_read(const struct tinspect_options *o, struct tinspect_options *ret)
{
	struct tinspect_options v = TINSPECT_OPTIONS_INIT;
	if (o) {
		if (o->size < sizeof o->size)
			return -EINVAL;
		const unsigned char *extra = (const unsigned char *)o + sizeof v;
		for (size_t i = sizeof v; i < o->size; i++)
			if (extra[i - sizeof v])
				return -EINVAL;
		memcpy(&v, o, o->size < sizeof v ? o->size : sizeof v);
		v.size = sizeof v;
	}
	if ((v.flags & ~(unsigned)KNOWN_FLAGS) || (v.ntls && !v.tls))
		return -EINVAL;
	*ret = v;
	return 0;
}

/* The session keeps pointers to the options' strings: they are copied. */
static int options_to_dbs(tinspect_session *s, const struct tinspect_options *o,
			  struct dbs_options *ret)
{
	struct dbs_options d = {
		.max_freeze_ns = o->max_freeze_ns,
		.stop_timeout_ns = !o->stop_timeout_ns ? DEFAULT_STOP_TIMEOUT_NS :
				   o->stop_timeout_ns == UINT64_MAX ? 0 :
				   o->stop_timeout_ns,
		.cancel = o->cancel,
		.wake_signal = o->wake_signal,
		.holding = o->holding,
		.force_proc_mem = o->flags & TINSPECT_OPT_PROC_MEM,
		.no_stacks = o->flags & TINSPECT_OPT_NO_STACKS,
		.stack_bytes = o->stack_bytes,
		.max_frames = o->max_frames,
		.want_errno = o->flags & TINSPECT_OPT_ERRNO,
		.want_keys = o->flags & TINSPECT_OPT_KEYS,
		.target_thread_db = o->flags & TINSPECT_OPT_TARGET_THREAD_DB,
		.mode = (o->flags & TINSPECT_OPT_NONBLOCKING_STRICT) ? DBS_MODE_NONBLOCKING_STRICT :
			(o->flags & TINSPECT_OPT_NONBLOCKING) ? DBS_MODE_NONBLOCKING :
			DBS_MODE_STOP,
		.idle_priority = o->flags & TINSPECT_OPT_IDLE_PRIORITY,
		.track_locks = o->flags & TINSPECT_OPT_TRACK_LOCKS,
	};
	if (o->thread_db_path && !(s->thread_db_path = strdup(o->thread_db_path)))
		return -ENOMEM;
	if (o->thread_db_safe_path &&
	    !(s->thread_db_safe_path = strdup(o->thread_db_safe_path)))
		return -ENOMEM;
	d.thread_db_safe_path = s->thread_db_safe_path;
	d.thread_db_path = s->thread_db_path;
	if (o->ntls) {
		s->tls = calloc(o->ntls, sizeof *s->tls);
		if (!s->tls)
			return -ENOMEM;
		for (size_t i = 0; i < o->ntls; i++) {
			const struct tinspect_tls_request *r = &o->tls[i];
			if (!r->name || (unsigned)r->type > TINSPECT_TLS_BOOL)
				return -EINVAL;
			s->tls[i].type = (enum dbs_tls_type)r->type;
			s->tls[i].size = r->size;
			s->tls[i].name = strdup(r->name);
			s->ntls = i + 1;
			if (!s->tls[i].name)
				return -ENOMEM;
		}
	}
	d.tls = s->tls;
	d.ntls = s->ntls;
	*ret = d;
	return 0;
}

/* What init built before dbs_session_init(), or all of it. */
static void session_free(tinspect_session *s)
{
	dbs_session_destroy(s->d);
	for (size_t i = 0; i < s->ntls; i++)
		free((char *)s->tls[i].name);
	free(s->tls);
	free(s->thread_db_path);
	free(s->thread_db_safe_path);
	free(s);
}

int tinspect_session_init(pid_t pid, const struct tinspect_options *opts,
			  tinspect_session **ret)
{
	struct tinspect_options o;
	struct dbs_options d;
	int err = options_read(opts, &o);
	if (err)
		return err;
	if (pid <= 0)
		return -ESRCH;
	tinspect_session *s = calloc(1, sizeof *s);
	if (!s)
		return -ENOMEM;
	s->pid = pid;
	err = options_to_dbs(s, &o, &d);
	if (!err)
		err = dbs_session_init(pid, &d, &s->d);
	if (err) {
		session_free(s);
		return err;
	}
	*ret = s;
	return 0;
}

int tinspect_session_init_core(const char *core, const char *exe,
			       const char *sysroot,
			       const struct tinspect_options *opts,
			       tinspect_session **ret, char *why, size_t whylen)
{
	struct tinspect_options o;
	struct dbs_options d;
	if (why && whylen)
		why[0] = '\0';
	if (!core)
		return -EINVAL;
	int err = options_read(opts, &o);
	if (err)
		return err;
	tinspect_session *s = calloc(1, sizeof *s);
	if (!s)
		return -ENOMEM;
	err = options_to_dbs(s, &o, &d);
	if (!err)
		err = dbs_session_init_core(core, exe, sysroot, &d, &s->d, why,
					    whylen);
	if (err) {
		session_free(s);
		return err;
	}
	s->pid = dbs_session_pid(s->d);
	*ret = s;
	return 0;
}

int tinspect_session_update(tinspect_session *s, tinspect_snapshot **ret)
{
	struct dbs_snapshot *d;
	int err = dbs_session_update(s->d, &d);
	if (err)
		return err;
	/* the target runs again: the handles cost it nothing */
	err = tin_snapshot_wrap(d, ret);
	if (err)
		dbs_snapshot_free(d);
	return err;
}

void tinspect_session_destroy(tinspect_session *s)
{
	if (s)
		session_free(s);
}

pid_t tinspect_session_pid(const tinspect_session *s)
{
	return s->pid;
}

int tinspect_tls_parse_type(const char *name, enum tinspect_tls_type *ret_type,
			    unsigned *ret_size)
{
	struct dbs_tls_request r = { .type = DBS_TLS_AUTO };
	int err = dbs_tls_parse_type(name, &r);
	if (err)
		return err;
	*ret_type = (enum tinspect_tls_type)r.type;
	*ret_size = r.size;
	return 0;
}

/* ---- following threads ----------------------------------------------------- */

int tinspect_session_follow(tinspect_session *s)
{
	return dbs_session_follow(s->d);
}

void tinspect_session_service(tinspect_session *s)
{
	dbs_session_service(s->d);
}

void tinspect_session_unfollow(tinspect_session *s)
{
	dbs_session_unfollow(s->d);
}

struct wait_ctx {
	tinspect_event_fn fn;
	void *arg;
};

static void on_event(void *arg, const struct dbs_event *ev)
{
	struct wait_ctx *c = arg;
	c->fn(c->arg, TIN_CAST(const tinspect_event *, ev));
}

int tinspect_session_wait(tinspect_session *s, uint64_t deadline_ns,
			  tinspect_event_fn fn, void *arg)
{
	struct wait_ctx c = { fn, arg };
	return dbs_session_wait(s->d, deadline_ns, fn ? on_event : NULL, &c);
}

TIN_GET_CAST(enum tinspect_event_kind, tinspect_event_kind, tinspect_event,
	     tin_event, kind)
TIN_GET_CAST(pid_t, tinspect_event_tid, tinspect_event, tin_event, tid)
TIN_GET_CAST(pid_t, tinspect_event_parent, tinspect_event, tin_event, parent)
TIN_GET_CAST(int, tinspect_event_wait_status, tinspect_event, tin_event,
	     wait_status)

void tinspect_event_time(const tinspect_event *ev, int64_t *ret_sec, long *ret_nsec)
{
	if (ret_sec)
		*ret_sec = (int64_t)tin_event(ev)->time.tv_sec;
	if (ret_nsec)
		*ret_nsec = tin_event(ev)->time.tv_nsec;
}

const tinspect_symbol *tinspect_event_start(const tinspect_event *ev)
{
	const struct dbs_event *e = tin_event(ev);
	return e->have_start ? TIN_CAST(const tinspect_symbol *, &e->start) : NULL;
}

/* ---- why a process cannot be inspected ----------------------------------------- */

int tinspect_diagnose_eperm(pid_t pid, struct tinspect_eperm_diag *ret, size_t size)
{
	struct psvc_eperm_diag d;
	if (!size)
		return -EINVAL;
	psvc_diagnose_eperm(pid, &d);
	struct tinspect_eperm_diag v = {
		.cause = (enum tinspect_eperm_cause)d.cause,
		.tracer_pid = d.tracer_pid,
		.yama_scope = d.yama_scope,
		.target_uid = d.target_uid,
	};
	_Static_assert(sizeof v.tracer_comm == sizeof d.tracer_comm, "comm");
	memcpy(v.tracer_comm, d.tracer_comm, sizeof v.tracer_comm);
	return tin_fill(ret, size, &v, sizeof v);
}

int tinspect_process_status(pid_t pid, char *ret_state, pid_t *ret_ppid,
			    bool *ret_kernel_thread)
{
	struct psvc_taskinfo ti;
	if (pid <= 0)
		return -ESRCH;
	int err = psvc_read_taskinfo(pid, pid, &ti);
	if (err)
		return err;
	if (!ti.valid)
		return -ENODATA;
	if (ret_state)
		*ret_state = ti.state;
	if (ret_ppid)
		*ret_ppid = ti.ppid;
	if (ret_kernel_thread)
		*ret_kernel_thread = ti.kthread;
	return 0;
}

/* ---- errors and versions ----------------------------------------------------------- */

const char *tinspect_strerror(int err)
{
	int e = err < 0 ? -err : err;
	switch (e) {
	case 0: return "success";
	case ESRCH: return "no such process, or it has exited";
	case EPERM: return "not permitted to trace the process";
	case EACCES: return "permission denied reading the process's /proc files";
	case ENOEXEC: return "not a process this library can inspect (32-bit, "
			     "another architecture, or a kernel thread)";
	case ETIMEDOUT: return "the freeze limit was exceeded; the capture was "
			       "abandoned and the process resumed";
	case ESTALE: return "the process executed a new program; open a new session";
	case EINTR: return "cancelled; the process was resumed";
	case ENODATA: return "not known for this thread or object";
	}
	const char *s = strerrordesc_np(e);
	return s ? s : "unknown error";
}

const char *tinspect_version(void)
{
	return TINSPECT_VERSION_STRING;
}

const char *tinspect_host_arch(void)
{
	return arch_host()->name;
}
