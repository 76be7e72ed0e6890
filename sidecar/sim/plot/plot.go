// Package plot draws simulation results the way the thesis does in its
// figures 5.2-5.9: a stacked utilization area over time (regular jobs, the
// rigid base of the calibration jobs, pilots, idle nodes) and a Gantt chart
// of the calibration jobs (waiting, then running).
//
// The package knows nothing about the simulator. Callers hand it plain
// segments ("from Start to End, Nodes nodes were busy with Kind") and bars
// ("job J was submitted at S, started at T, finished at F"); all times are
// offsets from the start of the workload.
//
// Output is PNG or SVG, chosen from the file extension (Utilization, Gantt)
// or given explicitly (WriteUtilization, WriteGantt). Bad input is reported as
// an error wrapping ErrInvalid before any file is created; the functions do
// not panic.
package plot

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Kind is what a set of nodes is doing during a segment. The constants are
// in stacking order, bottom first.
type Kind int

const (
	// Regular is a job of any other user, scheduled by Slurm as usual.
	Regular Kind = iota
	// CalibrationBase is the plain, rigid allocation of an elastic
	// (calibration) job: what it would get without pilots.
	CalibrationBase
	// Pilot is a pilot job harvesting otherwise idle nodes.
	Pilot
	// Idle is derived: the machine size minus everything else. It is
	// not accepted in a Segment.
	Idle
	// Down is a node that cannot be used (drained, down, reserved).
	Down

	// NumKinds is the number of kinds; Step.Nodes is indexed by Kind.
	NumKinds = 5
)

// String returns the name used in legends and error messages.
func (k Kind) String() string {
	switch k {
	case Regular:
		return "regular"
	case CalibrationBase:
		return "calibration base"
	case Pilot:
		return "pilots"
	case Idle:
		return "idle"
	case Down:
		return "down"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Segment says that Nodes nodes did Kind from Start to End.
type Segment struct {
	Kind Kind
	// Job names the job, if any; it is only used in error messages.
	Job string
	// Start and End are offsets from the workload start. A segment
	// covers [Start, End); Start == End is allowed and ignored.
	Start, End time.Duration
	Nodes      int
}

// Mark is a labelled vertical line, e.g. "last submission" or "end".
type Mark struct {
	At    time.Duration
	Label string
}

// Timeline is what Utilization draws.
type Timeline struct {
	// Title is shown above the plot; put the mode name in it, e.g.
	// "Slurm only, non-busy". A second line with the nominal
	// utilization is added below it.
	Title string
	// Nodes is the machine size.
	Nodes    int
	Segments []Segment
	// Window is the end of the x axis. Zero means the last segment End
	// or Mark, whichever is later. Segments past Window are validated
	// but cut off; Marks past it are not drawn.
	Window time.Duration
	Marks  []Mark
}

// Bar is one row of a Gantt chart: a job waits from Submit to Start and runs
// from Start to Finish. A job that had not started or finished when the
// simulation ended should be cut off at the end (Start and/or Finish set to
// the end time) and the end shown with a Mark.
type Bar struct {
	Job                   string
	Submit, Start, Finish time.Duration
}

// ErrInvalid is wrapped by every error about bad input.
var ErrInvalid = errors.New("invalid plot input")

// OverflowError reports a time at which the segments use more nodes than the
// machine has. errors.Is(err, ErrInvalid) holds for it.
type OverflowError struct {
	At    time.Duration
	Used  int // nodes in use at At, Down included
	Nodes int // machine size
	// ByKind is the breakdown of Used (Idle is zero).
	ByKind [NumKinds]int
}

func (e *OverflowError) Error() string {
	var parts []string
	for k := Kind(0); k < NumKinds; k++ {
		if k != Idle && e.ByKind[k] != 0 {
			parts = append(parts, fmt.Sprintf("%s %d", k, e.ByKind[k]))
		}
	}
	return fmt.Sprintf("%v: at %v (%.2f h) %d nodes are in use on a %d-node machine (%s)",
		ErrInvalid, e.At, hours(e.At), e.Used, e.Nodes, strings.Join(parts, ", "))
}

// Is makes errors.Is(err, ErrInvalid) true.
func (e *OverflowError) Is(target error) bool { return target == ErrInvalid }

// Format is an output file format.
type Format int

const (
	// PNG is a 150 dpi raster image.
	PNG Format = iota + 1
	// SVG is a vector image.
	SVG
)

func (f Format) String() string {
	switch f {
	case PNG:
		return "png"
	case SVG:
		return "svg"
	}
	return fmt.Sprintf("Format(%d)", int(f))
}

// ParseFormat accepts "png" or "svg" (any case, optional leading dot).
func ParseFormat(s string) (Format, error) {
	switch strings.ToLower(strings.TrimPrefix(s, ".")) {
	case "png":
		return PNG, nil
	case "svg":
		return SVG, nil
	}
	return 0, fmt.Errorf("unknown plot format %q (want png or svg)", s)
}

// FormatOf picks the format from the extension of path.
func FormatOf(path string) (Format, error) {
	ext := filepath.Ext(path)
	if ext == "" {
		return 0, fmt.Errorf("%s: no file extension to choose the plot format from (want .png or .svg)", path)
	}
	f, err := ParseFormat(ext)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	return f, nil
}

// Utilization draws t as a stacked area to path (.png or .svg).
func Utilization(t Timeline, path string) error {
	return toFile(path, func(w io.Writer, f Format) error { return WriteUtilization(w, f, t) })
}

// Gantt draws one row per bar to path (.png or .svg). Marks are drawn as
// vertical lines, e.g. the end of the simulation.
func Gantt(bars []Bar, title, path string, marks ...Mark) error {
	return toFile(path, func(w io.Writer, f Format) error { return WriteGantt(w, f, bars, title, marks...) })
}

// toFile renders into memory first so that bad input or a rendering failure
// leaves no file (and does not truncate an existing one).
func toFile(path string, render func(io.Writer, Format) error) error {
	f, err := FormatOf(path)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := render(&buf, f); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		return fmt.Errorf("write plot: %w", err)
	}
	return nil
}

// maxProblems caps how many validation problems one error lists.
const maxProblems = 10

// problems collects validation problems, keeping the first maxProblems.
type problems struct {
	msgs []string
	n    int
}

func (p *problems) add(format string, args ...any) {
	p.n++
	if len(p.msgs) < maxProblems {
		p.msgs = append(p.msgs, fmt.Sprintf(format, args...))
	}
}

// err returns nil or one error wrapping ErrInvalid that lists the problems,
// one a line.
func (p *problems) err() error {
	switch {
	case p.n == 0:
		return nil
	case p.n == 1:
		return fmt.Errorf("%w: %s", ErrInvalid, p.msgs[0])
	}
	msg := strings.Join(p.msgs, "\n\t")
	if p.n > len(p.msgs) {
		msg += fmt.Sprintf("\n\t(and %d more)", p.n-len(p.msgs))
	}
	return fmt.Errorf("%w (%d problems):\n\t%s", ErrInvalid, p.n, msg)
}

func hours(d time.Duration) float64 { return d.Hours() }
