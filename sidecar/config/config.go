// Package config holds glean's site configuration (/etc/glean/glean.toml):
// Default, Load (unknown keys are errors) and Validate (all problems at once).
// The wrapper, the daemon, the agent and the CLI read the same file.
package config

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/BurntSushi/toml"
)

// DefaultPath is where the RPM installs the config; GLEAN_CONFIG overrides it.
const DefaultPath = "/etc/glean/glean.toml"

// Duration is a time.Duration written as a string ("30s", "2m") in TOML.
type Duration struct{ time.Duration }

// UnmarshalText parses a Go duration string.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return fmt.Errorf("bad duration %q (write e.g. \"30s\" or \"2m\")", b)
	}
	d.Duration = v
	return nil
}

// MarshalText writes the duration as a Go duration string.
func (d Duration) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// Config is the whole file.
type Config struct {
	Slurm      Slurm      `toml:"slurm"`
	Partitions Partitions `toml:"partitions"`
	Spool      Spool      `toml:"spool"`
	Policy     Policy     `toml:"policy"`
	Limits     Limits     `toml:"limits"`
	Checkpoint Checkpoint `toml:"checkpoint"`
	Daemon     Daemon     `toml:"daemon"`
	Helper     Helper     `toml:"helper"`
	Debug      Debug      `toml:"debug"`
}

// Debug is for crash tests only.
type Debug struct {
	// AgentFailpoint arms a failpoint ("name" or "name@n",
	// sidecar/failpoint) in every agent that starts: pilots run with
	// --export=NONE, so GLEAN_FAILPOINT cannot reach them. Never set it
	// on a real cluster: the agents kill themselves there.
	AgentFailpoint string `toml:"agent_failpoint"`
}

// Slurm says where Slurm's commands are.
type Slurm struct {
	RealSbatch string   `toml:"real_sbatch"` // the wrapper's target; "" = first sbatch in PATH that is not the wrapper
	Timeout    Duration `toml:"timeout"`     // per Slurm command
}

// Partitions names what the admin set aside for glean (ARCHITECTURE.md).
type Partitions struct {
	Pilot   string   `toml:"pilot"`   // same nodes as the batch partition, lower PriorityTier
	Anchor  string   `toml:"anchor"`  // small always-available partition for anchor jobs
	QOS     string   `toml:"qos"`     // pilots' QOS ("" = none)
	Account string   `toml:"account"` // pilots' account ("" = the owner's default)
	Elastic []string `toml:"elastic"` // submissions to these partitions are elastic without --glean
}

// Spool is the shared directory that is the only channel between the parts.
type Spool struct {
	Dir            string `toml:"dir"`
	Group          string `toml:"group"`           // group of the per-user directories (mode 2770)
	MaxEntryBytes  int64  `toml:"max_entry_bytes"` // a submission's record, without the script
	MaxScriptBytes int64  `toml:"max_script_bytes"`
}

// Policy holds the site's scaling settings; sidecar/policy turns them into
// its own Config.
type Policy struct {
	DefaultMode      string   `toml:"default_mode"` // fair | scavenger
	AllowThesis      bool     `toml:"allow_thesis"` // mode=thesis takes nodes from everyone: admin's choice
	Margin           Duration `toml:"margin"`       // subtracted from every backfill window
	Grace            Duration `toml:"grace"`        // checkpoint time a task gets on give-way
	MaxPendingPilots int      `toml:"max_pending_pilots"`
	MaxPilots        int      `toml:"max_pilots"` // 0 = no cap
	MinPilotTime     Duration `toml:"min_pilot_time"`
}

// Limits are per-user caps.
type Limits struct {
	MaxJobsPerUser  int `toml:"max_jobs_per_user"`
	MaxTasksPerUser int `toml:"max_tasks_per_user"`
	MaxTasksPerJob  int `toml:"max_tasks_per_job"`
	// MaxEntriesPerRound: how many of a user's new spool entries one
	// gleand round takes in (or rejects); the rest wait for later rounds,
	// so that one user's flood of entries (a mkdir each) neither makes
	// rounds long nor delays other users' entries.
	MaxEntriesPerRound int `toml:"max_entries_per_round"`
	// TaskRetries: how often a failed task is run again before it counts
	// as failed. Give-way, time-limit and lost-pilot ends do not count.
	TaskRetries int `toml:"task_retries"`
	// MaxAttempts caps a task's attempts of any kind, MaxWaste the run
	// time of its attempts that did not complete (0: no cap): a task that
	// always checkpoints, or whose pilots always die, then fails for good.
	MaxAttempts int      `toml:"max_attempts"`
	MaxWaste    Duration `toml:"max_waste"`
}

// Checkpoint configures the checkpoint and hand-back contract
// (docs/execution.md, "Checkpoint and hand-back").
type Checkpoint struct {
	// Root holds the per-task checkpoint directories <root>/<anchor>/<task>,
	// outside the spool, created 0700 by the owner. It must be on a
	// filesystem every compute node mounts. "" = $HOME/.glean/checkpoints;
	// else an absolute path in which %u is the user's name (e.g.
	// "/scratch/%u/glean-checkpoints").
	Root string `toml:"root"`
	// Command, when set, runs the tasks of jobs not marked
	// --glean=checkpoint=yes: `Command <script> <args...>`, with the task's
	// environment (GLEAN_CHECKPOINT_DIR, GLEAN_RESTARTED). It follows the
	// task contract: on TERM save into GLEAN_CHECKPOINT_DIR and exit 99;
	// restore from it when GLEAN_RESTARTED=1 (a DMTCP or CRIU wrapper).
	Command string `toml:"command"`
	// KeepCompleted and KeepFailed: how long a finished job's checkpoints
	// are kept after it ended (done; failed or cancelled).
	KeepCompleted Duration `toml:"keep_completed"`
	KeepFailed    Duration `toml:"keep_failed"`
}

// Daemon configures gleand.
type Daemon struct {
	User          string   `toml:"user"`           // gleand runs as this user
	Interval      Duration `toml:"interval"`       // 0 = the cluster's bf_interval
	Rescan        Duration `toml:"rescan"`         // periodic spool rescan (fsnotify misses NFS writes)
	Watch         bool     `toml:"watch"`          // use fsnotify besides the rescan
	MetricsListen string   `toml:"metrics_listen"` // "" = no /metrics
	// HeartbeatTimeout: a running task's lease not refreshed for this long
	// is taken back (its agent died with its node).
	HeartbeatTimeout Duration `toml:"heartbeat_timeout"`
}

// Helper configures the privileged helper (glean-helper, root) and how
// gleand reaches it.
type Helper struct {
	// Socket is the helper's unix socket; its directory is created 0750
	// root:spool.group. "" makes gleand act on Slurm itself, which needs
	// the daemon's user to be a Slurm operator.
	Socket string `toml:"socket"`
	// Agent is glean-agent's path on the compute nodes, PilotScript the
	// installed jobscripts/pilot.sh: a pilot is `sbatch ... PilotScript
	// Agent pilot --job <record> --config <this file>`.
	Agent       string `toml:"agent"`
	PilotScript string `toml:"pilot_script"`
	// MinUID: the helper acts for no uid below it (system accounts).
	MinUID int `toml:"min_uid"`
}

// maxSocketPath is what fits in sockaddr_un.sun_path with its NUL.
const maxSocketPath = 107

// Default is the configuration used where the file says nothing.
func Default() Config {
	return Config{
		Slurm:      Slurm{Timeout: Duration{30 * time.Second}},
		Partitions: Partitions{Pilot: "pilot", Anchor: "glean", Elastic: []string{}},
		Spool:      Spool{Dir: "/var/spool/glean", Group: "glean", MaxEntryBytes: 1 << 20, MaxScriptBytes: 4 << 20},
		Policy: Policy{DefaultMode: "fair", Margin: Duration{2 * time.Minute}, Grace: Duration{60 * time.Second},
			MaxPendingPilots: 8, MinPilotTime: Duration{2 * time.Minute}},
		Limits: Limits{MaxJobsPerUser: 100, MaxTasksPerUser: 1_000_000, MaxTasksPerJob: 1_000_000, MaxEntriesPerRound: 20,
			TaskRetries: 2, MaxAttempts: 20, MaxWaste: Duration{24 * time.Hour}},
		Checkpoint: Checkpoint{KeepFailed: Duration{7 * 24 * time.Hour}},
		Daemon:     Daemon{User: "glean", Rescan: Duration{10 * time.Second}, Watch: true, HeartbeatTimeout: Duration{time.Minute}},
		Helper: Helper{Socket: "/run/glean/helper.sock", Agent: "/usr/bin/glean-agent",
			PilotScript: "/usr/libexec/glean/pilot.sh", MinUID: 1000},
	}
}

// Path is the config file to read: $GLEAN_CONFIG, else DefaultPath.
func Path() string {
	if p := os.Getenv("GLEAN_CONFIG"); p != "" {
		return p
	}
	return DefaultPath
}

// Load reads path over the defaults. Unknown keys and bad values are
// errors naming the file, so a typo never silently changes behaviour.
func Load(path string) (Config, error) {
	c := Default()
	md, err := toml.DecodeFile(path, &c)
	if err != nil {
		return Config{}, fmt.Errorf("%s: %w", path, err)
	}
	if und := md.Undecoded(); len(und) > 0 {
		keys := make([]string, len(und))
		for i, k := range und {
			keys[i] = k.String()
		}
		return Config{}, fmt.Errorf("%s: unknown keys: %s (see etc/glean.toml for the valid ones)", path, strings.Join(keys, ", "))
	}
	if err := c.Validate(); err != nil {
		return Config{}, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}

// minPeriod is the least slurm.timeout, daemon.interval (but for 0) and
// daemon.rescan.
const minPeriod = time.Second

// Validate reports every problem at once.
func (c Config) Validate() error {
	var errs []error
	bad := func(key, format string, a ...any) {
		errs = append(errs, fmt.Errorf("%s: "+format, append([]any{key}, a...)...))
	}
	if c.Slurm.RealSbatch != "" && !filepath.IsAbs(c.Slurm.RealSbatch) {
		bad("slurm.real_sbatch", "must be an absolute path, not %q", c.Slurm.RealSbatch)
	}
	// Below a second these are typos ("1ns" for "1m"): every Slurm command
	// would time out, gleand would spin its rounds or rescans.
	if d := c.Slurm.Timeout.Duration; d < minPeriod {
		bad("slurm.timeout", "must be at least %v, not %v", minPeriod, d)
	}
	if c.Partitions.Pilot == "" {
		bad("partitions.pilot", "must name the pilot partition")
	}
	if c.Partitions.Anchor == "" {
		bad("partitions.anchor", "must name the anchor partition")
	}
	if c.Spool.Dir == "" || !filepath.IsAbs(c.Spool.Dir) {
		bad("spool.dir", "must be an absolute path, not %q", c.Spool.Dir)
	}
	if c.Spool.Group == "" {
		bad("spool.group", "must name a group")
	}
	if c.Spool.MaxEntryBytes <= 0 || c.Spool.MaxScriptBytes <= 0 {
		bad("spool.max_entry_bytes/max_script_bytes", "must be positive")
	}
	switch c.Policy.DefaultMode {
	case "fair", "scavenger":
	case "thesis":
		if !c.Policy.AllowThesis {
			bad("policy.default_mode", "thesis needs policy.allow_thesis = true")
		}
	default:
		bad("policy.default_mode", "must be fair or scavenger, not %q", c.Policy.DefaultMode)
	}
	if c.Policy.Margin.Duration < 0 || c.Policy.Grace.Duration < 0 || c.Policy.MinPilotTime.Duration < time.Minute {
		bad("policy", "margin and grace must not be negative; min_pilot_time at least 1m (Slurm's unit)")
	}
	if c.Policy.MaxPendingPilots < 1 || c.Policy.MaxPilots < 0 {
		bad("policy.max_pending_pilots", "must be at least 1 (and max_pilots >= 0)")
	}
	if c.Limits.MaxJobsPerUser < 1 || c.Limits.MaxTasksPerUser < 1 || c.Limits.MaxTasksPerJob < 1 {
		bad("limits", "every cap must be at least 1")
	}
	if c.Limits.MaxEntriesPerRound < 1 {
		bad("limits.max_entries_per_round", "must be at least 1, not %d: a round takes that many of a user's new entries in", c.Limits.MaxEntriesPerRound)
	}
	if c.Limits.TaskRetries < 0 {
		bad("limits.task_retries", "must not be negative")
	}
	if c.Limits.MaxAttempts < 1 || c.Limits.MaxAttempts <= c.Limits.TaskRetries {
		bad("limits.max_attempts", "must be at least 1 and more than task_retries, not %d", c.Limits.MaxAttempts)
	}
	if c.Limits.MaxWaste.Duration < 0 {
		bad("limits.max_waste", "must not be negative (0: no cap)")
	}
	if r := c.Checkpoint.Root; r != "" && (!filepath.IsAbs(r) || filepath.Clean(r) != r || r == "/") {
		bad("checkpoint.root", "must be \"\" ($HOME/.glean/checkpoints) or a clean absolute path, not %q", r)
	}
	if cmd := c.Checkpoint.Command; cmd != "" && (!filepath.IsAbs(cmd) || filepath.Clean(cmd) != cmd) {
		bad("checkpoint.command", "must be \"\" or a clean absolute path, not %q", cmd)
	}
	if c.Checkpoint.KeepCompleted.Duration < 0 || c.Checkpoint.KeepFailed.Duration < 0 {
		bad("checkpoint.keep_completed/keep_failed", "must not be negative")
	}
	if c.Daemon.HeartbeatTimeout.Duration < 10*time.Second {
		bad("daemon.heartbeat_timeout", "must be at least 10s (agents refresh their leases every 5s)")
	}
	for key, p := range map[string]string{"helper.agent": c.Helper.Agent, "helper.pilot_script": c.Helper.PilotScript} {
		if !filepath.IsAbs(p) || filepath.Clean(p) != p {
			bad(key, "must be a clean absolute path, not %q", p)
		}
	}
	if c.Helper.MinUID < 1 {
		bad("helper.min_uid", "must be at least 1: glean never acts for root")
	}
	if c.Daemon.User == "" {
		bad("daemon.user", "must name the daemon's user")
	}
	if d := c.Daemon.Interval.Duration; d != 0 && d < minPeriod {
		bad("daemon.interval", "must be 0 (one scheduling cycle, the cluster's bf_interval) or at least %v, not %v", minPeriod, d)
	}
	if d := c.Daemon.Rescan.Duration; d < minPeriod {
		bad("daemon.rescan", "must be at least %v, not %v", minPeriod, d)
	}
	if a := c.Daemon.MetricsListen; a != "" {
		if _, port, err := net.SplitHostPort(a); err != nil || port == "" {
			bad("daemon.metrics_listen", "must be \"\" or host:port (e.g. \"127.0.0.1:9808\"), not %q", a)
		}
	}
	if s := c.Helper.Socket; s != "" && (!filepath.IsAbs(s) || filepath.Clean(s) != s || len(s) > maxSocketPath || filepath.Dir(s) == "/") {
		bad("helper.socket", "must be \"\" or a clean absolute path under a directory of its own, at most %d bytes, not %q", maxSocketPath, s)
	}
	return errors.Join(errs...)
}

// IsElastic reports whether the config marks a partition elastic.
func (c Config) IsElastic(partition string) bool {
	for _, p := range c.Partitions.Elastic {
		if p == partition {
			return true
		}
	}
	return false
}
