#!/bin/sh
# The interposer's time by phase (cudnn/preload/v8_time.c), on the stand-in
# cuDNN: 4 processes of tests/preload/v8_prog started together on a fresh
# cache file (one benchmarks each graph, the others wait for it and are
# served), then a warm one, under `convcache run`.
#
# Each execute sleeps STANDIN_EXEC_US (20 ms; 100 ms in the warm run, which
# executes few plans) and each plan's finalize STANDIN_BUILD_US (2 ms), so
# cuDNN's work (and the waits for it) is about a second or more per process
# while the interposer's own is a millisecond or two: the 5% bound below
# holds on a loaded machine, and fails when a phase is not accounted for
# (its time then shows as "own").
#
# Checked, for each process (its exit summary, CONVCACHE_VERBOSE=1):
#   1. the phases add up to the time spent in the interposer's calls
#      within 5% (own <= 5% of calls), and to no more than it;
#   2. the phases the run must have are there: heuristics, plan finalizes
#      and executes in every process; setup and cache calls; a lease wait
#      in the processes that waited; the stored plan finalized in the warm
#      run, with no wait;
#   3. each graph's log line (CONVCACHE_PRELOAD_LOG=1) adds up the same way,
#      and all of them together to no more than the process's calls; summed
#      over graphs, the phases that happen only inside a graph's benchmark
#      agree with the summary's within 5% (the same intervals, counted two
#      ways).
# usage: v8_time.sh BUILD
set -u
B=$(cd "$1" && pwd)
S=$B/tests/preload
T=$(mktemp -d "${TMPDIR:-/tmp}/convcache-v8time.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT INT TERM
unset CONVCACHE_SCOPE CONVCACHE_TAG CONVCACHE_MODE CONVCACHE_DISABLE CONVCACHE_CUDA_LIBRARY \
    CONVCACHE_CUDNN_LIBRARY CONVCACHE_SYSTEM_PATH CONVCACHE_REMOTE STANDIN_ENGINE_COUNT STANDIN_SUBSTITUTE \
    STANDIN_PLAN_STATUS STANDIN_LIE
export STANDIN_EXEC_US=${STANDIN_EXEC_US:-20000} STANDIN_BUILD_US=${STANDIN_BUILD_US:-2000}
export CONVCACHE_PATH="$T/time.ccdb" CONVCACHE_VERBOSE=1 CONVCACHE_PRELOAD_LOG=1
fails=0
ok() { echo "ok   v8_time: $*"; }
bad() { echo "FAIL v8_time: $*" >&2; fails=$((fails + 1)); }

run() { timeout 300 "$B/convcache" run -- "$S/v8_prog" "$T/$1.txt" >"$T/$1.out" 2>"$T/$1.err"; }
for i in 1 2 3 4; do run "p$i" & done
wait
# The warm run executes a few plans only: 100 ms each keeps it near a second.
STANDIN_EXEC_US=100000 run warm || bad "the warm run failed: $(tail -3 "$T/warm.err")"

# phases FILE: the summary's "name value" pairs, one a line.
phases() {
    sed -n 's/^convcache-preload: v8 time ms: //p' "$1" | tr ' ' '\n' | tr '=' ' '
}
# check NAME FILE: rule 1 on the summary, then rule 3 on the graphs' lines.
check() {
    if ! grep -q '^convcache-preload: v8 time ms: ' "$2"; then
        bad "$1: no time by phase in the exit summary: $(grep convcache-preload: "$2" | tail -3)"
        return
    fi
    v=$(phases "$2" | awk '$1 == "calls" {c = $2} $1 != "calls" && $1 != "own" && $1 != "helper_cache" {s += $2}
        $1 == "own" {o = $2}
        END {printf "%s %s %s %d", c, s, o, (c > 0 && s <= c + 0.01 && s >= 0.95 * c && o <= 0.05 * c + 0.01)}')
    set -- "$1" "$2" $v
    if [ "$6" = 1 ]; then
        ok "$1: the phases add up to $4 ms of the $3 ms in the interposer's calls (own $5 ms)"
    else
        bad "$1: the phases add up to $4 ms of the $3 ms in the interposer's calls (own $5 ms): $(phases "$2" | tr '\n' ' ')"
    fi
    g=$(sed -n 's/^convcache-preload: v8 time ms calls=\([^ ]*\) own=\([^ ]*\) \(.*\) key .*/\1 \2 \3/p' "$2" |
        awk -v total="$3" '{c = $1; s = 0; for (i = 3; i <= NF; i++) {split($i, kv, "="); s += kv[2]}
             n++; all += c; if (s > c + 0.01 || s < 0.95 * c) badg++}
             END {printf "%d %d %d", n, badg, (all <= total + 0.01)}')
    set -- "$1" "$2" $g
    if [ "$3" -ge 1 ] && [ "$4" = 0 ] && [ "$5" = 1 ]; then
        ok "$1: $3 graphs' log lines add up the same way"
    else
        bad "$1: graphs' lines: $3 logged, $4 that do not add up, within the process's calls: $5"
    fi
    # The same intervals summed two ways: per graph (as each call ends) and
    # in all (as each interval ends). The phases that happen only inside a
    # graph's benchmark must agree within 5%.
    d=$( { phases "$2" | sed 's/^/total /'
           sed -n 's/^convcache-preload: v8 time ms \(.*\) key .*/\1/p' "$2" | tr ' ' '\n' | tr '=' ' ' |
               sed 's/^/graph /'; } |
        awk '$1 == "total" {t[$2] = $3} $1 == "graph" {g[$2] += $3}
             END {n = split("heur fin_stored fin_other exec_warmup exec_timing lease_wait", k, " ")
                  for (i = 1; i <= n; i++) { d = g[k[i]] - t[k[i]]; if (d < 0) d = -d
                      if (d > 0.05 * t[k[i]] + 0.05) printf " %s: graphs %.3f, total %.3f;", k[i], g[k[i]], t[k[i]] } }')
    if [ -z "$d" ]; then
        ok "$1: the graphs' lines and the summary agree, phase by phase"
    else
        bad "$1: the graphs' lines and the summary disagree:$d"
    fi
}
# has FILE NAME...: each named phase above 0 in FILE's summary.
has() {
    f=$1
    shift
    for p in "$@"; do
        phases "$f" | awk -v p="$p" '$1 == p && $2 > 0 {found = 1} END {exit !found}' || { echo "$p"; return; }
    done
}

for i in 1 2 3 4; do check "process $i of 4" "$T/p$i.err"; done
check "warm" "$T/warm.err"

missing=
for i in 1 2 3 4; do
    m=$(has "$T/p$i.err" heur exec_warmup setup cache desc)
    [ -n "$m" ] && missing="$missing p$i:$m"
done
waited=0
for i in 1 2 3 4; do [ -z "$(has "$T/p$i.err" lease_wait fin_stored)" ] && waited=$((waited + 1)); done
led=0
# a leader finalizes the plans it times in cuDNN (STANDIN_BUILD_US each);
# a process served defers them (v8_plans.c)
for i in 1 2 3 4; do
    phases "$T/p$i.err" | awk '$1 == "fin_other" && $2 > 20 {f = 1} END {exit !f}' && led=$((led + 1))
done
m=$(has "$T/warm.err" fin_stored exec_warmup heur_ours)
[ -n "$m" ] && missing="$missing warm:$m"
warm_wait=$(phases "$T/warm.err" | awk '$1 == "lease_wait" {print $2}')
if [ -z "$missing" ] && [ "$waited" -ge 1 ] && [ "$led" -ge 1 ] && [ "$warm_wait" = 0.000 ]; then
    ok "every process counts heuristics, executes, setup and cache calls; $led benchmarked (other plans built and timed), $waited waited and were served; the warm run read heuristics ahead (heur_ours), finalized its stored plans and never waited"
else
    bad "phases missing:$missing; processes that benchmarked $led, that waited and were served $waited; warm run's lease wait ${warm_wait:-none}"
fi

[ "$fails" -eq 0 ] || { echo "v8_time: $fails failed" >&2; exit 1; }
echo "v8_time: all passed"
