package agent

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/glean-hpc/glean/sidecar/spool"
)

// A pilot the daemon moves to another job of its owner finishes its running
// task, takes no more of this job's, and Run returns EndMoved with the job.
func TestMove(t *testing.T) {
	dir := t.TempDir()
	script := `#!/bin/sh
touch "$DIR/started.$SLURM_ARRAY_TASK_ID"
while [ ! -e "$DIR/go" ]; do sleep 0.01; done
`
	f := newFixture(t, 5, script, []string{"DIR=" + dir}, nil)
	a := f.agent("9", 1, nil)
	wait := runAgent(t, context.Background(), a)
	waitFor(t, "task 0 started", func() bool { _, err := os.Stat(filepath.Join(dir, "started.0")); return err == nil })
	to := spool.RecordName(os.Getuid(), "0190aabbccdd-abcdef01")
	if err := f.recs.PutControl(f.rec, spool.Control{Move: map[string]string{"5": "other", "9": to}}); err != nil {
		t.Fatal(err)
	}
	written := time.Now()
	w := f.work()
	waitFor(t, "a heartbeat after the move", func() bool {
		st, err := os.Stat(w.LeasePath(0))
		return err == nil && st.ModTime().After(written)
	})
	if err := os.WriteFile(filepath.Join(dir, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if why := wait(); why != EndMoved || a.MovedTo() != to {
		t.Errorf("ended %q moved to %q, want %q to %q", why, a.MovedTo(), EndMoved, to)
	}
	if res := f.results(); len(res) != 1 || res[0].Task != 0 || res[0].Outcome != spool.OutcomeExited {
		t.Errorf("results %+v, want task 0 only", res)
	}
}

func TestMoveTarget(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	id := "0190aabbccdd-abcdef01"
	for _, tc := range []struct {
		to     string
		uid    int
		wantOK bool
	}{
		{"1000." + id, 1000, true},
		{"1001." + id, 1000, false}, // another user's job: never
		{"1000.../etc", 1000, false},
		{"", 1000, false},
	} {
		got, err := MoveTarget(tc.to, tc.uid, log)
		if (err == nil) != tc.wantOK || tc.wantOK && got != id {
			t.Errorf("MoveTarget(%q, %d) = %q, %v", tc.to, tc.uid, got, err)
		}
	}
}

// Serve runs an agent for the job the pilot moved to, and learns the
// allocation's limits once for the pilot, not once per job.
// serveFixture is a job whose control file moves pilot 9 to the job
// itself, with a committer running until the test ends, and Options for
// Serve with learn; stop ends the committer after a last pass (the test's
// cleanup too).
func serveFixture(t *testing.T, learn func(context.Context) (Limits, error)) (f *fixture, ctx context.Context, opt Options, stop func()) {
	t.Helper()
	f = newFixture(t, 1, "#!/bin/sh\nexit 0\n", nil, nil)
	self := spool.RecordName(f.uid, f.id)
	if err := f.recs.PutControl(f.rec, spool.Control{Move: map[string]string{"9": self}}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	stop = func() { cancel(); wg.Wait() }
	t.Cleanup(stop)
	f.commit(ctx, &wg)
	opt = Options{Pilot: "9", Node: "node1", Env: []string{"SLURM_JOB_ID=9"}, Capacity: Capacity{CPUs: 1},
		Grace: 2 * time.Second, Heartbeat: 20 * time.Millisecond, Poll: 5 * time.Millisecond, Idle: 300 * time.Millisecond,
		Reap: 2 * time.Second, Log: slog.New(slog.DiscardHandler), Learn: learn}
	return f, ctx, opt, stop
}

// Serve runs an agent for the job the pilot moved to, and learns the
// allocation's limits once for the pilot, not once per job.
func TestServe(t *testing.T) {
	var learns, opens atomic.Int32
	f, ctx, opt, stop := serveFixture(t, func(context.Context) (Limits, error) { learns.Add(1); return Limits{}, nil })
	open := func(id string) (*Job, *spool.Work, error) {
		opens.Add(1)
		if id != f.id {
			t.Errorf("moved to %q, want %q", id, f.id)
		}
		// Here the move is done: the control file no longer names it.
		if err := f.recs.PutControl(f.rec, spool.Control{}); err != nil {
			return nil, nil, err
		}
		return f.job(), f.work(), nil
	}
	why, err := Serve(ctx, f.job(), f.work(), f.uid, opt, open)
	if err != nil || why == EndMoved {
		t.Fatalf("Serve ended %q, %v", why, err)
	}
	if opens.Load() != 1 || learns.Load() != 1 {
		t.Errorf("%d opens, %d learns; want one of each", opens.Load(), learns.Load())
	}
	stop()
	if res := f.results(); len(res) != 0 {
		t.Errorf("results left uncommitted: %+v", res)
	}
	if n, err := f.work().Remaining([]int{0}); err != nil || n != 0 {
		t.Errorf("task 0 not done after the move: %d remaining, %v", n, err)
	}
}
