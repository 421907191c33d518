#!/usr/bin/env python3
"""Builds convcache's wheel from a build made for it (mk/wheel.mk), with the
standard library only: no network, no build backend.

    python3 wheel/build_wheel.py --build DIR --stage DIR --out DIST
        --version V --plat PLATFORM_TAGS --floor 2.17 [--strip STRIP]

1. Stage: lay out the Python package convcache/ as an install prefix,
   with files copied from --build (made by make with the wheel's flags)
   and from the source tree (this file's ../):

       convcache/__init__.py, _cli.py, __main__.py,  python/convcache/
       _enable.py
       convcache/bin/convcache                      the command
       convcache/lib/libconvcache.so.1              the library (its soname)
       convcache/lib/libconvcache.so                a linker script naming it
       convcache/lib/libconvcache_preload.so        the cuDNN interposer
       convcache/lib/libconvcache_engine.so.1       the engine-choice library
       convcache/lib/libconvcache_engine.so         a linker script naming it
       convcache/include/*.h, *.hpp                 include/
       convcache/lib/pkgconfig/convcache.pc         from convcache.pc.in
       convcache/lib/cmake/convcache/*.cmake        from cmake/*.cmake.in

   A wheel cannot hold symbolic links, so each library is there once, under
   its soname, and the development names (-lconvcache) are GNU ld scripts.
   The pkg-config file and the CMake package find the prefix from their own
   place (${pcfiledir}, CMAKE_CURRENT_LIST_DIR): pip may install anywhere.
   The binaries are stripped.
2. Check: every ELF file runs on glibc --floor (wheel/check_elf.py).
3. Write DIST/convcache-V-py3-none-PLATFORM.whl: a zip with the package,
   then convcache-V.dist-info/ (METADATA with README.md as the long
   description, WHEEL, entry_points.txt for the convcache console script,
   the licence file where the source tree has one, and RECORD), with
   fixed timestamps ($SOURCE_DATE_EPOCH, else 1980-01-01) and sorted
   entries, so that the same inputs give the same bytes.
"""

import argparse
import base64
import glob
import hashlib
import io
import os
import re
import shutil
import subprocess
import sys
import time
import zipfile

import check_elf

SOURCE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NAME = "convcache"
SUMMARY = ("A persistent, process-shared cache of cuDNN convolution algorithm choices: "
           "the convcache command, its cuDNN interposer and the C/C++ library")
CLASSIFIERS = [
    "Development Status :: 3 - Alpha",
    "Environment :: Console",
    "Environment :: GPU :: NVIDIA CUDA",
    "Intended Audience :: Developers",
    "Intended Audience :: Science/Research",
    "Operating System :: POSIX :: Linux",
    "Programming Language :: C",
    "Programming Language :: C++",
    "Programming Language :: Go",
    "Programming Language :: Python :: 3",
    "Topic :: Scientific/Engineering :: Artificial Intelligence",
    "Topic :: Software Development :: Libraries",
]
LICENCE_NAMES = ("LICENSE", "LICENSE.txt", "LICENSE.md", "LICENCE", "COPYING")


def ld_script(target):
    return "/* GNU ld script: -l%s links %s, the library's soname. */\nINPUT(%s)\n" % (
        re.sub(r"^lib|\.so\..*$", "", target), target, target)


def substitute(template, values):
    with open(template) as f:
        text = f.read()
    for k, v in values.items():
        text = text.replace("@%s@" % k, v)
    left = re.findall(r"@[A-Z_]+@", text)
    if left:
        sys.exit("build_wheel: %s: no value for %s" % (template, ", ".join(sorted(set(left)))))
    return text


def stage(build, out, version, strip):
    """Lays out the package under out/convcache; returns its directory."""
    major = version.split(".")[0]
    pkg = os.path.join(out, NAME)
    if os.path.exists(out):
        shutil.rmtree(out)
    for d in ("bin", "include", "lib/pkgconfig", "lib/cmake/convcache"):
        os.makedirs(os.path.join(pkg, d))

    def put(src, rel, mode, strip_args=None):
        dst = os.path.join(pkg, rel)
        shutil.copyfile(src, dst)
        os.chmod(dst, mode)
        if strip_args is not None:
            subprocess.run([strip, *strip_args, dst], check=True)

    def write(rel, text, mode=0o644):
        dst = os.path.join(pkg, rel)
        with open(dst, "w") as f:
            f.write(text)
        os.chmod(dst, mode)

    put(os.path.join(build, "convcache"), "bin/convcache", 0o755, [])
    put(os.path.join(build, "libconvcache.so." + version), "lib/libconvcache.so." + major, 0o755,
        ["--strip-unneeded"])
    put(os.path.join(build, "libconvcache_preload.so"), "lib/libconvcache_preload.so", 0o755,
        ["--strip-unneeded"])
    put(os.path.join(build, "libconvcache_engine.so.1"), "lib/libconvcache_engine.so.1", 0o755,
        ["--strip-unneeded"])
    write("lib/libconvcache.so", ld_script("libconvcache.so." + major))
    write("lib/libconvcache_engine.so", ld_script("libconvcache_engine.so.1"))
    headers = sorted(glob.glob(os.path.join(SOURCE, "include", "*.h")) +
                     glob.glob(os.path.join(SOURCE, "include", "*.hpp")))
    for h in headers:
        put(h, os.path.join("include", os.path.basename(h)), 0o644)

    write("lib/pkgconfig/convcache.pc", substitute(os.path.join(SOURCE, "convcache.pc.in"), {
        "PREFIX": "${pcfiledir}/../..", "LIBDIR": "${prefix}/lib", "INCDIR": "${prefix}/include",
        "VERSION": version, "RPATH": " -Wl,-rpath,${libdir}"}))
    cmake = {"CONVCACHE_LIBDIR": "${CMAKE_CURRENT_LIST_DIR}/../..",
             "CONVCACHE_INCDIR": "${CMAKE_CURRENT_LIST_DIR}/../../../include",
             "CONVCACHE_VERSION": version, "CONVCACHE_VERSION_MAJOR": major}
    for name in ("convcacheConfig.cmake", "convcacheConfigVersion.cmake"):
        write("lib/cmake/convcache/" + name, substitute(os.path.join(SOURCE, "cmake", name + ".in"), cmake))

    for py in sorted(glob.glob(os.path.join(SOURCE, "python", NAME, "*.py"))):
        with open(py) as f:
            text = f.read()
        if os.path.basename(py) == "__init__.py":
            if '__version__ = "@VERSION@"' not in text:
                sys.exit("build_wheel: %s has no __version__ placeholder" % py)
            text = text.replace("@VERSION@", version)
        write(os.path.basename(py), text)
    return pkg


def metadata(version, readme, licence):
    with open(readme, encoding="utf-8") as f:
        long_description = f.read()
    lines = ["Metadata-Version: 2.1", "Name: " + NAME, "Version: " + version, "Summary: " + SUMMARY,
             "Keywords: cudnn,pytorch,convolution,autotuning,cache,ld-preload"]
    if licence:
        lines += ["License: Apache-2.0", "Classifier: License :: OSI Approved :: Apache Software License"]
    lines += ["Classifier: " + c for c in CLASSIFIERS]
    lines += ["Requires-Python: >=3.8", "Description-Content-Type: text/markdown"]
    return "\n".join(lines) + "\n\n" + long_description


def record_line(path, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return "%s,sha256=%s,%d" % (path, digest, len(data))


def write_wheel(root, out, version, plat, readme, licence):
    """Zips root (holding convcache/) with the dist-info; returns the path."""
    dist_info = "%s-%s.dist-info" % (NAME, version)
    files = []  # (archive path, bytes, mode)
    for d, dirs, names in os.walk(root):
        dirs.sort()
        for n in sorted(names):
            p = os.path.join(d, n)
            if "__pycache__" in p:
                continue
            with open(p, "rb") as f:
                files.append((os.path.relpath(p, root), f.read(), os.stat(p).st_mode & 0o777))
    tags = ["py3-none-" + t for t in plat.split(".")]
    meta = {
        "METADATA": metadata(version, readme, licence),
        "WHEEL": "Wheel-Version: 1.0\nGenerator: convcache wheel/build_wheel.py\nRoot-Is-Purelib: false\n" +
                 "".join("Tag: %s\n" % t for t in tags),
        "entry_points.txt": "[console_scripts]\nconvcache = convcache._cli:main\n",
    }
    if licence:
        with open(licence, encoding="utf-8") as f:
            meta[os.path.basename(licence)] = f.read()
    for name in sorted(meta):
        files.append((dist_info + "/" + name, meta[name].encode("utf-8"), 0o644))
    record = dist_info + "/RECORD"
    rec = "".join(record_line(p, data) + "\n" for p, data, _ in files) + record + ",,\n"
    files.append((record, rec.encode("utf-8"), 0o644))

    epoch = int(os.environ.get("SOURCE_DATE_EPOCH", "315532800"))
    stamp = time.gmtime(max(epoch, 315532800))[:6]
    os.makedirs(out, exist_ok=True)
    path = os.path.join(out, "%s-%s-py3-none-%s.whl" % (NAME, version, plat))
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for p, data, mode in files:
            info = zipfile.ZipInfo(p, stamp)
            info.external_attr = (0o100000 | mode) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, data, compresslevel=9)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(buf.getvalue())
    os.replace(tmp, path)
    return path


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", required=True, help="the build directory made for the wheel")
    ap.add_argument("--stage", required=True, help="where to lay out the package (replaced)")
    ap.add_argument("--out", required=True, help="the directory the wheel goes to")
    ap.add_argument("--version", required=True)
    ap.add_argument("--plat", required=True, help="platform tags joined by dots")
    ap.add_argument("--floor", required=True, help="the oldest glibc the binaries must run on")
    ap.add_argument("--strip", default="strip")
    ap.add_argument("--readelf", default="readelf")
    a = ap.parse_args()
    if not re.fullmatch(r"[0-9]+(\.[0-9]+)*", a.version):
        sys.exit("build_wheel: version %r is not a release version PEP 440 and the header agree on" % a.version)
    stage(a.build, a.stage, a.version, a.strip)
    if check_elf.main_args(["--floor", a.floor, "--readelf", a.readelf, a.stage]) != 0:
        sys.exit("build_wheel: the binaries do not run on glibc %s: see above" % a.floor)
    licence = next((os.path.join(SOURCE, n) for n in LICENCE_NAMES if os.path.isfile(os.path.join(SOURCE, n))), None)
    if not licence:
        print("build_wheel: warning: the source tree has no licence file (%s): the wheel carries none; "
              "choose a licence before publishing it" % ", ".join(LICENCE_NAMES), file=sys.stderr)
    path = write_wheel(a.stage, a.out, a.version, a.plat, os.path.join(SOURCE, "README.md"), licence)
    print("build_wheel: %s (%d bytes)" % (path, os.path.getsize(path)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
