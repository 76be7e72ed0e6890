package plot_test

import (
	"flag"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/glean-hpc/glean/sidecar/sim/plot"
)

var exampleDir = flag.String("example-dir", "", "also write the example figures to this directory, to look at them")

type listJob struct {
	nodes       int
	calibration bool
	run, submit time.Duration
}

func sec(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// list1 is the thesis's "Submit list 1" (appendix 8.2.1): 24 nodes, 15
// regular jobs and 4 calibration jobs taking 5 nodes for 4 hours. Submit
// times printed in milliseconds in the thesis are converted to seconds.
var list1 = []listJob{
	{4, false, sec(7077), sec(3405)},
	{2, false, sec(3530), sec(6744)},
	{5, true, sec(14400), sec(13125)},
	{7, false, sec(11862), sec(21556)},
	{5, true, sec(14400), sec(27934)},
	{3, false, sec(12145), sec(3995.5)},
	{4, false, sec(12002), sec(6235.156)},
	{6, false, sec(5017), sec(11996.676)},
	{4, false, sec(10373), sec(12551.23)},
	{5, true, sec(14400), sec(14016.994)},
	{7, false, sec(8930), sec(18259.084)},
	{9, false, sec(8359), sec(24192.376)},
	{9, false, sec(9591), sec(25775.085)},
	{9, false, sec(9447), sec(36696.69)},
	{5, false, sec(9459), sec(36697.98)},
	{5, true, sec(14400), sec(36767.426)},
	{5, false, sec(12146), sec(36771.775)},
	{8, false, sec(11484), sec(36773.06)},
	{5, false, sec(9798), sec(37318.439)},
}

// fcfs schedules jobs first come, first served (no backfilling) on a
// machine of size nodes and cuts everything off at end: a stand-in for the
// simulator, good enough to produce thesis-like figures.
func fcfs(jobs []listJob, nodes int, end time.Duration) (segs []plot.Segment, bars []plot.Bar) {
	order := make([]int, len(jobs))
	for i := range order {
		order[i] = i
	}
	// Insertion sort by submit time keeps the list order for ties.
	for i := 1; i < len(order); i++ {
		for j := i; j > 0 && jobs[order[j]].submit < jobs[order[j-1]].submit; j-- {
			order[j], order[j-1] = order[j-1], order[j]
		}
	}
	type running struct {
		until time.Duration
		nodes int
	}
	var run []running
	free := nodes
	now := time.Duration(0)
	for _, i := range order {
		j := jobs[i]
		now = max(now, j.submit)
		for free < j.nodes {
			// Wait for the earliest finish.
			k := 0
			for x := range run {
				if run[x].until < run[k].until {
					k = x
				}
			}
			now = max(now, run[k].until)
			free += run[k].nodes
			run = append(run[:k], run[k+1:]...)
		}
		// Release everything finished by now.
		for x := 0; x < len(run); {
			if run[x].until <= now {
				free += run[x].nodes
				run = append(run[:x], run[x+1:]...)
				continue
			}
			x++
		}
		free -= j.nodes
		run = append(run, running{now + j.run, j.nodes})
		kind := plot.Regular
		if j.calibration {
			kind = plot.CalibrationBase
		}
		if now < end {
			segs = append(segs, plot.Segment{Kind: kind, Job: fmt.Sprint(i), Start: now, End: min(now+j.run, end), Nodes: j.nodes})
		}
		if j.calibration {
			start := min(now, end)
			bars = append(bars, plot.Bar{Job: fmt.Sprintf("job %d", i), Submit: j.submit, Start: start, Finish: min(now+j.run, end)})
		}
	}
	return segs, bars
}

// withPilots fills every idle hole of t with pilots.
func withPilots(t plot.Timeline) (plot.Timeline, error) {
	steps, err := plot.Stack(t)
	if err != nil {
		return t, err
	}
	t.Segments = append([]plot.Segment(nil), t.Segments...)
	for _, s := range steps {
		if n := s.Nodes[plot.Idle]; n > 0 {
			t.Segments = append(t.Segments, plot.Segment{Kind: plot.Pilot, Job: "pilot", Start: s.Start, End: s.End, Nodes: n})
		}
	}
	return t, nil
}

// list1Timelines returns the Slurm-only and the pilot-filled timeline of
// list1 and the Gantt bars of its calibration jobs.
func list1Timelines(t testing.TB) (plain, pilots plot.Timeline, bars []plot.Bar, end time.Duration) {
	last := list1[len(list1)-1].submit
	end = last + 30*time.Minute // the thesis stops 30 min after the last submission
	segs, bars := fcfs(list1, 24, end)
	plain = plot.Timeline{
		Title:    "Slurm-only mode, non-busy case (submit list 1)",
		Nodes:    24,
		Segments: segs,
		Window:   end,
		Marks:    []plot.Mark{{At: last, Label: "last submission"}},
	}
	pilots, err := withPilots(plain)
	if err != nil {
		t.Fatal(err)
	}
	pilots.Title = "Scale mode, non-busy case (submit list 1)"
	return plain, pilots, bars, end
}

func exampleOut(t *testing.T, name string) string {
	if *exampleDir != "" {
		return filepath.Join(*exampleDir, name)
	}
	return filepath.Join(t.TempDir(), name)
}

// TestThesisExample draws figures like the thesis's 5.2-5.5. Run with
// -args -example-dir=/tmp to keep them.
func TestThesisExample(t *testing.T) {
	plain, pilots, bars, end := list1Timelines(t)
	files := map[string]func(path string) error{
		"plot-example-slurm.png": func(p string) error { return plot.Utilization(plain, p) },
		"plot-example.png":       func(p string) error { return plot.Utilization(pilots, p) },
		"plot-example.svg":       func(p string) error { return plot.Utilization(pilots, p) },
		"gantt-example.png": func(p string) error {
			return plot.Gantt(bars, "Calibration jobs, Slurm-only mode, non-busy case", p,
				plot.Mark{At: end, Label: "simulation ends"})
		},
	}
	for name, draw := range files {
		path := exampleOut(t, name)
		if err := draw(path); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		checkImage(t, path)
	}
}
