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
}

// Report is `glean sim`'s output.
type Report struct {
	Workload  string       `json:"workload"`
	Nodes     int          `json:"nodes"`
	Scheduler string       `json:"scheduler"`
	Defaults  string       `json:"defaults"`
	Modes     []ModeReport `json:"modes"`
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
	rep := Report{Workload: name}
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
		rep.Modes = append(rep.Modes, mr)
	}
	return rep
}

// WriteJSON writes rep as indented JSON (durations in nanoseconds).
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
	fmt.Fprintf(&b, "defaults: %s\n\n", rep.Defaults)

	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "mode\tnominal\teffective\tharvest eff.\tmean turnaround\tall done\tregular mean wait\tregular node-h\tpilots\twaste node-h\t")
	for _, m := range rep.Modes {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%v\t%s\t%.1f\t%d\t%.2f\t\n", m.Mode, pct(m.Nominal), pct(m.Effective), pct(m.HarvestEfficiency),
			fmtDur(m.MeanTurnaround), m.AllDone, fmtDur(m.RegularMeanWait), m.RegularNodeTime.Hours(), m.Pilots, m.Waste.Hours())
	}
	tw.Flush()

	fmt.Fprintf(&b, "\nTable 5.2: calibration turnaround (finish - submit)\n")
	tw = tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "job\tsubmit\t")
	for _, m := range rep.Modes {
		fmt.Fprintf(tw, "%s\t", m.Mode)
	}
	fmt.Fprintln(tw)
	if len(rep.Modes) > 0 {
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
	}
	tw.Flush()

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
	_, err := io.WriteString(w, b.String())
	return err
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
		t.Segments = append(t.Segments, plot.Segment{Kind: k, Job: fmt.Sprint(j.ID), Start: j.Start, End: j.End, Nodes: j.Nodes})
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
