#!/bin/sh
# What `make demo` promises (mk/cxx.mk): its entries go to demo.ccdb beside
# the default cache file, which it neither creates nor changes, and it says
# where; its counts agree with each other: run 1 benchmarks each distinct
# shape once and the file then holds that many entries; run 2 benchmarks
# none, every lookup a hit, and the file holds the same entries.
#
#   sh tests/demo/check.sh "MAKE DEMO COMMAND" CACHE-DIR
#
# CACHE-DIR is the default cache file's directory under the HOME the
# command runs with (no CONVCACHE_PATH, no XDG_CACHE_HOME).
set -u
cmd=$1
dir=$2
out=$(env -u XDG_CACHE_HOME sh -c "$cmd" 2>&1) || { printf '%s\n' "$out" >&2; echo "demo check: make demo failed" >&2; exit 1; }
fail() {
    printf '%s\n' "$out" >&2
    echo "demo check: $*" >&2
    exit 1
}
field() { printf '%s\n' "$out" | sed -n "$1" | head -1; }

[ -e "$dir/cache.ccdb" ] && fail "make demo wrote the default cache file $dir/cache.ccdb"
[ -s "$dir/demo.ccdb" ] || fail "make demo left no $dir/demo.ccdb"
[ "$(printf '%s\n' "$out" | grep -c "^cache file: $dir/demo.ccdb (the demo's own")" = 2 ] ||
    fail "make demo does not say, in each run, that its file is $dir/demo.ccdb"

shapes=$(field 's/^algorithms chosen for the \([0-9]*\) distinct shapes:.*/\1/p')
set -- $(field 's/^run 1: \([0-9]*\) convolution lookups: \([0-9]*\) hits, \([0-9]*\) misses, so \([0-9]*\) shapes benchmarked.*/\1 \2 \3 \4/p')
[ $# = 4 ] || fail "no run 1 line"
l1=$1 h1=$2 m1=$3 b1=$4
set -- $(field 's/^run 2: \([0-9]*\) convolution lookups: \([0-9]*\) hits, \([0-9]*\) misses, so \([0-9]*\) shapes benchmarked.*/\1 \2 \3 \4/p')
[ $# = 4 ] || fail "no run 2 line"
l2=$1 h2=$2 m2=$3 b2=$4
entries=$(printf '%s\n' "$out" | sed -n "s|^cache file $dir/demo.ccdb: \([0-9]*\) entries in this scope.*|\1|p" | tr '\n' ' ')
[ -n "$shapes" ] && [ "$shapes" -gt 0 ] || fail "no distinct shapes"
[ $((h1 + m1)) = "$l1" ] && [ "$m1" = "$b1" ] && [ "$m1" = "$shapes" ] ||
    fail "run 1: $l1 lookups, $h1 hits, $m1 misses, $b1 benchmarked; $shapes distinct shapes: they disagree"
[ "$l2" = "$l1" ] && [ "$h2" = "$l2" ] && [ "$m2" = 0 ] && [ "$b2" = 0 ] ||
    fail "run 2: $l2 lookups, $h2 hits, $m2 misses, $b2 benchmarked: want every lookup of run 1 a hit"
[ "$entries" = "$shapes $shapes " ] || fail "the file holds $entries entries after the runs; want $shapes each time"
echo "make demo: $shapes shapes benchmarked once, in $dir/demo.ccdb; run 2 $h2 hits of $l2 lookups; the default file untouched"
