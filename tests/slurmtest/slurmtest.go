// Package slurmtest starts a private loopback Slurm cluster for integration
// tests, through tests/loopback-slurm.sh, and tears it down by PID.
//
// A test package usually starts one cluster in TestMain (Main) and shares it;
// tests that need a cluster of their own call Start. Every cluster takes its
// own block of ports, so test packages run their clusters in parallel.
//
// Without root or without Slurm installed the tests are skipped, unless
// GLEAN_REQUIRE_SLURM=1 (set by `make test`), where that is a failure.
package slurmtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// Options shape a cluster.
type Options struct {
	Nodes      int    // compute nodes c1..cN; default 24
	Select     string // "linear" (default) or "cons_tres"
	BFInterval int    // seconds; default 1
	// SchedInterval is the main scheduler's sched_interval in seconds;
	// default 1 (Slurm's own default is 60).
	SchedInterval int
	// SchedulerParameters replaces the fast test settings
	// (bf_interval=BFInterval,sched_interval=SchedInterval,bf_resolution=1)
	// in full; "default" leaves them all at Slurm's defaults (bf_interval=30,
	// sched_interval=60, bf_resolution=60), as a site runs them.
	SchedulerParameters string
	Spank               string // SPANK plugin to load (`optional PATH` in plugstack.conf); "" loads none
}

// Cluster is a running loopback cluster.
type Cluster struct {
	Dir     string        // its files: slurm.conf, log/, state/
	Conf    string        // path of slurm.conf
	Nodes   int           // compute nodes (the glean partition's g1 comes on top)
	Startup time.Duration // wall time of `loopback-slurm.sh up`
}

// Script is the path of tests/loopback-slurm.sh.
func Script() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "loopback-slurm.sh")
}

// Unavailable says why no cluster can be started here, or "" if one can.
func Unavailable() string {
	if os.Geteuid() != 0 {
		return "loopback Slurm needs root (slurmd starts jobs as their users)"
	}
	for _, b := range []string{"slurmctld", "slurmd", "munged", "sbatch"} {
		if _, err := exec.LookPath(b); err != nil {
			return fmt.Sprintf("%s not found: run `%s install` as root", b, Script())
		}
	}
	return ""
}

func required() bool { return os.Getenv("GLEAN_REQUIRE_SLURM") == "1" }

// Up starts a cluster. The caller must Down it.
func Up(opt Options) (*Cluster, error) {
	if opt.Nodes == 0 {
		opt.Nodes = 24
	}
	if opt.Select == "" {
		opt.Select = "linear"
	}
	if opt.BFInterval == 0 {
		opt.BFInterval = 1
	}
	if opt.SchedInterval == 0 {
		opt.SchedInterval = 1
	}
	// Unix socket paths are limited to 108 bytes: keep the directory short.
	dir, err := os.MkdirTemp("/tmp", "gls-")
	if err != nil {
		return nil, err
	}
	c := &Cluster{Dir: dir, Conf: filepath.Join(dir, "slurm.conf"), Nodes: opt.Nodes}
	start := time.Now()
	args := []string{"up", dir, "--nodes", fmt.Sprint(opt.Nodes),
		"--select", opt.Select, "--bf-interval", fmt.Sprint(opt.BFInterval), "--sched-interval", fmt.Sprint(opt.SchedInterval)}
	if opt.Spank != "" {
		args = append(args, "--spank", opt.Spank)
	}
	if opt.SchedulerParameters != "" {
		args = append(args, "--sched-params", opt.SchedulerParameters)
	}
	cmd := exec.Command(Script(), args...)
	out, err := cmd.CombinedOutput()
	c.Startup = time.Since(start)
	if err != nil {
		logs := c.Logs()
		_ = c.Down()
		return nil, fmt.Errorf("loopback-slurm up: %v: %s\n%s", err, out, logs)
	}
	return c, nil
}

// Down cancels all jobs, stops the daemons by PID and releases the ports.
// The directory (with the logs) is kept; Remove deletes it.
func (c *Cluster) Down() error {
	out, err := exec.Command(Script(), "down", c.Dir).CombinedOutput()
	if err != nil {
		return fmt.Errorf("loopback-slurm down: %v: %s", err, out)
	}
	return nil
}

// StopController stops slurmctld alone (outage tests); slurmd and the
// running jobs go on.
func (c *Cluster) StopController() error {
	out, err := exec.Command(Script(), "ctld-stop", c.Dir).CombinedOutput()
	if err != nil {
		return fmt.Errorf("loopback-slurm ctld-stop: %v: %s", err, out)
	}
	return nil
}

// StartController starts slurmctld again from its saved state and waits
// until it answers.
func (c *Cluster) StartController() error {
	out, err := exec.Command(Script(), "ctld-start", c.Dir).CombinedOutput()
	if err != nil {
		return fmt.Errorf("loopback-slurm ctld-start: %v: %s", err, out)
	}
	return nil
}

// Outage stops slurmctld (StopController) and returns the function that
// starts it again; the test's cleanup starts it if the test did not.
func (c *Cluster) Outage(tb testing.TB) (restart func() error) {
	tb.Helper()
	if err := c.StopController(); err != nil {
		tb.Fatal(err)
	}
	var once sync.Once
	var err error
	restart = func() error {
		once.Do(func() { err = c.StartController() })
		return err
	}
	tb.Cleanup(func() { _ = restart() })
	return restart
}

// Remove deletes the cluster's directory.
func (c *Cluster) Remove() { _ = os.RemoveAll(c.Dir) }

// Logs returns the tail of the controller's log and of every daemon log that
// mentions an error, for the output of a failed test.
func (c *Cluster) Logs() string {
	var b strings.Builder
	files, _ := filepath.Glob(filepath.Join(c.Dir, "log", "*.log"))
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
		if !strings.HasSuffix(f, "slurmctld.log") {
			lines = errorLines(lines)
			if len(lines) == 0 {
				continue
			}
		}
		if len(lines) > 40 {
			lines = lines[len(lines)-40:]
		}
		fmt.Fprintf(&b, "==> %s <==\n%s\n", f, strings.Join(lines, "\n"))
	}
	return b.String()
}

// errorLines keeps a daemon log's errors, less the noise every slurmd
// prints on a machine without PMIx or hwloc.
func errorLines(lines []string) []string {
	var out []string
	for _, l := range lines {
		if strings.Contains(l, "error") && !strings.Contains(l, "pmix") && !strings.Contains(l, "hwloc") && !strings.Contains(l, "MPI:") {
			out = append(out, l)
		}
	}
	return out
}

// Start starts a cluster for one test and stops it when the test ends,
// printing the daemons' logs if the test failed.
func Start(tb testing.TB, opt Options) *Cluster {
	tb.Helper()
	if why := Unavailable(); why != "" {
		if required() {
			tb.Fatalf("GLEAN_REQUIRE_SLURM=1 but %s", why)
		}
		tb.Skip(why)
	}
	c, err := Up(opt)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Logf("loopback Slurm with %d nodes up in %v (%s)", c.Nodes, c.Startup.Round(time.Millisecond), c.Dir)
	tb.Cleanup(func() {
		if tb.Failed() {
			tb.Logf("daemon logs (kept in %s):\n%s", c.Dir, c.Logs())
		}
		if err := c.Down(); err != nil {
			tb.Error(err)
		}
		if !tb.Failed() {
			c.Remove()
		}
	})
	return c
}

// Main runs a test package against one shared cluster: call it from
// TestMain. It returns the exit code for os.Exit. *shared is set before the
// tests run; if no cluster can be had, tests see nil and should call Need.
func Main(m *testing.M, opt Options, shared **Cluster) int {
	if why := Unavailable(); why != "" {
		if required() {
			fmt.Fprintf(os.Stderr, "GLEAN_REQUIRE_SLURM=1 but %s\n", why)
			return 1
		}
		unavailable = why
		return m.Run()
	}
	c, err := Up(opt)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Fprintf(os.Stderr, "loopback Slurm with %d nodes up in %v (%s)\n", c.Nodes, c.Startup.Round(time.Millisecond), c.Dir)
	*shared = c
	code := m.Run()
	if code != 0 {
		fmt.Fprintf(os.Stderr, "daemon logs (kept in %s):\n%s", c.Dir, c.Logs())
	}
	if err := c.Down(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		code = 1
	}
	if code == 0 {
		c.Remove()
	}
	return code
}

var unavailable string

// SetPlugstack rewrites the cluster's plugstack.conf to line (a SPANK
// plugin and its arguments; "" for none). slurmstepd and the spank job
// prolog/epilog read it at each job; slurmd's list of plugin hooks is the
// one it started with (start the cluster with Options.Spank for an epilog
// plugin).
func (c *Cluster) SetPlugstack(line string) error {
	if line != "" {
		line += "\n"
	}
	return os.WriteFile(filepath.Join(c.Dir, "plugstack.conf"), []byte(line), 0o644)
}

// Need skips (or fails) a test when Main could not start a cluster.
func Need(tb testing.TB, c *Cluster) {
	tb.Helper()
	if c == nil {
		tb.Skip(unavailable)
	}
}

// Env is the environment for Slurm commands against this cluster.
func (c *Cluster) Env() []string {
	return append(os.Environ(), "SLURM_CONF="+c.Conf, "SLURM_TIME_FORMAT=%s")
}

// Command builds a Slurm client command against this cluster.
func (c *Cluster) Command(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = c.Env()
	cmd.Dir = c.Dir
	return cmd
}

// Output runs a Slurm client command, for at most 30 s within ctx, and
// returns its stdout; the error carries the command and its stderr. It needs
// no testing.TB, so goroutines other than the test's may call it.
func (c *Cluster) Output(ctx context.Context, name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var stderr bytes.Buffer
	cmd := c.Command(ctx, name, args...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, stderr.String())
	}
	return string(out), nil
}

// Run runs a Slurm client command and returns its stdout; a failure fails the test.
func (c *Cluster) Run(tb testing.TB, name string, args ...string) string {
	tb.Helper()
	out, err := c.Output(context.Background(), name, args...)
	if err != nil {
		tb.Fatal(err)
	}
	return out
}

// Submit runs `sbatch --parsable args...` and returns the job id.
func (c *Cluster) Submit(tb testing.TB, args ...string) string {
	tb.Helper()
	out := strings.TrimSpace(c.Run(tb, "sbatch", append([]string{"--parsable"}, args...)...))
	id, _, _ := strings.Cut(out, ";")
	return id
}

// ErrTimeout is returned by Poll when the deadline passes.
var ErrTimeout = errors.New("timed out")

// Poll calls cond every interval until it returns true or timeout passes.
func Poll(timeout, interval time.Duration, cond func() bool) error {
	deadline := time.Now().Add(timeout)
	for {
		if cond() {
			return nil
		}
		if time.Now().After(deadline) {
			return ErrTimeout
		}
		time.Sleep(interval)
	}
}

// WaitFor fails the test if cond does not become true within timeout.
func (c *Cluster) WaitFor(tb testing.TB, timeout time.Duration, what string, cond func() bool) {
	tb.Helper()
	if err := Poll(timeout, 100*time.Millisecond, cond); err != nil {
		tb.Fatalf("waited %v for %s: %v", timeout, what, err)
	}
}

// JobField returns one squeue -o field of a job ("" if the job is gone).
func (c *Cluster) JobField(tb testing.TB, id, field string) string {
	tb.Helper()
	return strings.TrimSpace(c.Run(tb, "squeue", "-h", "-j", id, "-o", field))
}

// BFInterval reads bf_interval from `scontrol show config`: what "one
// scheduling cycle" means in every test.
func (c *Cluster) BFInterval(tb testing.TB) time.Duration {
	tb.Helper()
	out := c.Run(tb, "scontrol", "show", "config")
	for _, line := range strings.Split(out, "\n") {
		k, v, ok := strings.Cut(line, "=")
		if !ok || strings.TrimSpace(k) != "SchedulerParameters" {
			continue
		}
		for _, p := range strings.Split(strings.TrimSpace(v), ",") {
			if n, ok := strings.CutPrefix(p, "bf_interval="); ok {
				var s int
				if _, err := fmt.Sscan(n, &s); err == nil {
					return time.Duration(s) * time.Second
				}
			}
		}
	}
	return 30 * time.Second // Slurm's default
}

// CancelAll cancels every job, and waits until squeue shows none.
func (c *Cluster) CancelAll(tb testing.TB) {
	tb.Helper()
	ids := strings.Fields(c.Run(tb, "squeue", "-h", "-o", "%A"))
	if len(ids) > 0 {
		c.Run(tb, "scancel", ids...)
	}
	c.WaitFor(tb, 30*time.Second, "all jobs to end", func() bool {
		return strings.TrimSpace(c.Run(tb, "squeue", "-h", "-o", "%A")) == ""
	})
}

// BackfillCycles returns sdiag's count of completed backfill cycles.
func (c *Cluster) BackfillCycles(tb testing.TB) int {
	tb.Helper()
	return c.sdiagCycles(tb, "Backfilling stats", "")
}

// MainCycles returns sdiag's count of the main scheduler's runs.
func (c *Cluster) MainCycles(tb testing.TB) int {
	tb.Helper()
	return c.sdiagCycles(tb, "Main schedule statistics", "Backfilling stats")
}

// sdiagCycles reads "Total cycles:" from sdiag's section that starts at
// header (and ends at next, if given).
func (c *Cluster) sdiagCycles(tb testing.TB, header, next string) int {
	tb.Helper()
	out := c.Run(tb, "sdiag")
	_, rest, ok := strings.Cut(out, header)
	if !ok {
		tb.Fatalf("sdiag printed no %q:\n%s", header, out)
	}
	if next != "" {
		rest, _, _ = strings.Cut(rest, next)
	}
	for _, line := range strings.Split(rest, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "Total cycles:"); ok {
			var n int
			if _, err := fmt.Sscan(strings.TrimSpace(v), &n); err == nil {
				return n
			}
		}
	}
	tb.Fatalf("sdiag printed no cycle count under %q:\n%s", header, out)
	return 0
}

// WaitCycles waits until the backfill scheduler has completed n more cycles,
// so that "still pending after n cycles" is observed, not slept for.
func (c *Cluster) WaitCycles(tb testing.TB, n int) {
	tb.Helper()
	start := c.BackfillCycles(tb)
	limit := time.Duration(n+5) * 3 * c.BFInterval(tb)
	c.WaitFor(tb, limit, fmt.Sprintf("%d backfill cycles", n), func() bool {
		return c.BackfillCycles(tb) >= start+n
	})
}

// UnavailableReason is why Main started no cluster ("" if it did or was not called).
func UnavailableReason() string { return unavailable }

// Resume returns drained or downed nodes to service and waits until they
// respond again: a resumed node reads "idle*" until its next ping.
func (c *Cluster) Resume(tb testing.TB, nodes ...string) {
	tb.Helper()
	list := strings.Join(nodes, ",")
	c.Run(tb, "scontrol", "update", "nodename="+list, "state=resume")
	c.WaitFor(tb, 30*time.Second, "nodes "+list+" idle", func() bool {
		out := c.Run(tb, "sinfo", "-h", "-N", "-n", list, "-o", "%T")
		return strings.TrimSpace(out) != "" && len(strings.Fields(strings.ReplaceAll(out, "idle", ""))) == 0
	})
}
