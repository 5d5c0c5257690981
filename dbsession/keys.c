/*
 * keys.c: pthread keys (--keys).  libthread_db's td_thr_tsd and
 * td_ta_tsd_iter are broken on LP64 glibc (GLIBC-NOTES.md §7), so the
 * layout is read the way they should: __pthread_keys[k].seq odd = key k in
 * use; thread value at pd->specific[k / L2][k % L2] = {seq, data}, valid
 * only if its seq equals the key's (else the key was deleted and maybe
 * re-created since the thread set it: pthread_getspecific returns NULL).
 *
 * Every offset and size comes from libthread_db's own descriptors in libc
 * (_thread_db_*: uint32 {size in bits, count, offset}), checked for sanity,
 * so that another glibc's layout is read right or not at all.  Checked on
 * glibc 2.36 x86_64: __pthread_keys {128, 1024, 0}, key_struct seq @0 /
 * destr @8 (16 B), pthread.specific {2048, 1, 1296} (32 pointers),
 * key_data seq @0 / data @8 (16 B), level2.data {128, 32, 0}.
 *
 * During the stop: __pthread_keys in one batch, then every thread's
 * second-level blocks in one batch (the first one, specific_1stblock, is
 * inside struct pthread, already in the page cache); only the {seq, data}
 * of keys in use are copied.  Symbolizing destructors waits for the resume.
 */
#include "dbs_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define MAX_KEYS 65536u
#define PTR_SIZE 8u	/* LP64 only: tinspect reads 64-bit processes */

struct key_layout {
	uint64_t keys_addr;	/* __pthread_keys */
	uint32_t nkeys;		/* PTHREAD_KEYS_MAX */
	uint32_t ks_size, ks_seq, ks_destr;	/* struct pthread_key_struct */
	uint32_t specific_off, l1;	/* pd->specific[l1] */
	uint32_t kd_size, kd_seq, kd_data;	/* struct pthread_key_data */
	uint32_t l2;		/* entries per second-level block */
};

struct kv {
	uint64_t seq, data;
	bool have;		/* the slot exists and was read */
	bool unknown;		/* the slot exists and could not be read */
};

struct keys_state {
	bool resolved;
	uint64_t generation;
	bool usable;
	char *why;		/* why not usable */
	struct key_layout L;
	/* the current stop */
	bool gathered;
	unsigned char *table;	/* __pthread_keys as read */
	uint32_t *inuse;	/* keys in use, ascending */
	size_t ninuse;
	size_t ntasks;
	struct kv *vals;	/* ntasks * ninuse */
	bool *task_read;	/* the thread's specific[] was read */
};

static void stop_clear(struct keys_state *k)
{
	free(k->table);
	free(k->inuse);
	free(k->vals);
	free(k->task_read);
	k->table = NULL;
	k->inuse = NULL;
	k->vals = NULL;
	k->task_read = NULL;
	k->ninuse = k->ntasks = 0;
	k->gathered = false;
}

void keys_free(struct dbs_session *s)
{
	if (!s->keys)
		return;
	stop_clear(s->keys);
	free(s->keys->why);
	free(s->keys);
	s->keys = NULL;
}

/* ---- before the stop: the layout ------------------------------------------------ */

static bool desc(struct psvc_target *t, const char *name, uint32_t d[3])
{
	uint64_t a;
	return psvc_lookup_symbol(t, name, &a) == 0 &&
	       psvc_read(t, a, d, 3 * sizeof *d) == 0;
}

static bool desc1(struct psvc_target *t, const char *name, uint32_t *ret)
{
	uint64_t a;
	return psvc_lookup_symbol(t, name, &a) == 0 &&
	       psvc_read(t, a, ret, sizeof *ret) == 0;
}

/* A 64-bit scalar field inside a struct of size sz. */
static bool field64(const uint32_t d[3], uint32_t sz, uint32_t *ret_off)
{
	if (d[0] != 64 || d[1] != 1 || d[2] % 8 || d[2] + 8 > sz)
		return false;
	*ret_off = d[2];
	return true;
}

static const char *load_layout(struct psvc_target *t, struct key_layout *L)
{
	uint32_t d[3], sz;
	if (psvc_lookup_symbol(t, "__pthread_keys", &L->keys_addr))
		return "no __pthread_keys symbol in the target (no glibc threads?)";
	if (!desc(t, "_thread_db___pthread_keys", d))
		return "no _thread_db___pthread_keys descriptor";
	if (d[1] == 0 || d[1] > MAX_KEYS)
		return "implausible PTHREAD_KEYS_MAX";
	L->nkeys = d[1];
	if (!desc1(t, "_thread_db_sizeof_pthread_key_struct", &sz) ||
	    sz != d[0] / 8 || sz < 16 || sz > 256)
		return "implausible struct pthread_key_struct";
	L->ks_size = sz;
	if (!desc(t, "_thread_db_pthread_key_struct_seq", d) ||
	    !field64(d, sz, &L->ks_seq) ||
	    !desc(t, "_thread_db_pthread_key_struct_destr", d) ||
	    !field64(d, sz, &L->ks_destr))
		return "implausible pthread_key_struct fields";
	if (!desc1(t, "_thread_db_sizeof_pthread_key_data", &sz) || sz < 16 ||
	    sz > 256)
		return "implausible struct pthread_key_data";
	L->kd_size = sz;
	if (!desc(t, "_thread_db_pthread_key_data_seq", d) ||
	    !field64(d, sz, &L->kd_seq) ||
	    !desc(t, "_thread_db_pthread_key_data_data", d) ||
	    !field64(d, sz, &L->kd_data))
		return "implausible pthread_key_data fields";
	if (!desc(t, "_thread_db_pthread_key_data_level2_data", d) ||
	    d[0] != L->kd_size * 8 || d[1] == 0 || d[1] > MAX_KEYS)
		return "implausible pthread_key_data_level2";
	L->l2 = d[1];
	/* specific is declared as one field: an array of pointers */
	if (!desc(t, "_thread_db_pthread_specific", d) || d[0] % (PTR_SIZE * 8) ||
	    d[0] == 0 || d[2] % PTR_SIZE || d[2] > 65536)
		return "implausible struct pthread.specific";
	L->l1 = d[0] / (PTR_SIZE * 8) * (d[1] ? d[1] : 1);
	L->specific_off = d[2];
	if ((uint64_t)L->l1 * L->l2 < L->nkeys)
		return "specific[] cannot hold PTHREAD_KEYS_MAX keys";
	return NULL;
}

void keys_prepare(struct dbs_session *s)
{
	if (!s->opts.want_keys)
		return;
	if (!s->keys) {
		s->keys = calloc(1, sizeof *s->keys);
		if (!s->keys)
			return;
	}
	struct keys_state *k = s->keys;
	if (k->resolved && k->generation == psvc_modules_generation(s->t))
		return;
	free(k->why);
	k->why = NULL;
	memset(&k->L, 0, sizeof k->L);
	const char *why = load_layout(s->t, &k->L);
	k->usable = !why;
	k->why = why ? dbs_strdup(why) : NULL;
	k->generation = psvc_modules_generation(s->t);
	k->resolved = true;
}

/* ---- during the stop ---------------------------------------------------------------- */

/* struct pthread of task i: libthread_db's pthread_t, else what the
 * thread pointer says (GLIBC-NOTES.md §4: what ps_get_thread_area gives). */
static uint64_t pd_of(struct dbs_session *s, const struct tdb_result *res,
		      size_t i, const struct psvc_task *tk)
{
	if (res && res[i].err == TD_OK && res[i].ti.ti_tid)
		return (uint64_t)res[i].ti.ti_tid;
	if ((tk->flags & PSVC_TASK_HAVE_REGS) && tk->tp)
		return arch_thread_area(psvc_arch(s->t), tk->tp,
					(int)s->sizeof_pthread);
	return 0;
}

void keys_gather(struct dbs_session *s, const struct tdb_result *res)
{
	struct keys_state *k = s->keys;
	struct psvc_target *t = s->t;
	if (!k || !k->usable)
		return;
	const struct key_layout *L = &k->L;
	size_t tlen = (size_t)L->nkeys * L->ks_size;
	k->table = malloc(tlen);
	if (!k->table)
		return;
	struct psvc_range kr = { L->keys_addr, tlen };
	psvc_prefetch(t, &kr, 1);
	if (psvc_read(t, L->keys_addr, k->table, tlen)) {
		stop_clear(k);
		return;
	}
	k->inuse = malloc(L->nkeys * sizeof *k->inuse);
	if (!k->inuse) {
		stop_clear(k);
		return;
	}
	for (uint32_t key = 0; key < L->nkeys; key++) {
		uint64_t seq;
		memcpy(&seq, k->table + (size_t)key * L->ks_size + L->ks_seq, 8);
		if (seq & 1)
			k->inuse[k->ninuse++] = key;
	}
	size_t n = psvc_ntasks(t);
	k->ntasks = n;
	k->task_read = calloc(n ? n : 1, sizeof *k->task_read);
	size_t nvals = n * k->ninuse;
	k->vals = calloc(nvals ? nvals : 1, sizeof *k->vals);
	if (!k->task_read || !k->vals) {
		stop_clear(k);
		return;
	}
	k->gathered = true;

	/* Which first-level slots hold keys in use. */
	bool *need = calloc(L->l1, sizeof *need);
	uint64_t *blk = calloc((size_t)L->l1 * (n ? n : 1), sizeof *blk);
	struct psvc_range *r = calloc((size_t)L->l1 * (n ? n : 1), sizeof *r);
	if (!need || !blk || !r) {
		free(need);
		free(blk);
		free(r);
		stop_clear(k);
		return;
	}
	for (size_t j = 0; j < k->ninuse; j++)
		need[k->inuse[j] / L->l2] = true;

	/* Every thread's second-level blocks, then all of them at once. */
	size_t nr = 0;
	for (size_t i = 0; i < n; i++) {
		struct psvc_task *tk = psvc_task_at(t, i);
		uint64_t pd = pd_of(s, res, i, tk);
		if (!(tk->flags & PSVC_TASK_STOPPED) || !pd)
			continue;
		uint64_t *row = blk + i * L->l1;
		bool ok = true;
		for (uint32_t l = 0; l < L->l1 && ok; l++) {
			if (!need[l])
				continue;
			ok = psvc_read(t, pd + L->specific_off + (uint64_t)l * PTR_SIZE,
				       &row[l], PTR_SIZE) == 0;
			if (ok && row[l])
				r[nr++] = (struct psvc_range){
					row[l], (uint64_t)L->l2 * L->kd_size };
		}
		k->task_read[i] = ok;
	}
	psvc_prefetch(t, r, nr);
	bool out_of_time = false;
	for (size_t i = 0; i < n; i++) {
		if (!k->task_read[i])
			continue;
		if ((i & 63) == 63 && !out_of_time && psvc_check_freeze(t))
			out_of_time = true;
		if (out_of_time) {
			/* not read: unknown, not "never set" (the capture
			 * is abandoned over the limit anyway: defensive) */
			for (size_t j = 0; j < k->ninuse; j++)
				k->vals[i * k->ninuse + j].unknown = true;
			continue;
		}
		const uint64_t *row = blk + i * L->l1;
		for (size_t j = 0; j < k->ninuse; j++) {
			uint32_t key = k->inuse[j];
			uint64_t b = row[key / L->l2];
			struct kv *v = &k->vals[i * k->ninuse + j];
			if (!b)
				continue;	/* never set a key of that block */
			unsigned char pair[256];
			uint64_t a = b + (uint64_t)(key % L->l2) * L->kd_size;
			if (psvc_read(t, a, pair, L->kd_size)) {
				v->unknown = true;
				continue;
			}
			memcpy(&v->seq, pair + L->kd_seq, 8);
			memcpy(&v->data, pair + L->kd_data, 8);
			v->have = true;
		}
	}
	free(need);
	free(blk);
	free(r);
}

/* ---- after the resume ------------------------------------------------------------------- */

void keys_fill(struct dbs_session *s, struct dbs_snapshot *snap,
	       struct dbs_thread *th, size_t i)
{
	(void)snap;
	struct keys_state *k = s->keys;
	if (!k || !k->gathered || i >= k->ntasks)
		return;
	if (!k->task_read[i]) {
		if (th->stopped)
			snap_add_error(&th->errors, &th->nerrors,
				       "keys: cannot read the thread's specific[] "
				       "(no struct pthread)");
		return;
	}
	th->keys = calloc(k->ninuse ? k->ninuse : 1, sizeof *th->keys);
	if (!th->keys)
		return;
	th->keys_read = true;
	th->nkeys = k->ninuse;
	size_t nunknown = 0;
	for (size_t j = 0; j < k->ninuse; j++) {
		uint32_t key = k->inuse[j];
		const struct kv *v = &k->vals[i * k->ninuse + j];
		uint64_t seq;
		memcpy(&seq, k->table + (size_t)key * k->L.ks_size + k->L.ks_seq, 8);
		th->keys[j].key = key;
		th->keys[j].unknown = v->unknown;
		/* a stale slot (key deleted and re-created since) reads as
		 * NULL, as pthread_getspecific says */
		th->keys[j].value = v->have && v->seq == seq ? v->data : 0;
		if (v->unknown)
			nunknown++;
	}
	if (nunknown)
		snap_add_error(&th->errors, &th->nerrors,
			       "keys: %zu value(s) not read (their block is "
			       "unreadable)", nunknown);
}

void keys_finish(struct dbs_session *s, struct dbs_snapshot *snap)
{
	struct keys_state *k = s->keys;
	if (!k)
		return;
	if (snap && !k->gathered) {
		snap_add_error(&snap->warnings, &snap->nwarnings,
			       "--keys: %s", k->why ? k->why
				: "the key table could not be read during the stop");
	} else if (snap) {
		snap->keys_read = true;
		snap->keys_max = k->L.nkeys;
		snap->keys = calloc(k->ninuse ? k->ninuse : 1, sizeof *snap->keys);
		for (size_t j = 0; snap->keys && j < k->ninuse; j++) {
			struct dbs_key *d = &snap->keys[snap->nkeys++];
			const unsigned char *e = k->table +
				(size_t)k->inuse[j] * k->L.ks_size;
			d->key = k->inuse[j];
			memcpy(&d->seq, e + k->L.ks_seq, 8);
			memcpy(&d->destructor, e + k->L.ks_destr, 8);
			if (d->destructor)
				symbolize(s->t, d->destructor, &d->destructor_sym);
		}
	}
	stop_clear(k);
}
