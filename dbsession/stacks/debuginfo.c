/*
 * debuginfo.c: every file libdwfl reads, opened by tinspect.
 *
 * libdwfl's own callbacks open what a module names with a plain open()
 * retried on EINTR (find-debuginfo.c try_open, dwfl_report_elf,
 * linux-proc-maps.c): a stripped program whose .gnu_debuglink names a FIFO
 * beside it or in .debug/ made tinspect block for ever after the resume,
 * deaf to every signal but SIGKILL (a hostile target).  These callbacks open
 * files only through psvc_open_regular (regular files, never blocking),
 * search the places libdwfl's standard search does (elfutils 0.188
 * find-debuginfo.c: by build-id under /usr/lib/debug/.build-id, then the
 * debuglink name in the module's directory, its .debug/ subdirectory and
 * under /usr/lib/debug), in tinspect's file system and, for a target in
 * another mount namespace, in the target's, and accept a file only if its
 * build-id (else the debuglink's CRC) is the module's.  dwz's alternate
 * debug files (.gnu_debugaltlink) are found the same way and checked
 * against the build-id the link names.  debuginfod is asked last, only
 * when the user kept DEBUGINFOD_URLS (--debuginfod).
 *
 * The main ELF of a module is handed to libdwfl as an Elf with no
 * descriptor behind it (libelf has the file mapped): a process with
 * thousands of libraries costs no descriptor per library.  A refused file
 * or a lack of descriptors is noted, for the snapshot's warnings and for
 * the error of a stack that could not be unwound.
 *
 * libdwfl says only "Callback returned failure" when find_elf gives it
 * neither a descriptor nor an Elf (elfutils libdwfl/dwfl_module_getdwarf.c,
 * open_elf_file: DWFL_E_CB, errno cleared), and remembers that failure for
 * the module's life in the Dwfl.  So the reason of each module's failed
 * open is kept here, by the module's name, for the error of every stack
 * that reaches the module (unwind.c), and a failure that may not last is
 * told to the unwinder, which then reports the module afresh.
 */
#include "dbs_int.h"

#include <dlfcn.h>
#include <elfutils/libdwelf.h>
#include <errno.h>
#include <gelf.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_NOTES 16
#define DEBUG_DIR "/usr/lib/debug"

struct dbg_files {
	struct psvc_target *t;
	bool other_mntns;	/* the target's / is not ours */
	char *notes[MAX_NOTES];
	size_t nnotes;
	int fd_errno;		/* EMFILE / ENFILE met, 0 if not */
	char fd_what[256];	/* what could not be opened then */
	/* CRC budgets and the CRCs computed (debugcrc.c) */
	struct dbs_crc *crc;
	/* searches that found nothing, as "modname\ndebuglink\ncrc": libdwfl
	 * asks once for the symbol table and once for the DWARF */
	char **failed;
	size_t nfailed;
	unsigned transient;	/* failures that may not last (EMFILE) met */
	/* debuginfod, loaded on first use when DEBUGINFOD_URLS is set */
	void *dfd_lib;
	void *dfd_client;
	bool dfd_tried;
	/* the last file try_path() accepted was in tinspect's own file
	 * system (not the target's root): it may be cached (dbgcache.c) */
	bool found_here;
	/* modules whose file could not be opened for libdwfl, and why */
	struct open_failure {
		char *module;
		int err;	/* positive errno */
	} *ofail;
	size_t nofail;
};

static void add_note(struct dbg_files *f, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void add_note(struct dbg_files *f, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *msg = dbs_vformat(fmt, ap);
	va_end(ap);
	if (!msg)
		return;
	for (size_t i = 0; i < f->nnotes; i++)
		if (!strcmp(f->notes[i], msg)) {
			free(msg);
			return;
		}
	if (f->nnotes == MAX_NOTES) {
		free(msg);
		return;
	}
	f->notes[f->nnotes++] = msg;
}

static void out_of_fds(struct dbg_files *f, int err, const char *path)
{
	f->fd_errno = err;
	f->transient++;
	snprintf(f->fd_what, sizeof f->fd_what, "%s", path);
	add_note(f, "out of file descriptors (%s) opening %s",
		 err == EMFILE ? "EMFILE" : "ENFILE", path);
}

/* Open a candidate; a refusal worth telling the user is noted. */
static int open_file(struct dbg_files *f, const char *path)
{
	struct psvc_fileinfo fi;
	int fd = psvc_file_open(f->t, path, &fi);
	if (fd == -ENXIO)
		add_note(f, "%s is not a regular file (a FIFO, a device?): "
			 "not read", path);
	else if (fd == -EOPNOTSUPP)
		add_note(f, "%s is a file of %s, a kernel pseudo file system "
			 "(reading it may act): not read", path,
			 psvc_pseudo_fs_name(fi.fs_magic));
	else if (fd == -ENODATA)
		add_note(f, "%s reports a size of 0: not read", path);
	else if (fd == -ETIMEDOUT || fd == -EFBIG)
		add_note(f, "%s: %s: not read", path, psvc_open_strerror(fd));
	if (fd == -EMFILE || fd == -ENFILE)
		out_of_fds(f, -fd, path);
	return fd;
}

struct dbg_files *dbs_dbg_files_new(struct psvc_target *t)
{
	struct dbg_files *f = calloc(1, sizeof *f);
	if (!f)
		return NULL;
	f->t = t;
	f->other_mntns = psvc_foreign_mntns(t);	/* unknown: look in both */
	f->crc = dbs_crc_new();
	if (!f->crc) {
		free(f);
		return NULL;
	}
	return f;
}

void dbs_dbg_files_free(struct dbg_files *f)
{
	if (!f)
		return;
	dbs_dbg_files_take_notes(f, NULL, NULL);
	if (f->dfd_client) {
		void (*end)(void *) = (void (*)(void *))dlsym(f->dfd_lib, "debuginfod_end");
		if (end)
			end(f->dfd_client);
	}
	if (f->dfd_lib)
		dlclose(f->dfd_lib);
	for (size_t i = 0; i < f->nfailed; i++)
		free(f->failed[i]);
	free(f->failed);
	dbs_dbg_files_forget_failures(f, false);
	free(f->ofail);
	dbs_crc_free(f->crc);
	free(f);
}

/* ---- modules whose file could not be opened ------------------------------------ */

void dbs_dbg_files_open_failed(struct dbg_files *f, const char *module, int err)
{
	if (!f || !module || err <= 0)
		return;
	for (size_t i = 0; i < f->nofail; i++)
		if (!strcmp(f->ofail[i].module, module)) {
			f->ofail[i].err = err;
			return;
		}
	char *name = strdup(module);
	struct open_failure *v = name ? realloc(f->ofail, (f->nofail + 1) *
						       sizeof *v) : NULL;
	if (!v) {
		free(name);	/* the stack then says libdwfl's words only */
		return;
	}
	f->ofail = v;
	f->ofail[f->nofail++] = (struct open_failure){ name, err };
}

void dbs_dbg_files_open_ok(struct dbg_files *f, const char *module)
{
	for (size_t i = 0; f && module && i < f->nofail; i++)
		if (!strcmp(f->ofail[i].module, module)) {
			free(f->ofail[i].module);
			f->ofail[i] = f->ofail[--f->nofail];
			return;
		}
}

int dbs_dbg_files_open_errno(const struct dbg_files *f, const char *module)
{
	for (size_t i = 0; f && module && i < f->nofail; i++)
		if (!strcmp(f->ofail[i].module, module))
			return f->ofail[i].err;
	return 0;
}

bool dbs_dbg_open_transient(int err)
{
	/* fileworker.c: EAGAIN while a task is held, EINTR when cancelled,
	 * ETIMEDOUT when its helper stalled, EIO when the helper died,
	 * ECHILD when it could not be started */
	return err == EAGAIN || err == EINTR || err == ETIMEDOUT ||
	       err == EMFILE || err == ENFILE || err == EIO || err == ENOMEM ||
	       err == ECHILD;
}

bool dbs_dbg_files_transient(const struct dbg_files *f)
{
	for (size_t i = 0; f && i < f->nofail; i++)
		if (dbs_dbg_open_transient(f->ofail[i].err))
			return true;
	return false;
}

void dbs_dbg_files_forget_failures(struct dbg_files *f, bool transient_only)
{
	size_t k = 0;
	for (size_t i = 0; i < f->nofail; i++) {
		if (!transient_only || dbs_dbg_open_transient(f->ofail[i].err))
			free(f->ofail[i].module);
		else
			f->ofail[k++] = f->ofail[i];
	}
	f->nofail = k;
}

const char *dbs_dbg_open_strerror(int err, char *buf, size_t len)
{
	switch (err) {
	case ETIMEDOUT:
		snprintf(buf, len, "the file system did not answer within %u s "
			 "(tinspect's file helper was asleep in the kernel that "
			 "long; no more files of that file system are read)",
			 (unsigned)(PSVC_FILE_STALL_NS / 1000000000u));
		return buf;
	case ESTALE:
		return "the file at that path is not the one mapped (replaced "
		       "on disk)";
	case ENOKEY:
		return "the file at that path cannot be proved to be the one "
		       "mapped (no build-id to compare)";
	case EAGAIN:
		return "not opened while the target was held";
	case EIO:
		return "an I/O error, or tinspect's file helper died";
	case ENOEXEC:
		return "not an ELF file libelf can read";
	default:
		return psvc_open_strerror(-err);
	}
}

uint64_t dbs_dbg_files_crc_bytes(const struct dbg_files *f)
{
	return dbs_crc_bytes_read(f->crc);
}

/* The key of one module's search; NULL if out of memory (then searched). */
static char *search_key(const char *modname, const char *debuglink, GElf_Word crc)
{
	return dbs_format("%s\n%s\n%08x", modname, debuglink ? debuglink : "",
			  (unsigned)crc);
}

static bool searched_before(const struct dbg_files *f, const char *key)
{
	for (size_t i = 0; key && i < f->nfailed; i++)
		if (!strcmp(f->failed[i], key))
			return true;
	return false;
}

/* Remember a search that found nothing (key is taken). */
static void search_failed(struct dbg_files *f, char *key)
{
	char **v = key ? realloc(f->failed, (f->nfailed + 1) * sizeof *v) : NULL;
	if (!v) {
		free(key);
		return;
	}
	f->failed = v;
	f->failed[f->nfailed++] = key;
}

void dbs_dbg_files_take_notes(struct dbg_files *f, char ***ret, size_t *ret_n)
{
	if (ret) {
		*ret = NULL;
		*ret_n = 0;
		char **v = malloc((f->nnotes ? f->nnotes : 1) * sizeof *v);
		if (v) {
			memcpy(v, f->notes, f->nnotes * sizeof *v);
			*ret = v;
			*ret_n = f->nnotes;
			f->nnotes = 0;
		}
	}
	for (size_t i = 0; i < f->nnotes; i++)
		free(f->notes[i]);
	f->nnotes = 0;
	f->fd_errno = 0;	/* a capture's trouble is told with it */
}

int dbs_dbg_files_fd_errno(const struct dbg_files *f, const char **ret_what)
{
	if (ret_what)
		*ret_what = f->fd_what;
	return f->fd_errno;
}

const char *dbs_dbg_files_why(const struct dbg_files *f, const char *module,
			      char *buf, size_t len)
{
	int err = dbs_dbg_files_open_errno(f, module);
	if (!err)
		return NULL;
	char why[256];
	snprintf(buf, len, "the file of %s could not be opened: %s", module,
		 dbs_dbg_open_strerror(err, why, sizeof why));
	return buf;
}

/* ---- the main ELF ---------------------------------------------------------------- */

int dbs_dbg_find_elf(Dwfl_Module *mod, void **userdata, const char *modname,
		 Dwarf_Addr base, char **file_name, Elf **elfp)
{
	(void)mod;
	struct dbg_files *f = *userdata;
	struct psvc_module *m = f ? psvc_module_for_addr(f->t, base) : NULL;
	if (!m || !m->path || strcmp(m->path, modname)) {
		dbs_dbg_files_open_failed(f, modname, ENOENT);
		errno = ENOENT;
		return -1;
	}
	/* the mapped file itself, checked (modfiles.c) */
	int fd = psvc_module_open(f->t, m);
	if (fd == -EMFILE || fd == -ENFILE)
		out_of_fds(f, -fd, modname);
	if (fd < 0) {
		dbs_dbg_files_open_failed(f, modname, -fd);
		errno = -fd;
		return -1;
	}
	Elf *e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (e && (elf_kind(e) != ELF_K_ELF || elf_cntl(e, ELF_C_FDREAD) != 0)) {
		elf_end(e);
		e = NULL;
	}
	close(fd);	/* libelf has it mapped */
	if (!e) {
		dbs_dbg_files_open_failed(f, modname, ENOEXEC);
		errno = ENOEXEC;
		return -1;
	}
	dbs_dbg_files_open_ok(f, modname);	/* another mapping of it failed */
	*file_name = strdup(modname);
	*elfp = e;
	return -1;	/* no descriptor: the Elf is all libdwfl gets */
}

/* ---- separate debug files --------------------------------------------------------- */

/* What a candidate must be: a file with this build-id, or (none known)
 * one whose CRC is crc; module_left: the bytes this module's search may
 * still read for CRCs (debugcrc.c). */
struct want {
	const unsigned char *id;
	size_t idlen;
	bool use_crc;
	uint32_t crc;
	uint64_t *module_left;
};

static bool id_matches(struct dbg_files *f, int fd, const char *path,
		       const struct want *w)
{
	if (!w->idlen) {
		uint32_t crc;
		if (!w->use_crc || !f->crc)
			return false;
		int err = dbs_crc_file(f->crc, fd, w->module_left, &crc);
		if (err == -EFBIG) {
			struct stat st;
			add_note(f, "%s: %lld bytes would exceed what is read to "
				 "check debuglink CRCs (%llu MiB per module, %llu "
				 "MiB in all): not read", path,
				 fstat(fd, &st) == 0 ? (long long)st.st_size : -1LL,
				 (unsigned long long)(DBS_CRC_MODULE_BUDGET >> 20),
				 (unsigned long long)(DBS_CRC_RUN_BUDGET >> 20));
		}
		return err == 0 && crc == w->crc;
	}
	Elf *e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	const void *id;
	ssize_t len = e ? dwelf_elf_gnu_build_id(e, &id) : -1;
	bool ok = len > 0 && (size_t)len == w->idlen && !memcmp(id, w->id, w->idlen);
	if (e)
		elf_end(e);
	return ok;
}

/* Try path (in tinspect's file system, then in the target's if it has
 * its own): the descriptor and *ret_name if it is the wanted file. */
static int try_path(struct dbg_files *f, const char *path, const struct want *w,
		    char **ret_name)
{
	char buf[PATH_MAX];
	for (int where = 0; where < (f->other_mntns ? 2 : 1); where++) {
		const char *p = path;
		if (where == 1) {
			char root[PATH_MAX];
			if (psvc_root_dir(f->t, root, sizeof root) ||
			    snprintf(buf, sizeof buf, "%s%s", root, path) >=
				    (int)sizeof buf)
				continue;
			p = buf;
		}
		int fd = open_file(f, p);
		if (fd < 0)
			continue;
		if (id_matches(f, fd, p, w)) {
			f->found_here = where == 0;
			*ret_name = strdup(p);
			if (*ret_name)
				return fd;
		}
		close(fd);
	}
	return -1;
}

static int try_build_id(struct dbg_files *f, const struct want *w, char **ret_name)
{
	if (w->idlen < 2 || w->idlen > 64)
		return -1;
	char path[sizeof DEBUG_DIR + 160], *p = path;
	p += sprintf(p, DEBUG_DIR "/.build-id/%02x/", w->id[0]);
	for (size_t i = 1; i < w->idlen; i++)
		p += sprintf(p, "%02x", w->id[i]);
	strcpy(p, ".debug");
	return try_path(f, path, w, ret_name);
}

/* The debug file a dwz-compressed DWARF refers to: its name and build-id
 * from the .gnu_debugaltlink section of e. */
static bool altlink(Elf *e, const char **ret_name, const unsigned char **ret_id,
		    size_t *ret_idlen)
{
	size_t shstrndx;
	if (!e || elf_getshdrstrndx(e, &shstrndx) != 0)
		return false;
	Elf_Scn *scn = NULL;
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		const char *name;
		if (!gelf_getshdr(scn, &sh) ||
		    !(name = elf_strptr(e, shstrndx, sh.sh_name)) ||
		    strcmp(name, ".gnu_debugaltlink"))
			continue;
		Elf_Data *d = elf_getdata(scn, NULL);
		if (!d || !d->d_buf)
			return false;
		const char *s = d->d_buf;
		size_t len = strnlen(s, d->d_size);
		if (len == 0 || len + 1 >= d->d_size)
			return false;
		*ret_name = s;
		*ret_id = (const unsigned char *)s + len + 1;
		*ret_idlen = d->d_size - len - 1;
		return true;
	}
	return false;
}

/* The directory part of path ("" for "/x", "." without a slash). */
static void dirname_of(const char *path, char *out, size_t len)
{
	const char *slash = path ? strrchr(path, '/') : NULL;
	if (!slash)
		snprintf(out, len, ".");
	else
		snprintf(out, len, "%.*s", (int)(slash - path), path);
}

typedef void *(*dfd_begin_fn)(void);
typedef int (*dfd_find_fn)(void *, const unsigned char *, int, char **);

/* debuginfod (elfutils' client, loaded as libdwfl would load it), only
 * when the user kept DEBUGINFOD_URLS. */
static int try_debuginfod(struct dbg_files *f, const struct want *w, char **ret_name)
{
	const char *urls = getenv("DEBUGINFOD_URLS");
	if (!w->idlen || !urls || !*urls)
		return -1;
	if (!f->dfd_tried) {
		f->dfd_tried = true;
		f->dfd_lib = dlopen("libdebuginfod.so.1", RTLD_LAZY | RTLD_LOCAL);
		dfd_begin_fn begin = f->dfd_lib ? (dfd_begin_fn)dlsym(f->dfd_lib,
						"debuginfod_begin") : NULL;
		f->dfd_client = begin ? begin() : NULL;
	}
	dfd_find_fn find = f->dfd_client ? (dfd_find_fn)dlsym(f->dfd_lib,
					"debuginfod_find_debuginfo") : NULL;
	char *path = NULL;
	int fd = find ? find(f->dfd_client, w->id, (int)w->idlen, &path) : -1;
	if (fd < 0) {
		free(path);
		return -1;
	}
	/* its cache is a file the client wrote; still: regular, and the
	 * file wanted */
	struct stat st;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
	    !id_matches(f, fd, path, w)) {
		close(fd);
		free(path);
		return -1;
	}
	*ret_name = path;
	return fd;
}

int dbs_dbg_find_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname,
		       GElf_Addr base, const char *file_name,
		       const char *debuglink, GElf_Word crc, char **ret_name)
{
	(void)base;
	struct dbg_files *f = *userdata;
	*ret_name = NULL;
	if (!f) {
		errno = ENOENT;
		return -1;
	}
	/* once per module: libdwfl asks again (for the symbol table, then
	 * the DWARF) after a search that found nothing */
	char *key = search_key(modname, debuglink, crc);
	if (searched_before(f, key)) {
		free(key);
		errno = 0;
		return -1;
	}
	unsigned transient = f->transient;
	const char *mainfile = NULL, *debugfile = NULL;
	dwfl_module_info(mod, NULL, NULL, NULL, NULL, NULL, &mainfile, &debugfile);

	/* The alternate (dwz) file of the DWARF read from file_name: the
	 * debug file found before, or the main file when its DWARF is its
	 * own (then the call looks like a debuglink search with CRC 0). */
	Elf *from = NULL;
	bool own = false;
	if (debugfile) {
		int fd = open_file(f, debugfile);
		if (fd >= 0) {
			from = elf_begin(fd, ELF_C_READ_MMAP, NULL);
			if (from && elf_cntl(from, ELF_C_FDREAD) != 0) {
				elf_end(from);
				from = NULL;
			}
			close(fd);
			own = true;
		}
	} else if (crc == 0 && debuglink) {
		GElf_Addr bias;
		from = dwfl_module_getelf(mod, &bias);
	}
	const char *altname;
	const unsigned char *altid;
	size_t altidlen;
	bool alt = from && altlink(from, &altname, &altid, &altidlen) &&
		   debuglink && !strcmp(altname, debuglink);
	int fd = -1;
	char dir[PATH_MAX], path[PATH_MAX];
	const unsigned char *id = NULL;
	size_t idlen = 0;
	f->found_here = false;
	/* what this search may read for CRCs (debugcrc.c) */
	uint64_t module_left = DBS_CRC_MODULE_BUDGET;
	if (alt) {
		id = altid;
		idlen = altidlen;
		struct want w = { altid, altidlen, false, 0, &module_left };
		fd = try_build_id(f, &w, ret_name);
		if (fd < 0 && altname[0] == '/')
			fd = try_path(f, altname, &w, ret_name);
		dirname_of(file_name, dir, sizeof dir);
		if (fd < 0 && altname[0] != '/' &&
		    snprintf(path, sizeof path, "%s/%s", dir, altname) < (int)sizeof path)
			fd = try_path(f, path, &w, ret_name);
		if (fd < 0)
			fd = try_debuginfod(f, &w, ret_name);
	} else if (!debugfile) {
		GElf_Addr vaddr;
		int n = dwfl_module_build_id(mod, &id, &vaddr);
		idlen = n > 0 ? (size_t)n : 0;
		struct want w = { id, idlen, debuglink != NULL, crc, &module_left };
		fd = try_build_id(f, &w, ret_name);
		/* a debuglink is a file name, not a path to wander along */
		if (fd < 0 && debuglink && *debuglink && !strchr(debuglink, '/')) {
			dirname_of(mainfile ? mainfile : modname, dir, sizeof dir);
			/* beside the file, in .debug/ there, under DEBUG_DIR */
			static const char *const pre[] = { "", "", DEBUG_DIR };
			static const char *const sub[] = { "/", "/.debug/", "/" };
			for (size_t i = 0; fd < 0 && i < 3; i++)
				if (snprintf(path, sizeof path, "%s%s%s%s", pre[i], dir,
					     sub[i], debuglink) < (int)sizeof path)
					fd = try_path(f, path, &w, ret_name);
		}
		if (fd < 0)
			fd = try_debuginfod(f, &w, ret_name);
	}
	if (own)
		elf_end(from);
	if (fd >= 0 || f->transient != transient) {
		free(key);	/* found, or worth another search later */
		if (fd >= 0) {
			if (f->found_here && idlen)	/* kept inflated */
				fd = dbs_dbgcache_use(fd, id, idlen);
			return fd;
		}
	} else {
		search_failed(f, key);
	}
	errno = 0;	/* nothing found is not an error to libdwfl */
	return -1;
}
