/*
 * hazards.c: what the snapshot says of memory tinspect did not read
 * because the read could have waited for the target (proc_service's
 * psvc_mem_hazard: a missing page of a userfaultfd range).  The reads are
 * refused below; here they become reasons: the capture's warning, and why
 * a thread's struct pthread could not be read (libthread_db, --tls,
 * --keys).
 */
#include "dbs_int.h"

#include <inttypes.h>

const char *dbs_descriptor_hazard(struct dbs_session *s, const struct dbs_thread *th)
{
	if (!th->tp || !s->sizeof_pthread)
		return NULL;
	uint64_t pd = arch_thread_area(psvc_arch(s->t), th->tp, (int)s->sizeof_pthread);
	return psvc_mem_hazard(s->t, pd, s->sizeof_pthread);
}

void dbs_hazards_warn(struct dbs_session *s, struct dbs_snapshot *snap)
{
	uint64_t first, n = psvc_hazard_reads(s->t, &first);
	if (!n)
		return;
	const char *why = psvc_mem_hazard(s->t, first, 1);
	dbs_add_error(&snap->warnings, &snap->nwarnings, "memory: %" PRIu64
		       " read(s) stopped short, first at %#" PRIx64 ": %s", n,
		       first, why ? why : "not read");
}
