/*
 * Private to dbsession/: the session layout and the libthread_db binding.
 */
#ifndef TINSPECT_DBS_INT_H
#define TINSPECT_DBS_INT_H

#include "dbsession.h"

#include <proc_service.h>
#include <thread_db.h>

/* The libthread_db entry points tinspect uses, resolved with dlsym so that
 * a target's own libthread_db can be loaded in place of the system's. */
struct tdb_lib {
	void *handle;
	char *path;
	td_err_e (*td_init)(void);
	td_err_e (*td_ta_new)(struct ps_prochandle *, td_thragent_t **);
	td_err_e (*td_ta_delete)(td_thragent_t *);
	td_err_e (*td_ta_map_lwp2thr)(const td_thragent_t *, lwpid_t,
				      td_thrhandle_t *);
	td_err_e (*td_thr_get_info)(const td_thrhandle_t *, td_thrinfo_t *);
	td_err_e (*td_thr_tls_get_addr)(const td_thrhandle_t *, psaddr_t,
					size_t, psaddr_t *);
	td_err_e (*td_thr_tlsbase)(const td_thrhandle_t *, unsigned long,
				   psaddr_t *);
};

/* threaddb.c */
int tdb_load(const char *path, struct tdb_lib *ret, char **ret_detail);
void tdb_unload(struct tdb_lib *lib);
/* The one place td_err_e becomes text. */
const char *tdb_strerror(td_err_e e);

/* strpool.c: interned, reference-counted string pools */
struct dbs_strpool *strpool_new(void);
struct dbs_strpool *strpool_ref(struct dbs_strpool *p);
void strpool_unref(struct dbs_strpool *p);
const char *strpool_intern(struct dbs_strpool *p, const char *s);

/* unwind.c: libdwfl over the frozen capture */
struct dbs_unwinder;
int unwinder_new(struct psvc_target *t, struct dbs_unwinder **ret);
void unwinder_free(struct dbs_unwinder *u);
/* Bring libdwfl's module list in line with the target's current one. */
int unwinder_sync(struct dbs_unwinder *u);
/* The pool holding the strings of the frames it produces. */
struct dbs_strpool *unwinder_pool(struct dbs_unwinder *u);
/* Unwind th from its registers and the captured stack into th->stack. */
void unwinder_unwind(struct dbs_unwinder *u, struct dbs_thread *th,
		     unsigned max_frames);

struct dbs_session {
	pid_t pid;
	struct dbs_options opts;
	struct psvc_target *t;
	struct tdb_lib lib;
	bool lib_loaded;
	td_thragent_t *ta;
	enum dbs_tdb_status tdb_status;
	char *tdb_detail;
	uint64_t ta_generation;		/* module generation of ta */
	uint32_t sizeof_pthread;
	char glibc_version[16];
	long clk_tck;
	struct dbs_unwinder *unwinder;	/* NULL with --no-stacks */
};

/* util.c */
int snap_add_error(char ***errs, size_t *n, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
char *dbs_strdup(const char *s);

#endif
