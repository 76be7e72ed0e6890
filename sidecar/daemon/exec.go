package daemon

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/glean-hpc/glean/sidecar/cluster"
	"github.com/glean-hpc/glean/sidecar/config"
	"github.com/glean-hpc/glean/sidecar/failpoint"
	"github.com/glean-hpc/glean/sidecar/policy"
	"github.com/glean-hpc/glean/sidecar/privhelper"
	"github.com/glean-hpc/glean/sidecar/spool"
)

// The execution slice of the loop: after the intake, each round observes
// the cluster (one snapshot) and every taken-in job's work directory,
// commits the attempts' results to the journals, takes back the leases of
// dead pilots, asks policy.Decide (the code the simulator runs) what to do
// and does it through the privileged helper; a job whose tasks are all
// finished ends: its pending shadow elements are cancelled and its anchor
// released, to run as the user and exit with the job's code.

// Actor is every privileged action of the execution path (the helper's
// client in gleand).
type Actor interface {
	// SubmitPilots submits pilots the record holds as intents (by their
	// tokens; each with its node and time limit) and returns their ids in
	// order, "" for one that was not submitted (the error says why).
	SubmitPilots(ctx context.Context, record string, intents []spool.PilotJob) ([]string, error)
	CancelPilot(ctx context.Context, record, id string) error        // scancel: TERM to all, KILL after KillWait
	SignalPilot(ctx context.Context, record, id string) error        // TERM to the pilot's agent alone (give way)
	CancelPendingPilot(ctx context.Context, record, id string) error // only if still pending
	CancelPending(ctx context.Context, id string) error              // a shadow array's pending elements
	StartShadow(ctx context.Context, id string) error                // lift the wrapper's begin time, keeping the queue place
	Release(ctx context.Context, id string) error
}

// Snapshotter observes the cluster (slurm.Client).
type Snapshotter interface {
	Snapshot(ctx context.Context, now time.Time) *cluster.Snapshot
}

// ExecOptions configure the execution path.
type ExecOptions struct {
	Spool            *spool.Spool
	Policy           policy.Config
	DefaultMode      policy.Mode
	Retries          int           // failed attempts a task may have before it fails for good
	MaxAttempts      int           // attempts of any kind per task (a task that always hands back)
	MaxWaste         time.Duration // run time of a task's attempts that did not complete (0: no cap)
	HeartbeatTimeout time.Duration // a lease not refreshed this long is taken back
	PilotPartition   string        // where the helper submits pilots (adopting a pilot checks it)
	Fail             *failpoint.Set
	Clock            func() time.Time // when a pilot's sbatch returned; nil: time.Now
}

// Executor runs the execution slice of each round.
type Executor struct {
	opt     ExecOptions
	in      *Intake
	records *spool.Records
	act     Actor // this round's: base behind a stallGuard
	base    Actor
	snap    Snapshotter
	log     *slog.Logger

	books  map[string]*book     // by record name: the journal's meaning, built once
	misses int                  // consecutive pending-pilot timeouts (policy.State)
	moved  map[string]bool      // pilots whose move this daemon completed (move.go)
	ended  map[string]time.Time // this round's SPANK epilog markers: pilots that ended on their node
	// profiled: records whose profile was looked up (seedProfile)
	profiled map[string]bool
	// deadStarts: by record name, its pilots that ended without running a
	// task, and the hold on new ones (deadstart.go). Kept in memory only:
	// a restart or a reload (the admin fixed something) tries again at once.
	deadStarts map[string]*deadStart
	deadNodes  map[ownerNode]*deadStart // by owner and node, over the owner's jobs
}

// NewExecutor returns an executor over the intake's records.
func NewExecutor(opt ExecOptions, in *Intake, records *spool.Records, act Actor, snap Snapshotter, log *slog.Logger) *Executor {
	if opt.MaxAttempts <= 0 {
		opt.MaxAttempts = 20
	}
	return &Executor{opt: opt, in: in, records: records, act: act, base: act, snap: snap, log: log, books: map[string]*book{}, profiled: map[string]bool{},
		deadStarts: map[string]*deadStart{}, deadNodes: map[ownerNode]*deadStart{}}
}

// slowCall: a privileged call that failed after this long met a Slurm
// that does not answer (slurmctld down since the round's snapshot).
const slowCall = 5 * time.Second

// errStalled is what the calls after a slow failure, or after the round's
// budget, return.
var errStalled = errors.New("skipped for this round: Slurm is slow or not answering")

// roundBudget is how long one round's privileged calls may take in all
// before the rest wait for the next round: slow calls that succeed (a
// loaded slurmctld, 100 give-way signals) must not hold the loop past its
// watchdog either (WorstRound).
const roundBudget = time.Minute

// stall is a round's memory of a privileged call that failed slowly
// (Slurm stopped answering after the round's snapshot) and of the time its
// privileged calls took: the intake's and the executor's calls after a
// slow failure, or past roundBudget, are skipped, since each could wait
// for the timeout too, and the round (which also commits the results)
// would stall for the whole outage. What is skipped is on the records and
// done in a later round.
type stall struct {
	slow    time.Duration // 0: slowCall
	budget  time.Duration // 0: roundBudget
	clock   func() time.Time
	spent   time.Duration
	stalled bool
}

func (s *stall) call(f func() error) error {
	if s.stalled {
		return errStalled
	}
	slow, budget, clock := s.slow, s.budget, s.clock
	if slow <= 0 {
		slow = slowCall
	}
	if budget <= 0 {
		budget = roundBudget
	}
	if clock == nil {
		clock = time.Now
	}
	start := clock()
	err := f()
	took := clock().Sub(start)
	s.spent += took
	if err != nil && took > slow || s.spent >= budget {
		s.stalled = true
	}
	return err
}

// stallGuard is the executor's Actor behind the round's stall.
type stallGuard struct {
	Actor
	*stall
}

func (g *stallGuard) SubmitPilots(ctx context.Context, record string, intents []spool.PilotJob) (ids []string, err error) {
	err = g.call(func() (e error) { ids, e = g.Actor.SubmitPilots(ctx, record, intents); return e })
	return ids, err
}
func (g *stallGuard) CancelPilot(ctx context.Context, record, id string) error {
	return g.call(func() error { return g.Actor.CancelPilot(ctx, record, id) })
}
func (g *stallGuard) SignalPilot(ctx context.Context, record, id string) error {
	return g.call(func() error { return g.Actor.SignalPilot(ctx, record, id) })
}
func (g *stallGuard) CancelPendingPilot(ctx context.Context, record, id string) error {
	return g.call(func() error { return g.Actor.CancelPendingPilot(ctx, record, id) })
}
func (g *stallGuard) CancelPending(ctx context.Context, id string) error {
	return g.call(func() error { return g.Actor.CancelPending(ctx, id) })
}
func (g *stallGuard) StartShadow(ctx context.Context, id string) error {
	return g.call(func() error { return g.Actor.StartShadow(ctx, id) })
}
func (g *stallGuard) Release(ctx context.Context, id string) error {
	return g.call(func() error { return g.Actor.Release(ctx, id) })
}

// ExecStats counts what a round did.
type ExecStats struct {
	Committed, Lost, Submitted, Cancelled, Retired, Ended int
	Actions                                               []policy.Action
	SlurmDown                                             bool // the snapshot could not be read whole
	// Held: active jobs whose new pilots are held back; HeldNodes: nodes
	// that get no new pilot (deadstart.go).
	Held, HeldNodes int
}

// book is what a job's journal says about its tasks.
type book struct {
	final      map[int]string // task -> completed | failed
	failures   map[int]int
	attempts   map[int]int
	waste      map[int]time.Duration // run time of attempts that did not complete
	committed  map[string]bool       // attempt ids
	runtimes   []time.Duration       // of completed attempts
	unfinished time.Duration         // the longest run of an attempt that did not complete
	exit       int                   // highest exit code of a task that failed for good
	pilots     map[string]bool       // pilots (job ids) that ran an attempt of the job
}

func newBook(evs []spool.TaskEvent) *book {
	b := &book{final: map[int]string{}, failures: map[int]int{}, attempts: map[int]int{}, waste: map[int]time.Duration{},
		committed: map[string]bool{}, pilots: map[string]bool{}}
	for _, ev := range evs {
		b.add(ev)
	}
	return b
}

func (b *book) add(ev spool.TaskEvent) {
	b.committed[ev.Attempt] = true
	b.attempts[ev.Index]++
	if ev.Pilot != "" {
		b.pilots[ev.Pilot] = true
	}
	if ev.Reason != spool.ReasonCompleted && ev.Reason != spool.ReasonDuplicate {
		b.waste[ev.Index] += ev.RunTime()
		b.unfinished = max(b.unfinished, ev.RunTime())
	}
	switch ev.Reason {
	case spool.ReasonFailed:
		b.failures[ev.Index]++
	case spool.ReasonCompleted:
		if rt := ev.RunTime(); rt > 0 {
			b.runtimes = append(b.runtimes, rt)
		}
	}
	if ev.Final && b.final[ev.Index] == "" {
		b.final[ev.Index] = ev.Reason
		if ev.Reason != spool.ReasonCompleted {
			b.exit = max(b.exit, ev.Exit, 1)
		}
	}
}

// taskTime is the expected length of one task (spool.TaskEstimate, as
// the agent reckons it).
func (b *book) taskTime(r *spool.Record) time.Duration {
	limit := 0
	if r.Entry != nil {
		limit = r.Entry.Resources.TimeLimit
	}
	return spool.JobTaskEstimate(limit, b.runtimes, r.ProfileRuntimes, b.unfinished)
}

// gateHorizon: a pending shadow element whose expected start is further
// ahead than this may wait behind the wrapper's begin time (a year ahead).
// So may one behind UNLIMITED jobs (Slurm shows a start a year ahead for
// it too), for which moving the begin time to now changes nothing.
const gateHorizon = 300 * 24 * time.Hour

// startShadow lets r's shadow array start, in the place in the queue it
// has had since the wrapper submitted it, as the plain job would: the
// wrapper submits it with a begin time a year ahead (submit.shadowBegin),
// and moving that to now keeps its priority, where a release would give it
// a new, last one under priority/basic. A hold on it, if any, is its
// holder's to lift (a user's, or an admin's: glean puts none). One the
// wrapper submitted held instead (a job with Slurm's --deadline, or an
// older wrapper's) is released, and so is the admin hold an older gleand
// put on the shadow array of a job it took in. It reports whether the shadow is free to
// start as far as glean is concerned: also when no element waits for glean
// any more (a daemon that died after starting it, before recording so).
func (x *Executor) startShadow(ctx context.Context, now time.Time, r *spool.Record, snap *cluster.Snapshot) bool {
	sh := shadowState(snap, r.Shadow, now)
	var err error
	switch {
	case sh.started || !sh.pending && snap.Complete:
		// Started already (by a daemon that died before recording it),
		// or gone: nothing waits for glean.
		x.log.Info("the shadow array is not waiting for glean: recorded as started", "job", r.Shadow)
		return true
	case !sh.pending:
		return false // Slurm did not answer in full: look again next round
	case sh.gated:
		err = x.act.StartShadow(ctx, r.Shadow)
	case sh.userHeld, sh.adminHeld && !r.ShadowUnheld: // the latter an older gleand's own hold
		err = x.act.Release(ctx, r.Shadow)
	default:
		if sh.adminHeld {
			x.log.Warn("the shadow array is on an admin hold glean did not put: left to the admin", "job", r.Shadow)
		}
		return true
	}
	if err != nil {
		x.log.Warn("letting the shadow array start", "job", r.Shadow, "err", err)
		return false
	}
	return true
}

// shadowView is a shadow array as the snapshot shows it.
type shadowView struct {
	pending, started    bool // some element pending; some started or ended
	gated               bool // some pending element waits for the wrapper's begin time
	userHeld, adminHeld bool // some pending element on a user's or an admin's hold
}

func shadowState(snap *cluster.Snapshot, id string, now time.Time) shadowView {
	var v shadowView
	for i := range snap.Jobs {
		j := &snap.Jobs[i]
		switch {
		case j.ID != id && j.ArrayJobID != id:
		case !j.Pending():
			v.started = true
		default:
			v.pending = true
			v.gated = v.gated || j.Start.After(now.Add(gateHorizon))
			v.userHeld = v.userHeld || strings.HasPrefix(j.Reason, "JobHeldUser")
			v.adminHeld = v.adminHeld || strings.HasPrefix(j.Reason, "JobHeldAdmin")
		}
	}
	return v
}

// notYet shows the pending elements of shadow arrays glean has not let
// start as what they are, waiting for their begin time: those of records
// not yet let start and, by their comment, those of entries not yet taken
// in (the wrapper's sbatch comes before the entry is in place). Until
// Slurm's scheduler has looked at a new job, squeue gives it a reason under
// which the policy would count it as a claimant, and pilots would give way
// to a job that cannot start. (Not by its expected start: a job behind
// UNLIMITED ones shows a start a year ahead too.) A comment is the user's
// to write: marking a regular job so only keeps pilots from giving way to
// that user's own job.
func notYet(snap *cluster.Snapshot, started map[string]bool) {
	for i := range snap.Jobs {
		j := &snap.Jobs[i]
		if j.Pending() && policy.Reserves(j.Reason) && strings.HasPrefix(j.Comment, spool.ShadowCommentPrefix) &&
			!started[j.ID] && !started[j.ArrayJobID] {
			j.Reason = "BeginTime"
		}
	}
}

// agentSlack is what a pilot needs beyond its tasks and the grace for
// its agent to start (whole seconds of squeue's end time included).
const agentSlack = 30 * time.Second

// Round runs one execution round at now, with a snapshot of its own.
func (x *Executor) Round(ctx context.Context, now time.Time) (ExecStats, error) {
	return x.Observe(ctx, NewObservation(now, x.snap))
}

// Snapshotter is what the executor observes the cluster with.
func (x *Executor) Snapshotter() Snapshotter { return x.snap }

// Observe runs one execution round on the round's observation (taken only
// if some job is active or has an end to finish).
func (x *Executor) Observe(ctx context.Context, obs *Observation) (ExecStats, error) {
	var st ExecStats
	now := obs.Now
	names := make([]string, 0, len(x.in.known))
	for n, r := range x.in.known {
		if r.Active() || x.needsEnd(r) {
			names = append(names, n)
		}
	}
	// Forget what was kept for jobs that need no more rounds (their
	// journals stay on disk), and node runs that are over.
	inactive := func(n string) bool { r := x.in.known[n]; return r == nil || !r.Active() }
	maps.DeleteFunc(x.books, func(n string, _ *book) bool { return inactive(n) && !x.needsEnd(x.in.known[n]) })
	maps.DeleteFunc(x.profiled, func(n string, _ bool) bool { return inactive(n) })
	maps.DeleteFunc(x.deadStarts, func(n string, _ *deadStart) bool { return inactive(n) })
	maps.DeleteFunc(x.deadNodes, func(_ ownerNode, d *deadStart) bool { return d.over(now) })
	if len(names) == 0 {
		return st, nil
	}
	sort.Strings(names)
	x.act = &stallGuard{Actor: x.base, stall: &obs.stall}
	x.readEnded(now)
	snap := obs.Snapshot(ctx)
	st.SlurmDown = !snap.Complete
	if pp := x.opt.Policy.PilotPartition; snap.Complete && pp != "" && snap.Partition(pp) == nil {
		obs.pilotMissing(x.log, pp) // the policy can place no pilot
	}
	jobs := map[string]*cluster.Job{}
	for i := range snap.Jobs {
		jobs[snap.Jobs[i].ID] = &snap.Jobs[i]
	}

	var pst policy.State
	pst.PendingMisses = x.misses
	changed := map[string]bool{}
	x.completeMoves(names)
	allBusy := map[string]time.Time{} // a moved pilot runs its old job's last task
	for _, n := range names {
		r := x.in.known[n]
		x.escalate(ctx, now, r, jobs)
		if x.needsEnd(r) {
			if r.State == spool.StateCancelled {
				// The attempts its agents stopped are committed as cancelled.
				if b, err := x.book(r); err == nil {
					x.work(now, r, b, snap, jobs)
				}
			}
			if x.finish(ctx, now, r, snap, jobs) {
				st.Ended++
			}
			continue
		}
		if r.State == spool.StateWaiting {
			continue
		}
		b, err := x.book(r)
		if err != nil {
			x.log.Warn("reading the journal", "job", n, "err", err)
			continue
		}
		if r.Shadow != "" && !r.ShadowReleased && x.startShadow(ctx, now, r, snap) {
			x.opt.Fail.Hit("shadow/released")
			r.ShadowReleased = true
			changed[n] = true
		}
		c, l, running, busy, ok := x.work(now, r, b, snap, jobs)
		if !ok {
			continue // its journal could not be written or read: next round
		}
		for p, end := range busy {
			allBusy[p] = end
		}
		st.Committed += c
		st.Lost += l
		if c+l > 0 {
			changed[n] = true
		}
		nPilots := len(pst.Pilots)
		if x.pilotsSeen(now, r, snap, jobs, busy, &pst) {
			changed[n] = true
		}
		if x.watchStarts(now, r, b, busy, jobs) {
			changed[n] = true
		}
		total := r.Entry.Tasks
		done, failed := 0, 0
		for _, why := range b.final {
			if why == spool.ReasonCompleted {
				done++
			} else {
				failed++
			}
		}
		counts := spool.Counts{Total: total, Done: done, Failed: failed, Running: running,
			Pending: max(0, total-done-failed-running)}
		if counts != r.Tasks {
			r.Tasks = counts
			changed[n] = true
		}
		if x.seedProfile(r) {
			changed[n] = true
		}
		taskTime := b.taskTime(r)
		left, budgeted := r.BudgetLeft()
		// Out of budget, with nothing that could still run its tasks: no
		// plain allocation left (Fair's shadow array runs them without
		// pilots, while an element of it is queued or running), no pilot
		// left, and not enough budget for one more.
		onePilot := x.opt.Policy.ShortestPilot(taskTime) // what the policy would submit
		spent := budgeted && counts.Pending > 0 && running == 0 && !shadowAlive(r, snap) && !livePilots(r) && left < onePilot
		if done+failed >= total || spent {
			r.State, r.Ended, r.Exit = spool.StateDone, now, 0
			detail := fmt.Sprintf("%d done, %d failed", done, failed)
			switch {
			case spent && r.PilotTimeSpent == 0 && len(r.PilotJobs) == 0:
				// Nothing was spent: the budget cannot pay for one pilot.
				r.State, r.Exit = spool.StateFailed, max(b.exit, 1)
				r.Reason = fmt.Sprintf("budget of %g node-hours is less than one pilot needs (%v: a task as estimated, or "+
					"policy.min_pilot_time): no task ran; give a larger budget, a shorter -t, or profile=", r.Entry.Glean.Budget, onePilot)
				detail += fmt.Sprintf(", %d not run (budget below one pilot)", counts.Pending)
			case spent:
				r.State, r.Exit = spool.StateFailed, max(b.exit, 1)
				r.Reason = fmt.Sprintf("budget of %g node-hours spent: %d of %d tasks not run", r.Entry.Glean.Budget, counts.Pending, total)
				detail += fmt.Sprintf(", %d not run (budget spent)", counts.Pending)
			case failed > 0:
				r.State, r.Exit = spool.StateFailed, b.exit
				r.Reason = fmt.Sprintf("%d of %d tasks failed", failed, total)
			}
			if dl := r.Entry.Deadline; !dl.IsZero() && now.After(dl) {
				detail += fmt.Sprintf(", %v past its deadline %s", now.Sub(dl).Round(time.Second), dl.UTC().Format(time.RFC3339))
			}
			if err := x.in.store(r, spool.Event{Time: now, Event: r.State, Detail: detail}, "end/put"); err != nil {
				x.log.Error("recording the end", "job", n, "err", err)
				continue
			}
			delete(changed, n)
			pst.Pilots = pst.Pilots[:nPilots] // an ended job's pilots leave by themselves
			x.opt.Fail.Hit("end/recorded")
			if x.finish(ctx, now, r, snap, jobs) {
				st.Ended++
			}
			continue
		}
		state := spool.StateQueued
		if running > 0 {
			state = spool.StateRunning
		}
		if state != r.State {
			r.State = state
			changed[n] = true
		}
		mode, err := policy.ParseMode(r.Mode)
		if err != nil {
			mode = x.opt.DefaultMode
		}
		ej := policy.ElasticJob{ID: n, Mode: mode, Submit: r.Submitted, TasksPending: counts.Pending,
			TasksRunning: running, TaskTime: taskTime, Owner: strconv.Itoa(r.UID), Budgeted: budgeted, BudgetLeft: left, Deadline: r.Entry.Deadline,
			HoldPilots: x.holding(n, now), HeldNodes: x.heldNodes(r.UID, now)}
		if ej.HoldPilots {
			st.Held++
		}
		if mode == policy.Fair && r.Shadow != "" {
			ej.BaseJobIDs = []string{r.Shadow}
		}
		pst.Jobs = append(pst.Jobs, ej)
	}
	markBusy(pst.Pilots, allBusy)
	started := map[string]bool{}
	for _, r := range x.in.known {
		if r.Shadow != "" && r.ShadowReleased {
			started[r.Shadow] = true
		}
	}
	notYet(snap, started)
	st.HeldNodes = x.heldNodeCount(now)
	// FIFO among elastic jobs, deadlines first among an owner's own.
	policy.Order(pst.Jobs)

	var acts []policy.Action
	if snap.Complete {
		// Slurm not answering: whatever the policy would do now would
		// wait for the Slurm timeout in each call and stall the round
		// (results are still committed above); decide again when it answers.
		acts = policy.Decide(snap, pst, x.opt.Policy, now)
		x.misses = pst.NextMisses(acts)
	}
	st.Actions = acts
	var submits []policy.Action
	for _, a := range acts {
		r := x.in.known[a.Job]
		if r == nil {
			continue
		}
		switch a.Kind {
		case policy.SubmitPilot:
			submits = append(submits, a) // all at once, below
		case policy.CancelPilot:
			p := pilotOf(r, a.Pilot)
			if p == nil {
				continue
			}
			if a.Cause == policy.CauseTimeout {
				// Pending longer than its timeout: cancelled only if it is
				// still pending, so that one Slurm started meanwhile goes
				// on. A pending pilot ends no attempt: nothing to record.
				if err := x.act.CancelPendingPilot(ctx, a.Job, a.Pilot); err != nil {
					x.log.Warn("cancelling a pending pilot", "pilot", a.Pilot, "err", err)
					continue
				}
				st.Cancelled++
				x.log.Info("pending pilot cancelled", "job", a.Job, "pilot", a.Pilot, "cause", a.Cause.String(), "why", a.Reason)
				continue
			}
			if p.Cancelled {
				continue // leaving already (the policy sees it as retiring)
			}
			// Recorded before the cancel, so that the attempts it ends are
			// committed as give-way, not as failures. A running pilot is
			// signalled: TERM to its agent alone, which gives its tasks the
			// whole grace, hands them back and exits, so that the pilot
			// ends (escalate scancels it if it is still there after the
			// grace); a pending one is simply cancelled.
			running := jobs[a.Pilot] != nil && jobs[a.Pilot].Holds()
			p.Cancelled, p.Cause = true, a.Cause.String()
			if running {
				p.Signalled = now
			}
			if err := x.records.Put(r); err != nil {
				x.log.Error("recording a cancel", "job", a.Job, "err", err)
				continue
			}
			x.opt.Fail.Hit("cancel/recorded")
			how, err := "signalled", error(nil)
			if running {
				err = x.act.SignalPilot(ctx, a.Job, a.Pilot)
			} else {
				how, err = "cancelled", x.act.CancelPilot(ctx, a.Job, a.Pilot)
			}
			if err != nil {
				// Undone, so that the next round decides again and the
				// agent still gets its own TERM (and the grace).
				x.log.Warn("cancelling a pilot", "pilot", a.Pilot, "err", err)
				p.Cancelled, p.Cause, p.Signalled = false, "", time.Time{}
				if err := x.records.Put(r); err != nil {
					x.log.Error("recording a failed cancel", "job", a.Job, "err", err)
				}
				continue
			}
			st.Cancelled++
			x.log.Info("pilot "+how, "job", a.Job, "pilot", a.Pilot, "cause", a.Cause.String(), "claimant", a.Claimant)
		case policy.RetirePilot:
			p := pilotOf(r, a.Pilot)
			if p == nil || p.Retiring {
				continue
			}
			p.Retiring, p.Cause = true, a.Cause.String()
			if err := x.putControl(r, false); err != nil {
				x.log.Error("retiring a pilot", "pilot", a.Pilot, "err", err)
				continue
			}
			x.opt.Fail.Hit("retire/control-written")
			changed[a.Job] = true
			st.Retired++
		case policy.MovePilot:
			if err := x.movePilot(a); err != nil {
				x.log.Warn("moving a pilot", "pilot", a.Pilot, "from", a.Job, "to", a.To, "err", err)
				continue
			}
			x.log.Info("pilot moved", "pilot", a.Pilot, "from", a.Job, "to", a.To)
		case policy.CancelBase:
			if err := x.act.CancelPending(ctx, a.Base); err != nil {
				x.log.Warn("cancelling pending shadow elements", "job", a.Base, "err", err)
			}
		}
	}
	st.Submitted += x.submitPilots(ctx, now, submits)
	for n := range changed {
		if err := x.records.Put(x.in.known[n]); err != nil {
			x.log.Error("recording", "job", n, "err", err)
		}
	}
	return st, nil
}

// pilotsPerRequest bounds the pilots of one helper request (the helper
// takes up to privhelper.MaxPilotsPerRequest).
const pilotsPerRequest = 32

// submitPilots submits a round's new pilots, job by job: every intent of
// the job is recorded with its token (one write), then the helper submits
// them in one request (its sbatches run concurrently), then their ids are
// recorded (one write). A crash between the two writes leaves tokens that
// the next round adopts from squeue (the pilots' comments), or forgets. A
// pilot's Submitted is when its sbatch returned, so that its pending
// timeout runs from when Slurm took it. It returns how many it submitted.
func (x *Executor) submitPilots(ctx context.Context, now time.Time, acts []policy.Action) int {
	var order []string
	byJob := map[string][]policy.Action{}
	for _, a := range acts {
		if byJob[a.Job] == nil {
			order = append(order, a.Job)
		}
		byJob[a.Job] = append(byJob[a.Job], a)
	}
	submitted := 0
	for _, name := range order {
		r := x.in.known[name]
		first := len(r.PilotJobs)
		for _, a := range byJob[name] {
			r.PilotJobs = append(r.PilotJobs, spool.PilotJob{Token: spool.NewNonce(), Node: a.Node, Submitted: now, TimeLimit: a.TimeLimit})
		}
		if err := x.records.Put(r); err != nil {
			x.log.Error("recording pilots before their submission", "job", name, "err", err)
			r.PilotJobs = r.PilotJobs[:first]
			continue
		}
		x.opt.Fail.Hit("pilot/intent-recorded")
		for lo := first; lo < len(r.PilotJobs); lo += pilotsPerRequest {
			hi := min(lo+pilotsPerRequest, len(r.PilotJobs))
			ids, err := x.act.SubmitPilots(ctx, name, slices.Clone(r.PilotJobs[lo:hi]))
			returned := x.clock()
			if privhelper.IsRefusal(err) {
				// Refused before any sbatch: the record's intents are
				// forgotten next round, and its next requests would be
				// refused too.
				x.pilotsRefused(now, r, err)
				break
			}
			if err != nil {
				// An sbatch whose answer was lost may still have submitted
				// its pilot: the intent stays until the next round's
				// snapshot adopts it by its token, or shows it never was.
				x.log.Warn("submitting pilots", "job", name, "pilots", hi-lo, "err", err)
			}
			x.opt.Fail.Hit("pilot/submitted")
			for i, id := range ids {
				if id == "" || lo+i >= hi {
					continue
				}
				p := &r.PilotJobs[lo+i]
				p.ID, p.Submitted = id, returned
				r.Pilots++
				submitted++
				x.log.Info("pilot submitted", "job", name, "pilot", id, "node", p.Node, "limit", policy.FormatDuration(p.TimeLimit))
			}
		}
		if err := x.records.Put(r); err != nil {
			x.log.Error("recording pilots", "job", name, "err", err)
		}
	}
	return submitted
}

// clock is the time now (ExecOptions.Clock, else the system's).
func (x *Executor) clock() time.Time {
	if x.opt.Clock != nil {
		return x.opt.Clock()
	}
	return time.Now()
}

func pilotOf(r *spool.Record, id string) *spool.PilotJob {
	for i := range r.PilotJobs {
		if r.PilotJobs[i].ID == id && r.PilotJobs[i].Ended.IsZero() {
			return &r.PilotJobs[i]
		}
	}
	return nil
}

func (x *Executor) book(r *spool.Record) (*book, error) {
	n := r.DirName()
	if b := x.books[n]; b != nil {
		return b, nil
	}
	evs, err := x.records.TaskEvents(n)
	if err != nil {
		return nil, err
	}
	b := newBook(evs)
	x.books[n] = b
	return b, nil
}

// work commits r's results and takes back its dead leases; it returns
// the attempts committed, the leases taken back, the tasks running and
// the pilots running them.
func (x *Executor) work(now time.Time, r *spool.Record, b *book, snap *cluster.Snapshot, jobs map[string]*cluster.Job) (committed, lost, running int, busy map[string]time.Time, ok bool) {
	busy = map[string]time.Time{}
	ws, err := x.opt.Spool.ScanWork(r.UID, r.ID)
	if err != nil {
		x.log.Warn("reading the work directory", "job", r.DirName(), "err", err)
		return 0, 0, r.Tasks.Running, busy, true
	}
	for _, p := range ws.Problems {
		x.log.Warn("work directory", "job", r.DirName(), "err", p)
	}
	// Each new result is judged (against the book as it grows, so that two
	// attempts of a task in one round are judged in order), the round's
	// events of the job go to the journal in one write and one fsync, and
	// only then are their files removed.
	var evs []spool.Event
	var results []string
	for _, ri := range ws.Results {
		if ri.Err == nil && !b.committed[ri.Result.Attempt] && r.Entry.ArrayContains(ri.Result.Task) {
			ev := x.judge(r, b, ri.Result, snap, jobs)
			b.add(ev)
			evs = append(evs, spool.Event{Time: now, Event: "task", Task: &ev})
		} else if ri.Err != nil {
			x.log.Warn("discarding a result", "job", r.DirName(), "file", ri.Name, "err", ri.Err)
		}
		results = append(results, ri.Name)
	}
	if !x.journal(r, b, evs, "commit/journaled") {
		return 0, 0, r.Tasks.Running, busy, false
	}
	committed = len(evs)
	for _, name := range results {
		if err := x.opt.Spool.RemoveResult(r.UID, r.ID, name); err != nil {
			x.log.Warn("removing a committed result", "job", r.DirName(), "file", name, "err", err)
		}
	}
	evs = evs[:0]
	var dead []spool.LeaseInfo
	for _, l := range ws.Leases {
		if !r.Entry.ArrayContains(l.Task) {
			// No agent leases a task outside the array: the owner's garbage,
			// which would count towards nothing real.
			x.log.Warn("removing a lease outside the array", "job", r.DirName(), "task", l.Task)
			_ = x.opt.Spool.RemoveLease(r.UID, r.ID, l.Task, "")
			continue
		}
		if !x.leaseLost(now, l, r, snap, jobs) {
			running++
			// When its task is expected to end (zero: unknown), so that the
			// policy lets a pilot about to be free give way first.
			end := time.Time{}
			if tt := b.taskTime(r); tt > 0 && !l.Lease.Started.IsZero() {
				end = l.Lease.Started.Add(tt)
			}
			if prev, ok := busy[l.Lease.Pilot]; !ok || (!prev.IsZero() && (end.IsZero() || end.After(prev))) {
				busy[l.Lease.Pilot] = end
			}
			continue
		}
		// The lease's own attempt id, so that a daemon that dies between
		// the journal and the unlink does not commit the loss twice.
		attempt := l.Lease.Attempt
		if attempt == "" {
			attempt = fmt.Sprintf("lost-%d-%d", l.Task, l.Heartbeat.UnixNano())
		}
		if b.committed[attempt] {
			_ = x.opt.Spool.RemoveLease(r.UID, r.ID, l.Task, l.Lease.Attempt)
			continue
		}
		ev := spool.TaskEvent{Index: l.Task, Attempt: attempt, Pilot: l.Lease.Pilot, Node: l.Lease.Node,
			Start: l.Lease.Started, End: now}
		// Why its pilot went, from glean's record and the snapshot; the
		// lease's pilot and node are the owner's claim, so a lie only
		// changes which expected kill it is, and the caps still hold.
		ev.Reason = x.killReason(r, l.Lease.Pilot, l.Lease.Node, l.Heartbeat, snap, jobs)
		if ev.Reason == "" {
			ev.Reason = spool.ReasonLost
		}
		if b.final[l.Task] != "" {
			ev.Reason = spool.ReasonDuplicate
		} else {
			x.cap(b, &ev)
		}
		b.add(ev)
		evs = append(evs, spool.Event{Time: now, Event: "task", Task: &ev})
		dead = append(dead, l)
	}
	if !x.journal(r, b, evs, "lost/journaled") {
		return committed, 0, running, busy, false
	}
	for _, l := range dead {
		if err := x.opt.Spool.RemoveLease(r.UID, r.ID, l.Task, l.Lease.Attempt); err != nil {
			x.log.Warn("removing a dead lease", "job", r.DirName(), "task", l.Task, "err", err)
		}
		x.log.Info("task taken back from a dead pilot", "job", r.DirName(), "task", l.Task, "pilot", l.Lease.Pilot)
	}
	return committed, len(dead), running, busy, true
}

// journal appends a job's events of the round (already added to its book)
// in one write and one fsync. If that fails the journal holds none of them:
// the book is dropped (the next round reads it again from the journal),
// nothing is removed and the job is left alone this round (false).
func (x *Executor) journal(r *spool.Record, b *book, evs []spool.Event, point string) bool {
	if len(evs) == 0 {
		return true
	}
	if err := x.records.JournalAll(r, evs); err != nil {
		x.log.Error("journal", "job", r.DirName(), "events", len(evs), "err", err)
		delete(x.books, r.DirName())
		return false
	}
	x.opt.Fail.Hit(point)
	return true
}

// leaseLost: not refreshed within the heartbeat timeout; or its pilot is
// one of glean's that Slurm no longer shows (at once: a pilot seen gone
// writes no new lease); or another job (a shadow element) that is not
// running, with a little slack for a lease written by a job that started
// after the snapshot.
func (x *Executor) leaseLost(now time.Time, l spool.LeaseInfo, r *spool.Record, snap *cluster.Snapshot, jobs map[string]*cluster.Job) bool {
	age := now.Sub(l.Heartbeat)
	if age > x.opt.HeartbeatTimeout {
		return true
	}
	for _, p := range r.PilotJobs {
		if p.ID != "" && p.ID == l.Lease.Pilot && !p.Ended.IsZero() {
			return true
		}
		// The SPANK epilog marker: Slurm ran the pilot's epilog, so its
		// agent is gone (killed, or the node took the job down). Only for
		// a pilot this record lists: the lease's pilot is the owner's claim.
		if p.ID != "" && p.ID == l.Lease.Pilot {
			if _, ok := x.ended[p.ID]; ok {
				x.log.Info("pilot ended (SPANK epilog marker): its task is taken back at once", "job", r.DirName(), "pilot", p.ID, "task", l.Task)
				return true
			}
		}
	}
	if !snap.Complete || age < 15*time.Second {
		return false
	}
	j := jobs[l.Lease.Pilot]
	return j == nil || !j.Holds()
}

// endedKeep is how long an epilog marker is kept: its pilot's leases are
// taken back within a round or two; older markers only take space.
const endedKeep = 10 * time.Minute

// readEnded reads the SPANK epilog markers (spank/glean.c) written as the
// daemon's own user, and removes those older than endedKeep.
func (x *Executor) readEnded(now time.Time) {
	ended, err := x.opt.Spool.EndedPilots(os.Getuid())
	if err != nil {
		x.log.Warn("reading the epilog markers", "err", err)
	}
	for id, at := range ended {
		if now.Sub(at) > endedKeep {
			_ = x.opt.Spool.RemoveEnded(id)
			delete(ended, id)
		}
	}
	x.ended = ended
}

// judge decides an attempt's end reason from the daemon's and Slurm's
// facts. The agent's outcome (written as the job's owner) says only how the
// process ended: by itself (exit 0: completed, else failed) or killed
// (after the agent's TERM, or by a signal it did not send). Why a killed
// attempt ended comes from glean's record and the snapshot (killReason);
// a kill nothing explains is the pilot's loss when the agent stopped the
// task, and the task's failure when a signal the agent did not send killed
// it (the OOM killer). Failures consume the retry budget; every attempt
// counts towards the attempt and waste caps.
func (x *Executor) judge(r *spool.Record, b *book, res spool.Result, snap *cluster.Snapshot, jobs map[string]*cluster.Job) spool.TaskEvent {
	ev := spool.TaskEvent{Index: res.Task, Attempt: res.Attempt, Exit: res.Exit, Pilot: res.Pilot, Node: res.Node,
		Start: res.Start, End: res.End, Checkpointed: res.Outcome == spool.OutcomeCheckpointed,
		Detail: clipDetail(res.Detail)} // the agent's note (the owner's words: shown, never judged)
	if b.final[res.Task] != "" {
		ev.Reason = spool.ReasonDuplicate // ran twice; on the record once
		return ev
	}
	switch res.Outcome {
	case spool.OutcomeExited:
		if res.Exit == 0 {
			ev.Reason, ev.Final = spool.ReasonCompleted, true
			return ev
		}
	case spool.OutcomeCheckpointed, spool.OutcomeHandedBack, spool.OutcomeSignaled:
		ev.Reason = x.killReason(r, res.Pilot, res.Node, res.End, snap, jobs)
		if ev.Reason == "" && res.Outcome != spool.OutcomeSignaled {
			ev.Reason = spool.ReasonLost
		}
	}
	if ev.Reason == "" {
		ev.Reason = spool.ReasonFailed
		if b.failures[res.Task]+1 > x.opt.Retries {
			ev.Final = true
			ev.Detail = fmt.Sprintf("failed %d times (limits.task_retries = %d)", b.failures[res.Task]+1, x.opt.Retries)
		}
	}
	x.cap(b, &ev)
	return ev
}

// clipDetail bounds an agent's note kept in the journal.
func clipDetail(s string) string {
	const limit = 300
	if len(s) > limit {
		return strings.ToValidUTF8(s[:limit], "") + "..."
	}
	return s
}

// cap ends a task for good when this attempt reaches the attempt cap or
// the waste cap, so that a task that always checkpoints (or whose pilots
// always die) cannot run forever.
func (x *Executor) cap(b *book, ev *spool.TaskEvent) {
	if ev.Final {
		return
	}
	n, waste := b.attempts[ev.Index]+1, b.waste[ev.Index]+ev.RunTime()
	switch {
	case n >= x.opt.MaxAttempts:
		ev.Detail = fmt.Sprintf("%s; %d attempts (limits.max_attempts = %d)", ev.Reason, n, x.opt.MaxAttempts)
	case x.opt.MaxWaste > 0 && waste >= x.opt.MaxWaste:
		ev.Detail = fmt.Sprintf("%s; %s run without completing (limits.max_waste = %s)", ev.Reason,
			waste.Round(time.Second), x.opt.MaxWaste)
	default:
		return
	}
	ev.Reason, ev.Final = spool.ReasonFailed, true
	if ev.Exit == 0 {
		ev.Exit = 1
	}
}

// timeLimitSlack allows for squeue's whole seconds and the agent's
// reaction to TERM when matching an attempt's end to its pilot's end.
const timeLimitSlack = 5 * time.Second

// killReason says why an attempt that was killed, or whose lease was
// lost, ended, from what glean recorded and the snapshot shows; "" when
// nothing does. pilot and node are what the agent wrote (the job's owner:
// a lie can only pick another expected kill, bounded by the caps); ended
// is when the attempt ended (or its lease's last heartbeat).
//
// In order: the job was cancelled; glean cancelled the pilot (give-way,
// pending timeout, no work: the attempts it ends are give-way; a pilot of
// an ended job: cancelled); the node is down or drained (node failure);
// Slurm shows the pilot PREEMPTED; the attempt ended within the grace of
// the pilot's end (time limit); a pilot of the record is gone and another
// job holds its node (preempted).
func (x *Executor) killReason(r *spool.Record, pilot, node string, ended time.Time, snap *cluster.Snapshot, jobs map[string]*cluster.Job) string {
	if r.State == spool.StateCancelled {
		return spool.ReasonCancelled
	}
	var p *spool.PilotJob
	for i := range r.PilotJobs {
		if r.PilotJobs[i].ID == pilot {
			p = &r.PilotJobs[i]
		}
	}
	p = x.movedCopy(p)
	if p != nil && p.Cancelled {
		if p.Cause == causeJobEnded {
			return spool.ReasonCancelled
		}
		return spool.ReasonGiveWay
	}
	// A shadow-array element is no pilot of the record: only the node and
	// Slurm's view of the job speak for it.
	if node == "" && p != nil {
		node = p.Node
	}
	for _, n := range snap.Nodes {
		if n.Name == node && (n.State == cluster.NodeDown || n.State == cluster.NodeDrain) {
			return spool.ReasonNodeFailure
		}
	}
	j := jobs[pilot]
	if j != nil && strings.HasPrefix(strings.ToUpper(j.RawState), "PREEMPT") {
		return spool.ReasonPreempted
	}
	var end time.Time
	switch {
	case j != nil && j.State == cluster.JobRunning && !j.End.IsZero():
		// (A completing pilot's End is when it was cancelled or killed,
		// not its time limit.)
		end = j.End
	case p != nil && !p.End.IsZero():
		end = p.End
	case p != nil && !p.Started.IsZero() && p.TimeLimit > 0 && p.TimeLimit != cluster.Unlimited:
		end = p.Started.Add(p.TimeLimit)
	}
	if !end.IsZero() && !ended.IsZero() && !ended.Before(end.Add(-x.opt.Policy.Grace-timeLimitSlack)) {
		return spool.ReasonTimeLimit
	}
	if p != nil && snap.Complete && (j == nil || !j.Holds()) && node != "" {
		for i := range snap.Jobs {
			o := &snap.Jobs[i]
			if o.ID != pilot && o.Holds() && slices.Contains(o.Nodes, node) {
				return spool.ReasonPreempted
			}
		}
	}
	return ""
}

// giveWayMargin is how long past the grace glean waits for a signalled
// pilot to end by itself before it scancels it (Slurm then KILLs it
// KillWait later).
const giveWayMargin = 5 * time.Second

// escalate scancels the pilots glean signalled to give way that are still
// there a grace (plus a margin) later: an agent that did not stop.
func (x *Executor) escalate(ctx context.Context, now time.Time, r *spool.Record, jobs map[string]*cluster.Job) {
	for i := range r.PilotJobs {
		p := &r.PilotJobs[i]
		if p.Signalled.IsZero() || p.Killed || !p.Ended.IsZero() || now.Sub(p.Signalled) < x.opt.Policy.Grace+giveWayMargin {
			continue
		}
		if j := jobs[p.ID]; j == nil || !j.Holds() {
			continue
		}
		p.Killed = true
		if err := x.records.Put(r); err != nil {
			x.log.Error("recording a cancel", "job", r.DirName(), "err", err)
			p.Killed = false
			continue
		}
		if err := x.act.CancelPilot(ctx, r.DirName(), p.ID); err != nil {
			// Tried again next round while Slurm shows it holding its node.
			x.log.Warn("cancelling a pilot that did not give way", "pilot", p.ID, "err", err)
			p.Killed = false
			if err := x.records.Put(r); err != nil {
				x.log.Error("recording a failed cancel", "job", r.DirName(), "err", err)
			}
			continue
		}
		x.log.Warn("pilot still running a grace after it was told to give way: cancelled", "job", r.DirName(), "pilot", p.ID,
			"signalled", p.Signalled)
	}
}

// causeJobEnded is the cause recorded on the pilots of an ended job that
// finish cancels.
const causeJobEnded = "job-ended"

// pilotsSeen updates r's pilots from the snapshot and adds the live ones
// to the policy's state; it reports whether the record changed.
func (x *Executor) pilotsSeen(now time.Time, r *spool.Record, snap *cluster.Snapshot, jobs map[string]*cluster.Job, busy map[string]time.Time, pst *policy.State) bool {
	changed := false
	for i := range r.PilotJobs {
		p := &r.PilotJobs[i]
		if !p.Ended.IsZero() {
			continue
		}
		if p.ID == "" && x.adopt(r, p, snap) {
			changed = true
		}
		if p.ID == "" {
			continue
		}
		j := jobs[p.ID]
		if j == nil || !(j.Pending() || j.Holds()) {
			if snap.Complete {
				p.Ended, changed = now, true
			}
			continue
		}
		if p.MovedTo != "" {
			continue // the record it moved to shows it
		}
		taskEnd, isBusy := busy[p.ID]
		// Its pending timeout runs from when Slurm took it: the time its
		// sbatch returned, or squeue's submit time (whole seconds; the
		// only one known for an adopted pilot), whichever is later.
		submitted := p.Submitted
		if j.Submit.After(submitted) {
			submitted = j.Submit
		}
		// A pilot glean cancelled or signalled is leaving: it takes no
		// task, is not given again, and its node counts as free.
		pp := policy.Pilot{ID: p.ID, Job: r.DirName(), Node: p.Node, Submitted: submitted, Retiring: p.Retiring || p.Cancelled,
			Busy: isBusy, TaskEnd: taskEnd, Leaving: p.Cancelled}
		if j.Holds() {
			pp.State, pp.Start, pp.End = policy.PilotRunning, j.Start, j.End
			if len(j.Nodes) > 0 {
				pp.Node = j.Nodes[0]
			}
			if p.Started.IsZero() {
				p.Started, changed = now, true
				pst.Started = true
			}
			if j.State == cluster.JobRunning && !j.End.IsZero() && !j.End.Equal(p.End) {
				p.End, changed = j.End, true // for judging time-limit ends
			}
		}
		pst.Pilots = append(pst.Pilots, pp)
	}
	// Keep the record small: forget pilots that ended long ago, and
	// submissions that never happened.
	n := len(r.PilotJobs)
	r.PilotJobs = slices.DeleteFunc(r.PilotJobs, func(p spool.PilotJob) bool {
		if !p.Ended.IsZero() && now.Sub(p.Ended) > time.Hour {
			if p.MovedTo == "" {
				r.PilotTimeSpent += p.Charge() // a budget still counts it
			}
			return true
		}
		return p.ID == "" && snap.Complete
	})
	return changed || len(r.PilotJobs) != n
}

// adopt finds the pilot of a submission the daemon recorded by token only
// (it died between the sbatch and recording the id): the owner's job in
// the pilot partition whose comment is the token's.
func (x *Executor) adopt(r *spool.Record, p *spool.PilotJob, snap *cluster.Snapshot) bool {
	if p.Token == "" || !snap.Complete {
		return false
	}
	want := privhelperComment(p.Token)
	for i := range snap.Jobs {
		j := &snap.Jobs[i]
		if j.Comment == want && j.User == r.User && (x.opt.PilotPartition == "" || j.Partition == x.opt.PilotPartition) {
			p.ID = j.ID
			x.log.Info("pilot adopted after a restart", "job", r.DirName(), "pilot", j.ID)
			return true
		}
	}
	return false
}

// privhelperComment is privhelper.PilotComment (the daemon does not import
// the helper's package).
func privhelperComment(token string) string { return "glean-pilot:" + token }

// needsEnd: the job ended (done, failed or cancelled) and something is
// left to do: stop its agents and pilots, release its anchor.
func (x *Executor) needsEnd(r *spool.Record) bool {
	if r == nil {
		return false
	}
	switch r.State {
	case spool.StateDone, spool.StateFailed:
		return !r.AnchorReleased || livePilots(r)
	case spool.StateCancelled:
		return livePilots(r) && r.Entry != nil
	}
	return false
}

// seedProfile gives r, once, the runtimes of its profile: the completed
// task runtimes of the owner's most recently ended job with the same
// --glean profile that has some (of the last three; the last
// MaxProfileRuntimes of them). It reports whether r changed.
func (x *Executor) seedProfile(r *spool.Record) bool {
	if r.Entry == nil || r.Entry.Glean.Profile == "" || r.ProfileRuntimes != nil || x.profiled[r.DirName()] {
		return false
	}
	x.profiled[r.DirName()] = true // looked at once per daemon: a job ended later does not count
	var ended []*spool.Record
	for _, o := range x.in.known {
		if o.UID == r.UID && o.Entry != nil && o.Entry.Glean.Profile == r.Entry.Glean.Profile &&
			(o.State == spool.StateDone || o.State == spool.StateFailed) {
			ended = append(ended, o)
		}
	}
	// The latest first (ties by name); the first of the last three with a
	// completed task.
	slices.SortFunc(ended, func(a, b *spool.Record) int {
		return cmp.Or(b.Ended.Compare(a.Ended), strings.Compare(a.DirName(), b.DirName()))
	})
	var b *book
	var last *spool.Record
	for _, o := range ended[:min(len(ended), 3)] {
		evs, err := x.records.TaskEvents(o.DirName()) // not x.book: an ended job's book is not kept
		if err != nil {
			x.log.Warn("reading the profile's last jobs", "job", r.DirName(), "from", o.DirName(), "err", err)
			continue
		}
		if b, last = newBook(evs), o; len(b.runtimes) > 0 {
			break
		}
	}
	if b == nil || len(b.runtimes) == 0 {
		return false
	}
	r.ProfileRuntimes = slices.Clone(b.runtimes[max(0, len(b.runtimes)-spool.MaxProfileRuntimes):])
	x.log.Info("task runtimes from the profile's last job", "job", r.DirName(), "profile", r.Entry.Glean.Profile,
		"from", last.DirName(), "runtimes", len(r.ProfileRuntimes))
	return true
}

// shadowAlive reports whether r's shadow array may still run a task: an
// element of it is queued or running, or the snapshot is not whole.
func shadowAlive(r *spool.Record, snap *cluster.Snapshot) bool {
	if r.Shadow == "" {
		return false
	}
	if !snap.Complete {
		return true
	}
	return slices.ContainsFunc(snap.Jobs, func(j cluster.Job) bool {
		return (j.ID == r.Shadow || j.ArrayJobID == r.Shadow) && (j.Pending() || j.Holds())
	})
}

func livePilots(r *spool.Record) bool {
	return slices.ContainsFunc(r.PilotJobs, func(p spool.PilotJob) bool { return p.Ended.IsZero() && p.MovedTo == "" })
}

// finish does what is left of an ended job; it reports whether the
// anchor was released this round.
func (x *Executor) finish(ctx context.Context, now time.Time, r *spool.Record, snap *cluster.Snapshot, jobs map[string]*cluster.Job) bool {
	n := r.DirName()
	if !snap.Complete {
		return false // Slurm not answering: the next round does it
	}
	if err := x.putControl(r, true); err != nil {
		x.log.Error("telling the agents to stop", "job", n, "err", err)
	}
	x.opt.Fail.Hit("end/stop-written")
	// Pending shadow elements, once: the snapshot shows them until then.
	if r.Shadow != "" && r.State != spool.StateCancelled {
		var err error
		if pendingPart(snap, r.Shadow) {
			if err = x.act.CancelPending(ctx, r.Shadow); err != nil {
				x.log.Warn("cancelling pending shadow elements", "job", r.Shadow, "err", err)
			}
		}
		if err == nil {
			x.opt.Fail.Hit("end/pending-cancelled") // none pending any more; the pilots not yet
		}
	}
	changed := false
	for i := range r.PilotJobs {
		p := &r.PilotJobs[i]
		if !p.Ended.IsZero() {
			continue
		}
		j := jobs[p.ID]
		if j != nil && !j.Pending() && !j.Holds() {
			j = nil // ended (squeue -t all shows it for MinJobAge)
		}
		if j == nil && snap.Complete {
			p.Ended, changed = now, true
			continue
		}
		// Idle pilots of a finished job leave by themselves; pending ones
		// and those of a cancelled job are cancelled.
		// Cancelled again every round while Slurm still shows it pending,
		// or until one scancel of it succeeded: a failed scancel is
		// retried, this one's or a give-way's that left it pending (the
		// job ended, so the policy no longer sees its pilots, and no
		// pending timeout catches them).
		retry := !p.Cancelled || p.Cause == causeJobEnded && !p.Killed
		if j != nil && (j.Pending() || r.State == spool.StateCancelled) && (retry || j.Pending()) && p.MovedTo == "" {
			if !p.Cancelled {
				p.Cancelled, p.Cause, changed = true, causeJobEnded, true
			}
			if err := x.act.CancelPilot(ctx, n, p.ID); err != nil {
				x.log.Warn("cancelling a pilot of an ended job", "pilot", p.ID, "err", err)
			} else {
				if !p.Killed {
					p.Killed, changed = true, true
				}
				x.opt.Fail.Hit("end/pilot-cancelled")
			}
		}
	}
	released := false
	if aj := jobs[r.Anchor]; (r.State == spool.StateDone || r.State == spool.StateFailed) && !r.AnchorReleased && (aj == nil || !aj.Pending()) {
		// Not pending any more (it ran, or is gone): released by a daemon
		// that died before recording it (end/released); releasing again
		// would fail every round ("Job has already finished").
		r.AnchorReleased, changed = true, true
		x.log.Info("the anchor is no longer held: recorded as released", "job", n, "anchor", r.Anchor)
	}
	if (r.State == spool.StateDone || r.State == spool.StateFailed) && !r.AnchorReleased {
		if err := x.act.Release(ctx, r.Anchor); err != nil {
			x.log.Warn("releasing the anchor", "job", n, "anchor", r.Anchor, "err", err)
		} else {
			x.opt.Fail.Hit("end/released")
			r.AnchorReleased, changed, released = true, true, true
			x.log.Info("job ended; anchor released", "job", n, "anchor", r.Anchor, "state", r.State, "exit", r.Exit)
		}
	}
	if changed {
		if err := x.records.Put(r); err != nil {
			x.log.Error("recording", "job", n, "err", err)
		}
	}
	return released
}

// putControl writes the job's control file: the retiring pilots, the
// pilots moved to another job, and stop once the job ended.
func (x *Executor) putControl(r *spool.Record, stop bool) error {
	c := spool.Control{Stop: stop}
	for _, p := range r.PilotJobs {
		if p.Retiring && p.Ended.IsZero() {
			c.Retire = append(c.Retire, p.ID)
		}
		addMove(&c, p)
	}
	return x.records.PutControl(r, c)
}

// PolicyConfig turns the site's [policy] into the policy's Config and the
// default mode.
func PolicyConfig(cfg config.Config) (policy.Config, policy.Mode, error) {
	pc := policy.DefaultConfig()
	pc.PilotPartition = cfg.Partitions.Pilot
	pc.Margin = cfg.Policy.Margin.Duration
	pc.Grace = cfg.Policy.Grace.Duration
	pc.MaxPendingPilots = cfg.Policy.MaxPendingPilots
	pc.MaxPilots = cfg.Policy.MaxPilots
	pc.MinPilotTime = cfg.Policy.MinPilotTime.Duration
	// The agent starts a task only if it ends a grace before the pilot.
	pc.TaskSlack = pc.Grace + agentSlack
	mode, err := policy.ParseMode(cfg.Policy.DefaultMode)
	if err != nil {
		return pc, mode, err
	}
	return pc, mode, pc.Validate()
}
