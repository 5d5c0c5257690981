/*
 * fuzz_lockdecode: dbs_lock_decode() over arbitrary lock words, of every
 * kind, for every architecture's layout.  The words are target memory
 * read at the stop: whatever they hold, decoding must stay inside them.
 */
#include <stdlib.h>
#include <string.h>

#include "dbs_int.h"
#include "fuzz_input.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz z = { data, size };
	enum arch_id arches[] = { ARCH_X86_64, ARCH_AARCH64 };
	const struct arch_desc *a = arch_by_id(arches[fz_pick(&z, 2)]);
	struct dbs_lock l = { .kind = (enum dbs_lock_kind)fz_pick(&z, 7) };
	l.object_known = fz_bool(&z);
	l.addr = fz_u64(&z);
	/* exactly the bytes the input has left, so that a decoder reading
	 * past nwords reads past a heap block (ASan) */
	size_t n = z.n < sizeof l.words ? z.n : sizeof l.words;
	unsigned char *words = malloc(n ? n : 1);
	memcpy(words, z.p, n);
	memcpy(l.words, words, n);
	l.nwords = n;
	if (dbs_lock_decode(a, &l)) {
		/* what the renderers print of it */
		(void)strlen(dbs_lock_kind_name(l.kind));
		if (l.kind == DBS_LOCK_MUTEX)
			(void)strlen(dbs_mutex_type_name(l.u.mutex.type));
	}
	if (memcmp(l.words, words, n))
		abort();	/* decoding is pure: the words stay as read */
	free(words);
	return 0;
}
