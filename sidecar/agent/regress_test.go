package agent

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/glean-hpc/glean/sidecar/spool"
)

// Review finding: stopAll (the hold before a time-limit TERM, then the
// grace) refreshes no lease. With the defaults (policy.grace 60 s,
// daemon.heartbeat_timeout 1 m, a time-limit warning up to 65 s early)
// gleand takes a still-running task's lease back as lost, commits its
// attempt id, and another pilot runs the task meanwhile; the attempt's
// real result (checkpointed or completed) is then discarded as already
// committed. The task here saves for as long as the test says; the lease
// must keep being refreshed (heartbeat 20 ms) until it ends.
func TestHeartbeatWhileStopping(t *testing.T) {
	for _, tc := range []struct {
		name string
		mod  func(*Options)
	}{
		{"give-way", func(o *Options) {
			o.Grace, o.KillWait = 5*time.Second, 10*time.Second
			o.GaveWay = func() bool { return true }
		}},
		{"time-limit hold", func(o *Options) {
			// Slurm's warning 4 s before end - grace: the task runs on.
			o.Grace, o.KillWait, o.End = time.Second, 10*time.Second, time.Now().Add(5*time.Second)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			script := `#!/bin/sh
trap 'while [ ! -e "$DIR/go" ]; do sleep 0.01; done; exit 99' TERM
touch "$DIR/ready"
while :; do sleep 0.01; done
`
			f := newFixture(t, 1, script, []string{"DIR=" + dir}, nil)
			ctx, cancel := context.WithCancel(context.Background())
			wait := runAgent(t, ctx, f.agent("18", 1, tc.mod))
			waitFor(t, "the task running", func() bool { _, err := os.Stat(filepath.Join(dir, "ready")); return err == nil })
			w := f.work()
			cancel() // the TERM the agent gets (give-way, or Slurm's early warning)
			st, err := os.Stat(w.LeasePath(0))
			if err != nil {
				t.Fatal(err)
			}
			first := st.ModTime()
			beat := false
			deadline := time.After(800 * time.Millisecond) // 40 heartbeat intervals
			tick := time.NewTicker(5 * time.Millisecond)
		poll:
			for !beat {
				select {
				case <-deadline:
					break poll
				case <-tick.C:
				}
				if st, err := os.Stat(w.LeasePath(0)); err == nil && st.ModTime().After(first.Add(100*time.Millisecond)) {
					beat = true
				}
			}
			tick.Stop()
			if err := os.WriteFile(filepath.Join(dir, "go"), nil, 0o644); err != nil {
				t.Fatal(err)
			}
			wait()
			if !beat {
				t.Errorf("the running task's lease was not refreshed while the agent was stopping it")
			}
		})
	}
}

// Review finding: Sweep takes a missing status.json for "the record is
// gone" and removes the job's checkpoints, though job.json (the daemon's
// record) is there: a running job's record written by a glean before
// status.json existed (new agents or a new anchor run before the new
// gleand's first start, or its SyncStatus failed, which it only logs).
func TestSweepKeepsARecordWithoutStatus(t *testing.T) {
	f := newFixture(t, 1, "#!/bin/sh\n", nil, nil)
	root := t.TempDir()
	rec := &spool.Record{ID: spool.NewID(time.Now()), UID: f.uid, State: spool.StateRunning}
	if err := f.recs.Put(rec); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(f.sp.Dir, spool.JobsDir, rec.DirName(), spool.StatusFile)); err != nil {
		t.Fatal(err)
	}
	c := Checkpoints{Spool: f.sp.Dir, Root: root, UID: os.Getuid()}
	if mErr, err := c.prepareJob(&Job{UID: f.uid, ID: rec.ID, Entry: &spool.Entry{Anchor: "9"}}); err != nil || mErr != nil {
		t.Fatal(err, mErr)
	}
	removed, err := c.Sweep(f.sp, time.Hour, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if len(removed) != 0 {
		t.Errorf("Sweep removed %v: the running job's checkpoints (its job.json is there, its status.json not yet)", removed)
	}
}
