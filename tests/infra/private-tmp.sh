#!/bin/sh
# Runs a command with a /tmp of its own: run-tests.sh starts this script in
# a new mount namespace (unshare --mount), where it mounts an empty tmpfs
# over /tmp that no other process sees and that goes away with the
# namespace. What the suite needs that lies under the real /tmp (the
# source tree, when it was cloned there; the home directory, Go's
# toolchain and caches, the NVIDIA wheels, the PATH) is bound into the new
# /tmp at the same place, so the suite runs from any directory. After the
# command, those are unbound again (with the directories made to hold
# them) and what is left in that /tmp, which only the suite could have
# made, is written to LIST, one name a line (ls -Ab), followed by a last
# line "/end" that no name can be: a LIST without it was never finished,
# and the leftover check (leftovers.sh) then says it could not check.
#
#   unshare --mount --propagation private sh tests/infra/private-tmp.sh LIST COMMAND...
#
# Exit status: the command's, or 125 when the private /tmp could not be set
# up (the command did not run; LIST is not written).
set -u
list=${1:?usage: private-tmp.sh LIST COMMAND...}
shift
fail() {
    echo "private-tmp.sh: $*; CONVCACHE_PRIVATE_TMP=0 runs the suite without a /tmp of its own" >&2
    exit 125
}
# LIST is opened now: it may lie in a tree that is unbound before it is written.
exec 3>"$list" || fail "cannot write $list"
tmp=$(cd /tmp && pwd -P) || fail "no /tmp"
here=$(pwd -P) || fail "cannot tell the current directory"

# The directories to keep: each that exists and lies under /tmp (not /tmp
# itself), physical paths, sorted, none inside another.
candidates() {
    printf '%s\n' "$here" "${HOME:-}" "${XDG_CACHE_HOME:-}" "${NVIDIA_WHEELS:-}"
    if command -v go >/dev/null 2>&1; then
        go env GOROOT GOCACHE GOMODCACHE GOPATH 2>/dev/null | tr ':' '\n'
    fi
    printf '%s\n' "${PATH:-}" | tr ':' '\n'
}
keep=$(candidates | while IFS= read -r p; do
    [ -n "$p" ] && [ -d "$p" ] || continue
    p=$(cd "$p" 2>/dev/null && pwd -P) || continue
    case $p in "$tmp"/*) echo "${p#"$tmp"/}" ;; esac
done | LC_ALL=C sort -u | awk '{
    n = split($0, c, "/"); p = ""; inside = 0
    for (i = 1; i < n && !inside; i++) { p = i == 1 ? c[1] : p "/" c[i]; inside = p in kept }
    if (!inside) { kept[$0] = 1; print }
}')

# Build the new /tmp beside LIST, bind what is kept into it, then move it
# over /tmp: until the move, every kept path is still reachable.
stage=$(dirname "$list")/private-tmp
mkdir "$stage" || fail "cannot make $stage"
mount -t tmpfs -o mode=1777,size=1g convcache-test-tmp "$stage" || fail "cannot mount a tmpfs"
if [ -n "$keep" ]; then
    echo "$keep" | while IFS= read -r rel; do
        mkdir -p "$stage/$rel" && mount --bind "$tmp/$rel" "$stage/$rel" || exit 1
    done || fail "cannot bind what the suite needs under /tmp into its own /tmp"
fi
mount --move "$stage" /tmp || fail "cannot move the new /tmp over /tmp"
rmdir "$stage"
cd "$here" || fail "cannot enter $here in the new /tmp"

"$@"
rc=$?

# Unbind (lazily: a process left running may still use them) and remove the
# directories made to hold them, where empty; a name a test left in one of
# them stays, and is listed.
cd /
if [ -n "$keep" ]; then
    echo "$keep" | while IFS= read -r rel; do
        umount -l "/tmp/$rel" || echo "private-tmp.sh: cannot unbind /tmp/$rel" >&2
        d=/tmp/$rel
        while [ "$d" != /tmp ] && rmdir "$d" 2>/dev/null; do d=$(dirname "$d"); done
    done
fi
ls -Ab /tmp >&3 && echo /end >&3
exit $rc
