#!/usr/bin/env python3
"""What a PIE binary's relative relocations are: the cold-start cost that is left (BENCHMARKS.md).

    python3 tests/benches/relocs.py /work/bench-target/release/native-route

The dynamic loader writes every R_X86_64_RELATIVE relocation before `main`, and each page it
writes is a copy-on-write fault. This counts them by the section they sit in and the section they
point at, sorts the strings they point at (source paths of panic and tracing locations, by crate,
and the rest), and says for each target crate how many pages its relocations fall in. Needs
binutils' readelf and nm; the binary keeps its symbol table (the release profile strips debug
info only).
"""
import bisect
import collections
import re
import subprocess
import sys
from pathlib import Path


def run(*cmd):
    return subprocess.run(cmd, capture_output=True, text=True, check=True).stdout


def main(path):
    sections = []
    for line in run("readelf", "-SW", path).splitlines():
        m = re.match(r"\s*\[\s*\d+\]\s+(\S+)\s+\S+\s+([0-9a-f]+)\s+([0-9a-f]+)\s+([0-9a-f]+)", line)
        if m:
            sections.append((m.group(1), *(int(m.group(i), 16) for i in (2, 3, 4))))
    symbols = []
    for line in run("nm", "-C", "-S", "--defined-only", path).splitlines():
        m = re.match(r"^([0-9a-f]+) (?:([0-9a-f]+) )?\w (.*)$", line)
        if m:
            symbols.append((int(m.group(1), 16), int(m.group(2) or "0", 16), m.group(3)))
    symbols.sort()
    starts = [s[0] for s in symbols]
    data = Path(path).read_bytes()

    def section(addr):
        for name, start, offset, size in sections:
            if start <= addr < start + size:
                return name, offset + addr - start
        return "?", None

    def crate(addr):
        i = bisect.bisect_right(starts, addr) - 1
        if i < 0 or (symbols[i][1] and addr >= symbols[i][0] + symbols[i][1]):
            return "?"
        m = re.match(r"[<&*(]*(?:dyn |mut |const )?[<&*(]*([A-Za-z_]\w*)", symbols[i][2])
        return m.group(1) if m else "?"

    by_sections = collections.Counter()
    strings = collections.Counter()
    paths = collections.Counter()
    pages = collections.defaultdict(set)
    total = 0
    for line in run("readelf", "-rW", path).splitlines():
        f = line.split()
        if len(f) < 4 or f[2] != "R_X86_64_RELATIVE":
            continue
        site, target = int(f[0], 16), int(f[3], 16)
        total += 1
        site_section, _ = section(site)
        target_section, offset = section(target)
        by_sections[(site_section, target_section)] += 1
        if target_section == ".rodata":
            text = data[offset : offset + 120]
            m = re.match(rb"/[^\s\x00]*?/registry/src/[^/]+/([^/]+)-[0-9][^/]*/", text)  # any CARGO_HOME
            if m:
                strings["source path, registry crate"] += 1
                paths[m.group(1).decode()] += 1
            elif text.startswith(b"/rustc/"):
                strings["source path, std"] += 1
            elif re.match(rb"(shared|functions|cli|tests)/", text):
                strings["source path, this workspace"] += 1
            elif text.startswith(b"event "):
                strings["tracing event name"] += 1
            else:
                strings["other string"] += 1
        elif target_section == ".text":
            pages[crate(target)].add(site >> 12)
    print(f"{path}: {total} relative relocations")
    print("site section -> target section:")
    for (a, b), n in by_sections.most_common(10):
        print(f"  {n:7}  {a} -> {b}")
    print("strings pointed at:")
    for what, n in strings.most_common():
        print(f"  {n:7}  {what}")
    print("registry crates with the most source paths:")
    for name, n in paths.most_common(10):
        print(f"  {n:7}  {name}")
    print("code pointers by target crate, and the pages they fall in:")
    for name, p in sorted(pages.items(), key=lambda kv: -len(kv[1]))[:15]:
        print(f"  {len(p):5} pages  {name}")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: relocs.py BINARY")
    main(sys.argv[1])
