package daemon

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/glean-hpc/glean/sidecar/cluster"
	"github.com/glean-hpc/glean/sidecar/privhelper"
	"github.com/glean-hpc/glean/sidecar/spool"
)

// Pilots that die at start. A pilot whose agent cannot run (glean-agent
// or glean.toml unreadable on the node, a spool not mounted there, an
// agent that exits at once) ends seconds after it starts, its node is
// idle again, and the policy would submit another pilot there in the next
// round, for ever. So gleand counts, per job, the pilots that died at
// start: Slurm shows them ended by themselves (COMPLETED or FAILED: not
// cancelled, preempted, timed out or lost with a node) less than
// deadStartWindow after they started, without running a task, while the
// job had tasks waiting and glean had not told them to go. After
// deadStartLimit in a row, on more than one node, it submits no new pilot
// for the job for deadStartFirstHold, doubling with each hold up to
// deadStartMaxHold, and says why (the agent's last error, or that it
// left no log). A pilot of the job that runs a task ends the run. A fair
// job's shadow array is not held: it is the job's plain allocation,
// Slurm's to run.
//
// One bad node (its spool not mounted) kills every pilot put there while
// the job's pilots elsewhere run tasks, so the same is counted by owner
// and node: after deadStartLimit in a row there, the owner's jobs get no
// new pilot on that node, with the same holds. By owner, because what
// kills a pilot may be the owner's own (a work directory they made
// unreadable), and one user must not hold nodes back from the others.
const (
	deadStartLimit     = 3
	deadStartFirstHold = time.Minute
	deadStartMaxHold   = 30 * time.Minute
	// deadStartForget: a run of dead starts this old (since its last) is
	// over: the node or the job had no pilot since, nothing says it is
	// still broken.
	deadStartForget = time.Hour
	// deadStartWindow: a pilot that ran this long did not die at start.
	// Below the agent's idle timeout (30 s), after which an agent with
	// nothing to take (a throttled array, tasks taken by others) exits.
	deadStartWindow = 20 * time.Second
)

// deadStart is one job's run of pilots that died at start; its backoff
// is the hold: no new pilot before until, for delay (the last hold's
// length).
type deadStart struct {
	backoff
	fails int       // in a row
	last  time.Time // the last dead start
	nodes map[string]bool
}

// holding reports whether record name's new pilots are held back at now.
func (x *Executor) holding(name string, now time.Time) bool {
	d := x.deadStarts[name]
	return d != nil && now.Before(d.until)
}

// ownerNode keys deadNodes.
type ownerNode struct {
	uid  int
	node string
}

// heldNodes are the nodes held back from uid's jobs at now, sorted.
func (x *Executor) heldNodes(uid int, now time.Time) []string {
	var held []string
	for k, d := range x.deadNodes {
		if k.uid == uid && now.Before(d.until) {
			held = append(held, k.node)
		}
	}
	slices.Sort(held)
	return held
}

// heldNodeCount is how many nodes are held back from someone at now.
func (x *Executor) heldNodeCount(now time.Time) int {
	nodes := map[string]bool{}
	for k, d := range x.deadNodes {
		if now.Before(d.until) {
			nodes[k.node] = true
		}
	}
	return len(nodes)
}

// over reports whether the run is forgotten at now: no hold running and
// no dead start for deadStartForget.
func (d *deadStart) over(now time.Time) bool {
	return now.Sub(d.last) > deadStartForget && !now.Before(d.until)
}

// add counts dead starts on nodes (one each); it reports whether that
// starts a hold: deadStartLimit in a row, on at least minNodes nodes,
// and no hold running (those pilots were submitted before it).
func (d *deadStart) add(now time.Time, minNodes int, nodes ...string) bool {
	if d.over(now) {
		*d = deadStart{}
	}
	d.ceiling = deadStartMaxHold
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
	d.next(true, deadStartFirstHold, now)
	return true
}

// watchStarts looks at r's pilots after pilotsSeen. One that pilotsSeen
// saw end at now and that died at start (diedAtStart) adds to r's run and
// to its owner's on its node. One that ran a task (it is busy, or the
// journal has an attempt of it) ends those runs if it was submitted after
// their last dead start: an older pilot's agent may have started before
// whatever broke. It reports whether r changed (its PilotTrouble).
func (x *Executor) watchStarts(now time.Time, r *spool.Record, b *book, busy map[string]time.Time, jobs map[string]*cluster.Job) bool {
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
		if p.Ended.Equal(now) && r.Tasks.Pending > 0 && diedAtStart(p, jobs[p.ID]) {
			dead = append(dead, p)
		}
	}
	for n, at := range nodeWorked {
		k := ownerNode{r.UID, n}
		if d := x.deadNodes[k]; d != nil && at.After(d.last) {
			delete(x.deadNodes, k)
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
		k := ownerNode{r.UID, p.Node}
		d := x.deadNodes[k]
		if d == nil {
			d = &deadStart{}
			x.deadNodes[k] = d
		}
		if d.add(now, 1, p.Node) {
			x.log.Warn("pilots die at start on a node: holding it back from the owner's jobs", "node", p.Node, "uid", r.UID,
				"in_a_row", d.fails, "pilot", p.ID, "job", name, "why", x.deadWhy(r, p), "hold", d.delay)
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
	r.PilotTrouble = fmt.Sprintf("%d pilots in a row ended by themselves right after they started, without running a task; the last, %s on %s: %s; no new pilot before %s",
		d.fails, last.ID, last.Node, why, d.until.UTC().Format(time.RFC3339))
	x.log.Warn("pilots end without running a task: holding back new ones", "job", name, "in_a_row", d.fails,
		"pilot", last.ID, "node", last.Node, "why", why, "hold", d.delay)
	return true
}

// pilotsRefused holds back r's new pilots after glean-helper refused to
// submit them: its checks failed (the record's uid below helper.min_uid,
// its user not that uid on the helper's host, its anchor no longer the
// owner's), which asking every round does not change. The hold is a dead
// start's (a minute, doubling up to deadStartMaxHold), and PilotTrouble
// says why; a pilot submitted after it that runs a task clears it.
// Permanent for the job or not (a user lookup that failed for a while),
// the job is not ended: its shadow array, if any, still runs its tasks,
// and its owner sees the reason in glean status and glean show.
func (x *Executor) pilotsRefused(now time.Time, r *spool.Record, err error) {
	name := r.DirName()
	d := x.deadStarts[name]
	if d == nil || d.over(now) {
		d = &deadStart{}
		x.deadStarts[name] = d
	}
	d.ceiling, d.last = deadStartMaxHold, now
	d.next(true, deadStartFirstHold, now)
	why := err.Error()
	if ref := (*privhelper.Refusal)(nil); errors.As(err, &ref) {
		why = ref.Reason
	}
	r.PilotTrouble = fmt.Sprintf("%s%s; no new pilot before %s", spool.PilotsRefused, why, d.until.UTC().Format(time.RFC3339))
	x.log.Warn("glean-helper refuses the job's pilots: holding back new ones", "job", name, "why", err, "hold", d.delay)
}

// diedAtStart reports whether pilot p, which ended this round as Slurm
// shows it in j (nil: no longer listed), ended by itself right after its
// start: its agent exited (COMPLETED, FAILED) within deadStartWindow of
// Slurm's start, and glean had not told it to go (a give-way signal, a
// retirement or a cancel). Anything else (cancelled by glean, the owner
// or an admin; preempted; timed out; its node lost; not listed) is not
// the agent's failure to run.
func diedAtStart(p *spool.PilotJob, j *cluster.Job) bool {
	if p.Cancelled || p.Retiring || p.Killed || !p.Signalled.IsZero() || j == nil {
		return false
	}
	if j.RawState != "COMPLETED" && j.RawState != "FAILED" {
		return false
	}
	return !j.Start.IsZero() && !j.End.IsZero() && j.End.Sub(j.Start) < deadStartWindow
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
