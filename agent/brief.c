/*
 * brief.c: --brief, one line per thread after the summary, like gdb's
 * "info threads" for a process too large to read stack by stack: tid,
 * name, kernel state, the innermost frame, and what it waits on (the lock
 * and its holder, or the syscall it sleeps in).
 */
#include "agent.h"

#include <string.h>

void brief_threads(FILE *out, const struct dbs_snapshot *snap)
{
	fprintf(out, "%8s  %-18s %2s  %-44s %s\n", "TID", "NAME", "ST", "TOP FRAME",
		"WAITS ON");
	for (size_t i = 0; i < snap->nthreads; i++) {
		const struct dbs_thread *th = &snap->threads[i];
		fprintf(out, "%8d  ", (int)th->tid);
		/* the name escaped and padded: a name is any 15 bytes */
		char name[80];
		FILE *m = fmemopen(name, sizeof name, "w");
		if (m) {
			if (th->name)
				agent_fput_quoted(m, th->name, th->name_len);
			else
				fputs("?", m);
			fputc('\0', m);
			fclose(m);
			name[sizeof name - 1] = '\0';
		} else {
			strcpy(name, "?");
		}
		fprintf(out, "%-18s %2c  ", name,
			th->proc_valid && th->state ? th->state : '?');
		char frame[256] = "-";
		if (th->stack.nframes) {
			/* the innermost real frame, not an inlined helper */
			size_t k = 0;
			while (k + 1 < th->stack.nframes && th->stack.frames[k].inlined)
				k++;
			agent_frame_name(&th->stack.frames[k], frame, sizeof frame);
		}
		fprintf(out, "%-44s ", frame);
		report_put_wait_short(out, snap, th);
		fputc('\n', out);
	}
	fputc('\n', out);
}
