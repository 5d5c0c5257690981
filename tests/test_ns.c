/*
 * test_ns: targets in containers and on changed disks, checked from the
 * host.  A fixture in its own PID namespace (TIDs differ: libthread_db's
 * must be mapped back), the same with churning threads (threads found
 * during the stop need their namespace TID then), one in its own mount
 * namespace whose binary exists only there (map_files, and the
 * build-id-checked /proc/PID/root path), one whose binary was deleted and
 * one whose binary was replaced on disk after it started.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "psvc.h"

static struct fixture fx;
static pid_t inner;		/* the fixture inside unshare, host PID */
static struct psvc_target *tgt;
static char tmpdir[64];

static void teardown(void)
{
	psvc_close(tgt);
	tgt = NULL;
	if (inner > 0)
		kill(inner, SIGKILL);	/* by PID; unshare reaps it */
	inner = 0;
	fx_kill(&fx);
	if (tmpdir[0]) {
		char cmd[128];
		snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
		cr_assert(system(cmd) == 0);
		tmpdir[0] = '\0';
	}
}

TestSuite(ns, .fini = teardown, .timeout = 300 * TEST_TIME_SCALE);

/* The host PID of unshare's forked child (the fixture). */
static pid_t child_of(pid_t pid)
{
	char path[64], buf[256];
	snprintf(path, sizeof path, "/proc/%d/task/%d/children", (int)pid, (int)pid);
	FILE *f = fopen(path, "r");
	cr_assert(f, "no %s", path);
	int c = 0;
	cr_assert(fgets(buf, sizeof buf, f), "unshare has no child");
	fclose(f);
	cr_assert(sscanf(buf, "%d", &c) == 1);
	return c;
}

/* New namespaces need CAP_SYS_ADMIN (a container without it cannot), and
 * unshare --mount makes "/" private, which fails where "/" is no mount
 * point (a plain chroot): then these tests cannot run here, which is not
 * a failure of tinspect.  Skipped with the reason printed. */
static void need_unshare(void)
{
	if (system("unshare --mount --pid --fork true >/dev/null 2>&1") != 0)
		cr_skip_test("cannot make mount and PID namespaces here (no "
			     "CAP_SYS_ADMIN, or \"/\" is no mount point, as in a "
			     "plain chroot): `unshare --mount --pid --fork true` fails");
}

static void start_unshared(const char *const *args)
{
	need_unshare();
	fx_start_path(&fx, "/usr/bin/unshare", args, 30);
	inner = child_of(fx.pid);
}

struct worker {
	pid_t tid;
	int i;
	unsigned long pthread;
};

static size_t workers(struct worker *w, size_t max)
{
	size_t n = 0;
	for (size_t k = 0; k < fx.nlines && n < max; k++)
		if (sscanf(fx.lines[k], "thread %d %d %lx", &w[n].tid, &w[n].i,
			   &w[n].pthread) == 3)
			n++;
	return n;
}

static json_t *thread_by_ns_tid(json_t *doc, pid_t ns_tid)
{
	size_t i;
	json_t *t;
	json_array_foreach(json_object_get(doc, "threads"), i, t)
		if (json_integer_value(json_object_get(t, "ns_tid")) == ns_tid)
			return t;
	return NULL;
}

Test(ns, pid_namespace)
{
	const char *args[] = { "--pid", "--fork", "--kill-child", "--mount-proc",
			       fixture_path("fx_tls"), "3", NULL };
	start_unshared(args);
	int main_ns;
	cr_assert(sscanf(fx_line(&fx, "main "), "main %d", &main_ns) == 1);
	cr_assert_eq(main_ns, 1, "the fixture is PID 1 of its namespace");
	const char *extra[] = { "--tls", "fx_tls_int", "--errno", "--keys", NULL };
	int status;
	json_t *doc = inspect_json(inner, extra, &status);
	cr_assert_eq(status, 0);
	json_t *m = thread_by_tid(doc, inner);
	cr_assert(m);
	cr_assert_eq(json_integer_value(json_object_get(m, "ns_tid")), 1);
	struct worker w[8];
	size_t n = workers(w, 8);
	cr_assert_eq(n, 3);
	for (size_t k = 0; k < n; k++) {
		/* the fixture reports TIDs of its own namespace */
		json_t *t = thread_by_ns_tid(doc, w[k].tid);
		cr_assert(t, "no thread with ns_tid %d", w[k].tid);
		cr_assert_neq(json_integer_value(json_object_get(t, "tid")), w[k].tid);
		char want[32];
		snprintf(want, sizeof want, "0x%lx", w[k].pthread);
		cr_assert_str_eq(jstr(json_object_get(t, "pthread"), "id"), want);
		cr_assert_eq(json_array_size(json_object_get(t, "errors")), 0);
		json_t *v = json_object_get(json_object_get(t, "tls"), "fx_tls_int");
		cr_assert_eq(json_integer_value(json_object_get(v, "value")), 1000 + w[k].i);
		cr_assert_eq(json_integer_value(json_object_get(json_object_get(t, "errno"),
								"value")), w[k].i + 1);
	}
	json_decref(doc);
	cr_assert(!any_task_stopped(inner));
}

Test(ns, churn_in_pid_namespace)
{
	const char *args[] = { "--pid", "--fork", "--kill-child", "--mount-proc",
			       fixture_path("fx_churn"), "32", NULL };
	start_unshared(args);
	size_t late = 0, late_with_pthread = 0;
	for (int run = 0; run < 40; run++) {
		int status;
		json_t *doc = inspect_json(inner, NULL, &status);
		cr_assert(status == 0 || status == 1, "run %d: exit %d", run, status);
		size_t i;
		json_t *t;
		json_array_foreach(json_object_get(doc, "threads"), i, t) {
			json_t *errs = json_object_get(t, "errors");
			size_t k;
			json_t *e;
			json_array_foreach(errs, k, e)
				cr_assert(!strstr(json_string_value(e), "descriptor says LWP"),
					  "run %d: %s", run, json_string_value(e));
			if (strcmp(jstr(t, "proc_read"), "after_resume") ||
			    !json_is_true(json_object_get(t, "stopped")))
				continue;
			late++;
			/* found during the stop: its namespace TID was read
			 * then, so libthread_db knew it */
			if (json_is_object(json_object_get(t, "pthread")))
				late_with_pthread++;
			cr_assert_neq(json_integer_value(json_object_get(t, "ns_tid")),
				      json_integer_value(json_object_get(t, "tid")));
		}
		json_decref(doc);
		cr_assert(!any_task_stopped(inner), "run %d left it stopped", run);
	}
	cr_log_info("pidns churn: %zu threads found during the stop, %zu with pthread",
		    late, late_with_pthread);
	if (late)
		cr_assert(late_with_pthread > 0,
			  "no thread found during the stop got its pthread info");
}

/* /mnt of a private mount namespace holds the only copy of the binary
 * and its libraries (meson test's LD_LIBRARY_PATH would load them from
 * the build directory, which both namespaces see). */
static void start_in_mount_ns(void)
{
	char script[2048];
	const char *dir = getenv("FIXTURES");
	snprintf(script, sizeof script,
		 "mount -t tmpfs tinspect-test /mnt && "
		 "cp '%s/fx_tls' '%s/libfx_tlslib.so' '%s/libfx_tlsplugin.so' /mnt/ && "
		 "unset LD_LIBRARY_PATH && exec /mnt/fx_tls 2", dir, dir, dir);
	const char *args[] = { "--mount", "--pid", "--fork", "--kill-child",
			       "--mount-proc", "/bin/sh", "-c", script, NULL };
	start_unshared(args);
}

Test(ns, mount_namespace)
{
	start_in_mount_ns();
	cr_assert(access("/mnt/fx_tls", F_OK) != 0,
		  "the host must not see the namespace's /mnt");
	const char *extra[] = { "--tls", "fx_tls_int", "--tls", "fxlib_tls", NULL };
	int status;
	json_t *doc = inspect_json(inner, extra, &status);
	cr_assert_eq(status, 0);
	cr_assert_str_eq(jstr(json_object_get(doc, "process"), "exe"), "/mnt/fx_tls");
	struct worker w[4];
	size_t n = workers(w, 4);
	cr_assert_eq(n, 2);
	for (size_t k = 0; k < n; k++) {
		json_t *t = thread_by_ns_tid(doc, w[k].tid);
		cr_assert(t);
		json_t *tls = json_object_get(t, "tls");
		cr_assert_eq(json_integer_value(json_object_get(
				     json_object_get(tls, "fxlib_tls"), "value")), 2000 + w[k].i);
	}
	json_decref(doc);
}

/* Without map_files (a tracer without CAP_SYS_ADMIN): the file is found
 * through /proc/PID/root and proved by its build-id. */
Test(ns, mount_namespace_through_proc_root)
{
	start_in_mount_ns();
	struct psvc_open_opts oo = { .no_map_files = true };
	cr_assert_eq(psvc_open(inner, &oo, &tgt), 0);
	cr_assert_eq(psvc_modules_load(tgt), 0);
	struct psvc_tls_symbol sym;
	cr_assert_eq(psvc_lookup_tls_symbol(tgt, "fx_tls_int", 0, &sym), 0);
	cr_assert_str_eq(sym.module->path, "/mnt/fx_tls");
	char mem_id[41];
	cr_assert_eq(psvc_module_mem_build_id(tgt, sym.module, mem_id), 0);
	cr_assert(mem_id[0]);
	cr_assert_str_eq(sym.module->build_id, mem_id);
	cr_assert_eq(psvc_lookup_tls_symbol(tgt, "fxlib_tls", 0, &sym), 0);
	cr_assert(strstr(sym.module->path, "/mnt/libfx_tlslib.so"), "found in %s", sym.module->path);
}

/* A copy of fx_tls and its libraries in a fresh directory. */
static const char *copy_fx_tls(void)
{
	snprintf(tmpdir, sizeof tmpdir, "/tmp/tinspect-ns-XXXXXX");
	cr_assert(mkdtemp(tmpdir));
	const char *dir = getenv("FIXTURES");
	char cmd[1024];
	snprintf(cmd, sizeof cmd, "cp '%s/fx_tls' '%s/libfx_tlslib.so' "
		 "'%s/libfx_tlsplugin.so' '%s/'", dir, dir, dir, tmpdir);
	cr_assert(system(cmd) == 0);
	static char exe[128];
	snprintf(exe, sizeof exe, "%s/fx_tls", tmpdir);
	return exe;
}

Test(ns, deleted_binary)
{
	const char *exe = copy_fx_tls();
	const char *args[] = { "2", NULL };
	fx_start_path(&fx, exe, args, 30);
	cr_assert(unlink(exe) == 0);
	const char *extra[] = { "--tls", "fx_tls_int", "--keys", NULL };
	int status;
	json_t *doc = inspect_json(fx.pid, extra, &status);
	cr_assert_eq(status, 0);
	cr_assert(strstr(jstr(json_object_get(doc, "process"), "exe"), "(deleted)"));
	struct worker w[4];
	size_t n = workers(w, 4);
	cr_assert_eq(n, 2);
	for (size_t k = 0; k < n; k++) {
		json_t *t = thread_by_tid(doc, w[k].tid);
		json_t *v = json_object_get(json_object_get(t, "tls"), "fx_tls_int");
		cr_assert_eq(json_integer_value(json_object_get(v, "value")), 1000 + w[k].i);
		/* symbols of the deleted file: the start routine is named */
		cr_assert_str_eq(jstr(json_object_get(json_object_get(t, "pthread"),
						      "start_routine"), "symbol"), "worker");
	}
	json_t *d = json_object_get(json_array_get(json_object_get(
		json_object_get(json_object_get(doc, "process"), "keys"), "in_use"), 0),
		"destructor");
	cr_assert_str_eq(jstr(d, "symbol"), "fx_key_destructor");
	json_decref(doc);
}

Test(ns, replaced_binary)
{
	const char *exe = copy_fx_tls();
	const char *args[] = { "2", NULL };
	fx_start_path(&fx, exe, args, 30);
	/* another program at the same path (a deploy while it runs) */
	cr_assert(unlink(exe) == 0);
	char cmd[512];
	snprintf(cmd, sizeof cmd, "cp '%s' '%s'", fixture_path("fx_threads"), exe);
	cr_assert(system(cmd) == 0);

	/* map_files gives the mapped inode: right */
	const char *extra[] = { "--tls", "fx_tls_int", NULL };
	json_t *doc = inspect_json(fx.pid, extra, NULL);
	json_t *v = json_object_get(json_object_get(thread_by_tid(doc, fx.pid), "tls"),
				    "fx_tls_int");
	cr_assert_eq(json_integer_value(json_object_get(v, "value")), 42);
	json_decref(doc);

	/* without map_files the path is all there is, and the maps say the
	 * mapped file was deleted: no symbols rather than the new file's */
	struct psvc_open_opts oo = { .no_map_files = true };
	cr_assert_eq(psvc_open(fx.pid, &oo, &tgt), 0);
	cr_assert_eq(psvc_modules_load(tgt), 0);
	struct psvc_tls_symbol sym;
	cr_assert_eq(psvc_lookup_tls_symbol(tgt, "fx_tls_int", 0, &sym), -ENOENT);
	struct psvc_module *m = NULL;
	for (size_t i = 0; i < psvc_nmodules(tgt); i++)
		if (psvc_module_at(tgt, i)->flags & PSVC_MOD_EXE)
			m = psvc_module_at(tgt, i);
	cr_assert(m && (m->flags & PSVC_MOD_DELETED));
	cr_assert_neq(psvc_module_load_elf(tgt, m), 0);
	/* the library next to it was not replaced: still usable */
	cr_assert_eq(psvc_lookup_tls_symbol(tgt, "fxlib_tls", 0, &sym), 0);
}

/* Inside the namespace, another file is bind-mounted over a library's
 * path after it was loaded: the maps still name that path (not deleted),
 * /proc/PID/root/PATH opens the other file.  Its build-id differs from
 * the one in memory, so it must not be used. */
Test(ns, shadowed_library_rejected_by_build_id)
{
	start_in_mount_ns();
	char cmd[512];
	/* --root: entering a mount namespace moves the caller to that
	 * namespace's root, which is not the target's when the suite runs
	 * chrooted (setns(2)); the target's root is where /mnt is */
	snprintf(cmd, sizeof cmd, "/usr/bin/nsenter --target %d --mount --root -- "
		 "/bin/mount --bind '%s' /mnt/libfx_tlslib.so", (int)inner,
		 fixture_path("libfx_tlsplugin.so"));
	cr_assert(system(cmd) == 0, "%s failed", cmd);
	struct psvc_open_opts oo = { .no_map_files = true };
	cr_assert_eq(psvc_open(inner, &oo, &tgt), 0);
	cr_assert_eq(psvc_modules_load(tgt), 0);
	struct psvc_module *lib = NULL;
	for (size_t i = 0; i < psvc_nmodules(tgt); i++) {
		struct psvc_module *m = psvc_module_at(tgt, i);
		if (m->path && strstr(m->path, "libfx_tlslib.so"))
			lib = m;
	}
	cr_assert(lib && !(lib->flags & PSVC_MOD_DELETED));
	int lerr = psvc_module_load_elf(tgt, lib);
	cr_assert_eq(lerr, -ESTALE, "load_elf: %d (elf_errno %d)", lerr, lib->elf_errno);
	struct psvc_tls_symbol sym;
	cr_assert_eq(psvc_lookup_tls_symbol(tgt, "fxlib_tls", 0, &sym), -ENOENT);
	/* the shadowing file's own TLS symbol is not taken for it either */
	cr_assert_eq(psvc_lookup_tls_symbol(tgt, "fxplug_tls", 0, &sym) == 0 &&
		     sym.module == lib, 0);
	/* the executable is still found and proved */
	cr_assert_eq(psvc_lookup_tls_symbol(tgt, "fx_tls_int", 0, &sym), 0);

	/* with map_files (tinspect as root) the mapped inode is used */
	psvc_close(tgt);
	tgt = NULL;
	const char *extra[] = { "--tls", "fxlib_tls", NULL };
	json_t *doc = inspect_json(inner, extra, NULL);
	json_t *var = json_array_get(json_object_get(json_object_get(doc, "process"),
						     "tls"), 0);
	cr_assert(json_is_true(json_object_get(var, "found")));
	json_decref(doc);
}
