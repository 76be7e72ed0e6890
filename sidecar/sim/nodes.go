package sim

import (
	"cmp"
	"math/bits"
	"slices"
)

// bitset is a set of node indices, 64 to a word. Node i is named c<i+1>.
type bitset []uint64

func newBitset(n int) bitset { return make(bitset, (n+63)/64) }

func (b bitset) has(i int) bool { return b[i/64]&(1<<(i%64)) != 0 }

// setRange sets the n nodes from first on.
func (b bitset) setRange(first, n int) {
	for n > 0 {
		w, o := uint(first)/64, uint(first)%64
		k := min(uint(n), 64-o)
		b[w] |= rangeMask(o, k)
		first += int(k)
		n -= int(k)
	}
}

// clearRange clears the n nodes from first on.
func (b bitset) clearRange(first, n int) {
	for n > 0 {
		w, o := uint(first)/64, uint(first)%64
		k := min(uint(n), 64-o)
		b[w] &^= rangeMask(o, k)
		first += int(k)
		n -= int(k)
	}
}

// rangeMask has bits o..o+k-1 set; 0 < k <= 64-o. Masking the shift
// counts to 0..63, which they are, spares the compiler's tests for larger
// ones; the indices above are unsigned for the same reason: first is
// never negative.
func rangeMask(o, k uint) uint64 { return ^uint64(0) >> ((64 - k) & 63) << (o & 63) }

// setAnd makes b the nodes in both x and y.
func (b bitset) setAnd(x, y bitset) {
	x, y = x[:len(b)], y[:len(b)]
	for i := range b {
		b[i] = x[i] & y[i]
	}
}

// andCount counts the nodes in both b and o.
func (b bitset) andCount(o bitset) int {
	o = o[:len(b)]
	n := 0
	for i := range b {
		n += bits.OnesCount64(b[i] & o[i])
	}
	return n
}

func (b bitset) count() int {
	n := 0
	for _, w := range b {
		n += bits.OnesCount64(w)
	}
	return n
}

// The loops below reslice o to b's length so that the compiler drops the
// bounds checks; copyFrom is a loop because a machine is a few words and
// copy's call to memmove costs more than the copy.

func (b bitset) copyFrom(o bitset) {
	o = o[:len(b)]
	for i := range b {
		b[i] = o[i]
	}
}

func (b bitset) and(o bitset) {
	o = o[:len(b)]
	for i := range b {
		b[i] &= o[i]
	}
}

func (b bitset) or(o bitset) {
	o = o[:len(b)]
	for i := range b {
		b[i] |= o[i]
	}
}

func (b bitset) andNot(o bitset) {
	o = o[:len(b)]
	for i := range b {
		b[i] &^= o[i]
	}
}

// subsetOf reports whether every node of b is in o.
func (b bitset) subsetOf(o bitset) bool {
	o = o[:len(b)]
	for i := range b {
		if b[i]&^o[i] != 0 {
			return false
		}
	}
	return true
}

// subsetOfBoth reports whether every node of b is in both o and p.
func (b bitset) subsetOfBoth(o, p bitset) bool {
	o, p = o[:len(b)], p[:len(b)]
	for i := range b {
		if b[i]&^(o[i]&p[i]) != 0 {
			return false
		}
	}
	return true
}

// addSpans adds the nodes of spans that are in mask and returns how many
// were not in b before.
func (b bitset) addSpans(spans []span, mask bitset) int {
	added := 0
	for _, sp := range spans {
		first, n := int(sp.first), int(sp.n)
		for n > 0 {
			w, o := uint(first)/64, uint(first)%64
			k := min(uint(n), 64-o)
			m := rangeMask(o, k) & mask[w] &^ b[w]
			b[w] |= m
			added += bits.OnesCount64(m)
			first += int(k)
			n -= int(k)
		}
	}
	return added
}

// span is a run of consecutive nodes. A job's allocation is a few spans:
// select/linear prefers consecutive nodes, so this is compact even where
// the unit is a processor of a 9,216-processor machine.
type span struct{ first, n int32 }

// runs appends the maximal runs of consecutive nodes in b to dst. Best
// fit calls it for every start and reservation, so it finds each word's
// first and last nodes of runs with shifts and walks only those bits.
func (b bitset) runs(dst []span) []span {
	first, open := 0, false // open: a run goes on from the word before
	for w, x := range b {
		var carry, next uint64
		if open {
			carry = 1
		}
		if w+1 < len(b) {
			next = b[w+1] << 63
		}
		starts := x &^ (x<<1 | carry) // nodes whose predecessor is not in b
		ends := x &^ (x>>1 | next)    // nodes whose successor is not in b
		for ends != 0 {
			if !open {
				first = w*64 + bits.TrailingZeros64(starts)
				starts &= starts - 1
			}
			last := w*64 + bits.TrailingZeros64(ends)
			ends &= ends - 1
			dst = append(dst, span{int32(first), int32(last + 1 - first)})
			open = false
		}
		if starts != 0 {
			first, open = w*64+bits.TrailingZeros64(starts), true
		}
	}
	return dst
}

// bestFit picks n nodes of avail as Slurm's select/linear does (_job_test
// in select_linear.c): among the runs of consecutive available nodes it
// takes the smallest run that holds all the nodes still needed (the first
// of equals), else the largest run whole (the first of equals), and
// repeats; within a run it takes the lowest nodes. It appends the chosen
// spans to dst and reports false if avail holds fewer than n nodes. runs
// is scratch space, returned for reuse.
func bestFit(avail bitset, n int, runs, dst []span) ([]span, []span, bool) {
	runs = avail.runs(runs[:0])
	for n > 0 {
		best, fits := -1, false
		for i, r := range runs {
			if r.n == 0 {
				continue
			}
			suff := int(r.n) >= n
			if best < 0 || suff && !fits || suff && r.n < runs[best].n || !suff && !fits && r.n > runs[best].n {
				best, fits = i, suff
			}
		}
		if best < 0 {
			return runs, dst, false
		}
		k := min(int(runs[best].n), n)
		dst = append(dst, span{runs[best].first, int32(k)})
		runs[best].n = 0
		n -= k
	}
	return runs, dst, true
}

// sortSpans orders an allocation by node, for stable host lists. Most
// allocations are a span or two: those skip the sort's calls.
func sortSpans(a []span) {
	if len(a) > 8 {
		slices.SortFunc(a, func(x, y span) int { return cmp.Compare(x.first, y.first) })
		return
	}
	for i := 1; i < len(a); i++ {
		for k := i; k > 0 && a[k].first < a[k-1].first; k-- {
			a[k], a[k-1] = a[k-1], a[k]
		}
	}
}
