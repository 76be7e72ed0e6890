package agent

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/glean-hpc/glean/sidecar/spool"
)

// Options configure one agent.
type Options struct {
	Shadow   bool          // a shadow-array element: exit once there is nothing to take or stand by for
	Pilot    string        // SLURM_JOB_ID of this pilot or shadow element (results, %j, retire)
	Node     string        // this node's short name (results, %N)
	Env      []string      // the agent's own environment (the pilot's SLURM_* variables)
	End      time.Time     // the allocation's end, if known at start; zero = unknown (see Learn)
	KillWait time.Duration // Slurm's KillWait, if known at start; 0 = unknown (see Learn)
	// Learn, if set, reads what Slurm knows of the allocation (its end,
	// KillWait) in the background while the first tasks start: on 22.05
	// the end takes a squeue (AllocationEnd). Until it answers the end is
	// unknown and every task fits: gleand sized the pilot for at least one
	// task and the grace, and a shadow element's first task always runs.
	Learn func(context.Context) (Limits, error)
	// GaveWay reports whether glean gave way with this pilot: it recorded
	// the pilot as signalled before sending TERM to the agent alone, and
	// will scancel it only after the grace. nil: never.
	GaveWay   func() bool
	Capacity  Capacity      // what the agent may use of the node
	Grace     time.Duration // TERM -> KILL on a give-way (less when Slurm kills sooner), and the margin before End
	Heartbeat time.Duration // lease heartbeats (default 5 s)
	Poll      time.Duration // control and take polling (default 1 s)
	Idle      time.Duration // exit after this long with nothing to take and nothing running (default 30 s)
	Reap      time.Duration // after KILL, how long to wait for a task to go (default 5 s)
	Now       func() time.Time
	Log       *slog.Logger

	// Checkpoint: the tasks' checkpoint directories and the site command.
	Checkpoint Checkpoints
}

// Agent runs one job's tasks on one node.
type Agent struct {
	opt    Options
	ctx    context.Context
	job    *Job
	work   *spool.Work
	order  []int
	demand Demand
	script string // the private copy of the job script

	running map[int]*proc
	done    chan exited
	// Results are written off the loop (two fsyncs), so that the next task
	// starts as soon as one ends; wrote wakes the loop after each write
	// (the lease it removes counts against a %k throttle). An agent with
	// results being written is not idle.
	writes  sync.WaitGroup
	writing atomic.Int32
	wrote   chan struct{}
	hist    *history
	jOff    int64

	ckErr      error // the checkpoint root or the job's directory was refused
	retiring   bool
	taken      int // tasks this agent took
	notStarted int // consecutive attempts that could not be started

	moveTo string // the job (<uid>.<id>) the daemon moved this pilot to (move.go)

	// A shadow element with nothing to take stands by for a task a pilot
	// runs (spool.Work.Standby): standby is that task, -1 for none.
	standby int

	lim     Limits // what the agent knows of its allocation so far
	learned chan learnt
	// termCause: how the TERM that stopped the agent (ctx) is taken
	// (stopGrace's cause), decided once: tasksTermed.
	termCause string
}

// Limits are what Slurm says about the allocation.
type Limits struct {
	End      time.Time     // zero: unknown or unlimited
	KillWait time.Duration // TERM to KILL at the end or on scancel; 0: unknown
}

type learnt struct {
	lim Limits
	err error
}

// Why Run ended, for the log and the tests.
const (
	EndFinished = "job finished" // nothing remains on the record
	EndIdle     = "idle"         // nothing to take for the idle timeout
	EndNoWork   = "no work"      // shadow element: nothing to take or stand by for
	EndNoTime   = "no time"      // no task fits before the allocation's end
	EndRetired  = "retired"      // the daemon asked this pilot to retire
	EndMoved    = "moved"        // the daemon moved this pilot to another job of the owner: MovedTo
	EndStopped  = "stopped"      // the daemon stopped the job
	EndSignaled = "terminated"   // SIGTERM (ctx cancelled)
	EndFailed   = "agent failed" // the spool or the script failed under the agent
	endNone     = ""
)

const (
	defaultBeat = 5 * time.Second
	defaultIdle = 30 * time.Second
	defaultReap = 5 * time.Second
	defaultPoll = time.Second
	maxDone     = 4096 // buffered ends: a waiting goroutine never blocks on a gone loop
	attemptHex  = 8    // random bytes of an attempt id (16 hex digits)
	maxNotStart = 3    // consecutive attempts not started before the agent gives up
)

// New prepares an agent for job on work.
func New(job *Job, work *spool.Work, opt Options) *Agent {
	if opt.Heartbeat <= 0 {
		opt.Heartbeat = defaultBeat
	}
	if opt.Poll <= 0 {
		opt.Poll = defaultPoll
	}
	if opt.Idle <= 0 {
		opt.Idle = defaultIdle
	}
	if opt.Reap <= 0 {
		opt.Reap = defaultReap
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	if opt.Log == nil {
		opt.Log = slog.New(slog.DiscardHandler)
	}
	if opt.Capacity.CPUs < 1 {
		opt.Capacity.CPUs = 1
	}
	work.SyncLater = true // dispatch starts the task, then makes its lease durable
	return &Agent{opt: opt, job: job, work: work, order: job.Order(), demand: TaskDemand(job.Entry.Resources),
		running: map[int]*proc{}, done: make(chan exited, maxDone), standby: -1, wrote: make(chan struct{}, 1), hist: newHistory(),
		lim: Limits{End: opt.End, KillWait: opt.KillWait}, learned: make(chan learnt, 1)}
}

// Run takes and runs tasks until the job is finished, nothing is left to
// take for the idle timeout, the daemon retires or stops this agent, or ctx
// is cancelled (SIGTERM): then every running task gets TERM, the grace,
// KILL, and its result. Every lease taken ends in a result or a release.
// It returns why it ended; the error is for a spool that failed under it.
func (a *Agent) Run(ctx context.Context) (string, error) {
	path, cleanup, err := privateScript(a.job.Script)
	if err != nil {
		return EndFailed, fmt.Errorf("private copy of the job script: %w", err)
	}
	defer cleanup()
	defer a.dropStandby()
	a.script = path
	a.ctx = ctx
	log := a.opt.Log
	markerErr, err := a.opt.Checkpoint.prepareJob(a.job)
	if err != nil {
		log.Warn("no checkpoint directories for this job's tasks", "root", a.opt.Checkpoint.Root, "err", err)
		a.ckErr = err
	} else if markerErr != nil {
		log.Warn("the job's checkpoint marker (retention)", "err", markerErr)
	}
	log.Info("agent starting", "job", a.job.Entry.Anchor, "entry", a.job.ID, "pilot", a.opt.Pilot, "node", a.opt.Node,
		"cpus", a.opt.Capacity.CPUs, "mem_mb", a.opt.Capacity.MemMB, "task_cpus", a.demand.CPUs,
		"task_mem_mb", a.demand.MemMB, "end", a.opt.End, "shadow", a.opt.Shadow)
	if a.opt.Learn != nil {
		go func() {
			l, err := a.opt.Learn(ctx)
			a.learned <- learnt{l, err}
		}()
	}

	tick := time.NewTicker(a.opt.Poll)
	defer tick.Stop()
	var idleSince time.Time
	for {
		now := a.opt.Now()
		if ctx.Err() != nil {
			return a.stopAll(EndSignaled), nil
		}
		c, err := a.work.Control()
		if err != nil {
			log.Warn("reading the control file", "err", err)
		}
		a.noteMove(c)
		if c.Stop {
			why := a.stopAll(EndStopped)
			if a.moveTo != "" {
				return EndMoved, nil
			}
			return why, nil
		}
		if !a.retiring && a.opt.Pilot != "" && slices.Contains(c.Retire, a.opt.Pilot) {
			log.Info("retiring: finishing the running tasks, taking no more", "running", len(a.running))
			a.retiring = true
		}
		a.heartbeat(now)

		why := endNone
		if !a.retiring {
			if why, err = a.dispatch(now); err != nil {
				log.Error("taking a task", "err", err)
			}
		}
		if len(a.running) == 0 && a.writing.Load() == 0 {
			if a.moveTo != "" {
				return a.end(EndMoved), nil
			}
			if a.retiring {
				return a.end(EndRetired), nil
			}
			if n, err := a.work.Remaining(a.order); err == nil && n == 0 {
				return a.end(EndFinished), nil
			}
			if why == EndNoTime {
				return a.end(EndNoTime), nil
			}
			if a.notStarted >= maxNotStart {
				return a.end(EndFailed), errors.New("tasks could not be started; see the results")
			}
			if a.opt.Shadow && !a.retiring && a.standingBy(now) {
				idleSince = time.Time{}
				a.wait(ctx, tick)
				continue
			}
			if a.opt.Shadow {
				// Nothing to take and no pilot's task to stand by for: the
				// plain element would have ended with its task; waiting out
				// the idle timeout would only keep the node from the next
				// job queued there.
				return a.end(EndNoWork), nil
			}
			if idleSince.IsZero() {
				idleSince = now
			} else if now.Sub(idleSince) >= a.opt.Idle {
				return a.end(EndIdle), nil
			}
		} else {
			idleSince = time.Time{}
			a.dropStandby()
		}
		a.wait(ctx, tick)
	}
}

// wait is the loop's wait for the next thing to do.
func (a *Agent) wait(ctx context.Context, tick *time.Ticker) {
	select {
	case <-ctx.Done():
	case <-tick.C:
	case e := <-a.done:
		a.awaitTerm(e)
		a.finish(e)
	case <-a.wrote:
	case l := <-a.learned:
		a.learn(l)
	}
}

// standingBy reports whether a shadow element with nothing to take stays:
// it stands by for a task a pilot runs (while a task would still fit in
// its time, once it ran one), and takes the task if the pilot hands it
// back (gives way). Plain Slurm would have run the task on the job's own
// array; without this, the job could end later than without glean.
func (a *Agent) standingBy(now time.Time) bool {
	if a.standby >= 0 {
		if a.work.KeepStandby(a.standby, a.opt.Pilot, now) {
			return true
		}
		a.standby = -1
		// Its task ended or came back: take it if it is there.
		if _, err := a.dispatch(now); err != nil {
			a.opt.Log.Error("taking a task", "err", err)
		}
		if len(a.running) > 0 {
			return true
		}
	}
	// An element that ran nothing yet stands by whatever its time left, as
	// its first task runs whatever its time (the plain element would have run it).
	if a.taken > 0 && !Fits(now, a.lim.End, a.opt.Grace, a.estimate()) {
		return false
	}
	t, err := a.work.Standby(a.opt.Pilot, now, a.opt.Idle)
	if err != nil {
		if !errors.Is(err, spool.ErrNoTask) {
			a.opt.Log.Warn("standing by", "err", err)
		}
		return false
	}
	a.standby = t
	a.opt.Log.Info("standing by for a task a pilot runs", "task", t)
	return true
}

func (a *Agent) dropStandby() {
	if a.standby >= 0 {
		a.work.DropStandby(a.standby, a.opt.Pilot)
		a.standby = -1
	}
}

// learn takes in what Slurm said about the allocation.
func (a *Agent) learn(l learnt) {
	if l.err != nil {
		a.opt.Log.Warn("reading the allocation's end and KillWait; every task is started", "err", l.err)
	}
	if !l.lim.End.IsZero() {
		a.lim.End = l.lim.End
	}
	if l.lim.KillWait > 0 {
		a.lim.KillWait = l.lim.KillWait
	}
	a.opt.Log.Info("allocation", "end", a.lim.End, "kill_wait", a.lim.KillWait)
}

// end waits for the results being written and returns why.
func (a *Agent) end(why string) string {
	a.writes.Wait()
	a.opt.Log.Info("agent ending", "why", why, "took", a.taken)
	return why
}

// dispatch starts tasks while the node has room and a task fits in the
// time left. It returns EndNoTime when none fits.
func (a *Agent) dispatch(now time.Time) (string, error) {
	for a.notStarted < maxNotStart && CanStart(a.opt.Capacity, a.demand, len(a.running)) {
		if err := a.readJournal(); err != nil {
			return endNone, err
		}
		est := a.estimate()
		// A shadow element is the plain array element: its first task runs
		// whatever its time limit (the task's own -t).
		if !(a.opt.Shadow && a.taken == 0) && !Fits(now, a.lim.End, a.opt.Grace, est) {
			return EndNoTime, nil
		}
		if t := a.throttle(); t > 0 {
			if n, err := a.work.Leases(); err == nil && n >= t {
				return endNone, nil
			}
		}
		attempt := newAttempt()
		task, err := a.work.Take(a.order, spool.Lease{Attempt: attempt, Pilot: a.opt.Pilot, Shadow: a.opt.Shadow, Node: a.opt.Node,
			PID: os.Getpid(), Started: now})
		if errors.Is(err, spool.ErrNoTask) {
			return endNone, nil
		}
		if err != nil {
			return endNone, err
		}
		a.taken++
		// Every earlier attempt of the task is on the journal now (the
		// take skips a task with a result awaiting its commit).
		if err := a.readJournal(); err != nil {
			a.opt.Log.Warn("reading the journal", "err", err)
		}
		n := a.hist.attempts[task] + 1
		p, err := a.launch(task, n, attempt, now)
		if err != nil {
			a.notStarted++
			a.opt.Log.Warn("task not started", "task", task, "attempt", attempt, "err", err)
			a.report(spool.Result{Task: task, Attempt: attempt, Start: now, End: now,
				Outcome: spool.OutcomeNotStarted, Exit: 127, Detail: err.Error()})
			continue
		}
		a.notStarted = 0
		a.running[task] = p
		a.work.Fail.Hit("agent/task-started") // running; its lease not yet fsynced
		a.writes.Add(1)
		go func() {
			defer a.writes.Done()
			if err := a.work.SyncLease(task); err != nil {
				a.opt.Log.Warn("syncing the lease", "task", task, "err", err)
			}
		}()
		a.opt.Log.Info("task started", "task", task, "attempt", attempt, "try", n, "pid", p.pid)
	}
	return endNone, nil
}

// throttle is the array's %k: the cap on concurrently running tasks.
func (a *Agent) throttle() int {
	if a.job.Entry.Array == nil {
		return 0
	}
	return a.job.Entry.Array.Throttle
}

func (a *Agent) readJournal() error {
	evs, off, err := a.work.TaskEventsFrom(a.jOff)
	a.jOff = off
	a.hist.add(evs)
	return err
}

func (a *Agent) heartbeat(now time.Time) {
	for _, p := range a.running {
		if p.lost || now.Sub(p.beat) < a.opt.Heartbeat {
			continue
		}
		err := a.work.Heartbeat(p.task, p.attempt)
		if errors.Is(err, spool.ErrLeaseLost) {
			a.leaseLost(p)
			continue
		}
		if err != nil {
			a.opt.Log.Warn("heartbeat", "task", p.task, "err", err)
			continue
		}
		p.beat = now
	}
}

// leaseLost kills an attempt whose lease the daemon took back: it has
// journaled the attempt as lost and may have given the task to another
// agent, so the attempt must not run on beside the next one (SIGKILL: no
// save either, the checkpoint may be the next attempt's already), and it
// writes no result (finish).
func (a *Agent) leaseLost(p *proc) {
	a.opt.Log.Warn("the task's lease was taken back: killing the attempt", "task", p.task, "attempt", p.attempt, "pid", p.pid)
	p.lost = true
	_ = syscall.Kill(-p.pid, syscall.SIGKILL)
}

// finish writes an ended attempt's result.
func (a *Agent) finish(e exited) {
	p := e.p
	delete(a.running, p.task)
	if p.lost {
		// Committed as lost already: a result, or removing the task's
		// checkpoint, could only harm the task's next attempt.
		a.opt.Log.Info("task ended after its lease was taken back: no result", "task", p.task, "attempt", p.attempt)
		return
	}
	// scancel and Slurm's time limit signal the tasks too: one that ends
	// while the agent is being stopped was stopped with it; not when the
	// TERM went to the agent alone (a give-way, the time-limit warning).
	out, exit, sig := outcome(e.state, e.err, p.signaled || a.tasksTermed())
	r := spool.Result{Task: p.task, Attempt: p.attempt, Start: p.start, End: e.end,
		Outcome: out, Exit: exit, Signal: sig}
	if e.state == nil && e.err != nil {
		r.Detail = e.err.Error()
	}
	if p.note != "" {
		r.Detail = strings.TrimPrefix(r.Detail+"; "+p.note, "; ")
	}
	a.opt.Log.Info("task ended", "task", p.task, "attempt", p.attempt, "outcome", out, "exit", exit,
		"signal", sig, "runtime", e.end.Sub(p.start).Round(time.Millisecond))
	// The result is written while the loop takes the next task: the lease
	// stays until the result is in place, so the task is never taken again
	// meanwhile, and end waits for every write.
	completed := out == spool.OutcomeExited && exit == 0
	a.writes.Add(1)
	a.writing.Add(1)
	go func() {
		defer a.writes.Done()
		// The checkpoint goes only once the completion is on record: if
		// the result cannot be written the task runs again, and may
		// resume from it (a checkpoint left behind goes with the job's).
		if a.report(r) && completed {
			if err := a.opt.Checkpoint.completed(a.job.Entry.Anchor, p.task); err != nil {
				a.opt.Log.Warn("removing a completed task's checkpoint", "task", p.task, "err", err)
			}
		}
		a.writing.Add(-1)
		select {
		case a.wrote <- struct{}{}:
		default:
		}
	}()
}

// tasksTermed reports whether the TERM that stopped the agent (ctx) went
// to its tasks too: Slurm signals every process of a job it cancels,
// while glean's give-way and Slurm's time-limit warning reach the agent
// alone. Decided at the first ask after the TERM, which may be a task's
// end before stopAll runs, and kept, so that every task's end is judged
// alike.
func (a *Agent) tasksTermed() bool {
	if a.ctx.Err() == nil {
		return false
	}
	if a.termCause == "" {
		_, _, _, a.termCause = a.stopGrace(EndSignaled, a.opt.Now())
	}
	return a.termCause == "scancel"
}

// termWindow is how long a task that exited with the checkpoint status
// by itself waits for the agent's own TERM.
const termWindow = time.Second

// awaitTerm: a task that exited with the checkpoint status although the
// agent sent it no TERM was most likely TERMed by Slurm, which signals
// every process of the job (scancel, the time limit) as it signals the
// agent; the agent's own TERM follows within milliseconds. Waiting for it
// a moment lets the attempt count as checkpointed, not as a task that
// exited 99 on its own (a failure).
func (a *Agent) awaitTerm(e exited) {
	if e.p.signaled || a.ctx.Err() != nil || e.state == nil || e.state.ExitCode() != spool.CheckpointExit {
		return
	}
	t := time.NewTimer(termWindow)
	defer t.Stop()
	select {
	case <-a.ctx.Done():
	case <-t.C:
	}
}

// report writes a result and reports whether it did; if that fails the
// lease is released so the task is not lost (the daemon then runs it
// again).
func (a *Agent) report(r spool.Result) bool {
	r.Pilot, r.Node = a.opt.Pilot, a.opt.Node
	if err := a.work.Finish(r); err != nil {
		a.opt.Log.Error("writing the result; releasing the lease", "task", r.Task, "attempt", r.Attempt, "err", err)
		if err := a.work.Release(r.Task, r.Attempt); err != nil {
			a.opt.Log.Error("releasing the lease", "task", r.Task, "err", err)
		}
		return false
	}
	return true
}

// defaultKillWait is Slurm's default KillWait, assumed when it could not
// be read.
const defaultKillWait = 30 * time.Second

// maxReserve is what the agent keeps of Slurm's KillWait, after it KILLs
// its tasks, to reap them and write their results before Slurm KILLs it.
const maxReserve = 2 * time.Second

// signalEarly: Slurm's --signal=B:TERM@grace warning comes up to 60 s
// before end - grace ("due to the resolution of event handling"; on the
// loopback 22.05 a pilot's came 23 s early). A TERM within this (and a
// little slack) of end - grace is that warning.
const (
	signalEarly    = 60 * time.Second
	timeLimitSlack = 5 * time.Second
)

// stopGrace says how the agent stops its tasks for why: hold is how long
// it lets them run on before it sends TERM, grace how long they get after
// TERM before KILL, reserve what it keeps after KILL to reap them and
// write the results; cause names the case (for the log):
//
//   - give-way: glean recorded this pilot as signalled (TERM to the agent
//     alone) and scancels it only after the grace: the whole grace.
//   - time-limit: Slurm's warning, the grace before the end but up to 60 s
//     early; Slurm TERMs everything at the end and KILLs KillWait later:
//     the tasks run on until end - grace (a task that ends by then is not
//     cut short: the agent started it because it would), then get the
//     grace, done a reserve before that KILL.
//   - scancel (someone cancelled the pilot, or the job ended: Slurm TERMs
//     everything now and KILLs after KillWait): the grace, at most KillWait
//     less the reserve.
func (a *Agent) stopGrace(why string, now time.Time) (hold, grace, reserve time.Duration, cause string) {
	kw := a.lim.KillWait
	if kw <= 0 {
		kw = defaultKillWait
	}
	reserve = min(maxReserve, kw/2)
	grace = a.opt.Grace
	end := a.lim.End
	switch {
	case why == EndSignaled && a.opt.GaveWay != nil && a.opt.GaveWay():
		return 0, grace, reserve, "give-way"
	case why == EndSignaled && !end.IsZero() && !now.Before(end.Add(-grace-signalEarly-timeLimitSlack)):
		hold = max(0, end.Add(-grace).Sub(now))
		return hold, max(0, min(grace, end.Add(kw-reserve).Sub(now.Add(hold)))), reserve, "time-limit"
	}
	return 0, min(grace, kw-reserve), reserve, "scancel"
}

// stopAll stops every running task (stopGrace: after the hold, TERM to
// its process group, the grace, KILL) and writes every result.
func (a *Agent) stopAll(why string) string {
	log := a.opt.Log
	hold, grace, reserve, cause := a.stopGrace(why, a.opt.Now())
	if why == EndSignaled && a.termCause == "" {
		a.termCause = cause
	}
	if len(a.running) > 0 {
		log.Info("stopping the running tasks", "why", why, "running", len(a.running), "term_in", hold, "grace", grace,
			"as", cause, "kill_wait", a.lim.KillWait)
	}
	// The leases stay fresh while the tasks stop (the hold and the grace
	// can outlast daemon.heartbeat_timeout): a stale lease would be taken
	// back as lost while its task still runs and saves its checkpoint.
	beat := time.NewTicker(a.opt.Heartbeat)
	defer beat.Stop()
	if hold > 0 && len(a.running) > 0 {
		// Slurm's time-limit warning came early: tasks that end by end -
		// grace end by themselves.
		wait := time.NewTimer(hold)
	holding:
		for len(a.running) > 0 {
			select {
			case e := <-a.done:
				a.finish(e)
			case <-beat.C:
				a.heartbeat(a.opt.Now())
			case <-wait.C:
				break holding
			}
		}
		wait.Stop()
	}
	a.termRunning()
	timer := time.NewTimer(grace)
	defer timer.Stop()
	var reap <-chan time.Time
	for len(a.running) > 0 {
		select {
		case e := <-a.done:
			a.finish(e)
		case <-beat.C:
			a.heartbeat(a.opt.Now())
		case <-timer.C:
			for _, p := range a.running {
				log.Warn("task did not end within the grace: SIGKILL", "task", p.task, "pid", p.pid)
				_ = syscall.Kill(-p.pid, syscall.SIGKILL)
			}
			reap = time.After(min(a.opt.Reap, reserve))
		case <-reap:
			for _, p := range a.running {
				log.Error("task not reaped after SIGKILL; handing it back", "task", p.task, "pid", p.pid)
				delete(a.running, p.task)
				if p.lost {
					continue // not ours to hand back
				}
				a.report(spool.Result{Task: p.task, Attempt: p.attempt, Start: p.start, End: a.opt.Now(),
					Outcome: spool.OutcomeHandedBack, Detail: "not reaped after SIGKILL"})
			}
		}
	}
	return a.end(why)
}

// termRunning sends TERM to every running task's process group. A task
// that ended by itself before is not one the agent stopped, so that a
// completion stays a completion: the ends the loop has not taken yet are
// finished first, and a task that exited but whose end is still on its way
// is not signalled.
func (a *Agent) termRunning() {
	for drained := false; !drained; {
		select {
		case e := <-a.done:
			a.finish(e)
		default:
			drained = true
		}
	}
	for _, p := range a.running {
		if p.lost || exitedAlready(p.pid) {
			continue // KILLed already, or its end is on its way
		}
		p.signaled = true
		_ = syscall.Kill(-p.pid, syscall.SIGTERM)
	}
}

// GaveWay reports whether rec records pilot as one glean gave way with
// by signalling its agent alone (Options.GaveWay).
func GaveWay(rec *spool.Record, pilot string) bool {
	return pilot != "" && slices.ContainsFunc(rec.PilotJobs, func(p spool.PilotJob) bool {
		return p.ID == pilot && !p.Signalled.IsZero()
	})
}

func newAttempt() string {
	var b [attemptHex]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("crypto/rand: " + err.Error())
	}
	return hex.EncodeToString(b[:])
}
