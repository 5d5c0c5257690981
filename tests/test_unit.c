/*
 * test_unit: pure decoding, no ptrace.  Register blobs of both
 * architectures (tests/data), the EPERM diagnosis, and the JSON renderer fed
 * with hostile strings.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"
#include "arch.h"
#include "harness.h"
#include "psvc.h"

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

Test(arch, lookup)
{
	cr_assert_eq(arch_by_elf_machine(62), arch_by_id(ARCH_X86_64));
	cr_assert_eq(arch_by_elf_machine(183), arch_by_id(ARCH_AARCH64));
	cr_assert_null(arch_by_elf_machine(3));	/* EM_386 */
	cr_assert_null(arch_syscall_name(arch_host(), 100000));
	cr_assert_null(arch_syscall_name(arch_host(), -1));
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
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	struct agent_opts o = { .json = true };
	cr_assert_eq(render_json(f, s, &o), 0);
	fclose(f);
	cr_assert(schema_valid(buf, len), "hostile snapshot does not validate");
	json_error_t je;
	json_t *doc = json_loadb(buf, len, 0, &je);
	cr_assert(doc, "%s", je.text);
	json_t *t1 = json_array_get(json_object_get(doc, "threads"), 1);
	cr_assert_str_eq(json_string_value(json_object_get(t1, "name_hex")),
			 "eda08073757222" "5c");
	cr_assert_str_eq(json_string_value(json_object_get(json_object_get(t1, "regs"), "pc")),
			 "0xffffffffffffffff");
	json_t *t0 = json_array_get(json_object_get(doc, "threads"), 0);
	cr_assert_null(json_object_get(t0, "name_hex"));
	cr_assert(json_is_null(json_object_get(t0, "syscall")));
	json_decref(doc);
	free(buf);

	/* and the text renderer escapes every byte outside printable ASCII */
	buf = NULL;
	f = open_memstream(&buf, &len);
	cr_assert_eq(render_text(f, s, &o), 0);
	fclose(f);
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)buf[i];
		cr_assert(c == '\n' || (c >= 0x20 && c < 0x7f), "raw 0x%02x at %zu", c, i);
	}
	cr_assert(strstr(buf, "Thread 4243 \"\\xed\\xa0\\x80sur\\\"\\\\\""), "%s", buf);
	free(buf);
	dbs_snapshot_free(s);
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

	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	struct agent_opts o = { .json = true };
	cr_assert_eq(render_json(f, s, &o), 0);
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
	cr_assert_eq(render_text(f, s, &o), 0);
	fclose(f);
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)buf[i];
		cr_assert(c == '\n' || (c >= 0x20 && c < 0x7f), "raw 0x%02x at %zu", c, i);
	}
	cr_assert(strstr(buf, "[!! STACK OVERFLOW"), "%s", buf);
	cr_assert(strstr(buf, "errno: 2 (ENOENT"));
	free(buf);
	dbs_snapshot_free(s);
}
