// Package failpoint kills the process at a named point between two durable
// steps, so that crash tests can choose where gleand dies instead of hoping
// a random kill lands there (issue 6). It is armed only by the environment
// variable GLEAN_FAILPOINT of the process under test: "name" dies at the
// first hit of that point, "name@n" at the n-th. Unarmed, Hit costs a nil
// check.
package failpoint

import (
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// EnvVar arms a failpoint.
const EnvVar = "GLEAN_FAILPOINT"

// Set is the armed point of one process; a nil *Set never fires.
type Set struct {
	mu   sync.Mutex
	name string
	at   int // fire at this hit (1-based)
	hits int
	kill func() // SIGKILL to self; replaced in tests

	// OnFire, if set, is called just before the kill (a log line that
	// tells a crash test the point was reached).
	OnFire func(name string)
}

// FromEnv returns the point armed by GLEAN_FAILPOINT, or nil.
func FromEnv() *Set {
	return Parse(os.Getenv(EnvVar))
}

// Parse reads "name" or "name@n"; "" or a malformed value is nil.
func Parse(v string) *Set {
	if v == "" {
		return nil
	}
	name, nth, ok := strings.Cut(v, "@")
	at := 1
	if ok {
		n, err := strconv.Atoi(nth)
		if err != nil || n < 1 {
			return nil
		}
		at = n
	}
	return &Set{name: name, at: at, kill: func() { _ = syscall.Kill(os.Getpid(), syscall.SIGKILL) }}
}

// WithKill replaces how an armed point kills the process (tests of other
// packages: a kill that panics, recovered by the test). It returns s.
func (s *Set) WithKill(kill func()) *Set {
	if s != nil {
		s.kill = kill
	}
	return s
}

// Armed reports whether the next Hit(name) fires: for points that must
// do something first to look like a crash there (write half a line).
func (s *Set) Armed(name string) bool {
	if s == nil || name != s.name {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hits+1 == s.at
}

// Hit marks that the process reached point name; the armed point's n-th
// hit kills the process at once, as a power cut would.
func (s *Set) Hit(name string) {
	if s == nil || name != s.name {
		return
	}
	s.mu.Lock()
	s.hits++
	fire := s.hits == s.at
	s.mu.Unlock()
	if fire {
		if s.OnFire != nil {
			s.OnFire(name)
		}
		s.kill()
		select {} // SIGKILL is not instant: nothing more may run
	}
}

// Points names every failpoint, in the order a job meets them, for the
// tests that walk them (tests/recovery TestFailpoints). gleand's points
// are armed by GLEAN_FAILPOINT; the agent's ("agent/", "checkpoint/") by
// debug.agent_failpoint in glean.toml too, since pilots run with
// --export=NONE.
var Points = []string{
	// Intake: record, hold, copy, record again, journal.
	"intake/accepting-recorded", // record says accepting; the holds not yet asked
	"intake/held",               // the anchor held; the script not yet copied
	"intake/script-copied",      // the script copied; the items not yet (dir=) or the record not yet queued
	"intake/items-copied",       // the items copied; the record not yet queued
	"intake/queued-recorded",    // the record says queued; "accepted" not yet journaled
	// A refusal (rejection, or an anchor that ended before the intake).
	"reject/recorded",  // the record says rejected; not yet journaled
	"reject/journaled", // journaled; the entry's anchor not yet released, its shadow array not yet cancelled
	"reject/cancelled", // a job released or cancelled; the record not yet told
	// Following the anchor.
	"follow/shadow-cancelled", // the user's scancel seen, the shadow array cancelled; the record not yet
	"follow/recorded",         // the record says cancelled; not yet journaled
	"follow/queued-recorded",  // a waiting job's record says queued; not yet journaled
	"shadow/released",         // shadow array let start (its begin time moved to now); not yet recorded
	// Committing results and lost leases.
	"commit/journaled", // an attempt is in the journal; its result file not yet removed
	"lost/journaled",   // a lost lease is in the journal; the lease not yet removed
	// Pilots.
	"pilot/intent-recorded",  // the pilot's token is recorded; sbatch not yet run
	"pilot/submitted",        // sbatch returned the id; not yet recorded
	"cancel/recorded",        // a cancel is recorded; scancel not yet run
	"retire/control-written", // the control file says retire; the record not yet
	"move/marked",            // a thesis pool's pilot marked moved in its old record; the new record not yet told
	"move/copied",            // the new record holds the pilot; the old job's control file not yet
	// The job's end.
	"end/put",               // the record says done; not yet journaled
	"end/recorded",          // the end journaled; the agents not yet told to stop
	"end/stop-written",      // the control file says stop; pending shadow elements not yet cancelled
	"end/pending-cancelled", // no shadow element pending any more (cancelled, or none left); pilots not yet
	"end/pilot-cancelled",   // a pilot of the ended job cancelled; the anchor not yet released
	"end/released",          // the anchor is released; not yet recorded
	// Inside every record write and journal append.
	"atomic/written",    // a record's new content fsynced under its temporary name; not renamed
	"atomic/renamed",    // renamed into place; the directory not yet fsynced
	"journal/half-line", // half of a journal line written (a crash mid-write)
	// The agent (as the job's owner).
	"checkpoint/marker-written", // the job's checkpoint marker written to its temporary name; not renamed
	"agent/lease-created",       // a lease created empty; its content not yet written
	"agent/lease-written",       // the lease written; the task not yet started
	"agent/task-started",        // the task running; its lease not yet fsynced
	"agent/result-written",      // a result fsynced under its temporary name; not renamed
	"agent/result-renamed",      // the result in place; its directory not yet fsynced
	"agent/result-synced",       // the result durable; the lease not yet removed
}
