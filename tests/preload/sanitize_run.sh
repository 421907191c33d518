#!/bin/sh
# The backend-API interposer under a sanitizer: ThreadSanitizer (make
# preload-tsan: build/tsan/libconvcache_preload.so, its sources built with
# -fsanitize=thread, beside the TSan build of libconvcache it loads) or
# AddressSanitizer with UndefinedBehaviorSanitizer (make preload-asan:
# build/asan/, -fsanitize=address,undefined, beside libconvcache as
# shipped), under programs built with the same flags, against the stand-in
# cuDNN, through its paths with many threads at once:
#   - v8_prog, 8 threads, cold then warm on one file: a new graph's lease
#     between threads (each shape benchmarked once between them), its choice
#     recorded; then served, other plans deferred and their timing refused;
#     then served again from heuristics that fill fewer results than they
#     count (read ahead as filled); then the stored plans failing to run:
#     the threads stand aside and the deferred plans are made real;
#   - v8_hosts: keepall, deferred, ddestroy (served), fewer (a host that
#     asks heuristics for 3 results), leaves (another alignment, a tensor
#     with an attribute that is not keyed), and stall-threads (a
#     leader that builds and does not run lets the follower thread go: the
#     lease's idle path);
#   - v8_stress: 8 threads executing one deferred plan at once (the wait
#     for its build), executes beside threads that create and destroy
#     thousands of descriptors (the shadow table's resizes, the execute
#     filter), and 8 threads timing one host's plans while it destroys their
#     engine configs (destroys that wait for deferred plans) and its graph;
#   - v8_fork: a child forked while threads wait inside the interposer.
# First, a program built with the sanitizer starts and is served under the
# interposer as shipped (build/libconvcache_preload.so).
#
#   sh tests/preload/sanitize_run.sh BUILD thread|address
#
# Any sanitizer report fails the run, with its trace: a process that exits
# after one exits 66, and every process's stderr is read for one too (a
# forked child leaves through _exit). No report is suppressed.
set -u
B=$(cd "$1" && pwd)
S=$B/tests/preload
case ${2:-} in
thread)
    Z=$B/tsan TAG=tsan INIT=__tsan_init
    REPORT='WARNING: ThreadSanitizer'
    ;;
address)
    Z=$B/asan TAG=asan INIT=__asan_init
    REPORT='ERROR: AddressSanitizer|runtime error:'
    ;;
*)
    echo "usage: sanitize_run.sh BUILD thread|address" >&2
    exit 2
    ;;
esac
T=$(mktemp -d "${TMPDIR:-/tmp}/convcache-$TAG.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT INT TERM
unset CONVCACHE_SCOPE CONVCACHE_TAG CONVCACHE_MODE CONVCACHE_DISABLE CONVCACHE_PRELOAD_LOG \
    CONVCACHE_CUDA_LIBRARY CONVCACHE_CUDNN_LIBRARY CONVCACHE_SYSTEM_PATH CONVCACHE_REMOTE \
    CONVCACHE_VERBOSE CONVCACHE_BUILD_IDLE_MS CONVCACHE_BUILD_TIMEOUT_MS STANDIN_ENGINE_COUNT \
    STANDIN_SUBSTITUTE STANDIN_PLAN_STATUS STANDIN_LIE STANDIN_FAIL_EXECUTE STANDIN_FAIL_FINALIZE \
    STANDIN_VANISH STANDIN_EVENT_US STANDIN_BUILD_US
export STANDIN_EXEC_US=300
export TSAN_OPTIONS="halt_on_error=0 exitcode=66 second_deadlock_stack=1"
# (Leaks are not checked: the Go runtime in libconvcache keeps what it
# allocated until the process ends, by design.)
export ASAN_OPTIONS="exitcode=66 detect_leaks=0 abort_on_error=0 verify_asan_link_order=0"
export UBSAN_OPTIONS="print_stacktrace=1 halt_on_error=1 exitcode=66"
fails=0
ok() { echo "ok   preload-$TAG: $*"; }
bad() { echo "FAIL preload-$TAG: $*" >&2; fails=$((fails + 1)); }

# The interposer the runs load, and that it is the instrumented one.
PRE=$Z/libconvcache_preload.so
if ! nm -D "$PRE" | grep -q " U $INIT"; then
    bad "$PRE is not built with -fsanitize=$2"
    exit 1
fi

# run NAME FILE [VAR=VALUE...] -- PROGRAM [ARGS...]: PROGRAM under the
# interposer $PRE on $T/FILE.ccdb; stdout in $T/NAME.out, stderr in
# $T/NAME.err. Fails (1) on a sanitizer's report, or when PROGRAM fails.
run() {
    name=$1 file=$2
    shift 2
    vars=""
    while [ $# -gt 0 ] && [ "$1" != -- ]; do vars="$vars $1"; shift; done
    shift
    # shellcheck disable=SC2086 # VAR=VALUE words
    env $vars CONVCACHE_PATH="$T/$file.ccdb" CONVCACHE_VERBOSE=1 STANDIN_REPORT="$T/$name.standin" \
        timeout 120 "$B/convcache" run --preload "$PRE" -- "$@" >"$T/$name.out" 2>"$T/$name.err"
    rc=$?
    if grep -Eq "$REPORT" "$T/$name.err" || [ "$rc" = 66 ]; then
        bad "$name: the sanitizer reported (exit status $rc):"
        grep -Ev '^convcache' "$T/$name.err" | head -80 >&2
        return 1
    fi
    if [ "$rc" != 0 ]; then
        bad "$name: exit status $rc: $(grep -v '^convcache,' "$T/$name.err" | tail -5)"
        return 1
    fi
}
# field FILE NAME: "shape value" for each line of a v8_prog report.
field() { sed -n "s/.*shape=\([^ ]*\).* $2=\([^ ]*\).*/\1 \2/p" "$1"; }
summary() { grep '^convcache-preload: v8: ' "$T/$1.err"; }

# ---- a sanitized program, the interposer as shipped ------------------------
PRE=$B/libconvcache_preload.so
if run shipped shipped -- "$Z/v8_hosts" learn "$T/shipped.txt" && run shipped-2 shipped -- "$Z/v8_hosts" learn "$T/shipped-2.txt" &&
    summary shipped-2 | grep -q 'hits 1,'; then
    ok "a program built with -fsanitize=$2 starts under the interposer as shipped, and is served"
else
    bad "the shipped interposer under a sanitized program: $(summary shipped-2)"
fi
PRE=$Z/libconvcache_preload.so

# ---- v8_prog, 8 threads: cold, warm, stored plans that fail -------------------
# (The builder waits for the leading thread however slow the sanitizer makes it: the
# idle bound is stall-threads' to test.)
if run cold prog CONVCACHE_BUILD_IDLE_MS=60000 -- "$Z/v8_prog" --threads 8 "$T/cold.txt"; then
    twice=$(field "$T/cold.txt" timed | awk '$2 > 1 {n[$1]++} END {for (s in n) if (n[s] > 1) print s}')
    if [ -n "$twice" ] || [ "$(wc -l <"$T/cold.txt")" -ne 40 ] || ! summary cold | grep -q 'stored 5,'; then
        bad "cold: shapes benchmarked by more than one thread ($twice), or not 5 stored: $(summary cold)"
    else
        ok "cold, 8 threads: each shape benchmarked once between them, 5 choices stored ($(summary cold | sed 's/.*v8: //'))"
    fi
fi
if run warm prog -- "$Z/v8_prog" --threads 8 "$T/warm.txt"; then
    if field "$T/warm.txt" timed | awk '$2 != 1 {found = 1} END {exit !found}' ||
        ! summary warm | grep -q 'hits 40,.*builds deferred [1-9][0-9]*, timings refused [1-9]'; then
        bad "warm: not every thread served, or nothing deferred and refused: $(summary warm)"
    else
        ok "warm, 8 threads: all 40 graphs served, plans deferred and their timing refused"
    fi
fi
# Heuristics that fill fewer results than they count: read ahead as filled.
if run heur prog STANDIN_LIE=heur -- "$Z/v8_prog" --threads 8 "$T/heur.txt"; then
    if field "$T/heur.txt" timed | awk '$2 != 1 {found = 1} END {exit !found}'; then
        bad "heur: heuristics that fill fewer than they count: not every thread served: $(summary heur)"
    else
        ok "heuristics that fill fewer than they count, 8 threads: all 40 graphs served"
    fi
fi
cp "$T/prog.ccdb" "$T/fails.ccdb"
stored=$(field "$T/cold.txt" plan | awk '{print $2}' | sort -u | paste -sd, -)
if run fails fails "STANDIN_FAIL_EXECUTE=$stored" -- "$Z/v8_prog" --threads 8 "$T/fails.txt"; then
    if ! summary fails | grep -q 'stand-asides [1-9]' ||
        ! field "$T/fails.txt" timed | awk '$2 > 1 {found = 1} END {exit !found}'; then
        bad "fails: no thread stood aside and timed the deferred plans: $(summary fails)"
    else
        ok "stored plans that fail to run, 8 threads: they stand aside, the deferred plans made real and timed"
    fi
fi

# ---- v8_hosts ----------------------------------------------------------------------
if run learn known -- "$Z/v8_hosts" learn "$T/learn.txt"; then
    for case in keepall deferred ddestroy; do
        cp "$T/known.ccdb" "$T/$case.ccdb"
        run "$case" "$case" CONVCACHE_PRELOAD_LOG=1 -- "$Z/v8_hosts" "$case" "$T/$case.txt" || continue
        if grep -q 'v8 served' "$T/$case.err"; then ok "$case: served"; else bad "$case: not served"; fi
    done
    grep -q '^looked=0$' "$T/keepall.txt" || bad "keepall: the chosen plan is still looked at"
    # A host that asks heuristics for 3 results (the stored one not among them).
    cp "$T/known.ccdb" "$T/fewer.ccdb"
    run fewer fewer V8_HOSTS_TAKE=3 -- "$Z/v8_hosts" fewer "$T/fewer.txt" &&
        ok "fewer: a host that asks heuristics for 3 results completes"
    # Leaves (v8_leaf.c): another alignment kept, an attribute not keyed.
    cp "$T/known.ccdb" "$T/leaves.ccdb"
    run align leaves V8_HOSTS_ALIGN=8 -- "$Z/v8_hosts" learn "$T/align.txt" &&
        run extra leaves V8_HOSTS_LEAF_EXTRA=1 -- "$Z/v8_hosts" learn "$T/extra.txt" &&
        ok "leaves: a graph of 8-byte aligned tensors, and one of a tensor with an attribute not keyed, complete"
fi
mkdir "$T/stall"
if run stall stall CONVCACHE_BUILD_TIMEOUT_MS=300000 -- "$Z/v8_hosts" --dir "$T/stall" stall-threads "$T/stall.txt"; then
    if grep -q '^follower_done_first=yes' "$T/stall.txt"; then
        ok "stall-threads: a leader that builds and does not run lets the follower go"
    else
        bad "stall-threads: the follower was held"
    fi
fi

# ---- v8_stress, v8_fork ---------------------------------------------------------------
# (Executes that take no time: the threads meet in the interposer.)
for mode in materialize churn shared; do
    cp "$T/known.ccdb" "$T/$mode.ccdb"
    run "$mode" "$mode" STANDIN_EXEC_US=0 -- "$Z/v8_stress" "$mode" && ok "$(cat "$T/$mode.out")"
done
cp "$T/known.ccdb" "$T/fork.ccdb"
run fork fork -- "$Z/v8_fork" && ok "$(cat "$T/fork.out")"

[ "$fails" -eq 0 ] || { echo "preload-$TAG: $fails failed" >&2; exit 1; }
echo "preload-$TAG: all passed, no sanitizer report"
