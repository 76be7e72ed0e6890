// Package privhelper is glean's privileged helper (ARCHITECTURE.md,
// "Parts"): the only code that runs as root. gleand, as the unprivileged
// glean user, asks it over a unix socket to hold, release or cancel a
// Slurm job; the helper acts only on a job the daemon recorded in its
// spool records, and only after squeue confirms the job is that record's:
// the anchor in the anchor partition carrying the recorded nonce, or the
// recorded shadow array, owned by the recorded user. It takes no
// free-form commands and never opens a path a request names.
//
// The protocol is one request per connection: a JSON object on one line
// (at most MaxRequestBytes), answered by one JSON line. Unknown fields are
// refused.
package privhelper

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/glean-hpc/glean/sidecar/slurm"
	"github.com/glean-hpc/glean/sidecar/spool"
)

// Size caps of one request and one response line, newline included.
const (
	MaxRequestBytes  = 4096
	MaxResponseBytes = 4096
)

// MaxPilotsPerRequest bounds the pilots of one submit-pilots request
// (its tokens fit in MaxRequestBytes, its ids in MaxResponseBytes).
const MaxPilotsPerRequest = 64

// Operations.
const (
	OpHold          = "hold"           // admin hold: only an operator releases it
	OpRelease       = "release"        // release any hold
	OpCancel        = "cancel"         // scancel the whole job
	OpCancelPending = "cancel-pending" // scancel the pending elements of a shadow array
	OpStartShadow   = "start-shadow"   // let a shadow array start: its begin time, set by the wrapper, moves to now
	// Pilots: each names the Record (jobs/<uid>.<id>) whose pilot it is.
	OpSubmitPilots       = "submit-pilots"        // the pilots the record holds as intents (by token), as its owner, with fixed parameters
	OpCancelPilot        = "cancel-pilot"         // scancel a pilot the record names: TERM to all, KILL after KillWait
	OpSignalPilot        = "signal-pilot"         // give way: TERM to the pilot's batch shell (its agent) alone
	OpCancelPendingPilot = "cancel-pending-pilot" // scancel a pilot the record names only if it is still pending
)

var ops = map[string]bool{OpHold: true, OpRelease: true, OpCancel: true, OpCancelPending: true, OpStartShadow: true,
	OpSubmitPilots: true, OpCancelPilot: true, OpSignalPilot: true, OpCancelPendingPilot: true}

// pilotOp: the ops on one pilot of a record.
func pilotOp(op string) bool {
	return op == OpCancelPilot || op == OpSignalPilot || op == OpCancelPendingPilot
}

// Request is what gleand asks. Every op but submit-pilots names Job; the
// pilot ops name the Record (jobs/<uid>.<id>) whose pilot it is.
// submit-pilots names only the record and the tokens of the pilots the
// record holds as intents: their time limits and nodes are the record's,
// every other parameter is the site's.
type Request struct {
	Op     string `json:"op"`
	Job    string `json:"job,omitempty"`    // a whole job id: an anchor, a shadow array or a pilot
	Record string `json:"record,omitempty"` // the pilot ops
	// Tokens (submit-pilots): 32 hex digits each, recorded by the daemon
	// (with the pilot's node and time limit) before it asks; a pilot
	// carries its token in its comment, so that a daemon that died before
	// recording the id finds its pilot again.
	Tokens []string `json:"tokens,omitempty"`
}

// Response is the helper's answer. Error is one line.
type Response struct {
	OK      bool   `json:"ok"`
	Refused bool   `json:"refused,omitempty"` // the checks refused; nothing was done
	Error   string `json:"error,omitempty"`
	// Jobs (submit-pilots): the new pilots' ids in the order of the
	// tokens, "" for one whose sbatch failed (Error says why).
	Jobs []string `json:"jobs,omitempty"`
}

// Refusal is a request the helper will not act on, with the reason the
// client is told.
type Refusal struct{ Reason string }

func (r *Refusal) Error() string { return r.Reason }

func refuse(format string, a ...any) error { return &Refusal{Reason: fmt.Sprintf(format, a...)} }

// DecodeRequest parses and validates one request line (without its
// newline): one JSON object, known fields only, an op from the fixed set
// and a whole job id. Every problem is a *Refusal.
func DecodeRequest(line []byte) (Request, error) {
	var req Request
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return Request{}, refuse("malformed request: %s", oneLine(err.Error()))
	}
	if dec.More() {
		return Request{}, refuse("malformed request: data after the JSON object")
	}
	if !ops[req.Op] {
		return Request{}, refuse("unknown op %q (hold, release, cancel, cancel-pending, submit-pilots, cancel-pilot, signal-pilot or cancel-pending-pilot)", clip(req.Op))
	}
	switch req.Op {
	case OpSubmitPilots:
		if req.Job != "" {
			return Request{}, refuse("submit-pilots takes no job id")
		}
	default:
		if !slurm.ValidJobID(req.Job) || strings.Contains(req.Job, "_") {
			return Request{}, refuse("bad job id %q: want a whole job id", clip(req.Job))
		}
	}
	switch {
	case req.Op == OpSubmitPilots || pilotOp(req.Op):
		if !validRecordName(req.Record) {
			return Request{}, refuse("bad record name %q: want <uid>.<entry id>", clip(req.Record))
		}
	case req.Record != "":
		return Request{}, refuse("%s takes no record", req.Op)
	}
	if req.Op != OpSubmitPilots {
		if req.Tokens != nil {
			return Request{}, refuse("%s takes no tokens", req.Op)
		}
		return req, nil
	}
	if len(req.Tokens) == 0 || len(req.Tokens) > MaxPilotsPerRequest {
		return Request{}, refuse("submit-pilots takes 1 to %d tokens, not %d", MaxPilotsPerRequest, len(req.Tokens))
	}
	seen := make(map[string]bool, len(req.Tokens))
	for _, t := range req.Tokens {
		if !isHex32(t) {
			return Request{}, refuse("bad token %q: want 32 hex digits", clip(t))
		}
		if seen[t] {
			return Request{}, refuse("token %s given twice", t)
		}
		seen[t] = true
	}
	return req, nil
}

// maxPilotMinutes bounds a pilot's time limit (a year).
const maxPilotMinutes = 366 * 24 * 60

// validRecordName: <uid>.<entry id>, nothing else (it becomes a path
// component under jobs/ and an argument of the pilot script).
func validRecordName(s string) bool {
	uid, id, ok := strings.Cut(s, ".")
	if !ok || uid == "" || len(uid) > 10 || !spool.ValidID(id) {
		return false
	}
	for _, c := range uid {
		if c < '0' || c > '9' {
			return false
		}
	}
	return uid == "0" || uid[0] != '0'
}

func isHex32(s string) bool {
	if len(s) != 32 {
		return false
	}
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// PilotComment is a pilot's --comment: its token.
func PilotComment(token string) string { return "glean-pilot:" + token }

// validNodeName: a Slurm node name (letters, digits, '-', '_', '.'),
// never a hostlist expression or an option.
func validNodeName(s string) bool {
	if s == "" || len(s) > 64 || s[0] == '-' {
		return false
	}
	for _, c := range s {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-', c == '_', c == '.':
		default:
			return false
		}
	}
	return true
}

// oneLine makes s one line of bounded length.
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > MaxResponseBytes/2 {
		s = s[:MaxResponseBytes/2] + "..."
	}
	return s
}

func clip(s string) string {
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}

// IsRefusal reports whether err is the helper refusing (as opposed to
// failing to act or being unreachable).
func IsRefusal(err error) bool {
	var r *Refusal
	return errors.As(err, &r)
}
