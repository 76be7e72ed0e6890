// Package policy holds glean's pure decision code: it reads a
// cluster.Snapshot and a time, and never does I/O or reads the clock.
package policy

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"github.com/glean-hpc/glean/sidecar/cluster"
)

// ErrUnknownPartition is returned when the asked (or default) partition is
// not in the snapshot.
var ErrUnknownPartition = errors.New("unknown partition")

// WindowOptions selects what BackfillWindows looks at.
type WindowOptions struct {
	// Partition whose nodes are reported; "" means the snapshot's default.
	Partition string
	// Exclude lists job IDs to ignore entirely: glean's own pilots, so that a
	// pilot never shrinks its own window.
	Exclude map[string]bool
}

// NodeWindow is the backfill window of one node, starting now.
type NodeWindow struct {
	Node  string
	State cluster.NodeState
	// FreeAt is now if the node is free now, the latest end of the jobs
	// holding it otherwise, and zero if never (UNLIMITED or unknown end) or
	// the node is unusable.
	FreeAt time.Time
	// Until is when a pending job's reservation takes the node; zero if none.
	Until time.Time
	// FreeFor is how long a job starting now can run on the node:
	// Until-now capped by the partition MaxTime, cluster.Unlimited if
	// unbounded, 0 if the node is not free now.
	FreeFor time.Duration
	// ClaimedBy is the pending job whose reservation sets Until.
	ClaimedBy string
	// Estimated is true when that reservation is glean's EASY shadow
	// estimate rather than Slurm's plan (SchedNodes).
	Estimated bool
}

// Window is "Nodes nodes for Duration, starting now".
type Window struct {
	Nodes    int
	Duration time.Duration
}

// Windows is what BackfillWindows returns: per-node windows sorted by node
// name in natural order, and the showbf-style summary ordered by Duration
// descending (so Nodes ascending).
type Windows struct {
	Now       time.Time
	Partition string
	Nodes     []NodeWindow
	Windows   []Window
}

// BackfillWindows computes, for each node of a partition, how long a job
// started now could run there without delaying any pending job's
// reservation. It is what Moab's showbf prints and Slurm lacks.
//
// Reservations come from pending jobs that Slurm's backfill planned (Start
// and SchedNodes set) and whose Reason is one that reserves. For the
// highest-priority reserving job that backfill has not planned yet, an
// EASY-style shadow is estimated: it starts when its NumNodes earliest-free
// usable nodes of its partition(s) are free and claims those nodes then.
// Where the snapshot leaves doubt, the answer errs toward shorter windows,
// because pilots sized from it must never delay the top pending job.
//
// Advanced reservations are not in the snapshot: a node already in one is
// unusable, a future one is not seen.
func BackfillWindows(s *cluster.Snapshot, now time.Time, opt WindowOptions) (Windows, error) {
	return backfillWindows(s, now, opt, nil, nil, nil)
}

// nodeIndex maps node names to their first index in s.Nodes.
func nodeIndex(s *cluster.Snapshot) map[string]int {
	return nodeIndexInto(make(map[string]int, len(s.Nodes)), s)
}

// nodeIndexInto is nodeIndex into an empty map.
func nodeIndexInto(idx map[string]int, s *cluster.Snapshot) map[string]int {
	for i := range s.Nodes {
		if _, dup := idx[s.Nodes[i].Name]; !dup {
			idx[s.Nodes[i].Name] = i
		}
	}
	return idx
}

// nodeNames finds nodes by name: idx (nodeIndex), or, when the names are
// a prefix and consecutive numbers (c1, c2, ... as most clusters and the
// simulator name them), by reading the number, which is several times
// cheaper than hashing the name.
type nodeNames struct {
	idx    map[string]int
	prefix string
	base   int
	dense  bool // s.Nodes[k].Name == prefix + itoa(base+k) for every k
	n      int
	s      *cluster.Snapshot
	// seen guesses the node of a name from the address of its bytes
	// (dense only): a caller that hands back the nodes' own name strings,
	// as the simulator does, finds them without reading them. A guess
	// counts only if the name is that node's name string itself.
	seen []int32
}

func newNodeNames(s *cluster.Snapshot, idx map[string]int) nodeNames {
	nn := nodeNames{idx: idx, n: len(s.Nodes), s: s}
	if len(s.Nodes) == 0 || len(idx) != len(s.Nodes) {
		return nn
	}
	first := s.Nodes[0].Name
	p := len(first)
	for p > 0 && isDigit(first[p-1]) {
		p--
	}
	nn.prefix = first[:p]
	base, ok := parseNodeNumber(first[p:])
	if !ok {
		return nn
	}
	nn.base = base
	for k := range s.Nodes {
		name := s.Nodes[k].Name
		v, ok := parseNodeNumber(strings.TrimPrefix(name, nn.prefix))
		if !ok || !strings.HasPrefix(name, nn.prefix) || v != base+k {
			return nn
		}
	}
	nn.dense = true
	nn.seen = make([]int32, max(64, 1<<bits.Len(uint(4*len(s.Nodes)))))
	return nn
}

// parseNodeNumber reads a decimal number written as strconv.Itoa would
// (no sign, no leading zero), of at most 9 digits.
func parseNodeNumber(s string) (int, bool) {
	if len(s) > 9 {
		return 0, false
	}
	return parsePlainNumber(s)
}

// parsePlainNumber reads a decimal number of at most 18 digits written as
// strconv.Itoa would (no sign, no leading zero).
func parsePlainNumber(s string) (int, bool) {
	if s == "" || len(s) > 18 || s[0] == '0' && len(s) > 1 {
		return 0, false
	}
	v := 0
	for i := 0; i < len(s); i++ {
		if !isDigit(s[i]) {
			return 0, false
		}
		v = v*10 + int(s[i]-'0')
	}
	return v, true
}

// cmp is naturalCompare of nodes i and j's names: by index when the
// names number consecutively, else by rank (naturalRanks), else by name.
func (nn *nodeNames) cmp(i, j int, rank []int) int {
	switch {
	case nn.dense:
		return cmp.Compare(i, j)
	case rank != nil:
		return cmp.Compare(rank[i], rank[j])
	}
	return naturalCompare(nn.s.Nodes[i].Name, nn.s.Nodes[j].Name)
}

// get is idx[name].
func (nn *nodeNames) get(name string) (int, bool) {
	if !nn.dense {
		i, ok := nn.idx[name]
		return i, ok
	}
	slot := uintptr(unsafe.Pointer(unsafe.StringData(name))) & uintptr(len(nn.seen)-1)
	if k := int(nn.seen[slot]); k < nn.n && sameMemoryString(name, nn.s.Nodes[k].Name) {
		return k, true
	}
	p := len(nn.prefix)
	if len(name) <= p || len(name) > p+9 {
		return 0, false
	}
	for i := 0; i < p; i++ { // cheaper than a string comparison for a short prefix
		if name[i] != nn.prefix[i] {
			return 0, false
		}
	}
	if name[p] == '0' && len(name) > p+1 {
		return 0, false
	}
	v := 0
	for i := p; i < len(name); i++ {
		c := name[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int(c-'0')
	}
	if k := v - nn.base; 0 <= k && k < nn.n {
		nn.seen[slot] = int32(k)
		return k, true
	}
	return 0, false
}

// appendIdx appends the index of each name of a host list (get), -1
// for a name no node has.
func (nn *nodeNames) appendIdx(dst []int, list []string) []int {
	for _, name := range list {
		i, ok := nn.get(name)
		if !ok {
			i = -1
		}
		dst = append(dst, i)
	}
	return dst
}

// sameMemoryString: a and b are one string (the same bytes), so equal;
// false says nothing.
func sameMemoryString(a, b string) bool {
	return len(a) == len(b) && unsafe.StringData(a) == unsafe.StringData(b)
}

// nodeAt is idx[name] (idx is nodeIndex(s)), first trying the node at
// position k: partitions list their nodes in the order sinfo does, and
// with no name twice in s the node found there is the one idx has.
func nodeAt(s *cluster.Snapshot, idx map[string]int, k int, name string) (int, bool) {
	if k < len(s.Nodes) && s.Nodes[k].Name == name && len(idx) == len(s.Nodes) {
		return k, true
	}
	i, ok := idx[name]
	return i, ok
}

// naturalRanks numbers the nodes of s in naturalCompare order, equal names
// equal: comparing ranks gives what comparing names does, for less. Nodes
// are listed in that order almost always (sinfo sorts them), which costs
// one pass to check.
func naturalRanks(s *cluster.Snapshot) []int {
	n := len(s.Nodes)
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	byName := func(a, b int) int { return naturalCompare(s.Nodes[a].Name, s.Nodes[b].Name) }
	if !slices.IsSortedFunc(order, byName) {
		slices.SortStableFunc(order, byName)
	}
	rank := make([]int, n)
	for k, i := range order {
		rank[i] = k
		if k > 0 && byName(order[k-1], i) == 0 {
			rank[i] = rank[order[k-1]]
		}
	}
	return rank
}

// backfillWindows is BackfillWindows noting in h when the windows' shape
// may change with the clock (claims start, holders end, the EASY shadow
// moves); a nil h notes nothing. FreeAt is not tracked.
//
// names is newNodeNames(s, nodeIndex(s)), if the caller has it; nil:
// built here. With a scratch (Decide's), no NodeWindow is made: Decide
// reads a node's window by its index, its claim in sc.nodes (from the
// scan) and its FreeFor in sc.freeFor, for the pilot partition's nodes
// (sc.ourIdx); the result carries the partition only.
func backfillWindows(s *cluster.Snapshot, now time.Time, opt WindowOptions, h *tracker, names *nodeNames, sc *scratch) (Windows, error) {
	if s == nil {
		return Windows{}, errors.New("policy: nil snapshot")
	}
	part, err := resolvePartition(s, opt.Partition)
	if err != nil {
		return Windows{}, err
	}
	horizon := part.MaxTime
	if horizon <= 0 { // not set: no partition cap
		horizon = cluster.Unlimited
	}

	if names == nil {
		nn := newNodeNames(s, nodeIndex(s))
		names = &nn
	}
	c := calc{s: s, now: now, idx: names.idx, h: h, names: names}
	c.nowNs = c.ns(now)
	decider := sc != nil // Decide reads only the nodes' windows
	if sc == nil {
		sc = new(scratch)
	}
	sc.nodes, sc.stamp = reuse(sc.nodes, len(s.Nodes)), reuse(sc.stamp, len(s.Nodes))
	for i := range sc.nodes {
		sc.nodes[i].endNs, sc.nodes[i].claimNs = neverNs, neverNs // the zero time's
	}
	c.nodes, c.stamp, c.sc = sc.nodes, sc.stamp, sc
	if !decider { // Decide did this, and excludes its pilots' jobs
		sc.indexJobs(s, names)
		sc.jobExcl, sc.jobRes = reuse(sc.jobExcl, len(s.Jobs)), reuse(sc.jobRes, len(s.Jobs))
		for k := range s.Jobs {
			sc.jobExcl[k] = opt.Exclude[s.Jobs[k].ID]
			sc.jobRes[k] = s.Jobs[k].Pending() && Reserves(s.Jobs[k].Reason)
		}
	}
	candidates := c.scanJobs(sc.jobExcl)

	pn := sc.topo.partNodes(s, part.Name, c.idx)
	ours, missing := append(sc.ourIdx[:0], pn.idx...), pn.missing
	sc.ourIdx = ours
	c.ours = pn.in // read only: the topology keeps it
	c.shadow(candidates)

	out := Windows{Now: now, Partition: part.Name}
	if decider {
		// Decide reads a node's window by its index: how long it is free
		// (here) and its claim (the scan's, in sc.nodes). The nodes
		// listed but not in the snapshot have none to read.
		sc.freeFor = reuse(sc.freeFor, len(s.Nodes))
		for _, i := range ours {
			sc.freeFor[i] = c.freeFor(i, part.Up, horizon)
		}
		return out, nil
	}
	sorted := names.dense && len(missing) == 0
	if sorted {
		slices.Sort(ours) // the nodes' natural order is their order in s
	}
	out.Nodes = make([]NodeWindow, len(ours)+len(missing))
	for k, i := range ours {
		node, n := &c.s.Nodes[i], &c.nodes[i]
		out.Nodes[k] = NodeWindow{Node: node.Name, State: node.State, FreeAt: c.freeAt(i),
			Until: n.claim, FreeFor: c.freeFor(i, part.Up, horizon), ClaimedBy: n.claimBy, Estimated: n.estimated}
	}
	for k, name := range missing { // listed by the partition, absent from sinfo
		out.Nodes[len(ours)+k] = NodeWindow{Node: name, State: cluster.NodeUnknown}
	}
	if !sorted {
		slices.SortFunc(out.Nodes, func(a, b NodeWindow) int { return naturalCompare(a.Node, b.Node) })
	}
	out.Windows = summarize(out.Nodes)
	return out, nil
}

func resolvePartition(s *cluster.Snapshot, name string) (*cluster.Partition, error) {
	if name == "" {
		if p := s.DefaultPartition(); p != nil {
			return p, nil
		}
		return nil, fmt.Errorf("policy: %w: no partition given and the snapshot has no default", ErrUnknownPartition)
	}
	if p := s.Partition(name); p != nil {
		return p, nil
	}
	return nil, fmt.Errorf("policy: %w %q", ErrUnknownPartition, name)
}

// nodeCalc gathers what the jobs say about one node. Its instants are
// kept as ns too, which compare in one instruction (before).
type nodeCalc struct {
	holders    bool      // a non-excluded job runs on it
	endMax     time.Time // latest End of those jobs
	endNs      int64     // ns(endMax)
	never      bool      // one of them is UNLIMITED
	unknownEnd bool      // one of them has no End
	exclHolder bool      // an excluded job runs on it

	claim      time.Time // earliest reservation start
	claimNs    int64     // ns(claim)
	claimBy    string
	claimK1    int  // the claimant's index in the snapshot's jobs, plus 1
	estimated  bool // claim is the shadow estimate
	claimMoves bool // claim is the shadow's at now: it moves with the clock
	slurmClaim bool // in SchedNodes of a non-excluded reserving job
	exclClaim  bool // in SchedNodes of an excluded job
}

type calc struct {
	s       *cluster.Snapshot
	now     time.Time
	nowNs   int64
	clamped bool           // an instant read is out of ns's range (c.ns): before compares times
	idx     map[string]int // node name -> index in s.Nodes
	names   *nodeNames     // idx, faster
	nodes   []nodeCalc
	ours    []bool // by node: in the partition asked for
	stamp   []int  // scratch for de-duplicating node sets
	gen     int
	h       *tracker
	rank    []int // naturalRanks, once needed
	sc      *scratch
}

// scanJobs records holders and Slurm's reservations on every node, and
// returns the reserving pending jobs that backfill has not planned.
func (c *calc) scanJobs(exclude []bool) []int {
	var candidates []int
	for k := range c.s.Jobs {
		j := &c.s.Jobs[k]
		excluded := exclude[k]
		switch {
		case j.Holds():
			var endNs int64 // ns(j.End), where read
			if !excluded && j.TimeLimit != cluster.Unlimited {
				endNs = c.ns(j.End)
			}
			for _, i := range c.sc.jobNodes(k) {
				if i < 0 {
					continue
				}
				n := &c.nodes[i]
				switch {
				case excluded:
					n.exclHolder = true
				case j.TimeLimit == cluster.Unlimited:
					n.holders, n.never = true, true
				case endNs == neverNs: // j.End.IsZero()
					n.holders, n.unknownEnd = true, true
				default:
					n.holders = true
					if c.before(n.endNs, endNs, &n.endMax, &j.End) {
						n.endMax, n.endNs = j.End, endNs
					}
				}
			}
		case j.Pending():
			planned := !j.Start.IsZero() && len(j.SchedNodes) > 0
			if excluded {
				if planned {
					for _, i := range c.sc.jobNodes(k) {
						if i >= 0 {
							c.nodes[i].exclClaim = true
						}
					}
				}
				continue
			}
			if !c.sc.jobRes[k] { // Reserves(j.Reason)
				continue
			}
			if !planned {
				candidates = append(candidates, k)
				continue
			}
			startNs := c.ns(j.Start)
			for _, i := range c.sc.jobNodes(k) {
				if i >= 0 {
					n := &c.nodes[i]
					n.slurmClaim = true
					if n.claimNs == neverNs || c.before(startNs, n.claimNs, &j.Start, &n.claim) { // as claim
						n.setClaim(j.Start, startNs, j.ID, k, false, false)
					}
				}
			}
		}
	}
	return candidates
}

// claim notes job k's reservation of n at at (atNs: ns(at)); moves: at
// is now, and moves with the clock (the shadow's start when it could
// start now).
func (c *calc) claim(n *nodeCalc, at time.Time, atNs int64, k int, estimated, moves bool) {
	if moves && c.before(c.nowNs, n.claimNs, &c.now, &n.claim) {
		c.h.flipNs(n.claimNs) // the moving claim reaches the fixed one then
	}
	if n.claimNs == neverNs || c.before(atNs, n.claimNs, &at, &n.claim) { // n.claim.IsZero() || at.Before(n.claim)
		n.setClaim(at, atNs, c.s.Jobs[k].ID, k, estimated, moves)
	}
}

// setClaim makes job k (ID by) n's claimant, at at (atNs: ns(at)).
func (n *nodeCalc) setClaim(at time.Time, atNs int64, by string, k int, estimated, moves bool) {
	n.claim, n.claimNs, n.claimBy, n.claimK1, n.estimated, n.claimMoves = at, atNs, by, k+1, estimated, moves
}

// ns is ns(t), noting whether t is out of ns's range (clamped).
func (c *calc) ns(t time.Time) int64 {
	x := ns(t)
	if x == neverNs+1 || x == math.MaxInt64 {
		c.clamped = true
	}
	return x
}

// before is a.Before(*b) for an = c.ns(a), bn = c.ns(b). The numbers
// compare as the times do where one of them is in ns's range (or both
// are the zero time), as all are until c.ns meets one that is not;
// from then on the times decide. (By the wall clock, as everywhere in
// the decider: a snapshot's times carry no monotonic reading.)
func (c *calc) before(an, bn int64, a, b *time.Time) bool {
	if !c.clamped {
		return an < bn
	}
	return a.Before(*b)
}

// partitionNodes appends to idx the indices of the partition's nodes (from
// its node list and from the nodes' partition lists), and returns it and
// the names it lists that the snapshot has no node for.
func (c *calc) partitionNodes(name string, idx []int) ([]int, []string) {
	pn := c.sc.topo.partNodes(c.s, name, c.idx)
	return append(idx, pn.idx...), pn.missing
}

// members is partitionNodes(name) of s computed afresh: its nodes'
// indices, each once, and the names it lists that s has no node for.
func members(s *cluster.Snapshot, name string, idx map[string]int) partNodes {
	var pn partNodes
	seen := make([]bool, len(s.Nodes))
	add := func(i int) {
		if !seen[i] {
			seen[i] = true
			pn.idx = append(pn.idx, i)
		}
	}
	if p := s.Partition(name); p != nil {
		for k, n := range p.Nodes {
			if i, ok := nodeAt(s, idx, k, n); ok {
				add(i)
			} else if !slices.Contains(pn.missing, n) {
				pn.missing = append(pn.missing, n)
			}
		}
	}
	for i := range s.Nodes {
		if !seen[i] && slices.Contains(s.Nodes[i].Partitions, name) {
			add(i)
		}
	}
	pn.in = seen
	return pn
}

// freeNow reports whether node i can start a job now, ignoring claims.
// A busy node held only by excluded jobs counts as free.
func (c *calc) freeNow(i int) bool {
	n := &c.nodes[i]
	if n.holders {
		return false
	}
	switch c.s.Nodes[i].State {
	case cluster.NodeIdle, cluster.NodePlanned:
		return true
	case cluster.NodeAlloc, cluster.NodeMixed, cluster.NodeCompleting:
		return n.exclHolder
	}
	return false
}

// freeAt is the reported FreeAt: zero when never or unknown.
func (c *calc) freeAt(i int) time.Time {
	n := &c.nodes[i]
	switch {
	case !c.s.Nodes[i].State.Usable():
		return time.Time{}
	case c.freeNow(i):
		return c.now
	case !n.holders, n.never, n.unknownEnd:
		return time.Time{}
	case n.endMax.Before(c.now): // overdue: ends any moment
		return c.now
	}
	return n.endMax
}

type shadowNode struct {
	i       int
	tNs     int64 // when it is free, to sort by (time: shadowTime)
	tie     int64 // then by this (shadowList)
	held    bool  // free at its holders' end (endMax), not now
	ours    bool
	freeNow bool
}

// shadowTime is when sn is free: now, or its holders' end.
func (c *calc) shadowTime(sn shadowNode) time.Time {
	if sn.held {
		return c.nodes[sn.i].endMax
	}
	return c.now
}

// shadowList is the usable nodes of a job's partitions in the order an
// EASY reservation would take them. A node whose end is unknown counts as
// free now so the estimated start is never later than the real one; on
// ties our free nodes come first, so the claim lands where it shortens
// our windows.
type shadowList struct {
	nodes   []shadowNode
	overlap bool // shares a node with our partition
}

// shadow estimates the reservation of the highest-priority reserving job
// that backfill has not planned, overlaps our partition and can fit.
// candidates are indices of the snapshot's jobs.
func (c *calc) shadow(candidates []int) {
	if len(candidates) == 0 {
		return
	}
	slices.SortStableFunc(candidates, func(a, b int) int { return cmp.Compare(c.s.Jobs[b].Priority, c.s.Jobs[a].Priority) })
	lists := map[string]*shadowList{}
	defer func() { // the largest list's memory goes back to the scratch
		for _, l := range lists {
			if cap(l.nodes) > cap(c.sc.shadow) {
				c.sc.shadow = l.nodes
			}
		}
	}()
	for _, k := range candidates {
		j := &c.s.Jobs[k]
		l, ok := lists[j.Partition]
		if !ok {
			l = c.shadowList(j.Partition)
			lists[j.Partition] = l
		}
		need := max(j.NumNodes, 1)
		if !l.overlap || len(l.nodes) < need {
			continue
		}
		first := c.firstNodes(l, need)
		start := c.shadowTime(first[need-1])
		moving := !start.After(c.now) // now itself: it moves with the clock
		if !j.Start.IsZero() && moving {
			c.h.flip(j.Start)
		}
		if !j.Start.IsZero() && j.Start.Before(start) { // Slurm's own estimate is earlier
			start = j.Start
			moving = false
			c.h.flip(j.Start)
			if start.Before(c.now) {
				start = c.now
				moving = true
			}
		}
		// A claim at now moves with the clock: the same nodes come first
		// later (those free now all have the time now, the others keep
		// their holders' ends, whose passing is noted), so the claim is
		// at the later now. window gives such a node no time (FreeFor 0,
		// whatever now); the decider compares its Until as moving
		// (claimMoves), and claim notes when it reaches a fixed claim.
		startNs := c.ns(start)
		for _, sn := range first {
			c.claim(&c.nodes[sn.i], start, startNs, k, true, moving)
		}
		return
	}
}

// shadowCmp is the order of a shadow list: by time, then tie.
func shadowCmp(a, b shadowNode) int {
	if r := cmp.Compare(a.tNs, b.tNs); r != 0 {
		return r
	}
	return cmp.Compare(a.tie, b.tie)
}

// firstNodes is the first need nodes of l in shadowCmp's order, the
// last of them (the latest free) at need-1. With names that number
// consecutively no two nodes compare equal, so a selection finds the
// nodes a full sort puts first, in less time; otherwise (equal names
// could tie) l is sorted whole, as it always was.
func (c *calc) firstNodes(l *shadowList, need int) []shadowNode {
	if !c.names.dense {
		slices.SortFunc(l.nodes, shadowCmp)
		return l.nodes[:need]
	}
	selectNth(l.nodes, need-1, shadowCmp)
	return l.nodes[:need]
}

func (c *calc) shadowList(partitions string) *shadowList {
	if partitions == "" {
		if p := c.s.DefaultPartition(); p != nil {
			partitions = p.Name
		}
	}
	idx := c.sc.listIdx[:0]
	for name := range strings.SplitSeq(partitions, ",") {
		idx, _ = c.partitionNodes(name, idx)
	}
	c.sc.listIdx = idx
	// De-duplicate across partitions.
	c.gen++
	l := &shadowList{}
	if c.sc.shadow != nil {
		l.nodes, c.sc.shadow = c.sc.shadow[:0], nil // one list at a time uses it
	}
	if c.rank == nil && !c.names.dense {
		c.rank = naturalRanks(c.s)
	}
	for _, i := range idx {
		if c.stamp[i] == c.gen {
			continue
		}
		c.stamp[i] = c.gen
		l.overlap = l.overlap || c.ours[i]
		n := &c.nodes[i]
		if !c.s.Nodes[i].State.Usable() || n.never {
			continue
		}
		sn := shadowNode{i: i, ours: c.ours[i], freeNow: c.freeNow(i)}
		sn.tNs = c.nowNs
		if n.holders && !n.unknownEnd && c.before(c.nowNs, n.endNs, &c.now, &n.endMax) {
			sn.held, sn.tNs = true, n.endNs
			c.h.flipNs(n.endNs) // then it counts as free now
		}
		// To be sorted by time, ours first, free now first, then the
		// names' natural order (index or rank, both below 2^61): the
		// last three as one number.
		sn.tie = int64(i)
		if !c.names.dense {
			sn.tie = int64(c.rank[i])
		}
		if !sn.ours {
			sn.tie |= 1 << 62
		}
		if !sn.freeNow {
			sn.tie |= 1 << 61
		}
		l.nodes = append(l.nodes, sn)
	}
	return l // ordered by firstNodes, as far as needed
}

// freeFor is node i's FreeFor: how long a job starting now can run there,
// capped by horizon; 0 if it is not free now.
func (c *calc) freeFor(i int, partitionUp bool, horizon time.Duration) time.Duration {
	node := &c.s.Nodes[i]
	n := &c.nodes[i]
	if !partitionUp || !node.State.Usable() || !c.freeNow(i) {
		return 0
	}
	// PLANNED means Slurm reserved it for someone; if we cannot see who
	// (and it is not our own pilot), assume the reservation starts now.
	if node.State == cluster.NodePlanned && !n.slurmClaim && !n.exclClaim {
		return 0
	}
	if n.claimNs == neverNs { // n.claim.IsZero()
		return horizon
	}
	if !c.before(c.nowNs, n.claimNs, &c.now, &n.claim) {
		return 0
	}
	c.h.flipNs(n.claimNs)
	left := time.Duration(n.claimNs - c.nowNs) // n.claim.Sub(c.now), if in range and no overflow
	if c.clamped || c.nowNs == neverNs || left <= 0 {
		left = n.claim.Sub(c.now)
	}
	if horizon != cluster.Unlimited && left >= horizon {
		c.h.flip(n.claim.Add(-horizon)) // capped until then
	}
	return min(left, horizon)
}

// summarize turns per-node windows into showbf lines: for each distinct
// FreeFor d, how many nodes are free for at least d.
func summarize(nodes []NodeWindow) []Window {
	var ds []time.Duration
	for _, n := range nodes {
		if n.FreeFor > 0 {
			ds = append(ds, n.FreeFor)
		}
	}
	slices.SortFunc(ds, func(a, b time.Duration) int { return cmp.Compare(b, a) })
	var out []Window
	for k, d := range ds {
		if k == len(ds)-1 || ds[k+1] != d {
			out = append(out, Window{Nodes: k + 1, Duration: d})
		}
	}
	return out
}

// noReserve lists the pending reasons for which Slurm's backfill makes no
// reservation: the job cannot start whatever the nodes do.
var noReserve = map[string]bool{
	"JobHeldUser":              true,
	"JobHeldAdmin":             true,
	"JobHoldMaxRequeue":        true,
	"Dependency":               true,
	"DependencyNeverSatisfied": true,
	"BeginTime":                true,
	"PartitionDown":            true,
	"PartitionInactive":        true,
	"PartitionNodeLimit":       true,
	"PartitionTimeLimit":       true,
	"PartitionConfig":          true,
	"InvalidAccount":           true,
	"InvalidQOS":               true,
	"AccountNotAllowed":        true,
	"BadConstraints":           true,
	"JobArrayTaskLimit":        true,
	"AccountingPolicy":         true,
	"DeadLine":                 true,
	"ReservationDeleted":       true,
	"MaxMemPerLimit":           true,
}

// Reserves reports whether a pending job with this squeue reason may hold a
// backfill reservation. Unknown reasons reserve, to be safe. Association
// and QOS limits (Assoc*, QOS*, Max*PerAccount) do not: backfill skips
// such jobs before planning them.
func Reserves(reason string) bool {
	switch reason {
	case "Resources", "Priority": // nearly every line: no lookup
		return true
	}
	r, _, _ := strings.Cut(reason, ",") // "ReqNodeNotAvail, UnavailableNodes:..."
	r = strings.TrimSpace(r)
	switch {
	case noReserve[r],
		strings.HasPrefix(r, "Assoc"),
		strings.HasPrefix(r, "QOS"),
		strings.HasPrefix(r, "Max") && strings.HasSuffix(r, "PerAccount"):
		return false
	}
	return true
}

// naturalCompare orders host names with digit runs compared as numbers,
// so c2 sorts before c10.
func naturalCompare(a, b string) int {
	if a == b {
		return 0
	}
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		if isDigit(a[i]) && isDigit(b[j]) {
			si, sj := i, j
			for i < len(a) && isDigit(a[i]) {
				i++
			}
			for j < len(b) && isDigit(b[j]) {
				j++
			}
			for si < i-1 && a[si] == '0' { // leading zeros, as TrimLeft(.., "0")
				si++
			}
			for sj < j-1 && b[sj] == '0' {
				sj++
			}
			na, nb := a[si:i], b[sj:j]
			if na == "0" {
				na = ""
			}
			if nb == "0" {
				nb = ""
			}
			if r := cmp.Compare(len(na), len(nb)); r != 0 {
				return r
			}
			if r := strings.Compare(na, nb); r != 0 {
				return r
			}
			continue
		}
		if a[i] != b[j] {
			return cmp.Compare(a[i], b[j])
		}
		i++
		j++
	}
	if r := cmp.Compare(len(a)-i, len(b)-j); r != 0 {
		return r
	}
	return strings.Compare(a, b) // "c01" vs "c1": any fixed order
}

func isDigit(b byte) bool { return '0' <= b && b <= '9' }

// FormatDuration prints d the way Slurm prints time limits, [D-]HH:MM:SS,
// truncated to the second; cluster.Unlimited prints as UNLIMITED.
func FormatDuration(d time.Duration) string {
	var buf [32]byte
	return string(appendDuration(buf[:0], d))
}

// appendDuration appends FormatDuration(d) to b.
func appendDuration(b []byte, d time.Duration) []byte {
	if d == cluster.Unlimited {
		return append(b, "UNLIMITED"...)
	}
	secs := int64(d / time.Second) // divide first: -MinInt64 overflows
	if secs < 0 {
		b = append(b, '-')
		secs = -secs
	}
	days, h, m, s := secs/86400, secs/3600%24, secs/60%60, secs%60
	// As fmt's "%s%d-%02d:%02d:%02d" (days) or "%s%02d:%02d:%02d".
	if days > 0 {
		b = strconv.AppendInt(b, days, 10)
		b = append(b, '-')
	}
	for k, v := range [3]int64{h, m, s} {
		if k > 0 {
			b = append(b, ':')
		}
		if v < 10 {
			b = append(b, '0')
		}
		b = strconv.AppendInt(b, v, 10)
	}
	return b
}
