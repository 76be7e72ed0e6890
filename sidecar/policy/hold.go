package policy

import (
	"time"

	"github.com/glean-hpc/glean/sidecar/cluster"
)

// Hold says for how long a decision that does nothing stays a decision that
// does nothing, so that a caller driving the policy at every scheduling
// cycle (the simulator) may skip the rounds in which nothing changed.
//
// The policy's inputs move with the clock only through comparisons of now
// (plus fixed offsets: Grace, Margin, a pending job's time limit) with
// fixed times of the snapshot and the state (a job's end or planned start,
// a reservation, a pilot's end, submission or task end). Each such
// comparison changes its outcome at most once as now grows; Decide notes
// the earliest instant at which one of those it made could change. While
// none has, Decide takes the same path and decides the same.
type Hold struct {
	// Until: from the same snapshot and state, Decide decides nothing at
	// any time in [now, Until). Zero: at any later time. A decision with
	// actions holds only at now (Until == now).
	Until time.Time
	// TaskEnds: the decision read busy pilots' TaskEnd, so it holds only
	// while they stay the same. False: it holds whatever they are (same
	// Busy flags), as when no pending job could take a pilot's node.
	TaskEnds bool
}

// Holds reports whether the decision holds at t (same inputs assumed).
func (h Hold) Holds(t time.Time) bool { return h.Until.IsZero() || t.Before(h.Until) }

// DecideHold is Decide, and for how long its decision holds when it is to
// do nothing (see Hold).
func DecideHold(s *cluster.Snapshot, st State, cfg Config, now time.Time) ([]Action, Hold) {
	if s == nil || cfg.Validate() != nil {
		return nil, Hold{}
	}
	d := newDecider(s, st, cfg, now)
	d.timeouts()
	d.poolMoves()
	d.noWork()
	d.baseCancels()
	if d.winOK {
		d.giveWay()
		d.thesis()
	}
	d.flushMoves()
	if d.winOK && s.Complete && !d.timedOut {
		d.submit()
		d.fifo()
	}
	if len(d.acts) > 0 {
		return d.acts, Hold{Until: now, TaskEnds: true}
	}
	return d.acts, Hold{Until: d.h.until, TaskEnds: d.h.taskEnds}
}

// tracker collects, over one decision, the earliest instant after now at
// which a comparison it made with the clock may turn out otherwise. A nil
// tracker records nothing.
type tracker struct {
	now      time.Time
	until    time.Time // zero: none yet
	taskEnds bool
}

// flip notes that a comparison may change at t. A t before now is ignored:
// the comparison changed already and, monotone in now, stays. A t at now
// means right after it.
func (h *tracker) flip(t time.Time) {
	if h == nil || t.Before(h.now) {
		return
	}
	if !t.After(h.now) {
		t = h.now.Add(time.Nanosecond)
	}
	if h.until.IsZero() || t.Before(h.until) {
		h.until = t
	}
}

// never: the decision holds at now only.
func (h *tracker) never() {
	if h != nil {
		h.flip(h.now)
	}
}

// merge adds what o noted.
func (h *tracker) merge(o *tracker) {
	if !o.until.IsZero() {
		h.flip(o.until)
	}
	h.taskEnds = h.taskEnds || o.taskEnds
}

// mtime is a time that is fixed (a snapshot's or the state's) or moves
// with the clock (now plus a fixed offset: mv). The zero t is "never",
// as in the decider.
type mtime struct {
	t  time.Time
	mv bool
}

func fixed(t time.Time) mtime { return mtime{t: t} }

// nowPlus is now + off, moving with the clock.
func (d *decider) nowPlus(off time.Duration) mtime { return mtime{t: d.now.Add(off), mv: true} }

// add is t + off (cluster.Unlimited: never).
func (t mtime) add(off time.Duration) mtime {
	if t.t.IsZero() {
		return t
	}
	return mtime{t: addDur(t.t, off), mv: t.mv}
}

// cmpM compares a and b as time.Time.Compare does, noting when a moving
// one overtakes a fixed one. Zero times are compared as they are (the
// callers test them first).
func (d *decider) cmpM(a, b mtime) int {
	if a.mv != b.mv && !a.t.IsZero() && !b.t.IsZero() {
		m, x := a, b
		if b.mv {
			m, x = b, a
		}
		// m = now + k meets x when now reaches x - k.
		d.h.flip(d.now.Add(x.t.Sub(m.t)))
	}
	return a.t.Compare(b.t)
}

// maxM is the later of a and b (b on a tie, as maxTime).
func (d *decider) maxM(a, b mtime) mtime {
	if d.cmpM(a, b) > 0 {
		return a
	}
	return b
}

// winMoves reports whether a node's window shrinks with the clock (FreeFor
// is Until - now) rather than being fixed (the horizon, or 0).
func (d *decider) winMoves(w *NodeWindow) bool {
	return w.FreeFor > 0 && !w.Until.IsZero() && w.FreeFor == w.Until.Sub(d.now)
}

// cmpWin compares two windows' FreeFor, noting when a shrinking one
// crosses a fixed one.
func (d *decider) cmpWin(a, b *NodeWindow) int {
	ma, mb := d.winMoves(a), d.winMoves(b)
	if ma != mb {
		m, k := a, b.FreeFor
		if mb {
			m, k = b, a.FreeFor
		}
		if k != cluster.Unlimited {
			d.h.flip(m.Until.Add(-k)) // Until - now reaches k
		}
	}
	switch {
	case a.FreeFor < b.FreeFor:
		return -1
	case a.FreeFor > b.FreeFor:
		return 1
	}
	return 0
}

// limitFits reports whether a window gives a pilot of at least minTL
// (pilotLimit(w.FreeFor) >= minTL), noting when a shrinking one stops.
func (d *decider) limitFits(w *NodeWindow, minTL time.Duration) bool {
	ok := d.pilotLimit(w.FreeFor) >= minTL
	if ok && d.winMoves(w) {
		// (Until - now - Margin) truncated to minutes >= minTL while
		// now <= Until - Margin - minTL rounded up to a minute.
		d.h.flip(w.Until.Add(-d.cfg.Margin - roundUpMinute(minTL)))
	}
	return ok
}
