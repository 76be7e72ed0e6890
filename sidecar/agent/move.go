package agent

import (
	"context"
	"fmt"
	"log/slog"
	"sync"

	"github.com/glean-hpc/glean/sidecar/spool"
)

// A pilot of a thesis pool moves to another job of its owner when its own
// has no task left for it (policy.MovePilot): the daemon names the new job
// in the old job's control file; the agent finishes its running tasks,
// takes no more of the old job's, and Run returns EndMoved. The caller
// then runs an agent for MovedTo (MoveTarget checks it).

// noteMove records a move of this pilot that the control file names.
func (a *Agent) noteMove(c spool.Control) {
	to := c.Move[a.opt.Pilot]
	if a.opt.Pilot == "" || a.opt.Shadow || to == "" || a.moveTo != "" {
		return
	}
	a.opt.Log.Info("moved to another job of the owner: finishing the running tasks, taking no more of this job's",
		"to", to, "running", len(a.running))
	a.moveTo, a.retiring = to, true
}

// MovedTo is the job (<uid>.<id>) the daemon moved this pilot to, after Run
// returned EndMoved.
func (a *Agent) MovedTo() string { return a.moveTo }

// MoveTarget parses a move's job and checks that it belongs to uid, the
// owner of the job the pilot served: a pilot never serves another user's
// job (the daemon never names one; the agent, running as the owner, could
// not open it anyway).
func MoveTarget(to string, uid int, log *slog.Logger) (string, error) {
	u, id, err := ParseJobArg(to)
	if err != nil {
		return "", fmt.Errorf("the daemon's move: %w", err)
	}
	if u != uid {
		return "", fmt.Errorf("the daemon's move names job %s of uid %d, not of uid %d: refused", to, u, uid)
	}
	log.Info("switching job", "to", to)
	return id, nil
}

// Open loads job id of uid and its work directory (a pilot's next job).
type Open func(id string) (*Job, *spool.Work, error)

// Serve runs agents for the pilot's job and, after each move, for the job
// it moved to, until one ends for another reason. The allocation's limits
// are learned once for the pilot, not once per job (a squeue and a
// scontrol each time).
func Serve(ctx context.Context, job *Job, work *spool.Work, uid int, opt Options, open Open) (string, error) {
	if learn := opt.Learn; learn != nil {
		// Only an answer is kept: after a failure (a Slurm timeout) the
		// next job's agent asks again.
		var mu sync.Mutex
		var known *Limits
		opt.Learn = func(ctx context.Context) (Limits, error) {
			mu.Lock()
			defer mu.Unlock()
			if known != nil {
				return *known, nil
			}
			l, err := learn(ctx)
			if err == nil {
				known = &l
			}
			return l, err
		}
	}
	for {
		a := New(job, work, opt)
		why, err := a.Run(ctx)
		if err != nil || why != EndMoved {
			return why, err
		}
		id, err := MoveTarget(a.MovedTo(), uid, opt.Log)
		if err != nil {
			return why, err
		}
		if job, work, err = open(id); err != nil {
			return why, err
		}
	}
}
