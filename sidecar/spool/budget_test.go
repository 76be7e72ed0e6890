package spool

import (
	"math"
	"testing"
	"time"
)

func TestBudgetLeft(t *testing.T) {
	t0 := time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC)
	rec := func(budget float64, ps ...PilotJob) *Record {
		return &Record{Entry: &Entry{Glean: Glean{Budget: budget}}, PilotJobs: ps}
	}
	ran := func(limit, d time.Duration) PilotJob {
		return PilotJob{ID: "1", TimeLimit: limit, Started: t0, Ended: t0.Add(d)}
	}
	for _, tc := range []struct {
		name string
		r    *Record
		left time.Duration
		ok   bool
	}{
		{"no budget", rec(0), 0, false},
		{"a budget too large to count is none", rec(2e6), 0, false},
		{"nothing spent", rec(1.5), 90 * time.Minute, true},
		{"a live pilot counts its limit", rec(2, PilotJob{ID: "1", TimeLimit: 30 * time.Minute, Started: t0}), 90 * time.Minute, true},
		{"one being submitted too", rec(2, PilotJob{TimeLimit: 30 * time.Minute}), 90 * time.Minute, true},
		{"an ended one what it ran", rec(2, ran(time.Hour, 10*time.Minute)), 110 * time.Minute, true},
		{"at most its limit", rec(2, ran(time.Hour, 3*time.Hour)), time.Hour, true},
		{"one cancelled while pending nothing", rec(2, PilotJob{ID: "1", TimeLimit: time.Hour, Cancelled: true, Ended: t0}), 2 * time.Hour, true},
		{"one that ended unseen running: from its submission", rec(2, PilotJob{ID: "1", TimeLimit: time.Hour, Submitted: t0, Ended: t0.Add(20 * time.Minute)}), 100 * time.Minute, true},
		{"one given way while running: what it ran", rec(2, PilotJob{ID: "1", TimeLimit: time.Hour, Submitted: t0, Started: t0, Cancelled: true, Signalled: t0.Add(time.Minute), Ended: t0.Add(2 * time.Minute)}), 118 * time.Minute, true},
		{"pilots forgotten still count", func() *Record { r := rec(2); r.PilotTimeSpent = 90 * time.Minute; return r }(), 30 * time.Minute, true},
		{"one moved away counts there", rec(2, PilotJob{ID: "1", TimeLimit: time.Hour, MovedTo: "x"}), 2 * time.Hour, true},
		{"an unlimited live pilot takes it all", rec(2, PilotJob{ID: "1", TimeLimit: time.Duration(math.MaxInt64)}), 0, true},
		{"never below zero", rec(0.5, ran(time.Hour, time.Hour)), 0, true},
	} {
		left, ok := tc.r.BudgetLeft()
		if left != tc.left || ok != tc.ok {
			t.Errorf("%s: %v %v, want %v %v", tc.name, left, ok, tc.left, tc.ok)
		}
	}
}
