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
	fs := flag.NewFlagSet("glean-helper", flag.ContinueOnError)
	configPath := fs.String("config", config.Path(), "site configuration")
	if err := fs.Parse(os.Args[1:]); err != nil {
		os.Exit(2)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, *configPath, log)
	stop()
	if err != nil {
		log.Error("glean-helper", "err", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, configPath string, log *slog.Logger) error {
	cfg, err := config.Load(configPath)
	if err != nil {
		return err
	}
	if cfg.Helper.Socket == "" {
		return errors.New("helper.socket is empty: gleand acts on Slurm itself and needs no helper")
	}
	if os.Geteuid() != 0 {
		return fmt.Errorf("glean-helper runs as root (uid %d here): it acts with root's Slurm rights for gleand", os.Geteuid())
	}
	u, err := user.Lookup(cfg.Daemon.User)
	if err != nil {
		return fmt.Errorf("daemon.user %q: %w", cfg.Daemon.User, err)
	}
	uid, err := strconv.Atoi(u.Uid)
	if err != nil || uid == 0 {
		return fmt.Errorf("daemon.user %q: uid %s: the daemon's user must not be root", cfg.Daemon.User, u.Uid)
	}
	g, err := user.LookupGroup(cfg.Spool.Group)
	if err != nil {
		return fmt.Errorf("spool.group %q: %w", cfg.Spool.Group, err)
	}
	gid, err := strconv.Atoi(g.Gid)
	if err != nil {
		return errors.New("spool.group: non-numeric gid")
	}
	log.Info("glean-helper starting", "version", version(), "config", configPath, "socket", cfg.Helper.Socket,
		"daemon_user", cfg.Daemon.User, "daemon_uid", uid, "spool", cfg.Spool.Dir)
	srv := &privhelper.Server{
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
	}
	ln, err := srv.Listen()
	if err != nil {
		return err
	}
	defer ln.Close()
	// systemd (Type=notify): gleand's unit starts once the socket listens.
	notify := func(state string) {
		if err := (sdnotify.Systemd{}).Notify(state); err != nil {
			log.Warn("sd_notify", "state", state, "err", err)
		}
	}
	notify(sdnotify.Ready + "\n" + sdnotify.Status("listening on "+cfg.Helper.Socket))
	defer notify(sdnotify.Stopping)
	return srv.Serve(ctx, ln)
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
