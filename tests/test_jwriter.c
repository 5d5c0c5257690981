/*
 * test_jwriter: the streaming JSON writer (agent/common/jwriter.c), with
 * no process: escapes and controls, invalid UTF-8 made U+FFFD, random
 * bytes that always parse, nesting and commas in both layouts (byte for
 * byte jansson's), numbers, misuse and write errors reported.
 */
#include <criterion/criterion.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jwriter.h"

/* A writer on a memory stream. */
struct jw_buf {
	struct jw w;
	FILE *f;
	char *buf;
	size_t len;
};

static void jwb_open(struct jw_buf *b, bool pretty)
{
	b->buf = NULL;
	b->len = 0;
	b->f = open_memstream(&b->buf, &b->len);
	cr_assert(b->f);
	jw_init(&b->w, b->f, pretty);
}

/* Finish; the text must parse as JSON (no NUL allowed in strings) and is
 * returned parsed; *ret_status is jw_finish()'s. */
static json_t *jwb_close(struct jw_buf *b, int *ret_status)
{
	int st = jw_finish(&b->w);
	fclose(b->f);
	if (ret_status)
		*ret_status = st;
	else
		cr_assert_eq(st, 0, "jw_finish: %s", b->buf);
	cr_assert(b->len > 0 && b->buf[b->len - 1] == '\n');
	json_error_t je;
	json_t *j = json_loadb(b->buf, b->len, JSON_DECODE_ANY, &je);
	cr_assert(j, "not JSON (%s): %s", je.text, b->buf);
	return j;
}

/* The string s (n bytes) as the writer writes it: the exact text and the
 * decoded value. */
static void check_str(const char *s, size_t n, const char *want_text,
		      const char *want_value, size_t want_len)
{
	struct jw_buf b;
	jwb_open(&b, false);
	jw_strn(&b.w, s, n);
	json_t *j = jwb_close(&b, NULL);
	cr_assert(json_is_string(j));
	if (want_text)
		cr_assert(b.len == strlen(want_text) + 1 &&
			  !memcmp(b.buf, want_text, b.len - 1),
			  "written %s, want %s", b.buf, want_text);
	cr_assert_eq(json_string_length(j), want_len, "%s", b.buf);
	cr_assert(!memcmp(json_string_value(j), want_value, want_len), "%s", b.buf);
	cr_assert_eq(agent_utf8_lossless(s, n),
		     n == want_len && !memcmp(s, want_value, n), "%s", b.buf);
	json_decref(j);
	free(b.buf);
}
#define CHECK_STR(s, text, value) \
	check_str(s, sizeof s - 1, text, value, sizeof value - 1)
#define FFFD "\xef\xbf\xbd"

Test(jwriter, escapes_and_controls)
{
	CHECK_STR("plain ascii ~", "\"plain ascii ~\"", "plain ascii ~");
	CHECK_STR("q\"b\\s/", "\"q\\\"b\\\\s/\"", "q\"b\\s/");
	CHECK_STR("\b\f\n\r\t", "\"\\b\\f\\n\\r\\t\"", "\b\f\n\r\t");
	CHECK_STR("\x01\x1f\x1b[2J", "\"\\u0001\\u001F\\u001B[2J\"", "\x01\x1f\x1b[2J");
	CHECK_STR("del\x7f", "\"del\x7f\"", "del\x7f");	/* DEL needs no escape */
	CHECK_STR("", "\"\"", "");
	/* valid UTF-8 of every length, up to the last code point */
	CHECK_STR("\xc2\x80\xc3\xa9\xdf\xbf", NULL, "\xc2\x80\xc3\xa9\xdf\xbf");
	CHECK_STR("\xe0\xa0\x80\xe2\x82\xac\xef\xbf\xbf\xee\x80\x80", NULL,
		  "\xe0\xa0\x80\xe2\x82\xac\xef\xbf\xbf\xee\x80\x80");
	CHECK_STR("\xf0\x90\x80\x80\xf0\x9f\x98\x80\xf4\x8f\xbf\xbf", NULL,
		  "\xf0\x90\x80\x80\xf0\x9f\x98\x80\xf4\x8f\xbf\xbf");
	/* U+2028/U+2029 are valid JSON as they are, but readers splitting
	 * on Unicode line ends would cut the line: escaped */
	CHECK_STR("\xe2\x80\xa8\xe2\x80\xa9", "\"\\u2028\\u2029\"",
		  "\xe2\x80\xa8\xe2\x80\xa9");
	CHECK_STR("a\xe2\x80\xa8", "\"a\\u2028\"", "a\xe2\x80\xa8");
	/* their neighbours are not line ends */
	CHECK_STR("\xe2\x80\xa7\xe2\x80\xaa", "\"\xe2\x80\xa7\xe2\x80\xaa\"",
		  "\xe2\x80\xa7\xe2\x80\xaa");
}

Test(jwriter, same_key_once_written)
{
	/* keys of an object (watch lines' counts, --tls names) are equal when
	 * their written forms are: every invalid byte is one U+FFFD */
	cr_assert(agent_json_same_key("a\xff", "a\xfe"));
	cr_assert(agent_json_same_key("\xed\xa0\x80", "\xff\xff\xff"));
	cr_assert(agent_json_same_key("", ""));
	cr_assert_not(agent_json_same_key("a\xff", "a\xff\xff"));
	cr_assert_not(agent_json_same_key("a\xff", "a" FFFD "x"));
	cr_assert_not(agent_json_same_key("a", "ab"));
	cr_assert(agent_json_same_key("\xe2\x82\xac", "\xe2\x82\xac"));
	/* a U+FFFD of the name itself and an invalid byte are written alike */
	cr_assert(agent_json_same_key("a" FFFD, "a\xff"));
}

Test(jwriter, invalid_utf8_becomes_replacement_characters)
{
	/* NUL: a C string ends there, a JSON reader must not see one */
	CHECK_STR("a\0b", "\"a" FFFD "b\"", "a" FFFD "b");
	CHECK_STR("\0", NULL, FFFD);
	/* overlong forms of '/', NUL and U+07FF / U+FFFF */
	CHECK_STR("\xc0\xaf", NULL, FFFD FFFD);
	CHECK_STR("\xc0\x80", NULL, FFFD FFFD);
	CHECK_STR("\xc1\xbf", NULL, FFFD FFFD);
	CHECK_STR("\xe0\x80\xaf", NULL, FFFD FFFD FFFD);
	CHECK_STR("\xe0\x9f\xbf", NULL, FFFD FFFD FFFD);
	CHECK_STR("\xf0\x80\x80\xaf", NULL, FFFD FFFD FFFD FFFD);
	CHECK_STR("\xf0\x8f\xbf\xbf", NULL, FFFD FFFD FFFD FFFD);
	/* UTF-16 surrogates, first and last */
	CHECK_STR("\xed\xa0\x80", NULL, FFFD FFFD FFFD);
	CHECK_STR("\xed\xbf\xbf", NULL, FFFD FFFD FFFD);
	CHECK_STR("x\xed\xa0\xbd\xed\xb8\x80y", NULL, "x" FFFD FFFD FFFD FFFD FFFD FFFD "y");
	/* above U+10FFFF, and bytes that never occur */
	CHECK_STR("\xf4\x90\x80\x80", NULL, FFFD FFFD FFFD FFFD);
	CHECK_STR("\xf5\xf8\xfc\xfe\xff", NULL, FFFD FFFD FFFD FFFD FFFD);
	/* lone continuation bytes, truncated sequences, at the end too */
	CHECK_STR("\x80\xbf", NULL, FFFD FFFD);
	CHECK_STR("\xe2\x82", NULL, FFFD FFFD);
	CHECK_STR("\xe2\x82" "a", NULL, FFFD FFFD "a");
	CHECK_STR("\xf0\x9f\x98", NULL, FFFD FFFD FFFD);
	CHECK_STR("\xc3", NULL, FFFD);
	/* a bad byte does not swallow the valid character after it */
	CHECK_STR("\xff\xc3\xa9\"", "\"" FFFD "\xc3\xa9\\\"\"", FFFD "\xc3\xa9\"");
}

/* Random bytes: always one valid JSON string, and exactly the bytes when
 * they were valid UTF-8 without NUL. */
Test(jwriter, random_bytes_always_parse)
{
	unsigned seed = 12345;
	unsigned char s[64];
	for (int round = 0; round < 5000; round++) {
		size_t n = (size_t)(rand_r(&seed) % sizeof s);
		for (size_t i = 0; i < n; i++) {
			unsigned r = (unsigned)rand_r(&seed);
			/* mostly high bytes, where the UTF-8 cases are */
			s[i] = (unsigned char)(r % 4 ? 0x80 + (r >> 8) % 0x80 : (r >> 8) & 0xff);
		}
		struct jw_buf b;
		jwb_open(&b, round & 1);
		jw_arr(&b.w);
		jw_strn(&b.w, (const char *)s, n);
		jw_arr_end(&b.w);
		json_t *j = jwb_close(&b, NULL);
		json_t *v = json_array_get(j, 0);
		cr_assert(json_is_string(v));
		if (agent_utf8_lossless((const char *)s, n))
			cr_assert(json_string_length(v) == n &&
				  !memcmp(json_string_value(v), s, n));
		json_decref(j);
		free(b.buf);
	}
}

/* The same values in both layouts; the layout is jansson's own (compact,
 * or JSON_INDENT(2)), which the document always had. */
static void nested_doc(struct jw *w)
{
	jw_obj(w);
	jw_key(w, "a");
	jw_arr(w);
	jw_int(w, 1);
	jw_obj(w);
	jw_obj_end(w);
	jw_arr(w);
	jw_arr_end(w);
	jw_arr(w);
	jw_arr(w);
	jw_null(w);
	jw_arr_end(w);
	jw_arr_end(w);
	jw_arr_end(w);
	jw_key(w, "b\xff\n");	/* a key is a string like any other */
	jw_obj(w);
	jw_key(w, "c");
	jw_bool(w, true);
	jw_key(w, "d");
	jw_bool(w, false);
	jw_key(w, "e");
	jw_str(w, NULL);
	jw_obj_end(w);
	jw_key(w, "f");
	jw_str_cat(w, "sym\xc3", "+0x28");
	jw_key(w, "g");
	jw_hexbytes(w, "\x00\xff\x10", 3);
	jw_key(w, "h");
	jw_hexbytes(w, "", 0);
	jw_obj_end(w);
}

Test(jwriter, nesting_and_commas_in_both_layouts)
{
	static const char compact[] =
		"{\"a\":[1,{},[],[[null]]],\"b" FFFD "\\n\":{\"c\":true,\"d\":false,"
		"\"e\":null},\"f\":\"sym" FFFD "+0x28\",\"g\":\"00ff10\",\"h\":\"\"}\n";
	static const char pretty[] =
		"{\n"
		"  \"a\": [\n"
		"    1,\n"
		"    {},\n"
		"    [],\n"
		"    [\n"
		"      [\n"
		"        null\n"
		"      ]\n"
		"    ]\n"
		"  ],\n"
		"  \"b" FFFD "\\n\": {\n"
		"    \"c\": true,\n"
		"    \"d\": false,\n"
		"    \"e\": null\n"
		"  },\n"
		"  \"f\": \"sym" FFFD "+0x28\",\n"
		"  \"g\": \"00ff10\",\n"
		"  \"h\": \"\"\n"
		"}\n";
	json_t *docs[2];
	for (int p = 0; p < 2; p++) {
		struct jw_buf b;
		jwb_open(&b, p);
		nested_doc(&b.w);
		docs[p] = jwb_close(&b, NULL);
		const char *want = p ? pretty : compact;
		cr_assert_str_eq(b.buf, want);
		/* what jansson makes of the parsed document, in the same
		 * layout, is the same text */
		char *again = json_dumps(docs[p], JSON_PRESERVE_ORDER |
					 (p ? JSON_INDENT(2) : JSON_COMPACT));
		cr_assert(again);
		cr_assert(strlen(again) + 1 == b.len && !memcmp(again, b.buf, b.len - 1),
			  "jansson: %s", again);
		free(again);
		free(b.buf);
	}
	cr_assert(json_equal(docs[0], docs[1]));
	json_decref(docs[0]);
	json_decref(docs[1]);

	/* empty top-level containers */
	for (int p = 0; p < 2; p++) {
		struct jw_buf b;
		jwb_open(&b, p);
		jw_arr(&b.w);
		jw_arr_end(&b.w);
		json_decref(jwb_close(&b, NULL));
		cr_assert_str_eq(b.buf, "[]\n");
		free(b.buf);
	}
}

Test(jwriter, numbers)
{
	struct jw_buf b;
	jwb_open(&b, false);
	jw_arr(&b.w);
	jw_int(&b.w, 0);
	jw_int(&b.w, -1);
	jw_int(&b.w, INT64_MIN);
	jw_int(&b.w, INT64_MAX);
	jw_hex(&b.w, 0);
	jw_hex(&b.w, UINT64_MAX);
	jw_hex(&b.w, 0x7f00dead);
	jw_real(&b.w, 0.0);
	jw_real(&b.w, -0.0);
	jw_real(&b.w, 2.0);
	jw_real(&b.w, 0.29);
	jw_real(&b.w, 1e20);
	jw_real(&b.w, 1e-5);
	jw_real(&b.w, 123456789.125);
	jw_real(&b.w, NAN);
	jw_real(&b.w, INFINITY);
	jw_real(&b.w, -INFINITY);
	jw_arr_end(&b.w);
	json_t *j = jwb_close(&b, NULL);
	cr_assert_str_eq(b.buf,
		"[0,-1,-9223372036854775808,9223372036854775807,"
		"\"0x0\",\"0xffffffffffffffff\",\"0x7f00dead\","
		"0.0,-0.0,2.0,0.28999999999999998,1e20,1.0000000000000001e-5,"
		"123456789.125,null,null,null]\n");
	/* reals stay reals, and read back exactly */
	static const double reals[] = { 0.0, -0.0, 2.0, 0.29, 1e20, 1e-5, 123456789.125 };
	for (size_t i = 0; i < sizeof reals / sizeof *reals; i++) {
		json_t *v = json_array_get(j, 7 + i);
		cr_assert(json_is_real(v), "item %zu", 7 + i);
		cr_assert(json_real_value(v) == reals[i]);
		/* and jansson writes them the same way */
		json_t *r = json_real(reals[i]);
		char *t = json_dumps(r, JSON_ENCODE_ANY);
		cr_assert(strstr(b.buf, t), "%s", t);
		free(t);
		json_decref(r);
	}
	cr_assert_eq(json_integer_value(json_array_get(j, 2)), INT64_MIN);
	json_decref(j);
	free(b.buf);
}

Test(jwriter, misuse_and_write_errors_are_reported)
{
	struct jw_buf b;
	int st;
	/* a value in an object without its key */
	jwb_open(&b, false);
	jw_obj(&b.w);
	jw_int(&b.w, 1);
	jw_obj_end(&b.w);
	st = jw_finish(&b.w);
	fclose(b.f);
	cr_assert_eq(st, -1);
	free(b.buf);
	/* left open; closed with the wrong bracket; a key with no value */
	for (int k = 0; k < 3; k++) {
		jwb_open(&b, k == 1);
		jw_obj(&b.w);
		if (k == 1)
			jw_arr_end(&b.w);
		if (k == 2) {
			jw_key(&b.w, "x");
			jw_obj_end(&b.w);
		}
		st = jw_finish(&b.w);
		fclose(b.f);
		cr_assert_eq(st, -1, "case %d", k);
		free(b.buf);
	}
	/* deeper than the writer keeps track of */
	jwb_open(&b, false);
	for (int i = 0; i < JW_MAX_DEPTH + 2; i++)
		jw_arr(&b.w);
	for (int i = 0; i < JW_MAX_DEPTH + 2; i++)
		jw_arr_end(&b.w);
	st = jw_finish(&b.w);
	fclose(b.f);
	cr_assert_eq(st, -1);
	free(b.buf);
	/* two documents */
	jwb_open(&b, false);
	jw_int(&b.w, 1);
	jw_int(&b.w, 2);
	st = jw_finish(&b.w);
	fclose(b.f);
	cr_assert_eq(st, -1);
	free(b.buf);
	/* a stream that cannot be written */
	FILE *full = fopen("/dev/full", "w");
	cr_assert(full);
	setvbuf(full, NULL, _IONBF, 0);
	struct jw w;
	jw_init(&w, full, true);
	nested_doc(&w);
	cr_assert_eq(jw_finish(&w), -1);
	fclose(full);
}
