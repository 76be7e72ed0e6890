// Command gleand is the head-node daemon. Today it runs the intake slice
// of its loop (sidecar/daemon): it takes users' elastic submissions from
// the spool into its own records, holds their anchor jobs and follows them.
// Pilots and task execution arrive with the execution-path issue.
//
// gleand runs as daemon.user (glean) and asks the root helper
// (glean-helper, helper.socket) for every privileged Slurm action. It
// refuses to run as root unless -allow-root is given: as root it would
// read a spool users write into with root's rights.
//
// SIGHUP (systemctl reload gleand) reloads the configuration by
// re-executing gleand in place once the file checks out (daemon.Reloader;
// docs/operations.md); -check-config runs that check alone.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/glean-hpc/glean/sidecar/cli"
	"github.com/glean-hpc/glean/sidecar/config"
	"github.com/glean-hpc/glean/sidecar/daemon"
	"github.com/glean-hpc/glean/sidecar/failpoint"
	"github.com/glean-hpc/glean/sidecar/metrics"
	"github.com/glean-hpc/glean/sidecar/privhelper"
	"github.com/glean-hpc/glean/sidecar/sdnotify"
	"github.com/glean-hpc/glean/sidecar/slurm"
	"github.com/glean-hpc/glean/sidecar/spool"
)

func main() {
	started := time.Now()
	// SIGHUP (systemctl reload gleand) from the start: its default would
	// end the process. A re-exec'd image registers it again here.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	if len(os.Args) > 1 && (os.Args[1] == "--version" || os.Args[1] == "version") {
		fmt.Println("gleand", cli.Version)
		return
	}
	fs := flag.NewFlagSet("gleand", flag.ContinueOnError)
	configPath := fs.String("config", config.Path(), "site configuration")
	allowRoot := fs.Bool("allow-root", false, "run even as root (gleand runs as daemon.user; root only for debugging)")
	check := fs.Bool("check-config", false, "check the configuration as a start or reload would, print what is wrong and exit (1: invalid)")
	if err := fs.Parse(os.Args[1:]); err != nil {
		os.Exit(2)
	}
	if *check {
		if _, _, err := loadConfig(*configPath); err != nil {
			fmt.Fprintln(os.Stderr, "gleand:", err)
			os.Exit(1)
		}
		fmt.Println("gleand:", *configPath, "is valid")
		return
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, *configPath, *allowRoot, started, hup, log)
	stop()
	if err != nil {
		log.Error("gleand", "err", err)
		os.Exit(1)
	}
}

// loadConfig loads the file and checks what a start needs of it beyond
// config.Validate: the spool (spool.Check: it exists and is a glean spool,
// or fresh for the first start to lay out; nothing is created), the
// spool's group and the policy. A reload checks the same before it
// re-execs.
func loadConfig(path string) (config.Config, int, error) {
	cfg, err := config.Load(path)
	if err != nil {
		return cfg, 0, err
	}
	if err := (&spool.Spool{Dir: cfg.Spool.Dir}).Check(true); err != nil {
		return cfg, 0, fmt.Errorf("%s: spool.dir: %w", path, err)
	}
	g, err := user.LookupGroup(cfg.Spool.Group)
	if err != nil {
		return cfg, 0, fmt.Errorf("%s: spool.group %q: %w (create it: groupadd --system %s)", path, cfg.Spool.Group, err, cfg.Spool.Group)
	}
	gid, err := strconv.Atoi(g.Gid)
	if err != nil {
		return cfg, 0, fmt.Errorf("%s: spool.group %q: non-numeric gid", path, cfg.Spool.Group)
	}
	if _, _, err := daemon.PolicyConfig(cfg); err != nil {
		return cfg, 0, fmt.Errorf("%s: policy: %w", path, err)
	}
	return cfg, gid, nil
}

// checkSpoolMove refuses a reload that moves spool.dir to a directory
// that is not already a glean spool: the re-executed gleand would lay out
// an empty spool there and lose sight of every job in the old one. (Moving
// the spool means copying it there first.)
func checkSpoolMove(path, old, new string) error {
	if filepath.Clean(old) == filepath.Clean(new) {
		return nil
	}
	if err := (&spool.Spool{Dir: new}).Check(false); err != nil {
		return fmt.Errorf("%s: spool.dir: moved from %s: %w (copy the spool there first, or keep spool.dir)", path, old, err)
	}
	return nil
}

func run(ctx context.Context, configPath string, allowRoot bool, started time.Time, hup <-chan os.Signal, log *slog.Logger) error {
	cfg, gid, err := loadConfig(configPath)
	if err != nil {
		return err
	}
	if os.Geteuid() == 0 && !allowRoot {
		return fmt.Errorf("gleand runs as daemon.user %q, not root: start it as that user (etc/gleand.service), or pass -allow-root", cfg.Daemon.User)
	}
	if u, err := user.Current(); err == nil && u.Username != cfg.Daemon.User && os.Geteuid() != 0 {
		log.Warn("gleand runs as another user than daemon.user; the helper refuses all but daemon.user", "user", u.Username, "daemon_user", cfg.Daemon.User)
	}
	log.Info("gleand starting", "version", cli.Version, "config", configPath, "spool", cfg.Spool.Dir, "uid", os.Getuid())
	sp := &spool.Spool{Dir: cfg.Spool.Dir, MaxEntryBytes: cfg.Spool.MaxEntryBytes, MaxScriptBytes: cfg.Spool.MaxScriptBytes}
	records, err := sp.Init(gid)
	if err != nil {
		return err
	}
	if err := sp.MountGuard(); err != nil {
		log.Warn("users' own mounts in the spool are not refused", "spool", sp.Dir, "err", err)
	}
	defer records.Close()
	lock, err := sp.LockDaemon()
	if err != nil {
		return err
	}
	defer lock.Close()
	records.Log = log
	// One snapshot per round serves the intake too: ended jobs included.
	client := &slurm.Client{R: &slurm.Exec{Timeout: cfg.Slurm.Timeout.Duration}, Ended: true}
	var priv interface {
		daemon.Privileged
		daemon.Actor
	} = &daemon.SlurmPrivileged{C: client}
	if cfg.Helper.Socket != "" {
		priv = &privhelper.Client{Socket: cfg.Helper.Socket, Timeout: privhelper.RequestTimeout(cfg.Slurm.Timeout.Duration) + 5*time.Second}
	}
	log.Info("privileged actions", "helper", cfg.Helper.Socket)
	fail := failpoint.FromEnv()
	if fail != nil {
		log.Warn("a failpoint is armed: gleand will kill itself there (crash tests)", "failpoint", os.Getenv(failpoint.EnvVar))
		fail.OnFire = func(name string) { log.Warn("failpoint reached: killing myself", "failpoint", name) }
	}
	records.Fail = fail
	intake, err := daemon.NewIntake(daemon.Options{Spool: sp, AnchorPartition: cfg.Partitions.Anchor,
		PilotPartition: cfg.Partitions.Pilot, Limits: cfg.Limits, MinUID: cfg.Helper.MinUID, Fail: fail},
		records, nil, priv, nil, log) // Slurm is read once per round, by the loop's observation
	if err != nil {
		return err
	}
	pcfg, mode, err := daemon.PolicyConfig(cfg)
	if err != nil {
		return err
	}
	exec := daemon.NewExecutor(daemon.ExecOptions{Spool: sp, Policy: pcfg, DefaultMode: mode,
		Retries: cfg.Limits.TaskRetries, MaxAttempts: cfg.Limits.MaxAttempts, MaxWaste: cfg.Limits.MaxWaste.Duration,
		HeartbeatTimeout: cfg.Daemon.HeartbeatTimeout.Duration, PilotPartition: cfg.Partitions.Pilot, Fail: fail},
		intake, records, priv, client, log)
	interval := cfg.Daemon.Interval.Duration
	if interval == 0 {
		// One scheduling cycle, as the cluster says.
		sc, err := client.Config(ctx)
		if err != nil || sc.BackfillInterval <= 0 {
			return fmt.Errorf("daemon.interval is 0 (one scheduling cycle) but bf_interval is unknown: %v; set daemon.interval", err)
		}
		interval = sc.BackfillInterval
	}
	log.Info("round interval", "interval", interval, "rescan", cfg.Daemon.Rescan.Duration)
	// systemd (Type=notify): READY=1 after the first round, WATCHDOG=1
	// from the loop when the unit sets WatchdogSec.
	ping, err := sdnotify.WatchdogInterval()
	if err != nil {
		log.Warn("systemd watchdog off", "err", err)
	}
	if worst := daemon.WorstRound(cfg.Slurm.Timeout.Duration); ping > 0 && 2*ping < worst {
		log.Warn("WatchdogSec is shorter than a round may legitimately take while Slurm stops answering: raise it in the unit (systemctl edit gleand) or lower slurm.timeout",
			"watchdog_sec", 2*ping, "worst_round", worst, "slurm_timeout", cfg.Slurm.Timeout.Duration)
	}
	var metricsAddr net.Addr // what the re-executed image must be able to listen on again
	// A reload checks the file as a start would, and that the new image
	// can listen on its metrics address (it stops if it cannot).
	check := func() error {
		c, _, err := loadConfig(configPath)
		if err != nil {
			return err
		}
		if err := checkSpoolMove(configPath, cfg.Spool.Dir, c.Spool.Dir); err != nil {
			return err
		}
		if err := metrics.CheckListen(c.Daemon.MetricsListen, metricsAddr); err != nil {
			return fmt.Errorf("%s: %w", configPath, err)
		}
		return nil
	}
	loop := &daemon.Loop{Intake: intake, Exec: exec, Spool: sp, Interval: interval, Rescan: cfg.Daemon.Rescan.Duration, Watch: cfg.Daemon.Watch, Log: log, Started: started,
		Notify: sdnotify.Systemd{}, Watchdog: ping,
		Reload: hup, Reloader: daemon.SelfExec{CheckConfig: check}}
	if addr := cfg.Daemon.MetricsListen; addr != "" {
		ln, err := metrics.Listen(addr)
		if err != nil {
			return err
		}
		metricsAddr = ln.Addr()
		m := metrics.NewDaemon()
		loop.OnReport = m.Observe
		go metrics.Serve(ctx, ln, m.Handler(), log)
	}
	return loop.Run(ctx)
}
