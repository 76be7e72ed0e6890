package plot

import (
	"fmt"
	"io"
	"strconv"
	"time"

	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// maxDrawnSteps is how many steps are drawn as they are. Longer step
// functions are averaged over resampleBuckets equal time buckets first, each
// narrower than a pixel of the data area, so a 100k-segment timeline gives a
// small SVG. The averages keep every kind's node-hours, which is what the
// eye reads from a stacked area.
const (
	maxDrawnSteps   = 4000
	resampleBuckets = 2000
)

// WriteUtilization draws t as a stacked area in format f to w: from the
// bottom regular jobs, calibration base, pilots, idle nodes (and down nodes
// if any), y in nodes from 0 to the machine size, x in hours.
func WriteUtilization(w io.Writer, f Format, t Timeline) error {
	end, err := validate(t)
	if err != nil {
		return err
	}
	steps, err := sweep(t, end)
	if err != nil {
		return err
	}
	return utilizationFigure(t, steps, end).write(w, f)
}

// area is a step function: ys[i] holds from xs[i] to xs[i+1] (hours).
type area struct {
	xs []float64
	ys [][NumKinds]float64
}

func areaOf(steps []Step) area {
	a := area{xs: make([]float64, 0, len(steps)+1), ys: make([][NumKinds]float64, len(steps))}
	for i, s := range steps {
		a.xs = append(a.xs, hours(s.Start))
		for k := range NumKinds {
			a.ys[i][k] = float64(s.Nodes[k])
		}
	}
	if len(steps) > 0 {
		a.xs = append(a.xs, hours(steps[len(steps)-1].End))
	}
	return a
}

// resample averages steps (which cover [0, end) without gaps) over n equal
// buckets in one pass.
func resample(steps []Step, end time.Duration, n int) area {
	a := area{xs: make([]float64, n+1), ys: make([][NumKinds]float64, n)}
	width := float64(end) / float64(n)
	for i := range a.xs {
		a.xs[i] = float64(i) * width / float64(time.Hour)
	}
	b := 0
	for _, s := range steps {
		from, to := float64(s.Start), float64(s.End)
		for b < n && from < to {
			bEnd := float64(b+1) * width
			if b == n-1 {
				bEnd = float64(end)
			}
			upto := min(to, bEnd)
			frac := (upto - from) / width
			for k := range NumKinds {
				a.ys[b][k] += frac * float64(s.Nodes[k])
			}
			from = upto
			if upto == bEnd {
				b++
			}
		}
	}
	return a
}

// layerRing is the polygon from y=0 up to the sum of kinds 0..top.
func layerRing(a area, top Kind) []xy {
	ring := make([]xy, 0, 2*len(a.ys)+2)
	ring = append(ring, xy{a.xs[0], 0})
	prev := -1.0
	for i, y := range a.ys {
		var h float64
		for k := Kind(0); k <= top; k++ {
			h += y[k]
		}
		if i > 0 && h == prev {
			ring[len(ring)-1].x = a.xs[i+1]
			continue
		}
		ring = append(ring, xy{a.xs[i], h}, xy{a.xs[i+1], h})
		prev = h
	}
	return append(ring, xy{a.xs[len(a.xs)-1], 0})
}

func utilizationFigure(t Timeline, steps []Step, end time.Duration) figure {
	m := means(steps)
	used := m[Regular] + m[CalibrationBase] + m[Pilot]
	avail := float64(t.Nodes) - m[Down]
	sub := fmt.Sprintf("nominal utilization %.2f%%: %.2f of %d nodes in use on average",
		100*used/max(avail, 1e-9), used, t.Nodes)
	p := newPlot()
	p.Y.Label.Text = "nodes"
	p.Y.Min = 0
	p.X.Max = hours(end)
	p.Y.Tick.Marker = nodeTicker(t.Nodes)

	a := areaOf(steps)
	if len(steps) > maxDrawnSteps {
		a = resample(steps, end, resampleBuckets)
	}
	present := [NumKinds]bool{Regular: true, CalibrationBase: true, Pilot: true, Idle: true, Down: m[Down] > 0}
	// Painter's order: each layer reaches from 0 to the top of its kind
	// and hides the part of the layer above it that it overlaps, so
	// neighbouring areas meet without seams.
	for k := Kind(NumKinds - 1); k >= 0; k-- {
		if present[k] && len(a.ys) > 0 {
			p.Add(&fill{rings: [][]xy{layerRing(a, k)}, color: KindColor(k)})
		}
	}
	p.Add(gridLines{style: draw.LineStyle{Color: colorGrid, Width: vg.Points(0.5)}})
	p.Add(hline{y: float64(t.Nodes), style: draw.LineStyle{Color: colorMark, Width: vg.Points(1)}})

	var mk marks
	for _, mark := range t.Marks {
		if mark.At <= end {
			mk.at = append(mk.at, hours(mark.At))
			mk.labels = append(mk.labels, mark.Label)
		}
	}
	// Leave headroom above the machine size for the mark labels, or a
	// sliver so that the machine-size line is not on the frame.
	p.Y.Max = float64(t.Nodes) * 1.03
	var legend []legendEntry
	for k := range Kind(NumKinds) {
		if present[k] {
			legend = append(legend, legendEntry{KindColor(k), fmt.Sprintf("%s (%.2f)", k, m[k])})
		}
	}
	legend = append(legend, legendEntry{label: "mean nodes in parentheses"})
	h := UtilizationHeight
	if len(mk.at) > 0 {
		p.Add(mk)
		dataH := h - legendHeight(legend, Width) - vg.Points(110)
		need := vg.Length(min(markRows, len(mk.at)))*(markText.Height("Xg")+vg.Points(2)) + vg.Points(6)
		p.Y.Max = float64(t.Nodes) * float64(dataH) / float64(dataH-need)
	}
	return figure{title: t.Title, subtitle: sub, p: p, legend: legend, w: Width, h: h}
}

// nodeTicker labels the default ticks up to the machine size and the machine
// size itself, dropping default ticks too close to it.
func nodeTicker(nodes int) gplot.Ticker {
	return gplot.TickerFunc(func(lo, hi float64) []gplot.Tick {
		n := float64(nodes)
		var out []gplot.Tick
		for _, t := range (gplot.DefaultTicks{}).Ticks(lo, n) {
			if t.Value > n || (t.Value < n && t.Value > 0.92*n && !t.IsMinor()) || t.Value == n {
				continue
			}
			out = append(out, t)
		}
		return append(out, gplot.Tick{Value: n, Label: strconv.Itoa(nodes)})
	})
}
