package agent

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/glean-hpc/glean/sidecar/spool"
)

// Review 2 finding: Serve learns the allocation's limits once per pilot
// and keeps the answer, a failure included: one squeue/scontrol that
// timed out when the pilot started (a busy slurmctld) leaves every job the
// pilot moves to without its end and KillWait ("every task is started"),
// so tasks that cannot finish before the time limit are started and
// killed by it. Before Serve, each job's agent asked again. A failed
// learn should be asked again by the next job's agent.
func TestServeLearnsAgainAfterAFailure(t *testing.T) {
	var learns atomic.Int32
	f, ctx, opt, _ := serveFixture(t, func(context.Context) (Limits, error) {
		if learns.Add(1) == 1 {
			return Limits{}, errors.New("squeue: Socket timed out on send/recv operation")
		}
		return Limits{End: time.Now().Add(time.Hour), KillWait: 30 * time.Second}, nil
	})
	open := func(string) (*Job, *spool.Work, error) {
		if err := f.recs.PutControl(f.rec, spool.Control{}); err != nil {
			return nil, nil, err
		}
		return f.job(), f.work(), nil
	}
	why, err := Serve(ctx, f.job(), f.work(), f.uid, opt, open)
	if err != nil || why == EndMoved {
		t.Fatalf("Serve ended %q, %v", why, err)
	}
	if n := learns.Load(); n != 2 {
		t.Errorf("the allocation's limits were asked %d times over two jobs after the first ask failed; want 2", n)
	}
}
