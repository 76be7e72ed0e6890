// Command gleand is the head-node daemon. Today it runs the intake slice
// of its loop (sidecar/daemon): it takes users' elastic submissions from
// the spool into its own records, holds their anchor jobs and follows them.
// Pilots and task execution arrive with the execution-path issue.
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
	"strconv"
	"syscall"

	"github.com/glean-hpc/glean/sidecar/cli"
	"github.com/glean-hpc/glean/sidecar/config"
	"github.com/glean-hpc/glean/sidecar/daemon"
	"github.com/glean-hpc/glean/sidecar/slurm"
	"github.com/glean-hpc/glean/sidecar/spool"
)

func main() {
	if len(os.Args) > 1 && (os.Args[1] == "--version" || os.Args[1] == "version") {
		fmt.Println("gleand", cli.Version)
		return
	}
	fs := flag.NewFlagSet("gleand", flag.ContinueOnError)
	configPath := fs.String("config", config.Path(), "site configuration")
	if err := fs.Parse(os.Args[1:]); err != nil {
		os.Exit(2)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, *configPath, log)
	stop()
	if err != nil {
		log.Error("gleand", "err", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, configPath string, log *slog.Logger) error {
	cfg, err := config.Load(configPath)
	if err != nil {
		return err
	}
	log.Info("gleand starting", "version", cli.Version, "config", configPath, "spool", cfg.Spool.Dir, "uid", os.Getuid())
	g, err := user.LookupGroup(cfg.Spool.Group)
	if err != nil {
		return fmt.Errorf("spool.group %q: %w (create it: groupadd --system %s)", cfg.Spool.Group, err, cfg.Spool.Group)
	}
	gid, err := strconv.Atoi(g.Gid)
	if err != nil {
		return errors.New("spool.group: non-numeric gid")
	}
	sp := &spool.Spool{Dir: cfg.Spool.Dir, MaxEntryBytes: cfg.Spool.MaxEntryBytes, MaxScriptBytes: cfg.Spool.MaxScriptBytes}
	records, err := sp.Init(gid)
	if err != nil {
		return err
	}
	defer records.Close()
	client := &slurm.Client{R: &slurm.Exec{Timeout: cfg.Slurm.Timeout.Duration}}
	intake, err := daemon.NewIntake(daemon.Options{Spool: sp, AnchorPartition: cfg.Partitions.Anchor,
		PilotPartition: cfg.Partitions.Pilot, Limits: cfg.Limits},
		records, &daemon.SlurmQueue{R: client.R}, &daemon.SlurmPrivileged{C: client}, &daemon.SnapshotSizer{C: client}, log)
	if err != nil {
		return err
	}
	loop := &daemon.Loop{Intake: intake, Spool: sp, Rescan: cfg.Daemon.Rescan.Duration, Watch: cfg.Daemon.Watch, Log: log}
	return loop.Run(ctx)
}
