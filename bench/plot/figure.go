package main

import (
	"image/color"
	"math"
	"os"
	"slices"

	xfont "golang.org/x/image/font"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// The page: 1100x640 pixels, the title and run above the plot, the legend to
// its right (it would hide points inside), an optional footnote below.
const (
	width, height = vg.Length(825), vg.Length(480) // points; 96 dpi gives the pixels
	dpi           = 96
	margin        = vg.Length(12)
	header        = vg.Length(58) // title and subtitle
	legendWidth   = vg.Length(205)
)

// save draws the chart, with subtitle under its title, as a PNG file.
func (ch *chart) save(path, subtitle string) error {
	p, legend, err := ch.plot()
	if err != nil {
		return err
	}
	img := vgimg.NewWith(vgimg.UseWH(width, height), vgimg.UseDPI(dpi), vgimg.UseBackgroundColor(color.White))
	c := draw.New(img)
	title := textStyle(17, xfont.WeightBold, black)
	title.YAlign = text.YTop
	c.FillText(title, vg.Point{X: margin, Y: height - margin}, ch.title)
	sub := textStyle(9, xfont.WeightNormal, grey)
	sub.YAlign = text.YTop
	c.FillText(sub, vg.Point{X: margin, Y: height - margin - 25}, subtitle)
	bottom := margin
	if ch.footnote != "" {
		c.FillText(textStyle(9, xfont.WeightNormal, grey), vg.Point{X: margin, Y: margin}, ch.footnote)
		bottom += 18
	}
	// The y label is drawn here, not by p: p pads the plot to fit a label
	// centred on the axis's arithmetic middle, near the top of a log axis.
	ylabel := textStyle(12, xfont.WeightNormal, black)
	ylabel.Rotation, ylabel.XAlign, ylabel.YAlign = math.Pi/2, text.XCenter, text.YTop
	area := draw.Crop(c, margin+ylabel.Height(ch.ylabel)+6, -legendWidth, bottom, -header)
	data := p.DataCanvas(area)
	c.FillText(ylabel, vg.Point{X: margin, Y: data.Center().Y}, ch.ylabel)
	p.Draw(area)
	legend.Draw(draw.Crop(c, width-legendWidth+16, -margin, bottom, -header))

	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// plot is the chart's axes and data, and its legend to draw beside them.
func (ch *chart) plot() (*plot.Plot, plot.Legend, error) {
	p := plot.New()
	p.X.Label.Text = ch.xlabel // the y label: see save
	p.X.Tick.Label.Font.Size, p.Y.Tick.Label.Font.Size = 11, 11
	grid := plotter.NewGrid()
	grid.Horizontal = draw.LineStyle{Color: light, Width: 0.75}
	grid.Vertical = grid.Horizontal
	p.Add(grid)
	legend := plot.NewLegend()
	legend.Top, legend.Left = true, true
	legend.Padding, legend.ThumbnailWidth = 5, 26

	var ticks plot.ConstantTicks
	for _, t := range ch.xticks {
		ticks = append(ticks, plot.Tick{Value: t.v, Label: t.label})
	}
	p.X.Tick.Marker = ticks
	// The axes' ranges are set after the data: p.Add widens them to fit it.
	var err error
	if ch.bars {
		grid.Vertical.Color = nil
		p.X.Padding, p.Y.Padding = 0, 0
		err = ch.addBars(p, &legend)
		p.X.Min, p.X.Max = -0.5, float64(len(ticks))-0.5
	} else {
		p.X.Scale = plot.LogScale{}
		err = ch.addLines(p, &legend)
		p.X.Min, p.X.Max = paddedLog(ticks[0].Value, ticks[len(ticks)-1].Value, 0.08)
	}
	p.Y.Scale, p.Y.Tick.Marker = logFromMin{}, decadeTicks{}
	p.Y.Min, p.Y.Max = decades(ch.series)
	return p, legend, err
}

// errorBars are the whiskers from each point's low to its high sample.
func errorBars(s series, col color.Color, capWidth vg.Length) (*plotter.YErrorBars, error) {
	var data struct {
		plotter.XYs
		plotter.YErrors
	}
	for _, pt := range s.pts {
		data.XYs = append(data.XYs, plotter.XY{X: pt.x, Y: pt.y})
		data.YErrors = append(data.YErrors, struct{ Low, High float64 }{pt.y - pt.lo, pt.hi - pt.y})
	}
	e, err := plotter.NewYErrorBars(data)
	if err != nil {
		return nil, err
	}
	e.Color, e.Width, e.CapWidth = col, 1.5, capWidth
	return e, nil
}

// labels writes text[i] at xys[i], centred, above (YBottom) or below (YTop).
func labels(xys plotter.XYs, txt []string, col color.Color, size vg.Length, align text.YAlignment, dy vg.Length) (*plotter.Labels, error) {
	l, err := plotter.NewLabels(plotter.XYLabels{XYs: xys, Labels: txt})
	if err != nil {
		return nil, err
	}
	for i := range l.TextStyle {
		l.TextStyle[i] = textStyle(size, xfont.WeightNormal, col)
		l.TextStyle[i].XAlign, l.TextStyle[i].YAlign = text.XCenter, align
	}
	l.Offset = vg.Point{Y: dy}
	return l, nil
}

// addLines draws each series as a line with markers and whiskers, and its
// notes below the low whisker.
func (ch *chart) addLines(p *plot.Plot, legend *plot.Legend) error {
	for _, s := range ch.series {
		lk := lookOf(s.id)
		xys := make(plotter.XYs, len(s.pts))
		var noteAt plotter.XYs
		var notes []string
		for i, pt := range s.pts {
			xys[i] = plotter.XY{X: pt.x, Y: pt.y}
			if pt.note != "" {
				noteAt = append(noteAt, plotter.XY{X: pt.x, Y: pt.lo})
				notes = append(notes, pt.note)
			}
		}
		line, err := plotter.NewLine(xys)
		if err != nil {
			return err
		}
		line.Color, line.Width = lk.col, 2
		dots, err := plotter.NewScatter(xys)
		if err != nil {
			return err
		}
		dots.GlyphStyle = draw.GlyphStyle{Color: lk.col, Shape: lk.glyph, Radius: 4}
		whiskers, err := errorBars(s, lk.col, 8)
		if err != nil {
			return err
		}
		p.Add(line, whiskers, dots)
		legend.Add(s.label, line, dots)
		if len(notes) > 0 {
			l, err := labels(noteAt, notes, lk.col, 11, text.YTop, -5)
			if err != nil {
				return err
			}
			p.Add(l)
		}
	}
	return nil
}

// addBars draws one bar per series in each group (80% of the group's
// width), black whiskers, and each median written above its whisker.
func (ch *chart) addBars(p *plot.Plot, legend *plot.Legend) error {
	const group = 0.8
	w := group / float64(len(ch.series))
	for j, s := range ch.series {
		lk := lookOf(s.id)
		s.pts = slices.Clone(s.pts) // moved to the bar's place in its group
		var xys, tops plotter.XYs
		var values []string
		for i := range s.pts {
			s.pts[i].x += -group/2 + (float64(j)+0.5)*w
			pt := s.pts[i]
			xys = append(xys, plotter.XY{X: pt.x, Y: pt.y})
			tops = append(tops, plotter.XY{X: pt.x, Y: pt.hi})
			values = append(values, short(pt.y))
		}
		b := &barSeries{XYs: xys, width: w, color: lk.col}
		whiskers, err := errorBars(s, black, 4)
		if err != nil {
			return err
		}
		l, err := labels(tops, values, black, 9, text.YBottom, 3)
		if err != nil {
			return err
		}
		p.Add(b, whiskers, l)
		legend.Add(s.label, b)
	}
	return nil
}
