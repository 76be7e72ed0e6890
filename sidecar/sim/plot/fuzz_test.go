package plot_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"
	"time"

	"github.com/glean-hpc/glean/sidecar/sim/plot"
)

// FuzzDraw feeds arbitrary timelines and bars to the drawing functions:
// they must return nil or an error wrapping ErrInvalid, never panic.
func FuzzDraw(f *testing.F) {
	f.Add(int64(24), int64(0), []byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20})
	f.Add(int64(1), int64(-1), []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f, 0, 0, 0, 0, 0, 0, 0, 0x80, 3})
	f.Add(int64(1<<40), int64(1<<62), []byte{1, 2, 3})
	f.Fuzz(func(t *testing.T, nodes, window int64, data []byte) {
		tl := plot.Timeline{Title: "fuzz", Nodes: int(nodes), Window: time.Duration(window)}
		var bars []plot.Bar
		for len(data) >= 17 {
			a := time.Duration(int64(binary.LittleEndian.Uint64(data)))
			b := time.Duration(int64(binary.LittleEndian.Uint64(data[8:])))
			k := data[16]
			data = data[17:]
			tl.Segments = append(tl.Segments, plot.Segment{Kind: plot.Kind(k % 7), Start: a, End: b, Nodes: int(k%5) - 1})
			bars = append(bars, plot.Bar{Job: "j", Submit: a / 2, Start: a, Finish: b})
			if k%3 == 0 {
				tl.Marks = append(tl.Marks, plot.Mark{At: a, Label: "m"})
			}
		}
		var buf bytes.Buffer
		if err := plot.WriteUtilization(&buf, plot.SVG, tl); err != nil && !errors.Is(err, plot.ErrInvalid) {
			t.Fatalf("WriteUtilization: %v", err)
		}
		if err := plot.WriteGantt(&buf, plot.SVG, bars, "fuzz", tl.Marks...); err != nil && !errors.Is(err, plot.ErrInvalid) {
			t.Fatalf("WriteGantt: %v", err)
		}
	})
}
