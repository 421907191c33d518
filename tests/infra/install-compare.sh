#!/bin/sh
# Checks that `make install` and `cmake --install` install the same files:
# the same paths, types and modes, the same symbolic links, text files equal
# once each tree's prefix is replaced by PREFIX, and shared libraries with
# the same soname and exported symbols. (The two builds compile the C parts
# with different flags, so binaries are not compared byte for byte.)
#
#   sh tests/infra/install-compare.sh MAKE_PREFIX CMAKE_PREFIX
set -u
a=${1:?usage: install-compare.sh MAKE_PREFIX CMAKE_PREFIX}
b=${2:?usage: install-compare.sh MAKE_PREFIX CMAKE_PREFIX}
work=$(mktemp -d -t convcache-compare.XXXXXX) || exit 1
trap 'rm -rf "$work"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# One line per path: type, mode, and a link's target.
tree() {
    (cd "$1" && find . -mindepth 1 | LC_ALL=C sort | while IFS= read -r f; do
        if [ -L "$f" ]; then echo "$f link -> $(readlink "$f")"
        elif [ -d "$f" ]; then echo "$f dir $(stat -c %a "$f")"
        else echo "$f file $(stat -c %a "$f")"; fi
    done)
}

# What a file says, with its tree's prefix replaced.
content() { # content PREFIX FILE
    if grep -Iq . "$2" 2>/dev/null || [ ! -s "$2" ]; then
        sed "s|$1|PREFIX|g" "$2"
    elif readelf -h "$2" 2>/dev/null | grep -q 'Type:.*DYN'; then
        readelf -d "$2" | sed -n 's/.*(SONAME).*\[\(.*\)\]/soname \1/p'
        nm -D --defined-only "$2" | awk '{print "symbol " $3}' | LC_ALL=C sort
    else
        echo "binary, $(readelf -h "$2" 2>/dev/null | sed -n 's/.*Type: *//p')"
    fi
}

fail=0
tree "$a" >"$work/make.tree"
tree "$b" >"$work/cmake.tree"
if ! diff -u "$work/make.tree" "$work/cmake.tree" >"$work/tree.diff"; then
    echo "install-compare: the trees differ (- make install, + cmake --install):" >&2
    cat "$work/tree.diff" >&2
    fail=1
fi
n=0
for f in $(cd "$a" && find . -type f | LC_ALL=C sort); do
    [ -f "$b/$f" ] || continue
    n=$((n + 1))
    content "$a" "$a/$f" >"$work/a"
    content "$b" "$b/$f" >"$work/b"
    if ! diff -u "$work/a" "$work/b" >"$work/file.diff"; then
        echo "install-compare: $f differs (- make install, + cmake --install):" >&2
        cat "$work/file.diff" >&2
        fail=1
    fi
done
if [ $fail = 0 ]; then
    echo "install-compare: make install and cmake --install agree ($(wc -l <"$work/make.tree") paths, $n files compared)"
fi
exit $fail
