package main

import (
	"encoding/json"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/convcache/convcache/bench/internal/results"
)

func TestShort(t *testing.T) {
	for in, want := range map[float64]string{
		0: "0", 0.1: "0.1", 0.26: "0.26", 2: "2", 47.6: "47.6", 950: "950",
		10: "10", 1000: "1k", 10700: "10.7k", 30000: "30k", 1e6: "1M", 2.5e6: "2.5M",
	} {
		if got := short(in); got != want {
			t.Errorf("short(%v) = %q, want %q", in, got, want)
		}
	}
}

// decadeLabels is the labelled ticks of decadeTicks over min..max.
func decadeLabels(min, max float64) []string {
	var out []string
	for _, t := range (decadeTicks{}).Ticks(min, max) {
		if t.Label != "" {
			out = append(out, t.Label)
		}
	}
	return out
}

func TestDecadeTicks(t *testing.T) {
	if got, want := decadeLabels(10, 1e5), []string{"10", "100", "1k", "10k", "100k"}; !slices.Equal(got, want) {
		t.Errorf("4 decades: labels %v, want %v", got, want)
	}
	if got, want := decadeLabels(0.1, 10), []string{"0.1", "0.2", "0.5", "1", "2", "5", "10"}; !slices.Equal(got, want) {
		t.Errorf("2 decades: labels %v, want %v", got, want)
	}
	if n := len((decadeTicks{}).Ticks(1, 1000)); n != 3*9+1 {
		t.Errorf("3 decades: %d ticks, want 28 (1..9 per decade, then 1000)", n)
	}
}

func TestDecades(t *testing.T) {
	ss := []series{{pts: []point{{y: 40, lo: 0, hi: 75}, {y: 900, lo: 850, hi: 1000}}}}
	if lo, hi := decades(ss); lo != 10 || hi != 1000 {
		t.Errorf("decades = %v..%v, want 10..1000 (a 0 low end left out, 1000 kept as the top)", lo, hi)
	}
	if lo, hi := decades([]series{{pts: []point{{y: 100, lo: 100, hi: 100}}}}); lo != 100 || hi != 1000 {
		t.Errorf("one value at a power of ten: %v..%v, want 100..1000", lo, hi)
	}
}

func TestLogFromMin(t *testing.T) {
	s := logFromMin{}
	for _, x := range []float64{-5, 0, 1, math.NaN()} {
		if got := s.Normalize(1, 100, x); got != 0 {
			t.Errorf("Normalize(1, 100, %v) = %v, want 0 (drawn at the axis)", x, got)
		}
	}
	if got := s.Normalize(1, 100, 10); math.Abs(got-0.5) > 1e-12 {
		t.Errorf("Normalize(1, 100, 10) = %v, want 0.5", got)
	}
}

// TestRunWritesCharts draws from a small results file: each chart with data
// is a 1100x640 PNG, a chart without data is left out, and samples a log
// axis cannot place (0, a size of 0) are skipped, not a panic.
func TestRunWritesCharts(t *testing.T) {
	dir := t.TempDir()
	r := results.Results{
		Date: "today", Machine: "test", Sizes: []int{0, 1000, 10000}, Writers: []int{1, 2}, PerWriter: 10,
		Impls: []results.Impl{{ID: "a", Name: "one"}, {ID: "d", Name: "two"}, {ID: "z", Name: "unknown"}},
		Samples: map[string]map[string][]float64{
			"hit1_ns/1000":  {"a": {100, 120, 0}, "d": {50}, "z": {7}},
			"hit1_ns/10000": {"a": {150, 170, 160}, "d": {0}},
			"hit1_ns/0":     {"a": {1}},
			"mops2/1000":    {"a": {2, 3}, "d": {0.5}},
			"mops2/10000":   {"a": {1.5}},
			"wtput/1":       {"a": {1e4, 2e4}, "d": {1e6}},
			"wtput/2":       {"a": {1.5e4}, "d": {2e6}},
			"wlost/2":       {"a": {0}, "d": {10}},
		},
	}
	in := filepath.Join(dir, "results.json")
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(in, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := run(in, dir); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"hit_latency.png", "hit_throughput_2threads.png", "writers.png"} {
		f, err := os.Open(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		img, err := png.Decode(f)
		f.Close()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if b := img.Bounds(); b.Dx() != 1100 || b.Dy() != 640 {
			t.Errorf("%s: %v, want 1100x640", name, b)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "load.png")); !os.IsNotExist(err) {
		t.Errorf("load.png: %v, want no file (no load samples)", err)
	}
}

func TestWritersNotesLoss(t *testing.T) {
	r := results.Results{
		Writers: []int{1, 2}, Impls: []results.Impl{{ID: "d"}},
		Samples: map[string]map[string][]float64{
			"wtput/1": {"d": {1e6}}, "wtput/2": {"d": {2e6}},
			"wlost/1": {"d": {0}}, "wlost/2": {"d": {9000, 11000, 10700}},
		},
	}
	ch := writers(&r, chart{})
	if len(ch.series) != 1 || len(ch.series[0].pts) != 2 {
		t.Fatalf("series %+v, want one with two points", ch.series)
	}
	if n0, n1 := ch.series[0].pts[0].note, ch.series[0].pts[1].note; n0 != "" || n1 != "lost 10.7k" {
		t.Errorf("notes %q, %q; want none at 1 process (nothing lost), \"lost 10.7k\" at 2", n0, n1)
	}
}

// TestColdWarm draws one group per workload the run measured, cold and
// warm bars in each, and none for a workload with no figure.
func TestColdWarm(t *testing.T) {
	r := results.Results{Samples: map[string]map[string][]float64{
		"demo_cold_ms": {"b": {5000, 5100}, "c": {5200}},
		"demo_warm_ms": {"b": {0.2, 0.25}, "c": {5200}},
		"v8_run1_ms":   {"v8": {4800}},
	}}
	ch := coldWarm(&r, chart{})
	if len(ch.xticks) != 1 || ch.xticks[0].label != "the demo (make demo)" {
		t.Fatalf("groups %+v, want the demo only (v8 has no run 2)", ch.xticks)
	}
	if len(ch.series) != 2 || ch.series[0].pts[0].y != 5050 || ch.series[1].pts[0].y != 0.225 {
		t.Fatalf("series %+v, want cold 5050 and warm 0.225 (medians of (b))", ch.series)
	}
	r.Add("v8_run2_ms", "v8", 2)
	if ch := coldWarm(&r, chart{}); len(ch.xticks) != 2 || ch.series[1].pts[1].y != 2 {
		t.Fatalf("with v8's run 2: groups %+v, series %+v", ch.xticks, ch.series)
	}
	if ch := coldWarm(&results.Results{}, chart{}); len(ch.series) != 0 {
		t.Errorf("no samples: series %+v, want none (the chart is left out)", ch.series)
	}
}
