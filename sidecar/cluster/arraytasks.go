package cluster

import (
	"cmp"
	"errors"
	"iter"
	"slices"
	"strconv"
	"strings"
)

// ArrayCut ends an array index expression that Slurm cut short: libslurm
// (xlate_array_task_str, 22.05) prints a pending array's indices (squeue
// %K, scontrol's ArrayTaskId) into SLURM_BITSTR_LEN bytes, 64 unless that
// variable says otherwise, and replaces the end of a longer expression
// with "...": "2-3,5,7,11,...,67,71,73,7...", the throttle after it
// ("...%4"). glean's runner sets SLURM_BITSTR_LEN=0 (no limit), so a cut
// expression means someone else's environment or an older runner.
const ArrayCut = "..."

// ArrayIndices is a parsed array index expression as Slurm prints it:
// "7", "0-9", "2-3,5,7", "0-999:3", any of them with a throttle ("%2"),
// and possibly cut short (ArrayCut). Slurm prints the elements ascending
// and disjoint; an expression a user wrote ("--dependency=5_[7,1-3]")
// need not be.
type ArrayIndices struct {
	spans    []indexSpan
	sorted   bool // spans ascending and disjoint, as Slurm prints them: Has searches
	top      int  // the highest index shown, -1 if none
	Throttle int  // %N, 0 if none
	Cut      bool // Slurm cut the expression: indices above top are unknown
}

type indexSpan struct{ lo, hi, step int }

// ParseArrayIndices parses an array index expression. Of a cut expression
// it keeps only the elements shown whole: the last one before ArrayCut may
// have lost digits ("7..." of "79"), so it is dropped, and every index
// above the last kept one is unknown.
func ParseArrayIndices(expr string) (ArrayIndices, error) {
	a := ArrayIndices{top: -1, sorted: true}
	body, throttle, hasThrottle := strings.Cut(expr, "%")
	if hasThrottle {
		n, err := strconv.Atoi(throttle)
		if err != nil || n < 1 || strings.TrimLeft(throttle, "0123456789") != "" {
			return ArrayIndices{}, errors.New("bad throttle")
		}
		a.Throttle = n
	}
	if b, cut := strings.CutSuffix(body, ArrayCut); cut {
		a.Cut = true
		body = b[:max(strings.LastIndexByte(b, ','), 0)] // drop the element that may be partial
		if body == "" {
			return a, nil // nothing shown whole
		}
	}
	for part := range strings.SplitSeq(body, ",") {
		s, err := parseSpan(part)
		if err != nil {
			return ArrayIndices{}, err
		}
		a.sorted = a.sorted && s.lo > a.top
		a.top = max(a.top, s.hi)
		a.spans = append(a.spans, s)
	}
	return a, nil
}

// parseSpan parses "a", "a-b" or "a-b:s".
func parseSpan(s string) (indexSpan, error) {
	num := func(s string) (int, bool) {
		n, err := strconv.Atoi(s)
		return n, err == nil && n >= 0 && s != "" && s[0] != '+' && s[0] != '-'
	}
	r, step, hasStep := strings.Cut(s, ":")
	lo, hi, isRange := strings.Cut(r, "-")
	sp := indexSpan{step: 1}
	var ok bool
	if sp.lo, ok = num(lo); !ok {
		return indexSpan{}, errors.New("bad index " + strconv.Quote(s))
	}
	sp.hi = sp.lo
	if isRange {
		if sp.hi, ok = num(hi); !ok || sp.hi < sp.lo {
			return indexSpan{}, errors.New("bad range " + strconv.Quote(s))
		}
	}
	if hasStep {
		if sp.step, ok = num(step); !ok || sp.step < 1 || !isRange {
			return indexSpan{}, errors.New("bad step " + strconv.Quote(s))
		}
		sp.hi -= (sp.hi - sp.lo) % sp.step // the last index actually in it
	}
	return sp, nil
}

// Has reports whether index i is in the set. known is false when Slurm
// cut the expression before it could show whether i is in it: then i
// may or may not be an index of the array.
func (a ArrayIndices) Has(i int) (in, known bool) {
	spans := a.spans
	if a.sorted { // the one span that may hold i
		k, _ := slices.BinarySearchFunc(spans, i, func(s indexSpan, i int) int { return cmp.Compare(s.hi, i) })
		spans = spans[k:min(k+1, len(spans))]
	}
	for _, s := range spans {
		if i >= s.lo && i <= s.hi && (i-s.lo)%s.step == 0 {
			return true, true
		}
	}
	if a.Cut && i > a.top {
		return false, false
	}
	return false, true
}

// All yields the indices shown, span by span (an index in two spans of a
// user's expression twice).
func (a ArrayIndices) All() iter.Seq[int] {
	return func(yield func(int) bool) {
		for _, s := range a.spans {
			for i := s.lo; i <= s.hi; i += s.step {
				if !yield(i) {
					return
				}
			}
		}
	}
}

// Count is the number of indices shown, at most limit. exact is false for
// a cut expression, which stands for more than it shows.
func (a ArrayIndices) Count(limit int) (n int, exact bool) {
	for _, s := range a.spans {
		n += (s.hi-s.lo)/s.step + 1
		if n >= limit {
			return limit, !a.Cut
		}
	}
	return n, !a.Cut
}
