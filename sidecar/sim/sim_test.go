package sim

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/glean-hpc/glean/sidecar/workload"
)

// jb is a job in seconds: submit, nodes, run, limit (0: none).
type jb struct{ submit, nodes, run, limit int }

func mkWorkload(nodes int, jobs ...jb) *workload.Workload {
	w := &workload.Workload{Name: "test", Nodes: nodes}
	for i, j := range jobs {
		w.Jobs = append(w.Jobs, workload.Job{
			ID: i + 1, Submit: time.Duration(j.submit) * time.Second, Nodes: j.nodes,
			Run: time.Duration(j.run) * time.Second, Limit: time.Duration(j.limit) * time.Second,
		})
	}
	return w
}

func starts(r *Result) []int {
	out := make([]int, len(r.Jobs))
	for i, j := range r.Jobs {
		out[i] = int(j.Start / time.Second)
	}
	return out
}

func TestPolicies(t *testing.T) {
	// A 4-node machine. J2 waits for J1; J3 needs the whole machine; J4 is
	// long and narrow, J5 short and narrow.
	protect := mkWorkload(4,
		jb{0, 2, 10, 10},
		jb{1, 3, 10, 10},
		jb{2, 4, 10, 10},
		jb{3, 1, 30, 30},
		jb{4, 1, 5, 5},
	)
	// J1 will end at 5 but says 100: J3 backfills into a hole that is not
	// there and delays J2 under both backfilling policies.
	overestimate := mkWorkload(4,
		jb{0, 2, 5, 100},
		jb{1, 4, 10, 10},
		jb{2, 2, 50, 60},
	)
	// A 10-node machine: J2's shadow time is 100 with 2 extra nodes. J3 is
	// too wide for them, J4 takes them, J5 finds none left, J6 ends in time.
	extra := mkWorkload(10,
		jb{0, 6, 100, 100},
		jb{1, 8, 10, 10},
		jb{2, 3, 200, 200},
		jb{3, 2, 200, 200},
		jb{4, 2, 200, 200},
		jb{5, 1, 50, 50},
	)
	for _, tc := range []struct {
		name   string
		w      *workload.Workload
		policy Policy
		want   []int
	}{
		{"protect/fcfs", protect, FCFS, []int{0, 10, 20, 30, 30}},
		// EASY protects only the head: J4 runs past J2's shadow time on the
		// extra node and pushes J3 to 33.
		{"protect/easy", protect, EASY, []int{0, 10, 33, 3, 4}},
		// Conservative protects J3 too; J5 still fits before J2.
		{"protect/conservative", protect, Conservative, []int{0, 10, 20, 30, 4}},
		{"overestimate/fcfs", overestimate, FCFS, []int{0, 5, 15}},
		{"overestimate/easy", overestimate, EASY, []int{0, 52, 2}},
		{"overestimate/conservative", overestimate, Conservative, []int{0, 52, 2}},
		{"extra/fcfs", extra, FCFS, []int{0, 100, 110, 110, 110, 110}},
		{"extra/easy", extra, EASY, []int{0, 100, 110, 3, 110, 5}},
		{"extra/conservative", extra, Conservative, []int{0, 100, 110, 3, 110, 5}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := Run(tc.w, Config{Policy: tc.policy})
			if err != nil {
				t.Fatal(err)
			}
			if got := starts(r); !slices.Equal(got, tc.want) {
				t.Errorf("starts %v, want %v", got, tc.want)
			}
			checkSchedule(t, tc.w, r)
		})
	}
}

func TestKillAtLimit(t *testing.T) {
	w := mkWorkload(2,
		jb{0, 2, 100, 50}, // killed at 50
		jb{10, 2, 10, 20},
		jb{10, 1, 10, 0}, // no limit: DefaultLimit, else Unlimited
	)
	r, err := Run(w, Config{Policy: EASY})
	if err != nil {
		t.Fatal(err)
	}
	j := r.Jobs[0]
	if !j.Killed || j.Run() != 50*time.Second || r.Killed != 1 {
		t.Errorf("job 1: %+v, killed %d", j, r.Killed)
	}
	// With no limit the third job cannot backfill ahead of job 2.
	if got := starts(r); !slices.Equal(got, []int{0, 50, 60}) {
		t.Errorf("starts %v", got)
	}
	r, err = Run(w, Config{Policy: EASY, DefaultLimit: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if got := starts(r); !slices.Equal(got, []int{0, 50, 60}) {
		t.Errorf("default limit: starts %v", got)
	}
	// Archive estimates: nobody is killed and job 1 runs its 100 s.
	r, err = Run(w, Config{Policy: EASY, Estimates: ArchiveEstimates})
	if err != nil {
		t.Fatal(err)
	}
	if got := starts(r); r.Killed != 0 || !slices.Equal(got, []int{0, 100, 110}) {
		t.Errorf("archive: starts %v, killed %d", got, r.Killed)
	}
}

func TestMetrics(t *testing.T) {
	// 2 nodes: J1 runs 0-100 on both; J2 (5 s) waits 95 s.
	w := mkWorkload(2, jb{0, 2, 100, 100}, jb{5, 1, 5, 5})
	r, err := Run(w, Config{Policy: FCFS})
	if err != nil {
		t.Fatal(err)
	}
	if r.MeanWait != 47500*time.Millisecond {
		t.Errorf("mean wait %v", r.MeanWait)
	}
	// J1: 1; J2: (95 + 5) / max(5, 10) = 10.
	if r.MeanBSLD != 5.5 {
		t.Errorf("mean bsld %v", r.MeanBSLD)
	}
	// (100*2 + 5*1) / (2 * 105)
	if want := 205.0 / 210; r.Utilization != want {
		t.Errorf("utilization %v, want %v", r.Utilization, want)
	}
	if r.Events != 4 {
		t.Errorf("events %d", r.Events)
	}
}

func TestRejects(t *testing.T) {
	for _, w := range []*workload.Workload{
		mkWorkload(2, jb{0, 3, 10, 0}),
		mkWorkload(2, jb{0, 0, 10, 0}),
		mkWorkload(2, jb{-1, 1, 10, 0}),
		mkWorkload(0),
	} {
		if _, err := Run(w, Config{}); err == nil {
			t.Errorf("accepted %+v", w)
		}
	}
	if _, err := Run(mkWorkload(2), Config{Policy: Policy(9)}); err == nil {
		t.Error("accepted an unknown policy")
	}
}

func TestOnPass(t *testing.T) {
	w := mkWorkload(4, jb{0, 2, 10, 10}, jb{1, 3, 10, 10}, jb{2, 1, 5, 5})
	var calls []time.Duration
	r, err := Run(w, Config{Policy: EASY, OnPass: func(now time.Duration, s *State) {
		calls = append(calls, now)
		if s.Now() != now || s.Free() < 0 || s.Free() > s.Size() || s.Size() != 4 {
			t.Errorf("at %v: free %d of %d", now, s.Free(), s.Size())
		}
		if now == 2*time.Second && (s.Queued() != 1 || s.Running() != 2 || s.Free() != 1) {
			t.Errorf("at 2s: %d queued, %d running, %d free", s.Queued(), s.Running(), s.Free())
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	if len(calls) != r.Passes || !slices.IsSorted(calls) {
		t.Errorf("calls %v, passes %d", calls, r.Passes)
	}
}

// checkSchedule holds any result to what every policy must respect.
func checkSchedule(t *testing.T, w *workload.Workload, r *Result) {
	t.Helper()
	type edge struct {
		t     time.Duration
		delta int
	}
	var edges []edge
	for i, j := range r.Jobs {
		wj := w.Jobs[i]
		if j.ID != wj.ID || j.Start < wj.Submit || j.Run() > wj.Run || j.Run() < wj.Run && !j.Killed {
			t.Fatalf("job %d: %+v for %+v", wj.ID, j, wj)
		}
		edges = append(edges, edge{j.Start, j.Nodes}, edge{j.End, -j.Nodes})
	}
	// Ends before starts at equal times: nodes are free again at once.
	slices.SortFunc(edges, func(a, b edge) int {
		if a.t != b.t {
			return int(a.t - b.t)
		}
		return a.delta - b.delta
	})
	used := 0
	for _, e := range edges {
		used += e.delta
		if used > w.Nodes {
			t.Fatalf("%d nodes in use at %v on a %d-node machine", used, e.t, w.Nodes)
		}
	}
}

func TestRandomSchedulesValid(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for range 300 {
		w := randomWorkload(rng, 30, 2+rng.IntN(10))
		for _, p := range []Policy{FCFS, EASY, Conservative} {
			for _, est := range []Estimates{KillAtLimit, ArchiveEstimates} {
				r, err := Run(w, Config{Policy: p, Estimates: est})
				if err != nil {
					t.Fatal(err)
				}
				checkSchedule(t, w, r)
				if p == FCFS {
					// Jobs start in queue order.
					for i := 1; i < len(r.Jobs); i++ {
						if r.Jobs[i].Start < r.Jobs[i-1].Start {
							t.Fatalf("fcfs: job %d starts before job %d", r.Jobs[i].ID, r.Jobs[i-1].ID)
						}
					}
				}
			}
		}
	}
}
