#!/bin/sh
# The GPU check's parts (make gpu-check; bench/gpu/kit.sh runs each under
# its own timeout). One part per call:
#
#   parts.sh NAME DIR      outputs and logs go to DIR; exit 0 PASS, 77 SKIP,
#                          else FAIL; the last "figures: " line is the part's
#
# Environment: KIT_BUILD (build/, made by `make gpu-kit` where Go is),
# KIT_STANDIN (1: the CPU stand-ins of tests/preload, no GPU), KIT_RESULTS
# (the results file), MAKE, PYTHON, CUDNN_LIBRARY (libcudnn.so.9; default:
# PyTorch's nvidia-cudnn wheel); KIT_WARM_ENV (VAR=VALUE words for
# warm-default's warm run on the stand-ins only: kit_test.sh breaks it);
# KIT_WARM_FRESH (part names, of enable-default, v8-dlopen and
# onnxruntime: their warm runs get a fresh cache file, so that they
# benchmark again; kit_test.sh makes them fail with it). On the stand-ins the PyTorch parts run
# their closest stand-in equivalent where there is one (the default path:
# tests/v8fe/torch_like, PyTorch's sequence on the real cudnn_frontend;
# 4 processes: tests/preload/v8_prog; under convcache.enable(): the same
# sequence as a library, build/tests/v8fe/libtorch_like.so, loaded by
# Python after enable()), else SKIP and say why.
#
# Parts: v7-find v8-check warm-default procs4 deterministic resnet
#        enable-default multiscale bf16-cl sdpa torch-v7 v8-dlopen
#        onnxruntime
set -u
name=$1
dir=$(mkdir -p "$2" && cd "$2" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
build=$(cd "${KIT_BUILD:-$repo/build}" && pwd)
standin=${KIT_STANDIN:-0}
results=${KIT_RESULTS:-$repo/bench/gpu/RESULTS.md}
PYTHON=${PYTHON:-python3}
MAKE=${MAKE:-make}
judge() { "$PYTHON" "$here/judge.py" "$@"; }
skip() { echo "figures: $*"; exit 77; }
unset CONVCACHE_SCOPE CONVCACHE_DISABLE CONVCACHE_MODE CONVCACHE_TAG CONVCACHE_PRELOAD_LOG CONVCACHE_VERBOSE \
    CONVCACHE_PATH 2>/dev/null || true

if [ "$standin" = 1 ]; then
    export LD_LIBRARY_PATH="$build/tests/preload${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    export CONVCACHE_CUDNN_LIBRARY="$build/tests/preload/libcudnn.so.9"
    export CONVCACHE_CUDA_LIBRARY="$build/tests/preload/libcuda.so.1"
    export STANDIN_EXEC_US=${STANDIN_EXEC_US:-300} STANDIN_BUILD_US=${STANDIN_BUILD_US:-100}
else
    CONVCACHE_CUDNN_LIBRARY=$(PYTHON=$PYTHON sh "$here/cudnn_lib.sh")
    export CONVCACHE_CUDNN_LIBRARY
fi

# torch_ok: PyTorch with CUDA imports here (asked once per kit run).
torch_ok() {
    f=$dir/../.torch.${KIT_RUN:-0}
    [ -e "$f" ] || { "$PYTHON" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' \
                         >/dev/null 2>&1 && echo 1 > "$f" || echo 0 > "$f"; }
    [ "$(cat "$f")" = 1 ]
}
need_torch() {
    [ "$standin" = 1 ] && skip "$1 (stand-in run: no PyTorch with CUDA here)"
    torch_ok || skip "$1 ($PYTHON cannot import torch with CUDA)"
}

# run OUT [VAR=VALUE...] [--cc [RUN-FLAGS]] -- CMD...: CMD (under `convcache
# run` with --cc) with stdout in DIR/OUT.txt, stderr in DIR/OUT.err, and
# its whole wall time, exec to exit, from the shell ("wall S" appended).
run() {
    o=$1
    shift
    vars="" cc=""
    while [ $# -gt 0 ] && [ "$1" != -- ] && [ "$1" != --cc ]; do vars="$vars $1"; shift; done
    if [ "${1:-}" = --cc ]; then
        shift
        cc="$build/convcache run"
        while [ "$1" != -- ]; do cc="$cc $1"; shift; done
    fi
    shift
    t0=$(date +%s.%N)
    # shellcheck disable=SC2086 # VAR=VALUE words and a command line
    env $vars KIT_T0="$t0" $cc ${cc:+--} "$@" > "$dir/$o.txt" 2> "$dir/$o.err"
    rc=$?
    echo "wall $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN {printf "%.3f", b - a}')" >> "$dir/$o.txt"
    [ "$rc" = 0 ] || { echo "$o failed (exit $rc):"; tail -5 "$dir/$o.err"; }
    return "$rc"
}
LOG="CONVCACHE_VERBOSE=1 CONVCACHE_PRELOAD_LOG=1"
step=$here/torch_step.py
# ResNet-50 at 3 sizes, batch 16; --steady steps at the last size.
RESNET="--batch 16 --sizes 160,224,288 --steady 30"

# start_together N CMD...: N copies of CMD I BARRIER-DIR, which meet at a
# FIFO barrier (run.sh's): each says it is ready, then all go at once.
start_together() {
    n=$1
    shift
    bar=$dir/barrier
    mkdir -p "$bar"
    rm -f "$bar"/ready.* "$bar/go"
    mkfifo "$bar/go"
    exec 3<>"$bar/go"
    pids=""
    i=0
    while [ "$i" -lt "$n" ]; do
        i=$((i + 1))
        (exec 3>&-; "$@" "$i" "$bar") &
        pids="$pids $!"
    done
    # Until all are there, or one is gone (then the rest go at once).
    k=0
    while [ "$(find "$bar" -name 'ready.*' | wc -l)" -lt "$n" ] && [ "$k" -lt 3000 ]; do
        for p in $pids; do kill -0 "$p" 2>/dev/null || k=3000; done
        k=$((k + 1))
        sleep 0.1
    done
    exec 3>&-
    rc=0
    for p in $pids; do wait "$p" || rc=1; done
    return $rc
}

# reuse FILE OUT: start from warm-default's cold run (its cache file as
# DIR/FILE, its outputs as DIR/OUT.*) when this kit ran it, saving a cold
# ResNet-50 process; false when it did not (run the cold run here).
reuse() {
    w=$dir/../warm-default
    [ -s "$w/c.ccdb" ] && [ -s "$w/cold.err" ] || return 1
    cp "$w/c.ccdb" "$dir/$1" && cp "$w/cold.txt" "$dir/$2.txt" && cp "$w/cold.err" "$dir/$2.err" &&
        echo "$2: warm-default's cold run and cache file"
}

# warm_file NAME: the cache file of a part's warm run: DIR/NAME, the cold
# run's, or a fresh one when KIT_WARM_FRESH names this part (kit_test.sh).
warm_file() {
    case " ${KIT_WARM_FRESH:-} " in
    *" $name "*) echo "$dir/fresh-$1" ;;
    *) echo "$dir/$1" ;;
    esac
}

# v7_find_bin: bench/gpu/v7_find, compiled here when there is a compiler
# (as run.sh does), else the one the v7-find part or make gpu-kit left.
v7_find_bin() {
    mkdir -p "$build/gpu"
    if command -v "${CC:-cc}" >/dev/null 2>&1; then
        "${CC:-cc}" -O2 -Wall -Wextra -o "$build/gpu/v7_find" "$here/v7_find.c" -ldl || return 1
    fi
    [ -x "$build/gpu/v7_find" ] || { echo "no C compiler and no prebuilt $build/gpu/v7_find"; return 1; }
}

case $name in
v7-find)
    # cuDNN's v7 find API: v7_find twice on a fresh file, two copies at a barrier.
    GPU_CHECK_KEEP=$dir sh "$here/run.sh" "$build" "$standin" "$results"
    ;;
v8-check)
    # Engine choices stored, rebuilt and read again by a second reader (v8_check).
    "$MAKE" -C "$repo" --no-print-directory gpu-check-v8 STANDIN="$standin" GPU_RESULTS="$results" > "$dir/v8.txt" 2>&1
    rc=$?
    cat "$dir/v8.txt"
    judge v8-check "$dir" || rc=1
    exit $rc
    ;;
warm-default)
    # PyTorch's default path under convcache run: cold, then warm.
    if [ "$standin" = 1 ]; then
        prog="$build/tests/v8fe/torch_like --iterations 1"
        run cold $LOG CONVCACHE_PATH="$dir/c.ccdb" --cc -- $prog || exit 1
        run warm $LOG CONVCACHE_PATH="$dir/c.ccdb" ${KIT_WARM_ENV:-} --cc -- $prog || exit 1
    else
        need_torch "ResNet-50 on the default path"
        run cold $LOG CONVCACHE_PATH="$dir/c.ccdb" --cc -- "$PYTHON" "$step" $RESNET || exit 1
        run warm $LOG CONVCACHE_PATH="$dir/c.ccdb" --cc -- "$PYTHON" "$step" $RESNET || exit 1
    fi
    judge warm-default "$dir"
    ;;
procs4)
    # 4 processes at a barrier on a fresh file, on the default path.
    if [ "$standin" = 1 ]; then
        one() { run "p$1" $LOG CONVCACHE_PATH="$dir/p.ccdb" --cc -- sh -c \
                    'touch "$1/ready.$$"; cat "$1/go" >/dev/null; exec "$2" "$3"' sh "$2" \
                    "$build/tests/preload/v8_prog" "$dir/p$1.report"; }
    else
        need_torch "4 PyTorch processes"
        one() { run "p$1" $LOG CONVCACHE_PATH="$dir/p.ccdb" --cc -- "$PYTHON" "$step" $RESNET --steady 0 \
                    --barrier "$2"; }
    fi
    start_together 4 one || exit 1
    judge procs4 "$dir"
    ;;
deterministic)
    # A file written without deterministic mode, then a deterministic warm run.
    if [ "$standin" = 1 ]; then
        prog="$build/tests/v8fe/torch_like --iterations 1"
        reuse d.ccdb plain || run plain $LOG CONVCACHE_PATH="$dir/d.ccdb" --cc -- $prog || exit 1
        run warm $LOG CONVCACHE_PATH="$dir/d.ccdb" --cc -- $prog --deterministic || exit 1
    else
        need_torch "deterministic ResNet-50"
        reuse d.ccdb plain || run plain $LOG CONVCACHE_PATH="$dir/d.ccdb" --cc -- "$PYTHON" "$step" $RESNET || exit 1
        run warm $LOG CONVCACHE_PATH="$dir/d.ccdb" --cc -- "$PYTHON" "$step" $RESNET --deterministic || exit 1
    fi
    judge deterministic "$dir"
    ;;
resnet)
    # Interleaved: benchmark off (the floor); default; convcache warm; default; convcache warm.
    need_torch "ResNet-50 interleaved"
    reuse r.ccdb cold || run cold $LOG CONVCACHE_PATH="$dir/r.ccdb" --cc -- "$PYTHON" "$step" $RESNET || exit 1
    run floor -- "$PYTHON" "$step" $RESNET --benchmark off || exit 1
    for i in 1 2; do
        run "default$i" -- "$PYTHON" "$step" $RESNET || exit 1
        run "warm$i" $LOG CONVCACHE_PATH="$dir/r.ccdb" --cc -- "$PYTHON" "$step" $RESNET || exit 1
    done
    judge resnet "$dir"
    ;;
enable-default)
    # PyTorch's default path served by convcache.enable() in the process
    # (bench/gpu/enable_run.py), not by convcache run: cold, then warm, on a
    # fresh file; judged as warm-default, and against resnet's floor when
    # this kit ran it.
    en="$PYTHON $here/enable_run.py --preload $build/libconvcache_preload.so --verbose"
    if [ "$standin" = 1 ]; then
        lib=$build/tests/v8fe/libtorch_like.so
        [ -e "$lib" ] || { echo "$lib is missing: make gpu-kit"; exit 1; }
        prog="--lib $lib --iterations 1" cold=""
    else
        need_torch "ResNet-50 on the default path under convcache.enable()"
        prog="$step $RESNET" cold="--steady 0"  # the cold run's steady state is not judged
    fi
    run cold -- $en --path "$dir/e.ccdb" -- $prog $cold || exit 1
    run warm -- $en --path "$(warm_file e.ccdb)" -- $prog || exit 1
    f=$dir/../resnet/floor.txt
    [ "$standin" != 1 ] && [ -s "$f" ] && cp "$f" "$dir/floor.txt"
    judge enable-default "$dir"
    ;;
multiscale)
    # 12 sizes, a new one every step, two epochs: without convcache, cold, warm.
    need_torch "multi-scale training"
    MS="--batch 8 --sizes 96,272 --multiscale 12 --epochs 2 --steady 0"
    run without -- "$PYTHON" "$step" $MS || exit 1
    run cold $LOG CONVCACHE_PATH="$dir/m.ccdb" --cc -- "$PYTHON" "$step" $MS || exit 1
    run warm $LOG CONVCACHE_PATH="$dir/m.ccdb" --cc -- "$PYTHON" "$step" $MS || exit 1
    judge multiscale "$dir"
    ;;
bf16-cl)
    need_torch "bf16 autocast with channels_last"
    run cold $LOG CONVCACHE_PATH="$dir/b.ccdb" --cc -- "$PYTHON" "$step" $RESNET --bf16 --channels-last --steady 0 || exit 1
    run warm $LOG CONVCACHE_PATH="$dir/b.ccdb" --cc -- "$PYTHON" "$step" $RESNET --bf16 --channels-last || exit 1
    judge bf16-cl "$dir"
    ;;
sdpa)
    need_torch "SDPA through cuDNN attention"
    run without -- "$PYTHON" "$here/sdpa_check.py"
    rc=$?
    [ "$rc" = 77 ] && skip "$(sed -n 's/^skip: //p' "$dir/without.txt")"
    [ "$rc" = 0 ] || exit 1
    run without2 -- "$PYTHON" "$here/sdpa_check.py" || exit 1
    run with $LOG CONVCACHE_PATH="$dir/s.ccdb" --cc -- "$PYTHON" "$here/sdpa_check.py" || exit 1
    judge sdpa "$dir"
    ;;
torch-v7)
    need_torch "--torch-v7 (the v7-find part runs the find API here)"
    run cold CONVCACHE_VERBOSE=1 CONVCACHE_PATH="$dir/v.ccdb" --cc --torch-v7 -- "$PYTHON" "$step" $RESNET --steady 0 || exit 1
    run warm CONVCACHE_VERBOSE=1 CONVCACHE_PATH="$dir/v.ccdb" --cc --torch-v7 -- "$PYTHON" "$step" $RESNET || exit 1
    judge torch-v7 "$dir"
    ;;
v8-dlopen)
    # Clients that open cuDNN with dlopen and take its functions with dlsym
    # on its handle (the interposer's dlsym), under convcache run:
    # bench/gpu/v7_find --handle twice on a fresh file (run 2: every find a
    # hit, the same algorithms); on the stand-ins also the real
    # cudnn_frontend with dynamic loading (tests/v8fe/torch_like_dl), cold
    # then warm, judged as warm-default.
    v7_find_bin || exit 1
    [ "$standin" = 1 ] && export STANDIN_FIND_MS=2
    h="$build/gpu/v7_find --handle --cudnn $CONVCACHE_CUDNN_LIBRARY"
    run h1 $LOG CONVCACHE_PATH="$dir/h.ccdb" --cc -- $h || exit 1
    run h2 $LOG CONVCACHE_PATH="$(warm_file h.ccdb)" --cc -- $h || exit 1
    if [ "$standin" = 1 ]; then
        prog="$build/tests/v8fe/torch_like_dl --iterations 1"
        run cold $LOG CONVCACHE_PATH="$dir/c.ccdb" --cc -- $prog || exit 1
        run warm $LOG CONVCACHE_PATH="$(warm_file c.ccdb)" --cc -- $prog || exit 1
    fi
    judge v8-dlopen "$dir"
    ;;
onnxruntime)
    # ONNX Runtime's CUDA provider (a dlopen client) with
    # cudnn_conv_algo_search EXHAUSTIVE, twice under convcache run on a
    # fresh file: run 2 served (bench/gpu/ort_conv.py builds the model).
    # onnxruntime from this python, else the one make ort put in build/.
    if ! "$PYTHON" -c 'import onnxruntime' > /dev/null 2>&1 && [ -d "$build/ort/site/onnxruntime" ]; then
        export PYTHONPATH="$build/ort/site${PYTHONPATH:+:$PYTHONPATH}"
    fi
    "$PYTHON" -c 'import onnxruntime as o, sys; p = o.get_available_providers(); "CUDAExecutionProvider" in p or sys.exit("onnxruntime %s has no CUDA provider (%s)" % (o.__version__, ", ".join(p)))' \
        > "$dir/probe.txt" 2>&1 || skip "onnxruntime-gpu not on this machine ($(tail -1 "$dir/probe.txt" | cut -c1-160))"
    [ "$standin" = 1 ] && skip "stand-in run: ONNX Runtime's CUDA provider needs a GPU"
    "$PYTHON" -c 'import onnx' > /dev/null 2>&1 || skip "the onnx package (to build the model) is not on this machine"
    run cold $LOG CONVCACHE_PATH="$dir/o.ccdb" --cc -- "$PYTHON" "$here/ort_conv.py" "$dir/model.onnx"
    rc=$?
    [ "$rc" = 77 ] && skip "$(sed -n 's/^skip: //p' "$dir/cold.txt")$(grep -o 'with error: [^[]*' "$dir/cold.err" |
                                                                     head -1 | cut -c1-160 | sed 's/^/: /')"
    [ "$rc" = 0 ] || exit 1
    run warm $LOG CONVCACHE_PATH="$(warm_file o.ccdb)" --cc -- "$PYTHON" "$here/ort_conv.py" "$dir/model.onnx" || exit 1
    judge onnxruntime "$dir"
    ;;
*)
    echo "parts.sh: no part $name" >&2
    exit 2
    ;;
esac
