package spool

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"
)

// The daemon's own records: jobs/<uid>.<id>/ with job.json (the job as the
// daemon knows it; readable by everyone, like squeue), script (0600) and
// journal (append-only JSON lines). Only the daemon writes here, through an
// os.Root on jobs/.

// RecordVersion is the version of Record this code writes and reads.
const RecordVersion = 1

// Record file names.
const (
	RecordFile  = "job.json"
	JournalFile = "journal"
)

// maxRecordBytes caps a record read back (an entry plus the daemon's fields).
const maxRecordBytes = 8 << 20

// Job states as `glean status` shows them.
const (
	StateQueued    = "queued"    // taken in: tasks claimable
	StateWaiting   = "waiting"   // taken in: waits for --begin or --dependency
	StateRunning   = "running"   // some task running
	StateDone      = "done"      // every task succeeded
	StateFailed    = "failed"    // ended, some task failed
	StateCancelled = "cancelled" // scancel of the anchor or glean cancel
	StateRejected  = "rejected"  // not taken in; Reason says why
	StateSubmitted = "submitted" // (status only) in incoming, not yet taken in
	// StateAccepting is a verified entry recorded just before its jobs are
	// put on hold: the privileged helper acts only on jobs the records
	// name. A daemon that finds one at start takes the entry in again.
	StateAccepting = "accepting"
)

// Record is a job as the daemon holds it.
type Record struct {
	Version   int       `json:"version"`
	ID        string    `json:"id"` // entry id (or the rejected directory's name)
	UID       int       `json:"uid"`
	User      string    `json:"user"`
	Anchor    string    `json:"anchor,omitempty"`
	Shadow    string    `json:"shadow,omitempty"`
	Name      string    `json:"name,omitempty"`
	Mode      string    `json:"mode,omitempty"`
	State     string    `json:"state"`
	Reason    string    `json:"reason,omitempty"`  // why rejected, cancelled or failed
	Waiting   []string  `json:"waiting,omitempty"` // what a waiting job waits for
	Submitted time.Time `json:"submitted,omitzero"`
	Accepted  time.Time `json:"accepted,omitzero"`
	Ended     time.Time `json:"ended,omitzero"`
	Tasks     Counts    `json:"tasks"`
	Pilots    int       `json:"pilots"`
	Entry     *Entry    `json:"entry,omitempty"` // the validated entry as taken in
	// PilotJobs are the pilots glean submitted for the job and has not
	// yet seen end: the only way a pilot is recognised (never by name).
	PilotJobs []PilotJob `json:"pilot_jobs,omitempty"`
	// ShadowReleased: the shadow array was released into the queue.
	ShadowReleased bool `json:"shadow_released,omitempty"`
	// AnchorReleased: the job ended and its anchor was released to run.
	AnchorReleased bool `json:"anchor_released,omitempty"`
	// Exit is the job's exit code once it ended (the anchor exits with it).
	Exit int `json:"exit,omitempty"`
}

// PilotJob is one pilot as the daemon recorded it.
type PilotJob struct {
	ID string `json:"id"` // "" while being submitted: Token finds it
	// Token is recorded before the sbatch and carried in the pilot's
	// comment: a daemon that died before recording ID adopts the pilot
	// (its owner's job in the pilot partition with that comment).
	Token     string        `json:"token,omitempty"`
	Node      string        `json:"node,omitempty"` // the node it was sized for (--nodelist)
	Submitted time.Time     `json:"submitted"`
	TimeLimit time.Duration `json:"time_limit"`
	Started   time.Time     `json:"started,omitzero"`
	End       time.Time     `json:"end,omitzero"` // Slurm's end of the running pilot (its time limit), as squeue last showed it
	Retiring  bool          `json:"retiring,omitempty"`
	Cancelled bool          `json:"cancelled,omitempty"` // glean cancelled it (give-way, timeout, no work)
	Cause     string        `json:"cause,omitempty"`
	Ended     time.Time     `json:"ended,omitzero"` // gone from squeue

	// Signalled: when glean gave way by sending TERM to the running
	// pilot's agent alone (it stops its tasks within the grace and
	// exits); Killed: glean scancelled it after that (it was still there
	// after the grace).
	Signalled time.Time `json:"signalled,omitzero"`
	Killed    bool      `json:"killed,omitempty"`
}

// Counts are a job's tasks by state.
type Counts struct {
	Total   int `json:"total"`
	Pending int `json:"pending"`
	Running int `json:"running"`
	Done    int `json:"done"`
	Failed  int `json:"failed"`
}

// Active reports whether the job has not ended (or been refused).
func (r *Record) Active() bool {
	switch r.State {
	case StateQueued, StateWaiting, StateRunning:
		return true
	}
	return false
}

// Name is the record's directory name under jobs/.
func (r *Record) DirName() string { return RecordName(r.UID, r.ID) }

// Records is the daemon's records directory, opened once.
type Records struct {
	root *os.Root
	dir  string
}

// Init creates the spool's top directories if missing: users/ (setgid gid,
// sticky, 3733) and jobs/ (0755), and opens the records. The daemon calls
// it at start, as the spool's owner.
func (s *Spool) Init(gid int) (*Records, error) {
	if err := os.MkdirAll(s.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("spool: %w", err)
	}
	users := filepath.Join(s.Dir, UsersDir)
	if err := mkdirExact(users, 0o3733); err != nil && !errors.Is(err, fs.ErrExist) {
		return nil, fmt.Errorf("spool: %w", err)
	}
	st, err := os.Lstat(users)
	if err != nil || !st.IsDir() {
		return nil, fmt.Errorf("spool: %s is not a directory", users)
	}
	if gid >= 0 {
		if err := os.Lchown(users, -1, gid); err != nil {
			return nil, fmt.Errorf("spool: chgrp %s: %w", users, err)
		}
		// chown clears setgid; set the mode again.
		if err := os.Chmod(users, UsersMode); err != nil {
			return nil, fmt.Errorf("spool: %w", err)
		}
	}
	jobs := filepath.Join(s.Dir, JobsDir)
	if err := mkdirExact(jobs, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return nil, fmt.Errorf("spool: %w", err)
	}
	return s.OpenRecords()
}

// OpenRecords opens jobs/ for reading and writing records.
func (s *Spool) OpenRecords() (*Records, error) {
	dir := filepath.Join(s.Dir, JobsDir)
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("spool: %w", err)
	}
	return &Records{root: root, dir: dir}, nil
}

// Close releases the records directory.
func (rs *Records) Close() error { return rs.root.Close() }

// Put writes a record atomically: a temporary file in its directory,
// fsynced, renamed over job.json, the directory fsynced.
func (rs *Records) Put(r *Record) error {
	r.Version = RecordVersion
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	name := r.DirName()
	if err := rs.root.Mkdir(name, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("spool: %w", err)
	}
	return rs.writeAtomic(name, RecordFile, append(data, '\n'), 0o644)
}

// PutFile writes another file of a record atomically (e.g. the script copy).
func (rs *Records) PutFile(r *Record, file string, data []byte, mode os.FileMode) error {
	name := r.DirName()
	if err := rs.root.Mkdir(name, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("spool: %w", err)
	}
	return rs.writeAtomic(name, file, data, mode)
}

func (rs *Records) writeAtomic(dir, file string, data []byte, mode os.FileMode) error {
	tmp := filepath.Join(dir, tmpPrefix+file)
	f, err := rs.root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, mode)
	if err != nil {
		return fmt.Errorf("spool: %w", err)
	}
	_, werr := f.Write(data)
	if werr == nil {
		werr = f.Chmod(mode)
	}
	if werr == nil {
		werr = f.Sync()
	}
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		_ = rs.root.Remove(tmp)
		return fmt.Errorf("spool: write %s/%s: %w", dir, file, werr)
	}
	// os.Root.Rename needs Go 1.25; jobs/ is the daemon's own directory.
	if err := os.Rename(filepath.Join(rs.dir, tmp), filepath.Join(rs.dir, dir, file)); err != nil {
		return fmt.Errorf("spool: %w", err)
	}
	d, err := rs.root.Open(dir)
	if err != nil {
		return fmt.Errorf("spool: %w", err)
	}
	defer d.Close()
	return d.Sync()
}

// Event is one line of a job's journal.
type Event struct {
	Time   time.Time  `json:"time"`
	Event  string     `json:"event"` // accepted, rejected, cancelled, ...
	Detail string     `json:"detail,omitempty"`
	Task   *TaskEvent `json:"task,omitempty"` // event "task": one attempt committed
}

// Journal appends one event to the record's journal and fsyncs it. The
// journal is append-only: results are committed here once (later issues).
func (rs *Records) Journal(r *Record, ev Event) error {
	line, err := json.Marshal(ev)
	if err != nil {
		return err
	}
	f, err := rs.root.OpenFile(filepath.Join(r.DirName(), JournalFile), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("spool: %w", err)
	}
	_, werr := f.Write(append(line, '\n'))
	if werr == nil {
		werr = f.Sync()
	}
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	return werr
}

// ReadJournal returns a record's events.
func (rs *Records) ReadJournal(name string) ([]Event, error) {
	f, err := rs.root.Open(filepath.Join(name, JournalFile))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxRecordBytes))
	if err != nil {
		return nil, err
	}
	var evs []Event
	for _, l := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
		if len(l) == 0 {
			continue
		}
		var ev Event
		if err := json.Unmarshal(l, &ev); err != nil {
			return evs, fmt.Errorf("journal %s: %w", name, err)
		}
		evs = append(evs, ev)
	}
	return evs, nil
}

// Get reads one record by directory name.
func (rs *Records) Get(name string) (*Record, error) {
	f, err := rs.root.Open(filepath.Join(name, RecordFile))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxRecordBytes+1))
	if err != nil {
		return nil, err
	}
	return decodeRecord(name, data)
}

func decodeRecord(name string, data []byte) (*Record, error) {
	if len(data) > maxRecordBytes {
		return nil, fmt.Errorf("record %s: %w", name, ErrTooLarge)
	}
	var r Record
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("record %s: %w", name, err)
	}
	if r.Version != RecordVersion {
		return nil, fmt.Errorf("record %s: version %d, this glean reads %d", name, r.Version, RecordVersion)
	}
	return &r, nil
}

// List reads every record, in directory-name order. Records that cannot
// be read are reported in problems.
func (rs *Records) List() (recs []*Record, problems []error) {
	names, err := rs.names()
	if err != nil {
		return nil, []error{err}
	}
	for _, n := range names {
		r, err := rs.Get(n)
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				problems = append(problems, err)
			}
			continue
		}
		recs = append(recs, r)
	}
	return recs, problems
}

// names lists the record directories in name order, without dot-names
// (temporaries being written).
func (rs *Records) names() ([]string, error) {
	d, err := rs.root.Open(".")
	if err != nil {
		return nil, err
	}
	names, err := d.Readdirnames(-1)
	d.Close()
	if err != nil {
		return nil, err
	}
	names = slices.DeleteFunc(names, func(n string) bool { return strings.HasPrefix(n, ".") })
	sort.Strings(names)
	return names, nil
}
