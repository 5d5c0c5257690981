/*
 * clonerate: a clone-heavy target for measuring what `tinspect --watch
 * --follow-threads` costs a process that creates threads all the time.
 *
 *   clonerate [-c CREATORS] [-s SECONDS]
 *
 * Prints "pid PID", waits for SIGUSR1, then CREATORS threads (default 2)
 * each create and join short-lived threads for SECONDS (default 3), and it
 * prints "rate THREADS_PER_SECOND created=N seconds=S" and exits.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static atomic_ulong created;
static atomic_int stop;

static void *nothing(void *arg)
{
	return arg;
}

static void *creator(void *arg)
{
	(void)arg;
	pthread_attr_t a;
	pthread_attr_init(&a);
	pthread_attr_setstacksize(&a, 64 * 1024);
	while (!atomic_load(&stop)) {
		pthread_t t;
		if (pthread_create(&t, &a, nothing, NULL) == 0) {
			pthread_join(t, NULL);
			atomic_fetch_add(&created, 1);
		}
	}
	return NULL;
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	int creators = 2, opt;
	double seconds = 3;
	while ((opt = getopt(argc, argv, "c:s:")) != -1) {
		if (opt == 'c')
			creators = atoi(optarg);
		else if (opt == 's')
			seconds = atof(optarg);
		else
			return 2;
	}
	if (creators < 1 || creators > 64 || seconds <= 0)
		return 2;
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	sigprocmask(SIG_BLOCK, &set, NULL);
	printf("pid %d\n", (int)getpid());
	fflush(stdout);
	int sig;
	sigwait(&set, &sig);
	pthread_t t[64];
	double t0 = now();
	for (int i = 0; i < creators; i++)
		pthread_create(&t[i], NULL, creator, NULL);
	struct timespec d = { (time_t)seconds,
			      (long)((seconds - (double)(time_t)seconds) * 1e9) };
	nanosleep(&d, NULL);
	atomic_store(&stop, 1);
	for (int i = 0; i < creators; i++)
		pthread_join(t[i], NULL);
	double el = now() - t0;
	unsigned long n = atomic_load(&created);
	printf("rate %.0f created=%lu seconds=%.3f\n", (double)n / el, n, el);
	return 0;
}
