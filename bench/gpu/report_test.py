#!/usr/bin/env python3
"""Tests of bench/gpu/report.py's checks (make gpu-check STANDIN=1 runs them).

Each case writes a result directory as run.sh would, made up to break one
rule, and expects report.py to exit 1 naming it; the good case exits 0 and
leaves the other sections of the results file as they were.
"""
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
DEVICE = {"devices": [{"name": "Test GPU", "compute_capability": "9.0", "sms": 132, "driver": 13000,
                       "cudart": 13000}]}
KEYS = [("fwd", 160, 0), ("bwd-data", 160, 0), ("bwd-filter", 160, 0)]


def finds(hit, algos=(1, 2, 3)):
    lines = ["find %s %d %d %.3f %d %s" % (p, s, i, 0.1 if hit else 5.0, a, "1" if hit else "0")
             for (p, s, i), a in zip(KEYS, algos)]
    n = len(KEYS)
    lines.append("stats %d %d %d 0" % (n, n if hit else 0, 0 if hit else n))
    lines.append("cudnn 92801")
    return "\n".join(lines) + "\n"


def log(kinds):
    return "".join("convcache-preload: %s-ex %s device 0 key %02x\n" % (p, k, i)
                   for i, ((p, _, _), k) in enumerate(zip(KEYS, kinds)))


def v8log(kind, built, timed):
    return "".join("convcache-preload: v8 %s built %d timed %d refused 0 key %02x\n" % (kind, built, timed, i)
                   for i in range(3))


def torch_run(path):
    return "step 160 900.0 30.0\npath %s\ntorch 2.15.0 cudnn 92600\n" % path


TORCH = {"torch_default.txt": torch_run("v8"), "torch_default2.txt": torch_run("v8"), "torch_v8cold.txt": torch_run("v8"),
         "torch_v8cold.err": v8log("new", 9, 9), "torch_v8warm.txt": torch_run("v8"),
         "torch_v8warm.err": v8log("served", 1, 1), "torch_cold.txt": torch_run("v7"),
         "torch_warm.txt": torch_run("v7")}


def case(name, want_rc, want_text, **override):
    files = {"mode": "TEST\n", "device.json": json.dumps(DEVICE), "run1.txt": finds(False),
             "run2.txt": finds(True), "par_a.txt": finds(False), "par_b.txt": finds(True),
             "par_a.log": log(["miss"] * 3), "par_b.log": log(["hit"] * 3),
             "torch_skipped": "not run\n"}
    files.update(override)
    with tempfile.TemporaryDirectory() as d:
        for f, text in files.items():
            with open(os.path.join(d, f), "w") as fh:
                fh.write(text)
        results = os.path.join(d, "RESULTS.md")
        with open(results, "w") as fh:
            fh.write("# r\n\n<!-- other: begin -->\nkept\n<!-- other: end -->\n")
        p = subprocess.run([sys.executable, os.path.join(HERE, "report.py"), d, results],
                           capture_output=True, text=True)
        kept = "kept" in open(results).read()
    ok = p.returncode == want_rc and want_text in p.stdout + p.stderr and kept
    print("%s  %s" % ("ok  " if ok else "FAIL", name))
    if not ok:
        print(p.stdout + p.stderr)
    return ok


def main():
    results = [
        case("a good run passes", 0, "each problem benchmarked exactly once: yes"),
        case("run 2 that benchmarks again fails", 1, "run 2: 0 hits, 3 misses", **{"run2.txt": finds(False)}),
        case("run 2 with another algorithm fails", 1, "another algorithm",
             **{"run2.txt": finds(True, algos=(1, 2, 4))}),
        case("a problem both copies benchmarked fails", 1, "other than once",
             **{"par_b.log": log(["miss", "hit", "hit"])}),
        case("a problem neither copy benchmarked fails", 1, "other than once",
             **{"par_a.log": log(["hit", "miss", "miss"])}),
        case("a warm default-path run timing one plan per graph passes", 0, "3 served", **TORCH),
        case("a warm default-path run that benchmarks again fails", 1, "timed more than one plan",
             **dict(TORCH, **{"torch_v8warm.err": v8log("new", 9, 9)})),
        case("a warm default-path run without the interposer's log fails", 1, "logged no graph",
             **dict(TORCH, **{"torch_v8warm.err": ""})),
        case("graphs that stood aside are counted by reason", 1, "stood aside, by reason: 3: heuristics offered no "
             "stored choice; 1 plans read otherwise than their configs",
             **dict(TORCH, **{"torch_v8warm.err": v8log("stood aside", 9, 9).replace(
                 "refused 0 key", "refused 0 (heuristics offered no stored choice) key") +
                 "convcache-preload: v8 note config and plan read differently: eng1 ws=0, eng1_k2=3 ws=0 key 00\n"})),
    ]
    print("report_test: %d passed, %d failed" % (results.count(True), results.count(False)))
    sys.exit(0 if all(results) else 1)


main()
