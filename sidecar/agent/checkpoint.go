package agent

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/glean-hpc/glean/sidecar/spool"
)

// Checkpoint and hand-back (docs/execution.md). A task's checkpoint
// directory is <root>/<anchor>/<task>, outside the spool, owned by the
// job's owner and 0700 down from <root>/<anchor>. It is kept across the
// task's attempts while the last one ended checkpointed (GLEAN_RESTARTED=1);
// an attempt that starts from scratch finds it empty, because any other end
// may have left a half-written state. <root>/<anchor>/.glean-job names the
// job, so that Sweep can apply the retention once the job ended.

// Checkpoints is where an agent keeps its job's checkpoints.
type Checkpoints struct {
	Spool         string        // the spool's directory, named in each job's marker
	Root          string        // expanded checkpoint.root ("" = no checkpoint directories)
	Command       string        // checkpoint.command: the site wrapper for jobs not checkpoint-aware
	KeepCompleted time.Duration // checkpoint.keep_completed: 0 removes a task's directory when it exits 0
}

// jobMarker names the job in <root>/<anchor>.
const jobMarker = ".glean-job"

// marker is the content of .glean-job.
type marker struct {
	Spool  string `json:"spool"`
	Record string `json:"record"` // <uid>.<id>
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

// prepareJob creates <root>/<anchor> (0700, the owner's, no symlink) and
// its marker. Only <root>'s missing components are created, 0700.
func (c Checkpoints) prepareJob(j *Job) error {
	if c.Root == "" || j.Entry.Anchor == "" {
		return nil
	}
	if err := os.MkdirAll(c.Root, 0o700); err != nil {
		return err
	}
	dir := filepath.Join(c.Root, j.Entry.Anchor)
	if err := privateDir(dir); err != nil {
		return err
	}
	data, _ := json.Marshal(marker{Spool: c.Spool, Record: spool.RecordName(j.UID, j.ID)})
	tmp := filepath.Join(dir, jobMarker+".tmp")
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, jobMarker))
}

// prepareTask readies an attempt's directory: kept as it is for a
// resumed attempt, emptied for one that starts from scratch; created
// (0700) when create is set (a checkpoint-aware job, or the site command),
// else left to glean_checkpoint_dir.
func (c Checkpoints) prepareTask(dir string, restarted, create bool) error {
	if dir == "" {
		return nil
	}
	if !restarted {
		if err := os.RemoveAll(dir); err != nil {
			return err
		}
	}
	if !create {
		return nil
	}
	return privateDir(dir)
}

// completed removes the directory of a task that exited 0 when completed
// jobs keep no checkpoints (exit 0 is always committed as completed, or as
// a duplicate of a completion).
func (c Checkpoints) completed(anchor string, task int) error {
	if dir := c.TaskDir(anchor, task); dir != "" && c.KeepCompleted == 0 {
		return os.RemoveAll(dir)
	}
	return nil
}

// privateDir makes dir a directory of this uid with mode 0700, refusing a
// symlink or someone else's.
func privateDir(dir string) error {
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	st, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !st.IsDir() || !ok || int(sys.Uid) != os.Getuid() {
		return fmt.Errorf("%s is not a directory of uid %d: remove it", dir, os.Getuid())
	}
	if st.Mode().Perm() != 0o700 {
		return os.Chmod(dir, 0o700)
	}
	return nil
}

// Sweep applies the retention under root: the directory <root>/<anchor>
// of a job that ended (done: keepCompleted after its end; failed,
// cancelled or rejected: keepFailed), or whose record is gone from the
// spool, is removed. Directories without a marker of this spool are not
// glean's (or another spool's) and are left alone. It returns what it
// removed. It runs as the owner: in every agent's start and in the
// anchor's final run.
func Sweep(sp *spool.Spool, root string, keepCompleted, keepFailed time.Duration, now time.Time) ([]string, error) {
	if root == "" {
		return nil, nil
	}
	ents, err := os.ReadDir(root)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	recs, err := sp.OpenRecords()
	if err != nil {
		return nil, err
	}
	defer recs.Close()
	var removed []string
	var errs []error
	for _, e := range ents {
		if !e.IsDir() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		dir := filepath.Join(root, e.Name())
		data, err := os.ReadFile(filepath.Join(dir, jobMarker))
		if err != nil {
			continue
		}
		var m marker
		if json.Unmarshal(data, &m) != nil || m.Spool != sp.Dir || strings.ContainsAny(m.Record, "/\x00") || m.Record == "" {
			continue
		}
		rec, err := recs.Get(m.Record)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			continue // unreadable for now: try again next time
		}
		if rec != nil && !expired(rec, keepCompleted, keepFailed, now) {
			continue
		}
		if err := os.RemoveAll(dir); err != nil {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, dir)
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
