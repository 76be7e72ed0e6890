package plot_test

import (
	"errors"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/glean-hpc/glean/sidecar/sim/plot"
)

const h = time.Hour

// nodes builds a Step.Nodes value: regular, calibration base, pilots, idle, down.
func nodes(reg, cal, pilot, idle, down int) [plot.NumKinds]int {
	var n [plot.NumKinds]int
	n[plot.Regular], n[plot.CalibrationBase], n[plot.Pilot], n[plot.Idle], n[plot.Down] = reg, cal, pilot, idle, down
	return n
}

func TestStack(t *testing.T) {
	for _, tc := range []struct {
		name string
		tl   plot.Timeline
		want []plot.Step
	}{
		{
			name: "small",
			tl:   smallTimeline(), // 10 nodes: r 0-2h x4, c 1-3h x5, p 2-3h x5
			want: []plot.Step{
				{Start: 0, End: h, Nodes: nodes(4, 0, 0, 6, 0)},
				{Start: h, End: 2 * h, Nodes: nodes(4, 5, 0, 1, 0)},
				{Start: 2 * h, End: 3 * h, Nodes: nodes(0, 5, 5, 0, 0)},
			},
		},
		{
			name: "idle before the first and after the last segment",
			tl: plot.Timeline{Nodes: 8, Window: 5 * h, Segments: []plot.Segment{
				{Kind: plot.Regular, Start: h, End: 2 * h, Nodes: 3},
				{Kind: plot.Down, Start: 90 * time.Minute, End: 3 * h, Nodes: 2},
			}},
			want: []plot.Step{
				{Start: 0, End: h, Nodes: nodes(0, 0, 0, 8, 0)},
				{Start: h, End: 90 * time.Minute, Nodes: nodes(3, 0, 0, 5, 0)},
				{Start: 90 * time.Minute, End: 2 * h, Nodes: nodes(3, 0, 0, 3, 2)},
				{Start: 2 * h, End: 3 * h, Nodes: nodes(0, 0, 0, 6, 2)},
				{Start: 3 * h, End: 5 * h, Nodes: nodes(0, 0, 0, 8, 0)},
			},
		},
		{
			name: "window cuts segments off; later segments still count for nothing drawn",
			tl: plot.Timeline{Nodes: 4, Window: 90 * time.Minute, Segments: []plot.Segment{
				{Kind: plot.Pilot, Start: 0, End: 2 * h, Nodes: 4},
				{Kind: plot.Regular, Start: 3 * h, End: 4 * h, Nodes: 4},
			}},
			want: []plot.Step{{Start: 0, End: 90 * time.Minute, Nodes: nodes(0, 0, 4, 0, 0)}},
		},
		{
			name: "a pilot handing over to another at the same instant is one step; empty segments ignored",
			tl: plot.Timeline{Nodes: 4, Segments: []plot.Segment{
				{Kind: plot.Pilot, Start: 0, End: h, Nodes: 2},
				{Kind: plot.Pilot, Start: h, End: 2 * h, Nodes: 2},
				{Kind: plot.Regular, Start: 30 * time.Minute, End: 30 * time.Minute, Nodes: 4},
				{Kind: plot.Regular, Start: 0, End: 2 * h, Nodes: 2},
			}},
			want: []plot.Step{{Start: 0, End: 2 * h, Nodes: nodes(2, 0, 2, 0, 0)}},
		},
		{
			name: "job ends exactly when another starts on the same nodes: no overflow",
			tl: plot.Timeline{Nodes: 5, Segments: []plot.Segment{
				{Kind: plot.Regular, Start: 0, End: h, Nodes: 5},
				{Kind: plot.CalibrationBase, Start: h, End: 2 * h, Nodes: 5},
			}},
			want: []plot.Step{
				{Start: 0, End: h, Nodes: nodes(5, 0, 0, 0, 0)},
				{Start: h, End: 2 * h, Nodes: nodes(0, 5, 0, 0, 0)},
			},
		},
		{
			name: "no segments, only a window",
			tl:   plot.Timeline{Nodes: 3, Window: h},
			want: []plot.Step{{Start: 0, End: h, Nodes: nodes(0, 0, 0, 3, 0)}},
		},
		{
			name: "a mark past the last segment extends the range",
			tl: plot.Timeline{Nodes: 3, Marks: []plot.Mark{{At: 2 * h, Label: "end"}}, Segments: []plot.Segment{
				{Kind: plot.Regular, Start: 0, End: h, Nodes: 1},
			}},
			want: []plot.Step{
				{Start: 0, End: h, Nodes: nodes(1, 0, 0, 2, 0)},
				{Start: h, End: 2 * h, Nodes: nodes(0, 0, 0, 3, 0)},
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := plot.Stack(tc.tl)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got\n%v\nwant\n%v", got, tc.want)
			}
		})
	}
}

// TestStackMatchesSampling compares the sweep with counting every minute on
// random timelines whose times are whole minutes.
func TestStackMatchesSampling(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for iter := range 300 {
		const machine = 16
		tl := plot.Timeline{Nodes: machine}
		if iter%3 == 0 {
			tl.Window = time.Duration(1+rng.IntN(300)) * time.Minute
		}
		// Segments on disjoint lanes so that the machine never overflows.
		for lane := range 4 {
			at := 0
			for range rng.IntN(6) {
				at += rng.IntN(30)
				d := rng.IntN(60)
				kind := []plot.Kind{plot.Regular, plot.CalibrationBase, plot.Pilot, plot.Down}[rng.IntN(4)]
				tl.Segments = append(tl.Segments, plot.Segment{
					Kind: kind, Job: string(rune('a' + lane)),
					Start: time.Duration(at) * time.Minute, End: time.Duration(at+d) * time.Minute,
					Nodes: 1 + rng.IntN(machine/4),
				})
				at += d
			}
		}
		steps, err := plot.Stack(tl)
		if err != nil {
			if strings.Contains(err.Error(), "empty time range") {
				continue
			}
			t.Fatal(err)
		}
		end := steps[len(steps)-1].End
		if steps[0].Start != 0 {
			t.Fatalf("first step starts at %v", steps[0].Start)
		}
		for i, s := range steps {
			if s.End <= s.Start || (i > 0 && (s.Start != steps[i-1].End || s.Nodes == steps[i-1].Nodes)) {
				t.Fatalf("bad step %d in %v", i, steps)
			}
		}
		for m := time.Duration(0); m < end; m += time.Minute {
			want := nodes(0, 0, 0, machine, 0)
			for _, s := range tl.Segments {
				if s.Start <= m && m < s.End {
					want[s.Kind] += s.Nodes
					want[plot.Idle] -= s.Nodes
				}
			}
			var got [plot.NumKinds]int
			for _, s := range steps {
				if s.Start <= m && m < s.End {
					got = s.Nodes
				}
			}
			if got != want {
				t.Fatalf("at %v: sweep %v, sampling %v\nsegments %v\nsteps %v", m, got, want, tl.Segments, steps)
			}
		}
	}
}

func TestStackErrors(t *testing.T) {
	seg := func(k plot.Kind, start, end time.Duration, n int) plot.Segment {
		return plot.Segment{Kind: k, Job: "j", Start: start, End: end, Nodes: n}
	}
	for _, tc := range []struct {
		name string
		tl   plot.Timeline
		want []string
	}{
		{"machine size zero", plot.Timeline{Nodes: 0, Window: h}, []string{"machine size (Nodes) is 0"}},
		{"machine size negative", plot.Timeline{Nodes: -3, Window: h}, []string{"machine size (Nodes) is -3"}},
		{"negative window", plot.Timeline{Nodes: 4, Window: -h}, []string{"negative Window -1h0m0s"}},
		{"negative start", plot.Timeline{Nodes: 4, Segments: []plot.Segment{seg(plot.Regular, -time.Second, h, 1)}},
			[]string{`segment 0 (job "j"): negative Start -1s`}},
		{"end before start", plot.Timeline{Nodes: 4, Segments: []plot.Segment{seg(plot.Pilot, 0, h, 1), seg(plot.Pilot, 2*h, h, 1)}},
			[]string{`segment 1 (job "j"): End 1h0m0s is before Start 2h0m0s`}},
		{"zero nodes", plot.Timeline{Nodes: 4, Segments: []plot.Segment{seg(plot.Regular, 0, h, 0)}},
			[]string{"Nodes is 0, must be > 0"}},
		{"negative nodes", plot.Timeline{Nodes: 4, Segments: []plot.Segment{seg(plot.Regular, 0, h, -2)}},
			[]string{"Nodes is -2, must be > 0"}},
		{"segment larger than the machine", plot.Timeline{Nodes: 4, Segments: []plot.Segment{seg(plot.Regular, 0, h, 5)}},
			[]string{"5 nodes on a 4-node machine"}},
		{"idle is not an input", plot.Timeline{Nodes: 4, Segments: []plot.Segment{seg(plot.Idle, 0, h, 1)}},
			[]string{"kind idle is derived"}},
		{"unknown kind", plot.Timeline{Nodes: 4, Segments: []plot.Segment{seg(plot.Kind(42), 0, h, 1)}},
			[]string{"unknown kind 42"}},
		{"negative mark", plot.Timeline{Nodes: 4, Window: h, Marks: []plot.Mark{{At: -h, Label: "x"}}},
			[]string{`mark 0 ("x"): negative time -1h0m0s`}},
		{"empty range", plot.Timeline{Nodes: 4}, []string{"empty time range"}},
		{"all problems at once", plot.Timeline{Nodes: 0, Segments: []plot.Segment{seg(plot.Regular, -h, -2*h, 0)}},
			[]string{"3 problems", "machine size", "negative Start", "Nodes is 0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := plot.Stack(tc.tl)
			if !errors.Is(err, plot.ErrInvalid) {
				t.Fatalf("err = %v, want ErrInvalid", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

func TestStackManyProblemsAreCapped(t *testing.T) {
	tl := plot.Timeline{Nodes: 1}
	for range 1000 {
		tl.Segments = append(tl.Segments, plot.Segment{Start: -1, End: h, Nodes: 1})
	}
	_, err := plot.Stack(tl)
	if err == nil || !strings.Contains(err.Error(), "1000 problems") || !strings.Contains(err.Error(), "and 990 more") {
		t.Fatalf("err = %v", err)
	}
	if n := strings.Count(err.Error(), "negative Start"); n != 10 {
		t.Errorf("%d problems listed, want 10", n)
	}
}

func TestStackOverflowNamesTheTime(t *testing.T) {
	tl := plot.Timeline{Nodes: 24, Segments: []plot.Segment{
		{Kind: plot.Regular, Start: 0, End: 5 * h, Nodes: 14},
		{Kind: plot.CalibrationBase, Start: h, End: 5 * h, Nodes: 5},
		{Kind: plot.Pilot, Start: 0, End: 3*h + 25*time.Minute, Nodes: 5},
		{Kind: plot.Pilot, Start: 3*h + 25*time.Minute, End: 4 * h, Nodes: 6}, // one too many
	}}
	_, err := plot.Stack(tl)
	var of *plot.OverflowError
	if !errors.As(err, &of) || !errors.Is(err, plot.ErrInvalid) {
		t.Fatalf("err = %v, want an *OverflowError wrapping ErrInvalid", err)
	}
	if of.At != 3*h+25*time.Minute || of.Used != 25 || of.Nodes != 24 || of.ByKind != nodes(14, 5, 6, 0, 0) {
		t.Errorf("got %+v", of)
	}
	for _, w := range []string{"at 3h25m0s", "25 nodes are in use on a 24-node machine", "regular 14", "calibration base 5", "pilots 6"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not mention %q", err, w)
		}
	}
	// The same through the drawing functions, and past the Window too.
	tl.Window = h
	if err := plot.WriteUtilization(new(strings.Builder), plot.PNG, tl); !errors.As(err, &of) {
		t.Errorf("WriteUtilization: err = %v, want an *OverflowError", err)
	}
}

func TestKindNames(t *testing.T) {
	want := []string{"regular", "calibration base", "pilots", "idle", "down"}
	for k := range plot.Kind(plot.NumKinds) {
		if k.String() != want[k] {
			t.Errorf("Kind(%d) = %q, want %q", k, k, want[k])
		}
	}
	if plot.Kind(9).String() != "Kind(9)" {
		t.Error(plot.Kind(9).String())
	}
}
