/*
 * tdbpick.c: a libthread_db that fits the target's glibc.
 *
 * libthread_db only serves the glibc it was built with: td_ta_new compares
 * the target's __nptl_version with its own (TD_VERSION), and before glibc
 * 2.34 the symbols it looks for had other names (nptl_version, in
 * libpthread), which the system's 2.36 library reports as TD_NOLIBTHREAD
 * (docs/GLIBC.md §2).  A container with another distribution's glibc, or a
 * program run with its own ld.so, can be served, as gdb does, by the
 * libthread_db.so.1 beside the target's libc (or libpthread), opened in
 * the target's mount namespace through /proc/PID/root and dlopen'ed
 * RTLD_LOCAL; it binds to the ps_* callbacks tinspect exports.
 *
 * That is code from the target's file system running in tinspect, usually
 * as root.  Who owns the file proves nothing: without user namespaces a
 * container image's files are root's too.  So, like gdb's auto-load
 * safe-path, it is loaded only when asked: with --target-thread-db
 * (opts.target_thread_db), or when the file is under a directory listed in
 * TINSPECT_THREAD_DB_SAFE_PATH (opts.thread_db_safe_path) as tinspect
 * itself reaches it, compared by inode (under_safe_path).  Never with an
 * explicit --thread-db.  When nothing fits, the snapshot says so in a
 * warning that names the option, and threads are listed from /proc
 * alone.
 */
#include "dbs_int.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <gnu/libc-version.h>
#include <sys/stat.h>

/* The session's warning becomes msg (dbs_format()'s; NULL, out of memory:
 * the warning stays). */
static void warn(struct dbs_session *s, char *msg)
{
	if (!msg)
		return;
	free(s->tdb_warning);
	s->tdb_warning = msg;
}

/* Is the library at path the one already loaded? */
static bool same_as_loaded(struct dbs_session *s, const struct stat *st)
{
	Dl_info info;
	struct stat mine;
	if (!s->lib.td_ta_new ||
	    !dladdr(*(void **)&s->lib.td_ta_new, &info) || !info.dli_fname)
		return false;
	return stat(info.dli_fname, &mine) == 0 && mine.st_dev == st->st_dev &&
	       mine.st_ino == st->st_ino;
}

/* Each directory of the safe path, as tinspect reaches it: f(dir's stat)
 * until it says true. */
static bool any_safe_dir(const char *list, bool (*f)(const struct stat *, void *),
			 void *arg)
{
	for (const char *p = list; p && *p;) {
		const char *end = strchr(p, ':');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		char dir[PATH_MAX];
		struct stat ds;
		if (len && len < sizeof dir && p[0] == '/') {
			memcpy(dir, p, len);
			dir[len] = '\0';
			if (stat(dir, &ds) == 0 && S_ISDIR(ds.st_mode) && f(&ds, arg))
				return true;
		}
		p += len;
		if (*p == ':')
			p++;
	}
	return false;
}

/* Is the directory (device, inode) of *ds directory dfd or one above it?
 * The walk goes up by "..", which never follows a symlink, to the root
 * of dfd's mount namespace. */
static bool holds_dir(const struct stat *ds, void *arg)
{
	int fd = openat(*(const int *)arg, ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
	bool found = false;
	for (int depth = 0; fd >= 0 && depth < 256 && !found; depth++) {
		struct stat cur, up;
		int pfd = openat(fd, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (fstat(fd, &cur) != 0) {
			if (pfd >= 0)
				close(pfd);
			break;
		}
		found = cur.st_dev == ds->st_dev && cur.st_ino == ds->st_ino;
		bool top = pfd < 0 || fstat(pfd, &up) != 0 ||
			   (up.st_dev == cur.st_dev && up.st_ino == cur.st_ino);
		close(fd);
		fd = top ? -1 : pfd;
		if (top && pfd >= 0)
			close(pfd);
	}
	if (fd >= 0)
		close(fd);
	return found;
}

/*
 * Is the library, named "libthread_db.so.1" in the open directory dfd (a
 * directory of the target's mount namespace, opened through
 * /proc/PID/root), under a directory of the safe path?  Decided by
 * device and inode, not by path: the kernel's path of a file of another
 * mount namespace need not be a path of ours (tinspect chrooted, the
 * target in a namespace of its own), and a path of ours that reads the
 * same may be another file.  The name must be the file opened (st)
 * itself, or a symlink to another name of the same directory: a symlink
 * elsewhere may lead out of it.
 */
static bool under_safe_path(const struct dbs_session *s, int dfd,
			    const struct stat *st)
{
	const char *list = s->opts.thread_db_safe_path;
	if (!list || !list[0])
		return false;
	/* the file itself, or a symlink to a name of the same directory
	 * (glibc before 2.34 installs libthread_db.so.1 ->
	 * libthread_db-1.0.so) */
	char name[NAME_MAX + 1] = "libthread_db.so.1";
	struct stat ls;
	if (fstatat(dfd, name, &ls, AT_SYMLINK_NOFOLLOW) != 0)
		return false;
	if (S_ISLNK(ls.st_mode)) {
		ssize_t n = readlinkat(dfd, "libthread_db.so.1", name, sizeof name - 1);
		if (n <= 0 || (size_t)n >= sizeof name - 1)
			return false;
		name[n] = '\0';
		if (strchr(name, '/') || !strcmp(name, ".") || !strcmp(name, "..") ||
		    fstatat(dfd, name, &ls, AT_SYMLINK_NOFOLLOW) != 0)
			return false;
	}
	if (!S_ISREG(ls.st_mode) || ls.st_dev != st->st_dev || ls.st_ino != st->st_ino)
		return false;
	return any_safe_dir(list, holds_dir, &dfd);
}

/* Try the libthread_db.so.1 in directory dir (a path in the target's
 * mount namespace).  0: the session now uses it; -ENOENT: none there (or
 * it is ours); another error: it is there but does not serve, or must not
 * be loaded. */
static int try_dir(struct dbs_session *s, const char *dir, char *why,
		   size_t whylen)
{
	char root[PATH_MAX], dpath[PATH_MAX];
	if (psvc_root_dir(s->t, root, sizeof root) ||
	    snprintf(dpath, sizeof dpath, "%s%s", root, dir) >= (int)sizeof dpath)
		return -ENAMETOOLONG;
	/* Everything is checked on descriptors and the library is loaded
	 * from the very descriptor checked: the target's user may own the
	 * path, and must not be able to swap the file between the check and
	 * the load (it would run as root in tinspect). */
	/* Both opened by a worker, within a bound (fileworker.c): the
	 * target's root can put a mount that never answers there.  The file
	 * is a regular one, opened without blocking: it can put a FIFO there
	 * too, and a check of its owner must not hang (regfile.c). */
	struct psvc_fileinfo di, fi;
	char fpath[PATH_MAX + 32];
	int dfd = psvc_dir_open(s->t, dpath, &di);
	if (dfd < 0)
		return -ENOENT;
	snprintf(fpath, sizeof fpath, "%s/libthread_db.so.1", dpath);
	int fd = psvc_file_open(s->t, fpath, &fi);
	struct stat st = fi.st;
	if (fd == -ENXIO || (fd >= 0 && (!psvc_fs_local(di.fs_magic) ||
					 !psvc_fs_local(fi.fs_magic)))) {
		if (fd >= 0)
			close(fd);
		close(dfd);
		snprintf(why, whylen, "%.1024s%s is %s; not loaded", dir,
			 "/libthread_db.so.1", fd == -ENXIO ? "not a regular file" :
			 "on a file system that is not a local one (its checks "
			 "could block)");
		return -EPERM;
	}
	if (fd < 0) {
		close(dfd);
		return -ENOENT;
	}
	/* the directory's checks below read it in place: a local file
	 * system, as checked */
	bool safe = under_safe_path(s, dfd, &st);
	close(dfd);
	if (same_as_loaded(s, &st)) {
		close(fd);
		return -ENOENT;
	}
	if (!S_ISREG(st.st_mode) || (st.st_mode & 022)) {
		snprintf(why, whylen, "%.1024s%s is writable by others than its owner; "
			 "not loaded", dir, "/libthread_db.so.1");
		close(fd);
		return -EPERM;
	}
	if (!s->opts.target_thread_db && !safe) {
		snprintf(why, whylen, "loading the target's own %.1024s%s (code from "
			 "its file system) needs --target-thread-db, or its "
			 "directory in TINSPECT_THREAD_DB_SAFE_PATH", dir,
			 "/libthread_db.so.1");
		close(fd);
		return -EPERM;
	}
	char fdpath[64];
	snprintf(fdpath, sizeof fdpath, "/proc/self/fd/%d", fd);
	struct tdb_lib lib;
	char *detail = NULL;
	int lerr = dbs_tdb_load(fdpath, &lib, &detail);
	close(fd);	/* loaded, or not: the mapping needs no descriptor */
	if (lerr) {
		snprintf(why, whylen, "%.1024s%s could not be loaded: %s", dir,
			 "/libthread_db.so.1", detail ? detail : "?");
		free(detail);
		return -ENOEXEC;
	}
	free(lib.path);
	/* what the report names: the path as the target sees it */
	lib.path = dbs_format("%s/libthread_db.so.1", dir);
	td_thragent_t *ta = NULL;
	psvc_tdb_budget(s->t, TDB_READ_BUDGET);
	td_err_e e = lib.td_ta_new(psvc_prochandle(s->t), &ta);
	if (e == TD_NOLIBTHREAD) {
		/* the target's own library says so: not threaded (yet),
		 * nothing to warn about */
		dbs_tdb_unload(&lib);
		return -ENOENT;
	}
	if (e != TD_OK) {
		snprintf(why, whylen, "%.1024s%s does not serve it either: %s", dir,
			 "/libthread_db.so.1", dbs_tdb_strerror(e));
		dbs_tdb_unload(&lib);
		return -ENOEXEC;
	}
	dbs_tdb_unload(&s->lib);
	s->lib = lib;
	s->lib_origin = DBS_TDB_FROM_TARGET;
	s->ta = ta;
	return 0;
}

int dbs_tdb_pick_target_lib(struct dbs_session *s, td_err_e first_err)
{
	free(s->tdb_warning);
	s->tdb_warning = NULL;
	if (s->opts.thread_db_path || !s->lib_loaded)
		return -ENOENT;
	/* the directories of libc and (before 2.34) libpthread */
	char dirs[2][PATH_MAX];
	size_t ndirs = 0;
	for (size_t i = 0; i < psvc_nmodules(s->t) && ndirs < 2; i++) {
		struct psvc_module *m = psvc_module_at(s->t, i);
		const char *base = m->path ? strrchr(m->path, '/') : NULL;
		if (!base || m->path[0] != '/')
			continue;
		if (!(m->flags & PSVC_MOD_LIBC) && strncmp(base, "/libpthread", 11))
			continue;
		size_t len = (size_t)(base - m->path);
		if (len >= PATH_MAX)
			continue;
		if (ndirs && !strncmp(dirs[0], m->path, len) && !dirs[0][len])
			continue;
		memcpy(dirs[ndirs], m->path, len);
		dirs[ndirs][len] = '\0';
		ndirs++;
	}
	if (!ndirs)
		return -ENOENT;	/* no glibc: nothing to pick from */
	char why[PATH_MAX + 200] = "";
	int err = -ENOENT;
	for (size_t i = 0; i < ndirs && err; i++) {
		err = try_dir(s, dirs[i], why, sizeof why);
		if (err == -ENOENT)
			continue;
		if (err)
			break;
	}
	if (err == 0) {
		warn(s, dbs_format("the system's libthread_db does not serve "
				   "this glibc (%s); using the target's own %s",
				   dbs_tdb_strerror(first_err), s->lib.path));
		return 0;
	}
	if (err == -ENOENT && first_err != TD_VERSION)
		return err;	/* the same glibc: just not threaded (yet) */
	warn(s, dbs_format("the system's libthread_db does not serve the "
			   "target's glibc %s%s(%s), and %s; threads are listed "
			   "from /proc only (locks are still analysed)",
			   s->glibc_version[0] ? s->glibc_version : "",
			   s->glibc_version[0] ? " " : "",
			   dbs_tdb_strerror(first_err),
			   why[0] ? why : "there is no libthread_db.so.1 beside its libc"));
	return err;
}

/* major.minor of a version string ("2.36" of "2.36.1"). */
static void major_minor(const char *v, char *buf, size_t len)
{
	size_t o = 0;
	unsigned dots = 0;
	for (; v[o] && o + 1 < len; o++) {
		if (v[o] == '.' && ++dots == 2)
			break;
		buf[o] = v[o];
	}
	buf[o] = '\0';
}

bool dbs_tdb_serves_other_glibc(const struct dbs_session *s)
{
	/* only the system's library is known to be of our glibc (Debian's
	 * libc6 ships both); a given or the target's own: no claim */
	if (!s->glibc_version[0] || s->opts.thread_db_path ||
	    s->lib_origin == DBS_TDB_FROM_TARGET)
		return false;
	/* the target has a thread library: it names its nptl version, or
	 * its glibc merged libpthread into libc (2.34), or libpthread.so.0
	 * is mapped (a banner alone would not tell a 2.31 program that is
	 * not threaded) */
	bool threaded = s->glibc_version_src &&
			strcmp(s->glibc_version_src, "libc banner") != 0;
	unsigned maj = 0, min = 0;
	if (sscanf(s->glibc_version, "%u.%u", &maj, &min) == 2 &&
	    (maj > 2 || (maj == 2 && min >= 34)))
		threaded = true;
	for (size_t i = 0; !threaded && i < psvc_nmodules(s->t); i++) {
		const struct psvc_module *m = psvc_module_at(s->t, i);
		const char *base = m->path ? strrchr(m->path, '/') : NULL;
		if (base && !strncmp(base, "/libpthread.so", 14))
			threaded = true;
	}
	char ours[16];
	major_minor(gnu_get_libc_version(), ours, sizeof ours);
	return threaded && strcmp(ours, s->glibc_version) != 0;
}
