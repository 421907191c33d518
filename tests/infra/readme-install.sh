#!/bin/sh
# docs/install.md's install example runs as printed: the sh block after the line
# "<!-- install-example: ... -->" is run from the source tree with a fresh,
# temporary HOME. Its program must print what the block's last comment says,
# using the library installed in $HOME/.local (found through the rpath that
# convcache.pc adds). Then where `make install` adds that rpath and runs
# ldconfig: never the rpath for /usr/lib, which the loader always searches,
# and no ldconfig under DESTDIR.
#
#   sh tests/infra/readme-install.sh     (from the source tree; make package-test runs it)
set -u
work=$(mktemp -d -t convcache-readme.XXXXXX) || exit 1
trap 'rm -rf "$work"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
fail() {
    echo "readme-install: $*" >&2
    exit 1
}

# The block: from the first ```sh after the marker to its closing ```.
sed -n '/^<!-- install-example:/,$p' docs/install.md |
    sed -n '/^```sh$/,/^```$/p' | sed '1d' | sed '/^```$/,$d' >"$work/example.sh"
[ -s "$work/example.sh" ] || fail "no install example (marker <!-- install-example: ... --> and a sh block) in docs/install.md"
want=$(sed -n '$s/^\.\/app *# *//p' "$work/example.sh")
[ -n "$want" ] || fail "the example's last line should be ./app with its output as a comment"

mkdir "$work/home"
env -u PKG_CONFIG_PATH -u LD_LIBRARY_PATH -u CONVCACHE_PATH HOME="$work/home" \
    sh -eu "$work/example.sh" >"$work/out" 2>&1 || { cat "$work/out" >&2; fail "the example failed"; }
got=$(tail -n 1 "$work/out")
[ "$got" = "$want" ] || { cat "$work/out" >&2; fail "./app printed '$got', docs/install.md says '$want'"; }
ldd "$work/home/app" | grep -q "libconvcache.so.1 => $work/home/.local/lib/libconvcache.so.1" ||
    { ldd "$work/home/app" >&2; fail "app does not use the library installed in ~/.local"; }
grep -q 'not in the dynamic loader.s search path' "$work/out" ||
    fail "make install into ~/.local did not say how programs find the library"
echo "readme-install: docs/install.md's install example runs as printed: $got"

# /usr/lib: no rpath; and under DESTDIR, no ldconfig (a message instead).
make --no-print-directory -s install PREFIX=/usr DESTDIR="$work/dest" >"$work/dest.out" 2>&1 ||
    { cat "$work/dest.out" >&2; fail "make install DESTDIR=... failed"; }
grep -q 'rpath' "$work/dest/usr/lib/pkgconfig/convcache.pc" && fail "convcache.pc for /usr/lib has an rpath"
grep -q 'installed under DESTDIR' "$work/dest.out" || { cat "$work/dest.out" >&2; fail "no DESTDIR message"; }
grep -q 'rpath' "$work/home/.local/lib/pkgconfig/convcache.pc" || fail "convcache.pc for ~/.local/lib has no rpath"
echo "readme-install: rpath only for a prefix the loader does not search; no ldconfig under DESTDIR"
