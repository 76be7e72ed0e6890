package sim

import (
	"math"
	"time"
)

// fcfs starts jobs in queue order until one does not fit.
type fcfs struct{}

func (fcfs) arrived(*State, *job) {}
func (fcfs) ended(*State, *job)   {}
func (fcfs) pass(s *State)        { startHead(s) }

// startHead starts jobs from the head of the queue while they fit and
// returns how many it started.
func startHead(s *State) int {
	i := 0
	for i < len(s.queue) && s.queue[i].nodes <= s.free {
		s.start(s.queue[i])
		i++
	}
	return i
}

// easy is EASY backfilling (Lifka 1995; Mu'alem and Feitelson 2001): the
// queue's head gets a reservation at its shadow time; a later job may start
// now if it fits in the free nodes and either ends by the shadow time or
// needs no more than the extra nodes. After each such start the reservation
// is what a fresh computation would give, so that the pass equals "start the
// first job that may backfill, recompute, repeat".
type easy struct{}

func (easy) arrived(*State, *job) {}
func (easy) ended(*State, *job)   {}

func (easy) pass(s *State) {
	h := startHead(s)
	if h+1 >= len(s.queue) || s.free == 0 {
		return
	}
	need := s.queue[h].nodes
	r := s.reserve(need)
	for i := h + 1; i < len(s.queue) && s.free > 0; i++ {
		j := s.queue[i]
		// Ending exactly at the shadow time is in time: the nodes are back
		// when the head needs them.
		if j.began || j.nodes > s.free || addSat(s.now, j.est) > r.shadow && j.nodes > r.extra {
			continue
		}
		s.start(j)
		switch {
		case r.last != nil && byEstEnd(j, r.last) < 0:
			// Back before the reservation's last job: nothing changes then.
		case j.nodes <= r.extra:
			r.extra -= j.nodes
		default:
			// Only with ties at the shadow time: the reservation may move
			// or grow, and a job passed over may now qualify.
			old := r
			r = s.reserve(need)
			if r.shadow > old.shadow || r.extra > old.extra {
				i = h
			}
		}
	}
}

// reservation is the head's: when it can start by the running jobs'
// estimates (the first end, in byEstEnd order, that brings enough nodes
// back), how many nodes will be free beyond its need then, and that job.
type reservation struct {
	shadow time.Duration
	extra  int
	last   *job
}

func (s *State) reserve(need int) reservation {
	avail := s.free
	for _, r := range s.running {
		avail += r.nodes
		if avail >= need {
			return reservation{shadow: r.estEnd, extra: avail - need, last: r}
		}
	}
	return reservation{shadow: math.MaxInt64} // need > size: load rejects such jobs
}

// conservative is conservative backfilling (Mu'alem and Feitelson 2001):
// every queued job holds a reservation in a profile of future free nodes,
// made at arrival in queue order; when a job ends before its estimate, the
// freed space is offered to the queue in order (compression), so a
// reservation only ever moves earlier.
type conservative struct {
	p     profile
	resv  map[*job]time.Duration // queued job -> reserved start
	dirty bool                   // a job ended early: compress at the next pass
}

func newConservative(size int) *conservative {
	c := &conservative{resv: make(map[*job]time.Duration)}
	c.p.reset(0, size)
	return c
}

// arrived does nothing: reservations are made in pass, after any
// compression, so that a new job never takes space freed for older ones.
func (c *conservative) arrived(*State, *job) {}

func (c *conservative) ended(s *State, j *job) {
	if s.now < j.estEnd {
		c.p.add(s.now, j.estEnd, j.nodes)
		c.dirty = true
	}
}

func (c *conservative) pass(s *State) {
	c.p.trim(s.now)
	for _, j := range s.queue {
		if _, ok := c.resv[j]; !ok {
			c.place(s.now, j)
		}
	}
	// One sweep in queue order can leave a hole that a job placed early in
	// the sweep could have used: sweep until nothing moves.
	for moved := c.dirty; moved; {
		moved = false
		for _, j := range s.queue {
			t := c.resv[j]
			c.p.add(max(t, s.now), addSat(t, j.est), j.nodes)
			if c.place(s.now, j) < t {
				moved = true
			}
		}
	}
	c.dirty = false
	next := time.Duration(math.MaxInt64)
	for _, j := range s.queue {
		t := c.resv[j]
		if t > s.now {
			next = min(next, t)
			continue
		}
		if j.nodes > s.free {
			panic("sim: conservative plan out of step with the machine")
		}
		delete(c.resv, j)
		s.start(j) // its reservation becomes its run in the profile
	}
	s.wake(next)
}

// place reserves the earliest slot for j and returns its start.
func (c *conservative) place(now time.Duration, j *job) time.Duration {
	t := c.p.earliest(now, j.nodes, j.est)
	c.p.add(t, addSat(t, j.est), -j.nodes)
	c.resv[j] = t
	return t
}
