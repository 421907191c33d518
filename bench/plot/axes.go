package main

import (
	"math"

	"gonum.org/v1/plot"
)

// logFromMin is plot.LogScale with every value at or below the axis minimum
// drawn at the minimum: bars rise from the axis (their base is 0), and a
// whisker whose low end is not positive stops there; LogScale panics on both.
type logFromMin struct{}

func (logFromMin) Normalize(min, max, x float64) float64 {
	if !(x > min) {
		x = min
	}
	return plot.LogScale{}.Normalize(min, max, x)
}

// decadeTicks labels every power of ten with a grid line and marks 2..9
// times it; over two decades or fewer, 2 and 5 are labelled too.
type decadeTicks struct{}

func (decadeTicks) Ticks(min, max float64) []plot.Tick {
	lo, hi := math.Floor(math.Log10(min)), math.Ceil(math.Log10(max))
	few := hi-lo <= 2
	var ticks []plot.Tick
	for e := lo; e <= hi; e++ {
		base := math.Pow(10, e)
		ticks = append(ticks, plot.Tick{Value: base, Label: short(base)})
		for m := 2.0; m <= 9 && e < hi; m++ {
			t := plot.Tick{Value: m * base}
			if few && (m == 2 || m == 5) {
				t.Label = short(t.Value)
			}
			ticks = append(ticks, t)
		}
	}
	return ticks
}

// decades is the range of whole powers of ten that holds every point and
// its whiskers (non-positive ends left out: a log axis cannot place them).
func decades(ss []series) (lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, s := range ss {
		for _, p := range s.pts {
			for _, v := range []float64{p.y, p.lo, p.hi} {
				if v > 0 && !math.IsInf(v, 0) {
					lo, hi = math.Min(lo, v), math.Max(hi, v)
				}
			}
		}
	}
	if lo > hi { // no point: any decade will do
		return 1, 10
	}
	lo, hi = math.Pow(10, math.Floor(math.Log10(lo))), math.Pow(10, math.Ceil(math.Log10(hi)))
	if hi <= lo {
		hi = lo * 10
	}
	return lo, hi
}

// paddedLog is [first, last] widened by frac of its log width on each side,
// so that the first and last points and their whiskers clear the frame.
func paddedLog(first, last, frac float64) (lo, hi float64) {
	a, b := math.Log10(first), math.Log10(last)
	pad := math.Max((b-a)*frac, 0.1)
	return math.Pow(10, a-pad), math.Pow(10, b+pad)
}
