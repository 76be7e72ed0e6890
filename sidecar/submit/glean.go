package submit

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Modes of an elastic job (ARCHITECTURE.md, "Fairness modes").
const (
	ModeFair      = "fair"
	ModeScavenger = "scavenger"
	ModeThesis    = "thesis"
)

// MaxGleanValue is the longest --glean value accepted (as the SPANK plugin).
const MaxGleanValue = 2048

// GleanKeys are the keys of --glean, in the order the docs list them.
var GleanKeys = []string{"mode", "dir", "batch", "checkpoint", "pty", "deadline", "budget", "profile"}

// Spec is a parsed --glean value. The zero value is "--glean" with no keys.
// Only the form is checked here; Check does what needs the config, the
// clock or the filesystem.
type Spec struct {
	Mode       string  `json:"mode,omitempty"`       // fair | scavenger | thesis; "" = the site default
	Dir        string  `json:"dir,omitempty"`        // data folder: one item per entry
	Batch      int     `json:"batch,omitempty"`      // items per task with Dir (0 = 1)
	Checkpoint string  `json:"checkpoint,omitempty"` // yes | no | "" (default: no)
	PTY        string  `json:"pty,omitempty"`        // yes | no | ""
	Deadline   string  `json:"deadline,omitempty"`   // as written; Check resolves it
	Budget     float64 `json:"budget,omitempty"`     // node-hours; 0 = none
	Profile    string  `json:"profile,omitempty"`
}

// GleanError is a bad --glean value; the message names the key.
type GleanError struct{ Msg string }

func (e *GleanError) Error() string { return e.Msg }

func gleanErr(format string, a ...any) error { return &GleanError{fmt.Sprintf(format, a...)} }

// ParseGlean parses "k=v,k=v". An empty value is plain --glean.
func ParseGlean(v string) (Spec, error) {
	var s Spec
	if len(v) > MaxGleanValue {
		return s, gleanErr("value longer than %d bytes", MaxGleanValue)
	}
	if v == "" {
		return s, nil
	}
	seen := map[string]bool{}
	for item := range strings.SplitSeq(v, ",") {
		k, val, ok := strings.Cut(item, "=")
		if !ok {
			return s, gleanErr("%s is not key=value; the form is --glean[=key=value,...] with keys %s", show(item), strings.Join(GleanKeys, ", "))
		}
		if seen[k] {
			return s, gleanErr("key %s given twice", show(k))
		}
		seen[k] = true
		if val == "" {
			return s, gleanErr("key %s has an empty value", k)
		}
		var err error
		switch k {
		case "mode":
			switch val {
			case ModeFair, ModeScavenger, ModeThesis:
				s.Mode = val
			default:
				err = gleanErr("bad value %s for key mode: allowed fair, scavenger (thesis where the admin allows it)", show(val))
			}
		case "dir":
			if len(val) > 1024 || strings.ContainsFunc(val, func(r rune) bool { return r <= ' ' || r >= 0x7f }) {
				err = gleanErr("bad value %s for key dir: a path of printable ASCII without spaces, ',' or '=' (at most 1024 bytes)", show(val))
			}
			s.Dir = val
		case "batch":
			n, e := strconv.Atoi(val)
			if e != nil || n < 1 || n > 1_000_000_000 || strings.Trim(val, "0123456789") != "" {
				err = gleanErr("bad value %s for key batch: a positive whole number of items per task", show(val))
			}
			s.Batch = n
		case "checkpoint", "pty":
			if val != "yes" && val != "no" {
				err = gleanErr("bad value %s for key %s: allowed yes, no", show(val), k)
			}
			if k == "pty" {
				s.PTY = val
			} else {
				s.Checkpoint = val
			}
		case "deadline":
			if len(val) > 40 || strings.ContainsFunc(val, func(r rune) bool {
				return !(r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || strings.ContainsRune(":+-.", r))
			}) {
				err = gleanErr("bad value %s for key deadline: a Slurm time (now+2hours, 2026-12-01T18:00, 1-12:00:00) or ISO 8601 date", show(val))
			}
			s.Deadline = val
		case "budget":
			f, e := strconv.ParseFloat(val, 64)
			if e != nil || f <= 0 || f > 1e9 || strings.Trim(val, "0123456789.") != "" {
				err = gleanErr("bad value %s for key budget: a positive number of node-hours", show(val))
			}
			s.Budget = f
		case "profile":
			if len(val) > 64 || strings.Trim(val, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") != "" {
				err = gleanErr("bad value %s for key profile: a name of letters, digits, '.', '_' or '-' (at most 64)", show(val))
			}
			s.Profile = val
		default:
			err = gleanErr("unknown key %s; allowed keys: %s", show(k), strings.Join(GleanKeys, ", "))
		}
		if err != nil {
			return Spec{}, err
		}
	}
	if s.Batch != 0 && s.Dir == "" {
		return Spec{}, gleanErr("key batch needs dir= (the data folder whose items are batched)")
	}
	return s, nil
}

// show quotes a user's word for a message, cut short and without control
// characters.
func show(s string) string {
	if len(s) > 40 {
		s = s[:40] + "..."
	}
	return strconv.Quote(s)
}

// ResolveDeadline turns a deadline into an absolute time: an ISO 8601 or
// Slurm date ("2026-12-01", "2026-12-01T18:00[:05][Z|+01:00]"), "now+N"
// with units seconds|minutes|hours|days|weeks (Slurm's; minutes if none),
// or a Slurm duration from now ("90", "4:00:00", "1-12:00:00").
func ResolveDeadline(v string, now time.Time) (time.Time, error) {
	bad := func() (time.Time, error) {
		return time.Time{}, gleanErr("bad value %s for key deadline: write e.g. now+2hours, 2026-12-01T18:00 or 1-12:00:00", show(v))
	}
	if rest, ok := strings.CutPrefix(strings.ToLower(v), "now+"); ok {
		i := 0
		for i < len(rest) && rest[i] >= '0' && rest[i] <= '9' {
			i++
		}
		n, err := strconv.Atoi(rest[:i])
		if err != nil || n <= 0 || n > 100_000_000 {
			return bad()
		}
		unit := time.Minute
		switch rest[i:] {
		case "", "minutes", "minute", "min", "m":
		case "seconds", "second", "sec", "s":
			unit = time.Second
		case "hours", "hour", "h":
			unit = time.Hour
		case "days", "day", "d":
			unit = 24 * time.Hour
		case "weeks", "week", "w":
			unit = 7 * 24 * time.Hour
		default:
			return bad()
		}
		return now.Add(time.Duration(n) * unit), nil
	}
	for _, layout := range []string{time.RFC3339, "2006-01-02T15:04:05", "2006-01-02T15:04", "2006-01-02T15:04Z07:00", "2006-01-02"} {
		if t, err := time.ParseInLocation(layout, v, now.Location()); err == nil {
			return t, nil
		}
	}
	if d, err := parseDuration(v); err == nil && d > 0 {
		return now.Add(d), nil
	}
	return bad()
}
