// Package boundary tests the Slurm boundary, the partitions glean relies on
// and the backfill-window oracle against a real loopback Slurm 22.05.
package boundary

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/glean-hpc/glean/sidecar/cluster"
	"github.com/glean-hpc/glean/sidecar/slurm"
	"github.com/glean-hpc/glean/tests/slurmtest"
)

var cl *slurmtest.Cluster

func TestMain(m *testing.M) {
	os.Exit(slurmtest.Main(m, slurmtest.Options{Nodes: 24}, &cl))
}

// setup gives a test the shared cluster with no jobs left by earlier tests.
func setup(t *testing.T) *slurmtest.Cluster {
	t.Helper()
	slurmtest.Need(t, cl)
	cl.CancelAll(t)
	return cl
}

func client(c *slurmtest.Cluster) *slurm.Client {
	return &slurm.Client{R: &slurm.Exec{Env: []string{"SLURM_CONF=" + c.Conf}, Timeout: 30 * time.Second}}
}

func snapshot(t *testing.T, c *slurmtest.Cluster) *cluster.Snapshot {
	t.Helper()
	s := client(c).Snapshot(context.Background(), time.Now())
	if !s.Complete {
		t.Fatalf("snapshot incomplete: %v", s.Problems)
	}
	return s
}

func TestClusterAsConfigured(t *testing.T) {
	c := setup(t)
	t.Logf("24-node cluster came up in %v", c.Startup)
	s := snapshot(t, c)
	if len(s.Nodes) != 25 {
		t.Fatalf("want 24 compute nodes + g1, got %d", len(s.Nodes))
	}
	for _, n := range s.Nodes {
		if n.State != cluster.NodeIdle {
			t.Errorf("node %s is %s (%q), want idle", n.Name, n.State, n.RawState)
		}
	}
	batch, pilot, glean := s.Partition("batch"), s.Partition("pilot"), s.Partition("glean")
	if batch == nil || pilot == nil || glean == nil {
		t.Fatalf("partitions batch, pilot, glean expected, got %+v", s.Partitions)
	}
	if !batch.Default || pilot.Default || glean.Default {
		t.Errorf("only batch should be the default partition")
	}
	if pilot.PriorityTier >= batch.PriorityTier {
		t.Errorf("pilot PriorityTier %d must be below batch's %d", pilot.PriorityTier, batch.PriorityTier)
	}
	if strings.Join(pilot.Nodes, ",") != strings.Join(batch.Nodes, ",") || len(batch.Nodes) != 24 {
		t.Errorf("pilot nodes %v must equal batch nodes %v (24)", pilot.Nodes, batch.Nodes)
	}
	if len(glean.Nodes) != 1 || glean.Nodes[0] != "g1" || !strings.HasPrefix(glean.OverSubscribe, "FORCE") {
		t.Errorf("glean partition = nodes %v oversubscribe %q, want [g1] FORCE", glean.Nodes, glean.OverSubscribe)
	}
	if s.Config.BackfillInterval != time.Second || s.Config.KillWait != 5*time.Second {
		t.Errorf("config = %+v, want bf_interval 1s, KillWait 5s", s.Config)
	}
}

// A pilot waiting in the low-tier partition must never get ahead of a
// regular job, even one submitted after it: when the nodes free up, the
// regular 24-node job starts and the pilot keeps waiting.
func TestPilotPartitionGivesWay(t *testing.T) {
	c := setup(t)
	filler := c.Submit(t, "-N24", "-t", "5", "-J", "filler", "--wrap", "sleep 300")
	c.WaitFor(t, 30*time.Second, "filler running", func() bool { return c.JobField(t, filler, "%T") == "RUNNING" })
	pilot := c.Submit(t, "-p", "pilot", "-N1", "-t", "5", "-J", "pilot", "--wrap", "sleep 300")
	regular := c.Submit(t, "-N24", "-t", "5", "-J", "regular", "--wrap", "sleep 300")
	c.WaitCycles(t, 2)
	c.Run(t, "scancel", filler)
	c.WaitFor(t, 30*time.Second, "regular job running", func() bool { return c.JobField(t, regular, "%T") == "RUNNING" })
	if st := c.JobField(t, pilot, "%T"); st != "PENDING" {
		t.Fatalf("pilot submitted before the regular job is %s, want PENDING behind it", st)
	}
	// And the same order without the tiers would have let the pilot in first:
	// a control run in the batch partition shows the difference is the tier.
	c.CancelAll(t)
	filler = c.Submit(t, "-N24", "-t", "5", "-J", "filler", "--wrap", "sleep 300")
	c.WaitFor(t, 30*time.Second, "filler running", func() bool { return c.JobField(t, filler, "%T") == "RUNNING" })
	early := c.Submit(t, "-N1", "-t", "5", "-J", "early", "--wrap", "sleep 300")
	regular = c.Submit(t, "-N24", "-t", "5", "-J", "regular", "--wrap", "sleep 300")
	c.WaitCycles(t, 2)
	c.Run(t, "scancel", filler)
	c.WaitFor(t, 30*time.Second, "early job running", func() bool { return c.JobField(t, early, "%T") == "RUNNING" })
	if st := c.JobField(t, regular, "%T"); st != "PENDING" {
		t.Fatalf("control: regular job is %s, want PENDING behind the earlier same-tier job", st)
	}
}

// Anchor jobs go to the glean partition: always available, many at once on
// its one node, even while every compute node is busy.
func TestGleanPartitionAlwaysAvailable(t *testing.T) {
	c := setup(t)
	filler := c.Submit(t, "-N24", "-t", "5", "-J", "filler", "--wrap", "sleep 300")
	c.WaitFor(t, 30*time.Second, "filler running", func() bool { return c.JobField(t, filler, "%T") == "RUNNING" })
	var ids []string
	for i := 0; i < 12; i++ {
		ids = append(ids, c.Submit(t, "-p", "glean", "-t", "1", "-J", "anchor", "--wrap", "sleep 60"))
	}
	c.WaitFor(t, 30*time.Second, "12 anchors running together on g1", func() bool {
		out := c.Run(t, "squeue", "-h", "-p", "glean", "-t", "R", "-o", "%N")
		return strings.Count(out, "g1") == len(ids)
	})
}

// The cons_tres variant packs one-CPU jobs onto CPU slices of a node.
func TestConsTresVariant(t *testing.T) {
	t.Parallel()
	c := slurmtest.Start(t, slurmtest.Options{Nodes: 2, Select: "cons_tres"})
	for i := 0; i < 8; i++ {
		c.Submit(t, "-n1", "-c1", "-t", "1", "-J", "slice", "--wrap", "sleep 60")
	}
	c.WaitFor(t, 30*time.Second, "8 one-CPU jobs running on 2 nodes", func() bool {
		return strings.Count(c.Run(t, "squeue", "-h", "-t", "R", "-o", "%N"), "\n") == 8
	})
	s := client(c).Snapshot(context.Background(), time.Now())
	if !s.Complete {
		t.Fatalf("snapshot incomplete: %v", s.Problems)
	}
	for _, n := range s.Nodes {
		if n.Name != "g1" && (n.CPUs != 4 || n.State != cluster.NodeAlloc) {
			t.Errorf("node %s: %d CPUs, %s; want 4 CPUs, all allocated", n.Name, n.CPUs, n.State)
		}
	}
}
