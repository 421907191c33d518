#!/bin/sh
# Builds and runs consumers of an installed convcache, the way users do:
#   1. CMake: find_package(convcache CONFIG) with targets convcache::convcache
#      (C and C++) and convcache::dynamic (run-time loading);
#   2. pkg-config: cc ... $(pkg-config --cflags --libs convcache).
# Each program must run against the installed library (checked with ldd).
#
# Usage: run.sh PREFIX WORKDIR   (PREFIX as given to make install PREFIX=...)
set -eu
prefix=$1
work=$2
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$work"
export CONVCACHE_PATH="$work/consumer.ccdb"

fail() {
    echo "package-test: $*" >&2
    exit 1
}

uses_installed() { # binary: resolves libconvcache.so.1 inside the prefix
    ldd "$1" | grep -q "libconvcache.so.1 => $prefix/lib/libconvcache.so.1" ||
        { ldd "$1" >&2; fail "$1 does not use $prefix/lib/libconvcache.so.1"; }
}

echo "-- CMake consumer: find_package(convcache CONFIG), convcache::convcache, convcache::dynamic"
cmake -S "$here" -B "$work/cmake" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=Release \
    >"$work/cmake.log" 2>&1 || { cat "$work/cmake.log" >&2; fail "cmake configure failed"; }
cmake --build "$work/cmake" >>"$work/cmake.log" 2>&1 || { cat "$work/cmake.log" >&2; fail "cmake build failed"; }
uses_installed "$work/cmake/consumer_c"
uses_installed "$work/cmake/consumer_cxx"
if ldd "$work/cmake/consumer_dynamic" | grep -q libconvcache; then fail "consumer_dynamic links libconvcache"; fi
"$work/cmake/consumer_c"
"$work/cmake/consumer_cxx"
CONVCACHE_LIBRARY="$prefix/lib/libconvcache.so.1" "$work/cmake/consumer_dynamic"

echo "-- pkg-config consumer: \$(pkg-config --cflags --libs convcache)"
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
pkg-config --exists --print-errors convcache || fail "pkg-config does not find convcache"
flags=$(pkg-config --cflags --libs convcache)
echo "   pkg-config --cflags --libs convcache: $flags"
# shellcheck disable=SC2086 # the flags are words
${CC:-cc} -O2 -Wall -Wextra -Werror -o "$work/pc_consumer_c" "$here/consumer.c" $flags -Wl,-rpath,"$prefix/lib"
# shellcheck disable=SC2086
${CXX:-c++} -std=c++17 -O2 -Wall -Wextra -Werror -o "$work/pc_consumer_cxx" "$here/consumer.cpp" $flags \
    -Wl,-rpath,"$prefix/lib"
uses_installed "$work/pc_consumer_c"
uses_installed "$work/pc_consumer_cxx"
"$work/pc_consumer_c"
"$work/pc_consumer_cxx"
