package daemon

import (
	"fmt"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/glean-hpc/glean/sidecar/sdnotify"
)

// Reloader is what a reload (SIGHUP: `systemctl reload gleand`) does.
// gleand keeps nothing that matters only in memory (it rebuilds from the
// spool and squeue on start), so the simplest correct reload is a re-exec:
// the new configuration then applies everywhere, as at a start.
type Reloader interface {
	// Check loads and validates the configuration file as a start would;
	// the error names the file and the problem.
	Check() error
	// Reexec replaces the process with a fresh image of itself (same pid,
	// same arguments and environment); it returns only if that failed.
	Reexec() error
}

// SelfExec is the real Reloader: CheckConfig is gleand's own start-up
// check of its file; Reexec execs os.Executable() (after a package
// upgrade, the new binary) with os.Args and the environment, so
// $NOTIFY_SOCKET and $WATCHDOG_USEC carry over. Every descriptor gleand
// opens is close-on-exec: the spool's lock is released by the exec and
// taken again by the new image.
type SelfExec struct {
	CheckConfig func() error
}

// Check runs CheckConfig.
func (s SelfExec) Check() error { return s.CheckConfig() }

// Reexec execs gleand again.
func (SelfExec) Reexec() error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	return syscall.Exec(exe, os.Args, os.Environ())
}

// reload handles one reload request between two rounds (so the current
// round has finished). A bad file is logged and noted in every later
// STATUS=, and the loop runs on with the configuration it has; a good one
// sends RELOADING=1 and re-execs, and the new image sends READY=1 after
// its first round. It returns an error only when the re-exec failed: the
// loop then ends and gleand exits for the service manager to restart it.
func (l *Loop) reload(now time.Time) error {
	if err := l.Reloader.Check(); err != nil {
		line := strings.ReplaceAll(err.Error(), "\n", "; ")
		l.Log.Error("config reload refused: running on with the old config", "err", line)
		l.refused = fmt.Sprintf("config reload refused at %s (%s), running the old config", now.Format("15:04:05"), line)
		l.notify(sdnotify.Status(l.refused))
		return nil
	}
	l.Log.Info("config reload: the file is valid; re-executing gleand with it")
	l.notify(sdnotify.Reloading() + "\n" + sdnotify.Status("reloading the config: re-executing"))
	err := l.Reloader.Reexec()
	l.Log.Error("config reload: re-exec failed; exiting for the service manager to restart gleand", "err", err)
	return fmt.Errorf("config reload: re-exec: %w", err)
}
