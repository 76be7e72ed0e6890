package privhelper

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os/user"
	"strconv"
	"strings"
	"time"

	"github.com/glean-hpc/glean/sidecar/slurm"
	"github.com/glean-hpc/glean/sidecar/spool"
)

// Handler checks a request against the daemon's records and Slurm, and
// acts through sidecar/slurm.
type Handler struct {
	Spool           *spool.Spool  // the daemon's records are read under Spool.Dir/jobs, read-only
	Slurm           *slurm.Client // squeue, scontrol, scancel
	AnchorPartition string
	DaemonUID       int // records count only if the daemon's user owns them
	Log             *slog.Logger
	// Users maps a uid to its user name; nil means the system's.
	Users func(uid int) (string, error)
	// Pilots: how every pilot is submitted. Nothing of it comes from a
	// request or a user.
	Pilots PilotParams
}

// PilotParams are the site's fixed pilot parameters (glean.toml).
type PilotParams struct {
	Partition, QOS, Account string
	Script                  string        // jobscripts/pilot.sh as installed (root's file)
	Agent                   string        // glean-agent on the compute nodes
	Config                  string        // glean.toml path the agent reads
	Grace                   time.Duration // --signal=B:TERM@grace
	MinUID                  int           // uids below are system accounts: refused
	// Group maps a uid to its primary gid; nil means the system's.
	Group func(uid int) (int, error)
}

// Handle checks req and, if the checks pass, acts on it. A failed check is
// a *Refusal; a failed action is the Slurm command's error. jobs are the
// new pilots of submit-pilots.
func (h *Handler) Handle(ctx context.Context, req Request) (jobs []string, err error) {
	switch {
	case req.Op == OpSubmitPilots:
		return h.submitPilots(ctx, req)
	case pilotOp(req.Op):
		return nil, h.onPilot(ctx, req)
	}
	if err := h.check(ctx, req); err != nil {
		return nil, err
	}
	switch req.Op {
	case OpHold:
		return nil, h.Slurm.Hold(ctx, req.Job, slurm.AdminHold)
	case OpRelease:
		return nil, h.Slurm.Release(ctx, req.Job)
	case OpCancel:
		return nil, h.Slurm.Cancel(ctx, req.Job, "")
	case OpCancelPending:
		return nil, h.Slurm.CancelPending(ctx, req.Job)
	case OpStartShadow:
		return nil, h.Slurm.StartNow(ctx, req.Job)
	}
	return nil, refuse("unknown op %q", clip(req.Op)) // DecodeRequest already refused it
}

// check passes if a record of the daemon's names the job and Slurm shows
// the job as that record's.
func (h *Handler) check(ctx context.Context, req Request) error {
	rs, err := h.Spool.OpenRecords()
	if err != nil {
		return fmt.Errorf("reading the daemon's records: %w", err)
	}
	recs, problems := rs.FindJob(req.Job, h.DaemonUID)
	rs.Close()
	for _, p := range problems {
		h.Log.Warn("record skipped", "err", p)
	}
	if len(recs) == 0 {
		return refuse("job %s is not a job glean recorded", req.Job)
	}
	jobs, err := h.queue(ctx)
	if err != nil {
		return fmt.Errorf("squeue: %w", err)
	}
	var first error
	for _, r := range recs {
		err := h.matches(req, r, jobs)
		if err == nil {
			return nil
		}
		if first == nil {
			first = err
		}
	}
	return first
}

// matches checks one record against what Slurm shows.
func (h *Handler) matches(req Request, r *spool.Record, jobs []qjob) error {
	name := r.DirName()
	if (req.Op == OpCancelPending || req.Op == OpStartShadow) && req.Job != r.Shadow {
		return refuse("job %s: %s is for shadow arrays only", req.Job, req.Op)
	}
	if req.Op == OpHold && r.State != spool.StateAccepting && !r.Active() {
		return refuse("job %s: its record %s is %s; glean holds only jobs it is taking in or running", req.Job, name, r.State)
	}
	if req.Op == OpStartShadow && r.State != spool.StateQueued && r.State != spool.StateRunning {
		// Not waiting either: the shadow array does not carry the job's
		// --begin, gleand waits for it (and for --dependency) itself.
		return refuse("job %s: its record %s is %s; glean starts only the shadow arrays of queued or running jobs", req.Job, name, r.State)
	}
	if r.Entry == nil || r.Entry.Nonce == "" || r.Entry.ID != r.ID {
		return refuse("job %s: its record %s holds no entry nonce", req.Job, name)
	}
	if r.UID == 0 || r.User == "root" {
		return refuse("job %s: glean does not act on root's jobs", req.Job)
	}
	users := h.Users
	if users == nil {
		users = lookupUser
	}
	if u, err := users(r.UID); err != nil || u != r.User {
		return refuse("job %s: its record %s names user %s, which is not uid %d here", req.Job, name, r.User, r.UID)
	}
	anchor := req.Job == r.Anchor
	want := spool.ShadowComment(r.Entry.ID, r.Entry.Nonce)
	if anchor {
		want = spool.Comment(r.Entry.ID, r.Entry.Nonce)
	}
	seen := 0
	for _, j := range jobs {
		if j.ID != req.Job && j.ArrayID != req.Job {
			continue
		}
		seen++
		switch {
		case j.User != r.User:
			return refuse("job %s belongs to %s, not to %s whose job glean recorded", req.Job, j.User, r.User)
		case j.Comment != want:
			return refuse("job %s does not carry the nonce of glean's record %s in its comment", req.Job, name)
		case anchor && j.Partition != h.AnchorPartition:
			return refuse("job %s is in partition %s, not the anchor partition %s", req.Job, j.Partition, h.AnchorPartition)
		}
	}
	if seen == 0 {
		return refuse("job %s is not known to Slurm", req.Job)
	}
	return nil
}

func lookupUser(uid int) (string, error) {
	u, err := user.LookupId(strconv.Itoa(uid))
	if err != nil {
		return "", err
	}
	return u.Username, nil
}

// qjob is a job as the checks need it.
type qjob struct {
	ID, ArrayID, State, Partition, User, Comment string
}

// queueFormat: the only user-controlled field (the comment) comes last and
// every record ends with a seal new for each call, so that a comment
// holding separators cannot forge a record.
const queueFormat = "%A\x1f%F\x1f%T\x1f%P\x1f%u\x1f%k"

const (
	fieldSep = "\x1f"
	sealMark = "\x1d"
	recEnd   = "\x1e\n"
	nFields  = 6
)

// queueArgv lists every job Slurm knows, all states.
func queueArgv(seal string) []string {
	return []string{"squeue", "-h", "-a", "-t", "all", "-o", queueFormat + sealMark + seal + "\x1e"}
}

func (h *Handler) queue(ctx context.Context) ([]qjob, error) {
	seal := slurm.NewSeal()
	out, err := h.Slurm.R.Run(ctx, queueArgv(seal))
	if err != nil {
		return nil, err
	}
	return parseQueue(bytes.NewReader(out), seal)
}

// parseQueue parses queueArgv's output. Any record that does not parse
// fails the whole read: the helper acts only when it sees everything.
func parseQueue(r io.Reader, seal string) ([]qjob, error) {
	if seal == "" {
		return nil, fmt.Errorf("empty seal")
	}
	data, err := io.ReadAll(io.LimitReader(r, 1<<30))
	if err != nil {
		return nil, err
	}
	recs := strings.Split(string(data), sealMark+seal+recEnd)
	if last := recs[len(recs)-1]; strings.TrimSpace(last) != "" {
		return nil, fmt.Errorf("truncated record %q", clip(last))
	}
	recs = recs[:len(recs)-1]
	jobs := make([]qjob, 0, len(recs))
	for i, rec := range recs {
		f := strings.SplitN(rec, fieldSep, nFields)
		if len(f) != nFields {
			return nil, fmt.Errorf("record %d: %d fields, want %d", i+1, len(f), nFields)
		}
		j := qjob{ID: f[0], ArrayID: f[1], State: f[2], Partition: f[3], User: f[4], Comment: f[5]}
		if !slurm.ValidJobID(j.ID) || strings.Contains(j.ID, "_") {
			return nil, fmt.Errorf("record %d: bad job id %q", i+1, clip(j.ID))
		}
		if j.ArrayID == "N/A" || j.ArrayID == "0" || j.ArrayID == "" {
			j.ArrayID = j.ID
		}
		if !slurm.ValidJobID(j.ArrayID) || strings.Contains(j.ArrayID, "_") {
			return nil, fmt.Errorf("record %d: bad array job id %q", i+1, clip(j.ArrayID))
		}
		if j.User == "" {
			return nil, fmt.Errorf("record %d: no user", i+1)
		}
		if j.Comment == "(null)" {
			j.Comment = ""
		}
		jobs = append(jobs, j)
	}
	return jobs, nil
}
