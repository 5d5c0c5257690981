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

/* One run through /proc/PID/mem: what it gives, up to the first page that
 * cannot be read. */
static void run_proc_mem(struct psvc_target *t, struct psvc_run *r)
{
	struct psvc_live *L = psvc_live(t);
	r->done = 0;
	if (open_proc_mem(t))
		return;
	while (r->done < r->len) {
		t->read_syscalls++;
		ssize_t got = pread(L->mem_fd, (char *)r->buf + r->done,
				    r->len - r->done, (off_t)(r->addr + r->done));
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0) {
			if (got < 0 && errno == EIO)
				note_hazard(t, r->addr + r->done);
			return;
		}
		r->done += (size_t)got;
	}
}

/* process_vm_readv of the runs idx[0..n) (at most IOV_MAX), in as few
 * calls as their readable prefixes allow.  false if the syscall is
 * refused here (EPERM, ENOSYS: the caller goes on with /proc/PID/mem). */
static bool runs_vm_readv(struct psvc_target *t, struct psvc_run *runs,
			  const size_t *idx, size_t n)
{
	struct psvc_live *L = psvc_live(t);
	struct iovec liov[IOV_MAX], riov[IOV_MAX];
	for (size_t k = 0; k < n; k++) {
		struct psvc_run *r = &runs[idx[k]];
		liov[k] = (struct iovec){ r->buf, r->len };
		riov[k] = (struct iovec){ (void *)(uintptr_t)r->addr, r->len };
	}
	/* On a partial transfer (an unreadable run), keep what was read of
	 * that run and go on with the next. */
	size_t done = 0;
	while (done < n) {
		t->read_syscalls++;
		ssize_t got = process_vm_readv(L->mm_tid, liov + done, n - done,
					       riov + done, n - done, 0);
		if (got < 0 && (errno == EPERM || errno == ENOSYS))
			return false;
		if (got < 0 && errno != EFAULT && errno != ENOMEM)
			return true;	/* gone: leave to misses */
		size_t k = done;
		size_t left = got > 0 ? (size_t)got : 0;
		while (k < n && left >= liov[k].iov_len) {
			left -= liov[k].iov_len;
			runs[idx[k]].done = runs[idx[k]].len;
			k++;
		}
		/* run k stopped at an unreadable block: what came before it
		 * is good (a stack copy up to there) */
		if (k < n)
			runs[idx[k]].done = left;
		done = k + 1;	/* run k failed (or all done) */
	}
	return true;
}

void psvc_live_read_runs(struct psvc_target *t, struct psvc_run *runs, size_t n)
{
	struct psvc_live *L = psvc_live(t);
	size_t idx[IOV_MAX];
	for (size_t base = 0; base < n; base += IOV_MAX) {
		struct psvc_run *r = runs + base;
		size_t niov = n - base < IOV_MAX ? n - base : IOV_MAX;
		/* the runs a fault could make wait: /proc/PID/mem, below */
		size_t nv = 0;
		for (size_t k = 0; k < niov; k++) {
			r[k].done = 0;
			if (!L->use_proc_mem &&
			    !psvc_live_read_may_wait(t, r[k].addr, r[k].len))
				idx[nv++] = k;
		}
		if (nv && !runs_vm_readv(t, r, idx, nv)) {
			/* refused here: every run through /proc/PID/mem */
			L->use_proc_mem = true;
			for (size_t k = 0; k < nv; k++)
				r[idx[k]].done = 0;
		}
		/* /proc/PID/mem: one run at a time; a short read stops at an
		 * unreadable page, what follows it is left to the misses */
		for (size_t k = 0; k < niov; k++)
			if (L->use_proc_mem ||
			    psvc_live_read_may_wait(t, r[k].addr, r[k].len))
				run_proc_mem(t, &r[k]);
	}
}
