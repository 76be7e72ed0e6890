package policy

import (
	"cmp"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/glean-hpc/glean/sidecar/cluster"
)

// Give way (Fair and Scavenger pilots; the thesis mode gives back by its
// own Algorithm 1). A pilot must leave when a pending regular job would
// start earlier with its node, by the time the job would start:
//
//	A (starts now): in priority order, each reserving pending job takes
//	  the nodes free now that it may use (idle ones first, then pilots'
//	  in cancel order) if they are enough; the pilots it takes are given.
//	  A job that fits on idle nodes alone takes them too: Slurm will
//	  start it, so no pilot goes there. A job Slurm starts within Grace
//	  anyway gets no pilot's node.
//	B (Slurm's plan): a planned job whose SchedNodes include pilots'
//	  nodes and that, without those pilots, could start on the same nodes
//	  more than Grace before its planned Start: the pilots ending after
//	  that earlier time are given. A and B run in one pass by priority,
//	  and B's earlier start becomes the job's reservation for the jobs
//	  below it (Slurm's plan is later only because of the pilots).
//	B' (EASY shadow): the same for the top unplanned job, on the nodes
//	  of its partitions, giving as few pilots as it needs.
//	C (claims): a non-estimated reservation on a pilot's node that
//	  starts before the pilot ends (plus Grace).
//
// The claimant's start decides: within RetireHorizon the pilot is
// cancelled, further it is retired (and cancelled in a later round if it
// is still there when the start comes close); a pilot whose task is known
// to end by the start (Pilot.TaskEnd) is retired, unless it ends within
// Grace anyway. Claimants take pilots that lose no work first (giveOrder). A pilot ending within
// Grace of the need is left alone, and a pilot never gives way to its own
// job's base allocation.

// need records that pilot pi must be gone by by, for claimant who.
type need struct {
	by  mtime
	who string
}

// piNeed is a pilot's need, to sort by, with what giveOrder reads of the
// pilot: lossless(pi, now + Grace) and its task's start.
type piNeed struct {
	pi    int
	n     need
	loss  bool
	start int64
}

func (d *decider) giveWay() {
	d.sc.needs = reuseMap(d.sc.needs)
	needs := d.sc.needs
	add := func(pi int, by mtime, who string) {
		if d.cmpM(by, d.nowPlus(0)) < 0 {
			by = d.nowPlus(0)
		}
		if n, ok := needs[pi]; !ok || d.cmpM(by, n.by) < 0 {
			needs[pi] = need{by, who}
		}
	}
	givers := d.anyGivable()
	if givers || d.anyHarvester() {
		d.rulePass(add, givers)
	}
	if givers {
		d.ruleTop(add)
		d.ruleClaims(add)
	}
	if len(needs) == 0 {
		return
	}
	pis := d.sc.pis[:0]
	defer func() { d.sc.pis = pis }()
	for pi, n := range needs {
		pis = append(pis, piNeed{pi: pi, n: n})
	}
	// giveOrder, with what it reads of each pilot (lossless(pi, now +
	// Grace), its task's start) read once: each pilot has one need.
	// The order is only the order of the actions: what the loop below
	// does with a pilot depends on that pilot alone, and a decision that
	// acts holds only at now. So an empty decision holds whatever the
	// order, and the sort notes nothing in the hold (its comparisons of
	// needs and task ends would end it early); the loop notes its own.
	h := d.h
	d.h = nil
	for k := range pis {
		pn := &pis[k]
		pn.loss = d.lossless(pn.pi, d.nowPlus(d.cfg.Grace))
		pn.start, _ = d.taskStartOf(pn.pi)
	}
	slices.SortFunc(pis, func(a, b piNeed) int {
		if a.n.by.t != b.n.by.t { // cmpM, noting nothing
			return cmp.Compare(a.n.by.t, b.n.by.t)
		}
		return d.giveOrderStarts(a.pi, b.pi, a.loss, b.loss, a.start, b.start)
	})
	d.h = h
	for _, pn := range pis {
		pi, n := pn.pi, pn.n
		p := &d.st.Pilots[pi]
		a := Action{Kind: CancelPilot, Cause: CauseGiveWay, Job: d.actionJob(pi), Pilot: p.ID, Node: p.Node, Claimant: n.who, By: d.timeOf(n.by.t)}
		// Far off, or the pilot's task ends by the need anyway: retire.
		if d.cmpM(n.by, d.nowPlus(d.cfg.RetireHorizon)) > 0 || p.Busy && !d.lossless(pi, d.nowPlus(d.cfg.Grace)) && d.lossless(pi, n.by) {
			if p.Retiring {
				continue // already told; cancelled when the need comes close
			}
			a.Kind = RetirePilot
			p.Retiring = true
		} else {
			d.gone[pi] = true
		}
		why := append(append(append(append(d.sc.why[:0], n.who...), " needs "...), p.Node...), " in "...)
		why = appendDuration(why, time.Duration(n.by.t-d.nowNs))
		d.sc.why = why
		a.Reason = string(why)
		d.emit(a)
	}
}

// giver is the pilot on node i that would have to give it, or -1 (none,
// or one leaving this round anyway).
func (d *decider) giver(i int) int {
	if pi := d.pilotOn[i]; pi >= 0 && !d.gone[pi] {
		return pi
	}
	return -1
}

// pilotEnd is pilot pi's End as an instant (its key's); ok false for
// none (UNLIMITED).
func (d *decider) pilotEnd(pi int) (mtime, bool) {
	e := d.pkeys[pi].end
	return mtime{t: e}, e != neverNs // ns maps only the zero time to neverNs
}

// givable reports whether running pilot pi gives way by these rules.
func (d *decider) givable(pi int) bool {
	p := &d.st.Pilots[pi]
	if d.gone[pi] || p.State != PilotRunning {
		return false
	}
	j := d.jobOf(pi)
	return j == nil || j.Mode != Thesis // an orphan's pilots are Fair
}

func (d *decider) anyGivable() bool {
	for i, pi := range d.pilotOn {
		if pi >= 0 && d.wAt[i] >= 0 && d.givable(pi) {
			return true
		}
	}
	return false
}

// anyHarvester: some non-thesis job may get pilots this round.
func (d *decider) anyHarvester() bool {
	for _, j := range d.st.Jobs {
		if j.Mode != Thesis && j.TasksPending > 0 {
			return true
		}
	}
	return false
}

// owner is the elastic job whose base j is, or -1.
func (d *decider) owner(j *cluster.Job) int {
	if o, ok := d.baseOf[j.ID]; ok {
		return o
	}
	if j.ArrayJobID != "" {
		if o, ok := d.baseOf[j.ArrayJobID]; ok {
			return o
		}
	}
	return -1
}

// gives reports whether pilot pi may give its node to a job of owner.
func (d *decider) gives(pi, owner int) bool {
	if !d.givable(pi) {
		return false
	}
	if owner < 0 {
		return true
	}
	return d.st.Pilots[pi].Job != d.st.Jobs[owner].ID
}

// avail is when node i is free if the pilots that give to owner left now;
// ok is false if never (unusable, unlimited, or unknown end).
func (d *decider) avail(i, owner int) (mtime, bool) {
	n := &d.s.Nodes[i]
	if !n.State.Usable() {
		return neverM, false
	}
	t := d.nowPlus(0)
	pi := d.pilotOn[i] // a pilot leaving this round counts as gone
	switch {
	case d.held[i]:
		if d.heldNever[i] {
			return neverM, false
		}
		if e := (mtime{t: d.heldEnd[i]}); d.cmpM(e, t) > 0 {
			t = e
		}
	case pi < 0 && n.State != cluster.NodeIdle && n.State != cluster.NodePlanned:
		return neverM, false // busy with nothing we can see
	}
	if pi >= 0 && !d.gone[pi] && !d.gives(pi, owner) {
		e, ok := d.pilotEnd(pi)
		if !ok {
			return neverM, false
		}
		if d.cmpM(e, t) > 0 {
			t = e
		}
	}
	return t, true
}

// pool is the pilot partition's nodes, in one job's partitions, free now
// but for pilots that give way, in the order claimants take them; left
// counts those not taken yet.
type pool struct {
	nodes []int
	left  int
	key   string // the jobs' Partition
	parts []string
	in    []bool // by node: in one of parts (inAny), looked up once
	// blocked: every node not taken is behind a window claim that blocks
	// the jobs ranked from blockedFrom on, the latest starting at
	// blockedMax. It stays so for the lower jobs (a claim's blocking
	// is final once its job's turn is past, and nodes are only taken).
	blocked     bool
	blockedMax  int64
	blockedFrom int
}

// pools caches a pool per partition list.
type pools struct {
	d    *decider
	all  []int
	list []*pool
	// all is the free nodes first (sorted), then from split on the
	// pilots' nodes, sorted only once a claimant would take one of them
	// (sortPilots): until then their order reads nothing.
	split  int
	sorted bool
}

// sortPilots puts the pilots' nodes in all, and in every pool made so
// far, in the order claimants take them.
func (ps *pools) sortPilots() {
	if ps.sorted {
		return
	}
	ps.sorted = true
	d, sc := ps.d, ps.d.sc
	// Each pilot's task start, read once (taskStart, whose read of the
	// task ends the comparisons note in pilotOrder as it would be).
	pilots := ps.all[ps.split:]
	for _, i := range pilots {
		pi := sc.aGiver[i]
		sc.aStart[pi], sc.aRead[pi] = d.taskStartOf(pi)
	}
	if len(pilots) >= 2 {
		// What the sort's comparisons read, noted once: each pilot's
		// lossless (every one is compared), and the task ends if two
		// pilots that lose work are compared and either read its task's
		// end. A sort compares every two neighbours of its result, and
		// those that lose work come last, together: so the task ends are
		// noted whenever two or more lose work and one of them read (at
		// least what the comparisons noted; exactly, pilot IDs being
		// unique).
		lose, read := 0, false
		for _, i := range pilots {
			if pi := sc.aGiver[i]; !d.lossOnce(pi) {
				lose++
				read = read || sc.aRead[pi]
			}
		}
		if lose >= 2 && read {
			d.pilotOrder.readTaskEnds()
		}
		slices.SortFunc(pilots, d.pilotNodeCmp)
	}
	for _, p := range ps.list { // as pools.of made them, in the new order
		p.nodes = p.nodes[:0]
		for _, i := range ps.all {
			if p.in[i] {
				p.nodes = append(p.nodes, i)
			}
		}
	}
}

func (ps *pools) of(j *cluster.Job) *pool {
	for _, p := range ps.list { // few: a map costs more
		if p.key == j.Partition {
			return p
		}
	}
	sc := ps.d.sc
	if sc.nPools == len(sc.pools) {
		sc.pools = append(sc.pools, pool{})
	}
	p := &sc.pools[sc.nPools]
	sc.nPools++
	*p = pool{nodes: p.nodes[:0], key: j.Partition, parts: ps.d.partitions(j), in: p.in}
	p.in = ps.d.union(p.parts, p.in)
	for _, i := range ps.all {
		if p.in[i] {
			p.nodes = append(p.nodes, i)
		}
	}
	p.left = len(p.nodes)
	ps.list = append(ps.list, p)
	return p
}

// pilotNodeCmp orders pilots' nodes for rule A by giveOrder of their
// pilots, from what sortPilots read of them (lossOnce's, taskStartOf).
func (d *decider) pilotNodeCmp(a, b int) int {
	sc := d.sc
	pa, pb := sc.aGiver[a], sc.aGiver[b]
	return d.giveOrderStarts(pa, pb, sc.loss[pa] == 2, sc.loss[pb] == 2, sc.aStart[pa], sc.aStart[pb])
}

// lossOnce is lossless(pi, now + Grace), noted in d.pilotOrder the first
// time it is asked in a decision: a second call would note the same.
func (d *decider) lossOnce(pi int) bool {
	loss := d.sc.loss
	if loss[pi] == 0 {
		h := d.h
		d.h = d.pilotOrder
		loss[pi] = 1
		if d.lossless(pi, d.nowPlus(d.cfg.Grace)) {
			loss[pi] = 2
		}
		d.h = h
	}
	return loss[pi] == 2
}

// take marks node i taken in every pool.
func (ps *pools) take(i int) {
	ps.d.consumed[i] = true
	for _, q := range ps.list {
		if q.in[i] {
			q.left--
		}
	}
}

// rulePass runs rules A and B over the pending jobs by priority.
func (d *decider) rulePass(add func(int, mtime, string), givers bool) {
	d.sc.nPools = 0
	ps := &pools{d: d, all: d.sc.poolAll[:0], list: d.sc.poolList[:0]}
	defer func() { d.sc.poolAll, d.sc.poolList = ps.all, ps.list }()
	d.sc.wClaim, d.sc.eClaim = reuse(d.sc.wClaim, len(d.s.Nodes)), reuse(d.sc.eClaim, len(d.s.Nodes))
	d.sc.startedRank = reuse(d.sc.startedRank, len(d.pend))
	d.wClaim, d.eClaim, d.startedRank = d.sc.wClaim, d.sc.eClaim, d.sc.startedRank
	for i := range d.s.Nodes {
		wi := d.wAt[i]
		if wi < 0 || d.held[i] || !d.s.Nodes[i].State.Usable() {
			continue
		}
		if pi := d.pilotOn[i]; pi >= 0 {
			if d.gone[pi] || d.givable(pi) { // leaving anyway, or gives way
				ps.all = append(ps.all, i)
			}
			continue
		}
		st := d.s.Nodes[i].State
		if st == cluster.NodeIdle || st == cluster.NodePlanned && !d.until(i).IsZero() {
			ps.all = append(ps.all, i)
		}
	}
	for _, i := range ps.all {
		if n := &d.sc.nodes[i]; !n.claim.IsZero() {
			d.wClaim[i] = rankClaim{until: n.claim.UnixNano(), rank: d.claimRank(i), mv: n.claimMoves}
		}
	}
	// Idle nodes first, shortest window first (claimants take what pilots
	// would get least of), then pilots' nodes in cancel order. The order
	// among the pilots matters only if a claimant takes a pilot's node
	// (startNow): they are sorted only then (pools.sortPilots), and what
	// that sort read is kept aside in d.pilotOrder until a node is taken.
	if d.h != nil {
		d.sc.order = tracker{now: d.nowNs}
		d.pilotOrder = &d.sc.order
	}
	d.sc.loss = reuse(d.sc.loss, len(d.st.Pilots)) // lossOnce's
	// What the comparisons read, looked up once: each node's giver and
	// whether its window moves (the pilots' task starts: sortPilots).
	sc := d.sc
	sc.aGiver, sc.aMoves = reuse(sc.aGiver, len(d.s.Nodes)), reuse(sc.aMoves, len(d.s.Nodes))
	sc.aStart, sc.aRead = reuse(sc.aStart, len(d.st.Pilots)), reuse(sc.aRead, len(d.st.Pilots))
	for _, i := range ps.all {
		pi := d.giver(i)
		sc.aGiver[i] = pi
		if pi < 0 {
			sc.aMoves[i] = d.winMoves(i)
		}
	}
	// The free nodes (no giver) first, then the pilots' nodes. No two
	// nodes compare equal (names and pilot IDs are unique), so sorting
	// the two parts apart gives the order a sort of the whole did.
	free := sc.aFree[:0]
	pilots := sc.aPilots[:0]
	for _, i := range ps.all {
		if sc.aGiver[i] < 0 {
			free = append(free, i)
		} else {
			pilots = append(pilots, i)
		}
	}
	ps.all = append(append(ps.all[:0], free...), pilots...)
	sc.aFree, sc.aPilots = free, pilots
	ps.split = len(free)
	slices.SortFunc(ps.all[:ps.split], func(a, b int) int {
		if c := d.cmpWinMoves(a, b, sc.aMoves[a], sc.aMoves[b]); c != 0 {
			return c
		}
		return d.names.cmp(a, b, nil)
	})
	chosen := d.sc.chosen[:0]
	defer func() { d.sc.chosen = chosen }()
	for r, k := range d.pend {
		j := &d.s.Jobs[k]
		if d.startedAt(j.ID, r) {
			continue
		}
		chosen = d.startNow(j, r, ps, chosen, add)
		if givers && !d.startedAt(j.ID, r) {
			d.planned(j, k, r, add)
		}
	}
}

// startedAt reports whether pending job id, of rank r in pend (-1: not
// there), starts now by rule A. By rank, as squeue's lines have unique
// IDs; should an ID come twice, by ID (any of its lines), as ever.
func (d *decider) startedAt(id string, r int) bool {
	if d.pendDup {
		return d.started[id]
	}
	return r >= 0 && r < len(d.startedRank) && d.startedRank[r]
}

// startNow is rule A for pending job j of rank r: if the free nodes it
// may use are enough, it takes them (chosen is scratch space).
func (d *decider) startNow(j *cluster.Job, r int, ps *pools, chosen []int, add func(int, mtime, string)) []int {
	p := ps.of(j)
	need := max(j.NumNodes, 1)
	if p.left < need {
		return chosen
	}
	owner := d.owner(j)
	end := d.nowPlus(0).add(d.timeLimit(j)) // zero: never
	soon := !j.Start.IsZero() && d.cmpM(fixed(j.Start), d.nowPlus(d.cfg.Grace)) <= 0
	if !d.anyWindowFit(p, r, end) {
		return chosen // no node passes fitsClaim: the scan would note nothing
	}
	for range arrayCount(j.ArrayTasks, p.left) {
		if p.left < need {
			break
		}
	scan:
		chosen = chosen[:0]
		pilots := false
		for _, i := range p.nodes {
			if d.consumed[i] || !d.fitsClaim(i, r, end) {
				continue
			}
			pi := d.giver(i)
			if pi >= 0 && (soon || !d.gives(pi, owner)) {
				continue
			}
			pilots = pilots || pi >= 0
			chosen = append(chosen, i)
			if len(chosen) == need {
				break
			}
		}
		if len(chosen) < need {
			break // whatever the pilots' order: the scan saw every node
		}
		if pilots && !ps.sorted {
			// It takes pilots' nodes: which ones hangs on their order.
			ps.sortPilots()
			goto scan
		}
		if d.pendDup {
			d.started[j.ID] = true
		}
		d.startedRank[r] = true
		for _, i := range chosen {
			ps.take(i)
			if pi := d.giver(i); pi >= 0 {
				// Which pilot's node was taken hangs on their order.
				d.h.merge(d.pilotOrder)
				if e, ok := d.pilotEnd(pi); !ok || d.cmpM(e, d.nowPlus(d.cfg.Grace)) > 0 {
					add(pi, d.nowPlus(0), j.ID)
				}
			}
		}
	}
	return chosen
}

// union is, by node, inAny(i, parts), in buf.
func (d *decider) union(parts []string, buf []bool) []bool {
	buf = reuse(buf, len(d.s.Nodes))
	for _, name := range parts {
		for i, in := range d.member(name) {
			buf[i] = buf[i] || in
		}
	}
	return buf
}

func (d *decider) inAny(i int, parts []string) bool {
	for _, name := range parts {
		if d.member(name)[i] {
			return true
		}
	}
	return false
}

// fitsClaim reports whether pending job j (rank r, ending at end in Unix
// nanoseconds, math.MaxInt64 for never) may run on node i now: for each
// reservation there (the window's, and one moved earlier by rule B), it
// is j's own, or of a job j outranks or that starts now elsewhere, or j
// ends before it.
func (d *decider) fitsClaim(i, r int, end mtime) bool {
	return d.fits(d.wClaim[i], r, end) && d.fits(d.eClaim[i], r, end)
}

func (d *decider) fits(c rankClaim, r int, end mtime) bool {
	switch {
	case !d.blocks(c, r):
		return true
	case end.never(): // never ends
		return false
	}
	return d.cmpM(end, mtime{t: c.until, mv: c.mv}) <= 0
}

// blocks reports whether reservation c holds back the job of rank r: it
// is a higher job's (or an unknown one's) that does not start now.
func (d *decider) blocks(c rankClaim, r int) bool {
	switch {
	case c.until == 0, c.rank >= r: // none, its own, or a lower job's
		return false
	case c.rank >= 0 && d.startedRank[c.rank]:
		return false
	}
	return true
}

// anyWindowFit reports whether some node of p not taken yet passes the
// window-claim half of fitsClaim for the job of rank r ending at end. When
// none does, startNow's scan would take nothing, and note nothing either:
// a comparison that fails has its turn (the claim minus the job's limit)
// behind now. This is the common case on a busy machine (every free node
// behind a higher job's reservation), where the scan of every pending job
// over the whole pool was most of a decision.
func (d *decider) anyWindowFit(p *pool, r int, end mtime) bool {
	if p.blocked && r >= p.blockedFrom {
		return !end.never() && end.t <= p.blockedMax
	}
	latest := int64(math.MinInt64)
	for _, i := range p.nodes {
		if d.consumed[i] {
			continue
		}
		c := d.wClaim[i]
		if !d.blocks(c, r) {
			return true
		}
		latest = max(latest, c.until)
	}
	p.blocked, p.blockedMax, p.blockedFrom = true, latest, r
	return !end.never() && end.t <= latest
}

// rankClaim is a reservation: its start in Unix nanoseconds (0: none) and
// the claimant's rank in pend (-1: unknown, which outranks everyone); mv:
// the start moves with the clock (rule B's earlier start, or the EASY shadow's
// claim at now).
type rankClaim struct {
	until int64
	rank  int
	mv    bool
}

// claimRank is rankOf of node i's window's claimant (its ClaimedBy),
// kept by node: looked up once per claimant (rankK, by its place in the
// snapshot's jobs).
func (d *decider) claimRank(i int) int {
	sc := d.sc
	if r := sc.wRank[i]; r != 0 {
		return r - 1
	}
	r := -1
	if k1 := sc.nodes[i].claimK1; k1 > 0 {
		if sc.rankK[k1-1] == 0 {
			sc.rankK[k1-1] = d.rankOf(d.s.Jobs[k1-1].ID) + 2
		}
		r = sc.rankK[k1-1] - 2
	}
	sc.wRank[i] = r + 1
	return r
}

func (d *decider) rankOf(id string) int {
	if r, ok := d.pendRank[id]; ok {
		return r
	}
	return -1
}

// planned is rule B for pending job j of rank r: Slurm planned it later
// than it could start on the same nodes without the pilots there.
func (d *decider) planned(j *cluster.Job, k, r int, add func(int, mtime, string)) {
	if len(j.SchedNodes) == 0 || j.Start.IsZero() || d.cmpM(fixed(j.Start), d.nowPlus(d.cfg.Grace)) <= 0 {
		return
	}
	owner := d.owner(j)
	// The plan's nodes as indices (-1: not in the snapshot), looked up once.
	idx := d.sc.jobNodes(k)
	behind := false
	for _, i := range idx {
		if i >= 0 && d.pilotOn[i] >= 0 && d.gives(d.pilotOn[i], owner) {
			behind = true
			break
		}
	}
	if !behind {
		return
	}
	t := d.nowPlus(0)
	start := fixed(j.Start)
	for _, i := range idx {
		if i < 0 {
			return
		}
		// t only grows: once it is too late (the test after the loop),
		// the other nodes cannot change that. An empty decision holds
		// by what this path compared, as it would by the whole loop's.
		if late := t.add(d.cfg.Grace); late.t >= start.t {
			d.cmpM(late, start) // noted as the test after the loop would
			return
		}
		a, free := d.avail(i, owner)
		if !free {
			return
		}
		// A higher-priority job planned there before j: j waits for it
		// too. (A lower one's reservation cannot delay j.)
		// (The window's Until and ClaimedBy, as the scan kept them.)
		if n := &d.sc.nodes[i]; d.wAt[i] >= 0 && n.claimNs != neverNs {
			until := mtime{t: n.claimNs, mv: n.claimMoves} // the EASY shadow's at now moves
			cr := d.claimRank(i)
			known := cr >= 0
			if (!known || cr < r) && d.cmpM(until, start) < 0 && n.claimBy != j.ID && !d.startedAt(n.claimBy, cr) {
				if !known {
					return
				}
				qe := d.maxM(until, d.nowPlus(0)).add(d.timeLimit(&d.s.Jobs[d.pend[cr]]))
				if qe.never() {
					return
				}
				a = d.maxM(a, qe)
			}
		}
		t = d.maxM(t, a)
	}
	if d.cmpM(t.add(d.cfg.Grace), start) >= 0 {
		return
	}
	for _, i := range idx {
		if c := &d.eClaim[i]; c.until == 0 || d.cmpM(t, mtime{t: c.until, mv: c.mv}) < 0 {
			*c = rankClaim{until: t.t, rank: r, mv: t.mv}
		}
		if pi := d.pilotOn[i]; pi >= 0 && d.gives(pi, owner) {
			if e, ok := d.pilotEnd(pi); !ok || d.cmpM(e, t.add(d.cfg.Grace)) > 0 {
				add(pi, t, j.ID)
			}
		}
	}
}

// topSlot is a node as ruleTop sees it.
type topSlot struct {
	i       int
	without mtime // free if the giving pilots left now
	with    mtime // free with them (zero: never)
	inWay   int   // a giving pilot that ends after the need, or -1
}

func (d *decider) ruleTop(add func(int, mtime, string)) {
	type slot = topSlot
	slots := d.sc.slots[:0]
	withs := d.sc.withs[:0]
	defer func() { d.sc.slots, d.sc.withs = slots[:0], withs[:0] }()
	d.sc.topSize = reuseMap(d.sc.topSize)
	size := d.sc.topSize // partition list -> its usable nodes; -1: none in the pilot partition
	for r, k := range d.pend {
		j := &d.s.Jobs[k]
		if d.startedAt(j.ID, r) || len(j.SchedNodes) > 0 && !j.Start.IsZero() {
			continue
		}
		if n, seen := size[j.Partition]; seen && n < max(j.NumNodes, 1) {
			continue
		}
		in := d.union(d.partitions(j), d.sc.topIn)
		d.sc.topIn = in
		owner := d.owner(j)
		need := max(j.NumNodes, 1)
		slots = slots[:0]
		overlap, usable := false, 0
		for i := range d.s.Nodes {
			if !in[i] {
				continue
			}
			overlap = overlap || d.wAt[i] >= 0
			if d.s.Nodes[i].State.Usable() {
				usable++
			}
			a, ok := d.avail(i, owner)
			if !ok {
				continue
			}
			sl := slot{i: i, without: a, with: a, inWay: -1}
			if pi := d.pilotOn[i]; pi >= 0 && d.gives(pi, owner) {
				sl.inWay = pi
				if e, ok := d.pilotEnd(pi); !ok {
					sl.with = neverM
				} else {
					sl.with = d.maxM(a, e)
				}
			}
			slots = append(slots, sl)
		}
		if overlap {
			size[j.Partition] = usable
		} else {
			size[j.Partition] = -1
		}
		if !overlap || len(slots) < need {
			continue // not ours, or never fits: the next job is the shadow
		}
		// Only the need-th earliest matters, and which nodes are free by
		// then: selected, not sorted (the comparisons made are those the
		// hold notes, and they decide the result as a sort's did).
		selectNth(slots, need-1, func(a, b slot) int { return d.cmpM(a.without, b.without) })
		t := slots[need-1].without
		// With the pilots: the need-th earliest, never-ending last.
		withs = withs[:0]
		for _, s := range slots {
			if !s.with.never() {
				withs = append(withs, s.with)
			}
		}
		if len(withs) >= need {
			selectNth(withs, need-1, d.cmpM)
			if d.cmpM(t.add(d.cfg.Grace), withs[need-1]) >= 0 {
				return // the pilots do not delay it
			}
		}
		free := 0
		var inWay []int
		for _, s := range slots {
			if d.cmpM(s.without, t) > 0 {
				continue
			}
			if s.inWay >= 0 {
				if e, ok := d.pilotEnd(s.inWay); !ok || d.cmpM(e, t.add(d.cfg.Grace)) > 0 {
					inWay = append(inWay, s.inWay)
					continue
				}
			}
			free++
		}
		slices.SortFunc(inWay, d.giveOrder)
		for _, pi := range inWay[:min(max(need-free, 0), len(inWay))] {
			add(pi, t, j.ID)
		}
		return // EASY: only the top unplanned job has a reservation
	}
}

func (d *decider) ruleClaims(add func(int, mtime, string)) {
	for i, pi := range d.pilotOn {
		if pi < 0 || d.wAt[i] < 0 || !d.givable(pi) {
			continue
		}
		n := &d.sc.nodes[i] // the window's claim, as the scan kept it
		if n.claim.IsZero() || n.estimated {
			continue
		}
		cr := d.claimRank(i)
		if d.startedAt(n.claimBy, cr) {
			continue
		}
		owner := -1
		if cr >= 0 {
			owner = d.owner(&d.s.Jobs[d.pend[cr]])
		}
		if !d.gives(pi, owner) {
			continue
		}
		if e := d.st.Pilots[pi].End; e.IsZero() || e.After(n.claim.Add(d.cfg.Grace)) {
			add(pi, fixed(n.claim), n.claimBy)
		}
	}
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// arrayCount is how many elements a pending array line stands for
// ("1-100%10", "1,3,5-9:2", "[0-7]"), at most limit and at least 1; 1 for
// a non-array job or what does not parse. An expression Slurm cut short
// ("1,3,...,71,7...") stands for more than it shows: it counts as limit
// (then the throttle), so that pilots never take nodes its unseen
// elements could start on.
func arrayCount(expr string, limit int) int {
	if expr == "" || limit <= 1 {
		return 1
	}
	a, err := cluster.ParseArrayIndices(strings.Trim(expr, "[]"))
	if err != nil {
		return 1
	}
	total, exact := a.Count(limit)
	if !exact {
		total = limit
	}
	if a.Throttle > 0 {
		total = min(total, a.Throttle)
	}
	return max(min(total, limit), 1)
}

// selectNth reorders xs so that xs[n] is what a sort by cmp would put
// there, with nothing after it that cmp orders before it and nothing
// before it ordered after it: quickselect, the pivot the median of three,
// in three parts (below, equal, above) since many instants tie (now).
// Inputs that defeat the pivot (a sorted list, as an idle partition's
// shadow list is) are sorted after two rounds that keep more than three
// quarters of what was left.
func selectNth[T any](xs []T, n int, cmp func(a, b T) int) {
	lo, hi := 0, len(xs) // xs[lo:hi] holds the n-th
	for bad := 0; hi-lo > 12 && bad < 2; {
		size := hi - lo
		a, b, c := lo, lo+(hi-lo)/2, hi-1
		if cmp(xs[b], xs[a]) < 0 {
			a, b = b, a
		}
		if cmp(xs[c], xs[b]) < 0 {
			b = c
			if cmp(xs[b], xs[a]) < 0 {
				b = a
			}
		}
		pivot := xs[b]
		// xs[lo:lt] < pivot, xs[lt:i] == pivot, xs[gt:hi] > pivot.
		lt, i, gt := lo, lo, hi
		for i < gt {
			switch c := cmp(xs[i], pivot); {
			case c < 0:
				xs[lt], xs[i] = xs[i], xs[lt]
				lt++
				i++
			case c > 0:
				gt--
				xs[gt], xs[i] = xs[i], xs[gt]
			default:
				i++
			}
		}
		switch {
		case n < lt:
			hi = lt
		case n >= gt:
			lo = gt
		default:
			return
		}
		if 4*(hi-lo) > 3*size {
			bad++
		}
	}
	slices.SortFunc(xs[lo:hi], cmp) // a few left, or a bad pivot's input
}
