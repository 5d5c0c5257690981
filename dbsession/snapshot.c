/*
 * snapshot.c: what a snapshot owns, and freeing it.  Every part of the
 * session that adds to a snapshot (the lock analysis, the runtimes, the
 * string pool of the unwinder) has its own free function; this file calls
 * them and frees the rest.
 */
#include "dbs_int.h"

#include <stdlib.h>

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
	dbs_held_free(snap);
	dbs_locks_free(snap);
	for (size_t i = 0; i < snap->nthreads; i++) {
		struct dbs_thread *th = &snap->threads[i];
		free(th->name);
		free(th->start.module);
		free(th->start.name);
		free(th->stack.frames);
		free_strings(th->errors, th->nerrors);
		for (size_t k = 0; k < th->ntls; k++) {
			free(th->tls[k].bytes);
			free(th->tls[k].str);
			free(th->tls[k].ptr_sym.module);
			free(th->tls[k].ptr_sym.name);
			free(th->tls[k].error);
		}
		free(th->tls);
		free(th->keys);
	}
	for (size_t k = 0; k < snap->ntls_vars; k++) {
		free(snap->tls_vars[k].name);
		free(snap->tls_vars[k].error);
		free(snap->tls_vars[k].module);
		free(snap->tls_vars[k].c_type);
	}
	free(snap->tls_vars);
	for (size_t k = 0; k < snap->nkeys; k++) {
		free(snap->keys[k].destructor_sym.module);
		free(snap->keys[k].destructor_sym.name);
	}
	free(snap->keys);
	free(snap->thread_db_path);
	free_strings(snap->warnings, snap->nwarnings);
	dbs_runtimes_free(snap);
	free(snap->threads);
	free(snap->exe);
	free_strings(snap->argv, snap->argc);
	free(snap->tdb_detail);
	free_strings(snap->errors, snap->nerrors);
	dbs_strpool_unref(snap->strings);
	free(snap);
}

