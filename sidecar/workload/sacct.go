package workload

import (
	"fmt"
	"io"
	"math"
	"strings"
	"time"
)

// SacctFormat is the -o argument ReadSacct expects.
const SacctFormat = "JobIDRaw,Submit,Start,End,NNodes,TimelimitRaw,State,User"

// Times outside [sacctMin, sacctMax) are rejected: Slurm is younger, and the
// bound keeps every offset within MaxSpan.
var (
	sacctMin = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	sacctMax = time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC)
)

// SacctOptions tune ReadSacct.
type SacctOptions struct {
	Options
	// Since is the start of the history's period, sacct's -S. Zero: the
	// earliest Start in the history.
	Since time.Time
}

// ReadSacct reads the jobs of a real cluster as printed by
//
//	TZ=UTC sacct -P -X -n -a -S <start> -E <end> \
//	    -o JobIDRaw,Submit,Start,End,NNodes,TimelimitRaw,State,User
//
// (TZ=UTC avoids the hour lost or repeated at daylight-saving changes; times
// are read as UTC. With SLURM_TIME_FORMAT=%s, epoch seconds work too.)
// Submit, Start and End are "2024-01-02T03:04:05"; TimelimitRaw is minutes,
// UNLIMITED, or Partition_Limit (read as no limit given). Run is End-Start.
// Jobs that never started (Start Unknown or None, or cancelled while
// pending, which older Slurm prints with Start = End) or that still run (End
// Unknown) are counted in Dropped. Submit offsets count from the start of
// the history's period (opts.Since, else the earliest Start), which becomes
// Workload.Start. sacct -S also prints jobs submitted long before it that
// were still pending (held, say) in the period: their submissions are moved
// to Workload.Start and counted in Workload.Clamped, so that the simulated
// machine does not stand empty from the first of them to the period. sacct
// does not know the machine size: Workload.Nodes is the largest job, a lower
// bound the caller should replace with the real node count.
func ReadSacct(r io.Reader, name string, opts SacctOptions) (*Workload, error) {
	w := &Workload{Name: name, Format: "sacct", Start: opts.Since}
	l := newLines(r, name, opts.Options)
	var submits []time.Time
	for {
		text, ok := l.next()
		if !ok {
			break
		}
		if strings.TrimSpace(text) == "" {
			continue
		}
		j, submit, start, started, err := parseSacctLine(text)
		if err != nil {
			if err := l.bad(err); err != nil {
				return nil, err
			}
			continue
		}
		if !started {
			w.Dropped++
			continue
		}
		j.Line = l.n
		w.Jobs = append(w.Jobs, j)
		submits = append(submits, submit)
		if opts.Since.IsZero() && (len(submits) == 1 || start.Before(w.Start)) {
			w.Start = start
		}
	}
	for i := range w.Jobs {
		if submits[i].Before(w.Start) {
			submits[i] = w.Start
			w.Clamped++
		}
		w.Jobs[i].Submit = submits[i].Sub(w.Start)
		w.Nodes = max(w.Nodes, w.Jobs[i].Nodes)
	}
	return l.finish(w)
}

// parseSacctLine returns the job (Submit unset), its submit and start
// times, and whether it ran at all.
func parseSacctLine(text string) (j Job, submit, start time.Time, started bool, err error) {
	f := strings.Split(text, "|")
	if len(f) == 9 && f[8] == "" { // sacct -p ends lines with a '|'
		f = f[:8]
	}
	if len(f) != 8 {
		return j, submit, start, false, fmt.Errorf("%d '|'-separated fields, want 8 (%s)", len(f), SacctFormat)
	}
	id, err := parseInt(f[0], 1, math.MaxInt)
	if err != nil {
		return j, submit, start, false, fmt.Errorf("JobIDRaw: %w", err)
	}
	j.ID = int(id)
	submit, ok, err := parseSacctTime(f[1])
	if err != nil || !ok {
		if err == nil {
			err = fmt.Errorf("%q is not a time", f[1])
		}
		return j, submit, start, false, fmt.Errorf("Submit: %w", err)
	}
	start, hasStart, err := parseSacctTime(f[2])
	if err != nil {
		return j, submit, start, false, fmt.Errorf("Start: %w", err)
	}
	end, hasEnd, err := parseSacctTime(f[3])
	if err != nil {
		return j, submit, start, false, fmt.Errorf("End: %w", err)
	}
	state := f[6]
	if state == "" {
		return j, submit, start, false, fmt.Errorf("State is empty")
	}
	if !hasStart || !hasEnd || strings.HasPrefix(state, "PENDING") ||
		strings.HasPrefix(state, "CANCELLED") && start.Equal(end) {
		return j, submit, start, false, nil
	}
	if end.Before(start) {
		return j, submit, start, false, fmt.Errorf("End %s is before Start %s", f[3], f[2])
	}
	j.Run = end.Sub(start)
	n, err := parseInt(f[4], 1, procLimit)
	if err != nil {
		return j, submit, start, false, fmt.Errorf("NNodes: %w", err)
	}
	j.Nodes = int(n)
	switch f[5] {
	case "UNLIMITED", "INFINITE":
		j.Limit = Unlimited
	case "Partition_Limit":
		j.Limit = 0
	default:
		m, err := parseInt(f[5], 0, maxSpanSec/60)
		if err != nil {
			return j, submit, start, false, fmt.Errorf("TimelimitRaw (minutes, UNLIMITED or Partition_Limit): %w", err)
		}
		j.Limit = time.Duration(m) * time.Minute
	}
	j.User = f[7]
	return j, submit, start, true, nil
}

// parseSacctTime reads an ISO time or epoch seconds; ok is false for the
// values sacct prints when there is no time.
func parseSacctTime(s string) (t time.Time, ok bool, err error) {
	switch s {
	case "Unknown", "None", "N/A":
		return t, false, nil
	}
	if s != "" && s[0] >= '0' && s[0] <= '9' && !strings.ContainsAny(s, "-T:") {
		sec, err := parseInt(s, sacctMin.Unix(), sacctMax.Unix()-1)
		if err != nil {
			return t, false, err
		}
		return time.Unix(sec, 0).UTC(), true, nil
	}
	t, err = time.ParseInLocation("2006-01-02T15:04:05", s, time.UTC)
	if err != nil {
		return t, false, fmt.Errorf("%q is not a time like 2024-01-02T03:04:05", s)
	}
	if t.Before(sacctMin) || !t.Before(sacctMax) {
		return t, false, fmt.Errorf("%q is not between %d and %d", s, sacctMin.Year(), sacctMax.Year())
	}
	return t, true, nil
}
