package main

import (
	"image"
	"image/color"
	"image/png"
	"os"
)

// canvas is an RGBA image with the few drawing operations the charts need.
type canvas struct {
	img *image.RGBA
}

func newCanvas(w, h int) *canvas {
	c := &canvas{image.NewRGBA(image.Rect(0, 0, w, h))}
	c.fillRect(0, 0, w, h, color.RGBA{255, 255, 255, 255})
	return c
}

func (c *canvas) set(x, y int, col color.RGBA) {
	if image.Pt(x, y).In(c.img.Rect) {
		c.img.SetRGBA(x, y, col)
	}
}

func (c *canvas) fillRect(x0, y0, x1, y1 int, col color.RGBA) {
	if x0 > x1 {
		x0, x1 = x1, x0
	}
	if y0 > y1 {
		y0, y1 = y1, y0
	}
	for y := y0; y < y1; y++ {
		for x := x0; x < x1; x++ {
			c.set(x, y, col)
		}
	}
}

// line draws a line w pixels wide (Bresenham with a square brush).
func (c *canvas) line(x0, y0, x1, y1, w int, col color.RGBA) {
	dx, dy := abs(x1-x0), -abs(y1-y0)
	sx, sy := 1, 1
	if x0 > x1 {
		sx = -1
	}
	if y0 > y1 {
		sy = -1
	}
	err := dx + dy
	for {
		c.fillRect(x0-w/2, y0-w/2, x0-w/2+w, y0-w/2+w, col)
		if x0 == x1 && y0 == y1 {
			return
		}
		e2 := 2 * err
		if e2 >= dy {
			err += dy
			x0 += sx
		}
		if e2 <= dx {
			err += dx
			y0 += sy
		}
	}
}

// marker draws a filled marker of the given shape centred on (x, y).
func (c *canvas) marker(x, y, shape int, col color.RGBA) {
	const r = 5
	for dy := -r; dy <= r; dy++ {
		for dx := -r; dx <= r; dx++ {
			in := false
			switch shape % 4 {
			case 0: // disc
				in = dx*dx+dy*dy <= r*r
			case 1: // square
				in = abs(dx) <= r-1 && abs(dy) <= r-1
			case 2: // diamond
				in = abs(dx)+abs(dy) <= r
			case 3: // triangle
				in = dy >= -r && dy <= r-1 && 2*abs(dx) <= dy+r
			}
			if in {
				c.set(x+dx, y+dy, col)
			}
		}
	}
}

// textWidth is the width in pixels of s at the given scale.
func textWidth(s string, scale int) int {
	n := len([]rune(s))
	if n == 0 {
		return 0
	}
	return n*(glyphW+1)*scale - scale
}

// text draws s with its top-left corner at (x, y).
func (c *canvas) text(x, y int, s string, scale int, col color.RGBA) {
	for _, r := range s {
		for gy, row := range glyphBits(r) {
			for gx, ch := range row {
				if ch == '#' {
					c.fillRect(x+gx*scale, y+gy*scale, x+(gx+1)*scale, y+(gy+1)*scale, col)
				}
			}
		}
		x += (glyphW + 1) * scale
	}
}

// textUp draws s rotated a quarter turn counter-clockwise, reading upwards,
// with the start of its baseline-side edge at (x, y).
func (c *canvas) textUp(x, y int, s string, scale int, col color.RGBA) {
	for _, r := range s {
		for gy, row := range glyphBits(r) {
			for gx, ch := range row {
				if ch == '#' {
					px, py := x+gy*scale, y-(gx+1)*scale
					c.fillRect(px, py, px+scale, py+scale, col)
				}
			}
		}
		y -= (glyphW + 1) * scale
	}
}

func (c *canvas) save(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := png.Encode(f, c.img); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}
