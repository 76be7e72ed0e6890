package daemon

import (
	"fmt"
	"strings"
	"time"

	"github.com/glean-hpc/glean/sidecar/privhelper"
	"github.com/glean-hpc/glean/sidecar/sdnotify"
)

// Notifier tells the service manager about the loop: one datagram of
// sd_notify(3) states per call. sidecar/sdnotify.Systemd is the real one
// (a no-op without $NOTIFY_SOCKET).
type Notifier interface {
	Notify(state string) error
}

var _ Notifier = sdnotify.Systemd{}

const (
	sdReady    = sdnotify.Ready
	sdStopping = sdnotify.Stopping
	sdWatchdog = sdnotify.Watchdog
)

// WorstRound is how long a round may take while slurmctld is slow or
// stops answering, with every Slurm command bounded by slurmTimeout: the
// snapshot's commands (run side by side) time out once; then privileged
// calls, the intake's and the executor's, until they have taken
// roundBudget in all or one failed slowly, the last of them waiting up to
// the helper's own timeout; the round's stall skips the rest. The unit's
// WatchdogSec must be longer (etc/gleand.service: 5 min against 170 s at
// the default 30 s); the loop pings when a round starts and when it ends.
func WorstRound(slurmTimeout time.Duration) time.Duration {
	if slurmTimeout <= 0 {
		slurmTimeout = 30 * time.Second
	}
	return slurmTimeout + roundBudget + privhelper.RequestTimeout(slurmTimeout) + 5*time.Second
}

// notify sends state if there is a Notifier; a failure is logged, never
// fatal (systemd restarting is no reason to stop harvesting).
func (l *Loop) notify(state string) {
	if l.Notify == nil {
		return
	}
	if err := l.Notify.Notify(state); err != nil {
		l.Log.Warn("sd_notify", "state", strings.SplitN(state, "\n", 2)[0], "err", err)
	}
}

// statusLine is the STATUS= systemctl shows: when the last round ran and
// what it did, or that Slurm is not answering and when the next round is.
func statusLine(at time.Time, took time.Duration, st Stats, xs ExecStats, backoff time.Duration, active int) string {
	var b strings.Builder
	if backoff > 0 {
		fmt.Fprintf(&b, "Slurm not answering at %s, next round in %s; ", at.Format("15:04:05"), backoff.Round(time.Second))
	} else {
		fmt.Fprintf(&b, "round at %s took %s; ", at.Format("15:04:05"), max(took.Round(time.Millisecond), time.Millisecond))
	}
	fmt.Fprintf(&b, "%d jobs active", active)
	if xs.Held > 0 {
		fmt.Fprintf(&b, " (%d with pilots held back: they die at start or glean-helper refuses them, see glean show)", xs.Held)
	}
	if xs.HeldNodes > 0 {
		fmt.Fprintf(&b, "; %d nodes held back: pilots die at start there (gleand's log names them)", xs.HeldNodes)
	}
	var did []string
	for _, c := range []struct {
		n    int
		what string
	}{
		{st.Accepted, "accepted"}, {st.Rejected, "rejected"}, {xs.Committed, "tasks committed"},
		{xs.Submitted, "pilots submitted"}, {xs.Cancelled, "pilots cancelled"}, {xs.Retired, "retired"},
		{xs.Lost, "lost"}, {st.Cancelled, "jobs cancelled"}, {xs.Ended, "jobs ended"},
		{st.Deferred, "entries left for later rounds (limits.max_entries_per_round)"},
	} {
		if c.n > 0 {
			did = append(did, fmt.Sprintf("%d %s", c.n, c.what))
		}
	}
	if len(did) > 0 {
		b.WriteString("; " + strings.Join(did, ", "))
	}
	return sdnotify.Status(b.String())
}
