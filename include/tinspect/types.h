/*
 * tinspect/types.h: the handles of libtinspect and the vocabulary its
 * headers share.  Include <tinspect/tinspect.h>; this header is part of it.
 *
 * Every handle is opaque and owned by the library.  A snapshot and
 * everything reached from it (threads, frames, locks, symbols, strings)
 * stay valid, unchanged, until tinspect_snapshot_free() of that snapshot,
 * also after later updates and after the session is destroyed.
 */
#ifndef TINSPECT_TYPES_H
#define TINSPECT_TYPES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/* One inspected process, from tinspect_session_init() to
 * tinspect_session_destroy(). */
typedef struct tinspect_session tinspect_session;
/* What one update captured: immutable. */
typedef struct tinspect_snapshot tinspect_snapshot;
/* One thread of a snapshot. */
typedef struct tinspect_thread tinspect_thread;
/* One frame of a thread's stack. */
typedef struct tinspect_frame tinspect_frame;
/* What a blocked thread waits on (a futex wait, decoded). */
typedef struct tinspect_wait tinspect_wait;
/* One object (mutex, rwlock, ...) that some thread of a snapshot waits on. */
typedef struct tinspect_lock tinspect_lock;
/* A mutex or rwlock a thread of a snapshot holds (tinspect_thread_held()). */
typedef struct tinspect_held tinspect_held;
/* A deadlock: a cycle in the wait-for graph. */
typedef struct tinspect_cycle tinspect_cycle;
/* A stall: a chain of waits that ends in a thread that cannot move on. */
typedef struct tinspect_stall tinspect_stall;
/* A thread-local variable asked for (tinspect_options.tls, errno). */
typedef struct tinspect_tls_var tinspect_tls_var;
/* The value of one thread-local variable in one thread. */
typedef struct tinspect_tls_value tinspect_tls_value;
/* A pthread key in use (TINSPECT_OPT_KEYS). */
typedef struct tinspect_key tinspect_key;
/* An address with the module and symbol that hold it. */
typedef struct tinspect_symbol tinspect_symbol;
/* A language runtime whose locks are not pthread objects (a JVM, ...). */
typedef struct tinspect_runtime tinspect_runtime;
/* A thread creation or exit seen while following threads. */
typedef struct tinspect_event tinspect_event;

/* Why a stack ends where it ends (tinspect_thread_stack_end()). */
enum tinspect_stack_end {
	TINSPECT_STACK_NONE = 0,	/* not unwound (no registers, or
					 * TINSPECT_OPT_NO_STACKS) */
	TINSPECT_STACK_COMPLETE,	/* reached the outermost frame */
	TINSPECT_STACK_TRUNCATED,	/* needed stack bytes the stop did
					 * not copy (see stack_bytes) */
	TINSPECT_STACK_MAX_FRAMES,	/* max_frames reached */
	TINSPECT_STACK_BAD_SP,		/* the stack pointer did not move up:
					 * garbage or a loop (an error) */
	TINSPECT_STACK_ERROR,		/* the unwinder gave up (an error) */
	TINSPECT_STACK_UNKNOWN_CODE,	/* stopped in code outside any module
					 * (JIT) that no unwind table or frame
					 * pointer leads out of: no error */
	TINSPECT_STACK_SWITCH,		/* stopped at a Go runtime function
					 * that switches stacks (runtime.mcall,
					 * systemstack, asmcgocall, ...): its
					 * callers are on another stack; no
					 * error */
	TINSPECT_STACK_SCANNED,		/* frames were found past code without
					 * unwind tables (musl's libc) by
					 * scanning the stack for return
					 * addresses, and no further one was
					 * found: frames between may be
					 * missing (tinspect_frame_scanned());
					 * no error */
	TINSPECT_STACK_REGISTER_UNKNOWN,	/* the return address of the
					 * last frame is in a register the
					 * capture does not read (a
					 * nonblocking capture, in an aarch64
					 * function that has not saved its
					 * link register); no error */
};

/* How a thread-local variable's bytes are read. */
enum tinspect_tls_type {
	TINSPECT_TLS_AUTO = 0,	/* request only: the DWARF type if there is
				 * one, else the symbol's size as hex */
	TINSPECT_TLS_INT,	/* signed integer of size 1, 2, 4 or 8 */
	TINSPECT_TLS_UNSIGNED,	/* unsigned integer of size 1, 2, 4 or 8 */
	TINSPECT_TLS_HEX,	/* unsigned, meant to be shown in hex */
	TINSPECT_TLS_POINTER,	/* an address (symbolized) */
	TINSPECT_TLS_STRING,	/* a char *, and the string it points to */
	TINSPECT_TLS_BYTES,	/* size raw bytes */
	TINSPECT_TLS_FLOAT,	/* float or double (from DWARF only) */
	TINSPECT_TLS_BOOL,	/* one byte (from DWARF only) */
};
/* At most this many bytes of a TINSPECT_TLS_STRING are read; at most
 * TINSPECT_TLS_BYTES_MAX of a TINSPECT_TLS_BYTES variable. */
#define TINSPECT_TLS_STRING_MAX 256
#define TINSPECT_TLS_BYTES_MAX 4096

/* What kind of object a thread waits on. */
enum tinspect_lock_kind {
	TINSPECT_LOCK_FUTEX = 0,	/* a futex word that could not be
					 * identified as any of the others */
	TINSPECT_LOCK_MUTEX,
	TINSPECT_LOCK_RWLOCK,
	TINSPECT_LOCK_COND,
	TINSPECT_LOCK_SEM,
	TINSPECT_LOCK_BARRIER,
	TINSPECT_LOCK_JOIN,		/* pthread_join(): the object is the
					 * thread being joined */
	TINSPECT_LOCK_FILE,		/* a stdio FILE's lock (flockfile(),
					 * every stdio call): the object is
					 * the FILE */
	/* Not a kind: how many there are (an array indexed by kind has
	 * this many entries; a later version may add kinds before it). */
	TINSPECT_LOCK_KIND_COUNT,
};

/* How a thread waits for an rwlock. */
enum tinspect_wait_mode {
	TINSPECT_MODE_NONE = 0,		/* not an rwlock */
	TINSPECT_MODE_READ,
	TINSPECT_MODE_WRITE,
};

#ifdef __cplusplus
}
#endif

#endif
