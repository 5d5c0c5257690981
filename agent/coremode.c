/*
 * coremode.c: tinspect --core FILE.  The snapshot of a core file, through
 * the same public API as a process's (tinspect_session_init_core instead
 * of tinspect_session_init); what cannot apply to a core was refused by
 * cmdline.c before.  A core that cannot be read is a usage error (2),
 * with the reader's reason: the file given is the problem.  main.c
 * renders the snapshot, and gives it to --folded and --pprof (the core's
 * stacks, one sample per thread), as it does a process's.
 */
#include "agent.h"
#include "common.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

int agent_core(const char *core, const char *exe, const char *sysroot,
	       const struct tinspect_options *opts, tinspect_snapshot **ret)
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
		fputs("tinspect: ", stderr);
		agent_put_escaped(stderr, core);
		fprintf(stderr, ": cannot read the core: %s\n", tinspect_strerror(err));
		return err == -ENOMEM ? EXIT_INTERNAL : EXIT_USAGE;
	}
	*ret = snap;
	return EXIT_SNAPSHOT_OK;
}
