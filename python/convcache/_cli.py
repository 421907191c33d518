"""The ``convcache`` console script: runs the command's binary in its place.

The binary stays inside the package (bin/convcache), beside lib/, so that
it finds the interposer and the library by its own absolute path; the
script pip puts on PATH replaces itself with it (exec), so the binary gets
the arguments, the signals and the exit status unchanged.
"""

import os
import sys

from . import executable


def main():
    exe = executable()
    try:
        os.execv(exe, ["convcache"] + sys.argv[1:])
    except OSError as e:
        sys.stderr.write(
            "convcache: cannot run %s: %s; reinstall the convcache wheel for this machine\n"
            % (exe, e.strerror or e)
        )
        return 126
