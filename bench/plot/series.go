package main

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/convcache/convcache/bench/internal/results"
)

type point struct {
	x, y, lo, hi float64 // median and range over the repeats
	note         string  // written below the point
}

type series struct {
	id    string // implementation id: its colour and marker
	label string // in the legend
	pts   []point
}

type tick struct {
	v     float64
	label string
}

// chart is what one PNG shows: a line chart over a log x axis, or grouped
// bars with one group per x tick; the y axis is always log.
type chart struct {
	title, xlabel, ylabel, footnote string
	bars                            bool
	xticks                          []tick
	series                          []series
}

// pointAt summarises one metric/key for one implementation; ok is false
// where there is nothing a log axis can show.
func pointAt(r *results.Results, metric string, key int, id string, x float64) (point, bool) {
	s, ok := r.Stat(fmt.Sprintf("%s/%d", metric, key), id)
	if !ok || !(s.Med > 0) || math.IsInf(s.Med, 0) {
		return point{}, false
	}
	return point{x: x, y: s.Med, lo: s.Min, hi: s.Max}, true
}

// perKey is one series per implementation of metric/<key> over keys, each
// at the x that xOf gives; implementations with no point are left out.
func perKey(r *results.Results, metric string, keys []int, xOf func(i, key int) float64) []series {
	var out []series
	for _, im := range r.Impls {
		s := series{id: im.ID, label: fmt.Sprintf("(%s) %s", im.ID, im.Name)}
		for i, k := range keys {
			if p, ok := pointAt(r, metric, k, im.ID, xOf(i, k)); ok {
				s.pts = append(s.pts, p)
			}
		}
		if len(s.pts) > 0 {
			out = append(out, s)
		}
	}
	return out
}

// positive is the keys a log axis can place.
func positive(keys []int) []int {
	return slices.DeleteFunc(slices.Clone(keys), func(k int) bool { return k <= 0 })
}

// perSize is a line chart of metric/<size> against the sizes.
func perSize(r *results.Results, metric string, ch chart) *chart {
	return perSizeOf(r, r.Sizes, metric, ch)
}

// perSizeOf is a line chart of metric/<size> against the given sizes.
func perSizeOf(r *results.Results, sizes []int, metric string, ch chart) *chart {
	sizes = positive(sizes)
	for _, n := range sizes {
		ch.xticks = append(ch.xticks, tick{float64(n), results.SizeName(n)})
	}
	ch.series = perKey(r, metric, sizes, func(_, n int) float64 { return float64(n) })
	return &ch
}

// groupedBars is a bar chart of metric/<size>, one group per size.
func groupedBars(r *results.Results, metric string, ch chart) *chart {
	ch.bars = true
	for i, n := range r.Sizes {
		ch.xticks = append(ch.xticks, tick{float64(i), results.SizeName(n) + " entries"})
	}
	ch.series = perKey(r, metric, r.Sizes, func(i, _ int) float64 { return float64(i) })
	return &ch
}

// writers is inserts/s against writer processes, each point noting the
// entries lost (median) where any were.
func writers(r *results.Results, ch chart) *chart {
	procs := positive(r.Writers)
	for _, p := range procs {
		ch.xticks = append(ch.xticks, tick{float64(p), fmt.Sprint(p)})
	}
	ch.series = perKey(r, "wtput", procs, func(_, p int) float64 { return float64(p) })
	for si := range ch.series {
		s := &ch.series[si]
		for pi := range s.pts {
			p := int(s.pts[pi].x)
			if lost, ok := r.Stat(fmt.Sprintf("wlost/%d", p), s.id); ok && lost.Med > 0 {
				s.pts[pi].note = "lost " + short(lost.Med)
			}
		}
	}
	return &ch
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

// trim drops a fraction's trailing zeros: 2.50 is 2.5, 2.0 is 2.
func trim(s string) string {
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}

// stat is one metric's point for one id at x; ok is false where a log axis
// cannot place it.
func stat(r *results.Results, metric, id string, x float64) (point, bool) {
	s, ok := r.Stat(metric, id)
	if !ok || !(s.Med > 0) || math.IsInf(s.Med, 0) {
		return point{}, false
	}
	return point{x: x, y: s.Med, lo: s.Min, hi: s.Max}, true
}

// coldWarm is the time spent choosing algorithms in a cold run and in the
// warm run after it, one group per workload: the demo (make demo, through
// the C++ drop-in) and engine choices on cuDNN's backend API, the API of
// PyTorch's default path, stored and rebuilt on the stand-in cuDNN
// (bench/gpu/v8_check). A workload the run did not measure is left out.
func coldWarm(r *results.Results, ch chart) *chart {
	ch.bars = true
	groups := []struct {
		label, cold, warm, id string
	}{
		{"the demo (make demo)", "demo_cold_ms", "demo_warm_ms", "b"},
		{"engine choices, cuDNN backend API (v8), stand-in", "v8_run1_ms", "v8_run2_ms", "v8"},
	}
	cold := series{id: "cold", label: "run 1 (cold)"}
	warm := series{id: "warm", label: "run 2 (warm)"}
	for _, g := range groups {
		x := float64(len(ch.xticks))
		c, okC := stat(r, g.cold, g.id, x)
		w, okW := stat(r, g.warm, g.id, x)
		if !okC || !okW {
			continue
		}
		ch.xticks = append(ch.xticks, tick{x, g.label})
		cold.pts = append(cold.pts, c)
		warm.pts = append(warm.pts, w)
	}
	if len(ch.xticks) > 0 {
		ch.series = []series{cold, warm}
	}
	return &ch
}
