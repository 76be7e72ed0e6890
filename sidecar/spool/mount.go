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
// they own in the spool, on a host they can log into. A FUSE server that
// never answers blocks every call that reaches into its mount, even a stat
// of the mount point, and the daemon's round with it: every user's jobs
// would stop. So the daemon opens users' files and directories one
// component at a time with openat2(RESOLVE_NO_XDEV), which refuses to step
// onto a mount without asking the mounted filesystem anything, and takes
// their status from the descriptor. Kernels before 5.6 have no openat2:
// there it is plain openat, and a mount in the spool can still block.

var noOpenat2 atomic.Bool

// openatHere is openat(dirfd, name, flags) that stays on dirfd's
// filesystem: ErrMountPoint where name is a mount point.
func openatHere(dirfd int, name string, flags int) (int, error) {
	for !noOpenat2.Load() {
		fd, err := unix.Openat2(dirfd, name, &unix.OpenHow{Flags: uint64(flags), Resolve: unix.RESOLVE_NO_XDEV})
		switch err {
		case nil:
			return fd, nil
		case unix.EINTR:
			continue
		case unix.ENOSYS:
			noOpenat2.Store(true)
		case unix.EXDEV:
			return -1, fmt.Errorf("%s: %w", name, ErrMountPoint)
		case unix.EPERM:
			// Not a reason openat2 gives for these flags: a seccomp
			// filter that knows no openat2 (some container runtimes).
			// openat answers this call.
		default:
			return -1, err
		}
		break
	}
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
