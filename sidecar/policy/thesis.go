package policy

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/glean-hpc/glean/sidecar/cluster"
)

// The thesis mode: seed 000, Algorithm 1 (scaling) and Algorithm 2
// (maxTime), as published but for two evident slips (requiredNode is
// N_top - I, not I - N_top; a running job's time left is TL_i - RT_i,
// not TL_I - RT_i). The thesis ran one pool of executors for all its
// calibration jobs, serving them first come, first served ("Job 46 waits
// for Job 45 to finish"), so the thesis-mode jobs of one owner
// (ElasticJob.Owner) are one system here, a pool:
//
//	T        nodes of the pilot partition (not needed by the algorithm)
//	I        its nodes idle now: no job at all, pilots included (plus
//	         what this round's earlier pools and earlier rounds released:
//	         pilots in their grace, Pilot.Leaving)
//	R        the pool's running pilots not retiring
//	leftTasks the pool's pending plus running tasks
//	MiniNode Config.MiniNode at leftTasks (Eq. 5.1)
//	J_top    the highest-priority reserving pending job (glean's pending
//	         pilots aside) in a partition that overlaps the pilot one;
//	         pendingJobs are all of those, by priority
//	runningJobs the jobs holding nodes of the pilot partition, pilots
//	         included, with N_i their nodes there and TL_i - RT_i = End - now
//	         (UNLIMITED: never)
//	miniTime Config.MiniTime; the 2 minutes are Config.Margin
//
// Released nodes are the pool's pilots cancelled in the order of 4.3.3
// (closest to their end first, then the newest). Taken nodes are submitted
// for the pool's jobs in FIFO order with TL = maxTime - margin (Case 3) or
// UNLIMITED capped by the partition MaxTime (Case 1: no pending job), on
// idle nodes, whatever their reservations: the thesis could not see them,
// and its pending timeout cleans up what Slurm does not start. A pool
// pilot whose job has no task left for it moves to the pool's next job
// with work (poolMoves, pool.go) rather than leaving, so R does not
// collapse at every job boundary. Pools run one after another, in FIFO
// order of their first job.
func (d *decider) thesis() {
	pools := d.jobPools()
	d.sc.thesisPlans = reuse(d.sc.thesisPlans, len(pools))
	d.thesisPlans = d.sc.thesisPlans
	freed := 0
	for k, pool := range pools {
		if d.st.Jobs[pool[0]].Mode == Thesis {
			d.h.never() // Algorithm 1 reads the clock throughout
			freed += d.thesisPool(&d.thesisPlans[k], pool, freed)
		}
	}
}

// thesisPlan is what Algorithm 1 decided for one pool: take idle nodes,
// with this time limit.
type thesisPlan struct {
	take  bool
	limit time.Duration
	why   string
}

// thesisPool is Algorithm 1 for one pool; freed nodes were released by
// earlier pools this round (they count as idle). It returns the nodes it
// released.
func (d *decider) thesisPool(plan *thesisPlan, pool []int, freed int) int {
	left := 0
	for _, ji := range pool {
		j := &d.st.Jobs[ji]
		left += max(j.TasksPending, 0) + max(j.TasksRunning, 0)
	}
	k := d.poolOf[pool[0]]
	var r []int
	for pi := range d.st.Pilots {
		p := &d.st.Pilots[pi]
		if !d.gone[pi] && p.State == PilotRunning && !p.Retiring && d.poolOfPilot(p) == k {
			r = append(r, pi)
		}
	}
	mini := MiniNode(d.cfg.MiniNode, left)
	part := d.s.Partition(d.win.Partition)
	idle := freed
	for i := range d.s.Nodes {
		if d.wAt[i] >= 0 && d.idleNow(i) {
			idle++
		}
		if pi := d.pilotOn[i]; d.wAt[i] >= 0 && pi >= 0 && d.st.Pilots[pi].Leaving {
			idle++ // released in an earlier round, in its grace
		}
	}
	R := len(r)
	take := func(limit time.Duration, why string) int {
		plan.take = true
		plan.limit = capLimit(limit, part.MaxTime)
		plan.why = fmt.Sprintf("thesis: %s (I=%d R=%d MiniNode=%d)", why, idle, R, mini)
		return 0
	}
	release := func(n int, who, why string) int {
		slices.SortFunc(r, d.cancelOrder)
		n = min(n, len(r))
		for _, pi := range r[:n] {
			p := &d.st.Pilots[pi]
			d.gone[pi] = true
			d.emit(Action{Kind: CancelPilot, Cause: CauseThesis, Job: d.actionJob(pi), Pilot: p.ID, Node: p.Node, Claimant: who, By: d.now,
				Reason: fmt.Sprintf("thesis: %s (I=%d R=%d MiniNode=%d)", why, idle, R, mini)})
		}
		return n
	}

	pending := d.thesisPending()
	if len(pending) == 0 { // Case 1
		return take(cluster.Unlimited, "no pending job, take the idle nodes")
	}
	top := &d.s.Jobs[pending[0]]
	nTop := max(top.NumNodes, 1)
	running := d.thesisRunning()
	maxT := thesisMaxTime(nTop, idle, running)
	if R < mini {
		return take(d.pilotLimit(maxT), fmt.Sprintf("below the floor, maxTime %s", FormatDuration(maxT)))
	}
	if nTop-idle <= R-mini {
		if n := nTop - idle; n > 0 { // n <= 0: it fits already, Slurm starts it
			return release(n, top.ID, fmt.Sprintf("give %d nodes to the top job %s", n, top.ID))
		}
		return 0
	}
	for _, rj := range running {
		if rj.left < d.cfg.MiniTime {
			return 0 // a job ends soon: wait
		}
	}
	for _, k := range pending {
		j := &d.s.Jobs[k]
		if d.timeLimit(j) >= maxT {
			continue
		}
		n := max(j.NumNodes, 1)
		if n <= idle {
			return 0 // Slurm will backfill it: wait
		}
		if n-idle <= R-mini {
			return release(n-idle, j.ID, fmt.Sprintf("give %d nodes to backfill %s", n-idle, j.ID))
		}
	}
	return take(d.pilotLimit(maxT), fmt.Sprintf("no job can be backfilled, maxTime %s", FormatDuration(maxT)))
}

// thesisPending lists the reserving pending jobs in partitions that overlap
// the pilot partition, by priority.
func (d *decider) thesisPending() []int {
	overlap := map[string]bool{}
	var out []int
	for _, k := range d.pend {
		j := &d.s.Jobs[k]
		o, ok := overlap[j.Partition]
		if !ok {
			parts := d.partitions(j)
			for i := range d.s.Nodes {
				if d.wAt[i] >= 0 && d.inAny(i, parts) {
					o = true
					break
				}
			}
			overlap[j.Partition] = o
		}
		if o {
			out = append(out, k)
		}
	}
	return out
}

type thesisJob struct {
	left  time.Duration // TL_i - RT_i; cluster.Unlimited for never
	nodes int           // N_i in the pilot partition
}

// thesisRunning lists the jobs holding nodes of the pilot partition,
// pilots included, by time left (UNLIMITED last).
func (d *decider) thesisRunning() []thesisJob {
	var out []thesisJob
	seen := map[string]bool{}
	leftOf := func(tl time.Duration, start, end time.Time) time.Duration {
		switch {
		case tl == cluster.Unlimited:
			return cluster.Unlimited
		case !end.IsZero():
		case !start.IsZero() && tl > 0:
			end = start.Add(tl)
		default:
			return cluster.Unlimited
		}
		return max(end.Sub(d.now), 0)
	}
	for k := range d.s.Jobs {
		j := &d.s.Jobs[k]
		if !j.Holds() {
			continue
		}
		n := 0
		for _, name := range j.Nodes {
			if i, ok := d.nodeIdx[name]; ok && d.wAt[i] >= 0 {
				n++
			}
		}
		if n == 0 {
			continue
		}
		left := leftOf(j.TimeLimit, j.Start, j.End)
		if pi, ok := d.pilotIdx[j.ID]; ok {
			seen[j.ID] = true
			p := &d.st.Pilots[pi]
			if p.End.IsZero() {
				left = cluster.Unlimited
			} else {
				left = max(p.End.Sub(d.now), 0)
			}
		}
		out = append(out, thesisJob{left, n})
	}
	for pi := range d.st.Pilots {
		p := &d.st.Pilots[pi] // running pilots the snapshot missed
		if p.State != PilotRunning || seen[p.ID] {
			continue
		}
		if i, ok := d.nodeIdx[p.Node]; !ok || d.wAt[i] < 0 {
			continue
		}
		left := cluster.Unlimited
		if !p.End.IsZero() {
			left = max(p.End.Sub(d.now), 0)
		}
		out = append(out, thesisJob{left, 1})
	}
	slices.SortStableFunc(out, func(a, b thesisJob) int { return cmp.Compare(a.left, b.left) })
	return out
}

// thesisMaxTime is Algorithm 2: how long until J_top, needing nTop nodes
// with idle free now, can start as the running jobs end. 0 if it fits now;
// UNLIMITED if the nodes it needs never free.
func thesisMaxTime(nTop, idle int, running []thesisJob) time.Duration {
	required := nTop - idle
	if required <= 0 {
		return 0
	}
	for _, r := range running {
		required -= r.nodes
		if required <= 0 {
			return r.left
		}
	}
	return cluster.Unlimited
}
