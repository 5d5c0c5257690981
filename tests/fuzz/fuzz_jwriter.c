/*
 * fuzz_jwriter: the streaming JSON writer (agent/common/jwriter.c) driven by
 * arbitrary calls with arbitrary bytes: strings with invalid UTF-8, NULs,
 * controls and U+2028/U+2029, any integer, any double (NaN, infinities,
 * subnormals), keys, nesting.  Whenever jw_finish() says the calls were
 * well formed, the output must parse as strict JSON (jansson, which
 * rejects what RFC 8259 does not allow) and hold no raw line separator.
 * Then the bytes cut in two names: agent_json_same_key() must call them one
 * key exactly when jw_str() writes them alike.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"
#include "jwriter.h"
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

/* A string as jw_str() writes it, NUL-terminated. */
static char *written(const char *v)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	struct jw w;
	if (!f)
		abort();
	jw_init(&w, f, false);
	jw_str(&w, v);
	if (jw_finish(&w))
		abort();
	fclose(f);
	return buf;
}

/* Object keys (watch mode's counts, --tls names) are merged by
 * agent_json_same_key(): it must agree with what the writer writes. */
static void same_key(const uint8_t *data, size_t size)
{
	size_t half = size / 2;
	char *a = strndup((const char *)data, half);
	char *b = strndup((const char *)data + half, size - half);
	if (!a || !b)
		abort();
	char *wa = written(a), *wb = written(b);
	if (agent_json_same_key(a, b) != !strcmp(wa, wb) || !agent_json_same_key(a, a))
		abort();
	free(wa);
	free(wb);
	free(a);
	free(b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz z = { data, size };
	writer(&z);
	same_key(data, size);
	return 0;
}
