package cli

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/glean-hpc/glean/sidecar/sim"
	"github.com/glean-hpc/glean/sidecar/sim/plot"
	"github.com/glean-hpc/glean/sidecar/workload"
)

// sacctCommand is what a site runs to give glean sim its own history.
const sacctCommand = "TZ=UTC sacct -P -X -n -a -S 2024-01-01 -E 2024-02-01 \\\n" +
	"    -o " + workload.SacctFormat + " > history.sacct"

const simHelp = `usage: glean sim [options]

Replays a workload through a model of Slurm (sched/backfill on whole nodes)
in SLURM-only and glean's modes and prints, per mode: utilization, the
calibration jobs' turnaround (the thesis's Table 5.2), regular jobs' waits,
and each job's change against SLURM-only and against running alone.

Workloads: thesis-1 and thesis-2 (the seed thesis's submit lists, built
into glean), an SWF trace (.swf or .swf.gz, Parallel Workloads Archive), or
a site's own history from sacct, produced with (times as UTC; -S and -E
bound the period, -S is needed: sacct's default start is today at 00:00):

    %s

and replayed with --workload history.sacct --nodes <the partition's node count>
--since <the -S date>. sacct -S also prints jobs submitted before the period
and still pending in it (held, say): their submissions are moved to the
period's start (--since, else the first job's Start) and counted in the
report's input line.
A malformed line is reported as file:line on stderr and skipped (--strict:
rejected).

Options:
`

// Sim runs a workload through the simulator in SLURM-only and glean's
// modes and prints utilization, calibration turnaround (the thesis's Table
// 5.2), regular jobs' waits and per-job changes against SLURM-only.
func Sim(_ context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("glean sim", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, simHelp, sacctCommand)
		fs.PrintDefaults()
	}
	var (
		wl, format, mode, plots, scheduler string
		since                              string
		tasks, nodes, ppn                  int
		taskTime, backlog                  time.Duration
		asJSON, strict                     bool
	)
	fs.StringVar(&wl, "workload", "thesis-1", "thesis-1, thesis-2 (the thesis's submit lists), or a file path")
	fs.StringVar(&format, "format", "", "file format: thesis, swf or sacct (default: from the name; thesis for .txt)")
	fs.StringVar(&mode, "mode", "all", "slurm, fair, scavenger, thesis or all")
	fs.IntVar(&nodes, "nodes", 0, "the machine's node count (default: the thesis lists' 24, an SWF header's MaxNodes/MaxProcs; sacct does not say it: give it)")
	fs.IntVar(&ppn, "procs-per-node", 0, "SWF only: processors per node, to turn a trace's processors into whole nodes (default: the header's MaxProcs / MaxNodes when it gives both, else 1: a processor is a node)")
	fs.StringVar(&scheduler, "scheduler", "slurm", "slurm (sched/backfill, as Slurm 22.05 does it), or easy, conservative, fcfs (--mode slurm only, without --backlog: glean's modes read Slurm's backfill plan)")
	fs.StringVar(&since, "since", "", "sacct only: the history's period start, sacct's -S (UTC, 2024-01-01 or 2024-01-01T00:00:00); earlier submissions are moved to it (default: the first job's Start)")
	fs.BoolVar(&strict, "strict", false, "reject a workload with a malformed line (default: warn with file:line and skip it)")
	fs.IntVar(&tasks, "tasks", sim.DefaultTasks, "tasks per calibration job (at most 1,000,000 tasks in all)")
	fs.DurationVar(&taskTime, "task-time", 0, "task length (overrides --tasks; at most 1,000,000 tasks in all)")
	fs.DurationVar(&backlog, "backlog", 0, "add an unlimited elastic backlog (scavenger, last in line) of tasks of this length, e.g. 10m, started until 30 min after the last submission")
	fs.BoolVar(&asJSON, "json", false, "print JSON")
	fs.StringVar(&plots, "plots", "", "write utilization-<mode>.png/.svg and gantt-<mode>.png/.svg into this directory")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	usageErr := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "glean sim: "+format+"\n", a...)
		return 2
	}
	if fs.NArg() > 0 {
		return usageErr("unexpected argument %q", fs.Arg(0))
	}
	var modes []sim.ElasticMode
	if mode == "all" {
		modes = sim.ElasticModes
	} else {
		m, err := sim.ParseElasticMode(mode)
		if err != nil {
			return usageErr("--mode: %v", err)
		}
		modes = []sim.ElasticMode{m}
	}
	if tasks < 1 {
		return usageErr("--tasks must be at least 1")
	}
	if backlog < 0 || taskTime < 0 {
		return usageErr("--backlog and --task-time must not be negative")
	}
	if nodes < 0 {
		return usageErr("--nodes must be positive (0: from the workload)")
	}
	if ppn < 0 {
		return usageErr("--procs-per-node must be positive (0: from the SWF header)")
	}
	policy, err := sim.ParsePolicy(scheduler)
	if err != nil {
		return usageErr("--scheduler: %v", err)
	}
	if policy != sim.SlurmLike && (len(modes) != 1 || modes[0] != sim.SlurmOnly || backlog > 0) {
		return usageErr("--scheduler %s runs only --mode slurm without --backlog: glean's pilots read the Slurm-like scheduler's backfill plan", scheduler)
	}
	var sinceT time.Time
	if since != "" {
		if sinceT, err = parseSince(since); err != nil {
			return usageErr("--since: %v", err)
		}
	}
	w, err := loadWorkload(wl, format, nodes, ppn, sinceT, strict, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "glean sim: %v\n", err)
		return 1
	}
	cfg := sim.Config{Policy: policy, Estimates: sim.KillAtLimit}
	var many *sim.TooManyTasks
	if err := sim.CheckTasks(w, sim.ElasticConfig{Tasks: tasks, TaskTime: taskTime, Backlog: backlog, Sim: cfg}); errors.As(err, &many) {
		switch {
		case many.Backlog:
			return usageErr("--backlog %v: the backlog could run %.3g tasks (%d nodes, until 30 min after the last submission), more than the %d the simulator allows; give --backlog %v or longer", backlog, many.Count, w.Nodes, many.Max, many.MinTaskTime)
		case taskTime > 0:
			return usageErr("--task-time %v: %.0f tasks in the %d calibration jobs, more than the %d the simulator allows; give --task-time %v or longer", taskTime, many.Count, many.Jobs, many.Max, many.MinTaskTime)
		default:
			return usageErr("--tasks %d: %.0f tasks in the %d calibration jobs, more than the %d the simulator allows; give --tasks %d or fewer", tasks, many.Count, many.Jobs, many.Max, many.MaxPerJob)
		}
	}
	var results []*sim.ElasticResult
	for _, m := range modes {
		r, err := sim.RunElastic(w, sim.ElasticConfig{Mode: m, Tasks: tasks, TaskTime: taskTime, Backlog: backlog, Sim: cfg})
		if err != nil {
			fmt.Fprintf(stderr, "glean sim: %s: %v\n", m, err)
			return 1
		}
		results = append(results, r)
	}
	// The regular jobs alone: what each mode costs them.
	alone, err := sim.RunElastic(sim.RegularOnly(w), sim.ElasticConfig{Mode: sim.SlurmOnly, Sim: cfg})
	if err != nil {
		fmt.Fprintf(stderr, "glean sim: regular jobs alone: %v\n", err)
		return 1
	}
	rep := sim.BuildReportAlone(w.Name, results, alone)
	rep.Input = sim.InputOf(w)
	if asJSON {
		err = rep.WriteJSON(stdout)
	} else {
		err = rep.WriteText(stdout)
	}
	if err != nil {
		fmt.Fprintf(stderr, "glean sim: %v\n", err)
		return 1
	}
	if plots != "" {
		if err := writePlots(plots, w.Name, results); err != nil {
			fmt.Fprintf(stderr, "glean sim: %v\n", err)
			return 1
		}
	}
	return 0
}

func writePlots(dir, name string, results []*sim.ElasticResult) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var errs []error
	for _, r := range results {
		m := r.Mode.String()
		t := r.Timeline(fmt.Sprintf("%s, %s", m, name))
		for _, ext := range []string{"png", "svg"} {
			errs = append(errs, plot.Utilization(t, filepath.Join(dir, "utilization-"+m+"."+ext)))
		}
		if bars := r.GanttBars(); len(bars) > 0 {
			for _, ext := range []string{"png", "svg"} {
				errs = append(errs, plot.Gantt(bars, fmt.Sprintf("calibration jobs, %s, %s", m, name), filepath.Join(dir, "gantt-"+m+"."+ext),
					plot.Mark{At: r.LastSubmit, Label: "last submission"}))
			}
		}
	}
	return errors.Join(errs...)
}

// loadWorkload resolves thesis-1/thesis-2 to the submit lists built into
// glean (workload.ThesisList) or reads a file. Malformed lines are skipped with
// a warning on stderr, or fail the read if strict. nodes > 0 sets the
// machine's size (SWF: jobs larger than it are dropped, as the archive's
// convention has it; the others: such a job is an error when simulated).
func loadWorkload(name, format string, nodes, ppn int, since time.Time, strict bool, stderr io.Writer) (*workload.Workload, error) {
	path := name
	var f io.Reader
	if n, ok := strings.CutPrefix(name, "thesis-"); ok && (n == "1" || n == "2") {
		data, file, err := workload.ThesisList(n)
		if err != nil {
			return nil, err
		}
		f, path, format = bytes.NewReader(data), file, "thesis"
	} else {
		file, err := os.Open(path)
		if err != nil {
			return nil, fmt.Errorf("--workload: %w", err)
		}
		defer file.Close()
		f = file
	}
	if format == "" {
		switch {
		case strings.Contains(path, ".swf"):
			format = "swf"
		case strings.Contains(path, "sacct"):
			format = "sacct"
		default:
			format = "thesis"
		}
	}
	if !since.IsZero() && format != "sacct" {
		return nil, fmt.Errorf("--since applies to sacct histories only, not to %s (%s)", path, format)
	}
	if ppn > 0 && format != "swf" {
		return nil, fmt.Errorf("--procs-per-node applies to SWF traces only, not to %s (%s)", path, format)
	}
	if ppn == 0 {
		ppn = workload.ProcsPerNodeFromHeader
	}
	opts := workload.Options{Strict: strict}
	var (
		w   *workload.Workload
		err error
	)
	switch format {
	case "thesis":
		w, err = workload.ReadThesis(f, path, opts)
	case "swf":
		w, err = workload.ReadSWF(f, path, workload.SWFOptions{Options: opts, Nodes: nodes, ProcsPerNode: ppn})
	case "sacct":
		w, err = workload.ReadSacct(f, path, workload.SacctOptions{Options: opts, Since: since})
	default:
		return nil, fmt.Errorf("unknown --format %q (want thesis, swf or sacct)", format)
	}
	var skipped *workload.Errors
	if errors.As(err, &skipped) && w != nil {
		for _, le := range skipped.Lines {
			fmt.Fprintf(stderr, "glean sim: warning: %v (line skipped)\n", le)
		}
		if n := skipped.Total - len(skipped.Lines); n > 0 {
			fmt.Fprintf(stderr, "glean sim: warning: %s: %d more malformed lines skipped\n", path, n)
		}
		err = nil
	}
	if err != nil {
		return nil, err
	}
	if len(w.Jobs) == 0 {
		return nil, fmt.Errorf("%s: no job to simulate (%d malformed lines skipped, %d records that never ran or do not fit dropped)", path, skippedTotal(skipped), w.Dropped)
	}
	if w.TooLarge > 0 {
		fmt.Fprintf(stderr, "glean sim: warning: %s: %d jobs larger than the machine's %d nodes dropped (%d processors per node; give --nodes or --procs-per-node)\n", path, w.TooLarge, w.Nodes, w.ProcsPerNode)
	}
	w.Name = filepath.Base(path)
	switch {
	case nodes > 0:
		w.Nodes = nodes
	case format == "thesis":
		w.Nodes = workload.ThesisNodes // the lists' machine; a larger job is the error below
	case format == "sacct":
		fmt.Fprintf(stderr, "glean sim: warning: %s: sacct does not record the machine's size; simulating on %d nodes, the largest job's (give --nodes)\n", path, w.Nodes)
	}
	if format == "sacct" && since.IsZero() {
		// sacct -S also lists the jobs still running at -S: the first
		// Start may be well before the period, where the history holds
		// only those jobs, and utilization comes out low.
		fmt.Fprintf(stderr, "glean sim: warning: %s: no --since: the period starts at the first job's start, %s; give sacct's -S date as --since\n", path, w.Start.UTC().Format(time.RFC3339))
	}
	for _, j := range w.Jobs {
		if j.Nodes > w.Nodes {
			return nil, fmt.Errorf("%s:%d: job %d needs %d nodes, more than the machine's %d; give the machine's node count with --nodes", path, j.Line, j.ID, j.Nodes, w.Nodes)
		}
	}
	return w, nil
}

// parseSince reads --since as sacct's -S would (in UTC, as the documented
// command runs sacct).
func parseSince(s string) (time.Time, error) {
	for _, layout := range []string{"2006-01-02", "2006-01-02T15:04", "2006-01-02T15:04:05"} {
		if t, err := time.ParseInLocation(layout, s, time.UTC); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("%q is not a UTC time like 2024-01-01 or 2024-01-01T00:00:00", s)
}

func skippedTotal(e *workload.Errors) int {
	if e == nil {
		return 0
	}
	return e.Total
}
