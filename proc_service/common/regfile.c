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
 *
 * "Regular" is not enough: /proc/kmsg is a regular file to stat(), and
 * reading it consumes the kernel's log (syslog's destructive read: a
 * debuglink symlinked there made tinspect, as root, eat the messages
 * rsyslog was to get).  Files of the kernel's pseudo file systems
 * (procfs, sysfs, debugfs, tracefs, cgroupfs, securityfs, bpf, ...: the
 * statfs magic of the file's own mount) are never opened for reading, nor
 * are files that report a size of 0 (what procfs and sysfs files say, and
 * no ELF file has).
 */
#include "psvc_int.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#define READ_FLAGS (O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY)

/* Magic numbers <linux/magic.h> of Debian 12 lacks. */
#define CONFIGFS_MAGIC_ 0x62656570u
#define MQUEUE_MAGIC_ 0x19800202u
#define FUSECTL_MAGIC_ 0x65735543u
#define NFSD_MAGIC_ 0x6e667364u
#define RPC_PIPEFS_MAGIC_ 0x67596969u
#define IBMASMFS_MAGIC_ 0x66726f67u
#define GADGETFS_MAGIC_ 0xaee71ee7u
#define FUNCTIONFS_MAGIC_ 0xa647361u

/* The kernel's pseudo file systems: their files are the kernel's
 * interfaces, and reading one may act (consume a log, trigger a dump). */
static const struct {
	unsigned long magic;
	const char *name;
} pseudo_fs[] = {
	{ PROC_SUPER_MAGIC, "procfs" },
	{ SYSFS_MAGIC, "sysfs" },
	{ DEBUGFS_MAGIC, "debugfs" },
	{ TRACEFS_MAGIC, "tracefs" },
	{ CGROUP_SUPER_MAGIC, "cgroupfs" },
	{ CGROUP2_SUPER_MAGIC, "cgroup2" },
	{ SECURITYFS_MAGIC, "securityfs" },
	{ SELINUX_MAGIC, "selinuxfs" },
	{ SMACK_MAGIC, "smackfs" },
	{ AAFS_MAGIC, "apparmorfs" },
	{ PSTOREFS_MAGIC, "pstore" },
	{ EFIVARFS_MAGIC, "efivarfs" },
	{ BPF_FS_MAGIC, "bpf" },
	{ DEVPTS_SUPER_MAGIC, "devpts" },
	{ BINFMTFS_MAGIC, "binfmt_misc" },
	{ NSFS_MAGIC, "nsfs" },
	{ RDTGROUP_SUPER_MAGIC, "resctrl" },
	{ OPENPROM_SUPER_MAGIC, "openpromfs" },
	{ USBDEVICE_SUPER_MAGIC, "usbfs" },
	{ XENFS_SUPER_MAGIC, "xenfs" },
	{ BINDERFS_SUPER_MAGIC, "binderfs" },
	{ ANON_INODE_FS_MAGIC, "anon_inodefs" },
	{ PIPEFS_MAGIC, "pipefs" },
	{ SOCKFS_MAGIC, "sockfs" },
	{ BDEVFS_MAGIC, "bdev" },
	{ DMA_BUF_MAGIC, "dmabuf" },
	{ DEVMEM_MAGIC, "devmem" },
	{ SECRETMEM_MAGIC, "secretmem" },
	{ AUTOFS_SUPER_MAGIC, "autofs" },
	{ CONFIGFS_MAGIC_, "configfs" },
	{ MQUEUE_MAGIC_, "mqueue" },
	{ FUSECTL_MAGIC_, "fusectl" },
	{ NFSD_MAGIC_, "nfsd" },
	{ RPC_PIPEFS_MAGIC_, "rpc_pipefs" },
	{ IBMASMFS_MAGIC_, "ibmasmfs" },
	{ GADGETFS_MAGIC_, "gadgetfs" },
	{ FUNCTIONFS_MAGIC_, "functionfs" },
};

const char *psvc_pseudo_fs_name(unsigned long magic)
{
	for (size_t i = 0; i < sizeof pseudo_fs / sizeof *pseudo_fs; i++)
		if (pseudo_fs[i].magic == (magic & 0xffffffffu))
			return pseudo_fs[i].name;
	return NULL;
}

int psvc_open_regular(const char *path, struct stat *ret_st)
{
	return psvc_openat_regular(AT_FDCWD, path, ret_st);
}

int psvc_openat_regular(int dirfd, const char *path, struct stat *ret_st)
{
	struct psvc_fileinfo fi;
	int fd = psvc_openat_checked(dirfd, path, &fi);
	if (fd >= 0 && ret_st)
		*ret_st = fi.st;
	return fd;
}

int psvc_openat_checked(int dirfd, const char *path, struct psvc_fileinfo *ret)
{
	struct stat st, st2;
	struct statfs sf;
	memset(ret, 0, sizeof *ret);
	int pfd = openat(dirfd, path, O_PATH | O_CLOEXEC);
	if (pfd < 0)
		return -errno;
	int err = 0;
	if (fstat(pfd, &st) != 0)
		err = -errno;
	else if (!S_ISREG(st.st_mode))
		err = -ENXIO;
	else if (fstatfs(pfd, &sf) != 0)
		err = -errno;
	if (!err) {
		/* what the refusals below say */
		ret->st = st;
		ret->fs_magic = (unsigned long)sf.f_type;
	}
	if (!err && psvc_pseudo_fs_name((unsigned long)sf.f_type))
		err = -EOPNOTSUPP;
	else if (!err && st.st_size == 0)
		err = -ENODATA;
	if (err) {
		close(pfd);
		return err;
	}
	char self[64];
	snprintf(self, sizeof self, "/proc/self/fd/%d", pfd);
	int fd = open(self, READ_FLAGS);
	if (fd < 0 && errno == ENOENT)
		fd = openat(dirfd, path, READ_FLAGS);	/* no /proc/self */
	err = fd < 0 ? -errno : 0;
	close(pfd);
	if (err)
		return err;
	if (fstat(fd, &st2) != 0 || !S_ISREG(st2.st_mode) ||
	    st2.st_dev != st.st_dev || st2.st_ino != st.st_ino) {
		close(fd);
		return -ENXIO;
	}
	ret->st = st2;
	return fd;
}

const char *psvc_open_strerror(int err)
{
	switch (err) {
	case -ENXIO: return "not a regular file";
	case -EOPNOTSUPP: return "a file of a kernel pseudo file system (procfs, "
				 "sysfs, debugfs...), where reading may act";
	case -ENODATA: return "it reports a size of 0 (a kernel pseudo file?)";
	case -ETIMEDOUT: return "its file system did not answer in time (a FUSE "
				"mount nobody serves, a network file system "
				"gone?)";
	case -EFBIG: return "over 256 MiB on a file system that is not a local "
			    "one: not copied";
	case -EAGAIN: return "not opened while the target is held";
	case -EINTR: return "interrupted (a signal)";
	case -ECHILD: return "tinspect's file helper could not be started (fork "
			     "failed: out of processes or memory)";
	case -EMFILE: return "out of file descriptors (EMFILE)";
	case -ENFILE: return "out of file descriptors system-wide (ENFILE)";
	default: return strerror(-err);
	}
}
