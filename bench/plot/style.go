package main

import (
	"image/color"

	xfont "golang.org/x/image/font"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

var (
	black = color.Gray{0}
	grey  = color.Gray{85}
	light = color.Gray{222}
)

// look is an implementation's colour and marker, fixed so that every chart
// agrees; an id not listed is drawn in black circles.
type look struct {
	col   color.Color
	glyph draw.GlyphDrawer
}

var looks = map[string]look{
	"a": {color.RGBA{31, 100, 200, 255}, draw.CircleGlyph{}},
	"b": {color.RGBA{20, 150, 70, 255}, draw.BoxGlyph{}},
	"c": {color.RGBA{220, 100, 20, 255}, draw.PyramidGlyph{}},
	"d": {color.RGBA{120, 120, 120, 255}, polygon{{X: 0, Y: 1.3}, {X: 1.1, Y: 0}, {X: 0, Y: -1.3}, {X: -1.1, Y: 0}}},
	"e": {color.RGBA{150, 60, 170, 255}, polygon{{X: -1.1, Y: 0.8}, {X: 1.1, Y: 0.8}, {X: 0, Y: -1.3}}},
	// The cold and warm runs of the cold_warm chart.
	"cold": {color.RGBA{200, 70, 50, 255}, draw.CircleGlyph{}},
	"warm": {color.RGBA{20, 150, 70, 255}, draw.CircleGlyph{}},
}

// polygon is a filled marker with these corners (in radii from the point):
// gonum's filled markers are the circle, box and triangle, and five series
// need five shapes that stay apart at a glance.
type polygon []vg.Point

func (g polygon) DrawGlyph(c *draw.Canvas, sty draw.GlyphStyle, pt vg.Point) {
	var path vg.Path
	for i, v := range g {
		at := vg.Point{X: pt.X + v.X*sty.Radius, Y: pt.Y + v.Y*sty.Radius}
		if i == 0 {
			path.Move(at)
		} else {
			path.Line(at)
		}
	}
	path.Close()
	c.Fill(path)
}

func lookOf(id string) look {
	if l, ok := looks[id]; ok {
		return l
	}
	return look{black, draw.CircleGlyph{}}
}

func init() {
	// Sans serif, as charts usually are; gonum's default is Liberation Serif.
	sans := font.Font{Typeface: "Liberation", Variant: "Sans"}
	plot.DefaultFont, plotter.DefaultFont = sans, sans
}

func textStyle(size vg.Length, weight xfont.Weight, col color.Color) text.Style {
	f := font.From(plot.DefaultFont, size)
	f.Weight = weight
	return text.Style{Font: f, Color: col, Handler: plot.DefaultTextHandler}
}
