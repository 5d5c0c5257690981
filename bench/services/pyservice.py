# pyservice.py: a CPython process in the states bench/services.sh checks.
# Run with Debian's /usr/bin/python3; nothing here is part of
# tinspect.
#
#  - "lockwait-N" threads wait on a held threading.Lock (a semaphore inside
#    CPython: no owner recorded, so tinspect can show the waits but not
#    prove anything about them);
#  - two threads deadlock on two pthread mutexes through ctypes (ctypes
#    releases the GIL around foreign calls): a cycle tinspect must find.
#
# Prints "ready PID" and sleeps.
import ctypes
import os
import threading
import time

libc = ctypes.CDLL("libc.so.6", use_errno=True)
NWAIT = 4

held = threading.Lock()
held.acquire()


def lock_waiter():
    held.acquire()


for i in range(NWAIT):
    threading.Thread(target=lock_waiter, name="lockwait-%d" % i, daemon=True).start()

# two pthread_mutex_t (40 bytes on x86_64) in malloc'ed buffers
m_a = ctypes.create_string_buffer(64)
m_b = ctypes.create_string_buffer(64)
libc.pthread_mutex_init(m_a, None)
libc.pthread_mutex_init(m_b, None)
both = threading.Barrier(2)


def abba(first, second):
    libc.pthread_mutex_lock(first)
    both.wait()
    libc.pthread_mutex_lock(second)


threading.Thread(target=abba, args=(m_a, m_b), name="abba-1", daemon=True).start()
threading.Thread(target=abba, args=(m_b, m_a), name="abba-2", daemon=True).start()
time.sleep(1.0)
print("ready %d mutexes 0x%x 0x%x waiters %d" % (os.getpid(), ctypes.addressof(m_a),
                                                 ctypes.addressof(m_b), NWAIT), flush=True)
while True:
    time.sleep(3600)
