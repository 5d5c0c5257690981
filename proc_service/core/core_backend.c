/*
 * core_backend.c: the core-file backend (backend.h) over the core reader
 * (core.h).  The rest of proc_service - the task list, the page cache, the
 * module map from r_debug/link_map, the ps_* shim libthread_db calls - runs
 * over it exactly as over a live process.
 *
 * What a core gives and what it cannot:
 *   - tasks from NT_PRSTATUS, in note order; "stopping" them only marks
 *     them held (the core is frozen already) and resuming lets them go;
 *   - registers and the thread pointer from the notes;
 *   - the syscall each thread was in from its saved registers (x86_64:
 *     orig_rax and the argument registers; aarch64: NT_ARM_SYSTEM_CALL
 *     when it names one, else x8 when the pc is on an svc instruction, as
 *     the kernel leaves a thread whose call it interrupted, docs/ARCH.md);
 *   - none of /proc's per-task facts (state letter, wchan, CPU times,
 *     scheduling): the task info stays not valid, which the report shows
 *     as null.  Thread names are not in a core either; the main thread's
 *     is the executable's name (pr_fname), the one fact there is;
 *   - the mappings from the PT_LOAD segments and NT_FILE (core.h), each
 *     distinct file given an inode number of its own so that the module
 *     code tells files apart as it does with /proc/PID/maps;
 *   - the files behind them by their NT_FILE path under the sysroot (and
 *     --exe for the executable), accepted only when the build-id in the
 *     file is the one in the core's memory.  A missing file, another
 *     build-id, or one that cannot be checked is a warning and that
 *     module's symbols stay unknown (open_mapped fails);
 *   - memory from the core; where the producer left out the bytes of a
 *     read-only file mapping (a kernel core keeps only the first page of
 *     each ELF file under the default coredump_filter, gcore leaves out
 *     whole text segments) they are read from that checked file, as gdb and
 *     eu-stack do: a mapping nobody wrote to is the file.  A writable
 *     mapping left out is unreadable (the file is not what was there).
 */
#include "psvc_int.h"
#include "core.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

enum cfile_state {
	CF_UNCHECKED = 0,
	CF_CHECKING,	/* its build-id is being read: no file fallback */
	CF_OK,
	CF_REFUSED,
};

/* One distinct NT_FILE path. */
struct cfile {
	const char *path;	/* the core's NT_FILE path */
	uint64_t base;		/* start of its offset-0 mapping, 0 if none */
	bool deleted;		/* the path ended in " (deleted)", cut */
	int fd;
	enum cfile_state state;
	int err;		/* REFUSED: why (negative errno) */
};

struct corebk {
	struct psvc_core *c;
	char *sysroot;		/* NULL: "/" */
	char *exe;		/* --exe, or NULL */
	struct cfile *files;
	size_t nfiles;
	struct psvc_tidmap by_tid;	/* TID -> index of its first note */
};

static struct corebk *cb(const struct psvc_target *t)
{
	return t->backend_data;
}

/* The thread of the core with that TID (its first NT_PRSTATUS), in O(1):
 * every task asks once per capture. */
static const struct psvc_core_thread *core_thread(struct psvc_target *t, pid_t tid)
{
	long i = psvc_tidmap_get(&cb(t)->by_tid, tid);
	return i < 0 ? NULL : psvc_core_thread_at(cb(t)->c, (size_t)i);
}

/* ---- files ------------------------------------------------------------------- */

static struct cfile *cfile_by_path(struct corebk *B, const char *path)
{
	if (!path)
		return NULL;
	for (size_t i = 0; i < B->nfiles; i++)
		if (!strcmp(B->files[i].path, path))
			return &B->files[i];
	return NULL;
}

static int collect_files(struct corebk *B)
{
	size_t n = psvc_core_nfiles(B->c);
	B->files = calloc(n ? n : 1, sizeof *B->files);
	if (!B->files)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		const struct psvc_core_file *f = psvc_core_file_at(B->c, i);
		if (!f->path || f->path[0] != '/')
			continue;
		struct cfile *cf = cfile_by_path(B, f->path);
		if (!cf) {
			cf = &B->files[B->nfiles++];
			cf->path = f->path;
			cf->fd = -1;
		}
		if (f->offset == 0 && (!cf->base || f->start < cf->base))
			cf->base = f->start;
		cf->deleted |= f->deleted;
	}
	return 0;
}

/* The hex build-id in the ELF file's notes; -ENOENT if none, -ENOEXEC if
 * it is no ELF file. */
static int file_build_id(int fd, char out[41])
{
	out[0] = '\0';
	elf_version(EV_CURRENT);
	Elf *e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!e)
		return -ENOEXEC;
	int ret = -ENOENT;
	size_t phnum;
	if (elf_kind(e) != ELF_K_ELF || elf_getphdrnum(e, &phnum)) {
		ret = -ENOEXEC;
		goto out;
	}
	for (size_t i = 0; i < phnum && ret == -ENOENT; i++) {
		GElf_Phdr ph;
		if (!gelf_getphdr(e, (int)i, &ph) || ph.p_type != PT_NOTE)
			continue;
		Elf_Data *d = elf_getdata_rawchunk(e, (int64_t)ph.p_offset,
						   ph.p_filesz, ELF_T_NHDR);
		if (!d)
			continue;
		size_t off = 0, noff, doff;
		GElf_Nhdr nh;
		while ((off = gelf_getnote(d, off, &nh, &noff, &doff)) > 0) {
			if (nh.n_type != NT_GNU_BUILD_ID || nh.n_namesz != 4 ||
			    memcmp((const char *)d->d_buf + noff, "GNU", 4) ||
			    nh.n_descsz == 0 || nh.n_descsz > 20)
				continue;
			const unsigned char *p = (const unsigned char *)d->d_buf + doff;
			for (size_t k = 0; k < nh.n_descsz; k++)
				snprintf(out + 2 * k, 3, "%02x", p[k]);
			ret = 0;
			break;
		}
	}
out:
	elf_end(e);
	return ret;
}

/*
 * Without a build-id on either side, the file's first page against the
 * core's copy of it (the kernel dumps the first page of every ELF mapping,
 * gcore keeps it too): the ELF and program headers and what follows them
 * (notes, dynamic symbols and strings), read-only and never relocated.
 * 1: the same, 0: they differ, -1: nothing to compare (the core lacks the
 * page, the file cannot be read).
 */
static int first_page_cmp(struct psvc_target *t, int fd, uint64_t base,
			  size_t *ret_len)
{
	unsigned char f[4096], m[4096];
	ssize_t n = pread(fd, f, sizeof f, 0);
	if (n <= 0 || psvc_read(t, base, m, (size_t)n) != 0)
		return -1;
	*ret_len = (size_t)n;
	return memcmp(f, m, (size_t)n) == 0;
}

/* Open the file behind cf and prove it is the one the core mapped.  The
 * first time only; the answer (and a warning) is kept. */
static int cfile_check(struct psvc_target *t, struct cfile *cf, bool is_exe)
{
	struct corebk *B = cb(t);
	if (cf->state == CF_OK)
		return 0;
	if (cf->state == CF_REFUSED)
		return cf->err;
	if (cf->state == CF_CHECKING)
		return -EAGAIN;
	cf->state = CF_CHECKING;
	char full[PATH_MAX];
	const char *name = cf->path;
	if (is_exe && B->exe) {
		name = B->exe;
	} else {
		int n = snprintf(full, sizeof full, "%s%s",
				 B->sysroot ? B->sysroot : "", cf->path);
		if (n < 0 || (size_t)n >= sizeof full) {
			cf->err = -ENAMETOOLONG;
			goto refused;
		}
		name = full;
	}
	/* a path the core names: by a worker, within a bound */
	struct psvc_fileinfo fi;
	int fd = psvc_file_open(t, name, &fi);
	if (fd == -ENOENT && cf->deleted && name == full &&
	    strlen(full) + sizeof " (deleted)" <= sizeof full) {
		/* " (deleted)" may end the file's own name, not be the
		 * kernel's mark of an unlinked file: the build-id decides */
		strcat(full, " (deleted)");
		fd = psvc_file_open(t, full, &fi);
		if (fd < 0) {
			full[strlen(full) - (sizeof " (deleted)" - 1)] = '\0';
			fd = -ENOENT;
		}
	}
	if (fd < 0) {
		cf->err = fd;
		psvc_target_warn(t, "%s: %s: %s; its symbols are unknown", cf->path,
				 name, psvc_open_strerror(fd));
		goto refused_quiet;
	}
	char fid[41], mid[41];
	int rf = file_build_id(fd, fid);
	int rm = cf->base ? psvc_mem_build_id(t, cf->base, mid) : -EFAULT;
	if (rf == 0 && rm == 0 && !strcmp(fid, mid)) {
		cf->fd = fd;
		cf->state = CF_OK;
		return 0;
	}
	size_t cmp_len = 0;
	int same = rf == -ENOENT && rm == -ENOENT && cf->base
		   ? first_page_cmp(t, fd, cf->base, &cmp_len) : -1;
	if (same == 1) {
		psvc_target_warn(t, "%s: no build-id in %s nor in the core; taken "
				 "as the mapped file because its first %zu bytes "
				 "are the core's copy", cf->path, name, cmp_len);
		cf->fd = fd;
		cf->state = CF_OK;
		return 0;
	}
	close(fd);
	if (same == 0) {
		cf->err = -ESTALE;
		psvc_target_warn(t, "%s: %s has no build-id and its first page "
				 "differs from the core's copy: not the file that "
				 "was mapped; its symbols are unknown", cf->path, name);
	} else if (rf == 0 && rm == 0) {
		cf->err = -ESTALE;
		psvc_target_warn(t, "%s: %s has build-id %s, the core's has %s: "
				 "not the file that was mapped; its symbols are "
				 "unknown", cf->path, name, fid, mid);
	} else if (rf == -ENOEXEC) {
		cf->err = -ENOEXEC;
		psvc_target_warn(t, "%s: %s is not an ELF file; its symbols are "
				 "unknown", cf->path, name);
	} else {
		cf->err = -ENOKEY;	/* nothing to prove it by */
		psvc_target_warn(t, "%s: %s cannot be proved to be the mapped "
				 "file (build-id %s in the file, %s in the core); "
				 "its symbols are unknown", cf->path, name,
				 rf == 0 ? fid : "none",
				 rm == 0 ? "none in its ELF header" :
				 rm == -ENOENT ? "none" : "unreadable");
	}
	goto refused_quiet;
refused:
	psvc_target_warn(t, "%s: %s; its symbols are unknown", cf->path,
			 strerror(-cf->err));
refused_quiet:
	cf->state = CF_REFUSED;
	return cf->err;
}

static bool cfile_is_exe(struct corebk *B, const struct cfile *cf)
{
	const struct psvc_core_file *e = psvc_core_exe(B->c);
	return e && e->path && !strcmp(e->path, cf->path);
}

static int core_open_mapped(struct psvc_target *t, const struct psvc_module *m,
			    bool *ret_by_path, struct stat *ret_st)
{
	struct corebk *B = cb(t);
	struct cfile *cf = cfile_by_path(B, m->path);
	if (!cf)
		return -ENOENT;
	int err = cfile_check(t, cf, cfile_is_exe(B, cf));
	if (err)
		return err;
	/* checked by build-id here: it is the mapped file */
	*ret_by_path = false;
	int fd = fcntl(cf->fd, F_DUPFD_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (ret_st && fstat(fd, ret_st)) {
		close(fd);
		return -EIO;
	}
	return fd;
}

/* ---- memory ------------------------------------------------------------------ */

/* Bytes at addr the core left out of a read-only file mapping, from the
 * checked file: how many (a prefix of len), or a negative errno. */
static long from_file(struct psvc_target *t, uint64_t addr, void *buf, size_t len)
{
	struct corebk *B = cb(t);
	struct psvc_map mp;
	if (psvc_core_map_lookup(B->c, addr, &mp, NULL) == 0 && mp.perms[1] == 'w')
		return -ENODATA;	/* written to: the file is not it */
	const struct psvc_core_file *f = psvc_core_file_for_addr(B->c, addr);
	if (!f)
		return -ENODATA;
	struct cfile *cf = cfile_by_path(B, f->path);
	if (!cf || cfile_check(t, cf, cfile_is_exe(B, cf)))
		return -ENODATA;
	uint64_t n = f->end - addr < len ? f->end - addr : len;
	ssize_t r = pread(cf->fd, buf, n, (off_t)(f->offset + (addr - f->start)));
	if (r <= 0)
		return -EFAULT;	/* past the end of the file: SIGBUS live */
	return r;
}

static int core_read(struct psvc_target *t, uint64_t addr, void *buf, size_t len)
{
	struct corebk *B = cb(t);
	unsigned char *p = buf;
	t->read_syscalls++;
	while (len) {
		uint64_t n = psvc_core_extent(B->c, addr, len);
		if (n) {
			int err = psvc_core_read(B->c, addr, p, n, NULL);
			if (err)
				return err;
		} else {
			struct psvc_core_miss miss;
			int err = psvc_core_read(B->c, addr, p, 1, &miss);
			if (!err) {
				n = 1;
			} else {
				if (miss.kind != PSVC_CORE_MISS_LEFT_OUT)
					return err;
				long r = from_file(t, addr, p, len);
				if (r < 0)
					return err;
				n = (uint64_t)r;
			}
		}
		addr += n;
		p += n;
		len -= n;
	}
	return 0;
}

/* A run read into its segments: each part that goes somewhere is read,
 * the others checked readable; done is the prefix that was. */
static void core_read_segs(struct psvc_target *t, struct psvc_run *r)
{
	uint64_t a = r->addr;
	for (size_t s = 0; s < r->nsegs; s++) {
		const struct psvc_seg *g = &r->segs[s];
		bool ok = g->buf ? core_read(t, a, g->buf, g->len) == 0
				 : psvc_core_extent(cb(t)->c, a, g->len) == g->len;
		if (!ok)
			return;
		r->done += g->len;
		a += g->len;
	}
}

static void core_read_runs(struct psvc_target *t, struct psvc_run *runs, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct psvc_run *r = &runs[i];
		r->done = 0;
		if (r->segs) {
			core_read_segs(t, r);
			continue;
		}
		/* most runs are in the core whole: one copy */
		if (psvc_core_extent(cb(t)->c, r->addr, r->len) == r->len &&
		    psvc_core_read(cb(t)->c, r->addr, r->buf, r->len, NULL) == 0) {
			t->read_syscalls++;
			r->done = r->len;
			continue;
		}
		/* whole 4 KiB blocks: as many as can be read */
		while (r->done < r->len) {
			size_t blk = r->len - r->done < 4096 ? r->len - r->done : 4096;
			if (core_read(t, r->addr + r->done,
				      (unsigned char *)r->buf + r->done, blk))
				break;
			r->done += blk;
		}
	}
}

/* ---- tasks ------------------------------------------------------------------- */

/* What stands in for /proc/TID/syscall (arch_decode_syscall's hint): on
 * aarch64 the kernel's syscallno note if it names a call, else the call
 * an svc at the pc is about to make again. */
static long syscall_hint(struct psvc_target *t, const struct psvc_core_thread *ct)
{
	if (!t->arch->syscall_needs_hint)
		return -1;
	if (ct->have_syscallno && ct->syscallno >= 0)
		return ct->syscallno;
	unsigned char b[4];
	if (core_read(t, arch_pc(t->arch, ct->gregs), b, sizeof b))
		return -1;
	uint32_t insn = (uint32_t)b[0] | (uint32_t)b[1] << 8 |
			(uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
	return arch_syscall_at_insn(t->arch, ct->gregs, insn);
}

static void task_info(struct psvc_target *t, const struct psvc_core_thread *ct,
		      struct psvc_taskinfo *ti)
{
	struct corebk *B = cb(t);
	memset(ti, 0, sizeof *ti);
	ti->sc_nr = -1;
	/* no /proc: valid stays false (state, wchan, times unknown) */
	ti->before_stop = true;
	/* the kernel writes TIDs as the process's own PID namespace numbers
	 * them (fs/binfmt_elf.c, task_pid_vnr): libthread_db's */
	ti->ns_tid = ct->tid;
	if (ct->tid == t->pid) {
		const struct psvc_core_proc *pr = psvc_core_proc(B->c);
		const char *name = pr->have_psinfo ? pr->fname : NULL;
		if (name) {
			ti->comm_len = strnlen(name, 16);
			memcpy(ti->comm, name, ti->comm_len);
		}
	}
	if (ct->have_regs) {
		struct arch_syscall sc;
		arch_decode_syscall(t->arch, ct->gregs, syscall_hint(t, ct), &sc);
		if (sc.nr >= 0) {
			ti->sc_kind = PSVC_SC_IN_SYSCALL;
			ti->sc_nr = sc.nr;
			memcpy(ti->sc_args, sc.args, sizeof ti->sc_args);
			ti->sc_sp = arch_sp(t->arch, ct->gregs);
			ti->sc_pc = arch_pc(t->arch, ct->gregs);
		}
	}
}

static int core_scan(struct psvc_target *t, bool lean)
{
	(void)lean;	/* a core's tasks have no /proc facts to leave out */
	struct corebk *B = cb(t);
	psvc_tasks_clear(t);
	for (size_t i = 0; i < psvc_core_nthreads(B->c); i++) {
		const struct psvc_core_thread *ct = psvc_core_thread_at(B->c, i);
		if (ct->tid <= 0 || core_thread(t, ct->tid) != ct)
			continue;	/* the first note of a TID counts */
		struct psvc_task *k = psvc_task_add(t, ct->tid);
		if (!k)
			return -ENOMEM;
		task_info(t, ct, &k->info);
	}
	return t->ntasks ? (int)t->ntasks : -ESRCH;
}

static int core_stop(struct psvc_target *t, const struct psvc_stop_opts *opts)
{
	(void)opts;
	for (size_t i = 0; i < t->ntasks; i++) {
		psvc_task_seized(t, &t->tasks[i]);
		psvc_task_stopped(&t->tasks[i], 0, false, true);
	}
	return (int)t->ntasks;
}

static void core_resume(struct psvc_target *t)
{
	for (size_t i = 0; i < t->ntasks; i++)
		psvc_task_released(&t->tasks[i]);
}

static int core_regs(struct psvc_target *t, struct psvc_task *k)
{
	const struct psvc_core_thread *ct = core_thread(t, k->tid);
	if (!ct)
		return -ESRCH;
	if (!ct->have_regs)
		return -ENODATA;
	memcpy(k->gregs, ct->gregs, sizeof k->gregs);
	k->tp = ct->have_tp ? ct->tp : 0;
	return 0;
}

static int core_fpregs(struct psvc_target *t, struct psvc_task *k, void *buf,
		       size_t len)
{
	const struct psvc_core_thread *ct = core_thread(t, k->tid);
	if (!ct)
		return -ESRCH;
	if (!ct->fpregs || ct->fpregs_len < len)
		return -ENODATA;
	memcpy(buf, ct->fpregs, len);
	return 0;
}

static int core_task_facts(struct psvc_target *t, pid_t tid,
			   struct psvc_taskinfo *ret)
{
	const struct psvc_core_thread *ct = core_thread(t, tid);
	if (!ct)
		return -ESRCH;
	task_info(t, ct, ret);
	return 0;
}

static bool core_alive(struct psvc_target *t)
{
	(void)t;
	return true;	/* what a core holds does not go away */
}

static int core_signal(struct psvc_target *t, struct psvc_signal_info *ret)
{
	const struct psvc_core_thread *ct = psvc_core_signalled_thread(cb(t)->c);
	if (!ct)
		return -ENODATA;
	memset(ret, 0, sizeof *ret);
	ret->tid = ct->tid;
	ret->signo = ct->have_siginfo ? ct->si.signo : ct->cursig;
	ret->have_siginfo = ct->have_siginfo;
	if (ct->have_siginfo) {
		ret->code = ct->si.code;
		ret->err = ct->si.err;
		ret->have_addr = ct->si.have_addr;
		ret->addr = ct->si.addr;
		ret->have_sender = ct->si.have_sender;
		ret->sender_pid = ct->si.sender_pid;
		ret->sender_uid = ct->si.sender_uid;
	}
	return 0;
}

/* ---- the address space ------------------------------------------------------ */

static int core_maps(struct psvc_target *t, struct psvc_mapping **ret,
		     size_t *ret_n)
{
	struct corebk *B = cb(t);
	size_t n = psvc_core_nmaps(B->c);
	struct psvc_mapping *v = calloc(n ? n : 1, sizeof *v);
	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		const struct psvc_map *m = &psvc_core_map_at(B->c, i)->map;
		v[i].start = m->start;
		v[i].end = m->end;
		v[i].offset = m->offset;
		memcpy(v[i].perms, m->perms, sizeof v[i].perms);
		v[i].deleted = m->deleted;
		if (m->path) {
			v[i].path = strdup(m->path);
			if (!v[i].path) {
				psvc_maps_free(v, i);
				return -ENOMEM;
			}
		}
		/* an inode number of its own per file (never 0: a file) */
		struct cfile *cf = cfile_by_path(B, m->path);
		if (cf)
			v[i].ino = (ino_t)(cf - B->files) + 1;
	}
	*ret = v;
	*ret_n = n;
	return 0;
}

static int core_root_dir(struct psvc_target *t, char *buf, size_t len)
{
	const char *r = cb(t)->sysroot ? cb(t)->sysroot : "/";
	if (strlen(r) >= len)
		return -ENAMETOOLONG;
	strcpy(buf, r);
	return 0;
}

static int core_same_ns(struct psvc_target *t, const char *ns)
{
	if (!strcmp(ns, "pid"))
		return 1;	/* its TIDs are its own namespace's (task_info) */
	if (!strcmp(ns, "mnt"))
		return cb(t)->sysroot ? 0 : 1;
	return -1;
}

static int core_stack_rlimit(struct psvc_target *t, uint64_t *ret_bytes)
{
	(void)t;
	(void)ret_bytes;
	return -ENODATA;	/* not in a core */
}

static void core_close(struct psvc_target *t)
{
	struct corebk *B = cb(t);
	if (!B)
		return;
	psvc_files_close(t);	/* the file helper ends with its socket */
	for (size_t i = 0; i < B->nfiles; i++)
		if (B->files[i].fd >= 0)
			close(B->files[i].fd);
	free(B->files);
	psvc_tidmap_clear(&B->by_tid);
	psvc_core_close(B->c);
	free(B->sysroot);
	free(B->exe);
	free(B);
	t->backend_data = NULL;
}

static const struct psvc_backend core_backend = {
	.name = "core",
	.close = core_close,
	.scan = core_scan,
	.stop = core_stop,
	.resume = core_resume,
	.regs = core_regs,
	.fpregs = core_fpregs,
	.task_facts = core_task_facts,
	.alive = core_alive,
	.read = core_read,
	.read_runs = core_read_runs,
	.maps = core_maps,
	.open_mapped = core_open_mapped,
	.root_dir = core_root_dir,
	.same_ns = core_same_ns,
	.stack_rlimit = core_stack_rlimit,
	.signal = core_signal,
};

/* ---- open -------------------------------------------------------------------- */

/* The command line as far as a core says it: pr_psargs, the first 80
 * bytes with the arguments joined by blanks (the producer's doing; an
 * argument holding a blank cannot be told apart). */
static void set_cmdline(struct psvc_target *t, const struct psvc_core_proc *pr)
{
	if (!pr->have_psinfo || !pr->psargs[0])
		return;
	size_t len = strnlen(pr->psargs, sizeof pr->psargs - 1);
	char *buf = malloc(len + 1);
	if (!buf)
		return;
	size_t o = 0;
	for (size_t i = 0; i < len; i++) {
		if (pr->psargs[i] == ' ') {
			if (o && buf[o - 1] != '\0')
				buf[o++] = '\0';
		} else {
			buf[o++] = pr->psargs[i];
		}
	}
	if (o && buf[o - 1] != '\0')
		buf[o++] = '\0';
	psvc_target_set_cmdline(t, buf, o);
}

int psvc_open_core(const char *path, const struct psvc_core_open_opts *opts,
		   struct psvc_target **ret, char *why, size_t whylen)
{
	if (why && whylen)
		why[0] = '\0';
	struct corebk *B = calloc(1, sizeof *B);
	if (!B)
		return -ENOMEM;
	int err = psvc_core_open(path, NULL, &B->c, why, whylen);
	if (err) {
		free(B);
		return err;
	}
	if (psvc_core_arch(B->c) != arch_host()) {
		if (why && whylen)
			snprintf(why, whylen, "a core of another architecture "
				 "(%s) than this tinspect's (%s)",
				 psvc_core_arch(B->c)->name, arch_host()->name);
		psvc_core_close(B->c);
		free(B);
		return -ENOEXEC;
	}
	if (opts && opts->sysroot && opts->sysroot[0]) {
		/* "/" and "" are the host's root: no prefix */
		size_t l = strlen(opts->sysroot);
		while (l > 1 && opts->sysroot[l - 1] == '/')
			l--;
		if (!(l == 1 && opts->sysroot[0] == '/'))
			B->sysroot = strndup(opts->sysroot, l);
	}
	if (opts && opts->exe)
		B->exe = strdup(opts->exe);
	const struct psvc_core_proc *pr = psvc_core_proc(B->c);
	pid_t pid = pr->have_psinfo && pr->pid > 0 ? pr->pid : 0;
	if (!pid && psvc_core_nthreads(B->c))
		pid = psvc_core_thread_at(B->c, 0)->tid;
	struct psvc_target *t = NULL;
	if ((opts && opts->sysroot && !B->sysroot && opts->sysroot[0] &&
	     strcmp(opts->sysroot, "/")) || (opts && opts->exe && !B->exe) ||
	    collect_files(B) ||
	    !(t = psvc_target_new(&core_backend, B, pid, arch_host(),
				  opts ? opts->holding : NULL))) {
		core_close(&(struct psvc_target){ .backend_data = B });
		return -ENOMEM;
	}
	t->cancel = opts ? opts->cancel : NULL;
	for (size_t i = psvc_core_nthreads(B->c); i-- > 0;) {
		/* backwards: the first note of a TID is the one kept */
		pid_t tid = psvc_core_thread_at(B->c, i)->tid;
		if (tid > 0 && psvc_tidmap_put(&B->by_tid, tid, (uint32_t)i)) {
			psvc_close(t);
			return -ENOMEM;
		}
	}
	if (psvc_core_nthreads(B->c) == 0) {
		if (why && whylen)
			snprintf(why, whylen, "the core holds no thread (no "
				 "NT_PRSTATUS note)");
		psvc_close(t);
		return -EBADMSG;
	}
	const uint64_t *av;
	size_t nav = psvc_core_auxv_vec(B->c, &av);
	psvc_target_set_auxv(t, av, nav * 16);
	const struct psvc_core_file *exe = psvc_core_exe(B->c);
	if (exe) {
		char p[PATH_MAX];
		snprintf(p, sizeof p, "%s%s", exe->path,
			 exe->deleted ? " (deleted)" : "");
		psvc_target_set_exe(t, p);
	}
	set_cmdline(t, pr);
	const struct psvc_core_sizes *sz = psvc_core_sizes(B->c);
	if (sz->file < sz->expected)
		psvc_target_warn(t, "core: truncated: %" PRIu64 " of the %" PRIu64
				 " bytes its headers describe; the memory past the "
				 "end is unreadable", sz->file, sz->expected);
	for (size_t i = 0; i < psvc_core_nwarnings(B->c); i++)
		psvc_target_warn(t, "core: %s", psvc_core_warning_at(B->c, i));
	*ret = t;
	return 0;
}
