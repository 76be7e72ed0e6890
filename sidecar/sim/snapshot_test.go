package sim

import (
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/glean-hpc/glean/sidecar/cluster"
)

// TestCachedSnapshot: a snapshot built on a cache, which keeps what did not
// change since the last one, shows what a fresh one shows, at every pass of
// the first 600 KTH-SP2 jobs.
func TestCachedSnapshot(t *testing.T) {
	w := loadSWF(t, "KTH-SP2-1996-2.1-cln.swf.gz")
	w.Jobs = w.Jobs[:600]
	var c snapCache
	_, err := Run(w, Config{Policy: SlurmLike, OnPass: func(now time.Duration, s *State) {
		got, want := s.snapshot(simEpoch, &c), s.Snapshot(simEpoch)
		// The cached lists show none as empty, fresh ones as nil.
		g := *got
		g.Jobs = nil
		if len(got.Jobs) > 0 {
			g.Jobs = slices.Clone(got.Jobs)
		}
		for i := range g.Jobs {
			for _, l := range []*[]string{&g.Jobs[i].Nodes, &g.Jobs[i].SchedNodes} {
				if len(*l) == 0 {
					*l = nil
				}
			}
		}
		if !reflect.DeepEqual(&g, want) {
			t.Fatalf("at %v the cached snapshot shows\n%v\nwant\n%v", now, snapDiff(&g, want), snapDiff(want, &g))
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
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
