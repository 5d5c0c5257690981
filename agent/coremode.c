/*
 * coremode.c: tinspect --core FILE.  The same report as for a process,
 * from a core file, through the same public API (tinspect_session_init_core
 * instead of tinspect_session_init); what cannot apply to a core was
 * refused by main.c before.  A core that cannot be read is a usage error
 * (2), with the reader's reason: the file given is the problem.  --folded
 * and --pprof get the core's stacks, one sample per thread (main.c opened
 * them in ao->formats).
 */
#include "agent.h"
#include "common.h"
#include "formats.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

int agent_core(const char *core, const char *exe, const char *sysroot,
	       const struct tinspect_options *opts, const struct agent_opts *ao)
{
	struct tinspect_options o = *opts;
	/* nothing is ever stopped: no wake signal, no holding flag */
	o.wake_signal = 0;
	o.holding = NULL;
	char why[512];
	tinspect_session *s = NULL;
	int err = tinspect_session_init_core(core, exe, sysroot, &o, &s, why,
					     sizeof why);
	if (err) {
		formats_close(ao->formats);
		fputs("tinspect: ", stderr);
		agent_put_escaped(stderr, core);
		fputs(": ", stderr);
		/* the reason may quote bytes of the file: escaped */
		agent_put_escaped(stderr, why[0] ? why : tinspect_strerror(err));
		fputc('\n', stderr);
		return err == -ENOMEM ? EXIT_INTERNAL : EXIT_USAGE;
	}
	tinspect_snapshot *snap = NULL;
	err = tinspect_session_update(s, &snap);
	tinspect_session_destroy(s);
	if (err) {
		formats_close(ao->formats);
		fputs("tinspect: ", stderr);
		agent_put_escaped(stderr, core);
		fprintf(stderr, ": cannot read the core: %s\n", tinspect_strerror(err));
		return err == -ENOMEM ? EXIT_INTERNAL : EXIT_USAGE;
	}
	formats_snapshot(ao->formats, snap);
	int ferr = formats_close(ao->formats);
	struct agent_opts a = *ao;
	a.formats = NULL;	/* closed */
	int status = agent_report(snap, &a);
	/* a file not written: an internal error, unless the deadlock the
	 * caller asked about was found (as for a process) */
	if (ferr && status != EXIT_DEADLOCK)
		status = EXIT_INTERNAL;
	return status;
}
