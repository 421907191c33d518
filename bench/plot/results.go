package main

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

type implInfo struct {
	ID   string `json:"id"`
	Key  string `json:"key"`
	Name string `json:"name"`
}

// results is the part of bench/runner's results.json that the charts use.
// Samples maps "metric/size" to implementation id to every repeat's value.
type results struct {
	Date      string                          `json:"date"`
	Machine   string                          `json:"machine"`
	Sizes     []int                           `json:"sizes"`
	Writers   []int                           `json:"writers"`
	PerWriter int                             `json:"per_writer"`
	Impls     []implInfo                      `json:"impls"`
	Samples   map[string]map[string][]float64 `json:"samples"`
}

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

// pointAt summarises one metric/key for one implementation; ok is false
// where there is nothing a log axis can show.
func (r *results) pointAt(metric string, key int, id string, x float64) (point, bool) {
	med, lo, hi, ok := summary(r.Samples[fmt.Sprintf("%s/%d", metric, key)][id])
	if !ok || !(med > 0) || math.IsInf(med, 0) {
		return point{}, false
	}
	return point{x: x, y: med, lo: lo, hi: hi}, true
}

// perKey is one series per implementation of metric/<key> over keys, each
// at the x that xOf gives; implementations with no point are left out.
func (r *results) perKey(metric string, keys []int, xOf func(i, key int) float64) []series {
	var out []series
	for _, im := range r.Impls {
		s := series{id: im.ID, label: fmt.Sprintf("(%s) %s", im.ID, im.Name)}
		for i, k := range keys {
			if p, ok := r.pointAt(metric, k, im.ID, xOf(i, k)); ok {
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
func perSize(r *results, metric string, ch chart) *chart {
	sizes := positive(r.Sizes)
	for _, n := range sizes {
		ch.xticks = append(ch.xticks, tick{float64(n), sizeLabel(n)})
	}
	ch.series = r.perKey(metric, sizes, func(_, n int) float64 { return float64(n) })
	return &ch
}

// groupedBars is a bar chart of metric/<size>, one group per size.
func groupedBars(r *results, metric string, ch chart) *chart {
	ch.bars = true
	for i, n := range r.Sizes {
		ch.xticks = append(ch.xticks, tick{float64(i), sizeLabel(n) + " entries"})
	}
	ch.series = r.perKey(metric, r.Sizes, func(i, _ int) float64 { return float64(i) })
	return &ch
}

// writers is inserts/s against writer processes, each point noting the
// entries lost (median) where any were.
func writers(r *results, ch chart) *chart {
	procs := positive(r.Writers)
	for _, p := range procs {
		ch.xticks = append(ch.xticks, tick{float64(p), fmt.Sprint(p)})
	}
	ch.series = r.perKey("wtput", procs, func(_, p int) float64 { return float64(p) })
	for si := range ch.series {
		s := &ch.series[si]
		for pi := range s.pts {
			p := int(s.pts[pi].x)
			if lost, _, _, ok := summary(r.Samples[fmt.Sprintf("wlost/%d", p)][s.id]); ok && lost > 0 {
				s.pts[pi].note = "lost " + short(lost)
			}
		}
	}
	return &ch
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
