package daemon

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/glean-hpc/glean/sidecar/slurm"
)

// QJob is a job as the intake needs it from squeue.
type QJob struct {
	ID         string // %A
	ArrayID    string // %F (the base id for array elements)
	ArrayTask  string // %K: an element's index, a pending array's indices (maybe cut: cluster.ParseArrayIndices); "" if not an array
	State      string // %T, e.g. PENDING, CANCELLED
	Reason     string // %r, e.g. JobHeldUser
	Partition  string // %P
	User       string // %u
	Start      time.Time
	Dependency string // %E: what is left of the dependency, "" if none
	Comment    string // %k: user-controlled, checked against the entry's nonce
}

// Queue reads every job Slurm still knows, ended ones included.
type Queue interface {
	Jobs(ctx context.Context) (map[string]QJob, error)
}

// SlurmQueue reads jobs with one sealed squeue call.
type SlurmQueue struct {
	R slurm.Runner
}

var _ Queue = (*SlurmQueue)(nil)

// queueFormat puts the only user-controlled field (the comment) last, and
// every record ends with a seal that is new for each call, so that a
// comment holding separators cannot forge a record.
const queueFormat = "%A\x1f%F\x1f%K\x1f%T\x1f%r\x1f%P\x1f%u\x1f%S\x1f%E\x1f%k"

const (
	qFieldSep = "\x1f"
	qSealMark = "\x1d"
	qRecEnd   = "\x1e\n"
	qFields   = 10
)

func newSeal() string {
	var b [12]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("crypto/rand: " + err.Error())
	}
	return hex.EncodeToString(b[:])
}

// QueueArgv is the squeue of one intake round: all jobs, all states.
func QueueArgv(seal string) []string {
	return []string{"squeue", "-h", "-a", "-t", "all", "-o", queueFormat + qSealMark + seal + "\x1e"}
}

// Jobs runs squeue and parses it. Any record that does not parse makes
// the whole read fail: the intake acts on job ids only when it sees all.
func (q *SlurmQueue) Jobs(ctx context.Context) (map[string]QJob, error) {
	seal := newSeal()
	out, err := q.R.Run(ctx, QueueArgv(seal))
	if err != nil {
		return nil, err
	}
	return ParseQueue(strings.NewReader(string(out)), seal)
}

// ParseQueue parses QueueArgv's output.
func ParseQueue(r io.Reader, seal string) (map[string]QJob, error) {
	if seal == "" {
		return nil, fmt.Errorf("squeue: empty seal")
	}
	data, err := io.ReadAll(io.LimitReader(r, 1<<30))
	if err != nil {
		return nil, err
	}
	recs := strings.Split(string(data), qSealMark+seal+qRecEnd)
	if last := recs[len(recs)-1]; strings.TrimSpace(last) != "" {
		return nil, fmt.Errorf("squeue: truncated record %q", clip(last))
	}
	recs = recs[:len(recs)-1]
	jobs := make(map[string]QJob, len(recs))
	for i, rec := range recs {
		f := strings.SplitN(rec, qFieldSep, qFields)
		if len(f) != qFields {
			return nil, fmt.Errorf("squeue record %d: %d fields, want %d", i+1, len(f), qFields)
		}
		j := QJob{ID: f[0], ArrayID: f[1], ArrayTask: f[2], State: f[3], Reason: f[4], Partition: f[5], User: f[6], Dependency: f[8], Comment: f[9]}
		if !slurm.ValidJobID(j.ID) || strings.Contains(j.ID, "_") {
			return nil, fmt.Errorf("squeue record %d: bad job id %q", i+1, clip(j.ID))
		}
		if j.ArrayID == "N/A" || j.ArrayID == "0" || j.ArrayID == "" {
			j.ArrayID = j.ID
		}
		if j.State == "" || strings.Trim(j.State, "ABCDEFGHIJKLMNOPQRSTUVWXYZ_") != "" {
			return nil, fmt.Errorf("squeue record %d: bad state %q", i+1, clip(j.State))
		}
		if j.ArrayTask == "N/A" {
			j.ArrayTask = ""
		}
		if j.Dependency == "(null)" {
			j.Dependency = ""
		}
		if j.Comment == "(null)" {
			j.Comment = ""
		}
		switch f[7] {
		case "N/A", "NONE", "Unknown", "0", "":
		default:
			var sec int64
			if _, err := fmt.Sscan(f[7], &sec); err != nil || sec < 0 {
				return nil, fmt.Errorf("squeue record %d: bad start time %q", i+1, clip(f[7]))
			}
			j.Start = time.Unix(sec, 0)
		}
		if _, dup := jobs[j.ID]; dup {
			return nil, fmt.Errorf("squeue record %d: duplicate job id %s", i+1, j.ID)
		}
		jobs[j.ID] = j
	}
	return jobs, nil
}

func clip(s string) string {
	if len(s) > 60 {
		return s[:60] + "..."
	}
	return s
}

// Ended reports whether a job state is final (slurm.JobEnded).
func Ended(state string) bool { return slurm.JobEnded(state) }
