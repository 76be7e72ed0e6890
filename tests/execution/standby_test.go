package execution

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/glean-hpc/glean/sidecar/spool"
)

// A fair job's last task runs on a pilot when its shadow element starts:
// the element stands by instead of leaving, and when the pilot gives way to
// a regular job that needs its node, the element takes the task at once.
// Had it left, its node would have gone to the next job queued there and
// the task would have waited for the regular job's end, past the end of the
// same job without glean.
func TestFairShadowStandsBy(t *testing.T) {
	e := setup(t)
	e.WriteFile(t, "sb.sh", `#!/bin/sh
echo "task $SLURM_ARRAY_TASK_ID on $SLURM_JOB_ID"
trap 'echo saved; exit 99' TERM
sleep 60 &
wait
`, 0o755)
	e.WriteFile(t, "sb/.keep", "", 0o644)
	// R1 holds c1, the only node the job's own element may use (-w c1),
	// for 10 s, while a pilot runs the job's one task (60 s); R4 queues
	// there behind the element.
	r1 := cl.Submit(t, "-N", "1", "-w", "c1", "-t", "2", "-o", "/dev/null", "--wrap", "sleep 10")
	cl.WaitFor(t, 30*time.Second, "R1 to start", func() bool { s, _ := e.SlurmState(t, r1); return s == "RUNNING" })
	anchor := e.Sbatch(t, "", "--glean=mode=fair,checkpoint=yes", "--array=0", "-w", "c1", "-t", "2", "-o", "sb/%a.out", "sb.sh")
	// R4 right after the wrapper: the shadow array keeps its place ahead
	// of it whenever gleand lets it start (TestShadowKeepsQueuePlace).
	r4 := cl.Submit(t, "-N", "1", "-w", "c1", "-t", "3", "-o", "/dev/null", "--wrap", "sleep 90")

	var rec *spool.Record
	cl.WaitFor(t, 30*time.Second, "the job taken in", func() bool { rec = e.Record(t, anchor); return rec != nil })
	claim := filepath.Join((&spool.Spool{Dir: e.Spool}).UserDir(rec.UID), spool.WorkDir, rec.ID, spool.StandbyDir, "0")
	// (Or R4 started: the element left c1; the assertions below say what
	// that costs.)
	cl.WaitFor(t, 90*time.Second, "the element to stand by for the pilot's task", func() bool {
		_, err := os.Stat(claim)
		s, _ := e.SlurmState(t, r4)
		return err == nil || s == "RUNNING"
	})
	latency := regularStartsInTime(t, e, "-N", "23", "-x", "c1", "-t", "2", "-o", "/dev/null", "--wrap", "sleep 60")
	r := e.WaitState(t, anchor, 4*time.Minute, spool.StateDone, spool.StateFailed)
	if r.State != spool.StateDone {
		t.Fatalf("record %s %+v", r.State, r.Tasks)
	}
	pilots := map[string]bool{}
	for _, p := range r.PilotJobs {
		pilots[p.ID] = true
	}
	var handedBack, done *spool.TaskEvent
	for _, ev := range e.TaskEvents(t, anchor) {
		switch {
		case ev.Reason == spool.ReasonGiveWay && pilots[ev.Pilot]:
			handedBack = &ev
		case ev.Reason == spool.ReasonCompleted:
			done = &ev
		}
	}
	if handedBack == nil || done == nil {
		t.Fatalf("want a pilot's attempt given way and a completed one; events %+v", e.TaskEvents(t, anchor))
	}
	if pilots[done.Pilot] {
		t.Errorf("task completed on pilot %s, want the standing shadow element", done.Pilot)
	}
	if d := done.Start.Sub(handedBack.End); d > 10*time.Second {
		t.Errorf("the handed-back task restarted %v after the give-way, want at once", d)
	}
	if s, _ := e.SlurmState(t, r4); s != "PENDING" && s != "RUNNING" && s != "COMPLETED" {
		t.Errorf("R4 %s", s)
	}
	out, err := os.ReadFile(filepath.Join(e.Work, "sb", "0.out"))
	if err != nil || !strings.Contains(string(out), "saved") {
		t.Errorf("task output %q (%v): want the pilot's attempt checkpointed on give-way", out, err)
	}
	t.Logf("pilot attempt handed back at %v, restarted on %s %v later; regular job started %v after submission",
		handedBack.End.Format(time.TimeOnly), done.Pilot, done.Start.Sub(handedBack.End).Round(time.Millisecond), latency.Round(time.Millisecond))
}
