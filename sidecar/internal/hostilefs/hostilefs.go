// Package hostilefs mounts, for tests, a FUSE filesystem whose server never
// answers, as a hostile user could on a directory or file of theirs in the
// spool: every call that reaches into the mount, even a stat of the mount
// point, blocks until Abort. The mount is root's and lets root in
// (user_id=0), as a user's mount with allow_other lets in the daemon's user.
// It needs root and /dev/fuse; Need skips a test without them.
package hostilefs

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Mount is a mounted hostile filesystem.
type Mount struct {
	Path string
	fd   int
	once sync.Once
}

// New mounts a hostile filesystem on path, a directory or a regular file.
func New(path string) (*Mount, error) {
	st, err := os.Lstat(path)
	if err != nil {
		return nil, err
	}
	rootmode := "40000" // S_IFDIR
	if st.Mode().IsRegular() {
		rootmode = "100000" // S_IFREG
	}
	fd, err := syscall.Open("/dev/fuse", syscall.O_RDWR|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	opts := fmt.Sprintf("fd=%d,rootmode=%s,user_id=0,group_id=0", fd, rootmode)
	if err := syscall.Mount("glean-hostile", path, "fuse", syscall.MS_NOSUID|syscall.MS_NODEV, opts); err != nil {
		syscall.Close(fd)
		return nil, fmt.Errorf("mount fuse on %s: %w", path, err)
	}
	return &Mount{Path: path, fd: fd}, nil
}

// NeedRoot skips the test unless it runs as root (mounts).
func NeedRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("hostilefs: mounting needs root")
	}
}

// Need mounts on path, or skips the test where FUSE mounts are not
// possible (not root, no /dev/fuse) or where the daemon cannot refuse
// them (guard: spool.MountGuard's answer; without openat2 a mount blocks
// it, as documented). Abort runs at the test's end.
func Need(t testing.TB, path string, guard error) *Mount {
	t.Helper()
	NeedRoot(t)
	if guard != nil {
		t.Skipf("hostilefs: %v", guard)
	}
	m, err := New(path)
	if err != nil {
		if errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.ENODEV) || errors.Is(err, syscall.EACCES) {
			t.Skipf("hostilefs: no FUSE mounts here: %v", err)
		}
		t.Fatal(err)
	}
	t.Cleanup(m.Abort)
	return m
}

// Abort ends the connection (a call blocked in the mount fails with
// ENOTCONN) and detaches the mount.
func (m *Mount) Abort() {
	m.once.Do(func() {
		syscall.Close(m.fd)
		syscall.Unmount(m.Path, syscall.MNT_DETACH)
	})
}

// Within runs fn and waits at most d for it. If fn is still blocked then,
// the test fails and the mounts are aborted so that fn returns (each one
// fn might block in must be among them, or the test hangs).
func Within(t testing.TB, d time.Duration, what string, fn func(), mounts ...*Mount) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); fn() }()
	select {
	case <-done:
	case <-time.After(d):
		t.Errorf("%s: blocked for %v in a hostile mount", what, d)
		for _, m := range mounts {
			m.Abort()
		}
		<-done
	}
}
