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
)

// Size caps of one request and one response line, newline included.
const (
	MaxRequestBytes  = 1024
	MaxResponseBytes = 4096
)

// Operations. The execution-path issue adds "submit" (a pilot or shadow
// element for uid U with fixed parameters): its fields join Request, its
// check joins Handler.check, and it joins this set.
const (
	OpHold    = "hold"    // admin hold: only an operator releases it
	OpRelease = "release" // release any hold
	OpCancel  = "cancel"  // scancel the whole job
)

var ops = map[string]bool{OpHold: true, OpRelease: true, OpCancel: true}

// Request is what gleand asks.
type Request struct {
	Op  string `json:"op"`
	Job string `json:"job"` // a whole job id: an anchor or a shadow array
}

// Response is the helper's answer. Error is one line.
type Response struct {
	OK      bool   `json:"ok"`
	Refused bool   `json:"refused,omitempty"` // the checks refused; nothing was done
	Error   string `json:"error,omitempty"`
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
		return Request{}, refuse("unknown op %q (hold, release or cancel)", clip(req.Op))
	}
	if !slurm.ValidJobID(req.Job) || strings.Contains(req.Job, "_") {
		return Request{}, refuse("bad job id %q: want a whole job id", clip(req.Job))
	}
	return req, nil
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
