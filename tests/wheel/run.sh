#!/bin/sh
# Installs the wheel in a fresh venv, with no network (a network namespace
# of its own where unshare allows it, and pip --no-index), no Go and no
# compiler on PATH, then uses it as its users would:
#   1. convcache --version, python -m convcache --version and import convcache
#      agree with the header's version;
#   2. convcache run finds the interposer inside the installed package (an
#      absolute path), and a stand-in cuDNN program run twice under it
#      benchmarks 18 times, then 0 (the stand-ins come from the build tree);
#      so does python -m convcache run; convcache.enable() serves a library
#      linked to cuDNN loaded after it, and after one warns once and binds
#      nothing (enable_check.py; not under qemu);
#   3. a C and a C++ program built with CMake through convcache config
#      --cmakedir (convcache::convcache and convcache::dynamic, the latter
#      run without CONVCACHE_LIBRARY), with pkg-config through convcache
#      config --pkgconfigdir, and with convcache config --cflags --libs,
#      each opening a cache, inserting and finding;
#   4. auditwheel show confirms the wheel's platform tag;
#   5. the start-up the command is linked with (wheel/libc_start.c) runs a
#      program's constructors once on this machine's glibc;
#   6. wheel/check_elf.py, which the build runs, refuses make's own library
#      (built against this machine's glibc), naming the symbols.
#
# Usage: run.sh WHEEL VERSION BUILD WHEEL_DIR AUDITWHEEL
#   BUILD      a build tree of the wheel's architecture with the stand-ins
#              and preload_prog (tests/preload)
#   WHEEL_DIR  the wheel's build directory (libc_start.a)
#   AUDITWHEEL the auditwheel command
# For a wheel of another architecture, set WHEEL_QEMU (such as
# "qemu-aarch64 -L /usr/aarch64-linux-gnu"), WHEEL_PLATFORM (its first
# platform tag) and CC, CXX (cross compilers): pip installs it with
# --target and --platform (a venv of this machine's Python cannot take it),
# its programs run under qemu-user (no binfmt_misc needed: convcache run's
# command is qemu itself), the consumers are cross-built, and the console
# script must say it cannot run the binary of another machine.
set -eu
wheel=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
version=$2
build=$(cd "$3" && pwd)
wheel_dir=$(cd "$4" && pwd)
auditwheel=$5
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/convcache-wheel.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

fail() {
    echo "wheel-test: FAIL: $*" >&2
    exit 1
}
ok() { echo "ok   $*"; }

# Without network where this user may make a network namespace.
offline=""
if unshare --net true 2>/dev/null; then offline="unshare --net --"; fi
# A clean environment: no Go, no compiler, no convcache settings.
clean="env -i HOME=$tmp/home PATH=$tmp/venv/bin:/usr/bin:/bin CC=false CXX=false LANG=C.UTF-8"
mkdir -p "$tmp/home"

qemu=${WHEEL_QEMU:-}
# target [VAR=VALUE]... PROGRAM [ARGS]: runs a program of the wheel's
# architecture, the variables set for it alone (under qemu: -E VAR=VALUE).
target() {
    if [ -z "$qemu" ]; then
        env "$@"
        return
    fi
    n=0
    for a; do case $a in *=*) n=$((n + 1)) ;; *) break ;; esac; done
    i=0
    for a; do
        shift
        if [ $i -lt $n ]; then set -- "$@" -E "$a"; else set -- "$@" "$a"; fi
        i=$((i + 1))
    done
    # shellcheck disable=SC2086 # the qemu command is words
    $qemu "$@"
}

python3 -m venv "$tmp/venv"
py="$tmp/venv/bin/python"
pip="$py -m pip install --quiet --no-index --no-cache-dir"
# shellcheck disable=SC2086
if $clean sh -c 'command -v go' >/dev/null; then fail "go is on the clean PATH"; fi
if [ -z "$qemu" ]; then
    echo "-- pip install $(basename "$wheel") into a fresh venv${offline:+, no network (unshare --net)}"
    where=""
    site_of() { $clean "$py" -c 'import convcache; print(convcache.prefix())'; }
    convcache() { $clean timeout 300 convcache "$@"; }
else
    echo "-- pip install --target --platform $WHEEL_PLATFORM $(basename "$wheel")${offline:+, no network (unshare --net)}; programs under $qemu"
    where="--target $tmp/site --platform $WHEEL_PLATFORM --only-binary=:all: --no-deps"
    site_of() { $clean PYTHONPATH="$tmp/site" "$py" -c 'import convcache; print(convcache.prefix())'; }
    # shellcheck disable=SC2086 # the qemu command is words
    convcache() { timeout 300 $qemu "$pkg/bin/convcache" "$@"; }
fi
# shellcheck disable=SC2086 # the command prefixes are words
if ! $offline $clean PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_ROOT_USER_ACTION=ignore $pip $where "$wheel" \
    >"$tmp/pip.log" 2>&1; then
    cat "$tmp/pip.log" >&2
    fail "pip install"
fi
pkg=$(site_of)
case $pkg in "$tmp/venv/"*/site-packages/convcache | "$tmp/site/convcache") ;; *) fail "the package is at $pkg" ;; esac
ok "installed into $pkg"

echo "-- 1. the version"
line=$(convcache --version)
case $line in "convcache $version ("*) ok "convcache --version: $line" ;; *) fail "convcache --version: $line" ;; esac
if [ -z "$qemu" ]; then
    [ "$($clean sh -c 'command -v convcache')" = "$tmp/venv/bin/convcache" ] || fail "convcache is not the venv's console script"
    [ "$($clean "$py" -m convcache --version)" = "$line" ] || fail "python -m convcache --version differs"
else
    # The console script of another machine's wheel says why it cannot run.
    rc=0
    $clean PYTHONPATH="$tmp/site" "$tmp/site/bin/convcache" --version 2>"$tmp/e" || rc=$?
    [ $rc = 126 ] && grep -q "convcache: cannot run $pkg/bin/convcache: .*reinstall" "$tmp/e" ||
        { cat "$tmp/e" >&2; fail "the console script on this machine: exit $rc"; }
    ok "the console script here: exit 126, $(cat "$tmp/e")"
fi
got=$($clean PYTHONPATH="$tmp/site" "$py" -c 'import os, convcache as c
paths = [c.executable(), c.library_path(), c.preload_path(), c.engine_library_path(),
         os.path.join(c.include_dir(), "convcache.h"), os.path.join(c.cmake_dir(), "convcacheConfig.cmake"),
         os.path.join(c.pkgconfig_dir(), "convcache.pc")]
missing = [p for p in paths if not os.path.isfile(p)]
print(c.__version__, "missing: " + " ".join(missing) if missing else "all present")')
[ "$got" = "$version all present" ] || fail "import convcache: $got"
ok "import convcache: __version__ $version, every path it names exists"
# The metadata PyPI shows: the licence, and README.md as the description.
meta=$($clean PYTHONPATH="$tmp/site" "$py" -c 'import importlib.metadata as m
d = m.distribution("convcache")
print(d.metadata["License"], "|", d.metadata["Description-Content-Type"], "|",
      "LICENSE" in [f.name for f in d.files], "|", "PyTorch: do this" in d.metadata.get_payload())')
[ "$meta" = "Apache-2.0 | text/markdown | True | True" ] || fail "the wheel's metadata: $meta"
ok "metadata: licence Apache-2.0 (LICENSE in the dist-info), README.md as the description"

echo "-- 2. convcache run, twice, against the stand-in cuDNN"
# shellcheck disable=SC2016 # $LD_PRELOAD is the child's (a native sh: its
# loader ignores the interposer of another architecture, and says so)
pre=$(convcache run -- sh -c 'printf %s "$LD_PRELOAD"' 2>/dev/null)
[ "$pre" = "$pkg/lib/libconvcache_preload.so" ] || fail "convcache run preloads '$pre', want $pkg/lib/libconvcache_preload.so"
ok "convcache run preloads $pre"
for run in 1 2; do
    # shellcheck disable=SC2086 # under qemu, convcache run runs qemu
    convcache run --path "$tmp/run.ccdb" -- $qemu \
        "$build/tests/preload/preload_prog" run "$tmp/r$run.txt" >"$tmp/o" 2>&1 || { cat "$tmp/o" >&2; fail "run $run"; }
    finds=$(sed -n 's/^finds //p' "$tmp/o")
    want=18
    [ $run = 1 ] || want=0
    [ "$finds" = $want ] || { cat "$tmp/o" >&2; fail "run $run: $finds find calls reached cuDNN, want $want"; }
    ok "run $run: $finds find calls reached cuDNN"
done
cmp -s "$tmp/r1.txt" "$tmp/r2.txt" || fail "run 2's results differ from run 1's"
if [ -z "$qemu" ]; then
    # python -m convcache run is the command; convcache.enable() in the
    # process serves a library linked to cuDNN loaded after it, and after
    # cuDNN was loaded warns once and binds nothing (tests/wheel/enable_check.py).
    for run in 1 2; do
        $clean timeout 300 "$py" -m convcache run --path "$tmp/m.ccdb" -- \
            "$build/tests/preload/preload_prog" run "$tmp/m$run.txt" >"$tmp/o" 2>&1 || { cat "$tmp/o" >&2; fail "python -m convcache run $run"; }
        finds=$(sed -n 's/^finds //p' "$tmp/o")
        want=18
        [ $run = 1 ] || want=0
        [ "$finds" = $want ] || { cat "$tmp/o" >&2; fail "python -m convcache run, run $run: $finds finds, want $want"; }
    done
    cmp -s "$tmp/m1.txt" "$tmp/r1.txt" || fail "python -m convcache run's results differ"
    ok "python -m convcache run -- PROG, twice: 18 finds, then 0, same results"
    for when in before after; do
        $clean CONVCACHE_PATH="$tmp/enable.ccdb" timeout 300 "$py" "$here/enable_check.py" \
            "$build/tests/preload/libenable_client.so" $when || fail "convcache.enable() ($when)"
    done
fi

echo "-- 3. C and C++ programs against the installed package"
export CONVCACHE_PATH="$tmp/consumer.ccdb"
unset CONVCACHE_LIBRARY CONVCACHE_DISABLE CONVCACHE_MODE CONVCACHE_SCOPE LD_LIBRARY_PATH 2>/dev/null || true
cmakedir=$(convcache config --cmakedir)
[ "$cmakedir" = "$pkg/lib/cmake/convcache" ] || fail "convcache config --cmakedir: $cmakedir"
uses_wheel() { # BINARY: resolves libconvcache.so.1 inside the package (the
    # pkg-config file's paths go through ${pcfiledir}/../..)
    got=$(target LD_TRACE_LOADED_OBJECTS=1 "$1" | sed -n 's/^[[:space:]]*libconvcache\.so\.1 => \(.*\) (0x[0-9a-f]*)$/\1/p')
    [ -n "$got" ] && [ "$(realpath "$got")" = "$pkg/lib/libconvcache.so.1" ] || { ldd "$1" >&2; fail "$1 does not use $pkg/lib"; }
}
cross=""
[ -z "$qemu" ] || cross="-DCMAKE_SYSTEM_NAME=Linux -DCMAKE_SYSTEM_PROCESSOR=${WHEEL_PLATFORM#manylinux2014_} -DCMAKE_C_COMPILER=$CC -DCMAKE_CXX_COMPILER=$CXX"
# shellcheck disable=SC2086 # the cross settings are words
cmake -S "$src/tests/cpp/consumer" -B "$tmp/cmake" -Dconvcache_DIR="$cmakedir" -DCMAKE_BUILD_TYPE=Release $cross \
    >"$tmp/cmake.log" 2>&1 && cmake --build "$tmp/cmake" >>"$tmp/cmake.log" 2>&1 || { cat "$tmp/cmake.log" >&2; fail "cmake"; }
uses_wheel "$tmp/cmake/consumer_c"
uses_wheel "$tmp/cmake/consumer_cxx"
target "$tmp/cmake/consumer_c"
target "$tmp/cmake/consumer_cxx"
target LD_DEBUG=files "$tmp/cmake/consumer_dynamic" >"$tmp/o" 2>"$tmp/e" ||
    { cat "$tmp/o" "$tmp/e" >&2; fail "consumer_dynamic"; }
grep -q "file=$pkg/lib/libconvcache.so.1 .*dynamically loaded" "$tmp/e" ||
    { cat "$tmp/o" "$tmp/e" >&2; fail "consumer_dynamic did not load $pkg/lib/libconvcache.so.1"; }
cat "$tmp/o"
ok "CMake (-Dconvcache_DIR=\$(convcache config --cmakedir)): convcache::convcache (C, C++), convcache::dynamic"
# shellcheck disable=SC2086
pcdir=$(convcache config --pkgconfigdir)
flags=$(PKG_CONFIG_PATH=$pcdir pkg-config --cflags --libs convcache)
# shellcheck disable=SC2086 # the flags are words
${CC:-cc} -O2 -Wall -Wextra -Werror -o "$tmp/pc_c" "$src/tests/cpp/consumer/consumer.c" $flags
# shellcheck disable=SC2086
${CXX:-c++} -std=c++17 -O2 -Wall -Wextra -Werror -o "$tmp/pc_cxx" "$src/tests/cpp/consumer/consumer.cpp" $flags
uses_wheel "$tmp/pc_c"
uses_wheel "$tmp/pc_cxx"
target "$tmp/pc_c"
target "$tmp/pc_cxx"
ok "pkg-config (PKG_CONFIG_PATH=\$(convcache config --pkgconfigdir)): $flags"
flags=$(convcache config --cflags --libs)
# shellcheck disable=SC2086
${CC:-cc} -O2 -Wall -Wextra -Werror -o "$tmp/cfg_c" "$src/tests/cpp/consumer/consumer.c" $flags
uses_wheel "$tmp/cfg_c"
target "$tmp/cfg_c"
ok "convcache config --cflags --libs: $flags"

echo "-- 4. auditwheel show"
"$auditwheel" show "$wheel" >"$tmp/aw" 2>&1 || { cat "$tmp/aw" >&2; fail "auditwheel show"; }
tag=$(tr '\n' ' ' <"$tmp/aw" | sed -n 's/.*is consistent with the following platform tag: *"\([^"]*\)".*/\1/p')
case $(basename "$wheel") in *"-py3-none-"*"$tag"*".whl") ;; *) cat "$tmp/aw" >&2; fail "auditwheel says $tag" ;; esac
ok "auditwheel show: consistent with $tag, the wheel's tag"
sed 's/^/     /' "$tmp/aw"

echo "-- 5. the command's start-up runs constructors once"
${CC:-cc} -O2 -Wall -Wextra -Werror -include "$src/wheel/glibc_floor.h" -o "$tmp/ctor" "$here/ctor.c" \
    -Wl,--wrap=__libc_start_main "$wheel_dir/libc_start.a"
readelf -W --dyn-syms "$tmp/ctor" | grep -q '__libc_start_main@GLIBC_2\.\(2\.5\|17\) ' || fail "ctor binds another __libc_start_main"
target "$tmp/ctor" one two
if [ -z "$qemu" ]; then
    echo "-- 6. the floor check refuses make's own build (Debian's glibc)"
    mkdir "$tmp/native"
    cp "$build/libconvcache.so.1" "$tmp/native/"
    if python3 -B "$src/wheel/check_elf.py" --floor 2.17 "$tmp/native" >"$tmp/o" 2>&1; then
        cat "$tmp/o" >&2
        fail "check_elf passed a library built against this machine's glibc"
    fi
    grep -q "needs glibc 2\.[0-9]* > 2.17: .*pthread_create@GLIBC_2\.34" "$tmp/o" || { cat "$tmp/o" >&2; fail "check_elf's reason"; }
    ok "$(grep 'needs glibc' "$tmp/o" | cut -c1-150)..."
fi
echo "wheel-test: ok"
