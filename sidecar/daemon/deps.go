package daemon

import (
	"strings"
)

// Slurm does not evaluate the dependency of a held job (measured on
// 22.05.8: afterok on a completed job stays "unfulfilled" while the job is
// held), and the anchor stays held, so the daemon evaluates an elastic
// job's --dependency itself from the states squeue shows.

// DepState is the outcome of a dependency.
type DepState int

const (
	DepWaiting DepState = iota // not yet
	DepMet                     // tasks may start
	DepNever                   // can never be satisfied
)

// EvalDependency evaluates a --dependency value: items joined by ',' (all
// must hold) or '?' (any), each "type:id[:id...]" with type after,
// afterany, afterok or afternotok (the wrapper refuses the others). A job
// Slurm no longer shows counts as ended successfully, as Slurm treats a
// dependency on a purged job as satisfied.
func EvalDependency(dep string, jobs map[string]QJob) DepState {
	if dep == "" {
		return DepMet
	}
	any := strings.Contains(dep, "?")
	items := strings.FieldsFunc(dep, func(r rune) bool { return r == ',' || r == '?' })
	result := DepMet
	if any {
		result = DepNever
	}
	for _, item := range items {
		s := evalItem(item, jobs)
		if any {
			if s == DepMet {
				return DepMet
			}
			if s == DepWaiting {
				result = DepWaiting
			}
			continue
		}
		if s == DepNever {
			return DepNever
		}
		if s == DepWaiting {
			result = DepWaiting
		}
	}
	return result
}

func evalItem(item string, jobs map[string]QJob) DepState {
	parts := strings.Split(item, ":")
	typ := parts[0]
	result := DepMet
	for _, id := range parts[1:] {
		id, _, _ = strings.Cut(id, "+") // after:<id>+<minutes>: the delay is not modelled
		var states []string
		for _, j := range jobs {
			if j.ID == id || j.ArrayID == id {
				states = append(states, j.State)
			}
		}
		s := depOn(typ, states)
		if s == DepNever {
			return DepNever
		}
		if s == DepWaiting {
			result = DepWaiting
		}
	}
	if len(parts) < 2 {
		return DepNever
	}
	return result
}

// depOn judges one referenced job (all its array elements) for one type.
func depOn(typ string, states []string) DepState {
	if len(states) == 0 {
		return DepMet // purged: Slurm drops the dependency
	}
	result := DepMet
	for _, st := range states {
		var s DepState
		switch typ {
		case "after":
			s = DepMet
			if st == "PENDING" {
				s = DepWaiting
			}
		case "afterany":
			s = DepWaiting
			if Ended(st) {
				s = DepMet
			}
		case "afterok":
			switch {
			case !Ended(st):
				s = DepWaiting
			case st == "COMPLETED":
				s = DepMet
			default:
				s = DepNever
			}
		case "afternotok":
			switch {
			case !Ended(st):
				s = DepWaiting
			case st == "COMPLETED":
				s = DepNever
			default:
				s = DepMet
			}
		default:
			return DepNever
		}
		if s == DepNever {
			return DepNever
		}
		if s == DepWaiting {
			result = DepWaiting
		}
	}
	return result
}
