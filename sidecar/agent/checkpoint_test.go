package agent

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/glean-hpc/glean/sidecar/spool"
)

// The checkpoint contract end to end under the agent, with the example job
// scripts as users would submit them (jobscripts/examples) and the real
// wrappers/glean.sh: TERM mid-run, then the next attempt.

func repoFile(t *testing.T, rel string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("..", "..", rel))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// ckptRun is one job under agents that a test TERMs mid-run.
type ckptRun struct {
	*fixture
	ck     Checkpoints
	out    string // task 0's output file
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

func newCkptRun(t *testing.T, script string, env []string, aware bool, command string) *ckptRun {
	t.Helper()
	body, err := os.ReadFile(repoFile(t, script))
	if err != nil {
		t.Fatal(err)
	}
	env = append(env, "PATH="+os.Getenv("PATH"), "GLEAN_SH="+repoFile(t, "wrappers/glean.sh"))
	f := newFixture(t, 1, string(body), env, func(e *spool.Entry) { e.Glean.Checkpoint = aware })
	r := &ckptRun{fixture: f, out: filepath.Join(f.cwd, fmt.Sprintf("slurm-%s_0.out", testAnchor)),
		ck: Checkpoints{Spool: f.sp.Dir, Root: filepath.Join(t.TempDir(), "checkpoints"), UID: os.Getuid(), Command: command}}
	var ctx context.Context
	ctx, r.cancel = context.WithCancel(context.Background())
	f.commit(ctx, &r.wg)
	t.Cleanup(func() { r.cancel(); r.wg.Wait() })
	return r
}

func (r *ckptRun) agent(pilot string) *Agent {
	return r.fixture.agent(pilot, 1, func(o *Options) { o.Checkpoint = r.ck; o.Idle = 50 * time.Millisecond })
}

// termAfter runs an agent until the task's output matches progress, then
// TERMs the agent (its context), and waits for its end and the commit.
func (r *ckptRun) termAfter(progress *regexp.Regexp) {
	t := r.t
	t.Helper()
	ctx, term := context.WithCancel(context.Background())
	wait := runAgent(t, ctx, r.agent("201"))
	waitFor(t, "progress "+progress.String(), func() bool {
		b, _ := os.ReadFile(r.out)
		return progress.Match(b)
	})
	term()
	if why := wait(); why != EndSignaled {
		t.Fatalf("first agent ended %q, want %q", why, EndSignaled)
	}
	waitFor(t, "the first attempt's commit", func() bool { return len(r.events()) == 1 })
}

// finish runs a second agent to the job's end.
func (r *ckptRun) finish() {
	r.t.Helper()
	if why := runAgent(r.t, context.Background(), r.agent("202"))(); why != EndFinished {
		r.t.Fatalf("second agent ended %q, want %q", why, EndFinished)
	}
}

// A checkpoint-aware Monte Carlo task TERMed mid-run saves its counter and
// exits 99; the next attempt gets GLEAN_RESTARTED=1 and the same
// directory, goes on from the saved iteration and prints what an
// uninterrupted run prints. The completed task's directory is removed.
func TestMonteCarloResumesFromCheckpoint(t *testing.T) {
	env := []string{"MC_ITERS=100", "MC_DELAY=0.01"}
	r := newCkptRun(t, "jobscripts/examples/montecarlo.sh", env, true, "")
	dir := r.ck.TaskDir(testAnchor, 0)

	r.termAfter(regexp.MustCompile(`iteration 50\n`))
	first := r.events()[0]
	if !first.Checkpointed || first.Exit != spool.CheckpointExit {
		t.Fatalf("first attempt: %+v; want checkpointed with exit %d", first, spool.CheckpointExit)
	}
	st, err := os.Stat(dir)
	if err != nil || st.Mode().Perm() != 0o700 {
		t.Fatalf("checkpoint directory %s: %v, %v; want mode 0700", dir, st, err)
	}
	saved := strings.Fields(readFile(t, filepath.Join(dir, "state")))
	if n, _ := strconv.Atoi(saved[0]); n < 50 || n >= 100 {
		t.Fatalf("saved state %q: want the counter between 50 and 99", saved)
	}

	r.finish()
	out := readFile(t, r.out)
	if want := "attempt 2: resumed at iteration " + saved[0] + "\n"; !strings.Contains(out, want) {
		t.Errorf("output lacks %q:\n%s", want, out)
	}
	// The same task run straight through, outside glean.
	cmd := exec.Command("sh", repoFile(t, "jobscripts/examples/montecarlo.sh"))
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "GLEAN_SH=" + repoFile(t, "wrappers/glean.sh"), "MC_ITERS=100",
		"SLURM_ARRAY_JOB_ID=1", "SLURM_ARRAY_TASK_ID=0", "GLEAN_CHECKPOINT_ROOT=" + t.TempDir()}
	straight, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(straight)), "\n")
	if last := lines[len(lines)-1]; !strings.HasSuffix(out, last+"\n") {
		t.Errorf("resumed run ends\n%s\nwant the uninterrupted result %q", out, last)
	}
	evs := r.events()
	if len(evs) != 2 || evs[1].Reason != spool.ReasonCompleted || evs[1].Checkpointed {
		t.Errorf("events %+v; want a checkpointed attempt, then a completed one", evs)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("the completed task's checkpoint directory is still there (%v)", err)
	}
	if _, err := os.Stat(filepath.Join(r.ck.Root, testAnchor, jobMarker)); err != nil {
		t.Errorf("the job's marker: %v", err)
	}
}

// A plain task TERMed mid-run is not checkpointed: the next attempt starts
// from scratch with GLEAN_RESTARTED=0 and finds its checkpoint directory
// emptied of what an earlier attempt left.
func TestPlainRestartsFromScratch(t *testing.T) {
	r := newCkptRun(t, "jobscripts/examples/plain.sh", []string{"PLAIN_STEPS=6", "PLAIN_DELAY=0.05"}, false, "")
	r.termAfter(regexp.MustCompile(`step 2\n`))
	if first := r.events()[0]; first.Checkpointed {
		t.Fatalf("first attempt %+v: a TERMed plain task is not checkpointed", first)
	}
	// Something the killed attempt left behind.
	dir := r.ck.TaskDir(testAnchor, 0)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "half-written"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	r.finish()
	out := readFile(t, r.out)
	if want := "attempt 2 (restarted 0): task 0, starting at step 0\n"; !strings.Contains(out, want) {
		t.Errorf("output lacks %q:\n%s", want, out)
	}
	if !strings.HasSuffix(out, "step 6\ntask 0: sum 0\n") {
		t.Errorf("the second attempt did not run to the end:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(dir, "half-written")); !os.IsNotExist(err) {
		t.Errorf("a fresh attempt found the earlier attempt's files (%v)", err)
	}
}

// With checkpoint.command set, a task that is not checkpoint-aware runs
// under it (command script args...) with the checkpoint variables; the
// command saves on TERM and exits 99, and restores on the next attempt.
func TestSiteCheckpointCommand(t *testing.T) {
	fake := filepath.Join(t.TempDir(), "fake-checkpoint")
	if err := os.WriteFile(fake, []byte(`#!/bin/sh
echo "fake-checkpoint: restarted=$GLEAN_RESTARTED script=$(basename "$1")"
img=$GLEAN_CHECKPOINT_DIR/image
if [ "$GLEAN_RESTARTED" = 1 ]; then echo "fake-checkpoint: restoring $(cat "$img")"; fi
trap 'echo "image of attempt $GLEAN_ATTEMPT" >"$img"; exit 99' TERM
"$@"
`), 0o755); err != nil {
		t.Fatal(err)
	}
	r := newCkptRun(t, "jobscripts/examples/plain.sh", []string{"PLAIN_STEPS=4", "PLAIN_DELAY=0.05"}, false, fake)
	r.termAfter(regexp.MustCompile(`step 1\n`))
	if first := r.events()[0]; !first.Checkpointed {
		t.Fatalf("first attempt %+v: want checkpointed by the site command", first)
	}
	r.finish()
	out := readFile(t, r.out)
	for _, want := range []string{"fake-checkpoint: restarted=0 script=script\n", "fake-checkpoint: restarted=1 script=script\n",
		"fake-checkpoint: restoring image of attempt 1\n", "task 0: sum 0\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestTaskArgv(t *testing.T) {
	for _, tc := range []struct {
		name    string
		command string
		aware   bool
		want    []string
	}{
		{"no site command", "", false, []string{"/s", "a"}},
		{"not aware: under the command", "/usr/bin/ckpt", false, []string{"/usr/bin/ckpt", "/s", "a"}},
		{"checkpoint-aware: as it is", "/usr/bin/ckpt", true, []string{"/s", "a"}},
	} {
		if got := taskArgv("/s", []string{"a"}, tc.command, tc.aware); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestCheckpointRoot(t *testing.T) {
	if got, _ := CheckpointRoot("/scratch/%u/ck", "alice", os.Getenv); got != "/scratch/alice/ck" {
		t.Errorf("configured root: %q", got)
	}
	got, err := CheckpointRoot("", "alice", func(string) string { return "/home/x" })
	if err != nil || !strings.HasSuffix(got, "/.glean/checkpoints") || !filepath.IsAbs(got) {
		t.Errorf("default root: %q, %v", got, err)
	}
}

// The retention: a job's checkpoints go when it ended and its retention
// passed (done: keep_completed; failed or cancelled: keep_failed), or when
// its record is gone; nothing else under the root is touched.
func TestSweep(t *testing.T) {
	f := newFixture(t, 1, "#!/bin/sh\n", nil, nil)
	now := time.Now()
	root := t.TempDir()
	put := func(anchor, state string, ended time.Time) string {
		rec := &spool.Record{ID: spool.NewID(now), UID: f.uid, State: state, Ended: ended}
		if state != "" {
			if err := f.recs.Put(rec); err != nil {
				t.Fatal(err)
			}
		}
		dir := filepath.Join(root, anchor)
		c := Checkpoints{Spool: f.sp.Dir, Root: root, UID: os.Getuid()}
		if mErr, err := c.prepareJob(&Job{UID: f.uid, ID: rec.ID, Entry: &spool.Entry{Anchor: anchor}}); err != nil || mErr != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "state"), []byte("1"), 0o600); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	gone := []string{
		put("1", spool.StateDone, now.Add(-time.Minute)),
		put("2", spool.StateFailed, now.Add(-8*24*time.Hour)),
		put("3", spool.StateCancelled, now.Add(-8*24*time.Hour)),
		put("4", "", time.Time{}), // no record any more
	}
	kept := []string{
		put("5", spool.StateRunning, time.Time{}),
		put("6", spool.StateFailed, now.Add(-time.Hour)),
		put("7", spool.StateCancelled, now.Add(-time.Hour)),
		filepath.Join(root, "mine"), // not glean's
	}
	if err := os.MkdirAll(kept[3], 0o700); err != nil {
		t.Fatal(err)
	}
	other := put("8", spool.StateDone, now.Add(-time.Hour))
	if err := os.WriteFile(filepath.Join(other, jobMarker), []byte(`{"spool":"/elsewhere","record":"0.x"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	kept = append(kept, other)

	removed, err := Checkpoints{Spool: f.sp.Dir, Root: root, UID: os.Getuid()}.Sweep(f.sp, 7*24*time.Hour, now)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(removed)
	if !slices.Equal(removed, gone) {
		t.Errorf("removed %q, want %q", removed, gone)
	}
	for _, d := range kept {
		if _, err := os.Stat(d); err != nil {
			t.Errorf("%s: %v", d, err)
		}
	}
	for _, d := range gone {
		if _, err := os.Stat(d); !os.IsNotExist(err) {
			t.Errorf("%s still there", d)
		}
	}
}

// glean.sh outside glean: the directory falls back to
// $HOME/.glean/checkpoints/<array job>/<task>, mode 0700; a TERM whose
// save fails exits 143 (start again), one whose save succeeds exits 99.
func TestGleanShOutsideGlean(t *testing.T) {
	home := t.TempDir()
	// Not writable by others whatever umask another test's agent left
	// the process with meanwhile (glean_checkpoint_dir refuses that).
	if err := os.Chmod(home, 0o700); err != nil {
		t.Fatal(err)
	}
	sh := func(script string, extra ...string) *exec.Cmd {
		cmd := exec.Command("sh", "-c", ". \"$GLEAN_SH\"\n"+script)
		cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "GLEAN_SH=" + repoFile(t, "wrappers/glean.sh"),
			"SLURM_ARRAY_JOB_ID=77", "SLURM_ARRAY_TASK_ID=3"}, extra...)
		return cmd
	}
	out, err := sh(`glean_checkpoint_dir; echo "$GLEAN_ATTEMPT $GLEAN_RESTARTED"`).Output()
	want := filepath.Join(home, ".glean/checkpoints/77/3") + "\n1 0\n"
	if err != nil || string(out) != want {
		t.Fatalf("got %q, %v; want %q", out, err, want)
	}
	if st, err := os.Stat(filepath.Join(home, ".glean")); err != nil || st.Mode().Perm() != 0o700 {
		t.Errorf("~/.glean: %v %v", st, err)
	}
	for _, tc := range []struct {
		save string
		exit int
	}{{"true", spool.CheckpointExit}, {"false", 143}} {
		err := sh("glean_on_term " + tc.save + "\nkill -TERM $$\necho not reached").Run()
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != tc.exit {
			t.Errorf("save %s: %v, want exit %d", tc.save, err, tc.exit)
		}
	}
}

// GLEAN_* variables the agent owns, captured from the submitting shell (a
// job submitted from inside another glean task), do not reach the task:
// without a checkpoint directory of its own it would have used that task's
// (glean_checkpoint_dir takes GLEAN_CHECKPOINT_DIR first). The user's
// GLEAN_DIR and GLEAN_BATCH (glean_items outside glean) stay.
func TestTaskEnvDropsCapturedGleanVars(t *testing.T) {
	captured := []string{"GLEAN_JOB=999", "GLEAN_TASK_ID=3", "GLEAN_ATTEMPT=7", "GLEAN_ATTEMPT_ID=feedface",
		"GLEAN_RESTARTED=1", "GLEAN_CHECKPOINT_DIR=/home/u/.glean/checkpoints/999/3", "GLEAN_CHECKPOINT_ROOT=/home/u/ck",
		"GLEAN_ITEMS=/spool/other/items", "GLEAN_DIR=/data", "GLEAN_BATCH=4"}
	j := &Job{Entry: &spool.Entry{Anchor: testAnchor, Export: "ALL"}, Env: captured}
	env := TaskEnv(j, nil, TaskVars{Task: 0, Attempt: 1})
	for k, want := range map[string]string{"GLEAN_JOB": testAnchor, "GLEAN_TASK_ID": "0", "GLEAN_ATTEMPT": "1",
		"GLEAN_RESTARTED": "0", "GLEAN_DIR": "/data", "GLEAN_BATCH": "4",
		"GLEAN_ATTEMPT_ID": "", "GLEAN_CHECKPOINT_DIR": "", "GLEAN_CHECKPOINT_ROOT": "", "GLEAN_ITEMS": ""} {
		if got, ok := lookupEnv(env, k); got != want || ok != (want != "") {
			t.Errorf("%s = %q (set %v), want %q", k, got, ok, want)
		}
	}
}

func TestTaskEnvCheckpointVars(t *testing.T) {
	j := &Job{Entry: &spool.Entry{Anchor: testAnchor, Export: "ALL"}}
	env := TaskEnv(j, nil, TaskVars{Task: 3, Attempt: 2, Restarted: true, CkptRoot: "/r", CkptDir: "/r/4242/3"})
	for _, kv := range []string{"GLEAN_ATTEMPT=2", "GLEAN_RESTARTED=1", "GLEAN_CHECKPOINT_ROOT=/r", "GLEAN_CHECKPOINT_DIR=/r/4242/3"} {
		if !slices.Contains(env, kv) {
			t.Errorf("env lacks %s: %q", kv, env)
		}
	}
	env = TaskEnv(j, nil, TaskVars{Task: 3, Attempt: 1})
	if !slices.Contains(env, "GLEAN_RESTARTED=0") || slices.ContainsFunc(env, func(kv string) bool { return strings.HasPrefix(kv, "GLEAN_CHECKPOINT_") }) {
		t.Errorf("without a root: %q", env)
	}
}

// Whether an attempt resumes from its checkpoint directory, by how the
// task's earlier attempts ended and whether the task committed a periodic
// checkpoint (glean_checkpoint_commit): a save on TERM (checkpointed, exit
// 99) is complete and stays resumable across later expected kills (the
// agent SIGKILLed: pilot-lost; a lost node; a give-way before the attempt
// saved) until an attempt fails by itself; an expected kill resumes from a
// committed directory too; a failure never resumes, and the directory is
// emptied.
func TestCommittedCheckpointResume(t *testing.T) {
	type end struct {
		reason       string
		checkpointed bool
	}
	saved := end{spool.ReasonGiveWay, true}
	for _, tc := range []struct {
		name      string
		ends      []end // the earlier attempts, in order
		committed bool
		resume    bool
	}{
		{"killed after a commit", []end{{spool.ReasonLost, false}}, true, true},
		{"node lost after a commit", []end{{spool.ReasonNodeFailure, false}}, true, true},
		{"killed before any commit", []end{{spool.ReasonLost, false}}, false, false},
		{"failed after a commit", []end{{spool.ReasonFailed, false}}, true, false},
		{"checkpointed on TERM", []end{saved}, false, true},
		{"given way without saving, after a commit", []end{{spool.ReasonGiveWay, false}}, true, true},
		{"saved on TERM, then node lost", []end{saved, {spool.ReasonNodeFailure, false}}, false, true},
		{"saved on TERM, then given way and lost before saving",
			[]end{saved, {spool.ReasonGiveWay, false}, {spool.ReasonLost, false}}, false, true},
		{"saved on TERM, then failed", []end{saved, {spool.ReasonFailed, false}}, false, false},
		{"saved on TERM, failed, then lost", []end{saved, {spool.ReasonFailed, false}, {spool.ReasonLost, false}}, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, 1, "#!/bin/sh\necho \"restarted=$GLEAN_RESTARTED state=$(cat \"$GLEAN_CHECKPOINT_DIR/state\" 2>/dev/null)\"\n",
				nil, func(e *spool.Entry) { e.Glean.Checkpoint = true })
			c, dir := f.savedState(t, "42")
			if tc.committed {
				if err := os.WriteFile(filepath.Join(dir, committedMarker), []byte("1 0\n"), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			for i, e := range tc.ends {
				ev := spool.TaskEvent{Index: 0, Attempt: fmt.Sprint("a", i+1), Reason: e.reason, Checkpointed: e.checkpointed, Exit: 137}
				if e.checkpointed {
					ev.Exit = spool.CheckpointExit
				}
				f.journalTask(ev)
			}
			runAgent(t, context.Background(), f.agent("401", 1, func(o *Options) { o.Checkpoint = c }))()
			want := "restarted=0 state=\n"
			if tc.resume {
				want = "restarted=1 state=42\n"
			}
			if got := readFile(t, filepath.Join(f.cwd, "slurm-"+testAnchor+"_0.out")); got != want {
				t.Errorf("attempt %d printed %q, want %q", len(tc.ends)+1, got, want)
			}
		})
	}
}

// A save on TERM outlives a next attempt given way during its start-up,
// before its script set glean_on_term (so it exited by the TERM without
// saving): the attempt after that resumes from the save, through the real
// glean.sh. It used to start from scratch with the save deleted.
func TestTermSaveSurvivesEarlyGiveWay(t *testing.T) {
	marks := t.TempDir()
	script := "#!/bin/sh\n. \"$GLEAN_SH\"\ndir=$(glean_checkpoint_dir)\n" +
		"echo \"attempt=$GLEAN_ATTEMPT restarted=$GLEAN_RESTARTED state=$(cat \"$dir/state\" 2>/dev/null)\"\n" +
		"touch \"$MARKS/started.$GLEAN_ATTEMPT\"\n" +
		"while [ ! -e \"$MARKS/loaded\" ]; do sleep 0.01; done # start-up: loading the application\n" +
		"glean_on_term 'echo \"$i\" >\"$dir/state.tmp\" && mv \"$dir/state.tmp\" \"$dir/state\"'\n" +
		"i=0\nwhile :; do i=$((i+1)); sleep 0.01; done\n"
	f := newFixture(t, 1, script, []string{"PATH=" + os.Getenv("PATH"), "GLEAN_SH=" + repoFile(t, "wrappers/glean.sh"), "MARKS=" + marks},
		func(e *spool.Entry) { e.Glean.Checkpoint = true })
	c, _ := f.savedState(t, "42")
	// Attempt 1 saved on TERM.
	f.journalTask(spool.TaskEvent{Index: 0, Attempt: "a1", Reason: spool.ReasonGiveWay, Checkpointed: true, Exit: spool.CheckpointExit})
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	f.commit(ctx, &wg)
	t.Cleanup(func() { cancel(); wg.Wait() })

	for n := 2; n <= 3; n++ {
		actx, term := context.WithCancel(context.Background())
		wait := runAgent(t, actx, f.agent(fmt.Sprint(1500+n), 1, func(o *Options) {
			o.Checkpoint = c
			o.GaveWay = func() bool { return true }
		}))
		waitFor(t, fmt.Sprint("attempt ", n, " started"), func() bool {
			_, err := os.Stat(filepath.Join(marks, fmt.Sprint("started.", n)))
			return err == nil
		})
		term() // glean gives way with this pilot
		wait()
		waitFor(t, fmt.Sprint("attempt ", n, "'s commit"), func() bool { return len(f.events()) == n })
		if e := f.events()[n-1]; e.Checkpointed {
			t.Fatalf("attempt %d %+v: it had not set glean_on_term, it cannot have saved", n, e)
		}
	}
	out := readFile(t, filepath.Join(f.cwd, "slurm-"+testAnchor+"_0.out"))
	if want := "attempt=3 restarted=1 state=42\n"; !strings.Contains(out, want) {
		t.Errorf("output lacks %q: attempt 1's save was not kept:\n%s", want, out)
	}
}

// glean_checkpoint_commit renames .glean-committed into the task's
// directory (attempt and time), leaving no temporary behind.
func TestGleanShCommit(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ck")
	if err := os.Chmod(filepath.Dir(dir), 0o700); err != nil { // whatever umask another test left
		t.Fatal(err)
	}
	cmd := exec.Command("sh", "-c", `. "$GLEAN_SH"; d=$(glean_checkpoint_dir) && echo 7 > "$d/state" && glean_checkpoint_commit`)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "GLEAN_SH=" + repoFile(t, "wrappers/glean.sh"), "GLEAN_CHECKPOINT_DIR=" + dir, "GLEAN_ATTEMPT=3"}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	data, err := os.ReadFile(filepath.Join(dir, committedMarker))
	if f := strings.Fields(string(data)); err != nil || len(f) != 2 || f[0] != "3" {
		t.Errorf("the commit marker: %q %v", data, err)
	}
	if _, err := os.Stat(filepath.Join(dir, committedMarker+".tmp")); err == nil {
		t.Error("a temporary marker left behind")
	}
}

// A completed task's checkpoint is removed only once its result is in
// place: when the result cannot be written (here the results directory is
// a file), the task runs again, told to resume (its last committed attempt
// saved on TERM), and must find its directory as it was. It used to be
// removed first, so the next attempt resumed from an empty directory.
func TestCompletedCheckpointKeptUntilResult(t *testing.T) {
	marks := t.TempDir()
	script := "#!/bin/sh\necho \"attempt=$GLEAN_ATTEMPT restarted=$GLEAN_RESTARTED state=$(cat \"$GLEAN_CHECKPOINT_DIR/state\" 2>/dev/null)\"\n" +
		"touch \"$MARKS/started.$GLEAN_ATTEMPT\"\nwhile [ ! -e \"$MARKS/go\" ]; do sleep 0.01; done\n"
	f := newFixture(t, 1, script, []string{"PATH=" + os.Getenv("PATH"), "MARKS=" + marks},
		func(e *spool.Entry) { e.Glean.Checkpoint = true })
	c, dir := f.savedState(t, "42")
	f.journalTask(spool.TaskEvent{Index: 0, Attempt: "a1", Reason: spool.ReasonGiveWay, Checkpointed: true, Exit: spool.CheckpointExit})

	wait := runAgent(t, context.Background(), f.agent("701", 1, func(o *Options) { o.Checkpoint = c }))
	waitFor(t, "attempt 2 started", func() bool { _, err := os.Stat(filepath.Join(marks, "started.2")); return err == nil })
	results := filepath.Join(f.work().Dir, spool.ResultsDir)
	if err := os.Rename(results, results+".away"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(results, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(marks, "go"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	wait() // attempt 2 exited 0; its result could not be written
	if got, err := os.ReadFile(filepath.Join(dir, "state")); err != nil || string(got) != "42" {
		t.Errorf("after a completion whose result was not written, the checkpoint holds %q, %v; want it kept", got, err)
	}
	if err := os.Remove(results); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(results+".away", results); err != nil {
		t.Fatal(err)
	}
	runAgent(t, context.Background(), f.agent("702", 1, func(o *Options) { o.Checkpoint = c }))()
	if out, want := readFile(t, filepath.Join(f.cwd, "slurm-"+testAnchor+"_0.out")), "attempt=2 restarted=1 state=42\n"; strings.Count(out, want) != 2 {
		t.Errorf("both runs of attempt 2 should resume from the save; output:\n%s", out)
	}
}

// On scancel Slurm TERMs every process of the job and the agent forwards
// its own TERM: a second TERM during the save must not kill the shell
// half-way (it once did: the trap restored TERM's default action first).
func TestGleanShSecondTerm(t *testing.T) {
	saved := filepath.Join(t.TempDir(), "saved")
	cmd := exec.Command("sh", "-c", `. "$GLEAN_SH"
glean_on_term 'kill -TERM $$; sleep 0.2; echo ok > "$SAVED"'
kill -TERM $$
sleep 5`)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "GLEAN_SH=" + repoFile(t, "wrappers/glean.sh"), "SAVED=" + saved}
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != spool.CheckpointExit {
		t.Errorf("a second TERM during the save: %v, want exit %d", err, spool.CheckpointExit)
	}
	if got := strings.TrimSpace(readFile(t, saved)); got != "ok" {
		t.Errorf("the save did not finish: %q", got)
	}
}

// Slurm TERMs every process of a job it cancels, the task as well as the
// agent: a task that saves and exits 99 before the agent noticed its own
// TERM still counts as checkpointed (it once counted as a task that
// exited 99 by itself: a failure, and its checkpoint was thrown away).
func TestCheckpointBeforeAgentTerm(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	f := newFixture(t, 1, "#!/bin/sh\n. \"$GLEAN_SH\"\nglean_on_term true\necho $$ > \"$PIDFILE\"\nwhile :; do sleep 0.05; done\n",
		[]string{"PATH=" + os.Getenv("PATH"), "GLEAN_SH=" + repoFile(t, "wrappers/glean.sh"), "PIDFILE=" + pidFile}, nil)
	ctx, term := context.WithCancel(context.Background())
	wait := runAgent(t, ctx, f.agent("501", 1, nil))
	var pid int
	waitFor(t, "the task's pid", func() bool {
		data, _ := os.ReadFile(pidFile)
		pid, _ = strconv.Atoi(strings.TrimSpace(string(data)))
		return pid > 0
	})
	// Slurm's TERM reaches the task first; the agent's a moment later.
	if err := syscall.Kill(-pid, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond) // the gap between the two signals under test, not a wait for a condition
	term()
	if why := wait(); why != EndSignaled {
		t.Fatalf("agent ended %q", why)
	}
	res := f.results()
	if len(res) != 1 || res[0].Outcome != spool.OutcomeCheckpointed {
		t.Errorf("results %+v, want the attempt checkpointed", res)
	}
}
