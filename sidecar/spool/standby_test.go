package spool

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// One standby claim per pilot-run task: shadow elements' tasks and tasks
// already claimed are skipped, a claim that went stale is taken over and
// its old holder sees that, and a claim ends with its pilot's lease.
func TestStandbyClaims(t *testing.T) {
	_, _, _, w := newWork(t)
	now := time.Now()
	for i, l := range []Lease{{Attempt: "a", Pilot: "7", Shadow: true}, {Attempt: "b", Pilot: "1"}, {Attempt: "c", Pilot: "2"}} {
		if got, err := w.Take([]int{i}, l); err != nil || got != i {
			t.Fatalf("take %d: %d, %v", i, got, err)
		}
	}
	if got, err := w.Standby("e1", now, time.Minute); err != nil || got != 1 {
		t.Fatalf("first claim: task %d, %v; want 1 (task 0 is a shadow element's)", got, err)
	}
	if got, err := w.Standby("e2", now, time.Minute); err != nil || got != 2 {
		t.Fatalf("second claim: task %d, %v; want 2", got, err)
	}
	if _, err := w.Standby("e3", now, time.Minute); !errors.Is(err, ErrNoTask) {
		t.Fatalf("third claim: %v, want ErrNoTask", err)
	}
	if !w.KeepStandby(1, "e1", now) || w.KeepStandby(1, "e2", now) {
		t.Fatal("KeepStandby: want task 1 to stand for e1 only")
	}
	// e2 stops refreshing: after the stale period e3 takes its task over.
	old := now.Add(-2 * time.Minute)
	if err := os.Chtimes(w.standbyPath(2), old, old); err != nil {
		t.Fatal(err)
	}
	if got, err := w.Standby("e3", now, time.Minute); err != nil || got != 2 {
		t.Fatalf("takeover: task %d, %v; want 2", got, err)
	}
	if w.KeepStandby(2, "e2", now) || !w.KeepStandby(2, "e3", now) {
		t.Fatal("after the takeover the claim is e3's, not e2's")
	}
	w.DropStandby(2, "e2") // not e2's to drop
	if w.standbyHolder(2) != "e3" {
		t.Fatal("e2 dropped e3's claim")
	}
	// The pilot's attempt ends: the claim stands while its result awaits
	// the daemon's commit (which may hand the task back), then is gone.
	if err := w.Finish(Result{Task: 1, Attempt: "b", Outcome: OutcomeHandedBack}); err != nil {
		t.Fatal(err)
	}
	if !w.KeepStandby(1, "e1", now) {
		t.Fatal("claim gone while the pilot's result awaits its commit")
	}
	if err := os.Remove(filepath.Join(w.Dir, ResultsDir, "1.b")); err != nil { // the daemon committed it
		t.Fatal(err)
	}
	if w.KeepStandby(1, "e1", now) {
		t.Fatal("claim stands after its task's attempt was committed")
	}
	if _, err := os.Stat(w.standbyPath(1)); !os.IsNotExist(err) {
		t.Fatalf("claim on task 1 not removed: %v", err)
	}
}

// A takeover that cannot write its temporary file (a leftover of that
// name) moves on to the next task instead of failing the scan.
func TestStandbyTakeoverSkipsAStuckTask(t *testing.T) {
	_, _, _, w := newWork(t)
	now := time.Now()
	old := now.Add(-time.Hour)
	for i := range 2 {
		if _, err := w.Take([]int{i}, Lease{Attempt: "a" + strconv.Itoa(i), Pilot: "1"}); err != nil {
			t.Fatal(err)
		}
		if got, err := w.Standby("gone"+strconv.Itoa(i), now, time.Minute); err != nil || got != i {
			t.Fatalf("claim %d: %d, %v", i, got, err)
		}
	}
	for i := range 2 { // both holders died
		if err := os.Chtimes(w.standbyPath(i), old, old); err != nil {
			t.Fatal(err)
		}
	}
	leftover := filepath.Join(w.Dir, StandbyDir, tmpPrefix+"0."+strconv.Itoa(os.Getpid()))
	if err := os.WriteFile(leftover, nil, 0o640); err != nil {
		t.Fatal(err)
	}
	if got, err := w.Standby("e", now, time.Minute); err != nil || got != 1 {
		t.Fatalf("Standby: task %d, %v; want task 1", got, err)
	}
}
