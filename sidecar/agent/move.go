package agent

import (
	"fmt"
	"log/slog"

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
