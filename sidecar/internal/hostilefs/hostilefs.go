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
	"os/exec"
	"os/signal"
	"runtime"
	"sync"
	"syscall"
	"testing"
	"time"
)

// nsEnv marks the test binary that Main started in a mount namespace of
// its own.
const nsEnv = "GLEAN_HOSTILEFS_PRIVATE_NS"

// Main runs a package's tests, as root, in a mount namespace of their
// own: a hostile mount that a killed test binary could not abort dies
// with the binary, instead of staying in the host's namespace (it would
// answer ENOTCONN there until someone unmounted it). Call it from
// TestMain: os.Exit(hostilefs.Main(m)). Where no namespace can be made
// (not root, no CAP_SYS_ADMIN) the tests run here, as before.
func Main(m *testing.M) int {
	if os.Geteuid() != 0 || os.Getenv(nsEnv) != "" {
		return m.Run()
	}
	exe, err := os.Executable()
	if err != nil {
		return m.Run()
	}
	cmd := exec.Command(exe, os.Args[1:]...)
	cmd.Args[0] = os.Args[0]
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(), nsEnv+"=1")
	// Go's fork marks / private (MS_REC) after unsharing, so the tests'
	// mounts do not propagate back. Pdeathsig is tied to the thread that
	// forks: keep it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Unshareflags: syscall.CLONE_NEWNS, Pdeathsig: syscall.SIGKILL}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	// The go command signals the test binary (SIGQUIT on its timeout, so
	// that it prints its goroutines): pass them on.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGQUIT)
	defer signal.Stop(sigs)
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "hostilefs: no mount namespace of the tests' own (%v): FUSE mounts are made in this one\n", err)
		signal.Stop(sigs)
		return m.Run()
	}
	done := make(chan struct{})
	go func() {
		for {
			select {
			case sig := <-sigs:
				cmd.Process.Signal(sig)
			case <-done:
				return
			}
		}
	}()
	err = cmd.Wait()
	close(done)
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee) && ee.ExitCode() > 0:
		return ee.ExitCode()
	default:
		fmt.Fprintf(os.Stderr, "hostilefs: the tests in their own mount namespace: %v\n", err)
		return 2
	}
}

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
