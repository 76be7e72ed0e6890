package policy

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// Mode is how an elastic job shares the cluster. It is chosen per job;
// Decide handles any mix.
type Mode int

const (
	// Fair (the default): the job also has its plain Slurm allocation (the
	// base: a shadow array, or a rigid job), queued as it would be without
	// glean; pilots add idle nodes and give way to every pending job.
	Fair Mode = iota
	// Scavenger: no base allocation and no floor; the job only ever uses
	// nodes nobody else wants.
	Scavenger
	// Thesis: Algorithms 1-2 of seed 000 with the MiniNode floor of its
	// Eq. 5.1. Admin-only: the floor keeps nodes from regular jobs.
	Thesis
)

var modeNames = [...]string{"fair", "scavenger", "thesis"}

func (m Mode) String() string {
	if m >= 0 && int(m) < len(modeNames) {
		return modeNames[m]
	}
	return fmt.Sprintf("Mode(%d)", int(m))
}

// ParseMode parses "fair", "scavenger" or "thesis"; "" is Fair.
func ParseMode(s string) (Mode, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "fair":
		return Fair, nil
	case "scavenger":
		return Scavenger, nil
	case "thesis":
		return Thesis, nil
	}
	return 0, fmt.Errorf("policy: unknown mode %q (want fair, scavenger or thesis)", s)
}

// FloorStep is one row of the thesis's MiniNode table (seed 000, Eq. 5.1).
// The first row with leftTasks < Below applies (Below 0: any leftTasks)
// and gives MiniNode = Nodes + leftTasks/PerTasks (no per-task part when
// PerTasks is 0).
type FloorStep struct {
	Below    int
	Nodes    int
	PerTasks int
}

// Eq51 is the MiniNode table of seed 000, Eq. 5.1:
//
//	leftTasks < 5:         2
//	5 <= leftTasks < 20:   4
//	20 <= leftTasks < 100: leftTasks/20 + 3
//	otherwise:             10
//
// The published bounds are strict on both sides (5 < leftTasks < 20), which
// leaves 5, 20 and 100 to "else"; we read them as half-open.
func Eq51() []FloorStep {
	return []FloorStep{{Below: 5, Nodes: 2}, {Below: 20, Nodes: 4}, {Below: 100, Nodes: 3, PerTasks: 20}, {Nodes: 10}}
}

// MiniNode is the floor the table gives for leftTasks pending and running
// tasks; 0 when no row applies.
func MiniNode(table []FloorStep, leftTasks int) int {
	for _, r := range table {
		if r.Below == 0 || leftTasks < r.Below {
			n := r.Nodes
			if r.PerTasks > 0 {
				n += leftTasks / r.PerTasks
			}
			return n
		}
	}
	return 0
}

// Config is the policy's configuration. Every duration is explicit;
// Validate rejects what makes no sense, and Decide does nothing with a
// config that fails it (fail closed).
type Config struct {
	// PilotPartition is where pilots go and whose nodes are harvested;
	// "" is the snapshot's default partition. It should span the nodes
	// of the partitions it harvests (the claimants' idle nodes outside it
	// are not seen).
	PilotPartition string
	// Margin is taken off every backfill window before sizing a pilot
	// (the thesis: maxTime - 2 min), so that Slurm's backfill, which plans
	// in bf_resolution steps, still fits the pilot.
	Margin time.Duration
	// Grace is the give-way latency: how long a cancelled pilot may take
	// to leave (TERM, hand back, exit). A pilot that ends by itself within
	// Grace of when its node is needed is left alone, and a pending job
	// whose start glean would move by less than Grace is not given way to.
	Grace time.Duration
	// MaxPendingPilots caps the pilots pending at once (all jobs).
	MaxPendingPilots int
	// MaxPilots caps all pilots, pending and running; 0: no cap.
	MaxPilots int
	// PendingTimeout is the base pending-pilot timeout when neither
	// State.BFInterval nor the snapshot's bf_interval is known.
	PendingTimeout time.Duration
	// PendingTimeoutStep is added to the base per consecutive miss
	// (State.PendingMisses); the thesis used 5 s + 5 s per miss.
	PendingTimeoutStep time.Duration
	// PendingTimeoutMax bounds the grown timeout.
	PendingTimeoutMax time.Duration
	// RetireHorizon: when a claimant needs a pilot's node further ahead
	// than this, the pilot is retired (finishes its task, takes no more)
	// rather than cancelled; it is cancelled once the need comes closer.
	RetireHorizon time.Duration
	// MinPilotTime is the shortest pilot worth submitting (at least a
	// minute: Slurm's unit, and --time=0 would mean no limit). A pilot is
	// also never shorter than its job's TaskTime plus TaskSlack. 2m by
	// default, as gleand's min_pilot_time: with short tasks a window of
	// 2-5 minutes is worth a pilot.
	MinPilotTime time.Duration
	// TaskSlack is what a pilot needs beyond the run time of its tasks,
	// once per pilot: the daemon's agent starts a task only if it ends
	// Grace before the allocation does, and starts a moment after the
	// pilot. 0 in the simulator, whose workers fit tasks exactly.
	TaskSlack time.Duration
	// SyncRelease, if set, makes pilots end on multiples of it (since the
	// Unix epoch), so that harvested nodes come back together (seed 003's
	// synchronized release). Whole minutes.
	SyncRelease time.Duration

	// MiniTime is the thesis's miniTime: if a running job ends within it,
	// the thesis mode waits (Algorithm 1, lines 13-17).
	MiniTime time.Duration
	// MiniNode is the thesis's floor table over leftTasks (Eq. 5.1).
	MiniNode []FloorStep
	// ThesisHoldEmpty reproduces the thesis literally: its pilots are
	// taken whatever the work left and kept when idle. Off by default:
	// glean holds no pilot without work, in every mode.
	ThesisHoldEmpty bool
}

// DefaultConfig returns the defaults.
func DefaultConfig() Config {
	return Config{
		Margin:             2 * time.Minute,
		Grace:              60 * time.Second,
		MaxPendingPilots:   20,
		PendingTimeout:     30 * time.Second, // Slurm's default bf_interval
		PendingTimeoutStep: 30 * time.Second,
		PendingTimeoutMax:  10 * time.Minute,
		RetireHorizon:      5 * time.Minute,
		MinPilotTime:       2 * time.Minute,
		MiniTime:           2 * time.Minute,
		MiniNode:           Eq51(),
	}
}

// ShortestPilot is the shortest time limit a pilot of a job whose tasks
// take taskTime (0: unknown) is submitted with: one task and its slack,
// never under MinPilotTime.
func (c Config) ShortestPilot(taskTime time.Duration) time.Duration {
	if taskTime > 0 {
		return max(c.MinPilotTime, taskTime+c.TaskSlack)
	}
	return c.MinPilotTime
}

// Validate reports every problem at once.
func (c Config) Validate() error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf("policy: "+format, a...)) }
	nonNeg := func(name string, d time.Duration) {
		if d < 0 {
			bad("%s must not be negative, got %v", name, d)
		}
	}
	nonNeg("Margin", c.Margin)
	nonNeg("Grace", c.Grace)
	nonNeg("TaskSlack", c.TaskSlack)
	nonNeg("PendingTimeoutStep", c.PendingTimeoutStep)
	nonNeg("RetireHorizon", c.RetireHorizon)
	nonNeg("MiniTime", c.MiniTime)
	if c.MaxPendingPilots < 1 {
		bad("MaxPendingPilots must be at least 1, got %d", c.MaxPendingPilots)
	}
	if c.MaxPilots < 0 {
		bad("MaxPilots must not be negative (0: no cap), got %d", c.MaxPilots)
	}
	if c.PendingTimeout <= 0 {
		bad("PendingTimeout must be positive, got %v", c.PendingTimeout)
	}
	if c.PendingTimeoutMax < c.PendingTimeout {
		bad("PendingTimeoutMax (%v) must be at least PendingTimeout (%v)", c.PendingTimeoutMax, c.PendingTimeout)
	}
	if c.MinPilotTime < time.Minute {
		bad("MinPilotTime must be at least 1m, got %v", c.MinPilotTime)
	}
	if c.SyncRelease < 0 || c.SyncRelease%time.Minute != 0 {
		bad("SyncRelease must be whole minutes (0: off), got %v", c.SyncRelease)
	}
	prev := 0
	for i, r := range c.MiniNode {
		switch {
		case r.Nodes < 0 || r.PerTasks < 0:
			bad("MiniNode[%d]: Nodes and PerTasks must not be negative", i)
		case r.Below < 0:
			bad("MiniNode[%d]: Below must not be negative", i)
		case r.Below == 0 && i != len(c.MiniNode)-1:
			bad("MiniNode[%d]: only the last row may have Below 0 (any)", i)
		case r.Below != 0 && r.Below <= prev:
			bad("MiniNode[%d]: Below must increase, got %d after %d", i, r.Below, prev)
		}
		prev = r.Below
	}
	return errors.Join(errs...)
}
