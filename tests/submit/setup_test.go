// Package submit tests glean's submission path against a real loopback
// Slurm 22.05: the drop-in sbatch wrapper (pass-through and elastic), the
// anchor job, the spool entry, the daemon's intake and the CLI.
//
// The wrapper runs as an ordinary user (created with useradd if missing)
// through SysProcAttr.Credential, so the spool's ownership checks are the
// real ones. gleand runs as the glean user and its privileged actions go
// through glean-helper, run as root, which the loopback Slurm accepts as
// an administrator (docs/submission.md says what that does and does not
// prove). BenchmarkIntake10k runs the intake in-process as root.
package submit

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/glean-hpc/glean/sidecar/config"
	"github.com/glean-hpc/glean/sidecar/daemon"
	"github.com/glean-hpc/glean/sidecar/slurm"
	"github.com/glean-hpc/glean/sidecar/spool"
	"github.com/glean-hpc/glean/sidecar/submit"
	"github.com/glean-hpc/glean/tests/slurmtest"
)

var cl *slurmtest.Cluster

func TestMain(m *testing.M) {
	code := slurmtest.Main(m, slurmtest.Options{Nodes: 8}, &cl)
	stopDaemon()
	if shared != nil && code == 0 {
		os.RemoveAll(shared.Dir)
	}
	os.Exit(code)
}

// Test users: the daemon's and a submitting user.
const (
	gleanUser = "glean"
	testUser  = "gleantest"
)

// env is everything the tests share: binaries, users, spool, config.
type env struct {
	Dir      string // root of the test's files (mode 0755)
	Bin      string // glean, gleand, glean-agent, glean-helper, rawclient
	Helper   string // glean-helper's socket
	Wrappers string // a copy of wrappers/sbatch whose first line names Bin/glean
	Work     string // the test user's working directory
	Spool    string
	Config   string // glean.toml
	UID, GID int    // the test user
	GleanGID int
	GleanUID int
}

var (
	envOnce sync.Once
	shared  *env
	envErr  error
)

// setup returns the shared environment with no jobs left by earlier tests.
func setup(t *testing.T) *env {
	t.Helper()
	e := setupEnv(t)
	cancelAll(t)
	return e
}

// setupEnv returns the shared environment (for tests and benchmarks).
func setupEnv(tb testing.TB) *env {
	tb.Helper()
	slurmtest.Need(tb, cl)
	envOnce.Do(func() { shared, envErr = newEnv() })
	if envErr != nil {
		tb.Fatal(envErr)
	}
	return shared
}

// cancelAll cancels every job and waits until squeue shows none. Unlike
// slurmtest's, it tolerates heterogeneous jobs (whose components scancel
// refuses individually) by cancelling each id on its own.
func cancelAll(t testing.TB) {
	t.Helper()
	for _, id := range strings.Fields(cl.Run(t, "squeue", "-h", "-o", "%A")) {
		_ = cl.Command(context.Background(), "scancel", id).Run()
	}
	cl.WaitFor(t, 30*time.Second, "all jobs to end", func() bool {
		return strings.TrimSpace(cl.Run(t, "squeue", "-h", "-o", "%A")) == ""
	})
}

func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

func newEnv() (*env, error) {
	// The cluster's directory and munge socket must be reachable by the
	// test user (the key stays root's, mode 0400).
	if err := os.Chmod(cl.Dir, 0o755); err != nil {
		return nil, err
	}
	if err := os.Chmod(filepath.Join(cl.Dir, "munge"), 0o711); err != nil {
		return nil, err
	}
	for _, args := range [][]string{
		{"groupadd", "--system", gleanUser},
		{"useradd", "--system", "--gid", gleanUser, "--no-create-home", "--shell", "/usr/sbin/nologin", gleanUser},
		{"useradd", "--user-group", "--no-create-home", "--shell", "/bin/sh", testUser},
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
			return nil, fmt.Errorf("%v: %v: %s", args, err, out)
		}
	}
	dir, err := os.MkdirTemp("/tmp", "glsub-")
	if err != nil {
		return nil, err
	}
	e := &env{Dir: dir, Bin: filepath.Join(dir, "bin"), Wrappers: filepath.Join(dir, "wrappers"),
		Work: filepath.Join(dir, "work"), Spool: filepath.Join(dir, "spool"), Config: filepath.Join(dir, "glean.toml"),
		Helper: filepath.Join(dir, "run", "helper.sock")}
	u, _ := user.Lookup(testUser)
	e.UID, _ = strconv.Atoi(u.Uid)
	e.GID, _ = strconv.Atoi(u.Gid)
	g, _ := user.LookupGroup(gleanUser)
	e.GleanGID, _ = strconv.Atoi(g.Gid)
	gu, _ := user.Lookup(gleanUser)
	e.GleanUID, _ = strconv.Atoi(gu.Uid)
	if err := os.Chmod(dir, 0o755); err != nil {
		return nil, err
	}
	build := exec.Command("go", "build", "-o", e.Bin+"/", "./cmd/glean", "./cmd/gleand", "./cmd/glean-agent", "./cmd/glean-helper", "./tests/submit/rawclient")
	build.Dir = repoRoot()
	out, err := build.CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("go build: %v: %s", err, out)
	}
	if err := os.MkdirAll(e.Wrappers, 0o755); err != nil {
		return nil, err
	}
	wrapper, err := os.ReadFile(filepath.Join(repoRoot(), "wrappers", "sbatch"))
	if err != nil {
		return nil, err
	}
	// Its first line names this build's glean, as make install names the installed one.
	if wrapper, err = submit.PointWrapper(wrapper, filepath.Join(e.Bin, "glean")); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(e.Wrappers, "sbatch"), wrapper, 0o755); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(e.Work, 0o755); err != nil {
		return nil, err
	}
	if err := os.Chown(e.Work, e.UID, e.GID); err != nil {
		return nil, err
	}
	if err := e.writeConfig(e.Config, ""); err != nil {
		return nil, err
	}
	sp := &spool.Spool{Dir: e.Spool}
	rs, err := sp.Init(e.GleanGID)
	if err != nil {
		return nil, err
	}
	rs.Close()
	if err := os.Chmod(e.Spool, 0o755); err != nil {
		return nil, err
	}
	// The spool is the daemon's user's, as a package would install it.
	for _, d := range []string{e.Spool, filepath.Join(e.Spool, spool.UsersDir), filepath.Join(e.Spool, spool.JobsDir)} {
		if err := os.Lchown(d, e.GleanUID, e.GleanGID); err != nil {
			return nil, err
		}
	}
	if err := os.Chmod(filepath.Join(e.Spool, spool.UsersDir), spool.UsersMode); err != nil { // chown cleared setgid
		return nil, err
	}
	return e, nil
}

// writeConfig writes a glean.toml for this cluster; extra is appended to
// the [partitions] table.
func (e *env) writeConfig(path, extra string) error {
	text := fmt.Sprintf(`[slurm]
timeout = "30s"
[partitions]
anchor = "glean"
pilot = "pilot"
%s
[spool]
dir = %q
[policy]
allow_thesis = false
[limits]
max_tasks_per_job = 200000
[daemon]
rescan = "1s"
[helper]
socket = %q
`, extra, e.Spool, e.Helper)
	return os.WriteFile(path, []byte(text), 0o644)
}

// inv is one invocation of sbatch.
type inv struct {
	name  string
	args  []string
	stdin string
	env   []string // added to the base environment
	files map[string]string
}

// result is what the user sees.
type result struct {
	Stdout, Stderr string
	Code           int
}

// basePath is PATH without any wrapper: where the real sbatch is.
const basePath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// run runs sbatch as the test user from its working directory through sh,
// so PATH decides which sbatch runs, as in a login shell.
func (e *env) run(t testing.TB, wrapped bool, in inv, extraEnv ...string) result {
	t.Helper()
	path := basePath
	if wrapped {
		path = e.Wrappers + ":" + basePath
	}
	env := append([]string{"PATH=" + path, "HOME=" + e.Work, "USER=" + testUser, "LOGNAME=" + testUser,
		"SLURM_CONF=" + cl.Conf, "GLEAN_CONFIG=" + e.Config, "LANG=C"}, in.env...)
	env = append(env, extraEnv...)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "/bin/sh", append([]string{"-c", `exec sbatch "$@"`, "sh"}, in.args...)...)
	cmd.Env, cmd.Dir = env, e.Work
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(e.UID), Gid: uint32(e.GID)}}
	cmd.Stdin = strings.NewReader(in.stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			t.Fatalf("%s: %v", in.name, err)
		}
		code = ee.ExitCode()
	}
	return result{out.String(), errb.String(), code}
}

// writeFiles writes files into the work directory as the test user's.
func (e *env) writeFiles(t testing.TB, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(e.Work, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		for d := p; d != e.Work; d = filepath.Dir(d) {
			if err := os.Chown(d, e.UID, e.GID); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// slurmAsUser runs a Slurm command as the test user.
func (e *env) slurmAsUser(t testing.TB, name string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Env = []string{"PATH=" + basePath, "SLURM_CONF=" + cl.Conf, "SLURM_TIME_FORMAT=%s"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(e.UID), Gid: uint32(e.GID)}}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// newIntake builds the daemon's intake in-process, as gleand does, on the
// shared spool (as root: the loopback Slurm's operator).
func newIntake(tb testing.TB, e *env) *daemon.Intake {
	tb.Helper()
	cfg, err := config.Load(e.Config)
	if err != nil {
		tb.Fatal(err)
	}
	sp := &spool.Spool{Dir: cfg.Spool.Dir, MaxEntryBytes: cfg.Spool.MaxEntryBytes, MaxScriptBytes: cfg.Spool.MaxScriptBytes}
	rs, err := sp.OpenRecords()
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { rs.Close() })
	client := &slurm.Client{R: &slurm.Exec{Env: []string{"SLURM_CONF=" + cl.Conf}, Timeout: 30 * time.Second}}
	in, err := daemon.NewIntake(daemon.Options{Spool: sp, AnchorPartition: cfg.Partitions.Anchor, PilotPartition: cfg.Partitions.Pilot, Limits: cfg.Limits},
		rs, &daemon.SlurmQueue{R: client.R}, &daemon.SlurmPrivileged{C: client}, &daemon.SnapshotSizer{C: client}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		tb.Fatal(err)
	}
	return in
}
