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
		s.kill()
		select {} // SIGKILL is not instant: nothing more may run
	}
}

// Points names every failpoint gleand has, for the tests that walk them.
var Points = []string{
	"intake/accepting-recorded", // record says accepting; the holds not yet asked
	"intake/held",               // anchor and shadow held; the record not yet queued
	"shadow/released",           // shadow array released; not yet recorded
	"commit/journaled",          // an attempt is in the journal; its result file not yet removed
	"lost/journaled",            // a lost lease is in the journal; the lease not yet removed
	"pilot/intent-recorded",     // the pilot's token is recorded; sbatch not yet run
	"pilot/submitted",           // sbatch returned the id; not yet recorded
	"cancel/recorded",           // a cancel is recorded; scancel not yet run
	"end/recorded",              // the job's end is recorded; the anchor not yet released
	"end/released",              // the anchor is released; not yet recorded
}
