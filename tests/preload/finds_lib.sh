# Sourced by tests/preload/run.sh and dlopen_run.sh: the checks they share
# on preload_prog's find calls. The sourcing script sets T (its temporary
# directory) and PRELOAD (the interposer) first.
fails=0
n=0
ok() { echo "ok   $*"; }
bad() { echo "FAIL $*" >&2; fails=$((fails + 1)); }
# fresh: a new, empty cache file for the next test.
fresh() { n=$((n + 1)); export CONVCACHE_PATH="$T/cache$n/cache.ccdb"; }
# pre: run under the interposer, bounded so that a hang fails instead.
pre() { LD_PRELOAD=$PRELOAD timeout 120 "$@"; }
# finds FILE: the number of find calls that reached the stand-in cuDNN.
finds() { sed -n 's/^finds //p' "$1"; }
# expect_finds NAME WANT OUTFILE RESULTS [BASELINE]
expect_finds() {
    got=$(finds "$3")
    if [ "$got" != "$2" ]; then
        bad "$1: $got find calls reached cuDNN, want $2"
    elif [ $# -ge 5 ] && ! cmp -s "$4" "$5"; then
        bad "$1: results differ from $5"
    else
        ok "$1 ($got finds)"
    fi
}
