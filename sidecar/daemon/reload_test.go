package daemon

import (
	"context"
	"errors"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// chanNotifier hands every sd_notify datagram to a channel.
type chanNotifier chan string

func (c chanNotifier) Notify(state string) error { c <- state; return nil }

// fakeReloader answers Check from a script of results and records
// Reexec calls instead of replacing the test binary.
type fakeReloader struct {
	mu      sync.Mutex
	checks  []error // one per Check, in order
	checked int
	execs   int
}

var errFakeExec = errors.New("faked exec")

func (f *fakeReloader) Check() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	err := f.checks[f.checked]
	f.checked++
	return err
}

func (f *fakeReloader) Reexec() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.execs++
	return errFakeExec
}

// SIGHUP between rounds: a config that does not load keeps the loop
// running with the old one (logged, and every later STATUS= says so); a
// valid one sends RELOADING=1 and calls the re-exec hook, whose failure
// ends the loop with an error (gleand exits; the service manager restarts).
func TestLoopReload(t *testing.T) {
	bad := errors.New("/etc/glean/glean.toml: policy.default_mode: must be fair or scavenger, not \"greedy\"")
	for _, tc := range []struct {
		name     string
		checks   []error // one SIGHUP each, sent after the previous one was handled
		wantExec bool
	}{
		{"valid config re-execs", []error{nil}, true},
		{"invalid config keeps the old one", []error{bad}, false},
		{"invalid, then fixed", []error{bad, nil}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fx := newFixture(t)
			msgs := make(chanNotifier, 1024)
			hup := make(chan os.Signal, 1)
			rl := &fakeReloader{checks: tc.checks}
			l := &Loop{Intake: fx.in, Spool: fx.s, Rescan: 20 * time.Millisecond, Log: fx.in.log,
				Notify: msgs, Reload: hup, Reloader: rl}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan error, 1)
			go func() { done <- l.Run(ctx) }()

			deadline := time.After(20 * time.Second)
			// until returns the first datagram containing want, failing on
			// the way if one containing never shows up.
			until := func(want, never string) string {
				t.Helper()
				for {
					select {
					case m := <-msgs:
						if never != "" && strings.Contains(m, never) {
							t.Fatalf("unexpected %q while waiting for %q", m, want)
						}
						if strings.Contains(m, want) {
							return m
						}
					case err := <-done:
						// It may have sent want just before ending (the
						// re-exec's RELOADING=1): look at what is queued.
						for len(msgs) > 0 {
							if m := <-msgs; strings.Contains(m, want) {
								done <- err
								return m
							}
						}
						t.Fatalf("the loop ended (%v) while waiting for %q", err, want)
					case <-deadline:
						t.Fatalf("no %q within 20 s", want)
					}
				}
			}
			until("READY=1", "")
			for _, want := range tc.checks {
				hup <- syscall.SIGHUP
				if want != nil {
					m := until("config reload refused", "RELOADING=1")
					if !strings.Contains(m, "policy.default_mode") {
						t.Errorf("the refusal's STATUS= does not say why: %q", m)
					}
					// The loop runs on, and its rounds' status keeps the note.
					until("jobs active; config reload refused", "RELOADING=1")
				}
			}
			if tc.wantExec {
				until("RELOADING=1", "")
				select {
				case err := <-done:
					if !errors.Is(err, errFakeExec) {
						t.Errorf("Run after a failed re-exec: %v, want the exec's error", err)
					}
				case <-deadline:
					t.Fatal("the loop went on after the re-exec hook failed")
				}
			} else {
				cancel()
				if err := <-done; err != nil {
					t.Errorf("Run: %v", err)
				}
			}
			rl.mu.Lock()
			defer rl.mu.Unlock()
			if want := map[bool]int{true: 1}[tc.wantExec]; rl.execs != want {
				t.Errorf("re-exec hook called %d times, want %d", rl.execs, want)
			}
			if rl.checked != len(tc.checks) {
				t.Errorf("config checked %d times, want %d", rl.checked, len(tc.checks))
			}
		})
	}
}
