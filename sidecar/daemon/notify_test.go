package daemon

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/glean-hpc/glean/sidecar/policy"
	"github.com/glean-hpc/glean/sidecar/sdnotify"
	"github.com/glean-hpc/glean/sidecar/sdnotify/sdnotifytest"
)

// notifySocket binds a datagram socket as systemd's $NOTIFY_SOCKET.
func notifySocket(t *testing.T) <-chan sdnotifytest.Message {
	t.Helper()
	path := filepath.Join(t.TempDir(), "notify")
	msgs := sdnotifytest.Listen(t, path)
	t.Setenv("NOTIFY_SOCKET", path)
	return msgs
}

// The loop tells systemd, over a real $NOTIFY_SOCKET, READY=1 once its
// first round has observed (with that round's STATUS=), WATCHDOG=1 every
// Watchdog, also while it backs off from a Slurm that does not answer,
// and STOPPING=1 when it stops.
func TestLoopNotifiesSystemd(t *testing.T) {
	for _, tc := range []struct {
		name       string
		slurmDown  bool
		wantStatus string // in a STATUS= line before the pings counted
	}{
		{"slurm answers", false, "jobs active"},
		{"slurm down: backing off, still pinging", true, "Slurm not answering"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			msgs := notifySocket(t)
			fx := newFixture(t)
			if tc.slurmDown {
				fx.slurm.fail = errors.New("slurm_load_jobs error: Unable to contact slurm controller")
				fx.submit(t, 3, nil) // something to take in: the round reads Slurm
			}
			rounds := make(chan error, 1024)
			l := &Loop{Intake: fx.in, Spool: fx.s, Rescan: 30 * time.Millisecond, Log: fx.in.log,
				Notify: sdnotify.Systemd{}, Watchdog: 10 * time.Millisecond,
				OnRound: func(_ Stats, err error) { rounds <- err }}
			ctx, cancel := context.WithCancel(context.Background())
			var runErr error
			stopped := make(chan struct{})
			go func() { runErr = l.Run(ctx); close(stopped) }()
			t.Cleanup(func() { cancel(); <-stopped })

			deadline := time.After(20 * time.Second)
			next := func(what string) string {
				t.Helper()
				select {
				case m, ok := <-msgs:
					if !ok {
						t.Fatalf("notify socket closed while waiting for %s", what)
					}
					return m.Text
				case <-deadline:
					t.Fatalf("no %s on $NOTIFY_SOCKET within 20 s", what)
				}
				return ""
			}
			// READY=1, with the first round's status, after that round.
			var ready string
			for !strings.Contains(ready, "READY=1") {
				ready = next("READY=1")
			}
			// The status line is made from a finished round's figures.
			if !strings.Contains(ready, "STATUS=round at") && !strings.Contains(ready, "STATUS=Slurm not answering") {
				t.Errorf("READY=1 came without the first round's STATUS=: %q", ready)
			}
			// The wanted status, then pings.
			for m := ready; !strings.Contains(m, tc.wantStatus); m = next("STATUS= with " + tc.wantStatus) {
			}
			for pings := 0; pings < 3; {
				if m := next("WATCHDOG=1"); m == "WATCHDOG=1" {
					pings++
				}
			}
			if tc.slurmDown {
				for len(rounds) > 0 {
					if err := <-rounds; err == nil {
						t.Errorf("a round succeeded with Slurm down")
					}
				}
			}
			cancel()
			select {
			case <-stopped:
				if runErr != nil {
					t.Fatal(runErr)
				}
			case <-deadline:
				t.Fatal("the loop did not stop")
			}
			for m := ""; m != "STOPPING=1"; m = next("STOPPING=1") {
			}
		})
	}
}

// Without $NOTIFY_SOCKET (not under systemd) notifying is a no-op.
func TestNotifyWithoutSocket(t *testing.T) {
	t.Setenv("NOTIFY_SOCKET", "")
	if err := (sdnotify.Systemd{}).Notify(sdnotify.Ready); err != nil {
		t.Fatal(err)
	}
	t.Setenv("WATCHDOG_USEC", "")
	if d, err := sdnotify.WatchdogInterval(); d != 0 || err != nil {
		t.Fatalf("watchdog %v, %v without WATCHDOG_USEC", d, err)
	}
}

func TestStatusLine(t *testing.T) {
	at := time.Date(2026, 11, 24, 14, 2, 5, 0, time.UTC)
	for _, tc := range []struct {
		name    string
		took    time.Duration
		st      Stats
		xs      ExecStats
		backoff time.Duration
		want    string
	}{
		{"idle", 48 * time.Millisecond, Stats{}, ExecStats{}, 0, "STATUS=round at 14:02:05 took 48ms; 2 jobs active"},
		{"quick: at least 1ms, not 0s", 300 * time.Microsecond, Stats{}, ExecStats{}, 0, "STATUS=round at 14:02:05 took 1ms; 2 jobs active"},
		{"busy", 48 * time.Millisecond, Stats{Accepted: 1}, ExecStats{Committed: 12, Submitted: 2}, 0,
			"STATUS=round at 14:02:05 took 48ms; 2 jobs active; 1 accepted, 12 tasks committed, 2 pilots submitted"},
		{"pilots held back", 48 * time.Millisecond, Stats{}, ExecStats{Held: 1}, 0,
			"STATUS=round at 14:02:05 took 48ms; 2 jobs active (1 with pilots held back: they die at start or glean-helper refuses them, see glean show)"},
		{"nodes held back", 48 * time.Millisecond, Stats{}, ExecStats{HeldNodes: 2}, 0,
			"STATUS=round at 14:02:05 took 48ms; 2 jobs active; 2 nodes held back: pilots die at start there (gleand's log names them)"},
		{"entries left for later rounds", 48 * time.Millisecond, Stats{Rejected: 20, Deferred: 2980}, ExecStats{}, 0,
			"STATUS=round at 14:02:05 took 48ms; 2 jobs active; 20 rejected, 2980 entries left for later rounds (limits.max_entries_per_round)"},
		{"slurm down", 8 * time.Second, Stats{}, ExecStats{SlurmDown: true}, 20 * time.Second,
			"STATUS=Slurm not answering at 14:02:05, next round in 20s; 2 jobs active"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := statusLine(at, tc.took, tc.st, tc.xs, tc.backoff, 2); got != tc.want {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
	if got := sdnotify.Status("a\nREADY=1"); strings.Contains(got, "\n") {
		t.Errorf("a newline in a status starts another state: %q", got)
	}
}

// Within a round the loop pings the watchdog between the intake and the
// execution, its two long phases, besides the pings at its start and end.
func TestLoopPingsBetweenPhases(t *testing.T) {
	fx, _, x := newRound(t, 2, policy.DefaultConfig())
	n := &recNotifier{}
	done := make(chan struct{}, 1)
	l := &Loop{Intake: fx.in, Exec: x, Spool: fx.s, Rescan: time.Hour, Log: fx.in.log, Notify: n, Watchdog: time.Hour,
		OnRound: func(Stats, error) {
			select {
			case done <- struct{}{}:
			default:
			}
		}}
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() { _ = l.Run(ctx); close(stopped) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Error("no round within 20 s")
	}
	cancel()
	<-stopped
	n.mu.Lock()
	defer n.mu.Unlock()
	if len(n.msgs) < 3 || n.msgs[0] != sdWatchdog || n.msgs[1] != sdWatchdog || !strings.HasPrefix(n.msgs[2], sdReady+"\nSTATUS=") {
		t.Errorf("messages %q: want WATCHDOG=1 at the round's start, again between intake and execution, then its STATUS=", n.msgs)
	}
}
