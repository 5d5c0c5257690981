#!/usr/bin/python3
"""lockorder.py - what the lock-order graph of a watch gives and costs;
bench/lockorder.sh runs it with the paths filled in.

Part 1, time to the report: R runs per mode (all-stop, nonblocking), each
on a fresh `fx_lockorder abba` (paths that take order_a then order_b and
order_b then order_a, kept apart by their timing: it never deadlocks):
the seconds from the start of `tinspect --watch INTERVAL --json --summary
[--nonblocking] PID` to its lock_order_inversion line (stamped when the
line arrives), and the updates it took.  Median and max per mode.

Part 2, cost: a lock-heavy busy target (`fx_lock_contend 16`: pairs of
mutexes in index order, an rwlock, a condvar, a semaphore), the fixture
of part 1, and bench/manylocks (1000 mutexes, 100 waited on at a time,
so that the session remembers all 1000 and copies their words in every
stop: an array of them, and each in a page of its own, the worst case),
each with nobody watching and under each watch, in
rotation, ROUNDS times SECONDS each: the target's own throughput (its
progress counter per second; its ratio to the median of nobody watching),
and from tinspect's summary lines the freeze per update (median, max) and
the update's duration.  The watches: --watch INTERVAL with the graph
(the default), with --no-lock-order, both again --nonblocking, and, if
--base names another tinspect (the build before the graph), that one.

Every process is started here and killed by its PID.
"""
import argparse
import json
import os
import select
import signal
import statistics
import subprocess
import sys
import time


class Lines:
    """The lines of a pipe, read with a deadline (select() on the
    descriptor, our own buffer: a buffered reader would hide lines from
    select)."""

    def __init__(self, f):
        self.fd = f.fileno()
        self.buf = b""

    def next(self, timeout):
        """The next line (str, without its newline), "" at the end, None
        at the deadline."""
        deadline = time.monotonic() + timeout
        while b"\n" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            r, _, _ = select.select([self.fd], [], [], left)
            if not r:
                return None
            chunk = os.read(self.fd, 65536)
            if not chunk:
                return ""
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return line.decode("utf-8", "replace")


def start_fixture(path, args):
    """A fixture process (after its "ready" line), its lines in .lines."""
    p = subprocess.Popen([path] + args, stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE)
    p.lines = Lines(p.stdout)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        line = p.lines.next(deadline - time.monotonic())
        if not line:
            break
        if line.startswith("ready"):
            return p
    kill(p)
    raise SystemExit(f"{path} {args}: no ready line")


def kill(p, sig=signal.SIGKILL):
    if p.poll() is None:
        os.kill(p.pid, sig)
    try:
        p.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.kill(p.pid, signal.SIGKILL)
        p.wait()


def progress(fx):
    """The fixture's count of rounds so far."""
    fx.stdin.write(b"\n")
    fx.stdin.flush()
    while True:
        line = fx.lines.next(60)
        if not line:
            raise SystemExit("a fixture ended or did not answer")
        if line.startswith("progress "):
            return int(line.split()[1])


def time_to_inversion(tinspect, fixtures, interval, extra, timeout):
    fx = start_fixture(os.path.join(fixtures, "fx_lockorder"), ["abba"])
    t0 = time.monotonic()
    tin = subprocess.Popen([tinspect, "--watch", interval, "--json", "--summary"]
                           + extra + [str(fx.pid)], stdout=subprocess.PIPE,
                           stderr=subprocess.DEVNULL)
    lines = Lines(tin.stdout)
    found, updates = None, 0
    deadline = t0 + timeout
    while found is None and time.monotonic() < deadline:
        line = lines.next(deadline - time.monotonic())
        if not line:
            break
        d = json.loads(line)
        if d.get("kind") == "summary":
            updates += 1
        elif d.get("event") == "lock_order_inversion":
            found = time.monotonic() - t0
    kill(tin, signal.SIGTERM)
    kill(fx)
    return found, updates


def pct(v, p):
    v = sorted(v)
    return v[min(len(v) - 1, int(round(p / 100 * (len(v) - 1))))]


def part1(a):
    print(f"== time from the start of a watch to lock_order_inversion "
          f"(fx_lockorder abba, --watch {a.interval}, {a.runs} runs per mode)")
    res = {"stop": [], "nonblocking": []}
    ups = {"stop": [], "nonblocking": []}
    for r in range(a.runs):
        for mode in res:
            extra = ["--nonblocking"] if mode == "nonblocking" else []
            t, u = time_to_inversion(a.tinspect, a.fixtures, a.interval, extra,
                                     a.timeout)
            print(f"run {r + 1:2d} {mode:12s} "
                  + (f"{t:7.3f} s after {u} updates" if t is not None
                     else f"not reported within {a.timeout} s ({u} updates)"),
                  flush=True)
            if t is not None:
                res[mode].append(t)
                ups[mode].append(u)
    for mode, v in res.items():
        if v:
            print(f"MEDIAN inversion {mode:12s} median {statistics.median(v):.3f} s "
                  f"max {max(v):.3f} s  updates median "
                  f"{statistics.median(ups[mode])} max {max(ups[mode])}  "
                  f"reported {len(v)}/{a.runs}")
        else:
            print(f"MEDIAN inversion {mode:12s} never reported")


def one_cost(a, fx_path, fx_args, cmd, seconds, settle):
    """Throughput of a fresh fixture under cmd (None: nobody), and the
    freezes and durations of cmd's summary lines after `settle` seconds."""
    fx = start_fixture(fx_path, fx_args)
    tin = None
    freezes, durations = [], []
    if cmd:
        tin = subprocess.Popen(cmd + [str(fx.pid)], stdout=subprocess.PIPE,
                               stderr=subprocess.DEVNULL)
        lines = Lines(tin.stdout)
    # settle: the first updates (session setup; a graph that still learns
    # its locks) are not what a watch costs for good; their lines are
    # read and dropped
    end = time.monotonic() + settle
    while tin and time.monotonic() < end:
        if lines.next(max(0, end - time.monotonic())) == "":
            break
    if not tin:
        time.sleep(settle)
    n0, t0 = progress(fx), time.monotonic()
    end = t0 + seconds
    while time.monotonic() < end:
        if tin is None:
            time.sleep(min(0.5, max(0, end - time.monotonic())))
            continue
        line = lines.next(max(0, end - time.monotonic()))
        if line == "":
            break
        if line:
            d = json.loads(line)
            if d.get("kind") == "summary" and d.get("update", 0) > 1:
                freezes.append(d["freeze_us"])
                durations.append(d["duration_us"])
    n1, t1 = progress(fx), time.monotonic()
    if tin:
        kill(tin, signal.SIGTERM)
    kill(fx)
    return (n1 - n0) / (t1 - t0), freezes, durations


def part2(a):
    watch = ["--watch", a.interval, "--json", "--summary"]
    modes = [("none", None),
             ("graph", [a.tinspect] + watch),
             ("no-graph", [a.tinspect] + watch + ["--no-lock-order"]),
             ("nb-graph", [a.tinspect] + watch + ["--nonblocking"]),
             ("nb-no-graph", [a.tinspect] + watch + ["--nonblocking", "--no-lock-order"])]
    if a.base:
        modes += [("base", [a.base] + watch),
                  ("base-nb", [a.base] + watch + ["--nonblocking"])]
    targets = [("fx_lock_contend 16", os.path.join(a.fixtures, "fx_lock_contend"), ["16"], 1.5),
               ("fx_lockorder abba", os.path.join(a.fixtures, "fx_lockorder"), ["abba"], 1.5)]
    if a.manylocks:
        # 1000 mutexes, 100 waited on at a time: the session knows them
        # all after about 10 updates
        settle = 12 * float(a.interval) + 2
        targets += [("manylocks 1000 array", a.manylocks, ["1000", "100"], settle),
                    ("manylocks 1000 spread", a.manylocks, ["1000", "100", "spread"], settle)]
    for label, path, args, settle in targets:
        print(f"== cost on {label}: {a.rounds} rounds x {a.seconds} s per mode, "
              f"--watch {a.interval}")
        rate = {m: [] for m, _ in modes}
        frz = {m: [] for m, _ in modes}
        dur = {m: [] for m, _ in modes}
        for r in range(a.rounds):
            for m, cmd in modes:
                v, f, d = one_cost(a, path, args, cmd, a.seconds, settle)
                rate[m].append(v)
                frz[m] += f
                dur[m] += d
                print(f"round {r + 1} {m:12s} {v:12.1f} rounds/s"
                      + (f"  freeze median {statistics.median(f)} us, "
                         f"duration median {statistics.median(d)} us ({len(f)} updates)"
                         if f else ""), flush=True)
        base = statistics.median(rate["none"])
        for m, _ in modes:
            line = (f"MEDIAN {label:20s} {m:12s} throughput {statistics.median(rate[m]):12.1f}/s"
                    f" ({statistics.median(rate[m]) / base * 100:6.2f} % of nobody watching)")
            if frz[m]:
                line += (f"  freeze median {statistics.median(frz[m])} us p90 "
                         f"{pct(frz[m], 90)} max {max(frz[m])} us  duration median "
                         f"{statistics.median(dur[m])} us  ({len(frz[m])} updates)")
            print(line, flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tinspect", required=True)
    ap.add_argument("--fixtures", required=True)
    ap.add_argument("--base", help="another tinspect to compare the cost with")
    ap.add_argument("--manylocks", help="bench/manylocks built: the freeze with "
                    "1000 locks known")
    ap.add_argument("-r", "--runs", type=int, default=10)
    ap.add_argument("-i", "--interval", default="0.5")
    ap.add_argument("-s", "--seconds", type=float, default=10)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--timeout", type=float, default=120)
    ap.add_argument("-p", "--parts", default="1,2")
    a = ap.parse_args()
    with open("/proc/loadavg") as f:
        print(f"load average at the start: {f.read().split()[0:3]}, {os.cpu_count()} CPUs")
    parts = a.parts.split(",")
    if "1" in parts:
        part1(a)
    if "2" in parts:
        part2(a)
    with open("/proc/loadavg") as f:
        print(f"load average at the end: {f.read().split()[0:3]}")


if __name__ == "__main__":
    main()
