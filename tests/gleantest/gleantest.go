// Package gleantest sets up the whole of glean on a loopback Slurm for
// end-to-end tests: the glean user and a test user (created with useradd
// if missing), a spool as a package would install it, the binaries built
// from this checkout, the real glean-helper as root and the real gleand as
// the glean user, and sbatch run as the test user with the wrapper first
// in PATH.
package gleantest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/glean-hpc/glean/sidecar/spool"
	"github.com/glean-hpc/glean/sidecar/submit"
	"github.com/glean-hpc/glean/tests/slurmtest"
)

// Users the tests run as: TestUser submits; TestUser2 is a second user
// for the isolation tests (tests/isolation).
const (
	GleanUser = "glean"
	TestUser  = "gleantest"
	TestUser2 = "gleantest2"
)

// BasePath is PATH without the wrapper: where the real sbatch is.
const BasePath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// Env is one installation of glean on a cluster.
type Env struct {
	C        *slurmtest.Cluster
	Dir      string // root of its files (0755)
	Bin      string // glean, gleand, glean-agent, glean-helper
	Wrappers string // wrappers/sbatch
	Work     string // the test user's working directory
	Spool    string
	Config   string
	Helper   string // the helper's socket
	UID, GID int    // the test user
	Work2    string // the second user's working directory
	UID2     int    // the second user
	GID2     int
	GleanUID int
	GleanGID int

	// DaemonEnv is added to gleand's environment at its next start (e.g.
	// GLEAN_FAILPOINT=name for crash tests).
	DaemonEnv []string

	daemon, helper *exec.Cmd
	daemonDone     chan struct{} // closed when the current gleand exits
	daemonStatus   error
}

// Options shape the installation's glean.toml.
type Options struct {
	Grace  string // policy.grace; default "10s"
	Margin string // policy.margin; default glean's own (config.Default)
	Extra  string // appended to the file (whole tables)
	// NoWatch runs gleand with fsnotify off (periodic rescan only), as on
	// a shared filesystem where inotify sees nothing other hosts write.
	NoWatch bool
	// AllowThesis sets policy.allow_thesis (mode=thesis is admin-only).
	AllowThesis bool
	// MetricsListen sets daemon.metrics_listen (host:port).
	MetricsListen string
}

// RepoRoot is the checkout's top directory.
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// New installs glean for the cluster c. The caller stops it with Stop.
func New(c *slurmtest.Cluster, opt Options) (*Env, error) {
	// The cluster's directory and munge socket must be reachable by the
	// test user (the key stays root's, mode 0400).
	if err := os.Chmod(c.Dir, 0o755); err != nil {
		return nil, err
	}
	if err := os.Chmod(filepath.Join(c.Dir, "munge"), 0o711); err != nil {
		return nil, err
	}
	if err := ensureUsers(); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("/tmp", "glenv-")
	if err != nil {
		return nil, err
	}
	e := &Env{C: c, Dir: dir, Bin: filepath.Join(dir, "bin"), Wrappers: filepath.Join(dir, "wrappers"),
		Work: filepath.Join(dir, "work"), Work2: filepath.Join(dir, "work2"), Spool: filepath.Join(dir, "spool"), Config: filepath.Join(dir, "glean.toml"),
		Helper: filepath.Join(dir, "run", "helper.sock")}
	u, _ := user.Lookup(TestUser)
	e.UID, _ = strconv.Atoi(u.Uid)
	e.GID, _ = strconv.Atoi(u.Gid)
	u2, _ := user.Lookup(TestUser2)
	e.UID2, _ = strconv.Atoi(u2.Uid)
	e.GID2, _ = strconv.Atoi(u2.Gid)
	g, _ := user.LookupGroup(GleanUser)
	e.GleanGID, _ = strconv.Atoi(g.Gid)
	gu, _ := user.Lookup(GleanUser)
	e.GleanUID, _ = strconv.Atoi(gu.Uid)
	if err := os.Chmod(dir, 0o755); err != nil {
		return nil, err
	}
	build := exec.Command("go", "build", "-o", e.Bin+"/", "./cmd/glean", "./cmd/gleand", "./cmd/glean-agent", "./cmd/glean-helper")
	build.Dir = RepoRoot()
	if out, err := build.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("go build: %v: %s", err, out)
	}
	for _, f := range []struct{ src, dst string }{
		{"wrappers/sbatch", filepath.Join(e.Wrappers, "sbatch")},
		{"wrappers/glean.sh", filepath.Join(e.Wrappers, "glean.sh")},
		{"jobscripts/pilot.sh", filepath.Join(dir, "libexec", "pilot.sh")},
	} {
		data, err := os.ReadFile(filepath.Join(RepoRoot(), f.src))
		if err != nil {
			return nil, err
		}
		if f.src == "wrappers/sbatch" { // its first line names this build's glean
			if data, err = submit.PointWrapper(data, filepath.Join(e.Bin, "glean")); err != nil {
				return nil, err
			}
		}
		if err := os.MkdirAll(filepath.Dir(f.dst), 0o755); err != nil {
			return nil, err
		}
		if err := os.WriteFile(f.dst, data, 0o755); err != nil {
			return nil, err
		}
	}
	for _, w := range []struct {
		dir      string
		uid, gid int
	}{{e.Work, e.UID, e.GID}, {e.Work2, e.UID2, e.GID2}} {
		if err := os.MkdirAll(w.dir, 0o755); err != nil {
			return nil, err
		}
		if err := os.Chown(w.dir, w.uid, w.gid); err != nil {
			return nil, err
		}
	}
	if opt.Grace == "" {
		opt.Grace = "10s"
	}
	margin := ""
	if opt.Margin != "" {
		margin = fmt.Sprintf("margin = %q\n", opt.Margin)
	}
	if opt.AllowThesis {
		margin += "allow_thesis = true\n"
	}
	text := fmt.Sprintf(`[slurm]
timeout = "30s"
[partitions]
anchor = "glean"
pilot = "pilot"
[spool]
dir = %q
[policy]
grace = %q
%smin_pilot_time = "1m"
max_pending_pilots = 24
[limits]
max_tasks_per_job = 200000
[daemon]
rescan = "1s"
watch = %v
heartbeat_timeout = "20s"
metrics_listen = %q
[helper]
socket = %q
agent = %q
pilot_script = %q
%s`, e.Spool, opt.Grace, margin, !opt.NoWatch, opt.MetricsListen, e.Helper, filepath.Join(e.Bin, "glean-agent"), filepath.Join(dir, "libexec", "pilot.sh"), opt.Extra)
	if err := os.WriteFile(e.Config, []byte(text), 0o644); err != nil {
		return nil, err
	}
	if err := e.initSpool(); err != nil {
		return nil, err
	}
	return e, nil
}

// initSpool creates the spool's top directories, the daemon's user's, as
// a package would install them.
func (e *Env) initSpool() error {
	sp := &spool.Spool{Dir: e.Spool}
	rs, err := sp.Init(e.GleanGID)
	if err != nil {
		return err
	}
	rs.Close()
	if err := os.Chmod(e.Spool, 0o755); err != nil {
		return err
	}
	for _, d := range []string{e.Spool, filepath.Join(e.Spool, spool.UsersDir), filepath.Join(e.Spool, spool.JobsDir), filepath.Join(e.Spool, spool.EndedDir)} {
		if err := os.Lchown(d, e.GleanUID, e.GleanGID); err != nil {
			return err
		}
	}
	return os.Chmod(filepath.Join(e.Spool, spool.UsersDir), spool.UsersMode) // chown cleared setgid
}

func ensureUsers() error {
	for _, args := range [][]string{
		{"groupadd", "--system", GleanUser},
		{"useradd", "--system", "--gid", GleanUser, "--no-create-home", "--shell", "/usr/sbin/nologin", GleanUser},
		{"useradd", "--user-group", "--no-create-home", "--shell", "/bin/sh", TestUser},
		{"useradd", "--user-group", "--no-create-home", "--shell", "/bin/sh", TestUser2},
	} {
		name := args[len(args)-1]
		if args[0] == "groupadd" {
			if _, err := user.LookupGroup(name); err == nil {
				continue
			}
		} else if _, err := user.Lookup(name); err == nil {
			continue
		}
		if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
			return fmt.Errorf("%v: %v: %s", args, err, out)
		}
	}
	return nil
}

// Start runs glean-helper as root and gleand as the glean user.
func (e *Env) Start(tb testing.TB) {
	tb.Helper()
	if err := e.Launch(); err != nil {
		tb.Fatal(err)
	}
}

// Launch is Start for programs (make demo): it returns what went wrong.
func (e *Env) Launch() error {
	start := func(name string, cred *syscall.Credential) (*exec.Cmd, error) {
		cmd := exec.Command(filepath.Join(e.Bin, name), "-config", e.Config)
		cmd.Env = []string{"PATH=" + BasePath, "SLURM_CONF=" + e.C.Conf}
		if name == "gleand" {
			cmd.Env = append(cmd.Env, e.DaemonEnv...)
		}
		logf, err := os.OpenFile(filepath.Join(e.Dir, name+".log"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
		if err != nil {
			return nil, err
		}
		defer logf.Close()
		cmd.Stdout, cmd.Stderr = logf, logf
		if cred != nil {
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
		}
		return cmd, cmd.Start()
	}
	if e.helper == nil {
		h, err := start("glean-helper", nil)
		if err != nil {
			return err
		}
		e.helper = h
		if err := slurmtest.Poll(10*time.Second, 50*time.Millisecond, func() bool {
			st, err := os.Stat(e.Helper)
			return err == nil && st.Mode()&os.ModeSocket != 0
		}); err != nil {
			return fmt.Errorf("glean-helper's socket did not appear: %v\n%s", err, e.Logs())
		}
	}
	if e.daemon == nil {
		d, err := start("gleand", &syscall.Credential{Uid: uint32(e.GleanUID), Gid: uint32(e.GleanGID)})
		if err != nil {
			return err
		}
		e.daemon = d
		done := make(chan struct{})
		e.daemonDone = done
		go func() {
			e.daemonStatus = d.Wait()
			close(done)
		}()
	}
	return nil
}

// DaemonDone is closed when the running gleand exits; DaemonStatus is then
// its Wait error.
func (e *Env) DaemonDone() <-chan struct{} { return e.daemonDone }

// DaemonStatus is how the last gleand ended (after DaemonDone).
func (e *Env) DaemonStatus() error { return e.daemonStatus }

// DaemonPID is the running gleand's pid, or 0.
func (e *Env) DaemonPID() int {
	if e.daemon == nil || e.daemon.Process == nil {
		return 0
	}
	return e.daemon.Process.Pid
}

// HelperPID is the running glean-helper's pid, or 0.
func (e *Env) HelperPID() int {
	if e.helper == nil || e.helper.Process == nil {
		return 0
	}
	return e.helper.Process.Pid
}

// ForgetDaemon clears a gleand that exited by itself (a failpoint), so
// that Start starts a new one.
func (e *Env) ForgetDaemon() {
	if e.daemonDone != nil {
		<-e.daemonDone
	}
	e.daemon = nil
}

// KillDaemon kills gleand with SIGKILL (crash tests); Start restarts it.
func (e *Env) KillDaemon() {
	if e.daemon != nil && e.daemon.Process != nil {
		_ = e.daemon.Process.Kill()
		<-e.daemonDone
	}
	e.daemon = nil
}

// Stop stops gleand, then glean-helper.
func (e *Env) Stop() {
	if e.daemon != nil && e.daemon.Process != nil {
		_ = e.daemon.Process.Signal(syscall.SIGTERM)
		<-e.daemonDone
		e.daemon = nil
	}
	if e.helper != nil && e.helper.Process != nil {
		_ = e.helper.Process.Signal(syscall.SIGTERM)
		_ = e.helper.Wait()
		e.helper = nil
	}
}

// Logs are gleand's and glean-helper's logs, for a failing test.
func (e *Env) Logs() string {
	var b strings.Builder
	for _, n := range []string{"gleand", "glean-helper"} {
		data, _ := os.ReadFile(filepath.Join(e.Dir, n+".log"))
		fmt.Fprintf(&b, "==== %s.log ====\n%s\n", n, tail(string(data), 60))
	}
	return b.String()
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// Result is what a command printed.
type Result struct {
	Stdout, Stderr string
	Code           int
}

// AsUser runs name with args as the test user from its working directory,
// with the wrapper first in PATH (through sh, as from a login shell).
func (e *Env) AsUser(tb testing.TB, stdin, name string, args ...string) Result {
	tb.Helper()
	return e.As(tb, e.User1(), stdin, name, args...)
}

// Who is a user the tests run commands as.
type Who struct {
	Name     string
	UID, GID int
	Work     string // its working directory (HOME)
}

// User1 is the test user, User2 the second one.
func (e *Env) User1() Who { return Who{TestUser, e.UID, e.GID, e.Work} }
func (e *Env) User2() Who { return Who{TestUser2, e.UID2, e.GID2, e.Work2} }

// As is AsUser for any user.
func (e *Env) As(tb testing.TB, w Who, stdin, name string, args ...string) Result {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	r, err := e.ExecAs(ctx, w, stdin, name, args...)
	if err != nil {
		tb.Fatalf("%s: %v", name, err)
	}
	return r
}

// Sbatch submits as the test user and returns the job id printed.
func (e *Env) Sbatch(tb testing.TB, script string, args ...string) string {
	tb.Helper()
	return e.SbatchAs(tb, e.User1(), script, args...)
}

// SbatchAs is Sbatch for any user.
func (e *Env) SbatchAs(tb testing.TB, w Who, script string, args ...string) string {
	tb.Helper()
	r := e.As(tb, w, script, "sbatch", append([]string{"--parsable"}, args...)...)
	if r.Code != 0 {
		tb.Fatalf("sbatch %v as %s: exit %d: %s%s", args, w.Name, r.Code, r.Stdout, r.Stderr)
	}
	id, _, _ := strings.Cut(strings.TrimSpace(r.Stdout), ";")
	if _, err := strconv.Atoi(id); err != nil {
		tb.Fatalf("sbatch %v printed %q", args, r.Stdout)
	}
	return id
}

// WriteFile writes a file in the test user's working directory.
func (e *Env) WriteFile(tb testing.TB, name, content string, mode os.FileMode) string {
	tb.Helper()
	p := filepath.Join(e.Work, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), mode); err != nil {
		tb.Fatal(err)
	}
	for d := p; d != e.Work; d = filepath.Dir(d) {
		if err := os.Chown(d, e.UID, e.GID); err != nil {
			tb.Fatal(err)
		}
	}
	return p
}

// Record returns the daemon's record of the job with this anchor, or nil.
func (e *Env) Record(tb testing.TB, anchor string) *spool.Record {
	tb.Helper()
	return e.LoadRecord(anchor)
}

// TaskEvents returns the journal's task events of the job with this anchor.
func (e *Env) TaskEvents(tb testing.TB, anchor string) []spool.TaskEvent {
	tb.Helper()
	evs, err := e.LoadTaskEvents(anchor)
	if err != nil {
		tb.Fatal(err)
	}
	return evs
}

// WaitState polls until the anchor's record is in state; it fails the
// test with the daemon's logs otherwise.
func (e *Env) WaitState(tb testing.TB, anchor string, timeout time.Duration, states ...string) *spool.Record {
	tb.Helper()
	var r *spool.Record
	err := slurmtest.Poll(timeout, 250*time.Millisecond, func() bool {
		r = e.Record(tb, anchor)
		if r == nil {
			return false
		}
		for _, s := range states {
			if r.State == s {
				return true
			}
		}
		return false
	})
	if err != nil {
		got := "no record"
		if r != nil {
			got = fmt.Sprintf("%s (%+v)", r.State, r.Tasks)
		}
		tb.Fatalf("job %s: not %v within %v: %s\n%s", anchor, states, timeout, got, e.Logs())
	}
	return r
}

// SlurmState is a job's state and exit code ("3:0") as scontrol shows
// them (the loopback cluster keeps ended jobs for MinJobAge, 600 s).
func (e *Env) SlurmState(tb testing.TB, id string) (state, exit string) {
	tb.Helper()
	out, err := e.C.Output(context.Background(), "scontrol", "-o", "show", "job", id)
	if err != nil {
		return "", ""
	}
	for _, f := range strings.Fields(out) {
		if v, ok := strings.CutPrefix(f, "JobState="); ok {
			state = v
		}
		if v, ok := strings.CutPrefix(f, "ExitCode="); ok {
			exit = v
		}
	}
	return state, exit
}
