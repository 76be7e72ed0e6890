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

// A pilot moved within a thesis pool counts against the budget of the job
// it moves to (gleand charges it its whole time limit there), so a
// budgeted job takes only pilots its budget still covers; its own new
// pilots get what is left after the moves. (Carried in the session notes
// as "thesis moves don't check the receiving budget".)
func TestThesisMovesKeepToTheBudget(t *testing.T) {
	base := func() *cluster.Snapshot {
		return snap([]cluster.Partition{part("batch", unl, names("n", 1, 24)...)},
			[][]cluster.Node{nodes(cluster.NodeAlloc, names("n", 1, 20)...), nodes(cluster.NodeIdle, names("n", 21, 24)...)},
			running("r1", at(time.Hour), names("n", 1, 20)...))
	}
	// A's pilots started 30 min ago with 2-hour limits (each charges 2 h
	// where it moves to); a2 is idle, a1 and a3 are busy.
	lim := func(p Pilot) Pilot { p.End = p.Start.Add(2 * time.Hour); return p }
	a1 := lim(taskEnds(rpilot("a1", "A", "n21", 30*time.Minute, never), 3*time.Minute))
	a2 := lim(idlePilot(rpilot("a2", "A", "n22", 30*time.Minute, never)))
	a3 := lim(taskEnds(rpilot("a3", "A", "n23", 30*time.Minute, never), time.Minute))
	un := ppilot("a4", "A", "", time.Second)
	job := func(id string, pending int, budget time.Duration) ElasticJob {
		j := ejob(id, Thesis, pending, 0, 8*time.Minute)
		j.Owner = "u1"
		if budget > 0 {
			j.Budgeted, j.BudgetLeft = true, budget
		}
		return j
	}
	done := job("A", 0, 0)
	done.TasksRunning = 2
	runDecide(t, []decideCase{
		{
			name: "budget for one pilot and a bit: the idle one moves, B's new pilot gets the rest",
			snap: withPilots(base(), a1, a2, a3),
			st:   State{Jobs: []ElasticJob{done, job("B", 5, 3*time.Hour)}, Pilots: []Pilot{a1, a2, a3}},
			want: []Action{move("A", "a2", "n22", "B"), sub("B", "n24", time.Hour)},
		},
		{
			name: "budget below one pilot's limit: nothing moves; the idle pilot leaves",
			snap: withPilots(base(), a1, a2, a3),
			st:   State{Jobs: []ElasticJob{done, job("B", 5, 90*time.Minute)}, Pilots: []Pilot{a1, a2, a3}},
			want: []Action{cancelFor(CauseNoWork, "A", "a2", "n22"), sub("B", "n24", 90*time.Minute)},
		},
		{
			name: "the first job with work cannot take them: they go to the next one, FIFO",
			snap: withPilots(base(), a1, a2, a3),
			st:   State{Jobs: []ElasticJob{done, job("B", 5, 90*time.Minute), job("C", 5, 0)}, Pilots: []Pilot{a1, a2, a3}},
			want: []Action{move("A", "a1", "n21", "C"), move("A", "a2", "n22", "C"), move("A", "a3", "n23", "C"), sub("B", "n24", 90*time.Minute)},
		},
		{
			// (10 h of budget is one pilot's worth: the first takes it all.)
			name: "a pending pilot's limit is not known here: it does not move to a budgeted job",
			snap: withPilots(base(), un),
			st:   State{Jobs: []ElasticJob{done, job("B", 5, 10*time.Hour)}, Pilots: []Pilot{un}},
			want: []Action{cancelFor(CauseNoWork, "A", "a4", ""), sub("B", "n22", 10*time.Hour)},
		},
		{
			name: "the same pending pilot moves to a job without a budget",
			snap: withPilots(base(), un),
			st:   State{Jobs: []ElasticJob{done, job("B", 5, 0)}, Pilots: []Pilot{un}},
			want: []Action{move("A", "a4", "", "B"), sub("B", "n22", unl), sub("B", "n23", unl), sub("B", "n24", unl)},
		},
	})
}
