package policy

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/glean-hpc/glean/sidecar/cluster"
)

// PilotState is where a pilot is in Slurm.
type PilotState int

const (
	PilotPending PilotState = iota
	PilotRunning
)

func (s PilotState) String() string {
	if s == PilotRunning {
		return "running"
	}
	return "pending"
}

// Pilot is one pilot job glean submitted. Pilots are known only by these
// IDs, never by name or comment.
type Pilot struct {
	ID    string
	Job   string // the elastic job it serves
	Node  string // running: its node; pending: the node it was pinned to, or ""
	State PilotState
	// Submitted is when it was submitted; Start and End when it started
	// and when its time limit ends (zero End: UNLIMITED).
	Submitted, Start, End time.Time
	Retiring              bool // told to finish its task and take no more
	// Leaving: glean cancelled it (it is in its grace): its node is as
	// good as free, and no rule acts on it again. Slurm still shows it
	// running until it ends.
	Leaving bool
	Busy    bool // running a task
	// TaskEnd is when the task a busy pilot runs is expected to end (its
	// start plus the job's TaskTime); zero: unknown. With it, give way
	// takes first the pilots whose task ends within Grace, and retires
	// rather than cancels a pilot whose task ends before its claimant
	// needs the node: no attempt is killed for nothing.
	TaskEnd time.Time
}

// ElasticJob is one elastic job as the policy sees it.
type ElasticJob struct {
	ID     string
	Mode   Mode
	Submit time.Time
	// TasksPending are tasks no worker holds (including tasks handed back);
	// TasksRunning are held by a pilot or a base element.
	TasksPending, TasksRunning int
	// TaskTime is how long one task takes: the learned p95 runtime with a
	// margin, or the task's -t. 0: unknown (no work cap on pilot sizes).
	TaskTime time.Duration
	// BaseJobIDs are the Slurm job ids of the job's plain allocation in
	// Fair mode (the shadow array, or the rigid job), matched against a
	// snapshot job's ID and ArrayJobID. To Slurm and to the policy they
	// are regular jobs: pilots are sized around their reservations and
	// give way to them, except that a pilot never gives way to its own
	// job's base (the same work would just change hands). When the job has
	// no pending task and no pilot of it holds a task, its pending base
	// jobs are cancelled (CancelBase), unless it could not get a pilot
	// for a task a running element hands back.
	BaseJobIDs []string
	// Owner is who submitted the job (the daemon: its uid). The Thesis
	// jobs of one owner are one pool, as the thesis's one executor pool
	// served its calibration jobs first come, first served: one floor,
	// and a pilot whose job has no task left for it moves to the pool's
	// next job with work (MovePilot) instead of leaving. "": a pool of its
	// own. A pilot never moves to another owner's job.
	Owner string
	// Budgeted: the job has a budget of pilot node-time (--glean
	// budget=), of which BudgetLeft is not yet spent or promised to its
	// live pilots (each counts its time limit until it ends). No pilot is
	// submitted with a time limit beyond what is left, so the job's
	// pilots never use more than the budget; the plain allocation (Fair's
	// base) is not counted: it is what the job would use without glean.
	// (The simulator sets no budget; a caller that does must count it
	// among the inputs it compares before skipping a round.)
	Budgeted   bool
	BudgetLeft time.Duration
	// Deadline (--glean deadline=): when the owner wants the job done;
	// zero: none. It orders the owner's own jobs (Order).
	Deadline time.Time
	// HoldPilots: submit no new pilot for the job (gleand holds them back:
	// its last ones died at start). Its pilots that run are handled as
	// ever; its waiting tasks claim no node from later jobs' pilots. (The
	// simulator never sets it; like Budgeted, a caller that skips rounds
	// must compare it.)
	HoldPilots bool
	// HeldNodes are nodes on which the job gets no new pilot: gleand holds
	// them back from its owner's jobs, their last pilots there died at
	// start.
	HeldNodes []string
}

// withinBudget is limit (cluster.Unlimited included) cut to what is left
// of job j's budget after spent, in whole minutes; limit without a budget.
func withinBudget(limit time.Duration, j *ElasticJob, spent time.Duration) time.Duration {
	if !j.Budgeted {
		return limit
	}
	return min(limit, max(j.BudgetLeft-spent, 0).Truncate(time.Minute))
}

// State is what glean knows beyond the snapshot.
type State struct {
	Jobs   []ElasticJob // in precedence order (Order: FIFO, deadlines within an owner's jobs): the first gets nodes first
	Pilots []Pilot
	// PendingMisses counts consecutive rounds in which a pending pilot
	// timed out; each adds Config.PendingTimeoutStep to the timeout.
	// Keep it with NextMisses.
	PendingMisses int
	// Started: a pilot started since the last round (a success resets
	// the misses, as in the thesis).
	Started bool
	// BFInterval is one scheduling cycle, the base pending timeout; 0:
	// the snapshot's bf_interval, else Config.PendingTimeout.
	BFInterval time.Duration
}

// NextMisses is PendingMisses for the next round: reset by a start, plus
// one if acts cancelled a pilot for its pending timeout.
func (st State) NextMisses(acts []Action) int {
	m := st.PendingMisses
	if st.Started {
		m = 0
	}
	for _, a := range acts {
		if a.Kind == CancelPilot && a.Cause == CauseTimeout {
			return m + 1
		}
	}
	return m
}

// ActionKind is what to do.
type ActionKind int

const (
	// SubmitPilot: submit one one-node pilot for Job with TimeLimit,
	// preferably pinned to Node (--nodelist): the pilot was sized for that
	// node's window and may not fit elsewhere.
	SubmitPilot ActionKind = iota
	// CancelPilot: scancel the pilot (TERM, Grace, KILL).
	CancelPilot
	// RetirePilot: tell the pilot to finish its task and take no more.
	RetirePilot
	// CancelBase: cancel the pending part of Base, a base job of Job
	// (for a pending array: only its pending elements, scancel -t PD).
	CancelBase
	// MovePilot: Pilot, of Job, serves To from now on (a Thesis job of the
	// same owner): it takes no more of Job's tasks, and To's once its
	// running task ends (at once if it has none, or when it starts).
	MovePilot
)

var actionKindNames = [...]string{"submit", "cancel", "retire", "cancel-base", "move"}

func (k ActionKind) String() string {
	if k >= 0 && int(k) < len(actionKindNames) {
		return actionKindNames[k]
	}
	return fmt.Sprintf("ActionKind(%d)", int(k))
}

// Cause says why, for metrics and logs.
type Cause int

const (
	CauseHarvest  Cause = iota // submit: idle nodes to harvest
	CauseTimeout               // cancel: pending longer than the timeout
	CauseNoWork                // cancel: no task for the pilot to run
	CauseGiveWay               // cancel or retire: a pending job needs the node
	CauseThesis                // cancel: thesis Algorithm 1 releases nodes
	CauseWorkDone              // cancel base: the plain allocation has no work left
	CausePool                  // move: the pilot's job has no task left for it, the pool's next one has
)

var causeNames = [...]string{"harvest", "timeout", "no-work", "give-way", "thesis", "work-done", "pool"}

func (c Cause) String() string {
	if c >= 0 && int(c) < len(causeNames) {
		return causeNames[c]
	}
	return fmt.Sprintf("Cause(%d)", int(c))
}

// Action is one thing for the caller to do.
type Action struct {
	Kind      ActionKind
	Cause     Cause
	Job       string        // the elastic job
	Pilot     string        // CancelPilot, RetirePilot
	Base      string        // CancelBase
	To        string        // MovePilot: the job the pilot serves next
	Node      string        // the node the pilot was sized for, or holds
	TimeLimit time.Duration // SubmitPilot: whole minutes, or cluster.Unlimited
	Claimant  string        // give way: the pending job that needs the node
	By        time.Time     // give way: when it needs it
	Reason    string        // for humans
}

func (a Action) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s/%s job=%s", a.Kind, a.Cause, a.Job)
	if a.Pilot != "" {
		fmt.Fprintf(&b, " pilot=%s", a.Pilot)
	}
	if a.Base != "" {
		fmt.Fprintf(&b, " base=%s", a.Base)
	}
	if a.To != "" {
		fmt.Fprintf(&b, " to=%s", a.To)
	}
	if a.Node != "" {
		fmt.Fprintf(&b, " node=%s", a.Node)
	}
	if a.Kind == SubmitPilot {
		fmt.Fprintf(&b, " time=%s", FormatDuration(a.TimeLimit))
	}
	if a.Claimant != "" {
		fmt.Fprintf(&b, " for=%s by=%s", a.Claimant, a.By.UTC().Format(time.RFC3339))
	}
	return b.String()
}

// Decide is the policy: from one snapshot, glean's state, the config and
// the time, what to submit, cancel and retire. It is pure: no I/O, no
// clock, no randomness; the same input gives the same actions in the same
// order (timeouts, moves within a thesis pool, no-work releases, base
// cancels, give-way, thesis releases, submissions). No pilot appears in two
// actions.
//
// It adds no pilot when the snapshot is incomplete, when a pending pilot
// timed out this round (the thesis: the scaling exits), or when the pilot
// partition is missing; it still cancels. With an invalid config it does
// nothing.
//
// What the snapshot must carry, as Slurm shows it: node states; running
// jobs with Nodes and End (or UNLIMITED); pending jobs with Priority,
// Reason, NumNodes, TimeLimit, Partition, and, where the backfill
// scheduler planned them, Start and SchedNodes (the top job unplanned is
// estimated EASY-style; jobs further down unplanned are seen only when
// they could start now); a pending array as one line with ArrayTasks;
// glean's pilots as ordinary lines, recognised only by State.Pilots' IDs.
func Decide(s *cluster.Snapshot, st State, cfg Config, now time.Time) []Action {
	acts, _ := decide(s, st, cfg, now, false)
	return acts
}

// decider holds one round's derived view. Nodes are indices into s.Nodes,
// pilots indices into st.Pilots, elastic jobs indices into st.Jobs.
type decider struct {
	s     *cluster.Snapshot
	st    State
	cfg   Config
	now   time.Time
	nowNs int64

	jobIdx   map[string]int // elastic job id -> index
	baseOf   map[string]int // base job id -> elastic job index
	pilotIdx map[string]int // pilot id -> index
	gone     []bool         // pilot cancelled or retired this round
	acts     []Action
	timedOut bool

	nodeIdx map[string]int
	names   nodeNames  // nodeIdx, faster
	pkeys   []pilotKey // by pilot
	win     Windows    // its Partition; Nodes is nil: a node's window is read by its index
	winOK   bool
	wAt     []int           // node -> its place among the pilot partition's nodes; -1 outside it
	freeFor []time.Duration // node -> its window's FreeFor (in the pilot partition)

	pilotOn  []int  // node -> running pilot on it, -1
	targeted []bool // node -> a pending pilot is pinned to it
	unpinned int    // pending pilots with no node

	// Holders other than glean's pilots.
	held      []bool  // node has a non-pilot holder
	heldEnd   []int64 // latest End of those holders, an instant (neverNs: none)
	heldNever []bool  // one of them never ends (UNLIMITED or unknown End)

	pend     []int          // reserving pending non-pilot jobs (s.Jobs indices), by priority
	pendRank map[string]int // job id -> position in pend
	started  map[string]bool
	consumed []bool // node taken by a pending job that starts now (give-way pass)
	// Rule A's reservations by node: the window's and rule B's.
	wClaim, eClaim []rankClaim
	startedRank    []bool // by rank in pend
	pendDup        bool   // an ID twice in pend: started by ID (startedAt)

	pools       [][]int // jobs by owner and mode (jobPools)
	poolOf      []int   // job -> its pool, -1
	thesisPlans []thesisPlan
	moved       map[int]Action        // pilot -> its move this round (poolMoves)
	movedCharge map[int]time.Duration // job -> the budget its moves in took (poolMoves)
	uncovered   []int                 // job -> pending tasks no pilot will take (submit)

	sc         *scratch // where the slices and maps above live
	h          *tracker // when the decision may change (DecideHold; nil: not tracked)
	pilotOrder *tracker // what ordering the pilots' nodes read (rulePass)
}

func newDecider(s *cluster.Snapshot, st State, cfg Config, now time.Time, track bool, sc *scratch) *decider {
	if sc == nil {
		sc = new(scratch)
	}
	d := &sc.dec
	*d = decider{s: s, st: st, cfg: cfg, now: now, nowNs: ns(now), sc: sc, acts: sc.acts[:0]}
	sc.partsOK = false // the default partition may differ
	sc.jobIdx, sc.baseOf = reuseMap(sc.jobIdx), reuseMap(sc.baseOf)
	// The pilots are most often the last decision's, in the same order:
	// their index is then the same map.
	samePilots := sc.pilotIdx != nil && len(sc.pilotIDs) == len(st.Pilots)
	for i := 0; samePilots && i < len(st.Pilots); i++ {
		samePilots = sameString(st.Pilots[i].ID, sc.pilotIDs[i])
	}
	if !samePilots {
		sc.pilotIdx = reuseMap(sc.pilotIdx)
		sc.pilotIDs, sc.pilotNums = sc.pilotIDs[:0], sc.pilotNums[:0]
		for i := range st.Pilots {
			p := &st.Pilots[i]
			sc.pilotIdx[p.ID] = i
			sc.pilotIDs = append(sc.pilotIDs, p.ID)
			sc.pilotNums = append(sc.pilotNums, idNumber(p.ID))
		}
	}
	sc.started = reuseMap(sc.started)
	d.jobIdx, d.baseOf, d.pilotIdx, d.started = sc.jobIdx, sc.baseOf, sc.pilotIdx, sc.started
	sc.gone = reuse(sc.gone, len(st.Pilots))
	d.gone = sc.gone
	sc.pjob = reuse(sc.pjob, len(st.Pilots))
	if !sc.topo.same(s) {
		sc.nodeIdx = nodeIndexInto(reuseMap(sc.nodeIdx), s)
		sc.names = newNodeNames(s, sc.nodeIdx)
	}
	d.nodeIdx = sc.nodeIdx
	d.names = sc.names
	d.names.s = s
	if track {
		sc.track = tracker{now: d.nowNs}
		d.h = &sc.track
	}
	for i, j := range st.Jobs {
		if _, dup := d.jobIdx[j.ID]; !dup {
			d.jobIdx[j.ID] = i
		}
		for _, b := range j.BaseJobIDs {
			d.baseOf[b] = i
		}
	}
	for i := range st.Pilots {
		p := &st.Pilots[i]
		d.gone[i] = p.Leaving && p.State == PilotRunning
		d.setJob(i)
	}
	n := len(s.Nodes)
	sc.pilotOn = reuse(sc.pilotOn, n)
	d.pilotOn = sc.pilotOn
	for i := range d.pilotOn {
		d.pilotOn[i] = -1
	}
	sc.targeted, sc.held, sc.heldNever, sc.consumed = reuse(sc.targeted, n), reuse(sc.held, n), reuse(sc.heldNever, n), reuse(sc.consumed, n)
	sc.heldEnd = reuse(sc.heldEnd, n)
	for i := range sc.heldEnd {
		sc.heldEnd[i] = neverNs
	}
	d.pend = sc.pend[:0]
	d.targeted, d.held, d.heldEnd, d.heldNever, d.consumed = sc.targeted, sc.held, sc.heldEnd, sc.heldNever, sc.consumed

	// Pilots' nodes: glean's record first, the snapshot fills gaps. The
	// slice is cloned so that filling never writes into the caller's.
	sc.pilots = append(sc.pilots[:0], st.Pilots...)
	d.st.Pilots = sc.pilots
	sc.pkeys = sc.pkeys[:0]
	for i := range d.st.Pilots {
		sc.pkeys = append(sc.pkeys, keyOf(&d.st.Pilots[i], sc.pilotNums[i]))
	}
	d.pkeys = sc.pkeys
	sc.indexJobs(s, &d.names)
	// The windows leave out the pilots' own jobs (WindowOptions.Exclude).
	sc.jobExcl, sc.jobRes = reuse(sc.jobExcl, len(s.Jobs)), reuse(sc.jobRes, len(s.Jobs))
	for k := range s.Jobs {
		j := &s.Jobs[k]
		if pi, ok := d.pilotIdx[j.ID]; ok {
			sc.jobExcl[k] = true
			p := &d.st.Pilots[pi]
			if p.Node == "" {
				switch {
				case p.State == PilotRunning && j.Holds() && len(j.Nodes) > 0:
					p.Node = j.Nodes[0]
				case p.State == PilotPending && j.Pending() && len(j.SchedNodes) > 0:
					p.Node = j.SchedNodes[0]
				}
			}
			continue
		}
		if !j.Holds() {
			if j.Pending() && Reserves(j.Reason) {
				d.pend = append(d.pend, k)
				sc.jobRes[k] = true
			}
			continue
		}
		never, end := j.TimeLimit == cluster.Unlimited || j.End.IsZero(), ns(j.End)
		for _, i := range sc.jobNodes(k) {
			if i < 0 {
				continue
			}
			d.held[i] = true
			switch {
			case never:
				d.heldNever[i] = true
			case end > d.heldEnd[i]:
				d.heldEnd[i] = end
			}
		}
	}
	for pi := range d.st.Pilots {
		p := &d.st.Pilots[pi]
		i, ok := d.names.get(p.Node)
		switch {
		case p.State == PilotRunning && ok:
			d.pilotOn[i] = pi
		case p.State == PilotPending && ok:
			d.targeted[i] = true
		case p.State == PilotPending:
			d.unpinned++
		}
	}

	slices.SortStableFunc(d.pend, func(a, b int) int { return cmp.Compare(s.Jobs[b].Priority, s.Jobs[a].Priority) })
	sc.pend = d.pend
	sc.pendRank = reuseMap(sc.pendRank)
	d.pendRank = sc.pendRank
	for r, k := range d.pend {
		if _, dup := d.pendRank[s.Jobs[k].ID]; !dup {
			d.pendRank[s.Jobs[k].ID] = r
		} else {
			d.pendDup = true
		}
	}

	w, err := backfillWindows(s, now, WindowOptions{Partition: cfg.PilotPartition}, d.h, &d.names, sc)
	if err == nil {
		d.win, d.winOK, d.freeFor = w, true, sc.freeFor
		sc.wAt = reuse(sc.wAt, n)
		d.wAt = sc.wAt
		sc.wRank = reuse(sc.wRank, n)
		sc.rankK = reuse(sc.rankK, len(s.Jobs))
		for i := range d.wAt {
			d.wAt[i] = -1
		}
		for k, i := range sc.ourIdx {
			d.wAt[i] = k
		}
	}
	return d
}

// jobOf is the elastic job pilot pi serves (jobIdx of its Job), nil
// for an orphan: looked up once per decision (setJob), and again when a
// pool move changes its Job.
func (d *decider) jobOf(pi int) *ElasticJob {
	if ji := d.sc.pjob[pi]; ji >= 0 {
		return &d.st.Jobs[ji]
	}
	return nil
}

// setJob looks pilot pi's job up for jobOf.
func (d *decider) setJob(pi int) {
	ji, ok := d.jobIdx[d.st.Pilots[pi].Job]
	if !ok {
		ji = -1
	}
	d.sc.pjob[pi] = ji
}

func (d *decider) emit(a Action) { d.acts = append(d.acts, a) }

func (d *decider) cancel(pi int, c Cause, why string) {
	p := &d.st.Pilots[pi]
	d.gone[pi] = true
	d.emit(Action{Kind: CancelPilot, Cause: c, Job: d.actionJob(pi), Pilot: p.ID, Node: p.Node, Reason: why})
}

// cancelOrder is the thesis's order for giving nodes back (4.3.3): the
// pilot closest to its end first (UNLIMITED last), then the newest.
func (d *decider) cancelOrder(a, b int) int {
	ka, kb := &d.pkeys[a], &d.pkeys[b]
	switch {
	case (ka.end == neverNs) != (kb.end == neverNs):
		if ka.end == neverNs {
			return 1
		}
		return -1
	case ka.end != kb.end:
		return cmp.Compare(ka.end, kb.end)
	case ka.sub != kb.sub:
		return cmp.Compare(kb.sub, ka.sub)
	case ka.num >= 0 && kb.num >= 0:
		return cmp.Compare(kb.num, ka.num) // naturalCompare of plain numbers
	}
	return naturalCompare(d.st.Pilots[b].ID, d.st.Pilots[a].ID)
}

// pilotKey is what cancelOrder compares of a pilot: End and Submitted as
// instants, its ID as a number if it is one written plainly (-1 if not);
// and its TaskEnd as an instant (giveOrder).
type pilotKey struct{ end, sub, num, taskEnd int64 }

func keyOf(p *Pilot, num int64) pilotKey {
	return pilotKey{end: ns(p.End), sub: ns(p.Submitted), num: num, taskEnd: ns(p.TaskEnd)}
}

// idNumber is a pilot ID as a number if it is one written plainly, else
// -1 (pilotKey.num).
func idNumber(id string) int64 {
	if v, ok := parsePlainNumber(id); ok {
		return int64(v)
	}
	return -1
}

// giveOrder is the order in which pilots give their nodes to a claimant:
// first those that lose no work (idle, or their task ends within Grace),
// then those that lose the least (their task started last: a killed
// attempt's node time is waste), then cancelOrder.
func (d *decider) giveOrder(a, b int) int {
	return d.giveOrderOf(a, b, d.lossless(a, d.nowPlus(d.cfg.Grace)), d.lossless(b, d.nowPlus(d.cfg.Grace)))
}

// giveOrderOf is giveOrder with the pilots' lossless(pi, now + Grace).
func (d *decider) giveOrderOf(a, b int, la, lb bool) int {
	var sa, sb int64
	if !la && !lb {
		sa, sb = d.taskStart(a), d.taskStart(b)
	}
	return d.giveOrderStarts(a, b, la, lb, sa, sb)
}

// giveOrderStarts is giveOrderOf with the pilots' taskStart, read only if
// neither is lossless.
func (d *decider) giveOrderStarts(a, b int, la, lb bool, sa, sb int64) int {
	switch {
	case la && !lb:
		return -1
	case lb && !la:
		return 1
	case !la:
		switch {
		case (sa == neverNs) != (sb == neverNs): // unknown last
			if sa == neverNs {
				return 1
			}
			return -1
		case sa != sb:
			return cmp.Compare(sb, sa) // the later start loses less
		}
	}
	return d.cancelOrder(a, b)
}

// taskStart is when busy pilot pi's task started (TaskEnd minus its job's
// TaskTime); neverNs: unknown.
func (d *decider) taskStart(pi int) int64 {
	t, read := d.taskStartOf(pi)
	if read {
		d.h.readTaskEnds()
	}
	return t
}

// taskStartOf is taskStart without the note; read: it read the task end.
func (d *decider) taskStartOf(pi int) (int64, bool) {
	p := &d.st.Pilots[pi]
	j := d.jobOf(pi)
	if !p.Busy || p.TaskEnd.IsZero() || j == nil || j.TaskTime <= 0 {
		return neverNs, false
	}
	return satAdd(d.pkeys[pi].taskEnd, -int64(j.TaskTime)), true
}

// lossless reports whether running pilot pi can leave by t without
// killing a task: it is idle, or its task is known to end by t.
func (d *decider) lossless(pi int, t mtime) bool {
	p := &d.st.Pilots[pi]
	if p.State != PilotRunning || !p.Busy {
		return p.State == PilotRunning
	}
	d.h.readTaskEnds()
	if p.TaskEnd.IsZero() {
		return false
	}
	return d.cmpM(mtime{t: d.pkeys[pi].taskEnd}, t) <= 0 // fixed(p.TaskEnd)
}

// timeouts cancels pending pilots older than the timeout: one scheduling
// cycle, plus a step per consecutive miss, bounded.
func (d *decider) timeouts() {
	base := d.st.BFInterval
	if base <= 0 {
		base = d.s.Config.BackfillInterval
	}
	if base <= 0 {
		base = d.cfg.PendingTimeout
	}
	misses := d.st.PendingMisses
	if d.st.Started {
		misses = 0
	}
	limit := base + time.Duration(max(misses, 0))*d.cfg.PendingTimeoutStep
	if limit > d.cfg.PendingTimeoutMax || limit < base { // bounded, and no overflow
		limit = max(d.cfg.PendingTimeoutMax, base)
	}
	for pi := range d.st.Pilots {
		p := &d.st.Pilots[pi]
		if p.State != PilotPending {
			continue
		}
		if age := d.now.Sub(p.Submitted); age > limit {
			d.timedOut = true
			d.cancel(pi, CauseTimeout, fmt.Sprintf("pending %s, timeout %s", FormatDuration(age), FormatDuration(limit)))
		} else {
			d.h.flip(p.Submitted.Add(limit))
		}
	}
}

// idleSlots are the pilots of job id that would take a task now: pending
// ones and running ones with none. Those of a known job are found by its
// index (jobOf's), an orphan job's by name.
func (d *decider) idleSlots(id string) (pending, idle []int) {
	ji, ok := d.jobIdx[id]
	if !ok {
		ji = -1
	}
	for pi := range d.st.Pilots {
		p := &d.st.Pilots[pi]
		if d.gone[pi] || d.sc.pjob[pi] != ji || ji < 0 && p.Job != id || p.Retiring {
			continue
		}
		switch {
		case p.State == PilotPending:
			pending = append(pending, pi)
		case !p.Busy:
			idle = append(idle, pi)
		}
	}
	return pending, idle
}

// noWork cancels pilots beyond the work left: a job's pending and idle
// pilots in excess of its pending tasks, the pending ones first (newest
// first), then idle running ones in cancel order. Busy pilots keep their
// task. Orphans (pilots of jobs not in State) have no work.
func (d *decider) noWork() {
	// Each job once, in the order of its first pilot: known jobs by
	// index, orphans (rare) by name.
	d.sc.seenJob = reuse(d.sc.seenJob, len(d.st.Jobs))
	var orphans []string
	for pi := range d.st.Pilots {
		p := &d.st.Pilots[pi]
		j := d.jobOf(pi)
		if j != nil {
			ji := d.sc.pjob[pi]
			if d.sc.seenJob[ji] {
				continue
			}
			d.sc.seenJob[ji] = true
		} else {
			if slices.Contains(orphans, p.Job) {
				continue
			}
			orphans = append(orphans, p.Job)
		}
		tasks := 0
		if j != nil {
			if j.Mode == Thesis && d.cfg.ThesisHoldEmpty {
				continue
			}
			tasks = j.TasksPending
		}
		pending, idle := d.idleSlots(p.Job)
		surplus := len(pending) + len(idle) - max(tasks, 0)
		if surplus <= 0 {
			continue
		}
		slices.SortFunc(pending, func(a, b int) int {
			pa, pb := &d.st.Pilots[a], &d.st.Pilots[b]
			if c := pb.Submitted.Compare(pa.Submitted); c != 0 {
				return c
			}
			return naturalCompare(pb.ID, pa.ID)
		})
		slices.SortFunc(idle, d.cancelOrder)
		for _, pi := range append(pending, idle...)[:surplus] {
			d.cancel(pi, CauseNoWork, fmt.Sprintf("%d pending tasks for %d idle pilots", max(tasks, 0), len(pending)+len(idle)))
		}
	}
}

// baseCancels cancels the pending base jobs of a Fair job with no pending
// task and no task on a pilot (a pilot that gives way hands its task back,
// and the base must then still be there).
func (d *decider) baseCancels() {
	for ji := range d.st.Jobs {
		j := &d.st.Jobs[ji]
		if j.Mode != Fair || len(j.BaseJobIDs) == 0 || j.TasksPending > 0 {
			continue
		}
		// A running element that loses its task hands it back; a job that
		// cannot get a pilot for it (its budget spent, its pilots held
		// back) keeps its pending elements to take it, as without glean.
		if j.HoldPilots || withinBudget(cluster.Unlimited, j, 0) < d.cfg.ShortestPilot(j.TaskTime) {
			continue
		}
		busy := false
		for pi := range d.st.Pilots {
			p := &d.st.Pilots[pi]
			if !d.gone[pi] && p.Job == j.ID && p.State == PilotRunning && p.Busy {
				busy = true
				break
			}
		}
		if busy {
			continue
		}
		done := map[string]bool{}
		for k := range d.s.Jobs {
			sj := &d.s.Jobs[k]
			if !sj.Pending() || done[sj.ID] || !(slices.Contains(j.BaseJobIDs, sj.ID) || sj.ArrayJobID != "" && slices.Contains(j.BaseJobIDs, sj.ArrayJobID)) {
				continue
			}
			done[sj.ID] = true
			d.emit(Action{Kind: CancelBase, Cause: CauseWorkDone, Job: j.ID, Base: sj.ID, Reason: "no work left for the plain allocation"})
		}
	}
}

// member reports node membership of a partition.
func (d *decider) member(name string) []bool {
	return d.sc.topo.partNodes(d.s, name, d.nodeIdx).in
}

// partitions of a job: its comma-separated list, or the default.
// The last list is kept for the next job with the same Partition (most
// jobs name the same one); the caller must not change it.
func (d *decider) partitions(j *cluster.Job) []string {
	sc := d.sc
	if sc.partsOK && j.Partition == sc.partsOf {
		return sc.parts
	}
	var parts []string
	if j.Partition == "" {
		if p := d.s.DefaultPartition(); p != nil {
			parts = []string{p.Name}
		}
	} else {
		parts = strings.Split(j.Partition, ",")
	}
	sc.partsOf, sc.parts, sc.partsOK = j.Partition, parts, true
	return parts
}

// timeLimit of a pending job: its own, else its partition's default or
// maximum, else unlimited.
func (d *decider) timeLimit(j *cluster.Job) time.Duration {
	if j.TimeLimit > 0 {
		return j.TimeLimit
	}
	for _, name := range d.partitions(j) {
		if p := d.s.Partition(name); p != nil {
			if p.DefaultTime > 0 {
				return p.DefaultTime
			}
			if p.MaxTime > 0 {
				return p.MaxTime
			}
		}
	}
	return cluster.Unlimited
}

func addDur(t time.Time, d time.Duration) time.Time {
	if d == cluster.Unlimited {
		return time.Time{} // never
	}
	return t.Add(d)
}

// pilotLimit turns a window into a pilot time limit: minus the margin,
// down to whole minutes; cluster.Unlimited stays.
func (d *decider) pilotLimit(window time.Duration) time.Duration {
	if window == cluster.Unlimited {
		return window
	}
	return (window - d.cfg.Margin).Truncate(time.Minute)
}

// capLimit applies a partition cap to a limit, in whole minutes.
func capLimit(limit, maxTime time.Duration) time.Duration {
	if maxTime > 0 && maxTime != cluster.Unlimited && limit > maxTime {
		return maxTime.Truncate(time.Minute)
	}
	return limit
}

// syncRelease makes a pilot end on a SyncRelease boundary: the latest one its
// limit reaches; an unlimited pilot ends on the first boundary at least
// one frame away. 0 when none fits.
func (d *decider) syncRelease(limit time.Duration) time.Duration {
	f := d.cfg.SyncRelease
	if f <= 0 {
		return limit
	}
	d.h.never() // boundaries come with the clock
	if limit == cluster.Unlimited {
		limit = 2 * f
	}
	end := d.now.Add(limit)
	end = end.Add(-time.Duration(end.UnixNano() % int64(f)))
	if l := end.Sub(d.now).Truncate(time.Minute); l > 0 {
		return l
	}
	return 0
}

// runningBase counts the nodes held by a job's running base jobs.
func (d *decider) runningBase(j *ElasticJob) int {
	if len(j.BaseJobIDs) == 0 {
		return 0
	}
	n := 0
	for k := range d.s.Jobs {
		sj := &d.s.Jobs[k]
		if sj.Holds() {
			if bi, ok := d.baseOf[sj.ID]; ok && d.st.Jobs[bi].ID == j.ID {
				n += max(len(sj.Nodes), 1)
			} else if bi, ok := d.baseOf[sj.ArrayJobID]; ok && sj.ArrayJobID != "" && d.st.Jobs[bi].ID == j.ID {
				n += max(len(sj.Nodes), 1)
			}
		}
	}
	return n
}

// candidate is a node a pilot could be submitted to.
type candidate struct {
	i      int
	window time.Duration
	moves  bool // winMoves(i), for the sort
}

// submit sizes and submits pilots, jobs in FIFO order, within the caps.
func (d *decider) submit() {
	pendingNow, total := 0, 0
	for pi := range d.st.Pilots {
		p := &d.st.Pilots[pi]
		if d.gone[pi] {
			continue
		}
		total++
		if p.State == PilotPending {
			pendingNow++
		}
	}
	budget := d.cfg.MaxPendingPilots - pendingNow
	if d.cfg.MaxPilots > 0 {
		budget = min(budget, d.cfg.MaxPilots-total)
	}
	if budget <= 0 {
		return
	}
	part := d.s.Partition(d.win.Partition)

	// Window candidates (Fair, Scavenger): free for a while, not taken by a
	// pending job that starts now, not held by or promised to a pilot.
	sc := d.sc
	cands := sc.cands[:0]
	defer func() { sc.cands = cands[:0] }()
	for i := range d.s.Nodes {
		if d.wAt[i] >= 0 && d.freeFor[i] > 0 && !d.consumed[i] && d.pilotOn[i] < 0 && !d.targeted[i] {
			cands = append(cands, candidate{i, d.freeFor[i], d.winMoves(i)})
		}
	}
	byWindow := func(a, b candidate) int {
		if c := d.cmpWinMoves(b.i, a.i, b.moves, a.moves); c != 0 {
			return c
		}
		return d.names.cmp(a.i, b.i, nil)
	}
	slices.SortFunc(cands, byWindow)
	cands = cands[min(d.unpinned, len(cands)):] // pilots Slurm will place somewhere

	// Thesis candidates: idle now, whatever the claims (the thesis does not
	// see them; its time limit is its own).
	var tcands []candidate
	thesisTake := false
	for _, pl := range d.thesisPlans {
		thesisTake = thesisTake || pl.take
	}
	if thesisTake {
		for i := range d.s.Nodes {
			if d.wAt[i] >= 0 && d.idleNow(i) && part != nil && part.Up && d.pilotOn[i] < 0 && !d.targeted[i] {
				tcands = append(tcands, candidate{i, d.freeFor[i], d.winMoves(i)})
			}
		}
		slices.SortFunc(tcands, byWindow)
		tcands = tcands[min(d.unpinned, len(tcands)):]
	}

	sc.taken, sc.uncovered = reuse(sc.taken, len(d.s.Nodes)), reuse(sc.uncovered, len(d.st.Jobs))
	taken := sc.taken
	d.uncovered = sc.uncovered
	for ji := range d.st.Jobs {
		if budget <= 0 {
			return
		}
		j := &d.st.Jobs[ji]
		if j.TasksPending <= 0 || j.HoldPilots {
			continue
		}
		minTL := d.cfg.ShortestPilot(j.TaskTime)
		heldHere := d.heldNodes(j)
		pending, idle := d.idleSlots(j.ID)
		want := j.TasksPending - len(pending) - len(idle)
		d.uncovered[ji] = max(want, 0) // less what is submitted below
		if j.Mode == Thesis {
			plan := d.thesisPlans[d.poolOf[ji]]
			if !plan.take {
				d.uncovered[ji] = 0 // Algorithm 1 takes nothing now
				continue
			}
			if d.cfg.ThesisHoldEmpty {
				want = len(tcands)
			}
			tl := d.syncRelease(plan.limit)
			if tl < minTL {
				continue
			}
			spent := d.received(ji)
			for _, c := range tcands {
				// A budget shortens Algorithm 2's limit (ending sooner is
				// safe), to a SyncRelease boundary again.
				ctl := tl
				if j.Budgeted {
					ctl = d.syncRelease(withinBudget(plan.limit, j, spent))
				}
				if want <= 0 || budget <= 0 || ctl < minTL {
					break
				}
				if taken[c.i] || heldHere[c.i] {
					continue
				}
				spent += ctl
				taken[c.i] = true
				want--
				budget--
				d.uncovered[ji]--
				d.emit(Action{Kind: SubmitPilot, Cause: CauseHarvest, Job: j.ID, Node: d.s.Nodes[c.i].Name, TimeLimit: ctl, Reason: plan.why})
			}
			continue
		}
		if want <= 0 {
			continue
		}
		var picked []candidate
		for _, c := range cands {
			if len(picked) == min(want, budget) {
				break
			}
			if !taken[c.i] && !heldHere[c.i] && d.limitFits(c.i, minTL) {
				picked = append(picked, c)
			}
		}
		if len(picked) == 0 {
			continue
		}
		// Work cap: the pending tasks shared by every worker the job will
		// have, in whole tasks, plus the slack, in whole minutes up;
		// never under minTL.
		workCap := cluster.Unlimited
		if j.TaskTime > 0 {
			workers := len(picked) + len(pending) + len(idle) + d.runningBase(j)
			for pi := range d.st.Pilots {
				p := &d.st.Pilots[pi]
				if !d.gone[pi] && p.Job == j.ID && p.State == PilotRunning && p.Busy && !p.Retiring {
					workers++
				}
			}
			rounds := (j.TasksPending + workers - 1) / workers
			workCap = max(roundUpMinute(time.Duration(rounds)*j.TaskTime+d.cfg.TaskSlack), minTL)
		}
		spent := d.received(ji)
		for _, c := range picked {
			tl := d.syncRelease(withinBudget(min(d.pilotLimit(c.window), workCap), j, spent))
			if tl < minTL {
				continue
			}
			spent += tl
			taken[c.i] = true
			budget--
			d.uncovered[ji]--
			why := appendDuration(append(appendDuration(append(sc.why[:0], "window "...), c.window), ", work "...), workCap)
			sc.why = why
			d.emit(Action{Kind: SubmitPilot, Cause: CauseHarvest, Job: j.ID, Node: d.s.Nodes[c.i].Name, TimeLimit: tl, Reason: string(why)})
		}
	}
}

// heldNodes is j.HeldNodes as a set of node indices (nil: none).
func (d *decider) heldNodes(j *ElasticJob) map[int]bool {
	var held map[int]bool
	for _, n := range j.HeldNodes {
		if i, ok := d.nodeIdx[n]; ok {
			if held == nil {
				held = map[int]bool{}
			}
			held[i] = true
		}
	}
	return held
}

func roundUpMinute(d time.Duration) time.Duration {
	if r := d % time.Minute; r != 0 {
		return d + time.Minute - r
	}
	return d
}

// idleNow: usable, no holder at all (pilots included), and idle by sinfo.
func (d *decider) idleNow(i int) bool {
	st := d.s.Nodes[i].State
	return (st == cluster.NodeIdle || st == cluster.NodePlanned) && !d.held[i] && d.pilotOn[i] < 0
}
