/*
 * manylocks: a target that makes a watch remember many locks, for
 * bench/lockorder.sh's measure of what tracking their words adds to the
 * freeze.
 *
 *   manylocks [LOCKS] [PAIRS] [spread]   (default 1000 mutexes, 100 pairs)
 *
 * The mutexes are one array (one range for the copy), or with "spread"
 * each in a page of its own (a range each: the worst case).
 * Each of PAIRS pairs of threads walks the mutexes: its holder takes the
 * pair's next mutex and sleeps 20 ms holding it while its waiter waits for
 * it, then both move PAIRS mutexes on.  Every update of a watch sees about
 * PAIRS mutexes waited on, so within LOCKS / PAIRS updates the session
 * remembers all of them and copies their words in every later stop.
 * Prints "ready PID", then "progress N" (pairs' rounds) for each line on
 * stdin; ends at EOF.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdbool.h>
#include <string.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t **locks;
static long nlocks, npairs;
static unsigned long rounds;

struct pair {
	long id;
	pthread_barrier_t step;	/* holder has the lock / both done */
	long at;
};

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };
	nanosleep(&ts, NULL);
}

static void *holder(void *arg)
{
	struct pair *p = arg;
	for (long k = 0;; k++) {
		p->at = (p->id + k * npairs) % nlocks;
		pthread_mutex_lock(locks[p->at]);
		pthread_barrier_wait(&p->step);
		sleep_ms(20);
		pthread_mutex_unlock(locks[p->at]);
		pthread_barrier_wait(&p->step);
		__atomic_add_fetch(&rounds, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

static void *waiter(void *arg)
{
	struct pair *p = arg;
	for (;;) {
		pthread_barrier_wait(&p->step);
		pthread_mutex_lock(locks[p->at]);
		pthread_mutex_unlock(locks[p->at]);
		pthread_barrier_wait(&p->step);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	nlocks = argc > 1 ? atol(argv[1]) : 1000;
	npairs = argc > 2 ? atol(argv[2]) : 100;
	bool spread = argc > 3 && !strcmp(argv[3], "spread");
	if (nlocks < 1 || npairs < 1 || npairs > nlocks)
		return 2;
	setvbuf(stdout, NULL, _IOLBF, 0);
	locks = calloc((size_t)nlocks, sizeof *locks);
	pthread_mutex_t *array = calloc((size_t)nlocks, sizeof *array);
	for (long i = 0; i < nlocks; i++) {
		locks[i] = spread ? aligned_alloc(4096, 4096) : &array[i];
		pthread_mutex_init(locks[i], NULL);
	}
	pthread_attr_t a;
	pthread_attr_init(&a);
	pthread_attr_setstacksize(&a, 64 * 1024);
	for (long i = 0; i < npairs; i++) {
		struct pair *p = calloc(1, sizeof *p);
		pthread_t t;
		p->id = i;
		pthread_barrier_init(&p->step, NULL, 2);
		if (pthread_create(&t, &a, holder, p) || pthread_create(&t, &a, waiter, p))
			return 1;
	}
	printf("ready %d\n", (int)getpid());
	char buf[256];
	ssize_t got;
	while ((got = read(0, buf, sizeof buf)) > 0)
		for (ssize_t i = 0; i < got; i++)
			if (buf[i] == '\n')
				printf("progress %lu\n", __atomic_load_n(&rounds, __ATOMIC_RELAXED));
	return 0;
}
