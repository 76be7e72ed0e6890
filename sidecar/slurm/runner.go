// Package slurm is glean's one boundary to Slurm: it runs squeue, sinfo,
// scontrol, sbatch and scancel through a Runner and parses their output into
// the cluster data model. Parsers take an io.Reader and never exec, so they
// are tested on fixtures captured from a real Slurm and fuzzed.
package slurm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Runner runs one Slurm command and returns its standard output. Success
// is exit code 0; anything else is an error (a *CmdError for Exec).
type Runner interface {
	Run(ctx context.Context, argv []string) ([]byte, error)
}

// TimeFormatEnv makes Slurm print times as epoch seconds. Exec always sets
// it; a fixture harness must set it too.
const TimeFormatEnv = "SLURM_TIME_FORMAT=%s"

// BitstrLenEnv makes Slurm print an array's index expression whole
// (squeue %K, scontrol's ArrayTaskId): unset, libslurm cuts it at 64
// bytes and ends it with "..." (SLURM_BITSTR_LEN, squeue(1): "A value of 0
// will print the full expression with any length required"; checked
// against libslurmfull 22.05.8's xlate_array_task_str). Exec always sets
// it; a fixture harness must set it too.
const BitstrLenEnv = "SLURM_BITSTR_LEN=0"

// DefaultTimeout bounds one command when Exec.Timeout is zero.
const DefaultTimeout = 30 * time.Second

// maxStderr caps the stderr kept in a CmdError.
const maxStderr = 4096

// Exec runs commands as child processes.
type Exec struct {
	Env     []string      // extra environment, e.g. SLURM_CONF=...; TimeFormatEnv and BitstrLenEnv are always added
	Timeout time.Duration // per command; DefaultTimeout if zero
}

var _ Runner = (*Exec)(nil)

// Run runs argv and returns its stdout. A warning on stderr with exit code
// 0 is success. On failure it returns a *CmdError; a time-out satisfies
// errors.Is(err, context.DeadlineExceeded).
func (e *Exec) Run(ctx context.Context, argv []string) ([]byte, error) {
	if len(argv) == 0 {
		return nil, errors.New("slurm: empty command")
	}
	timeout := e.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = e.environ()
	// Without WaitDelay a grandchild holding stdout open would make Run
	// outlive the time-out.
	cmd.WaitDelay = 2 * time.Second
	var stdout bytes.Buffer
	stderr := &cappedBuffer{max: maxStderr}
	cmd.Stdout, cmd.Stderr = &stdout, stderr

	err := cmd.Run()
	if err == nil {
		return stdout.Bytes(), nil
	}
	ce := &CmdError{Argv: slices.Clone(argv), ExitCode: -1, Stderr: stderr.String(), Err: err}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		ce.ExitCode = ee.ExitCode() // -1 when killed by a signal
	}
	if ctxErr := ctx.Err(); ctxErr != nil {
		ce.Err = fmt.Errorf("%w (%v)", ctxErr, err)
	}
	return nil, ce
}

// environ is the inherited environment without the variables that would
// filter or reformat what the Slurm commands print (SQUEUE_STATES,
// SQUEUE_USERS, SBATCH_WAIT, SLURM_CLUSTERS adding headers, ...), then
// e.Env, then TimeFormatEnv and BitstrLenEnv, which win because exec keeps
// the last value.
func (e *Exec) environ() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !outputChanging(kv) {
			env = append(env, kv)
		}
	}
	env = append(env, e.Env...)
	return append(env, TimeFormatEnv, BitstrLenEnv)
}

func outputChanging(kv string) bool {
	for _, p := range []string{"SQUEUE_", "SINFO_", "SCONTROL_", "SCANCEL_", "SBATCH_", "SLURM_CLUSTERS=", "SLURM_TIME_FORMAT=", "SLURM_BITSTR_LEN="} {
		if strings.HasPrefix(kv, p) {
			return true
		}
	}
	return false
}

// CmdError is a Slurm command that failed: non-zero exit, killed, timed
// out or not found.
type CmdError struct {
	Argv     []string
	ExitCode int    // -1 if the command did not exit normally
	Stderr   string // trimmed, at most ~4 KB
	Err      error
}

func (e *CmdError) Error() string {
	var b strings.Builder
	b.WriteString(quoteArgv(e.Argv))
	if e.ExitCode >= 0 {
		fmt.Fprintf(&b, ": exit code %d", e.ExitCode)
	} else if e.Err != nil {
		b.WriteString(": " + e.Err.Error())
	}
	if e.Stderr != "" {
		b.WriteString(": " + e.Stderr)
	}
	return b.String()
}

func (e *CmdError) Unwrap() error { return e.Err }

// quoteArgv prints argv so that separators and spaces stay visible.
func quoteArgv(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = a
		if a == "" || strings.ContainsFunc(a, func(r rune) bool {
			return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./=:,+%@[]", r))
		}) {
			q[i] = strconv.Quote(a)
		}
	}
	return strings.Join(q, " ")
}

// cappedBuffer keeps the first max bytes written to it and drops the rest,
// so that a command flooding stderr cannot grow memory.
type cappedBuffer struct {
	buf       []byte
	max       int
	truncated bool
}

func (c *cappedBuffer) Write(p []byte) (int, error) {
	n := min(len(p), c.max-len(c.buf))
	c.buf = append(c.buf, p[:n]...)
	if n < len(p) {
		c.truncated = true
	}
	return len(p), nil
}

func (c *cappedBuffer) String() string {
	s := strings.TrimSpace(string(c.buf))
	if c.truncated {
		s += " [truncated]"
	}
	return s
}
