#!/usr/bin/env python3
"""bench/gpu/report.py: the table of make gpu-check's v7-find part (bench/gpu/run.sh).

usage: report.py DIR RESULTS_MD

DIR holds what run.sh wrote: mode (a label: "GPU" or the stand-in's),
device.json (convcache scope --json), run1.txt and run2.txt (v7_find on a
fresh cache file, twice), par_a.txt, par_b.txt and par_a.log, par_b.log
(two copies started together on another fresh file, with the interposer's
per-call log). The PyTorch runs are other parts (bench/gpu/parts.sh).

Prints the table and puts it in RESULTS_MD between the v7 markers,
leaving the rest of the file (other checks' sections) as it is. Exits 1
when a check fails: run 2 must answer every find from the cache with the
same algorithm as run 1, and the two copies together must benchmark each
problem exactly once. The last line is the part's "figures: " line.
"""
import json
import os
import re
import sys

from section import write_section

PHASES = ("fwd", "bwd-data", "bwd-filter")


def read_find(path):
    """v7_find's output: {(phase, size, shape): (ms, algo, hit)}, stats, cudnn."""
    finds, stats, version = {}, None, None
    with open(path) as f:
        for line in f:
            w = line.split()
            if w and w[0] == "find" and len(w) == 7:
                finds[(w[1], int(w[2]), int(w[3]))] = (float(w[4]), int(w[5]), w[6])
            elif w and w[0] == "stats" and len(w) == 5:
                stats = dict(zip(("calls", "hits", "misses", "passthrough"), map(int, w[1:])))
            elif w and w[0] == "cudnn":
                version = w[1]
    if not finds:
        sys.exit("report.py: %s has no find lines" % path)
    return finds, stats, version


def read_log(path):
    """The interposer's log: {key: [hit|miss, ...]}."""
    keys = {}
    pat = re.compile(r"^convcache-preload: (\S+) (hit|miss) device \S+ key ([0-9a-f]+)")
    with open(path) as f:
        for line in f:
            m = pat.match(line)
            if m:
                keys.setdefault(m.group(1) + ":" + m.group(3), []).append(m.group(2))
    return keys


def main():
    d, results = sys.argv[1], sys.argv[2]
    mode = open(os.path.join(d, "mode")).read().strip()
    dev = json.load(open(os.path.join(d, "device.json")))["devices"][0]
    r1, s1, version = read_find(os.path.join(d, "run1.txt"))
    r2, s2, _ = read_find(os.path.join(d, "run2.txt"))
    failures = []
    out = ["## cuDNN v7 find API under the interposer (bench/gpu/run.sh)", ""]
    out.append("| | |")
    out.append("|---|---|")
    out.append("| mode | %s |" % mode)
    out.append("| device | %s (compute %s, %d SMs) |" % (dev["name"], dev["compute_capability"], dev["sms"]))
    drv = open(os.path.join(d, "driver")).read().strip() if os.path.exists(os.path.join(d, "driver")) else ""
    out.append("| driver | %s (CUDA %d.%d)%s |" % (
        dev["driver"], dev["driver"] // 1000, dev["driver"] % 1000 // 10, ", " + drv if drv else ""))
    out.append("| cuDNN | %s (built for CUDA %d.%d) |" % (version, dev["cudart"] // 1000, dev["cudart"] % 1000 // 10))
    out.append("| workload | ResNet-50's %d distinct convolutions x 3 input sizes, cudnnFind*AlgorithmEx |" % (
        len({k[2] for k in r1})))
    out.append("")
    out.append("Two runs in a row on a fresh cache file: time spent in find calls (wall, synchronized).")
    out.append("")
    out.append("| phase | finds | run 1 (ms) | run 2 (ms) | run 1 / run 2 | run 2 hits | run 2 misses | same algorithm |")
    out.append("|---|---:|---:|---:|---:|---:|---:|---|")
    for phase in PHASES + ("all",):
        keys = [k for k in r1 if phase == "all" or k[0] == phase]
        t1 = sum(r1[k][0] for k in keys)
        t2 = sum(r2[k][0] for k in keys if k in r2)
        hits = sum(1 for k in keys if k in r2 and r2[k][2] == "1")
        misses = sum(1 for k in keys if k in r2 and r2[k][2] == "0")
        differ = [k for k in keys if k not in r2 or r2[k][1] != r1[k][1]]
        ratio = ("%.0fx" % (t1 / t2)) if t2 > 0 else "-"
        out.append("| %s | %d | %.1f | %.2f | %s | %d | %d | %s |" % (
            phase, len(keys), t1, t2, ratio, hits, misses,
            "yes" if not differ else "no (%d differ)" % len(differ)))
        if phase == "all":
            if misses or hits != len(keys):
                failures.append("run 2: %d hits, %d misses of %d finds" % (hits, misses, len(keys)))
            if differ:
                failures.append("run 2 chose another algorithm than run 1 for %d problems" % len(differ))
    out.append("")
    out.append("Interposer counters: run 1 %s; run 2 %s." % (fmt_stats(s1), fmt_stats(s2)))
    if s1 and s1["misses"] != len(r1):
        failures.append("run 1 on a fresh file: %d misses for %d problems" % (s1["misses"], len(r1)))

    # Two copies started together on a fresh file.
    pa, sa, _ = read_find(os.path.join(d, "par_a.txt"))
    pb, sb, _ = read_find(os.path.join(d, "par_b.txt"))
    la, lb = read_log(os.path.join(d, "par_a.log")), read_log(os.path.join(d, "par_b.log"))
    keys = set(la) | set(lb)
    benchmarked = {k: la.get(k, []).count("miss") + lb.get(k, []).count("miss") for k in keys}
    once = all(n == 1 for n in benchmarked.values()) and len(keys) == len(pa) == len(pb)
    out.append("")
    out.append("Two copies started at the same moment (a barrier) on another fresh file: %d distinct "
               "problems, %d benchmarks in all (copy A: %s; copy B: %s); each problem benchmarked "
               "exactly once: %s." % (len(keys), sum(benchmarked.values()), fmt_stats(sa), fmt_stats(sb),
                                      "yes" if once else "NO"))
    if not once:
        failures.append("the two copies benchmarked %d problems other than once" %
                        sum(1 for n in benchmarked.values() if n != 1))

    table = "\n".join(out) + "\n"
    print(table)
    write_section(results, "v7", table)
    for f in failures:
        print("gpu-check: FAIL " + f, file=sys.stderr)
    t1 = sum(r1[k][0] for k in r1)
    t2 = sum(r2[k][0] for k in r1 if k in r2)
    hits = sum(1 for k in r1 if k in r2 and r2[k][2] == "1")
    print("figures: " + "; ".join(failures + ["run 2: %d of %d finds hits, %.1f ms against run 1's %.1f ms; "
                                              "two copies: each problem benchmarked once: %s" % (
                                                  hits, len(r1), t2, t1, "yes" if once else "no")]))
    sys.exit(1 if failures else 0)


def fmt_stats(s):
    if not s:
        return "no interposer"
    return "%d finds, %d hits, %d misses" % (s["calls"], s["hits"], s["misses"])



main()
