#!/usr/bin/env python3
"""bench/gpu/enable_run.py: a program served by ``convcache.enable()``
instead of ``convcache run`` (make gpu-check's enable-default part,
bench/gpu/parts.sh).

usage: enable_run.py --preload LIB [--path FILE] [--verbose] -- SCRIPT ARGS...
       enable_run.py --preload LIB [--path FILE] [--verbose] -- --lib LIBRARY ARGS...

Calls ``convcache.enable(path=FILE, verbose=..., preload=LIB)`` (this
repository's python/convcache, ahead of any installed one), then runs
SCRIPT as ``__main__`` with ARGS as its argv (bench/gpu/torch_step.py: it
imports torch after enable(), as a user's script would), or, on the
stand-ins, loads LIBRARY (a library linked to the stand-in cuDNN, as
libtorch_cuda.so is to cuDNN: build/tests/v8fe/libtorch_like.so) and calls
its ``torch_like_main(argc, argv)``.

Exits 3, before running anything, when enable() does not load the
interposer (it returned False), or when LD_PRELOAD already names it (the
process would be served by the launcher, not by enable()).
"""
import ctypes
import os
import runpy
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def usage():
    sys.exit(__doc__.strip())


def main():
    args = sys.argv[1:]
    opts = {"preload": None, "path": None, "verbose": None}
    while args and args[0] != "--":
        a = args.pop(0)
        if a == "--verbose":
            opts["verbose"] = True
        elif a in ("--preload", "--path") and args:
            opts[a[2:]] = args.pop(0)
        else:
            usage()
    if not args or not opts["preload"] or len(args) < 2:
        usage()
    args.pop(0)
    if "libconvcache_preload" in os.environ.get("LD_PRELOAD", ""):
        print("enable_run: LD_PRELOAD already names the interposer; this run would not test enable()",
              file=sys.stderr)
        sys.exit(3)
    sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))
    import convcache

    if convcache.enable(**opts) is not True:
        print("enable_run: convcache.enable() did not load the interposer", file=sys.stderr)
        sys.exit(3)
    print("enable_run: the interposer loaded by convcache.enable() from %s" % convcache.__file__,
          file=sys.stderr)
    sys.stderr.flush()
    if args[0] == "--lib":
        if len(args) < 2:
            usage()
        lib = ctypes.CDLL(os.path.abspath(args[1]))
        argv = [args[1]] + args[2:]
        arr = (ctypes.c_char_p * (len(argv) + 1))(*[a.encode() for a in argv], None)
        lib.torch_like_main.restype = ctypes.c_int
        lib.torch_like_main.argtypes = (ctypes.c_int, ctypes.POINTER(ctypes.c_char_p))
        sys.exit(lib.torch_like_main(len(argv), arr))
    sys.argv = args
    runpy.run_path(args[0], run_name="__main__")


main()
