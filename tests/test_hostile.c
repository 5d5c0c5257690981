/*
 * test_hostile: targets that damage, at run time, what tinspect reads in
 * them: libthread_db's descriptors in libc (huge, negative,
 * wrapping values, every _thread_db_sizeof_*), the link_map chain
 * (thousands of copies of an entry, a loop, garbage), a live thread's
 * struct pthread (tid, specific[], list links), a mutex's words while a
 * thread waits on it, the key table, a thread's stack pointer; a stripped
 * program whose debuglink names a FIFO; a program with 1100 libraries
 * under 1024 descriptors; a signal while tinspect waits on the network.
 *
 * For each: tinspect does not crash (the suite runs in the ASan+UBSan
 * build too) or hang, its JSON validates, the target runs on (not
 * stopped, not traced), and the damaged datum is reported unknown with a
 * reason.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fanotify.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

static struct fixture fx;
static char tmpdir[64];

static void rm_tree(const char *dir)
{
	if (!dir[0])
		return;
	/* only what the tests made: a flat directory and .debug/ in it */
	char cmd[256];
	snprintf(cmd, sizeof cmd, "rm -rf -- '%s'", dir);
	if (strncmp(dir, "/tmp/tinspect-hostile-", 22) == 0 && system(cmd) != 0)
		fprintf(stderr, "cannot remove %s\n", dir);
}

static void teardown(void)
{
	fx_kill(&fx);
	rm_tree(tmpdir);
	tmpdir[0] = '\0';
}

TestSuite(hostile, .fini = teardown, .timeout = 900 * TEST_TIME_SCALE);

static void make_tmpdir(void)
{
	snprintf(tmpdir, sizeof tmpdir, "/tmp/tinspect-hostile-XXXXXX");
	cr_assert(mkdtemp(tmpdir), "mkdtemp: %s", strerror(errno));
}

/* TracerPid of every task of pid is 0 (asynchronous after a detach:
 * waited for a moment). */
static bool untraced(pid_t pid)
{
	char dir[64];
	snprintf(dir, sizeof dir, "/proc/%d/task", (int)pid);
	for (int tries = 0; tries < 200; tries++) {
		bool traced = false;
		DIR *d = opendir(dir);
		struct dirent *e;
		while (d && (e = readdir(d))) {
			char path[512], buf[4096];
			if (e->d_name[0] == '.')
				continue;
			snprintf(path, sizeof path, "%s/%s/status", dir, e->d_name);
			int fd = open(path, O_RDONLY);
			if (fd < 0)
				continue;
			ssize_t n = read(fd, buf, sizeof buf - 1);
			close(fd);
			buf[n > 0 ? n : 0] = '\0';
			const char *t = strstr(buf, "TracerPid:");
			if (t && atoi(t + 10) != 0)
				traced = true;
		}
		if (d)
			closedir(d);
		if (!traced)
			return true;
		usleep(10000);
	}
	return false;
}

/* The target is alive, running, untraced. */
static void check_running(pid_t pid)
{
	cr_assert(kill(pid, 0) == 0, "the target is gone");
	char st = task_state(pid, pid);
	cr_assert(st != 'Z' && st != 'X' && st != '?', "the target is dead (%c)", st);
	cr_assert(wait_not_stopped(pid, 2000), "the target was left stopped");
	cr_assert(untraced(pid), "the target was left traced");
}

/* Run tinspect --json [extra] PID under wrapper (may be NULL): the parsed,
 * schema-validated document; status and peak RSS to the pointers. */
static json_t *inspect(pid_t pid, const char *const *wrapper,
		       const char *const *extra, int *ret_status, long *ret_rss)
{
	const char *args[32];
	size_t n = 0;
	args[n++] = "--json";
	for (; extra && *extra && n < 28; extra++)
		args[n++] = *extra;
	args[n++] = pidstr(pid);
	args[n] = NULL;
	struct run r;
	run_start_as(&r, wrapper, args);
	run_wait(&r, 240);
	cr_assert(!r.timed_out, "tinspect hung (killed after 240 s)");
	cr_assert(r.status >= 0, "tinspect died of signal %d; stderr: %s", r.sig,
		  r.err ? r.err : "");
	cr_assert(r.status == 0 || r.status == 1, "exit %d; stderr: %s", r.status,
		  r.err ? r.err : "");
	cr_assert(r.out_len > 0, "no JSON; stderr: %s", r.err ? r.err : "");
	cr_assert(schema_valid(r.out, r.out_len), "output does not validate");
	json_error_t je;
	json_t *doc = json_loadb(r.out, r.out_len, 0, &je);
	cr_assert(doc, "JSON does not parse: %s", je.text);
	if (ret_status)
		*ret_status = r.status;
	if (ret_rss)
		*ret_rss = r.maxrss_kib;
	run_free(&r);
	return doc;
}

/* Does any string of the array (capture.warnings, a thread's errors)
 * contain every one of the needles (NULL-terminated)? */
static bool any_has(json_t *arr, const char *const *needles)
{
	size_t i;
	json_t *v;
	json_array_foreach(arr, i, v) {
		const char *s = json_string_value(v);
		bool all = s != NULL;
		for (const char *const *n = needles; all && *n; n++)
			all = strstr(s, *n) != NULL;
		if (all)
			return true;
	}
	return false;
}

static json_t *warnings(json_t *doc)
{
	return json_object_get(json_object_get(doc, "capture"), "warnings");
}

/* The TID of fx_hostile's first worker (the damaged one). */
static pid_t worker0(void)
{
	const char *l = fx_line(&fx, "worker ");
	cr_assert(l);
	return (pid_t)atoi(l + 7);
}

static void start_hostile(const char *const *args)
{
	fx_start(&fx, "fx_hostile", args, 30);
}

/* ---- libthread_db's descriptors ---------------------------------------------- */

static const struct {
	const char *name;	/* _thread_db_NAME in libc */
	const char *word;	/* 0 size, 1 count, 2 offset */
	const char *value;
	const char *shown;	/* how the warning shows it */
} descs[] = {
	/* every size libthread_db allocas or copies, and the others */
	{ "sizeof_pthread", "0", "0xffffffff", "4294967295 (0xffffffff)" },
	{ "sizeof_pthread", "0", "0x800000", "8388608 (0x800000)" },
	{ "sizeof_pthread", "0", "0", "0 (0)" },
	{ "sizeof_dtv_slotinfo", "0", "0xffffffff", "(0xffffffff)" },
	{ "sizeof_dtv_slotinfo", "0", "0x800000", "(0x800000)" },
	{ "sizeof_dtv_slotinfo_list", "0", "0xffffffff", "(0xffffffff)" },
	{ "sizeof_list_t", "0", "0x800000", "(0x800000)" },
	{ "sizeof_td_thr_events_t", "0", "0xffffffff", "(0xffffffff)" },
	{ "sizeof_td_eventbuf_t", "0", "0x800000", "(0x800000)" },
	{ "sizeof_pthread_key_struct", "0", "0xffffffff", "(0xffffffff)" },
	{ "sizeof_pthread_key_data", "0", "0x800000", "(0x800000)" },
	{ "sizeof_pthread_key_data_level2", "0", "0xffffffff", "(0xffffffff)" },
	/* fields: offsets past the end, negative as int32, wrapping */
	{ "pthread_key_struct_seq", "2", "0xfffffff8", "offset 0xfffffff8" },
	{ "pthread_key_data_data", "2", "0x7ffffff8", "offset 0x7ffffff8" },
	{ "pthread_tid", "2", "0x80000000", "offset 0x80000000" },
	{ "pthread_specific", "2", "0xfffffff0", "offset 0xfffffff0" },
	{ "pthread_dtvp", "2", "0xffffff00", "offset 0xffffff00" },
	{ "pthread_start_routine", "2", "0x940", "offset 0x940" },
	{ "dtv_slotinfo_map", "2", "0xfffffff8", "offset 0xfffffff8" },
	{ "link_map_l_tls_modid", "2", "0xfffffff8", "offset 0xfffffff8" },
	/* counts and element sizes */
	{ "__pthread_keys", "1", "0xffffffff", "count 4294967295" },
	{ "pthread_key_data_level2_data", "1", "0xffffffff", "count 4294967295" },
	{ "pthread_eventbuf_eventmask_event_bits", "1", "0xfffffff", "count 268435455" },
	{ "pthread_schedpolicy", "0", "0xffff00", "16776960 bits" },
	{ "pthread_cancelhandling", "0", "0x7fffff00", "0x7fffff00 bits" },
	{ "dtv_dtv", "0", "0xffffffff", "0xffffffff bits" },
	{ "const_thread_area", "0", "0xffffffff", "4294967295 (0xffffffff)" },
};

Test(hostile, absurd_descriptors_refuse_libthread_db)
{
	for (size_t i = 0; i < sizeof descs / sizeof *descs; i++) {
		const char *args[] = { "desc", descs[i].name, descs[i].word,
				       descs[i].value, NULL };
		start_hostile(args);
		const char *extra[] = { "--keys", "--errno", NULL };
		json_t *doc = inspect(fx.pid, NULL, extra, NULL, NULL);
		json_t *tdb = json_object_get(json_object_get(doc, "process"),
					      "thread_db");
		/* libthread_db refused, and why: which descriptor, which value */
		cr_assert_str_eq(jstr(tdb, "status"), "error", "%s = %s: thread_db %s",
				 descs[i].name, descs[i].value, jstr(tdb, "status"));
		const char *need[] = { "libthread_db is not used", "_thread_db_",
				       descs[i].shown, NULL };
		cr_assert(any_has(warnings(doc), need),
			  "%s = %s: no warning showing %s", descs[i].name,
			  descs[i].value, descs[i].shown);
		/* the threads are still listed (from /proc) */
		cr_assert_eq(json_array_size(json_object_get(doc, "threads")), 3,
			     "%s: threads missing", descs[i].name);
		json_decref(doc);
		check_running(fx.pid);
		fx_kill(&fx);
	}
}

Test(hostile, key_descriptor_past_its_struct_leaves_keys_unknown)
{
	/* a crash this target once caused: offset 0xfffffff8 wrapped a
	 * 32-bit check */
	const char *args[] = { "desc", "pthread_key_struct_seq", "2", "0xfffffff8",
			       NULL };
	start_hostile(args);
	const char *extra[] = { "--keys", NULL };
	json_t *doc = inspect(fx.pid, NULL, extra, NULL, NULL);
	cr_assert(json_is_null(json_object_get(json_object_get(doc, "process"), "keys")),
		  "keys shown from a layout that does not hold");
	const char *need[] = { "--keys:", "_thread_db_pthread_key_struct_seq",
			       "0xfffffff8", NULL };
	cr_assert(any_has(warnings(doc), need), "no --keys warning naming it");
	json_decref(doc);
	check_running(fx.pid);
}

/* ---- the link_map chain ------------------------------------------------------------ */

Test(hostile, link_map_of_25000_copies_costs_one_module)
{
	const char *args[] = { "linkmap", "25000", NULL };
	start_hostile(args);
	/* no descriptor per entry: 64 are plenty */
	const char *wrap[] = { "/usr/bin/prlimit", "--nofile=64:64", "--", NULL };
	int status;
	long rss;
	json_t *doc = inspect(fx.pid, wrap, NULL, &status, &rss);
	cr_assert_eq(status, 0);
	cr_assert_str_eq(jstr(json_object_get(doc, "process"), "module_map"), "link_map");
	const char *need[] = { "module map:", "25000 entries more than once", NULL };
	cr_assert(any_has(warnings(doc), need), "the duplicates are not reported");
	size_t i;
	json_t *t;
	json_array_foreach(json_object_get(doc, "threads"), i, t) {
		json_t *st = json_object_get(t, "stack");
		cr_assert_str_eq(jstr(st, "end"), "complete", "thread %lld: %s",
				 json_integer_value(json_object_get(t, "tid")),
				 jstr(st, "error"));
	}
	/* before: 9 GB; the memory of a small target now */
	const char *san = getenv("TINSPECT_SANITIZE");
	if (!san || !*san || !strcmp(san, "none"))
		cr_assert_lt(rss, 200 * 1024, "tinspect used %ld KiB", rss);
	cr_log_info("25000 link_map copies: tinspect peak RSS %ld KiB", rss);
	json_decref(doc);
	check_running(fx.pid);
}

static void check_maps_only(const char *mode, const char *why)
{
	const char *args[] = { mode, NULL };
	start_hostile(args);
	const char *extra[] = { "--errno", NULL };
	json_t *doc = inspect(fx.pid, NULL, extra, NULL, NULL);
	cr_assert_str_eq(jstr(json_object_get(doc, "process"), "module_map"),
			 "maps_only");
	const char *need[] = { "module map:", "not usable", why, NULL };
	cr_assert(any_has(warnings(doc), need), "no reason for the maps-only map");
	/* errno needs libc's link_map: unknown, and said so */
	const char *need2[] = { "--errno", "link_map", NULL };
	cr_assert(any_has(warnings(doc), need2), "errno not said unknown");
	/* the stacks are still symbolized from the maps */
	json_t *main = thread_by_tid(doc, fx.pid);
	cr_assert(main);
	json_t *frames = json_object_get(json_object_get(main, "stack"), "frames");
	bool found = false;
	size_t i;
	json_t *f;
	json_array_foreach(frames, i, f) {
		const char *s = jstr(f, "symbol");
		found |= s && !strcmp(s, "main");
	}
	cr_assert(found, "main() not in the main thread's stack");
	json_decref(doc);
	check_running(fx.pid);
}

Test(hostile, r_map_loop_falls_back_to_the_maps)
{
	check_maps_only("rmap-loop", "a loop or garbage");
}

Test(hostile, r_map_garbage_falls_back_to_the_maps)
{
	check_maps_only("rmap-garbage", "cannot be read");
}

/* ---- a live thread's struct pthread ----------------------------------------------- */

Test(hostile, pthread_tid_garbage_is_an_error_of_that_thread)
{
	const char *args[] = { "pthread-tid", NULL };
	start_hostile(args);
	const char *extra[] = { "--keys", "--errno", NULL };
	json_t *doc = inspect(fx.pid, NULL, extra, NULL, NULL);
	json_t *t = thread_by_tid(doc, worker0());
	cr_assert(t);
	const char *need[] = { "descriptor says LWP 2147483632", NULL };
	cr_assert(any_has(json_object_get(t, "errors"), need),
		  "the foreign tid is not reported");
	json_decref(doc);
	check_running(fx.pid);
}

Test(hostile, pthread_specific_garbage_leaves_those_keys_unknown)
{
	const char *args[] = { "pthread-specific", NULL };
	start_hostile(args);
	const char *extra[] = { "--keys", NULL };
	json_t *doc = inspect(fx.pid, NULL, extra, NULL, NULL);
	json_t *t = thread_by_tid(doc, worker0());
	cr_assert(t);
	const char *need[] = { "keys:", "8 value(s) not read", NULL };
	cr_assert(any_has(json_object_get(t, "errors"), need));
	size_t i;
	json_t *k;
	json_array_foreach(json_object_get(t, "keys"), i, k) {
		json_int_t key = json_integer_value(json_object_get(k, "key"));
		json_t *v = json_object_get(k, "value");
		if (key >= 32)	/* their block pointer is garbage */
			cr_assert(json_is_null(v), "key %lld shown", (long long)key);
		else		/* the first block is inside struct pthread */
			cr_assert(json_is_string(v), "key %lld unknown", (long long)key);
	}
	json_decref(doc);
	check_running(fx.pid);
}

Test(hostile, pthread_list_garbage_is_harmless)
{
	const char *args[] = { "pthread-list", NULL };
	start_hostile(args);
	const char *extra[] = { "--keys", "--errno", NULL };
	int status;
	json_t *doc = inspect(fx.pid, NULL, extra, &status, NULL);
	/* tinspect never walks the list (gdb's rule): every thread is known */
	cr_assert_eq(status, 0);
	json_t *t = thread_by_tid(doc, worker0());
	cr_assert(json_is_object(json_object_get(t, "pthread")));
	json_decref(doc);
	check_running(fx.pid);
}

/* ---- locks, keys, stacks ------------------------------------------------------------- */

Test(hostile, mutex_words_garbage_leave_the_owner_unknown)
{
	const char *args[] = { "mutex", NULL };
	start_hostile(args);
	json_t *doc = inspect(fx.pid, NULL, NULL, NULL, NULL);
	json_t *b = json_object_get(thread_by_tid(doc, worker0()), "blocked_on");
	cr_assert(json_is_object(b), "the waiter's wait is not shown");
	cr_assert(json_is_null(json_object_get(b, "owner")), "an owner read out of garbage");
	cr_assert_str_eq(jstr(b, "owner_state"), "unknown");
	json_t *l = json_array_get(json_object_get(doc, "locks"), 0);
	cr_assert(l);
	cr_assert(strstr(jstr(l, "note"), "no glibc mutex"), "note: %s", jstr(l, "note"));
	cr_assert_eq(json_array_size(json_object_get(doc, "deadlocks")), 0);
	json_decref(doc);
	check_running(fx.pid);
}

Test(hostile, key_table_garbage_is_bounded)
{
	const char *args[] = { "keys", NULL };
	start_hostile(args);
	const char *extra[] = { "--keys", NULL };
	json_t *doc = inspect(fx.pid, NULL, extra, NULL, NULL);
	json_t *keys = json_object_get(json_object_get(doc, "process"), "keys");
	cr_assert(json_is_object(keys));
	cr_assert_leq(json_array_size(json_object_get(keys, "in_use")), 1024);
	/* a slot whose sequence number is not the key's: not the value */
	size_t i;
	json_t *k;
	json_array_foreach(json_object_get(thread_by_tid(doc, worker0()), "keys"), i, k)
		cr_assert_str_eq(jstr(k, "value"), "0x0");
	json_decref(doc);
	check_running(fx.pid);
}

Test(hostile, stack_pointer_in_no_mapping)
{
	const char *args[] = { "badsp", NULL };
	start_hostile(args);
	int status;
	json_t *doc = inspect(fx.pid, NULL, NULL, &status, NULL);
	cr_assert_eq(status, 1, "a thread without a stack is partial");
	json_t *t = thread_by_tid(doc, worker0());
	json_t *st = json_object_get(t, "stack");
	cr_assert_str_eq(jstr(st, "end"), "bad_sp");
	cr_assert(strstr(jstr(st, "error"), "no mapping"));
	cr_assert(json_is_null(json_object_get(t, "stack_bounds")));
	const char *need[] = { "stack bounds:", "0x10000", "no mapping", NULL };
	cr_assert(any_has(json_object_get(t, "errors"), need));
	json_decref(doc);
	check_running(fx.pid);
}

Test(hostile, stack_pointer_in_a_prot_none_mapping)
{
	/* a guard page, a huge MAP_NORESERVE reservation: nothing can be
	 * copied, which is an error with its reason, not a "truncated"
	 * stack (more than --stack-bytes needed) of 0 bytes */
	const char *args[] = { "protnone", NULL };
	start_hostile(args);
	int status;
	json_t *doc = inspect(fx.pid, NULL, NULL, &status, NULL);
	cr_assert_eq(status, 1, "a thread without a stack is partial");
	json_t *t = thread_by_tid(doc, worker0());
	json_t *st = json_object_get(t, "stack");
	cr_assert_str_eq(jstr(st, "end"), "error");
	const char *sp = fx_line(&fx, "protnone ") + 9;
	cr_assert(strstr(jstr(st, "error"), sp), "%s", jstr(st, "error"));
	cr_assert(strstr(jstr(st, "error"), "cannot be read"), "%s", jstr(st, "error"));
	const char *need[] = { "stack:", "---p", NULL };
	cr_assert(any_has(json_object_get(t, "errors"), need));
	json_decref(doc);
	check_running(fx.pid);
}

/* ---- files ---------------------------------------------------------------------------- */

/* A copy of the stripped fx_dbglink in a directory of its own, its
 * debuglink name a FIFO in `where` ("" or ".debug"). */
static void debuglink_fifo(const char *where)
{
	make_tmpdir();
	char exe[256], fifo[256], cmd[512];
	snprintf(exe, sizeof exe, "%s/fx_dbglink", tmpdir);
	snprintf(cmd, sizeof cmd, "cp -- '%s' '%s'", fixture_path("fx_dbglink"), exe);
	cr_assert(system(cmd) == 0);
	if (*where) {
		snprintf(fifo, sizeof fifo, "%s/%s", tmpdir, where);
		cr_assert(mkdir(fifo, 0755) == 0);
		snprintf(fifo, sizeof fifo, "%s/%s/fx_dbglink.debug", tmpdir, where);
	} else {
		snprintf(fifo, sizeof fifo, "%s/fx_dbglink.debug", tmpdir);
	}
	cr_assert(mkfifo(fifo, 0644) == 0, "mkfifo: %s", strerror(errno));
	const char *args[] = { "--idle", "2", NULL };
	fx_start_path(&fx, exe, args, 30);
	/* before: blocked in open() for ever after the resume */
	json_t *doc = inspect(fx.pid, NULL, NULL, NULL, NULL);
	const char *need[] = { "stacks:", fifo, "not a regular file", NULL };
	cr_assert(any_has(warnings(doc), need), "the FIFO is not reported");
	json_decref(doc);
	check_running(fx.pid);
}

Test(hostile, debuglink_fifo_beside_the_program)
{
	debuglink_fifo("");
}

Test(hostile, debuglink_fifo_in_dot_debug)
{
	debuglink_fifo(".debug");
}

/* A copy of the stripped fx_dbglink_noid (no build-id: candidates are
 * checked by the debuglink's CRC, so read whole) in a directory of its
 * own; *exe its path. */
static void noid_copy(char *exe, size_t len)
{
	make_tmpdir();
	char cmd[512];
	snprintf(exe, len, "%s/fx_dbglink_noid", tmpdir);
	snprintf(cmd, sizeof cmd, "cp -- '%s' '%s'", fixture_path("fx_dbglink_noid"),
		 exe);
	cr_assert(system(cmd) == 0);
}

/* Watch path for opens and reads (fanotify: the event names the process). */
static void fan_watch(int fan, const char *path)
{
	cr_assert(fanotify_mark(fan, FAN_MARK_ADD, FAN_OPEN | FAN_ACCESS, AT_FDCWD,
				path) == 0, "fanotify_mark %s: %s", path, strerror(errno));
}

/* Whether pid is a child of this process (alive or a zombie). */
static bool our_child(pid_t pid)
{
	siginfo_t si = { 0 };
	return waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0;
}

/*
 * How many open or read events fan has queued of process pid or of the
 * processes it left behind: tinspect opens the target's files through a
 * helper it forks twice (fileworker.c), which the caller, a child
 * subreaper, has inherited; those are reaped here.  Events of any other
 * process of the machine do not count.
 */
static int fan_events_of(int fan, pid_t pid)
{
	int n = 0;
	pid_t helpers[16];
	size_t nhelpers = 0;
	char buf[4096] __attribute__((aligned(8)));
	ssize_t len;
	while ((len = read(fan, buf, sizeof buf)) > 0) {
		struct fanotify_event_metadata *m = (void *)buf;
		for (; FAN_EVENT_OK(m, len); m = FAN_EVENT_NEXT(m, len)) {
			if (m->fd >= 0)
				close(m->fd);
			if (m->pid == pid) {
				n++;
				continue;
			}
			if (m->pid == getpid() || m->pid == fx.pid || !our_child(m->pid))
				continue;
			n++;
			bool known = false;
			for (size_t i = 0; i < nhelpers; i++)
				known |= helpers[i] == m->pid;
			if (!known && nhelpers < 16)
				helpers[nhelpers++] = m->pid;
		}
	}
	/* the helper ends with tinspect's socket: it is not long in going */
	for (size_t i = 0; i < nhelpers; i++)
		waitpid(helpers[i], NULL, 0);
	return n;
}

Test(hostile, debuglink_to_pseudo_files_is_never_read)
{
	/* The debuglink's name, beside the program, a symlink to a file of
	 * /proc; in .debug/ there, to one of /sys; stat() says "regular"
	 * of both.  Reading them is harmless here, but the same symlink to
	 * /proc/kmsg would eat the kernel's log: tinspect must neither open
	 * them for reading nor read them (fanotify names who does). */
	char exe[256], link[300];
	noid_copy(exe, sizeof exe);
	snprintf(link, sizeof link, "%s/fx_dbglink_noid.debug", tmpdir);
	cr_assert(symlink("/proc/version", link) == 0);
	snprintf(link, sizeof link, "%s/.debug", tmpdir);
	cr_assert(mkdir(link, 0755) == 0);
	snprintf(link, sizeof link, "%s/.debug/fx_dbglink_noid.debug", tmpdir);
	cr_assert(symlink("/sys/kernel/uevent_seqnum", link) == 0);
	int fan = fanotify_init(FAN_CLASS_NOTIF | FAN_NONBLOCK | FAN_CLOEXEC, O_RDONLY);
	if (fan < 0 && (errno == EPERM || errno == ENOSYS))
		cr_skip("fanotify needs CAP_SYS_ADMIN");
	cr_assert(fan >= 0, "fanotify_init: %s", strerror(errno));
	fan_watch(fan, "/proc/version");
	fan_watch(fan, "/sys/kernel/uevent_seqnum");
	const char *args[] = { "--idle", "2", NULL };
	fx_start_path(&fx, exe, args, 30);
	const char *targs[] = { "--json", pidstr(fx.pid), NULL };
	/* tinspect's file helper, orphaned at its start, becomes ours */
	cr_assert(prctl(PR_SET_CHILD_SUBREAPER, 1) == 0);
	struct run r;
	run_start(&r, targs);
	run_wait(&r, 240);
	cr_assert(!r.timed_out && (r.status == 0 || r.status == 1), "exit %d; %s",
		  r.status, r.err ? r.err : "");
	cr_assert(schema_valid(r.out, r.out_len));
	int n = fan_events_of(fan, r.pid);
	close(fan);
	prctl(PR_SET_CHILD_SUBREAPER, 0);
	cr_assert_eq(n, 0, "tinspect opened or read /proc/version or "
		     "/sys/kernel/uevent_seqnum %d times", n);
	json_t *doc = json_loadb(r.out, r.out_len, 0, NULL);
	cr_assert(doc);
	const char *proc[] = { "stacks:", "/fx_dbglink_noid.debug", "procfs", "not read",
			       NULL };
	const char *sys[] = { "stacks:", "/.debug/fx_dbglink_noid.debug", "sysfs",
			      "not read", NULL };
	cr_assert(any_has(warnings(doc), proc), "the procfs file is not reported");
	cr_assert(any_has(warnings(doc), sys), "the sysfs file is not reported");
	json_decref(doc);
	run_free(&r);
	check_running(fx.pid);
}

/* Run tinspect with args, its output to files in tmpdir; its exit status
 * (-1 if killed) and the bytes it read by read(2) and pread(2) (rchar of
 * /proc/PID/io, read while it is a zombie, before it is reaped). */
static int run_counting_reads(const char *const *args, uint64_t *ret_rchar)
{
	char out[128], err[128];
	snprintf(out, sizeof out, "%s/tinspect.out", tmpdir);
	snprintf(err, sizeof err, "%s/tinspect.err", tmpdir);
	const char *argv[32] = { getenv("TINSPECT") };
	size_t n = 1;
	for (; *args && n < 31; args++)
		argv[n++] = *args;
	argv[n] = NULL;
	pid_t pid = fork();
	cr_assert(pid >= 0);
	if (pid == 0) {
		int o = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		int e = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (o < 0 || e < 0 || dup2(o, 1) < 0 || dup2(e, 2) < 0)
			_exit(127);
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	siginfo_t si;
	cr_assert(waitid(P_PID, (id_t)pid, &si, WEXITED | WNOWAIT) == 0);
	char path[64], buf[1024];
	snprintf(path, sizeof path, "/proc/%d/io", (int)pid);
	long len = fx_read_small(path, buf, sizeof buf);
	const char *r = len > 0 ? strstr(buf, "rchar:") : NULL;
	*ret_rchar = r ? strtoull(r + 6, NULL, 10) : UINT64_MAX;
	int st;
	cr_assert(waitpid(pid, &st, 0) == pid);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

Test(hostile, debuglink_crc_checks_stay_in_budget)
{
	/* Two candidates of the debuglink's name, beside the program and in
	 * .debug/ there, sparse files just under what one module's search
	 * may read (1 GiB): the first is read once (libdwfl asks twice for
	 * the module: the answer is kept), the second not at all. */
	if (getenv("TINSPECT_WRAPPER") && *getenv("TINSPECT_WRAPPER"))
		cr_skip("the wrapper's own reads would be counted");
	const uint64_t budget = 1ull << 30, size = budget - 4096;
	char exe[256], cand[300];
	noid_copy(exe, sizeof exe);
	snprintf(cand, sizeof cand, "%s/fx_dbglink_noid.debug", tmpdir);
	int fd = open(cand, O_WRONLY | O_CREAT | O_EXCL, 0644);
	cr_assert(fd >= 0 && ftruncate(fd, (off_t)size) == 0);
	close(fd);
	snprintf(cand, sizeof cand, "%s/.debug", tmpdir);
	cr_assert(mkdir(cand, 0755) == 0);
	snprintf(cand, sizeof cand, "%s/.debug/fx_dbglink_noid.debug", tmpdir);
	fd = open(cand, O_WRONLY | O_CREAT | O_EXCL, 0644);
	cr_assert(fd >= 0 && ftruncate(fd, (off_t)size) == 0);
	close(fd);
	const char *args[] = { "--idle", "2", NULL };
	fx_start_path(&fx, exe, args, 30);
	const char *targs[] = { "--json", pidstr(fx.pid), NULL };
	uint64_t rchar;
	int status = run_counting_reads(targs, &rchar);
	cr_assert(status == 0 || status == 1, "exit %d", status);
	/* the rest tinspect reads (/proc, small files) is a few MB */
	cr_assert(rchar < budget + (64u << 20), "tinspect read %llu bytes; the "
		  "debuglink checks may read %llu", (unsigned long long)rchar,
		  (unsigned long long)budget);
	char out[128];
	snprintf(out, sizeof out, "%s/tinspect.out", tmpdir);
	json_error_t je;
	json_t *doc = json_load_file(out, 0, &je);
	cr_assert(doc, "no JSON: %s", je.text);
	const char *need[] = { "stacks:", cand, "would exceed", NULL };
	cr_assert(any_has(warnings(doc), need), "the candidate left unread is "
		  "not reported");
	json_decref(doc);
	check_running(fx.pid);
}

Test(hostile, a_thousand_libraries_under_1024_descriptors)
{
	/* distinct files (distinct inodes), so distinct modules */
	make_tmpdir();
	char cmd[1024];
	snprintf(cmd, sizeof cmd, "for i in $(seq 0 1099); do cp -- '%s' '%s'/lib$i.so "
		 "|| exit 1; done", fixture_path("libfx_plugin.so"), tmpdir);
	cr_assert(system(cmd) == 0);
	const char *args[] = { "dlopen", tmpdir, "1100", NULL };
	start_hostile(args);
	/* --tls of a name no module has: every library's symbols are read */
	const char *wrap[] = { "/usr/bin/prlimit", "--nofile=1024:1024", "--", NULL };
	const char *extra[] = { "--tls", "nosuch", "--errno", "--keys", NULL };
	int status;
	json_t *doc = inspect(fx.pid, wrap, extra, &status, NULL);
	cr_assert_eq(status, 0, "not a complete snapshot");
	size_t i;
	json_t *t;
	json_array_foreach(json_object_get(doc, "threads"), i, t)
		cr_assert_str_eq(jstr(json_object_get(t, "stack"), "end"), "complete");
	json_decref(doc);
	check_running(fx.pid);
}

/* ---- signals ------------------------------------------------------------------------- */

Test(hostile, sigterm_ends_a_blocked_analysis_at_once)
{
	/* A debuginfod server that accepts and never answers: after the
	 * resume, tinspect waits on it (for the module without local debug
	 * info).  SIGTERM must end it then, not 90 s later. */
	int srv = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t alen = sizeof a;
	cr_assert(srv >= 0 && bind(srv, (struct sockaddr *)&a, sizeof a) == 0 &&
		  listen(srv, 16) == 0 &&
		  getsockname(srv, (struct sockaddr *)&a, &alen) == 0);
	make_tmpdir();
	char url[64], cache[128];
	snprintf(url, sizeof url, "http://127.0.0.1:%d", ntohs(a.sin_port));
	snprintf(cache, sizeof cache, "%s/cache", tmpdir);
	setenv("DEBUGINFOD_URLS", url, 1);
	setenv("DEBUGINFOD_CACHE_PATH", cache, 1);
	/* stripped, without its debug file beside it */
	char exe[256], cmd[512];
	snprintf(exe, sizeof exe, "%s/fx_dbglink", tmpdir);
	snprintf(cmd, sizeof cmd, "cp -- '%s' '%s'", fixture_path("fx_dbglink"), exe);
	cr_assert(system(cmd) == 0);
	const char *args[] = { "--idle", "1", NULL };
	fx_start_path(&fx, exe, args, 30);
	const char *targs[] = { "--json", "--debuginfod", pidstr(fx.pid), NULL };
	struct run r;
	run_start(&r, targs);
	unsetenv("DEBUGINFOD_URLS");
	unsetenv("DEBUGINFOD_CACHE_PATH");
	struct pollfd p = { srv, POLLIN, 0 };
	cr_assert(poll(&p, 1, 60000) == 1, "tinspect never asked debuginfod");
	int c = accept(srv, NULL, NULL);	/* and never answer */
	/* it asks after the resume: the target runs */
	check_running(fx.pid);
	kill(r.pid, SIGTERM);
	run_wait(&r, 10);
	cr_assert(!r.timed_out, "SIGTERM did not end tinspect");
	cr_assert_eq(r.sig, SIGTERM, "exit %d, signal %d", r.status, r.sig);
	run_free(&r);
	if (c >= 0)
		close(c);
	close(srv);
	check_running(fx.pid);
}
