package daemon

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/glean-hpc/glean/sidecar/policy"
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
			m.end(id, "")
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
	if !strings.Contains(r.PilotTrouble, "4 pilots in a row ended without running a task; the last, "+second[1]) ||
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
	ids := livePilotIDs(fx.record(e))
	m.start(ids[0])
	fx.now = fx.now.Add(time.Second)
	m.round(t, fx.in, x)
	fx.finishTasks(t, e.ID, 1, ids[0])
	fx.now = fx.now.Add(time.Second)
	m.round(t, fx.in, x)
	if r := fx.record(e); r.PilotTrouble != "" || x.deadStarts[r.DirName()] != nil {
		t.Fatalf("trouble %q, %+v after a pilot ran a task: want none", r.PilotTrouble, x.deadStarts[r.DirName()])
	}
	if slices.Contains(first, ids[0]) {
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
			m.end(id, "")
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
	good := on("n2")
	for _, id := range livePilotIDs(fx.record(e)) {
		m.start(id)
	}
	fx.now = fx.now.Add(time.Second)
	m.round(t, fx.in, x)
	fx.finishTasks(t, e.ID, 1, good) // n2's pilot runs a task
	for k := 1; k <= 3; k++ {
		bad := on("n1")
		if bad == "" {
			t.Fatalf("dead start %d: no pilot on n1 (%+v)", k, fx.record(e).PilotJobs)
		}
		m.start(bad)
		fx.now = fx.now.Add(time.Second)
		m.round(t, fx.in, x)
		m.end(bad, "")
		fx.now = fx.now.Add(time.Second)
		m.round(t, fx.in, x)
	}
	if on("n1") != "" {
		t.Fatalf("a pilot on n1 after 3 died there: %+v", fx.record(e).PilotJobs)
	}
	if r := fx.record(e); r.PilotTrouble != "" || x.holding(r.DirName(), fx.now) {
		t.Errorf("job held (%q): its pilots elsewhere run tasks", r.PilotTrouble)
	}
	if held := x.heldNodes(fx.now); !slices.Equal(held, []string{"n1"}) {
		t.Errorf("held nodes %v, want [n1]", held)
	}
	fx.now = fx.now.Add(61 * time.Second)
	m.round(t, fx.in, x)
	if on("n1") == "" {
		t.Errorf("no pilot on n1 after its hold: %+v", fx.record(e).PilotJobs)
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
