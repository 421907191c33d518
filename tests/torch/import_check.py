"""import torch under the interposer (make torch-check; tests/torch/run.sh).

Run with LD_PRELOAD=.../libconvcache_preload.so. Checks, from inside the
process, that importing PyTorch's CUDA build:
  - has the interposer loaded (its convcache_preload_stats is found);
  - never loaded libconvcache.so, so no Go runtime started: no mapping of
    it in /proc/self/maps, and the interposer's counters say no find call
    was made and no load was tried (library_loads == 0).
Prints the versions tested, then "import_check: ok". Exit status 1 on any
failure.
"""
import ctypes
import os
import sys

import torch


class Stats(ctypes.Structure):
    # The prefix of struct convcache_preload_stats (cudnn/preload/preload.h).
    _fields_ = [(name, ctypes.c_ulonglong) for name in
                ("calls", "hits", "misses", "passthrough", "library_loads")]


def main():
    failures = []
    maps = open("/proc/self/maps").read().splitlines()
    paths = sorted({line.split()[-1] for line in maps if "/" in line})
    preload = [p for p in paths if os.path.basename(p) == "libconvcache_preload.so"]
    library = [p for p in paths if os.path.basename(p).startswith("libconvcache.so")]
    cudnn = [p for p in paths if os.path.basename(p).startswith("libcudnn.so")]
    torch_cuda = [p for p in paths if os.path.basename(p) == "libtorch_cuda.so"]
    if not preload:
        failures.append("the interposer is not mapped: is LD_PRELOAD set?")
    if library:
        failures.append("libconvcache.so is mapped: %s" % library)
    if not torch_cuda:
        failures.append("libtorch_cuda.so is not loaded: not a CUDA build of PyTorch?")
    try:
        stats_fn = ctypes.CDLL(None).convcache_preload_stats
    except AttributeError:
        failures.append("convcache_preload_stats not found")
    else:
        s = Stats()
        if stats_fn(ctypes.byref(s), ctypes.c_size_t(ctypes.sizeof(s))) != 0:
            failures.append("convcache_preload_stats failed")
        elif s.calls or s.library_loads:
            failures.append("the interposer saw %d find calls and tried %d loads of libconvcache"
                            % (s.calls, s.library_loads))
    print("import_check: torch %s (git %s), CUDA %s, cuDNN %s (%s), GPU available: %s" % (
        torch.__version__, torch.version.git_version, torch.version.cuda,
        torch.backends.cudnn.version(), cudnn[0] if cudnn else "libcudnn not loaded",
        torch.cuda.is_available()))
    print("import_check: interposer %s; libconvcache mapped: %s" % (
        preload[0] if preload else "-", "yes" if library else "no"))
    for f in failures:
        print("import_check: FAIL " + f, file=sys.stderr)
    if failures:
        sys.exit(1)
    print("import_check: ok")


main()
