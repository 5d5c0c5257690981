/*
 * fuzz_layout: the reader of target-described layouts (layout.c), the
 * check of libthread_db's descriptors (tdbcheck.c) and the key layout
 * (keys.c) over a synthetic memory image made of the input.  The image
 * holds every _thread_db_* descriptor libthread_db and tinspect read, one
 * in each 12-byte slot (a short input is a target without the later
 * ones), then __pthread_keys.  Whatever the bytes: no crash, no read
 * outside the image, and what passes holds together (every field lies
 * inside its struct; an element address of a field never wraps).
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dbs_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define BASE 0x7f0000000000ull

static const char *const names[] = {
	"_thread_db_sizeof_pthread", "_thread_db_sizeof_list_t",
	"_thread_db_sizeof_td_thr_events_t", "_thread_db_sizeof_td_eventbuf_t",
	"_thread_db_sizeof_pthread_key_struct", "_thread_db_sizeof_pthread_key_data",
	"_thread_db_sizeof_pthread_key_data_level2",
	"_thread_db_sizeof_dtv_slotinfo_list", "_thread_db_sizeof_dtv_slotinfo",
	"_thread_db_const_thread_area",
	"_thread_db_pthread_list", "_thread_db_pthread_report_events",
	"_thread_db_pthread_tid", "_thread_db_pthread_start_routine",
	"_thread_db_pthread_cancelhandling", "_thread_db_pthread_schedpolicy",
	"_thread_db_pthread_schedparam_sched_priority", "_thread_db_pthread_specific",
	"_thread_db_pthread_eventbuf", "_thread_db_pthread_eventbuf_eventmask",
	"_thread_db_pthread_eventbuf_eventmask_event_bits",
	"_thread_db_pthread_nextevent", "_thread_db_pthread_dtvp",
	"_thread_db_list_t_next", "_thread_db_list_t_prev",
	"_thread_db_td_thr_events_t_event_bits", "_thread_db_td_eventbuf_t_eventnum",
	"_thread_db_td_eventbuf_t_eventdata", "_thread_db_pthread_key_struct_seq",
	"_thread_db_pthread_key_struct_destr", "_thread_db_pthread_key_data_seq",
	"_thread_db_pthread_key_data_data", "_thread_db_pthread_key_data_level2_data",
	"_thread_db_dtv_slotinfo_list_len", "_thread_db_dtv_slotinfo_list_next",
	"_thread_db_dtv_slotinfo_list_slotinfo", "_thread_db_dtv_slotinfo_gen",
	"_thread_db_dtv_slotinfo_map", "_thread_db_link_map_l_tls_modid",
	"_thread_db_link_map_l_tls_offset", "_thread_db_dtv_dtv",
	"_thread_db_dtv_t_pointer_val", "_thread_db_dtv_t_counter",
	"_thread_db_rtld_global__dl_stack_used", "_thread_db_rtld_global__dl_stack_user",
	"_thread_db_rtld_global__dl_tls_dtv_slotinfo_list",
	"_thread_db___nptl_nthreads", "_thread_db___nptl_last_event",
	"_thread_db___nptl_rtld_global", "_thread_db___pthread_keys",
	"__pthread_keys",
};
#define NNAMES (sizeof names / sizeof *names)

struct image {
	const uint8_t *p;
	size_t n;
};

static int img_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	const struct image *im = ctx;
	if (addr < BASE || !psvc_span_ok(addr - BASE, len, im->n))
		return -EFAULT;
	memcpy(buf, im->p + (addr - BASE), len);
	return 0;
}

static int img_lookup(void *ctx, const char *name, uint64_t *ret)
{
	const struct image *im = ctx;
	for (size_t i = 0; i < NNAMES; i++)
		if (!strcmp(names[i], name)) {
			if ((i + 1) * 12 > im->n)
				return -ENOENT;	/* past the input: absent */
			*ret = BASE + i * 12;
			return 0;
		}
	return -ENOENT;
}

static size_t npins;

static void pin(void *ctx, uint64_t addr, const void *b, size_t len)
{
	const struct image *im = ctx;
	/* only what was read, and no more than a descriptor */
	if (len > 12 || addr < BASE || !psvc_span_ok(addr - BASE, len, im->n))
		abort();
	(void)b;
	npins++;
}

static void check_field(const struct psvc_field *f, uint64_t struct_size)
{
	uint64_t bytes;
	if (!psvc_mul_ok(f->elem_size, f->count, &bytes) ||
	    !psvc_span_ok(f->offset, bytes, struct_size))
		abort();
	uint64_t a;
	if (f->count && psvc_field_addr(UINT64_MAX - f->offset - bytes, f,
					f->count - 1, &a) != 0)
		abort();
	if (psvc_field_addr(UINT64_MAX - 4, f, 0, &a) == 0 && a < UINT64_MAX - 4)
		abort();	/* wrapped */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct image im = { data, size };
	struct psvc_layout_src src = { img_lookup, img_read, &im };
	char why[256];

	for (int arch = 0; arch < 2; arch++) {
		struct tdb_check_io io = { src, arch ? ARCH_AARCH64 : ARCH_X86_64,
					   pin, &im };
		uint32_t sz = 0xdeadbeef;
		npins = 0;
		int r = dbs_tdb_check_layouts(&io, &sz, why, sizeof why);
		if (r != 0 && r != -EPROTO)
			abort();
		if (sz && (sz < 512 || sz > 65536))
			abort();
		if (r == -EPROTO && !why[0])
			abort();

		struct key_layout L;
		why[0] = '\0';
		r = dbs_keys_layout_load(&src, sz, &L, why, sizeof why);
		if (r && !why[0])
			abort();
		if (r == 0) {
			if (L.ks_size < 16 || L.ks_size > 256 || L.kd_size < 16 ||
			    L.kd_size > 256 || !L.nkeys || L.nkeys > 65536)
				abort();
			check_field(&L.ks_seq, L.ks_size);
			check_field(&L.ks_destr, L.ks_size);
			check_field(&L.kd_seq, L.kd_size);
			check_field(&L.kd_data, L.kd_size);
			check_field(&L.specific, sz);
			if (L.specific.count * L.level2.count < L.nkeys)
				abort();
			/* what dbs_keys_gather does with a block and an entry */
			unsigned char pair[256] = { 0 };
			uint64_t v;
			if (psvc_field_get(pair, L.kd_size, &L.kd_seq, 0, &v, 8) ||
			    psvc_field_get(pair, L.kd_size, &L.kd_data, 0, &v, 8))
				abort();
		}
	}

	/* the reader itself on every slot, with rules taken from the input */
	for (size_t i = 0; i + 1 < NNAMES && (i + 1) * 12 <= size; i++) {
		struct psvc_desc d;
		if (psvc_desc_read(&src, names[i], &d, why, sizeof why))
			continue;
		struct psvc_field_rule rule = {
			"the struct", d.offset ^ d.count, (uint32_t)(i % 3) * 32,
			i % 2, (uint64_t)d.bits << (i % 7),
		};
		struct psvc_field f;
		if (psvc_field_check(names[i], &d, &rule, &f, why, sizeof why) == 0)
			check_field(&f, rule.struct_size);
	}
	return 0;
}
