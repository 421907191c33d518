#!/usr/bin/env python3
"""Tests of the GPU check's bars (make gpu-check-standin runs them).

report.py (the v7-find part): each case writes a result directory as
run.sh would, made up to break one rule, and expects report.py to exit 1
naming it; the good case exits 0 and leaves the other sections of the
results file as they were.

judge.py (the other parts, bars.py's bars): each bar is made to fail once
on made-up outputs, as parts.sh would leave them, and a good part passes.
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


def case(name, want_rc, want_text, **override):
    files = {"mode": "TEST\n", "device.json": json.dumps(DEVICE), "run1.txt": finds(False),
             "run2.txt": finds(True), "par_a.txt": finds(False), "par_b.txt": finds(True),
             "par_a.log": log(["miss"] * 3), "par_b.log": log(["hit"] * 3)}
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
    ]
    results += judge_cases()
    results.append(parts_judge_themselves())
    print("report_test: %d passed, %d failed" % (results.count(True), results.count(False)))
    sys.exit(0 if all(results) else 1)


def parts_judge_themselves():
    """Each part of parts.sh is judged under its own name, so that its table
    goes to its own section of RESULTS.md (bf16-cl once judged itself as
    warm-default, and its table replaced warm-default's)."""
    import re
    bad, part = [], None
    for line in open(os.path.join(HERE, "parts.sh")):
        m = re.match(r"^([a-z0-9-]+)\)", line)
        if m:
            part = m.group(1)
        m = re.search(r"\bjudge ([a-z0-9-]+) ", line)
        if m and part and m.group(1) != part:
            bad.append("%s judges itself as %s" % (part, m.group(1)))
    ok = not bad and part is not None
    print("%s  parts.sh: each part is judged under its own name%s" % ("ok  " if ok else "FAIL",
                                                                     ": " + "; ".join(bad) if bad else ""))
    return ok


# ---- judge.py: each bar made to fail once -----------------------------------

def graph_lines(kind, n, built=1, timed=1, why=None, first=0):
    return "".join("convcache-preload: v8 %s built %d timed %d refused 0%s key %02x\n" % (
        kind, built, timed, " (%s)" % why if why else "", first + i) for i in range(n))


TIME_LINE = ("convcache-preload: v8 time ms: calls=100.000 own=1.000 heur=5.000 fin_stored=4.000 fin_other=0.000 "
             "exec_warmup=40.000 exec_timing=40.000 exec_other=0.000 lease_wait=0.000 cache=1.000 desc=4.000 "
             "setup=5.000 helper_cache=0.000\n")


def v8sum(graphs, hits=0, misses=0, aside=0, waited=0, stored=0):
    return ("convcache-preload: v8: graphs %d, hits %d, misses %d, stand-asides %d, from other builders %d, "
            "stored %d, builds deferred 0, timings refused 0, strict refusals 0, not served 0\n" % (
                graphs, hits, misses, aside, waited, stored))


def torch_out(first, median, wall=10.0, sizes=(160, 224, 288)):
    lines = ["mark import 2.0", "mark model 4.0"]
    lines += ["step %d %.1f 30.0" % (s, first / len(sizes)) for s in sizes]
    lines += ["mark first_steps 6.0", "steady 288 30 %.3f %.3f" % (median, median * 1.1), "peak_mem_mb 5000.0",
              "path v8", "torch 2.11.0 cudnn 91900", "wall %.3f" % wall]
    return "\n".join(lines) + "\n"


COLD = graph_lines("new", 4, 9, 9)
WARM = graph_lines("served", 4) + TIME_LINE
GOOD = {
    "warm-default": {"cold.err": COLD, "warm.err": WARM, "cold.txt": "wall 1.0\n", "warm.txt": "wall 1.0\n"},
    "procs4": {"p1.err": graph_lines("new", 4, 9, 9), "p2.err": graph_lines("served", 4),
               "p3.err": graph_lines("served", 4), "p4.err": graph_lines("served", 4)},
    "resnet": {"floor.txt": torch_out(1000, 50), "default1.txt": torch_out(9000, 50),
               "default2.txt": torch_out(9100, 50.5), "warm1.txt": torch_out(1100, 50.2),
               "warm2.txt": torch_out(1150, 50.1), "warm2.err": WARM},
    "sdpa": {"without.txt": "sdpa abc def 4x8x512x64\n", "without2.txt": "sdpa abc def 4x8x512x64\n",
             "with.txt": "sdpa abc def 4x8x512x64\n", "with.err": v8sum(0)},
    "torch-v7": {"warm.err": "convcache-preload: summary: finds 207, hits 207, misses 0, passthrough 0\n",
                 "warm.txt": torch_out(900, 60)},
    "multiscale": {"without.txt": "epoch 1 9000.0\nepoch 2 300.0\n", "cold.txt": "epoch 1 9000.0\nepoch 2 300.0\n",
                   "warm.txt": "epoch 1 800.0\nepoch 2 300.0\n", "warm.err": WARM},
    "v8-check": {"v8.txt": "| all | 207 | 1 | 1 |\nv8_check: PASS\n"},
    "v8-dlopen": {"h1.txt": finds(False) + "lookup handle libconvcache_preload.so\n",
                  "h2.txt": finds(True) + "lookup handle libconvcache_preload.so\n"},
    "onnxruntime": {"cold.txt": "ort 1.31.1 providers CUDAExecutionProvider\nfirst_ms 900.0\ndigest 89ab\n",
                    "warm.txt": "ort 1.31.1 providers CUDAExecutionProvider\nfirst_ms 40.0\ndigest 89ab\n",
                    "cold.err": "convcache-preload: summary: finds 6, hits 0, misses 6, passthrough 0\n",
                    "warm.err": "convcache-preload: summary: finds 6, hits 6, misses 0, passthrough 0\n"},
}
GOOD["enable-default"] = dict(GOOD["warm-default"])
GOOD["bf16-cl"] = dict(GOOD["warm-default"])


def judge_case(name, part, want_rc, want_text, **override):
    files = dict(GOOD[part], **override)
    with tempfile.TemporaryDirectory() as d:
        for f, text in files.items():
            with open(os.path.join(d, f), "w") as fh:
                fh.write(text)
        env = dict(os.environ, KIT_RESULTS=os.path.join(d, "results.md"))
        r = subprocess.run([sys.executable, os.path.join(HERE, "judge.py"), part, d], capture_output=True,
                           text=True, env=env)
    last = [l for l in r.stdout.splitlines() if l.startswith("figures: ")]
    ok = r.returncode == want_rc and last and want_text in last[-1]
    print("%s  judge %s: %s" % ("ok  " if ok else "FAIL", part, name))
    if not ok:
        print(r.stdout + r.stderr)
    return bool(ok)


def judge_cases():
    aside = graph_lines("stood aside", 4, 9, 9, why="the stored choice's plan failed to run")
    expected = graph_lines("stood aside", 4, 9, 9, why="a stored choice was offered; the host kept no plan of it")
    return [
        judge_case("a good warm run passes", "warm-default", 0, "4 served"),
        judge_case("a good bf16 channels_last warm run passes", "bf16-cl", 0, "4 served"),
        judge_case("served graphs that build 9 plans fail", "warm-default", 1, "built or timed more than one plan",
                   **{"warm.err": graph_lines("served", 4, 9, 9)}),
        judge_case("a warm run that logs 1 of 4 graphs fails", "warm-default", 1, "logged 1 graphs of the 4",
                   **{"warm.err": graph_lines("served", 1)}),
        judge_case("a graph standing aside for an unexpected reason fails", "warm-default", 1,
                   "4 graphs stood aside: the stored choice's plan failed to run", **{"warm.err": aside}),
        judge_case("a graph standing aside for an expected reason passes", "warm-default", 0, "4 stood aside",
                   **{"warm.err": expected}),
        judge_case("a warm run that benchmarks the cold run's graphs again fails", "warm-default", 1,
                   "4 graphs the cold run benchmarked were benchmarked again (new) in the warm run",
                   **{"warm.err": graph_lines("new", 4, 9, 9)}),
        judge_case("a warm run meeting graphs the cold run never saw as new passes", "warm-default", 0, "4 new",
                   **{"warm.err": graph_lines("served", 4) + graph_lines("new", 4, 9, 9, first=4)}),
        judge_case("a good run under enable() with no floor passes", "enable-default", 0,
                   "no benchmark-off floor in this kit run"),
        judge_case("under enable(), warm first steps 1.1x resnet's floor pass", "enable-default", 0, "(1.10x)",
                   **{"floor.txt": torch_out(1000, 50), "warm.txt": torch_out(1100, 50)}),
        judge_case("under enable(), warm first steps 1.4x resnet's floor fail", "enable-default", 1,
                   "1.40x the floor's 1000 ms", **{"floor.txt": torch_out(1000, 50), "warm.txt": torch_out(1400, 50)}),
        judge_case("under enable(), a warm run that benchmarks again fails", "enable-default", 1,
                   "benchmarked again", **{"warm.err": graph_lines("new", 4, 9, 9)}),
        judge_case("v7_find --handle: run 2 all hits, same algorithms, passes", "v8-dlopen", 0,
                   "run 2 3 of 3 finds hits, 0 misses (find taken by handle libconvcache_preload.so)"),
        judge_case("v7_find --handle: run 2 that reaches cuDNN's find fails", "v8-dlopen", 1,
                   "run 2: 3 of 3 finds reached the interposer, 0 hits, 3 misses", **{"h2.txt": finds(False)}),
        judge_case("v7_find --handle: finds that never reach the interposer fail", "v8-dlopen", 1,
                   "run 1: no find went through the interposer",
                   **{"h1.txt": finds(False).replace("stats 3 0 3 0", "stats -"),
                      "h2.txt": finds(True).replace("stats 3 3 0 0", "stats -")}),
        judge_case("v7_find --handle: another algorithm in run 2 fails", "v8-dlopen", 1, "another algorithm",
                   **{"h2.txt": finds(True, algos=(1, 2, 4))}),
        judge_case("torch_like_dl's warm run that builds 9 plans fails v8-dlopen", "v8-dlopen", 1,
                   "built or timed more than one plan",
                   **{"cold.err": COLD, "warm.err": graph_lines("served", 4, 9, 9)}),
        judge_case("ONNX Runtime: run 2 all hits, same output, passes", "onnxruntime", 0, "6 finds, 6 hits"),
        judge_case("ONNX Runtime: run 2 that benchmarks again fails", "onnxruntime", 1, "0 of 6 finds were hits",
                   **{"warm.err": "convcache-preload: summary: finds 6, hits 0, misses 6, passthrough 0\n"}),
        judge_case("ONNX Runtime: outputs that differ fail", "onnxruntime", 1, "outputs (run 1, run 2) differ",
                   **{"warm.txt": "ort 1.31.1 providers CUDAExecutionProvider\nfirst_ms 40.0\ndigest 89ac\n"}),
        judge_case("ONNX Runtime: nothing through the interposer fails", "onnxruntime", 1,
                   "no find and no graph reached the interposer", **{"cold.err": "", "warm.err": ""}),
        judge_case("good interleaved ResNet-50 runs pass", "resnet", 0, "(1.13x)"),
        judge_case("warm first steps slower than 1.25x the floor fail", "resnet", 1, "the floor's",
                   **{"warm1.txt": torch_out(1500, 50.2), "warm2.txt": torch_out(1400, 50.1)}),
        judge_case("a warm steady state 5% slower than PyTorch's fails", "resnet", 1, "+5.",
                   **{"warm1.txt": torch_out(1100, 52.8), "warm2.txt": torch_out(1150, 52.7)}),
        judge_case("4 processes benchmarking each graph once pass", "procs4", 0, "4 graphs, 4 benchmarks"),
        judge_case("a graph benchmarked by two processes fails", "procs4", 1, "1 graphs benchmarked by more than one",
                   **{"p2.err": graph_lines("new", 1, 9, 9) + graph_lines("served", 3, first=1)}),
        judge_case("a graph nobody benchmarked fails", "procs4", 1, "1 graphs benchmarked by none",
                   **{"p1.err": graph_lines("new", 3, 9, 9) + graph_lines("served", 1, first=3)}),
        judge_case("identical SDPA outputs, nothing stored, pass", "sdpa", 0, "outputs equal, gradients equal"),
        judge_case("SDPA outputs that differ fail", "sdpa", 1, "SDPA outputs differ with the interposer",
                   **{"with.txt": "sdpa abd def 4x8x512x64\n"}),
        judge_case("SDPA gradients that differ fail", "sdpa", 1, "SDPA gradients differ with the interposer",
                   **{"with.txt": "sdpa abc deg 4x8x512x64\n"}),
        judge_case("SDPA gradients that do not repeat without the interposer are not compared", "sdpa", 0,
                   "gradients not compared", **{"without2.txt": "sdpa abc dex 4x8x512x64\n",
                                                "with.txt": "sdpa abc deg 4x8x512x64\n"}),
        judge_case("SDPA graphs counted as stood aside fail", "sdpa", 1, "1 graphs counted as stood aside",
                   **{"with.err": v8sum(1, aside=1)}),
        judge_case("SDPA choices stored fail", "sdpa", 1, "2 choices stored", **{"with.err": v8sum(2, stored=2)}),
        judge_case("--torch-v7 warm with every find a hit passes", "torch-v7", 0, "207 hits"),
        judge_case("--torch-v7 warm with 0 hits fails", "torch-v7", 1, "0 of 207 finds were hits",
                   **{"warm.err": "convcache-preload: summary: finds 207, hits 0, misses 207, passthrough 0\n"}),
        judge_case("multi-scale warm serving one plan per graph passes", "multiscale", 0, "warm 800 + 300"),
        judge_case("multi-scale warm benchmarking again fails", "multiscale", 1, "more than one plan",
                   **{"warm.err": graph_lines("served", 4, 9, 9)}),
        judge_case("v8_check failing fails", "v8-check", 1, "v8_check did not pass",
                   **{"v8.txt": "v8_check: FAIL\n"}),
        judge_case("a part whose outputs are missing fails", "resnet", 1, "could not be read",
                   **{"floor.txt": "nothing\n"}),
    ]


main()
