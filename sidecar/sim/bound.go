package sim

import (
	"cmp"
	"slices"
	"time"

	"github.com/glean-hpc/glean/sidecar/workload"
)

// HarvestBound is node time that even an oracle loses on r's schedule: one
// that knows every arrival and every end in advance, starts a pilot the
// instant a node is free and never kills an attempt. Tasks are whole (the
// conventions: a task is not split, a killed attempt is waste), so in a gap
// of G on one node between two holders that are not elastic work (regular
// jobs; in SlurmOnly the rigid calibration jobs too) at most fill(G) of it
// can run tasks, fill(G) being the largest sum of task lengths (any mix of
// the run's task lengths, each as often as wanted) that fits in G. Of the
// gap's time while elastic tasks were waiting (r.Waiting) and within the
// window, at least what exceeds fill(G) is lost. The sum over all gaps is a
// lower bound on the harvest lost, for any policy that leaves the holders
// where r has them; with an unlimited backlog (waiting the whole window) it
// is a lower bound on the effective utilization lost. It is in
// node-seconds (float64: a time.Duration overflows at 2.56 million
// node-hours).
func HarvestBound(r *ElasticResult) float64 {
	W := r.LastSubmit + ThesisTail
	lens := taskLengths(r)
	if len(lens) == 0 {
		return 0
	}
	type iv struct{ a, b time.Duration }
	held := make([][]iv, r.Nodes)
	for i := range r.Sched.Jobs {
		j := &r.Sched.Jobs[i]
		if j.End <= j.Start || r.Kinds[i] == workload.Calibration && r.Mode != SlurmOnly {
			continue
		}
		for _, n := range allocNodes(j.alloc) {
			held[n] = append(held[n], iv{j.Start, j.NodeEnd(n)})
		}
	}
	// The waiting periods as disjoint sorted intervals within the window.
	var wait []iv
	for _, w := range r.Waiting {
		if a, b := max(w.Start, 0), min(w.End, W); b > a {
			wait = append(wait, iv{a, b})
		}
	}
	slices.SortFunc(wait, func(x, y iv) int { return cmp.Compare(x.a, y.a) })
	var merged []iv
	for _, w := range wait {
		if k := len(merged) - 1; k >= 0 && w.a <= merged[k].b {
			merged[k].b = max(merged[k].b, w.b)
			continue
		}
		merged = append(merged, w)
	}
	waitIn := func(a, b time.Duration) time.Duration {
		var t time.Duration
		for _, w := range merged {
			if s, e := max(w.a, a), min(w.b, b); e > s {
				t += e - s
			}
		}
		return t
	}
	f := newFiller(lens)
	var lost float64
	for n := range held {
		hs := held[n]
		slices.SortFunc(hs, func(x, y iv) int { return cmp.Compare(x.a, y.a) })
		prev := time.Duration(0)
		for _, h := range append(hs, iv{maxDuration, maxDuration}) {
			// A gap that reaches a task beyond the window loses nothing in
			// it: tasks back to back from its start cover the window.
			if h.a > prev && prev < W && h.a < W+lens[0] {
				if x := waitIn(prev, h.a) - f.fill(h.a-prev); x > 0 {
					lost += x.Seconds()
				}
			}
			prev = max(prev, h.b)
		}
	}
	return lost
}

const maxDuration = time.Duration(1<<63 - 1)

// taskLengths are the distinct lengths of r's elastic tasks, whole seconds
// down (shorter tasks only help the oracle): the calibration jobs' (not in
// SlurmOnly, where they are rigid jobs) and the backlog's.
func taskLengths(r *ElasticResult) []time.Duration {
	seen := map[time.Duration]bool{}
	var out []time.Duration
	add := func(l time.Duration) {
		if l = l.Truncate(time.Second); l > 0 && !seen[l] {
			seen[l] = true
			out = append(out, l)
		}
	}
	if r.Backlog != nil {
		add(r.Backlog.TaskTime)
	}
	if r.Mode != SlurmOnly {
		for _, t := range r.Tasks {
			if t.Completed && t.Count == 1 && t.Job != backlogID {
				add(t.End - t.Start)
			}
		}
	}
	slices.Sort(out)
	return out
}

// filler answers fill(G): the largest sum of the lengths (each used any
// number of times) not above G, by an unbounded knapsack over multiples of
// the lengths' greatest common divisor, grown as needed.
type filler struct {
	lens []int64 // in units of g
	g    time.Duration
	best []bool // best[k]: k units can be filled exactly
	max  []int  // max[k]: the largest fillable <= k
}

func newFiller(lens []time.Duration) *filler {
	g := lens[0]
	for _, l := range lens[1:] {
		a, b := g, l
		for b != 0 {
			a, b = b, a%b
		}
		g = a
	}
	f := &filler{g: g, best: []bool{true}, max: []int{0}}
	for _, l := range lens {
		f.lens = append(f.lens, int64(l/g))
	}
	return f
}

func (f *filler) fill(G time.Duration) time.Duration {
	k := int(G / f.g)
	for n := len(f.best); n <= k; n++ {
		ok := false
		for _, l := range f.lens {
			if int64(n) >= l && f.best[n-int(l)] {
				ok = true
				break
			}
		}
		f.best = append(f.best, ok)
		m := f.max[n-1]
		if ok {
			m = n
		}
		f.max = append(f.max, m)
	}
	return time.Duration(f.max[k]) * f.g
}
