package daemon

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/glean-hpc/glean/sidecar/cluster"
	"github.com/glean-hpc/glean/sidecar/policy"
	"github.com/glean-hpc/glean/sidecar/spool"
)

// judge decides end reasons from glean's own facts (its record of the
// pilots and the job, the snapshot), never from the agent's claim alone:
// the outcome only says whether the process exited by itself or was
// killed. Failures consume the retry budget, expected kills do not, and
// every attempt counts towards the attempt and waste caps.
func TestJudge(t *testing.T) {
	t0 := time.Unix(1_800_000_000, 0)
	pc := policy.DefaultConfig()
	pc.Grace = time.Minute
	x := &Executor{opt: ExecOptions{Retries: 2, MaxAttempts: 5, MaxWaste: 10 * time.Hour, Policy: pc}}
	// Pilots: 10 runs on n1 until t0+1h; 11 was cancelled by glean to give
	// way; 12 ran on n2 (now down); 13 ran on n3 and is gone, n3 now runs
	// another job; 14 shows PREEMPTED; 15 on n5 gone, n5 idle; 16 was
	// cancelled because its job ended.
	rec := func(state string) *spool.Record {
		return &spool.Record{State: state, PilotJobs: []spool.PilotJob{
			{ID: "10", Node: "n1", Started: t0, TimeLimit: time.Hour, End: t0.Add(time.Hour)},
			{ID: "11", Node: "n1", Cancelled: true, Cause: "give-way"},
			{ID: "12", Node: "n2", Started: t0},
			{ID: "13", Node: "n3", Started: t0, TimeLimit: time.Hour},
			{ID: "14", Node: "n4", Started: t0},
			{ID: "15", Node: "n5", Started: t0, TimeLimit: 2 * time.Hour},
			{ID: "16", Node: "n6", Cancelled: true, Cause: causeJobEnded},
			{ID: "17", Node: "n8", Started: t0, TimeLimit: time.Hour, End: t0.Add(time.Hour)},
		}}
	}
	snap := &cluster.Snapshot{Complete: true,
		Nodes: []cluster.Node{{Name: "n1", State: cluster.NodeAlloc}, {Name: "n2", State: cluster.NodeDown},
			{Name: "n3", State: cluster.NodeAlloc}, {Name: "n4", State: cluster.NodeAlloc}, {Name: "n5", State: cluster.NodeIdle},
			{Name: "n6", State: cluster.NodeIdle}},
		Jobs: []cluster.Job{
			{ID: "10", State: cluster.JobRunning, Nodes: []string{"n1"}, Start: t0, End: t0.Add(time.Hour)},
			{ID: "14", State: cluster.JobOther, RawState: "PREEMPTED", Nodes: []string{"n4"}},
			{ID: "900", State: cluster.JobRunning, Nodes: []string{"n3"}},
			{ID: "500", State: cluster.JobRunning, Nodes: []string{"n7"}, Start: t0, End: t0.Add(time.Hour)}, // a shadow element
			// 17 was scancelled by someone: completing, its End is when.
			{ID: "17", State: cluster.JobCompleting, Nodes: []string{"n8"}, Start: t0, End: t0.Add(30 * time.Minute)},
		}}
	jobs := map[string]*cluster.Job{}
	for i := range snap.Jobs {
		jobs[snap.Jobs[i].ID] = &snap.Jobs[i]
	}
	// res is an attempt of task 1 on pilot that ran 10 minutes to end.
	res := func(pilot, outcome string, exit int, end time.Time) spool.Result {
		return spool.Result{Task: 1, Attempt: "a" + pilot, Pilot: pilot, Outcome: outcome, Exit: exit,
			Start: end.Add(-10 * time.Minute), End: end}
	}
	mid := t0.Add(30 * time.Minute)
	onNode := func(r spool.Result, node string) spool.Result { r.Node = node; return r }
	failed := func(ids ...string) (evs []spool.TaskEvent) {
		for _, id := range ids {
			evs = append(evs, spool.TaskEvent{Index: 1, Attempt: id, Reason: spool.ReasonFailed})
		}
		return evs
	}
	kills := func(reason string, ids ...string) (evs []spool.TaskEvent) {
		for _, id := range ids {
			evs = append(evs, spool.TaskEvent{Index: 1, Attempt: id, Reason: reason})
		}
		return evs
	}
	for _, tc := range []struct {
		name   string
		state  string            // the job's state (default running)
		events []spool.TaskEvent // already committed
		res    spool.Result
		reason string
		final  bool
		ckpt   bool
	}{
		{name: "completed", res: res("10", spool.OutcomeExited, 0, mid), reason: spool.ReasonCompleted, final: true},
		{name: "failed, retries left", res: res("10", spool.OutcomeExited, 3, mid), reason: spool.ReasonFailed},
		{name: "failed, last retry", events: failed("x", "y"), res: res("10", spool.OutcomeExited, 3, mid), reason: spool.ReasonFailed, final: true},
		{name: "not started is a failure", res: res("10", spool.OutcomeNotStarted, 127, mid), reason: spool.ReasonFailed},
		{name: "expected kills do not consume retries", events: append(failed("x", "y"), kills(spool.ReasonGiveWay, "p")...),
			res: res("11", spool.OutcomeCheckpointed, 99, mid), reason: spool.ReasonGiveWay, ckpt: true},

		{name: "checkpointed on give-way", res: res("11", spool.OutcomeCheckpointed, 99, mid), reason: spool.ReasonGiveWay, ckpt: true},
		{name: "stopped on give-way, no checkpoint", res: res("11", spool.OutcomeHandedBack, 143, mid), reason: spool.ReasonGiveWay},
		{name: "killed on give-way", res: res("11", spool.OutcomeSignaled, 137, mid), reason: spool.ReasonGiveWay},
		{name: "even an exit the task chose on give-way is its own failure", res: res("11", spool.OutcomeExited, 1, mid), reason: spool.ReasonFailed},

		{name: "time limit: ended within the grace of the pilot's end", res: res("10", spool.OutcomeCheckpointed, 99, t0.Add(time.Hour-50*time.Second)),
			reason: spool.ReasonTimeLimit, ckpt: true},
		{name: "time limit from the recorded start + limit once the pilot is gone", res: res("13", spool.OutcomeHandedBack, 143, t0.Add(time.Hour-30*time.Second)),
			reason: spool.ReasonTimeLimit},
		{name: "killed long before the time limit is no time limit", res: res("10", spool.OutcomeSignaled, 137, t0.Add(time.Hour-5*time.Minute)),
			reason: spool.ReasonFailed},

		{name: "node failure: the node is down", res: res("12", spool.OutcomeHandedBack, 143, mid), reason: spool.ReasonNodeFailure},
		{name: "node failure beats a signal", res: res("12", spool.OutcomeSignaled, 137, mid), reason: spool.ReasonNodeFailure},
		{name: "a task that exits 1 on a failing node still failed", res: res("12", spool.OutcomeExited, 1, mid), reason: spool.ReasonFailed},

		{name: "preempted: Slurm shows it", res: res("14", spool.OutcomeHandedBack, 143, mid), reason: spool.ReasonPreempted},
		{name: "preempted: pilot gone, its node runs another job", res: res("13", spool.OutcomeSignaled, 143, mid), reason: spool.ReasonPreempted},

		{name: "pilot lost: the agent stopped it, nothing explains why", res: res("15", spool.OutcomeHandedBack, 143, mid), reason: spool.ReasonLost},
		{name: "pilot lost: scancelled, its completing End is no time limit", res: res("17", spool.OutcomeCheckpointed, 99, mid), reason: spool.ReasonLost, ckpt: true},
		{name: "a signal nobody explains is the task's failure (OOM)", res: res("15", spool.OutcomeSignaled, 137, mid), reason: spool.ReasonFailed},
		{name: "a claim of a checkpoint from a pilot glean does not know is no give-way", res: res("99", spool.OutcomeCheckpointed, 99, mid),
			reason: spool.ReasonLost, ckpt: true},

		{name: "a shadow element at its time limit", res: res("500", spool.OutcomeHandedBack, 143, t0.Add(time.Hour-30*time.Second)),
			reason: spool.ReasonTimeLimit},
		{name: "a shadow element on a node that went down", res: onNode(res("500", spool.OutcomeSignaled, 137, mid), "n2"),
			reason: spool.ReasonNodeFailure},
		{name: "a shadow element stopped early, nothing explains it", res: res("500", spool.OutcomeHandedBack, 143, mid), reason: spool.ReasonLost},

		{name: "cancelled: the job was cancelled", state: spool.StateCancelled, res: res("10", spool.OutcomeHandedBack, 143, mid), reason: spool.ReasonCancelled},
		{name: "cancelled: glean cancelled the pilot of an ended job", res: res("16", spool.OutcomeHandedBack, 143, mid), reason: spool.ReasonCancelled},

		{name: "attempts capped", events: append(kills(spool.ReasonGiveWay, "p", "q", "r"), kills(spool.ReasonLost, "s")...),
			res: res("11", spool.OutcomeCheckpointed, 99, mid), reason: spool.ReasonFailed, final: true, ckpt: true},
		{name: "waste capped: a task that always checkpoints", events: []spool.TaskEvent{{Index: 1, Attempt: "w", Reason: spool.ReasonGiveWay,
			Start: t0, End: t0.Add(9*time.Hour + 55*time.Minute)}},
			res: res("11", spool.OutcomeCheckpointed, 99, mid), reason: spool.ReasonFailed, final: true, ckpt: true},
		{name: "completed on the last attempt is completed", events: kills(spool.ReasonGiveWay, "p", "q", "r", "s"),
			res: res("10", spool.OutcomeExited, 0, mid), reason: spool.ReasonCompleted, final: true},
		{name: "a second completion is a duplicate", events: []spool.TaskEvent{{Index: 1, Attempt: "z", Reason: spool.ReasonCompleted, Final: true}},
			res: res("10", spool.OutcomeExited, 0, mid), reason: spool.ReasonDuplicate},
	} {
		t.Run(tc.name, func(t *testing.T) {
			state := tc.state
			if state == "" {
				state = spool.StateRunning
			}
			ev := x.judge(rec(state), newBook(tc.events), tc.res, snap, jobs)
			if ev.Reason != tc.reason || ev.Final != tc.final || ev.Checkpointed != tc.ckpt {
				t.Errorf("got %s final=%v checkpointed=%v (%s), want %s final=%v checkpointed=%v",
					ev.Reason, ev.Final, ev.Checkpointed, ev.Detail, tc.reason, tc.final, tc.ckpt)
			}
			if ev.Final && ev.Reason == spool.ReasonFailed && ev.Exit == 0 {
				t.Errorf("a task failed for good with exit 0")
			}
		})
	}
}

func TestBook(t *testing.T) {
	t0 := time.Unix(1_800_000_000, 0)
	var evs []spool.TaskEvent
	for i := 0; i < 20; i++ {
		evs = append(evs, spool.TaskEvent{Index: i, Attempt: string(rune('a' + i)), Reason: spool.ReasonCompleted, Final: true,
			Start: t0, End: t0.Add(time.Duration(10+i) * time.Second)})
	}
	evs = append(evs, spool.TaskEvent{Index: 30, Attempt: "f1", Reason: spool.ReasonFailed, Exit: 3, Final: true},
		spool.TaskEvent{Index: 31, Attempt: "f2", Reason: spool.ReasonFailed, Exit: 7},
		spool.TaskEvent{Index: 31, Attempt: "f3", Reason: spool.ReasonCompleted, Final: true})
	b := newBook(evs)
	if b.exit != 3 {
		t.Errorf("exit %d, want 3 (task 31's 7 was retried and completed)", b.exit)
	}
	// p95 of 10..29 s is the 19th of 20: 28 s; plus a quarter and 10 s.
	if got, want := b.taskTime(&spool.Record{}), 28*time.Second+7*time.Second+10*time.Second; got != want {
		t.Errorf("taskTime %v, want %v", got, want)
	}
	if got := newBook(nil).taskTime(&spool.Record{Entry: &spool.Entry{Resources: spool.Resources{TimeLimit: 7}}}); got != 7*time.Minute {
		t.Errorf("taskTime from -t: %v", got)
	}
}

// A lease whose pilot died is taken back under a reason from the facts:
// node-failure when its node is down, pilot-lost when nothing explains it;
// neither consumes a retry, and each is committed once.
func TestLostLeaseReason(t *testing.T) {
	for _, tc := range []struct {
		name   string
		node   cluster.NodeState
		reason string
	}{
		{"node down", cluster.NodeDown, spool.ReasonNodeFailure},
		{"nothing explains it", cluster.NodeIdle, spool.ReasonLost},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fx := newFixture(t)
			e := fx.submit(t, 2, nil)
			fx.round(t)
			name := spool.RecordName(fx.uid, e.ID)
			r := fx.in.Get(name)
			if r == nil || r.State != spool.StateQueued {
				t.Fatalf("record %+v", r)
			}
			r.PilotJobs = []spool.PilotJob{{ID: "12", Node: "n2", Started: fx.now.Add(-time.Hour), TimeLimit: 10 * time.Hour}}
			w, err := fx.s.OpenWork(fx.uid, e.ID)
			if err != nil {
				t.Fatal(err)
			}
			task, err := w.Take(e.TaskIndices(), spool.Lease{Attempt: "lost1", Pilot: "12", Node: "n2", Started: fx.now.Add(-time.Hour)})
			if err != nil {
				t.Fatal(err)
			}
			old := fx.now.Add(-2 * time.Minute)
			if err := os.Chtimes(w.LeasePath(task), old, old); err != nil {
				t.Fatal(err)
			}
			x := NewExecutor(ExecOptions{Spool: fx.s, Retries: 2, HeartbeatTimeout: time.Minute}, fx.in, fx.in.records, nil, nil,
				slog.New(slog.NewTextHandler(io.Discard, nil)))
			snap := &cluster.Snapshot{Complete: true, Nodes: []cluster.Node{{Name: "n2", State: tc.node}}}
			for range 2 { // the second round finds nothing more to commit
				b, err := x.book(r)
				if err != nil {
					t.Fatal(err)
				}
				x.work(fx.now, r, b, snap, map[string]*cluster.Job{})
			}
			evs, err := fx.in.records.TaskEvents(name)
			if err != nil {
				t.Fatal(err)
			}
			if len(evs) != 1 || evs[0].Reason != tc.reason || evs[0].Final || evs[0].Attempt != "lost1" || evs[0].Index != task {
				t.Fatalf("events %+v; want one %s attempt lost1 of task %d, not final", evs, tc.reason, task)
			}
		})
	}
}

// A round's results of a job are committed with one journal append; when
// that fails nothing is removed and the book is read again next round, so
// no result is lost or committed twice.
func TestCommitBatch(t *testing.T) {
	fx := newFixture(t)
	e := fx.submit(t, 5, nil)
	fx.round(t)
	name := spool.RecordName(fx.uid, e.ID)
	r := fx.in.Get(name)
	w, err := fx.s.OpenWork(fx.uid, e.ID)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		if err := w.Finish(spool.Result{Task: i, Attempt: fmt.Sprintf("a%d", i), Pilot: "1", Outcome: spool.OutcomeExited,
			Start: fx.now.Add(-time.Second), End: fx.now}); err != nil {
			t.Fatal(err)
		}
	}
	x := NewExecutor(ExecOptions{Spool: fx.s, Retries: 2, HeartbeatTimeout: time.Minute}, fx.in, fx.in.records, nil, nil,
		slog.New(slog.NewTextHandler(io.Discard, nil)))
	journal := filepath.Join(fx.s.Dir, spool.JobsDir, name, spool.JournalFile)
	saved, err := os.ReadFile(journal)
	if err != nil {
		t.Fatal(err)
	}
	b, err := x.book(r)
	if err != nil {
		t.Fatal(err)
	}
	// The journal cannot be appended to (a directory in its place).
	if err := os.Remove(journal); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(journal, 0o755); err != nil {
		t.Fatal(err)
	}
	if c, _, _, _, ok := x.work(fx.now, r, b, &cluster.Snapshot{Complete: true}, nil); ok || c != 0 {
		t.Fatalf("work with a broken journal: %d committed, ok %v", c, ok)
	}
	if ws, _ := fx.s.ScanWork(fx.uid, e.ID); len(ws.Results) != 5 {
		t.Fatalf("%d results left, want all 5", len(ws.Results))
	}
	if err := os.Remove(journal); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(journal, saved, 0o644); err != nil {
		t.Fatal(err)
	}
	b, err = x.book(r)
	if err != nil {
		t.Fatal(err)
	}
	if c, _, _, _, ok := x.work(fx.now, r, b, &cluster.Snapshot{Complete: true}, nil); !ok || c != 5 || len(b.final) != 5 {
		t.Fatalf("work: %d committed, ok %v, book %d final", c, ok, len(b.final))
	}
	evs, _ := fx.in.records.TaskEvents(name)
	data, _ := os.ReadFile(journal)
	if len(evs) != 5 || bytes.Count(data, []byte("\n")) != bytes.Count(saved, []byte("\n"))+5 {
		t.Errorf("journal: %d task events; want 5, appended once", len(evs))
	}
	if ws, _ := fx.s.ScanWork(fx.uid, e.ID); len(ws.Results) != 0 {
		t.Errorf("%d results left after the commit", len(ws.Results))
	}
}

func TestBackoff(t *testing.T) {
	var b backoff
	t0 := time.Unix(1_800_000_000, 0)
	steps := []struct {
		failed  bool
		delay   time.Duration
		changed bool
	}{
		{false, 0, false},
		{true, time.Second, true},
		{true, 2 * time.Second, false},
		{true, 4 * time.Second, false},
		{true, 8 * time.Second, false},
		{true, 16 * time.Second, false},
		{true, 30 * time.Second, false},
		{true, 30 * time.Second, false},
		{false, 0, true},
		{true, time.Second, true},
	}
	for i, s := range steps {
		d, changed := b.next(s.failed, time.Second, t0)
		if d != s.delay || changed != s.changed || (s.failed && !b.until.Equal(t0.Add(d))) {
			t.Errorf("step %d: delay %v changed %v, want %v %v", i, d, changed, s.delay, s.changed)
		}
	}
}

// slowActor fails every call after a delay, as helper calls do while
// slurmctld is down.
type slowActor struct {
	delay time.Duration
	calls int
}

func (a *slowActor) fail() error {
	a.calls++
	time.Sleep(a.delay) // the call's own duration (a Slurm timeout), not a wait for a condition
	return errors.New("slurm timeout")
}
func (a *slowActor) SubmitPilots(context.Context, string, []spool.PilotJob) ([]string, error) {
	return nil, a.fail()
}
func (a *slowActor) CancelPilot(context.Context, string, string) error        { return a.fail() }
func (a *slowActor) SignalPilot(context.Context, string, string) error        { return a.fail() }
func (a *slowActor) CancelPendingPilot(context.Context, string, string) error { return a.fail() }
func (a *slowActor) CancelPending(context.Context, string) error              { return a.fail() }
func (a *slowActor) Release(context.Context, string) error                    { return a.fail() }
func (a *slowActor) StartShadow(context.Context, string) error                { return a.fail() }

// Once a Slurm call failed slowly, the rest of the round's calls are
// skipped at once; a fast failure (a refusal) stops nothing.
func TestStallGuard(t *testing.T) {
	for _, tc := range []struct {
		delay time.Duration
		calls int // of 3 attempted
	}{{0, 3}, {20 * time.Millisecond, 1}} {
		a := &slowActor{delay: tc.delay}
		g := &stallGuard{Actor: a, stall: &stall{slow: 10 * time.Millisecond}}
		for i := 0; i < 3; i++ {
			_ = g.CancelPilot(context.Background(), "r", "1")
		}
		if a.calls != tc.calls {
			t.Errorf("failing after %v: %d calls reached Slurm, want %d", tc.delay, a.calls, tc.calls)
		}
	}
}

// slowHolds is Privileged whose holds fail after delay; the rest is fakeSlurm.
type slowHolds struct {
	*fakeSlurm
	a *slowActor
}

func (s *slowHolds) Hold(context.Context, string) error { return s.a.fail() }

// The intake's holds share the round's stall: once one failed slowly
// (slurmctld went away after the round's snapshot), the round's other
// holds are skipped and tried next round, so that a round with many fresh
// submissions does not wait for one timeout each (and outlast the
// watchdog, WorstRound).
func TestIntakeStallGuard(t *testing.T) {
	for _, tc := range []struct {
		name  string
		delay time.Duration
		holds int // of 3 fresh submissions in one round
	}{
		{"fast failures: every hold tried", 0, 3},
		{"a slow failure: the round's other holds skipped", 20 * time.Millisecond, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fx := newFixture(t)
			p := &slowHolds{fakeSlurm: fx.slurm, a: &slowActor{delay: tc.delay}}
			in, err := NewIntake(Options{Spool: fx.s, AnchorPartition: "glean", PilotPartition: "pilot", Limits: fx.in.opt.Limits},
				fx.in.records, fx.slurm, p, fx.slurm, fx.in.log)
			if err != nil {
				t.Fatal(err)
			}
			for i := 0; i < 3; i++ {
				fx.submit(t, 2, nil)
			}
			obs := &Observation{Now: fx.now, queue: fx.slurm, sizer: fx.slurm, stall: stall{slow: 10 * time.Millisecond}}
			st, err := in.Observe(context.Background(), obs)
			if err != nil {
				t.Fatal(err)
			}
			if p.a.calls != tc.holds || st.Accepted != 0 {
				t.Errorf("%d holds reached Slurm (want %d), %d accepted (want 0)", p.a.calls, tc.holds, st.Accepted)
			}
		})
	}
}

// shadowActor records how the execution path lets a shadow array start.
type shadowActor struct {
	Actor // nil: any other call panics
	calls []string
}

func (a *shadowActor) Release(_ context.Context, id string) error {
	a.calls = append(a.calls, "release "+id)
	return nil
}

func (a *shadowActor) StartShadow(_ context.Context, id string) error {
	a.calls = append(a.calls, "start "+id)
	return nil
}

// A shadow array waits behind the wrapper's begin time and is started by
// moving it to now, never by a release, which under priority/basic would
// put it behind every job submitted since, and which would not move the
// begin time anyway; a hold on it stays (its holder's, glean puts none).
// One submitted held (a job with Slurm's --deadline, an older wrapper's) is
// released; one whose elements started already needs nothing.
func TestStartShadow(t *testing.T) {
	now := time.Date(2026, 11, 25, 1, 0, 0, 0, time.UTC)
	gate := now.Add(365 * 24 * time.Hour)
	el := func(id, state, reason string, start time.Time) cluster.Job {
		st := cluster.JobPending
		if state == "R" {
			st = cluster.JobRunning
		}
		return cluster.Job{ID: id, ArrayJobID: "50", State: st, Reason: reason, Start: start}
	}
	var none time.Time
	for _, tc := range []struct {
		name     string
		jobs     []cluster.Job
		complete bool
		want     string
		started  bool
	}{
		{"behind its begin time", []cluster.Job{el("50", "PD", "BeginTime", gate)}, true, "start 50", true},
		{"reason not yet set", []cluster.Job{el("50", "PD", "None", gate)}, true, "start 50", true},
		{"behind a dependency too", []cluster.Job{el("50", "PD", "Dependency", gate)}, true, "start 50", true},
		{"held by its user behind the gate: the hold stays", []cluster.Job{el("50", "PD", "JobHeldUser", gate)}, true, "start 50", true},
		{"on an admin hold behind the gate: never released", []cluster.Job{el("50", "PD", "JobHeldAdmin", gate)}, true, "start 50", true},
		{"submitted held (--deadline, an older wrapper)", []cluster.Job{el("50", "PD", "JobHeldUser", none)}, true, "release 50", true},
		{"on an admin hold glean did not put: left alone", []cluster.Job{el("50", "PD", "JobHeldAdmin", none)}, true, "", true},
		{"an older gleand's admin hold (its record): released", []cluster.Job{el("50", "PD", "JobHeldAdmin", none)}, true, "release 50 (old record)", true},
		{"free to start already", []cluster.Job{el("50", "PD", "Priority", now.Add(time.Hour))}, true, "", true},
		{"started before the record said so", []cluster.Job{el("51", "R", "None", now), el("50", "PD", "Resources", gate)}, true, "", true},
		{"gone", nil, true, "", true},
		{"not seen, Slurm not answering in full", nil, false, "", false},
		{"another job's", []cluster.Job{{ID: "60", ArrayJobID: "60", State: cluster.JobPending, Reason: "BeginTime", Start: gate}}, false, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := &shadowActor{}
			x := &Executor{act: a, log: slog.New(slog.NewTextHandler(io.Discard, nil))}
			want, oldRecord := strings.CutSuffix(tc.want, " (old record)")
			got := x.startShadow(context.Background(), now, &spool.Record{Shadow: "50", ShadowUnheld: !oldRecord}, &cluster.Snapshot{Jobs: tc.jobs, Complete: tc.complete})
			if got != tc.started || strings.Join(a.calls, ",") != want {
				t.Errorf("started %v, calls %q; want %v, %q", got, a.calls, tc.started, tc.want)
			}
		})
	}
}

// Until Slurm's scheduler has seen a new shadow array, squeue gives it a
// reason the policy counts as a claimant; a shadow array glean has not let
// start (recorded or not yet taken in: by its comment) is shown waiting
// for its begin time, so that no pilot gives way to it. A regular job
// behind UNLIMITED pilots, whose expected start is a year ahead too, stays
// a claimant.
func TestNotYet(t *testing.T) {
	now := time.Date(2026, 11, 25, 1, 0, 0, 0, time.UTC)
	sh := spool.ShadowComment("0190aaaaaaaa-12345678", "n")
	snap := &cluster.Snapshot{Jobs: []cluster.Job{
		{ID: "50", ArrayJobID: "50", State: cluster.JobPending, Reason: "None", Comment: sh},
		{ID: "51", ArrayJobID: "50", State: cluster.JobPending, Reason: "Dependency", Comment: sh},
		{ID: "52", ArrayJobID: "50", State: cluster.JobRunning, Reason: "None", Comment: sh},
		{ID: "53", ArrayJobID: "53", State: cluster.JobPending, Reason: "Resources", Comment: sh}, // let start
		{ID: "60", ArrayJobID: "60", State: cluster.JobPending, Reason: "Resources", Start: now.Add(365 * 24 * time.Hour)},
	}}
	notYet(snap, map[string]bool{"53": true})
	var got []string
	for _, j := range snap.Jobs {
		got = append(got, j.ID+":"+j.Reason)
	}
	if want := "50:BeginTime 51:Dependency 52:None 53:Resources 60:Resources"; strings.Join(got, " ") != want {
		t.Errorf("reasons %q, want %q", got, want)
	}
}
