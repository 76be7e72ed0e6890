package daemon

import (
	"context"
	"strings"
	"testing"

	"github.com/glean-hpc/glean/sidecar/failpoint"
	"github.com/glean-hpc/glean/sidecar/spool"
)

// The intake's failpoints against the fake Slurm: gleand dies at each one
// (a kill that panics here), a new daemon starts from the same records,
// and after its rounds the job is where it would have been without the
// crash: taken in (held, queued, "accepted" journaled once), refused (its
// verified anchor released to write the reason into -o, its shadow array
// cancelled, "rejected" journaled once), or cancelled by
// the user (shadow array cancelled, "cancelled" journaled once). The
// loopback walk of every point is tests/recovery TestFailpoints.
func TestIntakeCrashRecovery(t *testing.T) {
	fair := func(e *spool.Entry, _ *QJob) { e.Mode, e.Shadow = "fair", "" }
	impossible := func(e *spool.Entry, _ *QJob) { e.Resources = spool.Resources{CPUsPerTask: 8, NTasks: 1, CPUs: 8} }
	for _, tc := range []struct {
		point   string
		mutate  func(*spool.Entry, *QJob)
		shadow  bool
		scancel bool   // the user scancels the anchor after the intake
		state   string // where the job ends up
		event   string // the job event journaled exactly once
		anchor  string // its anchor: held, released or cancelled
	}{
		{"intake/accepting-recorded", nil, false, false, spool.StateQueued, "accepted", "held"},
		{"intake/held", fair, true, false, spool.StateQueued, "accepted", "held"},
		{"intake/script-copied", nil, false, false, spool.StateQueued, "accepted", "held"},
		{"intake/queued-recorded", nil, false, false, spool.StateQueued, "accepted", "held"},
		{"atomic/written", nil, false, false, spool.StateQueued, "accepted", "held"},
		{"atomic/renamed", nil, false, false, spool.StateQueued, "accepted", "held"},
		{"journal/half-line", nil, false, false, spool.StateQueued, "accepted", "held"},
		{"reject/recorded", impossible, false, false, spool.StateRejected, "rejected", "released"},
		{"reject/journaled", impossible, false, false, spool.StateRejected, "rejected", "released"},
		{"reject/cancelled", impossible, false, false, spool.StateRejected, "rejected", "released"},
		{"follow/shadow-cancelled", fair, true, true, spool.StateCancelled, "cancelled", "cancelled"},
		{"follow/recorded", fair, true, true, spool.StateCancelled, "cancelled", "cancelled"},
	} {
		t.Run(strings.ReplaceAll(tc.point, "/", "-"), func(t *testing.T) {
			fx := newFixture(t)
			e := fx.submit(t, 4, func(e *spool.Entry, a *QJob) {
				if tc.mutate != nil {
					tc.mutate(e, a)
				}
				if tc.shadow {
					e.Shadow = "9" + e.Anchor
				}
			})
			if tc.scancel {
				fx.round(t)
				fx.slurm.Cancel(context.Background(), e.Anchor)
			}
			died := false
			fail := failpoint.Parse(tc.point).WithKill(func() { died = true; panic("killed") })
			fx.in.opt.Fail, fx.in.records.Fail = fail, fail
			func() {
				defer func() { _ = recover() }()
				fx.round(t)
			}()
			fx.in.records.Fail = nil
			if !died {
				t.Fatalf("the round never reached %s", tc.point)
			}
			// A new gleand on the same spool.
			rs, err := fx.s.OpenRecords()
			if err != nil {
				t.Fatal(err)
			}
			defer rs.Close()
			in2, err := NewIntake(Options{Spool: fx.s, AnchorPartition: "glean", PilotPartition: "pilot", Limits: fx.in.opt.Limits},
				rs, fx.slurm, fx.slurm, fx.slurm, fx.in.log)
			if err != nil {
				t.Fatal(err)
			}
			for i := 0; i < 2; i++ {
				if _, err := in2.Round(context.Background(), fx.now); err != nil {
					t.Fatal(err)
				}
			}
			name := spool.RecordName(fx.uid, e.ID)
			r := in2.Get(name)
			if r == nil || r.State != tc.state || len(r.Cancel) != 0 || len(r.Release) != 0 || r.Pending != nil {
				t.Fatalf("after the restart: %+v, want %s with nothing left to do", r, tc.state)
			}
			evs, err := rs.ReadJournal(name)
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			for _, ev := range evs {
				if ev.Event == tc.event {
					n++
				}
			}
			if n != 1 {
				t.Errorf("journal %+v: %d %q events, want 1", evs, n, tc.event)
			}
			fx.slurm.mu.Lock()
			defer fx.slurm.mu.Unlock()
			a := fx.slurm.jobs[e.Anchor]
			got := "released"
			switch {
			case a.State == "CANCELLED":
				got = "cancelled"
			case a.State == "PENDING" && strings.HasPrefix(a.Reason, "JobHeld"):
				got = "held"
			}
			if got != tc.anchor {
				t.Errorf("anchor %+v: %s, want %s", a, got, tc.anchor)
			}
			if tc.shadow {
				// Not held: it waits behind the wrapper's begin time.
				if s := fx.slurm.jobs[e.Shadow]; tc.scancel && s.State != "CANCELLED" || !tc.scancel && s.Reason != "BeginTime" {
					t.Errorf("shadow %+v", s)
				}
			}
		})
	}
}
