// Package simreplay checks the simulator's SlurmLike mode against a real
// Slurm: it replays a workload, compressed in time, on a loopback cluster
// (tests/slurmtest), runs the same jobs through the simulator with the
// cluster's scheduler settings, and compares start times job by job.
// docs/simulator.md describes the method and the figures.
package simreplay

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/glean-hpc/glean/sidecar/sim"
	"github.com/glean-hpc/glean/sidecar/slurm"
	"github.com/glean-hpc/glean/sidecar/workload"
	"github.com/glean-hpc/glean/tests/slurmtest"
)

// Compress divides submit and run times by factor. Limits become whole
// minutes of the compressed time, rounded up, because sbatch keeps limits
// in whole minutes; UNLIMITED stays. Rounding up keeps every job that
// ended before its limit ending before it.
func Compress(w *workload.Workload, factor float64) *workload.Workload {
	out := &workload.Workload{Name: fmt.Sprintf("%s/%g", w.Name, factor), Nodes: w.Nodes}
	div := func(d time.Duration) time.Duration {
		return time.Duration(math.Round(float64(d)/factor/1e6) * 1e6) // ms: sleep's and our clocks' grain
	}
	for _, j := range w.Jobs {
		j.Submit, j.Run = div(j.Submit), div(j.Run)
		if j.Limit != workload.Unlimited && j.Limit > 0 {
			j.Limit = time.Duration(math.Ceil(float64(j.Limit)/factor/float64(time.Minute))) * time.Minute
		}
		out.Jobs = append(out.Jobs, j)
	}
	return out
}

// Settings reads what the simulator must copy from `scontrol show config`.
// The boundary's parser gives bf_interval, bf_resolution and bf_window;
// sched_interval, batch_sched_delay and bf_max_job_test are read here,
// with Slurm's defaults where they are not set.
func Settings(config []byte) (sim.SlurmParams, error) {
	cfg, err := slurm.ParseConfig(bytes.NewReader(config))
	if err != nil {
		return sim.SlurmParams{}, err
	}
	p := sim.SlurmParams{
		BFInterval: cfg.BackfillInterval, BFResolution: cfg.BackfillResolution, BFWindow: cfg.BackfillWindow,
		SchedInterval: time.Minute, BatchSchedDelay: 3 * time.Second, BFMaxJobTest: 500,
		LimitCheck: 30 * time.Second, // slurmctld's PERIODIC_TIMEOUT, not configurable
		// The replayed jobs are `sleep`, which dies at the SIGTERM of the
		// limit kill: KillWait (SIGTERM to SIGKILL) never delays them.
		KillWait: 0,
	}
	for line := range strings.SplitSeq(string(config), "\n") {
		k, v, _ := strings.Cut(line, "=")
		if strings.TrimSpace(k) != "SchedulerParameters" {
			continue
		}
		for opt := range strings.SplitSeq(strings.TrimSpace(v), ",") {
			name, val, _ := strings.Cut(opt, "=")
			n, err := strconv.Atoi(val)
			switch {
			case name == "sched_interval" && err == nil && n > 0:
				p.SchedInterval = time.Duration(n) * time.Second
			case name == "batch_sched_delay" && err == nil && n > 0:
				p.BatchSchedDelay = time.Duration(n) * time.Second
			case name == "bf_max_job_test" && err == nil && n > 0:
				p.BFMaxJobTest = n
			}
		}
	}
	return p, nil
}

// Record is what Slurm did with one job: times as squeue prints them
// (whole seconds, truncated) and, where slurmctld's log has them, to the
// millisecond.
type Record struct {
	ID      int    // the workload's job ID
	SlurmID string // Slurm's
	Submit  time.Time
	Start   time.Time // zero while pending
	End     time.Time // zero until it ended
	State   string    // the last state seen: PENDING, RUNNING, COMPLETED, TIMEOUT, ...
	Hosts   string    // %N
	Log     LogTimes
}

func (r *Record) started() bool { return !r.Start.IsZero() && r.State != "PENDING" }
func (r *Record) ended() bool   { return !r.End.IsZero() && terminal(r.State) }

// precise returns the log's time if there is one, else squeue's second
// plus half a second: the middle of the second it was truncated from.
func precise(logged, whole time.Time) time.Time {
	if !logged.IsZero() {
		return logged
	}
	return whole.Add(500 * time.Millisecond)
}

// submitted, startedAt and endedAt are r's times as precisely as known.
func (r *Record) submitted() time.Time { return precise(r.Log.Submit, r.Submit) }
func (r *Record) startedAt() time.Time { return precise(r.Log.Start, r.Start) }
func (r *Record) endedAt() time.Time   { return precise(r.Log.End, r.End) }

func terminal(state string) bool {
	switch state {
	case "PENDING", "RUNNING", "COMPLETING", "CONFIGURING", "SUSPENDED", "":
		return false
	}
	return true
}

// Run is one replay: what the comparison needs, saved as JSON it can be
// compared again without Slurm.
type Run struct {
	Name    string          // the compressed workload's
	Factor  float64         // its compression
	Params  sim.SlurmParams // the cluster's scheduler settings
	Cycle   time.Duration   // one scheduling cycle: the agreement tolerance
	Origin  time.Time       // jobs were submitted at Origin + their submit time
	Stopped time.Time       // when polling stopped
	// FirstSchedule is when slurmctld's main scheduler first ran (the
	// log's first "SchedulerParameters=" line): a tick of its one-second
	// loop, on which the simulator's whole seconds are laid.
	FirstSchedule time.Time
	Records       []Record
	// Started is when slurmctld started; Backfill the starts of its
	// backfill passes and FullRuns the main scheduler's full runs, from the
	// log (Replay turns on the debug level and the Backfill flag): what the
	// model's ticks are checked against (CheckPasses). Empty in runs saved
	// before they were recorded.
	Started  time.Time   `json:",omitzero"`
	Backfill []time.Time `json:",omitempty"`
	FullRuns []time.Time `json:",omitempty"`
}

// Replay submits w's jobs to c at origin plus their submit times, paced by
// the wall clock, as `sbatch -N n -t <minutes|UNLIMITED> --wrap "sleep run"`,
// and polls squeue until every job has started or deadline passes; then it
// adds the times of slurmctld's log. The records are in w's order.
func Replay(ctx context.Context, c *slurmtest.Cluster, w *workload.Workload, origin, deadline time.Time) (*Run, error) {
	ctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	run := &Run{Name: w.Name, Origin: origin, Records: make([]Record, len(w.Jobs))}
	recs := run.Records
	byName := make(map[string]*Record, len(w.Jobs))
	var mu sync.Mutex // guards recs between the submitter and the poller

	submitted := make(chan error, 1)
	go func() {
		submitted <- func() error {
			for i, j := range w.Jobs {
				if err := sleepUntil(ctx, origin.Add(j.Submit)); err != nil {
					return fmt.Errorf("job %d not submitted: %w", j.ID, err)
				}
				id, err := submit(ctx, c, &j)
				if err != nil {
					return err
				}
				mu.Lock()
				recs[i] = Record{ID: j.ID, SlurmID: id, State: "PENDING"}
				byName[jobName(j.ID)] = &recs[i]
				mu.Unlock()
			}
			return nil
		}()
	}()

	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	done := false
	// A replay of the whole list lasts over an hour and a half on a machine
	// that others load too: a squeue that fails (slurmctld busy past its
	// MessageTimeout) is asked again at the next tick, and only failures
	// for longer than squeueGrace end the replay. The poll is only for
	// noticing the starts: the times come from slurmctld's log.
	var failingSince time.Time
	for !done || countStarted(&mu, recs) < len(recs) {
		select {
		case err := <-submitted:
			if err != nil {
				return run, err
			}
			done = true
		case <-tick.C:
		case <-ctx.Done():
			return run, fmt.Errorf("replay of %s: %w (%d of %d jobs started)", w.Name, ctx.Err(), countStarted(&mu, recs), len(recs))
		}
		out, err := squeue(ctx, c)
		if err != nil {
			if ctx.Err() != nil {
				continue
			}
			if failingSince.IsZero() {
				failingSince = time.Now()
			}
			if time.Since(failingSince) > squeueGrace {
				return run, fmt.Errorf("squeue failing since %v: %w", failingSince.Format(time.TimeOnly), err)
			}
			continue
		}
		failingSince = time.Time{}
		mu.Lock()
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			if r := byName[strings.SplitN(line, "|", 2)[0]]; r != nil {
				if err := r.update(line); err != nil {
					mu.Unlock()
					return run, err
				}
			}
		}
		mu.Unlock()
	}
	run.Stopped = time.Now()
	f, err := os.Open(filepath.Join(c.Dir, "log", "slurmctld.log"))
	if err != nil {
		return run, err
	}
	defer f.Close()
	log, err := ReadLog(f)
	if err != nil {
		return run, err
	}
	run.FirstSchedule, run.Started, run.Backfill, run.FullRuns = log.FirstSchedule, log.Started, log.Backfill, log.FullRuns
	for i := range recs {
		recs[i].Log = log.Jobs[recs[i].SlurmID]
	}
	return run, nil
}

func countStarted(mu *sync.Mutex, recs []Record) int {
	mu.Lock()
	defer mu.Unlock()
	n := 0
	for i := range recs {
		if recs[i].started() {
			n++
		}
	}
	return n
}

func jobName(id int) string { return "r" + strconv.Itoa(id) }

func sleepUntil(ctx context.Context, t time.Time) error {
	timer := time.NewTimer(time.Until(t))
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func submit(ctx context.Context, c *slurmtest.Cluster, j *workload.Job) (string, error) {
	limit := "UNLIMITED"
	if j.Limit != workload.Unlimited {
		limit = strconv.Itoa(int(j.Limit / time.Minute))
	}
	args := []string{"--parsable", "-N", strconv.Itoa(j.Nodes), "-t", limit, "-J", jobName(j.ID),
		"-o", "/dev/null", "--wrap", fmt.Sprintf("sleep %.3f", j.Run.Seconds())}
	out, err := c.Output(ctx, "sbatch", args...)
	if err != nil {
		return "", err
	}
	id, _, _ := strings.Cut(strings.TrimSpace(out), ";")
	return id, nil
}

// squeueFormat: our job names hold no separator, so a plain one will do.
const squeueFormat = "%j|%A|%V|%S|%e|%T|%N"

func squeue(ctx context.Context, c *slurmtest.Cluster) (string, error) {
	return c.Output(ctx, "squeue", "-h", "-t", "all", "-o", squeueFormat)
}

// squeueGrace is how long squeue may keep failing before a replay gives up.
const squeueGrace = 2 * time.Minute

// update takes one squeue line of r's job.
func (r *Record) update(line string) error {
	f := strings.Split(line, "|")
	if len(f) != 7 {
		return fmt.Errorf("squeue line %q: want 7 fields", line)
	}
	epoch := func(s string) (time.Time, error) {
		switch s {
		case "N/A", "NONE", "Unknown", "0", "": // not known (yet), or no end
			return time.Time{}, nil
		}
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return time.Time{}, fmt.Errorf("squeue line %q: time %q: %w", line, s, err)
		}
		return time.Unix(n, 0), nil
	}
	var err error
	var sub, start, end time.Time
	if sub, err = epoch(f[2]); err == nil {
		if start, err = epoch(f[3]); err == nil {
			end, err = epoch(f[4])
		}
	}
	if err != nil {
		return err
	}
	r.Submit, r.State = sub, f[5]
	if r.State != "PENDING" {
		r.Start, r.Hosts = start, f[6]
	}
	if terminal(r.State) {
		r.End = end
	}
	return nil
}

// LogTimes are a job's events as slurmctld's log stamps them.
type LogTimes struct {
	Submit, Start, End time.Time // End: the job's completion, or its kill at its limit
}

// Log is what ReadLog takes from a slurmctld log.
type Log struct {
	Jobs          map[string]LogTimes // by Slurm job ID
	FirstSchedule time.Time           // the main scheduler's first run
	Started       time.Time           // slurmctld's start
	// Backfill are the backfill passes' beginnings (DebugFlags=Backfill),
	// FullRuns the main scheduler's full runs (debug level).
	Backfill, FullRuns []time.Time
}

// ReadLog reads a slurmctld log at the default (info) level, whose lines
// begin with a local time to the millisecond:
//
//	[2026-11-22T04:10:13.048] _slurm_rpc_submit_batch_job: JobId=1 InitPrio=4294901759 usec=488
//	[2026-11-22T04:10:14.043] SchedulerParameters=default_queue_depth=100,max_rpc_cnt=0,...
//	[2026-11-22T04:11:43.064] sched/backfill: _start_job: Started JobId=6 in batch on c[1-6,24]
//	[2026-11-22T04:18:57.206] sched: Allocate JobId=2 NodeList=c[1-4] #CPUs=4 Partition=batch
//	[2026-11-22T04:10:58.201] _job_complete: JobId=2 done
//	[2026-11-22T04:25:15.296] Time limit exhausted for JobId=1
//
// squeue's whole seconds lose up to a second per event, which adds up along
// chains of jobs that start at others' ends; the log does not.
func ReadLog(r io.Reader) (*Log, error) {
	out := &Log{Jobs: make(map[string]LogTimes)}
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		stamp, msg, ok := strings.Cut(strings.TrimPrefix(sc.Text(), "["), "] ")
		if !ok {
			continue
		}
		var id string
		var field func(*LogTimes) *time.Time
		for _, ev := range logEvents {
			if rest, ok := strings.CutPrefix(msg, ev.prefix); ok && strings.HasSuffix(rest, ev.suffix) {
				id, _, _ = strings.Cut(rest, " ")
				field = ev.field
				break
			}
		}
		var mark *[]time.Time
		switch {
		case msg == "sched/backfill: _attempt_backfill: beginning":
			mark = &out.Backfill
		case msg == "debug:  sched: Running job scheduler for full queue.":
			mark = &out.FullRuns
		}
		first := out.FirstSchedule.IsZero() && strings.HasPrefix(msg, "SchedulerParameters=")
		started := strings.HasPrefix(msg, "slurmctld version ") && strings.Contains(msg, " started on cluster ")
		if field == nil && !first && mark == nil && !started {
			continue
		}
		t, err := time.ParseInLocation("2006-01-02T15:04:05.000", stamp, time.Local)
		if err != nil {
			return nil, fmt.Errorf("slurmctld log line %q: %w", sc.Text(), err)
		}
		switch {
		case first:
			out.FirstSchedule = t
		case started:
			out.Started = t
		case mark != nil:
			*mark = append(*mark, t)
		}
		if field == nil {
			continue
		}
		lt := out.Jobs[id]
		if p := field(&lt); p.IsZero() {
			*p = t
		}
		out.Jobs[id] = lt
	}
	return out, sc.Err()
}

var logEvents = []struct {
	prefix, suffix string
	field          func(*LogTimes) *time.Time
}{
	{"_slurm_rpc_submit_batch_job: JobId=", "", func(l *LogTimes) *time.Time { return &l.Submit }},
	{"sched: Allocate JobId=", "", func(l *LogTimes) *time.Time { return &l.Start }},
	{"sched/backfill: _start_job: Started JobId=", "", func(l *LogTimes) *time.Time { return &l.Start }},
	{"_job_complete: JobId=", " done", func(l *LogTimes) *time.Time { return &l.End }},
	{"Time limit exhausted for JobId=", "", func(l *LogTimes) *time.Time { return &l.End }},
}

// Input is how the simulator is fed from a replay.
type Input int

const (
	// AsExecuted takes the submit times Slurm recorded and, for jobs that
	// ended, the run times Slurm measured (end - start, which include the
	// launch of the batch script), to the millisecond from slurmctld's
	// log. It isolates the scheduler from the replayer's submission jitter
	// and slurmd's launch latency.
	AsExecuted Input = iota
	// Nominal takes the compressed workload as it is.
	Nominal
)

func (in Input) String() string {
	if in == Nominal {
		return "nominal"
	}
	return "as executed"
}

// base is the simulation's time 0: a whole number of seconds before a
// tick of slurmctld, so that the simulator's scheduler ticks (whole
// seconds) fall on slurmctld's; and at most a second before the origin, so
// that no submission is negative. The tick is the backfill thread's first
// pass where the log shows it (its passes decide every start but the
// queue's head's), else the main scheduler's first run.
func (r *Run) base() time.Time {
	tick := r.FirstSchedule
	if len(r.Backfill) > 0 {
		tick = r.Backfill[0]
	}
	if tick.IsZero() {
		return r.Origin
	}
	phase := tick.Sub(r.Origin) % time.Second
	if phase < 0 {
		phase += time.Second
	}
	return r.Origin.Add(phase - time.Second)
}

// Workload is the workload the simulator replays: w (compressed, in the
// records' order) on the simulation's clock, with Slurm's submit and run
// times for AsExecuted. A job that had not ended when the replay stopped
// runs at least until then.
func (r *Run) Workload(w *workload.Workload, in Input) *workload.Workload {
	base := r.base()
	out := &workload.Workload{Name: w.Name + " " + in.String(), Nodes: w.Nodes}
	for i, j := range w.Jobs {
		rec := &r.Records[i]
		j.Submit += r.Origin.Sub(base)
		if in == AsExecuted {
			j.Submit = rec.submitted().Sub(base)
			switch {
			case rec.ended() && rec.State != "TIMEOUT":
				j.Run = rec.endedAt().Sub(rec.startedAt())
			case rec.started():
				// Killed or still running: the simulator kills it on its
				// own clock; it ran at least this long.
				j.Run = max(j.Run, r.Stopped.Sub(rec.startedAt()))
			}
		}
		out.Jobs = append(out.Jobs, j)
	}
	return out
}

// Row compares one job.
type Row struct {
	ID, Nodes            int
	Submit               time.Duration // on the simulation's clock
	Slurm, Sim           time.Duration // starts, on the simulation's clock
	Diff, Tolerance      time.Duration // Sim - Slurm, and what counts as agreement
	Agree                bool
	SlurmHosts, SimHosts string
	SlurmState           string
	SimKilled            bool
	// After is the job whose end let this one start in Slurm (the last to
	// leave one of its nodes before it started), 0 for its submission;
	// Step is the difference of the two starts counted from that event in
	// each: the start's own error, without what earlier starts passed on.
	After     int
	Step      time.Duration
	StepAgree bool
}

// Comparison is the outcome of one replay.
type Comparison struct {
	Input Input
	Cycle time.Duration // one scheduling cycle: the agreement tolerance
	Rows  []Row
	Agree int
	Share float64
	// StepAgree counts the starts whose Step is within the tolerance.
	StepAgree int
	StepShare float64
	// Passes counts Slurm's backfill passes while the replay ran (from
	// the log, if it shows them), PassesMet those the simulator made too,
	// within a second; SimPasses counts the simulator's over that time.
	Passes, PassesMet, SimPasses int
	// PassTimes are the simulator's backfill passes, on its clock.
	PassTimes []time.Duration
	Result    *sim.Result
}

// Compare runs w (compressed, as replayed) through the simulator with the
// cluster's settings and compares each job's start with Slurm's. A job
// agrees if its starts differ by at most one scheduling cycle, plus the
// limit check's period where the job started right after (within one
// cycle) a job Slurm killed at its limit: slurmctld checks limits 30 s
// after its previous check, on its own clock, which the simulator cannot
// know.
func (r *Run) Compare(w *workload.Workload, in Input) (*Comparison, error) {
	var passes []time.Duration // the simulator's backfill passes
	onPass := func(now time.Duration, s *sim.State) {
		if t, ok := s.LastBackfill(); ok && t == now {
			passes = append(passes, now)
		}
	}
	res, err := sim.Run(r.Workload(w, in), sim.Config{Policy: sim.SlurmLike, Slurm: r.Params, OnPass: onPass})
	if err != nil {
		return nil, err
	}
	limitCheck := r.Params.LimitCheck
	if limitCheck == 0 {
		limitCheck = 30 * time.Second // the simulator's default, as slurmctld's
	}
	base := r.base()
	hosts := make([]map[string]bool, len(r.Records))
	for i, rec := range r.Records {
		names, err := slurm.ExpandHostlist(rec.Hosts)
		if err != nil {
			return nil, fmt.Errorf("job %d: %w", rec.ID, err)
		}
		hosts[i] = make(map[string]bool, len(names))
		for _, n := range names {
			hosts[i][n] = true
		}
	}
	cmp := &Comparison{Input: in, Cycle: r.Cycle, Result: res}
	for i := range r.Records {
		rec, sj := &r.Records[i], &res.Jobs[i]
		if !rec.started() {
			return nil, fmt.Errorf("job %d never started in Slurm", rec.ID)
		}
		start := rec.startedAt()
		row := Row{ID: rec.ID, Nodes: sj.Nodes, Submit: sj.Submit, Slurm: start.Sub(base), Sim: sj.Start,
			SlurmHosts: rec.Hosts, SimHosts: sj.Hosts(), SlurmState: rec.State, SimKilled: sj.Killed, Tolerance: r.Cycle}
		for k := range r.Records {
			o := &r.Records[k]
			if end := o.endedAt(); o.State == "TIMEOUT" && !end.After(start) && start.Sub(end) <= r.Cycle {
				row.Tolerance += limitCheck
				break
			}
		}
		row.Diff = row.Sim - row.Slurm
		row.Agree = row.Diff.Abs() <= row.Tolerance
		if row.Agree {
			cmp.Agree++
		}
		// The event that let the job start: its submission, or the end of
		// the last job to leave one of its nodes before it started.
		slurmFrom, simFrom := rec.submitted(), sj.Submit
		for k := range r.Records {
			o := &r.Records[k]
			if end := o.endedAt(); k != i && o.ended() && !end.After(start) && end.After(slurmFrom) && overlap(hosts[i], hosts[k]) {
				slurmFrom, simFrom, row.After = end, res.Jobs[k].End, o.ID
			}
		}
		row.Step = (sj.Start - simFrom) - start.Sub(slurmFrom)
		row.StepAgree = row.Step.Abs() <= row.Tolerance
		if row.StepAgree {
			cmp.StepAgree++
		}
		cmp.Rows = append(cmp.Rows, row)
	}
	if n := float64(len(cmp.Rows)); n > 0 {
		cmp.Share, cmp.StepShare = float64(cmp.Agree)/n, float64(cmp.StepAgree)/n
	}
	cmp.PassTimes = passes
	cmp.Passes, cmp.PassesMet, cmp.SimPasses = r.matchPasses(passes)
	return cmp, nil
}

// matchPasses compares the simulator's backfill passes (on its clock) with
// Slurm's while the replay ran: how many of Slurm's there were, how many
// of them the simulator made within a second, and how many it made.
func (r *Run) matchPasses(sim []time.Duration) (slurm, met, made int) {
	base := r.base()
	end := r.Stopped.Sub(base)
	for _, p := range sim {
		if p <= end {
			made++
		}
	}
	for _, t := range r.Backfill {
		p := t.Sub(base)
		if p < 0 || p > end {
			continue
		}
		slurm++
		i, _ := slices.BinarySearch(sim, p-time.Second)
		if i < len(sim) && sim[i] <= p+time.Second {
			met++
		}
	}
	return slurm, met, made
}

func overlap(a, b map[string]bool) bool {
	for n := range a {
		if b[n] {
			return true
		}
	}
	return false
}

// PassTable lists Slurm's backfill passes and the simulator's, on the
// simulation's clock, side by side where they are within a second.
func (r *Run) PassTable(c *Comparison) string {
	base := r.base()
	end := r.Stopped.Sub(base)
	var b strings.Builder
	fmt.Fprintf(&b, "%9s %9s\n", "slurm", "sim")
	i, k := 0, 0
	for i < len(r.Backfill) || k < len(c.PassTimes) {
		sl, sm := time.Duration(math.MaxInt64), time.Duration(math.MaxInt64)
		if i < len(r.Backfill) {
			sl = r.Backfill[i].Sub(base)
		}
		if k < len(c.PassTimes) {
			sm = c.PassTimes[k]
		}
		if min(sl, sm) > end {
			break
		}
		switch {
		case (sl - sm).Abs() <= time.Second:
			fmt.Fprintf(&b, "%9.2f %9.2f\n", sl.Seconds(), sm.Seconds())
			i++
			k++
		case sl < sm:
			if sl >= 0 {
				fmt.Fprintf(&b, "%9.2f %9s\n", sl.Seconds(), "-")
			}
			i++
		default:
			fmt.Fprintf(&b, "%9s %9.2f\n", "-", sm.Seconds())
			k++
		}
	}
	return b.String()
}

// Table prints the comparison, one job a line.
func (c *Comparison) Table() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-4s %5s %8s %8s %8s %7s %5s %5s %6s  %-14s %-16s %s\n", "job", "nodes", "submit", "slurm", "sim", "diff", "ok", "after", "step", "state", "slurm nodes", "sim nodes")
	for _, r := range c.Rows {
		ok := "yes"
		if !r.Agree {
			ok = "NO"
		}
		state := r.SlurmState
		if r.SimKilled {
			state += "/killed"
		}
		after := "-"
		if r.After != 0 {
			after = strconv.Itoa(r.After)
		}
		fmt.Fprintf(&b, "%-4d %5d %8.2f %8.2f %8.2f %7.2f %5s %5s %6.2f  %-14s %-16s %s\n", r.ID, r.Nodes, r.Submit.Seconds(),
			r.Slurm.Seconds(), r.Sim.Seconds(), r.Diff.Seconds(), ok, after, r.Step.Seconds(), state, r.SlurmHosts, r.SimHosts)
	}
	var largest time.Duration
	second := 0
	for _, r := range c.Rows {
		largest = max(largest, r.Diff.Abs())
		if r.Diff.Abs() <= time.Second {
			second++
		}
	}
	fmt.Fprintf(&b, "%s: %d of %d starts agree within %v (%.1f%%), %d within 1s, largest difference %.2fs; %d of %d steps (%.1f%%)",
		c.Input, c.Agree, len(c.Rows), c.Cycle, 100*c.Share, second, largest.Seconds(), c.StepAgree, len(c.Rows), 100*c.StepShare)
	if c.Passes > 0 {
		fmt.Fprintf(&b, "; backfill passes: %d in Slurm, %d of them in the simulator within 1 s, which made %d", c.Passes, c.PassesMet, c.SimPasses)
	}
	return b.String()
}
