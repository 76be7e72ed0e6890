package policy

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/glean-hpc/glean/sidecar/cluster"
)

// Helpers for Decide's tables. They build on showbf_test.go's now, at,
// part, nodes, snap, running and pending.

// rpilot is a running pilot on node, submitted sub before now, ending at
// end (never: UNLIMITED), busy with a task.
func rpilot(id, job, node string, sub time.Duration, end time.Time) Pilot {
	return Pilot{ID: id, Job: job, Node: node, State: PilotRunning, Submitted: at(-sub), Start: at(-sub + time.Second), End: end, Busy: true}
}

func idlePilot(p Pilot) Pilot     { p.Busy = false; return p }
func retiringPilot(p Pilot) Pilot { p.Retiring = true; return p }

func taskEnds(p Pilot, in time.Duration) Pilot { p.Busy, p.TaskEnd = true, at(in); return p }

// ppilot is a pending pilot pinned to node (or not: ""), submitted age ago.
func ppilot(id, job, node string, age time.Duration) Pilot {
	return Pilot{ID: id, Job: job, Node: node, State: PilotPending, Submitted: at(-age)}
}

// withPilots adds the pilots' squeue lines to s and marks running pilots'
// nodes allocated, as Slurm would show them.
func withPilots(s *cluster.Snapshot, ps ...Pilot) *cluster.Snapshot {
	for _, p := range ps {
		j := cluster.Job{ID: p.ID, Partition: "batch", State: cluster.JobPending, Reason: "Priority", NumNodes: 1,
			TimeLimit: time.Hour, Submit: p.Submitted, Priority: 1}
		if p.State == PilotRunning {
			j.State, j.Reason, j.Nodes, j.Start, j.End = cluster.JobRunning, "None", []string{p.Node}, p.Start, p.End
			if p.End.IsZero() {
				j.TimeLimit = cluster.Unlimited
			}
			for i := range s.Nodes {
				if s.Nodes[i].Name == p.Node {
					s.Nodes[i].State = cluster.NodeAlloc
				}
			}
		}
		s.Jobs = append(s.Jobs, j)
	}
	return s
}

func ejob(id string, m Mode, pendingTasks, runningTasks int, taskTime time.Duration, base ...string) ElasticJob {
	return ElasticJob{ID: id, Mode: m, Submit: at(-2 * time.Hour), TasksPending: pendingTasks, TasksRunning: runningTasks, TaskTime: taskTime, BaseJobIDs: base}
}

func names(prefix string, from, to int) []string {
	var out []string
	for i := from; i <= to; i++ {
		out = append(out, fmt.Sprintf("%s%d", prefix, i))
	}
	return out
}

func sub(job, node string, tl time.Duration) Action {
	return Action{Kind: SubmitPilot, Cause: CauseHarvest, Job: job, Node: node, TimeLimit: tl}
}

func cancelFor(c Cause, job, pilot, node string) Action {
	return Action{Kind: CancelPilot, Cause: c, Job: job, Pilot: pilot, Node: node}
}

func give(job, pilot, node, claimant string, by time.Time) Action {
	return Action{Kind: CancelPilot, Cause: CauseGiveWay, Job: job, Pilot: pilot, Node: node, Claimant: claimant, By: by}
}

func retire(job, pilot, node, claimant string, by time.Time) Action {
	return Action{Kind: RetirePilot, Cause: CauseGiveWay, Job: job, Pilot: pilot, Node: node, Claimant: claimant, By: by}
}

func cancelBase(job, base string) Action {
	return Action{Kind: CancelBase, Cause: CauseWorkDone, Job: job, Base: base}
}

// pend2 is a pending job with its time limit.
func pend2(id string, prio int64, reason string, n int, tl time.Duration, start time.Time, sched ...string) cluster.Job {
	j := pending(id, prio, reason, n, start, sched...)
	j.TimeLimit = tl
	return j
}

func array(j cluster.Job, expr string) cluster.Job { j.ArrayJobID, j.ArrayTasks = j.ID, expr; return j }

func stripReasons(acts []Action) []Action {
	out := make([]Action, len(acts))
	for i, a := range acts {
		if a.Reason == "" {
			a.Reason = "<empty>" // every action says why
		} else {
			a.Reason = ""
		}
		out[i] = a
	}
	return out
}

func fmtActs(acts []Action) string {
	if len(acts) == 0 {
		return "  (none)\n"
	}
	var b strings.Builder
	for _, a := range acts {
		fmt.Fprintf(&b, "  %s\n", a)
	}
	return b.String()
}

type decideCase struct {
	name string
	snap *cluster.Snapshot
	st   State
	cfg  func(*Config)
	want []Action
}

func runDecide(t *testing.T, tests []decideCase) {
	t.Helper()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			if tc.cfg != nil {
				tc.cfg(&cfg)
			}
			pilotsBefore := fmt.Sprint(tc.st.Pilots)
			got := Decide(tc.snap, tc.st, cfg, now)
			if fmt.Sprint(tc.st.Pilots) != pilotsBefore {
				t.Errorf("Decide modified the caller's pilots")
			}
			if g := stripReasons(got); !reflect.DeepEqual(g, tc.want) && !(len(g) == 0 && len(tc.want) == 0) {
				t.Errorf("actions:\n got\n%s want\n%s", fmtActs(got), fmtActs(tc.want))
			}
			seen := map[string]bool{}
			for _, a := range got {
				if a.Pilot != "" && seen[a.Pilot] {
					t.Errorf("pilot %s in two actions", a.Pilot)
				}
				seen[a.Pilot] = true
				if a.Kind == SubmitPilot && a.TimeLimit != cluster.Unlimited && (a.TimeLimit%time.Minute != 0 || a.TimeLimit < cfg.MinPilotTime) {
					t.Errorf("bad time limit %v", a.TimeLimit)
				}
			}
		})
	}
}

func TestDecideHarvest(t *testing.T) {
	idle, alloc := cluster.NodeIdle, cluster.NodeAlloc
	// n1-n4 idle, n5-n6 busy until +30m; p1 (6 nodes) planned at +30m on
	// all six: the idle nodes have 30-minute windows.
	base := func() *cluster.Snapshot {
		return snap([]cluster.Partition{part("batch", unl, names("n", 1, 6)...)},
			[][]cluster.Node{nodes(idle, "n1", "n2", "n3", "n4"), nodes(alloc, "n5", "n6")},
			running("r1", at(30*time.Minute), "n5", "n6"),
			pend2("p1", 100, "Resources", 6, time.Hour, at(30*time.Minute), names("n", 1, 6)...))
	}
	// Same without p1: unlimited windows.
	open := func() *cluster.Snapshot {
		return snap([]cluster.Partition{part("batch", unl, names("n", 1, 6)...)},
			[][]cluster.Node{nodes(idle, "n1", "n2", "n3", "n4"), nodes(alloc, "n5", "n6")},
			running("r1", at(30*time.Minute), "n5", "n6"))
	}
	incomplete := base()
	incomplete.Complete = false
	tests := []decideCase{
		{
			name: "window minus margin, down to whole minutes, never past the reservation",
			snap: base(),
			st:   State{Jobs: []ElasticJob{ejob("e1", Fair, 100, 0, 10*time.Minute)}},
			want: []Action{sub("e1", "n1", 28*time.Minute), sub("e1", "n2", 28*time.Minute), sub("e1", "n3", 28*time.Minute), sub("e1", "n4", 28*time.Minute)},
		},
		{
			name: "odd seconds round down",
			snap: func() *cluster.Snapshot {
				s := base()
				s.Jobs[1].Start = at(30*time.Minute + 59*time.Second)
				s.Jobs[0].End = at(30*time.Minute + 59*time.Second)
				return s
			}(),
			st:   State{Jobs: []ElasticJob{ejob("e1", Scavenger, 100, 0, 10*time.Minute)}},
			want: []Action{sub("e1", "n1", 28*time.Minute), sub("e1", "n2", 28*time.Minute), sub("e1", "n3", 28*time.Minute), sub("e1", "n4", 28*time.Minute)},
		},
		{
			name: "capped by the work left: 2 tasks of 10m, 2 pilots of 10m",
			snap: base(),
			st:   State{Jobs: []ElasticJob{ejob("e1", Fair, 2, 0, 10*time.Minute)}},
			want: []Action{sub("e1", "n1", 10*time.Minute), sub("e1", "n2", 10*time.Minute)},
		},
		{
			name: "work cap counts the job's workers: 5 tasks, 1 idle pilot, 3 more of 2 tasks each",
			snap: withPilots(open(), idlePilot(rpilot("a", "e1", "n1", time.Hour, at(time.Hour)))),
			st: State{Jobs: []ElasticJob{ejob("e1", Scavenger, 5, 0, 7*time.Minute)},
				Pilots: []Pilot{idlePilot(rpilot("a", "e1", "n1", time.Hour, at(time.Hour)))}},
			want: []Action{sub("e1", "n2", 14*time.Minute), sub("e1", "n3", 14*time.Minute), sub("e1", "n4", 14*time.Minute)},
		},
		{
			name: "TaskSlack is added once per pilot: 5 tasks of 7m on 4 pilots, slack 90s",
			snap: open(),
			st:   State{Jobs: []ElasticJob{ejob("e1", Scavenger, 5, 0, 7*time.Minute)}},
			cfg:  func(c *Config) { c.TaskSlack = 90 * time.Second },
			want: []Action{sub("e1", "n1", 16*time.Minute), sub("e1", "n2", 16*time.Minute), sub("e1", "n3", 16*time.Minute), sub("e1", "n4", 16*time.Minute)},
		},
		{
			name: "TaskSlack: a window that fits the task but not the slack gets no pilot",
			snap: base(),
			st:   State{Jobs: []ElasticJob{ejob("e1", Fair, 100, 0, 27*time.Minute)}},
			cfg:  func(c *Config) { c.TaskSlack = 90 * time.Second },
			want: nil,
		},
		{
			name: "a short work cap is raised to MinPilotTime",
			snap: open(),
			st:   State{Jobs: []ElasticJob{ejob("e1", Fair, 1, 0, time.Minute)}},
			want: []Action{sub("e1", "n1", 2*time.Minute)},
		},
		{
			name: "unknown task time and no reservation: unlimited",
			snap: open(),
			st:   State{Jobs: []ElasticJob{ejob("e1", Fair, 2, 0, 0)}},
			want: []Action{sub("e1", "n1", unl), sub("e1", "n2", unl)},
		},
		{
			name: "partition MaxTime caps the window",
			snap: func() *cluster.Snapshot { s := open(); s.Partitions[0].MaxTime = 2 * time.Hour; return s }(),
			st:   State{Jobs: []ElasticJob{ejob("e1", Fair, 1, 0, 0)}},
			want: []Action{sub("e1", "n1", 118*time.Minute)},
		},
		{
			name: "budget: pilots within what is left, the last one shorter, none under a task",
			snap: base(),
			st: State{Jobs: []ElasticJob{func() ElasticJob {
				j := ejob("e1", Scavenger, 100, 0, 10*time.Minute)
				j.Budgeted, j.BudgetLeft = true, 28*time.Minute+28*time.Minute+15*time.Minute+30*time.Second
				return j
			}()}},
			want: []Action{sub("e1", "n1", 28*time.Minute), sub("e1", "n2", 28*time.Minute), sub("e1", "n3", 15*time.Minute)},
		},
		{
			name: "budget caps an unlimited pilot",
			snap: open(),
			st: State{Jobs: []ElasticJob{func() ElasticJob {
				j := ejob("e1", Fair, 2, 0, 0)
				j.Budgeted, j.BudgetLeft = true, 90*time.Minute
				return j
			}()}},
			want: []Action{sub("e1", "n1", 90*time.Minute)},
		},
		{
			name: "budget spent: no pilot",
			snap: open(),
			st: State{Jobs: []ElasticJob{func() ElasticJob {
				j := ejob("e1", Fair, 2, 0, time.Minute)
				j.Budgeted = true
				return j
			}()}},
		},
		{
			name: "window shorter than a task: no pilot",
			snap: base(),
			st:   State{Jobs: []ElasticJob{ejob("e1", Fair, 100, 0, 29*time.Minute)}},
		},
		{
			name: "window shorter than MinPilotTime: no pilot",
			snap: base(),
			st:   State{Jobs: []ElasticJob{ejob("e1", Fair, 100, 0, time.Minute)}},
			cfg:  func(c *Config) { c.MinPilotTime = 29 * time.Minute },
		},
		{
			name: "no pending task: no pilot",
			snap: base(),
			st:   State{Jobs: []ElasticJob{ejob("e1", Fair, 0, 3, time.Minute)}},
		},
		{
			name: "incomplete snapshot: no pilot",
			snap: incomplete,
			st:   State{Jobs: []ElasticJob{ejob("e1", Fair, 100, 0, time.Minute)}},
		},
		{
			name: "unknown pilot partition: no pilot",
			snap: base(),
			st:   State{Jobs: []ElasticJob{ejob("e1", Fair, 100, 0, time.Minute)}},
			cfg:  func(c *Config) { c.PilotPartition = "nope" },
		},
		{
			name: "invalid config: nothing at all",
			snap: base(),
			st:   State{Jobs: []ElasticJob{ejob("e1", Fair, 100, 0, time.Minute)}, Pilots: []Pilot{ppilot("old", "e1", "n1", time.Hour)}},
			cfg:  func(c *Config) { c.MaxPendingPilots = 0 },
		},
		{
			name: "MaxPendingPilots counts pilots already pending",
			snap: withPilots(base(), ppilot("q1", "e1", "n1", 10*time.Second)),
			st:   State{Jobs: []ElasticJob{ejob("e1", Fair, 100, 0, time.Minute)}, Pilots: []Pilot{ppilot("q1", "e1", "n1", 10*time.Second)}},
			cfg:  func(c *Config) { c.MaxPendingPilots = 3 },
			want: []Action{sub("e1", "n2", 28*time.Minute), sub("e1", "n3", 28*time.Minute)},
		},
		{
			name: "MaxPilots counts running pilots",
			snap: withPilots(open(), rpilot("a", "e1", "n1", time.Hour, never)),
			st:   State{Jobs: []ElasticJob{ejob("e1", Fair, 100, 1, time.Minute)}, Pilots: []Pilot{rpilot("a", "e1", "n1", time.Hour, never)}},
			cfg:  func(c *Config) { c.MaxPilots = 2 },
			want: []Action{sub("e1", "n2", 50*time.Minute)}, // 100 tasks of 1m over 2 workers
		},
		{
			name: "an unpinned pending pilot takes the longest window",
			snap: withPilots(base(), ppilot("q1", "e1", "", 10*time.Second)),
			st:   State{Jobs: []ElasticJob{ejob("e1", Fair, 100, 0, 10*time.Minute)}, Pilots: []Pilot{ppilot("q1", "e1", "", 10*time.Second)}},
			want: []Action{sub("e1", "n2", 28*time.Minute), sub("e1", "n3", 28*time.Minute), sub("e1", "n4", 28*time.Minute)},
		},
		{
			name: "a job Slurm will start itself keeps its idle node; pilots take the rest",
			snap: func() *cluster.Snapshot {
				s := open()
				s.Jobs = append(s.Jobs, pend2("small", 50, "Priority", 1, time.Hour, never))
				return s
			}(),
			st:   State{Jobs: []ElasticJob{ejob("e1", Fair, 100, 0, 0)}},
			want: []Action{sub("e1", "n2", unl), sub("e1", "n3", unl), sub("e1", "n4", unl)},
		},
		{
			name: "pilots are known by their ids only: a job named or commented like one is not",
			snap: func() *cluster.Snapshot {
				s := open()
				j := running("x", at(time.Hour), "n1")
				j.Name, j.Comment = "glean-pilot", "glean"
				s.Jobs = append(s.Jobs, j)
				s.Nodes[0].State = cluster.NodeAlloc
				return s
			}(),
			st:   State{Jobs: []ElasticJob{ejob("e1", Fair, 1, 0, 0)}},
			want: []Action{sub("e1", "n2", unl)},
		},
		{
			name: "our pending pilot's own plan does not shrink the windows",
			snap: func() *cluster.Snapshot {
				s := open()
				q := pend2("q", 1, "Priority", 1, time.Hour, at(5*time.Minute), "n2")
				return func() *cluster.Snapshot { s.Jobs = append(s.Jobs, q); return s }()
			}(),
			st:   State{Jobs: []ElasticJob{ejob("e1", Fair, 3, 0, 0)}, Pilots: []Pilot{ppilot("q", "e1", "n1", 5*time.Second)}},
			want: []Action{sub("e1", "n2", unl), sub("e1", "n3", unl)},
		},
		{
			name: "FIFO among elastic jobs, mixed modes",
			snap: open(),
			st: State{Jobs: []ElasticJob{
				ejob("first", Scavenger, 2, 0, 10*time.Minute),
				ejob("second", Fair, 5, 0, 0),
			}},
			want: []Action{sub("first", "n1", 10*time.Minute), sub("first", "n2", 10*time.Minute), sub("second", "n3", unl), sub("second", "n4", unl)},
		},
		{
			name: "synchronized release: pilots end on the hour",
			snap: open(), // now is hh:33:09
			st:   State{Jobs: []ElasticJob{ejob("e1", Fair, 1, 0, 0)}},
			cfg:  func(c *Config) { c.SyncRelease = time.Hour },
			want: []Action{sub("e1", "n1", 86*time.Minute)},
		},
		{
			name: "synchronized release: the boundary inside the window",
			snap: base(), // hh:33:09 + 28m reaches hh+1:00
			st:   State{Jobs: []ElasticJob{ejob("e1", Fair, 1, 0, 0)}},
			cfg:  func(c *Config) { c.SyncRelease = time.Hour },
			want: []Action{sub("e1", "n1", 26*time.Minute)},
		},
		{
			name: "synchronized release: a window that reaches no boundary gives no pilot",
			snap: base(), // now is 1:33:09 into a 3h frame; 28m do not reach its end
			st:   State{Jobs: []ElasticJob{ejob("e1", Fair, 100, 0, 0)}},
			cfg:  func(c *Config) { c.SyncRelease = 3 * time.Hour },
		},
		{
			name: "a separate pilot partition on the same nodes",
			snap: func() *cluster.Snapshot {
				s := base()
				p := part("glean", 12*time.Hour, names("n", 1, 6)...)
				p.PriorityTier = -1
				s.Partitions = append(s.Partitions, p)
				return s
			}(),
			st:   State{Jobs: []ElasticJob{ejob("e1", Fair, 1, 0, 0)}},
			cfg:  func(c *Config) { c.PilotPartition = "glean" },
			want: []Action{sub("e1", "n1", 28*time.Minute)},
		},
	}
	runDecide(t, tests)
}

func TestDecideReleases(t *testing.T) {
	idle := cluster.NodeIdle
	open := func() *cluster.Snapshot {
		return snap([]cluster.Partition{part("batch", unl, names("n", 1, 6)...)}, [][]cluster.Node{nodes(idle, names("n", 1, 6)...)})
	}
	cfg := DefaultConfig()
	cfg.PendingTimeout = 20 * time.Second
	tests := []decideCase{
		{
			name: "pending timeout is one cycle (bf_interval) and blocks submissions that round",
			snap: func() *cluster.Snapshot {
				s := withPilots(open(), ppilot("q1", "e1", "n1", 31*time.Second), ppilot("q2", "e1", "n2", 29*time.Second))
				s.Config.BackfillInterval = 30 * time.Second
				return s
			}(),
			st:   State{Jobs: []ElasticJob{ejob("e1", Fair, 100, 0, 0)}, Pilots: []Pilot{ppilot("q1", "e1", "n1", 31*time.Second), ppilot("q2", "e1", "n2", 29*time.Second)}},
			want: []Action{cancelFor(CauseTimeout, "e1", "q1", "n1")},
		},
		{
			name: "the timeout grows by a step per consecutive miss",
			snap: func() *cluster.Snapshot {
				s := withPilots(open(), ppilot("q1", "e1", "n1", 61*time.Second), ppilot("q2", "e1", "n2", 59*time.Second))
				s.Config.BackfillInterval = 30 * time.Second
				return s
			}(),
			st: State{Jobs: []ElasticJob{ejob("e1", Fair, 2, 0, 0)}, PendingMisses: 1,
				Pilots: []Pilot{ppilot("q1", "e1", "n1", 61*time.Second), ppilot("q2", "e1", "n2", 59*time.Second)}},
			want: []Action{cancelFor(CauseTimeout, "e1", "q1", "n1")},
		},
		{
			name: "a start resets the misses",
			snap: withPilots(open(), ppilot("q1", "e1", "n1", 31*time.Second)),
			st: State{Jobs: []ElasticJob{ejob("e1", Fair, 1, 0, 0)}, PendingMisses: 5, Started: true, BFInterval: 30 * time.Second,
				Pilots: []Pilot{ppilot("q1", "e1", "n1", 31*time.Second)}},
			want: []Action{cancelFor(CauseTimeout, "e1", "q1", "n1")},
		},
		{
			name: "the grown timeout is bounded",
			snap: withPilots(open(), ppilot("q1", "e1", "n1", 11*time.Minute)),
			st:   State{Jobs: []ElasticJob{ejob("e1", Fair, 1, 0, 0)}, PendingMisses: 1 << 40, Pilots: []Pilot{ppilot("q1", "e1", "n1", 11*time.Minute)}},
			want: []Action{cancelFor(CauseTimeout, "e1", "q1", "n1")},
		},
		{
			name: "the config's timeout when bf_interval is unknown",
			snap: withPilots(open(), ppilot("q1", "e1", "n1", 21*time.Second)),
			st:   State{Jobs: []ElasticJob{ejob("e1", Fair, 1, 0, 0)}, Pilots: []Pilot{ppilot("q1", "e1", "n1", 21*time.Second)}},
			cfg:  func(c *Config) { *c = cfg },
			want: []Action{cancelFor(CauseTimeout, "e1", "q1", "n1")},
		},
		{
			name: "no work: idle and pending pilots go, busy and retiring ones stay",
			snap: withPilots(open(), idlePilot(rpilot("a", "e1", "n1", time.Hour, at(time.Hour))), rpilot("b", "e1", "n2", time.Hour, at(time.Hour)),
				retiringPilot(idlePilot(rpilot("c", "e1", "n3", time.Hour, at(time.Hour)))), ppilot("q", "e1", "n4", 5*time.Second)),
			st: State{Jobs: []ElasticJob{ejob("e1", Fair, 0, 1, time.Minute)}, Pilots: []Pilot{
				idlePilot(rpilot("a", "e1", "n1", time.Hour, at(time.Hour))), rpilot("b", "e1", "n2", time.Hour, at(time.Hour)),
				retiringPilot(idlePilot(rpilot("c", "e1", "n3", time.Hour, at(time.Hour)))), ppilot("q", "e1", "n4", 5*time.Second)}},
			want: []Action{cancelFor(CauseNoWork, "e1", "q", "n4"), cancelFor(CauseNoWork, "e1", "a", "n1")},
		},
		{
			name: "surplus: 1 pending task, 3 idle slots: the pending pilot, then the idle pilot closest to its end",
			snap: withPilots(open(), idlePilot(rpilot("a", "e1", "n1", time.Hour, at(2*time.Hour))), idlePilot(rpilot("b", "e1", "n2", time.Hour, at(time.Hour))),
				ppilot("q", "e1", "n4", 5*time.Second)),
			st: State{Jobs: []ElasticJob{ejob("e1", Scavenger, 1, 0, time.Minute)}, Pilots: []Pilot{
				idlePilot(rpilot("a", "e1", "n1", time.Hour, at(2*time.Hour))), idlePilot(rpilot("b", "e1", "n2", time.Hour, at(time.Hour))),
				ppilot("q", "e1", "n4", 5*time.Second)}},
			want: []Action{cancelFor(CauseNoWork, "e1", "q", "n4"), cancelFor(CauseNoWork, "e1", "b", "n2")},
		},
		{
			name: "orphan pilots (job unknown) have no work",
			snap: withPilots(open(), idlePilot(rpilot("a", "gone", "n1", time.Hour, at(time.Hour)))),
			st:   State{Pilots: []Pilot{idlePilot(rpilot("a", "gone", "n1", time.Hour, at(time.Hour)))}},
			want: []Action{cancelFor(CauseNoWork, "gone", "a", "n1")},
		},
		{
			name: "fair: pending base cancelled when no work is left, running elements kept",
			snap: func() *cluster.Snapshot {
				s := open()
				el := running("1003", at(time.Hour), "n6")
				el.ArrayJobID, el.ArrayTasks = "b1", "3"
				s.Jobs = append(s.Jobs, array(pend2("b1", 10, "Priority", 1, time.Hour, never), "4-9"), el, pend2("other", 5, "Priority", 1, time.Hour, never))
				return s
			}(),
			st:   State{Jobs: []ElasticJob{ejob("e1", Fair, 0, 1, time.Minute, "b1")}},
			want: []Action{cancelBase("e1", "b1")},
		},
		{
			// A running element that loses its task (its node fails) hands it
			// back; with no pilot to take it, the pending elements must.
			name: "fair: base kept when the job cannot get a pilot (budget spent, or its pilots held back)",
			snap: func() *cluster.Snapshot {
				s := open()
				el := running("1003", at(time.Hour), "n6")
				el.ArrayJobID, el.ArrayTasks = "b1", "3"
				s.Jobs = append(s.Jobs, array(pend2("b1", 10, "Priority", 1, time.Hour, never), "4-9"), el)
				return s
			}(),
			st: State{Jobs: []ElasticJob{
				func() ElasticJob {
					j := ejob("e1", Fair, 0, 1, time.Minute, "b1")
					j.Budgeted, j.BudgetLeft = true, 30*time.Second // less than the shortest pilot
					return j
				}(),
				func() ElasticJob { j := ejob("e2", Fair, 0, 1, time.Minute, "b1"); j.HoldPilots = true; return j }(),
			}},
			want: nil,
		},
		{
			name: "fair: base kept while a pilot holds a task (it may hand it back)",
			snap: func() *cluster.Snapshot {
				s := withPilots(open(), rpilot("a", "e1", "n1", time.Hour, at(time.Hour)))
				s.Jobs = append(s.Jobs, array(pend2("b1", 10, "Priority", 1, time.Hour, at(2*time.Hour), "n1"), "4-9"))
				return s
			}(),
			st:   State{Jobs: []ElasticJob{ejob("e1", Fair, 0, 1, time.Minute, "b1")}, Pilots: []Pilot{rpilot("a", "e1", "n1", time.Hour, at(time.Hour))}},
			want: nil,
		},
		{
			name: "incomplete snapshot: timeouts and releases still happen",
			snap: func() *cluster.Snapshot {
				s := withPilots(open(), ppilot("q1", "e1", "n1", time.Hour), idlePilot(rpilot("a", "e2", "n2", time.Hour, at(time.Hour))))
				s.Complete = false
				return s
			}(),
			st: State{Jobs: []ElasticJob{ejob("e1", Fair, 10, 0, 0), ejob("e2", Fair, 0, 0, 0)},
				Pilots: []Pilot{ppilot("q1", "e1", "n1", time.Hour), idlePilot(rpilot("a", "e2", "n2", time.Hour, at(time.Hour)))}},
			want: []Action{cancelFor(CauseTimeout, "e1", "q1", "n1"), cancelFor(CauseNoWork, "e2", "a", "n2")},
		},
	}
	runDecide(t, tests)
}

func TestDecideGiveWay(t *testing.T) {
	idle, alloc := cluster.NodeIdle, cluster.NodeAlloc
	// n1, n2 idle; pilots a (n3, ends +20m), b (n4, +40m, older), c (n5,
	// +40m, newer), d (n6, UNLIMITED).
	ps := []Pilot{
		rpilot("a", "e1", "n3", time.Hour, at(20*time.Minute)),
		rpilot("b", "e1", "n4", 2*time.Hour, at(40*time.Minute)),
		rpilot("c", "e1", "n5", time.Hour, at(40*time.Minute)),
		rpilot("d", "e1", "n6", 3*time.Hour, never),
	}
	six := func(jobs ...cluster.Job) *cluster.Snapshot {
		s := snap([]cluster.Partition{part("batch", unl, names("n", 1, 6)...)}, [][]cluster.Node{nodes(idle, names("n", 1, 6)...)}, jobs...)
		return withPilots(s, ps...)
	}
	st := State{Jobs: []ElasticJob{ejob("e1", Fair, 100, 4, time.Minute)}, Pilots: ps}
	scav := State{Jobs: []ElasticJob{ejob("e1", Scavenger, 100, 4, time.Minute)}, Pilots: ps}

	// Three nodes: r1 on n1 until end1, pilot x on n2 until +3h, n3 held
	// forever; p planned at pilot x's end on n1, n2.
	x := rpilot("x", "e1", "n2", time.Hour, at(3*time.Hour))
	behind := func(end1 time.Duration, px Pilot) *cluster.Snapshot {
		s := snap([]cluster.Partition{part("batch", unl, "n1", "n2", "n3")},
			[][]cluster.Node{nodes(alloc, "n1"), nodes(idle, "n2"), nodes(alloc, "n3")},
			running("r1", at(end1), "n1"), unlimited("u", "n3"),
			pend2("p", 100, "Resources", 2, time.Hour, at(3*time.Hour), "n1", "n2"))
		return withPilots(s, px)
	}
	// Slurm's (or the simulator's) plan puts p on pilot x's node at +claim.
	claim := func(c time.Duration) *cluster.Snapshot {
		s := snap([]cluster.Partition{part("batch", unl, "n1", "n2", "n3")},
			[][]cluster.Node{nodes(alloc, "n1"), nodes(idle, "n2"), nodes(alloc, "n3")},
			running("r1", at(c), "n1"), unlimited("u", "n3"),
			pend2("p", 100, "Resources", 2, time.Hour, at(c), "n1", "n2"))
		return withPilots(s, x)
	}
	incomplete := six(pend2("P", 100, "Resources", 4, time.Hour, never))
	incomplete.Complete = false

	tests := []decideCase{
		{
			name: "a job that fits now with pilots' nodes: idle first, then closest to end, then newest",
			snap: six(pend2("P", 100, "Resources", 4, time.Hour, never)),
			st:   st,
			want: []Action{give("e1", "a", "n3", "P", now), give("e1", "c", "n5", "P", now)},
		},
		{
			name: "scavenger gives way the same",
			snap: six(pend2("P", 100, "Resources", 4, time.Hour, never)),
			st:   scav,
			want: []Action{give("e1", "a", "n3", "P", now), give("e1", "c", "n5", "P", now)},
		},
		{
			name: "incomplete snapshot: still gives way",
			snap: incomplete,
			st:   st,
			want: []Action{give("e1", "a", "n3", "P", now), give("e1", "c", "n5", "P", now)},
		},
		{
			name: "every pending job, in priority order, each on what is left",
			snap: six(pend2("P", 100, "Resources", 4, time.Hour, never), pend2("Q", 50, "Priority", 2, 10*time.Minute, never)),
			st:   st,
			want: []Action{give("e1", "a", "n3", "P", now), give("e1", "c", "n5", "P", now), give("e1", "b", "n4", "Q", now), give("e1", "d", "n6", "Q", now)},
		},
		{
			name: "a pilot ending within Grace is not cancelled but counts",
			snap: six(pend2("P", 100, "Resources", 3, time.Hour, never)),
			st: func() State {
				s := st
				s.Pilots = append([]Pilot{}, ps...)
				s.Pilots[0].End = at(50 * time.Second)
				return s
			}(),
		},
		{
			name: "a pilot leaving for lack of work frees its node: no other pilot is given",
			snap: func() *cluster.Snapshot {
				s := snap([]cluster.Partition{part("batch", unl, names("n", 1, 7)...)}, [][]cluster.Node{nodes(idle, names("n", 1, 7)...)},
					pend2("P", 100, "Resources", 3, time.Hour, never))
				return withPilots(s, append([]Pilot{idlePilot(rpilot("z", "e2", "n7", time.Hour, never))}, ps...)...)
			}(),
			st: State{Jobs: []ElasticJob{ejob("e1", Fair, 100, 4, time.Minute), ejob("e2", Fair, 0, 0, time.Minute)},
				Pilots: append([]Pilot{idlePilot(rpilot("z", "e2", "n7", time.Hour, never))}, ps...)},
			want: []Action{cancelFor(CauseNoWork, "e2", "z", "n7")},
		},
		{
			name: "a pilot cancelled earlier (Leaving) frees its node: the claimant counts it, nothing is cancelled twice",
			snap: six(pend2("P", 100, "Resources", 4, time.Hour, never)),
			st: func() State {
				s := st
				s.Pilots = append([]Pilot{}, ps...)
				s.Pilots[2].Leaving = true // c, cancelled last round
				return s
			}(),
			want: []Action{give("e1", "a", "n3", "P", now)},
		},
		{
			name: "a job that fits on idle nodes alone: no give way, and no pilot there",
			snap: six(pend2("P", 100, "Resources", 2, time.Hour, never)),
			st:   st,
		},
		{
			name: "a job Slurm starts within Grace anyway: no give way",
			// P starts in 30s on n1, n2 and n7, n8 (freed by r); pilots'
			// nodes would only move it by 30s.
			snap: func() *cluster.Snapshot {
				s := snap([]cluster.Partition{part("batch", unl, names("n", 1, 8)...)},
					[][]cluster.Node{nodes(idle, names("n", 1, 6)...), nodes(alloc, "n7", "n8")},
					running("r", at(30*time.Second), "n7", "n8"),
					pend2("P", 100, "Resources", 4, time.Hour, at(30*time.Second), "n1", "n2", "n7", "n8"))
				return withPilots(s, ps...)
			}(),
			st: st,
		},
		{
			name: "held and dependent jobs are not claimants; the idle nodes are harvested",
			snap: six(pend2("H", 100, "JobHeldUser", 4, time.Hour, never), pend2("D", 100, "Dependency", 4, time.Hour, never)),
			st:   st,
			// 100 tasks of 1m over 6 workers (2 new, 4 busy): 17m.
			want: []Action{sub("e1", "n1", 17*time.Minute), sub("e1", "n2", 17*time.Minute)},
		},
		{
			name: "too big even with every pilot: no give way, no reservation",
			snap: six(pend2("P", 100, "Resources", 7, time.Hour, never)),
			st:   st,
			want: []Action{sub("e1", "n1", 17*time.Minute), sub("e1", "n2", 17*time.Minute)},
		},
		{
			name: "Slurm's plan waits for a pilot: needed in 20m, beyond RetireHorizon: retire",
			snap: behind(20*time.Minute, x),
			st:   State{Jobs: []ElasticJob{ejob("e1", Fair, 100, 1, time.Minute)}, Pilots: []Pilot{x}},
			want: []Action{retire("e1", "x", "n2", "p", at(20*time.Minute))},
		},
		{
			name: "already retiring: nothing more until the need comes close",
			snap: behind(20*time.Minute, retiringPilot(x)),
			st:   State{Jobs: []ElasticJob{ejob("e1", Fair, 100, 1, time.Minute)}, Pilots: []Pilot{retiringPilot(x)}},
		},
		{
			name: "Slurm's plan waits for a pilot: needed in 3m, within RetireHorizon: cancel",
			snap: behind(3*time.Minute, retiringPilot(x)),
			st:   State{Jobs: []ElasticJob{ejob("e1", Fair, 100, 1, time.Minute)}, Pilots: []Pilot{retiringPilot(x)}},
			want: []Action{give("e1", "x", "n2", "p", at(3*time.Minute))},
		},
		{
			name: "needed in 3m, but its task ends in 2m: retire, nothing is killed",
			snap: behind(3*time.Minute, x),
			st:   State{Jobs: []ElasticJob{ejob("e1", Fair, 100, 1, time.Minute)}, Pilots: []Pilot{taskEnds(x, 2*time.Minute)}},
			want: []Action{retire("e1", "x", "n2", "p", at(3*time.Minute))},
		},
		{
			name: "needed in 3m, its task ends in 4m: cancel",
			snap: behind(3*time.Minute, x),
			st:   State{Jobs: []ElasticJob{ejob("e1", Fair, 100, 1, time.Minute)}, Pilots: []Pilot{taskEnds(x, 4*time.Minute)}},
			want: []Action{give("e1", "x", "n2", "p", at(3*time.Minute))},
		},
		{
			name: "a reservation on a pilot's node before its end: retire when far",
			snap: claim(10 * time.Minute),
			st:   State{Jobs: []ElasticJob{ejob("e1", Fair, 100, 1, time.Minute)}, Pilots: []Pilot{x}},
			want: []Action{retire("e1", "x", "n2", "p", at(10*time.Minute))},
		},
		{
			name: "a reservation on a pilot's node before its end: cancel when near",
			snap: claim(2 * time.Minute),
			st:   State{Jobs: []ElasticJob{ejob("e1", Fair, 100, 1, time.Minute)}, Pilots: []Pilot{x}},
			want: []Action{give("e1", "x", "n2", "p", at(2*time.Minute))},
		},
		{
			name: "EASY shadow of the top unplanned job: as few pilots as it needs",
			// n1-n3 busy until +10m, n4 until +2h; pilots a (n5, +3h), b (n6,
			// UNLIMITED). T needs 4 nodes: at +10m with one pilot gone, at +2h
			// with both there.
			snap: func() *cluster.Snapshot {
				a, b := rpilot("a", "e1", "n5", time.Hour, at(3*time.Hour)), rpilot("b", "e1", "n6", 2*time.Hour, never)
				s := snap([]cluster.Partition{part("batch", unl, names("n", 1, 6)...)},
					[][]cluster.Node{nodes(alloc, "n1", "n2", "n3", "n4"), nodes(idle, "n5", "n6")},
					running("r1", at(10*time.Minute), "n1", "n2", "n3"), running("r2", at(2*time.Hour), "n4"),
					pend2("T", 100, "Resources", 4, time.Hour, never))
				return withPilots(s, a, b)
			}(),
			st: State{Jobs: []ElasticJob{ejob("e1", Fair, 100, 2, time.Minute)},
				Pilots: []Pilot{rpilot("a", "e1", "n5", time.Hour, at(3*time.Hour)), rpilot("b", "e1", "n6", 2*time.Hour, never)}},
			want: []Action{retire("e1", "a", "n5", "T", at(10*time.Minute))},
		},
		{
			name: "a pilot never gives way to its own job's base, does to another job's",
			snap: func() *cluster.Snapshot {
				s := snap([]cluster.Partition{part("batch", unl, "n1", "n2")}, [][]cluster.Node{nodes(idle, "n1", "n2")},
					array(pend2("b1", 100, "Resources", 1, time.Hour, never), "1-10"))
				return withPilots(s, rpilot("own", "e1", "n1", time.Hour, never), rpilot("other", "e2", "n2", time.Hour, never))
			}(),
			st: State{Jobs: []ElasticJob{ejob("e1", Fair, 100, 1, time.Minute, "b1"), ejob("e2", Scavenger, 100, 1, time.Minute)},
				Pilots: []Pilot{rpilot("own", "e1", "n1", time.Hour, never), rpilot("other", "e2", "n2", time.Hour, never)}},
			want: []Action{give("e2", "other", "n2", "b1", now)},
		},
		{
			name: "a pending array stands for its elements",
			snap: six(array(pend2("A", 100, "Resources", 1, time.Hour, never), "0-99%3")),
			st:   st,
			want: []Action{give("e1", "a", "n3", "A", now)},
		},
		{
			name: "a higher-priority reservation bounds a lower job; Slurm's plan behind several pilots",
			// H (5 nodes) is planned at +2h, when pilots a, b (n2, n3) end and
			// after c (n4, UNLIMITED)... on n1-n5; n5 is busy until +30m. L
			// (3h) cannot start now: every free node is H's at +2h. Without
			// the pilots H starts at +30m: they are retired (beyond the
			// horizon), newest first among equal ends.
			snap: func() *cluster.Snapshot {
				s := snap([]cluster.Partition{part("batch", unl, names("n", 1, 5)...)},
					[][]cluster.Node{nodes(idle, "n1", "n2", "n3", "n4"), nodes(alloc, "n5")},
					running("r", at(30*time.Minute), "n5"),
					pend2("H", 200, "Resources", 5, time.Hour, at(2*time.Hour), names("n", 1, 5)...),
					pend2("L", 100, "Priority", 1, 3*time.Hour, never))
				return withPilots(s, rpilot("a", "e1", "n2", 2*time.Hour, at(2*time.Hour)), rpilot("b", "e1", "n3", time.Hour, at(2*time.Hour)),
					rpilot("c", "e1", "n4", 3*time.Hour, never))
			}(),
			st: State{Jobs: []ElasticJob{ejob("e1", Fair, 100, 3, time.Minute)}, Pilots: []Pilot{
				rpilot("a", "e1", "n2", 2*time.Hour, at(2*time.Hour)), rpilot("b", "e1", "n3", time.Hour, at(2*time.Hour)),
				rpilot("c", "e1", "n4", 3*time.Hour, never)}},
			want: []Action{retire("e1", "b", "n3", "H", at(30*time.Minute)), retire("e1", "a", "n2", "H", at(30*time.Minute)),
				retire("e1", "c", "n4", "H", at(30*time.Minute))},
		},
		{
			name: "a lower job is bounded by the higher one's start without pilots, not Slurm's later plan",
			// As above, but L needs 2 nodes for 20m: it ends before H's +30m,
			// so it may start now on n1 and a pilot's node (b: closest to its
			// end, newest); H's plan retires the other two. With 1h, L would
			// delay H past +30m and gets nothing.
			snap: func() *cluster.Snapshot {
				s := snap([]cluster.Partition{part("batch", unl, names("n", 1, 5)...)},
					[][]cluster.Node{nodes(idle, "n1", "n2", "n3", "n4"), nodes(alloc, "n5")},
					running("r", at(30*time.Minute), "n5"),
					pend2("H", 200, "Resources", 5, time.Hour, at(2*time.Hour), names("n", 1, 5)...),
					pend2("L", 100, "Priority", 2, 20*time.Minute, never),
					pend2("L2", 90, "Priority", 1, time.Hour, never))
				return withPilots(s, rpilot("a", "e1", "n2", 2*time.Hour, at(2*time.Hour)), rpilot("b", "e1", "n3", time.Hour, at(2*time.Hour)),
					rpilot("c", "e1", "n4", 3*time.Hour, never))
			}(),
			st: State{Jobs: []ElasticJob{ejob("e1", Fair, 100, 3, time.Minute)}, Pilots: []Pilot{
				rpilot("a", "e1", "n2", 2*time.Hour, at(2*time.Hour)), rpilot("b", "e1", "n3", time.Hour, at(2*time.Hour)),
				rpilot("c", "e1", "n4", 3*time.Hour, never)}},
			want: []Action{give("e1", "b", "n3", "L", now), retire("e1", "a", "n2", "H", at(30*time.Minute)),
				retire("e1", "c", "n4", "H", at(30*time.Minute))},
		},
	}
	runDecide(t, tests)
}

func TestNextMisses(t *testing.T) {
	timeout := []Action{cancelFor(CauseTimeout, "e", "q", "")}
	other := []Action{cancelFor(CauseNoWork, "e", "q", ""), sub("e", "n1", time.Hour)}
	for _, tc := range []struct {
		st   State
		acts []Action
		want int
	}{
		{State{}, nil, 0},
		{State{}, timeout, 1},
		{State{PendingMisses: 3}, timeout, 4},
		{State{PendingMisses: 3}, other, 3},
		{State{PendingMisses: 3, Started: true}, other, 0},
		{State{PendingMisses: 3, Started: true}, timeout, 1},
	} {
		if got := tc.st.NextMisses(tc.acts); got != tc.want {
			t.Errorf("%+v NextMisses(%v) = %d, want %d", tc.st, tc.acts, got, tc.want)
		}
	}
}

func TestParseMode(t *testing.T) {
	for in, want := range map[string]Mode{"": Fair, "fair": Fair, "Scavenger": Scavenger, " thesis ": Thesis} {
		if got, err := ParseMode(in); err != nil || got != want {
			t.Errorf("ParseMode(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	if _, err := ParseMode("greedy"); err == nil {
		t.Error("ParseMode(greedy): no error")
	}
	for _, m := range []Mode{Fair, Scavenger, Thesis} {
		if got, _ := ParseMode(m.String()); got != m {
			t.Errorf("round trip %v", m)
		}
	}
}

func TestConfigValidate(t *testing.T) {
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatalf("default config: %v", err)
	}
	c := DefaultConfig()
	c.Margin = -1
	c.MaxPendingPilots = 0
	c.MaxPilots = -1
	c.PendingTimeout = 0
	c.MinPilotTime = 30 * time.Second
	c.SyncRelease = 90 * time.Second
	c.MiniNode = []FloorStep{{Below: 10, Nodes: 1}, {Nodes: 2}, {Below: 5, Nodes: 3}}
	err := c.Validate()
	if err == nil {
		t.Fatal("no error")
	}
	var joined interface{ Unwrap() []error }
	if !errors.As(err, &joined) || len(joined.Unwrap()) != 7 {
		t.Errorf("want 7 joined errors, got:\n%v", err)
	}
}

func TestArrayCount(t *testing.T) {
	for _, tc := range []struct {
		expr  string
		limit int
		want  int
	}{
		{"", 100, 1}, {"7", 100, 1}, {"1-10", 100, 10}, {"[1-10]", 100, 10}, {"1-10%3", 100, 3},
		{"0-9:2", 100, 5}, {"1,3,5-9", 100, 7}, {"1-1000000", 4, 4}, {"x", 100, 1}, {"5-1", 100, 1}, {"1-10%0", 100, 1},
		// Cut by Slurm at SLURM_BITSTR_LEN (libslurm 22.05's own output):
		// more elements than it shows, so as many as could start.
		{"2-3,5,7,11,13,17,19,23,29,31,37,41,43,47,53,59,61,67,71,73,7...", 100, 100},
		{"3,5,7,11,13,17,19,23,29,31,37,41,43,47,53,59,61,67,71,73,79,...%4", 100, 4},
		{"0-5,10-30,40-60,70-90,100-120,130-150,160-180,190-210,220-24...", 500, 500},
	} {
		if got := arrayCount(tc.expr, tc.limit); got != tc.want {
			t.Errorf("arrayCount(%q, %d) = %d, want %d", tc.expr, tc.limit, got, tc.want)
		}
	}
}

func TestPendingTimeLimit(t *testing.T) {
	s := snap([]cluster.Partition{part("batch", 4*time.Hour, "n1"), part("short", 0, "n1")}, [][]cluster.Node{nodes(cluster.NodeIdle, "n1")})
	s.Partitions[1].DefaultTime = 30 * time.Minute
	d := newDecider(s, State{}, DefaultConfig(), now, true, nil)
	for _, tc := range []struct {
		j    cluster.Job
		want time.Duration
	}{
		{pend2("own", 1, "Priority", 1, time.Hour, never), time.Hour},
		{pend2("max", 1, "Priority", 1, 0, never), 4 * time.Hour},
		{inPart(pend2("def", 1, "Priority", 1, 0, never), "short"), 30 * time.Minute},
		{inPart(pend2("default partition", 1, "Priority", 1, 0, never), ""), 4 * time.Hour},
		{inPart(pend2("none", 1, "Priority", 1, 0, never), "gone"), unl},
	} {
		if got := d.timeLimit(&tc.j); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.j.ID, got, tc.want)
		}
	}
}
