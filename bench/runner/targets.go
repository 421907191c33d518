package main

// The targets make bench judges: each a bar on this run's medians, printed
// HOLDS, MISSED or PENDING (a figure this run did not produce), never left
// out.

import (
	"fmt"
	"strings"

	"github.com/convcache/convcache/bench/internal/results"
)

// allRef is the bar of issue 17's "cold process to every key answered once,
// 100k entries: no slower than today": (a) and (b) in ms, from the results
// table published when the issue was filed (2026-11-23). The table prints
// the bar, not its history.
var allRef = struct {
	ms map[string]float64
}{map[string]float64{"a": 133, "b": 160}}

// targets checks the issues' performance targets against this run.
func targets(r *results.Results) string {
	var b strings.Builder
	b.WriteString("Targets (medians from this run):\n\n")
	med := func(metric, id string) (float64, bool) {
		s, ok := r.Stat(metric, id)
		return s.Med, ok
	}
	check := func(name string, ok, have bool, detail string) {
		switch {
		case !have:
			fmt.Fprintf(&b, "- PENDING %s: %s\n", name, detail)
		case ok:
			fmt.Fprintf(&b, "- HOLDS %s: %s\n", name, detail)
		default:
			fmt.Fprintf(&b, "- MISSED %s: %s\n", name, detail)
		}
	}
	// missing says which of the figures a target needs this run lacks.
	missing := func(metric string, ids ...string) string {
		var no []string
		for _, id := range ids {
			if _, ok := med(metric, id); !ok {
				no = append(no, "("+id+")")
			}
		}
		if len(no) == 0 {
			return ""
		}
		why := ""
		if n := metricSize(metric); n >= 1000000 && !hasSize(r.Sizes, n) {
			why = " (no 1M-entry run: -quick)"
		}
		return fmt.Sprintf("no %s figure for %s in this run%s", metric, strings.Join(no, ", "), why)
	}
	const n = 100000
	names := map[string]string{"a": "C ABI", "b": "C++ drop-in"}

	// Against (c), PyTorch's map: the ratio is the table's (the median of
	// the per-repeat ratios).
	vsC := func(id, metric string, bar float64, lower bool, name, unit string) {
		if m := missing(metric, id, "c"); m != "" {
			check(name, false, false, m)
			return
		}
		o, _ := med(metric, id)
		c, _ := med(metric, "c")
		x, _ := ratioOf(r, metric, id, "c")
		ok := x <= bar
		if !lower {
			ok = x >= bar
		}
		detail := fmt.Sprintf("%s %s vs %s %s (medians) = %s", num(o), unit, num(c), unit, ratioNear(x, bar))
		if size, ok := strings.CutPrefix(metric, "rss/"); ok {
			// The parts of the resident figures beside the heap.
			l, okL := med("rss_libs/"+size, id)
			lc, _ := med("rss_libs/"+size, "c")
			s, okS := med("rss_store/"+size, id)
			if okL && okS {
				detail += fmt.Sprintf("; of which the mapped store %s, shared libraries' pages %s (c: %s)", num(s), num(l), num(lc))
			}
		}
		check(name, ok, true, detail)
	}
	vsC("a", fmt.Sprintf("hit1_ns/%d", n), 0.5, true, "C ABI find hit ≤ 0.5× (c), 1 thread, 100k", "ns")
	vsC("a", "hit1_ns/1000000", 0.4, true, "C ABI find hit ≤ 0.4× (c), 1 thread, 1M", "ns")
	vsC("a", fmt.Sprintf("mops2/%d", n), 8, false, "C ABI find hit throughput ≥ 8× (c), 2 threads, 100k", "M finds/s")
	vsC("b", fmt.Sprintf("hit1_ns/%d", n), 0.15, true, "C++ drop-in find hit ≤ 0.15× (c), 1 thread, 100k", "ns")
	vsC("b", fmt.Sprintf("mops2/%d", n), 2, false, "C++ drop-in 2-thread hit throughput ≥ 2× (c), 100k", "M finds/s")
	for _, sz := range []int{n, 1000000} {
		for _, t := range []struct {
			id  string
			bar float64
		}{{"a", 1.1}, {"b", 1.3}} {
			vsC(t.id, fmt.Sprintf("rss/%d", sz), t.bar, true,
				fmt.Sprintf("%s resident memory per entry ≤ %.1f× (c), %s", names[t.id], t.bar, results.SizeName(sz)), "bytes")
		}
	}

	// A first answer that does not grow with the file: the cold first
	// answer from the 100k- and the 1M-entry file over the one from the
	// 1-entry file, each implementation's own (a ratio of medians: the
	// figures are different workloads).
	for _, id := range []string{"a", "b"} {
		for _, sz := range []int{n, 1000000} {
			name := fmt.Sprintf("(%s) cold process to first answer, %s entries ≤ 2× 1 entry", id, results.SizeName(sz))
			metric := fmt.Sprintf("load_ms/%d", sz)
			if m := strings.Trim(missing(metric, id)+"; "+missing("load_ms/1", id), "; "); m != "" {
				check(name, false, false, m)
				continue
			}
			big, _ := med(metric, id)
			one, _ := med("load_ms/1", id)
			check(name, big <= 2*one, true, fmt.Sprintf("%s ms vs %s ms (medians) = %s", num(big), num(one), ratioNear(big/one, 2)))
		}
	}

	// Every key answered once, 100k entries: no slower than the published
	// run (an absolute bar across days: this VM's figures move by up to 2×
	// between days, so (d) in this run is printed beside it).
	for _, id := range []string{"a", "b"} {
		metric := fmt.Sprintf("all_ms/%d", n)
		name := fmt.Sprintf("(%s) cold process to every key answered once, 100k: ≤ %s ms", id, num(allRef.ms[id]))
		if m := missing(metric, id); m != "" {
			check(name, false, false, m)
			continue
		}
		o, _ := med(metric, id)
		detail := fmt.Sprintf("%s ms vs %s ms = %s", num(o), num(allRef.ms[id]), ratio(o/allRef.ms[id]))
		if d, ok := med(metric, "d"); ok {
			x, _ := ratioOf(r, metric, id, "d")
			detail += fmt.Sprintf("; vs (d) in this run: %s ms = %s", num(d), ratio(x))
		}
		check(name, o <= allRef.ms[id], true, detail)
	}

	for _, id := range []string{"a", "b"} {
		la, ok := med(fmt.Sprintf("load_ms/%d", n), id)
		if !ok {
			continue
		}
		ld, _ := med(fmt.Sprintf("load_ms/%d", n), "d")
		le, _ := med(fmt.Sprintf("load_ms/%d", n), "e")
		check(fmt.Sprintf("(%s) load of 100k faster than (d) and (e), under 100 ms", id), la < ld && la < le && la < 100, true,
			fmt.Sprintf("%s ms vs (d) %s ms (%s), (e) %s ms (%s)", num(la), num(ld), ratio(la/ld), num(le), ratio(la/le)))
	}
	for _, id := range []string{"a", "b"} {
		lost, ok := r.Stat("wlost/4", id)
		if !ok {
			continue
		}
		ta, _ := med("wtput/4", id)
		te, _ := med("wtput/4", "e")
		check(fmt.Sprintf("(%s) 4 writer processes: zero lost, throughput ≥ (e)", id), lost.Max == 0 && ta >= te, true,
			fmt.Sprintf("lost %s (worst repeat), %s vs %s inserts/s = %s", num(lost.Max), num(ta), num(te), ratio(ta/te)))
	}
	for _, sz := range []int{100000, 1000000} {
		for _, id := range []string{"a", "b"} {
			fa, ok := med(fmt.Sprintf("file_bpe/%d", sz), id)
			if !ok {
				continue
			}
			fd, _ := med(fmt.Sprintf("file_bpe/%d", sz), "d")
			fe, _ := med(fmt.Sprintf("file_bpe/%d", sz), "e")
			check(fmt.Sprintf("(%s) file after compaction, %s: smaller than (d) and (e), ≤ 60%% of raw", id, results.SizeName(sz)),
				fa < fd && fa < fe && fa <= 0.6*rawEntry, true,
				fmt.Sprintf("%s bytes/entry = %.0f%% of raw %d; (d) %s, (e) %s", num(fa), 100*fa/rawEntry, rawEntry, num(fd), num(fe)))
		}
	}
	if w1, ok := med("wtput/1", "a"); ok {
		check("single-process durable inserts ≥ 20k/s (C ABI, 1 writer)", w1 >= 20000, true,
			fmt.Sprintf("%s inserts/s", num(w1)))
	}
	if c, ok := med("v8_run1_ms", "v8"); ok {
		w, _ := med("v8_run2_ms", "v8")
		check("v8 path: run 2 engine-choosing time ≤ 1% of run 1 (stand-in, 20 ms per engine, 40 shapes)", w <= 0.01*c, true,
			fmt.Sprintf("%s ms vs %s ms = %.3g%% (medians)", num(w), num(c), 100*w/c))
	}
	if c, ok := med("demo_cold_ms", "b"); ok {
		w, _ := med("demo_warm_ms", "b")
		check("warm run selection time ≤ 2% of cold", w <= 0.02*c, true,
			fmt.Sprintf("%s ms vs %s ms = %.3g%%", num(w), num(c), 100*w/c))
	} else {
		check("warm run selection time ≤ 2% of cold", false, false, "the demo (examples/demo) was not built")
	}
	return b.String()
}

// ratioNear is ratio(x), with more digits where it would print as the bar
// itself (a MISSED 0.15× against ≤ 0.15× would read as a contradiction).
func ratioNear(x, bar float64) string {
	if ratio(x) == ratio(bar) && x != bar {
		return fmt.Sprintf("%.4g×", x)
	}
	return ratio(x)
}

// metricSize is the entry count a metric name ends with ("hit1_ns/1000000"),
// or 0.
func metricSize(metric string) int {
	_, s, ok := strings.Cut(metric, "/")
	if !ok {
		return 0
	}
	var n int
	fmt.Sscan(s, &n)
	return n
}

func hasSize(sizes []int, n int) bool {
	for _, s := range sizes {
		if s == n {
			return true
		}
	}
	return false
}
