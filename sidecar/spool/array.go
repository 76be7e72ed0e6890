package spool

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// MaxArrayIndex is the largest array index glean accepts: Slurm's own
// ceiling (MaxArraySize may be at most 4000001, so indices up to 4000000).
const MaxArrayIndex = 4_000_000

// maxRanges bounds the ranges of one array in a record.
const maxRanges = 100_000

// Range is the indices Start, Start+Step, ..., End.
type Range struct {
	Start int `json:"start"`
	End   int `json:"end"`
	Step  int `json:"step"`
}

// Array is a job's array indices, one task each: disjoint ranges in
// ascending order, and the cap on concurrently running tasks (%k; 0 =
// none). Its size does not grow with the number of tasks for the usual
// specs ("0-9999" is one range).
type Array struct {
	Ranges   []Range `json:"ranges"`
	Throttle int     `json:"throttle,omitempty"`
}

func (r Range) count() int { return (r.End-r.Start)/r.Step + 1 }

// Count is the number of indices.
func (a Array) Count() int {
	n := 0
	for _, r := range a.Ranges {
		n += r.count()
	}
	return n
}

// Contains reports whether i is one of the indices.
func (a Array) Contains(i int) bool {
	k := sort.Search(len(a.Ranges), func(k int) bool { return a.Ranges[k].End >= i })
	if k == len(a.Ranges) {
		return false
	}
	r := a.Ranges[k]
	return i >= r.Start && (i-r.Start)%r.Step == 0
}

// Index returns the n-th index (0-based), for handing out tasks in order.
func (a Array) Index(n int) (int, bool) {
	for _, r := range a.Ranges {
		if c := r.count(); n < c {
			return r.Start + n*r.Step, true
		} else {
			n -= c
		}
	}
	return 0, false
}

// String writes the indices in Slurm's form ("0-9,12,20-30:5%4").
func (a Array) String() string {
	var b strings.Builder
	for i, r := range a.Ranges {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(r.Start))
		if r.End != r.Start {
			b.WriteByte('-')
			b.WriteString(strconv.Itoa(r.End))
			if r.Step != 1 {
				b.WriteByte(':')
				b.WriteString(strconv.Itoa(r.Step))
			}
		}
	}
	if a.Throttle > 0 {
		b.WriteByte('%')
		b.WriteString(strconv.Itoa(a.Throttle))
	}
	return b.String()
}

// Validate checks an Array read from a record: ascending, disjoint,
// well-formed ranges within Slurm's index limits.
func (a Array) Validate() error {
	if len(a.Ranges) == 0 {
		return fmt.Errorf("no indices")
	}
	if len(a.Ranges) > maxRanges {
		return fmt.Errorf("more than %d ranges", maxRanges)
	}
	if a.Throttle < 0 {
		return fmt.Errorf("negative task limit %d", a.Throttle)
	}
	prev := -1
	for _, r := range a.Ranges {
		if r.Start < 0 || r.End > MaxArrayIndex || r.Step < 1 || r.End < r.Start || (r.End-r.Start)%r.Step != 0 || r.Start <= prev {
			return fmt.Errorf("bad range %d-%d:%d", r.Start, r.End, r.Step)
		}
		prev = r.End
	}
	return nil
}
