package spool

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/glean-hpc/glean/sidecar/internal/hostilefs"
)

// A user's mount in the spool, its server never answering, stops none of
// the daemon's reads: each refuses the mount at once with ErrMountPoint
// (openat2 RESOLVE_NO_XDEV), instead of blocking the round and with it
// every user's jobs.
func TestHostileMountRefused(t *testing.T) {
	const limit = 10 * time.Second
	isMount := func(err error) bool { return errors.Is(err, ErrMountPoint) }
	setup := func(t *testing.T) (*Spool, int, string, *Work) {
		sp, uid, id, w := newWork(t)
		for i := 0; i < 2; i++ {
			if _, err := w.Take([]int{i}, Lease{Attempt: "a", Pilot: "7"}); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Finish(Result{Task: 1, Attempt: "a", Outcome: OutcomeExited}); err != nil {
			t.Fatal(err)
		}
		return sp, uid, id, w
	}
	scan := func(t *testing.T, m *hostilefs.Mount, sp *Spool, uid int, id string) (ws WorkScan, err error) {
		hostilefs.Within(t, limit, "ScanWork", func() { ws, err = sp.ScanWork(uid, id) }, m)
		return ws, err
	}

	// users/ is the admin's, and may be a filesystem of its own: a bind
	// mount of itself here.
	t.Run("users/ a mount of the admin's", func(t *testing.T) {
		hostilefs.NeedRoot(t)
		sp, uid, id, _ := setup(t)
		users := filepath.Join(sp.Dir, UsersDir)
		if err := syscall.Mount(users, users, "", syscall.MS_BIND, ""); err != nil {
			t.Skipf("bind mount: %v", err)
		}
		t.Cleanup(func() { syscall.Unmount(users, syscall.MNT_DETACH) })
		ws, err := sp.ScanWork(uid, id)
		if err != nil || len(ws.Leases) != 1 || len(ws.Results) != 1 || len(ws.Problems) != 0 {
			t.Errorf("ScanWork: %+v, %v", ws, err)
		}
		if _, problems := sp.ScanIncoming(); len(problems) != 0 {
			t.Errorf("ScanIncoming: %v", problems)
		}
		if _, err := sp.ReadIncoming(Incoming{UID: uid, Name: NewID(time.Now())}, Limits{}); !errors.Is(err, syscall.ENOENT) {
			t.Errorf("ReadIncoming of an entry not there: %v, want ENOENT (users/ opened)", err)
		}
	})
	t.Run("the work directory", func(t *testing.T) {
		sp, uid, id, w := setup(t)
		m := hostilefs.Need(t, w.Dir, sp.MountGuard())
		if _, err := scan(t, m, sp, uid, id); !isMount(err) {
			t.Errorf("ScanWork: %v, want ErrMountPoint", err)
		}
		var err error
		hostilefs.Within(t, limit, "RemoveResult", func() { err = sp.RemoveResult(uid, id, "1.a") }, m)
		if !isMount(err) {
			t.Errorf("RemoveResult: %v, want ErrMountPoint", err)
		}
	})
	t.Run("the leases directory", func(t *testing.T) {
		sp, uid, id, w := setup(t)
		m := hostilefs.Need(t, filepath.Join(w.Dir, LeasesDir), sp.MountGuard())
		ws, err := scan(t, m, sp, uid, id)
		if err != nil || len(ws.Problems) != 1 || !isMount(ws.Problems[0]) || len(ws.Results) != 1 {
			t.Errorf("ScanWork: %+v, %v; want the result and the leases' mount as the one problem", ws, err)
		}
	})
	t.Run("a lease file", func(t *testing.T) {
		sp, uid, id, w := setup(t)
		m := hostilefs.Need(t, w.LeasePath(0), sp.MountGuard())
		ws, err := scan(t, m, sp, uid, id)
		if err != nil || len(ws.Leases) != 1 || ws.Leases[0].Task != 0 || len(ws.Problems) != 1 || !isMount(ws.Problems[0]) {
			t.Errorf("ScanWork: %+v, %v; want lease 0 listed, its mount the one problem", ws, err)
		}
		hostilefs.Within(t, limit, "RemoveLease", func() { err = sp.RemoveLease(uid, id, 0, "a") }, m)
		if err == nil {
			t.Error("RemoveLease of a mount point: no error")
		}
	})
	t.Run("a result file", func(t *testing.T) {
		sp, uid, id, w := setup(t)
		m := hostilefs.Need(t, filepath.Join(w.Dir, ResultsDir, "1.a"), sp.MountGuard())
		ws, err := scan(t, m, sp, uid, id)
		if err != nil || len(ws.Results) != 1 || !isMount(ws.Results[0].Err) {
			t.Errorf("ScanWork: %+v, %v; want the result refused as a mount point", ws, err)
		}
	})
	t.Run("the incoming directory", func(t *testing.T) {
		sp, uid, _, _ := setup(t)
		m := hostilefs.Need(t, filepath.Join(sp.UserDir(uid), IncomingDir), sp.MountGuard())
		var problems []error
		hostilefs.Within(t, limit, "ScanIncoming", func() { _, problems = sp.ScanIncoming() }, m)
		if len(problems) != 1 || !isMount(problems[0]) {
			t.Errorf("ScanIncoming: problems %v, want the mount", problems)
		}
		var err error
		hostilefs.Within(t, limit, "OpenIncoming", func() {
			var d *os.File
			if d, err = sp.OpenIncoming(uid); d != nil {
				d.Close()
			}
		}, m)
		if !isMount(err) {
			t.Errorf("OpenIncoming: %v, want ErrMountPoint", err)
		}
	})
	t.Run("an entry's file", func(t *testing.T) {
		sp, uid, _, _ := setup(t)
		id := NewID(time.Now())
		dir := filepath.Join(sp.UserDir(uid), IncomingDir, id)
		if err := os.Mkdir(dir, 0o750); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, EntryFile), []byte("{}"), 0o640); err != nil {
			t.Fatal(err)
		}
		m := hostilefs.Need(t, filepath.Join(dir, EntryFile), sp.MountGuard())
		var err error
		hostilefs.Within(t, limit, "ReadIncoming", func() { _, err = sp.ReadIncoming(Incoming{UID: uid, Name: id}, Limits{}) }, m)
		if !isMount(err) {
			t.Errorf("ReadIncoming: %v, want ErrMountPoint", err)
		}
	})
}

// Here (Linux >= 5.6, no seccomp filter in the way) the guard is up; where
// it is not, gleand warns at start and the hostile-mount tests skip.
func TestMountGuard(t *testing.T) {
	sp := &Spool{Dir: t.TempDir()}
	if err := sp.MountGuard(); err != nil {
		t.Skipf("no openat2 here: %v", err)
	}
	if err := (&Spool{Dir: filepath.Join(t.TempDir(), "missing")}).MountGuard(); !errors.Is(err, syscall.ENOENT) {
		t.Errorf("a missing spool: %v, want ENOENT", err)
	}
}
