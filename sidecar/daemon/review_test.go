package daemon

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/glean-hpc/glean/sidecar/policy"
	"github.com/glean-hpc/glean/sidecar/slurm"
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
	pc := policy.DefaultConfig()
	pc.PilotPartition = "pilot"
	pc.Grace = 10 * time.Second
	pc.MinPilotTime = time.Minute
	x := NewExecutor(ExecOptions{Spool: fx.s, Policy: pc, DefaultMode: policy.Scavenger, Retries: 2, HeartbeatTimeout: time.Minute,
		PilotPartition: "pilot"}, fx.in, fx.in.records, act, &slurm.Client{R: m, Ended: true}, slog.New(slog.NewTextHandler(io.Discard, nil)))
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
