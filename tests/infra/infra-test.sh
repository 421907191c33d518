#!/bin/sh
# `make infra-test` (part of make test): the harness's own tests. The
# leftover check (leftovers.sh) blames only what the run certainly made,
# and never says "none" when it could not look; run-tests.sh runs the suite
# from a tree under /tmp (as root: in a /tmp of its own, into which
# private-tmp.sh binds the tree) while another program writes to /tmp.
# Each case prints one line; the script exits 1 if any failed, and removes
# everything it made, also when a case fails.
set -u
infra=$(cd "$(dirname "$0")" && pwd -P)
work=$(mktemp -d "${TMPDIR:-/tmp}/infra-test.XXXXXX") || exit 1
under=""
others="" # what the other program makes in /tmp
trap 'rm -rf "$work" ${under:+"$under"} $others' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
failed=0
ok() { echo "infra-test: ok: $*"; }
bad() {
    echo "infra-test: FAILED: $*" >&2
    [ -f "$work/out" ] && sed 's/^/    /' "$work/out" >&2
    failed=1
}
has() { grep -q -- "$1" "$work/out"; }

# ---- leftovers.sh on a stand-in /tmp, outside any git tree -----------------
fake=$work/tmp
state=$work/state
mkdir "$fake" "$state"
check() { # check EXPECTED-EXIT [PRIVATE] [VAR=value...]: compare, into $work/out
    want=$1
    shift
    priv=""
    if [ $# -gt 0 ] && [ "${1#*=}" = "$1" ]; then priv=$1; shift; fi
    (cd "$work" && env -u CI -u LEFTOVERS_STRICT GIT_DIR="$work/no-git" LEFTOVERS_TMP="$fake" "$@" \
        sh "$infra/leftovers.sh" compare "$state" ${priv:+"$priv"}) >"$work/out" 2>&1
    got=$?
    [ $got = "$want" ] || { echo "exit $got, want $want" >>"$work/out"; return 1; }
}
(cd "$work" && GIT_DIR="$work/no-git" LEFTOVERS_TMP="$fake" sh "$infra/leftovers.sh" snapshot "$state")
mkdir "$fake/go-build123" "$fake/convcache-test-x"
: >"$fake/tmp.Ab12"
if check 0 && ! has "leftovers: $fake/" && has "leftovers: none in the source tree"; then
    ok "no /tmp of its own: new entries of other programs are not blamed"
else bad "no /tmp of its own: another program's /tmp entries were blamed"; fi
if check 1 CI=true && has "leftovers: $fake/go-build123 is new" && ! has "leftovers: none"; then
    ok "CI=true: every new /tmp entry counts (nothing else runs there)"
else bad "CI=true: a new /tmp entry was not counted"; fi
if check 1 "$work/absent.list" && has "not checked" && ! has "leftovers: none"; then
    ok "a private /tmp never listed: not checked, never \"none\""
else bad "a private /tmp never listed was taken for an empty one"; fi
: >"$work/unfinished.list"
if check 1 "$work/unfinished.list" && has "not checked" && ! has "leftovers: none"; then
    ok "a private /tmp listing not finished: not checked, never \"none\""
else bad "an unfinished private /tmp listing was taken for an empty one"; fi
printf 'leak\n/end\n' >"$work/leak.list"
if check 1 "$work/leak.list" && has "the run left /tmp/leak " && ! has "/tmp//end" && ! has "go-build123"; then
    ok "a private /tmp: what is left there is blamed, the real /tmp is not looked at"
else bad "a private /tmp's leftovers"; fi
echo /end >"$work/empty.list"
if check 0 "$work/empty.list" && has "leftovers: none: nothing left in /tmp (the suite's own /tmp"; then
    ok "an empty private /tmp: none"
else bad "an empty private /tmp"; fi

# ---- run-tests.sh from a tree under /tmp ------------------------------------
under=$(mktemp -d /tmp/convcache-infra-test.XXXXXX) || exit 1
tree=$under/clone/src
mkdir -p "$tree/tests/infra"
cp "$infra/run-tests.sh" "$infra/private-tmp.sh" "$infra/leftovers.sh" "$tree/tests/infra/"
: >"$tree/marker"
suite() { # suite [VAR=value...]: run-tests.sh in the tree running $cmd, into $work/out
    (cd "$tree" && env -u CI -u LEFTOVERS_STRICT -u GIT_DIR "$@" sh tests/infra/run-tests.sh sh -c "$cmd") \
        >"$work/out" 2>&1
}
# The suite sees its tree by its absolute path, and its TMPDIR, while
# another program makes entries of its own in the real /tmp meanwhile: the
# suite says "started", waits for the other program, and goes on.
sees='test -f "$(pwd -P)/marker" && test -d "$TMPDIR" && touch "$TMPDIR/t" && rm "$TMPDIR/t"'
handshake='touch started && i=0 && while [ ! -e go ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i + 1)); done && test -e go'
id=${under##*.}
others="/tmp/go-build-infra$id /tmp/other-infra$id"
other() { # another program: waits for the suite to start, then writes to the real /tmp
    i=0
    while [ ! -e "$tree/started" ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i + 1)); done
    mkdir "/tmp/go-build-infra$id" && : >"/tmp/other-infra$id" && : >"$tree/go"
}
for private in 1 0; do
    rm -f "$tree/started" "$tree/go"
    other &
    cmd="$sees && $handshake && echo suite-ran"
    suite CONVCACHE_PRIVATE_TMP=$private
    rc=$?
    wait
    what="from a tree under /tmp, CONVCACHE_PRIVATE_TMP=$private, beside another program writing to /tmp"
    if [ $rc = 0 ] && has "^suite-ran" && has "leftovers: none" && ! has "Directory nonexistent" &&
        ! has "infra$id" && [ -d "/tmp/go-build-infra$id" ]; then
        ok "$what: passes"
    else bad "$what (exit $rc)"; fi
    # shellcheck disable=SC2086 # two paths without spaces
    rm -rf $others "$tree/started" "$tree/go"
done

if [ "$(id -u)" != 0 ] || ! unshare --mount --propagation private true 2>/dev/null; then
    echo "infra-test: skipped: the cases of a private /tmp need root and unshare"
else
    cmd='touch /tmp/leak-by-suite ../left-in-holder'
    suite
    rc=$?
    if [ $rc = 1 ] && has "the run left /tmp/leak-by-suite " && has "the run left /tmp/${under#/tmp/} " &&
        [ ! -e /tmp/leak-by-suite ] && [ ! -e "$under/clone/left-in-holder" ]; then
        ok "a private /tmp: a test's leftovers are blamed, in /tmp and beside the bound tree, and stay private"
    else bad "a private /tmp: a test's leftovers (exit $rc)"; fi

    # The trial run of private-tmp.sh works and the real one fails to set up
    # (its second tmpfs mount fails): the suite does not run, and the
    # leftover check says it could not look.
    real_mount=$(command -v mount)
    mkdir "$work/bin"
    cat >"$work/bin/mount" <<EOF
#!/bin/sh
case " \$* " in *" tmpfs "*)
    n=\$(cat "$work/tmpfs-count" 2>/dev/null || echo 0); n=\$((n + 1)); echo \$n >"$work/tmpfs-count"
    [ \$n -ge 2 ] && { echo "mount: refused by infra-test" >&2; exit 32; } ;;
esac
exec "$real_mount" "\$@"
EOF
    chmod +x "$work/bin/mount"
    cmd='echo suite-ran'
    suite PATH="$work/bin:$PATH"
    rc=$?
    if [ $rc != 0 ] && ! has "^suite-ran" && has "private-tmp.sh: cannot mount a tmpfs" && has "not checked" &&
        ! has "leftovers: none"; then
        ok "a private /tmp that cannot be set up: the run fails, and never says \"leftovers: none\""
    else bad "a private /tmp that cannot be set up (exit $rc)"; fi
fi
[ $failed = 0 ] && echo "infra-test: ok"
exit $failed
