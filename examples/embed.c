/*
 * embed.c: libtinspect in a program of its own.  Given a PID: one
 * snapshot, then one line per deadlock, its threads in the order they wait
 * for each other, back to the first:
 *
 *     deadlock: 1234 -> 1235 -> 1234
 *
 * or "no deadlock".  Built against the installed library:
 *
 *     cc embed.c $(pkg-config --cflags --libs tinspect) -o embed
 *
 * Exit status: 0 no deadlock, 1 a deadlock was found, 2 usage error or the
 * process could not be inspected (the message says why), 128+N killed by
 * signal N after the target was resumed.
 *
 * What the library needs from a program (tinspect.h): a handler for the
 * wake signal without SA_RESTART, so that a thread that will not stop
 * cannot hold the target stopped past the stop timeout; and, so that a
 * signal in the middle of the capture resumes the target before the
 * program dies, a cancel flag the handlers raise.
 */
#define _POSIX_C_SOURCE 200809L
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tinspect/tinspect.h>

static volatile sig_atomic_t cancelled;

static void on_wake(int sig)
{
	(void)sig;	/* only there to interrupt the library's waits */
}

static void on_stop(int sig)
{
	cancelled = sig;	/* the library resumes the target, returns -EINTR */
}

static void install(int sig, void (*fn)(int))
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sigemptyset(&sa.sa_mask);
	sa.sa_handler = fn;	/* no SA_RESTART */
	sigaction(sig, &sa, NULL);
}

int main(int argc, char **argv)
{
	char *end;
	long pid = argc == 2 ? strtol(argv[1], &end, 10) : 0;
	if (argc != 2 || *end || pid <= 0) {
		fprintf(stderr, "usage: embed PID\n");
		return 2;
	}
	install(SIGALRM, on_wake);
	install(SIGINT, on_stop);
	install(SIGTERM, on_stop);

	TINSPECT_OPTIONS(opts,
		.wake_signal = SIGALRM,
		.cancel = &cancelled,
		.flags = TINSPECT_OPT_NO_STACKS);	/* the cycles need no stacks */

	tinspect_session *s = NULL;
	tinspect_snapshot *snap = NULL;
	int err = tinspect_session_init((pid_t)pid, &opts, &s);
	if (!err)
		err = tinspect_session_update(s, &snap);
	tinspect_session_destroy(s);
	if (cancelled) {
		/* the target runs again: now die of the signal */
		signal(cancelled, SIG_DFL);
		raise(cancelled);
	}
	if (err) {
		fprintf(stderr, "embed: process %ld: %s\n", pid, tinspect_strerror(err));
		return 2;
	}
	if (!tinspect_snapshot_locks_analysed(snap)) {
		fprintf(stderr, "embed: the locks could not be analysed\n");
		tinspect_snapshot_free(snap);
		return 2;
	}

	size_t ncycles = tinspect_snapshot_ncycles(snap);
	for (size_t i = 0; i < ncycles; i++) {
		const tinspect_cycle *c = tinspect_snapshot_cycle(snap, i);
		size_t n = tinspect_cycle_length(c);
		printf("deadlock:");
		for (size_t k = 0; k <= n; k++)
			printf("%s%d", k ? " -> " : " ", (int)tinspect_cycle_tid(c, k % n));
		putchar('\n');
	}
	if (!ncycles)
		puts("no deadlock");
	tinspect_snapshot_free(snap);
	return ncycles ? 1 : 0;
}
