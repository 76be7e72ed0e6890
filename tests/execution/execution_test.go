// Package execution tests glean's execution path end to end on a real
// loopback Slurm 22.05 with 24 nodes: the wrapper, gleand (as the glean
// user), glean-helper (root), pilots running glean-agent as the job's
// owner, the journal and the anchor's end (issue 5's scenarios).
package execution

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
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

// 1. Idle cluster: an elastic array of 200 short tasks spreads over all
// idle nodes within a few scheduling cycles and completes; every task's
// output holds what it printed; the anchor ends COMPLETED, exit 0.
func TestIdleClusterSpread(t *testing.T) {
	e := setup(t)
	e.WriteFile(t, "spread.sh", shortTask, 0o755)
	e.WriteFile(t, "spread/.keep", "", 0o644) // Slurm does not create -o directories either
	cycle := cl.BFInterval(t)
	start := time.Now()
	anchor := e.Sbatch(t, "", "--glean=mode=scavenger", "--array=0-199", "-o", "spread/%a.out", "spread.sh")
	// Pilots running on every node within a few cycles: the intake round
	// (at once through fsnotify, within daemon.rescan = 1 s without), one
	// helper request for the 24 pilots, and Slurm's start of each (the
	// main scheduler at once, the backfill scheduler within a cycle).
	const fewCycles = 5
	var spread time.Duration
	cl.WaitFor(t, 30*time.Second, "pilots on all 24 nodes", func() bool {
		nodes := map[string]bool{}
		for _, n := range strings.Fields(cl.Run(t, "squeue", "-h", "-t", "R", "-p", "pilot", "-o", "%N")) {
			nodes[n] = true
		}
		if len(nodes) == 24 {
			spread = time.Since(start)
			return true
		}
		return false
	})
	t.Logf("pilots on all 24 nodes %v after sbatch (%.1f scheduling cycles of %v)", spread.Round(time.Millisecond), spread.Seconds()/cycle.Seconds(), cycle)
	if spread > fewCycles*cycle {
		t.Errorf("pilots on all 24 nodes %v after sbatch, over %d scheduling cycles (%v)", spread.Round(time.Millisecond), fewCycles, fewCycles*cycle)
	}
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
	if len(nodes) != 24 {
		t.Errorf("tasks ran on %d nodes, want all 24", len(nodes))
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
	anchor := e.Sbatch(t, "", "--glean=mode=scavenger,checkpoint=yes", "--array=0-47", "-o", "long/%a.out", "long.sh")
	cl.WaitFor(t, 60*time.Second, "24 pilots running tasks", func() bool {
		r := e.Record(t, anchor)
		return r != nil && r.Tasks.Running >= 24
	})
	latency := regularStartsInTime(t, e, "-N", "24", "-t", "1", "-o", "/dev/null", "--wrap", "sleep 3")
	t.Logf("regular job started %v after submission (give-way latency %v; the tasks take 7 s to save)", latency.Round(time.Millisecond), giveWayLatency(t))
	r := e.WaitState(t, anchor, 4*time.Minute, spool.StateDone, spool.StateFailed)
	if r.State != spool.StateDone {
		t.Fatalf("record %s %+v", r.State, r.Tasks)
	}
	committed(t, e, anchor, 48)
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
	t.Logf("%d attempts checkpointed and handed back on give-way, all 48 tasks completed once", gaveWay)
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
		// A step of the pilot that ran the task (its n-th step: a pilot runs
		// several tasks).
		want := regexp.MustCompile(`^step [0-9]+ of job ` + final[i].Pilot + ` sees \[from the user's shell\] export \[\]\n$`)
		if err != nil || !want.Match(data) || final[i].Reason != spool.ReasonCompleted {
			t.Errorf("task %d (%s): output %q (%v), want %s", i, final[i].Reason, data, err, want)
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

// giveWayLatency is the promise on the loopback cluster: grace
// (10 s) + KillWait (5 s) + one scheduling cycle.
func giveWayLatency(t *testing.T) time.Duration {
	return 10*time.Second + 5*time.Second + cl.BFInterval(t)
}

// regularStartsInTime submits a regular job (sbatch args) that needs
// pilots' nodes, waits for it to start, and fails the test if that took
// longer than the give-way latency; it returns how long it took.
func regularStartsInTime(t *testing.T, e *gleantest.Env, args ...string) time.Duration {
	t.Helper()
	submitted := time.Now()
	regular := cl.Submit(t, args...)
	var started time.Time
	cl.WaitFor(t, 90*time.Second, "the regular job to start", func() bool {
		if s, _ := e.SlurmState(t, regular); s == "RUNNING" || s == "COMPLETED" {
			started = time.Now()
			return true
		}
		return false
	})
	latency := started.Sub(submitted)
	if limit := giveWayLatency(t); latency > limit+2*time.Second { // polling and the round's own interval
		t.Errorf("regular job started %v after submission, over the give-way latency %v", latency, limit)
	}
	return latency
}

// starts are the start times of a job's (or an array's) elements that
// started (got nodes: an element cancelled while pending has a start time
// too, the cancel's, but no nodes), earliest first.
func starts(t *testing.T, id string) []time.Time {
	t.Helper()
	var out []time.Time
	for _, l := range strings.Split(strings.TrimSpace(cl.Run(t, "squeue", "-h", "-r", "-t", "all", "-j", id, "-o", "%S %N")), "\n") {
		at, nodes, _ := strings.Cut(l, " ")
		sec, err := strconv.ParseInt(at, 10, 64)
		if err != nil || sec == 0 || strings.TrimSpace(nodes) == "" || nodes == "(null)" {
			continue
		}
		out = append(out, time.Unix(sec, 0))
	}
	slices.SortFunc(out, time.Time.Compare)
	return out
}

// 2. Fair mode on a busy cluster: a running 20-node job (A) and a pending
// 24-node job (B) that holds a reservation at A's planned end (its time
// limit, 4 minutes). A fair elastic job of 30 tasks of 15 s (450 s of work
// on 4 idle nodes) outlasts A, which ends early, after 45 s: its pilots,
// sized to B's reservation, hold the 4 nodes when B could start, and must
// give way. Without glean B starts when A ends (the loopback cluster's
// main scheduler starts it at A's end: nothing else is queued, and
// TestFairShadowQueuesBehind measures the plain-Slurm start of a job
// queued the same way at 0-1 s), so B must start within the give-way
// latency of A's end. Meanwhile the pilots get tasks done while the shadow
// array waits behind B, whose elements do not start before B.
func TestFairHarvestsAroundReservation(t *testing.T) {
	e := setup(t)
	e.WriteFile(t, "fair.sh", `#!/bin/sh
echo "task $SLURM_ARRAY_TASK_ID on $SLURMD_NODENAME pilot $SLURM_JOB_ID"
sleep 15
`, 0o755)
	e.WriteFile(t, "fair/.keep", "", 0o644)
	a := cl.Submit(t, "-N", "20", "-t", "4", "-o", "/dev/null", "--wrap", "sleep 45")
	cl.WaitFor(t, 30*time.Second, "the 20-node job to start", func() bool {
		s, _ := e.SlurmState(t, a)
		return s == "RUNNING"
	})
	b := cl.Submit(t, "-N", "24", "-t", "1", "-o", "/dev/null", "--wrap", "sleep 5")
	anchor := e.Sbatch(t, "", "--glean", "--array=0-29", "-o", "fair/%a.out", "fair.sh")
	cl.WaitFor(t, 90*time.Second, "the 24-node job to start", func() bool {
		s, _ := e.SlurmState(t, b)
		return s == "RUNNING" || s == "COMPLETED"
	})
	aEnd, bStart := jobTime(t, a, "EndTime"), jobTime(t, b, "StartTime")
	harvested := 0
	r := e.Record(t, anchor)
	pilots := map[string]bool{}
	for _, p := range r.PilotJobs {
		pilots[p.ID] = true
	}
	for _, ev := range e.TaskEvents(t, anchor) {
		if ev.Reason == spool.ReasonCompleted && pilots[ev.Pilot] && !ev.End.After(aEnd) {
			harvested++
		}
	}
	limit := giveWayLatency(t)
	t.Logf("A ended %v, B started %v (%v later; give-way latency %v); %d tasks done by pilots before A ended",
		aEnd.Format(time.TimeOnly), bStart.Format(time.TimeOnly), bStart.Sub(aEnd), limit, harvested)
	if aEnd.IsZero() || bStart.Sub(aEnd) > limit {
		t.Errorf("B started %v after A ended, over the give-way latency %v", bStart.Sub(aEnd), limit)
	}
	if harvested < 4 {
		t.Errorf("%d tasks done by pilots on the 4 idle nodes while A ran, want at least 4", harvested)
	}
	r = e.WaitState(t, anchor, 3*time.Minute, spool.StateDone, spool.StateFailed)
	if r.State != spool.StateDone || r.Mode != "fair" || r.Shadow == "" {
		t.Fatalf("record %s mode %s shadow %q %+v", r.State, r.Mode, r.Shadow, r.Tasks)
	}
	committed(t, e, anchor, 30)
	if s := starts(t, r.Shadow); len(s) > 0 && s[0].Before(bStart) {
		t.Errorf("a shadow element started %v, before B (%v): it was queued behind B", s[0].Format(time.TimeOnly), bStart.Format(time.TimeOnly))
	}
	if state, exit := anchorEnds(t, e, anchor); state != "COMPLETED" || exit != "0:0" {
		t.Errorf("anchor %s ended %s exit %s", anchor, state, exit)
	}
	cl.WaitFor(t, 30*time.Second, "no shadow element left pending", func() bool {
		return strings.TrimSpace(cl.Run(t, "squeue", "-h", "-t", "PD", "-j", r.Shadow, "-o", "%i")) == ""
	})
}

// 5. Fair mode: an elastic job whose shadow array must queue behind
// regular jobs (a 20-node job R1 running 25 s and a pending 24-node job R2) gets
// tasks done on the idle nodes meanwhile, and its shadow elements start no
// later than the same array submitted without glean (within the give-way
// latency: glean's pilots may have to give way to R2 first). The same
// scenario runs twice, with Slurm's own sbatch and with glean. In the glean
// run a second, small elastic job submitted first is all done by pilots
// while R1 runs: its anchor ends COMPLETED within seconds and none of its
// shadow elements is left pending.
func TestFairShadowQueuesBehind(t *testing.T) {
	e := setup(t)
	e.WriteFile(t, "q-small.sh", "#!/bin/sh\necho small $SLURM_ARRAY_TASK_ID\nsleep 2\n", 0o755)
	e.WriteFile(t, "q-work.sh", "#!/bin/sh\necho work $SLURM_ARRAY_TASK_ID\nsleep 10\n", 0o755)
	e.WriteFile(t, "q/.keep", "", 0o644)
	real, err := gleantest.RealSbatch()
	if err != nil {
		t.Fatal(err)
	}
	// run submits R1, R2 and then the small and the big array (plain, or
	// elastic with their own -o) and returns when the big array's first
	// element started: how long after R1 started, and the ids.
	run := func(glean bool) (time.Duration, string, string) {
		cl.CancelAll(t)
		r1 := cl.Submit(t, "-N", "20", "-t", "4", "-o", "/dev/null", "--wrap", "sleep 25")
		cl.WaitFor(t, 30*time.Second, "R1 to start", func() bool { s, _ := e.SlurmState(t, r1); return s == "RUNNING" })
		cl.Submit(t, "-N", "24", "-t", "1", "-o", "/dev/null", "--wrap", "sleep 3")
		small, big := "", ""
		if glean {
			small = e.Sbatch(t, "", "--glean", "--array=0-3", "-o", "q/small-%a.out", "q-small.sh")
			big = e.Sbatch(t, "", "--glean", "--array=0-23", "-o", "q/work-%a.out", "q-work.sh")
		} else {
			sb := func(args ...string) string {
				r := e.AsUser(t, "", real, append([]string{"--parsable"}, args...)...)
				if r.Code != 0 {
					t.Fatalf("sbatch: %+v", r)
				}
				id, _, _ := strings.Cut(strings.TrimSpace(r.Stdout), ";")
				return id
			}
			small = sb("--array=0-3", "-o", "/dev/null", "q-small.sh")
			big = sb("--array=0-23", "-o", "/dev/null", "q-work.sh")
		}
		first := big
		if glean {
			cl.WaitFor(t, 30*time.Second, "the job taken in", func() bool { r := e.Record(t, big); return r != nil && r.Shadow != "" })
			first = e.Record(t, big).Shadow
		}
		var s []time.Time
		cl.WaitFor(t, 3*time.Minute, "the array's first element to start", func() bool { s = starts(t, first); return len(s) > 0 })
		return s[0].Sub(jobTime(t, r1, "StartTime")), small, big
	}
	plain, _, _ := run(false)
	withGlean, small, big := run(true)
	limit := giveWayLatency(t)
	t.Logf("the 24-element array's first element started %v after R1 started with plain Slurm, %v with glean (give-way latency %v)",
		plain, withGlean, limit)
	if withGlean > plain+limit {
		t.Errorf("with glean the shadow array started %v after R1, plain Slurm's array %v: later by more than the give-way latency %v",
			withGlean, plain, limit)
	}

	// The small job: all done by pilots while R1 ran, anchor COMPLETED
	// within seconds of its last task, no shadow element left pending.
	rs := e.WaitState(t, small, 2*time.Minute, spool.StateDone, spool.StateFailed)
	pilots := map[string]bool{}
	for _, p := range rs.PilotJobs {
		pilots[p.ID] = true
	}
	var last time.Time
	for i, ev := range committed(t, e, small, 4) {
		if ev.Reason != spool.ReasonCompleted || !pilots[ev.Pilot] {
			t.Errorf("small task %d: %s in %s, want completed in a pilot", i, ev.Reason, ev.Pilot)
		}
		if ev.End.After(last) {
			last = ev.End
		}
	}
	if state, exit := anchorEnds(t, e, small); state != "COMPLETED" || exit != "0:0" {
		t.Errorf("small job's anchor ended %s exit %s", state, exit)
	}
	if end := jobTime(t, small, "EndTime"); end.Sub(last) > 10*time.Second {
		t.Errorf("small job's anchor ended %v after its last task, want within seconds", end.Sub(last))
	}
	if n := strings.TrimSpace(cl.Run(t, "squeue", "-h", "-t", "PD", "-j", rs.Shadow, "-o", "%i")); n != "" {
		t.Errorf("shadow elements of the small job left pending: %s", n)
	}
	if got := len(starts(t, rs.Shadow)); got != 0 {
		t.Errorf("%d shadow elements of the small job ran, want none (the pilots did the work)", got)
	}

	// The big job: pilots did some of it while the shadow array waited.
	rb := e.WaitState(t, big, 3*time.Minute, spool.StateDone, spool.StateFailed)
	bigPilots := map[string]bool{}
	for _, p := range rb.PilotJobs {
		bigPilots[p.ID] = true
	}
	byPilots := 0
	for _, ev := range committed(t, e, big, 24) {
		if bigPilots[ev.Pilot] {
			byPilots++
		}
	}
	if byPilots == 0 {
		t.Errorf("no task of the big job ran in a pilot while its shadow array waited")
	}
	t.Logf("big job: %d of 24 tasks done by pilots, the rest by its shadow elements", byPilots)
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
// its running tasks are stopped, nothing more runs, the record says so;
// in fair mode its shadow array (pending and running elements) too.
func TestScancelAnchor(t *testing.T) {
	for _, mode := range []string{"scavenger", "fair"} {
		t.Run(mode, func(t *testing.T) {
			e := setup(t)
			e.WriteFile(t, "cancel.sh", `#!/bin/sh
echo "task $SLURM_ARRAY_TASK_ID"
sleep 60
`, 0o755)
			e.WriteFile(t, "cancel/.keep", "", 0o644)
			anchor := e.Sbatch(t, "", "--glean=mode="+mode, "--array=0-99", "-o", "cancel/%a.out", "cancel.sh")
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
			if mode == "fair" {
				if r.Shadow == "" {
					t.Fatal("no shadow array recorded")
				}
				cl.WaitFor(t, 30*time.Second, "the shadow array to be gone", func() bool {
					return strings.TrimSpace(cl.Run(t, "squeue", "-h", "-r", "-j", r.Shadow, "-o", "%i")) == ""
				})
				if states := cl.Run(t, "squeue", "-h", "-r", "-t", "all", "-j", r.Shadow, "-o", "%T"); !strings.Contains(states, "CANCELLED") {
					t.Errorf("shadow array %s states %q, want CANCELLED", r.Shadow, states)
				}
			}
			for _, ev := range e.TaskEvents(t, anchor) {
				if ev.Reason == spool.ReasonCompleted {
					t.Errorf("task %d completed after the cancel", ev.Index)
				}
			}
		})
	}
}
