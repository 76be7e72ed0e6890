package privhelper

import (
	"context"
	"fmt"
	"os/user"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/glean-hpc/glean/sidecar/cluster"
	"github.com/glean-hpc/glean/sidecar/spool"
)

// submitPilots submits the pilots a record holds as intents (recorded
// by the daemon with their tokens before it asks, not yet given an id),
// as the record's owner, with the site's fixed parameters: the record
// chooses only each pilot's time limit and the node the policy sized it
// for. The sbatches run concurrently; the ids come back in the order of
// the tokens, "" for one that failed.
func (h *Handler) submitPilots(ctx context.Context, req Request) ([]string, error) {
	r, err := h.ownedRecord(req.Record)
	if err != nil {
		return nil, err
	}
	if r.State != spool.StateQueued && r.State != spool.StateRunning {
		return nil, refuse("record %s is %s: pilots are for queued or running jobs", req.Record, r.State)
	}
	if err := h.checkOwner(r); err != nil {
		return nil, err
	}
	if r.UID < h.Pilots.MinUID {
		return nil, refuse("record %s: uid %d is a system account (helper.min_uid %d)", req.Record, r.UID, h.Pilots.MinUID)
	}
	intents := make([]spool.PilotJob, len(req.Tokens))
	for i, t := range req.Tokens {
		k := slices.IndexFunc(r.PilotJobs, func(p spool.PilotJob) bool { return p.Token == t })
		switch {
		case k < 0:
			return nil, refuse("record %s holds no pilot with token %s", req.Record, t)
		case r.PilotJobs[k].ID != "":
			return nil, refuse("record %s: the pilot with token %s was submitted already (job %s)", req.Record, t, r.PilotJobs[k].ID)
		case r.PilotJobs[k].Node != "" && !validNodeName(r.PilotJobs[k].Node):
			return nil, refuse("record %s: bad node name %q", req.Record, clip(r.PilotJobs[k].Node))
		case r.PilotJobs[k].TimeLimit <= 0:
			return nil, refuse("record %s: the pilot with token %s has no time limit", req.Record, t)
		}
		intents[i] = r.PilotJobs[k]
	}
	// The job's anchor must still be the owner's, with the record's nonce:
	// a job Slurm no longer knows gets no pilot.
	jobs, err := h.queue(ctx)
	if err != nil {
		return nil, fmt.Errorf("squeue: %w", err)
	}
	if err := h.matches(Request{Op: OpRelease, Job: r.Anchor}, r, jobs); err != nil {
		return nil, err
	}
	group := h.Pilots.Group
	if group == nil {
		group = primaryGroup
	}
	gid, err := group(r.UID)
	if err != nil {
		return nil, refuse("record %s: uid %d: %v", req.Record, r.UID, err)
	}
	ids := make([]string, len(intents))
	errs := make([]error, len(intents))
	sem := make(chan struct{}, maxConcurrentSbatch)
	var wg sync.WaitGroup
	for i, p := range intents {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			ids[i], errs[i] = h.Slurm.Submit(ctx, h.pilotArgs(r, gid, p))
		}()
	}
	wg.Wait()
	failed, first := 0, error(nil)
	for _, err := range errs {
		if err != nil {
			if first == nil {
				first = err
			}
			failed++
		}
	}
	if failed > 0 {
		return ids, fmt.Errorf("%d of %d pilots not submitted: %w", failed, len(ids), first)
	}
	return ids, nil
}

// maxConcurrentSbatch bounds the sbatches of one request run at once.
const maxConcurrentSbatch = 4

// PilotMinutes is a pilot's --time in whole minutes (rounded up), 0 for
// UNLIMITED, at most a year.
func PilotMinutes(limit time.Duration) int {
	if limit == cluster.Unlimited || limit <= 0 {
		return 0
	}
	return int(min((limit+time.Minute-1)/time.Minute, maxPilotMinutes))
}

// pilotArgs is a pilot's sbatch command line (after sbatch --parsable).
func (h *Handler) pilotArgs(r *spool.Record, gid int, p spool.PilotJob) []string {
	pp := h.Pilots
	limit := "UNLIMITED"
	if m := PilotMinutes(p.TimeLimit); m > 0 {
		limit = strconv.Itoa(m)
	}
	args := []string{
		"--uid=" + strconv.Itoa(r.UID), "--gid=" + strconv.Itoa(gid),
		"--partition=" + pp.Partition,
		"--nodes=1", "--exclusive", "--export=NONE", "--no-requeue",
		"--signal=B:TERM@" + strconv.Itoa(int(pp.Grace.Seconds())),
		"--time=" + limit,
		"--job-name=glean-pilot", "--comment=" + PilotComment(p.Token),
		"--output=/dev/null", "--error=/dev/null", "--chdir=/tmp",
	}
	if pp.QOS != "" {
		args = append(args, "--qos="+pp.QOS)
	}
	if pp.Account != "" {
		args = append(args, "--account="+pp.Account)
	}
	if p.Node != "" {
		args = append(args, "--nodelist="+p.Node)
	}
	args = append(args, pp.Script, pp.Agent, "pilot", "--job", r.DirName())
	if pp.Config != "" {
		args = append(args, "--config", pp.Config)
	}
	return args
}

// onPilot cancels or signals a pilot the record names, after squeue shows
// it as the record's user's job in the pilot partition: cancel-pilot
// scancels it (TERM to all its processes, KILL after KillWait),
// signal-pilot sends TERM to its batch shell alone (the agent, which
// stops its tasks within the grace, hands them back and exits, so that
// the pilot ends), cancel-pending-pilot cancels it only if it has not
// started.
func (h *Handler) onPilot(ctx context.Context, req Request) error {
	r, err := h.ownedRecord(req.Record)
	if err != nil {
		return err
	}
	if !slices.ContainsFunc(r.PilotJobs, func(p spool.PilotJob) bool { return p.ID == req.Job }) {
		return refuse("job %s is not a pilot of record %s", req.Job, req.Record)
	}
	if err := h.checkOwner(r); err != nil {
		return err
	}
	jobs, err := h.queue(ctx)
	if err != nil {
		return fmt.Errorf("squeue: %w", err)
	}
	for _, j := range jobs {
		if j.ID != req.Job {
			continue
		}
		switch {
		case j.User != r.User:
			return refuse("job %s belongs to %s, not to %s whose pilot glean recorded", req.Job, j.User, r.User)
		case j.Partition != h.Pilots.Partition:
			return refuse("job %s is in partition %s, not the pilot partition %s", req.Job, j.Partition, h.Pilots.Partition)
		}
		switch req.Op {
		case OpSignalPilot:
			return h.Slurm.Cancel(ctx, req.Job, "B:TERM")
		case OpCancelPendingPilot:
			return h.Slurm.CancelPending(ctx, req.Job)
		}
		return h.Slurm.Cancel(ctx, req.Job, "")
	}
	return nil // gone already
}

// ownedRecord reads a record the daemon wrote.
func (h *Handler) ownedRecord(name string) (*spool.Record, error) {
	rs, err := h.Spool.OpenRecords()
	if err != nil {
		return nil, fmt.Errorf("reading the daemon's records: %w", err)
	}
	defer rs.Close()
	r, err := rs.GetOwned(name, h.DaemonUID)
	if err != nil {
		return nil, refuse("record %s: %v", name, err)
	}
	if r.Entry == nil || r.Entry.Nonce == "" || r.Entry.ID != r.ID {
		return nil, refuse("record %s holds no entry nonce", name)
	}
	return r, nil
}

// checkOwner: never root, and the record's user is its uid here.
func (h *Handler) checkOwner(r *spool.Record) error {
	if r.UID == 0 || r.User == "root" {
		return refuse("record %s: glean does not act for root", r.DirName())
	}
	users := h.Users
	if users == nil {
		users = lookupUser
	}
	if u, err := users(r.UID); err != nil || u != r.User {
		return refuse("record %s names user %s, which is not uid %d here", r.DirName(), r.User, r.UID)
	}
	return nil
}

func primaryGroup(uid int) (int, error) {
	u, err := user.LookupId(strconv.Itoa(uid))
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(u.Gid)
}
