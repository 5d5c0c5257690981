/*
 * tinspect/thread.h: one thread of a snapshot: its identity, what the
 * kernel said about it, the system call it is in, its registers, its
 * pthread, its stack, its thread-local variables and key values, and its
 * failures.  Include <tinspect/tinspect.h>; this header is part of it.
 * Manual: tinspect_thread(3).
 *
 * Lifetime and thread safety are the snapshot's (tinspect/snapshot.h):
 * every pointer returned here is valid until tinspect_snapshot_free();
 * a snapshot may be read by any number of threads at once.  Functions
 * that return an int give 0, or -ENODATA when the fact is unknown for
 * this thread (their ret_ arguments are then left as they were); any
 * ret_ argument may be NULL.
 */
#ifndef TINSPECT_THREAD_H
#define TINSPECT_THREAD_H

#include <tinspect/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- identity ------------------------------------------------------------ */

/* Its TID in tinspect's PID namespace. */
pid_t tinspect_thread_tid(const tinspect_thread *th);
/* Its TID in the target's own PID namespace (differs in a container);
 * 0 if unknown. */
pid_t tinspect_thread_ns_tid(const tinspect_thread *th);
/* The kernel's name of it (comm): raw bytes, any but NUL, *ret_len of
 * them, NUL-terminated; NULL if unknown. */
const char *tinspect_thread_name(const tinspect_thread *th, size_t *ret_len);
/* The thread whose TID is the process's PID. */
bool tinspect_thread_is_main(const tinspect_thread *th);
/* The snapshot it belongs to. */
const tinspect_snapshot *tinspect_thread_snapshot(const tinspect_thread *th);

/* ---- what /proc said ----------------------------------------------------- */

/* When its /proc facts were read: before the stop, after the resume (a
 * thread that appeared during the stop), or not at all (they could not
 * be; or NONE: the target has no /proc, a core file). */
enum tinspect_proc_read {
	TINSPECT_PROC_FAILED = 0,
	TINSPECT_PROC_BEFORE_STOP,
	TINSPECT_PROC_AFTER_RESUME,
	TINSPECT_PROC_NONE,
};
enum tinspect_proc_read tinspect_thread_proc_read(const tinspect_thread *th);
/* The state letter of /proc/TID/stat (R S D T t Z X I ...); 0 if
 * unknown. */
char tinspect_thread_state(const tinspect_thread *th);
/* The kernel function it sleeps in; NULL if none or unknown. */
const char *tinspect_thread_wchan(const tinspect_thread *th);
/* CPU time used, in seconds. */
int tinspect_thread_cpu(const tinspect_thread *th, double *ret_user_s,
			double *ret_system_s);
/* The times it left a CPU, voluntary and not (/proc/TID/status): a
 * thread that has not run between two captures has only the captures'
 * own (about 2 each). */
int tinspect_thread_context_switches(const tinspect_thread *th,
				     uint64_t *ret_switches);
/* Scheduling: policy (SCHED_OTHER ... as <sched.h> numbers them, 6
 * SCHED_DEADLINE), priority and nice as /proc gives them, real-time
 * priority, and the CPU it last ran on. */
int tinspect_thread_sched(const tinspect_thread *th, unsigned *ret_policy,
			  long *ret_priority, long *ret_nice,
			  unsigned *ret_rt_priority, int *ret_processor);
/* Signal masks (bit n-1 for signal n). */
int tinspect_thread_signals(const tinspect_thread *th, uint64_t *ret_blocked,
			    uint64_t *ret_pending);
/* The CPUs it may run on, as /proc lists them ("0-3,8"; "" if /proc did
 * not say): *ret_len bytes, not necessarily NUL-terminated; NULL if the
 * /proc facts were not read. */
const char *tinspect_thread_affinity(const tinspect_thread *th, size_t *ret_len);

/* ---- the capture ---------------------------------------------------------- */

/* It was stopped with the others (part of the consistent snapshot). */
bool tinspect_thread_stopped(const tinspect_thread *th);
/* It did not stop within stop_timeout_ns (uninterruptible sleep): left
 * out of the stop, its registers and stack unknown. */
bool tinspect_thread_straggler(const tinspect_thread *th);
/* How a nonblocking capture (TINSPECT_CAPTURE_NONBLOCKING) saw it. */
enum tinspect_observation {
	TINSPECT_OBSERVED_NONE,		/* the capture stopped threads */
	/* blocked in the kernel: pc, sp and the syscall from
	 * /proc/TID/syscall, its stack copied and unwound from them (the
	 * other registers are unknown, so the stack may end early) */
	TINSPECT_OBSERVED_BLOCKED,
	/* on a CPU (or otherwise not blocked): no registers, no stack */
	TINSPECT_OBSERVED_RUNNING,
	/* blocked, but it ran while its memory was copied (its syscall line
	 * or its context switches changed, even if it came back to the
	 * same wait): what was copied is not shown (no registers, no
	 * stack, no wait) */
	TINSPECT_OBSERVED_MOVED,
};
enum tinspect_observation tinspect_thread_observation(const tinspect_thread *th);
/* "none", "blocked", "running", "moved". */
const char *tinspect_observation_name(enum tinspect_observation obs);
/* It was in a job-control stop (and stays stopped). */
bool tinspect_thread_jobctl_stopped(const tinspect_thread *th);
/* Program counter, stack pointer, thread pointer, as read at the stop. */
int tinspect_thread_regs(const tinspect_thread *th, uint64_t *ret_pc,
			 uint64_t *ret_sp, uint64_t *ret_tp);

/* ---- the system call it is in ---------------------------------------------- */

enum tinspect_syscall_source {
	TINSPECT_SYSCALL_REGISTERS = 1,	/* the registers read at the stop */
	TINSPECT_SYSCALL_PROC,		/* /proc/TID/syscall before the stop,
					 * for a thread whose registers could
					 * not be read */
};

struct tinspect_syscall {
	long nr;
	const char *name;	/* "futex"; NULL if unknown to the library */
	uint64_t args[6];
	enum tinspect_syscall_source source;
	bool restarting;	/* REGISTERS: blocked in it; the kernel restarts
				 * it when the thread resumes */
};

/*
 * The system call the thread is in: from its registers, else from /proc.
 * Fills the first `size` bytes of *ret (pass sizeof *ret).  Returns 0, or
 * -ENODATA when it is in none (running in user space) or it is unknown
 * (tinspect_thread_regs() tells them apart), -EINVAL (size 0).
 */
int tinspect_thread_syscall(const tinspect_thread *th, struct tinspect_syscall *ret,
			    size_t size);

/* ---- pthread (libthread_db) ---------------------------------------------- */

/* Its pthread_t and libthread_db's td_thr_state_e for it
 * (tinspect_td_state_name()); -ENODATA if libthread_db does not know it. */
int tinspect_thread_pthread(const tinspect_thread *th, uint64_t *ret_pthread,
			    int *ret_td_state);
/* "active", "zombie", "run", "sleep", "stopped", "stopped_asleep",
 * "unknown". */
const char *tinspect_td_state_name(int td_state);
/* The thread's detach state as its C library records it: "joinable",
 * "detached", "exiting", "exited"; NULL if not known (libthread_db does
 * not say it: glibc's threads). */
const char *tinspect_thread_detach_state(const tinspect_thread *th);
/* libthread_db knows it as the initial thread (no start routine). */
bool tinspect_thread_is_initial(const tinspect_thread *th);
/* The function it was started with; NULL for the initial thread or when
 * libthread_db does not know it. */
const tinspect_symbol *tinspect_thread_start_routine(const tinspect_thread *th);

/* ---- the stack ------------------------------------------------------------- */

/* Why its stack ends where it ends; TINSPECT_STACK_NONE: no stack. */
enum tinspect_stack_end tinspect_thread_stack_end(const tinspect_thread *th);
/* "none", "complete", "truncated", "max_frames", "bad_sp", "error",
 * "unknown_code", "stack_switch", "scanned", "register_unknown". */
const char *tinspect_stack_end_name(enum tinspect_stack_end end);
/* The ends that are a failure to read the thread (BAD_SP, ERROR): the
 * thread then has an error that says so. */
bool tinspect_stack_end_is_error(enum tinspect_stack_end end);
/* For the error ends, why; NULL otherwise. */
const char *tinspect_thread_stack_error(const tinspect_thread *th);
/* The stack bytes copied at the stop: [*ret_from, *ret_to). */
void tinspect_thread_stack_copied(const tinspect_thread *th, uint64_t *ret_from,
				  uint64_t *ret_to);
/* Its frames, innermost first. */
size_t tinspect_thread_nframes(const tinspect_thread *th);
const tinspect_frame *tinspect_thread_frame(const tinspect_thread *th, size_t i);

/* The pc (a return address above frame 0). */
uint64_t tinspect_frame_pc(const tinspect_frame *f);
/* A function inlined into the next frame (the same pc). */
bool tinspect_frame_inlined(const tinspect_frame *f);
/* The module's path and build-id (hex); NULL outside any module (JIT). */
const char *tinspect_frame_module(const tinspect_frame *f);
const char *tinspect_frame_build_id(const tinspect_frame *f);
/* The function, C++ names demangled; NULL if unknown.  The name as the
 * ELF or DWARF has it, when that differs; NULL otherwise. */
const char *tinspect_frame_symbol(const tinspect_frame *f);
const char *tinspect_frame_mangled(const tinspect_frame *f);
/* pc minus the function's start (0 for inlined frames). */
uint64_t tinspect_frame_offset(const tinspect_frame *f);
/* Source file and line; NULL and 0 without debug information. */
const char *tinspect_frame_file(const tinspect_frame *f);
int tinspect_frame_line(const tinspect_frame *f);
/* pc minus the module's load bias (the address addr2line takes); 0
 * outside any module. */
uint64_t tinspect_frame_module_offset(const tinspect_frame *f);
/* The stack pointer in this frame; 0 if unknown. */
uint64_t tinspect_frame_sp(const tinspect_frame *f);
/* The frame was found by scanning the stack for a return address past
 * code without unwind tables (musl's libc), not unwound: a stale
 * address can pass for one, and the frames between it and the frame
 * before it are not known. */
bool tinspect_frame_scanned(const tinspect_frame *f);

/* Strings of the frames of one snapshot are shared: two frames of the same
 * module return the same pointer from tinspect_frame_module(). */

/* Where its stack is: the mapping that holds its stack pointer, read from
 * /proc/PID/maps before the stop.  Free: no memory is read. */
enum tinspect_bounds_status {
	TINSPECT_BOUNDS_UNKNOWN = 0,	/* no registers, or sp in no mapping */
	TINSPECT_BOUNDS_OK,
	TINSPECT_BOUNDS_LOW,		/* less than TINSPECT_BOUNDS_LOW_BYTES
					 * or 1/8 of it left */
	TINSPECT_BOUNDS_OVERFLOW,	/* sp in the guard page or below the
					 * limit */
	TINSPECT_BOUNDS_NOT_STACK,	/* sp in a mapping that is no thread
					 * stack (sigaltstack, a user stack) */
};
#define TINSPECT_BOUNDS_LOW_BYTES (16 * 1024)

struct tinspect_stack_bounds {
	enum tinspect_bounds_status status;
	bool main;			/* the [stack] of the initial thread */
	uint64_t low, high;		/* the mapping that holds sp */
	uint64_t guard_low, guard_high;	/* the PROT_NONE mapping below it;
					 * 0, 0: none */
	uint64_t limit;			/* the lowest address sp may reach (the
					 * guard's top, or high minus
					 * RLIMIT_STACK); 0: unknown */
	uint64_t used;			/* high - sp */
	uint64_t avail;			/* sp - limit, when limit is known */
};
/* Fills the first `size` bytes of *ret (pass sizeof *ret).  Returns 0, or
 * -ENODATA (status TINSPECT_BOUNDS_UNKNOWN), -EINVAL (size 0). */
int tinspect_thread_stack_bounds(const tinspect_thread *th,
				 struct tinspect_stack_bounds *ret, size_t size);
/* Why the bounds are unknown when that is no failure (a Go process whose
 * thread's sp is in a stack the Go runtime allocated in its heap: the
 * mapping is not the stack); NULL otherwise. */
const char *tinspect_thread_stack_bounds_unknown(const tinspect_thread *th);

/* ---- what it waits on (tinspect/locks.h) ---------------------------------- */

/* The futex wait it is blocked in, decoded; NULL if it is in none. */
const tinspect_wait *tinspect_thread_wait(const tinspect_thread *th);

/*
 * Since when it has been in its current wait, as far as the updates of its
 * session can tell: CLOCK_REALTIME nanoseconds; -1 when it is in no wait
 * or that is not known.  A wait is a futex wait (tinspect_thread_wait())
 * or another system call it sleeps in (epoll_wait, nanosleep, read...).
 * Two updates see the same wait when the thread waits on the same object
 * (lock kind and address; for another system call the same call and
 * first argument), with the same stack (frame pcs), and it did not run in
 * between: its context switches (/proc/TID/status) grew by at most 4 and
 * its CPU time (tinspect_thread_cpu()) by at most one clock tick (each
 * update itself wakes the thread: 2 switches, a few microseconds).
 *
 * The value is the capture time of the first update that saw the thread
 * in this wait (so the first update of a session gives its own capture
 * time for every waiting thread): the wait began after the update before
 * that one, i.e. at most one watch interval earlier than this says.  A
 * thread that left and re-entered the same wait between two updates
 * without a context switch or a tick of CPU cannot be told from one that
 * never left.  -1 also for a thread whose /proc facts could not be read
 * before the stop (its CPU time or switches are unknown).  Manual:
 * tinspect_waiting(3).
 */
int64_t tinspect_thread_waiting_since_ns(const tinspect_thread *th);

/*
 * What could move it on, if anything: the question behind a verdict on
 * waits that record no owner (they may be threads waiting for each other
 * only when no thread of the process can make progress).  First match:
 */
enum tinspect_progress {
	/* not known: no registers, or a system call not classified */
	TINSPECT_PROGRESS_UNKNOWN,
	/* on a CPU or runnable (state R), in user space, or, in a
	 * nonblocking capture, seen running or moved */
	TINSPECT_PROGRESS_RUNNING,
	/* a futex wait or a sleep with a timeout: it wakes by itself */
	TINSPECT_PROGRESS_TIMED,
	/* an untimed wait for something from outside the process: I/O on a
	 * file descriptor, a child, a signal, a process-shared futex */
	TINSPECT_PROGRESS_OUTSIDE,
	/* uninterruptible sleep (D): I/O that ends by itself */
	TINSPECT_PROGRESS_DISK,
	/* a job-control stop: it goes on at SIGCONT */
	TINSPECT_PROGRESS_STOPPED,
	/* an untimed wait only another thread of this process can end (a
	 * private futex wait: mutex, condvar, semaphore, barrier, unknown
	 * futex; a join), or a PI waiter glibc parked for ever */
	TINSPECT_PROGRESS_INSIDE,
	/* Not a class: how many there are (an array indexed by class has
	 * this many entries; a later version may add classes before it). */
	TINSPECT_PROGRESS_COUNT,
};
enum tinspect_progress tinspect_thread_progress(const tinspect_thread *th);
/* "unknown", "running", "timed", "outside", "disk", "stopped", "inside". */
const char *tinspect_progress_name(enum tinspect_progress progress);

/* ---- failures -------------------------------------------------------------- */

/* What could not be read about it, one text each ("registers: No such
 * process"), meant for a person.  A thread with errors makes the snapshot
 * partial. */
size_t tinspect_thread_nerrors(const tinspect_thread *th);
const char *tinspect_thread_error(const tinspect_thread *th, size_t i);

/* ---- thread-local variables ------------------------------------------------ */

/* One value per variable of tinspect_snapshot_tls_var(), same index (a
 * thread may have fewer: 0 if the variables could not be read at all). */
size_t tinspect_thread_ntls(const tinspect_thread *th);
const tinspect_tls_value *tinspect_thread_tls(const tinspect_thread *th, size_t i);

enum tinspect_tls_status {
	TINSPECT_TLS_OK = 0,
	TINSPECT_TLS_NOT_ALLOCATED,	/* in a dlopen'ed module this thread has
					 * not touched yet: no error */
	TINSPECT_TLS_NOT_FOUND,		/* no such variable in the process */
	TINSPECT_TLS_UNAVAILABLE,	/* no libthread_db, thread not stopped */
	TINSPECT_TLS_ERROR,		/* the read failed (error says why) */
};
/* The variable it is a value of. */
const tinspect_tls_var *tinspect_tls_value_var(const tinspect_tls_value *v);
enum tinspect_tls_status tinspect_tls_value_status(const tinspect_tls_value *v);
/* Why it is not OK; NULL if no reason was recorded. */
const char *tinspect_tls_value_error(const tinspect_tls_value *v);
/* Its address in this thread. */
int tinspect_tls_value_address(const tinspect_tls_value *v, uint64_t *ret_addr);
/* The bytes read at its address (tinspect_tls_var_size() of them); NULL
 * if not read. */
const unsigned char *tinspect_tls_value_bytes(const tinspect_tls_value *v,
					      size_t *ret_len);
/* TINSPECT_TLS_STRING: the string its pointer points to, *ret_len bytes
 * (at most TINSPECT_TLS_STRING_MAX), NUL-terminated; *ret_truncated if it
 * went on.  NULL if not read (a NULL pointer, unreadable memory). */
const char *tinspect_tls_value_string(const tinspect_tls_value *v, size_t *ret_len,
				      bool *ret_truncated);
/* TINSPECT_TLS_POINTER: what it points into; NULL if into no module. */
const tinspect_symbol *tinspect_tls_value_pointee(const tinspect_tls_value *v);
/* An OK value as a number: its bits (sizes up to 8, zero-extended), the
 * signed reading of a TINSPECT_TLS_INT, the value of a TINSPECT_TLS_FLOAT.
 * 0 when there are no bytes. */
uint64_t tinspect_tls_value_bits(const tinspect_tls_value *v);
int64_t tinspect_tls_value_signed(const tinspect_tls_value *v);
double tinspect_tls_value_double(const tinspect_tls_value *v);

/* ---- pthread key values (TINSPECT_OPT_KEYS) -------------------------------- */

/* Whether its key values were read; then one per key in use, in key
 * order. */
bool tinspect_thread_keys_read(const tinspect_thread *th);
size_t tinspect_thread_nkeys(const tinspect_thread *th);
/* The i-th: its key and what pthread_getspecific() would return in this
 * thread (0: never set).  Returns 0, -ENODATA if the slot could not be read
 * (*ret_key is set, *ret_value is not), -EINVAL if i is out of range. */
int tinspect_thread_key_value(const tinspect_thread *th, size_t i, unsigned *ret_key,
			      uint64_t *ret_value);

#ifdef __cplusplus
}
#endif

#endif
