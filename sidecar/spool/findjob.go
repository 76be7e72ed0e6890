package spool

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// The privileged helper's view of the records: read-only, and only files
// that are what the daemon writes (a regular file with one link, owned by
// the daemon's user, reached without following a symlink). It never reads
// under users/.

// FindJob returns every record that names Slurm job id as its anchor or
// its shadow array. Records whose job.json is not a regular, single-link
// file owned by uid owner are skipped; so are unreadable ones, which are
// reported in problems.
func (rs *Records) FindJob(id string, owner int) (found []*Record, problems []error) {
	names, err := rs.names()
	if err != nil {
		return nil, []error{err}
	}
	for _, n := range names {
		r, err := rs.getOwned(n, owner)
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				problems = append(problems, err)
			}
			continue
		}
		if r.Anchor == id || r.Shadow == id {
			found = append(found, r)
		}
	}
	return found, problems
}

// GetOwned reads one record the way FindJob does (for the helper).
func (rs *Records) GetOwned(name string, owner int) (*Record, error) { return rs.getOwned(name, owner) }

// getOwned reads name/job.json after checking, on the descriptor it reads
// from, that it is the file Lstat saw (no symlink), regular, with one
// link, and owned by owner.
func (rs *Records) getOwned(name string, owner int) (*Record, error) {
	p := filepath.Join(name, RecordFile)
	dst, err := rs.root.Lstat(name)
	if err != nil {
		return nil, err
	}
	if !dst.IsDir() {
		return nil, fmt.Errorf("record %s: not a directory", name)
	}
	lst, err := rs.root.Lstat(p)
	if err != nil {
		return nil, err
	}
	if !lst.Mode().IsRegular() { // never open a device, a FIFO or a symlink
		return nil, fmt.Errorf("record %s: %w", name, ErrNotRegular)
	}
	f, err := rs.root.OpenFile(p, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, fmt.Errorf("record %s: %w", name, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	switch {
	case !os.SameFile(lst, st) || lst.Mode()&os.ModeSymlink != 0:
		return nil, fmt.Errorf("record %s: %w", name, ErrSymlink)
	case !st.Mode().IsRegular():
		return nil, fmt.Errorf("record %s: %w", name, ErrNotRegular)
	case !ok || int(sys.Uid) != owner:
		return nil, fmt.Errorf("record %s: %w: owned by uid %d, not %d", name, ErrOwner, sys.Uid, owner)
	case sys.Nlink != 1:
		return nil, fmt.Errorf("record %s: %w", name, ErrHardlink)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxRecordBytes+1))
	if err != nil {
		return nil, err
	}
	return decodeRecord(name, data)
}
