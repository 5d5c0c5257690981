/*
 * follow.c: staying attached between captures (watch --follow-threads), so
 * that every thread creation and exit is seen as it happens.  Part of the
 * live backend (its follow_* ops, which psvc_follow_*() call through
 * backend.h); each does nothing for a target that is not followed.
 *
 * Every task is seized with PTRACE_O_TRACECLONE and left running.  The
 * kernel then attaches each new thread to us and stops it once before it
 * runs a single instruction (PTRACE_EVENT_STOP), and stops its parent at
 * the clone (PTRACE_EVENT_CLONE, the child's TID in the event message).
 * Either stop may be reported first (ptrace(2), "PTRACE_EVENT stops"): a
 * creation is announced once both are in, with the start routine read
 * while the child is still held at its first stop.  An exit is the reaped
 * exit status of the thread (no PTRACE_O_TRACEEXIT: that would stop every
 * exiting thread once more for nothing we need).  PTRACE_O_TRACEEXEC stops
 * a thread that executes a new program once: from then on the module map
 * and libthread_db are the old program's, so no start routine is resolved
 * and the next scan reports the exec (psvc_scan: -ESTALE).
 *
 * What it costs the target: two stops per thread creation (parent and
 * child, a few microseconds each plus a round trip through tinspect) and
 * nothing for threads that neither clone nor exit.  waitpid(-1) costs the
 * kernel a walk over all tracees per event: a clone storm in a process of
 * many thousand threads pays for that.  Between events tinspect sleeps in
 * waitpid(); the target is never polled.
 *
 * A capture while following interrupts the already-seized tasks instead of
 * seizing them (live_stop.c) and resumes them with PTRACE_CONT (or LISTEN for a
 * group-stop) instead of detaching.  psvc_follow_end() detaches everything.
 */
#include "live.h"

#include "array.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef PTRACE_EVENT_STOP
#define PTRACE_EVENT_STOP 128
#endif

/* Per followed TID, in L->followed's value. */
enum {
	F_STARTED = 1u << 0,	/* its first stop was seen (or it existed
				 * when following began) */
	F_ANNOUNCED = 1u << 1,	/* thread_created was sent */
	F_EXITED = 1u << 2,	/* exited before its parent's clone event was
				 * seen: the exit waits for the creation */
	F_OTHER = 1u << 3,	/* another process, let go at its first stop
				 * before its clone event was seen */
};

/* Is tid attached to us already?  Followed, or a clone child the kernel
 * attached whose clone event has not been seen yet (TracerPid says so). */
bool psvc_follow_adopt(struct psvc_target *t, pid_t tid)
{
	struct psvc_live *L = psvc_live(t);
	if (psvc_tidmap_get(&L->followed, tid) >= 0)
		return true;
	struct psvc_taskinfo ti;
	if (psvc_taskinfo_read_at(L->task_dirfd, tid, &ti) != 0 ||
	    ti.tracer_pid != getpid())
		return false;
	psvc_tidmap_put(&L->followed, tid, 0);	/* its first stop is to come */
	return true;
}

static unsigned fstate(const struct psvc_target *t, pid_t tid)
{
	struct psvc_live *L = psvc_live(t);
	long v = psvc_tidmap_get(&L->followed, tid);
	return v < 0 ? 0 : (unsigned)v;
}

static void fset(struct psvc_target *t, pid_t tid, unsigned bits)
{
	struct psvc_live *L = psvc_live(t);
	psvc_tidmap_put(&L->followed, tid, fstate(t, tid) | bits);
}

/* A clone seen: remember the parent until the child's first stop. */
static void note_parent(struct psvc_target *t, pid_t child, pid_t parent)
{
	struct psvc_live *L = psvc_live(t);
	if (array_grow(&L->parents, &L->parents_cap, L->nparents + 1,
		       sizeof *L->parents, 64))
		return;
	L->parents[L->nparents++] = (struct follow_parent){ child, parent };
}

static pid_t take_parent(struct psvc_target *t, pid_t child)
{
	struct psvc_live *L = psvc_live(t);
	for (size_t i = 0; i < L->nparents; i++)
		if (L->parents[i].child == child) {
			pid_t p = L->parents[i].parent;
			L->parents[i] = L->parents[--L->nparents];
			return p;
		}
	return 0;
}

static void queue_event(struct psvc_target *t, const struct psvc_event *ev)
{
	struct psvc_live *L = psvc_live(t);
	if (array_grow(&L->events, &L->events_cap, L->nevents + 1,
		       sizeof *L->events, 64))
		return;	/* an event is lost rather than the target held */
	L->events[L->nevents++] = *ev;
}

/* The thread pointer of a new thread at its first stop, kept until its
 * creation is announced: with it libthread_db can be asked for the start
 * routine later (psvc_note_thread), whatever the task list holds then. */
static uint64_t read_tp(struct psvc_target *t, pid_t tid)
{
	uint64_t regs[ARCH_MAX_GREGS], tp = 0;
	if (psvc_ptrace_regs(t->arch, tid, regs, &tp))
		tp = 0;
	return tp;
}

/*
 * What a new thread is, asked while the kernel holds it at its first stop:
 * later its descriptor may belong to another thread (glibc reuses
 * stacks).  At a first stop seen inside a capture the registers are not
 * read yet: psvc_follow_resolve() asks for those once they are.
 */
static void keep_start(struct psvc_target *t, pid_t tid, uint64_t tp)
{
	struct psvc_live *L = psvc_live(t);
	if (array_grow(&L->starts, &L->starts_cap, L->nstarts + 1,
		       sizeof *L->starts, 64))
		return;
	struct follow_start *f = &L->starts[L->nstarts++];
	*f = (struct follow_start){ .tid = tid, .tp = tp };
	if (tp && t->resolver && !L->exec_traced) {
		f->start = t->resolver(t->resolver_arg, tid, tp);
		f->resolved = true;
	}
}

static struct follow_start take_start(struct psvc_target *t, pid_t tid)
{
	struct psvc_live *L = psvc_live(t);
	for (size_t i = 0; i < L->nstarts; i++)
		if (L->starts[i].tid == tid) {
			struct follow_start f = L->starts[i];
			L->starts[i] = L->starts[--L->nstarts];
			return f;
		}
	return (struct follow_start){ .tid = tid };
}

void psvc_live_follow_resolve(struct psvc_target *t)
{
	struct psvc_live *L = psvc_live(t);
	/* after an exec the resolver reads the old program's view */
	if (!t->follow || !t->resolver || L->exec_traced)
		return;
	for (size_t i = 0; i < L->nstarts; i++) {
		struct follow_start *f = &L->starts[i];
		if (f->resolved)
			continue;
		struct psvc_task *k = psvc_task_by_tid(t, f->tid);
		if (!k || !(k->flags & PSVC_TASK_HAVE_REGS) ||
		    !(k->flags & PSVC_TASK_STOPPED))
			continue;
		f->tp = k->tp;
		f->start = t->resolver(t->resolver_arg, f->tid, f->tp);
		f->resolved = true;
	}
	/* and the creations already announced in this capture */
	for (size_t i = 0; i < L->nevents; i++) {
		struct psvc_event *ev = &L->events[i];
		if (ev->kind != PSVC_EVENT_THREAD_CREATED || ev->start_known)
			continue;
		struct psvc_task *k = psvc_task_by_tid(t, ev->tid);
		if (!k || !(k->flags & PSVC_TASK_HAVE_REGS) ||
		    !(k->flags & PSVC_TASK_STOPPED))
			continue;
		ev->start = t->resolver(t->resolver_arg, ev->tid, k->tp);
		ev->start_known = true;
	}
}

/* Announce the creation of tid if both its stops are in. */
static void maybe_created(struct psvc_target *t, pid_t tid, pid_t parent)
{
	unsigned st = fstate(t, tid);
	if ((st & F_ANNOUNCED) || !(st & F_STARTED) || !parent)
		return;
	fset(t, tid, F_ANNOUNCED);
	struct psvc_event ev = {
		.kind = PSVC_EVENT_THREAD_CREATED,
		.tid = tid,
		.parent = parent,
		.time_ns = psvc_realtime_ns(),
	};
	struct follow_start f = take_start(t, tid);
	ev.start = f.start;
	ev.start_known = f.resolved;
	queue_event(t, &ev);
}

/*
 * Is tid a task of another process?  PTRACE_O_TRACECLONE attaches every
 * child of a clone whose exit signal is not SIGCHLD, also one made without
 * CLONE_THREAD: a new process, which may share the address space.  Its
 * Tgid says; unknown (it is gone) counts as ours.
 */
static bool other_process(const struct psvc_target *t, pid_t tid)
{
	char path[64], buf[2048];
	size_t len;
	snprintf(path, sizeof path, "/proc/%d/status", (int)tid);
	if (psvc_read_file_at(AT_FDCWD, path, buf, sizeof buf - 1, &len))
		return false;
	buf[len] = '\0';
	const char *tg = strstr(buf, "\nTgid:");
	long tgid = tg ? strtol(tg + 6, NULL, 10) : 0;
	return tgid > 0 && tgid != t->pid;
}

/* Such a process, at its first stop: let it go, and forget it once its
 * clone event is in too. */
static void let_go(struct psvc_target *t, pid_t tid)
{
	struct psvc_live *L = psvc_live(t);
	ptrace(PTRACE_DETACH, tid, 0, 0);
	if (take_parent(t, tid))
		psvc_tidmap_del(&L->followed, tid);	/* the clone was seen */
	else
		psvc_tidmap_put(&L->followed, tid, F_OTHER);
}

/* The first stop of a thread the kernel attached for us at its clone. */
static void first_stop(struct psvc_target *t, pid_t tid, bool in_capture)
{
	fset(t, tid, F_STARTED);
	if (!in_capture)
		keep_start(t, tid, read_tp(t, tid));
	else
		keep_start(t, tid, 0);	/* psvc_follow_resolve() fills it */
	pid_t parent = take_parent(t, tid);
	if (parent)
		maybe_created(t, tid, parent);
	else
		note_parent(t, tid, 0);	/* a placeholder: first stop seen */
}

static void seen_clone(struct psvc_target *t, pid_t parent, pid_t child)
{
	struct psvc_live *L = psvc_live(t);
	/* the child may be known already: follow it either way */
	unsigned st = fstate(t, child);
	if (st & F_OTHER) {
		/* a new process, let go already */
		psvc_tidmap_del(&L->followed, child);
		return;
	}
	if (other_process(t, child)) {
		/* a new process: let go at its first stop; the placeholder
		 * tells let_go() that this event was seen */
		note_parent(t, child, parent);
		return;
	}
	if (!(st & F_STARTED)) {
		psvc_tidmap_put(&L->followed, child, st);
		note_parent(t, child, parent);
		return;
	}
	take_parent(t, child);	/* drop the placeholder */
	maybe_created(t, child, parent);
	if (st & F_EXITED) {
		/* it ran and exited before this clone event reached us:
		 * now that its creation is told, tell its exit */
		for (size_t i = 0; i < L->nexits; i++) {
			if (L->exits[i].tid != child)
				continue;
			struct psvc_event ev = L->exits[i];
			L->exits[i] = L->exits[--L->nexits];
			ev.time_ns = psvc_realtime_ns();
			queue_event(t, &ev);
			break;
		}
		psvc_tidmap_del(&L->followed, child);
	}
}

/*
 * A wait status of a followed task, outside a capture or inside one.
 * Returns true if the task is now stopped and must be resumed by the
 * caller (in a capture: it counts as stopped for the snapshot).
 */
bool psvc_follow_status(struct psvc_target *t, pid_t tid, int st, bool in_capture,
		   int *ret_sig, bool *ret_group_stop)
{
	struct psvc_live *L = psvc_live(t);
	*ret_sig = 0;
	*ret_group_stop = false;
	if (WIFEXITED(st) || WIFSIGNALED(st)) {
		struct psvc_event ev = {
			.kind = PSVC_EVENT_THREAD_EXITED,
			.tid = tid,
			.status = st,
			.time_ns = psvc_realtime_ns(),
		};
		unsigned fs = fstate(t, tid);
		if ((fs & F_STARTED) && !(fs & F_ANNOUNCED)) {
			/* a new thread whose parent's clone event is still
			 * to come (waitpid(-1) reports in no set order):
			 * keep its exit until its creation is told */
			if (array_grow(&L->exits, &L->exits_cap, L->nexits + 1,
				       sizeof *L->exits, 16) == 0) {
				L->exits[L->nexits++] = ev;
				fset(t, tid, F_EXITED);
				return false;
			}
		}
		queue_event(t, &ev);
		psvc_tidmap_del(&L->followed, tid);
		take_parent(t, tid);
		take_start(t, tid);
		return false;
	}
	if (!WIFSTOPPED(st))
		return false;
	int event = st >> 16, sig = WSTOPSIG(st);
	if (event == PTRACE_EVENT_EXEC) {
		L->exec_traced = true;
		return true;
	}
	if (event == PTRACE_EVENT_CLONE) {
		unsigned long child = 0;
		if (ptrace(PTRACE_GETEVENTMSG, tid, 0, &child) == 0 && child > 0)
			seen_clone(t, tid, (pid_t)child);
		return true;
	}
	if (event == PTRACE_EVENT_STOP) {
		if (!(fstate(t, tid) & F_STARTED)) {
			if (other_process(t, tid)) {
				let_go(t, tid);
				return false;
			}
			first_stop(t, tid, in_capture);
			return true;
		}
		if (sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN ||
		    sig == SIGTTOU)
			*ret_group_stop = true;
		/* else a leftover interrupt of an earlier capture */
		return true;
	}
	if (event == 0)
		*ret_sig = sig;	/* signal-delivery-stop: hand it back */
	return true;
}

/* Let a stopped followed task go on. */
static void follow_continue(pid_t tid, int sig, bool group_stop)
{
	if (group_stop)
		ptrace(PTRACE_LISTEN, tid, 0, 0);
	else
		ptrace(PTRACE_CONT, tid, 0, (void *)(long)sig);
}

static void follow_teardown(struct psvc_target *t);

static int seize_follow(struct psvc_target *t, pid_t tid, void *arg)
{
	struct psvc_live *L = psvc_live(t);
	unsigned *added = arg;
	if (psvc_tidmap_get(&L->followed, tid) >= 0)
		return 0;
	if (ptrace(PTRACE_SEIZE, tid, 0, (void *)(long)FOLLOW_PTRACE_OPTS) != 0)
		return 0;	/* gone, or someone else's: not followed */
	psvc_tidmap_put(&L->followed, tid, F_STARTED | F_ANNOUNCED);
	(*added)++;
	return 0;
}

int psvc_live_follow_start(struct psvc_target *t)
{
	struct psvc_live *L = psvc_live(t);
	if (t->follow)
		return 0;
	if (t->stopped)
		return -EBUSY;
	t->follow = true;
	hold_update(t, false);
	/* threads created by a task not seized yet are found by the next
	 * listing; those created by a seized one are attached by the kernel */
	for (int pass = 0; pass < 1000; pass++) {
		unsigned added = 0;
		int n = psvc_list_tids(t, seize_follow, &added);
		if (n < 0) {
			follow_teardown(t);
			return n;
		}
		if (!added)
			break;
	}
	if (psvc_tidmap_get(&L->followed, t->pid) < 0 && !L->followed.map.n) {
		follow_teardown(t);
		return -EPERM;
	}
	return 0;
}

static void deliver(struct psvc_target *t, psvc_event_fn fn, void *arg)
{
	struct psvc_live *L = psvc_live(t);
	for (size_t i = 0; i < L->nevents; i++)
		fn(arg, &L->events[i]);
	L->nevents = 0;
}

/* One wait status outside a capture; returns true if it was the leader's
 * exit (the process is gone). */
static bool handle_status(struct psvc_target *t, pid_t w, int st)
{
	int sig;
	bool group;
	if (psvc_follow_status(t, w, st, false, &sig, &group)) {
		follow_continue(w, sig, group);
		return false;
	}
	return w == t->pid && (WIFEXITED(st) || WIFSIGNALED(st));
}

void psvc_live_follow_service(struct psvc_target *t)
{
	if (t->follow && !t->stopped)
		psvc_follow_drain(t);
}

int psvc_follow_drain(struct psvc_target *t)
{
	if (!t->follow)
		return 0;
	for (int i = 0; i < 100000; i++) {
		int st;
		pid_t w = waitpid(-1, &st, __WALL | WNOHANG);
		if (w == 0)
			return 0;
		if (w < 0)
			return errno == EINTR ? 0 : -ESRCH;
		if (handle_status(t, w, st))
			return -ESRCH;
	}
	return 0;
}

int psvc_live_follow_wait(struct psvc_target *t, uint64_t deadline_ns,
			  const volatile sig_atomic_t *cancel, int wake_signal,
			  psvc_event_fn fn, void *arg)
{
	if (!t->follow)
		return -EINVAL;
	deliver(t, fn, arg);	/* what the last capture saw */
	psvc_wake_timer_set(t, wake_signal, deadline_ns, 0, true);
	int ret = 0;
	for (;;) {
		if (cancel && *cancel) {
			ret = -EINTR;
			break;
		}
		if (psvc_now_ns() >= deadline_ns)
			break;
		int st;
		pid_t w = waitpid(-1, &st, __WALL);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			ret = -ESRCH;	/* ECHILD: nothing traced any more */
			break;
		}
		bool gone = handle_status(t, w, st);
		deliver(t, fn, arg);
		if (gone) {
			ret = -ESRCH;	/* the leader is reaped last */
			break;
		}
	}
	psvc_wake_timer_disarm(t);
	return ret;
}

size_t psvc_live_followed(const struct psvc_target *t)
{
	struct psvc_live *L = psvc_live(t);
	return t->follow ? L->followed.map.n : 0;
}

/* Interrupt, wait for the stop (with a deadline: a thread in D state does
 * not stop, and it is left to the kernel, which detaches it when tinspect
 * exits), detach. */
static int detach_one(struct psvc_target *t, pid_t tid, void *arg)
{
	struct psvc_live *L = psvc_live(t);
	uint64_t deadline = *(uint64_t *)arg;
	if (psvc_tidmap_get(&L->followed, tid) < 0) {
		/* a child the kernel attached whose clone we never saw */
		struct psvc_taskinfo ti;
		if (psvc_taskinfo_read_at(L->task_dirfd, tid, &ti) != 0 ||
		    ti.tracer_pid != getpid())
			return 0;
	}
	if (ptrace(PTRACE_INTERRUPT, tid, 0, 0) != 0)
		return 0;
	int st, sig = 0;
	for (;;) {
		pid_t w = waitpid(tid, &st, __WALL | WNOHANG);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 || (w > 0 && (WIFEXITED(st) || WIFSIGNALED(st))))
			return 0;
		if (w > 0) {
			if ((st >> 16) == 0)
				sig = WSTOPSIG(st);
			break;
		}
		if (psvc_now_ns() > deadline)
			return 0;
		struct timespec ts = { 0, 50000 };
		nanosleep(&ts, NULL);
	}
	ptrace(PTRACE_DETACH, tid, 0, (void *)(long)sig);
	return 0;
}

static void follow_teardown(struct psvc_target *t)
{
	struct psvc_live *L = psvc_live(t);
	if (!t->follow)
		return;
	/* every task of ours, followed or attached behind our back; one
	 * second in all for those that do not stop */
	uint64_t deadline = psvc_now_ns() + 1000000000ull;
	psvc_list_tids(t, detach_one, &deadline);
	t->follow = false;
	hold_update(t, false);
	psvc_tidmap_clear(&L->followed);
	array_drop(&L->parents, &L->nparents, &L->parents_cap);
	array_drop(&L->events, &L->nevents, &L->events_cap);
	array_drop(&L->exits, &L->nexits, &L->exits_cap);
	array_drop(&L->starts, &L->nstarts, &L->starts_cap);
}

void psvc_live_follow_end(struct psvc_target *t)
{
	if (!t->follow)
		return;
	if (t->stopped)
		psvc_resume(t);
	follow_teardown(t);
}
