package policy

import (
	"cmp"
	"slices"
)

// Order puts jobs in the order State.Jobs wants: first come, first served
// (by Submit, then ID), except that an owner's jobs with a deadline take
// that owner's places first, earliest deadline first. A deadline only
// reorders its owner's own jobs: any user may write one, so it cannot be
// a way past other users' jobs.
func Order(jobs []ElasticJob) {
	slices.SortStableFunc(jobs, func(a, b ElasticJob) int {
		if c := a.Submit.Compare(b.Submit); c != 0 {
			return c
		}
		return cmp.Compare(a.ID, b.ID)
	})
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

// deadlineRank: jobs with a deadline before those without.
func deadlineRank(j ElasticJob) int {
	if j.Deadline.IsZero() {
		return 1
	}
	return 0
}
