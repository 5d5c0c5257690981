/*
 * live_timer.c: the one timer that ends tinspect's blocking waits: a
 * signal to the calling thread, whose handler does nothing but make
 * waitpid() return EINTR (the caller installs it without SA_RESTART).
 * While stopped it fires periodically, so that a task that does not stop
 * (D state) cannot hold the deadlines off (live_stop.c); while following
 * it fires once, at the next update (follow.c).  One timer per target,
 * created on first use for the calling thread.
 */
#include "live.h"

#include <signal.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

void psvc_wake_timer_set(struct psvc_target *t, int sig, uint64_t value_ns,
		    uint64_t interval_ns, bool absolute)
{
	struct psvc_live *L = psvc_live(t);
	if (!sig)
		return;
	pid_t me = (pid_t)syscall(SYS_gettid);
	if (L->have_wake_timer && L->wake_tid != me) {
		/* a capture in another thread than the last one */
		timer_delete(L->wake_timer);
		L->have_wake_timer = false;
	}
	if (!L->have_wake_timer) {
		struct sigevent sev = { 0 };
		sev.sigev_notify = SIGEV_THREAD_ID;
		sev.sigev_signo = sig;
		sev._sigev_un._tid = me;
		if (timer_create(CLOCK_MONOTONIC, &sev, &L->wake_timer))
			return;
		L->have_wake_timer = true;
		L->wake_tid = me;
	}
	struct itimerspec its = { 0 };
	its.it_value.tv_sec = (time_t)(value_ns / 1000000000u);
	its.it_value.tv_nsec = (long)(value_ns % 1000000000u);
	its.it_interval.tv_sec = (time_t)(interval_ns / 1000000000u);
	its.it_interval.tv_nsec = (long)(interval_ns % 1000000000u);
	timer_settime(L->wake_timer, absolute ? TIMER_ABSTIME : 0, &its, NULL);
}

void psvc_wake_timer_disarm(struct psvc_target *t)
{
	struct psvc_live *L = psvc_live(t);
	if (!L->have_wake_timer)
		return;
	struct itimerspec its = { 0 };
	timer_settime(L->wake_timer, 0, &its, NULL);
}

void psvc_wake_timer_delete(struct psvc_target *t)
{
	struct psvc_live *L = psvc_live(t);
	if (L->have_wake_timer)
		timer_delete(L->wake_timer);
	L->have_wake_timer = false;
}
