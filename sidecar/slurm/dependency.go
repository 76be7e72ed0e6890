package slurm

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/glean-hpc/glean/sidecar/cluster"
)

// Dependency is a --dependency value as slurmctld reads it (22.05,
// update_job_dependency): conditions joined by ',' (all must hold) or by
// '?' (any one suffices; one '?' makes them all alternatives, as in
// Slurm), each "type:id[:id...]" ("afterok:20:21"), type matched without
// regard to case, or the old form, job ids alone joined by ',' (afterany).
// An id is a job ("20", for an array all its elements), an array element
// ("20_3"), every element ("20_*"), or some ("20_[1-3,7]", which Slurm
// expands into one id per element before it parses the rest). An id may
// carry "+minutes" (a delay after the start, for after) and "(state)" as
// scontrol prints it, of which only "(failed)" means anything: the
// condition has already failed.
type Dependency struct {
	Any   bool // '?': any one condition suffices
	Conds []DepCond
}

// DepCond is one condition: a type and one job, element or set of elements.
type DepCond struct {
	Type string // lower case: after, afterany, afterok, afternotok, aftercorr, afterburstbuffer, expand, singleton
	Job  string // the job id ("" for singleton), for an element the array's
	// Tasks are the elements named ("20_3", "20_[1-3]"); nil: the job
	// itself, or every element of an array ("20", "20_*").
	Tasks  *cluster.ArrayIndices
	Minute int  // +minutes; 0 if none
	Failed bool // "(failed)"
}

// MaxDepElements bounds the array elements one dependency names by index
// ("5_[0-9999]"): gleand judges each, every round the job waits. Slurm
// takes up to MaxArraySize (1001 by default); more than this are better
// named as the whole array ("5").
const MaxDepElements = 10000

// depTypes are the types slurmctld 22.05 knows.
var depTypes = []string{"after", "afterany", "afterok", "afternotok", "aftercorr", "afterburstbuffer", "expand", "singleton"}

// ParseDependency parses a --dependency value. It refuses what slurmctld
// refuses with "Job dependency problem" and accepts what it accepts,
// except that it cannot tell whether an id names a job that exists, it
// refuses more than MaxDepElements elements named by index, and an
// element set in brackets in the old form ("5,6_[1]").
func ParseDependency(s string) (Dependency, error) {
	var d Dependency
	if s == "" {
		return d, errors.New("empty")
	}
	rest, elements := s, 0
	for rest != "" {
		item, sep, after := cutOutside(rest, ",?")
		if sep == '?' {
			d.Any = true
		}
		if sep != 0 && after == "" {
			return Dependency{}, fmt.Errorf("nothing after %q", sep)
		}
		rest = after
		if strings.EqualFold(item, "singleton") || strings.HasPrefix(strings.ToLower(item), "singleton(") {
			c := DepCond{Type: "singleton"}
			var err error
			if c.Failed, err = depState(item[len("singleton"):]); err != nil {
				return Dependency{}, err
			}
			d.Conds = append(d.Conds, c)
			continue
		}
		typ, ids, ok := strings.Cut(item, ":")
		if !ok {
			// The old form, a job id alone (afterany): only where no ':'
			// follows (Slurm looks in the rest, after it expanded each
			// "_[...]" into ids joined by ':'), followed by ',' or the end,
			// without delay or state.
			if sep == '?' || strings.ContainsAny(item, "[+(") || strings.ContainsAny(rest, ":[") ||
				item == "" || item[0] < '0' || item[0] > '9' {
				return Dependency{}, fmt.Errorf("%q: not type:jobid", item)
			}
			typ, ids = "afterany", item
		}
		typ = strings.ToLower(typ)
		if !slices.Contains(depTypes, typ) || typ == "singleton" {
			return Dependency{}, fmt.Errorf("unknown dependency type %q", typ)
		}
		for _, id := range splitIDs(ids) {
			c, err := parseDepID(id)
			if err != nil {
				return Dependency{}, fmt.Errorf("%s: %w", typ, err)
			}
			c.Type = typ
			d.Conds = append(d.Conds, c)
			if c.Tasks != nil {
				n, _ := c.Tasks.Count(MaxDepElements + 1)
				if elements += n; elements > MaxDepElements {
					return Dependency{}, fmt.Errorf("more than %d array elements named by index: name the whole array (%s:%s) instead", MaxDepElements, typ, c.Job)
				}
			}
		}
	}
	return d, nil
}

// cutOutside cuts s at the first of seps outside "[...]" and returns what
// is before, the separator (0 at the end) and the rest: a ',' or a ':'
// (a step) inside the brackets of "5_[1,3-9:2]" belongs to the elements.
func cutOutside(s, seps string) (before string, sep byte, rest string) {
	depth := 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '[':
			depth++
		case c == ']':
			depth--
		case depth == 0 && strings.IndexByte(seps, c) >= 0:
			return s[:i], c, s[i+1:]
		}
	}
	return s, 0, ""
}

// splitIDs splits "20:21_[1-3]:22" into its ids.
func splitIDs(s string) []string {
	var ids []string
	for {
		id, sep, rest := cutOutside(s, ":")
		ids = append(ids, id)
		if sep == 0 {
			return ids
		}
		s = rest
	}
}

// parseDepID parses one id: job[_task|_*|_[set]][+minutes][(state)].
func parseDepID(id string) (DepCond, error) {
	var c DepCond
	rest := id
	if i := strings.IndexByte(rest, '('); i >= 0 {
		var err error
		if c.Failed, err = depState(rest[i:]); err != nil {
			return DepCond{}, fmt.Errorf("%q: %w", id, err)
		}
		rest = rest[:i]
	}
	if r, m, ok := strings.Cut(rest, "+"); ok {
		n, err := strconv.Atoi(m)
		if err != nil || n <= 0 || m[0] < '0' || m[0] > '9' {
			return DepCond{}, fmt.Errorf("%q: bad delay %q", id, m)
		}
		rest, c.Minute = r, n
	}
	job, task, isTask := strings.Cut(rest, "_")
	n, ok := parseDigits(job, 10)
	if !ok || n == 0 || n > 1<<32-1 {
		return DepCond{}, fmt.Errorf("%q: bad job id", id)
	}
	c.Job = strconv.FormatInt(n, 10) // as squeue prints it: "007" is job 7
	if !isTask || task == "*" {
		return c, nil
	}
	expr := task
	if set, ok := strings.CutPrefix(task, "["); ok {
		expr, ok = strings.CutSuffix(set, "]")
		if !ok || expr == "" || strings.Trim(expr, "0123456789,-:") != "" {
			return DepCond{}, fmt.Errorf("%q: bad array elements", id)
		}
	} else if _, ok := parseDigits(task, 9); !ok {
		return DepCond{}, fmt.Errorf("%q: bad array index", id)
	}
	a, err := cluster.ParseArrayIndices(expr)
	if err != nil {
		return DepCond{}, fmt.Errorf("%q: %w", id, err)
	}
	c.Tasks = &a
	return c, nil
}

// depState reads a "(state)" suffix: "(failed)" is true; any other word
// is what Slurm reads as not yet fulfilled.
func depState(s string) (failed bool, err error) {
	if s == "" {
		return false, nil
	}
	w, ok := strings.CutPrefix(s, "(")
	if w, ok = strings.CutSuffix(w, ")"); !ok || strings.ContainsAny(w, "()") {
		return false, fmt.Errorf("bad state %q", s)
	}
	return strings.EqualFold(w, "failed"), nil
}
