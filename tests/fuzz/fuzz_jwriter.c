/*
 * fuzz_jwriter: the streaming JSON writer (agent/jwriter.c) driven by
 * arbitrary calls with arbitrary bytes: strings with invalid UTF-8, NULs,
 * controls and U+2028/U+2029, any integer, any double (NaN, infinities,
 * subnormals), keys, nesting.  Whenever jw_finish() says the calls were
 * well formed, the output must parse as strict JSON (jansson, which
 * rejects what RFC 8259 does not allow) and hold no raw line separator.
 * Then the same bytes through jansson and agent_json_escape_separators()
 * (watch mode's lines): the line must parse back to the same string.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"
#include "fuzz_input.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void no_raw_separator(const char *buf, size_t len)
{
	for (size_t i = 0; i + 2 < len; i++)
		if ((unsigned char)buf[i] == 0xe2 && (unsigned char)buf[i + 1] == 0x80 &&
		    ((unsigned char)buf[i + 2] & 0xfe) == 0xa8)
			abort();
}

static void must_parse(const char *buf, size_t len)
{
	json_error_t je;
	json_t *doc = json_loadb(buf, len, JSON_DECODE_ANY, &je);
	if (!doc) {
		fprintf(stderr, "invalid JSON (%s at %d): %.*s\n", je.text,
			je.position, (int)len, buf);
		abort();
	}
	json_decref(doc);
	no_raw_separator(buf, len);
}

/* A NUL-terminated copy of up to 64 input bytes (C-string calls). */
static char *cstr(struct fz *z, size_t *ret_len)
{
	size_t n;
	const uint8_t *p = fz_bytes(z, 64, &n);
	char *s = malloc(n + 1);
	if (!s)
		abort();
	memcpy(s, p, n);
	s[n] = '\0';
	if (ret_len)
		*ret_len = n;
	return s;
}

static void writer(struct fz *z)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	if (!f)
		abort();
	struct jw w;
	jw_init(&w, f, fz_bool(z));
	for (int ops = 0; z->n && ops < 256; ops++) {
		char *s, *t;
		size_t n;
		switch (fz_pick(z, 14)) {
		case 0: jw_obj(&w); break;
		case 1: jw_obj_end(&w); break;
		case 2: jw_arr(&w); break;
		case 3: jw_arr_end(&w); break;
		case 4:
			s = cstr(z, NULL);
			jw_key(&w, s);
			free(s);
			break;
		case 5:
			s = cstr(z, NULL);
			jw_str(&w, fz_bool(z) ? s : NULL);
			free(s);
			break;
		case 6:
			/* with the NULs inside */
			s = cstr(z, &n);
			jw_strn(&w, s, n);
			free(s);
			break;
		case 7:
			s = cstr(z, NULL);
			t = cstr(z, NULL);
			jw_str_cat(&w, s, t);
			free(s);
			free(t);
			break;
		case 8: jw_null(&w); break;
		case 9: jw_bool(&w, fz_bool(z)); break;
		case 10: jw_int(&w, (int64_t)fz_u64(z)); break;
		case 11: jw_hex(&w, fz_u64(z)); break;
		case 12: {
			uint64_t bits = fz_u64(z);
			double d;
			memcpy(&d, &bits, sizeof d);
			jw_real(&w, d);
			break;
		}
		case 13: {
			const uint8_t *p = fz_bytes(z, 64, &n);
			jw_hexbytes(&w, p, n);
			break;
		}
		}
	}
	/* close what is open, so that most inputs make a document */
	if (!w.misuse) {
		if (w.after_key)
			jw_null(&w);
		while (w.depth > 0) {
			if (w.in_obj[w.depth])
				jw_obj_end(&w);
			else
				jw_arr_end(&w);
		}
		if (w.first[0])
			jw_null(&w);
	}
	int r = jw_finish(&w);
	fclose(f);
	if (r == 0)
		must_parse(buf, len);
	free(buf);
}

/* watch mode's lines: jansson's output, separators escaped afterwards */
static void jansson_line(const uint8_t *data, size_t size)
{
	/* the bytes made valid UTF-8 as watch.c's jsafe() does */
	char *v = malloc(size * 3 + 1);
	size_t o = 0;
	if (!v)
		abort();
	for (size_t i = 0; i < size;) {
		size_t l = agent_utf8_seq(data + i, size - i);
		if (l) {
			memcpy(v + o, data + i, l);
			o += l;
			i += l;
		} else {
			memcpy(v + o, "\xef\xbf\xbd", 3);
			o += 3;
			i++;
		}
	}
	json_t *doc = json_pack("{s:s%}", "name", v, o);
	char *s = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
	if (!s)
		abort();
	size_t n = strlen(s);
	char *e = malloc(2 * n + 1);
	if (!e)
		abort();
	n = agent_json_escape_separators(e, s, n);
	must_parse(e, n);
	json_error_t je;
	json_t *back = json_loadb(e, n, 0, &je);
	if (!back || !json_equal(back, doc))
		abort();	/* escaping changed the value */
	json_decref(back);
	json_decref(doc);
	free(e);
	free(s);
	free(v);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz z = { data, size };
	writer(&z);
	jansson_line(data, size);
	return 0;
}
