package spool

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// A round's events go in with one append; none is a no-op; a journal that
// cannot be opened is an error and takes nothing.
func TestJournalAll(t *testing.T) {
	s := &Spool{Dir: t.TempDir()}
	rs, err := s.Init(-1)
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	r := &Record{ID: NewID(time.Now()), UID: os.Getuid(), State: StateQueued}
	if err := rs.Put(r); err != nil {
		t.Fatal(err)
	}
	if err := rs.JournalAll(r, nil); err != nil {
		t.Fatal(err)
	}
	var evs []Event
	for i := range 3 {
		evs = append(evs, Event{Time: time.Now(), Event: "task", Task: &TaskEvent{Index: i, Attempt: "a", Reason: ReasonCompleted, Final: true}})
	}
	if err := rs.JournalAll(r, evs); err != nil {
		t.Fatal(err)
	}
	got, err := rs.TaskEvents(r.DirName())
	if err != nil || len(got) != 3 || got[2].Index != 2 {
		t.Fatalf("events %+v, %v", got, err)
	}
	j := filepath.Join(s.Dir, JobsDir, r.DirName(), JournalFile)
	if err := os.Remove(j); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(j, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := rs.JournalAll(r, evs); err == nil {
		t.Fatal("appended to a directory")
	}
}
