"""``convcache.enable()``: serve this process with no launcher.

``convcache run`` puts the interposer in ``LD_PRELOAD``. From inside
Python the same library can be loaded with ``RTLD_GLOBAL`` before the
library that links cuDNN (PyTorch's ``libtorch_cuda.so``): its references
to cuDNN's find and backend functions then bind to the interposer, which
comes before cuDNN in the global scope. Once cuDNN is loaded those
references may already be bound, so it is too late: enable() then warns
once and loads nothing.

What it cannot do: a library that opens cuDNN itself with ``dlopen`` and
takes its functions with ``dlsym`` (ONNX Runtime, TensorFlow, JAX) binds
``dlsym`` to glibc's, which was loaded before any Python code ran, so
that only ``convcache run`` (or ``python -m convcache run``) serves it.
Child processes are not served (``LD_PRELOAD`` is left as it is).
"""

import ctypes
import os
import threading
import warnings

from . import preload_path


class ConvcacheWarning(RuntimeWarning):
    """What ``convcache.enable()`` warns with when it cannot serve the process."""


_lock = threading.Lock()
_state = {"loaded": None, "warned": False}


def _cudnn_loaded():
    """Whether a cuDNN library is mapped into this process already."""
    try:
        with open("/proc/self/maps", "r", errors="replace") as f:
            for line in f:
                name = line.rstrip("\n").rsplit("/", 1)[-1]
                if name.startswith("libcudnn") and ".so" in name:
                    return True
    except OSError:
        pass
    return False


def _warn_once(msg):
    if _state["warned"]:
        return
    _state["warned"] = True
    warnings.warn("convcache.enable(): " + msg, ConvcacheWarning, stacklevel=3)


def enable(path=None, mode=None, verbose=None, preload=None):
    """Serve this process's cuDNN benchmarks from the cache, as ``convcache run`` would.

    Call it at the top of the script, before ``import torch``. It loads the
    interposer (``libconvcache_preload.so``) into this process with
    ``RTLD_GLOBAL``, so that PyTorch's references to cuDNN's find and
    backend functions bind to it. The options are ``convcache run``'s:

    * ``path``: the cache file (sets ``CONVCACHE_PATH``, made absolute);
    * ``mode``: ``"rw"``, ``"ro"``, ``"off"``, ``"recache"`` or ``"strict"``
      (sets ``CONVCACHE_MODE``);
    * ``verbose``: when true, log every intercepted call and print a summary
      at exit (sets ``CONVCACHE_PRELOAD_LOG=1`` and ``CONVCACHE_VERBOSE=1``).

    An option left out (None; verbose false) leaves its environment
    variables as they are, so they still apply. ``preload`` names another interposer file
    (default: the one inside this package).

    Returns True when the interposer is loaded (this call or an earlier
    one). If cuDNN is already loaded (``import torch`` came first) it
    warns once (``ConvcacheWarning``) that this process is not served,
    loads nothing and returns False; it never raises for that, nor when
    the library cannot be loaded.
    """
    with _lock:
        if _state["loaded"] is not None:
            return True
        if path is not None:
            os.environ["CONVCACHE_PATH"] = os.path.abspath(os.fspath(path))
        if mode is not None:
            os.environ["CONVCACHE_MODE"] = str(mode)
        if verbose:
            os.environ["CONVCACHE_PRELOAD_LOG"] = "1"
            os.environ["CONVCACHE_VERBOSE"] = "1"
        if _cudnn_loaded():
            _warn_once(
                "cuDNN is already loaded, so this process is not served; call "
                "convcache.enable() before import torch, or run the program under "
                "`convcache run -- python ...`")
            return False
        lib = preload if preload is not None else preload_path()
        try:
            _state["loaded"] = ctypes.CDLL(os.fspath(lib), mode=os.RTLD_NOW | os.RTLD_GLOBAL)
        except OSError as e:
            _warn_once("cannot load the interposer (%s); this process is not served" % e)
            return False
        return True
