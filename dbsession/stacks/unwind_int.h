/*
 * unwind_int.h: the unwinder's state, shared by its two files: unwind.c
 * (libdwfl's view of the target, and the walk of each thread's frames)
 * and unwind_sym.c (what each pc of a walk is called, cached per pc).
 */
#ifndef TINSPECT_DBS_UNWIND_INT_H
#define TINSPECT_DBS_UNWIND_INT_H

#include "dbs_int.h"

#include <elfutils/libdwfl.h>

struct sym_entry {
	uint64_t pc;		/* the pc looked up (adjusted), 0 = empty */
	const char *module, *build_id;
	uint64_t bias;		/* of the module, if any */
	struct dbs_frame *frames;	/* inline chain then the real frame */
	unsigned nframes;
};

struct dbs_unwinder {
	struct psvc_target *t;
	const struct arch_desc *arch;
	Dwfl *dwfl;
	Dwfl_Callbacks cb;
	struct dbg_files *files;	/* what libdwfl reads (debuginfo.c) */
	bool attached;
	uint64_t generation;	/* module generation the Dwfl reflects */
	/* modules reported to libdwfl, to re-report unchanged ones by name
	 * and range (a new descriptor for a known module is an "overlap") */
	struct reported {
		dev_t dev;
		ino_t ino;
		uint64_t map_start;
		char *name;
		Dwarf_Addr low, high;
	} *rep;
	size_t nrep;
	struct dbs_strpool *pool;	/* strings of the cache, shared with
					 * the snapshots that use them */
	struct sym_entry *cache;
	size_t cache_cap, cache_n;
	struct sym_entry scratch;	/* a pc outside every module */

	/* aarch64: the PAC bits of code addresses (0: none) and the vDSO's
	 * signal trampoline (0: none), for this module generation */
	uint64_t pac_mask;
	uint64_t sigtramp;

	/* the thread being unwound */
	const struct dbs_thread *cur;
	/* the registers a signal frame saved or a frame record gave, to
	 * start the next part of the walk from (NULL: the thread's own) */
	const uint64_t *restart_gregs;
	/* their pc is a return address (a frame record's): libdwfl gets
	 * it less 1, as it looks up the CFI of every caller */
	bool restart_at_return;
	bool missed;		/* a memory read missed the capture */
	uint64_t miss_addr;
	/* libdwfl started again where Go frames returned into other code:
	 * only pc and sp are known there */
	bool restart;
	uint64_t restart_pc, restart_sp;
};

/* unwind_sym.c: the frames (inline chain, then the real function) of
 * one pc, cached for this module generation; NULL out of memory. */
const struct sym_entry *dbs_unwind_lookup_pc(struct dbs_unwinder *u, uint64_t pc);
/* Forget every cached pc (new modules, or the cache is full). */
void dbs_unwind_cache_clear(struct dbs_unwinder *u);

#endif
