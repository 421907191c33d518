#!/bin/sh
# make v8fe-test: tests/v8fe/torch_like, PyTorch's default convolution path
# on the REAL cudnn_frontend 1.32, against the stand-in cuDNN and CUDA
# runtime (tests/preload), WITHOUT an interposer: every run is a cold
# process, so every run builds and times every shape again.
#
# Each run NAME writes torch_like's report ($tmp/NAME.prog: one line per
# shape and thread) and the stand-in's (STANDIN_REPORT, $tmp/NAME.standin:
# one line per shape); the checks join them on the shape's name:
#   counts    the stand-in built exactly what the frontend says it built
#             (cudnnGetPlan's predicate calls, and --rebuild's), summed over
#             threads; each thread timed min(limit, candidates) plans, at
#             least as many as time_sorted_plan returned (of plans timed
#             alike it returns one); the executes are each timed plan's
#             warm-up and run, then one per iteration (try_plans' first
#             plan, then the hits) and one per rebuild; the chosen plan was
#             timed
#   engines   no plan of the engines a filter or a fault removes was timed
#             (the stand-in's notes: tests/preload/standin_engines.c)
#   built     fewer plans built than the default run, or as many
#   outputs   across all runs, one output per shape and plan, and one plan
#             per output: outputs depend on the plan
# Runs that PyTorch would fail fail with its message.
#
# usage: run.sh BUILD
set -eu
build=$(cd "$1" && pwd)
prog=$build/tests/v8fe/torch_like
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM
# Only the settings each run names.
for v in $(env | sed -n 's/^\(STANDIN_[A-Z_0-9]*\)=.*/\1/p'); do unset "$v"; done
export STANDIN_EXEC_US=200 # each execute 100-300 us: timing has a winner to find

fail() {
    echo "v8fe: FAIL: $*" >&2
    exit 1
}

# run NAME [VAR=VALUE...] -- [torch_like arguments]
run() {
    name=$1
    shift
    envs=
    while [ "$1" != "--" ]; do envs="$envs $1"; shift; done
    shift
    # shellcheck disable=SC2086 # envs: VAR=VALUE words
    if ! env $envs STANDIN_REPORT="$tmp/$name.standin" "$prog" --report "$tmp/$name.prog" "$@" \
        > "$tmp/$name.out" 2>&1; then
        cat "$tmp/$name.out" >&2
        fail "$name: torch_like$envs $* failed"
    fi
}

# run_fails NAME MESSAGE [VAR=VALUE...] -- [arguments]: exit 1 with MESSAGE.
run_fails() {
    name=$1 message=$2
    shift 2
    envs=
    while [ "$1" != "--" ]; do envs="$envs $1"; shift; done
    shift
    rc=0
    # shellcheck disable=SC2086
    env $envs "$prog" "$@" > "$tmp/$name.out" 2>&1 || rc=$?
    [ "$rc" = 1 ] && grep -q "$message" "$tmp/$name.out" || {
        cat "$tmp/$name.out" >&2
        fail "$name: want exit 1 with \"$message\", got exit $rc"
    }
    echo "ok   $name: exit 1, $(head -1 "$tmp/$name.out")"
}

# What every check's awk shares: kv splits a report line into a[NAME] =
# VALUE; engine is a tag's engine ("eng5_k14:4": 5).
AWK_LIB='
function kv(line, a,    f, n, i, p) {
    split("", a)
    n = split(line, f, " ")
    for (i = 1; i <= n; i++) { p = index(f[i], "="); a[substr(f[i], 1, p - 1)] = substr(f[i], p + 1) }
}
function engine(tag) { sub(/^eng/, "", tag); sub(/_.*/, "", tag); return tag + 0 }
function bad(why) { print "v8fe: " run ": " why > "/dev/stderr"; err = 1 }
'

# counts NAME LIMIT ITERATIONS EXACT: the program's report against the
# stand-in's. EXACT 0 (execute faults, substitution): warm-ups may fail, so
# the plans timed, the executes and "the chosen plan was timed" are not
# checked exactly.
counts() {
    awk -v run="$1" -v lim="$2" -v iter="$3" -v exact="$4" "$AWK_LIB"'
    FNR == NR {
        kv($0, p); s = p["shape"]
        built[s] += p["built"] + p["rebuilt"]; sorted[s] += p["sorted"]; threads[s]++; rebuilt[s] += p["rebuilt"]
        chosen[s] = chosen[s] " " p["plan"]
        want = (lim == 0 || p["candidates"] + 0 < lim + 0) ? p["candidates"] : lim
        timed[s] += want
        if (p["sorted"] + 0 > want + 0) bad(s " thread " p["thread"] ": " p["sorted"] " plans sorted, more than min(" lim ", " p["candidates"] ")")
        if (p["candidates"] + 0 > p["built"] + 0) bad(s ": more candidates than plans built")
        next
    }
    {
        kv($0, q); s = q["shape"]; seen[s] = 1
        if (!(s in threads)) { bad(s ": the stand-in saw a shape torch_like did not run"); next }
        if (q["built"] != built[s]) bad(s ": the stand-in built " q["built"] ", the frontend " built[s])
        if (exact && q["timed"] != timed[s]) bad(s ": the stand-in timed " q["timed"] ", want min(limit, candidates) " timed[s])
        if (q["timed"] + 0 < sorted[s]) bad(s ": the stand-in timed " q["timed"] ", the frontend sorted " sorted[s])
        want = 2 * q["timed"] + threads[s] * iter + rebuilt[s]
        if (exact && q["executes"] != want) bad(s ": " q["executes"] " executes, want " want)
        if (exact && q["exec_failed"] != 0) bad(s ": " q["exec_failed"] " executes failed")
        n = split(chosen[s], c, " ")
        for (i = 1; exact && i <= n; i++)
            if (index("," q["timed_plans"] ",", "," c[i] ",") == 0) bad(s ": chose " c[i] ", not timed")
        total_built += q["built"]; total_timed += q["timed"]; ties += q["timed"] - sorted[s]
    }
    END {
        for (s in threads) if (!(s in seen)) bad(s ": not in the stand-in report")
        if (!err) printf "ok   %s: %d plans built, %d timed (%d tied, left out by time_sorted_plan); the stand-in counted what the frontend did\n", run, total_built, total_timed, ties
        exit err
    }' "$tmp/$1.prog" "$tmp/$1.standin" || fail "$1: counts"
}

# no_engines NAME "E..." [SHAPE-REGEX]: no plan of these engines was timed
# (in the shapes matching the regex).
no_engines() {
    awk -v run="$1" -v engines=" $2 " -v only="${3:-.}" "$AWK_LIB"'
    {
        kv($0, q)
        if (q["shape"] !~ only) next
        n = split(q["timed_plans"], t, ",")
        for (i = 1; i <= n; i++)
            if (t[i] != "-" && index(engines, " " engine(t[i]) " ")) bad(q["shape"] ": timed " t[i])
        shapes++
    }
    END { if (!shapes) bad("no shape matches " only); exit err }' "$tmp/$1.standin" || fail "$1: engines"
    echo "ok   $1: no plan of engines $2 timed${3:+ (shapes $3)}"
}

# built A B REL [SHAPE-REGEX] [FACTOR]: per shape, run B built REL (lt, eq)
# FACTOR times what run A built.
built() {
    awk -v run="$2" -v rel="$3" -v only="${4:-.}" -v k="${5:-1}" "$AWK_LIB"'
    FNR == NR { kv($0, q); a[q["shape"]] = q["built"]; next }
    {
        kv($0, q); s = q["shape"]
        if (s !~ only) next
        if (rel == "lt" && !(q["built"] + 0 < k * a[s])) bad(s ": built " q["built"] ", not fewer than " k * a[s])
        if (rel == "eq" && q["built"] != k * a[s]) bad(s ": built " q["built"] ", not " k * a[s])
        shapes++
    }
    END { if (!shapes) bad("no shape matches " only); exit err }' "$tmp/$1.standin" "$tmp/$2.standin" ||
        fail "$2: built"
    echo "ok   $2: built $3 ${5:+$5 x }$1's${4:+ (shapes $4)}"
}

# field NAME KEY REL VALUE: every stand-in line has KEY REL (le, gt0) VALUE.
field() {
    awk -v run="$1" -v key="$2" -v rel="$3" -v v="$4" "$AWK_LIB"'
    {
        kv($0, q)
        if (rel == "le" && !(q[key] + 0 <= v + 0)) bad(q["shape"] ": " key "=" q[key] " > " v)
        if (rel == "gt0") total += q[key]
    }
    END { if (rel == "gt0" && !(total > 0)) bad(key " is 0 on every shape"); exit err }' "$tmp/$1.standin" ||
        fail "$1: $2"
    echo "ok   $1: $2 $3${4:+ $4}"
}

echo "== v8fe: PyTorch's v8 path on the real cudnn_frontend, cold runs, no interposer"
shapes=$("$prog" --report "$tmp/list.prog" --iterations 1 > /dev/null && wc -l < "$tmp/list.prog")
[ "$shapes" -ge 12 ] || fail "the built-in list has $shapes shapes"

run default -- --iterations 3
counts default 10 3 1
no_engines default "3" # DOWN_CONVERT_INPUTS: always filtered

run deterministic -- --deterministic
counts deterministic 10 2 1
no_engines deterministic "2 3 5"
built default deterministic lt

run no-tf32 -- --no-tf32
counts no-tf32 10 2 1
no_engines no-tf32 "1 3" ":f32:"
built default no-tf32 lt ":f32:"
built default no-tf32 eq ":f16:"

# 64 KiB leaves out engine 2 (split-K: 16 x) and the larger knob values.
run workspace -- --workspace-limit 65536
counts workspace 10 2 1
field workspace timed_ws_max le 65536
awk "$AWK_LIB"'{ kv($0, p); if (p["candidates"] + 0 < p["built"] + 0) less++ } END { exit !less }' \
    "$tmp/workspace.prog" || fail "workspace: the limit dropped no plan"

run limit3 -- --limit 3
counts limit3 3 2 1
run limit0 -- --limit 0
counts limit0 0 2 1
# Timing every plan times the fallback list's repeat of a heuristics
# config twice: fewer distinct tags than plans timed, somewhere.
awk "$AWK_LIB"'{ kv($0, q); if (split(q["timed_plans"], t, ",") < q["timed"] + 0) repeats++ }
     END { exit !repeats }' "$tmp/limit0.standin" || fail "limit0: no config was timed twice"
echo "ok   limit0: a config the fallback list repeats was built and timed twice"

run errata -- --errata eng0,eng4
counts errata 10 2 1
no_engines errata "0 3 4"

# The patch route's plan_from_choice (examples/pytorch/conv_v8_frontend.hpp)
# rebuilds each chosen plan: the same engine, knobs and output (torch_like
# checks; the rebuilds are in the counts).
run rebuild -- --rebuild
counts rebuild 10 2 1

run threads4 -- --threads 4
counts threads4 10 2 1
built default threads4 eq . 4

run fewer-engines STANDIN_ENGINE_COUNT=3 --
counts fewer-engines 10 2 1
no_engines fewer-engines "3 4 5"

# Engine 0 is not installed; heuristics no longer offer eng1_k2:0_k14:1 (the
# fallback list's engine 1). Every plan timed (--limit 0): what was built shows.
run vanished STANDIN_VANISH=eng0,eng1_k2:0_k14:1 -- --limit 0
counts vanished 0 2 1
no_engines vanished "0 3"
built default vanished lt
awk "$AWK_LIB"'{ kv($0, q); t = "," q["timed_plans"] ","; if (index(t, ",eng1_k2:0_k14:1,")) bad(q["shape"] ": eng1_k2:0_k14:1 timed")
                 if (index(t, ",eng1_")) other++ }
     END { if (!other) bad("no other config of engine 1 timed"); exit err }' run=vanished \
    "$tmp/vanished.standin" || fail "vanished: one config"
echo "ok   vanished: eng1_k2:0_k14:1 not offered, engine 1's other configs timed"

run substituted STANDIN_SUBSTITUTE=engine --
counts substituted 10 2 0

# Every plan timed (--limit 0): a config that was built shows.
run finalize-fails STANDIN_FAIL_FINALIZE=eng1,eng5_k14:2 -- --limit 0
counts finalize-fails 0 2 1
no_engines finalize-fails "1 3"
field finalize-fails build_failed gt0 ""
awk "$AWK_LIB"'{ kv($0, q); t = "," q["timed_plans"] ","; if (index(t, ",eng5_k14:2,")) bad(q["shape"] ": eng5_k14:2 timed")
                 if (index(t, ",eng5_")) other++ }
     END { if (!other) bad("no other config of engine 5 timed"); exit err }' run=finalize-fails \
    "$tmp/finalize-fails.standin" || fail "finalize-fails: one config"
echo "ok   finalize-fails: eng5_k14:2 never built, engine 5's other configs timed"

run execute-fails STANDIN_FAIL_EXECUTE=eng2,eng5 --
counts execute-fails 10 2 0
no_engines execute-fails "2 3 5"
field execute-fails exec_failed gt0 ""

run build-cost STANDIN_BUILD_US=300 --
counts build-cost 10 2 1

# Events that cannot tell executes apart (a 1 s resolution): every plan
# times 0 ms, and time_sorted_plan returns one of the ten it timed.
run ties STANDIN_EVENT_US=1000000 --
counts ties 10 2 1
awk "$AWK_LIB"'{ kv($0, p); if (p["sorted"] != 1) bad(p["shape"] ": " p["sorted"] " plans sorted") } END { exit err }' \
    run=ties "$tmp/ties.prog" || fail "ties: sorted"
echo "ok   ties: time_sorted_plan returned 1 plan of the 10 it timed, per shape"

# One output per shape and plan across every run (substitution runs another
# engine under the same tag: left out), and one plan per output.
awk "$AWK_LIB"'
    FILENAME ~ /substituted/ { next }
    {
        kv($0, p); k = p["shape"] " " p["plan"]; o = p["shape"] " " p["checksum"]
        if ((k in sum) && sum[k] != p["checksum"]) bad(k ": two outputs")
        if ((o in plan) && plan[o] != p["plan"]) bad(p["shape"] ": " plan[o] " and " p["plan"] " gave the same output")
        sum[k] = p["checksum"]; plan[o] = p["plan"]
        if (!(k in counted)) { counted[k] = 1; pairs++ }
    }
    END {
        if (!err) printf "ok   outputs: %d (shape, plan) pairs over all runs, one output each, all different\n", pairs
        exit err
    }
' run=outputs "$tmp"/*.prog || fail "outputs"

# Where PyTorch throws.
run_fails no-engine "FIND was unable to find an engine" STANDIN_ENGINE_COUNT=0 -- --shapes 1
run_fails all-finalize-fail "FIND was unable to find an engine" STANDIN_PLAN_STATUS=3000 -- --shapes 1
# dgrad fp32, deterministic, no TF32: engine 0 alone is left, and fails.
run_fails all-execute-fail "FIND was unable to find an engine" STANDIN_FAIL_EXECUTE=eng0 -- \
    --shapes 2 --deterministic --no-tf32
echo "v8fe: ok"
