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
		out = append(out, row{fmt.Sprintf("find hit, 1 thread, %s entries, network order: ns/op", results.SizeName(n)), fmt.Sprintf("hit1_ns/%d", n), true, false, false})
	}
	for _, n := range r.Sizes {
		out = append(out, row{fmt.Sprintf("find hit, 1 thread, %s entries, random order: ns/op", results.SizeName(n)), fmt.Sprintf("hit1r_ns/%d", n), true, false, false})
	}
	for _, n := range r.Sizes {
		out = append(out, row{fmt.Sprintf("find hit, 2 threads, %s entries: M finds/s", results.SizeName(n)), fmt.Sprintf("mops2/%d", n), false, false, false})
	}
	for _, n := range r.LoadSizesOrSizes() {
		out = append(out, row{fmt.Sprintf("load %s: cold process to first answer, ms", loadName(n)), fmt.Sprintf("load_ms/%d", n), true, false, false})
	}
	for _, n := range r.Sizes {
		out = append(out, row{fmt.Sprintf("load %s: cold process to every key answered once, ms", loadName(n)), fmt.Sprintf("all_ms/%d", n), true, false, false})
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
			out = append(out, row{fmt.Sprintf("  of which the store's file, mapped, %s entries: bytes", results.SizeName(n)), fmt.Sprintf("rss_store/%d", n), true, false, true})
			out = append(out, row{fmt.Sprintf("  of which shared libraries' pages (code; per process, not per entry), %s entries: bytes", results.SizeName(n)), fmt.Sprintf("rss_libs/%d", n), true, false, true})
		}
	}
	out = append(out, row{"demo workload (make demo), run 1 (cold): ms choosing algorithms", "demo_cold_ms", true, false, true})
	out = append(out, row{"demo workload, run 2 (warm): ms choosing algorithms", "demo_warm_ms", true, false, false})
	for _, n := range r.Sizes {
		out = append(out, row{fmt.Sprintf("file bytes per entry after compaction, %s entries (raw key+value: %d)", results.SizeName(n), rawEntry), fmt.Sprintf("file_bpe/%d", n), true, false, false})
	}
	return out
}

// loadName is a store's size in a load row: "1 entry", "10k".
func loadName(n int) string {
	if n == 1 {
		return "1 entry"
	}
	return results.SizeName(n)
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
	b.WriteString("\nRatios: convcache over the baseline, the median of the per-repeat ratios (repeats are interleaved, so each pairs runs made moments apart); below 1× is better for times, bytes and memory, above 1× for throughput. Writers: inserts/s from the start signal to the last process's exit; the naive file writes once at exit and loses what other processes wrote. Demo, (c): the drop-in with CONVCACHE_MODE=off keeps results in memory only, like PyTorch's map, so every run is a cold run. (b) calls the library's C hit path (convcache_find) directly, with no private map; (a) and (b) are asked every key once before the timed hit loops and the memory reading, since their store may open lazily. Every value a hit loop returns is checked. Hit orders: network order asks the keys in the same shuffled order every pass, as a network asks its layers' convolutions, and convcache lays entries out in the order they are first asked, so this order reads them front to back; random order asks keys drawn uniformly at random from all of them, which no layout matches. 2 threads: network order. Resident memory counts every page the process gained from opening the store to the end of the hit loops, its libraries (Go's runtime included) already started: anonymous and file-backed, a mapped store in full, though the page cache shares it.\n")
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
