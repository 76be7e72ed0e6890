package spool

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode"
	"unsafe"

	"github.com/glean-hpc/glean/sidecar/failpoint"
	"golang.org/x/sys/unix"
)

// Task execution (docs/spool.md, "Tasks"). The agents, running as the
// job's owner, write only in the owner's work directory:
//
//	users/<uid>/work/<id>/             2770, created by the first agent
//	users/<uid>/work/<id>/leases/<i>   one per running task, created O_EXCL; its mtime is the heartbeat
//	users/<uid>/work/<id>/results/<i>.<attempt>  one per ended attempt (temp + rename)
//	users/<uid>/work/<id>/logs/        the agents' own logs
//
// The daemon alone commits: it reads results, appends one task event per
// attempt to the job's journal (jobs/<rec>/journal), then removes the
// result. A task whose journal holds a final event is finished. The daemon
// tells agents to retire or stop through jobs/<rec>/control.json.
//
// Taking a task is race-free on a shared filesystem without locks: an
// attempt's task is always in at least one of leases/, results/ or the
// journal (the agent writes the result before it removes the lease, the
// daemon journals before it removes the result), so an agent that lists
// leases, then results, then reads the journal sees every task in flight;
// the lease's O_EXCL create settles two agents racing for the same task,
// and a check of results and journal after the create catches an attempt
// that ended between the listing and the create.

// Names under a work directory.
const (
	WorkDir     = "work"
	LeasesDir   = "leases"
	ResultsDir  = "results"
	LogsDir     = "logs"
	StandbyDir  = "standby"
	ControlFile = "control.json"
)

// maxTaskFileBytes caps a lease or result read by the daemon.
const maxTaskFileBytes = 64 << 10

// Lease is a running task, as its agent wrote it. Everything in it is the
// owner's claim; the daemon checks the pilot against Slurm.
type Lease struct {
	Version int       `json:"version"`
	Task    int       `json:"task"`
	Attempt string    `json:"attempt"`
	Pilot   string    `json:"pilot"`            // SLURM_JOB_ID of the pilot or shadow element
	Shadow  bool      `json:"shadow,omitempty"` // taken by a shadow element, not a pilot
	Node    string    `json:"node"`
	PID     int       `json:"pid"`
	Started time.Time `json:"started"`
}

// Outcomes an agent reports for an attempt.
const (
	OutcomeExited       = "exited"       // the task exited by itself (Exit)
	OutcomeSignaled     = "signaled"     // killed by a signal (Signal), not by the agent
	OutcomeCheckpointed = "checkpointed" // after the agent's TERM, exited with the checkpoint status
	OutcomeHandedBack   = "handed-back"  // stopped by the agent (TERM, time limit, stop): to be run again
	OutcomeNotStarted   = "not-started"  // the script could not be started (Detail says why)
)

// CheckpointExit is the exit status a task uses to say "state saved,
// resume me" after SIGTERM (wrappers/glean.sh).
const CheckpointExit = 99

// Result is one ended attempt, as its agent wrote it.
type Result struct {
	Version int       `json:"version"`
	Task    int       `json:"task"`
	Attempt string    `json:"attempt"`
	Pilot   string    `json:"pilot"`
	Node    string    `json:"node"`
	Start   time.Time `json:"start"`
	End     time.Time `json:"end"`
	Outcome string    `json:"outcome"`
	Exit    int       `json:"exit"`   // exit status, or 128+signal
	Signal  int       `json:"signal"` // the signal that ended it, if any
	Detail  string    `json:"detail,omitempty"`
}

// End reasons the daemon commits (docs/execution.md, "End reasons"). Only
// ReasonFailed consumes a task's retry budget; the expected kills
// (give-way, time limit, preempted, node failure, pilot lost, cancelled)
// do not, but they count towards the attempt and waste caps.
const (
	ReasonCompleted   = "completed"    // exit 0
	ReasonFailed      = "failed"       // the task's own failure, or a cap reached
	ReasonGiveWay     = "give-way"     // glean cancelled the pilot (a regular job needs the node, no work, timeout)
	ReasonTimeLimit   = "time-limit"   // ended within the grace of the pilot's time limit
	ReasonPreempted   = "preempted"    // Slurm preempted the pilot, or gave its node to another job
	ReasonNodeFailure = "node-failure" // the pilot's node is down or drained
	ReasonLost        = "pilot-lost"   // the pilot vanished or stopped the task for a reason glean cannot name
	ReasonCancelled   = "cancelled"    // the job was cancelled (scancel of the anchor, glean cancel)
	ReasonDuplicate   = "duplicate"    // a second completion of a finished task: it ran twice, on the record once
	// ReasonHandBack is no longer committed (before typed reasons: the
	// agent stopped the task); older journals may hold it.
	ReasonHandBack = "handed-back"
)

// ExpectedKill reports whether reason is an end that is not the task's
// fault: it never consumes the retry budget.
func ExpectedKill(reason string) bool {
	switch reason {
	case ReasonGiveWay, ReasonTimeLimit, ReasonPreempted, ReasonNodeFailure, ReasonLost, ReasonCancelled, ReasonHandBack:
		return true
	}
	return false
}

// TaskEvent is a task's line in the journal: one attempt, committed once.
type TaskEvent struct {
	Index   int       `json:"index"`
	Attempt string    `json:"attempt"`
	Reason  string    `json:"reason"`
	Exit    int       `json:"exit"`
	Final   bool      `json:"final"` // the task is finished (completed, or failed for good)
	Pilot   string    `json:"pilot,omitempty"`
	Node    string    `json:"node,omitempty"`
	Start   time.Time `json:"start,omitzero"`
	End     time.Time `json:"end,omitzero"`
	// Checkpointed: the task exited with CheckpointExit after the agent's
	// TERM; the next attempt resumes (GLEAN_RESTARTED=1). It says how the
	// process ended, never why: the reason is the daemon's.
	Checkpointed bool   `json:"checkpointed,omitempty"`
	Detail       string `json:"detail,omitempty"` // e.g. which cap ended the task
}

// RunTime is how long the attempt ran (0 when unknown).
func (ev TaskEvent) RunTime() time.Duration {
	if ev.Start.IsZero() || !ev.End.After(ev.Start) {
		return 0
	}
	return ev.End.Sub(ev.Start)
}

// Control is what the daemon tells a job's agents.
type Control struct {
	Version int      `json:"version"`
	Retire  []string `json:"retire,omitempty"` // pilots to finish their task and take no more
	Stop    bool     `json:"stop,omitempty"`   // the job ended or was cancelled: stop every task now
	// Move: pilots that serve another job of the same owner from now on
	// (pilot id -> that job's record name, <uid>.<id>): finish the running
	// tasks, take no more of this job's, then take the other's.
	Move map[string]string `json:"move,omitempty"`
}

// TaskIndices lists a job's array indices in order (a job without an array
// has the one task 0).
func (e *Entry) TaskIndices() []int {
	if e.Array == nil {
		return []int{0}
	}
	out := make([]int, 0, e.Tasks)
	for _, r := range e.Array.Ranges {
		for i := r.Start; i <= r.End; i += r.Step {
			out = append(out, i)
		}
	}
	return out
}

// TaskEstimate is how long one of a job's tasks is expected to run, the
// same for the daemon (sizing pilots) and the agent (starting a task only
// if it fits): the p95 of the job's completed runtimes times 1.25 plus
// 10 s, at most the task's -t (timeLimitMin; what plain Slurm would
// allow); with no history the -t; 0 when nothing is known.
func TaskEstimate(timeLimitMin int, runtimes []time.Duration) time.Duration {
	limit := time.Duration(timeLimitMin) * time.Minute
	if len(runtimes) == 0 {
		return limit
	}
	s := slices.Clone(runtimes)
	slices.Sort(s)
	p95 := s[(len(s)*95+99)/100-1]
	est := time.Duration(float64(p95)*1.25) + 10*time.Second
	if limit > 0 && est > limit {
		return limit
	}
	return est
}

// MaxProfileRuntimes bounds the runtimes a profile carries to a new job.
const MaxProfileRuntimes = 100

// JobTaskEstimate is TaskEstimate for a job: from its own completed
// runtimes; until it has any, from those of its profile (Record.
// ProfileRuntimes), unless one of its attempts already ran longer than
// that estimate without completing (unfinished: the longest such run): the
// profile understates this job's tasks, and the -t is used. The daemon
// (sizing pilots) and the agent (starting a task only if it fits) both
// estimate with it.
func JobTaskEstimate(timeLimitMin int, own, profile []time.Duration, unfinished time.Duration) time.Duration {
	if len(own) == 0 && len(profile) > 0 {
		if est := TaskEstimate(timeLimitMin, profile); unfinished < est {
			return est
		}
	}
	return TaskEstimate(timeLimitMin, own)
}

// ArrayContains reports whether task is one of the job's indices.
func (e *Entry) ArrayContains(task int) bool {
	if e.Array == nil {
		return task == 0
	}
	return e.Array.Contains(task)
}

// ---- the agent's side (as the owner) ----

// Work is a job's work directory, opened by an agent running as the owner.
type Work struct {
	Dir     string // users/<uid>/work/<id>
	journal string // jobs/<rec>/journal
	control string // jobs/<rec>/control.json

	finished map[int]bool
	jOff     int64

	// SyncLater leaves a new lease's fsync to SyncLease, so that the
	// taker can start the task first: on a busy disk an fsync waits for
	// the filesystem's journal, tens to hundreds of milliseconds.
	SyncLater bool
	// Log reports journal lines that do not parse (nil: not reported).
	Log *slog.Logger
	// Fail is the crash tests' failpoint set (nil: none).
	Fail *failpoint.Set
}

// OpenWork creates (if needed) and opens uid's work directory for entry
// id, whose daemon record is rec.
func (s *Spool) OpenWork(uid int, id string) (*Work, error) {
	if !ValidID(id) {
		return nil, fmt.Errorf("spool: bad job id %q", clip(id))
	}
	top := filepath.Join(s.UserDir(uid), WorkDir)
	dir := filepath.Join(top, id)
	for _, d := range []string{top, dir, filepath.Join(dir, LeasesDir), filepath.Join(dir, ResultsDir), filepath.Join(dir, LogsDir), filepath.Join(dir, StandbyDir)} {
		if err := mkdirExact(d, 0o2770); err != nil && !errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("spool: create %s: %w", d, err)
		}
		st, err := os.Lstat(d)
		if err != nil {
			return nil, fmt.Errorf("spool: %w", err)
		}
		if !st.IsDir() {
			return nil, fmt.Errorf("spool: %s is not a directory; remove it", d)
		}
	}
	rec := filepath.Join(s.Dir, JobsDir, RecordName(uid, id))
	return &Work{Dir: dir, journal: filepath.Join(rec, JournalFile), control: filepath.Join(rec, ControlFile),
		finished: map[int]bool{}}, nil
}

// LeasePath and ResultPath name a task's files.
func (w *Work) LeasePath(task int) string {
	return filepath.Join(w.Dir, LeasesDir, strconv.Itoa(task))
}

// ErrNoTask: every task is finished, running or awaiting its commit.
var ErrNoTask = errors.New("no task to take")

// Take leases the first task in order that is not finished, running or
// awaiting its commit, and writes l (with Task set) into the lease.
func (w *Work) Take(order []int, l Lease) (int, error) {
	leased, results, err := w.inFlight()
	if err != nil {
		return 0, err
	}
	if err := w.readJournal(); err != nil {
		return 0, err
	}
	for _, i := range order {
		if w.finished[i] || leased[i] || results[i] {
			continue
		}
		f, err := os.OpenFile(w.LeasePath(i), os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o640)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return 0, fmt.Errorf("spool: lease: %w", err)
		}
		// An attempt that ended between the listing and the create.
		_, res, err := w.inFlight()
		if err == nil {
			err = w.readJournal()
		}
		if err != nil || res[i] || w.finished[i] {
			f.Close()
			os.Remove(w.LeasePath(i))
			if err != nil {
				return 0, err
			}
			continue
		}
		w.Fail.Hit("agent/lease-created") // an empty lease: a task taken, nothing said about it
		l.Version, l.Task = 1, i
		data, _ := json.Marshal(l)
		_, werr := f.Write(data)
		if werr == nil && !w.SyncLater {
			werr = f.Sync()
		}
		if werr == nil {
			w.Fail.Hit("agent/lease-written") // the lease says who runs it; the task not started
		}
		if cerr := f.Close(); werr == nil {
			werr = cerr
		}
		if werr != nil {
			os.Remove(w.LeasePath(i))
			return 0, fmt.Errorf("spool: lease: %w", werr)
		}
		return i, nil
	}
	return 0, ErrNoTask
}

// SyncLease makes task's lease durable (after a Take with SyncLater); a
// lease already gone (its task ended) is no error.
func (w *Work) SyncLease(task int) error {
	f, err := os.OpenFile(w.LeasePath(task), os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("spool: lease: %w", err)
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		return fmt.Errorf("spool: lease: %w", err)
	}
	return nil
}

// ErrLeaseLost: a task's lease is gone, or is not the attempt's: the
// daemon took the task back (its heartbeat timed out, its pilot was seen
// gone) and may have leased it to another agent since.
var ErrLeaseLost = errors.New("spool: the lease is no longer the attempt's")

// Heartbeat marks attempt's lease of task as alive. The content is checked
// on the descriptor whose times it sets, so another attempt's lease is
// never refreshed; the time is UTIME_NOW, which on NFS the file server
// sets: the daemon compares it with its own clock, and a node whose clock
// is off must not make a live lease look stale (or a dead one fresh). A
// lease that is gone, empty or another attempt's is ErrLeaseLost.
func (w *Work) Heartbeat(task int, attempt string) error {
	f, err := os.OpenFile(w.LeasePath(task), os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ELOOP) {
		return ErrLeaseLost
	}
	if err != nil {
		return fmt.Errorf("spool: lease: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxTaskFileBytes))
	if err != nil {
		return fmt.Errorf("spool: lease: %w", err)
	}
	if !sameAttempt(data, attempt) {
		return ErrLeaseLost
	}
	if err := touchNow(f); err != nil {
		return fmt.Errorf("spool: lease: %w", err)
	}
	return nil
}

// touchNow sets f's access and modification times to the current time
// of the filesystem (futimens with UTIME_NOW).
func touchNow(f *os.File) error {
	ts := [2]unix.Timespec{{Nsec: unix.UTIME_NOW}, {Nsec: unix.UTIME_NOW}}
	_, _, errno := unix.Syscall6(unix.SYS_UTIMENSAT, f.Fd(), 0, uintptr(unsafe.Pointer(&ts)), 0, 0, 0)
	if errno != 0 {
		return errno
	}
	return nil
}

// Finish writes the attempt's result, then removes its lease.
func (w *Work) Finish(r Result) error {
	r.Version = 1
	data, err := json.Marshal(r)
	if err != nil {
		return err
	}
	dir := filepath.Join(w.Dir, ResultsDir)
	name := fmt.Sprintf("%d.%s", r.Task, r.Attempt)
	tmp := filepath.Join(dir, tmpPrefix+name)
	if err := writeFile(tmp, data, 0o640); err != nil {
		return err
	}
	w.Fail.Hit("agent/result-written") // durable under its temporary name
	if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("spool: %w", err)
	}
	w.Fail.Hit("agent/result-renamed") // in place, the rename not yet durable
	if err := syncDir(dir); err != nil {
		return err
	}
	w.Fail.Hit("agent/result-synced") // the result and the lease both there
	if err := w.removeLease(r.Task, r.Attempt); err != nil {
		return fmt.Errorf("spool: %w", err)
	}
	return nil
}

// removeLease removes task's lease if it is attempt's: the daemon may have
// taken the task back as lost meanwhile and another agent leased it again,
// and that lease (empty while its taker writes it) is not ours to remove.
func (w *Work) removeLease(task int, attempt string) error {
	path := w.LeasePath(task)
	if data, err := readNoFollow(path, maxTaskFileBytes); err != nil || !sameAttempt(data, attempt) {
		return nil
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// Release gives attempt's lease back without a result (its result could
// not be written), unless the task was taken back and leased again.
func (w *Work) Release(task int, attempt string) error {
	return w.removeLease(task, attempt)
}

// Finished reports whether a task is finished on the record.
func (w *Work) Finished(task int) bool { return w.finished[task] }

// Remaining reads the journal and returns how many of order are not
// finished.
func (w *Work) Remaining(order []int) (int, error) {
	if err := w.readJournal(); err != nil {
		return 0, err
	}
	n := 0
	for _, i := range order {
		if !w.finished[i] {
			n++
		}
	}
	return n, nil
}

// Events reads the journal from the start (runtimes, for the agent's
// estimate of a task's length).
func (w *Work) Events() ([]TaskEvent, error) {
	f, err := os.Open(w.journal)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []TaskEvent
	_, err = scanEvents(f, badLineLogger(w.Log, w.journal), func(ev Event) {
		if ev.Task != nil {
			out = append(out, *ev.Task)
		}
	})
	return out, err
}

// Control reads the daemon's instructions; none yet is the zero Control.
func (w *Work) Control() (Control, error) {
	var c Control
	data, err := os.ReadFile(w.control)
	if errors.Is(err, fs.ErrNotExist) {
		return c, nil
	}
	if err != nil {
		return c, err
	}
	return c, json.Unmarshal(data, &c)
}

// inFlight lists leases, then results.
func (w *Work) inFlight() (leased, results map[int]bool, err error) {
	leased, results = map[int]bool{}, map[int]bool{}
	names, err := readNames(filepath.Join(w.Dir, LeasesDir))
	if err != nil {
		return nil, nil, err
	}
	for _, n := range names {
		if i, err := strconv.Atoi(n); err == nil {
			leased[i] = true
		}
	}
	names, err = readNames(filepath.Join(w.Dir, ResultsDir))
	if err != nil {
		return nil, nil, err
	}
	for _, n := range names {
		if t, _, ok := strings.Cut(n, "."); ok {
			if i, err := strconv.Atoi(t); err == nil {
				results[i] = true
			}
		}
	}
	return leased, results, nil
}

// readJournal reads the journal's new complete lines.
func (w *Work) readJournal() error {
	f, err := os.Open(w.journal)
	if err != nil {
		return fmt.Errorf("spool: the job's journal: %w", err)
	}
	defer f.Close()
	if _, err := f.Seek(w.jOff, io.SeekStart); err != nil {
		return err
	}
	n, err := scanEvents(f, badLineLogger(w.Log, w.journal), func(ev Event) {
		if ev.Task != nil && ev.Task.Final {
			w.finished[ev.Task.Index] = true
		}
	})
	w.jOff += n
	return err
}

// scanEvents calls fn for each complete line and returns the bytes
// consumed (a line being appended is left for the next read). A complete
// line that does not parse is passed to bad (its byte offset in r), never
// skipped silently: the daemon's journal repair makes one impossible, so
// one is a sign of damage.
func scanEvents(r io.Reader, bad func(off int64, err error), fn func(Event)) (int64, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	var n int64
	for {
		line, err := br.ReadBytes('\n')
		if err != nil {
			if errors.Is(err, io.EOF) {
				return n, nil
			}
			return n, err
		}
		var ev Event
		if t := bytes.TrimSpace(line); len(t) > 0 {
			if err := json.Unmarshal(t, &ev); err != nil {
				if bad != nil {
					bad(n, fmt.Errorf("%w: %q", err, clip(string(t))))
				}
			} else {
				fn(ev)
			}
		}
		n += int64(len(line))
	}
}

func readNames(dir string) ([]string, error) {
	d, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return nil, err
	}
	out := names[:0]
	for _, n := range names {
		if !strings.HasPrefix(n, ".") {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out, nil
}

// ---- the daemon's side: everything in a work directory is hostile ----

// LeaseInfo is a lease as the daemon read it.
type LeaseInfo struct {
	Task      int
	Lease     Lease // zero if the content was unreadable (being written, or garbage)
	Heartbeat time.Time
}

// ResultInfo is a result file as the daemon read it.
type ResultInfo struct {
	Name   string
	Result Result
	Err    error // unreadable or invalid: the daemon discards it
}

// WorkScan is a job's work directory as the daemon saw it.
type WorkScan struct {
	Leases   []LeaseInfo
	Results  []ResultInfo
	Problems []error
}

// ScanWork reads uid's work directory of entry id without following any
// link; a missing directory is an empty scan (no agent ran yet).
func (s *Spool) ScanWork(uid int, id string) (WorkScan, error) {
	var ws WorkScan
	dir, err := s.openWork(uid, id)
	if err != nil {
		if errors.Is(err, syscall.ENOENT) {
			return ws, nil
		}
		return ws, err
	}
	defer dir.Close()
	leases, err := openOwnedDir(dir, LeasesDir, uid)
	if err == nil {
		names, _ := leases.Readdirnames(-1)
		sort.Strings(names)
		for _, n := range names {
			i, err := strconv.Atoi(n)
			if err != nil || i < 0 || strconv.Itoa(i) != n {
				continue // not a task index (agents only create those)
			}
			li := LeaseInfo{Task: i}
			// The heartbeat is the mtime of the file whose content was
			// read (one open), so an attempt never pairs with another
			// attempt's time. A lease that cannot be read (a link, a
			// FIFO) still has the time of what is there.
			data, mtime, err := readOwnedMtime(leases, n, uid, maxTaskFileBytes)
			if err == nil {
				_ = json.Unmarshal(data, &li.Lease)
			} else {
				ws.Problems = append(ws.Problems, fmt.Errorf("lease %s: %w", n, err))
				if mtime.IsZero() {
					if st, err := statHere(int(leases.Fd()), n); err == nil {
						mtime = time.Unix(st.Mtim.Sec, st.Mtim.Nsec)
					}
				}
			}
			li.Heartbeat = mtime
			ws.Leases = append(ws.Leases, li)
		}
		leases.Close()
	} else if !errors.Is(err, syscall.ENOENT) {
		ws.Problems = append(ws.Problems, err)
	}
	results, err := openOwnedDir(dir, ResultsDir, uid)
	if err == nil {
		names, _ := results.Readdirnames(-1)
		sort.Strings(names)
		for _, n := range names {
			if strings.HasPrefix(n, ".") {
				continue
			}
			ri := ResultInfo{Name: n}
			data, err := readOwned(results, n, uid, maxTaskFileBytes)
			if err == nil {
				err = decodeResult(n, data, &ri.Result)
			}
			ri.Err = err
			ws.Results = append(ws.Results, ri)
		}
		results.Close()
	} else if !errors.Is(err, syscall.ENOENT) {
		ws.Problems = append(ws.Problems, err)
	}
	return ws, nil
}

// decodeResult checks that a result's content agrees with its name.
func decodeResult(name string, data []byte, r *Result) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(r); err != nil {
		return fmt.Errorf("result %s: %w", clip(name), err)
	}
	if r.Task < 0 || name != fmt.Sprintf("%d.%s", r.Task, r.Attempt) || !isName(r.Attempt, 64) {
		return fmt.Errorf("result %s: its content names task %d attempt %q", clip(name), r.Task, clip(r.Attempt))
	}
	return nil
}

// RemoveLease and RemoveResult unlink a file in uid's work directory
// (never following a link: unlinkat on the directory's descriptor).
// RemoveLease with an attempt id leaves alone a lease that is empty or
// names another attempt: it was made since the caller read it (the task
// leased again; its taker may still be writing it).
func (s *Spool) RemoveLease(uid int, id string, task int, attempt string) error {
	name := strconv.Itoa(task)
	var keep func(*os.File) bool
	if attempt != "" {
		keep = func(d *os.File) bool {
			data, err := readOwned(d, name, uid, maxTaskFileBytes)
			return err == nil && !sameAttempt(data, attempt)
		}
	}
	return s.removeWork(uid, id, LeasesDir, name, keep)
}

func (s *Spool) RemoveResult(uid int, id string, name string) error {
	return s.removeWork(uid, id, ResultsDir, name, nil)
}

// sameAttempt reports whether lease data names attempt (a lease that is
// empty or does not parse names none).
func sameAttempt(data []byte, attempt string) bool {
	var l Lease
	return attempt != "" && json.Unmarshal(data, &l) == nil && l.Attempt == attempt
}

// removeWork unlinks sub/name unless keep (given the directory) says not.
func (s *Spool) removeWork(uid int, id, sub, name string, keep func(*os.File) bool) error {
	if name == "" || strings.ContainsRune(name, '/') || name == "." || name == ".." {
		return fmt.Errorf("spool: bad name %q", clip(name))
	}
	dir, err := s.openWork(uid, id)
	if err != nil {
		return err
	}
	defer dir.Close()
	d, err := openOwnedDir(dir, sub, uid)
	if err != nil {
		return err
	}
	defer d.Close()
	if keep != nil && keep(d) {
		return nil
	}
	err = syscall.Unlinkat(int(d.Fd()), name)
	if errors.Is(err, syscall.ENOENT) {
		return nil
	}
	return err
}

// openWork opens users/<uid>/work/<id> component by component.
func (s *Spool) openWork(uid int, id string) (*os.File, error) {
	if !ValidID(id) {
		return nil, fmt.Errorf("spool: bad job id %q", clip(id))
	}
	root, err := openDir(-1, s.Dir, false)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	users, err := openUsers(root, syscall.O_RDONLY)
	if err != nil {
		return nil, err
	}
	defer users.Close()
	u, err := openOwnedDir(users, strconv.Itoa(uid), uid)
	if err != nil {
		return nil, err
	}
	defer u.Close()
	w, err := openOwnedDir(u, WorkDir, uid)
	if err != nil {
		return nil, err
	}
	defer w.Close()
	return openOwnedDir(w, id, uid)
}

// PutControl writes a record's control.json (daemon).
func (rs *Records) PutControl(r *Record, c Control) error {
	c.Version = 1
	data, err := json.Marshal(c)
	if err != nil {
		return err
	}
	return rs.writeAtomic(r.DirName(), ControlFile, data, 0o644)
}

// TaskEvents reads a record's task events (daemon).
func (rs *Records) TaskEvents(name string) ([]TaskEvent, error) {
	f, err := rs.root.Open(filepath.Join(name, JournalFile))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, err
	}
	defer f.Close()
	var out []TaskEvent
	_, err = scanEvents(f, rs.badLine(name), func(ev Event) {
		if ev.Task != nil {
			out = append(out, *ev.Task)
		}
	})
	return out, err
}

// maxLogTail is how much of an agent's log LastAgentError reads.
const maxLogTail = 8 << 10

// LastAgentError reads the end of uid's agent log of pilot (or shadow
// element) job id pilotID in entry id's work directory,
// logs/<kind>-<pilotID>.log, as the agent writes it, without following a
// link, and returns whether it exists and its last ERROR line (the
// agent's own words, for an admin: clipped to one printable line). A log
// that does not exist means the agent never got as far as opening it.
func (s *Spool) LastAgentError(uid int, id, kind, pilotID string) (exists bool, line string, err error) {
	if !validJobID(pilotID) || (kind != "pilot" && kind != "shadow") {
		return false, "", fmt.Errorf("spool: bad agent log %q-%q", kind, clip(pilotID))
	}
	dir, err := s.openWork(uid, id)
	if err == nil {
		var logs *os.File
		logs, err = openOwnedDir(dir, LogsDir, uid)
		dir.Close()
		if err == nil {
			defer logs.Close()
			line, err = lastErrorLine(logs, kind+"-"+pilotID+".log", uid)
		}
	}
	switch {
	case errors.Is(err, syscall.ENOENT):
		return false, "", nil
	case err != nil:
		return false, "", err
	}
	return true, line, nil
}

// lastErrorLine is the last line of dir/name (owned by uid, regular, one
// link) whose slog level is ERROR, from its last maxLogTail bytes.
func lastErrorLine(dir *os.File, name string, uid int) (string, error) {
	f, size, err := openOwned(dir, name, uid)
	if err != nil {
		return "", err
	}
	defer f.Close()
	off := max(size-maxLogTail, 0)
	buf := make([]byte, size-off)
	n, err := f.ReadAt(buf, off)
	if err != nil && !errors.Is(err, io.EOF) {
		return "", err
	}
	lines := strings.Split(string(buf[:n]), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.Contains(lines[i], "level=ERROR") {
			return OneLine(lines[i], 300), nil
		}
	}
	return "", nil
}

// OneLine is s (someone else's text, shown to a user or an admin) as one
// line of at most max bytes: valid UTF-8, control characters (C0, DEL,
// C1) and format characters (bidirectional overrides, zero-width ones)
// blanked, so that it can neither move the cursor nor disguise itself.
func OneLine(s string, max int) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) {
			return ' '
		}
		return r
	}, strings.ToValidUTF8(s, "?"))
	if len(s) > max {
		s = strings.ToValidUTF8(s[:max-3], "") + "..."
	}
	return s
}
