#!/bin/sh
# `make test`: runs the suite (MAKE test-suite) with one temporary directory
# for the whole run, build/test-tmp.XXXXXX, exported as TMPDIR to every test.
# The directory is removed at the end, also when a test fails or the run is
# interrupted (SIGINT, SIGTERM, SIGHUP: every test process is stopped
# first; only a SIGKILL of this script can leave the directory behind, in
# build/, where `make clean` removes it). Then:
#   - a test that left files in it fails the run (each test removes its own),
#     and so does one that left a process running;
#   - the leftover check (tests/infra/leftovers.sh) fails the run if anything
#     was left in /tmp or in the source tree outside build/. As root, the
#     suite gets a /tmp of its own (tests/infra/private-tmp.sh, which binds
#     the source tree into it when it lies under /tmp;
#     CONVCACHE_PRIVATE_TMP=0 turns that off), so that what it leaves there
#     is told apart from what other programs write to the real /tmp, which
#     is then not looked at. Without one, leftovers.sh blames nothing in the
#     real /tmp (it cannot tell the suite's files from other programs'),
#     except with CI=true, where nothing else runs.
#
#   sh tests/infra/run-tests.sh MAKE TARGET...
set -u
here=$(cd "$(dirname "$0")" && pwd -P)
# Physical paths from here on: a path through a symlink in /tmp would not
# lead anywhere in the suite's own /tmp.
cd "$(pwd -P)" || exit 1
mkdir -p build
run=$(mktemp -d "$(pwd)/build/test-tmp.XXXXXX") || exit 1
# test_api runs one of its children as nobody, inside this directory.
chmod 755 "$run"
trap 'rm -rf "$run"' EXIT

mkdir "$run/.state" "$run/tmp"
sh "$here/leftovers.sh" snapshot "$run/.state"
start=$(date +%s)

# The suite runs in a session of its own (setsid), so that an interrupt or a
# kill of this script ends every test process, including those that
# `timeout` puts in a process group of their own and the grandchildren that
# make does not pass a signal to, before the directory is removed.
# Where it can, the suite also gets a /tmp of its own (private-tmp.sh), so
# that what a test leaves there is certainly this run's (leftovers.sh).
# A trial run of private-tmp.sh decides: where it cannot set one up, the
# suite runs without, and says why.
private=""
if [ "${CONVCACHE_PRIVATE_TMP:-1}" = 1 ] && [ "$(id -u)" = 0 ] &&
    unshare --mount --propagation private true 2>/dev/null; then
    mkdir "$run/.state/trial"
    if unshare --mount --propagation private sh "$here/private-tmp.sh" "$run/.state/trial/list" true \
        2>"$run/.state/trial/err"; then
        private=$run/.state/private-tmp.list
        set -- unshare --mount --propagation private sh "$here/private-tmp.sh" "$private" "$@"
    else
        echo "make test: note: no /tmp of its own for the suite: $(tail -n 1 "$run/.state/trial/err")" >&2
    fi
fi
TMPDIR=$run/tmp setsid -w "$@" </dev/null &
suite=$!

# The live processes of the suite's session (field 6 of /proc/PID/stat;
# zombies left out: they are already dead).
session() {
    for f in /proc/[0-9]*/stat; do
        { read -r line <"$f"; } 2>/dev/null || continue
        # shellcheck disable=SC2086 # the fields after the command name
        set -- ${line##*) }
        [ "${4:-}" = "$suite" ] && [ "$1" != Z ] && { f=${f#/proc/}; echo "${f%/stat}"; }
    done
}
# end_session SIGNAL: signals every process of the session, then waits up to
# 10 s for them to go, then kills what is left.
end_session() {
    pids=$(session)
    [ -n "$pids" ] && kill -"$1" $pids 2>/dev/null
    i=0
    while [ -n "$(session)" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
    pids=$(session)
    [ -n "$pids" ] && kill -KILL $pids 2>/dev/null
}
stop() {
    echo "make test: interrupted: stopping the tests" >&2
    end_session TERM
    wait "$suite" 2>/dev/null
    exit "$1"
}
trap 'stop 130' INT
trap 'stop 143' TERM
trap 'stop 129' HUP
wait "$suite"
rc=$?

# A process still running now was left behind by a test (given 5 s to exit).
i=0
while [ -n "$(session)" ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
left=$(session)
if [ -n "$left" ]; then
    echo "make test: the tests left these processes running (now killed):" >&2
    for p in $left; do echo "  $p: $(tr '\0' ' ' </proc/"$p"/cmdline 2>/dev/null)" >&2; done
    end_session KILL
    [ $rc = 0 ] && rc=1
fi
took=$(($(date +%s) - start))

left=$(cd "$run/tmp" && ls -A)
if [ -n "$left" ]; then
    echo "make test: tests left these in their TMPDIR ($run/tmp):" >&2
    (cd "$run/tmp" && ls -A | sed 's/^/  /') >&2
    [ $rc = 0 ] && rc=1
fi
sh "$here/leftovers.sh" compare "$run/.state" "$private" || { [ $rc = 0 ] && rc=1; }
if [ $rc = 0 ]; then
    echo "make test: all passed in $((took / 60)) min $((took % 60)) s"
else
    echo "make test: FAILED (exit $rc) after $((took / 60)) min $((took % 60)) s" >&2
fi
exit $rc
