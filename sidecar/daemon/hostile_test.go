package daemon

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/glean-hpc/glean/sidecar/cluster"
	"github.com/glean-hpc/glean/sidecar/internal/hostilefs"
	"github.com/glean-hpc/glean/sidecar/spool"
)

// Issue 6, "Hostile input": everything under users/ is written by users
// who may try to make gleand read, follow or act on what is not theirs.
// Each hostile entry gets a clear reason in its record (what `glean show`
// prints), gleand acts on no Slurm job for it, follows no link, blocks on
// nothing, and a good entry in the same round is taken in all the same.
// The daemon never writes into users' directories: a rejected entry is
// set aside by its record (state rejected), not moved.
//
// The users are two made-up uids (alice, bob) so that ownership is real:
// the test chowns their files, so it runs as root (as `make test` does).

const (
	uidAlice, uidBob = 4201, 4202
)

func needRoot(t *testing.T) {
	t.Helper()
	if os.Getuid() != 0 {
		t.Skip("needs root: the hostile cases chown files to other users")
	}
}

// hostileFixture is the intake fixture with alice and bob.
func hostileFixture(t *testing.T) *fixture {
	t.Helper()
	needRoot(t)
	fx := newFixture(t)
	names := map[int]string{uidAlice: "alice", uidBob: "bob", 0: "root"}
	fx.in.users = func(uid int) (string, error) {
		if n, ok := names[uid]; ok {
			return n, nil
		}
		return "", fmt.Errorf("no user %d", uid)
	}
	for _, uid := range []int{uidAlice, uidBob} {
		for _, d := range []string{fx.s.UserDir(uid), filepath.Join(fx.s.UserDir(uid), spool.IncomingDir)} {
			if err := os.Mkdir(d, 0o770); err != nil {
				t.Fatal(err)
			}
			if err := os.Chown(d, uid, -1); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(d, 0o770|os.ModeSetgid); err != nil {
				t.Fatal(err)
			}
		}
	}
	return fx
}

// submitAs writes an entry for uid as its wrapper would and gives its
// files to uid.
func (fx *fixture) submitAs(t *testing.T, uid int, user string, mutate func(e *spool.Entry, anchor *QJob)) *spool.Entry {
	t.Helper()
	fx.uid, fx.user = uid, user
	e := fx.submit(t, 4, mutate)
	chownTree(t, fx.s.IncomingPath(uid, e.ID), uid)
	return e
}

func chownTree(t *testing.T, dir string, uid int) {
	t.Helper()
	err := filepath.Walk(dir, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, uid, -1)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// victim is a file that belongs to someone else (bob or root): a hostile
// entry points at it; the test checks that it is unchanged afterwards.
type victim struct {
	path string
	data []byte
	uid  int
}

func newVictim(t *testing.T, dir string, uid int, data []byte) victim {
	t.Helper()
	p := filepath.Join(dir, fmt.Sprintf("victim-of-%d", uid))
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(p, uid, -1); err != nil {
		t.Fatal(err)
	}
	return victim{p, data, uid}
}

func (v victim) check(t *testing.T) {
	t.Helper()
	data, err := os.ReadFile(v.path)
	st, serr := os.Lstat(v.path)
	if err != nil || serr != nil || !bytes.Equal(data, v.data) || int(st.Sys().(*syscall.Stat_t).Uid) != v.uid || st.Mode().Perm() != 0o600 {
		t.Errorf("the victim %s changed: %q %v %v", v.path, data, err, st)
	}
}

// roundWithin runs one intake round, failing if it blocks (a FIFO).
func (fx *fixture) roundWithin(t *testing.T, d time.Duration) Stats {
	t.Helper()
	type res struct {
		st  Stats
		err error
	}
	done := make(chan res, 1)
	go func() {
		st, err := fx.in.Round(context.Background(), fx.now)
		done <- res{st, err}
	}()
	select {
	case r := <-done:
		if r.err != nil {
			t.Fatal(r.err)
		}
		return r.st
	case <-time.After(d):
		t.Fatalf("the intake round blocked for %v", d)
	}
	return Stats{}
}

func replaceWith(t *testing.T, path string, make func(string) error) {
	t.Helper()
	if err := os.RemoveAll(path); err != nil {
		t.Fatal(err)
	}
	if err := make(path); err != nil {
		t.Fatal(err)
	}
}

func rewrite(t *testing.T, path string, data []byte, uid int) {
	t.Helper()
	replaceWith(t, path, func(p string) error { return os.WriteFile(p, data, 0o640) })
	if err := os.Chown(path, uid, -1); err != nil {
		t.Fatal(err)
	}
}

func TestIntakeHostileEntries(t *testing.T) {
	type env struct {
		fx   *fixture
		e    *spool.Entry // the hostile entry, written as alice
		dir  string       // its directory
		bobs *spool.Entry // an entry of bob's, taken in the same round
		vict []victim     // files that must not change
		ok   []string     // other jobs gleand may act on
	}
	encoded := func(t *testing.T, e *spool.Entry) []byte {
		data, err := e.Encode()
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	// replaceEntry removes the hostile entry and writes e in its place
	// (alice's files, in the directory its id names).
	replaceEntry := func(t *testing.T, v *env, e *spool.Entry) {
		replaceWith(t, v.dir, func(string) error { return nil })
		dir := v.fx.s.IncomingPath(uidAlice, e.ID)
		if err := os.Mkdir(dir, 0o750); err != nil {
			t.Fatal(err)
		}
		rewrite(t, filepath.Join(dir, spool.EntryFile), encoded(t, e), uidAlice)
		rewrite(t, filepath.Join(dir, spool.ScriptFile), []byte("#!/bin/sh\n"), uidAlice)
		os.Chown(dir, uidAlice, -1)
		v.e = e
	}
	for _, tc := range []struct {
		name   string
		mutate func(e *spool.Entry, a *QJob) // before the entry is written
		setup  func(t *testing.T, v *env)    // after: make it hostile
		state  string                        // the hostile entry's record state
		reason string                        // in the record's reason (glean show)
	}{
		{"entry.json a symlink to another user's file", nil, func(t *testing.T, v *env) {
			vb := newVictim(t, filepath.Dir(v.fx.s.Dir), uidBob, encoded(t, v.bobs))
			v.vict = append(v.vict, vb)
			replaceWith(t, filepath.Join(v.dir, spool.EntryFile), func(p string) error { return os.Symlink(vb.path, p) })
		}, spool.StateRejected, "entry.json: a symlink where a file or directory was expected"},
		{"entry.json a hardlink to root's file", nil, func(t *testing.T, v *env) {
			vr := newVictim(t, filepath.Join(v.fx.s.Dir, spool.UsersDir), 0, encoded(t, v.e))
			v.vict = append(v.vict, vr)
			replaceWith(t, filepath.Join(v.dir, spool.EntryFile), func(p string) error { return os.Link(vr.path, p) })
		}, spool.StateRejected, "entry.json: a file with more than one link (hardlink)"},
		{"script a symlink to root's file", nil, func(t *testing.T, v *env) {
			vr := newVictim(t, filepath.Dir(v.fx.s.Dir), 0, []byte("root:secret\n"))
			v.vict = append(v.vict, vr)
			replaceWith(t, filepath.Join(v.dir, spool.ScriptFile), func(p string) error { return os.Symlink(vr.path, p) })
		}, spool.StateRejected, "script: a symlink"},
		{"script a hardlink to another user's file", nil, func(t *testing.T, v *env) {
			vb := newVictim(t, filepath.Join(v.fx.s.Dir, spool.UsersDir), uidBob, []byte("#!/bin/sh\n"))
			v.vict = append(v.vict, vb)
			replaceWith(t, filepath.Join(v.dir, spool.ScriptFile), func(p string) error { return os.Link(vb.path, p) })
		}, spool.StateRejected, "script: a file with more than one link"},
		{"entry directory a symlink to another user's entry", nil, func(t *testing.T, v *env) {
			replaceWith(t, v.dir, func(p string) error { return os.Symlink(v.fx.s.IncomingPath(uidBob, v.bobs.ID), p) })
		}, spool.StateRejected, "a symlink where a file or directory was expected"},
		{"entry directory owned by another user", nil, func(t *testing.T, v *env) {
			chownTree(t, v.dir, uidBob)
		}, spool.StateRejected, "owner mismatch"},
		{"entry.json owned by another user", nil, func(t *testing.T, v *env) {
			if err := os.Chown(filepath.Join(v.dir, spool.EntryFile), uidBob, -1); err != nil {
				t.Fatal(err)
			}
		}, spool.StateRejected, "entry.json: owner mismatch: the file belongs to uid 4202, the directory to uid 4201"},
		{"entry.json a FIFO", nil, func(t *testing.T, v *env) {
			replaceWith(t, filepath.Join(v.dir, spool.EntryFile), func(p string) error { return syscall.Mkfifo(p, 0o640) })
			os.Chown(filepath.Join(v.dir, spool.EntryFile), uidAlice, -1)
		}, spool.StateRejected, "entry.json: not a regular file"},
		{"script a FIFO", nil, func(t *testing.T, v *env) {
			replaceWith(t, filepath.Join(v.dir, spool.ScriptFile), func(p string) error { return syscall.Mkfifo(p, 0o640) })
			os.Chown(filepath.Join(v.dir, spool.ScriptFile), uidAlice, -1)
		}, spool.StateRejected, "script: not a regular file"},
		{"entry.json a directory", nil, func(t *testing.T, v *env) {
			replaceWith(t, filepath.Join(v.dir, spool.EntryFile), func(p string) error { return os.Mkdir(p, 0o750) })
			os.Chown(filepath.Join(v.dir, spool.EntryFile), uidAlice, -1)
		}, spool.StateRejected, "entry.json: not a regular file"},
		{"script a 1 GB sparse file", nil, func(t *testing.T, v *env) {
			if err := os.Truncate(filepath.Join(v.dir, spool.ScriptFile), 1<<30); err != nil {
				t.Fatal(err)
			}
		}, spool.StateRejected, "script: too large: 1073741824 bytes"},
		{"entry.json a 1 GB sparse file", nil, func(t *testing.T, v *env) {
			if err := os.Truncate(filepath.Join(v.dir, spool.EntryFile), 1<<30); err != nil {
				t.Fatal(err)
			}
		}, spool.StateRejected, "entry.json: too large"},
		{"truncated JSON", nil, func(t *testing.T, v *env) {
			data := encoded(t, v.e)
			rewrite(t, filepath.Join(v.dir, spool.EntryFile), data[:len(data)/2], uidAlice)
		}, spool.StateRejected, "entry.json: bad JSON"},
		{"invalid JSON", nil, func(t *testing.T, v *env) {
			rewrite(t, filepath.Join(v.dir, spool.EntryFile), []byte("{\"version\":1,,}"), uidAlice)
		}, spool.StateRejected, "entry.json: bad JSON"},
		{"a uid field", nil, func(t *testing.T, v *env) {
			data := encoded(t, v.e)
			rewrite(t, filepath.Join(v.dir, spool.EntryFile), append([]byte(`{"uid":4202,`), data[1:]...), uidAlice)
		}, spool.StateRejected, `unknown field "uid"`},
		{"the user field names bob: still alice's job", func(e *spool.Entry, a *QJob) { e.User = "bob" }, nil, spool.StateQueued, ""},
		{"the user field names bob, the anchor is bob's", func(e *spool.Entry, a *QJob) { e.User, a.User = "bob", "bob" }, nil,
			spool.StateRejected, "is not yours (it belongs to bob)"},
		{"bob's anchor with its id and nonce copied from squeue", nil, func(t *testing.T, v *env) {
			forged := *v.bobs
			forged.User = "alice"
			replaceEntry(t, v, &forged)
		}, spool.StateRejected, "is not yours (it belongs to bob)"},
		{"a second entry claiming alice's own anchor", nil, func(t *testing.T, v *env) {
			other := v.fx.submitAs(t, uidAlice, "alice", nil)
			e2 := *v.e
			e2.ID, e2.Nonce = spool.NewID(v.fx.now.Add(time.Second)), spool.NewNonce()
			e2.Anchor = other.Anchor
			replaceEntry(t, v, &e2)
			v.ok = []string{other.Anchor}
		}, spool.StateRejected, "does not carry this entry's id and nonce"},
		{"an entry id that does not match its directory", nil, func(t *testing.T, v *env) {
			e2 := *v.e
			e2.ID = spool.NewID(v.fx.now.Add(-time.Hour))
			rewrite(t, filepath.Join(v.dir, spool.EntryFile), encoded(t, &e2), uidAlice)
		}, spool.StateRejected, "does not match its directory"},
		{"a script whose size is not the entry's", nil, func(t *testing.T, v *env) {
			rewrite(t, filepath.Join(v.dir, spool.ScriptFile), []byte("#!/bin/sh\nrm -rf ~\n"), uidAlice)
		}, spool.StateRejected, "script: 19 bytes, the entry says 10"},
		// Output patterns are the user's business: the agent opens them as
		// the user, so the kernel refuses what the user may not write;
		// neither gleand nor glean-helper ever opens them.
		{"output pattern ../../etc/passwd", func(e *spool.Entry, a *QJob) {
			e.Output, e.Error, e.Input = "../../etc/passwd", "/etc/shadow", "/root/.ssh/id_rsa"
		}, nil, spool.StateQueued, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fx := hostileFixture(t)
			v := &env{fx: fx}
			v.bobs = fx.submitAs(t, uidBob, "bob", nil)
			v.e = fx.submitAs(t, uidAlice, "alice", tc.mutate)
			v.dir = fx.s.IncomingPath(uidAlice, v.e.ID)
			if tc.setup != nil {
				tc.setup(t, v)
			}
			fx.slurm.calls = nil
			st := fx.roundWithin(t, 20*time.Second)

			r := fx.in.Get(spool.RecordName(uidAlice, v.e.ID))
			if r == nil || r.State != tc.state || !strings.Contains(r.Reason, tc.reason) {
				t.Fatalf("record %+v\nwant state %s, reason with %q", r, tc.state, tc.reason)
			}
			if strings.ContainsRune(r.Reason, '\n') {
				t.Errorf("reason on more than one line: %q", r.Reason)
			}
			if r.UID != uidAlice || r.User != "alice" {
				t.Errorf("record of uid %d user %q: identity is the files' owner, alice", r.UID, r.User)
			}
			if rb := fx.in.Get(spool.RecordName(uidBob, v.bobs.ID)); rb == nil || rb.State != spool.StateQueued || rb.User != "bob" {
				t.Errorf("bob's good entry in the same round: %+v (round %+v)", rb, st)
			}
			// gleand acted on bob's verified jobs and, for a rejection, on
			// no job of the hostile entry's.
			for _, c := range fx.slurm.calls {
				id := strings.Fields(c)[1]
				if id != v.bobs.Anchor && !slices.Contains(v.ok, id) && (tc.state == spool.StateRejected || id != v.e.Anchor) {
					t.Errorf("acted on job %s for a hostile entry (%v)", id, fx.slurm.calls)
				}
			}
			if j := fx.slurm.jobs[v.bobs.Anchor]; j.State != "PENDING" || j.User != "bob" {
				t.Errorf("bob's anchor %+v", j)
			}
			for _, vc := range v.vict {
				vc.check(t)
			}
			// Set aside for good: the next round does nothing more.
			if st := fx.roundWithin(t, 20*time.Second); st != (Stats{}) {
				t.Errorf("second round: %+v", st)
			}
		})
	}
}

// A user directory or incoming directory that is a symlink (to another
// user's) or is not the user's is skipped with a log line: bob's entries
// are never taken in as alice's, and bob's own are taken in.
func TestIntakeHostileUserDirs(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, fx *fixture)
	}{
		{"users/<alice> a symlink to bob's directory", func(t *testing.T, fx *fixture) {
			replaceWith(t, fx.s.UserDir(uidAlice), func(p string) error { return os.Symlink(fx.s.UserDir(uidBob), p) })
		}},
		{"users/<alice>/incoming a symlink to bob's", func(t *testing.T, fx *fixture) {
			replaceWith(t, filepath.Join(fx.s.UserDir(uidAlice), spool.IncomingDir), func(p string) error {
				return os.Symlink(filepath.Join(fx.s.UserDir(uidBob), spool.IncomingDir), p)
			})
		}},
		{"users/<alice> owned by bob", func(t *testing.T, fx *fixture) {
			if err := os.Chown(fx.s.UserDir(uidAlice), uidBob, -1); err != nil {
				t.Fatal(err)
			}
		}},
		{"users/<alice> a file", func(t *testing.T, fx *fixture) {
			replaceWith(t, fx.s.UserDir(uidAlice), func(p string) error { return os.WriteFile(p, []byte("x"), 0o600) })
			os.Chown(fx.s.UserDir(uidAlice), uidAlice, -1)
		}},
		// A FUSE server of alice's that never answers: anything that
		// reaches into its mount blocks, a stat of it included.
		{"users/<alice> a hostile mount", func(t *testing.T, fx *fixture) {
			hostilefs.Need(t, fx.s.UserDir(uidAlice), fx.s.MountGuard())
		}},
		{"users/<alice>/incoming a hostile mount", func(t *testing.T, fx *fixture) {
			hostilefs.Need(t, filepath.Join(fx.s.UserDir(uidAlice), spool.IncomingDir), fx.s.MountGuard())
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fx := hostileFixture(t)
			var logs bytes.Buffer
			fx.in.log = slog.New(slog.NewTextHandler(&logs, nil))
			bobs := fx.submitAs(t, uidBob, "bob", nil)
			tc.setup(t, fx)
			fx.slurm.calls = nil
			st := fx.roundWithin(t, 20*time.Second)
			if st.Accepted != 1 || st.Rejected != 0 {
				t.Errorf("round %+v, want bob's entry only", st)
			}
			if r := fx.in.Get(spool.RecordName(uidBob, bobs.ID)); r == nil || r.State != spool.StateQueued || r.UID != uidBob {
				t.Errorf("bob's entry: %+v", r)
			}
			if r := fx.in.Get(spool.RecordName(uidAlice, bobs.ID)); r != nil {
				t.Errorf("bob's entry taken in as alice's: %+v", r)
			}
			if !strings.Contains(logs.String(), "spool scan") || !strings.Contains(logs.String(), strconv.Itoa(uidAlice)) {
				t.Errorf("no log line for alice's directory:\n%s", logs.String())
			}
		})
	}
}

// workJob is alice's job of tasks 0-3, taken in, with its work directory
// (alice's) and an executor over the daemon's records that logs to logs.
type workJob struct {
	fx   *fixture
	e    *spool.Entry
	rec  *spool.Record
	w    *spool.Work
	rs   *spool.Records
	x    *Executor
	logs bytes.Buffer
}

func newWorkJob(t *testing.T, heartbeat time.Duration) *workJob {
	t.Helper()
	j := &workJob{fx: hostileFixture(t)}
	j.e = j.fx.submitAs(t, uidAlice, "alice", nil)
	if st := j.fx.roundWithin(t, 20*time.Second); st.Accepted != 1 {
		t.Fatalf("round %+v", st)
	}
	j.rec = j.fx.in.Get(spool.RecordName(uidAlice, j.e.ID))
	var err error
	if j.w, err = j.fx.s.OpenWork(uidAlice, j.e.ID); err != nil {
		t.Fatal(err)
	}
	chownTree(t, filepath.Join(j.fx.s.UserDir(uidAlice), spool.WorkDir), uidAlice)
	if j.rs, err = j.fx.s.OpenRecords(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.rs.Close() })
	j.x = &Executor{opt: ExecOptions{Spool: j.fx.s, Retries: 2, MaxAttempts: 20, HeartbeatTimeout: heartbeat}, records: j.rs,
		log: slog.New(slog.NewTextHandler(&j.logs, nil)), books: map[string]*book{}}
	return j
}

// The work directory is the user's too (the agents write it as the user):
// results and leases that are links, FIFOs, directories, huge, not the
// user's, or that name another task are discarded with a log line, never
// followed; a good result next to them is committed.
func TestWorkHostileFiles(t *testing.T) {
	j := newWorkJob(t, time.Hour)
	fx, e, rec, w, rs, x := j.fx, j.e, j.rec, j.w, j.rs, j.x
	logs := &j.logs
	results, leases := filepath.Join(w.Dir, spool.ResultsDir), filepath.Join(w.Dir, spool.LeasesDir)
	result := func(task int, attempt string) []byte {
		data, _ := json.Marshal(spool.Result{Version: 1, Task: task, Attempt: attempt, Pilot: "77", Outcome: spool.OutcomeExited})
		return data
	}
	put := func(dir, name string, data []byte, uid int) {
		rewrite(t, filepath.Join(dir, name), data, uid)
	}
	others := filepath.Join(fx.s.UserDir(uidBob), "not-alices")
	if err := os.Mkdir(others, 0o700); err != nil {
		t.Fatal(err)
	}
	vb := newVictim(t, others, uidBob, result(0, "a"))
	vr := newVictim(t, filepath.Dir(fx.s.Dir), 0, result(1, "b"))
	mk := func(name string, f func(string) error) {
		p := filepath.Join(results, name)
		if err := f(p); err != nil {
			t.Fatal(err)
		}
		if name != "1.b" { // a hardlink is its target's inode: root's
			os.Lchown(p, uidAlice, -1)
		}
	}
	mk("0.a", func(p string) error { return os.Symlink(vb.path, p) })
	mk("1.b", func(p string) error { return os.Link(vr.path, p) })
	mk("2.c", func(p string) error { return syscall.Mkfifo(p, 0o640) })
	mk("2.d", func(p string) error { return os.Mkdir(p, 0o750) })
	mk("2.e", func(p string) error {
		if err := os.WriteFile(p, nil, 0o640); err != nil {
			return err
		}
		return os.Truncate(p, 1<<30)
	})
	put(results, "2.f", result(2, "f"), uidBob)   // not alice's file
	put(results, "2.g", result(3, "g"), uidAlice) // names another task
	put(results, "2.h", []byte("{\"task\":2,"), uidAlice)
	put(results, "3.ok", result(3, "ok"), uidAlice) // the good one
	if err := os.Symlink(vb.path, filepath.Join(leases, "1")); err != nil {
		t.Fatal(err)
	}
	os.Lchown(filepath.Join(leases, "1"), uidAlice, -1)
	put(leases, "-1", []byte("{}"), uidAlice)

	b := newBook(nil)
	done := make(chan struct{})
	var committed, running int
	go func() {
		defer close(done)
		committed, _, running, _, _ = x.work(fx.now, rec, b, &cluster.Snapshot{Complete: true}, nil)
	}()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("the work round blocked (a FIFO?)")
	}
	if committed != 1 || !b.committed["ok"] || len(b.committed) != 1 {
		t.Errorf("committed %d: %v, want the good result only", committed, b.committed)
	}
	for _, f := range []string{"0.a", "1.b", "2.c", "2.e", "2.f", "2.g", "2.h"} {
		if !strings.Contains(logs.String(), "file="+f) {
			t.Errorf("no log line for the discarded result %s", f)
		}
		if _, err := os.Lstat(filepath.Join(results, f)); err == nil {
			t.Errorf("discarded result %s still there", f)
		}
	}
	if running != 1 {
		t.Errorf("%d tasks running, want 1 (the symlinked lease, until its heartbeat times out; -1 is no task)", running)
	}
	vb.check(t)
	vr.check(t)
	evs, _ := rs.TaskEvents(rec.DirName())
	for _, ev := range evs {
		if !e.ArrayContains(ev.Index) || ev.Attempt != "ok" {
			t.Errorf("journal event %+v", ev)
		}
	}
	if t.Failed() {
		t.Log(logs.String())
	}
}

// Alice's mounts in her work directory (a FUSE server that never answers)
// block nothing: the result and the lease on them are refused with a log
// line, the good result next to them is committed.
func TestWorkHostileMount(t *testing.T) {
	j := newWorkJob(t, time.Hour)
	results, leases := filepath.Join(j.w.Dir, spool.ResultsDir), filepath.Join(j.w.Dir, spool.LeasesDir)
	for _, f := range []string{filepath.Join(results, "0.m"), filepath.Join(leases, "1")} {
		rewrite(t, f, []byte("{}"), uidAlice)
	}
	good, _ := json.Marshal(spool.Result{Version: 1, Task: 3, Attempt: "ok", Pilot: "77", Outcome: spool.OutcomeExited})
	rewrite(t, filepath.Join(results, "3.ok"), good, uidAlice)
	mr := hostilefs.Need(t, filepath.Join(results, "0.m"), j.fx.s.MountGuard())
	ml := hostilefs.Need(t, filepath.Join(leases, "1"), j.fx.s.MountGuard())
	b := newBook(nil)
	var committed int
	hostilefs.Within(t, 20*time.Second, "the work round", func() {
		committed, _, _, _, _ = j.x.work(j.fx.now, j.rec, b, &cluster.Snapshot{Complete: true}, nil)
	}, mr, ml)
	if committed != 1 || !b.committed["ok"] {
		t.Errorf("committed %d: %v, want the good result", committed, b.committed)
	}
	if !strings.Contains(j.logs.String(), "file=0.m") || !strings.Contains(j.logs.String(), "mount point") {
		t.Errorf("no log line for the mounted result:\n%s", j.logs.String())
	}
}

// A lease whose name is a task index outside the job's array (the user
// can create one in their work directory) must not reach the journal: a
// "pilot-lost" event for task 99 of a 4-task job counts toward nothing
// real, and after limits' attempts it becomes a final "failed" line that
// makes the job's exit code 1 and its final count reach the task count
// early. (work() checked the array for results, not for leases.)
func TestWorkLeaseOutsideArray(t *testing.T) {
	j := newWorkJob(t, time.Minute)
	rewrite(t, filepath.Join(j.w.Dir, spool.LeasesDir, "99"), []byte(`{"version":1,"task":99,"attempt":"x","pilot":"5"}`), uidAlice)
	rec, rs, x, fx := j.rec, j.rs, j.x, j.fx
	_, lost, running, _, _ := x.work(fx.now.Add(time.Hour), rec, newBook(nil), &cluster.Snapshot{Complete: true}, nil)
	evs, _ := rs.TaskEvents(rec.DirName())
	if lost != 0 || running != 0 || len(evs) != 0 {
		t.Errorf("a lease for task 99 of a 4-task job: lost %d, running %d, journal %+v", lost, running, evs)
	}
}

// The loop, watching the spool, goes on with a hostile mount on alice's
// incoming directory: the watch for it is refused like the scan, and bob's
// entry is taken in at once (through fsnotify: the rescan is an hour away).
func TestLoopHostileMount(t *testing.T) {
	fx := hostileFixture(t)
	m := hostilefs.Need(t, filepath.Join(fx.s.UserDir(uidAlice), spool.IncomingDir), fx.s.MountGuard())
	rounds, stop := fx.watchingLoop()
	defer stop()
	deadline := time.After(20 * time.Second)
	select {
	case <-rounds: // the first round, at start
	case <-deadline:
		m.Abort()
		t.Fatal("the loop's first round blocked in alice's mount")
	}
	fx.submitAs(t, uidBob, "bob", nil)
	awaitAccepted(t, rounds, deadline, "bob's entry not taken in beside alice's mount", m.Abort)
}

// The watcher watches an incoming directory through the descriptor it
// checked (/proc/self/fd/<n>), never by its path: a mount made on the path
// since leaves the watch on the directory itself, which neither blocks nor
// misses its entries.
func TestWatchThroughDescriptor(t *testing.T) {
	fx := hostileFixture(t)
	d, err := fx.s.OpenIncoming(uidAlice)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	m := hostilefs.Need(t, filepath.Join(fx.s.UserDir(uidAlice), spool.IncomingDir), fx.s.MountGuard())
	fw, err := fsnotify.NewWatcher()
	if err != nil {
		t.Fatal(err)
	}
	defer fw.Close()
	hostilefs.Within(t, 10*time.Second, "the watch", func() { err = fw.Add("/proc/self/fd/" + strconv.Itoa(int(d.Fd()))) }, m)
	if err != nil {
		t.Fatal(err)
	}
	// An entry written into the directory itself (under the mount).
	hostilefs.Within(t, 10*time.Second, "the entry", func() {
		err = os.Mkdir("/proc/self/fd/"+strconv.Itoa(int(d.Fd()))+"/"+spool.NewID(time.Now()), 0o750)
	}, m)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-fw.Events:
	case err := <-fw.Errors:
		t.Fatal(err)
	case <-time.After(10 * time.Second):
		t.Fatal("no event for an entry in the watched directory")
	}
}
