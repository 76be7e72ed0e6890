package sim

import (
	"strconv"
	"strings"
	"time"

	"github.com/glean-hpc/glean/sidecar/cluster"
	"github.com/glean-hpc/glean/sidecar/workload"
)

// partition is what the simulated machine's partitions are configured
// with: Snapshot shows a default "batch" partition and a "pilot" partition
// of lower PriorityTier over the same nodes, as in tests/loopback-slurm.sh.
type partition struct {
	maxTime, defaultTime time.Duration // 0: UNLIMITED, none
}

// Partition names and tiers the snapshot shows.
const (
	BatchPartition = "batch"
	PilotPartition = "pilot"
	batchTier      = 10
	pilotTier      = 1
)

// NodeName is the name of node i (0-based) in snapshots and host lists.
func NodeName(i int) string { return "c" + strconv.Itoa(i+1) }

// Snapshot renders the machine at this instant as the daemon would see a
// real cluster through squeue, sinfo and scontrol, with the simulation's
// start at epoch: nodes c1..cN (idle, alloc, or planned: idle but reserved
// by the last backfill pass), the batch and pilot partitions, running jobs
// with their nodes, start, limit and expected end, and pending jobs in
// priority order with their reason and, for those the last backfill pass
// planned (SlurmLike only), their expected start and SchedNodes. The
// result shares nothing with s.
func (s *State) Snapshot(epoch time.Time) *cluster.Snapshot {
	at := func(d time.Duration) time.Time { return epoch.Add(d) }
	snap := &cluster.Snapshot{Time: at(s.now), Complete: true}

	snap.Config = cluster.SchedConfig{SchedulerType: "sim/" + s.policy.String(), SelectType: "select/linear", Version: "sim"}
	if s.bf != nil {
		p := s.bf.p
		snap.Config.SchedulerType = "sched/backfill"
		snap.Config.BackfillInterval = p.BFInterval
		snap.Config.BackfillResolution = p.BFResolution
		snap.Config.BackfillWindow = p.BFWindow
		snap.Config.KillWait = p.KillWait
	}

	names := make([]string, s.size)
	for i := range names {
		names[i] = NodeName(i)
	}
	maxTime := s.part.maxTime
	if maxTime == 0 {
		maxTime = cluster.Unlimited
	}
	for _, p := range []struct {
		name string
		tier int
	}{{BatchPartition, batchTier}, {PilotPartition, pilotTier}} {
		snap.Partitions = append(snap.Partitions, cluster.Partition{
			Name: p.name, Nodes: names, MaxTime: maxTime, DefaultTime: s.part.defaultTime,
			PriorityTier: p.tier, Default: p.name == BatchPartition, Up: true, OverSubscribe: "NO",
		})
	}

	parts := []string{BatchPartition, PilotPartition}
	snap.Nodes = make([]cluster.Node, s.size)
	for i := range snap.Nodes {
		st := cluster.NodeAlloc
		switch {
		case s.idle.has(i) && s.bf != nil && s.bf.planned.has(i):
			st = cluster.NodePlanned
		case s.idle.has(i):
			st = cluster.NodeIdle
		}
		raw := st.String()
		if st == cluster.NodeAlloc {
			raw = "allocated"
		}
		snap.Nodes[i] = cluster.Node{Name: names[i], State: st, RawState: raw, Partitions: parts, CPUs: 1}
	}

	for _, j := range s.running {
		cj := s.snapJob(j, at)
		cj.State, cj.RawState, cj.Reason = cluster.JobRunning, "RUNNING", "None"
		cj.Nodes = hostNames(j.alloc)
		cj.Start = at(j.start)
		if j.est != workload.Unlimited {
			cj.End = at(j.estEnd)
		}
		snap.Jobs = append(snap.Jobs, cj)
	}
	reason := "Resources" // the first pending job waits for nodes, the rest behind it
	for _, j := range s.queue {
		if j.began {
			continue
		}
		cj := s.snapJob(j, at)
		cj.State, cj.RawState, cj.Reason = cluster.JobPending, "PENDING", reason
		reason = "Priority"
		if s.bf != nil {
			if t, ok := s.bf.planStart[j]; ok {
				cj.Start = at(t)
				if j.est != workload.Unlimited {
					cj.End = at(addSat(t, j.est))
				}
				cj.SchedNodes = hostNames(s.bf.planNodes[j])
			}
		}
		snap.Jobs = append(snap.Jobs, cj)
	}
	return snap
}

// snapJob fills what running and pending jobs share.
func (s *State) snapJob(j *job, at func(time.Duration) time.Time) cluster.Job {
	id := strconv.Itoa(j.id)
	cj := cluster.Job{
		ID: id, ArrayJobID: id, Partition: BatchPartition, NumNodes: j.nodes,
		TimeLimit: j.est, Submit: at(j.submit),
		// priority/basic: each later submission ranks one lower.
		Priority: int64(1_000_000_000 - j.seq),
	}
	if j.src != nil {
		cj.User = j.src.User
		cj.Name = j.src.Kind.String()
	}
	return cj
}

// hostNames expands an allocation into node names.
func hostNames(a []span) []string {
	var out []string
	for _, sp := range a {
		for i := sp.first; i < sp.first+sp.n; i++ {
			out = append(out, NodeName(int(i)))
		}
	}
	return out
}

// hostList compresses an allocation (sorted spans) into a Slurm host list:
// "c[1-4,9]", "c7", or "" for none.
func hostList(a []span) string {
	switch {
	case len(a) == 0:
		return ""
	case len(a) == 1 && a[0].n == 1:
		return NodeName(int(a[0].first))
	}
	var b strings.Builder
	b.WriteString("c[")
	for i, sp := range a {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(int(sp.first) + 1))
		if sp.n > 1 {
			b.WriteByte('-')
			b.WriteString(strconv.Itoa(int(sp.first + sp.n)))
		}
	}
	b.WriteByte(']')
	return b.String()
}
