package plot

import (
	"image/color"
	"math"

	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

type xy struct{ x, y float64 }

// fill draws filled polygons without outlines (outlines of adjacent areas
// would show as seams). The rings must not overlap.
type fill struct {
	rings [][]xy
	color color.Color
}

func (f *fill) Plot(c draw.Canvas, p *gplot.Plot) {
	trX, trY := p.Transforms(&c)
	var path vg.Path
	var pts []vg.Point
	for _, ring := range f.rings {
		pts = pts[:0]
		for _, q := range ring {
			pts = append(pts, vg.Point{X: trX(q.x), Y: trY(q.y)})
		}
		pts = c.ClipPolygonXY(pts)
		if len(pts) < 3 {
			continue
		}
		path.Move(pts[0])
		for _, q := range pts[1:] {
			path.Line(q)
		}
		path.Close()
	}
	if len(path) == 0 {
		return
	}
	c.SetColor(f.color)
	c.Fill(path)
}

func (f *fill) DataRange() (xmin, xmax, ymin, ymax float64) {
	xmin, ymin = math.Inf(1), math.Inf(1)
	xmax, ymax = math.Inf(-1), math.Inf(-1)
	for _, ring := range f.rings {
		for _, q := range ring {
			xmin, xmax = math.Min(xmin, q.x), math.Max(xmax, q.x)
			ymin, ymax = math.Min(ymin, q.y), math.Max(ymax, q.y)
		}
	}
	return
}

// rect is the ring of an axis-aligned rectangle.
func rect(x0, y0, x1, y1 float64) []xy {
	return []xy{{x0, y0}, {x1, y0}, {x1, y1}, {x0, y1}}
}

// hline is a horizontal line across the data area.
type hline struct {
	y     float64
	style draw.LineStyle
}

func (h hline) Plot(c draw.Canvas, p *gplot.Plot) {
	_, trY := p.Transforms(&c)
	y := trY(h.y)
	c.StrokeLine2(h.style, c.Min.X, y, c.Max.X, y)
}

// gridLines draws faint lines at the labelled ticks of one axis.
type gridLines struct {
	vertical bool
	style    draw.LineStyle
}

func (g gridLines) Plot(c draw.Canvas, p *gplot.Plot) {
	trX, trY := p.Transforms(&c)
	a, tr := &p.Y, trY
	if g.vertical {
		a, tr = &p.X, trX
	}
	for _, t := range a.Tick.Marker.Ticks(a.Min, a.Max) {
		if t.IsMinor() || t.Value <= a.Min || t.Value >= a.Max {
			continue
		}
		v := tr(t.Value)
		if g.vertical {
			c.StrokeLine2(g.style, v, c.Min.Y, v, c.Max.Y)
		} else {
			c.StrokeLine2(g.style, c.Min.X, v, c.Max.X, v)
		}
	}
}

var markStyle = draw.LineStyle{
	Color:  colorMark,
	Width:  vg.Points(1),
	Dashes: []vg.Length{vg.Points(4), vg.Points(3)},
}

var markText = text.Style{
	Color:   colorMark,
	Font:    sans(9),
	Handler: gplot.DefaultTextHandler,
	YAlign:  draw.YTop,
}

// markRows is how many rows of mark labels the headroom above the data
// holds; labels that would overlap go to the next row.
const markRows = 2

// marks draws vertical dashed lines with labels at the top of the data area,
// in the headroom the caller leaves for them. A label goes right of its
// line, or left of it, in the first of markRows rows where it neither
// overlaps another label nor crosses another line.
type marks struct {
	at     []float64 // hours
	labels []string
}

func (m marks) Plot(c draw.Canvas, p *gplot.Plot) {
	trX, _ := p.Transforms(&c)
	xs := make([]vg.Length, len(m.at))
	for i, at := range m.at {
		xs[i] = trX(at)
		c.StrokeLine2(markStyle, xs[i], c.Min.Y, xs[i], c.Max.Y)
	}
	const gap = 3 // points between a line and its label
	lineH := markText.Height("Xg") + vg.Points(2)
	var taken [markRows][][2]vg.Length // label x intervals per row
	free := func(i, row int, lo, hi vg.Length) bool {
		if lo < c.Min.X || hi > c.Max.X {
			return false
		}
		for j, x := range xs {
			if j != i && lo-gap < x && x < hi+gap {
				return false
			}
		}
		for _, iv := range taken[row] {
			if lo < iv[1]+2*gap && iv[0] < hi+2*gap {
				return false
			}
		}
		return true
	}
	for i, label := range m.labels {
		if label == "" {
			continue
		}
		x, w := xs[i], markText.Width(label)
		right := [2]vg.Length{x + gap, x + gap + w}
		left := [2]vg.Length{x - gap - w, x - gap}
		row, iv := 0, right
		if right[1] > c.Max.X {
			iv = left
		}
	search:
		for r := range markRows {
			for _, cand := range [][2]vg.Length{right, left} {
				if free(i, r, cand[0], cand[1]) {
					row, iv = r, cand
					break search
				}
			}
		}
		taken[row] = append(taken[row], iv)
		c.FillText(markText, vg.Point{X: iv[0], Y: c.Max.Y - vg.Points(2) - vg.Length(row)*lineH}, label)
	}
}

// textLabels draws texts at data points, left-aligned and vertically centred.
type textLabels struct {
	at    []xy
	texts []string
	style text.Style
}

func (l textLabels) Plot(c draw.Canvas, p *gplot.Plot) {
	trX, trY := p.Transforms(&c)
	for i, q := range l.at {
		c.FillText(l.style, vg.Point{X: trX(q.x) + vg.Points(4), Y: trY(q.y)}, l.texts[i])
	}
}
