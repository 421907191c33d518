"""bench/gpu/bars.py: what the GPU check's parts read, and the bars they
apply (issue 29). Each bar returns the list of its failures (empty: met),
each a short sentence for a FAIL line; report_test.py makes each one fail.

Readers:
  read_torch(path)       torch_step.py's output (marks, steps, epochs,
                         steady state, peak memory); the shell's wall time
                         ("wall SECONDS") is appended to the same file
  read_interposer(path)  the interposer's stderr under CONVCACHE_VERBOSE=1
                         and CONVCACHE_PRELOAD_LOG=1: each graph's outcome,
                         the summary's counts, time by phase, v7 finds
"""
import re

# Stand-aside reasons the documentation lists as expected (docs/interposer.md,
# the reasons' table): an engine gone from heuristics, and the host's own
# filters (deterministic, tf32, a workspace limit) dropping the stored choice.
EXPECTED_ASIDE = (
    "heuristics offered no stored choice",
    "a stored choice was offered; the host kept no plan of it",
)

GRAPH = re.compile(r"^convcache-preload: v8 (served|new|stood aside|not a benchmark) built (\d+) timed (\d+) "
                   r"refused (\d+)(?: \((.*)\))? key ([0-9a-f]+)$", re.M)
V8SUM = re.compile(r"^convcache-preload: v8: graphs (\d+), hits (\d+), misses (\d+), stand-asides (\d+), "
                   r"from other builders (\d+), stored (\d+)", re.M)
V7SUM = re.compile(r"^convcache-preload: summary: finds (\d+), hits (\d+), misses (\d+)", re.M)
TIME = re.compile(r"^convcache-preload: v8 time ms: (.*)$", re.M)


def read_torch(path):
    r = {"marks": {}, "steps": [], "epochs": [], "steady": None, "peak_mb": None, "wall": None}
    with open(path) as f:
        for line in f:
            w = line.split()
            if w[:1] == ["mark"] and len(w) == 3:
                r["marks"][w[1]] = float(w[2])
            elif w[:1] == ["step"] and len(w) == 4:
                r["steps"].append((int(w[1]), float(w[2]), float(w[3])))
            elif w[:1] == ["epoch"] and len(w) == 3:
                r["epochs"].append(float(w[2]))
            elif w[:1] == ["steady"] and len(w) == 5:
                r["steady"] = {"size": int(w[1]), "n": int(w[2]), "median": float(w[3]), "p90": float(w[4])}
            elif w[:1] == ["peak_mem_mb"] and len(w) == 2:
                r["peak_mb"] = float(w[1])
            elif w[:1] == ["wall"] and len(w) == 2:
                r["wall"] = float(w[1])
            elif w[:1] == ["torch"] and len(w) >= 4:
                r["torch"], r["cudnn"] = w[1], w[3]
    r["first_ms"] = sum(s[1] for s in r["steps"]) if r["steps"] else None
    return r


def read_interposer(path):
    text = open(path).read()
    graphs = [{"kind": k, "built": int(b), "timed": int(t), "refused": int(x), "why": why, "key": key}
              for k, b, t, x, why, key in GRAPH.findall(text)]
    r = {"graphs": graphs, "v8": None, "v7": None, "time": None}
    m = V8SUM.search(text)
    if m:
        r["v8"] = dict(zip(("graphs", "hits", "misses", "aside", "waited", "stored"), map(int, m.groups())))
    m = V7SUM.search(text)
    if m:
        r["v7"] = dict(zip(("finds", "hits", "misses"), map(int, m.groups())))
    m = TIME.search(text)
    if m:
        r["time"] = {k: float(v) for k, v in (kv.split("=") for kv in m.group(1).split())}
    return r


def outcomes(graphs):
    """{kind: count} and {reason: count} of the graphs' lines."""
    kinds, why = {}, {}
    for g in graphs:
        kinds[g["kind"]] = kinds.get(g["kind"], 0) + 1
        if g["kind"] == "stood aside":
            why[g["why"] or "?"] = why.get(g["why"] or "?", 0) + 1
    return kinds, why


def fmt_time(t):
    if not t:
        return "no time by phase"
    keys = ("heur", "heur_ours", "fin_stored", "fin_other", "exec_warmup", "exec_timing", "lease_wait", "cache", "setup", "own")
    return "in calls %.0f ms: %s" % (t.get("calls", 0), ", ".join("%s %.0f" % (k, t.get(k, 0)) for k in keys))


# ---- the bars -----------------------------------------------------------------

def bar_served_one_plan(graphs):
    """Warm default path: every served graph builds and times at most one plan."""
    over = [g for g in graphs if g["kind"] == "served" and (g["built"] > 1 or g["timed"] > 1)]
    if not over:
        return []
    return ["%d served graphs built or timed more than one plan (most: built %d, timed %d)" % (
        len(over), max(g["built"] for g in over), max(g["timed"] for g in over))]


def bar_aside_expected(graphs):
    """No graph stands aside but for a reason the documentation expects."""
    bad = {}
    for g in graphs:
        if g["kind"] == "stood aside" and not any((g["why"] or "").startswith(e) for e in EXPECTED_ASIDE):
            bad[g["why"] or "?"] = bad.get(g["why"] or "?", 0) + 1
    return ["%d graphs stood aside: %s" % (n, why) for why, n in sorted(bad.items())]


def bar_warm_logged(cold, warm):
    """The warm run meets (logs) at least the graphs the cold run benchmarked."""
    want = sum(1 for g in cold if g["kind"] in ("new", "stood aside"))
    got = sum(1 for g in warm if g["kind"] != "not a benchmark")
    if want == 0:
        return ["the cold run logged no graph benchmarked: was the interposer active?"]
    return [] if got >= want else ["the warm run logged %d graphs of the %d the cold run benchmarked" % (got, want)]


def bar_warm_served(cold, warm):
    """The warm run benchmarks none of the graphs the cold run benchmarked
    (stored) again as new: a warm run on a file the cold run did not fill
    (or that lost its choices) re-benchmarks them, and the bars above,
    which look at served graphs only, would not see it."""
    stored = {g["key"] for g in cold if g["kind"] in ("new", "stood aside")}
    again = {g["key"] for g in warm if g["kind"] == "new" and g["key"] in stored}
    return ["%d graphs the cold run benchmarked were benchmarked again (new) in the warm run" % len(again)] \
        if again else []


def bar_first_vs_floor(warm_first, floor_first, most=1.25):
    """Warm first steps at most 1.25x the benchmark-off floor's."""
    if warm_first is None or floor_first is None or floor_first <= 0:
        return ["first steps: no figure (warm %s, floor %s)" % (warm_first, floor_first)]
    r = warm_first / floor_first
    return [] if r <= most else ["warm first steps %.0f ms = %.2fx the floor's %.0f ms (bar %.2fx)" % (
        warm_first, r, floor_first, most)]


def bar_steady(warm_median, default_median, within=0.03):
    """Warm steady-state step time within 3% of PyTorch's own (median)."""
    if not warm_median or not default_median:
        return ["steady state: no figure (warm %s, default %s)" % (warm_median, default_median)]
    r = warm_median / default_median - 1
    return [] if abs(r) <= within else ["warm steady-state median %.2f ms is %+.1f%% of PyTorch's %.2f ms (bar %.0f%%)" % (
        warm_median, 100 * r, default_median, 100 * within)]


def bar_once(per_process):
    """Processes sharing a fresh file: each graph benchmarked by exactly one."""
    count = {}
    for graphs in per_process:
        for key in {g["key"] for g in graphs if g["kind"] in ("new", "stood aside")}:
            count[key] = count.get(key, 0) + 1
    seen = {g["key"] for graphs in per_process for g in graphs if g["kind"] != "not a benchmark"}
    never = [k for k in seen if k not in count]
    twice = [k for k, n in count.items() if n > 1]
    out = []
    if twice:
        out.append("%d graphs benchmarked by more than one process" % len(twice))
    if never:
        out.append("%d graphs benchmarked by none" % len(never))
    if not seen:
        out.append("no graph logged: was the interposer active?")
    return out


def bar_identical(a, b, what="outputs"):
    """SDPA: bit-identical with and without the interposer."""
    if not a or not b:
        return ["%s: missing (%s, %s)" % (what, a, b)]
    return [] if a == b else ["%s differ with the interposer" % what]


def bar_untouched(info):
    """SDPA: nothing stored, nothing counted as stood aside."""
    v8 = info.get("v8") or {}
    out = []
    if v8.get("aside"):
        out.append("%d graphs counted as stood aside" % v8["aside"])
    if v8.get("stored"):
        out.append("%d choices stored" % v8["stored"])
    return out


def bar_v7_warm(run1, run2):
    """v7 find twice on one file (v7_find's output, bench/gpu/report.py's
    read_find): run 1 went through the interposer, run 2 reached cuDNN's
    find 0 times (every find a hit, none passed through) with the same
    algorithm for every problem."""
    (f1, s1, _), (f2, s2, _) = run1, run2
    out = []
    if not s1 or s1["calls"] == 0:
        out.append("run 1: no find went through the interposer (stats %s)" % s1)
    if not s2 or s2["calls"] != len(f2) or s2["hits"] != s2["calls"] or s2["misses"] or s2["passthrough"]:
        out.append("run 2: %s of %d finds reached the interposer, %s hits, %s misses, %s passed through" % (
            s2["calls"] if s2 else 0, len(f2), s2["hits"] if s2 else "-", s2["misses"] if s2 else "-",
            s2["passthrough"] if s2 else "-"))
    differ = [k for k in f1 if k not in f2 or f2[k][1] != f1[k][1]] + [k for k in f2 if k not in f1]
    if differ:
        out.append("run 2 chose another algorithm than run 1 (or met other problems) for %d" % len(differ))
    return out


def bar_all_hits(v7):
    """--torch-v7 warm: every find a hit."""
    if not v7 or v7["finds"] == 0:
        return ["no find calls counted: was the interposer active?"]
    return [] if v7["hits"] == v7["finds"] else ["%d of %d finds were hits" % (v7["hits"], v7["finds"])]
