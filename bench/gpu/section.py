#!/usr/bin/env python3
"""Writes one part's section of the GPU check's results file.

Each part of `make gpu-check` (v7: bench/gpu/report.py, v8: mk/v8.mk) owns
the text between its markers and leaves the rest of the file as it is.

usage: section.py RESULTS NAME TABLE_FILE
"""
import os
import sys


def markers(name):
    return ("<!-- gpu-check %s: begin -->" % name, "<!-- gpu-check %s: end -->" % name)


def write_section(path, name, table):
    begin, end = markers(name)
    text = open(path).read() if os.path.exists(path) else "# GPU check results\n"
    section = begin + "\n" + table.rstrip("\n") + "\n" + end
    if begin in text and end in text:
        text = text[:text.index(begin)] + section + text[text.index(end) + len(end):]
    else:
        text = text.rstrip("\n") + "\n\n" + section + "\n"
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit(__doc__.strip())
    write_section(sys.argv[1], sys.argv[2], open(sys.argv[3]).read())
