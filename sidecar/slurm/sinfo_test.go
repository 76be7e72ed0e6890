package slurm

import (
	"bytes"
	"strings"
	"testing"

	"github.com/glean-hpc/glean/sidecar/cluster"
)

func TestParseSinfoFixture(t *testing.T) {
	nodes, errs := ParseSinfo(bytes.NewReader(readFixture(t, "sinfo.txt")))
	if len(errs) != 0 {
		t.Fatal(errs)
	}
	if len(nodes) != 25 || nodes[0].Name != "c1" || nodes[24].Name != "g1" {
		t.Fatalf("got %d nodes: %+v", len(nodes), nodes)
	}
	c1 := nodes[0]
	if c1.State != cluster.NodeAlloc || c1.RawState != "allocated" || c1.CPUs != 1 || c1.MemoryMB != 1000 ||
		strings.Join(c1.Partitions, ",") != "batch,pilot" {
		t.Errorf("c1 = %+v", c1)
	}
	// The fixture scene drains g1 (idle) and c22 (running a job).
	if g1 := nodes[24]; g1.State != cluster.NodeDrain || g1.RawState != "drained" || strings.Join(g1.Partitions, ",") != "glean" {
		t.Errorf("g1 = %+v", g1)
	}
	if c22 := nodes[21]; c22.Name != "c22" || c22.State != cluster.NodeDrain || c22.RawState != "draining" {
		t.Errorf("c22 = %+v", c22)
	}
}

// sinfo_states.txt was captured from the loopback cluster after draining
// c1 (running a job) and c23, downing c22, failing c9, and reserving c5
// (plain) and c6 (MAINT).
func TestParseSinfoStatesFixture(t *testing.T) {
	nodes, errs := ParseSinfo(bytes.NewReader(readFixture(t, "sinfo_states.txt")))
	if len(errs) != 0 {
		t.Fatal(errs)
	}
	got := map[string]cluster.Node{}
	for _, n := range nodes {
		got[n.Name] = n
	}
	want := map[string]cluster.NodeState{
		"c1": cluster.NodeDrain, "c23": cluster.NodeDrain, "c22": cluster.NodeDown, "c9": cluster.NodeDown,
		"c5": cluster.NodeReserved, "c6": cluster.NodeOther, "c24": cluster.NodeAlloc, "c2": cluster.NodeIdle,
	}
	for name, st := range want {
		if got[name].State != st {
			t.Errorf("%s: %s (%q), want %s", name, got[name].State, got[name].RawState, st)
		}
	}
	if got["c23"].RawState != "drained" || len(got["c23"].Partitions) != 2 {
		t.Errorf("c23 = %+v", got["c23"])
	}
}

func TestNodeStateOf(t *testing.T) {
	tests := []struct {
		raw  string
		want cluster.NodeState
	}{
		{"idle", cluster.NodeIdle},
		{"IDLE", cluster.NodeIdle},
		{"planned", cluster.NodePlanned},
		{"idle-", cluster.NodePlanned},
		{"mixed-", cluster.NodeMixed},
		{"allocated", cluster.NodeAlloc},
		{"alloc", cluster.NodeAlloc},
		{"allocated+", cluster.NodeAlloc},
		{"mixed", cluster.NodeMixed},
		{"completing", cluster.NodeCompleting},
		{"down", cluster.NodeDown},
		{"down*", cluster.NodeDown},
		{"idle*", cluster.NodeDown},
		{"fail", cluster.NodeDown},
		{"drained", cluster.NodeDrain},
		{"draining", cluster.NodeDrain},
		{"drain", cluster.NodeDrain},
		{"drained*", cluster.NodeDown},
		{"failing", cluster.NodeDrain},
		{"mixed+drain", cluster.NodeDrain},
		{"idle+drain", cluster.NodeDrain},
		{"reserved", cluster.NodeReserved},
		{"idle$", cluster.NodeReserved},
		{"drained$", cluster.NodeDrain},
		{"maint", cluster.NodeOther},
		{"future", cluster.NodeOther},
		{"inval", cluster.NodeOther},
		{"power_down", cluster.NodeOther},
		{"idle~", cluster.NodeOther},
		{"idle#", cluster.NodeOther},
		{"idle%", cluster.NodeOther},
		{"idle!", cluster.NodeOther},
		{"mixed@", cluster.NodeOther},
		{"unknown", cluster.NodeUnknown},
		{"brand_new_state", cluster.NodeUnknown},
	}
	for _, tc := range tests {
		got, err := NodeStateOf(tc.raw)
		if err != nil || got != tc.want {
			t.Errorf("NodeStateOf(%q) = %s, %v; want %s", tc.raw, got, err, tc.want)
		}
	}
	for _, raw := range []string{"", "*", "id le", "idle\n", "4", "idle/x"} {
		if _, err := NodeStateOf(raw); err == nil {
			t.Errorf("NodeStateOf(%q): want error", raw)
		}
	}
}

func TestParseSinfoBadRecords(t *testing.T) {
	good := "c1\x1fidle\x1fbatch*\x1f4\x1f1000\x1e\n"
	tests := []struct{ rec, want string }{
		{"c2\x1fidle\x1fbatch*\x1fx\x1f1000\x1e\n", `sinfo record 2: field CPUs: bad CPU count "x"`},
		{"c2\x1fidle\x1fbatch*\x1f4\x1f-1\x1e\n", `sinfo record 2: field Memory: bad memory "-1"`},
		{"c2\x1f\x1fbatch*\x1f4\x1f1\x1e\n", `sinfo record 2: field State: bad node state ""`},
		{"\x1fidle\x1fbatch*\x1f4\x1f1\x1e\n", `sinfo record 2: field NodeName: bad node name ""`},
		{"c2\x1fidle\x1fbatch*\x1f4\x1e\n", `sinfo record 2: 4 fields, want 5`},
	}
	for _, tc := range tests {
		nodes, errs := ParseSinfo(strings.NewReader(good + tc.rec + "c1\x1fidle\x1fpilot\x1f4\x1f1000\x1e\n"))
		if len(errs) != 1 || errs[0].Error() != tc.want {
			t.Errorf("%q: errs %v, want %s", tc.rec, errs, tc.want)
		}
		if len(nodes) != 1 || strings.Join(nodes[0].Partitions, ",") != "batch,pilot" {
			t.Errorf("%q: nodes %+v", tc.rec, nodes)
		}
	}
	// "+" marks merged values and is accepted.
	nodes, errs := ParseSinfo(strings.NewReader("c1\x1fidle\x1fn/a\x1f4+\x1f1000+\x1e\n"))
	if len(errs) != 0 || nodes[0].CPUs != 4 || nodes[0].Partitions != nil {
		t.Errorf("%+v %v", nodes, errs)
	}
}
