package sim

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/glean-hpc/glean/sidecar/cluster"
	"github.com/glean-hpc/glean/sidecar/workload"
)

// TestCachedSnapshot: a snapshot built on a cache, which keeps what did not
// change since the last one, shows what a fresh one shows, at every pass of
// the first 600 KTH-SP2 jobs; every job's NodeIdx gives its nodes.
func TestCachedSnapshot(t *testing.T) {
	w := loadSWF(t, "KTH-SP2-1996-2.1-cln.swf.gz")
	w.Jobs = w.Jobs[:600]
	var c snapCache
	_, err := Run(w, Config{Policy: SlurmLike, OnPass: func(now time.Duration, s *State) {
		got, want := normalized(s.snapshot(simEpoch, &c)), s.Snapshot(simEpoch)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("at %v the cached snapshot shows\n%v\nwant\n%v", now, snapDiff(got, want), snapDiff(want, got))
		}
		// NodeIdx is the names' positions among the snapshot's nodes.
		for _, j := range want.Jobs {
			names := j.SchedNodes
			if j.Holds() {
				names = j.Nodes
			}
			if len(j.NodeIdx) != len(names) {
				t.Fatalf("at %v job %s: NodeIdx %v for %v", now, j.ID, j.NodeIdx, names)
			}
			for k, i := range j.NodeIdx {
				if i < 0 || i >= len(want.Nodes) || want.Nodes[i].Name != names[k] {
					t.Fatalf("at %v job %s: NodeIdx %v for %v", now, j.ID, j.NodeIdx, names)
				}
			}
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
}

// A snapshot cache serves one epoch: its lines hold times at it, so another
// epoch is refused loudly instead of showing stale times.
func TestSnapshotCacheOneEpoch(t *testing.T) {
	w := tiny(workload.Job{Nodes: 1, Run: time.Hour, Kind: workload.Regular})
	var c snapCache
	var msg any
	if _, err := Run(w, Config{Policy: SlurmLike, OnPass: func(_ time.Duration, s *State) {
		if msg != nil {
			return
		}
		s.snapshot(simEpoch, &c)
		defer func() { msg = recover() }()
		s.snapshot(simEpoch.Add(time.Hour), &c)
	}}); err != nil {
		t.Fatal(err)
	}
	if m, ok := msg.(string); !ok || !strings.Contains(m, "snapshot cache serves the epoch it was built at") {
		t.Errorf("a second epoch: recovered %v, want the cache's refusal", msg)
	}
}

// normalized is a copy of a cached snapshot with its empty lists nil, as a
// fresh one has them.
func normalized(snap *cluster.Snapshot) *cluster.Snapshot {
	g := *snap
	g.Jobs = nil
	if len(snap.Jobs) > 0 {
		g.Jobs = slices.Clone(snap.Jobs)
	}
	for i := range g.Jobs {
		for _, l := range []*[]string{&g.Jobs[i].Nodes, &g.Jobs[i].SchedNodes} {
			if len(*l) == 0 {
				*l = nil
			}
		}
	}
	return &g
}

// snapDiff is a's nodes and jobs that b does not show the same.
func snapDiff(a, b *cluster.Snapshot) []any {
	var out []any
	for i, n := range a.Nodes {
		if i >= len(b.Nodes) || !reflect.DeepEqual(n, b.Nodes[i]) {
			out = append(out, n)
		}
	}
	for i, j := range a.Jobs {
		if i >= len(b.Jobs) || !reflect.DeepEqual(j, b.Jobs[i]) {
			out = append(out, j)
		}
	}
	return out
}

// TestDriverSnapshot: the snapshot the elastic driver gives the policy is
// the engine's, fresh, with running pilots shown as one-node jobs in the
// pilot partition at priority 1 and the pending pilots after the pending
// jobs, in every round of both thesis lists in every mode with a backlog
// and of the first 600 KTH-SP2 jobs with a backlog.
func TestDriverSnapshot(t *testing.T) {
	kth := loadSWF(t, "KTH-SP2-1996-2.1-cln.swf.gz")
	kth.Jobs = kth.Jobs[:600]
	cfg := elasticCfg(SlurmOnly)
	cfg.Backlog = 10 * time.Minute
	runs := []elasticRun{{"kth-600/backlog", kth, cfg}}
	for _, r := range thesisRuns(t) {
		if r.cfg.Backlog > 0 {
			runs = append(runs, r)
		}
	}
	for _, r := range runs {
		t.Run(r.name, func(t *testing.T) {
			rounds := 0
			r.cfg.checkSnapshot = func(d *driver, s *State, got *cluster.Snapshot) {
				rounds++
				want := s.Snapshot(simEpoch)
				for i, j := range s.running {
					if j.pilot {
						want.Jobs[i].Partition, want.Jobs[i].Name, want.Jobs[i].Priority = PilotPartition, "glean-pilot", 1
					}
				}
				for _, p := range d.pilots {
					if p.state == pPending {
						want.Jobs = append(want.Jobs, cluster.Job{ID: p.sid, ArrayJobID: p.sid, Partition: PilotPartition,
							NumNodes: 1, TimeLimit: p.limit, Submit: simEpoch.Add(p.submitted), State: cluster.JobPending,
							RawState: "PENDING", Reason: "Priority", Priority: 1, Name: "glean-pilot"})
					}
				}
				if g := normalized(got); !reflect.DeepEqual(g, want) {
					t.Fatalf("at %v the driver's snapshot shows\n%v\nwant\n%v", s.now, snapDiff(g, want), snapDiff(want, g))
				}
			}
			if _, err := RunElastic(r.w, r.cfg); err != nil {
				t.Fatal(err)
			}
			if rounds == 0 {
				t.Fatal("no round ran the policy")
			}
		})
	}
}
