package plot

import (
	"bytes"
	"fmt"
	"image/color"
	"io"
	"math"
	"strconv"

	xfont "golang.org/x/image/font"
	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// Size and resolution of the images.
const (
	// Width is the width of every figure.
	Width = 9 * vg.Inch
	// UtilizationHeight is the height of a utilization figure.
	UtilizationHeight = 4.8 * vg.Inch
	// DPI is the resolution of PNG output: a utilization PNG is
	// 1350x720 pixels.
	DPI = 150
)

// Colours, the same in every figure so that figures of different modes can be
// compared side by side (Okabe-Ito/Tableau-like, distinguishable with the
// common colour-vision deficiencies and in greyscale by lightness).
var (
	colorRegular     = color.NRGBA{R: 0x3b, G: 0x6f, B: 0xb6, A: 0xff} // blue
	colorCalibration = color.NRGBA{R: 0xf2, G: 0x8e, B: 0x2b, A: 0xff} // orange
	colorPilot       = color.NRGBA{R: 0x3a, G: 0xa3, B: 0x5a, A: 0xff} // green
	colorIdle        = color.NRGBA{R: 0xdd, G: 0xdd, B: 0xdd, A: 0xff} // light grey
	colorDown        = color.NRGBA{R: 0x77, G: 0x77, B: 0x77, A: 0xff} // dark grey
	colorWait        = color.NRGBA{R: 0xfb, G: 0xd5, B: 0xac, A: 0xff} // pale orange
	colorMark        = color.NRGBA{R: 0x22, G: 0x22, B: 0x22, A: 0xff}
	colorGrid        = color.NRGBA{R: 0x00, G: 0x00, B: 0x00, A: 0x30}
	colorNote        = color.NRGBA{R: 0x55, G: 0x55, B: 0x55, A: 0xff}
)

// KindColor is the fill colour of k in the utilization figures.
func KindColor(k Kind) color.Color {
	switch k {
	case Regular:
		return colorRegular
	case CalibrationBase:
		return colorCalibration
	case Pilot:
		return colorPilot
	case Idle:
		return colorIdle
	case Down:
		return colorDown
	}
	return color.Black
}

func sans(size vg.Length) font.Font {
	return font.From(font.Font{Typeface: "Liberation", Variant: "Sans"}, size)
}

var bold = font.Font{Typeface: "Liberation", Variant: "Sans", Weight: xfont.WeightBold}

// newPlot returns a plot with our fonts and an x axis in hours. The title is
// drawn by figure.write.
func newPlot() *gplot.Plot {
	p := gplot.New()
	for _, a := range []*gplot.Axis{&p.X, &p.Y} {
		a.Label.TextStyle.Font = sans(11)
		a.Tick.Label.Font = sans(10)
		a.Padding = vg.Points(3)
	}
	p.X.Label.Text = "hours since the workload started"
	p.X.Min = 0
	p.X.Tick.Marker = hoursTicker()
	return p
}

// legendEntry is one swatch and its text in a legend row.
type legendEntry struct {
	fill  color.Color
	label string
}

var (
	titleStyle = text.Style{
		Color: color.Black, Font: font.From(bold, 13), Handler: gplot.DefaultTextHandler,
		XAlign: draw.XCenter, YAlign: draw.YTop,
	}
	subtitleStyle = text.Style{
		Color: colorNote, Font: sans(11), Handler: gplot.DefaultTextHandler,
		XAlign: draw.XCenter, YAlign: draw.YTop,
	}
)

var legendStyle = text.Style{
	Color:   color.Black,
	Font:    sans(10),
	Handler: gplot.DefaultTextHandler,
	YAlign:  draw.YCenter,
}

const (
	swatch    = 11 // points, side of a legend swatch
	legendGap = 16 // points between legend entries
	legendPad = 6  // points above and below a legend row
)

// legendRows splits entries into rows that fit width.
func legendRows(entries []legendEntry, width vg.Length) [][]legendEntry {
	var rows [][]legendEntry
	var row []legendEntry
	var w vg.Length
	for _, e := range entries {
		ew := entryWidth(e)
		if len(row) > 0 && w+legendGap+ew > width {
			rows = append(rows, row)
			row, w = nil, 0
		}
		if len(row) > 0 {
			w += legendGap
		}
		row = append(row, e)
		w += ew
	}
	if len(row) > 0 {
		rows = append(rows, row)
	}
	return rows
}

func entryWidth(e legendEntry) vg.Length {
	if e.fill == nil {
		return legendStyle.Width(e.label)
	}
	return swatch + 4 + legendStyle.Width(e.label)
}

func rowHeight() vg.Length { return max(vg.Points(swatch), legendStyle.Height("Xg")) + legendPad }

// legendHeight is the height of the legend drawn by drawLegend.
func legendHeight(entries []legendEntry, width vg.Length) vg.Length {
	return vg.Length(len(legendRows(entries, width)))*rowHeight() + legendPad
}

// drawLegend draws entries as centered rows at the bottom of c.
func drawLegend(c draw.Canvas, entries []legendEntry) {
	rows := legendRows(entries, c.Max.X-c.Min.X)
	y := c.Min.Y + legendPad + vg.Length(len(rows))*rowHeight() - rowHeight()/2
	for _, row := range rows {
		var w vg.Length
		for i, e := range row {
			if i > 0 {
				w += legendGap
			}
			w += entryWidth(e)
		}
		x := (c.Min.X+c.Max.X)/2 - w/2
		for _, e := range row {
			tx := x
			if e.fill != nil {
				box := []vg.Point{
					{X: x, Y: y - swatch/2}, {X: x + swatch, Y: y - swatch/2},
					{X: x + swatch, Y: y + swatch/2}, {X: x, Y: y + swatch/2},
				}
				c.FillPolygon(e.fill, box)
				c.StrokeLines(draw.LineStyle{Color: colorGrid, Width: vg.Points(0.5)}, append(box, box[0]))
				tx += swatch + 4
			}
			sty := legendStyle
			if e.fill == nil {
				sty.Color = colorNote
			}
			c.FillText(sty, vg.Point{X: tx, Y: y}, e.label)
			x += entryWidth(e) + legendGap
		}
		y -= rowHeight()
	}
}

// figure is a plot with a legend row below it.
type figure struct {
	title, subtitle string
	p               *gplot.Plot
	legend          []legendEntry
	w, h            vg.Length
}

// write renders fig in format f to w. A panic inside the plotting library
// becomes an error.
func (fig figure) write(out io.Writer, f Format) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("rendering the plot failed: %v", r)
		}
	}()
	var (
		canvas vg.CanvasWriterTo
		sizer  vg.CanvasSizer
	)
	switch f {
	case PNG:
		c := vgimg.NewWith(vgimg.UseWH(fig.w, fig.h), vgimg.UseDPI(DPI))
		canvas, sizer = vgimg.PngCanvas{Canvas: c}, c
	case SVG:
		c := vgsvg.New(fig.w, fig.h)
		canvas, sizer = c, c
	default:
		return fmt.Errorf("unknown plot format %v", f)
	}
	dc := draw.New(sizer)
	dc = draw.Crop(dc, vg.Points(4), -vg.Points(12), 0, -vg.Points(6))
	for _, line := range []struct {
		text  string
		style text.Style
	}{{fig.title, titleStyle}, {fig.subtitle, subtitleStyle}} {
		if line.text == "" {
			continue
		}
		c := vg.Point{X: (dc.Min.X + dc.Max.X) / 2, Y: dc.Max.Y}
		dc.FillText(line.style, c, line.text)
		dc.Max.Y -= line.style.Height(line.text) + vg.Points(3)
	}
	lh := legendHeight(fig.legend, dc.Max.X-dc.Min.X)
	pc := draw.Crop(dc, 0, 0, lh, 0)
	fig.p.Draw(pc)
	drawLegend(draw.Crop(dc, 0, 0, 0, -(dc.Max.Y-dc.Min.Y-lh)), fig.legend)
	if f != SVG {
		_, err = canvas.WriteTo(out)
		return err
	}
	var buf bytes.Buffer
	if _, err := canvas.WriteTo(&buf); err != nil {
		return err
	}
	// The SVG names the font used for layout but does not embed it (that
	// would add about 1 MB). Liberation Sans has the metrics of Arial, so
	// let viewers without it fall back to Arial or another sans-serif face
	// rather than their default serif one.
	_, err = out.Write(bytes.ReplaceAll(buf.Bytes(),
		[]byte("font-family:Liberation Sans;"),
		[]byte("font-family:'Liberation Sans',Arial,Helvetica,sans-serif;")))
	return err
}

// hoursTicker labels whole multiples of a step that suits hours (1, 2, 3,
// 6, 12, 24 h, ...; fractions of an hour for short runs, labelled h:mm),
// about 5 to 12 of them.
func hoursTicker() gplot.Ticker {
	return gplot.TickerFunc(func(lo, hi float64) []gplot.Tick {
		span := hi - lo
		if !finite(lo, hi) || span <= 0 {
			return []gplot.Tick{{Value: lo, Label: strconv.FormatFloat(lo, 'g', 4, 64)}}
		}
		step := 0.0
		for _, s := range []float64{1.0 / 60, 5.0 / 60, 0.25, 0.5, 1, 2, 3, 6, 12, 24, 48, 72, 168, 336, 720} {
			if span/s <= 12 {
				step = s
				break
			}
		}
		if step == 0 { // more than a year: nice multiples of 720 h
			step = 720 * math.Pow(10, math.Ceil(math.Log10(span/720/12)))
		}
		var ticks []gplot.Tick
		for v := math.Ceil(lo/step) * step; v <= hi+step*1e-9; v += step {
			label := strconv.FormatFloat(v, 'f', -1, 64)
			if step < 1 { // fractions of an hour read as h:mm (0:05, 1:30), not 0.083
				m := int(math.Round(v * 60))
				label = fmt.Sprintf("%d:%02d", m/60, m%60)
			}
			ticks = append(ticks, gplot.Tick{Value: v, Label: label})
		}
		return ticks
	})
}

// finite reports whether all values are finite; NaN or Inf in the data would
// make the plotting library misbehave.
func finite(xs ...float64) bool {
	for _, x := range xs {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return false
		}
	}
	return true
}
