package main

// The summary the README shows: hits in both orders against PyTorch's map,
// and the time spent choosing algorithms cold and warm, from the same run
// as the full table (bench/publish.py puts each in its place).

import (
	"fmt"
	"strings"

	"github.com/convcache/convcache/bench/internal/results"
)

// summary is the README's short table of this run: find hits at 1 thread
// for (a), (b) and (c) at 100k and 1M entries in network and random order,
// with the ratios to (c); then the cold and warm runs of the demo and of
// the v8 stand-in. Rows the run has no figure for are left out.
func summary(r *results.Results) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Run: %s · %s · `%s` · medians of %d repeats (%d at 1M entries)\n\n",
		r.Date, r.Machine, r.Command, r.Reps, r.RepsLarge)
	ns := func(metric, id string) string {
		if s, ok := r.Stat(metric, id); ok {
			return num(s.Med) + " ns"
		}
		return "—"
	}
	x := func(metric, id string) string {
		if v, ok := ratioOf(r, metric, id, "c"); ok {
			return ratio(v)
		}
		return "—"
	}
	b.WriteString("| find hit, 1 thread | (a) C ABI | (b) C++ drop-in | (c) PyTorch's map | a / c | b / c |\n")
	b.WriteString("|---|---:|---:|---:|---:|---:|\n")
	for _, n := range r.Sizes {
		if n < 100000 {
			continue
		}
		for _, o := range []struct{ name, metric string }{
			{"network order", "hit1_ns"}, {"random order", "hit1r_ns"},
		} {
			m := fmt.Sprintf("%s/%d", o.metric, n)
			if _, ok := r.Stat(m, "c"); !ok {
				continue
			}
			fmt.Fprintf(&b, "| %s entries, %s | %s | %s | %s | %s | %s |\n", results.SizeName(n), o.name,
				ns(m, "a"), ns(m, "b"), ns(m, "c"), x(m, "a"), x(m, "b"))
		}
	}

	type pair struct{ name, cold, warm, id string }
	var rows []string
	for _, p := range []pair{
		{"the demo (`make demo`), through the C++ drop-in", "demo_cold_ms", "demo_warm_ms", "b"},
		{"engine choices on cuDNN's backend API (v8), stand-in cuDNN (`make bench-v8`)", "v8_run1_ms", "v8_run2_ms", "v8"},
	} {
		c, okC := r.Stat(p.cold, p.id)
		w, okW := r.Stat(p.warm, p.id)
		if !okC || !okW || c.Med == 0 {
			continue
		}
		rows = append(rows, fmt.Sprintf("| %s | %s ms | %s ms | %.3g%% |\n", p.name, num(c.Med), num(w.Med), 100*w.Med/c.Med))
	}
	if len(rows) > 0 {
		b.WriteString("\n| time choosing algorithms | run 1 (cold) | run 2 (warm) | run 2 / run 1 |\n|---|---:|---:|---:|\n")
		b.WriteString(strings.Join(rows, ""))
	}
	return b.String()
}
