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

/* Where the dropped parts of runs (psvc_run.segs, buf NULL) are read to:
 * a part longer is read here in pieces. */
#define SINK_BYTES 4096

/* The local iovecs of run r into liov (at most room): how many, 0 if they
 * do not fit. */
static size_t local_iovs(const struct psvc_run *r, struct iovec *liov, size_t room,
			 unsigned char *sink)
{
	if (!r->segs) {
		if (!room)
			return 0;
		liov[0] = (struct iovec){ r->buf, r->len };
		return 1;
	}
	size_t k = 0;
	for (size_t s = 0; s < r->nsegs; s++) {
		const struct psvc_seg *g = &r->segs[s];
		for (size_t off = 0; off < g->len;) {
			if (k == room)
				return 0;
			size_t len = g->len - off;
			if (!g->buf && len > SINK_BYTES)
				len = SINK_BYTES;
			liov[k++] = (struct iovec){ g->buf ? (unsigned char *)g->buf + off : sink, len };
			off += len;
		}
	}
	return k;
}

/* process_vm_readv over runs[0..n), as many at a time as IOV_MAX allows
 * on both sides; *syscalls counts the calls.  false if the kernel refuses
 * the call itself (EPERM, ENOSYS: /proc/PID/mem is the way then). */
static bool vm_read_runs(pid_t tid, struct psvc_run *runs, size_t n,
			 uint64_t *syscalls)
{
	struct iovec liov[IOV_MAX], riov[IOV_MAX];
	size_t first_liov[IOV_MAX];
	unsigned char sink[SINK_BYTES];
	size_t i = 0;
	while (i < n) {
		/* a batch: runs [i, i + nr) */
		size_t nr = 0, nl = 0;
		while (i + nr < n && nr < IOV_MAX) {
			struct psvc_run *r = &runs[i + nr];
			size_t k = local_iovs(r, liov + nl, IOV_MAX - nl, sink);
			if (!k) {
				if (nr == 0) {	/* more parts than IOV_MAX: skip it */
					r->done = 0;
					i++;
					continue;
				}
				break;
			}
			r->done = 0;
			first_liov[nr] = nl;
			riov[nr] = (struct iovec){ (void *)(uintptr_t)r->addr, r->len };
			nl += k;
			nr++;
		}
		if (nr == 0)
			continue;
		/* On a partial transfer (an unreadable run), keep what was
		 * read of that run and go on with the next. */
		size_t done = 0;
		while (done < nr) {
			(*syscalls)++;
			ssize_t got = process_vm_readv(tid, liov + first_liov[done],
						       nl - first_liov[done], riov + done,
						       nr - done, 0);
			if (got < 0 && (errno == EPERM || errno == ENOSYS))
				return false;
			if (got < 0 && errno != EFAULT && errno != ENOMEM)
				break;	/* gone: leave to misses */
			size_t k = done;
			size_t left = got > 0 ? (size_t)got : 0;
			while (k < nr && left >= riov[k].iov_len) {
				left -= riov[k].iov_len;
				runs[i + k].done = runs[i + k].len;
				k++;
			}
			/* run k stopped at an unreadable block: what came
			 * before it is good (a stack copy up to there) */
			if (k < nr)
				runs[i + k].done = left;
			done = k + 1;	/* run k failed (or all done) */
		}
		i += nr;
	}
	return true;
}

/* /proc/PID/mem: one pread per run; a short read stops at an unreadable
 * block, what follows it is left to the misses. */
static void proc_mem_runs(struct psvc_target *t, struct psvc_run *runs, size_t n)
{
	struct psvc_live *L = psvc_live(t);
	unsigned char sink[SINK_BYTES];
	for (size_t i = 0; i < n; i++) {
		struct psvc_run *r = &runs[i];
		r->done = 0;
		if (open_proc_mem(t))
			return;
		struct psvc_seg whole = { r->buf, r->len };
		const struct psvc_seg *segs = r->segs ? r->segs : &whole;
		size_t nsegs = r->segs ? r->nsegs : 1;
		for (size_t sg = 0; sg < nsegs; sg++) {
			size_t off = 0;
			while (off < segs[sg].len) {
				size_t len = segs[sg].len - off;
				unsigned char *to = segs[sg].buf ? (unsigned char *)segs[sg].buf + off : sink;
				if (!segs[sg].buf && len > sizeof sink)
					len = sizeof sink;
				t->read_syscalls++;
				ssize_t got = pread(L->mem_fd, to, len, (off_t)(r->addr + r->done));
				if (got <= 0)
					goto next;	/* what follows is left to the misses */
				r->done += (size_t)got;
				off += (size_t)got;
			}
		}
next:;
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
