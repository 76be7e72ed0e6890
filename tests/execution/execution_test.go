// Package execution tests glean's execution path end to end on a real
// loopback Slurm 22.05 with 24 nodes: the wrapper, gleand (as the glean
// user), glean-helper (root), pilots running glean-agent as the job's
// owner, the journal and the anchor's end (issue 5's scenarios).
package execution

import (
	"fmt"
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

var (
	cl  *slurmtest.Cluster
	env *gleantest.Env
)

func TestMain(m *testing.M) {
	code := slurmtest.Main(m, slurmtest.Options{Nodes: 24}, &cl)
	if env != nil {
		env.Stop()
		if code == 0 {
			os.RemoveAll(env.Dir)
		}
	}
	os.Exit(code)
}

// setup returns the shared installation, started, with no job left.
func setup(t testing.TB) *gleantest.Env {
	t.Helper()
	slurmtest.Need(t, cl)
	if env == nil {
		var err error
		// GLEAN_NO_WATCH=1 (make test runs the suite both ways): rescan
		// only, as on NFS where inotify sees nothing other hosts write.
		if env, err = gleantest.New(cl, gleantest.Options{NoWatch: os.Getenv("GLEAN_NO_WATCH") == "1"}); err != nil {
			t.Fatal(err)
		}
		env.Start(t)
	}
	cl.CancelAll(t)
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(env.Logs())
		}
	})
	return env
}

// committed checks the journal: every index of 0..n-1 has exactly one
// final event, and returns the final events by index.
func committed(t *testing.T, e *gleantest.Env, anchor string, n int) map[int]spool.TaskEvent {
	t.Helper()
	final := map[int]spool.TaskEvent{}
	for _, ev := range e.TaskEvents(t, anchor) {
		if !ev.Final {
			continue
		}
		if _, dup := final[ev.Index]; dup {
			t.Errorf("task %d committed twice", ev.Index)
		}
		final[ev.Index] = ev
	}
	if len(final) != n {
		t.Errorf("%d tasks committed, want %d", len(final), n)
	}
	return final
}

// anchorEnds waits until the anchor ran and ended; it returns its state
// and exit code as Slurm shows them.
func anchorEnds(t *testing.T, e *gleantest.Env, anchor string) (string, string) {
	t.Helper()
	var state, exit string
	cl.WaitFor(t, 60*time.Second, "anchor "+anchor+" to end", func() bool {
		state, exit = e.SlurmState(t, anchor)
		return state == "COMPLETED" || state == "FAILED" || state == "CANCELLED" || state == "TIMEOUT"
	})
	return state, exit
}

const shortTask = `#!/bin/sh
echo "task $SLURM_ARRAY_TASK_ID of $SLURM_ARRAY_JOB_ID on $SLURMD_NODENAME pilot $SLURM_JOB_ID"
sleep 1
`

// 1. Idle cluster: an elastic array of 200 short tasks spreads over the
// idle nodes within a few scheduling cycles and completes; every task's
// output holds what it printed; the anchor ends COMPLETED, exit 0.
func TestIdleClusterSpread(t *testing.T) {
	e := setup(t)
	e.WriteFile(t, "spread.sh", shortTask, 0o755)
	e.WriteFile(t, "spread/.keep", "", 0o644) // Slurm does not create -o directories either
	start := time.Now()
	anchor := e.Sbatch(t, "", "--glean=mode=scavenger", "--array=0-199", "-o", "spread/%a.out", "spread.sh")
	// Pilots on every node, within a few cycles.
	cycle := cl.BFInterval(t)
	var spread time.Duration
	cl.WaitFor(t, 60*time.Second, "pilots on all 24 nodes", func() bool {
		out := cl.Run(t, "squeue", "-h", "-t", "R", "-p", "pilot", "-o", "%N")
		if len(strings.Fields(out)) >= 24 {
			spread = time.Since(start)
			return true
		}
		return false
	})
	t.Logf("pilots on 24 nodes %v after sbatch (%.0f scheduling cycles of %v)", spread.Round(time.Millisecond), spread.Seconds()/cycle.Seconds(), cycle)
	r := e.WaitState(t, anchor, 3*time.Minute, spool.StateDone, spool.StateFailed)
	if r.State != spool.StateDone || r.Tasks.Done != 200 {
		t.Fatalf("record %s %+v", r.State, r.Tasks)
	}
	final := committed(t, e, anchor, 200)
	nodes := map[string]bool{}
	for i := 0; i < 200; i++ {
		if final[i].Reason != spool.ReasonCompleted {
			t.Errorf("task %d: %+v", i, final[i])
		}
		nodes[final[i].Node] = true
		data, err := os.ReadFile(filepath.Join(e.Work, "spread", strconv.Itoa(i)+".out"))
		want := fmt.Sprintf("task %d of %s on %s pilot %s\n", i, anchor, final[i].Node, final[i].Pilot)
		if err != nil || string(data) != want {
			t.Errorf("task %d output %q (%v), want %q", i, data, err, want)
		}
	}
	if len(nodes) < 20 {
		t.Errorf("tasks ran on %d nodes, want (nearly) all 24", len(nodes))
	}
	if state, exit := anchorEnds(t, e, anchor); state != "COMPLETED" || exit != "0:0" {
		t.Errorf("anchor %s ended %s exit %s", anchor, state, exit)
	}
	summary, err := os.ReadFile(filepath.Join(e.Work, "spread", "summary.out"))
	if err != nil || !strings.Contains(string(summary), "200") {
		t.Errorf("summary %q, %v", summary, err)
	}
}

// 4. A failing task (exit 3) is recorded as failed after its retries; the
// anchor ends FAILED with exit code 3; afterok dependents of the anchor do
// not start, afternotok ones do.
func TestFailingTask(t *testing.T) {
	e := setup(t)
	e.WriteFile(t, "fail.sh", `#!/bin/sh
echo "task $SLURM_ARRAY_TASK_ID attempt $GLEAN_ATTEMPT"
[ "$SLURM_ARRAY_TASK_ID" = 2 ] && exit 3
exit 0
`, 0o755)
	e.WriteFile(t, "fail/.keep", "", 0o644)
	anchor := e.Sbatch(t, "", "--glean=mode=scavenger", "--array=0-3", "-o", "fail/%a.out", "fail.sh")
	ok := e.Sbatch(t, "", "--dependency=afterok:"+anchor, "-o", "/dev/null", "--wrap", "true")
	notok := e.Sbatch(t, "", "--dependency=afternotok:"+anchor, "-o", "/dev/null", "--wrap", "true")
	r := e.WaitState(t, anchor, 2*time.Minute, spool.StateDone, spool.StateFailed)
	if r.State != spool.StateFailed || r.Tasks.Done != 3 || r.Tasks.Failed != 1 || r.Exit != 3 {
		t.Fatalf("record %s exit %d %+v", r.State, r.Exit, r.Tasks)
	}
	final := committed(t, e, anchor, 4)
	if ev := final[2]; ev.Reason != spool.ReasonFailed || ev.Exit != 3 {
		t.Errorf("task 2: %+v", ev)
	}
	attempts := 0
	for _, ev := range e.TaskEvents(t, anchor) {
		if ev.Index == 2 {
			attempts++
		}
	}
	if attempts != 3 { // the first run and task_retries = 2
		t.Errorf("task 2 ran %d times, want 3", attempts)
	}
	if state, exit := anchorEnds(t, e, anchor); state != "FAILED" || exit != "3:0" {
		t.Errorf("anchor %s ended %s exit %s, want FAILED 3:0", anchor, state, exit)
	}
	cl.WaitFor(t, 30*time.Second, "the afternotok dependent to complete", func() bool {
		s, _ := e.SlurmState(t, notok)
		return s == "COMPLETED"
	})
	if s, _ := e.SlurmState(t, ok); s != "PENDING" {
		t.Errorf("afterok dependent %s is %s, want PENDING (never satisfied)", ok, s)
	}
	if reason := strings.TrimSpace(cl.Run(t, "squeue", "-h", "-j", ok, "-o", "%r")); reason != "DependencyNeverSatisfied" {
		t.Errorf("afterok dependent's reason %q", reason)
	}
}

// 3. Give way: a regular job submitted while pilots hold all nodes starts
// within the give-way latency (grace + KillWait + one scheduling cycle);
// the cancelled pilots' tasks are handed back and finish elsewhere. The
// tasks trap TERM and take 7 s to save their state (longer than the
// loopback's KillWait of 5 s, shorter than the grace of 10 s): glean
// signals the agents alone, so every one is checkpointed, none killed.
func TestGiveWay(t *testing.T) {
	e := setup(t)
	e.WriteFile(t, "long.sh", `#!/bin/sh
echo "task $SLURM_ARRAY_TASK_ID attempt $GLEAN_ATTEMPT restarted $GLEAN_RESTARTED on $SLURMD_NODENAME"
trap 'sleep 7; echo "saved on TERM"; exit 99' TERM
sleep 20 &
wait
`, 0o755)
	e.WriteFile(t, "long/.keep", "", 0o644)
	anchor := e.Sbatch(t, "", "--glean=mode=scavenger,checkpoint=yes", "--array=0-71", "-o", "long/%a.out", "long.sh")
	cl.WaitFor(t, 60*time.Second, "24 pilots running tasks", func() bool {
		r := e.Record(t, anchor)
		return r != nil && r.Tasks.Running >= 24
	})
	submitted := time.Now()
	regular := cl.Submit(t, "-N", "24", "-t", "1", "-o", "/dev/null", "--wrap", "sleep 3")
	var started time.Time
	cl.WaitFor(t, 90*time.Second, "the regular job to start", func() bool {
		if s, _ := e.SlurmState(t, regular); s == "RUNNING" || s == "COMPLETED" {
			started = time.Now()
			return true
		}
		return false
	})
	latency := started.Sub(submitted)
	limit := 10*time.Second + 5*time.Second + cl.BFInterval(t) // grace + KillWait + one cycle
	t.Logf("regular job started %v after submission (give-way latency %v; the tasks take 7 s to save)", latency.Round(time.Millisecond), limit)
	if latency > limit+2*time.Second { // polling and the round's own interval
		t.Errorf("regular job started %v after submission, over the give-way latency %v", latency, limit)
	}
	r := e.WaitState(t, anchor, 4*time.Minute, spool.StateDone, spool.StateFailed)
	if r.State != spool.StateDone {
		t.Fatalf("record %s %+v", r.State, r.Tasks)
	}
	committed(t, e, anchor, 72)
	gaveWay := 0
	for _, ev := range e.TaskEvents(t, anchor) {
		switch {
		case ev.Reason == spool.ReasonGiveWay && ev.Checkpointed:
			gaveWay++
		case ev.Reason != spool.ReasonCompleted:
			t.Errorf("task %d attempt %s: %s exit %d (checkpointed %v), want completed or checkpointed on give-way",
				ev.Index, ev.Attempt, ev.Reason, ev.Exit, ev.Checkpointed)
		}
	}
	if gaveWay < 24 {
		t.Errorf("%d attempts checkpointed on give-way, want one per node (24)", gaveWay)
	}
	t.Logf("%d attempts checkpointed and handed back on give-way, all 72 tasks completed once", gaveWay)
}

// A rejected entry's anchor (verified as the user's) is released: it runs
// as the user, writes the reason into the user's -o file and exits 1.
func TestRejectionWrittenToOutput(t *testing.T) {
	e := setup(t)
	e.WriteFile(t, "rej.sh", "#!/bin/sh\necho never\n", 0o755)
	e.WriteFile(t, "rej/.keep", "", 0o644)
	anchor := e.Sbatch(t, "", "--glean=mode=scavenger", "--mem=900000", "--array=0-1", "-o", "rej/%a.out", "rej.sh")
	r := e.WaitState(t, anchor, time.Minute, spool.StateRejected)
	if !strings.Contains(r.Reason, "impossible resources") {
		t.Fatalf("rejected for %q", r.Reason)
	}
	if state, exit := anchorEnds(t, e, anchor); state != "FAILED" || exit != "1:0" {
		t.Errorf("anchor %s ended %s exit %s, want FAILED 1:0", anchor, state, exit)
	}
	summary, err := os.ReadFile(filepath.Join(e.Work, "rej", "summary.out"))
	if err != nil || !strings.Contains(string(summary), "rejected") || !strings.Contains(string(summary), r.Reason) {
		t.Errorf("summary %q (%v), want the rejection and its reason %q", summary, err, r.Reason)
	}
	if _, err := os.Stat(filepath.Join(e.Work, "rej", "0.out")); err == nil {
		t.Errorf("a task of the rejected job ran")
	}
}

// srun inside a task runs as a step of the pilot, with the user's
// environment: the pilot runs with --export=NONE, which Slurm leaves in
// SLURM_EXPORT_ENV, but the task gets what a plain array element would
// (none for the default --export=ALL).
func TestSrunInTask(t *testing.T) {
	e := setup(t)
	e.WriteFile(t, "srun.sh", `#!/bin/sh
srun -N1 -n1 sh -c 'echo "step $SLURM_STEP_ID of job $SLURM_JOB_ID sees [$GLEAN_TEST_VAR] export [$SLURM_EXPORT_ENV]"'
`, 0o755)
	e.WriteFile(t, "srun/.keep", "", 0o644)
	r := e.AsUser(t, "", "env", "GLEAN_TEST_VAR=from the user's shell", "sbatch", "--parsable", "--glean=mode=scavenger",
		"--array=0-1", "-o", "srun/%a.out", "srun.sh")
	if r.Code != 0 {
		t.Fatalf("sbatch: %+v", r)
	}
	anchor, _, _ := strings.Cut(strings.TrimSpace(r.Stdout), ";")
	rec := e.WaitState(t, anchor, 2*time.Minute, spool.StateDone, spool.StateFailed)
	final := committed(t, e, anchor, 2)
	for i := range 2 {
		data, err := os.ReadFile(filepath.Join(e.Work, "srun", strconv.Itoa(i)+".out"))
		want := fmt.Sprintf("step 0 of job %s sees [from the user's shell] export []\n", final[i].Pilot)
		if err != nil || string(data) != want || final[i].Reason != spool.ReasonCompleted {
			t.Errorf("task %d (%s): output %q (%v), want %q", i, final[i].Reason, data, err, want)
		}
	}
	if rec.State != spool.StateDone {
		t.Errorf("record %s %+v", rec.State, rec.Tasks)
	}
}

// jobTime reads a time field (StartTime, EndTime) of a job.
func jobTime(t *testing.T, id, field string) time.Time {
	t.Helper()
	out := cl.Run(t, "scontrol", "-o", "show", "job", id)
	for _, f := range strings.Fields(out) {
		if v, ok := strings.CutPrefix(f, field+"="); ok {
			if sec, err := strconv.ParseInt(v, 10, 64); err == nil { // SLURM_TIME_FORMAT=%s
				return time.Unix(sec, 0)
			}
			if ts, err := time.ParseInLocation("2006-01-02T15:04:05", v, time.Local); err == nil {
				return ts
			}
		}
	}
	return time.Time{}
}

// 2 and 5. Fair mode on a busy cluster: a running 20-node job and a
// pending 24-node job that holds a reservation at its end. The elastic
// job's shadow array queues behind them; pilots get its tasks done on the
// 4 idle nodes meanwhile; when the work is all done the anchor ends
// COMPLETED and no shadow element is left pending; and the 24-node job
// starts when the 20-node job ends, as without glean (within the give-way
// latency).
func TestFairHarvestsAroundReservation(t *testing.T) {
	e := setup(t)
	e.WriteFile(t, "fair.sh", `#!/bin/sh
echo "task $SLURM_ARRAY_TASK_ID on $SLURMD_NODENAME pilot $SLURM_JOB_ID"
sleep 5
`, 0o755)
	e.WriteFile(t, "fair/.keep", "", 0o644)
	a := cl.Submit(t, "-N", "20", "-t", "4", "-o", "/dev/null", "--wrap", "sleep 100")
	cl.WaitFor(t, 30*time.Second, "the 20-node job to start", func() bool {
		s, _ := e.SlurmState(t, a)
		return s == "RUNNING"
	})
	b := cl.Submit(t, "-N", "24", "-t", "1", "-o", "/dev/null", "--wrap", "sleep 2")
	anchor := e.Sbatch(t, "", "--glean", "--array=0-29", "-o", "fair/%a.out", "fair.sh")
	r := e.WaitState(t, anchor, 90*time.Second, spool.StateDone, spool.StateFailed)
	if r.State != spool.StateDone || r.Mode != "fair" || r.Shadow == "" {
		t.Fatalf("record %s mode %s shadow %q %+v", r.State, r.Mode, r.Shadow, r.Tasks)
	}
	final := committed(t, e, anchor, 30)
	pilots := map[string]bool{}
	for _, p := range r.PilotJobs {
		pilots[p.ID] = true
	}
	for i, ev := range final {
		if !pilots[ev.Pilot] {
			t.Errorf("task %d ran in %s, not in a pilot (the shadow array could not have started yet)", i, ev.Pilot)
		}
	}
	if s, _ := e.SlurmState(t, b); s != "PENDING" {
		t.Errorf("the 24-node job is %s before the 20-node job ended", s)
	}
	if state, exit := anchorEnds(t, e, anchor); state != "COMPLETED" || exit != "0:0" {
		t.Errorf("anchor %s ended %s exit %s", anchor, state, exit)
	}
	cl.WaitFor(t, 30*time.Second, "no shadow element left pending", func() bool {
		return strings.TrimSpace(cl.Run(t, "squeue", "-h", "-t", "PD", "-j", r.Shadow, "-o", "%i")) == ""
	})
	cl.WaitFor(t, 3*time.Minute, "the 24-node job to start", func() bool {
		s, _ := e.SlurmState(t, b)
		return s == "RUNNING" || s == "COMPLETED"
	})
	aEnd, bStart := jobTime(t, a, "EndTime"), jobTime(t, b, "StartTime")
	limit := 10*time.Second + 5*time.Second + cl.BFInterval(t)
	t.Logf("20-node job ended %v, 24-node job started %v (%v later; give-way latency %v)", aEnd.Format(time.TimeOnly), bStart.Format(time.TimeOnly), bStart.Sub(aEnd), limit)
	if aEnd.IsZero() || bStart.Sub(aEnd) > limit {
		t.Errorf("the 24-node job started %v after the nodes came free, over the give-way latency %v", bStart.Sub(aEnd), limit)
	}
}

// 6. Jobs of another user whose names and comments imitate glean's (a
// pilot's name in the pilot partition, the real anchor's comment, a shadow
// comment on a held job) are never touched: not cancelled, held, released
// or counted as pilots.
func TestImitatorsUntouched(t *testing.T) {
	e := setup(t)
	e.WriteFile(t, "imit.sh", shortTask, 0o755)
	e.WriteFile(t, "imit/.keep", "", 0o644)
	anchor := e.Sbatch(t, "", "--glean=mode=scavenger", "--array=0-39", "-o", "imit/%a.out", "imit.sh")
	comment := strings.TrimSpace(cl.Run(t, "squeue", "-h", "-j", anchor, "-o", "%k"))
	if !strings.HasPrefix(comment, "glean:") {
		t.Fatalf("anchor comment %q", comment)
	}
	// root's jobs (another user than the job's owner).
	imitators := []string{
		cl.Submit(t, "-p", "pilot", "-J", "glean-pilot", "--comment", comment, "-t", "5", "-o", "/dev/null", "--wrap", "sleep 300"),
		cl.Submit(t, "-p", "glean", "-J", "imit", "--comment", comment, "-t", "5", "-o", "/dev/null", "--wrap", "sleep 300"),
		cl.Submit(t, "--hold", "-J", "glean-pilot", "--comment", strings.Replace(comment, "glean:", "glean-shadow:", 1), "-t", "5", "-o", "/dev/null", "--wrap", "sleep 300"),
	}
	r := e.WaitState(t, anchor, 2*time.Minute, spool.StateDone, spool.StateFailed)
	if r.State != spool.StateDone {
		t.Fatalf("record %s %+v", r.State, r.Tasks)
	}
	for _, p := range r.PilotJobs {
		for _, id := range imitators {
			if p.ID == id {
				t.Errorf("imitator %s recorded as a pilot", id)
			}
		}
	}
	anchorEnds(t, e, anchor)
	for _, id := range imitators {
		state, _ := e.SlurmState(t, id)
		reason := strings.TrimSpace(cl.Run(t, "squeue", "-h", "-j", id, "-o", "%r"))
		want := "RUNNING"
		if id == imitators[2] {
			want = "PENDING" // still on the user's own hold: never released
		}
		if state != want || (id == imitators[2]) != (reason == "JobHeldUser") {
			t.Errorf("imitator %s is %s (%s), want %s", id, state, reason, want)
		}
	}
	if log, _ := os.ReadFile(filepath.Join(e.Dir, "glean-helper.log")); strings.Contains(string(log), "job="+imitators[0]+" ") ||
		strings.Contains(string(log), "job="+imitators[1]+" ") || strings.Contains(string(log), "job="+imitators[2]+" ") {
		t.Errorf("the helper was asked to act on an imitator:\n%s", log)
	}
}

// scancel on the anchor cancels everything of the job: its pilots end,
// its running tasks are stopped, nothing more runs, the record says so.
func TestScancelAnchor(t *testing.T) {
	e := setup(t)
	e.WriteFile(t, "cancel.sh", `#!/bin/sh
echo "task $SLURM_ARRAY_TASK_ID"
sleep 60
`, 0o755)
	e.WriteFile(t, "cancel/.keep", "", 0o644)
	anchor := e.Sbatch(t, "", "--glean=mode=scavenger", "--array=0-99", "-o", "cancel/%a.out", "cancel.sh")
	e.WaitState(t, anchor, 60*time.Second, spool.StateRunning)
	if r := e.AsUser(t, "", "scancel", anchor); r.Code != 0 {
		t.Fatalf("scancel: %+v", r)
	}
	r := e.WaitState(t, anchor, 30*time.Second, spool.StateCancelled)
	cl.WaitFor(t, 30*time.Second, "every pilot of the job to end", func() bool {
		for _, p := range r.PilotJobs {
			if s, _ := e.SlurmState(t, p.ID); s == "RUNNING" || s == "PENDING" || s == "COMPLETING" {
				return false
			}
		}
		return true
	})
	if n := len(strings.Fields(cl.Run(t, "squeue", "-h", "-p", "pilot", "-o", "%A"))); n != 0 {
		t.Errorf("%d pilots left in the queue", n)
	}
	for _, ev := range e.TaskEvents(t, anchor) {
		if ev.Reason == spool.ReasonCompleted {
			t.Errorf("task %d completed after the cancel", ev.Index)
		}
	}
}
