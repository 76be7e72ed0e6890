// Package daemon is gleand's loop (ARCHITECTURE.md): one goroutine, one
// select over the context, a ticker and a capacity-1 trigger. This first
// slice is the intake: it takes users' elastic submissions from the spool
// into the daemon's own records, puts their anchor jobs on an admin hold,
// and follows the anchors, so that `scancel <id>` cancels the elastic job.
// The execution path (pilots, tasks, releasing the anchor) builds on it.
package daemon

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"os/user"
	"slices"
	"sort"
	"strconv"
	"syscall"
	"time"

	"github.com/glean-hpc/glean/sidecar/config"
	"github.com/glean-hpc/glean/sidecar/failpoint"
	"github.com/glean-hpc/glean/sidecar/slurm"
	"github.com/glean-hpc/glean/sidecar/spool"
)

// Privileged is every action the daemon takes on users' jobs that needs
// more than the glean user's rights. gleand implements it with the root
// helper's client (sidecar/privhelper), which acts only on job ids the
// daemon recorded: so a job is recorded (state accepting, or rejected or
// cancelled with its entry) before the daemon asks to hold or cancel it.
// SlurmPrivileged acts directly, for a glean user that is a Slurm operator.
type Privileged interface {
	Hold(ctx context.Context, jobID string) error    // admin hold: only an operator releases it
	Release(ctx context.Context, jobID string) error // release any hold
	Cancel(ctx context.Context, jobID string) error  // the whole job (all array elements)
}

// privGuard is the intake's Privileged behind the round's stall (exec.go):
// once a call failed slowly, the round's other holds, releases and cancels
// are skipped and tried again next round.
type privGuard struct {
	Privileged
	*stall
}

func (g privGuard) Hold(ctx context.Context, id string) error {
	return g.call(func() error { return g.Privileged.Hold(ctx, id) })
}
func (g privGuard) Release(ctx context.Context, id string) error {
	return g.call(func() error { return g.Privileged.Release(ctx, id) })
}
func (g privGuard) Cancel(ctx context.Context, id string) error {
	return g.call(func() error { return g.Privileged.Cancel(ctx, id) })
}

// SlurmPrivileged is Privileged through sidecar/slurm.
type SlurmPrivileged struct {
	C *slurm.Client
}

var _ Privileged = (*SlurmPrivileged)(nil)

func (p *SlurmPrivileged) Hold(ctx context.Context, id string) error {
	return p.C.Hold(ctx, id, slurm.AdminHold)
}

func (p *SlurmPrivileged) Cancel(ctx context.Context, id string) error {
	return p.C.Cancel(ctx, id, "")
}

// CancelPending cancels a shadow array's pending elements.
func (p *SlurmPrivileged) CancelPending(ctx context.Context, id string) error {
	return p.C.CancelPending(ctx, id)
}

// StartShadow moves a shadow array's begin time to now.
func (p *SlurmPrivileged) StartShadow(ctx context.Context, id string) error {
	return p.C.StartNow(ctx, id)
}

// Release releases a hold.
func (p *SlurmPrivileged) Release(ctx context.Context, id string) error { return p.C.Release(ctx, id) }

// CancelPilot cancels a pilot.
func (p *SlurmPrivileged) CancelPilot(ctx context.Context, _, id string) error {
	return p.C.Cancel(ctx, id, "")
}

// SignalPilot sends TERM to a pilot's batch shell (its agent).
func (p *SlurmPrivileged) SignalPilot(ctx context.Context, _, id string) error {
	return p.C.Cancel(ctx, id, "B:TERM")
}

// CancelPendingPilot cancels a pilot if it is still pending.
func (p *SlurmPrivileged) CancelPendingPilot(ctx context.Context, _, id string) error {
	return p.C.CancelPending(ctx, id)
}

// SubmitPilots needs root's sbatch --uid: only the helper can.
func (p *SlurmPrivileged) SubmitPilots(_ context.Context, _ string, intents []spool.PilotJob) ([]string, error) {
	return make([]string, len(intents)), errors.New("pilots are submitted as their owner by glean-helper: set helper.socket")
}

var _ Actor = (*SlurmPrivileged)(nil)

// NodeSizer tells the largest node of a partition, to refuse tasks no
// node can run.
type NodeSizer interface {
	Largest(ctx context.Context, partition string) (cpus int, memMB int64, err error)
}

// SnapshotSizer reads node sizes from a cluster snapshot.
type SnapshotSizer struct {
	C *slurm.Client
}

var _ NodeSizer = (*SnapshotSizer)(nil)

func (s *SnapshotSizer) Largest(ctx context.Context, partition string) (int, int64, error) {
	return largest(s.C.Snapshot(ctx, time.Now()), partition)
}

// Options configure the intake.
type Options struct {
	Spool           *spool.Spool
	AnchorPartition string
	PilotPartition  string
	Limits          config.Limits
	// MinUID is helper.min_uid: glean-helper submits no pilot for a uid
	// below it (system accounts), so such entries are rejected. 0: none.
	MinUID int
	Fail   *failpoint.Set // crash tests only
}

// Intake takes entries in and follows the jobs' anchors.
type Intake struct {
	opt     Options
	queue   Queue
	priv    Privileged
	act     Privileged // this round's: priv behind the round's stall
	sizer   NodeSizer
	records *spool.Records
	log     *slog.Logger
	users   func(uid int) (string, error)

	known map[string]*spool.Record // by record directory name
}

type nodeSizes struct {
	cpus int
	mem  int64
}

// NewIntake loads the daemon's records (the only state) and returns an
// intake ready for Round.
func NewIntake(opt Options, records *spool.Records, q Queue, p Privileged, s NodeSizer, log *slog.Logger) (*Intake, error) {
	in := &Intake{opt: opt, queue: q, priv: p, sizer: s, records: records, log: log, users: lookupUser,
		known: map[string]*spool.Record{}}
	recs, problems := records.List()
	for _, err := range problems {
		log.Warn("unreadable record", "err", err)
	}
	for _, r := range recs {
		// The public status.json, and job.json private (0600), for
		// records written by an older glean or before a crash.
		if err := records.SyncStatus(r); err != nil {
			log.Warn("writing a record's status", "record", r.DirName(), "err", err)
		}
		if added, err := records.JournalPending(r); err != nil {
			log.Warn("journaling an event a crash left unjournaled; trying again at the next start", "record", r.DirName(), "err", err)
		} else if added {
			log.Info("journaled an event a crash left unjournaled", "record", r.DirName(), "event", r.State)
		}
		if r.State == spool.StateAccepting {
			continue // interrupted before its jobs were held: taken in again
		}
		in.known[r.DirName()] = r
	}
	return in, nil
}

func lookupUser(uid int) (string, error) {
	u, err := user.LookupId(strconv.Itoa(uid))
	if err != nil {
		return "", err
	}
	return u.Username, nil
}

// Stats counts what a round did.
type Stats struct {
	Accepted, Rejected, Cancelled, Released int
	// Deferred: new entries left for later rounds, their users over
	// limits.max_entries_per_round in this one.
	Deferred int
}

// Round is Observe with the intake's own Slurm reads (its Queue and
// NodeSizer): for a daemon without an executor, and for tests.
func (in *Intake) Round(ctx context.Context, now time.Time) (Stats, error) {
	if in.queue == nil || in.sizer == nil {
		return Stats{}, errors.New("intake: no Queue or NodeSizer to read Slurm with")
	}
	return in.Observe(ctx, &Observation{Now: now, queue: in.queue, sizer: in.sizer})
}

// Observe scans the incoming directories, takes new entries in and
// follows active jobs, reading Slurm from the round's observation (only if
// there is something to take in or follow). Errors reading Slurm postpone
// the round's work, never reject an entry.
func (in *Intake) Observe(ctx context.Context, obs *Observation) (Stats, error) {
	var st Stats
	now := obs.Now
	in.act = privGuard{Privileged: in.priv, stall: &obs.stall}
	found, problems := in.opt.Spool.ScanIncoming()
	for _, err := range problems {
		in.log.Warn("spool scan", "err", err)
	}
	// At most MaxEntriesPerRound new entries of each user, the oldest
	// (ScanIncoming sorts them by name: entry ids by time): however many
	// one user writes, a round stays short and other users' entries are
	// taken in in the same round.
	var fresh []spool.Incoming
	taken, deferred := map[int]int{}, map[int]int{}
	for _, f := range found {
		if _, ok := in.known[recordName(f)]; ok {
			continue
		}
		if l := in.opt.Limits.MaxEntriesPerRound; l > 0 && taken[f.UID] >= l {
			deferred[f.UID]++
			continue
		}
		taken[f.UID]++
		fresh = append(fresh, f)
	}
	for _, uid := range slices.Sorted(maps.Keys(deferred)) {
		in.log.Info("new entries wait for a later round (limits.max_entries_per_round)", "uid", uid,
			"taken", taken[uid], "waiting", deferred[uid])
		st.Deferred += deferred[uid]
	}
	active := 0
	for _, r := range in.known {
		if r.Active() || len(r.Cancel) > 0 || len(r.Release) > 0 {
			active++
		}
	}
	if len(fresh) == 0 && active == 0 {
		return st, nil
	}
	jobs, err := obs.Jobs(ctx)
	if err != nil {
		return st, fmt.Errorf("squeue: %w", err)
	}
	for _, f := range fresh {
		switch in.takeIn(ctx, obs, f, jobs) {
		case spool.StateRejected:
			st.Rejected++
		case spool.StateQueued, spool.StateWaiting:
			st.Accepted++
		case spool.StateCancelled:
			st.Cancelled++
		}
	}
	// Jobs a rejection or an early end left to cancel (a restart).
	for _, n := range sortedNames(in.known) {
		if r := in.known[n]; len(r.Cancel) > 0 || len(r.Release) > 0 {
			in.cancelLeft(ctx, r, jobs, "reject/cancelled")
		}
	}
	c, r := in.follow(ctx, now, jobs)
	st.Cancelled += c
	st.Released += r
	return st, nil
}

// recordName is where an incoming entry's record lives; names that are
// not entry ids get a hashed name.
func recordName(f spool.Incoming) string { return spool.RecordName(f.UID, recordID(f.Name)) }

func recordID(name string) string {
	if spool.ValidID(name) {
		return name
	}
	return fmt.Sprintf("bad-%x", sha256.Sum256([]byte(name)))[:20]
}

// takeIn handles one new entry and returns the state it ends in ("" if
// it is to be tried again next round).
func (in *Intake) takeIn(ctx context.Context, obs *Observation, f spool.Incoming, jobs map[string]QJob) string {
	now := obs.Now
	log := in.log.With("uid", f.UID, "entry", f.Name)
	rec := &spool.Record{ID: recordID(f.Name), UID: f.UID, Submitted: now}
	rec.User, _ = in.users(f.UID)
	if rec.User == "" {
		rec.User = strconv.Itoa(f.UID)
	}
	var e *spool.Entry
	// refuse records the rejection, then acts on the jobs verified as the
	// entry's (the record, with the entry's nonce, is what lets the
	// privileged helper act on them): release (the anchor: it runs as the
	// user, writes the reason into the user's -o file and exits 1) and
	// cancel (the shadow array).
	refuse := func(reason string, release, cancel []string) string {
		rec.State, rec.Reason, rec.Ended = spool.StateRejected, reason, now
		if len(release)+len(cancel) > 0 {
			rec.Entry, rec.Release, rec.Cancel = e, release, cancel
		}
		if err := in.store(rec, spool.Event{Time: now, Event: "rejected", Detail: reason}, "reject/recorded"); err != nil {
			log.Error("recording a rejection", "err", err)
			return ""
		}
		in.opt.Fail.Hit("reject/journaled")
		in.cancelLeft(ctx, rec, jobs, "reject/cancelled")
		log.Info("entry rejected", "reason", reason)
		return spool.StateRejected
	}
	// reject is refuse with the verified jobs: the anchor first, then
	// the shadow array.
	reject := func(reason string, verified ...string) string {
		if len(verified) == 0 {
			return refuse(reason, nil, nil)
		}
		return refuse(reason, verified[:1], verified[1:])
	}

	lim := spool.Limits{MaxTasks: in.opt.Limits.MaxTasksPerJob}
	read, err := in.opt.Spool.ReadIncoming(f, lim)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) && entryGone(in.opt.Spool, f) {
			return "" // removed between scan and read
		}
		if transient(err) {
			log.Warn("entry not readable now; retrying next round", "err", err)
			return ""
		}
		return reject(fmt.Sprintf("the entry cannot be taken in: %v", err))
	}
	e = read.Entry
	rec.EntryDigest = read.Digest
	rec.Anchor, rec.Shadow, rec.Name, rec.Mode, rec.Submitted = e.Anchor, e.Shadow, e.Name, e.Mode, e.Submitted
	rec.ShadowUnheld = e.Shadow != "" // this gleand puts no hold on it (an older one admin-held it)
	rec.Tasks = spool.Counts{Total: e.Tasks}
	if rec.User == strconv.Itoa(f.UID) {
		return reject(fmt.Sprintf("uid %d has no user name here", f.UID))
	}

	// The anchor must be this user's job and carry this entry's nonce;
	// only then does glean act on it.
	aj, ok := jobs[e.Anchor]
	switch {
	case !ok:
		reason := fmt.Sprintf("anchor job %s is not known to Slurm", e.Anchor)
		if sj, ok := jobs[e.Shadow]; e.Shadow != "" && ok && sj.User == rec.User && sj.Comment == spool.ShadowComment(e.ID, e.Nonce) && !Ended(sj.State) {
			// Its anchor ended and was purged (MinJobAge) before glean
			// took it in: the shadow array, verified by its own comment,
			// would otherwise pend behind its begin time for a year.
			return refuse(reason+fmt.Sprintf(": it ended before glean took the job in (or never was); its shadow array %s is cancelled", e.Shadow), nil, []string{e.Shadow})
		}
		return reject(reason)
	case aj.User != rec.User:
		return reject(fmt.Sprintf("anchor job %s is not yours (it belongs to %s)", e.Anchor, aj.User))
	case aj.Comment != spool.Comment(e.ID, e.Nonce):
		return reject(fmt.Sprintf("anchor job %s does not carry this entry's id and nonce in its comment", e.Anchor))
	case aj.Partition != in.opt.AnchorPartition:
		return reject(fmt.Sprintf("anchor job %s is in partition %s, not the anchor partition %s", e.Anchor, aj.Partition, in.opt.AnchorPartition))
	}
	verified := []string{e.Anchor}
	if e.Shadow != "" {
		sj, ok := jobs[e.Shadow]
		switch {
		case !ok:
			return reject(fmt.Sprintf("shadow array %s is not known to Slurm", e.Shadow), verified...)
		case sj.User != rec.User || sj.Comment != spool.ShadowComment(e.ID, e.Nonce):
			return reject(fmt.Sprintf("shadow array %s is not this job's", e.Shadow), verified...)
		}
		if !Ended(sj.State) {
			verified = append(verified, e.Shadow)
		}
	}
	if Ended(aj.State) {
		rec.State, rec.Ended = spool.StateCancelled, now
		rec.Reason = fmt.Sprintf("the anchor job %s ended (%s) before glean took the job in", e.Anchor, aj.State)
		rec.Entry, rec.Cancel = e, verified[1:]
		if err := in.store(rec, spool.Event{Time: now, Event: "cancelled", Detail: rec.Reason}, "reject/recorded"); err != nil {
			log.Error("recording", "err", err)
			return ""
		}
		in.opt.Fail.Hit("reject/journaled")
		in.cancelLeft(ctx, rec, jobs, "reject/cancelled")
		return spool.StateCancelled
	}

	if slurm.JobStarted(aj.State) {
		// Released by its owner before glean took it in (or a job of
		// theirs made to look like one): it can no longer be held, and
		// every round's hold would fail. Release skips a job not pending.
		return reject(fmt.Sprintf("anchor job %s is %s: it was released before glean took the job in, and glean runs only a job "+
			"whose anchor it holds pending; scancel it and submit again", e.Anchor, aj.State), verified...)
	}

	if f.UID < in.opt.MinUID {
		// glean-helper would refuse every pilot of the job, which would
		// stay queued for ever. Root's jobs glean never touches.
		reason := fmt.Sprintf("uid %d is a system account: glean runs no pilots for uids below helper.min_uid (%d); "+
			"submit without --glean, or as a regular user", f.UID, in.opt.MinUID)
		if f.UID == 0 || rec.User == "root" {
			return reject(reason)
		}
		return reject(reason, verified...)
	}

	// The user's caps.
	jobsOfUser, tasksOfUser := 0, 0
	for _, r := range in.known {
		if r.UID == f.UID && r.Active() {
			jobsOfUser++
			tasksOfUser += r.Tasks.Pending + r.Tasks.Running
		}
	}
	if l := in.opt.Limits.MaxJobsPerUser; jobsOfUser+1 > l {
		return reject(fmt.Sprintf("over your caps: %d elastic jobs active, the site allows %d (limits.max_jobs_per_user)", jobsOfUser, l), verified...)
	}
	if l := in.opt.Limits.MaxTasksPerUser; tasksOfUser+e.Tasks > l {
		return reject(fmt.Sprintf("over your caps: %d tasks active plus %d new, the site allows %d (limits.max_tasks_per_user)", tasksOfUser, e.Tasks, l), verified...)
	}

	// Tasks no node can run.
	cpus, mem, err := obs.Largest(ctx, in.opt.PilotPartition)
	if errors.Is(err, errNoPartition) {
		obs.pilotMissing(in.log, in.opt.PilotPartition) // the admin's to fix: the entry waits
		return ""
	}
	if err != nil {
		log.Warn("reading node sizes; trying again next round", "err", err)
		return ""
	}
	res := e.Resources
	switch {
	case res.CPUs > cpus:
		return reject(fmt.Sprintf("impossible resources: a task needs %d CPUs, the largest node of partition %s has %d", res.CPUs, in.opt.PilotPartition, cpus), verified...)
	case res.MemMB > mem || res.MemPerCPUMB*int64(res.CPUs) > mem:
		need := max(res.MemMB, res.MemPerCPUMB*int64(res.CPUs))
		return reject(fmt.Sprintf("impossible resources: a task needs %d MB of memory, the largest node of partition %s has %d MB", need, in.opt.PilotPartition, mem), verified...)
	}

	// Take it: record it as accepting (the helper holds only recorded
	// jobs), hold the anchor so that the user cannot release it, then
	// record it as taken in. An accepting record left by a failed hold is
	// overwritten next round. The shadow array is not held: a hold and its
	// release would cost it its place in the queue (priority/basic); it
	// waits behind the begin time the wrapper gave it until the execution
	// path lets it start (startShadow).
	rec.Entry, rec.Accepted = e, now
	rec.Tasks.Pending = e.Tasks
	rec.State = spool.StateAccepting
	if err := in.records.Put(rec); err != nil {
		log.Error("recording before the hold", "err", err)
		return ""
	}
	in.opt.Fail.Hit("intake/accepting-recorded")
	if err := in.act.Hold(ctx, e.Anchor); err != nil {
		log.Warn("admin hold; trying again next round", "job", e.Anchor, "err", err)
		return ""
	}
	in.opt.Fail.Hit("intake/held")
	rec.State = spool.StateQueued
	rec.Waiting = waiting(e, aj, jobs, now)
	if len(rec.Waiting) > 0 {
		rec.State = spool.StateWaiting
	}
	if err := in.records.PutFile(rec, spool.ScriptFile, read.Script, 0o600); err != nil {
		log.Error("copying the script", "err", err)
		return ""
	}
	in.opt.Fail.Hit("intake/script-copied")
	if read.Items != nil {
		if err := in.records.PutFile(rec, spool.ItemsFile, read.Items, 0o600); err != nil {
			log.Error("copying the items", "err", err)
			return ""
		}
		in.opt.Fail.Hit("intake/items-copied")
	}
	if err := in.store(rec, spool.Event{Time: now, Event: "accepted", Detail: fmt.Sprintf("%d tasks, mode %s", e.Tasks, e.Mode)}, "intake/queued-recorded"); err != nil {
		log.Error("recording", "err", err)
		return ""
	}
	log.Info("entry taken in", "anchor", e.Anchor, "shadow", e.Shadow, "tasks", e.Tasks, "mode", e.Mode, "state", rec.State)
	return rec.State
}

// entryGone reports whether an entry's directory no longer exists.
func entryGone(s *spool.Spool, f spool.Incoming) bool {
	found, _ := s.ScanIncoming()
	for _, g := range found {
		if g == f {
			return false
		}
	}
	return true
}

// waiting lists what keeps a job's tasks from starting: a --begin time
// still ahead (Slurm's resolution, read from the anchor) and a dependency
// not yet met.
func waiting(e *spool.Entry, anchor QJob, jobs map[string]QJob, now time.Time) []string {
	var w []string
	if e.Begin != "" && anchor.Start.After(now) {
		w = append(w, "begin "+anchor.Start.UTC().Format(time.RFC3339))
	}
	switch EvalDependency(e.Dependency, jobs) {
	case DepWaiting:
		w = append(w, "dependency "+e.Dependency)
	case DepNever:
		w = append(w, "dependency never satisfied: "+e.Dependency)
	}
	return w
}

// store writes a record and its journal event, and remembers it. The
// event goes into the record first (Pending), so that a daemon that dies
// between the two writes journals it at its start (NewIntake); point is
// the failpoint between them.
func (in *Intake) store(rec *spool.Record, ev spool.Event, point string) error {
	rec.Pending = &ev
	if err := in.records.Put(rec); err != nil {
		rec.Pending = nil
		return err
	}
	in.opt.Fail.Hit(point)
	if err := in.records.Journal(rec, ev); err != nil {
		return err // Pending stays: journaled at the next start
	}
	rec.Pending = nil // cleared on disk by the record's next Put
	in.known[rec.DirName()] = rec
	return nil
}

// cancelLeft cancels the Slurm jobs a rejection or an early end left to
// cancel (rec.Cancel) and releases those it left to release (rec.Release:
// a rejected entry's anchor), each once it is done or gone from Slurm, and
// records what is left, so that a daemon that died in between finishes
// after its restart.
func (in *Intake) cancelLeft(ctx context.Context, rec *spool.Record, jobs map[string]QJob, point string) {
	if len(rec.Cancel) == 0 && len(rec.Release) == 0 {
		return
	}
	act := func(ids []string, pending bool, do func(context.Context, string) error, what string) []string {
		var left []string
		for _, id := range ids {
			j, ok := jobs[id]
			if !ok || Ended(j.State) || pending && j.State != "PENDING" {
				continue // done (a released anchor runs), or gone
			}
			if err := do(ctx, id); err != nil {
				in.log.Warn(what+"; trying again next round", "record", rec.DirName(), "job", id, "err", err)
				left = append(left, id)
				continue
			}
			in.opt.Fail.Hit(point)
		}
		return left
	}
	rec.Cancel = act(rec.Cancel, false, in.act.Cancel, "cancelling a Slurm job of a refused entry")
	rec.Release = act(rec.Release, true, in.act.Release, "releasing a refused entry's anchor")
	if err := in.records.Put(rec); err != nil {
		in.log.Error("recording", "record", rec.DirName(), "err", err)
	}
}

// follow updates active jobs from Slurm: an anchor that was cancelled (the
// user's scancel, or glean cancel) cancels the job and its shadow array; a
// waiting job whose begin time and dependency are met becomes queued.
func (in *Intake) follow(ctx context.Context, now time.Time, jobs map[string]QJob) (cancelled, released int) {
	names := make([]string, 0, len(in.known))
	for n, r := range in.known {
		if r.Active() {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	for _, n := range names {
		r := in.known[n]
		aj, ok := jobs[r.Anchor]
		if !ok || Ended(aj.State) {
			state := "gone from Slurm"
			if ok {
				state = aj.State
			}
			if r.Shadow != "" {
				if sj, ok := jobs[r.Shadow]; ok && !Ended(sj.State) {
					if err := in.act.Cancel(ctx, r.Shadow); err != nil {
						in.log.Warn("cancelling the shadow array", "job", r.Shadow, "err", err)
						continue // try again next round
					}
					in.opt.Fail.Hit("follow/shadow-cancelled")
				}
			}
			r.State, r.Ended = spool.StateCancelled, now
			r.Reason = fmt.Sprintf("the anchor job %s was cancelled (%s): scancel or glean cancel", r.Anchor, state)
			r.Tasks.Pending, r.Waiting = 0, nil
			if err := in.store(r, spool.Event{Time: now, Event: "cancelled", Detail: r.Reason}, "follow/recorded"); err != nil {
				in.log.Error("recording a cancellation", "err", err)
				continue
			}
			in.log.Info("job cancelled", "anchor", r.Anchor, "uid", r.UID)
			cancelled++
			continue
		}
		if r.State == spool.StateWaiting && r.Entry != nil {
			w := waiting(r.Entry, aj, jobs, now)
			if len(w) == 0 {
				r.State, r.Waiting = spool.StateQueued, nil
				if err := in.store(r, spool.Event{Time: now, Event: "queued", Detail: "begin time and dependency met"}, "follow/queued-recorded"); err != nil {
					in.log.Error("recording", "err", err)
					continue
				}
				released++
			} else if fmt.Sprint(w) != fmt.Sprint(r.Waiting) {
				r.Waiting = w
				_ = in.records.Put(r)
			}
		}
	}
	return cancelled, released
}

// sortedNames lists records' names in order.
func sortedNames(recs map[string]*spool.Record) []string {
	names := make([]string, 0, len(recs))
	for n := range recs {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Get returns a record by name (for tests and the CLI).
func (in *Intake) Get(name string) *spool.Record { return in.known[name] }

// Active counts the jobs not yet ended.
func (in *Intake) Active() int {
	n := 0
	for _, r := range in.known {
		if r.Active() {
			n++
		}
	}
	return n
}

// transient reports a read failure of the filesystem, not of the entry
// (an NFS hiccup, no descriptors left): the entry is tried again next round
// instead of being rejected for good.
func transient(err error) bool {
	for _, e := range []syscall.Errno{syscall.EIO, syscall.ESTALE, syscall.EMFILE, syscall.ENFILE,
		syscall.ENOMEM, syscall.EINTR, syscall.EAGAIN, syscall.ETIMEDOUT} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}
