#!/bin/sh
# The interposer on cuDNN's backend (v8) API, under `convcache run`, against
# the stand-in cuDNN: a program that benchmarks as PyTorch's default path
# does, run twice and more, with every change run 2 may bring.
#
#   sh tests/preload/v8_run.sh BUILD NAME REPORT-FLAG PROGRAM [ARGS...]
#
# PROGRAM writes a report (the argument after REPORT-FLAG, or its last
# argument when REPORT-FLAG is -) with one line per thread and
# shape: "... shape=S ... timed=T plan=P sum=X ws=W ..." (checksum= and
# workspace= are read as sum= and ws=), and exits non-zero when a shape ends
# with no plan that runs (as PyTorch raises). The plans built and timed per
# shape are the stand-in cuDNN's own counts (STANDIN_REPORT), where it
# keeps them, else the program's. Checked:
#   1. run 2 (a new process) times at most one plan per shape, the plan run
#      1 chose, with identical outputs; so does it when cuDNN's heuristics
#      fill fewer results than their count query answers (STANDIN_LIE=heur);
#   2. each change to run 2 (an engine gone, another engine substituted, a
#      workspace limit the stored plan exceeds, a failing finalize or
#      execute of the stored choice, and the filters the program has,
#      named in V8_FILTERS, such as --deterministic and --no-tf32)
#      completes, every shape with a plan whose output is that plan's; a
#      run 3 under the same change is served again (one plan timed), a
#      cuDNN whose plans run other knobs than their configs too (what the
#      plan ran is stored beside the choice), and run 4 without that
#      substitution stands aside, then is served;
#   3. 4 processes started together on a fresh file (also with such
#      heuristics), and 4 threads in one process, benchmark each shape once
#      between them;
#   4. strict mode: a known shape builds and times only its stored plan; a
#      new one is refused, with no plan timed;
#   5. ro stores nothing, recache benchmarks again, off serves nothing.
# Every (shape, plan) pair must give the same output in every run.
set -u
B=$(cd "$1" && pwd)
NAME=$2
RFLAG=$3
[ "$RFLAG" = - ] && RFLAG=
shift 3
S=$B/tests/preload
T=$(mktemp -d "${TMPDIR:-/tmp}/convcache-v8.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT INT TERM

unset CONVCACHE_SCOPE CONVCACHE_TAG CONVCACHE_MODE CONVCACHE_DISABLE CONVCACHE_PRELOAD_LOG \
    CONVCACHE_CUDA_LIBRARY CONVCACHE_CUDNN_LIBRARY CONVCACHE_SYSTEM_PATH CONVCACHE_REMOTE \
    CONVCACHE_VERBOSE STANDIN_ENGINE_COUNT STANDIN_SUBSTITUTE STANDIN_PLAN_STATUS STANDIN_LIE
# Each (engine, knobs, shape) runs for its own time, so timing picks a winner.
export STANDIN_EXEC_US=${STANDIN_EXEC_US:-300}
fails=0
ok() { echo "ok   $NAME: $*"; }
bad() { echo "FAIL $NAME: $*" >&2; fails=$((fails + 1)); }

# run OUT [VAR=VALUE...] [-- PROGRAM-ARGS...]: PROGRAM under convcache run,
# report in $T/OUT.txt, its stderr in $T/OUT.err; returns its status.
run() {
    out=$1
    shift
    vars=""
    while [ $# -gt 0 ] && [ "$1" != -- ]; do vars="$vars $1"; shift; done
    [ $# -gt 0 ] && shift
    # shellcheck disable=SC2086 # VAR=VALUE words
    env $vars CONVCACHE_VERBOSE=1 STANDIN_REPORT="$T/$out.standin" timeout 120 "$B/convcache" run -- \
        $PROG "$@" $RFLAG "$T/$out.txt" >"$T/$out.out" 2>"$T/$out.err"
}
# field FILE NAME: "shape value" for each line of a report (a program
# that reports sorted=, the plans its timing returned, has that as timed=).
field() {
    sed 's/ checksum=/ sum=/; s/ workspace=/ ws=/; s/ sorted=/ timed=/' "$1" |
        sed -n "s/.*shape=\([^ ]*\).* $2=\([^ ]*\).*/\1 \2/p"
}
# timed REPORT: "shape plans-timed", the stand-in's count where it kept one
# (REPORT's .standin: one process, all its threads), else the program's.
timed() {
    f=${1%.txt}.standin
    if [ -s "$f" ]; then field "$f" timed; else field "$1" timed; fi
}
# served FILE: every shape timed at most one plan.
served() { [ -s "$1" ] && ! timed "$1" | awk '$2 > 1 {found = 1} END {exit !found}'; }
# same_plans A B: every shape of B chose what A chose, with the same output.
same_plans() {
    field "$1" plan | sort -u >"$T/a.plan"; field "$2" plan | sort -u >"$T/b.plan"
    field "$1" sum | sort -u >"$T/a.sum"; field "$2" sum | sort -u >"$T/b.sum"
    cmp -s "$T/a.plan" "$T/b.plan" && cmp -s "$T/a.sum" "$T/b.sum"
}
# Every report is added to $T/all: one output per (shape, plan), ever.
# note NAME: adds the run's "shape plan sum" triples, each from one line
# (a report may hold several plans for a shape: threads, a forked child).
note() {
    sed 's/ checksum=/ sum=/' "$T/$1.txt" |
        sed -n 's/.*shape=\([^ ]*\).* plan=\([^ ]*\).* sum=\([^ ]*\).*/\1 \2 \3/p' >>"$T/all"
}
fresh() { export CONVCACHE_PATH="$T/$1.ccdb"; }
# counts REPORT: "built/timed" per shape, numbered in the report's order,
# from the stand-in's own counts when it wrote them (REPORT's .standin).
counts() {
    f=${1%.txt}.standin
    [ -s "$f" ] || f=$1
    awk '{b = t = "?"; for (i = 1; i <= NF; i++) {if ($i ~ /^built=/) b = substr($i, 7);
          if ($i ~ /^timed=/) t = substr($i, 7)} printf "%d:%s/%s ", NR - 1, b, t}' "$f"
}
# most_built REPORT: the most plans built for one shape (the stand-in's count).
most_built() {
    f=${1%.txt}.standin
    [ -s "$f" ] || f=$1
    awk '{for (i = 1; i <= NF; i++) if ($i ~ /^built=/ && substr($i, 7) + 0 > m) m = substr($i, 7) + 0} END {print m + 0}' "$f"
}

PROG="$*"
: >"$T/all"

# ---- 1. Run 2 times one plan per shape, the same plan, the same output.
fresh base
run r1 && note r1 || bad "run 1 failed: $(cat "$T/r1.err")"
run r2 && note r2 || bad "run 2 failed: $(cat "$T/r2.err")"
if served "$T/r2.txt" && same_plans "$T/r1.txt" "$T/r2.txt"; then
    ok "run 2 times one plan per shape, run 1's, same outputs (shape:built/timed run 1 $(counts "$T/r1.txt")| run 2 $(counts "$T/r2.txt"))"
else
    bad "run 2 is not run 1's choices served: run 1 $(counts "$T/r1.txt"); run 2 $(counts "$T/r2.txt")"
fi
grep -q 'convcache-preload: v8: graphs [1-9].*hits [1-9]' "$T/r2.err" ||
    bad "run 2's summary does not count v8 hits: $(grep v8: "$T/r2.err")"
cp "$CONVCACHE_PATH" "$T/known.ccdb"

# ---- 2. What run 2 may change. Each on a copy of run 1's file.
# change NAME [VAR=VALUE...] [-- ARGS...]: run 2 and run 3 under a change,
# each on a copy of run 1's file. Run 2 completes, every shape with a valid
# plan; run 3 is served (the host's new choice was stored beside the old or
# instead of it). NAME ending in "!": the outputs are not noted (a plan's
# tag is its config's, which is not what runs under substitution).
# $aside_want: "all" when every shape must have stood aside in run 2, "some"
# when at least one, "" when the change need not touch any. $why_want: the
# reason the interposer's log (CONVCACHE_PRELOAD_LOG=1) must give for a
# shape that stood aside.
change() {
    name=${1%!}
    noting=1
    [ "$name" = "$1" ] || noting=0
    shift
    cp "$T/known.ccdb" "$T/$name.ccdb"
    export CONVCACHE_PATH="$T/$name.ccdb"
    if ! run "$name" CONVCACHE_PRELOAD_LOG=1 "$@"; then bad "$name: the program failed: $(tail -3 "$T/$name.err")"; return; fi
    if [ -n "${why_want:-}" ] &&
        ! grep -q "^convcache-preload: v8 stood aside built [0-9]* timed [0-9]* refused [0-9]* ($why_want) key" "$T/$name.err"; then
        bad "$name: the log does not say why a shape stood aside ($why_want): $(grep 'stood aside built' "$T/$name.err" | head -2)"
    fi
    [ "$noting" = 0 ] || note "$name"
    aside=$(timed "$T/$name.txt" | awk '$2 > 1' | wc -l)
    all=$(timed "$T/$name.txt" | wc -l)
    case "$aside_want" in
    all) [ "$aside" = "$all" ] || bad "$name: only $aside of $all shapes stood aside" ;;
    some) [ "$aside" -gt 0 ] || bad "$name: no shape stood aside: the change touched nothing" ;;
    esac
    if ! run "$name-again" "$@"; then bad "$name: run 3 failed: $(tail -3 "$T/$name-again.err")"; return; fi
    [ "$noting" = 0 ] || note "$name-again"
    if served "$T/$name-again.txt"; then
        ok "$name: completes ($aside of $all shapes benchmarked; built/timed $(counts "$T/$name.txt")); run 3 is served ($(counts "$T/$name-again.txt"))"
    else
        bad "$name: run 3 is not served: $(counts "$T/$name-again.txt")"
    fi
}
stored=$(field "$T/r1.txt" plan | awk '{print $2}' | sort -u | paste -sd, -)
aside_want=some why_want="heuristics offered no stored choice" change vanished STANDIN_ENGINE_COUNT=3
aside_want=some why_want="the stored choice's plan runs another engine or knobs than stored" \
    change 'substituted!' STANDIN_SUBSTITUTE=knob
aside_want=all why_want="a stored choice failed to finalize" change finalize-fails STANDIN_FAIL_FINALIZE="$stored"
aside_want=all why_want="the stored choice's plan failed to run" change execute-fails STANDIN_FAIL_EXECUTE="$stored"
# A workspace limit just under the largest stored plan's: that shape's
# stored plan is built, then dropped by the program, as PyTorch's allocator
# limit drops it.
limit=$(field "$T/r1.txt" ws | awk '$2 > m {m = $2} END {print m - 1}')
if [ "$limit" -ge 0 ]; then
    aside_want=some why_want="a stored choice was offered; the host kept no plan of it" \
        change workspace -- --workspace-limit "$limit"
else
    bad "workspace: every stored plan needs no workspace; nothing to exclude"
fi
# The host's own filters (cuDNN cannot see them), where PROGRAM has them.
for f in ${V8_FILTERS:-}; do aside_want= why_want= change "filter${f#-}" -- "$f"; done

# ---- Ties: every plan times the same (coarse events). A timing loop that
# keeps its plans in a set ordered by time keeps one of them and destroys
# the others before the host chooses: the choice learnt is still the plan
# the host runs.
fresh ties
run ties1 STANDIN_EVENT_US=1000000 && note ties1 || bad "ties: run 1 failed: $(tail -3 "$T/ties1.err")"
run ties2 STANDIN_EVENT_US=1000000 && note ties2 || bad "ties: run 2 failed: $(tail -3 "$T/ties2.err")"
if served "$T/ties2.txt" && same_plans "$T/ties1.txt" "$T/ties2.txt"; then
    ok "ties: the plan the host ran is stored, and served ($(counts "$T/ties2.txt"))"
else
    bad "ties: run 2 is not run 1's choice served: run 1 $(counts "$T/ties1.txt"); run 2 $(counts "$T/ties2.txt")"
fi

# ---- Heuristics that fill fewer results than their count query answers
# (cudnn_frontend trims its list to what was filled). The interposer reads
# them ahead as they fill: run 2 is served, and 4 processes on a fresh file
# benchmark each shape once. (On an H100 with cuDNN 9.19, 21 of 204 graphs
# of ResNet-50 stood aside, the results "given in their own order", until
# the read ahead took what was filled.)
fresh heur
run heur1 STANDIN_LIE=heur && note heur1 || bad "heur: run 1 failed: $(tail -3 "$T/heur1.err")"
run heur2 STANDIN_LIE=heur CONVCACHE_PRELOAD_LOG=1 && note heur2 || bad "heur: run 2 failed: $(tail -3 "$T/heur2.err")"
if served "$T/heur2.txt" && same_plans "$T/heur1.txt" "$T/heur2.txt" && ! grep -q 'stood aside' "$T/heur2.err"; then
    ok "heur: heuristics that fill fewer than they count: run 2 is served ($(counts "$T/heur2.txt"))"
else
    bad "heur: run 2 is not run 1's choices served: run 1 $(counts "$T/heur1.txt"); run 2 $(counts "$T/heur2.txt"); $(grep -m2 'stood aside' "$T/heur2.err")"
fi

# ---- Plans that read otherwise than their configs, the same way in every
# run (some engines of cuDNN 9 on a GPU): a stored choice is found among
# heuristics results by its config, and served when its plan reads as the
# plan that ran when it was stored.
fresh reread
run reread1 STANDIN_SUBSTITUTE=knob CONVCACHE_PRELOAD_LOG=1 ||
    bad "reread: run 1 failed: $(tail -3 "$T/reread1.err")"
run reread2 STANDIN_SUBSTITUTE=knob || bad "reread: run 2 failed: $(tail -3 "$T/reread2.err")"
if ! grep -q '^convcache-preload: v8 note config and plan read differently: ' "$T/reread1.err"; then
    bad "reread: the log does not note plans that read otherwise than their configs"
elif served "$T/reread2.txt" && same_plans "$T/reread1.txt" "$T/reread2.txt"; then
    ok "reread: plans that read otherwise than their configs are served, run 1's, same outputs ($(counts "$T/reread2.txt"))"
else
    bad "reread: run 2 is not run 1's choices served: run 1 $(counts "$T/reread1.txt"); run 2 $(counts "$T/reread2.txt")"
fi
# The same file where plans read as their configs again: what the stored
# plans read as has changed, so each shape stands aside, and is served after.
run reread3 CONVCACHE_PRELOAD_LOG=1 || bad "reread: run 3 failed: $(tail -3 "$T/reread3.err")"
run reread4 || bad "reread: run 4 failed: $(tail -3 "$T/reread4.err")"
note reread3
note reread4
aside=$(timed "$T/reread3.txt" | awk '$2 > 1' | wc -l)
if [ "$aside" -eq 0 ] ||
    ! grep -q "stood aside built [0-9]* timed [0-9]* refused [0-9]* (the stored choice's plan runs another engine or knobs than stored)" "$T/reread3.err"; then
    bad "reread: plans that read otherwise than stored were served ($(counts "$T/reread3.txt"))"
elif served "$T/reread4.txt"; then
    ok "reread: then plans that read as their configs stand aside ($aside shapes), and are served after ($(counts "$T/reread4.txt"))"
else
    bad "reread: run 4 is not served: $(counts "$T/reread4.txt")"
fi

# ---- 3. Single flight: 4 processes together, and 4 threads.
# procs_once NAME [VAR=VALUE...]: 4 processes at once on a fresh file.
procs_once() {
    pn=$1
    shift
    fresh "$pn"
    for i in 1 2 3 4; do run "$pn$i" "$@" & done
    wait
    for i in 1 2 3 4; do note "$pn$i"; done
    for i in 1 2 3 4; do timed "$T/$pn$i.txt"; done >"$T/$pn.timed"
    # per shape: how many processes timed more than one plan
    multi=$(awk '$2 > 1 {n[$1]++} END {for (s in n) if (n[s] != 1) print s}' "$T/$pn.timed")
    timed_shapes=$(awk '$2 > 1' "$T/$pn.timed" | wc -l)
    shapes=$(timed "$T/r1.txt" | wc -l)
    if [ -z "$multi" ] && [ "$timed_shapes" -le "$shapes" ]; then
        ok "4 processes on a fresh file${1:+ ($*)} benchmark each shape once between them ($timed_shapes of $shapes shapes benchmarked once; the rest served)"
    else
        bad "4 processes${1:+ ($*)}: shapes benchmarked by more than one: $multi ($(tr '\n' ' ' <"$T/$pn.timed"))"
    fi
}
procs_once p
procs_once ph STANDIN_LIE=heur
fresh threads
run threads -- --threads 4 && note threads || bad "4 threads failed: $(tail -3 "$T/threads.err")"
twice=$(field "$T/threads.txt" timed | awk '$2 > 1 {n[$1]++} END {for (s in n) if (n[s] > 1) print s}')
[ -z "$twice" ] && [ -s "$T/threads.txt" ] &&
    ok "4 threads benchmark each shape once between them ($(counts "$T/threads.txt"))" ||
    bad "4 threads: shapes benchmarked more than once: $twice"

# ---- fork: a child forked after libconvcache was loaded (a DataLoader
# worker) passes every backend call straight to cuDNN, and completes.
if [ -z "${V8_NO_FORK:-}" ]; then
    cp "$T/known.ccdb" "$T/fork.ccdb"
    export CONVCACHE_PATH="$T/fork.ccdb"
    if run fork -- --fork && note fork; then
        grep 'thread=99 ' "$T/fork.txt" >"$T/child.txt" || true
        # The child's shapes: every one reported, none served (timed=1).
        if [ ! -s "$T/child.txt" ] || [ "$(wc -l <"$T/child.txt")" -ne "$(grep -vc 'thread=99 ' "$T/fork.txt")" ]; then
            bad "fork: the child reported $(wc -l <"$T/child.txt") shapes, the parent $(grep -vc 'thread=99 ' "$T/fork.txt")"
        elif grep -q ' timed=1 ' "$T/child.txt"; then
            bad "fork: the child was served from the cache ($(counts "$T/child.txt"))"
        else
            ok "fork: a child forked after the library loaded benchmarks as without convcache, and completes ($(counts "$T/child.txt"))"
        fi
    else
        bad "fork: $(tail -3 "$T/fork.err")"
    fi
fi

# ---- 4. Strict mode.
cp "$T/known.ccdb" "$T/strict.ccdb"
export CONVCACHE_PATH="$T/strict.ccdb"
if run strict CONVCACHE_MODE=strict && note strict && [ "$(most_built "$T/strict.txt")" -le 1 ] &&
    served "$T/strict.txt"; then
    ok "strict, known shapes: only the stored plan is built and timed ($(counts "$T/strict.txt"))"
else
    bad "strict, known shapes: $(counts "$T/strict.txt") $(tail -2 "$T/strict.err")"
fi
fresh strict-new
if run strict-new CONVCACHE_MODE=strict; then
    bad "strict, new shapes: the program succeeded: nothing was refused"
elif grep -q 'strict refusals [1-9]' "$T/strict-new.err" &&
    ! cat "$T/strict-new.txt" "$T/strict-new.standin" 2>/dev/null | grep -q 'timed=[1-9]'; then
    ok "strict, new shapes: every plan refused, none timed, the program fails as PyTorch raises"
else
    bad "strict, new shapes: $(grep 'v8:' "$T/strict-new.err")"
fi

# ---- 5. ro, recache, off.
fresh ro
run ro1 CONVCACHE_MODE=ro && run ro2 CONVCACHE_MODE=ro && note ro1 && note ro2
served "$T/ro2.txt" && bad "ro: run 2 was served: ro stored something" ||
    ok "ro stores nothing: run 2 benchmarks again ($(counts "$T/ro2.txt"))"
cp "$T/known.ccdb" "$T/recache.ccdb"
export CONVCACHE_PATH="$T/recache.ccdb"
run recache CONVCACHE_MODE=recache && note recache
served "$T/recache.txt" && bad "recache: served from the cache" ||
    ok "recache benchmarks known shapes again ($(counts "$T/recache.txt"))"
cp "$T/known.ccdb" "$T/off.ccdb"
export CONVCACHE_PATH="$T/off.ccdb"
run off CONVCACHE_MODE=off && note off
served "$T/off.txt" && bad "off: served from the cache" || ok "off serves nothing ($(counts "$T/off.txt"))"

# ---- Every (shape, plan) gave one output, in every run above.
conflicts=$(sort -u "$T/all" | awk '{k = $1 " " $2; n[k]++} END {for (k in n) if (n[k] > 1) print k}')
[ -z "$conflicts" ] && ok "every shape's output is its plan's, in every run ($(sort -u "$T/all" | wc -l) pairs)" ||
    bad "a (shape, plan) gave different outputs: $conflicts"

[ "$fails" = 0 ] || { echo "v8 ($NAME): $fails failed" >&2; exit 1; }
echo "v8 ($NAME): all passed"
