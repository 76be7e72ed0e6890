package sim

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/glean-hpc/glean/sidecar/sim/plot"
	"github.com/glean-hpc/glean/sidecar/workload"
)

// ModeReport is one mode's figures and, for glean's modes, the change
// against SLURM-only.
type ModeReport struct {
	Metrics
	VsSlurm *Comparison `json:"vs_slurm,omitempty"`
	// VsAlone is the regular jobs' start against the regular jobs run
	// alone (no calibration job, no glean): what the mode costs them.
	VsAlone *Delta `json:"regular_start_vs_alone,omitempty"`
	// Backlog is what the unlimited backlog got, if there was one.
	Backlog *BacklogRun `json:"backlog,omitempty"`
}

// RegularAlone is the regular jobs run alone.
type RegularAlone struct {
	Jobs     int           `json:"jobs"`
	MeanWait time.Duration `json:"mean_wait_ns"`
}

// Input is what reading the workload left out or moved, so that no job
// is lost or shifted without a word.
type Input struct {
	Jobs int `json:"jobs"` // jobs simulated
	// Dropped counts the well-formed records that are not simulated
	// (workload.Workload.Dropped): those larger than the machine
	// (DroppedTooLarge), and the rest, which never ran (NotRunWhy says how
	// the format tells).
	Dropped         int    `json:"dropped"`
	DroppedTooLarge int    `json:"dropped_larger_than_machine"`
	NotRunWhy       string `json:"dropped_not_run_means,omitempty"`
	// ProcsPerNode is the processors per node an SWF trace was read with
	// (1: a processor is a node).
	ProcsPerNode int `json:"procs_per_node,omitempty"`
	// Start is the wall-clock time of the simulation's time 0, where the
	// workload says it.
	Start *time.Time `json:"start,omitempty"`
	// Clamped counts the jobs submitted before Start whose submission was
	// moved to it (sacct: held or pending into the history's period).
	Clamped int `json:"submits_clamped"`
}

// InputOf summarises what reading w left out or moved.
func InputOf(w *workload.Workload) *Input {
	in := &Input{Jobs: len(w.Jobs), Dropped: w.Dropped, DroppedTooLarge: w.TooLarge, Clamped: w.Clamped, ProcsPerNode: w.ProcsPerNode}
	switch w.Format {
	case "swf":
		in.NotRunWhy = "no run time or no processors"
	case "sacct":
		in.NotRunWhy = "never started or still running"
	}
	if !w.Start.IsZero() {
		t := w.Start
		in.Start = &t
	}
	return in
}

// Report is `glean sim`'s output.
type Report struct {
	Workload string `json:"workload"`
	// Input is what reading the workload left out or moved, if set.
	Input     *Input       `json:"input,omitempty"`
	Nodes     int          `json:"nodes"`
	Scheduler string       `json:"scheduler"`
	Defaults  string       `json:"defaults"`
	Modes     []ModeReport `json:"modes"`
	// Alone is the regular jobs run alone, if they were.
	Alone *RegularAlone `json:"regular_alone,omitempty"`
}

// Defaults states the assumptions every table is made under.
func Defaults(r *ElasticResult) string {
	tasks := fmt.Sprintf("%d tasks per job", r.TasksPer)
	return fmt.Sprintf("%s, %v window margin, %v give-way grace, KillWait %v, pilots start at the next scheduling cycle (%v), a killed attempt's node time is waste, not work; window: until %v after the last submission",
		tasks, r.Policy.Margin, r.Policy.Grace, r.KillWait, r.Cycle, ThesisTail)
}

// BuildReport runs nothing: it summarises results of one workload, the
// SlurmOnly one (if any) being the reference for the deltas.
func BuildReport(name string, results []*ElasticResult) Report {
	return BuildReportAlone(name, results, nil)
}

// BuildReportAlone is BuildReport with alone, a SlurmOnly run of the
// regular jobs alone (RegularOnly, no backlog), as the reference for what
// each mode costs the regular jobs; nil leaves that out.
func BuildReportAlone(name string, results []*ElasticResult, alone *ElasticResult) Report {
	rep := Report{Workload: name}
	if alone != nil {
		m := ComputeMetrics(alone)
		rep.Alone = &RegularAlone{Jobs: m.RegularJobs, MeanWait: m.RegularMeanWait}
	}
	var base *ElasticResult
	for _, r := range results {
		if r.Mode == SlurmOnly {
			base = r
		}
	}
	for _, r := range results {
		rep.Nodes, rep.Scheduler, rep.Defaults = r.Nodes, r.Scheduler, Defaults(r)
		mr := ModeReport{Metrics: ComputeMetrics(r)}
		if base != nil && r != base {
			c := Compare(base, r)
			mr.VsSlurm = &c
		}
		if alone != nil {
			d := CompareRegular(alone, r)
			mr.VsAlone = &d
		}
		mr.Backlog = r.Backlog
		rep.Modes = append(rep.Modes, mr)
	}
	return rep
}

// WriteJSON writes rep as indented JSON (durations in nanoseconds, node
// time in node-seconds).
func (rep Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(rep)
}

func fmtDur(d time.Duration) string {
	neg := d < 0
	if neg {
		d = -d
	}
	d = d.Round(time.Second)
	h, m, s := d/time.Hour, d%time.Hour/time.Minute, d%time.Minute/time.Second
	out := fmt.Sprintf("%d:%02d:%02d", h, m, s)
	if neg {
		return "-" + out
	}
	return out
}

func pct(x float64) string { return fmt.Sprintf("%.1f%%", 100*x) }

// WriteText writes rep's tables with aligned columns.
func (rep Report) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "workload %s, %d nodes; scheduler: %s\n", rep.Workload, rep.Nodes, rep.Scheduler)
	rep.writeInput(&b)
	fmt.Fprintf(&b, "defaults: %s\n\n", rep.Defaults)

	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "mode\tnominal\teffective\tharvest eff.\tmean turnaround\tall done\tregular mean wait\tregular node-h\tpilots\twaste node-h\t")
	for _, m := range rep.Modes {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%v\t%s\t%.1f\t%d\t%.2f\t\n", m.Mode, pct(m.Nominal), pct(m.Effective), pct(m.HarvestEfficiency),
			fmtDur(m.MeanTurnaround), m.AllDone, fmtDur(m.RegularMeanWait), m.RegularNodeSeconds/3600, m.Pilots, m.WasteNodeSeconds/3600)
	}
	tw.Flush()

	switch {
	case len(rep.Modes) == 0:
	case len(rep.Modes[0].Calibration) == 0:
		// SWF and sacct histories mark no job as elastic work.
		fmt.Fprintf(&b, "\nTable 5.2: no calibration jobs in this workload (only the thesis lists have them); --backlog adds elastic work\n")
	default:
		rep.writeTable52(&b)
	}

	var cmp []ModeReport
	for _, m := range rep.Modes {
		if m.VsSlurm != nil {
			cmp = append(cmp, m)
		}
	}
	if len(cmp) > 0 {
		fmt.Fprintf(&b, "\nchange against SLURM-only per job (positive: later); beyond = later than grace + KillWait + one cycle\n")
		tw = tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "mode\twhat\tjobs\tmean\tp95\tmax\tworse\tbeyond\tturnaround gain\t")
		for _, m := range cmp {
			c := m.VsSlurm
			for _, row := range []struct {
				what string
				d    Delta
			}{{"calibration finish", c.CalibrationFinish}, {"regular start", c.RegularStart}} {
				fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t%d\t%d\t%s\t\n", m.Mode, row.what, row.d.N, fmtDur(row.d.Mean), fmtDur(row.d.P95), fmtDur(row.d.Max), row.d.Worse, row.d.Beyond, pct(c.TurnaroundGain))
			}
		}
		tw.Flush()
	}
	rep.writeGainCost(&b)
	rep.writeBacklog(&b)
	_, err := io.WriteString(w, b.String())
	return err
}

// writeInput says what reading the workload left out or moved, when it
// did either.
func (rep Report) writeInput(b *strings.Builder) {
	in := rep.Input
	if in == nil || in.Dropped == 0 && in.Clamped == 0 && in.ProcsPerNode <= 1 {
		return
	}
	fmt.Fprintf(b, "input: %d jobs simulated", in.Jobs)
	if in.ProcsPerNode > 1 {
		fmt.Fprintf(b, " (%d processors per node)", in.ProcsPerNode)
	}
	if in.Dropped > 0 {
		fmt.Fprintf(b, "; %d records dropped:", in.Dropped)
		sep := " "
		if n := in.Dropped - in.DroppedTooLarge; n > 0 {
			fmt.Fprintf(b, " %d never ran", n)
			if in.NotRunWhy != "" {
				fmt.Fprintf(b, " (%s)", in.NotRunWhy)
			}
			sep = ", "
		}
		if in.DroppedTooLarge > 0 {
			fmt.Fprintf(b, "%s%d larger than the machine's %d nodes", sep, in.DroppedTooLarge, rep.Nodes)
		}
	}
	if in.Clamped > 0 && in.Start != nil {
		fmt.Fprintf(b, "; %d of them submitted before time 0 (%s) and moved to it", in.Clamped, in.Start.UTC().Format("2006-01-02T15:04:05"))
	}
	fmt.Fprintln(b)
}

// writeTable52 is the thesis's Table 5.2: each calibration job's
// turnaround in every mode (rep.Modes is not empty).
func (rep Report) writeTable52(b *strings.Builder) {
	fmt.Fprintf(b, "\nTable 5.2: calibration turnaround (finish - submit)\n")
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "job\tsubmit\t")
	for _, m := range rep.Modes {
		fmt.Fprintf(tw, "%s\t", m.Mode)
	}
	fmt.Fprintln(tw)
	for i, c := range rep.Modes[0].Calibration {
		fmt.Fprintf(tw, "%d\t%s\t", c.ID, fmtDur(c.Submit))
		for _, m := range rep.Modes {
			if i < len(m.Calibration) {
				fmt.Fprintf(tw, "%s\t", fmtDur(m.Calibration[i].Turnaround))
			} else {
				fmt.Fprint(tw, "-\t")
			}
		}
		fmt.Fprintln(tw)
	}
	fmt.Fprint(tw, "mean\t\t")
	for _, m := range rep.Modes {
		fmt.Fprintf(tw, "%s\t", fmtDur(m.MeanTurnaround))
	}
	fmt.Fprintln(tw)
	tw.Flush()
}

// writeGainCost is who gains and who pays: the regular jobs' mean wait
// and start change against the regular jobs alone, the calibration jobs'
// turnaround against SLURM-only.
func (rep Report) writeGainCost(b *strings.Builder) {
	if rep.Alone == nil {
		return
	}
	var slurm *ModeReport
	for i := range rep.Modes {
		if rep.Modes[i].Mode == SlurmOnly.String() {
			slurm = &rep.Modes[i]
		}
	}
	fmt.Fprintf(b, "\ngain and cost: regular jobs against the regular jobs run alone (%d jobs, mean wait %s), calibration jobs against SLURM-only\n",
		rep.Alone.Jobs, fmtDur(rep.Alone.MeanWait))
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "mode	regular mean wait	vs alone	vs SLURM-only	start vs alone: mean	p95	max	later	beyond	cal. mean turnaround	vs SLURM-only	cal. later	beyond	")
	for _, m := range rep.Modes {
		d := m.VsAlone
		vsSlurm, turn, calLater, calBeyond := "-", "-", "-", "-"
		if slurm != nil {
			vsSlurm = signed(m.RegularMeanWait - slurm.RegularMeanWait)
			turn = signed(m.MeanTurnaround - slurm.MeanTurnaround)
		}
		if c := m.VsSlurm; c != nil {
			calLater, calBeyond = fmt.Sprint(c.CalibrationFinish.Worse), fmt.Sprint(c.CalibrationFinish.Beyond)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%d\t%s\t%s\t%s\t%s\t\n", m.Mode, fmtDur(m.RegularMeanWait),
			signed(m.RegularMeanWait-rep.Alone.MeanWait), vsSlurm, signed(d.Mean), signed(d.P95), signed(d.Max), d.Worse, d.Beyond,
			fmtDur(m.MeanTurnaround), turn, calLater, calBeyond)
	}
	tw.Flush()
	fmt.Fprintf(b, "(beyond: later than grace + KillWait + one cycle; a regular job's start against the regular jobs alone, a calibration job's finish against SLURM-only)\n")
}

func (rep Report) writeBacklog(b *strings.Builder) {
	if len(rep.Modes) == 0 || rep.Modes[0].Backlog == nil {
		return
	}
	bl := rep.Modes[0].Backlog
	fmt.Fprintf(b, "\nunlimited backlog: tasks of %v, scavenger, last in line, none started after %s\n", bl.TaskTime, fmtDur(bl.Until))
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "mode	tasks	work node-h	waste node-h	pilots	")
	for _, m := range rep.Modes {
		if x := m.Backlog; x != nil {
			fmt.Fprintf(tw, "%s\t%d\t%.1f\t%.2f\t%d\t\n", m.Mode, x.Tasks, x.WorkNodeSeconds/3600, x.WasteNodeSeconds/3600, x.Pilots)
		}
	}
	tw.Flush()
}

// signed is fmtDur with an explicit sign.
func signed(d time.Duration) string {
	if d > 0 {
		return "+" + fmtDur(d)
	}
	if d.Round(time.Second) == 0 {
		return "0:00:00"
	}
	return fmtDur(d)
}

// Timeline is r's node use over time by kind, for plot.Utilization.
func (r *ElasticResult) Timeline(title string) plot.Timeline {
	t := plot.Timeline{Title: title, Nodes: r.Nodes, Window: r.LastSubmit + ThesisTail,
		Marks: []plot.Mark{{At: r.LastSubmit, Label: "last submission"}}}
	for i, j := range r.Sched.Jobs {
		if j.End <= j.Start {
			continue
		}
		k := plot.Regular
		if r.Kinds[i] == workload.Calibration {
			k = plot.CalibrationBase
		}
		t.Segments = append(t.Segments, plot.Segment{Kind: k, Job: fmt.Sprint(j.ID), Start: j.Start, End: j.End, Nodes: j.Nodes - len(j.Released)})
		for _, rel := range j.Released { // a shrunk base: the nodes it gave back
			t.Segments = append(t.Segments, plot.Segment{Kind: k, Job: fmt.Sprint(j.ID), Start: j.Start, End: rel.At, Nodes: 1})
		}
	}
	for _, p := range r.Pilots {
		if p.Started && p.End > p.Start {
			t.Segments = append(t.Segments, plot.Segment{Kind: plot.Pilot, Job: fmt.Sprint(p.ID), Start: p.Start, End: p.End, Nodes: 1})
		}
	}
	return t
}

// GanttBars are the calibration jobs as Gantt rows: waiting from submit
// to their first work (base or pilot), running until they finish.
func (r *ElasticResult) GanttBars() []plot.Bar {
	first := map[int]time.Duration{}
	for _, t := range r.Tasks {
		if s, ok := first[t.Job]; !ok || t.Start < s {
			first[t.Job] = t.Start
		}
	}
	var bars []plot.Bar
	for _, c := range r.Cal {
		start, ok := first[c.ID]
		if !ok {
			start = c.Finish
		}
		bars = append(bars, plot.Bar{Job: fmt.Sprint(c.ID), Submit: c.Submit, Start: min(start, c.Finish), Finish: c.Finish})
	}
	return bars
}
