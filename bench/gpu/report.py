#!/usr/bin/env python3
"""bench/gpu/report.py: the table of make gpu-check's v7 part (bench/gpu/run.sh).

usage: report.py DIR RESULTS_MD

DIR holds what run.sh wrote: mode (a label: "GPU" or the stand-in's),
device.json (convcache scope --json), run1.txt and run2.txt (v7_find on a
fresh cache file, twice), par_a.txt, par_b.txt and par_a.log, par_b.log
(two copies started together on another fresh file, with the interposer's
per-call log), and, when PyTorch ran, torch_default.txt and torch_default2.txt
(no convcache, twice), torch_v8cold.txt,
torch_v8warm.txt (the default path under convcache run, with the
interposer's per-graph log in the .err files), torch_cold.txt and
torch_warm.txt (--torch-v7) (torch_step.py).

Prints the table and puts it in RESULTS_MD between the v7 markers,
leaving the rest of the file (other checks' sections) as it is. Exits 1
when a check fails: run 2 must answer every find from the cache with the
same algorithm as run 1, and the two copies together must benchmark each
problem exactly once; on the default path, the warm run must time at most
one plan for every graph it meets.
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


def read_torch(path):
    if not os.path.exists(path):
        return None
    steps, info = [], {}
    err = path[:-len(".txt")] + ".err"
    if os.path.exists(err):
        text = open(err).read()
        m = re.search(r"convcache-preload: summary: finds (\d+), hits (\d+), misses (\d+)", text)
        if m:
            info["interposer"] = "%s finds, %s hits, %s misses" % m.groups()
        graphs = [(kind, int(b), int(t)) for kind, b, t in re.findall(
            r"^convcache-preload: v8 (served|new|stood aside|not a benchmark) built (\d+) timed (\d+)", text, re.M)]
        if graphs:
            info["graphs"] = graphs
            kinds = {}
            for kind, _, _ in graphs:
                kinds[kind] = kinds.get(kind, 0) + 1
            info["interposer"] = "v8: %d graphs (%s); plans built %d, timed %d; per graph at most %d built, %d timed" % (
                len(graphs), ", ".join("%d %s" % (n, k) for k, n in sorted(kinds.items())),
                sum(b for _, b, _ in graphs), sum(t for _, _, t in graphs),
                max(b for _, b, _ in graphs), max(t for _, _, t in graphs))
        # Why graphs stood aside, and plans whose config reads otherwise
        # (the interposer's log, CONVCACHE_PRELOAD_LOG=1).
        why = {}
        for r in re.findall(r"^convcache-preload: v8 stood aside built \d+ timed \d+ refused \d+ \((.*)\) key", text, re.M):
            why[r] = why.get(r, 0) + 1
        notes = len(re.findall(r"^convcache-preload: v8 note config and plan read differently", text, re.M))
        if why or notes:
            info["why"] = "; ".join("%d: %s" % (n, r) for r, n in sorted(why.items(), key=lambda x: -x[1]))
            if notes:
                info["why"] += ("; " if why else "") + "%d plans read otherwise than their configs" % notes
    with open(path) as f:
        for line in f:
            w = line.split()
            if w[:1] == ["step"] and len(w) == 4:
                steps.append((int(w[1]), float(w[2]), float(w[3])))
            elif w[:1] == ["path"]:
                info["path"] = w[1]
            elif w[:1] == ["torch"] and len(w) >= 4:
                info["torch"], info["cudnn"] = w[1], w[3]
    return steps, info


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

    runs = [(name, read_torch(os.path.join(d, "torch_%s.txt" % name)))
            for name in ("default", "default2", "v8cold", "v8warm", "cold", "warm")]
    out.append("")
    if all(r is None for _, r in runs):
        reason = open(os.path.join(d, "torch_skipped")).read().strip() if os.path.exists(
            os.path.join(d, "torch_skipped")) else "not run"
        out.append("PyTorch ResNet-50 training step: %s." % reason)
    else:
        info = next(r[1] for _, r in runs if r)
        out.append("PyTorch %s (cuDNN %s), ResNet-50 training step, torch.backends.cudnn.benchmark = True: "
                   "the first step at each input size runs the benchmarks." % (info.get("torch"), info.get("cudnn")))
        out.append("")
        out.append("| run | path | first step per size (ms) | first steps, sum (ms) | second steps, sum (ms) | interposer |")
        out.append("|---|---|---|---:|---:|---|")
        labels = {"default": "PyTorch default, no convcache", "default2": "PyTorch default, no convcache, again",
                  "v8cold": "convcache run, fresh file",
                  "v8warm": "convcache run, same file again",
                  "cold": "convcache run --torch-v7, fresh file", "warm": "convcache run --torch-v7, same file again"}
        for name, r in runs:
            if r is None:
                out.append("| %s | - | failed | | |" % labels[name])
                failures.append("the PyTorch run %s failed" % name)
                continue
            steps, i = r
            if name == "v8warm":
                over = [g for g in i.get("graphs", []) if g[2] > 1]
                if not i.get("graphs"):
                    failures.append("the warm default-path run logged no graph: was the interposer active?")
                elif over:
                    failures.append("the warm default-path run timed more than one plan for %d graphs" % len(over))
            out.append("| %s | %s | %s | %.1f | %.1f | %s |" % (
                labels[name], i.get("path", "?"), ", ".join("%d: %.1f" % (s, f) for s, f, _ in steps),
                sum(f for _, f, _ in steps), sum(x for _, _, x in steps), i.get("interposer", "-")))
        for name, r in runs:
            if r is not None and r[1].get("why"):
                out.append("")
                out.append("%s: stood aside, by reason: %s." % (labels[name], r[1]["why"]))
    table = "\n".join(out) + "\n"
    print(table)
    write_section(results, "v7", table)
    for f in failures:
        print("gpu-check: FAIL " + f, file=sys.stderr)
    sys.exit(1 if failures else 0)


def fmt_stats(s):
    if not s:
        return "no interposer"
    return "%d finds, %d hits, %d misses" % (s["calls"], s["hits"], s["misses"])



main()
