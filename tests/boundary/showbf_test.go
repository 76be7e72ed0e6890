package boundary

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/glean-hpc/glean/sidecar/cli"
	"github.com/glean-hpc/glean/sidecar/cluster"
	"github.com/glean-hpc/glean/sidecar/policy"
)

// The oracle's promise, checked against Slurm itself: a one-node job whose
// time limit is the reported window minus a margin starts within a few
// scheduling cycles; one asking two minutes more stays pending.
func TestShowbfWindowIsReal(t *testing.T) {
	c := setup(t)
	cycle := c.BFInterval(t)
	running := c.Submit(t, "-N20", "-t", "5", "-J", "running", "--wrap", "sleep 300")
	c.WaitFor(t, 30*time.Second, "20-node job running", func() bool { return c.JobField(t, running, "%T") == "RUNNING" })
	big := c.Submit(t, "-N24", "-t", "10", "-J", "big", "--wrap", "sleep 600")
	c.WaitFor(t, 30*time.Second, "big job's reservation", func() bool {
		f := strings.Fields(c.JobField(t, big, "%S %Y"))
		return len(f) == 2 && f[0] != "N/A" && f[1] != "(null)"
	})

	now := time.Now()
	s := snapshot(t, c)
	w, err := policy.BackfillWindows(s, now, policy.WindowOptions{Partition: "pilot"})
	if err != nil {
		t.Fatal(err)
	}
	if len(w.Windows) != 1 || w.Windows[0].Nodes != 4 {
		t.Fatalf("want one window of the 4 idle nodes, got %+v (nodes %+v)", w.Windows, w.Nodes)
	}
	win := w.Windows[0].Duration
	if win <= 3*time.Minute || win > 5*time.Minute {
		t.Fatalf("window %v: want a little under 5 minutes (the running job's end)", win)
	}
	for _, n := range w.Nodes {
		free := n.FreeFor > 0
		if free && n.ClaimedBy != big {
			t.Errorf("node %s free for %v but claimed by %q, want the big job %s", n.Node, n.FreeFor, n.ClaimedBy, big)
		}
		if !free && (n.State != cluster.NodeAlloc || n.FreeAt.IsZero()) {
			t.Errorf("busy node %s: state %s, free at %v; want alloc with the running job's end", n.Node, n.State, n.FreeAt)
		}
	}

	const margin = time.Minute
	fit := int((win - margin) / time.Minute)
	fits := c.Submit(t, "-p", "pilot", "-N1", "-t", fmt.Sprint(fit), "-J", "fits", "--wrap", "sleep 300")
	tooLong := c.Submit(t, "-p", "pilot", "-N1", "-t", fmt.Sprint(fit+2), "-J", "toolong", "--wrap", "sleep 300")
	c.WaitFor(t, 5*cycle+10*time.Second, "the fitting job to start", func() bool { return c.JobField(t, fits, "%T") == "RUNNING" })
	c.WaitCycles(t, 3)
	if st := c.JobField(t, tooLong, "%T"); st != "PENDING" {
		t.Fatalf("job asking %d min (window %v) is %s, want PENDING", fit+2, win, st)
	}
	if st := c.JobField(t, big, "%T"); st != "PENDING" {
		t.Fatalf("big job is %s", st)
	}

	// The CLI prints the same windows, as a table and as JSON.
	t.Setenv("SLURM_CONF", c.Conf)
	var out, errOut bytes.Buffer
	if code := cli.Main(context.Background(), []string{"showbf", "-p", "pilot", "--json"}, &out, &errOut); code != 0 {
		t.Fatalf("glean showbf --json: exit %d: %s", code, errOut.String())
	}
	var got struct {
		Windows []struct {
			Nodes    int   `json:"nodes"`
			Duration int64 `json:"duration_s"`
		} `json:"windows"`
	}
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatalf("showbf --json: %v\n%s", err, out.String())
	}
	// One node went to the fitting job; three remain.
	if len(got.Windows) == 0 || got.Windows[len(got.Windows)-1].Nodes != 3 {
		t.Fatalf("showbf --json windows %+v, want 3 nodes left", got.Windows)
	}
	out.Reset()
	if code := cli.Main(context.Background(), []string{"showbf", "-p", "pilot"}, &out, &errOut); code != 0 {
		t.Fatalf("glean showbf: exit %d: %s", code, errOut.String())
	}
	if !strings.Contains(out.String(), "windows starting now") || !strings.Contains(out.String(), "CLAIMED_BY") {
		t.Fatalf("showbf table:\n%s", out.String())
	}
	t.Logf("glean showbf -p pilot:\n%s", out.String())
}

// Without a pending job the idle nodes are free without limit (the
// partition's MaxTime is INFINITE here); a node running an UNLIMITED job is
// never free; drained and down nodes offer nothing.
func TestShowbfStates(t *testing.T) {
	c := setup(t)
	t.Cleanup(func() { c.CancelAll(t); c.Resume(t, "c23", "c24") })
	unl := c.Submit(t, "-N1", "-t", "UNLIMITED", "-J", "unlimited", "--wrap", "sleep 600")
	c.WaitFor(t, 30*time.Second, "unlimited job running", func() bool { return c.JobField(t, unl, "%T") == "RUNNING" })
	unlNode := c.JobField(t, unl, "%N")
	c.Run(t, "scontrol", "update", "nodename=c23", "state=drain", "reason=glean-test")
	c.Run(t, "scontrol", "update", "nodename=c24", "state=down", "reason=glean-test")
	s := snapshot(t, c)
	w, err := policy.BackfillWindows(s, time.Now(), policy.WindowOptions{Partition: "batch"})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range w.Nodes {
		switch n.Node {
		case unlNode:
			if n.FreeFor != 0 || !n.FreeAt.IsZero() {
				t.Errorf("%s runs an UNLIMITED job: free for %v at %v, want 0 / never", n.Node, n.FreeFor, n.FreeAt)
			}
		case "c23", "c24":
			if n.FreeFor != 0 || (n.State != cluster.NodeDrain && n.State != cluster.NodeDown) {
				t.Errorf("%s drained/down: state %s free for %v", n.Node, n.State, n.FreeFor)
			}
		default:
			if n.FreeFor != cluster.Unlimited {
				t.Errorf("%s idle with no pending job: free for %v, want unlimited", n.Node, n.FreeFor)
			}
		}
	}
	if len(w.Windows) != 1 || w.Windows[0].Nodes != 21 || w.Windows[0].Duration != cluster.Unlimited {
		t.Fatalf("windows %+v, want 21 nodes unlimited", w.Windows)
	}
}
