/*
 * brief.c: --brief, one line per thread after the summary, like gdb's
 * "info threads" for a process too large to read stack by stack: tid,
 * name, kernel state, the innermost frame, and what it waits on (the lock
 * and its holder, or the syscall it sleeps in).
 */
#include "text.h"

#include <string.h>

void brief_threads(FILE *out, const tinspect_snapshot *snap)
{
	fprintf(out, "%8s  %-18s %2s  %-44s %s\n", "TID", "NAME", "ST", "TOP FRAME",
		"WAITS ON");
	for (size_t i = 0, n = tinspect_snapshot_nthreads(snap); i < n; i++) {
		const tinspect_thread *th = tinspect_snapshot_thread(snap, i);
		size_t len;
		const char *tname = tinspect_thread_name(th, &len);
		char state = tinspect_thread_state(th);
		fprintf(out, "%8d  ", (int)tinspect_thread_tid(th));
		/* the name escaped and padded: a name is any 15 bytes */
		char name[80];
		FILE *m = fmemopen(name, sizeof name, "w");
		if (m) {
			if (tname)
				agent_fput_quoted(m, tname, len);
			else
				fputs("?", m);
			fputc('\0', m);
			fclose(m);
			name[sizeof name - 1] = '\0';
		} else {
			strcpy(name, "?");
		}
		fprintf(out, "%-18s %2c  ", name, state ? state : '?');
		char frame[256] = "-";
		size_t nframes = tinspect_thread_nframes(th);
		if (nframes) {
			/* the innermost real frame, not an inlined helper */
			size_t k = 0;
			while (k + 1 < nframes &&
			       tinspect_frame_inlined(tinspect_thread_frame(th, k)))
				k++;
			agent_frame_name(tinspect_thread_frame(th, k), frame, sizeof frame);
		}
		fprintf(out, "%-44s ", frame);
		report_put_wait_short(out, th);
		fputc('\n', out);
	}
	fputc('\n', out);
}
