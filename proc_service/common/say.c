/*
 * say.c: the reason of a failure, formatted into the caller's why[] - the
 * one way the layout (layout.c) and the core reader (core/) explain a
 * refusal.
 */
#include "psvc_int.h"

#include <stdarg.h>
#include <stdio.h>

void psvc_say(char *why, size_t whylen, const char *fmt, ...)
{
	if (!why || !whylen)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, whylen, fmt, ap);
	va_end(ap);
}
