#!/usr/bin/env python3
"""Checks that every ELF file under a directory runs on glibc FLOOR.

    python3 wheel/check_elf.py --floor 2.17 DIR [--readelf READELF]

For each ELF file (found by its magic, not its name) it reads, with
readelf, the versions it needs (.gnu.version_r) and the libraries it
needs (DT_NEEDED). It fails, naming the file and the symbols, when a
glibc version above FLOOR is needed, when a version of anything but glibc
is needed (libgcc_s, libstdc++), or when a library outside glibc's own is
needed: what the manylinux policy of that glibc allows a wheel to assume;
and when it has text relocations (a non-PIC object in a shared object).
It prints one line per file: the highest glibc version and the libraries.
auditwheel makes the same check from the outside (tests/wheel/run.sh).
"""

import argparse
import os
import re
import subprocess
import sys

# glibc's libraries, which every manylinux system has.
SYSTEM_LIBS = {
    "libc.so.6", "libpthread.so.0", "libdl.so.2", "libresolv.so.2", "libm.so.6", "librt.so.1",
    "ld-linux-x86-64.so.2", "ld-linux-aarch64.so.1",
}


def version_key(v):
    return tuple(int(x) for x in v.split("."))


def elf_files(root):
    for d, _, names in os.walk(root):
        for n in sorted(names):
            p = os.path.join(d, n)
            if os.path.islink(p) or not os.path.isfile(p):
                continue
            with open(p, "rb") as f:
                if f.read(4) == b"\x7fELF":
                    yield p


def readelf(tool, *args):
    return subprocess.run([tool, "-W", *args], check=True, capture_output=True, text=True).stdout


def check(path, floor, tool):
    """Returns (highest glibc version, needed libraries, problems)."""
    dynamic = readelf(tool, "-d", path)
    needed = re.findall(r"\(NEEDED\)\s+Shared library: \[(.*?)\]", dynamic)
    versions = re.findall(r"Name: (\S+)\s+Flags", readelf(tool, "-V", path))
    problems = []
    glibc = [v[len("GLIBC_"):] for v in versions if re.fullmatch(r"GLIBC_[0-9.]+", v)]
    other = sorted({v for v in versions if not re.fullmatch(r"GLIBC_[0-9.]+", v) and v != "GLIBC_PRIVATE"})
    if "GLIBC_PRIVATE" in versions:
        problems.append("needs GLIBC_PRIVATE")
    if other:
        problems.append("needs versions of other libraries: " + ", ".join(other))
    high = max(glibc, key=version_key, default="")
    if high and version_key(high) > version_key(floor):
        syms = sorted(set(re.findall(r"\sUND\s+(\S+)@(GLIBC_[0-9.]+)", readelf(tool, "--dyn-syms", path))))
        late = ["%s@%s" % s for s in syms if version_key(s[1][len("GLIBC_"):]) > version_key(floor)]
        problems.append("needs glibc %s > %s: %s (pin them in wheel/glibc_floor.h)" % (high, floor, ", ".join(late)))
    if "(TEXTREL)" in dynamic:
        problems.append("has text relocations (DT_TEXTREL): build it position-independent")
    foreign = [n for n in needed if n not in SYSTEM_LIBS]
    if foreign:
        problems.append("needs libraries outside glibc: " + ", ".join(foreign))
    return high, needed, problems


def main_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--floor", required=True, help="the oldest glibc, such as 2.17")
    ap.add_argument("--readelf", default="readelf")
    ap.add_argument("dir")
    a = ap.parse_args(argv)
    bad = 0
    files = list(elf_files(a.dir))
    if not files:
        print("check_elf: no ELF file under %s" % a.dir, file=sys.stderr)
        return 1
    for p in files:
        high, needed, problems = check(p, a.floor, a.readelf)
        rel = os.path.relpath(p, a.dir)
        print("check_elf: %-45s glibc %-6s needs %s" % (rel, high or "-", " ".join(needed) or "-"))
        for msg in problems:
            print("check_elf: %s: %s" % (rel, msg), file=sys.stderr)
            bad += 1
    if bad:
        return 1
    print("check_elf: %d ELF files run on glibc %s and later" % (len(files), a.floor))
    return 0


if __name__ == "__main__":
    sys.exit(main_args(sys.argv[1:]))
