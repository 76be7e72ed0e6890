package daemon

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/glean-hpc/glean/sidecar/cluster"
	"github.com/glean-hpc/glean/sidecar/policy"
	"github.com/glean-hpc/glean/sidecar/privhelper"
	"github.com/glean-hpc/glean/sidecar/spool"
)

// submits counts a round's submit-pilots requests.
func submits(helper []string) int {
	n := 0
	for _, h := range helper {
		if strings.HasPrefix(h, "submit-pilots ") {
			n++
		}
	}
	return n
}

// livePilotIDs are the ids of r's pilots not seen to end.
func livePilotIDs(r *spool.Record) []string {
	var ids []string
	for _, p := range r.PilotJobs {
		if p.ID != "" && p.Ended.IsZero() {
			ids = append(ids, p.ID)
		}
	}
	return ids
}

// runOneTask starts e's first live pilot and has it complete one task,
// over two rounds a second apart; it returns the pilot's id.
func runOneTask(t *testing.T, fx *fixture, m *slurmModel, x *Executor, e *spool.Entry) string {
	t.Helper()
	id := livePilotIDs(fx.record(e))[0]
	m.start(id)
	fx.now = fx.now.Add(time.Second)
	m.round(t, fx.in, x)
	fx.finishTasks(t, e.ID, 1, id)
	fx.now = fx.now.Add(time.Second)
	m.round(t, fx.in, x)
	return id
}

// Pilots whose agent dies at start (they end seconds after they start,
// having run no task) are not resubmitted every round: after three in a
// row the job gets no new pilot for a minute, then two, and glean show
// says why, with the agent's last error when it left a log. A pilot that
// runs a task ends the hold.
func TestDeadStartHoldsPilots(t *testing.T) {
	fx, m, x := newRound(t, 2, policy.DefaultConfig())
	e := fx.submit(t, 40, nil)
	_, helper := m.round(t, fx.in, x)
	if submits(helper) != 1 || len(livePilotIDs(fx.record(e))) != 2 {
		t.Fatalf("helper %q, pilots %+v: want 2 pilots", helper, fx.record(e).PilotJobs)
	}
	// die starts and ends every live pilot before the next round.
	die := func() []string {
		t.Helper()
		ids := livePilotIDs(fx.record(e))
		for _, id := range ids {
			m.start(id)
		}
		fx.now = fx.now.Add(time.Second)
		m.round(t, fx.in, x) // seen running
		for _, id := range ids {
			m.end(id, "exit")
		}
		fx.now = fx.now.Add(time.Second)
		_, helper := m.round(t, fx.in, x) // seen gone
		if n := submits(helper); n != 0 && fx.record(e).PilotTrouble != "" {
			t.Errorf("helper %q: pilots submitted in the round that held them back", helper)
		}
		return ids
	}
	first := die()
	if r := fx.record(e); r.PilotTrouble != "" || len(livePilotIDs(r)) != 2 {
		t.Fatalf("after 2 dead starts: trouble %q, pilots %v: want no hold yet, 2 new pilots", r.PilotTrouble, livePilotIDs(r))
	}
	// The second pair's first pilot left a log with an error.
	second := livePilotIDs(fx.record(e))
	work, err := fx.s.OpenWork(fx.uid, e.ID)
	if err != nil {
		t.Fatal(err)
	}
	log := "time=x level=INFO msg=glean-agent\ntime=x level=ERROR msg=\"glean-agent pilot\" err=\"cannot run \x1b[31mtasks\"\ntime=x level=INFO msg=bye\n"
	if err := os.WriteFile(filepath.Join(work.Dir, spool.LogsDir, "pilot-"+second[1]+".log"), []byte(log), 0o640); err != nil {
		t.Fatal(err)
	}
	die()
	r := fx.record(e)
	if !strings.Contains(r.PilotTrouble, "4 pilots in a row ended by themselves right after they started, without running a task; the last, "+second[1]) ||
		!strings.Contains(r.PilotTrouble, `err="cannot run  [31mtasks"`) {
		t.Fatalf("trouble %q: want 4 in a row, the last one's logged error (control characters blanked)", r.PilotTrouble)
	}
	if ids := livePilotIDs(r); len(ids) != 0 {
		t.Fatalf("pilots %v submitted while held", ids)
	}
	for _, wait := range []time.Duration{30 * time.Second, 25 * time.Second} {
		fx.now = fx.now.Add(wait)
		if _, helper := m.round(t, fx.in, x); submits(helper) != 0 {
			t.Fatalf("helper %q %v into the hold: want no pilot", helper, wait)
		}
	}
	fx.now = fx.now.Add(10 * time.Second) // the minute is over
	if _, helper := m.round(t, fx.in, x); submits(helper) != 1 {
		t.Fatalf("helper %q after the hold: want pilots again", helper)
	}
	// Those die too, and left no log: a hold of two minutes.
	third := die()
	r = fx.record(e)
	if !strings.Contains(r.PilotTrouble, "6 pilots in a row") || !strings.Contains(r.PilotTrouble, "never opened its log (logs/pilot-"+third[1]+".log") {
		t.Fatalf("trouble %q: want 6 in a row, no log", r.PilotTrouble)
	}
	fx.now = fx.now.Add(90 * time.Second)
	if _, helper := m.round(t, fx.in, x); submits(helper) != 0 {
		t.Fatalf("helper %q 90 s into a 2-minute hold", helper)
	}
	fx.now = fx.now.Add(31 * time.Second)
	if _, helper := m.round(t, fx.in, x); submits(helper) != 1 {
		t.Fatalf("helper %q after the 2-minute hold: want pilots again", helper)
	}
	// One of these runs a task: the trouble is over.
	worker := runOneTask(t, fx, m, x, e)
	if r := fx.record(e); r.PilotTrouble != "" || x.deadStarts[r.DirName()] != nil {
		t.Fatalf("trouble %q, %+v after a pilot ran a task: want none", r.PilotTrouble, x.deadStarts[r.DirName()])
	}
	if slices.Contains(first, worker) {
		t.Fatal("a pilot id reused")
	}
}

// Pilots that ran a few minutes before ending (an agent that idled out)
// did not die at start: no hold, however many.
func TestDeadStartIgnoresLongerRuns(t *testing.T) {
	fx, m, x := newRound(t, 2, policy.DefaultConfig())
	e := fx.submit(t, 40, nil)
	m.round(t, fx.in, x)
	for range 3 {
		ids := livePilotIDs(fx.record(e))
		for _, id := range ids {
			m.start(id)
		}
		fx.now = fx.now.Add(time.Second)
		m.round(t, fx.in, x)
		fx.now = fx.now.Add(3 * time.Minute) // ran three minutes, no task seen
		for _, id := range ids {
			m.end(id, "exit")
		}
		if _, helper := m.round(t, fx.in, x); submits(helper) != 1 {
			t.Fatalf("helper %q: want new pilots (these ran for minutes)", helper)
		}
	}
	if r := fx.record(e); r.PilotTrouble != "" {
		t.Errorf("trouble %q: want none", r.PilotTrouble)
	}
}

// One bad node: its pilots die at start while the job's pilots elsewhere
// run tasks (so the job is never held). After three in a row there, no
// new pilot goes to that node; the others keep theirs.
func TestDeadStartHoldsANode(t *testing.T) {
	fx, m, x := newRound(t, 3, policy.DefaultConfig())
	e := fx.submit(t, 40, nil)
	m.round(t, fx.in, x)
	on := func(node string) string {
		for _, p := range fx.record(e).PilotJobs {
			if p.Node == node && p.Ended.IsZero() && p.ID != "" {
				return p.ID
			}
		}
		return ""
	}
	good, old := on("n2"), on("n1")
	for _, id := range livePilotIDs(fx.record(e)) {
		m.start(id)
	}
	fx.now = fx.now.Add(time.Second)
	m.round(t, fx.in, x)
	fx.finishTasks(t, e.ID, 1, good) // n2's pilot runs a task
	// n1's first pilot ran a task too, and ended after a while; the node
	// broke since: its record, listed for an hour, must not end n1's run.
	w, err := fx.s.OpenWork(fx.uid, e.ID)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Finish(spool.Result{Task: 1, Attempt: "old", Pilot: old, Node: "n1", Outcome: spool.OutcomeExited,
		Start: fx.now.Add(-time.Second), End: fx.now}); err != nil {
		t.Fatal(err)
	}
	fx.now = fx.now.Add(5 * time.Minute)
	m.end(old, "done")
	m.round(t, fx.in, x)
	for k := 1; k <= 3; k++ {
		bad := on("n1")
		if bad == "" {
			t.Fatalf("dead start %d: no pilot on n1 (%+v)", k, fx.record(e).PilotJobs)
		}
		m.start(bad)
		fx.now = fx.now.Add(time.Second)
		m.round(t, fx.in, x)
		m.end(bad, "exit")
		fx.now = fx.now.Add(time.Second)
		m.round(t, fx.in, x)
	}
	if on("n1") != "" {
		t.Fatalf("a pilot on n1 after 3 died there: %+v", fx.record(e).PilotJobs)
	}
	if r := fx.record(e); r.PilotTrouble != "" || x.holding(r.DirName(), fx.now) {
		t.Errorf("job held (%q): its pilots elsewhere run tasks", r.PilotTrouble)
	}
	if held := x.heldNodes(fx.uid, fx.now); !slices.Equal(held, []string{"n1"}) {
		t.Errorf("held nodes %v, want [n1]", held)
	}
	fx.now = fx.now.Add(61 * time.Second)
	m.round(t, fx.in, x)
	if on("n1") == "" {
		t.Errorf("no pilot on n1 after its hold: %+v", fx.record(e).PilotJobs)
	}
	fx.now = fx.now.Add(2 * time.Hour)
	m.round(t, fx.in, x)
	if len(x.deadNodes) != 0 {
		t.Errorf("node runs %v two hours after the last dead start: want them forgotten", x.deadNodes)
	}
}

// A restarted gleand has no run of dead starts in memory: the trouble a
// record still shows ends when one of the job's pilots runs a task.
func TestDeadStartTroubleEndsAfterRestart(t *testing.T) {
	fx, m, x := newRound(t, 1, policy.DefaultConfig())
	e := fx.submit(t, 40, nil)
	m.round(t, fx.in, x)
	r := fx.record(e)
	r.PilotTrouble = "3 pilots in a row ended without running a task (the last gleand's)"
	if err := fx.in.records.Put(r); err != nil {
		t.Fatal(err)
	}
	id := livePilotIDs(r)[0]
	m.start(id)
	fx.now = fx.now.Add(time.Second)
	m.round(t, fx.in, x)
	if r := fx.record(e); r.PilotTrouble == "" {
		t.Fatal("trouble cleared before any pilot ran a task")
	}
	fx.finishTasks(t, e.ID, 1, id)
	fx.now = fx.now.Add(time.Second)
	m.round(t, fx.in, x)
	if r := fx.record(e); r.PilotTrouble != "" {
		t.Errorf("trouble %q after a pilot ran a task", r.PilotTrouble)
	}
}

// What counts as dying at start: Slurm shows the pilot ended by itself
// (its agent exited) within 20 s of its start, and glean had not told it
// to go.
func TestDiedAtStart(t *testing.T) {
	t0 := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	job := func(state string, ran time.Duration) *cluster.Job {
		return &cluster.Job{ID: "7", RawState: state, Start: t0, End: t0.Add(ran)}
	}
	for _, tc := range []struct {
		name string
		p    spool.PilotJob
		j    *cluster.Job
		want bool
	}{
		{"agent failed at once", spool.PilotJob{}, job("FAILED", time.Second), true},
		{"agent exited 0 at once", spool.PilotJob{}, job("COMPLETED", 19*time.Second), true},
		{"ran 20 s: not at start (an idle-out is 30 s)", spool.PilotJob{}, job("COMPLETED", 20*time.Second), false},
		{"cancelled (by anyone)", spool.PilotJob{}, job("CANCELLED", time.Second), false},
		{"node lost", spool.PilotJob{}, job("NODE_FAIL", time.Second), false},
		{"preempted", spool.PilotJob{}, job("PREEMPTED", time.Second), false},
		{"no longer listed", spool.PilotJob{}, nil, false},
		{"no start known", spool.PilotJob{}, &cluster.Job{RawState: "FAILED", End: t0}, false},
		{"glean signalled it to give way", spool.PilotJob{Signalled: t0}, job("COMPLETED", time.Second), false},
		{"glean retired it", spool.PilotJob{Retiring: true}, job("COMPLETED", time.Second), false},
		{"glean cancelled it", spool.PilotJob{Cancelled: true}, job("FAILED", time.Second), false},
		{"glean killed it", spool.PilotJob{Killed: true}, job("FAILED", time.Second), false},
	} {
		if got := diedAtStart(&tc.p, tc.j); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// A run's holds: none before 3 in a row (on enough nodes), then 1 min
// doubling to a 30-min cap; none started while one runs (its pilots were
// submitted before it); a run an hour old starts over.
func TestDeadStartHolds(t *testing.T) {
	t0 := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	var d deadStart
	if d.add(t0, 2, "n1", "n1", "n1") {
		t.Fatal("a hold for 3 on one node, 2 nodes wanted")
	}
	if !d.add(t0, 2, "n2") || d.delay != time.Minute {
		t.Fatalf("4 on 2 nodes: hold %v, want 1m", d.delay)
	}
	if d.add(t0.Add(30*time.Second), 2, "n1") {
		t.Fatal("a new hold while one runs")
	}
	at := t0
	for _, want := range []time.Duration{2, 4, 8, 16, 30, 30} {
		at = d.until
		if !d.add(at, 2, "n1") || d.delay != want*time.Minute || !d.until.Equal(at.Add(want*time.Minute)) {
			t.Fatalf("hold %v until %v, want %v from %v", d.delay, d.until, want*time.Minute, at)
		}
	}
	if d.add(d.until.Add(2*time.Hour), 2, "n1") || d.fails != 1 || d.delay != 0 {
		t.Errorf("after an hour without a dead start: %+v, want a new run of 1", d)
	}
}

// A pilot that runs tasks ends the job's run only if it was submitted
// after the last dead start: a long-running pilot's agent started before
// whatever broke, and the job's new pilots die on two nodes.
func TestDeadStartOldWorkerEndsNoRun(t *testing.T) {
	fx, m, x := newRound(t, 3, policy.DefaultConfig())
	e := fx.submit(t, 40, nil)
	m.round(t, fx.in, x)
	ids := livePilotIDs(fx.record(e))
	for _, id := range ids {
		m.start(id)
	}
	fx.now = fx.now.Add(time.Second)
	m.round(t, fx.in, x)
	worker := ""
	for _, p := range fx.record(e).PilotJobs {
		if p.Node == "n3" {
			worker = p.ID
		}
	}
	fx.finishTasks(t, e.ID, 1, worker)
	for range 2 {
		var young []string
		for _, id := range livePilotIDs(fx.record(e)) {
			if id != worker {
				young = append(young, id)
				m.start(id)
			}
		}
		fx.now = fx.now.Add(time.Second)
		m.round(t, fx.in, x)
		for _, id := range young {
			m.end(id, "exit")
		}
		fx.now = fx.now.Add(time.Second)
		m.round(t, fx.in, x)
	}
	if r := fx.record(e); !x.holding(r.DirName(), fx.now) || r.PilotTrouble == "" {
		t.Errorf("4 dead starts on n1 and n2 while an older pilot works on n3: held %v, trouble %q: want held",
			x.holding(r.DirName(), fx.now), r.PilotTrouble)
	}
}

// A pilot that ends at once while no task waits (others hold them all)
// had nothing to run: not a dead start (glean cancels such a surplus
// pilot; had it not, no task waited).
func TestDeadStartNotWhenNothingWaits(t *testing.T) {
	fx, m, x := newRound(t, 2, policy.DefaultConfig())
	e := fx.submit(t, 2, nil)
	m.round(t, fx.in, x)
	ids := livePilotIDs(fx.record(e))
	if len(ids) != 2 {
		t.Fatalf("pilots %v, want 2", ids)
	}
	for _, id := range ids {
		m.start(id)
	}
	w, err := fx.s.OpenWork(fx.uid, e.ID)
	if err != nil {
		t.Fatal(err)
	}
	for k := range 2 {
		if _, err := w.Take(e.TaskIndices(), spool.Lease{Attempt: fmt.Sprintf("w%d", k), Pilot: ids[0], Node: "n1", Started: fx.now}); err != nil {
			t.Fatal(err)
		}
	}
	fx.now = fx.now.Add(time.Second)
	m.round(t, fx.in, x)
	if r := fx.record(e); r.Tasks.Pending != 0 {
		t.Fatalf("tasks %+v: want none waiting", r.Tasks)
	}
	m.end(ids[1], "done")
	fx.now = fx.now.Add(time.Second)
	m.round(t, fx.in, x)
	if d, n := x.deadStarts[fx.record(e).DirName()], len(x.deadNodes); d != nil || n != 0 {
		t.Errorf("run %+v, %d node runs: want none", d, n)
	}
}

// refusingActor is glean-helper refusing the record's pilots (as for a
// uid below helper.min_uid) while refuse is set, the model otherwise.
type refusingActor struct {
	*slurmModel
	refuse bool
}

func (a *refusingActor) SubmitPilots(ctx context.Context, record string, intents []spool.PilotJob) ([]string, error) {
	if !a.refuse {
		return a.slurmModel.SubmitPilots(ctx, record, intents)
	}
	a.ask("submit-pilots", record+" refused")
	return nil, fmt.Errorf("privileged helper (sock): submit-pilots %s: %w", record,
		&privhelper.Refusal{Reason: "record " + record + ": uid 500 is a system account (helper.min_uid 1000)"})
}

// A job whose pilots glean-helper refuses (a refusal: its checks failed,
// not Slurm) is not asked for again every round: its new pilots are held
// back as after dead starts (a minute, then two), PilotTrouble gives the
// helper's reason, and a pilot that runs a task once the helper submits
// again clears it.
func TestPilotsRefusedHoldAndSay(t *testing.T) {
	fx, m, x := newRound(t, 2, policy.DefaultConfig())
	act := &refusingActor{slurmModel: m, refuse: true}
	x.base = act
	e := fx.submit(t, 40, nil)
	_, helper := m.round(t, fx.in, x)
	r := fx.record(e)
	if submits(helper) != 1 || r.State != spool.StateQueued || !strings.HasPrefix(r.PilotTrouble, spool.PilotsRefused) ||
		!strings.Contains(r.PilotTrouble, "uid 500 is a system account (helper.min_uid 1000); no new pilot before ") {
		t.Fatalf("helper %q, state %s, trouble %q: want one refused request and the helper's reason", helper, r.State, r.PilotTrouble)
	}
	rs, err := fx.s.OpenRecords()
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	if onDisk, err := rs.Get(r.DirName()); err != nil || onDisk.PilotTrouble != r.PilotTrouble {
		t.Fatalf("record on disk: trouble %q, %v: want it recorded for glean status", onDisk.PilotTrouble, err)
	}
	for _, wait := range []time.Duration{2 * time.Second, 50 * time.Second} {
		fx.now = fx.now.Add(wait)
		if _, helper := m.round(t, fx.in, x); submits(helper) != 0 {
			t.Fatalf("helper %q %v after a refusal: want no request within the minute's hold", helper, wait)
		}
	}
	if n := len(fx.record(e).PilotJobs); n != 0 {
		t.Errorf("%d refused intents kept: want them forgotten", n)
	}
	fx.now = fx.now.Add(10 * time.Second)
	if _, helper := m.round(t, fx.in, x); submits(helper) != 1 {
		t.Fatalf("helper %q after the hold: want one request", helper)
	}
	// That one was refused again: a hold of two minutes. Then the
	// helper submits them.
	act.refuse = false
	fx.now = fx.now.Add(110 * time.Second)
	if _, helper := m.round(t, fx.in, x); submits(helper) != 0 {
		t.Fatalf("helper %q 110 s into a 2-minute hold", helper)
	}
	fx.now = fx.now.Add(11 * time.Second)
	if _, helper := m.round(t, fx.in, x); submits(helper) != 1 || len(livePilotIDs(fx.record(e))) != 2 {
		t.Fatalf("helper %q, pilots %v after the 2-minute hold: want 2 pilots", helper, livePilotIDs(fx.record(e)))
	}
	runOneTask(t, fx, m, x, e)
	if r := fx.record(e); r.PilotTrouble != "" {
		t.Fatalf("trouble %q after a pilot ran a task: want none", r.PilotTrouble)
	}
}
