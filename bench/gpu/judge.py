#!/usr/bin/env python3
"""bench/gpu/judge.py: one part of the GPU check read and judged
(bench/gpu/parts.sh calls it with the part's directory).

usage: judge.py PART DIR

Prints the part's table, writes it to its section of $KIT_RESULTS (when
set; bench/gpu/section.py), then the "figures: " line kit.sh shows, and
exits 1 when a bar (bench/gpu/bars.py) is missed.
"""
import os
import statistics
import sys

import bars
from section import write_section


def p(d, name):
    return os.path.join(d, name)


def proc_row(label, t):
    """One process: wall, marks, first steps, steady state, peak memory."""
    m = t["marks"]
    st = t["steady"]
    return "| %s | %s | %s | %s | %s | %s | %s |" % (
        label, "%.1f" % t["wall"] if t["wall"] is not None else "-",
        " / ".join("%.1f" % m[k] if k in m else "-" for k in ("import", "model", "first_steps")),
        "%.0f" % t["first_ms"] if t["first_ms"] is not None else
        (" + ".join("%.0f" % e for e in t["epochs"]) if t["epochs"] else "-"),
        "%.2f / %.2f (%d)" % (st["median"], st["p90"], st["n"]) if st else "-",
        "%.0f" % t["peak_mb"] if t["peak_mb"] is not None else "-", t.get("note", ""))


PROC_HEAD = ["| run | wall, exec to exit (s) | marks: import / model ready / first steps done (s) | "
             "first steps (ms) | steady step median / p90, ms (steps) | peak GPU MB | |",
             "|---|---:|---|---:|---:|---:|---|"]


def graphs_line(info):
    kinds, why = bars.outcomes(info["graphs"])
    served = [g for g in info["graphs"] if g["kind"] == "served"]
    text = "%d served, %d stood aside, %d new, %d not a benchmark" % (
        kinds.get("served", 0), kinds.get("stood aside", 0), kinds.get("new", 0), kinds.get("not a benchmark", 0))
    if why:
        text += " (aside: %s)" % "; ".join("%d %s" % (n, r) for r, n in sorted(why.items(), key=lambda x: -x[1]))
    if served:
        text += "; most by a served graph: built %d, timed %d" % (
            max(g["built"] for g in served), max(g["timed"] for g in served))
    return text


def torch_rows(d, names):
    rows = []
    for label, name in names:
        t = bars.read_torch(p(d, name + ".txt")) if os.path.exists(p(d, name + ".txt")) else None
        if t and t["marks"]:  # PyTorch's (a stand-in program prints none)
            rows.append(proc_row(label, t))
    return PROC_HEAD + rows if rows else []


def default_path(d, cold_name, warm_name, title):
    cold = bars.read_interposer(p(d, cold_name + ".err"))
    warm = bars.read_interposer(p(d, warm_name + ".err"))
    fails = (bars.bar_warm_logged(cold["graphs"], warm["graphs"]) + bars.bar_warm_served(cold["graphs"], warm["graphs"]) +
             bars.bar_served_one_plan(warm["graphs"]) + bars.bar_aside_expected(warm["graphs"]))
    out = ["### %s" % title, "", "| run | graphs | time in the interposer, by phase (ms) |", "|---|---|---|"]
    for label, i in (("cold", cold), ("warm", warm)):
        out.append("| %s | %s | %s |" % (label, graphs_line(i), bars.fmt_time(i["time"])))
    out += [""] + torch_rows(d, (("cold", cold_name), ("warm", warm_name)))
    figures = "warm: %s; %s" % (graphs_line(warm), bars.fmt_time(warm["time"]))
    return out, fails, figures


def part_warm_default(d):
    return default_path(d, "cold", "warm", "The default path under convcache run: cold, then warm")


def part_bf16_cl(d):
    return default_path(d, "cold", "warm", "bf16 autocast with channels_last under convcache run: cold, then warm")


def part_enable_default(d):
    out, fails, figures = default_path(d, "cold", "warm", "The default path under convcache.enable(): cold, then warm")
    if os.path.exists(p(d, "floor.txt")):  # resnet's, when this kit ran it (on a GPU)
        warm_first = bars.read_torch(p(d, "warm.txt"))["first_ms"]
        floor_first = bars.read_torch(p(d, "floor.txt"))["first_ms"]
        fails += bars.bar_first_vs_floor(warm_first, floor_first)
        if warm_first and floor_first:
            figures += "; first steps: floor %.0f ms (resnet's), warm %.0f ms (%.2fx)" % (
                floor_first, warm_first, warm_first / floor_first)
        out += ["", "Warm first steps against the benchmark-off floor of the resnet part: %s ms against %s ms." % (
            warm_first, floor_first)]
    else:
        figures += "; no benchmark-off floor in this kit run"
    return out, fails, figures


def read_find(path):
    """v7_find's output: {(phase, size, shape): (ms, algo, hit)}, stats, lookup."""
    finds, stats, lookup = {}, None, None
    with open(path) as f:
        for line in f:
            w = line.split()
            if w[:1] == ["find"] and len(w) == 7:
                finds[(w[1], int(w[2]), int(w[3]))] = (float(w[4]), int(w[5]), w[6])
            elif w[:1] == ["stats"] and len(w) == 5:
                stats = dict(zip(("calls", "hits", "misses", "passthrough"), map(int, w[1:])))
            elif w[:1] == ["lookup"] and len(w) == 3:
                lookup = w[1] + " " + w[2]
    return finds, stats, lookup


def part_v8_dlopen(d):
    r1, r2 = read_find(p(d, "h1.txt")), read_find(p(d, "h2.txt"))
    fails = bars.bar_v7_warm(r1, r2)
    s2 = r2[1] or {"calls": 0, "hits": 0, "misses": 0}
    v7 = "v7_find --handle: run 2 %d of %d finds hits, %d misses (find taken by %s), %s algorithms" % (
        s2["hits"], len(r2[0]), s2["misses"], r2[2] or "?",
        "same" if not any("another algorithm" in f for f in fails) else "other")
    out = ["### dlopen clients under convcache run", "",
           "v7_find --handle (cuDNN with dlopen RTLD_LOCAL, the find functions with dlsym on its handle), "
           "twice on a fresh file: run 1 %s; %s." % (
               "%(calls)d finds, %(hits)d hits, %(misses)d misses" % r1[1] if r1[1] else "no interposer counters", v7)]
    figures = v7
    if os.path.exists(p(d, "warm.err")):  # the stand-ins: cudnn_frontend with dynamic loading
        more, f2, fig2 = default_path(d, "cold", "warm", "cudnn_frontend with dynamic loading (torch_like_dl): "
                                                         "cold, then warm")
        out += [""] + more
        fails += f2
        figures += "; torch_like_dl " + fig2
    return out, fails, figures


def part_onnxruntime(d):
    def read(name):
        r = {}
        for line in open(p(d, name + ".txt")):
            w = line.split()
            if len(w) >= 2 and w[0] in ("ort", "first_ms", "second_ms", "digest"):
                r[w[0]] = " ".join(w[1:])
        return r
    cold, warm = read("cold"), read("warm")
    ci, wi = bars.read_interposer(p(d, "cold.err")), bars.read_interposer(p(d, "warm.err"))
    fails = bars.bar_identical(cold.get("digest"), warm.get("digest"), "ONNX Runtime outputs (run 1, run 2)")
    v7c, v7w = ci["v7"] or {"finds": 0, "hits": 0, "misses": 0}, wi["v7"] or {"finds": 0, "hits": 0, "misses": 0}
    if v7c["finds"] == 0 and not ci["graphs"]:
        fails.append("run 1: no find and no graph reached the interposer: was ONNX Runtime served?")
    if v7c["finds"]:
        fails += bars.bar_all_hits(wi["v7"])
    if ci["graphs"] or wi["graphs"]:
        fails += (bars.bar_warm_logged(ci["graphs"], wi["graphs"]) + bars.bar_warm_served(ci["graphs"], wi["graphs"]) +
                  bars.bar_served_one_plan(wi["graphs"]) + bars.bar_aside_expected(wi["graphs"]))
    figures = "%s; run 2: %d finds, %d hits, %d misses; v8 %s; first run %s ms (run 1 %s ms); outputs %s" % (
        warm.get("ort", "?"), v7w["finds"], v7w["hits"], v7w["misses"], graphs_line(wi), warm.get("first_ms", "?"),
        cold.get("first_ms", "?"), "equal" if cold.get("digest") and cold.get("digest") == warm.get("digest")
        else "differ")
    return ["### ONNX Runtime's CUDA provider, EXHAUSTIVE, twice under convcache run", "", figures + "."], fails, figures


def part_deterministic(d):
    return default_path(d, "plain", "warm", "Deterministic mode, warm, over a file written without it")


def part_procs4(d):
    infos = [bars.read_interposer(p(d, "p%d.err" % i)) for i in range(1, 5)]
    fails = bars.bar_once([i["graphs"] for i in infos])
    out = ["### 4 processes at a barrier on a fresh file (the default path)", "",
           "| process | graphs | waited for another's benchmark | time by phase (ms) |", "|---|---|---:|---|"]
    for n, i in enumerate(infos, 1):
        out.append("| %d | %s | %s | %s |" % (n, graphs_line(i), (i["v8"] or {}).get("waited", "-"),
                                             bars.fmt_time(i["time"])))
    keys = {g["key"] for i in infos for g in i["graphs"]}
    bench = sum(1 for i in infos for g in i["graphs"] if g["kind"] in ("new", "stood aside"))
    out += [""] + torch_rows(d, [("process %d" % n, "p%d" % n) for n in range(1, 5)])
    return out, fails, "%d graphs, %d benchmarks among 4 processes" % (len(keys), bench)


def spread(a, b):
    return abs(a - b) / ((a + b) / 2) if a and b else float("nan")


def part_resnet(d):
    t = {n: bars.read_torch(p(d, n + ".txt")) for n in ("floor", "default1", "warm1", "default2", "warm2")}
    warm_first = statistics.mean(t[n]["first_ms"] for n in ("warm1", "warm2"))
    def_med = statistics.mean(t[n]["steady"]["median"] for n in ("default1", "default2"))
    warm_med = statistics.mean(t[n]["steady"]["median"] for n in ("warm1", "warm2"))
    fails = bars.bar_first_vs_floor(warm_first, t["floor"]["first_ms"]) + bars.bar_steady(warm_med, def_med)
    warm_info = bars.read_interposer(p(d, "warm2.err"))
    fails += bars.bar_served_one_plan(warm_info["graphs"]) + bars.bar_aside_expected(warm_info["graphs"])
    out = ["### ResNet-50, interleaved: benchmark off; default; convcache warm; default; convcache warm", ""]
    out += torch_rows(d, (("convcache cold (fills the file)", "cold"), ("benchmark off (the floor)", "floor"),
                          ("PyTorch default", "default1"), ("convcache warm", "warm1"),
                          ("PyTorch default, again", "default2"), ("convcache warm, again", "warm2")))
    pairs = (("default", "default1", "default2"), ("convcache warm", "warm1", "warm2"))
    out += ["", "Spread within each pair (|a - b| / mean): " + "; ".join(
        "%s: first steps %.1f%%, steady median %.1f%%, wall %.1f%%" % (
            label, 100 * spread(t[a]["first_ms"], t[b]["first_ms"]),
            100 * spread(t[a]["steady"]["median"], t[b]["steady"]["median"]), 100 * spread(t[a]["wall"], t[b]["wall"]))
        for label, a, b in pairs) + ".", "", "Warm run 2: %s; %s." % (graphs_line(warm_info),
                                                                     bars.fmt_time(warm_info["time"]))]
    figures = "first steps: floor %.0f ms, warm %.0f ms (%.2fx); steady median: default %.2f ms, warm %.2f ms" % (
        t["floor"]["first_ms"], warm_first, warm_first / t["floor"]["first_ms"], def_med, warm_med)
    return out, fails, figures


def part_multiscale(d):
    t = {n: bars.read_torch(p(d, n + ".txt")) for n in ("without", "cold", "warm")}
    warm = bars.read_interposer(p(d, "warm.err"))
    fails = bars.bar_served_one_plan(warm["graphs"]) + bars.bar_aside_expected(warm["graphs"])
    out = ["### Multi-scale: 12 input sizes, a new one every step, two epochs", ""]
    out += torch_rows(d, (("without convcache", "without"), ("convcache cold", "cold"), ("convcache warm", "warm")))
    out += ["", "Warm: %s; %s." % (graphs_line(warm), bars.fmt_time(warm["time"]))]
    figures = "epochs (ms): " + "; ".join("%s %s" % (n, " + ".join("%.0f" % e for e in t[n]["epochs"]))
                                          for n in ("without", "cold", "warm"))
    return out, fails, figures


def sdpa_digests(path):
    for line in open(path):
        w = line.split()
        if w[:1] == ["sdpa"] and len(w) == 4:
            return w[1], w[2]
    return None, None


def part_sdpa(d):
    (a, ga), (a2, ga2), (b, gb) = (sdpa_digests(p(d, n + ".txt")) for n in ("without", "without2", "with"))
    info = bars.read_interposer(p(d, "with.err"))
    fails = bars.bar_identical(a, b, "SDPA outputs") + bars.bar_untouched(info)
    if ga and ga == ga2:
        fails += bars.bar_identical(ga, gb, "SDPA gradients")
        grads = "gradients %s" % ("equal" if ga == gb else "differ")
    else:
        grads = "gradients not compared (two runs without the interposer differ)"
    v8 = info["v8"] or {}
    figures = "outputs %s, %s; v8 graphs keyed %s, stood aside %s, stored %s" % (
        "equal" if a and a == b else "differ", grads, v8.get("graphs", 0), v8.get("aside", 0), v8.get("stored", 0))
    return ["### SDPA through cuDNN attention, without and with the interposer", "", figures + "."], fails, figures


def part_torch_v7(d):
    warm = bars.read_interposer(p(d, "warm.err"))
    fails = bars.bar_all_hits(warm["v7"])
    v7 = warm["v7"] or {"finds": 0, "hits": 0, "misses": 0}
    out = ["### convcache run --torch-v7: cold, then warm", ""] + torch_rows(d, (("cold", "cold"), ("warm", "warm")))
    figures = "warm: %d finds, %d hits, %d misses" % (v7["finds"], v7["hits"], v7["misses"])
    return out + ["", figures + "."], fails, figures


def part_v8_check(d):
    text = open(p(d, "v8.txt")).read()
    said = [l for l in text.splitlines() if l.startswith("v8_check: ")] or [l for l in text.splitlines() if l.strip()]
    last = (said or ["no output"])[-1][:300]
    fails = [] if "v8_check: PASS" in text else ["v8_check did not pass (%s)" % last]
    rows = [l for l in text.splitlines() if l.startswith("| all ") or l.startswith("v8_check: second reader")]
    return [], fails, "; ".join(r.strip("| ") for r in rows) or "no table"


PARTS = {"warm-default": part_warm_default, "deterministic": part_deterministic, "procs4": part_procs4,
         "resnet": part_resnet, "multiscale": part_multiscale, "sdpa": part_sdpa, "torch-v7": part_torch_v7,
         "v8-check": part_v8_check, "enable-default": part_enable_default, "v8-dlopen": part_v8_dlopen,
         "onnxruntime": part_onnxruntime, "bf16-cl": part_bf16_cl}


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in PARTS:
        sys.exit(__doc__.strip())
    name, d = sys.argv[1], sys.argv[2]
    try:
        out, fails, figures = PARTS[name](d)
    except (OSError, KeyError, TypeError, ValueError, ZeroDivisionError, statistics.StatisticsError) as e:
        out, fails, figures = [], ["its outputs could not be read (%s: %s)" % (type(e).__name__, e)], ""
    table = "\n".join(out) + "\n"
    print(table)
    results = os.environ.get("KIT_RESULTS")
    if results and out:
        write_section(results, "part " + name, table + "\n" + ("**FAIL**: " + "; ".join(fails) if fails else "PASS") + "\n")
    for f in fails:
        print("judge: FAIL " + f)
    print("figures: " + "; ".join(fails + [figures] if fails else [figures]))
    sys.exit(1 if fails else 0)


main()
