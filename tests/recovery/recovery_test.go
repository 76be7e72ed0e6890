// Package recovery kills gleand where it hurts, on a real loopback Slurm
// 22.05 (issue 6, "Crash recovery"): at each failpoint between two durable
// steps, and at random moments during a 500-task run. The promise under
// test: once sbatch printed an id, every task completes exactly once in
// the journal, and the job ends as it should, whatever dies.
package recovery

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
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
	cl      *slurmtest.Cluster
	env     *gleantest.Env
	scratch string // checkpoint.root's parent
)

// spankSO is spank/glean.so, loaded by the cluster (its epilog marker is
// off until TestEpilogMarker gives it a spool).
var spankSO string

func TestMain(m *testing.M) {
	opt := slurmtest.Options{Nodes: 24}
	if out, err := exec.Command("make", "-s", "-C", gleantest.RepoRoot(), "spank").CombinedOutput(); err == nil {
		spankSO = filepath.Join(gleantest.RepoRoot(), "spank", "glean.so")
		opt.Spank = spankSO
	} else {
		os.Stderr.Write(out)
	}
	code := slurmtest.Main(m, opt, &cl)
	if env != nil {
		env.Stop()
		if code == 0 {
			os.RemoveAll(env.Dir)
			os.RemoveAll(scratch)
		}
	}
	os.Exit(code)
}

func setup(t *testing.T) *gleantest.Env {
	t.Helper()
	slurmtest.Need(t, cl)
	if env == nil {
		// Checkpoints on a shared scratch (root's, sticky), as a site
		// would set them: <scratch>/<user>.
		var err error
		scratch, err = os.MkdirTemp("/tmp", "glrecck-")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(scratch, 0o777|os.ModeSticky); err != nil {
			t.Fatal(err)
		}
		opt := gleantest.Options{Extra: fmt.Sprintf("[checkpoint]\nroot = %q\n", filepath.Join(scratch, "%u"))}
		if env, err = gleantest.New(cl, opt); err != nil {
			t.Fatal(err)
		}
		env.WriteFile(t, "task.sh", `#!/bin/sh
echo "task $SLURM_ARRAY_TASK_ID attempt $GLEAN_ATTEMPT pilot $SLURM_JOB_ID"
sleep 1
`, 0o755)
		env.WriteFile(t, "out/.keep", "", 0o644)
		for i := 0; i < itemCount; i++ {
			env.WriteFile(t, fmt.Sprintf("items/%02d", i), "x\n", 0o644)
		}
	}
	env.DaemonEnv = nil
	setAgentFailpoint(t, env, "") // a failed subtest may have left one
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

// leases returns the job's leases that parse (running tasks; PID is
// their agent's).
func leases(t *testing.T, e *gleantest.Env, anchor string) []spool.Lease {
	r := e.Record(t, anchor)
	if r == nil {
		return nil
	}
	dir := filepath.Join(e.Spool, spool.UsersDir, strconv.Itoa(r.UID), spool.WorkDir, r.ID, spool.LeasesDir)
	names, _ := os.ReadDir(dir)
	var out []spool.Lease
	for _, n := range names {
		var l spool.Lease
		data, err := os.ReadFile(filepath.Join(dir, n.Name()))
		if err == nil && json.Unmarshal(data, &l) == nil && l.PID > 0 {
			out = append(out, l)
		}
	}
	return out
}

// leaseOf returns the lease of one running task of the job (PID is its
// agent's), or a zero Lease.
func leaseOf(t *testing.T, e *gleantest.Env, anchor string) spool.Lease {
	if ls := leases(t, e, anchor); len(ls) > 0 {
		return ls[0]
	}
	return spool.Lease{}
}

// killTree SIGKILLs pid and the process groups of its children, as a node
// that loses power would end them.
func killTree(t *testing.T, pid int) {
	t.Helper()
	var children []int
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
			children = append(children, child)
		}
	}
	// The agent first: were its task killed first, the agent would see
	// a SIGKILL it did not send and report the task's own failure (the
	// OOM killer's case), not a dead pilot.
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatalf("kill -9 %d: %v", pid, err)
	}
	for _, c := range children {
		_ = syscall.Kill(-c, syscall.SIGKILL)
		_ = syscall.Kill(c, syscall.SIGKILL)
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

// fpCase is one failpoint of TestFailpoints and the job that reaches it.
type fpCase struct {
	point  string
	agent  bool     // armed in the agents (debug.agent_failpoint), not in gleand
	args   []string // sbatch options besides the array and output
	script string   // "" task.sh (1 s)
	tasks  int      // the array's size (default 16)
	// after runs once the job was submitted (kills a pilot, scancels the
	// anchor); nil: nothing.
	after func(t *testing.T, e *gleantest.Env, anchor string)
	end   string // the record's final state (default done)
}

// runningLease waits for a running task of the job and returns its lease.
func runningLease(t *testing.T, e *gleantest.Env, anchor string) spool.Lease {
	t.Helper()
	var l spool.Lease
	cl.WaitFor(t, 60*time.Second, "a task to run", func() bool {
		l = leaseOf(t, e, anchor)
		return l.PID > 0
	})
	return l
}

// killPilot SIGKILLs the agent (and its task) of one running task: a
// node that dies.
func killPilot(t *testing.T, e *gleantest.Env, anchor string) {
	l := runningLease(t, e, anchor)
	killTree(t, l.PID)
}

// scancelRunning waits for a running task, then scancels the anchor as
// the user would.
func scancelRunning(t *testing.T, e *gleantest.Env, anchor string) {
	e.WaitState(t, anchor, 60*time.Second, spool.StateRunning)
	if r := e.AsUser(t, "", "scancel", anchor); r.Code != 0 {
		t.Fatalf("scancel %s: %+v", anchor, r)
	}
}

// fpCases: every failpoint (failpoint.Points, checked) and a job that
// reaches it.
func fpCases() []fpCase {
	fair := []string{"--glean=mode=fair"}
	slow := "slow.sh" // 30 s: still running when the anchor is scancelled
	cases := []fpCase{
		{point: "intake/accepting-recorded"},
		{point: "intake/held", args: fair},
		{point: "intake/script-copied"},
		{point: "intake/items-copied", args: []string{"--glean=mode=scavenger,dir=items,batch=1"}, tasks: -1},
		{point: "intake/queued-recorded"},
		{point: "reject/recorded", args: []string{"-c", "64"}, end: spool.StateRejected},
		{point: "reject/journaled", args: []string{"-c", "64"}, end: spool.StateRejected},
		{point: "reject/cancelled", args: []string{"-c", "64"}, end: spool.StateRejected},
		{point: "follow/shadow-cancelled", args: fair, script: slow, after: scancelRunning, end: spool.StateCancelled},
		{point: "follow/recorded", args: fair, script: slow, after: scancelRunning, end: spool.StateCancelled},
		{point: "follow/queued-recorded", args: []string{"--glean=mode=scavenger", "--begin=now+3"}},
		{point: "shadow/released", args: fair},
		{point: "commit/journaled"},
		{point: "lost/journaled", script: slow, after: killPilot},
		{point: "pilot/intent-recorded"},
		{point: "pilot/submitted"},
		// 5-s tasks: 8 of the 24 pilots find nothing left while 16 run
		// their second task, for several rounds (with 1-s tasks the job
		// could end before a round saw them idle).
		{point: "cancel/recorded", script: "mid.sh", tasks: 40},
		{point: "end/put"},
		{point: "end/recorded"},
		{point: "end/stop-written"},
		// %4: the shadow array's elements may still pend when the work is done.
		{point: "end/pending-cancelled", args: append(fair, "--array=0-23%4"), tasks: -2},
		{point: "end/pilot-cancelled", script: slow, after: scancelRunning, end: spool.StateCancelled},
		{point: "end/released"},
		{point: "atomic/written@6"},
		{point: "atomic/renamed@6"},
		// @2: the first journal write after "accepted" (a round's commits of
		// the job go in one write).
		{point: "journal/half-line@2"},
		{point: "checkpoint/marker-written", agent: true, args: []string{"--glean=mode=scavenger,checkpoint=yes"}},
		{point: "agent/lease-created", agent: true},
		{point: "agent/lease-written", agent: true},
		{point: "agent/task-started", agent: true},
		{point: "agent/result-written", agent: true},
		{point: "agent/result-renamed", agent: true},
		{point: "agent/result-synced", agent: true},
	}
	return cases
}

// notWalked are the failpoints TestFailpoints cannot reach on the loopback
// cluster, and why (docs/reliability.md).
var notWalked = map[string]string{
	"move/marked":            "a move needs a thesis pool (admin-only mode, tests/pool walks a move); a daemon that died after marking finishes the move: TestMovePilot (sidecar/daemon)",
	"move/copied":            "as move/marked: completeMoves redoes the rest of a move once per daemon start (TestMovePilot)",
	"retire/control-written": "a retirement needs a claimant whose start is beyond policy's RetireHorizon while a pilot runs; covered by the policy's and daemon's unit tests, not walked here",
}

// Each failpoint in turn: gleand (or an agent) dies there (SIGKILL, as a
// power cut would leave it), is restarted without it, and the job still
// ends as it should: every task committed exactly once and the anchor
// COMPLETED; a rejected entry's anchor FAILED (it wrote the reason); a cancelled job's
// pilots and shadow array gone. Every journal line parses.
func TestFailpoints(t *testing.T) {
	walked := map[string]bool{}
	for _, c := range fpCases() {
		name, _, _ := strings.Cut(c.point, "@")
		walked[name] = true
	}
	for _, p := range failpoint.Points {
		if !walked[p] && notWalked[p] == "" {
			t.Errorf("failpoint %s is walked by no case", p)
		}
	}
	for _, c := range fpCases() {
		t.Run(strings.NewReplacer("/", "-", "@", "-").Replace(c.point), func(t *testing.T) {
			e := setup(t)
			e.Stop() // stops the helper too; Start brings both back
			if c.agent {
				setAgentFailpoint(t, e, c.point)
			} else {
				e.DaemonEnv = []string{failpoint.EnvVar + "=" + c.point}
			}
			e.Start(t)
			script, tasks := c.script, c.tasks
			if script == "" {
				script = "task.sh"
			}
			switch script {
			case "slow.sh":
				e.WriteFile(t, script, "#!/bin/sh\nsleep 30\n", 0o755)
			case "mid.sh":
				e.WriteFile(t, script, "#!/bin/sh\nsleep 5\n", 0o755)
			}
			if tasks == 0 {
				tasks = 16
			}
			args := c.args
			if len(args) == 0 || !strings.HasPrefix(args[0], "--glean") {
				args = append([]string{"--glean=mode=scavenger"}, args...)
			}
			switch {
			case tasks > 0:
				args = append(args, fmt.Sprintf("--array=0-%d", tasks-1))
			case tasks == -1: // the data folder's items
				tasks = itemCount
			default: // the case's own --array
				tasks = 24
			}
			anchor := e.Sbatch(t, "", append(args, "-o", "out/%A_%a.out", script)...)
			if c.after != nil {
				c.after(t, e, anchor)
			}
			if c.agent {
				cl.WaitFor(t, 90*time.Second, "an agent to die at "+c.point, func() bool { return agentDied(e, anchor, c.point) })
				setAgentFailpoint(t, e, "")
			} else {
				select {
				case <-e.DaemonDone():
				case <-time.After(90 * time.Second):
					t.Fatalf("gleand never reached failpoint %s", c.point)
				}
				if !killedBySIGKILL(e.DaemonStatus()) {
					t.Fatalf("gleand ended %v, not by its failpoint", e.DaemonStatus())
				}
				e.ForgetDaemon()
				e.DaemonEnv = nil
				e.Start(t)
			}
			end := c.end
			if end == "" {
				end = spool.StateDone
			}
			r := e.WaitState(t, anchor, 3*time.Minute, spool.StateDone, spool.StateFailed, spool.StateCancelled, spool.StateRejected)
			if r.State != end {
				t.Fatalf("job %s after a crash at %s (%s), want %s: %+v", r.State, c.point, r.Reason, end, r.Tasks)
			}
			journalIntact(t, e, r)
			switch end {
			case spool.StateDone:
				attempts, dups := exactlyOnce(t, e, anchor, tasks)
				anchorCompleted(t, e, anchor)
				t.Logf("crash at %s: %d attempts, %d duplicates, all %d tasks once", c.point, attempts, dups, tasks)
			default:
				// Its Slurm jobs are gone, no pilot left: a cancelled job's
				// anchor (and shadow) cancelled; a rejected entry's anchor
				// released, to write the reason into -o and end FAILED.
				want := "CANCELLED"
				if r.State == spool.StateRejected {
					want = "FAILED"
				}
				cl.WaitFor(t, 60*time.Second, "the job's Slurm jobs to end", func() bool {
					st, _ := e.SlurmState(t, anchor)
					return st == want && livePilots(t, e, r) == 0
				})
				for _, ev := range e.TaskEvents(t, anchor) {
					if ev.Reason == spool.ReasonCompleted && ev.Final && r.State == spool.StateRejected {
						t.Errorf("a rejected job ran task %d", ev.Index)
					}
				}
				t.Logf("crash at %s: the job ended %s, its anchor %s", c.point, r.State, want)
			}
		})
	}
}

// itemCount is the data folder's size for the intake/items-copied case.
const itemCount = 8

// setAgentFailpoint arms point in every agent that starts from now on
// ("" disarms): debug.agent_failpoint in glean.toml, which agents read at
// their start (pilots run with --export=NONE).
func setAgentFailpoint(t *testing.T, e *gleantest.Env, point string) {
	t.Helper()
	data, err := os.ReadFile(e.Config)
	if err != nil {
		t.Fatal(err)
	}
	text, _, _ := strings.Cut(string(data), "\n[debug]\n")
	if point != "" {
		text += fmt.Sprintf("\n[debug]\nagent_failpoint = %q\n", point)
	}
	if err := os.WriteFile(e.Config, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// agentDied reports whether an agent of the job logged reaching point.
func agentDied(e *gleantest.Env, anchor, point string) bool {
	r := e.LoadRecord(anchor)
	if r == nil {
		return false
	}
	name, _, _ := strings.Cut(point, "@")
	logs, _ := filepath.Glob(filepath.Join(e.Spool, spool.UsersDir, strconv.Itoa(r.UID), spool.WorkDir, r.ID, spool.LogsDir, "*.log"))
	for _, l := range logs {
		data, _ := os.ReadFile(l)
		if strings.Contains(string(data), "failpoint reached") && strings.Contains(string(data), "failpoint="+name) {
			return true
		}
	}
	return false
}

// journalIntact checks that every line of the job's journal parses (a
// torn line would be skipped by the readers).
func journalIntact(t *testing.T, e *gleantest.Env, r *spool.Record) {
	t.Helper()
	// A record that went into its final state just before the crash gets
	// its event journaled by the restarted gleand's start.
	var data []byte
	cl.WaitFor(t, 60*time.Second, "the journal to hold the job's end ("+r.State+")", func() bool {
		var err error
		data, err = os.ReadFile(filepath.Join(e.Spool, spool.JobsDir, r.DirName(), spool.JournalFile))
		return err == nil && strings.Contains(string(data), `"event":"`+r.State+`"`)
	})
	n := strings.Count(string(data), `"event":"`+r.State+`"`)
	if n != 1 {
		t.Errorf("the journal holds the job's end %q %d times, want once", r.State, n)
	}
	if len(data) > 0 && data[len(data)-1] != '\n' {
		t.Errorf("journal ends in a torn line: %q", data[max(0, len(data)-80):])
	}
	for i, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var ev spool.Event
		if json.Unmarshal([]byte(l), &ev) != nil {
			t.Errorf("journal line %d does not parse: %q", i+1, l)
		}
	}
}

// livePilots counts the record's pilots Slurm still shows.
func livePilots(t *testing.T, e *gleantest.Env, r *spool.Record) int {
	n := 0
	for _, p := range e.LoadRecord(r.Anchor).PilotJobs {
		if p.ID == "" {
			continue
		}
		if st, _ := e.SlurmState(t, p.ID); st == "PENDING" || st == "RUNNING" || st == "COMPLETING" {
			n++
		}
	}
	return n
}

// kill -9 gleand at random moments, 20 times, during a 500-task run: 0
// tasks lost, 0 duplicate completions, the job ends COMPLETED.
func TestRandomKills(t *testing.T) {
	e := setup(t)
	// The kill moments are random; GLEAN_SEED=<n> replays a run.
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv("GLEAN_SEED"); v != "" {
		var err error
		if seed, err = strconv.ParseUint(v, 10, 64); err != nil {
			t.Fatalf("GLEAN_SEED=%q: %v", v, err)
		}
	}
	t.Logf("seed %d (GLEAN_SEED=%d replays the kill moments)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, 6))
	logAt := fileSize(filepath.Join(e.Dir, "gleand.log"))
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
		// Ended (not "accepting", the moment before the intake's holds,
		// which is not active either).
		if r := e.Record(t, anchor); r != nil && r.State != spool.StateAccepting && !r.Active() {
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
	if dups != 0 {
		t.Errorf("%d duplicate attempts (a task ran twice): killing gleand must not make an agent run a task again", dups)
	}
	anchorCompleted(t, e, anchor)
	rec := firstRounds(logSince(filepath.Join(e.Dir, "gleand.log"), logAt))
	t.Logf("%d kills of gleand during 500 tasks: %d attempts, %d duplicates, 0 lost; restart to first round: %s",
		kills, attempts, dups, rec)
}

// firstRounds summarizes gleand's "first round done" lines (since_start:
// process start to the end of its first round): n, median, max.
func firstRounds(log string) string {
	var ds []time.Duration
	for _, l := range strings.Split(log, "\n") {
		if !strings.Contains(l, `msg="first round done"`) {
			continue
		}
		_, v, ok := strings.Cut(l, "since_start=")
		if !ok {
			continue
		}
		v, _, _ = strings.Cut(v, " ")
		if d, err := time.ParseDuration(v); err == nil {
			ds = append(ds, d)
		}
	}
	if len(ds) == 0 {
		return "no first round logged"
	}
	slices.Sort(ds)
	return fmt.Sprintf("%d restarts, median %v, max %v", len(ds), ds[len(ds)/2].Round(time.Millisecond), ds[len(ds)-1].Round(time.Millisecond))
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
	// The running tasks went on and their results were committed from the
	// spool while slurmctld was away (3 s tasks, a 20 s outage).
	if during <= 0 {
		t.Errorf("no task committed during the %v outage: gleand must go on committing results from the spool", outage())
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
		if strings.HasPrefix(d.Name(), ".") {
			continue // the daemon's lock, temporaries
		}
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

// newEnv stops the shared installation (one gleand on the cluster at a
// time) and makes a fresh one whose glean.toml edit changes; the caller
// stops it.
func newEnv(t *testing.T, edit func(string) string) *gleantest.Env {
	t.Helper()
	slurmtest.Need(t, cl)
	if env != nil {
		env.Stop()
	}
	cl.CancelAll(t)
	e, err := gleantest.New(cl, gleantest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		data, err := os.ReadFile(e.Config)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(e.Config, []byte(edit(string(data))), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(e.Logs())
		}
		e.Stop()
		if !t.Failed() {
			os.RemoveAll(e.Dir)
		}
	})
	e.WriteFile(t, "out/.keep", "", 0o644)
	return e
}

// lostEvent waits for the journal's lost attempt of task and returns it
// with when it was seen.
func lostEvent(t *testing.T, e *gleantest.Env, anchor string, task int, within time.Duration) (spool.TaskEvent, time.Time) {
	t.Helper()
	var ev spool.TaskEvent
	cl.WaitFor(t, within, fmt.Sprintf("task %d taken back", task), func() bool {
		for _, x := range e.TaskEvents(t, anchor) {
			if x.Index == task && !x.Final {
				ev = x
				return true
			}
		}
		return false
	})
	return ev, time.Now()
}

// A pilot SIGKILLed (its agent and task, as the OOM killer or a crash
// would): Slurm runs the pilot's epilog on the node, where the SPANK
// plugin drops the pilot's marker in <spool>/ended as glean; gleand takes
// its task back at once, although daemon.heartbeat_timeout is 5 minutes
// (and before the 15 s after which a pilot Slurm no longer shows counts as
// gone); the task finishes elsewhere, once.
func TestEpilogMarker(t *testing.T) {
	if spankSO == "" {
		t.Fatal("spank/glean.so could not be built (make spank)")
	}
	e := newEnv(t, func(c string) string {
		return strings.Replace(c, `heartbeat_timeout = "20s"`, `heartbeat_timeout = "5m"`, 1)
	})
	if err := cl.SetPlugstack(fmt.Sprintf("optional %s spool=%s user=%s partition=pilot", spankSO, e.Spool, gleantest.GleanUser)); err != nil {
		t.Fatal(err)
	}
	defer cl.SetPlugstack("optional " + spankSO)
	e.Start(t)
	e.WriteFile(t, "slow.sh", "#!/bin/sh\nsleep 15\n", 0o755)
	anchor := e.Sbatch(t, "", "--glean=mode=scavenger", "--array=0-3", "-o", "out/%A_%a.out", "slow.sh")
	l := runningLease(t, e, anchor)
	killTree(t, l.PID)
	killed := time.Now()
	ev, seen := lostEvent(t, e, anchor, l.Task, 60*time.Second)
	took := seen.Sub(killed)
	marker := filepath.Join(e.Spool, spool.EndedDir, l.Pilot)
	if st, err := os.Stat(marker); err != nil || int(st.Sys().(*syscall.Stat_t).Uid) != e.GleanUID {
		t.Errorf("the epilog marker %s: %v, want a file of glean's", marker, err)
	}
	log, _ := os.ReadFile(filepath.Join(e.Dir, "gleand.log"))
	if !strings.Contains(string(log), "pilot ended (SPANK epilog marker)") {
		t.Errorf("gleand did not take the task back through the marker")
	}
	if ev.Reason != spool.ReasonLost || took > 10*time.Second {
		t.Errorf("task %d taken back as %s after %v, want pilot-lost well before the 15 s Slurm path and the 5 min timeout", l.Task, ev.Reason, took)
	}
	r := e.WaitState(t, anchor, 2*time.Minute, spool.StateDone, spool.StateFailed, spool.StateCancelled)
	if r.State != spool.StateDone {
		t.Fatalf("job %s", r.State)
	}
	exactlyOnce(t, e, anchor, 4)
	t.Logf("pilot %s SIGKILLed: task %d handed back %v later through the epilog marker (heartbeat timeout 5m)", l.Pilot, l.Task, took.Round(100*time.Millisecond))
}

// The heartbeat-timeout path itself: an agent that stops heartbeating
// (SIGSTOP) in a pilot Slurm still shows running: its task is taken back
// once daemon.heartbeat_timeout (20 s here) passed since the lease's last
// heartbeat, not before, and the pilot is still RUNNING then.
func TestHeartbeatTimeout(t *testing.T) {
	e := setup(t)
	e.WriteFile(t, "slow2.sh", "#!/bin/sh\nsleep 40\n", 0o755)
	anchor := e.Sbatch(t, "", "--glean=mode=scavenger", "--array=0-1", "-o", "out/%A_%a.out", "slow2.sh")
	l := runningLease(t, e, anchor)
	if err := syscall.Kill(l.PID, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	defer killTree(t, l.PID)
	stopped := time.Now()
	_, seen := lostEvent(t, e, anchor, l.Task, 90*time.Second)
	took := seen.Sub(stopped)
	if st, _ := e.SlurmState(t, l.Pilot); st != "RUNNING" {
		t.Errorf("pilot %s is %s when its task was taken back; the test wants one Slurm still runs", l.Pilot, st)
	}
	// The last heartbeat was at most 5 s before the stop.
	if took < 15*time.Second {
		t.Errorf("task taken back %v after its agent stopped, before the 20 s heartbeat timeout", took)
	}
	t.Logf("agent of pilot %s stopped (SIGSTOP), Slurm still running it: task %d taken back after %v (heartbeat_timeout 20s)", l.Pilot, l.Task, took.Round(100*time.Millisecond))
	e.AsUser(t, "", "scancel", anchor)
}

// One gleand per spool: a second one started on the running one's spool
// exits at once with one line naming the lock and the holder's pid, and
// the first goes on.
func TestSecondDaemonRefused(t *testing.T) {
	e := setup(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(e.Bin, "gleand"), "-config", e.Config)
	cmd.Env = []string{"PATH=" + gleantest.BasePath, "SLURM_CONF=" + cl.Conf}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(e.GleanUID), Gid: uint32(e.GleanGID)}}
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "another gleand runs on this spool") || !strings.Contains(string(out), "pid "+strconv.Itoa(e.DaemonPID())) {
		t.Errorf("a second gleand: %v %s; want a refusal naming pid %d", err, out, e.DaemonPID())
	}
	select {
	case <-e.DaemonDone():
		t.Errorf("the first gleand exited: %v", e.DaemonStatus())
	default:
	}
}

// An admin scancels pilots mid-task of a checkpoint-aware job
// (jobscripts/examples/montecarlo.sh): the tasks save their state on
// SIGTERM, are handed back, and their next attempts resume where they
// stopped: no work lost beyond the last checkpoint (here: none, the script
// saves on TERM); every task completes once.
func TestScancelledPilotsResume(t *testing.T) {
	e := setup(t)
	monteCarlo(t, e, "mc")
	anchor := e.Sbatch(t, "", "--glean=mode=scavenger,checkpoint=yes", "--array=0-23", "-o", "mc/%a.out",
		"--export=ALL,GLEAN_SH="+filepath.Join(e.Wrappers, "glean.sh")+",MC_ITERS=400,MC_DELAY=0.02", "mc.sh")
	// Once every task is past its first checkpoint-worthy stretch, cancel
	// three pilots that run tasks, as an admin would.
	var victims []spool.Lease
	cl.WaitFor(t, 90*time.Second, "24 tasks running for a while", func() bool {
		victims = victims[:0]
		for _, l := range leases(t, e, anchor) {
			if !l.Started.IsZero() && time.Since(l.Started) > 3*time.Second {
				victims = append(victims, l)
			}
		}
		return len(victims) >= 3
	})
	victims = victims[:3]
	for _, v := range victims {
		cl.Run(t, "scancel", v.Pilot)
	}
	r := e.WaitState(t, anchor, 4*time.Minute, spool.StateDone, spool.StateFailed, spool.StateCancelled)
	if r.State != spool.StateDone {
		t.Fatalf("job %s: %+v", r.State, r.Tasks)
	}
	exactlyOnce(t, e, anchor, 24)
	for _, v := range victims {
		out, err := os.ReadFile(filepath.Join(e.Work, "mc", strconv.Itoa(v.Task)+".out"))
		if err != nil {
			t.Fatal(err)
		}
		text := string(out)
		saved := between(text, "checkpointed at iteration ", "\n")
		resumed := between(text, "resumed at iteration ", "\n")
		if saved == "" || saved != resumed || !strings.Contains(text, "pi ~") {
			t.Errorf("task %d: checkpointed at %q, resumed at %q; output:\n%s", v.Task, saved, resumed, text)
		}
	}
	reasons := map[string]int{}
	for _, ev := range e.TaskEvents(t, anchor) {
		reasons[ev.Reason]++
	}
	if reasons[spool.ReasonFailed] != 0 {
		t.Errorf("attempts by reason %v: an admin's scancel is no failure", reasons)
	}
	t.Logf("3 pilots scancelled mid-task: attempts by reason %v; each resumed at its checkpoint", reasons)
}

func between(s, from, to string) string {
	_, rest, ok := strings.Cut(s, from)
	if !ok {
		return ""
	}
	v, _, _ := strings.Cut(rest, to)
	return v
}

// kill -9 of agents mid-task, with a script that commits a periodic
// checkpoint every 40 samples (jobscripts/examples/montecarlo.sh,
// MC_CKPT): the killed tasks' next attempts resume at or after the last
// checkpoint they had committed when killed (so at most one checkpoint
// interval is lost), their estimates are those of an uninterrupted run,
// and every task completes once.
func TestKilledAgentsResume(t *testing.T) {
	e := setup(t)
	monteCarlo(t, e, "mck")
	const iters, every = 400, 40
	anchor := e.Sbatch(t, "", "--glean=mode=scavenger,checkpoint=yes", "--array=0-11", "-o", "mck/%a.out",
		fmt.Sprintf("--export=ALL,GLEAN_SH=%s,MC_ITERS=%d,MC_DELAY=0.02,MC_CKPT=%d", filepath.Join(e.Wrappers, "glean.sh"), iters, every), "mc.sh")
	// Three running tasks that committed a checkpoint: their agents die.
	committed := map[int]int{} // task -> last committed iteration seen before the kill
	cl.WaitFor(t, 90*time.Second, "3 tasks past a committed checkpoint", func() bool {
		for _, l := range leases(t, e, anchor) {
			if committed[l.Task] > 0 || len(committed) >= 3 {
				continue
			}
			out, _ := os.ReadFile(filepath.Join(e.Work, "mck", strconv.Itoa(l.Task)+".out"))
			last := lastInt(string(out), "committed at iteration ")
			if last >= every && last < iters-2*every {
				killTree(t, l.PID)
				committed[l.Task] = last
			}
		}
		return len(committed) >= 3
	})
	r := e.WaitState(t, anchor, 4*time.Minute, spool.StateDone, spool.StateFailed, spool.StateCancelled)
	if r.State != spool.StateDone {
		t.Fatalf("job %s: %+v", r.State, r.Tasks)
	}
	exactlyOnce(t, e, anchor, 12)
	want := uninterrupted(t, e, iters)
	for task, last := range committed {
		out, err := os.ReadFile(filepath.Join(e.Work, "mck", strconv.Itoa(task)+".out"))
		if err != nil {
			t.Fatal(err)
		}
		resumed := between(string(out), "attempt 2: resumed at iteration ", "\n")
		n, err := strconv.Atoi(resumed)
		if err != nil || n < last || n%every != 0 {
			t.Errorf("task %d: committed iteration %d when killed, attempt 2 resumed at %q; output:\n%s", task, last, resumed, out)
		}
		if !strings.Contains(string(out), fmt.Sprintf("task %d: %s", task, want[task])) {
			t.Errorf("task %d's estimate differs from an uninterrupted run's (%s):\n%s", task, want[task], out)
		}
	}
	reasons := map[string]int{}
	for _, ev := range e.TaskEvents(t, anchor) {
		reasons[ev.Reason]++
	}
	if reasons[spool.ReasonFailed] != 0 {
		t.Errorf("attempts by reason %v: a killed agent is no failure of the task", reasons)
	}
	t.Logf("agents of tasks %v SIGKILLed (last committed iterations): each resumed at or after it; attempts by reason %v", committed, reasons)
}

// lastInt is the number after the last occurrence of prefix in s (0 if none).
func lastInt(s, prefix string) int {
	i := strings.LastIndex(s, prefix)
	if i < 0 {
		return 0
	}
	v, _, _ := strings.Cut(s[i+len(prefix):], "\n")
	n, _ := strconv.Atoi(v)
	return n
}

// uninterrupted runs montecarlo.sh outside glean for tasks 0..11 and
// returns each one's result line ("pi ~ ...").
func uninterrupted(t *testing.T, e *gleantest.Env, iters int) map[int]string {
	t.Helper()
	out := map[int]string{}
	for task := 0; task < 12; task++ {
		cmd := exec.Command("sh", filepath.Join(e.Work, "mc.sh"))
		cmd.Env = []string{"PATH=" + gleantest.BasePath, "GLEAN_SH=" + filepath.Join(e.Wrappers, "glean.sh"),
			"MC_ITERS=" + strconv.Itoa(iters), "SLURM_ARRAY_JOB_ID=1", "SLURM_ARRAY_TASK_ID=" + strconv.Itoa(task), "GLEAN_CHECKPOINT_ROOT=" + t.TempDir()}
		data, err := cmd.Output()
		if err != nil {
			t.Fatal(err)
		}
		out[task] = between(string(data), fmt.Sprintf("task %d: ", task), "\n")
	}
	return out
}

// monteCarlo installs jobscripts/examples/montecarlo.sh as mc.sh in the
// test user's directory, with an output directory out.
func monteCarlo(t *testing.T, e *gleantest.Env, out string) {
	t.Helper()
	script, err := os.ReadFile(filepath.Join(gleantest.RepoRoot(), "jobscripts", "examples", "montecarlo.sh"))
	if err != nil {
		t.Fatal(err)
	}
	e.WriteFile(t, "mc.sh", string(script), 0o755)
	e.WriteFile(t, out+"/.keep", "", 0o644)
}
