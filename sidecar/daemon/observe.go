package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/glean-hpc/glean/sidecar/cluster"
)

// Observation is one round's view of Slurm: a single snapshot (squeue of
// every job, ended ones included, sinfo, partitions), taken when the round
// first needs it and shared by the intake (anchors, shadow arrays,
// dependencies, node sizes) and the executor (pilots, leases, the
// policy). A round that needs nothing from Slurm takes none.
type Observation struct {
	Now time.Time

	snap Snapshotter
	// An intake-only daemon (no executor) reads jobs and node sizes with
	// its own calls.
	queue Queue
	sizer NodeSizer

	s     *cluster.Snapshot
	stall stall // the round's privileged calls, the intake's and the executor's
	jobs  map[string]QJob
	jerr  error
	sizes map[string]nodeSizes

	pilotMissingLogged bool
}

// NewObservation returns the observation of a round at now, read from snap
// at most once.
func NewObservation(now time.Time, snap Snapshotter) *Observation {
	return &Observation{Now: now, snap: snap}
}

// Snapshot takes the round's snapshot on first use.
func (o *Observation) Snapshot(ctx context.Context) *cluster.Snapshot {
	if o.s == nil {
		o.s = o.snap.Snapshot(ctx, o.Now)
	}
	return o.s
}

// Taken reports whether the round read Slurm.
func (o *Observation) Taken() bool { return o.s != nil || o.jobs != nil || o.jerr != nil }

// Jobs is every job Slurm shows, by id, as the intake needs it. An
// incomplete snapshot is an error: the intake acts on job ids only when it
// sees them all.
func (o *Observation) Jobs(ctx context.Context) (map[string]QJob, error) {
	if o.jobs != nil || o.jerr != nil {
		return o.jobs, o.jerr
	}
	if o.snap == nil {
		o.jobs, o.jerr = o.queue.Jobs(ctx)
		if o.jobs == nil && o.jerr == nil {
			o.jobs = map[string]QJob{}
		}
		return o.jobs, o.jerr
	}
	s := o.Snapshot(ctx)
	if !s.Complete {
		o.jerr = incomplete(s)
		return nil, o.jerr
	}
	o.jobs = make(map[string]QJob, len(s.Jobs))
	for i := range s.Jobs {
		j := &s.Jobs[i]
		o.jobs[j.ID] = QJob{ID: j.ID, ArrayID: j.ArrayJobID, ArrayTask: j.ArrayTasks, State: j.RawState, Reason: j.Reason, Partition: j.Partition,
			User: j.User, Start: j.Start, Comment: j.Comment}
	}
	return o.jobs, nil
}

// Largest is the most CPUs and memory of a node of partition.
func (o *Observation) Largest(ctx context.Context, partition string) (int, int64, error) {
	if sz, ok := o.sizes[partition]; ok {
		return sz.cpus, sz.mem, nil
	}
	var (
		cpus int
		mem  int64
		err  error
	)
	if o.snap == nil {
		cpus, mem, err = o.sizer.Largest(ctx, partition)
	} else {
		cpus, mem, err = largest(o.Snapshot(ctx), partition)
	}
	if err != nil {
		return 0, 0, err
	}
	if o.sizes == nil {
		o.sizes = map[string]nodeSizes{}
	}
	o.sizes[partition] = nodeSizes{cpus, mem}
	return cpus, mem, nil
}

// largest reads node sizes from a snapshot.
func largest(snap *cluster.Snapshot, partition string) (int, int64, error) {
	p := snap.Partition(partition)
	if p == nil {
		if !snap.Complete {
			return 0, 0, incomplete(snap)
		}
		return 0, 0, fmt.Errorf("%w: %q", errNoPartition, partition)
	}
	in := map[string]bool{}
	for _, n := range p.Nodes {
		in[n] = true
	}
	cpus, mem := 0, int64(0)
	for _, n := range snap.Nodes {
		if in[n.Name] {
			cpus, mem = max(cpus, n.CPUs), max(mem, n.MemoryMB)
		}
	}
	return cpus, mem, nil
}

// errNoPartition is a partition that a complete snapshot does not show.
var errNoPartition = errors.New("no such partition")

// pilotMissing logs, at most once a round, that a complete snapshot shows
// no pilot partition (partitions.pilot): nothing is taken in and no pilot
// submitted until it exists, which only the admin can change. The
// partitions are read with -a, so neither Hidden=YES nor AllowGroups
// without gleand's user hides it; PrivateData=partitions still may.
func (o *Observation) pilotMissing(log *slog.Logger, name string) {
	if o.pilotMissingLogged {
		return
	}
	o.pilotMissingLogged = true
	log.Error("pilot partition missing: Slurm shows no partition of that name (scontrol -a show partition), so no entry is taken in and no pilot submitted; set partitions.pilot in glean.toml to the pilot partition, or let gleand's user see it (PrivateData=partitions)",
		"partitions.pilot", name)
}

func incomplete(s *cluster.Snapshot) error {
	return errors.New("cluster snapshot incomplete: " + strings.Join(s.Problems, "; "))
}

// pendingPart reports whether the snapshot shows a pending part of job id
// (the job itself or, for an array, an element not yet started).
func pendingPart(s *cluster.Snapshot, id string) bool {
	for i := range s.Jobs {
		j := &s.Jobs[i]
		if (j.ID == id || j.ArrayJobID == id) && j.Pending() {
			return true
		}
	}
	return false
}
