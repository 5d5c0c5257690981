#!/usr/bin/python3
"""check-size.py [SRCDIR]: no source file over 1000 lines, no C function
over 150 lines, in the whole tree.

A file is one story and a function one step of it (CONTRIBUTING.md, "Code
shape"): past these sizes they are several.  This reads the sources, not
the build:

  - files: every .c, .h, .py and .sh under SRCDIR, except build
    directories and test data;
  - functions: in every .c and .h, a definition is a line with '{' alone
    in the first column, as the project writes them; the function starts
    at the first line of its signature and ends at the '}' in the first
    column.

KNOWN lists the offenders that are left for a later change, each with
why; they are printed but do not fail.  An entry that is no offender any
more fails, so that the list only shrinks.  Prints every offender and a
line of counts; exits 1 if there is a new one.  `meson test` runs it in
the checks suite.
"""
import os
import re
import sys

MAX_FILE_LINES = 1000
MAX_FUNCTION_LINES = 150

# (path, function or None for the whole file): why it waits; none today,
# the limits hold everywhere
KNOWN = {
}

SKIP_DIRS = {".git", "data", "corpus"}
EXTENSIONS = (".c", ".h", ".py", ".sh")


def sources(top):
    for root, dirs, files in os.walk(top):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and
                         not d.startswith("build") and not d.startswith("."))
        for f in sorted(files):
            if f.endswith(EXTENSIONS):
                yield os.path.join(root, f)


def functions(lines):
    """[(name, first line number, length)] of the C functions defined."""
    out = []
    i = 0
    while i < len(lines):
        if lines[i].rstrip() != "{":
            i += 1
            continue
        # the signature: back over the lines that continue it
        j = i
        while j > 0:
            prev = lines[j - 1]
            if (not prev.strip() or prev.startswith(("}", "#", "/*", " *", "//"))
                    or prev.rstrip().endswith((";", "*/"))):
                break
            j -= 1
        k = i + 1
        while k < len(lines) and not lines[k].startswith("}"):
            k += 1
        m = re.search(r"(\w+)\s*\(", " ".join(lines[j:i]))
        out.append((m.group(1) if m else "?", j + 1, k - j + 1))
        i = k + 1
    return out


def main():
    top = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else
                          os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    new, known, seen = [], [], set()
    nfiles = nfuncs = 0
    for path in sources(top):
        rel = os.path.relpath(path, top)
        with open(path, errors="replace") as f:
            lines = f.read().split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        nfiles += 1
        offences = []
        if len(lines) > MAX_FILE_LINES:
            offences.append((None, f"{rel}: {len(lines)} lines"))
        if path.endswith((".c", ".h")):
            for name, first, length in functions(lines):
                nfuncs += 1
                if length > MAX_FUNCTION_LINES:
                    offences.append((name, f"{rel}:{first}: {name}() is {length} lines"))
        for name, text in offences:
            if (rel, name) in KNOWN:
                seen.add((rel, name))
                known.append(f"{text} (known: {KNOWN[(rel, name)]})")
            else:
                new.append(text)
    stale = [f"{p}{': ' + n + '()' if n else ''} is listed in KNOWN but is no "
             f"offender any more: remove it from tools/check-size.py"
             for (p, n) in sorted(set(KNOWN) - seen)]
    for line in known:
        print("check-size: " + line)
    for line in new + stale:
        print("check-size: " + line)
    print(f"check-size: {nfiles} files, {nfuncs} C functions; "
          f"limits {MAX_FILE_LINES} lines a file, {MAX_FUNCTION_LINES} a function; "
          f"{len(new)} new offender(s), {len(known)} known, {len(stale)} stale entr(y/ies)")
    return 1 if new or stale else 0


if __name__ == "__main__":
    sys.exit(main())
