package spool

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func testSpool(t *testing.T) *Spool {
	t.Helper()
	s := &Spool{Dir: t.TempDir(), MaxEntryBytes: 1 << 20, MaxScriptBytes: 1 << 20}
	rs, err := s.Init(-1)
	if err != nil {
		t.Fatal(err)
	}
	rs.Close()
	return s
}

func testEntry(now time.Time) *Entry {
	return &Entry{
		Version: EntryVersion, ID: NewID(now), Nonce: NewNonce(), Submitted: now, User: "u",
		Anchor: "42", Shadow: "43", Name: "job", Mode: "fair", Script: "/home/u/job.sh", ScriptSize: int64(len(testScript)),
		Cwd: "/home/u", Export: "ALL", Array: &Array{Ranges: []Range{{0, 9, 1}}, Throttle: 2}, Tasks: 10,
		Resources: Resources{CPUsPerTask: 1, NTasks: 1, CPUs: 1, TimeLimit: 5},
		Options:   []Opt{{Name: "array", Value: "0-9%2", From: "command line"}},
	}
}

const testScript = "#!/bin/sh\necho hi\n"

// write puts an entry in place as the wrapper does.
func write(t *testing.T, s *Spool, e *Entry) {
	t.Helper()
	uid := os.Getuid()
	if err := s.EnsureUserDirs(uid); err != nil {
		t.Fatal(err)
	}
	p, err := s.Prepare(uid, e.ID, []byte(testScript), []byte("A=1\x00"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Commit(e); err != nil {
		t.Fatal(err)
	}
}

func TestWriteAndRead(t *testing.T) {
	s := testSpool(t)
	now := time.Now().Truncate(time.Second)
	e := testEntry(now)
	write(t, s, e)
	uid := os.Getuid()
	dir := s.IncomingPath(uid, e.ID)
	for name, mode := range map[string]os.FileMode{EntryFile: 0o640, ScriptFile: 0o640, EnvFile: 0o600} {
		st, err := os.Stat(filepath.Join(dir, name))
		if err != nil || st.Mode().Perm() != mode {
			t.Errorf("%s: %v mode %v, want %v", name, err, st.Mode().Perm(), mode)
		}
	}
	ents, _ := os.ReadDir(filepath.Dir(dir))
	if len(ents) != 1 {
		t.Errorf("incoming holds %d names, want the entry only (no temp left)", len(ents))
	}
	found, probs := s.ScanIncoming()
	if len(probs) > 0 || len(found) != 1 || found[0] != (Incoming{uid, e.ID}) {
		t.Fatalf("scan: %v %v", found, probs)
	}
	r, err := s.ReadIncoming(found[0], Limits{MaxTasks: 100})
	if err != nil {
		t.Fatal(err)
	}
	if r.Entry.ID != e.ID || string(r.Script) != testScript || r.UID != uid || r.Entry.Array.Count() != 10 {
		t.Fatalf("read back %+v", r.Entry)
	}
	if _, err := s.ReadIncoming(found[0], Limits{MaxTasks: 5}); err == nil || !strings.Contains(err.Error(), "over the site's cap") {
		t.Errorf("10 tasks with a cap of 5: %v", err)
	}
}

func TestAbortLeavesNothing(t *testing.T) {
	s := testSpool(t)
	uid := os.Getuid()
	if err := s.EnsureUserDirs(uid); err != nil {
		t.Fatal(err)
	}
	e := testEntry(time.Now())
	p, err := s.Prepare(uid, e.ID, []byte(testScript), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	p.Abort()
	ents, _ := os.ReadDir(filepath.Join(s.UserDir(uid), IncomingDir))
	if len(ents) != 0 {
		t.Fatalf("after Abort: %v", ents)
	}
	// A too large entry fails to commit and can be aborted.
	s.MaxEntryBytes = 10
	p, _ = s.Prepare(uid, e.ID, []byte(testScript), nil, nil)
	if err := p.Commit(e); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("commit of an entry over the cap: %v", err)
	}
	p.Abort()
	if ents, _ := os.ReadDir(filepath.Join(s.UserDir(uid), IncomingDir)); len(ents) != 0 {
		t.Fatalf("after a failed commit and Abort: %v", ents)
	}
}

// Hostile entries are rejected with a reason that names what is wrong.
func TestReadRejects(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to chown files to another user")
	}
	for _, tc := range []struct {
		name   string
		modify func(t *testing.T, dir string)
		want   error
		msg    string
	}{
		{"symlinked entry.json", func(t *testing.T, dir string) {
			os.Rename(filepath.Join(dir, EntryFile), filepath.Join(dir, "real.json"))
			os.Symlink("real.json", filepath.Join(dir, EntryFile))
		}, ErrSymlink, ""},
		{"hardlinked entry.json", func(t *testing.T, dir string) {
			os.Link(filepath.Join(dir, EntryFile), filepath.Join(dir, "..", "..", "link.json"))
		}, ErrHardlink, ""},
		{"entry.json owned by someone else", func(t *testing.T, dir string) {
			os.Chown(filepath.Join(dir, EntryFile), 4242, 4242)
		}, ErrOwner, ""},
		{"entry directory is a symlink", func(t *testing.T, dir string) {
			os.Rename(dir, dir+"-real")
			os.Symlink(filepath.Base(dir)+"-real", dir)
		}, ErrSymlink, ""},
		{"entry.json is a FIFO", func(t *testing.T, dir string) {
			os.Remove(filepath.Join(dir, EntryFile))
			syscall.Mkfifo(filepath.Join(dir, EntryFile), 0o640)
		}, ErrNotRegular, ""},
		{"bad JSON", func(t *testing.T, dir string) {
			os.WriteFile(filepath.Join(dir, EntryFile), []byte("{\"version\": 1,"), 0o640)
		}, ErrBadJSON, ""},
		{"unknown key", func(t *testing.T, dir string) {
			data, _ := os.ReadFile(filepath.Join(dir, EntryFile))
			os.WriteFile(filepath.Join(dir, EntryFile), []byte(strings.Replace(string(data), "{", `{"uid": 0,`, 1)), 0o640)
		}, ErrBadJSON, `unknown field "uid"`},
		{"too large", func(t *testing.T, dir string) {
			os.WriteFile(filepath.Join(dir, EntryFile), []byte(strings.Repeat(" ", 2<<20)), 0o640)
		}, ErrTooLarge, ""},
		{"script changed size", func(t *testing.T, dir string) {
			os.WriteFile(filepath.Join(dir, ScriptFile), []byte("#!/bin/sh\n"), 0o640)
		}, nil, "the entry says"},
		{"invalid field", func(t *testing.T, dir string) {
			data, _ := os.ReadFile(filepath.Join(dir, EntryFile))
			os.WriteFile(filepath.Join(dir, EntryFile), []byte(strings.Replace(string(data), `"mode": "fair"`, `"mode": "greedy"`, 1)), 0o640)
		}, nil, `mode: "greedy" is not fair`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := testSpool(t)
			e := testEntry(time.Now())
			write(t, s, e)
			tc.modify(t, s.IncomingPath(os.Getuid(), e.ID))
			_, err := s.ReadIncoming(Incoming{os.Getuid(), e.ID}, Limits{})
			if err == nil || (tc.want != nil && !errors.Is(err, tc.want)) || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("err = %v, want %v %q", err, tc.want, tc.msg)
			}
		})
	}
}

// A user directory someone else made, or a symlink in its place, is
// refused by the wrapper and skipped by the daemon.
func TestUserDirOwnership(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	s := testSpool(t)
	uid := 4343
	if err := os.Mkdir(s.UserDir(uid), 0o770); err != nil {
		t.Fatal(err)
	}
	// Owned by root, not by uid.
	if err := s.EnsureUserDirs(uid); err == nil || !strings.Contains(err.Error(), "belongs to uid 0") {
		t.Fatalf("squatted directory: %v", err)
	}
	os.Remove(s.UserDir(uid))
	os.Symlink("/tmp", s.UserDir(uid))
	if err := s.EnsureUserDirs(uid); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Fatalf("symlink: %v", err)
	}
	_, probs := s.ScanIncoming()
	if len(probs) != 1 || !errors.Is(probs[0], ErrSymlink) {
		t.Fatalf("scan problems: %v", probs)
	}
}

func TestRecordsAndJournal(t *testing.T) {
	s := testSpool(t)
	rs, err := s.OpenRecords()
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	now := time.Now().UTC().Truncate(time.Second)
	r := &Record{ID: NewID(now), UID: 7, User: "u", Anchor: "42", State: StateQueued, Tasks: Counts{Total: 3, Pending: 3}, Entry: testEntry(now)}
	if err := rs.Put(r); err != nil {
		t.Fatal(err)
	}
	if err := rs.Journal(r, Event{Time: now, Event: "accepted"}); err != nil {
		t.Fatal(err)
	}
	r.State = StateCancelled
	if err := rs.Put(r); err != nil {
		t.Fatal(err)
	}
	if err := rs.Journal(r, Event{Time: now, Event: "cancelled"}); err != nil {
		t.Fatal(err)
	}
	got, probs := rs.List()
	if len(probs) > 0 || len(got) != 1 || got[0].State != StateCancelled || got[0].Entry.Tasks != 10 {
		t.Fatalf("list: %+v %v", got, probs)
	}
	evs, err := rs.ReadJournal(r.DirName())
	if err != nil || len(evs) != 2 || evs[0].Event != "accepted" || evs[1].Event != "cancelled" {
		t.Fatalf("journal: %+v %v", evs, err)
	}
	ents, _ := os.ReadDir(filepath.Join(s.Dir, JobsDir, r.DirName()))
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".") {
			t.Errorf("temporary file %s left", e.Name())
		}
	}
}

func TestArray(t *testing.T) {
	a := Array{Ranges: []Range{{0, 4, 2}, {7, 7, 1}, {10, 12, 1}}}
	if err := a.Validate(); err != nil {
		t.Fatal(err)
	}
	if a.Count() != 7 || a.String() != "0-4:2,7,10-12" {
		t.Fatalf("%d %s", a.Count(), a)
	}
	for i, want := range []int{0, 2, 4, 7, 10, 11, 12} {
		if got, ok := a.Index(i); !ok || got != want || !a.Contains(want) {
			t.Errorf("Index(%d) = %d %v, want %d", i, got, ok, want)
		}
	}
	for _, i := range []int{1, 3, 5, 8, 13} {
		if a.Contains(i) {
			t.Errorf("Contains(%d)", i)
		}
	}
	for _, bad := range []Array{{}, {Ranges: []Range{{5, 1, 1}}}, {Ranges: []Range{{0, 5, 2}}}, {Ranges: []Range{{0, 3, 1}, {3, 4, 1}}}, {Ranges: []Range{{0, 1, 0}}}} {
		if bad.Validate() == nil {
			t.Errorf("%+v validated", bad)
		}
	}
}

// TestCheck: spool.dir must name a glean spool (Init's users/ and jobs/),
// or, for the daemon's first start, a fresh empty directory; Check never
// creates it. Before, nothing looked at spool.dir until Init, which made
// whatever a typo named where its parent was writable.
func TestCheck(t *testing.T) {
	root := t.TempDir()
	mk := func(name string, files ...string) string {
		d := filepath.Join(root, name)
		for _, f := range append([]string{""}, files...) {
			if err := os.MkdirAll(filepath.Join(d, f), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		return d
	}
	laid := filepath.Join(root, "laid")
	rs, err := (&Spool{Dir: laid}).Init(-1)
	if err != nil {
		t.Fatal(err)
	}
	rs.Close()
	file := filepath.Join(root, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, dir string
		fresh     bool
		want      string // in the error; "" for none
	}{
		{"laid out", laid, false, ""},
		{"laid out, fresh allowed", laid, true, ""},
		{"missing", filepath.Join(root, "typo"), true, "typo does not exist (create it: systemd-tmpfiles"},
		{"a file", file, true, "is not a directory"},
		{"fresh", mk("fresh"), true, ""},
		{"fresh with lost+found", mk("fs", "lost+found", ".snapshot"), true, ""},
		{"fresh where a spool must be", mk("fresh2"), false, "is empty, not a glean spool"},
		{"another directory", mk("home", "alice"), true, "is not a glean spool: it has no users/ and jobs/"},
		// Init stopped part-way (its chgrp of users/ refused, or killed):
		// the next start finishes the layout, so the check lets it.
		{"half a spool, fresh allowed", mk("half", UsersDir), true, ""},
		{"half a spool with ended/", mk("half2", UsersDir, EndedDir), true, ""},
		{"half a spool where a spool must be", mk("half3", UsersDir), false, "laid out only in part"},
		{"half a spool and other files", mk("half4", UsersDir, "alice"), true, "is not a glean spool"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := (&Spool{Dir: tc.dir}).Check(tc.fresh)
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Errorf("Check(%v) = %v, want %q", tc.fresh, err, tc.want)
			}
			if err != nil && strings.Contains(err.Error(), "\n") {
				t.Errorf("more than one line: %q", err)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(root, "typo")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Check created the missing spool: %v", err)
	}
}
