#!/bin/sh
# make v8fe-hosts-test: hosts of cuDNN's backend API beyond PyTorch's
# sequence (issue 28), on the REAL cudnn_frontend's v1 graph API
# (tests/v8fe/frontend_hosts, against the stand-in cuDNN and CUDA runtime),
# without an interposer and under `convcache run`.
#
#   autotune  build_plans(ALL), Graph::autotune, execute (plan index 0)
#   keep      build_plans(ALL), the host times every plan itself by
#             execute_plan_at_index, runs the fastest, then every plan
#             again (all kept alive), then the fastest again
#   keep3     keep, timing the first 3 plans only: the later runs are the
#             first executes of the others
#   ahead     every shape's graph built first, then each autotuned, then
#             each run
#
# Each mode runs without convcache (base), then twice under `convcache run`
# on one cache file (run 1 benchmarks, run 2 is a new process). Checks:
#   base      without convcache the program completes; every plan built
#             (the stand-in built as many plans as the frontend reports,
#             one per heuristics config), was timed (autotune times them
#             all; keep, those it tried), ran with one output; keep: every
#             plan ran again after the choice, with its own output
#   same      under convcache, run 1 and run 2 see what the base run saw:
#             the same build and plan statuses and workspaces per plan,
#             the same statuses of the chosen plan's runs and of every
#             later run, each (shape, plan) its one output. The one
#             difference allowed: a warm-up refused (NOT_SUPPORTED) while
#             a stored choice is timed (keep's own timing loop; autotune's
#             is inside the frontend: its status must still be "ok")
#   served    run 2 times one plan per shape (the stand-in's count)
#   choice    run 2 runs, per shape, the plan run 1's host chose, with the
#             same output: the interposer learnt the host's own choice
#   faults    keep under a fault in a plan that is not the stored choice,
#             on run 1's file: its finalize fails (STANDIN_FAIL_FINALIZE),
#             or its executes fail (STANDIN_FAIL_EXECUTE): every status
#             the host reads is the one it reads without convcache
#   two       two ahead hosts on a fresh file: B completes while A holds
#             every graph built and makes no progress (see below)
#   outputs   every (shape, plan) gives one output, in every run
#
# On commit 03fdf72's interposer (issue 28), these fail; the rest pass,
# and every check without convcache passes:
#   choice (autotune, keep, keep3, ahead)  a v1 graph destroys its plans
#           only with the graph, in index order: the interposer stores the
#           plan left last (autotune: the slowest), not the host's choice
#   keep3, run 2 (same)  plans first run after the host ran its choice are
#           refused (NOT_SUPPORTED): the window stays open while 2+ live
#   two ahead hosts: B  B waits in heuristics finalize for A's lease
#   fail-finalize  (a documented exception, checked as such) a deferred
#           finalize reports SUCCESS for a plan cuDNN cannot build; its
#           executes fail where the host, without convcache, never had it
#   served (any mode, now and then)  the choice recorded as the last graph
#           is destroyed, at exit, is at times not found by run 2
#
# usage: hosts_run.sh BUILD
set -u
B=$(cd "$1" && pwd)
PROG=$B/tests/v8fe/frontend_hosts
T=$(mktemp -d "${TMPDIR:-/tmp}/convcache-hosts.XXXXXX") || exit 1
# A host held in "two ahead hosts" is let go, and waited for, first.
trap 'touch "$T/hold.go" 2>/dev/null; wait; [ -n "${HOSTS_KEEP:-}" ] && cp -r "$T" "$HOSTS_KEEP"; rm -rf "$T"' EXIT INT TERM
for v in $(env | sed -n 's/^\(STANDIN_[A-Z_0-9]*\)=.*/\1/p'); do unset "$v"; done
unset CONVCACHE_SCOPE CONVCACHE_TAG CONVCACHE_MODE CONVCACHE_DISABLE CONVCACHE_PRELOAD_LOG \
    CONVCACHE_CUDA_LIBRARY CONVCACHE_CUDNN_LIBRARY CONVCACHE_SYSTEM_PATH CONVCACHE_REMOTE CONVCACHE_VERBOSE
# Each (engine, knobs, shape) runs for its own time: timing has a winner.
export STANDIN_EXEC_US=${STANDIN_EXEC_US:-300}
REFUSED=E11/CUDNN_STATUS_NOT_SUPPORTED
fails=0
ok() { echo "ok   hosts: $*"; }
bad() { echo "FAIL hosts: $*"; fails=$((fails + 1)); }

# plain NAME [VAR=VALUE...] -- ARGS: the program without an interposer.
# under NAME CACHE [VAR=VALUE...] -- ARGS: under `convcache run` on CACHE.
# Report $T/NAME.txt, the stand-in's $T/NAME.standin, stderr $T/NAME.err.
plain() {
    name=$1
    shift
    vars=
    while [ "$1" != -- ]; do vars="$vars $1"; shift; done
    shift
    # shellcheck disable=SC2086 # VAR=VALUE words
    env $vars STANDIN_REPORT="$T/$name.standin" timeout 120 "$PROG" "$@" --report "$T/$name.txt" \
        >"$T/$name.out" 2>"$T/$name.err"
}
under() {
    name=$1 cache=$2
    shift 2
    vars=
    while [ "$1" != -- ]; do vars="$vars $1"; shift; done
    shift
    # shellcheck disable=SC2086
    env $vars CONVCACHE_PATH="$cache" CONVCACHE_VERBOSE=1 CONVCACHE_PRELOAD_LOG=1 \
        STANDIN_REPORT="$T/$name.standin" timeout "${LIMIT:-120}" "$B/convcache" run -- "$PROG" "$@" \
        --report "$T/$name.txt" >"$T/$name.out" 2>"$T/$name.err"
}
why() { grep -v '^convcache' "$T/$1.err" | tail -2 | tr '\n' ' '; }

# AWK: kv splits a line into a[NAME] = VALUE.
AWK_LIB='function kv(line, a,    f, n, i, p) {
    split("", a); n = split(line, f, " ")
    for (i = 1; i <= n; i++) { p = index(f[i], "="); a[substr(f[i], 1, p - 1)] = substr(f[i], p + 1) }
}'

# strict NAME: what must be the same with and without convcache, one line
# each, sorted: build and plan lines (status, workspace), the chosen plan's
# and every later run's status (and a later run's plan and output), and
# autotune's status.
strict() {
    awk "$AWK_LIB"'{ kv($0, a); s = a["step"]
        if (s == "build") print a["shape"], s, a["idx"], a["status"]
        else if (s == "plan" || s == "later") print a["shape"], s, a["plan"], a["status"], a["sum"], a["ws"]
        else if (s == "chosen" || s == "again") print a["shape"], s, a["status"]
        else if (s == "tune" && a["plan"] == "-") print a["shape"], s, a["status"] }' "$T/$1.txt" | sort
}

# args CASE: the program's arguments for a case (keep3: keep, timing the
# first 3 plans only).
args() { if [ "$1" = keep3 ]; then echo --mode keep --limit 3; else echo --mode "$1"; fi; }
# mode CASE: its --mode.
mode() { args "$1" | awk '{print $2}'; }

# base CASE: the program without convcache, and what it must have done.
base() {
    m=$1
    # shellcheck disable=SC2046 # the arguments, split
    if ! plain "$m-base" -- $(args "$m"); then
        bad "$m, without convcache: the program failed: $(why "$m-base")"
        return 1
    fi
    awk -v mode="$(mode "$m")" "$AWK_LIB"'
    function no(why) { print "  " why > "/dev/stderr"; err = 1 }
    FNR == NR {
        kv($0, a); s = a["shape"]
        if (a["step"] == "build") { plans[s] = a["idx"]; if (a["status"] != "ok") no(s ": build " a["status"]) }
        if (a["step"] == "plan" && a["status"] != "ok") no(s ": plan " a["plan"] " " a["status"])
        if (a["step"] == "tune" && a["status"] != "ok") no(s ": tune " a["plan"] " " a["status"])
        if (a["step"] == "tune" && a["plan"] == "-" && a["idx"] != plans[s]) no(s ": autotune kept " a["idx"] " of " plans[s])
        if (a["step"] == "tune" && a["plan"] != "-") { tried[s]++; tsum[s, a["plan"]] = a["sum"] }
        if (a["step"] == "later") {
            later[s]++
            if (a["status"] != "ok" || a["sum"] !~ /^[0-9a-f]+$/ || ((s, a["plan"]) in tsum && a["sum"] != tsum[s, a["plan"]]))
                no(s ": later " a["plan"] " " a["status"] " " a["sum"])
        }
        if (a["step"] == "chosen") { chosen[s] = 1; if (a["status"] != "ok") no(s ": chosen " a["status"]) }
        next
    }
    {
        kv($0, q); s = q["shape"]; seen++
        if (!(s in plans)) { no(s ": the stand-in saw a shape the host did not build"); next }
        if (q["built"] != plans[s]) no(s ": the stand-in built " q["built"] ", the frontend " plans[s])
        want = mode == "keep" ? tried[s] : plans[s]
        if (q["timed"] != want) no(s ": the stand-in timed " q["timed"] ", want " want)
        if (mode == "keep" && later[s] != plans[s]) no(s ": " later[s] " later runs of " plans[s] " plans")
        if (!chosen[s]) no(s ": no chosen plan ran")
        built += q["built"]
    }
    END { if (seen < 12) no(seen " shapes in the stand-in report"); if (!err) print built; exit err }' \
        "$T/$m-base.txt" "$T/$m-base.standin" >"$T/$m-base.built" 2>"$T/$m-base.why"
    if [ -s "$T/$m-base.why" ]; then
        bad "$m, without convcache: $(head -3 "$T/$m-base.why" | tr '\n' ';')"
        return 1
    fi
    ok "$m, without convcache: completes; every plan built, timed and run as the frontend says ($(cat "$T/$m-base.built") plans built)"
}

# same NAME BASE: run NAME saw what BASE saw (strict), and each keep warm-up
# either as in BASE or refused; its refusals are counted in $T/NAME.refused.
same() { # RUN BASE [PLAN]: PLAN, a plan whose finalize fails, is left out (below)
    strict "$2" | awk -v p="${3:-}" '$3 != p' >"$T/$2.strict"
    strict "$1" | awk -v p="${3:-}" '$3 != p' >"$T/$1.strict"
    awk -v refused="$REFUSED" -v standin="$T/$1.standin" -v base="$T/$2.txt" "$AWK_LIB"'
    function no(why) { print "  " why > "/dev/stderr"; err = 1 }
    FILENAME == standin { kv($0, a); timed[a["shape"]] = a["timed"]; next }
    FILENAME == base { kv($0, a); if (a["step"] == "tune" && a["plan"] != "-") st[a["shape"], a["plan"]] = a["status"]; next }
    { kv($0, a); if (a["step"] != "tune" || a["plan"] == "-") next
      k = a["shape"] SUBSEP a["plan"]
      if (a["status"] == refused && st[k] != refused) {
          n++
          if (timed[a["shape"]] != 1) no(a["shape"] ": " a["plan"] " refused, and the host timed " timed[a["shape"]] " plans")
      } else if ((k in st) && a["status"] != st[k]) no(a["shape"] ": warm-up of " a["plan"] ": " a["status"] ", without convcache " st[k])
      else if (!(k in st) && a["status"] != "ok") no(a["shape"] ": warm-up of " a["plan"] ": " a["status"] ", not timed without convcache")
    }
    END { print n + 0; exit err }' "$T/$1.standin" "$T/$2.txt" "$T/$1.txt" >"$T/$1.refused" 2>"$T/$1.tunewhy"
    tune=$?
    if ! cmp -s "$T/$2.strict" "$T/$1.strict"; then
        diff "$T/$2.strict" "$T/$1.strict" | grep '^[<>]' | head -4 | sed 's/^/  /' >"$T/$1.diff"
        bad "$1: statuses differ from without convcache in $(diff "$T/$2.strict" "$T/$1.strict" | grep -c '^<') lines (shape step plan status sum workspace; < without, > with), e.g.: $(tr '\n' ';' <"$T/$1.diff")"
        return 1
    fi
    if [ "$tune" != 0 ]; then
        bad "$1: a warm-up's status differs from without convcache: $(head -2 "$T/$1.tunewhy" | tr '\n' ';')"
        return 1
    fi
    return 0
}

# timed NAME: "shape plans-timed" from the stand-in.
timed() { awk "$AWK_LIB"'{ kv($0, a); print a["shape"], a["timed"] }' "$T/$1.standin"; }
# chosen NAME: "shape plan sum" of the chosen plan.
chosen() { awk "$AWK_LIB"'{ kv($0, a); if (a["step"] == "chosen") print a["shape"], a["plan"], a["sum"] }' "$T/$1.txt" | sort; }

for m in autotune keep keep3 ahead; do
    echo "== $m: $(args "$m")"
    base "$m" || continue
    cache=$T/$m.ccdb
    for r in 1 2; do
        # shellcheck disable=SC2046
        if ! under "$m-r$r" "$cache" -- $(args "$m"); then
            bad "$m, run $r under convcache: the program failed: $(why "$m-r$r")"
            continue
        fi
        same "$m-r$r" "$m-base" &&
            ok "$m, run $r under convcache: every status and output as without convcache ($(cat "$T/$m-r$r.refused") warm-ups refused while a stored plan was timed)"
    done
    [ -s "$T/$m-r2.txt" ] || continue
    over=$(timed "$m-r2" | awk '$2 > 1' | wc -l)
    if [ "$over" = 0 ] && [ -s "$T/$m-r2.standin" ]; then
        ok "$m, run 2 is served: one plan timed per shape ($(timed "$m-r2" | wc -l) shapes)"
    else
        bad "$m, run 2 is not served: $over shapes timed more than one plan ($(sed -n 's/^convcache-preload: v8: //p' "$T/$m-r2.err")$(grep 'stood aside' "$T/$m-r2.err" | sed 's/.*stood aside built [0-9]* timed [0-9]* refused [0-9]* (\([^)]*\)).*/; \1/' | sort | uniq -c | tr -s ' \n' ' '))"
    fi
    chosen "$m-r1" >"$T/$m-r1.chosen"
    chosen "$m-r2" >"$T/$m-r2.chosen"
    if cmp -s "$T/$m-r1.chosen" "$T/$m-r2.chosen"; then
        ok "$m, run 2 runs run 1's choice, same outputs ($(wc -l <"$T/$m-r2.chosen") shapes)"
    else
        bad "$m, run 2 does not run run 1's choice: $(join "$T/$m-r1.chosen" "$T/$m-r2.chosen" | awk '$2 != $4 {n++; if (n == 1) ex = $1 ": chose " $2 ", served " $4} END {print n + 0 " shapes differ, e.g. " ex}')"
    fi
    if [ "$m" = autotune ]; then
        # Not a check: what Graph::autotune keeps when the others' warm-ups
        # are refused (they are dropped from the graph's plan list).
        awk "$AWK_LIB"'{ kv($0, a); if (a["step"] == "tune") { n++; k += a["idx"] } } END { if (n) printf "note hosts: autotune, run 2: the graphs keep %.1f plans each after Graph::autotune (the refused are dropped)\n", k / n }' "$T/$m-r2.txt"
    fi
done

# ---- Two hosts that build ahead, on a fresh file, each lease's build
# timeout 100 s: A builds every graph, then makes no progress (--hold); B,
# started once A has built, completes while A still holds, within 40 s (the
# issue: a lease holder without progress for about 2 s lets the others go
# on), with the statuses and outputs it gets without convcache; then A goes
# on, and completes likewise.
echo "== two ahead hosts"
if [ -s "$T/ahead-base.txt" ]; then
    CONVCACHE_BUILD_TIMEOUT_MS=100000 under lease-a "$T/lease.ccdb" -- --mode ahead --hold "$T/hold" &
    apid=$!
    i=0
    while [ ! -e "$T/hold.built" ] && [ $i -lt 600 ] && kill -0 $apid 2>/dev/null; do sleep 0.1; i=$((i + 1)); done
    if [ ! -e "$T/hold.built" ]; then
        bad "two ahead hosts: A did not build its graphs: $(why lease-a)"
    else
        LIMIT=40 CONVCACHE_BUILD_TIMEOUT_MS=100000 under lease-b "$T/lease.ccdb" -- --mode ahead
        brc=$?
        if [ "$brc" = 124 ]; then
            bad "two ahead hosts: B waited 40 s (killed) while A held its built plans and made no progress"
        elif [ "$brc" != 0 ]; then
            bad "two ahead hosts: B failed: $(why lease-b)"
        elif same lease-b ahead-base; then
            ok "two ahead hosts: B completes while A holds its built plans, every status as without convcache"
        fi
    fi
    touch "$T/hold.go"
    if ! wait $apid; then
        bad "two ahead hosts: A failed: $(why lease-a)"
    elif same lease-a ahead-base; then
        ok "two ahead hosts: A completes after B, every status as without convcache"
    fi
fi

# ---- faults: keep, on run 1's file, under a fault in a plan that is not
# the stored choice (run 2 served it): one config per fault, found in the
# plan lists and chosen in no shape.
echo "== faults"
if [ -s "$T/keep-r2.txt" ] && [ -s "$T/keep.ccdb" ]; then
    awk "$AWK_LIB"'{ kv($0, a); if (a["step"] == "chosen") c[a["plan"]] = 1; if (a["step"] == "plan") p[a["plan"]]++ }
        END { for (t in p) if (!(t in c) && t ~ /_k/) print p[t], t }' "$T/keep-r2.txt" | sort -k1,1nr -k2 | head -2 |
        awk '{print $2}' >"$T/others"
    for f in FINALIZE EXECUTE; do
        tag=$(if [ "$f" = FINALIZE ]; then sed -n 1p "$T/others"; else sed -n 2p "$T/others"; fi)
        if [ -z "$tag" ]; then bad "faults: no plan outside the stored choices to fail"; continue; fi
        fname=fail-$(echo "$f" | tr 'A-Z' 'a-z')
        plain "$fname-base" "STANDIN_FAIL_$f=$tag" -- --mode keep || true
        [ -s "$T/$fname-base.txt" ] || { bad "$fname: without convcache: no report: $(why "$fname-base")"; continue; }
        grep -q "plan=$tag status=E" "$T/$fname-base.txt" || grep -q "step=tune.*plan=$tag status=E" "$T/$fname-base.txt" ||
            { bad "$fname: the fault in $tag failed nothing without convcache"; continue; }
        cp "$T/keep.ccdb" "$T/$fname.ccdb"
        under "$fname" "$T/$fname.ccdb" "STANDIN_FAIL_$f=$tag" -- --mode keep || true
        [ -s "$T/$fname.txt" ] || { bad "$fname: under convcache: no report: $(why "$fname")"; continue; }
        if [ "$f" = EXECUTE ]; then
            same "$fname" "$fname-base" &&
                ok "$fname: $tag's ${f} fails: every status as without convcache ($(cat "$T/$fname.refused") warm-ups refused)"
        # The documented exception (docs/interposer.md, deferred plans): a
        # plan built while a stored choice serves is finalized in cuDNN only
        # when it is to run, so the host is told its finalize succeeded;
        # then every execute of it fails with cuDNN's finalize status, and
        # it never runs. Everything else is as without convcache.
        elif awk "$AWK_LIB"'{ kv($0, a); k = a["shape"] " " a["plan"] }
                FILENAME == ARGV[1] { if (a["step"] == "plan" && a["status"] != "ok") nb[k] = 1; next }
                (k in nb) && a["step"] != "plan" && a["status"] == "ok" { found = 1 }
                END { exit !found }' "$T/$fname-base.txt" "$T/$fname.txt"; then
            bad "$fname: $tag, where cuDNN cannot build it, ran under convcache"
        else
            same "$fname" "$fname-base" "$tag" &&
                ok "$fname: $tag's ${f} fails: it never runs; every other status as without convcache"
        fi
    done
else
    bad "faults: keep's run 2 did not complete: nothing to fault"
fi

# ---- One output per (shape, plan), in every run.
conflicts=$(cat "$T"/*.txt | awk "$AWK_LIB"'{ kv($0, a); if (a["sum"] != "-" && a["plan"] != "-") print a["shape"], a["plan"], a["sum"] }' |
    sort -u | awk '{k = $1 " " $2; n[k]++} END {for (k in n) if (n[k] > 1) print k}')
pairs=$(cat "$T"/*.txt | awk "$AWK_LIB"'{ kv($0, a); if (a["sum"] != "-" && a["plan"] != "-") print a["shape"], a["plan"] }' | sort -u | wc -l)
if [ -z "$conflicts" ] && [ "$pairs" -gt 0 ]; then
    ok "outputs: every (shape, plan) gave one output in every run ($pairs pairs)"
else
    bad "outputs: a (shape, plan) gave two outputs: $(echo "$conflicts" | head -2 | tr '\n' ';')"
fi

[ "$fails" = 0 ] || { echo "hosts: $fails failed"; exit 1; }
echo "hosts: all passed"
