/*
 * test_layout: the one reader of target-described layouts
 * (proc_service/common/layout.c), the check of libthread_db's descriptors
 * (dbsession/libc/tdbcheck.c), the key layout (keys.c) and the link_map walk
 * (linkmap.c), on synthetic memory images: huge, negative and wrapping
 * values must be refused with a reason, never read through.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dbs_int.h"
#include "psvc_int.h"

/* ---- a synthetic image ----------------------------------------------------------- */

#define BASE 0x10000u

struct image {
	unsigned char bytes[64 * 1024];
	size_t len;		/* readable: [BASE, BASE + len) */
	struct {
		const char *name;
		uint64_t addr;
	} syms[128];
	size_t nsyms;
};

static int img_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	struct image *im = ctx;
	if (addr < BASE || !psvc_span_ok(addr - BASE, len, im->len))
		return -EFAULT;
	memcpy(buf, im->bytes + (addr - BASE), len);
	return 0;
}

static int img_lookup(void *ctx, const char *name, uint64_t *ret)
{
	struct image *im = ctx;
	for (size_t i = 0; i < im->nsyms; i++)
		if (!strcmp(im->syms[i].name, name)) {
			*ret = im->syms[i].addr;
			return 0;
		}
	return -ENOENT;
}

static struct psvc_layout_src src_of(struct image *im)
{
	return (struct psvc_layout_src){ img_lookup, img_read, im };
}

/* Put n bytes at the end of the image, under a name (may be NULL). */
static uint64_t put(struct image *im, const char *name, const void *b, size_t n)
{
	cr_assert(im->len + n <= sizeof im->bytes);
	uint64_t a = BASE + im->len;
	memcpy(im->bytes + im->len, b, n);
	im->len += (n + 7) & ~(size_t)7;
	if (name)
		im->syms[im->nsyms++] = (typeof(im->syms[0])){ name, a };
	return a;
}

static void desc(struct image *im, const char *name, uint32_t bits, uint32_t count,
		 uint32_t off)
{
	uint32_t d[3] = { bits, count, off };
	put(im, name, d, sizeof d);
}

static void size_word(struct image *im, const char *name, uint32_t v)
{
	put(im, name, &v, sizeof v);
}

/* Overwrite word w of a descriptor already put. */
static void poke(struct image *im, const char *name, int w, uint32_t v)
{
	uint64_t a = 0;
	cr_assert(img_lookup(im, name, &a) == 0, "%s", name);
	memcpy(im->bytes + (a - BASE) + 4 * w, &v, 4);
}

/* glibc 2.36 x86_64's descriptors, as Debian 12's libc has them. */
static void glibc236(struct image *im)
{
	memset(im, 0, sizeof *im);
	size_word(im, "_thread_db_sizeof_pthread", 2368);
	size_word(im, "_thread_db_sizeof_list_t", 16);
	size_word(im, "_thread_db_sizeof_td_thr_events_t", 8);
	size_word(im, "_thread_db_sizeof_td_eventbuf_t", 24);
	size_word(im, "_thread_db_sizeof_pthread_key_struct", 16);
	size_word(im, "_thread_db_sizeof_pthread_key_data", 16);
	size_word(im, "_thread_db_sizeof_pthread_key_data_level2", 512);
	size_word(im, "_thread_db_sizeof_dtv_slotinfo_list", 16);
	size_word(im, "_thread_db_sizeof_dtv_slotinfo", 16);
	size_word(im, "_thread_db_const_thread_area", 25);
	desc(im, "_thread_db_pthread_list", 128, 1, 704);
	desc(im, "_thread_db_pthread_report_events", 8, 1, 1553);
	desc(im, "_thread_db_pthread_tid", 32, 1, 720);
	desc(im, "_thread_db_pthread_start_routine", 64, 1, 1592);
	desc(im, "_thread_db_pthread_cancelhandling", 32, 1, 776);
	desc(im, "_thread_db_pthread_schedpolicy", 32, 1, 1588);
	desc(im, "_thread_db_pthread_schedparam_sched_priority", 32, 1, 1584);
	desc(im, "_thread_db_pthread_specific", 2048, 1, 1296);
	desc(im, "_thread_db_pthread_eventbuf", 192, 1, 1608);
	desc(im, "_thread_db_pthread_eventbuf_eventmask", 64, 1, 1608);
	desc(im, "_thread_db_pthread_eventbuf_eventmask_event_bits", 32, 2, 1608);
	desc(im, "_thread_db_pthread_nextevent", 64, 1, 1632);
	desc(im, "_thread_db_pthread_dtvp", 64, 1, 8);
	desc(im, "_thread_db_list_t_next", 64, 1, 0);
	desc(im, "_thread_db_list_t_prev", 64, 1, 8);
	desc(im, "_thread_db_td_thr_events_t_event_bits", 32, 2, 0);
	desc(im, "_thread_db_td_eventbuf_t_eventnum", 32, 1, 8);
	desc(im, "_thread_db_td_eventbuf_t_eventdata", 64, 1, 16);
	desc(im, "_thread_db_pthread_key_struct_seq", 64, 1, 0);
	desc(im, "_thread_db_pthread_key_struct_destr", 64, 1, 8);
	desc(im, "_thread_db_pthread_key_data_seq", 64, 1, 0);
	desc(im, "_thread_db_pthread_key_data_data", 64, 1, 8);
	desc(im, "_thread_db_pthread_key_data_level2_data", 128, 32, 0);
	desc(im, "_thread_db_dtv_slotinfo_list_len", 64, 1, 0);
	desc(im, "_thread_db_dtv_slotinfo_list_next", 64, 1, 8);
	desc(im, "_thread_db_dtv_slotinfo_list_slotinfo", 128, 0, 16);
	desc(im, "_thread_db_dtv_slotinfo_gen", 64, 1, 0);
	desc(im, "_thread_db_dtv_slotinfo_map", 64, 1, 8);
	desc(im, "_thread_db_link_map_l_tls_modid", 64, 1, 1152);
	desc(im, "_thread_db_link_map_l_tls_offset", 64, 1, 1144);
	desc(im, "_thread_db_dtv_dtv", 128, 134217727, 0);
	desc(im, "_thread_db_dtv_t_pointer_val", 64, 1, 0);
	desc(im, "_thread_db_dtv_t_counter", 64, 1, 0);
	desc(im, "_thread_db_rtld_global__dl_stack_used", 128, 1, 4264);
	desc(im, "_thread_db_rtld_global__dl_stack_user", 128, 1, 4280);
	desc(im, "_thread_db_rtld_global__dl_tls_dtv_slotinfo_list", 64, 1, 4208);
	desc(im, "_thread_db___nptl_nthreads", 32, 1, 0);
	desc(im, "_thread_db___nptl_last_event", 64, 1, 0);
	desc(im, "_thread_db___nptl_rtld_global", 64, 1, 0);
	desc(im, "_thread_db___pthread_keys", 128, 1024, 0);
	static unsigned char keys[1024 * 16];
	put(im, "__pthread_keys", keys, sizeof keys);
}

/* ---- layout.c ----------------------------------------------------------------- */

Test(layout, checked_arithmetic)
{
	uint64_t r;
	cr_assert(psvc_add_ok(1, 2, &r) && r == 3);
	cr_assert(!psvc_add_ok(UINT64_MAX, 1, &r));
	cr_assert(!psvc_mul_ok(1ull << 32, 1ull << 32, &r));
	cr_assert(psvc_span_ok(8, 8, 16));
	cr_assert(!psvc_span_ok(9, 8, 16));
	cr_assert(!psvc_span_ok(UINT64_MAX - 3, 8, UINT64_MAX));
	cr_assert(psvc_span_ok(16, 0, 16));
}

Test(layout, descriptor_read)
{
	static struct image im;
	memset(&im, 0, sizeof im);
	desc(&im, "ok", 64, 1, 8);
	desc(&im, "swapped", 0x40000000u, 0x01000000u, 0x08000000u);
	im.syms[im.nsyms++] = (typeof(im.syms[0])){ "unmapped", 0xdead0000u };
	struct psvc_layout_src s = src_of(&im);
	struct psvc_desc d;
	char why[256];
	cr_assert_eq(psvc_desc_read(&s, "ok", &d, why, sizeof why), 0);
	cr_assert(d.bits == 64 && d.count == 1 && d.offset == 8);
	cr_assert_eq(psvc_desc_read(&s, "missing", &d, why, sizeof why), -ENOENT);
	cr_assert_eq(psvc_desc_read(&s, "unmapped", &d, why, sizeof why), -EFAULT);
	cr_assert(strstr(why, "0xdead0000"), "%s", why);
	/* libthread_db would byte-swap it; a target of our own arch never
	 * has reason to */
	cr_assert_eq(psvc_desc_read(&s, "swapped", &d, why, sizeof why), -EPROTO);
	cr_assert(strstr(why, "swapped"), "%s", why);
	/* why may be NULL */
	cr_assert_eq(psvc_desc_read(&s, "missing", &d, NULL, 0), -ENOENT);
}

Test(layout, sizes)
{
	static struct image im;
	memset(&im, 0, sizeof im);
	size_word(&im, "huge", 0xffffffffu);
	size_word(&im, "eight_mib", 8u << 20);
	size_word(&im, "zero", 0);
	size_word(&im, "fine", 2368);
	struct psvc_layout_src s = src_of(&im);
	uint32_t v = 7;
	char why[256];
	cr_assert_eq(psvc_sizeof_read(&s, "huge", 512, 65536, &v, why, sizeof why), -ERANGE);
	cr_assert(strstr(why, "4294967295 (0xffffffff)"), "%s", why);
	cr_assert_eq(v, 7, "clobbered on failure");
	cr_assert_eq(psvc_sizeof_read(&s, "eight_mib", 512, 65536, &v, why, sizeof why),
		     -ERANGE);
	cr_assert_eq(psvc_sizeof_read(&s, "zero", 512, 65536, &v, why, sizeof why), -ERANGE);
	cr_assert_eq(psvc_sizeof_read(&s, "fine", 512, 65536, &v, why, sizeof why), 0);
	cr_assert_eq(v, 2368);
}

Test(layout, fields_past_their_struct)
{
	struct psvc_field_rule r = { "struct key", 16, 64, 1, 1 };
	struct psvc_field f = { 1, 2, 3 };
	char why[256];
	/* a crash a hostile target once caused: 0xfffffff8 + 8 wrapped a
	 * 32-bit check */
	struct psvc_desc d = { 64, 1, 0xfffffff8u };
	cr_assert_eq(psvc_field_check("seq", &d, &r, &f, why, sizeof why), -ERANGE);
	cr_assert(strstr(why, "offset 0xfffffff8") && strstr(why, "struct key"), "%s", why);
	cr_assert(f.offset == 1 && f.elem_size == 2 && f.count == 3, "clobbered");
	/* negative as int32, as libthread_db reads it */
	d = (struct psvc_desc){ 64, 1, 0x80000000u };
	cr_assert_eq(psvc_field_check("seq", &d, &r, &f, why, sizeof why), -ERANGE);
	/* one byte past the end; exactly at the end */
	d = (struct psvc_desc){ 64, 1, 9 };
	cr_assert_eq(psvc_field_check("seq", &d, &r, &f, why, sizeof why), -ERANGE);
	d = (struct psvc_desc){ 64, 1, 8 };
	cr_assert_eq(psvc_field_check("seq", &d, &r, &f, why, sizeof why), 0);
	cr_assert(f.offset == 8 && f.elem_size == 8 && f.count == 1);
	/* sizes: not whole bytes, none, huge, not the expected one */
	d = (struct psvc_desc){ 7, 1, 0 };
	cr_assert_eq(psvc_field_check("x", &d, &r, &f, why, sizeof why), -ERANGE);
	d = (struct psvc_desc){ 0, 1, 0 };
	cr_assert_eq(psvc_field_check("x", &d, &r, &f, why, sizeof why), -ERANGE);
	d = (struct psvc_desc){ 0xfffff8u, 1, 0 };
	cr_assert_eq(psvc_field_check("x", &d, &r, &f, why, sizeof why), -ERANGE);
	d = (struct psvc_desc){ 32, 1, 0 };
	cr_assert_eq(psvc_field_check("x", &d, &r, &f, why, sizeof why), -ERANGE);
	cr_assert(strstr(why, "expected 64"), "%s", why);
	/* counts: huge (elements x count must not wrap), zero = flexible */
	struct psvc_field_rule arr = { "the table", 1u << 20, 0, 1, UINT32_MAX };
	d = (struct psvc_desc){ 128, 0xffffffffu, 0 };
	cr_assert_eq(psvc_field_check("t", &d, &arr, &f, why, sizeof why), -ERANGE);
	cr_assert(strstr(why, "lies outside the table"), "%s", why);
	struct psvc_field_rule big = { "all", UINT64_MAX, 0, 1, UINT32_MAX };
	d = (struct psvc_desc){ 65536 * 8, 0xffffffffu, 0xffffffffu };
	cr_assert_eq(psvc_field_check("t", &d, &big, &f, why, sizeof why), 0);
	cr_assert_eq(f.count, 0xffffffffu);
	struct psvc_field_rule flex = { "list", 16, 128, 0, 65536 };
	d = (struct psvc_desc){ 128, 0, 16 };
	cr_assert_eq(psvc_field_check("slotinfo", &d, &flex, &f, why, sizeof why), 0);
	cr_assert_eq(f.count, 0);
	d = (struct psvc_desc){ 128, 2, 0 };
	cr_assert_eq(psvc_field_check("t", &d, &r, &f, why, sizeof why), -ERANGE);
}

Test(layout, element_addresses_and_copies)
{
	struct psvc_field f = { 8, 16, 4 };
	uint64_t a;
	cr_assert_eq(psvc_field_addr(0x1000, &f, 3, &a), 0);
	cr_assert_eq(a, 0x1000 + 8 + 48);
	cr_assert_eq(psvc_field_addr(0x1000, &f, 4, &a), -ERANGE, "index past count");
	cr_assert_eq(psvc_field_addr(UINT64_MAX - 16, &f, 1, &a), -ERANGE, "wraps");
	struct psvc_field huge = { 0xfffffff8u, 1u << 16, 0xffffffffu };
	cr_assert_eq(psvc_field_addr(UINT64_MAX - (1ull << 40), &huge, 0xfffffffeu, &a),
		     -ERANGE);

	unsigned char copy[24];
	for (size_t i = 0; i < sizeof copy; i++)
		copy[i] = (unsigned char)i;
	uint64_t v = 0;
	struct psvc_field g = { 8, 8, 2 };
	cr_assert_eq(psvc_field_get(copy, sizeof copy, &g, 0, &v, 8), 0);
	cr_assert_eq(v, 0x0f0e0d0c0b0a0908ull);
	cr_assert_eq(psvc_field_get(copy, sizeof copy, &g, 1, &v, 8), 0);
	cr_assert_eq(psvc_field_get(copy, 23, &g, 1, &v, 8), -ERANGE, "past the copy");
	cr_assert_eq(psvc_field_get(copy, sizeof copy, &g, 2, &v, 8), -ERANGE);
	struct psvc_field small = { 0, 4, 1 };
	cr_assert_eq(psvc_field_get(copy, sizeof copy, &small, 0, &v, 8), -ERANGE,
		     "more than the element");
	struct psvc_field wrap = { 0xfffffff8u, 8, 1 };
	cr_assert_eq(psvc_field_get(copy, sizeof copy, &wrap, 0, &v, 8), -ERANGE);
}

/* ---- tdbcheck.c: what libthread_db may be given ---------------------------------- */

static size_t npins;
static void count_pin(void *ctx, uint64_t addr, const void *b, size_t len)
{
	(void)ctx, (void)addr, (void)b, (void)len;
	npins++;
}

static int check_arch(struct image *im, enum arch_id arch, uint32_t *sz, char *why,
		      size_t whylen)
{
	struct tdb_check_io io = { src_of(im), arch, count_pin, NULL };
	npins = 0;
	return dbs_tdb_check_layouts(&io, sz, why, whylen);
}

static int check(struct image *im, uint32_t *sz, char *why, size_t whylen)
{
	return check_arch(im, ARCH_X86_64, sz, why, whylen);
}

Test(layout, glibc_descriptors_pass)
{
	static struct image im;
	glibc236(&im);
	uint32_t sz;
	char why[256] = "";
	cr_assert_eq(check(&im, &sz, why, sizeof why), 0, "%s", why);
	cr_assert_eq(sz, 2368);
	/* every size, field and the thread-area index: pinned */
	cr_assert_eq(npins, 9 + 40 + 1);
}

Test(layout, absurd_descriptors_are_refused)
{
	static const struct {
		const char *name;
		int word;
		uint32_t v;
		const char *why;
	} bad[] = {
		{ "_thread_db_sizeof_pthread", 0, 0xffffffffu, "4294967295 (0xffffffff)" },
		{ "_thread_db_sizeof_pthread", 0, 8u << 20, "8388608" },
		{ "_thread_db_sizeof_pthread", 0, 100, "not 512 to 65536" },
		{ "_thread_db_sizeof_dtv_slotinfo", 0, 0xffffffffu, "0xffffffff" },
		{ "_thread_db_sizeof_pthread_key_data_level2", 0, 1u << 20, "1048576" },
		{ "_thread_db_pthread_tid", 2, 0xfffffff8u, "offset 0xfffffff8" },
		{ "_thread_db_pthread_tid", 2, 2366, "offset 0x93e" },
		{ "_thread_db_pthread_start_routine", 2, 0x80000000u, "0x80000000" },
		{ "_thread_db_pthread_eventbuf_eventmask_event_bits", 2, 2364, "0x93c" },
		{ "_thread_db_pthread_eventbuf_eventmask_event_bits", 1, 0xffffffffu,
		  "count 4294967295" },
		{ "_thread_db_dtv_slotinfo_map", 2, 12, "struct dtv_slotinfo" },
		{ "_thread_db_pthread_key_struct_seq", 2, 0xfffffff8u, "0xfffffff8" },
		{ "_thread_db_pthread_key_data_level2_data", 1, 33, "528 bytes" },
		{ "_thread_db___pthread_keys", 1, 0xffffffffu, "4294967295" },
		{ "_thread_db_dtv_dtv", 0, 0xffffffffu, "0xffffffff bits" },
		{ "_thread_db_dtv_dtv", 0, 32, "a DTV entry of 32 bits" },
		{ "_thread_db_link_map_l_tls_modid", 2, 0xffffff00u, "0xffffff00" },
		{ "_thread_db_pthread_schedpolicy", 0, 0xffff00u, "16776960 bits" },
		{ "_thread_db_const_thread_area", 0, 0xffffffffu, "not 25" },
	};
	static struct image im;
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		glibc236(&im);
		poke(&im, bad[i].name, bad[i].word, bad[i].v);
		uint32_t sz;
		char why[256] = "";
		cr_assert_eq(check(&im, &sz, why, sizeof why), -EPROTO, "%s = %#x passed",
			     bad[i].name, bad[i].v);
		cr_assert(strstr(why, bad[i].why), "%s: %s", bad[i].name, why);
		/* the size of struct pthread survives another's failure */
		if (strcmp(bad[i].name, "_thread_db_sizeof_pthread"))
			cr_assert_eq(sz, 2368, "%s", bad[i].name);
		else
			cr_assert_eq(sz, 0);
	}
}

/* aarch64 keeps the DTV pointer in the TCB at the thread pointer, just
 * above struct pthread (docs/ARCH.md §1): Debian 12's arm64 libc describes
 * it at offset sizeof (struct pthread), 1856, which libthread_db reads in
 * the target (td_thr_tlsbase), never in its copy of the struct.  The TCB
 * is two words; past it, or on x86_64, the offset is refused. */
Test(layout, aarch64_dtv_pointer_in_the_tcb)
{
	static struct image im;
	uint32_t sz;
	char why[256] = "";
	glibc236(&im);
	poke(&im, "_thread_db_sizeof_pthread", 0, 1856);
	poke(&im, "_thread_db_const_thread_area", 0, 1856);
	poke(&im, "_thread_db_pthread_dtvp", 2, 1856);
	cr_assert_eq(check_arch(&im, ARCH_AARCH64, &sz, why, sizeof why), 0, "%s", why);
	cr_assert_eq(sz, 1856);

	poke(&im, "_thread_db_pthread_dtvp", 2, 1856 + 16);
	cr_assert_eq(check_arch(&im, ARCH_AARCH64, &sz, why, sizeof why), -EPROTO);
	cr_assert(strstr(why, "_thread_db_pthread_dtvp"), "%s", why);

	/* x86_64's DTV pointer is inside struct pthread (its TCB header) */
	glibc236(&im);
	poke(&im, "_thread_db_pthread_dtvp", 2, 2368);
	cr_assert_eq(check(&im, &sz, why, sizeof why), -EPROTO);
	cr_assert(strstr(why, "_thread_db_pthread_dtvp"), "%s", why);
	/* and no other field of struct pthread may go past it on aarch64 */
	glibc236(&im);
	poke(&im, "_thread_db_sizeof_pthread", 0, 1856);
	poke(&im, "_thread_db_const_thread_area", 0, 1856);
	poke(&im, "_thread_db_pthread_dtvp", 2, 1856);
	poke(&im, "_thread_db_pthread_tid", 2, 1856);
	cr_assert_eq(check_arch(&im, ARCH_AARCH64, &sz, why, sizeof why), -EPROTO);
	cr_assert(strstr(why, "_thread_db_pthread_tid"), "%s", why);
}

Test(layout, missing_descriptors_are_not_absurd)
{
	static struct image im;
	memset(&im, 0, sizeof im);	/* a static binary without them */
	uint32_t sz = 1;
	char why[256];
	cr_assert_eq(check(&im, &sz, why, sizeof why), 0);
	cr_assert_eq(sz, 0);
}

/* ---- keys.c: the key layout --------------------------------------------------------- */

Test(layout, key_layout)
{
	static struct image im;
	glibc236(&im);
	struct psvc_layout_src s = src_of(&im);
	struct key_layout L;
	char why[256] = "";
	cr_assert_eq(dbs_keys_layout_load(&s, 2368, &L, why, sizeof why), 0, "%s", why);
	cr_assert_eq(L.nkeys, 1024);
	cr_assert_eq(L.ks_size, 16);
	cr_assert_eq(L.ks_destr.offset, 8);
	cr_assert_eq(L.level2.count, 32);
	cr_assert_eq(L.level2.elem_size, 16);
	cr_assert_eq(L.specific.offset, 1296);
	cr_assert_eq(L.specific.count, 32);
	cr_assert_eq(L.specific.elem_size, 8);

	cr_assert_eq(dbs_keys_layout_load(&s, 0, &L, why, sizeof why), -ENOENT,
		     "struct pthread's size unknown");
	cr_assert_eq(dbs_keys_layout_load(&s, 1300, &L, why, sizeof why), -ERANGE,
		     "specific[] past struct pthread");
	cr_assert(strstr(why, "_thread_db_pthread_specific"), "%s", why);

	static const struct {
		const char *name;
		int word;
		uint32_t v;
	} bad[] = {
		{ "_thread_db_pthread_key_struct_seq", 2, 0xfffffff8u },
		{ "_thread_db_pthread_key_struct_destr", 0, 32 },
		{ "_thread_db_pthread_key_data_data", 2, 0x7ffffff8u },
		{ "_thread_db_pthread_key_data_seq", 1, 2 },
		{ "_thread_db_sizeof_pthread_key_data", 0, 0xffffffffu },
		{ "_thread_db_sizeof_pthread_key_struct", 0, 8 },
		{ "_thread_db___pthread_keys", 1, 0xffffffffu },
		{ "_thread_db___pthread_keys", 0, 256 },
		{ "_thread_db_pthread_key_data_level2_data", 1, 0 },
		{ "_thread_db_pthread_key_data_level2_data", 1, 4 },
		{ "_thread_db_pthread_specific", 0, 2044 },
	};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		glibc236(&im);
		poke(&im, bad[i].name, bad[i].word, bad[i].v);
		why[0] = '\0';
		cr_assert_neq(dbs_keys_layout_load(&s, 2368, &L, why, sizeof why), 0,
			      "%s word %d = %#x passed", bad[i].name, bad[i].word,
			      bad[i].v);
		cr_assert(why[0], "no reason for %s", bad[i].name);
	}
}

/* ---- linkmap.c: the link_map chain ------------------------------------------------- */

struct lm {
	uint64_t l_addr, l_name, l_ld, l_next, l_prev;
};

struct rdebug {
	int32_t version, pad;
	uint64_t map, brk;
	int32_t state, pad2;
	uint64_t ldbase;
};

/* A chain of n entries (ld[i] their l_ld), named "libN"; returns r_debug. */
static uint64_t chain(struct image *im, size_t n, const uint64_t *ld,
		      uint64_t *ret_entries)
{
	memset(im, 0, sizeof *im);
	uint64_t rd = put(im, NULL, &(struct rdebug){ 1, 0, 0, 0, 0, 0, 0 },
			  sizeof(struct rdebug));
	uint64_t prev = 0;
	for (size_t i = 0; i < n; i++) {
		char name[16];
		snprintf(name, sizeof name, "lib%zu", i);
		uint64_t na = put(im, NULL, name, strlen(name) + 1);
		struct lm e = { 0x1000 * i, na, ld[i], 0, prev };
		uint64_t a = put(im, NULL, &e, sizeof e);
		ret_entries[i] = a;
		if (prev)
			memcpy(im->bytes + (prev - BASE) + 24, &a, 8);	/* l_next */
		else
			memcpy(im->bytes + (rd - BASE) + 8, &a, 8);	/* r_map */
		prev = a;
	}
	return rd;
}

Test(linkmap, a_sound_chain)
{
	static struct image im;
	uint64_t ld[3] = { 0x100, 0x200, 0x300 }, e[3];
	uint64_t rd = chain(&im, 3, ld, e);
	struct psvc_layout_src s = src_of(&im);
	struct psvc_linkmap w;
	char why[256];
	cr_assert_eq(psvc_linkmap_walk(&s, rd, 16, 1000, &w, why, sizeof why), 0);
	cr_assert_eq(w.n, 3);
	cr_assert(!w.cut && !w.ndup);
	for (size_t i = 0; i < 3; i++) {
		char name[16];
		snprintf(name, sizeof name, "lib%zu", i);
		cr_assert_str_eq(w.v[i].l_name, name);
		cr_assert_eq(w.v[i].addr, e[i]);
		cr_assert_eq(w.v[i].l_ld, ld[i]);
	}
	psvc_linkmap_free(&w);
}

Test(linkmap, copies_are_one_entry_and_the_walk_is_bounded)
{
	static struct image im;
	uint64_t ld[200], e[200];
	for (size_t i = 0; i < 200; i++)
		ld[i] = i == 0 ? 0x100 : i == 199 ? 0x300 : 0x200;	/* 198 copies */
	uint64_t rd = chain(&im, 200, ld, e);
	struct psvc_layout_src s = src_of(&im);
	struct psvc_linkmap w;
	char why[256];
	cr_assert_eq(psvc_linkmap_walk(&s, rd, 16, 1000, &w, why, sizeof why), 0);
	cr_assert_eq(w.n, 3, "copies kept");
	cr_assert_eq(w.ndup, 197);
	cr_assert_eq(w.v[2].l_ld, 0x300, "the entry after the copies lost");
	psvc_linkmap_free(&w);
	/* distinct entries beyond what the maps justify: cut */
	for (size_t i = 0; i < 200; i++)
		ld[i] = 0x100 * (i + 1);
	rd = chain(&im, 200, ld, e);
	cr_assert_eq(psvc_linkmap_walk(&s, rd, 10, 1000, &w, why, sizeof why), 0);
	cr_assert_eq(w.n, 10);
	cr_assert(w.cut);
	psvc_linkmap_free(&w);
	/* the hard cap on steps, whatever the entries */
	cr_assert_eq(psvc_linkmap_walk(&s, rd, 1000, 50, &w, why, sizeof why), 0);
	cr_assert_eq(w.n, 50);
	cr_assert(w.cut);
	psvc_linkmap_free(&w);
}

Test(linkmap, loops_and_garbage)
{
	static struct image im;
	uint64_t ld[4] = { 0x100, 0x200, 0x300, 0x400 }, e[4];
	uint64_t rd = chain(&im, 4, ld, e);
	struct psvc_layout_src s = src_of(&im);
	struct psvc_linkmap w;
	char why[256];
	/* the last entry leads back to the second */
	memcpy(im.bytes + (e[3] - BASE) + 24, &e[1], 8);
	cr_assert_eq(psvc_linkmap_walk(&s, rd, 100, 1000, &w, why, sizeof why), -EPROTO);
	cr_assert(strstr(why, "a loop or garbage"), "%s", why);
	cr_assert_eq(w.n, 0, "entries kept after a failure");
	/* a self loop with a consistent-looking l_prev at the head */
	rd = chain(&im, 1, ld, e);
	memcpy(im.bytes + (e[0] - BASE) + 24, &e[0], 8);
	cr_assert_eq(psvc_linkmap_walk(&s, rd, 100, 1000, &w, why, sizeof why), -EPROTO);
	/* r_map into unmapped memory */
	rd = chain(&im, 2, ld, e);
	uint64_t bad = 0xdead0000u;
	memcpy(im.bytes + (rd - BASE) + 8, &bad, 8);
	cr_assert_eq(psvc_linkmap_walk(&s, rd, 100, 1000, &w, why, sizeof why), -EFAULT);
	cr_assert(strstr(why, "0xdead0000"), "%s", why);
	/* r_debug itself unreadable, wrong version, being changed */
	cr_assert_eq(psvc_linkmap_walk(&s, UINT64_MAX - 8, 100, 1000, &w, why, sizeof why),
		     -EFAULT);
	rd = chain(&im, 2, ld, e);
	int32_t v = 7;
	memcpy(im.bytes + (rd - BASE), &v, 4);
	cr_assert_eq(psvc_linkmap_walk(&s, rd, 100, 1000, &w, why, sizeof why), -EPROTO);
	rd = chain(&im, 2, ld, e);
	v = 1;	/* RT_ADD */
	memcpy(im.bytes + (rd - BASE) + 24, &v, 4);
	cr_assert_eq(psvc_linkmap_walk(&s, rd, 100, 1000, &w, why, sizeof why), -EAGAIN);
}

Test(linkmap, names_are_bounded)
{
	static struct image im;
	uint64_t ld[2] = { 0x100, 0x200 }, e[2];
	uint64_t rd = chain(&im, 2, ld, e);
	/* entry 0's name: unmapped; entry 1's: no NUL before the image ends */
	uint64_t bad = 0xdead0000u;
	memcpy(im.bytes + (e[0] - BASE) + 8, &bad, 8);
	uint64_t tail = BASE + im.len;
	memset(im.bytes + im.len, 'x', 100);
	im.len += 100;
	memcpy(im.bytes + (e[1] - BASE) + 8, &tail, 8);
	struct psvc_layout_src s = src_of(&im);
	struct psvc_linkmap w;
	char why[256];
	cr_assert_eq(psvc_linkmap_walk(&s, rd, 100, 1000, &w, why, sizeof why), 0);
	cr_assert_eq(w.n, 2);
	cr_assert_str_eq(w.v[0].l_name, "");
	cr_assert(strlen(w.v[1].l_name) <= 100, "read past the image");
	psvc_linkmap_free(&w);
}
