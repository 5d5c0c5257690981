/*
 * live_mem.c: reading a live process's memory (the live backend's read and
 * read_runs).  process_vm_readv first: one syscall for a whole batch of
 * runs.  Where the kernel refuses it (EPERM or ENOSYS on some hardened
 * kernels, or forced with psvc_open_opts.force_proc_mem), /proc/PID/mem,
 * which follows other rules, one pread per run.  Every syscall is
 * counted (psvc_read_syscalls, for the benchmark).  Caching is mem.c's.
 */
#include "live.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <sys/uio.h>
#include <unistd.h>

#ifndef IOV_MAX
#define IOV_MAX 1024
#endif

static int open_proc_mem(struct psvc_target *t)
{
	struct psvc_live *L = psvc_live(t);
	if (L->mem_fd >= 0)
		return 0;
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/mem", (int)L->mm_tid);
	L->mem_fd = open(path, O_RDONLY | O_CLOEXEC);
	if (L->mem_fd < 0)
		return errno == ENOENT ? -ESRCH : -errno;
	return 0;
}

int psvc_live_read(struct psvc_target *t, uint64_t addr, void *buf, size_t len)
{
	struct psvc_live *L = psvc_live(t);
	if (len == 0)
		return 0;
	if (!L->use_proc_mem) {
		struct iovec l = { buf, len };
		struct iovec r = { (void *)(uintptr_t)addr, len };
		t->read_syscalls++;
		ssize_t n = process_vm_readv(L->mm_tid, &l, 1, &r, 1, 0);
		if (n == (ssize_t)len)
			return 0;
		if (n >= 0)
			return -EFAULT;
		if (errno == EFAULT || errno == ESRCH || errno == ENOMEM)
			return -errno;
		/* EPERM / ENOSYS: the syscall is refused here, not the
		 * address; /proc/PID/mem follows other rules. */
		L->use_proc_mem = true;
	}
	int err = open_proc_mem(t);
	if (err)
		return err;
	size_t done = 0;
	while (done < len) {
		t->read_syscalls++;
		ssize_t n = pread(L->mem_fd, (char *)buf + done, len - done,
				  (off_t)(addr + done));
		if (n < 0) {
			if (errno == EINTR)
				continue;
			/* EIO: unmapped; ESRCH-like errors once it is gone */
			return errno == EIO ? -EFAULT : -errno;
		}
		if (n == 0)
			return kill(t->pid, 0) == 0 ? -EFAULT : -ESRCH;
		done += (size_t)n;
	}
	return 0;
}

/* process_vm_readv over runs[0..n), IOV_MAX at a time; *syscalls counts
 * the calls.  false if the kernel refuses the call itself (EPERM,
 * ENOSYS: /proc/PID/mem is the way then). */
static bool vm_read_runs(pid_t tid, struct psvc_run *runs, size_t n,
			 uint64_t *syscalls)
{
	struct iovec liov[IOV_MAX], riov[IOV_MAX];
	for (size_t base = 0; base < n; base += IOV_MAX) {
		struct psvc_run *r = runs + base;
		size_t niov = n - base < IOV_MAX ? n - base : IOV_MAX;
		for (size_t k = 0; k < niov; k++) {
			r[k].done = 0;
			liov[k] = (struct iovec){ r[k].buf, r[k].len };
			riov[k] = (struct iovec){ (void *)(uintptr_t)r[k].addr,
						  r[k].len };
		}
		/* On a partial transfer (an unreadable run), keep what was
		 * read of that run and go on with the next. */
		size_t done = 0;
		while (done < niov) {
			(*syscalls)++;
			ssize_t got = process_vm_readv(tid, liov + done,
						       niov - done, riov + done,
						       niov - done, 0);
			if (got < 0 && (errno == EPERM || errno == ENOSYS))
				return false;
			if (got < 0 && errno != EFAULT && errno != ENOMEM)
				break;	/* gone: leave to misses */
			size_t k = done;
			size_t left = got > 0 ? (size_t)got : 0;
			while (k < niov && left >= liov[k].iov_len) {
				left -= liov[k].iov_len;
				r[k].done = r[k].len;
				k++;
			}
			/* run k stopped at an unreadable block: what came
			 * before it is good (a stack copy up to there) */
			if (k < niov)
				r[k].done = left;
			done = k + 1;	/* run k failed (or all done) */
		}
	}
	return true;
}

/* /proc/PID/mem: one pread per run; a short read stops at an unreadable
 * block, what follows it is left to the misses. */
static void proc_mem_runs(struct psvc_target *t, struct psvc_run *runs, size_t n)
{
	struct psvc_live *L = psvc_live(t);
	for (size_t i = 0; i < n; i++) {
		runs[i].done = 0;
		if (open_proc_mem(t))
			return;
		t->read_syscalls++;
		ssize_t got = pread(L->mem_fd, runs[i].buf, runs[i].len,
				    (off_t)runs[i].addr);
		if (got > 0)
			runs[i].done = (size_t)got;
	}
}

/* Below this many runs per member, splitting a read costs more than it
 * saves. */
#define SPLIT_MIN_RUNS 64

struct read_split {
	struct psvc_run *runs;
	size_t n;
	uint64_t syscalls[PSVC_CREW_MAX];
	bool refused[PSVC_CREW_MAX];
};

static void read_share(struct psvc_target *t, unsigned me, void *arg)
{
	struct read_split *j = arg;
	unsigned m = psvc_crew_size(t);
	size_t lo = j->n * me / m, hi = j->n * (me + 1) / m;
	j->refused[me] = !vm_read_runs(psvc_live(t)->mm_tid, j->runs + lo, hi - lo,
				       &j->syscalls[me]);
}

void psvc_live_read_runs(struct psvc_target *t, struct psvc_run *runs, size_t n)
{
	struct psvc_live *L = psvc_live(t);
	if (!L->use_proc_mem && psvc_crew_size(t) > 1 &&
	    n >= SPLIT_MIN_RUNS * psvc_crew_size(t)) {
		/* the crew of a capture: a slice each, on every core */
		struct read_split j = { .runs = runs, .n = n };
		psvc_crew_run(t, read_share, &j, false);
		bool refused = false;
		for (unsigned i = 0; i < PSVC_CREW_MAX; i++) {
			t->read_syscalls += j.syscalls[i];
			refused |= j.refused[i];
		}
		if (!refused)
			return;
		L->use_proc_mem = true;
	} else if (!L->use_proc_mem) {
		if (vm_read_runs(L->mm_tid, runs, n, &t->read_syscalls))
			return;
		/* refused here: /proc/PID/mem, below */
		L->use_proc_mem = true;
	}
	proc_mem_runs(t, runs, n);
}
