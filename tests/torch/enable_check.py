"""convcache.enable() with the real PyTorch (make torch-check;
tests/torch/run.sh, which reads the loader's LD_DEBUG=bindings log).

    python enable_check.py PRELOAD before   enable(), then import torch: True,
                                            no ConvcacheWarning, the interposer
                                            mapped
    python enable_check.py PRELOAD after    import torch, then enable() twice:
                                            False both times, one
                                            ConvcacheWarning naming import
                                            torch, no interposer mapped

PRELOAD: the interposer to load (the build tree's). Prints
"enable_check: ok ..." or exits 1.
"""
import os
import sys
import warnings


def mapped(name):
    with open("/proc/self/maps") as f:
        return any(os.path.basename(line.split()[-1]) == name for line in f if "/" in line)


def main():
    preload, when = sys.argv[1], sys.argv[2]
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        if when == "before":
            import convcache
            ok = convcache.enable(preload=preload)
            import torch  # noqa: F401
            mine = [w for w in got if issubclass(w.category, convcache.ConvcacheWarning)]
            fine = ok is True and not mine and mapped("libconvcache_preload.so")
        else:
            import torch  # noqa: F401
            import convcache
            first, second = convcache.enable(preload=preload), convcache.enable(preload=preload)
            mine = [w for w in got if issubclass(w.category, convcache.ConvcacheWarning)]
            fine = (first is False and second is False and len(mine) == 1 and
                    "before import torch" in str(mine[0].message) and not mapped("libconvcache_preload.so"))
    if not fine:
        print("enable_check: FAIL (%s): warnings %s, interposer mapped %s" %
              (when, [str(w.message) for w in got], mapped("libconvcache_preload.so")), file=sys.stderr)
        sys.exit(1)
    print("enable_check: ok (%s)%s" % (when, "".join(": " + str(w.message) for w in got
                                                       if w.category.__name__ == "ConvcacheWarning")))


main()
