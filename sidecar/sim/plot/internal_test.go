package plot

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// TestResampleKeepsNodeHours checks that the averaging used for long step
// functions keeps every kind's node-hours and covers the same range.
func TestResampleKeepsNodeHours(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	var steps []Step
	at := time.Duration(0)
	for range 10_000 {
		d := time.Duration(1+rng.IntN(3600)) * time.Second
		s := Step{Start: at, End: at + d}
		used := 0
		for k := range Kind(NumKinds) {
			if k != Idle {
				s.Nodes[k] = rng.IntN(5)
				used += s.Nodes[k]
			}
		}
		s.Nodes[Idle] = 20 - used
		steps = append(steps, s)
		at += d
	}
	a := resample(steps, at, 777)
	if len(a.xs) != 778 || a.xs[0] != 0 || math.Abs(a.xs[777]-at.Hours()) > 1e-9 {
		t.Fatalf("range %v..%v with %d boundaries, want 0..%v", a.xs[0], a.xs[len(a.xs)-1], len(a.xs), at.Hours())
	}
	for k := range Kind(NumKinds) {
		var want, got float64
		for _, s := range steps {
			want += float64(s.Nodes[k]) * (s.End - s.Start).Hours()
		}
		for i, y := range a.ys {
			got += y[k] * (a.xs[i+1] - a.xs[i])
		}
		if math.Abs(got-want) > 1e-6*want {
			t.Errorf("%v: %v node-hours after resampling, %v before", k, got, want)
		}
	}
	for i, y := range a.ys {
		var sum float64
		for _, v := range y {
			sum += v
		}
		if math.Abs(sum-20) > 1e-9 {
			t.Fatalf("bucket %d adds up to %v nodes, want 20", i, sum)
		}
	}
}

func TestLayerRing(t *testing.T) {
	a := areaOf([]Step{
		{Start: 0, End: time.Hour, Nodes: [NumKinds]int{Regular: 1, Idle: 3}},
		{Start: time.Hour, End: 2 * time.Hour, Nodes: [NumKinds]int{Regular: 1, Pilot: 2, Idle: 1}},
		{Start: 2 * time.Hour, End: 3 * time.Hour, Nodes: [NumKinds]int{Regular: 3, Idle: 1}},
	})
	// Regular alone: 1, 1, 3; the first two steps merge into one edge.
	got := layerRing(a, Regular)
	want := []xy{{0, 0}, {0, 1}, {2, 1}, {2, 3}, {3, 3}, {3, 0}}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("got %v, want %v", got, want)
		}
	}
	// Up to pilots: 1, 3, 3.
	got = layerRing(a, Pilot)
	want = []xy{{0, 0}, {0, 1}, {1, 1}, {1, 3}, {3, 3}, {3, 0}}
	for i := range want {
		if i >= len(got) || got[i] != want[i] {
			t.Fatalf("got %v, want %v", got, want)
		}
	}
}

func TestMeans(t *testing.T) {
	m := means([]Step{
		{Start: 0, End: time.Hour, Nodes: [NumKinds]int{Regular: 4, Idle: 6}},
		{Start: time.Hour, End: 3 * time.Hour, Nodes: [NumKinds]int{Regular: 1, Pilot: 9}},
	})
	if m[Regular] != 2 || m[Pilot] != 6 || m[Idle] != 2 {
		t.Errorf("means = %v", m)
	}
}
