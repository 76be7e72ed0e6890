package daemon

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/glean-hpc/glean/sidecar/cluster"
	"github.com/glean-hpc/glean/sidecar/policy"
	"github.com/glean-hpc/glean/sidecar/slurm"
	"github.com/glean-hpc/glean/sidecar/spool"
)

// slurmModel is a fake Slurm behind the real sidecar/slurm client: it
// answers squeue, sinfo and scontrol from its jobs (the intake fixture's
// QJobs, with pilots added by the actions) and counts every command, so
// that a test can tell how often a round asked Slurm. As the privileged
// helper it counts requests and applies them to its jobs.
type slurmModel struct {
	mu    sync.Mutex
	fx    *fixture // its jobs are the anchors and shadow arrays
	nodes int
	// pilots: id -> state; a submitted pilot pends until the test starts it.
	pilots  map[string]*modelPilot
	next    int
	calls   map[string]int // "squeue", "sinfo", "scontrol show partition", "scontrol show config"
	helper  []string       // helper requests, "op record-or-job"
	config  []byte
	release map[string]bool
	// regular jobs: id -> nodes they need (pending in batch, high priority)
	regular map[string]int
	// others: other users' jobs, squeue records as Slurm prints them
	// (fields joined, no seal)
	others []string
	// pilot is how the pilot partition shows: "" as any, "hidden"
	// (Hidden=YES, or AllowGroups without gleand's user: sinfo and
	// scontrol show it only with -a), "absent" (not configured).
	pilot string
}

type modelPilot struct {
	node       string
	state      string // PENDING, RUNNING, CANCELLED, COMPLETED, FAILED
	submit     time.Time
	start, end time.Time
	comment    string
}

var (
	_ slurm.Runner = (*slurmModel)(nil)
	_ Actor        = (*slurmModel)(nil)
)

func newModel(t *testing.T, fx *fixture, nodes int) *slurmModel {
	cfg, err := os.ReadFile("../slurm/testdata/config.txt") // a real 22.05 `scontrol show config`
	if err != nil {
		t.Fatal(err)
	}
	return &slurmModel{fx: fx, nodes: nodes, pilots: map[string]*modelPilot{}, calls: map[string]int{}, config: cfg,
		release: map[string]bool{}, regular: map[string]int{}}
}

func (m *slurmModel) Run(_ context.Context, argv []string) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	switch {
	case argv[0] == "squeue":
		m.calls["squeue"]++
		return m.squeue(argv), nil
	case argv[0] == "sinfo":
		m.calls["sinfo"]++
		var b strings.Builder
		for i := 1; i <= m.nodes; i++ {
			state := "idle"
			for _, p := range m.pilots {
				if p.state == "RUNNING" && p.node == "n"+strconv.Itoa(i) {
					state = "allocated"
				}
			}
			if m.showsPilot(argv) {
				fmt.Fprintf(&b, "n%d\x1f%s\x1fpilot\x1f4\x1f1000\x1e\n", i, state)
			}
			fmt.Fprintf(&b, "n%d\x1f%s\x1fbatch*\x1f4\x1f1000\x1e\n", i, state)
		}
		fmt.Fprintf(&b, "g1\x1fidle\x1fglean\x1f1\x1f1000\x1e\n")
		return []byte(b.String()), nil
	case argv[0] == "scontrol" && slices.Contains(argv, "show") && argv[len(argv)-1] == "partition":
		m.calls["scontrol show partition"]++
		nodes := fmt.Sprintf("n[1-%d]", m.nodes)
		part := func(name, nodes, def string, tier int, over string) string {
			return fmt.Sprintf("PartitionName=%s Default=%s DefaultTime=NONE MaxTime=UNLIMITED Nodes=%s PriorityTier=%d OverSubscribe=%s State=UP\n",
				name, def, nodes, tier, over)
		}
		out := part("batch", nodes, "YES", 10, "NO")
		if m.showsPilot(argv) {
			out += strings.Replace(part("pilot", nodes, "NO", 1, "NO"), "State=UP", "Hidden="+map[bool]string{true: "YES", false: "NO"}[m.pilot == "hidden"]+" State=UP", 1)
		}
		return []byte(out + part("glean", "g1", "NO", 10, "FORCE:64")), nil
	case strings.Join(argv, " ") == "scontrol show config":
		m.calls["scontrol show config"]++
		return m.config, nil
	}
	return nil, fmt.Errorf("fake Slurm: unexpected command %q", argv)
}

// showsPilot reports whether sinfo or scontrol show partition, run with
// argv, lists the pilot partition.
func (m *slurmModel) showsPilot(argv []string) bool {
	switch m.pilot {
	case "hidden":
		return slices.Contains(argv, "-a") || slices.Contains(argv, "--all")
	case "absent":
		return false
	}
	return true
}

// squeue prints every job in SqueueAllArgv's format, sealed.
func (m *slurmModel) squeue(argv []string) []byte {
	last := argv[len(argv)-1]
	seal := strings.TrimSuffix(last[strings.Index(last, "\x1d")+1:], "\x1e")
	var b strings.Builder
	epoch := func(t time.Time, zero string) string {
		if t.IsZero() {
			return zero
		}
		return strconv.FormatInt(t.Unix(), 10)
	}
	lineSE := func(id, array, state, reason, part, n, nodes, user, name, comment string, submit, start, end time.Time, prio string) {
		f := []string{id, array, "N/A", state, reason, part, n, nodes, "(null)", "UNLIMITED", epoch(submit, "0"), epoch(start, "N/A"), epoch(end, "N/A"), prio, user, name, comment}
		b.WriteString(strings.Join(f, "\x1f") + "\x1d" + seal + "\x1e\n")
	}
	lineS := func(id, array, state, reason, part, n, nodes, user, name, comment string, submit, start time.Time, prio string) {
		lineSE(id, array, state, reason, part, n, nodes, user, name, comment, submit, start, time.Time{}, prio)
	}
	lineN := func(id, array, state, reason, part, n, nodes, user, name, comment string, submit time.Time, prio string) {
		lineS(id, array, state, reason, part, n, nodes, user, name, comment, submit, time.Time{}, prio)
	}
	for _, id := range slices.Sorted(maps.Keys(m.regular)) {
		lineN(id, "N/A", "PENDING", "Resources", "batch", strconv.Itoa(m.regular[id]), "", "root", "big", "", m.fx.now, "100000")
	}
	m.fx.slurm.mu.Lock()
	ids := make([]string, 0, len(m.fx.slurm.jobs))
	for id := range m.fx.slurm.jobs {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		j := m.fx.slurm.jobs[id]
		lineS(j.ID, j.ArrayID, j.State, j.Reason, j.Partition, "1", "", j.User, "job", j.Comment, time.Time{}, j.Start, "100")
	}
	m.fx.slurm.mu.Unlock()
	for _, r := range m.others {
		b.WriteString(r + "\x1d" + seal + "\x1e\n")
	}
	for _, id := range slices.Sorted(maps.Keys(m.pilots)) {
		p := m.pilots[id]
		nodes, reason := "", "Priority"
		if p.state != "PENDING" {
			nodes, reason = p.node, "None"
		}
		lineSE(id, "N/A", p.state, reason, "pilot", "1", nodes, m.fx.user, "glean-pilot", p.comment, p.submit, p.start, p.end, "100")
	}
	return []byte(b.String())
}

func (m *slurmModel) ask(op, what string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.helper = append(m.helper, op+" "+what)
}

func (m *slurmModel) SubmitPilots(_ context.Context, record string, intents []spool.PilotJob) ([]string, error) {
	// The intents are on disk before the helper is asked (it reads them
	// from there).
	rs, err := m.fx.s.OpenRecords()
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	onDisk, err := rs.Get(record)
	if err != nil {
		return nil, err
	}
	m.ask("submit-pilots", fmt.Sprintf("%s x%d", record, len(intents)))
	m.mu.Lock()
	defer m.mu.Unlock()
	ids := make([]string, len(intents))
	for i, p := range intents {
		if !slices.ContainsFunc(onDisk.PilotJobs, func(q spool.PilotJob) bool { return q.Token == p.Token && q.ID == "" }) {
			return nil, fmt.Errorf("token %s not recorded as an intent before the sbatch", p.Token)
		}
		m.next++
		ids[i] = strconv.Itoa(5000 + m.next)
		m.pilots[ids[i]] = &modelPilot{node: p.Node, state: "PENDING", submit: m.fx.now, comment: "glean-pilot:" + p.Token}
	}
	return ids, nil
}

// end ends a pilot at the test's now: how "" cancels it, "pending" only
// if it is pending; "exit" and "done" are its agent exiting by itself
// with an error or 0 (FAILED, COMPLETED).
func (m *slurmModel) end(id, how string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p := m.pilots[id]
	if p == nil || how == "pending" && p.state != "PENDING" {
		return
	}
	p.state, p.end = "CANCELLED", m.fx.now
	switch how {
	case "exit":
		p.state = "FAILED"
	case "done":
		p.state = "COMPLETED"
	}
	if p.start.IsZero() {
		p.start = p.end // as squeue shows a job cancelled while pending
	}
}

func (m *slurmModel) CancelPilot(_ context.Context, record, id string) error {
	m.ask("cancel-pilot", id)
	m.end(id, "")
	return nil
}

func (m *slurmModel) SignalPilot(_ context.Context, record, id string) error {
	m.ask("signal-pilot", id)
	return nil
}

func (m *slurmModel) CancelPendingPilot(_ context.Context, record, id string) error {
	m.ask("cancel-pending-pilot", id)
	m.end(id, "pending")
	return nil
}

func (m *slurmModel) CancelPending(_ context.Context, id string) error {
	m.ask("cancel-pending", id)
	m.fx.slurm.mu.Lock()
	defer m.fx.slurm.mu.Unlock()
	if j, ok := m.fx.slurm.jobs[id]; ok && j.State == "PENDING" {
		j.State = "CANCELLED"
		m.fx.slurm.jobs[id] = j
	}
	return nil
}

func (m *slurmModel) Release(_ context.Context, id string) error {
	m.ask("release", id)
	return nil
}

func (m *slurmModel) StartShadow(ctx context.Context, id string) error {
	m.ask("start-shadow", id)
	return m.fx.slurm.StartShadow(ctx, id)
}

// start makes a pending pilot run on its node.
func (m *slurmModel) start(id string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if p := m.pilots[id]; p != nil && p.state == "PENDING" {
		p.state, p.start = "RUNNING", m.fx.now
	}
}

// round runs one gleand round (intake and execution on one observation)
// and returns the Slurm commands and helper requests it made.
func (m *slurmModel) round(t *testing.T, in *Intake, x *Executor) (map[string]int, []string) {
	t.Helper()
	m.mu.Lock()
	m.calls, m.helper = map[string]int{}, nil
	m.mu.Unlock()
	obs := NewObservation(m.fx.now, x.Snapshotter())
	if _, err := in.Observe(context.Background(), obs); err != nil {
		t.Fatalf("intake: %v", err)
	}
	if _, err := x.Observe(context.Background(), obs); err != nil {
		t.Fatalf("execution: %v", err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.calls, m.helper
}

// A round observes Slurm once (one squeue, sinfo and partition list, the
// config once per daemon) whatever the intake and the executor need from
// it, nothing when nothing is active, one helper request per job for its
// new pilots; pending shadow elements are cancelled once; a pilot's
// pending timeout runs from when its sbatch returned and cancels only
// what is still pending.
func TestRoundCallsSlurmOnce(t *testing.T) {
	fx := newFixture(t)
	m := newModel(t, fx, 8)
	pc := policy.DefaultConfig()
	pc.PilotPartition = "pilot"
	pc.Grace = 10 * time.Second
	pc.MinPilotTime = time.Minute
	pc.MaxPendingPilots = 8
	clock := fx.now
	x := NewExecutor(ExecOptions{Spool: fx.s, Policy: pc, DefaultMode: policy.Scavenger, Retries: 2, HeartbeatTimeout: time.Minute,
		PilotPartition: "pilot", Clock: func() time.Time { return clock }},
		fx.in, fx.in.records, m, &slurm.Client{R: m, Ended: true}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	once := map[string]int{"squeue": 1, "sinfo": 1, "scontrol show partition": 1}

	calls, helper := m.round(t, fx.in, x)
	if len(calls) != 0 || len(helper) != 0 {
		t.Fatalf("idle round: Slurm %v, helper %v; want nothing", calls, helper)
	}

	// A new entry: the intake and the executor (8 pilots for its 40
	// tasks) share one observation; the config is read once.
	e := fx.submit(t, 40, func(e *spool.Entry, a *QJob) { e.Shadow = "900"; e.Mode = "fair" })
	calls, helper = m.round(t, fx.in, x)
	want := map[string]int{"squeue": 1, "sinfo": 1, "scontrol show partition": 1, "scontrol show config": 1}
	if fmt.Sprint(calls) != fmt.Sprint(want) {
		t.Errorf("round with a new entry: Slurm %v, want %v", calls, want)
	}
	rec := fx.record(e)
	if rec == nil || rec.State != spool.StateQueued {
		t.Fatalf("record %+v", rec)
	}
	if len(helper) != 2 || helper[0] != "start-shadow 900" || !strings.HasPrefix(helper[1], "submit-pilots "+rec.DirName()+" x") {
		t.Errorf("helper requests %q: want the shadow started, then one submit-pilots", helper)
	}
	pilots := rec.PilotJobs
	for _, p := range pilots {
		if p.ID == "" || !p.Submitted.Equal(clock) {
			t.Errorf("pilot %+v: want an id and Submitted = when its sbatch returned", p)
		}
	}

	// One starts (and stays: an idle agent leaves by itself); a cycle
	// later (1 s, the config's bf_interval) the others, still pending, are
	// not timed out: their sbatch returned less than a cycle ago.
	m.start(pilots[0].ID)
	fx.now = fx.now.Add(time.Second)
	calls, helper = m.round(t, fx.in, x)
	if fmt.Sprint(calls) != fmt.Sprint(once) || slices.ContainsFunc(helper, func(s string) bool { return strings.Contains(s, "cancel") }) {
		t.Errorf("round with pending pilots: Slurm %v (want %v), helper %q (want no cancel)", calls, once, helper)
	}
	// Two cycles later: timed out, cancelled only if still pending.
	fx.now = fx.now.Add(1500 * time.Millisecond)
	_, helper = m.round(t, fx.in, x)
	if len(helper) == 0 || !strings.HasPrefix(helper[0], "cancel-pending-pilot ") || slices.Contains(helper, "cancel-pending-pilot "+pilots[0].ID) ||
		slices.ContainsFunc(helper, func(s string) bool {
			return strings.HasPrefix(s, "cancel-pilot ") || strings.HasPrefix(s, "signal-pilot ")
		}) {
		t.Errorf("timed-out pending pilots: helper %q; want cancel-pending-pilot only", helper)
	}

	// All tasks done: the job ends, its pending shadow elements are
	// cancelled once, its anchor released once (later rounds follow its
	// running pilot until it leaves).
	fx.finishTasks(t, e.ID, 40, "5001")
	fx.now = fx.now.Add(time.Second)
	calls, helper = m.round(t, fx.in, x)
	if fmt.Sprint(calls) != fmt.Sprint(once) {
		t.Errorf("ending round: Slurm %v, want %v", calls, once)
	}
	if !slices.Contains(helper, "cancel-pending 900") || !slices.Contains(helper, "release "+e.Anchor) {
		t.Errorf("ending round: helper %q; want the shadow's pending elements cancelled and the anchor released", helper)
	}
	if r := fx.record(e); r.State != spool.StateDone {
		t.Fatalf("record %s %+v", r.State, r.Tasks)
	}
	for range 2 {
		fx.now = fx.now.Add(time.Second)
		if r := fx.record(e); !x.needsEnd(r) {
			t.Fatalf("the job's running pilot is not followed: %+v", r.PilotJobs)
		}
		_, helper = m.round(t, fx.in, x)
		if slices.Contains(helper, "cancel-pending 900") || slices.Contains(helper, "release "+e.Anchor) {
			t.Errorf("a later round asked again: %q", helper)
		}
	}
}

// Another user's pending arrays whose index lists Slurm cut short (squeue
// %K ending in "...", as libslurm prints it past SLURM_BITSTR_LEN) are
// pending jobs like any other: the snapshot stays complete, the entry is
// taken in and the executor decides. Before, each such record was refused,
// which made every round's snapshot incomplete, for everyone.
func TestCutArrayIndicesKeepSnapshotComplete(t *testing.T) {
	fx := newFixture(t)
	m := newModel(t, fx, 8)
	data, err := os.ReadFile("../slurm/testdata/squeue_cut.txt")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range strings.Split(string(data), "\x1dfixture\x1e\n") {
		if strings.Contains(r, "\x1fPENDING\x1f") && strings.Contains(r, "...") {
			m.others = append(m.others, r) // the running element's node is not in this model
		}
	}
	if len(m.others) != 3 {
		t.Fatalf("%d cut pending arrays in the fixture, want 3", len(m.others))
	}
	pc := policy.DefaultConfig()
	pc.PilotPartition = "pilot"
	x := NewExecutor(ExecOptions{Spool: fx.s, Policy: pc, DefaultMode: policy.Scavenger, Retries: 2, HeartbeatTimeout: time.Minute,
		PilotPartition: "pilot"}, fx.in, fx.in.records, m, &slurm.Client{R: m, Ended: true}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	e := fx.submit(t, 4, nil)
	obs := NewObservation(fx.now, x.Snapshotter())
	st, err := fx.in.Observe(context.Background(), obs)
	if err != nil || st.Accepted != 1 {
		t.Fatalf("intake: %+v, %v; want the entry taken in", st, err)
	}
	xs, err := x.Observe(context.Background(), obs)
	if s := obs.Snapshot(context.Background()); err != nil || xs.SlurmDown || !s.Complete || len(s.Jobs) != 4 {
		t.Fatalf("execution: %+v, %v; snapshot complete %v, problems %q, %d jobs (want the anchor and 3 arrays)", xs, err, s.Complete, s.Problems, len(s.Jobs))
	}
	if r := fx.record(e); r == nil || r.State != spool.StateQueued {
		t.Fatalf("record %+v", r)
	}
}

// A pilot partition that is Hidden=YES, or closed to every group but
// glean's, is listed only by sinfo -a and scontrol -a show partition:
// gleand reads it so, takes the entry in and places pilots in it. Without
// -a its intake waited for the partition every round, forever.
func TestHiddenPilotPartitionSeen(t *testing.T) {
	fx := newFixture(t)
	m := newModel(t, fx, 8)
	m.pilot = "hidden"
	pc := policy.DefaultConfig()
	pc.PilotPartition = "pilot"
	x := NewExecutor(ExecOptions{Spool: fx.s, Policy: pc, DefaultMode: policy.Scavenger, Retries: 2, HeartbeatTimeout: time.Minute,
		PilotPartition: "pilot"}, fx.in, fx.in.records, m, &slurm.Client{R: m, Ended: true}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	e := fx.submit(t, 4, nil)
	_, helper := m.round(t, fx.in, x)
	if r := fx.record(e); r == nil || r.State != spool.StateQueued {
		t.Fatalf("record %+v: the entry was not taken in", r)
	}
	if !slices.ContainsFunc(helper, func(h string) bool { return strings.HasPrefix(h, "submit-pilots ") }) {
		t.Errorf("helper requests %q, want pilots submitted into the hidden partition", helper)
	}
}

// Without a pilot partition (partitions.pilot names none Slurm shows)
// nothing can run: gleand says so once a round at error level, naming the
// key, rather than a warning per entry; entries wait, unrejected, and are
// taken in once it exists.
func TestMissingPilotPartitionLogged(t *testing.T) {
	fx := newFixture(t)
	m := newModel(t, fx, 8)
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	fx.in.log = log
	pc := policy.DefaultConfig()
	pc.PilotPartition = "pilot"
	x := NewExecutor(ExecOptions{Spool: fx.s, Policy: pc, DefaultMode: policy.Scavenger, Retries: 2, HeartbeatTimeout: time.Minute,
		PilotPartition: "pilot"}, fx.in, fx.in.records, m, &slurm.Client{R: m, Ended: true}, log)
	first := fx.submit(t, 4, nil)
	m.round(t, fx.in, x)
	if r := fx.record(first); r == nil || r.State != spool.StateQueued {
		t.Fatalf("record %+v", r)
	}
	m.pilot = "absent" // the admin renamed it, or a typo at a reload
	var waiting []*spool.Entry
	for i := range 3 { // the executor alone (for the first job), then with the intake
		logs.Reset()
		if i > 0 {
			waiting = append(waiting, fx.submit(t, 4, nil))
		}
		fx.now = fx.now.Add(time.Second)
		m.round(t, fx.in, x)
		if n := strings.Count(logs.String(), "level=ERROR msg=\"pilot partition missing"); n != 1 || !strings.Contains(logs.String(), "partitions.pilot=pilot") {
			t.Errorf("round %d logged %d errors, want one naming partitions.pilot:\n%s", i, n, logs.String())
		}
		for _, e := range waiting {
			if r := fx.record(e); r != nil {
				t.Fatalf("round %d: entry %s %s (%s) while there is no pilot partition; want it left to wait", i, e.ID, r.State, r.Reason)
			}
		}
	}
	m.pilot = ""
	logs.Reset()
	m.round(t, fx.in, x)
	for _, e := range waiting {
		if r := fx.record(e); r == nil || r.State != spool.StateQueued {
			t.Errorf("entry %s once the partition is back: %+v", e.ID, r)
		}
	}
	if strings.Contains(logs.String(), "level=ERROR") {
		t.Errorf("errors with the partition back:\n%s", logs.String())
	}
}

// Give way: glean signals a running pilot's agent alone (TERM to the
// batch shell, recorded first) and scancels it only if it is still there
// a grace plus a margin later; a pilot already leaving is not signalled
// again.
func TestGiveWaySignalsThenEscalates(t *testing.T) {
	fx := newFixture(t)
	m := newModel(t, fx, 4)
	pc := policy.DefaultConfig()
	pc.PilotPartition = "pilot"
	pc.Grace = 10 * time.Second
	pc.MinPilotTime = time.Minute
	x := NewExecutor(ExecOptions{Spool: fx.s, Policy: pc, DefaultMode: policy.Scavenger, Retries: 2, HeartbeatTimeout: time.Minute,
		PilotPartition: "pilot"}, fx.in, fx.in.records, m, &slurm.Client{R: m, Ended: true}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	e := fx.submit(t, 40, nil)
	m.round(t, fx.in, x)
	rec := fx.record(e)
	if len(rec.PilotJobs) != 4 {
		t.Fatalf("pilots %+v", rec.PilotJobs)
	}
	for _, p := range rec.PilotJobs {
		m.start(p.ID)
	}
	m.regular["800"] = 4 // needs every node now
	fx.now = fx.now.Add(time.Second)
	_, helper := m.round(t, fx.in, x)
	signalled := slices.DeleteFunc(slices.Clone(helper), func(s string) bool { return !strings.HasPrefix(s, "signal-pilot ") })
	if len(signalled) != 4 || len(helper) != 4 {
		t.Fatalf("give way: helper %q, want 4 signal-pilot and nothing else", helper)
	}
	for _, p := range fx.record(e).PilotJobs {
		if !p.Cancelled || p.Cause != "give-way" || !p.Signalled.Equal(fx.now) || p.Killed {
			t.Errorf("pilot %+v: want recorded cancelled, give-way, signalled now", p)
		}
	}
	fx.now = fx.now.Add(pc.Grace)
	if _, helper = m.round(t, fx.in, x); len(helper) != 0 {
		t.Errorf("within the grace (+margin): helper %q, want nothing", helper)
	}
	fx.now = fx.now.Add(giveWayMargin)
	_, helper = m.round(t, fx.in, x)
	if len(helper) != 4 || !strings.HasPrefix(helper[0], "cancel-pilot ") {
		t.Errorf("past the grace: helper %q, want 4 cancel-pilot", helper)
	}
	fx.now = fx.now.Add(time.Second)
	if _, helper = m.round(t, fx.in, x); slices.ContainsFunc(helper, func(s string) bool { return strings.Contains(s, "pilot ") }) {
		t.Errorf("later: helper %q, want no pilot action", helper)
	}
}

// A pilot's pending timeout counts from squeue's submit time when that is
// later than the recorded one (an adopted pilot's intent time).
func TestPilotAgeFromSlurm(t *testing.T) {
	t0 := time.Unix(1_800_000_000, 0)
	x := &Executor{opt: ExecOptions{PilotPartition: "pilot"}, log: slog.New(slog.DiscardHandler)}
	r := &spool.Record{UID: 1, ID: "x", PilotJobs: []spool.PilotJob{{ID: "7", Submitted: t0}, {ID: "8", Submitted: t0.Add(2 * time.Second)}}}
	snap := &cluster.Snapshot{Complete: true, Jobs: []cluster.Job{
		{ID: "7", State: cluster.JobPending, Submit: t0.Add(3 * time.Second)},
		{ID: "8", State: cluster.JobPending, Submit: t0.Add(time.Second)},
	}}
	jobs := map[string]*cluster.Job{"7": &snap.Jobs[0], "8": &snap.Jobs[1]}
	var pst policy.State
	x.pilotsSeen(t0.Add(5*time.Second), r, snap, jobs, nil, &pst)
	got := map[string]time.Time{}
	for _, p := range pst.Pilots {
		got[p.ID] = p.Submitted
	}
	if !got["7"].Equal(t0.Add(3*time.Second)) || !got["8"].Equal(t0.Add(2*time.Second)) {
		t.Errorf("pilot submit times %v", got)
	}
}

// A fair job waiting for its dependency has a shadow array glean has not
// let start; before Slurm's scheduler has looked at it, squeue shows it
// under a reason that would claim nodes. No pilot gives way to it: it
// cannot start.
func TestWaitingShadowClaimsNothing(t *testing.T) {
	fx, m, x := newRound(t, 4, policy.DefaultConfig())
	e := fx.submit(t, 40, nil)
	m.round(t, fx.in, x)
	for _, p := range fx.record(e).PilotJobs {
		m.start(p.ID)
	}
	fx.slurm.mu.Lock()
	fx.slurm.jobs["700"] = QJob{ID: "700", ArrayID: "700", State: "PENDING", Reason: "JobHeldUser", Partition: "batch", User: "root"}
	fx.slurm.mu.Unlock()
	w := fx.submit(t, 4, func(e *spool.Entry, _ *QJob) {
		e.Mode, e.Shadow, e.Dependency = "fair", strconv.Itoa(nextJob+1), "afterok:700"
	})
	fx.slurm.mu.Lock()
	sj := fx.slurm.jobs[w.Shadow]
	sj.Reason = "None" // as squeue shows a job the scheduler has not looked at yet
	fx.slurm.jobs[w.Shadow] = sj
	fx.slurm.mu.Unlock()
	fx.now = fx.now.Add(time.Second)
	_, helper := m.round(t, fx.in, x)
	if r := fx.record(w); r == nil || r.State != spool.StateWaiting {
		t.Fatalf("record %+v, want waiting for its dependency", r)
	}
	if len(helper) != 0 {
		t.Errorf("helper %q: want nothing (no give-way to a shadow that cannot start, no start before the dependency)", helper)
	}
}

// A scavenger job with a budget gets pilots only within it; once its
// pilots have used it up, with tasks left and nothing to run them, the job
// ends FAILED saying so, instead of waiting for ever.
func TestBudgetSpentEndsJob(t *testing.T) {
	fx, m, x, e, pilot := budgetJob(t)
	m.start(pilot)
	fx.now = fx.now.Add(time.Second)
	if _, helper := m.round(t, fx.in, x); len(helper) != 0 {
		t.Fatalf("helper %q: want nothing while the pilot holds the whole budget", helper)
	}
	fx.now = fx.now.Add(30 * time.Minute)
	m.end(pilot, "")
	_, helper := m.round(t, fx.in, x)
	r := fx.record(e)
	if r.State != spool.StateFailed || r.Exit == 0 || !strings.Contains(r.Reason, "budget of 0.5 node-hours spent: 40 of 40 tasks not run") {
		t.Errorf("record %s exit %d %q: want failed, budget spent", r.State, r.Exit, r.Reason)
	}
	if slices.ContainsFunc(helper, func(s string) bool { return strings.HasPrefix(s, "submit-pilots") }) {
		t.Errorf("helper %q: a pilot beyond the budget", helper)
	}
}

// Of one owner's jobs, the one with a deadline gets the idle node first,
// though submitted later.
func TestDeadlineFirstAmongOwnJobs(t *testing.T) {
	fx, m, x := newRound(t, 1, policy.DefaultConfig())
	fx.submit(t, 40, nil)
	fx.now = fx.now.Add(time.Second)
	late := fx.submit(t, 40, func(e *spool.Entry, _ *QJob) { e.Deadline = fx.now.Add(time.Hour) })
	_, helper := m.round(t, fx.in, x)
	if want := "submit-pilots " + fx.record(late).DirName() + " x1"; len(helper) != 1 || helper[0] != want {
		t.Errorf("helper %q, want %q", helper, want)
	}
}

// A job with a profile starts from the runtimes of its owner's last ended
// job with that profile: its pilots are sized for tasks of about a minute,
// not for the tasks' -t of an hour, before any of its own tasks ran.
func TestProfileSeedsTaskTime(t *testing.T) {
	fx, m, x := newRound(t, 4, policy.DefaultConfig())
	profile := func(p string) func(*spool.Entry, *QJob) {
		return func(e *spool.Entry, _ *QJob) { e.Glean.Profile, e.Resources.TimeLimit = p, 60 }
	}
	// The profile's last job, ended: tasks of 60 and 80 s. An older one,
	// and one of another profile, say otherwise.
	// The newest one's tasks all failed: it teaches nothing, and the one
	// before it counts. (Taken in three at a time: the fixture's cap.)
	end := func(e *spool.Entry, at time.Duration, why string, run ...time.Duration) {
		t.Helper()
		r := fx.record(e)
		if r == nil || r.State != spool.StateQueued {
			t.Fatalf("job not taken in: %+v", r)
		}
		r.State, r.Ended = spool.StateDone, fx.now.Add(at)
		if err := fx.in.records.Put(r); err != nil {
			t.Fatal(err)
		}
		var evs []spool.Event
		for k, d := range run {
			evs = append(evs, spool.Event{Time: fx.now, Event: "task", Task: &spool.TaskEvent{Index: k, Attempt: strconv.Itoa(k),
				Start: fx.now, End: fx.now.Add(d), Reason: why, Final: true}})
		}
		if err := fx.in.records.JournalAll(r, evs); err != nil {
			t.Fatal(err)
		}
	}
	old := fx.submit(t, 2, profile("calib"))
	other := fx.submit(t, 2, profile("other"))
	last := fx.submit(t, 2, profile("calib"))
	fx.round(t)
	end(old, 0, spool.ReasonCompleted, 30*time.Minute, 40*time.Minute)
	end(other, time.Minute, spool.ReasonCompleted, 30*time.Minute, 40*time.Minute)
	end(last, 2*time.Minute, spool.ReasonCompleted, 60*time.Second, 80*time.Second)
	failed := fx.submit(t, 2, profile("calib"))
	fx.round(t)
	end(failed, 3*time.Minute, spool.ReasonFailed, time.Second, time.Second)
	e := fx.submit(t, 40, profile("calib"))
	m.round(t, fx.in, x)
	r := fx.record(e)
	if want := []time.Duration{60 * time.Second, 80 * time.Second}; !slices.Equal(r.ProfileRuntimes, want) {
		t.Fatalf("profile runtimes %v, want %v (the profile's last ended job)", r.ProfileRuntimes, want)
	}
	// p95 80 s x 1.25 + 10 s = 110 s a task; 40 tasks on 4 pilots: 10 each.
	if len(r.PilotJobs) != 4 || r.PilotJobs[0].TimeLimit != 19*time.Minute {
		t.Errorf("pilots %+v: want 4 of 19 minutes (10 tasks of 110 s, whole minutes up)", r.PilotJobs)
	}
}

// newRound is a fixture, a Slurm model of nodes n1..nodes and an executor
// with policy cfg (pilots in partition pilot, scavenger by default).
func newRound(t *testing.T, nodes int, cfg policy.Config) (*fixture, *slurmModel, *Executor) {
	t.Helper()
	fx := newFixture(t)
	m := newModel(t, fx, nodes)
	cfg.PilotPartition = "pilot"
	x := NewExecutor(ExecOptions{Spool: fx.s, Policy: cfg, DefaultMode: policy.Scavenger, Retries: 2, HeartbeatTimeout: time.Minute,
		PilotPartition: "pilot", Clock: func() time.Time { return fx.now }}, fx.in, fx.in.records, m, &slurm.Client{R: m, Ended: true}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	return fx, m, x
}
