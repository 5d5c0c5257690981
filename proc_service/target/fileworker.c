/*
 * fileworker.c: files of the target's file system (and of names the
 * target chose: debuglinks, NT_FILE paths) are opened by a helper
 * process, and tinspect waits for it within a bound, never for ever.
 *
 * A FUSE mount nobody serves, put by the target's owner over its
 * /usr/lib/debug in its own mount namespace, made the build-id lookup
 * through /proc/PID/root wait in the kernel (fuse_get_req) for ever: a
 * wait no handled signal interrupts, so neither SIGTERM nor SIGINT ended
 * tinspect, and with --follow-threads every thread the target created
 * meanwhile stayed in ptrace-stop.  Nothing tinspect does can make such a
 * lookup return.  And a file of such a mount must not even be held open
 * by tinspect: closing it (at the latest when tinspect exits) asks its
 * server to flush, and a server that stopped answering keeps the closing
 * process in the kernel for good.  So:
 *
 *  - one helper process per target (forked twice, so that it is nobody's
 *    child here: a followed target's waitpid(-1) must not meet it) looks
 *    the files up, runs the checks of regfile.c, and passes back over a
 *    socket a descriptor of the file itself if it is on a local file
 *    system (the list below), else of a copy of it in memory (a memfd; at
 *    most COPY_MAX): tinspect never holds a descriptor of a file system
 *    that may not answer, and reading what it holds cannot block;
 *  - tinspect waits in slices: it gives up when the caller's cancel flag
 *    is raised (a signal), or when the helper has made no progress for
 *    PSVC_FILE_STALL_NS while asleep in the kernel (time spent runnable,
 *    waiting for a CPU on a loaded machine, does not count: the helper's
 *    schedstat says how long it ran or waited to; and an answer that came
 *    while tinspect itself waited for a CPU is taken, not given up on:
 *    the socket is looked at again once the helper is seen asleep); while it
 *    waits it keeps a followed target's new threads moving (the session
 *    hooks psvc_follow_service in: psvc_files_on_wait);
 *  - a helper given up on is let go: its socket is closed, and its
 *    watchdog thread ends it (exit_group() kills a wait for a request its
 *    server has not taken; one it has taken keeps the helper until the
 *    file system answers, but not tinspect); the same happens when
 *    tinspect ends or dies in the middle of a wait; the next file gets a new
 *    helper, and the file tree the stuck one was in (the target's,
 *    through /proc/PID/..., or tinspect's own) is not read any more for
 *    the life of the target, with a warning: one stuck lookup costs one
 *    stall, not one per file;
 *  - files are never opened while a task of the target is held (stopped
 *    for a capture, or a new thread at its first stop while followed):
 *    the open is refused (-EAGAIN) and tried again later by the caller;
 *    and a task that stops after the resume (a straggler of the capture
 *    leaving its uninterruptible sleep, where the interrupt left pending
 *    stops it) is let go before a file is asked for and while it is
 *    awaited, not when tinspect is done.
 * The helper ends when its socket does: at psvc_close(), or when
 * tinspect exits or dies, at once, even in the middle of a wait on a file
 * system (its watchdog thread ends the process).
 */
#include "psvc_int.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <unistd.h>

#define SLICE_MS 10		/* how often the waiter looks up */
#define COPY_MAX (256ull << 20)
#define COPY_CHUNK (1u << 20)

/* Local file systems, whose files are used where they are: the block
 * layer bounds their reads.  Magic numbers <linux/magic.h> lacks. */
#define ZFS_MAGIC_ 0x2fc12fc1u
#define BCACHEFS_MAGIC_ 0xca451a4eu
#define NTFS_MAGIC_ 0x5346544eu
#define JFS_MAGIC_ 0x3153464au
#define UBIFS_MAGIC_ 0x24051905u
#define HFSPLUS_MAGIC_ 0x482bu
static const unsigned long local_fs[] = {
	EXT4_SUPER_MAGIC, XFS_SUPER_MAGIC, BTRFS_SUPER_MAGIC, TMPFS_MAGIC,
	RAMFS_MAGIC, OVERLAYFS_SUPER_MAGIC, SQUASHFS_MAGIC, EROFS_SUPER_MAGIC_V1,
	F2FS_SUPER_MAGIC, ISOFS_SUPER_MAGIC, MSDOS_SUPER_MAGIC, EXFAT_SUPER_MAGIC,
	NILFS_SUPER_MAGIC, JFFS2_SUPER_MAGIC, REISERFS_SUPER_MAGIC, UDF_SUPER_MAGIC,
	CRAMFS_MAGIC, HUGETLBFS_MAGIC, ZFS_MAGIC_, BCACHEFS_MAGIC_, NTFS_MAGIC_,
	JFS_MAGIC_, UBIFS_MAGIC_, HFSPLUS_MAGIC_,
};

bool psvc_fs_local(unsigned long magic)
{
	for (size_t i = 0; i < sizeof local_fs / sizeof *local_fs; i++)
		if (local_fs[i] == (magic & 0xffffffffu))
			return true;
	return false;
}

/* ---- the protocol: one request, progress messages, one answer ------------ */

struct file_req {
	uint32_t dir;		/* a directory, not a regular file */
	char path[4096 + 256];
};

enum { MSG_HELLO, MSG_PROGRESS, MSG_DONE };

struct file_msg {
	uint32_t kind;
	int32_t result;		/* MSG_DONE: a descriptor follows, or -errno */
	int32_t pid;		/* MSG_HELLO: the helper's */
	int32_t watchdog;	/* MSG_HELLO: its watchdog runs (it ends when
				 * its socket does, whatever it waits for) */
	struct psvc_fileinfo info;
};

static int send_msg(int sock, const struct file_msg *m, int fd)
{
	struct iovec iov = { (void *)m, sizeof *m };
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	if (fd >= 0) {
		mh.msg_control = u.buf;
		mh.msg_controllen = sizeof u.buf;
		struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &fd, sizeof fd);
	}
	ssize_t n;
	do
		n = sendmsg(sock, &mh, MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	return n == (ssize_t)sizeof *m ? 0 : -EIO;
}

/* One message; *ret_fd the descriptor it carried (-1 if none).  0, or
 * -EPIPE when the helper is gone. */
static int recv_msg(int sock, struct file_msg *m, int *ret_fd)
{
	struct iovec iov = { m, sizeof *m };
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1,
			     .msg_control = u.buf, .msg_controllen = sizeof u.buf };
	*ret_fd = -1;
	ssize_t n;
	do
		n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
	while (n < 0 && errno == EINTR);
	if (n < 0 && errno == EAGAIN)
		return -EAGAIN;
	for (struct cmsghdr *c = n > 0 ? CMSG_FIRSTHDR(&mh) : NULL; c;
	     c = CMSG_NXTHDR(&mh, c))
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS)
			memcpy(ret_fd, CMSG_DATA(c), sizeof(int));
	if (n != (ssize_t)sizeof *m) {
		if (*ret_fd >= 0)
			close(*ret_fd);
		*ret_fd = -1;
		return -EPIPE;
	}
	return 0;
}

/* ---- the helper ------------------------------------------------------------ */

/* A copy of the file fd in memory (a memfd), or -errno; a progress
 * message after each chunk. */
static int copy_to_memory(int sock, int fd, const struct stat *st)
{
	if ((uint64_t)st->st_size > COPY_MAX)
		return -EFBIG;
	int mfd = memfd_create("tinspect-copy", MFD_CLOEXEC);
	char *buf = mfd >= 0 ? malloc(COPY_CHUNK) : NULL;
	int err = mfd < 0 ? -errno : buf ? 0 : -ENOMEM;
	off_t off = 0;
	struct file_msg pm = { .kind = MSG_PROGRESS };
	while (!err && off < st->st_size) {
		size_t want = (uint64_t)(st->st_size - off) < COPY_CHUNK
				      ? (size_t)(st->st_size - off) : COPY_CHUNK;
		ssize_t n = pread(fd, buf, want, off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			err = -errno;
		if (n <= 0)
			break;	/* shorter than it said: what there is */
		for (ssize_t w = 0; !err && w < n;) {
			ssize_t k = pwrite(mfd, buf + w, (size_t)(n - w), off + w);
			if (k < 0 && errno == EINTR)
				continue;
			if (k <= 0)
				err = k < 0 ? -errno : -EIO;
			else
				w += k;
		}
		off += n;
		send_msg(sock, &pm, -1);
	}
	free(buf);
	if (err && mfd >= 0)
		close(mfd);
	return err ? err : mfd;
}

/* A directory, for openat() and fstatat() in it. */
static int open_dir(const char *path, struct psvc_fileinfo *ret)
{
	memset(ret, 0, sizeof *ret);
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	struct statfs sf;
	if (fstat(fd, &ret->st) != 0 || fstatfs(fd, &sf) != 0) {
		int err = -errno;
		close(fd);
		return err;
	}
	ret->fs_magic = (unsigned long)sf.f_type;
	return fd;
}

static void serve(int sock)
{
	/* on the stack: the helper ends by _exit() (here, or its watchdog
	 * at any moment), so nothing it allocates is ever freed */
	struct file_req req, *r = &req;
	for (;;) {
		ssize_t n = recv(sock, r, sizeof *r, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n != (ssize_t)sizeof *r)
			return;	/* tinspect is done with us */
		r->path[sizeof r->path - 1] = '\0';
		struct file_msg m = { .kind = MSG_DONE };
		int fd = r->dir ? open_dir(r->path, &m.info)
				: psvc_openat_checked(AT_FDCWD, r->path, &m.info);
		if (fd >= 0 && !r->dir && !psvc_fs_local(m.info.fs_magic)) {
			int copy = copy_to_memory(sock, fd, &m.info.st);
			close(fd);	/* may wait on its server: ours to wait */
			fd = copy;
		}
		m.result = fd >= 0 ? 0 : fd;
		int err = send_msg(sock, &m, fd);
		if (fd >= 0)
			close(fd);
		if (err)
			return;
	}
}

/*
 * The helper's watchdog: when tinspect's end of the socket closes (it is
 * done, or it died: SIGTERM, SIGKILL), the helper ends at once, also when
 * its other thread is in the kernel waiting on a file system that does not
 * answer: exit_group() kills that thread, and a wait for a request the
 * server has not taken ends with it.  Without it, a tinspect ended by a
 * signal left its helper waiting on the mount for as long as the mount
 * lived.
 */
static void *watchdog(void *arg)
{
	int sock = (int)(intptr_t)arg;
	for (;;) {
		struct pollfd p = { sock, POLLRDHUP, 0 };
		if (poll(&p, 1, -1) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR)))
			_exit(0);
	}
	return NULL;
}

/* The helper's life: nobody's signals, none of tinspect's descriptors
 * (a pipe it kept open would keep tinspect's reader waiting). */
static void helper_main(int sock)
{
	sigset_t all;
	sigfillset(&all);
	sigprocmask(SIG_SETMASK, &all, NULL);
	for (int s = 1; s < NSIG; s++)
		signal(s, SIG_DFL);
	/* ended by its socket, not by the terminal's or the caller's signals */
	signal(SIGINT, SIG_IGN);
	signal(SIGTERM, SIG_IGN);
	signal(SIGHUP, SIG_IGN);
	signal(SIGQUIT, SIG_IGN);
	signal(SIGPIPE, SIG_IGN);
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	int keep = sock;
	if (keep != 3) {
		keep = dup2(sock, 3);
		if (keep < 0)
			_exit(1);
	}
	int null = open("/dev/null", O_RDWR | O_CLOEXEC);
	for (int i = 0; i < 3; i++) {
		if (null >= 0)
			dup2(null, i);
		else
			close(i);
	}
	if (close_range(4, ~0u, 0) != 0)
		for (int i = 4; i < 65536; i++)
			close(i);
	prctl(PR_SET_NAME, "tinspect-files", 0, 0, 0);
	/* without it (out of threads) the helper still serves; it is then
	 * killed when tinspect gives up on it, but not if tinspect dies */
	pthread_t th;
	bool dog = pthread_create(&th, NULL, watchdog, (void *)(intptr_t)keep) == 0;
	struct file_msg hello = { .kind = MSG_HELLO, .pid = (int32_t)getpid(),
				  .watchdog = dog };
	if (send_msg(keep, &hello, -1) == 0)
		serve(keep);
	_exit(0);
}

/* ---- tinspect's side ------------------------------------------------------ */

static void helper_stop(struct psvc_target *t, bool kill_it)
{
	if (!t->files_up)
		return;
	/* closing the socket ends a helper with a watchdog; one without
	 * is killed, by its PID (it is alive: it was just seen asleep) */
	if (kill_it && !t->files_watchdog && t->files_pid > 0)
		kill(t->files_pid, SIGKILL);
	close(t->files_sock);
	t->files_up = false;
	t->files_pid = 0;
}

void psvc_files_close(struct psvc_target *t)
{
	helper_stop(t, false);	/* it ends with its socket */
}

/* Fork the helper, twice: the one in between exits at once and is
 * reaped here, so the helper is not a child of ours. */
static int helper_start(struct psvc_target *t)
{
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0)
		return -errno;
	pid_t mid = fork();
	if (mid == 0) {
		close(sv[0]);
		pid_t h = fork();
		if (h == 0)
			helper_main(sv[1]);
		_exit(h < 0 ? 1 : 0);
	}
	/* a fork that failed (EAGAIN, ENOMEM: out of processes or memory)
	 * is told as such: -EAGAIN is a held target's */
	int err = mid < 0 ? -ECHILD : 0;
	close(sv[1]);
	int st = 0;
	while (mid > 0 && waitpid(mid, &st, 0) < 0 && errno == EINTR)
		;
	if (!err && !(WIFEXITED(st) && WEXITSTATUS(st) == 0))
		err = -ECHILD;
	if (err) {
		close(sv[0]);
		return err;
	}
	t->files_sock = sv[0];
	t->files_up = true;
	t->files_pid = 0;	/* until its hello */
	t->files_watchdog = false;
	return 0;
}

/* Which tree a path is in: the target's (reached through /proc/PID/...)
 * or tinspect's own. */
static int tree_of(const char *path)
{
	if (strncmp(path, "/proc/", 6) || path[6] < '0' || path[6] > '9')
		return PSVC_TREE_OURS;
	return PSVC_TREE_TARGET;
}

static bool cancelled(const struct psvc_target *t)
{
	return t->cancel && *t->cancel;
}

bool psvc_files_held(const struct psvc_target *t)
{
	return t->files_paused || (t->stopped && t->t_first_stop);
}

void psvc_files_on_wait(struct psvc_target *t, void (*fn)(void *), void *arg)
{
	t->files_wait_fn = fn;
	t->files_wait_arg = arg;
}

void psvc_files_pause(struct psvc_target *t, bool pause)
{
	if (pause)
		t->files_paused++;
	else if (t->files_paused)
		t->files_paused--;
}

static void gave_up(struct psvc_target *t, const char *path)
{
	int tree = tree_of(path);
	if (t->files_stuck[tree])
		return;
	t->files_stuck[tree] = true;
	psvc_target_warn(t, "files: %s did not answer for %u s (a FUSE mount "
			 "nobody serves, a network file system gone?): no more "
			 "files of %s file system are read", path,
			 (unsigned)(PSVC_FILE_STALL_NS / 1000000000u),
			 tree == PSVC_TREE_TARGET ? "the target's" : "tinspect's");
}

/* Whether the helper is asleep in the kernel (not running, nor waiting
 * for a CPU, nor not started yet). */
static bool helper_asleep(const struct psvc_target *t)
{
	char path[64], buf[512];
	if (t->files_pid <= 0)
		return false;	/* no hello yet: it has not run */
	snprintf(path, sizeof path, "/proc/%d/stat", (int)t->files_pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, buf, sizeof buf - 1) : -1;
	if (fd >= 0)
		close(fd);
	if (n <= 0)
		return true;	/* gone: its socket says so next */
	buf[n] = '\0';
	const char *p = strrchr(buf, ')');	/* "PID (comm) S ..." */
	return !p || p[1] != ' ' || p[2] != 'R';
}

/* The helper's time on a CPU and waiting for one, in ns (the first two
 * fields of /proc/PID/schedstat, kernel/sched/stats.c; its serving
 * thread is the leader); -1 if unknown (no hello yet, no schedstat). */
static int64_t helper_busy_ns(const struct psvc_target *t)
{
	char path[64], buf[128];
	if (t->files_pid <= 0)
		return -1;
	snprintf(path, sizeof path, "/proc/%d/schedstat", (int)t->files_pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, buf, sizeof buf - 1) : -1;
	if (fd >= 0)
		close(fd);
	unsigned long long run, wait;
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	if (sscanf(buf, "%llu %llu", &run, &wait) != 2 || run + wait > INT64_MAX)
		return -1;
	return (int64_t)(run + wait);
}

/* How long the helper has slept since (since_ns, busy_since): the time
 * passed less what it spent on a CPU or waiting for one, where schedstat
 * says; else all of it. */
static uint64_t helper_slept_ns(uint64_t now, uint64_t since_ns, int64_t busy_since,
				int64_t busy_now)
{
	uint64_t slept = now - since_ns;
	if (busy_since >= 0 && busy_now >= busy_since) {
		uint64_t busy = (uint64_t)(busy_now - busy_since);
		slept = busy < slept ? slept - busy : 0;
	}
	return slept;
}

/* Whether an answer waits in the socket now. */
static bool answer_waiting(const struct psvc_target *t)
{
	struct pollfd p = { t->files_sock, POLLIN, 0 };
	return poll(&p, 1, 0) > 0;
}

/* Let go the tasks that stopped since the resume (psvc_int.h). */
static void let_go(struct psvc_target *t)
{
	if (!t->stopped && t->files_release)
		t->files_release(t);
}

/* Wait for the helper's answer, in slices. */
static int wait_answer(struct psvc_target *t, struct psvc_fileinfo *ret)
{
	uint64_t last = psvc_now_ns();
	int64_t busy_last = helper_busy_ns(t);
	for (;;) {
		struct file_msg m;
		int fd, r = recv_msg(t->files_sock, &m, &fd);
		if (r == -EPIPE)
			return -EIO;	/* the helper died */
		if (r == 0 && m.kind == MSG_HELLO) {
			t->files_pid = m.pid;
			t->files_watchdog = m.watchdog;
		}
		if (r == 0 && m.kind == MSG_DONE) {
			*ret = m.info;
			if (m.result < 0 && fd >= 0)
				close(fd);
			return m.result < 0 ? m.result : fd >= 0 ? fd : -EIO;
		}
		if (fd >= 0)
			close(fd);
		uint64_t now = psvc_now_ns();
		if (r == 0) {
			last = now;	/* hello, progress */
			busy_last = helper_busy_ns(t);
			continue;
		}
		if (cancelled(t))
			return -EINTR;
		/* Only the helper's sleep counts: on a loaded machine it may
		 * wait long for a CPU, and this thread too (it may not have
		 * run between the look at the socket above and now: a helper
		 * asleep then may be asleep in recv() after its answer). */
		int64_t busy = helper_busy_ns(t);
		if (helper_slept_ns(now, last, busy_last, busy) > PSVC_FILE_STALL_NS) {
			bool asleep = helper_asleep(t);
			if (asleep && !answer_waiting(t))
				return -ETIMEDOUT;
			if (!asleep) {
				last = now;	/* it runs, or waits for a CPU */
				busy_last = busy;
			}
		}
		let_go(t);
		if (t->files_wait_fn && !t->stopped && !t->files_servicing) {
			/* a followed target's new threads must not wait
			 * for a file system (psvc_files_on_wait) */
			t->files_servicing = true;
			t->files_wait_fn(t->files_wait_arg);
			t->files_servicing = false;
		}
		struct pollfd p = { t->files_sock, POLLIN, 0 };
		poll(&p, 1, SLICE_MS);
	}
}

static int run_request(struct psvc_target *t, const char *path, bool dir,
		       struct psvc_fileinfo *ret)
{
	memset(ret, 0, sizeof *ret);
	if (psvc_files_held(t))
		return -EAGAIN;
	if (t->files_stuck[tree_of(path)])
		return -ETIMEDOUT;
	if (cancelled(t))
		return -EINTR;
	let_go(t);
	size_t len = strlen(path);
	if (len >= sizeof ((struct file_req *)0)->path)
		return -ENAMETOOLONG;
	/* the helper is forked before the request is allocated: a copy of
	 * it in the helper would be memory the helper lost (valgrind
	 * follows the fork and says so at the helper's exit) */
	int err = t->files_up ? 0 : helper_start(t);
	struct file_req *r = err ? NULL : calloc(1, sizeof *r);
	if (!err && !r)
		err = -ENOMEM;
	if (r) {
		memcpy(r->path, path, len);
		r->dir = dir;
	}
	ssize_t n = -1;
	while (!err && (n = send(t->files_sock, r, sizeof *r, MSG_NOSIGNAL)) < 0 &&
	       errno == EINTR)
		;
	free(r);
	if (!err && n != (ssize_t)sizeof(*r)) {
		helper_stop(t, false);	/* dead: a new one next time */
		err = -EIO;
	}
	int fd = err ? err : wait_answer(t, ret);
	if (fd == -EINTR || fd == -ETIMEDOUT)
		helper_stop(t, true);	/* it may be stuck: a new one next */
	else if (fd == -EIO)
		helper_stop(t, false);	/* gone (or confused): a new one next */
	if (fd == -ETIMEDOUT)
		gave_up(t, path);
	return fd;
}

int psvc_file_open(struct psvc_target *t, const char *path,
		   struct psvc_fileinfo *ret)
{
	return run_request(t, path, false, ret);
}

int psvc_dir_open(struct psvc_target *t, const char *path,
		  struct psvc_fileinfo *ret)
{
	return run_request(t, path, true, ret);
}
