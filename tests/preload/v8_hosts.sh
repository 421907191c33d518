#!/bin/sh
# Hosts of cuDNN's backend API beyond PyTorch's sequence, under `convcache
# run`, against the stand-in cuDNN (tests/preload/v8_hosts.c). The
# interposer's rule: every status the host reads is one cuDNN would have
# given it, but for NOT_SUPPORTED on a plan's first execute while the host
# times the stored one ("timing" lines).
#
#   sh tests/preload/v8_hosts.sh BUILD
#
# For each case: run 1 learns the graph (PyTorch's sequence), then the case
# runs once served from that file and once without the interposer, with
# the plans in the same order (--first), and the two transcripts must
# agree line by line. Then:
#   - keepall: once the host has chosen, the chosen plan's executes are no
#     longer looked at (looked=0);
#   - fewer: a host that asks heuristics for fewer results than they have
#     gets the same configs as without convcache, and is served when the
#     stored choice is among them;
#   - final-fails: the served choice failing after timing makes the next
#     process stand aside (logged with its reason) and benchmark in full,
#     and the one after it is served again;
#   - stall: a host that holds the lease of a new graph and builds without
#     running does not hold another process (or thread) on the same graph
#     for the build timeout (5 minutes here): the other benchmarks and
#     finishes first; then both choices are stored, and run 3 is served;
#   - fork: a child forked while threads wait inside the interposer
#     finishes, straight to cuDNN (tests/preload/v8_fork.c).
set -u
B=$(cd "$1" && pwd)
S=$B/tests/preload
P=$S/v8_hosts
T=$(mktemp -d "${TMPDIR:-/tmp}/convcache-hosts.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT INT TERM
unset CONVCACHE_SCOPE CONVCACHE_TAG CONVCACHE_MODE CONVCACHE_DISABLE CONVCACHE_PRELOAD_LOG \
    CONVCACHE_CUDA_LIBRARY CONVCACHE_CUDNN_LIBRARY CONVCACHE_SYSTEM_PATH CONVCACHE_REMOTE \
    CONVCACHE_VERBOSE CONVCACHE_BUILD_IDLE_MS STANDIN_ENGINE_COUNT STANDIN_SUBSTITUTE \
    STANDIN_PLAN_STATUS STANDIN_LIE STANDIN_FAIL_EXECUTE STANDIN_FAIL_FINALIZE
export STANDIN_EXEC_US=300
fails=0
ok() { echo "ok   v8_hosts: $*"; }
bad() { echo "FAIL v8_hosts: $*" >&2; fails=$((fails + 1)); }

# served NAME FILE CASE [ARGS...]: the case under convcache run on FILE;
# its report in $T/NAME.txt, the stand-in's counts in $T/NAME.standin.
served() {
    name=$1 file=$2
    shift 2
    env CONVCACHE_PATH="$T/$file.ccdb" CONVCACHE_PRELOAD_LOG=1 STANDIN_REPORT="$T/$name.standin" \
        timeout 120 "$B/convcache" run -- "$P" "$@" "$T/$name.txt" >"$T/$name.out" 2>"$T/$name.err"
}
# plain NAME CASE [ARGS...]: the same without the interposer.
plain() {
    name=$1
    shift
    STANDIN_REPORT="$T/$name.standin" timeout 120 "$P" "$@" "$T/$name.txt" >"$T/$name.out" 2>"$T/$name.err"
}
chosen() { sed -n 's/^chosen=\([^ ]*\) .*/\1/p' "$1"; }
# most_timed FILE: the most plans timed for a shape, by the stand-in's count.
most_timed() { sed -n 's/.* timed=\([0-9]*\).*/\1/p' "$1" | sort -n | tail -1; }

# agree A B: B (served) says what A (without) says, but for refused
# timing executes; prints the first difference.
agree() {
    awk 'NR == FNR {want[FNR] = $0; n = FNR; next}
        {
            if (FNR > n) { print "extra: " $0; exit 1 }
            if ($0 == want[FNR]) next
            split(want[FNR], w, " ")
            if ($1 ~ /^chosen=/ && $1 == w[1]) next # the plans it timed differ, by design
            if ($1 == "run" && $NF == "timing" && $3 == 3000 && w[1] == "run" && w[2] == $2) next
            print "line " FNR ": without convcache \"" want[FNR] "\", served \"" $0 "\""; exit 1
        }
        END { if (FNR < n) { print "missing lines after " FNR; exit 1 } }' "$1" "$2"
}

# ---- the cases, each against a file run 1 wrote --------------------------
if ! served learn-1 known learn || [ -z "$(chosen "$T/learn-1.txt")" ]; then
    bad "run 1 (PyTorch's sequence) did not complete"; cat "$T/learn-1.err" >&2
    exit 1
fi
tag=$(chosen "$T/learn-1.txt")
for case in deferred keep keepall ddestroy; do
    cp "$T/known.ccdb" "$T/$case.ccdb"
    if ! served "$case-cc" "$case" "$case" || ! plain "$case-plain" --first "$tag" "$case"; then
        bad "$case: did not complete"; cat "$T/$case-cc.err" >&2
        continue
    fi
    if ! grep -q 'v8 served' "$T/$case-cc.err"; then
        bad "$case: the run was not served (its first plan is not the stored one?)"
        grep '^convcache' "$T/$case-cc.err" >&2
    elif why=$(agree "$T/$case-plain.txt" "$T/$case-cc.txt"); then
        ok "$case: every status and output as without convcache ($(grep -c timing "$T/$case-cc.txt") timing executes)"
    else
        bad "$case: $why"
    fi
done
if grep -q '^looked=0$' "$T/keepall-cc.txt"; then
    ok "keepall: the chosen plan's executes after timing go straight to cuDNN"
else
    bad "keepall: the interposer still looks at the chosen plan's executes ($(grep looked "$T/keepall-cc.txt"))"
fi

# ---- a host that asks heuristics for fewer results than they have -------
# It gets the same configs as without convcache (only their order may
# differ): served when the stored choice is among them ("in": as many as
# reach it), else it benchmarks them as without convcache ("out": the 3
# before it). The stored choice is the middle config, which a host picked
# by its own rule (--pick), so that where it stands does not hang on timing.
fewer() { # NAME TAKE
    cp "$T/picked.ccdb" "$T/$1.ccdb"
    if ! V8_HOSTS_TAKE=$2 served "$1-cc" "$1" fewer || ! V8_HOSTS_TAKE=$2 plain "$1-plain" fewer; then
        bad "$1: did not complete"; cat "$T/$1-cc.err" >&2
        return
    fi
    sed -n 's/^config //p' "$T/$1-cc.txt" | sort >"$T/$1-cc.set"
    sed -n 's/^config //p' "$T/$1-plain.txt" | sort >"$T/$1-plain.set"
    n=$(wc -l <"$T/$1-plain.set")
    if ! cmp -s "$T/$1-cc.set" "$T/$1-plain.set"; then
        bad "$1: other configs than without convcache: $(diff "$T/$1-plain.set" "$T/$1-cc.set" | tr '\n' ' ')"
    elif grep -qx "$tag" "$T/$1-plain.set"; then
        if [ "$(sed -n 1p "$T/$1-cc.txt")" = "config $tag" ] && grep -q 'v8 served' "$T/$1-cc.err" &&
            [ "$(most_timed "$T/$1-cc.standin")" -le 1 ]; then
            ok "$1: the same $n of $all configs as without convcache, the stored one first; served, one plan timed"
        else
            bad "$1: the stored choice $tag is among the $n configs, but the run was not served from it"
        fi
    elif [ "$(most_timed "$T/$1-cc.standin")" = "$(most_timed "$T/$1-plain.standin")" ] &&
        ! grep -q 'v8 served' "$T/$1-cc.err"; then
        ok "$1: the same $n of $all configs as without convcache (the stored choice not among them); benchmarked as without"
    else
        bad "$1: the stored choice is not among the configs, and the run did not benchmark as without convcache"
    fi
}
plain fewer-all fewer # every config, in heuristics' order
all=$(grep -c '^config ' "$T/fewer-all.txt")
at=$((all / 2))
mid=$(sed -n 's/^config //p' "$T/fewer-all.txt" | sed -n "${at}p")
tag=$mid
if [ "$at" -le 3 ] || [ -z "$tag" ]; then
    bad "fewer: heuristics give $all configs: no host can take fewer with and without the stored one"
elif ! served picked picked --pick "$tag" learn || [ "$(chosen "$T/picked.txt")" != "$tag" ]; then
    bad "fewer: a host that picks $tag did not store it"; cat "$T/picked.err" >&2
else
    fewer fewer-in "$at"
    fewer fewer-out 3
fi
tag=$(chosen "$T/learn-1.txt")

# ---- leaves: what a tensor is, read back or kept (v8_leaf.c) -------------
# The byte alignment, which cuDNN does not read back, is kept: on the file
# that knows the graph at 16 bytes, 8-byte tensors are another graph,
# benchmarked, then served. A tensor given an attribute the interposer
# neither reads back nor keeps makes its graph pass through: benchmarked in
# every run, every status as without convcache (the host picks the middle
# config, so that both runs choose alike).
cp "$T/known.ccdb" "$T/align.ccdb"
V8_HOSTS_ALIGN=8 served align-2 align learn
V8_HOSTS_ALIGN=8 served align-3 align learn
if grep -q 'v8 served' "$T/align-2.err" || [ "$(most_timed "$T/align-2.standin")" -le 1 ]; then
    bad "align: 8-byte aligned tensors were served the choice learnt at 16 bytes"
elif ! grep -q 'v8 served' "$T/align-3.err" || [ "$(most_timed "$T/align-3.standin")" -gt 1 ]; then
    bad "align: run 3 at 8 bytes was not served"
else
    ok "align: another byte alignment is another graph: benchmarked ($(most_timed "$T/align-2.standin") timed), then served"
fi
V8_HOSTS_LEAF_EXTRA=1 served extra-1 extra --pick "$mid" learn
V8_HOSTS_LEAF_EXTRA=1 served extra-2 extra --pick "$mid" learn
V8_HOSTS_LEAF_EXTRA=1 plain extra-plain --pick "$mid" learn
if grep -q 'v8 served' "$T/extra-2.err" || [ "$(most_timed "$T/extra-2.standin")" -le 1 ] ||
    ! grep -q 'graphs passed through' "$T/extra-2.err"; then
    bad "extra: a tensor with an attribute that is not keyed did not pass through"
    grep '^convcache' "$T/extra-2.err" >&2
elif why=$(agree "$T/extra-plain.txt" "$T/extra-2.txt"); then
    ok "extra: a tensor with an attribute that is not keyed: its graph passed through, benchmarked in every run, every status as without convcache"
else
    bad "extra: $why"
fi

# ---- the served choice fails after timing --------------------------------
cp "$T/known.ccdb" "$T/fallback.ccdb"
served fails-2 fallback final-fails
plain fails-plain --first "$tag" final-fails
if why=$(agree "$T/fails-plain.txt" "$T/fails-2.txt"); then
    ok "final-fails: every status as without convcache"
else
    bad "final-fails: $why"
fi
served fails-3 fallback learn
served fails-4 fallback learn
if ! grep -q "stood aside.*failed in a host's run after timing" "$T/fails-3.err"; then
    bad "final-fails: run 3 did not stand aside with the reason logged"; grep '^convcache' "$T/fails-3.err" >&2
elif [ "$(most_timed "$T/fails-3.standin")" -le 1 ]; then
    bad "final-fails: run 3 did not benchmark in full"
elif [ "$(most_timed "$T/fails-4.standin")" -gt 1 ]; then
    bad "final-fails: run 4 was not served again ($(most_timed "$T/fails-4.standin") plans timed)"
else
    ok "final-fails: run 3 stood aside and benchmarked ($(most_timed "$T/fails-3.standin") timed), run 4 served"
fi

# ---- a leader that builds and does not run -------------------------------
stall() { # NAME: processes, or threads with NAME threads
    mkdir -p "$T/$1"
    export CONVCACHE_BUILD_TIMEOUT_MS=300000
    if [ "$1" = threads ]; then
        served stall-threads stall-t --dir "$T/$1" stall-threads
        lead=$T/stall-threads.txt
    else
        served stall-lead stall-p --dir "$T/$1" stall-lead &
        pid=$!
        served stall-follow stall-p --dir "$T/$1" stall-follow
        wait $pid
        lead=$T/stall-lead.txt
    fi
    unset CONVCACHE_BUILD_TIMEOUT_MS
    file=stall-p
    [ "$1" = threads ] && file=stall-t
    served "stall-$1-3" "$file" learn
    if ! grep -q '^follower_done_first=yes' "$lead"; then
        bad "stall ($1): the follower was held while the leader built and did not run"
    elif [ "$(most_timed "$T/stall-$1-3.standin")" -gt 1 ]; then
        bad "stall ($1): run 3 was not served"
    else
        ok "stall ($1): the follower went on and finished first; both completed; run 3 served"
    fi
}
stall processes
stall threads

# ---- fork while threads are inside the interposer (v8_fork.c) -------------
# A child forked while one thread makes a deferred plan real (its build in
# cuDNN held), another waits for it, a third leads a new graph's benchmark
# with a plan's finalize in flight, and the execute filter watches plans:
# the child finishes (30 s at most) and cuDNN answers every call it makes.
cp "$T/known.ccdb" "$T/fork.ccdb"
if env CONVCACHE_PATH="$T/fork.ccdb" timeout 120 "$B/convcache" run -- "$S/v8_fork" >"$T/fork.out" 2>"$T/fork.err"; then
    ok "$(cat "$T/fork.out")"
else
    bad "fork: $(grep -v '^convcache,' "$T/fork.err" | tail -5)"
fi

[ "$fails" -eq 0 ] && echo "v8_hosts: all passed"
[ "$fails" -eq 0 ]
