package daemon

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/glean-hpc/glean/sidecar/policy"
	"github.com/glean-hpc/glean/sidecar/spool"
)

// failingCancel is the model's helper whose cancel-pilot fails while fail
// is set (slurmctld busy: "Socket timed out on send/recv operation").
type failingCancel struct {
	*slurmModel
	fail bool
}

func (f *failingCancel) CancelPilot(ctx context.Context, record, id string) error {
	if f.fail {
		f.ask("cancel-pilot-failed", id)
		return errors.New("scancel: Socket timed out on send/recv operation")
	}
	return f.slurmModel.CancelPilot(ctx, record, id)
}

// Review finding: escalate records Killed before its scancel and never
// resets it, so one failed scancel of a pilot that did not give way within
// the grace is never tried again: the pilot keeps its node until its time
// limit while the regular job it should give way to waits.
func TestEscalateRetriesAFailedCancel(t *testing.T) {
	fx := newFixture(t)
	m := newModel(t, fx, 4)
	act := &failingCancel{slurmModel: m}
	x, pc := modelExecutor(fx, m, act, 10*time.Second)
	e := fx.submit(t, 40, nil)
	m.round(t, fx.in, x)
	for _, p := range fx.record(e).PilotJobs {
		m.start(p.ID)
	}
	m.regular["800"] = 4
	fx.now = fx.now.Add(time.Second)
	m.round(t, fx.in, x) // signals the 4 pilots; their agents do not stop
	fx.now = fx.now.Add(pc.Grace + giveWayMargin)
	act.fail = true
	_, helper := m.round(t, fx.in, x)
	if !slices.ContainsFunc(helper, func(s string) bool { return strings.HasPrefix(s, "cancel-pilot-failed ") }) {
		t.Fatalf("past the grace: helper %q, want cancel-pilot attempts", helper)
	}
	act.fail = false
	fx.now = fx.now.Add(time.Second)
	_, helper = m.round(t, fx.in, x)
	n := 0
	for _, s := range helper {
		if strings.HasPrefix(s, "cancel-pilot ") {
			n++
		}
	}
	if n != 4 {
		t.Errorf("the round after the failed scancels: helper %q, want the 4 running pilots cancelled again", helper)
	}
}

// Review finding: a pilot moved A -> B and later back B -> A (a thesis
// pool whose first job got a pending task again: a failed or lost task)
// disappears. completeMove finds A's old entry (MovedTo B, not ended) with
// pilotOf and copies nothing back, so A's entry still says "moved to B"
// and B's says "moved to A": neither record shows the pilot to the policy
// (never given way, never cancelled), and the two control files send its
// agent back and forth without taking a task.
func TestMovePilotBack(t *testing.T) {
	fx, pl := newPool(t, map[string]string{"p1": "n1"})
	na, nb, sl, x := pl.na, pl.nb, pl.sl, pl.newX()
	ra, rb := pl.moveP1(t, fx, x)
	if err := x.movePilot(policy.Action{Kind: policy.MovePilot, Job: nb, Pilot: "p1", To: na}); err != nil {
		t.Fatal(err)
	}
	var seen []string
	for _, r := range []*spool.Record{ra, rb} {
		var pst policy.State
		x.pilotsSeen(fx.now, r, sl.Snapshot(context.Background(), fx.now), jobsOf(sl, fx.now), nil, &pst)
		for _, p := range pst.Pilots {
			seen = append(seen, p.ID+"@"+p.Job)
		}
	}
	if len(seen) != 1 || seen[0] != "p1@"+na {
		t.Errorf("after moving p1 to %s and back: the policy sees %v, want [p1@%s]; A's entry %+v", nb, seen, na, pilotOf(ra, "p1"))
	}
}

// Review finding: finish records a pending pilot of an ended job as
// Cancelled before its scancel and never tries again when that fails (a
// busy slurmctld, or errStalled after one slow call): the ended job's
// pilots are no longer the policy's (no pending timeout), so the pilot
// stays queued, and the record is followed every round, until Slurm starts
// it (or forever, pinned to a node that stays down).
func TestFinishRetriesAFailedPilotCancel(t *testing.T) {
	fx := newFixture(t)
	m := newModel(t, fx, 4)
	act := &failingCancel{slurmModel: m}
	x, _ := modelExecutor(fx, m, act, 10*time.Second)
	e := fx.submit(t, 8, nil)
	m.round(t, fx.in, x)
	if n := len(fx.record(e).PilotJobs); n == 0 {
		t.Fatal("no pilots submitted")
	}
	fx.finishTasks(t, e.ID, 8, "77")
	act.fail = true
	fx.now = fx.now.Add(time.Second)
	_, helper := m.round(t, fx.in, x)
	if fx.record(e).State != spool.StateDone || !slices.ContainsFunc(helper, func(s string) bool { return strings.HasPrefix(s, "cancel-pilot-failed ") }) {
		t.Fatalf("ending round: state %s, helper %q; want done and failed pilot cancels", fx.record(e).State, helper)
	}
	act.fail = false
	fx.now = fx.now.Add(time.Second)
	_, helper = m.round(t, fx.in, x)
	if !slices.ContainsFunc(helper, func(s string) bool { return strings.HasPrefix(s, "cancel-pilot ") }) {
		t.Errorf("the round after: helper %q, want the still-pending pilots of the ended job cancelled again", helper)
	}
}
