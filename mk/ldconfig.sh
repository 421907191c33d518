#!/bin/sh
# How programs find an installed libconvcache.so.1, for `make install` and
# `cmake --install` alike.
#
#   sh mk/ldconfig.sh pc-rpath LIBDIR
#       prints what convcache.pc adds to its Libs: " -Wl,-rpath,${libdir}"
#       when the dynamic loader does not search LIBDIR, nothing when it does
#   sh mk/ldconfig.sh after-install LIBDIR [DESTDIR]
#       into a directory the loader searches, as root, without DESTDIR: runs
#       ldconfig (ld.so finds a new library there only through its cache);
#       otherwise says what to do
set -u
mode=${1:?usage: ldconfig.sh pc-rpath|after-install LIBDIR [DESTDIR]}
libdir=${2:?usage: ldconfig.sh pc-rpath|after-install LIBDIR [DESTDIR]}
destdir=${3:-}

ldconfig=$(command -v ldconfig || echo /sbin/ldconfig)

# searched DIR: the loader looks in DIR (its built-in directories, or one
# listed in /etc/ld.so.conf).
searched() {
    want=$(realpath -m "$1")
    for d in /lib /usr/lib /lib64 /usr/lib64 \
        $("$ldconfig" -v -N -X 2>/dev/null | sed -n 's|^\(/[^:]*\):.*|\1|p'); do
        [ "$(realpath -m "$d")" = "$want" ] && return 0
    done
    return 1
}

case $mode in
pc-rpath)
    searched "$libdir" || printf ' -Wl,-rpath,${libdir}'
    ;;
after-install)
    if ! searched "$libdir"; then
        echo "convcache: $libdir is not in the dynamic loader's search path: link programs with" \
            "-Wl,-rpath,$libdir (\`pkg-config --libs convcache\` includes it) or run them with" \
            "LD_LIBRARY_PATH=$libdir"
    elif [ -n "$destdir" ]; then
        echo "convcache: installed under DESTDIR=$destdir: run ldconfig once the files are in $libdir"
    elif [ "$(id -u)" = 0 ]; then
        "$ldconfig" && echo "convcache: ran ldconfig: programs find libconvcache.so.1 in $libdir"
    else
        echo "convcache: run \`sudo ldconfig\` so that programs find libconvcache.so.1 in $libdir"
    fi
    ;;
*)
    echo "ldconfig.sh: unknown mode $mode" >&2
    exit 2
    ;;
esac
