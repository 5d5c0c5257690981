/*
 * libc.c: which C library the target runs (libc.h), chosen again whenever
 * its module map changes; the names of the seam's enums.
 */
#include "dbs_int.h"

#include <string.h>

const char *dbs_detach_state_name(int d)
{
	switch (d) {
	case DBS_DETACH_JOINABLE: return "joinable";
	case DBS_DETACH_DETACHED: return "detached";
	case DBS_DETACH_EXITING: return "exiting";
	case DBS_DETACH_EXITED: return "exited";
	}
	return NULL;
}

const char *dbs_threads_source_name(enum dbs_threads_source s)
{
	switch (s) {
	case DBS_THREADS_PROC: return "proc";
	case DBS_THREADS_LIBTHREAD_DB: return "libthread_db";
	case DBS_THREADS_STRUCT_PTHREAD: return "struct_pthread";
	}
	return "proc";
}

/* The libraries tinspect knows, the one tried first first: musl says yes
 * only to what proves musl; glibc takes the rest (libthread_db then says
 * whether there is a thread library). */
static const struct dbs_libc_ops *const libcs[] = {
	&dbs_libc_musl,
	&dbs_libc_glibc,
};

void dbs_libc_detect(struct dbs_session *s)
{
	s->libc_version[0] = '\0';
	s->libc_version_src = NULL;
	s->glibc_version[0] = '\0';
	s->glibc_version_src = NULL;
	s->threads_source = DBS_THREADS_PROC;
	for (size_t i = 0; i < sizeof libcs / sizeof libcs[0]; i++)
		if (libcs[i]->detect(s)) {
			s->libc = libcs[i];
			break;
		}
	/* glibc is recognised by its version; a musl by its files or
	 * symbols (libc_musl.c) */
	s->libc_found = s->libc != &dbs_libc_glibc || s->glibc_version[0];
}

void dbs_libc_setup(struct dbs_session *s)
{
	dbs_glibc_release(s);
	psvc_unpin_all(s->t);
	s->layout_ok = false;
	s->ta_generation = psvc_modules_generation(s->t);
	dbs_libc_detect(s);
	s->libc->setup(s);
}
