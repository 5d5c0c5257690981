/*
 * messages.c: the strings the session hands out.  Copies of strings that
 * may be NULL, messages formatted into a fresh string, and messages added
 * to a list (a thread's errors, the snapshot's errors and warnings).  Out
 * of memory loses the message, never the snapshot.  A leaf: every file of
 * dbsession may use it, it uses none of them.
 */
#include "dbs_int.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"

char *dbs_strdup(const char *s)
{
	return s ? strdup(s) : NULL;
}

char *dbs_vformat(const char *fmt, va_list ap)
{
	char *msg;
	if (vasprintf(&msg, fmt, ap) < 0)
		return NULL;
	return msg;
}

char *dbs_format(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *msg = dbs_vformat(fmt, ap);
	va_end(ap);
	return msg;
}

int dbs_add_error(char ***errs, size_t *n, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *msg = dbs_vformat(fmt, ap);
	va_end(ap);
	if (!msg)
		return -ENOMEM;
	char **slot = array_push(errs, n, sizeof *slot);
	if (!slot) {
		free(msg);
		return -ENOMEM;
	}
	*slot = msg;
	return 0;
}
