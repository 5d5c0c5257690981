/*
 * modfiles.c: the ELF file behind each module, and its symbol tables.
 *
 * A module's file is opened through /proc/PID/map_files (the very inode
 * that is mapped, right even if the file was replaced or deleted on disk),
 * else by its path in the target's mount namespace (/proc/PID/root), and
 * then only if it is proved to be the mapped file: the build-ids in the
 * file and in target memory agree (memelf.c), or without build-ids the
 * inodes do.  The vDSO has no file: its image is copied from memory.  The
 * symbol tables are loaded once per module (elfsym.c) and kept while the
 * module stays in the map.
 */
#include "psvc_int.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/*
 * Is the file opened by path the one mapped at m?  The build-ids in the
 * file and in target memory must agree; without a build-id on either side,
 * the inode must (a file replaced on disk has a new one).  Inode numbers
 * alone are not trusted when a build-id is there: through overlayfs,
 * stat() and /proc/PID/maps can disagree about them.
 */
static bool path_is_mapped_file(struct psvc_target *t, struct psvc_module *m,
				const struct psvc_elf *e)
{
	char file_id[41], mem_id[41];
	psvc_elfsym_build_id(e, file_id);
	int r = psvc_mem_build_id(t, m->map_start, mem_id);
	if (file_id[0] && r == 0)
		return strcmp(file_id, mem_id) == 0;
	if (file_id[0] && r == -ENOENT)
		return false;	/* the mapped image has none: not this file */
	dev_t dev;
	ino_t ino;
	psvc_elfsym_file_id(e, &dev, &ino);
	return ino && ino == m->ino;
}

/* A new descriptor on the very file the module's symbols were read from
 * (after they were: the file is checked then). */
static int reopen_checked(struct psvc_target *t, struct psvc_module *m)
{
	int err = psvc_module_load_elf(t, m);
	if (err)
		return err;
	bool by_path;
	struct stat st;
	int fd = t->backend->open_mapped(t, m, &by_path, &st);
	if (fd < 0 || !by_path)
		return fd;
	/* by path: the file there now must be the one that was checked */
	dev_t dev;
	ino_t ino;
	psvc_elfsym_file_id(m->elf, &dev, &ino);
	if (st.st_dev != dev || st.st_ino != ino) {
		close(fd);
		return -ESTALE;
	}
	return fd;
}

int psvc_module_open_fd(struct psvc_target *t, struct psvc_module *m)
{
	if (m->flags & PSVC_MOD_VDSO)
		return -ENOENT;	/* read from memory */
	return reopen_checked(t, m);
}

/* The vDSO has no file: its image is copied from target memory. */
static int vdso_image(struct psvc_target *t, const struct psvc_module *m,
		      void **ret, size_t *ret_len)
{
	size_t len = (size_t)(m->end - m->start);
	if (len == 0 || len > (1u << 20))
		return -E2BIG;
	void *img = malloc(len);
	if (!img)
		return -ENOMEM;
	int err = psvc_read(t, m->start, img, len);
	if (err) {
		free(img);
		return err;
	}
	*ret = img;
	*ret_len = len;
	return 0;
}

int psvc_module_open(struct psvc_target *t, struct psvc_module *m)
{
	if (!(m->flags & PSVC_MOD_VDSO)) {
		/* the symbol tables are loaded (and the file checked) first:
		 * a file that is not the mapped one is not handed out */
		return reopen_checked(t, m);
	}
	void *img;
	size_t len;
	int err = vdso_image(t, m, &img, &len);
	if (err)
		return err;
	int fd = memfd_create("vdso", MFD_CLOEXEC);
	if (fd < 0) {
		err = -errno;
	} else if (write(fd, img, len) != (ssize_t)len) {
		err = -EIO;
		close(fd);
		fd = -1;
	}
	free(img);
	return fd >= 0 ? fd : err;
}

int psvc_module_load_elf(struct psvc_target *t, struct psvc_module *m)
{
	if (m->elf)
		return 0;
	if (m->elf_errno)
		return -m->elf_errno;
	int err;
	if (m->flags & PSVC_MOD_VDSO) {
		void *img;
		size_t len;
		err = vdso_image(t, m, &img, &len);
		if (!err) {
			m->elf = psvc_elfsym_open_mem(img, len, &err);
			free(img);
		}
	} else {
		bool check_id;
		struct stat st;
		int fd = t->backend->open_mapped(t, m, &check_id, &st);
		err = fd;
		if (fd >= 0)
			m->elf = psvc_elfsym_open_fd(fd, &err);
		/* the file's own identity, also when fd was a copy in
		 * memory of a file that cannot be mapped safely */
		if (m->elf && fd >= 0)
			psvc_elfsym_set_file_id(m->elf, st.st_dev, st.st_ino);
		if (m->elf && check_id && !path_is_mapped_file(t, m, m->elf)) {
			/* replaced on disk, or another file at that path in
			 * that namespace: its symbols would be wrong */
			psvc_elfsym_close(m->elf);
			m->elf = NULL;
			err = -ESTALE;
		}
	}
	if (!m->elf) {
		/* out of descriptors, a task held, a signal, the file
		 * helper dead or not started: not a property of the file;
		 * the next attempt may work */
		if (err != -EMFILE && err != -ENFILE && err != -EAGAIN &&
		    err != -EINTR && err != -EIO && err != -ECHILD)
			m->elf_errno = -err;
		return err;
	}
	psvc_elfsym_build_id(m->elf, m->build_id);
	m->has_symtab = psvc_elfsym_has_symtab(m->elf);
	return 0;
}

int psvc_module_span(struct psvc_target *t, struct psvc_module *m,
		     uint64_t *ret_low, uint64_t *ret_high)
{
	int err = psvc_module_load_elf(t, m);
	if (err)
		return err;
	uint64_t lo, hi;
	unsigned e_type;
	psvc_elfsym_load_span(m->elf, &lo, &hi, &e_type);
	/* an ET_EXEC is where its headers say (libdwfl ignores a base) */
	uint64_t bias = e_type == ET_EXEC ? 0 : m->bias;
	if (hi <= lo || !psvc_add_ok(bias, lo, ret_low) ||
	    !psvc_add_ok(bias, hi, ret_high))
		return -ENOEXEC;
	return 0;
}
