#!/bin/sh
# The leftover check of `make test`: nothing new in /tmp, nothing new in the
# source tree outside build/.
#
#   sh tests/infra/leftovers.sh snapshot DIR   records the state in DIR
#   sh tests/infra/leftovers.sh compare DIR    exit 1 if the run left anything
#
# /tmp is shared with every other program on the machine, so an entry that
# appeared during the run is counted as ours when its name is one our tests,
# compilers or tools make (a temporary file or directory that ignored
# TMPDIR); any other new entry is listed but not counted, except with
# CI=true or LEFTOVERS_STRICT=1, where nothing else runs and every new entry
# counts.
set -u
mode=${1:?usage: leftovers.sh snapshot|compare DIR}
dir=${2:?usage: leftovers.sh snapshot|compare DIR}
tmp=${LEFTOVERS_TMP:-/tmp}

state() { # the sorted /tmp entries and untracked source files
    ls -A "$tmp" | LC_ALL=C sort >"$1.tmp"
    if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
        git ls-files --others --directory -- . ':(exclude)build' | LC_ALL=C sort >"$1.tree"
    else
        : >"$1.tree"
    fi
}

# Names of what the test suite, go, gcc, cmake, mktemp and redis-server make
# when they do not honour TMPDIR.
ours() {
    case $1 in
    convcache* | go-build* | go-link* | Test* | tmp.* | cc?????? | cc??????.* | redis* | dump.rdb | \
        clusterbench* | torture* | *.ccdb | *.ccdb.lock | cmake* | CMake* | ctest* | preload* | consumer*)
        return 0 ;;
    esac
    return 1
}

case $mode in
snapshot)
    state "$dir/before"
    ;;
compare)
    state "$dir/after"
    LC_ALL=C comm -13 "$dir/before.tmp" "$dir/after.tmp" >"$dir/new.tmp"
    LC_ALL=C comm -13 "$dir/before.tree" "$dir/after.tree" >"$dir/new.tree"
    bad=0
    while IFS= read -r name; do
        if ours "$name" || [ "${CI:-}" = true ] || [ "${LEFTOVERS_STRICT:-}" = 1 ]; then
            echo "leftovers: $tmp/$name is new since the run started" >&2
            bad=1
        else
            echo "leftovers: note: $tmp/$name appeared during the run; not a name this suite makes (another program?)" >&2
        fi
    done <"$dir/new.tmp"
    while IFS= read -r name; do
        echo "leftovers: $name is new in the source tree (outside build/)" >&2
        bad=1
    done <"$dir/new.tree"
    if [ $bad = 0 ]; then
        echo "leftovers: none (nothing new in $tmp or in the source tree outside build/)"
    fi
    exit $bad
    ;;
*)
    echo "leftovers.sh: unknown mode $mode" >&2
    exit 2
    ;;
esac
