/*
 * nbthreads.c: the thread pointers of a nonblocking capture (nonblock.c),
 * which ptrace would have given, from libthread_db's own list of threads.
 */
#include "dbs_int.h"

/*
 * ps_get_thread_area needs each thread's thread pointer (x86_64 fs_base),
 * which only ptrace gives.  libthread_db's iteration over the process's
 * own list of threads (glibc's stack_used and stack_user lists) needs
 * none: each element is a struct pthread, whose address is the thread
 * pointer (x86_64) or just below it (aarch64, arch_tp_of_area).  Read
 * live, the list may be changing under us; the read budget bounds the
 * walk, and a thread it misses simply has no pthread identity.
 */
struct learn {
	struct dbs_session *s;
	size_t found;
};

static int learn_one(const td_thrhandle_t *th, void *arg)
{
	struct learn *l = arg;
	struct dbs_session *s = l->s;
	td_thrinfo_t ti;
	if (s->lib.td_thr_get_info(th, &ti) != TD_OK || ti.ti_lid <= 0 ||
	    !ti.ti_tid)
		return 0;
	struct psvc_task *k = psvc_task_by_ns_tid(s->t, ti.ti_lid);
	if (!k || !(k->flags & PSVC_TASK_HAVE_REGS) || k->tp)
		return 0;
	k->tp = arch_tp_of_area(psvc_arch(s->t), (uint64_t)ti.ti_tid,
				(int)s->sizeof_pthread);
	l->found++;
	return 0;
}

void dbs_nb_learn_thread_pointers(struct dbs_session *s)
{
	if (!s->ta || !s->lib.td_ta_thr_iter || !s->sizeof_pthread)
		return;
	struct learn l = { .s = s };
	sigset_t none;
	sigemptyset(&none);
	/* a few reads per thread (the list link, then get_info's) */
	psvc_tdb_budget(s->t, TDB_READ_BUDGET + 64 * (uint64_t)psvc_ntasks(s->t));
	/* nothing is frozen: each descriptor is read once, live, and not
	 * kept (dbs_gather_tdb() reads them again, from the copies) */
	psvc_cache_bypass(s->t, true);
	s->lib.td_ta_thr_iter(s->ta, learn_one, &l, TD_THR_ANY_STATE,
			      TD_THR_LOWEST_PRIORITY, &none,
			      TD_THR_ANY_USER_FLAGS);
	psvc_cache_bypass(s->t, false);
}

/* ---- the update ------------------------------------------------------------------ */

