# convcache doctor: probe
#
# What convcache doctor asks a Python interpreter (PY -c <this file>): does
# it import torch, which torch, which CUDA and cuDNN, which libraries that
# loaded. It prints one line, "CONVCACHE_DOCTOR " and a JSON object, and
# exits 0 whatever it finds; a field it could not read is left out, with
# the reason in a field named *_error. It runs no convolution and touches
# no GPU beyond torch.cuda.is_available().
import json
import os
import sys

r = {"python": sys.version.split()[0], "executable": sys.executable}


def done():
    sys.stdout.write("CONVCACHE_DOCTOR " + json.dumps(r) + "\n")
    sys.stdout.flush()
    sys.exit(0)


def why(e):
    return "%s: %s" % (type(e).__name__, e)


try:
    import torch
except ModuleNotFoundError as e:
    if e.name == "torch":
        r["torch_missing"] = True
    r["torch_error"] = why(e)
    done()
except BaseException as e:  # a broken install raises anything
    r["torch_error"] = why(e)
    done()

r["torch"] = str(getattr(torch, "__version__", "unknown"))
try:
    r["cuda"] = torch.version.cuda  # None on a CPU-only build
except BaseException as e:
    r["cuda_error"] = why(e)
try:
    import torch.backends.cudnn as cudnn

    r["cudnn_enabled"] = bool(cudnn.enabled)
    r["benchmark"] = bool(cudnn.benchmark)
    r["cudnn"] = cudnn.version()  # None without cuDNN; loads it otherwise
except BaseException as e:
    r["cudnn_error"] = why(e)
try:
    r["cuda_available"] = bool(torch.cuda.is_available())
except BaseException as e:
    r["cuda_available_error"] = why(e)

# The libraries that import loaded: where libtorch_cuda.so and cuDNN are.
try:
    with open("/proc/self/maps") as f:
        paths = sorted({line.split(None, 5)[5].strip() for line in f if len(line.split(None, 5)) == 6})
    for p in paths:
        base = os.path.basename(p)
        if base == "libtorch_cuda.so":
            r.setdefault("torch_cuda_library", p)
        elif base.startswith("libcudnn.so"):
            r.setdefault("cudnn_library", p)
except BaseException as e:
    r["maps_error"] = why(e)
done()
