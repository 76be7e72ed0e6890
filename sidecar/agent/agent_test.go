package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/glean-hpc/glean/sidecar/spool"
)

// Two agents share a job of 20 tasks with a daemon committing results:
// every task runs exactly once, every output file holds what its task
// printed, and both agents end when the job is finished.
func TestTwoAgentsRunEveryTaskOnce(t *testing.T) {
	const n = 20
	f := newFixture(t, n, "#!/bin/sh\necho \"task $SLURM_ARRAY_TASK_ID of $SLURM_ARRAY_JOB_ID on $SLURM_JOB_ID\"\necho oops >&2\n", nil, nil)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	f.commit(ctx, &wg)
	a1 := runAgent(t, context.Background(), f.agent("101", 2, nil))
	a2 := runAgent(t, context.Background(), f.agent("102", 3, nil))
	why1, why2 := a1(), a2()
	cancel()
	wg.Wait()
	if why1 != EndFinished || why2 != EndFinished {
		t.Errorf("agents ended %q, %q; want %q", why1, why2, EndFinished)
	}
	runs := map[int]int{}
	for _, ev := range f.events() {
		runs[ev.Index]++
		if ev.Reason != spool.ReasonCompleted {
			t.Errorf("task %d: %s", ev.Index, ev.Reason)
		}
	}
	for i := 0; i < n; i++ {
		if runs[i] != 1 {
			t.Errorf("task %d ran %d times", i, runs[i])
		}
		got := readFile(t, filepath.Join(f.cwd, fmt.Sprintf("slurm-%s_%d.out", testAnchor, i)))
		var pilot string
		if _, err := fmt.Sscanf(got, "task "+strconv.Itoa(i)+" of "+testAnchor+" on %s\noops\n", &pilot); err != nil || (pilot != "101" && pilot != "102") {
			t.Errorf("task %d printed %q", i, got)
		}
	}
}

// On SIGTERM (ctx cancelled) a task that traps TERM and exits 99 is
// checkpointed; one that ignores TERM is killed after the grace and
// handed back. No lease is left.
func TestTermCheckpointAndHandBack(t *testing.T) {
	ready := t.TempDir()
	script := `#!/bin/sh
if [ "$SLURM_ARRAY_TASK_ID" = 0 ]; then trap 'exit 99' TERM; else trap '' TERM; fi
touch "$READY/$SLURM_ARRAY_TASK_ID"
while :; do sleep 0.05; done
`
	f := newFixture(t, 2, script, []string{"READY=" + ready}, nil)
	ctx, cancel := context.WithCancel(context.Background())
	wait := runAgent(t, ctx, f.agent("7", 2, func(o *Options) { o.Grace = 300 * time.Millisecond }))
	waitFor(t, "both tasks ready", func() bool {
		_, e0 := os.Stat(filepath.Join(ready, "0"))
		_, e1 := os.Stat(filepath.Join(ready, "1"))
		return e0 == nil && e1 == nil
	})
	start := time.Now()
	cancel()
	if why := wait(); why != EndSignaled {
		t.Errorf("ended %q, want %q", why, EndSignaled)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the agent took %v to stop", d)
	}
	res := f.results()
	sort.Slice(res, func(i, j int) bool { return res[i].Task < res[j].Task })
	if len(res) != 2 {
		t.Fatalf("results: %+v", res)
	}
	if r := res[0]; r.Outcome != spool.OutcomeCheckpointed || r.Exit != spool.CheckpointExit {
		t.Errorf("task 0: %+v, want checkpointed exit 99", r)
	}
	if r := res[1]; r.Outcome != spool.OutcomeHandedBack || r.Signal != 9 || r.Exit != 137 {
		t.Errorf("task 1: %+v, want handed-back after SIGKILL", r)
	}
	for _, r := range res {
		if r.Pilot != "7" || r.Node != "node1" || len(r.Attempt) != 16 || !r.End.After(r.Start) {
			t.Errorf("result fields: %+v", r)
		}
	}
}

// How long tasks get after TERM depends on who sent it: glean giving way
// (recorded before it signals the agent alone) leaves the whole grace;
// Slurm's time-limit warning, which may come up to 60 s early, lets the
// tasks run on until end - grace and then gives the grace, done before the
// end's KILL; any other scancel KillWait less a reserve.
func TestStopGrace(t *testing.T) {
	t0 := time.Unix(1_800_000_000, 0)
	for _, tc := range []struct {
		name        string
		why         string
		gaveWay     bool
		end         time.Time
		killWait    time.Duration
		hold, grace time.Duration
		cause       string
	}{
		{"give-way: the whole grace, KillWait shorter", EndSignaled, true, time.Time{}, 5 * time.Second, 0, 10 * time.Second, "give-way"},
		{"time-limit warning on time: the grace", EndSignaled, false, t0.Add(10 * time.Second), 5 * time.Second, 0, 10 * time.Second, "time-limit"},
		{"time-limit warning 33 s early: TERM at end - grace", EndSignaled, false, t0.Add(43 * time.Second), 5 * time.Second, 33 * time.Second, 10 * time.Second, "time-limit"},
		{"time-limit, warned late: until the end's KILL less the reserve", EndSignaled, false, t0.Add(2 * time.Second), 5 * time.Second, 0, 5 * time.Second, "time-limit"},
		{"scancel: KillWait less the reserve", EndSignaled, false, t0.Add(time.Hour), 5 * time.Second, 0, 3 * time.Second, "scancel"},
		{"scancel, KillWait unknown: Slurm's default 30 s", EndSignaled, false, time.Time{}, 0, 0, 10 * time.Second, "scancel"},
		{"stopped by the daemon", EndStopped, true, time.Time{}, 5 * time.Second, 0, 3 * time.Second, "scancel"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := &Agent{opt: Options{Grace: 10 * time.Second, GaveWay: func() bool { return tc.gaveWay }},
				lim: Limits{End: tc.end, KillWait: tc.killWait}}
			hold, grace, _, cause := a.stopGrace(tc.why, t0)
			if hold != tc.hold || grace != tc.grace || cause != tc.cause {
				t.Errorf("stopGrace = hold %v grace %v %s, want %v %v %s", hold, grace, cause, tc.hold, tc.grace, tc.cause)
			}
		})
	}
}

// Slurm's time-limit warning may come up to 60 s early: a task that ends
// before end - grace completes (it is not TERMed, and not taken for
// stopped), one that would run past it gets TERM then.
func TestEarlyTimeLimitWarning(t *testing.T) {
	ready := t.TempDir()
	script := `#!/bin/sh
touch "$READY/$SLURM_ARRAY_TASK_ID"
if [ "$SLURM_ARRAY_TASK_ID" = 0 ]; then sleep 0.5; exit 0; fi
trap 'exit 99' TERM
while :; do sleep 0.05; done
`
	f := newFixture(t, 2, script, []string{"READY=" + ready}, nil)
	ctx, cancel := context.WithCancel(context.Background())
	end := time.Now().Add(4 * time.Second)
	wait := runAgent(t, ctx, f.agent("18", 2, func(o *Options) {
		o.Grace, o.End, o.KillWait = time.Second, end, 5*time.Second
	}))
	waitFor(t, "both tasks started", func() bool {
		_, e0 := os.Stat(filepath.Join(ready, "0"))
		_, e1 := os.Stat(filepath.Join(ready, "1"))
		return e0 == nil && e1 == nil
	})
	cancel() // the warning, 3 s before end - grace
	if why := wait(); why != EndSignaled {
		t.Errorf("ended %q", why)
	}
	got := map[int]spool.Result{}
	for _, r := range f.results() {
		got[r.Task] = r
	}
	if r := got[0]; r.Outcome != spool.OutcomeExited || r.Exit != 0 {
		t.Errorf("task 0: %+v, want completed (it ended before end - grace)", r)
	}
	if r := got[1]; r.Outcome != spool.OutcomeCheckpointed || r.End.Before(end.Add(-time.Second-100*time.Millisecond)) {
		t.Errorf("task 1: %+v, want checkpointed, TERMed at end - grace (%v)", r, end.Add(-time.Second))
	}
}

// A task that saves for 1.5 s after TERM is checkpointed when glean gave
// way (grace 3 s), and KILLed half a second in when the pilot was
// scancelled (KillWait 1 s less the reserve).
func TestGiveWayGrace(t *testing.T) {
	for _, tc := range []struct {
		name    string
		gaveWay bool
		outcome string
	}{
		{"give-way", true, spool.OutcomeCheckpointed},
		{"scancel", false, spool.OutcomeHandedBack},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ready := t.TempDir()
			script := `#!/bin/sh
trap 'sleep 1.5; exit 99' TERM
touch "$READY/0"
while :; do sleep 0.05; done
`
			f := newFixture(t, 1, script, []string{"READY=" + ready}, nil)
			ctx, cancel := context.WithCancel(context.Background())
			wait := runAgent(t, ctx, f.agent("17", 1, func(o *Options) {
				o.Grace, o.KillWait = 3*time.Second, time.Second
				o.GaveWay = func() bool { return tc.gaveWay }
			}))
			waitFor(t, "the task ready", func() bool { _, err := os.Stat(filepath.Join(ready, "0")); return err == nil })
			cancel()
			if why := wait(); why != EndSignaled {
				t.Errorf("ended %q", why)
			}
			if res := f.results(); len(res) != 1 || res[0].Outcome != tc.outcome {
				t.Errorf("results %+v, want %s", res, tc.outcome)
			}
		})
	}
}

// The daemon's stop makes the agent TERM its tasks and hand them back; a
// task killed by a signal the agent did not send is "signaled"; a failing
// task is "exited" with its code.
func TestStopSignaledExited(t *testing.T) {
	ready := t.TempDir()
	script := `#!/bin/sh
case $SLURM_ARRAY_TASK_ID in
0) exit 3 ;;
1) kill -USR1 $$ ;;
esac
touch "$READY/$SLURM_ARRAY_TASK_ID"
while :; do sleep 0.05; done
`
	f := newFixture(t, 3, script, []string{"READY=" + ready}, nil)
	wait := runAgent(t, context.Background(), f.agent("8", 3, nil))
	waitFor(t, "task 2 running", func() bool { _, err := os.Stat(filepath.Join(ready, "2")); return err == nil })
	waitFor(t, "results of tasks 0 and 1", func() bool {
		ws, _ := f.sp.ScanWork(f.uid, f.id)
		return len(ws.Results) == 2
	})
	if err := f.recs.PutControl(f.rec, spool.Control{Stop: true}); err != nil {
		t.Fatal(err)
	}
	if why := wait(); why != EndStopped {
		t.Errorf("ended %q, want %q", why, EndStopped)
	}
	got := map[int]spool.Result{}
	for _, r := range f.results() {
		got[r.Task] = r
	}
	if r := got[0]; r.Outcome != spool.OutcomeExited || r.Exit != 3 {
		t.Errorf("task 0: %+v", r)
	}
	if r := got[1]; r.Outcome != spool.OutcomeSignaled || r.Signal != 10 || r.Exit != 138 {
		t.Errorf("task 1: %+v", r)
	}
	if r := got[2]; r.Outcome != spool.OutcomeHandedBack || r.Signal != 15 {
		t.Errorf("task 2: %+v", r)
	}
}

// A retired pilot takes no more tasks and ends when its task ends.
func TestRetire(t *testing.T) {
	dir := t.TempDir()
	script := `#!/bin/sh
touch "$DIR/started.$SLURM_ARRAY_TASK_ID"
while [ ! -e "$DIR/go" ]; do sleep 0.01; done
`
	f := newFixture(t, 5, script, []string{"DIR=" + dir}, nil)
	wait := runAgent(t, context.Background(), f.agent("9", 1, nil))
	waitFor(t, "task 0 started", func() bool { _, err := os.Stat(filepath.Join(dir, "started.0")); return err == nil })
	if err := f.recs.PutControl(f.rec, spool.Control{Retire: []string{"5", "9"}}); err != nil {
		t.Fatal(err)
	}
	// A heartbeat stamped after the control was written comes from a
	// loop round that read it (each round reads the control, then beats).
	written := time.Now()
	w := f.work()
	waitFor(t, "a heartbeat after the retire", func() bool {
		st, err := os.Stat(w.LeasePath(0))
		return err == nil && st.ModTime().After(written)
	})
	if err := os.WriteFile(filepath.Join(dir, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if why := wait(); why != EndRetired {
		t.Errorf("ended %q, want %q", why, EndRetired)
	}
	if res := f.results(); len(res) != 1 || res[0].Task != 0 || res[0].Outcome != spool.OutcomeExited {
		t.Errorf("results %+v, want task 0 only", res)
	}
}

// A shadow element that finds nothing to take, and no pilot's task to
// stand by for, exits at once; a pilot waits for the idle timeout.
func TestShadowExitsWithoutWork(t *testing.T) {
	f := newFixture(t, 1, "#!/bin/sh\nexit 0\n", nil, nil)
	// The one task is in flight on another shadow element: its lease exists.
	if _, err := f.work().Take([]int{0}, spool.Lease{Attempt: "x", Pilot: "1", Shadow: true}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if why := runAgent(t, context.Background(), f.agent("11", 1, func(o *Options) { o.Shadow = true; o.Idle = time.Hour }))(); why != EndNoWork {
		t.Errorf("shadow ended %q, want %q", why, EndNoWork)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("shadow took %v", d)
	}
	if why := runAgent(t, context.Background(), f.agent("12", 1, nil))(); why != EndIdle {
		t.Errorf("pilot ended %q, want %q", why, EndIdle)
	}
}

// A task whose output file cannot be opened is reported not-started, and
// after a few such the agent gives up rather than burn every task.
func TestNotStarted(t *testing.T) {
	f := newFixture(t, 10, "#!/bin/sh\nexit 0\n", nil, func(e *spool.Entry) { e.Output = "/nonexistent/dir/out-%a" })
	why, err := f.agent("13", 1, nil).Run(context.Background())
	if why != EndFailed || err == nil {
		t.Errorf("ended %q, %v; want %q and an error", why, err, EndFailed)
	}
	res := f.results()
	if len(res) != maxNotStart {
		t.Fatalf("%d results, want %d", len(res), maxNotStart)
	}
	for _, r := range res {
		if r.Outcome != spool.OutcomeNotStarted || !strings.Contains(r.Detail, "output file") {
			t.Errorf("result %+v", r)
		}
	}
}

// No task starts when it would not end before the allocation's end minus
// the grace.
func TestNoTimeLeft(t *testing.T) {
	f := newFixture(t, 2, "#!/bin/sh\nexit 0\n", nil, func(e *spool.Entry) { e.Resources.TimeLimit = 10 })
	why := runAgent(t, context.Background(), f.agent("14", 1, func(o *Options) { o.End = time.Now().Add(5 * time.Minute) }))()
	if why != EndNoTime {
		t.Errorf("ended %q, want %q", why, EndNoTime)
	}
	if res := f.results(); len(res) != 0 {
		t.Errorf("results %+v", res)
	}
}

// The allocation's end (a squeue on 22.05) is read in the background: the
// first task starts before it is known; once known, a task that would not
// fit is not started.
func TestLearnInBackground(t *testing.T) {
	dir := t.TempDir()
	script := `#!/bin/sh
touch "$DIR/started.$SLURM_ARRAY_TASK_ID"
while [ ! -e "$DIR/go" ]; do sleep 0.01; done
`
	f := newFixture(t, 3, script, []string{"DIR=" + dir}, func(e *spool.Entry) { e.Resources.TimeLimit = 10 })
	release := make(chan struct{})
	wait := runAgent(t, context.Background(), f.agent("15", 1, func(o *Options) {
		o.Learn = func(ctx context.Context) (Limits, error) {
			<-release // Slurm is slow to answer
			return Limits{End: time.Now().Add(time.Minute), KillWait: 5 * time.Second}, nil
		}
	}))
	waitFor(t, "task 0 started while the end is being read", func() bool {
		_, err := os.Stat(filepath.Join(dir, "started.0"))
		return err == nil
	})
	close(release)
	if err := os.WriteFile(filepath.Join(dir, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if why := wait(); why != EndNoTime {
		t.Errorf("ended %q, want %q (a 10-minute task does not fit in the minute left)", why, EndNoTime)
	}
	if res := f.results(); len(res) != 1 || res[0].Task != 0 || res[0].Outcome != spool.OutcomeExited {
		t.Errorf("results %+v, want task 0 only", res)
	}
}

// A shadow element is the plain array element: its first task runs even
// though its time limit is the task's own -t (so it never "fits" with the
// grace to spare); a second one does not start.
func TestShadowRunsItsFirstTask(t *testing.T) {
	f := newFixture(t, 2, "#!/bin/sh\nexit 0\n", nil, func(e *spool.Entry) { e.Resources.TimeLimit = 10 })
	why := runAgent(t, context.Background(), f.agent("16", 1, func(o *Options) {
		o.Shadow, o.End = true, time.Now().Add(10*time.Minute)
	}))()
	if why != EndNoTime {
		t.Errorf("ended %q, want %q", why, EndNoTime)
	}
	if res := f.results(); len(res) != 1 || res[0].Outcome != spool.OutcomeExited {
		t.Errorf("results %+v, want one completed task", res)
	}
}

// Tasks of 2 CPUs on 4 CPUs run two at a time, never three.
func TestPackingRunsTwoAtATime(t *testing.T) {
	script := `#!/bin/sh
date +%s.%N
sleep 0.3
date +%s.%N
`
	f := newFixture(t, 6, script, nil, func(e *spool.Entry) {
		e.Resources = spool.Resources{CPUsPerTask: 2, NTasks: 1, CPUs: 2}
	})
	if why := runAgent(t, context.Background(), f.agent("15", 4, nil))(); why != EndIdle {
		t.Errorf("ended %q", why)
	}
	type ev struct {
		t     float64
		delta int
	}
	var evs []ev
	for i := 0; i < 6; i++ {
		lines := strings.Fields(readFile(t, filepath.Join(f.cwd, fmt.Sprintf("slurm-%s_%d.out", testAnchor, i))))
		if len(lines) != 2 {
			t.Fatalf("task %d printed %q", i, lines)
		}
		s, _ := strconv.ParseFloat(lines[0], 64)
		e, _ := strconv.ParseFloat(lines[1], 64)
		evs = append(evs, ev{s, 1}, ev{e, -1})
	}
	sort.Slice(evs, func(i, j int) bool { return evs[i].t < evs[j].t || evs[i].t == evs[j].t && evs[i].delta < evs[j].delta })
	cur, peak := 0, 0
	for _, e := range evs {
		cur += e.delta
		peak = max(peak, cur)
	}
	if peak != 2 {
		t.Errorf("peak concurrency %d, want 2", peak)
	}
}

// The task's real environment: no SLURM_SPANK_*, the array values, the
// pilot's SLURM_JOB_ID, GLEAN_ATTEMPT counted from the journal; --export=NONE
// keeps only SLURM_* of the captured environment. Also the working
// directory, stdin from /dev/null and -o/-e files.
func TestTaskEnvironmentExec(t *testing.T) {
	script := "#!/bin/sh\nenv\npwd >&2\ncat\n"
	captured := []string{"FOO=bar", "SLURM_SPANK_GLEAN=x", "SLURM_CONF=/etc/slurm.conf", "PATH=/usr/bin:/bin"}
	for _, export := range []string{"ALL", "NONE"} {
		t.Run(export, func(t *testing.T) {
			f := newFixture(t, 4, script, captured, func(e *spool.Entry) {
				e.Export = export
				e.Array = &spool.Array{Ranges: []spool.Range{{Start: 3, End: 9, Step: 2}}}
				e.Error = "err-%j-%a.txt"
				e.Output = "out-%x-%a.txt"
			})
			// Task 3 was handed back once before.
			ev := spool.TaskEvent{Index: 3, Attempt: "old", Reason: spool.ReasonHandBack}
			if err := f.recs.Journal(f.rec, spool.Event{Event: "task", Task: &ev}); err != nil {
				t.Fatal(err)
			}
			a := f.agent("555", 1, func(o *Options) {
				o.Env = []string{"SLURM_JOB_ID=555", "SLURM_SPANK_OTHER=1", "SLURM_ARRAY_TASK_ID=77", "HOME=/pilot", "SLURM_NODELIST=n1"}
			})
			if why := runAgent(t, context.Background(), a)(); why != EndIdle {
				t.Errorf("ended %q", why)
			}
			env := map[string]string{}
			for _, l := range strings.Split(readFile(t, filepath.Join(f.cwd, "out-myjob-3.txt")), "\n") {
				if k, v, ok := strings.Cut(l, "="); ok {
					env[k] = v
				}
			}
			want := map[string]string{"SLURM_ARRAY_JOB_ID": testAnchor, "SLURM_ARRAY_TASK_ID": "3",
				"SLURM_ARRAY_TASK_COUNT": "4", "SLURM_ARRAY_TASK_MIN": "3", "SLURM_ARRAY_TASK_MAX": "9",
				"SLURM_ARRAY_TASK_STEP": "2", "SLURM_JOB_ID": "555", "SLURM_NODELIST": "n1", "GLEAN_TASK_ID": "3",
				"GLEAN_ATTEMPT": "2", "GLEAN_JOB": testAnchor, "SLURM_JOB_NAME": "myjob", "SLURM_CONF": "/etc/slurm.conf"}
			if export == "ALL" {
				want["FOO"] = "bar"
			}
			for k, v := range want {
				if env[k] != v {
					t.Errorf("%s=%q, want %q", k, env[k], v)
				}
			}
			for k := range env {
				if strings.Contains(k, "SPANK") || (export == "NONE" && (k == "FOO" || k == "PATH")) || k == "HOME" {
					t.Errorf("%s leaked into the task", k)
				}
			}
			if got := readFile(t, filepath.Join(f.cwd, "err-555-3.txt")); got != f.cwd+"\n" {
				t.Errorf("stderr %q, want the working directory", got)
			}
		})
	}
}

func TestTaskEnvList(t *testing.T) {
	j := &Job{Entry: &spool.Entry{Anchor: "1", Name: "n", Cwd: "/w", Export: "ALL,FOO=1,BAR",
		Array: &spool.Array{Ranges: []spool.Range{{Start: 0, End: 0, Step: 1}, {Start: 5, End: 6, Step: 1}}}},
		Env: []string{"FOO=1", "BAR=2", "SLURM_X=3"}}
	env := TaskEnv(j, nil, TaskVars{Task: 5, Attempt: 1})
	for _, want := range []string{"FOO=1", "BAR=2", "SLURM_X=3", "SLURM_ARRAY_TASK_STEP=1", "SLURM_ARRAY_TASK_COUNT=3", "ENVIRONMENT=BATCH"} {
		if !slices.Contains(env, want) {
			t.Errorf("%s missing from %q", want, env)
		}
	}
	j.Entry.Export = "BAR"
	env = TaskEnv(j, nil, TaskVars{Task: 5, Attempt: 1})
	if slices.Contains(env, "FOO=1") || !slices.Contains(env, "BAR=2") || !slices.Contains(env, "SLURM_X=3") {
		t.Errorf("--export=BAR gave %q", env)
	}
	j.Entry.Array = nil
	env = TaskEnv(j, nil, TaskVars{Task: 0, Attempt: 1})
	for _, kv := range env {
		if strings.HasPrefix(kv, "SLURM_ARRAY_") {
			t.Errorf("%s set for a job without an array", kv)
		}
	}
}

// A task sees the task counts sbatch puts into a plain array element's
// environment: SLURM_NTASKS and SLURM_NPROCS for -n (an srun in the task
// starts that many tasks), SLURM_NTASKS_PER_NODE for --ntasks-per-node;
// none without the option. The pilot's own do not override them.
func TestTaskEnvNTasks(t *testing.T) {
	// What sbatch 22.05 sets, measured on the loopback cluster (one node):
	// -n 2: NTASKS, NPROCS and TASKS_PER_NODE 2; --ntasks-per-node=2 alone:
	// the same and NTASKS_PER_NODE 2; -c 2 alone: none of the counts.
	pilot := []string{"SLURM_JOB_ID=77", "SLURM_NTASKS=1", "SLURM_NPROCS=1", "SLURM_TASKS_PER_NODE=1"}
	for _, tc := range []struct {
		name string
		opts []spool.Opt
		res  spool.Resources
		want map[string]string // "" = absent
	}{
		{"-n 4", []spool.Opt{{Name: "ntasks", Value: "4"}}, spool.Resources{CPUsPerTask: 1, NTasks: 4, CPUs: 4},
			map[string]string{"SLURM_NTASKS": "4", "SLURM_NPROCS": "4", "SLURM_TASKS_PER_NODE": "4", "SLURM_NTASKS_PER_NODE": ""}},
		{"--ntasks-per-node=2", []spool.Opt{{Name: "ntasks-per-node", Value: "2"}}, spool.Resources{CPUsPerTask: 1, NTasks: 2, CPUs: 2},
			map[string]string{"SLURM_NTASKS": "2", "SLURM_NPROCS": "2", "SLURM_TASKS_PER_NODE": "2", "SLURM_NTASKS_PER_NODE": "2"}},
		{"-n 6 --ntasks-per-node=6 -c 2", []spool.Opt{{Name: "ntasks", Value: "6"}, {Name: "ntasks-per-node", Value: "6"}, {Name: "cpus-per-task", Value: "2"}},
			spool.Resources{CPUsPerTask: 2, NTasks: 6, CPUs: 12},
			map[string]string{"SLURM_NTASKS": "6", "SLURM_NPROCS": "6", "SLURM_NTASKS_PER_NODE": "6", "SLURM_CPUS_PER_TASK": "2"}},
		{"no -n", nil, spool.Resources{CPUsPerTask: 1, NTasks: 1, CPUs: 1}, map[string]string{"SLURM_NTASKS_PER_NODE": ""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j := &Job{Entry: &spool.Entry{Anchor: "1", Name: "n", Cwd: "/w", Export: "ALL", Options: tc.opts, Resources: tc.res}}
			env := TaskEnv(j, pilot, TaskVars{Task: 0, Attempt: 1})
			for k, want := range tc.want {
				if got, ok := lookupEnv(env, k); got != want || ok != (want != "") {
					t.Errorf("%s = %q (set %v), want %q", k, got, ok, want)
				}
			}
		})
	}
}

// SLURM_EXPORT_ENV in a task is what plain Slurm gives the batch script
// (measured on 22.05), never the pilot's NONE: absent for --export=ALL (an
// srun in the task passes the user's environment on), the submission's
// value otherwise, the submitting shell's own variable if it had one.
func TestTaskEnvExportForSrun(t *testing.T) {
	pilot := []string{"SLURM_JOB_ID=77", "SLURM_EXPORT_ENV=NONE"}
	for _, tc := range []struct {
		name, export string
		captured     []string
		want         string // "" = absent
	}{
		{"default ALL", "ALL", nil, ""},
		{"NONE", "NONE", nil, "NONE"},
		{"a list", "ALL,FOO=bar", nil, "ALL,FOO=bar"},
		{"the submitting shell's", "NONE", []string{"SLURM_EXPORT_ENV=ALL"}, "ALL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j := &Job{Entry: &spool.Entry{Anchor: "1", Name: "n", Cwd: "/w", Export: tc.export}, Env: tc.captured}
			got, ok := lookupEnv(TaskEnv(j, pilot, TaskVars{Task: 0, Attempt: 1}), "SLURM_EXPORT_ENV")
			if got != tc.want || ok != (tc.want != "") {
				t.Errorf("SLURM_EXPORT_ENV = %q (set %v), want %q", got, ok, tc.want)
			}
		})
	}
}

// The data-folder form: glean_items gets GLEAN_ITEMS and GLEAN_BATCH.
func TestItemsEnv(t *testing.T) {
	f := newFixture(t, 2, "#!/bin/sh\n. \"$GLEAN_SH\"\nglean_items\n", []string{"GLEAN_SH=" + gleanSh(t)}, func(e *spool.Entry) {
		e.Items = &spool.Items{Dir: "/data", Batch: 2, Count: 3}
	})
	if err := os.WriteFile(filepath.Join(f.sp.IncomingPath(f.uid, f.id), spool.ItemsFile), []byte("a\nb\nc\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	runAgent(t, context.Background(), f.agent("16", 2, nil))()
	for i, want := range []string{"a\nb\n", "c\n"} {
		if got := readFile(t, filepath.Join(f.cwd, fmt.Sprintf("slurm-%s_%d.out", testAnchor, i))); got != want {
			t.Errorf("task %d items %q, want %q", i, got, want)
		}
	}
}

func gleanSh(t *testing.T) string {
	p, err := filepath.Abs("../../wrappers/glean.sh")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// open_mode=append keeps earlier output; truncate (the default) does not;
// a task's second attempt appends whatever the mode.
func TestOpenMode(t *testing.T) {
	for _, tc := range []struct {
		mode    string
		attempt bool
		want    string
	}{{"", false, "new\n"}, {"append", false, "old\nnew\n"}, {"truncate", true, "old\nnew\n"}} {
		t.Run(fmt.Sprint(tc.mode, tc.attempt), func(t *testing.T) {
			f := newFixture(t, 1, "#!/bin/sh\necho new\n", nil, func(e *spool.Entry) { e.OpenMode = tc.mode })
			out := filepath.Join(f.cwd, fmt.Sprintf("slurm-%s_0.out", testAnchor))
			if err := os.WriteFile(out, []byte("old\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			if tc.attempt {
				ev := spool.TaskEvent{Index: 0, Attempt: "a", Reason: spool.ReasonHandBack}
				if err := f.recs.Journal(f.rec, spool.Event{Event: "task", Task: &ev}); err != nil {
					t.Fatal(err)
				}
			}
			runAgent(t, context.Background(), f.agent("17", 1, nil))()
			if got := readFile(t, out); got != tc.want {
				t.Errorf("output %q, want %q", got, tc.want)
			}
		})
	}
}

// Heartbeats move the lease's mtime while a task runs.
func TestHeartbeat(t *testing.T) {
	dir := t.TempDir()
	f := newFixture(t, 1, "#!/bin/sh\nwhile [ ! -e \"$DIR/go\" ]; do sleep 0.01; done\n", []string{"DIR=" + dir}, nil)
	wait := runAgent(t, context.Background(), f.agent("18", 1, nil))
	w := f.work()
	var first time.Time
	waitFor(t, "the lease", func() bool {
		st, err := os.Stat(w.LeasePath(0))
		if err == nil {
			first = st.ModTime()
		}
		return err == nil
	})
	waitFor(t, "a heartbeat", func() bool {
		st, err := os.Stat(w.LeasePath(0))
		return err == nil && st.ModTime().After(first)
	})
	if err := os.WriteFile(filepath.Join(dir, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	wait()
}

// The daemon took a running task's lease back (it journaled the attempt as
// lost) and another agent leased the task again: the first agent notices
// at its next heartbeat, SIGKILLs its attempt (no TERM: it must not save
// into the checkpoint the next attempt now owns), writes no result for it,
// and never refreshes the new lease.
func TestLeaseTakenBackKillsAttempt(t *testing.T) {
	marks := t.TempDir()
	script := "#!/bin/sh\ntrap 'echo spoiled >\"$GLEAN_CHECKPOINT_DIR/state\"; exit 99' TERM\n" +
		"echo $$ >\"$MARKS/pid.$GLEAN_ATTEMPT\"\nwhile :; do sleep 0.02; done\n"
	f := newFixture(t, 1, script, []string{"PATH=" + os.Getenv("PATH"), "MARKS=" + marks},
		func(e *spool.Entry) { e.Glean.Checkpoint = true })
	c := Checkpoints{Spool: f.sp.Dir, Root: filepath.Join(t.TempDir(), "ck"), UID: os.Getuid()}
	w := f.work()
	waitA := runAgent(t, context.Background(), f.agent("801", 1, func(o *Options) { o.Idle, o.Checkpoint = time.Hour, c }))
	pidA := waitPID(t, filepath.Join(marks, "pid.1"))
	leaseA := readLease(t, w.LeasePath(0))

	// The daemon takes the lease back; agent B leases the task again. A
	// is retiring, so that it cannot take the task again itself first.
	if err := f.recs.PutControl(f.rec, spool.Control{Retire: []string{"801"}}); err != nil {
		t.Fatal(err)
	}
	ev := spool.TaskEvent{Index: 0, Attempt: leaseA.Attempt, Reason: spool.ReasonLost, Pilot: "801"}
	if err := f.recs.Journal(f.rec, spool.Event{Time: time.Now(), Event: "task", Task: &ev}); err != nil {
		t.Fatal(err)
	}
	if err := f.sp.RemoveLease(f.uid, f.id, 0, leaseA.Attempt); err != nil {
		t.Fatal(err)
	}
	ctxB, stopB := context.WithCancel(context.Background())
	defer stopB()
	waitB := runAgent(t, ctxB, f.agent("802", 1, func(o *Options) { o.Idle, o.Heartbeat, o.Checkpoint = time.Hour, time.Hour, c }))
	waitPID(t, filepath.Join(marks, "pid.2"))
	old := time.Now().Add(-time.Hour).Truncate(time.Second)
	if err := os.Chtimes(w.LeasePath(0), old, old); err != nil {
		t.Fatal(err)
	}

	waitFor(t, "attempt 1 killed", func() bool { return processGone(pidA) })
	if why := waitA(); why != EndRetired {
		t.Errorf("agent A ended %q, want %q", why, EndRetired)
	}
	ws, err := f.sp.ScanWork(f.uid, f.id)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range ws.Results {
		if r.Result.Attempt == leaseA.Attempt {
			t.Errorf("a result for the attempt whose lease was taken back: %+v", r.Result)
		}
	}
	if b, err := os.ReadFile(filepath.Join(c.TaskDir(testAnchor, 0), "state")); err == nil {
		t.Errorf("attempt 1 wrote into the checkpoint after its lease was taken back: %q", b)
	}
	if st, err := os.Stat(w.LeasePath(0)); err != nil {
		t.Errorf("attempt 2's lease: %v", err)
	} else if !st.ModTime().Equal(old) {
		t.Errorf("attempt 2's lease: mtime %v; want it untouched by agent A (%v)", st.ModTime(), old)
	}
	stopB()
	waitB()
}

// The heartbeat is the file server's time (UTIME_NOW), not the node's: a
// node whose clock is two hours behind still keeps its lease fresh as
// gleand, which compares the mtime with its own clock, sees it.
func TestHeartbeatFileServerTime(t *testing.T) {
	dir := t.TempDir()
	f := newFixture(t, 1, "#!/bin/sh\nwhile [ ! -e \"$DIR/go\" ]; do sleep 0.01; done\n", []string{"DIR=" + dir}, nil)
	wait := runAgent(t, context.Background(), f.agent("901", 1, func(o *Options) {
		o.Now = func() time.Time { return time.Now().Add(-2 * time.Hour) }
	}))
	w := f.work()
	readLease(t, w.LeasePath(0))
	old := time.Now().Add(-time.Hour).Truncate(time.Second)
	if err := os.Chtimes(w.LeasePath(0), old, old); err != nil {
		t.Fatal(err)
	}
	var mtime time.Time
	waitFor(t, "a heartbeat", func() bool {
		st, err := os.Stat(w.LeasePath(0))
		if err == nil {
			mtime = st.ModTime()
		}
		return err == nil && !mtime.Equal(old)
	})
	if age := time.Since(mtime); age < -time.Minute || age > time.Minute {
		t.Errorf("a heartbeat set the lease's mtime %v from now; want the filesystem's current time", age.Round(time.Second))
	}
	if err := os.WriteFile(filepath.Join(dir, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	wait()
}

// readLease waits for a lease with content and returns it.
func readLease(t *testing.T, path string) spool.Lease {
	t.Helper()
	var l spool.Lease
	waitFor(t, "the lease "+path, func() bool {
		data, err := os.ReadFile(path)
		return err == nil && json.Unmarshal(data, &l) == nil && l.Attempt != ""
	})
	return l
}

// waitPID waits for a task to write its pid into path.
func waitPID(t *testing.T, path string) int {
	t.Helper()
	var pid int
	waitFor(t, "a pid in "+path, func() bool {
		data, _ := os.ReadFile(path)
		pid, _ = strconv.Atoi(strings.TrimSpace(string(data)))
		return pid > 0
	})
	return pid
}

// processGone reports whether pid no longer runs: gone, or a zombie
// waiting for a parent (an orphan's, where pid 1 does not reap).
func processGone(pid int) bool {
	if errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) {
		return true
	}
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return errors.Is(err, fs.ErrNotExist)
	}
	// pid (comm) S ...: the state follows the last ')'.
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && i+2 < len(s) && s[i+2] == 'Z'
}

// A task that completed by itself is reported completed when glean gives
// way with the agent right after (the TERM went to the agent alone),
// whether its end already waits for the loop or is still on its way from
// the goroutine that reaped it: stopAll must neither count it as one it
// stopped nor TERM it. Both used to be reported handed-back (run again).
func TestStopAllKeepsCompletions(t *testing.T) {
	for _, onItsWay := range []bool{false, true} {
		t.Run(fmt.Sprint("on its way ", onItsWay), func(t *testing.T) {
			f := newFixture(t, 1, "#!/bin/sh\nexit 0\n", nil, nil)
			a := f.agent("1001", 1, func(o *Options) { o.GaveWay = func() bool { return true } })
			path, cleanup, err := privateScript(a.job.Script)
			if err != nil {
				t.Fatal(err)
			}
			defer cleanup()
			a.script = path
			ctx, term := context.WithCancel(context.Background())
			a.ctx = ctx
			if _, err := a.dispatch(time.Now()); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "the task's end", func() bool { return len(a.done) == 1 })
			term() // glean gives way: TERM to the agent alone, after the task completed
			if onItsWay {
				// Reaped, but not yet handed to the loop.
				e := <-a.done
				a.termRunning()
				if e.p.signaled {
					t.Errorf("a task that had exited was signalled")
				}
				a.done <- e
			}
			a.stopAll(EndSignaled)
			res := f.results()
			if len(res) != 1 || res[0].Outcome != spool.OutcomeExited || res[0].Exit != 0 {
				t.Errorf("results %+v, want the task exited 0", res)
			}
		})
	}
}

// Through Run: task 0 exits 99 by itself and the loop waits a moment for
// a TERM that would make it a checkpoint (awaitTerm); meanwhile task 1
// completes; then glean gives way. Task 1's completion stays a completion;
// task 0 exited 99 on its own, as the give-way's TERM reached the agent
// alone (it used to be judged before the agent knew how it was TERMed).
func TestStopAllKeepsCompletionsDuringAwaitTerm(t *testing.T) {
	marks := t.TempDir()
	script := "#!/bin/sh\necho $$ >\"$MARKS/pid.$SLURM_ARRAY_TASK_ID\"\n" +
		"while [ ! -e \"$MARKS/go.$SLURM_ARRAY_TASK_ID\" ]; do sleep 0.01; done\n" +
		"[ \"$SLURM_ARRAY_TASK_ID\" = 0 ] && exit 99\nexit 0\n"
	f := newFixture(t, 2, script, []string{"PATH=" + os.Getenv("PATH"), "MARKS=" + marks}, nil)
	ctx, term := context.WithCancel(context.Background())
	wait := runAgent(t, ctx, f.agent("1401", 2, func(o *Options) { o.GaveWay = func() bool { return true }; o.Idle = time.Hour }))
	pid0, pid1 := waitPID(t, filepath.Join(marks, "pid.0")), waitPID(t, filepath.Join(marks, "pid.1"))
	for i, pid := range []int{pid0, pid1} {
		if err := os.WriteFile(filepath.Join(marks, fmt.Sprint("go.", i)), nil, 0o600); err != nil {
			t.Fatal(err)
		}
		waitFor(t, fmt.Sprint("task ", i, " reaped"), func() bool { return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) })
	}
	term() // within awaitTerm's second for task 0
	wait()
	res := f.results()
	for _, r := range res {
		if r.Task == 1 && (r.Outcome != spool.OutcomeExited || r.Exit != 0) {
			t.Errorf("task 1 exited 0 by itself before the give-way, reported %s exit %d", r.Outcome, r.Exit)
		}
		if r.Task == 0 && (r.Outcome != spool.OutcomeExited || r.Exit != spool.CheckpointExit) {
			t.Errorf("task 0 exited 99 with no TERM sent to it, reported %s exit %d", r.Outcome, r.Exit)
		}
	}
	if len(res) != 2 {
		t.Errorf("results %+v, want both tasks'", res)
	}
}

// exitedAlready tells a child that runs from one that exited, reaped or
// not, and leaves a zombie to its Wait.
func TestExitedAlready(t *testing.T) {
	run := exec.Command("sleep", "60")
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	if exitedAlready(run.Process.Pid) {
		t.Error("a running child: exited")
	}
	run.Process.Kill()
	run.Wait()

	done := exec.Command("true")
	if err := done.Start(); err != nil {
		t.Fatal(err)
	}
	pid := done.Process.Pid
	waitFor(t, "a zombie", func() bool { return processGone(pid) })
	if !exitedAlready(pid) {
		t.Error("a zombie: not exited")
	}
	if err := done.Wait(); err != nil {
		t.Errorf("Wait after exitedAlready: %v (the zombie was reaped by it)", err)
	}
	if !exitedAlready(pid) {
		t.Error("a reaped child: not exited")
	}
}

// A child that leaves the task's process group (setsid, a daemon) does
// not outlive its attempt: it carries the attempt's GLEAN_ATTEMPT_ID, and
// the agent KILLs what carries it when the attempt ends, before its result.
// It used to run on, beside the task's next attempt.
func TestEscapedChildKilled(t *testing.T) {
	marks := t.TempDir()
	script := "#!/bin/sh\nsetsid sh -c 'echo $$ >\"$MARKS/escaped.tmp\"; mv \"$MARKS/escaped.tmp\" \"$MARKS/escaped\"; exec sleep 600' </dev/null >/dev/null 2>&1 &\n" +
		"while [ ! -e \"$MARKS/escaped\" ]; do sleep 0.01; done\nexit 1\n"
	f := newFixture(t, 1, script, []string{"PATH=" + os.Getenv("PATH"), "MARKS=" + marks}, nil)
	runAgent(t, context.Background(), f.agent("1201", 1, nil))()
	pid := waitPID(t, filepath.Join(marks, "escaped"))
	t.Cleanup(func() {
		if !processGone(pid) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	if res := f.results(); len(res) != 1 || res[0].Exit != 1 {
		t.Fatalf("results %+v, want the attempt's exit 1", res)
	}
	waitFor(t, "the escaped child killed", func() bool { return processGone(pid) })
}

// killAttempt kills the processes whose environment holds the attempt's
// marker exactly, not one whose id merely starts the same.
func TestKillAttemptExactMarker(t *testing.T) {
	start := func(id string) *exec.Cmd {
		cmd := exec.Command("sleep", "60")
		cmd.Env = []string{"A=1", "GLEAN_ATTEMPT_ID=" + id, "Z=2"}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		return cmd
	}
	mine, other := start("0123abcd"), start("0123abcdx")
	killAttempt("0123abcd")
	err := mine.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Errorf("the attempt's process: %v, want killed by SIGKILL", err)
	}
	// Alive, it dies of this TERM; had killAttempt KILLed it, of the KILL.
	other.Process.Signal(syscall.SIGTERM)
	err = other.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGTERM {
		t.Errorf("another attempt's process: %v, want it alive until the test's TERM", err)
	}
}

// jobScope tells processes of one Slurm job (any step) from another job's
// and, without Slurm's cgroups, compares whole files.
func TestJobScope(t *testing.T) {
	v2 := func(p string) []byte { return []byte("0::" + p + "\n") }
	v1 := func(job string) []byte {
		return []byte("12:freezer:/slurm/uid_1000/job_" + job + "/step_batch\n4:memory:/slurm/uid_1000/job_" + job + "/step_batch/task_0\n1:name=systemd:/system.slice/slurmd.service\n")
	}
	for _, tc := range []struct {
		name string
		a, b []byte
		same bool
	}{
		{"v2 one job, two steps", v2("/system.slice/slurmstepd.scope/job_42/step_batch/user/task_0"), v2("/system.slice/slurmstepd.scope/job_42/step_0/user/task_0"), true},
		{"v2 two jobs", v2("/system.slice/slurmstepd.scope/job_42/step_batch/user/task_0"), v2("/system.slice/slurmstepd.scope/job_43/step_batch/user/task_0"), false},
		{"v2 job_4 is not job_42", v2("/system.slice/slurmstepd.scope/job_4/step_batch"), v2("/system.slice/slurmstepd.scope/job_42/step_batch"), false},
		{"v1 one job", v1("42"), v1("42"), true},
		{"v1 two jobs", v1("42"), v1("7"), false},
		{"no Slurm cgroups, same", v2("/system.slice/slurmd.service"), v2("/system.slice/slurmd.service"), true},
		{"no Slurm cgroups, another", v2("/system.slice/slurmd.service"), v2("/user.slice/user-1000.slice/session-3.scope"), false},
	} {
		if got := jobScope(tc.a) == jobScope(tc.b); got != tc.same {
			t.Errorf("%s: same job %v (%q, %q), want %v", tc.name, got, jobScope(tc.a), jobScope(tc.b), tc.same)
		}
	}
}
