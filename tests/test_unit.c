/*
 * test_unit: pure decoding, no ptrace.  Register blobs of both
 * architectures (tests/data), the EPERM diagnosis, the JSON renderer fed
 * with hostile strings, the parsers of /proc text, the files for other
 * tools.  The JSON writer itself: test_jwriter.c.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"
#include "formats.h"
#include "dbs_int.h"
#include "arch.h"
#include "harness.h"
#include "psvc.h"
#include "psvc_int.h"
#include "tin_int.h"

static size_t load_gregs(const char *name, uint64_t *regs, size_t max)
{
	char path[4096];
	snprintf(path, sizeof path, "%s/%s", getenv("TESTDATA"), name);
	FILE *f = fopen(path, "r");
	cr_assert(f, "cannot open %s", path);
	char line[256];
	size_t n = 0;
	while (fgets(line, sizeof line, f) && n < max) {
		if (line[0] == '#' || line[0] == '\n')
			continue;
		regs[n++] = strtoull(line, NULL, 16);
	}
	fclose(f);
	return n;
}

Test(arch, x86_64_futex_wait_blob)
{
	const struct arch_desc *a = arch_by_id(ARCH_X86_64);
	uint64_t r[ARCH_MAX_GREGS] = { 0 };
	cr_assert_eq(load_gregs("x86_64-futex-wait.gregs", r, ARCH_MAX_GREGS), a->ngregs);
	struct arch_syscall sc;
	arch_decode_syscall(a, r, -1, &sc);
	cr_assert_eq(sc.nr, 202);
	cr_assert_str_eq(arch_syscall_name(a, sc.nr), "futex");
	cr_assert_eq(sc.args[0], 0x56045a81d080ull);
	cr_assert_eq(sc.args[1], 0x80);
	cr_assert_eq(sc.args[2], 2);
	cr_assert(sc.restarting, "rax = -ERESTARTSYS means blocked in it");
	cr_assert_eq(arch_pc(a, r), 0x7fbdade8612bull);
	cr_assert_eq(arch_sp(a, r), 0x7fbdaddfbea8ull);
	/* fs_base is the thread pointer and what ps_get_thread_area returns
	 * whatever the index libthread_db passes */
	cr_assert_eq(r[a->tp_greg_idx], 0x7fbdaddfc6c0ull);
	cr_assert_eq(arch_thread_area(a, r[a->tp_greg_idx], 25), 0x7fbdaddfc6c0ull);
	uint64_t dw[32];
	cr_assert_eq(arch_gregs_to_dwarf(a, r, dw, 32), 17);
	cr_assert_eq(dw[7], arch_sp(a, r));	/* DWARF 7 = rsp */
	cr_assert_eq(dw[16], arch_pc(a, r));	/* DWARF 16 = rip */
	cr_assert_eq(dw[5], r[14]);		/* DWARF 5 = rdi */
	cr_assert_str_eq(arch_greg_name(a, 15), "orig_rax");
}

Test(arch, x86_64_not_in_syscall)
{
	const struct arch_desc *a = arch_by_id(ARCH_X86_64);
	uint64_t r[ARCH_MAX_GREGS] = { 0 };
	load_gregs("x86_64-futex-wait.gregs", r, ARCH_MAX_GREGS);
	r[15] = (uint64_t)-1;	/* orig_rax: interrupted in user space */
	struct arch_syscall sc;
	arch_decode_syscall(a, r, 202, &sc);
	cr_assert_eq(sc.nr, -1);
	r[15] = 219;		/* restart_syscall after an earlier stop */
	r[10] = 0;
	arch_decode_syscall(a, r, -1, &sc);
	cr_assert_eq(sc.nr, 219);
	cr_assert_str_eq(arch_syscall_name(a, sc.nr), "restart_syscall");
	cr_assert_not(sc.restarting);
}

Test(arch, aarch64_futex_wait_blob)
{
	const struct arch_desc *a = arch_by_id(ARCH_AARCH64);
	cr_assert_eq(a->ngregs, 34);
	uint64_t r[ARCH_MAX_GREGS] = { 0 };
	cr_assert_eq(load_gregs("aarch64-futex-wait.gregs", r, ARCH_MAX_GREGS), 34);
	struct arch_syscall sc;
	/* x8 alone is no proof: without /proc's word, no syscall */
	arch_decode_syscall(a, r, -1, &sc);
	cr_assert_eq(sc.nr, -1);
	arch_decode_syscall(a, r, 98, &sc);
	cr_assert_eq(sc.nr, 98);
	cr_assert_str_eq(arch_syscall_name(a, 98), "futex");
	cr_assert_eq(sc.args[0], 0xaaaab0c01040ull);
	cr_assert_eq(sc.args[1], 0x80);
	cr_assert_eq(arch_pc(a, r), 0xffff8fa2c1d4ull);
	cr_assert_eq(arch_sp(a, r), 0xffff8f7fe9e0ull);
	cr_assert_eq(a->tp_greg_idx, -1);
	/* TPIDR_EL0 minus sizeof(struct pthread) as libthread_db asks */
	cr_assert_eq(arch_thread_area(a, 0xffff90001000ull, 1856), 0xffff90001000ull - 1856);
	cr_assert_str_eq(arch_syscall_name(a, 128), "restart_syscall");
	cr_assert_eq(a->nr_restart_syscall, 128);
	uint64_t dw[40];
	cr_assert_eq(arch_gregs_to_dwarf(a, r, dw, 40), 32);
	cr_assert_eq(dw[31], arch_sp(a, r));
	cr_assert_eq(dw[29], r[29]);
	cr_assert_str_eq(arch_greg_name(a, 32), "pc");
}

/* The kernel's rules as constants: the PAC field is bits 54 down to the
 * address space's size (test_arch checks it against NT_ARM_PAC_MASK on
 * an aarch64 machine), the signal frame's registers after siginfo_t and
 * the ucontext's head, the syscall at an svc from x8. */
Test(arch, aarch64_pac_sigframe_svc)
{
	const struct arch_desc *a = arch_by_id(ARCH_AARCH64), *x = arch_by_id(ARCH_X86_64);
	/* 48-bit (a stack just below 2^48), 39-bit, 52-bit address spaces */
	cr_assert_eq(arch_pac_mask(a, 0x1000000000000ull), 0x007f000000000000ull);
	cr_assert_eq(arch_pac_mask(a, 0xfffff7fff000ull), 0x007f000000000000ull);
	cr_assert_eq(arch_pac_mask(a, 0x8000000000ull), 0x007fff8000000000ull);
	cr_assert_eq(arch_pac_mask(a, 0x10000000000000ull), 0x0070000000000000ull);
	cr_assert_eq(arch_pac_mask(a, 0), 0);
	cr_assert_eq(arch_pac_mask(x, 0x800000000000ull), 0);
	/* a signed return address as pac-ret code leaves it, stripped */
	uint64_t m = arch_pac_mask(a, 0x1000000000000ull);
	cr_assert_eq(0x0032aaaab0c01234ull & ~m, 0xaaaab0c01234ull);
	unsigned n = 0;
	cr_assert_eq(arch_sigframe_gregs(a, &n), 312);
	cr_assert_eq(n, a->ngregs);
	cr_assert_eq(arch_sigframe_gregs(x, &n), 0);
	uint64_t r[ARCH_MAX_GREGS] = { 0 };
	r[8] = 98;
	cr_assert_eq(arch_syscall_at_insn(a, r, 0xd4000001u), 98);
	cr_assert_eq(arch_syscall_at_insn(a, r, 0xd65f03c0u), -1);	/* ret */
	r[8] = (uint64_t)-1;
	cr_assert_eq(arch_syscall_at_insn(a, r, 0xd4000001u), -1);
	r[15] = 202;
	cr_assert_eq(arch_syscall_at_insn(x, r, 0xd4000001u), -1);
}

Test(arch, lookup)
{
	cr_assert_eq(arch_by_elf_machine(62), arch_by_id(ARCH_X86_64));
	cr_assert_eq(arch_by_elf_machine(183), arch_by_id(ARCH_AARCH64));
	cr_assert_null(arch_by_elf_machine(3));	/* EM_386 */
	cr_assert_null(arch_syscall_name(arch_host(), 100000));
	cr_assert_null(arch_syscall_name(arch_host(), -1));
	/* from 424 up one number on every architecture, then the ends */
	for (int id = 0; id < ARCH_COUNT; id++) {
		const struct arch_desc *a = arch_by_id((enum arch_id)id);
		cr_assert_str_eq(arch_syscall_name(a, 424), "pidfd_send_signal");
		cr_assert_str_eq(arch_syscall_name(a, 435), "clone3");
		cr_assert_str_eq(arch_syscall_name(a, 450),
				 "set_mempolicy_home_node");
		cr_assert_null(arch_syscall_name(a, 451));
	}
	cr_assert_str_eq(arch_syscall_name(arch_by_id(ARCH_X86_64), 334), "rseq");
	cr_assert_null(arch_syscall_name(arch_by_id(ARCH_X86_64), 335));
	cr_assert_str_eq(arch_syscall_name(arch_by_id(ARCH_AARCH64), 293), "rseq");
}

Test(diag, eperm_causes)
{
	struct psvc_eperm_facts f = { .yama_scope = -1, .my_euid = 1000 };
	for (int i = 0; i < 4; i++)
		f.target_uid[i] = 1000;
	cr_assert_eq(psvc_eperm_decide(&f), PSVC_EPERM_UNKNOWN);
	f.tracer_pid = 42;
	cr_assert_eq(psvc_eperm_decide(&f), PSVC_EPERM_TRACED);
	f.tracer_pid = 0;
	f.target_uid[2] = 0;	/* a set-uid program keeps saved uid 0 */
	cr_assert_eq(psvc_eperm_decide(&f), PSVC_EPERM_OTHER_UID);
	f.have_cap_sys_ptrace = true;
	cr_assert_eq(psvc_eperm_decide(&f), PSVC_EPERM_UNKNOWN);
	f.yama_scope = 3;	/* no attach at all, even with the capability */
	cr_assert_eq(psvc_eperm_decide(&f), PSVC_EPERM_YAMA);
	f.have_cap_sys_ptrace = false;
	f.target_uid[2] = 1000;
	f.yama_scope = 1;	/* descendants only */
	cr_assert_eq(psvc_eperm_decide(&f), PSVC_EPERM_YAMA);
	f.target_is_descendant = true;
	cr_assert_eq(psvc_eperm_decide(&f), PSVC_EPERM_UNKNOWN);
	f.yama_scope = 2;	/* admin only */
	cr_assert_eq(psvc_eperm_decide(&f), PSVC_EPERM_YAMA);
	f.yama_scope = 0;
	f.target_dumpable_known = true;
	f.target_dumpable = false;
	cr_assert_eq(psvc_eperm_decide(&f), PSVC_EPERM_NOT_DUMPABLE);
}

/* A hand-built snapshot in the library's public handles, which own it
 * from now on (tinspect_snapshot_free() frees both). */
static tinspect_snapshot *pub(struct dbs_snapshot *s)
{
	tinspect_snapshot *t = NULL;
	cr_assert_eq(tin_snapshot_wrap(s, &t), 0);
	return t;
}

/* A snapshot built by hand: the renderer must not care where it came from. */
static struct dbs_snapshot *hostile_snapshot(void)
{
	struct dbs_snapshot *s = calloc(1, sizeof *s);
	s->pid = 4242;
	s->arch = arch_host();
	s->exe = strdup("/opt/we\"ird\\/pa\xffth\n");
	s->argc = 2;
	s->argv = calloc(3, sizeof *s->argv);
	s->argv[0] = strdup("prog");
	s->argv[1] = strdup("--x=\x01\x02\xc0\xaf");	/* overlong '/' */
	s->nthreads = 2;
	s->threads = calloc(2, sizeof *s->threads);
	static const char n0[] = "ok";
	static const char n1[] = "\xed\xa0\x80sur\"\\";	/* a UTF-16 surrogate */
	s->threads[0].tid = 4242;
	s->threads[0].ns_tid = 4242;
	s->threads[0].name = strdup(n0);
	s->threads[0].name_len = 2;
	s->threads[0].syscall.nr = -1;
	s->threads[1].tid = 4243;
	s->threads[1].ns_tid = 1;
	s->threads[1].name = malloc(sizeof n1);
	memcpy(s->threads[1].name, n1, sizeof n1);
	s->threads[1].name_len = sizeof n1 - 1;
	s->threads[1].proc_valid = true;
	s->threads[1].state = 'S';
	strcpy(s->threads[1].wchan, "futex_wait");
	s->threads[1].syscall.nr = 202;
	s->threads[1].syscall.args[0] = UINT64_MAX;
	s->threads[1].have_regs = true;
	s->threads[1].pc = 0xffffffffffffffffull;
	s->threads[1].have_pthread = true;
	s->threads[1].pthread = 0x7f0000001000ull;
	s->threads[1].start.addr = 0x401000;
	s->threads[1].start.module = strdup("/lib/\xfe.so");
	s->threads[1].start.name = strdup("sym\x7f\x80");
	s->threads[1].nerrors = 1;
	s->threads[1].errors = calloc(1, sizeof(char *));
	s->threads[1].errors[0] = strdup("bad \xff error");
	return s;
}

Test(render, hostile_strings_make_valid_json)
{
	struct dbs_snapshot *s = hostile_snapshot();
	tinspect_snapshot *ts = pub(s);
	char *buf = NULL;
	size_t len = 0;
	struct agent_opts o = { .json = true };
	for (int pretty = 0; pretty < 2; pretty++) {
		o.pretty = pretty;
		buf = NULL;
		FILE *f = open_memstream(&buf, &len);
		cr_assert_eq(render_json(f, ts, &o), 0);
		fclose(f);
		cr_assert(schema_valid(buf, len), "hostile snapshot does not validate");
		json_error_t je;
		json_t *doc = json_loadb(buf, len, 0, &je);
		cr_assert(doc, "%s", je.text);
		json_t *t1 = json_array_get(json_object_get(doc, "threads"), 1);
		cr_assert_str_eq(json_string_value(json_object_get(t1, "name")),
				 "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbdsur\"\\");
		cr_assert_str_eq(json_string_value(json_object_get(t1, "name_hex")),
				 "eda08073757222" "5c");
		cr_assert_str_eq(json_string_value(json_object_get(json_object_get(t1, "regs"), "pc")),
				 "0xffffffffffffffff");
		json_t *t0 = json_array_get(json_object_get(doc, "threads"), 0);
		cr_assert_null(json_object_get(t0, "name_hex"));
		cr_assert(json_is_null(json_object_get(t0, "syscall")));
		json_t *p = json_object_get(doc, "process");
		cr_assert_str_eq(json_string_value(json_object_get(p, "exe")),
				 "/opt/we\"ird\\/pa\xef\xbf\xbdth\n");
		cr_assert_str_eq(json_string_value(json_array_get(json_object_get(p, "cmdline"), 1)),
				 "--x=\x01\x02\xef\xbf\xbd\xef\xbf\xbd");
		/* one line compact, indented pretty */
		cr_assert_eq(memchr(buf, '\n', len) == buf + len - 1, !pretty);
		json_decref(doc);
		free(buf);
	}

	/* and the text renderer escapes every byte outside printable ASCII */
	buf = NULL;
	FILE *f = open_memstream(&buf, &len);
	cr_assert_eq(render_text(f, ts, &o), 0);
	fclose(f);
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)buf[i];
		cr_assert(c == '\n' || (c >= 0x20 && c < 0x7f), "raw 0x%02x at %zu", c, i);
	}
	cr_assert(strstr(buf, "Thread 4243 \"\\xed\\xa0\\x80sur\\\"\\\\\""), "%s", buf);
	free(buf);
	tinspect_snapshot_free(ts);
}

Test(tls_types, parse_and_name)
{
	struct dbs_tls_request r = { .type = DBS_TLS_AUTO };
	char b[24];
	cr_assert_eq(dbs_tls_parse_type("long", &r), 0);
	cr_assert(r.type == DBS_TLS_INT && r.size == 8);
	cr_assert_str_eq(dbs_tls_type_name(r.type, r.size, b, sizeof b), "long");
	cr_assert_eq(dbs_tls_parse_type("bytes:16", &r), 0);
	cr_assert(r.type == DBS_TLS_BYTES && r.size == 16);
	cr_assert_str_eq(dbs_tls_type_name(r.type, r.size, b, sizeof b), "bytes:16");
	cr_assert_eq(dbs_tls_parse_type("hex16", &r), 0);
	cr_assert_str_eq(dbs_tls_type_name(r.type, r.size, b, sizeof b), "hex16");
	static const char *const bad[] = { "", "bytes:", "bytes:0", "bytes:4097",
					   "bytes:-1", "bytes:1x", "Int", "long ", NULL };
	for (size_t i = 0; bad[i]; i++)
		cr_assert_eq(dbs_tls_parse_type(bad[i], &r), -EINVAL, "%s", bad[i]);
}

/* TLS strings, keys and stacks are target bytes too. */
Test(render, hostile_tls_values_make_valid_json)
{
	struct dbs_snapshot *s = hostile_snapshot();
	s->ntls_vars = 3;
	s->tls_vars = calloc(3, sizeof *s->tls_vars);
	s->tls_vars[0] = (struct dbs_tls_var){ .name = strdup("na\"me\xff"), .found = true,
		.module = strdup("/m\xfe"), .type = DBS_TLS_STRING, .size = 8,
		.type_name = "string", .source = "symtab" };
	s->tls_vars[1] = (struct dbs_tls_var){ .name = strdup("big"), .found = true,
		.module = strdup("/m"), .type = DBS_TLS_UNSIGNED, .size = 8,
		.type_name = "ulong", .source = "dwarf" };
	s->tls_vars[2] = (struct dbs_tls_var){ .name = strdup("errno"), .is_errno = true,
		.found = true, .module = strdup("/libc"), .type = DBS_TLS_INT, .size = 4,
		.type_name = "int", .source = "symtab" };
	struct dbs_thread *th = &s->threads[1];
	th->ntls = 3;
	th->tls = calloc(3, sizeof *th->tls);
	uint64_t p = 0x1000, big = UINT64_MAX;
	int e = 2;
	th->tls[0] = (struct dbs_tls_value){ .status = DBS_TLS_OK, .have_addr = true,
		.addr = 0x7f00, .bytes = malloc(8), .str = strdup("\x1b[2J\xc3"),
		.str_len = 5 };
	memcpy(th->tls[0].bytes, &p, 8);
	th->tls[1] = (struct dbs_tls_value){ .status = DBS_TLS_OK, .have_addr = true,
		.addr = 0x7f08, .bytes = malloc(8) };
	memcpy(th->tls[1].bytes, &big, 8);
	th->tls[2] = (struct dbs_tls_value){ .status = DBS_TLS_OK, .have_addr = true,
		.addr = 0x7f10, .bytes = malloc(4) };
	memcpy(th->tls[2].bytes, &e, 4);
	s->threads[0].ntls = 3;
	s->threads[0].tls = calloc(3, sizeof *th->tls);
	s->threads[0].tls[0].status = DBS_TLS_NOT_ALLOCATED;
	s->threads[0].tls[1].status = DBS_TLS_ERROR;
	s->threads[0].tls[1].error = strdup("bad\xff");
	s->threads[0].tls[2].status = DBS_TLS_UNAVAILABLE;
	s->keys_read = true;
	s->keys_max = 1024;
	s->nkeys = 1;
	s->keys = calloc(1, sizeof *s->keys);
	s->keys[0] = (struct dbs_key){ .key = 7, .destructor = 0x401000,
		.destructor_sym = { .addr = 0x401000, .module = strdup("/x\xff"),
				    .name = strdup("d\x01") } };
	th->keys_read = true;
	th->nkeys = 1;
	th->keys = calloc(1, sizeof *th->keys);
	th->keys[0] = (struct dbs_key_value){ 7, UINT64_MAX };
	th->bounds = (struct dbs_stack_bounds){ .status = DBS_BOUNDS_OVERFLOW, .low = 0x1000,
		.high = 0x2000, .guard_low = 0x1000, .guard_high = 0x2000,
		.limit = 0x2000, .used = 0x800 };

	tinspect_snapshot *ts = pub(s);
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	struct agent_opts o = { .json = true };
	cr_assert_eq(render_json(f, ts, &o), 0);
	fclose(f);
	cr_assert(schema_valid(buf, len), "does not validate: %s", buf);
	json_t *doc = json_loadb(buf, len, 0, NULL);
	json_t *t1 = json_array_get(json_object_get(doc, "threads"), 1);
	json_t *v = json_object_get(json_object_get(t1, "tls"), "na\"me\xef\xbf\xbd");
	cr_assert(v, "%s", buf);
	cr_assert_str_eq(json_string_value(json_object_get(v, "value_hex")), "1b5b324ac3");
	cr_assert_str_eq(json_string_value(json_object_get(v, "pointer")), "0x1000");
	v = json_object_get(json_object_get(t1, "tls"), "big");
	cr_assert_str_eq(json_string_value(json_object_get(v, "value")),
			 "18446744073709551615", "exact, as a string");
	json_t *en = json_object_get(t1, "errno");
	cr_assert_str_eq(json_string_value(json_object_get(en, "name")), "ENOENT");
	cr_assert_str_eq(json_string_value(json_object_get(
		json_object_get(t1, "stack_bounds"), "status")), "overflow");
	json_decref(doc);
	free(buf);

	buf = NULL;
	f = open_memstream(&buf, &len);
	cr_assert_eq(render_text(f, ts, &o), 0);
	fclose(f);
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)buf[i];
		cr_assert(c == '\n' || (c >= 0x20 && c < 0x7f), "raw 0x%02x at %zu", c, i);
	}
	cr_assert(strstr(buf, "[!! STACK OVERFLOW"), "%s", buf);
	cr_assert(strstr(buf, "errno: 2 (ENOENT"));
	free(buf);
	tinspect_snapshot_free(ts);
}

#define FFFD "\xef\xbf\xbd"

/* Two --tls names that are one key once made UTF-8: the key appears once,
 * where the first was, with the last one's value (as a JSON object must). */
Test(render, tls_names_that_collide_as_keys)
{
	struct dbs_snapshot *s = hostile_snapshot();
	s->ntls_vars = 3;
	s->tls_vars = calloc(3, sizeof *s->tls_vars);
	static const char *const names[] = { "v\xfe", "w", "v\xff" };
	for (int i = 0; i < 3; i++)
		s->tls_vars[i] = (struct dbs_tls_var){ .name = strdup(names[i]),
			.found = true, .module = strdup("/m"), .type = DBS_TLS_INT,
			.size = 4, .type_name = "int", .source = "symtab" };
	for (int t = 0; t < 2; t++) {
		struct dbs_thread *th = &s->threads[t];
		th->ntls = 3;
		th->tls = calloc(3, sizeof *th->tls);
		for (int i = 0; i < 3; i++) {
			int v = 10 * t + i;
			th->tls[i] = (struct dbs_tls_value){ .status = DBS_TLS_OK,
				.have_addr = true, .addr = 0x1000 + (uint64_t)i,
				.bytes = malloc(4) };
			memcpy(th->tls[i].bytes, &v, 4);
		}
	}
	s->threads[0].ntls = 1;		/* fewer values than variables */
	tinspect_snapshot *ts = pub(s);
	for (int pretty = 0; pretty < 2; pretty++) {
		char *buf = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&buf, &len);
		struct agent_opts o = { .json = true, .pretty = pretty };
		cr_assert_eq(render_json(f, ts, &o), 0);
		fclose(f);
		cr_assert(schema_valid(buf, len), "does not validate: %s", buf);
		json_t *doc = json_loadb(buf, len, JSON_REJECT_DUPLICATES, NULL);
		cr_assert(doc, "duplicate keys? %s", buf);
		json_t *tls = json_object_get(json_array_get(json_object_get(doc, "threads"), 1),
					      "tls");
		cr_assert_eq(json_object_size(tls), 2);
		const char *first = json_object_iter_key(json_object_iter(tls));
		cr_assert_str_eq(first, "v" FFFD, "the key stays where it was first");
		cr_assert_eq(json_integer_value(json_object_get(json_object_get(tls, "v" FFFD),
								"value")), 12);
		tls = json_object_get(json_array_get(json_object_get(doc, "threads"), 0), "tls");
		cr_assert_eq(json_object_size(tls), 1);
		cr_assert_eq(json_integer_value(json_object_get(json_object_get(tls, "v" FFFD),
								"value")), 0);
		/* the process-wide list keeps every variable */
		cr_assert_eq(json_array_size(json_object_get(json_object_get(doc, "process"),
							     "tls")), 3);
		json_decref(doc);
		free(buf);
	}
	tinspect_snapshot_free(ts);
}

/* ---- /proc text (proc_service/common/procfs.c) ----------------------------- */

Test(procfs, stat_line)
{
	/* a name with ") S (" and a newline in it: split at the last ')' */
	static const char st[] =
		"4242 (a) S (x\ny) R 1 2 3 4 5 6 7 8 9 10 70 31 0 0 -51 -20 1 0 99 0 0 "
		"18446744073709551615 1 1 0 0 0 0 512 0 0 0 0 0 17 1 50 1 0 0 0\n";
	struct psvc_taskinfo ti = { 0 };
	cr_assert(psvc_parse_stat(st, sizeof st - 1, &ti));
	cr_assert_eq(ti.comm_len, 9);
	cr_assert(!memcmp(ti.comm, "a) S (x\ny", 9));
	cr_assert_eq(ti.state, 'R');
	cr_assert_eq(ti.utime_ticks, 70);
	cr_assert_eq(ti.stime_ticks, 31);
	cr_assert_eq(ti.priority, -51);		/* SCHED_FIFO 50 */
	cr_assert_eq(ti.nice, -20);
	cr_assert_eq(ti.processor, 1);
	cr_assert_eq(ti.rt_priority, 50);
	cr_assert_eq(ti.policy, 1);
	/* fewer fields than we read: what is there */
	static const char shortst[] = "7 (x) D 1 2";
	memset(&ti, 0, sizeof ti);
	cr_assert(psvc_parse_stat(shortst, sizeof shortst - 1, &ti));
	cr_assert_eq(ti.state, 'D');
	static const char *const bad[] = { "", "garbage", "1 x) S", "1 (x S 1",
					   "1 (x) S 1 2 junk 4\n", NULL };
	for (size_t i = 0; bad[i]; i++) {
		memset(&ti, 0, sizeof ti);
		cr_assert_not(psvc_parse_stat(bad[i], strlen(bad[i]), &ti), "%s", bad[i]);
	}
}

Test(procfs, status_lines)
{
	/* real-time signals are only here: stat's fields 31-34 stop at 31 */
	static const char st[] =
		"Name:\tSigBlk:\\tffff\n"		/* a name cannot fake a line */
		"State:\tS (sleeping)\n"
		"TracerPid:\t4711\n"
		"NSpid:\t12345\t678\t9\n"
		"SigQ:\t8/96365\n"
		"SigPnd:\t8000004000000200\n"
		"ShdPnd:\t0000000000000001\n"
		"SigBlk:\tfffffffe7ffbfeff\n"
		"Cpus_allowed:\t3\n"
		"Cpus_allowed_list:\t0-1,4\n"
		"nonvoluntary_ctxt_switches:\t40\n"
		"voluntary_ctxt_switches:\t3";		/* no final newline */
	struct psvc_taskinfo ti = { 0 };
	psvc_parse_status(st, sizeof st - 1, &ti);
	/* both switch counts, summed (waits.c), whatever their order */
	cr_assert_eq(ti.ctxt_switches, 43);
	cr_assert_eq(ti.ctxt_lines, 2);
	cr_assert_eq(ti.sigpnd, 0x8000004000000200ull);
	cr_assert_eq(ti.shdpnd, 1);
	cr_assert_eq(ti.sigblk, 0xfffffffe7ffbfeffull);
	cr_assert_eq(ti.tracer_pid, 4711);
	cr_assert_eq(ti.ns_tid, 9, "the innermost namespace's TID");
	cr_assert_str_eq(ti.cpus_allowed, "0-1,4");

	/* a list too long for the field ends in "..."; a mask wider than 64
	 * bits keeps its low 64; trailing blanks; lines without values */
	char big[512];
	int n = snprintf(big, sizeof big, "NSpid:\t5 \t\nSigPnd:\t123456789abcdef0123\n"
			 "TracerPid:\nSigBlk:\nCpus_allowed_list:\t");
	for (int i = 0; i < 60; i++)
		n += snprintf(big + n, sizeof big - (size_t)n, "%d,", 2 * i);
	memset(&ti, 0, sizeof ti);
	ti.sigblk = 7;
	psvc_parse_status(big, (size_t)n, &ti);
	cr_assert_eq(ti.ns_tid, 5);
	cr_assert_eq(ti.sigpnd, 0x456789abcdef0123ull);
	cr_assert_eq(ti.sigblk, 0);
	cr_assert_eq(ti.tracer_pid, 0);
	cr_assert_eq(strlen(ti.cpus_allowed), sizeof ti.cpus_allowed - 1);
	cr_assert_str_eq(ti.cpus_allowed + sizeof ti.cpus_allowed - 4, "...");

	/* nothing it knows: nothing changes */
	memset(&ti, 0, sizeof ti);
	ti.tracer_pid = 3;
	static const char junk[] = "\n\n:\n:x\nSigPnd\nNSpid:\t\nZ";
	psvc_parse_status(junk, sizeof junk - 1, &ti);
	cr_assert_eq(ti.tracer_pid, 3);
	cr_assert_eq(ti.ns_tid, 0);
	cr_assert_eq(ti.sigpnd, 0);
}

Test(procfs, stat_flags_and_parent)
{
	/* kthreadd: PF_KTHREAD (0x00200000) in the flags, field 9 */
	static const char kt[] = "2 (kthreadd) S 0 0 0 0 -1 2129984 0 0 0 0 0 0 0 0 "
				 "20 0 1 0 3 0 0 18446744073709551615 0 0 0 0 0 0 0 "
				 "2147483647 0 1 0 0 17 1 0 0 0 0 0\n";
	struct psvc_taskinfo ti = { 0 };
	cr_assert(psvc_parse_stat(kt, sizeof kt - 1, &ti));
	cr_assert(ti.kthread);
	cr_assert_eq(ti.ppid, 0);
	static const char user[] = "4242 (sh) S 17 4242 4242 0 -1 4194560 0 0 0 0\n";
	memset(&ti, 0, sizeof ti);
	cr_assert(psvc_parse_stat(user, sizeof user - 1, &ti));
	cr_assert_not(ti.kthread);
	cr_assert_eq(ti.ppid, 17);
}

Test(procfs, syscall_lines)
{
	struct psvc_taskinfo ti = { .sc_nr = -1 };
	psvc_parse_syscall("202 0x55d0 0x80 0x2 0x0 0x0 0x0 0x7ffd10 0x7f1234\n", &ti);
	cr_assert_eq(ti.sc_kind, PSVC_SC_IN_SYSCALL);
	cr_assert_eq(ti.sc_nr, 202);
	cr_assert_eq(ti.sc_args[0], 0x55d0);
	cr_assert_eq(ti.sc_args[1], 0x80);
	cr_assert_eq(ti.sc_sp, 0x7ffd10);
	cr_assert_eq(ti.sc_pc, 0x7f1234);
	memset(&ti, 0, sizeof ti);
	psvc_parse_syscall("-1 0x7ffd10 0x7f1234\n", &ti);
	cr_assert_eq(ti.sc_kind, PSVC_SC_NONE);
	cr_assert_eq(ti.sc_pc, 0x7f1234);
	memset(&ti, 0, sizeof ti);
	psvc_parse_syscall("running\n", &ti);
	cr_assert_eq(ti.sc_kind, PSVC_SC_RUNNING);
	/* too few arguments, or none: unknown */
	static const char *const bad[] = { "", "x", "202 0x1 0x2", "-1", NULL };
	for (size_t i = 0; bad[i]; i++) {
		memset(&ti, 0, sizeof ti);
		psvc_parse_syscall(bad[i], &ti);
		cr_assert_eq(ti.sc_kind, PSVC_SC_UNKNOWN, "%s", bad[i]);
	}
}

Test(procfs, maps_lines)
{
	char text[] =
		"55d0c0000000-55d0c0001000 r-xp 00001000 fe:01 1234  /usr/bin/x y\n"
		"\n"
		"7f0000000000-7f0000002000 rw-p 00000000 00:00 0 \n"
		"7f0000002000-7f0000003000 r-xp 00000000 fd:00 99 /tmp/lib.so (deleted)\n"
		"garbage line\n"
		"1000-2000 r 0 1:2 3\n";	/* a perms field of one letter */
	struct psvc_mapping *m;
	size_t n;
	cr_assert_eq(psvc_maps_parse(text, &m, &n), 0);
	cr_assert_eq(n, 4);
	cr_assert_eq(m[0].start, 0x55d0c0000000ull);
	cr_assert_eq(m[0].offset, 0x1000);
	cr_assert_eq(m[0].ino, 1234);
	cr_assert_str_eq(m[0].perms, "r-xp");
	cr_assert_str_eq(m[0].path, "/usr/bin/x y", "blanks in a path are kept");
	cr_assert_null(m[1].path);
	cr_assert(m[2].deleted);
	cr_assert_str_eq(m[2].path, "/tmp/lib.so");
	cr_assert_str_eq(m[3].perms, "r");
	psvc_maps_free(m, n);
}

Test(procfs, status_pid_beyond_any_pid)
{
	/* found by fuzz_procfs: 20 digits overflowed a long */
	static const char st[] = "NSpid:\t1 99999999999999999999999\nTracerPid:\t4294967296\n";
	struct psvc_taskinfo ti = { 0 };
	psvc_parse_status(st, sizeof st - 1, &ti);
	cr_assert_eq(ti.ns_tid, 0, "unknown, not a wrapped number");
	cr_assert_eq(ti.tracer_pid, 0);
}

/* The string pool: a first string bigger than a quarter chunk gets a chunk
 * of its own, and the strings after it do not run past it (ASan sees it). */
Test(strpool, outsized_first_string)
{
	struct dbs_strpool *p = dbs_strpool_new();
	cr_assert(p);
	static char big[20000];
	memset(big, 'x', sizeof big - 1);
	const char *b = dbs_strpool_intern(p, big);
	cr_assert(b && strlen(b) == sizeof big - 1);
	char small[32];
	const char *v[2000];
	for (int i = 0; i < 2000; i++) {
		snprintf(small, sizeof small, "s%d", i);
		v[i] = dbs_strpool_intern(p, small);
		cr_assert(v[i]);
	}
	for (int i = 0; i < 2000; i++) {
		snprintf(small, sizeof small, "s%d", i);
		cr_assert_str_eq(v[i], small);
		cr_assert_eq(dbs_strpool_intern(p, small), v[i], "not interned");
	}
	cr_assert_eq(strlen(b), sizeof big - 1);
	dbs_strpool_unref(p);
}

/* ---- the files for other tools (agent/formats/) ----------------------------- */

static char *label_value(const char *s)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	cr_assert(f);
	prom_put_label_value(f, s);
	fclose(f);
	return buf;
}

Test(formats, prometheus_label_values)
{
	struct { const char *in, *out; } cases[] = {
		{ "ledger_lock", "ledger_lock" },
		{ "a\"b", "a\\\"b" },
		{ "back\\slash", "back\\\\slash" },
		{ "new\nline", "new\\nline" },
		/* tabs and other controls are valid in a label value */
		{ "t\tx\x01", "t\tx\x01" },
		/* invalid UTF-8: each byte a U+FFFD; valid sequences kept */
		{ "\xff\xc3(\xc3\xa9", "\xef\xbf\xbd\xef\xbf\xbd(\xc3\xa9" },
		/* a truncated sequence at the end, an overlong '/' */
		{ "x\xe2\x82", "x\xef\xbf\xbd\xef\xbf\xbd" },
		{ "\xc0\xaf", "\xef\xbf\xbd\xef\xbf\xbd" },
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		char *got = label_value(cases[i].in);
		cr_expect_str_eq(got, cases[i].out, "case %zu", i);
		free(got);
	}
}

Test(formats, folded_frames_stay_one_field)
{
	struct { const char *in, *out; } cases[] = {
		{ "main", "main" },
		{ "a;b", "a:b" },
		{ "operator new(unsigned long)", "operator_new(unsigned_long)" },
		{ "x\ny\r\t", "x?y?_" },
		{ "\xff\xc3\xa9", "?\xc3\xa9" },
		{ "std::map<int, int>", "std::map<int,_int>" },
	};
	char buf[64];
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		folded_sanitize(cases[i].in, buf, sizeof buf);
		cr_expect_str_eq(buf, cases[i].out, "case %zu", i);
	}
	/* truncation never splits a character */
	char small[4];
	folded_sanitize("ab\xc3\xa9", small, sizeof small);
	cr_expect_str_eq(small, "ab");
	folded_sanitize("", small, sizeof small);
	cr_expect_str_eq(small, "");
}
