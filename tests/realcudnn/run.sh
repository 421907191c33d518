#!/bin/sh
# make real-cudnn-check: convcache against NVIDIA's real cuDNN 9 headers and
# library (from PyPI, fetched by mk/nvidia.mk), on a machine without a GPU.
#
#   1. compile: the interposer (cudnn/preload/*.c), the fingerprint's probe
#      (cudnn/probe.c), the GPU check's program (bench/gpu/v7_find.c) and the
#      PyTorch example against the real headers
#      (CONVCACHE_REAL_CUDNN), with -Werror: each interposed function must
#      have the real prototype, each probe function type the real type;
#   2. every cuDNN/CUDA value our C sources define by hand equals the real
#      one (gen.py defines: one static assert each);
#   3. abi_check: the types real functions are called through (interposer,
#      demo), the perf structs field by field, the demo's values;
#   4. the Go codecs' tables and perf decoder against the real enums and
#      structs (cudnn/realcudnn_test.go, fed by gen.py values);
#   5. the real libcudnn.so.9 loaded with no GPU: its version against the
#      header, through load_check (under the interposer) and through the
#      fingerprint's own code path (convcache scope, with the stand-in CUDA
#      driver, since this machine has none);
#   6. the interposer's leaves (cudnn/preload/v8_leaf.c) read back from the
#      real cuDNN: tests/realcudnn/leaf_check.c;
#   7. the checks can fail: a wrong value and a wrong prototype must not
#      compile.
#
# usage: run.sh BUILD NVIDIA_SITE   (NVIDIA_SITE holds nvidia/cudnn, nvidia/cu13)
set -eu
build=$(cd "$1" && pwd)
site=$(cd "$2" && pwd)
out=$build/realcudnn
inc="-I$site/nvidia/cudnn/include -I$site/nvidia/cu13/include"
lib=$site/nvidia/cudnn/lib
CC=${CC:-cc}
CXX=${CXX:-c++}
cflags="-O2 -Wall -Wextra -Werror"
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM
version=$(sed -n 's/^#define CUDNN_\(MAJOR\|MINOR\|PATCHLEVEL\) \([0-9]*\).*/\2/p' \
    "$site/nvidia/cudnn/include/cudnn_version.h" | paste -sd.)

echo "== real-cudnn: compiling against cuDNN $version's headers"
for f in cudnn/preload/*.c cudnn/probe.c bench/gpu/v7_find.c; do
    echo "   $f"
    $CC $cflags -DCONVCACHE_REAL_CUDNN -Iinclude -Icudnn/engine $inc -fsyntax-only "$f"
done
echo "   examples/pytorch/conv_cache.cpp"
$CXX $cflags -std=c++17 -DCONVCACHE_REAL_CUDNN -I"$build/include" $inc -fsyntax-only \
    examples/pytorch/conv_cache.cpp

echo "== real-cudnn: values defined by hand"
defined="cudnn/preload/preload.h cudnn/probe.c tests/preload/standin_cudnn.c tests/preload/standin_cuda.c
         bench/gpu/v7_find.c"
# shellcheck disable=SC2086
python3 tests/realcudnn/gen.py defines $defined > "$out/defines_check.c"
$CC $cflags $inc -fsyntax-only "$out/defines_check.c"

echo "== real-cudnn: function types, perf structs and the demo's values"
$CXX $cflags -std=c++17 -DCONVCACHE_REAL_CUDNN -I"$build/include" -Icudnn/preload -Iexamples/demo $inc \
    -o "$out/abi_check" tests/realcudnn/abi_check.cpp -ldl
"$out/abi_check"

echo "== real-cudnn: the Go codecs' tables and perf decoder"
python3 tests/realcudnn/gen.py values "$site/nvidia/cudnn/include" > "$out/values.c"
$CC $cflags $inc -o "$out/values" "$out/values.c"
"$out/values" > "$out/values.txt"
CONVCACHE_REAL_CUDNN_VALUES="$out/values.txt" ${GO:-go} test -count=1 -v -run 'TestRealCudnn' ./cudnn \
    > "$tmp/go.txt" 2>&1 || { cat "$tmp/go.txt"; exit 1; }
grep -E '^(--- |ok|PASS|FAIL)' "$tmp/go.txt"
if grep -q -- '--- SKIP' "$tmp/go.txt"; then echo "real-cudnn: a Go check was skipped" >&2; exit 1; fi

echo "== real-cudnn: the real libcudnn.so.9, no GPU"
$CC $cflags $inc -o "$out/load_check" tests/realcudnn/load_check.c -L"$lib" -l:libcudnn.so.9 \
    -Wl,-rpath,"$lib" -ldl
LD_PRELOAD="$build/libconvcache_preload.so" "$out/load_check"
header=$(sed -n 's/^define CUDNN_VERSION //p' "$out/values.txt")
standin_cuda=$build/tests/preload/libcuda.so.1
scope_of() { # the fingerprint of device 0, by the convcache command's own probe
    env -u CONVCACHE_SCOPE "$@" "$build/convcache" scope --device 0
}
s1=$(scope_of CONVCACHE_CUDA_LIBRARY="$standin_cuda" CONVCACHE_CUDNN_LIBRARY="$lib/libcudnn.so.9")
s2=$(scope_of CONVCACHE_CUDA_LIBRARY="$standin_cuda" LD_LIBRARY_PATH="$lib")
for s in "$s1" "$s2"; do
    echo "   convcache scope: $s"
    case "$s" in
    *";cudnn=$header;cudart=13"???) ;;
    *) echo "real-cudnn: the fingerprint read another cuDNN than the header's $header (or not CUDA 13)" >&2
       exit 1 ;;
    esac
done

echo "== real-cudnn: the interposer's leaves read back (cudnn/preload/v8_leaf.c)"
$CC $cflags -DCONVCACHE_REAL_CUDNN -Iinclude -Icudnn/engine -Icudnn/preload $inc -o "$out/leaf_check" \
    tests/realcudnn/leaf_check.c cudnn/preload/v8_leaf.c cudnn/preload/v8_key.c cudnn/preload/v8_shadow.c \
    cudnn/preload/v8_slab.c -L"$lib" -l:libcudnn.so.9 -Wl,-rpath,"$lib" -lpthread
LD_LIBRARY_PATH="$lib:$site/nvidia/cu13/lib:$build/tests/preload" LD_PRELOAD="$build/bench/v8/libcuda_extra.so" \
    "$out/leaf_check"

echo "== real-cudnn: the checks fail when they should"
printf '#define CUDNN_STATUS_NOT_SUPPORTED 9\n' > "$tmp/wrong.h"
python3 tests/realcudnn/gen.py defines "$tmp/wrong.h" > "$tmp/wrong_check.c" 2>/dev/null
if $CC $inc -fsyntax-only "$tmp/wrong_check.c" 2>/dev/null; then
    echo "real-cudnn: a wrong value compiled" >&2; exit 1
fi
sed 's/int \*returnedAlgoCount, cudnnConvolutionBwdDataAlgoPerf_t \*perfResults) {/long *returnedAlgoCount, cudnnConvolutionBwdDataAlgoPerf_t *perfResults) {/' \
    cudnn/preload/preload.c > "$tmp/preload.c"
if cmp -s cudnn/preload/preload.c "$tmp/preload.c"; then
    echo "real-cudnn: the wrong-prototype fixture no longer applies" >&2; exit 1
fi
if $CC -DCONVCACHE_REAL_CUDNN -Iinclude -Icudnn/preload $inc -fsyntax-only "$tmp/preload.c" 2>/dev/null; then
    echo "real-cudnn: a wrong prototype compiled" >&2; exit 1
fi
echo "real-cudnn: ok (cuDNN $version)"
