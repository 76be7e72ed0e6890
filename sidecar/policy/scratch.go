package policy

import (
	"slices"
	"sync"
	"time"

	"github.com/glean-hpc/glean/sidecar/cluster"
)

// scratch is the memory one decision works in: its maps and per-node and
// per-pilot slices, kept between decisions (scratchPool) so that a caller
// deciding every cycle, the simulator above all, does not allocate them
// afresh each time. Nothing in it reaches a decision's result, and every
// piece is cleared before use, so a decision reads nothing an earlier one
// left, but for indices kept while their input is the same: the node index
// and topo (the same nodes and partitions), pilotIdx (the same pilots).
type scratch struct {
	jobIdx, baseOf, pilotIdx, nodeIdx, pendRank map[string]int
	pilotIDs                                    []string // pilotIdx's pilots, in order: kept while they stay
	pilotNums                                   []int64  // their IDs as numbers (idNumber)
	// nodeIdx and names are of topo's nodes: the last decision's, kept
	// when the next snapshot names the same nodes.
	names   nodeNames
	started map[string]bool
	acts    []Action // the decision's actions as emitted (decider.result)

	pilots                                    []Pilot
	pilotOn, wAt, pend                        []int
	gone, targeted, held, heldNever, consumed []bool
	heldEnd                                   []int64
	wClaim, eClaim                            []rankClaim
	startedRank                               []bool
	pkeys                                     []pilotKey
	loss                                      []int8 // rulePass: lossless by pilot, 0 not known yet
	slots                                     []topSlot
	withs                                     []mtime     // ruleTop
	pjob                                      []int       // job of a pilot (jobOf), by pilot
	seenJob                                   []bool      // noWork: by job
	cands                                     []candidate // submit: the window candidates
	taken                                     []bool      // submit: by node
	uncovered                                 []int       // submit: by job (decider.uncovered)
	poolOf                                    []int       // jobPools: decider.poolOf
	poolAt                                    map[poolKey]int
	jobPools                                  [][]int      // jobPools: decider.pools, each list's array kept
	thesisPlans                               []thesisPlan // thesis: decider.thesisPlans
	why                                       []byte       // an action's Reason as it is written
	partsOf                                   string       // partitions: the Partition parts is of, if partsOK
	parts                                     []string
	partsOK                                   bool
	topSize                                   map[string]int // ruleTop: usable nodes by partition list
	wRank                                     []int          // claimRank by node, +1 (0: not known yet)

	dec          decider // the decision itself
	track, order tracker // its hold (decider.h) and what rule A's order read (pilotOrder)

	// topo: the partitions' node sets, kept while the snapshots' nodes
	// and partitions stay the same
	topo topology
	// rulePass: its pools, nPools of pools in use
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
	freeFor []time.Duration // by node: its window's FreeFor (backfillWindows, for Decide)
	shadow  []shadowNode
	ourIdx  []int // the pilot partition's nodes
	listIdx []int // shadowList: its partitions' nodes
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
		if len(j.NodeIdx) == len(list) && len(list) > 0 { // the producer's lookup
			for _, i := range j.NodeIdx {
				if i < 0 || i >= len(s.Nodes) {
					i = -1
				}
				flat = append(flat, i)
			}
			continue
		}
		flat = names.appendIdx(flat, list)
	}
	sc.jnStart[len(s.Jobs)] = len(flat)
	sc.jn = flat
}

// jobNodes is job k's node indices (indexJobs).
func (sc *scratch) jobNodes(k int) []int { return sc.jn[sc.jnStart[k]:sc.jnStart[k+1]] }

// partNodes is one partition's nodes (members).
type partNodes struct {
	idx     []int    // their indices in the snapshot's nodes, each once
	missing []string // names the partition lists that no node has
	in      []bool   // by node: a member
}

// topology caches what the snapshot's node names, the nodes' partition
// lists and the partitions' node lists give: each partition's nodes. A
// caller deciding every cycle on the same cluster (the simulator above
// all) asks for the same sets every time; they are computed again only
// when the snapshot differs in any of those (same checks its copy).
type topology struct {
	nodeNames []string
	nodeParts [][]string
	// partsAsBefore: node i's copied partition list equals node i-1's;
	// nodesAsBefore: partition k's copied node list equals k-1's
	partsAsBefore, nodesAsBefore []bool
	parts                        []cluster.Partition // Name and Nodes, copied
	byName                       map[string]partNodes
}

// same reports whether s has the nodes and partitions the cache was made
// for, and if not, makes it s's (empty). Strings are compared; those the
// caller passes again are the same memory, which compares at once.
func (t *topology) same(s *cluster.Snapshot) bool {
	ok := t.byName != nil && len(t.nodeNames) == len(s.Nodes) && len(t.parts) == len(s.Partitions)
	for i := 0; ok && i < len(s.Nodes); i++ {
		ok = sameString(s.Nodes[i].Name, t.nodeNames[i])
		// Nodes that share one partition list (the same memory, as most
		// callers build them) compare it once: it held the copy's content
		// at the node before, and the copies are alike where noted. The
		// same for partitions that share one node list.
		if ok && !(i > 0 && t.partsAsBefore[i] && sameMemory(s.Nodes[i].Partitions, s.Nodes[i-1].Partitions)) {
			ok = sameStrings(s.Nodes[i].Partitions, t.nodeParts[i])
		}
	}
	for k := 0; ok && k < len(s.Partitions); k++ {
		ok = sameString(s.Partitions[k].Name, t.parts[k].Name)
		if ok && !(k > 0 && t.nodesAsBefore[k] && sameMemory(s.Partitions[k].Nodes, s.Partitions[k-1].Nodes)) {
			ok = sameStrings(s.Partitions[k].Nodes, t.parts[k].Nodes)
		}
	}
	if ok {
		return true
	}
	t.byName = reuseMap(t.byName)
	t.nodeNames, t.nodeParts, t.parts = t.nodeNames[:0], t.nodeParts[:0], t.parts[:0]
	t.partsAsBefore = t.partsAsBefore[:0]
	for i := range s.Nodes {
		t.nodeNames = append(t.nodeNames, s.Nodes[i].Name)
		t.nodeParts = append(t.nodeParts, slices.Clone(s.Nodes[i].Partitions))
		t.partsAsBefore = append(t.partsAsBefore, i > 0 && slices.Equal(t.nodeParts[i], t.nodeParts[i-1]))
	}
	t.nodesAsBefore = t.nodesAsBefore[:0]
	for k := range s.Partitions {
		t.parts = append(t.parts, cluster.Partition{Name: s.Partitions[k].Name, Nodes: slices.Clone(s.Partitions[k].Nodes)})
		t.nodesAsBefore = append(t.nodesAsBefore, k > 0 && slices.Equal(t.parts[k].Nodes, t.parts[k-1].Nodes))
	}
	return false
}

// sameMemory: a and b are one slice (the same elements, the same length).
func sameMemory(a, b []string) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// partNodes is partition name's nodes in s (idx: nodeIndex(s)); the
// caller has checked same(s) in this decision.
func (t *topology) partNodes(s *cluster.Snapshot, name string, idx map[string]int) partNodes {
	if t.byName == nil { // no decision checked: nothing kept
		return members(s, name, idx)
	}
	pn, ok := t.byName[name]
	if !ok {
		pn = members(s, name, idx)
		t.byName[name] = pn
	}
	return pn
}

// sameString is a == b, at once for the same memory (strings do not
// change): the caller that passes its strings again pays no comparison.
func sameString(a, b string) bool {
	return sameMemoryString(a, b) || a == b
}

func sameStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !sameString(a[i], b[i]) {
			return false
		}
	}
	return true
}
