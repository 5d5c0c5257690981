/*
 * fuzz_locks: the whole lock analysis, dbs_locks_analyse(), over a
 * synthetic snapshot built from the input through the dbs_lock_input seam
 * (as the lockdecode unit suite does by hand): threads stopped in futex(2)
 * or restart_syscall with arbitrary arguments and states, target memory
 * regions holding arbitrary lock words and descriptors, symbols and
 * calling frames.  Then the analysed snapshot is rendered as JSON, which
 * must parse, and as text.  The analysis must neither crash nor loop nor
 * leak, whatever the target's memory and registers say.
 */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"
#include "dbs_int.h"
#include "fuzz_input.h"
#include "tin_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_THREADS 12
#define MAX_REGIONS 8
#define MAX_SYMS 4
#define MAX_FRAMES_PER 4

struct region {
	uint64_t addr;
	const uint8_t *b;	/* into the input */
	size_t len;
};

struct world {
	struct region reg[MAX_REGIONS];
	size_t nreg;
	struct {
		uint64_t start, size;
		const char *name;
	} sym[MAX_SYMS];
	size_t nsym;
	const char *frames[MAX_THREADS][MAX_FRAMES_PER];
	uint64_t sps[MAX_THREADS][MAX_FRAMES_PER];
	size_t nframes[MAX_THREADS];
};

/* Where regions, descriptors and futex words are: a few bases, so that
 * pointers taken from the input often land on something. */
static const uint64_t bases[] = {
	0x5000000000a0ull, 0x5000000001a0ull, 0x7f1000000000ull,
	0x7f1000100000ull, 0x7f10002002d0ull, 0x1000ull, 0,
	0xfffffffffffffff8ull,
};

static const char *const names[] = {
	/* frame names the analysis knows, in the forms unwinders give */
	"pthread_mutex_lock", "__pthread_mutex_lock@GLIBC_2.2.5",
	"__GI___lll_lock_wait", "__lll_lock_wait_private",
	"pthread_cond_wait@@GLIBC_2.3.2", "__pthread_cond_wait_common",
	"pthread_rwlock_rdlock", "pthread_rwlock_wrlock",
	"__new_sem_wait_slow64.constprop.0", "sem_wait", "pthread_join",
	"__pthread_clockjoin_ex", "pthread_barrier_wait", "futex_lock_pi64",
	"do_futex_wait", "___", "", "main", "__pthread_mutex_lock_full",
	"__pthread_mutex_clocklock_common",
	/* symbol names of lock objects */
	"_ZN4bank14accounts_mutexE", "journal_mutex", "_Z\x01garbage",
};

static int w_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	const struct world *w = ctx;
	for (size_t i = 0; i < w->nreg; i++) {
		const struct region *r = &w->reg[i];
		if (addr >= r->addr && len <= r->len && addr - r->addr <= r->len - len) {
			memcpy(buf, r->b + (addr - r->addr), len);
			return 0;
		}
	}
	return -ENODATA;
}

static int w_symbol(void *ctx, uint64_t addr, struct dbs_symbol *ret,
		    uint64_t *ret_size)
{
	const struct world *w = ctx;
	for (size_t i = 0; i < w->nsym; i++)
		if (addr >= w->sym[i].start && addr - w->sym[i].start < w->sym[i].size) {
			ret->addr = addr;
			ret->name = dbs_demangle(w->sym[i].name);
			ret->module = strdup("/fuzz");
			ret->offset = addr - w->sym[i].start;
			*ret_size = w->sym[i].size;
			return 0;
		}
	return -ENOENT;
}

static size_t w_frames(void *ctx, const struct dbs_snapshot *snap, size_t i,
		       const char **out, uint64_t *sps, size_t max)
{
	const struct world *w = ctx;
	(void)snap;
	size_t n = 0;
	for (; i < MAX_THREADS && n < w->nframes[i] && n < max; n++) {
		out[n] = w->frames[i][n];
		sps[n] = w->sps[i][n];
	}
	return n;
}

static uint64_t some_addr(struct fz *z)
{
	/* a base plus a small offset, or anything */
	if (fz_pick(z, 4) == 0)
		return fz_u64(z);
	return bases[fz_pick(z, sizeof bases / sizeof *bases)] + (fz_u8(z) & ~3u);
}

static void check_json(struct dbs_snapshot *d)
{
	char *buf = NULL;
	size_t len = 0;
	tinspect_snapshot *s;
	if (tin_snapshot_wrap(d, &s))
		abort();
	FILE *f = open_memstream(&buf, &len);
	struct agent_opts o = { .json = true };
	if (!f)
		abort();
	int r = render_json(f, s, &o);
	fclose(f);
	json_error_t je;
	json_t *doc = json_loadb(buf, len, 0, &je);
	if (r == 0 && !doc) {
		fprintf(stderr, "invalid JSON: %s at %d\n%.*s\n", je.text, je.position,
			(int)len, buf);
		abort();
	}
	json_decref(doc);
	free(buf);
	f = open_memstream(&buf, &len);
	if (!f)
		abort();
	render_text(f, s, &o);
	fclose(f);
	free(buf);
	tin_snapshot_unwrap(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz z = { data, size };
	static struct world w;
	memset(&w, 0, sizeof w);

	struct dbs_lock_input in = {
		.read = w_read, .symbol = w_symbol, .ctx = &w,
	};
	in.arch = arch_by_id(fz_bool(&z) ? ARCH_AARCH64 : ARCH_X86_64);
	static const uint32_t tid_offs[] = { 0, 0x2d0, 0xd0 };
	static const uint32_t sizes[] = { 0, 2368, 1792 };
	in.tid_offset = fz_pick(&z, 4) == 3 ? fz_u32(&z) : tid_offs[fz_pick(&z, 3)];
	in.sizeof_pthread = fz_pick(&z, 4) == 3 ? fz_u32(&z) : sizes[fz_pick(&z, 3)];
	if (fz_bool(&z))
		in.frames = w_frames;
	/* offsetof(struct pthread, cleanup): the cond waiter's record */
	static const uint32_t cleanup_offs[] = { 0, 0x2f8, 0x2e8 };
	in.cleanup_offset = fz_pick(&z, 4) == 3 ? fz_u32(&z) : cleanup_offs[fz_pick(&z, 3)];

	size_t nt = 1 + fz_pick(&z, MAX_THREADS);
	struct dbs_snapshot *s = calloc(1, sizeof *s);
	s->pid = 100;
	s->arch = in.arch;
	s->threads = calloc(nt, sizeof *s->threads);
	s->nthreads = nt;
	long futex_nr = in.arch->nr_futex, restart_nr = in.arch->nr_restart_syscall;
	static const char states[] = "RSDTtZXI";
	static const char *const wchans[] = { "futex_do_wait", "futex_wait_queue",
					       "rt_mutex_schedule", "do_wait", "" };
	static const uint32_t ops[] = { 0x80, 0x89, 0x86, 0x8b, 0x8d, 0x189, 0, 6 };
	static const int64_t rets[] = { -512, -516, -4, 0, -11 };
	for (size_t i = 0; i < nt; i++) {
		struct dbs_thread *t = &s->threads[i];
		t->tid = (pid_t)(100 + (fz_bool(&z) ? fz_pick(&z, 16) : i));
		t->ns_tid = fz_pick(&z, 8) ? t->tid : (pid_t)fz_u8(&z);
		t->stopped = fz_pick(&z, 4) != 0;
		t->have_regs = fz_pick(&z, 4) != 0;
		t->proc_valid = fz_bool(&z);
		t->proc_before_stop = fz_bool(&z);
		t->state = states[fz_pick(&z, sizeof states - 1)];
		snprintf(t->wchan, sizeof t->wchan, "%s", wchans[fz_pick(&z, 5)]);
		long nrs[] = { futex_nr, restart_nr, -1, (long)fz_u16(&z) };
		t->syscall.nr = nrs[fz_pick(&z, 4)];
		t->syscall.args[0] = some_addr(&z);
		t->syscall.args[1] = fz_pick(&z, 4) ? ops[fz_pick(&z, 8)] : fz_u32(&z);
		t->syscall.args[2] = fz_u32(&z);
		t->syscall.args[3] = some_addr(&z);
		t->syscall.restarting = fz_bool(&z);
		t->syscall.retval = rets[fz_pick(&z, 5)];
		t->proc_sc_kind = (enum psvc_sc_kind)fz_pick(&z, 4);
		t->proc_sc_nr = t->syscall.nr;
		memcpy(t->proc_sc_args, t->syscall.args, sizeof t->proc_sc_args);
		t->sp = some_addr(&z);
		t->pc = some_addr(&z);
		for (size_t k = 0; k < 6; k++)
			t->gregs[fz_pick(&z, ARCH_MAX_GREGS)] = some_addr(&z);
		t->have_pthread = fz_bool(&z);
		t->pthread = some_addr(&z);
		t->tp = fz_bool(&z) ? t->pthread : some_addr(&z);
		w.nframes[i] = fz_pick(&z, MAX_FRAMES_PER + 1);
		for (size_t k = 0; k < w.nframes[i]; k++) {
			size_t c = fz_pick(&z, sizeof names / sizeof *names + 1);
			w.frames[i][k] = c < sizeof names / sizeof *names ? names[c] : NULL;
			w.sps[i][k] = t->sp + fz_u8(&z) * 8u;
		}
	}
	w.nsym = fz_pick(&z, MAX_SYMS + 1);
	for (size_t i = 0; i < w.nsym; i++) {
		w.sym[i].start = some_addr(&z);
		static const uint64_t ssz[] = { 40, 56, 48, 32, 4, 8, 0 };
		w.sym[i].size = ssz[fz_pick(&z, 7)];
		w.sym[i].name = names[18 + fz_pick(&z, 3)];
	}
	/* memory last: what is left of the input fills the regions */
	w.nreg = 1 + fz_pick(&z, MAX_REGIONS);
	for (size_t i = 0; i < w.nreg; i++) {
		w.reg[i].addr = some_addr(&z);
		w.reg[i].b = fz_bytes(&z, 255, &w.reg[i].len);
	}

	for (int round = 0; round < 2; round++) {
		/* a second analysis replaces the first (the session does it
		 * on every update) */
		if (dbs_locks_analyse(s, &in) == 0)
			check_json(s);
	}
	dbs_snapshot_free(s);
	return 0;
}
