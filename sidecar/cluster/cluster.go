// Package cluster holds the data model of one observation of a Slurm cluster:
// nodes, partitions, jobs and the scheduler settings that matter to glean.
//
// It is plain data with no behaviour beyond small helpers, so that the Slurm
// boundary (which fills it from squeue/sinfo/scontrol), the simulator (which
// fills it from its own model) and the pure policy (which reads it) share one
// vocabulary without depending on each other.
package cluster

import (
	"math"
	"time"
)

// Unlimited is the time limit of a job or partition with no limit
// (Slurm's UNLIMITED / INFINITE). It is the largest Duration so that
// min() over limits needs no special case.
const Unlimited = time.Duration(math.MaxInt64)

// NodeState is the base state of a node as glean cares about it.
type NodeState int

const (
	NodeUnknown    NodeState = iota
	NodeIdle                 // free now
	NodePlanned              // free now, but the backfill scheduler plans to use it
	NodeAlloc                // every CPU allocated
	NodeMixed                // some CPUs allocated
	NodeCompleting           // jobs ending on it
	NodeDown                 // not usable
	NodeDrain                // drained or draining: takes no new jobs
	NodeReserved             // in an advanced reservation
	NodeOther                // future, maint, power-saved, ...: not usable now
)

var nodeStateNames = [...]string{"unknown", "idle", "planned", "alloc", "mixed", "completing", "down", "drain", "reserved", "other"}

func (s NodeState) String() string {
	if int(s) < len(nodeStateNames) {
		return nodeStateNames[s]
	}
	return "invalid"
}

// Usable reports whether a node in this state can take a new job now or
// once its running jobs end.
func (s NodeState) Usable() bool {
	switch s {
	case NodeIdle, NodePlanned, NodeAlloc, NodeMixed, NodeCompleting:
		return true
	}
	return false
}

// Node is one compute node.
type Node struct {
	Name       string
	State      NodeState
	RawState   string   // what Slurm printed, e.g. "idle*" or "drained"
	Partitions []string // partitions that contain the node
	CPUs       int
	MemoryMB   int64
}

// Partition is one Slurm partition.
type Partition struct {
	Name          string
	Nodes         []string // expanded host names
	MaxTime       time.Duration
	DefaultTime   time.Duration // 0 when not set
	PriorityTier  int
	Default       bool
	Up            bool
	OverSubscribe string // NO, EXCLUSIVE, YES[:n], FORCE[:n]
}

// JobState is the base state of a job.
type JobState int

const (
	JobOther JobState = iota
	JobPending
	JobRunning
	JobCompleting
	JobSuspended
	JobConfiguring
)

var jobStateNames = [...]string{"other", "pending", "running", "completing", "suspended", "configuring"}

func (s JobState) String() string {
	if int(s) < len(jobStateNames) {
		return jobStateNames[s]
	}
	return "invalid"
}

// Job is one job as squeue shows it. A pending array is one Job whose
// ArrayTasks holds the pending index expression; started array elements
// are Jobs of their own.
type Job struct {
	ID         string // %A: unique job id (a started array element has its own)
	ArrayJobID string // %F: the array's base id, or ID for a non-array job
	ArrayTasks string // %K: index, or pending index expression, which Slurm may have cut (ParseArrayIndices); "" for non-array
	Name       string
	User       string
	Partition  string
	State      JobState
	RawState   string
	Reason     string // "None" while running
	NumNodes   int
	Nodes      []string // allocated nodes (running)
	SchedNodes []string // nodes the backfill scheduler planned for a pending job
	// NodeIdx, if its producer sets it, is Nodes (a job that holds them)
	// or SchedNodes (a pending job) as indices into the snapshot's Nodes,
	// -1 for a name not there: readers then need not look the names up,
	// and trust it, so a producer that sets it keeps it in step with both
	// lists. The simulator, which keeps nodes as numbers, sets it (its
	// TestCachedSnapshot checks it against the names at every pass);
	// Slurm's parsers leave it nil.
	NodeIdx   []int
	TimeLimit time.Duration // Unlimited for no limit; 0 when not set
	Submit    time.Time
	Start     time.Time // actual (running) or expected (pending); zero when unknown
	End       time.Time // actual or expected end; zero when unknown or unlimited
	Priority  int64
	Comment   string
}

// Pending reports whether the job waits to start.
func (j *Job) Pending() bool { return j.State == JobPending }

// Holds reports whether the job occupies its nodes now.
func (j *Job) Holds() bool {
	switch j.State {
	case JobRunning, JobCompleting, JobSuspended, JobConfiguring:
		return true
	}
	return false
}

// SchedConfig is what glean needs from `scontrol show config`.
type SchedConfig struct {
	BackfillInterval   time.Duration // bf_interval: one scheduling cycle
	BackfillResolution time.Duration // bf_resolution
	BackfillWindow     time.Duration // bf_window
	SchedulerType      string
	SelectType         string
	KillWait           time.Duration
	OverTimeLimit      time.Duration
	MinJobAge          time.Duration
	MessageTimeout     time.Duration
	Version            string
}

// Snapshot is one observation of the cluster. It is taken at Time; jobs
// and nodes are as Slurm reported them. If anything could not be read or
// parsed, Complete is false and Problems says what: the policy must then
// not add pilots, because a missing line may be a job that needs the nodes.
type Snapshot struct {
	Time       time.Time
	Config     SchedConfig
	Nodes      []Node
	Partitions []Partition
	Jobs       []Job // running, completing and pending jobs in squeue's order
	Complete   bool
	Problems   []string
}

// Partition returns the named partition, or nil.
func (s *Snapshot) Partition(name string) *Partition {
	for i := range s.Partitions {
		if s.Partitions[i].Name == name {
			return &s.Partitions[i]
		}
	}
	return nil
}

// DefaultPartition returns the partition marked Default, or nil.
func (s *Snapshot) DefaultPartition() *Partition {
	for i := range s.Partitions {
		if s.Partitions[i].Default {
			return &s.Partitions[i]
		}
	}
	return nil
}
