package daemon

import (
	"testing"
	"time"

	"github.com/glean-hpc/glean/sidecar/spool"
)

// judge decides end reasons from glean's own facts: whether it cancelled
// the pilot, the retry budget, the attempt cap; never from a claim alone.
func TestJudge(t *testing.T) {
	x := &Executor{opt: ExecOptions{Retries: 2, MaxAttempts: 5}}
	rec := &spool.Record{PilotJobs: []spool.PilotJob{{ID: "10"}, {ID: "11", Cancelled: true, Cause: "give-way"}}}
	res := func(task int, pilot, outcome string, exit int) spool.Result {
		return spool.Result{Task: task, Attempt: "a" + pilot, Pilot: pilot, Outcome: outcome, Exit: exit}
	}
	for _, tc := range []struct {
		name   string
		events []spool.TaskEvent // already committed
		res    spool.Result
		reason string
		final  bool
	}{
		{"completed", nil, res(1, "10", spool.OutcomeExited, 0), spool.ReasonCompleted, true},
		{"failed, retries left", nil, res(1, "10", spool.OutcomeExited, 3), spool.ReasonFailed, false},
		{"failed, last retry", []spool.TaskEvent{{Index: 1, Attempt: "x", Reason: spool.ReasonFailed}, {Index: 1, Attempt: "y", Reason: spool.ReasonFailed}},
			res(1, "10", spool.OutcomeExited, 3), spool.ReasonFailed, true},
		{"checkpointed on give-way", nil, res(1, "11", spool.OutcomeCheckpointed, 99), spool.ReasonGiveWay, false},
		{"killed on give-way", nil, res(1, "11", spool.OutcomeSignaled, 143), spool.ReasonGiveWay, false},
		{"killed, not by glean", nil, res(1, "10", spool.OutcomeSignaled, 137), spool.ReasonFailed, false},
		{"handed back by its agent", nil, res(1, "10", spool.OutcomeHandedBack, 143), spool.ReasonHandBack, false},
		{"a claim of give-way from a pilot glean did not cancel does not count as give-way", nil, res(1, "10", spool.OutcomeCheckpointed, 99), spool.ReasonHandBack, false},
		{"hand-backs capped", []spool.TaskEvent{{Index: 1, Attempt: "p", Reason: spool.ReasonHandBack}, {Index: 1, Attempt: "q", Reason: spool.ReasonHandBack},
			{Index: 1, Attempt: "r", Reason: spool.ReasonGiveWay}, {Index: 1, Attempt: "s", Reason: spool.ReasonLost}},
			res(1, "10", spool.OutcomeHandedBack, 143), spool.ReasonFailed, true},
		{"a second completion is a duplicate", []spool.TaskEvent{{Index: 1, Attempt: "z", Reason: spool.ReasonCompleted, Final: true}},
			res(1, "10", spool.OutcomeExited, 0), "duplicate", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev := x.judge(rec, newBook(tc.events), tc.res)
			if ev.Reason != tc.reason || ev.Final != tc.final {
				t.Errorf("got %s final=%v, want %s final=%v", ev.Reason, ev.Final, tc.reason, tc.final)
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
	if got, want := b.taskTime(nil), 28*time.Second+7*time.Second+10*time.Second; got != want {
		t.Errorf("taskTime %v, want %v", got, want)
	}
	if got := newBook(nil).taskTime(&spool.Entry{Resources: spool.Resources{TimeLimit: 7}}); got != 7*time.Minute {
		t.Errorf("taskTime from -t: %v", got)
	}
}
