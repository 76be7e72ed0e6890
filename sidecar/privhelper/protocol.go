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
	MaxRequestBytes  = 1024
	MaxResponseBytes = 4096
)

// Operations.
const (
	OpHold          = "hold"           // admin hold: only an operator releases it
	OpRelease       = "release"        // release any hold
	OpCancel        = "cancel"         // scancel the whole job
	OpCancelPending = "cancel-pending" // scancel the pending elements of a shadow array
	OpSubmitPilot   = "submit-pilot"   // a pilot for a recorded job, as its owner, with fixed parameters
	OpCancelPilot   = "cancel-pilot"   // scancel a pilot the record names
)

var ops = map[string]bool{OpHold: true, OpRelease: true, OpCancel: true, OpCancelPending: true,
	OpSubmitPilot: true, OpCancelPilot: true}

// Request is what gleand asks. Every op but submit-pilot names Job;
// submit-pilot and cancel-pilot name the Record (jobs/<uid>.<id>) whose
// pilot it is; submit-pilot takes only a time limit and optionally the
// node it was sized for: every other parameter is the site's.
type Request struct {
	Op      string `json:"op"`
	Job     string `json:"job,omitempty"`     // a whole job id: an anchor, a shadow array or a pilot
	Record  string `json:"record,omitempty"`  // submit-pilot, cancel-pilot
	Minutes int    `json:"minutes,omitempty"` // submit-pilot: the time limit; 0 = UNLIMITED
	Node    string `json:"node,omitempty"`    // submit-pilot: --nodelist, or ""
	// Token (submit-pilot): 32 hex digits the daemon recorded before
	// asking; the pilot carries it in its comment, so that a daemon that
	// died before recording the id finds its pilot again.
	Token string `json:"token,omitempty"`
}

// Response is the helper's answer. Error is one line.
type Response struct {
	OK      bool   `json:"ok"`
	Refused bool   `json:"refused,omitempty"` // the checks refused; nothing was done
	Error   string `json:"error,omitempty"`
	Job     string `json:"job,omitempty"` // submit-pilot: the new pilot's id
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
		return Request{}, refuse("unknown op %q (hold, release, cancel, cancel-pending, submit-pilot or cancel-pilot)", clip(req.Op))
	}
	switch req.Op {
	case OpSubmitPilot:
		if req.Job != "" {
			return Request{}, refuse("submit-pilot takes no job id")
		}
	default:
		if !slurm.ValidJobID(req.Job) || strings.Contains(req.Job, "_") {
			return Request{}, refuse("bad job id %q: want a whole job id", clip(req.Job))
		}
	}
	switch req.Op {
	case OpSubmitPilot, OpCancelPilot:
		if !validRecordName(req.Record) {
			return Request{}, refuse("bad record name %q: want <uid>.<entry id>", clip(req.Record))
		}
	default:
		if req.Record != "" {
			return Request{}, refuse("%s takes no record", req.Op)
		}
	}
	if req.Op == OpSubmitPilot {
		if req.Minutes < 0 || req.Minutes > maxPilotMinutes {
			return Request{}, refuse("bad time limit %d minutes (0 = UNLIMITED, at most %d)", req.Minutes, maxPilotMinutes)
		}
		if req.Node != "" && !validNodeName(req.Node) {
			return Request{}, refuse("bad node name %q", clip(req.Node))
		}
		if !isHex32(req.Token) {
			return Request{}, refuse("bad token %q: want 32 hex digits", clip(req.Token))
		}
	} else if req.Minutes != 0 || req.Node != "" || req.Token != "" {
		return Request{}, refuse("%s takes no time limit or node", req.Op)
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
