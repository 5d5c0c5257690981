/*
 * runtimes.c: language runtimes whose locks are not pthread objects (JVMs,
 * Go, CPython, as real services showed).  tinspect decodes glibc's mutexes,
 * rwlocks, condvars, semaphores, barriers and joins; a JVM's monitors, a Go
 * program's sync.Mutex or CPython's threading.Lock are built differently
 * (or on top of owner-less primitives), so where such a runtime is loaded
 * the report says what stays invisible and which tool shows it, instead of
 * letting "no deadlock found" read as a clean bill of health.
 *
 * Detection uses only what the module map and the symbol tables show
 * (no code of the target runs): libjvm.so mapped; libpython3.X.so mapped
 * or CPython's _PyRuntime exported (Debian's python3 links it
 * statically); for Go, what stripping leaves in a module's file, its
 * .go.buildinfo (which also holds the Go version) or its function table
 * (.gopclntab) (proc_service/modules/gomodule.c), else the
 * runtime.buildVersion symbol of a Go binary with symbols.
 */
#include "dbs_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *base_name(const char *path)
{
	const char *b = path ? strrchr(path, '/') : NULL;
	return b ? b + 1 : path;
}

static const struct {
	const char *name;
	const char *note;
} runtime_notes[] = {
	{ "jvm",
	  "a Java virtual machine (libjvm.so): Java monitors (synchronized) and "
	  "java.util.concurrent locks are not pthread objects, so which Java lock "
	  "a thread holds or waits for, and Java-level deadlocks, are invisible "
	  "here; run `jcmd PID Thread.print` (or `jstack PID`) for them" },
	{ "cpython",
	  "CPython: threading.Lock is a semaphore (or a mutex and a condition "
	  "variable) that records no owner, so tinspect shows who waits on one, "
	  "never who holds it, and cannot prove a Python-level deadlock; run "
	  "`py-spy dump --pid PID` for the Python stacks" },
	{ "go",
	  "a Go program: goroutines, channels and sync.Mutex are not pthread "
	  "objects, tinspect sees only the runtime's OS threads; use the "
	  "program's goroutine dump (net/http/pprof: /debug/pprof/goroutine?debug=2) "
	  "or `dlv attach PID`" },
};

/* The note with "PID" replaced by the target's, so that the advice can
 * be pasted as it is.  NULL on ENOMEM. */
static char *with_pid(const char *note, pid_t pid)
{
	char num[16];
	int nl = snprintf(num, sizeof num, "%d", (int)pid);
	size_t len = strlen(note) + 4 * (size_t)nl + 1;
	char *out = malloc(len), *o = out;
	if (!out)
		return NULL;
	for (const char *p = note; *p;) {
		if (!strncmp(p, "PID", 3)) {
			memcpy(o, num, (size_t)nl);
			o += nl;
			p += 3;
		} else {
			*o++ = *p++;
		}
	}
	*o = '\0';
	return out;
}

static int add(struct dbs_snapshot *snap, size_t which, const char *module,
	       const char *version)
{
	for (size_t i = 0; i < snap->nruntimes; i++)
		if (!strcmp(snap->runtimes[i].name, runtime_notes[which].name))
			return 0;
	struct dbs_runtime *nr = realloc(snap->runtimes,
					 (snap->nruntimes + 1) * sizeof *nr);
	if (!nr)
		return -1;
	snap->runtimes = nr;
	struct dbs_runtime *r = &snap->runtimes[snap->nruntimes];
	memset(r, 0, sizeof *r);
	r->name = runtime_notes[which].name;
	r->module = dbs_strdup(module);
	r->version = dbs_strdup(version);
	char *note = with_pid(runtime_notes[which].note, snap->pid);
	if (note && version) {
		/* "a Go program (go1.19.8): ..." */
		const char *colon = strchr(note, ':');
		r->note = colon ? dbs_format("%.*s (%s)%s", (int)(colon - note), note,
					     version, colon) : NULL;
		free(note);
	} else {
		r->note = note;
	}
	snap->nruntimes++;
	if (r->note)
		dbs_add_error(&snap->warnings, &snap->nwarnings, "%s", r->note);
	return 0;
}

/* The module that holds a symbol, for the report (NULL if none). */
static const char *module_of(struct psvc_target *t, const char *sym)
{
	uint64_t a;
	if (psvc_lookup_symbol(t, sym, &a))
		return NULL;
	struct psvc_module *m = psvc_module_for_addr(t, a);
	return m && m->path ? m->path : "";
}

void dbs_runtimes_detect(struct dbs_session *s, struct dbs_snapshot *snap)
{
	struct psvc_target *t = s->t;
	for (size_t i = 0; i < psvc_nmodules(t); i++) {
		const struct psvc_module *m = psvc_module_at(t, i);
		const char *b = base_name(m->path);
		if (!b)
			continue;
		if (!strncmp(b, "libjvm.so", 9))
			add(snap, 0, m->path, NULL);
		else if (!strncmp(b, "libpython3", 10) || !strncmp(b, "libpython2", 10))
			add(snap, 1, m->path, NULL);
	}
	const char *mod;
	if ((mod = module_of(t, "_PyRuntime")))
		add(snap, 1, mod, NULL);
	/* the executable first: a Go program's version is the one to show */
	for (int pass = 0; pass < 2; pass++) {
		for (size_t i = 0; i < psvc_nmodules(t); i++) {
			struct psvc_module *m = psvc_module_at(t, i);
			struct psvc_go_info gi;
			bool exe = m->flags & PSVC_MOD_EXE;
			if (exe != (pass == 0) || psvc_module_go(t, m, &gi))
				continue;
			add(snap, 2, m->path ? m->path : "", gi.version);
			if (gi.why)
				dbs_add_error(&snap->warnings, &snap->nwarnings,
					       "go: the Go frames of %s are not named: %s",
					       m->path ? m->path : "?", gi.why);
		}
	}
	if ((mod = module_of(t, "runtime.buildVersion")))
		add(snap, 2, mod, NULL);
}

void dbs_runtimes_free(struct dbs_snapshot *snap)
{
	for (size_t i = 0; i < snap->nruntimes; i++) {
		free(snap->runtimes[i].module);
		free(snap->runtimes[i].version);
		free(snap->runtimes[i].note);
	}
	free(snap->runtimes);
	snap->runtimes = NULL;
	snap->nruntimes = 0;
}
