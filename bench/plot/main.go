// Command plot draws the benchmark charts from bench/runner's results.json
// as PNG files, with the standard library only (image, image/png) and a
// small built-in bitmap font, so that a fresh machine needs no plotting
// package.
//
// Usage (make bench runs it):
//
//	plot -in build/bench/results.json -out build/bench
//
// It writes hit_latency.png, hit_throughput_2threads.png, writers.png and
// load.png.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"slices"
)

type implInfo struct {
	ID   string `json:"id"`
	Key  string `json:"key"`
	Name string `json:"name"`
}

type results struct {
	Date      string                          `json:"date"`
	Machine   string                          `json:"machine"`
	Sizes     []int                           `json:"sizes"`
	Writers   []int                           `json:"writers"`
	PerWriter int                             `json:"per_writer"`
	Impls     []implInfo                      `json:"impls"`
	Samples   map[string]map[string][]float64 `json:"samples"`
}

// Colours and markers per implementation, fixed so that every chart agrees.
var style = map[string]struct {
	col   color.RGBA
	shape int
	label string
}{
	"a": {color.RGBA{31, 100, 200, 255}, 0, "(a) convcache C ABI"},
	"b": {color.RGBA{20, 150, 70, 255}, 1, "(b) convcache C++"},
	"c": {color.RGBA{220, 100, 20, 255}, 2, "(c) PyTorch map"},
	"d": {color.RGBA{120, 120, 120, 255}, 3, "(d) naive file"},
	"e": {color.RGBA{150, 60, 170, 255}, 0, "(e) SQLite WAL"},
}

func main() {
	in := flag.String("in", "build/bench/results.json", "results written by bench/runner")
	out := flag.String("out", "build/bench", "directory for the PNG files")
	flag.Parse()
	b, err := os.ReadFile(*in)
	if err != nil {
		fatal(err)
	}
	var r results
	if err := json.Unmarshal(b, &r); err != nil {
		fatal(fmt.Errorf("%s: %v", *in, err))
	}
	sub := fmt.Sprintf("%s · %s", r.Date, r.Machine)
	charts := map[string]*chart{
		"hit_latency.png": perSize(&r, "hit1_ns", chart{
			title: "find hit latency, 1 thread", subtitle: sub,
			xlabel: "entries in the cache", ylabel: "ns per find (log)", ylog: true,
		}),
		"hit_throughput_2threads.png": bars(&r, "mops2", chart{
			title: "find hit throughput, 2 threads", subtitle: sub,
			xlabel: "entries in the cache", ylabel: "million finds/s (log)", ylog: true,
		}),
		"load.png": perSize(&r, "load_ms", chart{
			title: "load: cold process to first answer", subtitle: sub,
			xlabel: "entries in the file", ylabel: "ms (log)", ylog: true,
		}),
		"writers.png": writers(&r, chart{
			title: "concurrent writer processes, one store", subtitle: sub,
			xlabel: fmt.Sprintf("processes, each inserting %d distinct keys", r.PerWriter),
			ylabel: "inserts/s, all processes (log)", ylog: true,
			footnote: "Labels: entries lost (median). Naive file: each process writes the whole map at exit; the last one wins.",
		}),
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		fatal(err)
	}
	names := make([]string, 0, len(charts))
	for n := range charts {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, name := range names {
		ch := charts[name]
		if len(ch.series) == 0 {
			continue
		}
		p := filepath.Join(*out, name)
		if err := ch.draw().save(p); err != nil {
			fatal(err)
		}
		fmt.Fprintf(os.Stderr, "plot: wrote %s\n", p)
	}
}

func fatal(err error) {
	fmt.Fprintf(os.Stderr, "plot: %v\n", err)
	os.Exit(1)
}

// summary is the median and range of a metric's samples.
func summary(v []float64) (med, lo, hi float64, ok bool) {
	if len(v) == 0 {
		return 0, 0, 0, false
	}
	s := slices.Clone(v)
	slices.Sort(s)
	med = s[len(s)/2]
	if len(s)%2 == 0 {
		med = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return med, s[0], s[len(s)-1], true
}

func sizeLabel(n int) string {
	switch {
	case n >= 1000000 && n%1000000 == 0:
		return fmt.Sprintf("%dM", n/1000000)
	case n >= 1000 && n%1000 == 0:
		return fmt.Sprintf("%dk", n/1000)
	}
	return fmt.Sprint(n)
}

// perSize is a line chart of metric/<size> against the sizes (log x).
func perSize(r *results, metric string, ch chart) *chart {
	ch.xlog = true
	for _, n := range r.Sizes {
		ch.xticks = append(ch.xticks, tick{float64(n), sizeLabel(n)})
	}
	for _, im := range r.Impls {
		s := newSeries(im.ID)
		for _, n := range r.Sizes {
			if med, lo, hi, ok := summary(r.Samples[fmt.Sprintf("%s/%d", metric, n)][im.ID]); ok && med > 0 {
				s.pts = append(s.pts, point{x: float64(n), y: med, lo: lo, hi: hi})
			}
		}
		if len(s.pts) > 0 {
			ch.series = append(ch.series, s)
		}
	}
	return &ch
}

// bars is a grouped bar chart of metric/<size>, one group per size.
func bars(r *results, metric string, ch chart) *chart {
	ch.bars = true
	for i, n := range r.Sizes {
		ch.xticks = append(ch.xticks, tick{float64(i), sizeLabel(n) + " entries"})
	}
	for _, im := range r.Impls {
		s := newSeries(im.ID)
		for i, n := range r.Sizes {
			if med, lo, hi, ok := summary(r.Samples[fmt.Sprintf("%s/%d", metric, n)][im.ID]); ok && med > 0 {
				s.pts = append(s.pts, point{x: float64(i), y: med, lo: lo, hi: hi})
			}
		}
		if len(s.pts) > 0 {
			ch.series = append(ch.series, s)
		}
	}
	return &ch
}

// writers is inserts/s against writer processes, labelled with entries lost.
func writers(r *results, ch chart) *chart {
	ch.xlog = true
	for _, p := range r.Writers {
		ch.xticks = append(ch.xticks, tick{float64(p), fmt.Sprint(p)})
	}
	for _, im := range r.Impls {
		s := newSeries(im.ID)
		for _, p := range r.Writers {
			med, lo, hi, ok := summary(r.Samples[fmt.Sprintf("wtput/%d", p)][im.ID])
			if !ok || med <= 0 {
				continue
			}
			pt := point{x: float64(p), y: med, lo: lo, hi: hi}
			if lost, _, _, ok := summary(r.Samples[fmt.Sprintf("wlost/%d", p)][im.ID]); ok && lost > 0 {
				pt.note = "lost " + short(lost)
			}
			s.pts = append(s.pts, pt)
		}
		if len(s.pts) > 0 {
			ch.series = append(ch.series, s)
		}
	}
	return &ch
}

func newSeries(id string) series {
	st, ok := style[id]
	if !ok {
		st.col, st.label = color.RGBA{0, 0, 0, 255}, id
	}
	return series{label: st.label, col: st.col, shape: st.shape}
}

// short formats a number compactly: 950, 9.5k, 95k, 9.5M.
func short(v float64) string {
	a := math.Abs(v)
	switch {
	case a >= 1e6:
		return trim(fmt.Sprintf("%.1f", v/1e6)) + "M"
	case a >= 1e3:
		return trim(fmt.Sprintf("%.1f", v/1e3)) + "k"
	case a >= 1:
		return trim(fmt.Sprintf("%.1f", v))
	case a == 0:
		return "0"
	}
	return trim(fmt.Sprintf("%.2f", v))
}

func trim(s string) string {
	if len(s) > 2 && s[len(s)-2:] == ".0" {
		return s[:len(s)-2]
	}
	return s
}
