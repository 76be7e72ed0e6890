package daemon

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/glean-hpc/glean/sidecar/cluster"
	"github.com/glean-hpc/glean/sidecar/policy"
	"github.com/glean-hpc/glean/sidecar/spool"
)

// TestMovePilot: a thesis pool's pilot moves to another job of its owner:
// the new job's record holds it (the policy sees it there, once), the old
// job's control file tells its agent where to go, a daemon that died half
// way finishes the move, and a move between two users' jobs is refused.
func TestMovePilot(t *testing.T) {
	fx, pl := newPool(t, map[string]string{"p1": "n1", "p2": "n2"})
	na, nb, rs, sl, newX := pl.na, pl.nb, pl.rs, pl.sl, pl.newX
	x := newX()
	ra, rb := fx.in.Get(na), fx.in.Get(nb)
	ra.PilotJobs = append(ra.PilotJobs, spool.PilotJob{ID: "p1", Node: "n1", Submitted: fx.now, Started: fx.now},
		spool.PilotJob{ID: "p2", Node: "n2", Submitted: fx.now, Started: fx.now})
	if err := rs.Put(ra); err != nil {
		t.Fatal(err)
	}

	if err := x.movePilot(policy.Action{Kind: policy.MovePilot, Job: na, Pilot: "p1", To: nb}); err != nil {
		t.Fatal(err)
	}
	if p := pilotOf(ra, "p1"); p == nil || p.MovedTo != nb {
		t.Errorf("old record: %+v, want p1 moved to %s", ra.PilotJobs, nb)
	}
	if p := pilotOf(rb, "p1"); p == nil || p.MovedTo != "" {
		t.Errorf("new record: %+v, want p1", rb.PilotJobs)
	}
	control := func(id string) spool.Control {
		w, err := fx.s.OpenWork(fx.uid, id)
		if err != nil {
			t.Fatal(err)
		}
		c, err := w.Control()
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	if c := control(pl.a); c.Move["p1"] != nb || len(c.Move) != 1 {
		t.Errorf("old job's control %+v, want p1 -> %s", c, nb)
	}
	// The policy sees p1 once, as the new job's.
	st, err := x.Round(context.Background(), fx.now)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range st.Actions {
		if a.Pilot == "p1" && a.Job != nb {
			t.Errorf("an action on p1 as %s's: %v", a.Job, a)
		}
	}
	var seen []string
	for _, r := range []*spool.Record{ra, rb} {
		var pst policy.State
		x.pilotsSeen(fx.now, r, sl.Snapshot(context.Background(), fx.now), jobsOf(sl, fx.now), nil, &pst)
		for _, p := range pst.Pilots {
			seen = append(seen, p.ID+"@"+p.Job)
		}
	}
	if want := []string{"p2@" + na, "p1@" + nb}; len(seen) != 2 || seen[0] != want[0] || seen[1] != want[1] {
		t.Errorf("the policy sees %v, want %v", seen, want)
	}

	// A daemon that died after marking the old record: a new one finishes.
	p2 := pilotOf(ra, "p2")
	p2.MovedTo = nb
	if err := rs.Put(ra); err != nil {
		t.Fatal(err)
	}
	x = newX()
	x.completeMoves([]string{na, nb})
	if pilotOf(rb, "p2") == nil || control(pl.a).Move["p2"] != nb {
		t.Errorf("after a restart: new record %+v, control %+v", rb.PilotJobs, control(pl.a))
	}

	// Never to another user's job.
	ra.PilotJobs = append(ra.PilotJobs, spool.PilotJob{ID: "p3", Node: "n3", Submitted: fx.now, Started: fx.now})
	rb.UID++
	err = x.movePilot(policy.Action{Kind: policy.MovePilot, Job: na, Pilot: "p3", To: nb})
	rb.UID--
	if !errors.Is(err, errOtherOwner) || pilotOf(ra, "p3").MovedTo != "" {
		t.Errorf("a move to another uid's job: %v, %+v", err, pilotOf(ra, "p3"))
	}
}

// jobsOf is the snapshot's jobs by id, as Round builds them.
func jobsOf(c *benchCluster, now time.Time) map[string]*cluster.Job {
	s := c.Snapshot(context.Background(), now)
	m := map[string]*cluster.Job{}
	for i := range s.Jobs {
		m[s.Jobs[i].ID] = &s.Jobs[i]
	}
	return m
}

// pool is two thesis jobs of one user (A with 2 tasks, B with 5), taken in,
// with a cluster whose running pilots are on the given nodes.
type pool struct {
	a      string // A's entry id
	na, nb string
	rs     *spool.Records
	sl     *benchCluster
	newX   func() *Executor
}

func newPool(t *testing.T, pilots map[string]string) (*fixture, pool) {
	t.Helper()
	fx := newFixture(t)
	thesis := func(e *spool.Entry, _ *QJob) { e.Mode = "thesis" }
	ea, eb := fx.submit(t, 2, thesis), fx.submit(t, 5, thesis)
	if st := fx.round(t); st.Accepted != 2 {
		t.Fatalf("intake: %+v", st)
	}
	na, nb := spool.RecordName(fx.uid, ea.ID), spool.RecordName(fx.uid, eb.ID)
	rs, err := fx.s.OpenRecords()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rs.Close() })
	sl := &benchCluster{nodes: 4, pilots: pilots}
	newX := func() *Executor {
		return NewExecutor(ExecOptions{Spool: fx.s, Policy: policy.DefaultConfig(), HeartbeatTimeout: time.Hour},
			fx.in, rs, sl, sl, slog.New(slog.NewTextHandler(io.Discard, nil)))
	}
	return fx, pool{a: ea.ID, na: na, nb: nb, rs: rs, sl: sl, newX: newX}
}

// moveP1 records pilot p1 (on n1) as A's and has x move it to B; it
// returns A's and B's records.
func (pl pool) moveP1(t *testing.T, fx *fixture, x *Executor) (ra, rb *spool.Record) {
	t.Helper()
	ra, rb = fx.in.Get(pl.na), fx.in.Get(pl.nb)
	ra.PilotJobs = append(ra.PilotJobs, spool.PilotJob{ID: "p1", Node: "n1", Submitted: fx.now, Started: fx.now})
	if err := pl.rs.Put(ra); err != nil {
		t.Fatal(err)
	}
	if err := x.movePilot(policy.Action{Kind: policy.MovePilot, Job: pl.na, Pilot: "p1", To: pl.nb}); err != nil {
		t.Fatal(err)
	}
	return ra, rb
}
