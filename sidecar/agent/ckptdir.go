package agent

import (
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// The checkpoint root is a path the site names, often on shared scratch
// (checkpoint.root = "/scratch/%u/..."), where other users can create
// directories too. The agent runs as the job's owner and removes and
// creates directories there, so it must never work through anything
// another user controls: it walks the root from "/" one component at a
// time (openat with O_NOFOLLOW), checks each directory it opened, and then
// works only from descriptors (mkdirat, openat, unlinkat, renameat), never
// by path. The rules (docs/execution.md, "Where checkpoints live"):
//
//   - every directory is owned by root or by the user;
//   - one that others may write into (group or world writable) only if it
//     is root's and sticky, like /tmp or /scratch (1777); the next
//     component must then be the user's own or root's: in a sticky
//     directory only an entry's owner (or root, or the directory's owner,
//     root) can rename or remove it, so no other user can swap it (a
//     root-owned 1777 directory inside /tmp is as safe as /scratch);
//   - a symlink only if root owns it and its directory is root's and
//     writable by nobody else (/home -> /export/home); it is resolved and
//     the walk starts again from "/" with the same rules;
//   - missing components are created 0700 as the user (create).
//
// wrappers/glean.sh's glean_checkpoint_dir applies the same rules.

// maxLinks bounds the symlinks followed while walking a root.
const maxLinks = 16

// ErrCheckpointRoot marks a root refused by the rules above.
var ErrCheckpointRoot = errors.New("checkpoint root refused")

func refuse(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrCheckpointRoot, fmt.Sprintf(format, args...))
}

// othersWrite: group or world may write into it.
func othersWrite(mode uint32) bool { return mode&0o022 != 0 }

// openCheckpointRoot opens root for uid, walking it as described above;
// create makes missing components (0700). The caller closes the result.
func openCheckpointRoot(root string, uid int, create bool) (*os.File, error) {
	path := filepath.Clean(root)
	if !filepath.IsAbs(path) {
		return nil, refuse("%q is not an absolute path", root)
	}
	for links := 0; ; links++ {
		if links > maxLinks {
			return nil, refuse("%s: more than %d symlinks", root, maxLinks)
		}
		f, next, err := walkRoot(path, uid, create)
		if err != nil || next == "" {
			return f, err
		}
		path = next
	}
}

// walkRoot walks path from "/"; it returns the opened directory, or the
// path to walk again after a trusted symlink.
func walkRoot(path string, uid int, create bool) (*os.File, string, error) {
	fd, err := unix.Open("/", unix.O_DIRECTORY|unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, "", err
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, "", err
	}
	if st.Uid != 0 || othersWrite(st.Mode) {
		unix.Close(fd)
		return nil, "", refuse("/ is not root's, or others may write into it")
	}
	parent := st
	mustBeUsers := false // the previous directory was a shared sticky one
	comps := strings.Split(strings.TrimPrefix(path, "/"), "/")
	cur := "/"
	for i, name := range comps {
		if name == "" {
			continue
		}
		here := filepath.Join(cur, name)
		var lst unix.Stat_t
		err := unix.Fstatat(fd, name, &lst, unix.AT_SYMLINK_NOFOLLOW)
		if errors.Is(err, unix.ENOENT) && create {
			err = unix.Mkdirat(fd, name, 0o700)
			if err == nil || errors.Is(err, unix.EEXIST) {
				err = unix.Fstatat(fd, name, &lst, unix.AT_SYMLINK_NOFOLLOW)
			}
		}
		if err != nil {
			unix.Close(fd)
			return nil, "", fmt.Errorf("%s: %w", here, err)
		}
		if lst.Mode&unix.S_IFMT == unix.S_IFLNK {
			// Only root's links in root's directories nobody else writes.
			if lst.Uid != 0 || parent.Uid != 0 || othersWrite(parent.Mode) || mustBeUsers {
				unix.Close(fd)
				return nil, "", refuse("%s is a symlink that root did not make in a directory only root writes", here)
			}
			buf := make([]byte, 4096)
			n, err := unix.Readlinkat(fd, name, buf)
			unix.Close(fd)
			if err != nil {
				return nil, "", fmt.Errorf("%s: %w", here, err)
			}
			target := string(buf[:n])
			if !filepath.IsAbs(target) {
				target = filepath.Join(cur, target)
			}
			return nil, filepath.Join(append([]string{target}, comps[i+1:]...)...), nil
		}
		nfd, err := unix.Openat(fd, name, unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_RDONLY|unix.O_CLOEXEC, 0)
		unix.Close(fd)
		if err != nil {
			return nil, "", fmt.Errorf("%s: %w", here, err)
		}
		fd = nfd
		if err := unix.Fstat(fd, &st); err != nil {
			unix.Close(fd)
			return nil, "", err
		}
		switch {
		case mustBeUsers && int(st.Uid) != uid && st.Uid != 0:
			err = refuse("%s is owned by uid %d, not yours (uid %d), in a directory others may write into: remove it, or ask the admin to create it for you", here, st.Uid, uid)
		case st.Uid != 0 && int(st.Uid) != uid:
			err = refuse("%s is owned by uid %d, neither root nor you (uid %d)", here, st.Uid, uid)
		case othersWrite(st.Mode) && (st.Uid != 0 || st.Mode&unix.S_ISVTX == 0):
			err = refuse("%s may be written by others (mode %04o) and is not root's with the sticky bit", here, st.Mode&0o7777)
		}
		if err != nil {
			unix.Close(fd)
			return nil, "", err
		}
		mustBeUsers = othersWrite(st.Mode)
		parent = st
		cur = here
	}
	// A root that is itself a shared sticky directory is fine: <anchor>
	// below it must be the user's (privateDirAt).
	return os.NewFile(uintptr(fd), path), "", nil
}

// privateDirAt opens (creating it 0700 if create) the directory name in
// dir, refusing anything but a directory of uid; it sets its mode to 0700.
func privateDirAt(dir *os.File, name string, uid int, create bool) (*os.File, error) {
	if name == "" || name == "." || name == ".." || strings.ContainsRune(name, '/') {
		return nil, fmt.Errorf("bad directory name %q", name)
	}
	dfd := int(dir.Fd())
	if create {
		if err := unix.Mkdirat(dfd, name, 0o700); err != nil && !errors.Is(err, unix.EEXIST) {
			return nil, fmt.Errorf("%s: %w", filepath.Join(dir.Name(), name), err)
		}
	}
	fd, err := unix.Openat(dfd, name, unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) {
			return nil, fmt.Errorf("%s is not a directory of uid %d (a symlink or a file): remove it", filepath.Join(dir.Name(), name), uid)
		}
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir.Name(), name), err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, err
	}
	if int(st.Uid) != uid {
		unix.Close(fd)
		return nil, fmt.Errorf("%s is not a directory of uid %d (owner %d): remove it", filepath.Join(dir.Name(), name), uid, st.Uid)
	}
	if st.Mode&0o7777 != 0o700 {
		if err := unix.Fchmod(fd, 0o700); err != nil {
			unix.Close(fd)
			return nil, err
		}
	}
	return os.NewFile(uintptr(fd), filepath.Join(dir.Name(), name)), nil
}

// maxRemoveDepth bounds removeAllAt's recursion (one descriptor a level).
const maxRemoveDepth = 256

// removeAllAt removes name in dir and everything under it without
// following any symlink: unlinkat on descriptors opened O_NOFOLLOW.
func removeAllAt(dir *os.File, name string) error {
	return removeAt(int(dir.Fd()), name, 0)
}

func removeAt(dfd int, name string, depth int) error {
	if name == "" || name == "." || name == ".." || strings.ContainsRune(name, '/') {
		return fmt.Errorf("bad name %q", name)
	}
	err := unix.Unlinkat(dfd, name, 0)
	if err == nil || errors.Is(err, unix.ENOENT) {
		return nil
	}
	if !errors.Is(err, unix.EISDIR) && !errors.Is(err, unix.EPERM) {
		return err
	}
	if depth >= maxRemoveDepth {
		return fmt.Errorf("more than %d directories deep", maxRemoveDepth)
	}
	fd, err := unix.Openat(dfd, name, unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) {
		// Swapped for a link or a file meanwhile: remove that, not its target.
		return removeAt(dfd, name, depth+1)
	}
	if errors.Is(err, unix.ENOENT) {
		return nil
	}
	if err != nil {
		return err
	}
	d := os.NewFile(uintptr(fd), name)
	var errs []error
	for {
		names, rerr := d.Readdirnames(256)
		for _, n := range names {
			if err := removeAt(fd, n, depth+1); err != nil {
				errs = append(errs, err)
			}
		}
		if rerr != nil || len(names) == 0 {
			break
		}
		if len(errs) > 0 {
			break
		}
	}
	d.Close()
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	err = unix.Unlinkat(dfd, name, unix.AT_REMOVEDIR)
	if errors.Is(err, unix.ENOENT) {
		return nil
	}
	return err
}

// readFileAt reads a small regular file name in dir (O_NOFOLLOW), at most
// limit bytes.
func readFileAt(dir *os.File, name string, limit int64) ([]byte, error) {
	fd, err := unix.Openat(int(dir.Fd()), name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), name)
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() || st.Size() > limit {
		return nil, fmt.Errorf("%s: not a regular file of at most %d bytes", name, limit)
	}
	buf := make([]byte, st.Size())
	n, err := f.ReadAt(buf, 0)
	if err != nil && n != len(buf) {
		return nil, err
	}
	return buf[:n], nil
}

// writeFileAt writes name in dir atomically: a temporary file of this
// writer's own (O_EXCL, O_NOFOLLOW: the job's agents start together and
// write the same marker), fsynced, renamed into place (renameat on the
// same descriptor); between the two, the failpoint hit is called.
func writeFileAt(dir *os.File, name string, data []byte, hit func()) error {
	dfd := int(dir.Fd())
	var rnd [6]byte
	_, _ = rand.Read(rnd[:])
	tmp := fmt.Sprintf("%s.%d.%x.tmp", name, os.Getpid(), rnd)
	fd, err := unix.Openat(dfd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return err
	}
	f := os.NewFile(uintptr(fd), tmp)
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = unix.Unlinkat(dfd, tmp, 0)
		return err
	}
	hit()
	if err := unix.Renameat(dfd, tmp, dfd, name); err != nil {
		_ = unix.Unlinkat(dfd, tmp, 0)
		return fmt.Errorf("%s: %w", filepath.Join(dir.Name(), name), err)
	}
	return nil
}
