/*
 * regfile.c: opening a file whose name came from untrusted input (a path
 * in the target's /proc/PID/maps, a .gnu_debuglink, a debug directory a
 * user can write to) without letting that file block or act on tinspect.
 *
 * A FIFO named by a stripped program's debuglink made tinspect block for
 * ever in open() (a hostile target; libdwfl's own search retries open() on
 * EINTR, so no signal ended it), and opening a device can have side effects
 * (a tape rewinds, a watchdog arms).  So the name is first opened O_PATH,
 * which opens nothing, and only a regular file is then opened for reading,
 * through /proc/self/fd: the very inode that was checked, even if the name
 * is re-pointed meanwhile.  O_NONBLOCK and O_NOCTTY are belts and braces for
 * the fallback when /proc/self is not there.
 */
#include "psvc_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define READ_FLAGS (O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY)

int psvc_open_regular(const char *path, struct stat *ret_st)
{
	return psvc_openat_regular(AT_FDCWD, path, ret_st);
}

int psvc_openat_regular(int dirfd, const char *path, struct stat *ret_st)
{
	struct stat st, st2;
	int pfd = openat(dirfd, path, O_PATH | O_CLOEXEC);
	if (pfd < 0)
		return -errno;
	if (fstat(pfd, &st) != 0) {
		int err = -errno;
		close(pfd);
		return err;
	}
	if (!S_ISREG(st.st_mode)) {
		close(pfd);
		return -ENXIO;
	}
	char self[64];
	snprintf(self, sizeof self, "/proc/self/fd/%d", pfd);
	int fd = open(self, READ_FLAGS);
	if (fd < 0 && errno == ENOENT)
		fd = openat(dirfd, path, READ_FLAGS);	/* no /proc/self */
	int err = fd < 0 ? -errno : 0;
	close(pfd);
	if (err)
		return err;
	if (fstat(fd, &st2) != 0 || !S_ISREG(st2.st_mode) ||
	    st2.st_dev != st.st_dev || st2.st_ino != st.st_ino) {
		close(fd);
		return -ENXIO;
	}
	if (ret_st)
		*ret_st = st2;
	return fd;
}

const char *psvc_open_strerror(int err)
{
	switch (err) {
	case -ENXIO: return "not a regular file";
	case -EMFILE: return "out of file descriptors (EMFILE)";
	case -ENFILE: return "out of file descriptors system-wide (ENFILE)";
	default: return strerror(-err);
	}
}
