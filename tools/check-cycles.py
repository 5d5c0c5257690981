#!/usr/bin/python3
"""check-cycles.py [BUILDDIR]: do two files of a module depend on each other
in a circle?

DESIGN.md wants each module (proc_service, dbsession, arch) to be layered
inside too: a file either serves the others or uses them, never both ways
round.  This reads the truth from the build, not from the intentions:

  - symbols: for every object of a module's static library, the global
    symbols it defines and the ones it uses (nm); file A depends on file B
    when A uses a symbol B defines.  A call through a function pointer (a
    backend's ops table) is no dependency of the caller, which is the point
    of such a seam: the table's own file depends on what it lists.
  - headers: the #include "..." lines of the module's headers; a header
    that includes itself through others is a cycle too.

It prints, per module, the files, the dependencies between them and every
cycle (a strongly connected set of files, with the symbols that tie each
pair), and exits 1 if there is any.  Run it after a build:
  tools/check-cycles.py build
"""
import os
import re
import subprocess
import sys

MODULES = {
    "proc_service": "libtinspect-psvc.a",
    "dbsession": "libtinspect-dbsession.a",
    "arch": "libtinspect-arch.a",
}


def objects(lib):
    """{object name: (defined globals, undefined symbols)} of a static lib."""
    out = subprocess.run(["nm", "-A", lib], check=True, capture_output=True,
                         text=True).stdout
    objs = {}
    for line in out.splitlines():
        # "lib.a:file.c.o:0000000000000000 T name" or "lib.a:file.c.o:  U name"
        m = re.match(r"^[^:]+:([^:]+):\s*(?:[0-9a-f]+\s+)?([A-Za-z])\s+(\S+)$",
                     line)
        if not m:
            continue
        obj, kind, sym = m.groups()
        name = re.sub(r"\.o$", "", os.path.basename(obj))
        d, u = objs.setdefault(name, (set(), set()))
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
    edges = {}
    for f in sorted(os.listdir(srcdir)):
        if not f.endswith(".h"):
            continue
        with open(os.path.join(srcdir, f), errors="replace") as fh:
            for line in fh:
                m = re.match(r'\s*#\s*include\s+"([^"]+)"', line)
                if m and os.path.exists(os.path.join(srcdir, m.group(1))):
                    edges.setdefault(f, set()).add(m.group(1))
    return edges


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else "build"
    top = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    bad = 0
    for mod, libname in MODULES.items():
        lib = os.path.join(build, mod, libname)
        if not os.path.exists(lib):
            print(f"{mod}: {lib} is not built")
            bad += 1
            continue
        objs = objects(lib)
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
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
