package spool

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/glean-hpc/glean/sidecar/failpoint"
)

// The daemon's own records: jobs/<uid>.<id>/ with job.json (the job as the
// daemon knows it, the user's whole entry included: --export values, script
// arguments, working directory; 0600, the daemon's and root's helper's
// only), status.json (the same without the entry: what `glean status`
// shows, readable by everyone like squeue), script and items (0600) and
// journal (append-only JSON lines). Only the daemon writes here, through an
// os.Root on jobs/. An agent or the owner's `glean show` reads the entry
// from the owner's own incoming/<id>/entry.json, checked against the
// record's EntryDigest.

// RecordVersion is the version of Record this code writes and reads.
const RecordVersion = 1

// Record file names.
const (
	RecordFile  = "job.json"    // the whole record: 0600
	StatusFile  = "status.json" // the public record (Record.Public): 0644
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
	Entry     *Entry    `json:"entry,omitempty"` // the validated entry as taken in (job.json only)
	// EntryDigest is the SHA-256 (hex) of entry.json as the daemon read
	// it: an agent checks the owner's own copy against it.
	EntryDigest string `json:"entry_digest,omitempty"`
	// PilotJobs are the pilots glean submitted for the job and has not
	// yet seen end: the only way a pilot is recognised (never by name).
	PilotJobs []PilotJob `json:"pilot_jobs,omitempty"`
	// ShadowReleased: the shadow array was let start, in its place in the
	// queue: its begin time moved to now, or (one the wrapper submitted
	// held: a job with Slurm's --deadline) released.
	ShadowReleased bool `json:"shadow_released,omitempty"`
	// ShadowUnheld: taken in by a gleand that puts no hold on the shadow
	// array. Without it (a record of an older gleand, which admin-held the
	// shadow array at intake), an admin hold on it is gleand's own, to lift.
	ShadowUnheld bool `json:"shadow_unheld,omitempty"`
	// ProfileRuntimes (--glean profile=): completed task runtimes of the
	// owner's last ended job with the same profile, set once; daemon and
	// agent estimate a task from them until the job has runtimes of its
	// own (JobTaskEstimate). Public: the agent reads them from the status.
	ProfileRuntimes []time.Duration `json:"profile_runtimes,omitempty"`
	// PilotTimeSpent is the node time (PilotJob.Charge) of the job's
	// pilots that ended and are no longer listed in PilotJobs, so that a
	// --glean budget counts them however long the job lives.
	PilotTimeSpent time.Duration `json:"pilot_time_spent,omitempty"`
	// PilotTrouble says why the job's last pilots ended without running a
	// task, or (beginning with PilotsRefused) why glean-helper refused to
	// submit them (the daemon holds back new ones for a while:
	// docs/execution.md); cleared when one of its pilots runs a task.
	// Public: glean show prints it.
	PilotTrouble string `json:"pilot_trouble,omitempty"`
	// AnchorReleased: the job ended and its anchor was released to run.
	AnchorReleased bool `json:"anchor_released,omitempty"`
	// Exit is the job's exit code once it ended (the anchor exits with it).
	Exit int `json:"exit,omitempty"`
	// Cancel are Slurm jobs of the entry (verified as the user's) that a
	// rejection or an early end still has to cancel; each is removed once
	// cancelled or gone, so a daemon that died in between cancels them
	// after its restart.
	Cancel []string `json:"cancel,omitempty"`
	// Release are such jobs a rejection still has to release: a rejected
	// entry's verified anchor runs, as the user, to write the reason into
	// the user's -o file. Removed once released or gone, as Cancel.
	Release []string `json:"release,omitempty"`
	// Pending is a job event written with the record before it is
	// appended to the journal; a daemon that died in between appends it
	// at its start if the journal's tail does not hold it (JournalPending).
	Pending *Event `json:"pending_event,omitempty"`
}

// PilotsRefused begins a Record.PilotTrouble that is glean-helper's
// refusal to submit the job's pilots.
const PilotsRefused = "glean-helper refuses to submit this job's pilots: "

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
	// MovedTo: the pilot serves this record now (a job of the same owner,
	// policy.MovePilot); that record holds it too and acts on it. This
	// record keeps the entry, for its agent's control file, until the
	// pilot ends.
	MovedTo string `json:"moved_to,omitempty"`

	// Signalled: when glean gave way by sending TERM to the running
	// pilot's agent alone (it stops its tasks within the grace and
	// exits); Killed: glean scancelled it after that (it was still there
	// after the grace), or scancelled it because its job ended.
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

// Public is the record without what only its owner and glean may read:
// the entry (environment values, arguments, paths) and the pilots'
// tokens.
func (r *Record) Public() *Record {
	p := *r
	p.Entry = nil
	p.PilotJobs = slices.Clone(r.PilotJobs)
	for i := range p.PilotJobs {
		p.PilotJobs[i].Token = ""
	}
	return &p
}

// MaxBudget: a budget of this many node-hours or more is no budget (it
// would not fit a time.Duration, nearly 300 years).
const MaxBudget = 1e6

// BudgetLeft is what is left of r's --glean budget of pilot node-time:
// PilotTimeSpent, and each listed pilot's Charge. A pilot that moved to
// another job counts there. ok is false without a budget.
func (r *Record) BudgetLeft() (left time.Duration, ok bool) {
	if r.Entry == nil || !(r.Entry.Glean.Budget > 0 && r.Entry.Glean.Budget < MaxBudget) {
		return 0, false
	}
	left = time.Duration(r.Entry.Glean.Budget*float64(time.Hour)) - r.PilotTimeSpent
	for _, p := range r.PilotJobs {
		if p.MovedTo != "" {
			continue
		}
		c := p.Charge()
		if c == math.MaxInt64 { // a live UNLIMITED pilot
			return 0, true
		}
		left -= c
	}
	return max(left, 0), true
}

// Charge is the node time a pilot counts against its job's budget: its
// whole time limit until it ends (it may use all of it); then the time it
// ran, at most its limit. One that ended unseen running counts the time
// from its submission (it may have run all of it while gleand was not
// looking), unless glean cancelled it while it was pending: nothing.
func (p PilotJob) Charge() time.Duration {
	switch {
	case p.Ended.IsZero():
		return p.TimeLimit
	case !p.Started.IsZero():
		return min(max(p.Ended.Sub(p.Started), 0), p.TimeLimit)
	case p.Cancelled && p.Signalled.IsZero():
		return 0
	}
	return min(max(p.Ended.Sub(p.Submitted), 0), p.TimeLimit)
}

// Name is the record's directory name under jobs/.
func (r *Record) DirName() string { return RecordName(r.UID, r.ID) }

// Records is the daemon's records directory, opened once.
type Records struct {
	root *os.Root
	dir  string

	// Log reports what the records' readers skip (journal lines that do
	// not parse); nil: not reported.
	Log *slog.Logger
	// Fail is the crash tests' failpoint set (nil: none).
	Fail *failpoint.Set
}

// Check tells, without creating anything, whether Dir can be the daemon's
// spool: it exists and is a directory, and holds Init's layout (users/ and
// jobs/ directories) or, if fresh is true, nothing but what Init makes
// (empty, as tmpfiles.d or the package's %post create it, or laid out part
// of the way by an Init that failed or was killed: Init finishes it at the
// daemon's next start; lost+found and names starting with '.' do not
// count). Anything else is not a glean spool: most likely a typo or a
// parent directory in spool.dir, where the daemon would otherwise start on
// an empty spool.
func (s *Spool) Check(fresh bool) error {
	st, err := os.Stat(s.Dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%s does not exist (create it: systemd-tmpfiles --create glean.conf, or mount the shared spool there)", s.Dir)
	case err != nil:
		return err
	case !st.IsDir():
		return fmt.Errorf("%s is not a directory", s.Dir)
	}
	laid := true
	for _, d := range []string{UsersDir, JobsDir} {
		if st, err := os.Lstat(filepath.Join(s.Dir, d)); err != nil || !st.IsDir() {
			laid = false
		}
	}
	if laid {
		return nil
	}
	names, err := os.ReadDir(s.Dir)
	if err != nil {
		return err
	}
	empty, initOnly := true, true
	for _, e := range names {
		switch n := e.Name(); {
		case n == "lost+found" || strings.HasPrefix(n, "."):
		case (n == UsersDir || n == JobsDir || n == EndedDir) && e.IsDir():
			empty = false
		default:
			empty, initOnly = false, false
		}
	}
	switch {
	case initOnly && fresh:
		return nil
	case empty:
		return fmt.Errorf("%s is empty, not a glean spool (no %s/ and %s/ in it)", s.Dir, UsersDir, JobsDir)
	case initOnly:
		return fmt.Errorf("%s is a glean spool laid out only in part (no %s/ and %s/ both): gleand finishes it when it starts there", s.Dir, UsersDir, JobsDir)
	}
	return fmt.Errorf("%s is not a glean spool: it has no %s/ and %s/ but holds other files", s.Dir, UsersDir, JobsDir)
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
	for _, d := range []string{JobsDir, EndedDir} {
		if err := mkdirExact(filepath.Join(s.Dir, d), 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("spool: %w", err)
		}
	}
	return s.OpenRecords()
}

// EndedDir holds the SPANK plugin's epilog markers (spank/glean.c): one
// empty-ish file per pilot job that ended on its node, named by its job
// id, written as the daemon's user.
const EndedDir = "ended"

// EndedPilots lists the epilog markers: job ids of pilots that ended, with
// the marker's time. Only regular files owned by owner (the daemon's own
// user: the plugin writes as it) whose name is a job id count; anything
// else is ignored (and left for the admin).
func (s *Spool) EndedPilots(owner int) (map[string]time.Time, error) {
	d, err := openDir(-1, filepath.Join(s.Dir, EndedDir), false)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, err
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return nil, err
	}
	out := map[string]time.Time{}
	for _, n := range names {
		if !validJobID(n) {
			continue
		}
		var st unix.Stat_t
		if unix.Fstatat(int(d.Fd()), n, &st, unix.AT_SYMLINK_NOFOLLOW) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG || int(st.Uid) != owner {
			continue
		}
		out[n] = time.Unix(st.Mtim.Sec, st.Mtim.Nsec)
	}
	return out, nil
}

// RemoveEnded removes the marker of job id.
func (s *Spool) RemoveEnded(id string) error {
	if !validJobID(id) {
		return fmt.Errorf("spool: bad job id %q", clip(id))
	}
	err := os.Remove(filepath.Join(s.Dir, EndedDir, id))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

// LockFile is jobs/'s lock: one gleand per spool.
const LockFile = ".gleand.lock"

// ErrLocked: another gleand holds the spool.
var ErrLocked = errors.New("another gleand runs on this spool")

// LockDaemon takes the spool's exclusive lock (flock on jobs/.gleand.lock,
// which holds the holder's pid) for as long as the returned file stays
// open: two gleand on one spool would commit the same results twice and
// submit pilots twice. On Linux's NFS client flock is an NFS (fcntl) lock,
// so it holds across hosts too.
func (s *Spool) LockDaemon() (*os.File, error) {
	p := filepath.Join(s.Dir, JobsDir, LockFile)
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW, 0o644)
	if err != nil {
		return nil, fmt.Errorf("spool: lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		holder, _ := io.ReadAll(io.LimitReader(f, 32))
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w (%s, pid %s): stop it first", ErrLocked, p, strings.TrimSpace(string(holder)))
		}
		return nil, fmt.Errorf("spool: lock %s: %w", p, err)
	}
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return f, nil
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
	if err := rs.writeAtomic(name, RecordFile, append(data, '\n'), 0o600); err != nil {
		return err
	}
	return rs.putStatus(r)
}

// putStatus writes the public status.json of r (after job.json: a crash
// in between leaves an older status, which the daemon's start repairs,
// SyncStatus).
func (rs *Records) putStatus(r *Record) error {
	data, err := json.MarshalIndent(r.Public(), "", "  ")
	if err != nil {
		return err
	}
	return rs.writeAtomic(r.DirName(), StatusFile, append(data, '\n'), 0o644)
}

// SyncStatus rewrites r's status.json, and makes its job.json private,
// when the status is missing or says another state (a record written by
// an older glean, whose job.json was 0644, or a crash between the two
// writes). The daemon calls it for every record at start.
func (rs *Records) SyncStatus(r *Record) error {
	st, err := rs.Status(r.DirName())
	if err == nil && st.State == r.State && st.Tasks == r.Tasks && st.EntryDigest == r.EntryDigest {
		if fi, err := rs.root.Lstat(filepath.Join(r.DirName(), RecordFile)); err == nil && fi.Mode().Perm() == 0o600 {
			return nil
		}
	}
	return rs.Put(r)
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
	rs.Fail.Hit("atomic/written") // the new content is durable under its temporary name
	// os.Root.Rename needs Go 1.25; jobs/ is the daemon's own directory.
	if err := os.Rename(filepath.Join(rs.dir, tmp), filepath.Join(rs.dir, dir, file)); err != nil {
		return fmt.Errorf("spool: %w", err)
	}
	rs.Fail.Hit("atomic/renamed") // in place, the rename not yet durable
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
// journal is append-only: results are committed here once. A line is in
// the journal whole or not at all: a write that fails part-way (ENOSPC
// after a short write) is cut off again (ftruncate to the size before,
// fsynced), and a fragment left by a crash in the middle of a write (a
// journal that does not end in '\n') is cut off before the next line is
// appended, so that a committed line is never glued onto a torn one and
// lost when read.
func (rs *Records) Journal(r *Record, ev Event) error {
	return rs.JournalAll(r, []Event{ev})
}

// JournalAll appends evs to the record's journal with one write and one
// fsync: the daemon commits a round's attempts of a job at once (1,000
// results are one fsync, not 1,000). The journal holds all of evs or
// none, with the torn-line repair of Journal.
func (rs *Records) JournalAll(r *Record, evs []Event) error {
	if len(evs) == 0 {
		return nil
	}
	var buf []byte
	for _, ev := range evs {
		line, err := json.Marshal(ev)
		if err != nil {
			return err
		}
		buf = append(append(buf, line...), '\n')
	}
	f, err := rs.root.OpenFile(filepath.Join(r.DirName(), JournalFile), os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("spool: %w", err)
	}
	werr := appendLine(f, buf, rs.Fail)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return fmt.Errorf("spool: journal %s: %w", r.DirName(), werr)
	}
	return nil
}

// appendLine appends whole lines to f (opened O_APPEND, read-write) and
// fsyncs them; see Journal.
func appendLine(f *os.File, line []byte, fail *failpoint.Set) error {
	st, err := f.Stat()
	if err != nil {
		return err
	}
	size, err := repairTail(f, st.Size())
	if err != nil {
		return fmt.Errorf("repairing a torn last line: %w", err)
	}
	if fail.Armed("journal/half-line") {
		// A crash in the middle of the write: half of the line is on disk.
		if _, err := f.Write(line[:len(line)/2]); err == nil {
			_ = f.Sync()
		}
	}
	fail.Hit("journal/half-line") // counts every append ("journal/half-line@n")
	_, werr := f.Write(line)
	if werr == nil {
		werr = f.Sync()
	}
	if werr != nil {
		// Take the part that was written back, so that no fragment stays.
		if err := f.Truncate(size); err != nil {
			return fmt.Errorf("%w (and cutting the partial line off failed: %v)", werr, err)
		}
		_ = f.Sync()
	}
	return werr
}

// repairTail cuts off a last line without its '\n' (a write torn by a
// crash) and returns the journal's size after it.
func repairTail(f *os.File, size int64) (int64, error) {
	if size == 0 {
		return 0, nil
	}
	var last [1]byte
	if _, err := f.ReadAt(last[:], size-1); err != nil {
		return size, err
	}
	if last[0] == '\n' {
		return size, nil
	}
	// Find the last complete line, reading back in blocks.
	end := size
	buf := make([]byte, 4096)
	for end > 0 {
		n := int64(len(buf))
		if n > end {
			n = end
		}
		if _, err := f.ReadAt(buf[:n], end-n); err != nil {
			return size, err
		}
		if i := bytes.LastIndexByte(buf[:n], '\n'); i >= 0 {
			end = end - n + int64(i) + 1
			break
		}
		end -= n
	}
	if err := f.Truncate(end); err != nil {
		return size, err
	}
	return end, f.Sync()
}

// pendingTail is how much of a journal's end JournalPending reads.
const pendingTail = 64 << 10

// JournalPending appends r's pending event unless the journal's last
// lines already hold it, then clears it; it reports whether it appended.
// A pending event is journaled right after its record is written (store),
// so only a crash between the two leaves it missing: then it is the
// record's last word and the journal's end is where it would be.
func (rs *Records) JournalPending(r *Record) (bool, error) {
	if r.Pending == nil {
		return false, nil
	}
	want, err := json.Marshal(r.Pending)
	if err != nil {
		return false, err
	}
	found := false
	if f, err := rs.root.Open(filepath.Join(r.DirName(), JournalFile)); err == nil {
		st, err := f.Stat()
		if err == nil {
			off := max(0, st.Size()-pendingTail)
			buf := make([]byte, st.Size()-off)
			if n, _ := f.ReadAt(buf, off); n > 0 {
				for _, l := range bytes.Split(buf[:n], []byte("\n")) {
					if bytes.Equal(bytes.TrimSpace(l), want) {
						found = true
					}
				}
			}
		}
		f.Close()
	}
	if !found {
		if err := rs.Journal(r, *r.Pending); err != nil {
			return false, err
		}
	}
	r.Pending = nil
	return !found, rs.Put(r)
}

// ReadJournal returns a record's events; lines that do not parse are
// skipped and logged (rs.Log).
func (rs *Records) ReadJournal(name string) ([]Event, error) {
	f, err := rs.root.Open(filepath.Join(name, JournalFile))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var evs []Event
	_, err = scanEvents(io.LimitReader(f, maxRecordBytes), rs.badLine(name), func(ev Event) { evs = append(evs, ev) })
	return evs, err
}

// badLine reports a journal line of record name that does not parse.
func (rs *Records) badLine(name string) func(off int64, err error) {
	return badLineLogger(rs.Log, name)
}

// badLineLogger logs a journal line that does not parse (log nil: not at
// all).
func badLineLogger(log *slog.Logger, name string) func(off int64, err error) {
	return func(off int64, err error) {
		if log != nil {
			log.Error("journal: a line that does not parse is skipped", "journal", name, "offset", off, "err", err)
		}
	}
}

// Status reads one record's public status.json (anyone may).
func (rs *Records) Status(name string) (*Record, error) {
	return rs.read(name, StatusFile)
}

// Get reads one record by directory name (job.json: the daemon and root).
func (rs *Records) Get(name string) (*Record, error) {
	return rs.read(name, RecordFile)
}

func (rs *Records) read(name, file string) (*Record, error) {
	f, err := rs.root.Open(filepath.Join(name, file))
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
	return rs.list(rs.Get)
}

// ListStatus is List of the public status files.
func (rs *Records) ListStatus() (recs []*Record, problems []error) {
	return rs.list(rs.Status)
}

func (rs *Records) list(get func(string) (*Record, error)) (recs []*Record, problems []error) {
	names, err := rs.names()
	if err != nil {
		return nil, []error{err}
	}
	for _, n := range names {
		r, err := get(n)
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
