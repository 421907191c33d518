#!/bin/sh
# Builds and runs consumers of an installed convcache, the way users do:
#   1. CMake: find_package(convcache CONFIG) with targets convcache::convcache
#      (C and C++) and convcache::dynamic (run-time loading);
#   2. pkg-config: cc ... $(pkg-config --cflags --libs convcache), and the
#      run-time loaded form with $(pkg-config --cflags convcache) alone.
# Each program must run against the installed library (checked with ldd,
# and for the run-time loaded ones, with no CONVCACHE_LIBRARY and no
# LD_LIBRARY_PATH, with LD_DEBUG=files).
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

loads_installed() { # binary: the run-time loader finds the prefix's library by itself
    env -u CONVCACHE_LIBRARY -u LD_LIBRARY_PATH LD_DEBUG=files "$1" >"$work/dyn.out" 2>"$work/dyn.err" ||
        { cat "$work/dyn.out" "$work/dyn.err" >&2; fail "$1 failed"; }
    grep -q "file=$prefix/lib/libconvcache.so.1 .*dynamically loaded" "$work/dyn.err" ||
        { cat "$work/dyn.out" "$work/dyn.err" >&2; fail "$1 did not load $prefix/lib/libconvcache.so.1"; }
    cat "$work/dyn.out"
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
loads_installed "$work/cmake/consumer_dynamic"

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
# shellcheck disable=SC2046 # the flags are words
${CC:-cc} -O2 -Wall -Wextra -Werror -DCONVCACHE_DYNAMIC -o "$work/pc_consumer_dynamic" "$here/consumer.c" \
    $(pkg-config --cflags convcache) -ldl -lpthread
if ldd "$work/pc_consumer_dynamic" | grep -q libconvcache; then fail "pc_consumer_dynamic links libconvcache"; fi
loads_installed "$work/pc_consumer_dynamic"
