/*
 * say.c: the reason of a failure, formatted into the caller's why[] - the
 * one way the layout (layout.c) and the core reader (core/) explain a
 * refusal - and the list of warnings a target (psvc_target_warn) and a
 * core file (psvc_core_warn) collect, each with its own limit.
 */
#include "psvc_int.h"

#include "array.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

void psvc_say(char *why, size_t whylen, const char *fmt, ...)
{
	if (!why || !whylen)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, whylen, fmt, ap);
	va_end(ap);
}

void psvc_warnings_vadd(struct psvc_warnings *w, const char *fmt, va_list ap)
{
	if (array_grow(&w->v, &w->cap, w->n + 1, sizeof *w->v, 8))
		return;
	char *m = NULL;
	if (vasprintf(&m, fmt, ap) >= 0)
		w->v[w->n++] = m;
}

void psvc_warnings_add(struct psvc_warnings *w, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	psvc_warnings_vadd(w, fmt, ap);
	va_end(ap);
}

const char *psvc_warnings_at(const struct psvc_warnings *w, size_t i)
{
	return i < w->n ? w->v[i] : NULL;
}

void psvc_warnings_free(struct psvc_warnings *w)
{
	for (size_t i = 0; i < w->n; i++)
		free(w->v[i]);
	free(w->v);
	*w = (struct psvc_warnings){ 0 };
}
