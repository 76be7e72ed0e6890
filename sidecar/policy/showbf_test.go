package policy

import (
	"cmp"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/glean-hpc/glean/sidecar/cluster"
)

var now = time.Unix(1795311189, 0).UTC()

func at(d time.Duration) time.Time { return now.Add(d) }

const unl = cluster.Unlimited

func part(name string, maxTime time.Duration, nodes ...string) cluster.Partition {
	return cluster.Partition{Name: name, Nodes: nodes, MaxTime: maxTime, Up: true, Default: name == "batch"}
}

func nodes(st cluster.NodeState, names ...string) []cluster.Node {
	var out []cluster.Node
	for _, n := range names {
		out = append(out, cluster.Node{Name: n, State: st})
	}
	return out
}

func snap(parts []cluster.Partition, ns [][]cluster.Node, jobs ...cluster.Job) *cluster.Snapshot {
	s := &cluster.Snapshot{Time: now, Partitions: parts, Jobs: jobs, Complete: true}
	for _, n := range ns {
		s.Nodes = append(s.Nodes, n...)
	}
	return s
}

func running(id string, end time.Time, nodes ...string) cluster.Job {
	return cluster.Job{ID: id, Partition: "batch", State: cluster.JobRunning, Reason: "None",
		NumNodes: len(nodes), Nodes: nodes, TimeLimit: 2 * time.Hour, Start: now.Add(-time.Hour), End: end}
}

func unlimited(id string, nodes ...string) cluster.Job {
	j := running(id, time.Time{}, nodes...)
	j.TimeLimit = cluster.Unlimited
	return j
}

// pending is a pending job; with sched nodes it carries Slurm's plan.
func pending(id string, prio int64, reason string, numNodes int, start time.Time, sched ...string) cluster.Job {
	return cluster.Job{ID: id, Partition: "batch", State: cluster.JobPending, Reason: reason,
		NumNodes: numNodes, SchedNodes: sched, TimeLimit: time.Hour, Start: start, Priority: prio}
}

func inPart(j cluster.Job, p string) cluster.Job { j.Partition = p; return j }

// w is an expected NodeWindow.
func w(name string, st cluster.NodeState, freeAt time.Time, freeFor time.Duration, until time.Time, by string) NodeWindow {
	return NodeWindow{Node: name, State: st, FreeAt: freeAt, FreeFor: freeFor, Until: until, ClaimedBy: by}
}

func est(nw NodeWindow) NodeWindow { nw.Estimated = true; return nw }

var never time.Time

func TestBackfillWindows(t *testing.T) {
	idle, planned, alloc, mixed := cluster.NodeIdle, cluster.NodePlanned, cluster.NodeAlloc, cluster.NodeMixed
	tests := []struct {
		name    string
		snap    *cluster.Snapshot
		opt     WindowOptions
		nodes   []NodeWindow
		windows []Window
	}{
		{
			name: "no pending job, unlimited partition",
			snap: snap([]cluster.Partition{part("batch", unl, "n1", "n2", "n3", "n4")},
				[][]cluster.Node{nodes(idle, "n1", "n2", "n3"), nodes(alloc, "n4")},
				running("1", at(time.Hour), "n4")),
			nodes: []NodeWindow{
				w("n1", idle, now, unl, never, ""),
				w("n2", idle, now, unl, never, ""),
				w("n3", idle, now, unl, never, ""),
				w("n4", alloc, at(time.Hour), 0, never, ""),
			},
			windows: []Window{{3, unl}},
		},
		{
			name: "no pending job, MaxTime caps",
			snap: snap([]cluster.Partition{part("batch", 2*time.Hour, "n1", "n2")},
				[][]cluster.Node{nodes(idle, "n1"), nodes(mixed, "n2")},
				running("1", at(30*time.Minute), "n2")),
			nodes: []NodeWindow{
				w("n1", idle, now, 2*time.Hour, never, ""),
				w("n2", mixed, at(30*time.Minute), 0, never, ""),
			},
			windows: []Window{{1, 2 * time.Hour}},
		},
		{
			name: "UNLIMITED or endless running jobs never free",
			snap: snap([]cluster.Partition{part("batch", unl, "n1", "n2", "n3", "n4")},
				[][]cluster.Node{nodes(alloc, "n1", "n2", "n3"), nodes(idle, "n4")},
				unlimited("1", "n1"),
				running("2", never, "n2"),
				running("3", at(time.Hour), "n3"), unlimited("4", "n3")),
			nodes: []NodeWindow{
				w("n1", alloc, never, 0, never, ""),
				w("n2", alloc, never, 0, never, ""),
				w("n3", alloc, never, 0, never, ""),
				w("n4", idle, now, unl, never, ""),
			},
			windows: []Window{{1, unl}},
		},
		{
			// slurm-facts 3.2: bigA on m[1-6], blocker planned on m[1-8].
			name: "pending job with SchedNodes reserves idle nodes",
			snap: snap([]cluster.Partition{part("batch", unl, "m1", "m2", "m3", "m4", "m5", "m6", "m7", "m8")},
				[][]cluster.Node{nodes(alloc, "m1", "m2", "m3", "m4", "m5", "m6"), nodes(idle, "m7", "m8")},
				running("1053", time.Unix(1795311544, 0).UTC(), "m1", "m2", "m3", "m4", "m5", "m6"),
				pending("1054", 100, "Resources", 8, time.Unix(1795311544, 0).UTC(), "m1", "m2", "m3", "m4", "m5", "m6", "m7", "m8")),
			nodes: []NodeWindow{
				w("m1", alloc, at(355*time.Second), 0, at(355*time.Second), "1054"),
				w("m2", alloc, at(355*time.Second), 0, at(355*time.Second), "1054"),
				w("m3", alloc, at(355*time.Second), 0, at(355*time.Second), "1054"),
				w("m4", alloc, at(355*time.Second), 0, at(355*time.Second), "1054"),
				w("m5", alloc, at(355*time.Second), 0, at(355*time.Second), "1054"),
				w("m6", alloc, at(355*time.Second), 0, at(355*time.Second), "1054"),
				w("m7", idle, now, 355*time.Second, at(355*time.Second), "1054"),
				w("m8", idle, now, 355*time.Second, at(355*time.Second), "1054"),
			},
			windows: []Window{{2, 355 * time.Second}},
		},
		{
			name: "earliest claim wins, MaxTime caps a later one",
			snap: snap([]cluster.Partition{part("batch", time.Hour, "n1", "n2", "n3")},
				[][]cluster.Node{nodes(idle, "n1", "n2", "n3")},
				pending("p1", 200, "Priority", 2, at(2*time.Hour), "n1", "n2"),
				pending("p2", 100, "ReqNodeNotAvail, UnavailableNodes:n9", 1, at(30*time.Minute), "n1")),
			nodes: []NodeWindow{
				w("n1", idle, now, 30*time.Minute, at(30*time.Minute), "p2"),
				w("n2", idle, now, time.Hour, at(2*time.Hour), "p1"),
				w("n3", idle, now, time.Hour, never, ""),
			},
			windows: []Window{{2, time.Hour}, {3, 30 * time.Minute}},
		},
		{
			name: "planned nodes with and without claimant",
			snap: snap([]cluster.Partition{part("batch", unl, "n1", "n2", "n3", "n4")},
				[][]cluster.Node{nodes(planned, "n1", "n2", "n3"), nodes(idle, "n4")},
				pending("p1", 100, "Resources", 1, at(10*time.Minute), "n1"),
				pending("h1", 900, "JobHeldUser", 2, at(5*time.Minute), "n3", "n4")),
			nodes: []NodeWindow{
				w("n1", planned, now, 10*time.Minute, at(10*time.Minute), "p1"),
				w("n2", planned, now, 0, never, ""),
				w("n3", planned, now, 0, never, ""),
				w("n4", idle, now, unl, never, ""),
			},
			windows: []Window{{1, unl}, {2, 10 * time.Minute}},
		},
		{
			name: "down, drained and other unusable nodes",
			snap: snap([]cluster.Partition{part("batch", unl, "n1", "n2", "n3", "n4", "n5", "n6")},
				[][]cluster.Node{nodes(cluster.NodeDown, "n1"), nodes(cluster.NodeDrain, "n2", "n6"),
					nodes(cluster.NodeReserved, "n3"), nodes(cluster.NodeOther, "n4"), nodes(cluster.NodeUnknown, "n5")},
				running("1", at(time.Hour), "n6"),
				pending("p1", 100, "Resources", 1, at(10*time.Minute), "n1")),
			nodes: []NodeWindow{
				w("n1", cluster.NodeDown, never, 0, at(10*time.Minute), "p1"),
				w("n2", cluster.NodeDrain, never, 0, never, ""),
				w("n3", cluster.NodeReserved, never, 0, never, ""),
				w("n4", cluster.NodeOther, never, 0, never, ""),
				w("n5", cluster.NodeUnknown, never, 0, never, ""),
				w("n6", cluster.NodeDrain, never, 0, never, ""),
			},
		},
		{
			name: "excluded pilots neither claim nor hold nodes",
			snap: snap([]cluster.Partition{part("batch", unl, "n1", "n2", "n3", "n4", "n5")},
				[][]cluster.Node{nodes(idle, "n1"), nodes(alloc, "n2"), nodes(planned, "n3"), nodes(mixed, "n4"), nodes(idle, "n5")},
				pending("pl1", 1000, "Resources", 1, at(5*time.Minute), "n1"),
				running("pl2", at(10*time.Minute), "n2"),
				pending("pl3", 1000, "Priority", 1, at(5*time.Minute), "n3"),
				running("pl4", at(10*time.Minute), "n4"), running("1", at(time.Hour), "n4"),
				pending("pl5", 1000, "Resources", 1, never), // would shadow a free node
				pending("p1", 100, "Resources", 1, at(20*time.Minute), "n5")),
			opt: WindowOptions{Exclude: map[string]bool{"pl1": true, "pl2": true, "pl3": true, "pl4": true, "pl5": true}},
			nodes: []NodeWindow{
				w("n1", idle, now, unl, never, ""),
				w("n2", alloc, now, unl, never, ""),
				w("n3", planned, now, unl, never, ""),
				w("n4", mixed, at(time.Hour), 0, never, ""),
				w("n5", idle, now, 20*time.Minute, at(20*time.Minute), "p1"),
			},
			windows: []Window{{3, unl}, {4, 20 * time.Minute}},
		},
		{
			name: "EASY shadow for the top unplanned job",
			snap: snap([]cluster.Partition{part("batch", unl, "n1", "n2", "n3", "n4", "n5"), part("gpu", unl, "g1")},
				[][]cluster.Node{nodes(idle, "n1"), nodes(alloc, "n2", "n3", "n4"), nodes(idle, "n5", "g1")},
				running("2", at(30*time.Minute), "n2"),
				running("3", at(10*time.Minute), "n3"),
				running("4", at(time.Hour), "n4"),
				pending("held", 400, "JobHeldAdmin", 1, never),
				pending("big", 300, "Resources", 10, never), // can never fit: no reservation
				inPart(pending("gpujob", 250, "Resources", 1, never), "gpu"),
				pending("top", 200, "Priority", 3, never),
				pending("low", 100, "Resources", 1, never)),
			nodes: []NodeWindow{
				est(w("n1", idle, now, 10*time.Minute, at(10*time.Minute), "top")),
				w("n2", alloc, at(30*time.Minute), 0, never, ""),
				est(w("n3", alloc, at(10*time.Minute), 0, at(10*time.Minute), "top")),
				w("n4", alloc, at(time.Hour), 0, never, ""),
				est(w("n5", idle, now, 10*time.Minute, at(10*time.Minute), "top")),
			},
			windows: []Window{{2, 10 * time.Minute}},
		},
		{
			name: "shadow counts nodes of unknown end as free now",
			snap: snap([]cluster.Partition{part("batch", unl, "n1", "n2", "n3", "n4", "n5")},
				[][]cluster.Node{nodes(idle, "n1"), nodes(alloc, "n2", "n3", "n4"), nodes(idle, "n5")},
				running("2", never, "n2"), // no End: unknown
				unlimited("4", "n4"),      // n3: alloc with no visible job
				pending("top", 100, "Resources", 3, never)),
			nodes: []NodeWindow{
				est(w("n1", idle, now, 0, now, "top")),
				est(w("n2", alloc, never, 0, now, "top")),
				w("n3", alloc, never, 0, never, ""),
				w("n4", alloc, never, 0, never, ""),
				est(w("n5", idle, now, 0, now, "top")),
			},
		},
		{
			name: "shadow of a job in overlapping partitions claims our nodes first",
			snap: snap([]cluster.Partition{part("batch", unl, "n1", "n2"), part("big", unl, "n1", "n2", "n3", "n4"), part("gpu", unl, "g1")},
				[][]cluster.Node{nodes(idle, "n4", "n3", "n2", "n1"), nodes(alloc, "g1")},
				running("1", at(time.Hour), "g1"),
				inPart(pending("top", 100, "Resources", 2, never), "gpu,big")),
			nodes: []NodeWindow{
				est(w("n1", idle, now, 0, now, "top")),
				est(w("n2", idle, now, 0, now, "top")),
			},
		},
		{
			name: "shadow uses Slurm's start estimate when earlier",
			snap: snap([]cluster.Partition{part("batch", unl, "n1", "n2")},
				[][]cluster.Node{nodes(idle, "n1"), nodes(alloc, "n2")},
				running("2", at(10*time.Minute), "n2"),
				pending("top", 100, "Resources", 2, at(5*time.Minute))),
			nodes: []NodeWindow{
				est(w("n1", idle, now, 5*time.Minute, at(5*time.Minute), "top")),
				est(w("n2", alloc, at(10*time.Minute), 0, at(5*time.Minute), "top")),
			},
			windows: []Window{{1, 5 * time.Minute}},
		},
		{
			name: "held, dependent and limit-blocked jobs reserve nothing",
			snap: snap([]cluster.Partition{part("batch", unl, "n1", "n2")},
				[][]cluster.Node{nodes(idle, "n1", "n2")},
				pending("h1", 500, "JobHeldUser", 1, at(5*time.Minute), "n1"),
				pending("d1", 400, "Dependency", 2, never),
				pending("b1", 300, "BeginTime", 2, at(time.Minute)),
				pending("q1", 200, "QOSMaxJobsPerUserLimit", 1, never),
				pending("a1", 100, "AssocGrpCpuLimit", 1, at(time.Minute), "n2")),
			nodes: []NodeWindow{
				w("n1", idle, now, unl, never, ""),
				w("n2", idle, now, unl, never, ""),
			},
			windows: []Window{{2, unl}},
		},
		{
			name: "claim at or before now leaves no window",
			snap: snap([]cluster.Partition{part("batch", unl, "n1", "n2", "n3")},
				[][]cluster.Node{nodes(idle, "n1", "n2", "n3")},
				pending("p1", 100, "Resources", 1, at(-time.Minute), "n1"),
				pending("p2", 100, "Resources", 1, now, "n2"),
				pending("p3", 100, "Resources", 1, at(time.Second), "n3")),
			nodes: []NodeWindow{
				w("n1", idle, now, 0, at(-time.Minute), "p1"),
				w("n2", idle, now, 0, now, "p2"),
				w("n3", idle, now, time.Second, at(time.Second), "p3"),
			},
			windows: []Window{{1, time.Second}},
		},
		{
			name: "partition down",
			snap: func() *cluster.Snapshot {
				s := snap([]cluster.Partition{part("batch", unl, "n1")}, [][]cluster.Node{nodes(idle, "n1")})
				s.Partitions[0].Up = false
				return s
			}(),
			nodes: []NodeWindow{w("n1", idle, now, 0, never, "")},
		},
		{
			name: "overdue running job: free any moment, not now",
			snap: snap([]cluster.Partition{part("batch", unl, "n1", "n2")},
				[][]cluster.Node{nodes(cluster.NodeCompleting, "n1"), nodes(idle, "n2")},
				running("1", at(-2*time.Minute), "n1", "n2")), // n2 idle but held: sinfo/squeue race
			nodes: []NodeWindow{
				w("n1", cluster.NodeCompleting, now, 0, never, ""),
				w("n2", idle, now, 0, never, ""),
			},
		},
		{
			name: "natural order, node lists from both sides, missing node",
			snap: func() *cluster.Snapshot {
				s := snap([]cluster.Partition{part("batch", time.Hour, "c10", "c2", "c1", "c3", "c2"), part("other", unl, "x1")},
					[][]cluster.Node{nodes(idle, "c10", "c2", "c1", "c4", "x1")})
				s.Nodes[3].Partitions = []string{"batch"}
				return s
			}(),
			nodes: []NodeWindow{
				w("c1", idle, now, time.Hour, never, ""),
				w("c2", idle, now, time.Hour, never, ""),
				w("c3", cluster.NodeUnknown, never, 0, never, ""),
				w("c4", idle, now, time.Hour, never, ""),
				w("c10", idle, now, time.Hour, never, ""),
			},
			windows: []Window{{4, time.Hour}},
		},
		{
			name: "named partition other than the default",
			snap: snap([]cluster.Partition{part("batch", unl, "n1"), part("short", 30*time.Minute, "n1", "n2")},
				[][]cluster.Node{nodes(idle, "n1", "n2")},
				inPart(pending("p1", 100, "Resources", 1, at(time.Hour), "n2"), "short")),
			opt: WindowOptions{Partition: "short"},
			nodes: []NodeWindow{
				w("n1", idle, now, 30*time.Minute, never, ""),
				w("n2", idle, now, 30*time.Minute, at(time.Hour), "p1"),
			},
			windows: []Window{{2, 30 * time.Minute}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := BackfillWindows(tc.snap, now, tc.opt)
			if err != nil {
				t.Fatal(err)
			}
			wantPart := tc.opt.Partition
			if wantPart == "" {
				wantPart = "batch"
			}
			if !got.Now.Equal(now) || got.Partition != wantPart {
				t.Errorf("Now, Partition = %v, %q; want %v, %q", got.Now, got.Partition, now, wantPart)
			}
			if !reflect.DeepEqual(got.Nodes, tc.nodes) {
				t.Errorf("nodes:\n got %s\nwant %s", fmtNodes(got.Nodes), fmtNodes(tc.nodes))
			}
			if !reflect.DeepEqual(got.Windows, tc.windows) {
				t.Errorf("windows = %v, want %v", got.Windows, tc.windows)
			}
		})
	}
}

func fmtNodes(ns []NodeWindow) string {
	rel := func(t time.Time) string {
		if t.IsZero() {
			return "-"
		}
		return t.Sub(now).String()
	}
	var b strings.Builder
	for _, n := range ns {
		fmt.Fprintf(&b, "\n  %s %v freeAt=%s until=%s for=%s by=%q est=%v",
			n.Node, n.State, rel(n.FreeAt), rel(n.Until), FormatDuration(n.FreeFor), n.ClaimedBy, n.Estimated)
	}
	return b.String()
}

func TestBackfillWindowsErrors(t *testing.T) {
	s := snap([]cluster.Partition{part("batch", unl, "n1")}, [][]cluster.Node{nodes(cluster.NodeIdle, "n1")})
	_, err := BackfillWindows(s, now, WindowOptions{Partition: "gpu"})
	if !errors.Is(err, ErrUnknownPartition) || !strings.Contains(err.Error(), `"gpu"`) {
		t.Errorf("unknown partition: err = %v", err)
	}
	s.Partitions[0].Default = false
	if _, err := BackfillWindows(s, now, WindowOptions{}); !errors.Is(err, ErrUnknownPartition) {
		t.Errorf("no default partition: err = %v", err)
	}
	if _, err := BackfillWindows(nil, now, WindowOptions{}); err == nil {
		t.Error("nil snapshot: no error")
	}
}

func TestReserves(t *testing.T) {
	for reason, want := range map[string]bool{
		"Resources": true,
		"Priority":  true,
		"None":      true,
		"ReqNodeNotAvail, UnavailableNodes:m[1-2]": true,
		"Reservation":              true,
		"SomethingNew":             true,
		"JobHeldUser":              false,
		"JobHeldAdmin":             false,
		"Dependency":               false,
		"DependencyNeverSatisfied": false,
		"BeginTime":                false,
		"PartitionDown":            false,
		"PartitionInactive":        false,
		"AssocGrpCpuLimit":         false,
		"QOSMaxJobsPerUserLimit":   false,
		"MaxJobsPerAccount":        false,
	} {
		if got := Reserves(reason); got != want {
			t.Errorf("Reserves(%q) = %v, want %v", reason, got, want)
		}
	}
}

func TestNaturalCompare(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{"c2", "c10", -1},
		{"c10", "c2", 1},
		{"c2", "c2", 0},
		{"a9", "b1", -1},
		{"c1", "c1a", -1},
		{"rack2-n10", "rack10-n1", -1},
		{"c01", "c1", -1}, // equal numbers: plain order
		{"n", "n1", -1},
	} {
		if got := naturalCompare(tc.a, tc.b); got != tc.want {
			t.Errorf("naturalCompare(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
}

// naturalCompareRef is naturalCompare written another way: split both
// names into runs of digits and of other bytes, compare run by run
// (numbers by value, as zero-trimmed digit strings by length then bytes;
// other runs byte by byte, a digit run against another run by its first
// byte), then by what is left, then as plain strings.
func naturalCompareRef(a, b string) int {
	runs := func(s string) []string {
		var out []string
		for i := 0; i < len(s); {
			j := i + 1
			if isDigit(s[i]) {
				for j < len(s) && isDigit(s[j]) {
					j++
				}
			}
			out = append(out, s[i:j]) // a digit run, or one other byte
			i = j
		}
		return out
	}
	ra, rb := runs(a), runs(b)
	for k := 0; k < len(ra) && k < len(rb); k++ {
		x, y := ra[k], rb[k]
		if isDigit(x[0]) && isDigit(y[0]) {
			nx, ny := strings.TrimLeft(x, "0"), strings.TrimLeft(y, "0")
			if c := cmp.Or(cmp.Compare(len(nx), len(ny)), strings.Compare(nx, ny)); c != 0 {
				return c
			}
			continue
		}
		if x[0] != y[0] {
			return cmp.Compare(x[0], y[0])
		}
		if x != y { // a digit run against the same digit alone: cannot be
			return strings.Compare(x, y)
		}
	}
	rest := func(r []string, k int) int {
		n := 0
		for _, x := range r[k:] {
			n += len(x)
		}
		return n
	}
	m := min(len(ra), len(rb))
	if c := cmp.Compare(rest(ra, m), rest(rb, m)); c != 0 {
		return c
	}
	return strings.Compare(a, b)
}

func TestNaturalCompareMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	gen := func() string {
		var b strings.Builder
		for range rng.IntN(8) {
			b.WriteByte("00129cx-"[rng.IntN(8)])
		}
		return b.String()
	}
	for range 200000 {
		a, b := gen(), gen()
		if rng.IntN(4) == 0 {
			b = a[:rng.IntN(len(a)+1)] + b // a common prefix
		}
		if got, want := naturalCompare(a, b), naturalCompareRef(a, b); got != want {
			t.Fatalf("naturalCompare(%q, %q) = %d, want %d", a, b, got, want)
		}
	}
}

func TestFormatDuration(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{
		{0, "00:00:00"},
		{355 * time.Second, "00:05:55"},
		{time.Hour + 2*time.Minute + 3*time.Second + 999*time.Millisecond, "01:02:03"},
		{24 * time.Hour, "1-00:00:00"},
		{50*time.Hour + 30*time.Second, "2-02:00:30"},
		{-90 * time.Second, "-00:01:30"},
		{cluster.Unlimited, "UNLIMITED"},
		{cluster.Unlimited - 1, "106751-23:47:16"},
	} {
		if got := FormatDuration(tc.d); got != tc.want {
			t.Errorf("FormatDuration(%v) = %q, want %q", tc.d, got, tc.want)
		}
	}
	// The fmt formats it was written with, on random durations.
	rng := rand.New(rand.NewPCG(7, 11))
	for range 20000 {
		d := time.Duration(rng.Int64N(int64(1000*24*time.Hour))) - 10*24*time.Hour
		if rng.IntN(4) == 0 {
			d = time.Duration(rng.Int64())
		}
		sign, secs := "", int64(d/time.Second)
		if secs < 0 {
			sign, secs = "-", -secs
		}
		days, h, m, s := secs/86400, secs/3600%24, secs/60%60, secs%60
		want := fmt.Sprintf("%s%02d:%02d:%02d", sign, h, m, s)
		if days > 0 {
			want = fmt.Sprintf("%s%d-%02d:%02d:%02d", sign, days, h, m, s)
		}
		if d == cluster.Unlimited {
			want = "UNLIMITED"
		}
		if got := FormatDuration(d); got != want {
			t.Fatalf("FormatDuration(%d) = %q, want %q", d, got, want)
		}
	}
}

// benchSnapshot: 1,000 nodes (900 busy with 5,000 running jobs, 100 idle),
// 5,000 pending jobs: half planned on 2 nodes, the rest unplanned or held.
func benchSnapshot() *cluster.Snapshot {
	const nNodes, nRun, nPend = 1000, 5000, 5000
	s := &cluster.Snapshot{Time: now, Complete: true}
	p := cluster.Partition{Name: "batch", MaxTime: 48 * time.Hour, Up: true, Default: true}
	for i := range nNodes {
		name := "n" + strconv.Itoa(i+1)
		st := cluster.NodeMixed
		if i >= 900 {
			st = cluster.NodeIdle
		}
		s.Nodes = append(s.Nodes, cluster.Node{Name: name, State: st, Partitions: []string{"batch"}})
		p.Nodes = append(p.Nodes, name)
	}
	s.Partitions = []cluster.Partition{p}
	for i := range nRun {
		s.Jobs = append(s.Jobs, running("r"+strconv.Itoa(i), at(time.Duration(i%97+1)*time.Minute), p.Nodes[i%900]))
	}
	for i := range nPend {
		id := "p" + strconv.Itoa(i)
		prio := int64(nPend - i)
		switch i % 4 {
		case 0, 1:
			k := i % 999
			s.Jobs = append(s.Jobs, pending(id, prio, "Priority", 2, at(time.Duration(i%300+5)*time.Minute), p.Nodes[k], p.Nodes[k+1]))
		case 2:
			s.Jobs = append(s.Jobs, pending(id, prio, "Resources", i%50+1, never))
		default:
			s.Jobs = append(s.Jobs, pending(id, prio, "JobHeldUser", 1, never))
		}
	}
	return s
}

func BenchmarkBackfillWindows10k(b *testing.B) {
	s := benchSnapshot()
	opt := WindowOptions{Exclude: map[string]bool{"p1": true, "r7": true}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := BackfillWindows(s, now, opt); err != nil {
			b.Fatal(err)
		}
	}
}

// TestNodeNames: the fast lookups find what the map finds, for node sets
// that number consecutively (read by number) and that do not.
func TestNodeNames(t *testing.T) {
	probes := []string{"", "c", "c0", "c1", "c01", "c2", "c3", "c4", "c10", "c+1", "c-1", "d1", "1", "c1x", "rack1-n1", "rack1-n2", "rack1-n02", "n7", "n8", "n10", "c9999999999"}
	for _, tc := range []struct {
		name  string
		nodes []string
		dense bool
	}{
		{"c1-3", []string{"c1", "c2", "c3"}, true},
		{"from zero", []string{"c0", "c1", "c2"}, true},
		{"rack prefix", []string{"rack1-n1", "rack1-n2"}, true},
		{"numbers only", []string{"1", "2"}, true},
		{"gap", []string{"c1", "c3"}, false},
		{"unsorted", []string{"c2", "c1"}, false},
		{"leading zero", []string{"c01", "c02"}, false},
		{"two prefixes", []string{"c1", "d2"}, false},
		{"twice", []string{"c1", "c1"}, false},
		{"no number", []string{"login", "c2"}, false},
		{"from 7", []string{"n7", "n8", "n9", "n10"}, true},
		{"none", nil, false},
	} {
		s := &cluster.Snapshot{}
		for _, n := range tc.nodes {
			s.Nodes = append(s.Nodes, cluster.Node{Name: n})
		}
		idx := nodeIndex(s)
		nn := newNodeNames(s, idx)
		if nn.dense != tc.dense {
			t.Errorf("%s: dense %v, want %v", tc.name, nn.dense, tc.dense)
		}
		rank := naturalRanks(s)
		for i := range tc.nodes {
			for j := range tc.nodes {
				want := naturalCompare(tc.nodes[i], tc.nodes[j])
				if got := nn.cmp(i, j, nil); got != want {
					t.Errorf("%s: cmp(%d, %d) = %d, want %d", tc.name, i, j, got, want)
				}
				if got := nn.cmp(i, j, rank); !nn.dense && got != want {
					t.Errorf("%s: cmp(%d, %d) by rank = %d, want %d", tc.name, i, j, got, want)
				}
			}
		}
		for _, p := range append(probes, tc.nodes...) {
			i, ok := nn.get(p)
			wi, wok := idx[p]
			if i != wi || ok != wok {
				t.Errorf("%s: get(%q) = %d, %v; the map has %d, %v", tc.name, p, i, ok, wi, wok)
			}
		}
		// A host list of every node and probe, each after every other.
		var list []string
		for _, a := range append(probes, tc.nodes...) {
			for _, b := range append(probes, tc.nodes...) {
				list = append(list, a, b)
			}
		}
		for k, i := range nn.appendIdx(nil, list) {
			wi, wok := idx[list[k]]
			if !wok {
				wi = -1
			}
			if i != wi {
				t.Errorf("%s: appendIdx gives %q (after %q) %d; the map has %d, %v", tc.name, list[k], list[max(k-1, 0)], i, wi, wok)
			}
		}
	}
}

// TestPlainNumbersCompareNaturally: cancelOrder compares pilot IDs that
// parsePlainNumber reads as numbers; naturalCompare must agree.
func TestPlainNumbersCompareNaturally(t *testing.T) {
	rng := rand.New(rand.NewPCG(2, 3))
	ids := []string{"0", "1", "9", "10", "1099511627777", "999999999999999999", "1000000000000000000", "01", "1x", "-1", ""}
	for range 1000 {
		ids = append(ids, strconv.FormatInt(rng.Int64N(1<<rng.IntN(62)+1), 10))
	}
	for _, a := range ids {
		for _, b := range ids[:50] {
			x, okA := parsePlainNumber(a)
			y, okB := parsePlainNumber(b)
			if okA && okB && cmp.Compare(x, y) != naturalCompare(a, b) {
				t.Errorf("%q vs %q: as numbers %d, naturalCompare %d", a, b, cmp.Compare(x, y), naturalCompare(a, b))
			}
			if v, ok := parsePlainNumber(a); ok && strconv.Itoa(v) != a {
				t.Errorf("parsePlainNumber(%q) = %d", a, v)
			}
		}
	}
}

// TestFirstNodesMatchesSort: with names that number consecutively,
// firstNodes returns the nodes a full sort of the shadow list puts
// first, the last of them last.
func TestFirstNodesMatchesSort(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	for trial := range 2000 {
		n := 1 + rng.IntN(120)
		nodes := make([]shadowNode, n)
		for k := range nodes {
			sn := shadowNode{i: k, tNs: int64(rng.IntN(4)) * 1e9, ours: rng.IntN(2) == 0, freeNow: rng.IntN(2) == 0}
			sn.tie = int64(k)
			if !sn.ours {
				sn.tie |= 1 << 62
			}
			if !sn.freeNow {
				sn.tie |= 1 << 61
			}
			nodes[k] = sn
		}
		rng.Shuffle(n, func(a, b int) { nodes[a], nodes[b] = nodes[b], nodes[a] })
		want := slices.Clone(nodes)
		slices.SortFunc(want, shadowCmp)
		need := 1 + rng.IntN(n)
		c := &calc{names: &nodeNames{dense: true}, sc: new(scratch)}
		got := c.firstNodes(&shadowList{nodes: nodes}, need)
		if got[need-1] != want[need-1] {
			t.Fatalf("trial %d: n %d need %d: the last is %v, want %v", trial, n, need, got[need-1], want[need-1])
		}
		slices.SortFunc(got, shadowCmp)
		if !slices.Equal(got, want[:need]) {
			t.Fatalf("trial %d: n %d need %d: got %v, want %v", trial, n, need, got, want[:need])
		}
	}
}
