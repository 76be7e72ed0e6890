package execution

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/glean-hpc/glean/sidecar/spool"
	"github.com/glean-hpc/glean/tests/slurmtest"
)

// Pilots that die at start on the real Slurm (glean-agent missing on the
// nodes: pilot.sh exits 2 at once) are not resubmitted every round: after
// three in a row gleand holds back the job's pilots, glean show says why,
// and the job keeps its tasks. Once the agent is back, a gleand restart
// (an admin's fix) tries at once and the job completes.
func TestDeadStartPilotsHeldBack(t *testing.T) {
	e := setup(t)
	agent := filepath.Join(e.Bin, "glean-agent")
	hidden := agent + ".away"
	if err := os.Rename(agent, hidden); err != nil {
		t.Fatal(err)
	}
	restored := false
	restore := func() {
		if !restored {
			restored = true
			if err := os.Rename(hidden, agent); err != nil {
				t.Fatal(err)
			}
		}
	}
	t.Cleanup(restore)
	e.WriteFile(t, "dead/.keep", "", 0o644)
	e.WriteFile(t, "dead.sh", shortTask, 0o755)
	anchor := e.Sbatch(t, "", "--glean=mode=scavenger", "--array=0-1", "-o", "dead/%a.out", "dead.sh")

	var r *spool.Record
	cl.WaitFor(t, time.Minute, "gleand to hold back the job's pilots", func() bool {
		r = e.Record(t, anchor)
		return r != nil && r.PilotTrouble != ""
	})
	if !strings.Contains(r.PilotTrouble, "never opened its log") || !strings.Contains(r.PilotTrouble, "without running a task") {
		t.Errorf("trouble %q: want the pilots' agent never started", r.PilotTrouble)
	}
	show := e.AsUser(t, "", filepath.Join(e.Bin, "glean"), "show", anchor)
	if !strings.Contains(show.Stdout, "PilotTrouble:") || !strings.Contains(show.Stdout, "no new pilot before") {
		t.Errorf("glean show:\n%s%s\nwant the pilot trouble", show.Stdout, show.Stderr)
	}
	if st := e.AsUser(t, "", filepath.Join(e.Bin, "glean"), "status"); !strings.Contains(st.Stdout, "queued (pilots die at start: glean show)") {
		t.Errorf("glean status:\n%s%s\nwant the job's state to point at glean show", st.Stdout, st.Stderr)
	}
	// Held: no pilot submitted for the next 20 s (the hold is a minute),
	// and nothing lost.
	held := r.Pilots
	var now *spool.Record
	if slurmtest.Poll(20*time.Second, 250*time.Millisecond, func() bool {
		now = e.Record(t, anchor)
		return now.Pilots != held || now.Tasks.Pending != 2 || !now.Active()
	}) == nil {
		t.Fatalf("during the hold: record %s %+v, %d pilots (%d before): want no new pilot, both tasks waiting\n%s",
			now.State, now.Tasks, now.Pilots, held, e.Logs())
	}
	t.Logf("%d pilots died at start before the hold; glean show: %s", held, r.PilotTrouble)

	restore()
	e.KillDaemon()
	e.Start(t)
	r = e.WaitState(t, anchor, time.Minute, spool.StateDone, spool.StateFailed)
	if r.State != spool.StateDone || r.Tasks.Done != 2 || r.PilotTrouble != "" {
		t.Errorf("record %s %+v trouble %q: want both tasks done and the trouble over", r.State, r.Tasks, r.PilotTrouble)
	}
	committed(t, e, anchor, 2)
}
