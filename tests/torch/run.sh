#!/bin/sh
# make torch-check: the interposer under the real PyTorch CUDA build, on a
# machine without a GPU (the torch wheel and its nvidia-* packages come from
# PyPI: make torch).
#
#   1. Which functions the interposer defines libtorch_cuda.so references
#      (nm): the six cudnnBackend* functions of PyTorch's default (v8)
#      path, all of them, and at least one cudnnFindConvolution*Algorithm
#      [Ex] of its legacy (v7) path, or the test fails. They must be
#      undefined dynamic symbols: a cudnn_frontend that loads cuDNN by
#      dlsym (NV_CUDNN_FRONTEND_USE_DYNAMIC_LOADING) has none, and an
#      LD_PRELOAD library would not see its calls.
#   2. `import torch` through `convcache run` (which appends the
#      interposer to LD_PRELOAD), then through `convcache run --torch-v7`
#      (which also sets TORCH_CUDNN_V8_API_DISABLED=1), with LD_BIND_NOW=1
#      and LD_DEBUG=bindings: every one of those references binds to
#      libconvcache_preload.so, none to libcudnn; the import loads no
#      libconvcache.so and starts no Go runtime (import_check.py, from
#      inside the process).
#   3. The same import without the interposer: the references bind to
#      libcudnn.so.9 (the log parsing sees what it should).
#   4. convcache.enable() (python/convcache, with the build's interposer)
#      before `import torch`: every one of those references binds to the
#      interposer; after `import torch`: one ConvcacheWarning, no
#      interposer loaded, every reference binds to libcudnn.so.9
#      (enable_check.py).
#
# usage: run.sh BUILD VENV
set -eu
build=$(cd "$1" && pwd)
venv=$(cd "$2" && pwd)
src=$(cd "$(dirname "$0")/../.." && pwd)
py=$venv/bin/python
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM

lib=$("$py" -c 'import os, torch; print(os.path.join(os.path.dirname(torch.__file__), "lib"))' 2>/dev/null)
torch_cuda=$lib/libtorch_cuda.so
[ -f "$torch_cuda" ] || { echo "torch-check: $torch_cuda not found: not a CUDA build?" >&2; exit 1; }
# The functions the interposer defines, and which of them libtorch_cuda.so
# references.
nm -D --defined-only "$build/libconvcache_preload.so" | awk '{print $3}' | grep '^cudnn' | sort -u > "$tmp/ours"
nm -D --undefined-only "$torch_cuda" | awk '{print $2}' | sed 's/@.*//' | sort -u | comm -12 - "$tmp/ours" > "$tmp/refs"
backend=$(grep -c '^cudnnBackend' "$tmp/refs" || true)
find=$(grep -c '^cudnnFindConvolution' "$tmp/refs" || true)
if [ "$backend" != 6 ]; then
    echo "torch-check: libtorch_cuda.so references $backend of the six cudnnBackend* functions, not all:" \
        "its cudnn_frontend may load cuDNN by dlsym, which an LD_PRELOAD library does not see" >&2; exit 1
fi
if [ "$find" = 0 ]; then
    echo "torch-check: libtorch_cuda.so references none of the six find functions" >&2; exit 1
fi
echo "== torch: libtorch_cuda.so references $(tr '\n' ' ' < "$tmp/refs")"

# bound LOG TARGET: each reference from libtorch_cuda.so to the six, as
# "symbol target-file", from an LD_DEBUG=bindings log.
bound() {
    sed -n 's/.*binding file \([^ ]*\) \[[0-9]*\] to \([^ ]*\) \[[0-9]*\]: normal symbol `\([A-Za-z0-9_]*\)'"'"'.*/\1 \2 \3/p' "$1"* |
        awk -v tc="$torch_cuda" '$1 == tc {print $3, $2}' | grep -E "^cudnn(FindConvolution|Backend)" | sort -u || true
}

# under NAME FLAGS...: import torch under convcache run FLAGS; every
# reference binds to the interposer.
under() {
    name=$1
    shift
    echo "== torch: import torch under convcache run $*, LD_BIND_NOW=1, LD_DEBUG=bindings"
    env LD_BIND_NOW=1 LD_DEBUG=bindings LD_DEBUG_OUTPUT="$tmp/$name" \
        "$build/convcache" run "$@" -- "$py" -W ignore tests/torch/import_check.py
    bound "$tmp/$name" > "$tmp/$name.txt"
    sed 's/^/   /' "$tmp/$name.txt"
    fail=0
    while read -r sym; do
        targets=$(awk -v s="$sym" '$1 == s {print $2}' "$tmp/$name.txt")
        if [ -z "$targets" ]; then
            echo "torch-check: no binding of libtorch_cuda.so's $sym was logged" >&2; fail=1
        fi
        for t in $targets; do
            [ "$t" = "$build/libconvcache_preload.so" ] ||
                { echo "torch-check: libtorch_cuda.so's $sym binds to $t" >&2; fail=1; }
        done
    done < "$tmp/refs"
    [ "$fail" = 0 ]
}
under default
under v7 --torch-v7

echo "== torch: the same import without the interposer binds them to libcudnn"
env LD_BIND_NOW=1 LD_DEBUG=bindings LD_DEBUG_OUTPUT="$tmp/without" "$py" -W ignore -c 'import torch'
bound "$tmp/without" > "$tmp/without.txt"
sed 's/^/   /' "$tmp/without.txt"
while read -r sym; do
    awk -v s="$sym" '$1 == s {print $2}' "$tmp/without.txt" | grep -q '/libcudnn\.so\.9$' ||
        { echo "torch-check: without the interposer, $sym did not bind to libcudnn.so.9" >&2; exit 1; }
done < "$tmp/refs"

# enabled WHEN WANT: enable_check.py WHEN under LD_DEBUG=bindings; every
# reference binds to a file whose name ends in WANT.
enabled() {
    echo "== torch: convcache.enable() $1 import torch, LD_BIND_NOW=1, LD_DEBUG=bindings"
    env LD_BIND_NOW=1 LD_DEBUG=bindings LD_DEBUG_OUTPUT="$tmp/enable-$1" PYTHONPATH="$src/python" \
        "$py" -W ignore tests/torch/enable_check.py "$build/libconvcache_preload.so" "$1"
    bound "$tmp/enable-$1" > "$tmp/enable-$1.txt"
    sed 's/^/   /' "$tmp/enable-$1.txt"
    while read -r sym; do
        targets=$(awk -v s="$sym" '$1 == s {print $2}' "$tmp/enable-$1.txt")
        [ -n "$targets" ] || { echo "torch-check: enable() $1: no binding of $sym was logged" >&2; exit 1; }
        for t in $targets; do
            case $t in *"$2") ;; *) echo "torch-check: enable() $1: $sym binds to $t" >&2; exit 1 ;; esac
        done
    done < "$tmp/refs"
}
enabled before /libconvcache_preload.so
enabled after /libcudnn.so.9
echo "torch-check: ok ($(wc -l < "$tmp/refs") references, all to the interposer under convcache run and after convcache.enable(); to libcudnn.so.9 without, and after import torch; convcache.enable())"
