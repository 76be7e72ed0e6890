package plot

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"time"
)

// Step is one piece of the step function that Utilization draws: from Start
// to End the node counts per kind are constant. Nodes[Idle] is the machine
// size minus all other kinds, so the counts always add up to Timeline.Nodes.
type Step struct {
	Start, End time.Duration
	Nodes      [NumKinds]int
}

// Stack sweeps the segments of t in time order and returns the per-kind node
// counts as a step function covering [0, x range end) without gaps. Adjacent
// steps always differ in some count. It costs O(n log n) for n segments.
//
// It fails with an error wrapping ErrInvalid if t is malformed, and with an
// *OverflowError if more nodes than the machine has are in use at some time
// (checked over all segments, also those past Window).
func Stack(t Timeline) ([]Step, error) {
	end, err := validate(t)
	if err != nil {
		return nil, err
	}
	return sweep(t, end)
}

// validate checks t and returns the end of the x range.
func validate(t Timeline) (time.Duration, error) {
	var p problems
	switch {
	case t.Nodes <= 0:
		p.add("machine size (Nodes) is %d, must be > 0", t.Nodes)
	case t.Nodes > math.MaxInt32:
		p.add("machine size (Nodes) is %d, more than %d", t.Nodes, math.MaxInt32)
	}
	if t.Window < 0 {
		p.add("negative Window %v", t.Window)
	}
	var last time.Duration
	for i, s := range t.Segments {
		name := segName{i, s.Job} // formatted only if there is a problem
		switch s.Kind {
		case Regular, CalibrationBase, Pilot, Down:
		case Idle:
			p.add("%s: kind idle is derived from the machine size, not an input", name)
		default:
			p.add("%s: unknown kind %d", name, int(s.Kind))
		}
		switch {
		case s.Start < 0:
			p.add("%s: negative Start %v", name, s.Start)
		case s.End < s.Start:
			p.add("%s: End %v is before Start %v", name, s.End, s.Start)
		}
		switch {
		case s.Nodes <= 0:
			p.add("%s: Nodes is %d, must be > 0", name, s.Nodes)
		case t.Nodes > 0 && s.Nodes > t.Nodes:
			p.add("%s: %d nodes on a %d-node machine", name, s.Nodes, t.Nodes)
		}
		last = max(last, s.End)
	}
	for i, m := range t.Marks {
		if m.At < 0 {
			p.add("mark %d (%q): negative time %v", i, m.Label, m.At)
		}
		last = max(last, m.At)
	}
	end := t.Window
	if end == 0 {
		end = last
	}
	if end == 0 && p.n == 0 {
		p.add("empty time range: Window is 0 and no segment or mark ends after 0")
	}
	return end, p.err()
}

type segName struct {
	i   int
	job string
}

func (n segName) String() string {
	if n.job == "" {
		return fmt.Sprintf("segment %d", n.i)
	}
	return fmt.Sprintf("segment %d (job %q)", n.i, n.job)
}

// event is a change of the node count of one kind; 16 bytes, so that
// sorting 200k of them stays cheap.
type event struct {
	at   time.Duration
	d    int32
	kind uint8
}

// sweep assumes t is valid.
func sweep(t Timeline, end time.Duration) ([]Step, error) {
	ev := make([]event, 0, 2*len(t.Segments))
	for _, s := range t.Segments {
		if s.Start == s.End {
			continue
		}
		// validate bounded s.Nodes by the machine size; a machine of
		// more than 2^31 nodes would not fit int32.
		ev = append(ev, event{s.Start, int32(s.Nodes), uint8(s.Kind)}, event{s.End, -int32(s.Nodes), uint8(s.Kind)})
	}
	slices.SortFunc(ev, func(a, b event) int { return cmp.Compare(a.at, b.at) })

	var (
		steps = make([]Step, 0, len(ev)/2+2)
		cur   [NumKinds]int
		used  int
		from  time.Duration
	)
	emit := func(to time.Duration) {
		to = min(to, end)
		if from >= to {
			return
		}
		n := cur
		n[Idle] = t.Nodes - used
		if k := len(steps) - 1; k >= 0 && steps[k].Nodes == n && steps[k].End == from {
			steps[k].End = to
			return
		}
		steps = append(steps, Step{Start: from, End: to, Nodes: n})
	}
	for i := 0; i < len(ev); {
		at := ev[i].at
		emit(at)
		for ; i < len(ev) && ev[i].at == at; i++ {
			cur[ev[i].kind] += int(ev[i].d)
			used += int(ev[i].d)
		}
		if used > t.Nodes {
			return nil, &OverflowError{At: at, Used: used, Nodes: t.Nodes, ByKind: cur}
		}
		from = at
	}
	emit(end)
	return steps, nil
}

// means returns the time-averaged node count of every kind over [0, end).
func means(steps []Step) (m [NumKinds]float64) {
	if len(steps) == 0 {
		return m
	}
	span := float64(steps[len(steps)-1].End - steps[0].Start)
	for _, s := range steps {
		w := float64(s.End-s.Start) / span
		for k := range NumKinds {
			m[k] += w * float64(s.Nodes[k])
		}
	}
	return m
}
