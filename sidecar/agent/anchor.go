package agent

import (
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/glean-hpc/glean/sidecar/spool"
)

// maxFailuresShown bounds the failures the summary lists.
const maxFailuresShown = 20

// Summary is what the anchor's final run writes and exits with.
type Summary struct {
	Text string
	Path string // where it goes: the -o pattern with %a = "summary"
	Exit int
}

// Summarize builds the anchor's summary of an ended job from its record
// and its task events. entry is the record's entry or, for a job refused
// before its entry validated, the owner's incoming one (nil if none).
// anchorJob is the anchor's own SLURM_JOB_ID (%j); node is %N.
func Summarize(rec *spool.Record, entry *spool.Entry, events []spool.TaskEvent, user, anchorJob, node string) Summary {
	var b strings.Builder
	anchor := rec.Anchor
	if anchor == "" && entry != nil {
		anchor = entry.Anchor
	}
	name := rec.Name
	if name == "" && entry != nil {
		name = entry.Name
	}
	fmt.Fprintf(&b, "glean: elastic job %s (%s): %s\n", anchor, name, rec.State)
	if rec.Reason != "" {
		fmt.Fprintf(&b, "glean: reason: %s\n", rec.Reason)
	}
	t := rec.Tasks
	fmt.Fprintf(&b, "glean: tasks: %d total, %d done, %d failed", t.Total, t.Done, t.Failed)
	if n := t.Total - t.Done - t.Failed; n > 0 && t.Total > 0 {
		fmt.Fprintf(&b, ", %d not run to the end", n)
	}
	b.WriteString("\n")

	fails := failures(events)
	if len(fails) > 0 {
		fmt.Fprintf(&b, "glean: failed tasks (%d", len(fails))
		if len(fails) > maxFailuresShown {
			fmt.Fprintf(&b, ", first %d", maxFailuresShown)
		}
		b.WriteString("):\n")
		for i, f := range fails {
			if i == maxFailuresShown {
				break
			}
			fmt.Fprintf(&b, "glean:   task %d: exit code %d", f.Index, f.Exit)
			if f.Exit > 128 && f.Exit < 128+65 {
				fmt.Fprintf(&b, " (signal %d)", f.Exit-128)
			}
			if f.Reason != spool.ReasonFailed {
				fmt.Fprintf(&b, " (%s)", f.Reason)
			}
			if f.Detail != "" {
				fmt.Fprintf(&b, ": %s", f.Detail) // which cap, or how often it failed
			}
			b.WriteString("\n")
		}
	}
	s := Summary{Exit: JobExit(rec)}
	vars := PatternVars{ArrayJob: anchor, Job: anchorJob, Name: name, User: user, Node: node}
	if entry != nil {
		out := entry.Output
		if out == "" {
			out = defaultOutput
			if entry.Array != nil {
				out = defaultArrayOutput
			}
		}
		if rec.State != spool.StateRejected {
			fmt.Fprintf(&b, "glean: task outputs: %s\n", abs(entry.Cwd, ExpandPattern(strings.ReplaceAll(out, "%a", "%%a"), vars)))
		}
		s.Path = SummaryPath(entry, vars)
	}
	fmt.Fprintf(&b, "glean: exit code %d\n", s.Exit)
	s.Text = b.String()
	return s
}

// failures are the tasks that failed for good, in index order.
func failures(events []spool.TaskEvent) []spool.TaskEvent {
	last := map[int]spool.TaskEvent{}
	for _, ev := range events {
		if ev.Final {
			last[ev.Index] = ev
		}
	}
	var out []spool.TaskEvent
	for _, ev := range last {
		if ev.Reason != spool.ReasonCompleted {
			out = append(out, ev)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Index < out[j].Index })
	return out
}

// JobExit is the anchor's exit code: the record's (0 when done, else the
// highest failed task's, a signal n as 128+n), never 0 for a job that did
// not succeed, and within 0-255.
func JobExit(rec *spool.Record) int {
	if rec.State == spool.StateDone {
		return 0
	}
	e := rec.Exit
	if e <= 0 || e > 255 {
		e = 1
	}
	return e
}

// WriteSummary appends s.Text to s.Path (in the user's umask), or to w
// when there is no path.
func WriteSummary(s Summary, w io.Writer) error {
	if s.Path == "" {
		_, err := io.WriteString(w, s.Text)
		return err
	}
	f, err := os.OpenFile(s.Path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o666)
	if err != nil {
		return err
	}
	_, err = io.WriteString(f, s.Text)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
