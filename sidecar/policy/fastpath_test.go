package policy

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/glean-hpc/glean/sidecar/cluster"
)

// withNodeIdx is s with every job's NodeIdx filled in as a producer that
// knows its nodes by number would (the simulator), one name unknown to
// the snapshot now and then (-1).
func withNodeIdx(s *cluster.Snapshot, r *rand.Rand) *cluster.Snapshot {
	out := *s
	out.Jobs = make([]cluster.Job, len(s.Jobs))
	at := map[string]int{}
	for i, n := range s.Nodes {
		at[n.Name] = i
	}
	for k, j := range s.Jobs {
		list := j.SchedNodes
		if j.Holds() {
			list = j.Nodes
		}
		if r.IntN(10) == 0 && len(list) > 0 {
			list = append(append([]string(nil), list...), "gone")
			if j.Holds() {
				j.Nodes = list
			} else {
				j.SchedNodes = list
			}
		}
		for _, name := range list {
			i, ok := at[name]
			if !ok {
				i = -1
			}
			j.NodeIdx = append(j.NodeIdx, i)
		}
		out.Jobs[k] = j
	}
	return &out
}

// The producer's node indices change nothing: DecideHold on holdCase's
// snapshots decides and holds the same with NodeIdx as with the names
// alone (a NodeIdx of the wrong length is ignored).
func TestNodeIdxSameDecision(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for c := range 2000 {
		s, st, cfg := holdCase(r)
		indexed := withNodeIdx(s, r)
		names := *indexed
		names.Jobs = make([]cluster.Job, len(indexed.Jobs))
		for k, j := range indexed.Jobs {
			if r.IntN(2) == 0 {
				j.NodeIdx = nil
			} else {
				j.NodeIdx = append(j.NodeIdx, 0) // wrong length: looked up by name
			}
			names.Jobs[k] = j
		}
		a1, h1 := DecideHold(&names, st, cfg, now)
		a2, h2 := DecideHold(indexed, st, cfg, now)
		if fmt.Sprint(a1, h1) != fmt.Sprint(a2, h2) {
			t.Fatalf("case %d: by name %v %+v, by NodeIdx %v %+v", c, a1, h1, a2, h2)
		}
	}
}

// selectNth puts at n what a sort would, nothing smaller after it and
// nothing larger before it, also with many ties.
func TestSelectNth(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for c := range 5000 {
		xs := make([]int, 1+r.IntN(120))
		for i := range xs {
			xs[i] = r.IntN(1 + r.IntN(40)) // few distinct values: ties
		}
		sorted := slices.Clone(xs)
		slices.Sort(sorted)
		n := r.IntN(len(xs))
		selectNth(xs, n, cmp.Compare[int])
		if xs[n] != sorted[n] {
			t.Fatalf("case %d: xs[%d] = %d, sorted %d", c, n, xs[n], sorted[n])
		}
		for i := range xs {
			if i < n && xs[i] > xs[n] || i > n && xs[i] < xs[n] {
				t.Fatalf("case %d: xs[%d] = %d on the wrong side of xs[%d] = %d", c, i, xs[i], n, xs[n])
			}
		}
		slices.Sort(xs)
		if !slices.Equal(xs, sorted) {
			t.Fatalf("case %d: elements changed", c)
		}
	}
}

// selectNth stays linear on the input that defeats its pivot: a sorted
// list (an idle partition's shadow list), also reversed; at most 8n
// comparisons (a sort of it costs about n log n).
func TestSelectNthSorted(t *testing.T) {
	const n = 10000
	for _, reversed := range []bool{false, true} {
		xs := make([]int, n)
		for i := range xs {
			xs[i] = i
			if reversed {
				xs[i] = n - i
			}
		}
		c := 0
		selectNth(xs, n-n/20, func(a, b int) int { c++; return cmp.Compare(a, b) })
		if want := n - n/20; reversed && xs[n-n/20] != want+1 || !reversed && xs[n-n/20] != want {
			t.Errorf("reversed %v: xs[%d] = %d", reversed, n-n/20, xs[n-n/20])
		}
		if c > 8*n {
			t.Errorf("reversed %v: %d comparisons for %d elements", reversed, c, n)
		}
	}
}
