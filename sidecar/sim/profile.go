package sim

import (
	"math"
	"slices"
	"time"
)

// step says that free nodes are free from t until the next step's t; the
// last step lasts forever.
type step struct {
	t    time.Duration
	free int
}

// profile is the planned count of free nodes over time, from now on.
type profile struct {
	steps []step
}

func (p *profile) reset(now time.Duration, size int) {
	p.steps = append(p.steps[:0], step{t: now, free: size})
}

// trim forgets the past: the first step starts at now.
func (p *profile) trim(now time.Duration) {
	i := 0
	for i+1 < len(p.steps) && p.steps[i+1].t <= now {
		i++
	}
	p.steps = slices.Delete(p.steps, 0, i)
	if len(p.steps) > 0 {
		p.steps[0].t = now
	}
}

// earliest is the first time at or after now from which nodes stay free
// for d (forever when d is Unlimited).
func (p *profile) earliest(now time.Duration, nodes int, d time.Duration) time.Duration {
	for i := 0; i < len(p.steps); {
		if p.steps[i].free < nodes {
			i++
			continue
		}
		t := max(p.steps[i].t, now)
		end := addSat(t, d)
		k := i + 1
		for k < len(p.steps) && p.steps[k].t < end && p.steps[k].free >= nodes {
			k++
		}
		if k == len(p.steps) || p.steps[k].t >= end {
			return t
		}
		i = k + 1 // step k is too full: start after it
	}
	return math.MaxInt64 // never: behind an unlimited job or reservation
}

// split makes sure a step starts at t and returns its index.
func (p *profile) split(t time.Duration) int {
	i, found := slices.BinarySearchFunc(p.steps, t, func(s step, t time.Duration) int {
		switch {
		case s.t < t:
			return -1
		case s.t > t:
			return 1
		}
		return 0
	})
	if found {
		return i
	}
	// i > 0: the first step starts at now and t is not earlier.
	p.steps = slices.Insert(p.steps, i, step{t: t, free: p.steps[i-1].free})
	return i
}

// add changes the free count by delta over [from, to); to == MaxInt64 is
// forever.
func (p *profile) add(from, to time.Duration, delta int) {
	if from >= to {
		return
	}
	i := p.split(from)
	k := len(p.steps)
	if to != math.MaxInt64 {
		k = p.split(to)
	}
	for ; i < k; i++ {
		p.steps[i].free += delta
	}
	p.merge()
}

// merge drops steps that do not change the count, keeping the profile as
// small as the plan.
func (p *profile) merge() {
	k := 0
	for i, s := range p.steps {
		if i > 0 && s.free == p.steps[k-1].free {
			continue
		}
		p.steps[k] = s
		k++
	}
	p.steps = p.steps[:k]
}
