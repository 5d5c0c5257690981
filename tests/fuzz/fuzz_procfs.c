/*
 * fuzz_procfs: every parser of /proc text over the same arbitrary bytes:
 * /proc/TID/stat (a thread name may hold ')' and newlines), status,
 * syscall and /proc/PID/maps.  Whatever the kernel or a thread's name put
 * there, the parsers stay inside the text and leave NUL-terminated,
 * bounded fields.
 */
#include <stdlib.h>
#include <string.h>

#include "psvc_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_str(const char *s, size_t cap)
{
	if (strnlen(s, cap) == cap)
		abort();	/* not terminated inside its field */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* as psvc_read_file_at() hands them over: the bytes, then a NUL */
	char *buf = malloc(size + 1);
	if (!buf)
		return 0;
	memcpy(buf, data, size);
	buf[size] = '\0';

	struct psvc_taskinfo ti;
	memset(&ti, 0, sizeof ti);
	if (psvc_parse_stat(buf, size, &ti)) {
		check_str(ti.comm, sizeof ti.comm);
		if (ti.comm_len >= sizeof ti.comm || ti.comm_len != strlen(ti.comm))
			abort();
	}
	psvc_parse_status(buf, size, &ti);
	check_str(ti.cpus_allowed, sizeof ti.cpus_allowed);
	psvc_parse_syscall(buf, &ti);
	if (memcmp(buf, data, size))
		abort();	/* the parsers above only read */

	struct psvc_mapping *m = NULL;
	size_t n = 0;
	if (psvc_maps_parse(buf, &m, &n) == 0) {
		for (size_t i = 0; i < n; i++) {
			check_str(m[i].perms, sizeof m[i].perms);
			if (m[i].path)
				(void)strlen(m[i].path);
		}
		psvc_maps_free(m, n);
	}
	free(buf);
	return 0;
}
