/*
 * harness.c: see harness.h.  Failures go through criterion's cr_assert so
 * a broken fixture fails the test that needed it, with a message.
 */
#include "harness.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

const char *fixture_path(const char *name)
{
	static char path[4096];
	const char *dir = getenv("FIXTURES");
	cr_assert(dir, "FIXTURES is not set (run the tests with meson test)");
	snprintf(path, sizeof path, "%s/%s", dir, name);
	return path;
}

static pid_t spawn_piped(const char *path, const char *const *args,
			 int *ret_in, int *ret_out, int *ret_err)
{
	int in[2], out[2], err[2] = { -1, -1 };
	cr_assert(pipe2(in, O_CLOEXEC) == 0 && pipe2(out, O_CLOEXEC) == 0);
	if (ret_err)
		cr_assert(pipe2(err, O_CLOEXEC) == 0);
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, in[0], 0);
	posix_spawn_file_actions_adddup2(&fa, out[1], 1);
	if (ret_err)
		posix_spawn_file_actions_adddup2(&fa, err[1], 2);
	const char *argv[64];
	size_t n = 0;
	argv[n++] = path;
	for (; args && args[n - 1] && n < 63; n++)
		argv[n] = args[n - 1];
	argv[n] = NULL;
	pid_t pid;
	int e = posix_spawn(&pid, path, &fa, NULL, (char *const *)argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	cr_assert(e == 0, "cannot start %s: %s", path, strerror(e));
	close(in[0]);
	close(out[1]);
	if (ret_err)
		close(err[1]);
	*ret_in = in[1];
	*ret_out = out[0];
	if (ret_err)
		*ret_err = err[0];
	return pid;
}

long fx_read_small(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	size_t n = fread(buf, 1, len - 1, f);
	fclose(f);
	buf[n] = '\0';
	return (long)n;
}

char *fx_read_line(struct fixture *f, int timeout_s)
{
	uint64_t deadline = now_ms() + (uint64_t)timeout_s * TEST_TIME_SCALE * 1000;
	for (;;) {
		char *nl = memchr(f->rbuf, '\n', f->rlen);
		if (nl) {
			size_t n = (size_t)(nl - f->rbuf);
			char *line = strndup(f->rbuf, n);
			memmove(f->rbuf, nl + 1, f->rlen - n - 1);
			f->rlen -= n + 1;
			return line;
		}
		uint64_t now = now_ms();
		if (now >= deadline || f->rlen == sizeof f->rbuf)
			return NULL;
		struct pollfd p = { f->out_fd, POLLIN, 0 };
		int r = poll(&p, 1, (int)(deadline - now));
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return NULL;
		ssize_t got = read(f->out_fd, f->rbuf + f->rlen, sizeof f->rbuf - f->rlen);
		if (got <= 0)
			return NULL;
		f->rlen += (size_t)got;
	}
}

void fx_spawn_path(struct fixture *f, const char *path,
		   const char *const *args)
{
	memset(f, 0, sizeof *f);
	f->pid = spawn_piped(path, args, &f->in_fd, &f->out_fd, NULL);
}

void fx_start_path(struct fixture *f, const char *path,
		   const char *const *args, int timeout_s)
{
	memset(f, 0, sizeof *f);
	f->pid = spawn_piped(path, args, &f->in_fd, &f->out_fd, NULL);
	for (;;) {
		char *line = fx_read_line(f, timeout_s);
		if (!line) {
			fx_kill(f);
			cr_assert_fail("fixture %s did not get ready", path);
		}
		cr_assert(f->nlines < FX_MAX_LINES, "fixture talks too much");
		f->lines[f->nlines++] = line;
		if (!strncmp(line, "ready", 5))
			return;
	}
}

void fx_start(struct fixture *f, const char *name, const char *const *args,
	      int timeout_s)
{
	char path[4096];
	snprintf(path, sizeof path, "%s", fixture_path(name));
	fx_start_path(f, path, args, timeout_s);
}

void fx_send(struct fixture *f, const char *line)
{
	/* one write: a fixture reading with read(2) sees the whole line */
	char buf[4096];
	int n = snprintf(buf, sizeof buf, "%s\n", line);
	cr_assert(n > 0 && (size_t)n < sizeof buf);
	cr_assert(write(f->in_fd, buf, (size_t)n) == n);
}

void fx_kill(struct fixture *f)
{
	if (f->pid > 0) {
		kill(f->pid, SIGKILL);
		waitpid(f->pid, NULL, 0);
		f->pid = 0;
	}
	if (f->in_fd > 0)
		close(f->in_fd);
	if (f->out_fd > 0)
		close(f->out_fd);
	f->in_fd = f->out_fd = 0;
	for (size_t i = 0; i < f->nlines; i++)
		free(f->lines[i]);
	f->nlines = 0;
}

const char *fx_line(const struct fixture *f, const char *prefix)
{
	size_t n = strlen(prefix);
	for (size_t i = 0; i < f->nlines; i++)
		if (!strncmp(f->lines[i], prefix, n))
			return f->lines[i];
	return NULL;
}

/* ---- running tinspect ----------------------------------------------------- */

static void drain(int fd, char **buf, size_t *len, size_t *cap)
{
	for (;;) {
		if (*len + 65536 > *cap) {
			*cap = (*cap + 65536) * 2;
			*buf = realloc(*buf, *cap);
			cr_assert(*buf);
		}
		ssize_t n = read(fd, *buf + *len, *cap - *len - 1);
		if (n <= 0)
			break;
		*len += (size_t)n;
	}
	(*buf)[*len] = '\0';
}

static int out_fd_of[2];

/* The command line that runs TINSPECT with args under wrapper (may be
 * NULL) and under TINSPECT_WRAPPER, the words of a program every tinspect
 * of the tests runs under (meson test --setup valgrind sets it): argv[0]
 * is the program to start. */
static void tinspect_argv(const char *const *wrapper, const char *const *args,
			  const char **argv, size_t cap)
{
	static char words[1024];
	const char *bin = getenv("TINSPECT");
	cr_assert(bin, "TINSPECT is not set (run the tests with meson test)");
	size_t n = 0;
	for (; wrapper && *wrapper && n < 16; wrapper++)
		argv[n++] = *wrapper;
	const char *w = getenv("TINSPECT_WRAPPER");
	if (w && *w) {
		snprintf(words, sizeof words, "%s", w);
		char *save = NULL;
		for (char *t = strtok_r(words, " ", &save); t && n < 32;
		     t = strtok_r(NULL, " ", &save))
			argv[n++] = t;
	}
	argv[n++] = bin;
	for (; args && *args && n + 1 < cap; args++)
		argv[n++] = *args;
	argv[n] = NULL;
}

/* The exit status valgrind's --error-exitcode gives under
 * TINSPECT_WRAPPER: no status of tinspect's own. */
#define WRAPPER_ERROR_STATUS 97

void fx_spawn_tinspect(struct fixture *f, const char *const *args)
{
	const char *argv[64];
	tinspect_argv(NULL, args, argv, 64);
	fx_spawn_path(f, argv[0], argv + 1);
}

void run_start_as(struct run *r, const char *const *wrapper,
		  const char *const *args)
{
	memset(r, 0, sizeof *r);
	const char *argv[64];
	tinspect_argv(wrapper, args, argv, 64);
	int in;
	/* spawn_piped puts the program first itself */
	r->pid = spawn_piped(argv[0], argv + 1, &in, &out_fd_of[0], &out_fd_of[1]);
	close(in);
	fcntl(out_fd_of[0], F_SETFL, O_NONBLOCK);
	fcntl(out_fd_of[1], F_SETFL, O_NONBLOCK);
}

void run_start(struct run *r, const char *const *args)
{
	run_start_as(r, NULL, args);
}

void run_wait(struct run *r, int timeout_s)
{
	size_t ocap = 0, ecap = 0;
	uint64_t deadline = now_ms() + (uint64_t)timeout_s * TEST_TIME_SCALE * 1000;
	int st = 0;
	for (;;) {
		drain(out_fd_of[0], &r->out, &r->out_len, &ocap);
		drain(out_fd_of[1], &r->err, &r->err_len, &ecap);
		struct rusage ru;
		pid_t w = wait4(r->pid, &st, WNOHANG, &ru);
		if (w == r->pid) {
			r->maxrss_kib = ru.ru_maxrss;
			break;
		}
		if (now_ms() > deadline) {
			r->timed_out = true;
			kill(r->pid, SIGKILL);
			waitpid(r->pid, &st, 0);
			break;
		}
		struct pollfd p[2] = { { out_fd_of[0], POLLIN, 0 },
				       { out_fd_of[1], POLLIN, 0 } };
		poll(p, 2, 20);
	}
	fcntl(out_fd_of[0], F_SETFL, 0);
	fcntl(out_fd_of[1], F_SETFL, 0);
	drain(out_fd_of[0], &r->out, &r->out_len, &ocap);
	drain(out_fd_of[1], &r->err, &r->err_len, &ecap);
	close(out_fd_of[0]);
	close(out_fd_of[1]);
	if (WIFEXITED(st)) {
		r->status = WEXITSTATUS(st);
	} else {
		r->status = -1;
		r->sig = WTERMSIG(st);
	}
	cr_assert(!wrapper_failed(r->status), "%s found errors in tinspect:\n%s",
		  getenv("TINSPECT_WRAPPER"), r->err ? r->err : "");
}

bool wrapper_failed(int status)
{
	const char *w = getenv("TINSPECT_WRAPPER");
	return w && *w && status == WRAPPER_ERROR_STATUS;
}

void run_tinspect(struct run *r, const char *const *args, int timeout_s)
{
	run_start(r, args);
	run_wait(r, timeout_s);
}

void run_free(struct run *r)
{
	free(r->out);
	free(r->err);
	r->out = r->err = NULL;
}

bool schema_valid(const char *json_text, size_t len)
{
	const char *schema = getenv("SCHEMA"), *validate = getenv("VALIDATE");
	cr_assert(schema && validate, "SCHEMA/VALIDATE are not set");
	char tmpl[] = "/tmp/tinspect-test-XXXXXX";
	int fd = mkstemp(tmpl);
	cr_assert(fd >= 0);
	cr_assert(write(fd, json_text, len) == (ssize_t)len);
	close(fd);
	char cmd[8192];
	snprintf(cmd, sizeof cmd, "/usr/bin/python3 '%s' '%s' '%s' >&2", validate,
		 schema, tmpl);
	int st = system(cmd);
	unlink(tmpl);
	return st == 0;
}

void kept_add(struct kept_lines *k, const char *line)
{
	size_t n = strlen(line);
	if (k->len + n + 2 > k->cap) {
		k->cap = (k->len + n + 2) * 2;
		k->buf = realloc(k->buf, k->cap);
		cr_assert(k->buf);
	}
	memcpy(k->buf + k->len, line, n);
	k->len += n;
	k->buf[k->len++] = '\n';
}

void kept_validate(struct kept_lines *k)
{
	cr_assert(k->len > 0, "no lines");
	cr_assert(schema_valid(k->buf, k->len), "the stream does not validate");
	k->len = 0;
}

void kept_free(struct kept_lines *k)
{
	free(k->buf);
	*k = (struct kept_lines){ 0 };
}

json_t *kept_next_line(struct fixture *f, struct kept_lines *k, int timeout_s)
{
	char *l = fx_read_line(f, timeout_s);
	if (!l)
		return NULL;
	kept_add(k, l);
	json_error_t je;
	json_t *d = json_loads(l, 0, &je);
	cr_assert(d, "not JSON: %s: %.200s", je.text, l);
	free(l);
	return d;
}

static int rm_one(const char *path, const struct stat *st, int flag,
		  struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	remove(path);
	return 0;
}

void remove_tree(const char *dir)
{
	nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* How pid ended, if it is a child of ours that has ended, for a failure's
 * message (left unreaped: its fixture's teardown collects it); "" if it
 * has not. */
static const char *child_end(pid_t pid, char *buf, size_t n)
{
	siginfo_t si = { 0 };
	if (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) || si.si_pid != pid)
		return "";
	if (si.si_code == CLD_EXITED)
		snprintf(buf, n, "; the target had exited with status %d", si.si_status);
	else
		snprintf(buf, n, "; the target had been killed by signal %d%s", si.si_status,
			 si.si_code == CLD_DUMPED ? " (core dumped)" : "");
	return buf;
}

json_t *inspect_json(pid_t pid, const char *const *extra, int *ret_status)
{
	const char *args[32];
	char pidbuf[16];
	size_t n = 0;
	args[n++] = "--json";
	for (; extra && *extra && n < 28; extra++)
		args[n++] = *extra;
	snprintf(pidbuf, sizeof pidbuf, "%d", (int)pid);
	args[n++] = pidbuf;
	args[n] = NULL;
	struct run r;
	run_tinspect(&r, args, 120);
	cr_assert(!r.timed_out, "tinspect timed out");
	cr_assert(r.status >= 0, "tinspect died of signal %d; stderr: %s", r.sig,
		  r.err ? r.err : "");
	char end[128];
	cr_assert(r.out_len > 0, "no JSON; exit %d, stderr: %s%s", r.status,
		  r.err ? r.err : "", child_end(pid, end, sizeof end));
	cr_assert(schema_valid(r.out, r.out_len), "output does not validate");
	json_error_t je;
	json_t *doc = json_loadb(r.out, r.out_len, 0, &je);
	cr_assert(doc, "JSON does not parse: %s (line %d)", je.text, je.line);
	if (ret_status)
		*ret_status = r.status;
	run_free(&r);
	return doc;
}

/* ---- /proc ------------------------------------------------------------------ */

char task_state(pid_t pid, pid_t tid)
{
	char path[64], buf[1024];
	snprintf(path, sizeof path, "/proc/%d/task/%d/stat", (int)pid, (int)tid);
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		return '?';
	ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return '?';
	buf[n] = '\0';
	char *rp = strrchr(buf, ')');
	return rp && rp[1] == ' ' ? rp[2] : '?';
}

bool any_task_stopped(pid_t pid)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
	DIR *d = opendir(path);
	if (!d)
		return false;
	bool stopped = false;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		char s = task_state(pid, (pid_t)atoi(de->d_name));
		if (s == 't' || s == 'T')
			stopped = true;
	}
	closedir(d);
	return stopped;
}

bool wait_not_stopped(pid_t pid, int ms)
{
	uint64_t deadline = now_ms() + (uint64_t)ms;
	do {
		if (!any_task_stopped(pid))
			return true;
		usleep(1000);
	} while (now_ms() < deadline);
	return false;
}

bool wait_state(pid_t pid, pid_t tid, char state, int ms)
{
	uint64_t deadline = now_ms() + (uint64_t)ms;
	do {
		if (task_state(pid, tid) == state)
			return true;
		usleep(1000);
	} while (now_ms() < deadline);
	return false;
}

json_t *thread_by_tid(json_t *doc, pid_t tid)
{
	json_t *threads = json_object_get(doc, "threads");
	size_t i;
	json_t *t;
	json_array_foreach(threads, i, t)
		if (json_integer_value(json_object_get(t, "tid")) == tid)
			return t;
	return NULL;
}

size_t unhex(const char *hex, char *out, size_t cap)
{
	size_t n = 0;
	for (; hex[0] && hex[1] && n + 1 < cap; hex += 2) {
		unsigned v;
		if (sscanf(hex, "%2x", &v) != 1)
			break;
		out[n++] = (char)v;
	}
	out[n] = '\0';
	return n;
}

/* ---- questions to a JSON document ---- */

const char *jstr(json_t *o, const char *k)
{
	return json_string_value(json_object_get(o, k));
}

uint64_t jhex(json_t *o, const char *k)
{
	const char *s = jstr(o, k);
	cr_assert(s, "no hex %s", k);
	return strtoull(s, NULL, 16);
}

json_t *lock_at(json_t *doc, uint64_t addr)
{
	size_t i;
	json_t *l;
	json_array_foreach(json_object_get(doc, "locks"), i, l)
		if (jhex(l, "addr") == addr)
			return l;
	return NULL;
}

json_t *blocked_on(json_t *doc, pid_t tid)
{
	json_t *t = thread_by_tid(doc, tid);
	cr_assert(t, "thread %d missing", (int)tid);
	return json_object_get(t, "blocked_on");
}

bool has_evidence(json_t *b, const char *what)
{
	size_t i;
	json_t *e;
	json_array_foreach(json_object_get(b, "evidence"), i, e)
		if (!strcmp(json_string_value(e), what))
			return true;
	return false;
}

/* ---- small helpers ---- */

const char *pidstr(pid_t pid)
{
	static char b[4][16];
	static int i;
	i = (i + 1) % 4;
	snprintf(b[i], sizeof b[i], "%d", (int)pid);
	return b[i];
}

int run_quiet(const char *const *argv)
{
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
	pid_t pid;
	int e = posix_spawnp(&pid, argv[0], &fa, NULL, (char *const *)argv,
			     environ);
	posix_spawn_file_actions_destroy(&fa);
	if (e)
		return -e;
	int st;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

bool have_program(const char *name)
{
	char cmd[128];
	snprintf(cmd, sizeof cmd, "command -v %s", name);
	const char *argv[] = { "sh", "-c", cmd, NULL };
	return run_quiet(argv) == 0;
}

void fx_spawn_tinspect_on(struct fixture *f, const char *const *opts, pid_t pid)
{
	const char *args[24];
	size_t n = 0;
	for (; opts && *opts && n < 20; opts++)
		args[n++] = *opts;
	args[n++] = pidstr(pid);
	args[n] = NULL;
	fx_spawn_tinspect(f, args);
}
