/*
 * coresay.c: the core reader's messages - the warnings a damaged core
 * earns, the names of compressions (why an open failed is psvc_say(),
 * common/say.c).  A leaf: every other file of the reader uses it, it uses
 * none of them.
 */
#include "core_int.h"

#include <stdarg.h>
#include <stdio.h>

#define MAX_WARNINGS 64

void psvc_core_warn(struct psvc_core *c, const char *fmt, ...)
{
	/* a damaged core can repeat one fault thousands of times: the first
	 * ones say what it is, the last line how many more there were */
	if (c->warnings.n > MAX_WARNINGS)
		return;
	char buf[256];
	if (c->warnings.n == MAX_WARNINGS)
		snprintf(buf, sizeof buf, "more warnings left out");
	else {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(buf, sizeof buf, fmt, ap);
		va_end(ap);
	}
	psvc_warnings_add(&c->warnings, "%s", buf);
}

const char *psvc_core_zip_name(enum psvc_core_zip z)
{
	switch (z) {
	case PSVC_CORE_PLAIN: return "plain";
	case PSVC_CORE_ZSTD: return "zstd";
	case PSVC_CORE_XZ: return "xz";
	case PSVC_CORE_LZ4: return "lz4";
	}
	return "?";
}

