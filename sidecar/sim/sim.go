// Package sim replays a workload through a discrete-event model of a
// batch scheduler on a homogeneous machine of N nodes, allocated whole
// (like Slurm's select/linear). The unit is whatever Job.Nodes counts: for
// SWF traces, processors.
//
// The queue is FIFO by submit time, ties by job ID. At each instant the
// engine first ends the jobs that end then, then admits the jobs submitted
// then, then runs one scheduling pass of the configured policy.
//
// Policies are small schedulers behind one interface that see the machine
// through State and may ask for a pass at a later time (wake). SlurmLike is
// one of them with periodic wake-ups (docs/simulator.md describes the
// model). The engine tracks which nodes each job holds, so that State can
// render itself as the cluster snapshot the daemon's policy reads
// (State.Snapshot); elastic pilots under the real policy are meant to
// attach at Config.OnPass.
package sim

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/glean-hpc/glean/sidecar/workload"
)

// Policy is the scheduling algorithm.
type Policy int

const (
	// FCFS starts jobs in queue order and stops at the first that does not fit.
	FCFS Policy = iota
	// EASY reserves nodes for the queue's head at its shadow time (when
	// enough running jobs will have ended, by their estimates) and lets later
	// jobs jump ahead if they end by then or use only the extra nodes the
	// head will not need.
	EASY
	// Conservative gives every queued job a reservation, in queue order; a
	// job may jump ahead only if it delays no reservation. Reservations move
	// earlier (in queue order) when a job ends before its estimate.
	Conservative
	// SlurmLike is Slurm 22.05's main scheduler (FCFS on slurmctld's
	// one-second loop, every sched_interval and soon after submissions and
	// job ends) plus sched/backfill (a pass every bf_interval that reserves
	// nodes for the pending jobs it tests, in priority order, and starts
	// those that delay no reservation), with limits in whole minutes
	// enforced on a periodic check. Config.Slurm holds its settings.
	SlurmLike
)

func (p Policy) String() string {
	switch p {
	case FCFS:
		return "fcfs"
	case EASY:
		return "easy"
	case Conservative:
		return "conservative"
	case SlurmLike:
		return "slurm"
	}
	return "invalid"
}

// Policies are the schedulers, in the order ParsePolicy lists them.
var Policies = []Policy{SlurmLike, EASY, Conservative, FCFS}

// ParsePolicy parses slurm, easy, conservative or fcfs.
func ParsePolicy(s string) (Policy, error) {
	for _, p := range Policies {
		if strings.EqualFold(s, p.String()) {
			return p, nil
		}
	}
	return 0, fmt.Errorf("sim: unknown scheduler %q (want slurm, easy, conservative or fcfs)", s)
}

// Estimates says what the scheduler plans with and what a job occupies.
type Estimates int

const (
	// KillAtLimit is Slurm's way: the scheduler plans with the job's limit
	// (Config.DefaultLimit when it gave none) and kills the job at it.
	KillAtLimit Estimates = iota
	// ArchiveEstimates is the Parallel Workloads Archive convention for
	// replaying logs: the estimate is max(limit, run) if a limit is given,
	// else the run time, and no job is killed.
	ArchiveEstimates
)

// Config is one simulation's setup.
type Config struct {
	Nodes     int // machine size; 0 takes the workload's
	Policy    Policy
	Estimates Estimates
	// DefaultLimit is the limit of jobs that gave none, like a partition's
	// DefaultTime; 0 means Unlimited. Used with KillAtLimit only.
	DefaultLimit time.Duration
	// MaxTime is the partition's MaxTime: it caps every limit (Slurm
	// would leave a job asking for more pending; here it runs with
	// MaxTime). 0 means UNLIMITED.
	MaxTime time.Duration
	// Slurm holds the SlurmLike policy's settings.
	Slurm SlurmParams
	// OnPass, if set, is called after every scheduling pass. It is the seam
	// for what will drive the machine from outside (elastic pilots under the
	// real policy); it must not keep s.
	OnPass func(now time.Duration, s *State)
}

// JobResult is what happened to one job.
type JobResult struct {
	ID     int
	Submit time.Duration
	Start  time.Duration
	End    time.Duration
	Nodes  int
	Killed bool // ran into its limit
	alloc  []span
	// Released are nodes the job gave back before End (a shrunk base job);
	// Nodes and alloc are what it started with.
	Released []Release
}

// NodeSeconds is the node time the job held, in node-seconds: Nodes x Run,
// less what it gave back early. (float64: as a time.Duration, Nodes x Run
// overflows at 2.56 million node-hours.)
func (r *JobResult) NodeSeconds() float64 {
	t := r.Run().Seconds() * float64(r.Nodes)
	for _, x := range r.Released {
		t -= (r.End - x.At).Seconds()
	}
	return t
}

// NodeEnd is when the job gave node n back: its release, or End.
func (r *JobResult) NodeEnd(n int) time.Duration {
	for _, x := range r.Released {
		if x.Node == n {
			return x.At
		}
	}
	return r.End
}

// Hosts are the nodes the job ran on as a Slurm host list, "c[1-4,9]".
func (r *JobResult) Hosts() string { return hostList(r.alloc) }

// Wait is the time from submission to start.
func (r *JobResult) Wait() time.Duration { return r.Start - r.Submit }

// Run is the time the job held its nodes.
func (r *JobResult) Run() time.Duration { return r.End - r.Start }

// BSLDThreshold bounds the slowdown of very short jobs.
const BSLDThreshold = 10 * time.Second

// BoundedSlowdown is max(1, (wait + run) / max(run, BSLDThreshold)).
func (r *JobResult) BoundedSlowdown() float64 {
	run := r.Run()
	return max(1, float64(r.Wait()+run)/float64(max(run, BSLDThreshold)))
}

// Result is one simulation's outcome.
type Result struct {
	Jobs     []JobResult // in the workload's order
	MeanWait time.Duration
	MeanBSLD float64
	// Utilization is sum(run x nodes) / (nodes x (last end - first submit)).
	Utilization float64
	Killed      int
	Events      int // job arrivals, ends and scheduler wake-ups processed
	Passes      int // scheduling passes
}

// Run simulates w under cfg. It fails only on a job the machine cannot run
// or a workload too long to simulate.
func Run(w *workload.Workload, cfg Config) (*Result, error) {
	size := cfg.Nodes
	if size == 0 {
		size = w.Nodes
	}
	if size <= 0 {
		return nil, fmt.Errorf("sim: machine of %d nodes", size)
	}
	if cfg.MaxTime < 0 || cfg.DefaultLimit < 0 {
		return nil, fmt.Errorf("sim: negative MaxTime %v or DefaultLimit %v", cfg.MaxTime, cfg.DefaultLimit)
	}
	e := &engine{st: State{size: size, free: size, idle: newBitset(size), policy: cfg.Policy}}
	e.st.idle.setRange(0, size)
	e.st.part = &partition{maxTime: cfg.MaxTime, defaultTime: cfg.DefaultLimit}
	switch cfg.Policy {
	case FCFS:
		e.sched = fcfs{}
	case EASY:
		e.sched = easy{}
	case Conservative:
		e.sched = newConservative(size)
	case SlurmLike:
		p, err := cfg.Slurm.resolve()
		if err != nil {
			return nil, err
		}
		bf := newSlurmLike(size, p)
		e.sched, e.st.bf = bf, bf
		e.st.limitCheck, e.st.killWait = p.LimitCheck, p.KillWait
	default:
		return nil, fmt.Errorf("sim: unknown policy %d", cfg.Policy)
	}
	if err := e.load(w, size, cfg); err != nil {
		return nil, err
	}
	// Most allocations are one or two runs of nodes: one backing array
	// for all of them, grown if needed.
	e.st.spans = make([]span, 0, len(e.jobs)+len(e.jobs)/2)
	e.onPass = cfg.OnPass
	e.run()
	return e.result(), nil
}

// load turns workload jobs into engine jobs sorted by (submit, ID).
func (e *engine) load(w *workload.Workload, size int, cfg Config) error {
	e.jobs = make([]job, len(w.Jobs))
	var last, work float64 // last submit and all run times, in seconds: they bound the clock
	for i := range w.Jobs {
		wj := &w.Jobs[i]
		if wj.Nodes < 1 || wj.Nodes > size || wj.Submit < 0 || wj.Run < 0 || wj.Limit < 0 {
			return fmt.Errorf("sim: %s line %d: job %d (%d nodes, submit %v, run %v, limit %v) cannot run on %d nodes",
				w.Name, wj.Line, wj.ID, wj.Nodes, wj.Submit, wj.Run, wj.Limit, size)
		}
		j := &e.jobs[i]
		j.id, j.submit, j.nodes, j.run, j.src = wj.ID, wj.Submit, wj.Nodes, wj.Run, wj
		switch cfg.Estimates {
		case KillAtLimit:
			j.est = wj.Limit
			if j.est == 0 {
				j.est = cfg.DefaultLimit
			}
			if j.est == 0 {
				j.est = workload.Unlimited
			}
		case ArchiveEstimates:
			j.est = j.run
			if wj.Limit > 0 {
				j.est = max(wj.Limit, j.run)
			}
		default:
			return fmt.Errorf("sim: unknown estimates mode %d", cfg.Estimates)
		}
		if cfg.Policy == SlurmLike && j.est != workload.Unlimited {
			// sbatch keeps limits in whole minutes, rounding up.
			j.est = ceilTo(j.est, time.Minute)
		}
		if cfg.MaxTime > 0 {
			j.est = min(j.est, cfg.MaxTime)
		}
		// SlurmLike kills at its periodic limit check (State.startOn);
		// the others at the limit itself.
		if cfg.Estimates == KillAtLimit && cfg.Policy != SlurmLike && j.run > j.est {
			j.run, j.killed = j.est, true
		}
		last = max(last, j.submit.Seconds())
		work += j.run.Seconds()
	}
	// The policies keep the machine busy while jobs wait, so the clock stays
	// about below last + work. Leave headroom for adding estimates to it.
	if last+work > float64(math.MaxInt64/4)/1e9 {
		return fmt.Errorf("sim: %s spans more than %v", w.Name, time.Duration(math.MaxInt64/4))
	}
	e.order = make([]*job, len(e.jobs))
	for i := range e.jobs {
		e.order[i] = &e.jobs[i]
	}
	byArrival := func(a, b *job) int {
		return cmp.Or(cmp.Compare(a.submit, b.submit), cmp.Compare(a.id, b.id))
	}
	if !slices.IsSortedFunc(e.order, byArrival) {
		slices.SortStableFunc(e.order, byArrival)
	}
	for i, j := range e.order {
		j.seq = i
	}
	return nil
}

func (e *engine) result() *Result {
	r := &Result{Jobs: make([]JobResult, len(e.jobs)), Events: e.events, Passes: e.passes}
	if len(e.jobs) == 0 {
		return r
	}
	var wait, bsld, work float64
	first, last := e.jobs[0].submit, e.jobs[0].end
	for i := range e.jobs {
		j := &e.jobs[i]
		jr := &r.Jobs[i]
		*jr = JobResult{ID: j.id, Submit: j.submit, Start: j.start, End: j.end, Nodes: j.nodes, Killed: j.killed, alloc: j.alloc}
		if len(j.released) > 0 {
			jr.alloc, jr.Released = j.full, j.released
			jr.Nodes += len(j.released)
		}
		wait += jr.Wait().Seconds()
		bsld += jr.BoundedSlowdown()
		work += jr.NodeSeconds()
		first, last = min(first, j.submit), max(last, j.end)
		if j.killed {
			r.Killed++
		}
	}
	n := float64(len(e.jobs))
	r.MeanWait = time.Duration(math.Round(wait / n * 1e9))
	r.MeanBSLD = bsld / n
	if span := (last - first).Seconds(); span > 0 {
		r.Utilization = work / (float64(e.st.size) * span)
	}
	return r
}
