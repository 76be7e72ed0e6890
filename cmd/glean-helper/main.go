// Command glean-helper is glean's privileged helper, the only part that
// runs as root (sidecar/privhelper). gleand, as the unprivileged daemon
// user, asks it over a unix socket to hold, release or cancel a job the
// daemon recorded; it checks the record and squeue before acting.
//
// It is a binary of its own rather than a gleand subcommand so that what
// root executes links only config, spool, slurm and privhelper (see
// `go list -deps ./cmd/glean-helper`; sidecar/sdnotify for systemd), not the daemon, its file watcher or
// its policy.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"os/user"
	"runtime/debug"
	"strconv"
	"syscall"
	"time"

	"github.com/glean-hpc/glean/sidecar/config"
	"github.com/glean-hpc/glean/sidecar/privhelper"
	"github.com/glean-hpc/glean/sidecar/sdnotify"
	"github.com/glean-hpc/glean/sidecar/slurm"
	"github.com/glean-hpc/glean/sidecar/spool"
)

func main() {
	if len(os.Args) > 1 && (os.Args[1] == "--version" || os.Args[1] == "version") {
		fmt.Println("glean-helper", version())
		return
	}
	// SIGHUP (systemctl reload glean-helper) from the start: its default
	// would end the helper, and a HUP is a clean end to Restart=on-failure.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	fs := flag.NewFlagSet("glean-helper", flag.ContinueOnError)
	configPath := fs.String("config", config.Path(), "site configuration")
	check := fs.Bool("check-config", false, "check the configuration as a start or reload would, print what is wrong and exit (1: invalid)")
	if err := fs.Parse(os.Args[1:]); err != nil {
		os.Exit(2)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if *check {
		_, err := setup(*configPath, log)
		if errors.Is(err, errNotNeeded) {
			fmt.Println("glean-helper: configuration", *configPath, "is valid;", err, "(glean-helper exits at start)")
			return
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "glean-helper:", err)
			os.Exit(1)
		}
		fmt.Println("glean-helper: configuration", *configPath, "is valid")
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, *configPath, hup, log)
	stop()
	if errors.Is(err, privhelper.ErrReload) {
		// The requests under way are answered and the socket is closed:
		// a fresh image (after an upgrade, the new binary) reads the file
		// as a start does. Descriptors are close-on-exec.
		exe, xerr := os.Executable()
		if xerr == nil {
			xerr = syscall.Exec(exe, os.Args, os.Environ())
		}
		err = fmt.Errorf("config reload: re-exec: %w", xerr)
	}
	if err != nil {
		log.Error("glean-helper", "err", err)
		os.Exit(1)
	}
}

// errNotNeeded is setup's answer for helper.socket = "" (the documented
// mode without a helper): a start then ends at once, successfully.
var errNotNeeded = errors.New("helper.socket is empty: gleand acts on Slurm itself and needs no helper")

// setup checks the configuration as a start does and builds the server
// (not yet listening), logging to log.
func setup(configPath string, log *slog.Logger) (*privhelper.Server, error) {
	cfg, err := config.Load(configPath)
	if err != nil {
		return nil, err
	}
	if cfg.Helper.Socket == "" {
		return nil, errNotNeeded
	}
	if os.Geteuid() != 0 {
		return nil, fmt.Errorf("glean-helper runs as root (uid %d here): it acts with root's Slurm rights for gleand", os.Geteuid())
	}
	u, err := user.Lookup(cfg.Daemon.User)
	if err != nil {
		return nil, fmt.Errorf("daemon.user %q: %w", cfg.Daemon.User, err)
	}
	uid, err := strconv.Atoi(u.Uid)
	if err != nil || uid == 0 {
		return nil, fmt.Errorf("daemon.user %q: uid %s: the daemon's user must not be root", cfg.Daemon.User, u.Uid)
	}
	g, err := user.LookupGroup(cfg.Spool.Group)
	if err != nil {
		return nil, fmt.Errorf("spool.group %q: %w", cfg.Spool.Group, err)
	}
	gid, err := strconv.Atoi(g.Gid)
	if err != nil {
		return nil, errors.New("spool.group: non-numeric gid")
	}
	return &privhelper.Server{
		Socket: cfg.Helper.Socket, DaemonUID: uid, GID: gid, Log: log,
		Timeout: privhelper.RequestTimeout(cfg.Slurm.Timeout.Duration),
		Do: &privhelper.Handler{
			Spool:           &spool.Spool{Dir: cfg.Spool.Dir},
			Slurm:           &slurm.Client{R: &slurm.Exec{Timeout: cfg.Slurm.Timeout.Duration}},
			AnchorPartition: cfg.Partitions.Anchor,
			DaemonUID:       uid,
			Log:             log,
			Pilots: privhelper.PilotParams{
				Partition: cfg.Partitions.Pilot, QOS: cfg.Partitions.QOS, Account: cfg.Partitions.Account,
				Script: cfg.Helper.PilotScript, Agent: cfg.Helper.Agent, Config: configPath,
				Grace: cfg.Policy.Grace.Duration, MinUID: cfg.Helper.MinUID,
			},
		},
	}, nil
}

func run(ctx context.Context, configPath string, hup <-chan os.Signal, log *slog.Logger) error {
	// systemd (Type=notify): gleand's unit starts once the socket listens.
	notify := func(state string) {
		if err := (sdnotify.Systemd{}).Notify(state); err != nil {
			log.Warn("sd_notify", "state", state, "err", err)
		}
	}
	srv, err := setup(configPath, log)
	if errors.Is(err, errNotNeeded) {
		// Not a failure: the unit ends cleanly (READY=1 first, or systemd
		// calls a notify service that exits before it a protocol error),
		// Restart=on-failure leaves it so, and gleand (Wants=) starts.
		log.Info("glean-helper not needed, exiting", "config", configPath, "reason", err.Error())
		notify(sdnotify.Ready + "\n" + sdnotify.Status("not needed: "+err.Error()))
		return nil
	}
	if err != nil {
		return err
	}
	log.Info("glean-helper starting", "version", version(), "config", configPath, "socket", srv.Socket, "daemon_uid", srv.DaemonUID)
	srv.Reload = hup
	srv.Check = func() error {
		_, err := setup(configPath, log)
		if err != nil {
			notify(sdnotify.Status("config reload refused at " + time.Now().Format("15:04:05") + " (" + err.Error() + "), running the old config"))
		}
		return err
	}
	ln, err := srv.Listen()
	if err != nil {
		return err
	}
	defer ln.Close()
	notify(sdnotify.Ready + "\n" + sdnotify.Status("listening on "+srv.Socket))
	err = srv.Serve(ctx, ln)
	if errors.Is(err, privhelper.ErrReload) {
		notify(sdnotify.Reloading() + "\n" + sdnotify.Status("reloading the config: re-executing"))
		return err
	}
	notify(sdnotify.Stopping)
	return err
}

// version is the build's: sidecar/cli.Version is not imported, to keep the
// CLI's packages out of root's binary.
func version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	v := bi.Main.Version
	for _, s := range bi.Settings {
		if s.Key == "vcs.revision" {
			v += " " + s.Value
		}
	}
	return v
}
