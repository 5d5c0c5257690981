#!/usr/bin/python3
"""mkcorecorpus.py OUTDIR [CORE...] - seeds for fuzz_corenotes, and the
synthetic aarch64 core of tests/data.

For each real CORE (a kernel core and a gcore of a small fixture): the same
core with every PT_LOAD cut to its first 256 bytes (addresses and sizes in
memory kept, the notes whole, gcore's notes still last), so that a seed is
a few tens of KiB.  Then synthetic cores no producer here writes: an
aarch64 one (aarch64-synth.core, also tests/data/core-aarch64-synth: the
values test_coresynth.c checks are the constants below), and a PN_XNUM one
(more than 65534 segments is how the kernel numbers them; here 3, with the
count in section 0).  And raw note bytes ("notes-*"), which fuzz_corenotes
wraps in a core of its own when an input is not ELF.
"""
import os
import struct
import sys

ET_CORE, EM_X86_64, EM_AARCH64 = 4, 62, 183
PT_LOAD, PT_NOTE = 1, 4
NT_PRSTATUS, NT_FPREGSET, NT_PRPSINFO, NT_AUXV = 1, 2, 3, 6
NT_SIGINFO, NT_FILE, NT_ARM_TLS = 0x53494749, 0x46494C45, 0x401
PN_XNUM = 0xFFFF

# the synthetic aarch64 process (test_coresynth.c checks these)
A64_PID = 4242
A64_TIDS = (4242, 4243)
A64_STACK = 0x7FF0000000          # one page: two stacks side by side
A64_TEXT = 0x400000
A64_TP = 0x7F00001000
A64_VALUE = bytes(range(0x40, 0x80))   # at A64_STACK + 0x100


def note(name, ntype, desc, align=4):
    n = name.encode() + b"\0"
    out = struct.pack("<III", len(n), len(desc), ntype) + n
    out += b"\0" * (-len(out) % align)
    out += desc + b"\0" * (-len(desc) % align)
    return out


def ehdr(machine, phnum, phoff=64, shoff=0, shnum=0):
    ident = b"\x7fELF" + bytes([2, 1, 1, 0]) + b"\0" * 8
    return ident + struct.pack("<HHIQQQIHHHHHH", ET_CORE, machine, 1, 0,
                               phoff, shoff, 0, 64, 56, phnum, 64, shnum, 0)


def phdr(ptype, flags, off, vaddr, filesz, memsz, align):
    return struct.pack("<IIQQQQQQ", ptype, flags, off, vaddr, 0, filesz,
                       memsz, align)


def trim(path):
    """A real core with every load cut to 256 bytes of data."""
    data = open(path, "rb").read()
    phoff, = struct.unpack_from("<Q", data, 32)
    phnum, = struct.unpack_from("<H", data, 56)
    phdrs = [list(struct.unpack_from("<IIQQQQQQ", data, phoff + 56 * i))
             for i in range(phnum)]
    notes_last = all(p[2] > q[2] for p in phdrs if p[0] == PT_NOTE
                     for q in phdrs if q[0] == PT_LOAD and q[5])
    blobs = []
    for p in phdrs:
        if p[0] == PT_NOTE:
            blobs.append(data[p[2]:p[2] + p[5]])
        elif p[0] == PT_LOAD:
            blobs.append(data[p[2]:p[2] + min(p[5], 256)])
        else:
            blobs.append(b"")
    order = sorted(range(phnum), key=lambda i: (
        (phdrs[i][0] == PT_NOTE) == notes_last, i))
    off = 64 + 56 * phnum
    body = b""
    for i in order:
        phdrs[i][2] = off + len(body)
        phdrs[i][5] = len(blobs[i])
        body += blobs[i]
    head = data[:64]
    head = head[:40] + struct.pack("<Q", 0) + head[48:58] + \
        struct.pack("<HHH", 64, 0, 0)
    table = b"".join(struct.pack("<IIQQQQQQ", *p) for p in phdrs)
    return head + table + body, [blobs[i] for i in range(phnum)
                                 if phdrs[i][0] == PT_NOTE]


def prstatus_a64(tid, sig, regs):
    si = struct.pack("<iii", sig, 0, 0)
    head = si + struct.pack("<h2xQQiiii", sig, 0, 0, tid, A64_PID - 1, tid,
                            tid) + b"\0" * 64
    assert len(head) == 112
    return head + struct.pack("<34Q", *regs) + struct.pack("<i4x", 1)


def aarch64_core():
    regs = []
    for k, tid in enumerate(A64_TIDS):
        r = [0x1000 * (k + 1) + i for i in range(31)]
        r += [A64_STACK + 0x800 * (k + 1) - 0x100,   # sp
              A64_TEXT + 0x100 + 4 * k,              # pc
              0x60000000]                            # pstate
        regs.append(r)
    psargs = b"synth --core".ljust(80, b"\0")
    psinfo = struct.pack("<bcbb4xQIIiiii", 0, b"R", 0, 0, 0x400000, 1000,
                         1000, A64_PID, A64_PID - 1, A64_PID, A64_PID) + \
        b"synth".ljust(16, b"\0") + psargs
    assert len(psinfo) == 136
    auxv = struct.pack("<16Q", 3, A64_TEXT + 64, 5, 2, 9, A64_TEXT + 0x100,
                       33, 0, 7, 0x7F00000000, 6, 4096, 0, 0, 0, 0)
    names = b"/usr/bin/synth\0/usr/lib/libc.so.6 (deleted)\0"
    files = struct.pack("<QQ", 2, 4096) + \
        struct.pack("<3Q", A64_TEXT, A64_TEXT + 0x1000, 0) + \
        struct.pack("<3Q", 0x7F00000000, 0x7F00002000, 3) + names
    siginfo = struct.pack("<iiiiQ", 11, 0, 1, 0, 0xDEAD0) + b"\0" * 104
    notes = note("CORE", NT_PRSTATUS, prstatus_a64(A64_TIDS[0], 11, regs[0]))
    notes += note("CORE", NT_PRPSINFO, psinfo)
    notes += note("CORE", NT_SIGINFO, siginfo)
    notes += note("CORE", NT_AUXV, auxv)
    notes += note("CORE", NT_FILE, files)
    notes += note("CORE", NT_FPREGSET, b"\x11" * 528)
    notes += note("LINUX", NT_ARM_TLS, struct.pack("<Q", A64_TP))
    notes += note("CORE", NT_PRSTATUS, prstatus_a64(A64_TIDS[1], 11, regs[1]))
    notes += note("CORE", NT_FPREGSET, b"\x22" * 528)
    notes += note("LINUX", NT_ARM_TLS, struct.pack("<Q", A64_TP + 0x1000))
    # segments: the program's first page (256 bytes of it in the core,
    # the rest left out), the stack page whole, a libc page left out
    phnum = 4
    off = 64 + 56 * phnum
    text = bytes((i * 7) & 0xFF for i in range(256))
    stack = bytearray(4096)
    stack[0x100:0x140] = A64_VALUE
    table = phdr(PT_NOTE, 0, off, 0, len(notes), 0, 4)
    data_off = off + len(notes)
    table += phdr(PT_LOAD, 5, data_off, A64_TEXT, 256, 0x1000, 0x1000)
    table += phdr(PT_LOAD, 6, data_off + 256, A64_STACK, 4096, 4096, 0x1000)
    table += phdr(PT_LOAD, 4, data_off + 256 + 4096, 0x7F00000000, 0, 0x2000,
                  0x1000)
    return ehdr(EM_AARCH64, phnum) + table + notes + text + bytes(stack), notes


def xnum_core():
    """3 segments numbered the PN_XNUM way: the count in section 0."""
    regs = [0] * 27
    regs[19] = 0x7FFF0100   # rsp
    regs[16] = 0x400100     # rip
    regs[21] = 0x7FFF0800   # fs_base
    pr = struct.pack("<iii", 6, 0, 0) + struct.pack("<h2xQQiiii", 6, 0, 0,
                                                    77, 1, 77, 77)
    pr += b"\0" * 64 + struct.pack("<27Q", *regs) + struct.pack("<i4x", 1)
    notes = note("CORE", NT_PRSTATUS, pr)
    phnum = 3
    off = 64 + 56 * phnum
    stack = bytes(range(256)) * 16
    table = phdr(PT_NOTE, 0, off, 0, len(notes), 0, 4)
    table += phdr(PT_LOAD, 6, off + len(notes), 0x7FFF0000, 4096, 4096, 4096)
    table += phdr(PT_LOAD, 5, 0, 0x400000, 0, 4096, 4096)
    body = notes + stack
    shoff = off + len(body)
    sh0 = struct.pack("<IIQQQQIIQQ", 0, 0, 0, 0, 0, 1, 0, phnum, 0, 0)
    return ehdr(EM_X86_64, PN_XNUM, shoff=shoff, shnum=0) + table + body + \
        sh0


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for path in sys.argv[2:]:
        core, notes = trim(path)
        base = os.path.basename(path).split(".")[0]
        open(os.path.join(out, base + "-trimmed.core"), "wb").write(core)
        open(os.path.join(out, "notes-" + base), "wb").write(
            b"\0" + b"".join(notes))
    a64, a64notes = aarch64_core()
    open(os.path.join(out, "aarch64-synth.core"), "wb").write(a64)
    open(os.path.join(out, "notes-aarch64"), "wb").write(b"\x01" + a64notes)
    open(os.path.join(out, "xnum-synth.core"), "wb").write(xnum_core())


if __name__ == "__main__":
    main()
