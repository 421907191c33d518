package main

import (
	"image/color"
	"math"
)

type point struct {
	x, y, lo, hi float64 // median and range over the repeats
	note         string  // drawn beside the point
}

type series struct {
	label string
	col   color.RGBA
	shape int
	pts   []point
}

type tick struct {
	v     float64
	label string
}

// chart is a line chart (x log scale) or a grouped bar chart (x categories),
// with a linear or log y axis, whiskers for the range of the repeats, and a
// legend to the right of the plot.
type chart struct {
	title, subtitle, xlabel, ylabel, footnote string
	xlog, ylog, bars                          bool
	xticks                                    []tick
	series                                    []series
}

const (
	width, height = 1100, 640
	left, top     = 130, 86
	right         = width - 300 // the legend lives to the right of this
	bottom        = height - 100
	scale         = 2 // text scale: 10x14-pixel glyphs
)

var (
	black = color.RGBA{0, 0, 0, 255}
	grey  = color.RGBA{90, 90, 90, 255}
	grid  = color.RGBA{222, 222, 222, 255}
	minor = color.RGBA{240, 240, 240, 255}
)

func (ch *chart) draw() *canvas {
	c := newCanvas(width, height)
	c.text(left, 14, ch.title, 3, black)
	c.text(left, 46, clip(ch.subtitle, (width-left-10)/((glyphW+1)*1)), 1, grey)

	// y range over every point's whiskers.
	ymin, ymax := math.Inf(1), math.Inf(-1)
	for _, s := range ch.series {
		for _, p := range s.pts {
			ymin = math.Min(ymin, math.Min(p.lo, p.y))
			ymax = math.Max(ymax, math.Max(p.hi, p.y))
		}
	}
	var yticks []tick
	var yminor []float64
	var ymap func(float64) int
	if ch.ylog {
		lo := math.Floor(math.Log10(ymin))
		hi := math.Ceil(math.Log10(ymax))
		if hi == lo {
			hi++
		}
		ymap = func(v float64) int {
			return bottom - int(math.Round((math.Log10(v)-lo)/(hi-lo)*float64(bottom-top)))
		}
		for e := lo; e <= hi; e++ {
			yticks = append(yticks, tick{math.Pow(10, e), short(math.Pow(10, e))})
			if e < hi {
				for _, m := range []float64{2, 5} {
					yminor = append(yminor, m*math.Pow(10, e))
				}
			}
		}
		if hi-lo <= 2 { // few decades: label 2 and 5 too
			for _, v := range yminor {
				yticks = append(yticks, tick{v, short(v)})
			}
		}
	} else {
		step := niceStep(ymax / 5)
		hi := math.Ceil(ymax/step) * step
		ymap = func(v float64) int { return bottom - int(math.Round(v/hi*float64(bottom-top))) }
		for v := 0.0; v <= hi+step/2; v += step {
			yticks = append(yticks, tick{v, short(v)})
		}
	}

	// x mapping: log scale with half a step of margin, or categories.
	var xmap func(float64) int
	if ch.bars {
		n := float64(len(ch.xticks))
		xmap = func(v float64) int { return left + int((v+0.5)/n*float64(right-left)) }
	} else {
		lo := math.Log10(ch.xticks[0].v)
		hi := math.Log10(ch.xticks[len(ch.xticks)-1].v)
		pad := (hi - lo) * 0.08
		lo, hi = lo-pad, hi+pad
		xmap = func(v float64) int {
			return left + int(math.Round((math.Log10(v)-lo)/(hi-lo)*float64(right-left)))
		}
	}

	// Grid, axes and tick labels.
	for _, v := range yminor {
		if y := ymap(v); y > top && y < bottom {
			c.line(left, y, right, y, 1, minor)
		}
	}
	for _, t := range yticks {
		y := ymap(t.v)
		if y < top-1 || y > bottom+1 {
			continue
		}
		c.line(left, y, right, y, 1, grid)
		c.line(left-6, y, left, y, 2, black)
		c.text(left-10-textWidth(t.label, scale), y-glyphH*scale/2, t.label, scale, black)
	}
	for _, t := range ch.xticks {
		x := xmap(t.v)
		if !ch.bars {
			c.line(x, top, x, bottom, 1, grid)
		}
		c.line(x, bottom, x, bottom+6, 2, black)
		c.text(x-textWidth(t.label, scale)/2, bottom+12, t.label, scale, black)
	}
	c.line(left, top, left, bottom, 2, black)
	c.line(left, bottom, right, bottom, 2, black)
	c.text((left+right)/2-textWidth(ch.xlabel, scale)/2, bottom+40, ch.xlabel, scale, black)
	c.textUp(18, (top+bottom)/2+textWidth(ch.ylabel, scale)/2, ch.ylabel, scale, black)
	if ch.footnote != "" {
		c.text(left, height-26, clip(ch.footnote, (width-left-10)/(glyphW+1)), 1, grey)
	}

	// Data.
	if ch.bars {
		n := len(ch.series)
		group := float64(right-left) / float64(len(ch.xticks))
		bw := int(group * 0.8 / float64(n))
		for i, s := range ch.series {
			for _, p := range s.pts {
				x0 := xmap(p.x) - int(group*0.4) + i*bw
				c.fillRect(x0+2, ymap(p.y), x0+bw-2, bottom-1, s.col)
				mid := x0 + bw/2
				c.line(mid, ymap(p.lo), mid, ymap(p.hi), 2, black)
				label := short(p.y)
				c.text(mid-textWidth(label, 1)/2, ymap(p.hi)-12, label, 1, black)
			}
		}
	} else {
		for _, s := range ch.series {
			for i, p := range s.pts {
				if i > 0 {
					q := s.pts[i-1]
					c.line(xmap(q.x), ymap(q.y), xmap(p.x), ymap(p.y), 3, s.col)
				}
			}
			for _, p := range s.pts {
				x := xmap(p.x)
				c.line(x, ymap(p.lo), x, ymap(p.hi), 2, s.col)
				c.line(x-5, ymap(p.lo), x+5, ymap(p.lo), 2, s.col)
				c.line(x-5, ymap(p.hi), x+5, ymap(p.hi), 2, s.col)
				c.marker(x, ymap(p.y), s.shape, s.col)
				if p.note != "" {
					nx := x + 9
					if nx+textWidth(p.note, scale) > right { // keep clear of the legend
						nx = x - 9 - textWidth(p.note, scale)
					}
					c.text(nx, ymap(p.y)+8, p.note, scale, s.col)
				}
			}
		}
	}

	// Legend.
	ly := top + 4
	for _, s := range ch.series {
		lx := right + 24
		if ch.bars {
			c.fillRect(lx, ly, lx+26, ly+14, s.col)
		} else {
			c.line(lx, ly+7, lx+26, ly+7, 3, s.col)
			c.marker(lx+13, ly+7, s.shape, s.col)
		}
		c.text(lx+34, ly, s.label, scale, black)
		ly += 30
	}
	return c
}

// niceStep rounds a raw tick step up to 1, 2 or 5 times a power of ten.
func niceStep(raw float64) float64 {
	if raw <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= raw {
			return m * p
		}
	}
	return 10 * p
}

// clip shortens s to at most n characters.
func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:max(n-1, 0)]) + "…"
}
