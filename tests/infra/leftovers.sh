#!/bin/sh
# The leftover check of `make test` (tests/infra/run-tests.sh): a run leaves
# nothing in /tmp and nothing in the source tree outside build/.
#
#   sh tests/infra/leftovers.sh snapshot DIR            record the state in DIR
#   sh tests/infra/leftovers.sh compare DIR [PRIVATE]   exit 1 if the run left anything
#
# Where it can (as root, where unshare works), run-tests.sh gives the suite a
# /tmp of its own, an empty tmpfs, and lists what is in it at the end of the
# run into the file PRIVATE: every entry there was left by the suite (a test
# or tool that ignored TMPDIR) and fails the run. The real /tmp is compared
# too; what appeared there then came from other programs, and is listed only.
#
# Without a private /tmp, a new entry of the real /tmp fails the run when its
# name is one this suite's tests and tools make; any other new entry is listed
# only (another program?), except with CI=true or LEFTOVERS_STRICT=1, where
# nothing else runs and every new entry counts.
set -u
mode=${1:?usage: leftovers.sh snapshot|compare DIR [PRIVATE]}
dir=${2:?usage: leftovers.sh snapshot|compare DIR [PRIVATE]}
private=${3:-}
tmp=${LEFTOVERS_TMP:-/tmp}

state() { # the sorted /tmp entries and untracked source files
    ls -A "$tmp" | LC_ALL=C sort >"$1.tmp"
    if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
        git ls-files --others --directory -- . ':(exclude)build' | LC_ALL=C sort >"$1.tree"
    else
        : >"$1.tree"
    fi
}

# Names that the tests, go, gcc, cmake, mktemp and redis-server give the
# temporary files they make.
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
    if [ -n "$private" ]; then
        while IFS= read -r name; do
            echo "leftovers: the run left /tmp/$name (in the suite's private /tmp: a test ignored TMPDIR)" >&2
            bad=1
        done <"$private"
    fi
    while IFS= read -r name; do
        if [ -n "$private" ]; then
            echo "leftovers: note: $tmp/$name appeared during the run, made by another program (the suite had a /tmp of its own)" >&2
        elif ours "$name" || [ "${CI:-}" = true ] || [ "${LEFTOVERS_STRICT:-}" = 1 ]; then
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
        how="compared with its state before the run"
        [ -n "$private" ] && how="the suite's own /tmp was empty at the end"
        echo "leftovers: none: nothing left in /tmp ($how) or in the source tree outside build/"
    fi
    exit $bad
    ;;
*)
    echo "leftovers.sh: unknown mode $mode" >&2
    exit 2
    ;;
esac
