package policy

import (
	"cmp"
	"math/rand"
	"slices"
	"strconv"
	"testing"
	"time"
)

// Order is a permutation in which every owner holds
// exactly the places its jobs hold in FIFO order (by Submit, then ID as a
// number), and
// within them its jobs are by deadline (none last), then FIFO.
func TestOrderKeepsPlaces(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	t0 := time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC)
	for it := 0; it < 2000; it++ {
		n := rng.Intn(12)
		jobs := make([]ElasticJob, n)
		for i := range jobs {
			jobs[i] = ElasticJob{ID: strconv.Itoa(rng.Intn(2000)), Owner: []string{"", "a", "b", "c"}[rng.Intn(4)],
				Submit: t0.Add(time.Duration(rng.Intn(4)) * time.Second)}
			if rng.Intn(2) == 0 {
				jobs[i].Deadline = t0.Add(time.Duration(rng.Intn(3)) * time.Hour)
			}
		}
		fifo := slices.Clone(jobs)
		slices.SortStableFunc(fifo, func(a, b ElasticJob) int {
			x, _ := strconv.Atoi(a.ID)
			y, _ := strconv.Atoi(b.ID)
			return cmp.Or(a.Submit.Compare(b.Submit), cmp.Compare(x, y))
		})
		got := slices.Clone(jobs)
		Order(got)
		for i := range got {
			if got[i].Owner != fifo[i].Owner {
				t.Fatalf("place %d: owner %q, FIFO %q", i, got[i].Owner, fifo[i].Owner)
			}
			if got[i].Owner == "" && !(got[i].ID == fifo[i].ID && got[i].Submit.Equal(fifo[i].Submit) && got[i].Deadline.Equal(fifo[i].Deadline)) {
				t.Fatalf("place %d: an ownerless job moved", i)
			}
		}
		for _, o := range []string{"a", "b", "c"} {
			var mine, want []ElasticJob
			for i := range got {
				if got[i].Owner == o {
					mine, want = append(mine, got[i]), append(want, fifo[i])
				}
			}
			slices.SortStableFunc(want, func(a, b ElasticJob) int {
				if a.Deadline.IsZero() != b.Deadline.IsZero() {
					return cmp.Compare(deadlineRank(a), deadlineRank(b))
				}
				return a.Deadline.Compare(b.Deadline)
			})
			for k := range mine {
				if mine[k].ID != want[k].ID || !mine[k].Submit.Equal(want[k].Submit) || !mine[k].Deadline.Equal(want[k].Deadline) {
					t.Fatalf("owner %s: %v, want %v", o, mine, want)
				}
			}
		}
	}
}
