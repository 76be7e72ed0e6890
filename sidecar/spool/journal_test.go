package spool

import (
	"bytes"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/glean-hpc/glean/sidecar/failpoint"
)

// A journal line is in the journal whole or not at all, whatever tore the
// write: a short write then an error (ENOSPC on a full spool; here EFBIG
// from a file size limit, which the kernel applies the same way: the
// first write(2) stores what fits and returns its count, the next fails),
// or a crash half-way through (a fragment without its '\n'). The next
// line is never glued onto a fragment, and every committed line is read
// back.
func TestJournalTear(t *testing.T) {
	for _, tc := range []struct {
		name string
		tear func(t *testing.T, rs *Records, r *Record, path string) // leaves the journal torn or not
		err  bool                                                    // the torn Journal call itself fails
	}{
		{"short write then an error", func(t *testing.T, rs *Records, r *Record, path string) {
			st, _ := os.Stat(path)
			var old syscall.Rlimit
			if err := syscall.Getrlimit(syscall.RLIMIT_FSIZE, &old); err != nil {
				t.Fatal(err)
			}
			lim := old
			lim.Cur = uint64(st.Size()) + 50 // room for 50 bytes of the line
			if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &lim); err != nil {
				t.Skipf("setrlimit: %v", err)
			}
			err := rs.Journal(r, Event{Time: time.Now(), Event: "torn", Detail: strings.Repeat("x", 250)})
			if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &old); err != nil {
				t.Fatal(err)
			}
			if err == nil || !strings.Contains(err.Error(), "file too large") {
				t.Fatalf("a write past the size limit: %v, want EFBIG", err)
			}
			if st2, _ := os.Stat(path); st2.Size() != st.Size() {
				t.Fatalf("the journal is %d bytes after the failed write, want %d (the partial line cut off)", st2.Size(), st.Size())
			}
		}, true},
		{"a crash left half a line", func(t *testing.T, rs *Records, r *Record, path string) {
			f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				t.Fatal(err)
			}
			f.WriteString(`{"time":"2026-01-01T00:00:00Z","event":"task","task":{"index":3,"att`)
			f.Close()
		}, false},
		{"the journal/half-line failpoint", func(t *testing.T, rs *Records, r *Record, path string) {
			rs.Fail = failpoint.Parse("journal/half-line").WithKill(func() { panic("killed") })
			defer func() { rs.Fail = nil }()
			func() {
				defer func() {
					if recover() == nil {
						t.Fatal("the failpoint did not fire")
					}
				}()
				_ = rs.Journal(r, Event{Time: time.Now(), Event: "task", Task: &TaskEvent{Index: 9, Attempt: "a9", Reason: ReasonCompleted, Final: true}})
			}()
			if data, _ := os.ReadFile(path); bytes.HasSuffix(data, []byte("\n")) {
				t.Fatal("the failpoint left no fragment")
			}
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rs, r, path, logged := journalFixture(t)
			now := time.Now().UTC().Truncate(time.Second)
			for i := 0; i < 2; i++ {
				if err := rs.Journal(r, Event{Time: now, Event: "task", Task: &TaskEvent{Index: i, Attempt: "a" + string(rune('0'+i)), Reason: ReasonCompleted, Final: true}}); err != nil {
					t.Fatal(err)
				}
			}
			tc.tear(t, rs, r, path)
			if err := rs.Journal(r, Event{Time: now, Event: "task", Task: &TaskEvent{Index: 2, Attempt: "a2", Reason: ReasonCompleted, Final: true}}); err != nil {
				t.Fatalf("the append after the tear: %v", err)
			}
			evs, err := rs.TaskEvents(r.DirName())
			if err != nil || len(evs) != 3 || evs[0].Index != 0 || evs[1].Index != 1 || evs[2].Index != 2 {
				t.Errorf("task events after the tear: %+v %v; want tasks 0, 1, 2", evs, err)
			}
			data, _ := os.ReadFile(path)
			if n := bytes.Count(data, []byte("\n")); n != 3 || !bytes.HasSuffix(data, []byte("\n")) {
				t.Errorf("journal of %d lines:\n%s", n, data)
			}
			if logged.Len() > 0 {
				t.Errorf("a repaired journal logged bad lines: %s", logged.String())
			}
		})
	}
}

// journalFixture is a record with an empty journal (path), whose
// records log into logged.
func journalFixture(t *testing.T) (rs *Records, r *Record, path string, logged *bytes.Buffer) {
	t.Helper()
	s := testSpool(t)
	rs, err := s.OpenRecords()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rs.Close() })
	logged = &bytes.Buffer{}
	rs.Log = slog.New(slog.NewTextHandler(logged, nil))
	r = &Record{ID: NewID(time.Now()), UID: 7, User: "u", State: StateQueued}
	if err := rs.Put(r); err != nil {
		t.Fatal(err)
	}
	return rs, r, filepath.Join(s.Dir, JobsDir, r.DirName(), JournalFile), logged
}

// A line that does not parse (damage no repair explains) is skipped and
// reported, never silently; the lines around it are read.
func TestJournalBadLineLogged(t *testing.T) {
	rs, r, path, logged := journalFixture(t)
	data := `{"event":"task","task":{"index":0,"attempt":"a","reason":"completed","final":true}}
{"event":"task","task":{"ind{"event":"task","task":{"index":1,"attempt":"b","reason":"completed","final":true}}
{"event":"task","task":{"index":2,"attempt":"c","reason":"completed","final":true}}
`
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	evs, err := rs.TaskEvents(r.DirName())
	if err != nil || len(evs) != 2 || evs[0].Index != 0 || evs[1].Index != 2 {
		t.Fatalf("events %+v %v", evs, err)
	}
	if !strings.Contains(logged.String(), "does not parse") || !strings.Contains(logged.String(), "offset=84") {
		t.Errorf("the bad line was not logged with its offset: %q", logged.String())
	}
}

// One gleand per spool: a second LockDaemon fails, naming the holder's
// pid, until the first lock is released.
func TestLockDaemon(t *testing.T) {
	s := testSpool(t)
	first, err := s.LockDaemon()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.LockDaemon(); !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), "pid "+strconv.Itoa(os.Getpid())) {
		t.Errorf("a second lock: %v, want ErrLocked naming pid %d", err, os.Getpid())
	}
	first.Close()
	again, err := s.LockDaemon()
	if err != nil {
		t.Fatalf("after the first gleand ended: %v", err)
	}
	again.Close()
}
