#!/bin/sh
# Checks, in well under a second, the tools a make goal needs, and prints the
# one apt-get line that installs every missing Debian package.
#
#   sh tests/infra/prereqs.sh [--packages] SET...
#
# SETs: build (make, plain `make install`), cxx (the demo, examples), test
# (make test, test-repeat), bench (make bench), wheel-aarch64 (make wheel and
# wheel-test ARCH=aarch64 on another machine: the cross toolchain and qemu). Exit 0 when all is there,
# 1 otherwise. --packages prints only the missing Debian packages, one line,
# for .ci/run.
set -u

list_only=0
if [ "${1:-}" = --packages ]; then list_only=1; shift; fi

missing_pkgs=""
missing_what=""
go_note=""

need() { # need PACKAGE WHAT: WHAT is missing; PACKAGE installs it
    case " $missing_pkgs " in *" $1 "*) ;; *) missing_pkgs="$missing_pkgs $1" ;; esac
    case " $missing_what " in *" $2 "*) ;; *) missing_what="$missing_what $2" ;; esac
}
tool() { command -v "$1" >/dev/null 2>&1 || need "$2" "$1"; }
header() { # header FILE PACKAGE: a C header the compiler must find
    printf '#include <%s>\n' "$1" | ${CC:-gcc} -E -x c - >/dev/null 2>&1 || need "$2" "$1"
}

# Go comes from go.dev, not apt: Debian's golang-go is older than go.mod's.
check_go() {
    want=$(sed -n 's/^go \([0-9.]*\)$/\1/p' go.mod 2>/dev/null)
    if ! command -v "${GO:-go}" >/dev/null 2>&1; then
        missing_what="$missing_what go"
        go_note="Go ${want:-1.26.8} or later: https://go.dev/dl/ (Debian's golang-go is too old), then put its bin/ on PATH"
        return
    fi
    have=$("${GO:-go}" env GOVERSION 2>/dev/null | sed 's/^go//')
    older=$(printf '%s\n%s\n' "$have" "$want" | sort -V | head -n 1)
    if [ -n "$want" ] && [ "$have" != "$want" ] && [ "$older" = "$have" ] &&
        [ "$("${GO:-go}" env GOTOOLCHAIN 2>/dev/null)" = local ]; then
        missing_what="$missing_what go>=$want"
        go_note="go $have is older than go.mod's $want and GOTOOLCHAIN=local: install Go $want or later from https://go.dev/dl/"
    fi
}

[ $# -eq 0 ] && set -- build
for set in "$@"; do
    case $set in
    build)
        check_go
        tool make make
        tool "${CC:-gcc}" gcc
        ;;
    cxx)
        tool "${CXX:-g++}" g++
        ;;
    test)
        tool "${CXX:-g++}" g++
        tool pkg-config pkg-config
        tool cmake cmake
        tool redis-server redis-server
        tool git git
        tool zsh zsh # the zsh completion script is checked with zsh itself
        # real-cudnn-check installs NVIDIA's cuDNN wheel (about 520 MB from
        # PyPI, kept for later runs) with pip, under build/.
        tool python3 python3
        python3 -m pip --version >/dev/null 2>&1 || need python3-pip pip
        # wheel-test installs the wheel into a fresh venv.
        python3 -c 'import ensurepip, venv' >/dev/null 2>&1 || need python3-venv python3-venv
        ;;
    wheel-aarch64)
        tool aarch64-linux-gnu-gcc gcc-aarch64-linux-gnu
        tool aarch64-linux-gnu-g++ g++-aarch64-linux-gnu
        tool qemu-aarch64 qemu-user
        ;;
    bench)
        tool "${CXX:-g++}" g++
        header sqlite3.h libsqlite3-dev
        ;;
    *)
        echo "prereqs.sh: unknown set $set" >&2
        exit 2
        ;;
    esac
done

if [ $list_only = 1 ]; then
    echo $missing_pkgs
    [ -z "$go_note" ]
    exit
fi
[ -z "$missing_what" ] && exit 0
echo "missing:$missing_what" >&2
[ -n "$missing_pkgs" ] && echo "install them with:  sudo apt-get install$missing_pkgs" >&2
[ -n "$go_note" ] && echo "and $go_note" >&2
exit 1
