package policy

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/glean-hpc/glean/sidecar/cluster"
)

// thesisCluster is the example of seed 000, 3.3.2 and 3.3.3:
//
//	T = 21                      n1-n21, one partition, no MaxTime
//	J1: N1 = 5, TL1 = 20 min,   running on n1-n5 since 1 min (RT1 = 1 min)
//	J2: N2 = 5, TL2 = 15 min    cancelled: n6-n10 idle, so I = 5
//	R = 11                      UNLIMITED thesis pilots t11-t21 on n11-n21,
//	                            t21 the newest
//	J3: N3 = 10, TL3 = 25 min   pending, top of the queue
//	J4: N4 = 6, TL4 = tl4       pending
//	MiniNode = 10               the calibration job C has 139 pending and 11
//	                            running tasks: leftTasks = 150 >= 100 (Eq. 5.1)
//	miniTime = 2 min, margin 2 min (the defaults)
//
// Pilots holds the first r of t11-t21 counting down from t21 (r = 11: all).
type thesisCluster struct {
	tl4, end1 time.Duration
	n3, n4, r int
}

func (c thesisCluster) build() (*cluster.Snapshot, State) {
	if c.tl4 == 0 {
		c.tl4 = 10 * time.Minute
	}
	if c.end1 == 0 {
		c.end1 = 19 * time.Minute
	}
	if c.n3 == 0 {
		c.n3 = 10
	}
	if c.n4 == 0 {
		c.n4 = 6
	}
	if c.r == 0 {
		c.r = 11
	}
	j1 := running("J1", at(c.end1), names("n", 1, 5)...)
	j1.TimeLimit, j1.Start = 20*time.Minute, at(c.end1-20*time.Minute)
	s := snap([]cluster.Partition{part("batch", unl, names("n", 1, 21)...)},
		[][]cluster.Node{nodes(cluster.NodeAlloc, names("n", 1, 5)...), nodes(cluster.NodeIdle, names("n", 6, 21)...)},
		j1,
		pend2("J3", 200, "Resources", c.n3, 25*time.Minute, never),
		pend2("J4", 100, "Priority", c.n4, c.tl4, never))
	var ps []Pilot
	for k := 21; k > 21-c.r; k-- {
		ps = append(ps, rpilot(fmt.Sprintf("t%d", k), "C", fmt.Sprintf("n%d", k), time.Duration(22-k)*time.Minute, never))
	}
	withPilots(s, ps...)
	return s, State{Jobs: []ElasticJob{ejob("C", Thesis, 139, 11, 20*time.Second)}, Pilots: ps}
}

func release(pilot, node, claimant string) Action {
	return Action{Kind: CancelPilot, Cause: CauseThesis, Job: "C", Pilot: pilot, Node: node, Claimant: claimant, By: now}
}

func takeAll(job string, tl time.Duration, nodes ...string) []Action {
	var out []Action
	for _, n := range nodes {
		out = append(out, sub(job, n, tl))
	}
	return out
}

func TestDecideThesis(t *testing.T) {
	tc := func(name string, c thesisCluster, mod func(*cluster.Snapshot, *State), cfg func(*Config), want []Action) decideCase {
		s, st := c.build()
		if mod != nil {
			mod(s, &st)
		}
		return decideCase{name: name, snap: s, st: st, cfg: cfg, want: want}
	}
	incomplete := func(s *cluster.Snapshot, _ *State) { s.Complete = false }
	floor := func(n int) func(*Config) { return func(c *Config) { c.MiniNode = []FloorStep{{Nodes: n}} } }

	// Case 1: 24 nodes, 20 busy for an hour, no pending job.
	case1 := func(maxTime time.Duration, tasks int) *cluster.Snapshot {
		return snap([]cluster.Partition{part("batch", maxTime, names("n", 1, 24)...)},
			[][]cluster.Node{nodes(cluster.NodeAlloc, names("n", 1, 20)...), nodes(cluster.NodeIdle, names("n", 21, 24)...)},
			running("r1", at(time.Hour), names("n", 1, 20)...))
	}
	c1 := func(tasks int) State { return State{Jobs: []ElasticJob{ejob("C", Thesis, tasks, 0, 20*time.Second)}} }

	tests := []decideCase{
		// 3.3.2: maxTime = 19 min (J1's time left frees the 5 more nodes J3
		// needs); J3: 25 >= 19; J4: 10 < 19, N4 - I = 1 <= R - MiniNode = 1:
		// release 1 node, the newest of the UNLIMITED pilots.
		tc("3.3.2 Case 2: T=21, MiniNode=10, R=11, I=5: release 1 node for J4", thesisCluster{}, nil, nil,
			[]Action{release("t21", "n21", "J4")}),
		// 3.3.3: TL4 = 25 min: no job can be backfilled; take the 5 idle
		// nodes with TL = maxTime - 2 min = 17 min.
		tc("3.3.3 Case 3: TL4 = 25 min: take 5 nodes with TL = 17 min", thesisCluster{tl4: 25 * time.Minute}, nil, nil,
			takeAll("C", 17*time.Minute, names("n", 6, 10)...)),
		{name: "Case 1: no pending job: take all idle nodes, UNLIMITED", snap: case1(unl, 100), st: c1(100),
			want: takeAll("C", unl, names("n", 21, 24)...)},
		{name: "Case 1 under a partition MaxTime", snap: case1(4*time.Hour, 100), st: c1(100),
			want: takeAll("C", 4*time.Hour, names("n", 21, 24)...)},
		{name: "Case 1 with little work: no empty pilot", snap: case1(unl, 2), st: c1(2),
			want: takeAll("C", unl, "n21", "n22")},
		{name: "Case 1 with little work, ThesisHoldEmpty: as published", snap: case1(unl, 2), st: c1(2),
			cfg: func(c *Config) { c.ThesisHoldEmpty = true }, want: takeAll("C", unl, names("n", 21, 24)...)},
		{name: "Case 1 within a budget: the UNLIMITED limit shortened to what is left, no pilot for the rest", snap: case1(unl, 100),
			st: func() State {
				st := c1(100)
				st.Jobs[0].Budgeted, st.Jobs[0].BudgetLeft = true, 3*time.Hour+90*time.Second
				return st
			}(),
			want: []Action{sub("C", "n21", 3*time.Hour+time.Minute)}},
		{name: "Case 1 with nodes held back from the job (pilots died at start there): the others", snap: case1(unl, 100),
			st:   func() State { st := c1(100); st.Jobs[0].HeldNodes = []string{"n22", "n24"}; return st }(),
			want: takeAll("C", unl, "n21", "n23")},
		{name: "Case 1 within MaxPendingPilots", snap: case1(unl, 100), st: c1(100),
			cfg: func(c *Config) { c.MaxPendingPilots = 3 }, want: takeAll("C", unl, "n21", "n22", "n23")},
		tc("3.3.2 a round later: t21 is in its grace (Leaving): its node counts as idle, J4 fits, no second release", thesisCluster{},
			func(s *cluster.Snapshot, st *State) { st.Pilots[0].Leaving = true }, nil, nil),
		tc("the floor keeps nodes: R - MiniNode = 0, so no release; take the idle ones", thesisCluster{}, nil, floor(11),
			takeAll("C", 17*time.Minute, names("n", 6, 10)...)),
		tc("below the floor (R=8 < 10): take I=8 nodes with maxTime - 2", thesisCluster{r: 8}, nil, nil,
			takeAll("C", 17*time.Minute, names("n", 6, 13)...)),
		tc("below the floor, but J_top fits now (maxTime 0): nothing to take", thesisCluster{r: 8, n3: 4}, nil, nil, nil),
		tc("J_top fits in the idle nodes: Slurm starts it, wait", thesisCluster{n3: 5}, nil, nil, nil),
		tc("J_top needs what R - MiniNode allows: give it way", thesisCluster{n3: 7}, nil, floor(9),
			[]Action{release("t21", "n21", "J3"), release("t20", "n20", "J3")}),
		tc("miniTime: a running job ends within 2 min: wait", thesisCluster{tl4: 25 * time.Minute, end1: time.Minute}, nil, nil, nil),
		tc("SLURM will backfill a pending job itself (N4 <= I): wait", thesisCluster{n4: 5}, nil, nil, nil),
		tc("release in cancel order: closest to its end first, then the newest", thesisCluster{n4: 7},
			func(s *cluster.Snapshot, st *State) {
				st.Pilots[10].End = at(10 * time.Minute) // t11
				for k := range s.Jobs {
					if s.Jobs[k].ID == "t11" {
						s.Jobs[k].End, s.Jobs[k].TimeLimit = at(10*time.Minute), time.Hour
					}
				}
			}, floor(9),
			[]Action{release("t11", "n11", "J4"), release("t21", "n21", "J4")}),
		tc("incomplete snapshot: the release still happens", thesisCluster{}, incomplete, nil,
			[]Action{release("t21", "n21", "J4")}),
		tc("incomplete snapshot: no pilot taken", thesisCluster{tl4: 25 * time.Minute}, incomplete, nil, nil),
		tc("a timeout this round: no pilot taken", thesisCluster{tl4: 25 * time.Minute},
			func(s *cluster.Snapshot, st *State) {
				q := ppilot("q", "C", "", time.Hour)
				st.Pilots = append(st.Pilots, q)
				withPilots(s, q)
			}, nil,
			[]Action{cancelFor(CauseTimeout, "C", "q", "")}),
		tc("thesis pilots do not give way by the fair rules; a fair job finds no window", thesisCluster{},
			func(_ *cluster.Snapshot, st *State) { st.Jobs = append(st.Jobs, ejob("F", Fair, 10, 0, time.Minute)) }, nil,
			[]Action{release("t21", "n21", "J4")}),
		tc("the same cluster in fair mode: J3 and J4 both start now on the pilots' nodes", thesisCluster{},
			func(_ *cluster.Snapshot, st *State) { st.Jobs[0].Mode = Fair }, nil,
			func() []Action {
				var out []Action
				for k := 21; k >= 11; k-- {
					who := "J3"
					if k <= 16 {
						who = "J4"
					}
					out = append(out, give("C", fmt.Sprintf("t%d", k), fmt.Sprintf("n%d", k), who, now))
				}
				return out
			}()),
		{
			name: "mixed modes share the idle nodes FIFO",
			snap: case1(unl, 0),
			st: State{Jobs: []ElasticJob{
				ejob("first", Scavenger, 1, 0, 10*time.Minute),
				ejob("th", Thesis, 2, 0, time.Minute),
				ejob("last", Fair, 5, 0, 0),
			}},
			want: []Action{sub("first", "n21", 10*time.Minute), sub("th", "n22", unl), sub("th", "n23", unl), sub("last", "n24", unl)},
		},
	}
	runDecide(t, tests)
}

func TestThesisMaxTime(t *testing.T) {
	j := func(left time.Duration, n int) thesisJob { return thesisJob{left, n} }
	for _, tc := range []struct {
		name      string
		nTop, idl int
		running   []thesisJob
		want      time.Duration
	}{
		{"3.3.3: required 10-5 = 5, J1 frees 5 in 19m", 10, 5, []thesisJob{j(19*time.Minute, 5), j(unl, 11)}, 19 * time.Minute},
		{"fits now", 10, 12, []thesisJob{j(19*time.Minute, 5)}, 0},
		{"needs several jobs", 10, 5, []thesisJob{j(5*time.Minute, 3), j(25*time.Minute, 2), j(time.Hour, 4)}, 25 * time.Minute},
		{"only UNLIMITED jobs free the nodes", 10, 5, []thesisJob{j(19*time.Minute, 2), j(unl, 11)}, unl},
		{"never enough nodes", 30, 5, []thesisJob{j(19*time.Minute, 5), j(unl, 11)}, unl},
	} {
		if got := thesisMaxTime(tc.nTop, tc.idl, tc.running); got != tc.want {
			t.Errorf("%s: maxTime = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestMiniNodeEq51(t *testing.T) {
	for left, want := range map[int]int{0: 2, 4: 2, 5: 4, 19: 4, 20: 4, 40: 5, 99: 7, 100: 10, 150: 10, 100000: 10} {
		if got := MiniNode(Eq51(), left); got != want {
			t.Errorf("MiniNode(Eq51, %d) = %d, want %d", left, got, want)
		}
	}
	if got := MiniNode(nil, 1000); got != 0 {
		t.Errorf("empty table: %d", got)
	}
}

func move(job, pilot, node, to string) Action {
	return Action{Kind: MovePilot, Cause: CausePool, Job: job, Pilot: pilot, Node: node, To: to}
}

// TestDecideThesisPool: the thesis-mode jobs of one owner are one pool,
// served first come, first served (seed 000, 5.3.2: "Job 46 waits for Job
// 45 to finish"); a pilot whose job has no task left for it moves to the
// pool's next job with work, never to another owner's.
func TestDecideThesisPool(t *testing.T) {
	// 24 nodes, n1-n20 busy for an hour, no pending job (Case 1: take the
	// idle nodes); pilots a1 (busy, task ends in 3m), a2 (idle), a3 (busy,
	// ends in 1m) of job A on n21-n23; n24 idle.
	base := func() *cluster.Snapshot {
		return snap([]cluster.Partition{part("batch", unl, names("n", 1, 24)...)},
			[][]cluster.Node{nodes(cluster.NodeAlloc, names("n", 1, 20)...), nodes(cluster.NodeIdle, names("n", 21, 24)...)},
			running("r1", at(time.Hour), names("n", 1, 20)...))
	}
	a1 := taskEnds(rpilot("a1", "A", "n21", time.Hour, never), 3*time.Minute)
	a2 := idlePilot(rpilot("a2", "A", "n22", time.Hour, never))
	a3 := taskEnds(rpilot("a3", "A", "n23", time.Hour, never), time.Minute)
	owned := func(j ElasticJob, owner string) ElasticJob { j.Owner = owner; return j }
	pilots := func(ps ...Pilot) []Pilot { return ps }
	tests := []decideCase{
		{
			name: "A has no task left: its idle pilot and, after their tasks, its busy ones serve B; n24 for B's rest",
			snap: withPilots(base(), a1, a2, a3),
			st: State{Jobs: []ElasticJob{owned(ejob("A", Thesis, 0, 2, 8*time.Minute), "u1"), owned(ejob("B", Thesis, 5, 0, 8*time.Minute), "u1")},
				Pilots: pilots(a1, a2, a3)},
			want: []Action{move("A", "a1", "n21", "B"), move("A", "a2", "n22", "B"), move("A", "a3", "n23", "B"), sub("B", "n24", unl)},
		},
		{
			name: "A has one task left: the pilot whose task ends first takes it, the others move (idle first)",
			snap: withPilots(base(), a1, a3, a2),
			st: State{Jobs: []ElasticJob{owned(ejob("A", Thesis, 1, 2, 8*time.Minute), "u1"), owned(ejob("B", Thesis, 1, 0, 8*time.Minute), "u1")},
				Pilots: pilots(a1, a3, a2)},
			// A keeps a2 (idle) for its last task; B's task goes to the first
			// busy extra in task-end order, a3. Busy pilots do not count
			// against a job's want (as for any job): n24 is taken for B too.
			want: []Action{move("A", "a3", "n23", "B"), sub("B", "n24", unl)},
		},
		{
			name: "another owner's job: no move; the idle pilot without work leaves",
			snap: withPilots(base(), a1, a2, a3),
			st: State{Jobs: []ElasticJob{owned(ejob("A", Thesis, 0, 2, 8*time.Minute), "u1"), owned(ejob("B", Thesis, 5, 0, 8*time.Minute), "u2")},
				Pilots: pilots(a1, a2, a3)},
			want: []Action{cancelFor(CauseNoWork, "A", "a2", "n22"), sub("B", "n24", unl)},
		},
		{
			name: "no owner: each job is a pool of its own",
			snap: withPilots(base(), a1, a2, a3),
			st: State{Jobs: []ElasticJob{ejob("A", Thesis, 0, 2, 8*time.Minute), ejob("B", Thesis, 5, 0, 8*time.Minute)},
				Pilots: pilots(a1, a2, a3)},
			want: []Action{cancelFor(CauseNoWork, "A", "a2", "n22"), sub("B", "n24", unl)},
		},
		{
			name: "a fair job of the same owner is not in the pool",
			snap: withPilots(base(), a1, a2, a3),
			st: State{Jobs: []ElasticJob{owned(ejob("A", Thesis, 0, 2, 8*time.Minute), "u1"), owned(ejob("F", Fair, 5, 0, 8*time.Minute), "u1")},
				Pilots: pilots(a1, a2, a3)},
			want: []Action{cancelFor(CauseNoWork, "A", "a2", "n22"), sub("F", "n24", 40*time.Minute)},
		},
		{
			name: "FIFO: a pilot already moved covers its new job's task, the others go to the next job; new pilots FIFO",
			snap: withPilots(base(), a1, a2, a3),
			st: func() State {
				moved := a1
				moved.Job = "B" // moved in an earlier round, still on A's task
				return State{Jobs: []ElasticJob{owned(ejob("A", Thesis, 0, 1, 8*time.Minute), "u1"), owned(ejob("B", Thesis, 1, 1, 8*time.Minute), "u1"),
					owned(ejob("C", Thesis, 3, 0, 8*time.Minute), "u1")}, Pilots: pilots(moved, a2, a3)}
			}(),
			want: []Action{move("A", "a2", "n22", "C"), move("A", "a3", "n23", "C"), sub("B", "n24", unl)},
		},
	}
	runDecide(t, tests)

	// 3.3.2 with the pool: C has no task left and D (same owner) 139; C's
	// pilots move to D, but Algorithm 1 still releases t21 for J4: the
	// release names C (where the daemon has it), and t21 does not move.
	s, st := thesisCluster{}.build()
	st.Jobs[0] = ejob("C", Thesis, 0, 11, 20*time.Second)
	st.Jobs[0].Owner = "u1"
	d := ejob("D", Thesis, 139, 0, 20*time.Second)
	d.Owner = "u1"
	st.Jobs = append(st.Jobs, d)
	want := []Action{release("t21", "n21", "J4")}
	for k := 20; k >= 11; k-- { // in the pilots' order
		want = append(want, move("C", fmt.Sprintf("t%d", k), fmt.Sprintf("n%d", k), "D"))
	}
	runDecide(t, []decideCase{{name: "3.3.2 in a pool: release t21 for J4, move the others", snap: s, st: st, want: want}})
}

// TestDecideFIFO: an earlier elastic job's tasks that no pilot takes get
// the nodes of a later job's pilots, as a pending regular job would: those
// that lose no work first (they retire), then those that lose least
// (cancelled).
func TestDecideFIFO(t *testing.T) {
	l := []Pilot{
		taskEnds(rpilot("l1", "late", "n1", time.Hour, never), 4*time.Minute),
		taskEnds(rpilot("l2", "late", "n2", time.Hour, never), 30*time.Second),
		taskEnds(rpilot("l3", "late", "n3", time.Hour, never), 6*time.Minute),
		taskEnds(rpilot("l4", "late", "n4", time.Hour, never), 8*time.Minute),
	}
	s := func(ps []Pilot) *cluster.Snapshot {
		return withPilots(snap([]cluster.Partition{part("batch", unl, names("n", 1, 4)...)},
			[][]cluster.Node{nodes(cluster.NodeIdle, names("n", 1, 4)...)}), ps...)
	}
	jobs := func(owner string, lateMode Mode) []ElasticJob {
		e, lt := ejob("early", Scavenger, 2, 0, 5*time.Minute), ejob("late", lateMode, 100, 4, 10*time.Minute)
		e.Owner, lt.Owner = owner, owner
		return []ElasticJob{e, lt}
	}
	giveTo := func(k ActionKind, pilot, node string) Action {
		return Action{Kind: k, Cause: CauseGiveWay, Job: "late", Pilot: pilot, Node: node, Claimant: "early", By: now}
	}
	retiring := slices.Clone(l)
	retiring[2].Retiring = true
	runDecide(t, []decideCase{
		// l2's task ends within Grace: it retires; of the others l4's task
		// started last (10m tasks ending in 8m: 2m in): cancelled.
		{name: "later job's pilots give the earlier job's 2 tasks their nodes: lossless first, then least lost",
			snap: s(l), st: State{Jobs: jobs("", Scavenger), Pilots: l},
			want: []Action{giveTo(RetirePilot, "l2", "n2"), giveTo(CancelPilot, "l4", "n4")}},
		{name: "the same owner changes nothing",
			snap: s(l), st: State{Jobs: jobs("u", Scavenger), Pilots: l},
			want: []Action{giveTo(RetirePilot, "l2", "n2"), giveTo(CancelPilot, "l4", "n4")}},
		{name: "a later pilot already retiring counts",
			snap: s(retiring), st: State{Jobs: jobs("", Scavenger), Pilots: retiring},
			want: []Action{giveTo(RetirePilot, "l2", "n2")}},
		{name: "thesis pilots follow Algorithm 1 only",
			snap: s(l), st: State{Jobs: jobs("", Thesis), Pilots: l}},
		// gleand holds back the earlier job's pilots (they died at start):
		// its tasks claim nothing, and it gets no pilot of its own.
		{name: "an earlier job whose pilots are held back claims no node",
			snap: s(l), st: State{Jobs: held(jobs("", Scavenger)), Pilots: l}},
		{name: "a job whose pilots are held back gets none on idle nodes",
			snap: s(nil), st: State{Jobs: held(jobs("", Scavenger)[:1])}},
		{name: "no pilot on a node gleand holds back",
			snap: s(nil), st: State{Jobs: heldOn(jobs("", Scavenger)[:1], "n1", "nX")},
			want: []Action{{Kind: SubmitPilot, Cause: CauseHarvest, Job: "early", Node: "n2", TimeLimit: 5 * time.Minute},
				{Kind: SubmitPilot, Cause: CauseHarvest, Job: "early", Node: "n3", TimeLimit: 5 * time.Minute}}},
		{name: "(without the hold: it does)",
			snap: s(nil), st: State{Jobs: jobs("", Scavenger)[:1]},
			want: []Action{{Kind: SubmitPilot, Cause: CauseHarvest, Job: "early", Node: "n1", TimeLimit: 5 * time.Minute},
				{Kind: SubmitPilot, Cause: CauseHarvest, Job: "early", Node: "n2", TimeLimit: 5 * time.Minute}}},
	})
}

// heldOn is jobs with nodes held back from the first one.
func heldOn(jobs []ElasticJob, nodes ...string) []ElasticJob {
	jobs[0].HeldNodes = nodes
	return jobs
}

// held is jobs with the first one's pilots held back.
func held(jobs []ElasticJob) []ElasticJob {
	jobs[0].HoldPilots = true
	return jobs
}
