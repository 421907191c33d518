#!/bin/sh
# A stand-in for a python with PyTorch and CUDA, for rehearsing the GPU
# branches of bench/gpu/parts.sh on a machine without either (kit_test.sh):
# it answers torch_step.py (also when enable_run.py starts it: its --path
# and --verbose become the environment enable() sets), sdpa_check.py and
# ort_conv.py with made-up figures in their
# formats, and the interposer's lines a run under convcache would log (the
# first process to claim the cache file "benchmarks", the rest are served);
# anything else (judge.py) goes to python3. FAKE_FIRST_MS: a warm run's
# first steps (default 1100; the benchmark-off floor's are 1000).
case "$1" in
-c) exit 0 ;;
*/torch_step.py)
    shift
    bar= ms=0 bench=on
    while [ $# -gt 0 ]; do
        case $1 in --barrier) bar=$2; shift ;; --multiscale) ms=$2; shift ;; --benchmark) bench=$2; shift ;; esac
        shift
    done
    echo "mark import 2.0"
    echo "mark model 4.0"
    [ -n "$bar" ] && { touch "$bar/ready.$$"; cat "$bar/go" >/dev/null; }
    f=${CONVCACHE_PATH:-}
    warm=0
    [ -n "$f" ] && ! mkdir "$f.fake" 2>/dev/null && warm=1
    first=9000
    [ "$bench" = off ] && first=1000
    [ "$warm" = 1 ] && first=${FAKE_FIRST_MS:-1100}
    if [ "$ms" != 0 ]; then echo "epoch 1 $first"; echo "epoch 2 300.0"; else echo "step 160 $first 30.0"; fi
    echo "mark first_steps 6.0"
    echo "steady 288 30 50.000 55.000"
    echo "peak_mem_mb 5000.0"
    echo "path v8"
    echo "torch 2.11.0 cudnn 91900"
    if [ -n "${CONVCACHE_PRELOAD_LOG:-}" ]; then
        if [ "$warm" = 1 ]; then k="served built 1 timed 1"; else k="new built 9 timed 9"; fi
        echo "convcache-preload: v8 $k refused 0 key 01" >&2
    fi
    [ -n "${CONVCACHE_VERBOSE:-}" ] && echo "convcache-preload: summary: finds 3, hits $((3 * warm)), misses $((3 - 3 * warm)), passthrough 0" >&2
    exit 0
    ;;
*/enable_run.py)
    shift
    while [ $# -gt 0 ] && [ "$1" != -- ]; do
        case $1 in
        --path) export CONVCACHE_PATH="$2"; shift ;;
        --preload) shift ;;
        --verbose) export CONVCACHE_PRELOAD_LOG=1 CONVCACHE_VERBOSE=1 ;;
        esac
        shift
    done
    shift
    exec "$0" "$@"
    ;;
*/ort_conv.py)
    f=${CONVCACHE_PATH:-}
    warm=0
    [ -n "$f" ] && ! mkdir "$f.fake" 2>/dev/null && warm=1
    printf 'ort 1.31.1 providers CUDAExecutionProvider,CPUExecutionProvider\nfirst_ms %s\nsecond_ms 2.0\ndigest 89ab\n' \
        "$([ "$warm" = 1 ] && echo 40.0 || echo 900.0)"
    [ -n "${CONVCACHE_VERBOSE:-}" ] && echo "convcache-preload: summary: finds 6, hits $((6 * warm)), misses $((6 - 6 * warm)), passthrough 0" >&2
    exit 0
    ;;
*/sdpa_check.py) echo "sdpa 0123abcd 4567ef 4x8x512x64" ;;
*) exec python3 "$@" ;;
esac
