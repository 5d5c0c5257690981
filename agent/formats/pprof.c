/*
 * pprof.c: --pprof FILE, the samples of --folded as a profile.proto
 * (github.com/google/pprof, proto/profile.proto; our copy of its messages
 * is agent/formats/profile.proto, compiled by protoc-c), gzip-compressed
 * as the format requires, for `go tool pprof`, Parca and Pyroscope.
 *
 * One sample type, ("threads", "count"): a sample's value is how many
 * times, over all updates, a thread was seen with that stack.  Its leaf
 * location is the same pseudo-frame as in the folded file ("[futex mutex
 * ledger_lock]"), so that both show the same stacks with the same counts;
 * the labels say the rest: thread_name, state, wait, and lock (the named
 * lock waited on).  Locations are functions and lines, not addresses (the
 * addresses of two updates differ after a dlopen; the frames were
 * symbolized already): one mapping, the executable's, says that they
 * have functions, files, lines and inline frames, so that no reader tries
 * to symbolize them again.
 *
 * Strings in a proto3 message are UTF-8: names from the target are made
 * so (invalid bytes become U+FFFD).
 */
#include "formats.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "jwriter.h"
#include "array.h"
#include "config.h"

#if HAVE_PPROF

#include <zlib.h>

#include "profile.pb-c.h"

typedef Perftools__Profiles__Profile Profile;
typedef Perftools__Profiles__Sample Sample;
typedef Perftools__Profiles__Label Label;
typedef Perftools__Profiles__Location Location;
typedef Perftools__Profiles__Line Line;
typedef Perftools__Profiles__Function Function;
typedef Perftools__Profiles__ValueType ValueType;
typedef Perftools__Profiles__Mapping Mapping;

/* Growable arrays of what the profile points to. */
struct pb {
	struct btab strtab;	/* string -> index */
	char **strings;
	size_t nstrings, capstrings;
	struct btab funcs;	/* (name, file) -> id */
	Function *funcv;
	size_t nfuncs, capfuncs;
	struct btab locs;	/* frame or leaf string -> id */
	Location *locv;
	Line *linev;
	size_t nlocs, caplocs, caplines;
	bool oom;
};

/* Room for element n of an array of *cap (64 at first, then doubling). */
static bool grow(void *arrp, size_t *cap, size_t n, size_t size)
{
	return !array_grow(arrp, cap, n + 1, size, 64);
}

/* s as valid UTF-8 (invalid bytes as U+FFFD); malloc'ed. */
static char *utf8_clean(const char *s)
{
	size_t n = strlen(s);
	char *r = malloc(n * 3 + 1), *o = r;
	if (!r)
		return NULL;
	for (size_t i = 0; i < n;) {
		size_t l = agent_utf8_seq((const unsigned char *)s + i, n - i);
		if (l) {
			memcpy(o, s + i, l);
			o += l;
			i += l;
		} else {
			memcpy(o, "\xef\xbf\xbd", 3);
			o += 3;
			i++;
		}
	}
	*o = '\0';
	return r;
}

/* The string table index of s (added if new). */
static int64_t str(struct pb *p, const char *s)
{
	if (!s || !*s)
		return 0;
	char *clean = utf8_clean(s);
	if (!clean) {
		p->oom = true;
		return 0;
	}
	bool added;
	struct blob *b = btab_get(&p->strtab, clean, strlen(clean), p->nstrings,
				  true, &added);
	if (!b || (added && !grow(&p->strings, &p->capstrings, p->nstrings,
				  sizeof *p->strings))) {
		if (b && added)
			b->value = 0;
		free(clean);
		p->oom = true;
		return 0;
	}
	free(clean);
	if (added)
		p->strings[p->nstrings++] = b->key;
	return (int64_t)b->value;
}

static uint64_t func(struct pb *p, const char *name, const char *file)
{
	int64_t key[2] = { str(p, name), str(p, file) };
	bool added;
	struct blob *b = btab_get(&p->funcs, key, sizeof key, p->nfuncs + 1, true,
				  &added);
	if (!b || (added && !grow(&p->funcv, &p->capfuncs, p->nfuncs,
				  sizeof *p->funcv))) {
		if (b && added)
			b->value = 0;
		p->oom = true;
		return 0;
	}
	if (added) {
		Function *fn = &p->funcv[p->nfuncs++];
		*fn = (Function)PERFTOOLS__PROFILES__FUNCTION__INIT;
		fn->id = b->value;
		fn->name = key[0];
		fn->system_name = key[0];
		fn->filename = key[1];
	}
	return b->value;
}

/* The location of a frame (key: 'F' and the interned frame's address) or
 * of a leaf pseudo-frame (key: 'L' and its text). */
static uint64_t loc(struct pb *p, char tag, const void *id, size_t idlen,
		    const char *name, const char *file, int line)
{
	bool added;
	char *key = malloc(idlen + 1);
	if (!key) {
		p->oom = true;
		return 0;
	}
	key[0] = tag;
	memcpy(key + 1, id, idlen);
	struct blob *b = btab_get(&p->locs, key, idlen + 1, p->nlocs + 1, true, &added);
	free(key);
	if (!b || (added && (!grow(&p->locv, &p->caplocs, p->nlocs,
				   sizeof *p->locv) ||
			     !grow(&p->linev, &p->caplines, p->nlocs,
				   sizeof *p->linev)))) {
		if (b && added)
			b->value = 0;
		p->oom = true;
		return 0;
	}
	if (added) {
		Line *ln = &p->linev[p->nlocs];
		*ln = (Line)PERFTOOLS__PROFILES__LINE__INIT;
		ln->function_id = func(p, name, file);
		ln->line = line;
		Location *l = &p->locv[p->nlocs++];
		*l = (Location)PERFTOOLS__PROFILES__LOCATION__INIT;
		l->id = b->value;
		l->mapping_id = 1;
	}
	return b->value;
}

static char *leaf_text(const struct sample *sm)
{
	char *t;
	if (asprintf(&t, "[%s%s%s]", sm->leaf.what, sm->leaf.name ? " " : "",
		     sm->leaf.name ? sm->leaf.name : "") < 0)
		return NULL;
	return t;
}

static void label(struct pb *p, Label *l, const char *key, const char *value)
{
	*l = (Label)PERFTOOLS__PROFILES__LABEL__INIT;
	l->key = str(p, key);
	l->str = str(p, value);
}

/* The gzip'ed profile; malloc'ed into *ret, *ret_len bytes. */
static int gzip(const uint8_t *in, size_t len, uint8_t **ret, size_t *ret_len)
{
	z_stream z = { 0 };
	/* 15 + 16: a gzip header and trailer, not zlib's */
	if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8,
			 Z_DEFAULT_STRATEGY) != Z_OK)
		return -ENOMEM;
	size_t cap = deflateBound(&z, len) + 64;
	uint8_t *out = malloc(cap);
	if (!out) {
		deflateEnd(&z);
		return -ENOMEM;
	}
	z.next_in = (Bytef *)in;
	z.avail_in = (uInt)len;
	z.next_out = out;
	z.avail_out = (uInt)cap;
	int r = deflate(&z, Z_FINISH);
	size_t n = cap - z.avail_out;
	deflateEnd(&z);
	if (r != Z_STREAM_END) {
		free(out);
		return -EIO;
	}
	*ret = out;
	*ret_len = n;
	return 0;
}

int pprof_write(const char *path, const struct samples *s, pid_t pid,
		unsigned mode)
{
	struct pb p = { 0 };
	int err = -ENOMEM;
	size_t n = samples_n(s);
	Sample *sv = calloc(n ? n : 1, sizeof *sv);
	Sample **spv = calloc(n ? n : 1, sizeof *spv);
	Label *labels = calloc(n ? 4 * n : 1, sizeof *labels);
	Label **lpv = calloc(n ? 4 * n : 1, sizeof *lpv);
	int64_t *values = calloc(n ? n : 1, sizeof *values);
	uint64_t **ids = calloc(n ? n : 1, sizeof *ids);
	Location **locpv = NULL;
	Line **linepv = NULL;
	Function **funcpv = NULL;
	uint8_t *packed = NULL, *gz = NULL;
	size_t gzlen = 0;
	if (!sv || !spv || !labels || !lpv || !values || !ids ||
	    !grow(&p.strings, &p.capstrings, 0, sizeof *p.strings))
		goto out;
	p.strings[p.nstrings++] = "";	/* string_table[0] */

	ValueType st = PERFTOOLS__PROFILES__VALUE_TYPE__INIT;
	st.type = str(&p, "threads");
	st.unit = str(&p, "count");
	ValueType *stp = &st;
	for (size_t i = 0; i < n; i++) {
		const struct sample *sm = samples_get(s, i);
		Sample *x = &sv[i];
		*x = (Sample)PERFTOOLS__PROFILES__SAMPLE__INIT;
		if (!(ids[i] = calloc(sm->nframes + 1, sizeof *ids[i])))
			goto out;
		char *leaf = leaf_text(sm);
		if (!leaf)
			goto out;
		/* the leaf first */
		ids[i][0] = loc(&p, 'L', leaf, strlen(leaf), leaf, NULL, 0);
		free(leaf);
		for (size_t k = 0; k < sm->nframes; k++) {
			const struct sframe *f = sm->frames[sm->nframes - 1 - k];
			ids[i][k + 1] = loc(&p, 'F', &f, sizeof f, f->name, f->file,
					    f->line);
		}
		x->n_location_id = sm->nframes + 1;
		x->location_id = ids[i];
		values[i] = (int64_t)sm->count;
		x->n_value = 1;
		x->value = &values[i];
		Label *l = &labels[4 * i];
		size_t nl = 0;
		label(&p, &l[nl++], "thread_name", sm->thread_name);
		label(&p, &l[nl++], "state", sm->state);
		label(&p, &l[nl++], "wait", sm->leaf.what);
		if (sm->leaf.name)
			label(&p, &l[nl++], "lock", sm->leaf.name);
		for (size_t k = 0; k < nl; k++)
			lpv[4 * i + k] = &l[k];
		x->n_label = nl;
		x->label = &lpv[4 * i];
		spv[i] = x;
	}
	char comment[128];
	snprintf(comment, sizeof comment,
		 "tinspect %s: threads of process %d, %llu updates", TINSPECT_VERSION,
		 (int)pid, (unsigned long long)samples_updates(s));
	int64_t comment_idx = str(&p, comment);
	if (p.oom)
		goto out;
	locpv = calloc(p.nlocs + 1, sizeof *locpv);
	linepv = calloc(p.nlocs + 1, sizeof *linepv);
	funcpv = calloc(p.nfuncs + 1, sizeof *funcpv);
	if (!locpv || !linepv || !funcpv)
		goto out;
	for (size_t i = 0; i < p.nlocs; i++) {
		linepv[i] = &p.linev[i];
		p.locv[i].n_line = 1;
		p.locv[i].line = &linepv[i];
		locpv[i] = &p.locv[i];
	}
	for (size_t i = 0; i < p.nfuncs; i++)
		funcpv[i] = &p.funcv[i];

	Mapping map = PERFTOOLS__PROFILES__MAPPING__INIT;
	Mapping *mapp = &map;
	map.id = 1;
	map.filename = str(&p, samples_exe(s));
	map.has_functions = map.has_filenames = map.has_line_numbers = true;
	map.has_inline_frames = true;
	if (p.oom)
		goto out;
	Profile prof = PERFTOOLS__PROFILES__PROFILE__INIT;
	prof.n_mapping = 1;
	prof.mapping = &mapp;
	prof.n_sample_type = 1;
	prof.sample_type = &stp;
	prof.n_sample = n;
	prof.sample = spv;
	prof.n_location = p.nlocs;
	prof.location = locpv;
	prof.n_function = p.nfuncs;
	prof.function = funcpv;
	prof.n_string_table = p.nstrings;
	prof.string_table = p.strings;
	prof.time_nanos = samples_first_ns(s);
	prof.duration_nanos = samples_last_ns(s) - samples_first_ns(s);
	prof.period_type = &st;
	prof.period = 1;
	prof.n_comment = 1;
	prof.comment = &comment_idx;
	size_t len = perftools__profiles__profile__get_packed_size(&prof);
	if (!(packed = malloc(len ? len : 1)))
		goto out;
	perftools__profiles__profile__pack(&prof, packed);
	if ((err = gzip(packed, len, &gz, &gzlen)))
		goto out;
	err = atomicfile_replace(path, gz, gzlen, mode);
out:
	for (size_t i = 0; ids && i < n; i++)
		free(ids[i]);
	free(ids);
	free(sv);
	free(spv);
	free(labels);
	free(lpv);
	free(values);
	free(locpv);
	free(linepv);
	free(funcpv);
	free(packed);
	free(gz);
	free(p.strings);
	free(p.funcv);
	free(p.locv);
	free(p.linev);
	btab_free(&p.strtab);
	btab_free(&p.funcs);
	btab_free(&p.locs);
	return err;
}

#else

int pprof_write(const char *path, const struct samples *s, pid_t pid,
		unsigned mode)
{
	(void)path, (void)s, (void)pid, (void)mode;
	return -ENOTSUP;
}

#endif
