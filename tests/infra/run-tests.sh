#!/bin/sh
# `make test`: runs the suite (MAKE test-suite) with one temporary directory
# for the whole run, build/test-tmp.XXXXXX, exported as TMPDIR to every test.
# The directory is removed at the end, also when a test fails or the run is
# interrupted (SIGINT, SIGTERM, SIGHUP). Then:
#   - a test that left files in it fails the run (each test removes its own);
#   - the leftover check (tests/infra/leftovers.sh) fails the run if anything
#     appeared in /tmp or in the source tree outside build/.
#
#   sh tests/infra/run-tests.sh MAKE TARGET...
set -u
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p build
run=$(mktemp -d "$(pwd)/build/test-tmp.XXXXXX") || exit 1
# test_api runs one of its children as nobody, inside this directory.
chmod 755 "$run"
trap 'rm -rf "$run"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

mkdir "$run/.state" "$run/tmp"
sh "$here/leftovers.sh" snapshot "$run/.state"
start=$(date +%s)
TMPDIR=$run/tmp "$@"
rc=$?
took=$(($(date +%s) - start))

left=$(cd "$run/tmp" && ls -A)
if [ -n "$left" ]; then
    echo "make test: tests left these in their TMPDIR ($run/tmp):" >&2
    (cd "$run/tmp" && ls -A | sed 's/^/  /') >&2
    [ $rc = 0 ] && rc=1
fi
sh "$here/leftovers.sh" compare "$run/.state" || { [ $rc = 0 ] && rc=1; }
if [ $rc = 0 ]; then
    echo "make test: all passed in $((took / 60)) min $((took % 60)) s"
else
    echo "make test: FAILED (exit $rc) after $((took / 60)) min $((took % 60)) s" >&2
fi
exit $rc
