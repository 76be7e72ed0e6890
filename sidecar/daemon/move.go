package daemon

import (
	"errors"
	"fmt"
	"time"

	"github.com/glean-hpc/glean/sidecar/policy"
	"github.com/glean-hpc/glean/sidecar/spool"
)

// Moves (policy.MovePilot): a thesis pool's pilot serves another job of
// the same owner once its own has no task left for it. The new job's
// record gets a copy of the pilot's entry and acts on it from then on
// (cancel, retire, judging the attempts it runs); the old record keeps
// its entry with MovedTo, so that the old job's control file, which the
// pilot's agent reads, names the job to switch to. The agent runs as the
// owner and can open only the owner's jobs; the daemon never moves a pilot
// to another uid's job.

// errOtherOwner refuses a move between two owners' jobs.
var errOtherOwner = errors.New("the jobs belong to different users")

// movePilot carries out one move. For a daemon that dies half way, the
// old record is marked first; completeMove (redone every round until it
// succeeds once) then copies the pilot and writes the control file.
func (x *Executor) movePilot(a policy.Action) error {
	from, to := x.in.known[a.Job], x.in.known[a.To]
	switch {
	case from == nil || to == nil:
		return fmt.Errorf("unknown job")
	case from.UID != to.UID:
		return errOtherOwner
	case !to.Active():
		return fmt.Errorf("%s is %s", a.To, to.State)
	}
	p := pilotOf(from, a.Pilot)
	if p == nil || p.MovedTo != "" {
		return nil
	}
	p.MovedTo = to.DirName()
	if err := x.records.Put(from); err != nil {
		p.MovedTo = ""
		return err
	}
	x.opt.Fail.Hit("move/marked")
	return x.completeMove(from, p)
}

// completeMove puts a copy of moved pilot p (of record from) into the
// record it moved to, if missing, and the move into from's control file.
func (x *Executor) completeMove(from *spool.Record, p *spool.PilotJob) error {
	to := x.in.known[p.MovedTo]
	if to == nil || to.UID != from.UID {
		return errOtherOwner // the mark alone never lets an agent switch
	}
	switch old := pilotOf(to, p.ID); {
	case old == nil:
		q := *p
		q.MovedTo = ""
		to.PilotJobs = append(to.PilotJobs, q)
		if err := x.records.Put(to); err != nil {
			to.PilotJobs = to.PilotJobs[:len(to.PilotJobs)-1]
			return err
		}
	case old.MovedTo != "":
		// The pilot comes back to a job it left (the pool's first job got
		// a task again): its old entry speaks for it again, and that job's
		// control file no longer sends it away.
		was := *old
		*old = *p
		old.MovedTo = ""
		if err := x.records.Put(to); err != nil {
			*old = was
			return err
		}
		fallthrough
	default:
		// Rewritten even if the record was already right: a daemon that
		// died between the two writes left the old control file.
		if err := x.putControl(to, !to.Active()); err != nil {
			return err
		}
	}
	x.opt.Fail.Hit("move/copied")
	if err := x.putControl(from, !from.Active()); err != nil {
		return err
	}
	if x.moved == nil {
		x.moved = map[string]bool{}
	}
	x.moved[p.ID] = true
	return nil
}

// completeMoves finishes the moves of the named records that this daemon
// has not completed since it started (a restart redoes each once).
func (x *Executor) completeMoves(names []string) {
	for _, n := range names {
		r := x.in.known[n]
		for i := range r.PilotJobs {
			p := &r.PilotJobs[i]
			if p.MovedTo == "" || !p.Ended.IsZero() || x.moved[p.ID] {
				continue
			}
			if err := x.completeMove(r, p); err != nil {
				x.log.Warn("completing a pilot's move", "pilot", p.ID, "from", n, "to", p.MovedTo, "err", err)
			}
		}
	}
}

// movedCopy is the entry that speaks for pilot p: the copy in the record
// it moved to, if any.
func (x *Executor) movedCopy(p *spool.PilotJob) *spool.PilotJob {
	if p == nil || p.MovedTo == "" {
		return p
	}
	if to := x.in.known[p.MovedTo]; to != nil {
		for i := range to.PilotJobs {
			if to.PilotJobs[i].ID == p.ID {
				return &to.PilotJobs[i]
			}
		}
	}
	return p
}

// addMove names a moved pilot in its old job's control file.
func addMove(c *spool.Control, p spool.PilotJob) {
	if p.MovedTo == "" || !p.Ended.IsZero() {
		return
	}
	if c.Move == nil {
		c.Move = map[string]string{}
	}
	c.Move[p.ID] = p.MovedTo
}

// markBusy: a pilot whose lease is in another record's work directory
// (it moved and still runs its old job's task) is busy all the same.
func markBusy(ps []policy.Pilot, busy map[string]time.Time) {
	for i := range ps {
		if end, ok := busy[ps[i].ID]; ok && !ps[i].Busy {
			ps[i].Busy, ps[i].TaskEnd = true, end
		}
	}
}
