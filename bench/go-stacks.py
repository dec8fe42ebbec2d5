#!/usr/bin/env python3
"""Names the frames of `perf script` output for a stripped Go binary (such as Debian's
docker-registry) from the binary's own function table (`.gopclntab`, Go 1.18–1.22
layout, amd64), and prints each function's inclusive share of the samples.

    perf record -g -F 2000 -p "$(pgrep -f 'docker-registry serve')" -o perf.data -- sleep 10
    perf script -i perf.data | bench/go-stacks.py /usr/bin/docker-registry 40

perf cannot name them itself: the binary has no ELF symbol table, but Go keeps its
function table for stack traces. Used for the registry profile in bench/notes.md.
"""

import bisect
import collections
import struct
import sys


def sections(elf):
    """ELF64 little-endian section headers: name -> (address, file offset, size)."""
    shoff, = struct.unpack_from("<Q", elf, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", elf, 0x3A)
    headers = [struct.unpack_from("<IIQQQQIIQQ", elf, shoff + i * shentsize) for i in range(shnum)]
    strtab = headers[shstrndx][4]
    out = {}
    for name, _type, _flags, addr, offset, size, *_ in headers:
        end = elf.index(b"\0", strtab + name)
        out[elf[strtab + name:end].decode()] = (addr, offset, size)
    return out


def functions(elf):
    """Sorted entry addresses and their names, from `.gopclntab`."""
    _, base, _ = sections(elf)[".gopclntab"]
    magic, = struct.unpack_from("<I", elf, base)
    if magic not in (0xFFFFFFF0, 0xFFFFFFF1):
        sys.exit(f"unsupported .gopclntab magic {magic:#x} (Go 1.18 to 1.22 only)")
    nfunc, _nfiles, text, names, _cu, _files, _pc, table = struct.unpack_from("<8Q", elf, base + 8)
    entries, labels = [], []
    for i in range(nfunc):
        entry, func = struct.unpack_from("<II", elf, base + table + 8 * i)
        _, name = struct.unpack_from("<Ii", elf, base + table + func)
        start = base + names + name
        entries.append(text + entry)
        labels.append(elf[start:elf.index(b"\0", start)].decode())
    return entries, labels


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    binary = sys.argv[1]
    top = int(sys.argv[2]) if len(sys.argv) > 2 else 40
    elf = open(binary, "rb").read()
    entries, labels = functions(elf)
    # perf prints the offset into the file for a non-PIE binary's text when it has
    # no symbols; the first PT_LOAD maps file offset 0 at 0x400000 for Go on amd64.
    load = 0x400000

    def name(address):
        i = bisect.bisect_right(entries, address + load) - 1
        return labels[i] if i >= 0 else "?"

    samples, frames = [], None
    for line in sys.stdin:
        if not line.strip():
            if frames is not None:
                samples.append(frames)
            frames = None
        elif not line[0].isspace():
            frames = []
        elif frames is not None:
            parts = line.split()
            if binary in line:
                frames.append(name(int(parts[0], 16)))
            elif "kernel" in line:
                frames.append("[kernel]")
    if frames:
        samples.append(frames)
    inclusive = collections.Counter()
    for stack in samples:
        inclusive.update(set(stack))
    print(f"{len(samples)} samples; inclusive share of each function")
    for function, n in inclusive.most_common(top):
        print(f"{100 * n / len(samples):6.1f}%  {function}")


if __name__ == "__main__":
    main()
