/*
 * libc_musl.c: musl behind the C library seam (libc.h).  musl has no
 * libthread_db: each thread's struct pthread is at its thread pointer,
 * and is trusted only once its self pointer and TID say it is that
 * thread's (docs/MUSL.md §2-§3).  Which musl runs is read from its file
 * (dynamic) or told by its symbols or its threads (static, §1); nothing
 * of the target runs.
 */
#include "dbs_int.h"
#include "libc_musl.h"

#include "array.h"

#include <errno.h>
#include <gelf.h>
#include <libelf.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The versions every fact tinspect reads was checked on (docs/MUSL.md,
 * "Versions"): the layouts are used for these only. */
static const char *const verified[] = { "1.2.2", "1.2.3", "1.2.4", "1.2.5" };

/* struct pthread, 1.2.2 - 1.2.5 (docs/MUSL.md §2) */
static const struct dbs_musl_pthread layout_x86_64 = {
	.tp_to_self = 0, .self = 0, .dtv = 8, .prev = 16, .next = 24,
	.tid = 48, .errno_val = 52, .detach = 56, .map_base = 72,
	.map_size = 80, .stack = 88, .stack_size = 96, .guard_size = 104,
	.result = 112, .tsd = 128, .robust_head = 136, .robust_off = 144,
	.robust_pending = 152, .h_errno_val = 160, .stdio_locks = 192,
	.size = 200,
};
static const struct dbs_musl_pthread layout_aarch64 = {
	.tp_to_self = 200, .self = 0, .dtv = 192, .prev = 8, .next = 16,
	.tid = 32, .errno_val = 36, .detach = 40, .map_base = 56,
	.map_size = 64, .stack = 72, .stack_size = 80, .guard_size = 88,
	.result = 96, .tsd = 112, .robust_head = 120, .robust_off = 128,
	.robust_pending = 136, .h_errno_val = 144, .stdio_locks = 176,
	.size = 200,
};

/* musl's layout per architecture: a row for each, so that a new one is
 * not read with another's offsets */
static const struct dbs_musl_pthread *const layouts[ARCH_COUNT] = {
	[ARCH_X86_64] = &layout_x86_64,
	[ARCH_AARCH64] = &layout_aarch64,
};

const struct dbs_musl_pthread *dbs_musl_layout(const struct arch_desc *a)
{
	return layouts[a->id];
}

bool dbs_musl_version_verified(const char *v)
{
	for (size_t i = 0; i < sizeof verified / sizeof verified[0]; i++)
		if (!strcmp(v, verified[i]))
			return true;
	return false;
}

/*
 * §1's rule over a .rodata: the one run "1.DIGITS.DIGITS" (with an
 * optional "-SUFFIX" of a build from git) that ends with a NUL and is not
 * preceded by a digit or a dot.  0 and the version, -ENOENT (none), or
 * -EEXIST (several: unknown).
 */
int dbs_musl_version_scan(const char *b, size_t n, char *out, size_t outlen)
{
	int found = 0;
	for (size_t i = 0; i + 5 < n; i++) {
		if (b[i] != '1' || b[i + 1] != '.')
			continue;
		if (i > 0 && ((b[i - 1] >= '0' && b[i - 1] <= '9') || b[i - 1] == '.'))
			continue;
		size_t j = i + 2, d1 = 0, d2 = 0;
		while (j < n && b[j] >= '0' && b[j] <= '9')
			j++, d1++;
		if (!d1 || j >= n || b[j] != '.')
			continue;
		j++;
		while (j < n && b[j] >= '0' && b[j] <= '9')
			j++, d2++;
		if (!d2 || j >= n)
			continue;
		if (b[j] == '-') {
			size_t k = j + 1;
			while (k < n && b[k] > ' ' && b[k] < 0x7f)
				k++;
			if (k == j + 1)
				continue;
			j = k;
		}
		if (j >= n || b[j] != '\0' || j - i >= outlen)
			continue;
		if (found++)
			return -EEXIST;
		memcpy(out, b + i, j - i);
		out[j - i] = '\0';
	}
	return found ? 0 : -ENOENT;
}

/* The dynamic linker's usage message: musl's, in every libc.so (§1). */
static const char musl_banner[] = "musl libc (";

/*
 * Whether fd is musl's libc.so (its .rodata holds the dynamic linker's
 * usage message) and, if so, its version from the same .rodata.
 * 1 musl, 0 not, negative errno if the file cannot be read.
 */
static int musl_file(int fd, char *ver, size_t verlen)
{
	ver[0] = '\0';
	elf_version(EV_CURRENT);
	Elf *e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!e)
		return -EIO;
	size_t shstrndx;
	int ret = 0;
	if (elf_getshdrstrndx(e, &shstrndx) == 0) {
		for (Elf_Scn *scn = elf_nextscn(e, NULL); scn;
		     scn = elf_nextscn(e, scn)) {
			GElf_Shdr sh;
			if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS)
				continue;
			const char *nm = elf_strptr(e, shstrndx, sh.sh_name);
			if (!nm || strcmp(nm, ".rodata"))
				continue;
			Elf_Data *d = elf_getdata(scn, NULL);
			if (!d || !d->d_buf || d->d_size > (64u << 20))
				break;
			if (memmem(d->d_buf, d->d_size, musl_banner,
				   sizeof musl_banner - 1)) {
				ret = 1;
				if (dbs_musl_version_scan(d->d_buf, d->d_size, ver,
							  verlen))
					ver[0] = '\0';
			}
			break;
		}
	}
	elf_end(e);
	return ret;
}

/* The musl symbols of a static program's symbol table (§1). */
static bool static_symbols(struct psvc_target *t)
{
	static const char *const names[] = { "__thread_list_lock", "__libc",
					     "__init_tp", "__copy_tls" };
	uint64_t a;
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
		if (psvc_lookup_symbol(t, names[i], &a))
			return false;
	return true;
}

/* Whether a file holds what glibc's static programs hold ("GLIBC_" of
 * the tunables, "glibc" in messages): then it is not musl. */
static bool file_says_glibc(int fd)
{
	enum { CHUNK = 1 << 20, MAX = 32 << 20 };
	char *b = malloc(CHUNK + 16);
	bool yes = false;
	size_t keep = 0;
	off_t off = 0;
	while (b && off < MAX && !yes) {
		ssize_t n = pread(fd, b + keep, CHUNK, off);
		if (n <= 0)
			break;
		size_t have = keep + (size_t)n;
		yes = memmem(b, have, "GLIBC_", 6) || memmem(b, have, "glibc", 5);
		keep = have < 8 ? have : 8;
		memmove(b, b + have - keep, keep);
		off += n;
	}
	free(b);
	return yes;
}

static bool musl_detect(struct dbs_session *s)
{
	struct psvc_target *t = s->t;
	struct psvc_module *ldso = psvc_module_flagged(t, PSVC_MOD_LDSO);
	struct psvc_module *exe = psvc_module_flagged(t, PSVC_MOD_EXE);
	s->musl_static = s->musl_unproved = false;
	if (ldso) {
		/* the interpreter is musl's libc.so itself (§1): a name in
		 * the maps is a hint, its .rodata the test */
		int fd = psvc_module_open_fd(t, ldso);
		if (fd < 0)
			return false;
		int r = musl_file(fd, s->libc_version, sizeof s->libc_version);
		close(fd);
		if (r != 1)
			return false;
		s->libc_version_src = s->libc_version[0] ? "libc.so .rodata" : NULL;
		return true;
	}
	if (!exe)
		return false;
	/* static: no version in the program (§1) */
	s->musl_static = true;
	if (static_symbols(t)) {
		s->libc_version_src = NULL;
		return true;
	}
	int lerr = psvc_module_load_elf(t, exe);
	if ((!lerr && exe->has_symtab) || (lerr && !s->from_core)) {
		s->musl_static = false;	/* symbols, none of musl's */
		return false;
	}
	if (!lerr) {
		/* stripped: not glibc's, and then proved (or not) by
		 * every thread's struct during the stop (§1, §3) */
		int fd = psvc_module_open_fd(t, exe);
		bool glibc = fd < 0 || file_says_glibc(fd);
		if (fd >= 0)
			close(fd);
		if (glibc) {
			s->musl_static = false;
			return false;
		}
	}
	/* (a core whose executable could not be proved the one it
	 * mapped, a build without a build ID: nothing of the file is
	 * believed, every thread's struct decides, its TID included) */
	s->musl_unproved = true;
	return true;
}

/* Why the layouts are not used for this process, or NULL. */
static const char *musl_unverified(const struct dbs_session *s)
{
	if (s->musl_static)
		return NULL;	/* 1.2.2-1.2.5 share them; each struct checked */
	if (!s->libc_version[0])
		return "musl's version could not be read from its libc.so "
		       "(docs/MUSL.md §1), so its private layouts are not used";
	if (!dbs_musl_version_verified(s->libc_version))
		return "this musl version is not one whose layouts were verified "
		       "(1.2.2-1.2.5, docs/MUSL.md)";
	return NULL;
}

static void musl_setup(struct dbs_session *s)
{
	const char *why = musl_unverified(s);
	free(s->tdb_detail);
	s->tdb_status = DBS_TDB_NOT_USED;
	s->sizeof_pthread = dbs_musl_layout(psvc_arch(s->t))->size;
	s->desc_pieces.n = 0;	/* each struct copied whole */
	s->layout_ok = !why;
	if (why)
		s->tdb_detail = dbs_format("musl has no libthread_db, and %s: threads "
					   "are listed from /proc only", why);
	else if (s->musl_static)
		s->tdb_detail = dbs_strdup(
			"musl has no libthread_db: threads identified by the "
			"struct pthread at each thread pointer, checked (self, TID); "
			"a static program records no musl version, the layout of "
			"1.2.2-1.2.5 is used");
	else
		s->tdb_detail = dbs_strdup(
			"musl has no libthread_db: threads identified by the "
			"struct pthread at each thread pointer, checked (self, TID)");
}

static uint64_t word(const unsigned char *b, uint32_t off)
{
	uint64_t v;
	memcpy(&v, b + off, 8);
	return v;
}

static int32_t i32(const unsigned char *b, uint32_t off)
{
	int32_t v;
	memcpy(&v, b + off, 4);
	return v;
}

/* One task's struct pthread, read in the stop (from the copies where
 * capture.c made them), checked before anything of it is believed. */
static void identify_task(struct dbs_session *s, const struct psvc_task *k,
			  struct dbs_libc_thread *lt)
{
	struct psvc_target *t = s->t;
	const struct dbs_musl_pthread *L = dbs_musl_layout(psvc_arch(t));
	unsigned char b[256];
	memset(lt, 0, sizeof *lt);
	if (!(k->flags & PSVC_TASK_HAVE_REGS) || !k->tp) {
		lt->why = "no thread pointer";
		return;
	}
	uint64_t pd = k->tp - L->tp_to_self;
	if (psvc_read(t, pd, b, L->size)) {
		lt->why = "its struct pthread could not be read";
		return;
	}
	pid_t want = k->info.ns_tid ? k->info.ns_tid
		     : psvc_same_pidns(t) ? k->tid : 0;
	if (!want && s->musl_unproved)
		want = k->tid;	/* nothing proves musl but the TIDs */
	if (word(b, L->self) != pd) {
		lt->why = "the word at its thread pointer is not musl's self pointer";
		return;
	}
	int32_t tid = i32(b, L->tid);
	if (want && tid != want) {
		lt->why = tid == 0 ? "its struct pthread says it has exited (TID 0)"
				   : "its struct pthread names another TID";
		return;
	}
	lt->have = true;
	lt->pthread = pd;
	lt->dtv = word(b, L->dtv);
	lt->have_errno = true;
	lt->errno_val = i32(b, L->errno_val);
	switch (i32(b, L->detach)) {
	case 0: lt->detach = DBS_DETACH_EXITED; break;
	case 1: lt->detach = DBS_DETACH_EXITING; break;
	case 2: lt->detach = DBS_DETACH_JOINABLE; break;
	case 3: lt->detach = DBS_DETACH_DETACHED; break;
	default: lt->detach = DBS_DETACH_UNKNOWN; break;
	}
	uint64_t stack = word(b, L->stack), size = word(b, L->stack_size);
	uint64_t map_base = word(b, L->map_base), guard = word(b, L->guard_size);
	lt->tsd = word(b, L->tsd);
	/* a static program without pthread_key_create: __pthread_tsd_size
	 * 0, tsd one past the mapping (§13) */
	lt->tsd_none = stack && map_base &&
		       lt->tsd == map_base + word(b, L->map_size);
	uint64_t head = word(b, L->robust_head);
	lt->robust_head = head == pd + L->robust_head ? 0 : head;
	/* the main thread: no stack of musl's (§3) */
	lt->is_main = stack == 0;
	if (lt->is_main)
		return;
	if (size && size < stack) {
		lt->stack_lo = stack - size;
		lt->stack_hi = stack;
	}
	if (map_base && guard && map_base + guard > map_base) {
		lt->guard_lo = map_base;
		lt->guard_hi = map_base + guard;
	}
	/* start_args { start_func, start_arg, ... } just below the stack's
	 * top (§3): its routine must be code of a module */
	uint64_t sa = (stack & ~(uint64_t)7) - 32, fn;
	if (psvc_read(t, sa, &fn, 8) == 0 && fn && psvc_module_for_addr(t, fn))
		lt->start = fn;
}

/* More than this many mutexes held by one thread: the chain is taken to
 * be damaged. */
#define CHAIN_MAX 4096

static int held_add(struct dbs_session *s, size_t *cap, pid_t tid, uint64_t addr)
{
	if (array_grow(&s->musl_held, cap, s->nmusl_held + 1,
		       sizeof *s->musl_held, 32))
		return -ENOMEM;
	s->musl_held[s->nmusl_held++] = (struct dbs_musl_held){ tid, addr };
	return 0;
}

/*
 * During the stop: the mutexes on a thread's robust_list (§5): head
 * points to the _m_next field (+32) of the mutex locked last, each
 * _m_next to the one before, the last back to &robust_list.head.  Each
 * node is read now, from the stopped target; a mutex is listed only if
 * its lock word names the thread (bits 0-29).  A chain that cannot be
 * followed to its end gives an entry with addr 0.
 */
static int walk_chain(struct dbs_session *s, const struct psvc_task *k,
		      const struct dbs_libc_thread *lt, size_t *cap)
{
	struct psvc_target *t = s->t;
	const struct dbs_musl_pthread *L = dbs_musl_layout(psvc_arch(t));
	uint64_t end = lt->pthread + L->robust_head, e = lt->robust_head;
	pid_t want = k->info.ns_tid ? k->info.ns_tid
		     : psvc_same_pidns(t) ? k->tid : 0;
	if (!want && e && e != end)
		return held_add(s, cap, k->tid, 0);	/* whose TID? unknown */
	for (size_t n = 0; e && e != end; n++) {
		unsigned char m[40];
		if (n == CHAIN_MAX || e < 32 || psvc_read(t, e - 32, m, sizeof m))
			return held_add(s, cap, k->tid, 0);
		int32_t type = i32(m, 0);
		uint32_t lock = (uint32_t)i32(m, 4);
		if ((type & 15) && (pid_t)(lock & 0x3fffffff) == want &&
		    held_add(s, cap, k->tid, e - 32))
			return -ENOMEM;
		e = word(m, 32);
	}
	return 0;
}

static void musl_gather(struct dbs_session *s, struct tdb_result *res)
{
	s->nmusl_held = 0;
	s->musl_held_lost = false;
	if (!res || !s->layout_ok)
		return;
	size_t cap = 0;
	free(s->musl_held);
	s->musl_held = NULL;
	struct psvc_target *t = s->t;
	size_t n = psvc_ntasks(t), good = 0, bad = 0;
	for (size_t i = 0; i < n; i++) {
		struct psvc_task *k = psvc_task_at(t, i);
		if (k->flags & PSVC_TASK_GONE)
			continue;
		identify_task(s, k, &res[i].lt);
		if (res[i].lt.have)
			good++;
		else if (k->flags & PSVC_TASK_HAVE_REGS)
			bad++;
	}
	if (s->musl_unproved) {
		/* a stripped static program is musl only if its threads'
		 * structs are musl's, every one of them */
		if (!good || bad) {
			for (size_t i = 0; i < n; i++)
				memset(&res[i].lt, 0, sizeof res[i].lt);
			good = 0;
		}
	}
	for (size_t i = 0; good && i < n; i++) {
		struct psvc_task *k = psvc_task_at(t, i);
		if (res[i].lt.have && (k->flags & PSVC_TASK_STOPPED) &&
		    walk_chain(s, k, &res[i].lt, &cap)) {
			/* out of memory: nothing known of anybody */
			s->musl_held_lost = true;
			break;
		}
	}
	s->threads_source = good ? DBS_THREADS_STRUCT_PTHREAD : DBS_THREADS_PROC;
}

static void musl_identify(struct dbs_session *s, struct dbs_snapshot *snap,
			  struct dbs_thread *th, const struct tdb_result *r)
{
	(void)snap;
	const struct dbs_libc_thread *lt = &r->lt;
	if (!s->layout_ok || s->threads_source != DBS_THREADS_STRUCT_PTHREAD)
		return;
	if (!lt->have) {
		if (lt->why)
			dbs_add_error(&th->errors, &th->nerrors, "musl: %s", lt->why);
		return;
	}
	th->have_pthread = true;
	th->pthread = lt->pthread;
	th->td_state = lt->detach == DBS_DETACH_EXITED ? TD_THR_ZOMBIE
						      : TD_THR_ACTIVE;
	th->is_main = lt->is_main;
	th->detach_state = lt->detach;
	if (!th->is_main && lt->start)
		dbs_symbolize(s->t, lt->start, &th->start);
}

const struct dbs_libc_ops dbs_libc_musl = {
	.name = "musl",
	.detect = musl_detect,
	.setup = musl_setup,
	.gather = musl_gather,
	.identify = musl_identify,
	.locks_unverified = musl_unverified,
};
