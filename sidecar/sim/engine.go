package sim

import (
	"cmp"
	"math"
	"slices"
	"time"

	"github.com/glean-hpc/glean/sidecar/workload"
)

// job is the engine's view of one job.
type job struct {
	id     int
	seq    int // position in arrival order: Slurm's priority order here
	submit time.Duration
	run    time.Duration // how long it holds its nodes (cut at the limit if killed)
	est    time.Duration // what the scheduler plans with; may be Unlimited
	nodes  int
	killed bool
	src    *workload.Job

	began      bool
	start, end time.Duration
	estEnd     time.Duration // start + est, saturated
	alloc      []span        // the nodes it holds, from start on
	line       *jobLine      // its cached snapshot line (the elastic driver's)
	plan       int           // 1 + its entry in the Slurm-like scheduler's last plan; 0: none
	pilot      bool          // the elastic driver's running pilot
	// full is alloc at the start, released the nodes given back since
	// (shrink), in order.
	full     []span
	released []Release
}

// addSat adds a duration to a time, saturating at the largest Duration so
// that Unlimited estimates stay Unlimited.
func addSat(t, d time.Duration) time.Duration {
	if d > math.MaxInt64-t {
		return math.MaxInt64
	}
	return t + d
}

// State is the machine and queue between events. Schedulers change it only
// through start and wake; OnPass hooks read it through its methods.
type State struct {
	now   time.Duration
	size  int
	free  int
	idle  bitset // which nodes are free; free counts them
	queue []*job // pending, FIFO by (submit, ID)
	// running is ordered by byEstEnd: the order in which the scheduler
	// expects nodes back, which is all EASY needs for the shadow time.
	running []*job
	started bool            // a queued job started during this pass: compact the queue
	ev      events          // job ends
	wakes   []time.Duration // wake-ups (wake), the earliest last

	runs  []span // scratch space of bestFit
	spans []span // backing store of the jobs' allocations, appended to

	// Slurm-like limit enforcement: a job over its limit is killed at the
	// next multiple of limitCheck and frees its nodes killWait later.
	// limitCheck 0 kills exactly at the limit.
	limitCheck, killWait time.Duration

	// version counts changes a snapshot would show apart from the clock:
	// starts, ends, arrivals, end times moved, backfill passes. The
	// elastic driver skips policy rounds over unchanged states.
	version uint64

	policy Policy
	part   *partition // what Snapshot shows of the partition
	bf     *slurmLike // the Slurm-like scheduler, whose plan Snapshot shows; nil for the others
}

// Now is the simulated time, as an offset from the workload's start.
func (s *State) Now() time.Duration { return s.now }

// Size is the machine's node count.
func (s *State) Size() int { return s.size }

// Free is the count of idle nodes.
func (s *State) Free() int { return s.free }

// Queued is the count of pending jobs.
func (s *State) Queued() int { return len(s.queue) }

// Running is the count of running jobs.
func (s *State) Running() int { return len(s.running) }

// LastBackfill is when the Slurm-like scheduler's backfill last passed;
// false before its first pass and under the other policies.
func (s *State) LastBackfill() (time.Duration, bool) {
	if s.bf == nil || !s.bf.bfRan {
		return 0, false
	}
	return s.bf.lastBF, true
}

// byEstEnd orders running jobs by estimated end; at equal ends the smaller
// job counts first towards a reservation. The tie rule changes which jobs
// EASY lets use the extra nodes; this one reproduces the reference figures
// of the shared workloads (by ID alone, KTH-SP2 waits 0.8% less).
func byEstEnd(a, b *job) int {
	return cmp.Or(cmp.Compare(a.estEnd, b.estEnd), cmp.Compare(a.nodes, b.nodes), cmp.Compare(a.id, b.id))
}

// start runs a queued job now on the nodes select/linear would give it.
// The caller has checked that it fits; the job stays in the queue until
// compact.
func (s *State) start(j *job) {
	n := len(s.spans)
	var ok bool
	s.runs, s.spans, ok = bestFit(s.idle, j.nodes, s.runs, s.spans)
	if !ok {
		panic("sim: starting a job that does not fit")
	}
	s.startOn(j, s.spans[n:len(s.spans):len(s.spans)])
}

// startOn runs a queued job now on the given free nodes.
func (s *State) startOn(j *job, alloc []span) {
	sortSpans(alloc)
	for _, sp := range alloc {
		s.idle.clearRange(int(sp.first), int(sp.n))
	}
	j.alloc, j.full = alloc, alloc
	j.began = true
	j.start = s.now
	j.end = s.now + j.run
	j.estEnd = addSat(s.now, j.est)
	if s.limitCheck > 0 && j.est != workload.Unlimited && j.run > j.est {
		// slurmctld checks limits every limitCheck and kills a job whose
		// end time has come; a job that ends before the check just ends.
		check := ceilTo(j.estEnd, s.limitCheck)
		j.killed = j.end > check
		j.end = min(j.end, check+s.killWait)
	}
	s.free -= j.nodes
	i, _ := slices.BinarySearchFunc(s.running, j, byEstEnd)
	s.running = slices.Insert(s.running, i, j)
	s.started = true
	s.version++
	if s.bf != nil {
		s.bf.touch(s.now)
		s.bf.moved = true
	}
	s.ev.add(event{t: j.end, j: j})
}

// ceilTo rounds t up to a multiple of d.
func ceilTo(t, d time.Duration) time.Duration {
	if r := t % d; r != 0 {
		return t - r + d
	}
	return t
}

// floorTo rounds t down to a multiple of d.
func floorTo(t, d time.Duration) time.Duration { return t - t%d }

// wake asks for a scheduling pass at t even if nothing ends or arrives
// then: a reservation may start at a time that is no event. Schedulers ask
// again at every pass, so an event due by t makes the wake-up redundant.
// A wake-up is thus earlier than every pending event: wakes is a stack
// with the earliest on top, and needs no heap.
func (s *State) wake(t time.Duration) {
	if next, ok := s.nextEvent(); t <= s.now || t == math.MaxInt64 || ok && next <= t {
		return
	}
	s.wakes = append(s.wakes, t)
}

// wakeNow asks for another pass at this instant, after the one that has
// run. No pending event is earlier.
func (s *State) wakeNow() { s.wakes = append(s.wakes, s.now) }

// nextEvent is the time of the earliest job end or wake-up, if any.
func (s *State) nextEvent() (time.Duration, bool) {
	t, ok := time.Duration(math.MaxInt64), false
	if len(s.ev) > 0 {
		t, ok = s.ev[0].t, true
	}
	if n := len(s.wakes); n > 0 && s.wakes[n-1] < t {
		t, ok = s.wakes[n-1], true
	}
	return t, ok
}

// finish releases a running job's nodes.
func (s *State) finish(j *job) {
	i, ok := slices.BinarySearchFunc(s.running, j, byEstEnd)
	if !ok {
		panic("sim: ending a job that is not running")
	}
	s.running = slices.Delete(s.running, i, i+1)
	s.version++
	s.free += j.nodes
	for _, sp := range j.alloc {
		s.idle.setRange(int(sp.first), int(sp.n))
	}
}

// compact drops started jobs from the queue, keeping its order. It moves
// the rest down in place, so that the queue's array is reused.
func (s *State) compact() {
	if !s.started {
		return
	}
	s.started = false
	k := 0
	for _, j := range s.queue {
		if !j.began {
			s.queue[k] = j
			k++
		}
	}
	clear(s.queue[k:])
	s.queue = s.queue[:k]
}

// scheduler is one policy. Schedulers that keep plans (conservative) learn
// of arrivals and ends; all start jobs in pass.
type scheduler interface {
	arrived(s *State, j *job)
	ended(s *State, j *job)
	pass(s *State)
}

// event is a job's end.
type event struct {
	t time.Duration
	j *job
}

// before orders events by time, then job ID.
func (x *event) before(y *event) bool {
	if x.t != y.t {
		return x.t < y.t
	}
	return x.j.id < y.j.id
}

// events is a binary min-heap on event.before. Its sifts are
// container/heap's, step for step, written for this one type: the
// interface calls cost more than the comparisons.
type events []event

func (h *events) add(e event) {
	*h = append(*h, e)
	h.up(len(*h) - 1)
}

func (h *events) take() event {
	old := *h
	e := old[0]
	n := len(old) - 1
	old[0] = old[n]
	*h = old[:n]
	if n > 0 {
		h.down(0)
	}
	return e
}

// fix restores the heap after element i changed (heap.Fix).
func (h *events) fix(i int) {
	if i < len(*h) && !h.down(i) {
		h.up(i)
	}
}

func (h events) up(j int) {
	e := h[j]
	for j > 0 {
		i := (j - 1) / 2 // parent
		if !e.before(&h[i]) {
			break
		}
		h[j] = h[i]
		j = i
	}
	h[j] = e
}

// down reports whether element i0 moved.
func (h events) down(i0 int) bool {
	e, i := h[i0], i0
	for {
		j := 2*i + 1 // left child
		if j >= len(h) {
			break
		}
		if j2 := j + 1; j2 < len(h) && h[j2].before(&h[j]) {
			j = j2
		}
		if !h[j].before(&e) {
			break
		}
		h[i] = h[j]
		i = j
	}
	h[i] = e
	return i > i0
}

type engine struct {
	st     State
	jobs   []job  // in workload order
	order  []*job // by (submit, ID)
	next   int    // next arrival in order
	sched  scheduler
	onPass func(time.Duration, *State)
	events int
	passes int
}

func (e *engine) run() {
	s := &e.st
	s.ev = make(events, 0, 64)
	for e.next < len(e.order) || len(s.ev) > 0 || len(s.wakes) > 0 {
		now := time.Duration(math.MaxInt64)
		if e.next < len(e.order) {
			now = e.order[e.next].submit
		}
		if t, ok := s.nextEvent(); ok && t <= now {
			now = t
		}
		s.now = now
		for len(s.ev) > 0 && s.ev[0].t == now {
			ev := s.ev.take()
			e.events++
			s.finish(ev.j)
			e.sched.ended(s, ev.j)
		}
		for n := len(s.wakes); n > 0 && s.wakes[n-1] == now; n-- {
			s.wakes = s.wakes[:n-1]
			e.events++
		}
		for e.next < len(e.order) && e.order[e.next].submit == now {
			j := e.order[e.next]
			e.next++
			s.queue = append(s.queue, j)
			s.version++
			e.sched.arrived(s, j)
			e.events++
		}
		e.sched.pass(s)
		s.compact()
		e.passes++
		if e.onPass != nil {
			e.onPass(now, s)
		}
	}
}
