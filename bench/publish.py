#!/usr/bin/env python3
"""Publishes a `make bench` run: copies build/bench's results and plots to
bench/results/, puts its full table, run line and targets into
docs/performance.md and its summary into README.md, each between its
markers, so that both show what make bench printed.

usage: publish.py [BENCH_DIR]   (default build/bench)
"""
import os
import shutil
import sys

FILES = ("results.md", "summary.md", "results.json", "hit_latency.png", "hit_latency_random.png",
         "hit_throughput_2threads.png", "load.png", "writers.png", "cold_warm.png")
# (file, what goes between its markers, the marker's name)
PLACES = (("docs/performance.md", "results.md", "make bench results"),
          ("README.md", "summary.md", "make bench summary"))


def place(doc, text, name):
    begin = "<!-- %s: begin (bench/publish.py writes this part) -->" % name
    end = "<!-- %s: end -->" % name
    body = open(doc).read()
    if body.count(begin) != 1 or body.count(end) != 1:
        sys.exit("publish.py: %s lacks the markers %r and %r" % (doc, begin, end))
    head, rest = body.split(begin, 1)
    _, tail = rest.split(end, 1)
    with open(doc + ".tmp", "w") as f:
        f.write(head + begin + "\n" + text + "\n" + end + tail)
    os.replace(doc + ".tmp", doc)


def main():
    src = sys.argv[1] if len(sys.argv) > 1 else "build/bench"
    for name in FILES:
        if not os.path.exists(os.path.join(src, name)):
            sys.exit("publish.py: %s/%s is missing: run make bench first" % (src, name))
    for name in FILES:
        shutil.copyfile(os.path.join(src, name), os.path.join("bench/results", name))
    for doc, name, marker in PLACES:
        place(doc, open(os.path.join(src, name)).read().strip(), marker)
    print("publish.py: bench/results/, docs/performance.md and README.md now show %s's run" % src)


main()
