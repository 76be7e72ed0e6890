package policy

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/glean-hpc/glean/sidecar/cluster"
)

// holdCase is a random small cluster in the shapes Decide meets: running
// jobs ending at any time (some overdue, some UNLIMITED), pending jobs
// planned by Slurm (some on pilots' nodes, some about to start) or not,
// running pilots (busy with a known task end or not, retiring, ending or
// UNLIMITED), pending pilots, and fair (with a base) and scavenger jobs.
func holdCase(r *rand.Rand) (*cluster.Snapshot, State, Config) {
	n := 4 + r.IntN(10)
	names := make([]string, n)
	for i := range names {
		names[i] = "n" + strconv.Itoa(i+1)
	}
	maxTime := unl
	if r.IntN(3) == 0 {
		maxTime = time.Duration(2+r.IntN(20)) * time.Hour
	}
	s := snap([]cluster.Partition{part("batch", maxTime, names...)}, [][]cluster.Node{nodes(cluster.NodeIdle, names...)})
	s.Config.BackfillInterval = 30 * time.Second
	minute := func(lo, hi int) time.Duration { return time.Duration(lo+r.IntN(hi-lo+1)) * time.Minute }
	jitter := func() time.Duration { return time.Duration(r.IntN(60)) * time.Second }
	free := slices.Clone(names)
	r.Shuffle(len(free), func(i, j int) { free[i], free[j] = free[j], free[i] })
	take := func() string { x := free[0]; free = free[1:]; return x }

	var st State
	st.BFInterval = 30 * time.Second
	st.Jobs = append(st.Jobs, ejob("scav", Scavenger, r.IntN(40), r.IntN(4), minute(5, 20)))
	if r.IntN(2) == 0 {
		st.Jobs = append([]ElasticJob{ejob("fair", Fair, r.IntN(30), r.IntN(3), minute(5, 30), "b1")}, st.Jobs...)
	}
	// Running jobs.
	for k := 0; len(free) > 2 && r.IntN(4) != 0; k++ {
		var ns []string
		for range 1 + r.IntN(min(3, len(free)-2)) {
			ns = append(ns, take())
		}
		j := running("r"+strconv.Itoa(k), at(minute(-2, 300)+jitter()), ns...)
		if r.IntN(10) == 0 {
			j = unlimited(j.ID, ns...)
		}
		s.Jobs = append(s.Jobs, j)
		for i := range s.Nodes {
			if slices.Contains(ns, s.Nodes[i].Name) {
				s.Nodes[i].State = cluster.NodeAlloc
			}
		}
	}
	// Pilots.
	var pilots []Pilot
	for k := 0; len(free) > 0 && r.IntN(3) != 0; k++ {
		job := st.Jobs[r.IntN(len(st.Jobs))].ID
		end := at(minute(0, 240) + jitter())
		if r.IntN(4) == 0 {
			end = at(minute(-1, 3) + jitter()) // ending about now
		}
		if r.IntN(8) == 0 {
			end = never
		}
		p := rpilot("pl"+strconv.Itoa(k), job, take(), minute(1, 60), end)
		switch r.IntN(4) {
		case 0:
			p = idlePilot(p)
		case 1, 2:
			p = taskEnds(p, minute(0, 20)+jitter())
		}
		if r.IntN(5) == 0 {
			p = retiringPilot(p)
		}
		pilots = append(pilots, p)
	}
	for k := range r.IntN(3) {
		node := ""
		if len(free) > 0 && r.IntN(2) == 0 {
			node = free[0]
		}
		pilots = append(pilots, ppilot("pp"+strconv.Itoa(k), "scav", node, time.Duration(r.IntN(50))*time.Second))
	}
	st.Pilots = pilots
	withPilots(s, pilots...)
	// Pending jobs.
	for k := range r.IntN(5) {
		id := "p" + strconv.Itoa(k)
		prio := int64(100 - k)
		nn := 1 + r.IntN(min(4, n))
		tl := minute(5, 400)
		if r.IntN(3) == 0 {
			// Planned by Slurm on some nodes, from a few seconds to hours away.
			var sched []string
			for _, i := range r.Perm(n)[:nn] {
				sched = append(sched, names[i])
			}
			s.Jobs = append(s.Jobs, pend2(id, prio, "Priority", nn, tl, at(minute(0, 300)+jitter()), sched...))
			continue
		}
		j := pend2(id, prio, "Resources", nn, tl, never)
		if r.IntN(4) == 0 {
			j.Start = at(minute(-1, 200) + jitter()) // Slurm's estimate, no nodes
		}
		s.Jobs = append(s.Jobs, j)
	}
	if len(st.Jobs) == 2 && r.IntN(2) == 0 {
		s.Jobs = append(s.Jobs, pend2("b1", 1, "Priority", 1, minute(10, 100), never))
	}
	cfg := DefaultConfig()
	if r.IntN(3) == 0 {
		cfg.RetireHorizon = minute(0, 30)
	}
	return s, st, cfg
}

// TestDecideHold: where DecideHold says an empty decision holds, Decide
// decides nothing at every instant before Until, at the instants where a
// comparison could turn (each fixed time of the input minus each offset
// the policy adds to now, and a nanosecond either side) and at random
// ones; and, unless it read them, whatever the busy pilots' task ends.
func TestDecideHold(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	cases := 3000
	if testing.Short() {
		cases = 500
	}
	var empty, held, forever, teFree int
	for c := range cases {
		s, st, cfg := holdCase(r)
		acts, h := DecideHold(s, st, cfg, now)
		if got := Decide(s, st, cfg, now); fmt.Sprint(got) != fmt.Sprint(acts) {
			t.Fatalf("case %d: DecideHold and Decide differ", c)
		}
		if len(acts) > 0 {
			if !h.Until.Equal(now) {
				t.Fatalf("case %d: a decision with actions holds until %v", c, h.Until)
			}
			continue
		}
		empty++
		end := h.Until
		if end.IsZero() {
			forever++
			end = now.Add(30 * 24 * time.Hour)
		}
		if !end.After(now) {
			t.Fatalf("case %d: empty decision held until %v, before now", c, end)
		}
		if end.After(now.Add(time.Nanosecond)) {
			held++
		}
		if !h.TaskEnds {
			teFree++
		}
		for _, at := range probeTimes(s, st, cfg, now, end, r) {
			if a := Decide(s, st, cfg, at); len(a) > 0 {
				t.Fatalf("case %d: held until %v (+%v), but at +%v:\n%s", c, h.Until, h.Until.Sub(now), at.Sub(now), fmtActs(a))
			}
			if !h.TaskEnds {
				st2 := st
				st2.Pilots = slices.Clone(st.Pilots)
				for i := range st2.Pilots {
					if st2.Pilots[i].Busy {
						st2.Pilots[i].TaskEnd = at.Add(time.Duration(r.IntN(3600)-60) * time.Second)
					}
				}
				if a := Decide(s, st2, cfg, at); len(a) > 0 {
					t.Fatalf("case %d: held whatever the task ends, but at +%v with others:\n%s", c, at.Sub(now), fmtActs(a))
				}
			}
		}
	}
	t.Logf("%d cases, %d empty: %d held past now (%d for ever), %d whatever the task ends", cases, empty, held, forever, teFree)
	if held < empty/4 {
		t.Errorf("only %d of %d empty decisions hold past now", held, empty)
	}
}

// probeTimes are instants in [from, to) to check a hold at.
func probeTimes(s *cluster.Snapshot, st State, cfg Config, from, to time.Time, r *rand.Rand) []time.Time {
	var fixedTimes []time.Time
	for _, j := range s.Jobs {
		fixedTimes = append(fixedTimes, j.Start, j.End)
	}
	for _, p := range st.Pilots {
		fixedTimes = append(fixedTimes, p.Submitted, p.End, p.TaskEnd)
	}
	offs := []time.Duration{0, cfg.Grace, -cfg.Grace, cfg.RetireHorizon, 30 * time.Second}
	for _, j := range s.Jobs {
		if j.Pending() {
			offs = append(offs, j.TimeLimit, j.TimeLimit+cfg.Grace)
		}
	}
	for _, ej := range st.Jobs {
		minTL := roundUpMinute(max(cfg.MinPilotTime, ej.TaskTime))
		offs = append(offs, cfg.Margin+minTL)
	}
	out := []time.Time{from, to.Add(-time.Nanosecond)}
	for _, x := range fixedTimes {
		if x.IsZero() {
			continue
		}
		for _, o := range offs {
			for _, e := range []time.Duration{-time.Nanosecond, 0, time.Nanosecond} {
				out = append(out, x.Add(-o+e))
			}
		}
	}
	for range 20 {
		out = append(out, from.Add(time.Duration(r.Int64N(int64(to.Sub(from))))))
	}
	return slices.DeleteFunc(out, func(t time.Time) bool { return t.Before(from) || !t.Before(to) })
}
