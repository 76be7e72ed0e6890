package spool

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/glean-hpc/glean/sidecar/internal/umask"
)

// The wrapper's side: it runs as the submitting user and writes only under
// users/<uid>/.

// EnsureUserDirs makes sure uid's directory and its incoming directory
// exist, belong to uid, are real directories (not symlinks) and carry the
// spool's group (inherited from users/, which is setgid). It creates them
// on first use with mode 2770.
func (s *Spool) EnsureUserDirs(uid int) error {
	users := filepath.Join(s.Dir, UsersDir)
	ust, err := os.Lstat(users)
	if err != nil {
		return fmt.Errorf("spool %s: %w (is gleand installed and started?)", users, err)
	}
	if !ust.IsDir() {
		return fmt.Errorf("spool %s is not a directory", users)
	}
	gid := int(ust.Sys().(*syscall.Stat_t).Gid)
	for _, dir := range []string{s.UserDir(uid), filepath.Join(s.UserDir(uid), IncomingDir)} {
		if err := mkdirExact(dir, 0o2770); err != nil && !errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("spool: create %s: %w", dir, err)
		}
		st, err := os.Lstat(dir)
		if err != nil {
			return fmt.Errorf("spool: %w", err)
		}
		sys := st.Sys().(*syscall.Stat_t)
		switch {
		case !st.IsDir():
			return fmt.Errorf("spool: %s is not a directory (a symlink?); remove it", dir)
		case int(sys.Uid) != uid:
			return fmt.Errorf("spool: %s belongs to uid %d, not to you (uid %d); ask the admin to remove it", dir, sys.Uid, uid)
		case int(sys.Gid) != gid:
			return fmt.Errorf("spool: %s has group %d, not the spool's group %d; ask the admin (users/ must be setgid)", dir, sys.Gid, gid)
		case st.Mode().Perm()&0o070 != 0o070:
			return fmt.Errorf("spool: %s has mode %v; the daemon's group needs rwx (chmod 2770 %s)", dir, st.Mode(), dir)
		}
	}
	return nil
}

// mkdirExact creates dir with exactly mode (the caller's umask would
// otherwise take the group's bits). Through the umask, not a chmod after
// mkdir: a user outside the directory's group (users/<uid>, created by the
// wrapper) would lose the setgid bit it inherits on a chmod.
func mkdirExact(dir string, mode uint32) error {
	defer umask.Hold(0)()
	return syscall.Mkdir(dir, mode)
}

// Pending is an entry being written: its files are in a temporary directory
// next to where it will live, invisible to the daemon until Commit renames
// it into place. Abort removes it.
type Pending struct {
	s    *Spool
	uid  int
	id   string
	tmp  string
	done bool
}

// Prepare creates the temporary directory of entry id and writes the
// script, the captured environment (mode 0600) and the items list (nil =
// none) into it, each fsynced.
func (s *Spool) Prepare(uid int, id string, script, env, items []byte) (*Pending, error) {
	if !ValidID(id) {
		return nil, fmt.Errorf("spool: bad entry id %q", id)
	}
	if int64(len(script)) > s.MaxScriptBytes {
		return nil, fmt.Errorf("script: %w: %d bytes, the site allows %d", ErrTooLarge, len(script), s.MaxScriptBytes)
	}
	p := &Pending{s: s, uid: uid, id: id, tmp: filepath.Join(s.UserDir(uid), IncomingDir, tmpPrefix+id)}
	if err := mkdirExact(p.tmp, 0o750); err != nil {
		return nil, fmt.Errorf("spool: %w", err)
	}
	files := []struct {
		name string
		data []byte
		mode os.FileMode
	}{{ScriptFile, script, 0o640}, {EnvFile, env, 0o600}}
	if items != nil {
		files = append(files, struct {
			name string
			data []byte
			mode os.FileMode
		}{ItemsFile, items, 0o640})
	}
	for _, f := range files {
		if err := writeFile(filepath.Join(p.tmp, f.name), f.data, f.mode); err != nil {
			p.Abort()
			return nil, err
		}
	}
	return p, nil
}

// Dir is the temporary directory, for files the caller needs while it
// submits (they must be removed before Commit).
func (p *Pending) Dir() string { return p.tmp }

// Commit writes entry.json, fsyncs the directory and renames it into place.
func (p *Pending) Commit(e *Entry) error {
	if p.done {
		return errors.New("spool: entry already committed or aborted")
	}
	data, err := e.Encode()
	if err != nil {
		return err
	}
	if int64(len(data)) > p.s.MaxEntryBytes {
		return fmt.Errorf("entry: %w: %d bytes, the site allows %d", ErrTooLarge, len(data), p.s.MaxEntryBytes)
	}
	if err := writeFile(filepath.Join(p.tmp, EntryFile), data, 0o640); err != nil {
		return err
	}
	if err := syncDir(p.tmp); err != nil {
		return err
	}
	final := p.s.IncomingPath(p.uid, p.id)
	if err := os.Rename(p.tmp, final); err != nil {
		return fmt.Errorf("spool: %w", err)
	}
	p.done = true
	return syncDir(filepath.Dir(final))
}

// Abort removes the temporary directory (a no-op after Commit).
func (p *Pending) Abort() {
	if p.done {
		return
	}
	p.done = true
	_ = os.RemoveAll(p.tmp)
}

// writeFile creates name exclusively (never through a symlink), writes data
// with exactly mode and fsyncs it.
func writeFile(name string, data []byte, mode os.FileMode) error {
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, mode)
	if err != nil {
		return fmt.Errorf("spool: %w", err)
	}
	// A file that could not be written whole goes (a full spool keeps no
	// half-written temporary).
	fail := func(format string, err error) error {
		f.Close()
		os.Remove(name)
		return fmt.Errorf(format, name, err)
	}
	if err := f.Chmod(mode); err != nil { // the umask may have taken bits
		return fail("spool: chmod %s: %w", err)
	}
	if _, err := f.Write(data); err != nil {
		return fail("spool: write %s: %w", err)
	}
	if err := f.Sync(); err != nil {
		return fail("spool: fsync %s: %w", err)
	}
	if err := f.Close(); err != nil {
		os.Remove(name)
		return fmt.Errorf("spool: close %s: %w", name, err)
	}
	return nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("spool: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("spool: fsync %s: %w", dir, err)
	}
	return nil
}
