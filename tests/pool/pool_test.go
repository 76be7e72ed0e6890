// Package pool checks, on the loopback Slurm, that the thesis mode's pool
// is carried out for real: a pilot whose job has no task left for it moves
// to the owner's next thesis job (policy.MovePilot), gleand records the
// move and tells the agent through the old job's control file, and the
// agent, as the same user, takes the next job's tasks.
package pool

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/glean-hpc/glean/sidecar/spool"
	"github.com/glean-hpc/glean/tests/gleantest"
	"github.com/glean-hpc/glean/tests/slurmtest"
)

var cl *slurmtest.Cluster

func TestMain(m *testing.M) {
	os.Exit(slurmtest.Main(m, slurmtest.Options{Nodes: 4}, &cl))
}

// Job A: 2 tasks of 20 s; job B, submitted just after: 16 tasks of 8 s.
// With no regular job pending the thesis mode takes the idle nodes (Case
// 1): A gets two pilots, B the other two. Once A's two tasks are running
// and none is left, A's pilots move to B and run B's tasks after their own.
func TestThesisPilotMoves(t *testing.T) {
	slurmtest.Need(t, cl)
	e, err := gleantest.New(cl, gleantest.Options{AllowThesis: true})
	if err != nil {
		t.Fatal(err)
	}
	e.Start(t)
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(e.Logs())
		}
		e.Stop()
		if !t.Failed() {
			os.RemoveAll(e.Dir)
		}
	})
	e.WriteFile(t, "a.sh", "#!/bin/sh\nsleep 20\n", 0o755)
	e.WriteFile(t, "b.sh", "#!/bin/sh\nsleep 8\n", 0o755)
	a := e.Sbatch(t, "", "--glean=mode=thesis", "--array=0-1", "-o", "/dev/null", "a.sh")
	b := e.Sbatch(t, "", "--glean=mode=thesis", "--array=0-15", "-o", "/dev/null", "b.sh")
	ra := e.WaitState(t, a, 3*time.Minute, spool.StateDone, spool.StateFailed)
	rb := e.WaitState(t, b, 3*time.Minute, spool.StateDone, spool.StateFailed)
	if ra.State != spool.StateDone || rb.State != spool.StateDone {
		t.Fatalf("A %s %+v, B %s %+v", ra.State, ra.Tasks, rb.State, rb.Tasks)
	}
	ra = e.Record(t, a) // as the daemon last wrote it
	moved := map[string]bool{}
	for _, p := range ra.PilotJobs {
		if p.MovedTo != "" {
			if p.MovedTo != rb.DirName() {
				t.Errorf("pilot %s of A moved to %s, not B (%s)", p.ID, p.MovedTo, rb.DirName())
			}
			moved[p.ID] = true
		}
	}
	if len(moved) == 0 {
		t.Fatalf("no pilot of A moved: %+v", ra.PilotJobs)
	}
	// The moved pilots ran tasks of B: one allocation, two jobs' tasks.
	ranB := 0
	ranOn := map[string]bool{} // the moved pilots that completed a task of B
	for _, ev := range e.TaskEvents(t, b) {
		if ev.Final && ev.Reason == spool.ReasonCompleted && moved[ev.Pilot] {
			ranB++
			ranOn[ev.Pilot] = true
		}
	}
	if ranB == 0 {
		t.Errorf("no task of B ran on a pilot moved from A (%v)", moved)
	}
	// Each moved pilot's log followed it to B's work directory, and each
	// part says where the other is.
	logOf := func(r *spool.Record, pilot string) string {
		data, err := os.ReadFile(filepath.Join(e.Spool, spool.UsersDir, strconv.Itoa(r.UID), spool.WorkDir, r.ID, spool.LogsDir, "pilot-"+pilot+".log"))
		if err != nil {
			t.Errorf("pilot %s: %v", pilot, err)
		}
		return string(data)
	}
	for id := range moved {
		if l := logOf(ra, id); !strings.Contains(l, "this log continues in the next job's work directory") {
			t.Errorf("pilot %s's log in A's work directory does not say where it continues:\n%s", id, l)
		}
		l := logOf(rb, id)
		if !strings.Contains(l, "continued from the log of this pilot's previous job") {
			t.Errorf("pilot %s's log in B's work directory does not say where it began:\n%s", id, l)
		}
		if ranOn[id] && !strings.Contains(l, "task=") {
			t.Errorf("pilot %s ran tasks of B, but its log in B's work directory has none:\n%s", id, l)
		}
	}
	for _, ev := range e.TaskEvents(t, a) {
		if ev.Final && ev.Reason != spool.ReasonCompleted {
			t.Errorf("A's task %d: %+v", ev.Index, ev)
		}
	}
	t.Logf("%d pilots of A moved to B and completed %d of B's 16 tasks", len(moved), ranB)
}
