#!/bin/sh
# Runs a command with a /tmp of its own: run-tests.sh starts this script in
# a new mount namespace (unshare --mount), where it mounts an empty tmpfs
# over /tmp that no other process sees and that goes away with the
# namespace. After the command, it writes what is left in that /tmp to
# LIST, for the leftover check (leftovers.sh).
#
#   unshare --mount --propagation private sh tests/infra/private-tmp.sh LIST COMMAND...
set -u
list=${1:?usage: private-tmp.sh LIST COMMAND...}
shift
mount -t tmpfs -o mode=1777,size=1g convcache-test-tmp /tmp || exit 1
"$@"
rc=$?
ls -A /tmp >"$list"
exit $rc
