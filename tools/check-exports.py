#!/usr/bin/python3
"""check-exports.py [BUILDDIR]: do the public headers, libtinspect.map and
the built libtinspect.so agree on the library's ABI?

  - every function the headers of include/tinspect/ declare is listed in
    libtinspect.map, and the map lists nothing else (besides libthread_db's
    ps_* callbacks): a function missing from the map would be silently
    local, one left in the map after its declaration went would be
    exported undocumented;
  - every symbol the map lists sits in a named version node (TINSPECT_x.y,
    no unversioned node, no wildcard in `global:`), and the newest node is
    the major.minor of <tinspect/version.h>;
  - the library (nm -D) exports exactly the map's symbols, each with the
    version of its node (objdump -T).

Prints what disagrees and exits 1, or one line of counts.  Run after a
build:
  tools/check-exports.py build
"""
import os
import re
import subprocess
import sys

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HEADERS = os.path.join(TOP, "include", "tinspect")
MAP = os.path.join(TOP, "libtinspect", "libtinspect.map")


def without_comments(text):
    return re.sub(r"/\*.*?\*/", " ", text, flags=re.S)


def declared():
    """{function name: header} of every tinspect_* function declared."""
    out = {}
    for h in sorted(os.listdir(HEADERS)):
        if not h.endswith(".h"):
            continue
        with open(os.path.join(HEADERS, h)) as f:
            text = without_comments(f.read())
        # a declaration: a name followed by '(' outside #define lines
        text = "\n".join(l for l in text.splitlines()
                         if not l.lstrip().startswith("#"))
        for m in re.finditer(r"\b(tinspect_\w+)\s*\(", text):
            out.setdefault(m.group(1), h)
    return out


def version_nodes():
    """[(node, [symbols])] of the map, in order; raises on a form we do
    not accept."""
    with open(MAP) as f:
        text = without_comments(f.read())
    nodes = []
    pos = 0
    for m in re.finditer(r"(\S*)\s*\{(.*?)\}\s*([A-Za-z0-9_.]*)\s*;", text, re.S):
        if text[pos:m.start()].strip():
            raise ValueError(f"unexpected text in the map: {text[pos:m.start()].strip()!r}")
        pos = m.end()
        name, body = m.group(1), m.group(2)
        if not re.fullmatch(r"TINSPECT_\d+\.\d+", name):
            raise ValueError(f"a node named {name!r}: every node is TINSPECT_MAJOR.MINOR")
        section, syms = None, []
        for tok in re.split(r"[;\s]+", body):
            if not tok:
                continue
            if tok in ("global:", "local:"):
                section = tok
                continue
            if section == "global:":
                if "*" in tok or "?" in tok:
                    raise ValueError(f"{name}: a wildcard in global: {tok}")
                syms.append(tok)
            elif section == "local:" and tok != "*":
                raise ValueError(f"{name}: local: lists {tok}, not only *")
        nodes.append((name, syms))
    if text[pos:].strip():
        raise ValueError(f"unexpected text in the map: {text[pos:].strip()!r}")
    if not nodes:
        raise ValueError("no version node")
    return nodes


def header_version():
    with open(os.path.join(HEADERS, "version.h")) as f:
        text = f.read()
    parts = [re.search(rf"#define TINSPECT_VERSION_{p} (\d+)", text).group(1)
             for p in ("MAJOR", "MINOR")]
    return "TINSPECT_" + ".".join(parts)


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else "build"
    so = os.path.join(build, "libtinspect", "libtinspect.so")
    problems = []
    decl = declared()
    try:
        nodes = version_nodes()
    except ValueError as e:
        print(f"check-exports: {MAP}: {e}")
        return 1
    mapped = {}
    for node, syms in nodes:
        for s in syms:
            if s in mapped:
                problems.append(f"{s} is listed in {mapped[s]} and in {node}")
            mapped[s] = node
    want = header_version()
    if nodes[-1][0] != want:
        problems.append(f"the newest node is {nodes[-1][0]}, <tinspect/version.h> says {want}")
    for f, h in sorted(decl.items()):
        if f not in mapped:
            problems.append(f"{f} ({h}) is not in libtinspect.map: it would not be exported")
    for s in sorted(mapped):
        if not s.startswith("ps_") and s not in decl:
            problems.append(f"{s} is in libtinspect.map but no header declares it")
    if not os.path.exists(so):
        problems.append(f"{so} is not built")
    else:
        dyn = subprocess.run(["objdump", "-T", so], check=True,
                             capture_output=True, text=True).stdout
        exported = {}
        for line in dyn.splitlines():
            # "0000000000012340 g    DF .text  0000000000000012  TINSPECT_0.1 tinspect_x"
            m = re.match(r"^[0-9a-f]+ g\s.*\s(\S+)\s+(\S+)$", line)
            if m and " *UND*" not in line:
                exported[m.group(2)] = m.group(1)
        for s, node in sorted(exported.items()):
            if s == node:	# the version definition itself
                continue
            if s not in mapped:
                problems.append(f"{so} exports {s}, which the map does not list")
            elif node != mapped[s]:
                problems.append(f"{so} exports {s} as {node}, the map says {mapped[s]}")
        for s in sorted(mapped):
            if s not in exported:
                problems.append(f"{so} does not export {s}")
    for p in problems:
        print("check-exports: " + p)
    if problems:
        return 1
    print(f"check-exports: {len(decl)} functions declared in include/tinspect/, "
          f"{len(mapped)} symbols in {len(nodes)} version node(s) "
          f"({', '.join(n for n, _ in nodes)}), all exported as listed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
