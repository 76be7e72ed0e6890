package sim

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/glean-hpc/glean/sidecar/workload"
)

// thesisList reads ../shared/workloads/thesis-submit-list-<n>.txt.
func thesisList(tb testing.TB, n int) *workload.Workload {
	tb.Helper()
	path := filepath.Join("..", "..", "..", "shared", "workloads", "thesis-submit-list-"+string(rune('0'+n))+".txt")
	f, err := os.Open(path)
	if err != nil {
		tb.Skipf("thesis list %d: %v", n, err)
	}
	defer f.Close()
	w, err := workload.ReadThesis(f, filepath.Base(path))
	if err != nil {
		tb.Fatal(err)
	}
	return w
}

func elasticCfg(m ElasticMode) ElasticConfig {
	return ElasticConfig{Mode: m, Sim: Config{Policy: SlurmLike, Estimates: KillAtLimit}}
}

// checkElastic asserts the invariants every elastic run keeps: no node
// holds two jobs at once, tasks run inside their holders, every task
// completes exactly once, and completed task time equals the work.
func checkElastic(t *testing.T, w *workload.Workload, r *ElasticResult) {
	t.Helper()
	type iv struct {
		s, e time.Duration
		what string
	}
	per := make([][]iv, r.Nodes)
	for i := range r.Sched.Jobs {
		j := &r.Sched.Jobs[i]
		if j.End <= j.Start {
			continue
		}
		for _, n := range allocNodes(j.alloc) {
			if n < 0 || n >= r.Nodes {
				t.Fatalf("%v: job %d on node %d of %d", r.Mode, j.ID, n, r.Nodes)
			}
			per[n] = append(per[n], iv{j.Start, j.NodeEnd(n), fmt.Sprint("job ", j.ID)})
		}
	}
	for _, p := range r.Pilots {
		if p.Started && p.End > p.Start {
			if p.Node < 0 || p.Node >= r.Nodes {
				t.Fatalf("%v: pilot %d on node %d", r.Mode, p.ID, p.Node)
			}
			per[p.Node] = append(per[p.Node], iv{p.Start, p.End, fmt.Sprint("pilot ", p.ID)})
		}
	}
	for n, ivs := range per {
		slices.SortFunc(ivs, func(a, b iv) int { return cmp.Compare(a.s, b.s) })
		for k := 1; k < len(ivs); k++ {
			if ivs[k].s < ivs[k-1].e {
				t.Errorf("%v: node %s: %s [%v,%v) overlaps %s [%v,%v)", r.Mode, NodeName(n), ivs[k].what, ivs[k].s, ivs[k].e, ivs[k-1].what, ivs[k-1].s, ivs[k-1].e)
			}
		}
	}
	work := map[int]time.Duration{}
	for _, c := range r.Cal {
		work[c.ID] = c.Work
		if !c.Done {
			t.Errorf("%v: calibration job %d not done", r.Mode, c.ID)
		}
	}
	done := map[int]time.Duration{}
	seen := map[[2]int]bool{}
	for _, x := range r.Tasks {
		if !x.Completed {
			continue
		}
		done[x.Job] += x.End - x.Start // SlurmOnly: one record per node of the rigid job
		k := [2]int{x.Job, x.Task}
		if r.Mode != SlurmOnly && seen[k] {
			t.Errorf("%v: job %d task %d completed twice", r.Mode, x.Job, x.Task)
		}
		seen[k] = true
	}
	for id, wk := range work {
		if done[id] != wk {
			t.Errorf("%v: job %d: completed task time %v, work %v", r.Mode, id, done[id], wk)
		}
	}
}

func tiny(jobs ...workload.Job) *workload.Workload {
	for i := range jobs {
		jobs[i].ID = i + 1
		if jobs[i].Limit == 0 {
			jobs[i].Limit = 2 * jobs[i].Run
		}
	}
	return &workload.Workload{Name: "tiny", Nodes: 4, Jobs: jobs}
}

func maxNodesInUse(r *ElasticResult) int {
	tl := r.Timeline("")
	type ev struct {
		t time.Duration
		d int
	}
	var evs []ev
	for _, s := range tl.Segments {
		evs = append(evs, ev{s.Start, s.Nodes}, ev{s.End, -s.Nodes})
	}
	slices.SortFunc(evs, func(a, b ev) int { return cmp.Or(cmp.Compare(a.t, b.t), cmp.Compare(a.d, b.d)) })
	use, peak := 0, 0
	for _, e := range evs {
		use += e.d
		peak = max(peak, use)
	}
	return peak
}

func TestElasticTiny(t *testing.T) {
	cal := workload.Job{Nodes: 2, Run: time.Hour, Limit: 2 * time.Hour, Kind: workload.Calibration}
	for _, tc := range []struct {
		name string
		mode ElasticMode
		w    *workload.Workload
		// want: pilots fill the idle nodes, and the job finishes by then
		wantPeak   int
		wantFinish time.Duration
	}{
		// 2 node-hours in 150 tasks of 48 s. Fair: the base's 2 nodes from
		// 0, 2 pilots from the next cycle (30 s): at best 4T - 60 s >=
		// 150 x 48 s, T >= 30m15s; whole tasks give 30m24s.
		{"fair alone", FairMode, tiny(cal), 4, 30*time.Minute + 24*time.Second},
		// 4 pilots from 30 s, 38 tasks on the busiest: 30 s + 38 x 48 s
		// = 30m54s, plus the pilots' own one-cycle start after the round
		// that sees the job.
		{"scavenger alone", ScavengerMode, tiny(cal), 4, 31*time.Minute + 24*time.Second},
		{"thesis alone", ThesisMode, tiny(cal), 4, 31*time.Minute + 24*time.Second},
		{"slurm alone", SlurmOnly, tiny(cal), 2, time.Hour},
		// One node taken for 3 h: base 2 nodes + 1 pilot: 3T - 30 s >=
		// 7200 s, T >= 40m10s; whole tasks: 40m30s.
		{"fair with a regular job", FairMode, tiny(workload.Job{Nodes: 1, Run: 3 * time.Hour, Kind: workload.Regular}, cal), 4, 40*time.Minute + 30*time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := RunElastic(tc.w, elasticCfg(tc.mode))
			if err != nil {
				t.Fatal(err)
			}
			checkElastic(t, tc.w, r)
			if got := maxNodesInUse(r); got != tc.wantPeak {
				t.Errorf("peak nodes in use %d, want %d", got, tc.wantPeak)
			}
			m := ComputeMetrics(r)
			if got := m.Calibration[0].Finish; got != tc.wantFinish {
				t.Errorf("finish %v, want %v", got, tc.wantFinish)
			}
			t.Logf("%s: finish %v pilots %d he %.3f waste %.0f node-s", tc.name, m.Calibration[0].Finish, m.Pilots, m.HarvestEfficiency, m.WasteNodeSeconds)
		})
	}
}

// TestElasticGiveWay: a regular job arriving while pilots hold the nodes
// starts no later than grace + one cycle (+ KillWait) after it would
// without glean.
func TestElasticGiveWay(t *testing.T) {
	reg := workload.Job{Nodes: 2, Run: 10 * time.Minute, Submit: 10*time.Minute + 7*time.Second, Kind: workload.Regular}
	cal := workload.Job{Nodes: 2, Run: 2 * time.Hour, Limit: 3 * time.Hour, Kind: workload.Calibration}
	for _, tc := range []struct {
		mode      ElasticMode
		reference ElasticMode // without glean
		// floor: the thesis's MiniNode floor keeps pilots from regular
		// jobs by design (ARCHITECTURE.md, Fairness modes): the regular
		// job waits for the pilots' own end, beyond the give-way latency.
		floor bool
	}{{FairMode, SlurmOnly, false}, {ScavengerMode, SlurmOnly, false}, {ThesisMode, SlurmOnly, true}} {
		t.Run(tc.mode.String(), func(t *testing.T) {
			w := tiny(cal, reg)
			ref := w
			if tc.mode != FairMode {
				ref = tiny(reg) // scavenger and thesis: without glean there is no job at all
			}
			base, err := RunElastic(ref, elasticCfg(tc.reference))
			if err != nil {
				t.Fatal(err)
			}
			r, err := RunElastic(w, elasticCfg(tc.mode))
			if err != nil {
				t.Fatal(err)
			}
			checkElastic(t, w, r)
			want := base.Sched.Jobs[len(base.Sched.Jobs)-1].Start
			got := r.Sched.Jobs[len(r.Sched.Jobs)-1].Start
			latency := r.Policy.Grace + r.KillWait + r.Cycle
			if tc.floor {
				if got <= want+latency {
					t.Errorf("thesis floor: regular job starts at %v, within the give-way latency of %v; the floor should hold it", got, want)
				}
			} else if got > want+latency {
				t.Errorf("regular job starts at %v, %v later than without glean (%v); allowed %v", got, got-want, want, latency)
			}
			if m := ComputeMetrics(r); m.Pilots == 0 {
				t.Errorf("no pilot started")
			}
			t.Logf("regular start %v (without glean %v)", got, want)
		})
	}
}

// TestElasticThesisLists runs both thesis lists in all modes: every
// calibration job completes, the invariants hold, and in fair mode no job,
// regular or calibration, is later than under SLURM-only by more than the
// give-way latency.
func TestElasticThesisLists(t *testing.T) {
	for _, n := range []int{1, 2} {
		w := thesisList(t, n)
		var results []*ElasticResult
		for _, m := range ElasticModes {
			r, err := RunElastic(w, elasticCfg(m))
			if err != nil {
				t.Fatal(err)
			}
			checkElastic(t, w, r)
			results = append(results, r)
		}
		rep := BuildReport(w.Name, results)
		for _, m := range rep.Modes {
			if !m.AllDone {
				t.Errorf("list %d %s: not every calibration job completed", n, m.Mode)
			}
			if m.Mode == "fair" {
				if b := m.VsSlurm.RegularStart.Beyond; b > 0 {
					t.Errorf("list %d fair: %d regular jobs start later than SLURM-only beyond the give-way latency: %v", n, b, m.VsSlurm.RegularStart.BeyondIDs)
				}
				if b := m.VsSlurm.CalibrationFinish.Beyond; b > 0 {
					t.Errorf("list %d fair: %d calibration jobs finish later than SLURM-only beyond the give-way latency: %v", n, b, m.VsSlurm.CalibrationFinish.BeyondIDs)
				}
			}
		}
	}
}

func BenchmarkElasticThesis(b *testing.B) {
	for _, n := range []int{1, 2} {
		w := thesisList(b, n)
		for _, m := range ElasticModes {
			b.Run(fmt.Sprintf("list%d/%s", n, m), func(b *testing.B) {
				events := 0
				for b.Loop() {
					r, err := RunElastic(w, elasticCfg(m))
					if err != nil {
						b.Fatal(err)
					}
					events += r.Sched.Events
				}
				b.ReportMetric(float64(events)/b.Elapsed().Seconds(), "events/s")
			})
		}
	}
}

// elasticRun is one elastic simulation to run in a test.
type elasticRun struct {
	name string
	w    *workload.Workload
	cfg  ElasticConfig
}

// thesisRuns are both thesis lists in every mode, with and without a
// 10-minute backlog.
func thesisRuns(tb testing.TB) []elasticRun {
	var runs []elasticRun
	for _, n := range []int{1, 2} {
		w := thesisList(tb, n)
		for _, m := range ElasticModes {
			for _, bl := range []time.Duration{0, 10 * time.Minute} {
				cfg := elasticCfg(m)
				cfg.Backlog = bl
				runs = append(runs, elasticRun{fmt.Sprintf("list%d/%v/backlog-%v", n, m, bl), w, cfg})
			}
		}
	}
	return runs
}

// TestSkippedRoundsChangeNothing: skipping rounds over unchanged states
// (the default) gives the same outcome as running the policy at every
// cycle, on both thesis lists in every mode, with and without a backlog,
// and on a KTH-SP2 prefix with a backlog; and the policy, run in the
// skipped rounds anyway, would have done nothing in any of them.
func TestSkippedRoundsChangeNothing(t *testing.T) {
	runs := thesisRuns(t)
	if !testing.Short() {
		kth := loadSWF(t, "KTH-SP2-1996-2.1-cln.swf.gz")
		kth.Jobs = kth.Jobs[:1500]
		cfg := elasticCfg(SlurmOnly)
		cfg.Backlog = 10 * time.Minute
		runs = append(runs, elasticRun{"kth-1500/backlog", kth, cfg})
	}
	for _, r := range runs {
		t.Run(r.name, func(t *testing.T) {
			vcfg := r.cfg
			vcfg.verifySkips = true
			fast, err := RunElastic(r.w, vcfg)
			if err != nil {
				t.Fatal(err)
			}
			if fast.skipErrs > 0 {
				t.Errorf("the policy would have acted in %d of the %d skipped rounds", fast.skipErrs, fast.Skipped)
			}
			cfg := r.cfg
			cfg.EveryRound = true
			slow, err := RunElastic(r.w, cfg)
			if err != nil {
				t.Fatal(err)
			}
			if slow.Skipped != 0 {
				t.Fatalf("EveryRound skipped %d rounds", slow.Skipped)
			}
			if !slices.Equal(fast.Tasks, slow.Tasks) || !slices.Equal(fast.Pilots, slow.Pilots) || !slices.Equal(fast.Cal, slow.Cal) {
				t.Errorf("skipping %d of %d rounds changed the outcome: %d/%d task records, %d/%d pilots", fast.Skipped, fast.Rounds, len(fast.Tasks), len(slow.Tasks), len(fast.Pilots), len(slow.Pilots))
			}
			for i := range fast.Sched.Jobs {
				a, b := fast.Sched.Jobs[i], slow.Sched.Jobs[i]
				if a.Start != b.Start || a.End != b.End {
					t.Errorf("job %d: %v-%v with skipping, %v-%v without", a.ID, a.Start, a.End, b.Start, b.End)
					break
				}
			}
			t.Logf("skipped %d of %d rounds", fast.Skipped, fast.Rounds)
		})
	}
}

// BenchmarkBacklogKTH is KTH-SP2 (28,467 jobs, 100 nodes, Slurm-like) with
// glean harvesting an unlimited backlog of 10-minute tasks from the first
// submission to 30 minutes after the last, parsing excluded. It reports
// events per second (the engine's arrivals, ends and wake-ups), policy
// rounds run and skipped, and peak memory: the process's peak resident
// set (VmHWM, reset before the first run through /proc/self/clear_refs;
// run the benchmark alone for it to mean this benchmark) and the Go heap's
// bytes allocated per run (B/op).
func BenchmarkBacklogKTH(b *testing.B) {
	w := loadSWF(b, "KTH-SP2-1996-2.1-cln.swf.gz")
	cfg := elasticCfg(SlurmOnly)
	cfg.Backlog = 10 * time.Minute
	resetPeakRSS()
	b.ReportAllocs()
	var events, rounds, skipped int
	var r *ElasticResult
	for b.Loop() {
		var err error
		if r, err = RunElastic(w, cfg); err != nil {
			b.Fatal(err)
		}
		events += r.Sched.Events
		rounds += r.Rounds - r.Skipped
		skipped += r.Skipped
	}
	b.ReportMetric(float64(events)/b.Elapsed().Seconds(), "events/s")
	b.ReportMetric(float64(rounds)/float64(b.N), "rounds/op")
	b.ReportMetric(float64(skipped)/float64(b.N), "skipped/op")
	if rss := peakRSS(); rss > 0 {
		b.ReportMetric(float64(rss)/1e6, "peak-RSS-MB")
	}
	m := ComputeMetrics(r)
	b.Logf("effective %.4f nominal %.4f, backlog %d tasks, %.0f node-h, waste %.1f node-h, %d pilots",
		m.Effective, m.Nominal, r.Backlog.Tasks, r.Backlog.WorkNodeSeconds/3600, r.Backlog.WasteNodeSeconds/3600, r.Backlog.Pilots)
}

// resetPeakRSS resets the process's VmHWM (Linux; ignored elsewhere).
func resetPeakRSS() { _ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) }

// peakRSS is the process's VmHWM in bytes, 0 where unknown.
func peakRSS() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			var kb int64
			if _, err := fmt.Sscanf(strings.TrimSpace(v), "%d kB", &kb); err == nil {
				return kb << 10
			}
		}
	}
	return 0
}

// TestElasticBaseShrinks: a fair job's base gives a node back as soon as
// no task is left for it (Slurm shrinks a running job), and a pending job
// starts there instead of waiting for the base's last task.
func TestElasticBaseShrinks(t *testing.T) {
	// 4 nodes: R1 holds 2 for 5 h; the base holds the other 2. 3 tasks of
	// 40 min: the base runs 2 at once, then one; its second node has
	// nothing to do from 40 min on. R2 (1 node) waits for a node.
	r1 := workload.Job{Nodes: 2, Run: 5 * time.Hour, Kind: workload.Regular}
	cal := workload.Job{Nodes: 2, Run: time.Hour, Limit: 2 * time.Hour, Submit: time.Second, Kind: workload.Calibration}
	r2 := workload.Job{Nodes: 1, Run: time.Hour, Limit: 2 * time.Hour, Submit: 10 * time.Minute, Kind: workload.Regular}
	w := tiny(r1, cal, r2)
	cfg := elasticCfg(FairMode)
	cfg.Tasks = 3
	r, err := RunElastic(w, cfg)
	if err != nil {
		t.Fatal(err)
	}
	checkElastic(t, w, r)
	base := r.Sched.Jobs[1]
	if len(base.Released) != 1 || base.Released[0].At != base.Start+40*time.Minute {
		t.Fatalf("base released %+v, want one node when its first two tasks end, at %v", base.Released, base.Start+40*time.Minute)
	}
	// A shrink is a job end to the scheduler (queue_job_scheduler): R2
	// starts at the main scheduler's next tick, at most batch_sched_delay
	// (3 s) later, not at its next full run (sched_interval, 60 s).
	if got, rel := r.Sched.Jobs[2].Start, base.Released[0].At; got < rel || got > rel+3*time.Second {
		t.Errorf("R2 starts at %v; the base gave a node back at %v (and ends at %v)", got, rel, base.End)
	}
	if nt, want := base.NodeSeconds(), (base.Run()*2 - (base.End - base.Released[0].At)).Seconds(); nt != want {
		t.Errorf("base node time %.3f node-s, want %.3f", nt, want)
	}
}

// TestElasticTailGiveWay: a fair job whose last tasks all run on pilots
// when its base has nothing left to take still finishes no later than
// under SLURM-only (beyond the give-way latency) when those pilots give way
// to a pending job: the base stays to take the tasks handed back.
func TestElasticTailGiveWay(t *testing.T) {
	// 4 nodes. R0 holds 2 for 5 min; the base (2 nodes, 8 tasks of 10
	// min) starts at 0, pilots on R0's nodes from about 5 min. At 20 min
	// the base's four tasks are done and the pool is empty: the last two
	// run on the pilots until about 25 min. R (4 nodes, 2 h) arrives at 19
	// min; without glean it waits for the base's end at 40 min.
	r0 := workload.Job{Nodes: 2, Run: 5 * time.Minute, Kind: workload.Regular}
	cal := workload.Job{Nodes: 2, Run: 40 * time.Minute, Limit: 80 * time.Minute, Kind: workload.Calibration}
	r := workload.Job{Nodes: 4, Run: 2 * time.Hour, Submit: 19 * time.Minute, Kind: workload.Regular}
	w := tiny(r0, cal, r)
	cfg := elasticCfg(FairMode)
	cfg.Tasks = 8
	ref := cfg
	ref.Mode = SlurmOnly
	base, err := RunElastic(w, ref)
	if err != nil {
		t.Fatal(err)
	}
	got, err := RunElastic(w, cfg)
	if err != nil {
		t.Fatal(err)
	}
	checkElastic(t, w, got)
	mb, mg := ComputeMetrics(base), ComputeMetrics(got)
	latency := got.Policy.Grace + got.KillWait + got.Cycle
	want, fin := mb.Calibration[0].Finish, mg.Calibration[0].Finish
	if fin > want+latency {
		t.Errorf("calibration job finishes at %v, %v later than under SLURM-only (%v); allowed %v", fin, fin-want, want, latency)
	}
	if mg.Pilots == 0 {
		t.Errorf("no pilot started")
	}
	rs, rsBase := got.Sched.Jobs[2].Start, base.Sched.Jobs[2].Start
	if rs > rsBase+latency {
		t.Errorf("R starts at %v, under SLURM-only at %v", rs, rsBase)
	}
	t.Logf("finish %v (SLURM-only %v), R starts %v (SLURM-only %v), pilots %d", fin, want, rs, rsBase, mg.Pilots)
}

// TestElasticFIFOBySubmit: the simulator orders elastic jobs as the daemon
// does (policy.Order), by submission, whatever the order of the workload's
// lines: listed first but submitted 10 s later, job 1 waits for job 2.
func TestElasticFIFOBySubmit(t *testing.T) {
	cal := workload.Job{Nodes: 2, Run: time.Hour, Limit: 2 * time.Hour, Kind: workload.Calibration}
	late, early := cal, cal
	late.Submit = 10 * time.Second
	for _, mode := range []ElasticMode{ScavengerMode, ThesisMode} {
		w := tiny(late, early)
		r, err := RunElastic(w, elasticCfg(mode))
		if err != nil {
			t.Fatal(err)
		}
		checkElastic(t, w, r)
		fin := map[int]time.Duration{}
		for _, c := range ComputeMetrics(r).Calibration {
			fin[c.ID] = c.Finish
		}
		if !(fin[2] < fin[1]) {
			t.Errorf("%v: job 2 (submitted at 0) finishes at %v, job 1 (submitted at 10 s) at %v: want job 2 first", mode, fin[2], fin[1])
		}
	}
}

// TestMetricsLargeMachine: node time summed as a time.Duration overflows
// at 2.56 million node-hours (LLNL-Atlas as 9,216 nodes printed -683449.6
// regular node-hours). Three jobs of 10,000 nodes for 15 days are 10.8
// million node-hours (each of them 3.6); a million nodes waiting 100 days,
// 2.4 billion.
func TestMetricsLargeMachine(t *testing.T) {
	const day = 24 * time.Hour
	w := &workload.Workload{Name: "large", Nodes: 30000}
	for i := range 3 {
		w.Jobs = append(w.Jobs, workload.Job{ID: i + 1, Run: 15 * day, Nodes: 10000, Limit: 16 * day})
	}
	w.Jobs = append(w.Jobs, workload.Job{ID: 4, Submit: 15 * day, Run: time.Hour, Nodes: 1, Limit: 2 * time.Hour})
	r, err := RunElastic(w, elasticCfg(SlurmOnly))
	if err != nil {
		t.Fatal(err)
	}
	m := ComputeMetrics(r)
	if want := 3*10000*15*day.Seconds() + 3600; m.RegularNodeSeconds != want {
		t.Errorf("regular node time %.0f node-s, want %.0f", m.RegularNodeSeconds, want)
	}
	if u := r.Sched.Utilization; u < 0.99 || u > 1 {
		t.Errorf("engine utilization %.4f", u)
	}
	var b strings.Builder
	if err := BuildReport("large", []*ElasticResult{r}).WriteText(&b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), " 10800001.0 ") {
		t.Errorf("report lacks 10800001.0 regular node-hours:\n%s", b.String())
	}

	waiting := &ElasticResult{Nodes: 1_000_000, Sched: &Result{}, LastSubmit: 100 * day, Waiting: []Interval{{0, 100 * day}}}
	m = ComputeMetrics(waiting)
	if want := 1e6 * (100 * day).Seconds(); m.HarvestableNodeSeconds != want || m.HarvestEfficiency != 0 {
		t.Errorf("harvestable %.0f node-s, efficiency %v; want %.0f, 0", m.HarvestableNodeSeconds, m.HarvestEfficiency, want)
	}
}

// TestCheckTasks: --task-time and --tasks had no upper bound; a task time
// of a millisecond split thesis list 2 into 540 million tasks and the
// simulator took gigabytes within seconds. RunElastic now refuses such a
// run before it allocates a task, saying what would fit; a tiny backlog
// task length (which ran for hours) likewise.
func TestCheckTasks(t *testing.T) {
	w := &workload.Workload{Name: "w", Nodes: 24, Jobs: []workload.Job{
		{ID: 1, Run: time.Hour, Nodes: 4, Limit: 2 * time.Hour},
		{ID: 2, Submit: time.Minute, Run: 4 * time.Hour, Nodes: 5, Limit: 5 * time.Hour, Kind: workload.Calibration},
		{ID: 3, Submit: 2 * time.Minute, Run: 4 * time.Hour, Nodes: 5, Limit: 5 * time.Hour, Kind: workload.Calibration},
	}}
	for _, tc := range []struct {
		name string
		cfg  ElasticConfig
		want *TooManyTasks // nil: accepted
	}{
		{name: "defaults", cfg: elasticCfg(FairMode)},
		{name: "a million tasks", cfg: ElasticConfig{Mode: FairMode, Tasks: MaxTasks / 2}},
		{name: "tasks", cfg: ElasticConfig{Mode: FairMode, Tasks: MaxTasks},
			want: &TooManyTasks{Count: 2 * MaxTasks, Max: MaxTasks, Jobs: 2, MaxPerJob: MaxTasks / 2, MinTaskTime: 1 * time.Second}},
		{name: "task time", cfg: ElasticConfig{Mode: SlurmOnly, TaskTime: time.Millisecond},
			want: &TooManyTasks{Count: 144e6, Max: MaxTasks, Jobs: 2, MaxPerJob: MaxTasks / 2, MinTaskTime: 1 * time.Second}},
		{name: "task time that fits", cfg: ElasticConfig{Mode: SlurmOnly, TaskTime: time.Second}},
		{name: "backlog", cfg: ElasticConfig{Mode: SlurmOnly, Backlog: time.Nanosecond},
			want: &TooManyTasks{Backlog: true, Count: 24 * (32 * time.Minute).Seconds() * 1e9, Max: MaxBacklogTasks, MinTaskTime: time.Second}},
		{name: "backlog that fits", cfg: ElasticConfig{Mode: SlurmOnly, Backlog: time.Second}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg
			cfg.Sim = elasticCfg(SlurmOnly).Sim
			err := CheckTasks(w, cfg)
			var got *TooManyTasks
			if errors.As(err, &got) != (tc.want != nil) || got != nil && *got != *tc.want {
				t.Fatalf("CheckTasks: %v (%+v), want %+v", err, got, tc.want)
			}
			if tc.want == nil {
				return
			}
			// RunElastic refuses it the same way, before it splits a job.
			if _, err := RunElastic(w, cfg); !errors.As(err, &got) {
				t.Errorf("RunElastic: %v", err)
			}
		})
	}
}
