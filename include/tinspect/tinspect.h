/*
 * libtinspect: consistent snapshots of every thread of a live Linux
 * process: pthread identity (glibc's libthread_db), kernel state, system
 * call, registers, symbolized stacks, what each blocked thread waits on and
 * who holds it, deadlocks, thread-local variables and pthread keys.  The
 * library behind the tinspect program.  Manual: tinspect(3), with one page
 * per area: tinspect_session(3), tinspect_snapshot(3), tinspect_thread(3),
 * tinspect_locks(3).
 *
 *     tinspect_session *s = NULL;
 *     tinspect_snapshot *snap;
 *     if (tinspect_session_init(pid, NULL, &s) == 0 &&
 *         tinspect_session_update(s, &snap) == 0) {
 *             ... tinspect_snapshot_ncycles(snap) ...
 *             tinspect_snapshot_free(snap);
 *     }
 *     tinspect_session_destroy(s);
 *
 * A session (AIX pthdb's lifecycle): init opens the process without
 * stopping it; every update is one stop-gather-resume cycle that keeps the
 * target stopped for as short a time as it can and returns an immutable
 * snapshot; destroy frees it.  Module maps, symbol tables and libthread_db
 * survive between updates.  The target is never written to and never left
 * stopped: if the embedding process dies, even by SIGKILL, the kernel
 * detaches and the target runs on.
 *
 * Conventions (those of elfutils' libdwfl): opaque handles; index-based
 * iteration (tinspect_snapshot_nthreads(), tinspect_snapshot_thread());
 * errors are negative errno values, documented per function, with
 * tinspect_strerror(); nothing prints, nothing exits.  A fact that is not
 * known is reported as unknown (NULL, -ENODATA, an UNKNOWN state), never
 * guessed.
 *
 * ---- What the library needs from the process that embeds it --------------
 *
 * libthread_db's callbacks.  libtinspect dlopen()s glibc's libthread_db
 * (RTLD_NOW | RTLD_LOCAL), which calls back into the ps_* functions of
 * <proc_service.h> and finds them in the global symbol scope.  libtinspect
 * exports them (they are its only exported names besides tinspect_*).
 * Therefore:
 *   - the embedding program must not define ps_* functions of its own, nor
 *     load before libtinspect a library that does: the first definition in
 *     the global scope is the one libthread_db calls;
 *   - a program that dlopen()s libtinspect must pass RTLD_GLOBAL;
 *   - a program linked with libtinspect.a must have the ps_* symbols in its
 *     dynamic symbol table (`pkg-config --static --libs tinspect` gives the
 *     -Wl,--export-dynamic-symbol options).
 * Otherwise libthread_db cannot be loaded: the snapshot says so
 * (TINSPECT_TDB_UNAVAILABLE, detail "... undefined symbol: ps_...") and
 * threads are listed from /proc only.
 *
 * Signals.  The library installs no signal handler and changes no signal
 * disposition or mask of the calling thread.  Its blocking waits (for a
 * thread to stop, between updates) end early only through a signal:
 *   - tinspect_options.wake_signal: the library arms a POSIX timer
 *     (timer_create(), SIGEV_THREAD_ID, CLOCK_MONOTONIC) that sends it to
 *     the thread running the capture when a deadline is due.  The embedder
 *     installs a handler for it with sigaction() *without SA_RESTART* (an
 *     empty handler will do: it only has to interrupt waitpid()), before
 *     the first update, and does not block it in the thread that calls
 *     tinspect_session_update() or tinspect_session_wait() (threads the
 *     library creates inherit that thread's mask).  With wake_signal 0 the
 *     stop timeout and the freeze limit are checked between waits only.
 *   - tinspect_options.cancel: a handler of SIGINT, SIGTERM, ... sets the
 *     flag; the library notices it between steps and during its waits (the
 *     signal interrupts them when the handler has no SA_RESTART), resumes
 *     the target and returns -EINTR.  While *tinspect_options.holding is
 *     non-zero the handler must not end the process by a path that skips
 *     this (it would leave the target to the kernel's detach, stopped
 *     threads included); while it is 0 it may.
 *   - SIGCHLD: while tracing (during an update, and between updates while
 *     following threads) the embedding process is the tracer of the
 *     target's threads and receives SIGCHLD for their stops.  It must not
 *     reap with wait(), waitpid(-1, ...) or waitid(P_ALL, ...) in any
 *     thread meanwhile: it would take the library's stop notifications.
 *     Wait for your own children by PID.
 *
 * Threads.  tinspect_session_update() runs the stop-gather-resume cycle in
 * a thread it creates and joins before returning: the kernel detaches
 * whatever a tracer thread still traces when it exits, so a thread that
 * never stopped (uninterruptible sleep) is let go at once.  While the
 * session follows threads it runs in the calling thread instead.  Before
 * the stop, the /proc facts of a process of 256 threads or more are read
 * by up to 3 more threads (every signal blocked), joined before the stop.
 * No thread of the library outlives a call.
 *
 * File descriptors, all close-on-exec except those libdwfl opens itself:
 * per session, /proc/PID/task (a directory), /proc/PID/mem when
 * TINSPECT_OPT_PROC_MEM is set or process_vm_readv() is refused, and
 * libdwfl's descriptor on the separate debug file of each module a stack
 * passed through (a process with many libraries can need more than the
 * usual soft RLIMIT_NOFILE; the library does not raise it).  Modules keep
 * no descriptor.  libthread_db (and, with a debuginfod URL,
 * libdebuginfod) is dlopen()ed per session.
 *
 * ptrace.  A process can have one tracer: while a session updates (or
 * follows), gdb or strace cannot attach to the target, and if one is
 * attached, tinspect_session_update() fails with -EPERM.  Inspecting other
 * users' processes needs CAP_SYS_PTRACE (tinspect_diagnose_eperm()).
 */
#ifndef TINSPECT_TINSPECT_H
#define TINSPECT_TINSPECT_H

#include <tinspect/version.h>
#include <tinspect/types.h>
#include <tinspect/session.h>
#include <tinspect/snapshot.h>
#include <tinspect/thread.h>
#include <tinspect/locks.h>

#endif
