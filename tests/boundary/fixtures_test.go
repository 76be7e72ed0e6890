package boundary

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/glean-hpc/glean/sidecar/slurm"
	"github.com/glean-hpc/glean/tests/slurmtest"
)

var updateFixtures = flag.Bool("update-fixtures", false, "rewrite sidecar/slurm/testdata from the real cluster")

// TestFixtures builds a known scene on a real cluster (running, UNLIMITED,
// array, pilot-partition, pending with and without a plan, held, hostile
// name and comment, draining and drained nodes), runs the very commands the
// daemon runs and checks that every record parses. With -update-fixtures
// it writes the outputs to sidecar/slurm/testdata, where the parser tests
// read them:
//
//	go test ./tests/boundary -run TestFixtures -update-fixtures
func TestFixtures(t *testing.T) {
	c := setup(t)
	t.Cleanup(func() { c.CancelAll(t); c.Resume(t, "c22", "g1") })
	running := func(id string) func() bool {
		return func() bool { return c.JobField(t, id, "%T") == "RUNNING" }
	}
	// select/linear takes the lowest free nodes, so placement is predictable.
	big := c.Submit(t, "-N20", "-t", "5", "-J", "big", "--wrap", "sleep 300")
	c.WaitFor(t, 30*time.Second, "big running", running(big))
	unl := c.Submit(t, "-N1", "-t", "UNLIMITED", "-J", "unl", "--wrap", "sleep 300")
	c.WaitFor(t, 30*time.Second, "unl running", running(unl))
	arr := c.Submit(t, "--array=0-9%2", "-N1", "-t", "3", "-J", "arr", "--comment", `pilot:{"a":1} x|y`, "--wrap", "sleep 100")
	c.WaitFor(t, 30*time.Second, "two array elements running", func() bool {
		return strings.Count(c.Run(t, "squeue", "-h", "-t", "R", "-j", arr, "-o", "%A"), "\n") == 2
	})
	pil := c.Submit(t, "-p", "pilot", "-N1", "-t", "2", "-J", "pil", "--wrap", "sleep 100")
	c.WaitFor(t, 30*time.Second, "pil running", running(pil))
	c.Submit(t, "-N24", "-t", "10", "-J", "blocker", "--wrap", "sleep 10")
	wide := c.Submit(t, "-N3", "-t", "10", "-J", "wide", "--wrap", "sleep 10")
	c.Submit(t, "-H", "-J", "held", "--wrap", "true")
	c.Submit(t, "-H", "-J", "multi\nline", "--comment", "a\nb\x1fc", "--wrap", "true")
	c.WaitFor(t, 30*time.Second, "wide's planned start", func() bool {
		f := strings.Fields(c.JobField(t, wide, "%S %Y"))
		return len(f) == 2 && f[0] != "N/A" && f[1] != "(null)"
	})
	c.Run(t, "scontrol", "update", "nodename=c22,g1", "state=drain", "reason=glean-fixture")

	r := &slurm.Exec{Env: []string{"SLURM_CONF=" + c.Conf}, Timeout: 30 * time.Second}
	capture := func(argv []string) []byte {
		out, err := r.Run(context.Background(), argv)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	outputs := map[string][]byte{
		"squeue.txt":     capture(slurm.SqueueArgv("fixture")), // the parser tests' seal
		"sinfo.txt":      capture(slurm.SinfoArgv()),
		"partitions.txt": capture(slurm.PartitionsArgv()),
		"config.txt":     capture(slurm.ConfigArgv()),
	}
	jobs, errs := slurm.ParseSqueue(bytes.NewReader(outputs["squeue.txt"]), "fixture")
	if len(errs) > 0 || len(jobs) != 10 {
		t.Errorf("squeue: %d jobs (want 10: big, unl, 2 array elements and the pending rest, pil, blocker, wide, held, multi-line), errors %v", len(jobs), errs)
	}
	nodes, errs := slurm.ParseSinfo(bytes.NewReader(outputs["sinfo.txt"]))
	if len(errs) > 0 || len(nodes) != 25 {
		t.Errorf("sinfo: %d nodes, errors %v", len(nodes), errs)
	}
	parts, errs := slurm.ParsePartitions(bytes.NewReader(outputs["partitions.txt"]))
	if len(errs) > 0 || len(parts) != 3 {
		t.Errorf("partitions: %d, errors %v", len(parts), errs)
	}
	if _, err := slurm.ParseConfig(bytes.NewReader(outputs["config.txt"])); err != nil {
		t.Errorf("config: %v", err)
	}
	if !*updateFixtures || t.Failed() {
		return
	}
	dir := filepath.Join(filepath.Dir(slurmtest.Script()), "..", "sidecar", "slurm", "testdata")
	for name, data := range outputs {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("fixtures written to %s", dir)
}
