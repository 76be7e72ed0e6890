package agent

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/glean-hpc/glean/sidecar/spool"
)

// fixture is a temp spool holding one job: the owner's incoming files,
// the daemon's record and journal, and optionally a fake daemon that
// commits results as gleand does.
type fixture struct {
	t    *testing.T
	sp   *spool.Spool
	recs *spool.Records
	rec  *spool.Record
	uid  int
	id   string
	cwd  string
}

const testAnchor = "4242"

// newFixture makes a job of n array tasks (0..n-1) running script, with
// env captured as given; mutate may change the entry before it is stored.
func newFixture(t *testing.T, n int, script string, env []string, mutate func(*spool.Entry)) *fixture {
	t.Helper()
	dir := t.TempDir()
	sp := &spool.Spool{Dir: filepath.Join(dir, "spool"), MaxEntryBytes: 1 << 20, MaxScriptBytes: 1 << 20}
	recs, err := sp.Init(-1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { recs.Close() })
	uid := os.Getuid()
	id := spool.NewID(time.Now())
	cwd := filepath.Join(dir, "cwd")
	if err := os.MkdirAll(cwd, 0o755); err != nil {
		t.Fatal(err)
	}
	e := &spool.Entry{Version: 1, ID: id, Nonce: strings.Repeat("a", 32), Submitted: time.Now(), User: "tester",
		Anchor: testAnchor, Name: "myjob", Mode: "scavenger", Script: "job.sh", Cwd: cwd, Export: "ALL",
		Array: &spool.Array{Ranges: []spool.Range{{Start: 0, End: n - 1, Step: 1}}}, Tasks: n,
		Resources: spool.Resources{CPUsPerTask: 1, NTasks: 1, CPUs: 1}}
	if mutate != nil {
		mutate(e)
	}
	e.ScriptSize = int64(len(script))
	var envb []byte
	for _, kv := range env {
		envb = append(append(envb, kv...), 0)
	}
	var items []byte
	if e.Items != nil {
		items = []byte{} // the test writes its own
	}
	// As the wrapper writes it; the daemon's record names its digest.
	if err := sp.EnsureUserDirs(uid); err != nil {
		t.Fatal(err)
	}
	p, err := sp.Prepare(uid, id, []byte(script), envb, items)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Commit(e); err != nil {
		t.Fatal(err)
	}
	read, err := sp.ReadIncoming(spool.Incoming{UID: uid, Name: id}, spool.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	rec := &spool.Record{ID: id, UID: uid, User: "tester", Anchor: testAnchor, Name: e.Name, Mode: e.Mode,
		State: spool.StateQueued, Entry: e, EntryDigest: read.Digest, Tasks: spool.Counts{Total: n, Pending: n}}
	if err := recs.Put(rec); err != nil {
		t.Fatal(err)
	}
	if err := recs.Journal(rec, spool.Event{Time: time.Now(), Event: "accepted"}); err != nil {
		t.Fatal(err)
	}
	return &fixture{t: t, sp: sp, recs: recs, rec: rec, uid: uid, id: id, cwd: cwd}
}

func (f *fixture) job() *Job {
	f.t.Helper()
	j, err := LoadJob(f.sp, f.uid, f.id, os.Getuid())
	if err != nil {
		f.t.Fatal(err)
	}
	return j
}

func (f *fixture) work() *spool.Work {
	f.t.Helper()
	w, err := f.sp.OpenWork(f.uid, f.id)
	if err != nil {
		f.t.Fatal(err)
	}
	return w
}

// agent makes an agent with test-sized intervals.
func (f *fixture) agent(pilot string, cpus int, mod func(*Options)) *Agent {
	opt := Options{Pilot: pilot, Node: "node1", Env: []string{"SLURM_JOB_ID=" + pilot},
		Capacity: Capacity{CPUs: cpus}, Grace: 2 * time.Second, Heartbeat: 20 * time.Millisecond,
		Poll: 5 * time.Millisecond, Idle: 300 * time.Millisecond, Reap: 2 * time.Second}
	if mod != nil {
		mod(&opt)
	}
	return New(f.job(), f.work(), opt)
}

// commit is the daemon's part: journal every result, remove it. It runs
// until ctx ends.
func (f *fixture) commit(ctx context.Context, wg *sync.WaitGroup) {
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			f.commitOnce()
			select {
			case <-ctx.Done():
				f.commitOnce()
				return
			case <-tick.C:
			}
		}
	}()
}

func (f *fixture) commitOnce() {
	ws, err := f.sp.ScanWork(f.uid, f.id)
	if err != nil {
		f.t.Error(err)
		return
	}
	for _, ri := range ws.Results {
		if ri.Err != nil {
			f.t.Errorf("result %s: %v", ri.Name, ri.Err)
			continue
		}
		r := ri.Result
		ev := spool.TaskEvent{Index: r.Task, Attempt: r.Attempt, Exit: r.Exit, Pilot: r.Pilot, Node: r.Node,
			Start: r.Start, End: r.End, Reason: spool.ReasonHandBack, Checkpointed: r.Outcome == spool.OutcomeCheckpointed}
		switch {
		case r.Outcome == spool.OutcomeExited && r.Exit == 0:
			ev.Reason, ev.Final = spool.ReasonCompleted, true
		case r.Outcome == spool.OutcomeExited || r.Outcome == spool.OutcomeSignaled:
			ev.Reason, ev.Final = spool.ReasonFailed, true
		}
		if err := f.recs.Journal(f.rec, spool.Event{Time: time.Now(), Event: "task", Task: &ev}); err != nil {
			f.t.Error(err)
		}
		if err := f.sp.RemoveResult(f.uid, f.id, ri.Name); err != nil {
			f.t.Error(err)
		}
	}
}

// journalTask appends a task event to the job's journal, as gleand
// commits an attempt.
func (f *fixture) journalTask(ev spool.TaskEvent) {
	f.t.Helper()
	if err := f.recs.Journal(f.rec, spool.Event{Time: time.Now(), Event: "task", Task: &ev}); err != nil {
		f.t.Fatal(err)
	}
}

// savedState makes checkpoints under a fresh root and task 0's directory
// holding state (as an earlier attempt saved it).
func (f *fixture) savedState(t *testing.T, state string) (Checkpoints, string) {
	t.Helper()
	c := Checkpoints{Spool: f.sp.Dir, Root: filepath.Join(t.TempDir(), "ck"), UID: os.Getuid()}
	dir := c.TaskDir(testAnchor, 0)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "state"), []byte(state), 0o600); err != nil {
		t.Fatal(err)
	}
	return c, dir
}

func (f *fixture) events() []spool.TaskEvent {
	f.t.Helper()
	evs, err := f.recs.TaskEvents(f.rec.DirName())
	if err != nil {
		f.t.Fatal(err)
	}
	return evs
}

// results reads the results the agents wrote (no committer running).
func (f *fixture) results() []spool.Result {
	f.t.Helper()
	ws, err := f.sp.ScanWork(f.uid, f.id)
	if err != nil {
		f.t.Fatal(err)
	}
	var out []spool.Result
	for _, ri := range ws.Results {
		if ri.Err != nil {
			f.t.Fatalf("result %s: %v", ri.Name, ri.Err)
		}
		out = append(out, ri.Result)
	}
	if len(ws.Leases) > 0 {
		f.t.Errorf("leases left behind: %+v", ws.Leases)
	}
	return out
}

// runAgent runs a in a goroutine; the returned func waits for its end
// (failing the test past a deadline) and returns why it ended.
func runAgent(t *testing.T, ctx context.Context, a *Agent) func() string {
	type end struct {
		why string
		err error
	}
	ch := make(chan end, 1)
	go func() {
		why, err := a.Run(ctx)
		ch <- end{why, err}
	}()
	return func() string {
		t.Helper()
		select {
		case e := <-ch:
			if e.err != nil {
				t.Errorf("Run: %v", e.err)
			}
			return e.why
		case <-time.After(60 * time.Second):
			t.Fatal("the agent did not end within 60 s")
			return ""
		}
	}
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.After(30 * time.Second)
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-deadline:
			t.Fatalf("timed out waiting for %s", what)
		case <-tick.C:
		}
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
