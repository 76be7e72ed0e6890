package spool

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Standby claims (standby/<task>, holding the claimant's id) let a fair
// job's shadow elements stay for the tasks its pilots run. Plain Slurm
// would have run every task on the job's own array; when pilots hold all
// that is left, an element that left at once would leave a task a pilot
// hands back (giving way to a pending job) with nobody to run it, and the
// job could end later than without glean. One element stands by per
// pilot-run task, so no more nodes wait than tasks could come back.

// Standby makes holder stand by for a task whose lease is a pilot's (not
// a shadow element's) and that nobody else stands by for, and returns
// it. A claim not refreshed (KeepStandby) within stale is taken over: its
// element is gone. ErrNoTask: there is no such task.
func (w *Work) Standby(holder string, now time.Time, stale time.Duration) (int, error) {
	names, err := readNames(filepath.Join(w.Dir, LeasesDir))
	if err != nil {
		return 0, err
	}
	var tasks []int
	for _, n := range names {
		if i, err := strconv.Atoi(n); err == nil && i >= 0 && strconv.Itoa(i) == n {
			tasks = append(tasks, i)
		}
	}
	slices.Sort(tasks)
	for _, i := range tasks {
		if !w.pilotLease(i) {
			continue
		}
		path := w.standbyPath(i)
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o640)
		if err == nil {
			_, werr := f.WriteString(holder)
			if cerr := f.Close(); werr == nil {
				werr = cerr
			}
			if werr != nil {
				os.Remove(path)
				return 0, fmt.Errorf("spool: standby: %w", werr)
			}
			return i, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return 0, fmt.Errorf("spool: standby: %w", err)
		}
		st, err := os.Lstat(path)
		if err != nil || !st.Mode().IsRegular() || now.Sub(st.ModTime()) < stale {
			continue
		}
		// The last writer of a takeover wins; the loser sees that at its
		// next KeepStandby.
		// A failed takeover (a leftover temporary file of that name, the
		// owner's junk) leaves the claim to its holder: try the next task.
		tmp := filepath.Join(w.Dir, StandbyDir, tmpPrefix+strconv.Itoa(i)+"."+strconv.Itoa(os.Getpid()))
		if err := writeFile(tmp, []byte(holder), 0o640); err != nil {
			continue
		}
		if err := os.Rename(tmp, path); err != nil {
			os.Remove(tmp)
			continue
		}
		return i, nil
	}
	return 0, ErrNoTask
}

// KeepStandby refreshes holder's claim on task and reports whether it
// stands: the claim is still holder's and the pilot's attempt is not over
// (it runs, or its result awaits the daemon's commit, which may hand the
// task back). A claim that no longer stands is removed if it is holder's.
func (w *Work) KeepStandby(task int, holder string, now time.Time) bool {
	if w.standbyHolder(task) != holder {
		return false
	}
	if !w.pilotLease(task) && !w.resultPending(task) {
		w.DropStandby(task, holder)
		return false
	}
	return os.Chtimes(w.standbyPath(task), now, now) == nil
}

// resultPending reports whether an attempt of task has a result the
// daemon has not committed yet.
func (w *Work) resultPending(task int) bool {
	names, err := readNames(filepath.Join(w.Dir, ResultsDir))
	if err != nil {
		return false
	}
	prefix := strconv.Itoa(task) + "."
	return slices.ContainsFunc(names, func(n string) bool { return strings.HasPrefix(n, prefix) })
}

// DropStandby removes holder's claim on task (not another's).
func (w *Work) DropStandby(task int, holder string) {
	if w.standbyHolder(task) == holder {
		os.Remove(w.standbyPath(task))
	}
}

func (w *Work) standbyPath(task int) string {
	return filepath.Join(w.Dir, StandbyDir, strconv.Itoa(task))
}

func (w *Work) standbyHolder(task int) string {
	data, err := readNoFollow(w.standbyPath(task), 256)
	if err != nil {
		return ""
	}
	return string(data)
}

// pilotLease reports whether task is leased by a pilot. A lease being
// written (empty) or unreadable says nothing yet: not a pilot's.
func (w *Work) pilotLease(task int) bool {
	data, err := readNoFollow(w.LeasePath(task), maxTaskFileBytes)
	if err != nil || len(data) == 0 {
		return false
	}
	var l Lease
	return json.Unmarshal(data, &l) == nil && !l.Shadow
}

// readNoFollow reads at most max bytes of a regular file, not following
// a symbolic link (the directory is the owner's to write).
func readNoFollow(path string, max int64) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		return nil, fmt.Errorf("spool: %s is not a regular file", path)
	}
	return io.ReadAll(io.LimitReader(f, max))
}
