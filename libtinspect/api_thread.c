/*
 * api_thread.c: one thread of a snapshot (tinspect/thread.h): identity,
 * /proc facts, the system call it is in (syscall_view.c), registers,
 * pthread, stack and frames, stack bounds, failures, TLS values and key
 * values.
 */
#include "tin_int.h"

#include <errno.h>
#include <string.h>
#include <thread_db.h>

#include "syscall_view.h"

_Static_assert(TINSPECT_STACK_UNKNOWN_CODE == (int)DBS_STACK_UNKNOWN_CODE, "stack end");
_Static_assert(TINSPECT_STACK_SWITCH == (int)DBS_STACK_SWITCH, "stack end");
_Static_assert(TINSPECT_STACK_SCANNED == (int)DBS_STACK_SCANNED, "stack end");
_Static_assert(TINSPECT_STACK_REGISTER_UNKNOWN == (int)DBS_STACK_REGISTER_UNKNOWN,
	       "stack end");
_Static_assert(TINSPECT_BOUNDS_NOT_STACK == (int)DBS_BOUNDS_NOT_STACK, "bounds");
_Static_assert(TINSPECT_TLS_ERROR == (int)DBS_TLS_ERROR, "tls status");
_Static_assert(TINSPECT_SYSCALL_PROC == (int)DBS_SYSCALL_PROC, "syscall source");
/* the classes are dbsession's, in its order, the last one last */
_Static_assert(TINSPECT_PROGRESS_UNKNOWN == (int)DBS_PROGRESS_UNKNOWN &&
	       TINSPECT_PROGRESS_RUNNING == (int)DBS_PROGRESS_RUNNING &&
	       TINSPECT_PROGRESS_TIMED == (int)DBS_PROGRESS_TIMED &&
	       TINSPECT_PROGRESS_OUTSIDE == (int)DBS_PROGRESS_OUTSIDE &&
	       TINSPECT_PROGRESS_DISK == (int)DBS_PROGRESS_DISK &&
	       TINSPECT_PROGRESS_STOPPED == (int)DBS_PROGRESS_STOPPED &&
	       TINSPECT_PROGRESS_INSIDE == (int)DBS_PROGRESS_INSIDE &&
	       TINSPECT_PROGRESS_COUNT == DBS_PROGRESS_INSIDE + 1, "progress");

/* ---- identity ------------------------------------------------------------------ */

TIN_GET(pid_t, tinspect_thread_tid, tinspect_thread, tid)
TIN_GET(pid_t, tinspect_thread_ns_tid, tinspect_thread, ns_tid)

const char *tinspect_thread_name(const tinspect_thread *th, size_t *ret_len)
{
	if (ret_len)
		*ret_len = th->d->name ? th->d->name_len : 0;
	return th->d->name;
}

bool tinspect_thread_is_main(const tinspect_thread *th)
{
	return th->d->tid == th->snap->d->pid;
}

const tinspect_snapshot *tinspect_thread_snapshot(const tinspect_thread *th)
{
	return th->snap;
}

/* ---- /proc --------------------------------------------------------------------- */

enum tinspect_proc_read tinspect_thread_proc_read(const tinspect_thread *th)
{
	if (th->snap->d->from_core)
		return TINSPECT_PROC_NONE;
	if (!th->d->proc_valid)
		return TINSPECT_PROC_FAILED;
	return th->d->proc_before_stop ? TINSPECT_PROC_BEFORE_STOP
				       : TINSPECT_PROC_AFTER_RESUME;
}

char tinspect_thread_state(const tinspect_thread *th)
{
	return th->d->proc_valid ? th->d->state : 0;
}

const char *tinspect_thread_wchan(const tinspect_thread *th)
{
	return th->d->proc_valid && th->d->wchan[0] ? th->d->wchan : NULL;
}

int tinspect_thread_cpu(const tinspect_thread *th, double *ret_user_s,
			double *ret_system_s)
{
	if (!th->d->proc_valid)
		return -ENODATA;
	if (ret_user_s)
		*ret_user_s = th->d->utime_s;
	if (ret_system_s)
		*ret_system_s = th->d->stime_s;
	return 0;
}

int tinspect_thread_context_switches(const tinspect_thread *th,
				     uint64_t *ret_switches)
{
	if (!th->d->proc_valid || !th->d->have_ctxt)
		return -ENODATA;
	if (ret_switches)
		*ret_switches = th->d->ctxt_switches;
	return 0;
}

int tinspect_thread_sched(const tinspect_thread *th, unsigned *ret_policy,
			  long *ret_priority, long *ret_nice,
			  unsigned *ret_rt_priority, int *ret_processor)
{
	const struct dbs_thread *t = th->d;
	if (!t->proc_valid)
		return -ENODATA;
	if (ret_policy)
		*ret_policy = t->policy;
	if (ret_priority)
		*ret_priority = t->priority;
	if (ret_nice)
		*ret_nice = t->nice;
	if (ret_rt_priority)
		*ret_rt_priority = t->rt_priority;
	if (ret_processor)
		*ret_processor = t->processor;
	return 0;
}

int tinspect_thread_signals(const tinspect_thread *th, uint64_t *ret_blocked,
			    uint64_t *ret_pending)
{
	if (!th->d->proc_valid)
		return -ENODATA;
	if (ret_blocked)
		*ret_blocked = th->d->sigblk;
	if (ret_pending)
		*ret_pending = th->d->sigpnd;
	return 0;
}

const char *tinspect_thread_affinity(const tinspect_thread *th, size_t *ret_len)
{
	const struct dbs_thread *t = th->d;
	if (ret_len)
		*ret_len = t->proc_valid ? strnlen(t->cpus_allowed,
						   sizeof t->cpus_allowed) : 0;
	return t->proc_valid ? t->cpus_allowed : NULL;
}

/* ---- the capture -------------------------------------------------------------------- */

TIN_GET(bool, tinspect_thread_stopped, tinspect_thread, stopped)
TIN_GET(bool, tinspect_thread_straggler, tinspect_thread, straggler)

enum tinspect_observation tinspect_thread_observation(const tinspect_thread *th)
{
	if (th->snap->d->capture != DBS_CAPTURE_NONBLOCKING)
		return TINSPECT_OBSERVED_NONE;
	if (th->d->moved)
		return TINSPECT_OBSERVED_MOVED;
	return th->d->observed ? TINSPECT_OBSERVED_BLOCKED : TINSPECT_OBSERVED_RUNNING;
}

const char *tinspect_observation_name(enum tinspect_observation obs)
{
	switch (obs) {
	case TINSPECT_OBSERVED_NONE: return "none";
	case TINSPECT_OBSERVED_BLOCKED: return "blocked";
	case TINSPECT_OBSERVED_RUNNING: return "running";
	case TINSPECT_OBSERVED_MOVED: return "moved";
	}
	return "none";
}

TIN_GET(bool, tinspect_thread_jobctl_stopped, tinspect_thread, jobctl_stopped)

enum tinspect_progress tinspect_thread_progress(const tinspect_thread *th)
{
	return (enum tinspect_progress)dbs_thread_progress(th->snap->d, th->d);
}

const char *tinspect_progress_name(enum tinspect_progress progress)
{
	/* TINSPECT_PROGRESS_COUNT and beyond are no class: dbsession's names
	 * have none of them, and give "unknown" */
	return dbs_progress_name((enum dbs_progress)progress);
}

int tinspect_thread_regs(const tinspect_thread *th, uint64_t *ret_pc,
			 uint64_t *ret_sp, uint64_t *ret_tp)
{
	if (!th->d->have_regs)
		return -ENODATA;
	if (ret_pc)
		*ret_pc = th->d->pc;
	if (ret_sp)
		*ret_sp = th->d->sp;
	if (ret_tp)
		*ret_tp = th->d->tp;
	return 0;
}

int tinspect_thread_syscall(const tinspect_thread *th, struct tinspect_syscall *ret,
			    size_t size)
{
	struct dbs_syscall_view sv;
	if (!size)
		return -EINVAL;
	int err = dbs_thread_syscall(th->snap->d, th->d, &sv);
	if (err)
		return err;
	struct tinspect_syscall v = {
		.nr = sv.nr,
		.name = sv.name,
		.source = (enum tinspect_syscall_source)sv.source,
		.restarting = sv.restarting,
	};
	memcpy(v.args, sv.args, sizeof v.args);
	return tin_fill(ret, size, &v, sizeof v);
}

/* ---- pthread -------------------------------------------------------------------------- */

int tinspect_thread_pthread(const tinspect_thread *th, uint64_t *ret_pthread,
			    int *ret_td_state)
{
	if (!th->d->have_pthread)
		return -ENODATA;
	if (ret_pthread)
		*ret_pthread = th->d->pthread;
	if (ret_td_state)
		*ret_td_state = th->d->td_state;
	return 0;
}

const char *tinspect_td_state_name(int td_state)
{
	switch (td_state) {
	case TD_THR_ACTIVE: return "active";
	case TD_THR_ZOMBIE: return "zombie";
	case TD_THR_RUN: return "run";
	case TD_THR_SLEEP: return "sleep";
	case TD_THR_STOPPED: return "stopped";
	case TD_THR_STOPPED_ASLEEP: return "stopped_asleep";
	default: return "unknown";
	}
}

const char *tinspect_thread_detach_state(const tinspect_thread *th)
{
	return th->d->have_pthread ? dbs_detach_state_name(th->d->detach_state)
				   : NULL;
}

bool tinspect_thread_is_initial(const tinspect_thread *th)
{
	return th->d->have_pthread && th->d->is_main;
}

const tinspect_symbol *tinspect_thread_start_routine(const tinspect_thread *th)
{
	if (!th->d->have_pthread || th->d->is_main)
		return NULL;
	return TIN_CAST(const tinspect_symbol *, &th->d->start);
}

/* ---- the stack ----------------------------------------------------------------------- */

TIN_GET(enum tinspect_stack_end, tinspect_thread_stack_end, tinspect_thread,
	stack.end)

const char *tinspect_stack_end_name(enum tinspect_stack_end end)
{
	return dbs_stack_end_name((enum dbs_stack_end)end);
}

bool tinspect_stack_end_is_error(enum tinspect_stack_end end)
{
	return dbs_stack_end_is_error((enum dbs_stack_end)end);
}

TIN_GET(const char *, tinspect_thread_stack_error, tinspect_thread, stack.error)

void tinspect_thread_stack_copied(const tinspect_thread *th, uint64_t *ret_from,
				  uint64_t *ret_to)
{
	if (ret_from)
		*ret_from = th->d->stack.copied_from;
	if (ret_to)
		*ret_to = th->d->stack.copied_to;
}

TIN_LIST(tinspect_thread_nframes, tinspect_thread_frame, tinspect_thread,
	 tinspect_frame, h->d->stack.nframes,
	 TIN_CAST(const tinspect_frame *, &h->d->stack.frames[i]))

TIN_GET_CAST(uint64_t, tinspect_frame_pc, tinspect_frame, tin_frame, pc)
TIN_GET_CAST(bool, tinspect_frame_inlined, tinspect_frame, tin_frame, inlined)
TIN_GET_CAST(const char *, tinspect_frame_module, tinspect_frame, tin_frame,
	     module)
TIN_GET_CAST(const char *, tinspect_frame_build_id, tinspect_frame, tin_frame,
	     build_id)
TIN_GET_CAST(const char *, tinspect_frame_symbol, tinspect_frame, tin_frame,
	     symbol)
TIN_GET_CAST(const char *, tinspect_frame_mangled, tinspect_frame, tin_frame,
	     mangled)
TIN_GET_CAST(uint64_t, tinspect_frame_offset, tinspect_frame, tin_frame, offset)
TIN_GET_CAST(const char *, tinspect_frame_file, tinspect_frame, tin_frame, file)
TIN_GET_CAST(int, tinspect_frame_line, tinspect_frame, tin_frame, line)
TIN_GET_CAST(uint64_t, tinspect_frame_module_offset, tinspect_frame, tin_frame,
	     module_offset)
TIN_GET_CAST(uint64_t, tinspect_frame_sp, tinspect_frame, tin_frame, sp)
TIN_GET_CAST(bool, tinspect_frame_scanned, tinspect_frame, tin_frame, scanned)

int tinspect_thread_stack_bounds(const tinspect_thread *th,
				 struct tinspect_stack_bounds *ret, size_t size)
{
	const struct dbs_stack_bounds *b = &th->d->bounds;
	if (!size)
		return -EINVAL;
	if (b->status == DBS_BOUNDS_UNKNOWN)
		return -ENODATA;
	struct tinspect_stack_bounds v = {
		.status = (enum tinspect_bounds_status)b->status,
		.main = b->main,
		.low = b->low,
		.high = b->high,
		.guard_low = b->guard_low,
		.guard_high = b->guard_high,
		.limit = b->limit,
		.used = b->used,
		.avail = b->avail,
	};
	return tin_fill(ret, size, &v, sizeof v);
}

const char *tinspect_thread_stack_bounds_unknown(const tinspect_thread *th)
{
	return th->d->bounds.status == DBS_BOUNDS_UNKNOWN ? th->d->bounds.unknown
							    : NULL;
}

const tinspect_wait *tinspect_thread_wait(const tinspect_thread *th)
{
	return th->wait.d ? &th->wait : NULL;
}

/* ---- failures -------------------------------------------------------------------------- */

TIN_LIST(tinspect_thread_nerrors, tinspect_thread_error, tinspect_thread, char,
	 h->d->nerrors, h->d->errors[i])

/* ---- TLS values --------------------------------------------------------------------------- */

TIN_LIST(tinspect_thread_ntls, tinspect_thread_tls, tinspect_thread,
	 tinspect_tls_value, h->ntls, &h->tls[i])

const tinspect_tls_var *tinspect_tls_value_var(const tinspect_tls_value *v)
{
	return TIN_CAST(const tinspect_tls_var *, v->var);
}

TIN_GET(enum tinspect_tls_status, tinspect_tls_value_status, tinspect_tls_value,
	status)
TIN_GET(const char *, tinspect_tls_value_error, tinspect_tls_value, error)

int tinspect_tls_value_address(const tinspect_tls_value *v, uint64_t *ret_addr)
{
	if (!v->d->have_addr)
		return -ENODATA;
	if (ret_addr)
		*ret_addr = v->d->addr;
	return 0;
}

const unsigned char *tinspect_tls_value_bytes(const tinspect_tls_value *v,
					      size_t *ret_len)
{
	if (ret_len)
		*ret_len = v->d->bytes ? v->var->size : 0;
	return v->d->bytes;
}

const char *tinspect_tls_value_string(const tinspect_tls_value *v, size_t *ret_len,
				      bool *ret_truncated)
{
	if (ret_len)
		*ret_len = v->d->str ? v->d->str_len : 0;
	if (ret_truncated)
		*ret_truncated = v->d->str_truncated;
	return v->d->str;
}

const tinspect_symbol *tinspect_tls_value_pointee(const tinspect_tls_value *v)
{
	if (v->var->type != DBS_TLS_POINTER || v->d->status != DBS_TLS_OK ||
	    !v->d->ptr_sym.module)
		return NULL;
	return TIN_CAST(const tinspect_symbol *, &v->d->ptr_sym);
}

uint64_t tinspect_tls_value_bits(const tinspect_tls_value *v)
{
	return v->d->bytes ? dbs_tls_bits(v->var, v->d) : 0;
}

int64_t tinspect_tls_value_signed(const tinspect_tls_value *v)
{
	return v->d->bytes ? dbs_tls_signed(v->var, v->d) : 0;
}

double tinspect_tls_value_double(const tinspect_tls_value *v)
{
	return v->d->bytes ? dbs_tls_double(v->var, v->d) : 0.0;
}

/* ---- key values ------------------------------------------------------------------------------ */

TIN_GET(bool, tinspect_thread_keys_read, tinspect_thread, keys_read)

size_t tinspect_thread_nkeys(const tinspect_thread *th)
{
	return th->d->keys_read ? th->d->nkeys : 0;
}

int tinspect_thread_key_value(const tinspect_thread *th, size_t i, unsigned *ret_key,
			      uint64_t *ret_value)
{
	if (i >= tinspect_thread_nkeys(th))
		return -EINVAL;
	const struct dbs_key_value *kv = &th->d->keys[i];
	if (ret_key)
		*ret_key = kv->key;
	if (kv->unknown)
		return -ENODATA;
	if (ret_value)
		*ret_value = kv->value;
	return 0;
}

int64_t tinspect_thread_waiting_since_ns(const tinspect_thread *th)
{
	/* dbsession keeps 0 for "in no wait" (a calloc'ed thread) */
	return th->d->waiting_since_ns > 0 ? th->d->waiting_since_ns : -1;
}
