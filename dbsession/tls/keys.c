/*
 * keys.c: pthread keys (--keys).  libthread_db's td_thr_tsd and
 * td_ta_tsd_iter are broken on LP64 glibc (docs/GLIBC.md §7), so the
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
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_KEYS 65536u
#define PTR_SIZE 8u	/* LP64 only: tinspect reads 64-bit processes */

struct kv {
	uint64_t seq, data;
	bool have;		/* the slot exists and was read */
	bool unknown;		/* the slot exists and could not be read */
};

struct keys_state {
	bool resolved;
	uint64_t generation;
	bool usable;
	/* musl (docs/MUSL.md §13): tsd[PTHREAD_KEYS_MAX] per thread; the key
	 * table (L.keys_addr, one destructor pointer per key) and nodtor
	 * known only from a static program's symbols */
	bool musl;
	uint64_t musl_nodtor;
	bool musl_tsd_size0;	/* its symbols say it has no key array */
	bool musl_no_tsd;	/* this stop: no thread has a key array */
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

void dbs_keys_free(struct dbs_session *s)
{
	if (!s->keys)
		return;
	stop_clear(s->keys);
	free(s->keys->why);
	free(s->keys);
	s->keys = NULL;
}

/* ---- before the stop: the layout ------------------------------------------------ */

/* A key's pthread_key_struct in the table copied at the stop: its seq. */
static uint64_t key_seq(const struct key_layout *L, const unsigned char *table,
			uint32_t key)
{
	uint64_t seq = 0;
	psvc_field_get(table + (size_t)key * L->ks_size, L->ks_size, &L->ks_seq,
		       0, &seq, sizeof seq);
	return seq;
}

/* glibc's two key structs, struct pthread_key_struct (in __pthread_keys)
 * and struct pthread_key_data (in a thread's blocks), are each a seq and
 * one pointer (the destructor, the value): their fields, in a struct of
 * size bytes. */
static int seq_and_pointer(const struct psvc_layout_src *src, const char *what,
			   uint32_t size, const char *seq_desc,
			   struct psvc_field *ret_seq, const char *ptr_desc,
			   struct psvc_field *ret_ptr, char *why, size_t whylen)
{
	struct psvc_field_rule rule = { what, size, 64, 1, 1 };
	int err = psvc_field_read(src, seq_desc, &rule, ret_seq, why, whylen);
	return err ? err : psvc_field_read(src, ptr_desc, &rule, ret_ptr, why, whylen);
}

int dbs_keys_layout_load(const struct psvc_layout_src *src, uint32_t sizeof_pthread,
		     struct key_layout *L, char *why, size_t whylen)
{
	memset(L, 0, sizeof *L);
	if (!src->lookup || src->lookup(src->ctx, "__pthread_keys", &L->keys_addr)) {
		snprintf(why, whylen, "no __pthread_keys symbol in the target "
			 "(no glibc threads?)");
		return -ENOENT;
	}
	uint32_t sz;
	int err = psvc_sizeof_read(src, "_thread_db_sizeof_pthread_key_struct",
				   16, 256, &sz, why, whylen);
	if (err)
		return err;
	L->ks_size = sz;
	struct psvc_field keys;
	struct psvc_field_rule table = {
		"__pthread_keys", (uint64_t)MAX_KEYS * 256, sz * 8, 1, MAX_KEYS,
	};
	if ((err = psvc_field_read(src, "_thread_db___pthread_keys", &table,
				   &keys, why, whylen)))
		return err;
	L->nkeys = (uint32_t)keys.count;
	if ((err = seq_and_pointer(src, "struct pthread_key_struct", sz,
				   "_thread_db_pthread_key_struct_seq", &L->ks_seq,
				   "_thread_db_pthread_key_struct_destr",
				   &L->ks_destr, why, whylen)))
		return err;

	if ((err = psvc_sizeof_read(src, "_thread_db_sizeof_pthread_key_data",
				    16, 256, &sz, why, whylen)))
		return err;
	L->kd_size = sz;
	if ((err = seq_and_pointer(src, "struct pthread_key_data", sz,
				   "_thread_db_pthread_key_data_seq", &L->kd_seq,
				   "_thread_db_pthread_key_data_data", &L->kd_data,
				   why, whylen)))
		return err;

	/* a second-level block: an array of struct pthread_key_data */
	uint32_t l2size;
	struct psvc_field_rule l2 = { "a second-level block", 16u << 20,
				      L->kd_size * 8, 1, MAX_KEYS };
	if (psvc_sizeof_read(src, "_thread_db_sizeof_pthread_key_data_level2",
			     L->kd_size, 16u << 20, &l2size, NULL, 0) == 0)
		l2.struct_size = l2size;
	if ((err = psvc_field_read(src, "_thread_db_pthread_key_data_level2_data",
				   &l2, &L->level2, why, whylen)))
		return err;

	/* pd->specific: declared as one field, an array of pointers to the
	 * second-level blocks, inside struct pthread */
	if (!sizeof_pthread) {
		snprintf(why, whylen, "the size of struct pthread is not known "
			 "(no valid _thread_db_sizeof_pthread)");
		return -ENOENT;
	}
	struct psvc_field_rule sp = { "struct pthread", sizeof_pthread, 0, 1, 1024 };
	struct psvc_field spec;
	if ((err = psvc_field_read(src, "_thread_db_pthread_specific", &sp, &spec,
				   why, whylen)))
		return err;
	if (spec.elem_size % PTR_SIZE) {
		snprintf(why, whylen, "_thread_db_pthread_specific: %" PRIu32
			 " bytes is not an array of pointers", spec.elem_size);
		return -ERANGE;
	}
	/* the same bytes, one pointer per element */
	L->specific = (struct psvc_field){ spec.offset, PTR_SIZE,
					   spec.count * (spec.elem_size / PTR_SIZE) };
	if (L->specific.count * L->level2.count < L->nkeys) {
		snprintf(why, whylen, "specific[] (%" PRIu64 " x %" PRIu64
			 ") cannot hold PTHREAD_KEYS_MAX (%" PRIu32 ") keys",
			 L->specific.count, L->level2.count, L->nkeys);
		return -ERANGE;
	}
	return 0;
}

/* musl's PTHREAD_KEYS_MAX (§13) */
#define MUSL_KEYS 128u

/* A symbol of the target that is name itself, of size bytes (0: any). */
static bool symbol_is(struct psvc_target *t, const char *name, uint64_t size,
		      uint64_t *ret)
{
	struct psvc_symbol sym;
	return psvc_lookup_symbol(t, name, ret) == 0 &&
	       psvc_addr_to_symbol(t, *ret, &sym) == 0 && sym.name &&
	       !strcmp(sym.name, name) && sym.offset == 0 &&
	       (!size || sym.size == size);
}

/*
 * musl: the static array keys[PTHREAD_KEYS_MAX] of pthread_key_create.c
 * (non-zero: the key exists; nodtor: created without a destructor) is a
 * local symbol, in an unstripped static program only (§13).
 */
static void musl_keys_prepare(struct dbs_session *s, struct keys_state *k)
{
	struct psvc_target *t = s->t;
	uint64_t a;
	memset(&k->L, 0, sizeof k->L);
	k->musl = true;
	k->musl_nodtor = 0;
	k->L.nkeys = MUSL_KEYS;
	k->L.ks_size = PTR_SIZE;
	k->usable = s->layout_ok;
	if (!k->usable) {
		k->why = dbs_strdup("musl's struct pthread is not read for this "
				    "process (see process.thread_db.detail)");
		return;
	}
	/* a static program without pthread_key_create links the weak
	 * __pthread_tsd_size of pthread_create.c, 0: no thread has a key
	 * array (the main thread's tsd is a one-pointer dummy) (§13) */
	uint64_t tsd_size;
	k->musl_tsd_size0 = s->musl_static && symbol_is(t, "__pthread_tsd_size", 0, &a) &&
			 psvc_read(t, a, &tsd_size, sizeof tsd_size) == 0 && !tsd_size;
	if (s->musl_static && symbol_is(t, "__pthread_tsd_main", MUSL_KEYS * PTR_SIZE, &a) &&
	    symbol_is(t, "keys", MUSL_KEYS * PTR_SIZE, &a)) {
		k->L.keys_addr = a;
		if (!symbol_is(t, "nodtor", 0, &k->musl_nodtor))
			k->musl_nodtor = 0;
	}
}

void dbs_keys_prepare(struct dbs_session *s)
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
	k->musl = false;
	if (s->libc == &dbs_libc_musl) {
		musl_keys_prepare(s, k);
		k->generation = psvc_modules_generation(s->t);
		k->resolved = true;
		return;
	}
	char why[256];
	struct psvc_layout_src src = psvc_layout_src(s->t);
	k->usable = dbs_keys_layout_load(&src, s->sizeof_pthread, &k->L, why,
				     sizeof why) == 0;
	k->why = k->usable ? NULL : dbs_strdup(why);
	k->generation = psvc_modules_generation(s->t);
	k->resolved = true;
}

/* ---- during the stop ---------------------------------------------------------------- */

/* struct pthread of task i: libthread_db's pthread_t, else what the
 * thread pointer says (docs/GLIBC.md §4: what ps_get_thread_area gives). */
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

/*
 * musl: every thread's tsd[] in one batch (a created thread's is the top
 * 1 KiB of its mapping, the main thread's __pthread_tsd_main), and the key
 * table if known.  The keys in use: the table's non-zero entries, else
 * every key some thread has a non-zero value of (pthread_key_delete
 * zeroes the key in every thread, §13).
 */
static void musl_keys_gather(struct dbs_session *s, struct keys_state *k,
			     const struct tdb_result *res)
{
	struct psvc_target *t = s->t;
	const size_t tsd_len = MUSL_KEYS * PTR_SIZE;
	size_t n = psvc_ntasks(t);
	if (!res || s->threads_source != DBS_THREADS_STRUCT_PTHREAD)
		return;
	uint64_t *tsd = calloc((n ? n : 1) * MUSL_KEYS, sizeof *tsd);
	struct psvc_range *r = calloc(n + 1, sizeof *r);
	k->task_read = calloc(n ? n : 1, sizeof *k->task_read);
	k->inuse = malloc(MUSL_KEYS * sizeof *k->inuse);
	if (k->L.keys_addr)
		k->table = calloc(1, tsd_len);
	if (!tsd || !r || !k->task_read || !k->inuse ||
	    (k->L.keys_addr && !k->table))
		goto fail;
	/* one created thread without an array: the program has none
	 * (stripped: no symbol says so) */
	bool none = k->musl_tsd_size0;
	for (size_t i = 0; i < n && !none; i++)
		none = res[i].lt.have && res[i].lt.tsd_none;
	k->musl_no_tsd = none;	/* for finish: no key exists, nothing to say */
	size_t nr = 0;
	if (k->L.keys_addr)
		r[nr++] = (struct psvc_range){ k->L.keys_addr, tsd_len };
	for (size_t i = 0; i < n; i++) {
		const struct dbs_libc_thread *lt = &res[i].lt;
		if (lt->have && lt->tsd && !none)
			r[nr++] = (struct psvc_range){ lt->tsd, tsd_len };
	}
	psvc_copy_needed(t, r, nr);
	if (k->table && psvc_read(t, k->L.keys_addr, k->table, tsd_len))
		goto fail;
	for (size_t i = 0; i < n; i++) {
		const struct dbs_libc_thread *lt = &res[i].lt;
		struct psvc_task *tk = psvc_task_at(t, i);
		if (!lt->have || !(tk->flags & PSVC_TASK_STOPPED))
			continue;
		if ((i & 63) == 63 && psvc_check_freeze(t))
			break;	/* not read: the capture is abandoned anyway */
		/* no array yet (the main thread before any key) or none at
		 * all: every value is NULL */
		k->task_read[i] = !lt->tsd || none ||
			psvc_read(t, lt->tsd, tsd + i * MUSL_KEYS, tsd_len) == 0;
	}
	for (uint32_t key = 0; key < MUSL_KEYS; key++) {
		bool used = false;
		if (k->table) {
			uint64_t d;
			memcpy(&d, k->table + (size_t)key * PTR_SIZE, sizeof d);
			used = d != 0;
		} else {
			for (size_t i = 0; i < n && !used; i++)
				used = k->task_read[i] && tsd[i * MUSL_KEYS + key];
		}
		if (used)
			k->inuse[k->ninuse++] = key;
	}
	k->ntasks = n;
	size_t nvals = n * k->ninuse;
	k->vals = calloc(nvals ? nvals : 1, sizeof *k->vals);
	if (!k->vals)
		goto fail;
	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; k->task_read[i] && j < k->ninuse; j++) {
			struct kv *v = &k->vals[i * k->ninuse + j];
			v->data = tsd[i * MUSL_KEYS + k->inuse[j]];
			v->have = true;
		}
	k->gathered = true;
	free(tsd);
	free(r);
	return;
fail:
	free(tsd);
	free(r);
	stop_clear(k);
}

void dbs_keys_gather(struct dbs_session *s, const struct tdb_result *res)
{
	struct keys_state *k = s->keys;
	struct psvc_target *t = s->t;
	if (!k || !k->usable)
		return;
	if (k->musl) {
		musl_keys_gather(s, k, res);
		return;
	}
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
	for (uint32_t key = 0; key < L->nkeys; key++)
		if (key_seq(L, k->table, key) & 1)
			k->inuse[k->ninuse++] = key;
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
	size_t l1 = (size_t)L->specific.count, l2 = (size_t)L->level2.count;
	bool *need = calloc(l1, sizeof *need);
	uint64_t *blk = calloc(l1 * (n ? n : 1), sizeof *blk);
	struct psvc_range *r = calloc(l1 * (n ? n : 1), sizeof *r);
	if (!need || !blk || !r) {
		free(need);
		free(blk);
		free(r);
		stop_clear(k);
		return;
	}
	for (size_t j = 0; j < k->ninuse; j++)
		need[k->inuse[j] / l2] = true;

	/* Every thread's second-level blocks, then all of them at once. */
	size_t nr = 0;
	for (size_t i = 0; i < n; i++) {
		struct psvc_task *tk = psvc_task_at(t, i);
		uint64_t pd = pd_of(s, res, i, tk);
		if (!(tk->flags & PSVC_TASK_STOPPED) || !pd)
			continue;
		uint64_t *row = blk + i * l1;
		bool ok = true;
		for (size_t l = 0; l < l1 && ok; l++) {
			uint64_t a;
			if (!need[l])
				continue;
			ok = psvc_field_addr(pd, &L->specific, l, &a) == 0 &&
			     psvc_read(t, a, &row[l], PTR_SIZE) == 0;
			if (ok && row[l])
				r[nr++] = (struct psvc_range){
					row[l], (uint64_t)l2 * L->kd_size };
		}
		k->task_read[i] = ok;
	}
	/* exact copies: the first block is in the descriptor (copied
	 * already), a page each of the others would be kept otherwise */
	psvc_copy_needed(t, r, nr);
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
		const uint64_t *row = blk + i * l1;
		for (size_t j = 0; j < k->ninuse; j++) {
			uint32_t key = k->inuse[j];
			uint64_t b = row[key / l2], a;
			struct kv *v = &k->vals[i * k->ninuse + j];
			if (!b)
				continue;	/* never set a key of that block */
			/* kd_size <= 256 (dbs_keys_layout_load) */
			unsigned char pair[256];
			if (psvc_field_addr(b, &L->level2, key % l2, &a) ||
			    psvc_read(t, a, pair, L->kd_size) ||
			    psvc_field_get(pair, L->kd_size, &L->kd_seq, 0,
					   &v->seq, sizeof v->seq) ||
			    psvc_field_get(pair, L->kd_size, &L->kd_data, 0,
					   &v->data, sizeof v->data)) {
				v->unknown = true;
				continue;
			}
			v->have = true;
		}
	}
	free(need);
	free(blk);
	free(r);
}

/* ---- after the resume ------------------------------------------------------------------- */

void dbs_keys_fill(struct dbs_session *s, struct dbs_snapshot *snap,
	       struct dbs_thread *th, size_t i)
{
	(void)snap;
	struct keys_state *k = s->keys;
	if (!k || !k->gathered || i >= k->ntasks)
		return;
	if (!k->task_read[i]) {
		const char *hz = dbs_descriptor_hazard(s, th);
		if (th->stopped && k->musl)
			dbs_add_error(&th->errors, &th->nerrors,
				       "keys: cannot read the thread's tsd[] (musl)");
		else if (th->stopped)
			dbs_add_error(&th->errors, &th->nerrors,
				       "keys: cannot read the thread's specific[] "
				       "(%s%s)", hz ? "its struct pthread: " :
				       "no struct pthread", hz ? hz : "");
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
		th->keys[j].key = key;
		th->keys[j].unknown = v->unknown;
		if (k->musl) {
			/* musl zeroes a deleted key in every thread (§13) */
			th->keys[j].value = v->have ? v->data : 0;
		} else {
			/* a stale slot (key deleted and re-created since)
			 * reads as NULL, as pthread_getspecific says */
			uint64_t seq = key_seq(&k->L, k->table, key);
			th->keys[j].value = v->have && v->seq == seq ? v->data : 0;
		}
		if (v->unknown)
			nunknown++;
	}
	if (nunknown)
		dbs_add_error(&th->errors, &th->nerrors,
			       "keys: %zu value(s) not read (their block is "
			       "unreadable)", nunknown);
}

void dbs_keys_finish(struct dbs_session *s, struct dbs_snapshot *snap)
{
	struct keys_state *k = s->keys;
	if (!k)
		return;
	if (snap && !k->gathered) {
		dbs_add_error(&snap->warnings, &snap->nwarnings,
			       "--keys: %s", k->why ? k->why
				: "the key table could not be read during the stop");
	} else if (snap) {
		snap->keys_read = true;
		snap->keys_max = k->L.nkeys;
		snap->keys = calloc(k->ninuse ? k->ninuse : 1, sizeof *snap->keys);
		if (k->musl && !k->table && !k->musl_no_tsd)
			dbs_add_error(&snap->warnings, &snap->nwarnings,
				       "--keys: musl's key table (keys[] of "
				       "pthread_key_create.c) is a local symbol, not in a "
				       "stripped libc.so: the keys listed are those some "
				       "thread set (a key no thread set is not listed), "
				       "their destructors are not known "
				       "(docs/MUSL.md, Keys)");
		for (size_t j = 0; snap->keys && k->musl && j < k->ninuse; j++) {
			struct dbs_key *d = &snap->keys[snap->nkeys++];
			d->key = k->inuse[j];
			if (k->table)
				memcpy(&d->destructor, k->table + (size_t)d->key * PTR_SIZE,
				       sizeof d->destructor);
			if (d->destructor == k->musl_nodtor)
				d->destructor = 0;	/* created without one */
			if (d->destructor)
				dbs_symbolize(s->t, d->destructor, &d->destructor_sym);
		}
		for (size_t j = 0; snap->keys && !k->musl && j < k->ninuse; j++) {
			struct dbs_key *d = &snap->keys[snap->nkeys++];
			const unsigned char *e = k->table +
				(size_t)k->inuse[j] * k->L.ks_size;
			d->key = k->inuse[j];
			d->seq = key_seq(&k->L, k->table, d->key);
			psvc_field_get(e, k->L.ks_size, &k->L.ks_destr, 0,
				       &d->destructor, sizeof d->destructor);
			if (d->destructor)
				dbs_symbolize(s->t, d->destructor, &d->destructor_sym);
		}
	}
	stop_clear(k);
}
