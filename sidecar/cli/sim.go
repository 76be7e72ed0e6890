package cli

import (
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

// Sim runs a workload through the simulator in SLURM-only and glean's
// modes and prints utilization, calibration turnaround (the thesis's Table
// 5.2), regular jobs' waits and per-job changes against SLURM-only.
func Sim(_ context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("glean sim", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		wl, format, mode, plots string
		tasks                   int
		taskTime, backlog       time.Duration
		asJSON                  bool
	)
	fs.StringVar(&wl, "workload", "thesis-1", "thesis-1, thesis-2 (the thesis's submit lists), or a file path")
	fs.StringVar(&format, "format", "", "file format: thesis, swf or sacct (default: from the name; thesis for .txt)")
	fs.StringVar(&mode, "mode", "all", "slurm, fair, scavenger, thesis or all")
	fs.IntVar(&tasks, "tasks", sim.DefaultTasks, "tasks per calibration job")
	fs.DurationVar(&taskTime, "task-time", 0, "task length (overrides --tasks)")
	fs.DurationVar(&backlog, "backlog", 0, "add an unlimited elastic backlog (scavenger, last in line) of tasks of this length, e.g. 10m, started until 30 min after the last submission")
	fs.BoolVar(&asJSON, "json", false, "print JSON")
	fs.StringVar(&plots, "plots", "", "write utilization-<mode>.png/.svg and gantt-<mode>.png into this directory")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "glean sim: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	var modes []sim.ElasticMode
	if mode == "all" {
		modes = sim.ElasticModes
	} else {
		m, err := sim.ParseElasticMode(mode)
		if err != nil {
			fmt.Fprintf(stderr, "glean sim: %v\n", err)
			return 2
		}
		modes = []sim.ElasticMode{m}
	}
	if tasks < 1 {
		fmt.Fprintf(stderr, "glean sim: --tasks must be at least 1\n")
		return 2
	}
	if backlog < 0 || taskTime < 0 {
		fmt.Fprintf(stderr, "glean sim: --backlog and --task-time must not be negative\n")
		return 2
	}
	w, err := loadWorkload(wl, format)
	if err != nil {
		fmt.Fprintf(stderr, "glean sim: %v\n", err)
		return 1
	}
	var results []*sim.ElasticResult
	for _, m := range modes {
		r, err := sim.RunElastic(w, sim.ElasticConfig{Mode: m, Tasks: tasks, TaskTime: taskTime, Backlog: backlog,
			Sim: sim.Config{Policy: sim.SlurmLike, Estimates: sim.KillAtLimit}})
		if err != nil {
			fmt.Fprintf(stderr, "glean sim: %s: %v\n", m, err)
			return 1
		}
		results = append(results, r)
	}
	// The regular jobs alone: what each mode costs them.
	alone, err := sim.RunElastic(sim.RegularOnly(w), sim.ElasticConfig{Mode: sim.SlurmOnly, Sim: sim.Config{Policy: sim.SlurmLike, Estimates: sim.KillAtLimit}})
	if err != nil {
		fmt.Fprintf(stderr, "glean sim: regular jobs alone: %v\n", err)
		return 1
	}
	rep := sim.BuildReportAlone(w.Name, results, alone)
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
			errs = append(errs, plot.Gantt(bars, fmt.Sprintf("calibration jobs, %s, %s", m, name), filepath.Join(dir, "gantt-"+m+".png"),
				plot.Mark{At: r.LastSubmit, Label: "last submission"}))
		}
	}
	return errors.Join(errs...)
}

// loadWorkload resolves thesis-1/thesis-2 to the shared submit lists
// (../shared/workloads from the repository root, searched upwards from
// the working directory) or reads a file.
func loadWorkload(name, format string) (*workload.Workload, error) {
	path := name
	if n, ok := strings.CutPrefix(name, "thesis-"); ok && (n == "1" || n == "2") {
		file := "thesis-submit-list-" + n + ".txt"
		found := ""
		dir, _ := os.Getwd()
		for d := dir; d != ""; {
			for _, c := range []string{filepath.Join(d, "..", "shared", "workloads", file), filepath.Join(d, "shared", "workloads", file)} {
				if _, err := os.Stat(c); err == nil && found == "" {
					found = c
				}
			}
			p := filepath.Dir(d)
			if p == d || found != "" {
				break
			}
			d = p
		}
		if found == "" {
			return nil, fmt.Errorf("%s: %s not found in ../shared/workloads above %s; give its path", name, file, dir)
		}
		path, format = found, "thesis"
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
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
	base := filepath.Base(path)
	switch format {
	case "thesis":
		return workload.ReadThesis(f, base)
	case "swf":
		return workload.ReadSWF(f, base, workload.SWFOptions{})
	case "sacct":
		return workload.ReadSacct(f, base)
	}
	return nil, fmt.Errorf("unknown --format %q (want thesis, swf or sacct)", format)
}
