/*
 * locks.c: what each blocked thread waits on, the state of those locks, and
 * the wait-for graph (issue 4).  glibc's libthread_db has no lock API
 * (GLIBC-NOTES.md §7): everything comes from the stopped registers (the
 * futex call), /proc (wchan), the lock words read during the stop, ELF
 * symbols and - once the unwinder provides them - the calling frames' names.
 *
 *  1. dbs_locks_prefetch(), while the target is stopped: one batched read
 *     of the words around the futex every blocked thread sleeps on (and,
 *     for a thread glibc parked on its own stack, of what its callee-saved
 *     registers point to).  Nothing else is read; idle threads add nothing
 *     when they sleep on the same object.
 *  2. After the resume, from those words only (psvc_read_frozen):
 *     classify each wait (decide()), decode each lock (dbs_lock_decode()).
 *     A kind is claimed only on evidence; otherwise it stays "futex", and
 *     an owner the words do not record stays unknown.
 *  3. The wait-for graph thread -> lock -> owner thread: every thread has
 *     at most one outgoing edge, so cycles (deadlocks) and chains (stalls)
 *     are found by walking it once.
 *
 * Facts this relies on, verified on Debian 12 (glibc 2.36-9+deb12u14,
 * kernel 6.18, x86_64) with the tests/fixtures/fx_lock_* programs, reading
 * /proc/TID/syscall and wchan, and eu-stack with and without libc6-dbg:
 *
 *  waiting in                  futex word    op     val
 *  mutex_lock normal/recursive mutex+0       0x80   2          (also
 *    /errorcheck/adaptive                                       errorcheck)
 *  mutex_timedlock             mutex+0       0x189  2
 *  robust mutex                mutex+0       0x0    old __lock = owner
 *                                                   TID | 0x80000000
 *  PI mutex                    mutex+0       0x86   0 (FUTEX_LOCK_PI)
 *  PI: EDEADLK/ESRCH, parked   own stack     0x189  0 (for ever)
 *  rwlock_wrlock, writer holds rwlock+12     0x189  3
 *  rwlock_wrlock, readers hold rwlock+8      0x189  2
 *  rwlock_rdlock, writer holds rwlock+8      0x189  3
 *  cond_wait                   cond+40/+44   0x189  0
 *  sem_wait, sem_timedwait     sem+0         0x189  0
 *  barrier_wait                barrier+4     0x80   current_round
 *  pthread_join(T)             T+0x2d0       0x109  T's tid
 *  (0x2d0 = _thread_db_pthread_tid's offset; 0x189 = WAIT_BITSET|PRIVATE|
 *  CLOCK_REALTIME; 0x109 the same, shared: the kernel's CLEARTID wake.)
 *  A timed wait interrupted by a ptrace stop continues, after the resume,
 *  in restart_syscall (219) with the futex arguments still in the
 *  registers and wchan "futex_do_wait" (futex_wait_queue before 6.x).
 *  Robust owner death: the kernel sets FUTEX_OWNER_DIED and wakes one
 *  waiter, which gets EOWNERDEAD and owns the mutex with __owner
 *  0x7fffffff; the other waiters sleep on.  A non-robust PI mutex whose
 *  owner died: __lock = dead TID | FUTEX_WAITERS, the waiter is parked.
 *  At glibc's park after EDEADLK, r14 still holds &mutex->__kind.
 */
#include "dbs_int.h"
#include "glibc_versions.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* ---- glibc 2.36 constants (nptl/pthreadP.h, lowlevellock-futex.h) ------- */

#define FUTEX_WAIT 0
#define FUTEX_LOCK_PI 6
#define FUTEX_WAIT_BITSET 9
#define FUTEX_WAIT_REQUEUE_PI 11
#define FUTEX_LOCK_PI2 13
#define FUTEX_PRIVATE_FLAG 128
#define FUTEX_CLOCK_REALTIME 256
#define FUTEX_CMD_MASK (~(FUTEX_PRIVATE_FLAG | FUTEX_CLOCK_REALTIME))

#define FUTEX_WAITERS 0x80000000u
#define FUTEX_OWNER_DIED 0x40000000u
#define FUTEX_TID_MASK 0x3fffffffu

#define MUTEX_KIND_MASK 3
#define MUTEX_ROBUST 16
#define MUTEX_PI 32
#define MUTEX_PP 64
#define MUTEX_PSHARED 128
#define MUTEX_ELISION 256
#define MUTEX_NO_ELISION 512
#define MUTEX_KNOWN_BITS (MUTEX_KIND_MASK | MUTEX_ROBUST | MUTEX_PI | MUTEX_PP | \
			  MUTEX_PSHARED | MUTEX_ELISION | MUTEX_NO_ELISION)
#define MUTEX_INCONSISTENT 0x7fffffff
#define MUTEX_NOTRECOVERABLE 0x7ffffffe
#define MUTEX_CEILING_SHIFT 19

#define RW_WRPHASE 1u
#define RW_WRLOCKED 2u
#define RW_RWAITING 4u
#define RW_READER_SHIFT 3
#define RW_FUTEX_USED 2u

/* Sizes and offsets (GLIBC-NOTES.md §5; x86_64 checked with offsetof,
 * aarch64 from the generic headers: source only). */
struct layout {
	unsigned mutex_size, rwlock_size, cond_size, sem_size, barrier_size;
};

static const struct layout *layout_of(const struct arch_desc *a)
{
	static const struct layout x86_64 = { 40, 56, 48, 32, 32 };
	static const struct layout aarch64 = { 48, 56, 48, 32, 32 };
	return a && a->id == ARCH_AARCH64 ? &aarch64 : &x86_64;
}

/* How far below / above the futex word the objects it may belong to reach:
 * cond (+44) and mutex/rwlock (+56). */
#define WORDS_BELOW 48
#define WORDS_ABOVE 64
/* A thread parked by glibc sleeps on a word of its own stack, near sp. */
#define PARK_STACK_SPAN (64 * 1024)
/* Stack words above sp scanned for the parked thread's mutex. */
#define PARK_SCAN_BYTES 256

/* ---- names ------------------------------------------------------------------ */

const char *dbs_lock_kind_name(enum dbs_lock_kind k)
{
	switch (k) {
	case DBS_LOCK_FUTEX: return "futex";
	case DBS_LOCK_MUTEX: return "mutex";
	case DBS_LOCK_RWLOCK: return "rwlock";
	case DBS_LOCK_COND: return "cond";
	case DBS_LOCK_SEM: return "sem";
	case DBS_LOCK_BARRIER: return "barrier";
	case DBS_LOCK_JOIN: return "join";
	}
	return "futex";
}

const char *dbs_owner_state_name(enum dbs_owner_state s)
{
	switch (s) {
	case DBS_OWNER_NONE: return "none";
	case DBS_OWNER_LIVE: return "live";
	case DBS_OWNER_DEAD: return "dead";
	case DBS_OWNER_OUTSIDE: return "outside";
	case DBS_OWNER_UNKNOWN: return "unknown";
	}
	return "unknown";
}

const char *dbs_mutex_type_name(unsigned type)
{
	static const char *const n[4] = { "normal", "recursive", "errorcheck",
					   "adaptive" };
	return n[type & 3];
}

const char *dbs_evidence_name(unsigned bit)
{
	switch (bit) {
	case DBS_EV_SYSCALL: return "syscall";
	case DBS_EV_RESTART: return "restart_syscall";
	case DBS_EV_PROC: return "proc";
	case DBS_EV_WORDS: return "words";
	case DBS_EV_SYMBOL: return "symbol";
	case DBS_EV_FRAMES: return "frames";
	case DBS_EV_THREAD: return "thread";
	case DBS_EV_KERNEL: return "kernel_pi";
	case DBS_EV_REGISTERS: return "registers";
	case DBS_EV_SHARED: return "shared";
	case DBS_EV_CLEANUP: return "cleanup";
	case DBS_EV_PAIR: return "pair";
	}
	return NULL;
}

const char *dbs_stall_end_name(enum dbs_stall_end e)
{
	switch (e) {
	case DBS_STALL_SYSCALL: return "syscall";
	case DBS_STALL_WAIT: return "wait";
	case DBS_STALL_ORPHAN: return "orphan";
	case DBS_STALL_STOPPED: return "stopped";
	}
	return "wait";
}

/* ---- little-endian words ---------------------------------------------------- */

static uint32_t u32_at(const unsigned char *w, size_t n, size_t off)
{
	uint32_t v = 0;
	if (off + 4 <= n)
		memcpy(&v, w + off, 4);
	return v;
}

static uint64_t u64_at(const unsigned char *w, size_t n, size_t off)
{
	uint64_t v = 0;
	if (off + 8 <= n)
		memcpy(&v, w + off, 8);
	return v;
}

static bool all_zero(const unsigned char *w, size_t n, size_t off, size_t len)
{
	if (off + len > n)
		return false;
	for (size_t i = 0; i < len; i++)
		if (w[off + i])
			return false;
	return true;
}

/* qsort() that accepts nothing to sort: base may then be NULL, which
 * qsort() must not be given (UBSan: nonnull). */
static void sort(void *base, size_t n, size_t size,
		 int (*cmp)(const void *, const void *))
{
	if (n > 1)
		qsort(base, n, size, cmp);
}

/* ---- decoders: pure functions of the words ------------------------------------ */

static size_t kind_size(const struct layout *L, enum dbs_lock_kind k)
{
	switch (k) {
	case DBS_LOCK_MUTEX: return L->mutex_size;
	case DBS_LOCK_RWLOCK: return L->rwlock_size;
	case DBS_LOCK_COND: return L->cond_size;
	case DBS_LOCK_SEM: return L->sem_size;
	case DBS_LOCK_BARRIER: return L->barrier_size;
	case DBS_LOCK_JOIN: return 4;		/* the tid word */
	case DBS_LOCK_FUTEX: return 4;
	}
	return 4;
}

static void decode_mutex(const unsigned char *w, size_t n,
			 struct dbs_mutex_info *m)
{
	/* __lock 0, __count 4, __owner 8, __nusers 12, __kind 16 */
	m->lock = u32_at(w, n, 0);
	m->count = u32_at(w, n, 4);
	m->owner_field = (int32_t)u32_at(w, n, 8);
	m->nusers = u32_at(w, n, 12);
	m->kind_word = (int32_t)u32_at(w, n, 16);
	unsigned k = (unsigned)m->kind_word;
	m->type = k & MUTEX_KIND_MASK;
	m->robust = k & MUTEX_ROBUST;
	m->pi = k & MUTEX_PI;
	m->pp = k & MUTEX_PP;
	/* pthread_mutex_init sets the PSHARED bit for every robust mutex
	 * (their futex ops are shared ones): for them it says nothing about
	 * the process-shared attribute */
	m->pshared = (k & MUTEX_PSHARED) && !m->robust;
	m->elision = k & MUTEX_ELISION;
	if (m->robust || m->pi)
		m->owner_died = m->lock & FUTEX_OWNER_DIED;
	m->inconsistent = m->owner_field == MUTEX_INCONSISTENT;
	m->notrecoverable = m->owner_field == MUTEX_NOTRECOVERABLE;
	if (m->pp)
		m->ceiling = m->lock >> MUTEX_CEILING_SHIFT;
}

static void decode_rwlock(const unsigned char *w, size_t n,
			  struct dbs_rwlock_info *r)
{
	/* __readers 0, __writers 4, __wrphase_futex 8, __writers_futex 12,
	 * __cur_writer 24, __shared 28, __flags 48 */
	r->readers_word = u32_at(w, n, 0);
	r->wrphase = r->readers_word & RW_WRPHASE;
	r->wrlocked = r->readers_word & RW_WRLOCKED;
	r->rwaiting = r->readers_word & RW_RWAITING;
	r->nreaders = r->readers_word >> RW_READER_SHIFT;
	r->writers = u32_at(w, n, 4);
	r->wrphase_futex = u32_at(w, n, 8);
	r->writers_futex = u32_at(w, n, 12);
	r->cur_writer = (int32_t)u32_at(w, n, 24);
	r->shared = u32_at(w, n, 28) != 0;
	r->flags = u32_at(w, n, 48);
}

static void decode_cond(const unsigned char *w, size_t n, struct dbs_cond_info *c,
			const struct dbs_glibc_layout *g)
{
	/* 2.36 layout: __wseq 0, __g1_start 8, __g_refs 16, __g_size 24,
	 * __g1_orig_size 32, __wrefs 36, __g_signals 40 (GLIBC-NOTES.md §5);
	 * 2.41 drops __g_refs (glibc_versions.c): the offsets come from g */
	int refs = g ? g->cond_g_refs : 16, size = g ? g->cond_g_size : 24,
	    orig = g ? g->cond_g1_orig_size : 32, wrefs = g ? g->cond_wrefs : 36,
	    sig = g ? g->cond_g_signals : 40;
	c->wseq = u64_at(w, n, 0);
	c->g1_start = u64_at(w, n, 8);
	c->g_refs[0] = refs < 0 ? 0 : u32_at(w, n, (size_t)refs);
	c->g_refs[1] = refs < 0 ? 0 : u32_at(w, n, (size_t)refs + 4);
	c->g_size[0] = u32_at(w, n, (size_t)size);
	c->g_size[1] = u32_at(w, n, (size_t)size + 4);
	c->g1_orig_size = u32_at(w, n, (size_t)orig);
	c->wrefs = u32_at(w, n, (size_t)wrefs);
	c->g_signals[0] = u32_at(w, n, (size_t)sig);
	c->g_signals[1] = u32_at(w, n, (size_t)sig + 4);
	c->nwaiters = c->wrefs >> 3;
	c->pshared = c->wrefs & 1;
	c->monotonic = c->wrefs & 2;
}

static void decode_sem(const unsigned char *w, size_t n, struct dbs_sem_info *s)
{
	/* struct new_sem (64-bit atomics): u64 data (value low, waiters
	 * high), int private at 8 (0 or FUTEX_SHARED 128) */
	uint64_t d = u64_at(w, n, 0);
	s->value = (uint32_t)d;
	s->nwaiters = (uint32_t)(d >> 32);
	s->pshared = u32_at(w, n, 8) != 0;
}

static void decode_barrier(const unsigned char *w, size_t n,
			   struct dbs_barrier_info *b)
{
	/* struct pthread_barrier { in, current_round, count, shared, out } */
	b->in = u32_at(w, n, 0);
	b->current_round = u32_at(w, n, 4);
	b->count = u32_at(w, n, 8);
	b->pshared = u32_at(w, n, 12) != 0;
	b->out = u32_at(w, n, 16);
}

bool dbs_lock_decode(const struct arch_desc *a, struct dbs_lock *l)
{
	return dbs_lock_decode_glibc(a, NULL, l);
}

bool dbs_lock_decode_glibc(const struct arch_desc *a,
			   const struct dbs_glibc_layout *g, struct dbs_lock *l)
{
	const struct layout *L = layout_of(a);
	size_t need = kind_size(L, l->kind);
	if (l->kind == DBS_LOCK_MUTEX)
		need = 20;	/* through __kind; __list is only checked */
	if (l->nwords < need)
		return false;
	switch (l->kind) {
	case DBS_LOCK_MUTEX:
		decode_mutex(l->words, l->nwords, &l->u.mutex);
		break;
	case DBS_LOCK_RWLOCK:
		decode_rwlock(l->words, l->nwords, &l->u.rwlock);
		break;
	case DBS_LOCK_COND:
		decode_cond(l->words, l->nwords, &l->u.cond, g);
		break;
	case DBS_LOCK_SEM:
		decode_sem(l->words, l->nwords, &l->u.sem);
		break;
	case DBS_LOCK_BARRIER:
		decode_barrier(l->words, l->nwords, &l->u.barrier);
		break;
	case DBS_LOCK_JOIN:
		l->u.join.target = (pid_t)u32_at(l->words, l->nwords, 0);
		break;
	case DBS_LOCK_FUTEX:
		break;
	}
	return true;
}

/* ---- the wait: which futex call a stopped thread is blocked in ----------------- */

struct wait {
	bool valid;
	unsigned src;		/* DBS_EV_SYSCALL / RESTART / PROC */
	bool consistent;	/* part of the all-stop snapshot */
	long nr;
	uint64_t uaddr;
	uint32_t op, val;
	unsigned cmd;
	bool private_op;
};

static bool is_wait_cmd(unsigned cmd)
{
	return cmd == FUTEX_WAIT || cmd == FUTEX_WAIT_BITSET ||
	       cmd == FUTEX_LOCK_PI || cmd == FUTEX_LOCK_PI2 ||
	       cmd == FUTEX_WAIT_REQUEUE_PI;
}

static bool is_pi_cmd(unsigned cmd)
{
	return cmd == FUTEX_LOCK_PI || cmd == FUTEX_LOCK_PI2;
}

/* wchan names of a task asleep in a futex wait, across kernel versions:
 * futex_wait_queue_me (< 5.16), futex_wait_queue (5.16+), futex_do_wait
 * (6.17+, seen here), rt_mutex_schedule / futex_lock_pi (PI). */
static bool wchan_is_futex(const char *w)
{
	return !strncmp(w, "futex", 5) || !strncmp(w, "rt_mutex", 8);
}

static bool fill_wait(struct wait *wt, long nr, const uint64_t *args)
{
	wt->nr = nr;
	wt->uaddr = args[0];
	wt->op = (uint32_t)args[1];
	wt->val = (uint32_t)args[2];
	wt->cmd = wt->op & FUTEX_CMD_MASK;
	wt->private_op = wt->op & FUTEX_PRIVATE_FLAG;
	/* a futex word is 4-byte aligned, or the kernel refuses it */
	return is_wait_cmd(wt->cmd) && !(wt->uaddr & 3) && wt->uaddr;
}

/*
 * From the stopped registers: futex(2) interrupted by the stop
 * (restarting: it was blocked, not returning), or restart_syscall of an
 * interrupted timed futex wait - which the registers alone cannot tell
 * from another restarted call, so wchan (read before the stop) must say
 * futex.  Without registers (a thread that did not stop), /proc's view
 * from before the stop: recorded, but not part of the consistent graph.
 */
static void thread_wait(const struct arch_desc *a, const struct dbs_thread *th,
			struct wait *wt)
{
	memset(wt, 0, sizeof *wt);
	if (th->have_regs && (th->stopped || th->observed)) {
		/* observed (nonblocking): in the call now, not interrupted */
		const struct arch_syscall *sc = &th->syscall;
		if (!sc->restarting && !th->observed)
			return;
		if (sc->nr == a->nr_futex) {
			wt->src = DBS_EV_SYSCALL;
		} else if (sc->nr == a->nr_restart_syscall && th->proc_valid &&
			   th->proc_before_stop && wchan_is_futex(th->wchan)) {
			wt->src = DBS_EV_RESTART;
		} else {
			return;
		}
		wt->consistent = true;
		wt->valid = fill_wait(wt, sc->nr, sc->args);
		return;
	}
	if (!th->have_regs && th->proc_valid && th->proc_before_stop &&
	    th->proc_sc_kind == PSVC_SC_IN_SYSCALL &&
	    (th->proc_sc_nr == a->nr_futex ||
	     (th->proc_sc_nr == a->nr_restart_syscall && wchan_is_futex(th->wchan)))) {
		wt->src = DBS_EV_PROC;
		wt->valid = fill_wait(wt, th->proc_sc_nr, th->proc_sc_args);
	}
}

/* Could this be glibc's park of a PI mutex waiter after EDEADLK/ESRCH
 * (pthread_mutex_lock.c: a zero-valued wait on a compound literal of its
 * own stack)?  Only what to prefetch during the stop, and a precondition:
 * a zero word near sp is no evidence (a futex in static TLS is one too),
 * the frames decide (park_frame). */
static bool maybe_park(const struct dbs_thread *th, const struct wait *wt)
{
	return th->have_regs && wt->val == 0 &&
	       (wt->cmd == FUTEX_WAIT || wt->cmd == FUTEX_WAIT_BITSET) &&
	       wt->uaddr >= th->sp && wt->uaddr - th->sp < PARK_STACK_SPAN;
}

/* ---- prefetch, while stopped ---------------------------------------------------- */

/* General registers callee-saved by the ABI (x86_64 psABI: rbx rbp
 * r12-r15; AAPCS64: x19-x29), by name so that arch/ needs no change. */
static size_t callee_saved(const struct arch_desc *a, unsigned *idx, size_t max)
{
	static const char *const x86[] = { "rbx", "rbp", "r12", "r13", "r14", "r15" };
	static const char *const a64[] = { "x19", "x20", "x21", "x22", "x23", "x24",
					   "x25", "x26", "x27", "x28", "x29" };
	const char *const *names = a->id == ARCH_AARCH64 ? a64 : x86;
	size_t nn = a->id == ARCH_AARCH64 ? sizeof a64 / sizeof *a64
					  : sizeof x86 / sizeof *x86;
	size_t n = 0;
	for (size_t i = 0; i < nn && n < max; i++)
		for (unsigned r = 0; r < a->ngregs; r++) {
			const char *g = arch_greg_name(a, r);
			if (g && !strcmp(g, names[i])) {
				idx[n++] = r;
				break;
			}
		}
	return n;
}

/* A value that may point to user-space data (canonical, above the first
 * page, not in the top half). */
static bool pointer_like(uint64_t v)
{
	return v >= 4096 && v < (1ull << 47);
}

/* Candidate mutex starts for a parked thread's value v: the mutex itself,
 * or &mutex->__kind (what this glibc keeps in r14 at the park). */
#define NPARK_OFFS 2
static const uint64_t park_offs[NPARK_OFFS] = { 0, 16 };

static int add_range(struct psvc_range **r, size_t *n, size_t *cap,
		     uint64_t addr, uint64_t len)
{
	if (*n == *cap) {
		size_t nc = *cap ? *cap * 2 : 64;
		struct psvc_range *nr = realloc(*r, nc * sizeof *nr);
		if (!nr)
			return -ENOMEM;
		*r = nr;
		*cap = nc;
	}
	(*r)[(*n)++] = (struct psvc_range){ addr, len };
	return 0;
}

void dbs_locks_prefetch(struct dbs_session *s)
{
	struct psvc_target *t = s->t;
	const struct arch_desc *a = psvc_arch(t);
	size_t nt = psvc_ntasks(t);
	struct psvc_range *r = NULL;
	size_t nr = 0, cap = 0;
	size_t *parked = NULL, npark = 0;

	for (size_t i = 0; i < nt; i++) {
		struct psvc_task *k = psvc_task_at(t, i);
		if (!(k->flags & PSVC_TASK_HAVE_REGS))
			continue;
		/* the same decoding build_snapshot() does after the resume */
		struct dbs_thread th = { .have_regs = true, .stopped = true,
					 .observed = k->flags & PSVC_TASK_OBSERVED };
		arch_decode_syscall(a, k->gregs,
				    k->info.sc_kind == PSVC_SC_IN_SYSCALL
					    ? k->info.sc_nr : -1, &th.syscall);
		th.sp = arch_sp(a, k->gregs);
		th.proc_valid = k->info.valid;
		th.proc_before_stop = k->info.before_stop;
		memcpy(th.wchan, k->info.wchan, sizeof th.wchan);
		struct wait wt;
		thread_wait(a, &th, &wt);
		if (!wt.valid)
			continue;
		uint64_t lo = wt.uaddr > WORDS_BELOW ? wt.uaddr - WORDS_BELOW : 0;
		if (add_range(&r, &nr, &cap, lo, wt.uaddr - lo + WORDS_ABOVE))
			goto out;
		if (maybe_park(&th, &wt)) {
			size_t *np = realloc(parked, (npark + 1) * sizeof *np);
			if (!np)
				goto out;
			parked = np;
			parked[npark++] = i;
			if (add_range(&r, &nr, &cap, th.sp, PARK_SCAN_BYTES))
				goto out;
		}
	}
	psvc_prefetch(t, r, nr);

	/* Second round, for the rare parked thread only: what its
	 * callee-saved registers and the stack words just above sp point to
	 * (candidates for the mutex it was acquiring). */
	nr = 0;
	unsigned cs[16];
	size_t ncs = callee_saved(a, cs, 16);
	for (size_t p = 0; p < npark; p++) {
		struct psvc_task *k = psvc_task_at(t, parked[p]);
		uint64_t sp = arch_sp(a, k->gregs);
		uint64_t vals[16 + PARK_SCAN_BYTES / 8];
		size_t nv = 0;
		for (size_t c = 0; c < ncs; c++)
			vals[nv++] = k->gregs[cs[c]];
		uint64_t stack[PARK_SCAN_BYTES / 8];
		if (psvc_read(t, sp, stack, sizeof stack) == 0)
			for (size_t w = 0; w < PARK_SCAN_BYTES / 8; w++)
				vals[nv++] = stack[w];
		for (size_t v = 0; v < nv; v++) {
			if (!pointer_like(vals[v]) || vals[v] - sp < PARK_STACK_SPAN)
				continue;
			if (add_range(&r, &nr, &cap, vals[v] - park_offs[NPARK_OFFS - 1],
				      park_offs[NPARK_OFFS - 1] + 48))
				goto out;
		}
	}
	psvc_prefetch(t, r, nr);
out:
	free(parked);
	free(r);
}

/* ---- classification ---------------------------------------------------------- */

enum fit { FIT_NO = 0, FIT_WEAK, FIT_YES };

/* One reading of a wait: "the futex at uaddr is word X of a KIND at start". */
struct interp {
	enum dbs_lock_kind kind;
	uint64_t start;
	enum dbs_wait_mode mode;
	enum fit fit;
};

/* A sorted key -> thread index map. */
struct tidx {
	uint64_t key;
	size_t i;
};

struct ctx {
	struct dbs_snapshot *snap;
	const struct dbs_lock_input *in;
	const struct layout *L;
	struct wait *waits;		/* per thread */
	const char **fnames;		/* scratch for frame names */
	uint64_t *fsps;			/* and their stack pointers */
	struct tidx *by_nstid;		/* TID in the target's namespace */
	struct tidx *by_tid;		/* TID as tinspect sees it */
	struct tidx *by_tidword;	/* address of the thread's tid word */
	size_t nby_tidword;
	bool nstid_unknown;		/* some thread's ns_tid is not known:
					 * an unmatched TID may still be one */
};

static int cmp_tidx(const void *a, const void *b)
{
	const struct tidx *x = a, *y = b;
	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	return (x->i > y->i) - (x->i < y->i);
}

static size_t tidx_find(const struct tidx *v, size_t n, uint64_t key)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (v[mid].key < key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && v[lo].key == key ? v[lo].i : SIZE_MAX;
}

/* index of the thread whose TID in the target's namespace is tid */
static size_t thread_by_nstid(const struct ctx *c, pid_t tid)
{
	if (tid <= 0)
		return SIZE_MAX;
	return tidx_find(c->by_nstid, c->snap->nthreads, (uint64_t)tid);
}

static size_t thread_by_tid(const struct ctx *c, pid_t tid)
{
	if (tid <= 0)
		return SIZE_MAX;
	return tidx_find(c->by_tid, c->snap->nthreads, (uint64_t)tid);
}

static bool read_words(const struct ctx *c, uint64_t addr, unsigned char *buf,
		       size_t len)
{
	return c->in->read && c->in->read(c->in->ctx, addr, buf, len) == 0;
}

/* Does the thread's wait fit a mutex at start = uaddr? */
static enum fit mutex_fit(const struct ctx *c, const struct wait *wt,
			  const unsigned char *w, size_t n)
{
	if (n < c->L->mutex_size)
		return FIT_NO;
	struct dbs_mutex_info m = { 0 };
	decode_mutex(w, n, &m);
	unsigned k = (unsigned)m.kind_word;
	if ((k & ~(unsigned)MUTEX_KNOWN_BITS) || (m.pi && m.pp) || (m.robust && m.pp))
		return FIT_NO;
	if (m.nusers > (1u << 24) || m.count > (1u << 24))
		return FIT_NO;
	if (m.pi) {
		/* LOCK_PI: the kernel manages __lock = owner TID | bits; a
		 * robust PI mutex uses shared ops like every robust one */
		if (!is_pi_cmd(wt->cmd) || wt->private_op == (m.pshared || m.robust))
			return FIT_NO;
		return (m.lock & FUTEX_TID_MASK) ? FIT_YES : FIT_WEAK;
	}
	if (is_pi_cmd(wt->cmd))
		return FIT_NO;
	if (m.robust) {
		/* robust waits are always shared futex ops (2.36:
		 * PTHREAD_ROBUST_MUTEX_PSHARED = LLL_SHARED), with the old
		 * __lock value, an owner TID, as expected value */
		if (wt->private_op || !(wt->val & FUTEX_TID_MASK))
			return FIT_NO;
		int32_t o = m.owner_field;
		if (o < 0 || ((uint32_t)o > FUTEX_TID_MASK && o != MUTEX_INCONSISTENT &&
			      o != MUTEX_NOTRECOVERABLE))
			return FIT_NO;
		return FIT_YES;
	}
	if (wt->private_op == m.pshared)
		return FIT_NO;
	if (m.pp) {
		/* PP: __lock = ceiling << 19 | {0,1,2}, waiting with the
		 * ceiling and 2 (pthread_mutex_lock.c; not reproducible here:
		 * PP locks fail with EINVAL on this machine) */
		if ((wt->val & 0x7ffff) != 2 || (m.lock & 0x7fffc) != 0)
			return FIT_NO;
		return (m.lock & 3) ? FIT_YES : FIT_WEAK;
	}
	/* normal, recursive, errorcheck, adaptive: lll_lock_wait sleeps
	 * with val 2 (timedlock too); __lock in {0,1,2}; __owner is cleared
	 * before __lock on unlock, so a free lock has no owner; the robust
	 * list links of a non-robust mutex stay zero. */
	if (wt->val != 2 || m.lock > 2 || m.owner_field < 0 ||
	    (uint32_t)m.owner_field > FUTEX_TID_MASK)
		return FIT_NO;
	if (m.lock == 0 && m.owner_field != 0)
		return FIT_NO;
	if (!all_zero(w, n, 24, 16))
		return FIT_NO;
	if (m.type != 1 && m.count != 0)
		return FIT_NO;
	if (m.lock == 0)
		return FIT_WEAK;	/* released, wake-up in flight */
	/* A held mutex records its owner right after taking __lock; a
	 * locked word with no owner is either a mutex being acquired or a
	 * glibc-internal lll lock (a malloc arena with empty fastbins looks
	 * exactly like that): consistent, but no proof of a mutex. */
	if (m.owner_field == 0)
		return FIT_WEAK;
	if (m.nusers == 0)
		return FIT_NO;
	return FIT_YES;
}

/* rwlock at start, the futex at start + off (GLIBC-NOTES.md §5-6 and the
 * state table of nptl/pthread_rwlock_common.c). */
static enum fit rwlock_fit(const struct wait *wt, unsigned off,
			   const unsigned char *w, size_t n,
			   enum dbs_wait_mode *ret_mode)
{
	if (n < 56)
		return FIT_NO;
	struct dbs_rwlock_info r = { 0 };
	decode_rwlock(w, n, &r);
	uint32_t shared = u32_at(w, n, 28);
	/* 2.36 waits with __futex_abstimed_wait64: WAIT_BITSET */
	if (wt->cmd != FUTEX_WAIT_BITSET || shared > 1 || r.flags > 2 ||
	    wt->private_op == (shared != 0) || r.cur_writer < 0 ||
	    (uint32_t)r.cur_writer > FUTEX_TID_MASK)
		return FIT_NO;
	/* __pad3, __pad4, __rwelision, __pad1, __pad2 */
	if (!all_zero(w, n, 16, 8) || !all_zero(w, n, 32, 16))
		return FIT_NO;
	switch (off) {
	case 12:	/* __writers_futex: a writer waits for the primary writer */
		if (wt->val != (1 | RW_FUTEX_USED) || !r.wrlocked)
			return FIT_NO;
		*ret_mode = DBS_MODE_WRITE;
		return FIT_YES;
	case 8:		/* __wrphase_futex: a reader waits for the write phase
			 * to end (expects 1|USED), or the primary writer for
			 * the read phase to end (expects 0|USED) */
		if (wt->val == (1 | RW_FUTEX_USED)) {
			*ret_mode = DBS_MODE_READ;
			return r.wrphase ? FIT_YES : FIT_WEAK;
		}
		if (wt->val == RW_FUTEX_USED) {
			*ret_mode = DBS_MODE_WRITE;
			return r.wrlocked ? FIT_YES : FIT_WEAK;
		}
		return FIT_NO;
	case 0:		/* __readers in state #4a: readers wait for a writer */
		if (!(wt->val & RW_RWAITING))
			return FIT_NO;
		*ret_mode = DBS_MODE_READ;
		return FIT_YES;
	}
	return FIT_NO;
}

static enum fit cond_fit(const struct ctx *c, const struct wait *wt,
			 unsigned off, const unsigned char *w, size_t n)
{
	const struct dbs_glibc_layout *G = c->in->glibc;
	bool zero = G ? G->cond_wait_expects_zero : true;
	unsigned sig = G ? (unsigned)G->cond_g_signals : 40;
	if (n < 48 || wt->cmd != FUTEX_WAIT_BITSET || (zero && wt->val != 0))
		return FIT_NO;
	struct dbs_cond_info cd = { 0 };
	decode_cond(w, n, &cd, G);
	unsigned g = (off - sig) / 4;
	/* every waiter holds a __wrefs reference (<< 3) and, while it may
	 * block, a __g_refs[g] reference (+2); 2.36 waits with val 0.  2.41
	 * has no __g_refs and waits with the __g_signals value it read: a
	 * signal since then makes the words differ (a weak fit). */
	if (cd.nwaiters == 0 || cd.pshared == wt->private_op)
		return FIT_NO;
	if (zero)
		return cd.g_refs[g] < 2 ? FIT_NO : FIT_YES;
	return cd.g_signals[g] == wt->val ? FIT_YES : FIT_WEAK;
}

static enum fit sem_fit(const struct wait *wt, const unsigned char *w, size_t n)
{
	if (n < 16 || wt->cmd != FUTEX_WAIT_BITSET || wt->val != 0)
		return FIT_NO;
	struct dbs_sem_info s = { 0 };
	decode_sem(w, n, &s);
	uint32_t priv = u32_at(w, n, 8);
	/* sem_wait registers in the high half before it sleeps; private
	 * holds FUTEX_PRIVATE (0) or FUTEX_SHARED (128) */
	if (s.nwaiters == 0 || s.value > 0x7fffffffu || (priv != 0 && priv != 128) ||
	    (priv == 0) != wt->private_op)
		return FIT_NO;
	return FIT_YES;
}

static enum fit barrier_fit(const struct wait *wt, const unsigned char *w,
			    size_t n)
{
	if (n < 20 || wt->cmd != FUTEX_WAIT)
		return FIT_NO;
	struct dbs_barrier_info b = { 0 };
	decode_barrier(w, n, &b);
	uint32_t shared = u32_at(w, n, 12);
	/* pthread_barrier_wait.c: a waiter of an unfinished round sleeps on
	 * current_round with its value; in - current_round < count */
	if (b.count == 0 || b.current_round % b.count || b.in <= b.current_round ||
	    b.in - b.current_round >= b.count || b.out > b.in ||
	    (shared != 0 && shared != 128) || (shared == 0) != wt->private_op ||
	    wt->val != b.current_round)
		return FIT_NO;
	return FIT_YES;
}

/* One reading: the futex is word off of a kind at uaddr - off. */
static void try_interp(const struct ctx *c, const struct wait *wt,
		       enum dbs_lock_kind kind, unsigned off, struct interp *out,
		       size_t *n, size_t max)
{
	if (*n >= max || wt->uaddr < off)
		return;
	struct interp it = { kind, wt->uaddr - off, DBS_MODE_NONE, FIT_NO };
	unsigned char w[64];
	size_t sz = kind_size(c->L, kind);
	/* no verified layout for the target's glibc: no reading fits */
	if (!c->in->glibc_unverified && read_words(c, it.start, w, sz)) {
		switch (kind) {
		case DBS_LOCK_MUTEX:
			it.fit = mutex_fit(c, wt, w, sz);
			break;
		case DBS_LOCK_RWLOCK:
			it.fit = rwlock_fit(wt, off, w, sz, &it.mode);
			break;
		case DBS_LOCK_COND:
			it.fit = cond_fit(c, wt, off, w, sz);
			break;
		case DBS_LOCK_SEM:
			it.fit = sem_fit(wt, w, sz);
			break;
		case DBS_LOCK_BARRIER:
			it.fit = barrier_fit(wt, w, sz);
			break;
		case DBS_LOCK_JOIN:
		case DBS_LOCK_FUTEX:
			break;
		}
	}
	out[(*n)++] = it;
}

/* Every reading of the wait the layouts allow, with how well the words
 * fit it.  A FUTEX_LOCK_PI word can only be a PI mutex (or unknown). */
static size_t interpretations(const struct ctx *c, const struct wait *wt,
			      struct interp *out, size_t max)
{
	size_t n = 0;
	try_interp(c, wt, DBS_LOCK_MUTEX, 0, out, &n, max);
	if (is_pi_cmd(wt->cmd))
		return n;
	try_interp(c, wt, DBS_LOCK_RWLOCK, 0, out, &n, max);
	try_interp(c, wt, DBS_LOCK_RWLOCK, 8, out, &n, max);
	try_interp(c, wt, DBS_LOCK_RWLOCK, 12, out, &n, max);
	unsigned sig = c->in->glibc ? (unsigned)c->in->glibc->cond_g_signals : 40;
	try_interp(c, wt, DBS_LOCK_COND, sig, out, &n, max);
	try_interp(c, wt, DBS_LOCK_COND, sig + 4, out, &n, max);
	try_interp(c, wt, DBS_LOCK_SEM, 0, out, &n, max);
	try_interp(c, wt, DBS_LOCK_BARRIER, 4, out, &n, max);
	return n;
}

/* ---- frame evidence -------------------------------------------------------- */

enum fkind {
	FK_NONE = 0,
	FK_MUTEX,
	FK_RWLOCK_READ,
	FK_RWLOCK_WRITE,
	FK_COND,
	FK_COND_SIGNAL,	/* pthread_cond_signal/broadcast waiting inside */
	FK_SEM,
	FK_JOIN,
	FK_BARRIER,
	FK_INTERNAL,	/* glibc-internal lll lock (malloc, stdio, ...) */
};

/* glibc 2.36 entry points and internal functions that block, by name
 * without leading underscores, symbol version or .constprop-like suffix.
 * Without libc debug symbols only the .dynsym ones appear as frame names
 * (pthread_mutex_lock, pthread_cond_wait, pthread_rwlock_*lock,
 * pthread_barrier_wait); the rest need libc6-dbg (see the fixtures). */
static const struct {
	const char *name;
	enum fkind k;
} frame_table[] = {
	{ "pthread_mutex_lock", FK_MUTEX },
	{ "pthread_mutex_timedlock", FK_MUTEX },
	{ "pthread_mutex_clocklock", FK_MUTEX },
	{ "pthread_mutex_lock_full", FK_MUTEX },
	{ "pthread_mutex_clocklock_common", FK_MUTEX },
	{ "pthread_mutex_cond_lock", FK_MUTEX },
	{ "pthread_mutex_cond_lock_full", FK_MUTEX },
	{ "lll_lock_wait", FK_MUTEX },
	{ "lll_clocklock_wait", FK_MUTEX },
	{ "futex_lock_pi64", FK_MUTEX },
	{ "lll_lock_wait_private", FK_INTERNAL },
	{ "pthread_rwlock_rdlock", FK_RWLOCK_READ },
	{ "pthread_rwlock_timedrdlock", FK_RWLOCK_READ },
	{ "pthread_rwlock_clockrdlock", FK_RWLOCK_READ },
	{ "pthread_rwlock_rdlock_full64", FK_RWLOCK_READ },
	{ "pthread_rwlock_rdlock_full", FK_RWLOCK_READ },
	{ "pthread_rwlock_wrlock", FK_RWLOCK_WRITE },
	{ "pthread_rwlock_timedwrlock", FK_RWLOCK_WRITE },
	{ "pthread_rwlock_clockwrlock", FK_RWLOCK_WRITE },
	{ "pthread_rwlock_wrlock_full64", FK_RWLOCK_WRITE },
	{ "pthread_rwlock_wrlock_full", FK_RWLOCK_WRITE },
	{ "pthread_cond_wait", FK_COND },
	{ "pthread_cond_timedwait", FK_COND },
	{ "pthread_cond_clockwait", FK_COND },
	{ "pthread_cond_wait_common", FK_COND },
	{ "pthread_cond_timedwait64", FK_COND },
	{ "pthread_cond_clockwait64", FK_COND },
	/* a signaller waits for the old group's waiters to leave, on
	 * __g_refs (+16/+20), or for the condvar's internal lock (+32) */
	{ "pthread_cond_signal", FK_COND_SIGNAL },
	{ "pthread_cond_broadcast", FK_COND_SIGNAL },
	{ "condvar_quiesce_and_switch_g1", FK_COND_SIGNAL },
	{ "condvar_acquire_lock", FK_COND_SIGNAL },
	{ "sem_wait", FK_SEM },
	{ "sem_timedwait", FK_SEM },
	{ "sem_clockwait", FK_SEM },
	{ "new_sem_wait", FK_SEM },
	{ "new_sem_wait_slow64", FK_SEM },
	{ "new_sem_wait_slow", FK_SEM },
	{ "new_sem_clockwait", FK_SEM },
	{ "do_futex_wait", FK_SEM },
	{ "pthread_join", FK_JOIN },
	{ "pthread_timedjoin_np", FK_JOIN },
	{ "pthread_clockjoin_np", FK_JOIN },
	{ "pthread_clockjoin_ex", FK_JOIN },
	{ "pthread_barrier_wait", FK_BARRIER },
};

/* "__pthread_mutex_lock@GLIBC_2.2.5" -> "pthread_mutex_lock",
 * "__GI___lll_lock_wait" (libc6-dbg's internal alias) -> "lll_lock_wait",
 * "__new_sem_wait_slow64.constprop.0" -> "new_sem_wait_slow64". */
static void normalize(const char *in, char *out, size_t cap)
{
	while (*in == '_')
		in++;
	if (!strncmp(in, "GI_", 3))
		for (in += 3; *in == '_'; in++)
			;
	size_t n = 0;
	for (; in[n] && in[n] != '@' && in[n] != '.' && n + 1 < cap; n++)
		out[n] = in[n];
	out[n] = '\0';
}

#define MAX_FRAMES 16

/* Thread ti's innermost frames into c->fnames / c->fsps. */
static size_t load_frames(const struct ctx *c, size_t ti)
{
	if (!c->in->frames)
		return 0;
	for (size_t k = 0; k < MAX_FRAMES; k++)
		c->fsps[k] = 0;
	size_t n = c->in->frames(c->in->frames_ctx ? c->in->frames_ctx : c->in->ctx,
				 c->snap, ti, c->fnames, c->fsps, MAX_FRAMES);
	return n > MAX_FRAMES ? MAX_FRAMES : n;
}

/*
 * glibc's park of a PI mutex waiter, proven: the zero word lies in the
 * stack frame of __pthread_mutex_lock_full (or of the timed lock's
 * __pthread_mutex_clocklock_common, which parks until its timeout), the
 * only code that waits on a compound literal of its own frame
 * (nptl/pthread_mutex_lock.c, PI branch: "Delay the thread
 * indefinitely").  The frame's extent runs from its sp up to its caller's.
 * Those names need libc's symbol table (libc6-dbg): without it the park is
 * not claimed.
 */
static const char *park_frame(const struct ctx *c, size_t ti, uint64_t addr)
{
	size_t n = load_frames(c, ti);
	for (size_t k = 0; k < n; k++) {
		char norm[64];
		if (!c->fnames[k] || !c->fsps[k])
			continue;
		normalize(c->fnames[k], norm, sizeof norm);
		if (strcmp(norm, "pthread_mutex_lock_full") &&
		    strcmp(norm, "pthread_mutex_clocklock_common"))
			continue;
		uint64_t lo = c->fsps[k], hi = 0;
		for (size_t j = k + 1; j < n && !hi; j++)
			if (c->fsps[j] > lo)
				hi = c->fsps[j];
		if (hi && addr >= lo && addr < hi)
			return c->fnames[k];
	}
	return NULL;
}

static enum fkind frame_kind(const struct ctx *c, size_t ti, const char **ret_name)
{
	*ret_name = NULL;
	size_t n = load_frames(c, ti);
	/* innermost first: a cond waiter re-locking its mutex sits in
	 * pthread_mutex_cond_lock above pthread_cond_wait, and waits on the
	 * mutex */
	for (size_t f = 0; f < n; f++) {
		if (!c->fnames[f])
			continue;
		char norm[64];
		normalize(c->fnames[f], norm, sizeof norm);
		for (size_t k = 0; k < sizeof frame_table / sizeof *frame_table; k++)
			if (!strcmp(norm, frame_table[k].name)) {
				*ret_name = c->fnames[f];
				return frame_table[k].k;
			}
	}
	return FK_NONE;
}

static enum dbs_lock_kind fkind_lock(enum fkind f, enum dbs_wait_mode *mode)
{
	*mode = DBS_MODE_NONE;
	switch (f) {
	case FK_MUTEX: return DBS_LOCK_MUTEX;
	case FK_RWLOCK_READ: *mode = DBS_MODE_READ; return DBS_LOCK_RWLOCK;
	case FK_RWLOCK_WRITE: *mode = DBS_MODE_WRITE; return DBS_LOCK_RWLOCK;
	case FK_COND:
	case FK_COND_SIGNAL: return DBS_LOCK_COND;
	case FK_SEM: return DBS_LOCK_SEM;
	case FK_JOIN: return DBS_LOCK_JOIN;
	case FK_BARRIER: return DBS_LOCK_BARRIER;
	case FK_NONE:
	case FK_INTERNAL:
		break;
	}
	return DBS_LOCK_FUTEX;
}

/* ---- decide ------------------------------------------------------------------- */

/* The struct pthread of thread th (pthread_t), 0 if unknown. */
static uint64_t thread_descriptor(const struct ctx *c, const struct dbs_thread *th)
{
	if (th->have_pthread && th->pthread)
		return th->pthread;
	if (th->have_regs && th->tp && c->in->arch && c->in->sizeof_pthread)
		return arch_thread_area(c->in->arch, th->tp, (int)c->in->sizeof_pthread);
	return 0;
}

/* pthread_join(T) sleeps on T's tid word with val = T's tid, a shared
 * futex (the kernel's CLONE_CHILD_CLEARTID wake): if the address is the
 * tid word of a thread of the snapshot and val is its TID, that is what
 * it is, whatever else the words may look like. */
static const struct dbs_thread *join_target(const struct ctx *c, const struct wait *wt)
{
	if (!c->in->tid_offset || is_pi_cmd(wt->cmd) || wt->private_op)
		return NULL;
	size_t i = tidx_find(c->by_tidword, c->nby_tidword, wt->uaddr);
	if (i == SIZE_MAX || wt->val != (uint32_t)c->snap->threads[i].ns_tid)
		return NULL;
	return &c->snap->threads[i];
}

/* The decision for one thread (before the objects are shared out). */
struct verdict {
	enum dbs_lock_kind kind;
	enum dbs_wait_mode mode;
	uint64_t object;	/* 0: unknown */
	unsigned evidence;
	bool parked;
	const char *frame;
	const char *note;
	pid_t join_tid;
	uint64_t cond_mutex;	/* cond: the mutex its cleanup record names */
};

static const char NOTE_INTERNAL[] =
	"a glibc-internal lock (lll_lock_wait_private: malloc, stdio, ...)";
static const char NOTE_PARK[] =
	"parked by glibc in its PI mutex lock after the kernel refused the mutex "
	"(EDEADLK or ESRCH): it will not get it; which mutex was not identified";
static const char NOTE_PARK_FOUND[] =
	"parked for ever by glibc after the kernel refused this PI mutex "
	"(EDEADLK or ESRCH)";
static const char NOTE_PI_FUTEX[] =
	"a priority-inheritance futex: the kernel records the owner in the word";

/*
 * Order of evidence:
 *  1. join: the word is a thread's tid word and val its TID;
 *  2. the calling frames name the entry point: the kind is theirs; the
 *     object start from the only layout offset, or the one whose words fit;
 *  3. a symbol of exactly the type's size holds the word at the type's
 *     futex offset, and the words do not contradict it;
 *  4. without either, only self-identifying layouts: a mutex (PI word
 *     managed by the kernel, or all the fields of a held mutex consistent
 *     with the wait, its robust links zero) or an rwlock (pads zero, phase
 *     bits consistent with the wait), if exactly one fits;
 *  5. otherwise "futex".  Parked PI waiters are resolved later
 *     (resolve_parks) with the owners known.
 */
static void decide(const struct ctx *c, size_t ti, const struct wait *wt,
		   struct verdict *v)
{
	const struct dbs_thread *th = &c->snap->threads[ti];
	memset(v, 0, sizeof *v);
	v->kind = DBS_LOCK_FUTEX;
	v->evidence = wt->src;

	const struct dbs_thread *jt = join_target(c, wt);
	const char *fname;
	enum fkind fk = frame_kind(c, ti, &fname);
	if (jt) {
		v->kind = DBS_LOCK_JOIN;
		v->object = wt->uaddr - c->in->tid_offset;
		v->evidence |= DBS_EV_THREAD;
		if (fk == FK_JOIN) {
			v->evidence |= DBS_EV_FRAMES;
			v->frame = fname;
		}
		v->join_tid = jt->tid;
		return;
	}
	uint32_t word = 1;
	const char *pname = maybe_park(th, wt) ? park_frame(c, ti, wt->uaddr) : NULL;
	if (pname && read_words(c, wt->uaddr, (unsigned char *)&word, 4) && word == 0) {
		v->parked = true;
		v->note = NOTE_PARK;
		v->evidence |= DBS_EV_FRAMES;
		v->frame = pname;
		return;
	}
	/* a cond waiter's own cleanup record names its cond (condwait.c) */
	uint64_t cond, cmutex;
	if (!is_pi_cmd(wt->cmd) && (fk == FK_NONE || fk == FK_COND) &&
	    condwait_object(c->in, thread_descriptor(c, th), wt->uaddr, &cond, &cmutex)) {
		v->kind = DBS_LOCK_COND;
		v->object = cond;
		v->cond_mutex = cmutex;
		v->evidence |= DBS_EV_CLEANUP;
		if (fk == FK_COND) {
			v->evidence |= DBS_EV_FRAMES;
			v->frame = fname;
		}
		return;
	}
	if (fk == FK_INTERNAL) {
		v->evidence |= DBS_EV_FRAMES;
		v->frame = fname;
		v->note = NOTE_INTERNAL;
		return;
	}

	struct interp it[16];
	size_t ni = interpretations(c, wt, it, 16);

	/* the symbol holding the word, if any */
	struct dbs_symbol sym = { 0 };
	uint64_t sym_size = 0, sym_start = 0;
	bool have_sym = c->in->symbol &&
			c->in->symbol(c->in->ctx, wt->uaddr, &sym, &sym_size) == 0 &&
			sym.name;
	if (have_sym)
		sym_start = wt->uaddr - sym.offset;
	free(sym.name);
	free(sym.module);

	if (fk != FK_NONE) {
		enum dbs_wait_mode fmode;
		enum dbs_lock_kind k = fkind_lock(fk, &fmode);
		v->kind = k;
		v->mode = fmode;
		v->evidence |= DBS_EV_FRAMES;
		v->frame = fname;
		/* among the layouts of that kind: the one the symbol marks,
		 * else the only one that fits, else (one offset) that one */
		size_t nk = 0, nyes = 0, pick = SIZE_MAX, pick_sym = SIZE_MAX;
		for (size_t i = 0; i < ni; i++) {
			if (it[i].kind != k)
				continue;
			nk++;
			if (it[i].fit != FIT_NO) {
				nyes++;
				pick = i;
			}
			if (have_sym && sym_start == it[i].start &&
			    sym_size == kind_size(c->L, k))
				pick_sym = i;
		}
		if (pick_sym != SIZE_MAX) {
			v->object = it[pick_sym].start;
			v->evidence |= DBS_EV_SYMBOL;
			if (it[pick_sym].fit != FIT_NO)
				v->evidence |= DBS_EV_WORDS;
			if (it[pick_sym].mode && !v->mode)
				v->mode = it[pick_sym].mode;
		} else if (nyes == 1) {
			v->object = it[pick].start;
			v->evidence |= DBS_EV_WORDS;
			if (it[pick].mode && !v->mode)
				v->mode = it[pick].mode;
		} else if (nk == 1 || k == DBS_LOCK_MUTEX || k == DBS_LOCK_SEM) {
			/* one futex offset for the kind: the object is there */
			for (size_t i = 0; i < ni; i++)
				if (it[i].kind == k) {
					v->object = it[i].start;
					break;
				}
		}
		return;
	}

	/* a PI futex: the kernel's word; a mutex if the kind says so */
	if (is_pi_cmd(wt->cmd)) {
		v->evidence |= DBS_EV_KERNEL;
		if (ni && it[0].kind == DBS_LOCK_MUTEX && it[0].fit != FIT_NO) {
			v->kind = DBS_LOCK_MUTEX;
			v->object = wt->uaddr;
			v->evidence |= DBS_EV_WORDS;
			if (have_sym && sym_start == wt->uaddr &&
			    sym_size == c->L->mutex_size)
				v->evidence |= DBS_EV_SYMBOL;
		} else {
			v->note = NOTE_PI_FUTEX;
		}
		return;
	}

	if (have_sym) {
		for (size_t i = 0; i < ni; i++) {
			if (it[i].fit == FIT_NO || it[i].start != sym_start ||
			    sym_size != kind_size(c->L, it[i].kind))
				continue;
			v->kind = it[i].kind;
			v->mode = it[i].mode;
			v->object = it[i].start;
			v->evidence |= DBS_EV_SYMBOL | DBS_EV_WORDS;
			return;
		}
	}

	size_t nyes = 0, pick = 0;
	for (size_t i = 0; i < ni; i++)
		if (it[i].fit == FIT_YES &&
		    (it[i].kind == DBS_LOCK_MUTEX || it[i].kind == DBS_LOCK_RWLOCK)) {
			nyes++;
			pick = i;
		}
	bool others = false;
	for (size_t i = 0; i < ni; i++)
		if (it[i].fit == FIT_YES && it[i].kind != DBS_LOCK_MUTEX &&
		    it[i].kind != DBS_LOCK_RWLOCK)
			others = true;
	if (nyes == 1 && !others) {
		v->kind = it[pick].kind;
		v->mode = it[pick].mode;
		v->object = it[pick].start;
		v->evidence |= DBS_EV_WORDS;
	}
}

/* ---- building the result ---------------------------------------------------------- */

struct entry {
	uint64_t key;		/* object start, or futex word */
	enum dbs_lock_kind kind;
	size_t thread;
};

static int cmp_entry(const void *a, const void *b)
{
	const struct entry *x = a, *y = b;
	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	if (x->kind != y->kind)
		return x->kind < y->kind ? -1 : 1;
	return (x->thread > y->thread) - (x->thread < y->thread);
}

static int cmp_waiter(const void *a, const void *b)
{
	const struct dbs_lock_waiter *x = a, *y = b;
	return (x->tid > y->tid) - (x->tid < y->tid);
}

static const char NOTE_ELISION[] =
	"lock elision: glibc does not record the owner of an elided mutex";
static const char NOTE_ACQUIRING[] =
	"locked, owner not recorded yet (being acquired)";
static const char NOTE_RELEASED[] =
	"not locked now: the wake-up of its waiters is in flight";
static const char NOTE_READERS[] =
	"held by readers; glibc counts readers but does not record them";
static const char NOTE_INCONSISTENT[] =
	"robust: its previous owner died; the new owner got EOWNERDEAD and has "
	"not called pthread_mutex_consistent";
static const char NOTE_NOTRECOVERABLE[] =
	"robust: not recoverable (unlocked while inconsistent)";
static const char NOTE_OWNER_DIED[] =
	"robust: the owner died (FUTEX_OWNER_DIED); the next locker gets EOWNERDEAD";
static const char NOTE_GARBAGE[] =
	"its words are no glibc mutex (__kind has bits no mutex has, or both "
	"PI and PP): corrupt; its owner is unknown";

/* Owner (as recorded in the target's PID namespace) of a decoded lock. */
static void lock_owner(struct dbs_lock *l, pid_t *ret_owner,
		       enum dbs_owner_state *ret_state)
{
	*ret_owner = 0;
	*ret_state = DBS_OWNER_NONE;
	if (!l->decoded) {
		/* words unreadable: nothing is known about a holder */
		if (l->kind == DBS_LOCK_MUTEX || l->kind == DBS_LOCK_RWLOCK ||
		    l->kind == DBS_LOCK_JOIN || l->kind == DBS_LOCK_FUTEX)
			*ret_state = DBS_OWNER_UNKNOWN;
		return;
	}
	switch (l->kind) {
	case DBS_LOCK_MUTEX: {
		struct dbs_mutex_info *m = &l->u.mutex;
		unsigned k = (unsigned)m->kind_word;
		if ((k & ~(unsigned)MUTEX_KNOWN_BITS) || (m->pi && m->pp) ||
		    (m->robust && m->pp)) {
			/* named a mutex by its frames, but the words were
			 * overwritten: no owner is read out of garbage */
			l->note = NOTE_GARBAGE;
			*ret_state = DBS_OWNER_UNKNOWN;
			return;
		}
		if (m->robust || m->pi) {
			*ret_owner = (pid_t)(m->lock & FUTEX_TID_MASK);
			if (m->notrecoverable)
				l->note = NOTE_NOTRECOVERABLE;
			else if (m->inconsistent)
				l->note = NOTE_INCONSISTENT;
			else if (m->owner_died)
				l->note = NOTE_OWNER_DIED;
			if (!*ret_owner && (m->lock & ~FUTEX_WAITERS & ~FUTEX_OWNER_DIED))
				*ret_state = DBS_OWNER_UNKNOWN;
			else if (*ret_owner)
				*ret_state = DBS_OWNER_LIVE;	/* refined by caller */
			return;
		}
		unsigned state = m->pp ? (m->lock & 3) : m->lock;
		if (state == 0) {
			l->note = NOTE_RELEASED;
			return;
		}
		if (m->elision && m->type == 0) {
			l->note = NOTE_ELISION;
			*ret_state = DBS_OWNER_UNKNOWN;
			return;
		}
		if (m->owner_field <= 0 || (uint32_t)m->owner_field > FUTEX_TID_MASK) {
			l->note = NOTE_ACQUIRING;
			*ret_state = DBS_OWNER_UNKNOWN;
			return;
		}
		*ret_owner = m->owner_field;
		*ret_state = DBS_OWNER_LIVE;
		return;
	}
	case DBS_LOCK_RWLOCK: {
		struct dbs_rwlock_info *r = &l->u.rwlock;
		if (r->wrphase && r->wrlocked) {
			/* state #7/#8: a writer holds it; __cur_writer is
			 * stored right after the acquisition */
			if (r->cur_writer > 0) {
				*ret_owner = r->cur_writer;
				*ret_state = DBS_OWNER_LIVE;
			} else {
				l->note = NOTE_ACQUIRING;
				*ret_state = DBS_OWNER_UNKNOWN;
			}
		} else if (!r->wrphase && r->nreaders) {
			/* states #2/#4/#4a: readers hold it */
			l->nholders = r->nreaders;
			l->note = NOTE_READERS;
			*ret_state = DBS_OWNER_UNKNOWN;
		}
		return;
	}
	case DBS_LOCK_JOIN:
		/* the thread being joined: waiting for it to exit */
		*ret_owner = l->u.join.target;
		*ret_state = *ret_owner ? DBS_OWNER_LIVE : DBS_OWNER_NONE;
		return;
	case DBS_LOCK_FUTEX:
		/* an unidentified word: whether anyone holds it is unknown */
		*ret_state = DBS_OWNER_UNKNOWN;
		return;
	case DBS_LOCK_COND:
	case DBS_LOCK_SEM:
	case DBS_LOCK_BARRIER:
		return;
	}
}

struct graph {
	size_t *succ;		/* thread index -> owner thread index, SIZE_MAX */
	size_t *lockof;		/* thread index -> lock index, SIZE_MAX */
};

/* Does the lock make its waiters wait for one thread?  An unidentified
 * futex only when it is a PI word, whose owner the kernel records. */
static bool lock_has_owner_concept(const struct dbs_lock *l)
{
	return l->kind == DBS_LOCK_MUTEX || l->kind == DBS_LOCK_RWLOCK ||
	       l->kind == DBS_LOCK_JOIN || (l->kind == DBS_LOCK_FUTEX && l->owner);
}

/* Free a partially built result. */
static void free_locks(struct dbs_locks *L)
{
	if (!L)
		return;
	for (size_t i = 0; i < L->n; i++) {
		free(L->v[i].sym.module);
		free(L->v[i].sym.name);
		free(L->v[i].waiters);
	}
	free(L->v);
	for (size_t i = 0; i < L->ndeadlocks; i++) {
		free(L->deadlocks[i].threads);
		free(L->deadlocks[i].locks);
	}
	free(L->deadlocks);
	for (size_t i = 0; i < L->nstalls; i++) {
		free(L->stalls[i].threads);
		free(L->stalls[i].locks);
	}
	free(L->stalls);
	free(L);
}

void dbs_locks_free(struct dbs_snapshot *snap)
{
	if (!snap)
		return;
	for (size_t i = 0; i < snap->nthreads; i++) {
		free(snap->threads[i].blocked_on);
		snap->threads[i].blocked_on = NULL;
	}
	free_locks(snap->locks);
	snap->locks = NULL;
}

/* Read and decode the object of lock l (kind, addr set). */
static void load_lock(const struct ctx *c, struct dbs_lock *l)
{
	uint64_t at = l->addr;
	size_t sz = l->object_known ? kind_size(c->L, l->kind) : 4;
	if (l->kind == DBS_LOCK_JOIN && l->object_known)
		at = l->addr + c->in->tid_offset;	/* the tid word */
	if (sz > sizeof l->words)
		sz = sizeof l->words;
	if (c->in->glibc_unverified) {
		l->note = "its glibc's lock layout is not verified: not decoded";
	} else if (read_words(c, at, l->words, sz)) {
		l->nwords = sz;
		l->decoded = dbs_lock_decode_glibc(c->in->arch, c->in->glibc, l);
	}
	if (c->in->symbol) {
		uint64_t size;
		struct dbs_symbol s = { 0 };
		if (c->in->symbol(c->in->ctx, l->addr, &s, &size) == 0 && s.name)
			l->sym = s;
		else {
			free(s.name);
			free(s.module);
		}
	}
	l->sym.addr = l->addr;
}

/* Owner state of a recorded owner TID (target namespace). */
static void resolve_owner(const struct ctx *c, struct dbs_lock *l, pid_t rec,
			  enum dbs_owner_state st, bool pshared)
{
	l->owner_state = st;
	l->owner = 0;
	if (st != DBS_OWNER_LIVE)
		return;
	size_t oi = thread_by_nstid(c, rec);
	if (oi != SIZE_MAX) {
		l->owner = c->snap->threads[oi].tid;
		return;
	}
	/* Not a thread of this process (any more).  Every task of the
	 * process is in the snapshot, so a private lock's owner is dead:
	 * nothing releases a dead owner's normal mutex (and for a robust one
	 * the kernel should have set FUTEX_OWNER_DIED instead). */
	if (c->nstid_unknown) {
		/* it may be the thread whose namespace TID we lack; rec is a
		 * TID of the target's namespace, not one to print beside
		 * ours */
		l->owner_state = DBS_OWNER_UNKNOWN;
		l->note = "the recorded owner matches no known thread, but some "
			  "threads' TIDs in the target's namespace are unknown";
		return;
	}
	l->owner = rec;
	/* a robust mutex's dead owner is marked FUTEX_OWNER_DIED by the
	 * kernel, with no TID: a TID that is not ours belongs to another
	 * process sharing it */
	pshared = pshared ||
		  (l->kind == DBS_LOCK_MUTEX && l->decoded &&
		   (l->u.mutex.pshared || l->u.mutex.robust)) ||
		  (l->kind == DBS_LOCK_RWLOCK && l->decoded && l->u.rwlock.shared);
	if (pshared) {
		l->owner_state = DBS_OWNER_OUTSIDE;
	} else {
		l->owner_state = DBS_OWNER_DEAD;
		l->orphaned = true;
	}
}

/* For a parked PI waiter: the unique PI mutex its callee-saved registers
 * or its stack words just above sp point to (or to whose __kind). */
static uint64_t park_candidate(const struct ctx *c, const struct dbs_thread *th)
{
	const struct arch_desc *a = c->in->arch;
	unsigned cs[16];
	size_t ncs = a ? callee_saved(a, cs, 16) : 0;
	uint64_t vals[16 + PARK_SCAN_BYTES / 8];
	size_t nv = 0;
	for (size_t i = 0; i < ncs; i++)
		vals[nv++] = th->gregs[cs[i]];
	uint64_t stack[PARK_SCAN_BYTES / 8];
	if (c->in->read && c->in->read(c->in->ctx, th->sp, stack, sizeof stack) == 0)
		for (size_t w = 0; w < PARK_SCAN_BYTES / 8; w++)
			vals[nv++] = stack[w];
	uint64_t found = 0;
	for (size_t i = 0; i < nv; i++) {
		if (!pointer_like(vals[i]) || vals[i] - th->sp < PARK_STACK_SPAN)
			continue;
		for (size_t o = 0; o < NPARK_OFFS; o++) {
			uint64_t m = vals[i] - park_offs[o];
			unsigned char w[48];
			if (!read_words(c, m, w, c->L->mutex_size))
				continue;
			struct dbs_mutex_info mi = { 0 };
			decode_mutex(w, c->L->mutex_size, &mi);
			unsigned k = (unsigned)mi.kind_word;
			if ((k & ~(unsigned)MUTEX_KNOWN_BITS) || !mi.pi || mi.pp ||
			    !(mi.lock & FUTEX_TID_MASK) ||
			    (pid_t)(mi.lock & FUTEX_TID_MASK) == th->ns_tid)
				continue;
			if (found && found != m)
				return 0;	/* two candidates: ambiguous */
			found = m;
		}
	}
	return found;
}

static int add_lock(struct dbs_locks *L, size_t *cap, const struct dbs_lock *l)
{
	if (L->n == *cap) {
		size_t nc = *cap ? *cap * 2 : 16;
		struct dbs_lock *nv = realloc(L->v, nc * sizeof *nv);
		if (!nv)
			return -ENOMEM;
		L->v = nv;
		*cap = nc;
	}
	L->v[L->n++] = *l;
	return 0;
}

/* ---- the graph: cycles and stalls ------------------------------------------------ */

static int cmp_deadlock(const void *a, const void *b)
{
	const struct dbs_deadlock *x = a, *y = b;
	return (x->threads[0] > y->threads[0]) - (x->threads[0] < y->threads[0]);
}

/* Record the cycle through thread index start, rotated to begin at its
 * smallest tid. */
static int add_cycle(struct ctx *c, struct graph *g, size_t start)
{
	struct dbs_locks *L = c->snap->locks;
	size_t n = 1;
	for (size_t i = g->succ[start]; i != start; i = g->succ[i])
		n++;
	size_t first = start, i = start;
	for (size_t k = 0; k < n; k++, i = g->succ[i])
		if (c->snap->threads[i].tid < c->snap->threads[first].tid)
			first = i;
	struct dbs_deadlock d = { n, calloc(n, sizeof(pid_t)), calloc(n, sizeof(size_t)) };
	if (!d.threads || !d.locks) {
		free(d.threads);
		free(d.locks);
		return -ENOMEM;
	}
	i = first;
	for (size_t k = 0; k < n; k++, i = g->succ[i]) {
		d.threads[k] = c->snap->threads[i].tid;
		d.locks[k] = g->lockof[i];
	}
	struct dbs_deadlock *nd = realloc(L->deadlocks, (L->ndeadlocks + 1) * sizeof *nd);
	if (!nd) {
		free(d.threads);
		free(d.locks);
		return -ENOMEM;
	}
	nd[L->ndeadlocks++] = d;
	L->deadlocks = nd;
	return 0;
}

static int build_graph(struct ctx *c, struct graph *g)
{
	struct dbs_snapshot *snap = c->snap;
	struct dbs_locks *L = snap->locks;
	size_t n = snap->nthreads;
	int err = -ENOMEM;
	unsigned char *color = calloc(n ? n : 1, 1);	/* 0 new, 1 on path, 2 done */
	size_t *path = calloc(n ? n : 1, sizeof *path);
	bool *oncycle = calloc(n ? n : 1, sizeof *oncycle);
	if (!color || !path || !oncycle)
		goto out;

	for (size_t s = 0; s < n; s++) {
		if (color[s])
			continue;
		size_t np = 0, i = s;
		while (i != SIZE_MAX && !color[i]) {
			color[i] = 1;
			path[np++] = i;
			i = g->succ[i];
		}
		if (i != SIZE_MAX && color[i] == 1) {
			/* i is on the current path: a new cycle */
			if (add_cycle(c, g, i))
				goto out;
			size_t k = i;
			do {
				oncycle[k] = true;
				k = g->succ[k];
			} while (k != i);
		}
		for (size_t k = 0; k < np; k++)
			color[path[k]] = 2;
	}
	sort(L->deadlocks, L->ndeadlocks, sizeof *L->deadlocks, cmp_deadlock);

	/* stalls.c: chains behind a holder that cannot move on by itself */
	err = dbs_stalls_find(snap, g->succ, g->lockof, oncycle);
out:
	free(color);
	free(path);
	free(oncycle);
	return err;
}

/* ---- the analysis ------------------------------------------------------------ */

/* Give a lock of kind k at key to thread ti's verdict. */
static void adopt(struct verdict *v, enum dbs_lock_kind k, uint64_t start,
		  enum dbs_wait_mode mode)
{
	v->kind = k;
	v->object = start;
	if (!v->mode)
		v->mode = mode;
	v->evidence |= DBS_EV_SHARED;
}

/* Futex offsets of the objects of kind k; a thread whose frames say it
 * is inside a cond operation may also wait on the signaller's words
 * (__g_refs +16/+20, the internal lock in __g1_orig_size +32). */
static bool futex_offset_of(enum dbs_lock_kind k, uint64_t off, bool in_cond,
			    const struct dbs_glibc_layout *g)
{
	/* 2.41 (no __g_refs): __g_signals at +32, the internal lock at +24 */
	uint64_t sig = g ? (uint64_t)g->cond_g_signals : 40;
	uint64_t orig = g ? (uint64_t)g->cond_g1_orig_size : 32;
	bool refs = !g || g->cond_g_refs >= 0;
	switch (k) {
	case DBS_LOCK_MUTEX:
	case DBS_LOCK_SEM:
		return off == 0;
	case DBS_LOCK_RWLOCK:
		return off == 0 || off == 8 || off == 12;
	case DBS_LOCK_COND:
		return off == sig || off == sig + 4 ||
		       (in_cond && ((refs && (off == 16 || off == 20)) ||
				    off == orig));
	case DBS_LOCK_BARRIER:
		return off == 4 || off == 0;
	case DBS_LOCK_JOIN:
	case DBS_LOCK_FUTEX:
		break;
	}
	return false;
}

static int analyse(struct ctx *c, struct verdict *vd)
{
	struct dbs_snapshot *snap = c->snap;
	size_t n = snap->nthreads;
	struct dbs_locks *L = calloc(1, sizeof *L);
	if (!L)
		return -ENOMEM;
	snap->locks = L;

	/* 1. classify every wait */
	for (size_t i = 0; i < n; i++) {
		thread_wait(c->in->arch, &snap->threads[i], &c->waits[i]);
		if (c->waits[i].valid)
			decide(c, i, &c->waits[i], &vd[i]);
	}
	/* 2. cond waiters whose frames say cond but whose object is open
	 * (+40 or +44?): waiters on two words 4 bytes apart are the two
	 * groups of one condvar, the lower one its __g_signals[0] */
	struct tidx *ident = calloc(n ? n : 1, sizeof *ident);
	size_t nident = 0;
	if (!ident)
		return -ENOMEM;
	for (size_t j = 0; j < n; j++)
		if (c->waits[j].valid && !vd[j].object && !vd[j].parked &&
		    (vd[j].kind == DBS_LOCK_COND || vd[j].kind == DBS_LOCK_FUTEX) &&
		    c->waits[j].cmd == FUTEX_WAIT_BITSET && c->waits[j].val == 0)
			ident[nident++] = (struct tidx){ c->waits[j].uaddr, j };
	sort(ident, nident, sizeof *ident, cmp_tidx);
	for (size_t i = 0; nident && i < n; i++) {
		if (!c->waits[i].valid || vd[i].object || vd[i].kind != DBS_LOCK_COND ||
		    c->waits[i].cmd != FUTEX_WAIT_BITSET || c->waits[i].val != 0)
			continue;
		uint64_t f = c->waits[i].uaddr;
		bool up = tidx_find(ident, nident, f + 4) != SIZE_MAX;
		bool down = f >= 4 && tidx_find(ident, nident, f - 4) != SIZE_MAX;
		if (up == down || f < 44)
			continue;
		vd[i].object = up ? f - 40 : f - 44;
		vd[i].evidence |= DBS_EV_PAIR;
	}
	nident = 0;

	/* 3. an unidentified waiter on a word of an object that another
	 * waiter identified (cond +40/+44, rwlock +8/+12) waits on it too */
	for (size_t j = 0; j < n; j++)
		if (c->waits[j].valid && vd[j].kind != DBS_LOCK_FUTEX &&
		    vd[j].kind != DBS_LOCK_JOIN && vd[j].object)
			ident[nident++] = (struct tidx){ vd[j].object, j };
	sort(ident, nident, sizeof *ident, cmp_tidx);
	for (size_t i = 0; nident && i < n; i++) {
		if (!c->waits[i].valid || vd[i].object || vd[i].parked ||
		    vd[i].note == NOTE_INTERNAL ||
		    (vd[i].kind != DBS_LOCK_FUTEX && vd[i].kind != DBS_LOCK_COND))
			continue;
		bool in_cond = vd[i].kind == DBS_LOCK_COND;
		uint64_t f = c->waits[i].uaddr;
		/* the first object starting at f - 44 or above */
		uint64_t lo = f > 44 ? f - 44 : 0;
		size_t a = 0, b = nident;
		while (a < b) {
			size_t mid = a + (b - a) / 2;
			if (ident[mid].key < lo)
				a = mid + 1;
			else
				b = mid;
		}
		for (; a < nident && ident[a].key <= f; a++) {
			size_t j = ident[a].i;
			if ((in_cond && vd[j].kind != DBS_LOCK_COND) ||
			    !futex_offset_of(vd[j].kind, f - vd[j].object, in_cond,
					    c->in->glibc))
				continue;
			enum dbs_wait_mode md = DBS_MODE_NONE;
			if (vd[j].kind == DBS_LOCK_RWLOCK) {
				unsigned char w[64];
				if (read_words(c, vd[j].object, w, 56))
					(void)rwlock_fit(&c->waits[i],
							 (unsigned)(f - vd[j].object), w, 56,
							 &md);
			}
			adopt(&vd[i], vd[j].kind, vd[j].object, md);
			break;
		}
	}
	free(ident);

	/* 4. the objects: one per (key, kind), waiters by tid */
	struct entry *e = calloc(n ? n : 1, sizeof *e);
	size_t ne = 0, cap = 0;
	if (!e)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		if (!c->waits[i].valid)
			continue;
		e[ne++] = (struct entry){
			vd[i].object ? vd[i].object : c->waits[i].uaddr, vd[i].kind, i };
	}
	sort(e, ne, sizeof *e, cmp_entry);
	size_t *lockof = malloc((n ? n : 1) * sizeof *lockof);
	if (!lockof) {
		free(e);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++)
		lockof[i] = SIZE_MAX;
	for (size_t a = 0; a < ne;) {
		size_t b = a;
		while (b < ne && e[b].key == e[a].key && e[b].kind == e[a].kind)
			b++;
		struct dbs_lock l = { 0 };
		l.kind = e[a].kind;
		l.addr = e[a].key;
		l.object_known = vd[e[a].thread].object != 0;
		load_lock(c, &l);
		l.waiters = calloc(b - a, sizeof *l.waiters);
		if (!l.waiters || add_lock(L, &cap, &l)) {
			free(l.waiters);
			free(l.sym.name);
			free(l.sym.module);
			free(e);
			free(lockof);
			return -ENOMEM;
		}
		struct dbs_lock *lk = &L->v[L->n - 1];
		for (size_t k = a; k < b; k++) {
			size_t ti = e[k].thread;
			lk->waiters[lk->nwaiters++] = (struct dbs_lock_waiter){
				snap->threads[ti].tid, vd[ti].mode };
			lockof[ti] = L->n - 1;
			if (lk->kind == DBS_LOCK_COND && lk->decoded && !lk->u.cond.mutex)
				lk->u.cond.mutex = vd[ti].cond_mutex;
		}
		sort(lk->waiters, lk->nwaiters, sizeof *lk->waiters, cmp_waiter);
		pid_t rec;
		enum dbs_owner_state st;
		const struct wait *w0 = &c->waits[e[a].thread];
		if (lk->kind == DBS_LOCK_FUTEX && (vd[e[a].thread].evidence & DBS_EV_KERNEL) &&
		    lk->decoded) {
			/* FUTEX_LOCK_PI: the word is owner TID | bits */
			rec = (pid_t)(u32_at(lk->words, lk->nwords, 0) & FUTEX_TID_MASK);
			st = rec ? DBS_OWNER_LIVE : DBS_OWNER_NONE;
		} else {
			lock_owner(lk, &rec, &st);
		}
		size_t jt = thread_by_tid(c, vd[e[a].thread].join_tid);
		if (lk->kind == DBS_LOCK_JOIN && jt != SIZE_MAX && st == DBS_OWNER_LIVE &&
		    snap->threads[jt].ns_tid)
			rec = snap->threads[jt].ns_tid;
		resolve_owner(c, lk, rec, st, lk->kind == DBS_LOCK_FUTEX && !w0->private_op);
		if (lk->kind == DBS_LOCK_JOIN) {
			lk->u.join.target = lk->owner;
			lk->u.join.pthread = lk->addr;
		}
		a = b;
	}
	free(e);
	/* locks were added by address already (entries were sorted) */

	/* 5. blocked_on, and the graph edges */
	struct graph g = { calloc(n ? n : 1, sizeof(size_t)), lockof };
	if (!g.succ) {
		free(lockof);
		return -ENOMEM;
	}
	int err = -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		g.succ[i] = SIZE_MAX;
		if (!c->waits[i].valid)
			continue;
		struct dbs_blocked_on *b = calloc(1, sizeof *b);
		if (!b)
			goto out;
		snap->threads[i].blocked_on = b;
		L->nblocked++;
		b->kind = vd[i].kind;
		b->mode = vd[i].mode;
		b->futex = c->waits[i].uaddr;
		b->futex_op = c->waits[i].op;
		b->futex_val = c->waits[i].val;
		b->nr = c->waits[i].nr;
		b->object = vd[i].object;
		b->evidence = vd[i].evidence;
		b->parked = vd[i].parked;
		b->frame = vd[i].frame;
		b->note = vd[i].note;
		b->lock = lockof[i];
		b->in_graph = c->waits[i].consistent;
		const struct dbs_lock *lk = &L->v[lockof[i]];
		b->owner = lk->owner;
		if (lk->owner_state == DBS_OWNER_LIVE && b->in_graph &&
		    lock_has_owner_concept(lk))
			g.succ[i] = thread_by_tid(c, lk->owner);
	}

	/* 6. parked PI waiters: the mutex from their registers, accepted
	 * when the kernel's refusal it implies is visible: the owner chain
	 * comes back to the parked thread (EDEADLK) or the owner is dead
	 * (ESRCH). */
	for (size_t i = 0; i < n; i++) {
		struct dbs_blocked_on *b = snap->threads[i].blocked_on;
		if (!b || !b->parked)
			continue;
		uint64_t m = park_candidate(c, &snap->threads[i]);
		if (!m)
			continue;
		unsigned char w[48];
		if (!read_words(c, m, w, c->L->mutex_size))
			continue;
		struct dbs_mutex_info mi = { 0 };
		decode_mutex(w, c->L->mutex_size, &mi);
		pid_t rec = (pid_t)(mi.lock & FUTEX_TID_MASK);
		size_t oi = thread_by_nstid(c, rec);
		/* the frames prove the park, not which mutex: the
		 * register candidate needs the refusal it implies */
		bool corroborated = false;
		if (oi == SIZE_MAX && !mi.pshared && !c->nstid_unknown) {
			corroborated = true;		/* ESRCH: owner gone */
		} else if (oi != SIZE_MAX) {
			size_t k = oi;
			for (size_t steps = 0; steps <= n && k != SIZE_MAX && k != i; steps++)
				k = g.succ[k];
			if (k == i)
				corroborated = true;	/* EDEADLK: a cycle */
		}
		if (!corroborated)
			continue;
		/* a lock of its own, or the one others wait on already */
		size_t li = SIZE_MAX;
		for (size_t k = 0; k < L->n; k++)
			if (L->v[k].kind == DBS_LOCK_MUTEX && L->v[k].addr == m)
				li = k;
		if (li == SIZE_MAX) {
			struct dbs_lock l = { 0 };
			l.kind = DBS_LOCK_MUTEX;
			l.addr = m;
			l.object_known = true;
			load_lock(c, &l);
			pid_t r2;
			enum dbs_owner_state st2;
			lock_owner(&l, &r2, &st2);
			resolve_owner(c, &l, r2, st2, false);
			if (add_lock(L, &cap, &l)) {
				free(l.sym.name);
				free(l.sym.module);
				goto out;
			}
			li = L->n - 1;
		}
		/* move the thread from its stack word's entry to the mutex */
		struct dbs_lock *old = &L->v[b->lock];
		for (size_t k = 0; k < old->nwaiters; k++)
			if (old->waiters[k].tid == snap->threads[i].tid) {
				memmove(&old->waiters[k], &old->waiters[k + 1],
					(old->nwaiters - k - 1) * sizeof *old->waiters);
				old->nwaiters--;
				break;
			}
		struct dbs_lock *lk = &L->v[li];
		struct dbs_lock_waiter *nw = realloc(lk->waiters,
						     (lk->nwaiters + 1) * sizeof *nw);
		if (!nw)
			goto out;
		lk->waiters = nw;
		lk->waiters[lk->nwaiters++] = (struct dbs_lock_waiter){
			snap->threads[i].tid, DBS_MODE_NONE };
		sort(lk->waiters, lk->nwaiters, sizeof *lk->waiters, cmp_waiter);
		b->kind = DBS_LOCK_MUTEX;
		b->object = m;
		b->lock = li;
		b->evidence |= DBS_EV_REGISTERS | DBS_EV_WORDS;
		b->note = NOTE_PARK_FOUND;
		g.lockof[i] = li;
		b->owner = lk->owner;
		if (lk->owner_state == DBS_OWNER_LIVE && b->in_graph)
			g.succ[i] = thread_by_tid(c, lk->owner);
	}

	/* drop the now-empty stack-word entries of resolved parks, keep the
	 * array sorted by address */
	{
		size_t *remap = malloc((L->n ? L->n : 1) * sizeof *remap);
		if (!remap)
			goto out;
		size_t w = 0;
		for (size_t k = 0; k < L->n; k++) {
			if (L->v[k].nwaiters == 0) {
				free(L->v[k].waiters);
				free(L->v[k].sym.name);
				free(L->v[k].sym.module);
				remap[k] = SIZE_MAX;
				continue;
			}
			remap[k] = w;
			L->v[w++] = L->v[k];
		}
		L->n = w;
		for (size_t i = 0; i < n; i++) {
			if (g.lockof[i] != SIZE_MAX)
				g.lockof[i] = remap[g.lockof[i]];
			if (snap->threads[i].blocked_on)
				snap->threads[i].blocked_on->lock = g.lockof[i];
		}
		free(remap);
		/* a resolved park's mutex was appended: sort again */
		size_t *order = malloc((L->n ? L->n : 1) * sizeof *order);
		struct dbs_lock *sorted = malloc((L->n ? L->n : 1) * sizeof *sorted);
		size_t *pos = malloc((L->n ? L->n : 1) * sizeof *pos);
		if (!order || !sorted || !pos) {
			free(order);
			free(sorted);
			free(pos);
			goto out;
		}
		for (size_t k = 0; k < L->n; k++)
			order[k] = k;
		/* insertion sort by (addr, kind): L->n is small and almost sorted */
		for (size_t k = 1; k < L->n; k++) {
			size_t x = order[k], j = k;
			while (j > 0 && (L->v[order[j - 1]].addr > L->v[x].addr ||
					 (L->v[order[j - 1]].addr == L->v[x].addr &&
					  L->v[order[j - 1]].kind > L->v[x].kind))) {
				order[j] = order[j - 1];
				j--;
			}
			order[j] = x;
		}
		for (size_t k = 0; k < L->n; k++) {
			sorted[k] = L->v[order[k]];
			pos[order[k]] = k;
		}
		if (L->n)
			memcpy(L->v, sorted, L->n * sizeof *sorted);
		for (size_t i = 0; i < n; i++) {
			if (g.lockof[i] != SIZE_MAX)
				g.lockof[i] = pos[g.lockof[i]];
			if (snap->threads[i].blocked_on)
				snap->threads[i].blocked_on->lock = g.lockof[i];
		}
		free(order);
		free(sorted);
		free(pos);
	}
	for (size_t k = 0; k < L->n; k++)
		if (L->v[k].orphaned)
			L->norphaned++;

	err = build_graph(c, &g);
out:
	free(g.succ);
	free(g.lockof);
	return err;
}

int dbs_locks_analyse(struct dbs_snapshot *snap, const struct dbs_lock_input *in)
{
	dbs_locks_free(snap);
	size_t n = snap->nthreads;
	struct ctx c = {
		.snap = snap,
		.in = in,
		.L = layout_of(in->arch),
		.waits = calloc(n ? n : 1, sizeof *c.waits),
		.fnames = calloc(MAX_FRAMES, sizeof *c.fnames),
		.fsps = calloc(MAX_FRAMES, sizeof *c.fsps),
	};
	struct verdict *vd = calloc(n ? n : 1, sizeof *vd);
	c.by_nstid = calloc(n ? n : 1, sizeof *c.by_nstid);
	c.by_tid = calloc(n ? n : 1, sizeof *c.by_tid);
	c.by_tidword = calloc(n ? n : 1, sizeof *c.by_tidword);
	int err = -ENOMEM;
	if (c.waits && c.fnames && c.fsps && vd && c.by_nstid && c.by_tid &&
	    c.by_tidword) {
		for (size_t i = 0; i < n; i++) {
			const struct dbs_thread *t = &snap->threads[i];
			c.by_nstid[i] = (struct tidx){ (uint64_t)t->ns_tid, i };
			c.nstid_unknown |= t->ns_tid == 0;
			c.by_tid[i] = (struct tidx){ (uint64_t)t->tid, i };
			uint64_t pd = thread_descriptor(&c, t);
			if (pd && in->tid_offset)
				c.by_tidword[c.nby_tidword++] =
					(struct tidx){ pd + in->tid_offset, i };
		}
		sort(c.by_nstid, n, sizeof *c.by_nstid, cmp_tidx);
		sort(c.by_tid, n, sizeof *c.by_tid, cmp_tidx);
		sort(c.by_tidword, c.nby_tidword, sizeof *c.by_tidword, cmp_tidx);
		err = analyse(&c, vd);
	}
	free(c.waits);
	free(c.fnames);
	free(c.fsps);
	free(vd);
	free(c.by_nstid);
	free(c.by_tid);
	free(c.by_tidword);
	if (err)
		dbs_locks_free(snap);
	return err;
}

/* ---- the session's inputs -------------------------------------------------------- */

static int frozen_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	return psvc_read_frozen(ctx, addr, buf, len);
}

static int session_symbol(void *ctx, uint64_t addr, struct dbs_symbol *ret,
			  uint64_t *ret_size)
{
	return dbs_symbol_covering(ctx, addr, ret, ret_size);
}

/* offsetof(struct pthread, tid), from libc's libthread_db descriptor
 * _thread_db_pthread_tid = { bits, count, offset } (GLIBC-NOTES.md §2;
 * 32, 1, 0x2d0 here).  A constant of libc: read once per module map. */
static void load_tid_offset(struct dbs_session *s)
{
	uint64_t gen = psvc_modules_generation(s->t);
	if (s->tid_off_valid && s->tid_off_gen == gen)
		return;
	s->tid_off = 0;
	s->tid_off_gen = gen;
	s->tid_off_valid = true;
	struct psvc_layout_src src = psvc_layout_src(s->t);
	struct psvc_field_rule rule = { "struct pthread", s->sizeof_pthread,
					32, 1, 1 };
	struct psvc_field f;
	free(s->tid_off_why);
	s->tid_off_why = NULL;
	char why[256] = "the size of struct pthread is not known";
	if (s->sizeof_pthread &&
	    psvc_field_read(&src, "_thread_db_pthread_tid", &rule, &f, why,
			    sizeof why) == 0) {
		s->tid_off = (uint32_t)f.offset;
		if (!f.offset)	/* where struct pthread's list links are */
			strcpy(why, "_thread_db_pthread_tid: offset 0");
	}
	if (!s->tid_off && s->ta)
		s->tid_off_why = dbs_strdup(why);
}

/* The unwound frames of a thread as the analysis' frame evidence: every
 * function name, inlined ones too, innermost first. */
static size_t thread_frames(void *ctx, const struct dbs_snapshot *snap,
			    size_t i, const char **names, uint64_t *sps, size_t max)
{
	(void)ctx;
	const struct dbs_stack *st = &snap->threads[i].stack;
	size_t n = 0;
	for (size_t k = 0; k < st->nframes && n < max; k++) {
		sps[n] = st->frames[k].sp;
		names[n++] = st->frames[k].symbol;
	}
	return n;
}

int dbs_locks_run(struct dbs_session *s, struct dbs_snapshot *snap)
{
	load_tid_offset(s);
	if (s->tid_off_why)
		dbs_add_error(&snap->warnings, &snap->nwarnings,
			       "locks: threads waiting in pthread_join cannot be "
			       "matched to the thread they join: %s",
			       s->tid_off_why);
	struct dbs_lock_input in = {
		.arch = psvc_arch(s->t),
		.tid_offset = s->tid_off,
		.sizeof_pthread = s->sizeof_pthread,
		.read = frozen_read,
		.symbol = session_symbol,
		.frames = snap->stacks ? thread_frames : NULL,
		.ctx = s->t,
		.cleanup_offset = condwait_cleanup_offset(s),
	};
	/* the layouts verified for its glibc (glibc_versions.c), never
	 * another version's */
	const char *why = NULL;
	in.glibc = dbs_glibc_layout(s->glibc_version, in.arch->id, &why);
	if (!in.glibc) {
		in.glibc_unverified = why;
		dbs_add_error(&snap->warnings, &snap->nwarnings,
			       "locks: glibc %s: %s; lock words are not decoded "
			       "and waits are not matched to pthread objects",
			       s->glibc_version[0] ? s->glibc_version : "(unknown)",
			       why);
	}
	return dbs_locks_analyse(snap, &in);
}
