package daemon

import (
	"strconv"

	"github.com/glean-hpc/glean/sidecar/cluster"
	"github.com/glean-hpc/glean/sidecar/slurm"
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

// EvalDependency evaluates a --dependency value as slurmctld 22.05 does
// (test_job_dependency; the syntax is slurm.ParseDependency's): every
// condition must hold (',') or any one ('?'), each of type after,
// afterany, afterok or afternotok (the wrapper refuses the others) on one
// job. A job id names that job or, for an array, every element of it;
// "5_1" names element 1 of array 5, whether it runs (a job of its own)
// or still pends in the array's record; "5_[1-3]" each of those. A job or
// element Slurm no longer shows counts as met, as Slurm drops a
// dependency on a purged job; an element that a pending record's index
// list may hold but that Slurm cut short (SLURM_BITSTR_LEN) counts as
// waiting, never as met. A value that does not parse is never met. The
// delay of after:<id>+<minutes> is not modelled: met once the job started.
func EvalDependency(dep string, jobs map[string]QJob) DepState {
	if dep == "" {
		return DepMet
	}
	d, err := slurm.ParseDependency(dep)
	if err != nil {
		return DepNever
	}
	arrays := map[string]*arrayRecords{}
	records := func(id string) *arrayRecords {
		if a, ok := arrays[id]; ok {
			return a
		}
		a := newArrayRecords(id, jobs)
		arrays[id] = a
		return a
	}
	result := DepMet
	if d.Any {
		result = DepNever
	}
	// add folds one condition's outcome in and reports whether the
	// whole is decided.
	add := func(s DepState) bool {
		switch {
		case d.Any && s == DepMet, !d.Any && s == DepNever:
			result = s
			return true
		case s == DepWaiting:
			result = DepWaiting
		}
		return false
	}
	for _, c := range d.Conds {
		switch {
		case c.Failed, c.Type != "after" && c.Type != "afterany" && c.Type != "afterok" && c.Type != "afternotok":
			if add(DepNever) {
				return result
			}
		case c.Tasks == nil:
			if add(depOn(c.Type, jobStates(c.Job, jobs, records))) {
				return result
			}
		default:
			for i := range c.Tasks.All() {
				if add(records(c.Job).element(c.Type, i)) {
					return result
				}
			}
		}
	}
	return result
}

// jobStates are the states of job id: the job itself if it is one (an
// array element named by its own id included), else every record of the
// array id, its pending elements' and its started ones'.
func jobStates(id string, jobs map[string]QJob, records func(string) *arrayRecords) []string {
	if j, ok := jobs[id]; ok && j.ArrayID != id {
		return []string{j.State}
	}
	return records(id).states
}

// arrayRecords are the records squeue shows of one job id: a plain job's
// one, or an array's (each started element, and the pending ones in one
// record with their index list).
type arrayRecords struct {
	states []string
	single map[int]string // records of one index (started elements): their states
	lists  []taskRecord   // records of several (the pending ones), maybe cut
	bad    bool           // a record of the array whose index list is missing or does not parse
}

type taskRecord struct {
	state string
	idx   cluster.ArrayIndices
}

func newArrayRecords(id string, jobs map[string]QJob) *arrayRecords {
	a := &arrayRecords{single: map[int]string{}}
	for _, j := range jobs {
		if j.ArrayID != id {
			continue
		}
		a.states = append(a.states, j.State)
		if j.ArrayTask == "" {
			a.bad = a.bad || j.ID != id // an element without its index; else not an array
			continue
		}
		if i, err := strconv.Atoi(j.ArrayTask); err == nil && i >= 0 {
			a.single[i] = j.State
			continue
		}
		idx, err := cluster.ParseArrayIndices(j.ArrayTask)
		if err != nil {
			a.bad = true
			continue
		}
		a.lists = append(a.lists, taskRecord{j.State, idx})
	}
	return a
}

// element judges a dependency of type typ on element i of the array, as
// Slurm finds it (find_job_array_rec): the record holding index i, a
// started element's or the pending ones'. None: gone, met, as Slurm
// drops the dependency. A record whose list Slurm cut before it could
// show i, or one that does not parse, may hold it: waiting.
func (a *arrayRecords) element(typ string, i int) DepState {
	if st, ok := a.single[i]; ok {
		return depOn(typ, []string{st})
	}
	unknown := a.bad
	for _, t := range a.lists {
		in, known := t.idx.Has(i)
		if in {
			return depOn(typ, []string{t.state})
		}
		unknown = unknown || !known
	}
	if unknown {
		return DepWaiting
	}
	return DepMet
}

// depOn judges one job, or every record of an array together, for one
// type, as Slurm does (_test_job_dependency_common, with an array's
// test_job_array_complete/completed/pending): afterok waits until every
// element ended and is met if all completed; afternotok is met once all
// ended and one did not complete, or at once for a job in SPECIAL_EXIT;
// afterany is met once all ended; after once none is pending. No record:
// purged, met.
func depOn(typ string, states []string) DepState {
	if len(states) == 0 {
		return DepMet // purged: Slurm drops the dependency
	}
	complete, completed, pending, special := true, true, false, false
	for _, st := range states {
		complete = complete && st == "COMPLETED"
		completed = completed && Ended(st)
		pending = pending || st == "PENDING"
		special = special || st == "SPECIAL_EXIT"
	}
	switch typ {
	case "after":
		if pending {
			return DepWaiting
		}
		return DepMet
	case "afterany":
		if completed {
			return DepMet
		}
		return DepWaiting
	case "afterok":
		switch {
		case !completed:
			return DepWaiting
		case complete:
			return DepMet
		}
		return DepNever
	case "afternotok":
		switch {
		case special: // requeued held after a RequeueExitHold code: Slurm counts it as not ok
			return DepMet
		case !completed:
			return DepWaiting
		case !complete:
			return DepMet
		}
		return DepNever
	}
	return DepNever
}
