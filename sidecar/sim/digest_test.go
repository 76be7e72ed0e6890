package sim

import (
	"crypto/sha256"
	"fmt"
	"hash"
	"os"
	"testing"
	"time"
)

// outcomeDigest hashes everything a run decided: every engine job's start,
// end, kill and nodes, every task attempt, pilot, calibration outcome and
// waiting interval, the backlog's totals and the round count (not how many
// rounds were skipped: that is what optimizations change).
func outcomeDigest(r *ElasticResult) string {
	h := sha256.New()
	w := func(h hash.Hash, v ...any) { fmt.Fprintln(h, v...) }
	for i := range r.Sched.Jobs {
		j := &r.Sched.Jobs[i]
		w(h, j.ID, j.Submit, j.Start, j.End, j.Nodes, j.Killed, j.Hosts())
	}
	for _, t := range r.Tasks {
		w(h, t)
	}
	for _, p := range r.Pilots {
		w(h, p)
	}
	for _, c := range r.Cal {
		w(h, c)
	}
	for _, iv := range r.Waiting {
		w(h, iv)
	}
	if r.Backlog != nil {
		w(h, *r.Backlog)
	}
	w(h, r.Rounds, r.LastSubmit)
	return fmt.Sprintf("%x", h.Sum(nil))[:16]
}

// TestOutcomeDigest prints a digest of the outcome of the runs that the
// simulator's speed work must not change: both thesis lists in every mode
// with and without a 10-minute backlog, and KTH-SP2 with a backlog
// (BenchmarkBacklogKTH's run, with its headline figures). It only runs
// with GLEAN_SIM_DIGEST=1 (the KTH-SP2 run takes seconds); digest.sh runs
// it before and after a change and compares.
func TestOutcomeDigest(t *testing.T) {
	if os.Getenv("GLEAN_SIM_DIGEST") == "" {
		t.Skip("set GLEAN_SIM_DIGEST=1 (see sidecar/sim/digest.sh)")
	}
	out := os.Stdout
	for _, run := range thesisRuns(t) {
		r, err := RunElastic(run.w, run.cfg)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(out, "digest %-36s %s\n", run.name, outcomeDigest(r))
	}
	kth := loadSWF(t, "KTH-SP2-1996-2.1-cln.swf.gz")
	cfg := elasticCfg(SlurmOnly)
	cfg.Backlog = 10 * time.Minute
	r, err := RunElastic(kth, cfg)
	if err != nil {
		t.Fatal(err)
	}
	m := ComputeMetrics(r)
	fmt.Fprintf(out, "digest %-36s %s effective=%.4f backlog-tasks=%d pilots=%d waste=%.1fh\n",
		"kth/slurm/backlog-10m0s", outcomeDigest(r), 100*m.Effective, r.Backlog.Tasks, r.Backlog.Pilots, r.Backlog.WasteNodeSeconds/3600)
}
