package submit

import (
	"fmt"
	"math/bits"
	"sort"
	"strconv"
	"strings"

	"github.com/glean-hpc/glean/sidecar/spool"
)

// maxArraySpec bounds the text of an array spec.
const maxArraySpec = 64 << 10

// ParseArray parses an --array spec as Slurm 22.05 accepts it: items
// "N", "N-M" or "N-M:S" separated by commas (empty items are skipped),
// optionally followed by "%K". Numbers may have leading blanks, a '+' and
// leading zeros, as strtol allows; duplicates merge. The result is
// normalised: sorted, overlapping indices merged.
func ParseArray(spec string) (spool.Array, error) {
	if len(spec) > maxArraySpec {
		return spool.Array{}, fmt.Errorf("array spec longer than %d bytes", maxArraySpec)
	}
	body, thr, hasThr := strings.Cut(spec, "%")
	var a spool.Array
	if hasThr && thr != "" {
		n, ok := slurmNumber(thr)
		if !ok {
			return spool.Array{}, fmt.Errorf("bad task limit %q after %%", thr)
		}
		a.Throttle = n
	}
	var rs []spool.Range
	for item := range strings.SplitSeq(body, ",") {
		if item == "" {
			continue
		}
		r, err := parseRange(item)
		if err != nil {
			return spool.Array{}, err
		}
		rs = append(rs, r)
		if len(rs) > spool.MaxArrayIndex {
			return spool.Array{}, fmt.Errorf("too many items")
		}
	}
	if len(rs) == 0 {
		return spool.Array{}, fmt.Errorf("no indices in %q", spec)
	}
	a.Ranges = normalise(rs)
	return a, nil
}

func parseRange(item string) (spool.Range, error) {
	lo, rest, isRange := strings.Cut(item, "-")
	start, ok := slurmNumber(lo)
	if !ok {
		return spool.Range{}, fmt.Errorf("bad index %q", item)
	}
	r := spool.Range{Start: start, End: start, Step: 1}
	if !isRange {
		if strings.Contains(item, ":") {
			return spool.Range{}, fmt.Errorf("a step needs a range, not %q", item)
		}
		return r, nil
	}
	hi, step, hasStep := strings.Cut(rest, ":")
	if r.End, ok = slurmNumber(hi); !ok {
		return spool.Range{}, fmt.Errorf("bad index range %q", item)
	}
	if hasStep {
		if r.Step, ok = slurmNumber(step); !ok || r.Step < 1 {
			return spool.Range{}, fmt.Errorf("bad step in %q", item)
		}
	}
	if r.End < r.Start {
		return spool.Range{}, fmt.Errorf("range %q ends before it starts", item)
	}
	// Keep End on the last index actually in the range.
	r.End = r.Start + (r.End-r.Start)/r.Step*r.Step
	if r.Start == r.End {
		r.Step = 1
	}
	return r, nil
}

// slurmNumber parses a non-negative index as strtol would accept it in
// Slurm's array parser, bounded by spool.MaxArrayIndex.
func slurmNumber(s string) (int, bool) {
	s = strings.TrimLeft(s, " \t\n\v\f\r")
	s = strings.TrimPrefix(s, "+")
	if s == "" || len(s) > 12 {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.Atoi(s)
	if err != nil || n > spool.MaxArrayIndex {
		return 0, false
	}
	return n, true
}

// normalise sorts ranges and merges duplicates. Disjoint ranges (the
// usual case) are only sorted, with touching unit-step ranges joined;
// overlapping ones are expanded into a bitmap (at most spool.MaxArrayIndex+1
// bits) and compressed again.
func normalise(rs []spool.Range) []spool.Range {
	sort.Slice(rs, func(i, j int) bool {
		if rs[i].Start != rs[j].Start {
			return rs[i].Start < rs[j].Start
		}
		return rs[i].End < rs[j].End
	})
	disjoint := true
	for i := 1; i < len(rs); i++ {
		if rs[i].Start <= rs[i-1].End {
			disjoint = false
			break
		}
	}
	if disjoint {
		out := []spool.Range{rs[0]}
		for _, r := range rs[1:] {
			last := &out[len(out)-1]
			if last.Step == 1 && r.Step == 1 && r.Start == last.End+1 {
				last.End = r.End
				continue
			}
			out = append(out, r)
		}
		return out
	}
	lo, hi := rs[0].Start, 0
	for _, r := range rs {
		hi = max(hi, r.End)
	}
	set := make([]uint64, (hi-lo)/64+1)
	for _, r := range rs {
		for i := r.Start; i <= r.End; i += r.Step {
			set[(i-lo)/64] |= 1 << ((i - lo) % 64)
		}
	}
	var idx []int
	for w, word := range set {
		for word != 0 {
			b := bits.TrailingZeros64(word)
			idx = append(idx, lo+w*64+b)
			word &= word - 1
		}
	}
	return compress(idx)
}

// compress turns sorted distinct indices into ranges with a constant step.
func compress(idx []int) []spool.Range {
	var out []spool.Range
	for i := 0; i < len(idx); {
		r := spool.Range{Start: idx[i], End: idx[i], Step: 1}
		j := i + 1
		if j < len(idx) {
			step := idx[j] - idx[i]
			k := j
			for k+1 < len(idx) && idx[k+1]-idx[k] == step {
				k++
			}
			// Use a stepped range for 3+ indices, or 2 consecutive ones.
			if k > j || step == 1 {
				r.End, r.Step = idx[k], step
				j = k + 1
			}
		}
		out = append(out, r)
		i = j
	}
	return out
}
