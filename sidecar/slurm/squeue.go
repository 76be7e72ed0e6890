package slurm

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/glean-hpc/glean/sidecar/cluster"
)

// Output of squeue and sinfo: fields end with \x1f, records with \x1e
// plus the newline Slurm adds, because job names and comments may hold
// newlines (and \x1f) of their own.
const (
	fieldSep  = "\x1f"
	recordEnd = "\x1e\n"
)

// squeueFormat asks for one record per job (pending arrays as one record).
// Name and comment, the only fields a user controls, come last so that
// stray separators in them land in the comment. See squeueFields.
const squeueFormat = "%A\x1f%F\x1f%K\x1f%T\x1f%r\x1f%P\x1f%D\x1f%N\x1f%Y\x1f%l\x1f%V\x1f%S\x1f%e\x1f%Q\x1f%u\x1f%j\x1f%k"

// sealMark starts the seal that ends every squeue record. A user can put
// "\x1e\n" in a job name to forge a record after it; a seal that is new
// for every call cannot be guessed, so records are split at the seal.
const sealMark = "\x1d"

// NewSeal returns a fresh random seal for one squeue call.
func NewSeal() string {
	var b [12]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("crypto/rand: " + err.Error()) // never fails on Linux
	}
	return hex.EncodeToString(b[:])
}

func sealEnd(seal string) string { return sealMark + seal + recordEnd }

// squeueFields names the fields of squeueFormat, in order, for errors.
var squeueFields = [...]string{"JobID", "ArrayJobID", "ArrayTaskID", "State", "Reason", "Partition", "NumNodes",
	"NodeList", "SchedNodes", "TimeLimit", "SubmitTime", "StartTime", "EndTime", "Priority", "User", "Name", "Comment"}

// SqueueArgv is the squeue command of one observation: all partitions,
// running and pending jobs. A plain squeue already reports the expected
// start (%S) and planned nodes (%Y) of pending jobs, so --start is not
// needed. Run it with TimeFormatEnv and BitstrLenEnv.
// seal comes from NewSeal (letters and digits only).
func SqueueArgv(seal string) []string {
	return []string{"squeue", "-h", "-a", "-o", squeueFormat + sealMark + seal + "\x1e"}
}

// SqueueAllArgv is SqueueArgv for jobs in every state, ended ones
// included (Slurm keeps them for MinJobAge).
func SqueueAllArgv(seal string) []string {
	return []string{"squeue", "-h", "-a", "-t", "all", "-o", squeueFormat + sealMark + seal + "\x1e"}
}

// ParseSqueue parses SqueueArgv's output. A record with a bad field is
// dropped with an error naming the record and the field; the others are
// returned in squeue's order.
//
// seal is the one SqueueArgv was called with. A repeated job id rejects
// the later record.
func ParseSqueue(r io.Reader, seal string) ([]cluster.Job, []error) {
	if seal == "" {
		return nil, []error{errors.New("squeue: empty seal")}
	}
	recs, errs := splitRecords(r, "squeue", sealEnd(seal))
	jobs := make([]cluster.Job, 0, len(recs))
	seen := make(map[string]int, len(recs))
	for i, rec := range recs {
		j, err := parseJob(rec)
		if err == nil {
			if first, dup := seen[j.ID]; dup {
				err = fmt.Errorf("duplicate job id %s (also record %d)", j.ID, first)
			}
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("squeue record %d: %w", i+1, err))
			continue
		}
		seen[j.ID] = i + 1
		jobs = append(jobs, j)
	}
	return jobs, errs
}

// splitRecords reads everything and splits it at recordEnd. Text after the
// last recordEnd means the output was cut short: that is an error, since
// the lost record may be a job that needs the nodes.
func splitRecords(r io.Reader, what, end string) ([]string, []error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, []error{fmt.Errorf("%s: read: %w", what, err)}
	}
	recs := strings.Split(string(data), end)
	last := recs[len(recs)-1]
	recs = recs[:len(recs)-1]
	if strings.TrimSpace(last) != "" {
		return recs, []error{fmt.Errorf("%s record %d: truncated: %s", what, len(recs)+1, quote(last))}
	}
	return recs, nil
}

func parseJob(rec string) (cluster.Job, error) {
	var f [len(squeueFields)]string
	if n := splitInto(f[:], rec, fieldSep); n != len(f) {
		return cluster.Job{}, fmt.Errorf("%d fields, want %d", n, len(f))
	}
	bad := func(i int, err error) (cluster.Job, error) {
		return cluster.Job{}, fmt.Errorf("field %s: %w", squeueFields[i], err)
	}
	j := cluster.Job{ID: f[0], ArrayJobID: f[1], RawState: f[3], Reason: f[4], Partition: f[5], User: f[14], Name: f[15], Comment: f[16]}
	var err error
	if !validID(f[0]) {
		return bad(0, fmt.Errorf("bad job id %s", quote(f[0])))
	}
	switch {
	case f[1] == "N/A" || f[1] == "0": // not an array
		j.ArrayJobID = j.ID
	case !validID(f[1]):
		return bad(1, fmt.Errorf("bad job id %s", quote(f[1])))
	}
	if f[2] != "N/A" {
		if !validArrayTasks(f[2]) {
			return bad(2, fmt.Errorf("bad array index %s", quote(f[2])))
		}
		j.ArrayTasks = f[2]
	}
	if !isUpperName(f[3]) {
		return bad(3, fmt.Errorf("bad state %s", quote(f[3])))
	}
	j.State = jobState(f[3])
	if strings.TrimSpace(f[5]) == "" {
		return bad(5, errors.New("empty"))
	}
	n, ok := parseDigits(f[6], 9)
	if !ok {
		return bad(6, fmt.Errorf("bad node count %s", quote(f[6])))
	}
	j.NumNodes = int(n)
	if j.Nodes, err = nodeList(f[7]); err != nil {
		return bad(7, err)
	}
	if j.SchedNodes, err = nodeList(f[8]); err != nil {
		return bad(8, err)
	}
	switch f[9] {
	case "NOT_SET", "N/A", "INVALID", "Partition_Limit": // no limit of its own: 0
	default:
		if j.TimeLimit, err = ParseTimeLimit(f[9]); err != nil {
			return bad(9, err)
		}
	}
	for i, t := range []*time.Time{&j.Submit, &j.Start, &j.End} {
		if *t, err = epoch(f[10+i]); err != nil {
			return bad(10+i, err)
		}
	}
	if j.Priority, ok = parseDigits(f[13], 18); !ok {
		return bad(13, fmt.Errorf("bad priority %s", quote(f[13])))
	}
	if strings.TrimSpace(f[14]) == "" {
		return bad(14, errors.New("empty"))
	}
	if j.Comment == "(null)" {
		j.Comment = ""
	}
	return j, nil
}

// validArrayTasks accepts what squeue prints for %K: an index, or a
// pending array's indices, ranges and steps, with a throttle ("%2"), and
// also an expression Slurm cut short at SLURM_BITSTR_LEN ("2-3,5,...,73,7...",
// the throttle after the cut). Such a job is kept, with its indices
// unknown past those shown: readers parse the expression with
// cluster.ParseArrayIndices, which tells a cut one from a whole one.
func validArrayTasks(s string) bool {
	body, throttle, hasThrottle := strings.Cut(s, "%")
	body, cut := strings.CutSuffix(body, cluster.ArrayCut)
	return (body != "" || cut) && strings.Trim(body, "0123456789,-:") == "" &&
		(!hasThrottle || throttle != "" && strings.Trim(throttle, "0123456789") == "")
}

// splitInto is strings.SplitN into a caller's array, without allocating:
// the last element takes the rest. It returns the number of fields.
func splitInto(dst []string, s, sep string) int {
	n := 0
	for n < len(dst)-1 {
		i := strings.Index(s, sep)
		if i < 0 {
			break
		}
		dst[n], s = s[:i], s[i+len(sep):]
		n++
	}
	dst[n] = s
	return n + 1
}

func jobState(s string) cluster.JobState {
	switch s {
	case "PENDING":
		return cluster.JobPending
	case "RUNNING":
		return cluster.JobRunning
	case "COMPLETING":
		return cluster.JobCompleting
	case "SUSPENDED":
		return cluster.JobSuspended
	case "CONFIGURING":
		return cluster.JobConfiguring
	}
	return cluster.JobOther // PREEMPTED, REQUEUED, RESIZING, STOPPED, ...
}

// JobEnded reports whether a job state as squeue prints it (%T) is final.
// Slurm prints a state flag in place of the base state
// (job_state_string, 22.05), so some names stand for pending or running
// jobs: SPECIAL_EXIT is a job that ended with a RequeueExitHold code (or
// `scontrol requeuehold State=SpecialExit`) and was requeued, pending and
// held until its owner releases it (slurm.conf(5), scontrol(1)), as are
// REQUEUE_HOLD and RESV_DEL_HOLD; REQUEUED and REQUEUE_FED are being
// requeued. REVOKED is a federation sibling removed because another
// cluster started the job (squeue(1)): final on this cluster. A name
// Slurm may add later counts as final.
func JobEnded(state string) bool {
	switch state {
	case "PENDING", "RUNNING", "SUSPENDED", "COMPLETING", "CONFIGURING", "REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED",
		"SPECIAL_EXIT", "RESIZING", "SIGNALING", "STAGE_OUT", "STOPPED", "RESV_DEL_HOLD":
		return false
	}
	return true
}

// JobStarted reports whether a job state as squeue prints it (%T) is one
// of a job that started and has not ended (or is between its start and
// its end): no longer pending, and Slurm refuses to hold it.
func JobStarted(state string) bool {
	switch state {
	case "RUNNING", "SUSPENDED", "COMPLETING", "CONFIGURING", "RESIZING", "SIGNALING", "STAGE_OUT", "STOPPED":
		return true
	}
	return false
}

// validID accepts a positive decimal job id.
func validID(s string) bool {
	n, ok := parseDigits(s, 18)
	return ok && n > 0
}

// nodeList expands a job's node list; "" (pending) and "(null)" are none.
func nodeList(s string) ([]string, error) {
	if s == "(null)" || s == "" {
		return nil, nil
	}
	return ExpandHostlist(s)
}

// epoch parses a SLURM_TIME_FORMAT=%s time; N/A, NONE (end of an unlimited
// job), Unknown and 0 are the zero time.
func epoch(s string) (time.Time, error) {
	switch s {
	case "N/A", "NONE", "Unknown":
		return time.Time{}, nil
	}
	n, ok := parseDigits(s, 12)
	if !ok {
		return time.Time{}, fmt.Errorf("bad time %s", quote(s))
	}
	if n == 0 {
		return time.Time{}, nil
	}
	return time.Unix(n, 0), nil
}

func isUpperName(s string) bool {
	return s != "" && strings.Trim(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZ_") == ""
}
