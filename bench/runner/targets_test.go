package main

import (
	"strings"
	"testing"

	"github.com/convcache/convcache/bench/internal/results"
)

// quickRun is a -quick run's results: 10k and 100k entries, one repeat,
// figures chosen so that some of issue 17's bars hold and some do not.
func quickRun() *results.Results {
	r := &results.Results{
		Reps: 1, RepsLarge: 1, Sizes: []int{10000, 100000}, LoadSizes: []int{1, 10000, 100000},
		Writers: []int{1}, PerWriter: 10,
	}
	for _, im := range allImpls {
		r.Impls = append(r.Impls, im)
	}
	add := func(metric string, byID map[string]float64) {
		for id, v := range byID {
			r.Add(metric, id, v)
		}
	}
	add("hit1_ns/100000", map[string]float64{"a": 300, "b": 100, "c": 800}) // a 0.375× holds, b 0.125× holds
	add("mops2/100000", map[string]float64{"a": 4, "b": 30, "c": 1})        // a 4× missed
	add("rss/100000", map[string]float64{"a": 200, "b": 300, "c": 190})     // a 1.05× holds, b 1.58× missed
	add("rss_store/100000", map[string]float64{"a": 20, "b": 20, "c": 0})
	add("rss_libs/100000", map[string]float64{"a": 55, "b": 56, "c": 1})
	add("load_ms/1", map[string]float64{"a": 5, "b": 6, "d": 1, "e": 2})
	add("load_ms/100000", map[string]float64{"a": 9, "b": 40, "d": 70, "e": 4})
	add("all_ms/100000", map[string]float64{"a": 120, "b": 170, "d": 130, "e": 600})
	return r
}

func line(t *testing.T, out, prefix string) string {
	t.Helper()
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, prefix) {
			return l
		}
	}
	t.Fatalf("no line starting %q in:\n%s", prefix, out)
	return ""
}

// TestTargetsIssue17 checks each of issue 17's bars prints its verdict:
// HOLDS, MISSED, or PENDING where the run has no figure (a -quick run has
// no 1M entries), never left out.
func TestTargetsIssue17(t *testing.T) {
	out := targets(quickRun())
	for _, want := range []string{
		"- HOLDS C ABI find hit ≤ 0.5× (c), 1 thread, 100k: 300 ns vs 800 ns (medians) = 0.38×",
		"- PENDING C ABI find hit ≤ 0.4× (c), 1 thread, 1M: no hit1_ns/1000000 figure for (a), (c) in this run (no 1M-entry run: -quick)",
		"- MISSED C ABI find hit throughput ≥ 8× (c), 2 threads, 100k: 4.00 M finds/s vs 1.00 M finds/s (medians) = 4.00×",
		"- HOLDS C++ drop-in find hit ≤ 0.15× (c), 1 thread, 100k: 100 ns vs 800 ns (medians) = 0.12×",
		"- HOLDS C ABI resident memory per entry ≤ 1.1× (c), 100k: 200 bytes vs 190 bytes (medians) = 1.05×; of which the mapped store 20.0, shared libraries' pages 55.0 (c: 1.00)",
		"- MISSED C++ drop-in resident memory per entry ≤ 1.3× (c), 100k",
		"- PENDING C ABI resident memory per entry ≤ 1.1× (c), 1M",
		"- HOLDS (a) cold process to first answer, 100k entries ≤ 2× 1 entry: 9.00 ms vs 5.00 ms (medians) = 1.80×",
		"- MISSED (b) cold process to first answer, 100k entries ≤ 2× 1 entry: 40.0 ms vs 6.00 ms (medians) = 6.67×",
		"- PENDING (a) cold process to first answer, 1M entries ≤ 2× 1 entry",
		"- HOLDS (a) cold process to every key answered once, 100k: ≤ 133 ms: 120 ms vs 133 ms = 0.90×; vs (d) in this run: 130 ms = 0.92×",
		"- MISSED (b) cold process to every key answered once, 100k: ≤ 160 ms: 170 ms vs 160 ms = 1.06×",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in:\n%s", want, out)
		}
	}
	for _, gone := range []string{"≤ 1.0× (c)", "drop-in find hit ≤ 0.5× (c)"} {
		if strings.Contains(out, gone) {
			t.Errorf("superseded target %q still printed:\n%s", gone, out)
		}
	}
	if got := ratioNear(0.1502, 0.15); got != "0.1502×" {
		t.Errorf("ratioNear(0.1502, 0.15) = %q, want the digits that tell it from the bar", got)
	}
	_ = line(t, out, "- MISSED (a) load of 100k faster than (d) and (e)") // issue 7's, kept: (e) is faster
}

// TestLoadRows checks the table has the 1-entry load row and no front-map
// rows.
func TestLoadRows(t *testing.T) {
	out := table(quickRun())
	l := line(t, out, "| load 1 entry: cold process to first answer, ms |")
	if !strings.Contains(l, "| 5.00 | 6.00 | — | 1.00 | 2.00 |") {
		t.Errorf("1-entry load row: %s", l)
	}
	if strings.Contains(out, "front map") {
		t.Errorf("the table still has a front-map row:\n%s", out)
	}
	line(t, out, "|   of which the store's file, mapped, 100k entries: bytes | 20.0 | 20.0 | 0 | — | — | — | — | — |")
	line(t, out, "|   of which shared libraries' pages (code; per process, not per entry), 100k entries: bytes | 55.0 | 56.0 | 1.00 |")
	if strings.Contains(out, "load 1 entry: cold process to every key") {
		t.Errorf("a 1-entry store has no every-key row:\n%s", out)
	}
}

// TestFullRunRows checks a full run's table has the 1M-entry cold first
// answer row for (a) and (b), and judges the 1M bars instead of leaving them
// PENDING.
func TestFullRunRows(t *testing.T) {
	r := quickRun()
	r.Sizes = []int{10000, 100000, 1000000}
	r.LoadSizes = []int{1, 10000, 100000, 1000000}
	for metric, byID := range map[string]map[string]float64{
		"load_ms/1000000": {"a": 11, "b": 12, "d": 800, "e": 3},
		"hit1_ns/1000000": {"a": 300, "b": 120, "c": 1000},
		"rss/1000000":     {"a": 200, "b": 230, "c": 188},
	} {
		for id, v := range byID {
			r.Add(metric, id, v)
		}
	}
	out := table(r)
	l := line(t, out, "| load 1M: cold process to first answer, ms |")
	if !strings.HasPrefix(l, "| load 1M: cold process to first answer, ms | 11.0 | 12.0 | — | 800 | 3.00 |") {
		t.Errorf("1M load row: %s", l)
	}
	for _, want := range []string{
		"- HOLDS C ABI find hit ≤ 0.4× (c), 1 thread, 1M: 300 ns vs 1000 ns (medians) = 0.30×",
		"- MISSED (a) cold process to first answer, 1M entries ≤ 2× 1 entry: 11.0 ms vs 5.00 ms (medians) = 2.20×",
		"- HOLDS (b) cold process to first answer, 1M entries ≤ 2× 1 entry: 12.0 ms vs 6.00 ms (medians) = 2.00×",
		"- HOLDS C++ drop-in resident memory per entry ≤ 1.3× (c), 1M: 230 bytes vs 188 bytes (medians) = 1.22×\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in:\n%s", want, out)
		}
	}
	if strings.Contains(out, "PENDING C ABI find hit ≤ 0.4×") || strings.Contains(out, "1M-entry run: -quick") {
		t.Errorf("a full run left a 1M target PENDING:\n%s", out)
	}
}

// TestSummaryBothOrders checks the README's summary shows each size's hits
// in both orders, with the ratios to (c), and the cold and warm runs.
func TestSummaryBothOrders(t *testing.T) {
	r := quickRun()
	r.Sizes = []int{10000, 100000, 1000000}
	r.Add("hit1r_ns/100000", "a", 200)
	r.Add("hit1r_ns/100000", "b", 250)
	r.Add("hit1r_ns/100000", "c", 500)
	r.Add("demo_cold_ms", "b", 5000)
	r.Add("demo_warm_ms", "b", 0.2)
	out := summary(r)
	for _, want := range []string{
		"| 100k entries, network order | 300 ns | 100 ns | 800 ns | 0.38× | 0.12× |",
		"| 100k entries, random order | 200 ns | 250 ns | 500 ns | 0.40× | 0.50× |",
		"| the demo (`make demo`), through the C++ drop-in | 5000 ms | 0.20 ms | 0.004% |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
	for _, absent := range []string{"| 10k entries", "| 1M entries", "v8 path"} {
		if strings.Contains(out, absent) {
			t.Errorf("summary has %q, for which the run has no figure:\n%s", absent, out)
		}
	}
}
