#!/usr/bin/python3
"""mkgocorpus.py DIR: write the seed corpus of fuzz_gopclntab into DIR.

Small Go function tables in the formats gopclntab.c reads (Go 1.18-1.19,
magic 0xfffffff0; Go 1.20 on, 0xfffffff1, whose function records are 4
bytes longer), laid out as the Go linker lays them out (docs/GO.md §3):
a header, function names, the CU file indices, file names, pc-value
tables, then the function list and records.  Also the formats it refuses
(Go 1.16's magic, a cut header) and two .go.buildinfo sections (§2): the
inline strings of Go 1.18 on and the older pointers, which the fuzz target
resolves into the input itself.  A real table is hundreds of kilobytes:
these few hundred bytes reach the same code.
"""
import os
import struct
import sys


def uvarint(v):
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def pcvalue(pairs):
    """pairs: (value, pc span in bytes) from the entry; the encoded table."""
    out = bytearray()
    prev = -1
    for value, span in pairs:
        d = value - prev
        out += uvarint(((d << 1) ^ (d >> 31)) & 0xFFFFFFFF)
        out += uvarint(span)
        prev = value
    out += b"\0"
    return bytes(out)


def table(go120, nfuncs=3, flags=(0, 1, 2), text=0x401000):
    names = bytearray(b"\0")  # offset 0 is "no name"
    name_off = []
    for i in range(nfuncs):
        name_off.append(len(names))
        names += b"main.f%d\0" % i
    files = bytearray()
    file_off = []
    for i in range(nfuncs):
        file_off.append(len(files))
        files += b"/src/f%d.go\0" % i
    cutab = b"".join(struct.pack("<I", o) for o in file_off) + struct.pack("<I", 0xFFFFFFFF)
    pctab = bytearray(b"\0")  # offset 0 is "no table"
    tabs = []
    for i in range(nfuncs):
        sp = len(pctab)
        pctab += pcvalue([(0, 4), (8 + 8 * i, 0x20), (0, 4)])
        fl = len(pctab)
        pctab += pcvalue([(i, 0x28)])
        ln = len(pctab)
        pctab += pcvalue([(10 + i, 8), (11 + i, 0x20)])
        tabs.append((sp, fl, ln))
    rec = 44 if go120 else 40
    ftab_len = (nfuncs + 1) * 8
    ftab = bytearray()
    recs = bytearray()
    for i in range(nfuncs):
        entry = 0x40 * i
        ftab += struct.pack("<II", entry, ftab_len + len(recs))
        sp, fl, ln = tabs[i]
        r = struct.pack("<IiiIIIIII", entry, name_off[i], 0, 0, sp, fl, ln, 0, 0)
        if go120:
            r += struct.pack("<i", 1)
        r += struct.pack("<BBBB", 0, flags[i % len(flags)], 0, 0)
        assert len(r) == rec
        recs += r
    ftab += struct.pack("<II", 0x40 * nfuncs, 0)
    hdr = 8 + 8 * 8
    off_names = hdr
    off_cu = off_names + len(names)
    off_files = off_cu + len(cutab)
    off_pc = off_files + len(files)
    off_pcln = off_pc + len(pctab)
    magic = 0xFFFFFFF1 if go120 else 0xFFFFFFF0
    head = struct.pack("<IBBBB", magic, 0, 0, 1, 8)
    head += struct.pack("<QQQQQQQQ", nfuncs, nfuncs, text, off_names, off_cu,
                        off_files, off_pc, off_pcln)
    return bytes(head + names + cutab + files + pctab + ftab + recs)


def buildinfo_inline(version):
    v = version.encode()
    mod = b"path\tcommand-line-arguments\n"
    return (b"\xff Go buildinf:" + bytes([8, 2]) + b"\0" * 16 +
            uvarint(len(v)) + v + uvarint(len(mod)) + mod)


def buildinfo_pointers(version):
    v = version.encode()
    # header, then two string headers {data, len}, then the bytes; the
    # pointers are offsets into the section (the fuzz target reads them so)
    strhdr = 32
    data = strhdr + 32
    head = b"\xff Go buildinf:" + bytes([8, 0])
    head += struct.pack("<QQ", strhdr, strhdr + 16)
    body = struct.pack("<QQQQ", data, len(v), data + len(v), 0)
    return head + body + v


def main():
    d = sys.argv[1]
    os.makedirs(d, exist_ok=True)
    seeds = {
        "go118-three-functions": table(False),
        "go120-three-functions": table(True),
        "go120-no-text-start": table(True, text=0),
        "go120-topframe-spwrite": table(True, nfuncs=4, flags=(1, 2, 4, 0)),
        "go116-refused": struct.pack("<I", 0xFFFFFFFA) + table(True)[4:],
        "go120-cut-header": table(True)[:40],
        "buildinfo-inline": buildinfo_inline("go1.24.4"),
        "buildinfo-pointers": buildinfo_pointers("go1.17.13"),
    }
    for name, data in seeds.items():
        with open(os.path.join(d, name), "wb") as f:
            f.write(data)


if __name__ == "__main__":
    main()
