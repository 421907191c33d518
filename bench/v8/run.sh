#!/bin/sh
# make bench-v8-preload: PyTorch's default (v8) path through the interposer,
# on the stand-in cuDNN (no GPU): two rows of the benchmark table.
#
#   1. time choosing plans, run 2 against run 1: PROGRAM (PyTorch's default
#      path on the real cudnn_frontend: tests/v8fe/torch_like, 12
#      convolutions, up to 10 candidates timed each) on a fresh cache file,
#      then again on the same file, under `convcache run`. Each candidate's
#      execute takes STANDIN_EXEC_US (2 ms by default) and, where the
#      stand-in models it, each plan's build STANDIN_BUILD_US. The time is
#      the program's own: from building a graph to the plan it keeps,
#      summed over its convolutions. Target: run 2 <= 1% of run 1.
#   2. the warm execute's overhead: exec_overhead (bench/v8) under the
#      interposer, against a cuDNN whose execute returns at once. Target:
#      <= 50 ns added.
#   3. many live descriptors: bench/v8/shadow_scale with and without the
#      interposer, on the stand-in and on the real cuDNN (below). Targets:
#      <= 1.5x the time without, <= 100 bytes per descriptor, at 1M live.
# ROUNDS pairs are run (3 by default); the medians are printed.
#
# usage: run.sh BUILD PROGRAM [ARGS...]   (PROGRAM writes its report to the
#                                          path after ARGS)
set -eu
build=$(cd "$1" && pwd)
shift
prog=$*
rounds=${ROUNDS:-3}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/convcache-bench-v8.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM
unset CONVCACHE_SCOPE CONVCACHE_TAG CONVCACHE_MODE CONVCACHE_DISABLE CONVCACHE_PRELOAD_LOG CONVCACHE_VERBOSE
export STANDIN_EXEC_US=${STANDIN_EXEC_US:-2000} STANDIN_BUILD_US=${STANDIN_BUILD_US:-500}

sum() { sed -n 's/.*choose_ms=\([0-9.]*\) hit_ms=\([0-9.]*\).*/\1 \2/p' "$1" | awk '{s += $1 - $2} END {printf "%.3f", s}'; }
# counts FILE: plans built/timed, all shapes, as the stand-in counted them.
counts() { awk '{for (i = 1; i <= NF; i++) if ($i ~ /^(built|timed)=/) {split($i, kv, "="); n[kv[1]] += kv[2]}}
                END {printf "%d/%d", n["built"], n["timed"]}' "$1"; }
median() { sort -n | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }

i=0
while [ "$i" -lt "$rounds" ]; do
    i=$((i + 1))
    export CONVCACHE_PATH="$tmp/r$i.ccdb"
    STANDIN_REPORT="$tmp/a$i.standin" "$build/convcache" run -- $prog "$tmp/a$i.txt" >/dev/null
    STANDIN_REPORT="$tmp/b$i.standin" "$build/convcache" run -- $prog "$tmp/b$i.txt" >/dev/null
    echo "$(sum "$tmp/a$i.txt") $(sum "$tmp/b$i.txt")" >> "$tmp/pairs"
done
r1=$(awk '{print $1}' "$tmp/pairs" | median)
r2=$(awk '{print $2}' "$tmp/pairs" | median)
pct=$(awk -v a="$r1" -v b="$r2" 'BEGIN {printf "%.2f", 100 * b / a}')
verdict=$(awk -v p="$pct" 'BEGIN {print (p <= 1) ? "HOLDS" : "MISSED"}')
shapes=$(wc -l < "$tmp/a1.txt")

over=$(i=0; while [ "$i" -lt "$rounds" ]; do i=$((i + 1))
    LD_PRELOAD="$build/libconvcache_preload.so" "$build/bench/v8/exec_overhead" |
        sed -n 's/.*exec_ns_added=\(-*[0-9.]*\).*/\1/p'; done | median)
direct=$(LD_PRELOAD="$build/libconvcache_preload.so" "$build/bench/v8/exec_overhead")
overv=$(awk -v o="$over" 'BEGIN {print (o <= 50) ? "HOLDS" : "MISSED"}')

echo "| v8 default path, stand-in cuDNN ($shapes convolutions, execute ${STANDIN_EXEC_US} us, build ${STANDIN_BUILD_US} us) | run 1 | run 2 | run 2 / run 1 | target |"
echo "|---|---:|---:|---:|---|"
echo "| time choosing plans, ms (median of $rounds pairs) | $r1 | $r2 | $pct% | <= 1%: $verdict |"
echo "| plans built/timed, all convolutions (the stand-in's counts) | $(counts "$tmp/a1.standin") | $(counts "$tmp/b1.standin") | | |"
echo "| warm cudnnBackendExecute, ns added by the interposer (median of $rounds) | | $over | | <= 50 ns: $overv |"
echo
echo "exec_overhead, one run: $direct"

# 3. many live descriptors (bench/v8/shadow_scale): N tensors created,
#    set and finalized, then destroyed, with and without the interposer,
#    against the stand-in cuDNN, then against NVIDIA's real cuDNN 9 (its
#    descriptors are made on the CPU: no GPU needed; the few driver
#    functions it names that the stand-in driver lacks come from
#    bench/v8/cuda_extra.c); SCALE_ROUNDS (5) alternating pairs, medians of
#    the process's CPU time. Targets at 1M live and more: with <= 1.5x
#    without, and at most 100 bytes of the interposer's per descriptor.
scale_rounds=${SCALE_ROUNDS:-5} # CPU time still moves with the other core's load
real_lib=$build/nvidia/site/nvidia/cudnn/lib
real_path=$real_lib:$build/nvidia/site/nvidia/cu13/lib:$build/tests/preload
# cost OUTPUT: shadow_scale's "create+destroy ms" and "rss bytes per descriptor".
cost() {
    echo "$1" | sed -n 's/.*create_ms=\([0-9.]*\) destroy_ms=\([0-9.]*\) rss_per_desc=\([0-9]*\).*/\1 \2 \3/p' |
        awk '{printf "%.1f %d", $1 + $2, $3}'
}
scale() { # real|stand-in N [bare]: one row, the medians of SCALE_ROUNDS pairs
    cudnn=$1
    shift
    mode=${2-}
    path= extra=
    if [ "$cudnn" = real ]; then path=$real_path extra=$build/bench/v8/libcuda_extra.so; fi
    out=$tmp/scale.$cudnn.$1$mode
    i=0
    while [ "$i" -lt "$scale_rounds" ]; do
        i=$((i + 1))
        a=$(LD_LIBRARY_PATH=$path LD_PRELOAD="$extra" "$build/bench/v8/shadow_scale" "$@")
        b=$(LD_LIBRARY_PATH=$path LD_PRELOAD="$extra $build/libconvcache_preload.so" "$build/bench/v8/shadow_scale" "$@")
        echo "$(cost "$a") $(cost "$b")" >>"$out"
    done
    without=$(awk '{print $1}' "$out" | median)
    with=$(awk '{print $3}' "$out" | median)
    bytes=$(awk '{print $4 - $2}' "$out" | median)
    ratio=$(awk -v a="$with" -v b="$without" 'BEGIN {printf "%.2f", a / b}')
    verdict=$(awk -v r="$ratio" -v n="$1" -v b="$bytes" 'BEGIN {
        if (n < 1000000) exit
        printf "%s; %s", r <= 1.5 ? "<= 1.5x: HOLDS" : "<= 1.5x: MISSED", b <= 100 ? "<= 100 B: HOLDS" : "<= 100 B: MISSED"}')
    name=stand-in
    [ "$cudnn" = stand-in ] || name="real cuDNN $(ls "$build/nvidia/site" | sed -n 's/^nvidia_cudnn_cu[0-9]*-\(.*\)\.dist-info$/\1/p')"
    echo "| $name, $1 live${mode:+ ($mode: no attributes)} | $without | $with | ${ratio}x | $bytes | $verdict |"
}
echo
echo "| live tensors (created, attributes set, finalized; then destroyed), CPU ms, median of $scale_rounds | without | with convcache | ratio | interposer bytes per descriptor | target |"
echo "|---|---:|---:|---:|---:|---|"
scale stand-in 100000
scale stand-in 1000000
scale stand-in 1000000 bare
scale stand-in 1500000
if [ -f "$real_lib/libcudnn.so.9" ]; then
    scale real 1000000
    scale real 1000000 bare
    scale real 1500000
else
    echo "| real cuDNN: not installed ($real_lib; make nvidia-cudnn) | | | | | |"
fi
