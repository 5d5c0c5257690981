/*
 * agent: the tinspect program.  Command line, exit statuses, signal
 * handling and the two renderers.  Renderers only read a finished snapshot;
 * they never touch the process.
 */
#ifndef TINSPECT_AGENT_H
#define TINSPECT_AGENT_H

#include <stdbool.h>
#include <stdio.h>

#include "dbsession.h"

/* Exit statuses: documented in --help, README.md and tinspect(1). */
enum agent_exit {
	EXIT_SNAPSHOT_OK = 0,		/* complete snapshot */
	EXIT_PARTIAL = 1,		/* snapshot with per-thread failures */
	EXIT_USAGE = 2,			/* bad command line */
	EXIT_NO_PROCESS = 3,		/* no such process */
	EXIT_PERMISSION = 4,		/* ptrace not permitted */
	EXIT_UNSUPPORTED = 5,		/* 32-bit, foreign arch, kernel thread */
	EXIT_TARGET_EXITED = 6,		/* the process exited mid-capture */
	EXIT_FREEZE_LIMIT = 7,		/* --max-freeze exceeded; resumed */
	EXIT_INTERNAL = 8,		/* out of memory, output error, ... */
	EXIT_DEADLOCK = 10,		/* --check: a deadlock was found */
};

struct agent_opts {
	bool json;
	bool pretty;
	bool check;		/* --check: exit EXIT_DEADLOCK on a deadlock */
};

/* JSON document format; bump the minor for additions, the major for
 * changes that break readers. */
#define TINSPECT_FORMAT_VERSION "1.3"

int render_text(FILE *out, const struct dbs_snapshot *snap,
		const struct agent_opts *o);
int render_json(FILE *out, const struct dbs_snapshot *snap,
		const struct agent_opts *o);

/* text helpers shared by the renderers (text.c) */
const char *agent_state_name(char state);
const char *agent_policy_name(unsigned policy);
const char *agent_td_state_name(int td_state);
/* Write bytes as a C-like quoted string: printable ASCII as is, '"' and
 * '\\' escaped, everything else as \xNN. */
void agent_fput_quoted(FILE *out, const char *s, size_t len);

#endif
