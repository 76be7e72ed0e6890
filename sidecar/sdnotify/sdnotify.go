// Package sdnotify tells systemd how a service is doing (sd_notify(3):
// READY=1, STATUS=..., WATCHDOG=1, STOPPING=1) through go-systemd's
// daemon package. Without $NOTIFY_SOCKET (not started by systemd as
// Type=notify) every call is a no-op.
package sdnotify

import (
	"strconv"
	"time"

	sd "github.com/coreos/go-systemd/v22/daemon"
	"golang.org/x/sys/unix"
)

// The states glean sends.
const (
	Ready    = sd.SdNotifyReady    // start-up done: the first round has observed
	Stopping = sd.SdNotifyStopping // shutting down
	Watchdog = sd.SdNotifyWatchdog // the loop is alive
)

// Reloading is RELOADING=1 with MONOTONIC_USEC= (CLOCK_MONOTONIC now, as
// Type=notify-reload in systemd >= 253 wants it; older ones ignore it): the
// service is reloading and sends READY=1 when done.
func Reloading() string {
	var ts unix.Timespec
	s := sd.SdNotifyReloading
	if unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts) == nil {
		s += "\nMONOTONIC_USEC=" + strconv.FormatInt(ts.Nano()/1000, 10)
	}
	return s
}

// Status is a STATUS= line (systemctl status shows it); newlines would
// start another assignment, so they become spaces.
func Status(line string) string {
	b := []byte(line)
	for i, c := range b {
		if c == '\n' || c == '\r' {
			b[i] = ' '
		}
	}
	return "STATUS=" + string(b)
}

// Systemd sends states to $NOTIFY_SOCKET.
type Systemd struct{}

// Notify sends one datagram (several states joined by newlines); without
// $NOTIFY_SOCKET it does nothing.
func (Systemd) Notify(state string) error {
	_, err := sd.SdNotify(false, state)
	return err
}

// WatchdogInterval is how often the service should send WATCHDOG=1: half
// the unit's WatchdogSec, as sd_watchdog_enabled(3) advises; 0 when
// systemd watches nothing (no WatchdogSec, or $WATCHDOG_PID is another
// process). A malformed $WATCHDOG_USEC is an error.
func WatchdogInterval() (time.Duration, error) {
	d, err := sd.SdWatchdogEnabled(false)
	return d / 2, err
}
