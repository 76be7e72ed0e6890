package simreplay

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/glean-hpc/glean/sidecar/sim"
	"github.com/glean-hpc/glean/sidecar/workload"
	"github.com/glean-hpc/glean/tests/slurmtest"
)

// list2 is the thesis's busy workload, relative to this package.
const list2 = "../../../shared/workloads/thesis-submit-list-2.txt"

func loadList2(t *testing.T) *workload.Workload {
	t.Helper()
	f, err := os.Open(list2)
	if os.IsNotExist(err) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w, err := workload.ReadThesis(f, filepath.Base(list2), workload.Options{Strict: true})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// settings reads the cluster's scheduler settings for the simulator and
// its scheduling cycle: bf_interval, the period of the backfill passes
// that start every job not at the head of the queue (glean sim's "one
// scheduling cycle" too).
func settings(t *testing.T, c *slurmtest.Cluster) (sim.SlurmParams, time.Duration) {
	t.Helper()
	p, err := Settings([]byte(c.Run(t, "scontrol", "show", "config")))
	if err != nil {
		t.Fatal(err)
	}
	return p, p.BFInterval
}

// The cluster settings replays run with (slurmtest.Options.SchedulerParameters).
const (
	// siteSettings are Slurm's defaults (bf_interval=30, sched_interval=60,
	// bf_resolution=60), what a site runs and what glean sim assumes: one
	// scheduling cycle is 30 s, so start latencies below a second do not
	// decide agreement.
	siteSettings = "default"
	// fastSettings are the other integration tests' (bf_interval=1,
	// sched_interval=1, bf_resolution=1): one cycle is a second.
	fastSettings = "bf_interval=1,sched_interval=1,bf_resolution=1"
)

// startCluster starts a 24-node cluster with the given SchedulerParameters.
func startCluster(t *testing.T, sched string) *slurmtest.Cluster {
	t.Helper()
	return slurmtest.Start(t, slurmtest.Options{Nodes: 24, SchedulerParameters: sched})
}

// replay runs w on c, compares it with the simulator for each input and
// returns the comparisons (as executed first). With GLEAN_REPLAY_SAVE=dir
// it also saves the run there as JSON, for compareRun.
func replay(t *testing.T, c *slurmtest.Cluster, w *workload.Workload, factor float64) []*Comparison {
	t.Helper()
	p, cycle := settings(t, c)
	// The nominal simulation says how long to wait for the last start.
	nominal, err := sim.Run(w, sim.Config{Policy: sim.SlurmLike, Slurm: p})
	if err != nil {
		t.Fatal(err)
	}
	var last time.Duration
	for _, j := range nominal.Jobs {
		last = max(last, j.Start)
	}
	// The log's debug level shows the main scheduler's full runs, the
	// Backfill flag the backfill passes: Run.FullRuns and Run.Backfill.
	c.Run(t, "scontrol", "setdebug", "debug")
	c.Run(t, "scontrol", "setdebugflags", "+Backfill")
	// Slurm's backfill thread passes bf_interval after slurmctld started
	// (the nodes' registration is work) and again while work comes; the
	// simulator's starts idle and passes at once. So the replay starts
	// when the thread has been quiet for bf_interval: its first pass then
	// comes at the first tick after the first submission, as the
	// simulator's, and their passes keep the same phase.
	quiet := func() bool {
		log := readLog(t, c)
		last := log.Started.Add(p.BFInterval) // the first pass, logged or not
		if n := len(log.Backfill); n > 0 && log.Backfill[n-1].After(last) {
			last = log.Backfill[n-1]
		}
		return !log.Started.IsZero() && time.Since(last) > p.BFInterval+time.Second
	}
	if err := slurmtest.Poll(5*p.BFInterval+10*time.Second, 200*time.Millisecond, quiet); err != nil {
		t.Fatalf("the backfill thread was not quiet for %v after its first pass: %v", p.BFInterval, err)
	}
	origin := time.Now().Truncate(time.Second).Add(time.Second)
	t.Logf("replaying %d jobs of %s on %d nodes; last start expected %v after the origin; %+v",
		len(w.Jobs), w.Name, c.Nodes, last.Round(time.Second), p)
	run, err := Replay(context.Background(), c, w, origin, origin.Add(last+last/10+time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	run.Factor, run.Params, run.Cycle = factor, p, cycle
	if os.Getenv("GLEAN_REPLAY_LOG") != "" {
		t.Logf("slurmctld log:\n%s", c.Logs())
	}
	c.CancelAll(t)
	if dir := os.Getenv("GLEAN_REPLAY_SAVE"); dir != "" {
		data, err := json.MarshalIndent(run, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		name := filepath.Join(dir, t.Name()+".json")
		if err := os.WriteFile(name, data, 0o644); err != nil {
			t.Fatal(err)
		}
		// The whole controller log, for a closer look later.
		ctld, err := os.ReadFile(filepath.Join(c.Dir, "log", "slurmctld.log"))
		if err == nil {
			err = os.WriteFile(filepath.Join(dir, t.Name()+".slurmctld.log"), ctld, 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("saved the run in %s and slurmctld's log beside it", name)
	}
	return compareRun(t, w, run)
}

// readLog reads the cluster's slurmctld log.
func readLog(t *testing.T, c *slurmtest.Cluster) *Log {
	t.Helper()
	f, err := os.Open(filepath.Join(c.Dir, "log", "slurmctld.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	log, err := ReadLog(f)
	if err != nil {
		t.Fatal(err)
	}
	return log
}

// compareRun compares a run with the simulator, logs the tables and
// returns the comparisons, as executed first.
func compareRun(t *testing.T, w *workload.Workload, run *Run) []*Comparison {
	t.Helper()
	var out []*Comparison
	for _, in := range []Input{AsExecuted, Nominal} {
		cmp, err := run.Compare(w, in)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s, %s (times in seconds from the origin less %v):\n%s", w.Name, in, run.Origin.Sub(run.base()), cmp.Table())
		if os.Getenv("GLEAN_REPLAY_PASSES") != "" && len(run.Backfill) > 0 {
			t.Logf("backfill passes, %s:\n%s", in, run.PassTable(cmp))
		}
		out = append(out, cmp)
	}
	return out
}

// TestReplayThesisPrefix replays the first jobs of thesis list 2, enough
// for the backfill scheduler to start a job ahead of an earlier one, at
// 80x: the make-test budget allows no less (docs/simulator.md).
func TestReplayThesisPrefix(t *testing.T) {
	t.Parallel()
	w := loadList2(t)
	c := startCluster(t, siteSettings)
	const factor, jobs = 80, 10
	w.Jobs = w.Jobs[:jobs]
	cmps := replay(t, c, Compress(w, factor), factor)
	checkAgreement(t, cmps[0])
	if bf := backfilled(cmps[0].Rows); len(bf) == 0 {
		t.Errorf("no job started ahead of an earlier one: the prefix does not exercise backfilling")
	} else {
		t.Logf("backfilled in Slurm: jobs %v", bf)
	}
}

// backfilled lists the jobs that Slurm started while a job submitted
// before them was still waiting.
func backfilled(rows []Row) []int {
	var out []int
	for i, r := range rows {
		for _, e := range rows[:i] {
			if e.Submit <= r.Submit && e.Slurm > r.Slurm {
				out = append(out, r.ID)
				break
			}
		}
	}
	return out
}

// TestReplayFull replays thesis list 2, or its first GLEAN_REPLAY_JOBS
// jobs, at GLEAN_REPLAY_FACTOR (default 10), when GLEAN_REPLAY_FULL=1.
// With GLEAN_REPLAY_LOAD=file it compares a saved run again instead, with
// no Slurm.
func TestReplayFull(t *testing.T) {
	if os.Getenv("GLEAN_REPLAY_FULL") != "1" {
		t.Skip("set GLEAN_REPLAY_FULL=1 (and optionally GLEAN_REPLAY_FACTOR, GLEAN_REPLAY_JOBS, GLEAN_REPLAY_SAVE, GLEAN_REPLAY_LOAD)")
	}
	t.Parallel()
	w := loadList2(t)
	factor, jobs := 10.0, len(w.Jobs)
	if v := os.Getenv("GLEAN_REPLAY_FACTOR"); v != "" {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f < 1 {
			t.Fatalf("GLEAN_REPLAY_FACTOR=%q: want a number >= 1", v)
		}
		factor = f
	}
	if v := os.Getenv("GLEAN_REPLAY_JOBS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > len(w.Jobs) {
			t.Fatalf("GLEAN_REPLAY_JOBS=%q: want 1..%d", v, len(w.Jobs))
		}
		jobs = n
	}
	var cmps []*Comparison
	if file := os.Getenv("GLEAN_REPLAY_LOAD"); file != "" {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var run Run
		if err := json.Unmarshal(data, &run); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		factor, jobs = run.Factor, len(run.Records)
		w.Jobs = w.Jobs[:jobs]
		cmps = compareRun(t, Compress(w, factor), &run)
	} else {
		w.Jobs = w.Jobs[:jobs]
		sched := siteSettings
		switch v := os.Getenv("GLEAN_REPLAY_SCHED"); v {
		case "", "site":
		case "fast":
			sched = fastSettings
		default:
			t.Fatalf("GLEAN_REPLAY_SCHED=%q: want site (Slurm's defaults) or fast (bf_interval=1,sched_interval=1,bf_resolution=1)", v)
		}
		cmps = replay(t, startCluster(t, sched), Compress(w, factor), factor)
	}
	for _, cmp := range cmps {
		fmt.Printf("thesis list 2, %d jobs at %gx, %s: %d of %d starts (%.1f%%) and %d steps (%.1f%%) agree within one cycle; backfilled in Slurm: %v\n",
			jobs, factor, cmp.Input, cmp.Agree, len(cmp.Rows), 100*cmp.Share, cmp.StepAgree, 100*cmp.StepShare, backfilled(cmp.Rows))
	}
	checkAgreement(t, cmps[0])
}

// checkAgreement holds a comparison (as executed) to issue 3's target: at
// least 95 % of the starts within one scheduling cycle, and as many of the
// steps (each start's own error). Where a cycle is a second (the fast
// settings), sub-second start latencies pass along chains of jobs over a
// long replay and decide the start figure (docs/simulator.md): there only
// the steps are held to it.
func checkAgreement(t *testing.T, cmp *Comparison) {
	t.Helper()
	cycle := cmp.Cycle
	if share := cmp.Share; share < 0.95 && cycle >= siteCycle {
		t.Errorf("%.1f%% of starts agree within one cycle (%v), want >= 95%%", 100*share, cycle)
	}
	if share := cmp.StepShare; share < 0.95 {
		t.Errorf("%.1f%% of steps agree within one cycle (%v), want >= 95%%", 100*share, cycle)
	}
}

// siteCycle is the shortest cycle whose start figure is asserted: Slurm's
// default bf_interval.
const siteCycle = 30 * time.Second

// TestLimitKill checks the limit model against slurmctld: a job over its
// limit dies at the first 30 s check after it, and the job waiting for its
// nodes starts then, in Slurm and in the simulator alike (to the 30 s the
// simulator cannot know: slurmctld's checks run on its own clock).
func TestLimitKill(t *testing.T) {
	t.Parallel()
	c := startCluster(t, fastSettings)
	w := &workload.Workload{Name: "limit kill", Nodes: 24, Jobs: []workload.Job{
		{ID: 1, Nodes: 24, Run: 200 * time.Second, Limit: time.Minute},
		{ID: 2, Submit: 2 * time.Second, Nodes: 24, Run: 5 * time.Second, Limit: time.Minute},
	}}
	cmps := replay(t, c, w, 1)
	kill := cmps[0].Rows[0]
	if kill.SlurmState != "TIMEOUT" || !kill.SimKilled {
		t.Fatalf("job 1 ended %s in Slurm, killed=%v in the simulator; want killed in both", kill.SlurmState, kill.SimKilled)
	}
	p, cycle := settings(t, c)
	// Job 2 starts when job 1 is gone. Slurm's start time (and so the end
	// time its limit check compares with) is truncated to the second.
	slurmRun := cmps[0].Rows[1].Slurm - kill.Slurm
	if slurmRun < time.Minute-time.Second || slurmRun > time.Minute+p.LimitCheck+cycle+time.Second {
		t.Errorf("Slurm killed job 1 %v after its start, want within the 30 s after its 1 min limit", slurmRun)
	}
	if cmps[0].Share < 1 {
		t.Errorf("starts disagree:\n%s", cmps[0].Table())
	}
}

// TestNodeChoice checks that the simulator picks the nodes select/linear
// picks: the tightest run of free nodes, not the lowest-numbered ones.
func TestNodeChoice(t *testing.T) {
	t.Parallel()
	c := startCluster(t, fastSettings)
	// Jobs 1 and 3 end first and leave free runs of 2, 5 and 14 nodes.
	// Job 5 (3 nodes) fits best in the run of 5; job 6 (6 nodes) then in
	// the run of 14.
	w := &workload.Workload{Name: "node choice", Nodes: 24}
	for i, j := range []struct {
		submit, nodes, run int
	}{{0, 2, 6}, {0, 2, 100}, {0, 5, 6}, {0, 1, 100}, {12, 3, 100}, {14, 6, 100}} {
		w.Jobs = append(w.Jobs, workload.Job{ID: i + 1, Submit: time.Duration(j.submit) * time.Second, Nodes: j.nodes,
			Run: time.Duration(j.run) * time.Second, Limit: 2 * time.Minute})
	}
	cmps := replay(t, c, w, 1)
	for _, r := range cmps[0].Rows {
		if r.SlurmHosts != r.SimHosts {
			t.Errorf("job %d ran on %s in Slurm, %s in the simulator", r.ID, r.SlurmHosts, r.SimHosts)
		}
	}
	if got := cmps[0].Rows[4].SlurmHosts; got != "c[5-7]" {
		t.Errorf("job 5 ran on %s, want c[5-7] (select/linear's best fit)", got)
	}
}
