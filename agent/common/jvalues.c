/*
 * jvalues.c: values that the snapshot document (json/) and the watch
 * stream's lines (watch/, lockorder/) write alike: a symbol object or null, a
 * thread id that is null when it is not known, and the members every
 * stream line starts with.
 */
#include "agent.h"
#include "jwriter.h"

void json_symbol(struct jw *w, const tinspect_symbol *s)
{
	if (!s) {
		jw_null(w);
		return;
	}
	jw_obj(w);
	jw_khex(w, "addr", tinspect_symbol_addr(s));
	jw_kstr(w, "module", tinspect_symbol_module(s));
	jw_kstr(w, "symbol", tinspect_symbol_name(s));
	jw_kint(w, "offset", (int64_t)tinspect_symbol_offset(s));
	jw_obj_end(w);
}

void json_tid(struct jw *w, const char *k, pid_t tid)
{
	if (tid > 0)
		jw_kint(w, k, tid);
	else
		jw_knull(w, k);
}

void json_line_head(struct jw *w, const char *kind, pid_t pid, const char *when)
{
	jw_obj(w);
	jw_kstr(w, "format_version", TINSPECT_FORMAT_VERSION);
	jw_kstr(w, "kind", kind);
	jw_kint(w, "pid", pid);
	jw_kstr(w, "time", when);
}
