package sim

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/glean-hpc/glean/sidecar/workload"
)

// SlurmParams are the settings of the SlurmLike policy, named after
// slurm.conf. A zero field takes Slurm's default, except KillWait.
type SlurmParams struct {
	BFInterval    time.Duration // bf_interval: time between backfill passes; 30 s
	BFResolution  time.Duration // bf_resolution: reservations start and end on multiples of it; 60 s
	BFWindow      time.Duration // bf_window: no reservation starts later than this ahead; 1 day
	BFMaxJobTest  int           // bf_max_job_test: pending jobs one pass tests; 500
	SchedInterval time.Duration // sched_interval: the main scheduler's full runs; 60 s
	// BatchSchedDelay (batch_sched_delay) is how long after its last run
	// the main scheduler may wait before it handles a submission or a job
	// end; 3 s.
	BatchSchedDelay time.Duration
	LimitCheck      time.Duration // slurmctld's PERIODIC_TIMEOUT: how often limits are enforced; 30 s
	// KillWait is how long a job killed at its limit keeps its nodes:
	// slurm.conf's KillWait for jobs that ignore SIGTERM, 0 for jobs that
	// exit on it (like `sleep`). 0 by default.
	KillWait time.Duration
}

// yearLimit is what Slurm plans with for a job without a limit in a
// partition without MaxTime (backfill.c: YEAR_MINUTES).
const yearLimit = 365 * 24 * time.Hour

// loopTick is the period of slurmctld's background loop, which runs the
// main scheduler (controller.c: _slurmctld_background).
const loopTick = time.Second

func (p SlurmParams) resolve() (SlurmParams, error) {
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	def(&p.BFInterval, 30*time.Second)
	def(&p.BFResolution, time.Minute)
	def(&p.BFWindow, 24*time.Hour)
	def(&p.SchedInterval, time.Minute)
	def(&p.BatchSchedDelay, 3*time.Second)
	def(&p.LimitCheck, 30*time.Second)
	if p.BFMaxJobTest == 0 {
		p.BFMaxJobTest = 500
	}
	if p.BFInterval < 0 || p.BFResolution < 0 || p.BFWindow < 0 || p.SchedInterval < 0 || p.BatchSchedDelay < 0 || p.LimitCheck < 0 || p.KillWait < 0 || p.BFMaxJobTest < 0 {
		return p, fmt.Errorf("sim: negative Slurm setting in %+v", p)
	}
	return p, nil
}

// slot is a stretch of the backfill plan (Slurm's node_space): from t to
// the next slot's t (the last one to the window's end), the nodes in
// avail are not reserved for any pending job. Running jobs are not in the
// plan; like select/linear's will-run test, willRun ends them one by one.
type slot struct {
	t     time.Duration
	avail bitset
	// ended is how many running jobs a try that moves on at t counts
	// (endBy), -1 until a try needs it: the tests of a pass look at the
	// same boundaries again and again.
	ended int
}

// slurmLike is Slurm 22.05's main scheduler and sched/backfill on a
// select/linear machine: whole nodes, one partition, priority = arrival
// order. See docs/simulator.md for what it leaves out.
type slurmLike struct {
	p SlurmParams
	// The main scheduler runs at a tick of slurmctld's loop when
	// sched_interval has passed since its last full run, or when a job was
	// submitted or ended (queue_job_scheduler) and batch_sched_delay has
	// passed since its last run.
	nextFull, lastMain time.Duration
	asked              bool
	// The backfill scheduler passes at a tick of its own one-second loop
	// once bf_interval has passed since its last pass, if jobs or nodes
	// changed since the second that pass ended in (backfill_agent: after a
	// pass it sleeps bf_interval, then checks every second for _more_work,
	// which compares whole seconds: last_job_update or last_node_update >=
	// last_backfill_time). So its period is bf_interval while work keeps
	// coming, and after a quiet spell the next pass comes at the first tick
	// after a change, not on a grid of bf_interval.
	//
	// A pass that leaves idle nodes planned for pending jobs marks them
	// (NODE_STATE_PLANNED), and the next pass clears the marks before it
	// sets new ones; either changes the nodes within the pass's second,
	// which is work for the pass after (marks). So while jobs wait for
	// nodes that stand idle, passes come every bf_interval. A pass that
	// only marks work (no job or node changed since the last one) would
	// plan as the last did: it keeps that plan and only moves the clock of
	// the passes on.
	updated     time.Duration // the last change of jobs or nodes
	pending     bool          // such a change no pass has seen yet
	marks       bool          // the last pass set or cleared planned marks
	lastBF      time.Duration
	bfRan       bool
	plannedIdle bool // the last plan holds idle nodes (marked planned)

	// The last pass's plan, as squeue --start and sinfo show it: expected
	// starts and nodes of the pending jobs it tested, in queue order
	// (job.plan points into it), and the union of the nodes it reserved.
	// The entries' nodes are in planSpans.
	plan      []planEntry
	planSpans []span
	planned   bitset
	// The plan before the last pass, to tell whether the pass changed
	// what a snapshot shows.
	prev        []planEntry
	prevSpans   []span
	prevPlanned bitset

	slots     []slot
	windowEnd time.Duration
	spare     []bitset // slot bitsets for reuse
	all       bitset
	avail     bitset // nodes a job may use over its tested window
	cand      bitset // of those, free at the will-run time
	pick      []span // the nodes the last willRun chose
	pickSet   bitset
	over      bitset // nodes free of reservations over a reservation's window

	// freed[k] (words k*w..k*w+w-1, w the bitset's length) is the idle
	// nodes plus those of running[0..k]: what is free once the first k+1
	// running jobs have ended. Rows are added as willRun needs them and
	// dropped (nFreed = 0) when idle or running changed (moved: a start,
	// an end or a shrink), at the next pass or, after a start in a pass,
	// at once (which also drops the stretches' ended). A pass after only
	// submissions uses the rows of the last.
	freed  []uint64
	nFreed int
	moved  bool
}

func newSlurmLike(size int, p SlurmParams) *slurmLike {
	b := &slurmLike{
		p:           p,
		planned:     newBitset(size),
		prevPlanned: newBitset(size),
		all:         newBitset(size),
		avail:       newBitset(size),
		cand:        newBitset(size),
		pickSet:     newBitset(size),
		over:        newBitset(size),
	}
	b.all.setRange(0, size)
	return b
}

func (b *slurmLike) arrived(s *State, _ *job) { b.touch(s.now); b.asked = true }
func (b *slurmLike) ended(s *State, _ *job)   { b.touch(s.now); b.asked, b.moved = true, true }

// touch notes a change of jobs or nodes at t: work for the backfill
// scheduler.
func (b *slurmLike) touch(t time.Duration) { b.updated, b.pending = t, true }

// changed reports whether jobs or nodes changed at or after the second
// the last pass ran in; moreWork (Slurm's _more_work) also counts the
// last pass's planned marks.
func (b *slurmLike) changed() bool  { return b.pending && (!b.bfRan || b.updated >= b.lastBF) }
func (b *slurmLike) moreWork() bool { return b.marks || b.changed() }

// pass runs the main scheduler and the backfill scheduler when they are
// due. Neither runs at the instant of an event: a job submitted or freed
// starts at the next tick of one of them.
func (b *slurmLike) pass(s *State) {
	now := s.now
	if now%loopTick == 0 {
		full := now >= b.nextFull
		if full || b.asked && now >= b.lastMain+b.p.BatchSchedDelay {
			if full {
				b.nextFull = now + b.p.SchedInterval
			}
			b.asked, b.lastMain = false, now
			startHead(s) // a start touches the plan (State.startOn)
		}
	}
	if now%loopTick == 0 && b.moreWork() && (!b.bfRan || now >= b.lastBF+b.p.BFInterval) {
		real := b.changed()
		b.bfRan, b.lastBF, b.pending = true, now, false
		if real {
			b.backfill(s)
		} else {
			b.marks = b.plannedIdle // the same marks cleared and set again
		}
	}
	if b.asked {
		s.wake(ceilTo(max(now, b.lastMain+b.p.BatchSchedDelay), loopTick))
	}
	if b.moreWork() {
		next := ceilTo(now, loopTick)
		if b.bfRan {
			next = max(next, ceilTo(b.lastBF+b.p.BFInterval, loopTick))
		}
		s.wake(next)
	}
	for _, j := range s.queue {
		if !j.began {
			s.wake(ceilTo(max(b.nextFull, now), loopTick))
			break
		}
	}
}

// backfill is one pass of sched/backfill (_attempt_backfill in
// backfill.c): it walks the pending jobs in priority order and, for each,
// finds the earliest time at which enough nodes are free of running jobs
// (by their time limits) and of the reservations made so far in this pass;
// a job that can start now starts, the others reserve their nodes.
func (b *slurmLike) backfill(s *State) {
	b.prev, b.plan = b.plan, b.prev[:0]
	b.prevSpans, b.planSpans = b.planSpans, b.prevSpans[:0]
	for _, e := range b.prev {
		e.j.plan = 0
	}
	copy(b.prevPlanned, b.planned)
	clear(b.planned)
	b.marks = b.plannedIdle // clearing the last pass's marks: work for the next
	defer func() {
		if !b.samePlan() {
			s.version++ // a start in the pass counts itself
		}
	}()
	b.resetPlan(s.now)
	if b.moved {
		b.nFreed, b.moved = 0, false
	}
	tested := 0
	for _, j := range s.queue {
		if j.began {
			continue
		}
		if tested == b.p.BFMaxJobTest {
			break
		}
		tested++
		b.test(s, j) // a start touches the plan (State.startOn)
	}
	b.plannedIdle = false
	for w := range b.planned {
		if b.planned[w]&s.idle[w] != 0 {
			b.plannedIdle, b.marks = true, true
			break
		}
	}
}

// limit is how long the plan holds j's nodes.
func (b *slurmLike) limit(s *State, j *job) time.Duration {
	if j.est != workload.Unlimited {
		return j.est
	}
	if s.part.maxTime > 0 {
		return s.part.maxTime
	}
	return yearLimit
}

// test plans or starts one pending job and reports whether it started. It
// follows backfill.c's TRY_LATER loop: try from startRes; if the job cannot
// start by the end of the plan's first stretch after startRes, try again
// from there.
func (b *slurmLike) test(s *State, j *job) bool {
	now, res := s.now, b.p.BFResolution
	lim := b.limit(s, j)
	startRes := now
	// from is the stretch that holds startRes. Tries only move later and
	// the plan stays as it is until the test ends, so each try finds its
	// first stretch from the last one's.
	from := 0
	// Each try starts later, at a plan boundary, a running job's end or a
	// bf_resolution step: the bound is only a guard.
	for range 2*(len(b.slots)+len(s.running)) + 4 {
		// A start after by is tried again from by, at stretch next (if
		// there is a next try: next > 0).
		end := addSat(startRes, lim)
		next, rest := b.window(from, startRes, end)
		by, m := time.Duration(math.MaxInt64), len(s.running)
		if next > 0 {
			sl := &b.slots[next]
			if sl.ended < 0 {
				sl.ended = b.endBy(s, sl.t)
			}
			by, m = sl.t, sl.ended
			// Most tries that move on already fail on the stretches before
			// next: skip the rest of the window.
			if b.tooFew(s, j.nodes, m) {
				startRes, from = by, next
				continue
			}
		}
		past := b.windowRest(rest, end)
		t, ok := b.willRun(s, j.nodes, m)
		if !ok {
			if next == 0 {
				return false
			}
			startRes, from = by, next
			continue
		}
		t = max(t, startRes)
		if t <= now {
			b.pickNodes(s, j.nodes)
			s.startOn(j, slices.Clone(b.pick))
			b.nFreed, b.moved = 0, false
			for i := range b.slots {
				b.slots[i].ended = -1
			}
			return true
		}
		if next > 0 && t > by { // only where willRun could not cut at by
			startRes, from = by, next
			continue
		}
		if t == math.MaxInt64 {
			return false // behind an unlimited job: no start time at all
		}
		if t > now+b.p.BFWindow {
			b.addPlan(j, t, nil) // shown, but nothing is reserved
			return false
		}
		st, en := floorTo(t, res), floorTo(addSat(t, lim), res)
		// Stretch from begins on a multiple of res, at or before startRes
		// <= t: at or before st.
		at := b.slotAt(from, st)
		// The nodes best fit picks from b.cand must be free of reservations
		// over [st, en) too (backfill.c's _test_resv_overlap): the will-run
		// test looked at the reservations around the tested start, not
		// around the job's own. The candidates are free over the stretches
		// of the tested window, before past: only those after it can
		// overlap. Most overlaps are certain before the pick: too few
		// candidates are free there.
		some := b.unreserved(max(at, past), st, en)
		overlap := some && b.cand.andCount(b.over) < j.nodes
		if !overlap {
			b.pickNodes(s, j.nodes)
			overlap = some && !b.pickSet.subsetOf(b.over)
		}
		if overlap {
			if startRes == t {
				t += res
			}
			startRes = t
			from = b.slotAt(from, startRes)
			continue
		}
		b.reserve(at, st, en)
		n := len(b.planSpans)
		b.planSpans = append(b.planSpans, b.pick...)
		b.addPlan(j, t, b.planSpans[n:len(b.planSpans):len(b.planSpans)])
		b.planned.or(b.pickSet)
		return false
	}
	return false
}

// planEntry is what a pass planned for one pending job.
type planEntry struct {
	j     *job
	start time.Duration
	nodes []span // nil if it reserved none
}

func (b *slurmLike) addPlan(j *job, start time.Duration, nodes []span) {
	b.plan = append(b.plan, planEntry{j, start, nodes})
	j.plan = len(b.plan)
}

// planOf is the last pass's plan for j, if it made one.
func (b *slurmLike) planOf(j *job) (planEntry, bool) {
	if j.plan == 0 {
		return planEntry{}, false
	}
	return b.plan[j.plan-1], true
}

// resetPlan empties the plan: one stretch from now to the window's end.
func (b *slurmLike) resetPlan(now time.Duration) {
	for _, sl := range b.slots {
		b.spare = append(b.spare, sl.avail)
	}
	res := b.p.BFResolution
	b.windowEnd = floorTo(now+b.p.BFWindow, res)
	b.slots = append(b.slots[:0], slot{t: floorTo(now, res), avail: b.newSet(b.all), ended: -1})
}

func (b *slurmLike) newSet(from bitset) bitset {
	var x bitset
	if n := len(b.spare); n > 0 {
		x, b.spare = b.spare[n-1], b.spare[:n-1]
	} else {
		x = make(bitset, len(from))
	}
	x.copyFrom(from)
	return x
}

func (b *slurmLike) slotEnd(i int) time.Duration {
	if i+1 < len(b.slots) {
		return b.slots[i+1].t
	}
	return b.windowEnd
}

// window sets b.avail to the nodes free of reservations over [start, end]
// (a reservation starting at end counts, as in backfill.c), looking from
// stretch from, which holds start. It returns the stretch at whose start
// the next try begins if the job cannot start by the end of the first
// stretch, 0 if none. Like backfill.c it skips a stretch boundary after
// which no node comes free.
//
// It stops at that boundary: b.avail then holds only the stretches before
// rest, and windowRest(rest, end) adds the others. A try that cannot
// start with those nodes (tooFew) moves on without them.
func (b *slurmLike) window(from int, start, end time.Duration) (next, rest int) {
	// Locals, not fields: the stores into avail would make the compiler
	// load b.avail and b.slots again for every stretch.
	avail, slots := b.avail, b.slots
	if b.slotEnd(from) <= start {
		avail.copyFrom(b.all)
		return 0, len(slots) // start lies at or past the window's end
	}
	// Stretch from holds start: avail begins as its nodes. A later stretch
	// within [start, end] joins avail once the boundary before it proved
	// that no node comes free there; the first one after end only tells
	// whether the next try begins after it. The last stretch is left to
	// windowRest.
	avail.copyFrom(slots[from].avail)
	i := from
	for i+1 < len(slots) {
		if !slots[i+1].avail.subsetOf(avail) {
			return i + 1, i + 1 // the first boundary after which a node comes free
		}
		i++
		if i+1 == len(slots) {
			break
		}
		sl := &slots[i]
		if sl.t > end {
			if !slots[i+1].avail.subsetOfBoth(avail, sl.avail) {
				return i + 1, i
			}
			return 0, i
		}
		avail.and(sl.avail)
	}
	return 0, i
}

// windowRest adds to b.avail the stretches from rest on that begin by end.
// It returns the first stretch after them: b.avail is then the nodes free
// over every stretch from window's from to there (or, if start lay past
// the plan's end, all nodes, and there is no stretch to reserve).
func (b *slurmLike) windowRest(rest int, end time.Duration) (past int) {
	avail, slots := b.avail, b.slots
	i := rest
	for ; i < len(slots) && slots[i].t <= end; i++ {
		avail.and(slots[i].avail)
	}
	return i
}

// endBy is how many running jobs willRun counts for a try that moves on
// if the job cannot start by `by`: those that end by then. (It only cuts
// at by a second or more from now: before that, the jobs past their end
// need not be the first of s.running.)
func (b *slurmLike) endBy(s *State, by time.Duration) int {
	m := len(s.running)
	if by >= s.now+time.Second {
		lo, hi := 0, m // the first to end after by
		for lo < hi {
			if mid := int(uint(lo+hi) >> 1); s.running[mid].estEnd <= by {
				lo = mid + 1
			} else {
				hi = mid
			}
		}
		m = lo
	}
	return m
}

// tooFew reports whether b.avail holds fewer than n nodes that are idle or
// freed by the first m running jobs, where willRun would know it. It may
// report false when the job cannot run: only the rows of b.freed built so
// far are looked at.
func (b *slurmLike) tooFew(s *State, n, m int) bool {
	if m == 0 {
		return b.avail.andCount(s.idle) < n
	}
	w := len(b.avail)
	return m <= b.nFreed && b.avail.andCount(b.freed[(m-1)*w:]) < n
}

// willRun is select/linear's will-run test on b.avail: the job starts now
// if enough of those nodes are idle, else when enough running jobs have
// ended, taken by their planned ends (a job past its end but not yet
// killed ends a second from now). It leaves the nodes free by then in
// b.cand, for pickNodes. It counts only the first m running jobs (endBy)
// and reports false if the job cannot start by the last one's end.
func (b *slurmLike) willRun(s *State, n, m int) (time.Duration, bool) {
	avail := b.avail
	// On a busy machine most jobs wait: the idle count tells without a
	// look at the nodes.
	if s.free >= n && avail.andCount(s.idle) >= n {
		b.cand.setAnd(s.idle, avail)
		return s.now, true
	}
	// The count of freed nodes in avail grows with k: find the first k < m
	// at which it reaches n, first at the rows already built, then
	// building rows one by one.
	w := len(avail)
	fits := func(k int) bool { return avail.andCount(b.freed[k*w:]) >= n }
	k := -1
	if built := min(b.nFreed, m); built > 0 && fits(built-1) {
		lo, hi := 0, built-1 // fits(hi)
		for lo < hi {
			if mid := int(uint(lo+hi) >> 1); fits(mid) {
				hi = mid
			} else {
				lo = mid + 1
			}
		}
		k = lo
	} else {
		for b.nFreed < m {
			b.addFreed(s)
			if fits(b.nFreed - 1) {
				k = b.nFreed - 1
				break
			}
		}
	}
	if k < 0 {
		return 0, false
	}
	b.cand.setAnd(b.freed[k*w:], avail)
	t := s.running[k].estEnd
	if t <= s.now {
		t = s.now + time.Second
	}
	return t, true
}

// pickNodes chooses n of the nodes willRun left in b.cand, into b.pick and
// b.pickSet. Only a start or a reservation needs them: on KTH-SP2 half
// the tries that find a time move on to a later start instead.
func (b *slurmLike) pickNodes(s *State, n int) {
	if b.cand.count() == n {
		// Best fit takes every run whole: the nodes are the candidates.
		b.pick = b.cand.runs(b.pick[:0])
		b.pickSet.copyFrom(b.cand)
		return
	}
	var ok bool
	s.runs, b.pick, ok = bestFit(b.cand, n, s.runs, b.pick[:0])
	if !ok {
		panic("sim: will-run count out of step with its nodes")
	}
	sortSpans(b.pick)
	clear(b.pickSet)
	for _, sp := range b.pick {
		b.pickSet.setRange(int(sp.first), int(sp.n))
	}
}

// addFreed builds the next row of b.freed.
func (b *slurmLike) addFreed(s *State) {
	w, k := len(b.cand), b.nFreed
	if len(b.freed) < (k+1)*w {
		b.freed = append(b.freed, make([]uint64, (k+1)*w-len(b.freed))...)
	}
	row := bitset(b.freed[k*w : k*w+w])
	if k == 0 {
		row.copyFrom(s.idle)
	} else {
		row.copyFrom(b.freed[(k-1)*w : k*w])
	}
	for _, sp := range s.running[k].alloc {
		row.setRange(int(sp.first), int(sp.n))
	}
	b.nFreed++
}

// unreserved sets b.over to the nodes free of reservations over the
// stretches from `from` on that overlap [st, en), and reports whether
// there are some (most reservations end within the tested window).
func (b *slurmLike) unreserved(from int, st, en time.Duration) (some bool) {
	slots, over := b.slots, b.over
	for i := from; i < len(slots) && slots[i].t < en; i++ {
		if b.slotEnd(i) <= st {
			continue
		}
		if some {
			over.and(slots[i].avail)
		} else {
			over.copyFrom(slots[i].avail)
			some = true
		}
	}
	return some
}

// reserve takes the picked nodes out of the plan over [st, en), clipped to
// the window. Stretch at holds st.
func (b *slurmLike) reserve(at int, st, en time.Duration) {
	en = min(en, b.windowEnd)
	if st >= en {
		return
	}
	i := b.split(at, st)
	k := len(b.slots)
	if en < b.windowEnd {
		k = b.split(i, en)
	}
	for _, sl := range b.slots[i:k] {
		sl.avail.andNot(b.pickSet)
	}
}

// split makes a stretch begin at t (within the plan) and returns its
// index. Stretch from begins no later than t.
func (b *slurmLike) split(from int, t time.Duration) int {
	i := b.slotAt(from, t)
	if b.slots[i].t == t {
		return i
	}
	// By hand: slices.Insert's general path costs a third more here.
	avail := b.newSet(b.slots[i].avail)
	b.slots = append(b.slots, slot{})
	copy(b.slots[i+2:], b.slots[i+1:])
	b.slots[i+1] = slot{t: t, avail: avail, ended: -1}
	return i + 1
}

// slotAt returns the index of the stretch that holds t, searching on from
// stretch from, which begins no later than t. What a test looks for lies
// mostly near where it looked last, sometimes far into a long plan: it
// gallops, then bisects.
func (b *slurmLike) slotAt(from int, t time.Duration) int {
	lo, hi := from, from+1
	for step := 1; hi < len(b.slots) && b.slots[hi].t <= t; step *= 2 {
		lo, hi = hi, hi+step
	}
	hi = min(hi, len(b.slots)) // b.slots[lo].t <= t < b.slots[hi].t
	for hi-lo > 1 {
		if mid := int(uint(lo+hi) >> 1); b.slots[mid].t <= t {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo
}

// samePlan reports whether the last pass planned what the one before did:
// the same expected starts and nodes, the same planned nodes. Then a
// snapshot shows nothing new. Both plans are in queue order, which jobs
// only leave: the same plan has the same entries in the same places.
func (b *slurmLike) samePlan() bool {
	if len(b.plan) != len(b.prev) || !slices.Equal(b.planned, b.prevPlanned) {
		return false
	}
	for i, e := range b.plan {
		p := b.prev[i]
		if e.j != p.j || e.start != p.start || (e.nodes == nil) != (p.nodes == nil) || !slices.Equal(e.nodes, p.nodes) {
			return false
		}
	}
	return true
}
