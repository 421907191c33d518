package main

import (
	"image/color"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// barSeries is one implementation's bars in a grouped bar chart: each bar
// centred on its x, width wide in data units, rising from the bottom of the
// y axis. plotter.BarChart cannot stand in: its base is 0, which a log axis
// cannot place, and its offsets are in canvas units, which error bars and
// labels (placed in data units) cannot follow.
type barSeries struct {
	plotter.XYs
	width float64
	color color.Color
}

// gap is the white space left between neighbouring bars.
const gap = 0.12

func (b *barSeries) Plot(c draw.Canvas, plt *plot.Plot) {
	trX, trY := plt.Transforms(&c)
	half := b.width * (1 - gap) / 2
	for _, xy := range b.XYs {
		x0, x1 := trX(xy.X-half), trX(xy.X+half)
		y0, y1 := trY(plt.Y.Min), trY(xy.Y)
		c.FillPolygon(b.color, c.ClipPolygonY([]vg.Point{{X: x0, Y: y0}, {X: x0, Y: y1}, {X: x1, Y: y1}, {X: x1, Y: y0}}))
	}
}

func (b *barSeries) DataRange() (xmin, xmax, ymin, ymax float64) {
	xmin, xmax, ymin, ymax = plotter.XYRange(b)
	return xmin - b.width/2, xmax + b.width/2, ymin, ymax
}

func (b *barSeries) Thumbnail(c *draw.Canvas) {
	r := c.Rectangle
	r.Min.Y += (r.Max.Y - r.Min.Y) / 8
	c.FillPolygon(b.color, c.ClipPolygonY([]vg.Point{r.Min, {X: r.Min.X, Y: r.Max.Y}, r.Max, {X: r.Max.X, Y: r.Min.Y}}))
}
