#!/bin/sh
# `make test-repeat N=20`: runs the whole suite (`make test`) N times, each
# in a fresh clone of the commit HEAD names, so that uncommitted or untracked
# files never take part, and reports how many runs passed. The clones live
# in build/test-repeat/ and are removed after each run; a failed run's log
# is kept there as fail-I.log.
#
#   sh tests/infra/test-repeat.sh N
set -u
n=${1:-20}
case $n in '' | *[!0-9]*) echo "test-repeat: N must be a number, not '$n'" >&2; exit 2 ;; esac
root=$(pwd)
head=$(git rev-parse HEAD) || exit 2
out=$root/build/test-repeat
mkdir -p "$out"
rm -f "$out"/fail-*.log
clone=""
trap '[ -n "$clone" ] && rm -rf "$clone"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP
if [ -n "$(git status --porcelain --untracked-files=no)" ]; then
    echo "test-repeat: note: uncommitted changes are not tested; runs use HEAD $head"
fi

passed=0
for i in $(seq 1 "$n"); do
    clone=$(mktemp -d "$out/clone.XXXXXX") || exit 1
    chmod 755 "$clone" # test_api runs a child as nobody inside it
    log=$out/run-$i.log
    start=$(date +%s)
    if git clone -q --no-checkout "$root" "$clone/src" >"$log" 2>&1 &&
        git -C "$clone/src" fetch -q "$root" "$head" >>"$log" 2>&1 &&
        git -C "$clone/src" checkout -q --detach FETCH_HEAD >>"$log" 2>&1 &&
        (cd "$clone/src" && env -u CONVCACHE_PREREQS -u MAKEFLAGS -u MAKELEVEL make test) >>"$log" 2>&1; then
        passed=$((passed + 1))
        echo "test-repeat: run $i of $n passed ($(($(date +%s) - start)) s)"
        rm -f "$log"
    else
        mv "$log" "$out/fail-$i.log"
        echo "test-repeat: run $i of $n FAILED ($(($(date +%s) - start)) s); log: build/test-repeat/fail-$i.log"
        tail -n 15 "$out/fail-$i.log" | sed 's/^/    /'
    fi
    rm -rf "$clone"
    clone=""
done
echo "test-repeat: $passed of $n passed (commit $(git rev-parse --short "$head"))"
[ "$passed" = "$n" ]
