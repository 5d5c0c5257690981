/*
 * limit_par.c - the floor probe of ../shared/bench/limit.c, with several
 * tracer threads.
 *
 * limit.c stops, reads and resumes every thread from one tracer thread.
 * Only the thread that seized a tracee may make ptrace requests on it, but
 * nothing keeps several tracer threads from each seizing a share of the
 * tasks: then the stops, the register and stack reads and the detaches run
 * on every core at once (the target is stopped, its cores are free).  This
 * is limit.c's method with K tracers:
 *
 *   0. list /proc/PID/task (before the first seize: the list is the share
 *      plan; limit.c lists as it seizes);
 *   1. each tracer PTRACE_SEIZEs + PTRACE_INTERRUPTs its share (task i goes
 *      to tracer i % K) and waits for each stop with waitpid(tid, __WALL);
 *      a barrier; the coordinator lists /proc/PID/task again, and shares
 *      out any task born meanwhile, until a list finds none new (a stopped
 *      thread creates none): every task is stopped before any is read;
 *   2. each tracer reads its share's registers (PTRACE_GETREGSET);
 *   3. and 4 KiB (-s BYTES) of stack at SP (process_vm_readv, one call per
 *      thread; any thread of ours may read);
 *      a barrier: no task is let go before every read is done;
 *   4. each tracer PTRACE_DETACHes its share.
 *
 * With -S, step 1's first pass seizes first: every tracer PTRACE_SEIZEs its
 * share (a seized task runs on), a barrier, and only then the interrupts
 * and the waits.  The kernel serialises seizing over the process, so this
 * takes the seizures out of the time the first tasks stand stopped (the
 * method tinspect uses); total_ms then starts at the first interrupt and
 * seize_ms says how long the seizing took.
 *
 * Nothing is queued to the target (no SIGSTOP): if this process dies, the
 * kernel detaches every tracee of every tracer thread and the target runs
 * on.  It prints limit.c's figures (total_ms = first seize to last detach,
 * all_stopped_ms = last stop to first detach, and the phases, each from the
 * barrier that starts it to the last tracer done with it) under the name
 * limit_par, with tracers=K.
 *
 * Build:  cc -O2 -Wall -pthread -o limit_par limit_par.c
 * Usage:  limit_par [-v] [-S] [-j K] [-s BYTES] PID   (K default: online CPUs)
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef PTRACE_EVENT_STOP
#define PTRACE_EVENT_STOP 128
#endif
#define MAX_TRACERS 64

struct thr {
	pid_t tid;
	int stopped, gone, sig, regs_ok;
	struct user_regs_struct regs;
	ssize_t stack_bytes;
};

static struct thr *thr;
static int nthr, cap;
static int *idx_of;		/* tid -> index+1 */
static long pid_max;
static pid_t pid;
static size_t nbytes = 4096;
static int ntracers;
static int seize_first;		/* -S */

/* what the coordinator asks for at each barrier */
enum { PASS_SEIZE, PASS_STOP, PASS_READ };
static int pass_kind, pass_from, pass_to;	/* tasks [from, to) to stop */
static int pass_seized;		/* PASS_STOP: [from, to) are seized already */
static pthread_barrier_t go, done;
static uint64_t t_phase_end[MAX_TRACERS][3];	/* stop, regs, stack */

static inline uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + ts.tv_nsec;
}

static long read_pid_max(void)
{
	long v = 4194304;
	FILE *f = fopen("/proc/sys/kernel/pid_max", "r");
	if (f) {
		if (fscanf(f, "%ld", &v) != 1)
			v = 4194304;
		fclose(f);
	}
	return v + 1;
}

/* Add every task of /proc/PID/task not known yet; the count, -1 if the
 * process is gone. */
static int scan(void)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
	DIR *d = opendir(path);
	if (!d)
		return -1;
	struct dirent *de;
	int added = 0;
	while ((de = readdir(d))) {
		if (de->d_name[0] < '0' || de->d_name[0] > '9')
			continue;
		long tid = strtol(de->d_name, NULL, 10);
		if (tid <= 0 || tid >= pid_max || idx_of[tid])
			continue;
		if (nthr == cap) {
			cap = cap ? 2 * cap : 1024;
			thr = realloc(thr, cap * sizeof *thr);
			if (!thr) {
				perror("realloc");
				exit(1);
			}
		}
		memset(&thr[nthr], 0, sizeof thr[nthr]);
		thr[nthr].tid = (pid_t)tid;
		idx_of[tid] = ++nthr;
		added++;
	}
	closedir(d);
	return added;
}

static void note_status(struct thr *t, int st)
{
	if (WIFEXITED(st) || WIFSIGNALED(st)) {
		t->gone = 1;
		return;
	}
	if (!WIFSTOPPED(st) || t->stopped)
		return;
	if ((st >> 16) != PTRACE_EVENT_STOP)
		t->sig = WSTOPSIG(st);	/* signal-delivery-stop: passed on */
	t->stopped = 1;
}

static int seize(struct thr *t)
{
	if (ptrace(PTRACE_SEIZE, t->tid, 0, 0) == 0)
		return 0;
	if (errno != ESRCH)
		fprintf(stderr, "limit_par: seize %d: %s\n", t->tid, strerror(errno));
	t->gone = 1;
	return -1;
}

/* The first task at or after from that tracer me holds (task i is tracer
 * i % ntracers's). */
static int share_first(int me, int from)
{
	return from + ((me - from % ntracers) + ntracers) % ntracers;
}

/* -S: seize [from, to) of this tracer's share, without stopping */
static void seize_share(int me, int from, int to)
{
	int first = share_first(me, from);
	for (int i = first; i < to; i += ntracers)
		seize(&thr[i]);
}

static void stop_share(int me, int from, int to, int seized)
{
	int first = share_first(me, from);
	for (int i = first; i < to; i += ntracers) {
		struct thr *t = &thr[i];
		if (t->gone || (!seized && seize(t) != 0))
			continue;
		if (ptrace(PTRACE_INTERRUPT, t->tid, 0, 0) != 0)
			fprintf(stderr, "limit_par: INTERRUPT %d: %s\n", t->tid,
				strerror(errno));
	}
	for (int i = first; i < to; i += ntracers) {
		struct thr *t = &thr[i];
		while (!t->stopped && !t->gone) {
			int st;
			pid_t w = waitpid(t->tid, &st, __WALL);
			if (w < 0) {
				if (errno == EINTR)
					continue;
				t->gone = 1;	/* ECHILD: vanished */
				break;
			}
			note_status(t, st);
		}
	}
}

static void read_share(int me, char *buf)
{
	for (int i = me; i < nthr; i += ntracers) {
		struct thr *t = &thr[i];
		if (t->gone)
			continue;
		struct iovec iov = { &t->regs, sizeof t->regs };
		if (ptrace(PTRACE_GETREGSET, t->tid, (void *)NT_PRSTATUS, &iov) == 0)
			t->regs_ok = 1;
		else
			fprintf(stderr, "limit_par: GETREGSET %d: %s\n", t->tid,
				strerror(errno));
	}
	t_phase_end[me][1] = mono_ns();
	for (int i = me; i < nthr; i += ntracers) {
		struct thr *t = &thr[i];
		if (t->gone)
			continue;
		struct iovec l = { buf, nbytes };
		struct iovec r = { (void *)t->regs.rsp, nbytes };
		t->stack_bytes = process_vm_readv(pid, &l, 1, &r, 1, 0);
	}
	t_phase_end[me][2] = mono_ns();
}

static void detach_share(int me)
{
	for (int i = me; i < nthr; i += ntracers) {
		struct thr *t = &thr[i];
		if (t->gone)
			continue;
		if (ptrace(PTRACE_DETACH, t->tid, 0, (void *)(long)t->sig) != 0)
			fprintf(stderr, "limit_par: DETACH %d: %s\n", t->tid,
				strerror(errno));
	}
}

/* Tracer `me`: stop passes until told to read, then read, then detach.
 * Tracer 0 is the coordinator (main) and runs this inline. */
static void *tracer(void *arg)
{
	int me = (int)(intptr_t)arg;
	char *buf = malloc(nbytes ? nbytes : 1);
	if (!buf) {
		perror("malloc");
		exit(1);
	}
	for (;;) {
		pthread_barrier_wait(&go);
		if (pass_kind == PASS_READ)
			break;
		if (pass_kind == PASS_SEIZE) {
			seize_share(me, pass_from, pass_to);
		} else {
			stop_share(me, pass_from, pass_to, pass_seized);
			t_phase_end[me][0] = mono_ns();
		}
		pthread_barrier_wait(&done);
	}
	read_share(me, buf);
	pthread_barrier_wait(&done);	/* every read done before any detach */
	detach_share(me);
	free(buf);
	return NULL;
}

static uint64_t latest(int phase)
{
	uint64_t m = 0;
	for (int i = 0; i < ntracers; i++)
		if (t_phase_end[i][phase] > m)
			m = t_phase_end[i][phase];
	return m;
}

int main(int argc, char **argv)
{
	int verbose = 0, c;
	const char *usage = "usage: %s [-v] [-S] [-j TRACERS] [-s BYTES] PID\n";
	ntracers = (int)sysconf(_SC_NPROCESSORS_ONLN);
	while ((c = getopt(argc, argv, "vSj:s:")) != -1) {
		switch (c) {
		case 'v': verbose = 1; break;
		case 'S': seize_first = 1; break;
		case 'j': ntracers = atoi(optarg); break;
		case 's': nbytes = strtoul(optarg, NULL, 0); break;
		default: fprintf(stderr, usage, argv[0]); return 2;
		}
	}
	if (optind != argc - 1) {
		fprintf(stderr, usage, argv[0]);
		return 2;
	}
	if (ntracers < 1)
		ntracers = 1;
	if (ntracers > MAX_TRACERS)
		ntracers = MAX_TRACERS;
	pid = (pid_t)atoi(argv[optind]);
	pid_max = read_pid_max();
	idx_of = calloc(pid_max, sizeof *idx_of);
	if (!idx_of) {
		perror("calloc");
		return 1;
	}
	if (scan() <= 0) {
		fprintf(stderr, "limit_par: no such process %d\n", (int)pid);
		return 1;
	}
	pthread_barrier_init(&go, NULL, ntracers);
	pthread_barrier_init(&done, NULL, ntracers);
	pthread_t th[MAX_TRACERS];
	for (int i = 1; i < ntracers; i++)
		if (pthread_create(&th[i], NULL, tracer, (void *)(intptr_t)i) != 0) {
			perror("pthread_create");
			return 1;
		}

	/* ---- 1. stop everything, in passes ---- */
	char *buf = malloc(nbytes ? nbytes : 1);
	int passes = 0;
	uint64_t t_seize = mono_ns();
	pass_from = 0;
	pass_to = nthr;
	if (seize_first) {
		pass_kind = PASS_SEIZE;
		pthread_barrier_wait(&go);
		seize_share(0, pass_from, pass_to);
		pthread_barrier_wait(&done);
		pass_seized = 1;
	}
	uint64_t t_first = mono_ns();
	pass_kind = PASS_STOP;
	for (;;) {
		passes++;
		pthread_barrier_wait(&go);
		stop_share(0, pass_from, pass_to, pass_seized);
		t_phase_end[0][0] = mono_ns();
		pthread_barrier_wait(&done);
		pass_from = nthr;
		pass_seized = 0;	/* tasks born since: seized as stopped */
		if (scan() <= 0)
			break;
		pass_to = nthr;
	}
	uint64_t t_stopped = latest(0);

	/* ---- 2, 3. registers and stacks, then 4. detach ---- */
	pass_kind = PASS_READ;
	pthread_barrier_wait(&go);
	read_share(0, buf);
	pthread_barrier_wait(&done);
	uint64_t t_regs = latest(1), t_stack = latest(2);
	detach_share(0);
	for (int i = 1; i < ntracers; i++)
		pthread_join(th[i], NULL);
	uint64_t t_last = mono_ns();

	int nregs = 0, ndet = 0, ngone = 0;
	size_t total_bytes = 0;
	for (int i = 0; i < nthr; i++) {
		if (thr[i].gone) {
			ngone++;
			continue;
		}
		ndet++;
		nregs += thr[i].regs_ok;
		if (thr[i].stack_bytes > 0)
			total_bytes += thr[i].stack_bytes;
		if (verbose)
			printf("tid %d rip=%#llx rsp=%#llx stack_bytes=%zd\n",
			       thr[i].tid, (unsigned long long)thr[i].regs.rip,
			       (unsigned long long)thr[i].regs.rsp,
			       thr[i].stack_bytes);
	}
	printf("limit_par pid=%d tracers=%d threads=%d regs=%d detached=%d "
	       "passes=%d stack_bytes=%zu total_ms=%.3f all_stopped_ms=%.3f "
	       "attach_stop_ms=%.3f regs_ms=%.3f stack_ms=%.3f detach_ms=%.3f "
	       "per_thread_us=%.2f seize_ms=%.3f\n",
	       (int)pid, ntracers, nthr, nregs, ndet, passes, total_bytes,
	       (t_last - t_first) / 1e6, (t_stack - t_stopped) / 1e6,
	       (t_stopped - t_first) / 1e6, (t_regs - t_stopped) / 1e6,
	       (t_stack - t_regs) / 1e6, (t_last - t_stack) / 1e6,
	       nthr ? (t_last - t_first) / 1e3 / nthr : 0.0,
	       (t_first - t_seize) / 1e6);
	free(buf);
	return nregs == ndet ? 0 : 1;
}
