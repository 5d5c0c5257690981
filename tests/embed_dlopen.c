/*
 * embed_dlopen.c: an embedder that loads libtinspect at run time, as a
 * plug-in host would (tests/test_install.sh builds it outside the tree
 * against the installed headers, and runs it on fixtures).
 *
 *     embed_dlopen global|local LIBRARY PID
 *
 * dlopen()s LIBRARY (libtinspect.so.0) with RTLD_GLOBAL or RTLD_LOCAL,
 * takes one snapshot of PID and prints
 *
 *     tdb: <tinspect_tdb_status_name()>
 *     deadlock: 1234 -> 1235 -> 1234      (one line per cycle)
 *     no deadlock                          (or this)
 *
 * tinspect.h says what it shows: with RTLD_GLOBAL libthread_db finds the
 * library's ps_* callbacks and the status is "ok"; with RTLD_LOCAL it
 * cannot be loaded, the status is "unavailable", and the threads still
 * come from /proc.  Before that it checks tinspect_session_destroy()'s
 * contract on what an embedder can hand it: NULL, and the pointer a
 * failed init left alone.
 *
 * Exit status: 0 done, 1 a check or the library failed (the message says
 * which), 2 usage.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tinspect/tinspect.h>

/* The functions used, looked up by name. */
#define FUNCTIONS(X) \
	X(tinspect_session_init) X(tinspect_session_update) \
	X(tinspect_session_destroy) X(tinspect_strerror) \
	X(tinspect_snapshot_free) X(tinspect_snapshot_tdb_status) \
	X(tinspect_tdb_status_name) X(tinspect_snapshot_locks_analysed) \
	X(tinspect_snapshot_ncycles) X(tinspect_snapshot_cycle) \
	X(tinspect_cycle_length) X(tinspect_cycle_tid)
#define DECLARE(f) static __typeof__(f) *p_##f;
FUNCTIONS(DECLARE)

static int fail(const char *what)
{
	fprintf(stderr, "embed_dlopen: %s\n", what);
	return 1;
}

int main(int argc, char **argv)
{
	if (argc != 4 || (strcmp(argv[1], "global") && strcmp(argv[1], "local"))) {
		fprintf(stderr, "usage: embed_dlopen global|local LIBRARY PID\n");
		return 2;
	}
	int mode = RTLD_NOW | (strcmp(argv[1], "global") ? RTLD_LOCAL : RTLD_GLOBAL);
	pid_t pid = (pid_t)atoi(argv[3]);
	void *lib = dlopen(argv[2], mode);
	if (!lib)
		return fail(dlerror());
#define LOOKUP(f) \
	if (!(*(void **)&p_##f = dlsym(lib, #f))) \
		return fail("no symbol " #f);
	FUNCTIONS(LOOKUP)

	/* destroy's contract: NULL is fine, and so is the pointer a failed
	 * init left as it was (pid -1: no such process) */
	p_tinspect_session_destroy(NULL);
	tinspect_session *s = NULL;
	if (p_tinspect_session_init(-1, NULL, &s) != -ESRCH || s)
		return fail("init of pid -1: not -ESRCH, or *ret was set");
	p_tinspect_session_destroy(s);

	TINSPECT_OPTIONS(opts, .flags = TINSPECT_OPT_NO_STACKS);
	tinspect_snapshot *snap = NULL;
	int err = p_tinspect_session_init(pid, &opts, &s);
	if (!err)
		err = p_tinspect_session_update(s, &snap);
	p_tinspect_session_destroy(s);
	if (err)
		return fail(p_tinspect_strerror(err));
	printf("tdb: %s\n",
	       p_tinspect_tdb_status_name(p_tinspect_snapshot_tdb_status(snap)));
	if (!p_tinspect_snapshot_locks_analysed(snap)) {
		p_tinspect_snapshot_free(snap);
		return fail("the locks could not be analysed");
	}
	size_t ncycles = p_tinspect_snapshot_ncycles(snap);
	for (size_t i = 0; i < ncycles; i++) {
		const tinspect_cycle *c = p_tinspect_snapshot_cycle(snap, i);
		size_t n = p_tinspect_cycle_length(c);
		printf("deadlock:");
		for (size_t k = 0; k <= n; k++)
			printf("%s%d", k ? " -> " : " ", (int)p_tinspect_cycle_tid(c, k % n));
		putchar('\n');
	}
	if (!ncycles)
		puts("no deadlock");
	p_tinspect_snapshot_free(snap);
	/* the library is not unloaded: libdw and libthread_db, which it
	 * loaded, may keep state for the life of the process */
	return 0;
}
