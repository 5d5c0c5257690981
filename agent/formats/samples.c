/*
 * samples.c: what --folded and --pprof count.  Every update adds one
 * sample per thread: its name, state, what it was doing (the leaf
 * pseudo-frame) and its stack, root first.  Identical samples are counted
 * together, so a watch run of a day holds as many entries as there are
 * distinct stacks, not updates times threads.
 *
 * Strings, frames and samples are interned in tables keyed by their bytes
 * (common/btab.c): a sample's key is the pointers of its interned parts,
 * so two samples are equal when their keys' bytes are.
 */
#include "formats.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "array.h"

/* ---- the samples -------------------------------------------------------------- */

struct samples {
	struct btab strings;	/* key: the string's bytes */
	struct btab frames;	/* key: a struct sframe */
	struct btab keys;	/* key: a sample's parts; value: its index */
	struct sample *v;
	size_t n, cap;
	uint64_t updates, lost;
	int64_t first_ns, last_ns;
	const char *exe;
};

struct samples *samples_new(void)
{
	return calloc(1, sizeof(struct samples));
}

void samples_free(struct samples *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->n; i++)
		free(s->v[i].frames);
	free(s->v);
	btab_free(&s->strings);
	btab_free(&s->frames);
	btab_free(&s->keys);
	free(s);
}

static const char *intern_n(struct samples *s, const char *str, size_t len)
{
	bool added;
	struct blob *b = btab_get(&s->strings, str, len, 0, true, &added);
	return b ? b->key : NULL;
}

static const char *intern(struct samples *s, const char *str)
{
	return str ? intern_n(s, str, strlen(str)) : NULL;
}

static const struct sframe *intern_frame(struct samples *s, const char *name,
					 const char *file, int line)
{
	struct sframe f = { intern(s, name), intern(s, file), line };
	if (!f.name || (file && !f.file))
		return NULL;
	bool added;
	struct blob *b = btab_get(&s->frames, &f, sizeof f, 0, true, &added);
	return b ? b->key : NULL;
}

const char *formats_state_label(char state)
{
	switch (state) {
	case 'R': return "running";
	case 'S': return "sleeping";
	case 'D': return "disk_sleep";
	case 'T': return "stopped";
	case 't': return "tracing_stop";
	case 'Z': return "zombie";
	case 'X': return "dead";
	case 'I': return "idle";
	case 'P': return "parked";
	default: return "unknown";
	}
}

/* What the thread was doing, most specific first: the object of a futex
 * wait, a system call, user space, or only /proc's word for it. */
static void leaf_of(const tinspect_thread *th, char *what, size_t len,
		    const tinspect_symbol **ret_lock)
{
	*ret_lock = NULL;
	const tinspect_wait *w = tinspect_thread_wait(th);
	if (tinspect_thread_jobctl_stopped(th)) {
		snprintf(what, len, "stopped");
		return;
	}
	if (w) {
		enum tinspect_lock_kind kind = tinspect_wait_kind(w);
		enum tinspect_wait_mode mode = tinspect_wait_mode(w);
		const tinspect_lock *l = tinspect_wait_lock(w);
		const tinspect_symbol *sym = l ? tinspect_lock_symbol(l) : NULL;
		if (kind == TINSPECT_LOCK_FUTEX)
			snprintf(what, len, "futex");
		else
			snprintf(what, len, "futex %s%s", tinspect_lock_kind_name(kind),
				 agent_mode_mark(mode));
		if (sym && tinspect_symbol_name(sym))
			*ret_lock = sym;
		return;
	}
	struct tinspect_syscall sc;
	if (tinspect_thread_syscall(th, &sc, sizeof sc) == 0) {
		if (sc.name)
			snprintf(what, len, "syscall %s", sc.name);
		else
			snprintf(what, len, "syscall %ld", sc.nr);
		return;
	}
	/* registers read and no system call: it was in user space */
	if (tinspect_thread_regs(th, NULL, NULL, NULL) == 0) {
		snprintf(what, len, "running");
		return;
	}
	snprintf(what, len, "%s", formats_state_label(tinspect_thread_state(th)));
}

/* A lock symbol with its offset ("bank_locks+0x28"), as one string. */
static const char *lock_name(struct samples *s, const tinspect_symbol *sym)
{
	const char *name = tinspect_symbol_name(sym);
	uint64_t off = tinspect_symbol_offset(sym);
	if (!off)
		return intern(s, name);
	char *buf;
	if (asprintf(&buf, "%s+0x%" PRIx64, name, off) < 0)
		return NULL;
	const char *r = intern(s, buf);
	free(buf);
	return r;
}

static const char *frame_name(const tinspect_frame *f, char *buf, size_t len)
{
	const char *symbol = tinspect_frame_symbol(f);
	const char *module = tinspect_frame_module(f);
	if (symbol)
		return symbol;
	if (module)
		return agent_module_offset(buf, len, module,
					   tinspect_frame_module_offset(f));
	return "??";
}

/* The key of a sample: its interned parts' pointers. */
enum { KEY_NAME, KEY_STATE, KEY_WHAT, KEY_LOCK, KEY_FRAMES };

static int add_thread(struct samples *s, const tinspect_thread *th)
{
	size_t nframes = tinspect_thread_nframes(th);
	const void **key = calloc(KEY_FRAMES + nframes, sizeof *key);
	if (!key)
		return -ENOMEM;
	int err = -ENOMEM;
	size_t namelen = 0;
	const char *name = tinspect_thread_name(th, &namelen);
	char what[96], buf[512];
	const tinspect_symbol *lock;
	leaf_of(th, what, sizeof what, &lock);
	key[KEY_NAME] = intern_n(s, name ? name : "", name ? namelen : 0);
	key[KEY_STATE] = intern(s, formats_state_label(tinspect_thread_state(th)));
	key[KEY_WHAT] = intern(s, what);
	key[KEY_LOCK] = lock ? lock_name(s, lock) : NULL;
	if (!key[KEY_NAME] || !key[KEY_STATE] || !key[KEY_WHAT] || (lock && !key[KEY_LOCK]))
		goto out;
	for (size_t i = 0; i < nframes; i++) {
		/* frames are innermost first; samples root first */
		const tinspect_frame *f = tinspect_thread_frame(th, nframes - 1 - i);
		key[KEY_FRAMES + i] = intern_frame(s, frame_name(f, buf, sizeof buf),
						   tinspect_frame_file(f),
						   tinspect_frame_line(f));
		if (!key[KEY_FRAMES + i])
			goto out;
	}
	bool added;
	size_t klen = (KEY_FRAMES + nframes) * sizeof *key;
	/* past the cap only samples seen before still count */
	bool may_add = s->n < SAMPLES_MAX_DISTINCT;
	struct blob *b = btab_get(&s->keys, key, klen, s->n, may_add, &added);
	if (!b) {
		err = may_add ? -ENOMEM : -E2BIG;
		goto out;
	}
	if (added) {
		/* until the sample exists, the key names none (out of memory
		 * below leaves it so: that stack is lost, not misattributed) */
		b->value = SIZE_MAX;
		if (array_grow(&s->v, &s->cap, s->n + 1, sizeof *s->v, 256))
			goto out;
		const void **frames = malloc((nframes ? nframes : 1) * sizeof *frames);
		if (!frames)
			goto out;
		memcpy(frames, key + KEY_FRAMES, nframes * sizeof *frames);
		b->value = s->n;
		s->v[s->n++] = (struct sample){
			.thread_name = key[KEY_NAME],
			.state = key[KEY_STATE],
			.leaf = { key[KEY_WHAT], key[KEY_LOCK] },
			.frames = (const struct sframe **)frames,
			.nframes = nframes,
		};
	}
	if (b->value >= s->n)
		goto out;
	s->v[b->value].count++;
	err = 0;
out:
	free(key);
	return err;
}

int samples_add(struct samples *s, const tinspect_snapshot *snap)
{
	int err = 0;
	int64_t sec;
	long nsec;
	tinspect_snapshot_captured_at(snap, &sec, &nsec);
	int64_t t = sec * 1000000000 + nsec;
	if (!s->updates)
		s->first_ns = t;
	s->last_ns = t;
	s->updates++;
	if (tinspect_snapshot_exe(snap))
		s->exe = intern(s, tinspect_snapshot_exe(snap));
	for (size_t i = 0, n = tinspect_snapshot_nthreads(snap); i < n; i++) {
		int e = add_thread(s, tinspect_snapshot_thread(snap, i));
		if (e) {
			s->lost++;
			err = err ? err : e;
		}
	}
	return err;
}

size_t samples_n(const struct samples *s)
{
	return s->n;
}

const struct sample *samples_get(const struct samples *s, size_t i)
{
	return i < s->n ? &s->v[i] : NULL;
}

uint64_t samples_updates(const struct samples *s)
{
	return s->updates;
}

uint64_t samples_lost(const struct samples *s)
{
	return s->lost;
}

int64_t samples_first_ns(const struct samples *s)
{
	return s->first_ns;
}

int64_t samples_last_ns(const struct samples *s)
{
	return s->last_ns;
}

const char *samples_exe(const struct samples *s)
{
	return s->exe;
}
