/*
 * test_go: Go programs, as an on-call engineer meets them:
 * stripped (go build -ldflags=-s, Debian's packages), static without a C
 * library, or with cgo.  The fixtures are built by meson with `go build`
 * (tests/fixtures/fx_go_*.go), the deadlock also with every Go toolchain
 * tools/gotoolchains.sh unpacked (GO_BUILDS: "fixture:go-command ...").
 *
 * What must hold: the program is recognised as Go with the version it
 * prints itself (runtime.Version()); its frames are named with the
 * function, file and line `go tool addr2line` of the same toolchain gives
 * for the same binary; its stacks end where the Go runtime's own
 * traceback ends, without errors (exit status 0 on a healthy service,
 * every time, and on Debian's prometheus-node-exporter); a goroutine's
 * stack in the Go heap is never "nearly full"; a program without a C
 * library says so once and gets no glibc warning; a cgo program's pthread
 * ABBA is found.
 */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"

static struct fixture fx;

static void teardown(void)
{
	fx_kill(&fx);
}

TestSuite(go, .fini = teardown, .timeout = 1200);

/* ---- the builds ------------------------------------------------------------------- */

#define MAX_BUILDS 16

struct go_build {
	char fixture[128];
	char go[1024];
};

/* GO_BUILDS, the fixtures meson built with go and the go command of each;
 * skips the test when there is none. */
static size_t go_builds(struct go_build *b, size_t max)
{
	const char *env = getenv("GO_BUILDS");
	size_t n = 0;
	for (const char *p = env ? env : ""; *p && n < max;) {
		const char *end = strchr(p, ' ');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		const char *colon = memchr(p, ':', len);
		if (colon && (size_t)(colon - p) < sizeof b[n].fixture &&
		    len - (size_t)(colon - p) - 1 < sizeof b[n].go) {
			memcpy(b[n].fixture, p, (size_t)(colon - p));
			b[n].fixture[colon - p] = '\0';
			memcpy(b[n].go, colon + 1, len - (size_t)(colon - p) - 1);
			b[n].go[len - (size_t)(colon - p) - 1] = '\0';
			n++;
		}
		p += len;
		while (*p == ' ')
			p++;
	}
	if (!n)
		cr_skip_test("no go command when the tests were built: golang-go "
			     "is not installed (tools/setup.sh installs it)");
	return n;
}

static void need_go(void)
{
	struct go_build b[1];
	go_builds(b, 1);
}

/* The version the fixture printed ("go go1.19.8"). */
static const char *fixture_go_version(void)
{
	const char *l = fx_line(&fx, "go ");
	cr_assert(l, "the fixture did not say its Go version");
	return l + 3;
}

static json_t *run_json(const char *const *extra, int *status)
{
	json_t *doc = inspect_json(fx.pid, extra, status);
	cr_assert(!any_task_stopped(fx.pid) || wait_not_stopped(fx.pid, 2000),
		  "target left stopped");
	return doc;
}

static void run_text(struct run *r, const char *opt)
{
	const char *args[] = { opt ? opt : pidstr(fx.pid), opt ? pidstr(fx.pid) : NULL,
			       NULL };
	run_tinspect(r, args, 300);
	cr_assert(r->out, "no output");
	cr_assert(!any_task_stopped(fx.pid) || wait_not_stopped(fx.pid, 2000));
}

static json_t *go_runtime(json_t *doc)
{
	size_t i;
	json_t *e;
	json_array_foreach(json_object_get(json_object_get(doc, "process"), "runtimes"), i, e)
		if (jstr(e, "name") && !strcmp(jstr(e, "name"), "go"))
			return e;
	return NULL;
}

static size_t count_of(const char *hay, const char *needle)
{
	size_t n = 0;
	for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle))
		n++;
	return n;
}

/* A thread that runs Go code is stopped when the kernel next runs it; on
 * a loaded machine (other suites, other builds) that can take longer than
 * the default --stop-timeout of a second, and the thread is then left out
 * as a straggler, exit status 1, by design.  What is checked here is the
 * reading of Go threads, not the machine's load: wait as long as it takes. */
#define PATIENT "--stop-timeout", "60000"

/* Thread t's stack, "end END, COPIED bytes copied: its frames (symbol or
 * pc)", into buf. */
static const char *stack_str(json_t *t, char *buf, size_t size)
{
	json_t *st = json_object_get(t, "stack");
	int n = snprintf(buf, size, "end %s, %lld bytes copied:",
			 jstr(st, "end") ? jstr(st, "end") : "none",
			 (long long)json_integer_value(json_object_get(st, "copied_bytes")));
	size_t k;
	json_t *f;
	json_array_foreach(json_object_get(st, "frames"), k, f) {
		if (n < 0 || (size_t)n >= size)
			break;
		n += snprintf(buf + n, size - (size_t)n, " %s",
			      jstr(f, "symbol") ? jstr(f, "symbol") : jstr(f, "pc"));
	}
	return buf;
}

/* The first thread error of doc, as "tid TID: ERROR (stack ...)", into
 * buf: what an exit status 1 was for. */
static const char *first_error(json_t *doc, char *buf, size_t size)
{
	size_t i;
	json_t *t;
	snprintf(buf, size, "no thread error; %lld stragglers",
		 (long long)json_integer_value(json_object_get(
			 json_object_get(doc, "capture"), "stragglers")));
	json_array_foreach(json_object_get(doc, "threads"), i, t) {
		json_t *errs = json_object_get(t, "errors");
		if (!json_array_size(errs))
			continue;
		char *err = json_dumps(json_array_get(errs, 0), JSON_ENCODE_ANY);
		char st[1536];
		snprintf(buf, size, "tid %lld: %s (stack %s)",
			 (long long)json_integer_value(json_object_get(t, "tid")),
			 err ? err : "?", stack_str(t, st, sizeof st));
		free(err);
		break;
	}
	return buf;
}

/* ---- recognised, with its version ---------------------------------------------- */

static void check_recognised(const char *fixture)
{
	fx_start(&fx, fixture, NULL, 120);
	const char *version = fixture_go_version();
	json_t *doc = run_json(NULL, NULL);
	json_t *rt = go_runtime(doc);
	cr_assert(rt, "%s: not recognised as a Go program", fixture);
	cr_assert(jstr(rt, "version"), "%s: no Go version", fixture);
	cr_assert_str_eq(jstr(rt, "version"), version, "%s", fixture);
	json_decref(doc);
	struct run r;
	run_text(&r, NULL);
	char want[128];
	snprintf(want, sizeof want, "warning: a Go program (%s): ", version);
	const char *warn = strstr(r.out, want);
	const char *verdict = strstr(r.out, "Verdict: ");
	cr_assert(warn && verdict && warn < verdict,
		  "%s: the Go warning with its version, before the verdict:\n%s",
		  fixture, r.out);
	/* never a clean bill of health without the warning before it */
	const char *clean = strstr(r.out, "No deadlock found");
	cr_assert(!clean || warn < clean);
	run_free(&r);
	fx_kill(&fx);
}

Test(go, stripped_go_program_is_recognised_with_its_version)
{
	struct go_build b[MAX_BUILDS];
	size_t n = go_builds(b, MAX_BUILDS);
	check_recognised("fx_go_deadlock_s");
	check_recognised("fx_go_deadlock");
	check_recognised("fx_go_cgo");
	/* the other toolchains' pclntab and buildinfo formats */
	for (size_t i = 1; i < n; i++)
		check_recognised(b[i].fixture);
}

/* ---- frames named as go tool addr2line names them ------------------------------ */

/* Run argv with the file in_path as stdin; its stdout (malloc'ed). */
static char *run_capture(const char *const *argv, const char *in_path)
{
	int p[2];
	cr_assert(pipe(p) == 0);
	pid_t pid = fork();
	cr_assert(pid >= 0);
	if (pid == 0) {
		int in = open(in_path, O_RDONLY);
		int null = open("/dev/null", O_WRONLY);
		if (in < 0 || null < 0)
			_exit(126);
		dup2(in, 0);
		dup2(p[1], 1);
		dup2(null, 2);
		close(p[0]);
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	close(p[1]);
	size_t len = 0, cap = 1 << 16;
	char *out = malloc(cap);
	cr_assert(out);
	ssize_t k;
	while ((k = read(p[0], out + len, cap - len - 1)) > 0) {
		len += (size_t)k;
		if (cap - len < 4096) {
			cap *= 2;
			out = realloc(out, cap);
			cr_assert(out);
		}
	}
	out[len] = '\0';
	close(p[0]);
	int st;
	waitpid(pid, &st, 0);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s failed", argv[0]);
	return out;
}

struct named {
	uint64_t addr;		/* what addr2line is given */
	char *symbol, *where;	/* "file:line" */
};

/* Whether frame k of a stack is where a call was injected, not made: the
 * Go runtime makes a faulting function "call" runtime.sigpanic, and a
 * preempted one runtime.asyncPreempt, with the interrupted pc itself as
 * the return address. */
static bool injected_into(json_t *frames, size_t k)
{
	const char *callee = k ? jstr(json_array_get(frames, k - 1), "symbol") : NULL;
	return callee && (!strcmp(callee, "runtime.sigpanic") ||
			  !strcmp(callee, "runtime.asyncPreempt"));
}

/* Every frame of the executable in doc, with the address addr2line takes
 * for it (a return address less one, as for its own lookup; the pc itself
 * for the innermost frame and where a call was injected). */
static size_t exe_frames(json_t *doc, const char *exe, struct named *v, size_t max)
{
	size_t n = 0, i;
	json_t *t;
	json_array_foreach(json_object_get(doc, "threads"), i, t) {
		json_t *frames = json_object_get(json_object_get(t, "stack"), "frames");
		size_t k;
		json_t *f;
		json_array_foreach(frames, k, f) {
			const char *mod = jstr(f, "module");
			if (!mod || strcmp(mod, exe) || n == max)
				continue;
			cr_assert(!json_is_true(json_object_get(f, "inlined")),
				  "an inlined frame in a stripped binary");
			cr_assert(jstr(f, "symbol"), "an unnamed Go frame at %s",
				  jstr(f, "pc"));
			const char *file = jstr(f, "file");
			cr_assert(file, "no file for %s", jstr(f, "symbol"));
			uint64_t a = jhex(f, "module_offset") -
				     (k && !injected_into(frames, k) ? 1 : 0);
			char where[4096];
			snprintf(where, sizeof where, "%s:%lld", file,
				 (long long)json_integer_value(json_object_get(f, "line")));
			v[n].addr = a;
			v[n].symbol = strdup(jstr(f, "symbol"));
			v[n].where = strdup(where);
			n++;
		}
	}
	return n;
}

static void check_named_as_addr2line(const struct go_build *b)
{
	fx_start(&fx, b->fixture, NULL, 120);
	json_t *doc = run_json(NULL, NULL);
	const char *exe = jstr(json_object_get(doc, "process"), "exe");
	cr_assert(exe);
	static struct named v[4096];
	size_t n = exe_frames(doc, exe, v, 4096);
	cr_assert_geq(n, 12, "%s: only %zu Go frames", b->fixture, n);
	char in_path[] = "/tmp/tinspect-go-addr.XXXXXX";
	int fd = mkstemp(in_path);
	cr_assert(fd >= 0);
	FILE *in = fdopen(fd, "w");
	for (size_t i = 0; i < n; i++)
		fprintf(in, "0x%" PRIx64 "\n", v[i].addr);
	fclose(in);
	const char *argv[] = { b->go, "tool", "addr2line", fixture_path(b->fixture),
			       NULL };
	char *out = run_capture(argv, in_path);
	unlink(in_path);
	char *save = NULL, *line = strtok_r(out, "\n", &save);
	bool main_seen = false, fault_seen = false;
	const char *prev = NULL;
	for (size_t i = 0; i < n; i++) {
		char *func = line, *where = func ? strtok_r(NULL, "\n", &save) : NULL;
		cr_assert(where, "%s: go tool addr2line said too little", b->fixture);
		cr_assert_str_eq(v[i].symbol, func, "%s at 0x%" PRIx64, b->fixture,
				 v[i].addr);
		cr_assert_str_eq(v[i].where, where, "%s: %s at 0x%" PRIx64, b->fixture,
				 func, v[i].addr);
		/* its line may be an inlined callee's (io.Copy's) */
		main_seen |= !strcmp(func, "main.main");
		/* the faulting pc, the first instruction of main.load, above
		 * runtime.sigpanic: looked up at pc - 1 it is named as the
		 * function before it */
		fault_seen |= prev && !strcmp(prev, "runtime.sigpanic") &&
			      !strcmp(func, "main.load");
		prev = v[i].symbol;
		line = strtok_r(NULL, "\n", &save);
	}
	for (size_t i = 0; i < n; i++) {
		free(v[i].symbol);
		free(v[i].where);
	}
	cr_assert(main_seen, "%s: main.main not among the frames",
		  b->fixture);
	cr_assert(fault_seen, "%s: no main.load above runtime.sigpanic", b->fixture);
	cr_log_info("%s: %zu Go frames named as %s tool addr2line names them",
		    b->fixture, n, b->go);
	free(out);
	json_decref(doc);
	fx_kill(&fx);
}

Test(go, frames_are_named_as_go_tool_addr2line_names_them)
{
	struct go_build b[MAX_BUILDS];
	size_t n = go_builds(b, MAX_BUILDS);
	for (size_t i = 0; i < n; i++)
		check_named_as_addr2line(&b[i]);
}

/* ---- stacks end where the Go runtime's end, without errors ------------------ */

/* A pthread being born (a cgo program's runtime starts threads with
 * pthread_create at any time): stopped in glibc's clone3 right after the
 * system call, before its child path marks the outermost frame, where the
 * call frame information is the parent's.  Its "return address" would lie
 * above its new stack, in its descriptor, which the stop does not copy:
 * the stack ends truncated, no error.  That is glibc's, not Go's. */
static bool newborn(json_t *frames)
{
	const char *sym = jstr(json_array_get(frames, 0), "symbol");
	return json_array_size(frames) == 1 && sym &&
	       (!strcmp(sym, "__clone3") || !strcmp(sym, "clone3"));
}

/* Every thread's stack ends complete or at a stack switch, without an
 * error. */
static void check_ends(json_t *doc, const char *what)
{
	size_t i, complete = 0;
	json_t *t;
	json_array_foreach(json_object_get(doc, "threads"), i, t) {
		json_t *st = json_object_get(t, "stack");
		const char *end = jstr(st, "end");
		cr_assert(end, "a thread without a stack");
		char buf[2048];
		cr_assert(!strcmp(end, "complete") || !strcmp(end, "stack_switch") ||
			  (!strcmp(end, "truncated") &&
			   newborn(json_object_get(st, "frames"))),
			  "%s: thread %lld (sp %s): stack %s (%s)", what,
			  (long long)json_integer_value(json_object_get(t, "tid")),
			  jstr(json_object_get(t, "regs"), "sp") ?
				  jstr(json_object_get(t, "regs"), "sp") : "?",
			  stack_str(t, buf, sizeof buf),
			  jstr(st, "error") ? jstr(st, "error") : "");
		cr_assert_eq(json_array_size(json_object_get(t, "errors")), 0);
		json_t *frames = json_object_get(st, "frames");
		if (!strcmp(end, "truncated") && newborn(frames))
			continue;
		if (!strcmp(end, "stack_switch"))
			cr_assert(jstr(json_array_get(frames, json_array_size(frames) - 1),
				       "symbol"), "a stack switch at an unnamed frame");
		if (!strcmp(end, "complete"))
			complete++;
	}
	cr_assert_gt(complete, 0, "no stack reached its outermost frame");
	cr_assert_eq(json_integer_value(json_object_get(json_object_get(doc, "capture"),
							"threads_with_errors")), 0);
}

/* The text says where a stack switch stopped a stack, under the frame it
 * stopped at (a line "#N 0x... in NAME+0x..."); how many times it says so.
 * (The text is another capture than the JSON's: threads may have moved.) */
static size_t check_switch_lines(const char *text)
{
	static const char say[] = "  (unwinding stopped at ";
	static const char why[] = ", which switches stacks";
	size_t n = 0;
	for (const char *p = text; (p = strstr(p, say)); p += sizeof say - 1) {
		const char *name = p + sizeof say - 1, *eol = strchr(name, '\n');
		const char *comma = strstr(name, why);
		if (!comma || (eol && comma > eol))
			continue;	/* another reason */
		/* the line above */
		cr_assert(p > text && p[-1] == '\n');
		const char *above = p - 1;
		while (above > text && above[-1] != '\n')
			above--;
		char want[256];
		snprintf(want, sizeof want, " in %.*s+", (int)(comma - name), name);
		const char *hit = strstr(above, want);
		cr_assert(hit && hit < p, "\"%.*s\" is not under its frame", (int)(comma - p), p);
		n++;
	}
	return n;
}

Test(go, stacks_end_where_the_go_runtime_ends_them_without_errors)
{
	need_go();
	static const char *const fixtures[] = { "fx_go_deadlock_s", "fx_go_service",
						"fx_go_cgo" };
	for (size_t k = 0; k < 3; k++) {
		fx_start(&fx, fixtures[k], NULL, 120);
		int status;
		const char *patient[] = { PATIENT, NULL };
		json_t *doc = run_json(patient, &status);
		char why[2048];
		cr_assert_eq(status, 0, "%s: exit status %d: %s", fixtures[k], status,
			     first_error(doc, why, sizeof why));
		check_ends(doc, fixtures[k]);
		json_decref(doc);
		struct run r;
		const char *args[] = { PATIENT, "--verbose", pidstr(fx.pid), NULL };
		run_tinspect(&r, args, 300);
		cr_assert(r.out);
		cr_assert(!any_task_stopped(fx.pid) || wait_not_stopped(fx.pid, 2000));
		cr_assert_eq(r.status, 0, "exit status %d", r.status);
		size_t n = check_switch_lines(r.out);
		/* the deadlock's idle threads sleep in the scheduler, behind
		 * runtime.mcall */
		if (k == 0)
			cr_assert_gt(n, 0, "no stack switch said in:\n%s", r.out);
		run_free(&r);
		fx_kill(&fx);
	}
}

/* ---- goroutine stacks in the Go heap ------------------------------------------ */

Test(go, a_stack_in_the_go_heap_is_never_nearly_full)
{
	need_go();
	fx_start(&fx, "fx_go_deadlock_s", NULL, 120);
	json_t *doc = run_json(NULL, NULL);
	size_t i, unknown = 0;
	json_t *t;
	json_array_foreach(json_object_get(doc, "threads"), i, t) {
		json_t *b = json_object_get(t, "stack_bounds");
		const char *why = jstr(t, "stack_bounds_unknown");
		if (json_is_null(b)) {
			cr_assert(why, "bounds unknown without a reason");
			cr_assert(strstr(why, "Go runtime"), "%s", why);
			unknown++;
		} else {
			cr_assert_str_neq(jstr(b, "status"), "low");
			cr_assert(!why);
		}
		cr_assert_eq(json_array_size(json_object_get(t, "errors")), 0);
	}
	/* the threads the runtime made itself run their g0 in its heap */
	cr_assert_gt(unknown, 0, "no thread with its sp in the Go heap");
	json_decref(doc);
	struct run r;
	run_text(&r, NULL);
	cr_assert(!strstr(r.out, "STACK NEARLY FULL"), "%s", r.out);
	run_free(&r);
	run_text(&r, "--verbose");
	cr_assert(strstr(r.out, "  stack: bounds unknown: a Go process"), "%s", r.out);
	run_free(&r);
}

/* ---- no C library ---------------------------------------------------------------- */

Test(go, a_static_go_program_says_once_it_has_no_c_library)
{
	need_go();
	fx_start(&fx, "fx_go_deadlock_s", NULL, 120);
	json_t *doc = run_json(NULL, NULL);
	size_t i, nolibc = 0;
	json_t *w;
	json_array_foreach(json_object_get(json_object_get(doc, "capture"), "warnings"), i, w) {
		const char *s = json_string_value(w);
		if (!strncmp(s, "no C library: ", 14))
			nolibc++;
		else
			cr_assert(!strstr(s, "glibc"), "a glibc warning: %s", s);
	}
	cr_assert_eq(nolibc, 1);
	json_decref(doc);
	struct run r;
	run_text(&r, NULL);
	cr_assert_eq(count_of(r.out, "warning: no C library: "), 1, "%s", r.out);
	/* the one line that names glibc is that warning ("no glibc ABI note") */
	for (const char *l = r.out; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		const char *eol = strchr(l, '\n');
		size_t len = eol ? (size_t)(eol - l) : strlen(l);
		if (!strncmp(l, "warning: no C library: ", 23))
			continue;
		cr_assert(!memmem(l, len, "glibc", 5), "a glibc line: %.*s", (int)len, l);
	}
	run_free(&r);
	fx_kill(&fx);
	/* a cgo program has glibc: no such warning */
	fx_start(&fx, "fx_go_cgo", NULL, 120);
	doc = run_json(NULL, NULL);
	json_array_foreach(json_object_get(json_object_get(doc, "capture"), "warnings"), i, w)
		cr_assert(strncmp(json_string_value(w), "no C library", 12));
	json_decref(doc);
}

/* ---- healthy services: exit status 0 every time -------------------------------- */

/* A stack that ends register_unknown: only where the capture had no link
 * register (aarch64, nonblocking), after the one frame it has, that of a
 * frameless function of the runtime (runtime.futex,
 * runtime/internal/syscall.Syscall6, ...) holding the caller's address
 * in the register. */
static void check_register_unknown(const char *what, json_t *doc, json_t *stack)
{
	const char *arch = jstr(json_object_get(doc, "process"), "arch");
	json_t *frames = json_object_get(stack, "frames");
	size_t n = json_array_size(frames);
	cr_assert(arch && !strcmp(arch, "aarch64"),
		  "%s: a stack ends register_unknown on %s", what, arch ? arch : "?");
	cr_assert(!strcmp(jstr(json_object_get(doc, "capture"), "mode"), "nonblocking"),
		  "%s: register_unknown in a capture that stopped the thread", what);
	cr_assert_eq(n, 1, "%s: register_unknown after %zu frames", what, n);
	const char *fn = jstr(json_array_get(frames, 0), "symbol");
	cr_assert(fn && (!strncmp(fn, "runtime.", 8) || !strncmp(fn, "runtime/", 8)),
		  "%s: register_unknown after %s, not a Go runtime function", what,
		  fn ? fn : "?");
}

static void snapshots_all_exit_0(const char *what, int count, const char *opt)
{
	for (int i = 0; i < count; i++) {
		const char *extra[] = { PATIENT, opt, NULL };
		int status;
		json_t *doc = run_json(extra, &status);
		char why[2048];
		cr_assert_eq(status, 0, "%s: snapshot %d of %d: exit status %d: %s", what,
			     i + 1, count, status, first_error(doc, why, sizeof why));
		cr_assert_eq(json_integer_value(json_object_get(
				     json_object_get(doc, "capture"), "threads_with_errors")),
			     0);
		size_t k;
		json_t *t;
		json_array_foreach(json_object_get(doc, "threads"), k, t) {
			json_t *b = json_object_get(t, "stack_bounds");
			cr_assert(json_is_null(b) || strcmp(jstr(b, "status"), "low"),
				  "%s: a stack nearly full", what);
			json_t *st = json_object_get(t, "stack");
			const char *end = st ? jstr(st, "end") : NULL;
			if (end && !strcmp(end, "register_unknown"))
				check_register_unknown(what, doc, st);
		}
		json_decref(doc);
	}
}

Test(go, a_healthy_go_service_gives_exit_status_0_every_time)
{
	need_go();
	fx_start(&fx, "fx_go_service", NULL, 120);
	snapshots_all_exit_0("fx_go_service", 20, NULL);
	/* from pc and sp alone, without stopping it */
	snapshots_all_exit_0("fx_go_service --nonblocking", 5, "--nonblocking");
}

/* A free port on 127.0.0.1 (the kernel's pick, let go at once). */
static int free_port(void)
{
	int s = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof a;
	cr_assert(s >= 0 && bind(s, (struct sockaddr *)&a, sizeof a) == 0 &&
		  getsockname(s, (struct sockaddr *)&a, &len) == 0);
	close(s);
	return ntohs(a.sin_port);
}

static bool port_answers(int port)
{
	int s = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	bool ok = s >= 0 && connect(s, (struct sockaddr *)&a, sizeof a) == 0;
	if (s >= 0)
		close(s);
	return ok;
}

Test(go, debians_node_exporter_gives_exit_status_0_every_time)
{
	const char *ne = "/usr/bin/prometheus-node-exporter";
	if (access(ne, X_OK))
		cr_skip_test("%s is not installed (tools/setup.sh installs it)", ne);
	char listen[64];
	int port = free_port();
	snprintf(listen, sizeof listen, "--web.listen-address=127.0.0.1:%d", port);
	const char *args[] = { listen, NULL };
	fx_spawn_path(&fx, ne, args);
	struct timespec t0, now;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (!port_answers(port)) {
		clock_gettime(CLOCK_MONOTONIC, &now);
		cr_assert_lt(now.tv_sec - t0.tv_sec, 60, "node exporter never listened");
		struct timespec pause = { 0, 10 * 1000 * 1000 };
		nanosleep(&pause, NULL);
	}
	int status;
	const char *patient[] = { PATIENT, NULL };
	json_t *doc = run_json(patient, &status);
	json_t *rt = go_runtime(doc);
	cr_assert(rt && jstr(rt, "version") && !strncmp(jstr(rt, "version"), "go1.", 4),
		  "node exporter not recognised as Go, with its version");
	cr_log_info("prometheus-node-exporter: %s", jstr(rt, "version"));
	char why[2048];
	cr_assert_eq(status, 0, "exit status %d: %s", status, first_error(doc, why, sizeof why));
	json_decref(doc);
	snapshots_all_exit_0("prometheus-node-exporter", 19, NULL);
}

/* ---- cgo: the C part's locks ----------------------------------------------------- */

static pid_t role_tid(const char *role)
{
	for (size_t i = 0; i < fx.nlines; i++) {
		char r[64];
		int tid;
		if (sscanf(fx.lines[i], "tid %63s %d", r, &tid) == 2 && !strcmp(r, role))
			return tid;
	}
	cr_assert_fail("fixture reported no role %s", role);
	return 0;
}

Test(go, a_cgo_programs_pthread_abba_is_found)
{
	need_go();
	fx_start(&fx, "fx_go_cgo", NULL, 120);
	const char *check[] = { "--check", NULL };
	int status;
	json_t *doc = run_json(check, &status);
	cr_assert_eq(status, 10, "--check: the deadlock");
	json_t *dl = json_object_get(doc, "deadlocks");
	cr_assert_eq(json_array_size(dl), 1);
	json_t *tids = json_object_get(json_array_get(dl, 0), "threads");
	cr_assert_eq(json_array_size(tids), 2);
	pid_t a = role_tid("c-a-then-b"), b = role_tid("c-b-then-a");
	pid_t t0 = (pid_t)json_integer_value(json_array_get(tids, 0));
	pid_t t1 = (pid_t)json_integer_value(json_array_get(tids, 1));
	cr_assert((t0 == a && t1 == b) || (t0 == b && t1 == a));
	json_t *rt = go_runtime(doc);
	cr_assert(rt && jstr(rt, "version"));
	cr_assert_str_eq(jstr(rt, "version"), fixture_go_version());
	json_decref(doc);
}
