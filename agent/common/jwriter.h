/*
 * jwriter.h: the program's one JSON writer (jwriter.c) and the values its
 * documents share (jvalues.c).
 */
#ifndef TINSPECT_AGENT_JWRITER_H
#define TINSPECT_AGENT_JWRITER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include <tinspect/tinspect.h>

/*
 * jwriter.c: a streaming JSON writer (RFC 8259), in document order, to a
 * FILE.  Every string is written as valid UTF-8 whatever its bytes: an
 * invalid sequence (RFC 3629: overlong, surrogate, above U+10FFFF,
 * truncated) or a NUL byte becomes U+FFFD; controls are escaped.  Layout:
 * compact, or indented by two spaces per level (pretty).
 *
 * Usage: jw_init(), then values: containers opened and closed in order, in
 * an object jw_key() before each value; jw_finish() ends the line and
 * says whether all went well.  The stream is locked from jw_init() to
 * jw_finish(), so nothing else may write it in between.
 */
#define JW_MAX_DEPTH 16
struct jw {
	FILE *out;
	bool pretty;
	bool after_key;			/* a key was written: its value is next */
	bool misuse;			/* nesting error: the output is wrong */
	int depth;			/* open containers */
	bool first[JW_MAX_DEPTH];	/* nothing written yet at this level */
	bool in_obj[JW_MAX_DEPTH];	/* this level is an object */
};

void jw_init(struct jw *w, FILE *out, bool pretty);
/* 0, or -1 if the stream had an error or the calls did not nest. */
int jw_finish(struct jw *w);
void jw_obj(struct jw *w);
void jw_obj_end(struct jw *w);
void jw_arr(struct jw *w);
void jw_arr_end(struct jw *w);
void jw_key(struct jw *w, const char *k);	/* any bytes, made UTF-8 */
/* A string; NULL writes null. */
void jw_str(struct jw *w, const char *s);
void jw_strn(struct jw *w, const char *s, size_t n);
/* One string of s followed by tail (neither NULL). */
void jw_str_cat(struct jw *w, const char *s, const char *tail);
void jw_null(struct jw *w);
void jw_bool(struct jw *w, bool v);
void jw_int(struct jw *w, int64_t v);
/* "0x..." lowercase: 64-bit values for readers with 53-bit numbers */
void jw_hex(struct jw *w, uint64_t v);
/* A real ("%.17g", always with '.' or an exponent); NaN and infinities
 * are written as null. */
void jw_real(struct jw *w, double v);
/* The bytes as one string of lowercase hex digits. */
void jw_hexbytes(struct jw *w, const void *s, size_t n);
/* "k": value, for the common kinds of value in an object */
void jw_kstr(struct jw *w, const char *k, const char *v);
void jw_kint(struct jw *w, const char *k, int64_t v);
void jw_khex(struct jw *w, const char *k, uint64_t v);
void jw_kbool(struct jw *w, const char *k, bool v);
void jw_knull(struct jw *w, const char *k);

/* Length of the valid UTF-8 sequence at s (at most n bytes), 0 if it is
 * invalid or NUL. */
size_t agent_utf8_seq(const unsigned char *s, size_t n);
/* Whether the bytes are written as they are (no U+FFFD). */
bool agent_utf8_lossless(const char *s, size_t n);
/* Whether a and b are the same JSON string once written (equal after
 * every invalid byte became U+FFFD): the same key of an object. */
bool agent_json_same_key(const char *a, const char *b);

/* jvalues.c: a symbol object, or null for none (NULL); "k": a tid, or null
 * for 0 (unknown). */
void json_symbol(struct jw *w, const tinspect_symbol *s);
void json_tid(struct jw *w, const char *k, pid_t tid);
/* jvalues.c: open a stream line's object (watch/, lockorder/'s events) with
 * the members every line starts with: format_version, kind, pid, time. */
void json_line_head(struct jw *w, const char *kind, pid_t pid, const char *when);

/* waitage.c: "waiting_since", "waiting_seconds" of a thread object, when
 * known. */
void json_waiting(struct jw *w, const tinspect_snapshot *snap,
		  const tinspect_thread *th);

#endif
