/*
 * ns.c: targets in other namespaces, and thread-local symbols.
 *
 * PID namespaces: libthread_db names threads by the TID of the target's
 * own namespace (ti_lid, and the lwpid_t of every ps_* callback), ptrace
 * needs ours; /proc/PID/task/TID/status "NSpid:" gives both
 * (GLIBC-NOTES.md §3).  The map from one to the other is a hash, so that a
 * container with thousands of threads does not make every callback a scan.
 *
 * Mount namespaces: a module's path in /proc/PID/maps is a path in the
 * target's mount namespace; when /proc/PID/map_files cannot be used the
 * file is opened through /proc/PID/root and must be proved to be the file
 * that is mapped: its build-id must equal the one in target memory (an
 * inode comparison is not enough: overlayfs shows different st_dev/st_ino
 * through stat() than in the maps).
 */
#include "psvc_int.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- PID namespaces -------------------------------------------------------- */

bool psvc_foreign_pidns(struct psvc_target *t)
{
	if (t->foreign_pidns >= 0)
		return t->foreign_pidns;
	char path[64], mine[64], theirs[64];
	snprintf(path, sizeof path, "/proc/%d/ns/pid", (int)t->mm_tid);
	ssize_t a = readlink("/proc/self/ns/pid", mine, sizeof mine - 1);
	ssize_t b = readlink(path, theirs, sizeof theirs - 1);
	if (a > 0 && b > 0) {
		t->foreign_pidns = a != b || memcmp(mine, theirs, (size_t)a) != 0;
		return t->foreign_pidns;
	}
	/* No ns links (old kernel, no permission): NSpid of the leader. */
	struct psvc_task *k = psvc_task_by_tid(t, t->pid);
	if (k && k->info.ns_tid)
		t->foreign_pidns = k->info.ns_tid != t->pid;
	return t->foreign_pidns > 0;
}

bool psvc_same_pidns(struct psvc_target *t)
{
	psvc_foreign_pidns(t);
	return t->foreign_pidns == 0;
}

struct psvc_task *psvc_task_by_ns_tid(struct psvc_target *t, pid_t ns_tid)
{
	struct psvc_task *k = psvc_task_by_ns_map(t, ns_tid);
	if (k)
		return k;
	k = psvc_task_by_tid(t, ns_tid);
	if (!k)
		return NULL;
	if (k->info.ns_tid == ns_tid)
		return k;
	/* a TID of ours that happens to equal the namespace TID asked for
	 * is only the same task if there is one namespace */
	if (k->info.ns_tid == 0 && psvc_same_pidns(t))
		return k;
	return NULL;
}

/* The last field of the "NSpid:" line of a status file, 0 if none. */
static pid_t parse_nspid(const char *buf)
{
	const char *p = strstr(buf, "\nNSpid:");
	if (!p)
		return 0;
	p += 7;
	long last = 0;
	for (int n = 0; n < 64; n++) {	/* at most 32 nested namespaces */
		while (*p == ' ' || *p == '\t')
			p++;
		char *end;
		long v = strtol(p, &end, 10);
		if (end == p)
			break;
		last = v;
		p = end;
	}
	return last > 0 && last <= INT32_MAX ? (pid_t)last : 0;
}

void psvc_resolve_late_ns_tids(struct psvc_target *t)
{
	if (!psvc_foreign_pidns(t))
		return;
	for (size_t i = 0; i < t->ntasks; i++) {
		struct psvc_task *k = &t->tasks[i];
		if (!(k->flags & PSVC_TASK_LATE) || k->info.ns_tid ||
		    (k->flags & PSVC_TASK_GONE))
			continue;
		char path[64], buf[4096];
		snprintf(path, sizeof path, "%d/status", (int)k->tid);
		if (read_file_at(t->task_dirfd, path, buf, sizeof buf, NULL))
			continue;
		k->info.ns_tid = parse_nspid(buf);
		psvc_task_index_ns(t, k);
	}
}

/* ---- build-ids in target memory ---------------------------------------------- */

#define MAX_NOTE 4096

/* Find NT_GNU_BUILD_ID in a PT_NOTE segment's bytes. */
static bool note_build_id(const unsigned char *p, size_t len, char out[41])
{
	size_t off = 0;
	for (int n = 0; n < 64 && off + 12 <= len; n++) {
		uint32_t namesz, descsz, type;
		memcpy(&namesz, p + off, 4);
		memcpy(&descsz, p + off + 4, 4);
		memcpy(&type, p + off + 8, 4);
		size_t name_off = off + 12;
		size_t desc_off = name_off + (((size_t)namesz + 3) & ~(size_t)3);
		size_t next = desc_off + (((size_t)descsz + 3) & ~(size_t)3);
		if (namesz > len || descsz > len || next > len || next <= off)
			return false;
		if (type == NT_GNU_BUILD_ID && namesz == 4 &&
		    !memcmp(p + name_off, "GNU", 4) && descsz > 0) {
			size_t k = descsz > 20 ? 20 : descsz;
			for (size_t i = 0; i < k; i++)
				snprintf(out + 2 * i, 3, "%02x", p[desc_off + i]);
			return true;
		}
		off = next;
	}
	return false;
}

int ns_mem_build_id(struct psvc_target *t, uint64_t base, char out[41])
{
	Elf64_Ehdr eh;
	if (psvc_read(t, base, &eh, sizeof eh) || memcmp(eh.e_ident, ELFMAG, SELFMAG) ||
	    eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh.e_phentsize != sizeof(Elf64_Phdr) || eh.e_phnum == 0 ||
	    eh.e_phnum > 256)
		return -EFAULT;
	Elf64_Phdr ph[256];
	if (psvc_read(t, base + eh.e_phoff, ph, eh.e_phnum * sizeof *ph))
		return -EFAULT;
	uint64_t lo = UINT64_MAX;
	for (unsigned i = 0; i < eh.e_phnum; i++)
		if (ph[i].p_type == PT_LOAD && ph[i].p_vaddr < lo)
			lo = ph[i].p_vaddr;
	if (lo == UINT64_MAX)
		return -ENOENT;
	uint64_t bias = base - (lo & ~(uint64_t)4095);
	int err = -ENOENT;
	for (unsigned i = 0; i < eh.e_phnum; i++) {
		if (ph[i].p_type != PT_NOTE || ph[i].p_filesz == 0)
			continue;
		size_t len = ph[i].p_filesz > MAX_NOTE ? MAX_NOTE
						       : (size_t)ph[i].p_filesz;
		unsigned char buf[MAX_NOTE];
		if (psvc_read(t, bias + ph[i].p_vaddr, buf, len)) {
			err = -EFAULT;
			continue;
		}
		if (note_build_id(buf, len, out))
			return 0;
	}
	return err;
}

int psvc_module_mem_build_id(struct psvc_target *t, struct psvc_module *m,
			     char out[41])
{
	if (!m->map_start || (m->flags & PSVC_MOD_VDSO))
		return -ENOENT;
	return ns_mem_build_id(t, m->map_start, out);
}

/* ---- thread-local symbols ----------------------------------------------------- */

static int tls_in(struct psvc_target *t, struct psvc_module *m,
		  const char *name, struct psvc_tls_symbol *ret)
{
	if (psvc_module_load_elf(t, m))
		return -ENOENT;
	const struct elf_sym *s = elfsym_lookup(m->elf, name);
	if (!s || s->type != STT_TLS)
		return -ENOENT;
	ret->module = m;
	ret->offset = s->value;
	ret->size = s->size;
	return 0;
}

int psvc_lookup_tls_symbol(struct psvc_target *t, const char *name,
			   unsigned want_flags, struct psvc_tls_symbol *ret)
{
	for (int pass = 0; pass < 2; pass++) {
		for (size_t i = 0; i < t->nmods; i++) {
			struct psvc_module *m = &t->mods[i];
			bool exe = m->flags & PSVC_MOD_EXE;
			if ((pass == 0) != exe || (m->flags & PSVC_MOD_VDSO))
				continue;
			if ((m->flags & want_flags) != want_flags)
				continue;
			if (tls_in(t, m, name, ret) == 0)
				return 0;
		}
	}
	return -ENOENT;
}
