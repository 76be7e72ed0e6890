package policy

import (
	"math"
	"slices"
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
// do nothing (see Hold). Decide itself does not track the hold.
func DecideHold(s *cluster.Snapshot, st State, cfg Config, now time.Time) ([]Action, Hold) {
	return decide(s, st, cfg, now, true)
}

func decide(s *cluster.Snapshot, st State, cfg Config, now time.Time, track bool) ([]Action, Hold) {
	if s == nil || cfg.Validate() != nil {
		return nil, Hold{}
	}
	sc := scratchPool.Get().(*scratch)
	defer func() {
		// Neither holds on to the caller's snapshot and state: a
		// pointer into a caller's structure keeps all of it alive (the
		// simulator's whole last run, until the next topology change).
		sc.dec, sc.names.s = decider{}, nil
		scratchPool.Put(sc)
	}()
	d := newDecider(s, st, cfg, now, track, sc)
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
	acts := d.result()
	if len(acts) > 0 || d.h == nil {
		return acts, Hold{Until: now, TaskEnds: true}
	}
	h := Hold{TaskEnds: d.h.taskEnds}
	if d.h.set {
		h.Until = d.timeOf(d.h.until)
	}
	return acts, h
}

// result is the decision's actions in a slice of their own (nil for
// none): emit appends them to the scratch's, which the next decision
// reuses, so that a decision allocates once for them, not per doubling.
func (d *decider) result() []Action {
	if len(d.acts) == 0 {
		return nil
	}
	acts := slices.Clone(d.acts)
	clear(d.acts) // no strings kept alive by the pool
	d.sc.acts = d.acts[:0]
	return acts
}

// Instants inside a decision are Unix nanoseconds (int64): comparing
// them is what Decide does most. neverNs stands for the zero time.Time
// ("never", or unknown) and sorts before every other instant, as the zero
// time does; instants outside int64's range (before 1678, after 2262)
// are clamped to its ends.
const neverNs = math.MinInt64

// ns is t as Unix nanoseconds, neverNs for the zero time.
func ns(t time.Time) int64 {
	// Fast path: well inside int64's range (1679-2261), where the zero
	// time (year 1) is not.
	if sec := t.Unix(); sec > -9e9 && sec < 9e9 {
		return t.UnixNano()
	}
	return nsSlow(t)
}

func nsSlow(t time.Time) int64 {
	switch {
	case t.IsZero():
		return neverNs
	case t.Before(minNsTime):
		return neverNs + 1
	case t.After(maxNsTime):
		return math.MaxInt64
	}
	return t.UnixNano()
}

var (
	minNsTime = time.Unix(0, math.MinInt64+1)
	maxNsTime = time.Unix(0, math.MaxInt64)
)

// satAdd is a + b, saturated at int64's ends.
func satAdd(a, b int64) int64 {
	c := a + b
	switch {
	case b > 0 && c < a:
		return math.MaxInt64
	case b < 0 && c > a:
		return math.MinInt64 + 1
	}
	return c
}

// timeOf turns an instant back into a time.Time in now's location (the
// zero time for neverNs).
func (d *decider) timeOf(t int64) time.Time {
	if t == neverNs {
		return time.Time{}
	}
	return time.Unix(0, t).In(d.now.Location())
}

// tracker collects, over one decision, the earliest instant after now at
// which a comparison it made with the clock may turn out otherwise. A nil
// tracker records nothing: Decide runs without one.
type tracker struct {
	now      int64
	until    int64 // if set
	set      bool
	taskEnds bool
}

// flipNs notes that a comparison may change at t. A t before now is
// ignored: the comparison changed already and, monotone in now, stays. A t
// at now means right after it.
func (h *tracker) flipNs(t int64) {
	if h == nil || t < h.now {
		return
	}
	if t == h.now {
		t = h.now + 1
	}
	if !h.set || t < h.until {
		h.until, h.set = t, true
	}
}

// flip is flipNs for a time.Time.
func (h *tracker) flip(t time.Time) {
	if h != nil {
		h.flipNs(ns(t))
	}
}

// never: the decision holds at now only.
func (h *tracker) never() {
	if h != nil {
		h.flipNs(h.now)
	}
}

// merge adds what o noted.
func (h *tracker) merge(o *tracker) {
	if h == nil || o == nil {
		return
	}
	if o.set {
		h.flipNs(o.until)
	}
	h.taskEnds = h.taskEnds || o.taskEnds
}

// readTaskEnds notes that the decision read busy pilots' TaskEnd.
func (h *tracker) readTaskEnds() {
	if h != nil {
		h.taskEnds = true
	}
}

// mtime is an instant that is fixed (a snapshot's or the state's) or moves
// with the clock (now plus a fixed offset: mv). neverNs is "never", as the
// zero time is in the decider.
type mtime struct {
	t  int64
	mv bool
}

var neverM = mtime{t: neverNs}

func (t mtime) never() bool { return t.t == neverNs }

func fixed(t time.Time) mtime { return mtime{t: ns(t)} }

// nowPlus is now + off, moving with the clock.
func (d *decider) nowPlus(off time.Duration) mtime {
	return mtime{t: satAdd(d.nowNs, int64(off)), mv: true}
}

// add is t + off (cluster.Unlimited: never).
func (t mtime) add(off time.Duration) mtime {
	switch {
	case t.never():
		return t
	case off == cluster.Unlimited:
		return mtime{t: neverNs, mv: t.mv}
	}
	return mtime{t: satAdd(t.t, int64(off)), mv: t.mv}
}

// cmpM compares a and b as time.Time.Compare does, noting when a moving
// one overtakes a fixed one. Never is compared as it is (the callers test
// it first).
func (d *decider) cmpM(a, b mtime) int {
	if a.mv != b.mv && d.h != nil && !a.never() && !b.never() {
		m, x := a, b
		if b.mv {
			m, x = b, a
		}
		// m = now + k meets x when now reaches x - k.
		d.h.flipNs(satAdd(x.t, -(m.t - d.nowNs)))
	}
	if a.t < b.t {
		return -1
	}
	if a.t > b.t {
		return 1
	}
	return 0
}

// maxM is the later of a and b (b on a tie, as maxTime).
func (d *decider) maxM(a, b mtime) mtime {
	if d.cmpM(a, b) > 0 {
		return a
	}
	return b
}

// winMoves reports whether node i's window shrinks with the clock (FreeFor
// is Until - now) rather than being fixed (the horizon, or 0).
func (d *decider) winMoves(i int) bool {
	f, until := d.freeFor[i], d.until(i)
	return f > 0 && !until.IsZero() && f == until.Sub(d.now)
}

// until is node i's window's Until: its earliest claim (the windows'
// scan's), zero if none.
func (d *decider) until(i int) time.Time { return d.sc.nodes[i].claim }

// cmpWinMoves compares nodes a and b's windows' FreeFor, noting when a
// shrinking one crosses a fixed one; ma and mb are winMoves of a and b.
func (d *decider) cmpWinMoves(a, b int, ma, mb bool) int {
	fa, fb := d.freeFor[a], d.freeFor[b]
	if ma != mb {
		m, k := a, fb
		if mb {
			m, k = b, fa
		}
		if k != cluster.Unlimited {
			d.h.flip(d.until(m).Add(-k)) // Until - now reaches k
		}
	}
	switch {
	case fa < fb:
		return -1
	case fa > fb:
		return 1
	}
	return 0
}

// limitFits reports whether node i's window gives a pilot of at least
// minTL (pilotLimit(FreeFor) >= minTL), noting when a shrinking one stops.
func (d *decider) limitFits(i int, minTL time.Duration) bool {
	ok := d.pilotLimit(d.freeFor[i]) >= minTL
	if ok && d.winMoves(i) {
		// (Until - now - Margin) truncated to minutes >= minTL while
		// now <= Until - Margin - minTL rounded up to a minute.
		d.h.flip(d.until(i).Add(-d.cfg.Margin - roundUpMinute(minTL)))
	}
	return ok
}
