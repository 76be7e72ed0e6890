package daemon

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/glean-hpc/glean/sidecar/policy"
	"github.com/glean-hpc/glean/sidecar/spool"
)

// A throttled array (--array=0-39%1) runs at its throttle: one pilot
// holds the one task it may run, and the policy, which does not know the
// throttle, keeps sending more pilots; their agents can take nothing and
// idle out after 30 s. That is not dying at start (found by a review:
// it held the healthy job, and the nodes).
func TestDeadStartNotIdleOuts(t *testing.T) {
	fx, m, x := newRound(t, 3, policy.DefaultConfig())
	e := fx.submit(t, 40, func(e *spool.Entry, _ *QJob) { e.Array.Throttle = 1 })
	m.round(t, fx.in, x)
	r := fx.record(e)
	ids := livePilotIDs(r)
	if len(ids) < 2 {
		t.Fatalf("pilots %+v: want one per node", r.PilotJobs)
	}
	for _, id := range ids {
		m.start(id)
	}
	fx.now = fx.now.Add(time.Second)
	m.round(t, fx.in, x)
	w, err := fx.s.OpenWork(fx.uid, e.ID)
	if err != nil {
		t.Fatal(err)
	}
	worker := ids[0]
	var node string
	for _, p := range fx.record(e).PilotJobs {
		if p.ID == worker {
			node = p.Node
		}
	}
	task, err := w.Take(e.TaskIndices(), spool.Lease{Attempt: "w1", Pilot: worker, Node: node, Started: fx.now})
	if err != nil {
		t.Fatal(err)
	}
	for k := 0; k < 3; k++ {
		// The others idle out 30 s after they started (nothing they may take).
		idle := []string{}
		for _, id := range livePilotIDs(fx.record(e)) {
			if id != worker {
				idle = append(idle, id)
				m.start(id)
			}
		}
		fx.now = fx.now.Add(time.Second)
		if err := os.Chtimes(w.LeasePath(task), fx.now, fx.now); err != nil {
			t.Fatal(err)
		}
		m.round(t, fx.in, x)
		fx.now = fx.now.Add(30 * time.Second)
		for _, id := range idle {
			m.end(id, "")
		}
		if err := os.Chtimes(w.LeasePath(task), fx.now, fx.now); err != nil {
			t.Fatal(err)
		}
		m.round(t, fx.in, x)
	}
	r = fx.record(e)
	if r.PilotTrouble != "" || x.holding(r.DirName(), fx.now) || len(x.heldNodes(fx.uid, fx.now)) != 0 {
		t.Errorf("a throttled job running at its throttle: trouble %q, held %v, held nodes %v: want none",
			r.PilotTrouble, x.holding(r.DirName(), fx.now), x.heldNodes(fx.uid, fx.now))
	}
}

// Pilots are the owner's Slurm jobs; the owner (or an admin, or Slurm:
// preemption, node failure) may end them. Pending pilots the owner
// scancels did not die at start (a review found they held the node back
// from every user's jobs).
func TestDeadStartNotOwnerCancels(t *testing.T) {
	for _, nodes := range []int{1, 2} {
		ownerCancelsPending(t, nodes)
	}
}

func ownerCancelsPending(t *testing.T, nodes int) {
	fx, m, x := newRound(t, nodes, policy.DefaultConfig())
	e := fx.submit(t, 40, nil)
	m.round(t, fx.in, x)
	for k := 0; k < 3; k++ {
		ids := livePilotIDs(fx.record(e))
		if len(ids) == 0 {
			break
		}
		for _, id := range ids {
			m.end(id, "pending") // scancel by the owner while pending
		}
		fx.now = fx.now.Add(10 * time.Second)
		m.round(t, fx.in, x)
	}
	r := fx.record(e)
	if held := x.heldNodes(fx.uid, fx.now); len(held) != 0 || r.PilotTrouble != "" {
		t.Errorf("%d nodes, pending pilots scancelled by their owner: held nodes %v, trouble %q: want none (no pilot started)", nodes, held, r.PilotTrouble)
	}
}

// A pending pilot glean cancels at its pending timeout (which does not
// set the record's Cancelled: it may have started meanwhile) is not a
// dead start; pending timeouts are routine (a review found they held the
// job and its nodes).
func TestDeadStartNotPendingTimeouts(t *testing.T) {
	fx, m, x := newRound(t, 2, policy.DefaultConfig())
	e := fx.submit(t, 40, nil)
	m.round(t, fx.in, x)
	cancels := 0
	for k := 0; k < 4; k++ {
		fx.now = fx.now.Add(10 * time.Minute) // past the timeout, however many misses
		_, helper := m.round(t, fx.in, x)
		for _, h := range helper {
			if strings.HasPrefix(h, "cancel-pending-pilot ") {
				cancels++
			}
		}
		fx.now = fx.now.Add(time.Second)
		m.round(t, fx.in, x)
	}
	if cancels < 3 {
		t.Fatalf("%d pending timeouts: the scenario did not happen", cancels)
	}
	r := fx.record(e)
	if r.PilotTrouble != "" || x.holding(r.DirName(), fx.now) || len(x.heldNodes(fx.uid, fx.now)) != 0 {
		t.Errorf("after %d pending pilots glean cancelled at their timeout: trouble %q, job held %v, held nodes %v: want none",
			cancels, r.PilotTrouble, x.holding(r.DirName(), fx.now), x.heldNodes(fx.uid, fx.now))
	}
}
