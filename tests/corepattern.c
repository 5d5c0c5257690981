/*
 * corepattern.c: pointing /proc/sys/kernel/core_pattern at a test's own
 * directory for as short a time as a dump takes, and putting it back, also
 * when the test dies (see core_pattern_begin()).  Shared by the suites
 * that make kernel cores (test_corefile.c, test_core.c).
 */
#include "corepattern.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

static int pattern_lock = -1, guard_pipe = -1;
static pid_t guard_pid;
static bool pattern_ours;
static char saved_pattern[512];
/* core_pattern_end() found the pattern restored, checked while it still
 * held the lock: after it lets go, another suite may set its own */
static bool restored_at_end = true;

#define PATTERN_FILE "/proc/sys/kernel/core_pattern"

/* Only system calls: the guard runs these after fork() in a process that
 * may have had other threads. */
static void pattern_read(char *buf, size_t cap)
{
	buf[0] = '\0';
	int fd = open(PATTERN_FILE, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	ssize_t n = read(fd, buf, cap - 1);
	close(fd);
	if (n < 0)
		n = 0;
	while (n && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
		n--;
	buf[n] = '\0';
}

static bool pattern_write(const char *s)
{
	int fd = open(PATTERN_FILE, O_WRONLY | O_TRUNC | O_CLOEXEC);
	if (fd < 0)
		return false;
	size_t n = strlen(s);
	bool ok = write(fd, s, n) == (ssize_t)n;
	close(fd);
	return ok;
}

/*
 * Point core_pattern into this test's directory.  Tests that do it are
 * serialized by a lock file; a guard process, forked first, restores the
 * saved pattern as soon as this process lets go of a pipe: when
 * pattern_end() closes it, but also when the test dies of anything
 * (a crash, criterion's timeout, SIGKILL), as the kernel closes the pipe
 * then.  The guard holds the lock until it has restored the pattern.
 */
void core_pattern_begin(const char *dir)
{
	pattern_lock = open("/tmp/tinspect-core_pattern.lock",
			    O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	cr_assert(pattern_lock >= 0, "lock file: %s", strerror(errno));
	cr_assert(flock(pattern_lock, LOCK_EX) == 0);
	pattern_read(saved_pattern, sizeof saved_pattern);
	/* a pattern of ours, left by a machine that went down in the middle
	 * of a dump: what it replaced was the default */
	if (strstr(saved_pattern, "/tinspect-core."))
		snprintf(saved_pattern, sizeof saved_pattern, "core");
	int p[2];
	cr_assert(pipe2(p, O_CLOEXEC) == 0);
	guard_pid = fork();
	cr_assert(guard_pid >= 0);
	if (guard_pid == 0) {
		signal(SIGINT, SIG_IGN);
		signal(SIGTERM, SIG_IGN);
		signal(SIGHUP, SIG_IGN);
		setsid();
		for (int fd = 3; fd < 1024; fd++)
			if (fd != p[0] && fd != pattern_lock)
				close(fd);
		char b;
		while (read(p[0], &b, 1) != 0)
			;	/* EOF: the test let go, or died */
		char cur[512];
		pattern_read(cur, sizeof cur);
		if (strcmp(cur, saved_pattern))
			pattern_write(saved_pattern);
		_exit(0);
	}
	close(p[0]);
	guard_pipe = p[1];
	char pat[400];
	snprintf(pat, sizeof pat, "%s/core.%%p", dir);
	pattern_ours = true;
	cr_assert(pattern_write(pat), "cannot set core_pattern: %s",
		  strerror(errno));
}

void core_pattern_end(void)
{
	if (!pattern_ours)
		return;
	pattern_write(saved_pattern);
	pattern_ours = false;
	close(guard_pipe);
	waitpid(guard_pid, NULL, 0);
	char cur[512];
	pattern_read(cur, sizeof cur);
	restored_at_end = !strcmp(cur, saved_pattern);
	close(pattern_lock);
	pattern_lock = guard_pipe = -1;
}


bool core_pattern_restored(void)
{
	return restored_at_end;
}
