#!/bin/sh
# A program that opens cuDNN with dlopen and takes the v7 find functions
# with dlsym (as ONNX Runtime's CUDA provider does), under the interposer:
# build/tests/preload/dlopen_prog (preload_prog over tests/preload/
# dlopen_shim.c), against the stand-in cuDNN. No GPU needed.
# Usage: sh tests/preload/dlopen_run.sh BUILD (make cudnn-test).
set -u

B=$(cd "${1:-build}" && pwd)
S=$B/tests/preload
PRELOAD=$B/libconvcache_preload.so
PROG=$S/dlopen_prog
T=$(mktemp -d "${TMPDIR:-/tmp}/convcache-dlopen.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT INT TERM

unset CONVCACHE_SCOPE CONVCACHE_TAG CONVCACHE_MODE CONVCACHE_DISABLE CONVCACHE_PRELOAD_LOG \
    CONVCACHE_CUDA_LIBRARY CONVCACHE_CUDNN_LIBRARY CONVCACHE_SYSTEM_PATH CONVCACHE_REMOTE \
    CONVCACHE_VERBOSE STANDIN_FIND_STATUS STANDIN_BAD_ALGO STANDIN_DRIVER_VERSION \
    STANDIN_CUDNN_VERSION STANDIN_POISON STANDIN_TOTAL_MEM STANDIN_CUDA_NO_DRIVER STANDIN_BAD_DIMS \
    DLOPEN_PROG_CUDNN DLOPEN_PROG_OPEN LD_PRELOAD
. "$(dirname "$0")/finds_lib.sh"
run() { timeout 120 "$B/convcache" run -- "$@"; }

# The program is a dlopen client: no cuDNN among its needed libraries, no
# cuDNN symbol it leaves for the loader.
if readelf -d "$PROG" | grep -q 'NEEDED.*libcudnn' || nm -D --undefined-only "$PROG" | grep -q ' cudnn'; then
    bad "dlopen_prog links cuDNN; it must take its functions with dlsym"
else ok "dlopen_prog links no cuDNN"; fi

# ---- Under convcache run: run 2 reaches cuDNN's find 0 times, same results.
fresh
timeout 60 "$PROG" run "$T/base.txt" >"$T/o" || bad "baseline run failed"
expect_finds "baseline without the interposer" 18 "$T/o" "$T/base.txt" "$T/base.txt"
run "$PROG" run "$T/r1.txt" >"$T/o" || bad "run 1 failed"
expect_finds "run 1 under convcache run misses, same results" 18 "$T/o" "$T/r1.txt" "$T/base.txt"
run "$PROG" run "$T/r2.txt" >"$T/o" || bad "run 2 failed"
expect_finds "run 2 under convcache run hits, same results" 0 "$T/o" "$T/r2.txt" "$T/base.txt"

# ---- Every way of opening: by absolute path (as from a wheel's directory),
# the same library twice, closed and opened again, 8 threads at once, in a
# child forked before cuDNN was opened. Each on a fresh cache: 18 finds,
# then 0, same results.
for how in once twice reopen threads forked; do
    fresh
    for i in 1 2; do
        want=18
        [ "$i" = 2 ] && want=0
        DLOPEN_PROG_OPEN=$how DLOPEN_PROG_CUDNN=$S/libcudnn.so.9 pre "$PROG" run "$T/r.txt" >"$T/o" 2>"$T/err" ||
            bad "$how run $i failed: $(cat "$T/err")"
        expect_finds "opened by path, $how, run $i" $want "$T/o" "$T/r.txt" "$T/base.txt"
    done
done

# A copy of the library under another directory, as a wheel installs it
# (nvidia/cudnn/lib/libcudnn.so.9), with the driver beside it.
mkdir -p "$T/site/nvidia/cudnn/lib"
cp "$S/libcudnn.so.9" "$S/libcuda.so.1" "$T/site/nvidia/cudnn/lib/"
fresh
for i in 1 2; do
    want=18
    [ "$i" = 2 ] && want=0
    DLOPEN_PROG_CUDNN=$T/site/nvidia/cudnn/lib/libcudnn.so.9 pre "$PROG" run "$T/r.txt" >"$T/o" 2>"$T/err" ||
        bad "wheel-dir run $i failed: $(cat "$T/err")"
    expect_finds "opened from a wheel's directory, run $i" $want "$T/o" "$T/r.txt" "$T/base.txt"
done

# ---- What the linked program's tests check, through dlsym: one field at a
# time, failures, argument checks, fork (a child forked after the library
# was loaded passes through; one forked before loads it), single flight.
for mode in vary status nulls fork fork-early flight; do
    fresh
    if pre "$PROG" "$mode" >"$T/o" 2>"$T/err"; then ok "dlopen_prog $mode"
    else bad "dlopen_prog $mode:"; cat "$T/err" >&2; fi
done

# ---- Another interposer of the forward find that takes the next
# definition with dlsym(RTLD_NEXT) (tests/preload/next_wrapper.c, as a
# profiler might): preloaded after this one, it gets the stand-in cuDNN's
# (run 1: its 3 forward finds pass through it; run 2 hits before it);
# preloaded before, this one's, which serves it (run 2: 3 calls through
# it, 0 finds). Never a crash, never a loop.
# wrapped ORDER RUN WANT_FINDS WANT_CALLS WANT_NEXT
wrapped() {
    if [ "$1" = after ]; then pl="$PRELOAD $S/libnext_wrapper.so"; else pl="$S/libnext_wrapper.so $PRELOAD"; fi
    LD_PRELOAD=$pl timeout 120 "$S/preload_prog" run "$T/r.txt" >"$T/o" 2>"$T/err" ||
        bad "next_wrapper $1, run $2 failed: $(head -c 300 "$T/err")"
    line=$(grep '^next_wrapper ' "$T/err")
    case $line in
    "next_wrapper calls $4 next $5" | "next_wrapper calls $4 next "*/"$5")
        expect_finds "an interposer $1 this one, RTLD_NEXT, run $2: $line" "$3" "$T/o" "$T/r.txt" "$T/base.txt" ;;
    *) bad "an interposer $1 this one, RTLD_NEXT, run $2: $line" ;;
    esac
}
fresh
wrapped after 1 18 3 libcudnn.so.9
wrapped after 2 0 0 -
fresh
wrapped before 1 18 3 libconvcache_preload.so
wrapped before 2 0 3 libconvcache_preload.so

# ---- The redirect is exact: every name of libc, libm, the stand-in cuDNN
# and a program, looked up in each of them, RTLD_DEFAULT and RTLD_NEXT
# (and dlvsym in libc), with and without the interposer: the same answer
# and the same dlerror, except the names the interposer itself defines
# looked up in cuDNN (redirected), or in RTLD_DEFAULT, RTLD_NEXT or the
# program's own handle (dlopen(NULL)), whose scope holds the preloaded
# library; and each served function looked up in cuDNN is the
# interposer's.
X=$S/dlsym_exact
libs="$(${CC:-cc} -print-file-name=libc.so.6) $(${CC:-cc} -print-file-name=libm.so.6) $S/libcudnn.so.9 $X"
{ nm -D --defined-only $libs | awk 'NF == 3 {print $3}' | sed 's/@.*//'; echo no_such_symbol_anywhere; } |
    sort -u >"$T/names"
nm -D --defined-only "$PRELOAD" | awk '{print $3}' | sort -u >"$T/ours"
served=$(grep -c '^cudnn' "$T/ours")
timeout 120 "$X" "$T/names" "$S/libcudnn.so.9" >"$T/plain" 2>"$T/err" || bad "dlsym_exact failed: $(cat "$T/err")"
pre "$X" "$T/names" "$S/libcudnn.so.9" >"$T/pre" 2>>"$T/err" || bad "dlsym_exact under the interposer failed"
lines=$(wc -l <"$T/plain")
names=$(wc -l <"$T/names")
if [ "$lines" -lt 10000 ] || [ "$lines" != "$(wc -l <"$T/pre")" ]; then
    bad "dlsym_exact: $lines lookups without, $(wc -l <"$T/pre") with the interposer"
else
    paste -d '|' "$T/plain" "$T/pre" | awk -F'|' '$1 != $2 {print $2}' >"$T/diff"
    # Each differing line: a name the interposer defines, answered with
    # the interposer's.
    wrong=$(awk 'NR == FNR {ours[$1] = 1; next}
        !(($1 == "cudnn" || $1 == "cudnn@libcudnn.so.9" || $1 == "default" || $1 == "next" || $1 == "self") && ($2 in ours) && $3 ~ /^libconvcache_preload\.so\+/ && $5 == "-")' \
        "$T/ours" "$T/diff")
    in_cudnn=$(awk '$1 == "cudnn" && $2 ~ /^cudnn/' "$T/diff" | wc -l)
    own=$(grep '^default cudnnBackendExecute ' "$T/pre")
    if [ -n "$wrong" ]; then bad "dlsym answers that differ beyond the served names: $(echo "$wrong" | head -5)"
    elif [ "$in_cudnn" != "$served" ]; then bad "$in_cudnn of the $served served functions looked up in cuDNN are the interposer's"
    elif [ "${own#default cudnnBackendExecute dlsym_exact+}" = "$own" ]; then
        bad "the program's own cudnnBackendExecute is not RTLD_DEFAULT's answer: $own"
    else ok "dlsym exact: $lines lookups of $names names, $(wc -l <"$T/diff") differ, each a served name or dlsym's own"; fi
fi

if [ "$fails" != 0 ]; then
    echo "tests/preload/dlopen_run.sh: $fails failed" >&2
    exit 1
fi
echo "tests/preload/dlopen_run.sh: all passed"
