package slurm

import (
	"context"
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"
)

func TestCmdErrorFormat(t *testing.T) {
	tests := []struct {
		name string
		err  *CmdError
		want string
	}{
		{"exit code and stderr", &CmdError{Argv: []string{"scancel", "--signal=FOO", "1"}, ExitCode: 1, Stderr: "Unknown job signal: FOO", Err: errors.New("exit status 1")},
			"scancel --signal=FOO 1: exit code 1: Unknown job signal: FOO"},
		{"no stderr", &CmdError{Argv: []string{"sinfo"}, ExitCode: 2}, "sinfo: exit code 2"},
		{"separators quoted", &CmdError{Argv: []string{"sinfo", "-o", "%N\x1f%T"}, ExitCode: 1, Stderr: "boom"},
			`sinfo -o "%N\x1f%T": exit code 1: boom`},
		{"spaces quoted", &CmdError{Argv: []string{"sbatch", "--wrap", "sleep 1", ""}, ExitCode: 1},
			`sbatch --wrap "sleep 1" "": exit code 1`},
		{"killed", &CmdError{Argv: []string{"squeue"}, ExitCode: -1, Err: context.DeadlineExceeded},
			"squeue: context deadline exceeded"},
	}
	for _, tc := range tests {
		if got := tc.err.Error(); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestExec(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh")
	}
	ctx := context.Background()
	e := &Exec{Env: []string{"GLEAN_X=1", "SLURM_TIME_FORMAT=relative"}, Timeout: 5 * time.Second}

	t.Run("warning on stderr is success", func(t *testing.T) {
		out, err := e.Run(ctx, []string{"sh", "-c", "echo out; echo warning >&2"})
		if err != nil || string(out) != "out\n" {
			t.Fatalf("%q %v", out, err)
		}
	})
	t.Run("environment", func(t *testing.T) {
		t.Setenv("SQUEUE_USERS", "nobody") // would hide other users' jobs
		t.Setenv("SQUEUE_STATES", "all")
		out, err := e.Run(ctx, []string{"sh", "-c", `echo "$SLURM_TIME_FORMAT,$GLEAN_X,$SQUEUE_USERS$SQUEUE_STATES,${PATH:+path}"`})
		if err != nil || string(out) != "%s,1,,path\n" {
			t.Fatalf("%q %v", out, err)
		}
	})
	t.Run("array indices whole", func(t *testing.T) {
		// Unset or inherited, libslurm cuts a pending array's %K at 64
		// bytes ("2-3,5,...,73,7..."); 0 prints it whole.
		t.Setenv("SLURM_BITSTR_LEN", "64")
		cut := &Exec{Env: []string{"SLURM_BITSTR_LEN=32"}, Timeout: 5 * time.Second}
		out, err := cut.Run(ctx, []string{"sh", "-c", `echo "$SLURM_BITSTR_LEN"`})
		if err != nil || string(out) != "0\n" {
			t.Fatalf("SLURM_BITSTR_LEN=%q %v, want 0", out, err)
		}
	})
	t.Run("exit code", func(t *testing.T) {
		_, err := e.Run(ctx, []string{"sh", "-c", "echo partial; echo '  sbatch: error: nope  ' >&2; exit 3"})
		var ce *CmdError
		if !errors.As(err, &ce) || ce.ExitCode != 3 || ce.Stderr != "sbatch: error: nope" {
			t.Fatalf("%#v", err)
		}
		if want := "sh -c \"echo partial; echo '  sbatch: error: nope  ' >&2; exit 3\": exit code 3: sbatch: error: nope"; err.Error() != want {
			t.Fatalf("%q\nwant %q", err.Error(), want)
		}
		if errors.Is(err, context.DeadlineExceeded) {
			t.Fatal("not a time-out")
		}
	})
	t.Run("stderr capped", func(t *testing.T) {
		_, err := e.Run(ctx, []string{"sh", "-c", "i=0; while [ $i -lt 2000 ]; do echo 0123456789; i=$((i+1)); done >&2; exit 1"})
		var ce *CmdError
		if !errors.As(err, &ce) || len(ce.Stderr) > maxStderr+20 || !strings.HasSuffix(ce.Stderr, "[truncated]") {
			t.Fatalf("stderr of %d bytes: %v", len(ce.Stderr), err)
		}
	})
	t.Run("time-out", func(t *testing.T) {
		start := time.Now()
		short := &Exec{Timeout: 200 * time.Millisecond}
		_, err := short.Run(ctx, []string{"sh", "-c", "exec sleep 10"})
		var ce *CmdError
		if !errors.Is(err, context.DeadlineExceeded) || !errors.As(err, &ce) || ce.ExitCode != -1 {
			t.Fatalf("%v", err)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Fatalf("took %v", d)
		}
	})
	t.Run("not found", func(t *testing.T) {
		_, err := e.Run(ctx, []string{"/nonexistent/squeue"})
		var ce *CmdError
		if !errors.As(err, &ce) || ce.ExitCode != -1 || !strings.Contains(err.Error(), "/nonexistent/squeue") {
			t.Fatalf("%v", err)
		}
	})
	t.Run("empty argv", func(t *testing.T) {
		if _, err := e.Run(ctx, nil); err == nil {
			t.Fatal("want error")
		}
	})
}
