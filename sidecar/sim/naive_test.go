package sim

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/glean-hpc/glean/sidecar/workload"
)

// naiveEASY is EASY written the slow, obvious way: at each instant, end
// jobs, admit jobs, then repeat {start the head while it fits; compute the
// shadow time and extra nodes from scratch; start the first later job that
// may backfill} until nothing starts. The engine must agree job for job.
func naiveEASY(w *workload.Workload) []time.Duration {
	type nj struct {
		id, p              int
		submit, run, est   time.Duration
		start, end, estEnd time.Duration
	}
	js := make([]nj, len(w.Jobs))
	for i, j := range w.Jobs {
		est := j.Run
		if j.Limit > 0 {
			est = max(j.Limit, j.Run)
		}
		js[i] = nj{id: j.ID, p: j.Nodes, submit: j.Submit, run: j.Run, est: est, start: -1}
	}
	order := make([]int, len(js))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		if js[a].submit != js[b].submit {
			return int(js[a].submit - js[b].submit)
		}
		return js[a].id - js[b].id
	})
	free, next := w.Nodes, 0
	var queue, running []int
	for next < len(order) || len(running) > 0 {
		t := time.Duration(1 << 62)
		if next < len(order) {
			t = js[order[next]].submit
		}
		for _, r := range running {
			t = min(t, js[r].end)
		}
		running = slices.DeleteFunc(running, func(r int) bool {
			if js[r].end == t {
				free += js[r].p
				return true
			}
			return false
		})
		for next < len(order) && js[order[next]].submit == t {
			queue = append(queue, order[next])
			next++
		}
		start := func(q int) {
			i := queue[q]
			js[i].start, js[i].end, js[i].estEnd = t, t+js[i].run, t+js[i].est
			free -= js[i].p
			running = append(running, i)
			queue = slices.Delete(queue, q, q+1)
		}
		for {
			for len(queue) > 0 && js[queue[0]].p <= free {
				start(0)
			}
			if len(queue) < 2 {
				break
			}
			rs := slices.Clone(running)
			slices.SortFunc(rs, func(a, b int) int {
				if js[a].estEnd != js[b].estEnd {
					return int(js[a].estEnd - js[b].estEnd)
				}
				if js[a].p != js[b].p {
					return js[a].p - js[b].p
				}
				return js[a].id - js[b].id
			})
			avail, shadow, extra := free, time.Duration(0), 0
			for _, r := range rs {
				avail += js[r].p
				if avail >= js[queue[0]].p {
					shadow, extra = js[r].estEnd, avail-js[queue[0]].p
					break
				}
			}
			started := false
			for q := 1; q < len(queue); q++ {
				j := js[queue[q]]
				if j.p <= free && (t+j.est <= shadow || j.p <= extra) {
					start(q)
					started = true
					break
				}
			}
			if !started {
				break
			}
		}
	}
	starts := make([]time.Duration, len(js))
	for i := range js {
		starts[i] = js[i].start
	}
	return starts
}

// randomWorkload makes many ties: few distinct sizes, run times and limits
// on a coarse clock.
func randomWorkload(rng *rand.Rand, n, nodes int) *workload.Workload {
	w := &workload.Workload{Name: "random", Nodes: nodes}
	var t time.Duration
	for i := range n {
		t += time.Duration(rng.IntN(3)) * 10 * time.Second
		run := time.Duration(1+rng.IntN(6)) * 10 * time.Second
		j := workload.Job{ID: i + 1, Submit: t, Run: run, Nodes: 1 + rng.IntN(nodes)}
		if rng.IntN(3) > 0 {
			j.Limit = time.Duration(1+rng.IntN(8)) * 10 * time.Second
		}
		w.Jobs = append(w.Jobs, j)
	}
	return w
}

func TestEASYMatchesNaive(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for k := range 300 {
		w := randomWorkload(rng, 40, 2+rng.IntN(14))
		r, err := Run(w, Config{Policy: EASY, Estimates: ArchiveEstimates})
		if err != nil {
			t.Fatal(err)
		}
		want := naiveEASY(w)
		for i := range want {
			if r.Jobs[i].Start != want[i] {
				t.Fatalf("workload %d, job %d: start %v, naive %v", k, w.Jobs[i].ID, r.Jobs[i].Start, want[i])
			}
		}
	}
	for _, f := range []string{"lublin_256_new2.swf.gz", "KTH-SP2-1996-2.1-cln.swf.gz"} {
		if testing.Short() {
			break
		}
		w := loadSWF(t, f)
		r, err := Run(w, Config{Policy: EASY, Estimates: ArchiveEstimates})
		if err != nil {
			t.Fatal(err)
		}
		want := naiveEASY(w)
		for i := range want {
			if r.Jobs[i].Start != want[i] {
				t.Fatalf("%s job %d: start %v, naive %v", f, w.Jobs[i].ID, r.Jobs[i].Start, want[i])
			}
		}
	}
}
