package agent

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/glean-hpc/glean/sidecar/failpoint"
	"github.com/glean-hpc/glean/sidecar/spool"
)

// Checkpoint and hand-back (docs/execution.md). A task's checkpoint
// directory is <root>/<anchor>/<task>, outside the spool, owned by the
// job's owner and 0700 down from <root>/<anchor>. It is kept across the
// task's attempts while it holds a complete save (GLEAN_RESTARTED=1: see
// prepareTask); an attempt that starts from scratch finds it empty, because
// a failure or a first save killed half-way may have left a bad state.
// <root>/<anchor>/.glean-job names the job, so that Sweep can apply the
// retention once the job ended.

// Checkpoints is where an agent keeps its job's checkpoints.
type Checkpoints struct {
	Spool         string        // the spool's directory, named in each job's marker
	Root          string        // expanded checkpoint.root ("" = no checkpoint directories)
	UID           int           // whose they are: the agent's own uid (every directory is checked against it)
	Command       string        // checkpoint.command: the site wrapper for jobs not checkpoint-aware
	KeepCompleted time.Duration // checkpoint.keep_completed: 0 removes a task's directory when it exits 0
	Fail          *failpoint.Set
}

// jobMarker names the job in <root>/<anchor>.
const jobMarker = ".glean-job"

// maxMarkerBytes caps a marker read back.
const maxMarkerBytes = 4096

// marker is the content of .glean-job.
type marker struct {
	Spool  string `json:"spool"`
	Record string `json:"record"` // <uid>.<id>
}

// parseMarker reads a job marker and returns the record it names, if it
// is a marker of this spool naming one of uid's records.
func parseMarker(data []byte, spoolDir string, uid int) (string, bool) {
	var m marker
	if len(data) > maxMarkerBytes || json.Unmarshal(data, &m) != nil || m.Spool != spoolDir {
		return "", false
	}
	u, id, err := ParseJobArg(m.Record)
	if err != nil || u != uid {
		return "", false
	}
	return spool.RecordName(u, id), true
}

// CheckpointRoot expands checkpoint.root for the user: "" is
// $HOME/.glean/checkpoints (the home directory from the password database,
// else $HOME), %u the user's name.
func CheckpointRoot(configured, userName string, getenv func(string) string) (string, error) {
	if configured != "" {
		return strings.ReplaceAll(configured, "%u", userName), nil
	}
	home := ""
	if u, err := user.Current(); err == nil {
		home = u.HomeDir
	}
	if home == "" || home == "/" {
		home = getenv("HOME")
	}
	if !filepath.IsAbs(home) || home == "/" {
		return "", errors.New("no home directory for the checkpoints: set checkpoint.root")
	}
	return filepath.Join(home, ".glean", "checkpoints"), nil
}

// TaskDir is task's checkpoint directory ("" without a root).
func (c Checkpoints) TaskDir(anchor string, task int) string {
	if c.Root == "" || anchor == "" {
		return ""
	}
	return filepath.Join(c.Root, anchor, strconv.Itoa(task))
}

// openJob opens <root>/<anchor> (creating the missing directories when
// create), every component checked (openCheckpointRoot, privateDirAt).
func (c Checkpoints) openJob(anchor string, create bool) (*os.File, error) {
	root, err := openCheckpointRoot(c.Root, c.UID, create)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	return privateDirAt(root, anchor, c.UID, create)
}

// prepareJob creates <root>/<anchor> (0700, the owner's, no symlink) and
// its marker. Only <root>'s missing components are created, 0700. An
// error means no checkpoint directories for the job's tasks; a marker that
// could not be written (markerErr) only delays the retention.
func (c Checkpoints) prepareJob(j *Job) (markerErr, err error) {
	if c.Root == "" || j.Entry.Anchor == "" {
		return nil, nil
	}
	dir, err := c.openJob(j.Entry.Anchor, true)
	if err != nil {
		return nil, err
	}
	defer dir.Close()
	data, _ := json.Marshal(marker{Spool: c.Spool, Record: spool.RecordName(j.UID, j.ID)})
	return writeFileAt(dir, jobMarker, data, func() { c.Fail.Hit("checkpoint/marker-written") }), nil
}

// committedMarker is what glean_checkpoint_commit (wrappers/glean.sh)
// renames into a task's directory once the state in it is complete.
const committedMarker = ".glean-committed"

// prepareTask readies an attempt's directory and returns its path and
// whether the attempt resumes from it (GLEAN_RESTARTED=1): it does when
// the journal says the directory holds a complete save (saved: an attempt
// checkpointed, exit 99 after TERM, and none failed since), or when the
// last attempt was killed (an expected kill: pilot lost, node failure,
// give-way, ...) after the task committed a periodic checkpoint
// (glean_checkpoint_commit); otherwise the directory is emptied (a first
// save killed half-way, a failure).
// The directory is created (0700) when create is set (a checkpoint-aware
// job, or the site command), else left to glean_checkpoint_dir. It works
// from descriptors of the checked <root>/<anchor> (prepareJob made it).
func (c Checkpoints) prepareTask(anchor string, task int, saved, killed, create bool) (string, bool, error) {
	if c.Root == "" || anchor == "" {
		return "", saved, nil // no directory of glean's: the script's own
	}
	dir, err := c.openJob(anchor, false)
	if err != nil {
		return "", false, err
	}
	defer dir.Close()
	name := strconv.Itoa(task)
	resume := saved || killed && c.committed(dir, name)
	if !resume {
		if err := removeAllAt(dir, name); err != nil {
			return "", false, err
		}
	}
	if create || resume {
		d, err := privateDirAt(dir, name, c.UID, true)
		if err != nil {
			return "", false, err
		}
		d.Close()
	}
	return c.TaskDir(anchor, task), resume, nil
}

// committed reports whether task directory name in dir (the user's) holds
// a committed checkpoint.
func (c Checkpoints) committed(dir *os.File, name string) bool {
	d, err := privateDirAt(dir, name, c.UID, false)
	if err != nil {
		return false
	}
	defer d.Close()
	_, err = readFileAt(d, committedMarker, maxMarkerBytes)
	return err == nil
}

// completed removes the directory of a task that exited 0 when completed
// jobs keep no checkpoints (exit 0 is always committed as completed, or as
// a duplicate of a completion).
func (c Checkpoints) completed(anchor string, task int) error {
	if c.Root == "" || anchor == "" || c.KeepCompleted != 0 {
		return nil
	}
	dir, err := c.openJob(anchor, false)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer dir.Close()
	return removeAllAt(dir, strconv.Itoa(task))
}

// Sweep applies the retention under c.Root: the directory <root>/<anchor>
// of a job that ended (done: KeepCompleted after its end; failed,
// cancelled or rejected: keepFailed), or whose record is gone from the
// spool, is removed. Directories that are not the user's or have no
// marker of this spool naming one of the user's records are left alone.
// It returns what it removed. It runs as the owner: in every agent's start
// and in the anchor's final run, from descriptors of the checked root.
func (c Checkpoints) Sweep(sp *spool.Spool, keepFailed time.Duration, now time.Time) ([]string, error) {
	if c.Root == "" {
		return nil, nil
	}
	root, err := openCheckpointRoot(c.Root, c.UID, false)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer root.Close()
	names, err := root.Readdirnames(-1)
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	recs, err := sp.OpenRecords()
	if err != nil {
		return nil, err
	}
	defer recs.Close()
	var removed []string
	var errs []error
	for _, n := range names {
		if strings.HasPrefix(n, ".") {
			continue
		}
		dir, err := privateDirAt(root, n, c.UID, false)
		if err != nil {
			continue // not a directory of the user's: not glean's to remove
		}
		data, err := readFileAt(dir, jobMarker, maxMarkerBytes)
		dir.Close()
		if err != nil {
			continue
		}
		name, ok := parseMarker(data, sp.Dir, c.UID)
		if !ok {
			continue
		}
		rec, err := recs.Status(name)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			continue // unreadable for now: try again next time
		}
		if rec == nil {
			// No status.json: the record is gone only if its directory is
			// (an older gleand's record, or a status not yet written).
			if _, err := os.Lstat(filepath.Join(sp.Dir, spool.JobsDir, name)); !errors.Is(err, fs.ErrNotExist) {
				continue
			}
		}
		if rec != nil && !expired(rec, c.KeepCompleted, keepFailed, now) {
			continue
		}
		if err := removeAllAt(root, n); err != nil {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, filepath.Join(c.Root, n))
	}
	return removed, errors.Join(errs...)
}

// expired: the job ended and its checkpoints' retention has passed.
func expired(rec *spool.Record, keepCompleted, keepFailed time.Duration, now time.Time) bool {
	keep := keepFailed
	switch rec.State {
	case spool.StateDone:
		keep = keepCompleted
	case spool.StateFailed, spool.StateCancelled, spool.StateRejected:
	default:
		return false
	}
	return !now.Before(rec.Ended.Add(keep))
}

// taskArgv is how an attempt is executed: the private copy of the job
// script with its arguments, under the site checkpoint command for a job
// not marked checkpoint-aware (--glean=checkpoint=yes).
func taskArgv(script string, args []string, command string, aware bool) []string {
	argv := append([]string{script}, args...)
	if command != "" && !aware {
		argv = append([]string{command}, argv...)
	}
	return argv
}
