/*
 * threaddb.c: loading libthread_db and naming its errors.  The library is
 * dlopen'ed RTLD_LOCAL (not linked) so that a target whose glibc differs
 * from the host's can be served by its own copy, as gdb does; it binds to
 * the ps_* callbacks tinspect exports (meson: export_dynamic).
 */
#include "dbs_int.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

const char *dbs_tdb_strerror(td_err_e e)
{
	switch (e) {
	case TD_OK: return "ok";
	case TD_ERR: return "generic error";
	case TD_NOTHR: return "no such thread";
	case TD_NOSV: return "no such synchronization handle";
	case TD_NOLWP: return "no such LWP";
	case TD_BADPH: return "invalid process handle";
	case TD_BADTH: return "invalid thread handle";
	case TD_BADSH: return "invalid synchronization handle";
	case TD_BADTA: return "invalid thread agent";
	case TD_BADKEY: return "invalid key";
	case TD_NOMSG: return "no event message";
	case TD_NOFPREGS: return "no floating-point registers";
	case TD_NOLIBTHREAD: return "no thread library in the target";
	case TD_NOEVENT: return "event not supported";
	case TD_NOCAPAB: return "capability not available";
	case TD_DBERR: return "libthread_db internal error";
	case TD_NOAPLIC: return "operation not applicable";
	case TD_NOTSD: return "no thread-specific data";
	case TD_MALLOC: return "out of memory";
	case TD_PARTIALREG: return "partial register set";
	case TD_NOXREGS: return "no extra registers";
	case TD_NOTALLOC: return "TLS not allocated yet";
	case TD_VERSION: return "glibc version mismatch with libthread_db";
	case TD_NOTLS: return "no TLS in that module";
	}
	return "unknown libthread_db error";
}

#define RESOLVE(lib, name)                                                    \
	do {                                                                  \
		*(void **)&(lib)->name = dlsym((lib)->handle, #name);        \
		if (!(lib)->name) {                                           \
			missing = #name;                                      \
			goto fail;                                            \
		}                                                             \
	} while (0)

int dbs_tdb_load(const char *path, struct tdb_lib *ret, char **ret_detail)
{
	struct tdb_lib lib = { 0 };
	const char *missing = NULL;
	if (!path)
		path = "libthread_db.so.1";
	lib.handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!lib.handle) {
		const char *e = dlerror();
		*ret_detail = strdup(e ? e : "dlopen failed");
		return -ENOENT;
	}
	RESOLVE(&lib, td_init);
	RESOLVE(&lib, td_ta_new);
	RESOLVE(&lib, td_ta_delete);
	RESOLVE(&lib, td_ta_map_lwp2thr);
	RESOLVE(&lib, td_thr_get_info);
	RESOLVE(&lib, td_ta_thr_iter);
	RESOLVE(&lib, td_thr_tls_get_addr);
	RESOLVE(&lib, td_thr_tlsbase);
	if (lib.td_init() != TD_OK) {
		missing = "td_init() failed";
		goto fail;
	}
	/* the file the dynamic linker found, for the report ("which
	 * libthread_db served") */
	Dl_info info;
	if (dladdr(*(void **)&lib.td_ta_new, &info) && info.dli_fname &&
	    info.dli_fname[0] == '/')
		path = info.dli_fname;
	lib.path = strdup(path);
	*ret = lib;
	return 0;
fail:
	*ret_detail = strdup(missing);
	dlclose(lib.handle);
	return -ENOENT;
}

void dbs_tdb_unload(struct tdb_lib *lib)
{
	if (lib->handle)
		dlclose(lib->handle);
	free(lib->path);
	memset(lib, 0, sizeof *lib);
}
