package daemon

import (
	"strings"
	"testing"
	"time"

	"github.com/glean-hpc/glean/sidecar/policy"
	"github.com/glean-hpc/glean/sidecar/spool"
)

// A budget bounds the node time of all of a job's pilots however long the
// job lives: each pilot here runs 5 minutes, then 15 pass before the next;
// pilots that ended over an hour ago leave the record (exec.go, "Keep the
// record small") and their time goes to Record.PilotTimeSpent. (From the
// review of fb936bc: the budget refilled and the pilots ran on for ever.)
func TestBudgetCountsPilotsEndedLongAgo(t *testing.T) {
	fx, m, x := newRound(t, 4, policy.DefaultConfig())
	e := fx.submit(t, 40, func(e *spool.Entry, _ *QJob) { e.Glean.Budget = 0.5 })
	m.round(t, fx.in, x)
	var ran time.Duration
	for i := 0; i < 24 && fx.record(e).Active(); i++ {
		var live []string
		for _, p := range fx.record(e).PilotJobs {
			if p.ID != "" && p.Ended.IsZero() {
				m.start(p.ID)
				if m.pilots[p.ID].state == "RUNNING" {
					live = append(live, p.ID)
				}
			}
		}
		m.round(t, fx.in, x) // seen started
		fx.now = fx.now.Add(5 * time.Minute)
		for _, id := range live {
			m.end(id, "")
			ran += 5 * time.Minute
		}
		m.round(t, fx.in, x) // seen ended; the next submitted
		fx.now = fx.now.Add(15 * time.Minute)
		m.round(t, fx.in, x)
	}
	if r := fx.record(e); ran > 30*time.Minute {
		t.Errorf("the job's pilots ran %v on a budget of 30 minutes (job %s)", ran, r.State)
	}
}

// A pilot that ran while gleand was not looking (restarting, or down, for
// its whole run) counts the time since its submission: its 30 minutes are
// not given again to a second pilot. (From the review of fb936bc: it
// counted nothing.)
func TestBudgetCountsPilotRunUnseen(t *testing.T) {
	fx, m, x, _, pilot := budgetJob(t)
	m.start(pilot) // runs its 30 minutes; no round sees it run
	fx.now = fx.now.Add(30 * time.Minute)
	m.end(pilot, "")
	_, helper := m.round(t, fx.in, x)
	for _, h := range helper {
		if strings.HasPrefix(h, "submit-pilots") {
			t.Errorf("helper %q: a second pilot after the first ran the whole budget", helper)
		}
	}
}

// A budget that cannot pay for one pilot (10 node-hours, tasks of -t a
// day, no runtimes yet) fails the job at once saying so, not that the
// budget was spent. (From the review of fb936bc.)
func TestBudgetBelowOneTaskIsNotSpent(t *testing.T) {
	fx, m, x := newRound(t, 4, policy.DefaultConfig())
	e := fx.submit(t, 40, func(e *spool.Entry, _ *QJob) { e.Glean.Budget, e.Resources.TimeLimit = 10, 24*60 })
	m.round(t, fx.in, x)
	if r := fx.record(e); r.State != spool.StateFailed || strings.Contains(r.Reason, "spent") || !strings.Contains(r.Reason, "less than one pilot needs") {
		t.Errorf("record %s %q with no pilot ever submitted: want failed, the budget less than one pilot needs", r.State, r.Reason)
	}
}

// budgetJob is a scavenger job of 40 tasks with a budget of 0.5
// node-hours after its first round, and its one pilot, of 30 minutes.
func budgetJob(t *testing.T) (*fixture, *slurmModel, *Executor, *spool.Entry, string) {
	t.Helper()
	fx, m, x := newRound(t, 4, policy.DefaultConfig())
	e := fx.submit(t, 40, func(e *spool.Entry, _ *QJob) { e.Glean.Budget = 0.5 })
	m.round(t, fx.in, x)
	pilots := fx.record(e).PilotJobs
	if len(pilots) != 1 || pilots[0].TimeLimit != 30*time.Minute {
		t.Fatalf("pilots %+v: want one of 30 minutes (the budget)", pilots)
	}
	return fx, m, x, e, pilots[0].ID
}

// A fair job whose pilots spent its budget keeps waiting for its shadow
// array while an element of it is queued or running; once the shadow
// array has ended with tasks left, nothing will run them: the job ends
// failed, budget spent, instead of waiting for ever.
func TestBudgetSpentFairEndsWithItsShadow(t *testing.T) {
	fx, m, x := newRound(t, 4, policy.DefaultConfig())
	e := fx.submit(t, 40, func(e *spool.Entry, _ *QJob) { e.Glean.Budget = 0.5; e.Shadow = "900"; e.Mode = "fair" })
	m.round(t, fx.in, x)
	pilots := fx.record(e).PilotJobs
	if len(pilots) != 1 || pilots[0].TimeLimit != 30*time.Minute {
		t.Fatalf("pilots %+v: want one of 30 minutes (the budget)", pilots)
	}
	m.start(pilots[0].ID)
	fx.now = fx.now.Add(30 * time.Minute)
	m.end(pilots[0].ID, "")
	m.round(t, fx.in, x)
	if r := fx.record(e); r.State != spool.StateQueued {
		t.Fatalf("record %s %q while its shadow array is queued: want queued", r.State, r.Reason)
	}
	fx.slurm.mu.Lock()
	sh := fx.slurm.jobs["900"]
	sh.State, sh.Reason = "COMPLETED", "None"
	fx.slurm.jobs["900"] = sh
	fx.slurm.mu.Unlock()
	fx.now = fx.now.Add(time.Second)
	m.round(t, fx.in, x)
	if r := fx.record(e); r.State != spool.StateFailed || !strings.Contains(r.Reason, "budget of 0.5 node-hours spent") {
		t.Errorf("record %s %q after its shadow array ended: want failed, budget spent", r.State, r.Reason)
	}
}
