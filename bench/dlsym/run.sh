#!/bin/sh
# make bench-dlsym: the interposed dlsym's cost (bench/dlsym/dlsym_cost.c)
# and the warm execute through a dlsym-resolved pointer
# (bench/v8/exec_overhead.c), each the median of ROUNDS processes (default
# 5) under LD_PRELOAD=libconvcache_preload.so; a Markdown table with each
# target's verdict.
#
# usage: run.sh BUILD
set -eu
build=$(cd "$1" && pwd)
rounds=${ROUNDS:-5}
pre=$build/libconvcache_preload.so
median() { sort -g | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }
field() { sed -n "s/.*$1=\\(-*[0-9.]*\\).*/\\1/p"; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/convcache-bench-dlsym.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM
i=0
while [ "$i" -lt "$rounds" ]; do
    i=$((i + 1))
    LD_PRELOAD=$pre "$build/bench/dlsym/dlsym_cost" >>"$tmp/cost"
    LD_PRELOAD=$pre "$build/bench/v8/exec_overhead" >>"$tmp/exec"
done
g=$(field dlsym_ns_glibc <"$tmp/cost" | median)
p=$(field dlsym_ns_interposed <"$tmp/cost" | median)
r=$(field dlsym_ratio <"$tmp/cost" | median)
sg=$(field served_ns_glibc <"$tmp/cost" | median)
sp=$(field served_ns_interposed <"$tmp/cost" | median)
ed=$(field exec_ns_direct <"$tmp/exec" | median)
el=$(field exec_ns_interposed <"$tmp/exec" | median)
eq=$(field exec_ns_dlsym <"$tmp/exec" | median)
ea=$(field exec_ns_dlsym_added <"$tmp/exec" | median)
rv=$(awk -v r="$r" 'BEGIN {print (r <= 1.2) ? "HOLDS" : "MISSED"}')
ev=$(awk -v a="$ea" 'BEGIN {print (a <= 50) ? "HOLDS" : "MISSED"}')
echo "| interposed dlsym (median of $rounds processes) | glibc | interposed | ratio / added | target |"
echo "|---|---:|---:|---:|---|"
echo "| dlsym of a name it does not redirect (64 libc names, libc's handle and RTLD_DEFAULT), ns | $g | $p | ${r}x | <= 1.2x: $rv |"
echo "| dlsym of a served name in cuDNN's handle (redirected), ns | $sg | $sp | | |"
echo "| warm cudnnBackendExecute through dlsym's pointer vs straight to cuDNN, ns | $ed | $eq | +$ea | <= 50 ns: $ev |"
echo "| the same through the linked reference (for comparison), ns | $ed | $el | | |"
