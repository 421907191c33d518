#!/usr/bin/env python3
"""Publishes a `make bench` run: copies build/bench's results and plots to
bench/results/ and puts its table, run line and targets into README.md
between the markers, so that the README shows what make bench printed.

usage: publish.py [BENCH_DIR]   (default build/bench)
"""
import os
import shutil
import sys

BEGIN = "<!-- make bench results: begin (bench/publish.py writes this part) -->"
END = "<!-- make bench results: end -->"
FILES = ("results.md", "results.json", "hit_latency.png", "hit_throughput_2threads.png",
         "load.png", "writers.png")


def main():
    src = sys.argv[1] if len(sys.argv) > 1 else "build/bench"
    for name in FILES:
        if not os.path.exists(os.path.join(src, name)):
            sys.exit("publish.py: %s/%s is missing: run make bench first" % (src, name))
    for name in FILES:
        shutil.copyfile(os.path.join(src, name), os.path.join("bench/results", name))
    table = open(os.path.join(src, "results.md")).read().strip()
    readme = open("README.md").read()
    if BEGIN not in readme or END not in readme:
        sys.exit("publish.py: README.md lacks the markers")
    head, rest = readme.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    with open("README.md.tmp", "w") as f:
        f.write(head + BEGIN + "\n" + table + "\n" + END + tail)
    os.replace("README.md.tmp", "README.md")
    print("publish.py: bench/results/ and README.md now show %s's run" % src)


main()
