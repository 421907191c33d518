"""convcache: a persistent cache of cuDNN convolution algorithm choices.

This package is how the wheel carries convcache's native parts; it has no
Python API for the cache itself. Installing it gives you

* ``convcache.enable()``: called at the top of a script, before ``import
  torch``, it serves the process as ``convcache run`` would, with no
  launcher (``enable(path=..., mode=..., verbose=...)``; see its help);

* the ``convcache`` command (``convcache run -- python train.py`` runs a
  program under the cuDNN interposer, so that its benchmarks are kept
  across runs; ``convcache help`` lists the rest), also reachable as
  ``python -m convcache``;
* ``libconvcache.so.1``, the C library, with its headers, a CMake package
  and a pkg-config file, for C and C++ programs: ``convcache config
  --cmakedir`` and ``convcache config --cflags --libs`` print where they
  are, as ``pybind11 --cmakedir`` does;
* the interposer ``libconvcache_preload.so`` and the engine-choice library
  ``libconvcache_engine.so.1``.

The package directory is laid out as an install prefix (``bin/``,
``lib/``, ``include/``, ``lib/cmake/convcache``, ``lib/pkgconfig``). The
path functions below return absolute paths into it; they check nothing,
and never load a library into this interpreter (only enable() does).
"""

import os

__all__ = [
    "__version__",
    "enable",
    "ConvcacheWarning",
    "prefix",
    "executable",
    "library_path",
    "preload_path",
    "engine_library_path",
    "include_dir",
    "cmake_dir",
    "pkgconfig_dir",
]

#: The version of the library and the command (CONVCACHE_VERSION_STRING in
#: convcache.h; ``convcache --version`` prints the same).
__version__ = "@VERSION@"

_PREFIX = os.path.dirname(os.path.abspath(__file__))


def prefix():
    """The installation prefix inside this package (its directory)."""
    return _PREFIX


def executable():
    """The ``convcache`` command's binary (the console script runs it)."""
    return os.path.join(_PREFIX, "bin", "convcache")


def library_path():
    """``libconvcache.so.1``, the C library (its soname)."""
    return os.path.join(_PREFIX, "lib", "libconvcache.so.1")


def preload_path():
    """``libconvcache_preload.so``, the cuDNN interposer ``convcache run`` preloads."""
    return os.path.join(_PREFIX, "lib", "libconvcache_preload.so")


def engine_library_path():
    """``libconvcache_engine.so.1``, the library that records cuDNN engine choices."""
    return os.path.join(_PREFIX, "lib", "libconvcache_engine.so.1")


def include_dir():
    """The directory of ``convcache.h``, ``convcache.hpp`` and the other headers."""
    return os.path.join(_PREFIX, "include")


def cmake_dir():
    """The CMake package's directory: pass it as ``-Dconvcache_DIR=...``."""
    return os.path.join(_PREFIX, "lib", "cmake", "convcache")


def pkgconfig_dir():
    """The directory of ``convcache.pc``: add it to ``PKG_CONFIG_PATH``."""
    return os.path.join(_PREFIX, "lib", "pkgconfig")


from ._enable import ConvcacheWarning, enable  # noqa: E402 (needs preload_path)
