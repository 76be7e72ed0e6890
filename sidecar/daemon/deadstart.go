package daemon

import (
	"fmt"
	"time"

	"github.com/glean-hpc/glean/sidecar/spool"
)

// Pilots that die at start. A pilot whose agent cannot run (glean-agent
// or glean.toml unreadable on the node, a spool not mounted there, an
// agent that exits at once) ends seconds after it starts, its node is
// idle again, and the policy would submit another pilot there in the next
// round, for ever. So gleand counts, per job, the pilots that ended by
// themselves without running a task, soon after they started; after
// deadStartLimit in a row it submits no new pilot for the job for
// deadStartFirstHold, doubling with each hold up to deadStartMaxHold, and
// says why (the agent's last error, or that it left no log). A pilot of
// the job that runs a task ends the hold. A fair job's shadow array is
// not held: it is the job's plain allocation, Slurm's to run.
const (
	deadStartLimit     = 3
	deadStartFirstHold = time.Minute
	deadStartMaxHold   = 30 * time.Minute
	// deadStartWindow: a pilot that ran longer than this before ending
	// did not die at start (an agent with nothing to take idles out after
	// 30 s; a moved pilot's copy started long ago in another job).
	deadStartWindow = 2 * time.Minute
)

// deadStart is one job's run of pilots that died at start.
type deadStart struct {
	fails int           // in a row
	hold  time.Duration // the last hold's length
	until time.Time     // no new pilot before
}

// holding reports whether record name's new pilots are held back at now.
func (x *Executor) holding(name string, now time.Time) bool {
	d := x.deadStarts[name]
	return d != nil && now.Before(d.until)
}

// watchStarts looks at r's pilots after pilotsSeen: one that ran a task
// (it is busy, or the journal has an attempt of it) ends r's run of dead
// starts; one that ended at now without running a task, soon after it
// started, while r had tasks waiting and glean had not told it to go,
// adds to it. It reports whether r changed (its PilotTrouble).
func (x *Executor) watchStarts(now time.Time, r *spool.Record, b *book, busy map[string]time.Time) bool {
	name := r.DirName()
	var dead []*spool.PilotJob
	worked := false
	for i := range r.PilotJobs {
		p := &r.PilotJobs[i]
		if p.ID == "" || p.MovedTo != "" {
			continue
		}
		if _, ok := busy[p.ID]; ok || b.pilots[p.ID] {
			worked = true
			continue
		}
		if !p.Ended.Equal(now) || p.Cancelled || p.Retiring || p.Killed || !p.Signalled.IsZero() || r.Tasks.Pending == 0 {
			continue
		}
		if !p.Started.IsZero() && now.Sub(p.Started) > deadStartWindow {
			continue
		}
		dead = append(dead, p)
	}
	if worked {
		delete(x.deadStarts, name)
		if r.PilotTrouble != "" {
			x.log.Info("pilots run tasks again", "job", name)
			r.PilotTrouble = ""
			return true
		}
		return false
	}
	if len(dead) == 0 {
		return false
	}
	d := x.deadStarts[name]
	if d == nil {
		d = &deadStart{}
		x.deadStarts[name] = d
	}
	d.fails += len(dead)
	if d.fails < deadStartLimit || now.Before(d.until) {
		return false // not yet; or pilots submitted before the hold
	}
	d.hold = min(max(2*d.hold, deadStartFirstHold), deadStartMaxHold)
	d.until = now.Add(d.hold)
	last := dead[len(dead)-1]
	why := x.deadWhy(r, last)
	r.PilotTrouble = fmt.Sprintf("%d pilots in a row ended without running a task; the last, %s on %s: %s; no new pilot before %s",
		d.fails, last.ID, last.Node, why, d.until.UTC().Format(time.RFC3339))
	x.log.Warn("pilots end without running a task: holding back new ones", "job", name, "in_a_row", d.fails,
		"pilot", last.ID, "node", last.Node, "why", why, "hold", d.hold)
	return true
}

// deadWhy says what the pilot's agent left: its last error, or that it
// never opened its log.
func (x *Executor) deadWhy(r *spool.Record, p *spool.PilotJob) string {
	log := fmt.Sprintf("logs/pilot-%s.log in the job's work directory", p.ID)
	exists, line, err := x.opt.Spool.LastAgentError(r.UID, r.ID, "pilot", p.ID)
	switch {
	case err != nil:
		return fmt.Sprintf("its agent's log (%s) could not be read: %v", log, err)
	case !exists:
		return "its agent never opened its log (" + log + "): pilot.sh or glean-agent could not run, or could not read " +
			"glean.toml or the spool, on that node (a pilot's own output goes to /dev/null; run the pilot command as the user there)"
	case line == "":
		return "its agent logged no error (" + log + ")"
	}
	return "its agent's last error (" + log + "): " + line
}
