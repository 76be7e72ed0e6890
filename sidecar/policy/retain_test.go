package policy

import (
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"
	"weak"

	"github.com/glean-hpc/glean/sidecar/cluster"
)

// TestScratchKeepsNoInput: the pooled scratch keeps no pointer into a
// caller's snapshot or state once a decision returns (only strings it
// caches: node names, pilot ids). A pointer into the caller's
// memory would keep all of it alive: the simulator hands over a snapshot
// inside its driver, and a scratch that kept it held a whole finished
// run (60 MB on KTH-SP2) through the next one.
func TestScratchKeepsNoInput(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	for it := 0; it < 200; it++ {
		s, st, cfg := holdCase(r)
		// The caller's structure: the snapshot inside something bigger,
		// and the state's slices in arrays of their own.
		type caller struct {
			snap cluster.Snapshot
			pad  [1 << 16]byte
		}
		c := &caller{snap: *s}
		c.snap.Jobs, c.snap.Nodes = slices.Clone(s.Jobs), slices.Clone(s.Nodes)
		st.Jobs, st.Pilots = slices.Clone(st.Jobs), slices.Clone(st.Pilots)
		kept := map[string]func() bool{"the snapshot's holder": alive(c)}
		if len(c.snap.Jobs) > 0 {
			kept["the snapshot's jobs"] = alive(&c.snap.Jobs[0])
		}
		kept["the snapshot's nodes"] = alive(&c.snap.Nodes[0])
		if len(st.Jobs) > 0 {
			kept["the state's jobs"] = alive(&st.Jobs[0])
		}
		if len(st.Pilots) > 0 {
			kept["the state's pilots"] = alive(&st.Pilots[0])
		}
		if it%2 == 0 {
			DecideHold(&c.snap, st, cfg, now)
		} else {
			Decide(&c.snap, st, cfg, now)
		}
		c, st = nil, State{}
		runtime.GC() // the pool's scratch is still reachable (victim cache)
		for what, alive := range kept {
			if alive() {
				t.Fatalf("case %d: %s is still reachable after the decision", it, what)
			}
		}
	}
}

// alive reports, when called, whether p can still be reached.
func alive[T any](p *T) func() bool {
	w := weak.Make(p)
	return func() bool { return w.Value() != nil }
}
