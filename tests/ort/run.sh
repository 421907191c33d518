#!/bin/sh
# make ort-check: ONNX Runtime's CUDA provider (the real onnxruntime-gpu
# wheel) and the real libcudnn.so.9 (nvidia-cudnn-cu13), under the
# interposer, with no GPU:
#   1. libonnxruntime_providers_cuda.so is a dlopen client of cuDNN: no
#      NEEDED libcudnn, no undefined cudnn* symbol, dlopen and dlsym among
#      its imports, cuDNN's function names among its strings (the names it
#      passes to dlsym);
#   2. each of those names, looked up with dlsym (and dlvsym at
#      libcudnn.so.9) in a handle of the real libcudnn.so.9 opened by its
#      absolute path (as from a wheel's directory), under `convcache run`:
#      the interposer's function for each it serves (the find functions and
#      cudnnBackend* ONNX Runtime names, at least
#      cudnnFindConvolutionForwardAlgorithmEx and cudnnBackendExecute), and
#      exactly glibc's answer without the interposer for every other name
#      (build/tests/preload/dlsym_exact, which also looks each name up in
#      libc, libm, the program, RTLD_DEFAULT and RTLD_NEXT);
#   3. the redirected cudnnBackendCreateDescriptor and
#      cudnnBackendDestroyDescriptor, called (a tensor descriptor, no GPU
#      needed), reach the real cuDNN and return success: cuDNN 9's
#      libcudnn.so.9 takes its sub-libraries' functions with dlsym, and
#      those lookups must not come back to the interposer.
#
# usage: run.sh BUILD ORT_SITE CUDNN_LIB_DIR
set -eu
build=$(cd "$1" && pwd)
site=$(cd "$2" && pwd)
cudnn=$(cd "$3" && pwd)/libcudnn.so.9
prov=$site/onnxruntime/capi/libonnxruntime_providers_cuda.so
tmp=$(mktemp -d "${TMPDIR:-/tmp}/convcache-ort.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM
fail() {
    echo "ort-check: FAIL: $*" >&2
    exit 1
}
ok() { echo "ok   $*"; }
[ -f "$prov" ] || fail "$prov not found"
[ -f "$cudnn" ] || fail "$cudnn not found"

echo "== 1. $(basename "$prov") opens cuDNN at run time"
if readelf -d "$prov" | grep -q 'NEEDED.*libcudnn'; then fail "it links libcudnn"; fi
undef=$(nm -D --undefined-only "$prov" | awk '{print $2}' | sed 's/@.*//')
if echo "$undef" | grep -q '^cudnn'; then fail "it has undefined cudnn symbols"; fi
for f in dlopen dlsym; do echo "$undef" | grep -qx "$f" || fail "it does not import $f"; done
strings -a "$prov" | grep -E '^cudnn[A-Z][A-Za-z0-9_]*$' | sort -u >"$tmp/names"
nm -D --defined-only "$build/libconvcache_preload.so" | awk '{print $3}' | grep '^cudnn' | sort -u >"$tmp/ours"
comm -12 "$tmp/names" "$tmp/ours" >"$tmp/served"
for f in cudnnFindConvolutionForwardAlgorithmEx cudnnBackendExecute; do
    grep -qx "$f" "$tmp/served" || fail "ONNX Runtime does not name $f"
done
ok "no libcudnn NEEDED, no cudnn* undefined, imports dlopen and dlsym; names $(wc -l <"$tmp/names") cuDNN functions, $(wc -l <"$tmp/served") of them served: $(tr '\n' ' ' <"$tmp/served")"

echo "== 2. dlsym in the real $(basename "$cudnn")'s handle, with and without convcache run"
x=$build/tests/preload/dlsym_exact
timeout 300 "$x" "$tmp/names" "$cudnn" >"$tmp/plain" 2>"$tmp/err" || { cat "$tmp/err" >&2; fail "dlsym_exact"; }
timeout 300 "$build/convcache" run --path "$tmp/c.ccdb" -- "$x" "$tmp/names" "$cudnn" >"$tmp/pre" 2>"$tmp/err" ||
    { cat "$tmp/err" >&2; fail "dlsym_exact under convcache run"; }
# Without the interposer every name cuDNN defines is cuDNN's own.
found=$(awk '$1 == "cudnn" && $3 ~ /^libcudnn/' "$tmp/plain" | wc -l)
[ "$found" -gt 50 ] || fail "only $found names found in libcudnn.so.9 without the interposer"
fails=0
while read -r name; do
    for where in cudnn cudnn@libcudnn.so.9; do
        got=$(awk -v w="$where" -v n="$name" '$1 == w && $2 == n {print $3}' "$tmp/pre")
        case $got in libconvcache_preload.so+*) ;;
        *) echo "ort-check: $where $name under convcache run: $got" >&2; fails=$((fails + 1)) ;; esac
    done
done <"$tmp/served"
paste -d '|' "$tmp/plain" "$tmp/pre" | awk -F'|' '$1 != $2 {print $2}' >"$tmp/diff"
wrong=$(awk 'NR == FNR {ours[$1] = 1; next}
    !(($1 == "cudnn" || $1 == "cudnn@libcudnn.so.9" || $1 == "default" || $1 == "next" || $1 == "self") &&
      ($2 in ours) && $3 ~ /^libconvcache_preload\.so\+/ && $5 == "-")' "$tmp/served" "$tmp/diff")
[ -z "$wrong" ] || { echo "$wrong" | head >&2; fail "answers that differ for names the interposer does not serve"; }
[ "$fails" = 0 ] || fail "$fails served lookups are not the interposer's"
ok "$(wc -l <"$tmp/plain") lookups of $(wc -l <"$tmp/names") names: the $(wc -l <"$tmp/served") served ones are the interposer's in libcudnn.so.9's handle (dlsym and dlvsym), $found found in cuDNN without it, every other answer glibc's own"
echo "== 3. the redirected functions called, through the real cuDNN"
rc=0
timeout 120 "$build/convcache" run --path "$tmp/c.ccdb" -- "$x" "$tmp/served" "$cudnn" call >/dev/null 2>"$tmp/err" || rc=$?
[ "$rc" = 0 ] || { cat "$tmp/err" >&2; fail "calling the redirected create and destroy: exit $rc (124: it hung)"; }
grep -q '^call create 0 destroy 0$' "$tmp/err" || { cat "$tmp/err" >&2; fail "create or destroy failed"; }
ok "cudnnBackendCreateDescriptor and cudnnBackendDestroyDescriptor through the interposer: success, no loop"
echo "ort-check: all passed"
