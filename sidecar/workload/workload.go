// Package workload reads job traces into one job list for the simulator:
// the thesis submit lists, the Standard Workload Format of the Parallel
// Workloads Archive, and sacct output from a real cluster.
//
// Readers take an io.Reader and a name used in error messages. Every bad
// line is reported as "name:line: what is wrong". By default a bad line is
// skipped and the read goes on, and the returned error (an *Errors) lists
// what was skipped next to a usable *Workload; with Options.Strict the first
// bad line fails the whole read.
package workload

import (
	"bufio"
	"errors"
	"fmt"
	"github.com/glean-hpc/glean/sidecar/slurm"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/glean-hpc/glean/sidecar/cluster"
)

// Unlimited is the limit of a job that asked for none (Slurm's UNLIMITED).
const Unlimited = cluster.Unlimited

// MaxSpan bounds every time read (submit offset, run time, limit), so that
// a simulator can add and sum them without overflowing a time.Duration.
const MaxSpan = 100 * 365 * 24 * time.Hour

// maxLine bounds one input line; a longer one fails the read.
const maxLine = 1 << 20

// Kind tells regular batch jobs from divisible calibration work.
type Kind int

const (
	Regular Kind = iota
	Calibration
)

func (k Kind) String() string {
	switch k {
	case Regular:
		return "regular"
	case Calibration:
		return "calibration"
	}
	return "invalid"
}

// Job is one job of a workload.
type Job struct {
	ID     int
	Submit time.Duration // offset from the workload's start
	Run    time.Duration // how long it ran (or would run without a limit)
	Nodes  int
	Limit  time.Duration // 0: none given; Unlimited: UNLIMITED
	Kind   Kind
	User   string
	Line   int // where it was read, for messages
}

// Workload is a job list and the machine it ran on.
type Workload struct {
	Name  string
	Nodes int // machine size, in the unit of Job.Nodes
	// Start is the wall-clock time of offset 0 where the source says it
	// (SWF UnixStartTime, sacct); zero otherwise.
	Start time.Time
	Jobs  []Job
	// Dropped counts well-formed records that cannot be simulated: SWF
	// records with no run time or processors or larger than the machine,
	// sacct jobs that never started or still run.
	Dropped int
	// TooLarge counts the records of Dropped that are larger than the
	// machine (SWF).
	TooLarge int
	// Format is the reader's: "thesis", "swf" or "sacct".
	Format string
	// ProcsPerNode is the processors per node an SWF trace was read with
	// (1: processors as nodes); 0 for the other formats.
	ProcsPerNode int
	// Clamped counts the jobs submitted before Start whose submission was
	// moved to it (sacct: jobs held or pending into the history's period).
	Clamped int
}

// Options apply to every reader.
type Options struct {
	// Strict fails the read at the first bad line instead of skipping it.
	Strict bool
}

func firstOpts(opts []Options) Options {
	if len(opts) > 0 {
		return opts[0]
	}
	return Options{}
}

// LineError is one bad input line.
type LineError struct {
	File string
	Line int
	Err  error
}

func (e *LineError) Error() string { return fmt.Sprintf("%s:%d: %v", e.File, e.Line, e.Err) }
func (e *LineError) Unwrap() error { return e.Err }

// MaxErrors is how many bad lines an *Errors keeps; the rest are counted.
const MaxErrors = 100

// Errors lists the lines a lenient read skipped.
type Errors struct {
	Lines []*LineError // the first MaxErrors, in input order
	Total int          // all skipped lines
}

func (e *Errors) Error() string {
	const show = 10
	var b strings.Builder
	for i, le := range e.Lines {
		if i == show {
			break
		}
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(le.Error())
	}
	if n := e.Total - min(len(e.Lines), show); n > 0 {
		fmt.Fprintf(&b, "\n(and %d more bad lines)", n)
	}
	return b.String()
}

// Unwrap lets errors.As find the *LineError values.
func (e *Errors) Unwrap() []error {
	out := make([]error, len(e.Lines))
	for i, le := range e.Lines {
		out[i] = le
	}
	return out
}

// lines walks the input line by line and keeps the error bookkeeping that
// all readers share.
type lines struct {
	sc     *bufio.Scanner
	name   string
	strict bool
	n      int // current line number
	errs   Errors
}

func newLines(r io.Reader, name string, o Options) *lines {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxLine)
	return &lines{sc: sc, name: name, strict: o.Strict}
}

func (l *lines) next() (string, bool) {
	if !l.sc.Scan() {
		return "", false
	}
	l.n++
	return l.sc.Text(), true
}

// bad records a bad current line; it returns the error that must stop the
// read in strict mode, or nil to go on.
func (l *lines) bad(err error) error {
	le := &LineError{File: l.name, Line: l.n, Err: err}
	if l.strict {
		return le
	}
	if len(l.errs.Lines) < MaxErrors {
		l.errs.Lines = append(l.errs.Lines, le)
	}
	l.errs.Total++
	return nil
}

// finish ends a read: a read error (I/O, gzip, a line too long) fails it;
// otherwise w is returned with the lines skipped, if any.
func (l *lines) finish(w *Workload) (*Workload, error) {
	if err := l.sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, &LineError{File: l.name, Line: l.n + 1, Err: fmt.Errorf("line longer than %d bytes", maxLine)}
		}
		return nil, fmt.Errorf("%s: after line %d: %w", l.name, l.n, err)
	}
	if l.errs.Total > 0 {
		return w, &l.errs
	}
	return w, nil
}

// parseInt reads a decimal integer in [lo, hi].
func parseInt(s string, lo, hi int64) (int64, error) {
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil || v < lo || v > hi {
		return 0, fmt.Errorf("%q is not an integer in [%d, %d]", s, lo, hi)
	}
	return v, nil
}

var maxSpanSec = int64(MaxSpan / time.Second)

// seconds converts a count of seconds known to be in [0, maxSpanSec].
func seconds(v int64) time.Duration { return time.Duration(v) * time.Second }

// parseSlurmDuration reads a Slurm time limit with the boundary's parser
// (one parser of Slurm's time format in the project), bounded by MaxSpan.
func parseSlurmDuration(s string) (time.Duration, error) {
	d, err := slurm.ParseTimeLimit(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not a Slurm time (H:MM:SS, D-HH:MM:SS, minutes or UNLIMITED)", s)
	}
	if d != Unlimited && d > MaxSpan {
		return 0, fmt.Errorf("%q is longer than %v", s, MaxSpan)
	}
	return d, nil
}
