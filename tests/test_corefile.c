/*
 * test_corefile: the core reader (proc_service/core/core.h) on real cores
 * made during the test, of fx_core, a fixture that reports what it planted:
 * its threads with their stacks and pthread_t, start routines, 64 known
 * bytes in .bss and on the heap, a PROT_NONE hole, a range it unmapped,
 * and anonymous shared memory its coredump_filter leaves out.
 *
 * Cores come from both producers: gcore (gdb) of the live fixture, and
 * the kernel when the fixture is killed (root only: it takes
 * /proc/sys/kernel/core_pattern, see corepattern.c).  Then: the threads,
 * registers and memory read back as planted; what the core lacks fails
 * with its reason; a truncated core still has its threads; zstd, xz and
 * lz4 copies read the same as the plain one; corrupt copies never crash.
 */
#include <criterion/criterion.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zstd.h>

#include "core.h"
#include "corepattern.h"
#include "harness.h"

extern char **environ;

#define NTHREADS 3
#define STRUCT_PTHREAD_MAX 4096

struct fx_thread {
	pid_t tid;
	uint64_t pthread, lo, hi, start;
	char role[16];
};

struct facts {
	pid_t pid;
	uint64_t main_pthread;
	struct fx_thread th[NTHREADS];
	size_t nth;
	uint64_t value_addr, heap_addr;
	unsigned char value[64], heap[64];
	uint64_t hole, hole_len, guard, unmapped, unmapped_len, excluded, excluded_len;
	bool filter_ok;
};

static struct fixture fx;
static struct facts F;
static char tmpdir[256];
static struct psvc_core *opened[8];
static size_t nopened;

/* ---- set up, tear down --------------------------------------------------------- */

static void setup(void)
{
	snprintf(tmpdir, sizeof tmpdir, "/tmp/tinspect-core.XXXXXX");
	cr_assert(mkdtemp(tmpdir), "mkdtemp: %s", strerror(errno));
}

static void teardown(void)
{
	core_pattern_end();
	for (size_t i = 0; i < nopened; i++)
		psvc_core_close(opened[i]);
	nopened = 0;
	fx_kill(&fx);
	if (tmpdir[0])
		remove_tree(tmpdir);
}

TestSuite(corefile, .init = setup, .fini = teardown, .timeout = 600 * TEST_TIME_SCALE);

/* ---- the fixture ------------------------------------------------------------- */

static uint64_t hex(const char *s)
{
	return strtoull(s, NULL, 16);
}

static void unhex_into(const char *h, unsigned char *out, size_t n)
{
	char buf[128];
	cr_assert(n < sizeof buf);
	cr_assert_eq(unhex(h, buf, sizeof buf), n, "bad hex %s", h);
	memcpy(out, buf, n);
}

static void start_fixture(void)
{
	const char *args[] = { "3", NULL };
	fx_start(&fx, "fx_core", args, 30);
	memset(&F, 0, sizeof F);
	for (size_t i = 0; i < fx.nlines; i++) {
		const char *l = fx.lines[i];
		char a[64], b[160], c[64], d[64], e[64];
		if (sscanf(l, "value %63s %159s", a, b) == 2) {
			F.value_addr = hex(a);
			unhex_into(b, F.value, 64);
		} else if (sscanf(l, "heap %63s %159s", a, b) == 2) {
			F.heap_addr = hex(a);
			unhex_into(b, F.heap, 64);
		} else if (sscanf(l, "guard %63s", a) == 1) {
			F.guard = hex(a);
		} else if (sscanf(l, "hole %63s %63s", a, c) == 2) {
			F.hole = hex(a);
			F.hole_len = strtoull(c, NULL, 10);
		} else if (sscanf(l, "unmapped %63s %63s", a, c) == 2) {
			F.unmapped = hex(a);
			F.unmapped_len = strtoull(c, NULL, 10);
		} else if (sscanf(l, "excluded %63s %63s", a, c) == 2) {
			F.excluded = hex(a);
			F.excluded_len = strtoull(c, NULL, 10);
		} else if (!strcmp(l, "filter ok")) {
			F.filter_ok = true;
		} else if (sscanf(l, "main %d %63s", &F.pid, a) == 2) {
			F.main_pthread = hex(a);
		} else if (F.nth < NTHREADS &&
			   sscanf(l, "thread %63s %63s %15s %63s %63s", c, a,
				  F.th[F.nth].role, d, e) == 5) {
			struct fx_thread *t = &F.th[F.nth++];
			t->tid = atoi(c);
			t->pthread = hex(a);
			t->lo = hex(d);
			t->hi = hex(e);
		}
	}
	for (size_t i = 0; i < F.nth; i++) {
		char want[64];
		snprintf(want, sizeof want, "sym fx_core_%s ", F.th[i].role);
		const char *l = fx_line(&fx, want);
		cr_assert(l, "no %s", want);
		F.th[i].start = hex(l + strlen(want));
	}
	cr_assert_eq(F.nth, NTHREADS);
	cr_assert(F.pid == fx.pid && F.value_addr && F.heap_addr && F.hole && F.guard &&
		  F.unmapped && F.excluded, "the fixture did not report all");
	cr_assert(F.filter_ok, "the fixture could not set its coredump_filter");
}

static const struct fx_thread *fx_thread(pid_t tid)
{
	for (size_t i = 0; i < F.nth; i++)
		if (F.th[i].tid == tid)
			return &F.th[i];
	return NULL;
}

/* ---- making cores -------------------------------------------------------------- */

/* gcore of the running fixture into tmpdir/gcore.PID; the fixture runs on. */
static const char *make_gcore(void)
{
	if (!have_program("gcore"))
		cr_skip_test("no gcore (gdb is not installed)");
	static char path[400];
	char prefix[300], pid[16];
	snprintf(prefix, sizeof prefix, "%s/gcore", tmpdir);
	snprintf(pid, sizeof pid, "%d", (int)F.pid);
	const char *argv[] = { "gcore", "-o", prefix, pid, NULL };
	int rc = run_quiet(argv);
	snprintf(path, sizeof path, "%s.%d", prefix, (int)F.pid);
	struct stat st;
	cr_assert(rc == 0 && stat(path, &st) == 0, "gcore failed (%d)", rc);
	cr_assert(!any_task_stopped(F.pid), "gcore left the fixture stopped");
	return path;
}

static void need_root(void)
{
	if (geteuid() != 0)
		cr_skip_test("kernel cores need root (to point "
			     "/proc/sys/kernel/core_pattern at the test's "
			     "directory); gcore cores are tested all the same");
}

/* Make the kernel dump the fixture: sig to thread tid (tgkill), or with
 * sig 0, the fixture's own SIGSEGV at hole + 16. */
static const char *make_kernel_core(pid_t tid, int sig)
{
	need_root();
	static char path[400];
	core_pattern_begin(tmpdir);
	if (sig)
		cr_assert(syscall(SYS_tgkill, F.pid, tid, sig) == 0);
	else
		fx_send(&fx, "segv");
	int st = 0;
	pid_t r;
	for (int i = 0; i < 3000; i++) {
		r = waitpid(F.pid, &st, WNOHANG);
		if (r != 0)
			break;
		usleep(10000);
	}
	core_pattern_end();
	cr_assert(r == F.pid, "the fixture did not die");
	fx.pid = 0;	/* reaped */
	cr_assert(WIFSIGNALED(st) && WCOREDUMP(st),
		  "no core dumped (status %#x)", st);
	snprintf(path, sizeof path, "%s/core.%d", tmpdir, (int)F.pid);
	struct stat sb;
	cr_assert(stat(path, &sb) == 0, "no %s", path);
	return path;
}

static struct psvc_core *open_core(const char *path,
				   const struct psvc_core_opts *o)
{
	struct psvc_core *c = NULL;
	char why[256];
	int err = psvc_core_open(path, o, &c, why, sizeof why);
	cr_assert_eq(err, 0, "%s: %s", path, why);
	cr_assert(nopened < sizeof opened / sizeof *opened);
	opened[nopened++] = c;
	return c;
}

static void close_core(struct psvc_core *c)
{
	for (size_t i = 0; i < nopened; i++)
		if (opened[i] == c) {
			opened[i] = opened[--nopened];
			psvc_core_close(c);
			return;
		}
	cr_assert_fail("closing a core not opened");
}

/* A compressed copy by the real tool: zstd -q, xz -k, lz4 -q. */
static const char *compress(const char *plain, const char *tool)
{
	if (!have_program(tool))
		cr_skip_test("no %s", tool);
	static char out[8][400];
	static int k;
	char *o = out[k++ % 8];
	snprintf(o, 400, "%s.%s", plain, tool);
	int rc;
	if (!strcmp(tool, "zstd")) {
		const char *argv[] = { "zstd", "-q", "-f", plain, "-o", o, NULL };
		rc = run_quiet(argv);
	} else if (!strcmp(tool, "xz")) {
		char cmd[900];
		snprintf(cmd, sizeof cmd, "xz -T1 -c '%s' > '%s'", plain, o);
		const char *argv[] = { "sh", "-c", cmd, NULL };
		rc = run_quiet(argv);
	} else {
		const char *argv[] = { "lz4", "-q", "-f", plain, o, NULL };
		rc = run_quiet(argv);
	}
	cr_assert_eq(rc, 0, "%s failed", tool);
	return o;
}

/* ---- what every core of the fixture must show --------------------------------- */

static void expect_miss(const struct psvc_core *c, uint64_t addr, size_t len,
			int err, enum psvc_core_miss_kind kind,
			const char *words)
{
	unsigned char buf[256];
	struct psvc_core_miss m;
	memset(buf, 0x77, sizeof buf);
	int r = psvc_core_read(c, addr, buf, len, &m);
	char s[512];
	psvc_core_miss_str(c, &m, s, sizeof s);
	cr_assert_eq(r, err, "read %#lx: %d, expected %d (%s)",
		     (unsigned long)addr, r, err, s);
	cr_assert_eq(m.kind, kind, "read %#lx: kind %d, expected %d (%s)",
		     (unsigned long)addr, m.kind, kind, s);
	cr_assert(strstr(s, words), "\"%s\" does not say \"%s\"", s, words);
}

static void check_core(const struct psvc_core *c, bool kernel)
{
	const struct arch_desc *a = psvc_core_arch(c);
	cr_assert_eq(a, arch_host());
	cr_assert_eq(psvc_core_producer(c), kernel ? PSVC_CORE_BY_KERNEL
						   : PSVC_CORE_BY_GDB);
	/* the threads, by TID, with registers that make sense */
	cr_assert_eq(psvc_core_nthreads(c), NTHREADS + 1);
	cr_assert(psvc_core_thread_by_tid(c, F.pid), "no main thread");
	for (size_t i = 0; i < psvc_core_nthreads(c); i++) {
		const struct psvc_core_thread *t = psvc_core_thread_at(c, i);
		cr_assert(t->have_regs && t->have_tp, "thread %d", t->tid);
		uint64_t sp = arch_sp(a, t->gregs), pc = arch_pc(a, t->gregs);
		const struct psvc_core_file *pf = psvc_core_file_for_addr(c, pc);
		cr_assert(pf, "thread %d: pc %#lx in no mapped file", t->tid,
			  (unsigned long)pc);
		cr_assert(t->fpregs && t->fpregs_len >= 512,
			  "thread %d has no NT_FPREGSET", t->tid);
		struct psvc_map m;
		cr_assert_eq(psvc_core_map_lookup(c, sp, &m, NULL), 0);
		cr_assert(m.perms[0] == 'r' && m.perms[1] == 'w');
		if (t->tid == F.pid) {
			cr_assert(m.path && !strcmp(m.path, "[stack]"),
				  "main sp %#lx not in [stack]", (unsigned long)sp);
			if (!a->tls_dtv_at_tp)
				cr_assert_eq(t->tp, F.main_pthread);
			continue;
		}
		const struct fx_thread *ft = fx_thread(t->tid);
		cr_assert(ft, "thread %d is not the fixture's", t->tid);
		cr_assert(sp >= ft->lo && sp < ft->hi, "thread %d: sp %#lx out "
			  "of its stack", t->tid, (unsigned long)sp);
		if (!a->tls_dtv_at_tp)
			cr_assert_eq(t->tp, ft->pthread, "thread %d fs_base", t->tid);
		/* its struct pthread, at the top of its stack, names its
		 * start routine */
		unsigned char pt[STRUCT_PTHREAD_MAX];
		cr_assert_eq(psvc_core_read(c, ft->pthread, pt, 2048, NULL), 0);
		uint64_t self;
		memcpy(&self, pt, 8);
		if (!a->tls_dtv_at_tp)
			cr_assert_eq(self, ft->pthread, "tcb self pointer");
		cr_assert(memmem(pt, 2048, &ft->start, 8), "thread %d: %s's "
			  "address is not in its struct pthread", t->tid, ft->role);
	}
	/* the files */
	const struct psvc_core_file *exe = psvc_core_exe(c);
	char real[4096];
	cr_assert(realpath(fixture_path("fx_core"), real));
	cr_assert(exe && !strcmp(exe->path, real), "exe %s, not %s",
		  exe ? exe->path : "?", real);
	bool libc = false;
	for (size_t i = 0; i < psvc_core_nfiles(c); i++)
		libc |= !!strstr(psvc_core_file_at(c, i)->path, "/libc.so.6");
	cr_assert(libc, "NT_FILE has no libc.so.6");
	const struct psvc_core_proc *p = psvc_core_proc(c);
	cr_assert(p->have_psinfo && p->pid == F.pid && p->uid == getuid());
	cr_assert_str_eq(p->fname, "fx_core");
	uint64_t v;
	cr_assert_eq(psvc_core_auxv(c, AT_PHDR, &v), 0);
	cr_assert(psvc_core_auxv(c, AT_BASE, &v) == 0 &&
		  psvc_core_file_for_addr(c, v) &&
		  strstr(psvc_core_file_for_addr(c, v)->path, "ld-linux"),
		  "AT_BASE is not ld.so");
	/* the memory */
	unsigned char buf[64];
	cr_assert_eq(psvc_core_read(c, F.value_addr, buf, 64, NULL), 0);
	cr_assert_arr_eq(buf, F.value, 64, "the .bss value");
	cr_assert_eq(psvc_core_read(c, F.heap_addr, buf, 64, NULL), 0);
	cr_assert_arr_eq(buf, F.heap, 64, "the heap value");
	expect_miss(c, F.excluded + 4096, 64, -ENODATA, PSVC_CORE_MISS_LEFT_OUT,
		    "not in the core");
	expect_miss(c, F.unmapped + 100, 8, -EFAULT, PSVC_CORE_MISS_UNMAPPED,
		    "not mapped");
	/* a read across two mappings the core holds reads both; across into
	 * a range it lacks fails where the lack begins */
	size_t across = 0;
	for (size_t i = 1; i < psvc_core_nmaps(c); i++) {
		const struct psvc_core_map *x = psvc_core_map_at(c, i - 1);
		const struct psvc_core_map *y = psvc_core_map_at(c, i);
		if (x->map.end != y->map.start || x->in_core != x->map.end -
		    x->map.start || x->map.perms[0] != 'r')
			continue;
		unsigned char two[16], one[8];
		struct psvc_core_miss m;
		int r = psvc_core_read(c, x->map.end - 8, two, 16, &m);
		cr_assert_eq(psvc_core_read(c, x->map.end - 8, one, 8, NULL), 0);
		cr_assert(!memcmp(one, two, 8) || r != 0);
		if (r == 0 && y->in_core >= 8) {
			cr_assert_eq(psvc_core_read(c, y->map.start, one, 8, NULL), 0);
			cr_assert(!memcmp(one, two + 8, 8));
			across++;
		} else {
			cr_assert(r != 0 && (y->in_core < 8 || y->map.perms[0] != 'r') &&
				  m.addr >= y->map.start,
				  "a read across %#lx failed at %#lx", (unsigned long)
				  y->map.start, (unsigned long)m.addr);
		}
	}
	cr_assert(across > 0, "no two whole mappings side by side");
	if (kernel) {
		/* PROT_NONE: a segment without read permission (and, never
		 * touched, without bytes), unreadable as in the process */
		expect_miss(c, F.hole + 16, 8, -EFAULT, PSVC_CORE_MISS_NO_ACCESS,
			    "no read permission");
		/* written before it became PROT_NONE: the kernel wrote its
		 * bytes (p_flags without PF_R), but the process could not
		 * read them, and a live read fails there too */
		cr_assert(psvc_core_extent(c, F.guard, 4096) == 0);
		expect_miss(c, F.guard + 16, 8, -EFAULT, PSVC_CORE_MISS_NO_ACCESS,
			    "could not be read by the process");
	} else {
		/* gdb reads PROT_NONE memory through /proc/PID/mem and writes
		 * it (zeros, never touched); either way never garbage */
		int r = psvc_core_read(c, F.hole + 16, buf, 8, NULL);
		cr_assert(r == -ENODATA || r == -EFAULT ||
			  (r == 0 && !memcmp(buf, "\0\0\0\0\0\0\0\0", 8)));
	}
}

Test(corefile, gcore_threads_registers_files_and_memory)
{
	start_fixture();
	struct psvc_core *c = open_core(make_gcore(), NULL);
	check_core(c, false);
	/* gcore writes one NT_SIGINFO per thread: the stop gdb made */
	for (size_t i = 0; i < psvc_core_nthreads(c); i++) {
		const struct psvc_core_thread *t = psvc_core_thread_at(c, i);
		cr_assert(t->have_siginfo, "thread %d: no NT_SIGINFO", t->tid);
		cr_assert_eq(t->cursig, 0);
	}
	cr_assert_null(psvc_core_signalled_thread(c),
		       "a live process's gcore names no signalled thread");
}

Test(corefile, kernel_core_of_sigabrt_to_one_thread)
{
	start_fixture();
	const struct fx_thread *beta = NULL;
	for (size_t i = 0; i < F.nth; i++)
		if (!strcmp(F.th[i].role, "beta"))
			beta = &F.th[i];
	cr_assert(beta);
	struct psvc_core *c = open_core(make_kernel_core(beta->tid, SIGABRT),
					NULL);
	check_core(c, true);
	/* the kernel: the thread that took the signal first, with the one
	 * NT_SIGINFO; every thread's pr_cursig is the signal */
	const struct psvc_core_thread *s = psvc_core_signalled_thread(c);
	cr_assert(s && s->tid == beta->tid, "signalled thread %d, not %d",
		  s ? s->tid : -1, beta->tid);
	cr_assert_eq(psvc_core_thread_at(c, 0), s);
	cr_assert_eq(s->si.signo, SIGABRT);
	cr_assert_eq(s->si.code, SI_TKILL);
	cr_assert(s->si.have_sender && s->si.sender_pid == getpid());
	for (size_t i = 0; i < psvc_core_nthreads(c); i++) {
		const struct psvc_core_thread *t = psvc_core_thread_at(c, i);
		cr_assert_eq(t->cursig, SIGABRT);
		cr_assert_eq(t->have_siginfo, t == s);
	}
	cr_assert(core_pattern_restored(), "core_pattern not restored");
}

Test(corefile, kernel_core_of_a_fault_has_its_address)
{
	start_fixture();
	struct psvc_core *c = open_core(make_kernel_core(0, 0), NULL);
	check_core(c, true);
	const struct psvc_core_thread *s = psvc_core_signalled_thread(c);
	cr_assert(s && s->tid == F.pid);
	cr_assert_eq(s->si.signo, SIGSEGV);
	cr_assert_eq(s->si.code, SEGV_ACCERR);
	cr_assert(s->si.have_addr);
	cr_assert_eq(s->si.addr, F.hole + 16);
}

/* ---- truncated cores ------------------------------------------------------------ */

static void copy_file(const char *from, const char *to)
{
	char cmd[900];
	snprintf(cmd, sizeof cmd, "cp '%s' '%s'", from, to);
	const char *argv[] = { "sh", "-c", cmd, NULL };
	cr_assert_eq(run_quiet(argv), 0);
}

Test(corefile, truncated_kernel_core_keeps_its_threads)
{
	start_fixture();
	const char *full = make_kernel_core(F.th[0].tid, SIGABRT);
	struct psvc_core *c = open_core(full, NULL);
	char cut_path[400];
	snprintf(cut_path, sizeof cut_path, "%s.cut", full);
	copy_file(full, cut_path);
	uint64_t cut = (psvc_core_sizes(c)->expected / 2) & ~4095ull;
	const char *argv[] = { "truncate", "-s", NULL, cut_path, NULL };
	char size[32];
	snprintf(size, sizeof size, "%llu", (unsigned long long)cut);
	argv[2] = size;
	cr_assert_eq(run_quiet(argv), 0);
	struct psvc_core *t = open_core(cut_path, NULL);
	cr_assert_eq(psvc_core_nthreads(t), NTHREADS + 1,
		     "the notes come first: every thread is still there");
	cr_assert_eq(psvc_core_sizes(t)->file, cut);
	/* a mapping whole in the full core, cut in this one */
	size_t checked = 0;
	for (size_t i = 0; i < psvc_core_nmaps(t); i++) {
		const struct psvc_core_map *m = psvc_core_map_at(t, i);
		const struct psvc_core_map *f = psvc_core_map_at(c, i);
		cr_assert_eq(m->map.start, f->map.start);
		/* a mapping the process could not read (vsyscall, execute
		 * only) reads as such, cut or not */
		if (!m->segment || m->in_core == f->in_core || m->map.perms[0] != 'r')
			continue;
		char words[64];
		snprintf(words, sizeof words, "truncated at offset %llu",
			 (unsigned long long)cut);
		expect_miss(t, m->map.start + m->in_core, 8, -ENODATA,
			    PSVC_CORE_MISS_TRUNCATED, words);
		checked++;
	}
	cr_assert(checked > 0, "the cut left every mapping whole");
	/* what lies before the cut still reads */
	unsigned char buf[64];
	if (psvc_core_extent(t, F.value_addr, 64) == 64) {
		cr_assert_eq(psvc_core_read(t, F.value_addr, buf, 64, NULL), 0);
		cr_assert_arr_eq(buf, F.value, 64);
	}
}

Test(corefile, truncated_gcore_says_so)
{
	start_fixture();
	const char *full = make_gcore();
	char cut_path[400];
	snprintf(cut_path, sizeof cut_path, "%s.cut", full);
	copy_file(full, cut_path);
	struct stat st;
	cr_assert_eq(stat(full, &st), 0);
	cr_assert_eq(truncate(cut_path, st.st_size / 2), 0);
	/* gcore writes its notes last: cut in half, it has no thread */
	struct psvc_core *c = NULL;
	char why[256];
	int err = psvc_core_open(cut_path, NULL, &c, why, sizeof why);
	cr_assert_eq(err, -EBADMSG);
	cr_assert_null(c);
	cr_assert(strstr(why, "truncated"), "\"%s\"", why);
}

/* ---- compressed cores ---------------------------------------------------------- */

static void same_bytes(const struct psvc_core *a, const struct psvc_core *b,
		       uint64_t lo, uint64_t len, const char *what)
{
	static unsigned char x[256 << 10], y[256 << 10];
	cr_assert(len <= sizeof x);
	int ea = psvc_core_read(a, lo, x, len, NULL);
	int eb = psvc_core_read(b, lo, y, len, NULL);
	cr_assert_eq(ea, 0, "%s of the plain core unreadable", what);
	cr_assert_eq(eb, 0, "%s of the compressed core unreadable", what);
	cr_assert(!memcmp(x, y, len), "%s differs", what);
}

/* The notes and every thread's stack window and stack top: the same. */
static void same_as_plain(const struct psvc_core *p, const struct psvc_core *z)
{
	cr_assert_eq(psvc_core_nthreads(z), psvc_core_nthreads(p));
	const struct arch_desc *a = psvc_core_arch(p);
	for (size_t i = 0; i < psvc_core_nthreads(p); i++) {
		const struct psvc_core_thread *x = psvc_core_thread_at(p, i);
		const struct psvc_core_thread *y = psvc_core_thread_at(z, i);
		cr_assert(x->tid == y->tid && x->cursig == y->cursig &&
			  x->have_tp == y->have_tp && x->tp == y->tp);
		cr_assert(!memcmp(x->gregs, y->gregs, sizeof x->gregs));
		cr_assert(x->fpregs_len == y->fpregs_len &&
			  !memcmp(x->fpregs, y->fpregs, x->fpregs_len));
		cr_assert(x->xstate_len == y->xstate_len &&
			  (!x->xstate_len ||
			   !memcmp(x->xstate, y->xstate, x->xstate_len)));
		cr_assert(x->have_siginfo == y->have_siginfo &&
			  !memcmp(&x->si, &y->si, sizeof x->si));
		uint64_t sp = arch_sp(a, x->gregs);
		struct psvc_map m;
		cr_assert_eq(psvc_core_map_lookup(p, sp, &m, NULL), 0);
		uint64_t lo = sp - PSVC_CORE_STACK_BELOW, hi = sp + PSVC_CORE_STACK_BYTES;
		if (lo < m.start)
			lo = m.start;
		if (hi > m.end)
			hi = m.end;
		same_bytes(p, z, lo, hi - lo, "a stack window");
		uint64_t top = m.end - m.start < PSVC_CORE_STACK_BYTES ? m.start
			       : m.end - PSVC_CORE_STACK_BYTES;
		same_bytes(p, z, top, m.end - top, "a stack top");
	}
	const struct psvc_core_proc *pp = psvc_core_proc(p), *zp = psvc_core_proc(z);
	cr_assert(!memcmp(pp, zp, sizeof *pp));
	const uint64_t *va, *vb;
	size_t na = psvc_core_auxv_vec(p, &va), nb = psvc_core_auxv_vec(z, &vb);
	cr_assert(na == nb && na && !memcmp(va, vb, na * 16));
	cr_assert_eq(psvc_core_nfiles(p), psvc_core_nfiles(z));
	for (size_t i = 0; i < psvc_core_nfiles(p); i++) {
		const struct psvc_core_file *x = psvc_core_file_at(p, i);
		const struct psvc_core_file *y = psvc_core_file_at(z, i);
		cr_assert(x->start == y->start && x->end == y->end &&
			  x->offset == y->offset && !strcmp(x->path, y->path));
	}
	cr_assert_eq(psvc_core_nmaps(p), psvc_core_nmaps(z));
	same_bytes(p, z, F.value_addr, 64, "the .bss value");
	same_bytes(p, z, F.heap_addr, 64, "the heap value");
}

/* With no budget: only the stack windows and tops are kept, and a read
 * elsewhere says so, naming the compression and the budget. */
static void only_stacks_kept(const char *path, const char *zname)
{
	struct psvc_core_opts o = { .budget = 1 };
	struct psvc_core *z = open_core(path, &o);
	cr_assert_eq(psvc_core_nthreads(z), NTHREADS + 1);
	char words[64];
	snprintf(words, sizeof words, "not kept from the %s-compressed", zname);
	expect_miss(z, F.heap_addr, 64, -ENODATA, PSVC_CORE_MISS_NOT_KEPT, words);
	/* the middle of a 1 MiB thread stack, far from its sp and its top */
	const struct fx_thread *t = &F.th[0];
	uint64_t mid = t->lo + (t->hi - t->lo) / 2;
	expect_miss(z, mid, 8, -ENODATA, PSVC_CORE_MISS_NOT_KEPT, "budget");
	/* but its struct pthread is there */
	unsigned char pt[2048];
	cr_assert_eq(psvc_core_read(z, t->pthread, pt, sizeof pt, NULL), 0);
	cr_assert(memmem(pt, sizeof pt, &t->start, 8));
	close_core(z);
}

static void compressed_cores(const char *plain, bool kernel)
{
	struct psvc_core *p = open_core(plain, NULL);
	static const char *const tools[] = { "zstd", "xz", "lz4" };
	static const enum psvc_core_zip kinds[] = { PSVC_CORE_ZSTD, PSVC_CORE_XZ,
						    PSVC_CORE_LZ4 };
	for (size_t i = 0; i < 3; i++) {
		const char *zp = compress(plain, tools[i]);
		struct psvc_core *z = open_core(zp, NULL);
		cr_assert_eq(psvc_core_zip(z), kinds[i]);
		check_core(z, kernel);
		same_as_plain(p, z);
		cr_assert(psvc_core_sizes(z)->kept > 0);
		if (i == 0)
			only_stacks_kept(zp, tools[i]);
		close_core(z);
	}
}

Test(corefile, compressed_gcore_reads_as_the_plain_one)
{
	start_fixture();
	compressed_cores(make_gcore(), false);
}

Test(corefile, compressed_kernel_core_reads_as_the_plain_one)
{
	start_fixture();
	compressed_cores(make_kernel_core(F.th[1].tid, SIGABRT), true);
}

Test(corefile, truncated_zstd_core_keeps_what_came_before)
{
	start_fixture();
	const char *plain = make_kernel_core(F.th[0].tid, SIGABRT);
	struct psvc_core *p = open_core(plain, NULL);
	const char *zp = compress(plain, "zstd");
	struct stat st;
	cr_assert_eq(stat(zp, &st), 0);
	cr_assert_eq(truncate(zp, st.st_size / 2), 0);
	struct psvc_core *z = open_core(zp, NULL);
	cr_assert_eq(psvc_core_nthreads(z), NTHREADS + 1);
	cr_assert(psvc_core_sizes(z)->file < psvc_core_sizes(z)->expected);
	cr_assert(psvc_core_nwarnings(z) > 0, "the break is not mentioned");
	size_t broken = 0;
	cr_assert_eq(psvc_core_nmaps(z), psvc_core_nmaps(p));
	for (size_t i = 0; i < psvc_core_nmaps(z); i++) {
		const struct psvc_core_map *m = psvc_core_map_at(z, i);
		if (m->in_core == psvc_core_map_at(p, i)->in_core || m->map.perms[0] != 'r')
			continue;
		expect_miss(z, m->map.start + m->in_core, 8, -EIO,
			    PSVC_CORE_MISS_CORRUPT, "zstd stream breaks");
		broken++;
	}
	cr_assert(broken > 0, "nothing lies after the break");
}

/* The bytes this thread has read by read(2) and pread(2) so far. */
static uint64_t thread_rchar(void)
{
	char buf[1024];
	long n = fx_read_small("/proc/thread-self/io", buf, sizeof buf);
	const char *r = n > 0 ? strstr(buf, "rchar:") : NULL;
	cr_assert(r, "no /proc/thread-self/io");
	return strtoull(r + 6, NULL, 10);
}

/*
 * A compressed core with a bomb behind it: `gib` GiB of zeros, compressed
 * by cmd once and appended gib times (concatenated frames or streams are
 * one stream to the tools, and were to tinspect).  Nothing after the last
 * byte kept may be decompressed, and the compressed file is read no
 * further than the core's own part and one input chunk (1 MiB) of
 * look-ahead: the work is bounded by what the headers describe, whatever
 * follows.
 */
static void bomb_behind(const char *tool, const char *cmd, unsigned gib)
{
	start_fixture();
	const char *plain = make_kernel_core(F.th[2].tid, SIGABRT);
	struct psvc_core *p = open_core(plain, NULL);
	const char *zp = compress(plain, tool);
	struct stat st;
	cr_assert_eq(stat(zp, &st), 0);
	uint64_t core_bytes = (uint64_t)st.st_size;
	char sh[1200];
	snprintf(sh, sizeof sh, "head -c 1073741824 /dev/zero | %s > '%s/tail' && "
		 "for i in $(seq %u); do cat '%s/tail' >> '%s' || exit 1; done && "
		 "rm -f '%s/tail'", cmd, tmpdir, gib, tmpdir, zp, tmpdir);
	const char *argv[] = { "sh", "-c", sh, NULL };
	cr_assert_eq(run_quiet(argv), 0, "the bomb was not made");
	cr_assert_eq(stat(zp, &st), 0);
	uint64_t tail_bytes = (uint64_t)st.st_size - core_bytes;
	cr_assert(tail_bytes > (1u << 20), "a tail of %llu bytes proves nothing",
		  (unsigned long long)tail_bytes);

	uint64_t r0 = thread_rchar();
	struct psvc_core *z = open_core(zp, NULL);
	uint64_t rd = thread_rchar() - r0;
	cr_assert(psvc_core_sizes(z)->unzipped <= psvc_core_sizes(z)->expected,
		  "%s: %llu bytes decompressed; the headers describe %llu", tool,
		  (unsigned long long)psvc_core_sizes(z)->unzipped,
		  (unsigned long long)psvc_core_sizes(z)->expected);
	cr_assert(rd <= core_bytes + (1u << 20), "%s: %llu compressed bytes read; "
		  "the core is %llu, its tail %llu", tool, (unsigned long long)rd,
		  (unsigned long long)core_bytes, (unsigned long long)tail_bytes);
	/* and it reads as the plain one, without a word of truncation */
	check_core(z, true);
	same_as_plain(p, z);
	cr_assert_eq(psvc_core_sizes(z)->file, psvc_core_sizes(z)->expected);
	for (size_t i = 0; i < psvc_core_nwarnings(z); i++)
		cr_assert(!strstr(psvc_core_warning_at(z, i), "truncated"),
			  "%s", psvc_core_warning_at(z, i));
	close_core(z);
}

Test(corefile, zstd_core_with_50_gib_of_zeros_behind_it)
{
	bomb_behind("zstd", "zstd -q -c", 50);
}

Test(corefile, xz_core_with_16_gib_of_zeros_behind_it)
{
	bomb_behind("xz", "xz -0 -T1 -c", 16);
}

Test(corefile, lz4_core_with_a_gib_of_zeros_behind_it)
{
	bomb_behind("lz4", "lz4 -q -c", 1);
}

/* ---- corrupt cores -------------------------------------------------------------- */

/* Everything a backend would ask of a core, on whatever it gave. */
static void exercise(const struct psvc_core *c)
{
	static unsigned char buf[70000];
	const struct arch_desc *a = psvc_core_arch(c);
	for (size_t i = 0; i < psvc_core_nthreads(c); i++) {
		const struct psvc_core_thread *t = psvc_core_thread_at(c, i);
		if (t->fpregs_len)
			memcpy(buf, t->fpregs, t->fpregs_len < sizeof buf ?
			       t->fpregs_len : sizeof buf);
		uint64_t sp = arch_sp(a, t->gregs);
		struct psvc_map m, below;
		psvc_core_map_lookup(c, sp, &m, &below);
		struct psvc_core_miss miss;
		char s[512];
		if (psvc_core_read(c, sp - 128, buf, sizeof buf, &miss))
			psvc_core_miss_str(c, &miss, s, sizeof s);
		psvc_core_extent(c, sp, UINT64_MAX);
		psvc_core_read(c, t->tp, buf, 2048, NULL);
	}
	for (size_t i = 0; i < psvc_core_nmaps(c); i++) {
		const struct psvc_core_map *m = psvc_core_map_at(c, i);
		psvc_core_read(c, m->map.end - 8, buf, 16, NULL);
	}
	for (size_t i = 0; i < psvc_core_nfiles(c); i++)
		cr_assert(strlen(psvc_core_file_at(c, i)->path) < 1u << 20);
	for (size_t i = 0; i < psvc_core_nwarnings(c); i++)
		cr_assert(psvc_core_warning_at(c, i)[0]);
	psvc_core_exe(c);
	psvc_core_read(c, UINT64_MAX - 4, buf, 64, NULL);
}

static int open_bytes(const unsigned char *p, size_t n, bool zstd,
		      struct psvc_core **ret, char *why, size_t whylen)
{
	int fd = memfd_create("corrupt", MFD_CLOEXEC);
	cr_assert(fd >= 0);
	if (zstd) {
		size_t cap = ZSTD_compressBound(n);
		void *z = malloc(cap);
		size_t zn = ZSTD_compress(z, cap, p, n, 1);
		cr_assert(!ZSTD_isError(zn));
		cr_assert_eq(write(fd, z, zn), (ssize_t)zn);
		free(z);
	} else {
		cr_assert_eq(write(fd, p, n), (ssize_t)n);
	}
	return psvc_core_open_fd(fd, NULL, ret, why, whylen);
}

/*
 * Random bytes over the headers and the notes (where every count and size
 * is), many seeds: an error with a reason, or a core whose every answer
 * can be asked for; never a crash, in the ASan+UBSan build too.
 */
static void corrupt_copies(const char *path, unsigned seeds)
{
	struct psvc_core *c = open_core(path, NULL);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	cr_assert(fd >= 0);
	size_t n = (size_t)psvc_core_sizes(c)->file;
	unsigned char *orig = mmap(NULL, n, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	cr_assert(orig != MAP_FAILED);
	/* where the notes are: the kernel's after the program headers, gcore's
	 * at the end; a region from each end covers both */
	size_t head = n < (64u << 10) ? n : (64u << 10);
	unsigned char *copy = malloc(n);
	size_t nopen = 0, nerr = 0;
	for (unsigned seed = 1; seed <= seeds; seed++) {
		srandom(seed);
		memcpy(copy, orig, n);
		unsigned hits = 1 + (unsigned)random() % 64;
		for (unsigned k = 0; k < hits; k++) {
			size_t at = (size_t)random() % head;
			if (random() & 1)
				at = n - 1 - at;
			copy[at] = (unsigned char)random();
			/* and now and then a word of all ones: a huge count */
			if (!(random() % 8) && at + 4 <= n)
				memset(copy + at, 0xff, 4);
		}
		size_t len = n;
		if (!(seed % 7))
			len = (size_t)random() % n;	/* and cut */
		struct psvc_core *x = NULL;
		char why[256] = "";
		int err = open_bytes(copy, len, seed % 10 == 0, &x, why, sizeof why);
		if (err) {
			cr_assert(err < 0 && why[0], "seed %u: error %d without "
				  "a reason", seed, err);
			nerr++;
			continue;
		}
		exercise(x);
		psvc_core_close(x);
		nopen++;
	}
	cr_log_info("%s: %u corrupt copies: %zu opened, %zu refused", path,
		    seeds, nopen, nerr);
	cr_assert(nopen && nerr, "the corruption never mattered, or always");
	free(copy);
	munmap(orig, n);
}

Test(corefile, corrupt_gcore_copies_never_crash)
{
	start_fixture();
	corrupt_copies(make_gcore(), 300);
}

Test(corefile, corrupt_kernel_core_copies_never_crash)
{
	start_fixture();
	corrupt_copies(make_kernel_core(F.th[2].tid, SIGABRT), 300);
}

Test(corefile, refuses_what_is_no_core_it_reads)
{
	struct psvc_core *c = NULL;
	char why[256];
	cr_assert_eq(psvc_core_open(fixture_path("fx_core"), NULL, &c, why,
				    sizeof why), -ENOEXEC);
	cr_assert(strstr(why, "not a core file"), "%s", why);
	cr_assert_eq(psvc_core_open(fixture_path(FX_32BIT), NULL, &c, why,
				    sizeof why), -ENOEXEC);
	char fifo[300];
	snprintf(fifo, sizeof fifo, "%s/fifo", tmpdir);
	cr_assert_eq(mkfifo(fifo, 0600), 0);
	cr_assert_eq(psvc_core_open(fifo, NULL, &c, why, sizeof why), -ENXIO);
	static const unsigned char gz[] = { 0x1f, 0x8b, 8, 0, 0, 0, 0, 0 };
	cr_assert_eq(open_bytes(gz, sizeof gz, false, &c, why, sizeof why),
		     -EOPNOTSUPP);
	cr_assert(strstr(why, "gzip"), "%s", why);
	cr_assert_null(c);
}
