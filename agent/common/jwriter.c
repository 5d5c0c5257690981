/*
 * jwriter.c: a streaming JSON writer.  The snapshot of a 10000-thread
 * process is tens of megabytes of JSON; building it as a jansson tree first
 * cost more time (and memory) than the whole capture.  This writes straight
 * to the stream, in document order, with the escaping RFC 8259 requires.
 *
 * Strings are target bytes, i.e. hostile: anything that is not valid UTF-8
 * (RFC 3629: no overlong forms, no surrogates, nothing above U+10FFFF) and
 * NUL are written as U+FFFD, so the document always parses; U+2028 and
 * U+2029 are escaped, so that no reader sees a line end inside it.
 *
 * The layout is byte for byte the one jansson's json_dumpf() gave with
 * JSON_COMPACT or JSON_INDENT(2) (the format before this writer): the same
 * separators, the same escapes (\b \f \n \r \t, other controls \u00XX),
 * reals as "%.17g" with ".0" added to integral values (they must stay
 * reals for readers) and exponents without '+' or leading zeros.
 *
 * The stream is written with the *_unlocked stdio calls between
 * jw_init() (which takes the stream's lock) and jw_finish() (which
 * releases it).
 */
#include "jwriter.h"

#include <inttypes.h>
#include <locale.h>
#include <math.h>
#include <string.h>

size_t agent_utf8_seq(const unsigned char *s, size_t n)
{
	unsigned c = s[0];
	size_t len;
	unsigned min;
	if (c == 0)
		return 0;
	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		len = 2, min = 0x80;
	else if (c >= 0xe0 && c <= 0xef)
		len = 3, min = 0x800;
	else if (c >= 0xf0 && c <= 0xf4)
		len = 4, min = 0x10000;
	else
		return 0;	/* 0x80-0xc1 (continuation, overlong), 0xf5-0xff */
	if (len > n)
		return 0;
	unsigned cp = c & (0x7fu >> len);
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3fu);
	}
	if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return len;
}

bool agent_utf8_lossless(const char *s, size_t n)
{
	const unsigned char *u = (const unsigned char *)s;
	for (size_t i = 0; i < n;) {
		if (u[i] && u[i] < 0x80) {
			i++;
			continue;
		}
		size_t l = agent_utf8_seq(u + i, n - i);
		if (!l)
			return false;
		i += l;
	}
	return true;
}

static inline void out_c(struct jw *w, char c)
{
	putc_unlocked(c, w->out);
}

static inline void out_n(struct jw *w, const char *s, size_t n)
{
	fwrite_unlocked(s, 1, n, w->out);
}

void jw_init(struct jw *w, FILE *out, bool pretty)
{
	memset(w, 0, sizeof *w);
	w->out = out;
	w->pretty = pretty;
	w->first[0] = true;
	flockfile(out);
}

static void newline(struct jw *w)
{
	static const char spaces[] = "                                ";
	if (!w->pretty)
		return;
	out_c(w, '\n');
	for (int i = 0; i < w->depth; i++)
		out_n(w, spaces, 2);
}

/* Before a value or a key: the separator its position needs.  A value
 * right after its key needs none. */
static void before(struct jw *w)
{
	if (w->after_key) {
		w->after_key = false;
		return;
	}
	if ((w->depth > 0 && w->in_obj[w->depth]) ||
	    (w->depth == 0 && !w->first[0]))
		w->misuse = true;	/* a value in an object without a key,
					 * or a second document */
	if (!w->first[w->depth])
		out_c(w, ',');
	w->first[w->depth] = false;
	if (w->depth > 0)
		newline(w);
}

static void open_(struct jw *w, char c, bool obj)
{
	before(w);
	out_c(w, c);
	if (w->depth + 1 >= JW_MAX_DEPTH) {
		/* deeper than any document of ours: the output cannot be
		 * trusted any more, jw_finish() says so */
		w->misuse = true;
		return;
	}
	w->depth++;
	w->first[w->depth] = true;
	w->in_obj[w->depth] = obj;
}

static void close_(struct jw *w, char c, bool obj)
{
	if (w->depth == 0 || w->in_obj[w->depth] != obj || w->after_key) {
		w->misuse = true;
		return;
	}
	bool empty = w->first[w->depth];
	w->depth--;
	if (!empty)
		newline(w);
	out_c(w, c);
}

void jw_obj(struct jw *w) { open_(w, '{', true); }
void jw_obj_end(struct jw *w) { close_(w, '}', true); }
void jw_arr(struct jw *w) { open_(w, '[', false); }
void jw_arr_end(struct jw *w) { close_(w, ']', false); }

/* U+2028 LINE SEPARATOR and U+2029 PARAGRAPH SEPARATOR (E2 80 A8/A9) are
 * valid raw in a JSON string, but readers that split text on Unicode line
 * boundaries (Python's str.splitlines(), JavaScript before ES2019) would
 * cut a line of NDJSON in two: they are always written escaped. */
static bool is_line_separator(const unsigned char *u)
{
	return u[0] == 0xe2 && u[1] == 0x80 && (u[2] == 0xa8 || u[2] == 0xa9);
}

/* The next character of s as written: a valid sequence as it is, an
 * invalid byte (or NUL) as U+FFFD.  Advances *i. */
static const unsigned char *written_char(const unsigned char *s, size_t n,
					 size_t *i, size_t *ret_len)
{
	static const unsigned char fffd[] = { 0xef, 0xbf, 0xbd };
	size_t l = agent_utf8_seq(s + *i, n - *i);
	const unsigned char *c = l ? s + *i : fffd;
	*ret_len = l ? l : sizeof fffd;
	*i += l ? l : 1;
	return c;
}

bool agent_json_same_key(const char *a, const char *b)
{
	const unsigned char *x = (const unsigned char *)a, *y = (const unsigned char *)b;
	size_t nx = strlen(a), ny = strlen(b), i = 0, j = 0;
	while (i < nx && j < ny) {
		size_t lx, ly;
		const unsigned char *cx = written_char(x, nx, &i, &lx);
		const unsigned char *cy = written_char(y, ny, &j, &ly);
		if (lx != ly || memcmp(cx, cy, lx))
			return false;
	}
	return i == nx && j == ny;
}

/* The bytes as the inside of a JSON string. */
static void put_chars(struct jw *w, const char *s, size_t n)
{
	static const char hex[] = "0123456789ABCDEF";
	const unsigned char *u = (const unsigned char *)s;
	for (size_t i = 0; i < n;) {
		unsigned char c = u[i];
		if (c >= 0x20 && c < 0x80 && c != '"' && c != '\\') {
			/* the common case: a run of plain ASCII */
			size_t j = i + 1;
			while (j < n && u[j] >= 0x20 && u[j] < 0x80 && u[j] != '"' &&
			       u[j] != '\\')
				j++;
			out_n(w, s + i, j - i);
			i = j;
			continue;
		}
		const char *esc = NULL;
		switch (c) {
		case '"': esc = "\\\""; break;
		case '\\': esc = "\\\\"; break;
		case '\b': esc = "\\b"; break;
		case '\f': esc = "\\f"; break;
		case '\n': esc = "\\n"; break;
		case '\r': esc = "\\r"; break;
		case '\t': esc = "\\t"; break;
		default: break;
		}
		if (esc) {
			out_n(w, esc, 2);
			i++;
			continue;
		}
		if (c > 0 && c < 0x20) {
			char b[6] = { '\\', 'u', '0', '0', hex[c >> 4], hex[c & 15] };
			out_n(w, b, 6);
			i++;
			continue;
		}
		size_t l = agent_utf8_seq(u + i, n - i);
		if (l == 3 && is_line_separator(u + i)) {
			out_n(w, u[i + 2] == 0xa8 ? "\\u2028" : "\\u2029", 6);
			i += 3;
		} else if (l) {
			out_n(w, s + i, l);
			i += l;
		} else {
			out_n(w, "\xef\xbf\xbd", 3);	/* U+FFFD */
			i++;
		}
	}
}

void jw_key(struct jw *w, const char *k)
{
	if (w->depth == 0 || !w->in_obj[w->depth] || w->after_key)
		w->misuse = true;
	w->after_key = false;
	if (!w->first[w->depth])
		out_c(w, ',');
	w->first[w->depth] = false;
	newline(w);
	out_c(w, '"');
	put_chars(w, k, strlen(k));
	out_n(w, "\": ", w->pretty ? 3 : 2);
	w->after_key = true;
}

void jw_strn(struct jw *w, const char *s, size_t n)
{
	before(w);
	if (!s) {
		out_n(w, "null", 4);
		return;
	}
	out_c(w, '"');
	put_chars(w, s, n);
	out_c(w, '"');
}

void jw_str(struct jw *w, const char *s)
{
	jw_strn(w, s, s ? strlen(s) : 0);
}

void jw_str_cat(struct jw *w, const char *s, const char *tail)
{
	before(w);
	out_c(w, '"');
	put_chars(w, s, strlen(s));
	put_chars(w, tail, strlen(tail));
	out_c(w, '"');
}

void jw_null(struct jw *w)
{
	before(w);
	out_n(w, "null", 4);
}

void jw_bool(struct jw *w, bool v)
{
	before(w);
	if (v)
		out_n(w, "true", 4);
	else
		out_n(w, "false", 5);
}

/* Decimal digits of v, right-aligned in b[0..24), returns the first. */
static char *fmt_u64(char b[24], uint64_t v)
{
	char *p = b + 24;
	do
		*--p = (char)('0' + v % 10);
	while (v /= 10);
	return p;
}

void jw_int(struct jw *w, int64_t v)
{
	char b[24];
	before(w);
	if (v < 0) {
		out_c(w, '-');
		char *p = fmt_u64(b, -(uint64_t)v);
		out_n(w, p, (size_t)(b + 24 - p));
		return;
	}
	char *p = fmt_u64(b, (uint64_t)v);
	out_n(w, p, (size_t)(b + 24 - p));
}

void jw_hex(struct jw *w, uint64_t v)
{
	static const char hex[] = "0123456789abcdef";
	char b[24];
	char *p = b + sizeof b;
	*--p = '"';
	do
		*--p = hex[v & 15];
	while (v >>= 4);
	*--p = 'x';
	*--p = '0';
	*--p = '"';
	before(w);
	out_n(w, p, (size_t)(b + sizeof b - p));
}

void jw_real(struct jw *w, double v)
{
	before(w);
	if (!isfinite(v)) {
		out_n(w, "null", 4);	/* JSON has no NaN or infinity */
		return;
	}
	char b[40];
	int n = snprintf(b, sizeof b - 2, "%.17g", v);
	if (n < 0 || (size_t)n >= sizeof b - 2) {
		out_n(w, "null", 4);
		return;
	}
	/* a decimal point of another locale (embedders may set one) */
	const char *dp = localeconv()->decimal_point;
	if (dp && dp[0] && strcmp(dp, ".") != 0) {
		char *q = strstr(b, dp);
		if (q) {
			size_t dl = strlen(dp);
			*q = '.';
			memmove(q + 1, q + dl, strlen(q + dl) + 1);
			n -= (int)dl - 1;
		}
	}
	/* integral values keep a ".0": readers must see a real */
	if (!strchr(b, '.') && !strchr(b, 'e')) {
		memcpy(b + n, ".0", 3);
		n += 2;
	}
	/* "1e+20" -> "1e20", "1e-05" -> "1e-5" */
	char *e = strchr(b, 'e');
	if (e) {
		char *start = e + 1, *end = e + 2;
		if (*start == '-')
			start++;
		while (*end == '0')
			end++;
		if (end != start) {
			memmove(start, end, strlen(end) + 1);
			n = (int)strlen(b);
		}
	}
	out_n(w, b, (size_t)n);
}

void jw_hexbytes(struct jw *w, const void *s, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *u = s;
	before(w);
	out_c(w, '"');
	for (size_t i = 0; i < n; i++) {
		char b[2] = { hex[u[i] >> 4], hex[u[i] & 15] };
		out_n(w, b, 2);
	}
	out_c(w, '"');
}

int jw_finish(struct jw *w)
{
	bool bad = w->misuse || w->depth != 0 || w->after_key;
	out_c(w, '\n');
	int err = ferror_unlocked(w->out);
	funlockfile(w->out);
	return bad || err ? -1 : 0;
}

void jw_kstr(struct jw *w, const char *k, const char *v)
{
	jw_key(w, k);
	jw_str(w, v);
}

void jw_kint(struct jw *w, const char *k, int64_t v)
{
	jw_key(w, k);
	jw_int(w, v);
}

void jw_khex(struct jw *w, const char *k, uint64_t v)
{
	jw_key(w, k);
	jw_hex(w, v);
}

void jw_kbool(struct jw *w, const char *k, bool v)
{
	jw_key(w, k);
	jw_bool(w, v);
}

void jw_knull(struct jw *w, const char *k)
{
	jw_key(w, k);
	jw_null(w);
}
