/*
 * libc_glibc.c: glibc behind the C library seam (libc.h), its first
 * implementation: the threads through libthread_db (the system's, or the
 * target's own: tdbpick.c), after its descriptors were checked
 * (tdbcheck.c); the lock words through the layouts verified per version
 * (glibc_locks.c, chosen by glibc_versions.c).  docs/GLIBC.md.
 */
#include "dbs_int.h"
#include "glibc_locks.h"
#include "glibc_versions.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>


static bool exe_is_static_unsymbolled(struct psvc_target *t)
{
	struct psvc_module *exe = psvc_module_flagged(t, PSVC_MOD_EXE);
	if (psvc_module_flagged(t, PSVC_MOD_LDSO) || !exe)
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

void dbs_glibc_release(struct dbs_session *s)
{
	if (s->ta)
		s->lib.td_ta_delete(s->ta);
	s->ta = NULL;
	free(s->tdb_detail);
	s->tdb_detail = NULL;
	free(s->tdb_warning);
	s->tdb_warning = NULL;
}

/* The descriptor is { bits, count, offset } (docs/GLIBC.md §2); the
 * fields read so are single 32-bit words (tid, cancelhandling). */
int dbs_glibc_pthread_field(struct dbs_session *s, const char *desc,
			    struct psvc_field *ret, char *why, size_t whylen)
{
	struct psvc_layout_src src = psvc_layout_src(s->t);
	struct psvc_field_rule rule = { "struct pthread", s->sizeof_pthread,
					32, 1, 1 };
	return psvc_field_read(&src, desc, &rule, ret, why, whylen);
}

static void pin_checked(void *t, uint64_t addr, const void *bytes, size_t len)
{
	psvc_pin(t, addr, bytes, len);
}

/* (Re)create the thread agent for the current module map (libc.c has
 * released the last one). */
static void glibc_setup(struct dbs_session *s)
{
	if (!s->lib_loaded) {
		s->tdb_status = DBS_TDB_UNAVAILABLE;
		return;
	}
	preload_elves(s->t);
	/* libthread_db trusts the target's descriptors (an alloca of
	 * _thread_db_sizeof_pthread bytes): check them first (tdbcheck.c) */
	char why[256];
	struct tdb_check_io io = {
		.src = psvc_layout_src(s->t),
		.arch_id = psvc_arch(s->t)->id,
		.pin = pin_checked,
		.pin_ctx = s->t,
		.pieces = &s->desc_pieces,
	};
	if (dbs_tdb_check_layouts(&io, &s->sizeof_pthread, why, sizeof why)) {
		psvc_unpin_all(s->t);
		s->tdb_status = DBS_TDB_ERROR;
		s->tdb_detail = dbs_format("descriptors refused: %s", why);
		s->tdb_warning = dbs_format("libthread_db is not used for this "
					    "process: %s (corrupt or hostile thread "
					    "descriptors); threads are listed from "
					    "/proc only", why);
		return;
	}
	s->layout_ok = true;

	psvc_tdb_budget(s->t, TDB_READ_BUDGET);
	td_err_e e = s->lib.td_ta_new(psvc_prochandle(s->t), &s->ta);
	/* The system's 2.34+ libthread_db asks for __nptl_version in libc:
	 * a 2.31 target (nptl_version in libpthread.so.0) gets
	 * TD_NOLIBTHREAD although it has a thread library.  Only a library
	 * of the target's own glibc may say "no thread library"; another's
	 * answer is a mismatch (a container of another distribution). */
	if (e == TD_NOLIBTHREAD && dbs_tdb_serves_other_glibc(s))
		e = TD_VERSION;
	if (e == TD_VERSION || e == TD_NOLIBTHREAD) {
		int pick = dbs_tdb_pick_target_lib(s, e);
		if (pick == 0)
			e = TD_OK;	/* the target's own libthread_db fits */
		else if (pick != -ENOENT)
			e = TD_VERSION;	/* another glibc, not served */
	}
	switch (e) {
	case TD_OK:
		s->tdb_status = DBS_TDB_OK;
		if (s->lib_origin != DBS_TDB_FROM_TARGET)
			s->lib_origin = s->opts.thread_db_path ? DBS_TDB_FROM_GIVEN
							       : DBS_TDB_FROM_SYSTEM;
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
	s->tdb_detail = dbs_strdup(dbs_tdb_strerror(e));
}


/* glibc is the library tinspect assumes when no other one is found:
 * libthread_db then says whether there is a thread library at all. */
static bool glibc_detect(struct dbs_session *s)
{
	/* __nptl_version (2.34 on), nptl_version (libpthread before), else
	 * its libc's banner (glibc_versions.c) */
	dbs_glibc_version_read(s->t, s->glibc_version, sizeof s->glibc_version,
			       &s->glibc_version_src);
	memcpy(s->libc_version, s->glibc_version, sizeof s->glibc_version);
	s->libc_version_src = s->glibc_version_src;
	return true;
}

/* During the stop: libthread_db for the first task (what it reads besides
 * descriptors comes into the stop's cache), or for all of them when the
 * TLS and key readers need the live pointers (capture.c). */
static void glibc_gather(struct dbs_session *s, struct tdb_result *res)
{
	if (!s->ta || !res)
		return;
	bool pieces = dbs_descriptor_pieces(s);
	dbs_gather_tdb(s, res, dbs_tdb_in_freeze(s) ? DBS_TDB_ALL : DBS_TDB_PRIME);
	if (pieces && !dbs_descriptor_pieces(s))
		/* libthread_db read a field the pieces may lack: whole
		 * descriptors, now and later */
		dbs_copy_descriptors(s);
}

static void glibc_identify(struct dbs_session *s, struct dbs_snapshot *snap,
		   struct dbs_thread *th, const struct tdb_result *r)
{
	(void)snap;
	if (!s->ta)
	return;
	if (r->err == TD_OK && r->ti.ti_tid != 0 && r->ti.ti_lid != -1) {
		th->have_pthread = true;
		th->pthread = (uint64_t)r->ti.ti_tid;
		th->td_state = r->ti.ti_state;
		th->is_main = r->ti.ti_startfunc == NULL;
		if (!th->is_main)
			dbs_symbolize(s->t, (uint64_t)(uintptr_t)r->ti.ti_startfunc,
				  &th->start);
		if (th->ns_tid && r->ti.ti_lid != th->ns_tid)
			dbs_add_error(&th->errors, &th->nerrors,
				       "libthread_db: descriptor says LWP %d",
				       (int)r->ti.ti_lid);
	} else if (r->err == TD_OK) {
		dbs_add_error(&th->errors, &th->nerrors,
			       "libthread_db: thread not initialised "
			       "or already joined");
	} else if (r->step) {
		const char *hz = dbs_descriptor_hazard(s, th);
		dbs_add_error(&th->errors, &th->nerrors,
			       "libthread_db: %s: %s%s%s", r->step,
			       dbs_tdb_strerror(r->err),
			       hz ? "; its struct pthread: " : "",
			       hz ? hz : "");
	}
}

static const char *glibc_locks_unverified(const struct dbs_session *s)
{
	const char *why = NULL;
	if (dbs_glibc_locks_for(s->glibc_version, psvc_arch(s->t), &why))
		return NULL;
	return why;
}

const struct dbs_libc_ops dbs_libc_glibc = {
	.name = "glibc",
	.detect = glibc_detect,
	.setup = glibc_setup,
	.gather = glibc_gather,
	.identify = glibc_identify,
	.locks_unverified = glibc_locks_unverified,
};
