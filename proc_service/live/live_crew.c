/*
 * live_crew.c: the tracer threads of one all-stop capture.
 *
 * Only the thread that seized a task may make ptrace requests on it
 * (the kernel checks the tracer, not its process), but nothing keeps
 * several threads of ours from each seizing a share of the tasks.  So a
 * capture of a large process is run by a crew: the thread that called
 * psvc_stop() (member 0) and up to one helper per CPU more, each the
 * tracer of the tasks whose index i has i % n == its number.  The stop,
 * the register reads and the detach of a share run on every core at once
 * (the target is stopped: its cores are free); memory, which any thread
 * may read, is split among them too.  The caller hands the crew one job
 * at a time and gets control back when every member has finished it: the
 * end of the stop job is the barrier that keeps "every task stopped
 * before the first read", the end of the read jobs the one that keeps
 * "every read done before the first task is let go".
 *
 * A helper lives for one capture: it is started before the first task is
 * seized and joined once every task is let go.  When a tracer thread
 * exits, the kernel detaches whatever it still traces (a task that never
 * stopped in time), so nothing a helper seized outlives the capture, and
 * if tinspect dies every tracer goes with it: nothing is ever left
 * stopped (no SIGSTOP is sent: PTRACE_SEIZE + PTRACE_INTERRUPT only).
 * Follow mode keeps one tracer: the kernel attaches a new thread to the
 * tracer of the thread that cloned it, and its events go to that tracer.
 *
 * Helpers block every signal but the capture's wake signal, and each has
 * its own wake timer (live_timer.c's is the caller's): a waitpid() on a
 * task that will not stop is interrupted as the caller's is, so that the
 * stop timeout and --max-freeze hold in every member.
 */
#include "live.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* Below this many tasks per member, a member costs more in handoffs and
 * thread start than it saves. */
#define CREW_MIN_TASKS 192

struct member {
	struct psvc_crew *c;
	unsigned me;
	pthread_t th;
	timer_t timer;
	bool have_timer;
};

struct psvc_crew {
	struct psvc_target *t;
	unsigned n;			/* members, the caller included */
	struct member m[PSVC_CREW_MAX];
	pthread_mutex_t mu;
	pthread_cond_t go, done;
	unsigned gen;			/* jobs handed out so far */
	unsigned pending;		/* helpers still at the current job */
	psvc_crew_fn fn;
	void *arg;
	bool wake;			/* arm the wake timers for this job */
	bool quit;
	int wake_signal;
	uint64_t wake_period_ns;
};

static void crew_free(struct psvc_crew *c);

unsigned psvc_crew_want(struct psvc_target *t, unsigned asked)
{
	struct psvc_live *L = psvc_live(t);
	/* following: one tracer receives every event; stragglers of an
	 * earlier capture belong to the caller's thread */
	if (t->follow || L->nstragglers)
		return 1;
	unsigned n = asked;
	if (!n) {
		cpu_set_t cpus;
		int ncpu = sched_getaffinity(0, sizeof cpus, &cpus) == 0 ? CPU_COUNT(&cpus) : 1;
		n = ncpu > 0 ? (unsigned)ncpu : 1;
		size_t by_tasks = t->ntasks / CREW_MIN_TASKS;
		if (by_tasks < n)
			n = by_tasks ? (unsigned)by_tasks : 1;
	}
	if (n > PSVC_CREW_MAX)
		n = PSVC_CREW_MAX;
	if (n > t->ntasks)
		n = t->ntasks ? (unsigned)t->ntasks : 1;
	return n;
}

static void arm(struct member *m, uint64_t period)
{
	struct itimerspec its = { 0 };
	its.it_value.tv_sec = its.it_interval.tv_sec = (time_t)(period / 1000000000u);
	its.it_value.tv_nsec = its.it_interval.tv_nsec = (long)(period % 1000000000u);
	timer_settime(m->timer, 0, &its, NULL);
}

static void *member_main(void *arg)
{
	struct member *m = arg;
	struct psvc_crew *c = m->c;
	if (c->wake_signal) {
		struct sigevent sev = { 0 };
		sev.sigev_notify = SIGEV_THREAD_ID;
		sev.sigev_signo = c->wake_signal;
		sev._sigev_un._tid = (pid_t)syscall(SYS_gettid);
		m->have_timer = timer_create(CLOCK_MONOTONIC, &sev, &m->timer) == 0;
	}
	unsigned seen = 0;
	pthread_mutex_lock(&c->mu);
	for (;;) {
		while (c->gen == seen && !c->quit)
			pthread_cond_wait(&c->go, &c->mu);
		if (c->quit)
			break;
		seen = c->gen;
		psvc_crew_fn fn = c->fn;
		void *job = c->arg;
		bool wake = c->wake && m->have_timer;
		pthread_mutex_unlock(&c->mu);
		if (wake)
			arm(m, c->wake_period_ns);
		fn(c->t, m->me, job);
		if (wake)
			arm(m, 0);
		pthread_mutex_lock(&c->mu);
		if (--c->pending == 0)
			pthread_cond_signal(&c->done);
	}
	pthread_mutex_unlock(&c->mu);
	if (m->have_timer)
		timer_delete(m->timer);
	return NULL;
}

void psvc_crew_begin(struct psvc_target *t, unsigned n, int wake_signal,
		     uint64_t wake_period_ns)
{
	struct psvc_live *L = psvc_live(t);
	if (n < 2 || L->crew)
		return;
	struct psvc_crew *c = calloc(1, sizeof *c);
	if (!c)
		return;
	c->t = t;
	c->wake_signal = wake_signal;
	c->wake_period_ns = wake_period_ns;
	pthread_mutex_init(&c->mu, NULL);
	pthread_cond_init(&c->go, NULL);
	pthread_cond_init(&c->done, NULL);
	/* the helpers take no signal but the wake signal */
	sigset_t all, old;
	sigfillset(&all);
	if (wake_signal)
		sigdelset(&all, wake_signal);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	c->n = 1;
	for (unsigned i = 1; i < n; i++) {
		struct member *m = &c->m[i];
		m->c = c;
		m->me = i;
		if (pthread_create(&m->th, NULL, member_main, m) != 0)
			break;	/* fewer members: the shares follow c->n */
		c->n++;
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (c->n < 2) {
		crew_free(c);
		return;
	}
	L->crew = c;
}

unsigned psvc_crew_size(const struct psvc_target *t)
{
	const struct psvc_crew *c = psvc_live(t)->crew;
	return c ? c->n : 1;
}

void psvc_crew_run(struct psvc_target *t, psvc_crew_fn fn, void *arg, bool wake)
{
	struct psvc_crew *c = psvc_live(t)->crew;
	if (!c) {
		fn(t, 0, arg);
		return;
	}
	pthread_mutex_lock(&c->mu);
	c->fn = fn;
	c->arg = arg;
	c->wake = wake;
	c->pending = c->n - 1;
	c->gen++;
	pthread_cond_broadcast(&c->go);
	pthread_mutex_unlock(&c->mu);
	fn(t, 0, arg);
	pthread_mutex_lock(&c->mu);
	while (c->pending)
		pthread_cond_wait(&c->done, &c->mu);
	pthread_mutex_unlock(&c->mu);
}

/* Join the helpers of c and free it. */
static void crew_free(struct psvc_crew *c)
{
	pthread_mutex_lock(&c->mu);
	c->quit = true;
	pthread_cond_broadcast(&c->go);
	pthread_mutex_unlock(&c->mu);
	for (unsigned i = 1; i < c->n; i++)
		pthread_join(c->m[i].th, NULL);
	pthread_cond_destroy(&c->go);
	pthread_cond_destroy(&c->done);
	pthread_mutex_destroy(&c->mu);
	free(c);
}

void psvc_crew_end(struct psvc_target *t)
{
	struct psvc_live *L = psvc_live(t);
	if (!L->crew)
		return;
	crew_free(L->crew);
	L->crew = NULL;
}
