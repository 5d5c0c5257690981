/*
 * lock_names.c: the names of the lock analysis' enumerations, as the JSON
 * document and the text report spell them (schema/, man/tinspect.1).
 */
#include "dbs_int.h"

const char *dbs_lock_kind_name(enum dbs_lock_kind k)
{
	switch (k) {
	case DBS_LOCK_FUTEX: return "futex";
	case DBS_LOCK_MUTEX: return "mutex";
	case DBS_LOCK_RWLOCK: return "rwlock";
	case DBS_LOCK_COND: return "cond";
	case DBS_LOCK_SEM: return "sem";
	case DBS_LOCK_BARRIER: return "barrier";
	case DBS_LOCK_JOIN: return "join";
	case DBS_LOCK_FILE: return "file";
	}
	return "futex";
}

const char *dbs_owner_state_name(enum dbs_owner_state s)
{
	switch (s) {
	case DBS_OWNER_NONE: return "none";
	case DBS_OWNER_LIVE: return "live";
	case DBS_OWNER_DEAD: return "dead";
	case DBS_OWNER_OUTSIDE: return "outside";
	case DBS_OWNER_UNKNOWN: return "unknown";
	}
	return "unknown";
}

const char *dbs_mutex_type_name(unsigned type)
{
	static const char *const n[4] = { "normal", "recursive", "errorcheck",
					   "adaptive" };
	return n[type & 3];
}

const char *dbs_evidence_name(unsigned bit)
{
	switch (bit) {
	case DBS_EV_SYSCALL: return "syscall";
	case DBS_EV_RESTART: return "restart_syscall";
	case DBS_EV_PROC: return "proc";
	case DBS_EV_WORDS: return "words";
	case DBS_EV_SYMBOL: return "symbol";
	case DBS_EV_FRAMES: return "frames";
	case DBS_EV_THREAD: return "thread";
	case DBS_EV_KERNEL: return "kernel_pi";
	case DBS_EV_REGISTERS: return "registers";
	case DBS_EV_SHARED: return "shared";
	case DBS_EV_CLEANUP: return "cleanup";
	case DBS_EV_PAIR: return "pair";
	}
	return NULL;
}

const char *dbs_stall_end_name(enum dbs_stall_end e)
{
	switch (e) {
	case DBS_STALL_SYSCALL: return "syscall";
	case DBS_STALL_WAIT: return "wait";
	case DBS_STALL_ORPHAN: return "orphan";
	case DBS_STALL_STOPPED: return "stopped";
	}
	return "wait";
}
