/*
 * coreread: the core reader (proc_service/core/core.h) from the command
 * line, for bench/core.sh and for looking at a core by hand.
 *
 *   coreread [-v] [--stack-bytes N] [--budget N] CORE
 *
 * Opens CORE (plain or compressed), reads every thread's registers and
 * its stack window [sp - 128, sp + N) as the live capture copies it
 * (clipped to the mapping that holds sp), and prints one summary line:
 *   threads=T regs=R stack_bytes=B stack_unreadable=U kept=K warnings=W
 * With -v, also the process facts, each thread, the maps and warnings.
 * Exit status 0, or 1 if the core cannot be opened (the reason on stderr).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"

static unsigned char window[64u << 20];

int main(int argc, char **argv)
{
	struct psvc_core_opts o = { 0 };
	bool verbose = false;
	int i;
	for (i = 1; i < argc - 1; i++) {
		if (!strcmp(argv[i], "-v"))
			verbose = true;
		else if (!strcmp(argv[i], "--stack-bytes") && i + 2 < argc)
			o.stack_bytes = strtoull(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "--budget") && i + 2 < argc)
			o.budget = strtoull(argv[++i], NULL, 0);
		else
			break;
	}
	if (i != argc - 1) {
		fprintf(stderr, "usage: coreread [-v] [--stack-bytes N] "
			"[--budget N] CORE\n");
		return 2;
	}
	uint64_t stack_bytes = o.stack_bytes ? o.stack_bytes : PSVC_CORE_STACK_BYTES;
	if (stack_bytes + PSVC_CORE_STACK_BELOW > sizeof window)
		stack_bytes = sizeof window - PSVC_CORE_STACK_BELOW;
	struct psvc_core *c;
	char why[256];
	int err = psvc_core_open(argv[i], &o, &c, why, sizeof why);
	if (err) {
		fprintf(stderr, "coreread: %s: %s\n", argv[i], why);
		return 1;
	}
	const struct arch_desc *a = psvc_core_arch(c);
	if (verbose) {
		const struct psvc_core_proc *p = psvc_core_proc(c);
		printf("arch %s zip %s producer %d size %" PRIu64 "/%" PRIu64 "\n",
		       a->name, psvc_core_zip_name(psvc_core_zip(c)),
		       psvc_core_producer(c), psvc_core_sizes(c)->file,
		       psvc_core_sizes(c)->expected);
		if (p->have_psinfo)
			printf("process pid %d ppid %d uid %u fname '%s' psargs '%s'\n",
			       (int)p->pid, (int)p->ppid, p->uid, p->fname,
			       p->psargs);
		const struct psvc_core_file *exe = psvc_core_exe(c);
		printf("exe %s\n", exe ? exe->path : "?");
	}
	size_t nregs = 0, unreadable = 0;
	uint64_t bytes = 0;
	for (size_t t = 0; t < psvc_core_nthreads(c); t++) {
		const struct psvc_core_thread *th = psvc_core_thread_at(c, t);
		if (!th->have_regs)
			continue;
		nregs++;
		uint64_t sp = arch_sp(a, th->gregs), lo = sp - PSVC_CORE_STACK_BELOW;
		struct psvc_map m;
		uint64_t len = stack_bytes + PSVC_CORE_STACK_BELOW;
		if (psvc_core_map_lookup(c, sp, &m, NULL) == 0) {
			if (lo < m.start)
				lo = m.start;
			if (m.end - lo < len)
				len = m.end - lo;
		}
		struct psvc_core_miss miss;
		err = psvc_core_read(c, lo, window, len, &miss);
		if (err) {
			unreadable++;
			/* what can be read of it, as the live capture clips */
			bytes += psvc_core_extent(c, lo, len);
		} else {
			bytes += len;
		}
		if (verbose) {
			char ms[256] = "";
			if (err)
				psvc_core_miss_str(c, &miss, ms, sizeof ms);
			printf("thread %d sig %d pc %#" PRIx64 " sp %#" PRIx64
			       " tp %#" PRIx64 "%s%s%s\n", (int)th->tid, th->cursig,
			       arch_pc(a, th->gregs), sp, th->tp,
			       th->have_siginfo ? " siginfo" : "", err ? ": " : "", ms);
		}
	}
	if (verbose) {
		for (size_t k = 0; k < psvc_core_nmaps(c); k++) {
			const struct psvc_core_map *m = psvc_core_map_at(c, k);
			printf("map %" PRIx64 "-%" PRIx64 " %s %" PRIx64 " in_core %"
			       PRIx64 " %s\n", m->map.start, m->map.end,
			       m->map.perms, m->map.offset, m->in_core,
			       m->map.path ? m->map.path : "");
		}
		for (size_t k = 0; k < psvc_core_nwarnings(c); k++)
			printf("warning %s\n", psvc_core_warning_at(c, k));
	}
	printf("threads=%zu regs=%zu stack_bytes=%" PRIu64 " stack_unreadable=%zu "
	       "kept=%" PRIu64 " warnings=%zu\n", psvc_core_nthreads(c), nregs,
	       bytes, unreadable, psvc_core_sizes(c)->kept, psvc_core_nwarnings(c));
	psvc_core_close(c);
	return 0;
}
