package policy

import (
	"github.com/glean-hpc/glean/sidecar/cluster"
	"sync"
)

// scratch is the memory one decision works in: its maps and per-node and
// per-pilot slices, kept between decisions (scratchPool) so that a caller
// deciding every cycle, the simulator above all, does not allocate them
// afresh each time. Nothing in it outlives the decision or reaches its
// result: every piece is cleared before use, so a decision reads nothing
// an earlier one left.
type scratch struct {
	jobIdx, baseOf, pilotIdx, nodeIdx, pendRank map[string]int
	// nodeIdx and names are of the nodes named nodeNames: the last
	// decision's, kept when the next snapshot names the same nodes.
	nodeNames []string
	names     nodeNames
	started   map[string]bool
	acts      []Action // the decision's actions as emitted (decider.result)

	pilots                                    []Pilot
	pilotOn, wAt, pend                        []int
	gone, targeted, held, heldNever, consumed []bool
	heldEnd                                   []int64
	wClaim, eClaim                            []rankClaim
	startedRank                               []bool
	pkeys                                     []pilotKey
	loss                                      []int8 // rulePass: lossless by pilot, 0 not known yet
	lossH                                     []int8 // giveWay's sort: the same
	slots                                     []topSlot
	withs                                     []mtime    // ruleTop
	pjob                                      []pilotJob // job of a pilot, by pilot
	wRank                                     []int      // claimRank by window, +1 (0: not known yet)

	dec decider // the decision itself

	// member: the partitions' node sets, nMembers of members in use
	partMember map[string][]bool
	members    [][]bool
	nMembers   int
	// rulePass: its pools, nPools of pools in use
	poolKey  map[string]*pool
	poolList []*pool
	poolAll  []int
	pools    []pool
	nPools   int
	chosen   []int
	needs    map[int]need
	pis      []piNeed
	topIn    []bool // ruleTop: a job's partitions' nodes
	rankK    []int  // claimRank: rankOf a job's ID by job, +2 (0: not known yet)
	// rulePass's sort: giver and moving window by node, task start by pilot
	aGiver         []int
	aFree, aPilots []int // rulePass: the free nodes and the pilots' nodes of its pools
	aMoves, aRead  []bool
	aStart         []int64
	// indexJobs: each job's Nodes (if it holds them) or SchedNodes (if
	// pending) as node indices, -1 for a name not in the snapshot
	jn      []int
	jnStart []int
	jobExcl []bool // by job: excluded from the windows (a pilot's)
	jobRes  []bool // by job, of the others: pending and Reserves(Reason)
	// fifo
	fifoCands, fifoRetiring, fifoMine []int
	fifoUsed                          []bool

	// backfillWindows
	nodes   []nodeCalc
	stamp   []int
	ours    []bool
	windows []NodeWindow
	shadow  []shadowNode
	// firstNodes: the nodes a shadow claim takes
	shadowTop []shadowNode
	ourIdx    []int // the pilot partition's nodes
	// winByIdx: the windows are in ourIdx's order, one per node
	winByIdx bool
	listIdx  []int // shadowList: its partitions' nodes
}

var scratchPool = sync.Pool{New: func() any { return new(scratch) }}

// reuse returns s as n zero values, reallocated only if too small. A nil
// scratch slice (no scratch) gets a fresh one.
func reuse[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	s = s[:n]
	clear(s)
	return s
}

// reuseMap returns m emptied, or a new map.
func reuseMap[K comparable, V any](m map[K]V) map[K]V {
	if m == nil {
		return make(map[K]V)
	}
	clear(m)
	return m
}

// sameNodes reports whether s names the nodes that sc.nodeIdx and
// sc.names were built for, in the same order.
func (sc *scratch) sameNodes(s *cluster.Snapshot) bool {
	if sc.nodeIdx == nil || len(sc.nodeNames) != len(s.Nodes) {
		return false
	}
	for i := range s.Nodes {
		if s.Nodes[i].Name != sc.nodeNames[i] {
			return false
		}
	}
	return true
}

// indexJobs fills sc.jn for s: the node names of each job looked up once
// per decision.
func (sc *scratch) indexJobs(s *cluster.Snapshot, names *nodeNames) {
	sc.jnStart = reuse(sc.jnStart, len(s.Jobs)+1)
	flat := sc.jn[:0]
	for k := range s.Jobs {
		j := &s.Jobs[k]
		sc.jnStart[k] = len(flat)
		var list []string
		switch {
		case j.Holds():
			list = j.Nodes
		case j.Pending():
			list = j.SchedNodes
		}
		for _, name := range list {
			i, ok := names.get(name)
			if !ok {
				i = -1
			}
			flat = append(flat, i)
		}
	}
	sc.jnStart[len(s.Jobs)] = len(flat)
	sc.jn = flat
}

// jobNodes is job k's node indices (indexJobs).
func (sc *scratch) jobNodes(k int) []int { return sc.jn[sc.jnStart[k]:sc.jnStart[k+1]] }
