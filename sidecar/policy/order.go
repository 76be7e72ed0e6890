package policy

import (
	"cmp"
	"slices"
)

// Order puts jobs in the order State.Jobs wants: first come, first served
// (by Submit, then ID), except that an owner's jobs with a deadline take
// that owner's places first, earliest deadline first. A deadline only
// reorders its owner's own jobs: any user may write one, so it cannot be
// a way past other users' jobs. The daemon and the simulator both call it
// every round, so it allocates only when some job has a deadline.
func Order(jobs []ElasticJob) {
	slices.SortStableFunc(jobs, func(a, b ElasticJob) int {
		if c := a.Submit.Compare(b.Submit); c != 0 {
			return c
		}
		return compareIDs(a.ID, b.ID)
	})
	if !slices.ContainsFunc(jobs, func(j ElasticJob) bool { return !j.Deadline.IsZero() && j.Owner != "" }) {
		return
	}
	byOwner := map[string][]int{} // an owner's places, in order
	for i := range jobs {
		if jobs[i].Owner != "" {
			byOwner[jobs[i].Owner] = append(byOwner[jobs[i].Owner], i)
		}
	}
	for _, places := range byOwner {
		own := make([]ElasticJob, len(places))
		for k, i := range places {
			own[k] = jobs[i]
		}
		slices.SortStableFunc(own, func(a, b ElasticJob) int {
			switch {
			case a.Deadline.IsZero() || b.Deadline.IsZero():
				return cmp.Compare(deadlineRank(a), deadlineRank(b))
			default:
				return a.Deadline.Compare(b.Deadline)
			}
		})
		for k, i := range places {
			jobs[i] = own[k]
		}
	}
}

// compareIDs breaks a tie of submission instants: the shorter id first,
// then by text. Numbers without leading zeros come in numeric order ("999"
// before "1000", which a plain string comparison reverses; the simulator's
// "e9" before "e10"); the daemon's record names (<uid>.<entry id>, the entry
// id of fixed width and time-ordered) by uid as a number, then entry.
func compareIDs(a, b string) int {
	return cmp.Or(cmp.Compare(len(a), len(b)), cmp.Compare(a, b))
}

// deadlineRank: jobs with a deadline before those without.
func deadlineRank(j ElasticJob) int {
	if j.Deadline.IsZero() {
		return 1
	}
	return 0
}
