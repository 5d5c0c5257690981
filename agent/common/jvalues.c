/*
 * jvalues.c: values that the snapshot document (json/) and the watch
 * stream's lines (watch/) write alike: a symbol object, and a thread id
 * that is null when it is not known.
 */
#include "jwriter.h"

void json_symbol(struct jw *w, const tinspect_symbol *s)
{
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
