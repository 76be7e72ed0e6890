package plot_test

import (
	"bytes"
	"errors"
	"image/png"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/glean-hpc/glean/sidecar/sim/plot"
	"gonum.org/v1/plot/vg"
)

// checkImage checks that path holds a decodable PNG or an SVG document and
// returns the PNG's size in pixels (0, 0 for SVG).
func checkImage(t testing.TB, path string) (w, h int) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(data) == 0 {
		t.Fatalf("%s is empty", path)
	}
	switch strings.ToLower(filepath.Ext(path)) {
	case ".png":
		img, err := png.Decode(bytes.NewReader(data))
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		b := img.Bounds()
		return b.Dx(), b.Dy()
	case ".svg":
		checkSVG(t, data)
		return 0, 0
	}
	t.Fatalf("%s: unexpected extension", path)
	return 0, 0
}

func checkSVG(t testing.TB, data []byte) {
	t.Helper()
	s := strings.TrimSpace(string(data))
	if !strings.HasPrefix(s, "<?xml") && !strings.HasPrefix(s, "<svg") {
		t.Fatalf("SVG starts with %q", s[:min(len(s), 40)])
	}
	if !strings.HasSuffix(s, "</svg>") {
		t.Fatalf("SVG does not end with </svg>: %q", s[max(0, len(s)-40):])
	}
}

func pixels(l vg.Length) int { return int(float64(l)/float64(vg.Inch)*plot.DPI + 0.5) }

func smallTimeline() plot.Timeline {
	return plot.Timeline{
		Title: "small",
		Nodes: 10,
		Segments: []plot.Segment{
			{Kind: plot.Regular, Job: "r1", Start: 0, End: 2 * time.Hour, Nodes: 4},
			{Kind: plot.CalibrationBase, Job: "c1", Start: time.Hour, End: 3 * time.Hour, Nodes: 5},
			{Kind: plot.Pilot, Job: "p1", Start: 2 * time.Hour, End: 3 * time.Hour, Nodes: 5},
		},
		Marks: []plot.Mark{{At: time.Hour, Label: "last submission"}},
	}
}

func TestUtilizationWritesPNGAndSVG(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"u.png", "u.svg", "U.PNG"} {
		path := filepath.Join(dir, name)
		if err := plot.Utilization(smallTimeline(), path); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		w, h := checkImage(t, path)
		if strings.HasSuffix(name, ".svg") {
			continue
		}
		if ww, wh := pixels(plot.Width), pixels(plot.UtilizationHeight); w != ww || h != wh {
			t.Errorf("%s is %dx%d, want %dx%d", name, w, h, ww, wh)
		}
	}
}

func TestGanttWritesPNGAndSVG(t *testing.T) {
	bars := []plot.Bar{
		{Job: "44", Submit: 0, Start: 0, Finish: 4 * time.Hour},
		{Job: "45", Submit: time.Hour, Start: 3 * time.Hour, Finish: 7 * time.Hour},
		{Job: "46", Submit: 2 * time.Hour, Start: 9 * time.Hour, Finish: 9 * time.Hour}, // never ran
	}
	dir := t.TempDir()
	for _, name := range []string{"g.png", "g.svg"} {
		path := filepath.Join(dir, name)
		if err := plot.Gantt(bars, "calibration jobs", path, plot.Mark{At: 9 * time.Hour, Label: "end"}); err != nil {
			t.Fatal(err)
		}
		w, h := checkImage(t, path)
		if name == "g.png" {
			if ww, wh := pixels(plot.Width), pixels(plot.GanttHeight(len(bars))); w != ww || h != wh {
				t.Errorf("%s is %dx%d, want %dx%d", name, w, h, ww, wh)
			}
		}
	}
}

func TestGanttHeightGrowsAndCaps(t *testing.T) {
	if plot.GanttHeight(1) != plot.GanttHeight(4) {
		t.Error("few rows should get the minimum height")
	}
	if !(plot.GanttHeight(30) > plot.GanttHeight(10)) {
		t.Error("height should grow with the rows")
	}
	if plot.GanttHeight(10000) != plot.GanttHeight(100000) {
		t.Error("height should be capped")
	}
}

func TestManyGanttRows(t *testing.T) {
	// More rows than fit labels or per-row numbers.
	var bars []plot.Bar
	for i := range 500 {
		s := time.Duration(i) * time.Minute
		bars = append(bars, plot.Bar{Job: "j", Submit: s, Start: s + 10*time.Minute, Finish: s + time.Hour})
	}
	var buf bytes.Buffer
	if err := plot.WriteGantt(&buf, plot.PNG, bars, "many"); err != nil {
		t.Fatal(err)
	}
	if _, err := png.Decode(&buf); err != nil {
		t.Fatal(err)
	}
}

func TestWriteExplicitFormat(t *testing.T) {
	var buf bytes.Buffer
	if err := plot.WriteUtilization(&buf, plot.SVG, smallTimeline()); err != nil {
		t.Fatal(err)
	}
	checkSVG(t, buf.Bytes())
	buf.Reset()
	if err := plot.WriteUtilization(&buf, plot.PNG, smallTimeline()); err != nil {
		t.Fatal(err)
	}
	if _, err := png.Decode(&buf); err != nil {
		t.Fatal(err)
	}
	if err := plot.WriteUtilization(&buf, plot.Format(99), smallTimeline()); err == nil {
		t.Error("unknown format: no error")
	}
}

func TestFormats(t *testing.T) {
	for _, tc := range []struct {
		path string
		want plot.Format
		ok   bool
	}{
		{"a.png", plot.PNG, true},
		{"dir.v2/a.SVG", plot.SVG, true},
		{"a.pdf", 0, false},
		{"a", 0, false},
		{"dir.png/a", 0, false},
	} {
		got, err := plot.FormatOf(tc.path)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("FormatOf(%q) = %v, %v", tc.path, got, err)
		}
	}
	for _, s := range []string{"png", "PNG", ".svg"} {
		if _, err := plot.ParseFormat(s); err != nil {
			t.Errorf("ParseFormat(%q): %v", s, err)
		}
	}
	if _, err := plot.ParseFormat("jpeg"); err == nil {
		t.Error("ParseFormat(jpeg): no error")
	}
}

func TestBadInputLeavesNoFile(t *testing.T) {
	dir := t.TempDir()
	bad := smallTimeline()
	bad.Segments[0].Nodes = 11 // larger than the machine

	fresh := filepath.Join(dir, "fresh.png")
	if err := plot.Utilization(bad, fresh); !errors.Is(err, plot.ErrInvalid) {
		t.Fatalf("err = %v, want ErrInvalid", err)
	}
	if _, err := os.Stat(fresh); !os.IsNotExist(err) {
		t.Errorf("file created for bad input: %v", err)
	}

	old := filepath.Join(dir, "old.svg")
	if err := os.WriteFile(old, []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := plot.Gantt(nil, "none", old); !errors.Is(err, plot.ErrInvalid) {
		t.Fatalf("err = %v, want ErrInvalid", err)
	}
	if b, _ := os.ReadFile(old); string(b) != "keep" {
		t.Errorf("existing file overwritten with %q", b)
	}

	if err := plot.Utilization(smallTimeline(), filepath.Join(dir, "x.jpg")); err == nil {
		t.Error("unsupported extension: no error")
	}
	if err := plot.Utilization(smallTimeline(), filepath.Join(dir, "missing", "x.png")); err == nil {
		t.Error("missing directory: no error")
	}
}

func TestGanttErrors(t *testing.T) {
	h := time.Hour
	for _, tc := range []struct {
		name  string
		bars  []plot.Bar
		marks []plot.Mark
		want  string
	}{
		{"no bars", nil, nil, "no bars"},
		{"negative submit", []plot.Bar{{Job: "a", Submit: -h, Start: 0, Finish: h}}, nil, `bar 0 (job "a"): negative Submit -1h0m0s`},
		{"start before submit", []plot.Bar{{Submit: 2 * h, Start: h, Finish: 3 * h}}, nil, "bar 0: Start 1h0m0s is before Submit 2h0m0s"},
		{"finish before start", []plot.Bar{{Job: "ok", Finish: h}, {Job: "b", Start: 2 * h, Finish: h, Submit: h}}, nil, `bar 1 (job "b"): Finish 1h0m0s is before Start 2h0m0s`},
		{"negative mark", []plot.Bar{{Finish: h}}, []plot.Mark{{At: -1, Label: "end"}}, `mark 0 ("end"): negative time`},
		{"all zero", []plot.Bar{{}}, nil, "empty time range"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			err := plot.WriteGantt(&buf, plot.PNG, tc.bars, "x", tc.marks...)
			if !errors.Is(err, plot.ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want ErrInvalid containing %q", err, tc.want)
			}
			if buf.Len() != 0 {
				t.Error("output written for bad input")
			}
		})
	}
}

// TestLargeTimelineRenders goes through the resampling path.
func TestLargeTimelineRenders(t *testing.T) {
	tl := largeTimeline(20_000, rand.New(rand.NewPCG(1, 2)))
	var buf bytes.Buffer
	if err := plot.WriteUtilization(&buf, plot.SVG, tl); err != nil {
		t.Fatal(err)
	}
	checkSVG(t, buf.Bytes())
	// Resampled to at most a few thousand points per layer, not
	// hundreds of thousands.
	if buf.Len() > 2<<20 {
		t.Errorf("SVG of a 20k-segment timeline is %d bytes", buf.Len())
	}
}

// largeTimeline returns about n segments on a 1000-node machine: 100 lanes
// of 10 nodes, each a sequence of jobs and pilots with gaps, so that it
// never overflows.
func largeTimeline(n int, rng *rand.Rand) plot.Timeline {
	const lanes, laneNodes = 100, 10
	tl := plot.Timeline{Title: "large", Nodes: lanes * laneNodes, Marks: []plot.Mark{{At: 100 * time.Hour, Label: "mark"}}}
	kinds := []plot.Kind{plot.Regular, plot.Regular, plot.CalibrationBase, plot.Pilot, plot.Pilot, plot.Down}
	for range lanes {
		at := time.Duration(0)
		for range n / lanes {
			at += time.Duration(rng.IntN(600)) * time.Second
			d := time.Duration(1+rng.IntN(7200)) * time.Second
			tl.Segments = append(tl.Segments, plot.Segment{
				Kind:  kinds[rng.IntN(len(kinds))],
				Job:   "j",
				Start: at, End: at + d,
				Nodes: 1 + rng.IntN(laneNodes),
			})
			at += d
		}
	}
	return tl
}

func BenchmarkUtilization100k(b *testing.B) {
	tl := largeTimeline(100_000, rand.New(rand.NewPCG(3, 4)))
	b.Run("Stack", func(b *testing.B) {
		for b.Loop() {
			if _, err := plot.Stack(tl); err != nil {
				b.Fatal(err)
			}
		}
	})
	for _, f := range []plot.Format{plot.PNG, plot.SVG} {
		b.Run(f.String(), func(b *testing.B) {
			var buf bytes.Buffer
			for b.Loop() {
				buf.Reset()
				if err := plot.WriteUtilization(&buf, f, tl); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(buf.Len()), "bytes/file")
		})
	}
}
