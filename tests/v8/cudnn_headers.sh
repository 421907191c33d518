#!/bin/sh
# Fetch NVIDIA's real cuDNN 9 and CUDA runtime headers from PyPI into
# OUT/{cudnn,cuda}/include, for compile-time checks against them. The wheels
# are kept in $CONVCACHE_WHEEL_CACHE (default OUT/../wheels) and downloaded
# only when missing, so a second run needs no network. The cuDNN wheel also
# holds the real libcudnn*.so.9 (nvidia/cudnn/lib/) for whoever needs them.
#
# usage: cudnn_headers.sh OUT
set -eu
out=${1:?usage: cudnn_headers.sh OUT}
cache=${CONVCACHE_WHEEL_CACHE:-$(dirname "$out")/wheels}
# The versions checked against (change them together with backend_api.h).
CUDNN=nvidia-cudnn-cu13==9.28.1.4
CUDART=nvidia-cuda-runtime==13.0.96   # cuda_runtime_api.h, driver_types.h, library_types.h
CRT=nvidia-cuda-crt==13.0.88          # crt/host_defines.h, which cuda_runtime_api.h includes
stamp=$out/.stamp-$(echo "$CUDNN $CUDART $CRT" | cksum | cut -d' ' -f1)
[ -f "$stamp" ] && exit 0

mkdir -p "$cache"
fetch() { # fetch SPEC GLOB: the wheel for SPEC, downloaded once
    set -- "$1" "$cache/$2"
    # shellcheck disable=SC2086
    for w in $2; do [ -f "$w" ] && { echo "$w"; return 0; }; done
    python3 -m pip download --quiet --no-deps --only-binary=:all: --python-version 3.11 \
        --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 -d "$cache" "$1" >&2 ||
        { echo "cudnn_headers.sh: cannot download $1 from PyPI" >&2; return 1; }
    # shellcheck disable=SC2086
    for w in $2; do [ -f "$w" ] && { echo "$w"; return 0; }; done
    echo "cudnn_headers.sh: $1 downloaded, but no wheel matches $2" >&2
    return 1
}
cudnn=$(fetch "$CUDNN" 'nvidia_cudnn_cu13-9.28.1.4-*.whl')
cudart=$(fetch "$CUDART" 'nvidia_cuda_runtime-13.0.96-*.whl')
crt=$(fetch "$CRT" 'nvidia_cuda_crt-13.0.88-*.whl')

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 - "$tmp" "$cudnn" "$cudart" "$crt" <<'PY'
import sys, zipfile
dest = sys.argv[1]
for wheel in sys.argv[2:]:
    with zipfile.ZipFile(wheel) as z:
        for name in z.namelist():
            if "/include/" in name and not name.endswith("/"):
                z.extract(name, dest)
PY
rm -rf "$out"
mkdir -p "$out/cudnn" "$out/cuda"
mv "$tmp/nvidia/cudnn/include" "$out/cudnn/include"
mv "$tmp/nvidia/cu13/include" "$out/cuda/include"
grep -q '#define CUDNN_MAJOR 9' "$out/cudnn/include/cudnn_version.h"
touch "$stamp"
echo "cudnn_headers.sh: cuDNN $(sed -n 's/^#define CUDNN_\(MAJOR\|MINOR\|PATCHLEVEL\) \([0-9]*\).*/\2/p' "$out/cudnn/include/cudnn_version.h" | paste -sd.) headers in $out"
