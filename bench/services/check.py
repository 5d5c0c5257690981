#!/usr/bin/python3
"""check.py: what bench/services.sh asserts about tinspect's JSON on real
services.  Each subcommand reads the documents the script saved,
validates every one against the snapshot schema, prints one result line
starting with "RESULT <service>:" and exits non-zero if a check failed.

  check.py mariadb SCHEMA EXE BIAS snap-*.json
  check.py jvm SCHEMA DOC.json EU_STACK.txt JCMD.txt
  check.py cpython SCHEMA DOC.json TEXT.txt MUTEX_A MUTEX_B NWAIT
  check.py healthy SERVICE SCHEMA DIR [go]
      DIR holds snap-N.json, text-N.txt and codes (tinspect's exit status
      of each snapshot, one a line), eu.txt (eu-stack -p) between
      around-1.json and around-2.json; with "go", the Go runtime and its
      version must be recognised.
  check.py lockorder SERVICE MODE SCHEMA STREAM.ndjson GRAPH.json SECONDS
      a watch of SECONDS with --lock-order GRAPH.json: every
      line valid (tinspect-stream.schema.json), no lock_order_inversion
      event, no inversion in any summary line nor in the saved graph
      (tinspect-lockorder.schema.json); what the graph learned, and the
      waits that could not contribute, said.  Prints "RESULT-lockorder
      SERVICE MODE: ...".
"""
import os
import statistics
import bisect
import json
import re
import subprocess
import sys

import jsonschema


def load(schema, path):
    with open(path) as f:
        doc = json.load(f)
    jsonschema.validate(doc, schema)
    return doc


def physical(thread):
    st = thread.get("stack") or {}
    return [f for f in st.get("frames", []) if not f["inlined"]]


def reaches(thread, names=("start_thread", "__clone3", "clone3", "clone")):
    return any(f["symbol"] in names for f in physical(thread))


def nm_objects(exe):
    """Sized data objects of exe's .dynsym (what gdb names without debug
    info): sorted (start, end, name)."""
    out = subprocess.run(["nm", "-D", "-S", "-C", "--defined-only", exe],
                         capture_output=True, text=True, check=True).stdout
    objs = []
    for line in out.splitlines():
        m = re.match(r"([0-9a-f]+) ([0-9a-f]+) ([BbDdRrVv]) (.*)$", line)
        if m:
            start, size = int(m.group(1), 16), int(m.group(2), 16)
            if size:
                objs.append((start, start + size, m.group(4)))
    objs.sort()
    return objs


def covering(objs, starts, off):
    """The object of objs that holds off (a few steps back for nested
    ones), or None."""
    i = bisect.bisect_right(starts, off) - 1
    for _ in range(64):
        if i < 0:
            break
        s, e, name = objs[i]
        if s <= off < e:
            return name
        i -= 1
    return None


def mariadb(schema, exe, bias, paths):
    objs = nm_objects(exe)
    starts = [o[0] for o in objs]
    bad = []
    n = deadlocks = stalls = parks = errors = 0
    named = expected = 0
    cond_at_word = 0
    waits = 0
    for p in paths:
        doc = load(schema, p)
        n += 1
        deadlocks += len(doc["deadlocks"])
        stalls += len(doc["stalls"])
        errors += doc["capture"]["threads_with_errors"]
        for t in doc["threads"]:
            b = t["blocked_on"]
            if b:
                waits += 1
                if b["parked"]:
                    parks += 1
        for lk in doc["locks"]:
            addr = int(lk["addr"], 16)
            if lk["kind"] == "cond" and not lk["object_known"]:
                cond_at_word += 1
            name = covering(objs, starts, addr - bias)
            if name is None:
                continue
            expected += 1
            sym = lk["symbol"]
            if sym and sym["symbol"] == name:
                named += 1
            else:
                bad.append("%s: lock %s is %s in nm, tinspect says %s" %
                           (p, lk["addr"], name, sym and sym["symbol"]))
    ok = n and not deadlocks and not stalls and not parks and named == expected \
        and not cond_at_word
    print("RESULT mariadb: %d snapshots, %d waits; deadlocks %d, stalls %d, parks %d, "
          "conds listed at their futex word %d, thread errors %d; locks in globals named "
          "as nm names them %d/%d -> %s" %
          (n, waits, deadlocks, stalls, parks, cond_at_word, errors, named, expected,
           "ok" if ok else "FAIL"))
    for b in bad[:10]:
        print("  " + b)
    return ok


def jvm(schema, path, eu_path, jcmd_path):
    doc = load(schema, path)
    threads = doc["threads"]
    main_tid = doc["process"]["pid"]
    others = [t for t in threads if t["tid"] != main_tid]
    reached = sum(1 for t in others if reaches(t))
    ends = {}
    for t in others:
        e = (t["stack"] or {}).get("end")
        ends[e] = ends.get(e, 0) + 1
    warned = any("jcmd %d Thread.print" % main_tid in w
                 for w in doc["capture"]["warnings"])
    runtimes = [r["name"] for r in doc["process"]["runtimes"]]
    # eu-stack on the same process (it stops one thread at a time)
    eu_total = eu_reached = 0
    cur = None
    with open(eu_path) as f:
        for line in f:
            m = re.match(r"TID (\d+):", line)
            if m:
                cur = int(m.group(1))
                if cur != main_tid:
                    eu_total += 1
                continue
            if cur and cur != main_tid and re.search(r"\b(start_thread|__clone3)\b", line):
                eu_reached += 1
                cur = None
    with open(jcmd_path) as f:
        jcmd_deadlock = "Found one Java-level deadlock" in f.read()
    ok = (not doc["stalls"] and warned and "jvm" in runtimes and
          reached == len(others) and doc["capture"]["threads_with_errors"] == 0)
    print("RESULT jvm: %d threads; stalls %d, deadlocks %d; warning %s; stacks reaching "
          "start_thread %d/%d (eu-stack %d/%d); ends %s; thread errors %d; "
          "jcmd sees the Java deadlock: %s -> %s" %
          (len(threads), len(doc["stalls"]), len(doc["deadlocks"]),
           "yes" if warned else "NO", reached, len(others), eu_reached, eu_total,
           ",".join("%s %d" % kv for kv in sorted(ends.items(), key=str)),
           doc["capture"]["threads_with_errors"], "yes" if jcmd_deadlock else "no",
           "ok" if ok else "FAIL"))
    return ok


def cpython(schema, path, text_path, m_a, m_b, nwait):
    doc = load(schema, path)
    found = False
    for d in doc["deadlocks"]:
        addrs = {int(lk["addr"], 16) for lk in d["locks"]}
        if addrs == {m_a, m_b}:
            found = True
    sems = sum(1 for t in doc["threads"]
               if t["blocked_on"] and t["blocked_on"]["kind"] == "sem")
    warned = "cpython" in [r["name"] for r in doc["process"]["runtimes"]]
    with open(text_path) as f:
        text = f.read()
    # the main thread sleeps with a timeout: it can make progress, so the
    # Lock waits are counted below the verdict (with CPython's note), not
    # listed as a possible deadlock; the ctypes ABBA is the deadlock
    und = doc["verdict"]["undecided"]
    counted = sum(k["threads"] for k in und["by_kind"] if k["kind"] == "sem")
    m = re.search(r"(\d+) threads in untimed semaphore waits \(CPython: a "
                  r"threading.Lock is a semaphore\)", text)
    said = (counted >= nwait and not und["listed"] and m is not None and
            int(m.group(1)) == counted and doc["verdict"]["deadlock"] == "found")
    ok = found and sems >= nwait and warned and said
    print("RESULT cpython: %d threads; pthread-mutex ABBA through ctypes found: %s; "
          "threading.Lock waiters seen as semaphore waits %d/%d, counted below the "
          "verdict with CPython's note, not listed: %s; warning %s -> %s" %
          (len(doc["threads"]), "yes" if found else "NO", sems, nwait,
           "yes" if said else "NO", "yes" if warned else "NO", "ok" if ok else "FAIL"))
    return ok


def eu_tids(path):
    tids = set()
    with open(path) as f:
        for line in f:
            m = re.match(r"TID (\d+):", line)
            if m:
                tids.add(int(m.group(1)))
    return tids


def go_version(doc):
    """The Go version tinspect names for the process, or None."""
    for r in doc["process"]["runtimes"]:
        if r["name"] != "go":
            continue
        for v in (r.get("version"), r.get("note")):
            m = re.search(r"\bgo1\.\d+(\.\d+)?", v or "")
            if m:
                return m.group(0)
    return None


def healthy(service, schema, d, want_go):
    """A healthy service under load: every snapshot valid, exit 0, the
    verdict "No deadlock found" (text and JSON), the threads eu-stack
    lists the ones tinspect lists."""
    import glob
    import os
    snaps = sorted(glob.glob(os.path.join(d, "snap-*.json")))
    n = len(snaps)
    with open(os.path.join(d, "codes")) as f:
        codes = [int(c) for c in f.read().split()]
    clean = sum(1 for c in codes if c == 0)
    none_found = said = 0
    idle = {}
    go = None
    go_seen = 0
    invalid = 0
    for p in snaps:
        try:
            doc = load(schema, p)
        except (ValueError, jsonschema.ValidationError):
            invalid += 1	# its exit status says why
            continue
        v = doc["verdict"]
        none_found += v["deadlock"] == "none_found"
        for k in v["undecided"]["by_kind"]:
            idle[k["kind"]] = max(idle.get(k["kind"], 0), k["threads"])
        gv = go_version(doc)
        go_seen += gv is not None
        go = go or gv
        t = p.replace("snap-", "text-").replace(".json", ".txt")
        with open(t) as f:
            said += "\nNo deadlock found.\n" in f.read()
    eu = eu_tids(os.path.join(d, "eu.txt"))
    agree = False
    nthreads = 0
    for a in ("around-1.json", "around-2.json"):
        try:
            doc = load(schema, os.path.join(d, a))
        except (ValueError, jsonschema.ValidationError):
            continue
        tids = {t["tid"] for t in doc["threads"]}
        nthreads = len(tids)
        agree = agree or (tids == eu and len(eu) > 0)
    ok = (n > 0 and not invalid and clean == n == len(codes) and none_found == n and
          said == n and agree and (not want_go or go_seen == n))
    idle_s = ", ".join("%d %s" % (c, k) for k, c in sorted(idle.items())) or "none"
    line = ("RESULT %s: %d snapshots (%d not valid JSON); exit 0 in %d/%d; "
            "\"No deadlock found\" in %d/%d "
            "(JSON none_found %d/%d); undecided waits at most: %s; threads agree with "
            "eu-stack: %s (%d threads, eu-stack %d)" %
            (service, n, invalid, clean, len(codes), said, n, none_found, n, idle_s,
             "yes" if agree else "NO", nthreads, len(eu)))
    if want_go:
        line += "; Go recognised%s in %d/%d" % (" (%s)" % go if go else "", go_seen, n)
    print(line + " -> " + ("ok" if ok else "FAIL"))
    return ok


def lockorder(service, mode, schema_path, stream_path, graph_path, seconds):
    base = os.path.dirname(schema_path)
    with open(os.path.join(base, "tinspect-stream.schema.json")) as f:
        stream_schema = json.load(f)
    with open(os.path.join(base, "tinspect-lockorder.schema.json")) as f:
        graph_schema = json.load(f)
    stream = jsonschema.Draft202012Validator(stream_schema)
    bad, events, most, freezes = [], 0, 0, []
    with open(stream_path) as f:
        for n, line in enumerate(f):
            try:
                d = json.loads(line)
            except ValueError:
                bad.append(f"line {n + 1} is no JSON")
                continue
            for e in stream.iter_errors(d):
                bad.append(f"line {n + 1}: {e.message}")
                break
            if d.get("event") == "lock_order_inversion":
                events += 1
            if d.get("kind") == "summary":
                most = max(most, d.get("lock_order_inversions", 0))
                freezes.append(d["freeze_us"])
    ok = not bad and events == 0 and most == 0
    try:
        with open(graph_path) as f:
            g = json.load(f)
        jsonschema.validate(g, graph_schema)
    except (OSError, ValueError, jsonschema.ValidationError) as e:
        bad.append(f"the saved graph: {e}")
        g = None
    if g is None or g["inversions"]:
        ok = False
    enough = len(freezes) >= 10
    ok = ok and enough
    w = g["waits"] if g else {}
    none = sum(w.get(k, 0) for k in ("cond", "sem", "barrier", "futex", "join"))
    kinds = ", ".join(f"{w[k]} {k}" for k in ("cond", "sem", "barrier", "futex", "join")
                      if w.get(k))
    line = (f"RESULT-lockorder {service} {mode}: {len(freezes)} updates in {seconds} s"
            + (f" (freeze median {statistics.median(freezes)} us)" if freezes else "")
            + (f", {len(g['locks'])} locks, {len(g['edges'])} orders learned, "
               f"{w.get('contributed', 0)} waits on mutexes/rwlocks used, "
               f"{w.get('held_unknown', 0)} not (thread could have run), {none} could "
               f"not contribute ({kinds or 'none'}); {len(g['inversions'])} inversions "
               f"in the graph" if g else "")
            + f", {events} lock_order_inversion events")
    for b in bad[:5]:
        print("  " + b)
    if not enough:
        print("  fewer than 10 updates: the watch did not run")
    print(line + " -> " + ("ok" if ok else "FAIL"))
    return ok


def main():
    what = sys.argv[1]
    args = sys.argv[2:]
    if what == "lockorder":
        sys.exit(0 if lockorder(*args[:5], int(args[5])) else 1)
    if what == "healthy":	# check.py healthy SERVICE SCHEMA DIR [go]
        args = [args[1], args[0]] + args[2:]
    schema_path = args[0]
    with open(schema_path) as f:
        schema = json.load(f)
    a = args[1:]
    if what == "mariadb":
        ok = mariadb(schema, a[0], int(a[1], 0), a[2:])
    elif what == "jvm":
        ok = jvm(schema, a[0], a[1], a[2])
    elif what == "cpython":
        ok = cpython(schema, a[0], a[1], int(a[2], 0), int(a[3], 0), int(a[4]))
    elif what == "healthy":
        ok = healthy(a[0], schema, a[1], len(a) > 2 and a[2] == "go")
    else:
        sys.exit(__doc__)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
