// Package recovery kills gleand where it hurts, on a real loopback Slurm
// 22.05 (issue 6, "Crash recovery"): at each failpoint between two durable
// steps, and at random moments during a 500-task run. The promise under
// test: once sbatch printed an id, every task completes exactly once in
// the journal, and the job ends as it should, whatever dies.
package recovery

import (
	"encoding/json"
	"errors"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/glean-hpc/glean/sidecar/failpoint"
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

func setup(t *testing.T) *gleantest.Env {
	t.Helper()
	slurmtest.Need(t, cl)
	if env == nil {
		var err error
		if env, err = gleantest.New(cl, gleantest.Options{}); err != nil {
			t.Fatal(err)
		}
		env.WriteFile(t, "task.sh", `#!/bin/sh
echo "task $SLURM_ARRAY_TASK_ID attempt $GLEAN_ATTEMPT pilot $SLURM_JOB_ID"
sleep 1
`, 0o755)
		env.WriteFile(t, "out/.keep", "", 0o644)
	}
	env.DaemonEnv = nil
	env.Start(t)
	cl.CancelAll(t)
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(env.Logs())
		}
	})
	return env
}

// exactlyOnce checks the journal: every task of 0..n-1 has exactly one
// final event, and it is a completion; it returns the attempts counted.
func exactlyOnce(t *testing.T, e *gleantest.Env, anchor string, n int) (attempts, duplicates int) {
	t.Helper()
	final := map[int]int{}
	for _, ev := range e.TaskEvents(t, anchor) {
		attempts++
		if ev.Reason == "duplicate" {
			duplicates++
		}
		if ev.Final {
			final[ev.Index]++
			if ev.Reason != spool.ReasonCompleted {
				t.Errorf("task %d ended %s", ev.Index, ev.Reason)
			}
		}
	}
	for i := 0; i < n; i++ {
		if final[i] != 1 {
			t.Errorf("task %d committed %d times", i, final[i])
		}
	}
	if len(final) != n {
		t.Errorf("%d tasks committed, want %d", len(final), n)
	}
	return attempts, duplicates
}

func anchorCompleted(t *testing.T, e *gleantest.Env, anchor string) {
	t.Helper()
	var state, exit string
	cl.WaitFor(t, 60*time.Second, "anchor "+anchor+" to end", func() bool {
		state, exit = e.SlurmState(t, anchor)
		return state == "COMPLETED" || state == "FAILED" || state == "CANCELLED"
	})
	if state != "COMPLETED" || exit != "0:0" {
		t.Errorf("anchor %s ended %s %s", anchor, state, exit)
	}
}

// leaseOf returns the lease of one running task of the job (PID is its
// agent's), or a zero Lease.
func leaseOf(t *testing.T, e *gleantest.Env, anchor string) spool.Lease {
	r := e.Record(t, anchor)
	if r == nil {
		return spool.Lease{}
	}
	dir := filepath.Join(e.Spool, spool.UsersDir, strconv.Itoa(r.UID), spool.WorkDir, r.ID, spool.LeasesDir)
	names, _ := os.ReadDir(dir)
	for _, n := range names {
		var l spool.Lease
		data, err := os.ReadFile(filepath.Join(dir, n.Name()))
		if err == nil && json.Unmarshal(data, &l) == nil && l.PID > 0 {
			return l
		}
	}
	return spool.Lease{}
}

// killTree SIGKILLs pid and the process groups of its children, as a node
// that loses power would end them.
func killTree(t *testing.T, pid int) {
	t.Helper()
	procs, _ := os.ReadDir("/proc")
	for _, p := range procs {
		child, err := strconv.Atoi(p.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", p.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces; cut after ')'.
		f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		if len(f) > 1 && f[1] == strconv.Itoa(pid) {
			_ = syscall.Kill(-child, syscall.SIGKILL)
			_ = syscall.Kill(child, syscall.SIGKILL)
		}
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatalf("kill -9 %d: %v", pid, err)
	}
}

// killedBySIGKILL reports whether gleand's exit was a SIGKILL (its
// failpoint).
func killedBySIGKILL(err error) bool {
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return false
	}
	ws, ok := ee.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL
}

// Each failpoint in turn: gleand dies there (SIGKILL, as a power cut
// would leave it), is restarted without it, and the job still completes
// with every task committed exactly once.
func TestFailpoints(t *testing.T) {
	for _, point := range failpoint.Points {
		t.Run(strings.ReplaceAll(point, "/", "-"), func(t *testing.T) {
			e := setup(t)
			e.Stop() // stops the helper too; Start brings both back
			e.DaemonEnv = []string{failpoint.EnvVar + "=" + point}
			e.Start(t)
			mode := "scavenger"
			if point == "shadow/released" {
				mode = "fair"
			}
			tasks, script := 40, "task.sh"
			if point == "lost/journaled" {
				script = "slow.sh" // still running when its pilot is killed
				e.WriteFile(t, script, "#!/bin/sh\nsleep 20\n", 0o755)
			}
			anchor := e.Sbatch(t, "", "--glean=mode="+mode, "--array=0-39", "-o", "out/%A_%a.out", script)
			if point == "lost/journaled" {
				// A pilot running a task dies with its node (SIGKILL to its
				// agent and the task): its lease is lost.
				var l spool.Lease
				cl.WaitFor(t, 60*time.Second, "a task to run", func() bool {
					l = leaseOf(t, e, anchor)
					return l.PID > 0
				})
				killTree(t, l.PID)
			}
			select {
			case <-e.DaemonDone():
			case <-time.After(90 * time.Second):
				t.Fatalf("gleand never reached failpoint %s", point)
			}
			if !killedBySIGKILL(e.DaemonStatus()) {
				t.Fatalf("gleand ended %v, not by its failpoint", e.DaemonStatus())
			}
			e.ForgetDaemon()
			e.DaemonEnv = nil
			e.Start(t)
			r := e.WaitState(t, anchor, 3*time.Minute, spool.StateDone, spool.StateFailed, spool.StateCancelled)
			if r.State != spool.StateDone {
				t.Fatalf("job %s after a crash at %s: %+v", r.State, point, r.Tasks)
			}
			attempts, dups := exactlyOnce(t, e, anchor, tasks)
			anchorCompleted(t, e, anchor)
			t.Logf("crash at %s: %d attempts, %d duplicates, all %d tasks once", point, attempts, dups, tasks)
		})
	}
}

// kill -9 gleand at random moments, 20 times, during a 500-task run: 0
// tasks lost, 0 duplicate completions, the job ends COMPLETED.
func TestRandomKills(t *testing.T) {
	e := setup(t)
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 6))
	e.WriteFile(t, "task2.sh", `#!/bin/sh
echo "task $SLURM_ARRAY_TASK_ID attempt $GLEAN_ATTEMPT pilot $SLURM_JOB_ID"
sleep 2
`, 0o755)
	anchor := e.Sbatch(t, "", "--glean=mode=scavenger", "--array=0-499", "-o", "out/%A_%a.out", "task2.sh")
	kills := 0
	var downtime time.Duration
	for kills < 20 {
		// A random moment to kill at (not a wait for a condition): alive
		// for 0.2-1.2 s.
		<-time.After(time.Duration(200+rng.IntN(1000)) * time.Millisecond)
		if r := e.Record(t, anchor); r != nil && !r.Active() {
			break
		}
		e.KillDaemon()
		kills++
		down := time.Now()
		e.Start(t)
		downtime += time.Since(down)
	}
	r := e.WaitState(t, anchor, 5*time.Minute, spool.StateDone, spool.StateFailed, spool.StateCancelled)
	if r.State != spool.StateDone {
		t.Fatalf("job %s after %d kills: %+v", r.State, kills, r.Tasks)
	}
	if kills < 20 {
		t.Errorf("the job finished after %d kills; the test wants 20 during the run", kills)
	}
	attempts, dups := exactlyOnce(t, e, anchor, 500)
	anchorCompleted(t, e, anchor)
	t.Logf("%d kills of gleand during 500 tasks: %d attempts, %d duplicates (ran twice, committed once), 0 lost", kills, attempts, dups)
}

// outage is how long slurmctld stays down in TestControllerOutage: 60 s
// with GLEAN_CHAOS_LONG=1 (make chaos), 20 s in make test.
func outage() time.Duration {
	if os.Getenv("GLEAN_CHAOS_LONG") == "1" {
		return 60 * time.Second
	}
	return 20 * time.Second
}

// slurmctld stops mid-run: gleand backs off and stays up, `glean status`
// still answers from the spool, the running tasks go on; when slurmctld is
// back, gleand resumes and the job completes with every task once.
func TestControllerOutage(t *testing.T) {
	e := setup(t)
	e.WriteFile(t, "task3.sh", "#!/bin/sh\necho \"task $SLURM_ARRAY_TASK_ID\"\nsleep 3\n", 0o755)
	anchor := e.Sbatch(t, "", "--glean=mode=scavenger", "--array=0-199", "-o", "out/%A_%a.out", "task3.sh")
	e.WaitState(t, anchor, 60*time.Second, spool.StateRunning)
	pid := e.DaemonPID()
	if err := cl.StopController(); err != nil {
		t.Fatal(err)
	}
	down := time.Now()
	restarted := false
	defer func() {
		if !restarted {
			_ = cl.StartController()
		}
	}()
	// During the outage: status from the spool, gleand alive, tasks done.
	before := e.Record(t, anchor).Tasks.Done
	for time.Since(down) < outage() {
		r := e.AsUser(t, "", "glean", "status")
		if r.Code != 0 || !strings.Contains(r.Stdout, anchor) {
			t.Fatalf("glean status during the outage: %+v", r)
		}
		select {
		case <-e.DaemonDone():
			t.Fatalf("gleand exited during the outage: %v", e.DaemonStatus())
		case <-time.After(2 * time.Second): // status every 2 s while the outage lasts
		}
	}
	during := e.Record(t, anchor).Tasks.Done - before
	if err := cl.StartController(); err != nil {
		t.Fatal(err)
	}
	restarted = true
	back := time.Now()
	r := e.WaitState(t, anchor, 4*time.Minute, spool.StateDone, spool.StateFailed, spool.StateCancelled)
	if r.State != spool.StateDone {
		t.Fatalf("job %s after the outage: %+v", r.State, r.Tasks)
	}
	if e.DaemonPID() != pid {
		t.Errorf("gleand was restarted")
	}
	exactlyOnce(t, e, anchor, 200)
	anchorCompleted(t, e, anchor)
	log, _ := os.ReadFile(e.Dir + "/gleand.log")
	if !strings.Contains(string(log), "backing off") || !strings.Contains(string(log), "Slurm answers again") {
		t.Errorf("gleand did not log its backoff and recovery")
	}
	t.Logf("slurmctld down %v: %d tasks committed meanwhile (from results written during it), job done %v after its return",
		outage(), during, time.Since(back).Round(time.Second))
}

// The spool's filesystem fills up (a small tmpfs): a submission fails with
// a clear one-line error and leaves nothing behind; a job running while
// it is full loses nothing and writes no corrupt record; it completes
// once space returns.
func TestSpoolFull(t *testing.T) {
	slurmtest.Need(t, cl)
	if env != nil {
		env.Stop() // one gleand on the cluster at a time
	}
	cl.CancelAll(t)
	e, err := gleantest.New(cl, gleantest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.SpoolOnTmpfs(32); err != nil {
		t.Fatal(err)
	}
	defer func() {
		e.Stop()
		_ = e.Unmount()
		if !t.Failed() {
			os.RemoveAll(e.Dir)
		}
	}()
	e.Start(t)
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(e.Logs())
		}
	})
	e.WriteFile(t, "task.sh", "#!/bin/sh\necho \"task $SLURM_ARRAY_TASK_ID\"\nsleep 2\n", 0o755)
	e.WriteFile(t, "out/.keep", "", 0o644)

	filler, err := e.Fill()
	if err != nil {
		t.Fatal(err)
	}
	r := e.AsUser(t, "", "sbatch", "--glean=mode=scavenger", "--array=0-99", "-o", "out/%A_%a.out", "task.sh")
	lines := strings.Split(strings.TrimSpace(r.Stderr), "\n")
	if r.Code == 0 || !strings.Contains(r.Stderr, "no space left on device") || len(lines) != 1 {
		t.Errorf("sbatch on a full spool: exit %d, stderr %q; want one clear line", r.Code, r.Stderr)
	}
	if out := strings.TrimSpace(cl.Run(t, "squeue", "-h", "-o", "%A")); out != "" {
		t.Errorf("jobs left behind by the failed submission: %s", out)
	}
	os.Remove(filler)

	anchor := e.Sbatch(t, "", "--glean=mode=scavenger", "--array=0-99", "-o", "out/%A_%a.out", "task.sh")
	e.WaitState(t, anchor, 60*time.Second, spool.StateRunning)
	if filler, err = e.Fill(); err != nil {
		t.Fatal(err)
	}
	full := time.Now()
	logAtFill := fileSize(filepath.Join(e.Dir, "gleand.log"))
	// Full until gleand has really met ENOSPC mid-run (a record or journal
	// write of the running job failed), at most a minute.
	cl.WaitFor(t, 60*time.Second, "gleand to hit ENOSPC while the spool is full", func() bool {
		return strings.Contains(logSince(filepath.Join(e.Dir, "gleand.log"), logAtFill), "no space left on device")
	})
	hit := time.Since(full)
	os.Remove(filler)
	rec := e.WaitState(t, anchor, 4*time.Minute, spool.StateDone, spool.StateFailed, spool.StateCancelled)
	if rec.State != spool.StateDone {
		t.Fatalf("job %s after the spool was full: %+v", rec.State, rec.Tasks)
	}
	exactlyOnce(t, e, anchor, 100)
	anchorCompleted(t, e, anchor)
	// No corrupt record: every job.json and journal line parses.
	dirs, _ := os.ReadDir(filepath.Join(e.Spool, spool.JobsDir))
	for _, d := range dirs {
		data, err := os.ReadFile(filepath.Join(e.Spool, spool.JobsDir, d.Name(), spool.RecordFile))
		var rr spool.Record
		if err != nil || json.Unmarshal(data, &rr) != nil {
			t.Errorf("record %s unreadable: %v", d.Name(), err)
		}
		j, _ := os.ReadFile(filepath.Join(e.Spool, spool.JobsDir, d.Name(), spool.JournalFile))
		for i, l := range strings.Split(strings.TrimSpace(string(j)), "\n") {
			var ev spool.Event
			if json.Unmarshal([]byte(l), &ev) != nil {
				t.Errorf("journal %s line %d corrupt: %q", d.Name(), i+1, l)
			}
		}
	}
	t.Logf("spool full at %s mid-run, gleand met ENOSPC after %v: job done, every task once, records intact",
		full.Format(time.TimeOnly), hit.Round(100*time.Millisecond))
}

// fileSize is a file's size (0 if missing).
func fileSize(path string) int64 {
	st, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return st.Size()
}

// logSince is what was appended to a log after offset off.
func logSince(path string, off int64) string {
	data, _ := os.ReadFile(path)
	if int64(len(data)) < off {
		return ""
	}
	return string(data[off:])
}
