#!/usr/bin/python3
"""check-cycles.py [BUILDDIR]: do two files of a module depend on each other
in a circle?

Each module (agent, libtinspect, dbsession, proc_service, arch) is layered
inside too: a file either serves the others or uses them, never both ways
round (docs/ARCHITECTURE.md, CONTRIBUTING.md).  This reads the truth from
the build, not from the intentions:

  - symbols: the build's compile_commands.json names the object of every
    source file; a module's files are the sources under its folder,
    subfolders included (generated sources are not ours and left out).
    For every object, the global symbols it defines and the ones it uses
    (nm); file A depends on file B when A uses a symbol B defines.  A call
    through a function pointer (a backend's ops table) is no dependency of
    the caller, which is the point of such a seam: the table's own file
    depends on what it lists.
  - headers: the #include "..." lines of the module's headers, resolved
    beside the including header, then in the module's folders; a header
    that includes itself through others is a cycle too.
  - rooms: a module whose folders are rooms (ROOMS below) lists them
    lowest first; a file may use the files of its own room and of the
    rooms below, never one beside or above it.

It prints, per module, the files, the dependencies between them and every
cycle (a strongly connected set of files, with the symbols that tie each
pair), then the total, and exits 1 if there is any.  Run it after a build
(`meson test` runs it in the checks suite):
  tools/check-cycles.py build
"""
import json
import os
import re
import subprocess
import sys

MODULES = ["agent", "libtinspect", "dbsession", "proc_service", "arch"]

# The rooms of a module, lowest first: rooms in one tuple are beside each
# other (neither may use the other); "" is the module's own folder.  Each
# module's meson.build says what its rooms hold; docs/ARCHITECTURE.md,
# "Inside agent/", "Inside dbsession/", "Inside proc_service/".
ROOMS = {
    "agent": [("common",), ("lockorder",), ("text", "json", "formats"),
              ("watch",), ("",)],
    "dbsession": [("common",), ("stacks",), ("libc",), ("tls", "locks"),
                  ("",)],
    # proc_service/ itself holds only its headers
    "proc_service": [("common",), ("elf", "memory"), ("modules",),
                     ("target",), ("live", "core")],
}


def room_rank(mod, path):
    """(room, rank) of a file of a module with rooms, else None."""
    room = os.path.dirname(path).split(os.sep)[0]
    for rank, rooms in enumerate(ROOMS.get(mod, [])):
        if room in rooms:
            return room, rank
    return None


def module_objects(build, top):
    """{module: {source path inside the module: its object}}, from the
    build's compile_commands.json; a source built into several targets
    counts once."""
    with open(os.path.join(build, "compile_commands.json")) as f:
        commands = json.load(f)
    out = {m: {} for m in MODULES}
    for c in commands:
        src = os.path.normpath(os.path.join(c["directory"], c["file"]))
        rel = os.path.relpath(src, top)
        mod = rel.split(os.sep)[0]
        if mod not in out:
            continue
        out[mod].setdefault(os.path.relpath(rel, mod),
                            os.path.join(c["directory"], c["output"]))
    return out


def objects(files):
    """{file: (defined globals, undefined symbols)} of the objects (one
    nm for all of them)."""
    name_of = {os.path.normpath(o): n for n, o in files.items()}
    objs = {n: (set(), set()) for n in files}
    out = subprocess.run(["nm", "-A"] + sorted(name_of), check=True,
                         capture_output=True, text=True).stdout
    for line in out.splitlines():
        # "obj.o:0000000000000000 T name" or "obj.o:                 U name"
        m = re.match(r"^(.*?\.o):\s*(?:[0-9a-f]+\s+)?([A-Za-z])\s+(\S+)$", line)
        if not m or os.path.normpath(m.group(1)) not in name_of:
            continue
        obj, kind, sym = m.groups()
        d, u = objs[name_of[os.path.normpath(obj)]]
        if kind == "U":
            u.add(sym)
        elif kind.isupper():
            d.add(sym)
    return objs


def sccs(nodes, edges):
    """Tarjan's strongly connected components (iterative)."""
    index, low, on, stack, out = {}, {}, set(), [], []
    counter = [0]

    def visit(v):
        work = [(v, iter(sorted(edges.get(v, ()))))]
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        while work:
            node, it = work[-1]
            advanced = False
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(edges.get(w, ())))))
                    advanced = True
                    break
                if w in on:
                    low[node] = min(low[node], index[w])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == node:
                        break
                out.append(sorted(comp))

    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return out


def header_edges(srcdir):
    """{header: the headers it includes}, paths relative to srcdir."""
    headers = set()
    for root, _, names in os.walk(srcdir):
        headers |= {os.path.relpath(os.path.join(root, f), srcdir)
                    for f in names if f.endswith(".h")}
    dirs = sorted({os.path.dirname(h) for h in headers})
    edges = {}
    for h in sorted(headers):
        with open(os.path.join(srcdir, h), errors="replace") as fh:
            for line in fh:
                m = re.match(r'\s*#\s*include\s+"([^"]+)"', line)
                if not m:
                    continue
                for d in [os.path.dirname(h)] + dirs:
                    t = os.path.normpath(os.path.join(d, m.group(1)))
                    if t in headers:
                        edges.setdefault(h, set()).add(t)
                        break
    return edges


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else "build"
    top = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    bad = 0
    files = module_objects(build, top)
    for mod in MODULES:
        missing = [o for o in files[mod].values() if not os.path.exists(o)]
        if not files[mod] or missing:
            print(f"{mod}: not built ({', '.join(missing) or 'no sources'})")
            bad += 1
            continue
        objs = objects(files[mod])
        owner = {}
        for name, (d, _) in objs.items():
            for s in d:
                owner[s] = name
        edges, why = {}, {}
        for name, (_, u) in objs.items():
            for s in u:
                o = owner.get(s)
                if o and o != name:
                    edges.setdefault(name, set()).add(o)
                    why.setdefault((name, o), []).append(s)
        nedges = sum(len(v) for v in edges.values())
        cycles = [c for c in sccs(objs.keys(), edges) if len(c) > 1]
        hedges = header_edges(os.path.join(top, mod))
        hcycles = [c for c in sccs(hedges.keys(), hedges) if len(c) > 1]
        hcycles += [[h] for h, t in hedges.items() if h in t]
        print(f"{mod}: {len(objs)} files, {nedges} dependencies between them, "
              f"{len(cycles)} cycle(s); {len(hedges)} headers including "
              f"others, {len(hcycles)} include cycle(s)")
        for c in cycles:
            bad += 1
            print("  cycle: " + " <-> ".join(c))
            for a in c:
                for b in c:
                    if (a, b) in why:
                        syms = sorted(why[(a, b)])
                        more = f" (+{len(syms) - 4} more)" if len(syms) > 4 else ""
                        print(f"    {a} uses {b}: {', '.join(syms[:4])}{more}")
        for c in hcycles:
            bad += 1
            print("  include cycle: " + " -> ".join(c))
        for (a, b), syms in sorted(why.items()):
            ra, rb = room_rank(mod, a), room_rank(mod, b)
            if mod in ROOMS and (ra is None or rb is None):
                bad += 1
                print(f"  {a if ra is None else b}: in no room of {mod}")
            elif ra and rb and ra[0] != rb[0] and rb[1] >= ra[1]:
                bad += 1
                print(f"  room order: {a} uses {b} ({', '.join(sorted(syms)[:4])}):"
                      f" {rb[0] or mod + '/'} is not below {ra[0] or mod + '/'}")
    print(f"check-cycles: {bad} cycle(s) or room-order breach(es) in "
          f"{', '.join(MODULES)}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
