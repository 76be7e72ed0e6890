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

// parseSlurmDuration reads a Slurm time limit: UNLIMITED or INFINITE, or
// "M", "M:S", "H:M:S", "D-H", "D-H:M", "D-H:M:S". The leading part is
// unbounded; the others must be below 60 (24 for hours after days).
func parseSlurmDuration(s string) (time.Duration, error) {
	switch strings.ToUpper(s) {
	case "UNLIMITED", "INFINITE":
		return Unlimited, nil
	}
	bad := fmt.Errorf("%q is not a Slurm time (H:MM:SS, D-HH:MM:SS, minutes or UNLIMITED)", s)
	var days int64
	rest := s
	hasDays := false
	if d, r, ok := strings.Cut(s, "-"); ok {
		v, err := parseInt(d, 0, maxSpanSec/86400)
		if err != nil {
			return 0, bad
		}
		days, rest, hasDays = v, r, true
	}
	parts := strings.Split(rest, ":")
	if len(parts) > 3 {
		return 0, bad
	}
	vals := make([]int64, len(parts))
	for i, p := range parts {
		// A leading sign or a long run of digits is never a time.
		if p == "" || len(p) > 12 || p[0] < '0' || p[0] > '9' {
			return 0, bad
		}
		v, err := parseInt(p, 0, maxSpanSec)
		if err != nil {
			return 0, bad
		}
		vals[i] = v
	}
	var h, m, sec int64
	switch {
	case hasDays && len(vals) == 1:
		h = vals[0]
	case hasDays && len(vals) == 2:
		h, m = vals[0], vals[1]
	case len(vals) == 3:
		h, m, sec = vals[0], vals[1], vals[2]
	case len(vals) == 2:
		m, sec = vals[0], vals[1]
	default:
		m = vals[0]
	}
	// Only the leading unit may run over.
	switch {
	case hasDays && h >= 24, (hasDays || len(vals) == 3) && m >= 60, len(vals) >= 2 && sec >= 60:
		return 0, bad
	}
	total := days*86400 + h*3600 + m*60 + sec
	if h > maxSpanSec/3600 || m > maxSpanSec/60 || total > maxSpanSec {
		return 0, fmt.Errorf("%q is longer than %v", s, MaxSpan)
	}
	return seconds(total), nil
}
