/*
 * deadlock: a small service that deadlocks on purpose, to show what
 * tinspect reports.  Two threads take two global mutexes in opposite
 * orders (ABBA); a few workers wait for jobs that never come.
 *
 * It prints "ready PID" once both deadlocked threads sleep in futex(2),
 * and then stays stuck until killed.
 */
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

pthread_mutex_t ledger_lock = PTHREAD_MUTEX_INITIALIZER;
pthread_mutex_t audit_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_barrier_t both_hold_one;
static pthread_mutex_t jobs_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t jobs_ready = PTHREAD_COND_INITIALIZER;
static volatile pid_t tids[2];

static void *post_transfer(void *arg)
{
	(void)arg;
	tids[0] = (pid_t)syscall(SYS_gettid);
	pthread_mutex_lock(&ledger_lock);
	pthread_barrier_wait(&both_hold_one);
	pthread_mutex_lock(&audit_lock);	/* held by audit_ledger */
	return NULL;
}

static void *audit_ledger(void *arg)
{
	(void)arg;
	tids[1] = (pid_t)syscall(SYS_gettid);
	pthread_mutex_lock(&audit_lock);
	pthread_barrier_wait(&both_hold_one);
	pthread_mutex_lock(&ledger_lock);	/* held by post_transfer */
	return NULL;
}

static void *worker(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&jobs_lock);
	for (;;)
		pthread_cond_wait(&jobs_ready, &jobs_lock);
	return NULL;
}

/* Is thread tid asleep in futex(2)?  /proc/self/task/TID/syscall starts
 * with the syscall number (202 on x86_64, 98 on aarch64). */
static int in_futex(pid_t tid)
{
	char path[64], buf[128] = "";
	snprintf(path, sizeof path, "/proc/self/task/%d/syscall", (int)tid);
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	long nr = strtol(buf, NULL, 10);
	return nr == SYS_futex;
}

int main(void)
{
	pthread_t t;
	pthread_barrier_init(&both_hold_one, NULL, 2);
	pthread_create(&t, NULL, post_transfer, NULL);
	pthread_setname_np(t, "post-transfer");
	pthread_create(&t, NULL, audit_ledger, NULL);
	pthread_setname_np(t, "audit-ledger");
	for (int i = 0; i < 3; i++) {
		char name[16];
		pthread_create(&t, NULL, worker, NULL);
		snprintf(name, sizeof name, "worker-%d", i);
		pthread_setname_np(t, name);
	}
	while (!tids[0] || !tids[1] || !in_futex(tids[0]) || !in_futex(tids[1]))
		sched_yield();
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	for (;;)
		pause();
}
