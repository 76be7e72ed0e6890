package spool

import (
	"errors"
	"fmt"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"
)

// ErrMountPoint: a user mounted another filesystem on a directory or file
// of theirs in the spool.
var ErrMountPoint = errors.New("a mount point (another filesystem mounted in the spool): not read; unmount it")

// A user may mount a filesystem of their own (FUSE) on a directory or file
// they own in the spool, on a host they can log into. If the mount lets
// others in (allow_other, which /etc/fuse.conf's user_allow_other permits
// users), a FUSE server that never answers blocks every call of the daemon
// that reaches into it, even a stat of the mount point, and the round with
// it: every user's jobs would stop. So the daemon opens what is below
// users/<uid> one component at a time with openat2(RESOLVE_NO_XDEV), which
// refuses to step onto a mount without asking the mounted filesystem
// anything, and takes status from the descriptor. Without openat2 (kernels
// before 5.6; ENOSYS or, from some seccomp filters, EPERM) it is plain
// openat, and MountGuard says so.

var noOpenat2 atomic.Bool

// openatHere is openat(dirfd, name, flags) that stays on dirfd's
// filesystem: ErrMountPoint where name is a mount point.
func openatHere(dirfd int, name string, flags int) (int, error) {
	if !noOpenat2.Load() {
		fd, fallBack, err := openat2NoXdev(dirfd, name, flags)
		if !fallBack {
			return fd, err
		}
	}
	return openat(dirfd, name, flags)
}

// openat2NoXdev is openat2 with RESOLVE_NO_XDEV; fallBack: openat2 is not
// to be had, for this call (EPERM) or for good (ENOSYS).
func openat2NoXdev(dirfd int, name string, flags int) (fd int, fallBack bool, err error) {
	for {
		fd, err = unix.Openat2(dirfd, name, &unix.OpenHow{Flags: uint64(flags), Resolve: unix.RESOLVE_NO_XDEV})
		switch err {
		case unix.EINTR:
			continue
		case unix.ENOSYS:
			noOpenat2.Store(true)
			return -1, true, err
		case unix.EPERM:
			// Not a reason openat2 gives for these flags: a seccomp
			// filter that knows no openat2 (some container runtimes).
			return -1, true, err
		case unix.EXDEV:
			return -1, false, ErrMountPoint
		}
		return fd, false, err
	}
}

func openat(dirfd int, name string, flags int) (int, error) {
	for {
		fd, err := syscall.Openat(dirfd, name, flags, 0)
		if err != syscall.EINTR {
			return fd, err
		}
	}
}

// statHere is fstatat(dirfd, name, AT_SYMLINK_NOFOLLOW) through an O_PATH
// descriptor from openatHere: a mount point is an error, not a call into
// the mounted filesystem.
func statHere(dirfd int, name string) (unix.Stat_t, error) {
	var st unix.Stat_t
	fd, err := openatHere(dirfd, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC)
	if err != nil {
		return st, err
	}
	defer unix.Close(fd)
	err = unix.Fstat(fd, &st)
	return st, err
}

// MountGuard reports whether the daemon's reads refuse users' mounts here
// (nil), or why they cannot: gleand says so at its start.
func (s *Spool) MountGuard() error {
	d, err := unix.Open(s.Dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(d)
	fd, fallBack, err := openat2NoXdev(d, ".", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC)
	if fallBack {
		return fmt.Errorf("openat2 unavailable (%w: a kernel before 5.6, or a seccomp filter): a user's FUSE mount in the spool could block gleand", err)
	}
	if err != nil {
		return err
	}
	unix.Close(fd)
	return nil
}
