#!/bin/sh
# make gpu-check, the v7-find part (bench/gpu/parts.sh): the interposer on
# cuDNN's v7 find API, on a real GPU, or on the CPU against the stand-in
# libraries (STANDIN=1, as CI runs it).
#
#   (a) bench/gpu/v7_find (ResNet-50's convolutions at 3 sizes through
#       cudnnFind*AlgorithmEx) twice in a row under `convcache run` on a
#       fresh cache file; then, on another fresh file, two copies that wait
#       at a barrier and start their find calls together;
#   (b) report.py: one table, printed and written to RESULTS.
#
# Needs no Go: build/ (libconvcache, the interposer, the convcache command,
# and for STANDIN=1 the stand-ins) comes from `make gpu-kit` on a machine
# with Go. v7_find.c is compiled here with $CC (no headers, only libdl).
#
# usage: run.sh BUILD STANDIN(0|1) RESULTS
# Environment: CUDNN_LIBRARY (libcudnn.so.9 to use; default: PyTorch's
# nvidia-cudnn wheel if python can find it, else by name), PYTHON (python3),
# GPU_CHECK_KEEP (a directory: every output and log is copied there at the
# end, pass or fail; the kit keeps them in its part's directory).
set -eu
build=$(cd "$1" && pwd)
standin=$2
results=$3
here=$(cd "$(dirname "$0")" && pwd)
PYTHON=${PYTHON:-python3}
CC=${CC:-cc}

for f in convcache libconvcache_preload.so libconvcache.so.1; do
    if [ ! -e "$build/$f" ]; then
        echo "gpu-check: $build/$f is missing: run 'make gpu-kit' on a machine with Go and copy build/ here" >&2
        exit 2
    fi
done

work=$(mktemp -d)
pids=
cleanup() {
    for p in $pids; do kill "$p" 2>/dev/null || true; done
    if [ -n "${GPU_CHECK_KEEP:-}" ] && [ -d "$work/out" ]; then mkdir -p "$GPU_CHECK_KEEP" && cp -r "$work/out/." "$GPU_CHECK_KEEP/" || true; fi
    rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
mkdir -p "$build/gpu"
if command -v "$CC" >/dev/null 2>&1; then
    $CC -O2 -Wall -Wextra -o "$build/gpu/v7_find" "$here/v7_find.c" -ldl
fi
find_bin=$build/gpu/v7_find
[ -x "$find_bin" ] || { echo "gpu-check: no C compiler and no prebuilt $find_bin" >&2; exit 2; }

out=$work/out
mkdir -p "$out"
if [ "$standin" = 1 ]; then
    # The stand-in driver and cuDNN (tests/preload): each find "benchmarks"
    # for 2 ms. Figures from this mode describe the stand-ins, not a GPU.
    standins=$build/tests/preload
    [ -e "$standins/libcudnn.so.9" ] || { echo "gpu-check: no stand-ins in $standins: make gpu-kit" >&2; exit 2; }
    export LD_LIBRARY_PATH="$standins${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    export STANDIN_FIND_MS=2
    cudnn=$standins/libcudnn.so.9
    echo "STAND-IN run on the CPU (tests/preload libraries, 2 ms per simulated benchmark): no GPU was used" > "$out/mode"
else
    cudnn=$(PYTHON=$PYTHON sh "$here/cudnn_lib.sh")
    echo "GPU" > "$out/mode"
    if command -v nvidia-smi >/dev/null 2>&1; then
        nvidia-smi --query-gpu=driver_version --format=csv,noheader -i 0 2>/dev/null | head -1 > "$out/driver" || true
    fi
fi
export CONVCACHE_CUDNN_LIBRARY="$cudnn"
unset CONVCACHE_SCOPE CONVCACHE_DISABLE CONVCACHE_MODE CONVCACHE_TAG 2>/dev/null || true
echo "gpu-check: cuDNN $cudnn"
"$build/convcache" scope --json > "$out/device.json" ||
    { echo "gpu-check: convcache scope found no device (see above)" >&2; exit 1; }

run_find() { # run_find CACHE OUT [ARGS...]: v7_find under the interposer
    c=$1 o=$2
    shift 2
    CONVCACHE_PATH=$c "$build/convcache" run -- "$find_bin" --cudnn "$cudnn" "$@" > "$o"
}

echo "== gpu-check (a): v7_find twice on a fresh cache file"
run_find "$work/two_runs.ccdb" "$out/run1.txt"
run_find "$work/two_runs.ccdb" "$out/run2.txt"

echo "== gpu-check (a): two copies started together on another fresh file"
bar=$work/barrier
mkdir "$bar"
mkfifo "$bar/go"
exec 3<>"$bar/go" # the barrier: held open (for writing) until both copies are ready;
# no other process may hold it: the copies start in subshells that close it first
(exec 3>&- 2> "$out/par_a.log"; CONVCACHE_PRELOAD_LOG=1 run_find "$work/together.ccdb" "$out/par_a.txt" --barrier "$bar") &
pa=$!
(exec 3>&- 2> "$out/par_b.log"; CONVCACHE_PRELOAD_LOG=1 run_find "$work/together.ccdb" "$out/par_b.txt" --barrier "$bar") &
pb=$!
pids="$pa $pb"
# Wait until both are set up and blocked reading the FIFO (or one died):
# waiting for that state is waiting for an event, not guessing at timing.
n=0
while [ "$(find "$bar" -name 'ready.*' | wc -l)" -lt 2 ]; do
    for p in $pa $pb; do
        kill -0 "$p" 2>/dev/null || { wait "$p" || true; cat "$out/par_a.log" "$out/par_b.log" >&2
                                      echo "gpu-check: a copy exited before the barrier" >&2; exit 1; }
    done
    n=$((n + 1))
    [ "$n" -lt 3000 ] || { echo "gpu-check: the copies did not reach the barrier in 300 s" >&2; exit 1; }
    sleep 0.1
done
exec 3>&- # both read end of file now, at the same moment
wait "$pa" || { cat "$out/par_a.log" >&2; exit 1; }
wait "$pb" || { cat "$out/par_b.log" >&2; exit 1; }
pids=

echo "== gpu-check (b): results"
"$PYTHON" "$here/report.py" "$out" "$results"
echo "gpu-check: the table is in $results"
