package policy

import (
	"testing"
	"time"

	"github.com/glean-hpc/glean/sidecar/cluster"
)

// With SyncRelease every pilot ends on a boundary (harvested nodes come
// back together); a thesis pilot shortened by its job's budget too. now is
// hh:33:09: boundaries are 26 min + k hours away. (From the review of
// fb936bc, which found the cap applied after the alignment.)
func TestThesisBudgetKeepsSyncRelease(t *testing.T) {
	cfg := DefaultConfig()
	cfg.SyncRelease = time.Hour
	// TestDecideThesis's Case 1: 24 nodes, 20 busy for an hour, 4 idle.
	s := snap([]cluster.Partition{part("batch", unl, names("n", 1, 24)...)},
		[][]cluster.Node{nodes(cluster.NodeAlloc, names("n", 1, 20)...), nodes(cluster.NodeIdle, names("n", 21, 24)...)},
		running("r1", at(time.Hour), names("n", 1, 20)...))
	st := State{Jobs: []ElasticJob{ejob("C", Thesis, 100, 0, 20*time.Second)}}
	st.Jobs[0].Budgeted, st.Jobs[0].BudgetLeft = true, 3*time.Hour
	acts := Decide(s, st, cfg, now)
	if len(acts) == 0 {
		t.Fatal("no pilot")
	}
	for _, a := range acts {
		if a.Kind == SubmitPilot && a.TimeLimit%time.Hour != 26*time.Minute {
			t.Errorf("%s: its end is not on a SyncRelease boundary", a)
		}
	}
}
