/*
 * live_mem.c: reading a live process's memory (the live backend's read and
 * read_runs).  process_vm_readv first: one syscall for a whole batch of
 * runs.  Where the kernel refuses it (EPERM or ENOSYS on some hardened
 * kernels, or forced with psvc_open_opts.force_proc_mem), /proc/PID/mem,
 * which follows other rules, one pread per run.  Memory a read could wait
 * on (registered with userfaultfd, live_uffd.c) is always read through
 * /proc/PID/mem, which never waits for a fault to be served.  Every
 * syscall is counted (psvc_read_syscalls, for the benchmark).  Caching is
 * mem.c's.
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

int psvc_live_open_mem(struct psvc_target *t)
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

/* A read through /proc/PID/mem of memory a fault would have made wait
 * stopped at addr: counted (psvc_hazard_reads). */
static void note_hazard(struct psvc_target *t, uint64_t addr)
{
	if (!psvc_live_uffd_find(t, addr, 1))
		return;
	if (!t->hazard_reads++)
		t->hazard_first = addr;
}

/* [addr, addr + len) through /proc/PID/mem: 0, or -EFAULT at the first
 * unreadable page (a short read), -ESRCH once the process is gone. */
static int read_proc_mem(struct psvc_target *t, uint64_t addr, void *buf,
			 size_t len)
{
	struct psvc_live *L = psvc_live(t);
	int err = psvc_live_open_mem(t);
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
			if (errno != EIO)
				return -errno;
			note_hazard(t, addr + done);
			return -EFAULT;
		}
		if (n == 0)
			return kill(t->pid, 0) == 0 ? -EFAULT : -ESRCH;
		done += (size_t)n;
	}
	return 0;
}

int psvc_live_read(struct psvc_target *t, uint64_t addr, void *buf, size_t len)
{
	struct psvc_live *L = psvc_live(t);
	if (len == 0)
		return 0;
	if (!L->use_proc_mem && !psvc_live_read_may_wait(t, addr, len)) {
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
	return read_proc_mem(t, addr, buf, len);
}

/* Where the dropped parts of runs (psvc_run.segs, buf NULL) are read to:
 * a part longer is read here in pieces. */
#define SINK_BYTES 4096

/* One run through /proc/PID/mem, into its buffer or its parts: what it
 * gives, up to the first page that cannot be read. */
static void run_proc_mem(struct psvc_target *t, struct psvc_run *r,
			 unsigned char *sink)
{
	struct psvc_live *L = psvc_live(t);
	r->done = 0;
	if (psvc_live_open_mem(t))
		return;
	struct psvc_seg whole = { r->buf, r->len };
	const struct psvc_seg *segs = r->segs ? r->segs : &whole;
	size_t nsegs = r->segs ? r->nsegs : 1;
	for (size_t sg = 0; sg < nsegs; sg++) {
		size_t off = 0;
		while (off < segs[sg].len) {
			size_t len = segs[sg].len - off;
			unsigned char *to = segs[sg].buf ? (unsigned char *)segs[sg].buf + off
							 : sink;
			if (!segs[sg].buf && len > SINK_BYTES)
				len = SINK_BYTES;
			t->read_syscalls++;
			ssize_t got = pread(L->mem_fd, to, len, (off_t)(r->addr + r->done));
			if (got < 0 && errno == EINTR)
				continue;
			if (got <= 0) {
				if (got < 0 && errno == EIO)
					note_hazard(t, r->addr + r->done);
				return;	/* what follows is left to the misses */
			}
			r->done += (size_t)got;
			off += (size_t)got;
		}
	}
}

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

/* One process_vm_readv batch: the runs idx[0..nr), their local iovecs
 * from liov[first[k]] on (nl in all), in as few calls as their readable
 * prefixes allow.  false if the syscall is refused here (EPERM, ENOSYS). */
static bool batch_vm_readv(pid_t tid, struct psvc_run *runs, const size_t *idx,
			   size_t nr, struct iovec *liov, const size_t *first,
			   size_t nl, struct iovec *riov, uint64_t *syscalls)
{
	/* On a partial transfer (an unreadable run), keep what was read of
	 * that run and go on with the next. */
	size_t done = 0;
	while (done < nr) {
		(*syscalls)++;
		ssize_t got = process_vm_readv(tid, liov + first[done], nl - first[done],
					       riov + done, nr - done, 0);
		if (got < 0 && (errno == EPERM || errno == ENOSYS))
			return false;
		if (got < 0 && errno != EFAULT && errno != ENOMEM)
			return true;	/* gone: leave to misses */
		size_t k = done;
		size_t left = got > 0 ? (size_t)got : 0;
		while (k < nr && left >= riov[k].iov_len) {
			left -= riov[k].iov_len;
			runs[idx[k]].done = runs[idx[k]].len;
			k++;
		}
		/* run k stopped at an unreadable block: what came before it
		 * is good (a stack copy up to there) */
		if (k < nr)
			runs[idx[k]].done = left;
		done = k + 1;	/* run k failed (or all done) */
	}
	return true;
}

/* process_vm_readv over runs[0..n), as many at a time as IOV_MAX allows
 * on both sides; *syscalls counts the calls.  With check, the runs a
 * fault could make wait are left out (done 0) for /proc/PID/mem.  false
 * if the kernel refuses the call itself (EPERM, ENOSYS: /proc/PID/mem is
 * the way then). */
static bool vm_read_runs(struct psvc_target *t, struct psvc_run *runs, size_t n,
			 bool check, uint64_t *syscalls)
{
	pid_t tid = psvc_live(t)->mm_tid;
	struct iovec liov[IOV_MAX], riov[IOV_MAX];
	size_t idx[IOV_MAX], first[IOV_MAX];
	unsigned char sink[SINK_BYTES];
	size_t i = 0;
	while (i < n) {
		size_t nr = 0, nl = 0;
		for (; i < n && nr < IOV_MAX; i++) {
			struct psvc_run *r = &runs[i];
			r->done = 0;
			if (check && psvc_live_read_may_wait(t, r->addr, r->len))
				continue;
			size_t k = local_iovs(r, liov + nl, IOV_MAX - nl, sink);
			if (!k && nr)
				break;	/* the next batch */
			if (!k)
				continue;	/* more parts than IOV_MAX: left out */
			idx[nr] = i;
			first[nr] = nl;
			riov[nr] = (struct iovec){ (void *)(uintptr_t)r->addr, r->len };
			nl += k;
			nr++;
		}
		if (nr && !batch_vm_readv(tid, runs, idx, nr, liov, first, nl, riov, syscalls))
			return false;
	}
	return true;
}

/* Below this many runs per member, splitting a read costs more than it
 * saves. */
#define SPLIT_MIN_RUNS 64

struct read_split {
	struct psvc_run *runs;
	size_t n;
	bool check;
	uint64_t syscalls[PSVC_CREW_MAX];
	bool refused[PSVC_CREW_MAX];
};

static void read_share(struct psvc_target *t, unsigned me, void *arg)
{
	struct read_split *j = arg;
	unsigned m = psvc_crew_size(t);
	size_t lo = j->n * me / m, hi = j->n * (me + 1) / m;
	j->refused[me] = !vm_read_runs(t, j->runs + lo, hi - lo, j->check,
				       &j->syscalls[me]);
}

/* process_vm_readv of the runs, by the crew of a capture if there is one
 * (a slice each, on every core); false if refused here. */
static bool vm_read_all(struct psvc_target *t, struct psvc_run *runs, size_t n,
			bool check)
{
	if (psvc_crew_size(t) > 1 && n >= SPLIT_MIN_RUNS * psvc_crew_size(t)) {
		struct read_split j = { .runs = runs, .n = n, .check = check };
		psvc_crew_run(t, read_share, &j, false);
		bool refused = false;
		for (unsigned i = 0; i < PSVC_CREW_MAX; i++) {
			t->read_syscalls += j.syscalls[i];
			refused |= j.refused[i];
		}
		return !refused;
	}
	return vm_read_runs(t, runs, n, check, &t->read_syscalls);
}

void psvc_live_read_runs(struct psvc_target *t, struct psvc_run *runs, size_t n)
{
	struct psvc_live *L = psvc_live(t);
	/* asked here, on the calling thread, before any member asks about a
	 * run: the first answer may read smaps */
	enum psvc_uffd_scope scope = psvc_live_uffd_scope(t);
	if (!L->use_proc_mem && scope != PSVC_UFFD_ALL &&
	    !vm_read_all(t, runs, n, scope == PSVC_UFFD_SOME))
		L->use_proc_mem = true;	/* refused here: every run below */
	/* /proc/PID/mem: the runs a fault could make wait, or all; a short
	 * read stops at an unreadable page, what follows it is left to the
	 * misses */
	unsigned char sink[SINK_BYTES];
	for (size_t k = 0; k < n; k++)
		if (L->use_proc_mem || scope == PSVC_UFFD_ALL ||
		    (scope == PSVC_UFFD_SOME &&
		     psvc_live_read_may_wait(t, runs[k].addr, runs[k].len)))
			run_proc_mem(t, &runs[k], sink);
}
