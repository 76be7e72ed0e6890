// Command glean-agent runs an elastic job's tasks inside a pilot or a
// shadow-array element, and the anchor's final run (sidecar/agent). It
// runs as the job's owner:
//
//	glean-agent pilot  --job <uid>.<id> [--config path] [flags]
//	glean-agent shadow --job <uid>.<id> [--config path] [flags]
//	glean-agent anchor --job <uid>.<id> [--config path]
//
// pilot and shadow log to stderr and to the job's work directory
// (logs/pilot-<SLURM_JOB_ID>.log, logs/shadow-<SLURM_JOB_ID>.log; after a
// move, the next job's: agent.Logs); they
// exit 0 when they stopped as told (idle, finished, retired, stopped,
// SIGTERM), 1 on an error. anchor writes the job's summary into the
// user's -o file and exits with the job's exit code.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"os/user"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/glean-hpc/glean/sidecar/agent"
	"github.com/glean-hpc/glean/sidecar/cli"
	"github.com/glean-hpc/glean/sidecar/config"
	"github.com/glean-hpc/glean/sidecar/failpoint"
	"github.com/glean-hpc/glean/sidecar/slurm"
	"github.com/glean-hpc/glean/sidecar/spool"
)

const usage = `usage: glean-agent pilot|shadow|anchor --job <uid>.<id> [--config path] [flags]
       glean-agent version`

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, usage)
		os.Exit(2)
	}
	cmd := os.Args[1]
	switch cmd {
	case "--version", "version":
		fmt.Println("glean-agent", cli.Version)
		return
	case "pilot", "shadow", "anchor":
	default:
		fmt.Fprintln(os.Stderr, usage)
		os.Exit(2)
	}
	fs := flag.NewFlagSet("glean-agent "+cmd, flag.ContinueOnError)
	f := flags{cmd: cmd}
	fs.StringVar(&f.job, "job", "", "the job: <uid>.<entry id>")
	fs.StringVar(&f.config, "config", config.Path(), "site configuration")
	if cmd != "anchor" {
		fs.DurationVar(&f.idle, "idle", 30*time.Second, "exit after this long with nothing to take and nothing running")
		fs.DurationVar(&f.grace, "grace", 0, "TERM -> KILL grace for the tasks (0: policy.grace)")
		fs.DurationVar(&f.killWait, "kill-wait", 0, "Slurm's KillWait (0: read from scontrol show config): after a scancel or at the time limit the agent must be done before it")
		fs.DurationVar(&f.heartbeat, "heartbeat", 5*time.Second, "lease heartbeat interval")
		fs.DurationVar(&f.poll, "poll", time.Second, "control and take polling interval")
	}
	if err := fs.Parse(os.Args[2:]); err != nil {
		os.Exit(2)
	}
	if f.job == "" || fs.NArg() > 0 {
		fmt.Fprintln(os.Stderr, usage)
		os.Exit(2)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code, err := run(ctx, f, log)
	stop()
	if err != nil {
		log.Error("glean-agent "+cmd, "err", err)
		if code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}

type flags struct {
	cmd, job, config                       string
	idle, grace, killWait, heartbeat, poll time.Duration
}

func run(ctx context.Context, f flags, log *slog.Logger) (int, error) {
	uid, id, err := agent.ParseJobArg(f.job)
	if err != nil {
		return 2, err
	}
	cfg, err := config.Load(f.config)
	if err != nil {
		return 1, err
	}
	sp := &spool.Spool{Dir: cfg.Spool.Dir, MaxEntryBytes: cfg.Spool.MaxEntryBytes, MaxScriptBytes: cfg.Spool.MaxScriptBytes}
	if f.cmd == "anchor" {
		// The job ended: its checkpoints (and those of the user's other
		// ended jobs) go when their retention has passed.
		sweep(cfg, sp, uid, id, log)
		return anchor(sp, uid, id)
	}

	// The daemon (group spool.group) reads the leases, results and logs the
	// agent writes: group-readable, never world-readable, whatever umask the
	// pilot (077) or shadow element started with. Tasks get the
	// submission's own umask.
	syscall.Umask(0o027)
	job, err := agent.LoadJob(sp, uid, id, os.Getuid())
	if err != nil {
		return 1, err
	}
	work, err := sp.OpenWork(uid, id)
	if err != nil {
		return 1, err
	}
	pilot := os.Getenv("SLURM_JOB_ID")
	logs := agent.NewLogs(os.Stderr, f.cmd, pilot)
	defer logs.Close()
	if err := logs.Follow(work, id); err != nil {
		log.Warn("the agent's log file", "err", err)
	}
	log = logs.Log
	work.Log = log
	fail := agentFailpoint(cfg, log)
	work.Fail = fail
	grace := f.grace
	if grace <= 0 {
		grace = cfg.Policy.Grace.Duration
	}
	// The allocation's end and KillWait are read while the first tasks
	// start (a squeue and a scontrol on 22.05).
	runner := &slurm.Exec{Timeout: cfg.Slurm.Timeout.Duration}
	learn := agent.Learn(os.Getenv, runner, f.killWait, func(ctx context.Context) (time.Duration, error) {
		c, err := (&slurm.Client{R: runner}).Config(ctx)
		return c.KillWait, err
	})
	log.Info("glean-agent", "version", cli.Version, "mode", f.cmd, "config", f.config)
	ckpt := sweep(cfg, sp, uid, id, log)
	ckpt.Fail = fail
	opts := agent.Options{
		Shadow: f.cmd == "shadow",
		Pilot:  pilot,
		Node:   nodeName(),
		Env:    os.Environ(),
		Learn:  learn,
		GaveWay: func() bool {
			// id is the job the pilot serves now (after a move, the new one).
			rec, err := agent.ReadRecord(sp, uid, id, os.Getuid())
			return err == nil && agent.GaveWay(rec, pilot)
		},
		Capacity:  agent.NodeCapacity(os.Getenv),
		Grace:     grace,
		Heartbeat: f.heartbeat,
		Poll:      f.poll,
		Idle:      f.idle,
		Log:       log,

		Checkpoint: ckpt,
	}
	open := func(next string) (*agent.Job, *spool.Work, error) {
		job, err := agent.LoadJob(sp, uid, next, os.Getuid())
		if err != nil {
			return nil, nil, err
		}
		work, err := sp.OpenWork(uid, next)
		if err != nil {
			return nil, nil, err
		}
		_ = logs.Follow(work, next) // it logs where the log went, or why not
		work.Log, work.Fail = log, fail
		id = next // GaveWay reads the record of the job served now
		return job, work, nil
	}
	if _, err := agent.Serve(ctx, job, work, uid, opts, open); err != nil {
		return 1, err
	}
	return 0, nil
}

// sweep expands the checkpoint settings for the job's owner and applies
// the retention to the owner's ended jobs (docs/execution.md).
func sweep(cfg config.Config, sp *spool.Spool, uid int, id string, log *slog.Logger) agent.Checkpoints {
	c := agent.Checkpoints{Spool: sp.Dir, UID: os.Getuid(), Command: cfg.Checkpoint.Command,
		KeepCompleted: cfg.Checkpoint.KeepCompleted.Duration}
	name := strconv.Itoa(uid)
	if rec, err := agent.ReadRecord(sp, uid, id, os.Getuid()); err == nil && rec.User != "" {
		name = rec.User
	}
	if u, err := user.LookupId(strconv.Itoa(uid)); err == nil {
		name = u.Username
	}
	root, err := agent.CheckpointRoot(cfg.Checkpoint.Root, name, os.Getenv)
	if err != nil {
		log.Warn("no checkpoint directories", "err", err)
		return c
	}
	c.Root = root
	removed, err := c.Sweep(sp, cfg.Checkpoint.KeepFailed.Duration, time.Now())
	for _, d := range removed {
		log.Debug("checkpoints removed (retention)", "dir", d)
	}
	if err != nil {
		log.Warn("checkpoint retention", "root", root, "err", err)
	}
	return c
}

// agentFailpoint is the failpoint armed for this agent (crash tests):
// GLEAN_FAILPOINT, else debug.agent_failpoint. Reaching it is logged, so
// that a test sees where the agent died.
func agentFailpoint(cfg config.Config, log *slog.Logger) *failpoint.Set {
	v := os.Getenv(failpoint.EnvVar)
	if v == "" {
		v = cfg.Debug.AgentFailpoint
	}
	fail := failpoint.Parse(v)
	if fail != nil {
		log.Warn("a failpoint is armed: the agent will kill itself there (crash tests)", "failpoint", v)
		fail.OnFire = func(name string) { log.Warn("failpoint reached: killing myself", "failpoint", name) }
	}
	return fail
}

// anchor writes the ended job's summary and returns its exit code.
func anchor(sp *spool.Spool, uid int, id string) (int, error) {
	rec, err := agent.ReadRecord(sp, uid, id, os.Getuid())
	if err != nil {
		return 1, err
	}
	// The owner's own entry says where the output goes (the record's
	// public status carries none); for a job refused before its entry
	// validated, best effort.
	var entry *spool.Entry
	if read, err := agent.OwnEntry(sp, rec); err == nil {
		entry = read.Entry
	} else {
		entry, _ = sp.ReadOwnEntry(uid, id)
	}
	var events []spool.TaskEvent
	if recs, err := sp.OpenRecords(); err == nil {
		events, _ = recs.TaskEvents(spool.RecordName(uid, id))
		recs.Close()
	}
	user := rec.User
	if entry != nil && user == "" {
		user = entry.User
	}
	s := agent.Summarize(rec, entry, events, user, os.Getenv("SLURM_JOB_ID"), nodeName())
	if err := agent.WriteSummary(s, os.Stdout); err != nil {
		fmt.Fprint(os.Stderr, s.Text)
		return s.Exit, fmt.Errorf("writing the summary to %s: %w", s.Path, err)
	}
	return s.Exit, nil
}

// nodeName is this node's short name as Slurm knows it.
func nodeName() string {
	if n := os.Getenv("SLURMD_NODENAME"); n != "" {
		return n
	}
	h, _ := os.Hostname()
	h, _, _ = strings.Cut(h, ".")
	return h
}
