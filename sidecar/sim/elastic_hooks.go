package sim

import (
	"container/heap"
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
		if h[i].kind == evEnd && h[i].j == j {
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
	s.ev.add(event{t: t, kind: evEnd, j: j})
}

// fix restores the heap after element i changed.
func (h *events) fix(i int) {
	if i < len(*h) {
		heap.Fix(h, i)
	}
}
