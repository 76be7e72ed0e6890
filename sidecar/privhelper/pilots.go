package privhelper

import (
	"context"
	"fmt"
	"os/user"
	"slices"
	"strconv"

	"github.com/glean-hpc/glean/sidecar/spool"
)

// submitPilot submits one pilot for the job a record names, as the
// record's owner, with the site's fixed parameters: the request chooses
// only the time limit and the node the policy sized it for.
func (h *Handler) submitPilot(ctx context.Context, req Request) (string, error) {
	r, err := h.ownedRecord(req.Record)
	if err != nil {
		return "", err
	}
	if r.State != spool.StateQueued && r.State != spool.StateRunning {
		return "", refuse("record %s is %s: pilots are for queued or running jobs", req.Record, r.State)
	}
	if err := h.checkOwner(r); err != nil {
		return "", err
	}
	if r.UID < h.Pilots.MinUID {
		return "", refuse("record %s: uid %d is a system account (helper.min_uid %d)", req.Record, r.UID, h.Pilots.MinUID)
	}
	// The job's anchor must still be the owner's, with the record's nonce:
	// a job Slurm no longer knows gets no pilot.
	jobs, err := h.queue(ctx)
	if err != nil {
		return "", fmt.Errorf("squeue: %w", err)
	}
	if err := h.matches(Request{Op: OpRelease, Job: r.Anchor}, r, jobs); err != nil {
		return "", err
	}
	group := h.Pilots.Group
	if group == nil {
		group = primaryGroup
	}
	gid, err := group(r.UID)
	if err != nil {
		return "", refuse("record %s: uid %d: %v", req.Record, r.UID, err)
	}
	return h.Slurm.Submit(ctx, h.pilotArgs(r, gid, req))
}

// pilotArgs is a pilot's sbatch command line (after sbatch --parsable).
func (h *Handler) pilotArgs(r *spool.Record, gid int, req Request) []string {
	p := h.Pilots
	limit := "UNLIMITED"
	if req.Minutes > 0 {
		limit = strconv.Itoa(req.Minutes)
	}
	args := []string{
		"--uid=" + strconv.Itoa(r.UID), "--gid=" + strconv.Itoa(gid),
		"--partition=" + p.Partition,
		"--nodes=1", "--exclusive", "--export=NONE", "--no-requeue",
		"--signal=B:TERM@" + strconv.Itoa(int(p.Grace.Seconds())),
		"--time=" + limit,
		"--job-name=glean-pilot", "--comment=" + PilotComment(req.Token),
		"--output=/dev/null", "--error=/dev/null", "--chdir=/tmp",
	}
	if p.QOS != "" {
		args = append(args, "--qos="+p.QOS)
	}
	if p.Account != "" {
		args = append(args, "--account="+p.Account)
	}
	if req.Node != "" {
		args = append(args, "--nodelist="+req.Node)
	}
	args = append(args, p.Script, p.Agent, "pilot", "--job", r.DirName())
	if p.Config != "" {
		args = append(args, "--config", p.Config)
	}
	return args
}

// cancelPilot cancels a pilot the record names, after squeue shows it as
// the record's user's job in the pilot partition.
func (h *Handler) cancelPilot(ctx context.Context, req Request) error {
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
