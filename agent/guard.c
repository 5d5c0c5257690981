/*
 * guard.c: tinspect ends when it is asked to, and a freeze ends, whatever
 * the capture is waiting for.
 *
 * A signal handler runs only in a thread that returns to user space, and a
 * capture can wait where no handled signal wakes it: a read of memory
 * whose page fault waits killably only (a page of a userfaultfd range that
 * was registered after the scan, a file on a FUSE mount mapped by the
 * target), the open of a file that never answers.  When the thread the
 * kernel picks for a handled SIGTERM waits there, the signal stays pending
 * for ever.  So SIGINT, SIGTERM, SIGHUP and SIGQUIT are blocked in every
 * thread but this one, which takes them with sigtimedwait() and:
 *   - when nothing is held (no capture, or nothing stopped or attached at
 *     this moment): dies of the signal at once;
 *   - when the target is held: raises the session's cancel flag (the
 *     capture resumes the target and returns -EINTR, and main dies of the
 *     signal) and interrupts the main thread's wait (a follow-mode wait
 *     between updates); if tinspect has not ended GRACE_NS later, it dies
 *     of the signal all the same.  A fatal signal ends every thread, also
 *     one in a killable wait, and the kernel detaches every task tinspect
 *     traced: the target runs on.
 * With --max-freeze, a stop that lasts FREEZE_GRACE_NS past the limit (at
 * which the capture abandons it) is a capture that cannot return: tinspect
 * says so and exits with status 7, and the kernel lets the target go.
 *
 * SIGPIPE stays with main.c's handler: it is raised by a write in the
 * thread that wrote.
 */
#include "guard.h"

#include "agent.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define GRACE_NS 750000000ull		/* from the signal to the end */
#define FREEZE_GRACE_NS 2000000000ull	/* past --max-freeze */
#define TICK_HELD_NS 10000000ull	/* while stopped, or ending */
#define TICK_IDLE_NS 200000000ull

static struct guard_opts G;
static pthread_t main_thread;

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static sigset_t guarded(void)
{
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	sigaddset(&set, SIGQUIT);
	return set;
}

static void say(const char *msg)
{
	(void)!write(STDERR_FILENO, msg, strlen(msg));
}

void guard_die_of(int sig)
{
	signal(sig, SIG_DFL);
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, sig);
	pthread_sigmask(SIG_UNBLOCK, &set, NULL);
	raise(sig);
	_exit(128 + sig);
}

/* One signal taken: now, or once what is held is let go. */
static void on_guarded(int sig, uint64_t now, uint64_t *sig_at)
{
	if (!*G.got_signal)
		*G.got_signal = sig;
	if (!*G.capturing || (!*G.holding && !*G.finish_first))
		guard_die_of(sig);
	if (!*sig_at)
		*sig_at = now;
	if (G.wake_signal)
		pthread_kill(main_thread, G.wake_signal);
}

static void *guard_main(void *arg)
{
	(void)arg;
	sigset_t set = guarded();
	uint64_t sig_at = 0, hold_since = 0;
	int hold_seen = 0;
	for (;;) {
		bool busy = *G.capturing && (*G.holding >= 2 || *G.got_signal);
		uint64_t tick = busy ? TICK_HELD_NS : TICK_IDLE_NS;
		struct timespec to = { (time_t)(tick / 1000000000u),
				       (long)(tick % 1000000000u) };
		int sig = sigtimedwait(&set, NULL, &to);
		uint64_t now = now_ns();
		if (sig > 0)
			on_guarded(sig, now, &sig_at);
		else if (*G.got_signal && !sig_at)
			sig_at = now;	/* raised by main's handler (SIGPIPE) */
		if (sig_at && *G.capturing && now - sig_at > GRACE_NS) {
			say("tinspect: the capture did not end within 0.75 s of the "
			    "signal (it waits in the kernel); exiting, the kernel "
			    "lets the process go\n");
			guard_die_of(*G.got_signal ? *G.got_signal : SIGTERM);
		}
		/* the holding flag takes a new value >= 2 at every stop */
		int h = *G.holding;
		if (h < 2 || !*G.capturing) {
			hold_seen = 0;
			continue;
		}
		if (h != hold_seen) {
			hold_seen = h;
			hold_since = now;
		} else if (G.max_freeze_ns &&
			   now - hold_since > G.max_freeze_ns + FREEZE_GRACE_NS) {
			char msg[256];
			snprintf(msg, sizeof msg, "tinspect: freeze limit of %.3f ms "
				 "exceeded and the capture does not return (it waits "
				 "in the kernel); exiting, the kernel lets the "
				 "process go\n", (double)G.max_freeze_ns / 1e6);
			say(msg);
			_exit(EXIT_FREEZE_LIMIT);
		}
	}
	return NULL;
}

bool guard_start(const struct guard_opts *o)
{
	G = *o;
	main_thread = pthread_self();
	sigset_t set = guarded(), old;
	pthread_sigmask(SIG_BLOCK, &set, &old);
	pthread_t th;
	if (pthread_create(&th, NULL, guard_main, NULL) != 0) {
		pthread_sigmask(SIG_SETMASK, &old, NULL);
		return false;
	}
	pthread_detach(th);
	return true;
}
