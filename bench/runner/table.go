package main

import (
	"fmt"
	"math"
	"strings"

	"github.com/convcache/convcache/bench/internal/results"
)

// row is one line of the table: a metric with its samples per implementation.
type row struct {
	label  string
	metric string
	lower  bool // lower is better
	counts bool // a count (entries lost): no ratio, shown with its range
	plain  bool // no ratio column (the figure is not a comparison)
}

func rows(r *results.Results) []row {
	var out []row
	for _, n := range r.Sizes {
		out = append(out, row{fmt.Sprintf("find hit, 1 thread, %s entries: ns/op", results.SizeName(n)), fmt.Sprintf("hit1_ns/%d", n), true, false, false})
	}
	for _, n := range r.Sizes {
		out = append(out, row{fmt.Sprintf("find hit, 2 threads, %s entries: M finds/s", results.SizeName(n)), fmt.Sprintf("mops2/%d", n), false, false, false})
	}
	for _, n := range r.Sizes {
		out = append(out, row{fmt.Sprintf("load %s: cold process to first answer, ms", results.SizeName(n)), fmt.Sprintf("load_ms/%d", n), true, false, false})
	}
	for _, n := range r.Sizes {
		out = append(out, row{fmt.Sprintf("load %s: cold process to every key answered once, ms", results.SizeName(n)), fmt.Sprintf("all_ms/%d", n), true, false, false})
	}
	for _, p := range r.Writers {
		out = append(out, row{fmt.Sprintf("%d writer process%s, inserts/s (each durable on return)", p, plural(p)), fmt.Sprintf("wtput/%d", p), false, false, false})
	}
	for _, p := range r.Writers {
		out = append(out, row{fmt.Sprintf("%d writer process%s, entries lost of %d", p, plural(p), p*r.PerWriter), fmt.Sprintf("wlost/%d", p), true, true, false})
	}
	big := r.Sizes[len(r.Sizes)-1]
	for _, n := range r.Sizes {
		if n >= 100000 || n == big {
			out = append(out, row{fmt.Sprintf("resident memory per entry, %s entries: bytes", results.SizeName(n)), fmt.Sprintf("rss/%d", n), true, false, false})
		}
	}
	for _, n := range r.Sizes {
		if n >= 100000 || n == big {
			out = append(out, row{fmt.Sprintf("  of which the C++ front map, %s entries: bytes", results.SizeName(n)), fmt.Sprintf("front/%d", n), true, false, false})
		}
	}
	out = append(out, row{"demo workload (make demo), run 1 (cold): ms choosing algorithms", "demo_cold_ms", true, false, true})
	out = append(out, row{"demo workload, run 2 (warm): ms choosing algorithms", "demo_warm_ms", true, false, false})
	for _, n := range r.Sizes {
		out = append(out, row{fmt.Sprintf("file bytes per entry after compaction, %s entries (raw key+value: %d)", results.SizeName(n), rawEntry), fmt.Sprintf("file_bpe/%d", n), true, false, false})
	}
	return out
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "es"
}

// ratio is ours over base: the median of per-repeat ratios when both have
// the same repeats (repeat i of each ran moments apart), else the ratio of
// the medians.
func ratioOf(r *results.Results, metric, ours, base string) (float64, bool) {
	o, b := r.Samples[metric][ours], r.Samples[metric][base]
	if len(o) == 0 || len(b) == 0 {
		return 0, false
	}
	if len(o) == len(b) {
		var q []float64
		for i := range o {
			if b[i] == 0 {
				return 0, false
			}
			q = append(q, o[i]/b[i])
		}
		s, _ := results.StatOf(q)
		return s.Med, true
	}
	so, _ := results.StatOf(o)
	sb, _ := results.StatOf(b)
	if sb.Med == 0 {
		return 0, false
	}
	return so.Med / sb.Med, true
}

// num formats a figure with three significant digits and a k/M suffix for
// large ones.
func num(v float64) string {
	a := math.Abs(v)
	switch {
	case a >= 1e7:
		return fmt.Sprintf("%.1fM", v/1e6)
	case a >= 1e6:
		return fmt.Sprintf("%.2fM", v/1e6)
	case a >= 1e5:
		return fmt.Sprintf("%.0fk", v/1e3)
	case a >= 1e4:
		return fmt.Sprintf("%.1fk", v/1e3)
	case a >= 100:
		return fmt.Sprintf("%.0f", v)
	case a >= 10:
		return fmt.Sprintf("%.1f", v)
	case a == 0:
		return "0"
	}
	return fmt.Sprintf("%.2f", v)
}

// cell is a median with its spread: half the range, relative to the median.
func cell(s results.Stat, counts bool) string {
	if counts {
		if s.Min == s.Max {
			return num(s.Med)
		}
		return fmt.Sprintf("%s (%s–%s)", num(s.Med), num(s.Min), num(s.Max))
	}
	if s.N < 2 || s.Med == 0 {
		return num(s.Med)
	}
	return fmt.Sprintf("%s ±%.0f%%", num(s.Med), 100*(s.Max-s.Min)/2/math.Abs(s.Med))
}

func ratio(x float64) string {
	switch {
	case x > 0 && x < 0.01:
		return "1/" + num(1/x)
	case x >= 100:
		return fmt.Sprintf("%.0f×", x)
	case x >= 10:
		return fmt.Sprintf("%.1f×", x)
	}
	return fmt.Sprintf("%.2f×", x)
}

// table renders the Markdown table, the notes and the targets.
func table(r *results.Results) string {
	var b strings.Builder
	var ours, bases []results.Impl
	for _, im := range r.Impls {
		if im.Ours {
			ours = append(ours, im)
		} else {
			bases = append(bases, im)
		}
	}
	fmt.Fprintf(&b, "Run: %s · %s · `%s` · median of %d repeats (%d at 1M entries), ±: half the min–max range · load average %s at the start, %s at the end · %.0f s\n\n",
		r.Date, r.Machine, r.Command, r.Reps, r.RepsLarge, r.LoadAvg[0], r.LoadAvg[1], r.WallSeconds)
	b.WriteString("| workload |")
	for _, im := range r.Impls {
		fmt.Fprintf(&b, " (%s) %s |", im.ID, im.Name)
	}
	for _, bs := range bases {
		fmt.Fprintf(&b, " vs (%s) |", bs.ID)
	}
	b.WriteString("\n|---|")
	for range r.Impls {
		b.WriteString("---:|")
	}
	for range bases {
		b.WriteString("---:|")
	}
	b.WriteString("\n")
	for _, rw := range rows(r) {
		any := false
		for _, im := range r.Impls {
			if _, ok := r.Stat(rw.metric, im.ID); ok {
				any = true
			}
		}
		if !any {
			continue
		}
		fmt.Fprintf(&b, "| %s |", rw.label)
		for _, im := range r.Impls {
			if s, ok := r.Stat(rw.metric, im.ID); ok {
				fmt.Fprintf(&b, " %s |", cell(s, rw.counts))
			} else {
				b.WriteString(" — |")
			}
		}
		for _, bs := range bases {
			base, ok := r.Stat(rw.metric, bs.ID)
			var parts []string
			if ok && !rw.counts && !rw.plain && base.Med != 0 {
				for _, o := range ours {
					if x, ok := ratioOf(r, rw.metric, o.ID, bs.ID); ok {
						parts = append(parts, fmt.Sprintf("%s %s", o.ID, ratio(x)))
					}
				}
			}
			if len(parts) == 0 {
				b.WriteString(" — |")
			} else {
				fmt.Fprintf(&b, " %s |", strings.Join(parts, ", "))
			}
		}
		b.WriteString("\n")
	}
	b.WriteString("\nRatios: convcache over the baseline, the median of the per-repeat ratios (repeats are interleaved, so each pairs runs made moments apart); below 1× is better for times, bytes and memory, above 1× for throughput. Writers: inserts/s from the start signal to the last process's exit; the naive file writes once at exit and loses what other processes wrote. Demo, (c): the drop-in with CONVCACHE_MODE=off keeps results in memory only, like PyTorch's map, so every run is a cold run.\n")
	for _, n := range r.Notes {
		fmt.Fprintf(&b, "\n%s\n", n)
	}
	b.WriteString(v8Table(r))
	b.WriteString("\n")
	b.WriteString(targets(r))
	return b.String()
}

// v8Table is the extra table of PyTorch's default path (cuDNN backend API):
// engine choices benchmarked in run 1, rebuilt from the file in run 2.
func v8Table(r *results.Results) string {
	r1, ok := r.Stat("v8_run1_ms", "v8")
	if !ok {
		return ""
	}
	r2, _ := r.Stat("v8_run2_ms", "v8")
	// The median of the per-repeat ratios (run 2 followed its run 1).
	var q []float64
	a, c := r.Samples["v8_run2_ms"]["v8"], r.Samples["v8_run1_ms"]["v8"]
	for i := range a {
		if i < len(c) && c[i] > 0 {
			q = append(q, a[i]/c[i])
		}
	}
	rs, _ := results.StatOf(q)
	x := rs.Med
	var b strings.Builder
	fmt.Fprintf(&b, "\nPyTorch's default path, cuDNN backend API (bench/gpu/v8_check on the stand-in cuDNN, %d ResNet-50 convolution problems, %d ms simulated benchmark per engine config), median of %d:\n\n", v8Shapes, v8EngineMs, r1.N)
	b.WriteString("| workload | ms choosing engines |\n|---|---:|\n")
	fmt.Fprintf(&b, "| run 1 (cold): heuristics, build and time every config, store the fastest choice | %s |\n", cell(r1, false))
	fmt.Fprintf(&b, "| run 2 (warm): rebuild every plan from the stored choice (verified) | %s |\n", cell(r2, false))
	fmt.Fprintf(&b, "| run 2 / run 1 | %.3g%% |\n", 100*x)
	return b.String()
}

// targets checks the performance targets against this run.
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
	const n = 100000
	hit := fmt.Sprintf("hit1_ns/%d", n)
	c1, haveC := med(hit, "c")
	if a1, ok := med(hit, "a"); ok && haveC {
		x, _ := ratioOf(r, hit, "a", "c")
		check("C ABI find hit ≤ 1.0× (c), 1 thread, 100k", x <= 1, true,
			fmt.Sprintf("%s ns vs %s ns (medians) = %s", num(a1), num(c1), ratio(x)))
	}
	b1, haveB := med(hit, "b")
	if haveB && haveC {
		x, _ := ratioOf(r, hit, "b", "c")
		check("C++ drop-in find hit ≤ 0.5× (c), 1 thread, 100k", x <= 0.5, true,
			fmt.Sprintf("%s ns vs %s ns (medians) = %s", num(b1), num(c1), ratio(x)))
		thr := fmt.Sprintf("mops2/%d", n)
		b2, _ := med(thr, "b")
		c2, _ := med(thr, "c")
		y, _ := ratioOf(r, thr, "b", "c")
		check("C++ drop-in 2-thread hit throughput ≥ 2× (c), 100k", y >= 2, true,
			fmt.Sprintf("%s vs %s M finds/s (medians) = %s", num(b2), num(c2), ratio(y)))
	} else {
		check("C++ drop-in ≤ 0.5× (c) at 1 thread and ≥ 2× its 2-thread throughput", false, false, "column (b) not built")
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
