/*
 * test_lockdecode: the lock analysis without a process.  Lock
 * words captured from the fx_lock_* fixtures (tests/data/x86_64-*.words)
 * through the decoders, and synthetic snapshots - threads stopped in
 * futex(2), target memory, symbols, frame names - through the whole
 * classification and the wait-for graph: cycles in order, orphans,
 * stalls, and the cases that must not be reported (woken waiters, released
 * locks, waits outside the consistent snapshot, unidentified futexes).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"
#include "dbs_int.h"
#include "harness.h"
#include "tin_int.h"

/* ---- captured words ------------------------------------------------------- */

/* Words of a .words file, and the owner tid its header records. */
static size_t load_words(const char *name, unsigned char *buf, size_t cap,
			 long *ret_owner)
{
	char path[4096];
	snprintf(path, sizeof path, "%s/%s", getenv("TESTDATA"), name);
	FILE *f = fopen(path, "r");
	cr_assert(f, "cannot open %s", path);
	char line[512];
	size_t n = 0;
	*ret_owner = -1;
	while (fgets(line, sizeof line, f)) {
		char *p = strstr(line, "owner tid ");
		if (line[0] == '#') {
			if (p && strncmp(p + 10, "None", 4))
				*ret_owner = strtol(p + 10, NULL, 10);
			continue;
		}
		for (char *h = line; h[0] && h[1] && h[0] != '\n' && n < cap; h += 2) {
			unsigned v;
			cr_assert(sscanf(h, "%2x", &v) == 1);
			buf[n++] = (unsigned char)v;
		}
	}
	fclose(f);
	return n;
}

static struct dbs_lock blob(const char *name, enum dbs_lock_kind kind, long *owner)
{
	struct dbs_lock l = { .kind = kind, .object_known = true };
	l.nwords = load_words(name, l.words, sizeof l.words, owner);
	cr_assert(dbs_lock_decode(arch_by_id(ARCH_X86_64), &l), "%s does not decode", name);
	return l;
}

Test(lockdecode, mutex_blobs)
{
	long owner;
	struct dbs_lock l = blob("x86_64-mutex-normal.words", DBS_LOCK_MUTEX, &owner);
	cr_assert_eq(l.nwords, 40);
	cr_assert_eq(l.u.mutex.lock, 2, "locked with waiters");
	cr_assert_eq(l.u.mutex.owner_field, owner);
	cr_assert_eq(l.u.mutex.type, 0);
	cr_assert_eq(l.u.mutex.nusers, 1);
	cr_assert(!l.u.mutex.robust && !l.u.mutex.pi && !l.u.mutex.pp && !l.u.mutex.pshared);

	l = blob("x86_64-mutex-recursive.words", DBS_LOCK_MUTEX, &owner);
	cr_assert_str_eq(dbs_mutex_type_name(l.u.mutex.type), "recursive");
	cr_assert_eq(l.u.mutex.count, 3, "locked three deep");
	cr_assert_eq(l.u.mutex.owner_field, owner);

	l = blob("x86_64-mutex-errorcheck.words", DBS_LOCK_MUTEX, &owner);
	cr_assert_str_eq(dbs_mutex_type_name(l.u.mutex.type), "errorcheck");
	cr_assert_eq(l.u.mutex.count, 0);
	cr_assert_eq(l.u.mutex.owner_field, owner);

	/* PI: the kernel's word is owner TID | FUTEX_WAITERS */
	l = blob("x86_64-mutex-pi.words", DBS_LOCK_MUTEX, &owner);
	cr_assert(l.u.mutex.pi);
	cr_assert_eq(l.u.mutex.lock & 0x3fffffff, (uint32_t)owner);
	cr_assert(l.u.mutex.lock & 0x80000000u);
	cr_assert(!l.u.mutex.owner_died);

	/* robust, owner died: the heir owns it (TID in __lock), __owner
	 * says inconsistent; the PSHARED bit glibc sets on every robust
	 * mutex is not reported as process-shared */
	l = blob("x86_64-mutex-robust-ownerdead.words", DBS_LOCK_MUTEX, &owner);
	cr_assert(l.u.mutex.robust);
	cr_assert(l.u.mutex.inconsistent);
	cr_assert(!l.u.mutex.notrecoverable);
	cr_assert(!l.u.mutex.pshared);
	cr_assert_eq(l.u.mutex.lock & 0x3fffffff, (uint32_t)owner);

	l = blob("x86_64-mutex-orphan.words", DBS_LOCK_MUTEX, &owner);
	cr_assert_eq(l.u.mutex.owner_field, owner);
}

Test(lockdecode, rwlock_cond_sem_barrier_blobs)
{
	long owner;
	struct dbs_lock l = blob("x86_64-rwlock-writer.words", DBS_LOCK_RWLOCK, &owner);
	cr_assert_eq(l.nwords, 56);
	cr_assert(l.u.rwlock.wrphase && l.u.rwlock.wrlocked, "write phase, write-locked");
	cr_assert_eq(l.u.rwlock.cur_writer, owner);
	/* in a write phase the reader count is the readers waiting */
	cr_assert_eq(l.u.rwlock.nreaders, 1);
	cr_assert_eq(l.u.rwlock.writers_futex, 3, "a writer waits on it");

	l = blob("x86_64-cond-3waiters.words", DBS_LOCK_COND, &owner);
	cr_assert_eq(l.nwords, 48);
	cr_assert_eq(l.u.cond.nwaiters, 3);
	cr_assert_eq(l.u.cond.g_refs[0], 6, "3 waiters x 2");
	cr_assert_eq(l.u.cond.wseq, 6);
	cr_assert(!l.u.cond.pshared && !l.u.cond.monotonic);

	l = blob("x86_64-sem-3waiters.words", DBS_LOCK_SEM, &owner);
	cr_assert_eq(l.u.sem.value, 0);
	cr_assert_eq(l.u.sem.nwaiters, 3);
	cr_assert(!l.u.sem.pshared);

	l = blob("x86_64-barrier-1of3.words", DBS_LOCK_BARRIER, &owner);
	cr_assert_eq(l.u.barrier.count, 3);
	cr_assert_eq(l.u.barrier.in - l.u.barrier.current_round, 1);

	/* too few words: no decoding, no garbage */
	struct dbs_lock s = { .kind = DBS_LOCK_RWLOCK, .nwords = 20 };
	cr_assert_not(dbs_lock_decode(arch_by_id(ARCH_X86_64), &s));
}

Test(lockdecode, demangle)
{
	char *d = dbs_demangle("_ZN4bank14accounts_mutexE");
	cr_assert_str_eq(d, "bank::accounts_mutex");
	free(d);
	d = dbs_demangle("_ZL13journal_mutex");
	cr_assert_str_eq(d, "journal_mutex");
	free(d);
	d = dbs_demangle("ledger_lock");
	cr_assert_str_eq(d, "ledger_lock");
	free(d);
	d = dbs_demangle("_Z\x01garbage");
	cr_assert_str_eq(d, "_Z\x01garbage", "not demangled: kept as it is");
	free(d);
}

/* ---- a synthetic world ------------------------------------------------------ */

#define MAXREG 32
static struct {
	uint64_t addr;
	unsigned char b[256];
	size_t len;
} mem[MAXREG];
static size_t nmem;

static struct {
	uint64_t start, size;
	const char *name;
} syms[8];
static size_t nsyms;

static const char *frames[16][4];	/* per thread, innermost first */
static uint64_t frame_sps[16][4];	/* their stack pointers, 0 unknown */
static size_t nframes[16];

static int fake_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	(void)ctx;
	for (size_t i = 0; i < nmem; i++)
		if (addr >= mem[i].addr && addr + len <= mem[i].addr + mem[i].len) {
			memcpy(buf, mem[i].b + (addr - mem[i].addr), len);
			return 0;
		}
	return -ENODATA;
}

static int fake_symbol(void *ctx, uint64_t addr, struct dbs_symbol *ret,
		       uint64_t *ret_size)
{
	(void)ctx;
	for (size_t i = 0; i < nsyms; i++)
		if (addr >= syms[i].start && addr < syms[i].start + syms[i].size) {
			ret->addr = addr;
			ret->name = strdup(syms[i].name);
			ret->module = strdup("/synthetic");
			ret->offset = addr - syms[i].start;
			*ret_size = syms[i].size;
			return 0;
		}
	return -ENOENT;
}

static size_t fake_frames(void *ctx, const struct dbs_snapshot *snap, size_t i,
			  const char **names, uint64_t *sps, size_t max)
{
	(void)ctx;
	(void)snap;
	size_t n = 0;
	for (; i < 16 && n < nframes[i] && n < max; n++) {
		names[n] = frames[i][n];
		sps[n] = frame_sps[i][n];
	}
	return n;
}

static void world_reset(void)
{
	memset(mem, 0, sizeof mem);
	nmem = 0;
	memset(syms, 0, sizeof syms);
	nsyms = 0;
	memset(frames, 0, sizeof frames);
	memset(frame_sps, 0, sizeof frame_sps);
	memset(nframes, 0, sizeof nframes);
}

/* A zeroed region of len bytes at addr; returns its bytes. */
static unsigned char *region(uint64_t addr, size_t len)
{
	cr_assert(nmem < MAXREG && len <= 256);
	mem[nmem].addr = addr;
	mem[nmem].len = len;
	return mem[nmem++].b;
}

static void put32(unsigned char *b, size_t off, uint32_t v)
{
	memcpy(b + off, &v, 4);
}

static void put64(unsigned char *b, size_t off, uint64_t v)
{
	memcpy(b + off, &v, 8);
}

/* A glibc 2.36 mutex at addr: __lock, __count, __owner, __nusers, __kind. */
static void mutex_at(uint64_t addr, uint32_t lock, uint32_t count, int32_t owner,
		     uint32_t nusers, uint32_t kind)
{
	unsigned char *b = region(addr, 40);
	put32(b, 0, lock);
	put32(b, 4, count);
	put32(b, 8, (uint32_t)owner);
	put32(b, 12, nusers);
	put32(b, 16, kind);
}

static struct dbs_snapshot *snap_new(size_t n)
{
	struct dbs_snapshot *s = calloc(1, sizeof *s);
	s->pid = 100;
	s->arch = arch_by_id(ARCH_X86_64);
	s->threads = calloc(n, sizeof *s->threads);
	s->nthreads = n;
	for (size_t i = 0; i < n; i++) {
		struct dbs_thread *t = &s->threads[i];
		t->tid = t->ns_tid = (pid_t)(100 + i);
		t->stopped = true;
		t->have_regs = true;
		t->proc_valid = true;
		t->proc_before_stop = true;
		t->state = 'R';
		t->syscall.nr = -1;	/* running in user space */
		t->sp = 0x7f0000000000ull + i * 0x100000;
		t->have_pthread = true;
		t->pthread = 0x7f1000000000ull + i * 0x100000;
		t->tp = t->pthread;
	}
	return s;
}

/* Thread i sleeps in futex(uaddr, op, val), interrupted by the stop. */
static void futex_wait(struct dbs_snapshot *s, size_t i, uint64_t uaddr,
		       uint32_t op, uint32_t val)
{
	struct dbs_thread *t = &s->threads[i];
	t->state = 'S';
	strcpy(t->wchan, "futex_do_wait");
	t->syscall = (struct arch_syscall){ .nr = 202, .args = { uaddr, op, val },
					    .restarting = true, .retval = -512 };
}

static void analyse(struct dbs_snapshot *s, bool with_frames)
{
	struct dbs_lock_input in = {
		.arch = arch_by_id(ARCH_X86_64),
		.tid_offset = 0x2d0,
		.sizeof_pthread = 2368,
		.read = fake_read,
		.symbol = fake_symbol,
		.frames = with_frames ? fake_frames : NULL,
	};
	cr_assert_eq(dbs_locks_analyse(s, &in), 0);
	cr_assert(s->locks);
}

static const struct dbs_lock *lock_of(const struct dbs_snapshot *s, size_t i)
{
	const struct dbs_blocked_on *b = s->threads[i].blocked_on;
	cr_assert(b, "thread %zu is not blocked", i);
	cr_assert(b->lock < s->locks->n);
	return &s->locks->v[b->lock];
}

#define M0 0x5000000000a0ull
#define M1 0x5000000001a0ull
#define M2 0x5000000002a0ull

Test(lockgraph, abba_on_heap_mutexes_is_one_cycle_in_order)
{
	world_reset();
	struct dbs_snapshot *s = snap_new(3);
	/* 101 holds M0 waits M1; 102 holds M1 waits M0; 100 runs */
	mutex_at(M0, 2, 0, 101, 1, 0);
	mutex_at(M1, 2, 0, 102, 1, 0);
	futex_wait(s, 1, M1, 0x80, 2);
	futex_wait(s, 2, M0, 0x80, 2);
	analyse(s, false);
	const struct dbs_locks *L = s->locks;
	cr_assert_eq(L->nblocked, 2);
	cr_assert_eq(L->n, 2);
	cr_assert_eq(L->v[0].addr, M0, "locks by address");
	cr_assert_eq(L->v[0].kind, DBS_LOCK_MUTEX);
	cr_assert_eq(L->v[0].owner, 101);
	cr_assert_eq(L->v[0].owner_state, DBS_OWNER_LIVE);
	cr_assert_null(L->v[0].sym.name, "heap: no symbol");
	cr_assert_eq(L->ndeadlocks, 1);
	const struct dbs_deadlock *d = &L->deadlocks[0];
	cr_assert_eq(d->n, 2);
	cr_assert_eq(d->threads[0], 101, "starts at the smallest tid");
	cr_assert_eq(L->v[d->locks[0]].addr, M1, "101 waits for M1");
	cr_assert_eq(d->threads[1], 102);
	cr_assert_eq(L->v[d->locks[1]].addr, M0);
	cr_assert(s->threads[1].blocked_on->evidence & DBS_EV_WORDS);
	cr_assert(s->threads[1].blocked_on->evidence & DBS_EV_SYSCALL);
	cr_assert_null(s->threads[0].blocked_on);
	cr_assert_eq(L->nstalls, 0);
	dbs_snapshot_free(s);
}

Test(lockgraph, frames_with_libc_debug_names)
{
	/* what eu-stack shows with libc6-dbg: internal aliases and
	 * .constprop clones must be recognised as well */
	world_reset();
	struct dbs_snapshot *s = snap_new(3);
	mutex_at(M0, 2, 0, 102, 1, 0);
	unsigned char *b = region(M1, 32);		/* a heap sem_t */
	put64(b, 0, 1ull << 32);
	futex_wait(s, 1, M0, 0x80, 2);
	futex_wait(s, 2, M1, 0x189, 0);
	frames[1][0] = "__GI___lll_lock_wait";
	frames[1][1] = "__pthread_mutex_lock@GLIBC_2.2.5";
	nframes[1] = 2;
	frames[2][0] = "__futex_abstimed_wait_common";
	frames[2][1] = "__new_sem_wait_slow64.constprop.0";
	nframes[2] = 2;
	analyse(s, true);
	cr_assert_eq(s->threads[1].blocked_on->kind, DBS_LOCK_MUTEX);
	cr_assert_str_eq(s->threads[1].blocked_on->frame, "__GI___lll_lock_wait");
	cr_assert_eq(s->threads[2].blocked_on->kind, DBS_LOCK_SEM);
	cr_assert_eq(s->threads[2].blocked_on->object, M1);
	cr_assert_eq(lock_of(s, 2)->u.sem.nwaiters, 1);
	/* without the frames the heap sem is not identified */
	analyse(s, false);
	cr_assert_eq(s->threads[2].blocked_on->kind, DBS_LOCK_FUTEX);
	dbs_snapshot_free(s);
}

Test(lockgraph, chain_to_a_running_owner_is_no_deadlock_nor_stall)
{
	/* heavy contention: 101 -> M0 -> 102 -> M1 -> 103 (running) */
	world_reset();
	struct dbs_snapshot *s = snap_new(4);
	mutex_at(M0, 2, 0, 102, 1, 0);
	mutex_at(M1, 2, 0, 103, 1, 0);
	futex_wait(s, 1, M0, 0x80, 2);
	futex_wait(s, 2, M1, 0x80, 2);
	analyse(s, false);
	cr_assert_eq(s->locks->ndeadlocks, 0);
	cr_assert_eq(s->locks->nstalls, 0, "the last owner runs: progress");
	cr_assert_eq(s->threads[1].blocked_on->owner, 102);
	dbs_snapshot_free(s);
}

Test(lockgraph, transient_states_make_no_edges)
{
	world_reset();
	struct dbs_snapshot *s = snap_new(4);
	/* 101 waits on M0, released: wake-up in flight (lock 0, owner 0);
	 * 102 waits on M1 being acquired (lock 2, owner not yet written);
	 * 103 was woken (returns 0 from futex, not restarting) */
	mutex_at(M0, 0, 0, 0, 0, 0);
	mutex_at(M1, 2, 0, 0, 1, 0);
	mutex_at(M2, 2, 0, 101, 1, 0);
	syms[nsyms++] = (typeof(syms[0])){ M0, 40, "released_lock" };
	syms[nsyms++] = (typeof(syms[0])){ M1, 40, "busy_lock" };
	futex_wait(s, 1, M0, 0x80, 2);
	futex_wait(s, 2, M1, 0x80, 2);
	futex_wait(s, 3, M2, 0x80, 2);
	s->threads[3].syscall.restarting = false;
	s->threads[3].syscall.retval = 0;
	analyse(s, false);
	cr_assert_null(s->threads[3].blocked_on, "a woken thread is not blocked");
	const struct dbs_lock *l0 = lock_of(s, 1);
	cr_assert_eq(l0->kind, DBS_LOCK_MUTEX, "symbol of mutex size + words");
	cr_assert_eq(l0->owner_state, DBS_OWNER_NONE);
	cr_assert_not_null(l0->note);
	const struct dbs_lock *l1 = lock_of(s, 2);
	cr_assert_eq(l1->kind, DBS_LOCK_MUTEX);
	cr_assert_eq(l1->owner_state, DBS_OWNER_UNKNOWN);
	cr_assert_eq(s->locks->ndeadlocks, 0);
	/* without the symbol, a locked word without owner proves nothing
	 * (a glibc-internal lll lock looks the same): futex */
	nsyms = 1;
	analyse(s, false);
	cr_assert_eq(lock_of(s, 2)->kind, DBS_LOCK_FUTEX);
	dbs_snapshot_free(s);
}

Test(lockgraph, relocking_an_owned_normal_mutex_is_a_1_cycle)
{
	world_reset();
	struct dbs_snapshot *s = snap_new(3);
	mutex_at(M0, 2, 0, 101, 1, 0);
	syms[nsyms++] = (typeof(syms[0])){ M0, 40, "config_lock" };
	futex_wait(s, 1, M0, 0x80, 2);	/* the owner itself */
	futex_wait(s, 2, M0, 0x80, 2);	/* a bystander behind it */
	analyse(s, false);
	const struct dbs_locks *L = s->locks;
	cr_assert_eq(L->ndeadlocks, 1);
	cr_assert_eq(L->deadlocks[0].n, 1);
	cr_assert_eq(L->deadlocks[0].threads[0], 101);
	cr_assert_str_eq(L->v[0].sym.name, "config_lock");
	cr_assert_eq(L->v[0].nwaiters, 2);
	cr_assert(s->threads[1].blocked_on->evidence & DBS_EV_SYMBOL);
	cr_assert_eq(L->nstalls, 0, "leads into a deadlock: not a stall");
	dbs_snapshot_free(s);
}

Test(lockgraph, orphaned_mutex_and_stall_behind_io)
{
	world_reset();
	struct dbs_snapshot *s = snap_new(4);
	/* M0's owner 999 is no thread of the process; M1's owner 103
	 * sleeps in read(2) */
	mutex_at(M0, 2, 0, 999, 1, 0);
	mutex_at(M1, 2, 0, 103, 1, 0);
	futex_wait(s, 1, M0, 0x80, 2);
	futex_wait(s, 2, M1, 0x80, 2);
	s->threads[3].syscall = (struct arch_syscall){ .nr = 0, .restarting = true,
						       .retval = -512 };
	s->threads[3].state = 'S';
	analyse(s, false);
	const struct dbs_lock *l0 = lock_of(s, 1);
	cr_assert_eq(l0->owner_state, DBS_OWNER_DEAD);
	cr_assert_eq(l0->owner, 999, "the TID it records");
	cr_assert(l0->orphaned);
	cr_assert_eq(s->locks->norphaned, 1);
	cr_assert_eq(s->locks->ndeadlocks, 0);
	cr_assert_eq(s->locks->nstalls, 1);
	const struct dbs_stall *st = &s->locks->stalls[0];
	cr_assert_eq(st->n, 2);
	cr_assert_eq(st->threads[0], 102);
	cr_assert_eq(st->threads[1], 103);
	cr_assert_eq(st->end, DBS_STALL_SYSCALL);
	cr_assert_eq(st->end_syscall, 0, "read");
	dbs_snapshot_free(s);
}

/* In another PID namespace, a thread whose namespace TID could not be
 * read may be the recorded owner: no orphan is claimed. */
Test(lockgraph, unknown_namespace_tid_makes_no_orphan)
{
	world_reset();
	struct dbs_snapshot *s = snap_new(4);
	mutex_at(M0, 2, 0, 999, 1, 0);
	futex_wait(s, 1, M0, 0x80, 2);
	s->threads[3].ns_tid = 0;	/* unknown */
	s->threads[3].tid = 5003;
	analyse(s, false);
	const struct dbs_lock *l0 = lock_of(s, 1);
	cr_assert_eq(l0->owner_state, DBS_OWNER_UNKNOWN);
	cr_assert_eq(l0->owner, 0, "999 is a TID of the other namespace: not shown");
	cr_assert_not(l0->orphaned);
	cr_assert(l0->note && strstr(l0->note, "namespace"));
	cr_assert_eq(s->locks->norphaned, 0);
	cr_assert_eq(s->locks->ndeadlocks, 0);
	dbs_snapshot_free(s);
}

Test(lockgraph, join_is_decided_by_the_tid_word)
{
	world_reset();
	struct dbs_snapshot *s = snap_new(3);
	/* 101 holds M0 and joins 102; 102 waits for M0 */
	uint64_t tidword = s->threads[2].pthread + 0x2d0;
	unsigned char *b = region(tidword, 4);
	put32(b, 0, 102);
	mutex_at(M0, 2, 0, 101, 1, 0);
	futex_wait(s, 1, tidword, 0x109, 102);
	futex_wait(s, 2, M0, 0x80, 2);
	analyse(s, false);
	const struct dbs_blocked_on *bo = s->threads[1].blocked_on;
	cr_assert_eq(bo->kind, DBS_LOCK_JOIN);
	cr_assert_eq(bo->object, s->threads[2].pthread);
	cr_assert(bo->evidence & DBS_EV_THREAD);
	cr_assert_eq(bo->owner, 102);
	cr_assert_eq(s->locks->ndeadlocks, 1);
	cr_assert_eq(s->locks->deadlocks[0].threads[0], 101);
	cr_assert_eq(s->locks->v[s->locks->deadlocks[0].locks[0]].kind, DBS_LOCK_JOIN);
	/* the same word with another value is not a join */
	world_reset();
	dbs_snapshot_free(s);
	s = snap_new(3);
	b = region(s->threads[2].pthread + 0x2d0, 4);
	put32(b, 0, 102);
	futex_wait(s, 1, s->threads[2].pthread + 0x2d0, 0x109, 7);
	analyse(s, false);
	cr_assert_neq(s->threads[1].blocked_on->kind, DBS_LOCK_JOIN);
	dbs_snapshot_free(s);
}

Test(lockgraph, pi_futex_owner_comes_from_the_kernel_word)
{
	world_reset();
	struct dbs_snapshot *s = snap_new(3);
	/* a FUTEX_LOCK_PI word that is no pthread mutex (garbage kind):
	 * still the kernel's owner TID | FUTEX_WAITERS */
	unsigned char *b = region(M0, 40);
	put32(b, 0, 0x80000000u | 102);
	put32(b, 16, 0x7777);
	mutex_at(M1, 0x80000000u | 101, 1, 101, 1, 32);	/* a real PI mutex */
	futex_wait(s, 1, M0, 0x86, 0);
	futex_wait(s, 2, M1, 0x86, 0);
	analyse(s, false);
	const struct dbs_lock *l0 = lock_of(s, 1);
	cr_assert_eq(l0->kind, DBS_LOCK_FUTEX);
	cr_assert_eq(l0->owner, 102);
	cr_assert(s->threads[1].blocked_on->evidence & DBS_EV_KERNEL);
	const struct dbs_lock *l1 = lock_of(s, 2);
	cr_assert_eq(l1->kind, DBS_LOCK_MUTEX);
	cr_assert(l1->u.mutex.pi);
	cr_assert_eq(s->locks->ndeadlocks, 1);
	dbs_snapshot_free(s);
}

Test(lockgraph, restart_syscall_needs_wchan_futex)
{
	world_reset();
	struct dbs_snapshot *s = snap_new(3);
	mutex_at(M0, 2, 0, 102, 1, 0);
	mutex_at(M1, 2, 0, 101, 1, 0);
	/* both in restart_syscall (219) of a timed wait, arguments kept */
	futex_wait(s, 1, M0, 0x189, 2);
	futex_wait(s, 2, M1, 0x189, 2);
	s->threads[1].syscall.nr = 219;
	s->threads[2].syscall.nr = 219;
	analyse(s, false);
	cr_assert(s->threads[1].blocked_on->evidence & DBS_EV_RESTART);
	cr_assert_eq(s->locks->ndeadlocks, 1);
	/* the same registers after a nanosleep: not a futex wait */
	strcpy(s->threads[1].wchan, "hrtimer_nanosleep");
	analyse(s, false);
	cr_assert_null(s->threads[1].blocked_on);
	cr_assert_eq(s->locks->ndeadlocks, 0);
	dbs_snapshot_free(s);
}

Test(lockgraph, waits_outside_the_snapshot_make_no_deadlock)
{
	world_reset();
	struct dbs_snapshot *s = snap_new(3);
	mutex_at(M0, 2, 0, 102, 1, 0);
	mutex_at(M1, 2, 0, 101, 1, 0);
	futex_wait(s, 1, M0, 0x80, 2);
	/* 102 did not stop (a straggler): /proc before the stop only */
	struct dbs_thread *t = &s->threads[2];
	t->have_regs = false;
	t->stopped = false;
	t->straggler = true;
	t->proc_sc_kind = PSVC_SC_IN_SYSCALL;
	t->proc_sc_nr = 202;
	t->proc_sc_args[0] = M1;
	t->proc_sc_args[1] = 0x80;
	t->proc_sc_args[2] = 2;
	analyse(s, false);
	cr_assert(s->threads[2].blocked_on);
	cr_assert(s->threads[2].blocked_on->evidence & DBS_EV_PROC);
	cr_assert_not(s->threads[2].blocked_on->in_graph);
	cr_assert_eq(s->locks->ndeadlocks, 0);
	/* 101 waits behind a thread that is not stopped: a stall */
	cr_assert_eq(s->locks->nstalls, 1);
	cr_assert_eq(s->locks->stalls[0].end, DBS_STALL_STOPPED);
	dbs_snapshot_free(s);
}

/* A heap cond (no symbol) with waiters in both groups. */
static void cond_at(uint64_t addr, unsigned nwaiters)
{
	unsigned char *b = region(addr, 48);
	put64(b, 0, 2 * nwaiters);
	put32(b, 16, 2 * nwaiters);	/* __g_refs[0] */
	put32(b, 20, 2);		/* __g_refs[1] */
	put32(b, 36, nwaiters << 3);	/* __wrefs */
}

Test(lockgraph, heap_cond_needs_frames)
{
	world_reset();
	struct dbs_snapshot *s = snap_new(3);
	cond_at(M0, 2);
	futex_wait(s, 1, M0 + 40, 0x189, 0);
	futex_wait(s, 2, M0 + 44, 0x189, 0);
	analyse(s, false);
	/* a condvar's words do not identify it on their own */
	cr_assert_eq(s->threads[1].blocked_on->kind, DBS_LOCK_FUTEX);
	cr_assert_eq(s->threads[1].blocked_on->object, 0);
	/* the frames do; the other group's waiter joins the same object */
	frames[1][0] = NULL;	/* an unnamed libc frame, as without libc6-dbg */
	frames[1][1] = "pthread_cond_wait@@GLIBC_2.3.2";
	nframes[1] = 2;
	analyse(s, true);
	const struct dbs_blocked_on *b = s->threads[1].blocked_on;
	cr_assert_eq(b->kind, DBS_LOCK_COND);
	cr_assert_eq(b->object, M0);
	cr_assert(b->evidence & DBS_EV_FRAMES);
	cr_assert_str_eq(b->frame, "pthread_cond_wait@@GLIBC_2.3.2");
	cr_assert_eq(s->threads[2].blocked_on->kind, DBS_LOCK_COND);
	cr_assert(s->threads[2].blocked_on->evidence & DBS_EV_SHARED);
	cr_assert_eq(s->locks->n, 1);
	cr_assert_eq(s->locks->v[0].nwaiters, 2);
	cr_assert_eq(s->locks->v[0].u.cond.nwaiters, 2);
	dbs_snapshot_free(s);
}

Test(lockgraph, globals_are_identified_by_symbol_size)
{
	world_reset();
	struct dbs_snapshot *s = snap_new(4);
	cond_at(M0, 1);
	syms[nsyms++] = (typeof(syms[0])){ M0, 48, "jobs_ready" };
	unsigned char *b = region(M1, 32);		/* sem_t: value 0, 1 waiter */
	put64(b, 0, 1ull << 32);
	syms[nsyms++] = (typeof(syms[0])){ M1, 32, "slots_sem" };
	b = region(M2, 32);				/* barrier for 3, 1 in */
	put32(b, 0, 1);
	put32(b, 8, 3);
	syms[nsyms++] = (typeof(syms[0])){ M2, 32, "start_line" };
	futex_wait(s, 1, M0 + 40, 0x189, 0);
	futex_wait(s, 2, M1, 0x189, 0);
	futex_wait(s, 3, M2 + 4, 0x80, 0);
	analyse(s, false);
	cr_assert_eq(s->threads[1].blocked_on->kind, DBS_LOCK_COND);
	cr_assert_eq(s->threads[2].blocked_on->kind, DBS_LOCK_SEM);
	cr_assert_eq(s->threads[3].blocked_on->kind, DBS_LOCK_BARRIER);
	cr_assert_eq(s->threads[3].blocked_on->object, M2);
	cr_assert_str_eq(lock_of(s, 2)->sym.name, "slots_sem");
	/* a sem-sized symbol whose words contradict a semaphore: futex */
	put64(mem[1].b, 0, 0);		/* no waiter registered */
	analyse(s, false);
	cr_assert_eq(s->threads[2].blocked_on->kind, DBS_LOCK_FUTEX);
	dbs_snapshot_free(s);
}

Test(lockgraph, internal_locks_and_unreadable_words_stay_futex)
{
	world_reset();
	struct dbs_snapshot *s = snap_new(3);
	mutex_at(M0, 2, 0, 102, 1, 0);
	futex_wait(s, 1, M0, 0x80, 2);
	frames[1][0] = "__GI___lll_lock_wait_private";	/* libc6-dbg's name */
	nframes[1] = 1;
	futex_wait(s, 2, 0x6000000000000ull, 0x80, 2);	/* not readable */
	analyse(s, true);
	cr_assert_eq(s->threads[1].blocked_on->kind, DBS_LOCK_FUTEX,
		     "malloc/stdio locks look like mutexes but are not");
	cr_assert_not_null(s->threads[1].blocked_on->note);
	const struct dbs_lock *l2 = lock_of(s, 2);
	cr_assert_eq(l2->kind, DBS_LOCK_FUTEX);
	cr_assert_not(l2->decoded);
	cr_assert_eq(l2->owner_state, DBS_OWNER_UNKNOWN, "never \"not held\"");
	cr_assert_eq(s->locks->ndeadlocks, 0);
	dbs_snapshot_free(s);
}

Test(lockgraph, elision_and_rwlock_readers_have_unknown_owners)
{
	world_reset();
	struct dbs_snapshot *s = snap_new(4);
	/* elided mutex (PTHREAD_MUTEX_ELISION_NP): owner never recorded */
	mutex_at(M0, 2, 0, 0, 0, 256);
	syms[nsyms++] = (typeof(syms[0])){ M0, 40, "elided" };
	/* rwlock held by 2 readers, a writer waits for the read phase to
	 * end (state #4: readers 2, WRLOCKED) */
	unsigned char *b = region(M1, 56);
	put32(b, 0, (2u << 3) | 2u);
	put32(b, 8, 2);
	syms[nsyms++] = (typeof(syms[0])){ M1, 56, "table_rwlock" };
	futex_wait(s, 1, M0, 0x80, 2);
	futex_wait(s, 2, M1 + 8, 0x189, 2);
	/* 103 waits for M2 held by the waiting writer 102 */
	mutex_at(M2, 2, 0, 102, 1, 0);
	futex_wait(s, 3, M2, 0x80, 2);
	analyse(s, false);
	const struct dbs_lock *l0 = lock_of(s, 1);
	cr_assert_eq(l0->owner_state, DBS_OWNER_UNKNOWN);
	cr_assert(l0->u.mutex.elision);
	cr_assert(strstr(l0->note, "elision"));
	const struct dbs_lock *l1 = lock_of(s, 2);
	cr_assert_eq(l1->kind, DBS_LOCK_RWLOCK);
	cr_assert_eq(s->threads[2].blocked_on->mode, DBS_MODE_WRITE);
	cr_assert_eq(l1->owner_state, DBS_OWNER_UNKNOWN);
	cr_assert_eq(l1->nholders, 2);
	/* 103 waits behind a writer that waits for readers glibc does not
	 * record: whether they move cannot be told, no stall is claimed */
	cr_assert_eq(s->locks->nstalls, 0);
	dbs_snapshot_free(s);
}

Test(lockgraph, pi_waiter_parked_after_edeadlk_is_attributed)
{
	world_reset();
	struct dbs_snapshot *s = snap_new(3);
	/* 101 holds PI_A and sleeps in FUTEX_LOCK_PI on PI_B; 102 holds
	 * PI_B, asked for PI_A, got EDEADLK and sleeps on a zero word of its
	 * stack with r14 = &PI_A->__kind (as this glibc does) */
	mutex_at(M0, 0x80000000u | 101, 1, 101, 1, 32);	/* PI_A */
	mutex_at(M1, 0x80000000u | 102, 1, 102, 1, 32);	/* PI_B */
	futex_wait(s, 1, M1, 0x86, 0);
	uint64_t park = s->threads[2].sp + 0x54;
	region(s->threads[2].sp, 256);		/* stack: zeros */
	futex_wait(s, 2, park, 0x189, 0);
	s->threads[2].gregs[1] = M0 + 16;	/* r14 */
	/* a zero word near sp alone is no park (a futex in static TLS is
	 * one too): the frames must show glibc's PI lock around the word */
	analyse(s, false);
	cr_assert_not(s->threads[2].blocked_on->parked, "parked without frame evidence");
	cr_assert_eq(s->threads[2].blocked_on->kind, DBS_LOCK_FUTEX);
	cr_assert_eq(s->locks->ndeadlocks, 0);
	frames[2][0] = "__futex_abstimed_wait_common";
	frames[2][1] = "__pthread_mutex_lock_full";
	frames[2][2] = "pi_second";
	frame_sps[2][0] = s->threads[2].sp;
	frame_sps[2][1] = s->threads[2].sp + 0x40;
	frame_sps[2][2] = s->threads[2].sp + 0x100;
	nframes[2] = 3;
	/* the word outside that frame (in its caller's): no park either */
	frame_sps[2][2] = s->threads[2].sp + 0x50;
	analyse(s, true);
	cr_assert_not(s->threads[2].blocked_on->parked, "the word is not in the lock's frame");
	frame_sps[2][2] = s->threads[2].sp + 0x100;
	analyse(s, true);
	const struct dbs_blocked_on *b = s->threads[2].blocked_on;
	cr_assert(b->parked);
	cr_assert_str_eq(b->frame, "__pthread_mutex_lock_full");
	cr_assert_eq(b->kind, DBS_LOCK_MUTEX);
	cr_assert_eq(b->object, M0);
	cr_assert(b->evidence & DBS_EV_REGISTERS);
	cr_assert_eq(b->owner, 101);
	cr_assert_eq(s->locks->ndeadlocks, 1);
	cr_assert_eq(s->locks->deadlocks[0].n, 2);
	cr_assert_eq(s->locks->n, 2, "the stack word is no lock of its own");

	/* the same park whose candidate's owner runs: the kernel's refusal
	 * is not visible, nothing is claimed */
	put32(mem[1].b, 0, 0x80000000u | 100);	/* PI_B: owned by 100, running */
	put32(mem[0].b, 0, 0x80000000u | 100);	/* PI_A by 100 too */
	analyse(s, true);
	b = s->threads[2].blocked_on;
	cr_assert(b->parked);
	cr_assert_eq(b->kind, DBS_LOCK_FUTEX);
	cr_assert_eq(s->locks->ndeadlocks, 0);

	/* aarch64: __futex_abstimed_wait64 calls nothing when it cannot be
	 * cancelled and allocates no frame, so three frames share sp; the
	 * word lies in the one of them that owns stack, the lock's */
	put32(mem[1].b, 0, 0x80000000u | 102);
	put32(mem[0].b, 0, 0x80000000u | 101);
	frames[2][0] = "__futex_abstimed_wait_common64";
	frames[2][1] = "__GI___futex_abstimed_wait64";
	frames[2][2] = "__pthread_mutex_lock_full";
	frames[2][3] = "pi_second";
	frame_sps[2][0] = frame_sps[2][1] = frame_sps[2][2] = s->threads[2].sp;
	frame_sps[2][3] = s->threads[2].sp + 0x100;
	nframes[2] = 4;
	analyse(s, true);
	b = s->threads[2].blocked_on;
	cr_assert(b->parked, "frames that own no stack hold no word");
	cr_assert_str_eq(b->frame, "__pthread_mutex_lock_full");
	cr_assert_eq(b->object, M0);
	cr_assert_eq(s->locks->ndeadlocks, 1);
	dbs_snapshot_free(s);
}

Test(lockgraph, two_cycles_are_sorted_and_rotated)
{
	world_reset();
	struct dbs_snapshot *s = snap_new(5);
	uint64_t m[4] = { M0, M1, M2, M0 + 0x1000 };
	/* cycle A: 104 -> m0 -> 103 -> m1 -> 104; cycle B: 102 -> m2 ->
	 * 101 -> m3 -> 102 */
	mutex_at(m[0], 2, 0, 103, 1, 0);
	mutex_at(m[1], 2, 0, 104, 1, 0);
	mutex_at(m[2], 2, 0, 101, 1, 0);
	mutex_at(m[3], 2, 0, 102, 1, 0);
	futex_wait(s, 4, m[0], 0x80, 2);
	futex_wait(s, 3, m[1], 0x80, 2);
	futex_wait(s, 2, m[2], 0x80, 2);
	futex_wait(s, 1, m[3], 0x80, 2);
	analyse(s, false);
	const struct dbs_locks *L = s->locks;
	cr_assert_eq(L->ndeadlocks, 2);
	cr_assert_eq(L->deadlocks[0].threads[0], 101);
	cr_assert_eq(L->deadlocks[0].threads[1], 102);
	cr_assert_eq(L->v[L->deadlocks[0].locks[0]].addr, m[3]);
	cr_assert_eq(L->deadlocks[1].threads[0], 103);
	cr_assert_eq(L->v[L->deadlocks[1].locks[0]].addr, m[1]);
	dbs_snapshot_free(s);
}

/* The analysed snapshot in the library's public handles, which own it. */
static tinspect_snapshot *pub(struct dbs_snapshot *s)
{
	tinspect_snapshot *t = NULL;
	cr_assert_eq(tin_snapshot_wrap(s, &t), 0);
	return t;
}

Test(lockgraph, renders_valid_json_and_text)
{
	world_reset();
	struct dbs_snapshot *s = snap_new(3);
	mutex_at(M0, 2, 0, 101, 1, 0);
	mutex_at(M1, 2, 0, 102, 1, 0);
	/* a hostile symbol name must still give valid JSON and clean text */
	syms[nsyms++] = (typeof(syms[0])){ M0, 40, "lock\xff\"\\\x01" };
	futex_wait(s, 1, M1, 0x80, 2);
	futex_wait(s, 2, M0, 0x80, 2);
	/* thread 0: in another namespace, its TID there unknown */
	s->threads[0].tid = 5000;
	s->threads[0].ns_tid = 0;
	analyse(s, false);
	tinspect_snapshot *ts = pub(s);
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	struct agent_opts o = { .json = true };
	cr_assert_eq(render_json(f, ts, &o), 0);
	fclose(f);
	cr_assert(schema_valid(buf, len), "does not validate");
	json_t *doc = json_loadb(buf, len, 0, NULL);
	cr_assert(doc);
	json_t *dl = json_array_get(json_object_get(doc, "deadlocks"), 0);
	cr_assert_eq(json_integer_value(json_array_get(json_object_get(dl, "threads"), 0)), 101);
	json_t *t0 = json_array_get(json_object_get(doc, "threads"), 0);
	cr_assert_eq(json_integer_value(json_object_get(t0, "tid")), 5000);
	cr_assert(json_is_null(json_object_get(t0, "ns_tid")), "unknown, not a guess");
	json_decref(doc);
	free(buf);
	buf = NULL;
	f = open_memstream(&buf, &len);
	cr_assert_eq(render_text(f, ts, &o), 0);
	fclose(f);
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)buf[i];
		cr_assert(c == '\n' || (c >= 0x20 && c < 0x7f), "raw 0x%02x at %zu", c, i);
	}
	cr_assert(strstr(buf, "Found one deadlock:"), "%s", buf);
	cr_assert(strstr(buf, "(tid in its namespace unknown)"), "%s", buf);
	cr_assert(strstr(buf, "waits for lock 0x5000000001a0 (mutex normal) held by thread (102)"),
		  "%s", buf);
	free(buf);
	tinspect_snapshot_free(ts);
}
