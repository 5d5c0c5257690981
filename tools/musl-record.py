#!/usr/bin/env python3
"""musl-record.py - record the memory of the musl fixtures' planted states.

    tools/musl-record.py [--fixtures DIR] OUTDIR
    tools/musl-record.py --root ROOT OUTDIR

Runs each musl fixture (tests/fixtures/musl, docs/MUSL.md) until it reports
"ready", reads what it planted from /proc/PID/mem while every planted
thread sleeps, ends it by its PID, and writes into OUTDIR/VERSION/ (VERSION
is the musl version, e.g. 1.2.3):

  x86_64-CASE.mem     the regions of one run: each planted lock object,
                      each reported thread's struct pthread with what hangs
                      off it (start_args, robust_list chain, stdio_locks
                      chain, DTV, key array), cond waiter nodes, barrier
                      instances, the reported TLS variables; the fixture's
                      report in the header.  A region is "@ 0xADDR LEN
                      LABEL" followed by hex lines of 16 bytes.
  x86_64-NAME.words   one lock object, in the format of the glibc
                      tests/data/x86_64-*.words (the header's "owner tid N").

--fixtures DIR  the built fixtures (default: build/tests/fixtures/musl).
--root ROOT     build the fixtures inside a Debian root (tools/roots.sh)
                with its own musl-gcc and run them there, in a private
                mount namespace with /proc mounted and a tmpfs on ROOT/mnt
                (nothing is left mounted, nothing is written into ROOT).

Run as root (reading another process's memory).  x86_64 only.
"""
import argparse
import os
import re
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SRC = os.path.join(TOP, "tests", "fixtures")

# struct pthread, musl 1.2.2 - 1.2.5, x86_64 (docs/MUSL.md §2)
PT_SIZE, PT_DTV, PT_STACK, PT_TSD, PT_ROBUST_HEAD = 200, 8, 88, 128, 136
PT_STDIO_LOCKS = 192
M_NEXT = 32
F_NEXT_LOCKED = 216
KEYS_MAX = 128
SIZES = {"mutex": 40, "cond": 48, "rwlock": 56, "sem": 32, "barrier": 32,
         "file": 232, "join": PT_SIZE}

# case : (fixture, arguments)
CASES = {
    "abba-errorcheck": ("fx_musl_abba", ["--type", "errorcheck"]),
    "abba-recursive": ("fx_musl_abba", ["--type", "recursive"]),
    "abba-normal": ("fx_musl_abba", ["--type", "normal"]),
    "abba-errorcheck-static": ("fx_musl_abba_static", ["--type", "errorcheck"]),
    "pi": ("fx_musl_pi", []),
    "orphan": ("fx_musl_orphan", []),
    "cond": ("fx_musl_cond", []),
    "rwlock": ("fx_musl_rwlock", []),
    "sem": ("fx_musl_sem", []),
    "barrier": ("fx_musl_barrier", []),
    "join": ("fx_musl_join", []),
    "stdio": ("fx_musl_stdio", []),
    "tls": ("fx_musl_tls", []),
    "tls-static": ("fx_musl_tls_static", []),
}

# .words files: name : (case, lock label, what it shows)
WORDS = {
    "mutex-errorcheck": ("abba-errorcheck", "ledger_lock",
                         "errorcheck, held by teller, auditor waits"),
    "mutex-recursive": ("abba-recursive", "ledger_lock",
                        "recursive, held 2 deep by teller, auditor waits"),
    "mutex-normal": ("abba-normal", "ledger_lock",
                     "normal, held by teller (not recorded), auditor waits"),
    "mutex-pi": ("pi", "pi_b", "priority inheritance, held by pi-second, "
                 "pi-first waits in FUTEX_LOCK_PI"),
    "mutex-orphan-normal": ("orphan", "session_lock",
                            "normal, its owner leaver exited, waiter waits"),
    "mutex-orphan-errorcheck": ("orphan", "table_lock",
                                "errorcheck, its owner quitter exited, stuck waits"),
    "mutex-robust-ownerdead": ("orphan", "shm_lock",
                               "robust, owner died, heir got EOWNERDEAD, other waits"),
    "cond-3waiters": ("cond", "jobs_ready", "private, three waiters"),
    "cond-shared": ("cond", "shared_ready", "process-shared, one waiter"),
    "rwlock-writer": ("rwlock", "config_rwlock",
                      "write-locked by writer, reader and rewriter wait"),
    "rwlock-readers": ("rwlock", "stats_rwlock",
                       "read-locked by reader-a and reader-b, updater waits"),
    "sem-3waiters": ("sem", "slots_sem", "private, value 0, three waiters"),
    "sem-shared": ("sem", "pool_sem", "process-shared, value 0, one waiter"),
    "barrier-2of3": ("barrier", "start_line", "private, for 3, two arrived"),
    "barrier-shared-1of2": ("barrier", "pool_gate",
                            "process-shared, for 2, one arrived"),
    "file-owned": ("stdio", "report_file",
                   "flockfile'd twice by printer, logger waits"),
    "file-orphan": ("stdio", "audit_file",
                    "its holder quitter exited, late waits"),
}

# How the fixtures are built inside a root (the same as
# tests/fixtures/musl/meson.build).
CFLAGS = ["-std=gnu11", "-D_GNU_SOURCE", "-O1", "-g", "-fno-omit-frame-pointer",
          "-Wall", "-Wextra", "-Werror"]


def root_build_script():
    cmds = ["set -e", "cd /mnt/src/musl"]
    for f in ["fx_musl_abba", "fx_musl_orphan", "fx_musl_cond", "fx_musl_rwlock",
              "fx_musl_sem", "fx_musl_barrier", "fx_musl_join", "fx_musl_stdio",
              "fx_musl_pi", "fx_musl_layout"]:
        cmds.append(f"musl-gcc {' '.join(CFLAGS)} {f}.c -o /mnt/out/{f}")
        cmds.append(f"musl-gcc {' '.join(CFLAGS)} -static {f}.c -o /mnt/out/{f}_static")
    cmds.append("musl-gcc -shared -fPIC -O1 -g -Wl,-soname,libfx_musl_tlslib.so "
                "fx_musl_tlslib.c -o /mnt/out/libfx_musl_tlslib.so")
    cmds.append("musl-gcc -shared -fPIC -O1 -g fx_musl_tlsplugin.c "
                "-o /mnt/out/libfx_musl_tlsplugin.so")
    cmds.append(f"musl-gcc {' '.join(CFLAGS)} fx_musl_tls.c "
                "/mnt/out/libfx_musl_tlslib.so -Wl,-rpath,'$ORIGIN' -o /mnt/out/fx_musl_tls")
    cmds.append(f"musl-gcc {' '.join(CFLAGS)} -static -DFXM_STATIC fx_musl_tls.c "
                "-o /mnt/out/fx_musl_tls_static")
    return "\n".join(cmds)


def in_root(root, out, argv, ro_src=False):
    """argv run chrooted in root, in a mount namespace of its own with
    /proc mounted and out at /mnt/out (and the sources at /mnt/src); the
    process keeps its PID through every exec."""
    mounts = [f"mount -t proc proc {root}/proc",
              f"mount -t tmpfs tmpfs {root}/mnt",
              f"mkdir {root}/mnt/out {root}/mnt/src",
              f"mount --bind {out} {root}/mnt/out"]
    if ro_src:
        mounts.append(f"mount --bind -o ro {SRC} {root}/mnt/src")
    script = " && ".join(mounts) + ' && exec chroot "$0" "$@"'
    return ["unshare", "-m", "--propagation", "private", "sh", "-c", script,
            root] + argv


class Mem:
    def __init__(self, pid):
        self.f = open(f"/proc/{pid}/mem", "rb", buffering=0)

    def read(self, addr, n):
        self.f.seek(addr)
        return self.f.read(n)

    def word(self, addr):
        return struct.unpack("<Q", self.read(addr, 8))[0]

    def close(self):
        self.f.close()


def run_fixture(argv):
    """Start argv, return (process, report lines, pid) once it is ready."""
    p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         text=True)
    lines = []
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        line = p.stdout.readline()
        if not line:
            break
        line = line.rstrip("\n")
        if line.startswith("error"):
            break
        if line.startswith("ready "):
            return p, lines, int(line.split()[1])
        lines.append(line)
    end(p, None)
    raise SystemExit(f"{argv[0]}: not ready: {lines[-3:]}")


def end(p, pid):
    if pid:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    p.stdin.close()
    try:
        p.wait(timeout=30)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()


def parse(lines):
    r = {"tid": {}, "pthread": {}, "lock": {}, "owner": {}, "waiter": {},
         "orphan": {}, "sleeps": {}, "gone": {}, "tls": []}
    for l in lines:
        w = l.split()
        if not w:
            continue
        k = w[0]
        if k in ("tid", "gone"):
            r[k][w[1]] = int(w[2])
        elif k == "pthread":
            r[k][w[1]] = int(w[2], 16)
        elif k == "lock":
            r[k][w[1]] = (int(w[2], 16), w[3])
        elif k in ("owner", "waiter", "orphan"):
            r[k].setdefault(w[1], []).append(w[2])
        elif k == "sleeps":
            r[k][w[1]] = (int(w[2], 16), int(w[3], 16), int(w[4], 16))
        elif k == "tls":
            r[k].append((w[1], w[2], int(w[3], 16)))
    return r


def collect(mem, rep):
    """The regions worth keeping: [(addr, len, label)]."""
    regions = []

    def add(addr, n, label):
        if addr and all(not (a <= addr < a + l) for a, l, _ in regions):
            regions.append((addr, n, label))

    for label, (addr, kind) in rep["lock"].items():
        add(addr, SIZES[kind], f"{kind} {label}")
        if kind == "cond" and mem.word(addr) == 0:
            # a private cond's waiter nodes, from _c_head along next
            node, n = mem.word(addr + 8), 0
            while node and n < 16:
                add(node, 32, f"struct waiter on {label}")
                node, n = mem.word(node + 8), n + 1
        if kind == "barrier":	# the round's struct instance
            add(mem.word(addr + 24), 16, f"struct instance of {label}")
    for role, pt in rep["pthread"].items():
        add(pt, PT_SIZE, f"struct pthread of {role}")
        stack = mem.word(pt + PT_STACK)
        if stack:
            add((stack & ~7) - 32, 32, f"start_args of {role}")
        head, e, n = pt + PT_ROBUST_HEAD, mem.word(pt + PT_ROBUST_HEAD), 0
        while e != head and e and n < 16:
            add(e - M_NEXT, SIZES["mutex"], f"mutex on {role}'s robust_list")
            e, n = mem.word(e), n + 1
        f, n = mem.word(pt + PT_STDIO_LOCKS), 0
        while f and n < 16:
            add(f, SIZES["file"], f"FILE on {role}'s stdio_locks")
            f, n = mem.word(f + F_NEXT_LOCKED), n + 1
        dtv = mem.word(pt + PT_DTV)
        if dtv:
            add(dtv, 8 * (1 + mem.word(dtv)), f"dtv of {role}")
        tsd = mem.word(pt + PT_TSD)
        if tsd and rep["tls"]:
            add(tsd, 8 * KEYS_MAX, f"tsd of {role}")
    for role, var, addr in rep["tls"]:
        add(addr, 16 if var == "fxm_tag" else 8, f"{var} of {role}")
    return sorted(regions)


def hexlines(b):
    return [b[i:i + 16].hex() for i in range(0, len(b), 16)]


def write_mem(path, head, lines, mem, regions):
    with open(path, "w") as out:
        for h in head:
            out.write(f"# {h}\n")
        for l in lines:
            out.write(f"# report: {l}\n")
        for addr, n, label in regions:
            out.write(f"@ 0x{addr:x} {n} {label}\n")
            for h in hexlines(mem.read(addr, n)):
                out.write(h + "\n")


def write_words(path, fixture, what, head, rep, mem, label):
    addr, kind = rep["lock"][label]
    owners = rep["owner"].get(label, [])
    owner = rep["tid"].get(owners[0]) if len(owners) == 1 else None
    waiters = [rep["tid"][r] for r in rep["waiter"].get(label, [])]
    with open(path, "w") as out:
        out.write(f"# {fixture}: {label} ({kind}), {what}\n")
        out.write(f"# {head[1]}\n")
        out.write(f"# object at 0x{addr:x}; owner tid {owner}; "
                  f"waiters {waiters}\n")
        for r in rep["waiter"].get(label, []):
            if r in rep["sleeps"]:
                u, op, val = rep["sleeps"][r]
                out.write(f"# {r} sleeps in futex(0x{u:x} (object + "
                          f"{u - addr}), 0x{op:x}, 0x{val:x})\n")
        for h in hexlines(mem.read(addr, SIZES[kind])):
            out.write(h + "\n")


def musl_version(root):
    """Debian's musl package version and the upstream version in it."""
    cmd = ["dpkg-query", "-W", "-f", "${Version}", "musl"]
    if root:
        cmd = ["chroot", root] + cmd
    deb = subprocess.run(cmd, capture_output=True, text=True,
                         check=True).stdout.strip()
    osrel = os.path.join(root or "/", "etc", "os-release")
    name = "Debian"
    with open(osrel) as f:
        for l in f:
            if l.startswith("VERSION_ID="):
                name += " " + l.split("=", 1)[1].strip().strip('"')
    return re.match(r"\d+\.\d+\.\d+", deb).group(0), f"{name}, musl {deb}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--fixtures",
                    default=os.path.join(TOP, "build", "tests", "fixtures", "musl"))
    ap.add_argument("--root")
    ap.add_argument("outdir")
    a = ap.parse_args()
    version, where = musl_version(a.root)
    outdir = os.path.join(a.outdir, version)
    os.makedirs(outdir, exist_ok=True)
    tmp = None
    if a.root:
        tmp = tempfile.mkdtemp(prefix="musl-record.")
        subprocess.run(in_root(a.root, tmp, ["sh", "-c", root_build_script()],
                               ro_src=True), check=True)
    try:
        # the layout the recording relies on holds for this musl
        for fx in ("fx_musl_layout", "fx_musl_layout_static"):
            argv = (in_root(a.root, tmp, [f"/mnt/out/{fx}"]) if a.root
                    else [os.path.join(a.fixtures, fx)])
            r = subprocess.run(argv, capture_output=True, text=True)
            if r.returncode:
                sys.stderr.write(r.stdout)
                raise SystemExit(f"musl-record: {fx} failed: docs/MUSL.md's "
                                 f"layout does not hold for {where}")
        for case, (fx, args) in CASES.items():
            if a.root:
                argv = in_root(a.root, tmp, [f"/mnt/out/{fx}"] + args)
            else:
                argv = [os.path.join(a.fixtures, fx)] + args
            p, lines, pid = run_fixture(argv)
            mem = Mem(pid)
            try:
                rep = parse(lines)
                link = "static" if fx.endswith("_static") else "dynamic"
                cmd = " ".join([fx] + args)
                head = [f"{cmd} ({link}): recorded by tools/musl-record.py "
                        f"from /proc/PID/mem", f"{where}, x86_64"]
                write_mem(os.path.join(outdir, f"x86_64-{case}.mem"), head,
                          lines, mem, collect(mem, rep))
                for name, (wcase, label, what) in WORDS.items():
                    if wcase != case:
                        continue
                    write_words(os.path.join(outdir, f"x86_64-{name}.words"),
                                cmd, what, head, rep, mem, label)
            finally:
                mem.close()
                end(p, pid)
            print(f"musl-record: {case}: pid {pid}", file=sys.stderr)
    finally:
        if tmp:
            shutil.rmtree(tmp)
    return 0


if __name__ == "__main__":
    sys.exit(main())
