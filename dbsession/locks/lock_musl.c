/*
 * lock_musl.c: musl's lock objects (docs/MUSL.md §5-§10), the musl side
 * of the lock analysis (locks_int.h).  musl's words differ from glibc's:
 * the futex is mutex+4, a normal mutex records no owner (its word is
 * EBUSY, 16: never a TID), the other mutexes record the owner's TID with
 * bit 30 "owner died" and bit 31 "waiters".  A wait is read from its
 * futex call (§6) and the words around the futex; the same objects,
 * owners, cycles and stalls as glibc's follow (lock_objects.c,
 * lock_graph.c).  A stdio FILE's lock records its owner too (§10).
 */
#include "locks_int.h"
#include "libc_musl.h"

#include <string.h>

#define M_TYPE 0
#define M_LOCK 4
#define M_WAITERS 8
#define M_COUNT 20
#define M_SIZE 40
#define M_TYPE_BITS 0x8fu	/* type 0-2, robust 4, PI 8, pshared 128 */
#define RW_SIZE 56
#define SEM_SIZE 32
/* a FILE (§10): lockcount (long) +128, mode +136, lock +140 */
#define FILE_LOCKCOUNT 128
#define FILE_LOCK 140
#define MAYBE_WAITERS 0x40000000u
/* a barrier (§9): _b_limit +8 (bit 31: process-shared), _b_count +12 */
#define B_LIMIT 8
#define B_COUNT 12

static const char NOTE_NORMAL[] =
	"owner not recorded (musl normal mutex: its word says locked, 16, "
	"never who holds it)";
static const char NOTE_ORPHAN[] =
	"its owner exited holding it (owner died, bit 30) and musl keeps no "
	"TID of it: orphaned for ever";
static const char NOTE_WRITER[] =
	"write-locked; musl records no writer";
static const char NOTE_READERS[] =
	"held by readers; musl records none of them";
static const char NOTE_COND[] =
	"a private condition variable's waiter sleeps on a node in its own "
	"stack frame; the cond and its mutex are not recorded there";
static const char NOTE_BARRIER[] =
	"a barrier's round lives on the stack of its first arrival";
static const char NOTE_FILE_ORPHAN[] =
	"its owner exited holding it (flockfile): musl leaves the word locked "
	"by nobody (0x40000000) for ever";
static const char NOTE_FILE_CHAR[] =
	"held for one character by getc/putc, which record no owner";

static bool read_words(const struct dbs_lockctx *c, uint64_t at,
		       unsigned char *w, size_t n)
{
	return dbs_lock_read(c, at, w, n);
}

static uint32_t u32(const unsigned char *w, size_t off)
{
	uint32_t v;
	memcpy(&v, w + off, 4);
	return v;
}

/* Is frame name a musl entry point containing key? (static programs
 * and a libc.so with symbols: frames are evidence) */
static bool frames_say(const struct dbs_lockctx *c, size_t ti, const char *key)
{
	size_t n = dbs_frames_load(c, ti);
	for (size_t k = 0; k < n && k < 8; k++)
		if (c->frames->names[k] && strstr(c->frames->names[k], key))
			return true;
	return false;
}

/* The thread whose struct pthread has its detach_state at addr. */
static size_t joined_thread(const struct dbs_lockctx *c, uint64_t addr)
{
	const struct dbs_musl_pthread *L = dbs_musl_layout(c->in->arch);
	for (size_t i = 0; i < c->snap->nthreads; i++) {
		const struct dbs_thread *th = &c->snap->threads[i];
		if (th->have_pthread && th->pthread + L->detach == addr)
			return i;
	}
	return SIZE_MAX;
}

static bool on_own_stack(const struct dbs_thread *th, uint64_t a)
{
	return a >= th->sp && a - th->sp < DBS_PARK_STACK_SPAN;
}

static bool on_a_stack(const struct dbs_lockctx *c, uint64_t a)
{
	for (size_t i = 0; i < c->snap->nthreads; i++)
		if (c->snap->threads[i].have_regs && on_own_stack(&c->snap->threads[i], a))
			return true;
	return false;
}

static void decide(struct dbs_lockctx *c, size_t ti)
{
	const struct dbs_wait *wt = &c->waits[ti];
	struct dbs_verdict *v = &c->vd[ti];
	const struct dbs_thread *th = &c->snap->threads[ti];
	memset(v, 0, sizeof *v);
	v->kind = DBS_LOCK_FUTEX;
	v->evidence = wt->src;
	uint64_t u = wt->uaddr;
	unsigned char w[64];
	if (dbs_wait_is_pi(wt->cmd)) {
		/* FUTEX_LOCK_PI on mutex+4 (§6) */
		if (u >= 4 && read_words(c, u - 4, w, M_SIZE) &&
		    (u32(w, M_TYPE) & 8) && !(u32(w, M_TYPE) & ~M_TYPE_BITS)) {
			v->kind = DBS_LOCK_MUTEX;
			v->object = u - 4;
			v->evidence |= DBS_EV_WORDS | DBS_EV_KERNEL;
		}
		return;
	}
	/* join: T's detach_state, value 2 or 1 (§9) */
	size_t jt = joined_thread(c, u);
	if (jt != SIZE_MAX && (wt->val == 2 || wt->val == 1)) {
		v->kind = DBS_LOCK_JOIN;
		v->object = c->snap->threads[jt].pthread;
		v->join_tid = c->snap->threads[jt].tid;
		v->evidence |= DBS_EV_THREAD;
		return;
	}
	/* a word on a stack: a private cond's waiter node (2) or a
	 * barrier's round (1: the first arrival; 0: later ones) (§7, §9) */
	if (on_own_stack(th, u) && wt->val == 2) {
		v->kind = DBS_LOCK_COND;
		v->note = NOTE_COND;
		return;
	}
	if ((on_own_stack(th, u) && wt->val == 1) ||
	    (wt->val == 0 && on_a_stack(c, u) && !on_own_stack(th, u))) {
		v->kind = DBS_LOCK_BARRIER;
		v->note = NOTE_BARRIER;
		return;
	}
	bool fr_mutex = frames_say(c, ti, "mutex_"),
	     fr_rw = frames_say(c, ti, "rwlock_"),
	     fr_sem = frames_say(c, ti, "sem_");
	/*
	 * A stdio FILE's lock (FILE+140, §10): its waiter passes the owner's
	 * word with MAYBE_WAITERS (bit 30) and never bit 31, which every
	 * other musl wait on a word of its own sets or leaves as a small
	 * value; the owner is a thread of the process (0: one that exited
	 * holding it), the FILE's lockcount a flockfile depth and its mode
	 * an orientation (-1, 0, 1).
	 */
	if (!fr_mutex && !fr_rw && !fr_sem && wt->private_op &&
	    (wt->val & 0xc0000000u) == MAYBE_WAITERS && u >= FILE_LOCK &&
	    read_words(c, u - (FILE_LOCK - FILE_LOCKCOUNT), w, 16)) {
		pid_t owner = (pid_t)(wt->val & 0x3fffffffu);
		int64_t depth;
		memcpy(&depth, w, 8);
		int32_t mode = (int32_t)u32(w, 8);
		if ((owner == 0 || owner == 0x3fffffff ||
		     dbs_thread_by_nstid(c, owner) != SIZE_MAX) &&
		    depth >= 0 && depth < 65536 && mode >= -1 && mode <= 1) {
			v->kind = DBS_LOCK_FILE;
			v->object = u - FILE_LOCK;
			v->evidence |= DBS_EV_WORDS;
			return;
		}
	}
	/* a mutex: the futex is mutex+4, its type plausible, the value
	 * the word it saw with bit 31 (§5, §6) */
	if (!fr_rw && !fr_sem && u >= 4 && read_words(c, u - 4, w, M_SIZE)) {
		uint32_t type = u32(w, M_TYPE);
		bool normal = (type & 15) == 0;
		bool fits = !(type & ~M_TYPE_BITS) && (wt->val & 0x80000000u) &&
			    (normal ? wt->val == 0x80000010u
				    : (wt->val & 0x7fffffffu) != 0);
		if (fits || fr_mutex) {
			v->kind = DBS_LOCK_MUTEX;
			v->object = u - 4;
			v->evidence |= (fits ? DBS_EV_WORDS : 0) |
				       (fr_mutex ? DBS_EV_FRAMES : 0);
			return;
		}
	}
	/* a process-shared cond: its waiters sleep on _c_seq (+8) with a
	 * shared futex, and its _c_shared (+0) is (void *)-1 (§6, §7) */
	if (!wt->private_op && u >= 8 && read_words(c, u - 8, w, 16) &&
	    u32(w, 0) == 0xffffffffu && u32(w, 4) == 0xffffffffu) {
		v->kind = DBS_LOCK_COND;
		v->object = u - 8;
		v->evidence |= DBS_EV_WORDS;
		return;
	}
	/* a process-shared barrier: its arrivals sleep on _b_count with a
	 * shared futex, passing the count, and _b_limit (count - 1) has
	 * bit 31 (§9) */
	if (!wt->private_op && u >= B_COUNT && read_words(c, u - B_COUNT, w, 16)) {
		uint32_t limit = u32(w, B_LIMIT), count = u32(w, B_COUNT);
		if ((limit & 0x80000000u) && count == wt->val && count >= 1 &&
		    count <= (limit & 0x7fffffffu)) {
			v->kind = DBS_LOCK_BARRIER;
			v->object = u - B_COUNT;
			v->evidence |= DBS_EV_WORDS;
			return;
		}
	}
	if (!read_words(c, u, w, 16))
		return;
	uint32_t shared = u32(w, 8);
	if (shared != 0 && shared != 128)
		return;
	/*
	 * A semaphore: 1.2.4+ waiters pass 0x80000000 (no rwlock waits on
	 * that), up to 1.2.3 -1, which a write-locked rwlock's waiter passes
	 * too: then the frames decide, else the word at +8 against the
	 * futex's private flag.  A sem's __val[2] is 128 when it is private,
	 * a rwlock's _rw_shared 128 when it is shared, and each waits with
	 * the private flag exactly when it is private (§6, §8, §9).
	 */
	bool minus1 = !fr_rw && !fr_sem && wt->val == 0xffffffffu;
	bool sem_words = (shared == 128) == wt->private_op;
	if (fr_sem || (!fr_rw && wt->val == 0x80000000u) ||
	    (minus1 && sem_words)) {
		v->kind = DBS_LOCK_SEM;
		v->object = u;
		v->evidence |= fr_sem ? DBS_EV_FRAMES : DBS_EV_WORDS;
		return;
	}
	if (fr_rw || (minus1 && !sem_words) ||
	    ((wt->val & 0x80000000u) && wt->val != 0xffffffffu &&
	     (wt->val & 0x7fffffffu) != 0)) {
		v->kind = DBS_LOCK_RWLOCK;
		v->object = u;
		/* a writer held it: anybody waits; readers hold it: a writer
		 * waits */
		v->mode = (wt->val & 0x7fffffffu) == 0x7fffffffu ? DBS_MODE_NONE
								  : DBS_MODE_WRITE;
		v->evidence |= fr_rw ? DBS_EV_FRAMES : DBS_EV_WORDS;
	}
}

void dbs_musl_decide_all(struct dbs_lockctx *c)
{
	for (size_t i = 0; i < c->snap->nthreads; i++) {
		dbs_wait_of(c->in->arch, &c->snap->threads[i], &c->waits[i]);
		if (c->waits[i].valid)
			decide(c, i);
	}
}

bool dbs_musl_lock_load(const struct dbs_lockctx *c, struct dbs_lock *l)
{
	size_t sz = 4;
	uint64_t at = l->addr;
	l->musl = true;
	if (l->object_known)
		switch (l->kind) {
		case DBS_LOCK_MUTEX: sz = M_SIZE; break;
		case DBS_LOCK_RWLOCK: sz = RW_SIZE; break;
		case DBS_LOCK_SEM: sz = SEM_SIZE; break;
		case DBS_LOCK_JOIN: sz = 64; break;
		case DBS_LOCK_FILE: sz = 16; at += FILE_LOCKCOUNT; break;
		default: sz = 4; break;
		}
	if (!read_words(c, at, l->words, sz))
		return false;
	l->nwords = sz;
	const unsigned char *w = l->words;
	switch (l->kind) {
	case DBS_LOCK_MUTEX: {
		if (!l->object_known)
			return false;
		struct dbs_mutex_info *m = &l->u.mutex;
		uint32_t type = u32(w, M_TYPE);
		m->kind_word = (int32_t)type;
		m->type = type & 3;
		m->robust = type & 4;
		m->pi = type & 8;
		m->pshared = type & 128;
		m->lock = u32(w, M_LOCK);
		m->nusers = u32(w, M_WAITERS);
		m->count = u32(w, M_COUNT) + (m->lock ? 1 : 0);
		m->owner_died = (type & 15) && (m->lock & 0x40000000u);
		m->notrecoverable = (type & 15) &&
				    (m->lock & 0x3fffffffu) == 0x3fffffffu;
		m->inconsistent = m->robust && m->owner_died &&
				  (m->lock & 0x3fffffffu) != 0;
		m->owner_field = (type & 15) ? (int32_t)(m->lock & 0x3fffffffu) : 0;
		return true;
	}
	case DBS_LOCK_RWLOCK: {
		struct dbs_rwlock_info *r = &l->u.rwlock;
		uint32_t lk = u32(w, 0) & 0x7fffffffu;
		r->readers_word = u32(w, 0);
		r->wrlocked = lk == 0x7fffffffu;
		r->nreaders = r->wrlocked ? 0 : lk;
		r->shared = u32(w, 8) == 128;
		return true;
	}
	case DBS_LOCK_SEM: {
		struct dbs_sem_info *s = &l->u.sem;
		int32_t val = (int32_t)u32(w, 0);
		s->value = val < 0 ? 0 : (uint32_t)val & 0x7fffffffu;
		s->nwaiters = u32(w, 4);
		s->pshared = u32(w, 8) == 0;
		return true;
	}
	case DBS_LOCK_JOIN: {
		const struct dbs_musl_pthread *L = dbs_musl_layout(c->in->arch);
		l->u.join.pthread = l->addr;
		l->u.join.target = (pid_t)u32(w, L->tid);
		return true;
	}
	default:
		return true;
	}
}

void dbs_musl_recorded_owner(struct dbs_lock *l, pid_t *ret_owner,
			     enum dbs_owner_state *ret_state)
{
	*ret_owner = 0;
	*ret_state = DBS_OWNER_NONE;
	switch (l->kind) {
	case DBS_LOCK_MUTEX: {
		const struct dbs_mutex_info *m = &l->u.mutex;
		if (!(m->lock & 0x7fffffffu))
			return;	/* free: its waiters are being woken */
		if ((m->kind_word & 15) == 0) {
			/* normal: 16 is EBUSY, never a TID (§5) */
			*ret_state = DBS_OWNER_UNKNOWN;
			l->note = NOTE_NORMAL;
			return;
		}
		pid_t tid = (pid_t)(m->lock & 0x3fffffffu);
		if (tid == 0 && m->owner_died) {
			*ret_state = DBS_OWNER_DEAD;
			l->orphaned = true;
			l->note = NOTE_ORPHAN;
			return;
		}
		if (tid == 0x3fffffff) {
			*ret_state = DBS_OWNER_UNKNOWN;
			return;
		}
		*ret_owner = tid;
		*ret_state = DBS_OWNER_LIVE;
		return;
	}
	case DBS_LOCK_RWLOCK:
		if (l->u.rwlock.wrlocked) {
			*ret_state = DBS_OWNER_UNKNOWN;
			l->note = NOTE_WRITER;
		} else if (l->u.rwlock.nreaders) {
			*ret_state = DBS_OWNER_UNKNOWN;
			l->nholders = l->u.rwlock.nreaders;
			l->note = NOTE_READERS;
		}
		return;
	case DBS_LOCK_JOIN:
		if (l->u.join.target) {
			*ret_owner = l->u.join.target;
			*ret_state = DBS_OWNER_LIVE;
		}
		return;
	case DBS_LOCK_FILE: {
		if (!l->object_known || l->nwords < 16)
			return;
		/* -1: one thread, no locking; 0: free (§10) */
		uint32_t word = u32(l->words, FILE_LOCK - FILE_LOCKCOUNT);
		pid_t tid = (pid_t)(word & 0x3fffffffu);
		if (word == 0xffffffffu || word == 0)
			return;
		if (tid == 0) {
			*ret_state = DBS_OWNER_DEAD;
			l->orphaned = true;
			l->note = NOTE_FILE_ORPHAN;
		} else if (tid == 0x3fffffff) {
			*ret_state = DBS_OWNER_UNKNOWN;
			l->note = NOTE_FILE_CHAR;
		} else {
			*ret_owner = tid;
			*ret_state = DBS_OWNER_LIVE;
		}
		return;
	}
	default:
		return;
	}
}
