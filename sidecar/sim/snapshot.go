package sim

import (
	"math/bits"
	"slices"
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
func (s *State) Snapshot(epoch time.Time) *cluster.Snapshot { return s.snapshot(epoch, nil) }

// snapCache is what one snapshot shares with the next (the elastic driver
// takes one every round): node names, partitions, the configuration, each
// job's line and host list, and the buffers. A snapshot taken with it is
// valid until the next one, and its strings and slices must not be
// modified. Its lines are built at the first snapshot's epoch, the only
// one it serves (epoch).
type snapCache struct {
	epoch  time.Time
	names  []string
	idx    []int // 0..size-1: the nodes' indices, as NodeIdx shows them
	parts  []cluster.Partition
	nodes  []cluster.Node
	jobs   []cluster.Job
	snap   cluster.Snapshot
	config cluster.SchedConfig
	// idle and planned are the node states that nodes shows.
	idle, planned bitset
	// rows[i] is the jobLine that jobs[i] shows, which is not written
	// again while it stays at its place and shows the same: a running
	// job's line changes only with its jobLine (new when its nodes
	// change), a pending one's with its reason and plan (shows).
	rows []*jobLine
}

// jobLine is a job's cached snapshot line: what running and pending share
// while it waits, its whole line once it runs (a job does not go back to
// the queue), and its last planned nodes (planBuf: the array of their
// names, unless they are one run).
type jobLine struct {
	base      cluster.Job
	running   bool // base is the running line
	planSpans []span
	planHosts []string
	planBuf   []string
	planIdx   []int // planHosts as indices (planIdxB: their array)
	planIdxB  []int
	// The last planned start and the line's Start and End for it.
	planAt             time.Duration
	planStart, planEnd time.Time
	planTimed          bool
	// What the last pending line written showed: the first pending
	// job's reason, a plan (the last one).
	first, planned bool
}

func (s *State) snapshot(epoch time.Time, c *snapCache) *cluster.Snapshot {
	at := func(d time.Duration) time.Time { return epoch.Add(d) }
	var snap *cluster.Snapshot
	if c != nil {
		// The cached lines hold times at the epoch they were built at:
		// another epoch would read stale ones, silently.
		if c.epoch.IsZero() {
			c.epoch = epoch
		} else if !c.epoch.Equal(epoch) {
			panic("sim: a snapshot cache serves the epoch it was built at, " + c.epoch.String() + ", not " + epoch.String())
		}
		snap = &c.snap
	} else {
		snap = new(cluster.Snapshot)
	}
	*snap = cluster.Snapshot{Time: at(s.now), Complete: true}

	var names []string
	var idx []int
	if c != nil && len(c.names) == s.size {
		names, idx, snap.Partitions, snap.Config = c.names, c.idx, c.parts, c.config
	} else {
		snap.Config = s.schedConfig()
		names, idx = make([]string, s.size), make([]int, s.size)
		for i := range names {
			names[i], idx[i] = NodeName(i), i
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
		if c != nil {
			c.names, c.idx, c.parts, c.config = names, idx, snap.Partitions, snap.Config
		}
	}

	var planned bitset
	if s.bf != nil {
		planned = s.bf.planned
	}
	switch {
	case c == nil:
		snap.Nodes = make([]cluster.Node, s.size)
		parts := []string{BatchPartition, PilotPartition}
		for i := range snap.Nodes {
			snap.Nodes[i] = s.node(i, names, parts)
		}
	case len(c.nodes) == s.size:
		// The cached node list was filled in by the last snapshot: only
		// the nodes whose state may have changed are written.
		snap.Nodes = c.nodes
		for w := range s.idle {
			diff := s.idle[w] ^ c.idle[w]
			if planned != nil {
				diff |= planned[w] ^ c.planned[w]
			}
			for ; diff != 0; diff &= diff - 1 {
				i := w*64 + bits.TrailingZeros64(diff)
				snap.Nodes[i] = s.node(i, names, nodePartitions)
			}
		}
	default:
		snap.Nodes = make([]cluster.Node, s.size)
		for i := range snap.Nodes {
			snap.Nodes[i] = s.node(i, names, nodePartitions)
		}
		c.nodes = snap.Nodes
		c.idle, c.planned = newBitset(s.size), newBitset(s.size)
	}
	if c != nil {
		copy(c.idle, s.idle)
		copy(c.planned, planned)
	}

	if c != nil {
		snap.Jobs = c.jobs[:0]
		c.rows = c.rows[:min(len(c.rows), len(c.jobs))]
	}
	for i, j := range s.running {
		if c == nil {
			cj := s.snapJob(j, at)
			s.running1(&cj, j, at)
			cj.Nodes, cj.NodeIdx = hostNames(j.alloc), expand(j.alloc, idx, nil)
			snap.Jobs = append(snap.Jobs, cj)
			continue
		}
		l := s.line(j, at)
		switch {
		case !l.running: // started since the last snapshot
			l.running = true
			s.running1(&l.base, j, at)
			l.base.Nodes, l.base.NodeIdx = expand(j.alloc, names, nil), expand(j.alloc, idx, nil)
		case i < len(c.rows) && c.rows[i] == l:
			snap.Jobs = snap.Jobs[:i+1] // as the last snapshot wrote it
			continue
		}
		snap.Jobs = append(snap.Jobs, l.base)
		c.setRow(i, l)
	}
	pend := 0
	for _, j := range s.queue {
		if j.began {
			continue
		}
		first := pend == 0 // waits for nodes, the rest behind it
		pend++
		var e planEntry
		planned := false
		if s.bf != nil {
			e, planned = s.bf.planOf(j)
		}
		i := len(snap.Jobs)
		if c == nil {
			snap.Jobs = append(snap.Jobs, s.snapJob(j, at))
			cj := &snap.Jobs[i]
			pending1(cj, first)
			if planned {
				cj.Start, cj.End = planTimes(j, e.start, at)
				cj.SchedNodes, cj.NodeIdx = hostNames(e.nodes), expand(e.nodes, idx, nil)
			}
			continue
		}
		l := s.line(j, at)
		if i < len(c.rows) && c.rows[i] == l && l.shows(first, e, planned) {
			snap.Jobs = snap.Jobs[:i+1] // as the last snapshot wrote it
			continue
		}
		snap.Jobs = append(snap.Jobs, l.base)
		cj := &snap.Jobs[i]
		pending1(cj, first)
		if planned {
			l.plan(e, j, names, idx, at)
			cj.Start, cj.End, cj.SchedNodes, cj.NodeIdx = l.planStart, l.planEnd, l.planHosts, l.planIdx
		}
		l.first, l.planned = first, planned
		c.setRow(i, l)
	}
	if c != nil {
		c.jobs = snap.Jobs
		c.rows = c.rows[:len(snap.Jobs)]
	}
	return snap
}

// setRow notes which job's line jobs[i] shows.
func (c *snapCache) setRow(i int, l *jobLine) {
	if i < len(c.rows) {
		c.rows[i] = l
	} else {
		c.rows = append(c.rows, l)
	}
}

// schedConfig is the scheduler's configuration as a snapshot shows it.
func (s *State) schedConfig() cluster.SchedConfig {
	cfg := cluster.SchedConfig{SchedulerType: "sim/" + s.policy.String(), SelectType: "select/linear", Version: "sim"}
	if s.bf != nil {
		p := s.bf.p
		cfg.SchedulerType = "sched/backfill"
		cfg.BackfillInterval = p.BFInterval
		cfg.BackfillResolution = p.BFResolution
		cfg.BackfillWindow = p.BFWindow
		cfg.KillWait = p.KillWait
	}
	return cfg
}

// node is node i's line: idle, allocated, or planned (idle but reserved by
// the last backfill pass).
func (s *State) node(i int, names, parts []string) cluster.Node {
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
	return cluster.Node{Name: names[i], State: st, RawState: raw, Partitions: parts, CPUs: 1}
}

// nodePartitions is every simulated node's partition list in cached
// snapshots (shared; never modified).
var nodePartitions = []string{BatchPartition, PilotPartition}

// running1 fills in a running job's line.
func (s *State) running1(cj *cluster.Job, j *job, at func(time.Duration) time.Time) {
	cj.State, cj.RawState, cj.Reason = cluster.JobRunning, "RUNNING", "None"
	cj.Start = at(j.start)
	if j.est != workload.Unlimited {
		cj.End = at(j.estEnd)
	}
}

// pending1 fills in a pending job's line.
func pending1(cj *cluster.Job, first bool) {
	cj.State, cj.RawState, cj.Reason = cluster.JobPending, "PENDING", "Priority"
	if first {
		cj.Reason = "Resources"
	}
}

// planTimes are the Start and End a pending job planned to start at start
// shows.
func planTimes(j *job, start time.Duration, at func(time.Duration) time.Time) (time.Time, time.Time) {
	if j.est == workload.Unlimited {
		return at(start), time.Time{}
	}
	return at(start), at(addSat(start, j.est))
}

// plan brings l's plan to e: its times, and its nodes (the last list is
// written over if they changed: the snapshot that showed it is no longer
// valid).
func (l *jobLine) plan(e planEntry, j *job, names []string, idx []int, at func(time.Duration) time.Time) {
	if !l.planTimed || l.planAt != e.start {
		l.planAt, l.planTimed = e.start, true
		l.planStart, l.planEnd = planTimes(j, e.start, at)
	}
	if l.planHosts != nil && slices.Equal(l.planSpans, e.nodes) {
		return
	}
	l.planSpans = append(l.planSpans[:0], e.nodes...)
	l.planHosts = expand(e.nodes, names, l.planBuf[:0])
	l.planIdx = expand(e.nodes, idx, l.planIdxB[:0])
	if len(e.nodes) > 1 {
		l.planBuf, l.planIdxB = l.planHosts, l.planIdx
	}
}

// shows reports whether the pending line last written from l shows what
// it would show now: the same reason and plan.
func (l *jobLine) shows(first bool, e planEntry, planned bool) bool {
	return l.first == first && l.planned == planned &&
		(!planned || l.planAt == e.start && slices.Equal(l.planSpans, e.nodes))
}

// line is j's cached snapshot line.
func (s *State) line(j *job, at func(time.Duration) time.Time) *jobLine {
	if j.line == nil {
		j.line = &jobLine{base: s.snapJob(j, at)}
	}
	return j.line
}

// expand lists an allocation's nodes as elements of all (their names, or
// their indices for NodeIdx): a part of all itself (capped, so that
// nobody appends into it) if the nodes are one run, as a pilot's node is,
// else appended to buf.
func expand[T any](a []span, all, buf []T) []T {
	if len(a) == 1 {
		lo, hi := a[0].first, a[0].first+a[0].n
		return all[lo:hi:hi]
	}
	n := 0
	for _, sp := range a {
		n += int(sp.n)
	}
	if buf == nil || cap(buf) < n {
		buf = make([]T, 0, n)
	}
	for _, sp := range a {
		buf = append(buf, all[sp.first:sp.first+sp.n]...)
	}
	return buf
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
