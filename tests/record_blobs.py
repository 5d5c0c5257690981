#!/usr/bin/env python3
"""record_blobs.py BUILD OUTDIR: record tests/data's lock words on this machine.

Runs each lock fixture of BUILD/tests, inspects it with BUILD/agent/tinspect
--json, and writes the words tinspect captured of one planted lock as
OUTDIR/ARCH-NAME.words (the format tests/test_lockdecode.c reads: a comment
header with the owner's TID, then the words in hex).  tools/arm64-vm.sh
--run uses it to record the aarch64 blobs on the emulated machine.  Every
fixture is killed by its PID.
"""
import json
import os
import platform
import subprocess
import sys
import time

# name, fixture, planted lock label, what the header says
BLOBS = [
    ("mutex-normal", "fx_lock_abba", "ledger_lock",
     "ledger_lock (normal) held by post-transfer, audit-ledger waits"),
    ("mutex-recursive", "fx_lock_recursive", "registry_lock",
     "registry_lock (recursive) held 3 deep by registrar, indexer waits"),
    ("mutex-errorcheck", "fx_lock_errorcheck", "table_lock",
     "table_lock (errorcheck) held by teller, clerk waits"),
    ("mutex-pi", "fx_lock_pi", "pi_b",
     "pi_b (PI) held by pi-second, pi-first sleeps in FUTEX_LOCK_PI"),
    ("mutex-robust-ownerdead", "fx_lock_robust", "shm_lock",
     "shm_lock (robust): owner died, heir got EOWNERDEAD (inconsistent), other waits"),
    ("mutex-orphan", "fx_lock_orphan", "session_lock",
     "session_lock (normal) held by an exited thread, waiter waits"),
    ("rwlock-writer", "fx_lock_rwcycle", "config_rwlock",
     "config_rwlock write-locked by writer; cacher waits to write (+12), reader to read (+8)"),
    ("cond-3waiters", "fx_lock_cond", "jobs_ready",
     "jobs_ready with three waiters in group 0 (futex +40)"),
    ("sem-3waiters", "fx_lock_sem", "slots_sem",
     "slots_sem value 0, three waiters"),
    ("barrier-1of3", "fx_lock_sem", "start_line",
     "start_line: barrier for 3, one arrived and waiting (futex +4)"),
]


def start(path):
    p = subprocess.Popen([path], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         text=True)
    lines = []
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        line = p.stdout.readline()
        if not line:
            break
        lines.append(line.rstrip("\n"))
        if line.startswith("ready"):
            return p, lines
    p.kill()
    p.wait()
    raise SystemExit("%s did not get ready" % path)


def glibc():
    out = subprocess.run(["dpkg-query", "-W", "-f=${Version}", "libc6"],
                         capture_output=True, text=True).stdout
    return out or platform.libc_ver()[1]


def main():
    build, outdir = sys.argv[1], sys.argv[2]
    os.makedirs(outdir, exist_ok=True)
    arch = platform.machine()
    tinspect = os.path.join(build, "agent", "tinspect")
    done = {}
    for name, fx, label, what in BLOBS:
        if fx not in done:
            p, lines = start(os.path.join(build, "tests", fx))
            try:
                r = subprocess.run([tinspect, "--json", str(p.pid)],
                                   capture_output=True, text=True, timeout=600)
            finally:
                p.kill()
                p.wait()
            done[fx] = (lines, json.loads(r.stdout))
        lines, doc = done[fx]
        addr = None
        for line in lines:
            w = line.split()
            if len(w) >= 3 and w[0] == "lock" and w[1] == label:
                addr = int(w[2], 16)
        lock = next((l for l in doc.get("locks", [])
                     if int(l["addr"], 16) == addr), None)
        if lock is None or not lock.get("words"):
            print("no words for %s in %s" % (label, fx), file=sys.stderr)
            continue
        owner_tid = lock.get("owner")
        waiters = [w["tid"] for w in lock.get("waiters", [])]
        words = lock["words"]
        body = "\n".join(words[i:i + 32] for i in range(0, len(words), 32))
        with open(os.path.join(outdir, "%s-%s.words" % (arch, name)), "w") as f:
            f.write("# %s: %s\n" % (fx, what))
            f.write("# captured with tinspect --json (locks[].words) on Debian 12, "
                    "glibc %s, %s\n" % (glibc(), arch))
            f.write("# object at %#x; owner tid %s; waiters %s\n"
                    % (addr, owner_tid, waiters))
            f.write(body + "\n")
        print("recorded %s-%s.words" % (arch, name))


main()
