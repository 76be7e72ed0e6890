package sim

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/glean-hpc/glean/sidecar/cluster"
	"github.com/glean-hpc/glean/sidecar/workload"
)

// fast is a Slurm-like setup with one-second cycles, like the loopback
// cluster in tests/.
var fast = SlurmParams{BFInterval: time.Second, BFResolution: time.Second, SchedInterval: time.Second}

func runSlurm(t *testing.T, w *workload.Workload, p SlurmParams) *Result {
	t.Helper()
	r, err := Run(w, Config{Policy: SlurmLike, Slurm: p, OnPass: func(_ time.Duration, s *State) { checkNodes(t, s) }})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// checkNodes holds the machine to node-level consistency: running jobs
// hold disjoint nodes, and the idle set is the rest.
func checkNodes(t *testing.T, s *State) {
	t.Helper()
	held := newBitset(s.size)
	n := 0
	for _, j := range s.running {
		for _, sp := range j.alloc {
			for i := int(sp.first); i < int(sp.first+sp.n); i++ {
				if held.has(i) || s.idle.has(i) {
					t.Fatalf("at %v: node %d of job %d is held twice or idle", s.now, i, j.id)
				}
				held.setRange(i, 1)
				n++
			}
		}
		if got := held.count(); got != n {
			t.Fatalf("at %v: %d nodes counted, %d held", s.now, n, got)
		}
	}
	if n+s.idle.count() != s.size || s.free != s.idle.count() {
		t.Fatalf("at %v: %d held + %d idle on %d nodes, free %d", s.now, n, s.idle.count(), s.size, s.free)
	}
}

func TestBestFitLikeSelectLinear(t *testing.T) {
	free := func(runs ...[2]int) bitset { // [first, n], 0-based
		b := newBitset(24)
		for _, r := range runs {
			b.setRange(r[0], r[1])
		}
		return b
	}
	for _, tc := range []struct {
		name string
		free bitset
		n    int
		want string
	}{
		// The smallest run that holds the job, not the lowest nodes.
		{"tightest", free([2]int{0, 2}, [2]int{4, 4}, [2]int{10, 14}), 3, "c[5-7]"},
		{"first of equals", free([2]int{0, 3}, [2]int{5, 3}), 3, "c[1-3]"},
		// No run holds it: the largest run whole, then the tightest for the rest.
		{"largest then tightest", free([2]int{0, 2}, [2]int{4, 5}, [2]int{12, 3}), 7, "c[1-2,5-9]"},
		{"all", free([2]int{0, 24}), 24, "c[1-24]"},
		{"one", free([2]int{7, 1}, [2]int{9, 2}), 1, "c8"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, got, ok := bestFit(tc.free, tc.n, nil, nil)
			sortSpans(got)
			if !ok || hostList(got) != tc.want {
				t.Errorf("picked %s (ok %v), want %s", hostList(got), ok, tc.want)
			}
		})
	}
	if _, _, ok := bestFit(free([2]int{0, 3}), 4, nil, nil); ok {
		t.Error("picked 4 of 3 nodes")
	}
}

func TestBitsetRuns(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for range 200 {
		n := 1 + rng.IntN(200)
		b := newBitset(n)
		var want []span
		for i := 0; i < n; {
			k := 1 + rng.IntN(70)
			if rng.IntN(2) == 0 {
				k = min(k, n-i)
				b.setRange(i, k)
				want = append(want, span{int32(i), int32(k)})
			}
			i += k + 1
		}
		if got := b.runs(nil); !slices.Equal(got, want) {
			t.Fatalf("runs of %d nodes: %v, want %v", n, got, want)
		}
	}
}

func TestSlurmLike(t *testing.T) {
	const m = 60 // a minute, in seconds: Slurm limits are whole minutes
	for _, tc := range []struct {
		name   string
		w      *workload.Workload
		p      SlurmParams
		starts []int
		killed []bool
	}{{
		// TestPolicies' "protect" in minutes: every pending job holds a
		// reservation, as under conservative backfilling, so J4 (30 min)
		// cannot jump ahead of J3; J5 (5 min) fits before J2.
		name: "conservative",
		w: mkWorkload(4,
			jb{0, 2, 10 * m, 10 * m},
			jb{1 * m, 3, 10 * m, 10 * m},
			jb{2 * m, 4, 10 * m, 10 * m},
			jb{3 * m, 1, 30 * m, 30 * m},
			jb{4 * m, 1, 5 * m, 5 * m},
		),
		p:      fast,
		starts: []int{0, 10 * m, 20 * m, 30 * m, 4 * m},
	}, {
		// A job that could backfill at 45 s waits for the next pass: the
		// pass at 30 planned J2 on two idle nodes, which is work for a pass
		// at 60; the main scheduler alone does not start it.
		name:   "bf_interval",
		w:      mkWorkload(4, jb{0, 2, 10 * m, 10 * m}, jb{10, 4, m, m}, jb{45, 1, m, m}),
		p:      SlurmParams{BFResolution: time.Second},
		starts: []int{0, 10 * m, 60},
	}, {
		// After a quiet spell the backfill thread passes at the first tick
		// after a change, not on a grid of bf_interval: J2 is planned at 40
		// on J1's nodes (nothing idle is marked planned), nothing changes
		// until J3 comes at 101, and a pass at once starts it.
		name:   "bf_interval after a quiet spell",
		w:      mkWorkload(4, jb{0, 3, 1000, 20 * m}, jb{40, 3, m, m}, jb{101, 1, 10, m}),
		p:      SlurmParams{BFResolution: time.Second},
		starts: []int{0, 1000, 101},
	}, {
		// The same with J2 on all four nodes: the idle c4 is marked
		// planned at 40, which is work for the pass at 70, whose marks are
		// work for the pass at 100, and so on: J3 waits for the pass at 130.
		name:   "bf_interval while idle nodes are planned",
		w:      mkWorkload(4, jb{0, 3, 1000, 20 * m}, jb{40, 4, m, m}, jb{101, 1, 10, m}),
		p:      SlurmParams{BFResolution: time.Second},
		starts: []int{0, 1000, 130},
	}, {
		// Limits are enforced every 30 s: J1 (limit 1 min) dies at 60, J2
		// (started 60, limit 1 min, runs 65 s) at 120; J3 ends by itself
		// before its limit, J4 ends at its limit's check by itself.
		name: "limit check",
		w: mkWorkload(4,
			jb{0, 4, 200, m}, jb{10, 4, 65, m}, jb{20, 4, 50, m}, jb{30, 4, 70, m}, jb{40, 4, 100, m}),
		p:      fast,
		starts: []int{0, 60, 120, 170, 240},
		killed: []bool{true, true, false, false, true},
	}, {
		// Limits are whole minutes: 61 s is 2 min, so J1 is not killed
		// and J2 starts when J1 ends.
		name:   "whole minutes",
		w:      mkWorkload(2, jb{0, 2, 100, 61}, jb{5, 2, 10, 60}),
		p:      fast,
		starts: []int{0, 100},
		killed: []bool{false, false},
	}, {
		// J1 has no limit: J2's start is past bf_window and it reserves
		// nothing, so J3 backfills onto the nodes J2 will need.
		name:   "unlimited",
		w:      mkWorkload(4, jb{0, 2, 1000, -1}, jb{1, 4, m, m}, jb{2, 2, m, m}),
		p:      fast,
		starts: []int{0, 1000, 2},
		killed: []bool{false, false, false},
	}, {
		// bf_max_job_test=1: only J2 is tested, J3 waits in line.
		name:   "bf_max_job_test",
		w:      mkWorkload(4, jb{0, 2, 1000, -1}, jb{1, 4, m, m}, jb{2, 2, m, m}),
		p:      SlurmParams{BFInterval: time.Second, BFResolution: time.Second, BFMaxJobTest: 1},
		starts: []int{0, 1000, 1060},
	}, {
		// J2 is planned at 230 (J1's end). J3 (2 min, from 70) ends at
		// 190: before the reservation at bf_resolution 1 s, but not before
		// 230 floored to 180 at bf_resolution 60 s.
		name:   "bf_resolution 1s",
		w:      mkWorkload(4, jb{50, 2, 3 * m, 3 * m}, jb{51, 4, m, m}, jb{70, 2, 100, 2 * m}),
		p:      fast,
		starts: []int{50, 230, 70},
	}, {
		name:   "bf_resolution 60s",
		w:      mkWorkload(4, jb{50, 2, 3 * m, 3 * m}, jb{51, 4, m, m}, jb{70, 2, 100, 2 * m}),
		p:      SlurmParams{BFInterval: time.Second, BFResolution: time.Minute},
		starts: []int{50, 230, 290},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			for i := range tc.w.Jobs {
				if tc.w.Jobs[i].Limit < 0 {
					tc.w.Jobs[i].Limit = workload.Unlimited
				}
			}
			r := runSlurm(t, tc.w, tc.p)
			if got := starts(r); !slices.Equal(got, tc.starts) {
				t.Errorf("starts %v, want %v", got, tc.starts)
			}
			for i, k := range tc.killed {
				if r.Jobs[i].Killed != k {
					t.Errorf("job %d killed %v, want %v (%+v)", i+1, r.Jobs[i].Killed, k, r.Jobs[i])
				}
			}
		})
	}
}

// The main scheduler runs on slurmctld's one-second loop: a submission
// or a job end is handled at the next tick, but no sooner than
// batch_sched_delay after the scheduler's last run.
func TestSlurmLikeMainScheduler(t *testing.T) {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	w := &workload.Workload{Name: "ticks", Nodes: 2, Jobs: []workload.Job{
		{ID: 1, Submit: ms(10_300), Nodes: 2, Run: ms(1_200), Limit: time.Minute}, // starts at 11 (first tick), ends 12.2
		{ID: 2, Submit: ms(11_500), Nodes: 2, Run: ms(5_000), Limit: time.Minute}, // 12.2 < 11 + 3: waits until 14
	}}
	// Backfill passes every 100 s keep out of the way.
	r := runSlurm(t, w, SlurmParams{BFInterval: 100 * time.Second, SchedInterval: time.Hour})
	if got := []time.Duration{r.Jobs[0].Start, r.Jobs[1].Start}; !slices.Equal(got, []time.Duration{11 * time.Second, 14 * time.Second}) {
		t.Errorf("starts %v, want [11s 14s]", got)
	}
}

// KillWait keeps a killed job's nodes: J1 dies at its 60 s check and
// frees them 5 s later.
func TestSlurmLikeKillWait(t *testing.T) {
	w := mkWorkload(4, jb{0, 4, 200, 60}, jb{10, 4, 10, 60})
	p := fast
	p.KillWait = 5 * time.Second
	r := runSlurm(t, w, p)
	if j := r.Jobs[0]; !j.Killed || j.End != 65*time.Second || r.Jobs[1].Start != 65*time.Second {
		t.Errorf("job 1 %+v, job 2 starts %v; want killed, ended and replaced at 65s", j, r.Jobs[1].Start)
	}
}

func TestSlurmLikeRandomValid(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for range 200 {
		w := randomWorkload(rng, 30, 2+rng.IntN(20))
		for i := range w.Jobs {
			w.Jobs[i].Limit = time.Duration(1+rng.IntN(3)) * time.Minute
			w.Jobs[i].Run = time.Duration(rng.IntN(200)) * time.Second
		}
		p := SlurmParams{BFInterval: time.Duration(1+rng.IntN(30)) * time.Second, BFResolution: time.Duration(1+rng.IntN(60)) * time.Second}
		r := runSlurm(t, w, p)
		for i, j := range r.Jobs {
			wj := w.Jobs[i]
			if j.Start < wj.Submit || j.Run() > wj.Run || j.Killed != (j.Run() < wj.Run) {
				t.Fatalf("job %d: %+v for %+v", wj.ID, j, wj)
			}
			if j.Killed && j.End != ceilTo(j.Start+wj.Limit, 30*time.Second) {
				t.Fatalf("job %d killed at %v, want the first 30 s check after %v", wj.ID, j.End, j.Start+wj.Limit)
			}
			if j.Hosts() == "" {
				t.Fatalf("job %d ran on no nodes", wj.ID)
			}
		}
	}
}

// The snapshot of a 24-node machine where a 20-node job runs and a
// 24-node job waits for it, as the daemon would read it from Slurm. J3
// waits behind J2 and is planned on the nodes that are idle now; J4 (one
// node, one minute) backfills onto one of them.
func TestSnapshot(t *testing.T) {
	w := mkWorkload(24, jb{0, 20, 600, 300}, jb{10, 24, 60, 600}, jb{11, 4, 60, 300}, jb{11, 1, 30, 60})
	w.Jobs[0].User, w.Jobs[1].Kind = "alice", workload.Calibration
	epoch := time.Unix(1_800_000_000, 0)
	at := func(s int) time.Time { return epoch.Add(time.Duration(s) * time.Second) }
	var snap *cluster.Snapshot
	_, err := Run(w, Config{Policy: SlurmLike, Slurm: fast, OnPass: func(now time.Duration, s *State) {
		if snap == nil && now >= 12*time.Second {
			snap = s.Snapshot(epoch)
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	if snap == nil || !snap.Complete || !snap.Time.Equal(at(12)) {
		t.Fatalf("snapshot %+v", snap)
	}
	if c := snap.Config; c.BackfillInterval != time.Second || c.SchedulerType != "sched/backfill" || c.SelectType != "select/linear" {
		t.Errorf("config %+v", c)
	}
	batch, pilot := snap.DefaultPartition(), snap.Partition(PilotPartition)
	if batch == nil || batch.Name != BatchPartition || batch.MaxTime != cluster.Unlimited || len(batch.Nodes) != 24 ||
		pilot == nil || pilot.PriorityTier >= batch.PriorityTier || len(pilot.Nodes) != 24 {
		t.Errorf("partitions %+v", snap.Partitions)
	}
	for i, n := range snap.Nodes {
		want := cluster.NodeAlloc
		if i >= 21 {
			want = cluster.NodePlanned // idle, but reserved for J2 (and J3)
		}
		if n.Name != NodeName(i) || n.State != want {
			t.Errorf("node %d: %s %s, want c%d %s", i, n.Name, n.State, i+1, want)
		}
	}
	jobs := map[string]cluster.Job{}
	var order []string
	for _, j := range snap.Jobs {
		jobs[j.ID] = j
		order = append(order, j.ID)
	}
	// Running jobs first, then the pending ones in priority order.
	if !slices.Equal(order[2:], []string{"2", "3"}) || len(order) != 4 {
		t.Fatalf("jobs in order %v", order)
	}
	j1, j2, j3, j4 := jobs["1"], jobs["2"], jobs["3"], jobs["4"]
	if j1.State != cluster.JobRunning || j1.User != "alice" || len(j1.Nodes) != 20 || j1.Nodes[0] != "c1" ||
		!j1.Start.Equal(epoch) || !j1.End.Equal(at(300)) || j1.TimeLimit != 5*time.Minute {
		t.Errorf("J1 %+v", j1)
	}
	if j4.State != cluster.JobRunning || !slices.Equal(j4.Nodes, []string{"c21"}) || !j4.Start.Equal(at(11)) || !j4.End.Equal(at(71)) {
		t.Errorf("J4 (backfilled) %+v", j4)
	}
	// J2 waits for J1's end, by its limit, on every node.
	if j2.State != cluster.JobPending || j2.Reason != "Resources" || j2.Name != "calibration" ||
		!j2.Start.Equal(j1.End) || !j2.End.Equal(j1.End.Add(10*time.Minute)) ||
		len(j2.SchedNodes) != 24 || j2.SchedNodes[23] != "c24" || !j2.Submit.Equal(at(10)) {
		t.Errorf("J2 %+v", j2)
	}
	// J3 comes after J2, on the run of nodes J4 will have left.
	if j3.Reason != "Priority" || !j3.Start.Equal(j2.End) || !slices.Equal(j3.SchedNodes, []string{"c21", "c22", "c23", "c24"}) {
		t.Errorf("J3 %+v", j3)
	}
	if !(j1.Priority > j2.Priority && j2.Priority > j3.Priority) {
		t.Errorf("priorities %d %d %d: want earlier submissions higher", j1.Priority, j2.Priority, j3.Priority)
	}

	// Without a backfill plan (EASY here) nothing is planned or expected.
	snap = nil
	if _, err := Run(w, Config{Policy: EASY, OnPass: func(now time.Duration, s *State) {
		if snap == nil && now >= 10*time.Second {
			snap = s.Snapshot(epoch)
		}
	}}); err != nil {
		t.Fatal(err)
	}
	if p := snap.Jobs[1]; p.ID != "2" || !p.Start.IsZero() || p.SchedNodes != nil || snap.Nodes[23].State != cluster.NodeIdle {
		t.Errorf("EASY snapshot: pending %+v, node c24 %s", p, snap.Nodes[23].State)
	}
}
