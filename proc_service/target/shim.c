/*
 * shim.c: the proc_service callbacks libthread_db imports (docs/GLIBC.md
 * §1), each a few lines over the target-access layer.  tinspect is
 * read-only: every write and register-set callback refuses.  The lwpid_t
 * that libthread_db passes is a TID of the target's own PID namespace
 * (ti_lid); it is mapped back to ours before any ptrace use.
 */
#include "psvc_int.h"

#include "array.h"

#include <errno.h>
#include <proc_service.h>
#include <stdlib.h>
#include <string.h>

struct ps_prochandle {
	struct psvc_target *t;
};

struct ps_prochandle *psvc_prochandle(struct psvc_target *t)
{
	if (!t->ph) {
		t->ph = calloc(1, sizeof *t->ph);
		if (t->ph)
			t->ph->t = t;
	}
	return t->ph;
}

/* A task of the current capture by its namespace-local TID (ns.c: a
 * hash lookup, not a scan, so that a container with thousands of threads
 * stays linear). */
static struct psvc_task *task_by_lwp(struct psvc_target *t, lwpid_t lwp)
{
	return psvc_task_by_ns_tid(t, lwp);
}

int psvc_pin(struct psvc_target *t, uint64_t addr, const void *bytes,
	     size_t len)
{
	uint64_t end;
	if (len == 0 || len > sizeof t->pins->bytes || !psvc_add_ok(addr, len, &end))
		return -EINVAL;
	if (array_grow(&t->pins, &t->pins_cap, t->npins + 1, sizeof *t->pins, 64))
		return -ENOMEM;
	struct pin *p = &t->pins[t->npins++];
	p->addr = addr;
	p->len = len;
	memcpy(p->bytes, bytes, len);
	if (t->npins == 1 || addr < t->pins_lo)
		t->pins_lo = addr;
	if (t->npins == 1 || end > t->pins_hi)
		t->pins_hi = end;
	return 0;
}

void psvc_unpin_all(struct psvc_target *t)
{
	free(t->pins);
	t->pins = NULL;
	t->npins = t->pins_cap = 0;
}

/* Whether a pin starts at addr (a descriptor the layout check read). */
static bool pinned(const struct psvc_target *t, uint64_t addr)
{
	for (size_t i = 0; i < t->npins; i++)
		if (t->pins[i].addr == addr)
			return true;
	return false;
}

void psvc_tdb_budget(struct psvc_target *t, uint64_t reads)
{
	t->tdb_budget = reads;
	t->tdb_reads = 0;
}

/* Lay the pinned bytes over what was read at [addr, addr + len). */
static void overlay_pins(const struct psvc_target *t, uint64_t addr,
			 unsigned char *buf, size_t len)
{
	uint64_t end = addr + len;	/* psvc_read refused a wrapping range */
	if (!t->npins || end <= t->pins_lo || addr >= t->pins_hi)
		return;
	for (size_t i = 0; i < t->npins; i++) {
		const struct pin *p = &t->pins[i];
		uint64_t lo = p->addr > addr ? p->addr : addr;
		uint64_t hi = p->addr + p->len < end ? p->addr + p->len : end;
		if (lo < hi)
			memcpy(buf + (lo - addr), p->bytes + (lo - p->addr),
			       (size_t)(hi - lo));
	}
}

ps_err_e ps_pdread(struct ps_prochandle *ph, psaddr_t addr, void *buf,
		   size_t size)
{
	struct psvc_target *t = ph->t;
	t->tdb_reads++;
	if (t->tdb_budget && t->tdb_reads > t->tdb_budget)
		return PS_ERR;
	/* a loop in libthread_db must not outlast the freeze limit or ^C */
	if ((t->tdb_reads & 63) == 0 && t->stopped && psvc_check_freeze(t))
		return PS_ERR;
	uint64_t a = (uint64_t)(uintptr_t)addr;
	if (psvc_read(t, a, buf, size))
		return PS_ERR;
	overlay_pins(t, a, buf, size);
	return PS_OK;
}

ps_err_e ps_pdwrite(struct ps_prochandle *ph, psaddr_t addr, const void *buf,
		    size_t size)
{
	(void)ph, (void)addr, (void)buf, (void)size;
	return PS_ERR;	/* read-only: inspection must not change the target */
}

ps_err_e ps_ptread(struct ps_prochandle *ph, psaddr_t addr, void *buf,
		   size_t size)
{
	return ps_pdread(ph, addr, buf, size);
}

ps_err_e ps_ptwrite(struct ps_prochandle *ph, psaddr_t addr, const void *buf,
		    size_t size)
{
	return ps_pdwrite(ph, addr, buf, size);
}

ps_err_e ps_lgetregs(struct ps_prochandle *ph, lwpid_t lwp, prgregset_t regs)
{
	struct psvc_task *k = task_by_lwp(ph->t, lwp);
	if (!k || !(k->flags & PSVC_TASK_HAVE_REGS))
		return PS_ERR;
	_Static_assert(sizeof(prgregset_t) <= sizeof k->gregs, "prgregset_t");
	memcpy(regs, k->gregs, sizeof(prgregset_t));
	return PS_OK;
}

ps_err_e ps_lsetregs(struct ps_prochandle *ph, lwpid_t lwp,
		     const prgregset_t regs)
{
	(void)ph, (void)lwp, (void)regs;
	return PS_ERR;
}

ps_err_e ps_lgetfpregs(struct ps_prochandle *ph, lwpid_t lwp,
		       prfpregset_t *regs)
{
	struct psvc_task *k = task_by_lwp(ph->t, lwp);
	if (!k || !(k->flags & PSVC_TASK_STOPPED))
		return PS_ERR;
	return psvc_task_fpregs(ph->t, k, regs, sizeof *regs) ? PS_ERR : PS_OK;
}

ps_err_e ps_lsetfpregs(struct ps_prochandle *ph, lwpid_t lwp,
		       const prfpregset_t *regs)
{
	(void)ph, (void)lwp, (void)regs;
	return PS_ERR;
}

pid_t ps_getpid(struct ps_prochandle *ph)
{
	return ph->t->pid;
}

ps_err_e ps_get_thread_area(struct ps_prochandle *ph, lwpid_t lwp, int idx,
			    void **base)
{
	struct psvc_task *k = task_by_lwp(ph->t, lwp);
	if (!k || !(k->flags & PSVC_TASK_HAVE_REGS) || !k->tp)
		return PS_ERR;
	*base = (void *)(uintptr_t)arch_thread_area(ph->t->arch, k->tp, idx);
	return PS_OK;
}

ps_err_e ps_pglobal_lookup(struct ps_prochandle *ph, const char *object,
			   const char *name, psaddr_t *addr)
{
	(void)object;	/* always "libpthread.so.0": meaningless since 2.34 */
	uint64_t a;
	if (psvc_lookup_symbol(ph->t, name, &a))
		return PS_NOSYM;
	if (!strncmp(name, "_thread_db_pthread_", 19) && !pinned(ph->t, a))
		/* a field of struct pthread the layout check did not see:
		 * copies of descriptors must be whole (session.c) */
		ph->t->tdb_unknown_field = true;
	*addr = (psaddr_t)(uintptr_t)a;
	return PS_OK;
}

bool psvc_tdb_unknown_field(const struct psvc_target *t)
{
	return t->tdb_unknown_field;
}

/* Never called by glibc's libthread_db; defined so that it links against
 * any build, and refusing because tinspect does the stopping itself. */
ps_err_e ps_pstop(struct ps_prochandle *ph)
{
	(void)ph;
	return PS_ERR;
}

ps_err_e ps_pcontinue(struct ps_prochandle *ph)
{
	(void)ph;
	return PS_ERR;
}

ps_err_e ps_lstop(struct ps_prochandle *ph, lwpid_t lwp)
{
	(void)ph, (void)lwp;
	return PS_ERR;
}

ps_err_e ps_lcontinue(struct ps_prochandle *ph, lwpid_t lwp)
{
	(void)ph, (void)lwp;
	return PS_ERR;
}
