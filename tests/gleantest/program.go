package gleantest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/glean-hpc/glean/sidecar/spool"
)

// What programs (make demo) use: no testing.TB, errors are returned.

// Exec runs name with args as the test user from its working directory,
// with the wrapper first in PATH, as AsUser does. An absolute name (e.g.
// RealSbatch()) bypasses the wrapper. A non-zero exit is in Result.Code,
// not an error.
func (e *Env) Exec(ctx context.Context, stdin, name string, args ...string) (Result, error) {
	return e.ExecAs(ctx, e.User1(), stdin, name, args...)
}

// ExecAs is Exec for any user (through sh, as from a login shell).
func (e *Env) ExecAs(ctx context.Context, w Who, stdin, name string, args ...string) (Result, error) {
	cmd := exec.CommandContext(ctx, "/bin/sh", append([]string{"-c", `exec "$0" "$@"`, name}, args...)...)
	cmd.Env = []string{"PATH=" + e.Wrappers + ":" + e.Bin + ":" + BasePath, "SLURM_CONF=" + e.C.Conf,
		"GLEAN_CONFIG=" + e.Config, "HOME=" + w.Work, "USER=" + w.Name, "LOGNAME=" + w.Name, "LANG=C"}
	cmd.Dir = w.Work
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(w.UID), Gid: uint32(w.GID)}}
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		return Result{}, err
	}
	r := Result{Stdout: out.String(), Stderr: errb.String()}
	if ee != nil {
		r.Code = ee.ExitCode()
	}
	return r, nil
}

// RealSbatch is the path of Slurm's own sbatch (the first in BasePath).
func RealSbatch() (string, error) {
	for _, d := range filepath.SplitList(BasePath) {
		p := filepath.Join(d, "sbatch")
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", errors.New("sbatch not found in " + BasePath)
}

// LoadRecord returns the daemon's record of the job with this anchor, or nil.
func (e *Env) LoadRecord(anchor string) *spool.Record {
	dirs, _ := os.ReadDir(filepath.Join(e.Spool, spool.JobsDir))
	for _, d := range dirs {
		data, err := os.ReadFile(filepath.Join(e.Spool, spool.JobsDir, d.Name(), spool.RecordFile))
		if err != nil {
			continue
		}
		var r spool.Record
		if json.Unmarshal(data, &r) == nil && r.Anchor == anchor {
			return &r
		}
	}
	return nil
}

// LoadTaskEvents returns the journal's task events of the job with this
// anchor (none while the daemon has no record of it).
func (e *Env) LoadTaskEvents(anchor string) ([]spool.TaskEvent, error) {
	r := e.LoadRecord(anchor)
	if r == nil {
		return nil, nil
	}
	data, err := os.ReadFile(filepath.Join(e.Spool, spool.JobsDir, r.DirName(), spool.JournalFile))
	if err != nil {
		return nil, err
	}
	var out []spool.TaskEvent
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var ev spool.Event
		if json.Unmarshal([]byte(l), &ev) == nil && ev.Task != nil {
			out = append(out, *ev.Task)
		}
	}
	return out, nil
}
