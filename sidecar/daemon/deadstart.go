package daemon

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/glean-hpc/glean/sidecar/spool"
)

// Pilots that die at start. A pilot whose agent cannot run (glean-agent
// or glean.toml unreadable on the node, a spool not mounted there, an
// agent that exits at once) ends seconds after it starts, its node is
// idle again, and the policy would submit another pilot there in the next
// round, for ever. So gleand counts, per job, the pilots that ended by
// themselves without running a task, soon after they started; after
// deadStartLimit in a row, on more than one node, it submits no new
// pilot for the job for deadStartFirstHold, doubling with each hold up
// to deadStartMaxHold, and says why (the agent's last error, or that it
// left no log). A pilot of the job that runs a task ends the hold. A fair job's shadow array is
// not held: it is the job's plain allocation, Slurm's to run.
//
// Nodes are counted the same way, over all jobs: one bad node (its
// spool not mounted) kills every pilot put there, while the jobs' other
// pilots run tasks and so end each job's run. After deadStartLimit in a
// row on a node, whatever their jobs, no new pilot goes there for the
// same holds; a pilot that runs a task there ends it.
const (
	deadStartLimit     = 3
	deadStartFirstHold = time.Minute
	deadStartMaxHold   = 30 * time.Minute
	// deadStartForget: a run of dead starts this old (since its last) is
	// over: the node or the job had no pilot since, nothing says it is
	// still broken.
	deadStartForget = time.Hour
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
	last  time.Time     // the last dead start
	nodes map[string]bool
}

// holding reports whether record name's new pilots are held back at now.
func (x *Executor) holding(name string, now time.Time) bool {
	d := x.deadStarts[name]
	return d != nil && now.Before(d.until)
}

// heldNodes are the nodes held back at now, sorted.
func (x *Executor) heldNodes(now time.Time) []string {
	var held []string
	for n, d := range x.deadNodes {
		if now.Before(d.until) {
			held = append(held, n)
		}
	}
	slices.Sort(held)
	return held
}

// add counts dead starts on nodes (one each); it reports whether that
// starts a hold: deadStartLimit in a row, on at least minNodes nodes,
// and no hold running (those pilots were submitted before it).
func (d *deadStart) add(now time.Time, minNodes int, nodes ...string) bool {
	if now.Sub(d.last) > deadStartForget && !now.Before(d.until) {
		*d = deadStart{}
	}
	if d.nodes == nil {
		d.nodes = map[string]bool{}
	}
	d.last = now
	d.fails += len(nodes)
	for _, n := range nodes {
		d.nodes[n] = true
	}
	if d.fails < deadStartLimit || len(d.nodes) < minNodes || now.Before(d.until) {
		return false
	}
	d.hold = min(max(2*d.hold, deadStartFirstHold), deadStartMaxHold)
	d.until = now.Add(d.hold)
	return true
}

// watchStarts looks at r's pilots after pilotsSeen. One that ended at
// now without running a task, soon after it started, while r had tasks
// waiting and glean had not told it to go, died at start: it adds to r's
// run and to its node's. One that ran a task (it is busy, or the journal
// has an attempt of it) ends the runs of r and of its node if it was
// submitted after their last dead start: an older pilot's agent may have
// started before whatever broke. It reports whether r changed (its
// PilotTrouble).
func (x *Executor) watchStarts(now time.Time, r *spool.Record, b *book, busy map[string]time.Time) bool {
	name := r.DirName()
	var dead []*spool.PilotJob
	var worked time.Time                 // the latest submission of a pilot that ran a task
	nodeWorked := map[string]time.Time{} // the same by node
	for i := range r.PilotJobs {
		p := &r.PilotJobs[i]
		if p.ID == "" || p.MovedTo != "" {
			continue
		}
		if _, ok := busy[p.ID]; ok || b.pilots[p.ID] {
			if p.Submitted.After(worked) {
				worked = p.Submitted
			}
			if p.Node != "" && p.Submitted.After(nodeWorked[p.Node]) {
				nodeWorked[p.Node] = p.Submitted
			}
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
	for n, at := range nodeWorked {
		if d := x.deadNodes[n]; d != nil && at.After(d.last) {
			delete(x.deadNodes, n)
		}
	}
	changed := false
	// (No run in memory: gleand restarted since; any pilot that ran a
	// task then ends the trouble.)
	if d := x.deadStarts[name]; !worked.IsZero() && (d == nil || worked.After(d.last)) {
		delete(x.deadStarts, name)
		if r.PilotTrouble != "" {
			x.log.Info("pilots run tasks again", "job", name)
			r.PilotTrouble, changed = "", true
		}
	}
	for _, p := range dead {
		if p.Node == "" {
			continue // Slurm placed it, unseen
		}
		d := x.deadNodes[p.Node]
		if d == nil {
			d = &deadStart{}
			x.deadNodes[p.Node] = d
		}
		if d.add(now, 1, p.Node) {
			x.log.Warn("pilots die at start on a node: holding it back", "node", p.Node, "in_a_row", d.fails,
				"pilot", p.ID, "job", name, "why", x.deadWhy(r, p), "hold", d.hold)
		}
	}
	if len(dead) == 0 {
		return changed
	}
	d := x.deadStarts[name]
	if d == nil {
		d = &deadStart{}
		x.deadStarts[name] = d
	}
	// On one node alone it is the node's trouble (held above), not the
	// job's. A pilot Slurm placed unseen counts as a node of its own.
	var nodes []string
	for _, p := range dead {
		nodes = append(nodes, cmp.Or(p.Node, "?"+p.ID))
	}
	if !d.add(now, 2, nodes...) {
		return changed
	}
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
