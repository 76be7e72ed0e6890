package sim

import (
	"slices"
	"time"
)

// reschedule moves a running job's end to t (>= now): the elastic driver
// ends pilots and base jobs early. The old end event is dropped.
func (s *State) reschedule(j *job, t time.Duration) {
	if !j.began || t < s.now || t == j.end {
		return
	}
	h := s.ev
	for i := range h {
		if h[i].j == j {
			n := len(h) - 1
			if i != n {
				h[i] = h[n]
				s.ev = h[:n]
				s.ev.fix(i)
			} else {
				s.ev = h[:n]
			}
			break
		}
	}
	j.end = t
	j.run = t - j.start
	s.version++
	s.ev.add(event{t: t, j: j})
}

// Release is a node a running job gave back before its end.
type Release struct {
	Node int
	At   time.Duration
}

// shrink gives node n of running job j back now, as `scontrol update
// JobId=<j> NodeList=<the others>` does in Slurm (which can shrink a running
// job): the elastic driver's base job whose work ran out on that node. A
// job keeps at least one node (end it instead). To the scheduler it is
// like a job's end: the freed node is used at the main scheduler's next
// tick (tests/pilotqueue checks it on the loopback Slurm).
func (s *State) shrink(j *job, n int) {
	if !j.began || j.nodes <= 1 {
		return
	}
	var alloc []span
	found := false
	for _, sp := range j.alloc {
		lo, hi := int(sp.first), int(sp.first+sp.n)
		if n < lo || n >= hi {
			alloc = append(alloc, sp)
			continue
		}
		found = true
		if n > lo {
			alloc = append(alloc, span{first: sp.first, n: int32(n - lo)})
		}
		if n+1 < hi {
			alloc = append(alloc, span{first: int32(n + 1), n: int32(hi - n - 1)})
		}
	}
	if !found {
		return
	}
	i, ok := slices.BinarySearchFunc(s.running, j, byEstEnd)
	if !ok {
		panic("sim: shrinking a job that is not running")
	}
	s.running = slices.Delete(s.running, i, i+1)
	j.alloc = alloc
	j.nodes--
	j.released = append(j.released, Release{Node: n, At: s.now})
	j.line = nil // NumNodes and the host list changed
	i, _ = slices.BinarySearchFunc(s.running, j, byEstEnd)
	s.running = slices.Insert(s.running, i, j)
	s.free++
	s.idle.setRange(n, 1)
	s.version++
	// slurmctld answers the update RPC with queue_job_scheduler()
	// (_slurm_rpc_update_job in proc_req.c), as it does a job's end: the
	// main scheduler runs at its next tick, and backfill sees a change.
	// The pass at this instant has run: ask for another.
	if s.bf != nil {
		s.bf.ended(s, j)
		s.wakeNow()
	}
}
