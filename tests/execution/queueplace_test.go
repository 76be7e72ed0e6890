package execution

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

// A fair job's shadow array keeps the place in the queue it got at
// submission, as the plain job would, however long gleand keeps it from
// starting: here its --dependency holds it for several seconds while a
// regular job queues after it. gleand used to hold the shadow array and
// release it, and a release gives a job a new, last priority under
// priority/basic: the shadow array ended up behind every job submitted
// meanwhile.
func TestShadowKeepsQueuePlace(t *testing.T) {
	e := setup(t)
	e.WriteFile(t, "qp.sh", "#!/bin/sh\necho task $SLURM_ARRAY_TASK_ID\n", 0o755)
	// R1 holds c1, where the shadow array and R2 both want to run, so that
	// both queue; D is what the elastic job waits for.
	r1 := cl.Submit(t, "-N", "1", "-w", "c1", "-t", "3", "-o", "/dev/null", "--wrap", "sleep 120")
	d := cl.Submit(t, "-N", "1", "-w", "c2", "-t", "2", "-o", "/dev/null", "--wrap", "sleep 6")
	anchor := e.Sbatch(t, "", "--glean=mode=fair", "--array=0", "-w", "c1", "-t", "2", "--dependency=afterok:"+d, "-o", "/dev/null", "qp.sh")
	r2 := cl.Submit(t, "-N", "1", "-w", "c1", "-t", "2", "-o", "/dev/null", "--wrap", "true")
	if rec := e.Record(t, anchor); rec != nil && rec.ShadowReleased {
		t.Fatalf("the shadow array was let start before its dependency %s ended: %+v", d, rec)
	}
	cl.WaitFor(t, 60*time.Second, "the shadow array to be let start after its dependency", func() bool {
		r := e.Record(t, anchor)
		return r != nil && r.ShadowReleased
	})
	rec := e.Record(t, anchor)
	prio := func(id string) int64 {
		t.Helper()
		f := strings.Fields(cl.JobField(t, id, "%Q"))
		if len(f) == 0 {
			t.Fatalf("job %s gone", id)
		}
		p, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			t.Fatalf("job %s priority %q", id, f[0])
		}
		return p
	}
	// squeue's priority is what the scheduler orders by (priority/basic:
	// by submission).
	ps, p2 := prio(rec.Shadow), prio(r2)
	if ps <= p2 {
		t.Errorf("shadow array %s priority %d, regular job %s submitted after it %d: want the shadow array first, as the plain job", rec.Shadow, ps, r2, p2)
	}
	if s, _ := e.SlurmState(t, r1); s != "RUNNING" {
		t.Errorf("R1 %s: the comparison above needs both queued behind it", s)
	}
	t.Logf("shadow array %s priority %d, regular job %s %d", rec.Shadow, ps, r2, p2)
	cl.CancelAll(t)
}
