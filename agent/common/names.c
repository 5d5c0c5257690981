/*
 * names.c: the words the reports use for a thread's kernel state (the
 * letter of /proc/TID/stat) and its scheduling policy, in the text and in
 * the JSON document alike, and the mark of a reader or a writer of an
 * rwlock in the text and the files for other tools.
 */
#include "common.h"

#include <sched.h>

const char *agent_state_name(char state)
{
	switch (state) {
	case 'R': return "running";
	case 'S': return "sleeping";
	case 'D': return "disk sleep";
	case 'T': return "stopped";
	case 't': return "tracing stop";
	case 'Z': return "zombie";
	case 'X': return "dead";
	case 'I': return "idle";
	case 'P': return "parked";
	case 'W': return "waking";
	case 'K': return "wakekill";
	default: return "unknown";
	}
}

const char *agent_policy_name(unsigned policy)
{
	switch (policy) {
	case SCHED_OTHER: return "SCHED_OTHER";
	case SCHED_FIFO: return "SCHED_FIFO";
	case SCHED_RR: return "SCHED_RR";
	case SCHED_BATCH: return "SCHED_BATCH";
	case SCHED_IDLE: return "SCHED_IDLE";
	case 6: return "SCHED_DEADLINE";
	default: return "unknown";
	}
}

const char *agent_mode_mark(enum tinspect_wait_mode mode)
{
	switch (mode) {
	case TINSPECT_MODE_READ: return "(r)";
	case TINSPECT_MODE_WRITE: return "(w)";
	case TINSPECT_MODE_NONE: break;
	}
	return "";
}
