package spool

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// A lease taken with SyncLater is in place (and readable) at once;
// SyncLease makes it durable, and is no error once the task's result
// removed it.
func TestTakeSyncLater(t *testing.T) {
	_, _, _, w := newWork(t)
	w.SyncLater = true
	task, err := w.Take([]int{0, 1}, Lease{Attempt: "a1", Pilot: "7", Node: "n1"})
	if err != nil || task != 0 {
		t.Fatalf("Take: %d, %v", task, err)
	}
	data, err := os.ReadFile(w.LeasePath(0))
	var l Lease
	if err != nil || json.Unmarshal(data, &l) != nil || l.Task != 0 || l.Attempt != "a1" {
		t.Fatalf("lease %q, %v", data, err)
	}
	if err := w.SyncLease(0); err != nil {
		t.Fatal(err)
	}
	if err := w.Finish(Result{Task: 0, Attempt: "a1", Outcome: OutcomeExited}); err != nil {
		t.Fatal(err)
	}
	if err := w.SyncLease(0); err != nil {
		t.Errorf("SyncLease of a lease gone: %v", err)
	}
}

// A lease is removed only by its own attempt: once the daemon took a task
// back and another agent leased it again, neither the first attempt's
// result (or its release when the result cannot be written) nor the
// daemon's removal of the dead lease it read takes the new lease away (a
// third agent would run the task again).
func TestLeaseRemovedOnlyByItsAttempt(t *testing.T) {
	sp, uid, id, w := newWork(t)
	if _, err := w.Take([]int{0}, Lease{Attempt: "old", Pilot: "7"}); err != nil {
		t.Fatal(err)
	}
	// The daemon takes it back as lost; another agent leases it again.
	if err := sp.RemoveLease(uid, id, 0, "old"); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Take([]int{0}, Lease{Attempt: "new", Pilot: "8"}); err != nil {
		t.Fatal(err)
	}
	leased := func(want string) {
		t.Helper()
		data, err := os.ReadFile(w.LeasePath(0))
		var l Lease
		if err != nil || json.Unmarshal(data, &l) != nil || l.Attempt != want {
			t.Fatalf("lease %q, %v; want attempt %q's", data, err, want)
		}
	}
	if err := w.Finish(Result{Task: 0, Attempt: "old", Outcome: OutcomeExited}); err != nil {
		t.Fatal(err)
	}
	leased("new")
	if err := w.Release(0, "old"); err != nil { // the old attempt's result could not be written
		t.Fatal(err)
	}
	leased("new")
	if err := sp.RemoveLease(uid, id, 0, "old"); err != nil {
		t.Fatal(err)
	}
	leased("new")
	if err := w.Finish(Result{Task: 0, Attempt: "new", Outcome: OutcomeExited}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(w.LeasePath(0)); !os.IsNotExist(err) {
		t.Errorf("the new attempt's own result left its lease: %v", err)
	}
}

// A heartbeat refreshes only its own attempt's lease, checked on the
// descriptor it touches: a lease that is gone, being written (empty) or
// another attempt's is ErrLeaseLost and keeps its time. Neither the
// agent's nor the daemon's removal by attempt takes away a lease being
// written by its taker.
func TestHeartbeatOwnLeaseOnly(t *testing.T) {
	sp, uid, id, w := newWork(t)
	if _, err := w.Take([]int{0}, Lease{Attempt: "a1", Pilot: "7"}); err != nil {
		t.Fatal(err)
	}
	path := w.LeasePath(0)
	old := time.Now().Add(-time.Hour).Truncate(time.Second)
	mtime := func() time.Time {
		t.Helper()
		st, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		return st.ModTime()
	}
	if err := os.Chtimes(path, old, old); err != nil {
		t.Fatal(err)
	}
	if err := w.Heartbeat(0, "a1"); err != nil {
		t.Fatalf("its own lease: %v", err)
	}
	if age := time.Since(mtime()); age > time.Minute || age < -time.Minute {
		t.Errorf("heartbeat: mtime %v from now, want the current time", age)
	}
	for _, tc := range []struct {
		name    string
		content *string
	}{
		{"another attempt's", ptr(`{"version":1,"task":0,"attempt":"a2"}`)},
		{"being written (empty)", ptr("")},
		{"gone", nil},
	} {
		os.Remove(path)
		if tc.content != nil {
			if err := os.WriteFile(path, []byte(*tc.content), 0o640); err != nil {
				t.Fatal(err)
			}
			if err := os.Chtimes(path, old, old); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Heartbeat(0, "a1"); !errors.Is(err, ErrLeaseLost) {
			t.Errorf("%s: %v, want ErrLeaseLost", tc.name, err)
		}
		if tc.content == nil {
			continue
		}
		if !mtime().Equal(old) {
			t.Errorf("%s: its mtime was refreshed", tc.name)
		}
		if err := w.Finish(Result{Task: 0, Attempt: "a1", Outcome: OutcomeExited}); err != nil {
			t.Fatal(err)
		}
		if err := sp.RemoveLease(uid, id, 0, "a1"); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(path); err != nil {
			t.Errorf("%s: removed by attempt a1's result or the daemon's removal of a1's lease", tc.name)
		}
	}
}

func ptr[T any](v T) *T { return &v }

// newWork is a queued job's record and its work directory, the caller's own.
func newWork(t *testing.T) (sp *Spool, uid int, id string, w *Work) {
	t.Helper()
	sp = &Spool{Dir: filepath.Join(t.TempDir(), "spool")}
	rs, err := sp.Init(-1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rs.Close() })
	uid, id = os.Getuid(), NewID(time.Now())
	rec := &Record{ID: id, UID: uid, State: StateQueued}
	if err := rs.Put(rec); err != nil {
		t.Fatal(err)
	}
	if err := rs.Journal(rec, Event{Time: time.Now(), Event: "accepted"}); err != nil {
		t.Fatal(err)
	}
	if err := sp.EnsureUserDirs(uid); err != nil {
		t.Fatal(err)
	}
	if w, err = sp.OpenWork(uid, id); err != nil {
		t.Fatal(err)
	}
	return sp, uid, id, w
}

// LastAgentError reads the last ERROR line of an agent's log, the
// owner's file: never through a link, never a FIFO (it would block),
// only the log's end, and one printable line.
func TestLastAgentError(t *testing.T) {
	sp, uid, id, w := newWork(t)
	logs := filepath.Join(w.Dir, LogsDir)
	write := func(name, text string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(logs, name), []byte(text), 0o640); err != nil {
			t.Fatal(err)
		}
	}
	write("pilot-11.log", "level=ERROR msg=old\nlevel=INFO msg=a\nlevel=ERROR msg=\"glean-agent pilot\" err=\"no \x07bell\"\nlevel=INFO msg=b\n")
	write("pilot-12.log", "level=INFO msg=fine\n")
	write("pilot-13.log", "level=ERROR msg=early\n"+strings.Repeat("level=INFO msg=filler\n", 1000))
	if err := os.Symlink(filepath.Join(logs, "pilot-11.log"), filepath.Join(logs, "pilot-14.log")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(logs, "pilot-15.log"), 0o640); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		pilot  string
		exists bool
		line   string
		err    error
	}{
		{"11", true, `level=ERROR msg="glean-agent pilot" err="no  bell"`, nil},
		{"12", true, "", nil},
		{"13", true, "", nil}, // its error is before the last 8 KiB
		{"14", false, "", ErrSymlink},
		{"15", false, "", ErrNotRegular},
		{"16", false, "", nil}, // never opened
	} {
		exists, line, err := sp.LastAgentError(uid, id, "pilot", tc.pilot)
		if exists != tc.exists || line != tc.line || !errors.Is(err, tc.err) {
			t.Errorf("pilot %s: %v %q %v, want %v %q %v", tc.pilot, exists, line, err, tc.exists, tc.line, tc.err)
		}
	}
	if _, _, err := sp.LastAgentError(uid, id, "pilot", "../x"); err == nil {
		t.Error("a pilot id that is not a job id was read")
	}
}

// OneLine blanks what could move a terminal's cursor or disguise text:
// C0 and C1 controls, DEL, bidirectional overrides, zero-width
// characters; it cuts on a character boundary.
func TestOneLine(t *testing.T) {
	for _, tc := range []struct {
		in   string
		max  int
		want string
	}{
		{"plain text", 40, "plain text"},
		{"a\nb\tc\x1b[2Jd\x7f", 40, "a b c [2Jd "},
		{"csi\u009b31m", 40, "csi 31m"},
		{"evil\u202etxt.exe", 40, "evil txt.exe"},
		{"zero\u200bwidth", 40, "zero width"},
		{"bad\xffutf8", 40, "bad?utf8"},
		{"ééééé", 8, "éé..."}, // 10 bytes: cut to 5, not inside the third é
		{"abcdefghij", 8, "abcde..."},
	} {
		if got := OneLine(tc.in, tc.max); got != tc.want {
			t.Errorf("OneLine(%q, %d) = %q, want %q", tc.in, tc.max, got, tc.want)
		}
	}
}

// A lease's heartbeat is the mtime of the file whose content was read; a
// lease the daemon cannot read (a link) has its own time, and a problem.
func TestScanWorkHeartbeat(t *testing.T) {
	sp, uid, id, w := newWork(t)
	if _, err := w.Take([]int{0}, Lease{Attempt: "a", Pilot: "7"}); err != nil {
		t.Fatal(err)
	}
	leases := filepath.Join(w.Dir, LeasesDir)
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 6000, time.UTC)
	if err := os.Chtimes(filepath.Join(leases, "0"), t0, t0); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc/passwd", filepath.Join(leases, "1")); err != nil {
		t.Fatal(err)
	}
	t1 := time.Date(2025, 6, 7, 8, 9, 10, 0, time.UTC)
	tv := []unix.Timeval{unix.NsecToTimeval(t1.UnixNano()), unix.NsecToTimeval(t1.UnixNano())}
	if err := unix.Lutimes(filepath.Join(leases, "1"), tv); err != nil {
		t.Fatal(err)
	}
	ws, err := sp.ScanWork(uid, id)
	if err != nil || len(ws.Leases) != 2 {
		t.Fatalf("ScanWork: %+v, %v", ws, err)
	}
	if l := ws.Leases[0]; l.Lease.Attempt != "a" || !l.Heartbeat.Equal(t0) {
		t.Errorf("lease 0: attempt %q heartbeat %v, want a at %v", l.Lease.Attempt, l.Heartbeat, t0)
	}
	if l := ws.Leases[1]; l.Lease.Attempt != "" || !l.Heartbeat.Equal(t1) {
		t.Errorf("symlinked lease 1: attempt %q heartbeat %v, want none at the link's %v", l.Lease.Attempt, l.Heartbeat, t1)
	}
	if len(ws.Problems) != 1 || !errors.Is(ws.Problems[0], ErrSymlink) {
		t.Errorf("problems %v, want the symlinked lease's", ws.Problems)
	}
}
