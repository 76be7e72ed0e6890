package sim

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/glean-hpc/glean/sidecar/cluster"
	"github.com/glean-hpc/glean/sidecar/policy"
	"github.com/glean-hpc/glean/sidecar/workload"
)

// ElasticMode is how calibration (elastic) jobs are run.
type ElasticMode int

const (
	// SlurmOnly runs calibration jobs as the thesis did: rigid jobs of
	// Nodes x RealTime, no pilots.
	SlurmOnly ElasticMode = iota
	// FairMode queues the rigid job exactly as SlurmOnly (the base) and
	// adds pilots under policy.Fair; the base works on the same task pool
	// and ends when the pool is empty.
	FairMode
	// ScavengerMode has no base job: only pilots (policy.Scavenger).
	ScavengerMode
	// ThesisMode has no base job: pilots under policy.Thesis.
	ThesisMode
)

// ElasticModes are all modes, SlurmOnly first.
var ElasticModes = []ElasticMode{SlurmOnly, FairMode, ScavengerMode, ThesisMode}

func (m ElasticMode) String() string {
	switch m {
	case SlurmOnly:
		return "slurm"
	case FairMode:
		return "fair"
	case ScavengerMode:
		return "scavenger"
	case ThesisMode:
		return "thesis"
	}
	return fmt.Sprintf("ElasticMode(%d)", int(m))
}

// ParseElasticMode parses slurm, fair, scavenger or thesis.
func ParseElasticMode(s string) (ElasticMode, error) {
	for _, m := range ElasticModes {
		if strings.EqualFold(s, m.String()) {
			return m, nil
		}
	}
	return 0, fmt.Errorf("sim: unknown mode %q (want slurm, fair, scavenger or thesis)", s)
}

// DefaultTasks is the thesis's sub-dataset count: tasks per calibration job.
const DefaultTasks = 150

// ElasticConfig is one elastic simulation's setup.
type ElasticConfig struct {
	Mode ElasticMode
	// Tasks splits each calibration job's work (Nodes x Run) into this many
	// equal tasks; 0 is DefaultTasks. TaskTime, if set, fixes the task
	// length instead (the last task takes the remainder).
	Tasks    int
	TaskTime time.Duration
	// Policy is what the daemon would run; its zero value is
	// policy.DefaultConfig() with the pilot partition.
	Policy *policy.Config
	// Sim is the machine and scheduler. Policy must be SlurmLike: the
	// policy reads its backfill plan, and rounds come every bf_interval.
	Sim Config
	// Backlog, if positive, adds an unlimited elastic backlog: one
	// scavenger job of tasks of this length without end, submitted at
	// time 0 and last in FIFO order (it gets what the calibration jobs
	// leave), in every mode, SlurmOnly included. No task of it starts at
	// or after BacklogUntil (0: the thesis's window, the last submission
	// + ThesisTail); tasks running then complete.
	Backlog      time.Duration
	BacklogUntil time.Duration
	// EveryRound runs the policy at every scheduling cycle. By default a
	// round is skipped when nothing a snapshot or the policy's state
	// shows has changed since a round that did nothing, and the policy
	// said that its decision holds until after this round
	// (policy.DecideHold): it would do nothing again (checked by
	// TestSkippedRoundsChangeNothing).
	EveryRound bool

	// verifySkips (tests) runs the policy in skipped rounds too and
	// counts in ElasticResult.skipErrs those in which it would have acted.
	verifySkips bool
	// checkSnapshot (tests) sees every snapshot the policy is given.
	checkSnapshot func(*driver, *State, *cluster.Snapshot)
}

// TaskRun is one attempt at one task.
type TaskRun struct {
	Job        int // calibration job ID; -1: the backlog
	Task       int
	Node       int
	Start, End time.Duration
	Pilot      bool // run by a pilot (else by the base job)
	Completed  bool // false: killed (its node time is waste)
	Count      int  // tasks in the record: 1, or more for the backlog's
}

// PilotRun is one pilot.
type PilotRun struct {
	ID         int
	Job        int // calibration job ID; -1: the backlog
	Node       int
	Submit     time.Duration
	Started    bool
	Start, End time.Duration // End: when it left (or was dropped while pending)
	Limit      time.Duration
	Tasks      int    // tasks it completed
	EndCause   string // how it ended
}

// CalRun is what happened to one calibration job.
type CalRun struct {
	ID      int
	Submit  time.Duration
	Finish  time.Duration // its last task's completion (SlurmOnly: the job's end)
	Work    time.Duration // node-time of work: Nodes x Run
	Tasks   int
	Done    bool
	BaseRan bool // the rigid (base) job started
	// BaseStart and BaseEnd are the base job's run (SlurmOnly: the job).
	BaseStart, BaseEnd time.Duration
	BaseNodes          int
	Pilots             int // pilots that started
}

// Interval is [Start, End).
type Interval struct{ Start, End time.Duration }

// BacklogRun is what the unlimited backlog got.
type BacklogRun struct {
	TaskTime time.Duration `json:"task_time_ns"`
	Until    time.Duration `json:"until_ns"` // no task started at or after it
	Tasks    int           `json:"tasks"`    // tasks completed
	Pilots   int           `json:"pilots"`   // pilots that started
	// WorkNodeSeconds is the node time of its completed tasks,
	// WasteNodeSeconds of its killed attempts (float64: a time.Duration
	// overflows at 2.56 million node-hours).
	WorkNodeSeconds  float64 `json:"work_node_seconds"`
	WasteNodeSeconds float64 `json:"waste_node_seconds"`
}

// backlogID is the backlog's job ID in TaskRun and PilotRun.
const backlogID = -1

// backlogSubmit is the backlog's Submit for the policy: present from time
// 0 but last in FIFO order, it gets what the calibration jobs leave.
var backlogSubmit = simEpoch.Add(math.MaxInt64)

// ElasticResult is an elastic simulation's outcome.
type ElasticResult struct {
	Mode   ElasticMode
	Nodes  int
	Sched  *Result // the engine's jobs (regular and base jobs), in workload order
	Kinds  []workload.Kind
	Cal    []CalRun // in workload order of the calibration jobs
	Pilots []PilotRun
	// Tasks are the task attempts; a backlog's consecutive completed
	// tasks on one pilot are one record (Count tasks).
	Tasks []TaskRun
	// Waiting are the times during which some calibration job had tasks
	// that no worker held (SlurmOnly: the job was pending).
	Waiting []Interval
	// LastSubmit is the last submission of any job.
	LastSubmit time.Duration
	Rounds     int
	Scheduler  string // what drove the regular jobs, e.g. "slurm-like, bf_interval 30s"
	Cycle      time.Duration
	KillWait   time.Duration
	Policy     policy.Config
	TasksPer   int
	// Backlog is the unlimited backlog's outcome, nil without one.
	Backlog *BacklogRun
	// Skipped counts rounds skipped over unchanged states.
	Skipped int

	skipErrs int // ElasticConfig.verifySkips: skipped rounds that would have acted
}

// simEpoch is the wall-clock time of the simulation's start in snapshots.
var simEpoch = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

// RunElastic simulates w with its calibration jobs run as cfg.Mode says.
func RunElastic(w *workload.Workload, cfg ElasticConfig) (*ElasticResult, error) {
	if cfg.Tasks == 0 {
		cfg.Tasks = DefaultTasks
	}
	if cfg.Tasks < 0 || cfg.TaskTime < 0 {
		return nil, fmt.Errorf("sim: %d tasks of %v", cfg.Tasks, cfg.TaskTime)
	}
	if cfg.Backlog < 0 || cfg.BacklogUntil < 0 {
		return nil, fmt.Errorf("sim: backlog of %v tasks until %v", cfg.Backlog, cfg.BacklogUntil)
	}
	if err := CheckTasks(w, cfg); err != nil {
		return nil, err
	}
	pcfg := policy.DefaultConfig()
	pcfg.PilotPartition = PilotPartition
	if cfg.Policy != nil {
		pcfg = *cfg.Policy
	}
	if err := pcfg.Validate(); err != nil {
		return nil, err
	}
	scfg := cfg.Sim
	if scfg.Policy != SlurmLike && (cfg.Mode != SlurmOnly || cfg.Backlog > 0) {
		return nil, fmt.Errorf("sim: glean's pilots need the slurm-like scheduler, not %v (the others run SLURM-only without a backlog)", scfg.Policy)
	}
	sp, err := scfg.Slurm.resolve()
	if err != nil {
		return nil, err
	}
	res := &ElasticResult{Mode: cfg.Mode, Policy: pcfg, TasksPer: cfg.Tasks, Cycle: sp.BFInterval, KillWait: sp.KillWait,
		Scheduler: fmt.Sprintf("slurm-like (main scheduler + backfill), rounds every bf_interval %v", sp.BFInterval)}
	if scfg.Policy != SlurmLike {
		res.Scheduler = fmt.Sprintf("%v (no pilots; jobs killed at their limits)", scfg.Policy)
		res.KillWait = 0
	}

	// The engine's workload: SlurmOnly and Fair keep the calibration jobs
	// (rigid, or the base); the others drop them.
	ew := *w
	switch cfg.Mode {
	case ScavengerMode, ThesisMode:
		// No job in Slurm: a marker in its place, a zero-length job of the
		// whole machine that the driver withdraws at once, only makes the
		// engine pass at the submission (the engine stops when nothing
		// is due). It arrives last at its instant and never fits beside
		// anything, so it changes no start.
		ew.Jobs = slices.Clone(w.Jobs)
		size := scfg.Nodes
		if size == 0 {
			size = w.Nodes
		}
		for i := range ew.Jobs {
			j := &ew.Jobs[i]
			if j.Kind == workload.Calibration {
				*j = workload.Job{ID: markerBase + i, Submit: j.Submit, Nodes: size, Limit: time.Minute, Kind: workload.Calibration, Line: j.Line}
			}
		}
	case FairMode:
		// The base holds its nodes until the driver ends it (the pool is
		// empty) or its limit kills it.
		ew.Jobs = slices.Clone(w.Jobs)
		for i := range ew.Jobs {
			j := &ew.Jobs[i]
			if j.Kind == workload.Calibration {
				j.Run = baseHold
				if j.Limit > 0 && j.Limit != workload.Unlimited {
					j.Run = j.Limit
				}
			}
		}
	}
	for _, j := range w.Jobs {
		res.LastSubmit = max(res.LastSubmit, j.Submit)
	}
	d := &driver{cfg: cfg, pcfg: pcfg, cycle: sp.BFInterval, res: res, byBase: map[*job]*ejob{},
		pilotTask: math.MaxInt64, pilotEnd: math.MaxInt64} // no pilots yet
	nextID := 0
	for _, j := range w.Jobs {
		nextID = max(nextID, j.ID)
	}
	d.nextPilot = max(nextID+1, 1_000_000, markerBase+len(w.Jobs)+1)
	mode := policy.Fair
	switch cfg.Mode {
	case ScavengerMode:
		mode = policy.Scavenger
	case ThesisMode:
		mode = policy.Thesis
	}
	for i := range w.Jobs {
		j := &w.Jobs[i]
		if j.Kind != workload.Calibration {
			continue
		}
		ej := &ejob{id: j.ID, key: "e" + strconv.Itoa(j.ID), owner: calOwner, mode: mode, submit: j.Submit, nodes: j.Nodes, work: time.Duration(j.Nodes) * j.Run}
		ej.lens = splitWork(ej.work, cfg.Tasks, cfg.TaskTime)
		for t := len(ej.lens) - 1; t >= 0; t-- {
			ej.pool = append(ej.pool, t) // taken from the end: task 0 first
		}
		ej.left = len(ej.lens)
		d.jobs = append(d.jobs, ej)
	}
	if cfg.Mode != SlurmOnly {
		d.driven = append(d.driven, d.jobs...)
	}
	if cfg.Backlog > 0 {
		until := cfg.BacklogUntil
		if until == 0 {
			until = res.LastSubmit + ThesisTail
		}
		d.backlog = &ejob{id: backlogID, key: "backlog", owner: "backlog", mode: policy.Scavenger, infinite: true, until: until, taskLen: cfg.Backlog}
		d.driven = append(d.driven, d.backlog)
		res.Backlog = &BacklogRun{TaskTime: cfg.Backlog, Until: until}
	}
	scfg.OnPass = nil
	if len(d.driven) > 0 {
		scfg.OnPass = d.onPass
	}
	r, err := Run(&ew, scfg)
	if err != nil {
		return nil, err
	}
	res.Sched = r
	res.Nodes = scfg.Nodes
	if res.Nodes == 0 {
		res.Nodes = w.Nodes
	}
	res.Kinds = make([]workload.Kind, len(ew.Jobs))
	for i := range ew.Jobs {
		res.Kinds[i] = ew.Jobs[i].Kind
	}
	if cfg.Mode == SlurmOnly {
		d.slurmOnly(r)
	}
	d.finish()
	return res, nil
}

// MaxTasks bounds the calibration jobs' tasks in one run, all jobs
// together: each costs the simulator about 600 bytes per mode (thesis list
// 2 in four modes with 1.2 million tasks: 725 MB, 2 s), and a tiny task
// time would split a job into billions and exhaust memory.
const MaxTasks = 1_000_000

// MaxBacklogTasks bounds the backlog's tasks in one run, counted as its
// pilots could run them at most (every node, the whole window): each is an
// event (KTH-SP2 with 10-minute tasks, at most 4.9 million: 1.9 s), and a
// tiny task length would run for days.
const MaxBacklogTasks = 50_000_000

// TooManyTasks is CheckTasks's refusal, with what would fit.
type TooManyTasks struct {
	Backlog bool    // the backlog's tasks, not the calibration jobs'
	Count   float64 // tasks (the backlog: at most this many)
	Max     int64
	Jobs    int // calibration jobs
	// MinTaskTime is the shortest task length within Max, whole seconds;
	// MaxPerJob (calibration jobs split into equal tasks) the largest
	// number of tasks per job within Max.
	MinTaskTime time.Duration
	MaxPerJob   int
}

func (e *TooManyTasks) Error() string {
	if e.Backlog {
		return fmt.Sprintf("sim: the backlog could run %.3g tasks, more than %d (tasks of at least %v fit)", e.Count, e.Max, e.MinTaskTime)
	}
	return fmt.Sprintf("sim: %.0f tasks in %d calibration jobs, more than %d", e.Count, e.Jobs, e.Max)
}

// CheckTasks refuses, before anything is allocated, a run whose
// calibration jobs split into more than MaxTasks tasks, or whose backlog
// could run more than MaxBacklogTasks (a *TooManyTasks). RunElastic calls it
// first.
func CheckTasks(w *workload.Workload, cfg ElasticConfig) error {
	n := cfg.Tasks
	if n == 0 {
		n = DefaultTasks
	}
	var jobs int
	var tasks, work float64 // work in node-seconds
	var last time.Duration
	for _, j := range w.Jobs {
		last = max(last, j.Submit)
		if j.Kind != workload.Calibration {
			continue
		}
		jobs++
		wk := float64(j.Nodes) * j.Run.Seconds()
		work += wk
		if cfg.TaskTime > 0 {
			tasks += math.Ceil(wk / cfg.TaskTime.Seconds())
		} else if wk > 0 {
			tasks += float64(n)
		}
	}
	if tasks > MaxTasks {
		return &TooManyTasks{Count: tasks, Max: MaxTasks, Jobs: jobs, MaxPerJob: MaxTasks / jobs,
			MinTaskTime: time.Duration(math.Ceil(work/MaxTasks)) * time.Second}
	}
	if cfg.Backlog > 0 {
		nodes := cfg.Sim.Nodes
		if nodes == 0 {
			nodes = w.Nodes
		}
		until := cfg.BacklogUntil
		if until == 0 {
			until = last + ThesisTail
		}
		room := float64(nodes) * until.Seconds()
		if b := room / cfg.Backlog.Seconds(); b > MaxBacklogTasks {
			return &TooManyTasks{Backlog: true, Count: b, Max: MaxBacklogTasks,
				MinTaskTime: time.Duration(math.Ceil(room/MaxBacklogTasks)) * time.Second}
		}
	}
	return nil
}

// splitWork splits work into n equal tasks (the first work%n get one
// nanosecond more), or into tasks of taskTime and a remainder.
func splitWork(work time.Duration, n int, taskTime time.Duration) []time.Duration {
	var lens []time.Duration
	if taskTime > 0 {
		for left := work; left > 0; left -= taskTime {
			lens = append(lens, min(left, taskTime))
		}
		return lens
	}
	if work <= 0 {
		return nil
	}
	q, r := work/time.Duration(n), int(work%time.Duration(n))
	for i := range n {
		l := q
		if i < r {
			l++
		}
		lens = append(lens, l)
	}
	return lens
}

// calOwner owns every calibration job: the thesis's one user (LOFAR), so
// that its thesis-mode jobs are one pool (policy.ElasticJob.Owner).
const calOwner = "calibration"

// backlogPending is the pending task count the backlog shows the policy:
// more than any pilot count, so that its work never caps a pilot's size
// in a window shorter than 10^6 tasks.
const backlogPending = 1 << 20

// ejob is the driver's record of one calibration job or the backlog.
type ejob struct {
	id      int
	key     string // the policy's ID
	owner   string // the policy's Owner: the calibration jobs are one user's
	mode    policy.Mode
	submit  time.Duration
	nodes   int
	work    time.Duration
	lens    []time.Duration
	pool    []int // tasks no worker holds
	left    int   // tasks not completed
	running int   // tasks held
	done    bool
	// onPilots counts the pilots running its tasks (onPass's scratch).
	onPilots int
	finish   time.Duration

	base          *job     // the engine's rigid job (Fair, SlurmOnly)
	baseIDs       []string // the policy's BaseJobIDs, once base is set
	baseWorkers   []*worker
	baseStarted   bool
	baseEnded     bool
	baseCancelled bool
	pilots        int

	waiting      bool
	waitingSince time.Duration

	// The unlimited backlog: tasks of taskLen, numbered from 0, none
	// started at or after until.
	infinite bool
	until    time.Duration
	taskLen  time.Duration
	nextTask int
}

// canShrink reports whether ej's base runs on with no task left to hand
// out: it may give nodes back (settle).
func (ej *ejob) canShrink(now time.Duration) bool {
	return ej.baseStarted && !ej.baseEnded && ej.base.end > now && len(ej.pool) == 0
}

// pendingTasks is what the policy is told of ej's pending tasks.
func (ej *ejob) pendingTasks(now time.Duration) int {
	if ej.infinite {
		if now < ej.until {
			return backlogPending
		}
		return 0
	}
	return len(ej.pool)
}

// worker is one node working on one calibration job's tasks.
type worker struct {
	ej         *ejob
	node       int
	task       int // -1: none
	tStart     time.Duration
	tEnd       time.Duration
	pilot      *pilot
	deadline   time.Duration // a task must end by it
	noMoreWork bool          // retired or cancelled: take no more tasks
	released   bool          // a base worker whose node the base gave back
	rec        *TaskRun      // the backlog: its last record, or nil
}

type pilotState int

const (
	pPending pilotState = iota
	pRunning
	pGone
)

type pilot struct {
	pilotCore
	// Its engine job and that job's snapshot line, kept here (one
	// allocation per pilot): written whole when it starts, and so not
	// reset with pilotCore when a pilot is used again.
	job   job
	line  jobLine
	alloc [1]span
}

// pilotCore is what a pilot is given at its submission.
type pilotCore struct {
	// First, together (a few cache lines), what the loops over the
	// pilots in every pass (catchUp, settle) and round (signature,
	// state) read.
	state    pilotState
	eng      *job // &job once it runs
	w        worker
	retiring bool
	leaving  bool // cancelled: ends at eng.end
	id       int
	ej       *ejob
	next     *ejob // moved (policy.MovePilot): serves it once its task ends
	// What its entry in the last policy.State written from it shows
	// (state).
	shown pilotView

	sid       string // id as the policy knows it
	node      int    // -1: unpinned
	submitted time.Duration
	limit     time.Duration
	tasks     int // tasks it completed (its record's, once it ends)
	cause     string
	run       *PilotRun // its record in runs, from its submission on
	// The policy's instants of submitted, eng.start and eng.estEnd (which
	// do not change), and of w.tEnd, kept while it stays the same (state).
	subAt, startAt, endAt time.Time
	taskEndT              instant
}

// pilotView is what a pilot's entry in the policy's state shows that may
// change: the rest (its ID, submission, node, start and end) is fixed
// once it runs, or by its ID while it waits.
type pilotView struct {
	id                      int
	state                   pilotState
	serves                  *ejob
	retiring, leaving, busy bool
	taskEnd                 time.Duration
}

func (p *pilot) view() pilotView {
	v := pilotView{id: p.id, state: p.state, serves: p.ej, retiring: p.retiring, leaving: p.leaving}
	if p.next != nil {
		v.serves = p.next
	}
	if p.state == pRunning && p.w.task >= 0 {
		v.busy, v.taskEnd = true, p.w.tEnd
	}
	return v
}

// instant is simEpoch.Add(d) for the last d asked.
type instant struct {
	d  time.Duration
	t  time.Time
	ok bool
}

func (m *instant) at(d time.Duration) time.Time {
	if !m.ok || m.d != d {
		m.d, m.t, m.ok = d, simEpoch.Add(d), true
	}
	return m.t
}

type driver struct {
	cfg       ElasticConfig
	pcfg      policy.Config
	cycle     time.Duration
	res       *ElasticResult
	jobs      []*ejob // the calibration jobs
	backlog   *ejob
	driven    []*ejob // what the policy sees: the jobs (not in SlurmOnly), then the backlog
	byBase    map[*job]*ejob
	pilots    []*pilot // not gone
	pending   int      // of those, pending
	nextPilot int
	nextRound time.Duration
	misses    int
	started   bool

	// Pilots that went are used again for new ones (a pilot is a
	// kilobyte, KTH-SP2 has 160,000): gone since the last snapshot, free
	// once a snapshot without them was taken (the cached snapshot knows
	// the lines of the jobs that ran in the last one).
	gone, free []*pilot
	// mem holds the pilots side by side: allocated one by one, each
	// would start at a multiple of 1024 bytes (its size class), and
	// their fields that the driver's loops read would share a few sets
	// of the L1 cache (measured: 2.5 times as many misses in catchUp).
	mem blocks[pilot]

	// What settle found: the earliest task end (of a pilot's: pilotTask)
	// and running pilot's end, when something the driver follows comes
	// due, whether to wake the engine at all; and the engine's version it
	// saw (onPass).
	taskEnd, pilotTask, pilotEnd, due time.Duration
	outstanding                       bool
	seen                              uint64
	// moved: a pilot started, ended, was acted on or was left without a
	// task since pilotTask and pilotEnd were noted (settle, catchUp).
	moved bool

	// Round skipping (skip) compares with the last round the policy ran:
	// its signature, busy pilots' task ends, engine version and misses,
	// action count, and how long its decision holds. sigDirty: tasks or
	// pilots changed since, so the signature must be compared; sigTurn:
	// when the clock next changes it (an arrival, the backlog's end).
	sig, sigNow []int64
	te, teNow   []int64
	sigVersion  uint64
	sigMisses   int
	sigDirty    bool
	sigTurn     time.Duration
	lastActs    int
	sigOK       bool
	anyGone     bool // some pilot in pilots is pGone
	hold        policy.Hold

	tasks blocks[TaskRun]  // ElasticResult.Tasks
	runs  blocks[PilotRun] // ElasticResult.Pilots: each pilot's from its submission, in ID order

	snapCache snapCache
	stJobs    []policy.ElasticJob
	stPilots  []policy.Pilot
	stFor     []*pilot // the pilots whose entries stPilots has
}

// markerBase is the first job ID of the scavenger and thesis modes'
// submission markers.
const markerBase = 1 << 40

// baseHold is how long a base job without a limit holds its nodes at most.
const baseHold = 365 * 24 * time.Hour

// bindJobs finds the engine jobs of arrived calibration jobs (their bases).
func (d *driver) bindJobs(now time.Duration, s *State) {
	if d.cfg.Mode != FairMode {
		return
	}
	need := false
	for _, ej := range d.jobs {
		need = need || ej.base == nil && ej.submit <= now
	}
	if !need {
		return
	}
	bind := func(j *job) {
		if j.src == nil || j.src.Kind != workload.Calibration {
			return
		}
		for _, ej := range d.jobs {
			if ej.id == j.id && ej.base == nil && ej.submit == j.submit {
				ej.base = j
				d.byBase[j] = ej
			}
		}
	}
	for _, j := range s.queue {
		bind(j)
	}
	for _, j := range s.running {
		bind(j)
	}
}

// onPass is the driver: it runs after every scheduling pass.
func (d *driver) onPass(now time.Duration, s *State) {
	// Most passes come with nothing due: the engine did not change and no
	// holder, task or arrival the driver follows came due since it last
	// looked (settle). Such a pass would find nothing to do before and
	// after the round, unless the round changed something.
	still := s.version == d.seen && now < d.due
	if !still {
		d.catchUp(now, s)
	}
	changed := false
	if now >= d.nextRound {
		changed = d.round(now, s)
		d.nextRound = floorTo(now, d.cycle) + d.cycle
	}
	if !still || changed {
		d.settle(now, s)
	}
	d.seen = s.version
	if d.outstanding {
		s.wake(min(d.nextRound, d.taskEnd))
	}
}

// catchUp ends the holders that ended, completes the tasks that ended and
// starts the next ones, and sets the bases that started to work.
func (d *driver) catchUp(now time.Duration, s *State) {
	d.bindJobs(now, s)
	if d.cfg.Mode == ScavengerMode || d.cfg.Mode == ThesisMode {
		s.queue = slices.DeleteFunc(s.queue, func(j *job) bool { return j.id >= markerBase })
	}
	// Holders that ended (pilots at their end, bases at their end or limit).
	for _, ej := range d.jobs {
		if ej.baseStarted && !ej.baseEnded && ej.base.end <= now {
			ej.baseEnded = true
			for _, w := range ej.baseWorkers {
				d.stopWorker(w, ej.base.end)
			}
		}
	}
	if now >= d.pilotEnd { // else none ended (settle)
		for _, p := range d.pilots {
			if p.state == pRunning && p.eng.end <= now {
				d.pilotGone(p, p.eng.end)
			}
		}
	}
	if d.anyGone {
		d.pilots = slices.DeleteFunc(d.pilots, func(p *pilot) bool {
			if p.state == pGone {
				d.gone = append(d.gone, p)
				return true
			}
			return false
		})
		d.anyGone = false
	}

	// Tasks that completed now, and the next ones.
	for _, ej := range d.jobs {
		if ej.baseStarted && !ej.baseEnded {
			for _, w := range ej.baseWorkers {
				d.advance(w, now)
				if w.task < 0 && !w.released {
					d.pull(w, now) // a task a pilot handed back
				}
			}
		}
	}
	if now >= d.taskEnd { // else no task ended
		// This walk notes the pilots' ends for settle too, which walks
		// them again only if one is left without a task or the round
		// changes them.
		end, task, idle := time.Duration(math.MaxInt64), time.Duration(math.MaxInt64), false
		for _, p := range d.pilots {
			if p.state != pRunning {
				continue
			}
			if p.w.task >= 0 && p.w.tEnd <= now {
				d.advance(&p.w, now)
			}
			end = min(end, p.eng.end)
			if p.w.task >= 0 {
				task = min(task, p.w.tEnd)
			} else {
				idle = true
			}
		}
		d.pilotEnd, d.pilotTask, d.moved = end, task, idle
	}
	// Bases that started.
	for _, ej := range d.jobs {
		if ej.base != nil && ej.base.began && !ej.baseStarted && !ej.baseCancelled {
			ej.baseStarted = true
			for _, sp := range ej.base.alloc {
				for n := int(sp.first); n < int(sp.first+sp.n); n++ {
					w := &worker{ej: ej, node: n, task: -1, deadline: ej.base.estEnd}
					ej.baseWorkers = append(ej.baseWorkers, w)
					d.pull(w, now)
				}
			}
		}
	}
}

// settle lets holders with nothing left to do go, keeps the waiting
// intervals, and notes when the driver next has something to do.
func (d *driver) settle(now time.Duration, s *State) {
	// Holders with nothing left to do leave now; a base whose work ran
	// out on some of its nodes gives those back (Slurm shrinks a running
	// job: scontrol update JobId= NodeList=). Not while a pilot runs one
	// of its tasks: a pilot that gives way hands its task back, and
	// without the base nobody might run it before the job would have
	// ended without glean (a shadow element waits the same way).
	if slices.ContainsFunc(d.jobs, func(ej *ejob) bool { return ej.canShrink(now) }) {
		for _, ej := range d.jobs {
			ej.onPilots = 0
		}
		for _, p := range d.pilots {
			if p.state == pRunning && p.w.task >= 0 && p.w.ej != nil {
				p.w.ej.onPilots++
			}
		}
	}
	for _, ej := range d.jobs {
		if ej.canShrink(now) {
			idle := true
			for _, w := range ej.baseWorkers {
				idle = idle && (w.task < 0 || w.released)
			}
			keep := ej.onPilots
			if idle && keep == 0 {
				s.reschedule(ej.base, now)
				continue
			}
			for _, w := range ej.baseWorkers {
				switch {
				case w.task >= 0 || w.released:
				case keep > 0:
					keep-- // stands by
				default:
					w.released, w.noMoreWork = true, true
					s.shrink(ej.base, w.node)
				}
			}
		}
	}

	// Waiting bookkeeping and what comes due next: holders' and tasks'
	// ends, arrivals, the backlog's end.
	taskEnd, due := time.Duration(math.MaxInt64), time.Duration(math.MaxInt64)
	outstanding := false
	for _, ej := range d.driven {
		if ej.submit > now {
			due = min(due, ej.submit)
		}
		if ej.infinite {
			if now >= ej.until && ej.running == 0 && !ej.done {
				ej.done, d.sigDirty = true, true
			}
			if !ej.done {
				outstanding = true
				due = min(due, ej.until)
			}
			continue
		}
		if !ej.done {
			outstanding = true
		}
		w := ej.submit <= now && len(ej.pool) > 0
		switch {
		case w && !ej.waiting:
			ej.waiting, ej.waitingSince = true, now
		case !w && ej.waiting:
			ej.waiting = false
			d.res.Waiting = append(d.res.Waiting, Interval{ej.waitingSince, now})
		}
		for _, wk := range ej.baseWorkers {
			if wk.task >= 0 {
				taskEnd = min(taskEnd, wk.tEnd)
			}
		}
	}
	if d.moved { // else the pilots' ends are the same
		d.moved = false
		end, task := time.Duration(math.MaxInt64), time.Duration(math.MaxInt64)
		for _, p := range d.pilots {
			if p.state != pRunning {
				continue
			}
			if p.w.task < 0 && p.eng.end > now {
				s.reschedule(p.eng, now) // nothing left to do
				if p.cause == "" {
					p.cause = "no task"
				}
			}
			end = min(end, p.eng.end)
			if p.w.task >= 0 {
				task = min(task, p.w.tEnd)
			}
		}
		d.pilotEnd, d.pilotTask = end, task
	}
	d.taskEnd = min(taskEnd, d.pilotTask)
	d.due = min(due, d.taskEnd, d.pilotEnd)
	d.outstanding = outstanding || len(d.pilots) > 0
}

// advance completes w's task if it ended by now and pulls the next.
func (d *driver) advance(w *worker, now time.Duration) {
	if w.task < 0 || w.tEnd > now {
		return
	}
	for w.task >= 0 && w.tEnd <= now {
		d.complete(w)
		d.pull(w, w.tEnd)
	}
	// A backlog task followed by the next changes no count the signature
	// shows (complete and pull leave the backlog's to advance).
	if w.task < 0 {
		d.sigDirty = true
	}
}

func (d *driver) complete(w *worker) {
	ej := w.ej
	if ej.infinite {
		// Consecutive tasks on one pilot are one record: KTH-SP2's
		// backlog completes millions.
		if w.rec != nil && w.rec.End == w.tStart {
			w.rec.End = w.tEnd
			w.rec.Count++
		} else {
			w.rec = d.tasks.add(TaskRun{Job: ej.id, Task: w.task, Node: w.node, Start: w.tStart, End: w.tEnd, Pilot: true, Completed: true, Count: 1})
		}
		ej.running--
		w.pilot.tasks++
		w.task = -1
		return
	}
	d.sigDirty = true
	d.tasks.add(TaskRun{Job: ej.id, Task: w.task, Node: w.node, Start: w.tStart, End: w.tEnd, Pilot: w.pilot != nil, Completed: true, Count: 1})
	ej.running--
	ej.left--
	if w.pilot != nil {
		w.pilot.tasks++
	}
	if ej.left == 0 {
		ej.done, ej.finish = true, w.tEnd
	}
	w.task = -1
}

// pull gives w the next task of its job that ends by its deadline.
func (d *driver) pull(w *worker, at time.Duration) {
	ej := w.ej
	if ej.infinite {
		if w.noMoreWork || at >= ej.until || at+ej.taskLen > w.deadline {
			return
		}
		ej.running++
		w.task, w.tStart, w.tEnd = ej.nextTask, at, at+ej.taskLen
		ej.nextTask++
		return
	}
	if w.noMoreWork {
		return
	}
	d.sigDirty = true
	if p := w.pilot; p != nil && p.next != nil {
		ej = p.next // moved: its task ended
		p.ej, w.ej, p.next = ej, ej, nil
	}
	if len(ej.pool) == 0 {
		return
	}
	t := ej.pool[len(ej.pool)-1]
	if at+ej.lens[t] > w.deadline {
		return
	}
	ej.pool = ej.pool[:len(ej.pool)-1]
	ej.running++
	w.task, w.tStart, w.tEnd = t, at, at+ej.lens[t]
}

// stopWorker ends w's holder at t: a task that ends by t completes, one
// that does not is killed (waste) and goes back to the pool.
func (d *driver) stopWorker(w *worker, t time.Duration) {
	if w.task >= 0 && w.tEnd <= t {
		d.complete(w)
	}
	if w.task >= 0 {
		ej := w.ej
		d.tasks.add(TaskRun{Job: ej.id, Task: w.task, Node: w.node, Start: w.tStart, End: t, Pilot: w.pilot != nil, Count: 1})
		ej.running--
		if !ej.infinite {
			ej.pool = append(ej.pool, w.task)
		}
		w.task = -1
		d.sigDirty = true
	}
	w.noMoreWork = true
}

func (d *driver) pilotGone(p *pilot, t time.Duration) {
	p.eng.pilot = false
	d.stopWorker(&p.w, t)
	p.state = pGone
	d.anyGone, d.sigDirty, d.moved = true, true, true
	p.run.End, p.run.EndCause, p.run.Tasks = t, p.cause, p.tasks
}

// round is one scheduling cycle: pilots submitted last cycle start if
// their node is still free, then the policy decides on a fresh snapshot.
// It reports whether a pilot started or the policy acted.
func (d *driver) round(now time.Duration, s *State) (changed bool) {
	d.res.Rounds++
	for _, p := range d.pilots {
		if d.pending == 0 {
			break
		}
		if p.state != pPending || p.submitted >= now {
			continue
		}
		node := p.node
		if node < 0 {
			for i := 0; i < s.size; i++ {
				if s.idle.has(i) {
					node = i
					break
				}
			}
		}
		if node < 0 || !s.idle.has(node) {
			continue // still pending: the timeout rule handles it
		}
		d.startPilot(p, node, now, s)
		changed = true
	}

	if d.skip(now, s) && !d.cfg.EveryRound {
		d.res.Skipped++
		if d.cfg.verifySkips {
			if st := d.state(now); len(st.Jobs)+len(st.Pilots) > 0 {
				if acts := policy.Decide(d.snapshot(s), st, d.pcfg, simEpoch.Add(now)); len(acts) > 0 {
					d.res.skipErrs++
				}
			}
		}
		return changed
	}
	d.record(now, s)
	st := d.state(now)
	d.started = false
	d.lastActs = 0
	d.hold = policy.Hold{}
	if len(st.Jobs) == 0 && len(st.Pilots) == 0 {
		return changed
	}
	snap := d.snapshot(s)
	if d.cfg.checkSnapshot != nil {
		d.cfg.checkSnapshot(d, s, snap)
	}
	acts, hold := policy.DecideHold(snap, st, d.pcfg, simEpoch.Add(now))
	d.lastActs, d.hold = len(acts), hold
	if len(acts) == 0 && hold.TaskEnds {
		d.te = d.taskEnds(d.te[:0])
	}
	d.misses = st.NextMisses(acts)
	for _, a := range acts {
		d.apply(a, now, s)
	}
	return changed || len(acts) > 0
}

// state is what glean knows beyond the snapshot, as the daemon tells the
// policy. Its slices are reused by the next one.
func (d *driver) state(now time.Duration) policy.State {
	st := policy.State{BFInterval: d.cycle, PendingMisses: d.misses, Started: d.started,
		Jobs: d.stJobs[:0], Pilots: d.stPilots}
	defer func() { d.stJobs, d.stPilots = st.Jobs, st.Pilots }()
	for _, ej := range d.driven {
		if ej.submit > now || ej.done {
			continue
		}
		e := policy.ElasticJob{ID: ej.key, Mode: ej.mode, Owner: ej.owner, Submit: simEpoch.Add(ej.submit),
			TasksPending: ej.pendingTasks(now), TasksRunning: ej.running}
		if ej.infinite {
			e.Submit = backlogSubmit
		}
		switch {
		case ej.infinite:
			e.TaskTime = ej.taskLen
		case len(ej.lens) > 0:
			e.TaskTime = ej.lens[0]
		}
		if ej.base != nil && d.cfg.Mode == FairMode {
			if ej.baseIDs == nil {
				ej.baseIDs = []string{strconv.Itoa(ej.id)}
			}
			e.BaseJobIDs = ej.baseIDs
		}
		st.Jobs = append(st.Jobs, e)
	}
	policy.Order(st.Jobs) // as the daemon orders them
	// Each pilot's entry is written again only if it moved or changed.
	n := len(d.pilots)
	if cap(st.Pilots) < n {
		st.Pilots = slices.Grow(st.Pilots, n-len(st.Pilots))
	}
	st.Pilots = st.Pilots[:n]
	for i, p := range d.pilots {
		v := p.view()
		if i < len(d.stFor) && d.stFor[i] == p && p.shown == v {
			continue // as the last state wrote it
		}
		p.shown = v
		pp := policy.Pilot{ID: p.sid, Job: p.ej.key, Submitted: p.subAt, Retiring: p.retiring, Leaving: p.leaving}
		if p.next != nil {
			pp.Job = p.next.key
		}
		if p.node >= 0 {
			pp.Node = d.nodeName(p.node)
		}
		if p.state == pRunning {
			pp.State = policy.PilotRunning
			pp.Start = p.startAt
			if p.limit != cluster.Unlimited {
				pp.End = p.endAt
			}
			pp.Busy = p.w.task >= 0
			if pp.Busy {
				pp.TaskEnd = p.taskEndT.at(p.w.tEnd)
			}
		}
		st.Pilots[i] = pp
	}
	d.stFor = append(d.stFor[:0], d.pilots...)
	return st
}

// snapshot is the engine's snapshot with the pilots shown as what they
// are: running jobs in the pilot partition, and the pending ones.
// It is built on d.snapCache: valid until the next one.
func (d *driver) snapshot(s *State) *cluster.Snapshot {
	snap := s.snapshot(simEpoch, &d.snapCache) // running pilots: their line (startPilot)
	d.free = append(d.free, d.gone...)
	clear(d.gone)
	d.gone = d.gone[:0]
	for i, left := 0, d.pending; left > 0; i++ { // most rounds have none
		p := d.pilots[i]
		if p.state != pPending {
			continue
		}
		left--
		snap.Jobs = append(snap.Jobs, p.jobLine())
		cj := &snap.Jobs[len(snap.Jobs)-1]
		cj.State, cj.RawState, cj.Reason = cluster.JobPending, "PENDING", "Priority"
	}
	d.snapCache.jobs = snap.Jobs
	return snap
}

// jobLine is what p's snapshot line shows, running or pending: a one-node
// job in the pilot partition at the lowest priority.
func (p *pilot) jobLine() cluster.Job {
	return cluster.Job{ID: p.sid, ArrayJobID: p.sid, Partition: PilotPartition, NumNodes: 1, TimeLimit: p.limit,
		Submit: p.subAt, Priority: 1, Name: "glean-pilot"}
}

// nodeName is NodeName(i), from the snapshots' names once there are some.
func (d *driver) nodeName(i int) string {
	if i < len(d.snapCache.names) {
		return d.snapCache.names[i]
	}
	return NodeName(i)
}

// findPilot finds a pilot by the ID the policy knows: pilots is in the
// order of their numbers.
func (d *driver) findPilot(id string) *pilot {
	n, err := strconv.Atoi(id)
	if err != nil {
		return nil
	}
	i, ok := slices.BinarySearchFunc(d.pilots, n, func(p *pilot, n int) int { return p.id - n })
	if !ok || d.pilots[i].sid != id {
		return nil
	}
	return d.pilots[i]
}

func (d *driver) findJob(id string) *ejob {
	for _, ej := range d.driven {
		if ej.key == id {
			return ej
		}
	}
	return nil
}

// skip reports whether this round may be skipped: the last round the
// policy ran decided nothing, neither the engine (starts, ends, arrivals,
// backfill plans) nor the driver (tasks pending and held, pilots and their
// state, and busy pilots' task ends if the decision read them) changed
// since, and the policy said that its decision then holds until after now
// (the first instant at which a window, claim, fit, timeout or give-way
// order it compared with the clock could turn): the policy would decide
// nothing again.
func (d *driver) skip(now time.Duration, s *State) bool {
	if !d.sigOK || d.lastActs != 0 || d.started || s.version != d.sigVersion || d.misses != d.sigMisses ||
		!d.hold.Holds(simEpoch.Add(now)) {
		return false
	}
	if d.sigDirty || now >= d.sigTurn {
		d.sigNow = d.signature(now, d.sigNow[:0])
		if !slices.Equal(d.sigNow, d.sig) {
			return false
		}
		d.sigDirty, d.sigTurn = false, d.turn(now)
	}
	if d.hold.TaskEnds {
		d.teNow = d.taskEnds(d.teNow[:0])
		return slices.Equal(d.teNow, d.te)
	}
	return true
}

// record notes what the policy reads in this round, for skip. The
// signature is the last one unless something in it changed since.
func (d *driver) record(now time.Duration, s *State) {
	if !d.sigOK || d.sigDirty || now >= d.sigTurn {
		d.sig = d.signature(now, d.sig[:0])
	}
	d.sigVersion, d.sigMisses = s.version, d.misses
	d.sigDirty, d.sigTurn, d.sigOK = false, d.turn(now), true
}

// signature appends the driver's part of what the policy reads, apart
// from task ends: the jobs it sees with their tasks pending and held, and
// the pilots with their state and the job they serve.
func (d *driver) signature(now time.Duration, sig []int64) []int64 {
	for _, ej := range d.driven {
		if ej.submit > now || ej.done {
			continue
		}
		sig = append(sig, int64(ej.id), int64(ej.pendingTasks(now)), int64(ej.running))
	}
	for _, p := range d.pilots {
		busy := int64(0)
		if p.state == pRunning && p.w.task >= 0 {
			busy = 1
		}
		if p.retiring {
			busy |= 2
		}
		if p.leaving {
			busy |= 4
		}
		serves := p.ej
		if p.next != nil {
			serves = p.next
		}
		sig = append(sig, int64(p.id), int64(p.state), busy, int64(serves.id))
	}
	return sig
}

// turn is the first instant after now at which the clock alone changes
// the signature: a job's arrival, or the backlog's end (pendingTasks).
func (d *driver) turn(now time.Duration) time.Duration {
	t := time.Duration(math.MaxInt64)
	for _, ej := range d.driven {
		switch {
		case ej.done:
		case ej.submit > now:
			t = min(t, ej.submit)
		case ej.infinite && ej.until > now:
			t = min(t, ej.until)
		}
	}
	return t
}

// taskEnds appends the busy pilots' task ends.
func (d *driver) taskEnds(te []int64) []int64 {
	for _, p := range d.pilots {
		if p.state == pRunning && p.w.task >= 0 {
			te = append(te, int64(p.w.tEnd))
		}
	}
	return te
}

// apply carries out one action, as the daemon would through Slurm.
func (d *driver) apply(a policy.Action, now time.Duration, s *State) {
	d.moved, d.sigDirty = true, true
	switch a.Kind {
	case policy.SubmitPilot:
		ej := d.findJob(a.Job)
		if ej == nil || ej.done {
			return
		}
		node := -1
		if a.Node != "" {
			if n, err := strconv.Atoi(strings.TrimPrefix(a.Node, "c")); err == nil && n >= 1 && n <= s.size {
				node = n - 1
			}
		}
		var p *pilot
		if n := len(d.free); n > 0 {
			p, d.free = d.free[n-1], d.free[:n-1]
		} else {
			p = d.mem.add(pilot{})
		}
		p.pilotCore = pilotCore{id: d.nextPilot, sid: strconv.Itoa(d.nextPilot), ej: ej, node: node, submitted: now, limit: a.TimeLimit,
			subAt: simEpoch.Add(now)}
		d.nextPilot++
		d.pending++
		p.run = d.runs.add(PilotRun{ID: p.id, Job: ej.id, Node: node, Submit: now, Limit: a.TimeLimit, End: now})
		d.pilots = append(d.pilots, p)
	case policy.CancelPilot, policy.RetirePilot:
		p := d.findPilot(a.Pilot)
		if p == nil || p.state == pGone {
			return
		}
		if p.state == pPending {
			p.state, p.cause = pGone, "cancelled pending: "+a.Cause.String()
			d.pending--
			d.anyGone = true
			p.run.End, p.run.EndCause = now, p.cause
			d.pilots = slices.DeleteFunc(d.pilots, func(q *pilot) bool { return q == p })
			d.gone = append(d.gone, p)
			return
		}
		p.w.noMoreWork = true
		if a.Kind == policy.RetirePilot {
			p.retiring = true
			if p.cause == "" {
				p.cause = "retired: " + a.Cause.String()
			}
			return
		}
		p.leaving = true
		p.cause = "cancelled: " + a.Cause.String()
		end := now + d.pcfg.Grace
		if p.w.task >= 0 {
			end = min(end, p.w.tEnd)
		} else {
			end = now
		}
		if end < p.eng.end {
			s.reschedule(p.eng, end)
		}
	case policy.MovePilot:
		p, to := d.findPilot(a.Pilot), d.findJob(a.To)
		if p == nil || p.state == pGone || to == nil || to.done || to.owner != p.ej.owner {
			return
		}
		if p.state == pRunning && p.w.task >= 0 {
			p.next = to // after its task
			return
		}
		p.ej, p.next = to, nil
		if p.state == pRunning {
			p.w.ej = to
			d.pull(&p.w, now)
		}
	case policy.CancelBase:
		ej := d.findJob(a.Job)
		if ej == nil || ej.base == nil || ej.base.began || ej.baseCancelled {
			return
		}
		ej.baseCancelled = true
		s.queue = slices.DeleteFunc(s.queue, func(j *job) bool { return j == ej.base })
	}
}

func (d *driver) startPilot(p *pilot, node int, now time.Duration, s *State) {
	lim := p.limit
	run := lim
	if lim == cluster.Unlimited || lim <= 0 {
		lim, run = workload.Unlimited, 365*24*time.Hour
	}
	p.job = job{id: p.id, seq: p.id, submit: p.submitted, run: run, est: lim, nodes: 1}
	j := &p.job
	// The snapshot shows it as a pilot (jobLine) with the engine's limit.
	p.line = jobLine{base: p.jobLine()}
	p.line.base.TimeLimit = lim
	j.line = &p.line
	p.alloc[0] = span{first: int32(node), n: 1}
	s.startOn(j, p.alloc[:])
	p.eng, p.node, p.state = j, node, pRunning
	p.startAt, p.endAt = simEpoch.Add(j.start), simEpoch.Add(j.estEnd)
	d.pending--
	j.pilot = true
	p.w = worker{ej: p.ej, node: node, task: -1, pilot: p, deadline: j.end}
	p.run.Node, p.run.Started, p.run.Start = node, true, now
	p.ej.pilots++
	d.started, d.moved, d.sigDirty = true, true, true
	d.pull(&p.w, now)
}

// slurmOnly fills the calibration jobs' outcome from the rigid jobs.
func (d *driver) slurmOnly(r *Result) {
	for _, ej := range d.jobs {
		for i := range r.Jobs {
			jr := &r.Jobs[i]
			if jr.ID != ej.id || d.res.Kinds[i] != workload.Calibration {
				continue
			}
			ej.baseStarted, ej.done, ej.finish = true, true, jr.End
			ej.left = 0
			// The rigid job runs all its tasks on its nodes.
			ns := allocNodes(jr.alloc)
			for k, n := range ns {
				d.tasks.add(TaskRun{Job: ej.id, Task: k, Node: n, Start: jr.Start, End: jr.End, Completed: true})
			}
			if jr.Start > jr.Submit {
				d.res.Waiting = append(d.res.Waiting, Interval{jr.Submit, jr.Start})
			}
		}
	}
}

func allocNodes(a []span) []int {
	var out []int
	for _, sp := range a {
		for n := int(sp.first); n < int(sp.first+sp.n); n++ {
			out = append(out, n)
		}
	}
	return out
}

// finish records the calibration jobs and the pilots still listed.
func (d *driver) finish() {
	d.res.Tasks = d.tasks.all()
	for _, p := range d.pilots {
		if p.state != pGone {
			p.run.EndCause, p.run.Tasks = "still running at the end", p.tasks
		}
	}
	if b := d.backlog; b != nil {
		d.res.Waiting = append(d.res.Waiting, Interval{b.submit, b.until})
		d.res.Backlog.Pilots = b.pilots
		for _, t := range d.res.Tasks {
			switch {
			case t.Job != backlogID:
			case t.Completed:
				d.res.Backlog.Tasks += t.Count
				d.res.Backlog.WorkNodeSeconds += (t.End - t.Start).Seconds()
			default:
				d.res.Backlog.WasteNodeSeconds += (t.End - t.Start).Seconds()
			}
		}
	}
	for _, ej := range d.jobs {
		c := CalRun{ID: ej.id, Submit: ej.submit, Finish: ej.finish, Work: ej.work, Tasks: len(ej.lens), Done: ej.done, Pilots: ej.pilots}
		if ej.base != nil && ej.base.began {
			c.BaseRan, c.BaseStart, c.BaseEnd, c.BaseNodes = true, ej.base.start, ej.base.end, ej.base.nodes+len(ej.base.released)
		}
		if ej.waiting {
			d.res.Waiting = append(d.res.Waiting, Interval{ej.waitingSince, ej.finish})
		}
		d.res.Cal = append(d.res.Cal, c)
	}
	d.res.Pilots = d.runs.all()
}

// blocks collects records in blocks that never move: a pointer to one stays
// valid, and a long run's millions are not copied over and over as a
// growing slice would be.
type blocks[T any] struct {
	full [][]T
	last []T
	n    int
}

// add appends v and returns where it is kept.
func (b *blocks[T]) add(v T) *T {
	if len(b.last) == cap(b.last) {
		if b.last != nil {
			b.full = append(b.full, b.last)
		}
		b.last = make([]T, 0, min(4096, max(64, 2*cap(b.last))))
	}
	b.last = append(b.last, v)
	b.n++
	return &b.last[len(b.last)-1]
}

// all is every record in order, nil for none.
func (b *blocks[T]) all() []T {
	if b.n == 0 {
		return nil
	}
	out := make([]T, 0, b.n)
	for _, f := range b.full {
		out = append(out, f...)
	}
	return append(out, b.last...)
}
