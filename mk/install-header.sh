#!/bin/sh
# Prints convcache_install.h for an installation whose libraries are in
# LIBDIR (the directory as installed, without DESTDIR), from TEMPLATE
# (cmake/convcache_install.h.in), for make install and cmake --install
# alike: LIBDIR becomes a C string literal, its backslashes and double
# quotes escaped.
#
#   sh mk/install-header.sh LIBDIR TEMPLATE > INCDIR/convcache_install.h
set -eu
libdir=${1:?usage: install-header.sh LIBDIR TEMPLATE}
template=${2:?usage: install-header.sh LIBDIR TEMPLATE}
CONVCACHE_LIBDIR_C=$(printf '%s' "$libdir" | sed 's/[\\"]/\\&/g') \
    awk 'BEGIN { v = ENVIRON["CONVCACHE_LIBDIR_C"]; k = "@CONVCACHE_LIBDIR_C@" }
         { while ((i = index($0, k)) > 0) $0 = substr($0, 1, i - 1) v substr($0, i + length(k)); print }' "$template"
