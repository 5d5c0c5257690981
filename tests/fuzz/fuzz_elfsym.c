/*
 * fuzz_elfsym: an ELF object's symbol tables and build-id (elfsym.c) from
 * arbitrary bytes, both ways a module is loaded: from a file descriptor
 * (libelf maps it, as for every module opened through map_files) and from
 * a copy in memory (the vDSO).  ELF files are anyone's: a crafted one must
 * give no symbols, never a crash.  What it gives must hold together: a
 * symbol found by address is found again by its name, the build-id is hex.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "psvc_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const lookups[] = {
	"main", "_thread_db_pthread_tid", "_thread_db_sizeof_pthread",
	"__pthread_keys", "_r_debug", "errno", "", "_start",
};

static void check(struct psvc_elf *e)
{
	char id[41];
	psvc_elfsym_build_id(e, id);
	size_t idlen = strnlen(id, sizeof id);
	if (idlen == sizeof id || idlen % 2)
		abort();
	for (size_t i = 0; i < idlen; i++)
		if (!isxdigit((unsigned char)id[i]) || isupper((unsigned char)id[i]))
			abort();
	for (size_t i = 0; i < sizeof lookups / sizeof *lookups; i++) {
		const struct psvc_elfsym *s = psvc_elfsym_lookup(e, lookups[i]);
		if (s && strcmp(s->name, lookups[i]))
			abort();
	}
	uint64_t base, top;
	unsigned e_type;
	psvc_elfsym_load_span(e, &base, &top, &e_type);
	(void)psvc_elfsym_has_symtab(e);
	/* addresses around the load base and spread over the space */
	for (uint64_t k = 0; k < 64; k++) {
		uint64_t probes[] = { base + k * 8, base + (k << 12), k << 58,
				      UINT64_MAX - k };
		for (size_t p = 0; p < 4; p++) {
			const struct psvc_elfsym *s = psvc_elfsym_by_addr(e, probes[p]);
			if (!s)
				continue;
			/* it covers the address */
			if (!(s->value == probes[p] ||
			      (s->size && probes[p] - s->value < s->size)))
				abort();
			const struct psvc_elfsym *byname = psvc_elfsym_lookup(e, s->name);
			if (!byname || strcmp(byname->name, s->name))
				abort();
		}
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int err = 0;
	struct psvc_elf *e = psvc_elfsym_open_mem(data, size, &err);
	if (e) {
		check(e);
		psvc_elfsym_close(e);
	} else if (err >= 0) {
		abort();	/* a failure says why */
	}

	int fd = memfd_create("fuzz_elfsym", MFD_CLOEXEC);
	if (fd < 0 || write(fd, data, size) != (ssize_t)size)
		abort();
	e = psvc_elfsym_open_fd(fd, &err);	/* takes fd, even on failure */
	if (e) {
		check(e);
		psvc_elfsym_close(e);
	}
	return 0;
}
