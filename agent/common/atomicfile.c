/*
 * atomicfile.c: replacing a file so that its readers never see a part of
 * it.  node_exporter's textfile collector reads the file whenever it is
 * scraped, at any moment of an update, and the next run of tinspect reads
 * the lock-order graph's file whenever it starts: each must find the old
 * file or the new one.  rename(2) within one file system gives exactly
 * that, so the new bytes go to a temporary file in the same directory
 * first, reach the disk (fsync: after a crash the name holds old or new
 * bytes, not an empty file), and only then take the name.
 *
 * The temporary name starts with '.' and does not end in ".prom": the
 * collector reads only *.prom files, so it never reads a temporary one.
 */
#include "common.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* "DIR/.BASE.XXXXXX" for path "DIR/BASE"; NULL when out of memory. */
static char *temp_template(const char *path, char **ret_dir)
{
	char *d = strdup(path), *b = strdup(path);
	char *t = NULL;
	if (d && b) {
		const char *dir = dirname(d), *base = basename(b);
		if (asprintf(&t, "%s/.%s.XXXXXX", dir, base) < 0)
			t = NULL;
		else if (ret_dir && !(*ret_dir = strdup(dir))) {
			free(t);
			t = NULL;
		}
	}
	free(d);
	free(b);
	return t;
}

/* Create the temporary file for path (*ret_tmp: its name, malloc'ed, NULL
 * when out of memory; *ret_dir: path's directory, if asked): its
 * descriptor, or -errno. */
static int temp_create(const char *path, char **ret_tmp, char **ret_dir)
{
	*ret_tmp = temp_template(path, ret_dir);
	if (!*ret_tmp)
		return -ENOMEM;
	int fd = mkostemp(*ret_tmp, O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

static int write_all(int fd, const void *data, size_t len)
{
	const char *p = data;
	while (len) {
		ssize_t w = write(fd, p, len);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += w;
		len -= (size_t)w;
	}
	return 0;
}

int atomicfile_replace(const char *path, const void *data, size_t len,
		       unsigned mode)
{
	char *dir = NULL, *tmp;
	int err = 0;
	int fd = temp_create(path, &tmp, &dir);
	if (fd < 0) {
		err = fd;
		goto out;
	}
	/* mkstemp makes it 0600: the collector may run as another user */
	if (fchmod(fd, mode) < 0 || (err = write_all(fd, data, len)) ||
	    fsync(fd) < 0) {
		err = err ? err : -errno;
		close(fd);
		unlink(tmp);
		goto out;
	}
	if (close(fd) < 0 || rename(tmp, path) < 0) {
		err = -errno;
		unlink(tmp);
		goto out;
	}
	/* the rename itself reaches the disk with the directory */
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd >= 0) {
		fsync(dfd);
		close(dfd);
	}
out:
	free(tmp);
	free(dir);
	return err;
}

int atomicfile_check(const char *path)
{
	struct stat st;
	if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
		return -EISDIR;
	char *tmp;
	int fd = temp_create(path, &tmp, NULL);
	if (fd >= 0) {
		close(fd);
		unlink(tmp);
	}
	free(tmp);
	return fd < 0 ? fd : 0;
}
