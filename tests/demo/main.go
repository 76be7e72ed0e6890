// Command demo is `make demo`: one workload, designed in real minutes, run
// on two fresh loopback Slurm clusters side by side (at the same time):
// SLURM-only (the elastic array submitted as a plain array with Slurm's own
// sbatch, as on a cluster without glean) and glean (`sbatch --glean`, the
// default fair mode, gleand running). It prints utilization, the elastic
// job's turnaround and the regular jobs' mean wait per mode and writes the
// utilization plots. It needs root and Debian's Slurm (tests/loopback-slurm.sh
// install).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/glean-hpc/glean/sidecar/sim/plot"
	"github.com/glean-hpc/glean/sidecar/spool"
	"github.com/glean-hpc/glean/tests/gleantest"
	"github.com/glean-hpc/glean/tests/slurmtest"
)

// The workload. Every Slurm time limit is in whole minutes; regular jobs
// run 10 s short of theirs (so that the holes Slurm plans are the holes
// there are). All jobs are submitted at once, in this order, so Slurm's
// FIFO priority ranks them so.
const nodes = 12

type regular struct {
	name  string
	nodes int
	limit int // minutes
}

func (r regular) run() time.Duration { return time.Duration(r.limit)*time.Minute - 10*time.Second }

var regulars = []regular{
	// 6 nodes for 4 minutes: the 12-node job below waits for them, so 6
	// nodes stay free for 4 minutes ...
	{"wide", 6, 4},
	{"full", 12, 2},
	// ... of which Slurm backfills this one into 3 for a minute: the rest
	// is a hole that no pending job fits.
	{"small", 3, 1},
}

// The elastic job: an array of independent tasks of taskRun each, with no
// -t (the partition's default, unlimited, as many users submit): Slurm
// cannot backfill them into a hole of any length; glean's pilots learn
// their real runtime from the first ones that end.
const (
	tasks   = 30
	taskRun = 30 * time.Second
)

const elasticScript = `#!/bin/sh
echo "task $SLURM_ARRAY_TASK_ID on $SLURMD_NODENAME (job $SLURM_JOB_ID)"
sleep %d
`

const (
	slurmOnly = "SLURM-only"
	withGlean = "glean"
)

// run is one mode's cluster and what was submitted to it.
type run struct {
	mode    string
	c       *slurmtest.Cluster
	e       *gleantest.Env
	regular map[string]string // job id -> name
	elastic string            // the plain array's id, or the anchor's
	sbatch  string            // the elastic job's sbatch (Slurm's own or the wrapper)
	flags   []string
	jobs    []sjob
	events  []spool.TaskEvent
	rec     *spool.Record
}

func main() {
	out := flag.String("out", "demo-out", "directory for the plots")
	keep := flag.Bool("keep", false, "keep the clusters' and glean's directories (logs) after a successful run")
	started := flag.Int64("started", 0, "when `make demo` started (Unix seconds): the budget counts from then (0: now)")
	budget := flag.Duration("budget", 10*time.Minute, "the whole demo's time budget: it stops with an error past it")
	flag.Parse()
	begin := time.Now()
	if *started > 0 {
		begin = time.Unix(*started, 0)
	}
	if err := demo(*out, *keep, begin, *budget); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

// step prints what the demo is doing and, every 10 s while it takes, that
// it is still at it; then how long it took.
func step(begin time.Time, what string, do func() error) error {
	t0 := time.Now()
	fmt.Printf("[%s] %s ...\n", clock(time.Since(begin)), what)
	done := make(chan struct{})
	go func() {
		tick := time.NewTicker(10 * time.Second)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				fmt.Printf("[%s]   still %s (%v so far)\n", clock(time.Since(begin)), what, time.Since(t0).Round(time.Second))
			}
		}
	}()
	err := do()
	close(done)
	if err == nil {
		fmt.Printf("[%s]   done in %v\n", clock(time.Since(begin)), time.Since(t0).Round(100*time.Millisecond))
	}
	return err
}

func demo(outDir string, keep bool, begin time.Time, budget time.Duration) (err error) {
	if why := slurmtest.Unavailable(); why != "" {
		return errors.New(why)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithDeadline(ctx, begin.Add(budget))
	defer cancel()
	overBudget := func(during string) error {
		return fmt.Errorf("the demo's budget of %v ran out %s (started %s ago)", budget, during, time.Since(begin).Round(time.Second))
	}
	fmt.Printf("make demo: the same workload on two fresh %d-node loopback Slurm 22.05 clusters at the same time:\n", nodes)
	fmt.Printf("  %s: the elastic array submitted as a plain array with Slurm's own sbatch (no glean)\n", slurmOnly)
	fmt.Printf("  %s: the same array with `sbatch --glean` (fair mode), gleand running\n", withGlean)
	fmt.Println("workload, all submitted at once in this order (time limits in whole minutes; regular jobs run 10 s short of theirs):")
	for _, r := range regulars {
		fmt.Printf("  regular %-6s %2d nodes, -t %d\n", r.name, r.nodes, r.limit)
	}
	fmt.Printf("  elastic: --array=0-%d, one node per task, no -t, each task runs %v\n", tasks-1, taskRun)

	fmt.Println()

	runs := []*run{{mode: slurmOnly}, {mode: withGlean}}
	defer func() {
		for _, r := range runs {
			r.teardown(err == nil && !keep)
		}
	}()
	for i, r := range runs {
		if err := step(begin, fmt.Sprintf("starting the %s cluster (%d nodes, its own munged, slurmctld and slurmds)", r.mode, nodes), func() error {
			var err error
			r.c, err = slurmtest.Up(slurmtest.Options{Nodes: nodes})
			return err
		}); err != nil {
			return err
		}
		// glean is installed on both (users, spool, binaries); it runs only on one.
		what := "building glean (go build of glean, gleand, glean-agent, glean-helper) and installing it"
		if i > 0 {
			what = "installing glean on the second cluster (the build is cached)"
		}
		if err := step(begin, what, func() error {
			var err error
			r.e, err = gleantest.New(r.c, gleantest.Options{Grace: "10s", Margin: "20s"})
			return err
		}); err != nil {
			return err
		}
		if err := r.prepare(); err != nil {
			return err
		}
	}
	real, err := gleantest.RealSbatch()
	if err != nil {
		return err
	}
	runs[0].sbatch = real
	runs[1].sbatch, runs[1].flags = "sbatch", []string{"--glean"}
	if err := step(begin, "starting glean-helper (root) and gleand (as the glean user)", runs[1].e.Launch); err != nil {
		return err
	}
	if ctx.Err() != nil {
		return overBudget("before the workload started")
	}
	left := time.Until(begin.Add(budget))
	fmt.Printf("[%s] clusters up, glean built and started; submitting the workload (%v of the budget left)\n\n",
		clock(time.Since(begin)), left.Round(time.Second))

	for _, r := range runs {
		if err := r.submit(ctx); err != nil {
			return err
		}
	}
	start := time.Now()
	fmt.Printf("  time  %-29s | %s\n", slurmOnly, withGlean)
	fmt.Printf("  %s  %-29s | %s\n", clock(0), runs[0].progress(ctx), runs[1].progress(ctx))
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	lastLine := time.Now()
	for !runs[0].finished(ctx) || !runs[1].finished(ctx) {
		select {
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return fmt.Errorf("%w: the workload had not ended after %v\n%s", overBudget("while the workload ran"),
					time.Since(start).Round(time.Second), runs[1].e.Logs())
			}
			return ctx.Err()
		case <-tick.C:
		}
		if time.Since(lastLine) >= 15*time.Second {
			lastLine = time.Now()
			fmt.Printf("  %s  %-29s | %s\n", clock(time.Since(start)), runs[0].progress(ctx), runs[1].progress(ctx))
		}
	}
	fmt.Printf("  %s  all jobs ended in both runs\n\n", clock(time.Since(start)))
	for _, r := range runs {
		if err := r.collect(ctx); err != nil {
			return err
		}
	}
	if err := report(runs, outDir); err != nil {
		return err
	}
	fmt.Printf("\nmake demo took %v in all\n", time.Since(begin).Round(time.Second))
	return nil
}

// prepare writes the elastic job's script and output directory as the
// test user's.
func (r *run) prepare() error {
	script := filepath.Join(r.e.Work, "elastic.sh")
	if err := os.WriteFile(script, fmt.Appendf(nil, elasticScript, int(taskRun/time.Second)), 0o755); err != nil {
		return err
	}
	outs := filepath.Join(r.e.Work, "out")
	if err := os.MkdirAll(outs, 0o755); err != nil {
		return err
	}
	for _, p := range []string{script, outs} {
		if err := os.Chown(p, r.e.UID, r.e.GID); err != nil {
			return err
		}
	}
	return nil
}

func (r *run) submit(ctx context.Context) error {
	r.regular = map[string]string{}
	for _, j := range regulars {
		out, err := r.c.Output(ctx, "sbatch", "--parsable", "-J", j.name, "-N", strconv.Itoa(j.nodes),
			"-t", strconv.Itoa(j.limit), "-o", "/dev/null", "--wrap", fmt.Sprintf("sleep %d", int(j.run()/time.Second)))
		if err != nil {
			return err
		}
		id, _, _ := strings.Cut(strings.TrimSpace(out), ";")
		r.regular[id] = j.name
	}
	args := append([]string{"--parsable"}, r.flags...)
	args = append(args, "-J", "elastic", fmt.Sprintf("--array=0-%d", tasks-1), "-o", "out/%A_%a.out", "elastic.sh")
	res, err := r.e.Exec(ctx, "", r.sbatch, args...)
	if err != nil {
		return err
	}
	id, _, _ := strings.Cut(strings.TrimSpace(res.Stdout), ";")
	if _, err := strconv.Atoi(id); res.Code != 0 || err != nil {
		return fmt.Errorf("%s: sbatch %v: exit %d: %s%s", r.mode, args, res.Code, res.Stdout, res.Stderr)
	}
	r.elastic = id
	return nil
}

// progress is one cell of the progress table: jobs running and pending,
// pilots, tasks done.
func (r *run) progress(ctx context.Context) string {
	out, err := r.c.Output(ctx, "squeue", "-h", "-r", "-o", "%T %P")
	if err != nil {
		return "squeue failed: " + err.Error()
	}
	var running, pending, pilots int
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		state, part, _ := strings.Cut(l, " ")
		switch {
		case part == "glean": // the anchor: glean's bookkeeping, not work
		case part == "pilot" && state == "RUNNING":
			pilots++
		case state == "RUNNING":
			running++
		case state == "PENDING":
			pending++
		}
	}
	s := fmt.Sprintf("%2d jobs running, %2d pending", running, pending)
	if r.mode == withGlean {
		done := 0
		if rec := r.e.LoadRecord(r.elastic); rec != nil {
			done = rec.Tasks.Done
		}
		s += fmt.Sprintf(", %2d pilots, tasks done %2d/%d", pilots, done, tasks)
	}
	return s
}

// finished: no job of the run is left in the queue (the anchor included).
func (r *run) finished(ctx context.Context) bool {
	out, err := r.c.Output(ctx, "squeue", "-h", "-o", "%i")
	return err == nil && strings.TrimSpace(out) == ""
}

func (r *run) collect(ctx context.Context) error {
	out, err := r.c.Output(ctx, "scontrol", "-o", "show", "job")
	if err != nil {
		return err
	}
	r.jobs = parseJobs(out)
	if r.mode == withGlean {
		r.rec = r.e.LoadRecord(r.elastic)
		if r.rec == nil {
			return fmt.Errorf("gleand has no record of the elastic job %s\n%s", r.elastic, r.e.Logs())
		}
		if r.events, err = r.e.LoadTaskEvents(r.elastic); err != nil {
			return err
		}
	}
	return nil
}

func (r *run) teardown(remove bool) {
	if r.e != nil {
		r.e.Stop()
	}
	if r.c != nil {
		if err := r.c.Down(); err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
	}
	switch {
	case remove:
		if r.e != nil {
			os.RemoveAll(r.e.Dir)
		}
		if r.c != nil {
			r.c.Remove()
		}
	case r.c != nil:
		fmt.Fprintf(os.Stderr, "%s: Slurm's logs kept in %s", r.mode, r.c.Dir)
		if r.e != nil {
			fmt.Fprintf(os.Stderr, ", glean's in %s", r.e.Dir)
		}
		fmt.Fprintln(os.Stderr)
	}
}

// sjob is one job as `scontrol -o show job` shows it (SLURM_TIME_FORMAT=%s).
type sjob struct {
	id, arrayJob, name, partition, state string
	nodes                                int
	submit, start, end                   time.Time
}

func parseJobs(out string) []sjob {
	var jobs []sjob
	for _, line := range strings.Split(out, "\n") {
		if !strings.HasPrefix(line, "JobId=") {
			continue
		}
		var j sjob
		for _, f := range strings.Fields(line) {
			k, v, _ := strings.Cut(f, "=")
			switch k {
			case "JobId":
				j.id = v
			case "ArrayJobId":
				j.arrayJob = v
			case "JobName":
				j.name = v
			case "Partition":
				j.partition = v
			case "JobState":
				j.state = v
			case "NumNodes":
				n, _, _ := strings.Cut(v, "-")
				j.nodes, _ = strconv.Atoi(n)
			case "SubmitTime":
				j.submit = epoch(v)
			case "StartTime":
				j.start = epoch(v)
			case "EndTime":
				j.end = epoch(v)
			}
		}
		jobs = append(jobs, j)
	}
	return jobs
}

func epoch(s string) time.Time {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 {
		return time.Time{}
	}
	return time.Unix(n, 0)
}

// span is a stretch of node use: nodes from start to end.
type span struct {
	start, end time.Time
	nodes      int
	kind       plot.Kind
}

// measures are one run's figures, times relative to its first submission.
type measures struct {
	t0          time.Time
	regular     []span
	elasticWork []span // completed tasks (a plain array's elements, glean's completed attempts)
	alloc       []span // elastic allocations for the plot: array or shadow elements, pilots
	lastRegular time.Time
	elasticEnd  time.Time
	elasticSub  time.Time
	meanWait    time.Duration
	waits       map[string]time.Duration // by regular job name
	pilots      int
	inPilots    int            // completed tasks that ran in pilots
	wasted      map[string]int // attempts that did not complete, by end reason
}

func (r *run) measure() (measures, error) {
	m := measures{waits: map[string]time.Duration{}, wasted: map[string]int{}}
	var waits time.Duration
	for _, j := range r.jobs {
		if name, ok := r.regular[j.id]; ok {
			if j.start.IsZero() || j.end.IsZero() {
				return m, fmt.Errorf("%s: regular job %s (%s) has no start or end: %s", r.mode, j.id, j.name, j.state)
			}
			m.regular = append(m.regular, span{j.start, j.end, j.nodes, plot.Regular})
			waits += j.start.Sub(j.submit)
			m.waits[name] = j.start.Sub(j.submit)
			if j.end.After(m.lastRegular) {
				m.lastRegular = j.end
			}
		}
		if j.submit.IsZero() {
			continue
		}
		if m.t0.IsZero() || j.submit.Before(m.t0) {
			m.t0 = j.submit
		}
	}
	m.meanWait = waits / time.Duration(max(len(m.regular), 1))
	pilotIDs := map[string]bool{}
	for _, j := range r.jobs {
		if j.start.IsZero() || j.end.IsZero() {
			continue
		}
		switch {
		case r.mode == slurmOnly && j.arrayJob == r.elastic:
			m.alloc = append(m.alloc, span{j.start, j.end, 1, plot.CalibrationBase})
			if j.state == "COMPLETED" {
				m.elasticWork = append(m.elasticWork, span{j.start, j.end, 1, plot.CalibrationBase})
				if j.end.After(m.elasticEnd) {
					m.elasticEnd = j.end
				}
			}
		case r.mode == withGlean && r.rec.Shadow != "" && j.arrayJob == r.rec.Shadow:
			m.alloc = append(m.alloc, span{j.start, j.end, 1, plot.CalibrationBase})
		case r.mode == withGlean && j.partition == "pilot":
			m.alloc = append(m.alloc, span{j.start, j.end, 1, plot.Pilot})
			pilotIDs[j.id] = true
			m.pilots++
		}
		if j.id == r.elastic || (r.mode == slurmOnly && j.arrayJob == r.elastic && (m.elasticSub.IsZero() || j.submit.Before(m.elasticSub))) {
			m.elasticSub = j.submit
		}
	}
	if r.mode == withGlean {
		for _, ev := range r.events {
			if ev.Reason != spool.ReasonCompleted {
				m.wasted[ev.Reason]++
				continue
			}
			m.elasticWork = append(m.elasticWork, span{ev.Start, ev.End, 1, plot.CalibrationBase})
			if ev.End.After(m.elasticEnd) {
				m.elasticEnd = ev.End
			}
			if pilotIDs[ev.Pilot] {
				m.inPilots++
			}
		}
	}
	if n := len(m.elasticWork); n != tasks {
		return m, fmt.Errorf("%s: %d of %d elastic tasks completed", r.mode, n, tasks)
	}
	return m, nil
}

// nodeSeconds is the node-seconds of spans within [from, to).
func nodeSeconds(spans []span, from, to time.Time) float64 {
	var s float64
	for _, sp := range spans {
		a, b := maxTime(sp.start, from), minTime(sp.end, to)
		if b.After(a) {
			s += float64(sp.nodes) * b.Sub(a).Seconds()
		}
	}
	return s
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

func report(runs []*run, outDir string) error {
	var ms []measures
	for _, r := range runs {
		m, err := r.measure()
		if err != nil {
			if r.e != nil {
				err = fmt.Errorf("%w\n%s", err, r.e.Logs())
			}
			return err
		}
		ms = append(ms, m)
	}
	window := ms[0].lastRegular.Sub(ms[0].t0)
	fmt.Printf("utilization = node-seconds of regular jobs + completed elastic tasks within the window, over %d nodes x the window;\n", nodes)
	fmt.Printf("the window: from the first submission to the end of the SLURM-only run's last regular job, %s (the same length in both runs)\n", clock(window))
	util := make([]float64, len(ms))
	for i, m := range ms {
		end := m.t0.Add(window)
		used := nodeSeconds(m.regular, m.t0, end) + nodeSeconds(m.elasticWork, m.t0, end)
		util[i] = 100 * used / (float64(nodes) * window.Seconds())
		fmt.Printf("%s utilization %.1f %%\n", runs[i].mode, util[i])
	}
	fmt.Println()
	fmt.Printf("%-52s %12s %12s\n", "", slurmOnly, withGlean)
	row := func(what string, f func(m measures) string) {
		fmt.Printf("%-52s %12s %12s\n", what, f(ms[0]), f(ms[1]))
	}
	row("elastic turnaround (submit to last task end)", func(m measures) string { return clock(m.elasticEnd.Sub(m.elasticSub)) })
	row("regular jobs' mean wait (submit to start)", func(m measures) string { return clock(m.meanWait) })
	row("last regular job ends", func(m measures) string { return clock(m.lastRegular.Sub(m.t0)) })
	row(fmt.Sprintf("elastic tasks done within the window (of %d)", tasks), func(m measures) string {
		n := 0
		for _, s := range m.elasticWork {
			if !s.end.After(m.t0.Add(window)) {
				n++
			}
		}
		return strconv.Itoa(n)
	})
	row("pilots run / tasks completed in pilots", func(m measures) string {
		if m.pilots == 0 {
			return "-"
		}
		return fmt.Sprintf("%d / %d", m.pilots, m.inPilots)
	})
	row("task attempts ended early and re-run", func(m measures) string {
		n := 0
		for _, k := range m.wasted {
			n += k
		}
		return strconv.Itoa(n)
	})
	var reasons []string
	for why, n := range ms[1].wasted {
		reasons = append(reasons, fmt.Sprintf("%s %d", why, n))
	}
	if len(reasons) > 0 {
		slices.Sort(reasons)
		fmt.Printf("  (glean's, by end reason: %s)\n", strings.Join(reasons, ", "))
	}
	for _, reg := range regulars {
		row("  wait of regular "+reg.name, func(m measures) string { return clock(m.waits[reg.name]) })
	}

	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return err
	}
	var last time.Duration
	for _, m := range ms {
		for _, s := range append(append(slices.Clone(m.regular), m.alloc...), m.elasticWork...) {
			last = max(last, s.end.Sub(m.t0))
		}
	}
	var files []string
	for i, m := range ms {
		t := plot.Timeline{Title: fmt.Sprintf("%s: %d nodes, %.1f %% utilization in the window (0:00-%s)", runs[i].mode, nodes, util[i], clock(window)),
			Nodes: nodes, Window: last,
			Marks: []plot.Mark{{At: window, Label: "window ends"}, {At: m.elasticEnd.Sub(m.t0), Label: "elastic job done"}}}
		for _, s := range append(slices.Clone(m.regular), m.alloc...) {
			t.Segments = append(t.Segments, plot.Segment{Kind: s.kind, Start: max(s.start.Sub(m.t0), 0), End: s.end.Sub(m.t0), Nodes: s.nodes})
		}
		name := filepath.Join(outDir, strings.ToLower(strings.ReplaceAll(runs[i].mode, "-", ""))+".png")
		if err := plot.Utilization(t, name); err != nil {
			fmt.Fprintf(os.Stderr, "demo: plot %s: %v\n", name, err)
			continue
		}
		files = append(files, name)
	}
	abs, _ := filepath.Abs(outDir)
	fmt.Printf("\nutilization plots (regular jobs; the elastic array's own elements as \"calibration base\"; glean's pilots) in %s/: %s\n",
		abs, strings.Join(files, ", "))
	return nil
}

// clock formats a duration as m:ss.
func clock(d time.Duration) string {
	d = d.Round(time.Second)
	sign := ""
	if d < 0 {
		sign, d = "-", -d
	}
	return fmt.Sprintf("%s%d:%02d", sign, int(d/time.Minute), int(d%time.Minute/time.Second))
}
