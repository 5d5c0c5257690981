/*
 * waitage.c: how long a blocked thread has been in its wait, as the
 * snapshot's renderings show it: "waiting_since" and "waiting_seconds" in
 * the JSON document, " [mutex, 12 minutes]" after a thread's name in the
 * text.  The library says since when (tinspect_thread_waiting_since_ns():
 * the session saw the same wait at earlier updates of a watch); in a
 * one-shot capture it is the capture itself.
 */
#include "common.h"
#include "jwriter.h"

void json_waiting(struct jw *w, const tinspect_snapshot *snap,
		  const tinspect_thread *th)
{
	int64_t since = tinspect_thread_waiting_since_ns(th);
	if (since < 0)
		return;
	char t[64];
	agent_iso_time_ns(since, t, sizeof t);
	int64_t now = agent_captured_ns(snap);
	jw_kstr(w, "waiting_since", t);
	jw_key(w, "waiting_seconds");
	jw_real(w, now > since ? (double)(now - since) / 1e9 : 0.0);
}

/* "12 seconds", "3 minutes", as Go prints a goroutine's wait */
static void put_age(FILE *out, double s)
{
	if (s < 120)
		fprintf(out, "%.0f second%s", s, (long)(s + 0.5) == 1 ? "" : "s");
	else
		fprintf(out, "%.0f minutes", s / 60);
}

void agent_put_wait_age(FILE *out, const tinspect_thread *th)
{
	int64_t since = tinspect_thread_waiting_since_ns(th);
	int64_t now = agent_captured_ns(tinspect_thread_snapshot(th));
	/* only a wait an earlier update saw: "0 seconds" on every blocked
	 * thread of a one-shot capture says nothing */
	if (since < 0 || since >= now)
		return;
	const tinspect_wait *wt = tinspect_thread_wait(th);
	struct tinspect_syscall sc;
	const char *what = NULL;
	if (wt)
		what = tinspect_lock_kind_name(tinspect_wait_kind(wt));
	else if (tinspect_thread_syscall(th, &sc, sizeof sc) == 0)
		what = sc.name;
	fprintf(out, " [%s, ", what ? what : "waiting");
	put_age(out, (double)(now - since) / 1e9);
	fputc(']', out);
}
