/*
 * tdbcheck.c: what libthread_db will believe, checked before it is asked
 * anything.
 *
 * libthread_db takes the layout of the target's structs from descriptors
 * in the target's own memory and trusts them: td_thr_get_info allocas
 * _thread_db_sizeof_pthread bytes and copies the thread's descriptor there
 * (nptl_db/thread_dbP.h DB_GET_STRUCT), then reads fields out of that copy
 * at the offsets the target gives (fetch-value.c _td_fetch_value_local,
 * offset taken as int32); td_thr_tlsbase does the same with
 * dtv_slotinfo.  A target that sets a size to 0xffffffff (its .rodata page
 * made writable) crashes any debugger in the alloca; an offset past the
 * size reads the debugger's own stack.  So every size and field libthread_db
 * may use is checked here against sane bounds, and if one is absurd the
 * library is not used for that target (threads come from /proc, and a
 * warning names the descriptor and its value).  The values checked are
 * then pinned (psvc_pin): libthread_db reads exactly them, even if the
 * target rewrites its memory between this check and the stop.
 *
 * The bounds: glibc 2.36 on x86_64 has struct pthread of 2368 bytes, the
 * other structs a few dozen (verified with the _thread_db_* values of
 * Debian 12's libc); the bounds leave room for other versions and
 * architectures, not for nonsense.
 */
#include "dbs_int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

enum {
	S_PTHREAD, S_LIST_T, S_EVENTS, S_EVENTBUF, S_KEY_STRUCT, S_KEY_DATA,
	S_KEY_LEVEL2, S_SLOTINFO_LIST, S_SLOTINFO,
	NSIZES,
	/* structs libthread_db only reads in target memory, without a
	 * size descriptor: bounded loosely */
	S_LINK_MAP = NSIZES, S_DTV, S_DTV_T, S_RTLD_GLOBAL, S_VARIABLE,
	NSTRUCTS
};

static const struct {
	const char *sym, *cname;
	uint32_t min, max;
} sizes[NSIZES] = {
	[S_PTHREAD] = { "_thread_db_sizeof_pthread", "struct pthread", 512, 65536 },
	[S_LIST_T] = { "_thread_db_sizeof_list_t", "list_t", 8, 256 },
	[S_EVENTS] = { "_thread_db_sizeof_td_thr_events_t", "td_thr_events_t", 4, 256 },
	[S_EVENTBUF] = { "_thread_db_sizeof_td_eventbuf_t", "td_eventbuf_t", 8, 256 },
	[S_KEY_STRUCT] = { "_thread_db_sizeof_pthread_key_struct",
			   "struct pthread_key_struct", 8, 256 },
	[S_KEY_DATA] = { "_thread_db_sizeof_pthread_key_data",
			 "struct pthread_key_data", 8, 256 },
	[S_KEY_LEVEL2] = { "_thread_db_sizeof_pthread_key_data_level2",
			   "pthread_key_data level 2", 8, 65536 },
	[S_SLOTINFO_LIST] = { "_thread_db_sizeof_dtv_slotinfo_list",
			      "struct dtv_slotinfo_list", 8, 4096 },
	[S_SLOTINFO] = { "_thread_db_sizeof_dtv_slotinfo", "struct dtv_slotinfo",
			 8, 256 },
};

static const struct {
	const char *cname;
	uint64_t size;
} loose[NSTRUCTS - NSIZES] = {
	[S_LINK_MAP - NSIZES] = { "struct link_map (64 KiB at most)", 64 * 1024 },
	[S_DTV - NSIZES] = { "the DTV", 1ull << 40 },
	[S_DTV_T - NSIZES] = { "dtv_t (1 KiB at most)", 1024 },
	[S_RTLD_GLOBAL - NSIZES] = { "struct rtld_global (1 MiB at most)", 1u << 20 },
	[S_VARIABLE - NSIZES] = { "a variable (16 MiB at most)", 16u << 20 },
};

/* Every field descriptor of glibc's nptl_db/structs.def: what
 * libthread_db copies locally must lie inside the copy, the rest inside
 * a plausible struct. */
static const struct {
	const char *sym;
	int in;			/* S_* */
	uint32_t max_count;	/* elements it may hold */
	/* it may also lie in the TCB above struct pthread (aarch64: the DTV
	 * pointer, at the thread pointer; libthread_db reads it in the
	 * target, td_thr_tlsbase, never in its copy of the struct) */
	bool tcb;
} fields[] = {
	{ "_thread_db_pthread_list", S_PTHREAD, 1 },
	{ "_thread_db_pthread_report_events", S_PTHREAD, 1 },
	{ "_thread_db_pthread_tid", S_PTHREAD, 1 },
	{ "_thread_db_pthread_start_routine", S_PTHREAD, 1 },
	{ "_thread_db_pthread_cancelhandling", S_PTHREAD, 1 },
	{ "_thread_db_pthread_schedpolicy", S_PTHREAD, 1 },
	{ "_thread_db_pthread_schedparam_sched_priority", S_PTHREAD, 1 },
	{ "_thread_db_pthread_specific", S_PTHREAD, 1 },
	{ "_thread_db_pthread_eventbuf", S_PTHREAD, 1 },
	{ "_thread_db_pthread_eventbuf_eventmask", S_PTHREAD, 1 },
	{ "_thread_db_pthread_eventbuf_eventmask_event_bits", S_PTHREAD, 16 },
	{ "_thread_db_pthread_nextevent", S_PTHREAD, 1 },
	{ "_thread_db_pthread_dtvp", S_PTHREAD, 1, true },
	{ "_thread_db_list_t_next", S_LIST_T, 1 },
	{ "_thread_db_list_t_prev", S_LIST_T, 1 },
	{ "_thread_db_td_thr_events_t_event_bits", S_EVENTS, 16 },
	{ "_thread_db_td_eventbuf_t_eventnum", S_EVENTBUF, 1 },
	{ "_thread_db_td_eventbuf_t_eventdata", S_EVENTBUF, 1 },
	{ "_thread_db_pthread_key_struct_seq", S_KEY_STRUCT, 1 },
	{ "_thread_db_pthread_key_struct_destr", S_KEY_STRUCT, 1 },
	{ "_thread_db_pthread_key_data_seq", S_KEY_DATA, 1 },
	{ "_thread_db_pthread_key_data_data", S_KEY_DATA, 1 },
	{ "_thread_db_pthread_key_data_level2_data", S_KEY_LEVEL2, 65536 },
	{ "_thread_db_dtv_slotinfo_list_len", S_SLOTINFO_LIST, 1 },
	{ "_thread_db_dtv_slotinfo_list_next", S_SLOTINFO_LIST, 1 },
	{ "_thread_db_dtv_slotinfo_list_slotinfo", S_SLOTINFO_LIST, 65536 },
	{ "_thread_db_dtv_slotinfo_gen", S_SLOTINFO, 1 },
	{ "_thread_db_dtv_slotinfo_map", S_SLOTINFO, 1 },
	{ "_thread_db_link_map_l_tls_modid", S_LINK_MAP, 1 },
	{ "_thread_db_link_map_l_tls_offset", S_LINK_MAP, 1 },
	{ "_thread_db_dtv_dtv", S_DTV, 1u << 28 },
	{ "_thread_db_dtv_t_pointer_val", S_DTV_T, 1 },
	{ "_thread_db_dtv_t_counter", S_DTV_T, 1 },
	{ "_thread_db_rtld_global__dl_stack_used", S_RTLD_GLOBAL, 1 },
	{ "_thread_db_rtld_global__dl_stack_user", S_RTLD_GLOBAL, 1 },
	{ "_thread_db_rtld_global__dl_tls_dtv_slotinfo_list", S_RTLD_GLOBAL, 1 },
	{ "_thread_db___nptl_nthreads", S_VARIABLE, 1 },
	{ "_thread_db___nptl_last_event", S_VARIABLE, 1 },
	{ "_thread_db___nptl_rtld_global", S_VARIABLE, 1 },
	{ "_thread_db___nptl_initial_report_events", S_VARIABLE, 1 },
	{ "_thread_db___pthread_keys", S_VARIABLE, 65536 },
	{ "_thread_db__dl_tls_dtv_slotinfo_list", S_VARIABLE, 1 },
	{ "_thread_db__dl_stack_used", S_VARIABLE, 1 },
	{ "_thread_db__dl_stack_user", S_VARIABLE, 1 },
	{ "_thread_db_stack_used", S_VARIABLE, 1 },
	{ "_thread_db___stack_user", S_VARIABLE, 1 },
};

/* Add [off, off + len) of struct pthread to the pieces, merging what
 * lies within 64 bytes of another piece; false if they do not fit. */
static bool add_piece(struct dbs_pieces *p, uint64_t off, uint64_t len)
{
	uint64_t lo = off, hi = off + len;
	for (uint32_t i = 0; i < p->n;) {
		uint64_t a = p->v[i].off, b = a + p->v[i].len;
		if (lo <= b + 64 && a <= hi + 64) {
			lo = lo < a ? lo : a;
			hi = hi > b ? hi : b;
			p->v[i] = p->v[--p->n];	/* merged: look again */
			i = 0;
			continue;
		}
		i++;
	}
	if (p->n == DBS_MAX_PIECES)
		return false;
	p->v[p->n++] = (struct psvc_piece){ (uint32_t)lo, (uint32_t)(hi - lo) };
	/* kept sorted by offset */
	for (uint32_t i = 1; i < p->n; i++)
		for (uint32_t k = i; k > 0 && p->v[k - 1].off > p->v[k].off; k--) {
			struct psvc_piece x = p->v[k];
			p->v[k] = p->v[k - 1];
			p->v[k - 1] = x;
		}
	return true;
}

static void pin(const struct tdb_check_io *io, const char *sym, const void *b,
		size_t len)
{
	uint64_t a;
	if (io->pin && io->src.lookup(io->src.ctx, sym, &a) == 0)
		io->pin(io->pin_ctx, a, b, len);
}

int dbs_tdb_check_layouts(const struct tdb_check_io *io, uint32_t *ret_sizeof_pthread,
		      char *why, size_t whylen)
{
	const struct psvc_layout_src *src = &io->src;
	uint64_t size[NSTRUCTS];
	*ret_sizeof_pthread = 0;
	bool pieces_ok = true;
	if (io->pieces)
		io->pieces->n = 0;
	for (int i = 0; i < NSIZES; i++) {
		uint32_t v;
		int err = psvc_sizeof_read(src, sizes[i].sym, sizes[i].min,
					   sizes[i].max, &v, why, whylen);
		if (err == -ENOENT) {
			/* libthread_db answers TD_NOCAPAB without it */
			size[i] = 0;
			continue;
		}
		if (err)
			return -EPROTO;
		size[i] = v;
		pin(io, sizes[i].sym, &v, sizeof v);
		/* sound on its own, whatever else fails: the key and lock
		 * readers use it even when libthread_db is refused */
		if (i == S_PTHREAD)
			*ret_sizeof_pthread = v;
	}
	for (int i = NSIZES; i < NSTRUCTS; i++)
		size[i] = loose[i - NSIZES].size;

	for (size_t i = 0; i < sizeof fields / sizeof *fields; i++) {
		int in = fields[i].in;
		struct psvc_desc d;
		int err = psvc_desc_read(src, fields[i].sym, &d, why, whylen);
		if (err == -ENOENT)
			continue;
		if (err)
			return -EPROTO;
		struct psvc_field_rule rule = {
			.struct_name = in < NSIZES ? sizes[in].cname
						   : loose[in - NSIZES].cname,
			/* a struct whose size is not described: only its
			 * loose bound (libthread_db never copies it) */
			.struct_size = size[in] ? size[in] : 64 * 1024,
			.min_count = 0,
			.max_count = fields[i].max_count,
		};
		if (fields[i].tcb && size[in]) {
			rule.struct_name = "struct pthread and the TCB above it";
			rule.struct_size += arch_by_id(io->arch_id)->tcb_above_pthread;
		}
		struct psvc_field f;
		/* td_thr_get_info reads TD_EVENTSIZE (2) event words out of
		 * its copy whatever the count says (_td_locate_field lets an
		 * index equal to the count through) */
		struct psvc_desc check = d;
		if (!strcmp(fields[i].sym,
			    "_thread_db_pthread_eventbuf_eventmask_event_bits") &&
		    check.count < 2)
			check.count = 2;
		if (psvc_field_check(fields[i].sym, &check, &rule, &f, why, whylen))
			return -EPROTO;
		if (in == S_DTV && f.elem_size < 8) {
			snprintf(why, whylen, "%s: a DTV entry of %" PRIu32
				 " bits", fields[i].sym, d.bits);
			return -EPROTO;
		}
		if (in == S_DTV)
			size[S_DTV_T] = f.elem_size;
		uint32_t w[3] = { d.bits, d.count, d.offset };
		pin(io, fields[i].sym, w, sizeof w);
		/* checked inside struct pthread: offset + bytes fit */
		if (in == S_PTHREAD && io->pieces && pieces_ok)
			pieces_ok = add_piece(io->pieces, f.offset,
					      (uint64_t)f.elem_size *
						      (check.count ? check.count : 1));
	}
	if (io->pieces && (!pieces_ok || !size[S_PTHREAD]))
		io->pieces->n = 0;

	/* x86_64 and aarch64 find a thread's descriptor with
	 * ps_get_thread_area(lwp, const_thread_area): FS (25) on x86_64, the
	 * size of struct pthread below TPIDR_EL0 on aarch64 (glibc's
	 * sysdeps/.../nptl/tls.h DB_THREAD_SELF). */
	uint64_t a;
	uint32_t cta;
	if (src->lookup(src->ctx, "_thread_db_const_thread_area", &a) == 0) {
		if (src->read(src->ctx, a, &cta, sizeof cta)) {
			snprintf(why, whylen, "_thread_db_const_thread_area cannot "
				 "be read");
			return -EPROTO;
		}
		int tca = arch_by_id(io->arch_id)->tdb_const_thread_area;
		uint32_t want = tca < 0 ? (uint32_t)size[S_PTHREAD] : (uint32_t)tca;
		if (cta != want) {
			snprintf(why, whylen, "_thread_db_const_thread_area is %"
				 PRIu32 " (%#" PRIx32 "), not %" PRIu32, cta, cta,
				 want);
			return -EPROTO;
		}
		pin(io, "_thread_db_const_thread_area", &cta, sizeof cta);
	}
	return 0;
}
