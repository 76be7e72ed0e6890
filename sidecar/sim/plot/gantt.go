package plot

import (
	"fmt"
	"io"
	"math"
	"time"

	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Gantt figure geometry.
const (
	ganttRow      = 0.3 * vg.Inch // height per job
	ganttFrame    = 1.6 * vg.Inch // title, x axis and legend
	ganttMinH     = 3 * vg.Inch   // height with few jobs
	ganttMaxH     = 14 * vg.Inch  // height cap; rows get thinner beyond it
	ganttBar      = 0.62          // bar thickness, in rows
	ganttMaxNotes = 60            // more rows than this: no per-row numbers
	ganttTickRoom = vg.Length(11) // points per labelled row
)

// GanttHeight is the height of a Gantt figure with n rows.
func GanttHeight(n int) vg.Length {
	return min(max(ganttFrame+vg.Length(n)*ganttRow, ganttMinH), ganttMaxH)
}

// WriteGantt draws one row per bar, top to bottom in the given order, in
// format f to w: a pale bar while the job waits (Submit to Start), a solid
// one while it runs (Start to Finish), and Finish-Submit in minutes after
// it. Marks are drawn as vertical lines, e.g. the end of the simulation.
func WriteGantt(w io.Writer, f Format, bars []Bar, title string, marks ...Mark) error {
	end, err := validateBars(bars, marks)
	if err != nil {
		return err
	}
	return ganttFigure(bars, title, marks, end).write(w, f)
}

func validateBars(bars []Bar, marks []Mark) (time.Duration, error) {
	var p problems
	if len(bars) == 0 {
		p.add("no bars to draw")
	}
	var end time.Duration
	for i, b := range bars {
		name := barName{i, b.Job}
		switch {
		case b.Submit < 0:
			p.add("%s: negative Submit %v", name, b.Submit)
		case b.Start < b.Submit:
			p.add("%s: Start %v is before Submit %v", name, b.Start, b.Submit)
		case b.Finish < b.Start:
			p.add("%s: Finish %v is before Start %v", name, b.Finish, b.Start)
		}
		end = max(end, b.Finish)
	}
	for i, m := range marks {
		if m.At < 0 {
			p.add("mark %d (%q): negative time %v", i, m.Label, m.At)
		}
		end = max(end, m.At)
	}
	if p.n == 0 && end == 0 {
		p.add("empty time range: every bar and mark is at 0")
	}
	return end, p.err()
}

type barName struct {
	i   int
	job string
}

func (n barName) String() string {
	if n.job == "" {
		return fmt.Sprintf("bar %d", n.i)
	}
	return fmt.Sprintf("bar %d (job %q)", n.i, n.job)
}

func ganttFigure(bars []Bar, title string, ms []Mark, end time.Duration) figure {
	n := len(bars)
	h := GanttHeight(n)
	p := newPlot()
	notes := n <= ganttMaxNotes

	// Row i is centred at y = n-1-i so that the first bar is on top.
	var waits, runs [][]xy
	var noteAt []xy
	var noteText []string
	names := make([]string, n)
	for i, b := range bars {
		y := float64(n - 1 - i)
		y0, y1 := y-ganttBar/2, y+ganttBar/2
		s, st, fi := hours(b.Submit), hours(b.Start), hours(b.Finish)
		if st > s {
			waits = append(waits, rect(s, y0, st, y1))
		}
		if fi > st {
			runs = append(runs, rect(st, y0, fi, y1))
		}
		if notes {
			noteAt = append(noteAt, xy{fi, y})
			noteText = append(noteText, fmt.Sprintf("%.0f min", (b.Finish-b.Submit).Minutes()))
		}
		names[i] = b.Job
		if names[i] == "" {
			names[i] = fmt.Sprintf("#%d", i)
		}
	}
	p.Add(gridLines{vertical: true, style: draw.LineStyle{Color: colorGrid, Width: vg.Points(0.5)}})
	p.Add(&fill{rings: waits, color: colorWait}, &fill{rings: runs, color: colorCalibration})

	noteStyle := text.Style{Color: colorNote, Font: sans(9), Handler: gplot.DefaultTextHandler, YAlign: draw.YCenter}
	xmax := hours(end)
	if notes {
		p.Add(textLabels{at: noteAt, texts: noteText, style: noteStyle})
		// Room for the numbers right of the latest bar: their width as
		// a share of the data area, which is roughly the figure width
		// less the job names and margins.
		var widest vg.Length
		for _, t := range noteText {
			widest = max(widest, noteStyle.Width(t))
		}
		dataW := Width - vg.Inch
		frac := float64(widest+vg.Points(8)) / float64(dataW)
		xmax = xmax / (1 - min(frac, 0.5))
	}
	p.X.Max = xmax

	p.Y.Min = -0.5
	p.Y.Max = float64(n) - 0.5
	var mk marks
	for _, m := range ms {
		mk.at = append(mk.at, hours(m.At))
		mk.labels = append(mk.labels, m.Label)
	}
	if len(ms) > 0 {
		p.Add(mk)
		// Headroom for the mark labels above the top row.
		rows := float64(n) * float64(vg.Length(min(markRows, len(ms)))*(markText.Height("Xg")+vg.Points(2))+vg.Points(4)) /
			float64(h-ganttFrame)
		p.Y.Max += math.Max(rows, 0.4)
	}
	p.Y.Tick.Marker = rowTicker(names, h)
	p.Y.Tick.Length = 0
	p.Y.Width = 0
	p.Y.Padding = vg.Points(4)

	legend := []legendEntry{
		{colorWait, "waiting (submit to start)"},
		{colorCalibration, "running (start to finish)"},
	}
	if notes {
		legend = append(legend, legendEntry{label: "numbers: finish minus submit"})
	}
	return figure{title: title, p: p, legend: legend, w: Width, h: h}
}

// rowTicker labels the rows with the job names; with too many rows for the
// height, only every k-th.
func rowTicker(names []string, h vg.Length) gplot.Ticker {
	return gplot.TickerFunc(func(lo, hi float64) []gplot.Tick {
		n := len(names)
		per := float64(h-ganttFrame) / float64(n) // points per row
		k := max(1, int(math.Ceil(float64(ganttTickRoom)/per)))
		var ticks []gplot.Tick
		for i := 0; i < n; i += k {
			ticks = append(ticks, gplot.Tick{Value: float64(n - 1 - i), Label: names[i]})
		}
		return ticks
	})
}
