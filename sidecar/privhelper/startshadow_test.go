package privhelper

import (
	"context"
	"strings"
	"testing"

	"github.com/glean-hpc/glean/sidecar/spool"
)

// start-shadow lets a shadow array start before the user's --begin (the
// wrapper drops it from the shadow; the anchor carries it and gleand waits
// for it while the record is waiting), so the helper acts only for a
// record that gleand has let run: queued or running. (From the review of
// 69452a3, which found it accepted for any state.)
func TestStartShadowNeedsARunnableRecord(t *testing.T) {
	for _, state := range []string{spool.StateWaiting, spool.StateRejected, spool.StateCancelled, spool.StateDone, spool.StateAccepting} {
		t.Run(state, func(t *testing.T) {
			fx := newFixture(t)
			_, jobs := fx.record(t, aliceUID, alice, state, "101", "102")
			fx.slurm.jobs = jobs[:2] // the shadow array, all pending
			_, err := fx.h.Handle(context.Background(), Request{Op: OpStartShadow, Job: "102"})
			if !IsRefusal(err) {
				t.Errorf("start-shadow for a %s record: err %v, Slurm calls %q; want a refusal", state, err, strings.Join(fx.slurm.calls, ","))
			}
		})
	}
}
