/*
 * memelf.c: ELF images as the target has them mapped, read from its
 * memory: the program headers of the image at a mapping's start, the
 * lowest loaded address (what the load bias is measured from), and the
 * build-id in its PT_NOTE segments.  The module map computes biases with
 * it; a file opened by its path is accepted only if its build-id is the
 * one in memory (modfiles.c).  Target memory is untrusted: the counts are
 * bounded, a note that runs past its segment ends the search.
 */
#include "psvc_int.h"

#include <elf.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

int psvc_mem_phdrs(struct psvc_target *t, uint64_t base, Elf64_Ehdr *ret_eh,
		   Elf64_Phdr *ret_ph)
{
	Elf64_Ehdr *eh = ret_eh;
	if (psvc_read(t, base, eh, sizeof *eh) || memcmp(eh->e_ident, ELFMAG, SELFMAG) ||
	    eh->e_phentsize != sizeof(Elf64_Phdr) || eh->e_phnum == 0 ||
	    eh->e_phnum > PSVC_MEM_MAX_PHDRS)
		return -EFAULT;
	if (psvc_read(t, base + eh->e_phoff, ret_ph, eh->e_phnum * sizeof *ret_ph))
		return -EFAULT;
	return eh->e_phnum;
}

/* Lowest PT_LOAD p_vaddr, page-truncated; UINT64_MAX if none. */
static uint64_t first_load(const Elf64_Phdr *ph, int n)
{
	uint64_t lo = UINT64_MAX;
	for (int i = 0; i < n; i++)
		if (ph[i].p_type == PT_LOAD && ph[i].p_vaddr < lo)
			lo = ph[i].p_vaddr;
	return lo == UINT64_MAX ? lo : lo & ~(uint64_t)4095;
}

uint64_t psvc_mem_first_load(struct psvc_target *t, uint64_t base)
{
	Elf64_Ehdr eh;
	Elf64_Phdr ph[PSVC_MEM_MAX_PHDRS];
	int nph = psvc_mem_phdrs(t, base, &eh, ph);
	return nph < 0 ? UINT64_MAX : first_load(ph, nph);
}

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

int psvc_mem_build_id(struct psvc_target *t, uint64_t base, char out[41])
{
	Elf64_Ehdr eh;
	Elf64_Phdr ph[PSVC_MEM_MAX_PHDRS];
	int nph = psvc_mem_phdrs(t, base, &eh, ph);
	if (nph < 0 || eh.e_ident[EI_CLASS] != ELFCLASS64)
		return -EFAULT;
	uint64_t lo = first_load(ph, nph);
	if (lo == UINT64_MAX)
		return -ENOENT;
	uint64_t bias = base - lo;
	int err = -ENOENT;
	for (int i = 0; i < nph; i++) {
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
	return psvc_mem_build_id(t, m->map_start, out);
}
