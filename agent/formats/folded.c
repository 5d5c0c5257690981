/*
 * folded.c: --folded FILE, the "folded stacks" that Brendan Gregg's
 * flamegraph.pl (and speedscope, inferno, ...) read: one line per
 * distinct stack, its frames root first separated by ';', a space, and
 * how many samples had it.  A sample is one thread at one update, so the
 * widths of a flame graph are thread-time: where the threads were, and,
 * through the leaf pseudo-frame ("[futex mutex ledger_lock]",
 * "[syscall read]", "[running]"), what they were waiting on.
 *
 * flamegraph.pl splits a line at ';' and takes the number after the last
 * blank as the count (its own stackcollapse scripts make the frames free
 * of both): names from the target are sanitized so that no frame can
 * split in two, run into the count or start a new line.
 */
#include "formats.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "jwriter.h"

void folded_sanitize(const char *s, char *buf, size_t len)
{
	size_t o = 0, n = strlen(s);
	if (!len)
		return;
	for (size_t i = 0; i < n && o + 1 < len;) {
		unsigned char c = (unsigned char)s[i];
		size_t l = agent_utf8_seq((const unsigned char *)s + i, n - i);
		if (l > 1) {
			if (o + l >= len)
				break;
			memcpy(buf + o, s + i, l);	/* a whole character */
			o += l;
			i += l;
			continue;
		}
		i++;
		if (c == ';')
			buf[o++] = ':';
		else if (c == ' ' || c == '\t')
			buf[o++] = '_';
		else if (l == 0 || c < 0x20 || c == 0x7f)
			buf[o++] = '?';	/* newlines, controls, invalid bytes */
		else
			buf[o++] = (char)c;
	}
	buf[o] = '\0';
}

struct line {
	char *stack;
	uint64_t count;
};

static int cmp_lines(const void *a, const void *b)
{
	return strcmp(((const struct line *)a)->stack, ((const struct line *)b)->stack);
}

/* One sample's stack as a folded line's first field. */
static char *stack_of(const struct sample *sm, bool by_name)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	if (!f)
		return NULL;
	char name[4096];
	if (by_name) {
		folded_sanitize(sm->thread_name, name, sizeof name);
		fprintf(f, "%s;", name[0] ? name : "(unnamed)");
	}
	for (size_t i = 0; i < sm->nframes; i++) {
		folded_sanitize(sm->frames[i]->name, name, sizeof name);
		fprintf(f, "%s;", name[0] ? name : "??");
	}
	fprintf(f, "[%s", sm->leaf.what);
	if (sm->leaf.name) {
		folded_sanitize(sm->leaf.name, name, sizeof name);
		fprintf(f, " %s", name);
	}
	fputc(']', f);
	if (fclose(f)) {
		free(buf);
		return NULL;
	}
	return buf;
}

int folded_write(const char *path, const struct samples *s, bool by_name,
		 unsigned mode)
{
	size_t n = samples_n(s);
	struct line *v = calloc(n ? n : 1, sizeof *v);
	if (!v)
		return -ENOMEM;
	int err = 0;
	for (size_t i = 0; i < n; i++) {
		const struct sample *sm = samples_get(s, i);
		v[i].count = sm->count;
		if (!(v[i].stack = stack_of(sm, by_name))) {
			err = -ENOMEM;
			goto out;
		}
	}
	/* samples that differ only in what a line does not show (the thread
	 * name, its state) make one line */
	qsort(v, n, sizeof *v, cmp_lines);
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	if (!f) {
		err = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < n;) {
		uint64_t count = 0;
		size_t j = i;
		for (; j < n && !strcmp(v[j].stack, v[i].stack); j++)
			count += v[j].count;
		fprintf(f, "%s %" PRIu64 "\n", v[i].stack, count);
		i = j;
	}
	if (fclose(f))
		err = -ENOMEM;
	else
		err = atomicfile_replace(path, buf, len, mode);
	free(buf);
out:
	for (size_t i = 0; i < n; i++)
		free(v[i].stack);
	free(v);
	return err;
}
