package policy

import (
	"fmt"
	"slices"
	"strconv"
	"time"
)

// Pools: the Thesis-mode jobs of one owner (ElasticJob.Owner) are served by
// their pilots first come, first served, as the thesis's one executor pool
// served its calibration jobs ("Job 46 waits for Job 45 to finish"): a
// pilot whose job has no task left for it moves to the pool's next job with
// work (MovePilot) rather than leaving, and a new pilot is submitted only
// for work no pilot of the pool will take. The pool is also Algorithm 1's
// system: one floor (thesis.go). A pilot never moves to another owner's
// job. Owner "": a pool of its own. Fair and scavenger jobs are each a pool
// of their own: moving their pilots gained nothing measurable on the thesis
// lists (fair list 2: 11.8 % either way) and, by changing which nodes
// pilots hold and until when, moved Slurm's plan (list 2, scavenger: a
// higher job's reservation went onto moved pilots' nodes and a regular job
// started 1:19:16 later than when run alone).

// jobPools lists the jobs (indices into st.Jobs) by pool (the thesis jobs
// of one owner; any other job alone); pools in FIFO order of their first
// job, jobs in FIFO order within. d.poolOf maps a job to its pool.
func (d *decider) jobPools() [][]int {
	if d.poolOf != nil {
		return d.pools
	}
	sc := d.sc
	sc.poolOf = reuse(sc.poolOf, len(d.st.Jobs))
	d.poolOf = sc.poolOf
	sc.poolAt = reuseMap(sc.poolAt)
	d.pools = sc.jobPools[:0]
	for ji := range d.st.Jobs {
		j := &d.st.Jobs[ji]
		k := poolKey{j.Owner, j.Mode}
		if p, ok := sc.poolAt[k]; ok && j.Owner != "" && j.Mode == Thesis {
			d.poolOf[ji] = p
			d.pools[p] = append(d.pools[p], ji)
			continue
		}
		sc.poolAt[k] = len(d.pools)
		d.poolOf[ji] = len(d.pools)
		// Each pool's list in an array of its own, kept for the next
		// decision: the one a pool at this place had the last time.
		var list []int
		if n := len(d.pools); n < cap(d.pools) {
			list = d.pools[:n+1][n][:0]
		}
		d.pools = append(d.pools, append(list, ji))
	}
	sc.jobPools = d.pools
	return d.pools
}

// poolKey: the jobs of one owner and mode are one pool (Thesis only).
type poolKey struct {
	owner string
	mode  Mode
}

// poolOfPilot is the pool of the job pilot p serves, or -1 (an orphan).
func (d *decider) poolOfPilot(p *Pilot) int {
	if ji, ok := d.jobIdx[p.Job]; ok {
		d.jobPools()
		return d.poolOf[ji]
	}
	return -1
}

// poolMoves keeps each pool's pilots on its work: each job keeps as many
// of its own pilots as it has pending tasks (idle ones first, then pending
// ones, then busy ones by their task's end: those take its last tasks);
// the others move to the pool's jobs whose pending tasks no pilot will
// take yet, in FIFO order, idle and pending pilots first (they start a
// task at once), then busy ones (after their task); a budgeted job takes
// only pilots its budget still covers (canReceive). A pilot nobody needs
// stays (noWork cancels it if it is idle). Pilots already moved count for
// the job they serve (Pilot.Job). The moves read no clock; with no move
// the decision does not depend on the task ends either.
func (d *decider) poolMoves() {
	for _, pool := range d.jobPools() {
		if len(pool) < 2 {
			continue
		}
		need := make([]int, len(pool))
		var now, later []int // pilots to move: at once, after their task
		for k, ji := range pool {
			j := &d.st.Jobs[ji]
			need[k] = max(j.TasksPending, 0)
			pend, idle := d.idleSlots(j.ID)
			var busy []int
			for pi := range d.st.Pilots {
				if p := &d.st.Pilots[pi]; !d.gone[pi] && !p.Retiring && p.Job == j.ID && p.State == PilotRunning && p.Busy {
					busy = append(busy, pi)
				}
			}
			slices.SortStableFunc(busy, d.freeOrder)
			for _, pi := range append(idle, pend...) {
				if need[k] > 0 {
					need[k]--
				} else {
					now = append(now, pi)
				}
			}
			for _, pi := range busy {
				if need[k] > 0 {
					need[k]--
				} else {
					later = append(later, pi)
				}
			}
		}
		for _, pi := range append(now, later...) {
			p := &d.st.Pilots[pi]
			k, needy := -1, false
			for x := range pool {
				needy = needy || need[x] > 0
				if need[x] > 0 && d.canReceive(pool[x], p) {
					k = x
					break
				}
			}
			if !needy {
				break
			}
			if k < 0 {
				continue // no job with work has the budget for it
			}
			need[k]--
			if c, ok := moveCharge(p); ok {
				d.movedIn(pool[k], c)
			}
			to := d.st.Jobs[pool[k]].ID
			if d.moved == nil {
				d.moved = map[int]Action{}
			}
			d.moved[pi] = Action{Kind: MovePilot, Cause: CausePool, Job: p.Job, Pilot: p.ID, To: to, Node: p.Node,
				Reason: fmt.Sprintf("%s has no task left for it; %s has %d pending", p.Job, to, d.st.Jobs[pool[k]].TasksPending)}
			p.Job = to
			d.setJob(pi)
		}
	}
}

// moveCharge is what a move of p costs the budget of the job it moves to,
// as gleand counts it (spool.PilotJob.Charge of a live pilot): its whole
// time limit. ok is false where that is not known here (a pending pilot's
// limit) or has no end (UNLIMITED).
func moveCharge(p *Pilot) (time.Duration, bool) {
	if p.State != PilotRunning || p.Start.IsZero() || p.End.IsZero() {
		return 0, false
	}
	return p.End.Sub(p.Start), true
}

// canReceive: job ji may take pilot p by a move. A pilot moved to a job
// counts against that job's budget, so a budgeted job takes only a pilot
// whose whole limit fits what is left of it after this round's moves:
// otherwise moves would spend past the budget that submissions keep to.
func (d *decider) canReceive(ji int, p *Pilot) bool {
	j := &d.st.Jobs[ji]
	if !j.Budgeted {
		return true
	}
	c, ok := moveCharge(p)
	return ok && c <= j.BudgetLeft-d.received(ji)
}

// received is the budget this round's moves to job ji took.
func (d *decider) received(ji int) time.Duration {
	if d.movedCharge == nil {
		return 0
	}
	return d.movedCharge[ji]
}

// movedIn notes that a move to job ji took c of its budget.
func (d *decider) movedIn(ji int, c time.Duration) {
	if d.movedCharge == nil {
		d.movedCharge = map[int]time.Duration{}
	}
	d.movedCharge[ji] += c
}

// flushMoves emits the moves of pilots still there and not retired this
// round (Algorithm 1 or give way may have taken one), in pilot order.
func (d *decider) flushMoves() {
	for pi := range d.st.Pilots {
		if a, ok := d.moved[pi]; ok && !d.gone[pi] && !d.st.Pilots[pi].Retiring {
			d.emit(a)
		}
	}
}

// actionJob is the job an action on pilot pi names: the one it was
// submitted for or last moved to, not one it is moving to this round.
func (d *decider) actionJob(pi int) string {
	if a, ok := d.moved[pi]; ok {
		return a.Job
	}
	return d.st.Pilots[pi].Job
}

// fifo serves elastic jobs first come, first served across pools: the
// pending tasks of an earlier job that no pilot will take (after this
// round's submissions) get the nodes of later jobs' pilots, as a pending
// regular job gets them (rule A): the pilots that lose no work first
// (idle, or their task ends within Grace: they retire), then those that
// lose least (cancelled: their attempt is killed). Retiring pilots of later
// jobs already count, for the earliest jobs first. Only nodes whose window
// (as if the pilot were gone) holds the earlier job's shortest pilot
// count. Thesis pilots follow Algorithm 1 only and give nothing (within a
// thesis pool, FIFO is the submissions' order and poolMoves).
func (d *decider) fifo() {
	if len(d.uncovered) == 0 {
		return // submit stopped before it looked at the jobs (MaxPendingPilots)
	}
	cands, retiring := d.sc.fifoCands[:0], d.sc.fifoRetiring[:0]
	defer func() { d.sc.fifoCands, d.sc.fifoRetiring = cands, retiring }()
	for pi := range d.st.Pilots {
		p := &d.st.Pilots[pi]
		if d.gone[pi] || p.State != PilotRunning {
			continue
		}
		if j := d.jobOf(pi); j == nil || j.Mode == Thesis {
			continue
		}
		if i, ok := d.names.get(p.Node); !ok || d.wAt[i] < 0 {
			continue
		}
		if p.Retiring {
			retiring = append(retiring, pi)
		} else {
			cands = append(cands, pi)
		}
	}
	if len(cands)+len(retiring) == 0 {
		return
	}
	d.sc.fifoUsed = reuse(d.sc.fifoUsed, len(d.st.Pilots))
	used := d.sc.fifoUsed
	later := func(pi, ji int) bool { // jobIdx[Job] > ji, 0 for none
		return max(d.sc.pjob[pi], 0) > ji
	}
	for ji := range d.st.Jobs {
		left := d.uncovered[ji]
		if left <= 0 {
			continue
		}
		j := &d.st.Jobs[ji]
		for _, pi := range retiring {
			if left > 0 && !used[pi] && later(pi, ji) {
				used[pi] = true
				left--
			}
		}
		minTL := d.cfg.ShortestPilot(j.TaskTime)
		mine := d.sc.fifoMine[:0]
		for _, pi := range cands {
			if !used[pi] && later(pi, ji) && d.limitFits(d.nodeOf(pi), minTL) {
				mine = append(mine, pi)
			}
		}
		d.sc.fifoMine = mine
		if left <= 0 || len(mine) == 0 {
			continue
		}
		slices.SortStableFunc(mine, d.giveOrder)
		for _, pi := range mine[:min(left, len(mine))] {
			used[pi] = true
			p := &d.st.Pilots[pi]
			a := Action{Kind: RetirePilot, Cause: CauseGiveWay, Job: p.Job, Pilot: p.ID, Node: p.Node, Claimant: j.ID, By: d.now,
				Reason: j.ID + ", earlier, has " + strconv.Itoa(d.uncovered[ji]) + " tasks no pilot takes"}
			if !d.lossless(pi, d.nowPlus(d.cfg.Grace)) {
				a.Kind = CancelPilot
				d.gone[pi] = true
			}
			d.emit(a)
		}
	}
}

// nodeOf is the index of running pilot pi's node, which is in the
// snapshot.
func (d *decider) nodeOf(pi int) int {
	i, _ := d.names.get(d.st.Pilots[pi].Node)
	return i
}

// freeOrder orders running pilots by when they are free of their task:
// idle first, then by TaskEnd, unknown ends last, then by ID.
func (d *decider) freeOrder(a, b int) int {
	pa, pb := &d.st.Pilots[a], &d.st.Pilots[b]
	if pa.Busy != pb.Busy {
		if pa.Busy {
			return 1
		}
		return -1
	}
	ea, eb := pa.TaskEnd, pb.TaskEnd
	if pa.Busy {
		d.h.readTaskEnds() // equal or unknown ends order the pilots too
	}
	switch {
	case !pa.Busy:
	case ea.IsZero() != eb.IsZero(): // unknown ends last
		if ea.IsZero() {
			return 1
		}
		return -1
	case !ea.Equal(eb):
		return ea.Compare(eb)
	}
	return naturalCompare(pa.ID, pb.ID)
}
