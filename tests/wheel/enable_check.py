"""convcache.enable() against a library linked to the stand-in cuDNN
(build/tests/preload/libenable_client.so, as libtorch_cuda.so is to cuDNN).

    python enable_check.py CLIENT before   enable() then load CLIENT: each of
                                           its references to the twelve
                                           functions the interposer serves
                                           binds to the interposer; no
                                           warning; enable() again is True
    python enable_check.py CLIENT after    load CLIENT (and so cuDNN), then
                                           enable() twice: False, one
                                           ConvcacheWarning that says to call
                                           it before import torch; nothing
                                           binds to the interposer, and no
                                           interposer is loaded

Prints one line per check; exits 1 on the first failure.
"""

import ctypes
import os
import sys
import warnings

import convcache


def fail(msg):
    print("enable_check: FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


def bindings(client):
    lib = ctypes.CDLL(client)
    lib.bound.restype = ctypes.c_char_p
    out = []
    i = 0
    while True:
        name = lib.bound(i)
        if name is None:
            return out
        out.append(os.path.basename(name.decode()))
        i += 1


def mapped(name):
    with open("/proc/self/maps") as f:
        return any(line.rstrip().endswith("/" + name) for line in f)


def main():
    client, when = sys.argv[1], sys.argv[2]
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        if when == "before":
            if not convcache.enable(path=os.environ.get("CONVCACHE_PATH")):
                fail("enable() returned False with no cuDNN loaded")
            where = bindings(client)
            if convcache.enable() is not True:
                fail("a second enable() is not True")
            if len(where) != 12 or set(where) != {"libconvcache_preload.so"}:
                fail("after enable(), the client's references bind to %s" % where)
            if got:
                fail("enable() warned: %s" % [str(w.message) for w in got])
            print("ok   enable() before the cuDNN client: its 12 references bind to the interposer")
        else:
            where = bindings(client)
            first = convcache.enable(mode="ro")
            second = convcache.enable()
            if first is not False or second is not False:
                fail("enable() after cuDNN was loaded returned %r, %r" % (first, second))
            mine = [w for w in got if issubclass(w.category, convcache.ConvcacheWarning)]
            if len(mine) != 1 or "before import torch" not in str(mine[0].message):
                fail("warnings: %s" % [str(w.message) for w in got])
            if set(where) != {"libcudnn.so.9"} or mapped("libconvcache_preload.so"):
                fail("bindings %s; interposer loaded: %s" % (where, mapped("libconvcache_preload.so")))
            print("ok   enable() after cuDNN was loaded: False, one warning (%s), nothing bound"
                  % mine[0].message)


main()
