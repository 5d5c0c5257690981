/*
 * guard.h: the thread that receives SIGINT, SIGTERM, SIGHUP and SIGQUIT
 * and sees that tinspect ends on them, and that a freeze ends, whatever
 * the capture waits for (guard.c).
 */
#ifndef TINSPECT_AGENT_GUARD_H
#define TINSPECT_AGENT_GUARD_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

struct guard_opts {
	/* main.c's flags: the signal that arrived (the session's cancel
	 * flag), whether a capture runs, the session's holding flag (1
	 * attached, 2 and up while stopped: tinspect_options.holding), and
	 * whether a signal must let the watch loop write its files first */
	volatile sig_atomic_t *got_signal;
	volatile sig_atomic_t *capturing;
	volatile sig_atomic_t *holding;
	volatile sig_atomic_t *finish_first;
	/* --max-freeze (0: none) */
	uint64_t max_freeze_ns;
	/* the library's wake signal: sent to the main thread to end the wait
	 * it may be in when a signal arrives */
	int wake_signal;
};

/*
 * Block SIGINT, SIGTERM, SIGHUP and SIGQUIT in the calling thread (and so
 * in every thread created after) and start the thread that takes them.
 * Call before any other thread exists.  false if no thread could be made:
 * the caller then handles those signals itself.
 */
bool guard_start(const struct guard_opts *o);

/* Die of signal sig now: its default action, unblocked. */
void guard_die_of(int sig) __attribute__((noreturn));

#endif
