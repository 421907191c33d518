#!/bin/sh
# The leftover check of `make test` (tests/infra/run-tests.sh): a run leaves
# nothing in /tmp and nothing in the source tree outside build/. It blames
# only what the run certainly made, never another program's files:
#
#   sh tests/infra/leftovers.sh snapshot DIR            record the state in DIR
#   sh tests/infra/leftovers.sh compare DIR [PRIVATE]   exit 1 if the run left anything
#
# - With a /tmp of its own (PRIVATE given: as root, where unshare works,
#   run-tests.sh gives the suite an empty tmpfs as /tmp, private-tmp.sh),
#   every name left in it was made by the suite (a test or tool that ignored
#   TMPDIR) and fails the run; private-tmp.sh lists them into the file
#   PRIVATE, ending with the line "/end". A PRIVATE that is missing or was
#   not finished means the suite's /tmp was never listed (its start failed):
#   the check says so and fails, never "none". The real /tmp is not looked
#   at: other programs use it.
# - Without one, a new entry of the real /tmp cannot be told from another
#   program's: it fails the run only with CI=true or LEFTOVERS_STRICT=1,
#   where nothing else runs and every new entry is the suite's. Otherwise new
#   entries with names only this suite makes are listed as notes.
# - The source tree: any new untracked file outside build/ fails the run.
# (The suite's own TMPDIR is checked by run-tests.sh.)
set -u
mode=${1:?usage: leftovers.sh snapshot|compare DIR [PRIVATE]}
dir=${2:?usage: leftovers.sh snapshot|compare DIR [PRIVATE]}
private=${3:-}
tmp=${LEFTOVERS_TMP:-/tmp}

state() { # the sorted /tmp entries and untracked source files
    ls -Ab "$tmp" | LC_ALL=C sort >"$1.tmp"
    if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
        git ls-files --others --directory -- . ':(exclude)build' | LC_ALL=C sort >"$1.tree"
    else
        : >"$1.tree"
    fi
}

# Names only this suite's own tests and tools give what they make (for
# notes; go, gcc, cmake and mktemp names are everyone's).
ours() {
    case $1 in
    convcache* | *.ccdb | *.ccdb.lock | clusterbench* | torture* | preload* | consumer*) return 0 ;;
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
    strict=0
    if [ "${CI:-}" = true ] || [ "${LEFTOVERS_STRICT:-}" = 1 ]; then strict=1; fi
    if [ -n "$private" ]; then
        if [ -f "$private" ] && [ "$(tail -n 1 "$private")" = /end ]; then
            while IFS= read -r name; do
                [ "$name" = /end ] && break
                echo "leftovers: the run left /tmp/$name (in the suite's own /tmp: a test ignored TMPDIR)" >&2
                bad=1
            done <"$private"
        else
            echo "leftovers: not checked: the suite's own /tmp was never listed (its setup failed, or the suite did not finish: see above)" >&2
            bad=1
        fi
    else
        notes=0
        while IFS= read -r name; do
            if [ $strict = 1 ]; then
                echo "leftovers: $tmp/$name is new since the run started (CI=true or LEFTOVERS_STRICT=1: nothing else writes there)" >&2
                bad=1
            elif ours "$name"; then
                echo "leftovers: note: $tmp/$name appeared during the run; with no /tmp of its own (run as root for one), the run cannot tell whether it made it" >&2
            else
                notes=$((notes + 1))
            fi
        done <"$dir/new.tmp"
        [ $notes = 0 ] || echo "leftovers: note: $notes other new entries in $tmp, not checked (other programs' names)" >&2
    fi
    while IFS= read -r name; do
        echo "leftovers: $name is new in the source tree (outside build/)" >&2
        bad=1
    done <"$dir/new.tree"
    if [ $bad = 0 ]; then
        if [ -n "$private" ]; then
            echo "leftovers: none: nothing left in /tmp (the suite's own /tmp was empty at the end) or in the source tree outside build/"
        elif [ $strict = 1 ]; then
            echo "leftovers: none: nothing new in /tmp since the run started, nothing in the source tree outside build/"
        else
            echo "leftovers: none in the source tree outside build/ (/tmp not checked: with no /tmp of its own, the run cannot tell its files there from other programs')"
        fi
    fi
    exit $bad
    ;;
*)
    echo "leftovers.sh: unknown mode $mode" >&2
    exit 2
    ;;
esac
