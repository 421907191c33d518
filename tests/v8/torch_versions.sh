#!/bin/sh
# Which cuDNN convolution path each PyTorch release takes, and its switch
# (docs/pytorch.md): for each version given, download its Linux x86_64 wheel
# (no dependencies, about 1 GB each, deleted after), read the switch in
# torch/include/ATen/native/ConvUtils.h, and which of its libtorch_cuda*.so
# name the environment variables and the legacy find call.
# Not part of make test. usage: sh tests/v8/torch_versions.sh 2.0.0 2.15.0 ...
set -u
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cd "$dir"
for v in "$@"; do
  rm -f torch-*.whl
  python3 -m pip download --quiet --no-deps --only-binary=:all: --python-version 3.11 --platform manylinux2014_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux_2_28_x86_64 "torch==$v" -d . >/dev/null 2>err.txt || { echo "$v: download failed: $(tail -1 err.txt)"; continue; }
  w=$(ls torch-*.whl | head -1)
  python3 - "$w" "$v" <<'PY'
import sys, zipfile, re
w, v = sys.argv[1], sys.argv[2]
z = zipfile.ZipFile(w)
names = z.namelist()
hdr = [n for n in names if n.endswith("ATen/native/ConvUtils.h")]
out = []
if hdr:
    t = z.read(hdr[0]).decode()
    m = re.search(r"cudnnv8_enabled_check_debug\(\)\s*\{[^}]*?check_env\(\"(TORCH_CUDNN_V8_API_\w+)\"\)\s*([!=]=)\s*true", t, re.S)
    out.append("ConvUtils.h: %s %s true" % (m.group(1), m.group(2)) if m else "ConvUtils.h: no cudnnv8_enabled_check_debug")
libs = [n for n in names if re.search(r"torch/lib/libtorch_cuda[_a-z]*\.so$", n)]
for s in (b"TORCH_CUDNN_V8_API_DISABLED", b"TORCH_CUDNN_V8_API_ENABLED", b"TORCH_CUDNN_V8_API_LRU_CACHE_LIMIT", b"cudnnFindConvolutionForwardAlgorithmEx"):
    where = [l.rsplit("/", 1)[1] for l in libs if s in z.read(l)]
    out.append("%s in %s" % (s.decode(), ",".join(where) or "none of " + ",".join(l.rsplit("/", 1)[1] for l in libs)))
print("%s (%s): %s" % (v, w, "; ".join(out)))
PY
  rm -f "$w"
done
