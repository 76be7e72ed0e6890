package slurm

import (
	"fmt"
	"strconv"
	"strings"
)

// MaxHostlist caps ExpandHostlist so that hostile or broken input such as
// "n[0-999999999]" cannot exhaust memory.
const MaxHostlist = 100_000

// ExpandHostlist expands a Slurm hostlist: "c[1-3]" is c1 c2 c3,
// "n[01-10]" keeps the zero padding, "a[1,3-5]b" mixes lists and ranges,
// "r[1-2]n[1-2]" is a product, and commas outside brackets separate
// names ("c1,g[1-2]"). "" is an empty list. More than MaxHostlist names is
// an error.
func ExpandHostlist(s string) ([]string, error) {
	if s == "" {
		return nil, nil
	}
	if !strings.ContainsAny(s, "[],") { // the common single-node case
		if err := checkHostChars(s); err != nil {
			return nil, err
		}
		return []string{s}, nil
	}
	items, err := splitHostlist(s)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, item := range items {
		if out, err = expandHost(out, item); err != nil {
			return nil, fmt.Errorf("bad hostlist %s: %w", quote(s), err)
		}
	}
	return out, nil
}

// splitHostlist splits at commas outside brackets and checks that brackets
// pair up without nesting.
func splitHostlist(s string) ([]string, error) {
	var items []string
	start, open := 0, false
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '[':
			if open {
				return nil, fmt.Errorf("bad hostlist %s: nested '['", quote(s))
			}
			open = true
		case ']':
			if !open {
				return nil, fmt.Errorf("bad hostlist %s: unmatched ']'", quote(s))
			}
			open = false
		case ',':
			if !open {
				items = append(items, s[start:i])
				start = i + 1
			}
		}
	}
	if open {
		return nil, fmt.Errorf("bad hostlist %s: unclosed '['", quote(s))
	}
	return append(items, s[start:]), nil
}

type numRange struct {
	lo, hi int64
	width  int // digits of lo: "01-10" pads to 2
}

// expandHost appends the names of one item, e.g. "r[1-2]n[01-03]x", to out.
func expandHost(out []string, item string) ([]string, error) {
	if item == "" {
		return nil, fmt.Errorf("empty name")
	}
	// Split into literal text and bracket groups; count the names first
	// so that the cap holds before anything is allocated.
	type seg struct {
		lit    string
		ranges []numRange // nil for a literal
	}
	var segs []seg
	count := int64(1)
	for item != "" {
		i := strings.IndexByte(item, '[')
		if i < 0 {
			segs = append(segs, seg{lit: item})
			break
		}
		if i > 0 {
			segs = append(segs, seg{lit: item[:i]})
		}
		j := strings.IndexByte(item, ']') // splitHostlist checked j > i
		rs, n, err := parseRanges(item[i+1 : j])
		if err != nil {
			return nil, err
		}
		if n > int64(MaxHostlist)/count {
			return nil, fmt.Errorf("more than %d names", MaxHostlist)
		}
		count *= n
		segs = append(segs, seg{ranges: rs})
		item = item[j+1:]
	}
	if int64(len(out))+count > MaxHostlist {
		return nil, fmt.Errorf("more than %d names", MaxHostlist)
	}
	for _, s := range segs {
		if s.ranges == nil {
			if err := checkHostChars(s.lit); err != nil {
				return nil, err
			}
		}
	}

	names := []string{""}
	for _, s := range segs {
		if s.ranges == nil {
			for k := range names {
				names[k] += s.lit
			}
			continue
		}
		next := make([]string, 0, len(names)*int(rangeCount(s.ranges)))
		var buf []byte
		var dbuf [20]byte
		for _, prefix := range names {
			for _, r := range s.ranges {
				for v := r.lo; v <= r.hi; v++ {
					buf = append(buf[:0], prefix...)
					digits := strconv.AppendInt(dbuf[:0], v, 10)
					for pad := r.width - len(digits); pad > 0; pad-- {
						buf = append(buf, '0')
					}
					buf = append(buf, digits...)
					next = append(next, string(buf))
				}
			}
		}
		names = next
	}
	return append(out, names...), nil
}

// parseRanges parses "1,3-5" and returns the ranges and how many numbers
// they hold (at most MaxHostlist+1, to stay clear of overflow).
func parseRanges(s string) ([]numRange, int64, error) {
	var rs []numRange
	var n int64
	for _, part := range strings.Split(s, ",") {
		loS, hiS, isRange := strings.Cut(part, "-")
		if !isRange {
			hiS = loS
		}
		lo, ok1 := parseDigits(loS, 9)
		hi, ok2 := parseDigits(hiS, 9)
		if !ok1 || !ok2 || hi < lo {
			return nil, 0, fmt.Errorf("bad range %s", quote(part))
		}
		rs = append(rs, numRange{lo, hi, len(loS)})
		n += hi - lo + 1
		if n > MaxHostlist {
			return nil, 0, fmt.Errorf("more than %d names", MaxHostlist)
		}
	}
	return rs, n, nil
}

func rangeCount(rs []numRange) int64 {
	var n int64
	for _, r := range rs {
		n += r.hi - r.lo + 1
	}
	return n
}

// checkHostChars rejects spaces and control characters, which no host name
// has and which would only come from garbage.
func checkHostChars(s string) error {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c <= ' ' || c == 0x7f || c == '[' || c == ']' || c == ',' {
			return fmt.Errorf("bad host name %s", quote(s))
		}
	}
	return nil
}
