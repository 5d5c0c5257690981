#!/usr/bin/python3
"""test_formats.py: the files tinspect writes for other tools,
each made from a real fixture and read by a real consumer of its format:

  --prometheus  served by node_exporter's textfile collector (Debian's
                prometheus-node-exporter, on 127.0.0.1, started and killed
                by PID here) and parsed by prometheus_client's parser, the
                values checked against what the fixture planted
  --folded      counts summing to threads x updates, the planted frames
                and wait leaves, hostile names sanitized
  --pprof       decoded by `go tool pprof -raw`, the same stacks and counts
                as the folded file of the same run

and the atomic replacement: a reader that reads the textfile in a loop
during a watch run never sees a part of it.  TAP on stdout.

Environment (meson sets it): TINSPECT, FIXTURES.  Run with Debian's
/usr/bin/python3 (python3-prometheus-client).
"""
import os
import re
import select
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import urllib.request

from prometheus_client.parser import text_string_to_metric_families

TINSPECT = os.environ["TINSPECT"]
FIXTURES = os.environ["FIXTURES"]
GLIBC = os.confstr("CS_GNU_LIBC_VERSION").split()[-1]

# ---- fixtures ------------------------------------------------------------------


class Fixture:
    """A program that plants a known state and says "ready" on stdout; it
    runs until its stdin is closed, and is killed by PID in any case."""

    def __init__(self, path, args=(), timeout=30):
        self.proc = subprocess.Popen([path, *args], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE)
        self.pid = self.proc.pid
        self.lines = []
        buf = b""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                self.kill()
                raise AssertionError(f"{path} did not get ready")
            r, _, _ = select.select([self.proc.stdout], [], [], left)
            if not r:
                continue
            chunk = os.read(self.proc.stdout.fileno(), 65536)
            if not chunk:
                self.kill()
                raise AssertionError(f"{path} exited before ready")
            buf += chunk
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                self.lines.append(line.decode(errors="replace"))
                if line.startswith(b"ready"):
                    return

    def line(self, prefix):
        return next(l for l in self.lines if l.startswith(prefix))

    def kill(self):
        if self.proc.poll() is None:
            os.kill(self.pid, signal.SIGKILL)
        self.proc.wait()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.kill()


def fixture(name, *args):
    return Fixture(os.path.join(FIXTURES, name), args)


def tasks_stopped(pid):
    """Whether any task of pid is in state T or t (a bug if tinspect is
    gone)."""
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except FileNotFoundError:
        return False
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/stat") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError):
            continue
        if state in "Tt":
            return True
    return False


def run_tinspect(args, timeout=120):
    r = subprocess.run([TINSPECT, *args], capture_output=True, timeout=timeout)
    return r


# ---- readers of the formats ---------------------------------------------------------


def parse_prom(text):
    """{(name, labels as a sorted tuple): value} and the families, by
    prometheus_client's parser; raises on a malformed exposition."""
    samples = {}
    families = {}
    for fam in text_string_to_metric_families(text):
        families[fam.name] = fam
        for s in fam.samples:
            key = (s.name, tuple(sorted(s.labels.items())))
            assert key not in samples, f"duplicate series {key}"
            samples[key] = s.value
    return samples, families


def value(samples, name, **labels):
    return samples[(name, tuple(sorted(labels.items())))]


def read_folded(path):
    """{stack: count}; every line "frames COUNT", each stack once."""
    out = {}
    with open(path, "rb") as f:
        data = f.read()
    assert data.endswith(b"\n"), "the folded file ends with a newline"
    for line in data.decode("utf-8").split("\n")[:-1]:
        m = re.fullmatch(r"(\S.*) (\d+)", line)
        assert m, f"not a folded line: {line!r}"
        stack, count = m.group(1), int(m.group(2))
        assert stack not in out, f"stack twice: {stack}"
        out[stack] = count
    return out


def go_pprof_raw(path):
    """The samples of a pprof file as `go tool pprof -raw` decodes them:
    [(count, [function names root first], {label: value})]."""
    tmp = tempfile.mkdtemp(prefix="tinspect-gocache-")
    env = dict(os.environ, HOME=tmp, GOCACHE=os.path.join(tmp, "cache"),
               GOFLAGS="-mod=mod", GOPROXY="off", GOTOOLCHAIN="local")
    r = subprocess.run(["go", "tool", "pprof", "-raw", path], env=env,
                       capture_output=True, timeout=300)
    subprocess.run(["rm", "-rf", tmp])
    assert r.returncode == 0, r.stderr.decode(errors="replace")
    text = r.stdout.decode("utf-8")
    samples_part = text.split("\nSamples:\n", 1)[1].split("\nLocations\n", 1)[0]
    locs_part = text.split("\nLocations\n", 1)[1].split("\nMappings\n", 1)[0]
    func = {}
    for line in locs_part.splitlines():
        # "    17: 0x0 M=1 [futex mutex audit_lock] :0 s=0"
        m = re.fullmatch(r"\s*(\d+): 0x[0-9a-f]+ M=\d+ (.*) (\S*):(\d+) s=\d+",
                         line)
        assert m, f"not a location line: {line!r}"
        func[int(m.group(1))] = m.group(2)
    out = []
    # a sample line, then its labels; a label value may hold a newline of
    # its own (-raw prints it as it is): lines up to the next sample line
    # are its labels
    cur = None
    for line in samples_part.splitlines()[1:]:  # past "threads/count"
        m = re.fullmatch(r"\s*(\d+): ([\d ]+)", line)
        if m:
            ids = [int(x) for x in m.group(2).split()]
            cur = [int(m.group(1)), [func[x] for x in reversed(ids)], ""]
            out.append(cur)
        else:
            assert cur, f"labels before a sample: {line!r}"
            cur[2] += line + "\n"
    out = [(c, f, dict(re.findall(r"(\w+):\[([^\]]*)\]", l))) for c, f, l in out]
    return out


# ---- the tests --------------------------------------------------------------------------

ABBA_THREADS = 5  # main, post-transfer, audit-ledger, 2 idle pool workers


def check_abba_metrics(samples, pid):
    assert value(samples, "tinspect_deadlock_cycles") == 1
    assert value(samples, "tinspect_deadlocked_threads") == 2
    assert value(samples, "tinspect_threads_blocked", kind="mutex") == 2
    assert value(samples, "tinspect_threads_blocked", kind="cond") == 2
    assert value(samples, "tinspect_threads_blocked", kind="rwlock") == 0
    assert value(samples, "tinspect_lock_waiters", lock="ledger_lock",
                 kind="mutex") == 1
    assert value(samples, "tinspect_lock_waiters", lock="audit_lock",
                 kind="mutex") == 1
    assert value(samples, "tinspect_lock_waiters", lock="pool_cond",
                 kind="cond") == 2
    assert value(samples, "tinspect_orphaned_locks") == 0
    assert value(samples, "tinspect_threads_with_errors") == 0
    states = {dict(k[1])["state"]: v for k, v in samples.items()
              if k[0] == "tinspect_threads"}
    assert sum(states.values()) == ABBA_THREADS, states
    assert states["sleeping"] == ABBA_THREADS, states
    info = [dict(k[1]) for k in samples if k[0] == "tinspect_target_info"]
    assert len(info) == 1
    assert info[0]["pid"] == str(pid)
    assert info[0]["exe"].endswith("/fx_lock_abba")
    assert info[0]["glibc_version"] == GLIBC
    assert value(samples, "tinspect_target_info", **info[0]) == 1
    assert 0 < value(samples, "tinspect_freeze_seconds") < 60
    assert value(samples, "tinspect_update_duration_seconds") >= \
        value(samples, "tinspect_freeze_seconds")
    assert abs(value(samples, "tinspect_last_update_timestamp_seconds")
               - time.time()) < 600
    # no TID, no address as a label value
    for (name, labels), _ in samples.items():
        for k, v in labels:
            assert not re.fullmatch(r"0x[0-9a-f]+", v), (name, k, v)
            assert k not in ("tid", "addr", "address"), (name, k)


def check_help_and_type(text, families):
    for name, fam in families.items():
        # prometheus_client drops _total from a counter family's name
        exposed = name + "_total" if fam.type == "counter" else name
        assert f"# HELP {exposed} " in text, f"no HELP for {exposed}"
        assert f"# TYPE {exposed} {fam.type}\n" in text, f"no TYPE for {exposed}"
        assert exposed.startswith("tinspect_"), exposed
        assert fam.documentation, exposed


def test_prometheus_once(tmp):
    """Without --watch: one update, the textfile written once (the folded
    and pprof files too), the report on stdout as usual; the values are the
    planted deadlock's."""
    path = os.path.join(tmp, "tinspect.prom")
    with fixture("fx_lock_abba", "--idle", "2") as fx:
        folded = os.path.join(tmp, "once.folded")
        pprof = os.path.join(tmp, "once.pb.gz")
        r = run_tinspect(["--prometheus", path, "--folded", folded,
                          "--pprof", pprof, str(fx.pid)])
        assert not tasks_stopped(fx.pid)
        # and the samples of the one update
        assert sum(read_folded(folded).values()) == ABBA_THREADS
        assert sum(c for c, _, _ in go_pprof_raw(pprof)) == ABBA_THREADS
        assert r.returncode == 0, r.stderr
        assert b"deadlock" in r.stdout.lower(), "the report still goes to stdout"
        text = open(path).read()
        samples, families = parse_prom(text)
        check_abba_metrics(samples, fx.pid)
        check_help_and_type(text, families)
        assert value(samples, "tinspect_updates_total") == 1
        assert value(samples, "tinspect_update_errors_total") == 0
        assert families["tinspect_updates"].type == "counter"
        assert families["tinspect_deadlock_cycles"].type == "gauge"
        # one update cannot tell how long a wait lasts: unknown, not 0
        assert "tinspect_hung_threads" not in families
        assert "tinspect_longest_wait_seconds" not in families
        assert os.stat(path).st_mode & 0o777 == 0o666 & ~current_umask()
        assert [f for f in os.listdir(tmp) if f.startswith(".")] == [], \
            "no temporary file is left behind"


def current_umask():
    m = os.umask(0)
    os.umask(m)
    return m


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def scrape(port, deadline):
    last = None
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics",
                                        timeout=5) as resp:
                return resp.read().decode("utf-8")
        except OSError as e:  # not listening yet
            last = e
            time.sleep(0.1)
    raise AssertionError(f"node_exporter did not answer: {last}")


def test_node_exporter(tmp):
    """The textfile collector serves the file, without a scrape error, and
    a hostile executable name (quotes, backslash, newline, invalid UTF-8)
    reaches Prometheus escaped."""
    textdir = os.path.join(tmp, "textfile")
    os.mkdir(textdir)
    # a copy of the fixture under a name no label may pass through raw
    bindir = os.path.join(tmp.encode(), b'bin "q\\ \xff\nx')
    os.mkdir(bindir)
    exe = os.path.join(bindir, b"fx_lock_abba")
    subprocess.run([b"cp", os.path.join(FIXTURES, "fx_lock_abba").encode(), exe],
                   check=True)
    port = free_port()
    node = subprocess.Popen(
        ["prometheus-node-exporter", "--collector.disable-defaults",
         "--collector.textfile", f"--collector.textfile.directory={textdir}",
         f"--web.listen-address=127.0.0.1:{port}"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        fx = Fixture(exe, ["--idle", "2"])
        try:
            r = run_tinspect(["--watch", "0.2", "--count", "2", "--summary",
                              "--prometheus", os.path.join(textdir, "tinspect.prom"),
                              str(fx.pid)])
            assert r.returncode == 0, r.stderr
            text = scrape(port, time.monotonic() + 60)
        finally:
            fx.kill()
        samples, _ = parse_prom(text)
        assert value(samples, "node_textfile_scrape_error") == 0, text
        assert value(samples, "tinspect_deadlock_cycles") == 1
        assert value(samples, "tinspect_threads_blocked", kind="mutex") == 2
        assert value(samples, "tinspect_updates_total") == 2
        info = [dict(k[1]) for k in samples if k[0] == "tinspect_target_info"]
        assert len(info) == 1, info
        assert info[0]["exe"] == os.path.join(
            bindir, b"fx_lock_abba").decode("utf-8", errors="replace"), info
        assert info[0]["pid"] == str(fx.pid)
    finally:
        os.kill(node.pid, signal.SIGTERM)
        try:
            node.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.kill(node.pid, signal.SIGKILL)
            node.wait()


def test_hung_threads(tmp):
    """In a watch, the two deadlocked mutex waiters are hung once their
    wait is older than --hung-after; the idle pool threads (a condvar)
    never are.  The default threshold is 60 seconds."""
    path = os.path.join(tmp, "h.prom")
    with fixture("fx_lock_abba", "--idle", "2") as fx:
        r = run_tinspect(["--watch", "0.3", "--count", "5", "--summary",
                          "--hung-after", "0.5", "--prometheus", path,
                          str(fx.pid)])
        assert r.returncode == 0, r.stderr
        text = open(path).read()
        samples, families = parse_prom(text)
        check_help_and_type(text, families)
        assert value(samples, "tinspect_hung_threads") == 2, text
        assert value(samples, "tinspect_hung_after_seconds") == 0.5
        # the waits were seen from the first capture to the fifth: the
        # fifth update starts 4 intervals after the first, but the first
        # capture happens some way into its update (the first scan is the
        # slow one), at most at the second's start: 3 intervals for sure
        assert 0.9 <= value(samples, "tinspect_longest_wait_seconds") < 600
        r = run_tinspect(["--watch", "0.1", "--count", "2", "--summary",
                          "--prometheus", path, str(fx.pid)])
        assert r.returncode == 0, r.stderr
        samples, _ = parse_prom(open(path).read())
        assert value(samples, "tinspect_hung_after_seconds") == 60
        assert value(samples, "tinspect_hung_threads") == 0


def watch_abba(tmp, count, extra=()):
    folded = os.path.join(tmp, "t.folded")
    pprof = os.path.join(tmp, "t.pb.gz")
    with fixture("fx_lock_abba", "--idle", "2") as fx:
        r = run_tinspect(["--watch", "0.1", "--count", str(count), "--summary",
                          "--folded", folded, "--pprof", pprof, *extra,
                          str(fx.pid)])
        assert not tasks_stopped(fx.pid)
    assert r.returncode == 0, r.stderr
    return folded, pprof


def test_folded(tmp):
    """One sample per thread per update; the planted frames, root first,
    and the wait as the leaf."""
    updates = 3
    folded, _ = watch_abba(tmp, updates)
    stacks = read_folded(folded)
    assert sum(stacks.values()) == ABBA_THREADS * updates, stacks

    def one(pred):
        found = [(s, c) for s, c in stacks.items() if pred(s.split(";"))]
        assert len(found) == 1, (found, stacks)
        return found[0]

    s, c = one(lambda f: "post_transfer" in f)
    assert s.endswith(";[futex mutex audit_lock]") and c == updates, s
    f = s.split(";")
    assert f.index("start_thread") < f.index("post_transfer") < f.index("take"), s
    s, c = one(lambda f: "audit_ledger" in f)
    assert s.endswith(";[futex mutex ledger_lock]") and c == updates, s
    s, c = one(lambda f: "pool_worker" in f)
    assert s.endswith(";[futex cond pool_cond]") and c == 2 * updates, s
    s, c = one(lambda f: "main" in f)
    assert s.startswith("_start;") and s.endswith(";[syscall read]"), s


def test_folded_by_thread_name(tmp):
    """--folded-by thread-name: the thread's name at the root."""
    folded, _ = watch_abba(tmp, 2, ["--folded-by", "thread-name"])
    stacks = read_folded(folded)
    assert sum(stacks.values()) == ABBA_THREADS * 2
    roots = {}
    for s, c in stacks.items():
        root = s.split(";")[0]
        roots[root] = roots.get(root, 0) + c
    assert roots == {"post-transfer": 2, "audit-ledger": 2, "pool": 4,
                     "fx_lock_abba": 2}, roots


def test_pprof(tmp):
    """go tool pprof decodes the profile: the same stacks with the same
    counts as the folded file of the same run, and the labels."""
    updates = 3
    folded, pprof = watch_abba(tmp, updates)
    with open(pprof, "rb") as f:
        assert f.read(2) == b"\x1f\x8b", "gzip-compressed"
    stacks = read_folded(folded)
    raw = go_pprof_raw(pprof)
    from_pprof = {}
    for count, frames, labels in raw:
        key = ";".join(frames)
        from_pprof[key] = from_pprof.get(key, 0) + count
        assert labels["state"] == "sleeping", labels
        assert labels["thread_name"] in ("post-transfer", "audit-ledger", "pool",
                                         "fx_lock_abba"), labels
        if labels["thread_name"] == "post-transfer":
            assert labels["lock"] == "audit_lock" and \
                labels["wait"] == "futex mutex", labels
        if labels["thread_name"] == "pool":
            assert labels["lock"] == "pool_cond", labels
    assert from_pprof == stacks, (from_pprof, stacks)
    assert sum(c for c, _, _ in raw) == ABBA_THREADS * updates


def test_hostile_names(tmp):
    """Thread names with ';', blanks, a newline, quotes and invalid UTF-8:
    the folded file keeps one field per frame, the pprof labels decode."""
    names = [b"a;b c", b"q\"\\\n\xff\x01", b"[running] 9"]
    specs = ["alpha:" + n.hex() for n in names]
    folded = os.path.join(tmp, "h.folded")
    pprof = os.path.join(tmp, "h.pb.gz")
    prom = os.path.join(tmp, "h.prom")
    with fixture("fx_threads", *specs) as fx:
        nthreads = int(fx.line("ready").split()[2])
        r = run_tinspect(["--watch", "0.1", "--count", "2", "--summary",
                          "--folded", folded, "--folded-by", "thread-name",
                          "--pprof", pprof, "--prometheus", prom, str(fx.pid)])
        assert r.returncode == 0, r.stderr
    stacks = read_folded(folded)
    assert sum(stacks.values()) == 2 * nthreads, (stacks, nthreads)
    roots = {s.split(";")[0] for s in stacks}
    assert "a:b_c" in roots, roots
    assert 'q"\\???' in roots, roots
    assert "[running]_9" in roots, roots
    for s in stacks:
        assert " " not in s.replace("[futex cond never]", "").replace(
            "[syscall read]", "").replace("[futex cond registered]", ""), s
    raw = go_pprof_raw(pprof)
    assert sum(c for c, _, _ in raw) == 2 * nthreads
    # labels keep the names as they are, made UTF-8
    label_names = {l.get("thread_name") for _, _, l in raw}
    # (-raw prints a label as key:[value], so "[running] 9" cannot be told
    # apart there; the two others can)
    assert {"a;b c", 'q"\\\n\ufffd\x01'} <= label_names, label_names
    parse_prom(open(prom).read())


def test_atomic_replacement(tmp):
    """A reader that reads the textfile in a loop during a watch run sees
    whole files only: each parses and ends with its complete last line."""
    path = os.path.join(tmp, "a.prom")
    stop = threading.Event()
    seen = {"reads": 0, "versions": set(), "bad": []}

    def reader():
        while not stop.is_set():
            try:
                with open(path) as f:
                    text = f.read()
            except FileNotFoundError:
                continue
            seen["reads"] += 1
            try:
                assert text.endswith("\n")
                last = text.splitlines()[-1]
                assert re.fullmatch(r"tinspect_update_errors_total \d+", last), last
                samples, _ = parse_prom(text)
                seen["versions"].add(value(samples, "tinspect_updates_total"))
            except Exception as e:  # noqa: BLE001 - recorded, asserted below
                seen["bad"].append((repr(e), text[-200:]))

    with fixture("fx_lock_abba", "--idle", "2") as fx:
        t = threading.Thread(target=reader)
        t.start()
        try:
            r = run_tinspect(["--watch", "0.02", "--count", "60", "--summary",
                              "--prometheus", path, str(fx.pid)])
        finally:
            stop.set()
            t.join()
    assert r.returncode == 0, r.stderr
    assert not seen["bad"], seen["bad"][:3]
    assert len(seen["versions"]) >= 5, seen["versions"]
    assert seen["reads"] > 60, seen["reads"]
    assert [f for f in os.listdir(tmp) if f.startswith(".")] == []


def test_sigint_writes_samples(tmp):
    """A watch run ended by SIGINT (or SIGTERM) between updates writes the
    folded and pprof files of every update made, then dies of the
    signal, the target running."""
    for sig in (signal.SIGINT, signal.SIGTERM):
        folded = os.path.join(tmp, f"s{sig}.folded")
        pprof = os.path.join(tmp, f"s{sig}.pb.gz")
        prom = os.path.join(tmp, f"s{sig}.prom")
        with fixture("fx_lock_abba", "--idle", "2") as fx:
            p = subprocess.Popen([TINSPECT, "--watch", "0.3", "--summary",
                                  "--folded", folded, "--pprof", pprof,
                                  "--prometheus", prom, str(fx.pid)],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            try:
                deadline = time.monotonic() + 60
                while time.monotonic() < deadline:
                    try:
                        samples, _ = parse_prom(open(prom).read())
                        if value(samples, "tinspect_updates_total") >= 3:
                            break
                    except FileNotFoundError:
                        pass
                    time.sleep(0.05)
                os.kill(p.pid, sig)
                p.wait(timeout=60)
            finally:
                if p.poll() is None:
                    os.kill(p.pid, signal.SIGKILL)
                    p.wait()
            assert p.returncode == -sig, (p.returncode, p.stderr.read())
            assert not tasks_stopped(fx.pid)
        updates = value(parse_prom(open(prom).read())[0], "tinspect_updates_total")
        assert updates >= 3
        stacks = read_folded(folded)
        assert sum(stacks.values()) == ABBA_THREADS * updates, (stacks, updates)
        raw = go_pprof_raw(pprof)
        assert sum(c for c, _, _ in raw) == ABBA_THREADS * updates


def test_core(tmp):
    """--folded and --pprof of a core (gcore of the ABBA fixture): one
    sample per thread, the planted waits, the same stacks in both files;
    --prometheus is refused (status 2, nothing written): its gauges are a
    live process's.  Before, all three were accepted and nothing written."""
    with fixture("fx_lock_abba", "--idle", "2") as fx:
        prefix = os.path.join(tmp, "gcore")
        r = subprocess.run(["gcore", "-o", prefix, str(fx.pid)],
                           capture_output=True, timeout=300)
        assert r.returncode == 0, r.stderr.decode(errors="replace")
        assert not tasks_stopped(fx.pid)
        core = f"{prefix}.{fx.pid}"
    folded = os.path.join(tmp, "core.folded")
    pprof = os.path.join(tmp, "core.pb.gz")
    r = run_tinspect(["--core", core, "--check", "--folded", folded,
                      "--pprof", pprof])
    assert r.returncode == 10, r  # the deadlock; files written all the same
    stacks = read_folded(folded)
    assert sum(stacks.values()) == ABBA_THREADS, stacks
    assert any(s.endswith(";[futex mutex audit_lock]") and "post_transfer" in s
               for s in stacks), stacks
    raw = go_pprof_raw(pprof)
    from_pprof = {}
    for count, frames, _ in raw:
        key = ";".join(frames)
        from_pprof[key] = from_pprof.get(key, 0) + count
    assert from_pprof == stacks, (from_pprof, stacks)
    prom = os.path.join(tmp, "core.prom")
    r = run_tinspect(["--core", core, "--prometheus", prom])
    assert r.returncode == 2 and b"--prometheus" in r.stderr, r
    assert not os.path.exists(prom)


def test_usage(tmp):
    """Wrong uses say so before anything is attached."""
    with fixture("fx_lock_abba") as fx:
        r = run_tinspect(["--folded-by", "tid", "--folded", "x", str(fx.pid)])
        assert r.returncode == 2 and b"thread-name" in r.stderr, r
        r = run_tinspect(["--folded-by", "thread-name", str(fx.pid)])
        assert r.returncode == 2, r
        r = run_tinspect(["--prometheus", os.path.join(tmp, "no", "such", "x.prom"),
                          str(fx.pid)])
        assert r.returncode == 2 and b"x.prom" in r.stderr, r
        r = run_tinspect(["--prometheus", tmp, str(fx.pid)])
        assert r.returncode == 2, r
        assert not tasks_stopped(fx.pid)


TESTS = [test_prometheus_once, test_node_exporter, test_hung_threads, test_folded,
         test_folded_by_thread_name, test_pprof, test_hostile_names,
         test_atomic_replacement, test_sigint_writes_samples, test_core,
         test_usage]


def main():
    print(f"1..{len(TESTS)}", flush=True)
    failed = 0
    for n, t in enumerate(TESTS, 1):
        tmp = tempfile.mkdtemp(prefix="tinspect-formats-")
        try:
            t(tmp)
            print(f"ok {n} - {t.__name__}", flush=True)
        except Exception:  # noqa: BLE001 - every failure is reported as TAP
            failed += 1
            print(f"not ok {n} - {t.__name__}", flush=True)
            for line in traceback.format_exc().splitlines():
                print("# " + line, flush=True)
        finally:
            subprocess.run(["rm", "-rf", tmp])
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
