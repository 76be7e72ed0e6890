package spool

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// The daemon's side: everything under users/ is hostile input. Each path
// component is opened with openat(O_NOFOLLOW) relative to the descriptor of
// its parent, so no symlink is ever followed and nothing outside the spool
// can be reached: the effect of openat2's RESOLVE_BENEATH |
// RESOLVE_NO_SYMLINKS, on any kernel. Identity is the owner of what was
// opened (fstat on the descriptor), never a name or a field.

// Rejection reasons an owner can read in `glean show`.
var (
	ErrSymlink    = errors.New("a symlink where a file or directory was expected")
	ErrHardlink   = errors.New("a file with more than one link (hardlink)")
	ErrOwner      = errors.New("owner mismatch")
	ErrNotRegular = errors.New("not a regular file")
)

// Incoming is an entry waiting in users/<UID>/incoming/<Name>.
type Incoming struct {
	UID  int
	Name string
}

// ScanIncoming lists the entries in every user's incoming directory, in
// name order (ids sort by time). Directories that are not a user's own
// (wrong owner, symlinks) are skipped and reported in problems; names
// starting with '.' are being written and skipped silently.
func (s *Spool) ScanIncoming() (found []Incoming, problems []error) {
	root, err := openDir(-1, s.Dir, false)
	if err != nil {
		return nil, []error{err}
	}
	defer root.Close()
	users, err := openUsers(root, syscall.O_RDONLY)
	if err != nil {
		return nil, []error{err}
	}
	defer users.Close()
	names, err := users.Readdirnames(-1)
	if err != nil {
		return nil, []error{fmt.Errorf("spool: read %s: %w", UsersDir, err)}
	}
	sort.Strings(names)
	for _, n := range names {
		uid, err := strconv.Atoi(n)
		if err != nil || uid < 0 || strconv.Itoa(uid) != n {
			continue
		}
		inc, err := openUserIncoming(users, uid)
		if err != nil {
			problems = append(problems, err)
			continue
		}
		entries, err := inc.Readdirnames(-1)
		inc.Close()
		if err != nil {
			problems = append(problems, fmt.Errorf("spool: read users/%d/incoming: %w", uid, err))
			continue
		}
		sort.Strings(entries)
		for _, e := range entries {
			if !strings.HasPrefix(e, ".") {
				found = append(found, Incoming{UID: uid, Name: e})
			}
		}
	}
	return found, problems
}

// openUserIncoming opens users/<uid>/incoming, checking that both
// directories belong to uid.
func openUserIncoming(users *os.File, uid int) (*os.File, error) {
	ud, err := openOwnedDir(users, strconv.Itoa(uid), uid)
	if err != nil {
		return nil, fmt.Errorf("spool: users/%d: %w", uid, err)
	}
	defer ud.Close()
	inc, err := openOwnedDir(ud, IncomingDir, uid)
	if err != nil {
		return nil, fmt.Errorf("spool: users/%d/incoming: %w", uid, err)
	}
	return inc, nil
}

// Read is an incoming entry as read by the daemon.
type Read struct {
	Entry  *Entry
	Digest string // SHA-256 (hex) of entry.json as read
	Script []byte
	Items  []byte // nil without --glean=dir=
	UID    int    // from the files' owner
}

// ReadIncoming reads entry in.Name of user in.UID once: entry.json, the
// script and the items list, each from an O_NOFOLLOW descriptor that must
// be a regular file with one link, owned by in.UID, within the size caps.
// The environment file stays unread: it is the owner's (mode 0600). A
// rejection wraps one of ErrSymlink, ErrHardlink, ErrOwner, ErrNotRegular,
// ErrTooLarge, ErrBadJSON, or is a validation error.
func (s *Spool) ReadIncoming(in Incoming, lim Limits) (*Read, error) {
	if !ValidID(in.Name) {
		return nil, fmt.Errorf("entry name %q is not an entry id", clip(in.Name))
	}
	// Searched, not read: the owner (an agent, `glean status`) may not
	// list users/.
	root, err := openSearchDir(-1, s.Dir, false)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	users, err := openUsers(root, unix.O_PATH)
	if err != nil {
		return nil, err
	}
	defer users.Close()
	inc, err := openUserIncoming(users, in.UID)
	if err != nil {
		return nil, err
	}
	defer inc.Close()
	dir, err := openOwnedDir(inc, in.Name, in.UID)
	if err != nil {
		return nil, fmt.Errorf("entry directory: %w", err)
	}
	defer dir.Close()

	r := &Read{UID: in.UID}
	data, err := readOwned(dir, EntryFile, in.UID, s.MaxEntryBytes)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", EntryFile, err)
	}
	e, err := DecodeEntry(strings.NewReader(string(data)), s.MaxEntryBytes)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", EntryFile, err)
	}
	if err := e.Validate(lim); err != nil {
		return nil, fmt.Errorf("%s: %w", EntryFile, err)
	}
	if e.ID != in.Name {
		return nil, fmt.Errorf("%s: id %q does not match its directory %q", EntryFile, e.ID, in.Name)
	}
	r.Entry = e
	sum := sha256.Sum256(data)
	r.Digest = hex.EncodeToString(sum[:])
	if r.Script, err = readOwned(dir, ScriptFile, in.UID, s.MaxScriptBytes); err != nil {
		return nil, fmt.Errorf("%s: %w", ScriptFile, err)
	}
	if int64(len(r.Script)) != e.ScriptSize {
		return nil, fmt.Errorf("%s: %d bytes, the entry says %d", ScriptFile, len(r.Script), e.ScriptSize)
	}
	if e.Items != nil {
		if r.Items, err = readOwned(dir, ItemsFile, in.UID, s.MaxEntryBytes*64); err != nil {
			return nil, fmt.Errorf("%s: %w", ItemsFile, err)
		}
	}
	return r, nil
}

// openDir opens a directory. With nofollow, name must be one component and
// a symlink is an error; dirfd -1 means an absolute or cwd-relative path
// (the spool root itself, which the admin configured and may be a link).
func openDir(dirfd int, name string, nofollow bool) (*os.File, error) {
	return openDirFlags(dirfd, name, nofollow, syscall.O_RDONLY)
}

// openSearchDir is openDir for a directory that is only passed through
// (O_PATH): users/ is 3733, so its users may search it but not read it.
func openSearchDir(dirfd int, name string, nofollow bool) (*os.File, error) {
	return openDirFlags(dirfd, name, nofollow, unix.O_PATH)
}

func openDirFlags(dirfd int, name string, nofollow bool, mode int) (*os.File, error) {
	return openDirAt(dirfd, name, nofollow, mode, false)
}

// openUsers opens users/ in the spool root: the admin's, which may be a
// filesystem of its own (a step onto a mount, refused below users/).
func openUsers(root *os.File, mode int) (*os.File, error) {
	return openDirAt(int(root.Fd()), UsersDir, true, mode, true)
}

// openDirAt is openDirFlags; relative to dirfd, a mount point is refused
// (openatHere) unless cross.
func openDirAt(dirfd int, name string, nofollow bool, mode int, cross bool) (*os.File, error) {
	flags := mode | syscall.O_DIRECTORY | syscall.O_CLOEXEC
	if nofollow {
		if name == "" || name == "." || name == ".." || strings.ContainsRune(name, '/') {
			return nil, fmt.Errorf("spool: bad name %q", clip(name))
		}
		flags |= syscall.O_NOFOLLOW
	}
	var fd int
	var err error
	switch {
	case dirfd < 0:
		fd, err = openat(unix.AT_FDCWD, name, flags)
	case cross:
		fd, err = openat(dirfd, name, flags)
	default:
		fd, err = openatHere(dirfd, name, flags) // a user's (mount.go)
	}
	if err != nil {
		if errors.Is(err, syscall.ELOOP) || (nofollow && errors.Is(err, syscall.ENOTDIR) && isSymlinkAt(dirfd, name)) {
			return nil, fmt.Errorf("%s: %w", name, ErrSymlink)
		}
		return nil, fmt.Errorf("spool: open %s: %w", name, err)
	}
	return os.NewFile(uintptr(fd), name), nil
}

func isSymlinkAt(dirfd int, name string) bool {
	if dirfd < 0 {
		return false
	}
	st, err := statHere(dirfd, name)
	return err == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK
}

// openOwnedDir opens parent/name (no symlinks) and checks that it belongs
// to uid.
func openOwnedDir(parent *os.File, name string, uid int) (*os.File, error) {
	d, err := openDir(int(parent.Fd()), name, true)
	if err != nil {
		return nil, err
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(int(d.Fd()), &st); err != nil {
		d.Close()
		return nil, err
	}
	if int(st.Uid) != uid {
		d.Close()
		return nil, fmt.Errorf("%w: %s belongs to uid %d, not %d", ErrOwner, name, st.Uid, uid)
	}
	return d, nil
}

// openOwned opens dir/name for reading without following a link (nor
// blocking on a FIFO) and checks that it is a regular file of uid with
// one link; it returns the file and its size.
func openOwned(dir *os.File, name string, uid int) (*os.File, int64, error) {
	fd, err := openatHere(int(dir.Fd()), name, syscall.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC)
	if err != nil {
		if errors.Is(err, syscall.ELOOP) {
			return nil, 0, ErrSymlink
		}
		return nil, 0, err
	}
	f := os.NewFile(uintptr(fd), name)
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		f.Close()
		return nil, 0, err
	}
	switch {
	case st.Mode&syscall.S_IFMT != syscall.S_IFREG:
		err = ErrNotRegular
	case st.Nlink != 1:
		err = fmt.Errorf("%w (%d links)", ErrHardlink, st.Nlink)
	case int(st.Uid) != uid:
		err = fmt.Errorf("%w: the file belongs to uid %d, the directory to uid %d", ErrOwner, st.Uid, uid)
	}
	if err != nil {
		f.Close()
		return nil, 0, err
	}
	return f, st.Size, nil
}

// readOwned reads dir/name: a regular file with one link owned by uid, at
// most max bytes (openOwned).
func readOwned(dir *os.File, name string, uid int, max int64) ([]byte, error) {
	data, _, err := readOwnedMtime(dir, name, uid, max)
	return data, err
}

// readOwnedMtime is readOwned that also returns the file's mtime, from
// the descriptor it read: content and time are of one file even when the
// name is replaced meanwhile.
func readOwnedMtime(dir *os.File, name string, uid int, max int64) ([]byte, time.Time, error) {
	f, size, err := openOwned(dir, name, uid)
	if err != nil {
		return nil, time.Time{}, err
	}
	defer f.Close()
	var st syscall.Stat_t
	if err := syscall.Fstat(int(f.Fd()), &st); err != nil {
		return nil, time.Time{}, err
	}
	mtime := time.Unix(st.Mtim.Sec, st.Mtim.Nsec)
	if size > max {
		return nil, mtime, fmt.Errorf("%w: %d bytes, the site allows %d", ErrTooLarge, size, max)
	}
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, mtime, err
	}
	if int64(len(data)) > max {
		return nil, mtime, fmt.Errorf("%w: over %d bytes", ErrTooLarge, max)
	}
	return data, mtime, nil
}

// ReadOwnEntry reads an entry of the calling user (for `glean status` and
// `glean show` before the daemon has taken it in). It follows the same
// rules as ReadIncoming.
func (s *Spool) ReadOwnEntry(uid int, name string) (*Entry, error) {
	r, err := s.ReadIncoming(Incoming{UID: uid, Name: name}, Limits{})
	if err != nil {
		return nil, err
	}
	return r.Entry, nil
}

// ListOwnIncoming lists uid's incoming entry names.
func (s *Spool) ListOwnIncoming(uid int) ([]string, error) {
	d, err := os.Open(filepath.Join(s.UserDir(uid), IncomingDir))
	if err != nil {
		return nil, err
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, n := range names {
		if !strings.HasPrefix(n, ".") {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out, nil
}

// UserIDs lists the uids that have a directory under users/.
func (s *Spool) UserIDs() []int {
	d, err := os.Open(filepath.Join(s.Dir, UsersDir))
	if err != nil {
		return nil
	}
	defer d.Close()
	names, _ := d.Readdirnames(-1)
	var uids []int
	for _, n := range names {
		if uid, err := strconv.Atoi(n); err == nil && uid >= 0 && strconv.Itoa(uid) == n {
			uids = append(uids, uid)
		}
	}
	sort.Ints(uids)
	return uids
}

// OpenIncoming opens users/<uid>/incoming if it and users/<uid> are real
// directories owned by uid, neither a symlink nor a mount point: the
// daemon watches it through this descriptor, never by its path.
func (s *Spool) OpenIncoming(uid int) (*os.File, error) {
	users, err := openDir(-1, filepath.Join(s.Dir, UsersDir), false)
	if err != nil {
		return nil, err
	}
	defer users.Close()
	return openUserIncoming(users, uid)
}
