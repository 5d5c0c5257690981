/*
 * live_uffd.c: the target's memory that a read could wait on: ranges
 * registered with userfaultfd.
 *
 * A page of such a range that is not present is filled by whoever serves
 * the userfaultfd: a thread of the target (QEMU's post-copy migration,
 * CRIU's lazy pages, a garbage collector), another process, or nobody.
 * process_vm_readv faults it in like the target would: the fault is queued
 * to the server and the reader waits in handle_userfault(), killably only.
 * While tinspect holds every thread stopped, a server inside the target
 * can never answer, and tinspect would hold the target stopped for ever;
 * while the target runs, the read makes the server fill the page: an
 * effect on the target that tinspect must not have.
 *
 * /proc/PID/mem reads through the kernel's access_remote_vm(), whose
 * faults may not be retried: handle_userfault() refuses such a fault at
 * once (SIGBUS inside the kernel, a short read or EIO to us) without
 * queuing anything to the server.  So every read that touches a
 * registered range goes through /proc/PID/mem (live_mem.c): present
 * pages are read, a missing one ends the read, and nobody waits.
 *
 * The ranges are the mappings whose smaps VmFlags carry "um" (missing
 * pages), "ui" (minor faults) or "uw" (write-protect; reads do not fault
 * there, but the range is treated alike), read afresh for every capture
 * that stops the target, before its first task is seized: at the scan
 * (while its readers read the tasks), or at the stop.  smaps costs (at
 * 10 000 threads, 14 MB of text and some 50 ms of CPU), and a
 * nonblocking capture, which reads everything through /proc/PID/mem,
 * needs the ranges only to say why a read failed: it reads smaps then,
 * once, and a watch whose last capture was nonblocking does not read it
 * at the scan.  If smaps cannot be read, every read goes through
 * /proc/PID/mem.  While the target runs (a nonblocking
 * capture, what is read before a stop) every read goes through
 * /proc/PID/mem: that costs nothing measurable (the same CPU time for a
 * nonblocking capture of 1000 threads) and holds for a range registered
 * after the scan too.  During a stop, where one process_vm_readv for 1024
 * runs keeps the freeze short, such a late range is not known: the
 * embedder's watchdog (tinspect's agent/guard.c) ends a capture that stays
 * stopped past its limit all the same.
 */
#include "live.h"

#include "array.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SMAPS_BUF (64u * 1024)	/* a line is at most a path and a bit */

static bool is_hex(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}

/* "start-end perms ..." -> start, end; false for any other line. */
static bool parse_header(const char *s, size_t len, uint64_t *start,
			 uint64_t *end)
{
	uint64_t v[2] = { 0, 0 };
	size_t i = 0;
	for (int k = 0; k < 2; k++) {
		size_t digits = 0;
		for (; i < len && is_hex(s[i]) && digits < 17; i++, digits++)
			v[k] = v[k] << 4 | (uint64_t)(s[i] <= '9' ? s[i] - '0'
								 : s[i] - 'a' + 10);
		if (digits == 0 || digits > 16 || i >= len ||
		    s[i] != (k == 0 ? '-' : ' '))
			return false;
		i++;
	}
	*start = v[0];
	*end = v[1];
	return v[0] < v[1];
}

/* The userfaultfd modes a "VmFlags:" line names (PSVC_UFFD_*), 0 if none. */
static unsigned parse_vmflags(const char *s, size_t len)
{
	static const char tag[] = "VmFlags:";
	if (len < sizeof tag - 1 || memcmp(s, tag, sizeof tag - 1))
		return 0;
	unsigned modes = 0;
	for (size_t i = sizeof tag - 1; i + 1 < len; i++) {
		if (s[i] != 'u' || s[i - 1] != ' ' ||
		    (i + 2 < len && s[i + 2] != ' ' && s[i + 2] != '\n'))
			continue;
		if (s[i + 1] == 'm')
			modes |= PSVC_UFFD_MISSING;
		else if (s[i + 1] == 'i')
			modes |= PSVC_UFFD_MINOR;
		else if (s[i + 1] == 'w')
			modes |= PSVC_UFFD_WP;
	}
	return modes;
}

static int add_range(struct psvc_live *L, uint64_t start, uint64_t end,
		     unsigned modes)
{
	if (L->nuffd && L->uffd[L->nuffd - 1].end == start &&
	    L->uffd[L->nuffd - 1].modes == modes) {
		L->uffd[L->nuffd - 1].end = end;	/* one range, split VMAs */
		return 0;
	}
	if (array_grow(&L->uffd, &L->uffd_cap, L->nuffd + 1, sizeof *L->uffd, 8))
		return -ENOMEM;
	L->uffd[L->nuffd++] = (struct psvc_uffd_range){ start, end, modes };
	return 0;
}

/* Parse the complete lines of buf[0, len); returns how many bytes were
 * consumed (the rest is an incomplete line).  *skip: the buffer was full
 * without a newline, drop up to the next one. */
static size_t parse_lines(struct psvc_live *L, const char *buf, size_t len,
			  uint64_t *cur_start, uint64_t *cur_end, bool *skip,
			  int *err)
{
	size_t pos = 0;
	while (pos < len) {
		const char *nl = memchr(buf + pos, '\n', len - pos);
		if (!nl)
			break;
		size_t n = (size_t)(nl - (buf + pos));
		const char *s = buf + pos;
		pos += n + 1;
		if (*skip) {
			*skip = false;
			continue;
		}
		uint64_t a, b;
		unsigned modes;
		if (parse_header(s, n, &a, &b)) {
			*cur_start = a;
			*cur_end = b;
		} else if ((modes = parse_vmflags(s, n)) && *cur_end > *cur_start) {
			int e = add_range(L, *cur_start, *cur_end, modes);
			if (e)
				*err = e;
			*cur_start = *cur_end = 0;	/* one VmFlags line each */
		}
	}
	return pos;
}

int psvc_live_uffd_refresh(struct psvc_target *t)
{
	struct psvc_live *L = psvc_live(t);
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/smaps", (int)L->mm_tid);
	L->nuffd = 0;
	L->uffd_known = false;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? -ESRCH : -errno;
	char *buf = malloc(SMAPS_BUF);
	if (!buf) {
		close(fd);
		return -ENOMEM;
	}
	size_t have = 0;
	uint64_t cur_start = 0, cur_end = 0;
	bool skip = false;
	int err = 0;
	for (;;) {
		ssize_t n = read(fd, buf + have, SMAPS_BUF - have);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			err = -errno;
			break;
		}
		if (n == 0)
			break;
		have += (size_t)n;
		size_t used = parse_lines(L, buf, have, &cur_start, &cur_end,
					  &skip, &err);
		if (used == 0 && have == SMAPS_BUF) {
			skip = true;	/* an absurd line: not ours to parse */
			used = have;
		}
		memmove(buf, buf + used, have - used);
		have -= used;
	}
	free(buf);
	close(fd);
	/* smaps lists the mappings in address order; keep the search sound
	 * even if it did not */
	for (size_t i = 1; !err && i < L->nuffd; i++)
		if (L->uffd[i].start < L->uffd[i - 1].end)
			err = -EPROTO;
	if (err) {
		L->nuffd = 0;
		return err;
	}
	L->uffd_known = true;
	return 0;
}

/* Range e ends at or below the address *key. */
static bool range_ends_by(const void *e, const void *key)
{
	return ((const struct psvc_uffd_range *)e)->end <= *(const uint64_t *)key;
}

static const struct psvc_uffd_range *uffd_find(struct psvc_live *L, uint64_t addr,
					       uint64_t len)
{
	if (len == 0)
		return NULL;
	uint64_t last = addr + len - 1 < addr ? UINT64_MAX : addr + len - 1;
	/* the first range that ends above addr */
	size_t lo = array_partition(L->uffd, L->nuffd, sizeof *L->uffd,
				    range_ends_by, &addr);
	if (lo < L->nuffd && L->uffd[lo].start <= last)
		return &L->uffd[lo];
	return NULL;
}

/* The ranges are known: read for this capture (now, if not yet). */
static bool ranges_known(struct psvc_target *t)
{
	struct psvc_live *L = psvc_live(t);
	if (!L->uffd_tried) {
		L->uffd_tried = true;
		psvc_live_uffd_refresh(t);
	}
	return L->uffd_known;
}

void psvc_live_uffd_forget(struct psvc_target *t)
{
	struct psvc_live *L = psvc_live(t);
	L->uffd_tried = L->uffd_known = false;
	L->nuffd = 0;
}

void psvc_live_uffd_ensure(struct psvc_target *t)
{
	ranges_known(t);
}

const struct psvc_uffd_range *psvc_live_uffd_find(struct psvc_target *t,
						   uint64_t addr, uint64_t len)
{
	if (!ranges_known(t))
		return NULL;
	return uffd_find(psvc_live(t), addr, len);
}

bool psvc_live_read_may_wait(struct psvc_target *t, uint64_t addr, uint64_t len)
{
	/* the target runs (a nonblocking capture, the reads before a stop):
	 * no freeze to keep short, so every read goes the way that cannot
	 * wait, also on a range registered since the scan */
	if (!t->stopped)
		return true;
	if (!ranges_known(t))
		return true;	/* unknown: assume it may */
	return uffd_find(psvc_live(t), addr, len) != NULL;
}

enum psvc_uffd_scope psvc_live_uffd_scope(struct psvc_target *t)
{
	if (!t->stopped || !ranges_known(t))
		return PSVC_UFFD_ALL;
	return psvc_live(t)->nuffd ? PSVC_UFFD_SOME : PSVC_UFFD_NONE;
}

const char *psvc_live_mem_hazard(struct psvc_target *t, uint64_t addr,
				 uint64_t len)
{
	const struct psvc_uffd_range *r = psvc_live_uffd_find(t, addr, len);
	if (!r)
		return NULL;
	if (r->modes & (PSVC_UFFD_MISSING | PSVC_UFFD_MINOR))
		return "in memory registered with userfaultfd, a page was not "
		       "present: not waited for (whoever serves the fault may "
		       "be a thread that is stopped, or nobody)";
	return "in memory registered with userfaultfd (write-protect), a "
	       "page could not be read";
}
